"""The reliability diagram: each bin's mean probability against its observed frequency,
with error bars, the diagonal, the count of pairs and optionally the smooth curve; a
further call on the same axes overlays a second model.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import is_color_like
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.transforms import ScaledTranslation, Transform

from calib_metrics.functional.binning import Bins, check_bins
from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.functional.errors import stacklevel_outside
from calib_metrics.functional.intervals import (
    IntervalKind,
    effective_samples,
    interval_kind,
    normal_quantile,
)
from calib_metrics.functional.smooth import SmoothCurve
from calib_metrics.plot._arguments import _axes, _numbers
from calib_metrics.plot._counts import (
    DIAGONAL,
    _bin_spans,
    _count_axis,
    _count_bars,
    _more_count_bars,
)
from calib_metrics.plot._legend_place import BINS, place_legend_when_drawn
from calib_metrics.plot._probability_axis import _pick_scale, _ProbabilityAxis
from calib_metrics.plot._smooth import _draw_smooth
from calib_metrics.plot._text import (
    _interval_settings,
    _level,
    _results_norm,
    describe,
    interval_label,
    literal,
)
from calib_metrics.plot._whole_marks import draw_markers_whole
from calib_metrics.wording import count_text, counted

# The longest title line that a diagram's width holds at its 8.5 pt (a diagram of 4.6
# in, or a panel of a figure four diagrams wide): the interval's heading beside the bins'
# count had run into the next panel's title ("..., percentile · 479 bins · N=230,208").
_TITLE_CHARS = 62


def _heading_lines(named: list[str], size: str) -> list[str]:
    """The title's interval heading (if any) and the bins' count: one line where it fits,
    else each on its own.

    Example:
        >>> _heading_lines(["95% interval: debiased pair bootstrap"], "10 bins · N=2,000")
        ['95% interval: debiased pair bootstrap · 10 bins · N=2,000']
        >>> _heading_lines(["95% interval: debiased group bootstrap, percentile"],
        ...                "479 bins · N=230,208")
        ['95% interval: debiased group bootstrap, percentile', '479 bins · N=230,208']
    """
    joined = " · ".join([*named, size])
    return [joined] if len(joined) <= _TITLE_CHARS else [*named, size]


def reliability_diagram(
    result: CalibrationResult,
    ax: Axes | None = None,
    *,
    title: str | None = None,
    label: str | None = None,
    color: str = "C0",
    confidence: float | None = None,
    interval: str | None = None,
    debias: bool | None = None,
    xscale: str = "auto",
    smooth: SmoothCurve | None = None,
    norm: str | None = None,
    logit_range: tuple[float, float] | None = None,
) -> tuple[Figure, Axes]:
    """The paper's calibration curve: (q̂ᵢ, p̂ᵢ) per bin with ±z·se bars (z from
    ``confidence``: 1.96 at 0.95; se from each bin's effective sample size, as the
    debiased estimator counts it), over bars counting the pairs (a shade off the style's
    background, toward its ``text.color``: grey in the default style).

    The diagonal marks perfect calibration: points above it are underconfident
    (q < p), below it overconfident. The bars count the pairs in each of 20 equal
    slices of the x axis, on the right-hand axis (log-scaled when the counts span two
    decades or more): mass piled near 0 and 1 means sharp predictions. The result keeps
    bins, not pairs, so a bin's pairs are counted in the slice of its mean q̂: a bar is
    the pairs of the bins whose points it holds (uniform q in bins of 55 pairs draws bars
    of 110–165 around 150, and one bin is one bar). Uniform bins (``binning="uniform"``,
    up to 200 of them) are a bar each, on their own edges; those that an end of a logit
    axis cuts to less than its end slice (a bin at q̂ = 0) count in one bar on that slice.
    The title gives the error with its interval (after ``label``, when given), and the
    interval's level and kind (:func:`interval_label` of ``confidence``, ``interval`` and
    ``debias``: the settings that made ``result``, which the results of
    :func:`~calib_metrics.functional.calibration_error_ci`, the bootstraps and
    :func:`~calib_metrics.functional.compare_calibration` carry with the interval's form,
    and which a result made otherwise needs passed; neither where ``result`` has no
    interval).

    Called again on the same ``ax`` for a second model, it draws that model over the
    first, in ``color``: its bins (and smooth curve), and its pairs as bars in its colour
    on the same count axis (only on the very axes of a diagram: a neighbouring subplot,
    even of ``sharex=True``, or an ``ax`` emptied by ``ax.clear()`` gets a diagram of its
    own). The diagonal, the x axis (``xscale`` is not used) and the
    title stay the first call's: bins past the ends of the first model's logit axis are
    drawn at them, said in their legend entry and by a UserWarning (draw the model of the
    most extreme predictions first); the model's legend entry names its error (``"model b:
    CalibErr …"``), since the title holds the first model's, and the title's interval
    names both: a model whose interval differs from the one the title names (another
    level, kind or form) is a ValueError, as :func:`per_label_errors` refuses results of
    different intervals (a 90% interval had been drawn under a 95% title, its bars at
    ±1.96 se), and so is a model of another norm than the title's error. Give each call a
    ``label``.
    The legend of several models sits below the diagram in a figure of constrained layout
    (inside, it hid their bins), and a figure holding only this diagram (a new one) grows
    by it; in a figure of another layout it stays inside the diagram. A legend inside sits
    at the upper left unless it hides the bins' points, the smooth curve, the count bars
    or the diagonal there and another of matplotlib's places hides clearly less, chosen
    each time the figure is drawn (as laid out then); ``ax.get_legend().set_loc(...)``
    after the call (or dragging it) places it yourself.

    Args:
        result: what :func:`~calib_metrics.functional.calibration_error_ci` returns.
        ax: axes to draw on (default: a new figure).
        title: first line of the title (not used on a diagram already drawn on ``ax``).
        label: the model's name: the legend entry of its bins, and before its error in
            the title.
        color: colour of the bins (and of the smooth curve).
        confidence, interval, debias: the settings behind ``result``'s interval, for a
            result that does not carry them (one made by hand); those left None are
            0.95, no kind named, not debiased. A result that carries them
            (:func:`~calib_metrics.functional.intervals.interval_kind`) names its own,
            and a setting given that differs from its own is a ValueError.
        xscale: ``"linear"``, ``"logit"`` (the x axis in log-odds, which spreads the
            ends; y stays linear), or
            ``"auto"``: logit when more than half of the pairs lie in bins whose mean is
            within 0.05 of 0 or 1, and the title says so.
        smooth: a :class:`~calib_metrics.functional.smooth.SmoothCurve` from
            :func:`~calib_metrics.functional.smooth_reliability_curve` on the same pairs,
            drawn with its bootstrap band (whose legend names the band's own level).
        norm: ``result``'s norm, named in the title unless it is l2: for a result that
            does not carry it (one made by hand; default: the diagram's drawn on ``ax``,
            else l2). A result that carries it
            (:func:`~calib_metrics.functional.intervals.drawn_norm`) names its own, and a
            ``norm`` given that differs is a ValueError.
        logit_range: the ends (ε, 1 − ε) of a logit x axis, with 1e-12 ≤ ε < 0.5, to give
            diagrams side by side one range (default: a power of ten below every bin
            mean's distance to 0 and to 1, each diagram its own); bins beyond it are drawn
            at its ends. Not used on a linear axis, nor by a call that overlays a model.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.rand(2000, generator=torch.Generator().manual_seed(1))
        >>> r = calibration_error_ci(p, (p > 0.5).float(), bin_size=200, n_samples=100)
        >>> fig, ax = reliability_diagram(r)
        >>> ax.get_xlabel()
        'predicted probability q̂ (bin mean)'
        >>> ax.get_title().splitlines()[1]
        '95% interval: debiased pair bootstrap · 10 bins · N=2,000'
    """
    if not isinstance(result, CalibrationResult):
        raise ValueError(
            "result must be a CalibrationResult (what calibration_error_ci or "
            f"CalibrationError.compute_result returns), got {type(result).__name__}"
        )
    _refuse_pooled_classes(result.bins)
    drawn = _drawn_interval(ax) if isinstance(ax, Axes) else None
    norm = _results_norm([result], norm, _drawn_norm(ax) if isinstance(ax, Axes) else None)
    kind = _interval_settings([result], confidence, interval, debias, drawn)
    confidence = _level(kind.confidence)
    heading = interval_label(*kind)
    title, label = literal(title), literal(label)
    if smooth is not None and not isinstance(smooth, SmoothCurve):
        raise ValueError(f"smooth must be a SmoothCurve, got {type(smooth).__name__}")
    if not is_color_like(color):  # matplotlib's own refusal came with the diagonal drawn
        raise ValueError(f"color must be a matplotlib colour, got {color!r}")
    bins = result.bins
    q, p, n, samples = _bin_marks(bins)
    scale, note = _pick_scale(xscale, q, n)
    ends = _logit_range(logit_range)
    fig, ax = _axes(ax, (4.6, 4.6))
    counts = _count_axis(ax)  # None, unless a diagram is drawn there already
    overlay = counts is not None
    axis = _ProbabilityAxis(scale, q, ends) if counts is None else _ProbabilityAxis.of(ax)
    if counts is None:
        t = axis.grid()
        (diagonal,) = ax.plot(t, t, color="0.55", linestyle="--", linewidth=1,
                              label="perfect calibration", gid=DIAGONAL)  # fmt: skip
    if smooth is not None:  # a model's curve and band are named by its label, if any
        _draw_smooth(ax, smooth, axis, color, label)
    z = normal_quantile(confidence)
    entry = label or f"bins (±{z:.2f} se)"
    if counts is not None:  # the title holds the first model's error: the legend, this one's
        entry = f"{entry}: {describe(result, norm)}"
        entry += _past_the_ends(axis, _ProbabilityAxis(axis.scale, q), q, n, label)
    _draw_bins(ax, axis, (q, p, samples), z, color, entry)
    if counts is None:
        axis.apply(ax)
        counts = _count_bars(ax, axis, q, n, _bin_spans(bins))
        ax.set_xlabel("predicted probability q̂ (bin mean)")
        ax.set_ylabel("empirical frequency p̂")
        lines = [title] if title else []
        error = describe(result, norm)
        lines += [f"{label}: {error}" if label else error]
        # The level names an interval: none to name where the error has none (NaN ends,
        # "no interval" above), whose second line had named "95% interval" all the same.
        ends = (result.lower.item(), result.upper.item())
        named = [] if any(math.isnan(end) for end in ends) else [heading]
        # What a further model's interval must be, to be named by this title: the kind a
        # result carries, or of one made by hand what the title names (its level, and the
        # settings given), the rest left open (None) for an overlay to fill.
        if named:
            own = interval_kind(result) is not None
            bound = kind if own else IntervalKind(kind.confidence, interval, debias, None)
            setattr(diagonal, NAMED_INTERVAL, bound)
        setattr(diagonal, NAMED_NORM, norm)
        size = " · ".join([counted(len(q), "bin"), f"N={count_text(sum(n), grouped=True)}"])
        lines += _heading_lines(named, size)
        ax.set_title("\n".join(lines + ([note] if note else [])), fontsize=8.5)
    else:
        _more_count_bars(counts, axis, q, n, color, _bin_spans(bins))
    handles = dict(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
    handles.setdefault(counts.containers[0].get_label(), counts.containers[0])
    # Below the diagram only where constrained layout makes room for it: elsewhere it
    # fell off the canvas of a user's plain figure (review R5), and stays inside.
    if overlay and isinstance(ax.figure.get_layout_engine(), ConstrainedLayoutEngine):
        _legend_below(ax, list(handles.values()))
    else:
        legend = ax.legend(
            handles=list(handles.values()), loc="upper left", fontsize=7.5, framealpha=0.85
        )
        place_legend_when_drawn(ax, legend)
    return fig, ax


#: The attribute of a diagram's diagonal that holds the interval its title names
#: (an :class:`~calib_metrics.functional.intervals.IntervalKind`).
NAMED_INTERVAL = "calib_metrics_named_interval"


#: The attribute of a diagram's diagonal that holds the norm its title's error is of.
NAMED_NORM = "calib_metrics_named_norm"


def _drawn_norm(ax: Axes) -> str | None:
    """The norm of the error that the title of a diagram already on ``ax`` names, or None
    (no diagram there)."""
    diagonals = [line for line in ax.lines if line.get_gid() == DIAGONAL]
    return getattr(diagonals[0], NAMED_NORM, None) if diagonals else None


def _drawn_interval(ax: Axes) -> IntervalKind | None:
    """The interval that the title of a diagram already on ``ax`` names, or None (no
    diagram there, or its title names no interval)."""
    diagonals = [line for line in ax.lines if line.get_gid() == DIAGONAL]
    return getattr(diagonals[0], NAMED_INTERVAL, None) if diagonals else None


#: The nearest a logit axis's end may come to 0 or 1: nearer, matplotlib's log-odds
#: transform overflows (1e-300 had drawn with an overflow warning).
LOGIT_FLOOR = 1e-12


def _logit_range(ends: tuple[float, float] | None) -> tuple[float, float] | None:
    """``logit_range`` checked: two probabilities ε < 0.5 < 1 − ε' (either order refused),
    neither nearer 0 or 1 than :data:`LOGIT_FLOOR`. A bool (Python's, NumPy's, or a
    one-element bool tensor or array) or a string is refused by name: ``True`` had read as
    "1.0" in the message, and ``"0.1"`` had been drawn.

    Example:
        >>> _logit_range((1e-6, 1 - 1e-6)), _logit_range(None)
        ((1e-06, 0.999999), None)
        >>> _logit_range((1e-12, 1 - 1e-12))  # the floor, at both ends
        (1e-12, 0.999999999999)
        >>> _logit_range((0.9, 0.1))
        Traceback (most recent call last):
        ...
        ValueError: logit_range must be (low, high) with 0 < low < 0.5 < high < 1, got (0.9, 0.1)
        >>> _logit_range((True, 0.9))
        Traceback (most recent call last):
        ...
        ValueError: logit_range must hold two probabilities, got True (a bool)
        >>> import torch
        >>> _logit_range((torch.tensor(False), 0.9))
        Traceback (most recent call last):
        ...
        ValueError: logit_range must hold two probabilities, got False (a bool)
    """
    if ends is None:
        return None
    values = _numbers(ends, "logit_range")
    for end in ends:
        flag = _bool_value(end)
        if flag is not None:
            raise ValueError(f"logit_range must hold two probabilities, got {flag} (a bool)")
        if isinstance(end, (str, bytes)):
            raise ValueError(f"logit_range must hold two probabilities, got {end!r} (a string)")
    low, high = values if len(values) == 2 else (math.nan, math.nan)
    if not 0 < low < 0.5 < high < 1:
        raise ValueError(
            f"logit_range must be (low, high) with 0 < low < 0.5 < high < 1, got {tuple(values)}"
        )
    # 1 − (1 − 1e-12) is 9.99978e-13 in floats: an end written at the floor is at it.
    if min(low, 1 - high) < LOGIT_FLOOR * (1 - 1e-4):
        raise ValueError(
            f"logit_range's ends must be at least {LOGIT_FLOOR:g} from 0 and from 1, got "
            f"{tuple(values)}"
        )
    return low, high


def _bool_value(value: object) -> bool | None:
    """``value`` as a Python bool where it is one: Python's or NumPy's, or a one-element
    bool tensor or array (a 0-dim one had been read as the number 1.0 or 0.0, and
    refused for its range); else None.

    Example:
        >>> import torch
        >>> _bool_value(np.bool_(True)), _bool_value(torch.tensor([False])), _bool_value(1.0)
        (True, False, None)
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    is_tensor = isinstance(value, torch.Tensor) and value.dtype == torch.bool
    is_array = isinstance(value, np.ndarray) and value.dtype == np.bool_
    flags = value.reshape(-1).tolist() if is_tensor or is_array else []
    return bool(flags[0]) if len(flags) == 1 else None


#: The gid of an overlay's legend, drawn below the diagram: a further model's call finds
#: it, to grow the figure by what its own legend adds only.
LEGEND_BELOW = "calib_metrics: legend below"


def _legend_below(ax: Axes, handles: list) -> None:
    """Several models' legend, below the diagram: inside it, their eight entries had hidden
    the second model's bins, and their width had run past the figure's right edge.

    Only in a figure laid out by matplotlib's constrained layout (a new one, as the first
    call makes it): one that holds only this diagram grows by the legend's height, so that
    the plot keeps its size; another shrinks its plots to make room.
    """
    fig = ax.figure
    old = ax.get_legend()
    before = old.get_window_extent().height if old and old.get_gid() == LEGEND_BELOW else 0.0
    anchor, transform = _below_x_axis(ax)
    legend = ax.legend(handles=handles, loc="upper center", bbox_to_anchor=anchor,
                       bbox_transform=transform, fontsize=7, framealpha=0.85)  # fmt: skip
    legend.set_gid(LEGEND_BELOW)
    # A top-level figure only: a SubFigure has no height of its own to grow.
    alone = isinstance(fig, Figure) and len(fig.axes) == 2
    alone = alone and all(a is ax or _count_axis(ax) is a for a in fig.axes)
    if alone:
        grow = (legend.get_window_extent().height - before) / fig.dpi
        fig.set_figheight(fig.get_figheight() + grow)


#: The gap between the x axis' labels and the legend below, in points.
BELOW_PAD = 6.0


def _below_x_axis(ax: Axes) -> tuple[tuple[float, float], Transform]:
    """The point the legend below hangs from, and its transform: ``BELOW_PAD`` points
    under the x axis' tick labels and label. That depth is a length, not a share of the
    axes, so that it holds as the layout resizes them: measured as a share of the axes at
    the call (0.15 of their height), the share had been taken before constrained layout
    shrank a panel of subplots, or after a third model's legend grew the figure, and the
    legend touched or hid the label (at 14 pt, and at 16 pt with four models).
    """
    labels = ax.xaxis.get_tightbbox()  # text extents from the figure's renderer: no layout
    depth = ax.bbox.y0 - labels.y0 if labels is not None else 0.0
    fig = ax.figure
    drop = depth / fig.dpi + BELOW_PAD / 72
    return (0.5, 0.0), ax.transAxes + ScaledTranslation(0, -drop, fig.dpi_scale_trans)


def _past_the_ends(
    axis: _ProbabilityAxis, own: _ProbabilityAxis, q: list[float], n: list[float], label: str | None
) -> str:
    """Warn of a further model's bins that the first model's logit axis cannot show
    (drawn at its ends, their pairs in its end slices: a model overconfident at 1e-6 had
    read as about right at 0.01), and return the legend entry's note of them. Only the
    bins that the first axis draws further from their q̂ than this model's own diagram
    (``own``) would count: a bin at q̂ = 0 or 1 lies at an end of either, and had been
    warned of on a first axis wider than its own."""
    moved = [(qi, ni) for qi, ni in zip(q, n) if _moved(qi, axis, own)]
    if not moved:
        return ""
    pairs = counted(sum(ni for _, ni in moved), "pair", grouped=True)
    name = f"model {label!r}" if label else "this model"
    lie = "lies" if len(moved) == 1 else "lie"
    warnings.warn(
        f"{name}: {len(moved)} of its {counted(len(q), 'bin')} ({pairs}) {lie} past the ends "
        f"({axis.lo:g}, {axis.hi:g}) of the x axis that the first model drew on ax, and are "
        "drawn at those ends, their pairs in its end bars: draw the model with the most "
        "extreme predictions first",
        UserWarning,
        stacklevel=stacklevel_outside(),
    )
    return f" ({counted(len(moved), 'bin')} at the x axis' ends)"


def _moved(q: float, axis: _ProbabilityAxis, own: _ProbabilityAxis) -> bool:
    """Whether ``axis`` draws a bin at ``q`` further from it than the axis ``own`` would.

    Example:
        >>> first, own = _ProbabilityAxis("logit", [1e-4]), _ProbabilityAxis("logit", [0.3])
        >>> _moved(1e-6, own, first), _moved(0.0, first, own), _moved(0.0, own, first)
        (True, False, True)
    """
    (drawn,), (shown,) = axis.clip([q]), own.clip([q])
    return abs(drawn - q) > abs(shown - q)


def _refuse_pooled_classes(bins: Bins) -> None:
    """Refuse the bins of a classwise average, every class's sorted together by mean
    prediction: one diagram of them had drawn class 0's bin at q̂ = 0.3 beside class 2's,
    as if they were one model's."""
    classes = getattr(bins, "classes", 1)
    if classes > 1:
        raise ValueError(
            f"result averages {classes} classes (mode='classwise'), whose bins one diagram "
            "would mix: draw one panel per class with calib_metrics.plot_panels."
            "classwise_panels (each class's calibration_error_ci), or "
            "CalibrationError(mode='classwise').plot()"
        )


def _bin_marks(bins: Bins) -> tuple[list[float], list[float], list[float], list[float]]:
    """Each bin's q̂, p̂, pair count and effective sample size, checked for drawing: means
    and frequencies in [0, 1], counts finite and >= 0 (:func:`check_bins`; a mean outside
    [0, 1] had failed with a TypeError about complex numbers). A bin of 0 pairs weighs
    nothing and has no frequency to draw: it is left out (``ci_from_bins`` keeps one that
    it is given, which had then failed to draw).

    Example:
        >>> import torch
        >>> t = lambda v: torch.tensor(v, dtype=torch.float64)
        >>> _bin_marks(Bins(t([0.3, 0.6]), t([0.2, 0.7]), t([0.0, 10.0])))
        ([0.6], [0.7], [10.0], [10.0])
    """
    bins = check_bins(bins)
    # n_eff of all the bins: a tie group cut by a boundary counts across its bins.
    columns = [_numbers(v) for v in (*bins, effective_samples(bins))]
    kept = [row for row in zip(*columns, strict=True) if row[2] > 0]
    q, p, n, samples = (list(column) for column in zip(*kept, strict=True))
    return q, p, n, samples


def _draw_bins(
    ax: Axes, axis: _ProbabilityAxis, bins: tuple[list, list, list], z: float, color, label: str
) -> None:
    """(q̂ᵢ, p̂ᵢ) per bin with ±z·se bars (clipped to [0, 1]), thinner for many bins,
    the markers drawn whole across the axes' edges (bins at p̂ = 0 or 1, or at the x axis'
    ends) and nothing past them (:func:`draw_markers_whole`).

    se = √(p̂(1 − p̂)/n_eff) with each bin's effective sample size (``bins`` is (q̂, p̂,
    n_eff)): the variance of p̂ that the debiased estimator subtracts, so correlated
    labels (``groups=``) widen a bar and a tie group cut by a boundary counts at its share.
    """
    q, p, samples = bins
    se = [z * (pi * (1 - pi) / ni) ** 0.5 for pi, ni in zip(p, samples)]
    many = len(q) > 60  # thinner marks, so that hundreds of bins do not merge
    marks = ax.errorbar(
        axis.clip(q),
        p,
        yerr=[
            [pi - max(pi - e, 0.0) for pi, e in zip(p, se)],
            [min(pi + e, 1.0) - pi for pi, e in zip(p, se)],
        ],
        fmt="o-",
        color=color,
        markersize=2 if many else 3,
        capsize=0 if many else 2,
        linewidth=0.6 if many else 1,
        elinewidth=0.5 if many else 1,
        label=label,
    )
    marks.lines[0].set_gid(BINS)  # what a legend inside the diagram should not hide
    draw_markers_whole(ax, marks)
