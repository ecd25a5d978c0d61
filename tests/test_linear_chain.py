"""Tests for the linear-chain core: brute force, autograd, pytorch-crf, sampling, precision."""

from __future__ import annotations

import collections
import itertools
import math
import re

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torchcrf import CRF

from calib_metrics.models import linear_chain
from calib_metrics.models.linear_chain import (
    ChainMarginals,
    forward_backward,
    log_partition,
    pairwise_rows,
    posterior_marginals,
    sample,
    sequence_score,
    viterbi,
)

F64 = torch.float64


def _potentials(batch, length, num_tags, *, scale=1.0, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return tuple(
        (torch.randn(*shape, generator=g, dtype=F64) * scale).to(dtype)
        for shape in ((batch, length, num_tags), (num_tags, num_tags), (num_tags,), (num_tags,))
    )


def _ragged_mask(lengths, length):
    return torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]


def _brute_force(em, tr, st, en, length):
    """log Z, unigram, pairwise, best path and best score of one sentence by enumeration."""
    num_tags = em.shape[-1]
    seqs = torch.tensor(list(itertools.product(range(num_tags), repeat=length)))
    scores = st[seqs[:, 0]] + em[torch.arange(length), seqs].sum(1) + en[seqs[:, -1]]
    if length > 1:
        scores = scores + tr[seqs[:, :-1], seqs[:, 1:]].sum(1)
    log_z = torch.logsumexp(scores, 0)
    prob = torch.exp(scores - log_z)
    uni = torch.zeros(length, num_tags, dtype=F64)
    pair = torch.zeros(max(length - 1, 0), num_tags, num_tags, dtype=F64)
    for t in range(length):
        uni[t].index_add_(0, seqs[:, t], prob)
    for t in range(length - 1):
        pair[t].view(-1).index_add_(0, seqs[:, t] * num_tags + seqs[:, t + 1], prob)
    best = int(scores.argmax())
    return log_z, uni, pair, seqs[best], scores[best]


CASES = [
    # (lengths in the batch, T, K)
    ([1], 1, 3),
    ([2, 2], 2, 4),
    ([5], 5, 3),
    ([5, 2, 1, 4], 5, 3),
    ([1, 2], 2, 4),
    ([3, 5, 5], 5, 4),
]


@pytest.mark.parametrize(("lengths", "length", "num_tags"), CASES)
def test_matches_brute_force(lengths, length, num_tags):
    em, tr, st, en = _potentials(len(lengths), length, num_tags, scale=1.5, seed=len(lengths))
    mask = _ragged_mask(lengths, length)
    out = posterior_marginals(em, tr, st, en, mask)
    assert isinstance(out, ChainMarginals)
    assert out.unigram.shape == (len(lengths), length, num_tags)
    assert out.pairwise.shape == (len(lengths), length - 1, num_tags, num_tags)
    best_score, best_tags = viterbi(em, tr, st, en, mask)
    for b, n in enumerate(lengths):
        log_z, uni, pair, path, path_score = _brute_force(em[b, :n], tr, st, en, n)
        torch.testing.assert_close(out.log_partition[b], log_z)
        torch.testing.assert_close(out.unigram[b, :n], uni)
        torch.testing.assert_close(out.pairwise[b, : n - 1], pair)
        # Outside the mask everything is exactly zero.
        assert not out.unigram[b, n:].any()
        assert not out.pairwise[b, max(n - 1, 0) :].any()
        assert best_tags[b, :n].tolist() == path.tolist()
        assert not best_tags[b, n:].any()
        torch.testing.assert_close(best_score[b], path_score)
    torch.testing.assert_close(log_partition(em, tr, st, en, mask), out.log_partition)


def test_forbidden_transitions_give_zero_probability():
    # -inf scores (hard constraints, as in BIO tagging) must not produce nan.
    em, tr, st, en = _potentials(3, 5, 4, seed=3)
    tr = tr.clone()
    tr[0, 1] = tr[2, :] = -math.inf
    tr[2, 2] = 0.0
    st = st.clone()
    st[3] = -math.inf
    mask = _ragged_mask([5, 3, 1], 5)
    out = posterior_marginals(em, tr, st, en, mask)
    assert torch.isfinite(out.unigram).all() and torch.isfinite(out.pairwise).all()
    for b, n in enumerate([5, 3, 1]):
        log_z, uni, pair, path, _ = _brute_force(em[b, :n], tr, st, en, n)
        torch.testing.assert_close(out.log_partition[b], log_z)
        torch.testing.assert_close(out.unigram[b, :n], uni)
        torch.testing.assert_close(out.pairwise[b, : n - 1], pair)
        assert viterbi(em, tr, st, en, mask)[1][b, :n].tolist() == path.tolist()
    assert not out.pairwise[..., 0, 1].any()
    assert not out.unigram[:, 0, 3].any()


def test_unigram_is_gradient_of_log_partition():
    em, tr, st, en = _potentials(4, 7, 5, scale=2.0, seed=5)
    mask = _ragged_mask([7, 3, 1, 6], 7)
    em = em.requires_grad_()
    (grad,) = torch.autograd.grad(log_partition(em, tr, st, en, mask).sum(), em)
    out = posterior_marginals(em.detach(), tr, st, en, mask)
    torch.testing.assert_close(out.unigram, grad)
    # The pairwise marginals are the gradient with respect to each step's transition scores.
    trans_steps = tr.expand(4, 6, 5, 5).clone().requires_grad_()
    em_fold = em.detach().clone()
    log_z = _log_z_with_step_transitions(em_fold, trans_steps, st, en, mask)
    (pair_grad,) = torch.autograd.grad(log_z.sum(), trans_steps)
    torch.testing.assert_close(out.pairwise, pair_grad)


