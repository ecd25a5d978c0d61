"""A result's mean and std say what they summarise (a noisy copy a of a calibrated b, 500
pairs: both debiased squares below 0)."""

from __future__ import annotations

import torch

from calib_metrics.functional import compare_calibration
from calib_metrics.functional.calibration import CalibrationResult


def _noisy_copy_of_calibrated():
    g = torch.Generator().manual_seed(1189)
    q = torch.rand(500, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    noisy = (q + 0.02 * torch.randn(500, generator=g, dtype=torch.float64)).clamp(0, 1)
    return noisy, q, y


def test_mean_and_std_are_said_to_be_of_the_clipped_draws() -> None:
    """a's result reads mean 0, std 0 beside upper 0.0598: its draws' squares are all below
    0, clipped to errors of 0, while the interval comes from the unclipped squares. The
    fields' docstring had said "mean of the sampled errors" and no more."""
    a, b, y = _noisy_copy_of_calibrated()
    r = compare_calibration(a, b, y, n_samples=300, generator=torch.Generator().manual_seed(0))
    assert float(r.a.mean) == 0 and float(r.a.std) == 0 and float(r.a.upper) > 0.05
    doc = " ".join(CalibrationResult.__doc__.split())
    assert "clipped at 0 and square-rooted" in doc
    assert "``mean`` and ``std`` are 0 or near it while ``upper`` is not" in doc
