"""Paired comparison of two models' calibration error on the same items.

Two intervals that overlap neither prove nor refute a difference: the two errors are
measured on the same labels, so their sampling errors are correlated. Here both models
are resampled **together**: one set of Poisson(1) weights per draw, over the pairs (or
over whole groups: sentences, documents), reweights both models' bins, and each draw
gives both errors at once. The interval of the difference is the percentile interval of
the paired draws' differences, shifted so that their median is the estimate (a model near
zero error has its draws clipped at 0, which would otherwise shift them all); the p-value
of "no difference" inverts it (the smallest α at which the two-sided interval excludes 0).
``benchmarks/coverage_compare.py`` measures coverage and size (``docs/coverage.md``).

The draws come from the one interval pipeline (:mod:`calib_metrics.functional.intervals`):
each model keeps its own bins, formed once on the data, and its per-unit bin sums (the
group generator's sparse matrix; a pair is a unit of its own without ``groups``); every
block of Poisson unit weights reweights both matrices, and each model's draws go through
the same per-draw statistics and summary as a single model's interval. With
``debias=True`` each draw's error is the recentred one of the single-model intervals (the
draw's estimate of the truth), so the difference's interval is centred on the debiased
difference.
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
    interval_of_draws,
    reweighted_bins,
    unit_sum_matrix,
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
    """The model's bins and its sparse [3T, G] per-unit bin sums (count, Σq, Σy)."""
    bins, index = bins_and_index(probs, target, **options)
    return bins, unit_sum_matrix(probs, target, units, index, bins.count.numel(), n_units)


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
        interval over the paired draws d (centred on the estimate), the two-sided p-value
        ``min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0)))`` of the draws' differences d, and each
        model's own :class:`CalibrationResult` from the same draws.

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
    n_units = int(units.max().item()) + 1  # the one host sync: the number of units
    options = {"binning": binning, "bin_size": bin_size, "n_bins": n_bins}
    bins_a, sums_a = _unit_sums(probs_a, target_a, units, n_units, options)
    bins_b, sums_b = _unit_sums(probs_b, target_b, units, n_units, options)
    blocks = list(_paired_blocks(sums_a, sums_b, n_units, n_samples, generator))
    # Pairs: the shrunk (recentred) world of the single-model pair bootstrap; groups: the
    # observed gaps (see calib_metrics.functional.intervals).
    world = "shrunk" if groups is None else "observed"
    estimator = {"confidence": confidence, "norm": norm, "debias": debias, "world": world}
    errors_a, a = _model_result(bins_a, [blk[0] for blk in blocks], **estimator)
    errors_b, b = _model_result(bins_b, [blk[1] for blk in blocks], **estimator)
    return _summarise(a, b, errors_a - errors_b, confidence)


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


def _summarise(a: CalibrationResult, b: CalibrationResult, diffs: Tensor, confidence: float):
    """The difference, its percentile interval and p-value from the paired draws."""
    diffs = diffs[~diffs.isnan()]
    difference = a.error - b.error
    # Centred on the estimate: a model near zero error has draws clipped at 0 and pushed
    # up, which would shift every difference draw (coverage 0.52–0.73 uncentred in
    # benchmarks/coverage_compare.py); the spread is kept, the shift removed.
    diffs = diffs + (difference - torch.quantile(diffs, 0.5))
    tail = (1 - confidence) / 2
    levels = torch.tensor([tail, 1 - tail], dtype=diffs.dtype, device=diffs.device)
    lower, upper = torch.quantile(diffs, levels)
    if bool((diffs == 0).all()):
        p_value = torch.ones((), dtype=torch.float64, device=diffs.device)
    else:
        below, above = (diffs <= 0).double().mean(), (diffs >= 0).double().mean()
        p_value = (2 * torch.minimum(below, above)).clamp(max=1.0)
    return ComparisonResult(difference, lower, upper, p_value, a, b)