def _log_z_with_step_transitions(em, trans_steps, st, en, mask):
    """Plain log-space forward with a separate transition matrix per step (reference)."""
    alpha = st + em[:, 0]
    for t in range(1, em.shape[1]):
        nxt = torch.logsumexp(alpha[:, :, None] + trans_steps[:, t - 1], 1) + em[:, t]
        alpha = torch.where(mask[:, t, None], nxt, alpha)
    return torch.logsumexp(alpha + en, 1)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_pytorch_crf_log_likelihood_is_score_minus_log_z(dtype):
    em, tr, st, en = _potentials(6, 9, 5, scale=2.0, seed=7, dtype=dtype)
    mask = _ragged_mask([9, 1, 4, 9, 2, 7], 9)
    tags = torch.randint(0, 5, (6, 9), generator=torch.Generator().manual_seed(1))
    crf = CRF(5, batch_first=True).to(dtype)
    with torch.no_grad():
        crf.transitions.copy_(tr)
        crf.start_transitions.copy_(st)
        crf.end_transitions.copy_(en)
        expected = crf(em, tags, mask, reduction="none")
    out = posterior_marginals(em, tr, st, en, mask)
    assert out.log_partition.dtype == dtype and out.unigram.dtype == dtype
    ours = sequence_score(em, tr, st, en, tags, mask) - out.log_partition
    torch.testing.assert_close(ours, expected)
    # Autograd of pytorch-crf's log Z gives the same unigram marginals.
    em_grad = em.clone().requires_grad_()
    log_z = crf._compute_normalizer(em_grad.transpose(0, 1), mask.transpose(0, 1))
    (grad,) = torch.autograd.grad(log_z.sum(), em_grad)
    torch.testing.assert_close(out.unigram, grad)
    # pytorch-crf's Viterbi agrees with ours.
    best = viterbi(em, tr, st, en, mask)[1]
    decoded = crf.decode(em, mask)
    assert [best[b, : len(d)].tolist() for b, d in enumerate(decoded)] == decoded


def test_samples_converge_to_exact_marginals():
    lengths = [6, 3, 1]
    em, tr, st, en = _potentials(3, 6, 4, scale=1.0, seed=11)
    mask = _ragged_mask(lengths, 6)
    n = 20_000
    draws = sample(em, tr, st, en, mask, n_samples=n, generator=torch.Generator().manual_seed(0))
    assert draws.shape == (n, 3, 6) and draws.dtype == torch.long
    assert not draws[:, ~mask].any()
    out = posterior_marginals(em, tr, st, en, mask)
    freq = torch.nn.functional.one_hot(draws, 4).to(F64).mean(0) * mask[..., None]
    pair_codes = draws[..., :-1] * 4 + draws[..., 1:]
    pair_freq = torch.nn.functional.one_hot(pair_codes, 16).to(F64).mean(0).view(3, 5, 4, 4)
    pair_freq = pair_freq * mask[:, 1:, None, None]
    for exact, est in ((out.unigram, freq), (out.pairwise, pair_freq)):
        # Four binomial standard errors, floored so near-0 and near-1 cells are not too strict.
        tol = 4 * torch.sqrt(exact * (1 - exact) / n).clamp_min(1e-3)
        assert ((est - exact).abs() <= tol).all()
    # Whole sequences: the empirical frequency of each full tag path of the length-3 sentence.
    codes = (draws[:, 1, :3] * torch.tensor([16, 4, 1])).sum(-1)
    counts = torch.bincount(codes, minlength=64).to(F64) / n
    seqs = torch.tensor(list(itertools.product(range(4), repeat=3)))
    scores = torch.stack([sequence_score(em[1:2, :3], tr, st, en, s[None])[0] for s in seqs])
    probs = torch.softmax(scores, 0)
    assert ((counts - probs).abs() <= 4 * torch.sqrt(probs * (1 - probs) / n) + 1e-3).all()


def test_sampling_is_reproducible_with_generator():
    em, tr, st, en = _potentials(2, 4, 3, seed=2)
    first = sample(em, tr, st, en, n_samples=5, generator=torch.Generator().manual_seed(3))
    again = sample(em, tr, st, en, n_samples=5, generator=torch.Generator().manual_seed(3))
    assert torch.equal(first, again)


@pytest.mark.parametrize(
    ("dtype", "seed", "n_samples"), [(torch.float32, 2313, 4096), (torch.bfloat16, 0, 100_000)]
)
def test_sample_never_draws_a_tag_of_probability_zero(dtype, seed, n_samples):
    """A uniform of exactly 0 (2^-24 a draw in float32, far likelier in bfloat16) had drawn
    tag 0 though its weight is 0: the search took the first index whose cdf reached 0."""
    em = torch.tensor([[[-math.inf, 0.0]]])
    zeros = torch.zeros(2)
    g = torch.Generator().manual_seed(seed)
    y = sample(em, torch.zeros(2, 2), zeros, zeros, n_samples=n_samples, generator=g,
               compute_dtype=dtype)  # fmt: skip
    assert not (y == 0).any()


def test_bfloat16_samples_of_a_bio_chain_never_hold_a_forbidden_transition():
    # 527 of 200,000 sampled sequences had held an O -> I, forbidden by tr[O, I] = -inf.
    o, i = 0, 2
    em, tr, st, en = _potentials(1, 4, 3, seed=5)
    tr[o, i] = -math.inf
    g = torch.Generator().manual_seed(0)
    y = sample(em, tr, st, en, n_samples=50_000, generator=g, compute_dtype=torch.bfloat16)
    assert not ((y[..., :-1] == o) & (y[..., 1:] == i)).any()


def test_a_uniform_that_rounds_up_to_the_total_draws_the_last_possible_tag(monkeypatch):
    # u * total can round up to the total (a uniform narrowed to bfloat16 on an
    # accelerator can even be 1): the draw stops at the last tag of positive weight, here
    # tag 1, not past it at the forbidden tag 2.
    def ones(*size, generator=None, device=None, dtype=None):
        return torch.ones(*size, device=device, dtype=dtype)

    monkeypatch.setattr(torch, "rand", ones)
    em = torch.tensor([[[0.0, 0.0, -math.inf], [0.0, 1.0, -math.inf]]])
    y = sample(em, torch.zeros(3, 3), torch.zeros(3), torch.zeros(3), n_samples=3)
    assert y.tolist() == [[[1, 1]]] * 3


def _log_space_reference(em, tr, st, en):
    """Unmasked float64 log-space forward-backward, for long chains."""
    length = em.shape[1]
    alpha = [st + em[:, 0]]
    for t in range(1, length):
        alpha.append(torch.logsumexp(alpha[-1][:, :, None] + tr, 1) + em[:, t])
    beta = [en.expand_as(alpha[0])]
    for t in range(length - 1, 0, -1):
        beta.append(torch.logsumexp(tr + (em[:, t] + beta[-1])[:, None, :], 2))
    beta = beta[::-1]
    log_z = torch.logsumexp(alpha[-1] + en, 1)
    uni = torch.exp(torch.stack(alpha, 1) + torch.stack(beta, 1) - log_z[:, None, None])
    return log_z, uni


