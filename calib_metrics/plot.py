r"""Matplotlib figures: reliability diagrams, per-label errors, curves and time series.

Every function draws on a given ``ax`` or on a new ``matplotlib.figure.Figure`` (never
pyplot's global state, so nothing leaks between calls or threads) and returns
``(fig, ax)``. This module is imported lazily: the metric works without matplotlib.

Every text a function takes from its caller (titles, labels, legend entries, model and
label names, periods) is drawn as given (:func:`literal`): a ``$`` is a dollar sign, never
the start of matplotlib's mathtext, since file and label names hold them; and a ``\$``
shows its backslash too (matplotlib alone would draw it as an escaped ``$``). For mathtext
on purpose, set the text on the returned axes after drawing::

    fig, ax = reliability_diagram(result)
    ax.set_title(r"$\alpha$ = 0.1")

A figure that shows an interval names its level and kind (:func:`interval_label`), from
the settings the caller passes: nothing assumes 95%. Sizes and fonts are chosen so that
the figures stay legible as TensorBoard thumbnails (about 300 px wide).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter, NullLocator

from calib_metrics.functional.binning import Bins, check_bins
from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.functional.comparison import ComparisonResult
from calib_metrics.functional.errors import check_flag
from calib_metrics.functional.intervals import effective_samples, normal_quantile
from calib_metrics.functional.smooth import SmoothCurve
from calib_metrics.wording import count_text, counted, cut_middle, level_text, visible_controls

#: What each ``interval=`` setting of the library draws, as figures name it.
INTERVAL_KINDS = {
    "paper": "paper Algorithm 2",
    "pairs": "pair bootstrap",
    "groups": "group bootstrap",
}
#: The calibration error's norms (``norm=``), as figures name them.
NORMS = ("l2", "l1", "max")
#: ``xscale="auto"`` draws logit axes when more than END_SHARE of the pairs lie in bins
#: whose mean is within END of 0 or 1.
END, END_SHARE = 0.05, 0.5
#: The reliability diagram counts pairs in this many equal slices of its x axis.
N_SLICES = 20
#: The label of that count axis, by which a further call on the same axes finds it.
COUNT_AXIS = "calib_metrics: pairs per slice"
#: The gid of a diagram's diagonal: the mark of an ``ax`` holding a diagram (``ax.clear()``
#: removes it with the line), so that a further call draws over it as a second model.
DIAGONAL = "calib_metrics: perfect calibration"
#: How far below 0, relative to a series' largest magnitude (or 1), a count of
#: ``posterior_time_series`` may fall and still be float noise around 0 (drawn at 0).
COUNT_NOISE = 1e-9
#: Longest label name drawn whole as a tick; longer ones lose their middle to "…" (one
#: 300-character name had widened the per-label chart until its bars were unreadable).
MAX_TICK_CHARS = 60


def literal(text: str | None) -> str | None:
    r"""``text`` as matplotlib draws it verbatim: every ``$`` escaped, so that it never
    starts mathtext (a file ``m$\frac$.csv`` had failed to draw, ``p$x^2$.csv`` came out
    as ``px².csv``). Matplotlib turns each ``\$`` back into ``$`` when a text holds no
    unescaped ``$``, which is so after this, whatever ``text`` held. A character no font
    draws (a control) is written as its escape (:func:`~calib_metrics.wording.visible_controls`).
    None stays None.

    Example:
        >>> print(literal("p$x^2$.csv"), literal(None))
        p\$x^2\$.csv None
    """
    return None if text is None else visible_controls(str(text)).replace("$", r"\$")


def _literals(texts: Sequence[Any]) -> list[str]:
    return [literal(str(t)) for t in texts]


def _tick_labels(names: Sequence[Any]) -> list[str]:
    """Label names as ticks and panel titles show them: at most :data:`MAX_TICK_CHARS`
    characters, the middle of a longer one replaced by "…" (its start and end tell labels
    apart), drawn as written (:func:`literal`). Names that would still read alike (they
    differ only in the middle cut out) are numbered ``#1``, ``#2``, ... in their order.

    Example:
        >>> _tick_labels(["NOUN"]), [len(t) for t in _tick_labels(["x" * 300])]
        (['NOUN'], [60])
        >>> [t[-4:] for t in _tick_labels(["a" * 100 + m + "a" * 100 for m in "XY"])]
        ['a #1', 'a #2']
    """
    names = [str(name) for name in names]
    short = [_shortened(name) for name in names]
    alike: dict[str, list[str]] = {}  # each shortening -> the names it stands for
    for name, text in zip(names, short, strict=True):
        if name not in alike.setdefault(text, []):
            alike[text].append(name)
    ticks = []
    for name, text in zip(names, short, strict=True):
        if len(alike[text]) > 1:
            text = _shortened(name, f" #{alike[text].index(name) + 1}")
        ticks.append(literal(text))
    return ticks


def _shortened(name: str, suffix: str = "") -> str:
    """``name`` and ``suffix`` in at most :data:`MAX_TICK_CHARS` characters, the middle
    of ``name`` cut to "…" where they do not fit."""
    return cut_middle(name, MAX_TICK_CHARS - len(suffix)) + suffix


def _axes(ax: Axes | None, size: tuple[float, float] = (5.0, 5.0)) -> tuple[Figure, Axes]:
    if ax is not None:
        _check_ax(ax)
        return ax.figure, ax
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def _check_ax(ax: object) -> None:
    """``ax`` is one matplotlib Axes: the array that ``fig.subplots(1, 2)`` returns had
    failed deep inside with an AttributeError.

    Example:
        >>> from matplotlib.figure import Figure
        >>> _check_ax(Figure().subplots(1, 2))
        Traceback (most recent call last):
        ...
        ValueError: ax must be one matplotlib Axes, got ndarray (an array of axes, ...
    """
    if isinstance(ax, Axes):
        return
    array = hasattr(ax, "shape") and hasattr(ax, "flat")
    hint = " (an array of axes, as fig.subplots(1, 2) returns: pass one of them, ax=axes[0])"
    raise ValueError(f"ax must be one matplotlib Axes, got {type(ax).__name__}{hint * array}")


def _check_lengths(against: str, length: int, **series: Any) -> None:
    """Every given series (None: not drawn) has one value per entry of ``against``."""
    for name, values in series.items():
        count = length if values is None else len(_numbers(values))
        if count != length:
            raise ValueError(f"{name} has {count} values where {against} has {length}")


def _numbers(x: Any) -> list[float]:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().reshape(-1).tolist()
    return [float(v) for v in x]


def describe(result: CalibrationResult, norm: str = "l2") -> str:
    """``CalibErr 0.0123 [0.0101, 0.0145]``: the error and its interval, for titles; ``no
    interval`` where its ends are NaN (too few pairs or groups to resample). A ``norm``
    other than the default l2 is named: ``CalibErr (max) 0.3177 [...]`` (a max-norm error
    had read as the l2 one).

    Example:
        >>> import torch
        >>> from calib_metrics.functional import Bins
        >>> t = torch.tensor
        >>> empty = Bins(t([]), t([]), t([]))
        >>> describe(CalibrationResult(t(0.0123), t(0.013), t(0.001), t(0.011), t(0.015), empty))
        'CalibErr 0.0123 [0.0110, 0.0150]'
        >>> nan = t(float("nan"))
        >>> describe(CalibrationResult(t(0.0123), nan, nan, nan, nan, empty), norm="max")
        'CalibErr (max) 0.0123, no interval'
    """
    name = error_name(norm)
    lower, upper = result.lower.item(), result.upper.item()
    if math.isnan(lower) or math.isnan(upper):
        return f"{name} {result.error.item():.4f}, no interval"
    return f"{name} {result.error.item():.4f} [{lower:.4f}, {upper:.4f}]"


def error_name(norm: str = "l2") -> str:
    """``CalibErr``, or ``CalibErr (max)`` for an error of another norm than l2: how
    figures name the error.

    Example:
        >>> error_name(), error_name("max")
        ('CalibErr', 'CalibErr (max)')
    """
    return f"CalibErr {_norm_note(norm)}".rstrip()


def _norm_note(norm: str) -> str:
    """``(max)`` or ``(l1)`` beside a calibration error; nothing for the default l2."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {list(NORMS)}, got {norm!r}")
    return "" if norm == "l2" else f"({norm})"


