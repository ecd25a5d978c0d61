"""Alternatives for the difference interval's draws, beside the library's.

    python benchmarks/coverage_compare_mstar.py --settings unequal "unequal, b miscalibrated" \
        --reps 100 [--variants library "joint covariance" "true gaps"] [--variant grouped]

``compare_calibration`` carries each draw of Δ = θ_a − θ_b to the difference of roots with
the draw's smaller square m* = min(θ*_a, θ*_b), both from the world whose linear parts
carry the true gaps' share only (``library``). The alternative (``own shrink``) takes m*
from each model's own shrink of its linear term, s_x² = (Var lin_x − 2 Var quad_x)₊ /
Var lin_x, keeping the library's Δ*.
The second (``smoothed world``) recentres both models' draws on a world whose gaps are
each bin's mean prediction minus its isotonic (pool-adjacent-violators) fit of the bins'
frequencies, a noise-reduced stand-in for the true gaps (common to two models that share
bins), with no shrink. The third (``joint covariance``) generalises the library's joint
shrink from the difference to both models: the 2 × 2 covariance of the two linear parts
exceeds the true gaps' by twice that of the quadratic parts (E Cov*(lin) = Cov(lin with g)
+ 2 Cov*(quad), jointly Gaussian noise), so the linear parts are carried by the
optimal-transport map between N(0, Cov*(lin)) and N(0, Cov*(lin) − 2 Cov*(quad)) (the
latter's negative eigenvalues set to 0); Δ's variance is the library's, each model's is
corrected too. The last (``true gaps``, an oracle only a simulation has) recentres both
models' draws on the world of the true gaps, each bin's mean prediction minus the mean of
the true q of its pairs: what the draws would be if the observed gaps carried no noise.
``joint neighbour covariance`` carried both linear parts onto their symmetrised
cross-covariance with the neighbouring runs' linear parts; it is the library since
2026-11-29, and the name now runs the library. ``neighbour factor`` is the library of
2026-11-28: one neighbour factor for the difference
(``coverage_compare.neighbour_factor_squares``); the tables in docs/coverage.md before
2026-11-29 name it ``library``.
Every variant's Δ* and m* are carried to the difference of roots as the library carries its
own (``comparison._carried``: since 2026-11-28 the ends are also projected over m's interval
where its lower bound reaches 0; the tables before that date carried with each draw's m*).
Printed per setting (``coverage_compare.py``'s data, independent labels by default):
coverage of the true difference, rejection rate, mean width and the width a normal
interval of the estimates' own spread would have (3.92 × their sd), and the mean sd of
each data set's draws of the difference beside the sd of the estimates.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calib_metrics.functional.comparison as comparison
from benchmarks.coverage_compare import (
    SETTINGS,
    add_data_set_arguments,
    interval_level_boundary,
    neighbour_factor_squares,
    simulated,
    use_group_size,
)
from calib_metrics.functional.calibration import bins_and_index
from calib_metrics.functional.intervals import (
    debiased_square,
    effective_samples,
    weighted_mean,
)


def _library_squares(bins_a, bins_b, blocks_a, blocks_b) -> tuple:
    """The library's Δ* and m*."""
    theta_a, theta_b = comparison._paired_squares(bins_a, bins_b, blocks_a, blocks_b)
    return _square_and_smaller(theta_a, theta_b)


def _square_and_smaller(theta_a: torch.Tensor, theta_b: torch.Tensor) -> tuple:
    return theta_a - theta_b, torch.minimum(theta_a, theta_b)


def _own_shrink_squares(bins_a, bins_b, blocks_a, blocks_b) -> tuple:
    """The joint shrink's Δ* with m* from each model's own shrink."""
    worlds = comparison._world_draws(bins_a, bins_b, blocks_a, blocks_b)
    observed_a, observed_b, zero_a, zero_b = worlds
    theta_a, theta_b = comparison._joint_shrink(*worlds)
    own_a = comparison._linear_shrink(zero_a - observed_a, zero_a)
    own_b = comparison._linear_shrink(zero_b - observed_b, zero_b)
    smaller = torch.minimum(
        torch.lerp(zero_a, observed_a, own_a), torch.lerp(zero_b, observed_b, own_b)
    )
    return theta_a - theta_b, smaller


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
    return _world_squares(bins, blocks, bins.pred_mean - _isotonic(bins.freq, bins.count))


def _world_squares(bins, blocks, world_gap: torch.Tensor) -> torch.Tensor:
    """θ* = D − (D* − θ̃) in the world of the given gaps."""
    samples = effective_samples(bins)
    ratio = samples / bins.count.clamp_min(1)
    square = debiased_square(bins.pred_mean - bins.freq, bins.freq, bins.count, samples)
    world = weighted_mean(world_gap**2, bins.count)
    thetas = []
    for draw in blocks:
        moved = world_gap + (draw.pred_mean - bins.pred_mean) - (draw.freq - bins.freq)
        redrawn = debiased_square(moved, draw.freq, draw.count, draw.count * ratio)
        thetas.append(square - (redrawn - world))
    return torch.cat(thetas)


