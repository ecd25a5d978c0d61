"""Where the reliability diagram's legend goes: off the model's bins and curve.

Inside the axes at the upper left, it had hidden the bins of an underconfident model, whose
points lie above the diagonal at small q (issue 15's review, P9). Read back from the drawn
figure: the legend's box against each bin's point, in display coordinates.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from matplotlib.axes import Axes

from calib_metrics.functional import calibration_error_ci, smooth_reliability_curve
from calib_metrics.plot import reliability_diagram

#: A point within about a marker's size (points) of the legend's box is half under it.
MARKER = 3.0


def _pairs(kind: str, n: int = 6000) -> tuple[torch.Tensor, torch.Tensor]:
    """Pairs whose frequency is pulled towards 1/2 (overconfident) or far above q."""
    g = torch.Generator().manual_seed(3)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    if kind == "labels all 1":  # every bin at p̂ = 1, the top edge
        return q, torch.ones(n, dtype=torch.float64)
    logit = torch.logit(q)
    if kind == "overconfident":
        truth = torch.sigmoid(logit * 0.5)
    else:  # frequencies near 1 from q of 0.3 up: the upper left
        truth = torch.sigmoid(logit * 3.0 + 4.0)
    return q, torch.bernoulli(truth, generator=g)


def _bins_under_legend(ax: Axes) -> int:
    """How many of the drawn bins' points the legend's box holds, once the figure is drawn."""
    ax.figure.canvas.draw()
    box = ax.get_legend().get_window_extent().padded(MARKER * ax.figure.dpi / 72)
    points = []
    for line in ax.lines:
        if line.get_marker() == "o":  # the bins' points (errorbar's line)
            points.append(line.get_transform().transform(line.get_xydata()))
    assert points, "no bins drawn"
    return int(box.count_contains(np.concatenate(points)))


@pytest.mark.parametrize("smooth", [False, True])
@pytest.mark.parametrize("kind", ["underconfident", "labels all 1", "overconfident"])
def test_legend_leaves_the_bins_visible(kind: str, smooth: bool) -> None:
    q, y = _pairs(kind)
    result = calibration_error_ci(q, y, n_samples=50)
    curve = smooth_reliability_curve(q, y, n_samples=20) if smooth else None
    _, ax = reliability_diagram(result, smooth=curve)
    assert _bins_under_legend(ax) == 0


def test_an_overconfident_models_legend_stays_at_the_upper_left() -> None:
    """The figures of the docs (calibrated or overconfident models) keep their legend where
    it was: the upper left is free of their bins."""
    q, y = _pairs("overconfident")
    fig, ax = reliability_diagram(calibration_error_ci(q, y, n_samples=50))
    fig.canvas.draw()
    legend_box = ax.get_legend().get_window_extent()
    axes_box = ax.get_window_extent()
    assert legend_box.x0 - axes_box.x0 < 0.1 * axes_box.width
    assert axes_box.y1 - legend_box.y1 < 0.1 * axes_box.height
