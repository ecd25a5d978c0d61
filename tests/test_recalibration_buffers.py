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


def _hand_made_vector_of_one_class() -> dict[str, Tensor]:
    """A VectorScaling state whose buffers agree on C = 1, which no fit makes (it needs
    logits [N, C], C >= 2): called, every logit went through its own sigmoid."""
    one = torch.ones(1, dtype=torch.float64)
    return {"weight": one, "bias": 0 * one, "num_classes": torch.tensor(1),
            "fitted": torch.tensor(True)}  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "value", "kept"),
    [
        ("TemperatureScaling", 0, "1 for binary scores .* or the number of classes C >= 2"),
        ("TemperatureScaling", -3, "1 for binary scores .* or the number of classes C >= 2"),
        ("TemperatureScaling", 1.5, "1 for binary scores .* or the number of classes C >= 2"),
        ("PlattScaling", 3, r"1 for binary scores \[N\] \(0 before"),
        ("PlattScaling", 0, r"1 for binary scores \[N\] \(0 before"),
        ("VectorScaling", 1, r"the number of classes C >= 2 of logits \[N, C\] \(0 before"),
    ],
)
def test_a_num_classes_no_fit_keeps_is_refused_and_changes_nothing(kind, value, kept) -> None:
    """A temperature state with num_classes 1.5 had loaded as 1 (each of 3 logits through
    its own sigmoid, rows not summing to 1), 0 or -3 skipped the call's check of the
    classes, and a PlattScaling state of 3 classes loaded, then refused every binary call."""
    make, _, call = KINDS[kind]
    if kind == "VectorScaling":
        state = _hand_made_vector_of_one_class()
    else:
        state = {**_fitted(kind).state_dict(), "num_classes": torch.tensor(value)}
    module = _fitted(kind)
    before, classes = call(module), module.num_classes.clone()
    said = f"{kind}: the state's num_classes is {value:g} \\(fitted\\), where a fit keeps {kept}"
    with pytest.raises(ValueError, match=said):
        module.load_state_dict(state)
    assert torch.equal(module.num_classes, classes) and torch.equal(call(module), before)
    # What a fit keeps still loads: an unfitted state's 0, and 1 for binary temperatures.
    make().load_state_dict(make().state_dict())
    binary = TemperatureScaling().fit(SCORES, LABELS).state_dict()
    TemperatureScaling().load_state_dict(binary)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("flag", [2, float("nan")])
def test_a_fitted_flag_other_than_0_or_1_is_refused(kind: str, flag: float) -> None:
    """``fitted`` of 2 (or NaN) had loaded, and read as fitted."""
    module = _fitted(kind)
    state = {**module.state_dict(), "fitted": torch.tensor(flag)}
    kept = dict(module.state_dict())
    with pytest.raises(ValueError, match=f"{kind}: the state's fitted is {flag!r}, where a module"):
        module.load_state_dict(state)
    assert all(torch.equal(kept[k], v) for k, v in module.state_dict().items() if k in kept
               and isinstance(v, Tensor))  # fmt: skip


def _scaling_binning(scores: Tensor, inputs: str, n_bins: int) -> ScalingBinning:
    split = torch.Generator().manual_seed(0)
    return ScalingBinning(n_bins=n_bins, inputs=inputs, generator=split).fit(scores, LABELS)


def test_a_scaling_binning_state_of_other_inputs_names_it_and_changes_nothing() -> None:
    """The refusal had named PlattScaling, a class the caller never built, and came after
    the ScalingBinning's own edges and values had been replaced by the state's: torch loads
    a module before the modules inside it."""
    logits = _scaling_binning(SCORES, "logits", 5)
    module = _scaling_binning(torch.sigmoid(SCORES), "probs", 7)
    before = {k: v.clone() for k, v in module.state_dict().items() if isinstance(v, Tensor)}
    said = r"^ScalingBinning \(its Platt step.*inputs='logits'.*build it with inputs='logits'"
    with pytest.raises(ValueError, match=said):
        module.load_state_dict(logits.state_dict())
    assert all(torch.equal(v, module.state_dict()[k]) for k, v in before.items())
    assert module.n_bins == 7
    # Any refusal of the Platt step's part comes before the module changes.
    state = {**logits.state_dict(), "platt.num_classes": torch.tensor(3)}
    with pytest.raises(ValueError, match=r"^ScalingBinning \(its Platt step.*num_classes is 3"):
        _scaling_binning(SCORES, "logits", 7).load_state_dict(state)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: HistogramBinning(n_bins=n),
        lambda n: HistogramBinning(n_bins=n, binning="uniform"),
        lambda n: ScalingBinning(n_bins=n, generator=torch.Generator().manual_seed(0)),
    ],
)
def test_a_binning_module_takes_n_bins_from_the_state(make) -> None:
    """Loaded from a module of 5 bins, one built with 15 had kept n_bins == 15 while it
    held 5 (and a refit used 15). n_bins travels in the state: a module fitted on tied
    scores, which hold fewer bins than it asked for, loads as it was built."""
    scores = torch.sigmoid(SCORES)
    five = make(5).fit(scores, LABELS)
    module = make(15)
    module.load_state_dict(five.state_dict())
    assert module.n_bins == 5 and torch.equal(module(scores), five(scores))
    tied = make(8).fit(scores.mul(4).round().div(4), LABELS)
    module.load_state_dict(tied.state_dict())
    assert module.n_bins == 8 and tied.values.numel() <= 8  # 5 where the scores tie
    # An n_bins that no module takes, or fewer than the state holds, is refused.
    for n_bins, said in [(0, r"n_bins must be an int in \[1, "), (3, "holds 5 bins, more than")]:
        state = {**five.state_dict(), "_extra_state": {**five.get_extra_state(), "n_bins": n_bins}}
        with pytest.raises(ValueError, match=f"the state's {said}|the state {said}"):
            make(15).load_state_dict(state)


