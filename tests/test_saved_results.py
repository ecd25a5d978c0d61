"""A saved result loads with ``torch.load(weights_only=True)`` given ``calib_metrics.SAFE_GLOBALS``
(README, "The functional API"): the documented classes alone miss a drawn result's private
subclass, its ``IntervalKind`` and its bins' tie groups."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import calib_metrics
from calib_metrics import CalibrationError
from calib_metrics.functional import (
    calibration_error_ci,
    compare_calibration,
    compare_calibration_by_label,
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
