"""One bin (or one smoothing cell) is a legitimate input: a constant predictor, a tiny
file. Hand-built bins and the smooth curve go through the tie-run rule, which once
returned no runs at all for a single bin: the debiased error came out 0 and the pair
bootstrap drew empty bins (a zero-width interval, a crash in the smooth curve)."""

from __future__ import annotations

import math

import torch

from calib_metrics.functional import (
    Bins,
    ci_from_bins,
    error_from_bins,
    smooth_reliability_curve,
)
from calib_metrics.functional.ties import tie_runs


def _one_bin() -> Bins:
    t = torch.tensor
    f64 = torch.float64
    return Bins(t([0.3], dtype=f64), t([0.5], dtype=f64), t([400.0], dtype=f64))


def test_tie_runs_of_one_bin_is_one_run():
    assert tie_runs(torch.tensor([0.2]), torch.tensor([0.5])).tolist() == [0]
    runs = tie_runs(torch.tensor([0.2]), torch.tensor([[0.5], [0.4]]))
    assert runs.tolist() == [[0], [0]]


def test_tie_runs_broadcast_the_data_gaps_against_draws_frequencies():
    # gap [K] of the data against freq [S, K] of draws: the runs take the broadcast shape
    # (taking the first start from gap alone broke this for every K).
    runs = tie_runs(torch.tensor([0.1, 0.1, 0.2]), torch.tensor([[0.5, 0.5, 0.4], [0.5, 0.3, 0.4]]))
    assert runs.tolist() == [[0, 0, 1], [0, 1, 2]]


def test_debiased_error_of_one_hand_built_bin():
    expected = math.sqrt(0.2**2 - 0.25 / 399)
    assert math.isclose(error_from_bins(_one_bin(), debias=True).item(), expected)


def test_pair_bootstrap_of_one_hand_built_bin_has_a_spread():
    g = torch.Generator().manual_seed(0)
    r = ci_from_bins(_one_bin(), n_samples=400, interval="pairs", generator=g)
    # p̂ of 400 labels at 0.5 has s.e. 0.025: the interval cannot be a point.
    assert 0.015 < r.std.item() < 0.035
    assert r.lower.item() < 0.2 < r.upper.item()


def test_smooth_curve_of_a_constant_predictor():
    q = torch.full((300,), 0.3, dtype=torch.float64)
    y = (torch.arange(300) % 3 == 0).double()
    g = torch.Generator().manual_seed(0)
    c = smooth_reliability_curve(q, y, n_samples=50, points=11, generator=g)
    assert math.isclose(c.curve[3].item(), 1 / 3, abs_tol=1e-6)  # t = 0.3
    assert c.lower[3] < 0.32 and c.upper[3] > 0.35  # p̂ of 300 labels: s.e. 0.027


def test_smooth_curve_of_one_pair():
    c = smooth_reliability_curve(torch.tensor([0.3]), torch.tensor([1]), n_samples=20, points=5)
    assert math.isclose(c.curve[2].item(), 1.0)
