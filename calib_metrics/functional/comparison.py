"""Paired comparison of two models' calibration error on the same items.

Two intervals that overlap neither prove nor refute a difference: the two errors are
measured on the same labels, so their sampling errors are correlated. Here both models
are resampled **together**: one set of Poisson(1) weights per draw, over the pairs (or
over whole groups: sentences, documents), reweights both models' bins, and each draw
gives both errors at once.

**Debiased (the default).** The interval is built on the difference of squared errors
Δ = θ_a − θ_b, which the debiased squares estimate without bias (D_a − D_b), and then
carried to the difference of errors δ = √θ_a − √θ_b. On the square scale the recentred
bootstrap of :mod:`calib_metrics.functional.intervals` serves both models at once: a
draw's root is L*_a − L*_b, and Δ's draws are (D_a − D_b) − (L*_a − L*_b). Both models'
bootstrap worlds keep their **observed** gaps (λ = 1), for pairs as for groups: where the
two models share bins, the noise of the observed gaps is common to both and cancels in
g_a − g_b, so the unshrunk world reproduces the actual spread of D_a − D_b, while the
single-model shrink (λ² = D₊/P) shrinks that spread by λ (at equal true errors it
rejected "no difference" 10–12% of the time at α = 0.05). The p-value of "no difference"
(δ = 0 exactly when Δ = 0) is the two-sided bootstrap p-value of Δ's draws.

Then each draw is carried to δ: δ* = sign(Δ*)·(√(m* + |Δ*|) − √m*) with
m* = min(θ_a*, θ_b*) the draw's smaller squared error (:func:`root_difference`, the
identity √θ_a − √θ_b written in Δ and m), and the interval is the percentile interval of
the δ* draws. The map is increasing in Δ and 0 at Δ = 0, so δ's interval excludes 0
exactly when Δ's does, and it carries m's uncertainty: near m = 0 that matters, since a
calibrated model's error √D₊ is biased up by about (sd D)^½, more than the other model's
whole spread. An interval of the difference of the two roots centred on the estimate
covered a true difference of 0.049 (against a calibrated model) only 75–83% of the time
(``benchmarks/coverage_compare.py``; ``docs/coverage.md`` has the study).

**Ties.** A tie group split over bins gives each part the group's mean label (the tie
rule, DESIGN.md), so such a bin's frequency carries the group's noise, not its own nᵢ
labels', and the debias term fᵢ(1 − fᵢ)/(nᵢ − 1) over-subtracts (by 0.0025 for 4000 items
tied at ½ in bins of 100). The per-unit bin sums therefore share each tied pair over its
group's bins (cᵢ/N of it in bin i, :func:`_tie_shares`): every draw then gives those bins
the group's reweighted mean, as the estimator does, the roots L* carry the same bias as
D, and θ* = D − L* is free of it. (Resampling the interleaved labels one by one instead
made tied bins noisier in the draws than in the estimator, and with correlated labels
the difference was biased: a tied and an untied calibrated model, grouped labels, were
told apart 23% of the time at α = 0.05.) Each model's own result comes from the same
draws, so with split ties its interval can differ slightly from ``calibration_error_ci``'s.

**Known limit.** When both models are calibrated (true gaps 0) the observed gaps are pure
noise and their linear term widens the draws: the interval over-covers and the test
almost never rejects (0.003 at α = 0.05 in the study). The shrunk world is right there
but under-covers as soon as an error is real, so the observed gaps are kept. A draw whose
θ* is negative (a model whose debiased square is near or below 0, common after
recalibration, and with large tie groups such as isotonic outputs) enters Δ* with its
sign, so the interval can reach beyond what the two reported errors allow and may even
exclude the difference of the reported errors (sentiment, NB before − after isotonic:
+0.1818 with interval [+0.1073, +0.1757], ``docs/sentiment.md``): it is an interval for
the difference of the true errors, not around the (clipped) point estimates.

**Plug-in** (``debias=False``, or the l1/max norms): the percentile interval of the
paired draws' differences of errors, shifted so that their median is the estimate (a
model near zero error has its draws clipped at 0, which would otherwise shift them all);
the p-value inverts it.

The draws come from the one interval pipeline (:mod:`calib_metrics.functional.intervals`):
each model keeps its own bins, formed once on the data, and its per-unit bin sums (the
group generator's sparse matrix; a pair is a unit of its own without ``groups``); every
block of Poisson unit weights reweights both matrices, and each model's draws go through
the same per-draw statistics and summary as a single model's interval.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import Bins, _check_pairs
from calib_metrics.functional.calibration import (
    CalibrationResult,
    _check_groups,
    _check_interval_options,
    _check_options,
    bins_and_index,
)
from calib_metrics.functional.intervals import (
    draw_statistics,
    group_sum_matrix,
    interval_of_draws,
    reweighted_bins,
    unit_weights,
)
from calib_metrics.functional.multiclass import Mode, pair_sets


class ComparisonResult(NamedTuple):
    """``error(a) − error(b)`` on the same items, with its paired interval and p-value.

    Attributes:
        difference: error(a) − error(b), 0-dim float64 (negative: a is better calibrated).
        lower: lower end of the paired interval of the difference.
        upper: upper end.
        p_value: two-sided p-value of "no difference" from the same paired draws.
        a: model a's :class:`~calib_metrics.functional.calibration.CalibrationResult`.
        b: model b's.
    """

    difference: Tensor
    lower: Tensor
    upper: Tensor
    p_value: Tensor
    a: CalibrationResult
    b: CalibrationResult


def _paired_blocks(matrix_a: Tensor, matrix_b: Tensor, n_units: int, n_samples: int, generator):
    """Blocks of both models' resampled bins from one set of unit weights per draw."""
    rows = matrix_a.shape[0] + matrix_b.shape[0]
    for weights in unit_weights(n_units, n_samples, rows, generator, matrix_a.device):
        yield reweighted_bins(matrix_a, weights), reweighted_bins(matrix_b, weights)