def interval_label(confidence: float, interval: str | None = None, debias: bool = False) -> str:
    """The interval's level and kind, as every figure names it.

    Args:
        confidence: the interval's coverage, in (0, 1).
        interval: ``"paper"``, ``"pairs"``, ``"groups"`` (the library's ``interval=``
            settings), or None when the kind is not known (only the level is named).
        debias: whether the interval is built around the debiased estimate.

    Example:
        >>> interval_label(0.95, "pairs", debias=True)
        '95% interval: debiased pair bootstrap'
        >>> interval_label(0.9, "paper")
        '90% interval: paper Algorithm 2'
        >>> interval_label(0.99, "groups")
        '99% interval: group bootstrap'
        >>> interval_label(0.8)
        '80% interval'
    """
    normal_quantile(confidence)
    if interval is not None and interval not in INTERVAL_KINDS:
        raise ValueError(
            f"interval must be one of {sorted(INTERVAL_KINDS)} or None, got {interval!r}"
        )
    check_flag("debias", debias)
    level = f"{level_text(confidence)} interval"
    if interval is None:
        return level
    kind = INTERVAL_KINDS[interval]
    if debias:
        kind = f"{kind}, debiased" if interval == "paper" else f"debiased {kind}"
    return f"{level}: {kind}"


def reliability_diagram(
    result: CalibrationResult,
    ax: Axes | None = None,
    *,
    title: str | None = None,
    label: str | None = None,
    color: str = "C0",
    confidence: float = 0.95,
    interval: str | None = None,
    debias: bool = False,
    xscale: str = "auto",
    smooth: SmoothCurve | None = None,
    norm: str = "l2",
) -> tuple[Figure, Axes]:
    """The paper's calibration curve: (q̂ᵢ, p̂ᵢ) per bin with ±z·se bars (z from
    ``confidence``: 1.96 at 0.95; se from each bin's effective sample size, as the
    debiased estimator counts it), over grey bars counting the pairs.

    The diagonal marks perfect calibration: points above it are underconfident
    (q < p), below it overconfident. The grey bars count the pairs in each of 20 equal
    slices of the x axis, on the right-hand axis (log-scaled when the counts span two
    decades or more): mass piled near 0 and 1 means sharp predictions. The result keeps
    bins, not pairs, so a bin's pairs are counted in the slice of its mean q̂: a bar is
    the pairs of the bins whose points it holds (uniform q in bins of 55 pairs draws bars
    of 110–165 around 150, and one bin is one bar). The title gives the
    error with its interval (after ``label``, when given), and the interval's level and
    kind (:func:`interval_label` of ``confidence``, ``interval`` and ``debias``: pass the
    settings that made ``result``).

    Called again on the same ``ax`` for a second model, it draws that model over the
    first, in ``color``: its bins (and smooth curve), and its pairs as bars in its colour
    on the same count axis (only on the very axes of a diagram: a neighbouring subplot,
    even of ``sharex=True``, or an ``ax`` emptied by ``ax.clear()`` gets a diagram of its
    own). The diagonal, the x axis (``xscale`` is not used) and the
    title stay the first call's; the model's legend entry names its error (``"model b:
    CalibErr …"``), since the title holds the first model's. Give each call a ``label``.

    Args:
        result: what :func:`~calib_metrics.functional.calibration_error_ci` returns.
        ax: axes to draw on (default: a new figure).
        title: first line of the title (not used on a diagram already drawn on ``ax``).
        label: the model's name: the legend entry of its bins, and before its error in
            the title.
        color: colour of the bins (and of the smooth curve).
        confidence, interval, debias: the settings behind ``result``'s interval.
        xscale: ``"linear"``, ``"logit"`` (the x axis in log-odds, which spreads the
            ends; y stays linear), or
            ``"auto"``: logit when more than half of the pairs lie in bins whose mean is
            within 0.05 of 0 or 1, and the title says so.
        smooth: a :class:`~calib_metrics.functional.smooth.SmoothCurve` from
            :func:`~calib_metrics.functional.smooth_reliability_curve` on the same pairs,
            drawn with its bootstrap band (whose legend names the band's own level).
        norm: ``result``'s norm, named in the title unless it is the default l2.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.rand(2000, generator=torch.Generator().manual_seed(1))
        >>> r = calibration_error_ci(p, (p > 0.5).float(), bin_size=200, n_samples=100)
        >>> fig, ax = reliability_diagram(r, interval="pairs", debias=True)
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
    heading = interval_label(confidence, interval, debias)
    title, label = literal(title), literal(label)
    if smooth is not None and not isinstance(smooth, SmoothCurve):
        raise ValueError(f"smooth must be a SmoothCurve, got {type(smooth).__name__}")
    bins = result.bins
    q, p, n, samples = _bin_marks(bins)
    scale, note = _pick_scale(xscale, q, n)
    fig, ax = _axes(ax, (4.6, 4.6))
    counts = _count_axis(ax)  # None, unless a diagram is drawn there already
    axis = _ProbabilityAxis(scale, q) if counts is None else _ProbabilityAxis.of(ax)
    if counts is None:
        t = axis.grid()
        ax.plot(t, t, color="0.55", linestyle="--", linewidth=1, label="perfect calibration",
                gid=DIAGONAL)  # fmt: skip
    if smooth is not None:  # a further model's curve and band are named by its label
        _draw_smooth(ax, smooth, axis, color, label if counts is not None else None)
    z = normal_quantile(confidence)
    entry = label or f"bins (±{z:.2f} se)"
    if counts is not None:  # the title holds the first model's error: the legend, this one's
        entry = f"{entry}: {describe(result, norm)}"
    _draw_bins(ax, axis, (q, p, samples), z, color, entry)
    if counts is None:
        axis.apply(ax)
        counts = _count_bars(ax, axis, q, n)
        ax.set_xlabel("predicted probability q̂ (bin mean)")
        ax.set_ylabel("empirical frequency p̂")
        lines = [title] if title else []
        error = describe(result, norm)
        lines += [f"{label}: {error}" if label else error]
        lines += [f"{heading} · {counted(len(q), 'bin')} · N={count_text(sum(n), grouped=True)}"]
        ax.set_title("\n".join(lines + ([note] if note else [])), fontsize=8.5)
    else:
        _more_count_bars(counts, axis, q, n, color)
    handles = dict(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
    handles.setdefault(counts.containers[0].get_label(), counts.containers[0])
    ax.legend(handles=list(handles.values()), loc="upper left", fontsize=7.5, framealpha=0.85)
    return fig, ax


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
    """(q̂ᵢ, p̂ᵢ) per bin with ±z·se bars (clipped to [0, 1]), thinner for many bins.

    se = √(p̂(1 − p̂)/n_eff) with each bin's effective sample size (``bins`` is (q̂, p̂,
    n_eff)): the variance of p̂ that the debiased estimator subtracts, so correlated
    labels (``groups=``) widen a bar and a tie group cut by a boundary counts at its share.
    """
    q, p, samples = bins
    se = [z * (pi * (1 - pi) / ni) ** 0.5 for pi, ni in zip(p, samples)]
    many = len(q) > 60  # thinner marks, so that hundreds of bins do not merge
    ax.errorbar(
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


def _pick_scale(xscale: str, q: list[float], n: list[float]) -> tuple[str, str]:
    """The scale to draw, and the title's note when ``"auto"`` picked logit."""
    if xscale not in ("linear", "logit", "auto"):
        raise ValueError(f"xscale must be 'linear', 'logit' or 'auto', got {xscale!r}")
    if xscale != "auto":
        return xscale, ""
    near = sum(ni for qi, ni in zip(q, n) if min(qi, 1 - qi) < END)
    share = near / max(sum(n), 1e-300)
    if share > END_SHARE:
        return "logit", f"logit axes (auto): {share:.0%} of pairs in bins within {END:g} of 0 or 1"
    return "linear", ""


