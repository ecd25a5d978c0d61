"""Every recalibrator's fitted buffers: float64 after a load of a state in another dtype,
and never inference tensors after a fit under ``torch.inference_mode``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from calib_metrics.models import coref, linear_chain
from calib_metrics.recalibration import (
    ChainTemperature,
    CorefTemperature,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    ScalingBinning,
    TemperatureScaling,
    VectorScaling,
)

pytest.importorskip("sklearn")  # IsotonicCalibration

G = torch.Generator().manual_seed(0)
LOGITS = 3 * torch.randn(300, 3, generator=G)
CLASSES = torch.multinomial(torch.softmax(LOGITS / 2, -1), 1, generator=G)[:, 0]
SCORES = torch.randn(300, generator=G)
LABELS = torch.bernoulli(torch.sigmoid(2 * SCORES), generator=G)
EMISSIONS, TRANSITIONS = torch.randn(40, 6, 3, generator=G), torch.randn(3, 3, generator=G)
START = END = torch.zeros(3)
TAGS = linear_chain.sample(EMISSIONS, TRANSITIONS, START, END, n_samples=1, generator=G)[0]
MENTIONS = torch.randn(20, 6, 6, generator=G)
GOLD = nn.functional.one_hot(coref.sample_antecedents(MENTIONS, 1, generator=G)[0], 6).bool()
CHAIN = (EMISSIONS, TRANSITIONS, START, END)


def _split() -> ScalingBinning:
    return ScalingBinning(generator=torch.Generator().manual_seed(0))


# Each kind: how to build one, the arguments of its fit, and a call of the fitted module
# (on an input of its own where it takes one tensor: one that requires grad, say).
KINDS: dict[str, tuple[Callable[[], nn.Module], tuple[Tensor, ...], Callable[..., Tensor]]] = {
    "TemperatureScaling": (TemperatureScaling, (LOGITS, CLASSES), lambda m, x=LOGITS: m(x)),
    "VectorScaling": (VectorScaling, (LOGITS, CLASSES), lambda m, x=LOGITS: m(x)),
    "MatrixScaling": (MatrixScaling, (LOGITS, CLASSES), lambda m, x=LOGITS: m(x)),
    "PlattScaling": (PlattScaling, (SCORES, LABELS), lambda m, x=SCORES: m(x)),
    "HistogramBinning": (HistogramBinning, (SCORES, LABELS), lambda m, x=SCORES: m(x)),
    "IsotonicCalibration": (IsotonicCalibration, (SCORES, LABELS), lambda m, x=SCORES: m(x)),
    "ScalingBinning": (_split, (SCORES, LABELS), lambda m, x=SCORES: m(x)),
    "ChainTemperature": (
        ChainTemperature,
        (*(3 * x for x in CHAIN), TAGS),
        lambda m: m.marginals(*CHAIN).unigram,
    ),
    "CorefTemperature": (
        lambda: CorefTemperature(new_offset=True),
        (3 * MENTIONS, GOLD),
        lambda m: m.marginals(MENTIONS),
    ),
}


def _fitted(kind: str) -> nn.Module:
    make, data, _ = KINDS[kind]
    return make().fit(*data)


def _real(state: dict[str, Any], dtype: torch.dtype) -> dict[str, Any]:
    """``state`` with its floating tensors in ``dtype``."""
    return {
        k: v.to(dtype) if isinstance(v, Tensor) and v.is_floating_point() else v
        for k, v in state.items()
    }


@pytest.mark.parametrize("kind", KINDS)
def test_a_state_in_float32_loads_as_float64(kind: str) -> None:
    """A float32 state (hand-made, or converted: {k: v.float()}) had loaded "All keys
    matched" and kept float32 buffers: every MatrixScaling call then failed ("expected m1
    and m2 to have the same dtype"). Its values now load as float64, as a fit makes them,
    and the call is the float64 state's with those values."""
    make, _, call = KINDS[kind]
    state = _fitted(kind).state_dict()
    loaded, rounded = make(), make()
    loaded.load_state_dict(_real(state, torch.float32))
    rounded.load_state_dict(_real(_real(state, torch.float32), torch.float64))
    assert {b.dtype for b in loaded.buffers() if b.is_floating_point()} == {torch.float64}
    assert torch.equal(call(loaded), call(rounded))


