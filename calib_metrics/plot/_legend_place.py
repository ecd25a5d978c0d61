"""Where a reliability diagram's legend sits inside it, decided each time the figure is
drawn: at the upper left, unless it hides the diagram there and another place hides
clearly less.

Deciding when the figure is drawn, not when the diagram is, sees the figure as laid out
(tight or constrained layout, a grid filled later, a resized canvas) and costs one
look per drawing: deciding at the call had laid out the whole figure at every diagram
(a 4 × 6 grid took 22 s, not 3) and judged a panel by a layout that later changed.
"""

from __future__ import annotations

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.legend import Legend
from matplotlib.transforms import Bbox

from calib_metrics.plot._counts import DIAGONAL, _count_twins

#: gids of what the placement looks at: the diagram's legend (inside it), each model's
#: bin markers and smooth curve; the diagonal's gid is ``_counts.DIAGONAL``.
LEGEND_INSIDE = "calib_metrics: legend inside"
BINS = "calib_metrics: bins"
SMOOTH = "calib_metrics: smooth curve"
PLACER = "calib_metrics: legend placement"
#: The attribute of a legend holding the place last given to it here.
PLACED = "_calib_metrics_placed"

#: The places tried, the first preferred: a tie goes to the earlier one.
PLACES = (
    "upper left",
    "lower right",
    "upper right",
    "lower left",
    "center right",
    "center left",
    "upper center",
    "lower center",
    "center",
)

#: What hiding each kind of mark costs, per whole: every bin's point outweighs the
#: smooth curve's vertices or the count bars' area, and those the diagonal.
WEIGHTS = {"bins": 1.0, "curve": 0.5, "bars": 0.5, "diagonal": 0.25}

#: The upper left is left only for a place that hides this much less (a tenth of the
#: bins' points, say): small differences would move legends between similar figures.
MARGIN = 0.1


def place_legend_when_drawn(ax: Axes, legend: Legend) -> None:
    """Mark ``legend`` as the diagram's own and have it placed each time ``ax`` is drawn
    (once per axes: a further model's legend replaces the first and is placed alike). A
    legend the caller moves (``ax.get_legend().set_loc(...)``, dragging) or makes
    (``ax.legend(...)``) is theirs and left where they put it."""
    legend.set_gid(LEGEND_INSIDE)
    setattr(legend, PLACED, legend._loc)  # a set_loc before the first draw is the caller's
    if not any(artist.get_gid() == PLACER for artist in ax.artists):
        ax.add_artist(_LegendPlacement())


class _LegendPlacement(Artist):
    """Draws nothing: just before the legend is drawn (its zorder is just below), it
    moves the diagram's legend to the place of :func:`_hidden` cost (``PLACES``,
    ``MARGIN``), until someone else moves it (``set_loc``, dragging): from then on the
    legend stays where they put it."""

    def __init__(self) -> None:
        super().__init__()
        self.set_gid(PLACER)
        self.set_in_layout(False)  # no extent: tight bounding boxes must not see it
        self.set_zorder(Legend.zorder - 0.01)

    def draw(self, renderer: RendererBase) -> None:
        legend = self.axes.get_legend() if self.axes is not None else None
        if legend is None or legend.get_gid() != LEGEND_INSIDE or not self.get_visible():
            return
        # Moved by the caller or by dragging since this placed it: theirs now. Matplotlib
        # keeps a legend's place in ``_loc`` alone (no public getter).
        placed = getattr(legend, PLACED, None)
        if placed is not None and legend._loc != placed:
            return
        marks = _marks(self.axes)
        pad = renderer.points_to_pixels(2.0)
        costs = {}
        for place in PLACES:
            legend.set_loc(place)
            costs[place] = _hidden(legend.get_window_extent(renderer).padded(pad), marks)
        best = min(PLACES, key=costs.__getitem__)
        keep = costs[best] > costs[PLACES[0]] - MARGIN
        legend.set_loc(PLACES[0] if keep else best)
        setattr(legend, PLACED, legend._loc)
        self.stale = False


def _marks(ax: Axes) -> dict[str, np.ndarray]:
    """Display coordinates of what a legend may hide: every model's bin points, smooth
    curves' and the diagonal's vertices (rows x, y), and the count bars' extents (rows
    x0, y0, x1, y1)."""

    def points(gid: str) -> np.ndarray:
        found = [line for line in ax.lines if line.get_gid() == gid]
        xy = [line.get_transform().transform(line.get_xydata()) for line in found]
        xy = np.concatenate(xy) if xy else np.empty((0, 2))
        return xy[np.isfinite(xy).all(axis=1)]

    # Found without removing anything: drawing must not change the figure (a diagram whose
    # diagonal the caller removed had lost its count bars at the next draw).
    bars = [
        Bbox.intersection(bar.get_window_extent(), counts.bbox)  # a log axis' bars start far below
        for counts in _count_twins(ax)
        for bar in counts.patches
    ]
    extents = [b.extents for b in bars if b is not None and b.height > 0 and b.width > 0]
    return {
        "bins": points(BINS),
        "curve": points(SMOOTH),
        "bars": np.array(extents, dtype=float).reshape(-1, 4),
        "diagonal": points(DIAGONAL),
    }


def _hidden(box: Bbox, marks: dict[str, np.ndarray]) -> float:
    """Σ over kinds of mark of WEIGHTS × the share of them inside ``box``: of the points,
    or of the bars' area (a bar partly hidden counts in part).

    Example:
        >>> box = Bbox.from_extents(0, 0, 10, 10)
        >>> points = np.array([[5.0, 5.0], [20.0, 5.0]])
        >>> bars = np.array([[5.0, 0.0, 15.0, 10.0]])  # its left half under the box
        >>> float(_hidden(box, {"bins": points, "bars": bars}))
        0.75
    """
    cost = 0.0
    for kind, marks_of_kind in marks.items():
        if not len(marks_of_kind):
            continue
        if kind == "bars":
            share = _area_inside(box, marks_of_kind) / _area(marks_of_kind).sum()
        else:
            share = box.count_contains(marks_of_kind) / len(marks_of_kind)
        cost += WEIGHTS[kind] * share
    return cost


def _area(extents: np.ndarray) -> np.ndarray:
    """The area of each row x0, y0, x1, y1 (0 where it is empty)."""
    sides = np.clip(extents[:, 2:] - extents[:, :2], 0.0, None)
    return sides[:, 0] * sides[:, 1]


def _area_inside(box: Bbox, extents: np.ndarray) -> float:
    """The total area of the rectangles ``extents`` inside ``box``."""
    low = np.maximum(extents[:, :2], [box.x0, box.y0])
    high = np.minimum(extents[:, 2:], [box.x1, box.y1])
    return float(_area(np.concatenate([low, high], axis=1)).sum())