class _ProbabilityAxis:
    """The x axis: [0, 1] drawn linearly, or logit over [ε, 1 − ε] with q clipped there.

    ε is a power of ten below every bin mean's distance to the nearer end (within
    [1e-6, 1e-2]), so the logit axis shows every bin. The y axis stays linear on [0, 1]:
    vertical gaps are the absolute gaps that the calibration error adds up.
    """

    def __init__(self, scale: str, values: list[float]) -> None:
        self.scale = scale
        self.lo, self.hi = 0.0, 1.0
        if scale == "logit":
            self.lo = _margin([v for v in values if 0 < v < 1])
            self.hi = 1 - _margin([1 - v for v in values if 0 < v < 1])

    @classmethod
    def of(cls, ax: Axes) -> _ProbabilityAxis:
        """The x axis a reliability diagram has already drawn on ``ax``."""
        axis = cls("linear", [])
        axis.scale = ax.get_xscale()
        axis.lo, axis.hi = ax.get_xlim()
        return axis

    def clip(self, values: list[float]) -> list[float]:
        return [min(max(v, self.lo), self.hi) for v in values]

    def _from_unit(self, u: float) -> float:
        """The probability at fraction ``u`` of the axis' width."""
        if self.scale == "linear":
            return u
        lo, hi = (math.log(v / (1 - v)) for v in (self.lo, self.hi))
        return 1 / (1 + math.exp(-(lo + u * (hi - lo))))

    def grid(self, points: int = 201) -> list[float]:
        return [self._from_unit(k / (points - 1)) for k in range(points)]

    def slices(self, count: int = N_SLICES) -> list[float]:
        """Edges of ``count`` slices of equal width on the drawn axis."""
        return [self._from_unit(k / count) for k in range(count + 1)]

    def apply(self, ax: Axes) -> None:
        if self.scale == "logit":
            ax.set_xscale("logit")
            low, high = _decades(self.lo), [1 - d for d in _decades(1 - self.hi)]
            ax.xaxis.set_major_locator(FixedLocator(sorted([*low, 0.5, *high])))
            ax.xaxis.set_major_formatter(FuncFormatter(_probability_tick))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(self.lo, self.hi)
        ax.set_ylim(0, 1)
        ax.set_box_aspect(1)


