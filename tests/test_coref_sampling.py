"""Sampling core of the antecedent-ranking coreference model against exact enumeration."""

from __future__ import annotations

import itertools
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics.models import coref, coref_sampler
from calib_metrics.models.coref import (
    antecedent_log_probs,
    clusters,
    coreference_marginals,
    entity_roots,
    most_probable_antecedents,
    sample_antecedents,
    sample_entity_roots,
)

# ----------------------------------------------------------------------------- references


def _python_roots(a: list[int]) -> list[int]:
    roots = []
    for i, ai in enumerate(a):
        roots.append(i if ai == i else roots[ai])
    return roots


def _partition(a: list[int]) -> tuple[tuple[int, ...], ...]:
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(_python_roots(a)):
        groups.setdefault(r, []).append(i)
    return tuple(tuple(g) for g in groups.values())


def _enumerate(scores: torch.Tensor, mask: torch.Tensor | None = None):
    """Every antecedent vector of every document with its probability, by brute force.

    Returns per document: a dict antecedent-tuple -> probability (from a softmax written
    here, not the module's), and the exact pairwise matrix and partition distribution.
    """
    bsz, n, _ = scores.shape
    docs = []
    for b in range(bsz):
        length = n if mask is None else int(mask[b].sum())
        probs = []
        for i in range(n):
            if i >= length:
                probs.append({i: 1.0})  # padding: NEW only
                continue
            logits = [float(scores[b, i, j]) for j in range(i + 1)]
            top = max(logits)
            z = sum(math.exp(v - top) for v in logits)
            probs.append({j: math.exp(v - top) / z for j, v in enumerate(logits)})
        joint: dict[tuple[int, ...], float] = {}
        for a in itertools.product(*[sorted(p) for p in probs]):
            joint[a] = math.prod(probs[i][ai] for i, ai in enumerate(a))
        pair = [[0.0] * n for _ in range(n)]
        parts: dict[tuple, float] = {}
        for a, p in joint.items():
            roots = _python_roots(list(a))
            for i in range(n):
                for j in range(n):
                    if roots[i] == roots[j]:
                        pair[i][j] += p
            key = _partition(list(a))
            parts[key] = parts.get(key, 0.0) + p
        pair_t = torch.tensor(pair, dtype=torch.float64)
        docs.append({"probs": probs, "joint": joint, "pair": pair_t, "parts": parts})
    return docs


def _padded_batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    scores = 2.0 * torch.randn(3, 6, 6, generator=g, dtype=torch.float64)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2, [True] * 2 + [False] * 4])
    return scores, mask


# ----------------------------------------------------------------------------- log-probs


def test_log_probs_match_enumeration_and_padding():
    scores, mask = _padded_batch()
    logp = antecedent_log_probs(scores, mask)
    docs = _enumerate(scores, mask)
    for b, doc in enumerate(docs):
        for i, row in enumerate(doc["probs"]):
            expected = torch.zeros(6, dtype=torch.float64)
            for j, p in row.items():
                expected[j] = p
            torch.testing.assert_close(logp[b, i].exp(), expected)
    assert torch.isneginf(
        logp[:, torch.triu_indices(6, 6, 1)[0], torch.triu_indices(6, 6, 1)[1]]
    ).all()
    # Real mentions never attach to padding; padding is all NEW.
    assert logp[1, 4, 4] == 0 and logp[2, 3, 3] == 0
    assert torch.isneginf(logp[2, 3, :3]).all()


def test_first_mention_and_padding_tolerate_inf_and_nan_scores():
    scores, mask = _padded_batch()
    dirty = scores.clone()
    dirty[:, 0, 0] = float("-inf")  # mention 0 has only NEW: its score cannot matter
    dirty[1, 4:, :] = float("nan")  # padding rows
    dirty[2, :, 2:] = float("nan")  # padding columns and ignored j > i entries
    dirty[0, 1, 3] = float("inf")  # ignored (j > i)
    torch.testing.assert_close(
        coreference_marginals(dirty, mask=mask), coreference_marginals(scores, mask=mask)
    )


@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("mention", [0, 1])  # the first; one after padding only
def test_a_real_mention_without_candidates_refuses_a_nan_or_plus_inf_new_score(bad, mention):
    """Its NEW score was overwritten unread: coreference_marginals of a lone NaN gave 1."""
    scores = torch.zeros(1, 3, 3)
    scores[0, mention, mention] = bad
    mask = torch.tensor([[mention == 0, True, True]])
    calls = (
        lambda: coreference_marginals(scores, mask=mask),
        lambda: coreference_marginals(scores, 4, mask, torch.Generator().manual_seed(0)),
        lambda: sample_antecedents(scores, 4, mask),
        lambda: antecedent_log_probs(scores, mask),
        lambda: most_probable_antecedents(scores, mask),
    )
    for call in calls:
        with pytest.raises(ValueError, match=r"NaN or \+inf"):
            call()


