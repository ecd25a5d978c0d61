"""Chain and coreference temperatures: gradients, Viterbi invariance, recovery, bad inputs."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.models.coref import coreference_marginals, sample_antecedents
from calib_metrics.recalibration import ChainTemperature, CorefTemperature, PlattScaling
from calib_metrics.recalibration.structured import chain_nll


def _chain(b=60, t=7, k=4, seed=0, scale=1.0):
    """Potentials, and gold tags sampled from the chain at T = 1, before scaling by ``scale``."""
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(b, t, k, generator=g, dtype=torch.float64)
    tr = torch.randn(k, k, generator=g, dtype=torch.float64)
    st, en = torch.randn(k, generator=g, dtype=torch.float64), torch.zeros(k, dtype=torch.float64)
    lengths = torch.randint(2, t + 1, (b,), generator=g)
    mask = torch.arange(t)[None, :] < lengths[:, None]
    tags = linear_chain.sample(em, tr, st, en, mask, n_samples=1, generator=g)[0]
    return (scale * em, scale * tr, scale * st, scale * en), tags, mask


def _gold_scores(parts, tags, mask):
    em, tr, st, en = parts
    z = torch.zeros_like
    gold_em = linear_chain.sequence_score(em, z(tr), z(st), z(en), tags, mask)
    gold_tr = linear_chain.sequence_score(z(em), tr, st, en, tags, mask)
    return gold_em, gold_tr


def _grid_argmin(f, lo=0.5, hi=8.0) -> float:
    """Brute force: a coarse grid, then a fine one (step 1e-3) around its best point."""
    coarse = torch.linspace(lo, hi, 151, dtype=torch.float64)
    best = coarse[torch.stack([f(t) for t in coarse]).argmin()]
    fine = torch.linspace(best - 0.05, best + 0.05, 101, dtype=torch.float64)
    return fine[torch.stack([f(t) for t in fine]).argmin()].item()


def test_chain_nll_gradient_matches_finite_differences():
    parts, tags, mask = _chain(b=8, t=5, k=3)
    gold = _gold_scores(parts, tags, mask)

    def f(log_t):
        t = log_t.exp()
        return chain_nll(parts, gold, mask, t[0], t[1])

    log_t = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(f, (log_t,), eps=1e-6, atol=1e-7)


def test_chain_nll_is_the_gold_path_log_likelihood():
    parts, tags, mask = _chain(b=5, t=4, k=3)
    t = torch.tensor(1.7, dtype=torch.float64)
    nll = chain_nll(parts, _gold_scores(parts, tags, mask), mask, t, t)
    scaled = [p / t for p in parts]
    ll = linear_chain.sequence_score(*scaled, tags, mask) - linear_chain.log_partition(
        *scaled, mask
    )
    assert nll.item() == pytest.approx(-(ll.sum() / mask.sum()).item(), rel=1e-12)


def test_chain_temperature_is_the_likelihood_optimum():
    parts, tags, mask = _chain(b=20, t=5, k=3, scale=2.5)
    ct = ChainTemperature().fit(*parts, tags, mask)
    gold = _gold_scores(parts, tags, mask)
    assert ct.temperature.item() == pytest.approx(_grid_argmin(lambda t: chain_nll(
        parts, gold, mask, t, t)), abs=2e-3)  # fmt: skip
    assert ct.transition_temperature.item() == ct.temperature.item()


def test_chain_temperature_recovers_overconfidence():
    parts, tags, mask = _chain(b=300, t=8, k=4, scale=3.0)
    ct = ChainTemperature().fit(*parts, tags, mask)
    assert 2.4 < ct.temperature.item() < 3.6
    sep = ChainTemperature(separate=True).fit(*parts, tags, mask)
    assert 2.2 < sep.temperature.item() < 3.8
    assert 2.2 < sep.transition_temperature.item() < 3.8
    assert sep.nll(*parts, tags, mask) <= ct.nll(*parts, tags, mask) + 1e-9


def test_single_temperature_keeps_viterbi_but_changes_marginals_and_samples():
    parts, tags, mask = _chain(b=30, t=6, k=4, scale=3.0)
    ct = ChainTemperature().fit(*parts, tags, mask)
    assert abs(ct.temperature.item() - 1) > 0.5
    scaled = ct.scale(*parts)
    _, best = linear_chain.viterbi(*parts, mask)
    _, best_scaled = linear_chain.viterbi(*scaled, mask)
    assert torch.equal(best, best_scaled)
    before = linear_chain.posterior_marginals(*parts, mask)
    after = ct.marginals(*parts, mask)
    assert (before.unigram - after.unigram).abs().max() > 0.05
    assert (before.pairwise - after.pairwise).abs().max() > 0.05
    assert torch.allclose(after.unigram, linear_chain.posterior_marginals(*scaled, mask).unigram)
    # Same uniforms, different chain: samples differ (flatter chain, more disagreement).
    draws_before = linear_chain.sample(
        *parts, mask, n_samples=50, generator=torch.Generator().manual_seed(0)
    )
    draws_after = ct.sample(*parts, mask, n_samples=50, generator=torch.Generator().manual_seed(0))
    assert not torch.equal(draws_before, draws_after)
    assert (draws_after != best).sum() > (draws_before != best).sum()


def test_chain_temperature_by_calib_err():
    parts, tags, mask = _chain(b=300, t=8, k=4, scale=3.0)
    ct = ChainTemperature(objective="calib_err").fit(*parts, tags, mask)
    assert 1.5 < ct.temperature.item() < 5.0


def test_chain_state_dict_round_trip():
    parts, tags, mask = _chain()
    ct = ChainTemperature(separate=True).fit(*parts, tags, mask)
    fresh = ChainTemperature(separate=True)
    fresh.load_state_dict(ct.state_dict())
    assert torch.equal(fresh.marginals(*parts, mask).unigram, ct.marginals(*parts, mask).unigram)


def test_chain_bad_inputs():
    parts, tags, mask = _chain(b=4, t=5, k=3)
    em, tr, st, en = parts
    with pytest.raises(ValueError, match="non-empty"):
        ChainTemperature().fit(em[:0], tr, st, en, tags[:0], mask[:0])
    # Not "cannot be fitted": with three tags or more the NLL can have an optimum.
    with pytest.raises(ValueError, match=r"single tag \(\d+ at every token\): .* only set how"):
        ChainTemperature().fit(em, tr, st, en, torch.zeros_like(tags), mask)
    bad = em.clone()
    bad[0, 0, 0] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        ChainTemperature().fit(bad, tr, st, en, tags, mask)
    with pytest.raises(ValueError, match="tags must be"):
        ChainTemperature().fit(em, tr, st, en, tags[:, :3], mask)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        ChainTemperature().fit(em, tr, st, en, tags + 5, mask)
    with pytest.raises(ValueError, match="objective"):
        ChainTemperature(objective="accuracy")
    with pytest.raises(ValueError, match="not fitted"):
        ChainTemperature().marginals(em, tr, st, en, mask)


def test_chain_tags_of_a_narrow_integer_dtype_are_not_wrapped():
    """A uint8 tag of 200 counted as outside [0, 260): the range check ran in uint8, where
    the bound wraps to 4. The tags are widened to int64 first; bool tags are refused."""
    parts, tags, mask = _chain(b=4, t=3, k=3)
    fitted = ChainTemperature().fit(*parts, tags, mask)
    g = torch.Generator().manual_seed(0)
    em = torch.randn(2, 2, 260, generator=g, dtype=torch.float64)
    tr = 0.1 * torch.randn(260, 260, generator=g, dtype=torch.float64)
    st = en = torch.zeros(260, dtype=torch.float64)
    wide = torch.tensor([[200, 7], [5, 250]])
    narrow = fitted.nll(em, tr, st, en, wide.to(torch.uint8))
    assert narrow == fitted.nll(em, tr, st, en, wide)
    with pytest.raises(ValueError, match=r"tags must be an integer tensor, got torch\.bool"):
        ChainTemperature().fit(em, tr, st, en, wide > 100)


def _coref(b=80, n=8, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(b, n, n, generator=g, dtype=torch.float64)
    a = sample_antecedents(scores, 1, generator=g)[0]
    gold = torch.nn.functional.one_hot(a, n).bool()
    return scale * scores, gold


def test_coref_temperature_is_the_likelihood_optimum():
    scores, gold = _coref(b=10, n=6, scale=2.0)
    ct = CorefTemperature().fit(scores, gold)

    def nll(t):
        logp = torch.log_softmax(
            (scores / t).masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), -math.inf), -1
        )
        rows = gold.any(-1)
        return -(logp.masked_fill(~gold, -math.inf).logsumexp(-1)[rows]).mean()

    assert ct.temperature.item() == pytest.approx(_grid_argmin(nll), abs=2e-3)


def test_coref_temperature_with_gold_sets_and_offset():
    scores, _ = _coref(b=200, n=10, scale=3.0)
    g = torch.Generator().manual_seed(5)
    # Gold antecedent *sets*: the whole sampled entity of each mention.
    a = sample_antecedents(scores / 3.0 + 1.0 * torch.eye(10), 1, generator=g)[0]
    from calib_metrics.models.coref import entity_roots

    roots = entity_roots(a)
    earlier = torch.ones(10, 10, dtype=torch.bool).tril(-1)
    same = (roots[:, :, None] == roots[:, None, :]) & earlier
    gold = same | (torch.eye(10, dtype=torch.bool) & ~same.any(-1, keepdim=True))
    plain = CorefTemperature().fit(scores, gold)
    offset = CorefTemperature(new_offset=True).fit(scores, gold)
    assert offset.nll_ <= plain.nll_ + 1e-9
    assert offset.offset.item() > 0.3  # the NEW scores were shifted by +1 at T = 1
    exact = offset.marginals(scores)
    assert torch.allclose(exact, coreference_marginals(offset.scale(scores)))
    est = offset.marginals(scores, n_samples=4000, generator=torch.Generator().manual_seed(0))
    assert (est - exact).abs().max() < 0.06
    assert not torch.allclose(exact, coreference_marginals(scores), atol=1e-2)


@pytest.mark.parametrize("new_offset", [False, True])
def test_coref_fit_raises_no_stray_warning(new_offset):
    """Every fit printed PyTorch's "Converting a tensor with requires_grad=True to a
    scalar" (the fitted T was read from the optimised tensor, grad and all). PyTorch says
    it once a process unless told to warn always."""
    scores, gold = _coref(b=20, n=5, scale=2.0)
    always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            CorefTemperature(new_offset=new_offset).fit(scores, gold)
    finally:
        torch.set_warn_always(always)


def test_coref_bad_inputs():
    scores, gold = _coref(b=3, n=4)
    with pytest.raises(ValueError, match="non-empty"):
        CorefTemperature().fit(scores[:0], gold[:0])
    bad = scores.clone()
    bad[0, 2, 1] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        CorefTemperature().fit(bad, gold)
    with pytest.raises(ValueError, match="gold must"):
        CorefTemperature().fit(scores, gold[:, :2])
    with pytest.raises(ValueError, match="nothing to fit"):
        CorefTemperature().fit(scores, torch.zeros_like(gold))


def test_coref_fit_refuses_gold_marks_after_their_mention():
    """A transposed gold matrix (j > i) had been cut to its lower triangle without a word,
    and T fitted on the mentions it spared (2.86 where the optimum is 2.81)."""
    scores, gold = _coref(b=6, n=5, scale=3.0)
    with pytest.raises(ValueError, match=r"gold marks option \d+ of mention \d+ in document 0"):
        CorefTemperature().fit(scores, gold.transpose(-1, -2))
    mask = torch.ones(6, 5, dtype=torch.bool)
    mask[0, 3:] = False
    padded = gold.clone()
    padded[0, 3:] = True  # a padded mention's row is never read
    reference = CorefTemperature().fit(scores, gold & mask[:, :, None], mask)
    fitted = CorefTemperature().fit(scores, padded, mask)
    assert fitted.temperature.item() == reference.temperature.item()


def test_coref_forbidden_choices_stay_forbidden():
    scores, gold = _coref(b=40, n=6, scale=2.0)
    far = torch.ones(6, 6, dtype=torch.bool).tril(-3)  # antecedents beyond a window of 2
    windowed = scores.masked_fill(far, -math.inf)
    ct = CorefTemperature(new_offset=True).fit(windowed, gold & ~far)  # rows left empty: skipped
    assert math.isfinite(ct.temperature.item()) and math.isfinite(ct.offset.item())
    assert bool((ct.log_probs(windowed).exp()[:, far] == 0).all())


def test_query_level_recalibration_is_a_binary_recalibrator():
    """A black-box tagger: recalibrate its one-vs-rest tag queries with Platt on (q, y)."""
    from calib_metrics.functional import calibration_error
    from calib_metrics.queries import tag_queries

    dev_parts, dev_tags, dev_mask = _chain(b=300, t=8, k=4, scale=3.0, seed=1)
    test_parts, test_tags, test_mask = _chain(b=300, t=8, k=4, scale=3.0, seed=2)
    q_dev, y_dev = tag_queries(
        linear_chain.posterior_marginals(*dev_parts, dev_mask).unigram, dev_tags, dev_mask
    )
    q_test, y_test = tag_queries(
        linear_chain.posterior_marginals(*test_parts, test_mask).unigram, test_tags, test_mask
    )
    platt = PlattScaling(inputs="probs").fit(q_dev, y_dev)
    before = calibration_error(q_test, y_test, bin_size=200)
    after = calibration_error(platt(q_test), y_test, bin_size=200)
    assert after < 0.7 * before


def test_structured_fits_take_inference_tensors():
    """Lightning's validation outputs are inference tensors: the masks, tags and gold sets
    are copied before autograd sees them (before: "Inference tensors cannot be saved for
    backward" from both fits)."""
    parts, tags, mask = _chain(scale=2.0)
    scores, gold = _coref(b=20, n=6, scale=2.0)
    chain = ChainTemperature().fit(*parts, tags, mask)
    ranker = CorefTemperature(new_offset=True).fit(
        scores, gold, torch.ones(20, 6, dtype=torch.bool)
    )
    with torch.inference_mode():
        inference = [x.clone() for x in (*parts, tags, mask, scores, gold)]
        em, tr, st, en, tags_i, mask_i, scores_i, gold_i = inference
        mentions = torch.ones(20, 6, dtype=torch.bool)
        chain_i = ChainTemperature().fit(em, tr, st, en, tags_i, mask_i)
        ranker_i = CorefTemperature(new_offset=True).fit(scores_i, gold_i, mentions)
    torch.testing.assert_close(chain_i.temperature, chain.temperature)
    torch.testing.assert_close(ranker_i.temperature, ranker.temperature)
    torch.testing.assert_close(ranker_i.offset, ranker.offset)


@pytest.mark.parametrize("cls", [ChainTemperature, CorefTemperature])
def test_max_iter_must_be_a_positive_int(cls):
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        cls(max_iter=0)  # before: accepted, and fit returned T = 1 unfitted


def test_coref_fit_names_a_bad_mask_and_impossible_gold():
    scores, gold = _coref(b=3, n=4)
    with pytest.raises(ValueError, match=r"mask must be \[B, N\]"):  # before: RuntimeError
        CorefTemperature().fit(scores, gold, torch.ones(3, 3, dtype=torch.bool))
    # Mention 3's only gold antecedent (mention 0) lies beyond the window: before, L-BFGS
    # ran on an infinite loss and failed with "scores give no valid distribution".
    windowed = scores.masked_fill(torch.ones(4, 4, dtype=torch.bool).tril(-3), -math.inf)
    gold = torch.eye(4, dtype=torch.bool).expand(3, 4, 4).clone()
    gold[1, 3] = False
    gold[1, 3, 0] = True
    with pytest.raises(ValueError, match="mention 3 in document 1 scores -inf"):
        CorefTemperature().fit(windowed, gold)


def test_chain_nll_of_a_single_tag_test_set():
    """Evaluating needs no second tag, only fitting does (before: nll refused it with the
    fit's "a temperature cannot be fitted")."""
    parts, tags, mask = _chain(scale=2.0)
    ct = ChainTemperature().fit(*parts, tags, mask)
    one = torch.zeros_like(tags)
    expected = (
        -(
            linear_chain.sequence_score(*(x / ct.temperature for x in parts), one, mask)
            - linear_chain.log_partition(*(x / ct.temperature for x in parts), mask)
        ).sum()
        / mask.sum()
    )
    assert ct.nll(*parts, one, mask) == pytest.approx(expected.item(), rel=1e-9)
    with pytest.raises(ValueError, match="single tag"):
        ChainTemperature().fit(*parts, one, mask)


def test_chain_temperature_reads_the_mask_as_linear_chain_does():
    """A float mask was accepted by fit (linear_chain refuses it), and NaN in padded
    emissions, which linear_chain never reads, was refused."""
    parts, tags, mask = _chain(b=6, t=5, k=3)
    em, tr, st, en = parts
    mask = mask.clone()
    mask[0, 3:] = False
    with pytest.raises(ValueError, match="mask must be bool"):
        ChainTemperature().fit(em, tr, st, en, tags, mask.double())
    padded = em.clone()
    padded[0, 4] = math.nan  # past sentence 0's end
    fitted = ChainTemperature().fit(padded, tr, st, en, tags, mask)
    reference = ChainTemperature().fit(em, tr, st, en, tags, mask)
    assert fitted.temperature.item() == pytest.approx(reference.temperature.item(), rel=1e-9)


def test_coref_temperature_ignores_what_the_model_never_reads():
    """NaN in a padded mention's scores (which antecedent_log_probs never reads) was
    refused by fit and marginals, as the ChainTemperature's padded emissions were."""
    scores, gold = _coref(b=6, n=5)
    mask = torch.ones(6, 5, dtype=torch.bool)
    mask[0, 3:] = False
    gold = gold.clone()
    gold[0, 3:] = False
    gold[0, 3:, 3:] = torch.eye(2, dtype=torch.bool)  # padding takes NEW
    padded = scores.clone()
    padded[0, 4, :] = math.nan  # mention 4 of document 0 is padding
    padded[0, 3, 1] = math.inf
    fitted = CorefTemperature().fit(padded, gold, mask)
    reference = CorefTemperature().fit(scores, gold, mask)
    assert fitted.temperature.item() == pytest.approx(reference.temperature.item(), rel=1e-9)
    assert not fitted.marginals(padded, mask).isnan().any()
    read = scores.clone()
    read[1, 2, 1] = math.nan  # a real mention's real antecedent
    with pytest.raises(ValueError, match="NaN or \\+inf at entries j <= i of real mentions"):
        CorefTemperature().fit(read, gold, mask)


def test_coref_fit_refuses_the_masks_its_marginals_refuse():
    """fit had read a float mask of 0.5, an integer mask holding 2 and a gold of 0.3 as
    True, and fitted, while .marginals() refused the same masks."""
    scores, gold = _coref(b=6, n=5, scale=2.0)
    fitted = CorefTemperature().fit(scores, gold)
    refused = [
        (torch.full((6, 5), 0.5), r"mask must be bool \(or integer 0/1\), got torch.float32"),
        (torch.full((6, 5), 2), r"mask must be bool or integer 0/1: it holds other integers"),
    ]
    for mask, message in refused:
        with pytest.raises(ValueError, match=message):
            CorefTemperature().fit(scores, gold, mask)
        with pytest.raises(ValueError, match=message):
            fitted.marginals(scores, mask)
    with pytest.raises(ValueError, match=r"gold must be bool \(or integer 0/1\), got torch.float"):
        CorefTemperature().fit(scores, 0.3 * gold.double())
    with pytest.raises(ValueError, match="gold must be bool or integer 0/1: it holds other"):
        CorefTemperature().fit(scores, 2 * gold.long())
    as_integers = CorefTemperature().fit(scores, gold.long(), torch.ones(6, 5, dtype=torch.long))
    assert as_integers.temperature.item() == fitted.temperature.item()


def test_chain_fit_checks_the_mask_before_the_tags_it_masks():
    """An all-False mask had been refused as "tags hold a single tag" (no tag is read
    through it), where a mask with only its first column False names the mask."""
    g = torch.Generator().manual_seed(0)
    em, tr, z = torch.randn(50, 5, 3, generator=g), torch.randn(3, 3, generator=g), torch.zeros(3)
    tags = linear_chain.sample(em, tr, z, z, n_samples=1, generator=g)[0]
    first_missing = torch.ones(50, 5, dtype=torch.bool)
    first_missing[:, 0] = False
    for mask in (torch.zeros(50, 5, dtype=torch.bool), first_missing):
        for fit in (ChainTemperature(), ChainTemperature(objective="calib_err")):
            with pytest.raises(ValueError, match=r"mask\[:, 0\] must be all True"):
                fit.fit(em, tr, z, z, tags, mask)
    right_aligned = torch.ones(50, 5, dtype=torch.bool)
    right_aligned[:, 1] = False
    with pytest.raises(ValueError, match="mask must be left-aligned"):
        ChainTemperature().fit(em, tr, z, z, tags, right_aligned)
    # A mask of 2s had been read as True by fit and nll (marginals refused it).
    twos = torch.full((50, 5), 2)
    fitted = ChainTemperature().fit(em, tr, z, z, tags)
    for call in (lambda: ChainTemperature().fit(em, tr, z, z, tags, twos),
                 lambda: fitted.nll(em, tr, z, z, tags, twos)):  # fmt: skip
        with pytest.raises(ValueError, match="mask must be bool or integer 0/1: it holds other"):
            call()


def test_coref_fit_checks_the_mask_before_the_gold_it_masks():
    """An all-False mask had been refused as "gold marks no antecedent option"."""
    scores, gold = _coref(b=6, n=5)
    for mask in (torch.zeros(6, 5, dtype=torch.bool), torch.zeros(6, 5, dtype=torch.long)):
        with pytest.raises(ValueError, match="mask marks no real mention"):
            CorefTemperature().fit(scores, gold, mask)
    with pytest.raises(ValueError, match="gold marks no antecedent option"):
        CorefTemperature().fit(scores, torch.zeros_like(gold))


def test_scale_of_an_unfitted_structured_recalibrator_is_refused():
    """.scale applied T = 1 silently where .marginals, .sample, .nll and .log_probs said
    "not fitted"."""
    parts, _, _ = _chain()
    with pytest.raises(ValueError, match="ChainTemperature is not fitted: call fit"):
        ChainTemperature().scale(*parts)
    scores, _ = _coref()
    with pytest.raises(ValueError, match="CorefTemperature is not fitted: call fit"):
        CorefTemperature().scale(scores)


def _windowed_coref(scale: float):
    """Underconfident scores (the fitted T < 1) with antecedents beyond a window forbidden,
    and gold drawn from them."""
    g = torch.Generator().manual_seed(0)
    b, n = 40, 6
    scores = 0.3 * scale * torch.randn(b, n, n, generator=g, dtype=torch.float64)
    far = torch.ones(n, n, dtype=torch.bool).tril(-3)
    drawn = sample_antecedents(scores.masked_fill(far, -math.inf), 1, generator=g)[0]
    return scores, far, torch.nn.functional.one_hot(drawn, n).bool()


@pytest.mark.parametrize("scale", [1.0, 1e-6])
def test_coref_masks_below_the_floor_are_forbidden_choices_as_inf_is(scale):
    """Scores at or below -1e200 are masks for every other recalibrator: CorefTemperature
    read them as scores, so float64's lowest value divided by T < 1 overflowed and the fit
    failed as "NaN or +inf" (at scale 1e-6, -1e300 did)."""
    scores, far, gold = _windowed_coref(scale)
    want = CorefTemperature().fit(scores.masked_fill(far, -math.inf), gold).temperature
    for mask in (-1e300, torch.finfo(torch.float64).min):
        got = CorefTemperature().fit(scores.masked_fill(far, mask), gold).temperature
        torch.testing.assert_close(got, want)


def test_coref_anti_correlated_scores_are_refused_whatever_the_mask_value():
    """Read as scores, -1e300 masks became allowed choices once T was large, and scores
    whose gold was each mention's worst option were fitted at T = 7.6e9 (flat marginals)
    where -inf masks were refused."""
    scores, far, _ = _windowed_coref(1.0)
    n = scores.shape[-1]
    allowed = torch.ones(n, n, dtype=torch.bool).tril() & ~far
    worst = scores.masked_fill(~allowed, math.inf).argmin(-1)
    gold = torch.nn.functional.one_hot(worst, n).bool()
    for mask in (-math.inf, -1e300):
        with pytest.raises(ValueError, match="no usable signal"):
            CorefTemperature().fit(scores.masked_fill(far, mask), gold)


@pytest.mark.parametrize(
    ("cls", "flag"), [(ChainTemperature, "separate"), (CorefTemperature, "new_offset")]
)
@pytest.mark.parametrize("value", ["no", "false", 0, None])
def test_structured_flags_must_be_true_or_false(cls, flag, value):
    # Read for their truth, "no" and "false" had switched the option on.
    with pytest.raises(ValueError, match=f"{flag} must be True or False"):
        cls(**{flag: value})
