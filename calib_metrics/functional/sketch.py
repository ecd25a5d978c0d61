"""A fixed-size, mergeable histogram of (q, y) pairs for streaming and DDP.

**Cells.** The sketch has ``resolution`` = R cells. Cells 0 and R − 1 hold exactly
q = 0 and q = 1, so a tie mass at either end (a sharp tagger's zeros, saturated
float32 ones) is never mixed with other values. The R − 2 cells between have equal
width in logit space, log(q / (1 − q)) ∈ [−L, L] with L = ``LOGIT_RANGE`` = 16, so they
are fine where NLP models put most of their mass, near 0 and 1. A cell is w = 2L/R wide
in logit, which is w·q(1 − q) in q: with the default R = 2¹⁸, w = 1.22e-4, i.e. a cell
is 3.05e-5 wide at q = 1/2 and 0.0122% of q wide near 0 (of 1 − q near 1). Predictions
beyond ±L (0 < q < 1.1e-7, 1 − 1.1e-7 < q < 1) share the cells next to the ends. The
layout needs ``MIN_RESOLUTION`` = 4 cells: the two ends and one for each half.

A value's cell depends on the value alone (:func:`cell_index`): its distance from the
nearer end, min(q, 1 − q), exact in float64, is rounded once to float32 and its logit
taken in float32, the upper half mirroring the lower. So the same number given as
float16, bfloat16, float32 or float64 takes the same cell, and merged or DDP sketches are
one process's however the rows were split, ordered or typed. The logit had been taken in
the input's own precision, so a float32 value and the same value as float64 could fall
in adjacent cells (0.684, for one), which split tie groups and made the result depend on
which batches came as float64. float32 keeps the distance to 6e-8 of itself, next to 0
and next to 1 alike, against a cell's 1.2e-4.

**State** (:class:`Sketch`). Per cell, in float64: the number of pairs n, Σr and Σr²
where r = q − [cell in the upper half] is q measured from the nearer end (q for q < 1/2,
q − 1 for q ≥ 1/2, both exact in floating point, so Σr keeps its precision next to 1),
Σy, and the lowest and highest q. Two sketches merge by adding the four sums and taking
the minimum of the lowest and the maximum of the highest (``dist_reduce_fx`` "sum",
"min" and "max"), and the size never depends on the number of pairs (``BYTES_PER_CELL``
= 6·8 bytes a cell: 12 MiB at R = 2¹⁸, per class). The lowest and highest q say exactly
which cells hold one value: the sums cannot tell equal values from float32 scores a few
ulps apart (both leave a variance at rounding level), which the exact mode sorts.

**Bins.** The exact algorithm cuts the pairs, sorted by q, into runs of ``bin_size``
(the last run, if short, joins the one before). The sketch knows the rank at which
every cell starts, so the bin boundaries fall at the same ranks and every bin holds
exactly as many pairs as in the exact algorithm; bin sums are exact except in the
cells that a boundary cuts through. Such a cell gives each side its share of the
cell's pairs at the cell's mean label, which is exactly the exact mode's tie rule when
the cell holds one value, lowest = highest (DESIGN.md: a split tie group counts at its
mean label; the bins then record the cut group, whose effective sample size the debiased
square uses, :mod:`calib_metrics.functional.ties`), and the best guess from the sums
otherwise; its Σq is split exactly for one value and otherwise as if its q were spread
evenly over mean ∓ √3·std.

**Two estimators, two ways to share a cut cell.** Label sums are not known inside a cut
cell of several values. The plug-in error measures the per-bin label noise, which sharing
Σy in proportion would average away, so for it the boundary's share of the cell's ones is
redrawn (``redraw=True``, :func:`_drawn_ones`). The debiased error subtracts that noise
instead: for it a cut cell is shared out at its mean label (``redraw=False``) and each
bin carries the variance of its label sum that the sharing leaves open, which the
debiased square adds back, so it is the exact mode's in expectation with nothing
redrawn. The cell's pairs are distinct values and count as untied, as in the exact mode
(:mod:`~calib_metrics.functional.sketch_gap` says why not as a tie group). Either way the
streaming answer differs from the exact one by the label noise of the cut cells, which
grows with the pairs per cell next to the bin size; the measured gap, by N and bin size, is in
``docs/streaming.md`` (``benchmarks/bench_scale.py``), and
:func:`~calib_metrics.functional.sketch_gap.streaming_gap_bound` bounds it from the
sketch alone (``CalibrationError.streaming_tolerance``). Below :func:`buffer_rows` rows
the streaming metric keeps the pairs themselves and gives the exact result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import (
    Bins,
    bins_of_means,
    check_room,
    exact_end_bins,
    with_ties,
)
from calib_metrics.functional.errors import check_int
from calib_metrics.functional.ties import TieCuts, bin_parts

DEFAULT_RESOLUTION = 1 << 18
# The fewest cells that keep the layout (:func:`cell_index`): q = 0 and q = 1 alone in the
# end cells, and at least one cell for each half between, so that r = q − [upper half]
# stays within ±1/2. With 2 cells every q in (0, 1) fell into cell 0, q = 0's, and the
# metric refused its own saved state.
MIN_RESOLUTION = 4
# The finest sketch: _cells places values in float32, which holds every cell index up to
# 2**24 (half of this) exactly. At 2**26 a cell index of the lower half rounded up to
# the upper half's first, so q = 0.5 was counted among values below it (CalibErr 0.158
# where the exact mode gives 0.0028), and no finer resolution put values in other cells
# than 2**25 does.
MAX_RESOLUTION = 1 << 25
# The version of :func:`cell_index`'s layout, recorded in saved states: 2 since 2026-11-30
# (cells from the value's distance to the nearer end, the same for every dtype); a sketch
# of another layout would place some of this one's values one cell apart.
CELL_LAYOUT = 2
LOGIT_RANGE = 16.0
# Six float64 tensors of R cells: count, Σr, Σr², Σy, lowest q, highest q.
BYTES_PER_CELL = 6 * 8
# Working memory that compute() takes per adaptive bin made from a sketch: the bins'
# boundaries, their cut cells and the bins themselves. Measured: about 200 B a bin
# (10⁸ pairs at bin_size=50, 2·10⁶ bins: 0.33 GiB beyond the state; 10⁶ bins: 0.14 GiB);
# 256 B is asked for. It guards against the absurd (counts of 10¹⁵ with
# bin_size="auto": 6·10⁷ bins), not a tight fit: an interval's resampled draws
# (compute_result) are taken in blocks beside it and are not counted.
BYTES_PER_BIN = 256
# What each finished bin keeps (Bins: mean q, frequency, count and their records) while
# the next class's are made: classes are binned one after another.
BYTES_PER_KEPT_BIN = 64
# The label noise of cut cells is drawn from this seed, so the answer is a function of
# the sketch alone.
_NOISE_SEED = 14
# Cut cells of up to this many pairs have their labels' order drawn exactly; beyond it
# a Dirichlet of the same covariance splits their labels (:func:`_dirichlet_draw`), but
# where their minority label is at most this many, placed exactly one by one
# (:func:`_placed_draw`).
EXACT_DRAW_PAIRS = 128
EXACT_PLACE_LABELS = 64
# Cells per chunk of exact draws: 8,192 × 128 float64 keys and orders, 16 MiB.
_DRAW_ROWS = 8192


def num_cells(resolution: int = DEFAULT_RESOLUTION) -> int:
    """Number of cells of a sketch of the given resolution (validated: an even int of at
    least ``MIN_RESOLUTION``, at most ``MAX_RESOLUTION``).

    Example:
        >>> num_cells(1024)
        1024
        >>> num_cells(2)
        Traceback (most recent call last):
        ...
        ValueError: resolution must be an even integer >= 4 (q = 0, q = 1, a cell per half), got 2
    """
    if (
        not isinstance(resolution, int)
        or isinstance(resolution, bool)
        or resolution < MIN_RESOLUTION
        or resolution % 2
    ):
        raise ValueError(
            f"resolution must be an even integer >= {MIN_RESOLUTION} (q = 0, q = 1, a cell "
            f"per half), got {resolution!r}"
        )
    if resolution > MAX_RESOLUTION:
        raise ValueError(
            f"resolution must be at most {MAX_RESOLUTION:,} (2**25), got {resolution:,}: the "
            "cells are placed in float32, which resolves no finer (a finer sketch put q = 0.5 "
            "among values below it); for finer bins use the exact mode: streaming=False, with "
            "resolution left out"
        )
    return resolution


def buffer_rows(resolution: int = DEFAULT_RESOLUTION) -> int:
    """Rows of exact pairs a streaming metric keeps before folding them into its sketch.

    2·R rows: at most 16 bytes a pair (float64 q, int64 y), so the buffer never takes
    more memory than the sketch's ``BYTES_PER_CELL`` = 48 bytes a cell (a multiclass row
    of C pairs and one target, 8·C + 8 bytes, is under 16·C). Until the pairs seen (on
    all ranks together) exceed it, the streaming result is the exact one.

    Example:
        >>> buffer_rows(1024)
        2048
    """
    return 2 * num_cells(resolution)


def cell_width(q: float, resolution: int = DEFAULT_RESOLUTION) -> float:
    """Width, in q, of the cell that holds ``q`` (0 < q < 1): w·q(1 − q), w = 2L/R.

    Example:
        >>> round(cell_width(0.5), 8), round(cell_width(0.001) / 0.001, 6)
        (3.052e-05, 0.000122)
    """
    return 2 * LOGIT_RANGE / num_cells(resolution) * q * (1 - q)


def cell_index(probs: Tensor, resolution: int = DEFAULT_RESOLUTION) -> Tensor:
    """The sketch cell of each probability (Long, same shape); q ≥ 1/2 ↦ upper half.

    A function of the value alone, whatever its dtype (module docstring): the same number
    as float32 or float64 takes the same cell.

    Example:
        >>> cell_index(torch.tensor([0.0, 0.25, 0.5, 1.0]), resolution=8)
        tensor([0, 3, 4, 7])
        >>> q = torch.tensor([0.684, 0.008196830749511719])
        >>> torch.equal(cell_index(q), cell_index(q.double()))
        True
    """
    num_cells(resolution)  # a finer one misplaces values (MAX_RESOLUTION)
    _, upper, r = _halves(probs)
    return _cells(r, upper, resolution)


def _halves(probs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """q in float64 (exact from every floating dtype), whether it lies in the upper half
    (q ≥ 1/2), and r = q − [upper half]: q measured from the nearer end, exact too."""
    q = probs.to(torch.float64)
    upper = q >= 0.5
    return q, upper, q - upper.to(torch.uint8)


def _cells(r: Tensor, upper: Tensor, resolution: int) -> Tensor:
    """The cells of values at (signed) distance ``r`` from their nearer end."""
    half = resolution // 2
    # The distance rounded once to float32, whatever dtype the value came in, and its
    # logit (≤ 0) in float32: the cheap part, in place. The value's own precision had
    # put a float64 and the same number as float32 in adjacent cells.
    scaled = r.to(torch.float32).abs_().logit_()
    # Clamping after scaling sends |logit| ≥ L to the cells next to the ends, which
    # hold exactly q = 0 and q = 1 alone: a tie mass there is never mixed with others.
    scaled.mul_(resolution / (2 * LOGIT_RANGE)).add_(half).clamp_(1, half - 1)
    # NaN (only in rows that a weight of 0 drops) goes to cell 0 rather than anywhere.
    cell = scaled.nan_to_num_(0.0).long()
    # The upper half mirrors the lower: 1 − q's cell counted from the other end.
    torch.where(upper, cell.neg().add_(resolution - 1), cell, out=cell)
    ends = r == 0
    cell.masked_fill_(ends, 0)
    return cell.masked_fill_(ends & upper, resolution - 1)


class Sketch(NamedTuple):
    """A sketch's state: six float64 tensors of shape ``[*S, R]`` (S = () for one sketch,
    ``(C,)`` for one per class). The first four are sums; ``low`` and ``high`` are the
    lowest and highest q of each cell (+inf and −inf while it is empty).

    Example:
        >>> state = empty(8)
        >>> q = torch.tensor([0.2, 0.2, 0.9, 0.91], dtype=torch.float64)
        >>> accumulate(state, q, torch.tensor([1, 0, 1, 0]))
        >>> state.count.nonzero().flatten().tolist(), state.low[3].item(), state.high[3].item()
        ([3, 4], 0.2, 0.2)
        >>> state.low[4].item(), state.high[4].item()  # two values: not a tie
        (0.9, 0.91)
    """

    count: Tensor
    sum_r: Tensor
    sum_r2: Tensor
    sum_y: Tensor
    low: Tensor
    high: Tensor

    def of_class(self, c: int) -> Sketch:
        """Class ``c``'s sketch ``[R]`` of a per-class sketch ``[C, R]`` (views)."""
        return Sketch(*(part[c] for part in self))

    def pooled(self) -> Sketch:
        """The classes of a per-class sketch ``[C, R]`` pooled into one ``[R]``: cells are
        aligned across classes, so the sums add and the extremes are the extremes."""
        sums = (part.sum(0) for part in self[:4])
        return Sketch(*sums, self.low.amin(0), self.high.amax(0))

    def merged(self, other: Sketch) -> Sketch:
        """The sketch of both sketches' pairs, as ``MERGE`` reduces the states under DDP."""
        return Sketch(*(torch.stack(parts) for parts in zip(self, other))).pooled()

    def clone(self) -> Sketch:
        return Sketch(*(part.clone() for part in self))


