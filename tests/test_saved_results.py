"""A saved result loads with ``torch.load(weights_only=True)`` given ``calib_metrics.SAFE_GLOBALS``
(README, "The functional API"): the documented classes alone miss a drawn result's private
subclass, its ``IntervalKind`` and its bins' tie groups. One result of each public
function and metric method that returns one round-trips, so that every class of
SAFE_GLOBALS is needed by some test."""

from __future__ import annotations

import functools
import io
import math
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import calib_metrics
from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.functional import (
    Bins,
    adaptive_binning,
    brier_decomposition,
    calibration_error_ci,
    ci_from_bins,
    compare_calibration,
    compare_calibration_by_label,
    pair_bootstrap,
    smooth_curve_from_histogram,
    smooth_reliability_curve,
    spiegelhalter_test,
    uniform_binning,
)
from calib_metrics.functional.intervals import interval_kind


def _data() -> tuple[torch.Tensor, torch.Tensor, torch.Generator]:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g), g


def _reloaded(thing: object, path: Path) -> object:
    torch.save(thing, path)
    with torch.serialization.safe_globals(calib_metrics.SAFE_GLOBALS):
        return torch.load(path, weights_only=True)


@pytest.mark.parametrize("interval", ["pairs", "paper", "groups"])
def test_a_drawn_result_loads_safely_with_its_interval_kind(tmp_path: Path, interval) -> None:
    q, y, g = _data()
    groups = torch.arange(len(q)) // 10 if interval == "groups" else None
    debias = interval != "paper"  # the paper's draws are of the plug-in error
    result = calibration_error_ci(
        q, y, n_samples=100, generator=g, interval=interval, groups=groups, debias=debias
    )
    loaded = _reloaded(result, tmp_path / "r.pt")
    assert interval_kind(loaded) == interval_kind(result) is not None
    assert interval_kind(loaded).interval == interval
    for name in ("error", "mean", "std", "lower", "upper"):
        assert torch.equal(getattr(loaded, name), getattr(result, name))
    assert all(torch.equal(a, b) for a, b in zip(loaded.bins, result.bins))


def test_a_metric_result_and_comparisons_load_safely(tmp_path: Path) -> None:
    q, y, g = _data()
    metric = CalibrationError(n_samples=100)
    metric.update(q, y)
    result = metric.compute_result()
    assert interval_kind(_reloaded(result, tmp_path / "m.pt")) == interval_kind(result)

    other = (q * 0.9).clamp(0, 1)
    compared = compare_calibration(q, other, y, n_samples=100, generator=g)
    loaded = _reloaded(compared, tmp_path / "c.pt")
    assert torch.equal(loaded.difference, compared.difference)
    assert interval_kind(loaded.a) == interval_kind(compared.a)

    labels = torch.arange(len(q)) % 2
    by_label = compare_calibration_by_label(q, other, y, labels, n_samples=100, generator=g)
    assert _reloaded(by_label, tmp_path / "l.pt").verdict.tolist() == by_label.verdict.tolist()


def _multiclass() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two models' probabilities [600, 3], their targets and sentence-like groups."""
    g = torch.Generator().manual_seed(1)
    logits = 2 * torch.randn(600, 3, generator=g, dtype=torch.float64)
    probs = torch.softmax(logits, -1)
    target = torch.multinomial(probs, 1, generator=g)[:, 0]
    return probs, torch.softmax(0.5 * logits, -1), target, torch.arange(600) // 6


def _metric(probs: torch.Tensor, target: torch.Tensor, **options) -> CalibrationError:
    metric = CalibrationError(n_samples=50, **options)
    metric.update(probs, target)
    return metric


def _comparison() -> CalibrationComparison:
    probs, other, target, groups = _multiclass()
    # 120 draws: Holm over 3 labels can call one better (fewer draws are warned of).
    metric = CalibrationComparison(num_classes=3, n_samples=120)
    metric.update(probs, other, target, groups=groups)
    return metric


def _histogram() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, y, _ = _data()
    cell = (q * 100).long()
    count = torch.zeros(100, dtype=torch.float64).index_add_(0, cell, torch.ones_like(q))
    sum_q = torch.zeros_like(count).index_add_(0, cell, q)
    sum_y = torch.zeros_like(count).index_add_(0, cell, y)
    kept = count > 0
    return sum_q[kept] / count[kept], count[kept], sum_y[kept]


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(2)


