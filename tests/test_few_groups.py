"""calibration_error_ci over fewer than MIN_UNITS groups gives no interval (NaN ends and a
warning), as compare_calibration does; the error stands."""

import pytest
import torch

from calib_metrics.functional import calibration_error_ci
from calib_metrics.functional.intervals import MIN_UNITS


def _data(n: int = 400):
    g = torch.Generator().manual_seed(0)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g)


@pytest.mark.parametrize("n_groups", [1, 3, MIN_UNITS - 1])
def test_too_few_groups_give_nan_ends_and_a_warning(n_groups):
    q, y = _data()
    groups = torch.arange(400) % n_groups
    with pytest.warns(UserWarning, match=f"{n_groups} group"):
        r = calibration_error_ci(q, y, groups=groups, bin_size=50, n_samples=50)
    assert r.lower.isnan() and r.upper.isnan() and r.std.isnan()
    assert not r.error.isnan() and bool(r.error >= 0)


def test_enough_groups_keep_their_interval():
    q, y = _data()
    groups = torch.arange(400) % MIN_UNITS
    r = calibration_error_ci(q, y, groups=groups, bin_size=50, n_samples=50)
    assert not (r.lower.isnan() or r.upper.isnan())
    assert bool(r.lower <= r.upper)
