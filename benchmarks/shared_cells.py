"""The streaming debiased square with cut cells redrawn or shared, against the exact one.

    python benchmarks/shared_cells.py --n 1e7 --bin-size 50 --seeds 12

Calibrated float32 pairs (q ~ U(0, 1), y ~ Bernoulli(q)), folded into a sketch of the default
2¹⁸ cells; with β = 50 at N = 10⁷ that is 1.3 cells per bin, the ratio of 10⁹ pairs in bins of
5,000. Per data set: the debiased square (truth ≈ 0) of the exact mode, of the sketch with
cut cells redrawn (``sketch.to_bins(..., redraw=True)``, the plug-in's path), with cut cells
shared out and the variance that the sharing leaves open added back (``redraw=False``, the
debiased error's path), and with them shared but that variance left out (n_eff = n: the
cells' pairs untied and nothing added back). Printed: each estimator's mean ± its standard
error over the data sets.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, count, size
from calib_metrics.functional import sketch
from calib_metrics.functional.binning import adaptive_tied_bins, bin_unplaced
from calib_metrics.functional.intervals import debiased_square, effective_samples

BATCH = 1 << 22


def _square(bins, open_variance: bool = True) -> float:
    gap = bins.pred_mean - bins.freq
    unplaced = bin_unplaced(bins) if open_variance else None
    return float(debiased_square(gap, bins.freq, bins.count, effective_samples(bins), unplaced))


def squares(n: int, bin_size: int, seed: int) -> tuple[float, float, float, float]:
    """(exact, redrawn, shared, shared without the open variance) debiased squares of one
    data set."""
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g)
    y = torch.bernoulli(q.double(), generator=g)
    state = sketch.empty()
    for start in range(0, n, BATCH):
        sketch.accumulate(state, q[start : start + BATCH], y[start : start + BATCH])
    exact = _square(adaptive_tied_bins(q, y, bin_size))
    redrawn = _square(sketch.to_bins(state, bin_size))
    shared_bins = sketch.to_bins(state, bin_size, redraw=False)
    shared, untied = _square(shared_bins), _square(shared_bins, open_variance=False)
    return exact, redrawn, shared, untied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=size, default=1e7)
    parser.add_argument("--bin-size", type=count, default=50)
    parser.add_argument(
        "--seeds", type=at_least_two, default=12, help="data sets (≥ 2: their sd is printed)"
    )
    args = parser.parse_args()
    rows = torch.tensor([squares(int(args.n), args.bin_size, s) for s in range(args.seeds)])
    print(f"N = {args.n:.0e}, β = {args.bin_size}, {args.seeds} data sets; debiased square:")
    names = ("exact", "redrawn", "shared", "shared, n_eff = n")
    for name, column in zip(names, rows.T):
        se = column.std() / math.sqrt(len(column))
        print(f"  {name}: {column.mean():+.2e} ± {se:.1e}")


if __name__ == "__main__":
    main()
