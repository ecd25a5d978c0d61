"""One pipeline of resampled draws for the calibration error's interval: paper | pairs | groups.

**The pipeline.** The bins are formed once, on the data. A *draw generator* then yields
blocks of resampled bins (:class:`~calib_metrics.functional.binning.Bins` with a leading
draw dimension; the bootstraps draw at most ``_BLOCK`` cells at once, so memory stays
bounded, and yield them in slices of at most ``_SLICE`` cells); one
reduction, :func:`bin_errors` (the l2, l1 or max norm of the weighted bin gaps, or the
debiased square :func:`debiased_square`), turns the data's bins into the estimate and
every draw's bins into that draw's error; :func:`draw_statistics` collects the draws and
:func:`interval_of_draws` summarises them (mean, std, and the normal ``centre ∓ z·std``
or percentile interval) into a :class:`CalibrationResult`. The three generators:

* ``interval="paper"``, :func:`paper_draws` (the paper's Algorithm 2): per bin
  p̂ᵢ⁽ˢ⁾ ~ Normal(p̂ᵢ, p̂ᵢ(1 − p̂ᵢ)/|Bᵢ|) clipped to [0, 1], counts and mean predictions
  fixed. The interval is over the draws' own errors, centred on their mean (Algorithm 2's
  ``mean ∓ z·std``). The draws are made in float32: their rounding (~1e-7 relative) is far
  below the Monte Carlo noise (~1/√S) and it halves the time and memory of this step.
* ``interval="pairs"``, :func:`pair_draws`: the Poisson bootstrap over pairs. Each unit
  is copied Poisson(1) times (the number of units varies slightly from draw to draw,
  which leaves the variance of means unchanged to first order and makes draws
  independent across bins). Within a bin the copies of its n₁ pairs with y = 1 and its
  n₀ pairs with y = 0 sum to Poisson(n₁) and Poisson(n₀) exactly, so a draw needs only
  the bins, O(S·T) for S draws and T bins whatever N; the bin's mean prediction is held
  fixed (its bootstrap spread, that of q inside one bin over √n, is negligible next to
  that of the frequency). A tie group that a bin boundary cuts is drawn once and shared
  over its bins as the tie rule counts it, and every draw's debiased square uses the
  data's effective sample sizes (n_eff/n times the draw's count), so a draw's tied bins
  are exactly as noisy as the estimator assumes (:mod:`calib_metrics.functional.ties`).
* ``interval="groups"``, :func:`group_draws`: the Poisson bootstrap over whole groups
  (``groups=`` gives each pair a sentence or document id). Per (group, bin) cell the sums
  of 1, q and y form a sparse [3T, G] matrix (:func:`group_sum_matrix`), and a block of
  draws is that matrix times Poisson(1) group weights [G, S], so labels correlated
  inside a group move together. Pairs are the special case of one pair per group; a
  paired comparison of two models multiplies both models' matrices by the same weights.

**Estimators.** With ``debias=False`` a bootstrap interval is the draws' quantiles
(``method="percentile"``) or error ∓ z·std (``"normal"``). Both inherit the plug-in's
upward bias (≈ Σᵢ wᵢ p̂ᵢ(1 − p̂ᵢ)/|Bᵢ| in the square) and add it again, since each draw is
noisier than the data it came from.

With ``debias=True`` the bootstrap interval is built for θ = Σᵢ wᵢ (q̂ᵢ − pᵢ)² (the
squared error that the debiased estimate D estimates without bias) from a *recentred*
bootstrap: the draws are made in a world whose gaps are the observed ones shrunk by
λ = √(D₊ / P) (P the plug-in square), so its θ̃ = Σ wᵢ (λ gᵢ)² equals D₊ = max(D, 0), and
each draw's debiased estimate D* is compared with that known θ̃ (a drawn bin of fewer
than two effective pairs, which cannot estimate its own label noise, subtracts the
world's known p̂(1 − p̂)/n_eff instead). The root L* = D* − θ̃
imitates D − θ, including the extra bias that correlated labels leave in D when their
groups are not given (their within-bin variance is larger than p̂(1 − p̂)/(n − 1)
assumes; with ``groups=`` the noise term is each bin's cluster-robust variance instead,
:mod:`calib_metrics.functional.clusters`, and D is unbiased). The draws θ_s = D − L*_s
then give the interval: their quantiles (``"percentile"``, the basic bootstrap) or
their mean ∓ z·std (``"normal"``; the mean, D − mean(L*), is D up to the draws'
Monte-Carlo error, about std/√n_samples), each end clipped at 0 and square-rooted. Algorithm 2 with
``debias=True`` simply uses each draw's debiased error.

**Which world, pairs or groups.** The spread of L* comes mostly from its linear term
2 Σ wᵢ gᵢ eᵢ*, so it is only right if the world's gaps carry the true gaps' weight. For
independent pairs the shrink λ above does that in expectation (the observed gaps'
squares exceed the true ones by the same noise that D removes). When labels are
correlated within groups, the group effects move every bin's error together and the
linear term's spread no longer shrinks with the noise: the shrunk world then understates
it (by 19% at a small true error in ``benchmarks/coverage_diagnostics.py``), while the
unshrunk world matches a world built from the true gaps to within 10%. So the group
bootstrap uses the observed gaps (λ = 1), the conservative choice: on weakly correlated
groups it over-covers at a small true error rather than under-covering on strongly
correlated ones (``docs/coverage.md``).

**Pure bins.** A bin whose labels all agree keeps its frequency (0 or 1) in every draw
of every generator, so an error that such bins decide (the max norm's worst bin; with
``"paper"``'s fixed counts, any norm's bins all pure) draws one value and the interval
has zero width: :mod:`calib_metrics.functional.zero_width` warns of it (the draws stay
as the coverage tables measured them).

**Covering zero.** A calibration error is never negative, so both ends are clipped at
0. When the true error is exactly 0 a two-sided interval clipped this way covers it
unless its lower end is positive: it misses in one tail only, so its coverage there is
1 − α/2 (0.975 at 95%), not 1 − α. ``docs/coverage.md`` shows this on calibrated data.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Literal, NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import (
    Bins,
    _check_pairs,
    bin_index,
    bin_ties,
    bin_unplaced,
    check_bins,
    check_ids,
)
from calib_metrics.functional.clusters import grouped_bins
from calib_metrics.functional.errors import check_flag, check_generator, check_int, warn_at_caller
from calib_metrics.functional.ties import (
    CutCells,
    bin_parts,
    cut_cells,
    effective_counts,
    neighbour_run_gaps,
    tie_run_counts,
    tie_runs,
)
from calib_metrics.functional.zero_width import warn_if_zero_width

# Fewer resampling units than this give no interval and no p-value: a bootstrap over a
# handful of items puts a tenth or more of its mass on one item, and with one item every
# draw is the same (a zero-width interval, p = 0).
MIN_UNITS = 10
#: The most draws an interval takes (``n_samples``). More would only add time and
#: memory, nothing of use: the ends of an interval from 10⁶ draws are already Monte
#: Carlo-exact to ±0.0005 of their level, while every draw's error is kept until the
#: interval is summarised (8 bytes a draw, several times that in the summary's
#: temporaries), so a typo's 10¹² draws could only run out of time or memory.
MAX_DRAWS = 10**7
#: What the normal form's ends (``method="normal"``) are, in the words of every
#: description of them (the command's ``--method`` help, :func:`calibration_error_ci`'s
#: and the metric's docstrings, the README); :func:`interval_of_draws` computes them. The
#: debiased bootstrap's m and s are not the result's ``mean`` and ``std`` (those are of
#: the draws' roots), so its ends cannot be rebuilt from them.
NORMAL_ENDS = (
    "for Algorithm 2 (interval paper), the draws' mean ∓ z·std; for the plug-in "
    "bootstrap (no debias), the error ∓ z·std of the draws; for the debiased bootstrap, "
    "√(m ∓ z·s), m and s the mean and std of the draws' recentred squares, not the "
    "reported mean and std of their roots (the upper end widened by −D where the "
    "debiased square D is negative); ends clipped at 0"
)

__all__ = [
    "MAX_DRAWS",
    "NORMAL_ENDS",
    "CalibrationResult",
    "Draws",
    "bin_errors",
    "bin_index",
    "compact_units",
    "debiased_square",
    "draw_statistics",
    "drawn_norm",
    "drawn_samples",
    "effective_samples",
    "group_bootstrap",
    "group_draws",
    "group_sum_matrix",
    "interval_kind",
    "interval_of_draws",
    "normal_quantile",
    "pair_bootstrap",
    "pair_draws",
    "paper_draws",
    "resampled_interval",
    "tie_run_counts",
    "tie_runs",
    "weighted_mean",
    "without_interval_if_few",
]

Interval = Literal["paper", "pairs", "groups"]
Norm = Literal["l1", "l2", "max"]
# Each generator's blocks hold at most this many cells (draws × bins, or draws × units).
_BLOCK = 1 << 22
# A block is drawn at once (its random calls fixed by its shape) but yielded in slices of
# at most this many cells, so the reductions' temporaries stay in cache and memory holds
# one block's draws plus a few slices, not several full-block temporaries.
_SLICE = 1 << 17
# The world each interval's draws are compared with (see the module docstring).
# "items": the pair bootstrap of multiclass one-vs-rest pairs, an item's C pairs drawn
# together (calib_metrics.functional.calibration.item_pairs_interval).
_WORLD = {"paper": "draws", "pairs": "shrunk", "groups": "observed", "items": "shrunk"}


class CalibrationResult(NamedTuple):
    """Calibration error with its sampled interval and its bins: the one result type.

    Attributes:
        error: the point estimate (Algorithm 1, plug-in or debiased), 0-dim float64.
        mean: mean of the draws' errors (:attr:`Draws.errors`). A debiased bootstrap
            draw's error is its recentred square θ_s clipped at 0 and square-rooted, so
            where the debiased square D is negative, and with it most θ_s, ``mean`` and
            ``std`` are 0 or near it while ``upper`` is not: the interval is taken from
            the unclipped θ_s, its upper end widened by −D (:func:`interval_of_draws`).
            The plug-in bootstraps and Algorithm 2: the draws' own errors. Classwise:
            the classes' means averaged.
        std: standard deviation of the same errors: not the spread a debiased normal
            interval is drawn with (the θ_s').
        lower: lower end of the interval.
        upper: upper end of the interval.
        bins: the :class:`~calib_metrics.functional.binning.Bins` behind the estimate.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400, 400]))
        >>> r = pair_bootstrap(bins, n_samples=1000, generator=torch.Generator().manual_seed(0))
        >>> round(r.error.item(), 3), bool(r.lower < r.error < r.upper), r.bins.count.tolist()
        (0.1, True, [400.0, 400.0])
    """

    error: Tensor
    mean: Tensor
    std: Tensor
    lower: Tensor
    upper: Tensor
    bins: Bins

    def __repr__(self) -> str:
        """One line: the numbers, and the bins counted (printed in full, a result of 121
        bins had filled some 45 lines, its error lost at the top).

        Example:
            >>> import torch
            >>> t = torch.tensor
            >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
            >>> r = CalibrationResult(t(0.1), t(0.1), t(0.01), t(0.08), t(0.12), bins)
            >>> head, tail = repr(r).split(", mean=")
            >>> head
            'CalibrationResult(error=0.1000, lower=0.0800, upper=0.1200'
            >>> tail
            '0.1000, std=0.0100, bins=<2 bins, 800 pairs>)'
        """
        numbers = ", ".join(
            f"{name}={summary(getattr(self, name))}"
            for name in ("error", "lower", "upper", "mean", "std")
        )
        # CalibrationResult for a drawn result too: the subclass only holds the kind.
        return f"CalibrationResult({numbers}, bins={bins_summary(self.bins)})"


class IntervalKind(NamedTuple):
    """How a result's interval was drawn: what a diagram's title names
    (:func:`~calib_metrics.plot.reliability_diagram`). ``interval`` is what was
    resampled (``"paper"``, ``"pairs"``, ``"groups"``, or a comparison's ``"items"``),
    ``method`` the interval's form, ``"normal"`` or ``"percentile"`` (None: not known, as
    in a kind saved before it was kept)."""

    confidence: float
    interval: str
    debias: bool
    method: str | None = None


class _DrawnResult(CalibrationResult):
    """A :class:`CalibrationResult` that knows its interval's kind (``kind``), its error's
    ``norm`` and its number of draws (``n_samples``): a subclass, since a NamedTuple's
    instances hold no attributes. ``_replace`` gives one without them."""


def interval_kind(result: object) -> IntervalKind | None:
    """The kind of ``result``'s interval where it carries it (the results of
    :func:`resampled_interval`: ``calibration_error_ci``'s, the bootstraps', a metric's),
    else None (a result made by hand, averaged over classes, or without an interval).

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> r = pair_bootstrap(bins, n_samples=100, confidence=0.9, debias=True)
        >>> interval_kind(r)
        IntervalKind(confidence=0.9, interval='pairs', debias=True, method='percentile')
        >>> interval_kind(r._replace(lower=r.upper)) is None
        True
    """
    return getattr(result, "kind", None)


def drawn_norm(result: object) -> str | None:
    """The norm of ``result``'s error where it carries it (as :func:`interval_kind`: a
    result of :func:`resampled_interval` or of a comparison), else None (a result made by
    hand, averaged over classes, or saved before 2026-12-02, which kept no norm).

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> r = pair_bootstrap(bins, n_samples=100, norm="l1")
        >>> drawn_norm(r), drawn_samples(r), drawn_norm(r._replace(lower=r.upper))
        ('l1', 100, None)
    """
    return getattr(result, "norm", None)


def drawn_samples(result: object) -> int | None:
    """The number of draws behind ``result``'s interval where it carries it (as
    :func:`drawn_norm`), else None: what bounds a comparison's p-value of 0 (p < 2/S)."""
    return getattr(result, "n_samples", None)


