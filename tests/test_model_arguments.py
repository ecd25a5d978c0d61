"""The reference models' public entries refuse what they cannot fit on, with a ValueError
naming it. Once: an infinite or NaN setting fitted NaN weights without a word (the CRF
after 250 evaluations), an empty batch failed inside torch (IndexError, RuntimeError) or
silently reset a fitted HMM, and the ranker's generator was a TypeError from randperm."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
import torch

from calib_metrics.models.coref import most_probable_antecedents
from calib_metrics.models.coref_ranker import AntecedentRanker, DocumentFeatures
from calib_metrics.models.crf import CRFTagger
from calib_metrics.models.feature_crf import FeatureCRF
from calib_metrics.models.files import load_torch_file
from calib_metrics.models.hmm import HMM

WORDS = torch.tensor([[1, 2, 1], [2, 1, 0]])
TAGS = torch.tensor([[0, 1, 0], [1, 0, 0]])


def _document() -> DocumentFeatures:
    return DocumentFeatures(
        n=3, pair_i=torch.tensor([1, 2, 2]), pair_j=torch.tensor([0, 1, 0]),
        pair_feats=torch.tensor([[1, 2], [3, 4], [5, 6]]),
        new_feats=torch.tensor([[7], [7], [8]]), entity=torch.tensor([0, 1, 0]), max_distance=2,
    )  # fmt: skip


@pytest.mark.parametrize("value", [math.inf, math.nan, -1.0, "1"])
def test_hmm_pseudocount_must_be_finite_and_positive(value) -> None:
    with pytest.raises(ValueError, match="pseudocount must be a finite number > 0"):
        HMM(2, 3, pseudocount=value)


@pytest.mark.parametrize("make", [HMM, CRFTagger, FeatureCRF])
def test_taggers_take_sizes_of_any_integer_type(make) -> None:
    """Sizes read off numpy arrays (tags.max() + 1) had been refused: "num_tags must be an
    int >= 1, got np.int64(2)"; they are stored as Python ints."""
    model = make(np.int64(2), np.int32(5))
    assert (model.num_tags, type(model.num_tags)) == (2, int)
    for bad in (2.0, True, np.bool_(True), torch.tensor(True), np.int64(0)):
        with pytest.raises(ValueError, match="num_tags must be an int >= 1"):
            make(bad, 5)


def test_hmm_takes_a_numpy_pseudocount() -> None:
    assert HMM(2, 3, pseudocount=np.float32(0.5)).pseudocount == 0.5
    with pytest.raises(ValueError, match="pseudocount must be a finite number > 0"):
        HMM(2, 3, pseudocount=np.bool_(True))


@pytest.mark.parametrize(
    "options,message",
    [
        ({"c2": math.inf}, "c2 must be a finite number >= 0"),
        ({"c2": math.nan}, "c2 must be a finite number >= 0"),
        ({"history_size": 0}, "history_size must be a positive int"),
    ],
)
def test_crf_fit_options(options, message) -> None:
    with pytest.raises(ValueError, match=message):
        CRFTagger(2, 3).fit(WORDS, TAGS, progress=False, **options)


@pytest.mark.parametrize(
    "options,message",
    [
        ({"l2": math.nan}, "l2 must be a finite number >= 0"),
        ({"l2": math.inf}, "l2 must be a finite number >= 0"),
        ({"lr": math.inf}, "lr must be a finite number > 0"),
        ({"lr": math.nan}, "lr must be a finite number > 0"),
        ({"generator": 3}, "generator"),
    ],
)
def test_ranker_fit_options(options, message) -> None:
    with pytest.raises(ValueError, match=message):
        AntecedentRanker(4, 2).fit([_document()], epochs=1, **options)