# How ``Sketch``'s fields merge, in torchmetrics' ``dist_reduce_fx`` names.
MERGE = ("sum", "sum", "sum", "sum", "min", "max")


def empty(
    resolution: int = DEFAULT_RESOLUTION,
    shape: tuple[int, ...] = (),
    device: torch.device | str | None = None,
    *,
    room_for: int = 1,
) -> Sketch:
    """A new sketch, each part float64 of shape ``[*shape, R]``, once the free memory
    (:func:`~calib_metrics.functional.binning.check_room`) holds ``room_for`` sketches of
    its size (the caller's copies of it too).

    Checked up front: on Linux ``torch.zeros`` of more than is free succeeds (pages are
    given lazily), and filling the extremes with ±inf then touched every page, so the
    out-of-memory killer ended the process instead of the allocator raising.

    Example:
        >>> [tuple(t.shape) for t in empty(16, (3,))]
        [(3, 16), (3, 16), (3, 16), (3, 16), (3, 16), (3, 16)]
    """
    size = (*shape, num_cells(resolution))
    _check_sketch_room(resolution, shape, torch.device(device or "cpu"), room_for)
    try:
        sums = [torch.zeros(size, dtype=torch.float64, device=device) for _ in range(4)]
        low = torch.full(size, math.inf, dtype=torch.float64, device=device)
        high = torch.full(size, -math.inf, dtype=torch.float64, device=device)
    except (RuntimeError, MemoryError) as error:  # the allocator's, e.g. 'can't allocate'
        need = BYTES_PER_CELL * math.prod(size)
        raise ValueError(
            f"resolution={resolution} needs {need / 2**20:,.0f} MiB of sketch "
            f"({BYTES_PER_CELL} bytes a cell, for {math.prod(shape)} sketch(es)), more than "
            f"{device or 'cpu'} could allocate; choose a smaller resolution"
        ) from error
    return Sketch(*sums, low, high)