def summary(value: object, digits: str = ".4f") -> str:
    """A number of a result as its one-line repr shows it: a one-element tensor's value,
    or the shape of a larger one.

    Example:
        >>> summary(torch.tensor(0.12345)), summary(torch.zeros(3))
        ('0.1235', 'tensor of shape [3]')
    """
    if isinstance(value, Tensor):
        if value.numel() != 1:
            return f"tensor of shape {list(value.shape)}"
        value = value.item()
    return format(value, digits) if isinstance(value, float) else repr(value)


def bins_summary(bins: object) -> str:
    """``<121 bins, 4000 pairs>``: the bins of a result, counted; a classwise average's
    say whose they are, ``<176 bins of 4 classes, 8000 pairs>`` (each class's own bins,
    sorted together by mean: they had read as one binning of 8000 pairs).

    Example:
        >>> from calib_metrics.functional.multiclass import average_results
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> bins_summary(bins)
        '<2 bins, 800 pairs>'
        >>> r = CalibrationResult(t(0.1), t(0.1), t(0.01), t(0.08), t(0.12), bins)
        >>> bins_summary(average_results([r, r]).bins)
        '<4 bins of 2 classes, 1600 pairs>'
    """
    count = getattr(bins, "count", None)
    if not isinstance(count, Tensor):
        return repr(bins)
    pairs = count.sum().item()
    pairs = int(pairs) if float(pairs).is_integer() else round(pairs, 2)
    classes = getattr(bins, "classes", 1)
    whose = f" of {classes} classes" if classes > 1 else ""
    return f"<{count.shape[-1]} bins{whose}, {pairs} pairs>"


def check_confidence(confidence: float) -> None:
    """Raise ValueError unless ``confidence`` is a number strictly between 0 and 1, a Python
    float or int. A NumPy or tensor scalar in (0, 1) is named with the level to write
    ("must be a number in (0, 1), got np.float32(0.9)" had contradicted itself, and its
    float() is 0.8999999762, a level figures print as 89.99999762%).

    Example:
        >>> import numpy as np
        >>> check_confidence(np.float32(0.9))
        Traceback (most recent call last):
        ...
        ValueError: confidence must be a Python float in (0, 1), got np.float32(0.9): write ...
    """
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        level = decimal_level(confidence)
        if level is not None and 0 < level < 1:
            raise ValueError(
                f"confidence must be a Python float in (0, 1), got {confidence!r}: write "
                f"the level as a float, confidence={level!r}"
            )
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def decimal_level(value: object) -> float | None:
    """A real NumPy or tensor scalar as the decimal it prints as (float32 0.9 as 0.9, not
    0.8999999762), else None. NumPy is read by its duck type: this layer imports torch
    alone."""
    if isinstance(value, torch.Tensor):
        if value.ndim or value.is_complex() or value.is_meta or value.dtype == torch.bool:
            return None
        value = value.detach().float().cpu().numpy()[()]
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind not in ("f", "i", "u") or getattr(value, "ndim", None) != 0:
        return None
    return float(str(value))


