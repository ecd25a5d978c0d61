"""Coverage of compare_calibration's paired interval, and its test's size, by simulation.

    python benchmarks/coverage_compare.py --reps 300 --sizes 10000 --variants iid grouped \
        --json docs/coverage/compare4.json
    python benchmarks/coverage_compare.py --from-json docs/coverage/compare4.json

The first runs the study and saves its rows; the second prints the table of saved rows
(docs/coverage.md quotes such tables; the script writes no doc itself).

Two synthetic models score the same items, q ~ U(0, 1), y ~ Bernoulli(q): independent
labels (``iid``), or (``grouped``) groups of 20 items whose labels share a Gaussian-copula
shift, y = 1 ⟺ Φ(√ρ·Z_g + √(1 − ρ)·ε) < q with ρ = 0.5 (as in ``coverage.py``; marginally
still P(y = 1 | q) = q), compared with ``groups=`` so that whole groups are resampled.
Each model's prediction is a known map of q, so its true calibration error is known
(``_true_error``: where the map is one-to-one the labels' frequency given the prediction
is q; the mass a clamp sends to 0 or 1 is one tie group whose frequency is its mean q),
and so is the true difference:

* ``unequal``: a = min(q + 0.05, 1) against the calibrated b = q;
* ``equal``: a = min(q + 0.05, 1) against b = max(q − 0.05, 0): equal true errors by
  symmetry, so the difference is 0 and every p < α is a false positive;
* ``both calibrated``: a = q against b = q rounded to the mean of its tenth (still
  calibrated); true errors 0 and 0;
* ``unequal, b miscalibrated``: a = min(q + 0.08, 1) against b = min(q + 0.03, 1), so
  that neither true error is 0 (run by naming it in ``--settings``);
* ``weak, b coarse``: a = min(q + 0.02, 1) against b = q rounded to the mean of its tenth
  (calibrated): a difference of 0.02, comparable to the noise of a's squared error at
  N = 10⁴, between models whose bins differ (named in ``--settings``);
* ``equal, b coarse``: a = 0.03 + 0.94·q (gap 0.03 − 0.06·q, changing sign; true error
  0.03/√3) against b = q rounded to the mean of its tenth plus 0.03/√3 (constant gap):
  equal true errors, bins that differ, and weak gaps (named in ``--settings``).

Reported per setting: coverage of the 95% interval of the difference (the truth inside
[lower, upper]) with its Monte Carlo standard error, the rejection rate of "no
difference" at α = 0.05, and the mean width.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's benchmarks/

from benchmarks._args import at_least_two, count
from calib_metrics.functional import compare_calibration, comparison
from calib_metrics.functional.intervals import draw_statistics

SHIFT = 0.05


def _true_error(shift: float) -> float:
    """The true error of clamp(q + shift, 0, 1) for |shift| < 1, in closed form.

    Off the clamp the prediction is one-to-one in q, so its labels' frequency is q and the
    gap is the shift: s²(1 − s). The clamped mass s is one tie group (every prediction 1,
    or 0), whose frequency is the mean q over it, s/2 from the clamp: s·(s/2)². (Until
    2026-11-28 this integrated (clamp(q + s) − q)² there, s³/3 in place of s³/4: 0.04916
    instead of 0.04905 for s = 0.05, which mattered once intervals were narrow, N = 10⁶.)
    """
    s = abs(shift)
    return math.sqrt(s**2 * (1 - s) + s**3 / 4)


def _tenths(q: torch.Tensor) -> torch.Tensor:
    """q rounded to the middle of its tenth: a calibrated model with ten tie groups."""
    return (torch.floor(q * 10) + 0.5) / 10


SETTINGS = {
    "unequal": (lambda q: (q + SHIFT).clamp(max=1), lambda q: q, _true_error(SHIFT)),
    "equal": (lambda q: (q + SHIFT).clamp(max=1), lambda q: (q - SHIFT).clamp(min=0), 0.0),
    "both calibrated": (lambda q: q, _tenths, 0.0),
    # "unequal" with b off the boundary: whether its over-coverage on grouped labels comes
    # from b's true error being exactly 0 (where a clipped interval over-covers).
    "unequal, b miscalibrated": (
        lambda q: (q + 0.08).clamp(max=1),
        lambda q: (q + 0.03).clamp(max=1),
        _true_error(0.08) - _true_error(0.03),
    ),
    # Weak gaps (signal comparable to the noise) where the two models' bins differ: where
    # the per-draw ends under-cover (docs/coverage.md, 2026-11-28, second section).
    "weak, b coarse": (lambda q: (q + 0.02).clamp(max=1), _tenths, _true_error(0.02)),
    "equal, b coarse": (
        lambda q: 0.03 + 0.94 * q,
        lambda q: _tenths(q) + 0.03 / math.sqrt(3),
        0.0,
    ),
    # "both calibrated" with b's ten tie groups broken in an order unrelated to q (b stays
    # calibrated in every bin): whether few groups' conservative test comes from b's ties.
    "both calibrated, b untied": (
        lambda q: q,
        lambda q: _tenths(q) + 1e-9 * torch.frac(q * 1e6),
        0.0,
    ),
}


GROUP_SIZE, RHO = 20, 0.5


def labels(q: torch.Tensor, variant: str, g: torch.Generator) -> tuple:
    """y with P(y = 1 | q) = q, and the group ids (None for independent labels)."""
    if variant == "iid":
        return torch.bernoulli(q, generator=g), None
    groups = torch.arange(q.numel(), device=q.device) // GROUP_SIZE
    z = torch.randn(
        (q.numel() - 1) // GROUP_SIZE + 1, generator=g, dtype=torch.float64, device=q.device
    )
    eps = torch.randn(q.numel(), generator=g, dtype=torch.float64, device=q.device)
    latent = math.sqrt(RHO) * z.index_select(0, groups) + math.sqrt(1 - RHO) * eps
    return (torch.special.ndtr(latent) < q).to(torch.float64), groups


# "projected" (the library's ends since 2026-11-28), or "per-draw" (--per-draw-ends: the
# ends before, for the earlier tables)
ENDS = "projected"
# "neighbour covariance" (the library's since 2026-11-29: each model's linear part carried
# onto its neighbour covariance), "neighbour" (--neighbour-factor: one factor from the
# neighbours, 2026-11-28) or "joint" (--joint-shrink: the factor before), for the earlier
# tables
SHRINK = "neighbour covariance"
# "units" (the library's since 2026-11-29: the boundary pre-test's level falls with the
# resampling units, comparison.boundary_level) or "interval" (--interval-level-boundary: the
# interval's own (1 − c)/2, before), for the earlier tables
BOUNDARY = "units"


def interval_level_boundary() -> None:
    """compare_calibration's boundary pre-test before its level fell with n: m's lower bound
    is the (1 − confidence)/2 quantile of the m* whatever the number of units."""
    comparison.boundary_level = lambda confidence, n_units: (1 - confidence) / 2


def _per_draw_ends() -> None:
    """compare_calibration's ends before 2026-11-28: the percentile interval of the draws
    carried with their own smaller square m* alone, not widened to those carried with
    m's lower bound."""
    comparison._projected_ends = lambda own, at_bound, confidence: comparison._ends(own, confidence)


