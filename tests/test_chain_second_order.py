"""Two silent losses of the chain models. ``log_partition``'s gradient taken with
``create_graph=True`` had no graph, so a gradient penalty backpropagated only its first
term (once_differentiable refuses only when the incoming gradient requires grad): it now
refuses by name when differentiated again. ``ChainTemperature`` cast T to the emissions'
dtype and divided the float32 transitions by that rounded T: with bfloat16 emissions the
marginals moved 6.5e-3 from the exact ones, three times what rounding those costs."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.models.linear_chain import log_partition, posterior_marginals, sample
from calib_metrics.recalibration import ChainTemperature

G = torch.Generator().manual_seed(0)
EM = torch.randn(2, 4, 3, generator=G, dtype=torch.float64)
TR = torch.randn(3, 3, generator=G, dtype=torch.float64)
ZERO = torch.zeros(3, dtype=torch.float64)


def test_the_gradient_of_log_z_keeps_its_values_under_create_graph() -> None:
    em = EM.clone().requires_grad_()
    (plain,) = torch.autograd.grad(log_partition(em, TR, ZERO, ZERO).sum(), em)
    (graphed,) = torch.autograd.grad(log_partition(em, TR, ZERO, ZERO).sum(), em, create_graph=True)
    assert torch.equal(plain, graphed.detach())
    assert torch.allclose(plain, posterior_marginals(EM, TR, ZERO, ZERO).unigram)


def test_a_gradient_penalty_through_log_z_fails_loudly() -> None:
    em = EM.clone().requires_grad_()
    lz = log_partition(em, TR, ZERO, ZERO)
    (grad,) = torch.autograd.grad(lz.sum(), em, create_graph=True)
    assert grad.requires_grad  # it had none: the penalty below was silently dropped
    with pytest.raises(RuntimeError, match="log_partition is differentiable once"):
        (lz.sum() + (grad**2).sum()).backward()


def _sum_log_z(em: torch.Tensor) -> torch.Tensor:
    return log_partition(em, TR, ZERO, ZERO).sum()


def _grad_of_grad(em: torch.Tensor) -> tuple[torch.Tensor, ...]:
    (grad,) = torch.autograd.grad(_sum_log_z(em), em, create_graph=True)
    return torch.autograd.grad(grad.sum(), em)


@pytest.mark.parametrize(
    "second_order",
    [
        lambda: torch.autograd.functional.hessian(_sum_log_z, EM.clone()),
        lambda: torch.autograd.functional.hvp(_sum_log_z, EM.clone(), torch.ones_like(EM)),
        lambda: _grad_of_grad(EM.clone().requires_grad_()),
        lambda: torch.autograd.functional.hessian(
            lambda tr: log_partition(EM, tr, ZERO, ZERO).sum(), TR.clone()
        ),
    ],
    ids=["hessian", "hvp", "grad_of_grad", "hessian_of_transitions_alone"],
)
def test_every_second_order_route_through_log_z_fails_loudly(second_order) -> None:
    # The gradient hung off a detached leaf: torch's hessian and hvp (allow_unused=True)
    # returned zeros where the true Hessian reaches 0.25.
    with pytest.raises(RuntimeError, match="log_partition is differentiable once"):
        second_order()


@pytest.fixture(scope="module")
def fitted() -> tuple[ChainTemperature, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    em = torch.randn(300, 8, 5, generator=g) * 2
    tr = torch.randn(5, 5, generator=g)
    zero = torch.zeros(5)
    tags = sample(em, tr, zero, zero, n_samples=1, generator=g)[0]
    return ChainTemperature().fit(3 * em, 3 * tr, zero, zero, tags), 3 * em, 3 * tr


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_emissions_are_divided_by_the_exact_temperature(fitted, dtype) -> None:
    scaler, em, tr = fitted
    t = scaler.temperature.item()
    assert t != torch.tensor(t).to(dtype).item()  # the rounded T would differ
    zero = torch.zeros(5)
    low = em.to(dtype)
    got = scaler.marginals(low, tr, zero, zero).unigram
    assert got.dtype == dtype
    exact = posterior_marginals(low.double() / t, tr.double() / t, zero.double(), zero.double())
    # Within rounding the exact marginals to the emissions' dtype (bfloat16: 2.0e-3 here;
    # with T rounded to bfloat16 it was 6.5e-3).
    floor = (exact.unigram.to(dtype).double() - exact.unigram).abs().max()
    assert (got.double() - exact.unigram).abs().max() <= floor * 1.01
    scaled = scaler.scale(low, tr, zero, zero)
    assert [x.dtype for x in scaled] == [dtype, tr.dtype, zero.dtype, zero.dtype]
    assert torch.equal(scaled[1], tr / scaler.transition_temperature.to(torch.float32))
