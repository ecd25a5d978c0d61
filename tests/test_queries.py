"""Tests of structured-output-to-(q, y) queries: tags, tag pairs, coreference pairs."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import host_reads
import numpy as np
import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.queries import (
    coref_pair_queries,
    span_indicators,
    span_marginals,
    span_queries,
    spans_inside,
    tag_pair_queries,
    tag_queries,
    top_tag_pairs,
)


def _random_batch(seed: int = 0, batch: int = 4, length: int = 6, num_tags: int = 3):
    g = torch.Generator().manual_seed(seed)
    unigram = torch.softmax(torch.randn(batch, length, num_tags, generator=g), -1)
    pairwise = torch.softmax(torch.randn(batch, length - 1, num_tags * num_tags, generator=g), -1)
    pairwise = pairwise.view(batch, length - 1, num_tags, num_tags)
    tags = torch.randint(num_tags, (batch, length), generator=g)
    lengths = torch.tensor([length, 1, 3, length - 1])[:batch]
    mask = torch.arange(length) < lengths[:, None]
    return unigram, pairwise, tags, mask


def test_tag_queries_match_a_loop():
    unigram, _, tags, mask = _random_batch()
    q, y = tag_queries(unigram, tags, mask)
    expected_q, expected_y = [], []
    for k in range(unigram.shape[-1]):
        for b in range(unigram.shape[0]):
            for t in range(unigram.shape[1]):
                if mask[b, t]:
                    expected_q.append(unigram[b, t, k].item())
                    expected_y.append(float(tags[b, t] == k))
    torch.testing.assert_close(q, torch.tensor(expected_q))
    torch.testing.assert_close(y, torch.tensor(expected_y))
    # Each token is positive for exactly one tag.
    n_tokens = int(mask.sum())
    assert y.sum().item() == n_tokens
    assert q.numel() == n_tokens * unigram.shape[-1]


def test_tag_queries_per_tag_rows_are_the_concatenation():
    unigram, _, tags, mask = _random_batch(1)
    q, y = tag_queries(unigram, tags, mask)
    qk, yk = tag_queries(unigram, tags, mask, per_tag=True)
    assert qk.shape == (unigram.shape[-1], int(mask.sum()))
    torch.testing.assert_close(qk.reshape(-1), q)
    torch.testing.assert_close(yk.reshape(-1), y)


def test_tag_queries_ignore_padding_values():
    unigram, _, tags, mask = _random_batch(2)
    garbage_tags = tags.masked_fill(~mask, 99)  # out of range, but outside the mask
    garbage = unigram.masked_fill(~mask[..., None], 7.0)
    q1, y1 = tag_queries(unigram, tags, mask)
    q2, y2 = tag_queries(garbage, garbage_tags, mask)
    torch.testing.assert_close(q1, q2)
    torch.testing.assert_close(y1, y2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"unigram": torch.rand(2, 3)}, "unigram must be"),
        ({"tags": torch.zeros(2, 4, dtype=torch.long)}, "tags must have shape"),
        ({"tags": torch.full((2, 3), 5)}, r"tags must lie in \[0, 2\)"),
        ({"tags": torch.zeros(2, 3)}, "integer"),
        ({"mask": torch.ones(2, 2, dtype=torch.bool)}, "mask must have shape"),
    ],
)
def test_tag_queries_reject_bad_input(kwargs, match):
    args = {"unigram": torch.rand(2, 3, 2), "tags": torch.zeros(2, 3, dtype=torch.long)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        tag_queries(args["unigram"], args["tags"], kwargs.get("mask"))


def test_top_tag_pairs_counts_and_tie_break():
    tags = torch.tensor([[0, 1, 0, 1, 1], [2, 2, 0, 0, 0]])
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    pairs, counts = top_tag_pairs(tags, mask, num_tags=3, top_k=10)
    # Gold pairs: (0,1) x2, (1,0) x1, (1,1) x1, (2,2) x1, (2,0) x1; ties by flat index.
    assert pairs.tolist() == [[0, 1], [1, 0], [1, 1], [2, 0], [2, 2]]
    assert counts.tolist() == [2, 1, 1, 1, 1]


@pytest.mark.parametrize(
    ("num_tags", "top_k", "match"),
    [
        (4.0, 1, "num_tags must be an int, got float"),  # had been a TypeError from bincount
        (True, 1, "num_tags must be an int, got bool"),
        (0, 1, "num_tags must be >= 1"),
        (4, True, "top_k must be an int, got bool"),
        (4, 0, "top_k must be >= 1"),
    ],
)
def test_top_tag_pairs_checks_num_tags_and_top_k(num_tags, top_k, match):
    with pytest.raises(ValueError, match=match):
        top_tag_pairs(torch.tensor([[0, 1, 0]]), None, num_tags, top_k)


def test_tag_pair_queries_match_a_loop():
    _, pairwise, tags, mask = _random_batch(3, batch=4, length=7, num_tags=3)
    out = tag_pair_queries(pairwise, tags, mask, top_k=4)
    assert out.pairs.shape == (4, 2)
    for m, (i, j) in enumerate(out.pairs.tolist()):
        q, y = [], []
        for b in range(tags.shape[0]):
            for t in range(tags.shape[1] - 1):
                if mask[b, t + 1]:
                    q.append(pairwise[b, t, i, j].item())
                    y.append(float(tags[b, t] == i and tags[b, t + 1] == j))
        torch.testing.assert_close(out.pair_q[m], torch.tensor(q))
        torch.testing.assert_close(out.pair_y[m], torch.tensor(y))
        assert out.counts[m].item() == sum(y)
    torch.testing.assert_close(out.q, out.pair_q.reshape(-1))
    # The chosen pairs are the most frequent ones.
    assert out.counts.tolist() == sorted(out.counts.tolist(), reverse=True)


def test_tag_pair_queries_with_fixed_pairs_and_chunks_equal_the_whole():
    _, pairwise, tags, mask = _random_batch(4, batch=4, length=6, num_tags=3)
    whole = tag_pair_queries(pairwise, tags, mask, top_k=3)
    parts = [
        tag_pair_queries(pairwise[s], tags[s], mask[s], pairs=whole.pairs)
        for s in (slice(0, 2), slice(2, 4))
    ]
    torch.testing.assert_close(torch.cat([p.pair_q for p in parts], 1), whole.pair_q)
    torch.testing.assert_close(torch.cat([p.pair_y for p in parts], 1), whole.pair_y)


def test_tag_pair_queries_reject_bad_input():
    _, pairwise, tags, mask = _random_batch()
    with pytest.raises(ValueError, match="top_k"):
        tag_pair_queries(pairwise, tags, mask, top_k=0)
    with pytest.raises(ValueError, match="pairwise must be"):
        tag_pair_queries(pairwise[..., :2], tags, mask)
    with pytest.raises(ValueError, match="pairs must lie"):
        tag_pair_queries(pairwise, tags, mask, pairs=torch.tensor([[0, 9]]))
    # Before: a TypeError from slicing, and float pairs truncated silently.
    with pytest.raises(ValueError, match="top_k must be an int"):
        tag_pair_queries(pairwise, tags, mask, top_k=2.5)
    with pytest.raises(ValueError, match="pairs must be an integer tensor"):
        tag_pair_queries(pairwise, tags, mask, pairs=torch.tensor([[0.5, 1.0]]))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_queries_take_tags_of_any_integer_dtype(dtype):
    """Narrow dtypes had wrapped: a gold pair id (uint8 tags 15, 3 of 20 counted as the
    pair 2, 7; 120 * 300 + 110 overflows int16), a range bound (int8 tag 120 "outside
    [0, 130)"), a span role (300 matched a uint8 tag 44)."""
    g = torch.Generator().manual_seed(0)
    tags = torch.tensor([[120, 110, 3, 3], [3, 3, 120, 110]])
    narrow = tags.to(dtype)
    calls = []
    for k in (130, 300):  # the top pairs sort all k * k counts: the given pairs only at 300
        unigram = torch.rand(2, 4, k, generator=g)
        pairwise = torch.rand(2, 3, k, k, generator=g)
        pairs = torch.tensor([[120, 110], [3, 3]])
        calls += [
            lambda t, p, u=unigram: tag_queries(u, t),
            lambda t, p, w=pairwise: tag_pair_queries(w, t, pairs=p),
        ]
    calls += [
        lambda t, p: top_tag_pairs(t, None, 130, 2),
        lambda t, p, w=pairwise[..., :130, :130]: tag_pair_queries(w, t, top_k=2),
    ]
    for call in calls:
        got, want = call(narrow, pairs.to(dtype)), call(tags, pairs)
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    spans = {"begin": 300, "inside": 301}  # tags 44, 45 in a narrow dtype's arithmetic
    tags = torch.tensor([[44, 45, 44, 1]])
    narrow = tags.to(dtype)
    gold = span_indicators(tags, max_length=2, **spans)
    assert not gold.any() and torch.equal(span_indicators(narrow, max_length=2, **spans), gold)
    probs = torch.rand(1, 4, 2, generator=g)
    want = span_queries(probs, tags, **spans)
    assert all(map(torch.equal, span_queries(probs, narrow, **spans), want))


def test_coref_pair_queries_refuse_bool_entity_ids():
    # Every False had been entity 0, so all those mentions counted as coreferent.
    with pytest.raises(ValueError, match=r"entity_ids must be an integer tensor, got torch\.bool"):
        coref_pair_queries(torch.rand(1, 3, 3), torch.tensor([[True, False, False]]))


def test_coref_pair_queries_match_a_loop():
    g = torch.Generator().manual_seed(0)
    marg = torch.rand(3, 5, 5, generator=g)
    ids = torch.tensor([[0, 1, 0, -1, -1], [2, 2, 2, 3, 3], [4, 5, 4, 0, 0]])
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2, [True] * 4 + [False]])
    q, y = coref_pair_queries(marg, ids, mask)
    eq, ey = [], []
    for b in range(3):
        for i in range(5):
            for j in range(i):
                if mask[b, i] and mask[b, j]:
                    eq.append(marg[b, i, j].item())
                    ey.append(float(ids[b, i] == ids[b, j] and ids[b, i] >= 0))
    torch.testing.assert_close(q, torch.tensor(eq))
    torch.testing.assert_close(y, torch.tensor(ey))
    assert q.numel() == 10 + 3 + 6
    # Two unannotated mentions (id -1) are not counted as coreferent.
    assert y[:10].sum().item() == 1.0


