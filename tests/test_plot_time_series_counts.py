"""``posterior_time_series`` draws counts: an infinite value had failed inside
matplotlib ("Axis limits cannot be NaN or Inf"), and negative ones were drawn outside the
axis' fixed range [-0.04, 1.15] × the largest value. Each is a ValueError naming the
series and the period; NaN (no value) is still a gap, and a normal interval's lower end
may fall below 0."""

from __future__ import annotations

import math
import re

import matplotlib

matplotlib.use("Agg")

import pytest

from calib_metrics.plot import posterior_time_series

INF, NAN = math.inf, math.nan


@pytest.mark.parametrize(
    "series,message",
    [
        ({"mean": [INF, 2]}, "mean must hold finite counts >= 0 .* got inf at period 'a'"),
        ({"mean": [-5, -2]}, "mean must hold finite counts >= 0 .* got -5.0 at period 'a'"),
        ({"upper": [2, -1]}, "upper must hold .* got -1.0 at period 'b'"),
        ({"lower": [-INF, 0]}, "lower must hold finite counts .* got -inf at period 'a'"),
        ({"one_best": [1, INF]}, "one_best must hold .* got inf at period 'b'"),
        ({"gold": [-1, 0]}, "gold must hold .* got -1.0 at period 'a'"),
    ],
)
def test_values_that_are_not_counts_are_named(series, message) -> None:
    values = {"mean": [1, 2], "lower": [0, 1], "upper": [2, 3]} | series
    with pytest.raises(ValueError, match=message):
        posterior_time_series(["a", "b"], **values)


def test_nan_is_a_gap_and_a_lower_end_below_zero_is_drawn_from_zero() -> None:
    _, ax = posterior_time_series(["a", "b"], [NAN, 2], [-0.5, 1], [2, 3])
    (band,) = ax.collections
    assert min(v for p in band.get_paths() for v in p.vertices[:, 1]) == 0
    assert ax.get_ylim()[0] < 0 < ax.get_ylim()[1]


def test_a_tiny_negative_from_float_noise_is_drawn_at_zero() -> None:
    # A posterior mean of -1e-12 (a sum of probabilities minus another) had been refused.
    _, ax = posterior_time_series(
        ["a", "b"], [-1e-12, 2], [-0.5, 1], [-1e-12, 3], one_best=[0, 2], gold=[-1e-12, 2]
    )
    mean = ax.lines[0].get_ydata()
    assert min(mean) == 0
    assert min(v for p in ax.collections[0].get_paths() for v in p.vertices[:, 1]) == 0
    gold = next(line for line in ax.lines if line.get_label() == "gold")
    assert min(gold.get_ydata()) == 0
    with pytest.raises(ValueError, match=r"got -0\.001 at period 'a'"):
        posterior_time_series(["a", "b"], [-1e-3, 2], [0, 1], [1, 3])


def _overlay(ax=None):
    _, ax = posterior_time_series(
        ["a", "b"], [1, 2], [0, 1], [2, 3], ax=ax, label="USA", interval="normal"
    )
    return posterior_time_series(["a", "b"], [2, 1], [1, 0], [3, 2], ax=ax, label="NATO")


def test_a_second_series_names_its_own_band() -> None:
    fig, _ = _overlay()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    # The second band, without an interval kind, had been "95% interval", nobody's.
    assert legend == [
        "USA posterior mean",
        "USA 95% interval: normal",
        "NATO posterior mean",
        "NATO 95% interval",
    ]


def test_the_legend_of_its_own_figure_sits_below_the_plot_not_over_the_counts() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig, ax = _overlay()
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # laid out: constrained layout makes room below
    assert len(fig.legends) == 1 and ax.get_legend() is None
    renderer = canvas.get_renderer()
    below = fig.legends[0].get_window_extent(renderer)
    assert below.y1 <= ax.get_tightbbox(renderer).y0  # under the axes and their period ticks


def test_on_a_callers_axes_the_legend_stays_inside_them() -> None:
    from matplotlib.figure import Figure

    fig = Figure()
    _, ax = _overlay(fig.add_subplot())
    assert not fig.legends
    assert [t.get_text() for t in ax.get_legend().get_texts()][-1] == "NATO 95% interval"


def _series(count: int, name: str = "C", interval: str = "normal, over posterior samples"):
    periods = [str(2010 + k) for k in range(12)]
    fig = ax = None
    for k in range(count):
        fig, ax = posterior_time_series(
            periods, [1.0] * 12, [0.5] * 12, [2.0] * 12, ax=ax, label=f"{name}{k}",
            one_best=[1] * 12, gold=[1] * 12, interval=interval,
        )  # fmt: skip
    return fig


@pytest.mark.parametrize(
    "count,name", [(1, "C"), (2, "C"), (5, "C"), (2, "x" * 100)], ids=["1", "2", "5", "2 long"]
)
def test_the_legend_below_fits_the_figures_width(count: int, name: str) -> None:
    """Four columns of two series' entries had run from -82 to 782 px on a 700 px figure
    (cut off by a plain savefig), five series' from -230 to 930, and 100-character labels
    three figures wide: as many columns as fit, labels cut in their middle."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _series(count, name)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    legend = fig.legends[0].get_window_extent(canvas.get_renderer())
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.width
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(texts) == 4 * count
    if len(name) > 60:
        assert all("…" in t and len(t) < 120 for t in texts)


def test_a_long_label_and_interval_kind_leave_one_column_within_the_figure() -> None:
    """Cut to 60 characters each, a label in capitals and an interval kind still made the
    band's entry, which holds both, one column from -46 to 746 px on a 700 px figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    periods = [str(2010 + k) for k in range(12)]
    fig, _ = posterior_time_series(
        periods,
        [1.0] * 12,
        [0.5] * 12,
        [2.0] * 12,
        label="FEDERAL REPUBLIC OF YUGOSLAVIA AND KOSOVO LIBERATION ARMY WAR",
        one_best=[1] * 12,
        gold=[1] * 12,
        interval="normal approximation over 1000 posterior samples of the CRF model",
    )
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    legend = fig.legends[0].get_window_extent(canvas.get_renderer())
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.width


@pytest.mark.parametrize("label", ["W" * 60, "$" + "W" * 58 + "$"], ids=["wide letters", "dollars"])
def test_a_label_of_wide_letters_is_cut_until_the_legend_fits(label: str) -> None:
    """60 characters of "W" made one column of entries from -6 to 706 px on a 700 px
    figure: cut to 60 characters, a label can still be wider than the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    periods = [str(2010 + k) for k in range(12)]
    fig, _ = posterior_time_series(
        periods, [1.0] * 12, [0.5] * 12, [2.0] * 12, label=label, one_best=[1] * 12,
        gold=[1] * 12,
    )  # fmt: skip
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    legend = fig.legends[0].get_window_extent(canvas.get_renderer())
    assert legend.x0 >= fig.bbox.x0 and legend.x1 <= fig.bbox.x1
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("…" in t for t in texts) and texts[0].endswith(" posterior mean")
    # Cut as drawn: no dollar left unescaped, to start mathtext.
    assert not any(re.search(r"(?<!\\)\$", t) for t in texts)