def joint_shrink_squares(bins_a, bins_b, blocks_a, blocks_b):
    """compare_calibration's paired squares with the shrink factor before 2026-11-28 for
    every pair of models: s² = max(0, Var*(lin) − 2·Var*(quad)) / Var*(lin), not the
    neighbouring runs' share."""
    return comparison._joint_shrink(*comparison._world_draws(bins_a, bins_b, blocks_a, blocks_b))


def _joint_shrink() -> None:
    """compare_calibration with :func:`joint_shrink_squares` for the rest of the run."""
    comparison._paired_squares = joint_shrink_squares


def neighbour_factor_squares(bins_a, bins_b, blocks_a, blocks_b):
    """compare_calibration's paired squares of 2026-11-28: one factor for both linear parts,
    s² = max(0, Cov*(lin, lin_nb)) / Var*(lin) of the difference (the joint shrink for a
    model with few runs), not each model's part carried onto its neighbour covariance."""
    worlds = comparison._world_draws(bins_a, bins_b, blocks_a, blocks_b)
    runs = min(comparison._run_count(bins_a), comparison._run_count(bins_b))
    if runs < comparison.MIN_NEIGHBOUR_RUNS:
        return comparison._joint_shrink(*worlds)
    _, _, zero_a, zero_b = worlds
    beside_a, beside_b = (
        draw_statistics(bins, blocks, debias=True, world="neighbours").values
        for bins, blocks in ((bins_a, blocks_a), (bins_b, blocks_b))
    )
    crossed = (zero_a - beside_a) - (zero_b - beside_b)
    linear = comparison._linear_difference(*worlds)
    return comparison._shrunk(worlds, comparison._neighbour_shrink(linear, crossed))


def _neighbour_factor() -> None:
    """compare_calibration with :func:`neighbour_factor_squares` for the rest of the run."""
    comparison._paired_squares = neighbour_factor_squares


