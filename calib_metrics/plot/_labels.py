"""Per-label and per-class errors: one bar (with its interval) per label or class, and
for two models the difference of their errors in a panel of its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, KeysView, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Annotation

from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.functional.comparison import ComparisonResult
from calib_metrics.functional.comparison_by_label import LabelComparisonResult
from calib_metrics.functional.errors import check_flag
from calib_metrics.plot._arguments import _axes
from calib_metrics.plot._bar_notes import keep_notes_inside, no_interval_note
from calib_metrics.plot._text import (
    MAX_TICK_CHARS,
    _interval_settings,
    _label_text,
    _literals,
    _norm_note,
    _results_norm,
    _tick_labels,
    interval_label,
    literal,
)

#: per_label_errors' default names: the first for one model, both for two.
DEFAULT_NAMES = ("model", "other")


def _label_list(labels: Any) -> list:
    """``per_class_errors``' labels as their texts (:func:`_label_text`): any ordered
    one-dimensional collection of names (a list, a 1-d NumPy array or tensor, a pandas
    Series, a dict's keys), not a string (its characters), a set (its order is the
    hash's) or nothing.

    Example:
        >>> import numpy as np
        >>> _label_list(np.array(["a", "b"])), _label_list(torch.arange(2))
        (['a', 'b'], ['0', '1'])
        >>> _label_list("ab")
        Traceback (most recent call last):
        ...
        ValueError: labels must be a non-empty ordered collection of label names, got 'ab'
    """
    unordered = isinstance(labels, AbstractSet) and not isinstance(labels, KeysView)
    ordered = isinstance(labels, Iterable) and not isinstance(labels, (str, bytes))
    if ordered and not unordered and getattr(labels, "ndim", 1) == 1:
        listed = [_label_text(k) for k in labels]
        if listed:
            return listed
    raise ValueError(
        f"labels must be a non-empty ordered collection of label names, got {labels!r}"
    )


def _check_names(names: Any, models: int, what: str = "names") -> list:
    """``names``: one name per model, in a sequence (a string had been split into its
    characters, and names past the models' dropped); the default fits one model or two.
    ``what`` is the argument's name in the messages (``tags`` of ``reliability_panels``).

    Example:
        >>> _check_names("model", 1)
        Traceback (most recent call last):
        ...
        ValueError: names must be a sequence of 1 names, one per model, got 'model'
    """
    ordered = isinstance(names, Sequence) and not isinstance(names, (str, bytes))
    # A 1-d NumPy array or pandas Series of names; not a set (its order is the hash's),
    # a mapping, a 0-d array or a tensor of numbers.
    array = not isinstance(names, torch.Tensor) and getattr(names, "ndim", None) == 1
    if not (ordered or array):
        raise ValueError(
            f"{what} must be a sequence of {models} names, one per model, got {names!r}"
        )
    given = list(names)
    if len(given) < models or (len(given) > models and names is not DEFAULT_NAMES):
        raise ValueError(f"{what} must name all {models} models, got {given}")
    return given


def per_label_errors(
    results: Mapping[str, CalibrationResult | Sequence[CalibrationResult] | ComparisonResult]
    | LabelComparisonResult,
    ax: Axes | None = None,
    *,
    names: Sequence[str] = DEFAULT_NAMES,
    confidence: float | None = None,
    interval: str | None = None,
    debias: bool | None = None,
    sort: bool = True,
    title: str | None = None,
    norm: str | None = None,
) -> tuple[Figure, Axes]:
    """Each label's calibration error with its interval, sorted (the paper's Figure 4).

    One horizontal bar per label and model (label names stay horizontal and legible for
    50 labels), largest error of the first model at the top, whiskers from the
    interval's ends; the legend names the interval (:func:`interval_label` of the settings
    the results carry, as :func:`reliability_diagram`'s title does) and sits below
    the panels when the function makes the figure (``fig.legends[0]``). A value per
    label is a CalibrationResult (one model), a sequence of them (several models, named
    by ``names``), or a :class:`~calib_metrics.functional.comparison.ComparisonResult`
    (a paired comparison of two models; a
    :class:`~calib_metrics.functional.LabelComparisonResult`, what
    ``CalibrationComparison.compute_by_label()`` returns, is taken whole for its labels'
    comparisons): then a second panel (``fig.axes[1]``, sharing
    the labels) shows error(a) − error(b) with its paired interval, and the labels whose
    interval excludes 0 are marked (each label's own interval, not corrected for the
    many labels: a Holm or BH count may call fewer). A label name longer than
    :data:`MAX_TICK_CHARS` (60) is shortened in its middle ("…"), so that one long name
    cannot squeeze the bars.

    Args:
        results: label -> CalibrationResult, sequence of them, or ComparisonResult; or
            a LabelComparisonResult. A label may be a 0-dim tensor or NumPy scalar (its
            value is drawn).
        ax: axes to draw on (not with comparisons, which make a figure of two panels).
        names: the models' names, in order.
        confidence, interval, debias: the settings behind the intervals, for results
            that do not carry them (made by hand, or a classwise average); those left None are
            0.95, no kind named, not debiased. Results that carry them
            (:func:`~calib_metrics.functional.intervals.interval_kind`) name their own: a
            setting given that differs, or results of different settings, are a
            ValueError.
        sort: order labels by the first model's error, largest first; else as given.
        title: the figure's title.
        norm: the errors' norm, named on the x axis unless it is l2: for results that
            do not carry it (made by hand, or a classwise average; default l2). Results
            that carry it (:func:`~calib_metrics.functional.intervals.drawn_norm`) name
            their own: a ``norm`` given that differs, or results of different norms, are
            a ValueError.

    Returns:
        ``(fig, ax)``: ``ax`` holds the error bars.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> g = torch.Generator().manual_seed(2)
        >>> p = torch.rand(500, generator=g)
        >>> fit = calibration_error_ci(p, torch.bernoulli(p, generator=g), bin_size=100)
        >>> off = calibration_error_ci(p, (p > 0.5).float(), bin_size=100)
        >>> fig, ax = per_label_errors({"NN": fit, "VB": off})
        >>> [t.get_text() for t in ax.get_yticklabels()]
        ['VB', 'NN']
        >>> fig.legends[0].get_title().get_text()
        'whiskers: 95% interval: debiased pair bootstrap'
    """
    labels, series, comparisons = _per_label_inputs(results)
    names = _check_names(names, len(series))
    check_flag("sort", sort)  # sort="no" is truthy: it had sorted
    drawn = [r for rows in series for r in rows]
    legend = "whiskers: " + interval_label(*_interval_settings(drawn, confidence, interval, debias))
    norm = _results_norm(drawn, norm)
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
    notes = []
    for k, rows in enumerate(series):
        notes += _label_bars(ax, [rows[i] for i in order], k, len(series), f"CalibErr ({names[k]})")
    _label_axis(ax, [labels[i] for i in order])
    ax.set_xlabel(f"calibration error {_norm_note(norm)}".rstrip())
    ax.set_xlim(left=0)
    keep_notes_inside(ax, notes)
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
    results: Mapping[str, Any] | LabelComparisonResult,
) -> tuple[list[str], list[list[CalibrationResult]], list[ComparisonResult] | None]:
    """Labels, each model's results per label, and the comparisons (or None)."""
    if isinstance(results, LabelComparisonResult):  # what compute_by_label() returns
        results = dict(zip(results.labels.tolist(), results.per_label, strict=True))
    if not isinstance(results, Mapping) or not results:
        raise ValueError(
            "results must be a non-empty mapping label -> result, or a "
            f"LabelComparisonResult, got {_described(results)}"
        )
    labels, values = [_label_text(k) for k in results], list(results.values())
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


def _described(results: Any) -> str:
    """``results``' kind, and that it is empty where it is an empty mapping."""
    return "an empty mapping" if isinstance(results, Mapping) else type(results).__name__


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


def _label_bars(
    ax: Axes, rows: list[CalibrationResult], k: int, count: int, label: str
) -> list[tuple[Annotation, Rectangle]]:
    """Model ``k`` of ``count``: one horizontal bar per label, whiskers from the interval;
    the "no interval" notes of bars without one, each with its bar."""
    height = 0.8 / count
    y = [i + (k - (count - 1) / 2) * height for i in range(len(rows))]
    err = [r.error.item() for r in rows]
    bars = ax.barh(y, err, height=height, color=f"C{k}", label=label)
    _draw_intervals(ax, y, rows, horizontal=True, elinewidth=0.8, capsize=1.5, ecolor="0.2")
    return [
        (no_interval_note(ax, (0.0 if math.isnan(error) else error, at)), bar)
        for row, bar, at, error in zip(rows, bars, y, err)
        if math.isnan(row.lower.item()) or math.isnan(row.upper.item())
    ]


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
        # Each label's own interval: a corrected count (Holm, BH) may call fewer, and the
        # marks had read as the table's calls beside it.
        ("clear", "C3", "excludes 0 (this label alone, uncorrected)"),
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
    labels: Iterable[Any],
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
    # A list of results had failed as an AttributeError, and no model or label drawn a
    # blank figure.
    if not isinstance(results, Mapping) or not results:
        raise ValueError(
            "results must be a non-empty mapping model name -> one CalibrationResult per "
            f"label, got {_described(results)}"
        )
    labels = _label_list(labels)
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
    # Room below the bars for the labels, written upwards (about 0.06 in a character at
    # 7 pt): a figure of fixed height had squeezed the bars into a strip.
    taller = 0.06 * max(0, min(max(len(label) for label in labels), MAX_TICK_CHARS) - 8)
    own = ax is None
    fig, ax = _axes(ax, (max(6.0, 0.35 * len(labels) * len(results)), 4.0 + taller))
    title = literal(title)
    width = 0.8 / max(1, len(results))
    for k, (name, rows) in enumerate(results.items()):
        x = [i + (k - (len(results) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(x, [r.error.item() for r in rows], width=width, label=literal(name))
        _draw_intervals(ax, x, rows, horizontal=False, elinewidth=0.6, capsize=1.5, ecolor="k")
    ax.set_xticks(range(len(labels)), _tick_labels(labels), rotation=90, fontsize=7)
    ax.set_ylabel("calibration error")
    style = {"title": legend, "fontsize": 8, "title_fontsize": 8}
    if own:  # beside the bars, where it hides none (inside, it had sat on the tallest)
        fig.legend(loc="outside right upper", **style)
    else:
        ax.legend(**style)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax
