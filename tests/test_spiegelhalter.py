"""Spiegelhalter's z test: the statistic by its Brier-score definition, the p-value by
scipy, and its size and power by simulation."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from calib_metrics.functional.spiegelhalter import spiegelhalter_test, spiegelhalter_z


def test_z_is_the_standardised_brier_score_and_p_is_two_sided() -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.rand(500, generator=g, dtype=torch.float64)
    y = torch.bernoulli((q + 0.05).clamp(0, 1), generator=g)
    brier = ((y - q) ** 2).sum()
    mean = (q * (1 - q)).sum()
    variance = ((1 - 2 * q) ** 2 * q * (1 - q)).sum()
    expected_z = ((brier - mean) / variance.sqrt()).item()
    result = spiegelhalter_test(q.float(), y.long())
    assert result.z.item() == pytest.approx(expected_z, rel=1e-6)  # float32 input
    assert result.p_value.item() == pytest.approx(2 * stats.norm.sf(abs(expected_z)), rel=1e-5)


def test_size_and_power_by_simulation() -> None:
    # 4000 calibrated data sets of 300 pairs, all at once: the rejection rate at
    # α = 0.05 must be 0.05 within Monte Carlo error (sd 0.0034), and p uniform.
    g = torch.Generator().manual_seed(2)
    q = torch.rand(4000, 300, generator=g, dtype=torch.float64) * 0.9 + 0.05
    y = torch.bernoulli(q, generator=g)
    p = torch.special.erfc(spiegelhalter_z(q, y).abs() / math.sqrt(2))
    assert 0.04 < (p < 0.05).double().mean().item() < 0.06
    assert stats.kstest(p.numpy(), "uniform").pvalue > 0.01
    # Overconfident predictions (true frequency pulled towards 1/2) are caught.
    y_bad = torch.bernoulli(0.5 + 0.7 * (q - 0.5), generator=g)
    p_bad = torch.special.erfc(spiegelhalter_z(q, y_bad).abs() / math.sqrt(2))
    assert (p_bad < 0.05).double().mean().item() > 0.9


def test_multiclass_modes() -> None:
    probs = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.6, 0.3, 0.1]])
    target = torch.tensor([0, 2, 2, 1])
    ovr = spiegelhalter_test(probs, target)
    flat = spiegelhalter_test(probs.reshape(-1), torch.nn.functional.one_hot(target, 3).reshape(-1))
    assert ovr.z.item() == flat.z.item()
    top = spiegelhalter_test(probs, target, mode="top_label")
    conf, pred = probs.max(-1)
    assert top.z.item() == spiegelhalter_test(conf, (pred == target).long()).z.item()
    with pytest.raises(ValueError, match="one test per class"):
        spiegelhalter_test(probs, target, mode="classwise")


def test_errors() -> None:
    with pytest.raises(ValueError, match="undefined when every probability is 0, 1/2 or 1"):
        spiegelhalter_test(torch.tensor([0.0, 0.5, 1.0]), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="binary"):
        spiegelhalter_test(torch.tensor([0.2, 0.4]), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="empty"):
        spiegelhalter_test(torch.tensor([]), torch.tensor([]))
