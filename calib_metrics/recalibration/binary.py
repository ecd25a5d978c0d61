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
    _warn_if_inverting(fitted, probs, target, method)  # after the fit's checks of target
    return fitted


def _warn_if_inverting(fitted: nn.Module, probs: Tensor, target: Tensor, method: str) -> None:
    """Warn where the fitted map inverts the model (labels coded the other way): Platt's
    slope, or scaling binning's Platt half's, below 0; for histogram binning, which has
    no slope, dev labels that clearly run against the scores (the positives' mean
    probability below the negatives' by more than 3 standard errors). They had fitted
    such maps silently (accuracy 0.73 → 0.26), where the temperature refuses such scores.
    One host read."""
    if method != "histogram":
        platt = fitted if method == "platt" else fitted.platt
        slope = float(platt.slope)
        if slope < 0:
            _say_inverting(method, f"the fitted map decreases (slope {slope:.3g})")
        return
    y = target.reshape(-1).to(device=probs.device, dtype=torch.float64)
    q = probs.reshape(-1).to(torch.float64)
    n1, n0 = y.sum(), (1 - y).sum()
    m1, m0 = (q * y).sum() / n1, (q * (1 - y)).sum() / n0
    v1, v0 = ((q - m1) ** 2 * y).sum() / n1, ((q - m0) ** 2 * (1 - y)).sum() / n0
    z = (m1 - m0) / (v1 / n1 + v0 / n0).sqrt().clamp_min(1e-300)
    m1, m0, z = torch.stack([m1, m0, z]).tolist()
    if z < -3:
        _say_inverting(
            method,
            f"the dev labels run against the scores (mean probability {m1:.3g} for label 1, "
            f"{m0:.3g} for label 0)",
        )


def _say_inverting(method: str, why: str) -> None:
    warn_caller(
        f"recalibration {method!r}: {why}, so the map fitted inverts the model: check that "
        "the dev scores are the model's for these labels (same order, same label coding)"
    )
