"""Figures over steps or periods: the error over training steps (:func:`error_curve`)
and posterior counts over time periods (:func:`posterior_time_series`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.ticker import MaxNLocator

from calib_metrics.functional.errors import check_flag
from calib_metrics.functional.intervals import normal_quantile
from calib_metrics.plot._arguments import _axes, _check_lengths, _numbers
from calib_metrics.plot._text import _dollars, _level, _literals, literal
from calib_metrics.wording import MAX_NAME_CHARS, cut_middle, level_text

#: How far below 0, relative to a series' largest magnitude (or 1), a count of
#: ``posterior_time_series`` may fall and still be float noise around 0 (drawn at 0).
COUNT_NOISE = 1e-9


def error_curve(
    x: Sequence[float],
    error: Any,
    lower: Any = None,
    upper: Any = None,
    ax: Axes | None = None,
    *,
    label: str | None = None,
    xlabel: str = "",
    logx: bool = False,
    color: str | None = None,
    title: str | None = None,
    integer_x: bool = False,
    band: str | None = None,
) -> tuple[Figure, Axes]:
    """A calibration error against a parameter (bin size, sample size), with a band.

    ``x``, ``error`` and the band's ends ``lower`` and ``upper`` (both or neither) are
    1-d, one value per point; ``x`` is finite, and NaN in the others marks a point
    without a value (a point whose band ends are known alone, between NaNs, gets a
    whisker); ``band`` is the band's legend entry (what the interval is:
    :func:`interval_label`); ``integer_x=True`` puts ticks on whole numbers only (epochs).

    Example:
        >>> fig, ax = error_curve([1, 2, 3], [0.1, 0.05, 0.03], [0.08, 0.04, 0.02],
        ...                       [0.12, 0.06, 0.04], xlabel="bin size")
        >>> ax.get_xlabel()
        'bin size'
    """
    check_flag("logx", logx)  # logx="no" is truthy: it had drawn a log axis
    check_flag("integer_x", integer_x)
    x = _numbers(x, "x")
    if not x:  # an empty figure had come back
        raise ValueError("x is empty: nothing to draw")
    if (lower is None) != (upper is None):  # one end alone had been ignored
        given = "lower" if upper is None else "upper"
        raise ValueError(f"the band needs both lower and upper, got {given} only")
    _check_lengths("x", len(x), error=_numbers(error, "error"), lower=lower, upper=upper)
    _check_error_series(x, _numbers(error), lower, upper, logx)
    fig, ax = _axes(ax, (6.0, 4.0))
    label, xlabel, title, band = (literal(t) for t in (label, xlabel, title, band))
    had_data = ax.has_data()
    (line,) = ax.plot(x, _numbers(error), "o-", markersize=3, label=label, color=color)
    if lower is not None and upper is not None:
        ax.fill_between(
            x,
            _numbers(lower),
            _numbers(upper),
            alpha=0.25,
            color=line.get_color(),
            linewidth=0,
            label=band,
        )
        _lone_band_points(ax, x, _numbers(lower), _numbers(upper), line.get_color())
    if logx:
        positive = [v for v in x if v > 0]
        ax.set_xscale("log")
        if not had_data and not any(math.isfinite(v) for v in _numbers(error)):
            # Nothing drawn (all NaN) on fresh axes: their default limits (0, 1) cannot be
            # log-scaled; the caller's axes keep their own.
            ax.set_xlim(min(positive), max(positive) * (1 if len(set(positive)) > 1 else 10))
    if integer_x:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("calibration error")
    ax.grid(alpha=0.3)
    if label or band:
        ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax


def _check_error_series(
    x: list[float], error: list[float], lower: Any, upper: Any, logx: bool
) -> None:
    """Refuse what would be drawn wrongly or not at all: an x that is not finite (its point
    had been dropped without a word), an x that a log axis drops (it had vanished, and a
    segment ran in from the axis' edge to the next point), an infinite error or band end
    (not drawn, without a word), a band whose lower end is above its upper one. NaN marks
    a point without a value in the error and the band, not in x (where it has none)."""
    for k, v in enumerate(x):
        if not math.isfinite(v):
            raise ValueError(f"x must be finite, got {v} at position {k}")
    if logx:
        dropped = [v for v in x if not v > 0]
        if dropped:
            raise ValueError(f"logx=True needs x > 0, got {dropped[0]:g}")
    ends = {} if lower is None else {"lower": _numbers(lower), "upper": _numbers(upper)}
    for name, values in {"error": error, **ends}.items():
        for k, v in enumerate(values):
            if math.isinf(v):
                raise ValueError(f"{name} must be finite (or NaN for none), got {v} at x={x[k]:g}")
    if ends:
        _refuse_upside_down(ends["lower"], ends["upper"], [f"x={v:g}" for v in x])


def _lone_band_points(
    ax: Axes, x: list[float], lower: list[float], upper: list[float], colour: str
) -> None:
    """A whisker for each point whose band ends are known but neither neighbour's are (NaN
    around it): the band, drawn between neighbours, had left it out without a word."""
    known = [math.isfinite(a) and math.isfinite(b) for a, b in zip(lower, upper, strict=True)]
    alone = [
        k
        for k, ok in enumerate(known)
        if ok and not (k and known[k - 1]) and not (k + 1 < len(known) and known[k + 1])
    ]
    if alone:
        mid = [(lower[k] + upper[k]) / 2 for k in alone]
        half = [(upper[k] - lower[k]) / 2 for k in alone]
        ax.errorbar([x[k] for k in alone], mid, yerr=half, fmt="none", ecolor=colour,
                    alpha=0.5, capsize=3, linewidth=1.5)  # fmt: skip


def _refuse_upside_down(lower: list[float], upper: list[float], places: list[str]) -> None:
    """Refuse a band or interval whose lower end is above its upper one at a place
    (``places``: how each point is named); NaN ends pass (no value there)."""
    for place, low, high in zip(places, lower, upper, strict=True):
        if low > high:
            raise ValueError(f"lower ({low:g}) is above upper ({high:g}) at {place}")


def posterior_time_series(
    periods: Sequence[str],
    mean: Any,
    lower: Any,
    upper: Any,
    *,
    ax: Axes | None = None,
    label: str | None = None,
    color: str | None = None,
    one_best: Any = None,
    gold: Any = None,
    title: str | None = None,
    confidence: float = 0.95,
    interval: str | None = None,
    spans: Sequence[tuple[float, float]] | None = None,
) -> tuple[Figure, Axes]:
    """Posterior mean count per period with its interval, the 1-best and gold counts (Fig. 6).

    A count belongs to its period, so every series is drawn as steps a period wide
    (never a line interpolated between periods): the posterior mean as a solid step,
    its interval as a shaded box per period, the 1-best count as a dashed step with
    square markers, gold counts as crosses. The y axis starts a little below 0 so that
    zero counts stay visible above the axis. Every series holds counts: finite and >= 0
    (a negative within float noise of 0, such as -1e-12, is drawn at 0), or NaN where a
    period has no value (left blank); only ``lower`` may fall below 0 (a normal
    interval's end), and the band is drawn from 0. ``confidence`` and ``interval``
    (free text naming the interval's kind, e.g. ``"normal, over posterior samples"``)
    name the interval in the legend; the interval itself is given.

    ``spans`` puts the x axis to scale in time: each period's ``(start, end)`` in
    increasing, non-overlapping order (e.g. decimal years, ``2015 -> (2015.0,
    2016.0)``). Periods that do not touch leave a visible gap, with nothing drawn
    in it (no period there: a corpus without documents in those years). Without
    ``spans`` the periods are evenly spaced, one unit each.

    Call it twice on one ``ax`` to overlay two series (the paper's Yugoslavia/NATO).
    The legend sits below the plot in a figure the function makes (``fig.legends[0]``,
    named by both calls, in as many columns as fit the figure's width), where it hides no
    count; on a caller's ``ax``, inside it. A label or ``interval`` over 60 characters is
    cut in its middle, as ticks are, and the legend below's entries further where one
    column of them is still wider than the figure (wide letters).

    Example:
        >>> fig, ax = posterior_time_series(["2001Q1", "2001Q2"], [1.0, 2.5], [0.2, 1.0],
        ...                                 [1.8, 4.0], label="USA", one_best=[1, 3])
        >>> len(ax.lines)  # mean, 1-best steps and 1-best markers
        3
        >>> ax.lines[0].get_drawstyle()
        'steps-post'
        >>> _, ax = posterior_time_series(["1990", "2015"], [0.0, 0.1], [0.0, 0.0],
        ...                               [0.0, 0.5], spans=[(1990, 1991), (2015, 2016)])
        >>> ax.lines[0].get_xdata().tolist()  # 1991-2015 left blank
        [1990.0, 1991.0, nan, 2015.0, 2016.0]
    """
    confidence = _level(confidence)
    normal_quantile(confidence)
    if not len(periods):
        raise ValueError("periods is empty: nothing to draw")
    # Read once (an iterator would be spent by the checks), each named when it is no
    # sequence of numbers: None had failed as "not iterable".
    named = (("mean", mean), ("lower", lower), ("upper", upper))
    mean, lower, upper = (_numbers(values, name) for name, values in named)
    optional = (("one_best", one_best), ("gold", gold))
    one_best, gold = (None if v is None else _numbers(v, name) for name, v in optional)
    series = {"mean": mean, "lower": lower, "upper": upper, "one_best": one_best, "gold": gold}
    _check_lengths("periods", len(periods), **series)
    _check_counts(periods, **series)
    # As drawn: a count within float noise below 0 is 0 (_check_counts), -1e-13 too.
    _refuse_upside_down(_counts(lower), _counts(upper), [f"period {p!r}" for p in periods])
    spans = _period_spans(periods, spans)
    # A long label or interval kind is cut in its middle, as ticks are: a 100-character
    # label had made a legend three figures wide. The band's entry holds both, so the
    # interval kind gets what the label leaves of the room (at least 20): two of 60 had
    # still made a single column wider than the figure.
    label = None if label is None else cut_middle(str(label), MAX_NAME_CHARS)
    room = max(20, MAX_NAME_CHARS - len(label or ""))
    interval = None if interval is None else cut_middle(str(interval), room)
    label, title, interval = literal(label), literal(title), literal(interval)
    own = ax is None
    fig, ax = _axes(ax, (7.0, 3.5))
    edges, breaks = _span_edges(spans)
    mean_values = _counts(mean)
    (line,) = ax.step(
        edges,
        _period_steps(mean_values, breaks),
        where="post",
        color=color,
        linewidth=1.8,
        label=f"{label} posterior mean" if label else "posterior mean",
    )
    colour = line.get_color()
    band = f"{level_text(confidence)} interval" + (f": {interval}" if interval else "")
    ax.fill_between(
        edges,
        _period_steps(_counts(lower), breaks),
        _period_steps(_counts(upper), breaks),
        step="post",
        color=colour,
        alpha=0.22,
        linewidth=0,
        label=f"{label} {band}" if label else band,
    )
    centres = [(a + b) / 2 for a, b in spans]
    if one_best is not None:
        best = _counts(one_best)
        ax.step(
            edges,
            _period_steps(best, breaks),
            where="post",
            color=colour,
            linestyle="--",
            linewidth=1.2,
            label=f"{label} 1-best" if label else "1-best",
        )
        ax.plot(centres, best, "s", color=colour, markersize=5.5, markerfacecolor="white")
    if gold is not None:
        ax.plot(
            centres,
            _counts(gold),
            "x",
            color="0.1",
            markersize=6,
            mew=1.5,
            label=f"{label} gold" if label else "gold",
        )
    _period_axis(ax, periods, spans)
    _period_legend(ax, own)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax


def _check_counts(periods: Sequence[str], **series: Any) -> None:
    """Every given series (None: not drawn) holds counts: finite and >= 0, or NaN (no
    value: a gap); ``lower`` may fall below 0 (a normal interval's end). An infinite value
    had failed inside matplotlib ("Axis limits cannot be NaN or Inf"), negative ones were
    drawn below the axis' fixed range. A negative within float noise of 0 (down to
    :data:`COUNT_NOISE` times the series' largest magnitude, or 1) is a count of 0: a
    posterior mean of -1e-12 had been refused."""
    for name, values in series.items():
        if values is None:
            continue
        numbers = _numbers(values)
        scale = max([1.0] + [abs(v) for v in numbers if math.isfinite(v)])
        floor = -math.inf if name == "lower" else -COUNT_NOISE * scale
        for k, v in enumerate(numbers):
            if math.isinf(v) or v < floor:
                bound = "" if name == "lower" else " >= 0"
                raise ValueError(
                    f"{name} must hold finite counts{bound} (or NaN for none), got {v} at "
                    f"period {periods[k]!r}"
                )


def _counts(values: Any) -> list[float]:
    """A series of counts to draw: a value below 0 (float noise, or a lower end) at 0."""
    return [0.0 if v < 0 else v for v in _numbers(values)]


def _period_spans(
    periods: Sequence[str], spans: Sequence[tuple[float, float]] | None
) -> list[tuple[float, float]]:
    """Each period's ``(start, end)`` on the x axis: ``spans`` checked, or one unit each."""
    if spans is None:
        return [(k - 0.5, k + 0.5) for k in range(len(periods))]
    out = []
    for k, span in enumerate(spans):
        pair = _numbers(span, f"spans[{k}]")
        if len(pair) != 2:
            raise ValueError(f"spans[{k}] must be a (start, end) pair, got {span!r}")
        out.append((pair[0], pair[1]))
    if len(out) != len(periods):
        raise ValueError(f"spans has {len(out)} values where periods has {len(periods)}")
    for k, (a, b) in enumerate(out):
        if not a < b:
            raise ValueError(f"spans[{k}] = ({a}, {b}): a period must end after it starts")
        if k and a < out[k - 1][1]:
            raise ValueError(
                f"spans[{k}] starts at {a}, before spans[{k - 1}] ends at {out[k - 1][1]}: "
                "periods must be in time order and not overlap"
            )
    return out


def _span_edges(spans: list[tuple[float, float]]) -> tuple[list[float], list[int]]:
    """Step edges for ``spans`` and the periods after which a gap opens.

    Touching periods share an edge; a gap ends the run with the previous period's
    end and a NaN, which breaks the lines and the band (nothing is drawn there).
    """
    edges: list[float] = []
    breaks: list[int] = []
    for k, (a, _) in enumerate(spans):
        if k and a > spans[k - 1][1]:
            edges += [spans[k - 1][1], math.nan]
            breaks.append(k - 1)
        edges.append(a)
    edges.append(spans[-1][1])
    return edges, breaks


def _period_steps(values: list[float], breaks: Sequence[int] = ()) -> list[float]:
    """Values at the edges of :func:`_span_edges` for ``step(where="post")``.

    Each value starts its period; before a gap the value is repeated up to its
    period's end and a NaN breaks the line, and the last value ends the last period.
    """
    out: list[float] = []
    gaps = set(breaks)
    for k, v in enumerate(values):
        out.append(v)
        if k in gaps:
            out += [v, math.nan]
    return out + values[-1:]


def _period_axis(ax: Axes, periods: Sequence[str], spans: list[tuple[float, float]]) -> None:
    """Period names as ticks, y from just below 0 to above everything drawn."""
    centres = [(a + b) / 2 for a, b in spans]
    # About 16 labels at most: a period is labelled when its centre lies at least
    # `every` (whole widths of the narrowest period) past the last label, so evenly
    # spaced periods get every k-th label and, on a to-scale axis, a cluster of
    # periods shares a few labels instead of printing them over each other.
    width = min(b - a for a, b in spans)
    every = max(1, int((spans[-1][1] - spans[0][0]) / width) // 16) * width
    shown: list[int] = []
    for k, c in enumerate(centres):
        if not shown or c - centres[shown[-1]] >= every - 1e-9 * width:
            shown.append(k)
    ax.set_xticks(
        [centres[k] for k in shown], _literals([periods[k] for k in shown]), rotation=45, fontsize=7
    )
    ax.set_xlim(spans[0][0], spans[-1][1])
    # NaNs in the steps only mark gaps between periods.
    top = max([1.0] + [v for line in ax.lines for v in line.get_ydata() if not math.isnan(v)])
    for band in ax.collections:
        top = max([top] + [v for path in band.get_paths() for v in path.vertices[:, 1]])
    ax.set_ylim(-0.04 * top, 1.15 * top)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("documents")


#: The gid of the legend below a figure ``posterior_time_series`` made: a second call on
#: its ``ax`` finds it and names both series in it.
LEGEND_BELOW = "calib_metrics: time series legend below"


def _period_legend(ax: Axes, own: bool) -> None:
    """Below the plot in a figure of the function's own (``own``, or made by an earlier
    call): inside, it had covered the first periods' counts, the 15% above the data
    holding no more than a row of it. Inside ``ax`` on a caller's figure, theirs to lay
    out (a legend below had fallen off a plain figure's canvas)."""
    fig = ax.figure
    ours = [legend for legend in fig.legends if legend.get_gid() == LEGEND_BELOW]
    if not (own or ours):
        ax.legend(fontsize=7)
        return
    for legend in ours:  # a second call's legend names both series
        legend.remove()
    handles, labels = ax.get_legend_handles_labels()
    _legend_that_fits(fig, handles, labels).set_gid(LEGEND_BELOW)


def _legend_that_fits(fig: Figure, handles: list[Any], labels: list[str]) -> Legend:
    """The legend below the plot in as many columns, up to 4, as fit the figure's width:
    four columns of two series' entries had run past both sides of the figure (cut off by
    a plain ``savefig``). Where one column is still too wide, its longest entries are cut
    in their middles until it fits: 60 wide letters ("W" * 60) had passed both edges."""
    ncols = min(4, len(labels))
    legend = _legend_below(fig, handles, labels, ncols)
    while ncols > 1 and _too_wide(legend):
        legend.remove()
        ncols -= 1
        legend = _legend_below(fig, handles, labels, ncols)
    texts = [label.replace(r"\$", "$") for label in labels]  # cut as shown, escaped again
    room = max(len(text) for text in texts)
    while _too_wide(legend) and room > _LEAST_ROOM:
        # As the widest entry narrows, about in proportion, then a character at a time.
        ratio = fig.bbox.width / legend.get_window_extent().width
        room = max(_LEAST_ROOM, min(room - 1, int(room * ratio)))
        legend.remove()
        legend = _legend_below(fig, handles, [_dollars(cut_middle(t, room)) for t in texts], 1)
    return legend


#: The fewest characters :func:`_legend_that_fits` cuts an entry to (a figure too narrow
#: for them keeps its legend wider).
_LEAST_ROOM = 20


def _legend_below(fig: Figure, handles: list[Any], labels: list[str], ncols: int) -> Legend:
    return fig.legend(handles, labels, loc="outside lower center", ncols=ncols, fontsize=7)


def _too_wide(legend: Legend) -> bool:
    return legend.get_window_extent().width > legend.figure.bbox.width
