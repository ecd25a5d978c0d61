"""The bootstrap draws' statistics against the straightforward computation they replace.

``pair_draws`` draws each block of Poisson counts at once and yields it in row slices,
and the reductions work in place on each slice (``calib_metrics.functional.intervals``):
a matter of speed and memory only. Here the formulas as first written (whole blocks,
rates copied out, one fresh tensor per step) are kept as the reference, and every world,
norm and kind of bins (untied, tie groups shared over bins, a batch of label rows, counts
too large for float32) must give the same draws from the same seed: equal to 1e-12
relative (observed bit-identical; the tolerance only admits a change of summation order).
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics.functional import intervals
from calib_metrics.functional.binning import Bins, adaptive_binning, bin_index
from calib_metrics.functional.calibration import compute_bins
from calib_metrics.functional.intervals import (
    compact_units,
    draw_statistics,
    effective_samples,
    group_draws,
    pair_draws,
    reweighted_bins,
    unit_sum_matrix,
    unit_weights,
)

RTOL, ATOL = 1e-12, 1e-15


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- The reference: the pipeline's formulas as first written -------------------------


def _reference_pair_blocks(bins: Bins, n_samples: int, generator: torch.Generator):
    """Whole blocks of pair draws, the rates copied out for the Poisson calls."""
    ones, zeros, share = intervals._draw_units(bins)
    n_bins = bins.count.shape[-1]
    per_block = max(1, intervals._BLOCK // ones.numel())
    for start in range(0, n_samples, per_block):
        size = min(per_block, n_samples - start)
        n1 = torch.poisson(ones.expand(size, *ones.shape).contiguous(), generator=generator)
        n0 = torch.poisson(zeros.expand(size, *ones.shape).contiguous(), generator=generator)
        n1, n0 = _reference_shared_out(n1, n_bins, share), _reference_shared_out(n0, n_bins, share)
        count = n1 + n0
        yield Bins(bins.pred_mean, n1 / count.clamp_min(1), count)


def _reference_shared_out(drawn, n_bins, share):
    own = drawn[..., :n_bins]
    if share is None:
        return own
    slot, low_w, high_w = share
    groups = drawn[..., n_bins:]
    low = groups.gather(-1, slot[..., :-1].expand(*groups.shape[:-1], -1))
    high = groups.gather(-1, slot[..., 1:].expand(*groups.shape[:-1], -1))
    return own + low * low_w + high * high_w


def _weighted_mean(values, count):
    weight = (count / count.sum(dim=-1, keepdim=True)).to(values.dtype)
    if weight.ndim == 1 and values.ndim > 1:
        return values @ weight
    return (weight * values).sum(dim=-1)


def _debiased_square(gap, freq, count, samples, known=None):
    spread = (samples - 1).clamp_min(1).to(freq.dtype)
    variance = freq * (1 - freq) / spread
    if known is not None:  # a drawn bin of < 2 effective pairs: its world's variance
        variance = torch.where(samples < 2, known * (1 - known) / samples.clamp_min(1), variance)
    return _weighted_mean(gap**2 - variance, count)


def _plugin(bins: Bins, norm: str):
    gap = bins.pred_mean - bins.freq
    if norm == "l2":
        return _weighted_mean(gap**2, bins.count).sqrt()
    if norm == "l1":
        return _weighted_mean(gap.abs(), bins.count)
    return torch.where(bins.count > 0, gap.abs(), 0).amax(dim=-1)


def _reference_values(bins: Bins, blocks, *, world: str, norm: str = "l2", debias: bool = True):
    """What draw_statistics' ``values`` are, step by step on whole blocks."""
    if not debias:
        return torch.cat([_plugin(d, norm) for d in blocks])
    samples = effective_samples(bins)
    ratio = samples / bins.count.clamp_min(1)
    if world == "draws":
        gaps = [(d.pred_mean - d.freq, d) for d in blocks]
        squares = [_debiased_square(g, d.freq, d.count, d.count * ratio) for g, d in gaps]
        return torch.cat(squares).clamp_min(0).sqrt()
    gap = bins.pred_mean - bins.freq
    square = _debiased_square(gap, bins.freq, bins.count, samples)
    world_gap, target = intervals._world_gaps(bins, gap, square, world)
    thetas = []
    for d in blocks:
        moved = world_gap + (d.pred_mean - bins.pred_mean) - (d.freq - bins.freq)
        redrawn = _debiased_square(moved, d.freq, d.count, d.count * ratio, bins.freq)
        thetas.append(square - (redrawn - target))
    return torch.cat(thetas)


# --- Bins of every kind ----------------------------------------------------------------


def _untied() -> Bins:
    g = _gen(1)
    pred = torch.rand(30, generator=g, dtype=torch.float64).sort().values
    freq = (pred + 0.05 * torch.randn(30, generator=g, dtype=torch.float64)).clamp(0, 1)
    count = torch.randint(5, 400, (30,), generator=g).double()
    return Bins(pred, (freq * count).round() / count, count)


def _tied() -> Bins:
    # Predictions on a grid of 0.05: bins of 64 cut tie groups, which share their draws.
    g = _gen(2)
    q = (torch.rand(3000, generator=g, dtype=torch.float64) * 20).round() / 20
    return adaptive_binning(q, torch.bernoulli(q, generator=g), 64)


