"""The words on a figure: caller's text drawn verbatim (:func:`literal`), long tick
labels shortened in the middle, and the names of the error (:func:`describe`,
:func:`error_name`) and of an interval's level and kind (:func:`interval_label`, of the
settings its results carry: :func:`_interval_settings`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.functional.errors import check_flag
from calib_metrics.functional.intervals import (
    IntervalKind,
    decimal_level,
    drawn_norm,
    interval_kind,
    normal_quantile,
)
from calib_metrics.wording import MAX_NAME_CHARS, level_text, one_line_names, visible_controls

#: What each ``interval=`` setting of the library draws, as figures name it.
INTERVAL_KINDS = {
    "paper": "paper Algorithm 2",
    "pairs": "pair bootstrap",
    "groups": "group bootstrap",
    # A comparison's one-vs-rest pairs of multiclass items, resampled item by item.
    "items": "item bootstrap",
}


#: The calibration error's norms (``norm=``), as figures name them.
NORMS = ("l2", "l1", "max")


#: Longest label name drawn whole as a tick; longer ones lose their middle to "…" (one
#: 300-character name had widened the per-label chart until its bars were unreadable).
MAX_TICK_CHARS = MAX_NAME_CHARS


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
    return None if text is None else _drawn(str(text))


def _drawn(text: str) -> str:
    """:func:`literal`'s text."""
    return _dollars(visible_controls(text))


def _dollars(shown: str) -> str:
    """A text shown already (its controls escaped) with every ``$`` escaped for matplotlib."""
    return shown.replace("$", r"\$")


def _literals(texts: Sequence[Any]) -> list[str]:
    return [literal(str(t)) for t in texts]


def _label_text(key: Any) -> str:
    """A label as its tick reads: the value of a 0-dim tensor or NumPy scalar (the keys of
    ``zip(r.labels, r.per_label)``), which had been drawn as ``tensor(4)``, written as its
    own dtype prints it (a float32 0.1 had read 0.10000000149011612 as a Python float;
    a bfloat16 prints as the float32 it is).

    Example:
        >>> import numpy as np, torch
        >>> _label_text(torch.tensor(4)), _label_text(np.int64(3)), _label_text("NOUN")
        ('4', '3', 'NOUN')
        >>> _label_text(torch.tensor(0.1)), _label_text(np.float32(0.2))
        ('0.1', '0.2')
    """
    if isinstance(key, torch.Tensor) and key.ndim == 0:
        # NumPy has no bfloat16: its values are float32's exactly (and print as float32's).
        key = key.detach()
        key = (key.float() if key.dtype == torch.bfloat16 else key).cpu().numpy()[()]
    elif isinstance(key, np.ndarray) and key.ndim == 0:
        key = key[()]
    return str(key)


def _tick_labels(names: Sequence[Any], limit: int = MAX_TICK_CHARS) -> list[str]:
    r"""Label names as ticks and panel titles show them: in at most ``limit`` (default
    :data:`MAX_TICK_CHARS`) characters, on one line, as every output shows label names
    (:func:`~calib_metrics.wording.one_line_names`: a line break as ``\n``, which had run
    into the next row; an empty name as ``""``, a blank tick had read as no label), drawn
    as written (:func:`literal`).

    Example:
        >>> _tick_labels(["NOUN"]), [len(t) for t in _tick_labels(["x" * 300])]
        (['NOUN'], [60])
        >>> print(*_tick_labels(["tab\tnew\nline", ""]))
        tab\tnew\nline ""
        >>> [t[-4:] for t in _tick_labels(["a" * 100 + m + "a" * 100 for m in "XY"])]
        ['a #1', 'a #2']
        >>> _tick_labels(["", '""'])
        ['"" #1', '"" #2']
    """
    shown = one_line_names([_label_text(name) for name in names], limit)
    return [_dollars(text) for text in shown]


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
    if not isinstance(result, CalibrationResult):
        raise ValueError(
            "result must be a CalibrationResult (what calibration_error_ci returns), got "
            f"{type(result).__name__}"
        )
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


