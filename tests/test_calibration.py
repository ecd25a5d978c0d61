"""calibration_error, calibration_error_ci and brier_decomposition against the reference.

The reference (tests/reference.py) is a brute-force numpy version of Algorithms 1–2.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
import reference as ref
import torch

from calib_metrics.functional import (
    adaptive_binning,
    brier_decomposition,
    calibration_error,
    calibration_error_ci,
    uniform_binning,
)
from calib_metrics.functional import calibration as calibration_module


def beta_data(n: int, seed: int, a: float = 0.3, shift: float = 0.0, dtype=torch.float32):
    """q ~ Beta(a, a); y ~ Bernoulli(clip(q + shift)) — calibrated when shift is 0."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    q = torch.distributions.Beta(a, a).sample((n,)).to(torch.float64)
    y = torch.bernoulli((q + shift).clamp(0, 1), generator=g).long()
    return q.to(dtype), y


def with_ties(q: torch.Tensor, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    pool = torch.tensor([0.0, 1.0, 0.5, 0.2, 0.9], dtype=q.dtype)
    pick = torch.rand(q.numel(), generator=g) < 0.4
    return torch.where(pick, pool[torch.randint(5, (q.numel(),), generator=g)], q)


def reference_error(q, y, bin_size, norm="l2", debias=False):
    bins = ref.adaptive_bins(q.to(torch.float64).numpy(), y.numpy(), bin_size)
    return ref.error(bins, norm, debias)


# --------------------------------------------------------------------------------------
# calibration_error


@pytest.mark.parametrize("norm", ["l2", "l1", "max"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize(("n", "bin_size"), [(3001, 200), (150, 200), (200, 200), (40, 1)])
def test_error_matches_reference(norm, dtype, n, bin_size) -> None:
    q, y = beta_data(n, seed=n + bin_size, shift=0.05)
    q = with_ties(q, seed=n).to(dtype)
    got = calibration_error(q, y, bin_size=bin_size, norm=norm, debias=False)
    assert got.dtype == torch.float64 and got.shape == ()
    assert got.item() == pytest.approx(reference_error(q, y, bin_size, norm), rel=1e-12, abs=1e-15)


def test_debias_matches_reference() -> None:
    q, y = beta_data(5000, seed=1, shift=0.03)
    got = calibration_error(q, y, bin_size=250, debias=True)
    assert got.item() == pytest.approx(reference_error(q, y, 250, debias=True), rel=1e-12)
    assert got < calibration_error(q, y, bin_size=250, debias=False)


@pytest.mark.parametrize("norm", ["l2", "l1", "max"])
def test_uniform_error_matches_reference(norm) -> None:
    q, y = beta_data(4000, seed=2, shift=-0.04, dtype=torch.float64)
    bins = ref.uniform_bins(q.numpy(), y.numpy(), 15)
    got = calibration_error(q, y, binning="uniform", n_bins=15, norm=norm, debias=False)
    assert got.item() == pytest.approx(ref.error(bins, norm), rel=1e-12)


def test_target_types_give_one_answer() -> None:
    q, y = beta_data(999, seed=3)
    values = {
        calibration_error(q, y.to(dtype), bin_size=100, debias=False).item()
        for dtype in (torch.bool, torch.int64, torch.int8, torch.float16, torch.float64)
    }
    assert len(values) == 1


def test_paper_definition_by_hand() -> None:
    # Bins {0.1, 0.2 | y 0, 0} and {0.7, 0.9 | y 1, 1}: gaps 0.15 and 0.2.
    probs = torch.tensor([0.1, 0.2, 0.7, 0.9], dtype=torch.float64)
    target = torch.tensor([0, 0, 1, 1])
    got = calibration_error(probs, target, bin_size=2, debias=False)
    assert got.item() == pytest.approx(math.sqrt((0.15**2 + 0.2**2) / 2), rel=1e-14)


def test_constant_prediction_matching_frequency_is_zero() -> None:
    # torch-uncertainty scores this 0.70: 100 predictions of 0.7, 70 of them right.
    probs = torch.full((100,), 0.7, dtype=torch.float64)
    target = torch.zeros(100, dtype=torch.long)
    target[torch.randperm(100, generator=torch.Generator().manual_seed(0))[:70]] = 1
    assert calibration_error(probs, target, bin_size=100, debias=False).item() == pytest.approx(
        0, abs=1e-12
    )
    assert calibration_error(probs, target, bin_size=5000, debias=False).item() == pytest.approx(
        0, abs=1e-12
    )


def test_extremes_q_zero_and_one() -> None:
    # Confident and right: 0; confident and wrong: 1.
    q = torch.tensor([0.0, 0.0, 1.0, 1.0])
    assert calibration_error(q, torch.tensor([0, 0, 1, 1]), bin_size=2, debias=False).item() == 0.0
    assert calibration_error(q, torch.tensor([1, 1, 0, 0]), bin_size=2, debias=False).item() == 1.0


def test_float32_two_million_pairs_equal_float64_answer() -> None:
    # More pairs than one processing chunk (2**21), float32 in: the sums are float64, so
    # the answer equals the float64 computation on the same values to 1e-9.
    n = 2_300_000
    g = torch.Generator().manual_seed(42)
    # Mass piled near 0 and 1 as in NLP models (cheaper than Beta(0.3, 0.3) sampling),
    # plus a big tie at 0.25 that straddles many bins.
    u = torch.rand(n, generator=g)
    v = torch.rand(n, generator=g) ** 3
    q = torch.where(u < 0.45, v, torch.where(u < 0.9, 1 - v, torch.tensor(0.25)))
    y = torch.bernoulli(q, generator=g).to(torch.uint8)
    got = calibration_error(q, y, bin_size=5000, debias=False)
    expected = reference_error(q, y, 5000)
    assert got.dtype == torch.float64
    assert abs(got.item() - expected) <= 1e-9
    assert expected > 0


# --------------------------------------------------------------------------------------
# calibration_error_ci


@pytest.fixture(scope="module")
def miscalibrated():
    q, y = beta_data(6000, seed=7, a=0.5, shift=0.06, dtype=torch.float64)
    return q, y


def test_ci_matches_reference_algorithm_2(miscalibrated) -> None:
    q, y = miscalibrated
    s = 20000
    result = calibration_error_ci(
        q,
        y,
        bin_size=300,
        n_samples=s,
        generator=torch.Generator().manual_seed(1),
        debias=False,
        interval="paper",
    )
    bins = ref.adaptive_bins(q.numpy(), y.numpy(), 300)
    samples = ref.sampled_errors(bins, 4000, np.random.default_rng(0))
    ref_mean, ref_std = samples.mean(), samples.std(ddof=1)
    assert result.error.item() == pytest.approx(ref.error(bins), rel=1e-12)
    torch.testing.assert_close(result.bins.count, torch.from_numpy(bins.count).double())
    # Monte Carlo tolerance: 5 standard errors of each mean, ~5% on the std.
    tol = 5 * ref_std * math.sqrt(1 / s + 1 / samples.size)
    assert abs(result.mean.item() - ref_mean) < tol
    assert result.std.item() == pytest.approx(ref_std, rel=0.08)


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_normal_interval_is_mean_plus_minus_z_std(miscalibrated, confidence) -> None:
    # The paper's interval at 0.95 is mean ± 1.96·std; z is the normal quantile.
    q, y = miscalibrated
    r = calibration_error_ci(
        q,
        y,
        bin_size=300,
        n_samples=500,
        confidence=confidence,
        generator=torch.Generator().manual_seed(1),
        debias=False,
        interval="paper",
    )
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    assert r.mean.item() - z * r.std.item() > 0  # clipping at 0 plays no part here
    assert r.lower.item() == pytest.approx(r.mean.item() - z * r.std.item(), rel=1e-9)
    assert r.upper.item() == pytest.approx(r.mean.item() + z * r.std.item(), rel=1e-9)


def test_normal_interval_never_below_zero() -> None:
    # One bin of 12 pairs at its frequency: std is large, mean - 1.96·std < 0; an error
    # cannot be negative.
    q = torch.full((12,), 0.5, dtype=torch.float64)
    y = torch.arange(12) % 2
    r = calibration_error_ci(
        q,
        y,
        n_samples=2000,
        generator=torch.Generator().manual_seed(0),
        debias=False,
        interval="paper",
        bin_size=5000,
    )
    assert r.mean.item() - 1.96 * r.std.item() < 0
    assert r.lower.item() >= 0.0
    assert r.upper.item() == pytest.approx(r.mean.item() + 1.959963984540054 * r.std.item())


def test_ci_deterministic_with_generator(miscalibrated) -> None:
    q, y = miscalibrated
    a = calibration_error_ci(
        q,
        y,
        bin_size=500,
        n_samples=500,
        generator=torch.Generator().manual_seed(3),
        debias=False,
        interval="paper",
    )
    b = calibration_error_ci(
        q,
        y,
        bin_size=500,
        n_samples=500,
        generator=torch.Generator().manual_seed(3),
        debias=False,
        interval="paper",
    )
    c = calibration_error_ci(
        q,
        y,
        bin_size=500,
        n_samples=500,
        generator=torch.Generator().manual_seed(4),
        debias=False,
        interval="paper",
    )
    for name in ("error", "mean", "std", "lower", "upper"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert a.mean != c.mean
    assert a.error == c.error


@pytest.mark.parametrize("method", ["normal", "percentile"])
def test_ci_ordering_and_dtype(miscalibrated, method) -> None:
    q, y = miscalibrated
    r = calibration_error_ci(
        q.float(),
        y,
        bin_size=400,
        n_samples=2000,
        method=method,
        generator=torch.Generator().manual_seed(5),
        debias=False,
        interval="paper",
    )
    for value in (r.error, r.mean, r.std, r.lower, r.upper):
        assert value.shape == () and value.dtype == torch.float64
    assert r.lower <= r.mean <= r.upper
    assert r.std > 0
    assert r.lower >= 0 and r.upper <= 1


def test_percentile_bounds_are_sample_quantiles(miscalibrated) -> None:
    q, y = miscalibrated
    bins = adaptive_binning(q, y, 300)
    r = calibration_error_ci(
        q,
        y,
        bin_size=300,
        n_samples=3000,
        method="percentile",
        confidence=0.9,
        generator=torch.Generator().manual_seed(8),
        debias=False,
        interval="paper",
    )
    samples = calibration_module.sampled_errors(
        bins, 3000, generator=torch.Generator().manual_seed(8)
    )
    assert samples.shape == (3000,)
    lo, hi = torch.quantile(samples, torch.tensor([0.05, 0.95], dtype=torch.float64))
    torch.testing.assert_close(r.lower, lo)
    torch.testing.assert_close(r.upper, hi)
    torch.testing.assert_close(r.mean, samples.mean())
    # Independently of the sampler: ~5% of the reference's draws fall below the bound.
    ref_samples = ref.sampled_errors(
        ref.adaptive_bins(q.numpy(), y.numpy(), 300), 4000, np.random.default_rng(2)
    )
    assert abs((ref_samples < r.lower.item()).mean() - 0.05) < 0.025
    assert abs((ref_samples > r.upper.item()).mean() - 0.05) < 0.025


@pytest.mark.parametrize("method", ["normal", "percentile"])
def test_width_grows_with_confidence(miscalibrated, method) -> None:
    q, y = miscalibrated
    widths = []
    for confidence in (0.5, 0.8, 0.95, 0.99):
        r = calibration_error_ci(
            q,
            y,
            bin_size=300,
            n_samples=2000,
            confidence=confidence,
            method=method,
            generator=torch.Generator().manual_seed(11),
            debias=False,
            interval="paper",
        )
        widths.append((r.upper - r.lower).item())
    assert widths == sorted(widths) and widths[0] < widths[-1]
    assert len(set(widths)) == len(widths)


def test_ci_uniform_binning_and_norms(miscalibrated) -> None:
    q, y = miscalibrated
    for norm in ("l1", "l2", "max"):
        r = calibration_error_ci(
            q,
            y,
            binning="uniform",
            n_bins=10,
            norm=norm,
            n_samples=1000,
            generator=torch.Generator().manual_seed(0),
            debias=False,
            interval="paper",
        )
        bins = ref.uniform_bins(q.numpy(), y.numpy(), 10)
        assert r.error.item() == pytest.approx(ref.error(bins, norm), rel=1e-12)
        assert r.lower <= r.mean <= r.upper


def test_ci_degenerate_bins_have_zero_width() -> None:
    # Every bin's frequency is 0 or 1: no sampling noise, all draws equal the error.
    q = torch.tensor([0.1] * 10 + [0.8] * 10, dtype=torch.float64)
    y = torch.tensor([0] * 10 + [1] * 10)
    r = calibration_error_ci(q, y, bin_size=10, n_samples=100, debias=False, interval="paper")
    assert r.std.item() == pytest.approx(0, abs=1e-15)
    assert r.mean.item() == pytest.approx(r.error.item())


# --------------------------------------------------------------------------------------
# brier_decomposition


def test_brier_decomposition_identity(miscalibrated) -> None:
    q, y = miscalibrated
    d = brier_decomposition(q.float(), y, bin_size=300)
    q64 = q.float().double().numpy()
    assert d.brier.item() == pytest.approx(float(np.mean((q64 - y.numpy()) ** 2)), rel=1e-12)
    err = calibration_error(q.float(), y, bin_size=300, debias=False)
    assert d.calibration.item() == pytest.approx(err.item() ** 2, rel=1e-12)
    bins = ref.adaptive_bins(q64, y.numpy(), 300)
    w = bins.count / bins.count.sum()
    assert d.refinement.item() == pytest.approx(float(np.sum(w * bins.freq * (1 - bins.freq))))
    total = d.calibration + d.refinement + d.within_bin
    assert total.item() == pytest.approx(d.brier.item(), rel=1e-12)


def test_brier_within_bin_zero_for_constant_bins() -> None:
    # q constant inside each bin: the binned terms add up to the Brier score exactly.
    g = torch.Generator().manual_seed(0)
    q = torch.tensor([0.1, 0.35, 0.6, 0.95], dtype=torch.float64).repeat_interleave(250)
    y = torch.bernoulli(torch.full_like(q, 0.5), generator=g)
    d = brier_decomposition(q, y, bin_size=250)
    assert d.within_bin.item() == pytest.approx(0, abs=1e-14)
    assert (d.calibration + d.refinement).item() == pytest.approx(d.brier.item(), rel=1e-13)


def test_brier_uniform_binning() -> None:
    q, y = beta_data(3000, seed=12, dtype=torch.float64)
    d = brier_decomposition(q, y, binning="uniform", n_bins=15)
    bins = uniform_binning(q, y, 15)
    w = bins.count / bins.count.sum()
    assert d.calibration.item() == pytest.approx(
        float((w * (bins.pred_mean - bins.freq) ** 2).sum()), rel=1e-12
    )


# --------------------------------------------------------------------------------------
# bad inputs: ValueError naming the problem

GOOD_Q = torch.tensor([0.2, 0.6, 0.9])
GOOD_Y = torch.tensor([0, 1, 1])

BAD_PAIRS = [
    (torch.tensor([0.2, 1.5, 0.9]), GOOD_Y, r"\[0, 1\]"),
    (torch.tensor([-0.1, 0.5, 0.9]), GOOD_Y, r"\[0, 1\]"),
    (torch.tensor([2.3, -1.0, 0.4]), GOOD_Y, "logits"),
    (torch.tensor([0.2, float("inf"), 0.9]), GOOD_Y, r"\[0, 1\]"),
    (torch.tensor([0.2, float("nan"), 0.9]), GOOD_Y, "NaN"),
    (GOOD_Q, torch.tensor([0, 2, 1]), "binary"),
    (GOOD_Q, torch.tensor([0, -1, 1]), "binary"),
    (GOOD_Q, torch.tensor([0.0, 0.5, 1.0]), "binary"),
    (GOOD_Q, torch.tensor([0.0, float("nan"), 1.0]), "binary"),
    (GOOD_Q, torch.tensor([0, 1]), "shape"),
    (GOOD_Q.reshape(3, 1), GOOD_Y, "shape"),
    (torch.tensor([]), torch.tensor([]), "empty"),
    (torch.tensor([0, 1, 1]), GOOD_Y, "floating"),
]


@pytest.mark.parametrize(("probs", "target", "match"), BAD_PAIRS)
@pytest.mark.parametrize(
    "fn",
    [
        lambda p, t: calibration_error(p, t, bin_size=2, debias=False),
        lambda p, t: calibration_error(p, t, binning="uniform", debias=False),
        lambda p, t: calibration_error_ci(
            p, t, bin_size=2, n_samples=10, debias=False, interval="paper"
        ),
        lambda p, t: adaptive_binning(p, t, 2),
        lambda p, t: uniform_binning(p, t, 5),
        lambda p, t: brier_decomposition(p, t, bin_size=2),
    ],
    ids=["error", "error-uniform", "ci", "adaptive", "uniform", "brier"],
)
def test_bad_pairs_rejected(fn, probs, target, match) -> None:
    with pytest.raises(ValueError, match=match):
        fn(probs, target)


BAD_OPTIONS = [
    (calibration_error, {"bin_size": 0}, "bin_size"),
    (calibration_error, {"bin_size": -5}, "bin_size"),
    (calibration_error, {"bin_size": 2.5}, "bin_size"),
    (calibration_error, {"bin_size": True}, "bin_size"),
    (calibration_error, {"binning": "uniform", "n_bins": 0}, "n_bins"),
    (calibration_error, {"n_bins": 1.5}, "n_bins"),
    (calibration_error, {"norm": "l3"}, "norm"),
    (calibration_error, {"binning": "quantile"}, "binning"),
    (calibration_error, {"debias": "yes"}, "debias"),
    (calibration_error_ci, {"confidence": 0.0}, "confidence"),
    (calibration_error_ci, {"confidence": 1.0}, "confidence"),
    (calibration_error_ci, {"confidence": 95}, "confidence"),
    (calibration_error_ci, {"n_samples": 1}, "n_samples"),
    (calibration_error_ci, {"n_samples": 0}, "n_samples"),
    (calibration_error_ci, {"n_samples": 100.0}, "n_samples"),
    (calibration_error_ci, {"method": "bootstrap"}, "method"),
    (calibration_error_ci, {"bin_size": 0}, "bin_size"),
    (calibration_error_ci, {"norm": "l0"}, "norm"),
    (brier_decomposition, {"bin_size": 0}, "bin_size"),
    (adaptive_binning, {"bin_size": 0}, "bin_size"),
    (uniform_binning, {"n_bins": 0}, "n_bins"),
]


@pytest.mark.parametrize(("fn", "kwargs", "match"), BAD_OPTIONS)
def test_bad_options_rejected(fn, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        fn(GOOD_Q, GOOD_Y, **kwargs)


def test_non_tensor_rejected() -> None:
    with pytest.raises(ValueError, match="tensor"):
        calibration_error([0.2, 0.5], torch.tensor([0, 1]), debias=False, bin_size=5000)