@pytest.mark.parametrize("shape", [(2, 0), (0, 2)])
def test_taggers_refuse_an_empty_batch(shape) -> None:
    """T = 0 is refused everywhere, B = 0 by the fits alone: it has nothing to fit, but
    its per-sentence likelihoods are empty (the CRF's had refused it, and a dev loss over
    left_align's batches broke at one of padding rows alone)."""
    empty = torch.zeros(shape, dtype=torch.long)
    fitted = HMM(3, 5).fit(WORDS, TAGS)
    before = fitted.log_start.clone()
    fits = (
        lambda: fitted.fit(empty, empty),
        lambda: CRFTagger(3, 5).fit(empty, empty, progress=False),
    )
    likelihoods = (
        lambda: fitted.log_likelihood(empty),
        lambda: CRFTagger(3, 5).log_likelihood(empty, empty),
        lambda: CRFTagger(3, 5).negative_log_likelihood(empty, empty),
    )
    for call in (*fits, *(likelihoods if shape[1] == 0 else ())):
        with pytest.raises(ValueError, match=r"words must be \[B, T\] with B, T >= 1"):
            call()
    for call in likelihoods if shape[0] == 0 else ():
        assert call().shape == (0,)
    assert torch.equal(fitted.log_start, before)  # the fitted HMM is untouched


def test_no_mentions_have_no_most_probable_antecedents() -> None:
    """Every other coref function returns an empty tensor for N = 0; this one raised."""
    assert most_probable_antecedents(torch.zeros(2, 0, 0)).shape == (2, 0)


# The probe of 2026-11-29 (seventh session): each of these had passed silently or failed
# inside Python or torch (AttributeError, RuntimeError).
def _chain() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 3, 4, generator=g), torch.randn(4, 4, generator=g), *torch.zeros(2, 4)


@pytest.mark.parametrize("mask", [[[1, 2, 1], [1, 1, 0]], [[1, -1, 0], [1, 1, 1]]])
def test_an_integer_mask_must_hold_0_and_1(mask) -> None:
    from calib_metrics.models import linear_chain
    from calib_metrics.queries import tag_queries

    mask = torch.tensor(mask)
    with pytest.raises(ValueError, match="integer 0/1: it holds other integers"):
        linear_chain.posterior_marginals(*_chain(), mask)
    with pytest.raises(ValueError, match="integer 0/1: it holds other integers"):
        HMM(2, 3).fit(WORDS, TAGS, mask)
    with pytest.raises(ValueError, match="integer 0/1: it holds other integers"):
        tag_queries(torch.full((2, 3, 2), 0.5), TAGS, mask)


def test_a_float_mask_is_refused_by_the_taggers_queries_and_coreference() -> None:
    from calib_metrics.models.coref import coreference_marginals
    from calib_metrics.queries import tag_queries

    half = torch.tensor([[1.0, 0.5, 1.0], [1.0, 1.0, 0.0]])
    crf = CRFTagger(2, 3)
    for call in (
        lambda: HMM(2, 3).fit(WORDS, TAGS, half),
        lambda: crf.viterbi(WORDS, half),
        lambda: crf.log_likelihood(WORDS, TAGS, half),
        lambda: tag_queries(torch.full((2, 3, 2), 0.5), TAGS, half),
        lambda: coreference_marginals(torch.zeros(2, 3, 3), mask=half),
    ):
        with pytest.raises(ValueError, match="mask must be bool"):
            call()


def test_span_queries_refuse_a_mask_with_a_hole() -> None:
    """Lengths were read as mask.sum(1), so the tokens after a hole were queried."""
    from calib_metrics.queries import span_indicators, span_queries

    tags = torch.tensor([[1, 2, 0]])
    hole = torch.tensor([[True, False, True]])
    with pytest.raises(ValueError, match="left-aligned"):
        span_queries(torch.rand(1, 3, 2), tags, hole, begin=1, inside=2)
    with pytest.raises(ValueError, match="left-aligned"):
        span_indicators(tags, hole, begin=1, inside=2, max_length=2)


