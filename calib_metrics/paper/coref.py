"""The paper's §5: calibration of pairwise coreference probabilities (Figure 5).

``calib-metrics reproduce coref`` trains the antecedent ranker
(:class:`~calib_metrics.models.coref_ranker.AntecedentRanker`, gold mentions as input)
on OntoGUM train (OntoNotes scheme, the closest open match to the paper's CoNLL-2011),
choosing the L2 strength on dev by the gold marginal log-likelihood. On the test
documents it computes, for every mention pair ``j < i``, the exact probability that
the two corefer (a dynamic program, :func:`~calib_metrics.models.coref.coreference_marginals`)
and the paper's estimate from 1,000 sampled clusterings; it reports the number of
pairs, CalibErr with its 95% interval for both, how far the estimate is from the exact
values, where the model is over- or under-confident, reliability diagrams, and MUC, B³
and pairwise F1 of the 1-best clustering (every mention linked to its most probable
antecedent: the most probable antecedent vector, not always the most probable
clustering, since several vectors give one clustering). The same evaluation runs on LitBank
(fiction, out of domain; no POS tags or parses, so mention types come from a pronoun
lexicon and capitalisation, heads are the span's last word, and number comes only from
pronouns) with the OntoGUM-trained model. The model is saved as ``<out>/ranker.pt``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from calib_metrics.few_bins import warn_if_few_adaptive_bins
from calib_metrics.functional import brier_decomposition, calibration_error, calibration_error_ci
from calib_metrics.functional.binning import bin_ties, check_probs
from calib_metrics.functional.calibration import MAX_BIN_SIZE
from calib_metrics.functional.errors import MOST_SAMPLES, CountedWarning
from calib_metrics.functional.ties import cut_pairs, mixed_cuts
from calib_metrics.models.coref import clusters, coreference_marginals, most_probable_antecedents
from calib_metrics.models.coref_ranker import N_BITS_RANGE, AntecedentRanker
from calib_metrics.paper import options, paired, report
from calib_metrics.paper.coref_conllu import (
    Document,
    read_coref_documents,
    read_litbank_documents,
)
from calib_metrics.paper.coref_features import DocumentFeatures, features_for
from calib_metrics.paper.coref_scores import score_corpus
from calib_metrics.paper.events.stats import poisson_binomial_pmf
from calib_metrics.paper.locations import data_file, data_help, find_dataset, missing_data
from calib_metrics.predictions import save_figure
from calib_metrics.queries import _check_tensors, coref_pair_queries
from calib_metrics.report import fixed

DESCRIPTION = "§5: antecedent-ranking coreference, exact vs 1000-sample pairwise marginals"
NAME = "gum-ontogum-coref"
LITBANK = "litbank-coref"
L2_GRID = (1e-5, 1e-4, 1e-3)
# The options --quick sets when not given: (full run, --quick).
QUICK = {"epochs": (8, 3), "l2": (list(L2_GRID), list(L2_GRID[:2]))}
# The documents --quick keeps of each OntoGUM split (the first ones).
QUICK_DOCUMENTS = {"train": 12, "dev": 3, "test": 3}
PAPER = {
    "data": "CoNLL-2011 (OntoNotes) development set, 404 documents, Berkeley coref system",
    "pairs": 4_300_000,
    "samples": 1000,
    "finding": "CalibErr < 1%, slightly overconfident on middle to high-valued predictions",
}
RANGES = ((0.0, 0.1), (0.1, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0))
# At or below this sum of q(1 - q) (a count's variance; 5 counts' standard deviation),
# confidence_by_range tests a range's count exactly. A calibrated range fails the normal
# test 4.4-5.7% of the time at 25 (binomials of p = 0.01 to 0.5, Poisson(25)), near the
# nominal 5%, but 8% for 10^4 pairs at q = 1e-4 and 20% for one pair at q = 0.8. The full
# runs' ranges have at least 178 (docs/coref.md); the exact pmf costs more as this grows.
EXACT_BELOW = 25.0
# Counts kept above the expected one in the exact test (see _count_p_value).
EXACT_TAIL = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``calib-metrics reproduce coref``.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["--quick"])
        >>> a.quick, a.bin_size, a.samples, a.litbank
        (True, 5000, 1000, None)
    """
    parser.add_argument("--data", default=None, help=data_help())
    options.add_out(parser, "coref")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a few documents, short training, for tests ({options.QUICK_WINS})",
    )
    parser.add_argument(
        "--recalibrate",
        action="store_true",
        help="also fit a score temperature (and NEW offset) on dev; test before/after, paired",
    )
    parser.add_argument(
        "--l2", type=float, nargs="+", default=None, help=options.quick_help("L2 grid", QUICK, "l2")
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help=options.quick_help("Adagrad epochs per fit", QUICK, "epochs"),
    )
    parser.add_argument("--lr", type=float, default=0.1, help="Adagrad learning rate")
    parser.add_argument("--n-bits", type=int, default=20, help="log2 of the hashed weights")
    parser.add_argument("--max-distance", type=int, default=100, help="antecedent window")
    parser.add_argument("--samples", type=int, default=1000, help="sampled clusterings")
    parser.add_argument("--bin-size", type=int, default=5000, help="adaptive bin size")
    parser.add_argument("--ci-samples", type=int, default=10000, help="interval samples")
    parser.add_argument("--seed", type=int, default=0, help="seed of training and sampling")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads, 0 for torch's own number: the work is many small ops (default: 1)",
    )
    parser.add_argument(
        "--litbank",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also evaluate on LitBank (default: when its data is there)",
    )


