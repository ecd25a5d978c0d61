"""A recalibrator's warning names the line of the user's fit call: the flat-score warnings
had named the line one frame above it (the caller of the function that called fit)."""

from __future__ import annotations

import inspect
import math
import warnings

import torch

from calib_metrics.recalibration import (
    ChainTemperature,
    HistogramBinning,
    PlattScaling,
    ScalingBinning,
    TemperatureScaling,
    fit_binary,
)


def _fit_flat_multiclass() -> int:
    TemperatureScaling().fit(torch.zeros(10, 3), torch.arange(10) % 3)
    return inspect.currentframe().f_lineno - 1


def _fit_flat_binary() -> int:
    TemperatureScaling().fit(torch.zeros(10), torch.arange(10) % 2)
    return inspect.currentframe().f_lineno - 1


def _fit_one_class_items() -> int:
    logits = torch.full((6, 3), -math.inf)
    target = torch.arange(6) % 3
    logits[torch.arange(6), target] = 1.0
    TemperatureScaling().fit(logits, target)
    return inspect.currentframe().f_lineno - 1


def _fit_flat_chain() -> int:
    em, tr, z = torch.zeros(4, 3, 2), torch.zeros(2, 2), torch.zeros(2)
    tags = torch.tensor([[0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1]])
    ChainTemperature().fit(em, tr, z, z, tags)
    return inspect.currentframe().f_lineno - 1


def _fit_flat_chain_by_calib_err() -> int:
    em, tr, z = torch.zeros(4, 3, 2), torch.zeros(2, 2), torch.zeros(2)
    tags = torch.tensor([[0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1]])
    ChainTemperature(objective="calib_err").fit(em, tr, z, z, tags)
    return inspect.currentframe().f_lineno - 1


def _assert_warnings_name_their_fit_line(fits: tuple) -> None:
    """Each fit warns, and every warning names the line of the fit call it returns."""
    for fit in fits:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit_line = fit()
        assert caught, fit.__name__
        assert {(w.filename, w.lineno) for w in caught} == {(__file__, fit_line)}, fit.__name__


def test_flat_and_one_class_warnings_name_the_fit_call() -> None:
    fits = (_fit_flat_multiclass, _fit_flat_binary, _fit_one_class_items, _fit_flat_chain,
            _fit_flat_chain_by_calib_err)  # fmt: skip
    _assert_warnings_name_their_fit_line(fits)


def _fit_equal_platt() -> int:
    PlattScaling().fit(torch.zeros(10), torch.arange(10) % 2)
    return inspect.currentframe().f_lineno - 1


def _fit_equal_platt_in_halves() -> int:
    halves = ScalingBinning(generator=torch.Generator().manual_seed(0))
    halves.fit(torch.zeros(10), torch.arange(10) % 2)
    return inspect.currentframe().f_lineno - 1


def _fit_binary_platt() -> int:
    fit_binary("platt", torch.full((10,), 0.5), torch.arange(10) % 2)
    return inspect.currentframe().f_lineno - 1


def _fit_small_bins() -> int:
    HistogramBinning(n_bins=5).fit(torch.rand(40), torch.arange(40) % 2)
    return inspect.currentframe().f_lineno - 1


def test_warnings_name_the_fit_call_at_any_depth() -> None:
    """A fit reaches its warnings through more frames for some kinds (PlattScaling's fit
    calls the scalers' fit, ScalingBinning's Platt's, fit_binary any of them): fit_binary's
    had named its own line in binary.py."""
    fits = (_fit_equal_platt, _fit_equal_platt_in_halves, _fit_binary_platt, _fit_small_bins)
    _assert_warnings_name_their_fit_line(fits)
