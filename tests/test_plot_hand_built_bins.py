"""A hand-built result's bins are checked before they are drawn: means outside [0, 1] had
failed with a TypeError about complex numbers, and each bad value is a ValueError that
names the problem. A bin of 0 pairs weighs nothing (``check_bins`` and ``ci_from_bins``
accept it): it is left out of the drawing, where it had failed with ZeroDivisionError and
then been refused."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from calib_metrics.functional import Bins, ci_from_bins
from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.plot import reliability_diagram
from calib_metrics.plot_panels import reliability_panels

t = torch.tensor


def _result(pred_mean, freq, count) -> CalibrationResult:
    bins = Bins(t(pred_mean), t(freq), t(count))
    return CalibrationResult(t(0.1), t(0.1), t(0.0), t(0.0), t(0.2), bins)


CASES = [
    (([0.3, 0.6], [0.2, 0.7], [-1.0, 10.0]), r"bins.count must be finite and >= 0"),
    (([0.3, 0.6], [0.2, 0.7], [float("nan"), 10.0]), r"bins.count must be finite and >= 0"),
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


def test_a_bin_of_no_pairs_is_left_out_of_the_drawing() -> None:
    # ci_from_bins accepts it ("a bin of count 0 weighs nothing"); drawing had refused it.
    bins = Bins(t([0.2, 0.5, 0.8]), t([0.1, 0.0, 0.9]), t([400.0, 0.0, 400.0]))
    result = ci_from_bins(bins, n_samples=50, generator=torch.Generator().manual_seed(0))
    _, ax = reliability_diagram(result)
    (points,) = [c for c in ax.containers if c.get_label().startswith("bins")]
    assert points.lines[0].get_xdata().tolist() == pytest.approx([0.2, 0.8])
    assert ax.get_title().splitlines()[-1].endswith(" · 2 bins · N=800")
    _, (panel,) = reliability_panels({"c": [result]})
    assert panel.get_title().startswith("c · 400 positives")