def test_long_float32_chain_with_large_scores_is_accurate():
    em, tr, st, en = _potentials(2, 2000, 6, scale=30.0, seed=13)
    log_z64, uni64 = _log_space_reference(em, tr, st, en)
    out64 = posterior_marginals(em, tr, st, en, pairwise=False)
    torch.testing.assert_close(out64.log_partition, log_z64, rtol=1e-12, atol=1e-8)
    torch.testing.assert_close(out64.unigram, uni64, rtol=0, atol=1e-7)
    em32, tr32, st32, en32 = (x.float() for x in (em, tr, st, en))
    out32 = posterior_marginals(em32, tr32, st32, en32)
    assert out32.unigram.dtype == torch.float32 and out32.pairwise.dtype == torch.float32
    assert (out32.unigram.double() - uni64).abs().max() < 2e-3
    assert torch.isfinite(out32.pairwise).all()
    torch.testing.assert_close(out32.pairwise.sum(-1), out32.unigram[:, :-1], atol=1e-5, rtol=0)
    # Even a float32 recursion (used on MPS) stays within tolerance thanks to the rescaling.
    out_f32 = posterior_marginals(em32, tr32, st32, en32, compute_dtype=torch.float32)
    assert (out_f32.unigram.double() - uni64).abs().max() < 2e-3


def test_pairwise_float32_fallback_for_tiny_normalisers():
    # Scores so peaked that the pairwise normaliser leaves float32 range: the float64 path
    # must take over and still match the float64 answer.
    em, tr, st, en = _potentials(3, 6, 4, scale=60.0, seed=17)
    ref = posterior_marginals(em, tr, st, en)
    out = posterior_marginals(em.float(), tr.float(), st.float(), en.float())
    torch.testing.assert_close(out.pairwise.double(), ref.pairwise, atol=1e-6, rtol=0)
    torch.testing.assert_close(out.pairwise.sum((-1, -2)), torch.ones(3, 5), atol=1e-5, rtol=0)
    # Moderate scores take the float32 fast path everywhere; it agrees to float32 rounding.
    em, tr, st, en = _potentials(5, 8, 6, scale=3.0, seed=18)
    mask = _ragged_mask([8, 1, 5, 2, 7], 8)
    ref = posterior_marginals(em, tr, st, en, mask)
    out = posterior_marginals(em.float(), tr.float(), st.float(), en.float(), mask)
    torch.testing.assert_close(out.pairwise.double(), ref.pairwise, atol=1e-6, rtol=0)
    half = posterior_marginals(em.half(), tr.half(), st.half(), en.half(), mask)
    assert half.pairwise.dtype == torch.float16 and half.unigram.dtype == torch.float16
    torch.testing.assert_close(half.unigram.sum(-1), mask.half(), atol=2e-3, rtol=0)


def test_pairwise_can_be_skipped_and_length_one_has_empty_pairwise():
    em, tr, st, en = _potentials(2, 1, 3, seed=19)
    out = posterior_marginals(em, tr, st, en)
    assert out.pairwise.shape == (2, 0, 3, 3)
    assert posterior_marginals(em, tr, st, en, pairwise=False).pairwise is None


def test_integer_mask_is_accepted():
    em, tr, st, en = _potentials(2, 3, 3, seed=23)
    mask = _ragged_mask([3, 2], 3)
    out_bool = posterior_marginals(em, tr, st, en, mask)
    out_int = posterior_marginals(em, tr, st, en, mask.to(torch.uint8))
    torch.testing.assert_close(out_int.unigram, out_bool.unigram)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: {**a, "emissions": a["emissions"][0]}, "emissions"),
        (lambda a: {**a, "transitions": torch.zeros(3, 4)}, "transitions"),
        (lambda a: {**a, "start": torch.zeros(4)}, "start"),
        (lambda a: {**a, "end": torch.zeros(2)}, "end"),
        (lambda a: {**a, "mask": torch.ones(2, 4, dtype=torch.bool)}, "mask"),
        (lambda a: {**a, "mask": torch.tensor([[True, False, True], [True] * 3])}, "left-aligned"),
        (lambda a: {**a, "mask": torch.tensor([[False, False, False], [True] * 3])}, "mask"),
        (lambda a: {**a, "mask": torch.ones(2, 3)}, "mask"),
        (lambda a: {**a, "emissions": torch.zeros(2, 0, 3)}, "T >= 1"),
        (lambda a: {**a, "emissions": torch.zeros(2, 3, 3, dtype=torch.long)}, "floating"),
    ],
)
def test_bad_inputs_raise(change, message):
    args = {
        "emissions": torch.zeros(2, 3, 3),
        "transitions": torch.zeros(3, 3),
        "start": torch.zeros(3),
        "end": torch.zeros(3),
        "mask": None,
    }
    bad = change(args)
    for fn in (posterior_marginals, viterbi, log_partition):
        with pytest.raises(ValueError, match=message):
            fn(**bad)
    with pytest.raises(ValueError, match=message):
        sample(**bad, n_samples=2)


def test_bad_sample_count_and_tag_shape_raise():
    em, tr, st, en = _potentials(2, 3, 3)
    with pytest.raises(ValueError, match="n_samples"):
        sample(em, tr, st, en, n_samples=0)
    with pytest.raises(ValueError, match="tags"):
        sequence_score(em, tr, st, en, torch.zeros(2, 4, dtype=torch.long))


def test_extreme_scores_fall_back_to_the_robust_recursion():
    # Steps spanning hundreds of nats underflow the pre-exponentiated fast path; the
    # log-space recursion must take over and still match enumeration.
    from calib_metrics.models import linear_chain as lc

    lengths = [5, 3, 1]
    em, tr, st, en = _potentials(3, 5, 3, scale=400.0, seed=29)
    mask = _ragged_mask(lengths, 5)
    assert lc._run_forward(em, tr, st, en, mask)[1] is None
    out = posterior_marginals(em, tr, st, en, mask)
    for b, n in enumerate(lengths):
        log_z, uni, pair, path, _ = _brute_force(em[b, :n], tr, st, en, n)
        torch.testing.assert_close(out.log_partition[b], log_z)
        torch.testing.assert_close(out.unigram[b, :n], uni)
        torch.testing.assert_close(out.pairwise[b, : n - 1], pair)
        assert viterbi(em, tr, st, en, mask)[1][b, :n].tolist() == path.tolist()
    draws = sample(em, tr, st, en, mask, n_samples=50, generator=torch.Generator().manual_seed(0))
    assert (draws[:, 0] == out.unigram[0].argmax(-1)).all()  # posterior is a point mass here


