"""Coverage of the debiased pair-bootstrap interval when the bins are tiny (2–10 pairs).

The pair bootstrap's world takes each bin's observed frequency for its true one. A bin
of two pairs has the frequency 0, ½ or 1, so its draws carry less label noise than its
pairs did, and the interval is too narrow however the draws are scored. Since
2026-12-01 a drawn bin of fewer than two effective pairs subtracts its world's known
variance (``calib_metrics.functional.intervals._known_variance_below_two``): before,
such draws kept their whole label noise, and the interval sat below the estimate (bins
of 2: [0, 0] under 0.016).

For each bin size and two kinds of data (calibrated, p = q; miscalibrated, p = 0.8q +
0.15; q uniform on [0.05, 0.95], no ties), it draws ``--reps`` data sets of ``--n`` pairs
and prints the share whose interval covers the true error of the library's own bins
(computed from the known p), and, on calibrated data, the share whose interval excludes
0 (a false call of miscalibration).

Run ``python benchmarks/small_bins_coverage.py``; docs/coverage.md quotes its output.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, count
from calib_metrics.functional import calibration_error_ci

KINDS = {"calibrated": lambda q: q, "miscalibrated": lambda q: 0.8 * q + 0.15}


def true_error(q: torch.Tensor, p: torch.Tensor, counts: torch.Tensor) -> float:
    """The l2 error of the bins (sorted q, these counts) in the known probabilities."""
    order = torch.argsort(q)
    sizes = counts.long().tolist()
    mean_q = torch.stack([c.mean() for c in torch.split(q[order], sizes)])
    mean_p = torch.stack([c.mean() for c in torch.split(p[order], sizes)])
    return float((((mean_q - mean_p) ** 2 * counts).sum() / counts.sum()).sqrt())


def run(n: int, bin_size: int, kind: str, reps: int, samples: int) -> tuple[float, float]:
    """(coverage of the true error, share of intervals excluding 0) over ``reps`` sets."""
    g = torch.Generator().manual_seed(bin_size * 1000 + len(kind))
    covered = excluded = 0
    for r in range(reps):
        q = 0.05 + 0.9 * torch.rand(n, generator=g, dtype=torch.float64)
        p = KINDS[kind](q)
        y = torch.bernoulli(p, generator=g)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # bins of one pair, where some fall
            result = calibration_error_ci(
                q, y, bin_size=bin_size, n_samples=samples,
                generator=torch.Generator().manual_seed(r),
            )  # fmt: skip
        truth = true_error(q, p, result.bins.count)
        covered += float(result.lower) <= truth <= float(result.upper)
        excluded += float(result.lower) > 0
    return covered / reps, excluded / reps


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=1000)
    parser.add_argument("--reps", type=count, default=200)
    parser.add_argument("--samples", type=at_least_two, default=400)
    parser.add_argument("--bin-sizes", type=count, nargs="+", default=[2, 3, 4, 5, 10])
    args = parser.parse_args(argv)
    print(f"N = {args.n}, {args.reps} data sets a cell, {args.samples} draws, 95% normal form\n")
    print("| β | coverage, calibrated | coverage, miscalibrated | 0 excluded, calibrated |")
    print("|---|---|---|---|")
    for size in args.bin_sizes:
        calibrated, false_calls = run(args.n, size, "calibrated", args.reps, args.samples)
        miscalibrated, _ = run(args.n, size, "miscalibrated", args.reps, args.samples)
        print(f"| {size} | {calibrated:.3f} | {miscalibrated:.3f} | {false_calls:.3f} |")


if __name__ == "__main__":
    main()
