"""Each bin's effective sample size when labels are correlated within groups.

**Why.** The debiased square subtracts each bin's label-mean variance, p̂(1 − p̂)/(n_eff − 1)
(:func:`~calib_metrics.functional.intervals.debiased_square`), which assumes independent
labels. Pairs of one group (a sentence's tokens, a document's mentions) that share a bin
are correlated, so the bin's frequency is noisier than that and the debiased square stays
biased upwards: on calibrated data with groups of 20 (Gaussian copula, ρ = 0.5) by
+9.5e-5 in the square, a root of ~0.01 where the truth is 0 (``docs/coverage.md``,
``benchmarks/grouped_debias.py``). Given ``groups=``, the library estimates each bin's
variance from the groups themselves (cluster-robust, "sandwich").

**Estimator.** Bin b's frequency is p̂ = Σᵢ aᵢyᵢ/n with aᵢ = 1 for its own pairs and
c/N for every pair of a tie group that its boundaries cut (the tie rule,
:mod:`calib_metrics.functional.ties`), n = Σᵢ aᵢ. Per group u meeting the bin,
C_u = Σ aᵢ, S_u = Σ aᵢyᵢ, the residual e_u = S_u − p̂·C_u and κ_u = Σ aᵢ² (over the
group's pairs that the bin counts). With groups independent and E yᵢ = p in the bin,
E Σ_u e_u² = Σ_u Var S_u·(1 − 2C_u/n) + Var p̂·Σ_u C_u², so where Var S_u ∝ κ_u

    V̂ = (K/n²)·Σ_u e_u² / (K − 2 Σ_u C_u κ_u/n + K Σ_u C_u²/n²),   K = Σ_u κ_u,

is unbiased for Var p̂: exactly for independent labels (untied, V̂ = p̂(1 − p̂)/(n − 1), the
ungrouped term itself) and for groups that meet the bin with equal parts (CR1's
Σ e²/n²·G/(G − 1)); approximately for correlated groups of unequal parts. The bin's
n_eff = 1 + p̂(1 − p̂)/V̂ makes the debias term equal V̂, so the debiased square and every
draw (which scales n_eff with its count) read it unchanged. A bin that one group fills
alone, or whose frequency is 0 or 1, keeps its ungrouped n_eff (:func:`effective_samples`
of the ties): its variance cannot be estimated from within.

**Cost.** Linear in the pairs: the pairs of a tie group cut over many bins are summed per
group once; the bins that lie wholly inside it take the group's own variance, scaled.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import Bins, TiedBins, bin_ties, bin_unplaced
from calib_metrics.functional.ties import CutCells, cut_cells, effective_counts

# n_eff of a bin whose groups all sit exactly at its mean (V̂ = 0 while 0 < p̂ < 1): the
# debias term is then 0 in effect, and a finite value keeps the draws' products finite.
_NO_VARIANCE = 1e15


def with_samples(bins: Bins, samples: Tensor) -> Bins:
    """``bins`` carrying each bin's effective sample size ``samples``, which the debiased
    square and the draws then read (:func:`~calib_metrics.functional.intervals.effective_samples`),
    and still what they carried: ties, ``unplaced``, and uniform bins' ``edges`` (lost, their
    diagram had counted them in the x axis' slices again: a comb).

    Example:
        >>> t = torch.tensor
        >>> bins = with_samples(Bins(t([0.2]), t([0.5]), t([4.0])), t([2.0]))
        >>> bins.samples.tolist(), tuple(bins)
        ([2.0], (tensor([0.2000]), tensor([0.5000]), tensor([4.])))
    """
    carried = TiedBins(*bins)
    carried.ties = bin_ties(bins)
    carried.unplaced = bin_unplaced(bins)
    carried.edges = getattr(bins, "edges", None)
    carried.samples = samples
    return carried


def grouped_effective_counts(
    probs: Tensor,
    target: Tensor,
    units: Tensor,
    index: Tensor,
    bins: Bins,
    cells: CutCells | None = None,
    n_units: int | None = None,
) -> Tensor:
    """Each bin's n_eff from the cluster-robust variance of its frequency (module docstring).

    ``probs``, ``target``, ``units`` (compact group ids in [0, G)) and ``index`` (each
    pair's bin) are flat and aligned; ``bins`` are the data's 1-D bins; ``cells``, the
    cut tie groups (:func:`~calib_metrics.functional.ties.cut_cells`) if already found;
    ``n_units``, G if known (else read from ``units``: a host sync).
    Tensors stay on the input's device; the host synchronises for sizes only: the number
    of groups, the distinct values and (bin, group) cells (``torch.unique``), whether any
    tie group is cut and, if so, how many of its members meet the bins at its ends.

    Example:
        Two groups of two share each bin; the first bin's groups are each all 1 or all 0,
        so its frequency is as noisy as two labels, not four.

        >>> t = torch.tensor
        >>> q = t([0.2, 0.2, 0.3, 0.3, 0.6, 0.6, 0.7, 0.7], dtype=torch.float64)
        >>> y = t([1, 1, 0, 0, 1, 0, 1, 0])
        >>> units, index = t([0, 0, 1, 1, 2, 2, 3, 3]), t([0, 0, 0, 0, 1, 1, 1, 1])
        >>> from calib_metrics.functional.binning import adaptive_binning
        >>> bins = adaptive_binning(q, y, 4)
        >>> grouped_effective_counts(q, y, units, index, bins).tolist()
        [2.0, 1000000000000000.0]

        With every pair its own group the untied counts come back:

        >>> grouped_effective_counts(q, y, torch.arange(8), index, bins).tolist()
        [4.0, 4.0]
    """
    count, freq = bins.count.to(torch.float64), bins.freq.to(torch.float64)
    n_bins = count.numel()
    if n_units is None:
        n_units = int(units.max().item()) + 1
    ungrouped = effective_counts(count, bin_ties(bins))
    y = target.reshape(-1).to(torch.float64)
    parts = _bin_parts_per_group(probs.reshape(-1), y, units, index, count, n_units, cells)
    sums, whole_bins, whole_variance, whole_groups = parts
    variance, groups_met, singletons = _cluster_variance(sums, count, freq, n_bins, n_units)
    variance[whole_bins] = whole_variance
    groups_met[whole_bins] = whole_groups
    singletons[whole_bins] = False
    spread = freq * (1 - freq)
    # Untied pairs that are each their own group give the ungrouped term by algebra; it
    # is taken as it is, so that singleton groups reproduce the pair bootstrap exactly.
    estimable = (groups_met >= 2) & (spread > 0) & ~variance.isnan() & ~singletons
    grouped = torch.where(
        variance > 0, 1 + spread / variance.clamp_min(1e-300), torch.full_like(count, _NO_VARIANCE)
    )
    return torch.where(estimable, grouped.clamp_max(_NO_VARIANCE), ungrouped)


class _CutMembers(NamedTuple):
    """The group members (units) of the tie groups that bin boundaries cut: per member,
    its tie group, unit, pairs c and ones r; per tie group, its size and mean label."""

    group: Tensor
    unit: Tensor
    c: Tensor
    r: Tensor
    size: Tensor
    mean: Tensor


def _bin_parts_per_group(
    probs: Tensor,
    y: Tensor,
    units: Tensor,
    index: Tensor,
    count: Tensor,
    n_units: int,
    cells: CutCells | None,
):
    """Per (bin, group) parts (bin, unit, C, S, κ) of the bins not inside one tie group,
    and for the bins wholly inside a cut tie group: their ids, variance and group count."""
    cells = cut_cells(probs, index, count.numel()) if cells is None else cells
    own = ~cells.cut_pair
    ones = torch.ones_like(y[own])
    parts = [(index[own], units[own], ones, y[own], ones)]
    if not bool(cells.cut_pair.any()):
        return _concat(parts), index.new_zeros(0), y.new_zeros(0), y.new_zeros(0)
    members = _cut_members(y, units, cells, n_units)
    # The cut cells: (tie group, bin, share c/N), and whether the group fills the bin.
    whole = cells.cell_count == count.index_select(0, cells.cell_bin)
    edge = ~whole
    parts.append(
        _edge_parts(members, cells.cell_group[edge], cells.cell_bin[edge], cells.share[edge])
    )
    variance, n_members = _whole_bin_variance(members, cells.cell_group[whole])
    return _concat(parts), cells.cell_bin[whole], variance, n_members


def _cut_members(y: Tensor, units: Tensor, cells: CutCells, n_units: int) -> _CutMembers:
    """Each cut tie group's pairs summed per member unit (:class:`_CutMembers`)."""
    cut_pair = cells.cut_pair
    member, member_of_pair = torch.unique(
        cells.group_of_pair[cut_pair] * n_units + units[cut_pair], return_inverse=True
    )
    c = y.new_zeros(member.numel()).index_add_(0, member_of_pair, torch.ones_like(y[cut_pair]))
    r = y.new_zeros(member.numel()).index_add_(0, member_of_pair, y[cut_pair])
    group, size = member // n_units, cells.group_size
    mean = y.new_zeros(size.numel()).index_add_(0, group, r) / size
    return _CutMembers(group, member % n_units, c, r, size, mean)


def _whole_bin_variance(members: _CutMembers, groups: Tensor) -> tuple[Tensor, Tensor]:
    """V̂ and the members of the bins wholly inside the tie groups ``groups``: the bin's
    p̂ is its group's mean, so V̂ = Q/(N² − Σc²), Q = Σ (r − mean·c)², over the group's
    N pairs (the untied formula; the share² cancels)."""
    n_groups = members.size.numel()
    residual = (members.r - members.mean.index_select(0, members.group) * members.c) ** 2
    q_sum = residual.new_zeros(n_groups).index_add_(0, members.group, residual)
    c2_sum = residual.new_zeros(n_groups).index_add_(0, members.group, members.c**2)
    count = torch.bincount(members.group, minlength=n_groups).to(torch.float64)
    size = members.size[groups]
    return q_sum[groups] / (size**2 - c2_sum[groups]), count[groups]


def _edge_parts(members: _CutMembers, groups: Tensor, bins: Tensor, share: Tensor):
    """The (bin, unit, C, S, κ) parts of the cut cells that share a bin with other pairs
    (a tie group's first and last bin): every member of the group, at the cell's share."""
    n_groups = members.size.numel()
    per_group = torch.bincount(members.group, minlength=n_groups)
    first = torch.cumsum(per_group, 0) - per_group
    repeats = per_group.index_select(0, groups)
    starts = torch.cumsum(repeats, 0) - repeats
    offset = torch.arange(int(repeats.sum().item()), device=groups.device)
    offset -= torch.repeat_interleave(starts, repeats)
    pick = torch.repeat_interleave(first.index_select(0, groups), repeats) + offset
    s = torch.repeat_interleave(share, repeats)
    c = members.c[pick]
    return (
        torch.repeat_interleave(bins, repeats),
        members.unit[pick],
        s * c,
        s * members.r[pick],
        s**2 * c,
    )


def _concat(parts: list[tuple[Tensor, ...]]) -> tuple[Tensor, ...]:
    return tuple(torch.cat(column) for column in zip(*parts))


def _cluster_variance(sums, count: Tensor, freq: Tensor, n_bins: int, n_units: int):
    """V̂ per bin from per-(bin, group) parts (module docstring), the groups met, and
    whether each met the bin with one untied pair only."""
    bin_of, unit_of, c, s, kappa = sums
    cell, inverse = torch.unique(bin_of * n_units + unit_of, return_inverse=True)
    cell_bin = cell // n_units

    def per_cell(values: Tensor) -> Tensor:
        return values.new_zeros(cell.numel()).index_add_(0, inverse, values)

    def per_bin(values: Tensor) -> Tensor:
        return values.new_zeros(n_bins).index_add_(0, cell_bin, values)

    c, s, kappa = per_cell(c), per_cell(s), per_cell(kappa)
    e2 = per_bin((s - freq.index_select(0, cell_bin) * c) ** 2)
    total_kappa, c2 = per_bin(kappa), per_bin(c**2)
    c_kappa = per_bin(c * kappa)
    n = count.clamp_min(1)
    scale = total_kappa - 2 * c_kappa / n + total_kappa * c2 / n**2
    ok = scale > 1e-12 * total_kappa
    variance = torch.where(ok, total_kappa / n**2 * e2 / scale.clamp_min(1e-300), float("nan"))
    groups_met = torch.bincount(cell_bin, minlength=n_bins).to(torch.float64)
    single = ((c == 1) & (kappa == 1)).to(torch.float64)
    singletons = per_bin(single) == groups_met
    return variance, groups_met, singletons


def grouped_bins(
    probs: Tensor,
    target: Tensor,
    groups: Tensor,
    index: Tensor,
    bins: Bins,
    cells: CutCells | None = None,
    n_groups: int | None = None,
) -> Bins:
    """``bins`` carrying the cluster-robust n_eff of ``groups`` (any integer ids, flat and
    aligned with the pairs and their bin ``index``): what the debiased square reads when
    the pairs come in groups (``cells``: the cut tie groups, if already found;
    ``n_groups``: given when ``groups`` are already compact ids in [0, n_groups)).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(400, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> from calib_metrics.functional.calibration import bins_and_index
        >>> bins, index = bins_and_index(q, y, binning="adaptive", bin_size=100, n_bins=15)
        >>> sentence = torch.arange(400) // 4
        >>> grouped_bins(q, y, sentence, index, bins).samples.shape
        torch.Size([4])
    """
    units = groups if n_groups is not None else torch.unique(groups, return_inverse=True)[1]
    samples = grouped_effective_counts(
        probs, target, units.reshape(-1), index, bins, cells, n_groups
    )
    return with_samples(bins, samples)
