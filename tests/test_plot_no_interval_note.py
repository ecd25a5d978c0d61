"""A bar's "no interval" note written inside the axes reads on what it is written over:
white letters had a contrast of 2.5 on the second model's orange bar, about 1 on the
pale bars of dark_background, and spilled off a bar thinner than them onto the white
axes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from calib_metrics.functional import Bins, CalibrationResult
from calib_metrics.plot import per_label_errors

T, NAN = torch.tensor, torch.tensor(float("nan"))
EMPTY = Bins(T([]), T([]), T([]))

#: WCAG 2's contrast for normal text (AA).
READABLE = 4.5


def _result(error: float, lower: float = float("nan"), upper: float = float("nan")):
    return CalibrationResult(T(error), T(error), T(0.0), T(lower), T(upper), EMPTY)


def _contrast(one, other) -> float:
    def luminance(colour) -> float:
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in colour]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(to_rgb(one)), luminance(to_rgb(other))), reverse=True)
    return (light + 0.05) / (dark + 0.05)


# The second model's bar (C1) reaches the axes' right edge and has no interval.
TWO = {"NN": [_result(0.284, 0.267, 0.297), _result(0.3)], "VB": [_result(0.1), _result(0.05)]}


@pytest.mark.parametrize("style", ["default", "dark_background", "seaborn-v0_8-pastel"])
def test_a_note_inside_its_bar_contrasts_with_it(style: str) -> None:
    with plt.style.context(style):
        _, ax = per_label_errors(TWO, names=["a", "b"])
    inside = [n for n in ax.texts if n.get_horizontalalignment() == "right"]
    assert len(inside) == 1
    bar = next(p for p in ax.patches if abs(p.get_width() - 0.3) < 1e-6)
    assert _contrast(inside[0].get_color(), bar.get_facecolor()[:3]) >= READABLE


def test_a_note_taller_than_its_bar_stays_in_the_axes_on_a_box_it_reads_on() -> None:
    fig = Figure(figsize=(4, 3), layout="constrained")
    ax = fig.add_subplot()
    many = {f"L{i}": _result(0.3) if i % 5 == 0 else _result(0.28, 0.27, 0.29) for i in range(40)}
    per_label_errors(many, ax=ax, sort=False)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer, axes = canvas.get_renderer(), ax.get_window_extent()
    notes = ax.texts
    assert len(notes) == 8
    for note in notes:
        extent = note.get_window_extent(renderer)
        assert axes.x0 <= extent.x0 and extent.x1 <= axes.x1 + 0.5
        # What the letters are written on: their box over the bar (C0).
        under = note.get_bbox_patch()
        assert under is not None
        *box, alpha = under.get_facecolor()
        seen = [alpha * c + (1 - alpha) * b for c, b in zip(box, to_rgb("C0"))]
        assert _contrast(note.get_color(), seen) >= READABLE
