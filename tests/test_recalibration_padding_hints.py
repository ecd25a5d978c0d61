"""Padding passed to a fit is refused with the fix the docs give: the scalers had said only
"target must hold class indices in [0, 4)" of HuggingFace's -100, and "logits must be
[N, C] with C >= 2" of token logits [B, T, C], where the metrics, the command line and
``TemperatureRecalibration`` hint at padding; ``ChainTemperature`` had said "tags must lie
in [0, 3) at unmasked positions" of padded tags without a mask."""

from __future__ import annotations

import functools
import itertools
import re

import host_reads
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
    [(TemperatureScaling, "logits"), (PlattScaling, "scores"), (IsotonicCalibration, "scores")],
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
    first = r"-100 \(padding at a sentence's first position \(row 0\): "
    with pytest.raises(ValueError, match=first) as caught:
        ChainTemperature().fit(*potentials, padded)
    _follow(str(caught.value), potentials, padded)


def test_a_sentence_of_padding_alone_is_told_to_be_dropped_not_its_first_token() -> None:
    """A batch row that is all padding had been blamed as a leading special token ("drop or
    shift leading special tokens"): it is an empty sentence, which left_align drops."""
    potentials, tags = _sampled_chain()
    tags[:, 4:] = PAD
    tags[7] = PAD  # an empty sentence
    message = (
        "got -100 (padding filling row 7: from calib_metrics.models import left_align; aligned = "
        "left_align({}); fit(aligned.emissions, transitions, start, end, aligned.tags, "
        "mask=aligned.mask))"
    )
    told = message.format("emissions, tags")
    with pytest.raises(ValueError, match=re.escape(told) + "$") as caught:
        ChainTemperature().fit(*potentials, tags)
    assert "first position" not in str(caught.value)
    _follow(str(caught.value), potentials, tags)
    first_kept = torch.zeros(20, 6, dtype=torch.bool)
    first_kept[:, 0] = True  # a mask that keeps the empty row's first position
    told = message.format("emissions, tags, mask")
    with pytest.raises(ValueError, match=re.escape(told) + "$") as caught:
        ChainTemperature().fit(*potentials, tags, mask=first_kept)
    _follow(str(caught.value), potentials, tags, first_kept)


def _follow(message: str, potentials: tuple, tags: torch.Tensor, mask=None, fitted=None):
    """Run the code the hint at the end of ``message`` suggests, as written, and return what
    its call returns (``fit``'s module, or ``fitted.nll``'s float). Each hint had been
    followed into the next one: an empty row's into "pass mask=(tags != -100)", that one
    into "mask must be left-aligned" where sub-word pieces were -100. The helper it names
    is imported from where it says."""
    emissions, transitions, start, end = potentials
    names = {"emissions": emissions, "transitions": transitions, "start": start, "end": end}
    method = {"fit": ChainTemperature().fit} if fitted is None else {"nll": fitted.nll}
    names |= {"tags": tags, "mask": mask, **method}
    recipe = re.search(r": (from [\w.]+ import \w+; aligned = [^;]*); (\w+\(.*\))\)$", message)
    if recipe is not None:
        statements, call = recipe.groups()
        exec(statements, names)
        return eval(call, names)
    given = re.search(r"\(padding\? pass mask=(.*)\)$", message).group(1)
    return next(iter(method.values()))(*potentials, tags, mask=eval(given, names))


def test_a_row_whose_masked_tokens_hold_tags_is_no_empty_sentence() -> None:
    """A row whose one unmasked token is -100 and whose masked ones hold real tags had been
    called padding alone, and the hint's keep = (tags != -100).any(1) kept it: the same
    error again. The rows kept are those with an unmasked real tag."""
    g = torch.Generator().manual_seed(0)
    emissions = torch.randn(4, 5, 3, generator=g, dtype=torch.float64)
    transitions = torch.randn(3, 3, generator=g, dtype=torch.float64)
    start = end = torch.zeros(3, dtype=torch.float64)
    tags = torch.randint(0, 3, (4, 5), generator=g)
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[2, 1:] = False
    tags[2, 0] = PAD
    with pytest.raises(
        ValueError, match=re.escape("aligned = left_align(emissions, tags, mask)")
    ) as e:
        ChainTemperature().fit(emissions, transitions, start, end, tags, mask=mask)
    _follow(str(e.value), (emissions, transitions, start, end), tags, mask)


def test_a_leading_special_token_is_told_with_an_empty_sentence() -> None:
    """With every row's [CLS] tagged -100 and one row padding alone, the empty row's hint
    had been given, and the call it suggests refused ("mask[:, 0] must be all True"); then
    the [CLS] alone, whose fix ("drop or shift leading special tokens") left the empty row:
    both are told, with one fix for both."""
    potentials, tags = _sampled_chain()
    tags[:, 4:] = PAD
    tags[:, 0] = PAD  # a [CLS] tagged as padding in every sentence
    tags[7] = PAD  # and an empty sentence
    both = r"-100 \(padding at a sentence's first position \(row 0\) and filling row 7: "
    for mask in (None, torch.ones(20, 6, dtype=torch.bool)):
        with pytest.raises(ValueError, match=both) as caught:
            ChainTemperature().fit(*potentials, tags, mask=mask)
        assert isinstance(_follow(str(caught.value), potentials, tags, mask), ChainTemperature)


def test_nll_is_told_to_call_nll_on_the_kept_rows() -> None:
    """The empty-row hint, shared by ``fit`` and ``nll``, had told an ``nll`` caller to call
    ``fit(...)``; the call it suggests now is ``nll``'s, and it runs."""
    potentials, tags = _sampled_chain()
    fitted = ChainTemperature().fit(*potentials, tags)
    tags[:, 4:] = PAD
    tags[7] = PAD
    with pytest.raises(ValueError, match=re.escape("; nll(aligned.emissions, ")) as caught:
        fitted.nll(*potentials, tags)
    assert isinstance(_follow(str(caught.value), potentials, tags, fitted=fitted), float)


