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
from calib_metrics.models.linear_chain import posterior_marginals, sample, sequence_score
from calib_metrics.queries import span_indicators, span_marginals, span_queries, spans_inside
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


def test_pairwise_marginals_are_refused_with_how_to_read_them() -> None:
    """Pairwise marginals [B', T-1, K, K] had met the generic "values must be [B', T]":
    they have no per-token positions. The refusal says how to read them on the aligned
    batch, and that reading is checked here: row i's pair t is that of the kept tokens at
    original positions positions[i, t] and positions[i, t + 1] of row rows[i]."""
    emissions, tags = _sub_word_batch()
    aligned = left_align(emissions, tags)
    pairwise = posterior_marginals(*_chain(aligned.emissions), aligned.mask).pairwise
    assert pairwise.shape[:2] == (5, 6)
    told = [
        r"look like pairwise \(transition\) marginals",
        r"no per-token positions",
        r"row i is original row aligned\.rows\[i\]",
        r"pair t joins aligned positions t and t\+1",
        r"aligned\.positions\[i, t\] and aligned\.positions\[i, t\+1\], where "
        r"aligned\.mask\[i, t\+1\]",  # past the kept tokens positions lists the left-out
    ]
    for values, dim in ((pairwise, 0), (pairwise[None].expand(2, -1, -1, -1, -1), 1)):
        with pytest.raises(ValueError) as refused:
            aligned.restore(values, dim=dim)
        for said in told:
            assert re.search(said, str(refused.value)), (said, str(refused.value))
    keep = tags != PAD
    for i, row in enumerate(aligned.rows.tolist()):
        kept = keep[row].nonzero().squeeze(1)
        own = posterior_marginals(*_chain(emissions[row][kept][None])).pairwise[0]
        for t in range(len(kept) - 1):
            assert aligned.mask[i, t + 1]
            assert aligned.positions[i, t] == kept[t] and aligned.positions[i, t + 1] == kept[t + 1]
            torch.testing.assert_close(pairwise[i, t], own[t], rtol=0, atol=1e-12)
        assert not aligned.mask[i, len(kept) :].any()  # the pairs past them are padding


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
_FIX = "from calib_metrics.models import left_align; aligned = "


def _told_code(error: pytest.ExceptionInfo) -> str:
    """The code at the end of the error's hint, to paste: the helper's import first (the
    hint had read 'aligned = calib_metrics.models.left_align(...)', a NameError after
    'from calib_metrics.models import left_align')."""
    found = re.search(r": (from [\w.]+ import \w+; aligned = .*)\)$", str(error.value))
    assert found, str(error.value)
    return found.group(1)


def _run(code: str, names: dict) -> object:
    """Run ``code`` as written in ``names`` (its import too): the value of its last
    statement, when that is a call."""
    *statements, last = code.split("; ")
    exec("; ".join(statements), names)
    try:
        return eval(compile(last, "<hint>", "eval"), names)
    except SyntaxError:
        exec(last, names)
        return None


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
        code = _told_code(caught)
        assert code == _FIX + "left_align(emissions, mask=mask)"
        names = {"emissions": emissions, "mask": mask}
        _run(code, names)  # imports the helper itself
        infer(names["aligned"].emissions, names["aligned"].mask)  # runs


def test_tagger_errors_name_the_call_on_their_own_inputs() -> None:
    """The HMM's and FeatureCRF's fit and inference: words (or features) and tags."""
    _, tags = _sub_word_batch()
    words = torch.randint(1, 9, (6, 7), generator=_gen())
    mask = tags != PAD
    names = {"words": words, "features": words[..., None], "tags": tags, "mask": mask}
    with pytest.raises(ValueError, match="mask") as caught:
        HMM(3, 9).fit(words, tags, mask)
    assert _told_code(caught) == _FIX + "left_align(words, tags, mask)"
    _run(_told_code(caught), names)
    aligned = names["aligned"]
    hmm = HMM(3, 9).fit(aligned.emissions, aligned.tags, aligned.mask)
    with pytest.raises(ValueError, match="mask") as caught:
        hmm.marginals(words, mask)
    assert _told_code(caught) == _FIX + "left_align(words, mask=mask)"
    with pytest.raises(ValueError, match="mask") as caught:
        FeatureCRF(3, 9).fit(words[..., None], tags, mask)
    _run(_told_code(caught), names)
    aligned = names["aligned"]
    FeatureCRF(3, 9).fit(aligned.emissions, aligned.tags, aligned.mask)


