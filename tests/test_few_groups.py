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


# -- the same rule for the pair bootstrap: one pair gave a zero-width "interval" --------


@pytest.mark.parametrize("interval", ["pairs", "paper"])
@pytest.mark.parametrize("n_pairs", [1, 2, MIN_UNITS - 1])
def test_too_few_pairs_give_nan_ends_and_a_warning(n_pairs, interval):
    """The paper's interval too: its draws of a bin of one pair (frequency 0 or 1) are
    that frequency, and one pair at 0.3 with label 1 had read [0.7000, 0.7000]."""
    q, y = _data(n_pairs)
    with pytest.warns(UserWarning, match=f"{n_pairs} pair"):
        r = calibration_error_ci(q, y, n_samples=50, interval=interval, debias=False)
    assert r.lower.isnan() and r.upper.isnan() and r.std.isnan() and r.mean.isnan()
    assert not r.error.isnan()


@pytest.mark.parametrize("interval", ["pairs", "paper"])
def test_enough_pairs_keep_their_interval(interval):
    q, y = _data(MIN_UNITS)
    r = calibration_error_ci(q, y, n_samples=50, interval=interval, debias=False)
    assert bool(r.lower <= r.upper) and not r.upper.isnan()


@pytest.mark.parametrize("streaming", [False, True])
def test_the_metric_follows_the_rule(streaming):
    from calib_metrics import CalibrationError

    metric = CalibrationError(n_samples=50, seed=0, streaming=streaming)
    metric.update(*_data(3))
    with pytest.warns(UserWarning, match="3 pairs"):
        r = metric.compute_result()
    assert r.lower.isnan() and r.upper.isnan() and not r.error.isnan()


def test_group_ids_are_compacted_once(monkeypatch):
    """calibration_error_ci(groups=) finds the groups with one torch.unique of the ids
    (it took three: the debias term, the draws and the few-groups check)."""
    import calib_metrics.functional.intervals as intervals

    q, y = _data()
    groups = torch.arange(400) // 7 * 3
    calls = []
    unique = torch.unique

    def counting(values, *args, **kwargs):
        if values.numel() == groups.numel() and torch.equal(values.reshape(-1), groups):
            calls.append(1)
        return unique(values, *args, **kwargs)

    monkeypatch.setattr(torch, "unique", counting)
    assert intervals.torch is torch
    calibration_error_ci(q, y, groups=groups, bin_size=50, n_samples=20)
    assert len(calls) == 1


@pytest.mark.parametrize("multiclass", [False, True])
def test_compare_gives_no_interval_for_either_model_over_too_few_units(multiclass):
    """The paired result went NaN under MIN_UNITS, but each model's own interval stayed:
    compare printed 0.1925 [0.0000, 0.2625] for the 5-row file that evaluate gives
    [nan, nan]."""
    from calib_metrics.functional import compare_calibration

    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(6, 3, generator=g, dtype=torch.float64), -1)
    target = torch.tensor([0, 1, 2, 0, 1, 2])
    mode = "classwise"  # six items: six units, the pairs of an item resampled together
    if not multiclass:
        probs, target, mode = probs[:, 0], (target == 0).double(), "one_vs_rest"
    with pytest.warns(UserWarning, match="6 resampling units"):
        r = compare_calibration(probs**2, probs, target, mode=mode, n_samples=50, generator=g)
    assert r.lower.isnan() and r.p_value.isnan() and not r.difference.isnan()
    for model in (r.a, r.b):
        assert model.lower.isnan() and model.upper.isnan() and model.std.isnan()
        assert not model.error.isnan()