def test_coref_pair_queries_reject_bad_input():
    with pytest.raises(ValueError, match="marginals must be"):
        coref_pair_queries(torch.rand(2, 3, 4), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="entity_ids must have shape"):
        coref_pair_queries(torch.rand(2, 3, 3), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="integer"):
        coref_pair_queries(torch.rand(2, 3, 3), torch.zeros(2, 3))


# ----------------------------------------------------------------------- span marginals


def _chain(batch, length, num_tags, seed, forbid=()):
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(batch, length, num_tags, generator=g, dtype=torch.float64)
    tr = torch.randn(num_tags, num_tags, generator=g, dtype=torch.float64)
    st = torch.randn(num_tags, generator=g, dtype=torch.float64)
    en = torch.randn(num_tags, generator=g, dtype=torch.float64)
    for i, j in forbid:
        tr[i, j] = float("-inf")
    return em, tr, st, en


def _exact_posterior(em, tr, st, en, length):
    """``(tags, P(tags | x))`` of every tag sequence of one sentence, the scores summed in
    exact rational arithmetic: a float sum of scores of 1e16 rounds away what tells
    sequences apart, and the reference with it. -inf scores forbid a sequence."""

    def exact(x):
        return [None if math.isinf(v) else Fraction(v) for v in x.flatten().tolist()]

    em_, tr_, st_, en_ = exact(em), exact(tr), exact(st), exact(en)
    num_tags = em.shape[-1]
    seqs, scores = [], []
    for y in itertools.product(range(num_tags), repeat=length):
        terms = [st_[y[0]], en_[y[-1]], *(em_[t * num_tags + y[t]] for t in range(length))]
        terms += [tr_[y[t] * num_tags + y[t + 1]] for t in range(length - 1)]
        if None not in terms:
            seqs.append(y)
            scores.append(sum(terms))
    best = max(scores)
    weights = [math.exp(float(s - best)) for s in scores]
    total = math.fsum(weights)
    return [(y, w / total) for y, w in zip(seqs, weights, strict=True)]


