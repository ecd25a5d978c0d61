"""Bins built by hand are taken as the library's own bins are: float64, empty bins
weighing nothing. Before, a bin of count 0 made every one of Algorithm 2's draws NaN
(an interval of [0, 0] beside an error of 0.07), integer counts crashed the debiased
error and the pair bootstrap in torch's scatter, and float16 counts overflowed when
summed (an error of 0 for 0.07, an OverflowError from the bootstrap)."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.functional import Bins, ci_from_bins, error_from_bins, pair_bootstrap

t = torch.tensor
BINS = Bins(t([0.2, 0.8]), t([0.1, 0.8]), t([400.0, 400.0]))
RESULTS = {
    "error_from_bins": lambda bins: error_from_bins(bins).unsqueeze(0),
    "debiased error_from_bins": lambda bins: error_from_bins(bins, debias=True).unsqueeze(0),
    "ci_from_bins paper": lambda bins: _ci(bins, interval="paper"),
    "ci_from_bins paper debiased": lambda bins: _ci(bins, interval="paper", debias=True),
    "ci_from_bins pairs": lambda bins: _ci(bins, interval="pairs"),
    "ci_from_bins pairs debiased": lambda bins: _ci(bins, interval="pairs", debias=True),
    "pair_bootstrap": lambda bins: torch.stack(
        pair_bootstrap(bins, n_samples=500, generator=torch.Generator().manual_seed(0))[:5]
    ),
}


def _ci(bins: Bins, **options) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    result = ci_from_bins(bins, n_samples=500, generator=generator, **options)
    return torch.stack(result[:5])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float16, torch.float32])
@pytest.mark.parametrize("result", RESULTS.values(), ids=RESULTS.keys())
def test_counts_of_any_dtype_give_the_float64_answer(result, dtype) -> None:
    counts = BINS._replace(count=BINS.count.to(dtype))
    torch.testing.assert_close(result(counts), result(Bins(*(v.double() for v in BINS))))


def test_float16_bins_whose_counts_sum_past_its_range_are_summed_in_float64() -> None:
    # Their sum, 120000, is past float16's largest value, 65504.
    half = Bins(*(v.half() for v in (t([0.2, 0.8]), t([0.1, 0.8]), t([60000.0, 60000.0]))))
    wide = Bins(*(v.double() for v in half))
    for result in RESULTS.values():
        got = result(half)
        assert got.dtype == torch.float64
        torch.testing.assert_close(got, result(wide))
    assert round(error_from_bins(half).item(), 4) == 0.0707


def test_an_empty_bin_weighs_nothing_in_the_draws_either() -> None:
    with_empty = Bins(t([0.2, 0.5, 0.8]), t([0.1, 0.0, 0.8]), t([400.0, 0.0, 400.0]))
    for name, result in RESULTS.items():
        got, want = result(with_empty), result(BINS)
        assert got.isfinite().all(), name
        # The paper's draws redraw the empty bin too, which shifts the random stream.
        tolerance = 0.003 if "paper" in name else 0.0
        torch.testing.assert_close(got, want.double(), rtol=0, atol=tolerance, msg=name)
    paper = ci_from_bins(with_empty, n_samples=1000, generator=torch.Generator().manual_seed(0))
    assert 0.06 < paper.mean < 0.085 and 0.005 < paper.std < 0.02
    assert paper.lower < paper.error < paper.upper


def test_bins_taken_in_float64_keep_their_values_and_shape() -> None:
    result = ci_from_bins(BINS._replace(count=t([400, 400])), n_samples=20)
    assert [v.dtype for v in result.bins] == [torch.float64] * 3
    assert result.bins.count.tolist() == [400.0, 400.0]


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.uint16, torch.uint32])
def test_means_of_dtypes_without_comparisons_are_checked_in_float64(dtype) -> None:
    # The range check ran in the bins' own dtype: torch's NotImplementedError ("ge_cpu").
    exact = Bins(t([0.0, 1.0]), t([0.0, 1.0]), t([4.0, 4.0]))
    odd = Bins(*(v.to(dtype) for v in exact[:2]), exact.count)
    torch.testing.assert_close(
        error_from_bins(odd), error_from_bins(exact.__class__(*(v.double() for v in exact)))
    )


@pytest.mark.parametrize("field", Bins._fields)
def test_complex_bins_are_refused_by_name(field) -> None:
    complex_bins = BINS._replace(**{field: getattr(BINS, field).to(torch.complex64)})
    with pytest.raises(ValueError, match=f"bins.{field} must be real"):
        error_from_bins(complex_bins)
