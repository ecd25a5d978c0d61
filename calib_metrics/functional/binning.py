"""Adaptive (equal-mass) and uniform (equal-width) binning of (q, y) pairs.

Both return :class:`Bins`: per bin the mean prediction ``pred_mean`` (q̂ᵢ), the
label frequency ``freq`` (p̂ᵢ) and the number of pairs ``count`` (|Bᵢ|), in float64
whatever the input dtype, sorted by ``pred_mean``.

Adaptive binning is the paper's Algorithm 1, steps 1–4. Pairs are ordered by q with
ties broken by y (zeros first), so the bins never depend on the input order; bins are
consecutive runs of ``bin_size`` in that order and a short last run joins the one
before it. The implementation never sorts all N pairs: a histogram over the leading
bits of q (the bit pattern of a non-negative float orders like its value) locates the
bin boundaries, every pair in a histogram cell without a boundary is summed straight
into its bin, and only the few cells that a boundary cuts through are sorted.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.errors import NoPairsError

# Histogram cells over the leading bits of the key: up to 2**20 cells (about N/16),
# so the cells that a bin boundary cuts through stay small even where NLP models pile
# their mass (near 0 and 1), while small inputs do not pay for a huge histogram.
_MAX_CELL_BITS = 20
# Pairs are streamed through the passes in chunks to bound the extra memory: at most
# 2**21 pairs, and about an eighth of the input (at least 2**16) so that small inputs
# also keep their temporaries small next to themselves.
_CHUNK = 1 << 21
_MIN_CHUNK = 1 << 16
# Below this many pairs one sort is cheaper than the histogram's fixed cost.
_SORT_BELOW = 1 << 17


class Bins(NamedTuple):
    """Per-bin statistics, float64, sorted by ``pred_mean``.

    Attributes:
        pred_mean: mean prediction q̂ᵢ of each bin.
        freq: label frequency p̂ᵢ (fraction of y = 1) of each bin.
        count: number of pairs |Bᵢ| in each bin.
    """

    pred_mean: Tensor
    freq: Tensor
    count: Tensor


def check_probs(probs: Tensor) -> None:
    """Raise ValueError unless ``probs`` is a floating tensor of values in [0, 1]."""
    if not probs.is_floating_point():
        raise ValueError(f"probs must be a floating-point tensor, got {probs.dtype}")
    if probs.numel() == 0:
        return
    low, high = torch.aminmax(probs.reshape(-1))
    if torch.isnan(low) or torch.isnan(high):
        raise ValueError("probs contains NaN")
    if low < 0 or high > 1:
        raise ValueError(
            f"probs must lie in [0, 1] (got values in [{low.item():.4g}, {high.item():.4g}]); "
            "pass probabilities, not logits (apply sigmoid/softmax first)"
        )


def check_binary_target(target: Tensor) -> None:
    """Raise ValueError unless every target is 0 or 1 (bool, integer or float)."""
    if target.dtype == torch.bool or target.numel() == 0:
        return
    if target.is_complex():
        raise ValueError(f"target must be binary (0/1), got dtype {target.dtype}")
    low, high = torch.aminmax(target.reshape(-1))
    fractional = target.is_floating_point() and bool(torch.frac(target).any())
    if fractional or low < 0 or high > 1:
        bad = target[(target != 0) & (target != 1)][0].item()
        raise ValueError(f"target must be binary (0 or 1), found the value {bad!r}")


def _check_pairs(probs: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Validate (q, y) and return them flattened; raise ValueError naming the problem."""
    if not isinstance(probs, Tensor) or not isinstance(target, Tensor):
        raise ValueError(
            f"probs and target must be tensors, got {type(probs).__name__} and "
            f"{type(target).__name__}"
        )
    if probs.shape != target.shape:
        raise ValueError(
            f"probs and target must have the same shape, got {tuple(probs.shape)} and "
            f"{tuple(target.shape)}"
        )
    if probs.numel() == 0:
        raise NoPairsError("empty input: at least one (probability, target) pair is needed")
    if probs.device != target.device:
        raise ValueError(f"probs on {probs.device} but target on {target.device}")
    check_probs(probs)
    check_binary_target(target)
    return probs.reshape(-1), target.reshape(-1)


def _order_key(probs: Tensor) -> tuple[Tensor, int]:
    """Integer keys that order exactly like ``probs`` in [0, 1], and their bit width.

    The bit pattern of a non-negative float orders like its value but is coarse near
    1, where NLP models put much of their mass. For q > 1/2 the key is therefore built
    from 1 − q, which is exact in floating point there (Sterbenz), mirrored above the
    key of 1/2: q ≤ 1/2 ↦ bits(q), q > 1/2 ↦ 2·bits(1/2) − bits(1 − q). Equal q give
    equal keys, so ties stay ties.
    """
    if probs.dtype == torch.float64:
        as_int, half, width = torch.int64, 0x3FE0000000000000, 63
    else:
        probs, as_int, half, width = probs.to(torch.float32), torch.int32, 0x3F000000, 31
    # + 0.0 turns a -0.0 into +0.0, whose bit pattern would otherwise sort last.
    low = (probs + 0.0).view(as_int)
    high = 2 * half - (1.0 - probs).view(as_int)
    return torch.where(probs > 0.5, high, low), width


