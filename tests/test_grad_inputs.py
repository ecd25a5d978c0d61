"""Probabilities straight from a model (``requires_grad=True``) are measured, not refused.

A training loop's ``torch.sigmoid(logits)`` carries autograd history; the estimators
treat it as data (no gradient flows through a binned error), so every public entry
must accept it and give what it gives on the detached tensor.
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import (
    Bins,
    adaptive_binning,
    brier_decomposition,
    calibration_error,
    calibration_error_ci,
    ci_from_bins,
    compare_calibration,
    compare_calibration_by_label,
    error_from_bins,
    pair_bootstrap,
    smooth_calibration_from_histogram,
    uniform_binning,
)


def _data(classes: int | None = None):
    g = torch.Generator().manual_seed(0)
    if classes is None:
        logits = torch.randn(600, generator=g, dtype=torch.float64)
        target = torch.bernoulli(torch.sigmoid(logits * 0.7), generator=g).long()
        return logits.requires_grad_(), target, torch.sigmoid
    logits = torch.randn(600, classes, generator=g, dtype=torch.float64)
    target = torch.multinomial(torch.softmax(logits * 0.7, -1), 1, generator=g).squeeze(1)
    return logits.requires_grad_(), target, lambda x: torch.softmax(x, -1)


GROUPS = torch.arange(600) // 6


@pytest.mark.parametrize("classes", [None, 3])
@pytest.mark.parametrize(
    "measure",
    [
        lambda p, y: calibration_error(p, y),
        lambda p, y: calibration_error(p, y, binning="uniform", debias=False),
        lambda p, y: calibration_error_ci(p, y, n_samples=20, generator=_gen()).upper,
        lambda p, y: (
            calibration_error_ci(p, y, groups=GROUPS, n_samples=20, generator=_gen()).upper
        ),
        lambda p, y: (
            compare_calibration(
                p, p.detach() * 0.9 + 0.05, y, groups=GROUPS, n_samples=20, generator=_gen()
            ).upper
        ),
        lambda p, y: brier_decomposition(p, y).calibration,
    ],
)
def test_probs_that_require_grad_give_the_detached_answer(classes, measure):
    logits, target, link = _data(classes)
    probs = link(logits)
    got = measure(probs, target)
    assert not got.requires_grad
    torch.testing.assert_close(got, measure(probs.detach(), target), rtol=0, atol=0)


def test_binning_and_by_label_accept_probs_that_require_grad():
    logits, target, link = _data()
    probs = link(logits)
    for binning in (
        lambda p: adaptive_binning(p, target, 50),
        lambda p: uniform_binning(p, target, 10),
    ):
        for got, want in zip(binning(probs), binning(probs.detach()), strict=True):
            assert not got.requires_grad
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    labels = torch.arange(600) % 3
    got = compare_calibration_by_label(
        probs, probs.detach() * 0.9 + 0.05, target, labels, n_samples=20, generator=_gen()
    )
    want = compare_calibration_by_label(
        probs.detach(), probs.detach() * 0.9 + 0.05, target, labels, n_samples=20, generator=_gen()
    )
    torch.testing.assert_close(got.difference, want.difference, rtol=0, atol=0)


def test_the_metric_detaches_what_it_keeps():
    logits, target, link = _data()
    metric = CalibrationError(n_samples=20, seed=0)
    metric.update(link(logits), target, groups=GROUPS)
    assert not metric.compute().requires_grad


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(1)


# The estimators of given bins or a histogram detach them as the pairs' estimators detach
# the probabilities: their results had carried a grad_fn (the package says they do not).
FROM_TENSORS = {
    "error_from_bins": lambda bins, _: error_from_bins(bins, debias=True),
    "ci_from_bins": lambda bins, _: ci_from_bins(bins, n_samples=20, generator=_gen()).upper,
    "ci_from_bins error": lambda bins, _: ci_from_bins(bins, n_samples=20, generator=_gen()).error,
    "pair_bootstrap": lambda bins, _: pair_bootstrap(bins, n_samples=20, generator=_gen()).error,
    "smooth_calibration_from_histogram": lambda _, cells: smooth_calibration_from_histogram(*cells),
}


@pytest.mark.parametrize("measure", FROM_TENSORS.values(), ids=FROM_TENSORS.keys())
def test_bins_and_histograms_that_require_grad_give_the_detached_answer(measure):
    t = torch.tensor
    mean, freq, count = t([0.2, 0.8]), t([0.1, 0.8]), t([50.0, 50.0])
    weights = (t([0.2, 0.5]), t([3.0, 2.0]), t([1.0, 1.0]))
    got = measure(
        Bins(mean.clone().requires_grad_(), freq.clone().requires_grad_(), count),
        (weights[0].clone().requires_grad_(), weights[1].clone().requires_grad_(), weights[2]),
    )
    assert not got.requires_grad and got.grad_fn is None
    torch.testing.assert_close(got, measure(Bins(mean, freq, count), weights), rtol=0, atol=0)
