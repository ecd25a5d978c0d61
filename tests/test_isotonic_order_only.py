"""Isotonic regression depends on the scores' order only. scikit-learn pools scores
within about 1e-15 of each other: fitted on the scores themselves, the map of 2,000
scores times 1e-16 had missed the map of the scores by 0.55, times 1e-20 had been flat
with a false "labels do not rise" warning, and a confident model's probabilities (some
below 1e-15) had 323 of 5,000 rows off by up to 0.083."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.isotonic import IsotonicRegression

from calib_metrics.recalibration import IsotonicCalibration


def _scored(n: int, scale: float, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    s = scale * torch.randn(n, generator=g, dtype=torch.float64)
    return s, torch.bernoulli(torch.sigmoid(s / scale), generator=g).long()


@pytest.mark.parametrize("factor", [1e-12, 1e-16, 1e-20, 1e20])
def test_the_map_is_the_same_at_any_scale_of_the_scores(factor: float) -> None:
    s, y = _scored(2000, 2.0)
    reference = IsotonicCalibration().fit(s, y)(s)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "labels do not rise" for scores that rank them
        scaled = IsotonicCalibration().fit(s * factor, y)
    assert torch.equal(scaled(s * factor), reference)


def test_a_confident_model_s_probabilities_get_isotonic_regression_over_their_order() -> None:
    z, y = _scored(5000, 15.0, seed=1)
    q = torch.sigmoid(z)
    assert int((q < 1e-15).sum()) > 0  # the scores scikit-learn pools
    _, rank = np.unique(q.numpy(), return_inverse=True)
    pava = IsotonicRegression(y_min=0, y_max=1).fit(rank.astype(float), y.numpy())
    mapped = IsotonicCalibration(inputs="probs").fit(q, y)(q)
    np.testing.assert_allclose(mapped.numpy(), pava.predict(rank.astype(float)), atol=1e-12)


def test_scores_scikit_learn_tells_apart_still_get_its_predict() -> None:
    s, y = _scored(300, 1.0, seed=2)
    s = (4 * s).round() / 4  # ties, pooled alike by both
    test = torch.linspace(-4, 4, 501, dtype=torch.float64)
    sklearn = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(s.numpy(), y.numpy())
    ours = IsotonicCalibration().fit(s, y)(test)
    np.testing.assert_allclose(ours.numpy(), sklearn.predict(test.numpy()), atol=1e-12)