def _load(folder: Path, quick: bool) -> dict[str, list[Document]]:
    splits = {}
    for split in ("train", "dev", "test"):
        path = data_file(folder, NAME, [f"ontogum-{split}.conllu{e}" for e in (".gz", "")])
        # --quick reads only the documents it keeps: parsing all of OntoGUM had taken half
        # of a quick run.
        docs = read_coref_documents(path, limit=QUICK_DOCUMENTS[split] if quick else None)
        splits[split] = [d for d in docs if d.mentions]
        if not splits[split]:  # had surfaced after training, as torch.cat's empty list
            raise ValueError(f"{path} holds no documents with coreference mentions")
    return splits


def confidence_by_range(q: torch.Tensor, y: torch.Tensor) -> list[dict[str, Any]]:
    """Mean prediction, empirical frequency and over/under-confidence per range of q.

    The verdict reads a range's mean ``q`` as a claim about its side of 0.5: ``q > 0.5``
    says "coreferent" with confidence ``q``, ``q < 0.5`` "not coreferent" with confidence
    ``1 - q``. With ``p`` the range's observed frequency, the range is *overconfident*
    when its side comes true less often than claimed (``p < q`` above 0.5, ``p > q``
    below) and *underconfident* when more often (``p > q`` above, ``p < q`` below, and
    any gap at ``q = 0.5``, which claims neither side); it is *calibrated* when the
    range's own predictions could have given its count of positives. With
    ``v = sum q_i (1 - q_i)`` above :data:`EXACT_BELOW` (25), that is ``|p - q|`` within
    1.96 standard errors of the frequency they imply, ``sqrt(v) / n``. (The observed
    ``p (1 - p)`` is near 0 at ``p = 0`` or 1, and had called a single pair at
    ``q = 0.55`` that corefers underconfident.) With fewer expected events the normal
    approximation fails: one pair at ``q = 0.8`` that does not corefer, which a
    calibrated 0.8 gives 20% of the time, had been overconfident. There the count is
    tested exactly: the range is calibrated when its two-sided p-value under the
    Poisson-binomial of the ``q_i``, the probability of the counts no more likely than the
    one observed, is at least 0.05. While ``p`` is on ``q``'s side of 0.5, overconfident
    means that ``q`` is farther from 0.5 than ``p``; once ``p`` crosses 0.5 the range is
    overconfident however far ``p`` is: ``q = 0.40`` claims "not coreferent" at 0.60, and
    a frequency of 0.80 makes it right 20% of the time.

    Example:
        >>> q = torch.tensor([0.95] * 10 + [0.02] * 100 + [0.2] * 200 + [0.4] * 100)
        >>> y = torch.tensor([1.0] * 5 + [0.0] * 105 + [1.0] * 40 + [0.0] * 160
        ...                  + [1.0] * 80 + [0.0] * 20)
        >>> for r in confidence_by_range(q, y):
        ...     print(r["range"], r["verdict"])
        0.0-0.1 calibrated (exact p ≥ 0.05)
        0.1-0.3 calibrated (within 1.96 se)
        0.3-0.5 overconfident
        0.9-1.0 overconfident

    A ValueError names bad input: ``q`` outside [0, 1] or NaN (no range holds it: it had
    been dropped silently), ``q`` and ``y`` of different shapes, or ``y`` not 0/1.
    """
    _check_tensors(q=q, y=y)
    if q.shape != y.shape:  # had been a bare IndexError from the first range's selection
        raise ValueError(
            f"q and y must have the same shape (one label per pair), got {tuple(q.shape)} "
            f"and {tuple(y.shape)}"
        )
    check_probs(q, "q")
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("y must hold 0/1 labels (the exact test counts the positives)")
    rows = []
    for lo, hi in RANGES:
        sel = (q >= lo) & ((q < hi) if hi < 1.0 else (q <= hi))
        count = int(sel.sum())
        if count == 0:
            continue
        qs, ys = q[sel].double(), y[sel].double()
        qm, pm = float(qs.mean()), float(ys.mean())
        var = float((qs * (1 - qs)).sum())
        gap = pm - qm
        if var <= EXACT_BELOW:
            calibrated, test = _count_p_value(qs, ys) >= 0.05, "exact p ≥ 0.05"
        else:
            calibrated, test = abs(gap) <= 1.96 * math.sqrt(var) / count, "within 1.96 se"
        if calibrated:
            verdict = f"calibrated ({test})"
        elif (qm - 0.5) * (qm - pm) > 0:
            verdict = "overconfident"
        else:
            verdict = "underconfident"
        rows.append(
            {"range": f"{lo:.1f}-{hi:.1f}", "pairs": count, "mean_q": qm, "freq": pm,
             "gap": gap, "verdict": verdict}
        )  # fmt: skip
    return rows


