"""The streaming metric's gap to the exact mode over data sets, per bin size.

    python benchmarks/streaming_gap_seeds.py --n 1000000 --seeds 10 --bin-sizes auto 5000 1000 200

Calibrated float32 pairs, q ~ U(0, 1), y ~ Bernoulli(q), one data set per seed, through
``CalibrationError`` itself (exact and ``streaming=True``, the default resolution), plug-in
and debiased. Printed per bin size and estimator: the largest |streaming − exact| over the
data sets, the mean of streaming − exact with its standard error, the sd of the exact
error over the data sets (its own sampling noise, for scale), and in how many data sets
``compute()`` warned that the sketch is too coarse.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calib_metrics import CalibrationError


def one(q: torch.Tensor, y: torch.Tensor, bin_size, debias: bool) -> tuple[float, float, bool]:
    """(exact, streaming, warned) for one data set."""
    exact = CalibrationError(bin_size=bin_size, debias=debias)
    exact.update(q, y)
    streaming = CalibrationError(bin_size=bin_size, debias=debias, streaming=True)
    streaming.update(q, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = float(streaming.compute())
    warned = any("streaming sketch" in str(w.message) for w in caught)
    return float(exact.compute()), value, warned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--bin-sizes", nargs="+", default=["auto", "5000", "1000", "200"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"N = {args.n:,}, {args.seeds} data sets (seeds 0 … {args.seeds - 1})\n")
    print("| β | estimator | max abs(streaming − exact) | mean ± s.e. | sd of exact | warned |")
    print("|---|---|---|---|---|---|")
    data = []
    for seed in range(args.seeds):
        g = torch.Generator().manual_seed(seed)
        q = torch.rand(args.n, generator=g)
        data.append((q, torch.bernoulli(q.double(), generator=g).long()))
    for size in args.bin_sizes:
        bin_size = size if size == "auto" else int(size)
        for debias in (False, True):
            rows = [one(q, y, bin_size, debias) for q, y in data]
            exact = torch.tensor([r[0] for r in rows], dtype=torch.float64)
            gaps = torch.tensor([r[1] - r[0] for r in rows], dtype=torch.float64)
            mean, se = float(gaps.mean()), float(gaps.std() / len(rows) ** 0.5)
            warned = sum(r[2] for r in rows)
            name = "debiased" if debias else "plug-in"
            largest, spread = float(gaps.abs().max()), float(exact.std())
            print(f"| {size} | {name} | {largest:.1e} | {mean:+.1e} ± {se:.1e} | {spread:.1e} "
                  f"| {warned} of {len(rows)} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