def test_sequence_score_s_hint_moves_the_tags_and_scores_each_sentence() -> None:
    """The hint had aligned the emissions alone (left_align(emissions, mask=mask)): the
    tags, left in the sub-word layout, were scored against other tokens. Followed as
    written, it scores each kept row's own tokens, row aligned.rows[i] at i."""
    emissions, tags = _sub_word_batch()
    tags = tags.masked_fill(tags == PAD, 1)  # every piece tagged, the mask picks the words
    mask = torch.ones_like(tags, dtype=torch.bool)
    mask[:, 0], mask[1, 2], mask[4, 3], mask[3] = False, False, False, False
    potentials = _chain(emissions)
    with pytest.raises(ValueError, match=r"mask\[:, 0\]") as caught:
        sequence_score(*potentials, tags, mask)
    assert "aligned.rows[i]" in str(caught.value)
    names = dict(zip(("emissions", "transitions", "start", "end"), potentials))
    names |= {"tags": tags, "mask": mask, "sequence_score": sequence_score}
    scores = _run(_told_code(caught), names)
    rows = names["aligned"].rows.tolist()
    assert rows == [0, 1, 2, 4, 5]
    for i, row in enumerate(rows):
        own = sequence_score(emissions[row][mask[row]][None], *potentials[1:],
                             tags[row][mask[row]][None])  # fmt: skip
        torch.testing.assert_close(scores[i], own[0], rtol=0, atol=1e-12)


