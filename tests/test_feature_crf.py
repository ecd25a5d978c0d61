"""Feature templates, hashing, and the feature CRF (CRFsuite as the training oracle)."""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise

import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.models.feature_crf import FeatureCRF
from calib_metrics.models.features import ABLATION, FeatureHasher, token_attributes, word_shape

_STEMS = ["walk", "talk", "dog", "cat", "Paris", "Rome", "the", "a", "42", "1-2", "@bob"]
_NEW_STEMS = ["jump", "bird", "Oslo", "Lima", "the", "a", "77", "3-4"]  # mostly unseen words


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _corpus(n: int, seed: int = 0, max_len: int = 7, stems: list[str] = _STEMS):
    """Sentences whose tags depend on suffixes, capitals and the previous word."""
    g = torch.Generator().manual_seed(seed)
    sentences = []
    for _ in range(n):
        length = int(torch.randint(1, max_len + 1, (1,), generator=g))
        words = []
        for _ in range(length):
            stem = stems[int(torch.randint(len(stems), (1,), generator=g))]
            suffix = ["", "s", "ed", "ing"][int(torch.randint(4, (1,), generator=g))]
            words.append(stem + suffix if stem.isalpha() and stem.islower() else stem)
        tags = []
        for t, w in enumerate(words):
            if w[:1].isupper():
                tags.append(2)
            elif w.endswith(("ed", "ing")) or (t > 0 and words[t - 1] in ("the", "a")):
                tags.append(1)
            elif not w.isalpha():
                tags.append(3)
            else:
                tags.append(0)
        sentences.append((words, tags))
    return sentences


def _batch(sentences, hasher: FeatureHasher):
    ids, mask = hasher.encode([w for w, _ in sentences])
    tags = torch.zeros(mask.shape, dtype=torch.long)
    for b, (_, ys) in enumerate(sentences):
        tags[b, : len(ys)] = torch.tensor(ys)
    return ids, tags, mask


def test_templates_and_shape():
    assert word_shape("Ab-12") == "Xx-dd"
    attrs = token_attributes(["New", "York-ish", "42"], ["shape"])
    assert "flag=cap" in attrs[0] and "flag=hyphen" in attrs[1]
    assert "flag=alldigits" in attrs[2] and "short=Xx-x" in attrs[1]
    # Each ablation step adds templates to the one before.
    steps = list(ABLATION.values())
    assert all(set(a) < set(b) for a, b in pairwise(steps))
    with pytest.raises(ValueError, match="unknown templates"):
        token_attributes(["a"], ["wordshape"])


def test_hasher_is_stable_and_pads_with_zero():
    hasher = FeatureHasher(["bias", "word", "affixes"], num_buckets=97)
    ids, mask = hasher.encode([["walking", "x"], ["x"]])
    # CRC-32 is the same in every process (Python's hash is salted): a fixed value.
    assert hasher.hash("w=x") == 56
    assert ids.min() >= 0 and ids.max() < 97
    assert (ids[0, 1] > 0).sum() == 4  # bias, word, p1, s1
    assert (ids[0, 0] > 0).sum() == 10  # bias, word, 4 prefixes, 4 suffixes
    assert ids[1, 1].eq(0).all() and mask.tolist() == [[True, True], [True, False]]
    assert ids[0, 1].tolist() == ids[1, 0].tolist()
    with pytest.raises(ValueError, match="num_buckets"):
        FeatureHasher(["word"], num_buckets=1)
    with pytest.raises(ValueError, match="at least one word"):
        hasher.encode([[]])


def test_emissions_are_sums_of_feature_weights_and_likelihood_matches_pytorch_crf():
    hasher = FeatureHasher(["bias", "word", "context", "affixes", "shape"], num_buckets=211)
    ids, tags, mask = _batch(_corpus(12, seed=1), hasher)
    model = FeatureCRF(4, 211).double()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
        model.weights.weight[0] = 0  # the padding id carries no weight
    emissions, trans, start, end = model.potentials(ids, mask)
    manual = model.weights.weight[ids].sum(2)
    torch.testing.assert_close(emissions, manual)
    llh = model.log_likelihood(ids, tags, mask)
    score = linear_chain.sequence_score(emissions, trans, start, end, tags, mask)
    log_z = linear_chain.log_partition(emissions, trans, start, end, mask)
    torch.testing.assert_close(llh, score - log_z)


