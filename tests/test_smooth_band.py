"""The smooth curve's band near 0 and 1, where a few labels decide ŷ(t): the draws'
quantiles had collapsed onto a frequency of 0 and covered the truth at t = 0 in 0.68 of
calibrated data sets (``benchmarks/smooth_band_coverage.py`` measures it at full size)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics.functional import smooth, smooth_reliability_curve
from calib_metrics.functional.smooth import _score_band

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.smooth_band_coverage import smoothed_truth


def test_a_frequency_of_zero_has_a_band_above_it() -> None:
    """Labels all 0 near t = 0: every draw's ŷ(0) is 0 too, and the quantile band was
    [0, 0], certain; the score band reaches up by what so few labels allow."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    y[q < 0.1] = 0.0
    curve = smooth_reliability_curve(q, y, n_samples=50, points=11, generator=g)
    assert curve.curve[0].item() < 0.01
    assert curve.lower[0].item() <= curve.curve[0].item()
    assert 0.01 < curve.upper[0].item() < 0.2


def test_the_band_covers_the_ends_of_calibrated_data() -> None:
    """30 calibrated data sets of 2000 pairs (seeded): the band holds the smoothed truth
    at t = 0 and t = 1 in most of them (the quantile band: 25 and 25 of 30), and
    inside about 95% of the time."""
    rng = np.random.default_rng(1)
    g = torch.Generator().manual_seed(1)
    hits = []
    for _ in range(30):
        q = torch.tensor(rng.uniform(0, 1, 2000))
        y = torch.tensor((rng.uniform(size=2000) < q.numpy()).astype(float))
        c = smooth_reliability_curve(q, y, n_samples=100, points=11, generator=g)
        truth = smoothed_truth(c.grid.numpy(), c.bandwidth.item(), lambda x: x)
        hits.append((c.lower.numpy() <= truth) & (truth <= c.upper.numpy()))
    hits = np.array(hits)
    assert hits[:, 0].mean() >= 0.9 and hits[:, -1].mean() >= 0.9, hits.mean(0)
    assert 0.9 <= hits[:, 1:-1].mean() <= 0.99, hits.mean(0)


def test_the_score_band_is_wilsons_interval() -> None:
    """Against the closed form at n = 40, p̂ = 0.25 and 0 (z = 1.959964)."""
    p_hat = torch.tensor([0.25, 0.0], dtype=torch.float64)
    lower, upper = _score_band(p_hat, torch.full((2,), 40.0, dtype=torch.float64), 0.95)
    z2, n = 1.959963984540054**2, 40.0
    centre = (0.25 + z2 / (2 * n)) / (1 + z2 / n)
    half = math.sqrt(z2 * (0.25 * 0.75 / n + z2 / (4 * n * n))) / (1 + z2 / n)
    assert math.isclose(lower[0].item(), centre - half, rel_tol=1e-12)
    assert math.isclose(upper[0].item(), centre + half, rel_tol=1e-12)
    assert lower[1].item() == 0.0
    assert math.isclose(upper[1].item(), z2 / (n + z2), rel_tol=1e-12)


def test_kish_sizes_are_those_of_the_curves_own_weights() -> None:
    """The sizes count the pairs with the weights ŷ(t) gives them, the kernel cut off at
    distance 1/2 as the curve's is: uncut, at σ = 0.6 the size at t = 1 had been three
    times the curve's, and the band too narrow."""
    g = torch.Generator().manual_seed(0)
    for n, sigma in [(2000, 0.05), (50, 0.35), (30, 0.6), (30, 1.0)]:
        q = torch.rand(n, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g)
        _, cells = smooth._cell_sums(q, torch.ones_like(q), y, smooth._grid_points(sigma))
        t = torch.linspace(0, 1, 11, dtype=torch.float64)
        eye = torch.eye(cells.count.numel(), dtype=torch.float64)
        weights = smooth._smoothed(cells.pred_mean, eye, sigma, t).T  # [points, cells]
        own = (weights @ cells.count) ** 2 / (weights.square() @ cells.count)
        # Within the grid's own interpolation of the weights (1% at most here).
        torch.testing.assert_close(smooth._kish_sizes(cells, sigma, t), own, rtol=0.02, atol=0)


def test_the_band_reaches_as_far_as_the_curve() -> None:
    """Where the curve still has mass, a grid step past the kernel's cut-off, the band had
    been NaN (Kish's size 0/0)."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(500, generator=g, dtype=torch.float64) * 0.2
    y = torch.bernoulli(q, generator=g)
    for points in (1000, 1001, 2001, 3000):  # mesh points on the grid and between
        c = smooth_reliability_curve(q, y, bandwidth=0.2, n_samples=20, points=points, generator=g)
        drawn = ~c.curve.isnan()
        assert not c.lower[drawn].isnan().any() and not c.upper[drawn].isnan().any(), points


def test_the_curve_of_a_histogram_of_one_cell_per_pair_is_the_pairs_curve() -> None:
    """smooth_curve_from_histogram draws as the pairs' curve does: given each pair as its
    own cell, every field is the same, band included (the same generator's draws)."""
    from calib_metrics.functional import smooth_curve_from_histogram, smooth_reliability_curve

    g = torch.Generator().manual_seed(4)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q**2, generator=g)
    cells = smooth_curve_from_histogram(
        q, torch.ones_like(q), y, n_samples=80, generator=torch.Generator().manual_seed(1)
    )
    pairs = smooth_reliability_curve(q, y, n_samples=80, generator=torch.Generator().manual_seed(1))
    for name in ("grid", "curve", "lower", "upper", "density", "bandwidth", "error"):
        torch.testing.assert_close(getattr(cells, name), getattr(pairs, name), equal_nan=True)


def test_a_histogram_curve_needs_whole_counts_and_warns_of_too_few_pairs() -> None:
    from calib_metrics.functional import smooth_curve_from_histogram

    position = torch.tensor([0.2, 0.6], dtype=torch.float64)
    with pytest.raises(ValueError, match="whole numbers of pairs"):
        smooth_curve_from_histogram(position, torch.tensor([1.5, 2.0]).double(), position)
    with pytest.raises(ValueError, match="empty histogram"):
        smooth_curve_from_histogram(position, torch.zeros(2).double(), torch.zeros(2).double())
    count = torch.tensor([3.0, 4.0], dtype=torch.float64)
    with pytest.warns(UserWarning, match=r"^smooth_curve_from_histogram: 7 pairs; .*NaN"):
        curve = smooth_curve_from_histogram(position, count, torch.tensor([1.0, 2.0]).double())
    assert curve.lower.isnan().all() and not curve.curve.isnan().all()