def test_a_hand_made_matrix_state_is_applied() -> None:
    state = {"weight": torch.eye(3) / 1.5, "bias": torch.zeros(3),
             "num_classes": torch.tensor(3), "fitted": torch.tensor(True)}  # fmt: skip
    matrix = MatrixScaling()
    matrix.load_state_dict(state)
    temperature = TemperatureScaling()
    temperature.load_state_dict({"temperature": torch.tensor(1.5), "num_classes": torch.tensor(3),
                                 "fitted": torch.tensor(True)})  # fmt: skip
    torch.testing.assert_close(matrix(LOGITS), temperature(LOGITS))


def test_a_load_with_assign_keeps_float64_too() -> None:
    state = _real(_fitted("VectorScaling").state_dict(), torch.float32)
    module = VectorScaling()
    module.load_state_dict(state, assign=True)
    assert module.weight.dtype == module.bias.dtype == torch.float64


@pytest.mark.parametrize("kind", KINDS)
def test_a_fit_under_inference_mode_leaves_no_inference_tensor(kind: str) -> None:
    """Fitted under torch.inference_mode (a Lightning hook) on inference tensors, the
    binning modules had kept inference tensors as buffers (the scalers their ``fitted``
    flag), and IsotonicCalibration called on scores that require grad failed ("Inference
    tensors cannot be saved for backward")."""
    make, data, call = KINDS[kind]
    with torch.inference_mode():
        module = make().fit(*(x.clone() for x in data))
    assert not [name for name, b in module.named_buffers() if b.is_inference()]
    reference = _fitted(kind)
    for got, expected in zip(module.buffers(), reference.buffers()):
        torch.testing.assert_close(got, expected)
    if kind in ("ChainTemperature", "CorefTemperature"):
        return
    x = data[0].clone().requires_grad_()
    out = call(module, x)
    if out.requires_grad:  # the binning modules' outputs are constant between edges
        out.sum().backward()
        assert x.grad is not None
    torch.testing.assert_close(out.detach(), call(reference))


@pytest.mark.parametrize("kind", KINDS)
def test_a_load_under_inference_mode_leaves_no_inference_tensor(kind: str) -> None:
    """Loaded under torch.inference_mode (a Lightning evaluation hook), the buffers made
    anew in the state's dtype had been inference tensors, so IsotonicCalibration called on
    scores that require grad failed as after such a fit."""
    make, data, call = KINDS[kind]
    module = make()
    with torch.inference_mode():
        module.load_state_dict(_fitted(kind).state_dict())
    assert not [name for name, b in module.named_buffers() if b.is_inference()]
    if kind not in ("ChainTemperature", "CorefTemperature"):
        out = call(module, data[0].clone().requires_grad_())
        torch.testing.assert_close(out.detach(), call(_fitted(kind)))


