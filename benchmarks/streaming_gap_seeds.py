"""The streaming metric's gap to the exact mode over data sets, per bin size.

    python benchmarks/streaming_gap_seeds.py --n 1000000 --seeds 10 --bin-sizes auto 5000 1000 200

Calibrated float32 pairs, q ~ U(0, 1), y ~ Bernoulli(q), one data set per seed, through
``CalibrationError`` itself (exact and ``streaming=True``, the default resolution), plug-in
and debiased (l2), and the plug-in l1. Printed per bin size and estimator: the largest
|streaming − exact| over the data sets, the mean of streaming − exact with its standard
error, the sd of the exact error over the data sets (its own sampling noise, for scale),
the streaming metric's own bound ``streaming_tolerance()`` (its largest, and in how many
data sets it covered the gap, with the largest gap / bound), and in how many data sets
``compute()`` warned that the sketch is too coarse.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, bin_size, count
from calib_metrics import CalibrationError

ESTIMATORS = {"plug-in": ("l2", False), "debiased": ("l2", True), "l1 plug-in": ("l1", False)}


def one(q: torch.Tensor, y: torch.Tensor, bin_size, norm: str, debias: bool) -> tuple:
    """(exact, streaming, its tolerance, warned) for one data set."""
    options = {"bin_size": bin_size, "norm": norm, "debias": debias}
    exact = CalibrationError(**options)
    exact.update(q, y)
    streaming = CalibrationError(streaming=True, **options)
    streaming.update(q, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = float(streaming.compute())
    warned = any("streaming sketch" in str(w.message) for w in caught)
    tolerance = float(streaming.streaming_tolerance())
    return float(exact.compute()), value, tolerance, warned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=1_000_000)
    parser.add_argument(
        "--seeds", type=at_least_two, default=10, help="data sets (≥ 2: their sd is printed)"
    )
    parser.add_argument("--bin-sizes", type=bin_size, nargs="+", default=["auto", 5000, 1000, 200])
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"N = {args.n:,}, {args.seeds} data sets (seeds 0 … {args.seeds - 1})\n")
    print(
        "| β | estimator | max abs(streaming − exact) | mean ± s.e. | sd of exact "
        "| largest tolerance | covered | max gap / tolerance | warned |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    data = []
    for seed in range(args.seeds):
        g = torch.Generator().manual_seed(seed)
        q = torch.rand(args.n, generator=g)
        data.append((q, torch.bernoulli(q.double(), generator=g).long()))
    for size in args.bin_sizes:
        for name, (norm, debias) in ESTIMATORS.items():
            rows = [one(q, y, size, norm, debias) for q, y in data]
            exact = torch.tensor([r[0] for r in rows], dtype=torch.float64)
            gaps = torch.tensor([r[1] - r[0] for r in rows], dtype=torch.float64)
            bounds = torch.tensor([r[2] for r in rows], dtype=torch.float64)
            mean, se = float(gaps.mean()), float(gaps.std() / len(rows) ** 0.5)
            warned = sum(r[3] for r in rows)
            largest, spread = float(gaps.abs().max()), float(exact.std())
            covered = int((gaps.abs() <= bounds + 1e-12).sum())
            ratio = float((gaps.abs() / bounds.clamp(min=1e-300)).max())
            print(f"| {size} | {name} | {largest:.1e} | {mean:+.1e} ± {se:.1e} | {spread:.1e} "
                  f"| {float(bounds.max()):.1e} | {covered} of {len(rows)} | {ratio:.2f} "
                  f"| {warned} of {len(rows)} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
