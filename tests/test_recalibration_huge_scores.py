"""Scores the fit clamps at ±1e200 (kept there for masks and T < 1) are refused: binary
scores and Platt's, vector- and matrix-scaling logits of that scale had been fitted
silently wrong (T/scale 0.99 for 1.89 at 1e200, 1.3e-50 at 1e250; vector scaling's
probabilities off by 0.39), though "the fits are scale-free"."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.recalibration import (
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)


def _binary() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    s = 2 * torch.randn(2000, generator=g, dtype=torch.float64)
    return s, torch.bernoulli(torch.sigmoid(s / 2), generator=g).long()


def _multiclass() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    logits = 3 * torch.randn(2000, 4, generator=g, dtype=torch.float64)
    return logits, torch.multinomial(torch.softmax(logits / 3, -1), 1, generator=g)[:, 0]


@pytest.mark.parametrize("kind", [TemperatureScaling, PlattScaling])
@pytest.mark.parametrize("scale", [1e200, 1e250])
def test_binary_scores_beyond_the_clamp_are_refused(kind, scale: float) -> None:
    s, y = _binary()
    with pytest.raises(ValueError, match=r"of 2,000 scores lie beyond ±1e200, where the fit"):
        kind().fit(s * scale, y)


@pytest.mark.parametrize("kind", [TemperatureScaling, VectorScaling, MatrixScaling])
def test_multiclass_logits_above_the_clamp_are_refused(kind) -> None:
    logits, y = _multiclass()
    with pytest.raises(ValueError, match=r"of 8,000 logits lie beyond \+1e200"):
        kind().fit(logits * 1e250, y)


def test_below_the_clamp_the_fits_are_scale_free() -> None:
    s, y = _binary()
    scale = 1e180
    temperature = TemperatureScaling().fit(s, y).temperature.item()
    assert TemperatureScaling().fit(s * scale, y).temperature.item() / scale == pytest.approx(
        temperature, rel=1e-6
    )
    slope = PlattScaling().fit(s, y).slope.item()
    assert PlattScaling().fit(s * scale, y).slope.item() * scale == pytest.approx(slope, rel=1e-6)


def test_masks_below_minus_1e200_are_still_masks() -> None:
    logits, y = _multiclass()
    masked = logits.clone()
    masked[:, 3] = torch.finfo(torch.float64).min  # class 3 masked everywhere
    keep = y != 3
    fitted = TemperatureScaling().fit(masked[keep], y[keep])
    assert fitted(masked[keep])[:, 3].max().item() == 0.0


def test_the_advice_claims_scale_freedom_only_where_it_holds() -> None:
    """The refusal had said "temperature and Platt scaling are scale-free" to a matrix
    scaling's caller too, whose off-diagonal penalty is not; it now names the fits that
    give the same probabilities on scores divided by a constant, and vector scaling's
    do (checked here), as temperature's and Platt's do (above)."""
    logits, y = _multiclass()
    with pytest.raises(ValueError) as refused:
        MatrixScaling().fit(logits * 1e250, y)
    said = str(refused.value)
    assert "scale-free" not in said and "matrix" not in said.lower(), said
    assert "vector scaling fit the same probabilities" in said, said
    scale = 1e3
    plain = VectorScaling().fit(logits, y)(logits)
    divided = VectorScaling().fit(logits / scale, y)(logits / scale)
    assert torch.allclose(plain, divided, atol=1e-5)
