"""Small multiples of reliability diagrams: one panel per class (or label), each model's
bins overlaid in its colour, so that classes are never pooled into one curve.

Like :mod:`calib_metrics.plot` (whose marks it reuses), it draws on a new
``matplotlib.figure.Figure``, never on pyplot's global state, and is imported lazily.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.functional.errors import check_int
from calib_metrics.functional.intervals import normal_quantile
from calib_metrics.functional.multiclass import most_frequent
from calib_metrics.functional.smooth import SmoothCurve
from calib_metrics.plot import describe, interval_label, literal, shared_x_axis
from calib_metrics.plot._labels import _check_names
from calib_metrics.plot._probability_axis import _ProbabilityAxis
from calib_metrics.plot._reliability import _bin_marks, _draw_bins
from calib_metrics.plot._smooth import _draw_smooth, band_label
from calib_metrics.plot._text import (
    _interval_settings,
    _level,
    _literals,
    _results_norm,
    _tick_labels,
)
from calib_metrics.wording import counted

#: Panels per row of :func:`reliability_panels`.
COLUMNS = 4
#: Panel size in inches (square plot plus its title).
PANEL = 3.4
#: Longest label name a panel's title shows whole: with " · 1,234 positives · logit x"
#: after it the line fills the panel's width at 7 pt (a 45-character name had run into
#: the next panel's title).
PANEL_TITLE_CHARS = 34
#: Widest that first line may be, in points at the titles' 7 pt: wider (34 wide capitals
#: beside six-digit counts), the name takes a line of its own (it had run into the next
#: panel's title).
TITLE_LINE_POINTS = 0.95 * PANEL * 72


def reliability_panels(
    results: Mapping[str, Sequence[CalibrationResult]],
    *,
    names: Sequence[str] = ("model",),
    tags: Sequence[str] | None = None,
    smooth: Mapping[str, Sequence[SmoothCurve | None]] | None = None,
    confidence: float | None = None,
    interval: str | None = None,
    debias: bool | None = None,
    title: str | None = None,
    note: str | None = None,
    norm: str | None = None,
) -> tuple[Figure, list[Axes]]:
    """One reliability diagram per label (a class of ``mode="classwise"``, say): the
    diagonal, and each model's bins (q̂ᵢ, p̂ᵢ) with ±z·se bars in its own colour (``C0``,
    ``C1``, ...), with its smooth curve and band when given. A panel's title is its label
    and each model's error with its interval (:func:`~calib_metrics.plot.describe`); the
    legend below the panels names the models and the interval's level and kind (those the
    results carry, as :func:`~calib_metrics.plot.per_label_errors`' legend names them).

    Args:
        results: label -> one CalibrationResult per model (the label's pairs only).
        names: the models' names, in order (the legend's).
        tags: short names of the models for the panels' titles (default: ``names``).
        smooth: label -> one SmoothCurve (or None) per model, made on the same pairs.
        confidence, interval, debias: the settings behind the intervals, for results
            that do not carry them; those left None are 0.95, no kind named, not
            debiased. Results that carry them
            (:func:`~calib_metrics.functional.intervals.interval_kind`) name their own
            (the form too: a comparison's percentile intervals over items had been named
            a pair bootstrap's): a setting given that differs, or results of different
            settings, are a ValueError.
        title: the figure's first title line.
        note: a second title line (which labels are drawn when not all are, say).
        norm: the errors' norm, named in the panels' titles unless it is l2: for results
            that do not carry it (made by hand, or a classwise average; default l2).
            Results that carry it
            (:func:`~calib_metrics.functional.intervals.drawn_norm`) name their own: a
            ``norm`` given that differs, or results of different norms, are a ValueError.

    Returns:
        ``(fig, axes)``: one axes per label, in ``results``' order.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> q = torch.rand(400, generator=torch.Generator().manual_seed(0))
        >>> y = torch.bernoulli(q, generator=torch.Generator().manual_seed(1))
        >>> fit, off = (calibration_error_ci(q, t, bin_size=40, n_samples=20)
        ...             for t in (y, (q > 0.5).float()))
        >>> fig, axes = reliability_panels({"class 0": [fit, off], "class 1": [off, fit]},
        ...                                names=["a", "b"])
        >>> len(axes), axes[1].get_title().splitlines()[0]
        (2, 'class 1 · 199 positives')
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping label -> one result per model")
    results = {label: _results(f"results[{label!r}]", m) for label, m in results.items()}
    counts = {label: len(models) for label, models in results.items()}
    if len(set(counts.values())) != 1:
        raise ValueError(f"every label needs one result per model, got {counts} results")
    # Checked as per_label_errors checks its names: None had failed as a TypeError, a
    # string been split into characters, and fewer tags than models cut the panels short.
    models = next(iter(counts.values()))
    names = _check_names(names, models)
    tags = names if tags is None else _check_names(tags, models, "tags")
    _check_smooth(smooth, results, models)
    drawn = [r for rs in results.values() for r in rs]
    kind = _interval_settings(drawn, confidence, interval, debias)
    norm = _results_norm(drawn, norm)
    z = normal_quantile(_level(kind.confidence))
    legend = interval_label(*kind)
    names, tags = _literals(names), _literals(tags)
    fig, axes = _grid(len(results))
    # Label names shortened (and kept apart) as the per-label charts' ticks are, so that
    # a long class name stays within its panel's title.
    titles = _tick_labels(list(results), PANEL_TITLE_CHARS)
    for ax, title_label, (label, models) in zip(axes, titles, results.items(), strict=True):
        curves = (smooth or {}).get(label) or [None] * len(models)
        _panel(ax, title_label, models, curves, (names, tags), z, norm)
    # Every panel's entries, once each: the first panel's alone had left out a smooth
    # curve that only later panels draw.
    entries = dict(zip(*reversed(_legend_entries(axes)), strict=True))
    handles, labels = list(entries.values()), list(entries)
    # The whiskers are the bins' own (±z se, in the legend); the error's interval is the
    # [lower, upper] in each panel's title.
    fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)),
               fontsize=7.5, title=f"titles' [lower, upper]: {legend}",
               title_fontsize=7.5)  # fmt: skip
    heading = [literal(line) for line in (title, note) if line]
    if heading:
        fig.suptitle("\n".join(heading), fontsize=9)
    return fig, axes


