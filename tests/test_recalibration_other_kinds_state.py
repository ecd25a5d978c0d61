"""Another kind's state fails on its keys, as any module's does, and changes nothing."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics.recalibration import (
    HistogramBinning,
    IsotonicCalibration,
    PlattScaling,
    TemperatureScaling,
)


def _pairs():
    g = torch.Generator().manual_seed(0)
    q = torch.rand(500, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g)


def _buffers(module) -> dict:
    return {k: v.clone() for k, v in module.state_dict().items() if isinstance(v, torch.Tensor)}


@pytest.mark.parametrize("fitted_first", [False, True])
def test_a_binning_state_of_another_kind_is_refused_by_its_keys(fitted_first):
    """A HistogramBinning state in an IsotonicCalibration had been told "the state's
    y_thresholds holds 0 values", a key the state has not: its values were checked, the
    module's own standing in for the keys it lacks, before torch's check of the keys."""
    q, y = _pairs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        histogram, isotonic = HistogramBinning().fit(q, y), IsotonicCalibration().fit(q, y)
    for kind, other, ours, theirs in [
        (IsotonicCalibration, histogram, "x_thresholds", "edges"),
        (HistogramBinning, isotonic, "edges", "x_thresholds"),
    ]:
        module = kind()
        if fitted_first:
            module.load_state_dict((isotonic if kind is IsotonicCalibration else histogram)
                                   .state_dict())  # fmt: skip
        before = _buffers(module)
        with pytest.raises(RuntimeError, match=rf'Missing key\(s\).*"{ours}"') as refused:
            module.load_state_dict(other.state_dict())
        assert f'Unexpected key(s) in state_dict: "{theirs}"' in str(refused.value)
        assert "holds 0 values" not in str(refused.value)
        after = _buffers(module)
        assert all(torch.equal(before[k], after[k]) for k in before)  # nothing changed
        # strict=False: torch loads what matches; here nothing, and the keys are named.
        result = module.load_state_dict(other.state_dict(), strict=False)
        assert ours in result.missing_keys and theirs in result.unexpected_keys
        after = _buffers(module)
        assert all(torch.equal(before[k], after[k]) for k in before)


def test_a_scaler_state_of_another_kind_leaves_the_module_unfitted():
    """A TemperatureScaling state in a PlattScaling had been refused by torch after its
    'fitted' flag loaded: the module then mapped scores with the default slope, as fitted."""
    q, y = _pairs()
    temperature = TemperatureScaling().fit(torch.logit(q), y)
    platt = PlattScaling()
    with pytest.raises(RuntimeError, match=r'Unexpected key.*"temperature"'):
        platt.load_state_dict(temperature.state_dict())
    assert not platt.fitted
    with pytest.raises(ValueError, match="PlattScaling is not fitted"):
        platt(torch.zeros(3))


def test_a_partial_binning_state_names_the_key_it_lacks():
    """strict=False: the key a state lacks keeps the module's own, and the refusal says so
    rather than calling that the state's."""
    q, y = _pairs()
    state = IsotonicCalibration().fit(q, y).state_dict()
    del state["y_thresholds"]
    said = r"holds no y_thresholds, which a partial load leaves as this module's own, and the"
    with pytest.raises(ValueError, match=said + " y_thresholds holds 0"):
        IsotonicCalibration().load_state_dict(state, strict=False)


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_state_of_its_kind_beside_an_extra_key_loads_with_strict_false(wrapped):
    """A TemperatureScaling state beside a 'note' had loaded nothing with strict=False (its
    extra key taken for another kind's), the result naming no key missing: the module
    stayed unfitted at T = 1 without a word. It holds every key of the kind, so it loads,
    and the result names the extra key, as torch's does for any module."""
    q, y = _pairs()
    fitted = TemperatureScaling(inputs="probs").fit(q, y)
    state = {**fitted.state_dict(), "note": torch.tensor(1.0)}
    module = TemperatureScaling(inputs="probs")
    if wrapped:
        holder = torch.nn.Module()
        holder.recal = module
        result = holder.load_state_dict({f"recal.{k}": v for k, v in state.items()}, False)
        assert result.unexpected_keys == ["recal.note"]
    else:
        result = module.load_state_dict(state, strict=False)
        assert result.unexpected_keys == ["note"]
    assert result.missing_keys == []
    assert bool(module.fitted)
    assert module.temperature.item() == fitted.temperature.item()


def _without_kind(state: dict, prefix: str = "") -> dict:
    """``state`` as saved before it named the kind that saved it."""
    extra = {k: v for k, v in state[prefix + "_extra_state"].items() if k != "kind"}
    return {**state, prefix + "_extra_state": extra}


