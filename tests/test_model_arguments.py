"""The reference models' public entries refuse what they cannot fit on, with a ValueError
naming it. Once: an infinite or NaN setting fitted NaN weights without a word (the CRF
after 250 evaluations), an empty batch failed inside torch (IndexError, RuntimeError) or
silently reset a fitted HMM, and the ranker's generator was a TypeError from randperm."""

from __future__ import annotations

import math

import pytest
import torch

from calib_metrics.models.coref import most_probable_antecedents
from calib_metrics.models.coref_ranker import AntecedentRanker, DocumentFeatures
from calib_metrics.models.crf import CRFTagger
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
    empty = torch.zeros(shape, dtype=torch.long)
    fitted = HMM(3, 5).fit(WORDS, TAGS)
    before = fitted.log_start.clone()
    for call in (
        lambda: fitted.fit(empty, empty),
        lambda: CRFTagger(3, 5).fit(empty, empty, progress=False),
        lambda: CRFTagger(3, 5).log_likelihood(empty, empty),
        lambda: CRFTagger(3, 5).negative_log_likelihood(empty, empty),
    ):
        with pytest.raises(ValueError, match=r"words must be \[B, T\] with B, T >= 1"):
            call()
    assert torch.equal(fitted.log_start, before)  # the fitted HMM is untouched


def test_no_mentions_have_no_most_probable_antecedents() -> None:
    """Every other coref function returns an empty tensor for N = 0; this one raised."""
    assert most_probable_antecedents(torch.zeros(2, 0, 0)).shape == (2, 0)