# ----------------------------------------------------------------------------- exact marginals


@pytest.mark.parametrize("block", [1, 2, 4, 64])
def test_exact_marginals_match_enumeration(block):
    scores, mask = _padded_batch(seed=block)
    logp = antecedent_log_probs(scores, mask)
    q = coref._exact_marginals(logp, block=block)
    for b, doc in enumerate(_enumerate(scores, mask)):
        torch.testing.assert_close(q[b], doc["pair"], atol=1e-12, rtol=0)


def test_public_exact_marginals_padding_and_dtype():
    scores, mask = _padded_batch(seed=3)
    q = coreference_marginals(scores.float(), mask=mask)
    assert q.dtype == torch.float32 and q.shape == (3, 6, 6)
    for b, doc in enumerate(_enumerate(scores, mask)):
        torch.testing.assert_close(q[b].double(), doc["pair"], atol=1e-6, rtol=0)
    # Padding: 1 on the diagonal, 0 elsewhere in its rows and columns.
    assert torch.equal(q[2, 2:, :], torch.eye(6)[2:, :])
    assert torch.equal(q[2, :, 2:], torch.eye(6)[:, 2:])
    # A padded document equals the same document alone.
    alone = coreference_marginals(scores[1:2, :4, :4], mask=None)
    torch.testing.assert_close(coreference_marginals(scores, mask=mask)[1, :4, :4], alone[0])


@pytest.mark.slow
def test_exact_marginals_long_document_properties():
    g = torch.Generator().manual_seed(1)
    n = 3000
    scores = torch.randn(1, n, n, generator=g)
    scores.diagonal(dim1=-2, dim2=-1).add_(4.0)  # many NEW choices: a mix of entities
    q = coreference_marginals(scores)
    assert q.shape == (1, n, n)
    assert torch.equal(q.diagonal(dim1=-2, dim2=-1), torch.ones(1, n))
    assert torch.equal(q, q.transpose(-1, -2))
    assert bool((q >= 0).all()) and bool((q <= 1).all())
    # Pointers go backwards, so the first k mentions' marginals depend only on their own
    # scores: a prefix computed alone must agree, across many DP blocks.
    k = 200
    prefix = coreference_marginals(scores[:, :k, :k].double())
    torch.testing.assert_close(q[:, :k, :k].double(), prefix, atol=1e-6, rtol=0)
    # ... and the sampled estimate of that block agrees within Monte Carlo error.
    est = coreference_marginals(
        scores[:, :k, :k], n_samples=1000, generator=torch.Generator().manual_seed(2)
    )
    sigma = (prefix * (1 - prefix) / 1000).clamp_min(0).sqrt()
    assert bool(((est.double() - prefix).abs() <= 5 * sigma + 1e-3).all())


def test_exact_dp_matches_naive_recursion_across_blocks():
    g = torch.Generator().manual_seed(4)
    scores = 3.0 * torch.randn(2, 150, 150, generator=g, dtype=torch.float64)
    mask = torch.arange(150)[None, :] < torch.tensor([[150], [97]])
    p = antecedent_log_probs(scores, mask).exp()
    naive = torch.zeros(2, 150, 150, dtype=torch.float64)
    for i in range(150):
        naive[:, i, i] = 1.0
        row = (p[:, i : i + 1, :i] @ naive[:, :i, :i]).squeeze(1)
        naive[:, i, :i] = row
        naive[:, :i, i] = row
    torch.testing.assert_close(coreference_marginals(scores, mask=mask), naive)


# ----------------------------------------------------------------------------- sampling


def test_sample_contract_and_padding():
    scores, mask = _padded_batch()
    a = sample_antecedents(scores, 500, mask=mask, generator=torch.Generator().manual_seed(0))
    assert a.shape == (500, 3, 6) and a.dtype == torch.long
    assert bool((a >= 0).all()) and bool((a <= torch.arange(6)).all())
    assert bool((a[:, 1, 4:] == torch.arange(4, 6)).all())
    assert bool((a[:, 2, 2:] == torch.arange(2, 6)).all())
    assert bool((a[:, 1, :4] < 4).all())  # never attach to padding
    assert bool((a[:, :, 0] == 0).all())


