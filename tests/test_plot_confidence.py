"""The figures take a NumPy scalar ``confidence`` as the level it prints as: np.float32(0.9)
had been refused as "must be a number in (0, 1), got np.float32(0.9)" while np.float64
passed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("matplotlib")

from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import interval_label, posterior_time_series, reliability_diagram
from calib_metrics.plot_panels import reliability_panels


@pytest.fixture(scope="module")
def result():
    q = torch.rand(400, generator=torch.Generator().manual_seed(0))
    # at the level drawn: a result that carries its level refuses another one
    return calibration_error_ci(q, (q > 0.5).float(), bin_size=100, n_samples=20, confidence=0.9)


@pytest.mark.parametrize("level", [np.float32(0.9), np.float16(0.9), np.float64(0.9)])
def test_a_numpy_scalar_level_is_drawn_as_written(result, level) -> None:
    assert interval_label(level, "pairs") == "90% interval: pair bootstrap"
    _, ax = reliability_diagram(result, confidence=level)
    assert ax.get_title().splitlines()[1].startswith("90% interval: debiased pair bootstrap ·")
    assert ax.get_legend().get_texts()[1].get_text() == "bins (±1.64 se)"
    fig, _ = reliability_panels({"x": [result]}, confidence=level)
    legend = "titles' [lower, upper]: 90% interval: debiased pair bootstrap"  # the result's
    assert fig.legends[0].get_title().get_text() == legend
    fig, _ = posterior_time_series(["a"], [1.0], [0.5], [1.5], confidence=level)
    assert "90% interval" in [t.get_text() for t in fig.legends[0].get_texts()]  # below


@pytest.mark.parametrize("level", [np.float32(1.5), np.int64(1), np.True_])
def test_a_numpy_scalar_out_of_range_is_still_refused(result, level) -> None:
    with pytest.raises(ValueError, match="confidence must"):
        reliability_diagram(result, confidence=level)