def _margin(distances: list[float]) -> float:
    """A power of ten below half the smallest distance to an end, within [1e-6, 1e-2]."""
    exponent = math.floor(math.log10(min(distances, default=0.01) / 2))
    return min(1e-2, max(1e-6, 10.0**exponent))


def _decades(margin: float) -> list[float]:
    """Ticks 0.1, 0.01, ... down to ``margin`` (every other one when more than three)."""
    decades = [10.0**-k for k in range(1, round(-math.log10(margin)) + 1)]
    return decades[1::2] if len(decades) > 3 else decades


def _probability_tick(value: float, _pos: int | None = None) -> str:
    """``0.001``, ``0.5``, ``0.999``; ``1e-05`` and ``1-1e-05`` past three decimals."""
    end = min(value, 1 - value)
    if end >= 1e-3 - 1e-12:
        return f"{value:.{max(1, -math.floor(math.log10(end) + 1e-9))}f}"
    small = f"{end:.0e}".replace("e-0", "e-")
    return small if value < 0.5 else f"1-{small}"


def _count_axis(ax: Axes) -> Axes | None:
    """The count axis of a reliability diagram already drawn on ``ax``, or None.

    It is ``ax``'s own twin (not any axis sharing x, which a neighbouring subplot of
    ``sharex=True`` does too), and ``ax`` still holds the diagram's diagonal: a count
    axis left by a diagram that ``ax.clear()`` removed is removed too, as the diagram
    drawn now brings its own.
    """
    twins = [
        other
        for other in ax.figure.axes
        if other is not ax
        and other.get_label() == COUNT_AXIS
        and ax._twinned_axes.joined(ax, other)  # twinx(), not sharex: no public test
    ]
    if any(line.get_gid() == DIAGONAL for line in ax.lines):
        return twins[0] if twins else None
    for stale in twins:
        stale.remove()
    return None