MAKERS: dict[str, Callable[[], object]] = {
    "calibration_error_ci": lambda: calibration_error_ci(*_data()[:2], n_samples=50),
    "calibration_error_ci uniform (edges)": lambda: calibration_error_ci(
        *_data()[:2], binning="uniform", n_samples=50
    ),
    "calibration_error_ci top_label": lambda: calibration_error_ci(
        *_multiclass()[::2], mode="top_label", n_samples=50
    ),
    "calibration_error_ci classwise": lambda: calibration_error_ci(
        *_multiclass()[::2], mode="classwise", n_samples=50
    ),
    "adaptive_binning": lambda: adaptive_binning(*_data()[:2], bin_size=100),
    "uniform_binning": lambda: uniform_binning(*_data()[:2]),
    "ci_from_bins": lambda: ci_from_bins(adaptive_binning(*_data()[:2], 100), n_samples=50),
    "ci_from_bins of bins by hand": lambda: ci_from_bins(
        Bins(torch.tensor([0.2, 0.7]), torch.tensor([0.1, 0.8]), torch.tensor([400.0, 400.0])),
        n_samples=50,
    ),
    "pair_bootstrap": lambda: pair_bootstrap(adaptive_binning(*_data()[:2], 100), n_samples=50),
    "brier_decomposition": lambda: brier_decomposition(*_data()[:2]),
    "smooth_reliability_curve": lambda: smooth_reliability_curve(
        *_data()[:2], n_samples=20, generator=_generator()
    ),
    "smooth_curve_from_histogram": lambda: smooth_curve_from_histogram(
        *_histogram(), n_samples=20, generator=_generator()
    ),
    "spiegelhalter_test": lambda: spiegelhalter_test(*_data()[:2]),
    "spiegelhalter_test groups": lambda: spiegelhalter_test(
        *_multiclass()[::2], groups=_multiclass()[3]
    ),
    "compare_calibration": lambda: compare_calibration(
        *_multiclass()[:3], n_samples=50, generator=_generator()
    ),
    "compare_calibration_by_label": lambda: compare_calibration_by_label(
        *_multiclass()[:3], _multiclass()[2], n_samples=120, generator=_generator(), min_units=10
    ),
    "CalibrationError.compute_result": lambda: _metric(*_data()[:2]).compute_result(),
    "CalibrationError.compute_result streaming": lambda: _metric(
        *_data()[:2], streaming=True, resolution=512
    ).compute_result(),
    "CalibrationError.compute_result uniform": lambda: _metric(
        *_data()[:2], binning="uniform"
    ).compute_result(),
    "CalibrationError.compute_result top_label": lambda: _metric(
        *_multiclass()[::2], num_classes=3, mode="top_label"
    ).compute_result(),
    "CalibrationError.compute_result average=None": lambda: _metric(
        *_multiclass()[::2], num_classes=3, average=None
    ).compute_result(),
    "CalibrationError.compute_class_results": lambda: _metric(
        *_multiclass()[::2], num_classes=3, mode="classwise"
    ).compute_class_results(),
    "CalibrationError.compute_spiegelhalter": lambda: _metric(*_data()[:2]).compute_spiegelhalter(),
    "CalibrationError.compute_spiegelhalter streaming": lambda: _metric(
        *_data()[:2], streaming=True, resolution=512
    ).compute_spiegelhalter(),
    "CalibrationComparison.compute": lambda: _comparison().compute(),
    "CalibrationComparison.compute_by_label": lambda: _comparison().compute_by_label(min_units=10),
}


@functools.cache
def _made(name: str) -> tuple[object, bytes]:
    """The result ``MAKERS[name]`` returns, and its bytes as torch.save writes them."""
    result = MAKERS[name]()
    buffer = io.BytesIO()
    torch.save(result, buffer)
    return result, buffer.getvalue()


def _loaded(saved: bytes, allowed: tuple[type, ...]) -> object:
    with torch.serialization.safe_globals(list(allowed)):
        return torch.load(io.BytesIO(saved), weights_only=True)


def _assert_same(loaded: object, result: object, where: str = "result") -> None:
    """Equal class by class, tensor by tensor (NaN where NaN, the same dtype), with the
    interval's kind a drawn result carries."""
    assert type(loaded) is type(result), where
    assert getattr(loaded, "kind", None) == getattr(result, "kind", None), where
    if isinstance(result, torch.Tensor):
        assert loaded.dtype == result.dtype, where
        torch.testing.assert_close(loaded, result, rtol=0, atol=0, equal_nan=True, msg=where)
    elif isinstance(result, tuple | list):
        assert len(loaded) == len(result), where
        fields = getattr(result, "_fields", range(len(result)))
        for field, a, b in zip(fields, loaded, result, strict=True):
            _assert_same(a, b, f"{where}.{field}")
    elif isinstance(result, dict):
        assert list(loaded) == list(result), where
        for key in result:
            _assert_same(loaded[key], result[key], f"{where}[{key!r}]")
    elif isinstance(result, float) and math.isnan(result):
        assert math.isnan(loaded), where
    else:
        assert loaded == result, where


@pytest.mark.parametrize("name", list(MAKERS))
def test_every_result_round_trips_with_safe_globals(name: str) -> None:
    result, saved = _made(name)
    _assert_same(_loaded(saved, calib_metrics.SAFE_GLOBALS), result)


@pytest.mark.parametrize("needed", calib_metrics.SAFE_GLOBALS, ids=lambda c: c.__name__)
def test_every_safe_global_is_needed_by_a_result_above(needed: type) -> None:
    """Each class of SAFE_GLOBALS is held by some result of MAKERS: a class added to it
    needs its result above, which then fails to load without it."""
    fewer = tuple(c for c in calib_metrics.SAFE_GLOBALS if c is not needed)
    refused = []
    for name in MAKERS:
        try:
            _loaded(_made(name)[1], fewer)
        except pickle.UnpicklingError:
            refused.append(name)
    assert refused, f"no result of MAKERS holds {needed.__name__}"
