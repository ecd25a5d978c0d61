"""Coverage study: bias, RMSE and interval coverage of the calibration error, measured.

Data (the thesis' §4.3): q ~ Beta(a, b) (a = b = 0.3 by default: most mass near 0 and
1, as for NLP models), y ~ Bernoulli(t_k(q)) with the thesis' miscalibration t_k at
k ∈ {0, 0.02, 0.05, 0.1}, so the true error sqrt(E[(q − t_k(q))²]) is known
(:func:`calib_metrics.paper.synthetic.true_calibration_error`, numerical
integration).

Grouped variant: pairs come in groups of ``--group-size`` (sentences, documents) whose
correctness is correlated. A pair is correct when its label agrees with the side of
1/2 its prediction is on, with probability c(q) = t_k(q) for q > 1/2 and 1 − t_k(q)
otherwise. Correctness is drawn through a Gaussian copula: correct ⟺ Φ(√ρ·Z_g +
√(1 − ρ)·ε) < c(q), with one Z_g ~ N(0, 1) per group and one ε per pair. Given its
group a pair is correct with probability Φ((Φ⁻¹(c(q)) − √ρ·Z_g)/√(1 − ρ)): a group-level
random shift of the probit of the accuracy (easy and hard documents), and averaged
over Z_g that is exactly c(q), so P(y = 1 | q) = t_k(q) as before. The true error is
computed again by integrating over q (trapezoid in logit space) and over Z_g
(Gauss–Hermite, 64 nodes) and must agree with the ungrouped one to ``TRUTH_TOLERANCE``
(both are printed; the script stops where they do not). The nodes resolve a group's
step in Z_g up to ρ = ``RHO_MAX`` only, so a larger ``--rho`` is refused.

Per setting (variant, k, N, β) and repetition the script bins once (β ∈ {100, 1000,
5000, auto = ⌈√N⌉}), and records the plug-in and debiased estimates and the intervals
of: the paper's Algorithm 2 (normal and percentile forms, on the plug-in and on the
debiased estimate), the pair bootstrap and, for grouped data, the group bootstrap
(plug-in percentile/normal, and the recentred debiased bootstrap of
:mod:`calib_metrics.functional.intervals`, percentile/normal). An interval covers the
truth when lower ≤ truth ≤ upper (both ends are clipped at 0; see docs/coverage.md
for what that means at a true error of 0).

Run ``python benchmarks/coverage.py`` (full grid; ``--quick`` for a smoke run); ``--write`` puts
the tables into docs/coverage.md, whose published tables pool the eight runs listed there
(``--from-json FILE ... --write`` re-renders them; ``--write`` alone would replace them).
``--spiegelhalter`` measures the size of Spiegelhalter's test instead. The paired
difference of two models (its coverage and the false-positive rate of "no difference")
has its own study, ``benchmarks/coverage_compare.py`` (docs/coverage.md, "The paired
difference interval").
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import (
    at_least_two,
    bin_size,
    count,
    number,
    positive,
    size,
    zero_or_at_least_two,
)
from calib_metrics.functional.auto_bin import auto_bin_size
from calib_metrics.functional.binning import Bins
from calib_metrics.functional.calibration import compute_bins
from calib_metrics.functional.clusters import grouped_effective_counts, with_samples
from calib_metrics.functional.intervals import (
    bin_errors,
    bins_of_sums,
    draw_statistics,
    group_sum_matrix,
    interval_of_draws,
    pair_draws,
    paper_draws,
)
from calib_metrics.paper.synthetic import (
    _gamma,
    miscalibrate,
    sample_pairs,
    true_calibration_error,
)

KS = (0.0, 0.02, 0.05, 0.1)
SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_MAX = 10_000  # the largest N of a --quick run
BIN_SIZES = (100, 1000, 5000, "auto")
ROOT = Path(__file__).resolve().parents[1]
# How far the grouped true error may be from the ungrouped one (they are equal in theory).
TRUTH_TOLERANCE = 1e-6
# Above it a group's P(correct | Z_g) is too sharp a step for 64 Gauss–Hermite nodes: the
# grouped truth at k = 0 is off by under 1e-7 at ρ = 0.9 (Beta(a, b) from 0.1 to 50), 2e-6 at
# 0.93, 5e-3 at 0.99, and ρ = 1 divides by √(1 − ρ) = 0.
RHO_MAX = 0.9


def bin_size_of(beta: int | str, n: int) -> int:
    """β itself, ⌈√N⌉ for ``auto``, ⌈C·√N⌉ for ``auto*C`` (to compare constants), or
    ⌈N^(2/3)⌉ for ``cbrt`` (about N^(1/3) bins, the plug-in's rate in the literature)."""
    if beta == "auto":
        return auto_bin_size(n)
    if beta == "cbrt":
        return max(1, math.ceil(n ** (2 / 3) - 1e-9))
    if isinstance(beta, str):
        return max(1, math.ceil(float(beta.split("*")[1]) * math.sqrt(n)))
    return beta


def _bin_size_arg(text: str) -> int | str:
    """A β of ``--bin-sizes``: ``auto``, ``cbrt``, ``auto*C`` with C > 0, or a whole number
    of pairs of at least 1 (0 had stopped in a ZeroDivisionError, −3 in the library)."""
    if text == "cbrt" or (text.startswith("auto*") and _is_positive(text[5:])):
        return text
    try:
        return bin_size(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be auto, cbrt, auto*C with C > 0, or a bin size of at least 1, not {text!r}"
        ) from None


def _is_positive(text: str) -> bool:
    try:
        positive(text)
    except argparse.ArgumentTypeError:
        return False
    return True


# The copula correlation: from 0 to RHO_MAX, where the grouped truth is accurate.
_rho = number(
    0,
    RHO_MAX,
    why="above, the grouped true error's 64-node Gauss–Hermite integral drifts: "
    "off by 2e-6 at 0.93, 5e-3 at 0.99",
)


def _target_reps(text: str) -> int:
    """0 (no target check) or at least 2 repetitions, as the check reports a standard error
    (−1 had stopped in torch.cat of no repetitions)."""
    return zero_or_at_least_two(text, "no check")


def _results_file(text: str) -> str:
    """A saved results file of ``--from-json``: a JSON object with the ``config`` and ``rows``
    of a run (a missing file had stopped in a FileNotFoundError traceback)."""
    try:
        saved = json.loads(Path(text).read_text(encoding="utf-8"))
    except OSError as error:
        raise argparse.ArgumentTypeError(f"cannot read {text!r}: {error.strerror}") from None
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON ({error})") from None
    if not (isinstance(saved, dict) and {"config", "rows"} <= saved.keys()):
        raise argparse.ArgumentTypeError(f"{text!r} holds no run's config and rows")
    return text


def grouped_true_error(a: float, b: float, k: float, rho: float, nodes: int = 64) -> float:
    """sqrt(E[(q − P(y = 1 | q))²]) of the grouped variant, integrating over q and Z_g."""
    u = torch.linspace(-60, 60, 40_001, dtype=torch.float64)
    q = torch.sigmoid(u)
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    logsig = torch.nn.functional.logsigmoid
    density = torch.exp(a * logsig(u) + b * logsig(-u) - log_beta)
    t = miscalibrate(q, k)
    correct = torch.where(q > 0.5, t, 1 - t)
    x, w = _hermite(nodes)
    normal = torch.distributions.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0)
    probit = normal.icdf(correct.clamp(1e-300, 1 - 1e-16))
    shifted = (probit[:, None] - math.sqrt(rho) * math.sqrt(2) * x) / math.sqrt(1 - rho)
    given_group = normal.cdf(shifted)
    # Exact 0 and 1 stay exact whatever the group (the probit is ±infinite there).
    given_group = torch.where(correct[:, None] <= 0, 0.0, given_group)
    given_group = torch.where(correct[:, None] >= 1, 1.0, given_group)
    mean_correct = given_group @ w / math.sqrt(math.pi)
    p_one = torch.where(q > 0.5, mean_correct, 1 - mean_correct)
    return math.sqrt(torch.trapezoid(density * (q - p_one) ** 2, u).item())