def _span_brute_force(em, tr, st, en, length, begin, inside, max_length):
    """P(span) for one sentence by enumerating every tag sequence."""
    out = torch.zeros(em.shape[0], max_length, dtype=torch.float64)
    for y, p in _exact_posterior(em, tr, st, en, length):
        for t in range(length):
            for ln in range(max_length):
                last = t + ln
                if last >= length or y[t] != begin:
                    continue
                if all(y[u] == inside for u in range(t + 1, last + 1)) and (
                    last + 1 == length or y[last + 1] != inside
                ):
                    out[t, ln] += p
    return out


SPAN_CASES = [
    # (K, T, lengths, begin, inside, forbidden transitions, max_length)
    (3, 4, [4], 1, 2, [(0, 2)], 3),  # BIO: O, B, I; no O -> I
    (3, 5, [5, 3, 1], 1, 2, [(0, 2)], 5),
    (2, 4, [4, 2], 0, 1, [], 2),  # the smallest tag set
    (5, 5, [5, 4], 1, 2, [(0, 2), (2, 1), (1, 3)], 4),  # BILOU-like: O B I L U
    (4, 3, [3, 2], 2, 2, [], 3),  # begin == inside
    (4, 6, [6, 5], 3, 1, [], 7),  # max_length past T
]


@pytest.mark.parametrize(("k", "t", "lengths", "begin", "inside", "forbid", "max_len"), SPAN_CASES)
def test_span_marginals_match_enumeration(k, t, lengths, begin, inside, forbid, max_len):
    em, tr, st, en = _chain(len(lengths), t, k, seed=k * 10 + t, forbid=forbid)
    mask = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]
    em = em.masked_fill(~mask[..., None], 123.0)  # padding values must not matter
    got = span_marginals(em, tr, st, en, mask, begin=begin, inside=inside, max_length=max_len)
    assert got.shape == (len(lengths), t, max_len)
    for b, n in enumerate(lengths):
        want = _span_brute_force(em[b, :n], tr, st, en, n, begin, inside, max_len)
        torch.testing.assert_close(got[b, :n], want, atol=1e-10, rtol=1e-8)
        assert (got[b, n:] == 0).all()