@pytest.mark.parametrize("top_k", [None, 2])
@pytest.mark.parametrize(
    "probs", [torch.randn(1, 3, 2) * 3, torch.full((1, 3, 2), math.nan), torch.ones(1, 3, 2).long()]
)
def test_span_queries_refuse_what_is_not_a_probability(probs, top_k) -> None:
    """Logits, NaN and integers had become queries, refused later under ``probs``."""
    from calib_metrics.queries import span_queries

    with pytest.raises(ValueError, match="span_probs must be"):
        span_queries(probs, torch.tensor([[1, 2, 0]]), begin=1, inside=2, top_k=top_k)


def test_span_queries_read_no_span_outside_its_sentence() -> None:
    from calib_metrics.queries import span_queries

    probs = torch.full((1, 3, 2), math.nan)
    probs[0, 0] = torch.tensor([0.75, 0.25])  # spans (0, 1) and (0, 2) of a sentence of 2
    probs[0, 1, 0] = 0.125
    mask = torch.tensor([[True, True, False]])
    q, y = span_queries(probs, torch.tensor([[1, 0, 0]]), mask, begin=1, inside=2)
    assert q.tolist() == [0.75, 0.25, 0.125] and y.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "dtype", [torch.int64, "float64", torch.bool, torch.float8_e4m3fn, torch.float8_e5m2]
)
def test_compute_dtype_must_be_a_floating_torch_dtype(dtype) -> None:
    """float8 is floating too, and had crashed with torch's NotImplementedError."""
    from calib_metrics.models import linear_chain

    with pytest.raises(ValueError, match=r"compute_dtype must be a floating torch\.dtype"):
        linear_chain.log_partition(*_chain(), compute_dtype=dtype)


def test_feature_crf_names_a_list_given_for_tags_or_mask() -> None:
    from calib_metrics.models.feature_crf import FeatureCRF

    ids = torch.tensor([[[1], [2], [3]]])
    crf = FeatureCRF(num_tags=2, num_features=8)
    with pytest.raises(ValueError, match="mask must be a tensor of shape"):
        crf.potentials(ids, [[True, True, True]])
    with pytest.raises(ValueError, match="tags must be a tensor of shape"):
        crf.fit(ids, [[0, 1, 0]], c2=0.1)


def test_a_pair_listed_twice_is_refused() -> None:
    """index_put kept one of the two rows' scores, silently."""
    twice = dataclasses.replace(
        _document(),
        pair_i=torch.tensor([1, 2, 2, 2]),
        pair_j=torch.tensor([0, 1, 0, 1]),
        pair_feats=torch.tensor([[1, 2], [3, 4], [5, 6], [9, 9]]),
    )
    with pytest.raises(ValueError, match="pair twice"):
        AntecedentRanker(n_bits=4, max_distance=2).score_document(twice)


@pytest.mark.parametrize(
    ("lengths", "message"),
    [(torch.tensor([3, 0]), "lengths must be >= 1"), (torch.tensor([2.0]), "integer tensor")],
)
def test_length_chunks_refuses_empty_sentences_and_float_lengths(lengths, message) -> None:
    from calib_metrics.models.chain_fit import length_chunks

    with pytest.raises(ValueError, match=message):
        length_chunks(lengths, 8)


def test_tag_pair_queries_says_tags_need_one_more_step_than_pairwise() -> None:
    from calib_metrics.queries import tag_pair_queries

    with pytest.raises(ValueError, match=r"one more step than pairwise's \[B, T-1\] = \(2, 3\)"):
        tag_pair_queries(torch.rand(2, 3, 4, 4), torch.zeros(2, 3, dtype=torch.long))