def _hermite(nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Gauss–Hermite nodes and weights (Golub–Welsch) for ∫ e^(−x²) f(x) dx."""
    i = torch.arange(1, nodes, dtype=torch.float64)
    jacobi = torch.diag(torch.sqrt(i / 2), 1) + torch.diag(torch.sqrt(i / 2), -1)
    x, vectors = torch.linalg.eigh(jacobi)
    return x, math.sqrt(math.pi) * vectors[0] ** 2


def draw_data(n: int, args, variant: str, g):
    """q, what every label is drawn from, and group ids (None for iid).

    iid/grouped: q ~ Beta(a, b) and the uniform u behind every label. ovr: the true class
    probabilities π ~ Dirichlet(α·1_C) of n / C examples, flattened to n one-vs-rest
    pairs (q = π here; :func:`predictions` maps it), their one-hot labels y, and each
    pair's example as its group.
    """
    if variant == "ovr":
        examples, classes = n // args.classes, args.classes
        gamma = _gamma(args.alpha, examples * classes, g, None).reshape(examples, classes)
        pi = gamma / gamma.sum(dim=1, keepdim=True)
        label = torch.multinomial(pi, 1, generator=g).squeeze(1)
        y = torch.nn.functional.one_hot(label, classes).to(torch.float64)
        return pi.reshape(-1), y.reshape(-1), torch.arange(n) // classes
    q, _ = sample_pairs(n, args.a, args.b, 0.0, generator=g, dtype=torch.float64)
    if variant == "iid":
        return q, torch.rand(n, generator=g, dtype=torch.float64), None
    groups = torch.arange(n) // args.group_size
    z = torch.randn(int(groups[-1]) + 1, generator=g, dtype=torch.float64)
    eps = torch.randn(n, generator=g, dtype=torch.float64)
    latent = math.sqrt(args.rho) * z.index_select(0, groups) + math.sqrt(1 - args.rho) * eps
    return q, torch.special.ndtr(latent), groups


def ovr_temperature(k: float) -> float:
    """The ovr variant's per-class temperature s_k = 1 + 5k (k = 0: calibrated)."""
    return 1 + 5 * k


def predictions(q: torch.Tensor, k: float, variant: str) -> torch.Tensor:
    """The model's scores: q itself, or σ(s_k·logit π) per class for ovr (overconfident),
    so that P(y = 1 | score) = π exactly."""
    if variant != "ovr" or k == 0:
        return q
    return torch.sigmoid(ovr_temperature(k) * torch.logit(q))


def ovr_true_error(alpha: float, classes: int, k: float) -> float:
    """sqrt(E[(σ(s_k·logit π) − π)²]), π ~ Beta(α, (C − 1)α) (a class's marginal)."""
    a, b = alpha, (classes - 1) * alpha
    u = torch.linspace(-200, 60, 200_001, dtype=torch.float64)
    logsig = torch.nn.functional.logsigmoid
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    density = torch.exp(a * logsig(u) + b * logsig(-u) - log_beta)
    gap = torch.sigmoid(ovr_temperature(k) * u) - torch.sigmoid(u)
    return math.sqrt(torch.trapezoid(density * gap**2, u).item())


def labels(q: torch.Tensor, u: torch.Tensor, k: float, variant: str) -> torch.Tensor:
    if variant == "ovr":
        return u
    t = miscalibrate(q, k)
    if variant == "iid":
        return (u < t).to(torch.float64)
    correct = u < torch.where(q > 0.5, t, 1 - t)
    return torch.where(q > 0.5, correct, ~correct).to(torch.float64)


def batched_bins(q, y, index, n_bins) -> Bins:
    """Bins of R repetitions at once: q, y, index are [R, N]; fields are [R, T]."""
    reps = q.shape[0]
    flat = (index + n_bins * torch.arange(reps)[:, None]).reshape(-1)
    count = torch.bincount(flat, minlength=reps * n_bins).to(torch.float64)
    sum_q = torch.zeros_like(count).index_add_(0, flat, q.reshape(-1))
    sum_y = torch.zeros_like(count).index_add_(0, flat, y.reshape(-1))
    return Bins(*(v.reshape(reps, n_bins) for v in (sum_q / count, sum_y / count, count)))


def rank_bins(n: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """First and one-past-last rank of each adaptive bin (the short last run merged)."""
    n_bins = max(1, n // size)
    starts = torch.arange(n_bins) * size
    return starts, torch.cat([starts[1:], torch.tensor([n])])


def sorted_bins(cum_q, cum_y, starts, ends) -> Bins:
    """[R, T] bins from cumulative sums [R, N + 1] of q and y in sorted order."""
    count = (ends - starts).to(torch.float64).expand(cum_q.shape[0], -1)
    sum_q = cum_q[:, ends] - cum_q[:, starts]
    sum_y = cum_y[:, ends] - cum_y[:, starts]
    return Bins(sum_q / count, sum_y / count, count)


def cumulative(x: torch.Tensor) -> torch.Tensor:
    """[R, N] -> [R, N + 1] running sums starting at 0 (float64)."""
    return torch.nn.functional.pad(torch.cumsum(x, dim=1, dtype=torch.float64), (1, 0))


def one_batch(bins, truth, samples, g, group_blocks=None, grouped=None) -> dict:
    """Point estimates and every interval of R data sets: {name: [R] tensor}.

    ``group_blocks``: the group bootstrap's [S_b, R, T] bin sums (grouped data only);
    ``grouped``: the same bins carrying the groups' cluster-robust n_eff, which the
    library's debiased estimate and group bootstrap read when given ``groups=``.
    """
    out = {"plugin": bin_errors(bins), "debiased": bin_errors(bins, debias=True)}
    if grouped is not None:
        out["debiased_grouped"] = bin_errors(grouped, debias=True)
    intervals = {}
    # The library's pipeline: each generator's draws, then every estimator and form.
    # Algorithm 2 draws afresh (in float64, one block at a time) for each estimator; a
    # bootstrap's draws serve both.
    kinds = ["paper", "pairs"] + ["groups"] * (group_blocks is not None)
    for kind in kinds:
        world = {"paper": "draws", "pairs": "shrunk", "groups": "observed"}[kind]
        if kind == "pairs":
            blocks = list(pair_draws(bins, samples, g))
        elif kind == "groups":
            blocks = [bins_of_sums(*block) for block in group_blocks]
        for debias, tag in ((False, kind), (True, f"{kind}_db")):
            if kind == "paper":
                blocks = paper_draws(bins, samples, g, torch.float64)
            data = grouped if kind == "groups" and grouped is not None else bins
            stats = draw_statistics(data, blocks, debias=debias, world=world)
            for method in ("normal", "percentile"):
                s = interval_of_draws(stats, method=method)
                intervals[f"{tag}_{method[:4]}"] = (s[3], s[4])
    for name, (lo, hi) in intervals.items():
        out[f"cov_{name}"] = ((lo <= truth + 1e-12) & (truth <= hi + 1e-12)).to(torch.float64)
        out[f"len_{name}"] = hi - lo
    return out


def grouped_samples(bins, q, y, groups, starts, ends) -> Bins:
    """``bins`` [R, T] carrying every data set's cluster-robust n_eff (the library's
    ``groups=`` estimator, :func:`calib_metrics.functional.clusters.grouped_effective_counts`)."""
    rank_bin = torch.repeat_interleave(torch.arange(starts.numel()), ends - starts)
    samples = torch.stack(
        [
            grouped_effective_counts(
                q[j], y[j], groups[j], rank_bin, Bins(*(field[j] for field in bins))
            )
            for j in range(q.shape[0])
        ]
    )
    return with_samples(bins, samples)


def group_draws(qs, ys, group, n_groups, starts, ends, weights) -> list:
    """Group-bootstrap bin sums of R sorted data sets, one list of blocks per label set.

    Every ``qs[j]`` (one score set, or one per k for ovr), every ``ys[k]`` and ``group``
    are [R, N] in sorted order, so a pair's bin is its rank's run. One sparse matrix per
    β serves all label sets (rows count, Σq, Σy per k), and the Poisson group weights
    ``weights`` [R·G, S] are shared by every β and k: each setting's draws are still a
    group bootstrap of its own data.
    """
    reps, n = qs[0].shape
    n_bins = starts.numel()
    rank_bin = torch.repeat_interleave(torch.arange(n_bins), ends - starts)
    index = (rank_bin + n_bins * torch.arange(reps)[:, None]).reshape(-1)
    flat_group = (group + n_groups * torch.arange(reps)[:, None]).reshape(-1)
    values = [torch.ones(reps * n, dtype=torch.float64)] + [q.reshape(-1) for q in qs]
    values += [y.reshape(-1) for y in ys]
    matrix = group_sum_matrix(flat_group, index, reps * n_bins, reps * n_groups, values)
    per_block = max(1, (1 << 23) // matrix.shape[0])
    blocks: list = [[] for _ in ys]
    for first in range(0, weights.shape[1], per_block):
        sums = torch.sparse.mm(matrix, weights[:, first : first + per_block])
        sums = sums.T.reshape(-1, len(values), reps, n_bins)
        for k in range(len(ys)):
            q_row = 1 + (k if len(qs) > 1 else 0)
            blocks[k].append((sums[:, 0], sums[:, q_row], sums[:, 1 + len(qs) + k]))
    return blocks


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(args.seed)
    truths = {k: true_calibration_error(args.a, args.b, k) for k in KS}
    grouped_truths = {k: grouped_true_error(args.a, args.b, k, args.rho) for k in KS}
    ovr_truths = {k: ovr_true_error(args.alpha, args.classes, k) for k in KS}
    print("true errors (ungrouped / grouped by integration):", file=sys.stderr)
    for k in KS:
        print(f"  k={k}: {truths[k]:.6f} / {grouped_truths[k]:.6f}", file=sys.stderr)
    check_truths(truths, grouped_truths)
    truth_of = {"iid": truths, "grouped": grouped_truths, "ovr": ovr_truths}
    config = {"truths": truths, "grouped_truths": grouped_truths, "ovr_truths": ovr_truths}
    results = {"config": vars(args) | config}
    rows = results["rows"] = []
    if args.target_reps:
        results["target"] = target_check(args, g)
        print(f"target check (N=2e5, β=5000, k=0): {results['target']}", file=sys.stderr)
        save(results, args)
    for n in args.sizes:
        # Larger N gets fewer repetitions: at most --pair-budget pairs per (N, variant).
        reps = max(2, min(args.reps, int(args.pair_budget) // n))
        samples = args.samples if n < 1_000_000 else min(args.samples, args.samples_large)
        batch = max(1, min(reps, args.batch_pairs // n))
        for variant in args.variants:
            start = time.time()
            acc: dict = {}
            for first in range(0, reps, batch):
                r = min(batch, reps - first)
                q, u, groups = draw_data(r * n, args, variant, g)
                q, u = q.reshape(r, n), u.reshape(r, n)
                # Sorted once per data set: every β's adaptive bins are runs of ranks
                # (ovr: every k's scores are an increasing map of π, so one order serves).
                order = torch.argsort(q, dim=1)
                q, u = q.gather(1, order), u.gather(1, order)
                qs = [predictions(q, k, variant) for k in KS] if variant == "ovr" else [q]
                ys = [labels(q, u, k, variant) for k in KS]
                cum_qs, cum_ys = [cumulative(x) for x in qs], [cumulative(y) for y in ys]
                if groups is not None:
                    groups = groups.reshape(r, n)
                    groups = (groups - groups[:, :1]).gather(1, order)
                    n_groups = int(groups.max()) + 1
                    rate = torch.ones((r * n_groups, samples), dtype=torch.float64)
                    weights = torch.poisson(rate, generator=g)
                for beta in args.bin_sizes:
                    size = bin_size_of(beta, n)
                    starts, ends = rank_bins(n, size)
                    if groups is not None:
                        blocks = group_draws(qs, ys, groups, n_groups, starts, ends, weights)
                    for i, k in enumerate(KS):
                        q_k = qs[i if len(qs) > 1 else 0]
                        bins = sorted_bins(cum_qs[i if len(qs) > 1 else 0], cum_ys[i], starts, ends)
                        if first == 0 and k == KS[-1]:
                            ref = compute_bins(q_k[0], ys[i][0], bin_size=size)
                            assert torch.allclose(ref.freq, bins.freq[0]), "binning differs"
                            assert torch.allclose(ref.pred_mean, bins.pred_mean[0])
                        group_blocks = None if groups is None else blocks[i]
                        grouped = None
                        if groups is not None:
                            grouped = grouped_samples(bins, q_k, ys[i], groups, starts, ends)
                        row = one_batch(
                            bins, truth_of[variant][k], samples, g, group_blocks, grouped
                        )
                        acc.setdefault((beta, k), []).append(row)
            for (beta, k), parts in acc.items():
                merged = {key: torch.cat([p[key] for p in parts]) for key in parts[0]}
                truth = truth_of[variant][k]
                rows.append(summarise(merged, n, beta, k, variant, truth, samples))
            print(
                f"N={n} {variant}: {reps} reps in {time.time() - start:.0f}s",
                file=sys.stderr,
                flush=True,
            )
            save(results, args)
    return results


class TruthsDisagree(ValueError):
    """The grouped true error is not the ungrouped one: the integration is off, and every
    grouped coverage would be measured against a wrong truth."""


def check_truths(truths: dict, grouped_truths: dict) -> None:
    """Raise :class:`TruthsDisagree` where the two true errors differ by more than
    ``TRUTH_TOLERANCE`` (equal in theory: see the module docstring)."""
    gaps = {k: abs(grouped_truths[k] - truths[k]) for k in truths}
    k = max(gaps, key=gaps.get)
    if not gaps[k] <= TRUTH_TOLERANCE:  # a NaN fails too
        raise TruthsDisagree(
            f"the grouped true error is off the ungrouped one by {gaps[k]:.1e} at k = {k} "
            f"({grouped_truths[k]:.6f} against {truths[k]:.6f}; tolerance "
            f"{TRUTH_TOLERANCE:.0e}): the integration over Z_g does not hold at these "
            "--a, --b, --rho"
        )


def target_check(args, g) -> dict:
    """Mean plug-in and debiased error on calibrated data at N = 2·10⁵, β = 5000."""
    n, size, reps = 200_000, 5000, args.target_reps
    plugin, debiased, square = [], [], []
    for first in range(0, reps, 10):
        r = min(10, reps - first)
        q, u, _ = draw_data(r * n, args, "iid", g)
        q, u = q.reshape(r, n), u.reshape(r, n)
        index = torch.empty_like(q, dtype=torch.long).scatter_(
            1,
            torch.argsort(q, dim=1),
            (torch.arange(n) // size).clamp_(max=n // size - 1).expand(r, n),
        )
        bins = batched_bins(q, labels(q, u, 0.0, "iid"), index, n // size)
        gap = bins.pred_mean - bins.freq
        weight = bins.count / bins.count.sum(dim=-1, keepdim=True)
        noise = bins.freq * (1 - bins.freq) / (bins.count - 1)
        plugin.append((weight * gap**2).sum(-1).sqrt())
        square.append((weight * (gap**2 - noise)).sum(-1))
        debiased.append(square[-1].clamp_min(0).sqrt())
    out = {}
    for name, values in (("plugin", plugin), ("debiased", debiased), ("square", square)):
        values = torch.cat(values)
        out[name] = values.mean().item()
        out[f"{name}_se"] = (values.std() / math.sqrt(values.numel())).item()
    out["reps"] = reps
    out["ratio"] = out["debiased"] / out["plugin"]
    return out


def summarise(merged, n, beta, k, variant, truth, samples) -> dict:
    row = {
        "variant": variant,
        "k": k,
        "n": n,
        "beta": beta,
        "truth": truth,
        "reps": merged["plugin"].numel(),
        "samples": samples,
    }
    for est in ("plugin", "debiased", "debiased_grouped"):
        if est not in merged:
            continue
        values = merged[est]
        row[f"{est}_mean"] = values.mean().item()
        row[f"{est}_bias"] = (values - truth).mean().item()
        row[f"{est}_rmse"] = (values - truth).pow(2).mean().sqrt().item()
    row.update({key: v.mean().item() for key, v in merged.items() if key[:4] in ("cov_", "len_")})
    return row


def save(results: dict, args) -> None:
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=at_least_two, default=500, help="repetitions per setting (≥ 2)")
    p.add_argument(
        "--pair-budget",
        type=size,
        default=5e8,
        help="cap on repetitions × N per setting (fewer reps at large N, at least 2; the "
        "default allows all 500 at N = 1e6)",
    )
    p.add_argument("--samples", type=at_least_two, default=400, help="interval draws S (≥ 2)")
    p.add_argument(
        "--samples-large", type=at_least_two, default=200, help="interval draws at N=1e6 (≥ 2)"
    )
    p.add_argument(
        "--sizes",
        type=count,
        nargs="*",
        default=list(SIZES),
        help="N (none: the target check only)",
    )
    p.add_argument("--a", type=positive, default=0.3)
    p.add_argument("--b", type=positive, default=0.3)
    p.add_argument(
        "--bin-sizes",
        type=_bin_size_arg,
        nargs="+",
        default=list(BIN_SIZES),
        help="β values: integers, auto (⌈√N⌉), auto*C (⌈C·√N⌉) or cbrt (⌈N^(2/3)⌉)",
    )
    p.add_argument(
        "--variants", nargs="+", choices=["iid", "grouped", "ovr"], default=["iid", "grouped"]
    )
    p.add_argument(
        "--classes", type=at_least_two, default=10, help="ovr: classes C ≥ 2 (N/C examples)"
    )
    p.add_argument("--alpha", type=positive, default=0.2, help="ovr: Dirichlet(α·1_C) of π")
    p.add_argument("--group-size", type=count, default=20)
    p.add_argument(
        "--rho", type=_rho, default=0.5, help=f"copula correlation in a group, 0 to {RHO_MAX}"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=count, default=1, help="1 is fastest on a shared CPU")
    p.add_argument(
        "--batch-pairs",
        type=count,
        default=400_000,
        help="pairs per rep batch (repetitions drawn at once); it changes the draws: a run "
        "is reproduced by --seed with the same --batch-pairs, --target-reps and order of "
        "--sizes, --variants and --bin-sizes",
    )
    p.add_argument("--device", choices=["cpu"], default="cpu", help="only cpu is supported")
    p.add_argument("--json", default="out/coverage/results.json")
    p.add_argument(
        "--target-reps", type=_target_reps, default=100, help="reps of the N=2e5 check (0: none)"
    )
    p.add_argument(
        "--from-json", type=_results_file, nargs="+", help="render saved results instead of running"
    )
    p.add_argument("--quick", action="store_true", help="50 reps, N ≤ 1e4, 200 draws")
    p.add_argument("--write", action="store_true", help="write docs/coverage.md")
    p.add_argument(
        "--spiegelhalter", action="store_true", help="only the size of Spiegelhalter's z test"
    )
    return p


def parse(argv=None, p: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    p = p or parser()
    args = p.parse_args(argv)
    if args.quick:
        args.reps, args.samples = min(args.reps, 50), min(args.samples, 200)
        kept = [n for n in args.sizes if n <= QUICK_MAX]
        if args.sizes and not kept:  # every table would be empty
            p.error(f"--quick runs N ≤ {QUICK_MAX:,} only, and --sizes gave none")
        args.sizes = kept
    if "ovr" in args.variants and (odd := [n for n in args.sizes if n % args.classes]):
        p.error(
            f"--variants ovr: every size must be a multiple of --classes {args.classes} "
            f"(N/C examples of C pairs), not {', '.join(map(str, odd))}"
        )
    return args


METHODS = {
    "paper_norm": "paper N",
    "paper_perc": "paper P",
    "paper_db_norm": "paper-db N",
    "paper_db_perc": "paper-db P",
    "pairs_norm": "pairs N",
    "pairs_perc": "pairs P",
    "pairs_db_norm": "pairs-db N",
    "pairs_db_perc": "pairs-db P",
    "groups_norm": "groups N",
    "groups_perc": "groups P",
    "groups_db_norm": "groups-db N",
    "groups_db_perc": "groups-db P",
}
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"
SPIEGELHALTER_MARKERS = ("<!-- spiegelhalter:begin -->", "<!-- spiegelhalter:end -->")


def _fmt(value, digits=4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def render(results: dict) -> str:
    """Markdown tables of a study's results (generated; see the module docstring)."""
    rows = sorted(
        results["rows"],
        key=lambda r: (r["variant"] != "iid", r["k"], r["n"], str(r["beta"]).zfill(6)),
    )
    config = results["config"]
    out = [BEGIN, "", "### Run", ""]
    reps = sorted({(r["n"], r["variant"], r["reps"], r["samples"]) for r in rows})
    out.append(
        f"Beta({config['a']}, {config['b']}) predictions; grouped variant: groups of "
        f"{config['group_size']}, copula correlation ρ = {config['rho']}. Repetitions and "
        "interval draws actually run per setting: "
        + "; ".join(f"N = {n:,} {v}: {r} reps × {s} draws" for n, v, r, s in reps)
        + (
            f". ovr variant: C = {config['classes']} classes, π ~ Dirichlet({config['alpha']}·1), "
            "scores σ(s_k·logit π_c) with s_k = 1 + 5k, groups = examples; its true errors "
            + ", ".join(f"k = {k}: {v:.6f}" for k, v in config["ovr_truths"].items())
            if any(r["variant"] == "ovr" for r in rows)
            else ""
        )
        + ". True errors (ungrouped / grouped, both by numerical integration): "
        + ", ".join(
            f"k = {k}: {config['truths'][k]:.6f} / {config['grouped_truths'][k]:.6f}"
            for k in config["truths"]
        )
        + "."
    )
    if any(one_bin(r["beta"], r["n"]) for r in rows):
        out += [
            "",
            "β marked *(one bin)*: more than N/2, so the N pairs make a single bin (the short "
            "last run joins the bin before it), and every such β at that N gives the same "
            "numbers.",
        ]
    if "target" in results:
        t = results["target"]
        out += [
            "",
            f"**Target check** (calibrated data, N = 2·10⁵, β = 5000, {t['reps']} reps): "
            f"mean plug-in (paper) error {t['plugin']:.5f} ± {t['plugin_se']:.5f}, mean "
            f"debiased error {t['debiased']:.5f} ± {t['debiased_se']:.5f} (ratio "
            f"{t['ratio']:.3f}); mean debiased *square* before clipping "
            f"{t['square']:.2e} ± {t['square_se']:.1e} (plug-in square ≈ {t['plugin'] ** 2:.2e}).",
        ]
    present = [m for m in METHODS if any(f"cov_{m}" in r for r in rows)]
    out += ["", "### Coverage summary, N ≥ 10⁴", ""]
    out.append(
        "Per method: lowest and highest empirical coverage of the true error over the "
        "settings with N ≥ 10⁴ run with at least 50 repetitions (the Run line gives the "
        "repetitions of each N), and how many settings fall in [0.93, 0.97]; first over the grid's "
        "bin sizes and both variants, then with β = auto by variant and by whether the "
        "true error is 0."
    )
    out.append("")
    summary = []
    for m in present:
        cells = [METHODS[m]]
        for pick in (
            lambda r: r["variant"] != "ovr",
            lambda r: r["beta"] == "auto" and r["k"] > 0 and r["variant"] == "iid",
            lambda r: r["beta"] == "auto" and r["k"] == 0 and r["variant"] == "iid",
            lambda r: r["beta"] == "auto" and r["k"] > 0 and r["variant"] == "grouped",
        ):
            cov = [
                r[f"cov_{m}"]
                for r in rows
                if r["n"] >= 10_000
                and r["reps"] >= 50
                and r["beta"] in BIN_SIZES
                and pick(r)
                and f"cov_{m}" in r
            ]
            inside = sum(0.93 <= c <= 0.97 for c in cov)
            cells.append(f"{min(cov):.3f}–{max(cov):.3f} ({inside}/{len(cov)})" if cov else "–")
        summary.append(cells)
    header = ["method", "all (grid β, both data)", "iid, auto, k > 0", "iid, auto, k = 0"]
    out += _table([*header, "grouped, auto, k > 0"], summary)
    out += ["", "### Choosing β: iid data, per N and β", ""]
    out.append(
        "Debiased RMSE (mean over k, and at k = 0), and the lowest/highest coverage of "
        "pairs-db N and P over k > 0. `auto*C` is ⌈C·√N⌉ (a comparison run)."
    )
    out.append("")
    choice = []
    iid = [r for r in rows if r["variant"] == "iid" and "cov_pairs_db_norm" in r]
    for n in sorted({r["n"] for r in iid}):
        at_n = [r for r in iid if r["n"] == n]
        for beta in sorted(
            {str(r["beta"]) for r in at_n},
            key=lambda b: (bin_size_of(int(b) if b.isdigit() else b, n), beta_rank(b)),
        ):
            group = [r for r in at_n if str(r["beta"]) == beta]
            positive = [r for r in group if r["k"] > 0]
            zero = [r for r in group if r["k"] == 0]
            cov = [r[f"cov_pairs_db_{m}"] for r in positive for m in ("norm", "perc")]
            choice.append(
                [
                    f"{n:,}",
                    beta_cell({"beta": beta, "n": n}),
                    str(bin_size_of(int(beta) if beta.isdigit() else beta, n)),
                    _fmt(sum(r["debiased_rmse"] for r in group) / len(group), 5),
                    _fmt(zero[0]["debiased_rmse"], 5) if zero else "–",
                    f"{min(cov):.3f}–{max(cov):.3f}" if cov else "–",
                ]
            )
    header = ["N", "β", "β value", "RMSE (mean over k)", "RMSE k = 0", "pairs-db cov. k > 0"]
    out += _table(header, choice)
    out += auto_rule_table(rows)
    out += ["", "### Point estimates: bias and RMSE of the error", ""]
    est_rows = [
        [
            r["variant"],
            str(r["k"]),
            f"{r['n']:,}",
            beta_cell(r),
            str(r["reps"]),
            _fmt(r["truth"]),
            _fmt(r["plugin_bias"]),
            _fmt(r["plugin_rmse"]),
            _fmt(r["debiased_bias"]),
            _fmt(r["debiased_rmse"]),
        ]
        for r in rows
    ]
    header = ["data", "k", "N", "β", "reps", "true", "plug-in bias", "plug-in RMSE"]
    out += _table([*header, "debiased bias", "debiased RMSE"], est_rows)
    out += grouped_estimator_table(rows)
    out += ["", "### Empirical coverage of the true error (nominal 0.95)", ""]
    out.append(
        "N = normal form, P = percentile form; *-db = on the debiased estimate; pairs/"
        "groups = Poisson bootstrap over pairs/groups (recentred when -db)."
    )
    out.append("")
    cov_rows = [
        [r["variant"], str(r["k"]), f"{r['n']:,}", beta_cell(r)]
        + [_fmt(r.get(f"cov_{m}"), 3) for m in present]
        for r in rows
    ]
    out += _table(["data", "k", "N", "β"] + [METHODS[m] for m in present], cov_rows)
    out += ["", "### Mean interval length", ""]
    length = [m for m in ("paper_norm", "pairs_db_norm", "pairs_db_perc", "groups_db_perc")]
    len_rows = [
        [r["variant"], str(r["k"]), f"{r['n']:,}", beta_cell(r)]
        + [_fmt(r.get(f"len_{m}"), 4) for m in length]
        for r in rows
    ]
    out += _table(["data", "k", "N", "β"] + [METHODS[m] for m in length], len_rows)
    return "\n".join([*out, "", END]) + "\n"


def one_bin(beta: int | str, n: int) -> bool:
    """Whether bin size ``beta`` makes N pairs one bin (``rank_bins`` joins a short last
    run to the bin before it: any β above N/2)."""
    return n // bin_size_of(int(beta) if str(beta).isdigit() else beta, n) <= 1


def beta_cell(row: dict) -> str:
    """A row's β, marked where it makes one bin: β = 1000 and 5000 at N = 1000 had shown
    as two settings with the same numbers and no word why."""
    return f"{row['beta']} *(one bin)*" if one_bin(row["beta"], row["n"]) else str(row["beta"])


def beta_rank(beta: str) -> int:
    """Order of β rules of equal value: auto (the default), then the grid's integers,
    then the comparison rules; without it equal values kept the set's order, which
    follows the string hash and changes from run to run (PYTHONHASHSEED)."""
    return 0 if beta == "auto" else 1 if beta.isdigit() else 2


def grouped_estimator_table(rows: list[dict]) -> list[str]:
    """The debiased error without and with ``groups=`` (the cluster-robust debias term),
    and the group bootstrap's coverage, where a run measured both (grouped data)."""
    rows = [r for r in rows if "debiased_grouped_bias" in r]
    if not rows:
        return []
    body = [
        [
            r["variant"], str(r["k"]), f"{r['n']:,}", beta_cell(r), str(r["reps"]),
            _fmt(r["truth"]), _fmt(r["debiased_bias"]), _fmt(r["debiased_rmse"]),
            _fmt(r["debiased_grouped_bias"]), _fmt(r["debiased_grouped_rmse"]),
            _fmt(r.get("cov_groups_db_norm"), 3), _fmt(r.get("cov_groups_db_perc"), 3),
        ]
        for r in rows
    ]  # fmt: skip
    header = ["data", "k", "N", "β", "reps", "true", "bias", "RMSE", "bias, groups="]
    return [
        "",
        "### Grouped data: the debiased error without and with `groups=`",
        "",
        *_table([*header, "RMSE, groups=", "groups-db N", "groups-db P"], body),
    ]


def auto_rule_table(rows: list[dict]) -> list[str]:
    """⌈√N⌉ (``auto``) against ⌈N^(2/3)⌉ (``cbrt``) per data and N, where both were run."""
    body = []
    for variant in ("iid", "grouped", "ovr"):
        for n in sorted({r["n"] for r in rows}):
            for beta in ("auto", "cbrt"):
                at = [r for r in rows if (r["variant"], r["n"]) == (variant, n)]
                group = [r for r in at if r["beta"] == beta]
                if len(group) < len(KS) or not any(r["beta"] == "cbrt" for r in at):
                    continue
                method = "pairs_db_norm" if variant == "iid" else "groups_db_norm"
                positive = [r for r in group if r["k"] > 0]
                zero = next(r for r in group if r["k"] == 0)
                cov = [r[f"cov_{method}"] for r in positive]
                body.append(
                    [variant, f"{n:,}", beta, str(bin_size_of(beta, n))]
                    + [_fmt(sum(r[f"{e}_rmse"] for r in group) / len(group), 4)
                       for e in ("plugin", "debiased")]
                    + [_fmt(max(abs(r["debiased_bias"]) for r in positive), 4),
                       f"{min(cov):.3f}–{max(cov):.3f}", _fmt(zero[f"cov_{method}"], 3),
                       _fmt(sum(r[f"len_{method}"] for r in positive) / len(positive), 4)]
                )  # fmt: skip
    if not body:
        return []
    out = ["", "### The auto rule: ⌈√N⌉ (auto) against ⌈N^(2/3)⌉ (cbrt, ~N^(1/3) bins)", ""]
    out.append(
        "RMSE of the plug-in and debiased error (mean over k), the debiased estimate's "
        "largest absolute bias over k > 0, and the recommended interval (normal form; pairs-db "
        "for iid, groups-db for grouped and ovr, whose groups are the examples): lowest–"
        "highest coverage over k > 0, coverage at k = 0, mean length over k > 0."
    )
    header = ["data", "N", "rule", "β", "plug-in RMSE", "debiased RMSE", "max abs. bias k > 0"]
    return [*out, "", *_table([*header, "coverage k > 0", "k = 0", "length"], body)]


def write_doc(text: str, path: Path, markers: tuple[str, str] = (BEGIN, END)) -> None:
    """Replace the section of ``path`` between ``markers`` by ``text`` (which starts and
    ends with them), or append ``text``."""
    begin, end = markers
    if path.exists() and begin in (old := path.read_text()) and end in old:
        head, rest = old.split(begin, 1)
        text = head + text.rstrip("\n") + rest.split(end, 1)[1]
    elif path.exists():
        text = old.rstrip("\n") + "\n\n" + text
    path.write_text(text)


def merge(paths: list[str]) -> dict:
    """One results dict from several JSON files (e.g. N = 10⁶ run separately).

    Runs of the same setting (e.g. with other seeds) are pooled: repetitions add up,
    means and coverages are averaged with the repetitions as weights, RMSEs pooled in
    square.
    """
    parts = [json.loads(Path(p).read_text()) for p in paths]
    merged = {"config": dict(parts[0]["config"]), "rows": []}
    for part in parts:  # the ovr variant's settings come from the run that had it
        if "ovr" in part["config"].get("variants", ()):
            for key in ("ovr_truths", "classes", "alpha"):
                merged["config"][key] = part["config"][key]
    pooled: dict = {}
    for part in parts:
        for row in part["rows"]:
            key = (row["variant"], row["k"], row["n"], str(row["beta"]), row["samples"])
            pooled.setdefault(key, []).append(row)
        merged.update({key: part[key] for key in ("target",) if key in part})
    merged["rows"] = [pool_rows(rows) for rows in pooled.values()]
    return merged


def pool_rows(rows: list[dict]) -> dict:
    """One row from runs of one setting, weighted by their repetitions."""
    if len(rows) == 1:
        return rows[0]
    reps = sum(r["reps"] for r in rows)
    out = dict(rows[0], reps=reps)
    for key, value in rows[0].items():
        if not isinstance(value, float) or key in ("k", "truth"):
            continue
        if key.endswith("_rmse"):
            out[key] = math.sqrt(sum(r["reps"] * r[key] ** 2 for r in rows) / reps)
        else:
            out[key] = sum(r["reps"] * r[key] for r in rows) / reps
    return out


def spiegelhalter_size(args) -> str:
    """Rejection rate of Spiegelhalter's test at α = 0.05 on calibrated data (k = 0).

    Two forms on the same data sets: the independent variance, and the cluster-robust one
    (``groups=``) with the variant's groups (iid: groups of ``--group-size`` consecutive
    pairs, whose labels are independent; ovr: the example). Independent pairs should
    reject 5% of the time under both; grouped (correlated) and one-vs-rest labels break
    the independent form's assumption, and the table shows by how much.
    """
    from calib_metrics.functional.spiegelhalter import spiegelhalter_z

    g = torch.Generator().manual_seed(args.seed)
    rows = [
        "| variant | N | groups | reps | rejected at α = 0.05: independent variance "
        "| cluster-robust (`groups=`) | ± 2 MC sd |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant in args.variants:
        for n in args.sizes:
            reps = args.reps if n < 1_000_000 else max(1, args.reps // 5)
            z = torch.empty(reps, 2, dtype=torch.float64)
            for r in range(reps):
                q, u, groups = draw_data(n, args, variant, g)
                groups = torch.arange(n) // args.group_size if groups is None else groups
                y = labels(q, u, 0.0, variant)
                z[r] = torch.stack([spiegelhalter_z(q, y), spiegelhalter_z(q, y, groups)])
            rate = (torch.special.erfc(z.abs() / math.sqrt(2)) < 0.05).double().mean(dim=0)
            sd = math.sqrt(0.05 * 0.95 / reps)
            rows.append(
                f"| {variant} | {n:,} | {int(groups.max()) + 1:,} | {reps} | {rate[0]:.3f} "
                f"| {rate[1]:.3f} | {2 * sd:.3f} |"
            )
            print("\n".join(rows) if len(rows) == 3 else rows[-1], flush=True)
    return "\n".join(rows)


def main(argv=None) -> None:
    p = parser()
    args = parse(argv, p)
    if args.spiegelhalter:
        table = spiegelhalter_size(args)  # prints each row as it is measured
        if args.write:
            begin, end = SPIEGELHALTER_MARKERS
            doc = ROOT / "docs" / "coverage.md"
            write_doc(f"{begin}\n{table}\n{end}", doc, SPIEGELHALTER_MARKERS)
        return
    if args.from_json:
        results = merge(args.from_json)
    else:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        try:
            results = run(args)
        except TruthsDisagree as error:
            p.error(str(error))
    text = render(results)
    print(text)
    if args.write:
        write_doc(text, ROOT / "docs" / "coverage.md")


if __name__ == "__main__":
    main()
