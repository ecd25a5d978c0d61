"""Padding passed to a fit is refused with the fix the docs give: the scalers had said only
"target must hold class indices in [0, 4)" of HuggingFace's -100, and "logits must be
[N, C] with C >= 2" of token logits [B, T, C], where the metrics, the command line and
``TemperatureRecalibration`` hint at padding; ``ChainTemperature`` had said "tags must lie
in [0, 3) at unmasked positions" of padded tags without a mask."""

from __future__ import annotations

import re

import pytest
import torch

from calib_metrics.models.linear_chain import sample
from calib_metrics.recalibration import (
    ChainTemperature,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)

PAD = -100
DROP = "keep = target != -100; fit(logits[keep], target[keep])"


def _tokens(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Token logits [B, T, C] = [6, 8, 4] and their class ids, each sentence's tail padded."""
    g = torch.Generator().manual_seed(seed)
    logits = 2 * torch.randn(6, 8, 4, generator=g, dtype=torch.float64)
    target = torch.multinomial(logits.softmax(-1).reshape(-1, 4), 1, generator=g).reshape(6, 8)
    target[:, 6:] = PAD
    return logits, target


@pytest.mark.parametrize("scaler", [TemperatureScaling, VectorScaling, MatrixScaling])
def test_padding_ids_are_refused_with_the_fix(scaler) -> None:
    logits, target = _tokens()
    message = rf"class indices in [0, 4), got -100 (padding? drop it first: {DROP})"
    with pytest.raises(ValueError, match=re.escape(message)):
        scaler().fit(logits.reshape(-1, 4), target.reshape(-1))
    keep = target != PAD
    scaler().fit(logits[keep], target[keep])  # the fix fits


def test_a_class_id_past_the_logits_gets_no_padding_hint() -> None:
    logits, target = _tokens()
    target = target.masked_fill(target == PAD, 4)
    with pytest.raises(ValueError, match=r"class indices in \[0, 4\), got 4$"):
        TemperatureScaling().fit(logits.reshape(-1, 4), target.reshape(-1))


@pytest.mark.parametrize("scaler", [TemperatureScaling, VectorScaling, MatrixScaling])
def test_token_logits_are_refused_with_the_fix(scaler) -> None:
    logits, target = _tokens()
    message = f"got shape (6, 8, 4) (token logits? flatten them, dropping any padding: {DROP})"
    with pytest.raises(ValueError, match=re.escape(message)):
        scaler().fit(logits, target)


@pytest.mark.parametrize(
    ("make", "inputs"),
    [(TemperatureScaling, "logits"), (PlattScaling, "logits"), (IsotonicCalibration, "scores")],
)
def test_binary_padding_is_refused_with_the_fix_naming_the_inputs(make, inputs) -> None:
    logits, target = _tokens()
    scores, labels = logits[..., 0].reshape(-1), (target.reshape(-1) % 2).float()
    labels[target.reshape(-1) == PAD] = PAD
    fix = f"keep = target != -100; fit({inputs}[keep], target[keep])"
    message = f"only 0 and 1 for binary recalibration, got -100 (padding? drop it first: {fix})"
    with pytest.raises(ValueError, match=re.escape(message)):
        make().fit(scores, labels)
    with pytest.raises(ValueError, match=r"only 0 and 1 for binary recalibration, got 2$"):
        make().fit(scores, labels.masked_fill(labels == PAD, 2))


@pytest.mark.parametrize("make", [TemperatureScaling, PlattScaling, IsotonicCalibration])
def test_labels_coded_minus_one_plus_one_are_not_called_padding(make) -> None:
    # Dropping the -1s, as the padding hint had said, left a single class.
    g = torch.Generator().manual_seed(0)
    scores = 2 * torch.randn(200, generator=g, dtype=torch.float64)
    labels = torch.bernoulli(torch.sigmoid(scores), generator=g)
    message = "got -1 (labels coded -1/+1? pass (target + 1) / 2)"
    with pytest.raises(ValueError, match=re.escape(message) + "$"):
        make().fit(scores, 2 * labels - 1)
    make().fit(scores, (2 * labels - 1 + 1) / 2)  # the fix fits


def test_a_huge_padding_value_is_written_as_a_float_literal() -> None:
    scores, labels = torch.randn(50, dtype=torch.float64), torch.zeros(50)
    labels[:25], labels[-1] = 1, -1e30  # float32: -1e30 is 1.0000000150474662e+30 there
    message = "got -1e+30 (padding? drop it first: keep = target != -1e+30; "
    with pytest.raises(ValueError, match=re.escape(message)):
        PlattScaling().fit(scores, labels)


def _sampled_chain() -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """A 20 × 6 chain's potentials at T = 0.5, and tags sampled from it at T = 1."""
    g = torch.Generator().manual_seed(0)
    emissions = torch.randn(20, 6, 3, generator=g, dtype=torch.float64)
    transitions = torch.randn(3, 3, generator=g, dtype=torch.float64)
    start = end = torch.zeros(3, dtype=torch.float64)
    tags = sample(emissions, transitions, start, end, n_samples=1, generator=g)[0]
    return (2 * emissions, 2 * transitions, start, end), tags


def test_padded_chain_tags_without_a_mask_are_told_to_pass_one() -> None:
    potentials, tags = _sampled_chain()
    tags[:, 4:] = PAD
    message = "tags must lie in [0, 3) at unmasked positions, got -100 (padding? pass mask="
    with pytest.raises(ValueError, match=re.escape(message + "(tags != -100))")):
        ChainTemperature().fit(*potentials, tags)
    ChainTemperature().fit(*potentials, tags, mask=tags != PAD)  # the fix fits


def test_chain_padding_hints_that_work_first_token_and_given_mask() -> None:
    # "pass mask=(tags != -100)" had failed on both: a mask must keep every first token,
    # and a mask already given must be kept.
    potentials, tags = _sampled_chain()
    padded = tags.clone()
    padded[:, 4:] = PAD
    given = torch.ones(20, 6, dtype=torch.bool)
    with pytest.raises(ValueError, match=re.escape("(padding? pass mask=mask & (tags != -100))")):
        ChainTemperature().fit(*potentials, padded, mask=given)
    ChainTemperature().fit(*potentials, padded, mask=given & (padded != PAD))
    padded[:, 0] = PAD  # a [CLS] tagged as padding
    with pytest.raises(ValueError, match=r"-100 \(padding at a sentence's first position: "):
        ChainTemperature().fit(*potentials, padded)


def test_a_sentence_of_padding_alone_is_told_to_be_dropped_not_its_first_token() -> None:
    """A batch row that is all padding had been blamed as a leading special token ("drop or
    shift leading special tokens"): it is an empty sentence, dropped with its row."""
    potentials, tags = _sampled_chain()
    tags[:, 4:] = PAD
    tags[7] = PAD  # an empty sentence
    message = (
        "got -100 (row 7 is padding alone, a sentence without tokens, which no mask can "
        "drop: drop such rows first, keep = (tags != -100).any(1); fit(emissions[keep], "
        "transitions, start, end, tags[keep], mask="
    )
    with pytest.raises(ValueError, match=re.escape(message + "(tags[keep] != -100)))")) as caught:
        ChainTemperature().fit(*potentials, tags)
    assert "first position" not in str(caught.value)
    _follow(str(caught.value), potentials, tags)
    first_kept = torch.zeros(20, 6, dtype=torch.bool)
    first_kept[:, 0] = True  # a mask that keeps the empty row's first position
    hint = message + "mask[keep] & (tags[keep] != -100)))"
    with pytest.raises(ValueError, match=re.escape(hint)) as caught:
        ChainTemperature().fit(*potentials, tags, mask=first_kept)
    _follow(str(caught.value), potentials, tags, first_kept)


def _follow(message: str, potentials: tuple, tags: torch.Tensor, mask=None) -> None:
    """Run the code an empty row's hint suggests, as written: its fit had then refused the
    other rows' padding ("pass mask=(tags != -100)")."""
    keep, call = re.search(r"keep = (.*?); (fit\(.*\))\)$", message).groups()
    emissions, transitions, start, end = potentials
    names = {"emissions": emissions, "transitions": transitions, "start": start, "end": end}
    names |= {"tags": tags, "mask": mask, "fit": ChainTemperature().fit}
    names["keep"] = eval(keep, names)
    assert isinstance(eval(call, names), ChainTemperature)


def test_a_row_whose_masked_tokens_hold_tags_is_no_empty_sentence() -> None:
    """A row whose one unmasked token is -100 and whose masked ones hold real tags had been
    called padding alone, and the hint's keep = (tags != -100).any(1) kept it: the same
    error again. Its first token is told, as any row's."""
    g = torch.Generator().manual_seed(0)
    emissions = torch.randn(4, 5, 3, generator=g, dtype=torch.float64)
    transitions = torch.randn(3, 3, generator=g, dtype=torch.float64)
    start = end = torch.zeros(3, dtype=torch.float64)
    tags = torch.randint(0, 3, (4, 5), generator=g)
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[2, 1:] = False
    tags[2, 0] = PAD
    with pytest.raises(ValueError, match=r"-100 \(padding at a sentence's first position: "):
        ChainTemperature().fit(emissions, transitions, start, end, tags, mask=mask)


def test_a_leading_special_token_is_told_before_an_empty_sentence() -> None:
    """With every row's [CLS] tagged -100 and one row padding alone, the empty row's hint
    had been given, and the call it suggests refused ("mask[:, 0] must be all True"): the
    kept rows' first tokens are told first."""
    potentials, tags = _sampled_chain()
    tags[:, 4:] = PAD
    tags[:, 0] = PAD  # a [CLS] tagged as padding in every sentence
    tags[7] = PAD  # and an empty sentence
    for mask in (None, torch.ones(20, 6, dtype=torch.bool)):
        with pytest.raises(ValueError, match=r"-100 \(padding at a sentence's first position: "):
            ChainTemperature().fit(*potentials, tags, mask=mask)


def test_nll_is_told_to_call_nll_on_the_kept_rows() -> None:
    """The empty-row hint, shared by ``fit`` and ``nll``, had told an ``nll`` caller to call
    ``fit(...)``; the call it suggests now is ``nll``'s, and it runs."""
    potentials, tags = _sampled_chain()
    fitted = ChainTemperature().fit(*potentials, tags)
    tags[:, 4:] = PAD
    tags[7] = PAD
    with pytest.raises(ValueError, match=r"\.any\(1\); nll\(emissions\[keep\], ") as caught:
        fitted.nll(*potentials, tags)
    keep, call = re.search(r"keep = (.*?); (nll\(.*\))\)$", str(caught.value)).groups()
    emissions, transitions, start, end = potentials
    names = {"emissions": emissions, "transitions": transitions, "start": start, "end": end}
    names |= {"tags": tags, "nll": fitted.nll}
    names["keep"] = eval(keep, names)
    assert isinstance(eval(call, names), float)