def _count_p_value(qs: torch.Tensor, ys: torch.Tensor) -> float:
    """Two-sided exact p-value of a range's count of positives under its own ``qs``: the
    Poisson-binomial probability of the counts no more likely than the observed one.

    A range lies on one side of 0.5; above it the count of negatives (probabilities
    ``1 - q``) is tested instead, which gives the same p-value with every probability at
    most 0.5. Their sum is then at most ``2 * EXACT_BELOW``, and by Bernstein's inequality
    (variance at most ``EXACT_BELOW``) the counts more than ``EXACT_TAIL`` above it carry
    less than 1e-37: the pmf is cut there, so 10^5 pairs cost no 10^5-wide pmf.
    """
    flip = bool(qs.mean() > 0.5)
    probs = 1 - qs if flip else qs
    observed = round(float((1 - ys if flip else ys).sum()))
    top = min(probs.numel(), math.ceil(float(probs.sum())) + EXACT_TAIL)
    pmf = poisson_binomial_pmf(probs[None], max_count=top)[0]
    # Past the cut the observed count has a probability below 1e-37, and its p-value
    # (that tail and at most ~150 counts as unlikely) is taken as 0.
    likelihood = float(pmf[observed]) if observed <= top else 0.0
    # The relative tolerance (as R's binom.test) keeps counts exactly as likely as the
    # observed one, such as its mirror image under q = 0.5, from dropping out by rounding.
    return float(pmf[pmf <= likelihood * (1 + 1e-7)].sum())


def _calibration(q: torch.Tensor, y: torch.Tensor, bin_size: int, args, gen) -> dict[str, Any]:
    with warnings.catch_warnings():
        # The sampled marginals take S + 1 values: their tie groups that bins cut are
        # counted in the results (cut_tie_pairs), where the library's advice, an option of
        # its own, would not apply.
        warnings.filterwarnings("ignore", "interval='paper': ", CountedWarning)
        result = calibration_error_ci(
            q.double(),
            y.double(),
            bin_size=bin_size,
            n_samples=args.ci_samples,
            generator=gen,
            debias=False,
            interval="paper",
        )
    brier = brier_decomposition(q.double(), y.double(), bin_size=bin_size)
    return {
        "cut_tie_pairs": _cut_tie_pairs(result.bins),
        "bin_size": bin_size,
        "bins": int(result.bins.count.numel()),
        "error": float(result.error),
        "lower": float(result.lower),
        "upper": float(result.upper),
        "std": float(result.std),
        "brier": float(brier.brier),
        "brier_calibration": float(brier.calibration),
        "brier_refinement": float(brier.refinement),
        "result": result,
    }


def _cut_tie_pairs(bins) -> int:
    """The pairs in tie groups of mixed labels that bin boundaries cut, whose bins
    Algorithm 2 redraws independently (:mod:`calib_metrics.functional.paper_warnings`)."""
    return int(cut_pairs(bins.count, mixed_cuts(bin_ties(bins))).item())


# The interval that docs/coverage.md finds trustworthy when pairs come in groups: all the
# mention pairs of one document are resampled together.
MIN_DOCUMENT_PAIRS = 1000
DOCUMENT_BOOTSTRAP = {
    "debias": True,
    "interval": "groups",
    "bin_size": "auto",
    "n_samples": 2000,
}


