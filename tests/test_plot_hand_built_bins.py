"""A hand-built result's bins are checked before they are drawn: a bin of 0 pairs had
failed with ZeroDivisionError, means outside [0, 1] with a TypeError about complex
numbers; each is a ValueError that names the problem."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from calib_metrics.functional import Bins
from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.plot import reliability_diagram
from calib_metrics.plot_panels import reliability_panels

t = torch.tensor


def _result(pred_mean, freq, count) -> CalibrationResult:
    bins = Bins(t(pred_mean), t(freq), t(count))
    return CalibrationResult(t(0.1), t(0.1), t(0.0), t(0.0), t(0.2), bins)


CASES = [
    (([0.3, 0.6], [0.2, 0.7], [0.0, 10.0]), r"bins.count holds a bin of 0 pairs \(bin 0"),
    (([1.3, -0.2], [1.2, 0.7], [10.0, 10.0]), r"bins.pred_mean must lie in \[0, 1\]"),
    (([0.3, 0.6], [0.2, 1.5], [10.0, 10.0]), r"bins.freq must lie in \[0, 1\]"),
    (([0.3, float("nan")], [0.2, 0.7], [10.0, 10.0]), "bins.pred_mean contains NaN"),
]


@pytest.mark.parametrize("bins,message", CASES)
@pytest.mark.parametrize("xscale", ["linear", "logit"])
def test_bad_bins_are_named(bins, message, xscale) -> None:
    with pytest.raises(ValueError, match=message):
        reliability_diagram(_result(*bins), xscale=xscale)


@pytest.mark.parametrize("bins,message", CASES)
def test_bad_bins_are_named_in_panels(bins, message) -> None:
    with pytest.raises(ValueError, match=message):
        reliability_panels({"c": [_result(*bins)]})
