"""The count bars of a reliability diagram: uniform bins of 10 had been counted in the
x axis' 20 slices by their means, every other slice empty (bars 307, 0, 291, 0, ...): a
comb of false gaps. Uniform bins now stand on their edges, with ``groups=`` too, and those
past a logit axis' end in its end slice."""

from __future__ import annotations

import warnings
from itertools import pairwise

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib import style
from matplotlib.colors import to_hex, to_rgb

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import N_SLICES, reliability_diagram
from calib_metrics.plot._counts import COUNT_AXIS


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


def _count_colours(fig) -> dict[str, list[str]]:
    counts = fig.axes[1]
    return {
        "background": [to_hex(counts.get_facecolor())],
        "bars": [
            to_hex(counts.patches[0].get_facecolor()),
            to_hex(counts.patches[0].get_edgecolor()),
        ],
        "labels": [to_hex(counts.yaxis.label.get_color())]
        + [to_hex(t.get_color()) for t in counts.yaxis.get_ticklabels()],
    }


def test_the_count_bars_and_labels_are_shaded_from_the_styles_colours(pairs) -> None:
    """On ``dark_background``'s black, the fixed light grey bars (0.85) had glared over the
    bins and the 0.35 grey count label and ticks had all but vanished."""
    r = calibration_error_ci(*pairs, n_samples=20)
    with style.context("dark_background"):
        dark = _count_colours(reliability_diagram(r)[0])
    grey = {key: [to_rgb(c)[0] for c in colours] for key, colours in dark.items()}
    assert grey["background"] == [0.0]
    assert all(g <= 0.4 for g in grey["bars"])  # faint on black, as light grey on white
    assert all(g >= 0.6 for g in grey["labels"])  # and the labels legible
    # The default style keeps its greys (and so its figures' pixels).
    default = _count_colours(reliability_diagram(r)[0])
    assert default["background"] == ["#ffffff"] and default["bars"] == ["#d9d9d9", "#a6a6a6"]
    assert set(default["labels"]) == {"#595959"}


def test_the_count_bars_legend_names_no_grey_that_a_tinted_style_does_not_draw(pairs) -> None:
    """The bars are shaded from text.color: a red one tints them pink, which the legend had
    called "grey bar". Greys (the default and dark_background) keep the word."""
    r = calibration_error_ci(*pairs, n_samples=20)
    with matplotlib.rc_context({"text.color": "red"}):
        fig, ax = reliability_diagram(r)
        one = [t.get_text() for t in ax.get_legend().get_texts()][-1]
        reliability_diagram(r, ax, color="C1")
        several = [t.get_text() for t in ax.get_legend().get_texts()][-1]
    red, green, blue = to_rgb(fig.axes[1].patches[0].get_facecolor())
    assert red > green == blue  # the bars: a pale red
    assert one == "pairs per bar (right axis)"
    assert several == (
        "pairs per bar (right axis): the first model's a shade off the background, "
        "each other's in its colour"
    )
    for context in ("default", "dark_background"):
        with style.context(context):
            _, ax = reliability_diagram(r)
        assert [t.get_text() for t in ax.get_legend().get_texts()][-1] == (
            "pairs per grey bar (right axis)"
        )


@pytest.mark.parametrize("context", ["Solarize_Light2", "seaborn-v0_8-darkgrid"])
def test_a_tinted_background_is_no_shade_of_the_text_colour_in_the_legend(
    pairs, context: str
) -> None:
    """Solarize_Light2's bars are a beige, seaborn's a blue, from the axes' background (its
    text colour is a grey): the legend of several models had called them "a pale shade of
    the text colour"."""
    r = calibration_error_ci(*pairs, n_samples=20)
    with style.context(context):
        fig, ax = reliability_diagram(r)
        reliability_diagram(r, ax, color="C1")
        entry = [t.get_text() for t in ax.get_legend().get_texts()][-1]
        text = to_rgb(matplotlib.rcParams["text.color"])
    bar = to_rgb(fig.axes[1].patches[0].get_facecolor())
    assert max(bar) - min(bar) > 0.02 and max(text) - min(text) <= 0.02
    assert entry == (
        "pairs per bar (right axis): the first model's a shade off the background, "
        "each other's in its colour"
    )


def test_a_transparent_axes_background_shades_the_bars_from_the_figure_behind(pairs) -> None:
    """axes.facecolor="none" had been read without its alpha, as black: the bars came out
    black over a white figure (a blue at alpha 0.2, saturated blue)."""
    r = calibration_error_ci(*pairs, n_samples=20)
    with matplotlib.rc_context({"axes.facecolor": "none"}):
        clear = _count_colours(reliability_diagram(r)[0])
    assert clear["bars"] == ["#d9d9d9", "#a6a6a6"] and set(clear["labels"]) == {"#595959"}
    with matplotlib.rc_context({"axes.facecolor": (0.0, 0.0, 1.0, 0.2)}):
        tinted = _count_colours(reliability_diagram(r)[0])
    red, green, blue = to_rgb(tinted["bars"][0])
    assert min(red, green, blue) > 0.6 and blue > red  # a pale blue, not #0000d9


