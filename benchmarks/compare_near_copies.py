"""Near-copies in ``compare_calibration``: where the 2 × 2 transport hands over to one factor.

    python benchmarks/compare_near_copies.py --reps 40 --shifts 1e-9 1e-6 1e-5 1e-4 1e-3

Model a is calibrated (q ~ U(0.05, 0.95), y ~ Bernoulli(q), N = 5,000), model b = a + ε,
whose true error is ε (a's is 0): the truth of error(a) − error(b) is −ε. Printed per ε:
the median ratio of the two linear parts' covariance eigenvalues (small: the models are
near-copies; below ``comparison.NEAR_COPY`` the library uses one factor for their
difference), the coverage of −ε by the 95% interval, how often p ≤ 0.05, and how often the
worse model b is called better. Then the smallest ratio in 5 data sets of each setting of
``benchmarks/coverage_compare.py`` (N = 10⁴), which the coverage tables use.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import coverage_compare

from benchmarks._args import at_least_two, count, number
from calib_metrics.functional import comparison

RATIOS: list[float] = []
_TRANSPORT = comparison._neighbour_transport


def _recording(worlds, beside_a, beside_b):
    """The library's transport, recording the eigenvalue ratio of the two linear parts."""
    observed_a, observed_b, zero_a, zero_b = worlds
    linear = torch.stack([observed_a - zero_a, observed_b - zero_b])
    beside = torch.stack([beside_a - zero_a, beside_b - zero_b])
    linear = linear[:, ~(linear.isnan() | beside.isnan()).any(0)]  # as the library keeps them
    identical = torch.equal(observed_a, observed_b) and torch.equal(zero_a, zero_b)
    if linear.shape[1] > 2 and not identical:
        values = torch.linalg.eigvalsh(torch.cov(linear))
        RATIOS.append(float(values[0] / values[1]) if values[1] > 0 else float("nan"))
    return _TRANSPORT(worlds, beside_a, beside_b)


def near_copies(shifts: list[float], reps: int, draws: int) -> None:
    print("| ε | eigenvalue ratio (median) | coverage of −ε | p ≤ 0.05 | b called better |")
    print("|---|---|---|---|---|")
    for shift in shifts:
        RATIOS.clear()
        covered = called = wrong = 0
        for rep in range(reps):
            g = torch.Generator().manual_seed(3000 + rep)
            q = torch.rand(5000, generator=g, dtype=torch.float64) * 0.9 + 0.05
            y = torch.bernoulli(q, generator=g)
            result = comparison.compare_calibration(q, q + shift, y, n_samples=draws, generator=g)
            covered += bool(result.lower <= -shift <= result.upper)
            called += bool(result.p_value <= 0.05)
            wrong += bool(result.lower > 0)
        ratio = statistics.median(RATIOS)
        print(f"| {shift:g} | {ratio:.1e} | {covered}/{reps} | {called}/{reps} | {wrong}/{reps} |",
              flush=True)  # fmt: skip


def settings() -> None:
    print("\n| setting | labels | smallest eigenvalue ratio (5 data sets) |")
    print("|---|---|---|")
    for name, (model_a, model_b, _) in coverage_compare.SETTINGS.items():
        for variant in ("iid", "grouped"):
            RATIOS.clear()
            for q, y, groups, g in coverage_compare.simulated(variant, 5, 10_000, 0):
                comparison.compare_calibration(
                    model_a(q), model_b(q), y, groups=groups, n_samples=200, generator=g
                )
            print(f"| {name} | {variant} | {min(RATIOS):.1e} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shifts",
        type=number(0, 0.05, above=True, why="b = a + ε stays a probability: a is at most 0.95"),
        nargs="+",
        default=[1e-9, 1e-6, 1e-5, 1e-4],
        help="ε: b's true error, above 0 and at most 0.05",
    )
    parser.add_argument("--reps", type=count, default=40)
    parser.add_argument("--draws", type=at_least_two, default=300)
    parser.add_argument(
        "--near-copy", type=number(0, 1, why="a ratio of the smaller eigenvalue to the larger"),
        default=None, help="the hand-over ratio, 0 to 1 (0: never hand over: the 2 × 2 map alone)",
    )  # fmt: skip
    parser.add_argument("--no-settings", action="store_true", help="the near-copies only")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    near_copy, transport = comparison.NEAR_COPY, comparison._neighbour_transport
    if args.near_copy is not None:
        comparison.NEAR_COPY = args.near_copy
    comparison._neighbour_transport = _recording
    try:
        print(f"NEAR_COPY = {comparison.NEAR_COPY:g}\n")
        near_copies(args.shifts, args.reps, args.draws)
        if not args.no_settings:
            settings()
    finally:
        comparison.NEAR_COPY, comparison._neighbour_transport = near_copy, transport


if __name__ == "__main__":
    main()