@pytest.mark.parametrize("bilou", [False, True])
def test_span_marginals_stop_at_the_sentence_length(bilou, monkeypatch) -> None:
    """Spans as long as the batch's sentences or longer have probability 0: a max_length
    far past T had looped over every length (10⁵ on sentences of 4 tokens: minutes)."""
    import calib_metrics.queries as queries

    em, tr, st, en = _chain(3, 6, 5, seed=3)
    roles = {"begin": 1, "inside": 2} | ({"last": 3, "unit": 4} if bilou else {})
    short = span_marginals(em, tr, st, en, max_length=6, **roles)
    shifts = []
    real_shift = queries._shift_left
    monkeypatch.setattr(
        queries, "_shift_left", lambda x, by: shifts.append(by) or real_shift(x, by)
    )
    long = span_marginals(em, tr, st, en, max_length=10_000, **roles)
    assert long.shape == (3, 6, 10_000) and torch.equal(long[..., :6], short)
    assert not long[..., 6:].any()
    # The steps stop at spans of T tokens: the last BIO one shifts by T - 1 to the token
    # after the span, the last BILOU one by T - 2 to the step into `last`.
    assert max(shifts) == (4 if bilou else 5)


def _bilou_brute_force(em, tr, st, en, length, tags, max_length):
    """P(span) under BILOU for one sentence by enumerating every tag sequence."""
    begin, inside, last, unit = tags
    out = torch.zeros(em.shape[0], max_length, dtype=torch.float64)
    for y, p in _exact_posterior(em, tr, st, en, length):
        for t in range(length):
            out[t, 0] += p * (y[t] == unit)
            for ln in range(1, min(max_length, length - t)):
                span = y[t : t + ln + 1]
                if span == (begin, *[inside] * (ln - 1), last):
                    out[t, ln] += p
    return out


BILOU_CASES = [
    # (K, T, lengths, (begin, inside, last, unit), forbidden transitions, max_length)
    (5, 5, [5, 3, 1], (1, 2, 3, 4), [(0, 2), (0, 3), (2, 1), (1, 4)], 4),  # O B I L U
    (5, 4, [4, 2], (1, 2, 3, 4), [], 5),  # nothing forbidden, max_length past T
    (4, 4, [4, 3], (0, 1, 2, 3), [], 2),  # no O tag at all
    (7, 3, [3, 3], (5, 6, 3, 1), [(0, 6)], 3),  # tags in any order, other types around
]


@pytest.mark.parametrize(("k", "t", "lengths", "tags", "forbid", "max_len"), BILOU_CASES)
def test_bilou_span_marginals_match_enumeration(k, t, lengths, tags, forbid, max_len):
    em, tr, st, en = _chain(len(lengths), t, k, seed=k * 7 + t, forbid=forbid)
    mask = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]
    em = em.masked_fill(~mask[..., None], 55.0)  # padding values must not matter
    begin, inside, last, unit = tags
    got = span_marginals(
        em, tr, st, en, mask, begin=begin, inside=inside, last=last, unit=unit, max_length=max_len
    )
    assert got.shape == (len(lengths), t, max_len)
    for b, n in enumerate(lengths):
        want = _bilou_brute_force(em[b, :n], tr, st, en, n, tags, max_len)
        torch.testing.assert_close(got[b, :n], want, atol=1e-10, rtol=1e-8)
        assert (got[b, n:] == 0).all()
    # The BIO event differs (a span closed by `last`, not by leaving `inside`).
    bio = span_marginals(em, tr, st, en, mask, begin=begin, inside=inside, max_length=max_len)
    assert not torch.allclose(bio, got)


def test_bilou_span_marginals_in_float32_and_extreme_scores():
    em, tr, st, en = _chain(2, 5, 5, seed=9, forbid=[(0, 2), (0, 3)])
    tags = {"begin": 1, "inside": 2, "last": 3, "unit": 4, "max_length": 3}
    want = span_marginals(em, tr, st, en, **tags)
    got = span_marginals(em.float(), tr.float(), st.float(), en.float(), **tags)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), want, atol=1e-6, rtol=1e-5)
    big = span_marginals(em * 300, tr, st, en, **tags)
    ref = _bilou_brute_force(em[0] * 300, tr, st, en, 5, (1, 2, 3, 4), 3)
    torch.testing.assert_close(big[0], ref, atol=1e-10, rtol=1e-8)


def test_span_marginals_float32_and_extreme_scores_match_float64():
    em, tr, st, en = _chain(2, 6, 3, seed=5, forbid=[(0, 2)])
    want = span_marginals(em, tr, st, en, begin=1, inside=2, max_length=4)
    got = span_marginals(
        em.float(), tr.float(), st.float(), en.float(), begin=1, inside=2, max_length=4
    )
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), want, atol=1e-6, rtol=1e-5)
    # Scores spanning hundreds of nats take the log-space path; still exact.
    big = span_marginals(em * 300, tr, st, en, begin=1, inside=2, max_length=4)
    ref = _span_brute_force(em[0] * 300, tr, st, en, 6, 1, 2, 4)
    torch.testing.assert_close(big[0], ref, atol=1e-10, rtol=1e-8)