def _tenths(bars) -> list[float]:
    return [round(b - a, 6) for a, b, _ in bars]


def test_grouped_uniform_bins_are_counted_on_their_edges_too(pairs) -> None:
    """groups= gave the bins their effective sizes and dropped their edges: the comb again."""
    q, y = pairs
    groups = torch.arange(len(q)) // 3
    r = calibration_error_ci(q, y, binning="uniform", n_bins=10, n_samples=20, groups=groups)
    assert _tenths(_bars(reliability_diagram(r)[0])) == [0.1] * 10
    metric = CalibrationError(binning="uniform", n_bins=10)
    metric.update(q, y, groups)
    assert _tenths(_bars(metric.plot()[0])) == [0.1] * 10
    comparison = CalibrationComparison(binning="uniform", n_bins=10, n_samples=20)
    comparison.update(q, q**1.2, y, groups)
    fig, _ = comparison.plot()
    counts = [ax for ax in fig.axes if ax.get_label() == COUNT_AXIS]
    assert len(counts) == 2
    for ax in counts:
        assert [round(p.get_width(), 6) for p in ax.patches] == [0.1] * 10


def _zeros_and_middle() -> tuple[torch.Tensor, torch.Tensor]:
    """1,000 pairs at q = 0 and 2,000 in [0.05, 0.95]: a logit axis from 0.01 on, past which
    the bin [0, 0.01) lies whole."""
    g = torch.Generator().manual_seed(0)
    q = torch.cat([torch.zeros(1000), 0.05 + 0.9 * torch.rand(2000, generator=g)]).double()
    return q, torch.bernoulli(q, generator=g)


def test_uniform_bins_past_a_logit_axis_end_show_in_its_end_slice() -> None:
    """Clipped to the axis, the bin at q = 0 had been a bar of no width: a third of the
    pairs unseen."""
    r = calibration_error_ci(*_zeros_and_middle(), binning="uniform", n_bins=100, n_samples=20)
    fig, ax = reliability_diagram(r, xscale="logit")
    bars = _bars(fig)
    lo, _ = ax.get_xlim()
    assert all(b > a for a, b, _ in bars)
    (first,) = [bar for bar in bars if bar[2] == 1000]
    assert first[0] == pytest.approx(lo) and first[1] > lo * 1.5
    assert sum(h for *_, h in bars) == 3000


def test_a_bin_starting_inside_the_end_bar_joins_it_rather_than_covering_it() -> None:
    """300 pairs at q = 0 made an end bar on [0.01, 0.0157] beside a bin of 2,000 on
    [0.0125, 0.025] drawn over it: 300 pairs read as a sliver of a separate bin."""
    g = torch.Generator().manual_seed(0)
    middle = 0.05 + 0.9 * torch.rand(2000, generator=g)
    q = torch.cat([torch.zeros(300), torch.full((2000,), 0.022), middle]).double()
    y = torch.bernoulli(q, generator=g)
    r = calibration_error_ci(q, y, binning="uniform", n_bins=80, n_samples=20)
    fig, ax = reliability_diagram(r, xscale="logit")
    bars = sorted(_bars(fig))
    assert all(left[1] <= right[0] for left, right in pairwise(bars))  # none overlap
    assert bars[0][0] == pytest.approx(ax.get_xlim()[0]) and bars[0][2] == 2300
    assert sum(h for *_, h in bars) == 4300


def test_a_second_models_uniform_bins_past_the_axis_show_in_its_end_bars() -> None:
    """As the overlay's warning says: their pairs in the first axis' end bars."""
    g = torch.Generator().manual_seed(0)
    high = torch.rand(4000, generator=g) > 0.5
    y = torch.bernoulli(torch.where(high, 0.98, 0.02).double(), generator=g)
    qa = torch.where(high, 0.98, 0.02).double() + 0.005 * torch.rand(4000, generator=g)
    qb = torch.where(high, 1 - 1e-7, 1e-6).double()
    a, b = (
        calibration_error_ci(q, y, binning="uniform", n_bins=200, n_samples=20) for q in (qa, qb)
    )
    fig, ax = reliability_diagram(a, label="a", xscale="logit")
    drawn = len(fig.axes[1].patches)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning of bins past the ends
        reliability_diagram(b, ax, label="b", color="C1")
    bars = _bars(fig)[drawn:]
    lo, hi = ax.get_xlim()
    assert all(end > start for start, end, _ in bars)
    assert bars[0][0] == pytest.approx(lo) and bars[-1][1] == pytest.approx(hi)
    assert sum(h for *_, h in bars) == 4000
