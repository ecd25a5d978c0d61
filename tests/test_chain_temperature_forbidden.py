"""ChainTemperature on chains with forbidden choices: ``-inf`` potentials (a BIO tagger's
I-X after O, a start tag that cannot begin), which ``linear_chain`` accepts. Once, fit,
marginals and sample refused every ``-inf`` in the emissions or transitions; dividing one by
T also puts NaN in the gradient, so the fit has to keep them out of it."""

from __future__ import annotations

import math

import pytest
import torch

from calib_metrics.models.linear_chain import sample
from calib_metrics.recalibration import ChainTemperature

K = 4
INF = float("-inf")


def _chain():
    g = torch.Generator().manual_seed(0)
    em = torch.randn(300, 6, K, generator=g, dtype=torch.float64)
    tr = torch.randn(K, K, generator=g, dtype=torch.float64)
    st, en = torch.zeros(K, dtype=torch.float64), torch.zeros(K, dtype=torch.float64)
    tr[0, 1] = INF  # tag 1 never follows tag 0
    st[1] = INF  # and never starts a sentence
    em[:, :, 3].masked_fill_(torch.rand(300, 6, generator=g) < 0.2, INF)
    tags = sample(em, tr, st, en, n_samples=1, generator=g)[0]  # gold drawn at T = 1
    return em, tr, st, en, tags


def _stand_in(x: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isinf(x), torch.full_like(x, -1e4), x)  # exp(-1e4) is 0 too


@pytest.mark.parametrize("separate", [False, True])
def test_fit_with_forbidden_choices_equals_a_large_finite_stand_in(separate) -> None:
    em, tr, st, en, tags = _chain()
    got = ChainTemperature(separate=separate).fit(3 * em, 3 * tr, st, en, tags)
    want = ChainTemperature(separate=separate).fit(
        *(_stand_in(x) for x in (3 * em, 3 * tr, st, en)), tags
    )
    assert math.isfinite(got.temperature.item()) and 2 < got.temperature.item() < 4.5
    torch.testing.assert_close(got.temperature, want.temperature, rtol=1e-6, atol=0)
    torch.testing.assert_close(
        got.transition_temperature, want.transition_temperature, rtol=1e-6, atol=0
    )


def test_recalibrated_marginals_keep_forbidden_choices_at_zero() -> None:
    em, tr, st, en, tags = _chain()
    ct = ChainTemperature().fit(3 * em, 3 * tr, st, en, tags)
    marginals = ct.marginals(3 * em, 3 * tr, st, en)
    assert bool(torch.isfinite(marginals.unigram).all())
    assert marginals.pairwise[:, :, 0, 1].abs().max().item() == 0
    assert marginals.unigram[:, 0, 1].abs().max().item() == 0
    draws = ct.sample(3 * em, 3 * tr, st, en, n_samples=5, generator=torch.Generator())
    assert not bool(((draws[..., :-1] == 0) & (draws[..., 1:] == 1)).any())
    assert math.isfinite(ct.nll(3 * em, 3 * tr, st, en, tags))


def test_gold_tags_through_a_forbidden_choice_are_refused() -> None:
    em, tr, st, en, tags = _chain()
    tags = tags.clone()
    tags[5, 0] = 1  # starts with the forbidden start tag
    with pytest.raises(ValueError, match=r"gold tags .* forbidden"):
        ChainTemperature().fit(3 * em, 3 * tr, st, en, tags)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_and_plus_inf_are_still_refused(bad) -> None:
    em, tr, st, en, tags = _chain()
    tr = tr.clone()
    tr[2, 2] = bad
    with pytest.raises(ValueError, match="transitions"):
        ChainTemperature().fit(em, tr, st, en, tags)


def test_a_forbidden_transition_into_the_padding_tag_is_not_the_gold_path() -> None:
    """Ragged sentences whose last real tag may not be followed by tag 0 (the tag padding
    holds): the fit reads no transition past a sentence's end (before: 0 * -inf made the
    gold score NaN, and fit refused the gold tags as forbidden)."""
    em, tr, st, en, tags = _chain()
    lengths = torch.arange(300) % 6 + 1
    mask = torch.arange(6)[None, :] < lengths[:, None]
    tr[2, 0] = INF  # tag 0 never follows tag 2
    tags = sample(em, tr, st, en, mask, n_samples=1, generator=torch.Generator().manual_seed(1))[0]
    assert bool((tags.gather(1, (lengths - 1)[:, None]) == 2).any())
    ct = ChainTemperature().fit(3 * em, 3 * tr, st, en, tags, mask)
    assert 2 < ct.temperature.item() < 4.5
    assert math.isfinite(ct.nll(3 * em, 3 * tr, st, en, tags, mask))