@pytest.mark.parametrize("scale", [1e8, 1e12, 1e16, 1e30])
@pytest.mark.parametrize("bilou", [False, True])
def test_span_marginals_stay_exact_at_very_large_scores(scale, bilou):
    """The probabilities had been exp(log_alpha + ... + log_beta - log Z) of log messages as
    large as the scores, which cancelled every digit: a sure span got 0 at 1e30, errors of
    6e-5 at 1e12; they come from the normalised pairwise marginals now, as exact as those."""
    roles = {"begin": 1, "inside": 2} | ({"last": 3, "unit": 4} if bilou else {})
    forbid = [(0, 2), (0, 3), (2, 1), (1, 4)] if bilou else [(0, 2)]
    em, tr, st, en = _chain(3, 5, 5 if bilou else 3, seed=int(math.log10(scale)), forbid=forbid)
    em = em * scale
    lengths = [5, 4, 1]
    mask = torch.arange(5)[None, :] < torch.tensor(lengths)[:, None]
    got = span_marginals(em, tr, st, en, mask, max_length=4, **roles)
    for b, n in enumerate(lengths):
        if bilou:
            want = _bilou_brute_force(em[b, :n], tr, st, en, n, (1, 2, 3, 4), 4)
        else:
            want = _span_brute_force(em[b, :n], tr, st, en, n, 1, 2, 4)
        torch.testing.assert_close(got[b, :n], want, atol=1e-9, rtol=0)
        assert (got[b, n:] == 0).all()


def test_a_sure_span_at_scores_of_1e30_has_probability_1():
    """The probe's case: B I O is the only sequence that counts, and its span had got 0."""
    zeros = torch.zeros(3, dtype=torch.float64)
    em = 1e30 * torch.tensor([[[0.0, 1, 0], [0, 0, 1], [1, 0.3, 0]]], dtype=torch.float64)
    spans = span_marginals(em, torch.zeros(3, 3, dtype=torch.float64), zeros, zeros,
                           begin=1, inside=2, max_length=2)  # fmt: skip
    assert spans[0].tolist() == [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def test_span_marginals_where_only_the_fast_backward_check_sees_a_lost_lineage():
    # Two tags that may not switch: tag 1 falls 800 nats behind, then gains 1200. The fast
    # forward pass holds, the backward check sends the messages to log space.
    inf = float("-inf")
    tr = torch.tensor([[0.0, inf], [inf, 0.0]], dtype=torch.float64)
    st, en = torch.zeros(2, dtype=torch.float64), torch.tensor([0.5, -0.25], dtype=torch.float64)
    em = torch.tensor([[[0, -400.0]] * 2 + [[0, 400.0]] * 3], dtype=torch.float64)
    got = span_marginals(em, tr, st, en, begin=1, inside=1, max_length=5)
    want = _span_brute_force(em[0], tr, st, en, 5, 1, 1, 5)
    torch.testing.assert_close(got[0], want, atol=1e-10, rtol=1e-8)


def test_span_marginals_of_length_one_spans_complete_the_unigram():
    # Every token tagged `begin` opens exactly one span, so the spans starting at t sum
    # to P(y_t = begin) once max_length covers the sentence.
    em, tr, st, en = _chain(3, 5, 4, seed=2)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2, [True] + [False] * 4])
    spans = span_marginals(em, tr, st, en, mask, begin=1, inside=2, max_length=5)
    uni = linear_chain.posterior_marginals(em, tr, st, en, mask).unigram
    torch.testing.assert_close(spans.sum(-1), uni[..., 1])


def test_span_marginals_of_an_impossible_sentence_are_zero():
    em, tr, st, en = _chain(2, 3, 3, seed=3)
    em[1, 1] = float("-inf")  # no tag possible at token 1 of sentence 1
    out = span_marginals(em, tr, st, en, begin=1, inside=2, max_length=2)
    assert (out[1] == 0).all() and (out[0] > 0).any() and not out.isnan().any()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"begin": 3}, "begin"),
        ({"inside": -1}, "inside"),
        ({"max_length": 0}, "max_length"),
        ({"max_length": True}, "max_length"),
        ({"last": 1}, "last and unit"),
        ({"last": 0, "unit": 3}, "unit"),
        ({"mask": torch.tensor([[False, True, True]])}, "mask"),
    ],
)
def test_span_marginals_reject_bad_input(kwargs, match):
    args = {"begin": 1, "inside": 2, "max_length": 2, "mask": None, **kwargs}
    em, tr, st, en = _chain(1, 3, 3, seed=0)
    with pytest.raises(ValueError, match=match):
        span_marginals(em, tr, st, en, **args)


