"""Does the tie rule's debias term explain the exact-vs-streaming drift at 10⁸–10⁹?

Calibrated float32 pairs (q uniform, y ~ Bernoulli(q)), in batches of 10⁶ from fixed
seeds. At 10⁸ float32 uniform q has ~6 pairs per distinct value, so nearly every exact
bin boundary cuts a small tie group. Per N, seed and β (5000 and "auto") it prints the
*signed* debiased square Σ wᵢ[gapᵢ² − p̂ᵢ(1 − p̂ᵢ)/(n_eff,ᵢ − 1)] (its truth is 0) of:

* exact: ``adaptive_binning`` with each bin's effective sample size from the cut tie
  groups (the library's rule), and ``exact_runs``: the same bins bare (``Bins(*bins)``),
  i.e. the earlier rule, n_eff = the count except for runs of whole bins in one group;
* streaming: the sketch's bins (default resolution) with their cut one-value cells,
  and bare;
* ``neff-1``: the bins' mean n_eff/n − 1 in the exact mode (how much the earlier rule
  over-subtracted, relative to p(1 − p)/n).

Run ``python benchmarks/tie_drift.py --sizes 1e7 1e8 --seeds 3`` (about 1.5 GB at 10⁸).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._args import count, size
from calib_metrics.functional import adaptive_binning, sketch
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.binning import Bins
from calib_metrics.functional.intervals import debiased_square, effective_samples

BATCH = 1_000_000


def pairs(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Calibrated float32 pairs, drawn in batches of 10⁶ from seed-derived generators."""
    q = torch.empty(n)
    y = torch.empty(n, dtype=torch.bool)
    for i, start in enumerate(range(0, n, BATCH)):
        end = min(n, start + BATCH)
        g = torch.Generator().manual_seed(7919 * seed + i)
        q[start:end] = torch.rand(end - start, generator=g)
        y[start:end] = torch.bernoulli(q[start:end], generator=g).bool()
    return q, y


def signed(bins: Bins) -> float:
    """The signed debiased square with the bins' effective sample sizes."""
    gap = bins.pred_mean - bins.freq
    return debiased_square(gap, bins.freq, bins.count, effective_samples(bins)).item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=size, nargs="+", default=[1e7, 1e8])
    parser.add_argument("--seeds", type=count, default=3)
    args = parser.parse_args()
    print("N seed beta exact exact_runs streaming streaming_bare neff-1", flush=True)
    for n in (int(s) for s in args.sizes):
        for seed in range(args.seeds):
            q, y = pairs(n, seed)
            state = sketch.empty()
            for start in range(0, n, BATCH):
                sketch.accumulate(state, q[start : start + BATCH], y[start : start + BATCH])
            for beta in (5000, resolve_bin_size("auto", n)):
                exact = adaptive_binning(q, y, beta)
                streamed = sketch.to_bins(state, beta, redraw=False)  # what debias reads
                excess = (effective_samples(exact) / exact.count - 1).mean().item()
                row = [signed(exact), signed(Bins(*exact)), signed(streamed)]
                row += [signed(Bins(*streamed)), excess]
                print(f"{n:.0e} {seed} {beta} " + " ".join(f"{v:+.3e}" for v in row), flush=True)
            del q, y


if __name__ == "__main__":
    main()
