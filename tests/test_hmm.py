"""Tests of the closed-form HMM tagger against explicit counting and brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from calib_metrics.models.hmm import HMM


def _corpus(seed: int = 0, batch: int = 6, length: int = 5, num_tags: int = 3, vocab: int = 6):
    g = torch.Generator().manual_seed(seed)
    words = torch.randint(1, vocab, (batch, length), generator=g)
    tags = torch.randint(num_tags, (batch, length), generator=g)
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    lengths[0] = length
    mask = torch.arange(length) < lengths[:, None]
    return words, tags, mask


def _loop_estimate(words, tags, mask, num_tags, vocab, alpha):
    """Reference Dirichlet-MAP estimate by Python loops over sentences."""
    start = [alpha] * num_tags
    end = [alpha] * num_tags
    trans = [[alpha] * num_tags for _ in range(num_tags)]
    emit = [[alpha] * vocab for _ in range(num_tags)]
    for b in range(words.shape[0]):
        n = int(mask[b].sum())
        ys, xs = tags[b, :n].tolist(), words[b, :n].tolist()
        start[ys[0]] += 1
        end[ys[-1]] += 1
        for t in range(n):
            emit[ys[t]][xs[t]] += 1
            if t + 1 < n:
                trans[ys[t]][ys[t + 1]] += 1
    start = torch.tensor(start) / sum(start)
    out_totals = [sum(trans[i]) + end[i] for i in range(num_tags)]
    trans = torch.tensor([[c / out_totals[i] for c in row] for i, row in enumerate(trans)])
    end = torch.tensor([end[i] / out_totals[i] for i in range(num_tags)])
    emit = torch.tensor([[c / sum(row) for c in row] for row in emit])
    return start, trans, end, emit


@pytest.mark.parametrize("alpha", [1.0, 0.01])
def test_fit_matches_explicit_counting(alpha):
    words, tags, mask = _corpus()
    hmm = HMM(3, 6, pseudocount=alpha).fit(words, tags, mask)
    start, trans, end, emit = _loop_estimate(words, tags, mask, 3, 6, alpha)
    torch.testing.assert_close(hmm.log_start.exp(), start)
    torch.testing.assert_close(hmm.log_transitions.exp(), trans)
    torch.testing.assert_close(hmm.log_end.exp(), end)
    torch.testing.assert_close(hmm.log_emissions.exp(), emit)
    # Each distribution sums to one (a tag's successors include stopping).
    torch.testing.assert_close(hmm.log_start.exp().sum(), torch.tensor(1.0))
    rows = hmm.log_transitions.exp().sum(1) + hmm.log_end.exp()
    torch.testing.assert_close(rows, torch.ones(3))
    torch.testing.assert_close(hmm.log_emissions.exp().sum(1), torch.ones(3))


def test_unknown_word_column_gets_only_the_pseudocount():
    words, tags, mask = _corpus(1)
    alpha = 0.5
    hmm = HMM(3, 6, pseudocount=alpha).fit(words, tags, mask)
    per_tag = torch.bincount(tags[mask], minlength=3).float()
    expected = alpha / (per_tag + 6 * alpha)
    torch.testing.assert_close(hmm.log_emissions[:, 0].exp(), expected)


def test_padding_content_does_not_change_the_fit():
    words, tags, mask = _corpus(2)
    a = HMM(3, 6).fit(words, tags, mask)
    b = HMM(3, 6).fit(words.masked_fill(~mask, 5), tags.masked_fill(~mask, 2), mask)
    for name in ("log_start", "log_transitions", "log_end", "log_emissions"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name))


def test_padding_may_hold_an_ignore_index_at_inference():
    """Words outside the mask are read nowhere (before: an IndexError from the lookup)."""
    words, tags, mask = _corpus(3)
    assert not mask.all()
    hmm = HMM(3, 6).fit(words, tags, mask)
    padded = words.masked_fill(~mask, -100)
    expected = hmm.marginals(words, mask)
    torch.testing.assert_close(hmm.marginals(padded, mask), expected)
    torch.testing.assert_close(hmm.log_likelihood(padded, mask), hmm.log_likelihood(words, mask))
    torch.testing.assert_close(hmm.viterbi(padded, mask), hmm.viterbi(words, mask))


def _joint(hmm: HMM, xs: list[int], ys: list[int]) -> float:
    lp = hmm.log_start[ys[0]] + hmm.log_emissions[ys[0], xs[0]]
    for t in range(1, len(xs)):
        lp = lp + hmm.log_transitions[ys[t - 1], ys[t]] + hmm.log_emissions[ys[t], xs[t]]
    return float(lp + hmm.log_end[ys[-1]])


def test_posterior_matches_brute_force_enumeration():
    words, tags, mask = _corpus(3, batch=4, length=4)
    hmm = HMM(3, 6, pseudocount=0.3).fit(words, tags, mask).double()
    marg = hmm.marginals(words, mask)
    log_px = hmm.log_likelihood(words, mask)
    _, best = hmm.viterbi(words, mask)
    for b in range(words.shape[0]):
        n = int(mask[b].sum())
        xs = words[b, :n].tolist()
        seqs = list(itertools.product(range(3), repeat=n))
        joint = torch.tensor([_joint(hmm, xs, list(ys)) for ys in seqs], dtype=torch.float64)
        assert math.isclose(log_px[b].item(), torch.logsumexp(joint, 0).item(), rel_tol=1e-9)
        post = torch.softmax(joint, 0)
        uni = torch.zeros(n, 3, dtype=torch.float64)
        for p, ys in zip(post, seqs, strict=True):
            for t, y in enumerate(ys):
                uni[t, y] += p
        torch.testing.assert_close(marg.unigram[b, :n], uni)
        assert marg.unigram[b, n:].abs().sum() == 0
        assert best[b, :n].tolist() == list(seqs[int(joint.argmax())])


def test_potentials_score_is_the_joint_log_probability():
    from calib_metrics.models import linear_chain

    words, tags, mask = _corpus(4)
    hmm = HMM(3, 6).fit(words, tags, mask).double()
    score = linear_chain.sequence_score(*hmm.potentials(words, mask), tags, mask)
    for b in range(words.shape[0]):
        n = int(mask[b].sum())
        expected = _joint(hmm, words[b, :n].tolist(), tags[b, :n].tolist())
        assert math.isclose(score[b].item(), expected, rel_tol=1e-9)


def test_samples_follow_the_posterior():
    words, tags, mask = _corpus(5, batch=2, length=3)
    hmm = HMM(3, 6, pseudocount=0.5).fit(words, tags, mask)
    g = torch.Generator().manual_seed(0)
    samples = hmm.sample(words, mask, n_samples=4000, generator=g)
    assert samples.shape == (4000, 2, 3)
    empirical = torch.nn.functional.one_hot(samples, 3).float().mean(0)
    marg = hmm.marginals(words, mask, pairwise=False).unigram
    # 4000 draws: standard error below 0.008, so 0.04 is a five-sigma band.
    assert (empirical - marg)[mask].abs().max() < 0.04


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_words_and_tags_of_any_integer_dtype_fit_and_tag_as_int64_ones_do(dtype):
    """Narrow dtypes had wrapped (uint8 tags 15, 3 of 20 counted as the pair 2, 7), failed
    a range check whose bound wrapped (uint8 word 200 "outside [0, 300)"), or failed
    inside torch: bincount of int8, uint8 words indexing as a bool mask."""
    words, tags, mask = _corpus(seed=3, vocab=120)
    tags = tags * 6 + 2  # tags up to 14 of 20: 14 * 20 + 14 wraps in uint8 and int8
    want = HMM(20, 300).fit(words, tags, mask)
    got = HMM(20, 300).fit(words.to(dtype), tags.to(dtype), mask)
    for name, buffer in want.named_buffers():
        assert torch.equal(getattr(got, name), buffer), name
    narrow = words.to(dtype)
    torch.testing.assert_close(got.marginals(narrow, mask), want.marginals(words, mask))
    assert torch.equal(got.viterbi(narrow, mask)[1], want.viterbi(words, mask)[1])
    torch.testing.assert_close(got.log_likelihood(narrow, mask), want.log_likelihood(words, mask))


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="pseudocount"):
        HMM(3, 5, pseudocount=0.0)
    with pytest.raises(ValueError, match="num_tags"):
        HMM(0, 5)
    hmm = HMM(3, 5)
    words, tags, mask = _corpus(0, vocab=5)
    with pytest.raises(ValueError, match="word indices"):
        hmm.fit(words + 5, tags, mask)
    with pytest.raises(ValueError, match="tags must lie"):
        hmm.fit(words, tags + 3, mask)
    with pytest.raises(ValueError, match=r"mask\[:, 0\]"):
        hmm.fit(words, tags, torch.zeros_like(mask))
    with pytest.raises(ValueError, match="words must be"):
        hmm.marginals(words[0], None)


def test_fit_without_tags_names_them():
    # A TypeError from inside the counting had been all it said.
    with pytest.raises(ValueError, match="tags are required"):
        HMM(2, 3).fit(torch.tensor([[1, 2]]), None)


def test_fit_refuses_a_mask_with_holes():
    """Inference refused a mask that is not left-aligned, fit counted across the hole
    (wrong transition and end counts, silently); the CRF's fit too."""
    from calib_metrics.models.crf import CRFTagger
    from calib_metrics.models.feature_crf import FeatureCRF

    words, tags, mask = _corpus(4)
    holed = mask.clone()
    holed[0, 1] = False
    for fit in (
        lambda: HMM(3, 6).fit(words, tags, holed),
        lambda: CRFTagger(3, 6).fit(words, tags, holed, progress=False),
        lambda: FeatureCRF(3, 6).fit(words[..., None], tags, holed),
    ):
        with pytest.raises(ValueError, match="left-aligned"):
            fit()


