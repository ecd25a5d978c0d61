"""One x axis for reliability diagrams drawn side by side (before and after, model a and
model b): each diagram's own ``xscale="auto"`` had drawn one panel logit beside a linear
one, or two logit panels of ranges 1e-6 and 1e-4 from the ends, whose shapes and count
bars then read unlike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.plot._probability_axis import _pick_scale, _ProbabilityAxis
from calib_metrics.plot._reliability import _bin_marks


class SharedXAxis(NamedTuple):
    """The ``xscale`` and ``logit_range`` to give each of the diagrams, and ``note``, the
    words their titles carry when the shared axis is logit ("" when it is linear)."""

    xscale: str
    logit_range: tuple[float, float] | None
    note: str


def shared_x_axis(results: Sequence[CalibrationResult]) -> SharedXAxis:
    """The x axis of reliability diagrams of ``results`` drawn side by side: logit when
    ``xscale="auto"`` would draw any one of them logit (more than half of its pairs in
    bins whose mean is within 0.05 of 0 or 1), over one range that shows every bin of
    every one of them; linear otherwise. Pass ``xscale`` and ``logit_range`` to each
    :func:`reliability_diagram`, and add ``note`` to each title.

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
        >>> axis.xscale, axis.note
        ('logit', 'logit x axes (auto, for both panels)')
        >>> fig = Figure(figsize=(9, 4.5))
        >>> for ax, r in zip(fig.subplots(1, 2), (sharp, soft)):
        ...     _ = reliability_diagram(r, ax, title=axis.note, xscale=axis.xscale,
        ...                             logit_range=axis.logit_range)
        >>> fig.axes[0].get_xlim() == fig.axes[1].get_xlim() == axis.logit_range
        True
    """
    marks = [_bin_marks(_checked(result).bins) for result in results]
    if not marks:
        raise ValueError("shared_x_axis needs at least one result")
    scales = {_pick_scale("auto", q, n)[0] for q, _, n, _ in marks}
    if "logit" not in scales:
        return SharedXAxis("linear", None, "")
    axis = _ProbabilityAxis("logit", [q for m in marks for q in m[0]])
    return SharedXAxis("logit", (axis.lo, axis.hi), _note(len(marks)))


def _note(panels: int) -> str:
    if panels == 1:
        return "logit x axis (auto)"
    return f"logit x axes (auto, for {'both' if panels == 2 else f'all {panels}'} panels)"


def _checked(result: CalibrationResult) -> CalibrationResult:
    if not isinstance(result, CalibrationResult):
        raise ValueError(
            "shared_x_axis takes CalibrationResults (what calibration_error_ci returns), "
            f"got {type(result).__name__}"
        )
    return result