def _slice_counts(
    axis: _ProbabilityAxis, q: list[float], n: list[float]
) -> tuple[list[float], list[float]]:
    """The edges of the x axis' slices and the pairs in each (each bin's at its mean q̂)."""
    edges = axis.slices()
    heights = [0.0] * (len(edges) - 1)
    for qi, ni in zip(axis.clip(q), n):
        heights[min(max(bisect.bisect_right(edges, qi) - 1, 0), len(heights) - 1)] += ni
    return edges, heights


def _count_bars(ax: Axes, axis: _ProbabilityAxis, q: list[float], n: list[float]) -> Axes:
    """Pairs per slice of the x axis (each bin's at its mean q̂) as grey bars on a
    labelled right-hand axis.

    Returns that axis (its first bar container is the legend's entry).
    """
    edges, heights = _slice_counts(axis, q, n)
    counts = ax.twinx()
    counts.set_label(COUNT_AXIS)  # so that a second model's call finds it
    counts.set_box_aspect(ax.get_box_aspect())  # else the twin keeps the whole cell
    nonzero = [h for h in heights if h > 0] or [1.0]
    log = max(nonzero) >= 100 * min(nonzero)
    style = {"color": "0.85", "edgecolor": "0.65", "linewidth": 0.4}
    _slice_bars(counts, edges, heights, log=log, label=_count_entry(log), **style)
    _count_limits(counts, min(nonzero), max(nonzero), log)
    counts.set_ylabel("pairs" + (" (log scale)" if log else ""), color="0.35", fontsize=8)
    counts.yaxis.set_label_coords(1.13, 0.17)
    counts.yaxis.set_major_formatter(FuncFormatter(_count_tick))
    counts.tick_params(axis="y", colors="0.35", labelsize=7)
    ax.set_zorder(counts.get_zorder() + 1)
    ax.patch.set_visible(False)
    return counts


def _more_count_bars(
    counts: Axes, axis: _ProbabilityAxis, q: list[float], n: list[float], color: str
) -> None:
    """A further model's pairs per slice on a diagram's count axis, as bars in its
    colour over the first model's grey ones; the axis grows to the tallest bar."""
    edges, heights = _slice_counts(axis, q, n)
    log = counts.get_yscale() == "log"
    # The colour names the model, as its bins do: no legend entry of its own.
    style = {"color": color, "alpha": 0.25, "linewidth": 0}
    _slice_bars(counts, edges, heights, log=log, label="_nolegend_", **style)
    counts.containers[0].set_label(_count_entry(log, several=True))  # no longer all grey
    nonzero = [h for bar in counts.patches if (h := bar.get_height()) > 0] or [1.0]
    _count_limits(counts, min(nonzero), max(nonzero), log)


def _slice_bars(counts: Axes, edges: list[float], heights: list[float], **style: Any) -> None:
    """One bar per slice between consecutive ``edges``, drawn with matplotlib ``style``."""
    widths = [b - a for a, b in itertools.pairwise(edges)]
    counts.bar(edges[:-1], heights, width=widths, align="edge", **style)


def _count_entry(log: bool, several: bool = False) -> str:
    """The count bars' legend entry: grey bars of one model, or several models' bars.

    Example:
        >>> _count_entry(False)
        'pairs per grey bar (right axis)'
        >>> print(_count_entry(True, several=True))
        pairs per bar (right axis, log): the first model's grey, each other's in its colour
    """
    axis = "right axis, log" if log else "right axis"
    if several:
        return f"pairs per bar ({axis}): the first model's grey, each other's in its colour"
    return f"pairs per grey bar ({axis})"


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


