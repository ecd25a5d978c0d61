"""Size of ``compare_calibration``'s test for each estimator, two models of equal error.

    python benchmarks/compare_plugin_size.py --n 2000 --reps 200 --draws 200

Labels y ~ Bernoulli(q), q ~ U(0.1, 0.9); model a = q + c and model b = q − c (c = 0.04):
their true errors are equal (c), and by symmetry so are their plug-in errors' expectations.
Printed per estimator (the plug-in ``debias=False``, ``norm="l1"``, ``norm="max"`` and the
default debiased l2): how often the test says "different" at α = 0.05, how often the 95%
interval holds 0, and the interval's mean width / 3.92 beside the spread (sd) of the
estimated difference over the data sets. A test of the right size rejects about 0.05 of
the time, and a well-spread interval is about as wide as the estimates' sd.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, bin_size, count, number
from calib_metrics.functional import compare_calibration

ESTIMATORS = {
    "plug-in l2 (debias=False)": {"debias": False},
    "plug-in l1": {"norm": "l1"},
    "plug-in max": {"norm": "max"},
    "debiased l2 (default)": {},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=2000, help="pairs per data set")
    parser.add_argument(
        "--reps", type=at_least_two, default=200, help="data sets (≥ 2: their sd is printed)"
    )
    parser.add_argument("--draws", type=at_least_two, default=200, help="paired bootstrap draws")
    parser.add_argument(
        "--shift",
        type=number(
            -0.1,
            0.1,
            nonzero=True,
            why="a = q + c and b = q − c stay in [0, 1]; 0 compares a model with itself",
        ),
        default=0.04,
        help="c: a = q + c, b = q - c, from -0.1 to 0.1 but not 0 (a negative c swaps a and b)",
    )
    parser.add_argument("--bin-size", type=bin_size, default="auto", help="'auto' or an integer")
    parser.add_argument("--seed", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"N = {args.n}, {args.reps} data sets, {args.draws} draws, c = {args.shift}, "
          f"bin_size = {args.bin_size}, seed {args.seed}")  # fmt: skip
    columns = ("rejection at α = 0.05", "interval holds 0", "width / 3.92", "sd of the difference")
    print(f"| estimator | {' | '.join(columns)} |")
    print("|---|---|---|---|---|")
    for name, options in ESTIMATORS.items():
        g = torch.Generator().manual_seed(args.seed)
        rejected = covered = 0
        widths, differences = [], []
        for _ in range(args.reps):
            q = 0.1 + 0.8 * torch.rand(args.n, generator=g, dtype=torch.float64)
            y = torch.bernoulli(q, generator=g)
            r = compare_calibration(
                q + args.shift, q - args.shift, y, n_samples=args.draws, generator=g,
                bin_size=args.bin_size, **options,
            )  # fmt: skip
            rejected += float(r.p_value) <= 0.05
            covered += float(r.lower) <= 0 <= float(r.upper)
            widths.append(float(r.upper - r.lower) / 3.92)
            differences.append(float(r.difference))
        sd = torch.tensor(differences, dtype=torch.float64).std().item()
        print(f"| {name} | {rejected / args.reps:.3f} | {covered / args.reps:.3f} | "
              f"{sum(widths) / args.reps:.4f} | {sd:.4f} |")  # fmt: skip


if __name__ == "__main__":
    main()