def test_better_templates_fit_the_corpus_better(one_thread):
    train, test = _corpus(150, seed=2), _corpus(60, seed=3, stems=_NEW_STEMS)
    accuracies = {}
    for name, templates in ABLATION.items():
        hasher = FeatureHasher(templates, num_buckets=4099)
        ids, tags, mask = _batch(train, hasher)
        model = FeatureCRF(4, 4099).fit(ids, tags, mask, c2=0.1, max_iter=100)
        # A stop on tolerance_change just short of tol (max |grad| 1.3e-5) is fine here.
        assert model.fit_info.stopped_by in ("gradient", "change")
        assert model.fit_info.max_grad < 1e-4
        ids, tags, mask = _batch(test, hasher)
        pred = model.viterbi(ids, mask)[1]
        accuracies[name] = float((pred == tags)[mask].float().mean())
    # Unseen words: their tags come from suffixes, capitals and digits, not identity.
    assert accuracies["+affixes"] > accuracies["basic"] + 0.05
    assert accuracies["+shape"] > accuracies["+affixes"] + 0.05


def test_bad_input_is_rejected():
    model = FeatureCRF(3, 10)
    ids = torch.ones(2, 3, 2, dtype=torch.long)
    tags = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="feature ids"):
        model.marginals(ids + 10)
    with pytest.raises(ValueError, match=r"\[B, T, F\]"):
        model.marginals(ids[0])
    with pytest.raises(ValueError, match="c2"):
        model.fit(ids, tags, c2=-1.0)
    with pytest.raises(ValueError, match="tags must lie"):
        model.fit(ids, tags + 3)
    with pytest.raises(ValueError, match="num_features"):
        FeatureCRF(3, 1)
    # The CRFs share their fit options' check (a NaN tolerance had "converged").
    with pytest.raises(ValueError, match="tol must be a finite number >= 0, got nan"):
        model.fit(ids, tags, tol=float("nan"))
    with pytest.raises(ValueError, match=r"dtype must be a floating-point torch\.dtype"):
        model.fit(ids, tags, dtype=torch.int32)


def test_objective_and_marginals_match_crfsuite_on_the_same_attributes(tmp_path, one_thread):
    """Same attributes per token (the hashed ids), same objective: same optimum.

    CRFsuite minimises ``sum NLL + c2 ||w||^2`` with no start/end features; with every
    (attribute, label) and (label, label) feature generated, its model is FeatureCRF
    with ``freeze_boundary=True``. Tolerance: 1e-4 on the objective (about 700 here)
    and on every marginal.
    """
    pycrfsuite = pytest.importorskip("pycrfsuite", reason="python-crfsuite is a dev extra")
    c2, buckets = 0.3, 4099
    sentences = _corpus(120, seed=4)
    hasher = FeatureHasher(ABLATION["+shape"], num_buckets=buckets)
    ids, tags, mask = _batch(sentences, hasher)

    def items(b: int) -> list[dict[str, float]]:
        # Colliding attributes share an id, which EmbeddingBag counts once per occurrence.
        rows = ids[b, : int(mask[b].sum())].tolist()
        return [dict(Counter(f"f{i}" for i in row if i > 0)) for row in rows]

    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    for b, (_, ys) in enumerate(sentences):
        trainer.append(items(b), [f"t{y}" for y in ys])
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

    model = FeatureCRF(4, buckets, freeze_boundary=True).double()
    model.fit(ids, tags, mask, c2=c2, max_iter=1000, tol=1e-9, tolerance_change=1e-14)
    assert abs(model.fit_info.objective - trainer.logparser.last_iteration["loss"]) < 1e-4

    marg = model.marginals(ids, mask, pairwise=False).unigram
    for b in range(40):
        tagger.set(items(b))
        n = int(mask[b].sum())
        ref = torch.tensor(
            [[tagger.marginal(f"t{k}", t) for k in range(4)] for t in range(n)],
            dtype=torch.float64,
        )
        torch.testing.assert_close(marg[b, :n], ref, atol=1e-4, rtol=0)