@pytest.mark.parametrize("shape", [(1,), (3,), ()])
def test_an_output_edited_in_place_leaves_the_fit_alone(shape) -> None:
    """Isotonic regression of constant scores has one threshold; its output had been a
    view of that buffer, so doubling it in place doubled every later output (to 1.8), and
    a 0-d score had failed to expand."""
    scores = torch.full((10,), 0.5, dtype=torch.float64)
    iso = IsotonicCalibration().fit(scores, torch.tensor([0.0, 1.0] * 5, dtype=torch.float64))
    out = iso(torch.full(shape, 0.3, dtype=torch.float64))
    out.mul_(2.0)
    assert iso.y_thresholds.tolist() == [0.5]
    assert iso(torch.tensor([0.2, 0.9], dtype=torch.float64)).tolist() == [0.5, 0.5]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_state_holding_nan_or_inf_is_refused_and_changes_nothing(kind: str, bad: float) -> None:
    """No fit makes a NaN or infinite parameter: loaded, a temperature of NaN had returned
    NaN probabilities at every call, with no word."""
    _, _, call = KINDS[kind]
    state = _fitted(kind).state_dict()
    name = next(
        k for k, v in state.items() if isinstance(v, Tensor) and v.is_floating_point() and v.numel()
    )
    broken = dict(state)
    broken[name] = state[name].clone().flatten().index_fill(0, torch.tensor([0]), bad)
    broken[name] = broken[name].reshape(state[name].shape)
    module = _fitted(kind)
    before = call(module)
    with pytest.raises(ValueError, match=f"state's {name.split('.')[-1]} holds NaN or infinite"):
        module.load_state_dict(broken)
    assert torch.equal(call(module), before)


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("TemperatureScaling", "temperature"),
        ("ChainTemperature", "temperature"),
        ("ChainTemperature", "transition_temperature"),
        ("CorefTemperature", "temperature"),
    ],
)
@pytest.mark.parametrize("value", [-1.0, 0.0])
@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_a_temperature_of_zero_or_less_is_refused(
    kind: str, name: str, value: float, dtype: torch.dtype
) -> None:
    """A fit keeps a temperature positive: loaded, T = -1 had reversed every ranking (the
    arg-max that temperature scaling never changes) and T = 0 returned NaN; a hand-made
    state's integer T (torch.tensor(-1)) is read as the load stores it, in float64."""
    make, _, _ = KINDS[kind]
    state = dict(_fitted(kind).state_dict())
    state[name] = torch.tensor(value, dtype=dtype)
    with pytest.raises(ValueError, match=rf"state's {name} is {value:g}; a temperature must be"):
        make().load_state_dict(state)


def _steps(kind: str, knots: list[float], values: list[float]) -> dict[str, Any]:
    """A fitted ``kind``'s state with its step function's knots and values replaced."""
    state = dict(_fitted(kind).state_dict())
    names = (
        ("x_thresholds", "y_thresholds") if kind == "IsotonicCalibration" else ("edges", "values")
    )
    for name, given in zip(names, (knots, values), strict=True):
        state[name] = torch.tensor(given, dtype=torch.float64)
    return state


@pytest.mark.parametrize("kind", ["HistogramBinning", "IsotonicCalibration", "ScalingBinning"])
@pytest.mark.parametrize(
    ("steps", "said"),
    [
        (([0.1, 0.9], [0.2, 1.9, 0.6]), "are not all probabilities in \\[0, 1\\]"),
        (([0.1, 0.9], [0.2, -0.5, 0.6]), "are not all probabilities"),
        (([0.9, 0.1], [0.2, 0.5, 0.6]), "are not strictly increasing"),
        (([0.1, 0.1], [0.2, 0.5, 0.6]), "are not strictly increasing"),
        (([0.1, 0.5, 0.9], [0.2]), "holds 1 value for 3"),
        (([], []), "holds 0 values for 0"),
    ],
)
def test_a_step_function_no_fit_makes_is_refused_and_changes_nothing(kind, steps, said) -> None:
    """Only NaN and infinite values had been refused: values of 1.9 loaded and were returned
    as probabilities, unsorted knots binned meaninglessly, and mismatched lengths (or no
    thresholds at all) failed at the call as an IndexError."""
    knots, values = steps
    if kind == "IsotonicCalibration" and len(values) == len(knots) + 1:
        values = values[1:]  # as many thresholds as values
    _, _, call = KINDS[kind]
    module = _fitted(kind)
    before = call(module)
    with pytest.raises(ValueError, match=f"{kind}: the state's .*{said}.*load a state this kind"):
        module.load_state_dict(_steps(kind, knots, values))
    assert torch.equal(call(module), before)


def test_edges_between_adjacent_doubles_are_kept_once_and_load() -> None:
    """Three adjacent doubles' two midpoints round to one value (the middle one's mantissa
    even): the fit had kept the edge twice, and its own state was refused at load."""
    middle = torch.tensor(0.7, dtype=torch.float64)
    neighbours = [
        torch.nextafter(middle, torch.tensor(side, dtype=torch.float64)) for side in (0.0, 1.0)
    ]
    scores = torch.cat([neighbours[0].repeat(100), middle.repeat(100), neighbours[1].repeat(100)])
    labels = torch.tensor([0.0, 1.0]).repeat_interleave(50).repeat(3).double()
    fitted = HistogramBinning(n_bins=3).fit(scores, labels)
    assert bool((fitted.edges.diff() > 0).all())
    assert fitted.values.numel() == fitted.edges.numel() + 1
    HistogramBinning(n_bins=3).load_state_dict(fitted.state_dict())


