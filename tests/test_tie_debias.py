"""The debias term of a tie group split over bins: one sample of the whole group.

The tie rule gives every part of a split tie group the group's mean label, so those
bins' frequency is one mean of the whole group's labels and its sampling variance is
p(1 − p)/N_group, not p(1 − p)/n_bin. Subtracting the per-bin term drove the default
(debiased) error of a constant predictor far below its truth.
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error, calibration_error_ci, compare_calibration
from calib_metrics.functional.binning import Bins
from calib_metrics.functional.intervals import pair_draws, tie_run_counts, tie_runs


def _constant(n: int, value: float = 0.4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    y = torch.bernoulli(torch.full((n,), 0.5, dtype=torch.float64), generator=g)
    return torch.full((n,), value, dtype=torch.float64), y


@pytest.mark.parametrize("n", [1000, 3000, 10_000])
def test_constant_predictor_gets_the_one_sample_debiased_error(n) -> None:
    q, y = _constant(n)
    f = y.mean().item()
    expected = max(0.0, (0.4 - f) ** 2 - f * (1 - f) / (n - 1)) ** 0.5
    # Before: 0.049 at N = 1000 (the per-bin term of bins of 32 subtracted 0.008).
    assert calibration_error(q, y).item() == pytest.approx(expected, rel=1e-9)


def test_metric_exact_and_streaming_agree_on_a_constant_predictor() -> None:
    q, y = _constant(3000)
    exact, streaming = CalibrationError(), CalibrationError(streaming=True)
    for m in (exact, streaming):
        m.update(q, y)
    torch.testing.assert_close(exact.compute(), calibration_error(q, y))
    torch.testing.assert_close(streaming.compute(), calibration_error(q, y))


def test_interval_of_a_constant_predictor_contains_its_estimate() -> None:
    q, y = _constant(3000)
    r = calibration_error_ci(q, y, n_samples=500, generator=torch.Generator().manual_seed(1))
    assert r.lower < r.error < r.upper
    # The comparison sees the same model the same way (it had an interval excluding it).
    c = compare_calibration(q, q * 0 + 0.5, y, n_samples=300, generator=torch.Generator())
    assert c.a.lower < c.a.error < c.a.upper


def test_runs_are_adjacent_bins_with_equal_gap_and_frequency() -> None:
    t = torch.tensor
    gap, freq = t([0.1, 0.1, 0.1, 0.1, 0.2]), t([0.5, 0.5, 0.4, 0.4, 0.4])
    assert tie_runs(gap, freq).tolist() == [0, 0, 1, 1, 2]
    count = t([5.0, 7.0, 3.0, 3.0, 9.0])
    assert tie_run_counts(gap, freq, count).tolist() == [12.0, 12.0, 6.0, 6.0, 9.0]


def test_pair_draws_keep_a_runs_bins_at_one_frequency() -> None:
    t = torch.tensor
    bins = Bins(t([0.4, 0.4, 0.7], dtype=torch.float64), t([0.5, 0.5, 0.6], dtype=torch.float64),
                t([50.0, 50.0, 80.0], dtype=torch.float64))  # fmt: skip
    block = next(pair_draws(bins, 200, torch.Generator().manual_seed(0)))
    torch.testing.assert_close(block.freq[:, 0], block.freq[:, 1])
    # The run's draws have the spread of one mean of 100 labels, not of 50.
    assert block.freq[:, 0].std().item() == pytest.approx((0.25 / 100) ** 0.5, rel=0.2)


def test_untied_bins_draw_exactly_as_before() -> None:
    t = torch.tensor
    bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
    block = next(pair_draws(bins, 5, torch.Generator().manual_seed(0)))
    g = torch.Generator().manual_seed(0)
    ones = bins.count * bins.freq
    n1 = torch.poisson(ones.expand(5, 2).contiguous(), generator=g)
    n0 = torch.poisson((bins.count - ones).expand(5, 2).contiguous(), generator=g)
    torch.testing.assert_close(block.count, n1 + n0)
