"""One entry for recalibrating binary probabilities (a classifier's, or any ``queries`` output)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from calib_metrics.functional.errors import check_generator
from calib_metrics.recalibration._common import check_probs, warn_caller
from calib_metrics.recalibration.binning import (
    HistogramBinning,
    IsotonicCalibration,
    ScalingBinning,
    _check_n_bins,
)
from calib_metrics.recalibration.scaling import PlattScaling, TemperatureScaling

__all__ = ["BINARY_METHODS", "fit_binary"]

BINARY_METHODS = ("temperature", "platt", "isotonic", "histogram", "scaling_binning")


def fit_binary(
    method: str,
    probs: Tensor,
    target: Tensor,
    *,
    n_bins: int = 15,
    generator: torch.Generator | None = None,
) -> nn.Module:
    """Fit the recalibrator ``method`` on dev probabilities ``probs [N]`` and 0/1 ``target``.

    The fitted module maps probabilities to probabilities. ``"temperature"`` and
    ``"platt"`` work on ``logit(q)``; ``"histogram"`` (equal-mass bins) and
    ``"scaling_binning"`` use ``n_bins``; ``generator`` drives scaling-binning's split.
    This is the query-level recalibrator of a black-box structured model: pass the
    ``(q, y)`` of any function of :mod:`calib_metrics.queries`.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(1000, generator=g)
        >>> y = torch.bernoulli(q**2, generator=g)
        >>> iso = fit_binary("isotonic", q, y)
        >>> bool(iso(torch.tensor([0.5])) < 0.4)
        True
    """
    check_generator(generator)
    if method not in BINARY_METHODS:
        raise ValueError(f"method must be one of {', '.join(BINARY_METHODS)}; got {method!r}")
    _check_n_bins(n_bins)  # for every method: a typo is refused, whether or not it is used
    # This entry takes probabilities, and so do the modules it builds, at every call.
    probs = check_probs(probs)
    if probs.ndim != 1:  # [N, 2] had fitted a multiclass temperature, where platt refused
        raise ValueError(
            f"probs must be [N], one probability per item, got shape {tuple(probs.shape)}: "
            "flatten queries with .reshape(-1); rows of class probabilities go to "
            "TemperatureScaling(inputs='probs')"
        )
    if method == "temperature":  # refuses labels that run against the scores itself
        return TemperatureScaling(inputs="probs").fit(probs, target)
    if method == "isotonic":  # non-decreasing: such labels flatten it, never invert it
        return IsotonicCalibration(inputs="probs").fit(probs, target)
    if method == "platt":
        fitted: nn.Module = PlattScaling(inputs="probs").fit(probs, target)
    elif method == "histogram":
        fitted = HistogramBinning(n_bins=n_bins, inputs="probs").fit(probs, target)
    else:
        fitted = ScalingBinning(n_bins=n_bins, inputs="probs", generator=generator)
        fitted = fitted.fit(probs, target)
    _warn_if_labels_run_against(probs, target, method)  # after the fit's checks of target
    return fitted


def _warn_if_labels_run_against(probs: Tensor, target: Tensor, method: str) -> None:
    """Warn where the dev labels run against the scores (the positives' mean probability
    below the negatives'): Platt scaling, histogram and scaling binning then fit a map
    that inverts the model (accuracy 0.73 → 0.26 on labels coded the other way), where
    the temperature refuses such scores. One host read."""
    y = target.reshape(-1).to(device=probs.device, dtype=torch.float64)
    q = probs.reshape(-1).to(torch.float64)
    positives, negatives = y.sum(), (1 - y).sum()
    means = torch.stack([(q * y).sum() / positives, (q * (1 - y)).sum() / negatives]).tolist()
    if means[0] < means[1]:
        warn_caller(
            f"recalibration {method!r}: the dev labels run against the scores (mean "
            f"probability {means[0]:.3g} for label 1, {means[1]:.3g} for label 0), so the map "
            "fitted inverts the model: check that they are the model's scores for these "
            "labels (same order, same label coding)"
        )
