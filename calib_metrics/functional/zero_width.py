"""The warning of an interval of zero width, whose draws at both ends gave one error.

Every draw generator holds a bin's frequency where its labels put it when they agree:
the pairs' and groups' bootstraps redraw a bin's ones and zeros, and a bin of zeros
stays at frequency 0 in every draw; Algorithm 2's variance p̂(1 − p̂)/|B| is 0 there.
The max norm takes the worst bin's gap alone, whatever its weight, so when that bin is
pure every draw gives the same error and the interval is a point: ten labels of 0 in a
bin of mean prediction 0.4 gave [0.4, 0.4], though ten labels of 0 are consistent with
a true frequency up to 0.31 (95%). The l1 and l2 norms weigh the bins by their drawn
counts and spread unless every bin that counts is pure (``interval="paper"``, whose
counts are fixed, or all gaps equal). The draws are the estimator's, which the coverage
tables (``docs/coverage.md``) measure, so the library says so instead of changing them.

The bound said is the exact binomial (Clopper-Pearson) interval's end at the
interval's own level 1 − α: n labels of 0 give a true frequency in
[0, 1 − (α/2)^(1/n)], n labels of 1 in [(α/2)^(1/n), 1], rounded outward; it counts
labels, so over groups it holds if the labels are independent.

A comparison (:mod:`calib_metrics.functional.comparison`) draws both models' errors
from the same weights: a model's interval is a point as above, and so is the
difference's when both are, whose p-value (0 or 1) then says only that every draw gave
one difference (:func:`warn_if_comparison_zero_width`).
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import TYPE_CHECKING

import torch

from calib_metrics.functional.binning import Bins
from calib_metrics.functional.errors import CountedWarning, warn_at_caller

if TYPE_CHECKING:  # intervals and comparison import this module
    from calib_metrics.functional.comparison import ComparisonResult
    from calib_metrics.functional.intervals import CalibrationResult


class ZeroWidthWarning(CountedWarning):
    """An interval of zero width (:mod:`calib_metrics.functional.zero_width`); its text
    counts a bin's labels, so a metric says it once, as its other counted warnings."""


# Draws all equal give ends equal but for rounding: the normal form's centre ∓ z·std has
# for std a few ulps of the error (the mean of equal values rounds), and a comparison's
# difference of roots of debiased squares ends a few hundred ulps apart. A trillionth of
# the error is far above that and far below any data's spread (about 1/√N of the error,
# over 1e-10 for N < 2^62 pairs).
_RELATIVE_WIDTH = 1e-12


def warn_if_zero_width(
    result: CalibrationResult, norm: str, confidence: float
) -> CalibrationResult:
    """``result`` (a :class:`~calib_metrics.functional.intervals.CalibrationResult` of
    1-D bins, drawn at ``confidence`` with ``norm``), with a :class:`ZeroWidthWarning` at
    the user's line where its interval has zero width (:func:`has_zero_width`), naming
    the pure bin behind it and the true frequencies its labels leave open (module
    docstring). One host synchronisation; one more where it warns. NaN ends (no
    interval, warned of as such) and batched bins are left alone.

    Example:
        >>> import warnings
        >>> from calib_metrics.functional.intervals import CalibrationResult
        >>> t = torch.tensor
        >>> bins = Bins(t([0.4, 0.9]), t([0.0, 0.9]), t([10.0, 990.0]))
        >>> result = CalibrationResult(t(0.4), t(0.4), t(0.0), t(0.4), t(0.4), bins)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = warn_if_zero_width(result, "max", 0.95)
        >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
        the max-norm interval has zero width: its worst bin's 10 labels are all 0, and the
        draws hold a bin's frequency where its labels put it; 10 labels of 0 are consistent
        with a true frequency up to 0.31 (95%, exact Clopper-Pearson)
    """
    bins = result.bins
    if bins.count.dim() != 1 or result.lower.dim() != 0:
        return result
    low, high = torch.stack([result.lower.double(), result.upper.double()]).tolist()
    if has_zero_width(low, high):
        kind = getattr(result, "kind", None)  # IntervalKind, where the result carries it
        grouped = kind is not None and kind.interval == "groups"
        text = _zero_width_text(bins, norm, confidence, grouped, (low, high))
        warn_at_caller(text, category=ZeroWidthWarning)
    return result