def _draw_smooth(
    ax: Axes, smooth: SmoothCurve, axis: _ProbabilityAxis, color: str, name: str | None = None
) -> None:
    """The smooth curve where the predictions' density is not negligible, with its band
    (named at the level it was drawn for, not the diagram's; their legend entries after
    ``name``, a further model's label, when given). Where no prediction lies
    (density <= 1e-3: between two clusters of q, say) curve and band break off, rather
    than a straight segment joining the runs on either side."""
    grid, density = _numbers(smooth.grid), _numbers(smooth.density)
    values = [_numbers(v) for v in (smooth.curve, smooth.lower, smooth.upper)]
    keep = [
        i
        for i, (t, d) in enumerate(zip(grid, density))
        if axis.lo <= t <= axis.hi and d > 1e-3 and not math.isnan(values[0][i])
    ]
    t, curve, lower, upper = _runs([grid, *values], keep)
    sigma, error = smooth.bandwidth.item(), smooth.error.item()
    prefix = f"{name}: " if name else ""
    ax.fill_between(
        t,
        lower,
        upper,
        color=color,
        alpha=0.18,
        linewidth=0,
        label=f"{prefix}{level_text(smooth.confidence)} pointwise bootstrap band",
    )
    ax.plot(
        t,
        curve,
        color=color,
        linewidth=1.6,
        alpha=0.8,
        label=f"{prefix}smooth curve (smECE {error:.4f}, σ {sigma:.3f})",
    )


def _runs(series: list[list[float]], keep: list[int]) -> list[list[float]]:
    """Each series at the indices ``keep`` (ascending), a NaN wherever a run of
    consecutive indices ends: matplotlib breaks a line and a band at a NaN.

    Example:
        >>> _runs([[0.0, 0.1, 0.2, 0.3, 0.4]], [0, 1, 3, 4])
        [[0.0, 0.1, nan, 0.3, 0.4]]
    """
    out: list[list[float]] = [[] for _ in series]
    for k, i in enumerate(keep):
        gap = k > 0 and i != keep[k - 1] + 1
        for values, column in zip(out, series):
            values.extend([math.nan, column[i]] if gap else [column[i]])
    return out


def per_label_errors(
    results: Mapping[str, CalibrationResult | Sequence[CalibrationResult] | ComparisonResult],
    ax: Axes | None = None,
    *,
    names: Sequence[str] = ("model", "other"),
    confidence: float = 0.95,
    interval: str | None = None,
    debias: bool = False,
    sort: bool = True,
    title: str | None = None,
    norm: str = "l2",
) -> tuple[Figure, Axes]:
    """Each label's calibration error with its interval, sorted (the paper's Figure 4).

    One horizontal bar per label and model (label names stay horizontal and legible for
    50 labels), largest error of the first model at the top, whiskers from the
    interval's ends; the legend names the interval (:func:`interval_label`) and sits below
    the panels when the function makes the figure (``fig.legends[0]``). A value per
    label is a CalibrationResult (one model), a sequence of them (several models, named
    by ``names``), or a :class:`~calib_metrics.functional.comparison.ComparisonResult`
    (a paired comparison of two models): then a second panel (``fig.axes[1]``, sharing
    the labels) shows error(a) − error(b) with its paired interval, and the labels whose
    interval excludes 0 are marked. A label name longer than :data:`MAX_TICK_CHARS` (60)
    is shortened in its middle ("…"), so that one long name cannot squeeze the bars.

    Args:
        results: label -> CalibrationResult, sequence of them, or ComparisonResult.
        ax: axes to draw on (not with comparisons, which make a figure of two panels).
        names: the models' names, in order.
        confidence, interval, debias: the settings behind the intervals.
        sort: order labels by the first model's error, largest first; else as given.
        title: the figure's title.
        norm: the errors' norm, named on the x axis unless it is the default l2.

    Returns:
        ``(fig, ax)``: ``ax`` holds the error bars.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> g = torch.Generator().manual_seed(2)
        >>> p = torch.rand(500, generator=g)
        >>> fit = calibration_error_ci(p, torch.bernoulli(p, generator=g), bin_size=100)
        >>> off = calibration_error_ci(p, (p > 0.5).float(), bin_size=100)
        >>> fig, ax = per_label_errors({"NN": fit, "VB": off}, interval="pairs", debias=True)
        >>> [t.get_text() for t in ax.get_yticklabels()]
        ['VB', 'NN']
        >>> fig.legends[0].get_title().get_text()
        'whiskers: 95% interval: debiased pair bootstrap'
    """
    labels, series, comparisons = _per_label_inputs(results)
    if len(names) < len(series):
        raise ValueError(f"names must name all {len(series)} models, got {list(names)}")
    legend = "whiskers: " + interval_label(confidence, interval, debias)
    names, title = _literals(names), literal(title)
    order = list(range(len(labels)))
    if sort:  # labels without an error (NaN) last, as Python cannot order NaN
        order.sort(key=lambda i: (math.isnan(e := series[0][i].error.item()), -e))
    height = max(3.0, 1.4 + 0.19 * len(labels) * (1 + 0.3 * (len(series) - 1)))
    # Room for long label names (about 0.07 in a character at 9 pt) beside the bars.
    wider = 0.07 * max(0, min(max(len(label) for label in labels), MAX_TICK_CHARS) - 12)
    own = ax is None
    if comparisons is None:
        fig, ax = _axes(ax, (4.4 + wider, height))
    elif ax is not None:
        raise ValueError("a comparison draws two panels: leave ax=None")
    else:
        fig = Figure(figsize=(7.4 + wider, height), layout="constrained")
        ax, diff_ax = fig.subplots(1, 2, sharey=True, width_ratios=[3, 2])
        _difference_panel(diff_ax, [comparisons[i] for i in order], names)
    for k, rows in enumerate(series):
        _label_bars(ax, [rows[i] for i in order], k, len(series), f"CalibErr ({names[k]})")
    _label_axis(ax, [labels[i] for i in order])
    ax.set_xlabel(f"calibration error {_norm_note(norm)}".rstrip())
    ax.set_xlim(left=0)
    handles = [h for a in fig.axes for h in a.get_legend_handles_labels()[0]]
    style = {"title": legend, "fontsize": 7.5, "title_fontsize": 7.5}
    if own:  # below the panels, where it hides no bar
        fig.legend(handles=handles, loc="outside lower center", ncols=2, **style)
    else:
        ax.legend(handles=handles, loc="best", **style)
    if title and comparisons is not None:
        fig.suptitle(title, fontsize=9)
    elif title:
        ax.set_title(title, fontsize=9)
    return fig, ax


