"""``fit_binary`` takes probabilities, whatever the method: every method refuses values
outside [0, 1] (logits passed by mistake). Once, ``"isotonic"`` and ``"histogram"`` — whose
modules take any real scores — fitted on logits without a word, while the three others
refused them."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.recalibration import (
    BINARY_METHODS,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
    fit_binary,
)


@pytest.mark.parametrize("method", BINARY_METHODS)
@pytest.mark.parametrize("shift", [1.0, -1.0])
def test_fit_binary_refuses_values_outside_0_1(method, shift) -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(200, generator=g)
    y = torch.bernoulli(q, generator=g)
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        fit_binary(method, q + shift, y)


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_fit_binary_still_fits_probabilities_at_the_ends(method) -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.rand(200, generator=g)
    q[:3] = torch.tensor([0.0, 1.0, 0.5])
    y = torch.bernoulli(q, generator=g)
    out = fit_binary(method, q, y, generator=g)(q)
    assert out.shape == q.shape and bool(((out >= 0) & (out <= 1)).all())


def _fitted_binary():
    g = torch.Generator().manual_seed(2)
    q = torch.rand(300, generator=g)
    y = torch.bernoulli(q, generator=g)
    return {m: fit_binary(m, q, y, generator=g) for m in BINARY_METHODS}


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_a_fitted_binary_recalibrator_maps_an_empty_batch_to_an_empty_one(method) -> None:
    # An empty batch (all padding, a last partial shard) is not a fitting problem: once,
    # calling a fitted module on it raised "a recalibrator needs held-out data to fit on".
    out = _fitted_binary()[method](torch.empty(0))
    assert out.shape == (0,)


def test_fitted_scalers_map_empty_logits_to_empty_probabilities() -> None:
    g = torch.Generator().manual_seed(3)
    logits = 3 * torch.randn(300, 4, generator=g)
    target = torch.multinomial(torch.softmax(logits / 3, -1), 1, generator=g)[:, 0]
    for scaler in (TemperatureScaling(), VectorScaling(), MatrixScaling()):
        scaler.fit(logits, target)
        assert scaler(torch.empty(0, 4)).shape == (0, 4)
        assert scaler.calibrated_logits(torch.empty(0, 4)).shape == (0, 4)
    with pytest.raises(ValueError, match="empty"):
        TemperatureScaling().fit(torch.empty(0, 4), torch.empty(0, dtype=torch.long))