def _legend_entries(axes: Sequence[Axes]) -> tuple[list, list[str]]:
    """The handles and labels of every panel, in the panels' order."""
    handles, labels = [], []
    for ax in axes:
        more_handles, more_labels = ax.get_legend_handles_labels()
        handles += more_handles
        labels += more_labels
    return handles, labels


def _results(name: str, results: object) -> list[CalibrationResult]:
    """``results``, an iterable of CalibrationResults (a list, a tuple, a NumPy object
    array, a dict's values), as a list (a bare number had failed as an AttributeError
    while drawing)."""
    iterable = isinstance(results, Iterable) and not isinstance(results, (str, Mapping))
    if not iterable or isinstance(results, CalibrationResult):
        kind = type(results).__name__
        raise ValueError(f"{name} must be a sequence of CalibrationResults, got {kind}")
    results = list(results)
    for result in results:
        if not isinstance(result, CalibrationResult):
            raise ValueError(
                f"{name} must hold CalibrationResults (what calibration_error_ci returns), "
                f"got {type(result).__name__}"
            )
    return results


def _check_smooth(
    smooth: Mapping[str, Sequence[SmoothCurve | None]] | None,
    results: Mapping[str, Sequence[CalibrationResult]],
    n_models: int,
) -> None:
    """``smooth``: for labels of ``results`` only (a key that matched none had been dropped
    without a word), one SmoothCurve or None per model."""
    if smooth is None:
        return
    if not isinstance(smooth, Mapping):
        raise ValueError(f"smooth must be a mapping label -> curves, got {type(smooth).__name__}")
    unknown = [label for label in smooth if label not in results]
    if unknown:
        raise ValueError(
            f"smooth has labels that results lacks: {unknown} (labels: {list(results)})"
        )
    for label, curves in smooth.items():
        if curves is None:
            continue
        if not isinstance(curves, Sequence):
            raise ValueError(
                f"smooth[{label!r}] must be a sequence of one SmoothCurve (or None) per "
                f"model, got {type(curves).__name__}"
            )
        if len(curves) != n_models:
            raise ValueError(
                f"smooth[{label!r}] holds {len(curves)} curves for {n_models} models: give "
                "one SmoothCurve (or None) per model"
            )
        wrong = next((c for c in curves if c is not None and not isinstance(c, SmoothCurve)), None)
        if wrong is not None:
            raise ValueError(
                f"smooth[{label!r}] must hold SmoothCurves (or None), got {type(wrong).__name__}"
            )


