"""``log_partition`` under ``torch.func``: its custom backward had no ``setup_context``,
so every transform (grad and jacrev included) raised torch's "must override the
setup_context staticmethod". Reverse mode now runs the same backward as ``.backward()``;
forward mode and vmap are refused by name."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.models.linear_chain import log_partition

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
