"""The streaming debiased error shares cut cells out like tie groups instead of redrawing.

With about one cell per bin (10⁹ calibrated pairs, β = 5000, the default 2¹⁸ cells) the
redrawn labels of cut cells put the debiased error 4.9e-4 below the exact mode's. A cut
cell shared out at its mean label and recorded as a group keeps the square unbiased with
the exact effective sample sizes, and adds no noise of its own.
"""

from __future__ import annotations

import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import sketch
from calib_metrics.functional.binning import adaptive_tied_bins, bin_ties
from calib_metrics.functional.calibration import error_from_bins
from calib_metrics.functional.intervals import debiased_square, effective_samples

RESOLUTION, BIN_SIZE, N = 4096, 64, 200_000  # ~49 pairs a cell: 1.3 cells per bin


def _square(bins) -> float:
    gap = bins.pred_mean - bins.freq
    return float(debiased_square(gap, bins.freq, bins.count, effective_samples(bins)))


def _differences(seeds: range) -> tuple[torch.Tensor, torch.Tensor]:
    shared, redrawn = [], []
    for seed in seeds:
        g = torch.Generator().manual_seed(seed)
        q = torch.rand(N, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g)
        state = sketch.empty(RESOLUTION)
        sketch.accumulate(state, q, y)
        exact = _square(adaptive_tied_bins(q, y, BIN_SIZE))
        shared.append(_square(sketch.to_bins(state, BIN_SIZE, redraw=False)) - exact)
        redrawn.append(_square(sketch.to_bins(state, BIN_SIZE)) - exact)
    return torch.tensor(shared), torch.tensor(redrawn)


def test_shared_cut_cells_keep_the_debiased_square_on_the_exact_one():
    shared, redrawn = _differences(range(12))
    se = shared.std() / len(shared) ** 0.5
    assert abs(shared.mean()) < 3 * se, (shared.mean(), se)
    # The redraw's bridge adds noise of its own (and, clipped, a bias whose sign
    # depends on the data): further from the exact square on average.
    assert shared.abs().mean() < redrawn.abs().mean()


def test_every_cut_cell_is_recorded_when_shared():
    g = torch.Generator().manual_seed(0)
    q = torch.rand(N, generator=g, dtype=torch.float64)
    state = sketch.empty(RESOLUTION)
    sketch.accumulate(state, q, torch.bernoulli(q, generator=g))
    shared = sketch.to_bins(state, BIN_SIZE, redraw=False)
    redrawn = sketch.to_bins(state, BIN_SIZE)
    cuts = bin_ties(shared)
    assert int((cuts.size > 0).sum()) > 0.9 * (shared.count.numel() - 1)
    assert int((bin_ties(redrawn).size > 0).sum()) == 0  # no cell holds one value
    torch.testing.assert_close(shared.count, redrawn.count)
    # Sharing averages the labels that the redraw spreads: the plug-in sees less noise.
    assert error_from_bins(shared) < error_from_bins(redrawn)


def test_the_metric_shares_for_the_debiased_error_and_redraws_for_the_plug_in():
    g = torch.Generator().manual_seed(1)
    q = torch.rand(N, generator=g)
    y = torch.bernoulli(q, generator=g)
    for debias in (True, False):
        metric = CalibrationError(
            streaming=True, resolution=RESOLUTION, bin_size=BIN_SIZE, debias=debias
        )
        metric.update(q, y)
        state = metric._full_sketch().pooled()
        want = sketch.to_bins(state, BIN_SIZE, redraw=not debias)
        assert metric.compute() == error_from_bins(want, debias=debias)