@pytest.mark.parametrize("sizes", [(2.5, 3), (2, 3.0), (0, 3), (2, 0), (True, 3)])
def test_tagger_sizes_must_be_ints(sizes):
    """Before: a float size was a TypeError from torch.full or nn.Embedding."""
    from calib_metrics.models.crf import CRFTagger
    from calib_metrics.models.feature_crf import FeatureCRF

    for cls in (HMM, CRFTagger, FeatureCRF):
        with pytest.raises(ValueError, match=r"(num_tags|vocab_size|num_features) must be an int"):
            cls(*sizes)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_low_precision_hmm_counts_in_a_wide_dtype(dtype):
    """fit counted in the model's dtype: a float16 tag seen more than 65,504 times
    overflowed to inf and its probabilities came out NaN, and bfloat16 rounded the counts
    (to 8 significant bits) before dividing. The estimate is now the float64 one, rounded."""
    n = 140_000
    words = torch.ones(1, n, dtype=torch.long)
    words[0, ::2] = 2
    tags = torch.zeros(1, n, dtype=torch.long)
    tags[0, -1000:] = 1
    wide = HMM(2, 3).double().fit(words, tags)
    low = HMM(2, 3).to(dtype).fit(words, tags)
    for name in ("log_start", "log_transitions", "log_end", "log_emissions"):
        got, expected = getattr(low, name), getattr(wide, name)
        assert got.dtype == dtype and not got.isnan().any(), name
        assert torch.equal(got, expected.to(dtype)), name


def test_fit_materialises_a_meta_model_on_the_words_device() -> None:
    """The parameters stay on the model's device, except on the meta device, which holds
    no values: fitting fills them in on the words' device."""
    words, tags = torch.randint(0, 5, (2, 4)), torch.randint(0, 3, (2, 4))
    fitted = HMM(3, 5).to("meta").fit(words, tags)
    want = HMM(3, 5).fit(words, tags)
    for name, tensor in fitted.state_dict().items():
        torch.testing.assert_close(tensor, want.state_dict()[name])
    with torch.device("meta"):  # built there, as CRFTagger is (it had raised in torch.full)
        built = HMM(3, 5)
    assert built.log_start.is_meta
    for name, tensor in built.fit(words, tags).state_dict().items():
        torch.testing.assert_close(tensor, want.state_dict()[name])
    uniform = HMM(3, 5)
    torch.testing.assert_close(uniform.log_start, torch.full((3,), -math.log(3)))