def _per_label_inputs(
    results: Mapping[str, Any],
) -> tuple[list[str], list[list[CalibrationResult]], list[ComparisonResult] | None]:
    """Labels, each model's results per label, and the comparisons (or None)."""
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping label -> result")
    labels, values = [str(k) for k in results], list(results.values())
    if all(isinstance(v, ComparisonResult) for v in values):
        return labels, [[v.a for v in values], [v.b for v in values]], values
    if all(isinstance(v, CalibrationResult) for v in values):
        return labels, [values], None
    rows = [list(v) if isinstance(v, Sequence) else None for v in values]
    ok = all(r and all(isinstance(x, CalibrationResult) for x in r) for r in rows)
    if not ok or len({len(r) for r in rows}) != 1:
        raise ValueError(
            "results' values must all be CalibrationResults, all ComparisonResults, or all "
            "sequences of one CalibrationResult per model, got "
            + ", ".join(sorted({type(v).__name__ for v in values}))
        )
    return labels, [list(model) for model in zip(*rows)], None


def _draw_intervals(
    ax: Axes, at: Sequence[float], rows: Sequence[Any], *, horizontal: bool, **style: Any
) -> None:
    """Each result's interval as a whisker from its own lower to its upper end, at ``at``
    (a result without one, NaN ends, gets none). An interval need not hold its estimate
    (Algorithm 2's lies above a debiased error, a paired difference's is bias-corrected):
    whiskers measured from the estimate and clipped at 0 had drawn [estimate, upper] for
    an interval wholly above it."""
    ends = [(p, r.lower.item(), r.upper.item()) for p, r in zip(at, rows, strict=True)]
    ends = [(p, lo, hi) for p, lo, hi in ends if math.isfinite(lo) and math.isfinite(hi)]
    if not ends:
        return
    where, lower, upper = zip(*ends)
    mid = [(lo + hi) / 2 for lo, hi in zip(lower, upper)]
    half = [(hi - lo) / 2 for lo, hi in zip(lower, upper)]
    if horizontal:
        ax.errorbar(mid, where, xerr=half, fmt="none", **style)
    else:
        ax.errorbar(where, mid, yerr=half, fmt="none", **style)


def _label_bars(ax: Axes, rows: list[CalibrationResult], k: int, count: int, label: str) -> None:
    """Model ``k`` of ``count``: one horizontal bar per label, whiskers from the interval."""
    height = 0.8 / count
    y = [i + (k - (count - 1) / 2) * height for i in range(len(rows))]
    err = [r.error.item() for r in rows]
    ax.barh(y, err, height=height, color=f"C{k}", label=label)
    _draw_intervals(ax, y, rows, horizontal=True, elinewidth=0.8, capsize=1.5, ecolor="0.2")
    for row, at, error in zip(rows, y, err):
        # Too few pairs to resample: no whiskers must not read as "known exactly".
        if math.isnan(row.lower.item()) or math.isnan(row.upper.item()):
            ax.annotate(
                "no interval",
                (0.0 if math.isnan(error) else error, at),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=6,
                color="0.35",
            )


def _label_axis(ax: Axes, labels: list[str]) -> None:
    """One tick per label, first label at the top, a faint line across for each."""
    ticks = _tick_labels(labels)
    ax.set_yticks(range(len(labels)), ticks, fontsize=8 if len(labels) > 25 else 9)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="y", length=0)