def test_coreference_reads_an_integer_mask_as_the_queries_do() -> None:
    """An integer mask holding 2 had been read as "nonzero = real" by coreference and
    refused by coref_pair_queries; the check rides on the distribution's own host read."""
    from calib_metrics.models.coref import coreference_marginals, sample_antecedents

    scores = torch.zeros(1, 3, 3)
    with pytest.raises(ValueError, match="integer 0/1: it holds other integers"):
        coreference_marginals(scores, mask=torch.tensor([[1, 2, 0]]))
    with pytest.raises(ValueError, match="integer 0/1: it holds other integers"):
        sample_antecedents(scores, 2, mask=torch.tensor([[1, 2, 0]]))
    ones = coreference_marginals(scores, mask=torch.tensor([[1, 1, 0]]))
    assert torch.equal(
        ones, coreference_marginals(scores, mask=torch.tensor([[True, True, False]]))
    )


def _meta(x: torch.Tensor) -> torch.Tensor:
    return x.to("meta")


def _meta_calls() -> dict[str, tuple[str, object]]:
    """Every public entry of the models and the queries fed one meta tensor: (the argument
    it must name, the call)."""
    from calib_metrics.models import coref, linear_chain
    from calib_metrics.models.chain_fit import length_chunks
    from calib_metrics.models.feature_crf import FeatureCRF
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

    em, tr, st, en = _chain()
    mask = torch.ones(2, 3, dtype=torch.bool)
    scores = torch.zeros(2, 3, 3)
    spans = {"begin": 1, "inside": 2}
    ids = torch.tensor([[[1], [2], [3]], [[2], [1], [0]]])
    return {
        "coreference_marginals": ("scores", lambda: coref.coreference_marginals(_meta(scores))),
        "sampled marginals": (
            "scores",
            lambda: coref.coreference_marginals(_meta(scores), n_samples=3),
        ),
        "marginals, meta mask": (
            "mask",
            lambda: coref.coreference_marginals(scores, mask=_meta(mask)),
        ),
        "sample_antecedents": ("scores", lambda: coref.sample_antecedents(_meta(scores), 3)),
        "sample_entity_roots": ("scores", lambda: coref.sample_entity_roots(_meta(scores), 3)),
        "antecedent_log_probs": ("scores", lambda: coref.antecedent_log_probs(_meta(scores))),
        "most_probable": ("scores", lambda: coref.most_probable_antecedents(_meta(scores))),
        "entity_roots": (
            "antecedents",
            lambda: coref.entity_roots(_meta(torch.tensor([0, 0, 1]))),
        ),
        "span_marginals": (
            "emissions",
            lambda: span_marginals(_meta(em), tr, st, en, max_length=2, **spans),
        ),
        "span_indicators": (
            "mask",
            lambda: span_indicators(TAGS, _meta(mask), max_length=2, **spans),
        ),
        "span_queries": ("span_probs", lambda: span_queries(_meta(em), TAGS, **spans)),
        "spans_inside": ("mask", lambda: spans_inside(_meta(mask), 2)),
        "coref_pair_queries": (
            "marginals",
            lambda: coref_pair_queries(_meta(scores), TAGS),
        ),
        "coref_pair_queries, ids": (
            "entity_ids",
            lambda: coref_pair_queries(scores, _meta(TAGS)),
        ),
        "tag_queries": ("unigram", lambda: tag_queries(_meta(em), TAGS)),
        "tag_queries, tags": ("tags", lambda: tag_queries(em, _meta(TAGS))),
        "tag_pair_queries": (
            "pairwise",
            lambda: tag_pair_queries(_meta(torch.rand(2, 2, 4, 4)), TAGS),
        ),
        "top_tag_pairs": ("tags", lambda: top_tag_pairs(_meta(TAGS), None, 2, 1)),
        "forward_backward": (
            "emissions",
            lambda: linear_chain.forward_backward(_meta(em), tr, st, en),
        ),
        "posterior_marginals": (
            "transitions",
            lambda: linear_chain.posterior_marginals(em, _meta(tr), st, en),
        ),
        "viterbi": ("start", lambda: linear_chain.viterbi(em, tr, _meta(st), en)),
        "log_partition": ("end", lambda: linear_chain.log_partition(em, tr, st, _meta(en))),
        "chain sample": (
            "mask",
            lambda: linear_chain.sample(em, tr, st, en, _meta(mask), n_samples=2),
        ),
        "sequence_score": (
            "tags",
            lambda: linear_chain.sequence_score(em, tr, st, en, _meta(TAGS)),
        ),
        "hmm fit": ("words", lambda: HMM(2, 3).fit(_meta(WORDS), TAGS)),
        "hmm marginals": ("words", lambda: HMM(2, 3).marginals(_meta(WORDS))),
        "hmm log_likelihood": ("mask", lambda: HMM(2, 3).log_likelihood(WORDS, _meta(mask))),
        "crf viterbi": ("words", lambda: CRFTagger(2, 3).viterbi(_meta(WORDS))),
        "crf sample": ("words", lambda: CRFTagger(2, 3).sample(_meta(WORDS), n_samples=2)),
        "crf nll": ("tags", lambda: CRFTagger(2, 3).negative_log_likelihood(WORDS, _meta(TAGS))),
        "crf fit": ("tags", lambda: CRFTagger(2, 3).fit(WORDS, _meta(TAGS), progress=False)),
        "feature crf": ("features", lambda: FeatureCRF(2, 8).marginals(_meta(ids))),
        "length_chunks": ("lengths", lambda: length_chunks(_meta(torch.tensor([3, 2])), 8)),
        "ranker document": (
            "DocumentFeatures.pair_i",
            lambda: AntecedentRanker(4, 2)(
                dataclasses.replace(_document(), pair_i=_meta(_document().pair_i))
            ),
        ),
    }