def _check_sketch_room(
    resolution: int, shape: tuple[int, ...], device: torch.device, copies: int
) -> None:
    """Refuse (ValueError) ``copies`` sketches of ``shape`` that the free memory cannot hold."""
    sketches = math.prod(shape)
    kind = f"{sketches} classes" if sketches > 1 else "one class"
    copied = f", {copies} copies of it" if copies > 1 else ""
    check_room(
        copies * BYTES_PER_CELL * sketches * resolution,
        device,
        f"a streaming sketch of resolution={resolution} for {kind} ({BYTES_PER_CELL} bytes "
        f"a cell{copied})",
        f"choose a smaller resolution (the memory halves with it; default {DEFAULT_RESOLUTION})"
        + (", or measure fewer classes per metric" if sketches > 1 else ""),
        unit="MiB",
    )


def accumulate(state: Sketch, probs: Tensor, target: Tensor, weight: Tensor | None = None) -> None:
    """Add pairs to a sketch in place, without any host synchronisation.

    The sketch's parts have shape ``[*S, R]``; ``probs`` and ``target`` have shape
    ``[n, *S]`` (binary: S = (), so ``[n]``; one-vs-rest multiclass: ``[n, C]`` with a
    one-hot target). ``weight`` ([n], 0/1) drops rows (padding) without indexing, so that
    the shapes never depend on the data; dropped rows may hold anything, NaN included.

    Example:
        >>> state = empty(8)
        >>> probs = torch.tensor([0.5, 0.5, 0.9, 0.2], dtype=torch.float64)
        >>> target = torch.tensor([1, 0, 1, -1])
        >>> accumulate(state, probs, target, target >= 0)
        >>> state.count.nonzero().flatten().tolist(), state.count.sum().item()
        ([4], 3.0)
        >>> state.sum_y.sum().item(), state.low[4].item(), state.high[4].item()
        (2.0, 0.5, 0.9)
    """
    count = state.count
    resolution = count.shape[-1]
    n_cells = count.numel()
    q, upper, r = _halves(probs)
    cell = _cells(r, upper, resolution)
    q, r = q.reshape(-1), r.reshape(-1)
    if n_cells > resolution:
        offset = torch.arange(0, n_cells, resolution, device=cell.device)
        cell = cell.add_(offset.reshape(count.shape[:-1]))
    cell = cell.reshape(-1)
    keep = None
    lowest, highest = q, q
    if weight is not None:
        keep = weight.to(torch.bool).reshape(-1, *([1] * (probs.ndim - 1)))
        keep = keep.expand(probs.shape).reshape(-1)
        r = torch.where(keep, r, 0.0)
        lowest, highest = torch.where(keep, q, math.inf), torch.where(keep, q, -math.inf)
    # scatter_add_ is the same sum as index_add_ here, and faster on CPU.
    state.sum_r.view(-1).scatter_add_(0, cell, r)
    state.sum_r2.view(-1).scatter_add_(0, cell, r.mul_(r))
    state.low.view(-1).scatter_reduce_(0, cell, lowest, "amin")
    state.high.view(-1).scatter_reduce_(0, cell, highest, "amax")
    # Counts and Σy of 0/1 labels are exact in float64. Counts by a scatter, not
    # torch.bincount, whose CUDA kernel reads the input's range back to size its output.
    y = target.reshape(-1).to(torch.float64)
    ones = torch.ones_like(r) if keep is None else keep.to(torch.float64)
    if keep is not None:
        y = torch.where(keep, y, 0.0)
    count.view(-1).scatter_add_(0, cell, ones)
    state.sum_y.view(-1).scatter_add_(0, cell, y)


# Σr and Σr² add float64 values of |r| ≤ 1/2: rounding may carry a sum a hair past
# count/2 (count/4), never by this much. 1e-6 had left cells of q = 0.49999988 (Σr² at
# 1 − 4.8·10⁻⁷ of count/4) too little room for the rounding of long sums and merges.
_SUM_SLACK = 1 + 1e-5


def state_problem(state: Sketch) -> tuple[str, str] | None:
    """The first part of ``state`` (a sketch ``[*S, R]``) holding what no sketch that
    :func:`accumulate` and merges make can hold, with why, as ``(field, why)``; None when
    there is none. One host read (more only to describe a problem found).

    Per cell: the count and Σy are whole numbers with 0 ≤ Σy ≤ count; Σr lies in
    [0, count/2] in the lower half (r = q) and [−count/2, 0] in the upper (r = q − 1),
    Σr² in [0, count/4]; an occupied cell's lowest and highest q satisfy
    0 ≤ lowest ≤ highest ≤ 1, and an empty cell is empty (sums 0, extremes ±inf). NaN
    fails every test.

    Example:
        >>> state = empty(8)
        >>> accumulate(state, torch.tensor([0.2, 0.9]), torch.tensor([1, 0]))
        >>> state_problem(state) is None
        True
        >>> state.sum_y[3] = 5.0
        >>> state_problem(state)
        ('sum_y', 'holds 5 in cell 3, where Σy is a whole number between 0 and the count')
    """
    count, sum_r, sum_r2, sum_y, low, high = (part.to(torch.float64) for part in state)
    resolution = count.shape[-1]
    upper = torch.arange(resolution, device=count.device) >= resolution // 2
    occupied = count > 0
    whole = torch.isfinite(count) & (count == count.floor())
    half = torch.where(upper, sum_r <= 0, sum_r >= 0)
    bad = {
        "count": (~(whole & (count >= 0)), "a count is a whole number ≥ 0"),
        "sum_y": (
            ~((sum_y == sum_y.floor()) & (sum_y >= 0) & (sum_y <= count)),
            "Σy is a whole number between 0 and the count",
        ),
        "sum_r": (
            ~(half & (sum_r.abs() <= count / 2 * _SUM_SLACK)),
            "Σr of r = q (lower half) or q − 1 (upper half) lies within ±count/2, of its "
            "half's sign",
        ),
        "sum_r2": (
            ~((sum_r2 >= 0) & (sum_r2 <= count / 4 * _SUM_SLACK)),
            "Σr² lies in [0, count/4]",
        ),
        "low": (
            torch.where(occupied, ~((low >= 0) & (low <= high)), low != math.inf),
            "the lowest q of an occupied cell lies in [0, its highest q], of an empty one +inf",
        ),
        "high": (
            torch.where(occupied, ~(high <= 1), high != -math.inf),
            "the highest q of an occupied cell is at most 1, of an empty one -inf",
        ),
    }
    found = torch.stack([mask.any() for mask, _ in bad.values()]).tolist()
    for (field, (mask, rule)), flagged in zip(bad.items(), found, strict=True):
        if flagged:
            where = tuple(int(i) for i in mask.nonzero()[0])
            value = getattr(state, field)[where].item()
            of_class = len(where) > 1 and state.count.shape[0] > 1
            cell = f"cell {where[-1]}" + (f" of class {where[0]}" if of_class else "")
            return field, f"holds {value:g} in {cell}, where {rule}"
    return None