def test_sampled_antecedent_and_clustering_frequencies_match_enumeration():
    scores, mask = _padded_batch(seed=5)
    n_samples = 20000
    a = sample_antecedents(scores, n_samples, mask=mask, generator=torch.Generator().manual_seed(7))
    docs = _enumerate(scores, mask)
    for b, doc in enumerate(docs):
        for i, row in enumerate(doc["probs"]):
            for j, p in row.items():
                freq = (a[:, b, i] == j).double().mean().item()
                assert abs(freq - p) <= 5 * math.sqrt(p * (1 - p) / n_samples) + 1e-9
        # Distribution over clusterings (the paper's CC(a)), for every partition.
        counts: dict[tuple, int] = {}
        for row in a[:, b].tolist():
            key = _partition(row)
            counts[key] = counts.get(key, 0) + 1
        assert set(counts) <= set(doc["parts"])
        for key, p in doc["parts"].items():
            # 5 sigma, plus 3 draws: a partition expected 0.02 times may well occur once
            # (the normal bound alone fails there), while 4 or more stay below 1e-8.
            excess = abs(counts.get(key, 0) - n_samples * p)
            assert excess <= 5 * math.sqrt(n_samples * p * (1 - p)) + 3


def test_sampled_marginals_match_exact_within_monte_carlo_error():
    scores, mask = _padded_batch(seed=6)
    n_samples = 20000
    est = coreference_marginals(
        scores, n_samples=n_samples, mask=mask, generator=torch.Generator().manual_seed(8)
    )
    for b, doc in enumerate(_enumerate(scores, mask)):
        exact = doc["pair"]
        sigma = (exact * (1 - exact) / n_samples).clamp_min(0).sqrt()
        assert bool(((est[b] - exact).abs() <= 5 * sigma + 1e-9).all())
    assert torch.equal(est, est.transpose(-1, -2))
    assert torch.equal(est.diagonal(dim1=-2, dim2=-1), torch.ones(3, 6, dtype=est.dtype))
    assert torch.equal(est[2, 2:, :], torch.eye(6, dtype=est.dtype)[2:, :])


def test_sampled_marginals_equal_fraction_of_sampled_clusterings(monkeypatch):
    # Small chunks on purpose: the estimate and the samples must not depend on chunking.
    scores, mask = _padded_batch(seed=9)
    a = sample_antecedents(scores, 300, mask=mask, generator=torch.Generator().manual_seed(1))
    roots = entity_roots(a)
    fraction = (roots[..., :, None] == roots[..., None, :]).double().mean(0)
    monkeypatch.setattr(coref_sampler, "_CHUNK_DRAWS", 7)
    monkeypatch.setattr(coref_sampler, "_BUILD_ENTRIES", 7)
    monkeypatch.setattr(coref_sampler, "_ROOT_BLOCK", 7)
    monkeypatch.setattr(coref, "_PAIR_CHUNK_ELEMENTS", 500)
    a_chunked = sample_antecedents(
        scores, 300, mask=mask, generator=torch.Generator().manual_seed(1)
    )
    assert torch.equal(a, a_chunked)
    est = coreference_marginals(
        scores, n_samples=300, mask=mask, generator=torch.Generator().manual_seed(1)
    )
    torch.testing.assert_close(est, fraction)


@pytest.mark.parametrize("n_samples", [3, 300])  # the search path (S < N) and the alias path
def test_sample_entity_roots_equals_roots_of_the_same_draws(n_samples, monkeypatch):
    scores, mask = _padded_batch(seed=5)
    a = sample_antecedents(scores, n_samples, mask, torch.Generator().manual_seed(2))
    expected = entity_roots(a)
    fused = sample_entity_roots(scores, n_samples, mask, torch.Generator().manual_seed(2))
    assert fused.dtype == torch.long and torch.equal(fused, expected)
    monkeypatch.setattr(coref_sampler, "_ROOT_BLOCK", 7)  # several blocks, early stops
    again = sample_entity_roots(scores, n_samples, mask, torch.Generator().manual_seed(2))
    assert torch.equal(again, expected)


def test_sample_entity_roots_checks_its_arguments():
    with pytest.raises(ValueError, match="n_samples"):
        sample_entity_roots(torch.zeros(1, 3, 3), 0)
    with pytest.raises(ValueError, match="scores"):
        sample_entity_roots(torch.zeros(3, 3), 5)


def test_forbidden_antecedents_are_never_sampled():
    scores = torch.zeros(1, 4, 4)
    scores[0, 3, :3] = float("-inf")  # mention 3 must be NEW
    scores[0, 2, 2] = float("-inf")  # mention 2 must attach
    scores[0, 2, 0] = float("-inf")  # ... and only to mention 1
    a = sample_antecedents(scores, 2000, generator=torch.Generator().manual_seed(0))
    assert bool((a[:, 0, 3] == 3).all()) and bool((a[:, 0, 2] == 1).all())