def _smoothed_world_squares(bins_a, bins_b, blocks_a, blocks_b) -> tuple:
    theta_a, theta_b = _smoothed_squares(bins_a, blocks_a), _smoothed_squares(bins_b, blocks_b)
    return _square_and_smaller(theta_a, theta_b)


def _joint_covariance_squares(bins_a, bins_b, blocks_a, blocks_b) -> tuple:
    """Both models' linear parts carried to Cov*(lin) − 2 Cov*(quad) (module docstring)."""
    observed_a, observed_b, zero_a, zero_b = comparison._world_draws(
        bins_a, bins_b, blocks_a, blocks_b
    )
    linear = torch.stack([observed_a - zero_a, observed_b - zero_b])
    quadratic = torch.stack([zero_a, zero_b])
    valid = ~(linear.isnan().any(0) | quadratic.isnan().any(0))
    source = torch.cov(linear[:, valid])
    target = comparison._symmetric_power(source - 2 * torch.cov(quadratic[:, valid]), 1.0)
    theta_a, theta_b = quadratic + comparison._transport(source, target) @ linear
    return _square_and_smaller(theta_a, theta_b)


def _neighbour_factor_squares(bins_a, bins_b, blocks_a, blocks_b) -> tuple:
    """The library's Δ* and m* of 2026-11-28: one neighbour factor for both linear parts."""
    return _square_and_smaller(*neighbour_factor_squares(bins_a, bins_b, blocks_a, blocks_b))


# The current data set's true q, for the oracle variant (set by run()).
_TRUE_Q: dict = {}


def _true_gap(bins, probs: torch.Tensor) -> torch.Tensor:
    """Each bin's mean prediction minus the mean true q of its pairs."""
    q, target = _TRUE_Q["q"], _TRUE_Q["y"]
    options = {"binning": "adaptive", "bin_size": "auto", "n_bins": 15}
    _, index = bins_and_index(probs, target, **options)
    true_sum = torch.zeros_like(bins.count).index_add_(0, index, q)
    return bins.pred_mean - true_sum / bins.count


def _true_gaps_squares(bins_a, bins_b, blocks_a, blocks_b) -> tuple:
    theta_a = _world_squares(bins_a, blocks_a, _true_gap(bins_a, _TRUE_Q["a"]))
    theta_b = _world_squares(bins_b, blocks_b, _true_gap(bins_b, _TRUE_Q["b"]))
    return _square_and_smaller(theta_a, theta_b)


VARIANTS = {
    "library": _library_squares,
    "own shrink": _own_shrink_squares,
    "smoothed world": _smoothed_world_squares,
    "joint covariance": _joint_covariance_squares,
    # The library since 2026-11-29 (measured here first as this variant, before it was).
    "joint neighbour covariance": _library_squares,
    "neighbour factor": _neighbour_factor_squares,
    "true gaps": _true_gaps_squares,
}


def run(setting: str, variant: str, reps: int, n: int, seed: int, squares) -> str:
    model_a, model_b, truth = SETTINGS[setting]
    library = comparison._root_draws
    spreads = []

    def recorded(bins_a, bins_b, blocks_a, blocks_b, level):
        # Every variant's Δ* and m* carried as the library carries its own (projected ends
        # at m's boundary since 2026-11-28, its pre-test's level falling with n since
        # 2026-11-29).
        own, at_boundary = comparison._carried(*squares(bins_a, bins_b, blocks_a, blocks_b), level)
        spreads.append(float(own.std()))
        return own, at_boundary

    comparison._root_draws = recorded
    try:
        covered = rejected = 0
        widths, estimates = [], []
        for q, y, groups, g in simulated(variant, reps, n, seed):
            _TRUE_Q.update(q=q, y=y, a=model_a(q), b=model_b(q))
            r = comparison.compare_calibration(
                model_a(q), model_b(q), y, groups=groups, n_samples=1000, generator=g
            )
            covered += int(r.lower <= truth <= r.upper)
            rejected += int(r.p_value < 0.05)
            widths.append(float(r.upper - r.lower))
            estimates.append(float(r.difference))
    finally:
        comparison._root_draws = library
    sd = torch.tensor(estimates).std()
    cells = [covered / reps, rejected / reps, sum(widths) / reps, 3.92 * sd]
    cells += [sum(spreads) / len(spreads), sd]
    return " | ".join(f"{c:.3f}" if i < 2 else f"{c:.4f}" for i, c in enumerate(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_set_arguments(parser, spread=True)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS)[:3])
    parser.add_argument(
        "--interval-level-boundary",
        action="store_true",
        help="the boundary pre-test at the interval's own level, as before 2026-11-29's "
        "second change (the tables measured until then)",
    )
    args = parser.parse_args()
    use_group_size(args.group_size)
    if args.interval_level_boundary:
        interval_level_boundary()
    torch.set_num_threads(1)
    print(f"{args.variant} labels, N = {args.n:,}, {args.reps} data sets, seed {args.seed}\n")
    print(
        "| setting | draws | coverage | rejection | mean width | 3.92 × sd of estimates "
        "| mean sd of draws | sd of estimates |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for setting in args.settings:
        for name in args.variants:
            row = run(setting, args.variant, args.reps, args.n, args.seed, VARIANTS[name])
            print(f"| {setting} | {name} | {row} |", flush=True)


if __name__ == "__main__":
    main()