def _grid(count: int) -> tuple[Figure, list[Axes]]:
    """A figure of ``count`` panels, ``COLUMNS`` to a row."""
    columns = min(COLUMNS, count)
    rows = math.ceil(count / columns)
    fig = Figure(figsize=(PANEL * columns, PANEL * rows + 1.0), layout="constrained")
    grid = fig.subplots(rows, columns, squeeze=False).reshape(-1).tolist()
    for ax in grid[count:]:
        fig.delaxes(ax)
    return fig, grid[:count]


def _panel(
    ax: Axes,
    label: str,
    models: Sequence[CalibrationResult],
    curves: Sequence[SmoothCurve | None],
    names: tuple[Sequence[str], Sequence[str]],
    z: float,
    norm: str,
) -> None:
    """One label's panel: the diagonal, each model's smooth curve and bins, the title
    (the label, its positives, each model's error in ``norm``). The x axis is logit when
    any one model's diagram would be (:func:`~calib_metrics.plot.shared_x_axis`: the pooled
    share of pairs near the ends had kept a sharp model's bins on a linear axis beside a
    soft one), over a range that shows every model's bins."""
    marks = [_bin_marks(r.bins) for r in models]
    q = [v for m in marks for v in m[0]]
    axis = _ProbabilityAxis(shared_x_axis(models).xscale, q)
    t = axis.grid()
    ax.plot(t, t, color="0.55", linestyle="--", linewidth=1, label="perfect calibration")
    positives = sum(f * n for f, n in zip(marks[0][1], marks[0][2]))
    head = [label, counted(positives, "positive", grouped=True)]
    head += ["logit x"] if axis.scale == "logit" else []
    lines = _title_head(head)
    for k, (result, curve, name, tag) in enumerate(zip(models, curves, *names, strict=True)):
        color, smooth = f"C{k}", ""
        if curve is not None:
            line, band = _draw_smooth(ax, curve, axis, color)
            # The legend is the figure's: the panel's own numbers go in its title.
            line.set_label(f"{name}: smooth curve")
            if band is not None:  # none drawn from too few units to resample
                band.set_label(f"{name}: {band_label(curve.confidence)}")
            smooth = f", smECE {curve.error.item():.4f}"
        # Bars from each bin's effective sample size, as the reliability diagram's: grouped
        # labels had drawn half as wide here (400-pair bins of n_eff ≈ 100).
        bars = (marks[k][0], marks[k][1], marks[k][3])
        _draw_bins(ax, axis, bars, z, color, f"{name}: bins (±{z:.2f} se)")
        prefix = f"{tag}: " if len(models) > 1 else ""
        lines.append(f"{prefix}{describe(result, norm)}{smooth}")
    axis.apply(ax)
    ax.set_xlabel("predicted probability q̂", fontsize=7.5)
    ax.set_ylabel("empirical frequency p̂", fontsize=7.5)
    ax.tick_params(labelsize=7)
    ax.set_title("\n".join(lines), fontsize=7)


def _title_head(parts: list[str]) -> list[str]:
    """A panel title's first line, ``label · N positives[ · logit x]``, or, wider than
    :data:`TITLE_LINE_POINTS`, the label on a line of its own above the rest.

    Example:
        >>> _title_head(["NOUN", "12 positives"])
        ['NOUN · 12 positives']
        >>> _title_head(["W" * 34, "123,456 positives", "logit x"])[1]
        '123,456 positives · logit x'
    """
    line = " · ".join(parts)
    font = FontProperties(size=7)
    drawn = line.replace("\\$", "$")  # literal() escapes a dollar, drawn as one
    width = TextToPath().get_text_width_height_descent(drawn, font, ismath=False)[0]
    return [line] if width <= TITLE_LINE_POINTS else [parts[0], " · ".join(parts[1:])]


#: Most classes :func:`classwise_panels` draws (the command line's classwise plots too).
MAX_CLASS_PANELS = 12