def test_span_arguments_take_numpy_and_tensor_integers():
    """A NumPy or 0-dim tensor integer had been "not a tag index in [0, 3)" to
    span_marginals, and "max() arg is an empty sequence" to span_indicators."""
    em, tr, st, en = _chain(2, 5, 3, seed=1)
    tags = torch.tensor([[1, 2, 0, 1, 2], [0, 1, 1, 2, 0]])
    given = {"begin": np.int64(1), "inside": torch.tensor(2), "max_length": np.int32(3)}
    plain = {"begin": 1, "inside": 2, "max_length": 3}
    want = span_marginals(em, tr, st, en, **plain)
    assert torch.equal(span_marginals(em, tr, st, en, **given), want)
    assert torch.equal(span_indicators(tags, **given), span_indicators(tags, **plain))
    roles = {"begin": torch.tensor(1), "inside": np.int64(2)}
    got = span_queries(want, tags, top_k=np.int64(2), **roles)
    assert all(map(torch.equal, got, span_queries(want, tags, top_k=2, begin=1, inside=2)))


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (1.0, r"begin must be an int, got float 1\.0"),
        (torch.tensor(True), "begin must be an int, got Tensor"),
        (np.True_, "begin must be an int, got bool"),
    ],
)
def test_a_span_argument_of_the_wrong_type_is_named_as_such(value, match):
    em, tr, st, en = _chain(1, 3, 3, seed=0)
    with pytest.raises(ValueError, match=match):
        span_marginals(em, tr, st, en, begin=value, inside=2, max_length=2)
    with pytest.raises(ValueError, match=match):
        span_indicators(em.argmax(-1), begin=value, inside=2, max_length=2)


def test_span_indicators_and_queries_follow_the_gold_tags():
    O, B, I = 0, 1, 2
    tags = torch.tensor([[B, I, I, O, B], [O, B, B, 0, 0]])
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    gold = span_indicators(tags, mask, begin=B, inside=I, max_length=3)
    assert gold.nonzero().tolist() == [[0, 0, 2], [0, 4, 0], [1, 1, 0], [1, 2, 0]]
    # A chain sure of the gold tags gives q = y on every in-sentence span.
    em = torch.where(torch.nn.functional.one_hot(tags, 3).bool(), 0.0, -30.0).double()
    zeros = torch.zeros(3, dtype=torch.float64)
    probs = span_marginals(
        em, zeros.new_zeros(3, 3), zeros, zeros, mask, begin=B, inside=I, max_length=3
    )
    q, y = span_queries(probs, tags, mask, begin=B, inside=I)
    assert q.numel() == (5 + 4 + 3) + (3 + 2 + 1)
    torch.testing.assert_close(q, y, atol=1e-9, rtol=0)
    q, y = span_queries(probs, tags, mask, begin=B, inside=I, top_k=2)
    assert q.numel() == 4 and y.sum() == 4


def test_bilou_span_indicators_and_queries_follow_the_gold_tags():
    O, B, I, L, U = range(5)
    tags = torch.tensor([[B, I, L, O, U], [U, B, L, 0, 0]])
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    spans = {"begin": B, "inside": I, "last": L, "unit": U}
    gold = span_indicators(tags, mask, max_length=3, **spans)
    assert gold.nonzero().tolist() == [[0, 0, 2], [0, 4, 0], [1, 0, 0], [1, 1, 1]]
    # An unclosed B I (no L) is no BILOU span, though BIO would count "B I" as one.
    open_run = span_indicators(torch.tensor([[B, I, O]]), max_length=3, **spans)
    assert not open_run.any()
    # A chain sure of the gold tags gives q = y on every in-sentence span.
    em = torch.where(torch.nn.functional.one_hot(tags, 5).bool(), 0.0, -30.0).double()
    zeros = torch.zeros(5, dtype=torch.float64)
    probs = span_marginals(em, zeros.new_zeros(5, 5), zeros, zeros, mask, max_length=3, **spans)
    q, y = span_queries(probs, tags, mask, **spans)
    assert q.numel() == (5 + 4 + 3) + (3 + 2 + 1) and y.sum() == 4
    torch.testing.assert_close(q, y, atol=1e-9, rtol=0)
    with pytest.raises(ValueError, match="last and unit"):
        span_indicators(tags, mask, begin=B, inside=I, last=L, max_length=2)


def _gold_spans(tags, length, roles, max_length):
    """Span indicators of one sentence by the definitions, position by position."""
    begin, inside, *bilou = roles
    out = torch.zeros(length, max_length, dtype=torch.bool)
    for t, ln in itertools.product(range(length), range(max_length)):
        end = t + ln
        if end >= length:
            continue
        if bilou:
            last, unit = bilou
            middle = all(tags[u] == inside for u in range(t + 1, end))
            out[t, ln] = (
                tags[t] == unit if ln == 0 else (tags[t] == begin and middle and tags[end] == last)
            )
        else:
            run = all(tags[u] == inside for u in range(t + 1, end + 1))
            closed = end + 1 == length or tags[end + 1] != inside
            out[t, ln] = tags[t] == begin and run and closed
    return out


