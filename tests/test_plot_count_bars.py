"""The count bars of a reliability diagram: uniform bins of 10 had been counted in the
x axis' 20 slices by their means, every other slice empty (bars 307, 0, 291, 0, ...): a
comb of false gaps."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import N_SLICES, reliability_diagram


@pytest.fixture(scope="module")
def pairs():
    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g)
    return q, torch.bernoulli(q**1.5, generator=g)


def _bars(fig) -> list[tuple[float, float, float]]:
    return [(p.get_x(), p.get_x() + p.get_width(), p.get_height()) for p in fig.axes[1].patches]


def test_uniform_bins_are_counted_on_their_own_edges(pairs) -> None:
    r = calibration_error_ci(*pairs, binning="uniform", n_bins=10, n_samples=20)
    fig, _ = reliability_diagram(r)
    bars = _bars(fig)
    assert [(round(a, 6), round(b, 6)) for a, b, _ in bars] == [
        (k / 10, (k + 1) / 10) for k in range(10)
    ]
    assert [h for *_, h in bars] == r.bins.count.tolist()


def test_a_metrics_uniform_bins_are_counted_on_their_edges_too(pairs) -> None:
    metric = CalibrationError(binning="uniform", n_bins=12)
    metric.update(*pairs)
    fig, _ = metric.plot()
    assert [round(b - a, 6) for a, b, _ in _bars(fig)] == [round(1 / 12, 6)] * 12


def test_adaptive_bins_are_still_counted_in_the_axis_slices(pairs) -> None:
    r = calibration_error_ci(*pairs, bin_size=300, n_samples=20)
    fig, _ = reliability_diagram(r)
    assert len(_bars(fig)) == N_SLICES
