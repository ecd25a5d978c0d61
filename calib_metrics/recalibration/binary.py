"""One entry for recalibrating binary probabilities (a classifier's, or any ``queries`` output)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from calib_metrics.functional.errors import check_generator
from calib_metrics.recalibration._common import check_probs
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
    # Each kind checks and warns of its own fit: temperature refuses dev labels that run
    # against the scores, the others warn (a map that inverts the model, or a flat one).
    if method == "temperature":
        return TemperatureScaling(inputs="probs").fit(probs, target)
    if method == "isotonic":
        return IsotonicCalibration(inputs="probs").fit(probs, target)
    if method == "platt":
        return PlattScaling(inputs="probs").fit(probs, target)
    if method == "histogram":
        return HistogramBinning(n_bins=n_bins, inputs="probs").fit(probs, target)
    fitted = ScalingBinning(n_bins=n_bins, inputs="probs", generator=generator)
    return fitted.fit(probs, target)
