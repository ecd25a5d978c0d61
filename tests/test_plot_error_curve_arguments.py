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


@pytest.mark.parametrize(
    ("call", "named"),
    [
        # a log axis had dropped x = 0 silently, a segment running in from its edge
        (lambda: error_curve([0, 10, 100], [0.1, 0.05, 0.03], logx=True), "x > 0, got 0"),
        (lambda: error_curve([1, 2], [0.1, float("inf")]), "error must be finite.*x=2"),
        (lambda: error_curve([1, 2], [0.1, 0.2], [0.0, -np.inf], [0.2, 0.3]), "lower must be"),
        (
            lambda: error_curve(
                [1, 2, 3], [0.1, 0.05, 0.03], [0.12, 0.06, 0.04], [0.08, 0.04, 0.02]
            ),
            r"lower \(0.12\) is above upper \(0.08\) at x=1",
        ),
        (
            lambda: posterior_time_series(["a", "b"], [1, 2], [2, 1], [1, 3]),
            r"lower \(2\) is above upper \(1\) at period 'a'",
        ),
    ],
)
def test_series_that_would_be_drawn_wrongly_are_refused(call, named) -> None:
    with pytest.raises(ValueError, match=named):
        call()


def test_nan_marks_a_point_without_a_value_on_a_log_axis_too() -> None:
    _, ax = error_curve([1, 2, 3], [0.1, float("nan"), 0.03], logx=True)
    assert ax.get_xscale() == "log"


def test_an_upper_end_within_float_noise_below_zero_is_a_count_of_zero() -> None:
    _, ax = posterior_time_series(["a", "b"], [-1e-13, 1], [0, 0.5], [-1e-13, 1.5])
    assert ax.has_data()