@pytest.mark.parametrize("entry", sorted(_meta_calls()))
def test_meta_tensors_are_refused_by_name(entry) -> None:
    """A meta tensor (a shape without values) had failed deep inside with torch's
    "Tensor.item() cannot be called on meta tensors" or "Cannot copy out of meta tensor"."""
    name, call = _meta_calls()[entry]
    with pytest.raises(ValueError, match=rf"^{re.escape(name)} is on the meta device"):
        call()


def test_a_ranker_loaded_onto_the_meta_device_is_refused(tmp_path) -> None:
    """load(path, map_location="meta") had failed in torch while checking the weight."""
    path = AntecedentRanker(n_bits=8, max_distance=5).save(tmp_path / "ranker.pt")
    for where in ("meta", torch.device("meta")):
        with pytest.raises(ValueError, match=r"loaded with map_location=.*meta.* meta device"):
            AntecedentRanker.load(path, map_location=where)


def test_a_ranker_loaded_onto_a_device_not_available_here_names_the_device(tmp_path) -> None:
    """map_location="cuda" without CUDA had been reported as a file that "cannot be read as
    a saved model (not one, damaged, ...)": the file is fine, the device is missing."""
    path = AntecedentRanker(n_bits=8, max_distance=5).save(tmp_path / "ranker.pt")
    # No machine has a hundredth CUDA device; without CUDA, none has a first either.
    missing = ["cuda:99", torch.device("cuda", 99)]
    missing += [] if torch.cuda.is_available() else ["cuda"]
    for where in missing:
        with pytest.raises(
            ValueError, match=r"^map_location='cuda(:99)?' is not a device available here \(torch: "
        ) as caught:
            AntecedentRanker.load(path, map_location=where)
        assert "saved model" not in str(caught.value)
    # A dict's target device too (its values are where tensors go), for the files'
    # reader; the ranker goes to one device and takes no dict.
    with pytest.raises(ValueError, match=r"names 'cuda:99', not a device available here"):
        load_torch_file(path, map_location={"cpu": "cuda:99"})
    assert load_torch_file(path, map_location={"cpu": "cpu"})["weight"].device.type == "cpu"
    with pytest.raises(ValueError, match=r"map_location must be a device .* got dict"):
        AntecedentRanker.load(path, map_location={"cpu": "cpu"})
    assert AntecedentRanker.load(path, map_location=torch.device("cpu")).weight.device.type == "cpu"