def _lost_path_chain(length: int, scale: float, dtype=F64):
    """Tag 2's emissions lead every step by 0.75 scale (so the others' underflow once
    shifted), but alternating 0 and 1 earns +scale per transition: from 10 tags on, the
    likeliest paths are 2, 0, 1, 0, ... and 2, 1, 0, 1, ..."""
    tr = torch.tensor([[-1, 1, -1], [1, -1, -1], [0, 0, 0]], dtype=dtype) * scale
    em = torch.zeros(1, length, 3, dtype=dtype)
    em[..., 2] = 0.75 * scale
    ends = torch.tensor([-0.8, -0.8, 0.0], dtype=dtype) * scale
    return em, tr, ends, ends.clone()


@pytest.mark.parametrize(("scale", "compute_dtype"), [(1000.0, F64), (150.0, torch.float32)])
def test_a_finite_score_that_would_underflow_sends_the_call_to_log_space(scale, compute_dtype):
    """Each step's totals stayed healthy (tag 2 carried them), so the fast path had
    silently forbidden tags 0 and 1: log Z 9000 instead of 9950.7, every draw all-2."""
    em, tr, st, en = _lost_path_chain(10, scale)
    log_z, uni, pair, path, _ = _brute_force(em[0], tr, st, en, 10)
    kwargs = {"compute_dtype": compute_dtype}
    out = posterior_marginals(em, tr, st, en, **kwargs)
    torch.testing.assert_close(out.log_partition[0], log_z)
    torch.testing.assert_close(log_partition(em, tr, st, en, **kwargs)[0], log_z)
    torch.testing.assert_close(out.unigram[0], uni, atol=1e-6, rtol=0)
    torch.testing.assert_close(out.pairwise[0], pair, atol=1e-6, rtol=0)
    g = torch.Generator().manual_seed(0)
    draws = sample(em, tr, st, en, n_samples=20, generator=g, **kwargs)
    likeliest = {(2, *[0, 1] * 4, 0), (2, *[1, 0] * 4, 1)}
    assert {tuple(d[0].tolist()) for d in draws} <= likeliest
    assert tuple(path.tolist()) in likeliest


def test_forbidden_choices_written_as_minus_inf_keep_the_fast_path():
    """-inf is exactly 0 after the shift, not an underflow: no fallback for it."""
    from calib_metrics.models import linear_chain as lc

    em, tr, st, en = _potentials(2, 5, 3, seed=3)
    tr[0, 1] = st[2] = en[1] = -math.inf
    em[0, 2, 0] = -math.inf
    mask = torch.ones(2, 5, dtype=torch.bool)
    assert lc._run_forward(em, tr, st, en, mask)[1] is not None


def test_fast_and_log_space_paths_agree():
    from calib_metrics.models import linear_chain as lc

    em, tr, st, en = _potentials(4, 9, 5, scale=3.0, seed=31)
    mask = _ragged_mask([9, 4, 1, 7], 9)
    fwd, state = lc._run_forward(em, tr, st, en, mask)
    assert state is not None
    fast = lc._marginal_parts(em, tr, st, en, mask, pairwise=True)
    assert fast.nxt is not None and fast.log_pair is None
    slow = lc._log_parts(
        em, tr, st, en, mask, True, lc._log_space_forward(em, tr, st, en, mask, fwd)
    )
    torch.testing.assert_close(slow.forward.log_partition, fwd.log_partition)
    torch.testing.assert_close(slow.unigram, fast.unigram)
    pair_slow, pair_fast = torch.zeros(2, 4, 8, 5, 5, dtype=F64)
    torch.testing.assert_close(
        lc._pairwise(slow, pair_slow, mask[:, 1:]), lc._pairwise(fast, pair_fast, mask[:, 1:])
    )


@pytest.mark.parametrize("scale", [2.0, 400.0])  # fast path, robust path
def test_log_partition_gradients_are_expected_counts(scale):
    # CRF training differentiates log Z: d/dA = summed pairwise marginals, d/dstart = first
    # unigram, d/dend = unigram at each sentence's last position.
    em, tr, st, en = _potentials(3, 6, 4, scale=scale, seed=37)
    mask = _ragged_mask([6, 2, 4], 6)
    params = [x.clone().requires_grad_() for x in (em, tr, st, en)]
    grads = torch.autograd.grad(log_partition(*params, mask).sum(), params)
    out = posterior_marginals(em, tr, st, en, mask)
    last = out.unigram[torch.arange(3), mask.sum(1) - 1]
    expected = (out.unigram, out.pairwise.sum((0, 1)), out.unigram[:, 0].sum(0), last.sum(0))
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("scale", [1.0, 300.0])  # fast path, log-space path
def test_forward_backward_messages_give_log_z_and_marginals_everywhere(scale):
    from calib_metrics.models.linear_chain import forward_backward

    em, tr, st, en = _potentials(3, 5, 3, scale=scale, seed=8)
    mask = _ragged_mask([5, 3, 1], 5)
    msg = forward_backward(em, tr, st, en, mask)
    for b, n in enumerate([5, 3, 1]):
        log_z, uni, *_ = _brute_force(em[b, :n], tr, st, en, n)
        torch.testing.assert_close(msg.log_partition[b], log_z)
        both = msg.log_alpha[b, :n] + msg.log_beta[b, :n]
        torch.testing.assert_close(torch.logsumexp(both, -1), log_z.expand(n))
        torch.testing.assert_close(torch.exp(both - log_z), uni)
        assert torch.isneginf(msg.log_alpha[b, n:]).all()
    # log_alpha at t = 0 is start + emission; log_beta at the last token is end.
    torch.testing.assert_close(msg.log_alpha[:, 0], st + em[:, 0])
    torch.testing.assert_close(msg.log_beta[2, 0], en)


# Issue 13: every error is a clear one.