def has_zero_width(low: float, high: float, scale: float = 0.0) -> bool:
    """Whether the interval [``low``, ``high``] is a point: its width within a trillionth
    of its larger end (or of ``scale``, the errors a difference was taken of, where
    larger), as draws all equal give it under the normal form too, whose ends are a few
    ulps apart ([0.24905003011226640, 0.24905003011226673] had not been said). NaN ends
    are not.

    Example:
        >>> has_zero_width(0.2490500301122664, 0.24905003011226673), has_zero_width(0.0, 0.0)
        (True, True)
        >>> has_zero_width(0.249, 0.2490001), has_zero_width(float("nan"), float("nan"))
        (False, False)
    """
    return high - low <= _RELATIVE_WIDTH * max(abs(low), abs(high), scale)


def warn_if_comparison_zero_width(
    result: ComparisonResult, norm: str, confidence: float, grouped: bool
) -> None:
    """A :class:`ZeroWidthWarning` at the user's line where a comparison's ``result``
    (drawn at ``confidence`` with ``norm``; over ``grouped`` units) holds an interval of
    zero width: a model's (its pure bin named, as :func:`warn_if_zero_width` does), and
    the difference's, whose draws then all gave one difference, so that its p-value
    (0 or 1) is no evidence; not where the difference is 0 in every draw and both
    models' intervals have width (a model compared with itself). One host
    synchronisation; one more for each model it names.

    Example:
        >>> import warnings
        >>> from types import SimpleNamespace
        >>> from calib_metrics.functional.intervals import CalibrationResult
        >>> t = torch.tensor
        >>> bins = Bins(t([0.4, 0.9]), t([0.0, 0.9]), t([10.0, 990.0]))
        >>> a = CalibrationResult(t(0.4), t(0.4), t(0.0), t(0.4), t(0.4), bins)
        >>> b = a._replace(lower=t(0.3))
        >>> comparison = SimpleNamespace(
        ...     a=a, b=b, difference=t(0.0), lower=t(0.0), upper=t(0.1), p_value=t(1.0))
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_if_comparison_zero_width(comparison, "max", 0.95, grouped=False)
        >>> print(caught[0].message)  # doctest: +ELLIPSIS
        model a: the max-norm interval has zero width: its worst bin's 10 labels are all 0, ...
    """
    a, b = result.a, result.b
    if a.bins.count.dim() != 1 or a.lower.dim() != 0:
        return
    fields = (a.lower, a.upper, b.lower, b.upper, result.lower, result.upper)
    fields += (result.difference, result.p_value)
    values = torch.stack([value.double() for value in fields]).tolist()
    said = [
        _zero_width_text(model.bins, norm, confidence, grouped, tuple(values[2 * k : 2 * k + 2]))
        if has_zero_width(*values[2 * k : 2 * k + 2])
        else None
        for k, model in enumerate((a, b))
    ]
    if said[0] is not None and said[0] == said[1]:
        parts = [f"models a and b: {said[0]}"]
    else:
        parts = [f"model {name}: {text}" for name, text in zip("ab", said) if text is not None]
    difference, p_value = values[6:]
    scale = max(abs(value) for value in values[:4])  # the difference cancels their digits
    if has_zero_width(*values[4:6], scale) and (parts or difference != 0):
        parts.append(
            "the interval of the difference has zero width: its draws all gave one "
            f"difference, so its p-value ({p_value:g}) is not to be trusted"
        )
    if parts:
        warn_at_caller("; ".join(parts), category=ZeroWidthWarning)


def _zero_width_text(
    bins: Bins, norm: str, confidence: float, grouped: bool = False, ends: tuple = (0.0, 1.0)
) -> str:
    """Why the interval of ``bins`` (ending at ``ends``) is a point: its worst bin (max
    norm) or its bins all pure (one host read: the bins' three fields together); else
    draws all clipped at 0, a level too low to hold any spread, or draws all equal. Pure
    bins beside mixed ones spread the draws, so they are not named then (19 of 54 had
    been, for a level of 1e-300). The bound counts labels, so over groups (``grouped``)
    it is said to hold if they are independent."""
    pred_mean, freq, count = torch.stack(
        [bins.pred_mean.double(), bins.freq.double(), bins.count.double()]
    ).cpu()
    filled = count > 0
    pure = filled & ((freq == 0) | (freq == 1))
    holding = "and the draws hold a bin's frequency where its labels put it"
    if norm == "max":
        gap = torch.where(filled, (pred_mean - freq).abs(), -1.0)
        worst = int(gap.argmax())
        if bool(pure[worst]):
            n, label = count[worst].item(), int(freq[worst].item())
            return (
                f"the max-norm interval has zero width: its worst bin's {_count(n)} labels are "
                f"all {label}, {holding}; {_consistent(n, label, confidence, grouped)}"
            )
    if not bool(pure[filled].all()):
        return _other_cause(ends, confidence)
    smallest = int(torch.where(pure, count, torch.inf).argmin())
    n, label = count[smallest].item(), int(freq[smallest].item())
    consistent = _consistent(n, label, confidence, grouped)
    return (
        f"the interval has zero width: {int(pure.sum())} of its {int(filled.sum())} bins hold "
        f"labels all 0 or all 1, {holding}; in the smallest, {consistent}"
    )


