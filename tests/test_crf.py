"""Tests of the CRF tagger: pytorch-crf's likelihood, and CRFsuite as a training oracle."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_words_and_tags_of_any_integer_dtype_score_and_fit_as_int64_ones_do(dtype, one_thread):
    # nn.Embedding had refused them with a RuntimeError.
    _, words, tags, mask = _hmm_corpus(8, 3, 7, seed=6)
    model = _randomise(CRFTagger(3, 7).double(), seed=1)
    narrow, narrow_tags = words.to(dtype), tags.to(dtype)
    torch.testing.assert_close(model.marginals(narrow, mask), model.marginals(words, mask))
    assert torch.equal(model.viterbi(narrow, mask)[1], model.viterbi(words, mask)[1])
    want = model.log_likelihood(words, tags, mask)
    torch.testing.assert_close(model.log_likelihood(narrow, narrow_tags, mask), want)
    torch.testing.assert_close(model.negative_log_likelihood(narrow, narrow_tags, mask), -want)
    fitted = CRFTagger(3, 7).fit(narrow, narrow_tags, mask, max_iter=5, progress=False)
    expected = CRFTagger(3, 7).fit(words, tags, mask, max_iter=5, progress=False)
    for a, b in zip(fitted.parameters(), expected.parameters(), strict=True):
        assert torch.equal(a, b)


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
    # tolerance_change far below what tol needs, so the gradient test is what stops it.
    model = CRFTagger(3, 12).fit(
        words, tags, mask, c2=0.5, max_iter=200, tol=1e-6, tolerance_change=1e-13, progress=False
    )
    info = model.fit_info
    assert info is not None and info.converged and info.stopped_by == "gradient"
    assert info.max_grad <= 1e-6
    assert model.crf.transitions.dtype == torch.float32  # cast back after float64 training
    model = model.double()
    objective = model.negative_log_likelihood(words, tags, mask).sum() + 0.5 * model.l2_penalty()
    objective.backward()
    grad = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    assert grad.abs().max() < 1e-4
    _, pred = model.viterbi(words, mask)
    assert (pred == tags)[mask].float().mean() > 0.6


def _noisy_corpus():
    g = torch.Generator().manual_seed(0)
    words = torch.randint(1, 8, (30, 7), generator=g)
    keep = torch.rand(30, 7, generator=g) < 0.7
    return words, torch.where(keep, words % 3, torch.randint(0, 3, (30, 7), generator=g))


@pytest.mark.parametrize(
    ("options", "stopped_by"),
    [
        ({"tolerance_change": 1.0}, "change"),  # one step: 162.93 against an optimum of 140.34
        ({"max_iter": 1}, "max_iter"),
        ({"max_iter": 2}, "max_eval"),  # max_eval = 2 * 5 // 4 + 1 = 3 runs out first
    ],
)
def test_a_fit_stopped_far_from_the_optimum_does_not_claim_convergence(
    options, stopped_by, one_thread
):
    """converged had meant "stopped before the budget ran out": a stop on
    tolerance_change after one step (max |grad| 8.1 against tol 1e-5) read as True."""
    words, tags = _noisy_corpus()
    info = CRFTagger(3, 8).fit(words, tags, c2=0.3, progress=False, **options).fit_info
    assert info.stopped_by == stopped_by
    assert not info.converged and info.max_grad > 1.0
    done = CRFTagger(3, 8).fit(words, tags, c2=0.3, progress=False, tolerance_change=1e-12)
    assert done.fit_info.converged and done.fit_info.stopped_by == "gradient"
    assert done.fit_info.max_grad <= 1e-5 and done.fit_info.objective < info.objective - 1.0


def test_frozen_boundary_scores_stay_zero(one_thread):
    _, words, tags, mask = _hmm_corpus(30, 3, 8, seed=5)
    model = CRFTagger(3, 8, freeze_boundary=True).fit(words, tags, mask, c2=1.0, progress=False)
    assert model.crf.start_transitions.abs().sum() == 0
    assert model.crf.end_transitions.abs().sum() == 0
    assert model.crf.transitions.abs().sum() > 0


@pytest.mark.parametrize("method", ["negative_log_likelihood", "log_likelihood", "fit"])
def test_a_likelihood_or_fit_without_tags_names_them(method):
    """tags=None had been an AttributeError ('NoneType' object has no attribute 'long')
    or a TypeError from inside fit."""
    call = getattr(CRFTagger(2, 3), method)
    options = {"progress": False} if method == "fit" else {}
    with pytest.raises(ValueError, match=r"tags are required: gold tags of shape \(1, 2\)"):
        call(torch.tensor([[1, 2]]), None, **options)


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


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"dtype": torch.int64}, r"dtype must be a floating-point torch.dtype.*torch.int64"),
        ({"dtype": "float64"}, r"dtype must be a floating-point torch.dtype.*'float64'"),
        ({"tol": float("nan")}, "tol must be a finite number >= 0, got nan"),
        ({"tol": -1.0}, "tol must be a finite number >= 0, got -1.0"),
        ({"tolerance_change": float("nan")}, "tolerance_change must be a finite number >= 0"),
        ({"tolerance_change": float("inf")}, "tolerance_change must be a finite number >= 0"),
    ],
)
def test_fit_names_a_bad_dtype_or_tolerance(option, message):
    """dtype=torch.int64 failed inside nn.Module.to (TypeError), "float64" as an invalid
    device string (RuntimeError); a NaN or negative tolerance fitted, "converged"."""
    model = CRFTagger(3, 5)
    _, words, tags, mask = _hmm_corpus(4, 3, 5)
    with pytest.raises(ValueError, match=message):
        model.fit(words, tags, mask, progress=False, **option)


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


class _SyncCounter:
    """Counts the Python-level calls that wait for the device (on CPU nothing waits, so
    they are counted instead), the way tests/test_sketch.py forbids them in update()."""

    NAMES = ("item", "tolist", "nonzero", "__bool__", "__int__", "__float__")

    def __init__(self, monkeypatch):
        self.calls: list[str] = []
        for name in self.NAMES:
            original = getattr(torch.Tensor, name)
            monkeypatch.setattr(torch.Tensor, name, self._counted(name, original))
        getitem = torch.Tensor.__getitem__

        def by_mask(tensor, index):
            # Indexing by a boolean mask waits for the mask's count; slicing does not.
            parts = index if isinstance(index, tuple) else (index,)
            if any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in parts):
                self.calls.append("mask index")
            return getitem(tensor, index)

        monkeypatch.setattr(torch.Tensor, "__getitem__", by_mask)

    def _counted(self, name, original):
        def wrapper(*args, **kwargs):
            self.calls.append(name)
            return original(*args, **kwargs)

        return wrapper


def test_objective_evaluation_makes_one_host_sync(monkeypatch, one_thread):
    # Issue 18: inside L-BFGS each evaluation used to pay ~10 syncs per chunk (input
    # checks, a recheck in sequence_score, precision checks) and total.item().
    _, words, tags, mask = _hmm_corpus(40, 3, 8, seed=4)
    model = _randomise(CRFTagger(3, 8).double(), seed=1)
    chunks = [(words[i, :w], tags[i, :w], mask[i, :w]) for i, w in length_chunks(mask.sum(1), 64)]
    assert len(chunks) > 3
    expected = model._objective(chunks, 0.5)
    grads = [p.grad.clone() for p in model.parameters()]
    with monkeypatch.context() as patch:
        counter = _SyncCounter(patch)
        total = model._objective(chunks, 0.5)
    assert counter.calls == ["__bool__"]  # the chunks' precision flags, read once
    torch.testing.assert_close(total, expected)
    for g, p in zip(grads, model.parameters(), strict=True):
        torch.testing.assert_close(p.grad, g)
    # It is the full-batch objective of the public, checked route.
    nll = model.negative_log_likelihood(words, tags, mask).sum() + 0.5 * model.l2_penalty()
    torch.testing.assert_close(total, nll.detach())


def test_deferred_precision_flags_make_log_partition_sync_free(monkeypatch):
    g = torch.Generator().manual_seed(0)
    em = torch.randn(3, 6, 4, generator=g, dtype=torch.float64, requires_grad=True)
    tr, st, en = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((4, 4), (4,), (4,)))
    mask = torch.arange(6)[None, :] < torch.tensor([6, 3, 1])[:, None]
    flags: list[torch.Tensor] = []
    with monkeypatch.context() as patch:
        counter = _SyncCounter(patch)
        z = linear_chain.log_partition(
            em, tr, st, en, mask, validate_args=False, precision_flags=flags
        )
        z.sum().backward()
    assert counter.calls == []
    assert len(flags) >= 2 and not torch.stack(flags).any()
    torch.testing.assert_close(z, linear_chain.log_partition(em, tr, st, en, mask))
    # Scores that defeat the rescaled recursion raise the flag instead of failing silently.
    flags.clear()
    linear_chain.log_partition(em, tr * 1000, st, en, mask, precision_flags=flags)
    assert torch.stack(flags).any()


def test_deferred_flags_without_backward_cover_the_several_step_underflow(monkeypatch):
    """With no input requiring grad no backward runs, and its check (the only one that
    sees a lineage fall hundreds of nats behind over several steps and be needed again)
    had never joined the flags: log Z 0 where it is 800, every flag False."""
    tr = torch.full((2, 2), -math.inf, dtype=torch.float64)
    tr[0, 0] = tr[1, 1] = 0.0  # two lineages that never meet
    em = torch.zeros(1, 30, 2, dtype=torch.float64)
    em[0, :10, 1], em[0, 10:, 1] = -80.0, 80.0
    zero = torch.zeros(2, dtype=torch.float64)
    flags: list[torch.Tensor] = []
    with monkeypatch.context() as patch:
        counter = _SyncCounter(patch)
        linear_chain.log_partition(em, tr, zero, zero, validate_args=False, precision_flags=flags)
    assert counter.calls == []  # still deferred
    assert torch.stack(flags).any()  # the caller is told to recompute
    exact = linear_chain.log_partition(em, tr, zero, zero)
    torch.testing.assert_close(exact, torch.tensor([800.0], dtype=torch.float64))


def test_objective_redoes_an_imprecise_evaluation_exactly(one_thread):
    _, words, tags, mask = _hmm_corpus(10, 3, 8, seed=6)
    model = CRFTagger(3, 8).double()
    with torch.no_grad():
        # Every sentence starts in tag 2, whose every successor is 2000 nats below the
        # column's best: one step underflows the rescaled recursion.
        model.crf.start_transitions.copy_(torch.tensor([-3000.0, -3000.0, 0.0]))
        model.crf.transitions[2] = -2000.0
    chunks = [(words, tags, mask)]
    flags: list[torch.Tensor] = []
    model._accumulate(chunks, 0.0, flags)
    assert torch.stack(flags).any()  # the fast path is not exact here
    total = model._objective(chunks, 0.0)
    nll = model.negative_log_likelihood(words, tags, mask).sum()
    pytorch_crf = -model.log_likelihood(words, tags, mask).sum()
    torch.testing.assert_close(total, nll.detach())
    torch.testing.assert_close(total, pytorch_crf.detach(), rtol=1e-9, atol=1e-6)


def test_a_tagger_that_implements_only_potentials_still_works():
    # Subclasses outside this package (the feature CRF) override potentials() alone.
    from calib_metrics.models.chain_tagger import ChainTagger

    class Table(ChainTagger):
        def __init__(self, emissions):
            super().__init__()
            self.table = emissions

        def potentials(self, words, mask=None):
            zeros = torch.zeros(3, dtype=self.table.dtype)
            return self.table[words], torch.zeros(3, 3, dtype=zeros.dtype), zeros, zeros

    g = torch.Generator().manual_seed(0)
    model = Table(torch.randn(5, 3, generator=g, dtype=torch.float64))
    words = torch.tensor([[1, 2, 3], [4, 0, 0]])
    mask = torch.tensor([[True] * 3, [True, False, False]])
    uni = model.marginals(words, mask).unigram
    want = torch.softmax(model.table[words], -1) * mask[..., None]
    torch.testing.assert_close(uni, want)
    assert model.viterbi(words, mask)[1][0].tolist() == model.table[words[0]].argmax(-1).tolist()
    assert model.sample(words, mask, n_samples=2, generator=g).shape == (2, 2, 3)
    with pytest.raises(NotImplementedError):
        ChainTagger().potentials(words)


def test_gold_tags_padded_with_an_ignore_index(one_thread):
    """Tags outside the mask may be anything (-100, as a loss's ignore_index): the
    likelihoods and fit read only the masked positions (before: an IndexError)."""
    _, words, tags, mask = _hmm_corpus(10, 3, 6, seed=4)
    model = _randomise(CRFTagger(3, 6).double(), seed=1)
    padded = tags.masked_fill(~mask, -100)
    pad_words = words.masked_fill(~mask, -100)  # words too: read nowhere outside the mask
    expected = model.log_likelihood(words, tags, mask)
    torch.testing.assert_close(model.log_likelihood(pad_words, padded, mask), expected)
    torch.testing.assert_close(model.negative_log_likelihood(pad_words, padded, mask), -expected)
    torch.testing.assert_close(model.marginals(pad_words, mask), model.marginals(words, mask))
    fit = CRFTagger(3, 6).fit(pad_words, padded, mask, c2=0.1, progress=False)
    ref = CRFTagger(3, 6).fit(words, tags, mask, c2=0.1, progress=False)
    torch.testing.assert_close(fit.emission.weight, ref.emission.weight)


def test_a_fit_summary_pickled_before_stopped_by_existed_does_not_claim_a_rule() -> None:
    # Five fields, as FitInfo had before 2026-11-30: its converged meant "budget not
    # used up", and no rule was recorded; a default of "gradient" had claimed one.
    import pickle

    from calib_metrics.models.chain_fit import FitInfo

    old = FitInfo.__new__(FitInfo)
    old.__dict__.update(objective=1.0, n_evals=10, n_iter=8, converged=False, seconds=0.1)
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded.stopped_by is None
    assert math.isnan(loaded.max_grad)
