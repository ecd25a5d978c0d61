"""Every public method of the structured recalibrators checks its inputs alike, and applies
the fitted float64 temperature exactly.

``CorefTemperature`` had fitted integer scores (in float64) and then divided them by ``T``
cast to their dtype (a fitted 2.69 applied as 2: marginals off by 0.11), and divided
bfloat16 scores by ``T`` rounded to bfloat16 (2.27292 as 2.2656: marginals 3.0e-3 from the
exact ones, where rounding those costs 1.9e-3). ``ChainTemperature.scale`` checked
nothing: int64 potentials came back divided and truncated (``[0, 0, 0]`` for ``[-0.90,
-0.90, -0.30]``), where ``marginals`` named the dtype."""

from __future__ import annotations

import math

import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.models.coref import (
    antecedent_log_probs,
    coreference_marginals,
    sample_antecedents,
)
from calib_metrics.recalibration import ChainTemperature, CorefTemperature


def _coref() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    scores = 3 * torch.randn(30, 6, 6, generator=g, dtype=torch.float64)
    gold = torch.nn.functional.one_hot(sample_antecedents(scores / 2.7, 1, generator=g)[0], 6)
    return scores, gold.bool()


def _chain() -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    em, tr = torch.randn(30, 5, 3, generator=g), torch.randn(3, 3, generator=g)
    zero = torch.zeros(3)
    tags = linear_chain.sample(em, tr, zero, zero, n_samples=1, generator=g)[0]
    return (3 * em, 3 * tr, zero, zero), tags


@pytest.fixture(scope="module")
def coref() -> tuple[CorefTemperature, torch.Tensor, torch.Tensor]:
    scores, gold = _coref()
    return CorefTemperature().fit(scores, gold), scores, gold


@pytest.fixture(scope="module")
def chain() -> tuple[ChainTemperature, tuple[torch.Tensor, ...], torch.Tensor]:
    parts, tags = _chain()
    return ChainTemperature().fit(*parts, tags), parts, tags


def _coref_calls(fitted: CorefTemperature, gold: torch.Tensor) -> dict:
    return {
        "fit": lambda s: CorefTemperature().fit(s, gold),
        "scale": fitted.scale,
        "log_probs": fitted.log_probs,
        "marginals": fitted.marginals,
        "sample": lambda s: fitted.sample(s, 2),
    }


def _chain_calls(fitted: ChainTemperature, tags: torch.Tensor) -> dict:
    return {
        "fit": lambda *p: ChainTemperature().fit(*p, tags),
        "scale": fitted.scale,
        "marginals": fitted.marginals,
        "sample": lambda *p: fitted.sample(*p, n_samples=2),
        "nll": lambda *p: fitted.nll(*p, tags),
    }


@pytest.mark.parametrize("method", ["fit", "scale", "log_probs", "marginals", "sample"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_coref_refuses_scores_that_are_not_floating_point_at_every_entry(
    coref, method, dtype
) -> None:
    fitted, scores, gold = coref
    with pytest.raises(ValueError, match=f"scores must be floating point, got dtype {dtype}"):
        _coref_calls(fitted, gold)[method](scores.round().to(dtype))


@pytest.mark.parametrize("method", ["fit", "scale", "marginals", "sample", "nll"])
def test_chain_refuses_potentials_that_are_not_floating_point_at_every_entry(chain, method) -> None:
    fitted, parts, tags = chain
    integer = tuple(x.round().long() for x in parts)
    with pytest.raises(
        ValueError, match=r"emissions must be floating point, got dtype torch\.int64"
    ):
        _chain_calls(fitted, tags)[method](*integer)


@pytest.mark.parametrize("method", ["fit", "scale", "marginals", "sample", "nll"])
def test_chain_refuses_nan_potentials_at_every_entry(chain, method) -> None:
    fitted, parts, tags = chain
    bad = parts[0].clone()
    bad[0, 0, 0] = math.nan
    with pytest.raises(ValueError, match="emissions contains NaN or \\+inf"):
        _chain_calls(fitted, tags)[method](bad, *parts[1:])


@pytest.mark.parametrize("method", ["scale", "log_probs", "marginals", "sample"])
def test_coref_refuses_nan_scores_at_every_entry(coref, method) -> None:
    fitted, scores, gold = coref
    bad = scores.clone()
    bad[0, 2, 1] = math.nan
    with pytest.raises(ValueError, match="scores contain NaN or \\+inf"):
        _coref_calls(fitted, gold)[method](bad)


def test_scale_with_a_mask_leaves_the_padding_unchecked_and_divides_it() -> None:
    """``scale`` takes the mask ``marginals`` takes, so that NaN padding passes both."""
    (em, tr, st, en), tags = _chain()
    mask = torch.ones(em.shape[:2], dtype=torch.bool)
    mask[0, 3:] = False
    padded = em.clone()
    padded[0, 3:] = math.nan
    fitted = ChainTemperature().fit(em, tr, st, en, tags)
    scaled = fitted.scale(padded, tr, st, en, mask)
    assert torch.equal(scaled[0][mask], fitted.scale(em, tr, st, en)[0][mask])
    assert bool(scaled[0][~mask].isnan().all())
    scores, gold = _coref()
    real = torch.ones(scores.shape[:2], dtype=torch.bool)
    real[0, 4:] = False
    holes = scores.clone()
    holes[0, 4:] = math.nan
    ranker = CorefTemperature().fit(scores, gold)
    assert torch.equal(ranker.scale(holes, real)[0, :4, :4], ranker.scale(scores)[0, :4, :4])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_coref_half_precision_scores_are_divided_by_the_exact_temperature(coref, dtype) -> None:
    fitted, scores, _ = coref
    t = fitted.temperature.item()
    assert t != torch.tensor(t).to(dtype).item()  # the rounded T would differ
    low = scores.to(dtype)
    exact = low.double() / t

    def within_rounding(got: torch.Tensor, want: torch.Tensor) -> None:
        assert got.dtype == dtype
        finite = torch.isfinite(want)
        floor = (want.to(dtype).double() - want)[finite].abs().max()
        assert (got.double() - want)[finite].abs().max() <= floor * 1.01

    # bfloat16: marginals 3.0e-3 from the exact ones with T rounded, against 1.9e-3 here.
    within_rounding(fitted.marginals(low), coreference_marginals(exact))
    within_rounding(fitted.log_probs(low), antecedent_log_probs(exact))
    within_rounding(fitted.scale(low), exact)


@pytest.mark.parametrize("method", ["scale", "log_probs"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_a_gradient_to_the_temperature_stays_finite_past_forbidden_antecedents(
    coref, method, dtype
) -> None:
    """Dividing -inf by T put NaN in the gradient to T (applied in at least float32), where
    the fit's division keeps -inf out."""
    fitted, scores, _ = coref
    forbidden = scores.clone()
    forbidden[:, 5, 0] = -math.inf
    copy = CorefTemperature()
    copy.load_state_dict(fitted.state_dict())
    copy.temperature = fitted.temperature.clone().requires_grad_(True)
    out = getattr(copy, method)(forbidden.to(dtype))
    (grad,) = torch.autograd.grad(out[torch.isfinite(out)].double().sum(), copy.temperature)
    assert torch.isfinite(grad).all() and grad.abs().item() > 0
