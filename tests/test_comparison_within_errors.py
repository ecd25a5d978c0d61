"""The paired interval lies within [−b.upper, a.upper], and a result's mean and std say what
they summarise (a noisy copy a of a calibrated b, 500 pairs: both debiased squares below 0)."""

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


def test_the_interval_stays_within_what_the_two_errors_allow() -> None:
    """Both errors are ≥ 0 and each lies in its own interval, so a − b ≥ −b.upper: the
    interval had reached −0.0962 beside b's [0, 0.0624]."""
    a, b, y = _noisy_copy_of_calibrated()
    r = compare_calibration(a, b, y, n_samples=300, generator=torch.Generator().manual_seed(0))
    assert r.lower == -r.b.upper and r.upper < 0  # the draws lie below 0: kept, p too
    assert r.upper <= r.a.upper
    assert float(r.p_value) == 0.02
    seeded = {"n_samples": 300, "generator": torch.Generator().manual_seed(0)}
    swapped = compare_calibration(b, a, y, **seeded)
    assert swapped.upper == swapped.a.upper and swapped.lower > 0


def test_each_end_is_held_in_the_bounds_and_a_nan_bound_holds_nothing() -> None:
    from calib_metrics.functional.comparison import _within_errors

    def t(value: float) -> torch.Tensor:
        return torch.tensor(value, dtype=torch.float64)

    nan = float("nan")
    a = CalibrationResult(t(0.0), t(0.0), t(0.0), t(0.0), t(0.05), None)
    b = CalibrationResult(t(0.0), t(0.0), t(0.0), t(0.0), t(0.03), None)
    assert [float(x) for x in _within_errors(t(-0.09), t(0.08), a, b)] == [-0.03, 0.05]
    assert [float(x) for x in _within_errors(t(-0.02), t(0.01), a, b)] == [-0.02, 0.01]
    unknown = b._replace(upper=t(nan))
    assert [float(x) for x in _within_errors(t(-0.09), t(0.08), a, unknown)] == [-0.09, 0.05]


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