def test_sampling_is_deterministic_given_generator():
    scores, mask = _padded_batch()
    first = sample_antecedents(scores, 50, mask, torch.Generator().manual_seed(3))
    second = sample_antecedents(scores, 50, mask, torch.Generator().manual_seed(3))
    assert torch.equal(first, second)


# ----------------------------------------------------------------------------- roots, clusters


def test_entity_roots_hand_made():
    a = torch.tensor([0, 0, 1, 3, 2, 3, 6, 4])
    assert entity_roots(a).tolist() == [0, 0, 0, 3, 0, 3, 6, 0]
    assert entity_roots(torch.arange(5)).tolist() == [0, 1, 2, 3, 4]
    assert entity_roots(torch.tensor([0])).tolist() == [0]
    assert entity_roots(torch.zeros(2, 0, dtype=torch.long)).shape == (2, 0)
    # Leading dims, and int32 input.
    batch = torch.stack([a, torch.arange(8)]).reshape(2, 1, 8).int()
    assert entity_roots(batch).tolist() == [[[0, 0, 0, 3, 0, 3, 6, 0]], [list(range(8))]]


def test_entity_roots_long_chains():
    n = 3000
    chain = torch.cat([torch.zeros(1, dtype=torch.long), torch.arange(n - 1)])
    assert bool((entity_roots(chain) == 0).all())
    rng = random.Random(0)
    vectors = []
    for _ in range(4):
        # Long random chains: mostly a[i] = i - 1 or a short hop back, a few NEW.
        a = [0]
        for i in range(1, n):
            r = rng.random()
            a.append(i if r < 0.01 else i - 1 if r < 0.8 else rng.randrange(i))
        vectors.append(a)
    got = entity_roots(torch.tensor(vectors).reshape(2, 2, n))
    assert got.reshape(4, n).tolist() == [_python_roots(a) for a in vectors]


@pytest.mark.parametrize(
    "layout",
    [
        lambda a: a.permute(1, 0, 2),  # samples [S, B, N] read document-major
        lambda a: a.transpose(0, 1)[:, ::2],  # and a strided slice of them
        lambda a: a.flip(0),  # a copy: contiguous, for reference
    ],
    ids=["permuted", "permuted strided", "contiguous"],
)
@pytest.mark.parametrize("block", [coref_sampler._ROOT_BLOCK, 7])
def test_entity_roots_of_a_non_contiguous_tensor(layout, block, monkeypatch):
    """The roots were written into empty_like(antecedents), which copies a permutation's
    strides, then viewed as rows: torch's RuntimeError "view size is not compatible"."""
    monkeypatch.setattr(coref_sampler, "_ROOT_BLOCK", block)
    scores, mask = _padded_batch(seed=5)
    a = layout(sample_antecedents(scores, 9, mask, torch.Generator().manual_seed(2)))
    want = torch.tensor([_python_roots(row) for row in a.reshape(-1, 6).tolist()])
    got = entity_roots(a)
    assert got.shape == a.shape and torch.equal(got.reshape(-1, 6), want)
    assert torch.equal(got, entity_roots(a.contiguous()))


def test_coref_functions_take_non_contiguous_scores():
    """Every public function taking scores gives for a permuted view what it gives for
    its contiguous copy (none had the empty_like-then-view pattern of entity_roots)."""
    scores = 2.0 * torch.randn(6, 3, 6, generator=torch.Generator().manual_seed(8))
    view, copy = scores.permute(1, 0, 2), scores.permute(1, 0, 2).contiguous()
    assert not view.is_contiguous()
    for fn in (antecedent_log_probs, most_probable_antecedents, coreference_marginals):
        assert torch.equal(fn(view), fn(copy))
    for fn in (sample_antecedents, sample_entity_roots, coreference_marginals):
        for n_samples in (2, 20):  # the search path (S < N) and the alias path
            drawn = [
                fn(s, n_samples, generator=torch.Generator().manual_seed(1)) for s in (view, copy)
            ]
            assert torch.equal(*drawn)


def test_clusters_and_most_probable():
    assert clusters(torch.tensor([0, 0, 2, 1, 3, 5])) == [[0, 1, 3, 4], [2], [5]]
    roots = entity_roots(torch.tensor([0, 0, 2, 1, 3, 5]))
    assert clusters(roots) == [[0, 1, 3, 4], [2], [5]]
    scores, mask = _padded_batch(seed=11)
    best = most_probable_antecedents(scores, mask)
    for b, doc in enumerate(_enumerate(scores, mask)):
        argmax = max(doc["joint"], key=doc["joint"].get)
        assert best[b].tolist() == list(argmax)
        assert clusters(best[b]) == [list(c) for c in _partition(list(argmax))]


