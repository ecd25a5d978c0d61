"""``CalibrationComparison.compute()`` returns the functional's result whole.

torchmetrics' compute wrapper rebuilds every tuple of a result (to squeeze one-element
tensors and to clone): the bins of one bin came back 0-dim (a reliability diagram of
them raised IndexError), and every bins' records — the tie groups their boundaries cut,
the cluster-robust effective sample sizes with ``groups=`` — were dropped, so error bars
and ``error_from_bins`` no longer matched the result.
"""

from __future__ import annotations

import pickle
import warnings

import pytest
import torch

from calib_metrics import CalibrationComparison
from calib_metrics.functional import compare_calibration
from calib_metrics.functional.intervals import effective_samples

G = torch.Generator().manual_seed(0)
Q = (torch.rand(3000, generator=G, dtype=torch.float64) * 20).round() / 20  # ties
Y = torch.bernoulli(Q, generator=G)
SHARP = torch.where(Q > 0.5, Q.sqrt(), Q**2)
GROUPS = torch.arange(3000) // 15


def _same_bins(got, want) -> None:
    for field in ("pred_mean", "freq", "count"):
        assert torch.equal(getattr(got, field), getattr(want, field))
    assert torch.equal(effective_samples(got), effective_samples(want))


@pytest.mark.parametrize("groups", [None, GROUPS], ids=["pairs", "groups"])
def test_compute_keeps_the_bins_records(groups) -> None:
    metric = CalibrationComparison(n_samples=100)
    metric.update(SHARP, Q, Y, groups=groups)
    want = compare_calibration(
        SHARP, Q, Y, groups=groups, n_samples=100, generator=torch.Generator().manual_seed(0)
    )
    for got in (metric.compute(), pickle.loads(pickle.dumps(metric)).compute()):
        _same_bins(got.a.bins, want.a.bins)
        _same_bins(got.b.bins, want.b.bins)
        assert torch.equal(got.difference, want.difference)


def test_one_bin_stays_one_bin() -> None:
    metric = CalibrationComparison(n_samples=50)
    metric.update(Q[:5], SHARP[:5], Y[:5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer than 10 pairs: no interval
        result = metric.compute()
    assert result.a.bins.count.shape == (1,)
    assert metric.compute() is result  # the cached value, as torchmetrics caches it
