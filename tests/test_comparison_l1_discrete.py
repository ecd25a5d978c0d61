"""The plug-in l1 comparison on a model of few scores whose gaps alternate in sign: two
models of equal true l1 error must not be told apart with confidence. A repair of the l1
draws tried on 2026-11-30 (draws around smoothed gaps, docs/coverage.md) smoothed such a
model's gaps to their mean and gave p = 0 here, with a verdict whose sign changed between
data sets; it was withdrawn, and this pins the draws that replaced it."""

from __future__ import annotations

import torch

from calib_metrics.functional import compare_calibration

LEVELS = torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9], dtype=torch.float64)
GAP_A = torch.tensor([0.09, -0.03, 0.09, -0.03, 0.09], dtype=torch.float64)


def test_equal_l1_errors_of_alternating_gaps_are_not_told_apart() -> None:
    k = torch.arange(20000) % 5
    q = LEVELS[k]
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        y = torch.bernoulli(q, generator=g)
        result = compare_calibration(
            q + GAP_A[k], q + GAP_A.abs().mean(), y, norm="l1", n_samples=400,
            generator=torch.Generator().manual_seed(1),
        )  # fmt: skip
        # Both true l1 errors are 0.066. The withdrawn draws: intervals 0.0003 wide, p = 0.
        assert result.p_value > 0.01
        assert result.upper - result.lower > 0.005