def test_no_tokens_or_no_tags_raise_and_no_sentences_give_empty_results():
    """T = 0 and K = 0 raise; B = 0 (left_align's batch of rows that are all padding) gives
    empty results, on the fast and on the log-space path (which had failed in amin())."""
    em, tr, st, en = _potentials(1, 3, 3)
    for bad in (em[:, :0], em[..., :0]):
        for fn in (posterior_marginals, viterbi, log_partition):
            with pytest.raises(ValueError, match="T >= 1 and K >= 1"):
                fn(bad, tr, st, en)
        with pytest.raises(ValueError, match="T >= 1 and K >= 1"):
            sample(bad, tr, st, en, n_samples=1)
    for scale in (1.0, 1e3):
        empty, chain = em[:0].requires_grad_(), (tr * scale, st, en)
        out = posterior_marginals(empty, *chain)
        assert [tuple(x.shape) for x in out] == [(0,), (0, 3, 3), (0, 2, 3, 3)]
        assert viterbi(empty, *chain)[1].shape == (0, 3)
        assert sample(empty, *chain, n_samples=2).shape == (2, 0, 3)
        assert forward_backward(empty, *chain).log_beta.shape == (0, 3, 3)
        assert pairwise_rows(empty, *chain, rows=(1,)).pairwise.shape == (0, 2, 1, 3)
        tags = torch.zeros(0, 3, dtype=torch.long)
        assert sequence_score(empty, *chain, tags).shape == (0,)
        (grad,) = torch.autograd.grad(log_partition(empty, *chain).sum(), empty)
        assert grad.shape == (0, 3, 3)


def test_boolean_sample_count_raises():
    em, tr, st, en = _potentials(1, 3, 3)
    with pytest.raises(ValueError, match="n_samples"):
        sample(em, tr, st, en, n_samples=True)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("where", ["emissions", "transitions", "start", "end"])
def test_nan_and_plus_inf_scores_raise(bad, where):
    args = dict(zip(("emissions", "transitions", "start", "end"), _potentials(2, 3, 3)))
    args[where] = args[where].clone()
    args[where].view(-1)[1] = bad
    for fn in (posterior_marginals, viterbi, log_partition):
        with pytest.raises(ValueError, match="NaN or \\+inf"):
            fn(**args)


def test_nan_in_padding_is_ignored():
    em, tr, st, en = _potentials(2, 3, 3)
    mask = _ragged_mask([3, 1], 3)
    padded = em.clone()
    padded[1, 1:] = float("nan")
    got = posterior_marginals(padded, tr, st, en, mask)
    want = posterior_marginals(em, tr, st, en, mask)
    torch.testing.assert_close(got.unigram, want.unigram)


def test_impossible_sentence_has_minus_inf_log_z_and_zero_marginals():
    em, tr, st, en = _potentials(3, 4, 3, seed=4)
    em[1, 2] = float("-inf")  # no tag allowed at token 2 of sentence 1
    tr2 = tr.clone()
    mask = _ragged_mask([4, 4, 2], 4)
    out = posterior_marginals(em, tr2, st, en, mask)
    assert torch.isneginf(out.log_partition[1]) and torch.isfinite(out.log_partition[[0, 2]]).all()
    assert (out.unigram[1] == 0).all() and (out.pairwise[1] == 0).all()
    assert not out.unigram.isnan().any() and not out.pairwise.isnan().any()
    # The possible sentences are unaffected.
    alone = posterior_marginals(em[[0, 2]], tr, st, en, mask[[0, 2]])
    torch.testing.assert_close(out.unigram[[0, 2]], alone.unigram)
    z = log_partition(em, tr, st, en, mask)
    assert torch.isneginf(z[1])
    score, _ = viterbi(em, tr, st, en, mask)
    assert torch.isneginf(score[1]) and torch.isfinite(score[[0, 2]]).all()
    with pytest.raises(ValueError, match="impossible"):
        sample(em, tr, st, en, mask, n_samples=2)
    # Forbidden transitions can make a sentence impossible too.
    blocked = torch.full((3, 3), float("-inf"), dtype=F64)
    assert torch.isneginf(log_partition(em[:1], blocked, st, en)).all()
    assert (posterior_marginals(em[:1], blocked, st, en).unigram == 0).all()


def test_viterbi_ties_go_to_the_lowest_tags_from_the_end():
    # Integer scores make many optimal paths; the rule is the one the docstring states:
    # the lowest final tag, then the lowest best predecessor of each chosen tag, i.e. the
    # optimal path whose reversed tags are lexicographically smallest.
    g = torch.Generator().manual_seed(5)
    lengths = [4, 1, 3, 4, 2]
    em = torch.randint(-1, 2, (5, 4, 3), generator=g).to(F64)
    tr = torch.randint(-1, 2, (3, 3), generator=g).to(F64)
    st, en = torch.zeros(3, dtype=F64), torch.zeros(3, dtype=F64)
    mask = _ragged_mask(lengths, 4)
    score, tags = viterbi(em, tr, st, en, mask)
    for b, n in enumerate(lengths):
        seqs = torch.tensor(list(itertools.product(range(3), repeat=n)))
        total = em[b, torch.arange(n), seqs].sum(1) + tr[seqs[:, :-1], seqs[:, 1:]].sum(1)
        optimal = seqs[total == total.max()].tolist()
        assert len(optimal) > 1  # the case really has ties
        assert tags[b, :n].tolist() == min(optimal, key=lambda s: s[::-1])
        assert score[b] == total.max()
    # All-equal scores: every path ties, and the answer is all zeros.
    assert not viterbi(torch.zeros(2, 5, 4), torch.zeros(4, 4), torch.zeros(4), torch.zeros(4))[
        1
    ].any()


def test_outputs_are_dense_whatever_the_internal_layout():
    # The recursions keep their tensors time step by time step; what they return is laid
    # out sentence by sentence, so callers can .view() it.
    from calib_metrics.models.linear_chain import forward_backward

    for dtype in (torch.float32, F64):
        em, tr, st, en = _potentials(3, 6, 4, seed=41, dtype=dtype)
        mask = _ragged_mask([6, 2, 4], 6)
        out = posterior_marginals(em, tr, st, en, mask)
        msg = forward_backward(em, tr, st, en, mask)
        for x in (out.unigram, out.pairwise, msg.log_alpha, msg.log_beta):
            assert x.is_contiguous()
        assert viterbi(em, tr, st, en, mask)[1].is_contiguous()


