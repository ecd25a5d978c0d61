"""``error_curve`` refuses what it would have drawn wrongly without a word: one end of the
band alone (ignored), no points (an empty figure) and 2-d series (flattened)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("matplotlib")

from calib_metrics.plot import error_curve, posterior_time_series


@pytest.mark.parametrize(
    ("band", "given"), [({"lower": [0.0, 0.1]}, "lower"), ({"upper": [0.2, 0.3]}, "upper")]
)
def test_one_end_of_the_band_alone_is_refused(band, given) -> None:
    with pytest.raises(ValueError, match=f"the band needs both lower and upper, got {given}"):
        error_curve([1, 2], [0.1, 0.2], **band)


def test_no_points_are_refused() -> None:
    with pytest.raises(ValueError, match="x is empty: nothing to draw"):
        error_curve([], [])


@pytest.mark.parametrize("array", [torch.zeros, np.zeros])
@pytest.mark.parametrize("where", ["x", "error", "lower"])
def test_a_2d_series_is_refused_not_flattened(array, where) -> None:
    series = {"x": [1.0, 2.0], "error": [0.1, 0.2], "lower": [0.0, 0.1], "upper": [0.2, 0.3]}
    series[where] = array((1, 2))  # flattened, it has the length of x
    with pytest.raises(ValueError, match=rf"{where} must be 1-d .*got shape \(1, 2\)"):
        error_curve(**series)


def test_a_2d_count_series_is_refused_too() -> None:
    with pytest.raises(ValueError, match=r"mean must be 1-d .*got shape \(2, 1\)"):
        posterior_time_series(["a", "b"], torch.ones(2, 1), [0.0, 0.0], [2.0, 2.0])
