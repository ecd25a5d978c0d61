"""Two alternatives for the difference interval's draws, beside the library's.

    python benchmarks/coverage_compare_mstar.py --settings unequal "unequal, b miscalibrated" \
        --reps 100

``compare_calibration`` carries each draw of Δ = θ_a − θ_b to the difference of roots with
the draw's smaller square m* = min(θ*_a, θ*_b), both from the jointly shrunk world
(``library``). The alternative (``own shrink``) takes m* from each model's own shrink of
its linear term, s_x² = (Var lin_x − 2 Var quad_x)₊ / Var lin_x, keeping the library's Δ*.
The second (``smoothed world``) recentres both models' draws on a world whose gaps are
each bin's mean prediction minus its isotonic (pool-adjacent-violators) fit of the bins'
frequencies, a noise-reduced stand-in for the true gaps (common to two models that share
bins), with no shrink.
Printed per setting (``coverage_compare.py``'s data, independent labels by default):
coverage of the true difference, rejection rate, mean width and the width a normal
interval of the estimates' own spread would have (3.92 × their sd).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calib_metrics.functional.comparison as comparison
from benchmarks.coverage_compare import SETTINGS, labels
from calib_metrics.functional.intervals import (
    debiased_square,
    effective_samples,
    weighted_mean,
)


def _own_shrink_root_draws(bins_a, bins_b, blocks_a, blocks_b) -> torch.Tensor:
    """The library's Δ* with m* from each model's own shrink."""
    worlds = comparison._world_draws(bins_a, bins_b, blocks_a, blocks_b)
    observed_a, observed_b, zero_a, zero_b = worlds
    theta_a, theta_b = comparison._joint_shrink(*worlds)
    own_a = comparison._linear_shrink(zero_a - observed_a, zero_a)
    own_b = comparison._linear_shrink(zero_b - observed_b, zero_b)
    smaller = torch.minimum(
        torch.lerp(zero_a, observed_a, own_a), torch.lerp(zero_b, observed_b, own_b)
    )
    return comparison.root_difference(theta_a - theta_b, smaller)


def _isotonic(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Pool-adjacent-violators fit of ``values`` (in bin order) with ``weights``."""
    means, masses, sizes = [], [], []
    for value, weight in zip(values.tolist(), weights.tolist()):
        means.append(value)
        masses.append(weight)
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            value2, weight2, size2 = means.pop(), masses.pop(), sizes.pop()
            means[-1] = (means[-1] * masses[-1] + value2 * weight2) / (masses[-1] + weight2)
            masses[-1] += weight2
            sizes[-1] += size2
    fitted = [mean for mean, size in zip(means, sizes) for _ in range(size)]
    return torch.tensor(fitted, dtype=values.dtype)


def _smoothed_squares(bins, blocks) -> torch.Tensor:
    """θ* = D − (D* − θ̃) in the world of gaps q̂ − isotonic(p̂)."""
    samples = effective_samples(bins)
    ratio = samples / bins.count.clamp_min(1)
    square = debiased_square(bins.pred_mean - bins.freq, bins.freq, bins.count, samples)
    world_gap = bins.pred_mean - _isotonic(bins.freq, bins.count)
    world = weighted_mean(world_gap**2, bins.count)
    thetas = []
    for draw in blocks:
        moved = world_gap + (draw.pred_mean - bins.pred_mean) - (draw.freq - bins.freq)
        redrawn = debiased_square(moved, draw.freq, draw.count, draw.count * ratio)
        thetas.append(square - (redrawn - world))
    return torch.cat(thetas)


def _smoothed_root_draws(bins_a, bins_b, blocks_a, blocks_b) -> torch.Tensor:
    theta_a, theta_b = _smoothed_squares(bins_a, blocks_a), _smoothed_squares(bins_b, blocks_b)
    return comparison.root_difference(theta_a - theta_b, torch.minimum(theta_a, theta_b))


def run(setting: str, variant: str, reps: int, n: int, seed: int, root_draws) -> str:
    model_a, model_b, truth = SETTINGS[setting]
    library = comparison._root_draws
    comparison._root_draws = root_draws
    try:
        g = torch.Generator().manual_seed(seed)
        covered = rejected = 0
        widths, estimates = [], []
        for _ in range(reps):
            q = torch.rand(n, generator=g, dtype=torch.float64)
            y, groups = labels(q, variant, g)
            r = comparison.compare_calibration(
                model_a(q), model_b(q), y, groups=groups, n_samples=1000, generator=g
            )
            covered += int(r.lower <= truth <= r.upper)
            rejected += int(r.p_value < 0.05)
            widths.append(float(r.upper - r.lower))
            estimates.append(float(r.difference))
    finally:
        comparison._root_draws = library
    spread = 3.92 * torch.tensor(estimates).std()
    return f"{covered / reps:.3f} | {rejected / reps:.3f} | {sum(widths) / reps:.4f} | {spread:.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["unequal"])
    parser.add_argument("--variant", choices=["iid", "grouped"], default="iid")
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{args.variant} labels, N = {args.n:,}, {args.reps} data sets, seed {args.seed}\n")
    print("| setting | draws | coverage | rejection | mean width | 3.92 × sd of estimates |")
    print("|---|---|---|---|---|---|")
    for setting in args.settings:
        for name, draws in (
            ("library", comparison._root_draws),
            ("own shrink", _own_shrink_root_draws),
            ("smoothed world", _smoothed_root_draws),
        ):
            row = run(setting, args.variant, args.reps, args.n, args.seed, draws)
            print(f"| {setting} | {name} | {row} |", flush=True)


if __name__ == "__main__":
    main()