def classwise_panels(
    results: Sequence[CalibrationResult],
    *,
    confidence: float | None = None,
    interval: str | None = None,
    debias: bool | None = None,
    title: str | None = None,
    limit: int | None = MAX_CLASS_PANELS,
    class_names: Sequence[str] | None = None,
    norm: str | None = None,
    versus: Sequence[CalibrationResult] | None = None,
    names: Sequence[str] = ("model",),
    smooth: Mapping[int, Sequence[SmoothCurve | None]] | None = None,
) -> tuple[Figure, list[Axes]]:
    """One panel per class of a classwise result (``results[c]``: class c's one-vs-rest
    result), at most ``limit`` (None: every class): with more classes, those with the most
    positives (ties: the lower id), in class order, and a title line that says so. Panels
    are titled ``class_names[c]`` when given, else ``class c``. ``versus``: a second
    model's results of the same classes (the same items), overlaid in ``C1``; ``names``
    then names both models. ``smooth``: class id -> one SmoothCurve (or None) per model,
    of that class's pairs; curves of classes not drawn (:func:`drawn_classes`) are not
    used, so that a caller may make them for the drawn classes alone.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> q = torch.rand(400, generator=torch.Generator().manual_seed(0))
        >>> per_class = [calibration_error_ci(q, (q > c / 4).float(), bin_size=40,
        ...                                   n_samples=20) for c in range(3)]
        >>> fig, axes = classwise_panels(per_class, limit=2)
        >>> [ax.get_title().splitlines()[0].split(" · ")[0] for ax in axes], fig.get_suptitle()
        (['class 0', 'class 1'], '2 of 3 classes drawn: those with the most positives')
    """
    results = _results("results", results)
    if not results:
        raise ValueError("results must hold one CalibrationResult per class, got none")
    models = [results] if versus is None else [results, _results("versus", versus)]
    if len(models[-1]) != len(results):
        raise ValueError(f"versus has {len(models[-1])} results for {len(results)} classes")
    drawn = drawn_classes(results, limit)
    note = (
        f"{len(drawn)} of {len(results)} classes drawn: those with the most positives"
        if len(drawn) < len(results)
        else None
    )
    if class_names is not None and len(class_names) != len(results):
        raise ValueError(f"class_names has {len(class_names)} names for {len(results)} classes")
    name = (lambda c: f"class {c}") if class_names is None else (lambda c: str(class_names[c]))
    curves = _class_curves(smooth, len(results))
    return reliability_panels(
        {name(c): [model[c] for model in models] for c in drawn},
        names=names,
        smooth={name(c): curves[c] for c in drawn if c in curves},
        confidence=confidence,
        interval=interval,
        debias=debias,
        title=title,
        note=note,
        norm=norm,
    )


def drawn_classes(
    results: Sequence[CalibrationResult], limit: int | None = MAX_CLASS_PANELS
) -> list[int]:
    """The classes :func:`classwise_panels` draws of ``results`` (one per class): every
    class up to ``limit`` (None: no limit), else the ``limit`` with the most positives
    (ties: the lower id), in class order.

    Example (classes of 300, 225 and 150 positives):
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> q = torch.linspace(0, 1, 301)[1:]
        >>> results = [calibration_error_ci(q, (q > c / 4).float(), n_samples=20)
        ...            for c in range(3)]
        >>> drawn_classes(results, limit=2)
        [0, 1]
    """
    # A negative limit had sliced off the last class, a float failed as a slice index.
    limit = len(results) if limit is None else limit
    check_int("limit", limit)
    # Rounded: a sum of bins' shares of a count had ranked tied classes by rounding error,
    # unlike the counts of labels that a caller drawing curves for these classes has.
    return most_frequent([round(float((r.bins.freq * r.bins.count).sum())) for r in results], limit)


def _class_curves(
    smooth: Mapping[int, Sequence[SmoothCurve | None]] | None, n_classes: int
) -> dict[int, Sequence[SmoothCurve | None]]:
    """``smooth`` of :func:`classwise_panels`, its keys class ids (a class name or an id
    out of range had drawn nothing without a word); the curves are checked by
    :func:`reliability_panels`."""
    if smooth is None:
        return {}
    if not isinstance(smooth, Mapping):
        raise ValueError(
            f"smooth must be a mapping class id -> curves, got {type(smooth).__name__}"
        )
    wrong = [
        c
        for c in smooth
        if isinstance(c, bool) or not isinstance(c, Integral) or not 0 <= c < n_classes
    ]
    if wrong:
        raise ValueError(f"smooth's keys must be class ids in [0, {n_classes - 1}], got {wrong}")
    return {int(c): curves for c, curves in smooth.items()}