def test_the_1_best_clustering_is_not_called_the_most_probable_one():
    """docs/events.md, docs/coref.md and paper/coref.py called the 1-best clustering "the
    (single) most probable clustering"; it is the clustering of the most probable antecedent
    vector, and several vectors give one clustering."""
    # Mention 1 -> 0 (0.55) or NEW; mention 2 -> 0, 1 (0.3 each) or NEW (0.4).
    probs = [[1.0], [0.55, 0.45], [0.3, 0.3, 0.4]]
    scores = torch.full((1, 3, 3), -math.inf, dtype=torch.float64)
    for i, row in enumerate(probs):
        scores[0, i, : i + 1] = torch.tensor(row, dtype=torch.float64).log()
    by_clustering: dict[tuple, float] = {}
    for a in itertools.product(*(range(i + 1) for i in range(3))):
        p = math.prod(probs[i][j] for i, j in enumerate(a))
        key = _partition(list(a))
        by_clustering[key] = by_clustering.get(key, 0.0) + p
    best = most_probable_antecedents(scores)[0].tolist()
    assert best == [0, 0, 2] and by_clustering[_partition(best)] == pytest.approx(0.22)
    assert max(by_clustering, key=by_clustering.get) == ((0, 1, 2),)  # 0.33
    root = Path(__file__).resolve().parents[1]
    texts = [root / "README.md", *(root / "docs").glob("*.md")]
    texts += sorted((root / "calib_metrics").rglob("*.py"))
    for path in texts:
        text = " ".join(path.read_text(encoding="utf-8").split())
        for found in re.finditer(r"most probable clustering", text):
            before = text[max(0, found.start() - 40) : found.start()]
            assert before.endswith("not always the "), f"{path.name}: ...{before}{found[0]}"


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: coreference_marginals(torch.zeros(3, 3)), "3 dims"),
        (lambda: sample_antecedents(torch.zeros(1, 3, 4), 2), "square"),
        (lambda: antecedent_log_probs(torch.zeros(1, 3, 3, dtype=torch.long)), "floating"),
        (lambda: coreference_marginals(torch.zeros(2, 3, 3), mask=torch.ones(2, 4)), "mask"),
        (lambda: sample_antecedents(torch.zeros(2, 3, 3), 5, mask=torch.ones(3)), "mask"),
        (lambda: sample_antecedents(torch.zeros(1, 3, 3), 0), "n_samples"),
        (lambda: coreference_marginals(torch.zeros(1, 3, 3), n_samples=2.5), "n_samples"),
        (lambda: coreference_marginals(torch.zeros(1, 3, 3), n_samples=True), "n_samples"),
        (
            lambda: coreference_marginals(
                torch.tensor([[[0.0, 0, 0], [float("nan"), 0, 0], [0, 0, 0]]])
            ),
            "NaN",
        ),
        (
            lambda: sample_antecedents(
                torch.tensor([[[0.0, 0], [float("-inf"), float("-inf")]]]), 3
            ),
            "-inf",
        ),
        (lambda: entity_roots(torch.tensor([0.0, 1.0])), "integer"),
        (lambda: entity_roots(torch.tensor([0, 2, 1])), "a\\[..., i\\] <= i"),
        (lambda: entity_roots(torch.tensor([0, -1])), "a\\[..., i\\] <= i"),
        (lambda: entity_roots(torch.tensor(0)), "0-dim"),
        (lambda: clusters(torch.zeros(2, 3, dtype=torch.long)), "one antecedent vector"),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_empty_documents_and_gradients():
    empty = torch.zeros(2, 0, 0)
    assert coreference_marginals(empty).shape == (2, 0, 0)
    assert coreference_marginals(empty, n_samples=3).shape == (2, 0, 0)
    assert sample_antecedents(empty, 4).shape == (4, 2, 0)
    # Training goes through the log-probabilities; the marginals are evaluation-only.
    scores = torch.randn(1, 5, 5, requires_grad=True)
    logp = antecedent_log_probs(scores)
    logp[0, 4, :2].logsumexp(-1).backward()
    assert scores.grad is not None and bool(scores.grad[0, 4, :5].ne(0).all())
    assert bool(scores.grad[0, :4].eq(0).all())
    assert not coreference_marginals(scores).requires_grad


def _peaked(peak: float, mentions: int = 60):
    """Two documents with peaked rows, a forbidden column and padding, float64."""
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(2, mentions, mentions, generator=g, dtype=torch.float64)
    scores[:, :, ::7] += peak
    scores[:, :, 5] = float("-inf")
    mask = torch.ones(2, mentions, dtype=torch.bool)
    mask[1, mentions - 10 :] = False
    return scores, mask