def test_log_likelihood_checks_tags_and_reads_only_the_mask():
    """Ignore-index padding is read nowhere; float or out-of-range gold tags are a
    ValueError at log_likelihood and fit alike (before: an IndexError, or float tags
    fitted silently)."""
    hasher = FeatureHasher(["bias", "word"], num_buckets=64)
    ids, tags, mask = _batch(_corpus(6, seed=5), hasher)
    assert not mask.all()
    model = FeatureCRF(4, 64).double()
    padded = tags.masked_fill(~mask, -100)
    expected = model.log_likelihood(ids, tags, mask)
    torch.testing.assert_close(model.log_likelihood(ids, padded, mask), expected)
    with pytest.raises(ValueError, match="tags must lie"):
        model.log_likelihood(ids, tags + 4, mask)
    with pytest.raises(ValueError, match="integer"):
        model.log_likelihood(ids, tags.double(), mask)
    with pytest.raises(ValueError, match="integer"):
        model.fit(ids, tags.double(), mask)


_ONE_SLOT = torch.tensor([[[1], [2], [3]]])
_TAGS = torch.tensor([[0, 1, 0]])


@pytest.mark.parametrize("method", ["log_likelihood", "objective", "fit"])
def test_a_likelihood_objective_or_fit_without_tags_names_them(method):
    """As CRFTagger's: tags=None had said 'tags must be a tensor of shape (1, 3), got
    NoneType' (and CRFTagger's an AttributeError)."""
    call = getattr(FeatureCRF(2, 8), method)
    args = (None, 0.1) if method == "objective" else ()
    with pytest.raises(ValueError, match=r"tags are required: gold tags of shape \(1, 3\)"):
        call(_ONE_SLOT, None, *args)


@pytest.mark.parametrize("shape", [(1, 3, 0), (1, 0, 1), (0, 3, 1)])
def test_an_empty_features_tensor_is_named_at_every_entry(shape):
    """F = 0 had been a RuntimeError of EmbeddingBag's reshape, T = 0 a message about
    linear_chain's emissions or chain_fit's lengths, and B = 0 fitted nothing, silently.
    B = 0 at inference (left_align's batch of rows that are all padding) gives empty
    results, as linear_chain's functions do, and so do its per-sentence likelihoods (they
    had refused it); the objective, a sum over the sentences, is the penalty alone."""
    empty = torch.zeros(shape, dtype=torch.long)
    tags = torch.zeros(shape[:2], dtype=torch.long)
    model = FeatureCRF(2, 4)
    message = r"features must be \[B, T, F\] with B, T, F >= 1"
    inference = (
        lambda: model.viterbi(empty)[1],
        lambda: model.marginals(empty).unigram,
        lambda: model.sample(empty, n_samples=1)[0],
        lambda: model.potentials(empty)[0],
    )
    over_sentences = (
        lambda: model.log_likelihood(empty, tags),
        lambda: model.objective(empty, tags, None, 0.1),
    )
    for call in (
        *(inference + over_sentences if shape[0] else ()),
        lambda: model.fit(empty, tags),
    ):
        with pytest.raises(ValueError, match=message):
            call()
    if not shape[0]:
        for call in inference:
            assert call().shape[:2] == shape[:2]
        assert model.log_likelihood(empty, tags).shape == (0,)
        assert torch.equal(model.objective(empty, tags, None, 0.1), 0.1 * model.l2_penalty())


