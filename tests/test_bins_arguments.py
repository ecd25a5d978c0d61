"""Bins built by hand (another library's histogram, a streaming summary of one's own) go
through the public bin functions checked: before, a bin of count 0 gave a NaN error, a
frequency of 1.2 or a negative count a number, bins of mismatched lengths a number (by
broadcasting), a NaN frequency an error of NaN with an interval of [0, 0], and a plain
tuple torch's AttributeError."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.functional import Bins, ci_from_bins, error_from_bins, pair_bootstrap

t = torch.tensor
BAD = {
    "a count of 0": (Bins(t([0.1, 0.5]), t([0.2, 0.5]), t([0.0, 0.0])), "count"),
    "a negative count": (Bins(t([0.1]), t([0.2]), t([-3.0])), "count"),
    "a frequency above 1": (Bins(t([0.1]), t([1.2]), t([3.0])), "freq"),
    "a NaN frequency": (Bins(t([0.1]), t([float("nan")]), t([3.0])), "freq"),
    "a mean prediction below 0": (Bins(t([-0.1]), t([0.2]), t([3.0])), "pred_mean"),
    "lengths that differ": (Bins(t([0.1, 0.2]), t([0.2]), t([3.0])), "shape"),
    "no bin": (Bins(t([]), t([]), t([])), "no bin"),
    "a plain tuple of lists": (([0.1], [0.2], [3.0]), "Bins"),
}
CALLS = {
    "error_from_bins": lambda bins: error_from_bins(bins),
    "ci_from_bins": lambda bins: ci_from_bins(bins, n_samples=20),
    "ci_from_bins pairs": lambda bins: ci_from_bins(bins, n_samples=20, interval="pairs"),
    "pair_bootstrap": lambda bins: pair_bootstrap(bins, n_samples=20),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
@pytest.mark.parametrize(("bins", "named"), BAD.values(), ids=BAD.keys())
def test_bad_bins_are_a_value_error_naming_the_problem(call, bins, named) -> None:
    with pytest.raises(ValueError, match=named):
        call(bins)


def test_good_bins_by_hand_still_work_and_a_plain_tuple_of_tensors_is_bins() -> None:
    bins = Bins(t([0.2, 0.8]), t([0.1, 0.8]), t([5.0, 5.0]))
    assert round(error_from_bins(bins).item(), 4) == 0.0707
    assert error_from_bins(tuple(bins)) == error_from_bins(bins)
    # A bin of count 0 among others weighs nothing (as a bootstrap draw's empty bin).
    with_empty = Bins(t([0.2, 0.5, 0.8]), t([0.1, 0.5, 0.8]), t([5.0, 0.0, 5.0]))
    assert error_from_bins(with_empty) == error_from_bins(bins)
    result = ci_from_bins(bins, n_samples=50, generator=torch.Generator().manual_seed(0))
    assert result.error == error_from_bins(bins)
