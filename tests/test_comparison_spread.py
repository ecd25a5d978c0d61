"""The paired draws' spread of Δ* = θ_a* − θ_b* matches the actual spread of D_a − D_b.

The actual sampling sd of the difference of debiased squares, over many data sets drawn
from the same two models, is what the bootstrap must imitate. In the observed-gaps
world the draws were 1.8× too wide when both models are calibrated (their observed gaps
are pure noise, and that noise entered the draws' linear term twice over), and the
single-model shrunk world was 27% too narrow for two miscalibrated models sharing bins.
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.calibration import bins_and_index
from calib_metrics.functional.comparison import (
    MIN_NEIGHBOUR_RUNS,
    _joint_shrink,
    _linear_shrink,
    _neighbour_shrink,
    _neighbour_transport,
    _paired_blocks,
    _paired_squares,
    _run_count,
    _transport,
    _unit_sums,
    _world_draws,
    compare_calibration,
    root_difference,
)
from calib_metrics.functional.intervals import debiased_square, draw_statistics

N, DATA_SETS, DRAWS = 3000, 30, 100

MODELS = {
    # Two calibrated models whose bins differ: q, and q rounded to the middle of its tenth.
    "both calibrated": (lambda q: q, lambda q: (torch.floor(q * 10) + 0.5) / 10),
    # Two miscalibrated models with the same bins (monotone maps of q) and equal errors.
    "shared bins": (lambda q: (q + 0.05).clamp(max=1), lambda q: (q - 0.05).clamp(min=0)),
}


def _paired_data_sets(model_a, model_b, n: int, data_sets: int, draws: int):
    """Per data set (q ~ U(0, 1), y ~ Bernoulli(q), seed 7): both models' debiased squares
    D_a, D_b and their paired draws θ*_a, θ*_b as compare_calibration forms them."""
    g = torch.Generator().manual_seed(7)
    options = {"binning": "adaptive", "bin_size": resolve_bin_size("auto", n), "n_bins": 15}
    units = torch.arange(n)
    for _ in range(data_sets):
        q = torch.rand(n, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g)
        bins_a, sums_a = _unit_sums(model_a(q), y, units, n, options)
        bins_b, sums_b = _unit_sums(model_b(q), y, units, n, options)
        blocks = list(_paired_blocks(sums_a, sums_b, n, draws, g))
        draws_a, draws_b = [b[0] for b in blocks], [b[1] for b in blocks]
        squares = [
            debiased_square(bins.pred_mean - bins.freq, bins.freq, bins.count)
            for bins in (bins_a, bins_b)
        ]
        yield *squares, *_paired_squares(bins_a, bins_b, draws_a, draws_b)


def _spreads(setting: str) -> tuple[float, float]:
    """(actual sd of D_a − D_b over data sets, mean bootstrap sd of Δ*)."""
    differences, spreads = [], []
    for d_a, d_b, theta_a, theta_b in _paired_data_sets(*MODELS[setting], N, DATA_SETS, DRAWS):
        spreads.append(float((theta_a - theta_b).std()))
        differences.append(float(d_a - d_b))
    return float(torch.tensor(differences).std()), sum(spreads) / len(spreads)


@pytest.mark.parametrize("setting", list(MODELS))
def test_bootstrap_spread_of_the_difference_matches_the_actual_spread(setting):
    actual, bootstrap = _spreads(setting)
    # 30 data sets estimate an sd to about ±13%: the band allows for that, not for 1.8×.
    assert 0.75 < bootstrap / actual < 1.3, (setting, actual, bootstrap)


def test_difference_of_roots_of_two_miscalibrated_models_has_the_actual_spread():
    """Two miscalibrated models (a = q + 0.08, b = q + 0.03): their errors' difference
    √θ_a − √θ_b weighs their noise by different slopes, so one shrink factor fitted to Δ
    left their common noise in δ* (1.47–1.53× the actual spread of the estimates here,
    2× at N = 10⁴); each linear part carried onto its own neighbour covariance leaves
    1.05×. 60 data sets estimate an sd to about ±9%."""
    models = (lambda q: (q + 0.08).clamp(max=1), lambda q: (q + 0.03).clamp(max=1))
    estimates, spreads = [], []
    for d_a, d_b, theta_a, theta_b in _paired_data_sets(*models, 5000, 60, 200):
        spreads.append(float(root_difference(theta_a - theta_b, theta_a.minimum(theta_b)).std()))
        estimates.append(float(d_a.clamp_min(0).sqrt() - d_b.clamp_min(0).sqrt()))
    ratio = sum(spreads) / len(spreads) / torch.tensor(estimates).std().item()
    assert 0.8 < ratio < 1.25, ratio


def test_transport_carries_the_linear_parts_onto_the_neighbour_covariance():
    g = torch.Generator().manual_seed(2)
    signal = torch.randn(2, 200_000, generator=g, dtype=torch.float64)
    signal[1] += 0.5 * signal[0]  # the two models' true gaps' parts are correlated
    noise = torch.randn(2, 200_000, generator=g, dtype=torch.float64)
    linear, beside = (
        signal + noise,
        signal + torch.randn(signal.shape, generator=g, dtype=torch.float64),
    )
    zero = torch.zeros(200_000, dtype=torch.float64)
    worlds = (linear[0], linear[1], zero, zero)
    theta_a, theta_b = _neighbour_transport(worlds, beside[0], beside[1])
    # Each model's draws and their covariance are the signal's: Cov(lin, lin_nb).
    torch.testing.assert_close(
        torch.cov(torch.stack([theta_a, theta_b])), torch.cov(signal), atol=0.03, rtol=0
    )
    # The map is the optimal-transport one: symmetric, A·Σ·Aᵀ equal to the target.
    source, target = torch.cov(linear), torch.cov(signal)
    carry = _transport(source, target)
    torch.testing.assert_close(carry, carry.T)
    torch.testing.assert_close(carry @ source @ carry.T, target)


def test_models_with_the_same_draws_keep_equal_draws():
    """The same model twice: the transport's rounding would make Δ* ≠ 0 (and p < 1); one
    factor keeps the two models' draws equal to the last bit."""
    g = torch.Generator().manual_seed(5)
    draws = [torch.randn(500, generator=g, dtype=torch.float64) for _ in range(3)]
    worlds = (draws[0], draws[0], draws[1], draws[1])
    theta_a, theta_b = _neighbour_transport(worlds, draws[2], draws[2])
    assert torch.equal(theta_a, theta_b)


