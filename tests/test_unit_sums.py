"""The per-unit bin sums of the pair and group draws stay linear in the pairs on ties.

A tie group cut over many bins (a constant predictor, a tagger's mass at exactly 0) was
expanded to one entry per pair per bin of its group: N·T entries, 3 GB for 10⁵ equal q
with sentence groups, and out of memory at 10⁶. The factored sums hold each cut group
once per unit and give the same draws.
"""

from __future__ import annotations

import torch

from calib_metrics.functional.intervals import reweighted_bins, unit_sum_matrix


def _dense_reference(probs, target, units, index, n_bins, n_units):
    """[3T, G]: each pair of a tie group in every bin of its group, at its share c/N."""
    out = torch.zeros(3 * n_bins, n_units, dtype=torch.float64)
    for i in range(probs.numel()):
        group = probs == probs[i]
        for b in range(n_bins):
            share = ((index == b) & group).sum() / group.sum()
            for v, value in enumerate((1.0, probs[i].item(), target[i].item())):
                out[v * n_bins + b, units[i]] += share * value
    return out


def _nnz(sums) -> int:
    parts = [sums.direct, sums.cut, sums.shares]
    return sum(
        p._nnz() if p.layout == torch.sparse_coo else p.values().numel()
        for p in parts
        if p is not None
    )


def test_the_factored_sums_give_the_dense_shares_draws():
    g = torch.Generator().manual_seed(0)
    probs = torch.tensor([0.1, 0.3, 0.3, 0.3, 0.3, 0.3, 0.6, 0.7, 0.7, 0.9], dtype=torch.float64)
    target = torch.bernoulli(probs, generator=g)
    index = torch.tensor([0, 0, 1, 1, 1, 2, 2, 2, 3, 3])
    units = torch.tensor([0, 1, 1, 2, 0, 2, 1, 0, 2, 1])
    sums = unit_sum_matrix(probs, target, units, index, 4, 3)
    weights = torch.poisson(torch.ones(3, 5, dtype=torch.float64), generator=g)
    reference = (_dense_reference(probs, target, units, index, 4, 3) @ weights).T
    bins = reweighted_bins(sums, weights)
    torch.testing.assert_close(bins.count, reference[:, :4])
    # bins_of_sums divides by max(count, 1).
    safe = bins.count.clamp_min(1)
    torch.testing.assert_close(bins.pred_mean * safe, reference[:, 4:8])
    torch.testing.assert_close(bins.freq * safe, reference[:, 8:])


def test_a_group_cut_over_every_bin_costs_its_units_once():
    n, n_bins = 4000, 200
    probs = torch.full((n,), 0.3, dtype=torch.float64)
    target = torch.bernoulli(probs, generator=torch.Generator().manual_seed(1))
    index = torch.arange(n) // (n // n_bins)
    units = torch.arange(n)
    sums = unit_sum_matrix(probs, target, units, index, n_bins, n)
    # Per pair once per value, plus one share per bin: not n · n_bins = 800,000.
    assert _nnz(sums) <= 3 * n + n_bins
    count = reweighted_bins(sums, torch.ones(n, 1, dtype=torch.float64)).count
    torch.testing.assert_close(count, torch.full((1, n_bins), n / n_bins, dtype=torch.float64))
