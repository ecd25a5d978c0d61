"""One x axis for reliability diagrams drawn side by side (before and after, model a and
model b): each diagram's own ``xscale="auto"`` had drawn one panel logit beside a linear
one, or two logit panels of ranges 1e-6 and 1e-4 from the ends, whose shapes and count
bars then read unlike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.plot._probability_axis import END, _end_share, _pick_scale, _ProbabilityAxis
from calib_metrics.plot._reliability import _bin_marks, _refuse_pooled_classes


class SharedXAxis(NamedTuple):
    """The ``xscale`` and ``logit_range`` to give each of the diagrams, and ``shares``, the
    share of each one's pairs in bins near the ends, which its title names when the shared
    axis is logit (as ``xscale="auto"`` would have)."""

    xscale: str
    logit_range: tuple[float, float] | None
    shares: tuple[float, ...]

    def note(self, index: int) -> str:
        """The ``index``-th diagram's title note: "" when the shared axis is linear."""
        if self.xscale == "linear":
            return ""
        return f"logit axes (auto, shared): {self.shares[index]:.0%} of {_NEAR}"

    def title(self, head: str, index: int) -> str:
        """``head``, with the ``index``-th diagram's note on a line of its own below it."""
        return "\n".join(filter(None, [head, self.note(index)]))

    @property
    def overlay_note(self) -> str:
        """The note of one axes that overlays all the diagrams ("" when linear)."""
        if self.xscale == "linear":
            return ""
        return f"logit axes (auto): up to {max(self.shares):.0%} of a model's {_NEAR}"


_NEAR = f"pairs in bins within {END:g} of 0 or 1"


def shared_x_axis(results: Iterable[CalibrationResult]) -> SharedXAxis:
    """The x axis of reliability diagrams of ``results`` (a list, or any other iterable)
    drawn side by side: logit when ``xscale="auto"`` would draw any one of them logit
    (more than half of its pairs in bins whose mean is within 0.05 of 0 or 1), over one
    range that shows every bin of every one of them; linear otherwise. Pass ``xscale``
    and ``logit_range`` to each :func:`reliability_diagram`, and title each with
    :meth:`SharedXAxis.title` (which says the axis is shared, and how many of that
    diagram's pairs lie near the ends).

    Example:
        >>> import torch
        >>> from matplotlib.figure import Figure
        >>> from calib_metrics.functional import calibration_error_ci
        >>> from calib_metrics.plot import reliability_diagram
        >>> s = torch.randn(2000, generator=torch.Generator().manual_seed(0))
        >>> y = torch.bernoulli(torch.sigmoid(s), generator=torch.Generator().manual_seed(1))
        >>> sharp, soft = (calibration_error_ci(torch.sigmoid(k * s), y, n_samples=20)
        ...                for k in (8.0, 0.5))
        >>> axis = shared_x_axis([sharp, soft])
        >>> axis.xscale, axis.note(1)
        ('logit', 'logit axes (auto, shared): 0% of pairs in bins within 0.05 of 0 or 1')
        >>> fig = Figure(figsize=(9, 4.5))
        >>> for i, (ax, r) in enumerate(zip(fig.subplots(1, 2), (sharp, soft))):
        ...     _ = reliability_diagram(r, ax, title=axis.title("model", i),
        ...                             xscale=axis.xscale, logit_range=axis.logit_range)
        >>> fig.axes[0].get_xlim() == fig.axes[1].get_xlim() == axis.logit_range
        True
    """
    marks = [_bin_marks(result.bins) for result in _checked(results)]
    shares = tuple(_end_share(q, n) for q, _, n, _ in marks)
    if all(_pick_scale("auto", q, n)[0] == "linear" for q, _, n, _ in marks):
        return SharedXAxis("linear", None, shares)
    axis = _ProbabilityAxis("logit", [q for m in marks for q in m[0]])
    return SharedXAxis("logit", (axis.lo, axis.hi), shares)


def _checked(results: Iterable[CalibrationResult]) -> list[CalibrationResult]:
    """``results`` as a list, taken from any iterable (a generator, ``dict.values()``)
    but a str and one CalibrationResult, which is a tuple: a diagram per field."""
    if isinstance(results, CalibrationResult):
        raise ValueError(
            "shared_x_axis takes a sequence of CalibrationResults, got one CalibrationResult: "
            "pass [result]"
        )
    if isinstance(results, Mapping):  # its keys, the names, had been refused as strs
        raise ValueError(
            "shared_x_axis takes a sequence of CalibrationResults, got a mapping: pass its "
            ".values()"
        )
    if isinstance(results, str) or not isinstance(results, Iterable):
        raise ValueError(
            "shared_x_axis takes a sequence of CalibrationResults (what calibration_error_ci "
            f"returns), got one {type(results).__name__}"
        )
    results = list(results)
    if not results:
        raise ValueError("shared_x_axis needs at least one result")
    for result in results:
        if not isinstance(result, CalibrationResult):
            raise ValueError(
                "shared_x_axis takes CalibrationResults (what calibration_error_ci returns), "
                f"got {type(result).__name__}"
            )
        _refuse_pooled_classes(result.bins)
    return results
