"""The paired draws' spread against the actual spread of the estimates, per construction.

    python benchmarks/compare_spread.py --settings "unequal, b miscalibrated" --n 100000 \
        --data-sets 30 [--seed 11] [--draws 200]

For each of ``--data-sets`` data sets of ``coverage_compare.py``'s setting (independent
labels, or ``--variant grouped`` with ``--group-size`` items per group and latent correlation
``--rho``, 0.5 by default), both models' paired draws θ*_a, θ*_b as ``compare_calibration``
forms them (``library``: each linear part carried onto its neighbour covariance) and with one
neighbour factor for the difference (``neighbour factor``, the library of 2026-11-28).
Printed: the mean sd of the draws over the sd of the estimates across data sets, for
Δ = θ_a − θ_b (D_a − D_b), for the smaller model's θ_b (D_b), and for the difference of
errors δ (√D_a₊ − √D_b₊, the draws carried with their own smaller square), and where
δ*'s median sits (its mean distance from δ̂ in δ*'s sds: 0 for draws centred on δ̂); then the
estimates' sd and their mean offset from the true difference in sds (``--draws 0``: only
these). The estimates use each bin's effective sample size, as the library's do (since
2026-11-29; before, the counts: the same numbers where no tie group is cut, as in
``unequal`` and ``unequal, b miscalibrated``, not for ``_tenths`` models). A ratio of 1 is a
bootstrap that imitates the estimates' spread; with N data sets the sd is known to about
±1/√(2N).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, correlation, count, draws_or_none
from benchmarks.coverage_compare import (
    GROUP_SIZE,
    RHO,
    SETTINGS,
    neighbour_factor_squares,
    simulated,
    use_group_size,
    use_label_correlation,
)
from calib_metrics.functional import comparison
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.intervals import debiased_square, effective_samples

CONSTRUCTIONS = {
    "library": comparison._paired_squares,
    "neighbour factor": neighbour_factor_squares,
}


def ratios(setting: str, variant: str, n: int, data_sets: int, draws: int, seed: int):
    """Per construction: (Δ, θ_b, δ) draws' mean sd over the estimates' sd, and the mean
    distance of δ*'s median from δ̂ in δ*'s sds (none with no draws); and the estimates of
    δ: their sd and their mean offset from the truth in their sds."""
    model_a, model_b, truth = SETTINGS[setting]
    options = {"binning": "adaptive", "bin_size": resolve_bin_size("auto", n), "n_bins": 15}
    estimates, spreads = [], {name: [] for name in CONSTRUCTIONS}
    for q, y, groups, g in simulated(variant, data_sets, n, seed):
        units, n_units = comparison._units(y, groups)
        grouped = groups is not None
        bins_a, sums_a = comparison._unit_sums(model_a(q), y, units, n_units, options, grouped)
        bins_b, sums_b = comparison._unit_sums(model_b(q), y, units, n_units, options, grouped)
        estimates.append(_estimates(bins_a, bins_b))
        if draws == 0:
            continue
        blocks = list(comparison._paired_blocks(sums_a, sums_b, n_units, draws, g))
        draws_a, draws_b = [b[0] for b in blocks], [b[1] for b in blocks]
        for name, squares in CONSTRUCTIONS.items():
            theta_a, theta_b = squares(bins_a, bins_b, draws_a, draws_b)
            root = comparison.root_difference(theta_a - theta_b, theta_a.minimum(theta_b))
            spread = [float(x.std()) for x in (theta_a - theta_b, theta_b, root)]
            # Where the draws sit: their median's distance from δ̂ in their own sds.
            centre = (float(root.median()) - estimates[-1][2]) / spread[2]
            spreads[name].append([*spread, centre])
    estimates = torch.tensor(estimates, dtype=torch.float64)
    actual = estimates.std(dim=0)
    offset = (estimates[:, 2].mean() - truth) / actual[2]
    if draws == 0:
        return {}, (actual[2], offset)
    ratio = {}
    for name, rows in spreads.items():
        means = torch.tensor(rows, dtype=torch.float64).mean(dim=0)
        ratio[name] = torch.cat([means[:3] / actual, means[3:]])
    return ratio, (actual[2], offset)


def _estimates(bins_a, bins_b) -> list[float]:
    """D_a − D_b, D_b and δ̂ = √D_a₊ − √D_b₊, each bin at its effective sample size."""
    d_a, d_b = (
        debiased_square(bins.pred_mean - bins.freq, bins.freq, bins.count, effective_samples(bins))
        for bins in (bins_a, bins_b)
    )
    return [float(d_a - d_b), float(d_b), float(d_a.clamp_min(0).sqrt() - d_b.clamp_min(0).sqrt())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["unequal"])
    parser.add_argument("--n", type=count, default=10_000)
    parser.add_argument(
        "--data-sets", type=at_least_two, default=30, help="≥ 2: their sd is printed"
    )
    parser.add_argument("--draws", type=draws_or_none, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--variant", choices=["iid", "grouped"], default="iid")
    parser.add_argument("--group-size", type=count, default=GROUP_SIZE)
    parser.add_argument(
        "--rho", type=correlation, default=RHO, help="grouped labels' correlation, 0 to 1"
    )
    args = parser.parse_args()
    use_group_size(args.group_size)
    use_label_correlation(args.rho)
    torch.set_num_threads(1)
    grouped = f"grouped ({args.group_size} per group, ρ = {args.rho})"
    labels = "independent" if args.variant == "iid" else grouped
    print(f"{labels} labels, N = {args.n:,}, {args.data_sets} data sets, seed {args.seed}\n")
    print("| setting | draws | Δ* sd / sd of D_a − D_b | θ_b* / D_b | δ* / δ̂ | δ* median − δ̂ |")
    print("|---|---|---|---|---|---|")
    offsets = []
    for setting in args.settings:
        spread, (sd, offset) = ratios(
            setting, args.variant, args.n, args.data_sets, args.draws, args.seed
        )
        offsets.append(f"{setting}: sd of δ̂ {float(sd):.3g}, (mean δ̂ − δ)/sd {float(offset):+.3f}")
        for name, row in spread.items():
            print(f"| {setting} | {name} | " + " | ".join(f"{float(x):.2f}" for x in row) + " |")
    print(f"\nThe estimates (± {1 / args.data_sets**0.5:.3f} for an unbiased δ̂):")
    print("\n".join(offsets))


if __name__ == "__main__":
    main()
