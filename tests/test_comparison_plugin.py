"""The plug-in l1 comparison's draws: made in the world of each model's smoothed gaps.

At the observed gaps ĝ = g + ε a draw's folds |ĝᵢ + e*ᵢ| sit farther from 0 than the
estimate's |gᵢ + εᵢ|, so they saturate more and the draws' difference moved less than the
estimated difference does: 0.82× its spread for two models of equal error, whose test then
rejected 0.11 of the time at α = 0.05 (docs/coverage.md, "The plug-in comparison's size").
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics.functional import calibration_error, compare_calibration
from calib_metrics.functional.binning import Bins
from calib_metrics.functional.intervals import draw_statistics, pair_draws
from calib_metrics.functional.ties import smoothed_run_gaps


def _shifted(g: torch.Generator, n: int = 2000, c: float = 0.04):
    """a = q + c and b = q − c on calibrated labels, q ~ U(0.1, 0.9): equal errors."""
    q = 0.1 + 0.8 * torch.rand(n, generator=g, dtype=torch.float64)
    return q + c, q - c, torch.bernoulli(q, generator=g)


def test_l1_interval_has_the_spread_of_the_estimated_difference() -> None:
    # The actual spread of the estimated difference over 1,500 data sets (±2%), against
    # the interval's width / 3.92 averaged over 30 (±1%): 0.84 with the observed gaps'
    # draws, 0.98 with the smoothed gaps'.
    g = torch.Generator().manual_seed(11)
    differences = []
    for _ in range(1500):
        a, b, y = _shifted(g)
        differences.append(calibration_error(a, y, norm="l1") - calibration_error(b, y, norm="l1"))
    actual = torch.stack(differences).std().item()
    g = torch.Generator().manual_seed(12)
    widths = []
    for _ in range(30):
        r = compare_calibration(*_shifted(g), norm="l1", n_samples=400, generator=g)
        widths.append((r.upper - r.lower).item() / 3.92)
    ratio = sum(widths) / len(widths) / actual
    assert 0.89 < ratio < 1.1, ratio


def _bins_of(q: torch.Tensor, y: torch.Tensor, weight: torch.Tensor, bin_size: int) -> Bins:
    """Bins fixed on the data (sorted runs of bin_size), pairs reweighted."""
    order = torch.argsort(q)
    n_bins = q.numel() // bin_size
    rank_bin = (torch.arange(q.numel()) // bin_size).clamp(max=n_bins - 1)
    index = torch.empty_like(rank_bin)
    index[order] = rank_bin
    count = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, index, weight)
    sum_q = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, index, weight * q)
    sum_y = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, index, weight * y)
    return Bins(sum_q / count.clamp_min(1), sum_y / count.clamp_min(1), count)


def _explicit_draws(q: torch.Tensor, y: torch.Tensor, weights: torch.Tensor, norm: str):
    """A model's draws in a loop: l1 each draw's gap movements added to the smoothed gaps,
    max each draw's own worst gap."""
    bins = _bins_of(q, y, torch.ones_like(y), 50)
    gap = bins.pred_mean - bins.freq
    world = smoothed_run_gaps(gap, bins.freq, bins.count) if norm == "l1" else gap
    draws = []
    for weight in weights.T:
        drawn = _bins_of(q, y, weight, 50)
        moved = (world + drawn.pred_mean - drawn.freq - gap).abs()
        share = drawn.count / drawn.count.sum()
        draws.append((share * moved).sum() if norm == "l1" else moved[drawn.count > 0].max())
    return torch.stack(draws)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("norm", ["l1", "max"])
def test_plugin_draws_equal_an_explicit_loop(norm: str, grouped: bool) -> None:
    g = torch.Generator().manual_seed(4)
    n, size = 1000, 5
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    other = (0.8 * q + 0.1 + 0.1 * torch.rand(n, generator=g, dtype=torch.float64)).clamp(0, 1)
    groups = torch.arange(n) // size if grouped else None
    options = {"n_samples": 300, "norm": norm, "bin_size": 50, "groups": groups}
    result = compare_calibration(q, other, y, generator=torch.Generator().manual_seed(5), **options)
    units = n // size if grouped else n
    weights = torch.poisson(
        torch.ones((units, 300), dtype=torch.float64), generator=torch.Generator().manual_seed(5)
    )
    if grouped:
        weights = weights.repeat_interleave(size, dim=0)
    diffs = _explicit_draws(q, y, weights, norm) - _explicit_draws(other, y, weights, norm)
    diffs = diffs + (result.difference - torch.quantile(diffs, 0.5))
    lower, upper = torch.quantile(diffs, torch.tensor([0.025, 0.975], dtype=torch.float64))
    assert result.lower.item() == pytest.approx(lower.item(), abs=1e-12)
    assert result.upper.item() == pytest.approx(upper.item(), abs=1e-12)


