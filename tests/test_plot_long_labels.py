"""One very long label name (300 characters) had widened the per-label chart without end
(24.6 inches for one model) until its bars were a sliver: a tick shows at most
MAX_TICK_CHARS characters, its middle cut to "…", and the width stops growing there."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib.figure import Figure

from calib_metrics.functional import Bins, CalibrationResult, calibration_error_ci
from calib_metrics.plot import MAX_TICK_CHARS, per_class_errors, per_label_errors
from calib_metrics.plot_panels import PANEL_TITLE_CHARS, classwise_panels, reliability_panels


@pytest.fixture(scope="module")
def result():
    q = torch.rand(300, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return calibration_error_ci(q, (q > 0.5).double(), bin_size=30, n_samples=20)


LONG = "query:" + "x" * 280 + ":the end"


def test_a_long_label_is_shortened_and_the_chart_width_capped(result) -> None:
    capped = per_label_errors({"a" * MAX_TICK_CHARS: result, "y": result})[0]
    fig, ax = per_label_errors({LONG: result, "y": result})
    assert fig.get_size_inches()[0] == capped.get_size_inches()[0] < 8
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    long = next(t for t in ticks if t != "y")
    assert len(long) == MAX_TICK_CHARS and "…" in long
    assert long.startswith("query:x") and long.endswith(":the end")


def test_per_class_ticks_are_shortened_alike(result) -> None:
    _, ax = per_class_errors({"m": [result, result]}, [LONG, "y"])
    assert [len(t.get_text()) for t in ax.get_xticklabels()] == [MAX_TICK_CHARS, 1]


def test_panel_titles_shorten_long_class_names_as_ticks_do(result) -> None:
    _, axes = classwise_panels([result, result], class_names=[LONG, "y"])
    name = axes[0].get_title().splitlines()[0].split(" · ")[0]
    assert len(name) == PANEL_TITLE_CHARS and name.startswith("query:x") and "…" in name
    _, axes = reliability_panels({LONG: [result]})
    assert axes[0].get_title().splitlines()[0].split(" · ")[0] == name


@pytest.mark.parametrize("length", [45, 60, 300])
def test_panel_titles_stay_apart_and_on_the_figure(result, length: int) -> None:
    """Names of 45 characters and more had run into the next panel's title, and the last
    title off the figure's right edge (60 characters were drawn whole)."""
    names = [f"{k}" + "x" * (length - 1) for k in range(4)]
    fig, axes = reliability_panels({name: [result] for name in names})
    fig.draw_without_rendering()
    boxes = [ax.title.get_window_extent() for ax in axes]
    assert all(box.x0 >= 0 and box.x1 <= fig.bbox.width for box in boxes)
    assert all(left.x1 < right.x0 for left, right in itertools.pairwise(boxes))


# Two names that differ only in their middle, which shortening cuts out.
TWINS = ["query:" + "x" * 100 + middle + "x" * 100 + ":the end" for middle in ("A", "B")]


def test_names_differing_only_in_the_middle_stay_distinct(result) -> None:
    _, ax = per_label_errors(dict.fromkeys(TWINS, result), sort=False)
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert len(set(ticks)) == 2 and all(len(t) <= MAX_TICK_CHARS for t in ticks)
    _, ax = per_class_errors({"m": [result, result]}, TWINS)
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert len(set(ticks)) == 2 and all(len(t) <= MAX_TICK_CHARS for t in ticks)
    _, axes = reliability_panels({name: [result] for name in TWINS})
    titles = {ax.get_title().splitlines()[0].split(" · ")[0] for ax in axes}
    assert len(titles) == 2


def test_per_class_bars_keep_their_height_beside_long_names(result) -> None:
    """The figure stayed 4 inches high whatever the names' length: names of 60 characters,
    written upwards, left the bars a strip of 17% of it, and the legend sat on the bars."""
    names = [f"{k} " + "very long label name " * 3 for k in range(5)]
    fig, ax = per_class_errors({"A": [result] * 5, "B": [result] * 5}, names)
    fig.draw_without_rendering()
    assert ax.get_position().height > 0.4
    assert ax.get_legend() is None and len(fig.legends) == 1  # beside the bars
    legend = fig.legends[0].get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1


def test_per_class_legend_stays_on_the_callers_axes(result) -> None:
    fig = Figure()
    ax = fig.add_subplot()
    per_class_errors({"A": [result, result]}, ["x", "y"], ax=ax)
    assert ax.get_legend() is not None and not fig.legends


def test_panel_titles_of_wide_names_and_big_counts_stay_apart() -> None:
    """34 wide capitals beside six-digit counts and "logit x" ran into the next panel's
    title: such a name takes a line of its own."""
    t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    bins = Bins(t([0.001, 0.5, 0.999]), t([0.002, 0.5, 0.998]), t([200000.0, 1000.0, 150000.0]))
    result = CalibrationResult(*(t(0.01) for _ in range(5)), bins)
    names = [f"{k}" + "W" * 33 for k in range(4)]
    fig, axes = reliability_panels({name: [result] for name in names})
    fig.draw_without_rendering()
    boxes = [ax.title.get_window_extent() for ax in axes]
    assert all(left.x1 < right.x0 for left, right in itertools.pairwise(boxes))
    heads = [ax.get_title().splitlines()[:2] for ax in axes]
    assert heads[0] == [names[0], "150,600 positives · logit x"]


def test_an_escaped_dollar_is_measured_as_drawn() -> None:
    """literal() writes a dollar as "\\$", drawn as one character: measured with its
    backslash, a title of dollars had been split though it fits."""
    from calib_metrics.plot import literal
    from calib_metrics.plot_panels import _title_head

    assert len(_title_head([literal("$" * 30), "12 positives"])) == 1
