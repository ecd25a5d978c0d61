"""The smooth calibration curve and its band on a reliability diagram, drawn only where
predictions lie: between two clusters of q they break off rather than join the runs.
"""

from __future__ import annotations

import math

from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D

from calib_metrics.functional.smooth import SmoothCurve
from calib_metrics.plot._arguments import _numbers
from calib_metrics.plot._legend_place import SMOOTH
from calib_metrics.plot._probability_axis import _ProbabilityAxis
from calib_metrics.wording import level_text


def _draw_smooth(
    ax: Axes, smooth: SmoothCurve, axis: _ProbabilityAxis, color: str, name: str | None = None
) -> tuple[Line2D, PolyCollection | None]:
    """The smooth curve where the predictions' density is not negligible, with its band
    (named at the level it was drawn for, not the diagram's; their legend entries after
    ``name``, the model's label, when given). Where no prediction lies
    (density <= 1e-3: between two clusters of q, say) curve and band break off, rather
    than a straight segment joining the runs on either side. The curve's line and the
    band (None where its ends are NaN: too few units to resample), for callers that
    name them their own way."""
    grid, density = _numbers(smooth.grid), _numbers(smooth.density)
    values = [_numbers(v) for v in (smooth.curve, smooth.lower, smooth.upper)]
    drawn = _on_axis(grid, axis)
    keep = [
        i
        for i, (t, d) in enumerate(zip(drawn, density))
        if t is not None and d > 1e-3 and not math.isnan(values[0][i])
    ]
    t, curve, lower, upper = _runs([drawn, *values], keep)
    sigma, error = smooth.bandwidth.item(), smooth.error.item()
    prefix = f"{name}: " if name else ""
    band = None
    if any(not math.isnan(v) for v in lower + upper):
        # Too few pairs or groups to resample leave the band's ends NaN: no band is drawn,
        # and none is named (the legend had named one beside an empty plot).
        band = ax.fill_between(
            t,
            lower,
            upper,
            color=color,
            alpha=0.18,
            linewidth=0,
            label=f"{prefix}{band_label(smooth.confidence)}",
        )
    (line,) = ax.plot(
        t,
        curve,
        color=color,
        linewidth=1.6,
        alpha=0.8,
        label=f"{prefix}smooth curve (smECE {error:.4f}, σ {sigma:.3f})",
        gid=SMOOTH,
    )
    return line, band


def band_label(confidence: float) -> str:
    """What the band is in a legend: a band of the curve smoothed at σ, which near 0 and 1
    need not hold the diagonal even for a calibrated model (it had read "95% pointwise
    bootstrap band", as if of the calibration curve itself).

    Example:
        >>> band_label(0.95)
        '95% band of the σ-smoothed curve'
    """
    return f"{level_text(confidence)} band of the σ-smoothed curve"


def _on_axis(grid: list[float], axis: _ProbabilityAxis) -> list[float | None]:
    """Where each grid point is drawn: at itself on the axis; the nearest point past
    either end of a logit axis (whose ends are ε and 1 − ε) at that end; None for the
    points farther out. Dropping every point past the ends had left a confident model's
    curve stopping at its first grid point inside (0.005 with 200 points) while 29% of
    its pairs lay beyond; the curve varies by a grid step's worth across that gap.

    Example:
        >>> from calib_metrics.plot._probability_axis import _ProbabilityAxis
        >>> axis = _ProbabilityAxis("logit", [0.001, 0.999])
        >>> axis.lo, axis.hi
        (0.0001, 0.9999)
        >>> _on_axis([0.0, 0.00005, 0.5, 1.0], axis)
        [None, 0.0001, 0.5, 0.9999]
    """
    below = [i for i, t in enumerate(grid) if t < axis.lo]
    above = [i for i, t in enumerate(grid) if t > axis.hi]
    ends = {}
    if below and axis.lo not in grid:  # a point at the end itself needs no stand-in
        ends[below[-1]] = axis.lo
    if above and axis.hi not in grid:
        ends[above[0]] = axis.hi
    return [ends.get(i, t if axis.lo <= t <= axis.hi else None) for i, t in enumerate(grid)]


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