@pytest.mark.parametrize("peak", [0.0, 8.0, 40.0])
def test_alias_tables_give_every_choice_its_probability(peak):
    # Column c of mention i keeps 1 / (i + 1) times threshold - c and hands the rest to
    # its alias, c + shift: summed per choice this must be P(a_i = j), and a zero-probability
    # choice (forbidden, padding, j > i) must keep nothing and be nobody's alias.
    scores, mask = _peaked(peak)
    probs = coref._probabilities(scores, coref._check_scores(scores, mask))
    t = coref_sampler.tables(probs.clone())
    n = probs.shape[-1]
    keep = t.threshold.view(2, n, n) - torch.arange(n, dtype=torch.float64)
    alias = t.shift.view(2, n, n).long() + torch.arange(n)
    choices = torch.ones(n, n, dtype=torch.bool).tril()
    assert bool(((keep[:, choices] >= 0) & (keep[:, choices] <= 1)).all())
    assert bool((alias[:, choices] <= torch.arange(n)[:, None].expand(n, n)[choices]).all())
    mass = torch.where(choices, keep, 0.0)
    mass.scatter_add_(-1, alias, torch.where(choices, 1 - keep, 0.0))
    width = torch.arange(1, n + 1, dtype=torch.float64)[:, None]
    torch.testing.assert_close(mass / width, probs, atol=1e-14, rtol=0)
    zero = (probs == 0) & choices
    assert bool(zero.any()) and bool((keep[zero] == 0).all())
    handed = torch.zeros_like(zero)
    handed.scatter_(-1, alias, choices & (keep < 1))
    assert not bool((handed & (probs == 0)).any())


def test_alias_tables_rounding_edges():
    # Mention 7 (8 choices, w = 8 P): a heavy column whose excess (2^-52) is below one
    # ulp of the running excess sum (2), a column of w exactly 1, a zero; mention 6 is
    # uniform (no heavy column at all). Every choice still gets its probability, and
    # nothing is handed to the zero.
    w = torch.tensor([3.0, 1 + 2**-52, 0.5, 0.5, 1.0, 1.0, 1 - 2**-52, 0.0], dtype=torch.float64)
    probs = torch.zeros(1, 8, 8, dtype=torch.float64)
    for i in range(7):
        probs[0, i, : i + 1] = 1.0 / (i + 1)
    probs[0, 7] = w / 8
    t = coref_sampler.tables(probs.clone())
    col = torch.arange(8)
    flat = t.base[0, 7].long() + col
    keep = t.threshold[flat] - col
    alias = col + t.shift[flat].long()
    mass = keep.clone().scatter_add_(0, alias, 1 - keep)
    torch.testing.assert_close(mass / 8, probs[0, 7], atol=1e-15, rtol=0)
    assert keep[7] == 0 and not bool(((alias == 7) & (keep < 1)).any())
    assert keep[1] == 1  # the invisible excess is kept in its own column
    uniform = t.base[0, 6].long() + torch.arange(7)
    assert bool((t.threshold[uniform] - torch.arange(7) == 1).all())


@pytest.mark.parametrize("peak", [0.0, 40.0])
def test_alias_draws_match_the_probabilities(peak):
    # Chi-square of 400k draws per mention against P(a_i = j) (choices expected fewer
    # than 5 times pooled), and never a zero-probability choice.
    scores, mask = _peaked(peak, mentions=12)
    probs = coref._probabilities(scores, coref._check_scores(scores, mask))
    n_samples = 400_000
    a = sample_antecedents(scores, n_samples, mask, torch.Generator().manual_seed(2))
    chi2, dof = 0.0, 0
    for b in range(2):
        for i in range(12):
            counts = torch.bincount(a[:, b, i], minlength=12).double()
            expected = n_samples * probs[b, i]
            assert bool((counts[expected == 0] == 0).all())
            rare = expected < 5
            counts = torch.cat([counts[~rare], counts[rare].sum().view(1)])
            expected = torch.cat([expected[~rare], expected[rare].sum().view(1)])
            if expected[-1] < 5:  # too rare to pool into a bin of its own
                assert float(counts[-1]) <= float(expected[-1]) + 3
                counts, expected = counts[:-1], expected[:-1]
            chi2 += float(((counts - expected) ** 2 / expected).sum())
            dof += expected.numel() - 1
    assert abs(chi2 - dof) <= 5 * math.sqrt(2 * dof)