def check_draws(n_samples: int) -> None:
    """Raise ValueError unless ``n_samples`` draws lie in [2, :data:`MAX_DRAWS`]: the one
    bound of every resampling in the library (intervals, p-values, smooth curves' bands).

    Below 2 it says "at least 2", as the commands' draw options do (it had said "an
    integer >= 2" and they "at least 2").

    Example:
        >>> check_draws(1)
        Traceback (most recent call last):
        ...
        ValueError: n_samples must be at least 2, got 1
        >>> check_draws(10**12)
        Traceback (most recent call last):
        ...
        ValueError: n_samples must be at most 10,000,000, got 1,000,000,000,000
    """
    if isinstance(n_samples, int) and not isinstance(n_samples, bool) and n_samples < 2:
        raise ValueError(f"n_samples must be at least 2, got {n_samples}")
    check_int("n_samples", n_samples, 2)  # another type (a float, a bool) is refused as such
    if n_samples > MAX_DRAWS:
        raise ValueError(f"n_samples must be at most {MAX_DRAWS:,}, got {n_samples:,}")


def check_draw_options(
    n_samples: int,
    confidence: float,
    method: str,
    norm: str = "l2",
    debias: bool = False,
    generator: torch.Generator | None = None,
) -> None:
    """Raise ValueError naming the first bad option of a resampled interval:
    ``n_samples`` must lie in [2, :data:`MAX_DRAWS`].

    Example:
        >>> check_draw_options(1, 0.95, "normal")
        Traceback (most recent call last):
        ...
        ValueError: n_samples must be at least 2, got 1
        >>> check_draw_options(10**12, 0.95, "normal")
        Traceback (most recent call last):
        ...
        ValueError: n_samples must be at most 10,000,000, got 1,000,000,000,000
    """
    check_draws(n_samples)
    check_confidence(confidence)
    if method not in ("normal", "percentile"):
        raise ValueError(f"method must be 'normal' or 'percentile', got {method!r}")
    if norm not in ("l1", "l2", "max"):
        raise ValueError(f"norm must be 'l1', 'l2' or 'max', got {norm!r}")
    check_flag("debias", debias)
    check_generator(generator)


def normal_quantile(confidence: float) -> float:
    """z with P(|Z| < z) = confidence for a standard normal Z (1.96 for 0.95).

    Example:
        >>> round(normal_quantile(0.95), 2), round(normal_quantile(0.9999999999999999), 2)
        (1.96, 8.29)
    """
    check_confidence(confidence)
    # A number: on the host whatever torch's default device is (a GPU's had synchronised).
    # From the lower tail, (1 - c) / 2, which keeps every digit of a level near 1: the
    # upper, (1 + c) / 2, rounds to 1.0 at c = 1 - 2**-53, and z had been inf.
    tail = torch.tensor((1 - confidence) / 2, dtype=torch.float64, device="cpu")
    # 0.0 minus, not negation: a level below about 1e-17 has z = 0, which had been -0.0
    # and printed as "±-0.00".
    return 0.0 - float(torch.special.ndtri(tail))


# --- The one reduction: weighted bin gaps to an error -------------------------------


def weighted_mean(values: Tensor, count: Tensor) -> Tensor:
    """Σᵢ wᵢ valuesᵢ along the last dimension, wᵢ = countᵢ / Σ count (in values' dtype).

    Weights shared by every draw (1-D ``count`` under ``[S, T]`` values) are one matrix
    product; per-draw weights are multiplied elementwise.

    Example:
        >>> import torch
        >>> weighted_mean(torch.tensor([0.5, 1.0]), torch.tensor([3.0, 1.0]))
        tensor(0.6250)
    """
    weight = (count / count.sum(dim=-1, keepdim=True)).to(values.dtype)
    if weight.ndim == 1 and values.ndim > 1:
        return values @ weight
    if not _holds_result(weight, values):
        return (weight * values).sum(dim=-1)
    return weight.mul_(values).sum(dim=-1)  # weight is this call's own tensor


def _holds_result(out: Tensor, other: Tensor) -> bool:
    """Whether ``out op other`` fits in ``out`` (shape and dtype), so that it may be done
    in place. Plain Python: ``torch.broadcast_shapes`` imports sympy (0.3-0.5 s) on the
    first call of a process."""
    if other.ndim > out.ndim or torch.result_type(out, other) != out.dtype:
        return False
    return all(b in (1, a) for a, b in zip(reversed(out.shape), reversed(other.shape)))


def debiased_square(
    gap: Tensor,
    freq: Tensor,
    count: Tensor,
    samples: Tensor | None = None,
    unplaced: Tensor | None = None,
    known: Tensor | None = None,
) -> Tensor:
    """Σᵢ wᵢ [gapᵢ² − p̂ᵢ(1 − p̂ᵢ)/(n_eff,ᵢ − 1)] along the last dimension (unclipped).

    ``samples``: each bin's effective sample size n_eff (:func:`effective_samples`),
    the number of independent labels that its frequency p̂ is as noisy as. A bin whose
    boundaries cut no tie group has n_eff = n, its count. One that meets a tie group
    cut by a boundary counts that group's part at the group's mean label (the tie rule),
    so Var p̂ = p(1 − p)·V/n² with V = Σ_g c_g²/N_g over the groups it meets (c_g of a
    group's N_g pairs in the bin; an untied pair is c = N = 1), and n_eff = n²/V ≥ n
    (:mod:`calib_metrics.functional.ties`). The term is unbiased for that variance:

        E[p̂(1 − p̂)] = E[p̂] − E[p̂²] = p − p² − p(1 − p)/n_eff = p(1 − p)(1 − 1/n_eff),

    so E[p̂(1 − p̂)/(n_eff − 1)] = p(1 − p)/n_eff = Var p̂, and E[(q̂ − p̂)²] − Var p̂ =
    (q̂ − p)². Without ``samples`` n_eff is the count summed over each run of adjacent
    bins with equal gap and frequency (:func:`~calib_metrics.functional.ties.tie_run_counts`:
    bins lying wholly inside one tie group; a bin holding a group's edge beside other
    values is not caught and over-subtracts).

    ``unplaced`` (bins of a streaming sketch,
    :func:`~calib_metrics.functional.binning.bin_unplaced`): each bin's label sum is known
    only in mean, n·p̂, with this variance U left open (the sketch shares a cut cell of
    several values at its mean label without knowing which pairs hold its ones). The
    square is then the expectation of the one that the labels in place would give,
    E[(q̂ − Y/n)²] = gap² + U/n² and E[Y/n·(1 − Y/n)] = p̂(1 − p̂) − U/n², i.e. the
    term above plus U/n²·(1 + 1/(n_eff − 1)): a bin of one pair from such a cell scores
    its label's expected plug-in square (q̂ − p̂)² + p̂(1 − p̂), as the exact mode's bin of
    one pair keeps its plug-in square.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> round(debiased_square(t([0.1, 0.0]), t([0.5, 0.5]), t([6.0, 6.0])).item(), 4)
        -0.045

        One tie group split into two bins of 6 is one sample of 12:

        >>> round(debiased_square(t([0.1, 0.1]), t([0.5, 0.5]), t([6.0, 6.0])).item(), 4)
        -0.0127

        A bin of one pair whose label is known only in mean (p̂ = 0.5, U = 0.25) scores its
        expected plug-in square, 0.1² + 0.25:

        >>> round(debiased_square(t([0.1]), t([0.5]), t([1.0]), unplaced=t([0.25])).item(), 4)
        0.26
    """
    if samples is None:
        samples = tie_run_counts(gap, freq, count)
    spread = (samples - 1).to(freq.dtype).clamp_min_(1)
    # In place on fresh tensors where the result fits them: the draws' blocks call this
    # on every slice.
    variance = torch.rsub(freq, 1).mul_(freq)
    variance = variance.div_(spread) if _holds_result(variance, spread) else variance / spread
    if known is not None:
        variance = _known_variance_below_two(variance, samples, known)
    square = gap.square()
    square = square.sub_(variance) if _holds_result(square, variance) else square - variance
    if unplaced is not None:
        square = square + unplaced / count.clamp_min(1) ** 2 * (1 + 1 / spread)
    return weighted_mean(square, count)


def _known_variance_below_two(variance: Tensor, samples: Tensor, known: Tensor) -> Tensor:
    """A draw's bins of fewer than two effective samples subtract the bootstrap world's
    known variance of their frequency, p(1 − p)/n_eff (``known``: the world's p), where
    no estimate is unbiased: a drawn bin of one pair had kept its whole label noise,
    every draw's square sat above its world's, and the recentred interval below the
    estimate (bins of 2: 0.016 with the interval [0, 0])."""
    few = samples < 2
    return torch.where(few, torch.rsub(known, 1).mul_(known) / samples.clamp_min(1), variance)


