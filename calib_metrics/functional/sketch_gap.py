"""How far a streaming error can be from the exact mode's, bounded from the sketch alone.

**Where the gap comes from.** The sketch's bins hold exactly the exact mode's pairs
(:func:`~calib_metrics.functional.sketch.to_bins`); only a cell of several values that
a boundary cuts is unknown inside. Its pairs are a few 1e-5 apart in q, so their labels
are exchangeable: the t of its n pairs before the boundary hold δ more ones than the
t·p that the sketch gives them, with the hypergeometric variance

    v = p(1 − p)·t(n − t)/(n − 1),      p = the cell's ones / n,

and their Σq is off by at most (1 + √3/2)·σ·√(t(n − t)), σ the cell's sd of q (the
first t of n values sum to within σ√(t(n − t)) of t·mean, and the sketch's split is
within √3·σ·t(n − t)/n ≤ √3/2·σ√(t(n − t)) of it). The debiased error shares the cut
cell at p (the gap is δ); the plug-in error redraws it (the gap is the difference of
two independent draws, variance 2v).

**The bound.** A boundary's δ moves its two bins' Σy by ±δ. To second order the error
(the square, for l2) moves by a·δ + ½·h·(δ² − E δ²), a the difference of the two bins'
slopes and h their curvature, 2/N·(1/n₋ + 1/n₊) (debiased, each bin's part times
n_eff/(n_eff − 1): its noise term bends too). The debiased square takes E δ² = v in: the
sketch's bins carry the variance of each bin's label sum that the sharing leaves open
(``unplaced``, :func:`~calib_metrics.functional.sketch.to_bins`) and
:func:`~calib_metrics.functional.intervals.debiased_square` adds it back, so the
streaming square is the exact one's expectation given the sketch and the gap has mean 0.
Over the boundaries, whose δ are independent, the gap has variance Σ a²v + ½h²v²
(debiased; the redraw doubles both). The bound is ``GAP_SDS`` = 4 of those standard
deviations plus the Σq term, and for l2 the root of it: the exact error lies in
[√max(S − T, 0), √(S + T)] for a square S and a bound T on the square, which is where
a debiased error near 0 (the root of a difference near 0) moves most. For ``"max"`` it
is the worst bin's own bound. Checked against the exact mode over data sets, bin sizes,
norms and modes in ``tests/test_sketch_gap.py`` and ``benchmarks/streaming_gap_seeds.py``
(docs/streaming.md).

**Why the open variance, not an effective sample size.** Until 2026-11-30 the debiased
error recorded a cut cell of several values as a tie group, which raised its bins'
n_eff above n: that subtracts the same variance, but reckoned with the bin's frequency,
p̂(1 − p̂), where the sharing hides the cell's own, p(1 − p). Where the two differ the
gap had a part that no label noise accounts for, so the bound missed it: near q = 0 or 1
a cut cell's labels are all 0 or all 1, where sharing changes nothing (v = 0, δ = 0) yet
the n_eff still moved the square (calibrated Beta(0.1, 0.1) scores, 3,000 pairs, 1,024
cells: 21× the bound at β = 500, 29× at β = 1000), and bins of one pair subtracted the
p(1 − p) that the exact mode's keep (bin_size=1: 0.020 against the exact 0.401). Those
pairs are distinct values, which the exact mode does not tie, so they count as untied
(n_eff = n) — but without v added back that leaves the square low by ½·Σ h·v, −2.7e-3 at
1.3 cells per bin (``benchmarks/shared_cells.py``, docs/streaming.md). With it, a cut cell
of ones or zeros leaves the exact square but for its pairs' positions in q, and a bin of
one pair scores its label's expected plug-in square, (q − p)² + p(1 − p), as the exact
mode's keeps its own.

**What it assumes** (``benchmarks/streaming_gap_assumptions.py`` shows where it holds
and where not). The pairs of a cell are exchangeable: labels that follow q inside a
cell (a perfect ranker, y = 1[q > 0.3], at 1,024 cells) put the gap at 1.7–2.5× the
bound; at the default resolution a cell is too narrow for it to show (but for the cells
next to the ends, which hold every q below sigmoid(−16) = 1.1e-7, or above its mirror, at
any resolution: labels that follow q there break it as in any wide cell), but a tie group of
4,000 ones at q = 0.3 among calibrated values, cut 5 pairs in, puts it at 4.3× (its
labels are not its neighbours'). Which cells hold one value is known exactly (each
cell's lowest and highest q, :func:`~calib_metrics.functional.sketch.tied_cells`), so
float32 scores a few ulps apart count as several values, as the exact mode sorts them;
but a tie group inside a cell of several values is not seen. Bins of one pair magnify
that: the exact mode's one-pair bins of a cut tie group subtract the group's noise, which
the sketch cannot. Boundaries a pair or two apart in one cell are not independent
either, so in such small bins the bound is loose, at worst the error itself.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from calib_metrics.functional.binning import Bins, bin_unplaced
from calib_metrics.functional.intervals import debiased_square, effective_samples
from calib_metrics.functional.sketch import (
    Sketch,
    boundary_cells,
    cell_variance,
    share_variance,
    tied_cells,
    to_bins,
)

# Standard deviations of the label part of the gap that the bound allows: a normal gap
# passes it in all but 6 of 100,000 results, and the model's own sd is at or above the
# gaps' (benchmarks/streaming_gap_seeds.py).
GAP_SDS = 4.0
# Added to every bound: the two modes sum the same pairs in other orders, which leaves
# gaps of ~1e-15 where the label part is 0 (rounded probabilities; l1 bins that all
# lean one way, whose error does not move).
ROUNDING = 1e-12


def _cut_uncertainty(state: Sketch, bin_size: int) -> tuple[Tensor, Tensor]:
    """Per interior boundary: the variance v of the ones that the sketch cannot place,
    and the bound on its error in Σq (both 0 where no cell of several values is cut)."""
    cells = boundary_cells(state.count, bin_size)
    k, n, t = cells.cell, cells.size, cells.before
    # Both are per cell: read at the cut cells only, not over the whole sketch.
    cut = Sketch(*(part[k] for part in state))
    var = cell_variance(cut.count, cut.sum_r, cut.sum_r2)
    unknown = (t > 0) & (t < n) & ~tied_cells(cut)
    labels = share_variance(t, n, cut.sum_y)
    positions = (1 + math.sqrt(3) / 2) * var.sqrt() * (t * (n - t)).sqrt()
    zero = torch.zeros_like(labels)
    return (
        torch.where(unknown, labels, zero)[1:-1],
        torch.where(unknown, positions, zero)[1:-1],
    )


def _bin_moves(labels: Tensor, positions: Tensor, redraws: float) -> tuple[Tensor, Tensor]:
    """Per bin: the variance of its Σy's move and the bound on its Σq's, from the unknown
    ones and positions of its two boundaries."""
    zero = labels.new_zeros(1)
    variance = redraws * (torch.cat([zero, labels]) + torch.cat([labels, zero]))
    return variance, torch.cat([zero, positions]) + torch.cat([positions, zero])


def _slopes(bins: Bins, norm: str, debias: bool, kinked: Tensor) -> tuple[Tensor, Tensor]:
    """Per bin: the slope of the error (of its square, for l2) in the bin's Σy and Σq;
    0 for the l1 bins whose gap may change sign (``kinked``), which count apart."""
    total = bins.count.sum()
    gap = bins.pred_mean - bins.freq
    if norm == "l1":
        sign = torch.where(kinked, 0.0, gap.sign())
        return -sign / total, sign / total
    slope_y = -2 * gap / total
    if debias:
        samples = effective_samples(bins)
        slope_y = slope_y - (1 - 2 * bins.freq) / (samples - 1).clamp(min=1) / total
    return slope_y, 2 * gap / total


def _curvatures(bins: Bins, debias: bool) -> Tensor:
    """Per bin: the second derivative of the square in the bin's Σy, 2/(N·n); debiased,
    times n_eff/(n_eff − 1) (its noise term bends too: 2 for a bin of one pair)."""
    bend = 2 / bins.count.sum() / bins.count
    if debias:
        spread = (effective_samples(bins) - 1).clamp(min=1)
        bend = bend * (1 + 1 / spread)
    return bend


def _kinks(bins: Bins, variance: Tensor, kinked: Tensor) -> tuple[Tensor, Tensor]:
    """The l1 bins whose gap may change sign: the mean and variance of |G + D| − |G|
    (G = Σq − Σy, D its normal move: a folded normal), summed over them; doubled in
    variance because neighbours share a boundary."""
    moved = bins.count * (bins.pred_mean - bins.freq)
    sd = variance.sqrt().clamp(min=1e-300)
    folded = sd * math.sqrt(2 / math.pi) * torch.exp(-0.5 * (moved / sd) ** 2) + moved * (
        1 - 2 * torch.special.ndtr(-moved / sd)
    )
    mean = torch.where(kinked, folded - moved.abs(), 0.0).sum()
    spread = torch.where(kinked, (moved**2 + variance - folded**2).clamp(min=0), 0.0).sum()
    return mean.abs(), 2 * spread


def _square_and_bound(
    bins: Bins, labels: Tensor, positions: Tensor, norm: str, debias: bool
) -> tuple[Tensor, Tensor]:
    """The error's square (l2) or the error (l1), and the bound on its gap."""
    redraws = 1.0 if debias else 2.0
    total = bins.count.sum()
    gap = bins.pred_mean - bins.freq
    move_var, move_q = _bin_moves(labels, positions, redraws)
    # An l1 bin whose Σq − Σy may change sign is not linear in its move.
    kinked = (gap * bins.count).abs() <= GAP_SDS * move_var.sqrt() + move_q
    if norm != "l1":
        kinked = torch.zeros_like(kinked)
    slope_y, slope_q = _slopes(bins, norm, debias, kinked)
    a_y, a_q = slope_y[:-1] - slope_y[1:], slope_q[:-1] - slope_q[1:]
    variance = redraws * (a_y**2 * labels).sum()
    offset = (a_q.abs() * positions).sum() + (move_q * kinked).sum() / total
    if norm == "l2":
        bend = _curvatures(bins, debias)
        curvature = bend[:-1] + bend[1:]
        variance = variance + redraws * 0.5 * (curvature**2 * labels**2).sum()
        if debias:
            samples, unplaced = effective_samples(bins), bin_unplaced(bins)
            value = debiased_square(gap, bins.freq, bins.count, samples, unplaced)
        else:
            value = (bins.count / total * gap**2).sum()
    else:
        value = (bins.count / total * gap.abs()).sum()
        kink_mean, kink_var = _kinks(bins, move_var, kinked)
        variance = variance + kink_var / total**2
        offset = offset + kink_mean / total
    return value, GAP_SDS * variance.sqrt() + offset