def test_viterbi_matches_pytorch_crf_decode_on_a_ragged_batch():
    g = torch.Generator().manual_seed(43)
    em = torch.randn(64, 30, 12, generator=g)
    tr = torch.randn(12, 12, generator=g)
    tr[3, :] = tr[:, 5] = -math.inf  # forbidden moves, as in BIO constraints
    st, en = torch.randn(12, generator=g), torch.randn(12, generator=g)
    lengths = torch.randint(1, 31, (64,), generator=g)
    lengths[0] = 30
    mask = torch.arange(30)[None, :] < lengths[:, None]
    crf = CRF(12, batch_first=True)
    with torch.no_grad():
        crf.transitions.copy_(tr)
        crf.start_transitions.copy_(st)
        crf.end_transitions.copy_(en)
    decoded = crf.decode(em, mask)
    score, best = viterbi(em, tr, st, en, mask)
    assert [best[b, : len(d)].tolist() for b, d in enumerate(decoded)] == decoded
    assert not best[~mask].any()
    torch.testing.assert_close(score, sequence_score(em, tr, st, en, best, mask))


@pytest.mark.parametrize("dtype", [torch.float32, F64, torch.float16])
def test_marginals_in_chunks_of_sentences_equal_one_pass(monkeypatch, dtype):
    # Large CPU batches are done a few sentences at a time; every chunk must give what the
    # whole batch gives, to rounding (the batch falls back to the log-space recursion as a
    # whole, chunks only where the sentence with huge scores is).
    from calib_metrics.models import linear_chain as lc

    em, tr, st, en = _potentials(7, 6, 4, scale=2.0, seed=47)
    em[4] *= 200.0  # this sentence's chunk takes the robust recursion
    mask = _ragged_mask([6, 1, 4, 6, 3, 2, 5], 6)
    em, tr, st, en = (x.to(dtype) for x in (em, tr, st, en))
    whole = posterior_marginals(em, tr, st, en, mask)
    monkeypatch.setattr(lc, "_CHUNK_BYTES", 2 * 6 * 4 * 8)  # two sentences per chunk
    assert len(lc._chunks(em)) == 4
    chunked = posterior_marginals(em, tr, st, en, mask)
    for a, b in zip(whole, chunked, strict=True):
        assert a.dtype == b.dtype == dtype
        torch.testing.assert_close(a, b)


def test_sequence_score_ignores_whatever_lies_outside_the_mask():
    """Gold tags padded with an ignore index (-100), -inf scores at padded positions or a
    forbidden transition into a padding tag leave a sentence's score as it is (before: an
    index error, or NaN from 0 * -inf)."""
    em, tr, st, en = _potentials(2, 4, 3, seed=3)
    mask = _ragged_mask([4, 2], 4)
    tags = torch.tensor([[0, 2, 1, 1], [2, 0, 0, 0]])
    expected = sequence_score(em, tr, st, en, tags, mask)
    padded = tags.masked_fill(~mask, -100)
    torch.testing.assert_close(sequence_score(em, tr, st, en, padded, mask), expected)
    em_inf = em.masked_fill(~mask[..., None], float("-inf"))
    torch.testing.assert_close(sequence_score(em_inf, tr, st, en, tags, mask), expected)
    tr_inf = tr.clone()
    tr_inf[0, 0] = float("-inf")  # sentence 1 ends in tag 0, then padding tag 0
    expected_1 = sequence_score(em, tr_inf, st, en, tags, mask)[1]
    torch.testing.assert_close(expected_1, expected[1])
    assert torch.isfinite(expected_1)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
def test_sequence_score_takes_tags_of_any_integer_dtype(dtype):
    # In a narrow dtype the bound 300 had wrapped to 44: tag 100 was "outside [0, 300)".
    em, tr, st, en = _potentials(2, 3, 300, seed=4)
    tags = torch.tensor([[100, 43, 7], [127, 0, 99]])
    want = sequence_score(em, tr, st, en, tags)
    torch.testing.assert_close(sequence_score(em, tr, st, en, tags.to(dtype)), want)


def test_scores_that_require_grad_decode_sample_and_query_without_a_graph() -> None:
    """A trained model's potentials require grad: viterbi and sample had failed with
    torch's "functions with out=... arguments don't support automatic differentiation",
    and span_marginals returned a tensor whose backward failed."""
    from calib_metrics.models.crf import CRFTagger
    from calib_metrics.queries import span_marginals

    crf = CRFTagger(3, 5)
    potentials = crf.potentials(torch.tensor([[1, 2, 3], [4, 0, 1]]))
    assert potentials[0].requires_grad
    score, tags = viterbi(*potentials)
    torch.testing.assert_close(score, sequence_score(*potentials, tags).detach())
    draws = sample(*potentials, n_samples=4, generator=torch.Generator().manual_seed(0))
    assert draws.shape == (4, 2, 3) and not score.requires_grad
    spans = span_marginals(*potentials, begin=1, inside=2, max_length=2)
    assert not spans.requires_grad and spans.shape == (2, 3, 2)


@pytest.mark.parametrize(
    ("gap", "gain", "dtype"), [(400.0, 400.0, F64), (60.0, 55.0, torch.float32)]
)
def test_a_lineage_that_underflows_over_several_steps_is_caught(gap, gain, dtype) -> None:
    """Two tags that may not switch: tag 1 falls 2 x gap behind, then gains 3 x gain. Each
    step's exponentials and totals were fine, so log_partition returned 0 (exact: 400)
    and every draw was the all-0 path; only posterior_marginals' backward check saw it."""
    inf = math.inf
    tr = torch.tensor([[0.0, -inf], [-inf, 0.0]], dtype=dtype)
    st, en = torch.zeros(2, dtype=dtype), torch.zeros(2, dtype=dtype)
    em = torch.tensor([[0, -gap], [0, -gap], [0, gain], [0, gain], [0, gain]], dtype=dtype)[None]
    log_z, *_ = _brute_force(em[0].double(), tr.double(), st.double(), en.double(), 5)
    kwargs = {"compute_dtype": dtype}
    torch.testing.assert_close(log_partition(em, tr, st, en, **kwargs)[0].double(), log_z)
    torch.testing.assert_close(
        posterior_marginals(em, tr, st, en, **kwargs).log_partition[0].double(), log_z
    )
    g = torch.Generator().manual_seed(0)
    draws = sample(em, tr, st, en, n_samples=5, generator=g, **kwargs)
    assert (draws == 1).all()  # the all-1 path holds all the mass