@pytest.mark.parametrize(
    "roles",
    [(1, 2), (1, 1), (0, 1), (1, 2, 3, 4), (1, 1, 2, 3)],  # BIO, IO (begin == inside), BILOU
)
def test_span_indicators_follow_the_definition_whatever_the_roles(roles) -> None:
    """Once, begin == inside (IO tags) gave no gold span at all, where span_marginals of
    the same definition put probability 1 on the spans of the gold path."""
    g = torch.Generator().manual_seed(sum(roles))
    tags = torch.randint(0, 5, (6, 7), generator=g)
    lengths = torch.tensor([7, 6, 3, 1, 7, 5])
    mask = torch.arange(7)[None, :] < lengths[:, None]
    names = ("begin", "inside", "last", "unit")
    kwargs = dict(zip(names, roles))
    got = span_indicators(tags, mask, max_length=4, **kwargs)
    for b, n in enumerate(lengths.tolist()):
        assert torch.equal(got[b, :n], _gold_spans(tags[b].tolist(), n, roles, 4)), b
        assert not got[b, n:].any()
    # The gold path pinned by the emissions: span_marginals agrees, also for IO tags.
    em = torch.where(tags[..., None] == torch.arange(5), 0.0, -1e4).double()
    zeros = torch.zeros(5, dtype=torch.float64)
    marginals = span_marginals(
        em, zeros.new_zeros(5, 5), zeros, zeros, mask, max_length=4, **kwargs
    )
    assert torch.equal(marginals > 0.5, got)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: tag_queries([[[0.5, 0.5]]], torch.zeros(1, 1, dtype=torch.long)), "unigram"),
        (lambda: tag_queries(torch.ones(1, 1, 2) / 2, [[0]]), "tags"),
        (lambda: top_tag_pairs([[0, 1]], None, num_tags=2, top_k=1), "tags"),
        (lambda: tag_pair_queries([[[[1.0]]]], torch.zeros(1, 2, dtype=torch.long)), "pairwise"),
        (lambda: coref_pair_queries([[[1.0]]], torch.zeros(1, 1, dtype=torch.long)), "marginals"),
        (lambda: coref_pair_queries(torch.ones(1, 1, 1), [[0]]), "entity_ids"),
        (
            lambda: tag_queries(
                torch.ones(1, 1, 2) / 2, torch.zeros(1, 1, dtype=torch.long), [[True]]
            ),
            "mask",
        ),
    ],
)
def test_queries_name_an_argument_that_is_not_a_tensor(call, named) -> None:
    """Nested lists had failed with AttributeError: 'list' object has no attribute 'dim'."""
    with pytest.raises(ValueError, match=rf"^{named} must be a torch.Tensor, got list"):
        call()


# ------------------------------------------------------------------ host synchronisations


def _query_calls(mask):
    unigram, pairwise, tags, _ = _random_batch(5)
    em, tr, st, en = _chain(4, 6, 3, seed=2)
    span = {"begin": 1, "inside": 2}
    probs = span_marginals(em, tr, st, en, mask, max_length=2, **span)
    marg = torch.rand(4, 6, 6, generator=torch.Generator().manual_seed(0))
    return {
        tag_queries: lambda: tag_queries(unigram, tags, mask),
        top_tag_pairs: lambda: top_tag_pairs(tags, mask, 3, 2),
        tag_pair_queries: lambda: tag_pair_queries(pairwise, tags, mask, 2),
        span_marginals: lambda: span_marginals(em, tr, st, en, mask, max_length=2, **span),
        span_indicators: lambda: span_indicators(tags, mask, max_length=2, **span),
        span_queries: lambda: span_queries(probs, tags, mask, **span),
        coref_pair_queries: lambda: coref_pair_queries(marg, tags, mask),
    }


def test_each_query_reads_the_device_as_often_as_its_docstring_says():
    """Every function states its host synchronisations. tag_queries had read the bounds
    of the tags' range apart and selected the masked tokens twice (5 reads, now 2),
    tag_pair_queries had checked the tags twice (10, now 3), span_queries the mask
    twice; span_marginals' three (forward_backward's) were not stated."""
    mask = _random_batch(5)[3]
    for function, call in _query_calls(mask).items():
        assert host_reads.count_reads(call) == host_reads.stated_syncs(function), function.__name__
    # An integer mask's values are one more read where the mask is not read anyway (the
    # span functions read it for its left alignment).
    unread = (tag_queries, top_tag_pairs, tag_pair_queries, coref_pair_queries)
    for function, call in _query_calls(mask.int()).items():
        assert host_reads.count_reads(call) == host_reads.stated_syncs(function) + (
            function in unread
        ), function.__name__


def test_tag_pair_queries_with_given_pairs_read_the_device_as_often():
    _, pairwise, tags, mask = _random_batch(5)
    pairs = torch.tensor([[0, 1], [2, 2]])
    assert host_reads.count_reads(lambda: tag_pair_queries(pairwise, tags, mask, pairs=pairs)) == 4


def test_pair_queries_do_not_count_with_bincount(monkeypatch) -> None:
    """torch.bincount reads its ids' min and max back to the host on a GPU: reads the
    docstrings did not state (and tag_pair_queries counted the gold pairs twice)."""

    def refused(*args, **kwargs):
        raise AssertionError("torch.bincount called")

    tags = torch.tensor([[0, 1, 0, 1], [1, 1, 0, 0]])
    expected = top_tag_pairs(tags, None, num_tags=2, top_k=2)
    monkeypatch.setattr(torch, "bincount", refused)
    pairs, counts = top_tag_pairs(tags, None, num_tags=2, top_k=2)
    assert pairs.tolist() == [[0, 1], [1, 0]] and counts.tolist() == [2, 2]
    assert torch.equal(pairs, expected[0])
    out = tag_pair_queries(torch.full((2, 3, 2, 2), 0.25), tags, top_k=2)
    assert out.counts.tolist() == [2, 2]


