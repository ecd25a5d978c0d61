"""ChainTemperature's ``separate`` and CorefTemperature's ``new_offset`` travel in the state;
non-square coreference scores are refused by name."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.models.coref import sample_antecedents
from calib_metrics.recalibration import ChainTemperature, CorefTemperature


def _chain(b=40, t=6, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(b, t, k, generator=g, dtype=torch.float64)
    tr = torch.randn(k, k, generator=g, dtype=torch.float64)
    st, en = torch.zeros(k, dtype=torch.float64), torch.zeros(k, dtype=torch.float64)
    tags = linear_chain.sample(em, tr, st, en, n_samples=1, generator=g)[0]
    # Emissions 3x and transitions 0.5x overconfident: separate temperatures differ.
    return (3 * em, 0.5 * tr, st, en), tags


def _coref(b=40, n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(b, n, n, generator=g, dtype=torch.float64) + 2 * torch.eye(n)
    a = sample_antecedents(scores, 1, generator=g)[0]
    return 3 * scores - torch.eye(n), torch.nn.functional.one_hot(a, n).bool()


def _older(state: dict) -> dict:
    """The state as saved before the settings travelled in it."""
    return {k: v for k, v in state.items() if k != "_extra_state"}


def test_a_separate_chain_state_is_refused_by_a_single_temperature_module():
    """Loaded into ChainTemperature(), a separate=True state had given separate=False with
    two temperatures, which a refit then made one."""
    parts, tags = _chain()
    fitted = ChainTemperature(separate=True).fit(*parts, tags)
    assert fitted.temperature.item() != pytest.approx(fitted.transition_temperature.item())
    single = ChainTemperature()
    with pytest.raises(ValueError, match=r"fitted with separate=True.*build it with separate=True"):
        single.load_state_dict(fitted.state_dict())
    assert not single.fitted and single.transition_temperature.item() == 1.0  # unchanged
    one = ChainTemperature().fit(*parts, tags)
    with pytest.raises(ValueError, match="build it with separate=False"):
        ChainTemperature(separate=True).load_state_dict(one.state_dict())
    loaded = ChainTemperature(separate=True)
    loaded.load_state_dict(fitted.state_dict())
    assert torch.equal(loaded.scale(*parts)[1], fitted.scale(*parts)[1])


def test_an_older_chain_state_is_read_by_its_temperatures():
    """A state saved before ``separate`` travelled: two temperatures that differ are
    separate=True's, refused without it; equal ones load into either."""
    parts, tags = _chain()
    two = _older(ChainTemperature(separate=True).fit(*parts, tags).state_dict())
    with pytest.raises(ValueError, match=r"transition_temperature \(\S+\) is not its "
                       r"temperature \(\S+\), as only separate=True fits them"):  # fmt: skip
        ChainTemperature().load_state_dict(two)
    ChainTemperature(separate=True).load_state_dict(two)
    one = _older(ChainTemperature().fit(*parts, tags).state_dict())
    for separate in (False, True):
        module = ChainTemperature(separate=separate)
        module.load_state_dict(one)
        assert module.temperature.item() == one["temperature"].item()


def test_a_new_offset_coref_state_is_refused_by_a_module_without_one():
    """Loaded into CorefTemperature(), a new_offset=True state had kept its offset under
    new_offset=False, which a refit then dropped."""
    scores, gold = _coref()
    fitted = CorefTemperature(new_offset=True).fit(scores, gold)
    assert fitted.offset.item() != 0
    plain = CorefTemperature()
    with pytest.raises(ValueError, match=r"new_offset=True.*build it with new_offset=True"):
        plain.load_state_dict(fitted.state_dict())
    assert not plain.fitted and plain.offset.item() == 0  # unchanged
    with pytest.raises(ValueError, match="build it with new_offset=False"):
        CorefTemperature(new_offset=True).load_state_dict(
            CorefTemperature().fit(scores, gold).state_dict()
        )
    loaded = CorefTemperature(new_offset=True)
    loaded.load_state_dict(fitted.state_dict())
    assert torch.equal(loaded.scale(scores), fitted.scale(scores))


def test_an_older_coref_state_is_read_by_its_offset():
    scores, gold = _coref()
    shifted = _older(CorefTemperature(new_offset=True).fit(scores, gold).state_dict())
    with pytest.raises(ValueError, match=r"offset is \S+, which only new_offset=True fits"):
        CorefTemperature().load_state_dict(shifted)
    CorefTemperature(new_offset=True).load_state_dict(shifted)
    plain = _older(CorefTemperature().fit(scores, gold).state_dict())
    for new_offset in (False, True):
        CorefTemperature(new_offset=new_offset).load_state_dict(plain)


@pytest.mark.parametrize("shape", [(5, 6, 7), (5, 6, 5)])
def test_non_square_coref_scores_are_refused_by_their_shape(shape):
    """Scores [B, N, M != N] had failed inside torch (a RuntimeError) in scale, marginals
    and log_probs, and a fit with all-False gold had said "gold marks no antecedent
    option"."""
    scores, gold = _coref()
    fitted = CorefTemperature().fit(scores, gold)
    wide = torch.randn(*shape, dtype=torch.float64)
    said = rf"scores must be square, \[B, N, N\].*got shape \({shape[0]}, 6, {shape[2]}\)"
    for call in (fitted.scale, fitted.marginals, fitted.log_probs):
        with pytest.raises(ValueError, match=said):
            call(wide)
    with pytest.raises(ValueError, match=said):
        fitted.sample(wide, 2)
    with pytest.raises(ValueError, match=said):
        CorefTemperature().fit(wide, torch.zeros(shape, dtype=torch.bool))


@pytest.mark.parametrize(
    ("kind", "name", "does"),
    [
        (ChainTemperature, "separate", {False: "one temperature for all potentials",
                                        True: "one temperature for emissions and one for"}),
        (CorefTemperature, "new_offset", {False: "fits no NEW offset", True: "fits a NEW offset"}),
    ],
)  # fmt: skip
@pytest.mark.parametrize("saved", [True, False])
def test_a_setting_refusal_says_what_each_value_does(kind, name, does, saved):
    """The refusal said one fixed meaning whichever way round: a separate=False state in a
    separate=True module was told this module 'fits one temperature for all potentials'."""
    state = kind(**{name: saved}).state_dict()
    with pytest.raises(ValueError) as refused:
        kind(**{name: not saved}).load_state_dict(state)
    said = str(refused.value)
    assert f"fitted with {name}={saved} (which {'fits ' * (kind is ChainTemperature)}" in said
    assert said.index(does[saved]) < said.index("this module has") < said.index(does[not saved])