def test_feature_ids_in_padding_do_not_matter(one_thread):
    """As with CRFTagger's words: an id out of range where the mask is False had been a
    ValueError ('feature ids must lie in [0, 9)'), so an ignore index could not pad."""
    hasher = FeatureHasher(["bias", "word"], num_buckets=64)
    ids, tags, mask = _batch(_corpus(6, seed=5), hasher)
    assert not mask.all()
    model = FeatureCRF(4, 64).double()
    with torch.no_grad():
        model.weights.weight.normal_(generator=torch.Generator().manual_seed(0))
    for fill in (-1, -100, 64, 10**6, 5):
        padded = ids.masked_fill(~mask[..., None], fill)
        torch.testing.assert_close(model.marginals(padded, mask), model.marginals(ids, mask))
        assert torch.equal(model.viterbi(padded, mask)[1], model.viterbi(ids, mask)[1])
        torch.testing.assert_close(
            model.log_likelihood(padded, tags, mask), model.log_likelihood(ids, tags, mask)
        )
        torch.testing.assert_close(
            model.objective(padded, tags, mask, 0.1), model.objective(ids, tags, mask, 0.1)
        )
    padded = ids.masked_fill(~mask[..., None], -100)
    fitted = FeatureCRF(4, 64).fit(padded, tags, mask, max_iter=5)
    expected = FeatureCRF(4, 64).fit(ids, tags, mask, max_iter=5)
    for a, b in zip(fitted.parameters(), expected.parameters(), strict=True):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match=r"feature ids must lie in \[0, 64\) where mask"):
        model.viterbi(ids.masked_fill(mask[..., None], -1), mask)


@pytest.mark.parametrize("c2", [-5.0, math.inf, math.nan, True, "1"])
def test_objective_checks_c2_as_fit_does(c2):
    # objective(c2=-5.0) had returned a value while fit refused it.
    model = FeatureCRF(2, 8)
    with pytest.raises(ValueError, match="c2 must be a finite number >= 0"):
        model.objective(_ONE_SLOT, _TAGS, None, c2)
    with pytest.raises(ValueError, match="c2 must be a finite number >= 0"):
        model.fit(_ONE_SLOT, _TAGS, c2=c2)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_ids_and_tags_of_any_integer_dtype_score_and_fit_as_int64_ones_do(dtype, one_thread):
    # nn.EmbeddingBag had refused them with a RuntimeError.
    hasher = FeatureHasher(["bias", "word", "affixes"], num_buckets=120)  # ids fit int8
    ids, tags, mask = _batch(_corpus(6, seed=2), hasher)
    model = FeatureCRF(4, 120).double()
    with torch.no_grad():
        model.weights.weight.normal_(generator=torch.Generator().manual_seed(0))
    narrow, narrow_tags = ids.to(dtype), tags.to(dtype)
    torch.testing.assert_close(model.marginals(narrow, mask), model.marginals(ids, mask))
    want = model.log_likelihood(ids, tags, mask)
    torch.testing.assert_close(model.log_likelihood(narrow, narrow_tags, mask), want)
    c2 = 0.1
    torch.testing.assert_close(
        model.objective(narrow, narrow_tags, mask, c2), model.objective(ids, tags, mask, c2)
    )
    fitted = FeatureCRF(4, 120).fit(narrow, narrow_tags, mask, max_iter=5)
    expected = FeatureCRF(4, 120).fit(ids, tags, mask, max_iter=5)
    for a, b in zip(fitted.parameters(), expected.parameters(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda h: h.encode(["the", "dog"]), "got the string 'the'"),  # one sentence, unwrapped
        (lambda h: h.encode([["the", 3]]), r"a word of type int \(3\)"),
        (lambda h: FeatureHasher("word", num_buckets=64), "got the string 'word'"),
        (lambda h: FeatureHasher(["word"], num_buckets=64.0), "num_buckets must be an int"),
    ],
)
def test_hasher_names_input_of_the_wrong_kind(call, message):
    """Before: a sentence passed unwrapped became sentences of characters silently, a
    non-string word an AttributeError, a template string its letters' names."""
    with pytest.raises(ValueError, match=message):
        call(FeatureHasher(["bias", "word"], num_buckets=64))
