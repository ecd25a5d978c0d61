"""``error_curve`` takes its flags as True or False only (``logx="no"`` had drawn a log
axis), refuses an x that is not finite (its point had been dropped without a word), and
draws the band of a point whose neighbours have none as a whisker (it had been lost)."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("matplotlib")

from calib_metrics.plot import error_curve


@pytest.mark.parametrize("flag", ["logx", "integer_x"])
def test_a_flag_that_is_not_a_bool_is_refused(flag) -> None:
    with pytest.raises(ValueError, match=f"{flag} must be True or False, got 'no'"):
        error_curve([1, 2, 3], [0.1, 0.2, 0.3], **{flag: "no"})


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_an_x_that_is_not_finite_is_refused_by_its_position(bad) -> None:
    with pytest.raises(ValueError, match=f"x must be finite, got {bad} at position 1"):
        error_curve([1, bad, 3, 4], [0.1, 0.2, 0.3, 0.4])


def test_a_point_whose_neighbours_have_no_band_gets_a_whisker() -> None:
    nan = math.nan
    _, ax = error_curve(
        [1, 2, 3, 4, 5],
        [0.1, nan, 0.3, 0.2, 0.1],
        [0.05, nan, 0.25, 0.1, 0.05],
        [0.15, nan, 0.35, 0.3, 0.15],
    )
    (whiskers,) = ax.containers  # x = 1 alone: the band joins x = 3 to 5
    (segments,) = whiskers.lines[2]
    (whisker,) = segments.get_segments()
    assert whisker.ravel().tolist() == pytest.approx([1.0, 0.05, 1.0, 0.15])


def test_a_band_without_lone_points_gets_no_whiskers() -> None:
    _, ax = error_curve([1, 2], [0.1, 0.2], [0.0, 0.1], [0.2, 0.3])
    assert not ax.containers