def simulated(variant: str, reps: int, n: int, seed: int):
    """``reps`` data sets (q, y, groups) of N items, and the generator that drew them (the
    comparison's draws come from it next), for the scripts that study one construction's
    parts on this study's data (``coverage_compare_mstar.py`` and others)."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(reps):
        q = torch.rand(n, generator=g, dtype=torch.float64)
        y, groups = labels(q, variant, g)
        yield q, y, groups, g


def add_data_set_arguments(parser: argparse.ArgumentParser, spread: bool = False) -> None:
    """The options of those scripts: settings, label variant, group size, data sets, N and
    seed (:func:`use_group_size` applies the group size); ``spread``: the script prints the
    estimates' sd over the data sets, so ``--reps`` takes at least 2 (1 had printed NaN)."""
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["unequal"])
    parser.add_argument("--variant", choices=["iid", "grouped"], default="iid")
    parser.add_argument("--group-size", type=count, default=GROUP_SIZE)
    parser.add_argument("--reps", type=at_least_two if spread else count, default=100)
    parser.add_argument("--n", type=count, default=10_000)
    parser.add_argument("--seed", type=int, default=0)


def use_group_size(size: int) -> None:
    """Items per group of the grouped labels that :func:`simulated` draws from now on."""
    global GROUP_SIZE
    GROUP_SIZE = size


def use_label_correlation(rho: float) -> None:
    """The latent correlation of the grouped labels that :func:`simulated` draws from now on
    (0: groups of independent labels, which only the resampling units tell apart)."""
    global RHO
    RHO = rho


def run(sizes, variants, settings, reps: int, draws: int, seed: int, out, device="cpu") -> list:
    """The rows of every (N, variant, setting); with ``out`` the rows so far, the one being
    measured included with the repetitions done, are written there every 10 repetitions, so
    a run stopped at a time limit keeps what it measured."""
    rows = []
    for n in sizes:
        for variant in variants:
            for name in settings:
                model_a, model_b, truth = SETTINGS[name]
                g = torch.Generator(device=device).manual_seed(seed)
                outcomes = []
                for rep in range(reps):
                    q = torch.rand(n, generator=g, dtype=torch.float64, device=device)
                    y, groups = labels(q, variant, g)
                    r = compare_calibration(
                        model_a(q), model_b(q), y, groups=groups, n_samples=draws, generator=g
                    )
                    outcomes.append(
                        (float(r.lower), float(r.upper), float(r.p_value), float(r.difference))
                    )
                    if out and (rep + 1) % 10 == 0:
                        partial = _summary(name, variant, n, truth, outcomes, draws)
                        partial.update(_provenance(device, seed))
                        Path(out).write_text(json.dumps([*rows, partial], indent=1))
                rows.append(_summary(name, variant, n, truth, outcomes, draws))
                rows[-1].update(_provenance(device, seed))
                print(_row(rows[-1]), flush=True)
                if out:
                    Path(out).write_text(json.dumps(rows, indent=1))
    return rows


def _provenance(device: str, seed: int) -> dict:
    """What a row was measured with, beyond its setting."""
    return dict(
        device=device,
        ends=ENDS,
        shrink=SHRINK,
        boundary=BOUNDARY,
        seed=seed,
        group_size=GROUP_SIZE,
    )


def _summary(name: str, variant: str, n: int, truth: float, outcomes: list, draws: int) -> dict:
    """One table row from the data sets' (lower, upper, p-value, estimate)."""
    reps = len(outcomes)
    lower, upper, p, estimate = (torch.tensor(column) for column in zip(*outcomes))
    return {
        "setting": name, "variant": variant, "n": n, "truth": truth,
        "coverage": float(((lower <= truth) & (truth <= upper)).double().mean()),
        "above": float((upper < truth).double().mean()),  # the truth above the interval
        "below": float((truth < lower).double().mean()),
        "rejection": float((p < 0.05).double().mean()),
        "width": float((upper - lower).mean()), "reps": reps, "draws": draws,
        "estimate_sd": float(estimate.std()),  # --reps ≥ 2; a partial row has 10 or more
    }  # fmt: skip


# (title, the key a row must hold for it, the cell); the columns of the misses and the
# estimates' spread came later, and a table of older rows leaves them out.
COLUMNS = (
    ("setting", "setting", lambda r: r["setting"]),
    ("labels", "variant", lambda r: _labels(r)),
    ("N", "n", lambda r: f"{r['n']:,}"),
    ("true difference", "truth", lambda r: f"{r['truth']:.4f}"),
    ("coverage (95%) ± s.e.", "coverage", lambda r: f"{r['coverage']:.3f} ± {_se(r):.3f}"),
    ("truth above / below", "above", lambda r: f"{r['above']:.3f} / {r['below']:.3f}"),
    ("rejection at α = 0.05", "rejection", lambda r: f"{r['rejection']:.3f}"),
    ("mean width", "width", lambda r: f"{r['width']:.4f}"),
    ("sd of the estimate × 3.92", "estimate_sd", lambda r: f"{3.92 * r['estimate_sd']:.4f}"),
    ("reps", "reps", lambda r: str(r["reps"])),
)


