"""Tests of structured-output-to-(q, y) queries: tags, tag pairs, coreference pairs."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.queries import coref_pair_queries, tag_pair_queries, tag_queries, top_tag_pairs


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