class BoundaryCells(NamedTuple):
    """Per bin boundary of a sketch's adaptive bins (T + 1 for T bins, in rank order):
    the cell it falls in.

    Attributes:
        rank: the boundary's rank among the pairs in q order: 0, β, 2β, …, N (float64).
        cell: the cell holding that rank.
        size: the cell's number of pairs n.
        before: its pairs before the boundary t (0 < t < n where the boundary cuts it).
    """

    rank: Tensor
    cell: Tensor
    size: Tensor
    before: Tensor


def boundary_cells(count: Tensor, bin_size: int) -> BoundaryCells:
    """Where the exact algorithm's bin boundaries fall in a sketch ``[R]``: runs of
    ``bin_size`` pairs in q order, the last (if short) joined to the one before. One host
    synchronisation (the number of pairs, which sets the number of bins).

    Example:
        >>> state = empty(8)
        >>> accumulate(state, torch.tensor([0.2, 0.2, 0.2, 0.9]),
        ...            torch.tensor([1, 0, 1, 1]))
        >>> cells = boundary_cells(state.count, bin_size=2)
        >>> cells.rank.tolist(), cells.size.tolist(), cells.before.tolist()
        ([0.0, 2.0, 4.0], [3.0, 3.0, 0.0], [0.0, 2.0, 0.0])
    """
    check_int("bin_size", bin_size)
    total = count.sum()
    n_total = int(total.item())  # compute() may synchronise; update() never does
    if n_total == 0:
        raise ValueError("the sketch is empty: no pairs were added")
    n_bins = max(1, n_total // bin_size)
    rank = torch.arange(n_bins + 1, device=count.device, dtype=torch.float64) * bin_size
    rank[-1] = total
    start = torch.cumsum(count, 0) - count
    cell = torch.searchsorted(start + count, rank, right=True).clamp_(max=count.numel() - 1)
    size = count[cell]
    before = torch.minimum((rank - start[cell]).clamp_(min=0), size)
    return BoundaryCells(rank, cell, size, before)


def _cumulative(
    cells: BoundaryCells,
    sum_q: Tensor,
    sum_y: Tensor,
    std: Tensor,
    tied: Tensor,
    cum_q: Tensor,
    cum_y: Tensor,
    redraw: bool = True,
) -> tuple[Tensor, Tensor, TieCuts]:
    """Σq and Σy of the first ``rank`` pairs in q order, from the cell sums, and the tie
    groups that the ranks cut (cut cells of one value, ``tied``); a cut cell of several
    values is redrawn (``redraw``) or shared in proportion (:func:`to_bins`)."""
    k, n, t = cells.cell, cells.size, cells.before
    n_safe = n.clamp(min=1)
    part = t / n_safe
    # q spread evenly over mean ∓ √3·std: the first t of n pairs sum to t·mean − √3·std·t(n−t)/n.
    q = cum_q[k] - sum_q[k] + part * sum_q[k] - math.sqrt(3) * std[k] * t * (n - t) / n_safe
    share = t * sum_y[k] / n_safe  # multiplied first: a cell of all ones gives t exactly
    y_part = _drawn_ones(k, t, n, sum_y[k], ~tied[k], share) if redraw else share
    cuts = _cut_groups(cells, sum_y, tied)
    return q, cum_y[k] - sum_y[k] + y_part, cuts


def _cut_groups(cells: BoundaryCells, sum_y: Tensor, one_value: Tensor) -> TieCuts:
    """Per boundary, the cell it cuts (size, pairs before it, ones) where that cell is one
    of ``one_value``'s (per cell), else 0: the :class:`TieCuts` record of those cells."""
    k, n, t = cells.cell, cells.size, cells.before
    cut = one_value[k] & (t > 0) & (t < n)
    return TieCuts(*(torch.where(cut, v, 0.0) for v in (n, t, sum_y[k])))


def _unplaced(cells: BoundaryCells, size: Tensor, sum_y: Tensor, tied: Tensor) -> Tensor:
    """Per bin, the variance of its label sum that sharing the cut cells of several values
    at their mean label leaves open (:func:`share_variance` of the cell's pairs in the
    bin). A bin meets at most two cut cells (one, when a cell spans it), independent."""
    parts = bin_parts(size, _cut_groups(cells, sum_y, ~tied))
    low = share_variance(parts.low, parts.low_size, parts.low_ones)
    high = share_variance(parts.high, parts.high_size, parts.high_ones)
    return low + torch.where(parts.whole, 0.0, high)


def share_variance(part: Tensor, size: Tensor, ones: Tensor) -> Tensor:
    """The variance of the ones among ``part`` of a cell's ``size`` pairs, which hold
    ``ones`` in an order the sketch cannot tell: hypergeometric, p(1 − p)·c(N − c)/(N − 1)
    with p = ones/N (0 where c is 0 or N).

    Example:
        >>> t = lambda values: torch.tensor(values, dtype=torch.float64)
        >>> share_variance(t([1.0, 3.0, 3.0]), t([6.0, 6.0, 6.0]), t([3.0, 3.0, 6.0])).tolist()
        [0.25, 0.45, 0.0]
    """
    p = ones / size.clamp(min=1)
    return p * (1 - p) * part * (size - part) / (size - 1).clamp(min=1)


def _drawn_ones(
    k: Tensor, t: Tensor, n: Tensor, ones: Tensor, spread: Tensor, share: Tensor
) -> Tensor:
    """The ones before each boundary (in rank order) in the cell it falls in, ``t`` of the
    cell's ``n`` pairs, ``ones`` of them ones: drawn, from a fixed seed, where it cuts a
    cell of several values (``spread``), else ``share`` (t·ones/n).

    Sharing a cut cell's Σy in proportion would remove the label noise of the pairs
    that the exact order puts on either side of the boundary, which the plug-in
    estimator measures, so the streaming error would drift low as cells fill up. The
    first t of a cell's n pairs, in an order the sums cannot tell, hold a hypergeometric
    count of its ones, jointly over all boundaries of a cell, so the answer is unbiased
    and depends only on the sketch (merged sketches give the same draw). Cells of up to
    ``EXACT_DRAW_PAIRS`` pairs draw it exactly (:func:`_ordered_draw`), and so do larger
    ones of at most ``EXACT_PLACE_LABELS`` of their minority label, placed one by one
    over the runs between their boundaries (:func:`_placed_draw`); the others split it
    over those runs by a Dirichlet of the hypergeometric's covariance
    (:func:`_dirichlet_draw`). Either way the ones before a cell's boundaries
    rise with t by at most the pairs between them and end at the cell's Σy: every bin's
    label sum lies in [0, its pairs] and the bins hold the sketch's Σy. (A normal bridge
    clipped at each boundary on its own had not: two boundaries in one cell of a few
    ones could put a negative label sum between them, which the bin's frequency then
    clipped at 0, adding ones: 568.5 for 466 in the data, 200,000 pairs of q in
    [10⁻⁴, 10⁻²] at 1,024 cells in bins of 100.)
    """
    inside = spread & (t > 0) & (t < n)
    small = inside & (n <= EXACT_DRAW_PAIRS)
    few = torch.minimum(ones, n - ones)
    placed = inside & ~small & (few <= EXACT_PLACE_LABELS) & (few == few.floor())
    first = torch.ones_like(k, dtype=torch.bool)
    first[1:] = k[1:] != k[:-1]
    # A cell's first placed boundary (its boundaries at its ends are not): the last one
    # placed before it lies in an earlier cell.
    earlier = torch.where(placed, k, -1).cummax(0).values.roll(1)
    earlier[0] = -1
    # One host read: whether any boundary is drawn, how many of each kind, the most
    # labels placed one by one, and the cells (the exact draw's generator needs them).
    counts = [inside.sum(), small.sum(), placed.sum(), torch.where(placed, few, 0).amax()]
    counts += [first.sum(), (placed & (earlier < k)).sum()]
    n_inside, n_small, n_placed, steps, cells, placed_cells = (
        int(v) for v in torch.stack([v.to(torch.float64) for v in counts]).tolist()
    )
    del few, counts, first, earlier
    if not n_inside:
        return share
    g = torch.Generator(device=k.device).manual_seed(_NOISE_SEED)
    drawn = torch.where(inside, _dirichlet_draw(k, t, n, ones, g), share)
    if n_placed:
        rows = torch.nonzero_static(placed, size=n_placed).squeeze(1)
        exact = _placed_draw(k[rows], t[rows], n[rows], ones[rows], placed_cells, steps, g)
        drawn = drawn.index_copy_(0, rows, exact)
    if n_small:
        g = _ordered_generator(t, cells)
        exact = _ordered_draw(k[small], t[small], n[small], ones[small], g)
        drawn = drawn.masked_scatter(small, exact)
    return drawn


def _ordered_generator(t: Tensor, cells: int) -> torch.Generator:
    """The exact ordered draw's own generator, so that what the Dirichlet draws does not
    move it: seeded as the redraw's and advanced past the normals that the bridge before
    the Dirichlet drew from it first (one a boundary, then one for each of the ``cells``),
    so cells of up to ``EXACT_DRAW_PAIRS`` pairs draw what they drew before 2026-12-02,
    the draws that ``bench_scale``'s 10⁶ entries in docs/streaming.md and README were
    measured with."""
    g = torch.Generator(device=t.device).manual_seed(_NOISE_SEED)
    torch.randn(t.shape, generator=g, dtype=torch.float64, device=t.device)
    torch.randn((cells,), generator=g, dtype=torch.float64, device=t.device)
    return g


def _placed_draw(
    k: Tensor, t: Tensor, n: Tensor, ones: Tensor, cells: int, steps: int, g: torch.Generator
) -> Tensor:
    """The ones before each boundary of its cell, as :func:`_dirichlet_draw` gives them,
    for cells of a few (at most ``steps``, a whole number) minority labels, drawn exactly:
    the labels are placed one at a time, each in a run (between the cell's boundaries)
    picked in proportion to the pairs it has left free, which is drawing the labels'
    places without replacement, so the runs hold the multivariate hypergeometric's counts
    (the exact order's), whole numbers, with its tails. ``steps`` rounds, each a weighted
    pick per cell (a running sum of the free pairs and a search in it) of the ``cells``;
    no host read."""
    first = torch.ones_like(k, dtype=torch.bool)
    first[1:] = k[1:] != k[:-1]
    run = torch.cumsum(first, 0) - 1
    step = torch.sub(t, t.roll(1).masked_fill_(first, 0.0))
    rest = n - t
    rest[:-1].masked_fill_(~first[1:], 0.0)
    # Each boundary's run, then (at a cell's last boundary) the rest: a cell's runs are
    # consecutive, and so are its free pairs in the running sum.
    free = torch.stack([step, rest], 1).reshape(-1)
    # Per cell: its first run, its pairs and its minority labels.
    slots = torch.arange(k.numel(), device=k.device)
    start = slots.new_full((cells,), free.numel()).scatter_reduce_(0, run, 2 * slots, "amin")
    size = t.new_zeros(cells).scatter_reduce_(0, run, n, "amax")
    few = t.new_zeros(cells).scatter_reduce_(0, run, torch.minimum(ones, n - ones), "amax")
    del slots
    held = torch.zeros_like(free)
    for label in range(steps):
        cum = torch.cumsum(free, 0)
        before = torch.where(start > 0, cum[(start - 1).clamp_(min=0)], 0.0)
        left = size - label  # the cell's free pairs
        u = torch.rand(left.shape, generator=g, dtype=left.dtype, device=left.device)
        pick = before + torch.minimum(u.mul_(left).floor_(), left - 1)
        into = torch.searchsorted(cum, pick, right=True).clamp_(max=free.numel() - 1)
        placing = (few > label).to(free.dtype)
        held.index_add_(0, into, placing)
        free.index_add_(0, into, placing.neg_())
    return _ones_before(held[0::2].contiguous(), step, ones, n, run)


def _dirichlet_draw(k: Tensor, t: Tensor, n: Tensor, ones: Tensor, g: torch.Generator) -> Tensor:
    """The ones before each boundary of its cell (boundaries in rank order, so a cell's are
    consecutive), drawn jointly per cell: the cell's runs between boundaries (from its start
    to the first, between boundaries, from the last to its end) share out its minority
    label, the m = min(ones, n − ones) of the labels that are fewer, by a Dirichlet with
    concentration α·(the run's pairs), α = (m − 1)/(n − m).

    That α gives every run, and every union of runs, the multivariate hypergeometric's mean
    and covariance: a run of s pairs holds s·p with variance p(1 − p)·s(n − s)/(n − 1), p =
    ones/n (the moments of the normal bridge it replaced), so where no share is cut (below)
    the plug-in square's expectation is the exact order's. Unlike the bridge, its shares are
    never negative and add up to m: a cell of one minority label (α = 0) puts it whole in
    one run, picked in proportion to the pairs, as the exact order does, and a cell of a few
    keeps the variance of their label noise (the bridge's normal tails, clipped, had lost 43%
    of the plug-in square there, ``tests/test_sketch_gap.py``), but not its shape: with m of
    2 to 6 among hundreds or thousands of pairs (α of 0.005 to 0.02) it puts nearly all of
    them in one run, in fractional shares, a far heavier tail than the hypergeometric's,
    which left the l1 error 6–11% low and the max-norm error and the reliability diagram's
    extreme bins too high (bins at q ≤ 0.01 shown at frequency near 1: max-norm 0.49–0.99
    where the exact order gives 0.2–0.4). So the cells of at most ``EXACT_PLACE_LABELS``
    have their draw replaced by :func:`_placed_draw`'s exact one; with more, α is larger
    and the shares' shape nearer the hypergeometric's. A share above its run's pairs (a run of
    fewer pairs than the minority label's, mostly a run of a pair or two at a cell's end) is
    cut to them and the excess given to the other runs in proportion to the room they have
    left, which is always enough. No host synchronisation.
    """
    first = torch.ones_like(k, dtype=torch.bool)
    first[1:] = k[1:] != k[:-1]
    run = torch.cumsum(first, 0) - 1  # the cell's place among the boundaries' cells
    # Each boundary's run of pairs since the one before it (or the cell's start), and
    # after a cell's last boundary the rest of its pairs. compute() holds these for
    # every bin (BYTES_PER_BIN): one tensor each, and few at a time.
    step = t.roll(1).masked_fill_(first, 0.0)
    step = torch.sub(t, step, out=step)
    rest = n - t
    rest[:-1].masked_fill_(~first[1:], 0.0)
    few = torch.minimum(ones, n - ones)
    alpha = (few - 1).clamp_(min=0).div_((n - few).clamp_(min=1))
    del few
    step_share, rest_share = (_log_gamma_times(alpha, pairs, g) for pairs in (step, rest))
    # Less the cell's largest, then exp(· / α): weight 1 for the largest, and with α = 0
    # (the floor's quotient is −inf) 0 for the others.
    top = torch.full_like(t, -math.inf).scatter_reduce_(0, run, step_share, "amax")
    top = top.scatter_reduce_(0, run, rest_share, "amax").nan_to_num_(neginf=0.0)[run]
    scale = alpha.clamp_(min=1e-300)
    total = torch.zeros_like(t)
    for share in (step_share, rest_share):
        total.index_add_(0, run, share.sub_(top).div_(scale).exp_())
    del top, scale, alpha
    part = torch.minimum(ones, n - ones).div_(total.clamp_(min=1e-300)[run])
    del total
    step_share.mul_(part)
    rest_share.mul_(part)
    # A share above its run's pairs is cut to them; the excess goes to the room left.
    excess, free, scratch = torch.zeros_like(t), torch.zeros_like(t), part
    for share, pairs in ((step_share, step), (rest_share, rest)):
        excess.index_add_(0, run, torch.sub(share, pairs, out=scratch).clamp_(min=0))
        share.clamp_(max=pairs)
        free.index_add_(0, run, torch.sub(pairs, share, out=scratch))
    del rest_share, rest
    room = torch.sub(step, step_share, out=scratch)
    held = step_share.add_(room.mul_(excess.div_(free.clamp_(min=1e-300))[run]))
    del excess, free, room, scratch, part
    return _ones_before(held, step, ones, n, run)


def _ones_before(held: Tensor, step: Tensor, ones: Tensor, n: Tensor, run: Tensor) -> Tensor:
    """The ones before each boundary from the minority labels ``held`` in each boundary's
    run of ``step`` pairs (``run``: its cell's place). Overwrites ``held`` and ``step``."""
    # Ones in each boundary's run: the share, or the run's pairs less the share of zeros.
    held = torch.where(ones > n - ones, step.sub_(held), held)
    del step
    # The ones before each boundary, counted from its cell's start: the running sum less
    # its value before the cell's first run (the least in the cell, as no run is < 0).
    before = torch.cumsum(held, 0)
    offset = torch.sub(before, held, out=held)
    offset = torch.full_like(before, math.inf).scatter_reduce_(0, run, offset, "amin")
    return before.sub_(offset[run])


def _log_gamma_times(alpha: Tensor, pairs: Tensor, g: torch.Generator) -> Tensor:
    """α·log of a Gamma(α·pairs) variate, taken as Γ(a + 1)·U^(1/a) for shape a: α·log
    Γ(α·pairs + 1) + log U / pairs (−inf for no pairs), finite at any α ≥ 0, where a
    Gamma variate of a small shape underflows to 0 and 1/a divides by 0. The Gamma(a + 1)
    variates are ``torch._standard_gamma``'s, the sampler of ``torch.distributions.Gamma``,
    which takes a generator (the public sampler does not)."""
    score = torch._standard_gamma(alpha * pairs + 1, generator=g).log_().mul_(alpha)
    uniform = torch.rand(pairs.shape, generator=g, dtype=pairs.dtype, device=pairs.device)
    score += uniform.neg_().log1p_().div_(pairs.clamp(min=1))
    return score.masked_fill_(pairs == 0, -math.inf)


def _ordered_draw(k: Tensor, t: Tensor, n: Tensor, ones: Tensor, g: torch.Generator) -> Tensor:
    """The ones among the first t of a cell's n pairs in a uniformly random order of its
    labels (its ``ones`` first, then its zeros), one order per cell shared by all its
    boundaries: the exact hypergeometric draw, always a feasible count.

    The normal bridge that larger cells had, clipped to feasible counts, cut its tails,
    and in cells of a few pairs that is most of the noise: with bins of 5 pairs and about
    10 pairs a cell the plug-in error came out 5–7% low, beyond its tolerance (issue 15's
    state probe).
    Cells are drawn in chunks of ``_DRAW_ROWS`` of similar size (one host read each), so
    memory stays at a few MiB and a chunk of small cells draws few keys."""
    first = torch.ones_like(k, dtype=torch.bool)
    first[1:] = k[1:] != k[:-1]
    run = torch.cumsum(first, 0) - 1
    cells_n, cells_ones = n[first].long(), ones[first].long()
    by_size = cells_n.argsort(stable=True)
    place = torch.empty_like(by_size)
    place[by_size] = torch.arange(by_size.numel(), device=k.device)
    boundary_place = place[run]
    before = torch.zeros_like(t)
    for start in range(0, by_size.numel(), _DRAW_ROWS):
        cells = by_size[start : start + _DRAW_ROWS]
        size, held = cells_n[cells], cells_ones[cells]
        width = int(size[-1].item())  # the chunk's largest cell: sizes ascend
        keys = torch.rand((cells.numel(), width), generator=g, dtype=torch.float64, device=k.device)
        keys.masked_fill_(torch.arange(width, device=k.device) >= size[:, None], 2.0)
        label_at = keys.argsort(dim=1)  # slot j holds label label_at[c, j]: ones come first
        ones_before = torch.cumsum(label_at < held[:, None], dim=1)
        mine = (boundary_place >= start) & (boundary_place < start + cells.numel())
        rows, slots = boundary_place[mine] - start, t[mine].long() - 1
        before[mine] = ones_before[rows, slots].to(t.dtype)
    return before


def cell_variance(count: Tensor, sum_r: Tensor, sum_r2: Tensor) -> Tensor:
    """Each cell's variance of q (0 for empty cells).

    Example:
        >>> state = empty(8)
        >>> accumulate(state, torch.tensor([0.9, 0.91]), torch.tensor([1, 0]))
        >>> round(cell_variance(*state[:3]).max().item(), 8)
        2.5e-05
    """
    n_safe = count.clamp(min=1)
    return (sum_r2 / n_safe - (sum_r / n_safe) ** 2).clamp_(min=0)


def tied_cells(state: Sketch) -> Tensor:
    """Which cells hold one value only (empty cells included): their lowest and highest q
    are equal. A cut cell of one value is a tie group, shared out by the exact mode's tie
    rule, not redrawn.

    Example:
        >>> state = empty(8)
        >>> accumulate(state, torch.tensor([0.2, 0.2, 0.9, 0.91]), torch.tensor([1, 0, 1, 1]))
        >>> tied_cells(state)[state.count > 0].tolist()
        [True, False]
        >>> state = empty(8)  # float32 neighbours: the exact mode sorts them, so no tie
        >>> q = torch.tensor([0.3, 0.3, 0.3]).nextafter(torch.tensor([0.3, 0.3, 1.0]))
        >>> accumulate(state, q, torch.tensor([1, 0, 1]))
        >>> tied_cells(state)[state.count > 0].tolist()
        [False]
    """
    return (state.count == 0) | (state.low == state.high)


def to_bins(state: Sketch, bin_size: int, *, redraw: bool = True) -> Bins:
    """Adaptive bins of ``bin_size`` pairs (in q order) from one sketch ``[R]``.

    Bin boundaries fall at the exact algorithm's ranks; see the module docstring for how
    a cell cut by a boundary is shared out. The bins carry the tie groups (cut cells of
    one value) that the boundaries cut, as the exact mode's do
    (:class:`~calib_metrics.functional.binning.TiedBins`). The pairs of a cut cell of
    several values are distinct values, untied, as in the exact mode. With ``redraw``
    (for the plug-in error, which measures label noise) such a cell's labels are
    redrawn with their full noise. Without it (for the debiased error) the cell is
    shared out at its mean label and each bin carries the variance of its label sum that
    the sharing leaves open (``unplaced``), which the debiased square adds back
    (:func:`~calib_metrics.functional.intervals.debiased_square`): the square is then the
    exact mode's in expectation given the sketch, with no redrawn noise.

    Example:
        >>> state = empty(64)
        >>> probs = torch.linspace(0.01, 0.99, 1000)
        >>> accumulate(state, probs, (probs > 0.5).long())
        >>> bins = to_bins(state, bin_size=250)
        >>> bins.count.tolist(), bins.freq.tolist()
        ([250.0, 250.0, 250.0, 250.0], [0.0, 0.0, 1.0, 1.0])
    """
    count, sum_r, sum_r2, sum_y = state[:4]
    cells = boundary_cells(count, bin_size)
    resolution = count.shape[-1]
    upper = torch.arange(resolution, device=count.device) >= resolution // 2
    sum_q = sum_r + count * upper
    tied = tied_cells(state)
    std = torch.where(tied, 0.0, cell_variance(count, sum_r, sum_r2).sqrt())
    cum_q, cum_y = torch.cumsum(sum_q, 0), torch.cumsum(sum_y, 0)
    q, y, cuts = _cumulative(cells, sum_q, sum_y, std, tied, cum_q, cum_y, redraw)
    size = cells.rank.diff()
    unplaced = None if redraw else _unplaced(cells, size, sum_y, tied)
    # Cells 0 and R − 1 hold exactly q = 0 and q = 1 (module docstring).
    sum_q = exact_end_bins(cells.rank, q.diff(), count[0], count[-1])
    return with_ties(bins_of_means(size, sum_q, y.diff()), cuts, unplaced)


def histogram(state: Sketch) -> tuple[Tensor, Tensor, Tensor]:
    """The non-empty cells of one sketch ``[R]`` as (mean q, count, Σy), in q order.

    The input of :func:`~calib_metrics.functional.smooth_calibration_from_histogram`,
    which smooths it without the pairs (its error bound: ``histogram_tolerance``). One
    host synchronisation (the number of non-empty cells).

    Example:
        >>> state = empty(64)
        >>> q = torch.tensor([0.2, 0.2, 0.9], dtype=torch.float64)
        >>> accumulate(state, q, torch.tensor([1, 0, 1]))
        >>> [t.tolist() for t in histogram(state)]
        [[0.2, 0.9], [2.0, 1.0], [1.0, 1.0]]
    """
    count, sum_r, _, sum_y, low, high = state
    resolution = count.shape[-1]
    upper = torch.arange(resolution, device=count.device) >= resolution // 2
    # The non-empty cells found once: each selection by the mask had waited for the
    # device again (seven reads where one is stated).
    full = (count > 0).nonzero().squeeze(1)
    n, sum_y, low, high = (t.index_select(0, full) for t in (count, sum_y, low, high))
    # Σq = Σr + n·[upper half]; a cell of one value gives that value back exactly.
    mean = ((sum_r.index_select(0, full) + n * upper.index_select(0, full)) / n).clamp_(0, 1)
    return torch.where(low == high, low, mean), n, sum_y


# A bin boundary lands in a cell in proportion to its pairs, so the cells a bin spans are
# counted as the boundaries see them: β over the pair-weighted mean size of the cells of
# several values, β·Σc/Σc². Below this many, the cut cells are so large that their shared
# labels move a debiased error near 0 by more than the documented gap. From the 10⁹
# float32 uniform runs of benchmarks/drift_resolution.py (docs/streaming.md), counted in
# the sketches those runs fold (tests/test_sketch_coarse.py rebuilds them value by value):
# 0.25 (2¹⁸ cells, β = 5000) and 0.98 (2²⁰) missed it, 1.94 (2²¹) and 3.8 (2²²) met it.
# Unweighted counts (cells over pairs) had moved 1.6–1.9× with the data's precision, as the
# many one-value cells near the ends came and went, while the gap did not.
MIN_CELLS_PER_BIN = 1.5


class ExactCost(NamedTuple):
    """What the exact mode would hold instead of the sketches: ``rows`` (a 0-dim tensor,
    read with the sketch's own sums) of at most ``row_bytes`` each (float64 values and
    int64 targets; float32 input takes less), beside ``sketches`` sketches (one per class,
    or one)."""

    rows: Tensor
    row_bytes: int
    sketches: int


def coarse_sketch_message(
    state: Sketch, bin_size: int, exact: ExactCost | None = None
) -> str | None:
    """Why a sketch ``[R]`` is too coarse for bins of ``bin_size``, with the resolution that
    would do; None when it has at least ``MIN_CELLS_PER_BIN`` cells per bin.

    Only cells that a finer sketch would split count: not a cell of one value, a tie
    group that the sketch shares out exactly as the exact mode does (:func:`tied_cells`),
    nor the two cells next to the ends, which hold every q beyond ±``LOGIT_RANGE`` in
    logit (0 < q < 1.1e-7, a sharp tagger's many tiny probabilities) at any resolution.
    Cells per bin = ``bin_size`` over the pair-weighted mean number of pairs of the cells
    that count (Σc²/Σc: the cell a bin boundary falls in). The resolution named is the
    least expected to give ``MIN_CELLS_PER_BIN`` with a margin (:func:`_finer_resolution`);
    the exact mode is named instead where none is, or (given ``exact``) where its rows
    take less memory than the sketches at that resolution would.
    One host synchronisation, and a second (the cells that count, copied to the host)
    when the sketch is too coarse.

    Example:
        >>> state = empty(64)
        >>> q = torch.linspace(0.01, 0.99, 6400)
        >>> accumulate(state, q, torch.bernoulli(q).long())
        >>> coarse_sketch_message(state, 6000) is None
        True
        >>> message = coarse_sketch_message(state, 200)
        >>> print(message)  # doctest: +NORMALIZE_WHITESPACE
        the streaming sketch has 0.36 cells per bin (bins of 200 pairs; a bin boundary
        falls in a cell of about 552 pairs, weighted by their pairs; 20 of 64 cells hold
        several values): the sketch can only share out the labels of the cells the
        boundaries cut, so the bins' label sums there (the reliability diagram's
        frequencies) are drawn (plug-in) or shared (debiased), not the data's: the error
        can miss the exact mode's by up to the metric's streaming_tolerance() (a debiased
        error near 0 most), which its interval, resampled from these bins, leaves out;
        pass resolution=512 (expected to give at least 1.5 cells per bin, 0.02 MiB a
        sketch) or use the exact mode
        >>> rounded = torch.full((6400,), 0.5)  # one value: a tie group, shared exactly
        >>> state = empty(64)
        >>> accumulate(state, rounded, torch.bernoulli(rounded).long())
        >>> coarse_sketch_message(state, 200) is None
        True
    """
    return coarse_sketches_message([(state, bin_size)], exact)


class _Coarse(NamedTuple):
    """A sketch with too few cells per bin: what the warning says of it."""

    per_bin: float
    cell_size: float
    occupied: int
    resolution: int
    bin_size: int
    finer: int | None


def coarse_sketches_message(
    sketches: Sequence[tuple[Sketch, int]], exact: ExactCost | None = None
) -> str | None:
    """:func:`coarse_sketch_message` over several sketches with their bin sizes (a
    metric's classes): the coarsest is described, and the resolution named is the finest
    that any of them needs (a class packed in a few cells had been left for a second
    warning). One host synchronisation a sketch, and one more for each that is too coarse.
    """
    rows = None if exact is None else exact.rows
    found = []
    for state, bin_size in sketches:
        coarse, rows = _coarse(state, bin_size, rows)  # a tensor is read with the first
        if coarse is not None:
            found.append(coarse)
    if not found:
        return None
    worst = min(found, key=lambda c: c.per_bin)
    needed = [c.finer for c in found]
    finer = None if None in needed else max(needed)
    exact_mib = 0.0 if exact is None else float(rows) * exact.row_bytes / 2**20
    sketch_mib = 0.0 if finer is None else finer * BYTES_PER_CELL / 2**20
    bins = f"bins of {worst.bin_size} pair{'s' * (worst.bin_size != 1)}"
    if finer is None:
        remedy = (
            f"no sketch of up to {_MOST_CELLS:,} cells is expected to give "
            f"{MIN_CELLS_PER_BIN} cells per bin ({bins}): use the exact mode"
        )
    elif exact is not None and exact_mib <= sketch_mib * exact.sketches:
        remedy = (
            f"use the exact mode: it keeps these {float(rows):,.0f} rows in at most "
            f"{exact_mib:.2f} MiB, where the sketches that would do ({finer} cells) take "
            f"{sketch_mib * exact.sketches:.2f} MiB"
        )
    else:
        remedy = (
            f"pass resolution={finer} (expected to give at least {MIN_CELLS_PER_BIN} "
            f"cells per bin, {sketch_mib:.2f} MiB a sketch) or use the exact mode"
        )
    shown = f"{worst.per_bin:.2f}" if worst.per_bin >= 0.01 else f"{worst.per_bin:.1e}"
    if len(sketches) == 1:
        which = "the streaming sketch has"
    elif len(found) == 1:
        which = f"1 of {len(sketches)} streaming sketches has"
    else:
        which = f"{len(found)} of {len(sketches)} streaming sketches have as few as"
    return (
        f"{which} {shown} cells per bin ({bins}; a bin boundary "
        f"falls in a cell of about {worst.cell_size:,.0f} pairs, weighted by their pairs; "
        f"{worst.occupied} of {worst.resolution} cells hold several values): the sketch "
        "can only share out the labels of the cells the boundaries cut, so the bins' label "
        "sums there (the reliability diagram's frequencies) are drawn (plug-in) or shared "
        "(debiased), not the data's: the error can miss the exact mode's by up to the "
        "metric's streaming_tolerance() (a debiased error near 0 most), which its interval, "
        f"resampled from these bins, leaves out; {remedy}"
    )


def _coarse(
    state: Sketch, bin_size: int, rows: Tensor | float | None
) -> tuple[_Coarse | None, float | None]:
    """The sketch's count of cells per bin, and the resolution that would do when it is
    too coarse (None when it is not); ``rows`` read in the same synchronisation when it
    is a tensor."""
    count = state.count
    spread = (count > 0) & ~tied_cells(state)
    spread[[1, -2]] = False  # q beyond ±LOGIT_RANGE: no resolution splits them
    counted = torch.where(spread, count, 0).double()
    extra = rows.to(counted).reshape(()) if isinstance(rows, Tensor) else counted.new_zeros(())
    sums = torch.stack([counted.sum(), counted.square().sum(), spread.sum(), extra])
    pairs, squares, occupied, read = sums.double().tolist()
    read = read if isinstance(rows, Tensor) else rows
    if occupied == 0:
        return None, read
    cell_size = squares / pairs
    per_bin = bin_size / cell_size
    if per_bin >= MIN_CELLS_PER_BIN:
        return None, read
    resolution = count.shape[-1]
    cells = torch.stack([count, state.low, state.high])[:, spread].double().cpu()
    finer = _finer_resolution(*cells, resolution, bin_size)
    return _Coarse(per_bin, cell_size, int(occupied), resolution, bin_size, finer), read


# The finest sketch a warning names (1.5 GiB a class): past it, the exact mode.
_MOST_CELLS = MAX_RESOLUTION


def _finer_resolution(
    count: Tensor, low: Tensor, high: Tensor, resolution: int, bin_size: int
) -> int | None:
    """The least ``resolution · 2^k`` expected to give ``MIN_CELLS_PER_BIN`` cells per bin
    (with a margin), from the cells that count (their pairs, lowest and highest q; on the
    host); None when none of up to ``_MOST_CELLS`` cells is.

    A cell's pairs are taken as spread evenly between its lowest and highest q, over the
    ``p`` finer cells that span covers, Poisson with mean ``λ = c/p``: the parts of two
    pairs or more hold ``c(1 − e^−λ)`` pairs and ``c(1 + λ − e^−λ)`` of their squares (a
    part of one pair holds one value, and does not count). Scaling the resolution in
    proportion to the shortfall, as if every finer cell held several pairs, had named
    resolutions that warned again when followed; spreading the pairs over the whole cell,
    2²³ cells for 200,000 pairs within 0.5 ± 0.01.
    """
    low_position, high_position = _logit_position(low), _logit_position(high)
    finer = resolution
    while finer * 2 <= _MOST_CELLS:
        finer *= 2
        scale = finer / (2 * LOGIT_RANGE)
        spans = (high_position * scale).floor() - (low_position * scale).floor()
        parts = (spans.abs() + 1).clamp(max=finer // resolution)  # an edge value: no more
        mean = count / parts
        empty = torch.exp(-mean)
        pairs = (count * (1 - empty)).sum()
        squares = (count * (1 + mean - empty)).sum()
        # A margin over the threshold: the pairs are not quite even within a cell, and a
        # sketch that just meets it by the estimate had warned again when followed.
        if pairs > 0 and bin_size * pairs >= 1.2 * MIN_CELLS_PER_BIN * squares:
            return finer
    return None


def _logit_position(q: Tensor) -> Tensor:
    """Where ``q`` falls along its half's cells, in logit units from the middle (float64,
    unrounded: the estimate looks at resolutions past float32's cell indices)."""
    r = torch.where(q >= 0.5, 1 - q, q)
    return torch.logit(r).clamp(-LOGIT_RANGE, 0)