def _worst_bin_bound(bins: Bins, labels: Tensor, positions: Tensor, debias: bool) -> Tensor:
    """The max norm's bound: the largest bound on one bin's |gap| move."""
    variance, positions = _bin_moves(labels, positions, 1.0 if debias else 2.0)
    return ((GAP_SDS * variance.sqrt() + positions) / bins.count).max()


def streaming_gap_bound(
    state: Sketch,
    bin_size: int,
    *,
    norm: str = "l2",
    debias: bool = True,
) -> Tensor:
    """A bound on |streaming − exact| for the error of one sketch ``[R]`` in bins of
    ``bin_size`` (the module docstring gives the model and what it assumes): ``ROUNDING``
    when no boundary cuts a cell of several values, and ``debias`` applies to l2 only, as
    in the metric. 0-dim float64; one host synchronisation (through the bins).

    Example:
        >>> from calib_metrics.functional.sketch import accumulate, empty
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(20_000, generator=g)
        >>> y = torch.bernoulli(q, generator=g).long()
        >>> sketch = empty(1024)
        >>> accumulate(sketch, q, y)
        >>> round(streaming_gap_bound(sketch, 2000, debias=False).item(), 4)
        0.003

        The debiased square of these calibrated pairs is below 0 by more than its bound,
        so the exact error is 0 too:

        >>> streaming_gap_bound(sketch, 2000).item()  # rounding only
        1e-12
        >>> rounded = (q * 20).round() / 20  # every cut cell holds one value: no gap
        >>> sketch = empty(1024)
        >>> accumulate(sketch, rounded, y)
        >>> streaming_gap_bound(sketch, 2000).item()
        1e-12
    """
    debias = debias and norm == "l2"
    bins = to_bins(state, bin_size, redraw=not debias)
    labels, positions = _cut_uncertainty(state, bin_size)
    if norm == "max":
        return _worst_bin_bound(bins, labels, positions, debias) + ROUNDING
    value, bound = _square_and_bound(bins, labels, positions, norm, debias)
    if norm == "l1":
        return bound + ROUNDING
    error = value.clamp(min=0).sqrt()
    highest = (value + bound).clamp(min=0).sqrt()
    lowest = (value - bound).clamp(min=0).sqrt()
    return torch.maximum(highest - error, error - lowest) + ROUNDING