def _kept(module) -> tuple[dict, dict]:
    """What a load may change: every buffer, and the attributes beside them (``n_bins``)."""
    attributes = {
        f"{name}.{k}": v
        for name, part in module.named_modules()
        for k, v in vars(part).items()
        if not k.startswith("_")
    }
    return _buffers(module), attributes


def _unchanged(before: tuple[dict, dict], after: tuple[dict, dict]) -> bool:
    (buffers, attributes), (buffers_after, attributes_after) = before, after
    return (
        buffers.keys() == buffers_after.keys()
        and all(
            buffers[k].shape == buffers_after[k].shape and torch.equal(buffers[k], buffers_after[k])
            for k in buffers
        )
        and attributes == attributes_after
    )


def _other_states(fitted: dict, name: str) -> dict[str, dict]:
    """Every other kind's state, and this kind's own less each of its keys in turn."""
    own = fitted[name].state_dict()
    states = {
        other: m.state_dict() for other, m in fitted.items() if type(m) is not type(fitted[name])
    }
    for key in own:
        if not key.endswith("_extra_state"):
            states[f"{name} without {key}"] = {k: v for k, v in own.items() if k != key}
    return states


@pytest.mark.parametrize("fitted_first", [False, True])
def test_a_refused_load_changes_nothing(fitted_first):
    """A fitted HistogramBinning state in a fresh ScalingBinning was refused by torch for
    its missing platt.* keys after the edges, values and flag had loaded: the module was
    left marked fitted, half loaded. So was every kind by a state of its own lacking a key
    (TemperatureScaling took 'fitted' without its temperature), and by another kind's state
    holding all its keys but one (a ChainTemperature's temperature in a TemperatureScaling).
    A load refused, with strict=True or False, now leaves every kind as it was."""
    from test_recalibration_inputs import _fitted_recalibrators

    fitted = _fitted_recalibrators()
    changed = []
    for name, source in fitted.items():
        options = {"inputs": "probs"} if name.startswith("fit_binary") else {}
        for said, state in _other_states(fitted, name).items():
            for strict in (True, False):
                module = type(source)(**options)
                if fitted_first:
                    module.load_state_dict(source.state_dict())
                before = _kept(module)
                try:
                    module.load_state_dict(state, strict=strict)
                except (RuntimeError, ValueError):
                    if not _unchanged(before, _kept(module)):
                        changed.append((name, said, strict))
    assert changed == []


def test_a_binning_state_in_a_scaling_binning_is_refused_whole():
    """The finding's case: the ScalingBinning stays unfitted, and a call says so, rather
    than reading the HistogramBinning's edges through an unfitted Platt step. With
    strict=False the state is another kind's by its setting binning=, which a
    ScalingBinning has not: nothing of it loads (it had loaded, its Platt step unfitted)."""
    from calib_metrics.recalibration import ScalingBinning

    q, y = _pairs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = HistogramBinning().fit(q, y).state_dict()
    module = ScalingBinning()
    with pytest.raises((RuntimeError, ValueError)):
        module.load_state_dict(state)
    assert not module.fitted and module.edges.numel() == 0 and module.n_bins == 15
    with pytest.raises(ValueError, match="ScalingBinning is not fitted"):
        module(torch.zeros(3))
    said = r"the state is a HistogramBinning's: load it into a HistogramBinning"
    with pytest.raises(ValueError, match=said):
        module.load_state_dict(state, strict=False)
    # Saved before a state named its kind: another kind's by its setting binning=.
    said = r"binning='adaptive', a setting this kind does not take \(another kind's state"
    with pytest.raises(ValueError, match=said):
        module.load_state_dict(_without_kind(state), strict=False)
    assert not module.fitted and module.edges.numel() == 0
    # A setting the kind takes is no sign of another kind: HistogramBinning saved inputs=
    # too before 77ad799, and such a state still loads.
    older = {**state, "_extra_state": {**state["_extra_state"], "inputs": "scores"}}
    histogram = HistogramBinning().load_state_dict(older)
    assert histogram.missing_keys == [] and histogram.unexpected_keys == []


def test_another_kinds_partial_state_is_refused_by_its_settings():
    """A ChainTemperature state without its transition temperature holds no key a
    TemperatureScaling lacks but num_classes: with strict=False its temperature had loaded
    into the TemperatureScaling, marked fitted. Its setting separate= says whose it is."""
    from calib_metrics.recalibration import ChainTemperature

    state = ChainTemperature().state_dict()
    state["temperature"] = torch.tensor(3.0, dtype=torch.float64)
    state["fitted"] = torch.tensor(True)
    del state["transition_temperature"]
    q, y = _pairs()
    module = TemperatureScaling().fit(torch.logit(q), y)
    fitted = module.temperature.item()
    with pytest.raises(ValueError, match="the state is a ChainTemperature's"):
        module.load_state_dict(state, strict=False)
    with pytest.raises(ValueError, match="separate=False, a setting this kind does not take"):
        module.load_state_dict(_without_kind(state), strict=False)
    assert module.temperature.item() == fitted


