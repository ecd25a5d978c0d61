"""Exact inference for linear-chain models (HMM, CRF): marginals, Viterbi, sampling.

A chain of ``T`` tags over ``K`` labels is scored, for tags ``y``, as

    start[y_0] + sum_t emissions[t, y_t] + sum_t transitions[y_t, y_{t+1}] + end[y_{L-1}]

with ``transitions[i, j]`` the score of tag ``i`` followed by tag ``j`` (the
convention of pytorch-crf's ``torchcrf.CRF``, start and end scores included), so
``P(y | x) = exp(score(y)) / Z``. Sentences of different lengths share a batch
through a left-aligned boolean ``mask`` ``[B, T]`` (``mask[:, 0]`` all True, as
pytorch-crf requires); positions outside the mask get zero marginals.

Every routine is batched over sentences and loops only over time steps. The
forward-backward recursions run in probability space with a per-step rescaling
(the classic HMM "scaled" recursion): emission scores are exponentiated once,
shifted by each step's maximum, transition scores shifted per column, and each
step is one small matrix product ``[B, K] @ [K, K]``, a multiply and a
normalisation, instead of the ``[B, K, K]`` log-sum-exp of a log-space
recursion; float64 by default (``compute_dtype``: float32 is as exact as shown below;
float16 and bfloat16, for sampling speed on an accelerator, are not: on chains of 40
tokens and 5 tags, emissions of scale 5 and transitions of scale 3, log Z missed
float64's by 0.29 and 0.83 nats, the marginals by 0.002 and 0.02, and bfloat16's
Viterbi path was not the best). Should a
step span so many nats that terms could underflow (hundreds: about 708 below the step's
best score in float64, 87 in float32; never for trained HMM/CRF potentials), the call is
redone by a per-step-normalised log-space recursion, which is exact for any
finite scores. That includes a "forbidden" choice written as a large negative
number (pytorch-crf users' -1e4): write it as -inf, which the fast path keeps
exactly, to stay on the fast path. So is a call where a tag that forbidden
transitions keep apart falls hundreds of nats behind over several steps and is
needed again later: the forward vectors underflow without any step showing it,
and the backward pass's check, which :func:`log_partition` and :func:`sample` run
as well, catches it. The log-space path takes several times to tens of times as long,
the longer the more tags (on one CPU thread, about 4 to 10 times at K = 8 to 16, 10 to 50
times at K = 32 to 64), but no more memory: its pairwise marginals, and the transitions
gradient of :func:`log_partition`, are built a block of steps at a time, never as a
``[B, T-1, K, K]`` log tensor (log Z and its gradient at B = 256, T = 512, K = 64 peak
at 0.64 GB, as with -inf; the gradient had taken 13 GB). Float32 inputs of length 2000
and score scale 30 give marginals within 1e-6 of the float64 answer. ``log_partition``
is differentiable, with the marginals (expected counts) as its exact gradient.
Results come back in the dtype of ``emissions`` on its device: from float16 inputs a log
normaliser or Viterbi score beyond float16's 65,504 (a long sentence of large scores)
comes back ``+inf`` though the marginals are right; pass float32 emissions where those
scalars matter.

Each step writes into slices of tensors laid out time step by time step (so a step's
slice is contiguous and nothing is allocated per step); the pairwise marginals, the
largest output, are built afterwards in one blocked pass, in a tensor advised to the
kernel as transparent huge pages on Linux (``calib_metrics/models/_memory.py``). On CPU,
:func:`posterior_marginals` and the backward pass of :func:`log_partition` take a large
batch a chunk of sentences at a time, so that their float64 temporaries stay small enough
for the allocator to reuse. Viterbi keeps the best prefix scores only and recomputes the
backpointers of the chosen path.

Scores may be -inf (a forbidden tag or transition); NaN and +inf raise ``ValueError``
(emissions are checked only inside the mask), as do T = 0, K = 0 and a bad mask. A batch
of no sentences (B = 0: :func:`~calib_metrics.models.left_align` of rows that keep no
token) gives empty results, which ``restore`` fills with its ``fill``. A sentence that
no tag sequence can score has ``log Z = -inf``, zero marginals and Viterbi score -inf;
sampling from it raises. :func:`forward_backward` exposes the log messages themselves,
and :func:`pairwise_rows` a few rows of the pairwise marginals (for span queries,
:func:`calib_metrics.queries.span_marginals`, as exact as the marginals at any score
scale). Every public function checks its arguments once (one host synchronisation;
``validate_args=False`` skips it), and a training loop can defer the fast path's precision
checks too (``log_partition(..., precision_flags=[])``). The functions are batched already, so
``torch.func.vmap`` is refused by name (stack the sentences instead); ``log_partition``
runs under ``torch.func.grad``, ``vjp`` and ``jacrev``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor
from torch._C import _functorch as functorch  # no public test for a vmap-batched tensor

from calib_metrics.functional.errors import (
    COMPUTE_FLOATS,
    MOST_SAMPLES,
    as_int,
    as_int64,
    check_computable_float,
    check_dense_tensors,
    check_flag,
    check_generator,
    check_not_meta,
)
from calib_metrics.models._memory import faults_page_by_page, fresh_output

__all__ = [
    "ChainMarginals",
    "ChainMessages",
    "forward_backward",
    "log_partition",
    "pairwise_rows",
    "posterior_marginals",
    "sample",
    "sequence_score",
    "viterbi",
]


class ChainMarginals(NamedTuple):
    """Posterior of a linear chain.

    Attributes:
        log_partition: ``[B]`` log normaliser ``log Z`` of each sentence.
        unigram: ``[B, T, K]``, ``unigram[b, t, k] = P(y_t = k | x)``; 0 outside the mask.
        pairwise: ``[B, T-1, K, K]``, ``pairwise[b, t, i, j] = P(y_t = i, y_{t+1} = j | x)``;
            0 where ``t + 1`` is outside the mask. ``None`` when not requested.

    Example:
        >>> import torch
        >>> out = posterior_marginals(torch.zeros(1, 2, 2), torch.zeros(2, 2), torch.zeros(2),
        ...                           torch.zeros(2))
        >>> out.unigram
        tensor([[[0.5000, 0.5000],
                 [0.5000, 0.5000]]])
        >>> out.pairwise[0, 0]
        tensor([[0.2500, 0.2500],
                [0.2500, 0.2500]])
    """

    log_partition: Tensor
    unigram: Tensor
    pairwise: Tensor | None


class _Forward(NamedTuple):
    """Forward pass. Fast path: ``alpha_t = exp(log_scale_t) * probs_t``, probs summing to 1.

    Log-space fallback: ``alpha_t = exp(log_scale_t + log_alpha_t)`` and probs is None.
    Both are carried unchanged past the end of each sentence's mask.
    """

    probs: Tensor | None  # [B, T, K]
    log_alpha: Tensor | None  # [B, T, K], normalised per step
    log_partition: Tensor  # [B]
    log_scale: Tensor  # [B, T] cumulative log normaliser of the forward messages
    col_shift: Tensor  # [K] per-column max of the transitions (finite)
    trans_col: Tensor  # [K, K] exp(transitions - col_shift)


def default_compute_dtype(device: torch.device) -> torch.dtype:
    """The widest float ``device`` has: float64, or float32 on MPS (which has no float64).

    The recursions run in it by default, since float64 is what keeps long chains exact;
    so do the models' divisions of counts (a half-precision count overflows past
    65,504, and bfloat16 rounds counts past 256), cast to the output dtype at the end.

    Example:
        >>> default_compute_dtype(torch.device("cpu"))
        torch.float64
    """
    return torch.float32 if device.type == "mps" else torch.float64


def _check_inputs(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None,
    hint: str | None = None,
) -> Tensor:
    """Validate shapes, values and the mask; return the mask as bool ``[B, T]``. A layout
    error ends with ``hint`` (default: :func:`left_align_hint` of the emissions and mask).

    The value checks (NaN / +inf scores, the mask's first column and left alignment) are
    reduced on the device and read back once: one host synchronisation per call.
    """
    _check_shapes(emissions, transitions, start, end)
    batch, length, _ = emissions.shape
    if mask is None:
        mask = torch.ones(batch, length, dtype=torch.bool, device=emissions.device)
    else:
        if not isinstance(mask, Tensor) or tuple(mask.shape) != (batch, length):
            shape = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
            raise ValueError(f"mask must have shape [B, T] = [{batch}, {length}], got {shape}")
        check_mask_dtype(mask)
        check_not_meta(mask, "mask")
        mask = mask.to(device=emissions.device)
    *flags, bad_emission, bad_other = _value_flags(
        emissions, transitions, start, end, mask
    ).tolist()
    check_mask_flags(*flags, hint=left_align_hint() if hint is None else hint)
    mask = mask.bool()
    if bad_emission or bad_other:
        where = "emissions (inside the mask)" if bad_emission else "transitions, start or end"
        raise ValueError(
            f"scores must be finite or -inf (a forbidden choice): {where} hold NaN or +inf"
        )
    return mask


def _check_shapes(emissions: Tensor, transitions: Tensor, start: Tensor, end: Tensor) -> None:
    if not isinstance(emissions, Tensor):
        raise ValueError(f"emissions must be a [B, T, K] tensor, got {type(emissions).__name__}")
    if emissions.dim() != 3:
        raise ValueError(
            f"emissions must be a [B, T, K] tensor, got shape {tuple(emissions.shape)}"
        )
    if not emissions.is_floating_point():
        raise ValueError(f"emissions must be floating point, got {emissions.dtype}")
    check_computable_float(emissions, "emissions")
    check_not_meta(emissions, "emissions")
    _, length, num_tags = emissions.shape
    # B = 0 is a batch of no sentences (left_align's of rows that keep no token): empty
    # results, which LeftAligned.restore fills.
    if length < 1 or num_tags < 1:
        raise ValueError(
            f"emissions needs T >= 1 and K >= 1 (a token and a tag at least), got shape "
            f"{tuple(emissions.shape)}"
        )
    for name, value, shape in (
        ("transitions", transitions, (num_tags, num_tags)),
        ("start", start, (num_tags,)),
        ("end", end, (num_tags,)),
    ):
        if not isinstance(value, Tensor) or tuple(value.shape) != shape:
            got = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
            dims = "[K, K]" if len(shape) == 2 else "[K]"
            raise ValueError(f"{name} must have shape {dims} = {list(shape)}, got {got}")
        if not value.is_floating_point():
            raise ValueError(f"{name} must be floating point, got {value.dtype}")
        check_computable_float(value, name)
        check_not_meta(value, name)


def mask_flags(mask: Tensor) -> Tensor:
    """``[3]`` bool on the device: an integer mask holding values other than 0 and 1, a
    sentence without its first token, a mask that is not left-aligned (a False before a
    True). Read them with :func:`check_mask_flags`.

    Example:
        >>> mask_flags(torch.tensor([[True, False, True]])).tolist()
        [False, False, True]
        >>> mask_flags(torch.tensor([[1, 2]])).tolist()
        [True, False, False]
    """
    not_binary = mask_not_binary(mask)
    mask = mask.bool()
    if mask.shape[1] == 0:
        return torch.stack([not_binary, *mask.new_zeros(2)])
    return torch.stack([not_binary, ~mask[:, 0].all(), (mask[:, 1:] & ~mask[:, :-1]).any()])


def mask_not_binary(mask: Tensor) -> Tensor:
    """0-dim bool on the device: an integer mask holds values other than 0 and 1.

    Example:
        >>> mask_not_binary(torch.tensor([[1, 2]])).item()
        True
    """
    if mask.dtype == torch.bool:
        return torch.zeros((), dtype=torch.bool, device=mask.device)
    return ((mask != 0) & (mask != 1)).any()


def check_mask_dtype(mask: Tensor, name: str = "mask") -> None:
    """A mask is bool or integer 0/1, never floating point (0.5 would read as True); so is
    any other tensor of flags read as a mask (``name`` says which).

    Example:
        >>> check_mask_dtype(torch.ones(1, 2, dtype=torch.bool))
        >>> check_mask_dtype(torch.ones(1, 2))
        Traceback (most recent call last):
        ...
        ValueError: mask must be bool (or integer 0/1), got torch.float32
    """
    if mask.is_floating_point() or mask.is_complex():
        raise ValueError(f"{name} must be bool (or integer 0/1), got {mask.dtype}")


def as_indices(values: Tensor, name: str) -> Tensor:
    """``values``, a tensor of any integer dtype, as ``int64`` indices (itself if it is one).

    Index tensors (words, tags, feature and entity ids) are widened once at a public
    entry, before any range check or arithmetic: in a narrow dtype a bound wraps (in uint8
    ``200 >= 300`` holds), so does ``tag * K + next_tag``, uint8 indexes as a mask, and
    ``bincount`` and ``nn.Embedding`` refuse the narrow types.

    Example:
        >>> as_indices(torch.tensor([200], dtype=torch.uint8), "tags")
        tensor([200])
        >>> as_indices(torch.tensor([True]), "tags")
        Traceback (most recent call last):
        ...
        ValueError: tags must be an integer tensor, got torch.bool
    """
    if values.is_floating_point() or values.is_complex() or values.dtype == torch.bool:
        raise ValueError(f"{name} must be an integer tensor, got {values.dtype}")
    return as_int64(values, name)


def left_align_hint(arguments: str = "emissions, mask=mask", call: str | None = None) -> str:
    """The fix of a mask that is no prefix of each row: the call of
    :func:`calib_metrics.models.left_align` on a chain's inputs, named by ``arguments``,
    written to be pasted as it reads (the helper imported by name). ``call``: the caller's
    own call on the aligned batch, whose result is per sentence (``[B']``, in the order of
    ``aligned.rows``); else the hint says to call again and restore per-token results.

    Example:
        >>> print(left_align_hint("words, tags, mask"))
         (a [CLS], sub-word pieces or a row masked out? call again on the kept tokens moved
         to the front (aligned.emissions, aligned.tags, aligned.mask); aligned.restore(...)
         puts per-token results back: from calib_metrics.models import left_align; aligned =
         left_align(words, tags, mask))
    """
    fix = f"from calib_metrics.models import left_align; aligned = left_align({arguments})"
    if call is not None:
        return (
            " (a [CLS], sub-word pieces or a row masked out? call on the kept tokens moved to"
            " the front, tags too; its result i is row aligned.rows[i]'s (one per sentence:"
            f" no aligned.restore): {fix}; {call})"
        )
    inputs = "aligned.emissions, aligned.tags" if "tags" in arguments else "aligned.emissions"
    return (
        " (a [CLS], sub-word pieces or a row masked out? call again on the kept tokens moved"
        f" to the front ({inputs}, aligned.mask); aligned.restore(...) puts per-token"
        f" results back: {fix})"
    )


def check_mask_flags(
    not_binary: bool, first_missing: bool, not_left_aligned: bool, hint: str = ""
) -> None:
    """The ValueError of :func:`mask_flags`' flags, read on the host; a layout error ends
    with ``hint``, a caller's fix for it (:func:`left_align_hint`, or ``ChainTemperature``'s
    naming the padding of its tags)."""
    if not_binary:
        raise ValueError("mask must be bool or integer 0/1: it holds other integers")
    if first_missing:
        raise ValueError(
            f"mask[:, 0] must be all True: every sentence needs at least one token{hint}"
        )
    if not_left_aligned:
        raise ValueError(
            f"mask must be left-aligned (True for a prefix of each row, then False){hint}"
        )


def _value_flags(emissions, transitions, start, end, mask) -> Tensor:
    """``[5]`` bool on the device: :func:`mask_flags`' three, a bad emission inside the
    mask, a bad transition / start / end score (NaN or +inf)."""

    def bad(x: Tensor) -> Tensor:
        return torch.isnan(x) | torch.isposinf(x)

    device = emissions.device
    others = [bad(x.to(device)).any() for x in (transitions, start, end)]
    # One pass over the emissions: each token's largest score is NaN or +inf exactly when
    # one of its scores is (amax propagates NaN); only tokens inside the mask count.
    inside = bad(emissions.amax(-1)) & mask.bool()
    return torch.cat([mask_flags(mask), torch.stack([inside.any(), torch.stack(others).any()])])


def _finite_or_zero(x: Tensor) -> Tensor:
    # A shift of -inf (a tag that can never be entered or left, or an impossible step)
    # would give nan; one fused op, since it runs at every step.
    return torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)


def _log_forward(em: Tensor, tr: Tensor, st: Tensor, en: Tensor, mask: Tensor):
    """Log-space forward recursion (log-sum-exp over ``[B, K, K]`` each step): the exact,
    slower fallback for scores too extreme for the rescaled probability-space path.

    Each step is normalised (the scale kept apart) so that values stay small and float32
    keeps its resolution on long chains; returns (normalised log alpha, log Z, log scale),
    with ``log_alpha + log_scale[..., None]`` the unnormalised forward messages. An
    impossible prefix (every path -inf) stays -inf rather than NaN.
    """
    log_alpha = em.new_empty(em.shape)
    log_scale = em.new_empty(em.shape[:2])
    current = st + em[:, 0]
    scale = torch.logsumexp(current, -1)
    current = current - _finite_or_zero(scale)[:, None]
    log_alpha[:, 0] = current
    log_scale[:, 0] = scale
    for t in range(1, em.shape[1]):
        new = torch.logsumexp(current[:, :, None] + tr, 1) + em[:, t]
        step = torch.logsumexp(new, -1)
        valid = mask[:, t]
        current = torch.where(valid[:, None], new - _finite_or_zero(step)[:, None], current)
        scale = scale + torch.where(valid, step, 0.0)
        log_alpha[:, t] = current
        log_scale[:, t] = scale
    return log_alpha, scale + torch.logsumexp(current + en, -1), log_scale


def _log_backward(em: Tensor, tr: Tensor, en: Tensor, mask: Tensor) -> Tensor:
    """Log-space backward recursion, normalised per step; restarts from ``end`` past the end."""
    batch, length, num_tags = em.shape
    log_beta = em.new_empty(em.shape)
    last = en.expand(batch, num_tags)
    current = last
    log_beta[:, length - 1] = current
    for t in range(length - 2, -1, -1):
        new = torch.logsumexp(tr + (em[:, t + 1] + current)[:, None, :], 2)
        new = new - _finite_or_zero(torch.logsumexp(new, -1, keepdim=True))
        current = torch.where(mask[:, t + 1, None], new, last)
        log_beta[:, t] = current
    return log_beta


# Fast path: the emission factors are exponentiated once for the whole batch and each
# step is a [B, K] @ [K, K] product, a multiply and a normalisation. It is exact unless a
# single step spans hundreds of nats (never, for trained HMM/CRF potentials), so the
# recursions report their smallest per-step normaliser; below _tiny (tiny ** (2/3), so
# underflowed terms weigh < K^2 tiny^(1/3), about 1e-96 in float64) the caller falls
# back to the log-space recursions above. The check is a device tensor: a caller either
# reads it (one host synchronisation per call) or collects it in ``flags`` and reads all
# of them once (the CRF trainer does, once per objective evaluation).
def _tiny(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).tiny ** (2 / 3)


def _kept(scores: Tensor, shift: Tensor, dim: int = -1) -> Tensor:
    """Whether ``exp(scores - shift)`` keeps every finite score along ``dim`` at least
    ``tiny`` (-inf, a forbidden choice, is exactly 0 and stays so). A finite score that
    underflowed would be a choice the fast path silently forbids, and a later step can
    make its path the likeliest one (hundreds of nats apart, as a step's totals never
    show)."""
    lowest_finite = scores.nan_to_num(neginf=math.inf).amin(dim)
    return lowest_finite - shift >= math.log(torch.finfo(scores.dtype).tiny)


def _step_major(like: Tensor, batch: int, length: int, size: int) -> Tensor:
    """An empty ``[B, T, size]`` tensor laid out time step by time step, so that each
    step's ``[:, t]`` slice, which the recursions read and write, is contiguous."""
    return like.new_empty(length, batch, size).transpose(0, 1)


def _step_mask(mask: Tensor) -> Tensor:
    """``mask[..., None]`` ``[B, T, 1]``, laid out step by step like the recursions' tensors."""
    batch, length = mask.shape
    return _step_major(mask, batch, length, 1).copy_(mask[..., None])


class _FastState(NamedTuple):
    # F_t(j) = exp(E'_t(j) - shift_t) with E'_0 = em_0 + start, E'_t = em_t + col_shift (t >= 1)
    factors: Tensor  # [B, T, K]
    step_totals: Tensor  # [B, T] normaliser of each forward step


def _fast_forward(em: Tensor, st: Tensor, en: Tensor, mask: Tensor, trans_col, col_shift):
    """Forward pass with pre-exponentiated emissions: ``(forward, state, ok)``, ``ok`` a
    0-dim bool tensor, False if a step underflowed (then the results are not to be used)."""
    batch, length, num_tags = em.shape
    factors = torch.add(em, col_shift, out=_step_major(em, batch, length, num_tags))
    torch.add(em[:, 0], st, out=factors[:, 0])
    shift = _finite_or_zero(factors.amax(-1, keepdim=True))
    kept = _kept(factors, shift.squeeze(-1)) | ~mask
    factors.sub_(shift).exp_()
    shift = shift.squeeze(-1)
    # Every step writes into slices of preallocated outputs: no tensor is made per step.
    probs = _step_major(em, batch, length, num_tags)
    totals = _step_major(em, batch, length, 1)
    weight = em.new_empty(batch, num_tags)
    mask_col = _step_mask(mask)
    torch.sum(factors[:, 0], -1, keepdim=True, out=totals[:, 0])
    torch.div(factors[:, 0], totals[:, 0], out=probs[:, 0])
    for t in range(1, length):
        torch.mm(probs[:, t - 1], trans_col, out=weight).mul_(factors[:, t])
        torch.sum(weight, -1, keepdim=True, out=totals[:, t])
        weight.div_(totals[:, t])
        torch.where(mask_col[:, t], weight, probs[:, t - 1], out=probs[:, t])
    step_totals = totals.squeeze(-1)
    end_shift = _finite_or_zero(en.amax())
    last = probs[:, -1] @ torch.exp(en - end_shift)
    valid_totals = step_totals.masked_fill(~mask, 1.0)
    # Compared, then all(): a batch of no sentences holds no minimum (amin() raises).
    ok = (torch.minimum(valid_totals.amin(1), last) >= _tiny(em.dtype)).all()
    ok = ok & kept.all() & _kept(en, end_shift, dim=0)
    log_scale = (valid_totals.log() + shift * mask).cumsum(1)
    log_partition = log_scale[:, -1] + torch.log(last) + end_shift
    fwd = _Forward(probs, None, log_partition, log_scale, col_shift, trans_col)
    return fwd, _FastState(factors, step_totals), ok


def _fast_backward(state: _FastState, trans_col: Tensor, en: Tensor, mask: Tensor):
    """Normalised backward vectors ``q`` ``[B, T, K]`` and an ``ok`` flag as above.

    ``beta_t(i) ∝ sum_j trans_col[i, j] F_{t+1}(j) beta_{t+1}(j)``: the column shift of
    ``trans_col`` lives in ``F``, so the forward pass's matrix serves both directions.
    """
    factors = state.factors
    batch, length, num_tags = factors.shape
    q_last = torch.exp(en - _finite_or_zero(en.amax()))
    q_last = (q_last / q_last.sum()).expand(batch, num_tags)
    trans_t = trans_col.t()
    qs = _step_major(factors, batch, length, num_tags)
    qs[:, length - 1] = q_last
    totals = _step_major(factors, batch, length, 1).fill_(1.0)
    scaled, weight = factors.new_empty(2, batch, num_tags)
    mask_col = _step_mask(mask)
    for t in range(length - 2, -1, -1):
        torch.mul(factors[:, t + 1], qs[:, t + 1], out=scaled)
        torch.mm(scaled, trans_t, out=weight)
        torch.sum(weight, -1, keepdim=True, out=totals[:, t + 1])
        weight.div_(totals[:, t + 1])
        # Past the end of a sentence the chain restarts from the end scores.
        torch.where(mask_col[:, t + 1], weight, q_last, out=qs[:, t])
    return qs, (totals.masked_fill_(~mask_col, 1.0) >= _tiny(factors.dtype)).all()


def _accept(ok: Tensor, flags: list[Tensor] | None) -> bool:
    """Whether to use a fast result: read ``ok`` now, or defer it into ``flags``."""
    if flags is None:
        return bool(ok)
    flags.append(~ok)
    return True


def _run_forward(em, tr, st, en, mask, flags: list[Tensor] | None = None):
    """Fast forward when it is exact, else the log-space one; returns (forward, fast state)."""
    col_shift = _finite_or_zero(tr.amax(0))
    trans_col = torch.exp(tr - col_shift)
    fwd, state, ok = _fast_forward(em, st, en, mask, trans_col, col_shift)
    ok = ok & _kept(tr, col_shift, dim=0).all()
    if _accept(ok, flags):
        return fwd, state
    return _log_space_forward(em, tr, st, en, mask, fwd), None


def _log_space_forward(em, tr, st, en, mask, fast: _Forward) -> _Forward:
    """The log-space forward pass, in place of a fast one that lost precision."""
    log_alpha, log_z, log_scale = _log_forward(em, tr, st, en, mask)
    return _Forward(None, log_alpha, log_z, log_scale, fast.col_shift, fast.trans_col)


def _checked_forward(em, tr, st, en, mask) -> _Forward:
    """The forward pass, checked by the backward pass too (one more pass, and its check's
    host read).

    A tag that forbidden transitions keep apart from the others (a lineage) can fall
    hundreds of nats behind over several steps, underflow to 0 in the forward vectors and
    be needed again later, while every step's totals stay healthy: the forward pass alone
    cannot see it, but the backward vectors' normaliser does (their product is then 0 where
    the posterior is not).
    """
    return _forward_backward(em, tr, st, en, mask)[0]


class _FastBoth(NamedTuple):
    forward: _Forward
    state: _FastState
    qs: Tensor  # [B, T, K] normalised backward vectors
    joint: Tensor  # [B, T, K] probs_t(k) qs_t(k), the unnormalised unigram marginals
    norm: Tensor  # [B, T, 1] sum_k joint_t(k)


def _forward_backward(em, tr, st, en, mask, flags=None) -> tuple[_Forward, _FastBoth | None]:
    """The one forward-backward core: the fast pair of recursions, or ``None`` beside the
    log-space forward pass where they would lose precision (the caller then runs the
    log-space backward pass).

    A forward pass returned beside ``None`` is always the log-space one: a fast forward
    pass that its backward check rejected has a wrong ``log_partition`` too (the lineage
    it lost underflowed out of it), so no caller may keep any part of it.
    """
    fwd, state = _run_forward(em, tr, st, en, mask, flags)
    if state is None:
        return fwd, None
    qs, ok = _fast_backward(state, fwd.trans_col, en, mask)
    # P(y_t = k) is proportional to alpha_t(k) * beta_t(k); both are stored up to a
    # per-(b, t) constant. The two vectors can be nearly disjoint (their product
    # underflowing) only for extreme scores; then go to log space as well.
    joint = fwd.probs * qs
    norm = joint.sum(-1, keepdim=True)
    ok = ok & (norm.masked_fill(~mask[..., None], 1.0) >= _tiny(em.dtype)).all()
    if _accept(ok, flags):
        return fwd, _FastBoth(fwd, state, qs, joint, norm)
    return _log_space_forward(em, tr, st, en, mask, fwd), None


def _vmapped(tensor: Tensor) -> bool:
    """Whether ``tensor`` is batched by a ``torch.func.vmap``, at any nesting depth."""
    while functorch.is_functorch_wrapped_tensor(tensor):
        if functorch.is_batchedtensor(tensor):
            return True
        tensor = functorch.get_unwrapped(tensor)
    return False


def _compiling() -> bool:
    """Whether torch.compile is tracing (``torch.compiler.is_compiling``, torch ≥ 2.3)."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    return torch._dynamo.is_compiling()


def _vmap_refusal(function: str) -> str:
    return (
        f"{function} does not run under torch.func.vmap: it is batched already, "
        "so stack the sentences along its batch dimension (mask the padding) instead"
    )


def refuse_vmap(function: str, *tensors: Tensor | None) -> None:
    """Refuse by name before the checks' host reads fail with torch's "Cannot access data
    pointer" (or, unchecked, a missing batching rule deep in the recursion). While
    torch.compile traces the call only the outermost wrapper is looked at: dynamo cannot
    trace the unwrapping, and had compiled the unchecked functions whole
    (``fullgraph=True``) before the test."""
    vmapped = functorch.is_batchedtensor if _compiling() else _vmapped
    if any(isinstance(t, Tensor) and vmapped(t) for t in tensors):
        raise RuntimeError(_vmap_refusal(function))


def _entry_checks(function: str, validate_args: object, **tensors: Tensor | None) -> None:
    """What every chain function checks first, even with ``validate_args=False``: no
    vmap, dense tensors (a nested one has no ``.shape``: torch's "NestedTensorImpl doesn't
    support sizes"), and a flag that is True or False."""
    refuse_vmap(function, *tensors.values())
    check_dense_tensors(**tensors)
    check_flag("validate_args", validate_args)


def _prepare(
    function, emissions, transitions, start, end, mask, compute_dtype, validate_args=True,
    hint=None,
):  # fmt: skip
    """The chain's inputs checked (with ``validate_args``; a mask's layout error ends with
    ``hint``, default :func:`left_align_hint`) and cast to the compute dtype."""
    _entry_checks(
        function, validate_args,
        emissions=emissions, transitions=transitions, start=start, end=end, mask=mask,
    )  # fmt: skip
    if validate_args:
        mask = _check_inputs(emissions, transitions, start, end, mask, hint)
    elif mask is None:
        mask = torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
    else:
        mask = mask.to(device=emissions.device, dtype=torch.bool)
    if compute_dtype is not None and compute_dtype not in COMPUTE_FLOATS:
        # float8 and packed float4 are floating too, but torch has no arithmetic for them.
        raise ValueError(
            "compute_dtype must be a floating torch.dtype torch computes in (torch.float64, "
            f"float32, float16 or bfloat16), got {compute_dtype!r}"
        )
    dtype = compute_dtype or default_compute_dtype(emissions.device)
    return (
        emissions.to(dtype),
        transitions.to(device=emissions.device, dtype=dtype),
        start.to(device=emissions.device, dtype=dtype),
        end.to(device=emissions.device, dtype=dtype),
        mask,
    )


def log_partition(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None = None,
    *,
    compute_dtype: torch.dtype | None = None,
    validate_args: bool = True,
    precision_flags: list[Tensor] | None = None,
) -> Tensor:
    """Log normaliser ``log Z`` of each sentence, ``[B]`` (differentiable once).

    Its gradient with respect to ``emissions`` is the unigram marginals. A sentence that
    no tag sequence can score (every path -inf) gets ``log Z = -inf`` and zero gradient.
    That gradient cannot be differentiated again: with ``create_graph=True`` it comes
    back with a graph whose backward raises, so a gradient penalty or a Hessian through
    ``log Z`` fails loudly instead of losing its second-order terms.

    Host synchronisations: one for the argument checks (``validate_args=False`` skips
    them; the caller then vouches for the inputs), two in the forward pass and two in the
    backward pass (per chunk of sentences, as :func:`posterior_marginals` takes them on
    CPU: one chunk for a batch whose ``[B, T, K]`` float64 fits 16 MiB), which decide
    whether the fast rescaled recursion was exact or the log-space one is needed (the
    forward pass runs the fast backward recursion too: a tag
    that forbidden transitions keep apart can underflow over several steps where only the
    backward vectors show it). A training loop that must not wait passes a list as
    ``precision_flags``: the forward pass then runs the forward recursion alone, its check
    and, when ``backward()`` runs, the backward pass's (which covers the several-step
    case) are appended to it as 0-dim bool device tensors (True = the fast path lost
    precision) instead of being read, the fast result is used as it is, and the caller
    reads the flags once after ``backward()`` (say, per objective evaluation) and
    recomputes without ``precision_flags`` if any is True. Where no input requires grad
    (no backward can run: evaluation, ``torch.no_grad``), the forward pass runs the fast
    backward recursion too and appends its check at once, so the flags are complete
    when it returns.

    Example:
        >>> import torch
        >>> K = 3
        >>> em, tr, st, en = torch.zeros(2, 4, K), torch.zeros(K, K), torch.zeros(K), torch.zeros(K)
        >>> z = log_partition(em, tr, st, en)
        >>> torch.allclose(z, torch.full((2,), 4 * torch.log(torch.tensor(3.0))))
        True
    """
    em, tr, st, en, mask = _prepare(
        "log_partition", emissions, transitions, start, end, mask, compute_dtype, validate_args
    )
    # The list travels in a box: torch.func rebuilds list arguments, and the checks would
    # land in its copy.
    flags = None
    if precision_flags is not None:
        backward_follows = torch.is_grad_enabled() and any(
            x.requires_grad for x in (em, tr, st, en)
        )
        flags = _FlagsBox(precision_flags, backward_follows)
    return _LogPartition.apply(em, tr, st, en, mask, flags).to(emissions.dtype)


def posterior_marginals(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None = None,
    *,
    pairwise: bool = True,
    compute_dtype: torch.dtype | None = None,
    validate_args: bool = True,
) -> ChainMarginals:
    """Exact posterior marginals of a linear chain by scaled forward-backward.

    Args:
        emissions: ``[B, T, K]`` emission scores (log potentials); -inf forbids a tag.
        transitions: ``[K, K]``, ``transitions[i, j]`` scores tag ``i`` followed by ``j``.
        start: ``[K]`` scores of the first tag.
        end: ``[K]`` scores of the last tag (at each sentence's own last position).
        mask: ``[B, T]`` bool, left-aligned, ``mask[:, 0]`` all True; ``None`` means all True.
        pairwise: also return the ``[B, T-1, K, K]`` pairwise marginals (the largest output;
            switch off to save memory).
        compute_dtype: dtype of the recursion; default float64 (float32 on MPS).
        validate_args: check the arguments (one host synchronisation); switch off only
            for inputs already checked.

    Host synchronisations: one for the argument checks (``validate_args``), then per
    chunk of sentences (one chunk off CPU) two for the fast forward and backward
    recursions' precision checks (whether they were exact, or the log-space ones are
    needed) and, when pairwise marginals of a float32 or narrower output are computed in
    float64, one for whether a step's factors are too large for their float32 product
    (such steps are redone in float64). On CPU, where a read waits for nothing, a large
    pairwise output also looks up which steps are padding.

    Returns:
        :class:`ChainMarginals` in the dtype and on the device of ``emissions``. An
        impossible sentence (every tag sequence scores -inf) has ``log_partition = -inf``
        and all-zero marginals, so its unigram rows sum to 0 instead of 1.

    Raises:
        ValueError: on shape mismatches, T = 0 or K = 0, NaN or +inf scores, a mask that
            is not left-aligned, or a ``pairwise`` that is not True or False (B = 0 gives
            empty results).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> em = torch.randn(2, 5, 3, generator=g)
        >>> tr, st, en = torch.randn(3, 3, generator=g), torch.zeros(3), torch.zeros(3)
        >>> mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
        >>> out = posterior_marginals(em, tr, st, en, mask)
        >>> out.unigram.shape, out.pairwise.shape
        (torch.Size([2, 5, 3]), torch.Size([2, 4, 3, 3]))
        >>> out.unigram.sum(-1)
        tensor([[1., 1., 1., 1., 1.],
                [1., 1., 0., 0., 0.]])
        >>> torch.allclose(out.pairwise.sum(-1), out.unigram[:, :-1] * mask[:, 1:, None])
        True
    """
    check_flag("pairwise", pairwise)  # "no" is truthy: it had built the pairwise output
    em, tr, st, en, mask = _prepare(
        "posterior_marginals",
        emissions,
        transitions,
        start,
        end,
        mask,
        compute_dtype,
        validate_args,
    )
    out_dtype = emissions.dtype
    batch, length, num_tags = em.shape
    log_z = em.new_empty(batch)
    unigram = emissions.new_empty(batch, length, num_tags)
    pair = None
    if pairwise:
        # Where each 4 KiB page of a large output is faulted in on its own (past the
        # huge-page range), its padding steps are left as the zero pages they are: in a
        # padded batch that saves a fault per page of padding, which outweighs gathering
        # the other steps; elsewhere computing the padding's zeros is cheaper.
        pair = fresh_output(
            batch, length - 1, num_tags, num_tags, dtype=_pair_dtype(out_dtype), device=em.device
        )
        skip_padding = faults_page_by_page(pair)
    # Marginals are outputs, not a graph: the differentiable route to them is
    # log_partition's backward. Rounding can push a float32 marginal a hair past 1,
    # which a calibration metric would reject, hence the clamps.
    with torch.no_grad():
        for rows in _chunks(em):
            parts = _marginal_parts(em[rows], tr, st, en, mask[rows], pairwise)
            log_z[rows] = parts.forward.log_partition
            unigram[rows] = parts.unigram
            if pair is not None:
                _pairwise(parts, pair[rows], mask[rows, 1:] if skip_padding else None)
    unigram.clamp_(0, 1)
    pair_out = None if pair is None else pair.to(out_dtype)
    return ChainMarginals(log_z.to(out_dtype), unigram, pair_out)


# Sentences per chunk of posterior_marginals and of log_partition's backward: a
# [rows, T, K] float64 tensor stays under glibc's largest mmap threshold (32 MiB), so a
# chunk's temporaries reuse memory that the previous chunk freed instead of each being
# mapped, and faulted in, afresh.
_CHUNK_BYTES = 16 << 20


def _chunks(em: Tensor) -> list[slice]:
    """Slices of the batch, each of at most ``_CHUNK_BYTES`` of ``[rows, T, K]`` float64
    on CPU (a GPU's caching allocator reuses memory anyway: one chunk there)."""
    batch, length, num_tags = em.shape
    if em.device.type != "cpu":
        return [slice(0, batch)]
    rows = max(1, _CHUNK_BYTES // (length * num_tags * 8))
    # One chunk at least: a batch of no sentences is one empty chunk.
    return [slice(begin, begin + rows) for begin in range(0, max(batch, 1), rows)]


def _pair_dtype(out_dtype: torch.dtype) -> torch.dtype:
    """The pairwise product's dtype: float64 for float64 outputs, float32 otherwise (the
    product dominates the cost, and float32 halves it; see :func:`_pairwise`)."""
    return torch.float64 if out_dtype == torch.float64 else torch.float32


class ChainMessages(NamedTuple):
    """Forward and backward messages of a linear chain, in log space.

    Attributes:
        log_alpha: ``[B, T, K]``, ``log_alpha[b, t, k]`` = log of the summed
            ``exp(score)`` of all tag prefixes ``y_0..y_t`` with ``y_t = k`` (start,
            emissions up to and including ``t``, transitions between them).
        log_beta: ``[B, T, K]``, the log of the summed ``exp(score)`` of all continuations
            ``y_{t+1}..y_{L-1}`` given ``y_t = k`` (their transitions, emissions and the
            end score; ``end[k]`` at the sentence's last token).
        log_partition: ``[B]``; ``logsumexp_k(log_alpha + log_beta) = log_partition`` at
            every position inside the mask.

    Both message tensors are -inf outside the mask and wherever the sentence is impossible.
    Where the fast rescaled recursion was exact to working precision, an entry far below
    its position's largest (about 700 nats in float64, 85 in float32) may be -inf too: it
    adds nothing that the dtype can hold to any sum of the messages, so log_partition and
    the marginals are unaffected, but its own value is not kept.
    """

    log_alpha: Tensor
    log_beta: Tensor
    log_partition: Tensor


def forward_backward(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None = None,
    *,
    compute_dtype: torch.dtype | None = None,
    validate_args: bool = True,
) -> ChainMessages:
    """Log forward and backward messages, from the same core as :func:`posterior_marginals`.

    For queries that the marginals cannot answer (spans, segments): any event that fixes
    tags over a window ``[t, u]`` has probability
    ``exp(log_alpha[t, y_t] + score(window) + log_beta[u, y_u] - log_partition)``; that sum
    of terms as large as the scores loses the digits that a probability needs at large
    scores (from about 1e8), so products of the normalised marginals
    (:func:`pairwise_rows`) are the exact route there.
    Returned in ``compute_dtype`` (float64 by default), no gradient.

    Host synchronisations: three, one for the argument checks (``validate_args=False``
    skips it) and one for each of the fast forward and backward recursions' precision
    checks (whether they were exact, or the log-space ones are needed; a forward pass
    that needs them leaves no backward check to read).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> em, tr = torch.randn(1, 4, 3, generator=g), torch.randn(3, 3, generator=g)
        >>> msg = forward_backward(em, tr, torch.zeros(3), torch.zeros(3))
        >>> uni = (msg.log_alpha + msg.log_beta - msg.log_partition[:, None, None]).exp()
        >>> torch.allclose(uni.float(), posterior_marginals(em, tr, torch.zeros(3),
        ...                                                 torch.zeros(3)).unigram)
        True
    """
    em, tr, st, en, mask = _prepare(
        "forward_backward", emissions, transitions, start, end, mask, compute_dtype, validate_args
    )
    with torch.no_grad():
        fwd, both = _forward_backward(em, tr, st, en, mask)
        log_z = fwd.log_partition
        if both is not None:
            log_alpha = both.forward.probs.log() + fwd.log_scale[..., None]
            offset = log_z[:, None] - fwd.log_scale - both.norm.squeeze(-1).log()
            log_beta = both.qs.log() + offset[..., None]
        else:
            log_alpha = fwd.log_alpha + fwd.log_scale[..., None]
            log_beta = _log_backward(em, tr, en, mask)
            offset = log_z[:, None] - torch.logsumexp(log_alpha + log_beta, -1)
            log_beta = log_beta + _finite_or_zero(offset)[..., None]
        keep = (mask & torch.isfinite(log_z)[:, None])[..., None]
        # The fast recursions lay their tensors out step by step; messages come back dense.
        return ChainMessages(
            log_alpha.masked_fill(~keep, float("-inf")).contiguous(),
            log_beta.masked_fill(~keep, float("-inf")).contiguous(),
            log_z,
        )


def pairwise_rows(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None = None,
    *,
    rows: tuple[int, ...] | list[int],
    compute_dtype: torch.dtype | None = None,
    validate_args: bool = True,
) -> ChainMarginals:
    """:func:`posterior_marginals` with only the pairwise rows of the tags ``rows``, for
    span queries (:func:`calib_metrics.queries.span_marginals`).

    ``pairwise[b, t, r, j] = P(y_t = rows[r], y_{t+1} = j | x)`` (``[B, T-1, len(rows), K]``,
    0 where ``t + 1`` is outside the mask); ``unigram`` as in :func:`posterior_marginals`.
    Both come from the core's normalised messages in ``compute_dtype`` (float64 by
    default), as exact as :func:`posterior_marginals`' at any score scale: so is a product
    of such factors, where ``forward_backward``'s log messages, each as large as the scores, cancel
    (a span's probability from them had been 0 instead of 1 at scores of 1e30). All three
    outputs come back in ``compute_dtype``, not the dtype of ``emissions``: products of
    them are taken before the caller casts. ``rows`` is a non-empty tuple or list of tag
    indices in ``[0, K)``; with ``validate_args`` (one host synchronisation, as for
    :func:`posterior_marginals`) it and the chain's arguments are checked.

    Host synchronisations: three, the argument checks and the fast recursions' two
    precision checks.

    Raises:
        ValueError: on the chain's errors (see :func:`posterior_marginals`) and on
            ``rows`` that is not a non-empty tuple or list of tag indices in ``[0, K)``.

    Example:
        >>> out = pairwise_rows(torch.zeros(1, 2, 3), torch.zeros(3, 3), torch.zeros(3),
        ...                     torch.zeros(3), rows=(1,))
        >>> out.pairwise.shape, out.pairwise[0, 0, 0].tolist()  # P(y_0 = 1, y_1 = j)
        (torch.Size([1, 1, 1, 3]), [0.1111111111111111, 0.1111111111111111, 0.1111111111111111])
    """
    return _hinted_pairwise_rows(
        emissions, transitions, start, end, mask, rows=rows, hint=None,
        compute_dtype=compute_dtype, validate_args=validate_args,
    )  # fmt: skip


def _hinted_pairwise_rows(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None = None,
    *,
    rows: tuple[int, ...] | list[int],
    hint: str | None,
    compute_dtype: torch.dtype | None = None,
    validate_args: bool = True,
) -> ChainMarginals:
    """:func:`pairwise_rows` whose mask's layout error ends with ``hint``, its caller's own
    fix (:func:`~calib_metrics.queries.span_marginals`': its table is of spans over aligned
    positions, which ``LeftAligned.restore`` does not map back); None:
    :func:`left_align_hint`."""
    em, tr, st, en, mask = _prepare(
        "pairwise_rows", emissions, transitions, start, end, mask, compute_dtype, validate_args,
        hint,
    )  # fmt: skip
    if validate_args:
        rows = _check_rows(rows, em.shape[2])
    with torch.no_grad():
        parts = _marginal_parts(em, tr, st, en, mask, pairwise=True)
        if parts.log_pair is not None:  # the log-space path: these rows only
            pair = _log_pair_rows(parts.log_pair, rows)
        else:  # the fast path's factors: p_t(i) * trans_col[i, j] * nxt_t(j)
            # Row by row with integer indices: a list would be an index tensor copied to
            # the device.
            prev, trans_col = parts.forward.probs[:, :-1], parts.forward.trans_col
            pair = torch.stack(
                [prev[..., row, None] * trans_col[row] * parts.nxt for row in rows], 2
            )
    return ChainMarginals(parts.forward.log_partition, parts.unigram, pair)


def _check_rows(rows: object, num_tags: int) -> tuple[int, ...]:
    """``rows`` as a tuple of Python ints in ``[0, num_tags)``; a ValueError naming it
    otherwise (an index past K had raised IndexError, -1 had been the last row, a bool
    a row of 0 or 1)."""
    if not isinstance(rows, (tuple, list)) or not rows:
        raise ValueError(f"rows must be a non-empty tuple or list of tag indices, got {rows!r}")
    return tuple(as_int(f"rows[{r}]", row, 0, num_tags) for r, row in enumerate(rows))


class _LogPair(NamedTuple):
    """The log-space path's pairwise marginals, not built: ``P(y_t = i, y_{t+1} = j)`` is
    ``exp(left[b, t, i] + tr[i, j] + right[b, t, j])`` normalised over ``(i, j)`` at each
    step, ``right`` -inf where ``t + 1`` lies outside the mask or the sentence is
    impossible (so those steps are 0). Built a block at a time (:func:`_log_pair_blocks`,
    :func:`_log_pair_rows`): the ``[B, T-1, K, K]`` log tensor had taken 13 GB for a
    gradient at B = 256, T = 512, K = 64."""

    left: Tensor  # [B, T-1, K] normalised log forward messages
    tr: Tensor  # [K, K]
    right: Tensor  # [B, T-1, K] emissions plus normalised log backward messages at t + 1


class _Parts(NamedTuple):
    forward: _Forward
    unigram: Tensor  # [B, T, K], 0 outside the mask
    # Fast path: P(y_t = i, y_{t+1} = j) = probs[b, t, i] * trans_col[i, j] * nxt[b, t, j],
    # nxt 0 where t + 1 is outside the mask.
    nxt: Tensor | None
    log_pair: _LogPair | None  # the log-space path's factors


def _marginal_parts(em, tr, st, en, mask, pairwise: bool, flags=None) -> _Parts:
    """Forward-backward in the compute dtype: unigram marginals and pairwise factors."""
    fwd, both = _forward_backward(em, tr, st, en, mask, flags)
    if both is None:
        return _log_parts(em, tr, st, en, mask, pairwise, fwd)
    norm, qs = both.norm, both.qs
    uni = both.joint.mul_(mask[..., None] / norm)  # the joint products are not needed again
    if not pairwise or em.shape[1] == 1:
        return _Parts(fwd, uni, em.new_zeros(em.shape[0], 0, em.shape[2]), None)
    # h_{t+1}(j) = F_{t+1}(j) q_{t+1}(j); the normaliser sum_ij p_t(i) A'_ij h(j)
    # is the forward step total times the unigram normaliser at t + 1.
    outside = ~mask[:, 1:, None]
    total = (both.state.step_totals[:, 1:, None] * norm[:, 1:]).masked_fill_(outside, 1.0)
    # Built in place of the factors, which nothing reads after this.
    nxt = both.state.factors[:, 1:].mul_(qs[:, 1:]).div_(total).masked_fill_(outside, 0.0)
    return _Parts(fwd, uni, nxt, None)


def _log_parts(em, tr, st, en, mask, pairwise: bool, fwd: _Forward) -> _Parts:
    """Marginals from the log-space recursions (the exact fallback); an impossible
    sentence (log Z = -inf) gets zero marginals. ``fwd`` is the log-space forward pass,
    as :func:`_forward_backward` returns it beside ``None``. The pairwise marginals come
    as their ``[B, T-1, K]`` factors (:class:`_LogPair`)."""
    log_beta = _log_backward(em, tr, en, mask)
    possible = torch.isfinite(fwd.log_partition)
    valid = mask[..., None] & possible[:, None, None]
    uni = torch.where(valid, torch.softmax(fwd.log_alpha + log_beta, -1), 0.0)
    pair = None
    if pairwise:
        # Selected, not added: emissions outside the mask are never checked (NaN, +inf).
        right = torch.where(valid[:, 1:], em[:, 1:] + log_beta[:, 1:], -math.inf)
        pair = _LogPair(fwd.log_alpha[:, :-1], tr, right)
    return _Parts(fwd, uni, None, pair)


def _pair_blocks(batch: int, steps: int, num_tags: int) -> list[tuple[slice, slice]]:
    """``(sentences, steps)`` blocks that tile ``[B, T-1]``, each of at most
    ``_PAIR_BLOCK_ELEMENTS`` entries of the ``[B, T-1, K, K]`` pairwise marginals (one step
    at least): the blocks in which the log-space path builds them."""
    per_block = max(1, _PAIR_BLOCK_ELEMENTS // (num_tags * num_tags))  # steps
    span = max(1, min(per_block, steps))
    sentences = max(1, per_block // span)
    return [
        (slice(first, first + sentences), slice(begin, begin + span))
        for first in range(0, batch, sentences)
        for begin in range(0, steps, span)
    ]


def _log_pair_blocks(pair: _LogPair):
    """Each block of :func:`_pair_blocks` with its pairwise marginals: ``(block,
    [sentences, steps, K, K])``, normalised per step as :func:`_blocked_pair_norm`
    normalises rows (the same sums, to the bit)."""
    for block in _pair_blocks(*pair.right.shape):
        log_pair = _log_pair(pair.left[block], pair.tr, pair.right[block])
        yield block, torch.exp(log_pair - _finite_or_zero(_pair_norm(log_pair))[..., None, None])


def _log_pair_rows(pair: _LogPair, rows: tuple[int, ...]) -> Tensor:
    """``[B, T-1, len(rows), K]``: the pairwise marginals of the tags ``rows`` only."""
    left, tr, right = pair
    # Row by row with integer indices: a list would be an index tensor copied to the device.
    log_rows = torch.stack([left[..., row, None] + tr[row] + right for row in rows], 2)
    norm = _blocked_pair_norm(left, tr, right)
    return torch.exp(log_rows - _finite_or_zero(norm)[..., None, None])


def _blocked_pair_norm(left: Tensor, tr: Tensor, right: Tensor) -> Tensor:
    """``logsumexp`` over ``(i, j)`` of ``left[b, t, i] + tr[i, j] + right[b, t, j]``,
    ``[B, T-1]``, a block of :func:`_pair_blocks` at a time: the rows of a few tags need
    not hold the ``[B, T-1, K, K]`` log pairwise tensor (3.9 GB at B = 1000, T = 100,
    K = 40)."""
    norm = right.new_empty(right.shape[:2])
    for block in _pair_blocks(*right.shape):
        norm[block] = _pair_norm(_log_pair(left[block], tr, right[block]))
    return norm


def _weighted_pair_sum(parts: _Parts, weight: Tensor) -> Tensor:
    """``[K, K]``: ``sum_{b, t} weight[b] P_bt(i, j)``, the transitions' gradient of
    ``sum_b weight[b] log Z_b``, without the ``[B, T-1, K, K]`` pairwise marginals."""
    if parts.log_pair is not None:
        tr = parts.log_pair.tr
        total = tr.new_zeros(tr.shape)
        for block, probs in _log_pair_blocks(parts.log_pair):
            total = total + torch.tensordot(weight[block[0]], probs.sum(1), 1)
        return total
    # sum_{b,t} w_b P_bt(i, j) = trans_col[i, j] * sum_{b,t} w_b prev_bt(i) nxt_bt(j)
    prev = parts.forward.probs[:, :-1] * weight[:, None, None]
    flat = prev.reshape(-1, prev.shape[-1]).t() @ parts.nxt.reshape(-1, prev.shape[-1])
    return parts.forward.trans_col * flat


def _log_pair(left: Tensor, tr: Tensor, right: Tensor) -> Tensor:
    """``[B, T-1, K, K]``: ``left[b, t, i] + tr[i, j] + right[b, t, j]``, the unnormalised
    log pairwise marginals."""
    return left[..., None] + tr + right[:, :, None, :]


def _pair_norm(log_pair: Tensor) -> Tensor:
    """``[B, T-1]``: the log of each step's pairwise total, over ``(i, j)``."""
    return torch.logsumexp(log_pair.flatten(-2), -1)


# Rows of the pairwise output built per block: the [rows, K, K] partial product stays in
# cache, so the output is written once instead of written and then re-read and rewritten.
_PAIR_BLOCK_ELEMENTS = 1 << 20


def _written_steps(valid: Tensor | None) -> Tensor | None:
    """The flat indices of the ``valid`` steps to write when some are padding; None for
    every step (no ``valid``, or no padding)."""
    if valid is None or bool(valid.all()):
        return None
    return valid.reshape(-1).nonzero().squeeze(1)


def _dense(x: Tensor, dtype: torch.dtype) -> Tensor:
    """A contiguous copy of ``x`` in ``dtype``, in one pass (the recursions lay their
    tensors out step by step; what leaves this module is laid out sentence by sentence)."""
    return torch.empty(x.shape, dtype=dtype, device=x.device).copy_(x)


def _pairwise(parts: _Parts, out: Tensor, valid: Tensor | None = None) -> Tensor:
    """Fill ``out`` (``[B, T-1, K, K]``, contiguous, float32 or float64) with
    ``P(y_t=i, y_{t+1}=j) = p_t(i) * trans_col[i, j] * nxt_t(j)`` as broadcast products;
    given ``valid`` (``[B, T-1]``: the next token is in the mask) and an ``out`` of zeros,
    only at the valid steps (the others are 0 and are left as they are).

    ``p_t`` (the normalised forward vector) and ``trans_col`` lie in [0, 1]; ``nxt`` carries
    the emission, backward and normalising factors.
    """
    if parts.log_pair is not None:  # every step, padding's zeros too
        for block, probs in _log_pair_blocks(parts.log_pair):
            out[block].copy_(probs).clamp_(0, 1)
        return out
    prev, trans_col, nxt = parts.forward.probs[:, :-1], parts.forward.trans_col, parts.nxt
    batch, steps, num_tags = nxt.shape
    # The [B, T-1, K, K] product dominates the cost, and float32 halves it. It is exact to
    # float32 rounding wherever nxt stays far inside float32 range: an entry whose partial
    # product p * A underflows (< 1e-38) is then below 1e-38 * nxt in value. The rare steps
    # with a huge nxt (very peaked scores) are redone in float64.
    work = out.dtype
    flat_out = out.view(batch * steps, num_tags, num_tags)
    written = _written_steps(valid)
    if written is None:
        flat_prev = _dense(prev, work).view(batch * steps, num_tags, 1)
        flat_nxt = _dense(nxt, work).view(batch * steps, 1, num_tags)
    else:  # the written steps' rows only, in the order of ``written``
        flat_prev = prev[valid].to(work).view(-1, num_tags, 1)
        flat_nxt = nxt[valid].to(work).view(-1, 1, num_tags)
    trans_work = trans_col.to(work)
    rows = max(1, _PAIR_BLOCK_ELEMENTS // (num_tags * num_tags))
    block_out = None if written is None else flat_out.new_empty(rows, num_tags, num_tags)
    for begin in range(0, flat_prev.shape[0], rows):
        block = slice(begin, begin + rows)
        # Into the output, or into a block that stays in cache and is then copied to the
        # written steps' rows.
        target = flat_out[block] if block_out is None else block_out[: flat_prev[block].shape[0]]
        # The outer product first, then the [K, K] factor: its broadcast runs over
        # contiguous K * K rows, which vectorises far better than a broadcast along K.
        torch.mul(flat_prev[block], flat_nxt[block], out=target)
        target.mul_(trans_work)
        # Rounding can push a float32 marginal a hair past 1, which a calibration metric
        # would reject; clamped while the block is in cache rather than in another pass.
        target.clamp_(max=1.0)
        if written is not None:
            flat_out.index_copy_(0, written[block], target)
    # One reduction over everything first; the rows are looked for only if there are any.
    huge = nxt.dtype == torch.float64 and work != torch.float64 and nxt.numel() > 0
    if huge and bool(nxt.max() > 1e20):
        redo = (nxt.amax(-1) > 1e20).nonzero(as_tuple=True)
        exact = prev[redo][..., None] * trans_col * nxt[redo][..., None, :]
        out[redo] = exact.to(work).clamp_(max=1.0)
    return out


class _FlagsBox:
    """The caller's ``precision_flags`` list, passed through ``_LogPartition`` as is, and
    whether a backward pass can follow (an input requires grad), whose check it awaits."""

    def __init__(self, flags: list[Tensor], backward_follows: bool) -> None:
        self.flags, self.backward_follows = flags, backward_follows


class _LogPartition(torch.autograd.Function):
    """log Z whose backward is the expected counts (marginals), not autograd of the loop.

    Exact where differentiating the rescaled recursion would meet 0 * inf, and it keeps
    no graph over the time steps. ``flags`` (a list, or None) defers the fast path's
    precision checks to the caller, as in :func:`_accept`.
    """

    # forward without ctx and setup_context: the form torch.func's transforms need.
    @staticmethod
    def forward(em, tr, st, en, mask, box):
        flags = None if box is None else box.flags
        if flags is None:
            return _checked_forward(em, tr, st, en, mask).log_partition
        if box.backward_follows:  # its own check joins the flags when backward runs
            return _run_forward(em, tr, st, en, mask, flags)[0].log_partition
        # No backward can run, so its check is taken here, deferred as the forward's: the
        # forward check alone had let a lineage 800 nats behind pass, log Z 0 for 800.
        return _forward_backward(em, tr, st, en, mask, flags)[0].log_partition

    @staticmethod
    def setup_context(ctx, inputs, output):
        *tensors, box = inputs
        ctx.save_for_backward(*tensors)
        ctx.flags = None if box is None else box.flags

    # torch.func: grad, vjp and jacrev run the backward above; the rest is refused by name.
    @staticmethod
    def vmap(info, in_dims, *args):
        raise RuntimeError(_vmap_refusal("log_partition"))

    @staticmethod
    def jvp(ctx, *tangents):
        raise RuntimeError(
            "log_partition has no forward-mode derivative (torch.func.jvp, jacfwd, hessian): "
            "it is differentiable once, in reverse mode (backward, torch.func.grad, vjp, jacrev)"
        )

    @staticmethod
    def backward(ctx, grad):
        with torch.no_grad():
            grads = _LogPartition._gradients(ctx, grad)
        if not torch.is_grad_enabled():
            return grads
        # create_graph=True: the caller will differentiate the gradient. The marginals come
        # from the recursion outside autograd, so their own derivatives are not there;
        # once_differentiable refused that only when the incoming gradient required grad,
        # and a gradient penalty (grad of lz.sum()) then lost its second-order terms
        # silently. These gradients pass through and refuse to be differentiated; they hang
        # off the inputs, so every second-order route (hessian, hvp, grad of a gradient)
        # reaches the refusal: a detached leaf had made torch's hessian silently zero.
        inputs = tuple(x for x in ctx.saved_tensors[:4] if x.requires_grad)
        return tuple(None if g is None else _FirstOrderOnly.apply(g, *inputs) for g in grads)

    @staticmethod
    def _gradients(ctx, grad):
        """The marginals weighted by ``grad``, a chunk of sentences at a time as
        :func:`posterior_marginals` takes them (:func:`_chunks`). Out of place: under
        ``torch.func.jacrev`` ``grad`` is batched, and cannot be written into a buffer."""
        em, tr, st, en, mask = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_em, grad_tr, grad_st, grad_en = [], 0, 0, 0
        for rows in _chunks(em):
            parts = _marginal_parts(
                em[rows], tr, st, en, mask[rows], pairwise=needs[1], flags=ctx.flags
            )
            weight = grad[rows]
            weighted = parts.unigram * weight[:, None, None]
            last_index = (mask[rows].sum(1) - 1)[:, None, None].expand(-1, 1, em.shape[2])
            grad_em.append(weighted)
            grad_st = grad_st + weighted[:, 0].sum(0)
            grad_en = grad_en + weighted.gather(1, last_index).sum((0, 1))
            if needs[1]:
                grad_tr = grad_tr + _weighted_pair_sum(parts, weight)
        grad_em = grad_em[0] if len(grad_em) == 1 else torch.cat(grad_em)
        return grad_em, grad_tr if needs[1] else None, grad_st, grad_en, None, None


class _FirstOrderOnly(torch.autograd.Function):
    """A first derivative that refuses to be differentiated again (the derivative of the
    marginals, a covariance of tag counts, is not computed)."""

    generate_vmap_rule = True  # a copy: torch.func.jacrev vmaps it over the cotangents

    @staticmethod
    def forward(gradient, *inputs):
        # ``inputs`` only connect the graph to the tensors log Z was taken of.
        return gradient.clone()

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, _):
        raise RuntimeError(
            "log_partition is differentiable once: its gradient (the marginals) comes from "
            "the forward-backward recursion outside autograd, so it has no derivative of its "
            "own (a gradient penalty or a Hessian through log Z needs an autograd "
            "logsumexp recursion)"
        )


@torch.no_grad()
def viterbi(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None = None,
    *,
    compute_dtype: torch.dtype | None = None,
    validate_args: bool = True,
) -> tuple[Tensor, Tensor]:
    """Highest-scoring tag sequence of each sentence (max-product dynamic programme).

    Returns:
        ``(best_score [B], tags [B, T])``: the score in the dtype of ``emissions``, tags as
        ``torch.long``, 0 outside the mask. Ties go to the lowest tag index at each step, as
        pytorch-crf's decode breaks them (the path need not be the lexically first of
        several best ones). An impossible sentence (every path -inf) gets
        ``best_score = -inf``; its tags mean nothing.
        The argument checks are the only host synchronisation (``validate_args``). No
        gradient: :func:`sequence_score` of the tags is the differentiable score.

    Example:
        >>> import torch
        >>> em = torch.tensor([[[2.0, 0.0], [0.0, 1.0], [0.0, 3.0]]])
        >>> tr = torch.tensor([[0.0, -5.0], [-5.0, 0.0]])
        >>> score, tags = viterbi(em, tr, torch.zeros(2), torch.zeros(2))
        >>> tags, score
        (tensor([[1, 1, 1]]), tensor([4.]))
        >>> viterbi(em, tr, torch.zeros(2), torch.zeros(2), torch.tensor([[True, True, False]]))[1]
        tensor([[0, 0, 0]])
    """
    em, tr, st, en, mask = _prepare(
        "viterbi", emissions, transitions, start, end, mask, compute_dtype, validate_args
    )
    best = _max_product(em, tr, st, mask)
    best_score, tags = _backtrack(best, tr, en, mask)
    return best_score.to(emissions.dtype), tags


def _max_product(em: Tensor, tr: Tensor, st: Tensor, mask: Tensor) -> Tensor:
    """``[B, T, K]``: the best score of any tag prefix that ends in tag ``k`` at ``t``
    (carried unchanged past the end of each sentence's mask).

    Each step is one broadcast sum into a reused ``[B, K, K]`` buffer and one ``amax``
    over its outer axis, a reduction that vectorises along the contiguous axis; no
    backpointers are kept (:func:`_backtrack` recovers the few it needs).
    """
    batch, length, num_tags = em.shape
    best = _step_major(em, batch, length, num_tags)
    torch.add(st, em[:, 0], out=best[:, 0])
    candidates = em.new_empty(batch, num_tags, num_tags)
    step = em.new_empty(batch, num_tags)
    mask_col = _step_mask(mask)
    for t in range(1, length):
        torch.add(best[:, t - 1, :, None], tr, out=candidates)
        torch.amax(candidates, 1, out=step).add_(em[:, t])
        torch.where(mask_col[:, t], step, best[:, t - 1], out=best[:, t])
    return best


def _backtrack(best: Tensor, tr: Tensor, en: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """``(best_score [B], tags [B, T])`` from :func:`_max_product`'s scores.

    The backpointer of the chosen tag ``j`` at ``t`` is ``argmax_i best[t-1, i] + tr[i, j]``,
    recomputed from the same sums the forward pass maximised, so it is the forward pass's
    own choice (ties to the lowest index): ``O(B K)`` per step instead of storing
    ``[B, T, K]`` backpointers.
    """
    batch, length, _ = best.shape
    best_score, current = (best[:, -1] + en).max(-1)
    into = tr.t()  # into[j] = the scores of every tag followed by j
    tags = torch.zeros(batch, length, dtype=torch.long, device=best.device)
    for t in range(length - 1, 0, -1):
        # Before a sentence's last position is reached, current stays its final tag.
        valid = mask[:, t]
        tags[:, t] = torch.where(valid, current, 0)
        previous = (best[:, t - 1] + into[current]).argmax(-1)
        current = torch.where(valid, previous, current)
    tags[:, 0] = current
    return best_score, tags


@torch.no_grad()
def sample(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None = None,
    *,
    n_samples: int,
    generator: torch.Generator | None = None,
    compute_dtype: torch.dtype | None = None,
    validate_args: bool = True,
) -> Tensor:
    """Exact samples from ``P(y | x)`` by forward filtering, backward sampling.

    The last tag is drawn from ``P(y_{L-1} | x)``, then each earlier tag from
    ``P(y_t | y_{t+1}, x) ∝ alpha_t(y_t) exp(transitions[y_t, y_{t+1}])``, vectorised over
    samples and sentences (by inverse-CDF lookup of one uniform per tag).

    Returns:
        ``[S, B, T]`` long tags, 0 outside the mask (scores that require grad are read
        without building a graph).

    Raises:
        ValueError: on bad arguments (as :func:`posterior_marginals`), ``n_samples`` not a
            positive integer (an int, a NumPy integer or a one-element integer tensor), or
            an impossible sentence (every path -inf: nothing to sample).
            With ``validate_args=False`` none of these is checked and the call makes no
            host synchronisation beyond the precision checks of the fast forward and
            backward recursions (two).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> em = torch.tensor([[[5.0, -5.0], [0.0, 0.0]]])
        >>> tr = torch.tensor([[9.0, -9.0], [-9.0, 9.0]])
        >>> y = sample(em, tr, torch.zeros(2), torch.zeros(2), n_samples=4, generator=g)
        >>> y.shape, y.tolist()
        (torch.Size([4, 1, 2]), [[[0, 0]], [[0, 0]], [[0, 0]], [[0, 0]]])
    """
    if validate_args:
        # A NumPy or tensor integer too; at most MOST_SAMPLES (torch's own message for
        # 2**63 was a C++ stack dump).
        n_samples = as_int("n_samples", n_samples, 1, MOST_SAMPLES)
        check_generator(generator, emissions.device if isinstance(emissions, Tensor) else None)
    em, tr, st, en, mask = _prepare(
        "sample", emissions, transitions, start, end, mask, compute_dtype, validate_args
    )
    batch, length, _ = em.shape
    fwd = _checked_forward(em, tr, st, en, mask)
    if validate_args and not bool(torch.isfinite(fwd.log_partition).all()):
        impossible = torch.isinf(fwd.log_partition).nonzero().flatten().tolist()
        raise ValueError(
            f"sentences {impossible} are impossible (every tag sequence scores -inf): "
            "there is no posterior to sample from"
        )
    last = mask.sum(1) - 1  # [B] index of each sentence's last tag
    end_weight = torch.exp(en - _finite_or_zero(en.amax()))
    # Uniforms drawn in one call keep the result independent of the device's kernel order.
    uniforms = torch.rand(
        length, n_samples, batch, generator=generator, device=em.device, dtype=em.dtype
    )
    tags = torch.zeros(n_samples, batch, length, dtype=torch.long, device=em.device)
    current = torch.zeros(n_samples, batch, dtype=torch.long, device=em.device)
    for t in range(length - 1, -1, -1):
        is_last = (last == t)[None, :, None]
        if fwd.probs is not None:
            # Column y_{t+1} of exp(transitions); its column shift cancels when normalised.
            to_next = fwd.trans_col.t()[current]  # [S, B, K]
            weight = fwd.probs[:, t] * torch.where(is_last, end_weight, to_next)
        else:
            log_weight = fwd.log_alpha[:, t] + torch.where(is_last, en, tr.t()[current])
            weight = torch.exp(log_weight - _finite_or_zero(log_weight.amax(-1, keepdim=True)))
        cdf = weight.cumsum(-1)
        # The first tag whose cdf exceeds u * total: a uniform of exactly 0 (not rare in
        # low precision) then skips the flat steps of zero-weight tags instead of landing
        # on the first of them. u * total can round up to the total (and a uniform can be
        # 1 where an accelerator rounds it to a narrow dtype): the last tag of positive
        # weight is as far as a draw goes.
        draw = torch.searchsorted(cdf, uniforms[t][..., None] * cdf[..., -1:], right=True)
        draw = torch.minimum(draw.squeeze(-1), last_positive(weight))
        valid = mask[:, t][None, :]
        current = torch.where(valid, draw, current)
        tags[:, :, t] = torch.where(valid, draw, 0)
    return tags


def last_positive(weights: Tensor) -> Tensor:
    """Index of the last positive entry along the last dim (0 if there is none), ``Long``.

    The furthest an inverse-CDF draw over ``weights`` may go: past it every weight is 0,
    whatever the rounding of the cumulative sums (a parallel scan need not repeat the
    total bit for bit over trailing zeros).

    Example:
        >>> last_positive(torch.tensor([[0.5, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
        tensor([2, 0])
    """
    index = torch.arange(weights.shape[-1], device=weights.device)
    return torch.where(weights > 0, index, 0).amax(-1)


def sequence_score(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    tags: Tensor,
    mask: Tensor | None = None,
    *,
    validate_args: bool = True,
) -> Tensor:
    """Score ``start + emissions + transitions + end`` of given tag sequences, ``[B]``.

    ``score - log_partition`` is the log-likelihood pytorch-crf's ``CRF.forward`` returns.

    Example:
        >>> import torch
        >>> em = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
        >>> tr = torch.tensor([[0.0, 0.5], [0.0, 0.0]])
        >>> sequence_score(em, tr, torch.zeros(2), torch.zeros(2), torch.tensor([[0, 1]]))
        tensor([3.5000])
    """
    _entry_checks(
        "sequence_score", validate_args,
        emissions=emissions, transitions=transitions, start=start, end=end, tags=tags, mask=mask,
    )  # fmt: skip
    if validate_args:
        mask_given = mask is not None
        # The tags move with the emissions: aligned alone, they would score other tokens.
        hint = left_align_hint("emissions, tags, mask", _ALIGNED_SCORE)
        mask = _check_inputs(emissions, transitions, start, end, mask, hint)
        tags = _check_tags(tags, mask, emissions.shape[2], mask_given)
    elif mask is None:
        mask = torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
    else:
        mask = mask.bool()
    # Outside the mask, tags may be anything (an ignore index) and scores -inf: gather
    # tag 0 there, and zero those terms by selection (0 * -inf would be NaN).
    tags = tags.long().masked_fill(~mask, 0)
    emit = emissions.gather(2, tags[..., None]).squeeze(-1)
    score = start[tags[:, 0]] + emit.masked_fill(~mask, 0).sum(1)
    if tags.shape[1] > 1:
        steps = transitions[tags[:, :-1], tags[:, 1:]]
        score = score + steps.masked_fill(~mask[:, 1:], 0).sum(1)
    last_tag = tags.gather(1, (mask.sum(1) - 1)[:, None]).squeeze(1)
    return score + end[last_tag]


_ALIGNED_SCORE = (
    "sequence_score(aligned.emissions, transitions, start, end, aligned.tags, aligned.mask)"
)


def _check_tags(tags: Tensor, mask: Tensor, num_tags: int, mask_given: bool) -> Tensor:
    """``tags`` as int64, in range where ``mask`` is True (one host read)."""
    if not isinstance(tags, Tensor) or tuple(tags.shape) != tuple(mask.shape):
        got = tuple(tags.shape) if isinstance(tags, Tensor) else type(tags).__name__
        raise ValueError(f"tags must have shape [B, T] = {tuple(mask.shape)}, got {got}")
    check_not_meta(tags, "tags")
    tags = as_indices(tags, "tags")
    check_tag_range(tags, mask, num_tags, mask_given)
    return tags


def tags_outside(tags: Tensor, mask: Tensor, num_tags: int) -> Tensor:
    """``[B, T]`` bool on the device: gold ``tags`` outside ``[0, num_tags)`` where ``mask``
    (bool) is True.

    Example:
        >>> tags_outside(torch.tensor([[1, -100]]), torch.tensor([[True, True]]), 2).tolist()
        [[False, True]]
    """
    return ((tags < 0) | (tags >= num_tags)) & mask


def check_tag_range(
    tags: Tensor, mask: Tensor, num_tags: int, mask_given: bool, outside: bool | None = None
) -> None:
    """Refuse gold ``tags`` (int64) outside ``[0, num_tags)`` where ``mask`` (bool) is True,
    naming the first such id, padding's first (a negative id, HuggingFace's -100) before
    any other, with the mask that drops it (:func:`padded_tags_hint`; ``mask_given``: the
    caller's mask is kept in it). ``outside``: the batch's :func:`tags_outside` flag, read
    with its other checks; ``None``: read here (one host read). The ids are looked up only
    to tell them.

    Example:
        >>> try:
        ...     check_tag_range(torch.tensor([[1, -100]]), torch.tensor([[True, True]]), 2, False)
        ... except ValueError as error:
        ...     print(error)
        tags must lie in [0, 2) where mask is True, got -100 (padding? pass mask=(tags != -100))
    """
    if outside is False:
        return
    bad = tags_outside(tags, mask, num_tags)
    if outside is None and not bool(bad.any()):
        return
    padding = bad & (tags < 0)
    value = int(tags[padding if bool(padding.any()) else bad][0])
    raise ValueError(
        f"tags must lie in [0, {num_tags}) where mask is True, got {value}"
        f"{padded_tags_hint(value, mask_given)}"
    )


def padded_tags_hint(value: int, mask_given: bool = False) -> str:
    """The end of a message for gold tags holding ``value`` where the mask is True: for a
    negative id (padding, HuggingFace's -100), the mask that drops it, the caller's own
    kept (``mask_given``); nothing for an id ``>= 0``, which is no padding.

    Example:
        >>> padded_tags_hint(-100), padded_tags_hint(5)
        (' (padding? pass mask=(tags != -100))', '')
        >>> padded_tags_hint(-1, mask_given=True)
        ' (padding? pass mask=mask & (tags != -1))'
    """
    if value >= 0:
        return ""
    return f" (padding? pass mask={'mask & ' * mask_given}(tags != {value}))"