def _results_norm(
    results: Sequence[CalibrationResult], norm: str | None, drawn: str | None = None
) -> str:
    """The norm of the errors of ``results``: the one they carry
    (:func:`~calib_metrics.functional.intervals.drawn_norm`), else ``norm``, else that of
    the diagram ``drawn`` on the axes already, else l2. A ``norm`` that contradicts the
    one carried, results that carry different norms, or a norm other than the drawn
    diagram's, are refused: an l1 result had been titled "CalibErr" (l2), ``norm="max"``
    had renamed it, one overlaid on an l2 diagram had been drawn under its title, and the
    per-label charts and panels had named ``norm`` (default l2) whatever their results
    carried. Results that carry none (made by hand, averaged over classes) take the
    others' norm.

    Example:
        >>> import torch
        >>> from calib_metrics.functional.intervals import pair_bootstrap, Bins
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> r = pair_bootstrap(bins, n_samples=20, norm="l1")
        >>> _results_norm([r], None), _results_norm([r._replace(lower=r.upper)], None)
        ('l1', 'l2')
        >>> _results_norm([r], "max")
        Traceback (most recent call last):
        ...
        ValueError: norm='max' contradicts result's error, computed with norm='l1': leave ...
        >>> _results_norm([r, pair_bootstrap(bins, n_samples=20)], None)
        Traceback (most recent call last):
        ...
        ValueError: results' errors differ in norm ('l1', 'l2'), and the figure names one: ...
    """
    carried = sorted({n for r in results if (n := drawn_norm(r)) is not None})
    if len(carried) > 1:
        raise ValueError(
            f"results' errors differ in norm ({', '.join(map(repr, carried))}), and the "
            "figure names one: draw errors of one norm together"
        )
    own = carried[0] if carried else None
    if norm is not None:
        _norm_note(norm)  # a bad norm is refused as such, not as a contradiction
        if own is not None and norm != own:
            whose = "result's error" if len(results) == 1 else "the results' errors"
            raise ValueError(
                f"norm={norm!r} contradicts {whose}, computed with norm={own!r}: leave norm "
                "out (a result that carries its norm names it itself)"
            )
    own = own or norm or drawn or "l2"
    if drawn is not None and own != drawn:
        raise ValueError(
            f"the diagram drawn on ax is of a norm={drawn!r} error and this result's of "
            f"norm={own!r}, and the diagram's title names one: draw errors of one norm together"
        )
    return own


def _level(confidence: Any) -> Any:
    """``confidence`` with a NumPy real scalar taken as the decimal it prints as, a Python
    float: ``np.float32(0.9)`` had been refused as "must be a number in (0, 1)" (the
    library's check takes Python numbers), and as a double it is 0.8999999762, whose
    level would read "89.99999762%". Anything else is returned as given, to be checked.

    Example:
        >>> import numpy as np
        >>> _level(np.float32(0.9)), _level(0.95), _level("0.9")
        (0.9, 0.95, '0.9')
    """
    level = None if isinstance(confidence, float) else decimal_level(confidence)
    return confidence if level is None else level


def interval_label(
    confidence: float,
    interval: str | None = None,
    debias: bool = False,
    method: str | None = None,
) -> str:
    """The interval's level and kind, as every figure names it.

    Args:
        confidence: the interval's coverage, in (0, 1) (a NumPy scalar too).
        interval: ``"paper"``, ``"pairs"``, ``"groups"`` (the library's ``interval=``
            settings), ``"items"`` (what a comparison of multiclass items resamples:
            :func:`~calib_metrics.functional.comparison.comparison_units`), or None when
            the kind is not known (only the level is named).
        debias: whether the interval is built around the debiased estimate.
        method: the interval's form: ``"percentile"`` is named (a comparison's, or
            ``method="percentile"``); ``"normal"`` (centre ∓ z·std,
            :data:`~calib_metrics.functional.intervals.NORMAL_ENDS`; the paper's and
            ``calibration_error_ci``'s default) and None (not known) are not.

    Example:
        >>> interval_label(0.95, "pairs", debias=True)
        '95% interval: debiased pair bootstrap'
        >>> interval_label(0.9, "paper")
        '90% interval: paper Algorithm 2'
        >>> interval_label(0.99, "groups")
        '99% interval: group bootstrap'
        >>> interval_label(0.95, "items", debias=True, method="percentile")
        '95% interval: debiased item bootstrap, percentile'
        >>> interval_label(0.8)
        '80% interval'
    """
    confidence = _level(confidence)
    normal_quantile(confidence)
    if interval is not None and interval not in INTERVAL_KINDS:
        raise ValueError(
            f"interval must be one of {sorted(INTERVAL_KINDS)} or None, got {interval!r}"
        )
    check_flag("debias", debias)
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    level = f"{level_text(confidence)} interval"
    if interval is None:
        return level
    kind = INTERVAL_KINDS[interval]
    if debias:
        kind = f"{kind}, debiased" if interval == "paper" else f"debiased {kind}"
    return f"{level}: {kind}{METHODS[method]}"


#: An interval's forms, as figures name them after its kind: the normal form, the
#: library's default, goes unnamed.
METHODS = {None: "", "normal": "", "percentile": ", percentile"}