def _ranker_document() -> DocumentFeatures:
    return DocumentFeatures(
        n=3, pair_i=torch.tensor([1, 2, 2]), pair_j=torch.tensor([0, 0, 1]),
        pair_feats=torch.tensor([[1], [2], [3]]), new_feats=torch.tensor([[4], [4], [4]]),
        entity=torch.tensor([0, 1, 0]), max_distance=2,
    )  # fmt: skip


def _meta_model_calls() -> dict:
    words, tags = torch.randint(0, 5, (2, 3)), torch.randint(0, 4, (2, 3))
    ranker = AntecedentRanker(n_bits=4, max_distance=2).to("meta")
    f = _ranker_document()
    return {
        "hmm.marginals": lambda: HMM(4, 5).to("meta").marginals(words),
        "hmm.log_likelihood": lambda: HMM(4, 5).to("meta").log_likelihood(words),
        "crf.marginals": lambda: CRFTagger(4, 5).to("meta").marginals(words),
        "crf.fit": lambda: CRFTagger(4, 5).to("meta").fit(words, tags),
        "crf.negative_log_likelihood": lambda: (
            CRFTagger(4, 5).to("meta").negative_log_likelihood(words, tags)
        ),
        "ranker.forward": lambda: ranker(f),
        "ranker.gold_log_likelihood": lambda: ranker.gold_log_likelihood(f),
        "ranker.fit": lambda: ranker.fit([f], l2=1e-3, epochs=1),
    }


@pytest.mark.parametrize("entry", sorted(_meta_model_calls()))
def test_a_model_on_the_meta_device_is_refused_by_name(entry) -> None:
    """A model moved to (or built on) the meta device had failed inside torch ("not on the
    expected device", torch.nonzero's meta error) or, for the ranker's forward, silently
    returned meta scores."""
    with pytest.raises(ValueError, match=r"^the model's \S+ is on the meta device"):
        _meta_model_calls()[entry]()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("entity", torch.tensor([False, True, False]), "DocumentFeatures.entity must be"),
        ("pair_j", torch.tensor([0, 0]), "DocumentFeatures.pair_j must have 3 rows"),
        ("entity", torch.zeros(3, dtype=torch.long, device="meta"), "on the meta device"),
        ("pair_i", torch.tensor([1, 2, 3]), "every pair needs"),
    ],
)
def test_gold_options_checks_its_document(field, value, message) -> None:
    """The public static gold_options had skipped the document checks: an IndexError, a
    meta error, or a bool entity read as every mention known."""
    f = dataclasses.replace(_ranker_document(), **{field: value})
    with pytest.raises(ValueError, match=message):
        AntecedentRanker.gold_options(f)
    with pytest.raises(ValueError, match="expected DocumentFeatures"):
        AntecedentRanker.gold_options("doc")
    gold = AntecedentRanker.gold_options(_ranker_document())
    assert gold.tolist() == [[True, False, False], [False, True, False], [True, False, False]]


def _flag_calls() -> dict[str, object]:
    """Each boolean option of the models' public entries, given the truthy string "no"."""
    from calib_metrics.models import linear_chain

    fitted = HMM(2, 3).fit(WORDS, TAGS)
    return {
        "CRFTagger freeze_boundary": lambda: CRFTagger(2, 3, freeze_boundary="no"),
        "FeatureCRF freeze_boundary": lambda: FeatureCRF(2, 3, freeze_boundary="no"),
        "CRFTagger.fit progress": lambda: CRFTagger(2, 3).fit(WORDS, TAGS, progress="no"),
        "AntecedentRanker.fit progress": lambda: AntecedentRanker(4, 2).fit(
            [_document()], epochs=1, progress="no"
        ),
        "posterior_marginals pairwise": lambda: linear_chain.posterior_marginals(
            *_chain(), pairwise="no"
        ),
        "ChainTagger.marginals pairwise": lambda: fitted.marginals(WORDS, pairwise="no"),
    }