@pytest.mark.parametrize(
    ("gap", "gain", "dtype"), [(400.0, 400.0, F64), (60.0, 55.0, torch.float32)]
)
def test_forward_backward_of_a_lineage_that_underflows_gives_the_exact_messages(
    gap, gain, dtype
) -> None:
    """The fast forward pass held and only the backward check caught the lost lineage:
    forward_backward redid the forward messages in log space but kept the fast pass's
    log Z (0 instead of 400, or log 2 short for two tied lineages), so log_beta at the
    last token was end - that error instead of end."""
    inf = math.inf
    tr = torch.tensor([[0.0, -inf], [-inf, 0.0]], dtype=dtype)
    st, en = torch.zeros(2, dtype=dtype), torch.tensor([0.5, -0.25], dtype=dtype)
    rows = [[0, -gap], [0, -gap], [0, gain], [0, gain], [0, gain]]
    em = torch.tensor([rows, rows[:3] + [[1.0, 2.0]] * 2], dtype=dtype)
    mask = _ragged_mask([5, 3], 5)
    msg = forward_backward(em, tr, st, en, mask, compute_dtype=dtype)
    marginals = posterior_marginals(em, tr, st, en, mask, compute_dtype=dtype)
    tolerance = {} if dtype == F64 else {"rtol": 1e-5, "atol": 1e-4}
    for b, n in enumerate([5, 3]):
        log_z, uni, pair, *_ = _brute_force(
            em[b, :n].double(), tr.double(), st.double(), en.double(), n
        )
        torch.testing.assert_close(msg.log_partition[b].double(), log_z, **tolerance)
        torch.testing.assert_close(msg.log_beta[b, n - 1].double(), en.double(), **tolerance)
        both = (msg.log_alpha[b, :n] + msg.log_beta[b, :n]).double()
        torch.testing.assert_close(torch.logsumexp(both, -1), log_z.expand(n), **tolerance)
        torch.testing.assert_close(torch.exp(both - log_z), uni, **tolerance)
        # The marginals, whose path was right all along, agree with the messages.
        torch.testing.assert_close(marginals.log_partition[b].double(), log_z, **tolerance)
        torch.testing.assert_close(marginals.unigram[b, :n].double(), uni, **tolerance)
        torch.testing.assert_close(marginals.pairwise[b, : n - 1].double(), pair, **tolerance)
    torch.testing.assert_close(msg.log_alpha[:, 0], st + em[:, 0])


# ------------------------------------------------------------------ host synchronisations


def _reads(function, *args, **kwargs) -> int:
    """How often ``function(*args, **kwargs)`` reads a value back from the device."""
    counts: collections.Counter = collections.Counter()
    with pytest.MonkeyPatch.context() as patch:
        for name in ("item", "tolist", "__bool__", "__int__", "__float__", "nonzero"):
            original = getattr(torch.Tensor, name)

            def counted(*args, _name=name, _original=original, **kwargs):
                counts[_name] += 1
                return _original(*args, **kwargs)

            patch.setattr(torch.Tensor, name, counted)
        function(*args, **kwargs)
    return sum(counts.values())


def _docstring(function) -> str:
    return " ".join(function.__doc__.split())


def test_forward_backward_reads_the_device_three_times_as_its_docstring_says():
    # The argument checks and the two precision checks of the fast recursions, unstated.
    em, tr, st, en = _potentials(3, 5, 4, seed=1)
    assert "Host synchronisations: three" in _docstring(forward_backward)
    assert _reads(forward_backward, em, tr, st, en) == 3
    assert _reads(forward_backward, em, tr, st, en, validate_args=False) == 2


def test_posterior_marginals_docstring_says_when_the_pairwise_overflow_check_runs():
    """It had said "for a float32 computation"; the check runs where a float32 (or
    narrower) output's pairwise marginals are computed in float64, and only there."""
    em, tr, st, en = _potentials(3, 5, 4, seed=1)
    doc = _docstring(posterior_marginals)
    assert "for a float32 computation" not in doc
    assert "pairwise marginals of a float32 or narrower output are computed in float64" in doc
    # The argument checks, the fast recursions' two precision checks, then the overflow's.
    for emissions, options, reads in (
        (em.float(), {}, 4),
        (em.half(), {}, 4),
        (em.float(), {"pairwise": False}, 3),
        (em.float(), {"compute_dtype": torch.float32}, 3),
        (em, {}, 3),
    ):
        assert _reads(posterior_marginals, emissions, tr, st, en, **options) == reads


def test_emissions_that_are_not_a_tensor_are_named_by_their_type() -> None:
    """A list had been "got shape <class 'list'>"."""
    zeros = torch.zeros(2, 2), torch.zeros(2), torch.zeros(2)
    with pytest.raises(ValueError, match=r"emissions must be a \[B, T, K\] tensor, got list$"):
        posterior_marginals([[[0.0, 0.0]]], *zeros)
    with pytest.raises(ValueError, match=r"tensor, got shape \(1, 2\)$"):
        posterior_marginals(torch.zeros(1, 2), *zeros)


# ------------------------------------------------------------------ pairwise rows


