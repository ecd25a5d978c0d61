"""Where a diagram's legend sits: it had stayed at the upper left, where it hid an
underconfident model's bins (points above the diagonal at low q̂: 17 of 76 here). It is
placed when the figure is drawn, as laid out then (placing it at the call had laid out
whole figures at every diagram: wrong for tight layouts, quadratic for grids)."""

from __future__ import annotations

import pickle

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from calib_metrics.functional import calibration_error_ci, smooth_reliability_curve
from calib_metrics.plot import reliability_diagram
from calib_metrics.plot._counts import DIAGONAL
from calib_metrics.plot._legend_place import BINS


def _pairs(kind: str, n: int = 6000) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    truth = {"under": torch.sigmoid(torch.logit(q) * 3 + 4), "calibrated": q}[kind]
    return q, torch.bernoulli(truth, generator=g)


def _result(kind: str):
    q, y = _pairs(kind)
    return calibration_error_ci(q, y, n_samples=20, generator=torch.Generator().manual_seed(0))


def _hidden_points(ax) -> tuple[int, int]:
    """Bin points under the legend as drawn, and all of them."""
    ax.figure.draw_without_rendering()
    box = ax.get_legend().get_window_extent()
    lines = [line for line in ax.lines if line.get_gid() == BINS]
    xy = np.concatenate([line.get_transform().transform(line.get_xydata()) for line in lines])
    return int(box.count_contains(xy)), len(xy)


def _place(ax) -> int:
    return ax.get_legend()._loc  # matplotlib's code: 2 upper left; no public getter


def test_an_underconfident_models_bins_are_not_hidden():
    _fig, ax = reliability_diagram(_result("under"))
    hidden, points = _hidden_points(ax)
    assert points == 76 and hidden == 0
    assert _place(ax) != 2


@pytest.mark.parametrize("smooth", [False, True])
def test_a_calibrated_models_legend_stays_upper_left(smooth: bool):
    q, y = _pairs("calibrated")
    curve = smooth_reliability_curve(q, y, n_samples=10) if smooth else None
    fig, ax = reliability_diagram(_result("calibrated"), smooth=curve)
    fig.draw_without_rendering()
    assert _place(ax) == 2


def test_placed_in_the_figure_as_laid_out():
    """A grid of diagrams in a figure of tight layout: each legend is placed after the
    layout, and none hides its bins."""
    fig = Figure(figsize=(9, 4), layout="tight")
    axes = [fig.add_subplot(1, 2, k) for k in (1, 2)]
    for ax, kind in zip(axes, ("under", "calibrated")):
        reliability_diagram(_result(kind), ax)
    assert [_hidden_points(ax)[0] for ax in axes] == [0, 0]
    assert _place(axes[0]) != 2 and _place(axes[1]) == 2


def test_two_models_inside_a_plain_figure():
    """An overlay in a figure without constrained layout keeps its legend inside: placed
    by both models' bins."""
    fig = Figure(figsize=(5, 5))
    ax = fig.add_subplot()
    reliability_diagram(_result("calibrated"), ax, label="a")
    reliability_diagram(_result("under"), ax, label="b", color="C1")
    hidden, points = _hidden_points(ax)
    assert points == 2 * 76 and hidden <= 0.1 * points
    assert len(ax.get_legend().get_texts()) == 4  # diagonal, a, b, bars


def test_a_legend_placed_before_the_first_draw_stays():
    """A set_loc right after the call, before any draw (a script's order), had been
    overridden by the first draw."""
    fig, ax = reliability_diagram(_result("calibrated"))
    ax.get_legend().set_loc("lower right")
    fig.draw_without_rendering()
    assert _place(ax) == 4


def test_a_legend_the_caller_places_stays():
    fig, ax = reliability_diagram(_result("under"))
    fig.draw_without_rendering()
    assert _place(ax) != 3
    # Moved by the caller (set_loc keeps every entry, the count bars' too) or made anew.
    ax.get_legend().set_loc("lower right")
    fig.draw_without_rendering()
    assert _place(ax) == 4 and len(ax.get_legend().get_texts()) == 3
    ax.legend(loc="upper left")
    fig.draw_without_rendering()
    assert _place(ax) == 2


def test_drawing_leaves_the_count_axis():
    """Placing the legend looked for the count axis with the call that removes a count
    axis whose diagram is gone: a diagram whose diagonal the caller removed lost its bars
    at the next draw."""
    fig, ax = reliability_diagram(_result("calibrated"))
    next(line for line in ax.lines if line.get_gid() == DIAGONAL).remove()
    fig.draw_without_rendering()
    assert len(fig.axes) == 2


def test_log_scaled_count_bars_are_seen():
    """On a log count axis the bars start far below the plot: measured whole, hiding
    their visible part had cost nothing, and the legend went onto them (lower center)."""
    g = torch.Generator().manual_seed(4)
    low = torch.rand(40000, generator=g) < 0.95
    u = torch.rand(40000, generator=g, dtype=torch.float64)
    q = torch.where(low, u * 0.15, 0.15 + 0.85 * u)
    truth = torch.where(low, 0.2 + 8 * q, q.sqrt()).clamp(0, 1)
    result = calibration_error_ci(q, torch.bernoulli(truth, generator=g), n_samples=10, bin_size=40)
    fig, ax = reliability_diagram(result, xscale="linear")
    fig.draw_without_rendering()
    (counts,) = [a for a in fig.axes if a is not ax]
    assert counts.get_yscale() == "log"
    box = ax.get_legend().get_window_extent()
    shown = [Bbox.intersection(b.get_window_extent(), counts.bbox) for b in counts.patches]
    assert not [b for b in shown if b is not None and b.height > 0 and box.overlaps(b)]


def test_the_placement_is_not_in_the_layout_and_pickles():
    """It draws nothing and has no extent: a tight bounding box had run to the canvas'
    origin if it counted it."""
    fig, ax = reliability_diagram(_result("under"))
    fig.draw_without_rendering()
    tight = fig.get_tightbbox()
    assert tight.x0 > 0 and tight.y0 > 0
    again = pickle.loads(pickle.dumps(fig))
    (ax2, _) = again.axes
    again.draw_without_rendering()
    assert _place(ax2) == _place(ax)
