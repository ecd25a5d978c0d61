"""The debiased square on tied outputs: each bin's effective sample size against the
earlier rule (a run of whole bins in one group counted once, every other bin its count).

Two settings, adaptive bins of β = "auto", R data sets each, mean ± standard error:

* ``half``: calibrated data, q ~ U(0, 1) rounded to float32 / bfloat16 / float16,
  y ~ Bernoulli(q as rounded): the signed debiased square Σ wᵢ[gapᵢ² − p̂ᵢ(1 −
  p̂ᵢ)/(n_eff,ᵢ − 1)], whose truth is 0. Half-precision outputs are tie groups about
  the size of a bin.
* ``rounded``: q ~ U(0, 1), y ~ Bernoulli(q), predictions q rounded to one decimal
  (11 tie groups): the true squared error is 2·0.05·0.025² (the end groups' means are
  0.025 and 0.975), i.e. an error of 0.0079.

``new`` uses the bins' recorded cut tie groups, ``old`` the same bins bare
(``Bins(*bins)``: the run heuristic that was the rule before).

Run ``python benchmarks/tie_debias.py --n 100000 --reps 100``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._args import at_least_two, count
from calib_metrics.functional.binning import Bins
from calib_metrics.functional.calibration import compute_bins
from calib_metrics.functional.intervals import debiased_square, effective_samples

ROUNDED_TRUTH = 2 * 0.05 * 0.025**2


def squares(q: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """The signed debiased square with the cut groups' n_eff, and with the old rule."""
    bins = compute_bins(q, y, bin_size="auto")
    out = []
    for b in (bins, Bins(*bins)):
        gap = b.pred_mean - b.freq
        out.append(debiased_square(gap, b.freq, b.count, effective_samples(b)).item())
    return out[0], out[1]


def summary(values: list[float]) -> str:
    v = torch.tensor(values, dtype=torch.float64)
    return f"{v.mean().item():+.3e} ± {(v.std() / math.sqrt(v.numel())).item():.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=100_000)
    parser.add_argument(
        "--reps", type=at_least_two, default=100, help="data sets (≥ 2: their sd is printed)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"N = {args.n}, {args.reps} data sets, β = auto")
    print("| data | truth of the square | new: mean ± s.e. | old: mean ± s.e. |")
    print("|---|---:|---:|---:|")
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        g = torch.Generator().manual_seed(args.seed)
        new, old = [], []
        for _ in range(args.reps):
            q = torch.rand(args.n, generator=g).to(dtype)
            y = (torch.rand(args.n, generator=g) < q.double()).long()
            a, b = squares(q, y)
            new.append(a)
            old.append(b)
        print(f"| calibrated, {str(dtype)[6:]} | 0 | {summary(new)} | {summary(old)} |")
    g = torch.Generator().manual_seed(args.seed)
    new, old, new_err, old_err = [], [], [], []
    for _ in range(args.reps):
        q = torch.rand(args.n, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g)
        a, b = squares(torch.round(q * 10) / 10, y)
        new.append(a)
        old.append(b)
        new_err.append(math.sqrt(max(a, 0.0)))
        old_err.append(math.sqrt(max(b, 0.0)))
    print(f"| rounded to 0.1 | {ROUNDED_TRUTH:.3e} | {summary(new)} | {summary(old)} |")
    print(
        f"| rounded to 0.1, error √max(D, 0) | {math.sqrt(ROUNDED_TRUTH):.4f} | "
        f"{summary(new_err)} | {summary(old_err)} |"
    )


if __name__ == "__main__":
    main()