def _scores_and_labels():
    g = torch.Generator().manual_seed(0)
    s = torch.randn(2000, generator=g, dtype=torch.float64) * 3
    return s, torch.bernoulli(torch.sigmoid(s), generator=g)


@pytest.mark.parametrize("fitted_first", [False, True])
def test_a_scaling_binning_state_is_refused_by_a_histogram_binning(fitted_first):
    """A ScalingBinning state holds every key of a HistogramBinning and its Platt step's
    besides: with strict=False it had loaded, marked fitted, its edges (on the Platt
    scale) read as scores' (0.003 for a score of 0 that the ScalingBinning maps to 0.48),
    the only sign unexpected_keys=['platt.*']. The state names the kind that saved it."""
    from calib_metrics.recalibration import ScalingBinning

    s, y = _scores_and_labels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = ScalingBinning(generator=torch.Generator().manual_seed(0)).fit(s, y).state_dict()
        own = HistogramBinning().fit(s, y)
    for strict in (True, False):
        module = HistogramBinning()
        if fitted_first:
            module.load_state_dict(own.state_dict())
        before = _kept(module)
        said = r"the state is a ScalingBinning's: load it into a ScalingBinning"
        with pytest.raises(ValueError, match=said):
            module.load_state_dict(state, strict=strict)
        assert _unchanged(before, _kept(module))
        if not fitted_first:
            with pytest.raises(ValueError, match="HistogramBinning is not fitted"):
                module(torch.zeros(3, dtype=torch.float64))
    assert state["_extra_state"]["kind"] == "ScalingBinning"
    assert state["platt._extra_state"]["kind"] == "PlattScaling"