def _document_interval(q: torch.Tensor, y: torch.Tensor, document: torch.Tensor, gen) -> dict:
    """The document-bootstrap interval, and how much the documents' own errors differ."""
    result = calibration_error_ci(
        q.double(), y.double(), groups=document, generator=gen, **DOCUMENT_BOOTSTRAP
    )
    out = {k: float(getattr(result, k)) for k in ("error", "lower", "upper")}
    # Each document with enough pairs for a few bins of its own: its debiased error.
    order = torch.argsort(document, stable=True)
    sizes = torch.unique(document, return_counts=True)[1].tolist()
    own = [
        float(calibration_error(qd.double(), yd.double(), bin_size="auto", debias=True))
        for qd, yd in zip(q[order].split(sizes), y[order].split(sizes))
        if qd.numel() >= MIN_DOCUMENT_PAIRS
    ]
    spread = {"documents": len(own)}
    if own:
        spread |= {"min": min(own), "median": float(torch.tensor(own).median()), "max": max(own)}
    return {**out, "bins": int(result.bins.count.numel()), "per_document": spread}


def _gold_clusters(entity: torch.Tensor) -> list[list[int]]:
    """Mentions grouped by gold entity; a mention without one is its own cluster."""
    gold: dict[int, list[int]] = {}
    for i, e in enumerate(entity.tolist()):
        gold.setdefault(e if e >= 0 else -1 - i, []).append(i)
    return list(gold.values())


def _marginals(model, feats, samples: int, gen, label: str) -> dict[str, Any]:
    """Per document: exact and sampled pair marginals (timed), labels, 1-best clusters."""
    qs, q_samples, ys, keys, responses, documents = [], [], [], [], [], []
    t_exact = t_sampled = 0.0
    with torch.no_grad():
        for f in tqdm(feats, desc=f"{label}: marginals", file=sys.stderr, leave=False):
            scores, mask = model.score_batch([f])
            t0 = time.perf_counter()
            exact = coreference_marginals(scores, mask=mask)
            t1 = time.perf_counter()
            sampled = coreference_marginals(scores, n_samples=samples, mask=mask, generator=gen)
            t_sampled += time.perf_counter() - t1
            t_exact += t1 - t0
            ids = f.entity[None].to(scores.device)
            q, y = coref_pair_queries(exact, ids, mask)
            q_s, _ = coref_pair_queries(sampled, ids, mask)
            qs.append(q)
            q_samples.append(q_s)
            ys.append(y)
            documents.append(torch.full((q.numel(),), len(documents), dtype=torch.long))
            responses.append(clusters(most_probable_antecedents(scores, mask)[0]))
            keys.append(_gold_clusters(f.entity))
    return {
        "q": torch.cat(qs),
        "q_sampled": torch.cat(q_samples),
        "y": torch.cat(ys),
        "documents": torch.cat(documents),
        "keys": keys,
        "responses": responses,
        "seconds_exact": t_exact,
        "seconds_sampled": t_sampled,
    }


