"""Interval levels near 1 and near 0, and the zero-width warning's cause.

At a level of 1 - 2**-53 the normal quantile had been ndtri((1 + c) / 2) = ndtri(1.0) =
inf: an interval [0.0000, inf], "upper": null in JSON (which means no interval), a false
zero-width warning, and the level printed as "100%". The zero-width warning had blamed
pure bins (19 of 54) whatever made the interval a point: a level of 1e-300, or draws all
clipped at 0."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from cli_runs import run_cli

from calib_metrics.functional import calibration_error_ci
from calib_metrics.functional.intervals import normal_quantile
from calib_metrics.functional.zero_width import ZeroWidthWarning

NEAR_ONE = 0.9999999999999999  # 1 - 2**-53, the largest float below 1


def _pairs(n: int = 3000, seed: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g)


def _zero_width(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, ZeroWidthWarning)]


def test_the_normal_quantile_keeps_every_digit_of_a_level_near_1() -> None:
    assert normal_quantile(NEAR_ONE) == pytest.approx(8.29, abs=0.01)
    assert normal_quantile(0.95) == pytest.approx(1.959964, abs=1e-6)


def test_the_normal_quantile_of_a_level_near_0_is_plus_zero() -> None:
    """z of a level below about 1e-17 is 0: it had been -0.0, which the events header
    printed as ``±-0.00``."""
    z = normal_quantile(1e-18)
    assert z == 0.0 and math.copysign(1.0, z) == 1.0
    assert f"{z:.2f}" == "0.00"


def test_an_interval_at_a_level_near_1_is_finite_and_not_called_a_point() -> None:
    q, y = _pairs()
    results = []
    said = _zero_width(
        lambda: results.append(calibration_error_ci(q, y, confidence=NEAR_ONE, n_samples=100))
    )
    (result,) = results
    assert math.isfinite(float(result.upper)) and float(result.upper) > float(result.error)
    assert said == []


def test_the_command_prints_the_level_and_a_finite_end(tmp_path, capsys) -> None:
    q, y = _pairs()
    path = tmp_path / "p.csv"
    path.write_text("prob,label\n" + "".join(f"{a},{int(b)}\n" for a, b in zip(q, y)))
    code, out, err = run_cli(
        capsys, "evaluate", path, "--samples", "100", "--confidence", repr(NEAR_ONE)
    )
    assert code == 0, err
    assert "99.99999999999999% interval" in out and "inf" not in out
    assert "zero width" not in err


def test_a_level_too_low_to_hold_any_spread_is_named_as_the_cause() -> None:
    q, y = _pairs()
    said = _zero_width(lambda: calibration_error_ci(q, y, confidence=1e-300, n_samples=100))
    assert said == [
        "the interval has zero width: its level, 1e-298%, holds none of the draws' spread: "
        "ask for a level such as 0.95"
    ]


def test_draws_all_clipped_at_0_are_named_as_the_cause() -> None:
    q, y = _pairs(20000, seed=13)  # calibrated: each draw's debiased error may clip to 0
    g = torch.Generator().manual_seed(0)
    said = _zero_width(lambda: calibration_error_ci(q, y, n_samples=2, generator=g))
    assert len(said) == 1, "two draws, both clipped at 0"
    assert "the draws at both its ends gave 0" in said[0]
    assert "bins hold labels all 0 or all 1" not in said[0]


def test_a_percentile_interval_s_zero_ends_are_not_called_every_draw() -> None:
    """At the level 0.05 a percentile interval's ends are its draws' 47.5th and 52.5th
    percentiles: both 0 while some draws are above 0 (their spread, std, is not 0). The
    warning had said "every draw gave 0"."""
    q, y = _pairs(20000, seed=13)
    g = torch.Generator().manual_seed(0)
    result = None

    def interval() -> None:
        nonlocal result
        result = calibration_error_ci(q, y, n_samples=200, generator=g, confidence=0.05)

    said = _zero_width(interval)
    assert (float(result.lower), float(result.upper)) == (0.0, 0.0)
    assert float(result.std) > 0, "some draws are above 0"
    assert len(said) == 1 and "every draw" not in said[0], said
    assert "the draws at both its ends gave 0" in said[0], said