def _interval_settings(
    results: Sequence[CalibrationResult],
    confidence: float | None,
    interval: str | None,
    debias: bool | None,
    drawn: IntervalKind | None = None,
) -> IntervalKind:
    """The settings that name the intervals of ``results``: where they carry them
    (:func:`~calib_metrics.functional.intervals.interval_kind`), their own, and a setting
    given that differs is refused (a 90% interval had been titled 80% when
    ``confidence=0.8`` was passed beside it, and one given setting had reset the others to
    their defaults); else those given, the others at their defaults (0.95, no kind, not
    debiased, no form named). Results that carry none (made by hand, or without an
    interval) take the others' settings; results of different settings are refused, as
    one legend cannot name them. ``drawn``: the settings of a diagram drawn on the axes
    already, which ``results`` are overlaid on: they count as a result's.

    Example:
        >>> import torch
        >>> from calib_metrics.functional.intervals import pair_bootstrap, Bins
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> r = pair_bootstrap(bins, n_samples=20, confidence=0.9)
        >>> _interval_settings([r], None, None, None)
        IntervalKind(confidence=0.9, interval='pairs', debias=False, method='percentile')
        >>> _interval_settings([r], 0.95, None, None)
        Traceback (most recent call last):
        ...
        ValueError: confidence=0.95 contradicts result's interval, computed with confidence=0.9: ...
        >>> _interval_settings([r, pair_bootstrap(bins, n_samples=20)], None, None, None)
        Traceback (most recent call last):
        ...
        ValueError: results' intervals differ (90% interval: pair bootstrap, percentile; 95% ...
        >>> _interval_settings([r], None, None, None, drawn=interval_kind(r)._replace(debias=True))
        Traceback (most recent call last):
        ...
        ValueError: the diagram drawn on ax and this result name different intervals (90% ...
    """
    confidence = None if confidence is None else _level(confidence)
    settings = IntervalKind(
        0.95 if confidence is None else confidence,
        interval,
        False if debias is None else debias,
    )
    interval_label(*settings)  # a bad setting is refused as such, not as a contradiction
    kind = _carried_kind(results, drawn)
    if kind is None:
        return settings
    if drawn is not None:
        whose = "the interval of the diagram drawn on ax"
    else:
        whose = "result's interval" if len(results) == 1 else "the results' intervals"
    given = {"confidence": confidence, "interval": interval, "debias": debias}
    for name, value in given.items():
        own = getattr(kind, name)
        if value is not None and own is not None and value != own:
            raise ValueError(
                f"{name}={value!r} contradicts {whose}, computed with {name}={own!r}: leave "
                f"{name} out (a result that carries its interval's settings names them itself)"
            )
    # A hand-made diagram's title leaves unnamed settings open: this call's fill them.
    return kind._replace(**{f: getattr(settings, f) for f in given if getattr(kind, f) is None})


def _add_kind(kinds: list[IntervalKind], kind: IntervalKind) -> None:
    """Add ``kind`` to the distinct ``kinds``. A setting not known (None: a form saved
    before it was kept, or what a hand-made diagram's title leaves unnamed) matches any,
    and the known one is kept: such a result had been refused beside a new one of the same
    settings, both named alike."""
    for i, other in enumerate(kinds):
        if all(a is None or b is None or a == b for a, b in zip(other, kind, strict=True)):
            kinds[i] = IntervalKind(*(b if a is None else a for a, b in zip(other, kind)))
            return
    kinds.append(kind)


def _carried_kind(
    results: Sequence[CalibrationResult], drawn: IntervalKind | None = None
) -> IntervalKind | None:
    """The one interval kind that ``results`` (and the diagram ``drawn`` already) carry,
    None where none carries one."""
    carried = (k for r in results if (k := interval_kind(r)) is not None)
    kinds: list[IntervalKind] = []
    for kind in [*([drawn] if drawn is not None else []), *carried]:
        _add_kind(kinds, kind)
    if len(kinds) > 1:
        # A hand-made diagram's unnamed debias (None) reads as its title does: not named.
        named = "; ".join(interval_label(*k._replace(debias=bool(k.debias))) for k in kinds)
        if drawn is not None:  # an overlay: its legend entry would not name its own
            raise ValueError(
                f"the diagram drawn on ax and this result name different intervals ({named}), "
                "and the diagram's title names one: draw results of one interval's settings "
                "together"
            )
        raise ValueError(
            f"results' intervals differ ({named}), and one legend names one: draw results "
            "of one interval's settings together"
        )
    return kinds[0] if kinds else None
