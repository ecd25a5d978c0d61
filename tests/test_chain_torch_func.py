"""``log_partition`` under ``torch.func``: its custom backward had no ``setup_context``,
so every transform (grad and jacrev included) raised torch's "must override the
setup_context staticmethod". Reverse mode now runs the same backward as ``.backward()``;
forward mode and vmap are refused by name."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.models.linear_chain import log_partition
from calib_metrics.queries import span_marginals

G = torch.Generator().manual_seed(0)
EM = torch.randn(2, 4, 3, generator=G, dtype=torch.float64)
TR = torch.randn(3, 3, generator=G, dtype=torch.float64)
START, END = torch.randn(3, generator=G, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
MASK = torch.tensor([[True, True, True, True], [True, True, False, False]])


def _log_z(em: torch.Tensor, tr: torch.Tensor = TR) -> torch.Tensor:
    return log_partition(em, tr, START, END, MASK)


def _autograd(wrt: int) -> torch.Tensor:
    inputs = [EM.clone().requires_grad_(), TR.clone().requires_grad_()]
    return torch.autograd.grad(_log_z(*inputs).sum(), inputs[wrt])[0]


def test_torch_func_grad_equals_backward() -> None:
    torch.testing.assert_close(torch.func.grad(lambda em: _log_z(em).sum())(EM), _autograd(0))
    got = torch.func.grad(lambda tr: _log_z(EM, tr).sum())(TR)
    torch.testing.assert_close(got, _autograd(1))


def test_torch_func_jacrev_gives_each_sentence_its_gradient() -> None:
    jacobian = torch.func.jacrev(_log_z)(EM)  # [B, B, T, K]
    for b in range(EM.shape[0]):
        em = EM.clone().requires_grad_()
        (want,) = torch.autograd.grad(_log_z(em)[b], em)
        torch.testing.assert_close(jacobian[b], want)


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        (lambda: torch.func.jvp(_log_z, (EM,), (torch.ones_like(EM),)), "no forward-mode"),
        (lambda: torch.func.jacfwd(_log_z)(EM), "no forward-mode"),
        (lambda: torch.func.hessian(lambda em: _log_z(em).sum())(EM), "differentiable once"),
        (
            lambda: torch.func.vmap(
                lambda em: log_partition(em[None], TR, START, END, validate_args=False)
            )(EM),
            "batched already",
        ),
    ],
    ids=["jvp", "jacfwd", "hessian", "vmap"],
)
def test_other_transforms_are_refused_by_name(transform, message) -> None:
    with pytest.raises(RuntimeError, match=message):
        transform()


def test_precision_flags_reach_the_caller_under_torch_func() -> None:
    """torch.func rebuilds list arguments: the fast path's checks had landed in its copy,
    and a caller told nothing kept a NaN gradient (transitions x 1000 defeat it)."""
    em = torch.randn(3, 6, 4, generator=G, dtype=torch.float64)
    mask = torch.arange(6)[None, :] < torch.tensor([6, 3, 1])[:, None]
    start = torch.zeros(4, dtype=torch.float64)
    for scale, flagged in ((1.0, False), (1000.0, True)):
        flags: list[torch.Tensor] = []
        tr = torch.randn(4, 4, generator=G, dtype=torch.float64) * scale

        def log_z(em: torch.Tensor, tr=tr, flags=flags) -> torch.Tensor:
            return log_partition(em, tr, start, start, mask, precision_flags=flags).sum()

        torch.func.grad(log_z)(em)
        assert len(flags) == 3 and any(bool(f) for f in flags) == flagged


CHAIN_CALLS = {
    "log_partition": lambda em, check: log_partition(em, TR, START, END, validate_args=check),
    "posterior_marginals": lambda em, check: (
        linear_chain.posterior_marginals(em, TR, START, END, validate_args=check).unigram
    ),
    "forward_backward": lambda em, check: (
        linear_chain.forward_backward(em, TR, START, END, validate_args=check).log_partition
    ),
    "viterbi": lambda em, check: linear_chain.viterbi(em, TR, START, END, validate_args=check)[0],
    "sample": lambda em, check: linear_chain.sample(
        em, TR, START, END, n_samples=2, validate_args=check
    ).double()[0],
    "span_marginals": lambda em, check: span_marginals(
        em, TR, START, END, begin=0, inside=1, max_length=2
    ),
    "sequence_score": lambda em, check: linear_chain.sequence_score(
        em, TR, START, END, torch.zeros(em.shape[:2], dtype=torch.long), validate_args=check
    ),
}


@pytest.mark.parametrize("check", [True, False], ids=["checked", "unchecked"])
@pytest.mark.parametrize("name", sorted(CHAIN_CALLS))
def test_every_chain_function_refuses_vmap_by_name(name, check) -> None:
    """With the default checks, vmap failed in their host reads with torch's "Cannot
    access data pointer of Tensor that doesn't have storage"; unchecked, in a missing
    batching rule deep in the recursion. Both now say what to do instead."""
    call = CHAIN_CALLS[name]
    with pytest.raises(RuntimeError, match=f"{name} does not run under torch.func.vmap"):
        torch.func.vmap(lambda em: call(em[None], check))(EM)
    nested = torch.func.grad(lambda em: torch.func.vmap(lambda e: call(e[None], check))(em).sum())
    with pytest.raises(RuntimeError, match="stack the sentences along its batch dimension"):
        nested(EM)


@pytest.mark.parametrize("name", sorted(CHAIN_CALLS))
def test_chain_functions_still_run_outside_vmap(name) -> None:
    out = CHAIN_CALLS[name](EM, True)
    assert out.shape[0] == EM.shape[0] and bool(torch.isfinite(out).all())


@pytest.mark.parametrize("name", ["sequence_score", "viterbi"])
def test_unchecked_chain_functions_compile_whole(name) -> None:
    """The vmap test reads functorch's wrappers, which dynamo cannot trace: it had broken
    ``torch.compile(..., fullgraph=True)`` of the unchecked functions (the CRF's training
    loss among them). It stands aside while torch.compile traces."""
    tags = torch.zeros(EM.shape[:2], dtype=torch.long)
    call = {
        "sequence_score": lambda em: linear_chain.sequence_score(
            em, TR, START, END, tags, validate_args=False
        ),
        "viterbi": lambda em: linear_chain.viterbi(em, TR, START, END, validate_args=False)[0],
    }[name]
    try:
        compiled = torch.compile(call, backend="eager", fullgraph=True)
        torch.testing.assert_close(compiled(EM), call(EM))
    finally:
        torch._dynamo.reset()


def test_vmap_over_a_compiled_chain_function_is_refused_by_name() -> None:
    """Standing aside under torch.compile had let vmap(compile(f)) fail with torch's
    "Cannot access data pointer"; compiled, the outermost wrapper is still looked at."""
    compiled = torch.compile(
        lambda em: log_partition(em[None], TR, START, END, validate_args=False), backend="eager"
    )
    try:
        with pytest.raises(
            RuntimeError, match=r"log_partition does not run under torch\.func\.vmap"
        ):
            torch.func.vmap(compiled)(EM)
    finally:
        torch._dynamo.reset()