def _se(r: dict) -> float:
    return math.sqrt(max(r["coverage"] * (1 - r["coverage"]), 0.05 * 0.95) / r["reps"])


def _labels(r: dict) -> str:
    """The labels' variant, with the number of groups where their size is not the default 20."""
    size = r.get("group_size", 20)
    if r["variant"] == "grouped" and size != 20:
        return f"grouped, {-(-r['n'] // size)} groups"
    return r["variant"]


def _columns(rows: list[dict]) -> list[tuple]:
    """Every column that some row can fill (all of them for rows measured now)."""
    return [column for column in COLUMNS if any(column[1] in r for r in rows)]


def _header(columns: list[tuple]) -> str:
    titles = " | ".join(title for title, _, _ in columns)
    return f"| {titles} |\n|" + "---|" * len(columns)


def _row(r: dict, columns: list[tuple] = COLUMNS) -> str:
    cells = (cell(r) if key in r else "–" for _, key, cell in columns)
    return "| " + " | ".join(cells) + " |"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of ``argv`` (default: the command line), checked: argparse's usage
    line, one error line and exit 2 for any it refuses. Runs nothing: the tests read the
    documented commands through it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=count, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--variants", nargs="+", choices=["iid", "grouped"], default=["iid"])
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS)[:3])
    parser.add_argument(
        "--reps", type=at_least_two, default=300, help="data sets (≥ 2: their sd is printed)"
    )
    parser.add_argument("--draws", type=at_least_two, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the rows here as they are measured")
    parser.add_argument("--from-json", nargs="+", help="print the table of saved rows")
    parser.add_argument("--threads", type=count, default=1, help="1 is fastest on a shared CPU")
    parser.add_argument(
        "--per-draw-ends",
        action="store_true",
        help="the library's ends before 2026-11-28 (docs/coverage.md): the draws carried "
        "with their own smaller square only",
    )
    parser.add_argument(
        "--joint-shrink",
        action="store_true",
        help="the library's shrink factor before 2026-11-28 (docs/coverage.md): "
        "Var*(lin) − 2·Var*(quad) for the true gaps' share",
    )
    parser.add_argument(
        "--neighbour-factor",
        action="store_true",
        help="the library's shrink of 2026-11-28 (docs/coverage.md): one factor "
        "Cov*(lin, lin_nb)/Var*(lin) of the difference for both models' linear parts",
    )
    parser.add_argument(
        "--interval-level-boundary",
        action="store_true",
        help="the library's boundary pre-test before its level fell with n (2026-11-29, "
        "docs/coverage.md): m's lower bound at the interval's own (1 − c)/2 quantile",
    )
    parser.add_argument(
        "--group-size",
        type=count,
        default=GROUP_SIZE,
        help="items per group of the grouped labels (20; 333 gives 30 groups at N = 10⁴, "
        "the coreference test set's count of documents)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="where the data and draws live (cuda: same study, other random streams)",
    )
    args = parser.parse_args(argv)
    if args.neighbour_factor and args.joint_shrink:
        parser.error("--neighbour-factor and --joint-shrink are two shrinks: give one")
    return args


def main(argv: list[str] | None = None) -> None:
    global ENDS, SHRINK, BOUNDARY
    args = parse(argv)
    torch.set_num_threads(args.threads)
    use_group_size(args.group_size)
    if args.joint_shrink:
        SHRINK = "joint"
        _joint_shrink()
    if args.neighbour_factor:
        SHRINK = "neighbour"
        _neighbour_factor()
    if args.per_draw_ends:
        ENDS = "per-draw"
        _per_draw_ends()
    if args.interval_level_boundary:
        BOUNDARY = "interval"
        interval_level_boundary()
    if args.from_json:
        rows = [row for path in args.from_json for row in json.loads(Path(path).read_text())]
        columns = _columns(rows)
        print(_header(columns))
        for row in rows:
            print(_row(row, columns))
        return
    print(_header(list(COLUMNS)), flush=True)
    run(
        args.sizes,
        args.variants,
        args.settings,
        args.reps,
        args.draws,
        args.seed,
        args.json,
        args.device,
    )


if __name__ == "__main__":
    main()
