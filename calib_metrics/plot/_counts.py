"""The count of pairs under a reliability diagram: bars per slice of the probability
axis on a second y axis, found again by a further call on the same axes (a second
model's counts over the first's, in its colour).
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from matplotlib import rcParams
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from calib_metrics.plot._probability_axis import _ProbabilityAxis

#: The label of that count axis, by which a further call on the same axes finds it.
COUNT_AXIS = "calib_metrics: pairs per slice"


#: The gid of a diagram's diagonal: the mark of an ``ax`` holding a diagram (``ax.clear()``
#: removes it with the line), so that a further call draws over it as a second model.
DIAGONAL = "calib_metrics: perfect calibration"


def _count_axis(ax: Axes) -> Axes | None:
    """The count axis of a reliability diagram already drawn on ``ax``, or None.

    It is ``ax``'s own twin (not any axis sharing x, which a neighbouring subplot of
    ``sharex=True`` does too), and ``ax`` still holds the diagram's diagonal: a count
    axis left by a diagram that ``ax.clear()`` removed is removed too, as the diagram
    drawn now brings its own.
    """
    twins = _count_twins(ax)
    if any(line.get_gid() == DIAGONAL for line in ax.lines):
        return twins[0] if twins else None
    for stale in twins:
        stale.remove()
    return None


def _count_twins(ax: Axes) -> list[Axes]:
    """``ax``'s count axes, found and left as they are (:func:`_count_axis` removes those
    of a diagram no longer there: only a call that draws may)."""
    return [
        other
        for other in ax.figure.axes
        if other is not ax
        and other.get_label() == COUNT_AXIS
        and ax._twinned_axes.joined(ax, other)  # twinx(), not sharex: no public test
    ]


#: Uniform bins up to this many get a count bar each, on their own edges; more are
#: counted in the x axis' slices (on a linear axis ten or more bins a slice; a logit axis'
#: slices near its ends hold fewer, and a comb can show there).
MAX_BIN_BARS = 200


def _bin_spans(bins: Any) -> list[tuple[float, float]] | None:
    """The edges of each bin that holds pairs, where the bins know them (uniform bins:
    ``TiedBins.edges``) and are few enough to draw a bar each; else None."""
    edges = getattr(bins, "edges", None)
    if edges is None or len(edges) > MAX_BIN_BARS:
        return None
    return [(lo, hi) for (lo, hi), c in zip(edges.tolist(), bins.count.tolist()) if c > 0]


def _slice_counts(
    axis: _ProbabilityAxis,
    q: list[float],
    n: list[float],
    spans: list[tuple[float, float]] | None = None,
) -> tuple[list[float], list[float], list[float]]:
    """Where each bar starts and ends, and the pairs it counts: a bar per bin on its own
    ``spans`` (:func:`_bin_bars`), else the pairs in each slice of the x axis (each bin's
    at its mean q̂; uniform bins of 10 had left every other slice empty, a false comb)."""
    if spans is not None and len(spans) == len(q):
        return _bin_bars(axis, spans, n)
    edges = axis.slices()
    heights = [0.0] * (len(edges) - 1)
    for qi, ni in zip(axis.clip(q), n):
        heights[min(max(bisect.bisect_right(edges, qi) - 1, 0), len(heights) - 1)] += ni
    return edges[:-1], edges[1:], heights


def _bin_bars(
    axis: _ProbabilityAxis, spans: list[tuple[float, float]], n: list[float]
) -> tuple[list[float], list[float], list[float]]:
    """A bar per bin on its span clipped to the axis; the bins that an end of a logit axis
    cuts to less than its end slice count in one bar on that slice, as the slices do: clipped
    to the end, a bin at q̂ = 0 had been a bar of no width, its pairs unseen. A bin that
    starts (or ends) inside that end bar joins it, which then reaches to the bin's far
    edge: drawn on its own it had overlapped the end bar, hiding part of it or all."""
    edges = axis.slices()
    low = high = 0.0
    bars: list[tuple[float, float, float]] = []
    for (start, end), pairs in zip(spans, n, strict=True):
        shown = axis.clip([start, end])
        if start < axis.lo and shown[1] < edges[1]:
            low += pairs
        elif end > axis.hi and shown[0] > edges[-2]:
            high += pairs
        else:
            bars.append((*shown, pairs))
    bars.sort()
    reach = edges[1]
    while low and bars and bars[0][0] < reach:
        _, bar_end, pairs = bars.pop(0)
        low, reach = low + pairs, max(reach, bar_end)
    first = [(edges[0], reach, low)] if low else []
    reach = edges[-2]
    while high and bars and bars[-1][1] > reach:
        bar_start, _, pairs = bars.pop()
        high, reach = high + pairs, min(reach, bar_start)
    last = [(reach, edges[-1], high)] if high else []
    starts, ends, heights = (list(side) for side in zip(*first, *bars, *last, strict=True))
    return starts, ends, heights


def _count_bars(
    ax: Axes,
    axis: _ProbabilityAxis,
    q: list[float],
    n: list[float],
    spans: list[tuple[float, float]] | None = None,
) -> Axes:
    """Pairs per slice of the x axis (each bin's at its mean q̂), or per bin on its
    ``spans``, as bars on a labelled right-hand axis, shaded from the style's colours
    (:func:`_shade`: grey in the default style).

    Returns that axis (its first bar container is the legend's entry).
    """
    bars = _slice_counts(axis, q, n, spans)
    counts = ax.twinx()
    counts.set_label(COUNT_AXIS)  # so that a second model's call finds it
    counts.set_box_aspect(ax.get_box_aspect())  # else the twin keeps the whole cell
    nonzero = [h for h in bars[2] if h > 0] or [1.0]
    log = max(nonzero) >= 100 * min(nonzero)
    face, edge, text = (_shade(counts, share) for share in (0.15, 0.35, 0.65))
    style = {"color": face, "edgecolor": edge, "linewidth": 0.4}
    _slice_bars(counts, *bars, log=log, label=_count_entry(log, grey=_is_grey(face)), **style)
    _count_limits(counts, min(nonzero), max(nonzero), log)
    counts.set_ylabel("pairs" + (" (log scale)" if log else ""), color=text, fontsize=8)
    counts.yaxis.set_label_coords(1.13, 0.17)
    counts.yaxis.set_major_formatter(FuncFormatter(_count_tick))
    counts.tick_params(axis="y", colors=text, labelsize=7)
    ax.set_zorder(counts.get_zorder() + 1)
    ax.patch.set_visible(False)
    return counts


def _shade(counts: Axes, share: float) -> tuple[float, float, float]:
    """The colour ``share`` of the way from the count axis' background to the text colour
    (``rcParams["text.color"]``): the default style's greys (0.85 is 0.15 of the way from
    white to black), faint bars and dimmer labels on any background. Fixed greys had
    glared as light bars on ``dark_background``'s black, and its 0.35 labels had vanished.

    Example:
        >>> from matplotlib.figure import Figure
        >>> _shade(Figure().add_subplot(), 0.15)  # the default style: white, black text
        (0.85, 0.85, 0.85)
    """
    back, ink = _seen_background(counts), to_rgb(rcParams["text.color"])
    return tuple(b + share * (i - b) for b, i in zip(back, ink, strict=True))


def _is_grey(color: Any) -> bool:
    """Whether ``color`` reads as a grey: its channels within 0.02 of each other. A
    ``text.color`` of red tints the shaded bars, which the legend had called grey.

    Example:
        >>> _is_grey((0.85, 0.85, 0.85)), _is_grey((1.0, 0.85, 0.85))
        (True, False)
    """
    rgb = to_rgb(color)
    return max(rgb) - min(rgb) <= 0.02


def _seen_background(counts: Axes) -> tuple[float, float, float]:
    """The colour seen behind the count axis: its facecolor over the figure's (and over
    white, the paper), each as opaque as its alpha. Read without its alpha,
    ``axes.facecolor="none"`` had been black, and the bars black on it.

    Example:
        >>> from matplotlib.figure import Figure
        >>> ax = Figure().add_subplot(facecolor="none")
        >>> _seen_background(ax)
        (1.0, 1.0, 1.0)
    """
    seen = (1.0, 1.0, 1.0)
    figures = [counts.figure]
    while getattr(figures[-1], "_parent", None) is not None:  # a SubFigure: its parent's
        figures.append(figures[-1]._parent)  # (get_figure(root=) needs matplotlib 3.10)
    layers = [f.get_facecolor() for f in reversed(figures)] + [counts.get_facecolor()]
    for color in layers:
        *rgb, alpha = to_rgba(color)
        seen = tuple(alpha * c + (1 - alpha) * s for c, s in zip(rgb, seen, strict=True))
    return seen


def _more_count_bars(
    counts: Axes,
    axis: _ProbabilityAxis,
    q: list[float],
    n: list[float],
    color: str,
    spans: list[tuple[float, float]] | None = None,
) -> None:
    """A further model's pairs per slice (or per bin, on its ``spans``) on a diagram's
    count axis, as bars in its colour over the first model's shaded ones; the axis grows
    to the tallest bar."""
    bars = _slice_counts(axis, q, n, spans)
    log = counts.get_yscale() == "log"
    # The colour names the model, as its bins do: no legend entry of its own.
    style = {"color": color, "alpha": 0.25, "linewidth": 0}
    _slice_bars(counts, *bars, log=log, label="_nolegend_", **style)
    first = counts.containers[0]
    grey = not first.patches or _is_grey(first.patches[0].get_facecolor())
    first.set_label(_count_entry(log, several=True, grey=grey))  # no longer all one shade
    nonzero = [h for bar in counts.patches if (h := bar.get_height()) > 0] or [1.0]
    _count_limits(counts, min(nonzero), max(nonzero), log)


def _slice_bars(
    counts: Axes, starts: list[float], ends: list[float], heights: list[float], **style: Any
) -> None:
    """One bar from each of ``starts`` to its end, drawn with matplotlib ``style``."""
    widths = [b - a for a, b in zip(starts, ends, strict=True)]
    counts.bar(starts, heights, width=widths, align="edge", **style)


def _count_entry(log: bool, several: bool = False, grey: bool = True) -> str:
    """The count bars' legend entry: one model's bars, or several models'; their colour
    named only where the first model's are ``grey`` (shaded from a coloured background or
    ``text.color``, they are a tint no word names: Solarize_Light2's beige, seaborn's blue).

    Example:
        >>> _count_entry(False), _count_entry(False, grey=False)
        ('pairs per grey bar (right axis)', 'pairs per bar (right axis)')
        >>> print(_count_entry(True, several=True))
        pairs per bar (right axis, log): the first model's grey, each other's in its colour
    """
    axis = "right axis, log" if log else "right axis"
    if several:
        first = "grey" if grey else "a shade off the background"
        return f"pairs per bar ({axis}): the first model's {first}, each other's in its colour"
    return f"pairs per {'grey ' if grey else ''}bar ({axis})"


def _count_tick(value: float, _pos: int | None = None) -> str:
    """``500``, ``30k``, ``1.2M``: short labels for the count axis."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def _count_limits(counts: Axes, smallest: float, largest: float, log: bool) -> None:
    """Bars fill the bottom ~third of the plot; ticks only up to the tallest bar."""
    if log:
        bottom = 10.0 ** math.floor(math.log10(smallest)) / 2
        top = bottom * (largest / bottom) ** (1 / 0.35)
        first, last = math.ceil(math.log10(bottom)), math.floor(math.log10(largest))
        ticks = [10.0**k for k in range(first, last + 1)]
        counts.set_ylim(bottom, top)
        counts.yaxis.set_major_locator(FixedLocator(ticks[:: max(1, len(ticks) // 4)]))
        counts.yaxis.set_minor_locator(NullLocator())
    else:
        counts.set_ylim(0, largest / 0.35)
        ticks = MaxNLocator(nbins=3, integer=True).tick_values(0, largest)
        counts.yaxis.set_major_locator(FixedLocator([t for t in ticks if t <= largest]))
