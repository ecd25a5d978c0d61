"""The warning of an interval of zero width, whose draws all gave one error.

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
[0, 1 − (α/2)^(1/n)], n labels of 1 in [(α/2)^(1/n), 1].
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from calib_metrics.functional.binning import Bins
from calib_metrics.functional.errors import CountedWarning, warn_at_caller

if TYPE_CHECKING:  # intervals imports this module
    from calib_metrics.functional.intervals import CalibrationResult


class ZeroWidthWarning(CountedWarning):
    """An interval of zero width (:mod:`calib_metrics.functional.zero_width`); its text
    counts a bin's labels, so a metric says it once, as its other counted warnings."""


def warn_if_zero_width(
    result: CalibrationResult, norm: str, confidence: float
) -> CalibrationResult:
    """``result`` (a :class:`~calib_metrics.functional.intervals.CalibrationResult` of
    1-D bins, drawn at ``confidence`` with ``norm``), with a :class:`ZeroWidthWarning` at
    the user's line where its interval has zero width, naming the pure bin behind it and
    the true frequencies its labels leave open (module docstring). One host
    synchronisation; one more where it warns. NaN ends (no interval, warned of as such)
    and batched bins are left alone.

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
    if low == high:  # not NaN ends: no interval, said by its own warning
        warn_at_caller(_zero_width_text(bins, norm, confidence), category=ZeroWidthWarning)
    return result


def _zero_width_text(bins: Bins, norm: str, confidence: float) -> str:
    """Why the interval of ``bins`` is a point: its worst bin (max norm) or its pure bins."""
    count, freq = bins.count.double().cpu(), bins.freq.double().cpu()
    filled = count > 0
    pure = filled & ((freq == 0) | (freq == 1))
    holding = "and the draws hold a bin's frequency where its labels put it"
    if norm == "max":
        gap = torch.where(filled, (bins.pred_mean.double().cpu() - freq).abs(), -1.0)
        worst = int(gap.argmax())
        if bool(pure[worst]):
            n, label = count[worst].item(), int(freq[worst].item())
            return (
                f"the max-norm interval has zero width: its worst bin's {n:g} labels are all "
                f"{label}, {holding}; {_consistent(n, label, confidence)}"
            )
    if not bool(pure.any()):
        return "the interval has zero width: its draws all gave one error"
    smallest = int(torch.where(pure, count, torch.inf).argmin())
    n, label = count[smallest].item(), int(freq[smallest].item())
    return (
        f"the interval has zero width: {int(pure.sum())} of its {int(filled.sum())} bins hold "
        f"labels all 0 or all 1, {holding}; in the smallest, {_consistent(n, label, confidence)}"
    )


def _consistent(n: float, label: int, confidence: float) -> str:
    """The true frequencies that ``n`` labels all equal to ``label`` leave open: the end
    of the exact (Clopper-Pearson) interval at ``confidence``, to two significant
    digits of its distance from ``label``.

    Example:
        >>> print(_consistent(10, 1, 0.95))  # doctest: +NORMALIZE_WHITESPACE
        10 labels of 1 are consistent with a true frequency down to 0.69
        (95%, exact Clopper-Pearson)
        >>> _consistent(5000, 0, 0.95).split(" (")[0][-13:]
        'up to 0.00074'
    """
    far = 1 - ((1 - confidence) / 2) ** (1 / n)
    decimals = max(2, 1 - math.floor(math.log10(far)))
    bound = f"up to {far:.{decimals}f}" if label == 0 else f"down to {1 - far:.{decimals}f}"
    level = f"{100 * float(confidence):.10g}%"
    return (
        f"{n:g} labels of {label} are consistent with a true frequency {bound} "
        f"({level}, exact Clopper-Pearson)"
    )
