"""Size of ``compare_calibration``'s test for each estimator, two models of equal error.

    python benchmarks/compare_plugin_size.py --n 2000 --reps 200 --draws 200

Labels y ~ Bernoulli(q), q ~ U(0.1, 0.9); model a = q + c and model b = q − c (c = 0.04):
their true errors are equal (c), and by symmetry so are their plug-in errors' expectations.
Printed per estimator (the plug-in ``debias=False``, ``norm="l1"``, ``norm="max"`` and the
default debiased l2): how often the test says "different" at α = 0.05, how often the 95%
interval holds 0, and the interval's mean width / 3.92 beside the spread (sd) of the
estimated difference over the data sets. A test of the right size rejects about 0.05 of
the time, and a well-spread interval is about as wide as the estimates' sd.

``--pair`` picks other pairs of models (each clamped to [0, 1]); the last three columns
are the estimator's true difference (its norm of the gap function q ↦ model(q) − q over
q ~ U(0.1, 0.9), on a grid of 10⁶ points), the mean estimated difference, and how often
the interval holds the true difference:

* ``shifted`` (the default): a = q + c, b = q − c; equal errors in every norm.
* ``mirrored``: a = q + 2c above q = 0.5, b = q − 2c below it (each overconfident in its
  own half, calibrated in the other); equal errors in every norm, and, by the reflection
  q ↦ 1 − q, y ↦ 1 − y that swaps them, equal expectations of any estimate.
* ``step``: a = q + c, b = q + 2c above 0.5 (calibrated below): equal true l1 errors (c),
  but not equal plug-in expectations (b's calibrated bins have the larger upward bias).
* ``apart``: a = q + 1.5c, b = q − 0.5c: a true difference of c in every norm.

``--estimators`` runs some of them only (``l2``, ``l1``, ``max``, ``default``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calib_metrics.functional import compare_calibration

ESTIMATORS = {
    "plug-in l2 (debias=False)": ("l2", {"debias": False}),
    "plug-in l1": ("l1", {"norm": "l1"}),
    "plug-in max": ("max", {"norm": "max"}),
    "debiased l2 (default)": ("default", {}),
}


def _pair(name: str, q: torch.Tensor, c: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Models a and b of ``--pair`` for the true probabilities q."""
    upper = (q > 0.5).double()
    a, b = {
        "shifted": lambda: (q + c, q - c),
        "mirrored": lambda: (q + 2 * c * upper, q - 2 * c * (1 - upper)),
        "step": lambda: (q + c, q + 2 * c * upper),
        "apart": lambda: (q + 1.5 * c, q - 0.5 * c),
    }[name]()
    return a.clamp(0, 1), b.clamp(0, 1)


def true_difference(pair: str, c: float, norm: str) -> float:
    """error(a) − error(b) of the gap functions themselves (the binned truth differs only
    in the one bin that a step crosses)."""
    q = 0.1 + 0.8 * (torch.arange(1_000_000, dtype=torch.float64) + 0.5) / 1_000_000
    errors = []
    for model in _pair(pair, q, c):
        gap = (model - q).abs()
        errors.append({"l1": gap.mean(), "max": gap.max()}.get(norm, gap.square().mean().sqrt()))
    return float(errors[0] - errors[1]) + 0.0  # not −0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="pairs per data set")
    parser.add_argument("--reps", type=int, default=200, help="data sets")
    parser.add_argument("--draws", type=int, default=200, help="paired bootstrap draws")
    parser.add_argument("--shift", type=float, default=0.04, help="c: a = q + c, b = q - c")
    parser.add_argument("--bin-size", default="auto", help="'auto' or an integer")
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument(
        "--pair", default="shifted", choices=["shifted", "mirrored", "step", "apart"]
    )
    parser.add_argument(
        "--estimators", nargs="+", default=["l2", "l1", "max", "default"],
        choices=["l2", "l1", "max", "default"],
    )  # fmt: skip
    args = parser.parse_args()
    bin_size = args.bin_size if args.bin_size == "auto" else int(args.bin_size)
    torch.set_num_threads(1)
    print(f"N = {args.n}, {args.reps} data sets, {args.draws} draws, c = {args.shift}, "
          f"bin_size = {bin_size}, seed {args.seed}, pair {args.pair}")  # fmt: skip
    columns = (
        "rejection at α = 0.05", "interval holds 0", "width / 3.92", "sd of the difference",
        "true difference", "mean difference", "interval holds the true difference",
    )  # fmt: skip
    print(f"| estimator | {' | '.join(columns)} |")
    print("|---" * (len(columns) + 1) + "|")
    for name, (key, options) in ESTIMATORS.items():
        if key not in args.estimators:
            continue
        truth = true_difference(args.pair, args.shift, options.get("norm", "l2"))
        g = torch.Generator().manual_seed(args.seed)
        rejected = covered = holds_truth = 0
        widths, differences = [], []
        for _ in range(args.reps):
            q = 0.1 + 0.8 * torch.rand(args.n, generator=g, dtype=torch.float64)
            y = torch.bernoulli(q, generator=g)
            r = compare_calibration(
                *_pair(args.pair, q, args.shift), y, n_samples=args.draws, generator=g,
                bin_size=bin_size, **options,
            )  # fmt: skip
            rejected += float(r.p_value) <= 0.05
            covered += float(r.lower) <= 0 <= float(r.upper)
            holds_truth += float(r.lower) <= truth <= float(r.upper)
            widths.append(float(r.upper - r.lower) / 3.92)
            differences.append(float(r.difference))
        spread = torch.tensor(differences, dtype=torch.float64)
        print(f"| {name} | {rejected / args.reps:.3f} | {covered / args.reps:.3f} | "
              f"{sum(widths) / args.reps:.4f} | {spread.std().item():.4f} | {truth:+.4f} | "
              f"{spread.mean().item():+.4f} | {holds_truth / args.reps:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