def _span_names(emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> dict:
    names = dict(zip(("emissions", "transitions", "start", "end"), _chain(emissions)))
    functions = {"span_marginals": span_marginals, "span_queries": span_queries}
    functions |= {"span_indicators": span_indicators, "spans_inside": spans_inside}
    return names | functions | {"tags": tags, "mask": mask}


def test_span_errors_name_the_aligned_batch_of_marginals_and_gold_spans() -> None:
    """span_queries, span_indicators and spans_inside had said only "mask must be
    left-aligned" of a mask of first sub-word pieces. Their hint aligns the chain's inputs
    and takes the span probabilities from that batch (a span runs over words: those of the
    sub-word layout cannot be moved); followed as written, it gives each sentence's own
    queries, as if each were a batch of its own."""
    emissions, tags = _sub_word_batch()
    mask = tags != PAD
    spans = {"begin": 1, "inside": 2}
    probs = span_marginals(*_chain(emissions), begin=1, inside=2, max_length=3)
    with pytest.raises(ValueError, match="left-aligned") as caught:
        span_queries(probs, tags, mask, top_k=2, **spans)
    q, y = _run(_told_code(caught), _span_names(emissions, tags, mask))
    kept = [row for row in range(6) if bool(mask[row].any())]
    own = [
        span_queries(
            span_marginals(*_chain(emissions[row][mask[row]][None]), max_length=3, **spans),
            tags[row][mask[row]][None], top_k=2, **spans,
        )
        for row in kept
    ]  # fmt: skip
    torch.testing.assert_close(q, torch.cat([o[0] for o in own]), rtol=0, atol=1e-12)
    assert torch.equal(y, torch.cat([o[1] for o in own]))
    with pytest.raises(ValueError, match="left-aligned") as caught:
        span_indicators(tags, mask, max_length=3, **spans)
    names = _span_names(emissions, tags, mask)
    gold = _run(_told_code(caught), names)
    assert gold.shape == (5, 7, 3) and names["aligned"].rows.tolist() == kept
    with pytest.raises(ValueError, match="left-aligned") as caught:
        spans_inside(mask, 3)
    inside = _run(_told_code(caught), _span_names(emissions, tags, mask))
    assert inside[:, 0, 0].all() and inside.shape == (5, 7, 3)


def test_span_marginals_hint_computes_spans_on_the_aligned_chain_and_maps_them_back() -> None:
    """span_marginals' own mask error had ended with the chain functions' hint, "call again
    on the kept tokens ...; aligned.restore(...) puts per-token results back", which does
    not apply to a table of spans (restore would put a span's start back, not the tokens it
    runs over) and named no call. It now names span_marginals on the aligned chain, and
    entry [i, t, l] as the span over row aligned.rows[i]'s tokens
    aligned.positions[i, t : t + l + 1]; followed as written, each kept sentence's spans
    are those of the sentence alone, at the original tokens the hint names."""
    emissions, tags = _sub_word_batch()
    mask = tags != PAD
    spans = {"begin": 1, "inside": 2, "max_length": 3}
    with pytest.raises(ValueError, match=r"mask\[:, 0\]|left-aligned") as caught:
        span_marginals(*_chain(emissions), mask, **spans)
    message = str(caught.value)
    assert "restore(...)" not in message and "per-token results" not in message
    assert "aligned.positions[i, t : t + l + 1]" in message, message
    names = _span_names(emissions, tags, mask)
    table = _run(_told_code(caught), names)
    aligned = names["aligned"]
    assert isinstance(table, torch.Tensor) and table.shape == (5, 7, 3)
    for i, row in enumerate(aligned.rows.tolist()):
        kept = int(mask[row].sum())
        own = span_marginals(*_chain(emissions[row][mask[row]][None]), **spans)[0]
        torch.testing.assert_close(table[i, :kept], own, rtol=0, atol=1e-12)
        # The tokens entry [i, t, l] runs over, as the hint maps them back.
        words = mask[row].nonzero().squeeze(1)
        for t in range(kept):
            for length in range(min(3, kept - t)):
                over = aligned.positions[i, t : t + length + 1]
                assert over.tolist() == words[t : t + length + 1].tolist()


def test_nothing_moved_is_returned_as_given() -> None:
    """A batch every row of which keeps a prefix had paid an argsort and two copies of the
    emissions (several times a clone); it is the inputs themselves, read once."""
    g = torch.Generator().manual_seed(1)
    emissions, tags = torch.randn(4, 5, 3, generator=g), torch.randint(0, 3, (4, 5), generator=g)
    tags[1, 3:] = PAD  # trailing padding: nothing moves either
    aligned = left_align(emissions, tags)
    assert aligned.emissions is emissions and aligned.tags is tags
    assert torch.equal(aligned.mask, tags != PAD)
    assert left_align(emissions).emissions is emissions
    assert host_reads.count_reads(lambda: left_align(emissions, tags)) == 1
    assert torch.equal(aligned.restore(aligned.tags, fill=PAD), tags)


def test_no_time_steps_keep_no_row() -> None:
    """T = 0 had raised an IndexError; no token is kept, so no row is, as for B = 0. The
    aligned batch is one step wide (a chain needs T >= 1: [0, 0, K] had been refused by
    every chain call), and restore gives its results back T = 0 wide."""
    for batch in (2, 0):
        for tags in (None, torch.zeros(batch, 0, dtype=torch.long)):
            aligned = left_align(torch.zeros(batch, 0, 3), tags)
            assert aligned.emissions.shape == (0, 1, 3) and aligned.rows.tolist() == []
            assert aligned.mask.shape == aligned.positions.shape == (0, 1)
            assert tags is None or aligned.tags.shape == (0, 1)
            assert (aligned.batch_size, aligned.length) == (batch, 0)
            assert aligned.restore(torch.zeros(0, 1)).shape == (batch, 0)
            assert aligned.restore(torch.zeros(2, 0, 1), dim=1).shape == (2, batch, 0)


def test_a_batch_of_empty_rows_goes_through_the_documented_flow_in_a_loop() -> None:
    """A batch whose every row is padding aligns to B' = 0, and the next call had failed
    with "emissions needs B >= 1": the loop left_align -> call -> restore broke at it.
    Every inference call takes no sentences and returns empty results, which restore
    fills; a fit, which has nothing to fit, still refuses them. A batch of T = 0 (every
    sentence empty) had aligned to [0, 0, K], which every chain call refused ("emissions
    needs T >= 1"): it aligns one step wide, and restore gives back [B, 0, ...]. The
    per-sentence likelihoods of the taggers (a dev loss) are empty too: the CRFs' had
    refused B' = 0 ("words must be [B, T] with B, T >= 1")."""
    from calib_metrics.models import linear_chain
    from calib_metrics.models.crf import CRFTagger

    emissions, tags = _sub_word_batch()
    words = torch.randint(1, 9, (6, 7), generator=_gen())
    hmm, crf = HMM(3, 9).fit(*left_align(words, tags)[:3]), FeatureCRF(3, 9)
    tagger = CRFTagger(3, 9)
    dev = left_align(emissions, tags)
    fitted = ChainTemperature().fit(*_chain(dev.emissions), dev.tags, mask=dev.mask)
    batches = (  # a batch with rows, one of padding rows alone, one of no time steps
        (emissions, words, tags),
        (emissions, words, torch.full_like(tags, PAD)),
        (emissions[:, :0], words[:, :0], tags[:, :0]),
    )
    for batch_emissions, batch_words, batch_tags in batches:
        batch, length = batch_tags.shape
        aligned = left_align(batch_emissions, batch_tags)
        empty = aligned.rows.numel() == 0
        chain = (*_chain(aligned.emissions), aligned.mask)
        aligned_words = left_align(batch_words, batch_tags).emissions
        aligned_features = left_align(batch_words[..., None], batch_tags).emissions
        per_token = {
            "posterior_marginals": posterior_marginals(*chain).unigram,
            "forward_backward": linear_chain.forward_backward(*chain).log_alpha.exp(),
            "pairwise_rows": linear_chain.pairwise_rows(*chain, rows=(0,)).unigram,
            "ct.marginals": fitted.marginals(*chain).unigram,
            "ct.scale": fitted.scale(*chain)[0],
            "hmm.marginals": hmm.marginals(aligned_words, aligned.mask).unigram,
            "crf.marginals": crf.marginals(aligned_features, aligned.mask).unigram,
        }
        for name, values in per_token.items():
            back = aligned.restore(values, fill=-1)
            assert back.shape == (batch, length, 3), name
            assert bool((back[batch_tags == PAD] == -1).all()), name
            assert empty or bool((back[batch_tags != PAD] != -1).all()), name
        draws = {
            "sample": sample(*chain, n_samples=2, generator=_gen()),
            "ct.sample": fitted.sample(*chain, n_samples=2, generator=_gen()),
            "hmm.sample": hmm.sample(aligned_words, aligned.mask, n_samples=2),
        }
        for name, draw in draws.items():
            assert aligned.restore(draw, fill=PAD, dim=1).shape == (2, batch, length), name
        best = aligned.restore(linear_chain.viterbi(*chain)[1], fill=PAD)
        assert torch.equal(best == PAD, batch_tags == PAD)
        gold = aligned.tags.clamp(min=0)  # padding -100 is read as no tag by the taggers
        per_sentence = {
            "log_partition": linear_chain.log_partition(*chain),
            "sequence_score": sequence_score(*chain[:4], aligned.tags, aligned.mask),
            "hmm.log_likelihood": hmm.log_likelihood(aligned_words, aligned.mask),
            "crf.log_likelihood": tagger.log_likelihood(aligned_words, gold, aligned.mask),
            "crf.negative_log_likelihood": tagger.negative_log_likelihood(
                aligned_words, gold, aligned.mask
            ),
            "feature_crf.log_likelihood": crf.log_likelihood(aligned_features, gold, aligned.mask),
        }
        for name, values in per_sentence.items():
            assert values.shape == aligned.rows.shape, name
            assert empty or bool(values.isfinite().all()), name
        # B' = 0: a fit has nothing to fit, nor a mean over the tokens any to average,
        # and each says so.
        refused = (  # each (call, its arguments)
            (fitted.fit, (*chain[:4], gold, aligned.mask)),
            (fitted.nll, (*chain[:4], gold, aligned.mask)),
            (HMM(3, 9).fit, (aligned_words, gold, aligned.mask)),
            (CRFTagger(3, 9).fit, (aligned_words, gold, aligned.mask)),
            (FeatureCRF(3, 9).fit, (aligned_features, gold, aligned.mask)),
        )
        for call, arguments in refused if empty else ():
            with pytest.raises(ValueError, match=r"B, T(, F)? >= 1"):
                call(*arguments)


@pytest.mark.parametrize(
    ("values", "fill"),
    [
        (torch.zeros(5, 7, dtype=torch.long), float("nan")),  # had been a RuntimeError
        (torch.zeros(5, 7, dtype=torch.long), 2.7),  # had filled 2
        (torch.zeros(5, 7, dtype=torch.uint8), -100),
        (torch.zeros(5, 7, dtype=torch.bool), 2),
        (torch.zeros(5, 7), "0"),
    ],
)
def test_a_fill_the_values_cannot_hold_is_refused(values, fill) -> None:
    emissions, tags = _sub_word_batch()
    with pytest.raises(ValueError, match=r"^fill must"):
        left_align(emissions, tags).restore(values, fill=fill)


def test_per_sentence_results_are_told_to_map_back_by_rows() -> None:
    emissions, tags = _sub_word_batch()
    aligned = left_align(emissions, tags)
    log_z = posterior_marginals(*_chain(aligned.emissions), aligned.mask).log_partition
    with pytest.raises(ValueError, match=r"its i-th entry is row aligned\.rows\[i\]'s"):
        aligned.restore(log_z)


def _chain(emissions: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Fixed transitions, start and end of 3 tags beside ``emissions``."""
    g = torch.Generator().manual_seed(2)
    transitions = torch.randn(3, 3, generator=g, dtype=torch.float64).to(emissions.dtype)
    zeros = torch.zeros(3, dtype=emissions.dtype)
    return emissions, transitions, zeros, zeros


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(3)