def effective_samples(bins: Bins) -> Tensor:
    """Each bin's effective sample size n_eff (:func:`debiased_square`): the one the bins
    carry when given group ids (:func:`~calib_metrics.functional.clusters.with_samples`:
    cluster-robust), else from the tie groups that the binning recorded as cut
    (:class:`~calib_metrics.functional.binning.TiedBins`), else (bare bins) the counts
    summed over runs of equal gap and frequency.

    Example:
        >>> import torch
        >>> from calib_metrics.functional.binning import adaptive_binning
        >>> q = torch.tensor([0.1, 0.2, 0.3, 0.3, 0.3, 0.4])
        >>> effective_samples(adaptive_binning(q, torch.tensor([0, 0, 1, 0, 1, 1]), 3))
        tensor([3.8571, 3.8571], dtype=torch.float64)
    """
    carried = getattr(bins, "samples", None)
    if carried is not None:
        return carried
    return effective_counts(bins.count, bin_ties(bins))


def bin_errors(
    bins: Bins,
    norm: Norm = "l2",
    debias: bool = False,
    samples: Tensor | None = None,
    unplaced: Tensor | None = None,
) -> Tensor:
    """The calibration error of bins along their last dimension: data's bins or draws'.

    ``norm``: ``"l2"`` √(Σ wᵢ gᵢ²), ``"l1"`` Σ wᵢ |gᵢ| or ``"max"`` maxᵢ |gᵢ| over the
    non-empty bins, gᵢ = q̂ᵢ − p̂ᵢ and wᵢ = |Bᵢ|/Σ|B|; ``debias=True`` (l2):
    √max(:func:`debiased_square`, 0) with the effective sample sizes ``samples``
    (default: :func:`effective_samples` of ``bins``) and the variance of the label sums
    that the bins leave open, ``unplaced`` (default: what ``bins`` carry,
    :func:`~calib_metrics.functional.binning.bin_unplaced`; a draw of a streaming
    sketch's bins carries none and is given the data's). Unchecked: see
    :func:`~calib_metrics.functional.calibration.error_from_bins`.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([[0.2, 0.8], [0.3, 0.8]]), t([0.1, 0.8]), t([5.0, 5.0]))
        >>> bin_errors(bins)
        tensor([0.0707, 0.1414])
    """
    gap = bins.pred_mean - bins.freq
    if debias:
        if samples is None:
            samples = effective_samples(bins)
        if unplaced is None:
            unplaced = bin_unplaced(bins)
        square = debiased_square(gap, bins.freq, bins.count, samples, unplaced)
        return square.clamp_min(0).sqrt()
    return _plugin_norm(gap, bins.count, norm)


def _plugin_norm(gap: Tensor, count: Tensor, norm: Norm) -> Tensor:
    """The plug-in error of gaps weighted by counts (:func:`bin_errors`); ``gap`` is the
    caller's own tensor: squared (or made absolute) in place."""
    if norm == "l2":
        return weighted_mean(gap.square_(), count).sqrt()
    if norm == "l1":
        return weighted_mean(gap.abs_(), count)
    return torch.where(count > 0, gap.abs_(), 0).amax(dim=-1)


# --- The three draw generators: blocks of resampled bins [S_b, ..., T] ---------------