def _difference_panel(ax: Axes, rows: list[ComparisonResult], names: Sequence[str]) -> None:
    """error(a) − error(b) per label with its paired interval; 0 marked."""
    d = [r.difference.item() for r in rows]
    # A label of too few units has no interval (NaN ends): drawn apart, without a bar.
    kind = [
        "none" if math.isnan(r.lower.item()) or math.isnan(r.upper.item())
        else "clear" if r.lower.item() > 0 or r.upper.item() < 0
        else "holds"
        for r in rows
    ]  # fmt: skip
    ax.axvline(0, color="0.4", linewidth=0.8)
    marks = (
        ("holds", "0.55", "difference, interval holds 0"),
        ("clear", "C3", "excludes 0"),
        ("none", "0.8", "no interval (too few units)"),
    )
    for flag, colour, text in marks:
        idx = [i for i, c in enumerate(kind) if c == flag]
        if not idx and flag == "none":
            continue
        _draw_intervals(ax, idx, [rows[i] for i in idx], horizontal=True, color=colour,
                        capsize=1.5, linewidth=0.9)  # fmt: skip
        ax.plot([d[i] for i in idx], idx, "o", color=colour, markersize=3.5, label=text)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel(f"{names[0]} − {names[1]} (paired)")


def per_class_errors(
    results: Mapping[str, Sequence[CalibrationResult]],
    labels: Sequence[str],
    ax: Axes | None = None,
    *,
    title: str | None = None,
    confidence: float = 0.95,
    interval: str | None = None,
    debias: bool = False,
) -> tuple[Figure, Axes]:
    """Grouped vertical bars of each label's error with its interval, one colour per
    model, in the labels' order (:func:`per_label_errors` sorts, pairs and reads better).

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.rand(500, generator=torch.Generator().manual_seed(2))
        >>> r = calibration_error_ci(p, (p > 0.5).float(), bin_size=100)
        >>> fig, ax = per_class_errors({"A": [r, r], "B": [r, r]}, ["x", "y"])
        >>> len(ax.patches)
        4
    """
    for name, rows in results.items():
        rows = list(rows) if isinstance(rows, Sequence) else None
        if rows is None or not all(isinstance(r, CalibrationResult) for r in rows):
            raise ValueError(
                f"results[{name!r}] must be a sequence of CalibrationResults, one per label"
            )
        if len(rows) != len(labels):
            raise ValueError(
                f"results[{name!r}] holds {len(rows)} results for {len(labels)} labels"
            )
    legend = "whiskers: " + interval_label(confidence, interval, debias)
    fig, ax = _axes(ax, (max(6.0, 0.35 * len(labels) * len(results)), 4.0))
    title = literal(title)
    width = 0.8 / max(1, len(results))
    for k, (name, rows) in enumerate(results.items()):
        x = [i + (k - (len(results) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(x, [r.error.item() for r in rows], width=width, label=literal(name))
        _draw_intervals(ax, x, rows, horizontal=False, elinewidth=0.6, capsize=1.5, ecolor="k")
    ax.set_xticks(range(len(labels)), _tick_labels(labels), rotation=90, fontsize=7)
    ax.set_ylabel("calibration error")
    ax.legend(fontsize=8, title=legend, title_fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax


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

    ``band`` is the band's legend entry (what the interval is: :func:`interval_label`);
    ``integer_x=True`` puts ticks on whole numbers only (epochs).

    Example:
        >>> fig, ax = error_curve([1, 2, 3], [0.1, 0.05, 0.03], [0.08, 0.04, 0.02],
        ...                       [0.12, 0.06, 0.04], xlabel="bin size")
        >>> ax.get_xlabel()
        'bin size'
    """
    _check_lengths("x", len(x), error=error, lower=lower, upper=upper)
    fig, ax = _axes(ax, (6.0, 4.0))
    label, xlabel, title, band = (literal(t) for t in (label, xlabel, title, band))
    had_data = ax.has_data()
    x = _numbers(x)
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
    positive = [v for v in x if v > 0]
    if logx and not positive:
        raise ValueError("logx=True needs a positive x value")
    if logx:
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
    normal_quantile(confidence)
    if not len(periods):
        raise ValueError("periods is empty: nothing to draw")
    series = {"mean": mean, "lower": lower, "upper": upper, "one_best": one_best, "gold": gold}
    _check_lengths("periods", len(periods), **series)
    _check_counts(periods, **series)
    spans = _period_spans(periods, spans)
    label, title, interval = literal(label), literal(title), literal(interval)
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
        label=f"{label} {band}" if label and interval else band,
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
    out = [(float(a), float(b)) for a, b in spans]
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
    """Period names as ticks, y from just below 0 to above everything drawn, legend."""
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
    ax.legend(fontsize=7)