def test_linear_shrink_removes_twice_the_quadratic_variance():
    g = torch.Generator().manual_seed(0)
    linear = torch.randn(100_000, generator=g, dtype=torch.float64) * 2.0  # variance 4
    quadratic = torch.randn(100_000, generator=g, dtype=torch.float64)  # variance 1
    assert _linear_shrink(linear, quadratic).item() == pytest.approx((2 / 4) ** 0.5, rel=0.02)
    # Pure noise (variance below twice the quadratic part's): the linear part goes.
    assert _linear_shrink(quadratic, quadratic).item() == 0.0
    # No quadratic part (the models share bins and labels): nothing is shrunk.
    assert _linear_shrink(linear, torch.zeros_like(linear)).item() == 1.0


def test_unit_sums_bins_are_the_estimators_bins():
    g = torch.Generator().manual_seed(1)
    q = (torch.floor(torch.rand(500, generator=g, dtype=torch.float64) * 10) + 0.5) / 10
    y = torch.bernoulli(q, generator=g)
    options = {"binning": "adaptive", "bin_size": 30, "n_bins": 15}
    bins, _ = _unit_sums(q, y, torch.arange(500), 500, options)
    expected, _ = bins_and_index(q, y, **options)
    torch.testing.assert_close(bins.freq, expected.freq)


def test_neighbour_shrink_reads_the_share_common_to_the_neighbours():
    g = torch.Generator().manual_seed(0)
    shared = torch.randn(100_000, generator=g, dtype=torch.float64)
    own = torch.randn(100_000, generator=g, dtype=torch.float64)
    # The linear part is signal plus its own noise in equal parts; the neighbours' world
    # holds the signal only: half the variance is the true gaps' share, s = √½.
    assert _neighbour_shrink(shared + own, shared).item() == pytest.approx(0.5**0.5, rel=0.02)
    # Neighbours that share nothing with the linear part (pure-noise gaps): s = 0.
    assert _neighbour_shrink(own, -shared).item() == 0.0
    # The whole linear part is common: s = 1, and never more.
    assert _neighbour_shrink(shared, 2 * shared).item() == 1.0


def test_models_with_few_runs_keep_the_twice_quadratic_shrink():
    # Two predicted values (two runs and the bin that holds both): their neighbours' gaps
    # may have opposite signs; the factor falls back to Var*(lin) − 2·Var*(quad).
    g = torch.Generator().manual_seed(3)
    q = torch.rand(N, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    options = {"binning": "adaptive", "bin_size": resolve_bin_size("auto", N), "n_bins": 15}
    units = torch.arange(N)
    two_values = torch.where(q > 0.5, 0.8, 0.2).to(torch.float64)
    bins_a, sums_a = _unit_sums(two_values, y, units, N, options)
    bins_b, sums_b = _unit_sums(q, y, units, N, options)
    assert _run_count(bins_a) < MIN_NEIGHBOUR_RUNS <= _run_count(bins_b)
    blocks = list(_paired_blocks(sums_a, sums_b, N, DRAWS, g))
    blocks_a, blocks_b = [b[0] for b in blocks], [b[1] for b in blocks]
    expected = _joint_shrink(*_world_draws(bins_a, bins_b, blocks_a, blocks_b))
    for got, want in zip(_paired_squares(bins_a, bins_b, blocks_a, blocks_b), expected):
        torch.testing.assert_close(got, want)


def test_neighbours_world_refuses_batched_bins():
    g = torch.Generator().manual_seed(4)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    bins, _ = bins_and_index(q, y, binning="adaptive", bin_size=45, n_bins=15)
    batched = type(bins)(*(None if f is None else torch.stack([f, f]) for f in bins))
    with pytest.raises(ValueError, match="world='neighbours' takes one model's 1-D bins"):
        draw_statistics(batched, [], world="neighbours")


@pytest.mark.parametrize("shift", [1e-9, 1e-6, 3e-5])
def test_near_copies_are_not_told_apart(shift: float) -> None:
    """b = a + 1e-9: the 2 × 2 transport lost the models' difference and every draw was
    D_a − D_b: p = 0 in 40 of 40 data sets, half of them 'b better' (b is worse)."""
    called = 0
    for seed in range(8):
        g = torch.Generator().manual_seed(3000 + seed)
        q = torch.rand(5000, generator=g, dtype=torch.float64) * 0.9 + 0.05
        y = torch.bernoulli(q, generator=g)
        result = compare_calibration(q, q + shift, y, n_samples=300, generator=g)
        assert result.lower <= -shift <= result.upper, seed
        called += bool(result.p_value <= 0.05)
    assert called <= 2