def test_l1_comparison_in_every_mode_uses_each_class_world() -> None:
    # Classwise: the mean over classes of each class's draws; each class's model bins are
    # smoothed on their own. Swapping the models mirrors the result in every mode.
    g = torch.Generator().manual_seed(6)
    p = torch.softmax(2 * torch.randn(3000, 3, generator=g, dtype=torch.float64), -1)
    c = torch.multinomial(p, 1, generator=g).squeeze(1)
    sharp = torch.softmax(2 * p.log(), -1)
    for mode in ("one_vs_rest", "top_label", "classwise"):
        ab, ba = (
            compare_calibration(x, z, c, norm="l1", mode=mode, n_samples=300,
                                generator=torch.Generator().manual_seed(0))
            for x, z in ((sharp, p), (p, sharp))
        )  # fmt: skip
        assert ab.lower.item() == pytest.approx(-ba.upper.item(), abs=1e-12), mode
        assert ab.lower > 0 and ab.p_value < 0.01, mode


def _constant_noise(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return 0.05 + 0.02 * torch.randn(n, generator=g, dtype=torch.float64)


def test_smoothed_gaps_average_noise_out_and_keep_a_step() -> None:
    flat = _constant_noise(60, 0)
    count, freq = torch.full_like(flat, 50.0), 0.3 + 0.01 * torch.arange(60.0).double()
    smoothed = smoothed_run_gaps(flat, freq, count)
    # Noise about one level: far less spread than the gaps' own.
    assert smoothed.std() < 0.25 * flat.std()
    assert smoothed.mean().item() == pytest.approx(flat.mean().item(), abs=0.005)
    step = torch.cat([flat[:30] - 0.05, flat[30:] + 0.15])  # levels 0 and 0.2
    smoothed = smoothed_run_gaps(step, freq, count)
    assert smoothed[:25].sub(0).abs().max() < 0.03 and smoothed[35:].sub(0.2).abs().max() < 0.03


def test_smoothed_gaps_take_a_tie_run_as_one_unit() -> None:
    # Bins inside one tie group share its gap and its noise: smoothing the bins equals
    # smoothing the runs (counts summed), not a window of one (which agreeing neighbours
    # inside a run would otherwise pick).
    runs = _constant_noise(20, 1)
    run_freq = 0.3 + 0.01 * torch.arange(20.0).double()
    smoothed_runs = smoothed_run_gaps(runs, run_freq, torch.full_like(runs, 100.0))
    bins = smoothed_run_gaps(
        runs.repeat_interleave(2), run_freq.repeat_interleave(2), torch.full((40,), 50.0).double()
    )
    assert torch.allclose(bins, smoothed_runs.repeat_interleave(2), atol=1e-15)


def test_fewer_than_three_runs_are_kept() -> None:
    gap, freq = torch.tensor([0.1, 0.3], dtype=torch.float64), torch.tensor([0.2, 0.4]).double()
    assert smoothed_run_gaps(gap, freq, torch.tensor([5.0, 5.0]).double()).tolist() == [0.1, 0.3]


def test_smoothed_world_is_for_one_models_plugin_draws() -> None:
    t = torch.tensor
    bins = Bins(
        t([0.2, 0.5, 0.7]).double(), t([0.1, 0.5, 0.8]).double(), t([40.0, 40, 40]).double()
    )
    blocks = list(pair_draws(bins, 20, torch.Generator().manual_seed(0)))
    with pytest.raises(ValueError, match="plug-in"):
        draw_statistics(bins, blocks, debias=True, world="smoothed")
    batch = Bins(*(x.expand(2, 3) for x in bins))
    with pytest.raises(ValueError, match="1-D"):
        draw_statistics(batch, blocks, norm="l1", debias=False, world="smoothed")
