"""``left_align`` moves a sub-word batch into a chain's layout and ``restore`` maps the
results back. Its users had been given a 300-character argsort/gather in the padding
error, and the chain's inference errors ("mask must be left-aligned") gave no fix at all:
each error now names the helper's call, run here as written."""

from __future__ import annotations

import re

import host_reads
import pytest
import torch

from calib_metrics.models import LeftAligned, left_align
from calib_metrics.models.feature_crf import FeatureCRF
from calib_metrics.models.hmm import HMM
from calib_metrics.models.linear_chain import posterior_marginals, sample
from calib_metrics.recalibration import ChainTemperature

PAD = -100


def _sub_word_batch(dtype=torch.float64):
    """A 6 × 7 chain batch of 3 tags: [CLS] -100 in every row, sub-word pieces -100 in rows
    1 and 4, ragged trailing padding, row 3 padding alone."""
    g = torch.Generator().manual_seed(0)
    emissions = torch.randn(6, 7, 3, generator=g, dtype=torch.float64)
    tags = sample(*_chain(emissions), n_samples=1, generator=g)[0]
    emissions = emissions.to(dtype)
    tags[:, 0] = PAD
    tags[1, 2], tags[4, 3] = PAD, PAD
    for row in range(6):
        tags[row, 5 + row % 2 :] = PAD
    tags[3] = PAD
    return emissions, tags


def _row_by_row(emissions: torch.Tensor, keep: torch.Tensor) -> list[torch.Tensor]:
    """Each non-empty row's kept tokens, in order: the layout built one row at a time."""
    return [e[k] for e, k in zip(emissions, keep) if bool(k.any())]


def test_kept_tokens_move_to_the_front_in_order_and_empty_rows_are_dropped() -> None:
    emissions, tags = _sub_word_batch()
    aligned = left_align(emissions, tags)
    keep = tags != PAD
    expected = _row_by_row(emissions, keep)
    assert aligned.rows.tolist() == [0, 1, 2, 4, 5]
    assert aligned.mask.sum(1).tolist() == [len(e) for e in expected]
    for row, kept in enumerate(expected):
        original = int(aligned.rows[row])
        assert torch.equal(aligned.emissions[row, : len(kept)], kept)
        assert torch.equal(aligned.tags[row, : len(kept)], tags[original][keep[original]])
    # A chain's layout: every row's first token kept, then a prefix.
    assert bool(aligned.mask[:, 0].all())
    assert not bool((aligned.mask[:, 1:] & ~aligned.mask[:, :-1]).any())


def test_restore_puts_tags_emissions_and_samples_back() -> None:
    emissions, tags = _sub_word_batch()
    aligned = left_align(emissions, tags)
    keep = tags != PAD
    assert torch.equal(aligned.restore(aligned.tags, fill=PAD), tags)
    back = aligned.restore(aligned.emissions, fill=float("nan"))
    assert torch.equal(back[keep], emissions[keep])
    assert bool(back[~keep].isnan().all())
    draws = sample(*_chain(aligned.emissions), aligned.mask, n_samples=4, generator=_gen())
    restored = aligned.restore(draws, fill=PAD, dim=1)  # [S, B', T] -> [S, B, T]
    assert restored.shape == (4, 6, 7)
    for s in range(4):
        assert torch.equal(restored[s], aligned.restore(draws[s], fill=PAD))
    assert bool((restored[:, ~keep] == PAD).all()) and bool((restored[:, keep] >= 0).all())


def test_restored_marginals_are_each_sentence_s_own() -> None:
    """The aligned batch's marginals, put back, equal those of each row's kept tokens as a
    sentence of its own; the positions left out and the empty row hold the fill."""
    emissions, tags = _sub_word_batch()
    aligned = left_align(emissions, tags)
    unigram = posterior_marginals(*_chain(aligned.emissions), aligned.mask).unigram
    back = aligned.restore(unigram)
    keep = tags != PAD
    for row in range(6):
        if not bool(keep[row].any()):
            assert bool((back[row] == 0).all())
            continue
        own = posterior_marginals(*_chain(emissions[row][keep[row]][None])).unigram[0]
        torch.testing.assert_close(back[row][keep[row]], own, rtol=0, atol=1e-12)
        assert bool((back[row][~keep[row]] == 0).all())