def _chunks(n: int) -> list[slice]:
    size = min(_CHUNK, max(_MIN_CHUNK, n // 8))
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def _sums_to_bins(count: Tensor, sum_q: Tensor, sum_y: Tensor) -> Bins:
    keep = count > 0
    count, sum_q, sum_y = count[keep], sum_q[keep], sum_y[keep]
    return Bins(sum_q / count, sum_y / count, count.to(torch.float64))


def _sort_pairs(key: Tensor, width: int, target: Tensor) -> Tensor:
    """The permutation that sorts pairs by key, then by y (zeros first)."""
    if width < 63:
        return torch.sort((key.to(torch.int64) << 1) | (target != 0).to(torch.int64))[1]
    by_label = torch.sort((target != 0).to(torch.uint8), stable=True)[1]
    return by_label.index_select(0, torch.sort(key.index_select(0, by_label), stable=True)[1])


def _bin_of_rank(rank: Tensor, bin_size: int, n_bins: int) -> Tensor:
    # Runs of bin_size in rank order; the short last run joins the bin before it.
    return torch.div(rank, bin_size, rounding_mode="floor").clamp_(max=n_bins - 1)


def _sorted_sums(
    probs: Tensor,
    target: Tensor,
    first_rank: Tensor | int,
    bin_size: int,
    n_bins: int,
    cell_bits: int = _MAX_CELL_BITS,
) -> tuple[Tensor, Tensor, Tensor]:
    """Sums per bin of pairs sorted by (q, y); ``first_rank`` maps each pair's histogram
    cell to the global rank of the cell's first pair (or 0 when sorting everything)."""
    key, width = _order_key(probs)
    order = _sort_pairs(key, width, target)
    q, y = probs.index_select(0, order), target.index_select(0, order)
    position = torch.arange(q.numel(), device=q.device)
    if isinstance(first_rank, Tensor):
        cell = key.index_select(0, order) >> (width - cell_bits)
        first_of_cell = torch.searchsorted(cell, cell, right=False)
        position = first_rank.index_select(0, cell) + position - first_of_cell
    b = _bin_of_rank(position, bin_size, n_bins)
    count = torch.bincount(b, minlength=n_bins).to(torch.float64)
    sum_q = torch.zeros_like(count).index_add_(0, b, q.to(torch.float64))
    sum_y = torch.zeros_like(count).index_add_(0, b, y.to(torch.float64))
    return count, sum_q, sum_y


def adaptive_bin_sums(probs: Tensor, target: Tensor, bin_size: int) -> tuple[Tensor, ...]:
    """Per-bin (count, sum of q, sum of y) of the adaptive bins, in float64.

    The pairs must already be validated and flat (see :func:`adaptive_binning`).
    """
    n = probs.numel()
    device = probs.device
    n_bins = max(1, n // bin_size)
    if n <= _SORT_BELOW:
        return _sorted_sums(probs, target, 0, bin_size, n_bins)
    cell_bits = min(_MAX_CELL_BITS, max(10, n.bit_length() - 4))
    n_cells = 1 << cell_bits

    # Pass 1: how many pairs fall in each histogram cell (leading bits of the key).
    parts = _chunks(n)
    cells = []
    cell_size = torch.zeros(n_cells, dtype=torch.int64, device=device)
    for part in parts:
        key, width = _order_key(probs[part])
        # int32 is enough for 2**20 cells and halves the one list kept across passes.
        cells.append((key >> (width - cell_bits)).to(torch.int32))
        cell_size += torch.bincount(cells[-1], minlength=n_cells)
    cell_end = torch.cumsum(cell_size, 0)
    cell_start = cell_end - cell_size
    first_bin = _bin_of_rank(cell_start, bin_size, n_bins)
    last_bin = _bin_of_rank((cell_end - 1).clamp_min(0), bin_size, n_bins)
    # A cell that a boundary cuts through goes to the overflow bin ``n_bins`` for now.
    cut = (first_bin != last_bin) & (cell_size > 0)
    bin_of_cell = torch.where(cut, n_bins, first_bin)

    # Pass 2: sums per bin; pairs of cut cells are set aside to be sorted.
    # (index_select and index_add_ are much faster than fancy indexing and bincount.)
    count = torch.zeros(n_bins + 1, dtype=torch.float64, device=device)
    sum_q = torch.zeros_like(count)
    sum_y = torch.zeros_like(count)
    cut_q, cut_y = [], []
    any_cut = bool(cut.any())
    for part, cell in zip(parts, cells):
        b = bin_of_cell.index_select(0, cell)
        q, y = probs[part], target[part]
        count += torch.bincount(b, minlength=n_bins + 1)
        sum_q.index_add_(0, b, q.to(torch.float64))
        sum_y.index_add_(0, b, y.to(torch.float64))
        if any_cut:
            pick = (b == n_bins).nonzero().squeeze(1)
            cut_q.append(q.index_select(0, pick))
            cut_y.append(y.index_select(0, pick))
    count, sum_q, sum_y = count[:n_bins], sum_q[:n_bins], sum_y[:n_bins]
    if any_cut:
        q, y = torch.cat(cut_q), torch.cat(cut_y)
        extra = _sorted_sums(q, y, cell_start, bin_size, n_bins, cell_bits)
        count, sum_q, sum_y = count + extra[0], sum_q + extra[1], sum_y + extra[2]
    return count, sum_q, sum_y


def adaptive_binning(probs: Tensor, target: Tensor, bin_size: int = 5000) -> Bins:
    """Equal-mass bins of ``bin_size`` consecutive pairs in (q, y) order (Algorithm 1).

    Args:
        probs: predicted probabilities q in [0, 1], any shape and floating dtype.
        target: binary labels y of the same shape (bool, integer or float 0/1).
        bin_size: target bin size β; fewer than β pairs make one bin, and a short last
            run is merged into the bin before it.

    Returns:
        :class:`Bins` in float64, sorted by ``pred_mean``.

    Example:
        >>> import torch
        >>> probs = torch.tensor([0.1, 0.9, 0.1, 0.8, 0.2, 0.7])
        >>> target = torch.tensor([0, 1, 1, 1, 0, 0])
        >>> bins = adaptive_binning(probs, target, bin_size=2)
        >>> bins.pred_mean
        tensor([0.1000, 0.4500, 0.8500], dtype=torch.float64)
        >>> bins.freq
        tensor([0.5000, 0.0000, 1.0000], dtype=torch.float64)
        >>> bins.count
        tensor([2., 2., 2.], dtype=torch.float64)
    """
    if not isinstance(bin_size, int) or isinstance(bin_size, bool) or bin_size < 1:
        raise ValueError(f"bin_size must be a positive integer, got {bin_size!r}")
    probs, target = _check_pairs(probs, target)
    return _sums_to_bins(*adaptive_bin_sums(probs, target, bin_size))


def uniform_bin_of(probs: Tensor, n_bins: int) -> Tensor:
    """Equal-width bin of each probability, 0 … n_bins − 1 (q = 1 in the last bin).

    The edges are ``linspace(0, 1, n_bins + 1)`` in the input's own dtype, as
    torchmetrics builds them, so a probability on an inner edge falls where it falls
    there. ``probs`` must be validated.

    Example:
        >>> import torch
        >>> uniform_bin_of(torch.tensor([0.0, 0.65, 0.7, 1.0]), 10)
        tensor([0, 6, 7, 9])
    """
    edges = torch.linspace(0, 1, n_bins + 1, dtype=probs.dtype, device=probs.device)
    return (torch.bucketize(probs, edges, right=True) - 1).clamp_(0, n_bins - 1)


def uniform_binning(probs: Tensor, target: Tensor, n_bins: int = 15) -> Bins:
    """Equal-width bins over [0, 1]; empty bins are dropped.

    Bin i holds q in [eᵢ, eᵢ₊₁) with the edges ``linspace(0, 1, n + 1)`` computed in the
    input's dtype, as in torchmetrics' ``BinaryCalibrationError``, so a q on an inner
    edge lands in the same bin as there (float32(0.7) < float32 edge 0.7 would not hold
    against float64 edges); the sums are float64 whatever the dtype. The one difference:
    q = 1 belongs to the last bin here, while torchmetrics gives it a bin of its own.

    Example:
        >>> import torch
        >>> bins = uniform_binning(torch.tensor([0.05, 0.15, 0.95]), torch.tensor([0, 1, 1]), 10)
        >>> bins.pred_mean
        tensor([0.0500, 0.1500, 0.9500], dtype=torch.float64)
        >>> bins.freq
        tensor([0., 1., 1.], dtype=torch.float64)
    """
    if not isinstance(n_bins, int) or isinstance(n_bins, bool) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    probs, target = _check_pairs(probs, target)
    b = uniform_bin_of(probs, n_bins)
    q = probs.to(torch.float64)
    count = torch.bincount(b, minlength=n_bins).to(torch.float64)
    sum_q = torch.zeros_like(count).index_add_(0, b, q)
    sum_y = torch.zeros_like(count).index_add_(0, b, target.to(torch.float64))
    return _sums_to_bins(count, sum_q, sum_y)
