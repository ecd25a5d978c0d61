"""The interval pipeline's structure: generators -> one reduction -> one summary -> result.

Algorithm 2 is a draw generator like the two bootstraps; its result through the common
statistics and summary must equal the paper's formula computed by an explicit loop, and
every path (paper, pairs, groups, the paired comparison) must go through the same
reduction and the same bounded blocks.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest
import torch

from calib_metrics.functional import (
    CalibrationResult,
    calibration_error_ci,
    ci_from_bins,
    compare_calibration,
    error_from_bins,
    intervals,
)
from calib_metrics.functional.binning import Bins, bin_index
from calib_metrics.functional.intervals import (
    draw_statistics,
    group_draws,
    pair_draws,
    paper_draws,
)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _bins() -> Bins:
    t = torch.tensor
    return Bins(
        t([0.1, 0.35, 0.6, 0.9], dtype=torch.float64),
        t([0.05, 0.4, 0.5, 0.97], dtype=torch.float64),
        t([40.0, 25.0, 60.0, 30.0], dtype=torch.float64),
    )


def _algorithm_2_by_loop(bins: Bins, noise: torch.Tensor, confidence: float, debias: bool):
    """The paper's Algorithm 2, one draw and one bin at a time, in Python floats."""
    pred, freq, count = (v.tolist() for v in bins)
    n = sum(count)
    errors = []
    for s in range(noise.shape[0]):
        total = 0.0
        for i in range(len(count)):
            se = math.sqrt(freq[i] * (1 - freq[i]) / count[i])
            p = min(1.0, max(0.0, freq[i] + se * float(noise[s, i])))
            square = (pred[i] - p) ** 2
            if debias:
                square -= p * (1 - p) / max(count[i] - 1, 1)
            total += count[i] / n * square
        errors.append(math.sqrt(max(total, 0.0)))
    mean = sum(errors) / len(errors)
    std = math.sqrt(sum((e - mean) ** 2 for e in errors) / (len(errors) - 1))
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    return errors, mean, std, max(0.0, mean - z * std), mean + z * std


@pytest.mark.parametrize("debias", [False, True])
def test_paper_generator_through_the_common_summary_is_algorithm_2(debias):
    bins, samples, confidence = _bins(), 300, 0.9
    # The generator's normals: one block of float32 standard normals [S, T].
    noise = torch.randn((samples, 4), generator=_gen(3), dtype=torch.float32)
    errors, mean, std, lower, upper = _algorithm_2_by_loop(bins, noise, confidence, debias)
    draws = draw_statistics(bins, paper_draws(bins, samples, _gen(3)), debias=debias, world="draws")
    # The draws are made in float32 (documented): agreement to float32 rounding.
    torch.testing.assert_close(
        draws.errors, torch.tensor(errors, dtype=torch.float64), atol=2e-7, rtol=1e-6
    )
    assert draws.centre is None and draws.square is None  # centred on the draws' mean
    result = ci_from_bins(
        bins, n_samples=samples, confidence=confidence, debias=debias, generator=_gen(3)
    )
    assert isinstance(result, CalibrationResult)
    assert result.error == error_from_bins(bins, debias=debias)
    for got, want in zip(result[1:5], (mean, std, lower, upper)):
        assert got.item() == pytest.approx(want, rel=1e-5, abs=1e-7)
    # The percentile form: quantiles of the same draws.
    pct = ci_from_bins(
        bins, n_samples=samples, confidence=confidence, debias=debias, generator=_gen(3),
        method="percentile",
    )  # fmt: skip
    levels = torch.tensor([0.05, 0.95], dtype=torch.float64)
    torch.testing.assert_close(
        torch.stack([pct.lower, pct.upper]), torch.quantile(draws.errors, levels)
    )


def test_point_estimate_and_draws_share_one_reduction():
    bins = _bins()
    blocks = list(pair_draws(bins, 50, _gen(1)))
    for norm in ("l2", "l1", "max"):
        draws = draw_statistics(bins, blocks, norm=norm, debias=False)
        assert draws.estimate == error_from_bins(bins, norm)
        one_by_one = [
            error_from_bins(Bins(bins.pred_mean, block.freq[s], block.count[s]), norm)
            for block in blocks
            for s in range(block.count.shape[0])
        ]
        torch.testing.assert_close(draws.errors, torch.stack(one_by_one), rtol=1e-12, atol=1e-15)


def test_every_generator_keeps_to_one_block_bound(monkeypatch):
    monkeypatch.setattr(intervals, "_BLOCK", 64)
    bins = _bins()
    q = torch.rand(400, generator=_gen(2), dtype=torch.float64)
    y = torch.bernoulli(q, generator=_gen(3))
    index = bin_index(q, y, bin_size=100)
    groups = torch.arange(400) // 20  # 20 groups: blocks of 64 // 20 = 3 draws
    made = {
        "paper": list(paper_draws(bins, 37, _gen())),
        "pairs": list(pair_draws(bins, 37, _gen())),
        "groups": list(group_draws(q, y, groups, index, 4, 37, _gen())),
    }
    for name, blocks in made.items():
        sizes = [block.freq.shape[0] for block in blocks]
        assert sum(sizes) == 37, name
        assert max(sizes) == (64 // 4 if name != "groups" else 64 // 20), name
        assert all(isinstance(block, Bins) and block.freq.shape[-1] == 4 for block in blocks)


def test_paired_comparison_draws_are_the_group_generator_with_shared_weights():
    g = _gen(5)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    other = q**1.2
    groups = torch.arange(3000) // 3  # 1000 groups, more than 3 x (T_a + T_b) rows
    options = {"bin_size": 300, "n_samples": 200, "debias": True}
    paired = compare_calibration(other, q, y, groups=groups, generator=_gen(8), **options)
    for probs, result in ((other, paired.a), (q, paired.b)):
        alone = calibration_error_ci(
            probs, y, groups=groups, method="percentile", generator=_gen(8), **options
        )
        for got, want in zip(result[:5], alone[:5]):
            assert torch.equal(got, want)


def test_retired_names_warn_and_point_to_the_one_result_type():
    with pytest.warns(DeprecationWarning, match="CalibrationResult"):
        assert intervals.IntervalSummary is intervals.CalibrationResult
    bins = _bins()
    ones = bins.count * bins.freq
    sums = [
        (bins.count.expand(3, 4), (bins.count * bins.pred_mean).expand(3, 4), ones.expand(3, 4))
    ]
    with pytest.warns(DeprecationWarning, match="resampled_interval"):
        old = intervals.summarize_draws(bins, sums, method="normal")
    assert torch.equal(old.error, error_from_bins(bins))
    assert old.std.item() == pytest.approx(0.0, abs=1e-12)  # every draw is the data itself
    from calib_metrics.functional.calibration import interval_from_samples

    samples = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    with pytest.warns(DeprecationWarning, match="interval_of_draws"):
        mean, _, lower, upper = interval_from_samples(samples, 0.95, "percentile")
    assert mean.item() == pytest.approx(0.25)
    torch.testing.assert_close(
        torch.stack([lower, upper]),
        torch.quantile(samples, torch.tensor([0.025, 0.975], dtype=torch.float64)),
    )