def test_an_all_kept_batch_comes_back_unchanged() -> None:
    g = torch.Generator().manual_seed(1)
    emissions, tags = torch.randn(4, 5, 3, generator=g), torch.randint(0, 3, (4, 5), generator=g)
    for aligned in (left_align(emissions, tags), left_align(emissions)):
        assert torch.equal(aligned.emissions, emissions)
        assert bool(aligned.mask.all())
        assert aligned.rows.tolist() == [0, 1, 2, 3]
        assert torch.equal(aligned.positions, torch.arange(5).expand(4, 5))
        assert torch.equal(aligned.restore(emissions), emissions)
    assert torch.equal(left_align(emissions, tags).tags, tags)


def test_a_given_mask_is_read_with_the_tags_and_in_place_of_them() -> None:
    """A trailing mask (HuggingFace's attention mask) with -100 tags, or a mask of the
    first sub-word alone without tags, as an integer 0/1 tensor."""
    emissions, tags = _sub_word_batch()
    first_pieces = (tags != PAD).long()
    by_mask = left_align(emissions, mask=first_pieces)
    assert by_mask.tags is None
    assert torch.equal(by_mask.positions, left_align(emissions, tags).positions)
    attention = torch.ones_like(tags, dtype=torch.bool)
    attention[2, 1] = False  # a real tag, masked: left out too
    both = left_align(emissions, tags, attention)
    assert both.mask.sum().item() == (tags != PAD).sum().item() - 1


@pytest.mark.parametrize(
    ("dtype", "tag_dtype"), [(torch.float16, torch.int16), (torch.bfloat16, torch.int32)]
)
def test_dtypes_are_kept(dtype, tag_dtype) -> None:
    emissions, tags = _sub_word_batch(dtype)
    aligned = left_align(emissions, tags.to(tag_dtype))
    assert aligned.emissions.dtype == dtype and aligned.tags.dtype == tag_dtype
    assert aligned.mask.dtype == torch.bool
    assert aligned.restore(aligned.emissions).dtype == dtype
    words = torch.randint(1, 9, (6, 7), dtype=torch.uint8)  # a tagger's words [B, T]
    assert left_align(words, tags).emissions.dtype == torch.uint8


def test_one_host_read_and_none_to_restore() -> None:
    """As the docstring states: which rows keep a token; none for restore."""
    emissions, tags = _sub_word_batch()
    assert host_reads.stated_syncs(left_align) == 1
    assert host_reads.count_reads(lambda: left_align(emissions, tags)) == 1
    aligned = left_align(emissions, tags, tags != PAD)
    assert host_reads.count_reads(lambda: aligned.restore(aligned.emissions)) == 0


