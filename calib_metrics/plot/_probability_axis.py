"""The probability axis of a reliability diagram: linear, or logit when the pairs pile
up near 0 and 1 (``xscale="auto"``), with its ticks, margins and the slices the pairs
are counted in.
"""

from __future__ import annotations

import math

from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

#: ``xscale="auto"`` draws logit axes when more than END_SHARE of the pairs lie in bins
#: whose mean is within END of 0 or 1.
END, END_SHARE = 0.05, 0.5


#: The reliability diagram counts pairs in this many equal slices of its x axis.
N_SLICES = 20


def _pick_scale(xscale: str, q: list[float], n: list[float]) -> tuple[str, str]:
    """The scale to draw, and the title's note when ``"auto"`` picked logit."""
    if xscale not in ("linear", "logit", "auto"):
        raise ValueError(f"xscale must be 'linear', 'logit' or 'auto', got {xscale!r}")
    if xscale != "auto":
        return xscale, ""
    share = _end_share(q, n)
    if share > END_SHARE:
        return "logit", f"logit axes (auto): {share:.0%} of pairs in bins within {END:g} of 0 or 1"
    return "linear", ""


def _end_share(q: list[float], n: list[float]) -> float:
    """The share of the pairs ``n`` in bins whose mean ``q`` is within END of 0 or 1."""
    near = sum(ni for qi, ni in zip(q, n) if min(qi, 1 - qi) < END)
    return near / max(sum(n), 1e-300)


class _ProbabilityAxis:
    """The x axis: [0, 1] drawn linearly, or logit over [ε, 1 − ε] with q clipped there.

    ε is a power of ten below every bin mean's distance to the nearer end (within
    [1e-6, 1e-2]), so the logit axis shows every bin, or the logit axis' ``ends`` where
    given. The y axis stays linear on [0, 1]: vertical gaps are the absolute gaps that the
    calibration error adds up.
    """

    def __init__(
        self, scale: str, values: list[float], ends: tuple[float, float] | None = None
    ) -> None:
        self.scale = scale
        self.lo, self.hi = 0.0, 1.0
        if scale == "logit" and ends is not None:
            self.lo, self.hi = ends
        elif scale == "logit":
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