def test_decreasing_isotonic_thresholds_are_refused() -> None:
    with pytest.raises(ValueError, match="y_thresholds decrease, as no fit makes them"):
        IsotonicCalibration().load_state_dict(_steps("IsotonicCalibration", [0.1, 0.9], [0.7, 0.2]))
    # What fits keep loads: one threshold (every dev score alike), and an unfitted module.
    one = IsotonicCalibration().fit(torch.full((4,), 0.3), torch.tensor([0.0, 1, 1, 0]))
    IsotonicCalibration().load_state_dict(one.state_dict())
    HistogramBinning().load_state_dict(HistogramBinning().state_dict())


def test_histogram_edges_of_huge_scores_are_finite_and_load() -> None:
    """Equal-mass edges halfway between scores near float64's largest: (a + b) / 2 had
    overflowed to inf, every score fell in bin 0, and the state was refused at load."""
    values = [1.0e308, 1.2e308, 1.4e308, 1.6e308, 1.7e308, 1.75e308] * 20
    scores = torch.tensor(values, dtype=torch.float64)
    labels = torch.tensor([0, 1, 0, 1, 1, 1] * 20, dtype=torch.float64)
    fitted = HistogramBinning(n_bins=3).fit(scores, labels)
    assert bool(torch.isfinite(fitted.edges).all())
    HistogramBinning(n_bins=3).load_state_dict(fitted.state_dict())
    assert fitted(scores[:6]).tolist() == [0.5, 0.5, 0.5, 0.5, 1.0, 1.0]


@pytest.mark.parametrize("kind", ["VectorScaling", "MatrixScaling"])
@pytest.mark.parametrize("dropped", ["bias", "weight", "num_classes"])
def test_a_partial_load_that_breaks_the_model_is_refused(kind: str, dropped: str) -> None:
    """A fitted state without its bias, loaded with strict=False, had left the module
    marked fitted with a bias of shape [0], and every call then failed inside torch."""
    state = {k: v for k, v in _fitted(kind).state_dict().items() if k != dropped}
    module = KINDS[kind][0]()
    with pytest.raises(ValueError, match=r"one model of C classes.*keeps this module's own"):
        module.load_state_dict(state, strict=False)
    assert not module.fitted and module.weight.numel() == 0  # nothing changed


@pytest.mark.parametrize("kind", ["VectorScaling", "MatrixScaling"])
def test_an_unfitted_state_still_loads(kind: str) -> None:
    module = _fitted(kind)
    module.load_state_dict(KINDS[kind][0]().state_dict())
    assert not module.fitted and module.bias.numel() == 0


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_module_on_the_meta_device_refuses_to_fit(kind: str) -> None:
    """Built under torch.device("meta") (as Lightning's init_module builds modules), a
    scaler had taken its fit to meta without a word and failed at its first call; given
    a device first, it fits."""
    make, data, call = KINDS[kind]
    with torch.device("meta"):
        module = make()
    with pytest.raises(ValueError, match=f"{kind} is on the meta device.*outside torch.device"):
        module.fit(*data)
    module.load_state_dict(_fitted(kind).state_dict(), assign=True)  # the advice's other way
    torch.testing.assert_close(call(module), call(_fitted(kind)))


@pytest.mark.parametrize("kind", ["VectorScaling", "MatrixScaling"])
def test_a_partial_assigned_load_into_a_module_on_meta_is_left_to_torch(kind: str) -> None:
    """The check of the module as a partial load leaves it had read the meta module's own
    buffers, and failed in torch ("Tensor.item() cannot be called on meta tensors")."""
    state = {k: v for k, v in _fitted(kind).state_dict().items() if k != "fitted"}
    with torch.device("meta"):
        module = KINDS[kind][0]()
    module.load_state_dict(state, strict=False, assign=True)
    assert module.weight.device.type == "cpu"