# Below this level the normal form's z (1.25 z at c, for small c) leaves an interval
# narrower than the relative width taken as none.
_POINT_LEVEL = 1e-9


def _other_cause(ends: tuple, confidence: float) -> str:
    """Why an interval of bins not all pure is a point: the draws at both its ends
    clipped at 0 (a debiased error's square below its noise correction), a level too low
    to hold any of the draws' spread, or else the draws at its ends equal. It says what
    the ends show, not every draw: a percentile interval's ends are two of its draws (at
    the level 0.05, a sixth of the draws above 0 had been called "every draw gave 0").

    Example:
        >>> _other_cause((0.0, 0.0), 0.95).split(": ")[1].split(" (")[0]
        'the draws at both its ends gave 0'
        >>> _other_cause((0.03, 0.03), 1e-300).split(": ")[1]
        "its level, 1e-298%, holds none of the draws' spread"
    """
    if ends == (0.0, 0.0):
        return (
            "the interval has zero width: the draws at both its ends gave 0 (their debiased "
            "squared gaps fell below their noise correction, and the error is clipped at 0), "
            "so the draws say only that the error is near 0: measure more pairs, or more "
            "draws (n_samples) if they were few"
        )
    if confidence < _POINT_LEVEL:
        return (
            f"the interval has zero width: its level, {100 * confidence:.10g}%, holds none "
            "of the draws' spread: ask for a level such as 0.95"
        )
    return "the interval has zero width: the draws at both its ends gave one error"


def _count(n: float) -> str:
    """A bin's count of labels: with thousands separators where whole ("1,234,567"; 1.23457e+06
    had been said), else as it is (a weighted or tie-shared count).

    Example:
        >>> _count(1234567.0), _count(2.5)
        ('1,234,567', '2.5')
    """
    return f"{int(n):,}" if float(n).is_integer() else f"{n:g}"


def _consistent(n: float, label: int, confidence: float, grouped: bool = False) -> str:
    """The true frequencies that ``n`` labels all equal to ``label`` leave open: the end
    of the exact (Clopper-Pearson) interval at ``confidence``, to two significant digits
    of its distance from ``label``, rounded outward (up for an upper bound, down for a
    lower one, so the range said holds the exact one); of ``grouped`` labels, if they
    are independent.

    Example:
        >>> print(_consistent(10, 1, 0.95))  # doctest: +NORMALIZE_WHITESPACE
        10 labels of 1 are consistent with a true frequency down to 0.69
        (95%, exact Clopper-Pearson)
        >>> _consistent(5000, 0, 0.95).split(" (")[0][-13:]
        'up to 0.00074'
        >>> _consistent(12, 1, 0.95, grouped=True).split("frequency ")[1]  # 0.735…
        'down to 0.73 (95%, exact Clopper-Pearson, if the labels are independent)'
    """
    far = 1 - ((1 - confidence) / 2) ** (1 / n)
    decimals = max(2, 1 - math.floor(math.log10(far)))
    step = Decimal(1).scaleb(-decimals)
    if label == 0:
        bound = f"up to {Decimal(far).quantize(step, rounding=ROUND_CEILING):f}"
    else:
        bound = f"down to {Decimal(1 - far).quantize(step, rounding=ROUND_FLOOR):f}"
    level = f"{100 * float(confidence):.10g}%"
    independent = ", if the labels are independent" if grouped else ""
    return (
        f"{_count(n)} labels of {label} are consistent with a true frequency {bound} "
        f"({level}, exact Clopper-Pearson{independent})"
    )