def test_a_bool_mask_or_none_costs_no_read_of_its_values() -> None:
    """fit and nll had read whether the mask holds integers other than 0 and 1 on every
    call, of a bool mask (or none) too, which holds none: one host read more."""
    potentials, tags = _sampled_chain()
    fitted = ChainTemperature().fit(*potentials, tags)
    ones = torch.ones_like(tags, dtype=torch.bool)

    def reads(mask: torch.Tensor | None) -> int:
        return host_reads.count_reads(lambda: fitted.nll(*potentials, tags, mask=mask))

    reads(None)  # the first call's one-off set-up is not the mask's
    assert reads(None) == reads(ones) == reads(ones.long()) - 1


_MIXES = [
    dict(zip(("empty", "leading", "inside", "trailing"), bits))
    for bits in itertools.product((False, True), repeat=4)
]
# A mask given beside the tags: none, all True, HuggingFace's attention mask (True but at
# the trailing padding), and the caller's own tags != -100.
_MASKS = ("none", "ones", "attention", "own")


def _mixed_batch(mix: dict[str, bool]) -> tuple[tuple[torch.Tensor, ...], torch.Tensor, dict]:
    """A 20 × 8 chain's potentials and gold tags with the padding problems of ``mix``: row 7
    empty, every row's [CLS] -100, sub-word pieces -100 in rows 1 and 4, ragged trailing
    padding; and the row told first for each problem but the trailing one."""
    g = torch.Generator().manual_seed(1)
    emissions = torch.randn(20, 8, 3, generator=g, dtype=torch.float64)
    transitions = torch.randn(3, 3, generator=g, dtype=torch.float64)
    start = end = torch.zeros(3, dtype=torch.float64)
    tags = sample(emissions, transitions, start, end, n_samples=1, generator=g)[0]
    if mix["trailing"]:
        for row in range(20):
            tags[row, 5 + row % 3 :] = PAD
    if mix["leading"]:
        tags[:, 0] = PAD
    if mix["inside"]:
        tags[1, 2], tags[4, 3] = PAD, PAD
    if mix["empty"]:
        tags[7] = PAD
    told = {"empty": "row 7", "leading": "first position (row 0)", "inside": "sentence (row 1"}
    told = {problem: text for problem, text in told.items() if mix[problem]}
    return (2 * emissions, 2 * transitions, start, end), tags, told


@functools.cache
def _fitted_on_mixed_batch() -> ChainTemperature:
    potentials, tags, _ = _mixed_batch(
        dict.fromkeys(("empty", "leading", "inside", "trailing"), False)
    )
    return ChainTemperature().fit(*potentials, tags)


def _given_mask(kind: str, tags: torch.Tensor) -> torch.Tensor | None:
    if kind == "none":
        return None
    if kind == "ones":
        return torch.ones_like(tags, dtype=torch.bool)
    if kind == "attention":
        trailing = (tags != PAD).flip(1).cumsum(1).flip(1) == 0
        return ~trailing | (torch.arange(8) < 2)  # an empty row's [CLS] and [SEP] attend
    return tags != PAD


@pytest.mark.parametrize("mask_kind", _MASKS)
@pytest.mark.parametrize("mix", _MIXES, ids=lambda mix: "+".join(k for k, v in mix.items() if v))
def test_every_mix_of_padding_is_fixed_by_following_the_first_hint_once(mix, mask_kind) -> None:
    """Sub-word pieces -100 inside sentences, with an empty row, had been told to drop the
    row and mask the padding: that mask was then refused ("mask must be left-aligned"),
    and the fixes of a leading [CLS] and of an empty row each led into the other's error.
    Whatever the mix, the first error names each problem and its fix, run as written,
    fits (and scores, for nll)."""
    potentials, tags, told = _mixed_batch(mix)
    mask = _given_mask(mask_kind, tags)
    readable = not told and (not mix["trailing"] or mask_kind in ("attention", "own"))
    for method, follower in (("fit", None), ("nll", _fitted_on_mixed_batch())):
        call = getattr(follower or ChainTemperature(), method)
        if readable:  # no padding, or trailing padding the mask given drops
            call(*potentials, tags, mask=mask)
            continue
        with pytest.raises(ValueError, match=r"aligned = left_align\(|pass mask=") as caught:
            call(*potentials, tags, mask=mask)
        message = str(caught.value)
        assert all(text in message for text in told.values()), message
        followed = _follow(message, potentials, tags, mask, follower)
        if follower is None:
            assert isinstance(followed, ChainTemperature)
        else:  # the fix scores the real tokens, no others
            assert followed == pytest.approx(follower.nll(*_real_tokens(potentials, tags)))


def _real_tokens(potentials: tuple, tags: torch.Tensor) -> tuple:
    """The chain of each row's tokens tagged other than -100, moved to the front, the rows
    without one dropped: built row by row, beside the hint's tensor code."""
    emissions, *rest = potentials
    rows = [(e[t != PAD], t[t != PAD]) for e, t in zip(emissions, tags) if bool((t != PAD).any())]
    kept_emissions = torch.zeros(len(rows), *emissions.shape[1:], dtype=emissions.dtype)
    kept_tags = torch.zeros(len(rows), tags.shape[1], dtype=tags.dtype)
    mask = torch.zeros(len(rows), tags.shape[1], dtype=torch.bool)
    for i, (e, t) in enumerate(rows):
        kept_emissions[i, : len(t)], kept_tags[i, : len(t)], mask[i, : len(t)] = e, t, True
    return kept_emissions, *rest, kept_tags, mask
