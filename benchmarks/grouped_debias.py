"""Why the paired interval over-covers with grouped labels: the debias term, not the draws.

    python benchmarks/grouped_debias.py --reps 1500 --seed 11

On the grouped labels of ``coverage_compare.py`` (groups of 20 items, Gaussian-copula
correlation ρ = 0.5, N = 10⁴, bins of ``"auto"`` size), over many data sets:

1. **The spread of D_a − D_b** (the difference of debiased squares) in the ``unequal``
   setting, against its linear approximation 0.1 · mean(q − y) (the two models share
   their bins, so the difference is linear in the labels); the group bootstrap's sd of
   the same quantity is printed by ``coverage_compare_diagnostics.py --variant grouped
   --settings unequal`` (its "joint" row) for comparison.
2. **The bias of the debiased square of a calibrated model** (truth 0): the debias term
   p̂(1 − p̂)/(n − 1) is the variance of a bin's label mean for *independent* labels;
   items of one group that share a bin are correlated, so it subtracts too little. A
   cluster-robust variance of each bin's mean (Σ over groups of the squared sums of
   their residuals y − p̂ in the bin, over n², times G/(G − 1)) is printed beside it as
   the reference that removes the bias, and the library's own term with ``groups=``
   (:mod:`calib_metrics.functional.clusters`) beside that.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's benchmarks/

from benchmarks._args import at_least_two, count
from benchmarks.coverage_compare import SETTINGS, labels
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.binning import adaptive_binning
from calib_metrics.functional.calibration import bins_and_index
from calib_metrics.functional.clusters import grouped_bins
from calib_metrics.functional.intervals import debiased_square, effective_samples, weighted_mean


def _squares(q: torch.Tensor, y: torch.Tensor, groups: torch.Tensor, bin_size: int) -> tuple:
    """A calibrated model's (plug-in, debiased, cluster-robust debiased) squares, on the
    library's adaptive bins (``bins_and_index``: each pair's bin, for the groups' sums)."""
    bins, index = bins_and_index(q, y, binning="adaptive", bin_size=bin_size, n_bins=15)
    n_bins, n_groups = bins.count.numel(), int(groups.max()) + 1
    cell = index * n_groups + groups
    residual = torch.zeros(n_bins * n_groups, dtype=torch.float64)
    residual = residual.index_add_(0, cell, y - bins.freq.index_select(0, index))
    members = torch.bincount(cell, minlength=n_bins * n_groups).view(n_bins, n_groups)
    present = (members > 0).sum(1).to(torch.float64)
    robust = residual.view(n_bins, n_groups).pow(2).sum(1) / bins.count**2
    robust = robust * present / (present - 1)
    gap = bins.pred_mean - bins.freq
    library = effective_samples(grouped_bins(q, y, groups, index, bins))
    return (
        weighted_mean(gap**2, bins.count),
        debiased_square(gap, bins.freq, bins.count),
        weighted_mean(gap**2 - robust, bins.count),
        debiased_square(gap, bins.freq, bins.count, library),
    )


def study(n: int, reps: int, seed: int) -> list[str]:
    g = torch.Generator().manual_seed(seed)
    bin_size = resolve_bin_size("auto", n)
    model_a, model_b, _ = SETTINGS["unequal"]
    differences, linear, calibrated = [], [], []
    for _ in range(reps):
        q = torch.rand(n, generator=g, dtype=torch.float64)
        y, groups = labels(q, "grouped", g)
        squares = []
        for probs in (model_a(q), model_b(q)):
            bins = adaptive_binning(probs, y, bin_size=bin_size)
            squares.append(debiased_square(bins.pred_mean - bins.freq, bins.freq, bins.count))
        differences.append(squares[0] - squares[1])
        linear.append(0.1 * (q - y).mean())
        calibrated.append(torch.stack(_squares(q, y, groups, bin_size)))
    d, lin, cal = torch.stack(differences), torch.stack(linear), torch.stack(calibrated)
    lines = [
        f"Grouped labels (groups of 20, ρ = 0.5), N = {n:,}, bins of {bin_size}, "
        f"{reps} data sets, seed {seed}:",
        "",
        f"- unequal setting: sd of D_a − D_b {d.std():.3e} (± {d.std() / math.sqrt(2 * reps):.1e}),"
        f" sd of 0.1 · mean(q − y) {lin.std():.3e}, correlation "
        f"{torch.corrcoef(torch.stack([d, lin]))[0, 1]:.3f}",
        "",
        "| calibrated model (truth 0) | mean square | s.e. | sd |",
        "|---|---:|---:|---:|",
    ]
    names = (
        "plug-in",
        "debiased: p̂(1 − p̂)/(n − 1) (the library without groups=)",
        "debiased: CR1 variance of each bin's mean (this script's own)",
        "debiased: the library with groups= (calib_metrics.functional.clusters)",
    )
    for name, column in zip(names, cal.T):
        se = column.std() / math.sqrt(reps)
        lines.append(f"| {name} | {column.mean():+.2e} | {se:.1e} | {column.std():.2e} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=10_000)
    parser.add_argument(
        "--reps", type=at_least_two, default=1500, help="data sets (≥ 2: their sd is printed)"
    )
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("\n".join(study(args.n, args.reps, args.seed)))


if __name__ == "__main__":
    main()