def _batch() -> Bins:
    # Three label rows of bare bins; adjacent equal (gap, frequency) bins form runs that
    # are drawn as one tie group.
    g = _gen(3)
    pred = torch.rand(3, 12, generator=g, dtype=torch.float64).sort(-1).values
    freq = torch.rand(3, 12, generator=g, dtype=torch.float64)
    pred[:, 4:7], freq[:, 4:7] = pred[:, 4:5], freq[:, 4:5]
    count = torch.randint(20, 90, (3, 12), generator=g).double()
    return Bins(pred, freq, count)


def _huge() -> Bins:
    # ~2·10⁷ pairs a bin: counts above 2²⁴ are not exact in float32.
    t = torch.tensor
    return Bins(t([0.3, 0.6], dtype=torch.float64), t([0.5, 0.55], dtype=torch.float64),
                t([4e7, 3e7], dtype=torch.float64))  # fmt: skip


KINDS = {"untied": _untied, "tied": _tied, "batch": _batch, "huge": _huge}


def test_the_kinds_cover_shared_tie_groups():
    assert intervals._draw_units(_untied())[2] is None
    assert intervals._draw_units(_tied())[2] is not None
    assert intervals._draw_units(_batch())[2] is not None


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("world", ["shrunk", "observed", "zero", "draws"])
@pytest.mark.parametrize("small_blocks", [False, True])
def test_pair_draws_statistics_equal_the_reference(monkeypatch, kind, world, small_blocks):
    bins = KINDS[kind]()
    if small_blocks:  # several blocks, each yielded in several slices
        monkeypatch.setattr(intervals, "_BLOCK", 97 * bins.freq.numel())
        monkeypatch.setattr(intervals, "_SLICE", 13 * bins.freq.numel())
    n_samples = 40 if kind == "huge" else 600
    got = draw_statistics(bins, pair_draws(bins, n_samples, _gen()), world=world).values
    want = _reference_values(bins, _reference_pair_blocks(bins, n_samples, _gen()), world=world)
    assert got.shape == want.shape == (n_samples, *bins.freq.shape[:-1])
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("kind", ["untied", "tied", "batch"])
@pytest.mark.parametrize("norm", ["l2", "l1", "max"])
def test_plugin_draws_equal_the_reference(monkeypatch, kind, norm):
    bins = KINDS[kind]()
    monkeypatch.setattr(intervals, "_SLICE", 7 * bins.freq.numel())
    got = draw_statistics(bins, pair_draws(bins, 300, _gen(4)), norm=norm, debias=False)
    blocks = _reference_pair_blocks(bins, 300, _gen(4))
    want = _reference_values(bins, blocks, world="shrunk", norm=norm, debias=False)
    torch.testing.assert_close(got.values, want, rtol=RTOL, atol=ATOL)


def test_neighbours_world_equals_the_reference():
    bins = _tied()
    got = draw_statistics(bins, pair_draws(bins, 500, _gen(5)), world="neighbours").values
    want = _reference_values(bins, _reference_pair_blocks(bins, 500, _gen(5)), world="neighbours")
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("debias", [True, False])
def test_group_draws_statistics_equal_the_reference(monkeypatch, debias):
    g = _gen(6)
    q = (torch.rand(4000, generator=g, dtype=torch.float64) * 30).round() / 30
    y = torch.bernoulli(q, generator=g)
    groups = torch.arange(4000) // 9
    bins, index = compute_bins(q, y, bin_size=150), bin_index(q, y, bin_size=150)
    n_bins = bins.count.numel()
    monkeypatch.setattr(intervals, "_SLICE", 11 * n_bins)
    units, n_units = compact_units(groups)
    sums = unit_sum_matrix(q, y, units, index, n_bins, n_units)
    weights = unit_weights(n_units, 400, 3 * n_bins, _gen(7), q.device)
    want_blocks = [reweighted_bins(sums, w) for w in weights]
    blocks = group_draws(q, y, groups, index, n_bins, 400, _gen(7))
    got = draw_statistics(bins, blocks, debias=debias, world="observed")
    want = _reference_values(bins, want_blocks, world="observed", debias=debias)
    torch.testing.assert_close(got.values, want, rtol=RTOL, atol=ATOL)


def test_a_block_is_drawn_at_once_and_yielded_in_slices(monkeypatch):
    # Slices of at most _SLICE cells bound the reductions' temporaries; the draws are
    # still those of whole blocks (the random stream is consumed as before).
    bins = _tied()
    n_units = intervals._draw_units(bins)[0].numel()
    monkeypatch.setattr(intervals, "_SLICE", 5 * n_units)
    blocks = list(pair_draws(bins, 64, _gen(8)))
    assert [b.count.shape[0] for b in blocks] == [5] * 12 + [4]
    (whole,) = _reference_pair_blocks(bins, 64, _gen(8))
    assert torch.equal(torch.cat([b.count for b in blocks]), whole.count)
    assert torch.equal(torch.cat([b.freq for b in blocks]), whole.freq)