@pytest.mark.parametrize("mentions", [3, 60, 600])
def test_draws_follow_the_alias_rule_of_the_generator_uniforms(monkeypatch, mentions):
    # In small chunks, the draws are the alias rule applied to the generator's uniforms
    # taken sample-major: x = u * (i + 1), c = floor(x), c if x < threshold else alias.
    g = torch.Generator().manual_seed(5)
    scores = 3.0 * torch.randn(2, mentions, mentions, generator=g)
    t = coref_sampler.tables(coref._probabilities(scores, coref._check_scores(scores, None)))
    monkeypatch.setattr(coref_sampler, "_CHUNK_DRAWS", 5 * mentions)
    got = coref_sampler.draw(t, 23, torch.Generator().manual_seed(9))
    g = torch.Generator().manual_seed(9)
    u = torch.rand((23, 2, mentions), generator=g, dtype=torch.float64)
    x = u * torch.arange(1, mentions + 1, dtype=torch.float64)
    col = x.long()
    flat = col + torch.arange(2 * mentions).view(2, mentions) * mentions
    want = torch.where(x < t.threshold[flat], col, col + t.shift[flat].long())
    assert torch.equal(got, want)
    assert bool((want != col).any()) and bool((want == col).any())


def test_fewer_samples_than_mentions_search_the_cumulative_probabilities(monkeypatch):
    # Below N samples the tables do not pay: each draw is the first index whose
    # normalised cumulative probability exceeds its uniform (in small chunks here), and
    # zero-probability choices (a forbidden NEW included) are still never drawn.
    scores, mask = _peaked(8.0)
    scores[0, 40, 40] = float("-inf")
    monkeypatch.setattr(coref_sampler, "_SEARCH_DRAWS", 7 * 60)
    got = sample_antecedents(scores, 59, mask, torch.Generator().manual_seed(4))
    probs = coref._probabilities(scores, coref._check_scores(scores, mask))
    cdf = probs.cumsum(-1)
    cdf = cdf / cdf[..., -1:]
    cdf = cdf.masked_fill(torch.ones(60, 60, dtype=torch.bool).triu(), float("inf"))
    u = torch.rand((59, 2, 60), generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    want = torch.searchsorted(cdf, u.permute(1, 2, 0).contiguous(), right=True)
    assert torch.equal(got, want.permute(2, 0, 1))
    drawn = torch.zeros(2, 60, 60, dtype=torch.bool)
    drawn.scatter_(-1, got.permute(1, 2, 0), True)
    assert not bool((drawn & (probs == 0)).any()) and bool((got[:, 0, 40] < 40).all())


def test_the_search_table_divides_every_row_by_its_own_total_whatever_the_threads():
    """The totals were read from the tensor being divided: where two threads split a row,
    its first part could be divided by its last entry already overwritten with 1, so
    that its cumulative probabilities stopped short of 1 and a uniform passed the last
    possible choice to draw a NEW of probability 0."""
    b, n = 3, 301  # a row straddles the split of the division between two threads
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(b, n, n, generator=g, dtype=torch.float64).tril_(-1)
    probs[:, 0, 0] = 1.0
    probs /= 2 * probs.sum(-1, keepdim=True)  # rows of total 1/2; NEW impossible from i = 1
    want = probs.cumsum(-1)
    want = want / want[..., -1:]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        table = coref_sampler.cumulative(probs.clone())
    finally:
        torch.set_num_threads(threads)
    # Up to the last possible choice, j = i - 1, which no uniform in [0, 1) may pass.
    before = torch.ones(n, n, dtype=torch.bool).tril_(-2)
    assert torch.equal(table[:, before], want[:, before])
    assert bool((table.diagonal(-1, 1, 2) >= 1).all())
    drawn = coref_sampler.draw(table, 20, g)
    assert bool((probs.gather(-1, drawn.permute(1, 2, 0)) > 0).all())


def test_in_place_roots_equal_roots(monkeypatch):
    # The sampled estimate overwrites its draws with their roots; small blocks exercise
    # the early stop and the in-place last round block by block.
    scores, mask = _padded_batch(seed=12)
    a = sample_antecedents(scores, 300, mask=mask, generator=torch.Generator().manual_seed(4))
    want = entity_roots(a)
    monkeypatch.setattr(coref_sampler, "_ROOT_BLOCK", 7)
    assert torch.equal(coref_sampler.roots(a.clone(), in_place=True, check=False), want)
    # Two mentions: one round of pointer jumping, which must not read what it writes.
    two = sample_antecedents(torch.zeros(1, 2, 2), 50, generator=torch.Generator().manual_seed(1))
    assert 0 < int(two[:, 0, 1].sum()) < 50
    assert torch.equal(coref_sampler.roots(two.clone(), in_place=True), two)


def test_in_place_roots_match_and_long_chains():
    chain = torch.cat([torch.zeros(1, dtype=torch.long), torch.arange(999)]).repeat(3, 1)
    assert bool((coref_sampler.roots(chain.clone(), in_place=True) == 0).all())
    a = torch.tensor([[0, 0, 1, 3, 2, 3, 6, 4]])
    assert coref_sampler.roots(a.clone(), in_place=True).tolist() == [[0, 0, 0, 3, 0, 3, 6, 0]]
    assert coref_sampler.roots(torch.tensor([[0, 0]]), in_place=True).tolist() == [[0, 0]]


@pytest.mark.parametrize("flag", ["in_place", "check"])
def test_roots_flags_must_be_true_or_false(flag):
    """A non-empty string is truthy: in_place="no" had overwritten the caller's tensor."""
    a = torch.tensor([[0, 0, 1, 3]])
    with pytest.raises(ValueError, match=f"{flag} must be True or False, got 'no'"):
        coref_sampler.roots(a, **{flag: "no"})
    assert a.tolist() == [[0, 0, 1, 3]]


# ------------------------------------------------------------------ low precision, n_samples


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_sampled_marginals_divide_the_counts_in_a_wide_dtype(dtype):
    """Past 65,504 samples a float16 count overflowed to inf (every marginal inf), and
    bfloat16 rounded the counts to 8 significant bits before dividing: the fraction is
    now taken in float64 and cast once, so it is the float64 estimate rounded."""
    n_samples = 70_000
    peaked = torch.tensor([[[0.0, 0.0], [20.0, 0.0]]], dtype=dtype)
    out = coreference_marginals(peaked, n_samples, generator=torch.Generator().manual_seed(0))
    assert out.dtype == dtype and torch.equal(out, torch.ones_like(out))
    scores = torch.zeros(1, 4, 4)  # every pair near 1/2: the counts are not round
    wide = coreference_marginals(
        scores.double(), n_samples, generator=torch.Generator().manual_seed(1)
    )
    low = coreference_marginals(
        scores.to(dtype), n_samples, generator=torch.Generator().manual_seed(1)
    )
    assert low.dtype == dtype and torch.equal(low, wide.to(dtype))


@pytest.mark.parametrize(
    "n_samples",
    [np.int64(3), torch.tensor(3), torch.tensor([3], dtype=torch.int32)],
    ids=["numpy int64", "0-dim tensor", "one-element int32 tensor"],
)
def test_n_samples_takes_what_operator_index_takes(n_samples):
    """np.int64(3) and torch.tensor(3) had been refused ("must be a positive int"), where
    the queries' integer options (max_length, top_k) take them."""
    from calib_metrics.models import linear_chain

    scores = torch.zeros(2, 3, 3)
    for fn in (sample_antecedents, sample_entity_roots, coreference_marginals):
        expected = fn(scores, 3, generator=torch.Generator().manual_seed(0))
        got = fn(scores, n_samples, generator=torch.Generator().manual_seed(0))
        assert torch.equal(got, expected)
    em, tr = torch.zeros(1, 3, 2), torch.zeros(2, 2)
    chain = linear_chain.sample(em, tr, tr[0], tr[0], n_samples=n_samples)
    assert chain.shape == (3, 1, 3)


@pytest.mark.parametrize(
    "bad",
    [True, torch.tensor(True), 3.0, torch.tensor(3.0), 0, torch.tensor(-1), "3", 2**31, 2**63],
    ids=[
        "bool",
        "bool tensor",
        "float",
        "float tensor",
        "zero",
        "negative tensor",
        "str",
        "2**31",
        "2**63",
    ],
)
def test_n_samples_still_refuses_bools_floats_and_counts_out_of_range(bad):
    """2**63 had been torch's C++ stack dump, 2**62 its storage overflow."""
    from calib_metrics.models import linear_chain

    em, tr = torch.zeros(1, 3, 2), torch.zeros(2, 2)
    for call in (
        lambda: sample_antecedents(torch.zeros(1, 3, 3), bad),
        lambda: sample_entity_roots(torch.zeros(1, 3, 3), bad),
        lambda: coreference_marginals(torch.zeros(1, 3, 3), n_samples=bad),
        lambda: linear_chain.sample(em, tr, tr[0], tr[0], n_samples=bad),
    ):
        with pytest.raises(ValueError, match=r"^n_samples must be"):
            call()


@pytest.mark.parametrize("n_samples", [None, 10])
def test_coreference_marginals_check_the_generator_even_when_exact(n_samples) -> None:
    """n_samples=None takes no draws, but generator=5 had passed without a word there
    (and been refused with n_samples set)."""
    with pytest.raises(ValueError, match=r"generator must be a torch\.Generator or None"):
        coreference_marginals(torch.randn(2, 4, 4), n_samples=n_samples, generator=5)