def test_a_state_of_its_kind_beside_an_extra_key_is_checked_for_its_settings():
    """Such a state loads with strict=False, and its settings had gone unread beside the
    extra key: a fit_binary TemperatureScaling's (inputs='probs') loaded into one built
    with the defaults, reading probabilities as logits, and a HistogramBinning of 5 bins
    left the module's n_bins at 15. Its settings are read as without the key."""
    from calib_metrics.recalibration import fit_binary

    q, y = _pairs()
    note = {"note": torch.tensor(1.0)}
    state = {**fit_binary("temperature", q, y).state_dict(), **note}
    default = TemperatureScaling()
    with pytest.raises(ValueError, match=r"fitted with inputs='probs'.*build it with"):
        default.load_state_dict(state, strict=False)
    assert not default.fitted
    same = TemperatureScaling(inputs="probs")
    assert same.load_state_dict(state, strict=False).unexpected_keys == ["note"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        five = HistogramBinning(n_bins=5).fit(q, y)
    binning = HistogramBinning()
    binning.load_state_dict({**five.state_dict(), **note}, strict=False)
    assert binning.n_bins == 5 and binning.values.numel() == 5


class _SubclassedBinning(HistogramBinning):
    """A user's subclass passing its arguments on, as many do."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)


def test_a_subclass_loads_its_kinds_states_both_ways():
    """A subclass forwarding **kwargs refused its own state, fitted with n_bins=5 and
    loaded into one built with the defaults: "n_bins=5, a setting this kind has not: the
    state is not a _SubclassedBinning's" (its own signature takes no n_bins). A subclass
    takes its kind's arguments, and its state is its kind's, both ways."""
    from calib_metrics.recalibration import ScalingBinning

    q, y = _pairs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _SubclassedBinning(n_bins=5).fit(q, y)
        theirs = HistogramBinning(n_bins=5).fit(q, y)
    older = _without_kind(ours.state_dict())  # judged by its settings, n_bins=5 among them
    for state in (ours.state_dict(), theirs.state_dict(), older):
        for module in (_SubclassedBinning(), HistogramBinning()):
            result = module.load_state_dict(state)
            assert result.missing_keys == [] and result.unexpected_keys == []
            assert module.n_bins == 5 and torch.equal(module(q), ours(q))
    assert ours.state_dict()["_extra_state"]["kind"] == "HistogramBinning"

    # Still another kind's in a ScalingBinning, or in a subclass of it, by its name or,
    # saved before it named it, by its setting binning=.
    class _SubclassedScaling(ScalingBinning):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)

    for module in (ScalingBinning(), _SubclassedScaling()):
        for state, said in [
            (ours.state_dict(), "the state is a HistogramBinning's"),
            (_without_kind(ours.state_dict()), "binning='adaptive', a setting this kind does not"),
        ]:
            with pytest.raises(ValueError, match=said):
                module.load_state_dict(state, strict=False)
            assert not module.fitted


def test_a_setting_or_kind_this_version_does_not_know_is_refused_as_such():
    """A setting unknown to this version in a state of this kind had been called proof of
    another kind's state ("the state is not a TemperatureScaling's"), which the load
    cannot know. It is refused (the buffers may mean something else under it), saying
    what the state may be: one of another version, where the state names this kind."""
    q, y = _pairs()
    fitted = TemperatureScaling().fit(torch.logit(q), y)
    state = fitted.state_dict()
    newer = {**state, "_extra_state": {**state["_extra_state"], "note": 1}}
    module = TemperatureScaling()
    said = r"note=1, a setting this kind does not take \(a state of another version of calib"
    with pytest.raises(ValueError, match=said):
        module.load_state_dict(newer)
    said = r"note=1, a setting this kind does not take \(another kind's state, or one of another"
    with pytest.raises(ValueError, match=said):
        module.load_state_dict(_without_kind(newer))
    unknown = {**state, "_extra_state": {**state["_extra_state"], "kind": "FutureScaling"}}
    with pytest.raises(ValueError, match="saved by 'FutureScaling', a kind this version"):
        module.load_state_dict(unknown, strict=False)
    assert not module.fitted and module.temperature.item() == 1.0


def _kind_less(state: dict, how: str) -> dict:
    """``state`` as an older version saved it: its kind's name dropped (from the module's
    extra state, or from every part's), or no extra state at all."""
    if how == "no extra state":
        return {k: v for k, v in state.items() if not k.endswith("_extra_state")}
    dropped = [
        k for k in state if k.endswith("_extra_state") and (how == "all" or k == "_extra_state")
    ]
    return {**state, **{k: {n: v for n, v in state[k].items() if n != "kind"} for k in dropped}}


@pytest.mark.parametrize("how", ["module", "all", "no extra state"])
def test_a_kind_less_state_holding_parts_a_kind_has_not_is_refused(how):
    """A ScalingBinning state saved before states named their kind holds every key of a
    HistogramBinning and its Platt step's besides: with strict=False it had loaded into
    one, marked fitted, its Platt-scale edges read as scores (only unexpected_keys said
    platt.*), and with strict=True torch named the keys alone. Keys of a part that the
    module has not are another kind's. Every kind is tried with every other kind's state:
    one lacking keys of the module's own fails on them, as before (with strict=False
    nothing of it loads, and the result names them)."""
    from test_recalibration_inputs import _fitted_recalibrators

    fitted = _fitted_recalibrators()
    with_parts = {n: m for n, m in fitted.items() if any(True for _ in m.named_children())}
    assert with_parts  # ScalingBinning's Platt step, at least
    for name, source in with_parts.items():
        state = _kind_less(source.state_dict(), how)
        parts = sorted(k for k in state if "." in k)
        for kind in {type(m) for m in fitted.values()} - {type(source)}:
            lacked = kind().state_dict().keys() - state.keys() - {"_extra_state"}
            for strict in (True, False):
                module = kind()
                before = _kept(module)
                try:
                    result = module.load_state_dict(state, strict=strict)
                except (RuntimeError, ValueError) as refused:
                    said, error = str(refused), type(refused)
                else:
                    said, error = None, None
                    assert not strict and lacked, (name, kind, result)
                    assert set(result.missing_keys) == lacked
                assert _unchanged(before, _kept(module)), (name, kind, strict)
                if not lacked:
                    assert error is ValueError, (name, kind, said)
                    assert f"belong to no part of a {kind.__name__}" in said
                    assert "another kind's state" in said
                    assert all(repr(k) in said for k in parts), said


def test_a_kind_less_state_of_its_own_kind_still_loads():
    """The refusal above reads a part's keys only: a kind's own older state loads, its
    Platt step's keys among them, and with strict=False beside a key of no part."""
    from calib_metrics.recalibration import ScalingBinning

    s, y = _scores_and_labels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = ScalingBinning(generator=torch.Generator().manual_seed(0)).fit(s, y)
    for how in ("module", "all", "no extra state"):
        module = ScalingBinning()
        result = module.load_state_dict(_kind_less(fitted.state_dict(), how))
        assert result.unexpected_keys == [] and torch.equal(module(s), fitted(s))
        state = {**_kind_less(fitted.state_dict(), how), "note": torch.tensor(1.0)}
        assert ScalingBinning().load_state_dict(state, strict=False).unexpected_keys == ["note"]
        # A dotted key of no library kind's part (a user's metadata) had been refused as
        # another kind's: only the keys under a kind's parts (platt.*) mark one.
        state = {**_kind_less(fitted.state_dict(), how), "meta.version": torch.tensor(3)}
        result = ScalingBinning().load_state_dict(state, strict=False)
        assert result.unexpected_keys == ["meta.version"]