def _unit_sums(probs: Tensor, target: Tensor, units: Tensor, n_units: int, options: dict):
    """The model's bins and its sparse [3T, G] per-unit bin sums (count, Σq, Σy), each
    tied pair shared over its group's bins (:func:`_tie_shares`)."""
    bins, index = bins_and_index(probs, target, **options)
    pair, bin_of, share = _tie_shares(probs, index)
    values = [share, share * probs.index_select(0, pair), share * target.index_select(0, pair)]
    n_bins = bins.count.numel()
    matrix = group_sum_matrix(units.index_select(0, pair), bin_of, n_bins, n_units, values)
    return bins, matrix


def _tie_shares(probs: Tensor, index: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(pair, bin, share) entries: each pair of a tie group in every bin of its group,
    with share cᵢ/N (cᵢ of the group's N pairs fall in bin i); an untied pair: its bin, 1.

    Summed per bin, the shares give the bins exactly as the tie rule counts them (each
    part of a split group at the group's mean label), and so does every bootstrap draw.
    """
    key = torch.unique(probs, return_inverse=True)[1]
    n_keys = int(key.max().item()) + 1 if key.numel() else 1
    size = torch.bincount(key, minlength=n_keys).to(torch.float64)
    cell, cell_of_pair = torch.unique(index * n_keys + key, return_inverse=True)
    count = torch.bincount(cell_of_pair, minlength=cell.numel()).to(torch.float64)
    cell_key = cell % n_keys
    by_key = torch.sort(cell_key, stable=True)[1]  # each group's cells, consecutive
    cells_per_key = torch.bincount(cell_key, minlength=n_keys)
    first = torch.cumsum(cells_per_key, 0) - cells_per_key
    repeats = cells_per_key.index_select(0, key)
    pair = torch.repeat_interleave(torch.arange(probs.numel(), device=probs.device), repeats)
    start = torch.repeat_interleave(torch.cumsum(repeats, 0) - repeats, repeats)
    offset = torch.arange(pair.numel(), device=probs.device) - start
    pair_key = key.index_select(0, pair)
    entry = by_key.index_select(0, first.index_select(0, pair_key) + offset)
    share = count.index_select(0, entry) / size.index_select(0, pair_key)
    return pair, cell.index_select(0, entry) // n_keys, share


def _model_result(
    bins: Bins, blocks: list, confidence: float, norm: str, debias: bool, world: str
) -> tuple[Tensor, CalibrationResult]:
    """One model's per-draw errors and its result (percentile interval) from its draws."""
    draws = draw_statistics(bins, blocks, norm=norm, debias=debias, world=world)
    summary = interval_of_draws(draws, confidence=confidence, method="percentile")
    return draws.errors, CalibrationResult(*summary, bins)


def compare_calibration(
    probs_a: Tensor,
    probs_b: Tensor,
    target: Tensor,
    *,
    groups: Tensor | None = None,
    confidence: float = 0.95,
    generator: torch.Generator | None = None,
    n_samples: int = 2000,
    bin_size: int | str = "auto",
    binning: str = "adaptive",
    n_bins: int = 15,
    norm: str = "l2",
    debias: bool = True,
    mode: Mode = "one_vs_rest",
) -> ComparisonResult:
    """Difference in calibration error of two models scored on the same items.

    Args:
        probs_a: model a's probabilities q in [0, 1] (binary, any shape), or multiclass
            ``[..., C]`` with integer ``target [...]``.
        probs_b: model b's probabilities for the same items, same shape.
        target: the binary labels (``probs_a``'s shape), or the class ids.
        groups: optional group id per item (sentence, document): whole groups are
            resampled, so labels correlated within a group move together.
        confidence: coverage of the interval of the difference.
        generator: source of randomness for reproducible draws.
        n_samples: number of paired bootstrap draws.
        bin_size, binning, n_bins, norm, debias: the estimator, as in
            :func:`~calib_metrics.functional.calibration.calibration_error` (defaults: the
            recommended one; ``debias`` falls back to the plug-in for l1 and max).
        mode: multiclass input as in :func:`~calib_metrics.functional.calibration_error`:
            ``"one_vs_rest"`` (every item gives C pairs) or ``"top_label"`` (each model's
            own confidence and correctness; the pairs of an item stay paired across the
            models). ``"classwise"`` is refused: its average of per-class errors has no
            paired draws here; compare each class's pairs instead.

    Returns:
        :class:`ComparisonResult`: ``difference = error(a) − error(b)``, its percentile
        interval over the paired draws (debiased: the draws of Δ = θ_a − θ_b carried to
        √θ_a − √θ_b; plug-in: the draws' differences centred on the estimate; see the
        module docstring), the two-sided p-value ``min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0)))``
        of the draws d, and each model's own :class:`CalibrationResult` from the same
        draws.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(20000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> overconfident = torch.where(q > 0.5, q.sqrt(), q**2)
        >>> r = compare_calibration(overconfident, q, y, n_samples=500, generator=g)
        >>> bool(r.difference > 0), bool(r.lower > 0), bool(r.p_value < 0.01)
        (True, True, True)
        >>> same = compare_calibration(q, q, y, n_samples=200, generator=g)
        >>> same.difference.item(), same.p_value.item()
        (0.0, 1.0)

        Multiclass: the top-label (confidence) error of two classifiers.

        >>> p = torch.softmax(3 * torch.randn(4000, 3, generator=g), -1)
        >>> c = torch.multinomial(p, 1, generator=g).squeeze(1)
        >>> sharp = torch.softmax(3 * p.log(), -1)  # overconfident: temperature 1/3
        >>> r = compare_calibration(sharp, p, c, mode="top_label", n_samples=300, generator=g)
        >>> bool(r.lower > 0)
        True
    """
    _check_options(norm, binning, bin_size, n_bins)
    _check_interval_options(n_samples, confidence, "percentile", "pairs")
    if not isinstance(probs_a, Tensor) or not isinstance(probs_b, Tensor):
        raise ValueError("probs_a and probs_b must be tensors")
    if probs_a.shape != probs_b.shape:
        raise ValueError(
            "the two models must score the same items: probs_a has shape "
            f"{tuple(probs_a.shape)}, probs_b {tuple(probs_b.shape)}"
        )
    probs_a, target_a, probs_b, target_b, groups = _paired_sets(
        probs_a, probs_b, target, groups, mode
    )
    debias = debias and norm == "l2"
    if groups is None:
        units = torch.arange(target_a.numel(), device=target_a.device)
    else:
        units = torch.unique(_check_groups(groups, probs_a), return_inverse=True)[1]
    # Host syncs: the number of units here, and the tie groups per model (_tie_shares).
    n_units = int(units.max().item()) + 1
    options = {"binning": binning, "bin_size": bin_size, "n_bins": n_bins}
    bins_a, sums_a = _unit_sums(probs_a, target_a, units, n_units, options)
    bins_b, sums_b = _unit_sums(probs_b, target_b, units, n_units, options)
    blocks = list(_paired_blocks(sums_a, sums_b, n_units, n_samples, generator))
    # Each model's own result as calibration_error_ci reports it: the shrunk world for
    # pairs, the observed gaps for groups (see calib_metrics.functional.intervals).
    world = "shrunk" if groups is None else "observed"
    estimator = {"confidence": confidence, "norm": norm, "debias": debias, "world": world}
    blocks_a, blocks_b = [blk[0] for blk in blocks], [blk[1] for blk in blocks]
    errors_a, a = _model_result(bins_a, blocks_a, **estimator)
    errors_b, b = _model_result(bins_b, blocks_b, **estimator)
    difference = a.error - b.error
    if not debias:
        ends = _plugin_difference(errors_a - errors_b, difference, confidence)
        return ComparisonResult(difference, *ends, a, b)
    theta_a, theta_b = _paired_squares(bins_a, bins_b, blocks_a, blocks_b)
    ends = _debiased_difference(theta_a, theta_b, confidence)
    return ComparisonResult(difference, *ends, a, b)


def _paired_squares(bins_a: Bins, bins_b: Bins, blocks_a: list, blocks_b: list):
    """Both models' recentred draws θ* with the linear term shrunk jointly (module docstring).

    Each draw's root splits into a quadratic part (the ``"zero"`` world's root: the draw's
    own noise) and a linear part (the observed world's root minus it, 2 Σ wᵢ ĝᵢ eᵢ*). The
    observed gaps ĝ carry their own noise, which inflates the linear part of Δ* by twice
    the quadratic part's variance; the linear part is shrunk by the one factor s that
    removes that excess from Var(lin_a − lin_b), and θ* = (1 − s)·θ*_zero + s·θ*_observed.
    """
    theta = {}
    for world in ("observed", "zero"):
        draws_a = draw_statistics(bins_a, blocks_a, debias=True, world=world)
        draws_b = draw_statistics(bins_b, blocks_b, debias=True, world=world)
        theta[world] = (draws_a.values, draws_b.values)
    (observed_a, observed_b), (zero_a, zero_b) = theta["observed"], theta["zero"]
    linear = (zero_a - observed_a) - (zero_b - observed_b)
    quadratic = zero_a - zero_b
    shrink = _linear_shrink(linear, quadratic)
    return torch.lerp(zero_a, observed_a, shrink), torch.lerp(zero_b, observed_b, shrink)


def _linear_shrink(linear: Tensor, quadratic: Tensor) -> Tensor:
    """s = √(max(0, Var lin − 2·Var quad) / Var lin): the linear part's noise-free share.

    With gaps ĝ = g + ε, E Var*(2 Σ w ĝ e*) = Var(2 Σ w g e) + 2·Var(Σ w e²) for Gaussian
    noise, so subtracting twice the quadratic part's variance leaves the true gaps' share.
    """
    valid = ~(linear.isnan() | quadratic.isnan())
    var_linear = linear[valid].var() if int(valid.sum()) > 1 else linear.new_zeros(())
    var_quadratic = quadratic[valid].var() if int(valid.sum()) > 1 else linear.new_zeros(())
    excess = (var_linear - 2 * var_quadratic).clamp_min(0)
    ratio = torch.where(var_linear > 0, excess / var_linear, torch.ones_like(var_linear))
    return ratio.sqrt()


def _paired_sets(probs_a: Tensor, probs_b: Tensor, target: Tensor, groups, mode: str):
    """Both models' flat, checked binary pairs (and the pairs' group ids) under ``mode``."""
    if mode == "classwise":
        raise ValueError(
            "compare_calibration: mode='classwise' is not supported (its average of per-class "
            "errors has no paired draws); compare one class's pairs at a time, or use "
            "mode='one_vs_rest' or 'top_label'"
        )
    if groups is not None and not isinstance(groups, Tensor):
        raise ValueError(f"groups must be a tensor of group ids, got {type(groups).__name__}")
    (q_a, y_a, groups), *_ = pair_sets(probs_a, target, mode, groups)
    (q_b, y_b, _), *_ = pair_sets(probs_b, target, mode)
    q_a, y_a = _check_pairs(q_a, y_a)
    q_b, y_b = _check_pairs(q_b, y_b)
    return q_a, y_a, q_b, y_b, groups


def _p_value(diffs: Tensor) -> Tensor:
    """Two-sided bootstrap p-value of no difference: min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0)))."""
    if bool((diffs == 0).all()):
        return torch.ones((), dtype=torch.float64, device=diffs.device)
    below, above = (diffs <= 0).double().mean(), (diffs >= 0).double().mean()
    return (2 * torch.minimum(below, above)).clamp(max=1.0)


def _ends(values: Tensor, confidence: float) -> Tensor:
    """The (1 − confidence)/2 and (1 + confidence)/2 quantiles of ``values``."""
    tail = (1 - confidence) / 2
    levels = torch.tensor([tail, 1 - tail], dtype=values.dtype, device=values.device)
    return torch.quantile(values, levels)


def _plugin_difference(diffs: Tensor, difference: Tensor, confidence: float):
    """Percentile interval and p-value of plug-in differences, centred on the estimate."""
    diffs = diffs[~diffs.isnan()]
    diffs = diffs + (difference - torch.quantile(diffs, 0.5))
    lower, upper = _ends(diffs, confidence)
    return lower, upper, _p_value(diffs)


def root_difference(square: Tensor, smaller: Tensor) -> Tensor:
    """√θ_a − √θ_b from Δ = θ_a − θ_b and m = min(θ_a, θ_b): sign(Δ)·(√(m + |Δ|) − √m).

    m is clipped at 0. Increasing in Δ, 0 at Δ = 0, shrinking towards 0 as m grows.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> root_difference(t([0.16 - 0.09, -0.04]), t([0.09, 0.0]))  # 0.4 − 0.3, 0 − 0.2
        tensor([ 0.1000, -0.2000])
    """
    m = smaller.clamp_min(0)
    return torch.sign(square) * ((m + square.abs()).sqrt() - m.sqrt())


def _debiased_difference(theta_a: Tensor, theta_b: Tensor, confidence: float):
    """Interval of √θ_a − √θ_b and p-value from the recentred draws of θ_a and θ_b."""
    valid = ~(theta_a.isnan() | theta_b.isnan())
    theta_a, theta_b = theta_a[valid], theta_b[valid]
    squares = theta_a - theta_b  # Δ's basic-bootstrap draws (D_a − D_b) − (L*_a − L*_b)
    roots = root_difference(squares, torch.minimum(theta_a, theta_b))
    lower, upper = _ends(roots, confidence)
    return lower, upper, _p_value(squares)