@pytest.mark.parametrize("bad", ["logits", "nan", "integer", "above one"])
def test_queries_refuse_what_is_not_probabilities(bad: str) -> None:
    """Logits passed for marginals had become queries of q in [-2.3, 2.0] (NaN and int64
    queries too), which the metric then blamed on its own ``probs``."""
    unigram, pairwise, tags, mask = _random_batch(3)
    marg = torch.rand(4, 6, 6, generator=torch.Generator().manual_seed(0))
    ids = torch.randint(0, 3, (4, 6), generator=torch.Generator().manual_seed(1))

    def spoil(x: torch.Tensor) -> torch.Tensor:
        return {
            "logits": torch.randn_like(x) * 3,
            "nan": x * float("nan"),
            "integer": torch.ones_like(x, dtype=torch.long),
            "above one": x * 2 + 0.5,
        }[bad]

    match = r"must be (floating-point probabilities|probabilities in \[0, 1\] where mask)"
    with pytest.raises(ValueError, match="unigram " + match):
        tag_queries(spoil(unigram), tags, mask)
    with pytest.raises(ValueError, match="pairwise " + match):
        tag_pair_queries(spoil(pairwise), tags, mask, top_k=2)
    with pytest.raises(ValueError, match="marginals " + match):
        coref_pair_queries(spoil(marg), ids)


def test_per_tag_must_be_a_flag() -> None:
    unigram, _, tags, mask = _random_batch(3)
    with pytest.raises(ValueError, match="per_tag must be True or False, got 'yes'"):
        tag_queries(unigram, tags, mask, per_tag="yes")


def test_span_queries_refuse_padding_read_as_tokens() -> None:
    """HuggingFace's -100 in the gold tags without a mask: each padding position had been
    a token of no entity, its spans (q = 0, y = 0) queries that lowered the error."""
    O, B, I = 0, 1, 2
    probs = torch.tensor([[[0.75, 0.25], [0.125, 0.0], [0.0, 0.0]]])
    padded = torch.tensor([[B, O, -100]])
    for call in (
        lambda: span_queries(probs, padded, begin=B, inside=I),
        lambda: span_indicators(padded, begin=B, inside=I, max_length=2),
    ):
        with pytest.raises(ValueError, match=r"tags hold -100 where mask is True .*tags != -100"):
            call()
    mask = padded != -100
    q, y = span_queries(probs, padded, mask, begin=B, inside=I)
    assert q.tolist() == [0.75, 0.25, 0.125] and y.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("top_k", [None, 2])
def test_span_queries_of_no_sentences_are_empty(top_k) -> None:
    """A batch of no sentences (a loader's empty last chunk) had raised torch's reshape
    error; it gives no queries, as a batch of empty sentences does."""
    q, y = span_queries(
        torch.zeros(0, 3, 2), torch.zeros(0, 3, dtype=torch.long), begin=1, inside=2, top_k=top_k
    )
    assert q.shape == y.shape == (0,)


def test_spans_inside_mark_the_candidates_within_each_sentence_on_the_masks_device() -> None:
    """The one in-sentence mask of span_queries and the ner reproduction's top-k ranking
    (written twice, one copy on torch's default device)."""
    mask = torch.tensor([[True, True, True], [True, False, False]])
    torch.set_default_device("meta")
    try:
        inside = spans_inside(mask, 2)
    finally:
        torch.set_default_device(None)
    assert inside.device == mask.device and inside.shape == (2, 3, 2)
    assert inside[0].tolist() == [[True, True], [True, True], [True, False]]
    assert inside[1].tolist() == [[True, False], [False, False], [False, False]]
    assert spans_inside(torch.zeros(0, 3, dtype=torch.bool), 2).shape == (0, 3, 2)
    with pytest.raises(ValueError, match="max_length must be"):
        spans_inside(mask, 0)
    assert spans_inside(mask.long(), 2).tolist() == inside.tolist()  # integer 0/1


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        ([[True, True]], "mask must be a torch.Tensor, got list"),
        (torch.ones(1, 2, 3, dtype=torch.bool), r"mask must be a \[B, T\] tensor, got shape"),
        (torch.full((1, 3), 0.5), r"mask must be bool \(or integer 0/1\), got torch.float32"),
        (torch.ones(1, 2, dtype=torch.complex64), "mask must be bool .* got torch.complex64"),
        (torch.tensor([[2, 0, 0]]), "mask must be bool or integer 0/1: it holds other integers"),
        (torch.tensor([[False, True, True]]), "mask must be left-aligned"),
    ],
    ids=["list", "3-d", "float", "complex", "integer 2", "not left-aligned"],
)
def test_spans_inside_checks_its_mask_as_the_other_span_queries_do(mask, message) -> None:
    """It had taken a float mask of 0.5s as 1.5 words a sentence, an integer 2 as two words,
    a mask with a hole as a shorter sentence, and failed in torch on a complex mask."""
    with pytest.raises(ValueError, match=f"^{message}"):
        spans_inside(mask, 2)
