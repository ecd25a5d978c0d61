"""A diagram's markers drawn whole on the axes' edges (a bin at p̂ = 0 or 1, or at an end
of the x axis, had shown half or a quarter of its marker), and nothing of them past the
axes after a zoom: markers clipped to the axes' box grown by their own size, lines to
the box itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.lines import Line2D
from matplotlib.transforms import BboxBase


class _GrownBox(BboxBase):
    """``ax``'s box grown by ``pad`` points on every side, read each time it is drawn: after
    a zoom, a resize, or at the dpi of the file being saved."""

    def __init__(self, ax: Axes, pad: float) -> None:
        super().__init__()
        self._ax, self._pad = ax, pad
        self.set_children(ax.bbox)

    def get_points(self) -> Any:
        grow = self._pad * self._ax.figure.dpi / 72  # a SubFigure's dpi is its figure's
        return self._ax.bbox.get_points() + np.array([[-grow, -grow], [grow, grow]])


def draw_markers_whole(ax: Axes, marks: ErrorbarContainer) -> None:
    """Move the markers of ``marks``' data line to a line of their own, clipped (as its
    caps) to the axes grown by a marker's size; its connecting line and error bars stay
    clipped to the axes. Unclipped, the markers and line had spilled over the labels after
    ``ax.set_xlim(0.9, 1)``, and collapsed a constrained layout's axes."""
    data, caps, _ = marks.lines
    dots = Line2D([], [])
    dots.update_from(data)
    dots.set_data(data.get_data())
    dots.set(linestyle="none", label="_nolegend_", zorder=data.get_zorder())
    ax.add_line(dots)  # after data, at its zorder: the markers over their line, as before
    # The legend's entry is drawn from data's marker, which data itself no longer draws.
    data.set_markevery([])
    for line in (dots, *caps):
        _clip_to_grown_axes(ax, line)


def _clip_to_grown_axes(ax: Axes, line: Line2D) -> None:
    """Clip ``line``'s markers to the axes grown by half their width."""
    line.set_clip_path(None)
    line.set_clip_box(_GrownBox(ax, (line.get_markersize() + line.get_markeredgewidth()) / 2))