def evaluate(
    model: AntecedentRanker,
    feats: list[DocumentFeatures],
    args: argparse.Namespace,
    label: str,
) -> dict[str, Any]:
    """Exact and sampled pairwise marginals, their calibration, and 1-best cluster scores."""
    sampler = torch.Generator().manual_seed(args.seed + 1)
    m = _marginals(model, feats, args.samples, sampler, label)
    # The intervals' draws (and the jitter that breaks ties) have a generator of their own:
    # drawn after the sampler's, the exact columns' ends had moved with --samples.
    draws = torch.Generator().manual_seed(args.seed + 3)
    q, q_s, y, documents = m["q"], m["q_sampled"], m["y"], m["documents"]
    n_pairs = int(q.numel())
    if n_pairs == 0:
        raise ValueError(f"{label}: no mention pairs to evaluate")
    diff = (q_s - q).abs()
    out: dict[str, Any] = {
        "documents": len(feats),
        "mentions": sum(f.n for f in feats),
        "pairs": n_pairs,
        "coreferent_pairs": int(y.sum()),
        "mean_q": float(q.double().mean()),
        "samples": args.samples,
        "abs_diff_mean": float(diff.double().mean()),
        "abs_diff_max": float(diff.max()),
        "seconds_exact": m["seconds_exact"],
        "seconds_sampled": m["seconds_sampled"],
        "exact": {"main": _calibration(q, y, args.bin_size, args, draws)},
        "exact_documents": report.named_warnings(
            label, _document_interval, q, y, documents.to(q.device), draws
        ),
        # Issue 15: sampled against exact marginals, paired over whole documents.
        "sampled_minus_exact": report.named_warnings(
            label, paired.difference, q_s, q, y, groups=documents.to(q.device), seed=args.seed + 2
        ),
        "sampled": {"main": _calibration(q_s, y, args.bin_size, args, draws)},
        # The estimate takes only S + 1 values, so huge groups of pairs tie (most at 0).
        # Adaptive binning gives each bin a split tie group's mean label (DESIGN.md); a
        # jitter far below 1/S breaks the ties at random instead, for comparison.
        "sampled_random_ties": {
            "main": _calibration(_jitter(q_s, draws), y, args.bin_size, args, draws)
        },
        "sampled_zero": {
            "pairs": int((q_s == 0).sum()),
            "coreferent": int(y[q_s == 0].sum()),
        },
        "ranges_exact": confidence_by_range(q, y),
        "ranges_sampled": confidence_by_range(q_s, y),
        "clusters": {k: v._asdict() for k, v in score_corpus(m["keys"], m["responses"]).items()},
    }
    # Fewer than ten bins of the paper's size give a coarse curve: add a finer binning.
    if n_pairs < 10 * args.bin_size:
        small = max(50, n_pairs // 20)
        out["exact"]["small"] = _calibration(q, y, small, args, draws)
        out["sampled"]["small"] = _calibration(q_s, y, small, args, draws)
        jittered = _jitter(q_s, draws)
        out["sampled_random_ties"]["small"] = _calibration(jittered, y, small, args, draws)
    return out


def _jitter(q: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    noise = torch.rand(q.shape, generator=gen, dtype=torch.float64) * 1e-9
    return (q.double() + noise).clamp(0.0, 1.0)


def _figure(evaluation: dict[str, Any], which: str, title: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from calib_metrics.plot import reliability_diagram

    key = "small" if "small" in evaluation[which] else "main"
    # _calibration() made the result with the paper's setting.
    fig, _ = reliability_diagram(
        evaluation[which][key]["result"], title=title, interval="paper", debias=False
    )
    save_figure(fig, path, "--out", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def _select_l2(splits, feats, args, gen) -> tuple[AntecedentRanker, list[dict[str, Any]], float]:
    grid = []
    best: tuple[float, float, AntecedentRanker] | None = None
    for l2 in args.l2:
        model = AntecedentRanker(n_bits=args.n_bits, max_distance=args.max_distance)
        t0 = time.perf_counter()
        history = model.fit(
            feats["train"], l2=l2, epochs=args.epochs, lr=args.lr, generator=gen, progress=True
        )
        dev_nll = model.objective(feats["dev"], 0.0)
        grid.append(
            {"l2": l2, "objective": history, "dev_nll_per_mention": dev_nll,
             "seconds": time.perf_counter() - t0}
        )  # fmt: skip
        print(
            f"  l2={l2:g}: train objective {history[0]:.4f} -> {history[-1]:.4f}, "
            f"dev NLL/mention {dev_nll:.4f}",
            file=sys.stderr,
        )
        if best is None or dev_nll < best[0]:
            best = (dev_nll, l2, model)
    assert best is not None
    return best[2], grid, best[1]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train on OntoGUM, evaluate pairwise calibration on test (and LitBank); write results."""
    options.settle(args, QUICK)
    # --threads 0 keeps torch's default.
    options.check_integers(args, threads=0, samples=1, bin_size=1, epochs=0, max_distance=1)
    options.check_draws(args, "ci_samples")
    # The sampler's and the binning's own bounds, said here: the sampler's had been said
    # only once the ranker was trained and saved.
    options.check_in_range(args, "samples", 1, MOST_SAMPLES - 1)
    options.check_in_range(args, "bin_size", 1, MAX_BIN_SIZE)
    options.check_in_range(args, "n_bits", *N_BITS_RANGE)
    options.check_numbers(args, "l2", 0)
    options.check_numbers(args, "lr", 0, above=True)
    with report.torch_threads(args.threads):
        return _run(args)


def _litbank(args: argparse.Namespace) -> tuple[list | None, str | None]:
    """LitBank's documents (out of domain), read before training so that a broken archive
    stops the run at once; or None, with the reason, when it is absent and not asked for."""
    use_litbank = args.litbank
    if use_litbank is False:
        return None, "LitBank not evaluated: --no-litbank given"
    litbank_dir = None
    try:
        litbank_dir = find_dataset(LITBANK, args.data)
    except FileNotFoundError as missing:
        if use_litbank:
            raise
        reason = str(missing)
    else:
        reason = f"{litbank_dir} holds no {LITBANK}-conll.tar.gz"
    if use_litbank is None:
        use_litbank = litbank_dir is not None and (litbank_dir / f"{LITBANK}-conll.tar.gz").exists()
    if not use_litbank:
        return None, f"LitBank not evaluated: {reason} (--litbank requires it)"
    archive = litbank_dir / f"{LITBANK}-conll.tar.gz"  # type: ignore[operator]
    if not archive.exists() and not any(litbank_dir.rglob("*.conll")):  # type: ignore[union-attr]
        # find_dataset fell back to --data itself, which holds other data sets only.
        raise missing_data(litbank_dir, LITBANK, f"{LITBANK}-conll.tar.gz or .conll files")  # type: ignore[arg-type]
    docs = read_litbank_documents(archive if archive.exists() else litbank_dir)
    return [d for d in docs if d.mentions][: 3 if args.quick else None], None


TITLES = {"ontogum_test": "OntoGUM test", "litbank": "LitBank (out of domain)"}


def _evaluate_set(model, name: str, feats: list, args: argparse.Namespace, out: Path) -> dict:
    """One evaluation set's results, with its three reliability diagrams written."""
    ev = evaluate(model, feats, args, TITLES[name])
    figures = (
        ("exact", "exact"),
        ("sampled", f"{args.samples} samples"),
        ("sampled_random_ties", f"{args.samples} samples, ties broken at random"),
    )
    for which, label in figures:
        png = _figure(ev, which, f"{TITLES[name]}: pairwise coreference, {label}",
                      out / f"coref_{name}_{which}.png")  # fmt: skip
        ev[which]["figure"] = png.name
        for v in ev[which].values():
            if isinstance(v, dict):
                v.pop("result", None)
    return ev


def _run(args: argparse.Namespace) -> dict[str, Any]:
    out = report.output_folder(args.out)
    folder = find_dataset(NAME, args.data)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    t_start = time.perf_counter()
    splits = _load(folder, args.quick)
    litbank_docs, litbank_note = _litbank(args)
    if litbank_note:
        print(f"coref: {litbank_note}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    featurizer = AntecedentRanker(n_bits=args.n_bits, max_distance=args.max_distance)
    feats = {
        k: [features_for(featurizer, d) for d in tqdm(v, desc=f"features {k}", file=sys.stderr)]
        for k, v in splits.items()
    }
    sets = {"ontogum_test": feats["test"]}
    if litbank_docs is not None:
        sets["litbank"] = [features_for(featurizer, d) for d in litbank_docs]
    for name, set_feats in sets.items():
        # As sentiment and demo say it, before the training: the table's error is of
        # --bin-size bins (only the figures bin finer), and few bins hide much.
        n_pairs = sum(f.n * (f.n - 1) // 2 for f in set_feats)  # every j < i, as evaluated
        warn_if_few_adaptive_bins(
            args.bin_size, n_pairs, f"mention pairs of {TITLES[name]}", at_once=True
        )
    print(f"coref: training on {len(feats['train'])} OntoGUM documents", file=sys.stderr)
    model, grid, l2 = _select_l2(splits, feats, args, gen)
    model_path = model.save(out / "ranker.pt")

    results: dict[str, Any] = {
        "experiment": "coref",
        "dataset": NAME,
        "data": str(folder),
        "quick": bool(args.quick),
        "settings": {k: getattr(args, k) for k in _SETTINGS},
        "l2_grid": grid,
        "l2": l2,
        "model": str(model_path),
        "paper": PAPER,
        "sets": {},
    }
    if litbank_docs is None:
        results["litbank_note"] = litbank_note
    for name, set_feats in sets.items():
        results["sets"][name] = _evaluate_set(model, name, set_feats, args, out)
    if getattr(args, "recalibrate", False):
        from calib_metrics.paper import recalibrate

        results["recalibration"] = recalibrate.coref_report(
            model, feats["dev"], sets, args.seed, out
        )
    results["seconds"] = time.perf_counter() - t_start
    report.write_json(out / "results.json", results)
    markdown = _markdown(results)
    if "recalibration" in results:
        markdown += "\n\n## Recalibration (fit on dev, test)\n\n"
        markdown += results["recalibration"]["table"]
    (out / "results.md").write_text(markdown)
    _print_summary(results)
    return results


def _row(name: str, ev: dict[str, Any]) -> list[Any]:
    e, s = ev["exact"]["main"], ev["sampled"]["main"]
    r, d = ev["sampled_random_ties"]["main"], ev["exact_documents"]
    c = ev["clusters"]
    return [
        name, ev["documents"], ev["pairs"], f"{ev['coreferent_pairs'] / ev['pairs']:.3f}",
        report.format_interval(e["error"], e["lower"], e["upper"]),
        report.format_interval(d["error"], d["lower"], d["upper"], units="documents"),
        report.format_interval(s["error"], s["lower"], s["upper"]),
        report.format_interval(r["error"], r["lower"], r["upper"]),
        paired.format_difference(ev["sampled_minus_exact"], "documents"),
        f"{ev['abs_diff_mean']:.4f} / {ev['abs_diff_max']:.4f}",
        f"{c['muc']['f1']:.3f}", f"{c['b3']['f1']:.3f}", f"{c['pairwise']['f1']:.3f}",
    ]  # fmt: skip


# The options that shaped the numbers, in results.json's settings.
_SETTINGS = ("epochs", "lr", "n_bits", "max_distance", "samples", "bin_size", "ci_samples", "seed")


def _paper_columns(settings: dict[str, Any]) -> str:
    """What the CalibErr columns are: the paper's estimator, named (results.md had left
    the reader to guess which column to trust).

    Example:
        >>> _paper_columns({"bin_size": 5000, "ci_samples": 10000})[:60]
        "CalibErr exact and sampled [95% CI]: the paper's estimator, "
    """
    draws = settings["ci_samples"]
    return (
        "CalibErr exact and sampled [95% CI]: the paper's estimator, plug-in in bins of "
        f"{settings['bin_size']} pairs, with its Algorithm 2 interval ({draws} normal draws "
        "per bin), which takes the pairs as independent: a document's are not, and the "
        "document-bootstrap column's interval is the one to trust."
    )


def _cut_ties_line(sets: dict[str, Any]) -> str:
    """The pairs of each set's paper columns in cut tie groups of mixed labels.

    Example:
        >>> main = lambda n: {"main": {"cut_tie_pairs": n}}
        >>> ev = {"exact": main(0), "sampled": main(8604), "sampled_random_ties": main(0)}
        >>> _cut_ties_line({"test": ev}).split("once): ")[1]
        'test: exact 0, sampled 8,604, tie-broken 0.'
    """
    counts = "; ".join(
        f"{name}: exact {ev['exact']['main']['cut_tie_pairs']:,}, sampled "
        f"{ev['sampled']['main']['cut_tie_pairs']:,}, tie-broken "
        f"{ev['sampled_random_ties']['main']['cut_tie_pairs']:,}"
        for name, ev in sets.items()
    )
    return (
        "Pairs in tie groups of mixed labels that bin boundaries cut (the sampled estimates "
        "take S + 1 values; Algorithm 2 redraws such a group's bins independently, so the "
        "paper's interval moves with where the boundaries fall, while the bootstrap "
        f"columns draw the group once): {counts}."
    )


def _finer_figures_line(name: str, ev: dict[str, Any], samples: int) -> str:
    """What a set's figures show when it has fewer than ten bins of the table's size: they
    bin finer, so their titles' numbers are not the table's (results.md had given only the
    exact one, and a figure's title had named a sampled error found nowhere in the text).

    Example:
        >>> fit = lambda e: {"bin_size": 782, "bins": 20, "error": e, "lower": e, "upper": e}
        >>> ev = {w: {"main": {"bin_size": 5000}, "small": fit(0.1)}
        ...       for w in ("exact", "sampled", "sampled_random_ties")}
        >>> for part in _finer_figures_line("test", ev, 1000).split("; "):
        ...     print(part)
        test: fewer than 10 bins of 5000 pairs, so its figures bin by 782 pairs
        their titles read CalibErr exact 0.1000 [0.1000, 0.1000] · 20 bins
        1000-sample 0.1000 [0.1000, 0.1000] · 20 bins
        ties broken at random 0.1000 [0.1000, 0.1000] · 20 bins.
    """
    kinds = {"exact": "exact", "sampled": f"{samples}-sample",
             "sampled_random_ties": "ties broken at random"}  # fmt: skip
    shown = "; ".join(
        f"{label} {report.format_interval(f['error'], f['lower'], f['upper'])} · {f['bins']} bins"
        for label, f in ((label, ev[which]["small"]) for which, label in kinds.items())
    )
    return (
        f"{name}: fewer than 10 bins of {ev['exact']['main']['bin_size']} pairs, so its "
        f"figures bin by {ev['exact']['small']['bin_size']} pairs; their titles read "
        f"CalibErr {shown}."
    )


def _markdown(results: dict[str, Any]) -> str:
    headers = ["set", "docs", "pairs", "coref rate", "CalibErr exact [95% CI]",
               "exact, debiased, document bootstrap [95%]",
               f"CalibErr {results['settings']['samples']}-sample [95% CI]",
               "same, ties broken at random",
               "sampled − exact, paired [95%]",
               "mean / max |sampled − exact|", "MUC F1", "B³ F1", "pairwise F1"]  # fmt: skip
    lines = ["# Coreference calibration (paper §5, Figure 5)", ""]
    lines.append(f"Model: antecedent ranker, L2 = {results['l2']:g} (chosen on dev NLL), "
                 f"bin size {results['settings']['bin_size']}.")  # fmt: skip
    lines += ["", report.markdown_table(headers, [_row(k, v) for k, v in results["sets"].items()])]
    if "litbank_note" in results:
        lines += ["", f"{results['litbank_note']}."]
    lines += ["", f"Paper: {PAPER['finding']} ({PAPER['pairs']:,} pairs, {PAPER['data']}).", ""]
    lines += [_paper_columns(results["settings"]), "", _cut_ties_line(results["sets"]), ""]
    lines += ["The document-bootstrap column: debiased error with β = ⌈√N⌉ and the recentred "
              "bootstrap over whole documents (pairs of one document are not independent; "
              "docs/coverage.md).", ""]  # fmt: skip
    lines += ["sampled − exact: error(sampled) − error(exact) on the same pairs (debiased, "
              "β = ⌈√N⌉, 2000 draws resampling whole documents once for both estimates; "
              "> 0: the sampled estimate scores worse).", ""]  # fmt: skip
    for name, ev in results["sets"].items():
        if "small" in ev["exact"]:
            lines.append(_finer_figures_line(name, ev, results["settings"]["samples"]))
        lines += ["", f"## {name}: confidence by range (exact marginals)", ""]
        # A signed gap, as every difference the reports print (+0.0876 beside -0.0202).
        rows = [[r["range"], r["pairs"], r["mean_q"], r["freq"], fixed(r["gap"], sign="+"),
                 r["verdict"]] for r in ev["ranges_exact"]]  # fmt: skip
        lines.append(report.markdown_table(["q range", "pairs", "mean q", "freq", "freq − q",
                                            "verdict"], rows))  # fmt: skip
        per = ev["exact_documents"]["per_document"]
        if per["documents"]:
            lines += ["", f"Documents with ≥ {MIN_DOCUMENT_PAIRS} pairs: {per['documents']}; their "
                          f"own debiased errors range {per['min']:.4f}–{per['max']:.4f} "
                          f"(median {per['median']:.4f})."]  # fmt: skip
        z = ev["sampled_zero"]
        lines += ["", f"{z['pairs']} pairs have a sampled estimate of exactly 0; "
                      f"{z['coreferent']} of them corefer.", ""]  # fmt: skip
        kinds = ("exact", "sampled", "sampled_random_ties")
        lines += ["", " ".join(f"![{name} {w}]({ev[w]['figure']})" for w in kinds), ""]
    lines += ["## L2 grid (dev NLL per mention)", ""]
    lines.append(report.markdown_table(
        ["l2", "train objective start → end", "dev NLL/mention"],
        [[f"{g['l2']:g}", f"{g['objective'][0]:.4f} → {g['objective'][-1]:.4f}",
          g["dev_nll_per_mention"]] for g in results["l2_grid"]]))  # fmt: skip
    return "\n".join(lines) + "\n"


def _print_summary(results: dict[str, Any]) -> None:
    for name, ev in results["sets"].items():
        e, s, d = ev["exact"]["main"], ev["sampled"]["main"], ev["exact_documents"]
        c = ev["clusters"]
        by_document = report.format_interval(d["error"], d["lower"], d["upper"], units="documents")
        sampled_minus_exact = paired.format_difference(ev["sampled_minus_exact"], "documents")
        print(
            f"{name}: {ev['pairs']} pairs; CalibErr exact "
            f"{report.format_interval(e['error'], e['lower'], e['upper'])} (debiased, document "
            f"bootstrap {by_document}), "
            f"{ev['samples']}-sample {report.format_interval(s['error'], s['lower'], s['upper'])} "
            f"(ties at random {ev['sampled_random_ties']['main']['error']:.4f}; sampled − exact "
            f"{sampled_minus_exact}); "
            f"|sampled-exact| mean {ev['abs_diff_mean']:.4f} max {ev['abs_diff_max']:.4f}; "
            f"F1 MUC {c['muc']['f1']:.3f} B3 {c['b3']['f1']:.3f} pairwise {c['pairwise']['f1']:.3f}"
        )