class _LargestOutput(TorchDispatchMode):
    """The most elements any operation's output holds while the mode is on."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in torch.utils._pytree.tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                self.largest = max(self.largest, tensor.numel())
        return out


@pytest.mark.parametrize("block", [1, 64 * 5, 64 * 30, 1 << 20])
def test_log_space_pairwise_rows_are_posterior_marginals_rows_without_the_whole_tensor(
    block, monkeypatch
) -> None:
    """The log-space path (scores of 1e3 span thousands of nats) had built the whole
    [B, T-1, K, K] log pairwise tensor to keep two rows (3.9 GB at B = 1000, T = 100,
    K = 40); it builds the rows and normalises them, a block of steps at a time, by the
    same sums as posterior_marginals, so they are its rows to the bit."""
    monkeypatch.setattr(linear_chain, "_PAIR_BLOCK_ELEMENTS", block)
    em, tr, st, en = _potentials(4, 10, 8, scale=1e3, seed=3)
    tr[0, 2] = -math.inf
    mask = _ragged_mask([10, 7, 1, 9], 10)
    rows = (2, 0, 7, 2)
    want = posterior_marginals(em, tr, st, en, mask)
    with _LargestOutput() as largest:
        got = pairwise_rows(em, tr, st, en, mask, rows=rows)
    torch.testing.assert_close(got.pairwise, want.pairwise[:, :, list(rows)], atol=0, rtol=0)
    torch.testing.assert_close(got.unigram, want.unigram, atol=0, rtol=0)
    assert got.pairwise[:, :, 0].sum((-2, -1)).tolist() == pytest.approx(
        want.unigram[:, :-1, 2].sum(-1).tolist(), abs=1e-12
    )
    whole = em.shape[0] * (em.shape[1] - 1) * 8 * 8  # one block at the default size
    assert largest.largest < whole or block >= whole
    # In compute_dtype, not the dtype of the emissions, as the docstring says.
    assert pairwise_rows(em.float(), tr, st, en, mask, rows=rows).pairwise.dtype == F64


@pytest.mark.parametrize("forbidden", [-1e4, -math.inf])  # log-space path, fast path
@pytest.mark.parametrize("block", [64 * 4, 1 << 20])
def test_log_z_gradient_takes_chunks_of_sentences_and_blocks_of_steps(
    forbidden, block, monkeypatch
) -> None:
    """Transitions forbidden as pytorch-crf's -1e4 send log Z to the log-space path, whose
    backward had built the whole batch's [B, T-1, K, K] log pairwise marginals, several
    times, to sum them into the K x K transitions gradient (13.2 GB at B = 256, T = 512,
    K = 64; posterior_marginals takes a chunk of sentences at a time). The backward takes
    the same chunks, and the pairs a block of steps at a time: pytorch-crf's autograd
    gradients, and the one-pass ones, with a chunk boundary inside the batch."""
    batch, length, num_tags = 7, 10, 8
    em, tr, st, en = _potentials(batch, length, num_tags, scale=2.0, seed=41)
    tr[torch.rand(num_tags, num_tags, generator=torch.Generator().manual_seed(2)) < 0.3] = forbidden
    mask = _ragged_mask([10, 3, 1, 10, 6, 9, 2], length)
    weight = torch.linspace(0.5, 2.0, batch, dtype=F64)  # each chunk weighs its own rows
    crf = CRF(num_tags, batch_first=True).double()
    with torch.no_grad():
        crf.transitions.copy_(tr.clamp(min=-1e4))  # pytorch-crf's own way to forbid
        crf.start_transitions.copy_(st)
        crf.end_transitions.copy_(en)
    theirs = [em.clone().requires_grad_(), crf.transitions, crf.start_transitions,
              crf.end_transitions]  # fmt: skip
    log_z = crf._compute_normalizer(theirs[0].transpose(0, 1), mask.transpose(0, 1))
    want = torch.autograd.grad((log_z * weight).sum(), theirs)
    ours = [x.clone().requires_grad_() for x in (em, tr, st, en)]
    one_pass = torch.autograd.grad((log_partition(*ours, mask) * weight).sum(), ours)

    monkeypatch.setattr(linear_chain, "_CHUNK_BYTES", 2 * length * num_tags * 8)  # 2 rows
    monkeypatch.setattr(linear_chain, "_PAIR_BLOCK_ELEMENTS", block)
    calls = []
    parts = linear_chain._marginal_parts
    monkeypatch.setattr(
        linear_chain,
        "_marginal_parts",
        lambda em, *a, **k: calls.append(len(em)) or parts(em, *a, **k),
    )
    with _LargestOutput() as largest:
        got = torch.autograd.grad((log_partition(*ours, mask) * weight).sum(), ours)
    assert calls == [2, 2, 2, 1]
    for mine, whole, reference in zip(got, one_pass, want, strict=True):
        torch.testing.assert_close(mine, whole, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(mine, reference)
    assert largest.largest < batch * (length - 1) * num_tags**2
    assert largest.largest <= max(batch * length * num_tags, 2 * (length - 1) * num_tags**2)
    if block < num_tags**2 * length:  # blocks of steps: no [2, T-1, K, K] either
        assert largest.largest <= batch * length * num_tags


@pytest.mark.parametrize(
    "rows, match",
    [
        ((7,), "rows[0] must be in [0, 3), got 7"),
        ((1, -1), "rows[1] must be in [0, 3), got -1"),
        ((), "rows must be a non-empty tuple or list of tag indices, got ()"),
        ((True,), "rows[0] must be an int, got bool True"),
        ((1.0,), "rows[0] must be an int, got float 1.0"),
        (1, "rows must be a non-empty tuple or list of tag indices, got 1"),
    ],
)
def test_pairwise_rows_refuses_rows_that_are_not_tag_indices(rows, match) -> None:
    """(7,) had raised IndexError, (-1,) had been the last row, () failed in torch.stack
    and (True,) with a shape error."""
    em, tr, st, en = _potentials(2, 4, 3, seed=2)
    with pytest.raises(ValueError, match=re.escape(match)):
        pairwise_rows(em, tr, st, en, rows=rows)


def test_pairwise_rows_takes_validate_args() -> None:
    em, tr, st, en = _potentials(2, 4, 3, seed=2)
    checked = pairwise_rows(em, tr, st, en, rows=[np.int64(1), torch.tensor(2)])
    unchecked = pairwise_rows(em, tr, st, en, rows=(1, 2), validate_args=False)
    assert torch.equal(checked.pairwise, unchecked.pairwise)
    assert _reads(pairwise_rows, em, tr, st, en, rows=(1,)) == 3
    assert _reads(pairwise_rows, em, tr, st, en, rows=(1,), validate_args=False) == 2
    with pytest.raises(ValueError, match="validate_args must be True or False, got 'no'"):
        pairwise_rows(em, tr, st, en, rows=(1,), validate_args="no")


def test_the_hinted_pairwise_rows_are_private_and_end_a_mask_error_with_the_hint() -> None:
    """hinted_pairwise_rows had a public name outside __all__, with no example: span
    marginals' helper, private now. Its mask's layout error ends with the caller's hint,
    pairwise_rows' with the chain functions' (left_align_hint)."""
    assert not hasattr(linear_chain, "hinted_pairwise_rows")
    em, tr, st, en = _potentials(2, 4, 3, seed=2)
    mask = torch.tensor([[True, False, True, True], [True] * 4])
    with pytest.raises(ValueError, match="left-aligned") as told:
        linear_chain._hinted_pairwise_rows(em, tr, st, en, mask, rows=(1,), hint=" (its fix)")
    assert str(told.value).endswith(") (its fix)")
    with pytest.raises(ValueError, match="left-aligned") as told:
        pairwise_rows(em, tr, st, en, mask, rows=(1,))
    assert str(told.value).endswith(linear_chain.left_align_hint())