def _saved_before(module: nn.Module) -> dict[str, Any]:
    """``module``'s state as the release before n_bins travelled saved it."""
    state = dict(module.state_dict())
    extra = {k: v for k, v in state.pop("_extra_state").items() if k != "n_bins"}
    return state | ({"_extra_state": extra} if extra else {})


@pytest.mark.parametrize(
    "make",
    [
        lambda n: HistogramBinning(n_bins=n),
        lambda n: ScalingBinning(n_bins=n, generator=torch.Generator().manual_seed(0)),
    ],
)
def test_an_equal_mass_state_saved_before_keeps_the_modules_n_bins(make) -> None:
    """Tied scores hold fewer equal-mass bins than asked for: such a state, saved before
    n_bins travelled, had set n_bins to the bins held, so a module built exactly as the one
    that saved it loaded with n_bins=5 (and refitted with 5) instead of 15."""
    scores = torch.sigmoid(SCORES)
    tied = make(15).fit(scores.mul(4).round().div(4), LABELS)
    assert tied.values.numel() < 15
    module = make(15)
    module.load_state_dict(_saved_before(tied))
    assert module.n_bins == 15 and torch.equal(module(scores), tied(scores))
    # Built with fewer than the state holds, it takes the bins held.
    five = make(5).fit(scores, LABELS)
    module = make(3)
    module.load_state_dict(_saved_before(five))
    assert module.n_bins == 5


def test_a_uniform_state_takes_the_bins_it_holds_and_no_other_n_bins() -> None:
    """A uniform fit holds exactly n_bins bins: a state saved before n_bins travelled gives
    it, and a state whose n_bins differs from the bins it holds is refused (n_bins=20 over
    5 bins had loaded)."""
    five = HistogramBinning(n_bins=5, binning="uniform").fit(torch.sigmoid(SCORES), LABELS)
    module = HistogramBinning(n_bins=15, binning="uniform")
    module.load_state_dict(_saved_before(five))
    assert module.n_bins == 5
    state = {**five.state_dict(), "_extra_state": {"binning": "uniform", "n_bins": 20}}
    module = HistogramBinning(n_bins=15, binning="uniform")
    with pytest.raises(ValueError, match=r"holds 5 bins where its n_bins=20; a uniform fit"):
        module.load_state_dict(state)
    assert module.n_bins == 15 and not module.fitted


@pytest.mark.parametrize("kind", ["TemperatureScaling", "PlattScaling"])
def test_an_unfitted_state_keeps_num_classes_0(kind: str) -> None:
    """An unfitted state of num_classes 3 had loaded, though a fit sets num_classes and the
    fitted flag together (0 before the fit)."""
    make = KINDS[kind][0]
    state = {**make().state_dict(), "num_classes": torch.tensor(3)}
    module = make()
    with pytest.raises(ValueError, match=r"num_classes is 3 \(not fitted\), .*\(0 before the fit"):
        module.load_state_dict(state)
    assert int(module.num_classes) == 0


def test_a_scaling_binning_state_of_another_shape_is_refused_in_its_name() -> None:
    """A Platt step's slope of shape [2] had been refused as "PlattScaling: ... the state is
    not a PlattScaling's", a class the caller never built."""
    fitted = _scaling_binning(SCORES, "logits", 5)
    state = {**fitted.state_dict(), "platt.slope": torch.tensor([1.0, 2.0])}
    said = r"^ScalingBinning \(its Platt step.*slope has shape \[2\].*not a ScalingBinning's;"
    with pytest.raises(ValueError, match=said):
        ScalingBinning().load_state_dict(state)
