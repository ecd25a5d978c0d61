"""The tie groups that bin boundaries cut, and the effective sample size they leave.

**Why.** The tie rule (DESIGN.md) gives every bin that a tie group g (N_g pairs of one
q) meets its share c_gb of the group's pairs at the group's mean label Ȳ_g. A bin's
frequency is then p̂_b = (Σ of its untied labels + Σ_g c_gb·Ȳ_g)/n_b, and with
independent labels of mean p its variance is p(1 − p)·V_b/n_b², where

    V_b = Σ_g c_gb²/N_g

over the groups that meet the bin (an untied pair is a group with c = N = 1; a group
wholly inside the bin has c = N_g and counts N_g, as its untied pairs would). So p̂_b
is as noisy as a mean of n_eff,b = n_b²/V_b labels (n_eff ≥ n_b: sharing a group's
mean over several bins averages more labels than the bin holds). The debias term
p̂(1 − p̂)/(n_eff − 1) is then unbiased for that variance (see
:func:`~calib_metrics.functional.intervals.debiased_square`).

**Cuts.** A group with pairs on both sides of a boundary is *cut* there. Only cut
groups differ from untied pairs, and a bin meets at most two of them, the one its lower
boundary cuts and the one its upper boundary cuts (the same group when it spans the
whole bin). :class:`TieCuts` records, per boundary (T + 1 of them for T bins, the first
and last never cut), the cut group's size, its pairs before the boundary and its ones;
the exact binning (radix select) and the streaming sketch (a cut cell of one value)
know them. Bins given without them (:func:`run_cuts`) fall back to the runs of adjacent
bins with equal gap and frequency, which only catches bins lying wholly inside a group.

**Draws.** The bootstrap over units (pairs, groups) shares each tied pair over its
group's bins (:func:`~calib_metrics.functional.intervals.unit_sum_matrix`), so a draw
moves a cut group's bins together, with the variance n_eff assumes.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


class TieCuts(NamedTuple):
    """Per bin boundary, in rank order (T + 1 for T bins): the tie group cut there.

    Attributes:
        size: N_g, the cut group's number of pairs (0 where no group is cut).
        before: its pairs before the boundary (0 < before < size where cut, else 0).
        ones: its number of y = 1 (0 where no group is cut).
    """

    size: Tensor
    before: Tensor
    ones: Tensor


def no_cuts(count: Tensor) -> TieCuts:
    """Cuts of bins that no tie group straddles (uniform bins, untied data).

    Example:
        >>> no_cuts(torch.tensor([3.0, 4.0])).size.tolist()
        [0.0, 0.0, 0.0]
    """
    zero = count.new_zeros(count.shape[-1] + 1)
    return TieCuts(zero, zero, zero)


class CutCells(NamedTuple):
    """Where the tie groups that bin boundaries cut lie, pair by pair (:func:`cut_cells`).

    Attributes:
        cut_pair: per pair, whether its tie group is cut (meets two bins or more).
        group_of_pair: per pair, its cut group's id in [0, G_cut) (meaningless elsewhere).
        group_size: per cut group, its number of pairs N_g.
        cell_group: per cut cell (a cut group × a bin it meets), the group's id.
        cell_bin: the cell's bin.
        cell_count: the group's pairs in that bin c_gb (float64).
    """

    cut_pair: Tensor
    group_of_pair: Tensor
    group_size: Tensor
    cell_group: Tensor
    cell_bin: Tensor
    cell_count: Tensor

    @property
    def share(self) -> Tensor:
        """Each cut cell's share c_gb/N_g of its group's pairs."""
        return self.cell_count / self.group_size.index_select(0, self.cell_group)


def cut_cells(probs: Tensor, index: Tensor, n_bins: int) -> CutCells:
    """The tie groups (pairs of one q) that the bins cut, from flat ``probs`` and each
    pair's bin ``index``: one ``torch.unique`` of the values and one of the (value, bin)
    cells, on the input's device (their sizes synchronise the host).

    Example:
        Three pairs at 0.5 split 1/2 between bins 0 and 1:

        >>> cells = cut_cells(torch.tensor([0.1, 0.5, 0.5, 0.5]), torch.tensor([0, 0, 1, 1]), 2)
        >>> cells.cut_pair.tolist(), cells.cell_bin.tolist(), cells.share.tolist()
        ([False, True, True, True], [0, 1], [0.3333333333333333, 0.6666666666666666])
    """
    key, size = torch.unique(probs, return_inverse=True, return_counts=True)[1:]
    cells, cell_of_pair = torch.unique(key * n_bins + index, return_inverse=True)
    cell_key, cell_bin = cells // n_bins, cells % n_bins
    spread = torch.bincount(cell_key, minlength=size.numel()) > 1
    cut_id = torch.cumsum(spread.long(), 0) - 1
    cell_count = torch.bincount(cell_of_pair, minlength=cells.numel()).to(torch.float64)
    in_cut = spread.index_select(0, cell_key)
    return CutCells(
        cut_pair=spread.index_select(0, key),
        group_of_pair=cut_id.index_select(0, key),
        group_size=size[spread].to(torch.float64),
        cell_group=cut_id.index_select(0, cell_key[in_cut]),
        cell_bin=cell_bin[in_cut],
        cell_count=cell_count[in_cut],
    )


class BinParts(NamedTuple):
    """Per bin: the pairs of the group cut at its lower edge (``low``) and at its upper
    edge (``high``), those groups' sizes and ones, and whether they are one group
    (``whole``: the group spans the bin, ``low = high = count``)."""

    low: Tensor
    high: Tensor
    low_size: Tensor
    high_size: Tensor
    low_ones: Tensor
    high_ones: Tensor
    whole: Tensor


def bin_parts(count: Tensor, cuts: TieCuts) -> BinParts:
    """Each bin's shares of the groups its boundaries cut (see :class:`BinParts`).

    Example:
        >>> cuts = TieCuts(*torch.tensor([[0.0, 5, 5, 0], [0, 2, 4, 0], [0, 1, 1, 0]]))
        >>> parts = bin_parts(torch.tensor([4.0, 2.0, 4.0]), cuts)
        >>> parts.low.tolist(), parts.high.tolist(), parts.whole.tolist()
        ([0.0, 2.0, 1.0], [2.0, 2.0, 0.0], [False, True, False])
    """
    low_size, high_size = cuts.size[..., :-1], cuts.size[..., 1:]
    low = torch.minimum(low_size - cuts.before[..., :-1], count)
    high = torch.minimum(cuts.before[..., 1:], count)
    low, high = torch.where(low_size > 0, low, 0), torch.where(high_size > 0, high, 0)
    # One group at both edges: its pairs before the upper edge exceed those before the
    # lower edge by exactly the bin's count.
    step = cuts.before[..., 1:] - cuts.before[..., :-1]
    whole = (low_size > 0) & (high_size > 0) & (step == count)
    return BinParts(low, high, low_size, high_size, cuts.ones[..., :-1], cuts.ones[..., 1:], whole)


def effective_counts(count: Tensor, cuts: TieCuts) -> Tensor:
    """n_eff,b = n_b²/V_b, V_b = Σ_g c_gb²/N_g (module docstring); n_b where no group
    is cut.

    Example:
        A group of 5 split 2/3 between two bins of 4 (each bin's other pairs untied):
        V = 2 + 2²/5 = 2.8 in the first, 1 + 3²/5 = 2.8 in the second.

        >>> cuts = TieCuts(*torch.tensor([[0.0, 5, 0], [0, 2, 0], [0, 1, 0]]))
        >>> effective_counts(torch.tensor([4.0, 4.0], dtype=torch.float64), cuts)
        tensor([5.7143, 5.7143], dtype=torch.float64)
    """
    p = bin_parts(count, cuts)
    low_size, high_size = p.low_size.clamp_min(1), p.high_size.clamp_min(1)
    spread = count - p.low - p.high + p.low**2 / low_size + p.high**2 / high_size
    spread = torch.where(p.whole, count**2 / high_size, spread)
    cut = (p.low > 0) | (p.high > 0)
    return torch.where(cut, count**2 / spread.clamp_min(1e-300), count)


def tie_runs(gap: Tensor, freq: Tensor) -> Tensor:
    """Run ids along the last dimension: adjacent bins with equal gap and frequency share
    one id, 0, 1, ... in order.

    "Equal" allows for the rounding of the binning's prefix sums (1e-9 in float64, 1e-5
    otherwise): distinct bins' mean predictions differ by far more.

    Example:
        >>> t = torch.tensor
        >>> tie_runs(t([0.1, 0.1, 0.1, 0.2]), t([0.5, 0.5, 0.4, 0.4])).tolist()
        [0, 0, 1, 2]
    """
    eps = 1e-9 if freq.dtype == torch.float64 else 1e-5
    same = torch.isclose(gap[..., 1:], gap[..., :-1], rtol=eps, atol=eps) & torch.isclose(
        freq[..., 1:], freq[..., :-1], rtol=eps, atol=eps
    )
    # The first bin starts a run; sized from the broadcast shape (gap [K] may meet draws'
    # freq [S, K]), not from ``same``, which is empty for a single bin. Broadcast on the
    # first bins (not torch.broadcast_shapes, which imports sympy on its first call).
    first = torch.ones_like(gap[..., :1] + freq[..., :1], dtype=torch.bool)
    starts = torch.cat([first, ~same], dim=-1)
    return torch.cumsum(starts.long(), dim=-1) - 1


def neighbour_run_gaps(gap: Tensor, freq: Tensor) -> Tensor:
    """Each bin's gap replaced by the mean gap of the runs beside its own (:func:`tie_runs`;
    one neighbour at either end, 0 for a single run): a proxy for the bin's true gap whose
    noise, for independent labels, is independent of the bin's own (1-D bins).

    Example:
        >>> t = torch.tensor
        >>> gap = t([0.1, 0.1, 0.2, 0.4], dtype=torch.float64)
        >>> neighbour_run_gaps(gap, t([0.5, 0.5, 0.4, 0.3], dtype=torch.float64)).tolist()
        [0.2, 0.2, 0.25, 0.2]
    """
    run = tie_runs(gap, freq)
    n_runs = run.numel() and int(run[-1]) + 1
    if n_runs < 2:
        return torch.zeros_like(gap)
    run_gap = torch.zeros(n_runs, dtype=gap.dtype, device=gap.device).scatter_(0, run, gap)
    edge = run_gap.new_zeros(1)
    padded = torch.cat([edge, run_gap, edge])
    present = torch.cat([edge, torch.ones_like(run_gap), edge])
    beside = (padded[:-2] + padded[2:]) / (present[:-2] + present[2:])
    return beside.index_select(0, run)


def tie_run_counts(gap: Tensor, freq: Tensor, count: Tensor) -> Tensor:
    """Each bin's count summed over its run of equal (gap, frequency) bins (:func:`tie_runs`):
    the effective count of bare bins, whose cuts are not known (:func:`run_cuts`).

    Example:
        >>> t = torch.tensor
        >>> tie_run_counts(t([0.1, 0.1, 0.2]), t([0.5, 0.5, 0.4]), t([5.0, 7.0, 9.0])).tolist()
        [12.0, 12.0, 9.0]
    """
    if count.shape[-1] < 2:
        return count
    run = tie_runs(gap, freq)
    count = count.expand_as(run)
    totals = torch.zeros_like(count).scatter_add_(-1, run, count)
    return totals.gather(-1, run)


def run_cuts(gap: Tensor, freq: Tensor, count: Tensor) -> TieCuts:
    """The cuts that bare bins imply (along the last dimension): each run of adjacent
    bins with equal gap and frequency is taken for one tie group holding exactly those
    bins, cut at the boundaries inside the run. Its effective counts are :func:`tie_run_counts`.

    Example:
        >>> t = torch.tensor
        >>> cuts = run_cuts(t([0.1, 0.1, 0.2]), t([0.5, 0.5, 0.4]), t([5.0, 7.0, 9.0]))
        >>> cuts.size.tolist(), cuts.before.tolist(), cuts.ones.tolist()
        ([0.0, 12.0, 0.0, 0.0], [0.0, 5.0, 0.0, 0.0], [0.0, 6.0, 0.0, 0.0])
    """
    run = tie_runs(gap, freq)
    count = count.expand_as(run)
    totals = torch.zeros_like(count).scatter_add_(-1, run, count)
    ones = torch.zeros_like(count).scatter_add_(-1, run, count * freq)
    ends = torch.cumsum(count, -1)
    run_start = (torch.cumsum(totals, -1) - totals).gather(-1, run)
    inner = run[..., 1:] == run[..., :-1]
    no = torch.zeros_like(run[..., :1], dtype=torch.bool)  # not inner[..., :1]: empty for one bin
    inner = torch.cat([no, inner, no], dim=-1)
    pad = torch.zeros_like(ends[..., :1])
    size = torch.cat([pad, totals.gather(-1, run)], dim=-1)
    before = torch.cat([pad, ends - run_start], dim=-1)
    group_ones = torch.cat([pad, ones.gather(-1, run)], dim=-1)
    return TieCuts(*(torch.where(inner, v, 0) for v in (size, before, group_ones)))


def mixed_cuts(cuts: TieCuts) -> TieCuts:
    """``cuts`` less the groups of one label (mean label 0 or 1), which hold it in every
    bin they meet and in every draw: those left tie their bins' frequencies together.

    Example:
        >>> cuts = TieCuts(*torch.tensor([[0.0, 5, 4, 0], [0, 2, 1, 0], [0, 1, 4, 0]]))
        >>> mixed_cuts(cuts).size.tolist()
        [0.0, 5.0, 0.0, 0.0]
    """
    size, ones = cuts.size, cuts.ones
    mixed = (size > 0) & (ones > 1e-9 * size) & (ones < (1 - 1e-9) * size)
    return TieCuts(*(torch.where(mixed, v, 0) for v in cuts))


def cut_pairs(count: Tensor, cuts: TieCuts) -> Tensor:
    """The pairs of the tie groups that the boundaries of 1-D bins cut, each group
    counted once.

    Example:
        A group of 12 spanning the middle bin (cut at both of its edges) and one of 5:

        >>> cuts = TieCuts(*torch.tensor([[0.0, 12, 12, 5, 0], [0, 2, 6, 1, 0], [0] * 5]))
        >>> cut_pairs(torch.tensor([4.0, 4.0, 4.0, 4.0]), cuts).item()
        17.0
    """
    # A group spanning a whole bin is cut at both of its edges: counted at the lower one.
    whole = bin_parts(count, cuts).whole
    again = torch.cat([torch.zeros_like(whole[:1]), whole])
    return torch.where(again, 0, cuts.size).sum()