@pytest.mark.parametrize("entry", sorted(_flag_calls()))
def test_a_boolean_option_must_be_true_or_false(entry, capsys) -> None:
    """A non-empty string is truthy: freeze_boundary="no" had frozen the boundary scores,
    progress="no" had shown the bar, pairwise="no" had built the pairwise output."""
    name = entry.split()[-1]
    with pytest.raises(ValueError, match=f"{name} must be True or False, got 'no'"):
        _flag_calls()[entry]()
    assert capsys.readouterr().err == ""  # and no progress bar was drawn


def _padded_tag_entries():
    """Every entry that checks gold tags against K = 2: ``call(tags, mask)``."""
    from calib_metrics import queries
    from calib_metrics.models import linear_chain

    features = WORDS[..., None]
    zeros, unigram = torch.zeros(2), torch.full((2, 3, 2), 0.5)
    pairwise = torch.full((2, 2, 2, 2), 0.25)
    return {
        "HMM.fit": lambda t, m: HMM(2, 4).fit(WORDS, t, m),
        "CRFTagger.fit": lambda t, m: CRFTagger(2, 4).fit(WORDS, t, m, progress=False),
        "CRFTagger.log_likelihood": lambda t, m: CRFTagger(2, 4).log_likelihood(WORDS, t, m),
        "FeatureCRF.fit": lambda t, m: FeatureCRF(2, 4).fit(features, t, m, max_iter=1),
        "sequence_score": lambda t, m: linear_chain.sequence_score(
            torch.randn(2, 3, 2), torch.zeros(2, 2), zeros, zeros, t, m
        ),
        "tag_queries": lambda t, m: queries.tag_queries(unigram, t, m),
        "top_tag_pairs": lambda t, m: queries.top_tag_pairs(t, m, num_tags=2, top_k=1),
        "tag_pair_queries": lambda t, m: queries.tag_pair_queries(pairwise, t, m),
    }


@pytest.mark.parametrize("entry", list(_padded_tag_entries()))
def test_gold_tags_padded_with_minus_100_are_told_the_mask_that_drops_them(entry) -> None:
    """Tags padded with -100 and no mask had been told "tags must lie in [0, 2) where mask
    is True" alone by the taggers, sequence_score and the tag queries; the span functions
    named the fix. Now every one names the id and the mask, the caller's own kept."""
    call = _padded_tag_entries()[entry]
    padded = TAGS.masked_fill(torch.tensor([[False] * 3, [False, False, True]]), -100)
    fix = "where mask is True, got -100 (padding? pass mask=(tags != -100))"
    with pytest.raises(ValueError, match=re.escape(f"tags must lie in [0, 2) {fix}")):
        call(padded, None)
    kept = torch.ones(2, 3, dtype=torch.bool)  # a mask that keeps the padding
    with pytest.raises(ValueError, match=re.escape("got -100 (padding? pass mask=mask & (tags")):
        call(padded, kept)
    with pytest.raises(
        ValueError, match=re.escape("tags must lie in [0, 2) where mask is True, got 7")
    ):
        call(TAGS.masked_fill(padded < 0, 7), None)  # no padding: no padding hint
    call(padded, padded != -100)  # the fix, as written, runs


def test_span_functions_keep_the_callers_mask_in_their_padding_fix() -> None:
    from calib_metrics import queries

    tags = torch.tensor([[1, 2, -100]])
    with pytest.raises(ValueError, match=re.escape("(padding? pass mask=mask & (tags != -100))")):
        queries.span_indicators(
            tags, torch.ones(1, 3, dtype=torch.bool), begin=1, inside=2, max_length=2
        )
