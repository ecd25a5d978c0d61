"""A fixed-size, mergeable histogram of (q, y) pairs for streaming and DDP.

The sketch holds, per cell, the number of pairs, Σq and Σy in float64. Cells are of
equal width in logit space, log(q / (1 − q)) ∈ [−L, L] with L = ``LOGIT_RANGE``, so
they are fine where NLP models put most of their mass, near 0 and 1: with the default
``resolution`` of 2¹⁴ cells a cell is 0.002 wide in logit, i.e. about 0.05% of q near
1/2 and 0.2% of q (relative) near 0 and of 1 − q near 1. Predictions beyond ±L
(q < 1.1e-7 or q > 1 − 1.1e-7), including exact 0 and 1, share the two end cells.

Two sketches merge by adding their tensors, so the state size never depends on the
number of pairs and DDP reduces it with a sum. Bin means come from exact sums; what is
approximate is only which bin the pairs of one cell go to: adaptive bins are formed
from whole cells, each cell joining the bin in which its first pair would fall in the
exact algorithm (rank // bin_size), and a short last run joins the bin before it.
"""

from __future__ import annotations

import torch
from torch import Tensor

from calib_metrics.functional.binning import Bins, _sums_to_bins

DEFAULT_RESOLUTION = 1 << 14
LOGIT_RANGE = 16.0


def num_cells(resolution: int = DEFAULT_RESOLUTION) -> int:
    """Number of cells of a sketch of the given resolution (validated).

    Example:
        >>> num_cells(1024)
        1024
    """
    if not isinstance(resolution, int) or isinstance(resolution, bool) or resolution < 2:
        raise ValueError(f"resolution must be an integer >= 2, got {resolution!r}")
    return resolution


def cell_index(probs: Tensor, resolution: int = DEFAULT_RESOLUTION) -> Tensor:
    """The sketch cell of each probability (Long, same shape).

    Example:
        >>> cell_index(torch.tensor([0.0, 0.5, 1.0]), resolution=8)
        tensor([0, 4, 7])
    """
    q = probs.to(torch.float32)
    logit = torch.log(q) - torch.log1p(-q)
    scaled = (logit.clamp_(-LOGIT_RANGE, LOGIT_RANGE) + LOGIT_RANGE) * (
        resolution / (2 * LOGIT_RANGE)
    )
    return scaled.long().clamp_(0, resolution - 1)


def accumulate(count: Tensor, sum_q: Tensor, sum_y: Tensor, probs: Tensor, target: Tensor) -> None:
    """Add binary pairs to a sketch (``count``, ``sum_q``, ``sum_y`` of shape [R]) in place.

    Example:
        >>> count, sum_q, sum_y = (torch.zeros(8, dtype=torch.float64) for _ in range(3))
        >>> accumulate(count, sum_q, sum_y, torch.tensor([0.5, 0.5, 0.9]), torch.tensor([1, 0, 1]))
        >>> count.nonzero().flatten().tolist(), count.sum().item(), sum_y.sum().item()
        ([4], 3.0, 2.0)
    """
    cell = cell_index(probs.reshape(-1), count.shape[-1])
    count.index_add_(0, cell, torch.ones_like(cell, dtype=count.dtype))
    sum_q.index_add_(0, cell, probs.reshape(-1).to(sum_q.dtype))
    sum_y.index_add_(0, cell, target.reshape(-1).to(sum_y.dtype))


def accumulate_rows(
    count: Tensor, sum_q: Tensor, sum_y: Tensor, probs: Tensor, target: Tensor
) -> None:
    """Add multiclass pairs: ``probs``/``target`` [n, C] into per-class sketches [C, R]."""
    n_classes, resolution = count.shape
    cell = cell_index(probs, resolution)
    offset = torch.arange(n_classes, device=cell.device) * resolution
    flat = (cell + offset).reshape(-1)
    count.view(-1).index_add_(0, flat, torch.ones_like(flat, dtype=count.dtype))
    sum_q.view(-1).index_add_(0, flat, probs.reshape(-1).to(sum_q.dtype))
    sum_y.view(-1).index_add_(0, flat, target.reshape(-1).to(sum_y.dtype))


def to_bins(count: Tensor, sum_q: Tensor, sum_y: Tensor, bin_size: int) -> Bins:
    """Adaptive bins of about ``bin_size`` pairs formed from whole cells of a sketch.

    Example:
        >>> count, sum_q, sum_y = (torch.zeros(64, dtype=torch.float64) for _ in range(3))
        >>> probs = torch.linspace(0.01, 0.99, 1000)
        >>> accumulate(count, sum_q, sum_y, probs, (probs > 0.5).long())
        >>> bins = to_bins(count, sum_q, sum_y, bin_size=250)
        >>> bins.count.sum().item(), len(bins.count)
        (1000.0, 4)
    """
    if not isinstance(bin_size, int) or isinstance(bin_size, bool) or bin_size < 1:
        raise ValueError(f"bin_size must be a positive integer, got {bin_size!r}")
    total = count.sum()
    n_bins = max(1, int(total.item()) // bin_size)
    start = torch.cumsum(count, 0) - count
    bin_of_cell = torch.div(start, bin_size, rounding_mode="floor").long().clamp_(max=n_bins - 1)
    out = [
        torch.zeros(n_bins, dtype=torch.float64, device=count.device).index_add_(0, bin_of_cell, x)
        for x in (count, sum_q, sum_y)
    ]
    return _sums_to_bins(*out)