def test_meta_tensors_are_refused_by_name() -> None:
    emissions, tags = _sub_word_batch()
    with pytest.raises(ValueError, match=r"^emissions is on the meta device"):
        left_align(emissions.to("meta"), tags)
    with pytest.raises(ValueError, match=r"^tags is on the meta device"):
        left_align(emissions, tags.to("meta"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_on_cuda_everything_stays_there_with_one_sync() -> None:
    emissions, tags = _sub_word_batch()
    on_cuda = emissions.to("cuda"), tags.to("cuda")
    aligned = left_align(*on_cuda)
    assert isinstance(aligned, LeftAligned)
    assert {x.device.type for x in aligned[:5]} == {"cuda"}
    assert host_reads.cuda_syncs(lambda: left_align(*on_cuda)) == 1
    assert host_reads.cuda_syncs(lambda: aligned.restore(aligned.emissions)) == 0
    cpu = left_align(emissions, tags).restore(left_align(emissions, tags).emissions)
    assert torch.equal(aligned.restore(aligned.emissions).cpu(), cpu)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e, t: left_align(e[0, 0], t), r"emissions must be a \[B, T, \*\] tensor"),
        (lambda e, t: left_align(e, t.double()), "tags must be an integer tensor"),
        (lambda e, t: left_align(e, t[:, 1:]), r"tags must be \[B, T\] = \(6, 7\)"),
        (lambda e, t: left_align(e, mask=torch.full((6, 7), 2)), "mask must be bool or"),
        (lambda e, t: left_align(e, mask=torch.ones(6, 7)), r"mask must be bool \(or integer"),
        (lambda e, t: left_align(e, t, ignore_index=-1.5), "ignore_index must be an int"),
        (lambda e, t: left_align(e, t).restore(e), r"values must be \[B', T\] = \(5, 7\)"),
        (lambda e, t: left_align(e, t).restore(e, dim=2), "dim must index B' of values"),
    ],
)
def test_bad_input_is_refused_by_name(call, message) -> None:
    emissions, tags = _sub_word_batch()
    with pytest.raises(ValueError, match=message):
        call(emissions, tags)


# The inference errors' hint, followed as written.
_HINT = re.compile(r"aligned = calib_metrics\.models\.(left_align\([^)]*\)) moves the kept")


def _told_call(error: pytest.ExceptionInfo) -> str:
    found = _HINT.search(str(error.value))
    assert found, str(error.value)
    return found.group(1)


def test_chain_inference_errors_name_the_call_that_fixes_the_mask() -> None:
    """posterior_marginals, and ChainTemperature.marginals and .sample, had said only "mask
    must be left-aligned" of a mask of first sub-word pieces."""
    emissions, tags = _sub_word_batch()
    mask = tags != PAD
    fitted = ChainTemperature().fit(*_chain(emissions), tags.clamp(min=0))
    for infer in (
        lambda em, m: posterior_marginals(*_chain(em), m),
        lambda em, m: fitted.marginals(*_chain(em), m),
        lambda em, m: fitted.sample(*_chain(em), m, n_samples=2),
    ):
        with pytest.raises(ValueError, match=r"left-aligned|mask\[:, 0\]") as caught:
            infer(emissions, mask)
        call = _told_call(caught)
        assert call == "left_align(emissions, mask=mask)"
        aligned = eval(call, {"left_align": left_align, "emissions": emissions, "mask": mask})
        infer(aligned.emissions, aligned.mask)  # runs


def test_tagger_errors_name_the_call_on_their_own_inputs() -> None:
    """The HMM's and FeatureCRF's fit and inference: words (or features) and tags."""
    _, tags = _sub_word_batch()
    words = torch.randint(1, 9, (6, 7), generator=_gen())
    mask = tags != PAD
    names = {"left_align": left_align, "words": words, "features": words[..., None]}
    names |= {"tags": tags, "mask": mask}
    with pytest.raises(ValueError, match="mask") as caught:
        HMM(3, 9).fit(words, tags, mask)
    aligned = eval(_told_call(caught), names)
    assert _told_call(caught) == "left_align(words, tags, mask)"
    hmm = HMM(3, 9).fit(aligned.emissions, aligned.tags, aligned.mask)
    with pytest.raises(ValueError, match="mask") as caught:
        hmm.marginals(words, mask)
    assert _told_call(caught) == "left_align(words, mask=mask)"
    with pytest.raises(ValueError, match="mask") as caught:
        FeatureCRF(3, 9).fit(words[..., None], tags, mask)
    aligned = eval(_told_call(caught), names)
    FeatureCRF(3, 9).fit(aligned.emissions, aligned.tags, aligned.mask)


def _chain(emissions: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Fixed transitions, start and end of 3 tags beside ``emissions``."""
    g = torch.Generator().manual_seed(2)
    transitions = torch.randn(3, 3, generator=g, dtype=torch.float64).to(emissions.dtype)
    zeros = torch.zeros(3, dtype=emissions.dtype)
    return emissions, transitions, zeros, zeros


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(3)
