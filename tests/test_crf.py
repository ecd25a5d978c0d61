"""Tests of the CRF tagger: pytorch-crf's likelihood, and CRFsuite as a training oracle."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.models.crf import CRFTagger, length_chunks


@pytest.fixture
def one_thread():
    # Tiny per-step products: a second thread only adds synchronisation.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _hmm_corpus(n: int, num_tags: int, vocab: int, seed: int = 0, max_len: int = 8):
    """Sentences from a random HMM, so that tags are predictable from words and context."""
    g = torch.Generator().manual_seed(seed)
    trans = torch.softmax(2 * torch.randn(num_tags, num_tags, generator=g), -1)
    emit = torch.softmax(2 * torch.randn(num_tags, vocab - 1, generator=g), -1)
    sentences = []
    for _ in range(n):
        length = int(torch.randint(1, max_len + 1, (1,), generator=g))
        ys = [int(torch.randint(num_tags, (1,), generator=g))]
        for _ in range(length - 1):
            ys.append(int(torch.multinomial(trans[ys[-1]], 1, generator=g)))
        xs = [int(torch.multinomial(emit[y], 1, generator=g)) + 1 for y in ys]
        sentences.append((xs, ys))
    width = max(len(xs) for xs, _ in sentences)
    words = torch.zeros(n, width, dtype=torch.long)
    tags = torch.zeros_like(words)
    mask = torch.zeros(n, width, dtype=torch.bool)
    for i, (xs, ys) in enumerate(sentences):
        words[i, : len(xs)] = torch.tensor(xs)
        tags[i, : len(ys)] = torch.tensor(ys)
        mask[i, : len(xs)] = True
    return sentences, words, tags, mask


def _randomise(model: CRFTagger, seed: int = 0) -> CRFTagger:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def test_pytorch_crf_likelihood_equals_score_minus_log_partition():
    _, words, tags, mask = _hmm_corpus(12, 4, 10, seed=1)
    model = _randomise(CRFTagger(4, 10).double())
    llh = model.log_likelihood(words, tags, mask)
    emissions, trans, start, end = model.potentials(words, mask)
    score = linear_chain.sequence_score(emissions, trans, start, end, tags, mask)
    with torch.no_grad():
        log_z = linear_chain.posterior_marginals(emissions, trans, start, end, mask).log_partition
    torch.testing.assert_close(llh, score - log_z)
    torch.testing.assert_close(model.negative_log_likelihood(words, tags, mask), -llh)


def test_fast_and_pytorch_crf_gradients_agree():
    _, words, tags, mask = _hmm_corpus(8, 3, 7, seed=2)
    model = _randomise(CRFTagger(3, 7).double(), seed=3)
    (-model.log_likelihood(words, tags, mask).sum()).backward()
    slow = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.negative_log_likelihood(words, tags, mask).sum().backward()
    for a, p in zip(slow, model.parameters(), strict=True):
        torch.testing.assert_close(p.grad, a)


def test_length_chunks_cover_every_sentence_once():
    lengths = torch.tensor([5, 1, 9, 3, 3, 2, 7, 1])
    chunks = length_chunks(lengths, max_tokens=10)
    seen = torch.cat([idx for idx, _ in chunks])
    assert sorted(seen.tolist()) == list(range(8))
    for idx, width in chunks:
        assert width == int(lengths[idx].max())
        assert len(idx) == 1 or len(idx) * width <= 10


def test_fit_reaches_a_stationary_point_and_learns(one_thread):
    _, words, tags, mask = _hmm_corpus(60, 3, 12, seed=4)
    model = CRFTagger(3, 12).fit(words, tags, mask, c2=0.5, max_iter=200, tol=1e-7, progress=False)
    assert model.fit_info is not None and model.fit_info.converged
    assert model.crf.transitions.dtype == torch.float32  # cast back after float64 training
    model = model.double()
    objective = model.negative_log_likelihood(words, tags, mask).sum() + 0.5 * model.l2_penalty()
    objective.backward()
    grad = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    assert grad.abs().max() < 1e-4
    _, pred = model.viterbi(words, mask)
    assert (pred == tags)[mask].float().mean() > 0.6


def test_frozen_boundary_scores_stay_zero(one_thread):
    _, words, tags, mask = _hmm_corpus(30, 3, 8, seed=5)
    model = CRFTagger(3, 8, freeze_boundary=True).fit(words, tags, mask, c2=1.0, progress=False)
    assert model.crf.start_transitions.abs().sum() == 0
    assert model.crf.end_transitions.abs().sum() == 0
    assert model.crf.transitions.abs().sum() > 0


def test_bad_input_is_rejected():
    model = CRFTagger(3, 5)
    _, words, tags, mask = _hmm_corpus(4, 3, 5)
    with pytest.raises(ValueError, match="c2"):
        model.fit(words, tags, mask, c2=-1.0, progress=False)
    with pytest.raises(ValueError, match="tags must lie"):
        model.fit(words, tags + 3, mask, progress=False)
    with pytest.raises(ValueError, match="word indices"):
        model.marginals(words + 5, mask)
    with pytest.raises(ValueError, match="vocab_size"):
        CRFTagger(3, 0)


def test_weights_and_marginals_match_crfsuite(tmp_path, one_thread):
    """CRFsuite minimises sum NLL + c2 ||w||^2 with no start/end features: same optimum."""
    pycrfsuite = pytest.importorskip("pycrfsuite", reason="python-crfsuite is a dev extra")
    num_tags, vocab, c2 = 5, 30, 0.5
    sentences, words, tags, mask = _hmm_corpus(200, num_tags, vocab, seed=0, max_len=10)

    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    for xs, ys in sentences:
        trainer.append([[f"w{x}"] for x in xs], [f"t{y}" for y in ys])
    trainer.set_params(
        {
            "c1": 0.0,
            "c2": c2,
            "feature.possible_states": True,
            "feature.possible_transitions": True,
            "epsilon": 1e-12,
            "delta": 1e-14,
            "max_iterations": 5000,
        }
    )
    path = str(tmp_path / "oracle.crfsuite")
    trainer.train(path)
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    info = tagger.info()
    ref_trans = torch.zeros(num_tags, num_tags, dtype=torch.float64)
    ref_emit = torch.zeros(vocab, num_tags, dtype=torch.float64)
    for (a, b), w in info.transitions.items():
        ref_trans[int(a[1:]), int(b[1:])] = w
    for (attr, label), w in info.state_features.items():
        ref_emit[int(attr[1:]), int(label[1:])] = w

    model = CRFTagger(num_tags, vocab, freeze_boundary=True).double()
    model.fit(
        words, tags, mask, c2=c2, max_iter=1000, tol=1e-9, tolerance_change=1e-14, progress=False
    )
    torch.testing.assert_close(model.crf.transitions.detach(), ref_trans, atol=1e-4, rtol=0)
    torch.testing.assert_close(model.emission.weight.detach(), ref_emit, atol=1e-4, rtol=0)
    # The objective values agree too (CRFsuite logs it as its "loss").
    assert abs(model.fit_info.objective - trainer.logparser.last_iteration["loss"]) < 1e-4

    marg = model.marginals(words, mask, pairwise=False).unigram
    for b, (xs, _) in enumerate(sentences[:40]):
        tagger.set([[f"w{x}"] for x in xs])
        ref = torch.tensor(
            [[tagger.marginal(f"t{k}", t) for k in range(num_tags)] for t in range(len(xs))],
            dtype=torch.float64,
        )
        torch.testing.assert_close(marg[b, : len(xs)], ref, atol=1e-4, rtol=0)
