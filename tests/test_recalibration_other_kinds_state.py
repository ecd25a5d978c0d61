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