def _block_sizes(n_samples: int, cells_per_draw: int) -> Iterator[int]:
    """Sizes of the blocks of ``n_samples`` draws, each at most ``_BLOCK`` cells."""
    per_block = max(1, _BLOCK // max(1, cells_per_draw))
    for start in range(0, n_samples, per_block):
        yield min(per_block, n_samples - start)


def _slices(n_draws: int, cells_per_draw: int) -> Iterator[slice]:
    """Row slices of a block of ``n_draws`` draws, each at most ``_SLICE`` cells."""
    per_slice = max(1, _SLICE // max(1, cells_per_draw))
    for start in range(0, n_draws, per_slice):
        yield slice(start, min(start + per_slice, n_draws))


def paper_draws(
    bins: Bins,
    n_samples: int,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
) -> Iterator[Bins]:
    """Algorithm 2's draws: per bin p̂ᵢ⁽ˢ⁾ ~ Normal(p̂ᵢ, p̂ᵢ(1 − p̂ᵢ)/|Bᵢ|) clipped to [0, 1].

    Frequencies are drawn in ``dtype``, float32 by default (see the module docstring);
    mean predictions and counts stay those of ``bins``, which may carry leading batch
    dimensions.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> block = next(paper_draws(bins, 5, torch.Generator().manual_seed(0)))
        >>> block.freq.shape, block.freq.dtype
        (torch.Size([5, 2]), torch.float32)
    """
    check_generator(generator, bins.freq.device)
    freq = bins.freq.to(dtype)
    pred = bins.pred_mean.to(dtype)
    # An empty bin weighs nothing, but its spread 0/0 would make every draw NaN.
    variance = torch.where(bins.count > 0, bins.freq * (1 - bins.freq) / bins.count, 0)
    se = variance.sqrt().to(dtype)
    for size in _block_sizes(n_samples, bins.freq.numel()):
        noise = torch.randn(
            (size, *freq.shape), generator=generator, device=freq.device, dtype=dtype
        )
        yield Bins(pred, noise.mul_(se).add_(freq).clamp_(0, 1), bins.count)


def pair_draws(
    bins: Bins, n_samples: int, generator: torch.Generator | None = None
) -> Iterator[Bins]:
    """The Poisson bootstrap over pairs, from the 1-D bins alone (see the module docstring).

    A bin's untied pairs are drawn per bin; the ones and zeros of a tie group that a
    boundary cuts (:func:`~calib_metrics.functional.binning.bin_ties`) are drawn once for
    the group and shared out over its bins as the tie rule counts them (c of its N pairs
    in a bin: c/N of its draws), so every bin the group meets moves with the group's
    mean label, as the estimator's n_eff assumes. Bins no group straddles draw exactly
    as untied bins always did. Two host synchronisations per call (whether any group is
    cut; whether the drawn counts are sure to be whole in float32).

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> block = next(pair_draws(bins, 5, torch.Generator().manual_seed(0)))
        >>> block.count.shape, block.freq.shape
        (torch.Size([5, 2]), torch.Size([5, 2]))
    """
    check_generator(generator, bins.count.device)
    ones, zeros, share = _draw_units(bins)
    n_bins = bins.count.shape[-1]
    compact = _compact_dtype(ones)
    for size in _block_sizes(n_samples, ones.numel()):
        n1 = torch.poisson(_block_rates(ones, size), generator=generator).to(compact)
        n0 = torch.poisson(_block_rates(zeros, size), generator=generator)
        for rows in _slices(size, ones.numel()):
            ones_s = _shared_out(n1[rows].to(n0.dtype), n_bins, share)
            count = _shared_out(n0[rows], n_bins, share).add_(ones_s)
            yield Bins(bins.pred_mean, ones_s.div_(count.clamp_min(1)), count)
        del n1, n0  # before the next block is drawn


def _block_rates(rates: Tensor, size: int) -> Tensor:
    """``rates`` repeated for a block of ``size`` draws. On the CPU a broadcast view, not a
    copy: its serial kernel draws the same values in the same order from either
    (tests/test_interval_draws_reference.py); elsewhere a copy, as the draws were made."""
    block = rates.expand(size, *rates.shape)
    return block if block.device.type == "cpu" else block.contiguous()


def _compact_dtype(rates: Tensor) -> torch.dtype:
    """The dtype to hold Poisson counts of ``rates`` in while the other block is drawn:
    float32 (half the memory) when every rate is below 2²³, so that a count reaching
    2²⁴, past which float32 skips integers, is a deviation of over 2²³ (√2²³ ≈ 2,900
    standard deviations): never. One host synchronisation."""
    if rates.dtype != torch.float64 or not rates.numel() or bool(rates.max() >= 2**23):
        return rates.dtype
    return torch.float32


def _draw_units(bins: Bins) -> tuple[Tensor, Tensor, tuple[Tensor, ...] | None]:
    """The rates of the units :func:`pair_draws` draws, ones and zeros (``[..., K]``):
    each bin's untied pairs, then (when a boundary cuts a group) one slot per boundary,
    holding the group that starts being cut there; and (each boundary's slot, each bin's
    weight of its lower group, of its upper group) (None without cuts)."""
    count, cuts = bins.count, bin_ties(bins)
    parts = bin_parts(count, cuts)
    low_w = torch.where(parts.low > 0, parts.low / parts.low_size.clamp_min(1), 0)
    high = (parts.high > 0) & ~parts.whole
    high_w = torch.where(high, parts.high / parts.high_size.clamp_min(1), 0)
    own_count = count - parts.low - torch.where(high, parts.high, 0)
    tied_ones = low_w * parts.low_ones + high_w * parts.high_ones
    own_ones = torch.minimum((count * bins.freq - tied_ones).clamp_(min=0), own_count)
    own_ones, own_count = torch.broadcast_tensors(own_ones, own_count)
    # A cut boundary starts a group unless the bin before it lies wholly inside the
    # group that the boundary before cuts; every cut boundary then reads its group from
    # the slot of the last start at or before it.
    starts = cuts.size > 0
    if not bool(starts.any()):  # host sync: untied bins draw as they always did
        return own_ones, own_count - own_ones, None
    starts[..., 1:] &= ~parts.whole
    place = torch.arange(starts.shape[-1], device=count.device)
    slot = torch.cummax(torch.where(starts, place, 0), -1).values
    g_ones = torch.where(starts, cuts.ones, 0)
    g_zeros = torch.where(starts, cuts.size - cuts.ones, 0)
    share = (slot, low_w, high_w)
    ones = torch.cat([own_ones, g_ones.expand_as(slot)], -1)
    zeros = torch.cat([own_count - own_ones, g_zeros.expand_as(slot)], -1)
    return ones, zeros, share


def _shared_out(drawn: Tensor, n_bins: int, share: tuple[Tensor, ...] | None) -> Tensor:
    """Per bin: its own drawn units plus its shares of its tie groups' drawn units."""
    own = drawn[..., :n_bins]
    if share is None:
        return own
    slot, low_w, high_w = share
    groups = drawn[..., n_bins:]
    # Bin t's lower group sits at boundary t's slot, its upper one at boundary t + 1's:
    # one gather of the boundaries' groups serves both.
    taken = groups.gather(-1, slot.expand(*groups.shape[:-1], -1))
    return (taken[..., :-1] * low_w).add_(own).add_(taken[..., 1:] * high_w)


def bins_of_sums(count: Tensor, sum_q: Tensor, sum_y: Tensor) -> Bins:
    """Bins of per-bin sums, empty bins kept (mean prediction and frequency 0 there)."""
    safe = count.clamp_min(1)
    return Bins(sum_q / safe, sum_y / safe, count)


def group_sum_matrix(group: Tensor, index: Tensor, n_bins: int, n_groups: int, values) -> Tensor:
    """Sparse CSR ``[V·T, G]``: row v·T + t holds, per group, the sum of ``values[v]`` over
    the group's pairs in bin t.

    ``group`` holds compact ids in [0, G) and ``index`` each pair's bin in [0, T), both
    flat and aligned with every tensor of ``values``. Cells are keyed bin-major, so the
    sorted unique keys are already in CSR order and no COO conversion (a second sort)
    is needed; the V row blocks share one sparsity pattern.

    Example:
        >>> import torch
        >>> m = group_sum_matrix(
        ...     torch.tensor([0, 0, 1]), torch.tensor([0, 1, 1]), 2, 2, [torch.ones(3)]
        ... )
        >>> m.to_dense()
        tensor([[1., 0.],
                [1., 1.]], dtype=torch.float64)
    """
    device = index.device
    cell, cell_of_pair = torch.unique(index * n_groups + group, return_inverse=True)
    nnz = cell.numel()
    per_bin = torch.bincount(cell // n_groups, minlength=n_bins)
    starts = torch.cumsum(per_bin, 0) - per_bin
    crow = torch.cat(
        [starts + v * nnz for v in range(len(values))]
        + [torch.tensor([len(values) * nnz], device=device)]
    )
    sums = [
        torch.zeros(nnz, dtype=torch.float64, device=device).index_add_(
            0, cell_of_pair, v.to(torch.float64)
        )
        for v in values
    ]
    with warnings.catch_warnings():
        # CSR is "beta" in torch but its product with a dense matrix is the fastest path.
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
        # Torch 2.11 warns of skipped invariant checks even when told to skip them; the
        # rows are built sorted and in range above.
        warnings.filterwarnings("ignore", "Sparse invariant checks are implicitly disabled")
        return torch.sparse_csr_tensor(
            crow,
            (cell % n_groups).repeat(len(values)),
            torch.cat(sums),
            (len(values) * n_bins, n_groups),
            check_invariants=False,
            device=device,  # torch's default device otherwise (torch.set_default_device)
        )


class UnitSums(NamedTuple):
    """Per-unit bin sums (count, Σq, Σy) that :func:`group_draws` reweights, factored so
    that a tie group cut over several bins costs its units once, not once per bin.

    Attributes:
        direct: sparse ``[3T, G]``: the pairs whose tie group lies in one bin (untied
            pairs included), per unit and bin (:func:`group_sum_matrix`).
        cut: sparse ``[3K, G]``: the pairs of each of the K groups that bin boundaries
            cut, per unit and group; None when no group is cut.
        shares: sparse ``[T, K]``: group k's share c_kt/N_k of bin t (the tie rule).
    """

    direct: Tensor
    cut: Tensor | None
    shares: Tensor | None

    @property
    def rows(self) -> int:
        """3T, the rows of one draw block's sums."""
        return self.direct.shape[0]

    def times(self, weights: Tensor) -> Tensor:
        """The ``[3T, S]`` bin sums of unit weights ``[G, S]``."""
        n_bins = self.rows // 3
        total = torch.sparse.mm(self.direct, weights)
        if self.cut is not None:
            per_group = torch.sparse.mm(self.cut, weights)
            n_cut = per_group.shape[0] // 3
            for v in range(3):
                part = per_group[v * n_cut : (v + 1) * n_cut]
                total[v * n_bins : (v + 1) * n_bins] += torch.sparse.mm(self.shares, part)
        return total

    def to_dense(self) -> Tensor:
        """The ``[3T, G]`` matrix of the sums, expanded (for inspection: T·G entries)."""
        n_units = self.direct.shape[1]
        return self.times(torch.eye(n_units, dtype=torch.float64, device=self.direct.device))


def unit_sum_matrix(
    probs: Tensor,
    target: Tensor,
    units: Tensor,
    index: Tensor,
    n_bins: int,
    n_units: int,
    cells: CutCells | None = None,
) -> UnitSums:
    """The per-unit bin sums (count, Σq, Σy) that :func:`group_draws` reweights
    (:class:`UnitSums`); ``units`` are compact ids in [0, G), ``index`` each pair's bin.
    A tied pair is shared over its tie group's bins in proportion to the group's pairs in
    each, so every draw gives those bins the group's reweighted mean label, as the tie
    rule and n_eff count them (``cells``: the cut tie groups,
    :func:`~calib_metrics.functional.ties.cut_cells`, if already found). Memory is linear
    in the pairs (a group cut over many bins is summed per unit once). The host
    synchronises for the sizes that :func:`~calib_metrics.functional.ties.cut_cells` finds.

    Example:
        A group of three at 0.5 split 1/2 between bins 0 and 1, one unit:

        >>> import torch
        >>> sums = unit_sum_matrix(torch.tensor([0.1, 0.5, 0.5, 0.5]),
        ...                        torch.tensor([0, 1, 0, 1]), torch.zeros(4, dtype=torch.long),
        ...                        torch.tensor([0, 0, 1, 1]), 2, 1)
        >>> reweighted_bins(sums, torch.ones(1, 1, dtype=torch.float64)).count.tolist()
        [[2.0, 2.0]]
    """
    cells = cut_cells(probs, index, n_bins) if cells is None else cells
    ones = torch.ones_like(probs, dtype=torch.float64)
    values = [ones, probs, target]
    kept = ~cells.cut_pair
    direct = group_sum_matrix(units[kept], index[kept], n_bins, n_units, [v[kept] for v in values])
    n_cut = cells.group_size.numel()
    if n_cut == 0:
        return UnitSums(direct, None, None)
    cut_pair = cells.cut_pair
    cut_units, cut_groups = units[cut_pair], cells.group_of_pair[cut_pair]
    cut_values = [v[cut_pair] for v in values]
    cut = group_sum_matrix(cut_units, cut_groups, n_cut, n_units, cut_values)
    where = torch.stack([cells.cell_bin, cells.cell_group])
    shares = torch.sparse_coo_tensor(
        where, cells.share, (n_bins, n_cut), check_invariants=False, device=where.device
    )
    return UnitSums(direct, cut, shares.coalesce())


def unit_weights(
    n_units: int,
    n_samples: int,
    rows: int,
    generator: torch.Generator | None,
    device: torch.device,
    sizes: Tensor | None = None,
) -> Iterator[Tensor]:
    """Blocks of Poisson(1) weights ``[G, S_b]`` of ``n_units`` units, each block sized
    for sparse matrices of ``rows`` rows in all. With ``sizes`` (float64 ``[G]``), unit
    g stands for ``sizes[g]`` exchangeable units whose sums it holds: its weight is
    Poisson(sizes[g]) / sizes[g], their Poisson(1) weights' sum over their number."""
    check_generator(generator, device)
    for size in _block_sizes(n_samples, max(n_units, rows)):
        if sizes is None:
            rate = torch.ones((n_units, size), dtype=torch.float64, device=device)
        else:
            rate = sizes[:, None].expand(n_units, size)
        weights = torch.poisson(rate, generator=generator)
        del rate
        if sizes is not None:
            weights.div_(sizes[:, None])
        yield weights
        del weights
        _return_freed_pages(device)


def _return_freed_pages(device: torch.device) -> None:
    """Hand freed blocks' pages back to the system (CPU, glibc).

    A block is just under glibc's 32 MiB mmap ceiling, so once one is freed glibc
    serves the next from its heap, which it does not shrink while smaller tensors sit
    above them: ``compare_calibration`` of 10⁶ pairs with 2,000 draws had peaked at 9-14
    GB of resident memory for blocks of 31 MiB, one at a time (0.6 GB with this).
    """
    if device.type == "cpu" and (trim := _malloc_trim()) is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: its allocator returns memory itself
        return None


def reweighted_bins(sums: UnitSums, weights: Tensor) -> Bins:
    """Bins of one block of draws: :func:`unit_sum_matrix`'s sums times unit weights."""
    return _bins_of_totals(sums.times(weights).T)


def _bins_of_totals(total: Tensor) -> Bins:
    """Bins of draws' sums ``[S, 3T]``: counts, then Σq, then Σy."""
    n_bins = total.shape[-1] // 3
    return bins_of_sums(total[:, :n_bins], total[:, n_bins : 2 * n_bins], total[:, 2 * n_bins :])


def group_draws(
    probs: Tensor,
    target: Tensor,
    groups: Tensor,
    index: Tensor,
    n_bins: int,
    n_samples: int,
    generator: torch.Generator | None = None,
    cells: CutCells | None = None,
    n_groups: int | None = None,
) -> Iterator[Bins]:
    """The Poisson bootstrap over groups: flat aligned pairs, group ids and bin indices
    (``cells``: the cut tie groups, :func:`~calib_metrics.functional.ties.cut_cells`, if
    already found; ``n_groups``: given when ``groups`` are already compact ids in
    [0, n_groups), :func:`compact_units`).

    Example:
        >>> import torch
        >>> q, y = torch.tensor([0.1, 0.2, 0.8, 0.9]), torch.tensor([0, 1, 1, 1])
        >>> index, groups = torch.tensor([0, 0, 1, 1]), torch.tensor([5, 5, 7, 7])
        >>> block = next(group_draws(q, y, groups, index, 2, 3, torch.Generator().manual_seed(0)))
        >>> block.count.shape
        torch.Size([3, 2])
    """
    units, n_units = (groups, n_groups) if n_groups is not None else compact_units(groups)
    sums = unit_sum_matrix(probs, target, units, index, n_bins, n_units, cells)
    yield from _reweighted_draws(sums, n_samples, generator, probs.device)


def _reweighted_draws(
    sums: UnitSums,
    n_samples: int,
    generator: torch.Generator | None,
    device: torch.device,
    sizes: Tensor | None = None,
) -> Iterator[Bins]:
    """The draws of units' bin ``sums`` under Poisson weights (:func:`unit_weights`, its
    ``sizes``), in blocks of slices of bins."""
    n_units, n_bins = sums.direct.shape[1], sums.rows // 3
    for weights in unit_weights(n_units, n_samples, sums.rows, generator, device, sizes):
        total = sums.times(weights).T
        for rows in _slices(total.shape[0], n_bins):
            yield _bins_of_totals(total[rows])
        del total


def item_draws(
    probs: Tensor,
    target: Tensor,
    pairs_per_item: int,
    index: Tensor,
    n_bins: int,
    n_samples: int,
    generator: torch.Generator | None,
    cells: CutCells,
) -> Iterator[Bins]:
    """The Poisson bootstrap over items: flat aligned pairs whose every ``pairs_per_item``
    consecutive pairs are one item's (one-vs-rest pairs of ``[N, C]`` input), each item's
    pairs drawn together, with bin indices ``index`` and cut tie groups ``cells``. Items
    whose pairs lie in the same bins (or cut tie groups) with the same labels are drawn as
    one cell: Poisson(n) of its n items, which is what their n Poisson(1) weights add up
    to, its Σq reweighted at the cell's mean q (a bin's mean q moves by a cell's spread
    inside the bin only, which the pair bootstrap holds fixed altogether). With two
    classes an item's pairs are a pair and its mirror, so the cells are about the bins'
    number, not the items' (host syncs: the cells' number).

    Example:
        >>> import torch
        >>> from calib_metrics.functional.ties import cut_cells
        >>> q = torch.tensor([0.9, 0.1, 0.8, 0.2, 0.3, 0.7, 0.35, 0.65], dtype=torch.float64)
        >>> y = torch.tensor([1, 0, 1, 0, 0, 1, 0, 1])  # 4 items of 2 classes
        >>> index = torch.tensor([1, 0, 1, 0, 0, 1, 0, 1])
        >>> block = next(item_draws(q, y, 2, index, 2, 3, torch.Generator().manual_seed(0),
        ...                         cut_cells(q, index, 2)))
        >>> bool((block.count[:, 0] == block.count[:, 1]).all())  # each item in both bins
        True
    """
    slot = torch.where(cells.cut_pair, n_bins + cells.group_of_pair, index)
    labels = target.view(-1, pairs_per_item).to(slot.dtype)
    n_slots = n_bins + cells.group_size.numel()
    cell_of_item, size = _identical_items(slot.view(-1, pairs_per_item), labels, n_slots)
    units = cell_of_item.repeat_interleave(pairs_per_item)
    sums = unit_sum_matrix(probs, target, units, index, n_bins, size.numel(), cells)
    yield from _reweighted_draws(sums, n_samples, generator, probs.device, size.double())


def _identical_items(slot: Tensor, labels: Tensor, n_slots: int) -> tuple[Tensor, Tensor]:
    """Each item's cell id in [0, cells) and each cell's item count: items (rows of
    ``slot``, their pairs' bins or cut groups in [0, ``n_slots``), beside their 0/1
    ``labels``) whose slots and labels all agree share a cell, numbered in the
    lexicographic order of (slots, labels). The row is read as one integer key where it
    fits in int64: ``torch.unique(dim=0)`` sorts the rows column by column, about 20 times
    one sort of N keys (2.2 s at 10⁶ items of 2 classes on one CPU core)."""
    per_item = slot.shape[1]
    if per_item * (math.log2(max(n_slots, 2)) + 1) >= 62:
        pattern = torch.cat([slot, labels], 1)
        return torch.unique(pattern, dim=0, return_inverse=True, return_counts=True)[1:]
    key = torch.zeros_like(slot[:, 0])
    for digits, base in ((slot, n_slots), (labels, 2)):
        for column in digits.unbind(1):
            key = key * base + column
    return torch.unique(key, return_inverse=True, return_counts=True)[1:]


def compact_units(groups: Tensor) -> tuple[Tensor, int]:
    """Any integer group ids as flat compact ids in [0, G), and G (host sync: G).

    Example:
        >>> compact_units(torch.tensor([[7, 3], [7, 9]]))
        (tensor([1, 0, 1, 2]), 3)
    """
    units = torch.unique(groups.reshape(-1), return_inverse=True)[1]
    return units, int(units.max().item()) + 1 if units.numel() else 0


# What a count of pairs is of in the too-few warning, where each of several results counts
# one part's pairs (" per class", :func:`pairs_counted_per`); "" for the whole input.
_PAIRS_OF: ContextVar[str] = ContextVar("pairs_of", default="")


@contextlib.contextmanager
def pairs_counted_per(part: str) -> Iterator[None]:
    """Meanwhile, the too-few warning of :func:`without_interval_if_few` counts the pairs
    of one ``part`` ("2 pairs per class"): a classwise run's header counts all the pairs
    (N = 8 pairs of 2 items × 4 classes), against which "2 pairs" had read as a mistake.

    Example:
        >>> r = CalibrationResult(*torch.tensor([0.1, 0.1, 0.0, 0.1, 0.1]), None)
        >>> with warnings.catch_warnings(record=True) as caught, pairs_counted_per("class"):
        ...     warnings.simplefilter("always")
        ...     _ = without_interval_if_few(r, 2, "pair")
        >>> str(caught[0].message)[:41]
        'calibration_error_ci: 2 pairs per class; '
    """
    token = _PAIRS_OF.set(f" per {part}")
    try:
        yield
    finally:
        _PAIRS_OF.reset(token)


def without_interval_if_few(result: CalibrationResult, n_units: int, unit: str):
    """``result`` with NaN mean, std and ends, and a warning, when fewer than
    ``MIN_UNITS`` units (pairs or groups, named by ``unit``) were resampled: a bootstrap
    over a handful of units is no interval (with one unit every draw is the data, a
    zero-width "interval" that can exclude the estimate).

    Example:
        >>> import warnings
        >>> r = CalibrationResult(*torch.tensor([0.1, 0.1, 0.0, 0.1, 0.1]), None)
        >>> with warnings.catch_warnings(record=True):
        ...     warnings.simplefilter("always")
        ...     without_interval_if_few(r, 1, "pair").lower
        tensor(nan)
    """
    if n_units >= MIN_UNITS:
        return result
    of = _PAIRS_OF.get() if unit == "pair" else ""
    warn_at_caller(
        f"calibration_error_ci: {n_units} {unit}{'s' * (n_units != 1)}{of}; at least "
        f"{MIN_UNITS} are needed for an interval, so its ends are NaN (the error stands)"
    )
    return without_interval(result)


def without_interval(result: CalibrationResult) -> CalibrationResult:
    """``result`` with NaN mean, std and ends: the error of a resampling too small to
    give an interval.

    Example:
        >>> r = without_interval(CalibrationResult(*torch.tensor([0.1, 0.1, 0.0, 0.1, 0.1]), None))
        >>> r.error, r.lower, r.upper
        (tensor(0.1000), tensor(nan), tensor(nan))
    """
    nan = torch.full_like(result.error, float("nan"))
    return result._replace(mean=nan, std=nan, lower=nan, upper=nan)


# --- From draws to the interval: one set of statistics, one summary ------------------


class Draws(NamedTuple):
    """Per-draw statistics of one generator's draws, draws along dimension 0.

    Attributes:
        errors: each draw's error (``mean`` and ``std`` of the result summarise them).
        values: what the interval is formed on: the errors, or the recentred squares
            θ_s = D − (D*_s − θ̃) of the debiased bootstrap (``squared``).
        centre: centre of the normal form: the data's plug-in error (plug-in
            bootstrap), or None for the values' mean (Algorithm 2, debiased bootstrap).
        estimate: the data's error (the result's ``error``).
        square: the data's debiased square D when ``values`` are recentred squares (the
            upper end is then widened by (−D)₊, both ends clipped at 0 and
            square-rooted); None otherwise.

    Leading batch dimensions of the bins are kept.
    """

    errors: Tensor
    values: Tensor
    centre: Tensor | None
    estimate: Tensor
    square: Tensor | None


def draw_statistics(
    bins: Bins,
    blocks: Iterable[Bins],
    *,
    norm: Norm = "l2",
    debias: bool = True,
    world: Literal["draws", "shrunk", "observed", "zero", "neighbours"] = "shrunk",
) -> Draws:
    """Reduce blocks of resampled bins ``[S_b, ..., T]`` to per-draw statistics.

    ``world``: ``"draws"`` (Algorithm 2: each draw's own error, centred on their mean),
    ``"shrunk"`` (pairs: the recentred world of the observed gaps shrunk to the debiased
    estimate), ``"observed"`` (groups: the observed gaps themselves) or ``"zero"`` (every
    gap 0: only the draws' noise, the quadratic part of the others' roots, which a paired
    comparison needs, :mod:`calib_metrics.functional.comparison`) or ``"neighbours"``
    (each bin's gap the mean of its neighbouring runs' gaps,
    :func:`~calib_metrics.functional.ties.neighbour_run_gaps`: the comparison's shrink
    factor); the bins may carry
    leading batch dimensions, which the blocks share. See the module docstring.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> g = torch.Generator().manual_seed(0)
        >>> d = draw_statistics(bins, pair_draws(bins, 100, g))
        >>> d.errors.shape, d.values.shape, round(d.estimate.item(), 3)
        (torch.Size([100]), torch.Size([100]), 0.098)
    """
    if debias and norm != "l2":
        raise ValueError(f"debias applies to norm='l2' only, got norm={norm!r}")
    if world == "neighbours" and bins.freq.dim() != 1:
        # Runs of adjacent bins are found along one axis: a batch would join its rows' runs.
        raise ValueError(
            f"world='neighbours' takes one model's 1-D bins, got shape {tuple(bins.freq.shape)}"
        )
    samples = effective_samples(bins) if debias else None
    estimate = bin_errors(bins, norm, debias, samples)
    # A draw's bin holds the data's bin's pairs reweighted, its tie groups' parts alike:
    # its effective sample size is its count times the data's bin's n_eff/n.
    ratio = samples / bins.count.clamp_min(1) if debias else None
    if world == "draws" or not debias:
        # Algorithm 2's draws are plain bins: the sketch's open label variance is the
        # data's (their squares had lacked it, and the interval sat below the exact one).
        unplaced = bin_unplaced(bins) if debias else None
        errors = [bin_errors(d, norm, debias, _draw_samples(d, ratio), unplaced) for d in blocks]
        errors = torch.cat(errors).to(torch.float64)
        return Draws(errors, errors, None if world == "draws" else estimate, estimate, None)
    square, theta = _recentred_squares(bins, blocks, world, samples, ratio)
    return Draws(theta.clamp_min(0).sqrt(), theta, None, estimate, square)


def _draw_samples(draw: Bins, ratio: Tensor | None) -> Tensor | None:
    """A draw's effective sample sizes: its counts times the data's n_eff/n per bin."""
    return None if ratio is None else draw.count * ratio


def _recentred_squares(
    bins: Bins, blocks: Iterable[Bins], world: str, samples: Tensor, ratio: Tensor
) -> tuple[Tensor, Tensor]:
    """The data's debiased square D and the draws' θ_s = D − (D*_s − θ̃) (module docstring)."""
    gap = bins.pred_mean - bins.freq
    square = debiased_square(gap, bins.freq, bins.count, samples, bin_unplaced(bins))
    world_gap, target_square = _world_gaps(bins, gap, square, world)
    thetas = []
    for d in blocks:
        # The draw's movement of each bin's gap, added to the world's gap (the pairs'
        # draws keep the data's mean predictions: their shift is zeros of [T] only).
        shifted = world_gap + (d.pred_mean - bins.pred_mean)
        moved = torch.sub(d.freq, bins.freq).neg_().add_(shifted)
        drawn = _draw_samples(d, ratio)
        redrawn = debiased_square(moved, d.freq, d.count, drawn, known=bins.freq)
        thetas.append(redrawn.sub_(target_square).neg_().add_(square))
    return square, torch.cat(thetas)


def _world_gaps(bins: Bins, gap: Tensor, square: Tensor, world: str) -> tuple[Tensor, Tensor]:
    """The world's gaps and its true square θ̃ = Σ wᵢ gapᵢ² (module docstring)."""
    if world == "neighbours":
        beside = neighbour_run_gaps(gap, bins.freq)
        return beside, weighted_mean(beside**2, bins.count)
    plugin = bin_errors(bins) ** 2
    # The world's gaps are λ·gap: shrunk, λ² = max(D, 0)/P so that θ̃ = max(D, 0);
    # observed, λ = 1 (θ̃ = P); zero, λ = 0 (θ̃ = 0).
    factor = torch.where(plugin > 0, square.clamp_min(0) / plugin, 0).sqrt()
    if world != "shrunk":
        factor = torch.full_like(factor, 1.0 if world == "observed" else 0.0)
    return factor.unsqueeze(-1) * gap, factor**2 * plugin


def _nan_mean_std(values: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and standard deviation along dimension 0, leaving NaN (empty draws) out."""
    valid = ~values.isnan()
    n = valid.sum(dim=0)
    mean = torch.where(valid, values, 0).sum(dim=0) / n.clamp_min(1)
    square = torch.where(valid, values - mean, 0).pow(2).sum(dim=0)
    return mean, (square / (n - 1).clamp_min(1)).sqrt()


def interval_of_draws(
    draws: Draws, *, confidence: float = 0.95, method: str = "percentile"
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(error, mean, std, lower, upper) of :func:`draw_statistics`' draws.

    Normal form: centre ∓ z·std of the values (the centre is their mean, or the data's
    plug-in error for the plug-in bootstraps; :data:`NORMAL_ENDS` says it per estimator);
    percentile form: their quantiles.
    Ends are clipped at 0; squared values (the debiased bootstrap) are square-rooted.
    A draw that gave every unit weight 0 is empty (NaN): it is left out, i.e. the
    bootstrap is conditioned on a non-empty draw (only likely with a handful of groups).

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> g = torch.Generator().manual_seed(0)
        >>> s = interval_of_draws(draw_statistics(bins, pair_draws(bins, 2000, g)))
        >>> bool(s[3] < s[0] < s[4]), round(s[0].item(), 3)
        (True, 0.098)
    """
    mean, std = _nan_mean_std(draws.errors)
    values = draws.values
    if method == "normal":
        middle, spread = _nan_mean_std(values)
        middle = middle if draws.centre is None else draws.centre
        z = normal_quantile(confidence)
        low, high = middle - z * spread, middle + z * spread
    else:
        tail = (1 - confidence) / 2
        levels = torch.tensor([tail, 1 - tail], dtype=values.dtype, device=values.device)
        low, high = torch.nanquantile(values, levels, dim=0)
    if draws.square is not None:
        # A negative debiased square is a sampling accident (the truth is ≥ 0): the upper
        # end is taken as if the estimate were 0, so it cannot collapse to a [0, 0]
        # interval that claims certainty (it did on ~10% of calibrated data sets).
        high = high + (-draws.square).clamp_min(0)
    low, high = low.clamp_min(0), high.clamp_min(0)
    if draws.square is not None:
        low, high = low.sqrt(), high.sqrt()
    return draws.estimate, mean, std, low, high


def resampled_interval(
    bins: Bins,
    blocks: Iterable[Bins],
    interval: Interval,
    *,
    confidence: float = 0.95,
    method: str = "percentile",
    norm: Norm = "l2",
    debias: bool = False,
) -> CalibrationResult:
    """The pipeline's last two steps: ``interval``'s draws of ``bins`` to a result, which
    carries its kind (:func:`interval_kind`).

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> draws = paper_draws(bins, 1000, torch.Generator().manual_seed(0))
        >>> r = resampled_interval(bins, draws, "paper", method="normal")
        >>> round(r.error.item(), 3), bool(r.lower < r.mean < r.upper)
        (0.1, True)
    """
    draws = draw_statistics(bins, blocks, norm=norm, debias=debias, world=_WORLD[interval])
    summary = interval_of_draws(draws, confidence=confidence, method=method)
    kind = IntervalKind(float(confidence), interval, bool(debias), method)
    return drawn_result(summary, bins, kind, norm, drawn_count(draws))


def drawn_result(
    summary: tuple,
    bins: Bins,
    kind: IntervalKind,
    norm: str | None = None,
    n_samples: int | None = None,
) -> CalibrationResult:
    """The result of :func:`interval_of_draws`' ``summary`` and ``bins``, carrying its
    interval's ``kind`` (:func:`interval_kind`), its error's ``norm`` and its number of
    draws, ``n_samples`` (:func:`drawn_norm`, :func:`drawn_samples`; None: not known),
    for the figures to name."""
    result = _DrawnResult(*summary, bins)
    result.kind = kind
    result.norm = norm
    result.n_samples = n_samples
    return result


def drawn_count(draws: Draws) -> int:
    """How many draws ``draws`` holds (along dimension 0)."""
    return int(draws.errors.shape[0])


def pair_bootstrap(
    bins: Bins,
    *,
    n_samples: int = 10000,
    confidence: float = 0.95,
    method: str = "percentile",
    norm: Norm = "l2",
    debias: bool = False,
    generator: torch.Generator | None = None,
) -> CalibrationResult:
    """Interval of the calibration error by the Poisson bootstrap over pairs.

    Needs only the bins (exact Poisson counts per bin and label; see the module
    docstring), so it also serves the streaming metric.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> s = pair_bootstrap(bins, n_samples=2000, generator=torch.Generator().manual_seed(0))
        >>> bool(s.lower < s.error < s.upper)
        True
    """
    check_draw_options(n_samples, confidence, method, norm, debias, generator)
    bins = check_bins(bins)
    blocks = pair_draws(bins, n_samples, generator)
    options = {"confidence": confidence, "method": method, "norm": norm, "debias": debias}
    result = resampled_interval(bins, blocks, "pairs", **options)
    return warn_if_zero_width(result, norm, confidence)


def group_bootstrap(
    probs: Tensor,
    target: Tensor,
    groups: Tensor,
    bins: Bins,
    index: Tensor,
    *,
    n_samples: int = 10000,
    confidence: float = 0.95,
    method: str = "percentile",
    norm: Norm = "l2",
    debias: bool = False,
    generator: torch.Generator | None = None,
) -> CalibrationResult:
    """Interval of the calibration error by the Poisson bootstrap over groups.

    ``probs``, ``target``, ``groups`` and ``index`` (each pair's bin, from
    :func:`bin_index`) are flat and aligned; ``bins`` are the bins of the data.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> probs = torch.rand(2000, generator=g, dtype=torch.float64)
        >>> target = torch.bernoulli(probs, generator=g)
        >>> groups = torch.arange(2000) // 10
        >>> from calib_metrics.functional.calibration import compute_bins
        >>> bins = compute_bins(probs, target, bin_size=200)
        >>> index = bin_index(probs, target, bin_size=200)
        >>> s = group_bootstrap(
        ...     probs, target, groups, bins, index, n_samples=500, debias=True, generator=g
        ... )
        >>> bool(s.lower <= s.error <= s.upper), s.lower.item()
        (True, 0.0)
    """
    check_draw_options(n_samples, confidence, method, norm, debias, generator)
    probs, target = _check_pairs(probs, target)
    groups = check_ids(groups, probs)
    bins = check_bins(bins)
    index = _check_bin_index(index, probs, bins.count.numel())
    probs = probs.to(torch.float64)
    # The cut tie groups, found once for the debias term and the draws.
    cells = cut_cells(probs.reshape(-1), index.reshape(-1), bins.count.numel())
    if debias:
        bins = grouped_bins(probs, target, groups, index, bins, cells)
    n_bins = bins.count.numel()
    blocks = group_draws(probs, target, groups, index, n_bins, n_samples, generator, cells)
    options = {"confidence": confidence, "method": method, "norm": norm, "debias": debias}
    result = resampled_interval(bins, blocks, "groups", **options)
    return warn_if_zero_width(result, norm, confidence)


def _check_bin_index(index: Tensor, probs: Tensor, n_bins: int) -> Tensor:
    """Each pair's bin, flat: integers in [0, n_bins), one per pair. One host synchronisation."""
    index = check_ids(index, probs, what="index")
    if index.numel() and not bool(((index >= 0) & (index < n_bins)).all()):
        raise ValueError(
            f"index must hold bin numbers in [0, {n_bins}) for the {n_bins} bins given, "
            f"got values in [{index.min().item()}, {index.max().item()}]"
        )
    return index


def _summarize_draws(
    bins: Bins,
    blocks: Iterable[tuple[Tensor, Tensor, Tensor]],
    *,
    confidence: float = 0.95,
    method: str = "percentile",
    norm: Norm = "l2",
    debias: bool = False,
    shrink: bool = True,
) -> CalibrationResult:
    """The retired ``summarize_draws``: blocks of bootstrap sums (count, Σq, Σy)."""
    draws = (bins_of_sums(*block) for block in blocks)
    options = {"confidence": confidence, "method": method, "norm": norm, "debias": debias}
    return resampled_interval(bins, draws, "pairs" if shrink else "groups", **options)


# Retired public names: what replaces each, and what the name now gives.
_RETIRED = {
    "IntervalSummary": ("CalibrationResult (the same fields and the bins)", CalibrationResult),
    "summarize_draws": ("resampled_interval (blocks of Bins, not of sums)", _summarize_draws),
}


def __getattr__(name: str):
    """Retired names keep working with a ``DeprecationWarning`` naming the replacement."""
    if name in _RETIRED:
        replacement, value = _RETIRED[name]
        warnings.warn(
            f"calib_metrics.functional.intervals.{name} is retired: use {replacement}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
