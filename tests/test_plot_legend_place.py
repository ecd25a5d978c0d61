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

from calib_metrics.functional import calibration_error_ci, smooth_reliability_curve
from calib_metrics.plot import reliability_diagram
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


def test_a_legend_the_caller_places_stays():
    fig, ax = reliability_diagram(_result("under"))
    ax.legend(loc="upper left")
    fig.draw_without_rendering()
    assert _place(ax) == 2


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
