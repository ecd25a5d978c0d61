"""``fit_binary`` takes probabilities, whatever the method: every method refuses values
outside [0, 1] (logits passed by mistake). Once, ``"isotonic"`` and ``"histogram"`` — whose
modules take any real scores — fitted on logits without a word, while the three others
refused them."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics.recalibration import (
    BINARY_METHODS,
    HistogramBinning,
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
    fit_binary,
)


@pytest.mark.parametrize("method", BINARY_METHODS)
@pytest.mark.parametrize("shift", [1.0, -1.0])
def test_fit_binary_refuses_values_outside_0_1(method, shift) -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(200, generator=g)
    y = torch.bernoulli(q, generator=g)
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        fit_binary(method, q + shift, y)


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_fit_binary_still_fits_probabilities_at_the_ends(method) -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.rand(200, generator=g)
    q[:3] = torch.tensor([0.0, 1.0, 0.5])
    y = torch.bernoulli(q, generator=g)
    out = fit_binary(method, q, y, generator=g)(q)
    assert out.shape == q.shape and bool(((out >= 0) & (out <= 1)).all())


def _fitted_binary():
    g = torch.Generator().manual_seed(2)
    q = torch.rand(300, generator=g)
    y = torch.bernoulli(q, generator=g)
    return {m: fit_binary(m, q, y, generator=g) for m in BINARY_METHODS}


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_a_fitted_binary_recalibrator_maps_an_empty_batch_to_an_empty_one(method) -> None:
    # An empty batch (all padding, a last partial shard) is not a fitting problem: once,
    # calling a fitted module on it raised "a recalibrator needs held-out data to fit on".
    out = _fitted_binary()[method](torch.empty(0))
    assert out.shape == (0,)


def test_fitted_scalers_map_empty_logits_to_empty_probabilities() -> None:
    g = torch.Generator().manual_seed(3)
    logits = 3 * torch.randn(300, 4, generator=g)
    target = torch.multinomial(torch.softmax(logits / 3, -1), 1, generator=g)[:, 0]
    for scaler in (TemperatureScaling(), VectorScaling(), MatrixScaling()):
        scaler.fit(logits, target)
        assert scaler(torch.empty(0, 4)).shape == (0, 4)
        assert scaler.calibrated_logits(torch.empty(0, 4)).shape == (0, 4)
    with pytest.raises(ValueError, match="empty"):
        TemperatureScaling().fit(torch.empty(0, 4), torch.empty(0, dtype=torch.long))


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_binary_probabilities_give_the_same_output_whatever_their_shape(method) -> None:
    """Structured models' queries come as [B, T]: a binary recalibrator on probabilities
    once read any input of more than one dimension as multiclass rows (log q, not
    logit q) and returned other numbers for the same scores."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q**2, generator=g)
    recalibrator = fit_binary(method, q, y, generator=torch.Generator().manual_seed(0))
    x = torch.tensor([0.2, 0.5, 0.9, 0.97], dtype=torch.float64)
    flat = recalibrator(x)
    torch.testing.assert_close(recalibrator(x[None])[0], flat, rtol=0, atol=0)
    torch.testing.assert_close(recalibrator(x.reshape(2, 2)).reshape(-1), flat, rtol=0, atol=0)


def test_one_multiclass_row_of_probabilities_is_still_multiclass() -> None:
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(3 * torch.randn(2000, 4, generator=g, dtype=torch.float64), -1)
    t = torch.multinomial(torch.softmax(p.log() / 3, -1), 1, generator=g)[:, 0]
    scaler = TemperatureScaling(inputs="probs").fit(p, t)
    torch.testing.assert_close(scaler(p[0]), scaler(p[:1])[0], rtol=0, atol=0)
    torch.testing.assert_close(scaler.calibrated_logits(p[0]), scaler.calibrated_logits(p[:1])[0])


@pytest.mark.parametrize("make", [TemperatureScaling, VectorScaling, MatrixScaling])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_a_cast_keeps_the_fitted_parameters_in_float64(make, dtype) -> None:
    """``.half()`` (or a parent module's cast) rounded the fitted parameters and made
    MatrixScaling raise on its next call (float64 matrix, float16 buffers)."""
    g = torch.Generator().manual_seed(0)
    z = torch.randn(500, 3, generator=g)
    t = torch.multinomial(torch.softmax(2 * z, -1), 1, generator=g)[:, 0]
    scaler = make().fit(z, t)
    before = {name: b.clone() for name, b in scaler.named_buffers()}
    expected = scaler(z)
    torch.nn.Sequential(scaler).to(dtype)
    for name, buffer in scaler.named_buffers():
        assert buffer.dtype == before[name].dtype and torch.equal(buffer, before[name]), name
    torch.testing.assert_close(scaler(z), expected, rtol=0, atol=0)
    assert scaler(z.to(dtype)).dtype == dtype


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_a_fitted_binary_recalibrator_takes_a_0_dim_score(method) -> None:
    """ "Binary scores of any shape": the scalers refused a 0-dim one, the binning ones not."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(500, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    recalibrator = fit_binary(method, q, y, generator=g)
    one = torch.tensor(0.3, dtype=torch.float64)
    assert recalibrator(one).shape == ()
    assert recalibrator(one).item() == recalibrator(one[None]).item()


def test_a_0_dim_input_to_a_multiclass_scaler_names_the_shape() -> None:
    g = torch.Generator().manual_seed(0)
    z = torch.randn(100, 3, generator=g)
    # Labels drawn from the logits: random ones carry no signal, and are refused.
    target = torch.multinomial(torch.softmax(z, -1), 1, generator=g)[:, 0]
    scaler = TemperatureScaling().fit(z, target)
    with pytest.raises(ValueError, match=r"must end in C = 3 classes, got shape \(\)"):
        scaler(torch.tensor(1.0))


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"before": [0.2, 0.4]}, "before must be a tensor, got list"),
        ({"target": (1, 0)}, "target must be a tensor, got tuple"),
        ({"n_samples": 1}, "n_samples"),
        ({"confidence": 1.5}, "confidence"),
    ],
)
def test_compare_before_after_names_bad_arguments(changes, message) -> None:
    """A list once raised AttributeError ('list' object has no attribute 'shape')."""
    from calib_metrics.recalibration import compare_before_after

    q = torch.rand(100, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    kwargs = {"before": q, "after": q.sqrt(), "target": (q > 0.5).double(), **changes}
    with pytest.raises(ValueError, match=message):
        compare_before_after(**kwargs)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_uniform_histogram_bins_are_uniform_binnings_in_every_dtype(dtype) -> None:
    """Bins are uniform_binning's, [eᵢ, eᵢ₊₁) with the edges in the scores' dtype: a score
    on an edge once fell in the bin below it (float64), and a float32 one was binned in
    float64 at fit but not at call."""
    from calib_metrics.functional.binning import uniform_bin_of
    from calib_metrics.recalibration import HistogramBinning

    q = torch.tensor([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0], dtype=dtype)
    y = torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    binning = HistogramBinning(n_bins=10, binning="uniform").fit(q, y)
    index = uniform_bin_of(q, 10)
    assert torch.equal(binning.values[index], binning(q).double())
    # each score alone in its bin but the last two (0.9 and 1.0 share [0.9, 1])
    assert binning(q).tolist() == [0.0, 1.0, 0.0, 1.0, 1.0, 0.5, 0.5]


def test_a_state_loads_only_into_a_module_that_reads_it_the_same_way() -> None:
    """fit_binary builds its modules with inputs="probs": loaded into a default
    TemperatureScaling ("All keys matched") the state mapped 0.05 to 0.51; a uniform
    HistogramBinning's edges, loaded into an adaptive one, moved scores on an edge."""
    from calib_metrics.recalibration import HistogramBinning, TemperatureScaling, fit_binary

    g = torch.Generator().manual_seed(0)
    q = torch.rand(500, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    fitted = fit_binary("temperature", q, y)
    default = TemperatureScaling()
    with pytest.raises(
        ValueError, match=r"fitted with inputs='probs'.*build it with inputs='probs'"
    ):
        default.load_state_dict(fitted.state_dict())
    assert not default.host_value("fitted")  # refused before anything changed
    same = TemperatureScaling(inputs="probs")
    same.load_state_dict(fitted.state_dict())
    torch.testing.assert_close(same(q), fitted(q))
    older = {k: v for k, v in fitted.state_dict().items() if k != "_extra_state"}
    TemperatureScaling(inputs="probs").load_state_dict(older)  # saved before the settings
    uniform = HistogramBinning(binning="uniform").fit(q, y)
    with pytest.raises(ValueError, match="binning='uniform'"):
        HistogramBinning().load_state_dict(uniform.state_dict())


def test_fit_binary_takes_one_probability_per_item() -> None:
    """[N, 2] rows had fitted a multiclass temperature under "temperature" (the docstring
    says [N]) while "platt" refused them."""
    from calib_metrics.recalibration import fit_binary

    rows = torch.softmax(torch.randn(20, 2, generator=torch.Generator().manual_seed(0)), -1)
    for method in ("temperature", "platt", "isotonic"):
        with pytest.raises(ValueError, match=r"probs must be \[N\], one probability per item"):
            fit_binary(method, rows, torch.arange(20) % 2)


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_fit_binary_names_the_probs_it_was_given(method) -> None:
    """A target of the wrong length had been measured against "logits" or "scores",
    arguments a caller of fit_binary(method, probs, target) never passed."""
    from calib_metrics.recalibration import fit_binary

    probs = torch.rand(20, generator=torch.Generator().manual_seed(0))
    message = r"target must have the shape of probs \(20,\), got \(19,\)"
    with pytest.raises(ValueError, match=message):
        fit_binary(method, probs, torch.arange(19) % 2)


def test_meta_tensors_are_refused_by_name() -> None:
    """Fitting or mapping meta tensors had failed in torch's .item() (RuntimeError), and
    compare_before_after in a copy (NotImplementedError)."""
    from calib_metrics.recalibration import TemperatureScaling, compare_before_after, fit_binary

    q = torch.rand(50, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = (q > 0.5).long()
    y[:5] = 1 - y[:5]
    meta_q, meta_y = q.to("meta"), y.to("meta")
    calls = {
        "probs": lambda: fit_binary("platt", meta_q, meta_y),
        "logits": lambda: TemperatureScaling().fit(meta_q, meta_y),
        "scores": lambda: fit_binary("isotonic", q, y)(meta_q),
        "before": lambda: compare_before_after(meta_q, meta_q, meta_y),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=f"{name} is on the meta device"):
            call()


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_fit_binary_modules_refuse_values_outside_0_1_when_called(method) -> None:
    # The isotonic and histogram modules had mapped a logit of 1.5 (clipped to the fitted
    # range, or binned) without a word; the three others refused it.
    g = torch.Generator().manual_seed(2)
    q = torch.rand(400, generator=g)
    module = fit_binary(method, q, torch.bernoulli(q, generator=g))
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        module(torch.tensor([0.5, 1.5]))
    assert module(torch.tensor([0.0, 0.5, 1.0])).shape == (3,)


def test_score_modules_still_take_any_real_scores_and_uniform_bins_only_probabilities() -> None:
    from calib_metrics.recalibration import HistogramBinning, IsotonicCalibration

    g = torch.Generator().manual_seed(3)
    s = torch.randn(400, generator=g)
    y = torch.bernoulli(torch.sigmoid(2 * s), generator=g)
    for module in (IsotonicCalibration(), HistogramBinning(n_bins=5)):
        assert module.fit(s, y)(torch.tensor([-3.0, 3.0])).shape == (2,)
    q = torch.sigmoid(s)
    uniform = HistogramBinning(n_bins=5, binning="uniform").fit(q, y)
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]"):
        uniform(torch.tensor([1.5]))  # had landed in the last bin
    with pytest.raises(ValueError, match="inputs must be 'scores' or 'probs'"):
        IsotonicCalibration(inputs="logits")
    # inputs= only checks the range, so a fit_binary state loads into a default module
    # and predicts alike (the module keeps its own inputs=).
    fitted = fit_binary("isotonic", q, y)
    loaded = IsotonicCalibration()
    loaded.load_state_dict(fitted.state_dict())
    torch.testing.assert_close(loaded(q), fitted(q))
    assert loaded(torch.tensor([3.0])).shape == (1,)


def test_an_isotonic_state_of_every_version_loads() -> None:
    """An IsotonicCalibration saved its inputs= between c3b195b and 77ad799, as a
    HistogramBinning did; such a HistogramBinning state loaded, and the isotonic one was
    refused ("Unexpected key(s) in state_dict: _extra_state"). Its extra state (the kind
    now) is read as a HistogramBinning's: a setting the kind takes, inputs= only checking
    the range, loads; so does a state saved before it had any extra state."""
    from calib_metrics.recalibration import IsotonicCalibration

    g = torch.Generator().manual_seed(3)
    q = torch.rand(400, generator=g, dtype=torch.float64)
    fitted = IsotonicCalibration().fit(q, torch.bernoulli(q, generator=g))
    state = fitted.state_dict()
    kept = {k: v for k, v in state.items() if k != "_extra_state"}
    for extra in ({"inputs": "scores"}, {"inputs": "probs"}, None):
        older = kept if extra is None else {**kept, "_extra_state": extra}
        module = IsotonicCalibration()
        result = module.load_state_dict(older)
        assert result.missing_keys == [] and result.unexpected_keys == []
        assert torch.equal(module(q), fitted(q))
    assert state["_extra_state"] == {"kind": "IsotonicCalibration"}


def test_a_temperature_kept_at_one_maps_probabilities_to_themselves_bit_for_bit() -> None:
    """Dev probabilities all 0.5 keep T = 1 (docs/recalibration.md), yet the map went
    through sigmoid(logit(q)), one ulp off on a third of the test items: recalibrate
    printed "+0.0000 [+0.0000, +0.0000] paired, p < 0.01" for the identity. compare of q
    with itself gives p = 1, and so must the identity."""
    from calib_metrics.recalibration import PlattScaling, compare_before_after

    g = torch.Generator().manual_seed(0)
    test = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(test, generator=g)
    with pytest.warns(UserWarning, match="kept T = 1"):
        identity = fit_binary("temperature", torch.full((40,), 0.5, dtype=torch.float64),
                              torch.arange(40) % 2)  # fmt: skip
    after = identity(test)
    assert torch.equal(after, test) and after.data_ptr() != test.data_ptr()  # a copy

    def compared(after: torch.Tensor) -> dict:
        draws = torch.Generator().manual_seed(1)
        return compare_before_after(test, after, y, n_samples=200, generator=draws)

    assert compared(after) == compared(test)
    assert compared(after)["p_value"] == 1.0 and compared(after)["difference"] == 0.0
    # Multiclass probabilities in float32, at T = 1 (rows all equal on dev).
    rows = torch.softmax(torch.randn(50, 3, generator=g), -1)
    with pytest.warns(UserWarning, match="kept T = 1"):
        kept = TemperatureScaling(inputs="probs").fit(torch.full((12, 3), 1 / 3),
                                                      torch.arange(12) % 3)  # fmt: skip
    assert torch.equal(kept(rows), rows)
    # Platt at slope 1 and intercept 0 is the identity too; any other value is not.
    platt = PlattScaling(inputs="probs").fit(test, y)
    platt.slope = torch.tensor(1.0, dtype=torch.float64)
    platt.intercept = torch.tensor(0.0, dtype=torch.float64)
    assert torch.equal(platt(test), test)
    platt.intercept = torch.tensor(1e-300, dtype=torch.float64)  # through logit and sigmoid
    assert not torch.equal(platt(test), test)
    # Still the checks of a call: a logit passed by mistake is refused.
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        identity(torch.tensor([1.5]))
    with pytest.raises(ValueError, match="logits must end in C = 3 classes"):
        kept(torch.full((2, 4), 0.25))


def _fitted_recalibrators() -> dict[str, torch.nn.Module]:
    """One fitted module of every recalibrator (and of each scaler's input kinds)."""
    import warnings

    from calib_metrics.models.coref import sample_antecedents
    from calib_metrics.models.linear_chain import sample
    from calib_metrics.recalibration import (
        ChainTemperature,
        CorefTemperature,
        HistogramBinning,
        IsotonicCalibration,
        PlattScaling,
        ScalingBinning,
    )

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(200, 3, generator=g, dtype=torch.float64)
    target = torch.multinomial(logits.softmax(-1), 1, generator=g)[:, 0]
    s = torch.randn(200, generator=g, dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid(s), generator=g)
    em, tr, z = torch.randn(50, 5, 3, generator=g), torch.randn(3, 3, generator=g), torch.zeros(3)
    tags = sample(em, tr, z, z, n_samples=1, generator=g)[0]
    scores = torch.randn(20, 6, 6, generator=g)
    gold = torch.nn.functional.one_hot(sample_antecedents(scores, 1, generator=g)[0], 6).bool()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few pairs a bin
        return {
            "TemperatureScaling": TemperatureScaling().fit(logits, target),
            "TemperatureScaling binary": TemperatureScaling().fit(s, y),
            "VectorScaling": VectorScaling().fit(logits, target),
            "MatrixScaling": MatrixScaling().fit(logits, target),
            "PlattScaling": PlattScaling().fit(s, y),
            "HistogramBinning": HistogramBinning().fit(s, y),
            "IsotonicCalibration": IsotonicCalibration().fit(s, y),
            "ScalingBinning": ScalingBinning().fit(s, y),
            "ChainTemperature": ChainTemperature().fit(em, tr, z, z, tags),
            "CorefTemperature": CorefTemperature().fit(scores, gold),
            **{f"fit_binary {m}": fit_binary(m, torch.sigmoid(s), y) for m in BINARY_METHODS},
        }


def test_a_vector_scaling_state_is_refused_by_matrix_scaling_and_back() -> None:
    """Their states hold the same keys: MatrixScaling().load_state_dict(VectorScaling's)
    matched them all, then mapped 3 items to shape [3] and 2 to a RuntimeError; a
    VectorScaling loaded a MatrixScaling's weight [C, C] and broadcast it over C items."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(200, 3, generator=g, dtype=torch.float64)
    target = torch.multinomial(logits.softmax(-1), 1, generator=g)[:, 0]
    vector = VectorScaling().fit(logits, target)
    matrix = MatrixScaling().fit(logits, target)
    for module, state, kind in [
        (MatrixScaling(), vector.state_dict(), "VectorScaling"),
        (VectorScaling(), matrix.state_dict(), "MatrixScaling"),
        (MatrixScaling(), VectorScaling().state_dict(), "VectorScaling"),  # unfitted too
    ]:
        # A state names the kind that saved it; one saved before it did, by its shapes.
        older = {**state, "_extra_state": {"inputs": "logits"}}
        for saved in (state, older):
            said = f"the state is a {kind}'s: load it into a {kind}"
            with pytest.raises(ValueError, match=said):
                module.load_state_dict(saved)
            with pytest.raises(ValueError, match=said):
                module.load_state_dict(saved, strict=False)
            assert not module.host_value("fitted") and module.weight.numel() == 0  # unchanged
        with pytest.raises(ValueError, match=r"weight has shape \["):
            module.load_state_dict(older)
    for module, fitted in ((VectorScaling(), vector), (MatrixScaling(), matrix)):
        module.load_state_dict(fitted.state_dict())
        assert torch.equal(module(logits[:2]), fitted(logits[:2]))
    # One number of classes throughout.
    state = vector.state_dict()
    state["bias"] = torch.zeros(4, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"weight has shape \[3\], its bias \[4\]"):
        VectorScaling().load_state_dict(state)
    state = matrix.state_dict()
    state["num_classes"] = torch.tensor(2)
    with pytest.raises(ValueError, match="num_classes 2: they do not describe one model"):
        MatrixScaling().load_state_dict(state)


def test_no_recalibrator_loads_another_kinds_state() -> None:
    """Every pair of recalibrators: another kind's state is refused (a ValueError, or
    torch's RuntimeError naming the keys), never loaded to be read otherwise; and a
    settings message never tells a module to take a setting it has not (a VectorScaling
    had been told "build it with inputs='probs'" for a TemperatureScaling state)."""
    import inspect

    fitted = _fitted_recalibrators()
    kinds = {type(module) for module in fitted.values()}
    for name, module in fitted.items():
        for kind in kinds - {type(module)}:
            with pytest.raises((ValueError, RuntimeError)) as refused:
                kind().load_state_dict(module.state_dict())
            if "inputs" not in inspect.signature(kind).parameters:
                assert "inputs=" not in str(refused.value), (name, kind)
        # fit_binary builds its modules with inputs="probs"; they load into one alike.
        options = {"inputs": "probs"} if name.startswith("fit_binary") else {}
        type(module)(**options).load_state_dict(module.state_dict())
    # A buffer of the kind's own keys but of another shape (a corrupt state) is named.
    state = fitted["TemperatureScaling"].state_dict()
    state["temperature"] = torch.ones(2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"temperature has shape \[2\], where this module keeps"):
        TemperatureScaling().load_state_dict(state)


def test_a_partial_state_is_still_checked_for_its_settings() -> None:
    """A key missing from a state (strict=False) had been taken for another kind's state,
    and the settings check skipped: an inputs="probs" state without its "fitted" key
    loaded into TemperatureScaling(inputs="logits") silently. Another kind is told by the
    keys a state has that this module lacks, and a setting it has not is no advice."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(500, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    state = fit_binary("temperature", q, y).state_dict()
    del state["fitted"]
    default = TemperatureScaling()
    said = r"fitted with inputs='probs'.*build it with inputs='probs'"
    with pytest.raises(ValueError, match=said):
        default.load_state_dict(state, strict=False)
    assert default.temperature.item() == 1.0  # unchanged
    TemperatureScaling(inputs="probs").load_state_dict(state, strict=False)
    # A kind without the setting is not told to build itself with it.
    partial = {"_extra_state": {"inputs": "probs"}}
    with pytest.raises(ValueError, match=r"inputs='probs', a setting this kind does not take "
                       r"\(another kind's state, or one of another version\)"):  # fmt: skip
        VectorScaling().load_state_dict(partial, strict=False)


def test_a_single_value_of_shape_1_loads_as_that_value() -> None:
    """A temperature of shape [1] (torch.tensor([1.5]) set by hand) had loaded and
    broadcast; the shape check refused it as "not a TemperatureScaling's"."""
    from calib_metrics.recalibration import PlattScaling

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(300, 3, generator=g, dtype=torch.float64)
    target = torch.multinomial(logits.softmax(-1), 1, generator=g)[:, 0]
    fitted = TemperatureScaling().fit(logits, target)
    state = fitted.state_dict()
    state["temperature"] = state["temperature"].reshape(1)
    loaded = TemperatureScaling()
    loaded.load_state_dict(state)
    assert loaded.temperature.shape == () and torch.equal(loaded(logits), fitted(logits))
    s = torch.randn(300, generator=g, dtype=torch.float64)
    platt = PlattScaling().fit(s, torch.bernoulli(torch.sigmoid(s), generator=g))
    state = {k: v.reshape(1) if k in ("slope", "intercept") else v
             for k, v in platt.state_dict().items()}  # fmt: skip
    again = PlattScaling()
    again.load_state_dict(state)
    assert torch.equal(again(s), platt(s)) and again(s[0]).shape == ()
    # Any other shape is still refused, saying what is wrong with it.
    state = fitted.state_dict()
    state["temperature"] = torch.ones(1, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"temperature has shape \[1, 1\], where this module "
                       r"keeps a single value \(shape \[\]\)"):  # fmt: skip
        TemperatureScaling().load_state_dict(state)


def test_fitting_probabilities_as_logits_is_said() -> None:
    """Softmax rows given as logits had been fitted silently (T = 0.30, a temperature of
    nothing the model computes), where the Lightning callback refuses them; sigmoid
    outputs as binary scores likewise. Platt scaling maps scores of any range, and logits
    of 0 alone are no sign of probabilities."""
    g = torch.Generator().manual_seed(0)
    logits = 2 * torch.randn(200, 3, generator=g)
    classes = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)[:, 0]
    for make in (TemperatureScaling, VectorScaling, MatrixScaling):
        with pytest.warns(UserWarning, match=r"are probabilities .*before the softmax") as said:
            make().fit(logits.softmax(-1), classes)
        # Only temperature scaling takes inputs="probs".
        assert ("inputs='probs'" in str(said[0].message)) == (make is TemperatureScaling)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            make().fit(logits, classes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TemperatureScaling(inputs="probs").fit(logits.softmax(-1), classes)
    q = torch.rand(300, generator=g)
    y = torch.bernoulli(q, generator=g)
    with pytest.warns(UserWarning, match=r"every binary score it is fitted on lies in \[0, 1\]"):
        TemperatureScaling().fit(q, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PlattScaling().fit(q, y)
        TemperatureScaling(inputs="probs").fit(q, y)
        TemperatureScaling().fit(torch.logit(q), y)


def test_a_refused_fit_of_probabilities_names_them_once_without_a_warning() -> None:
    """Sigmoid outputs whose fit is refused had been warned of as "fitted as logits", and
    the refusal after it had blamed the data alone."""
    g = torch.Generator().manual_seed(0)
    scores = torch.sigmoid(3 * torch.randn(500, generator=g))
    labels = torch.bernoulli(torch.full((500,), 0.5), generator=g)  # no signal in them
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as refused:
            TemperatureScaling().fit(scores, labels)
    said = str(refused.value)
    assert said.startswith("TemperatureScaling: every binary score it is fitted on lies in")
    assert "inputs='probs'. The fit was refused: the held-out data leave no usable" in said


def test_histogram_bins_of_a_column_view_say_nothing_of_strides(monkeypatch) -> None:
    """A float64 column view (scores[:, 0]) had reached torch.bucketize as it was, which
    warned the user of a non-contiguous input (once a process: checked at the call)."""
    bucketize = torch.bucketize

    def contiguous_only(values, *args, **kwargs):
        assert values.is_contiguous()
        return bucketize(values, *args, **kwargs)

    monkeypatch.setattr(torch, "bucketize", contiguous_only)
    x = torch.rand(100, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = (x[:, 2] < x[:, 0]).double()
    HistogramBinning(n_bins=5).fit(x[:, 0], y)(x[:, 1])


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_fit_binary_names_empty_probabilities_as_probs(method) -> None:
    """ "temperature" and "platt" had said "logits is empty" of the probabilities given."""
    empty = torch.zeros(0, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"^probs is empty"):
        fit_binary(method, empty, empty)


@pytest.mark.parametrize("make", [TemperatureScaling, PlattScaling])
def test_a_probs_scaler_names_its_input_probs(make) -> None:
    with pytest.raises(ValueError, match=r"^probs must have at least one dimension"):
        make(inputs="probs").fit(torch.tensor(0.5), torch.tensor(1.0))
    with pytest.raises(ValueError, match=r"^probs must be floating point"):
        make(inputs="probs").fit(torch.tensor([1, 0]), torch.tensor([1, 0]))
    named = "scores" if make is PlattScaling else "logits"  # as the fit's argument is named
    with pytest.raises(ValueError, match=rf"^{named} is empty"):
        make().fit(torch.zeros(0), torch.zeros(0))


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_fit_binary_names_logits_passed_for_probabilities(method) -> None:
    """ "probs must lie in [0, 1]" alone, where the metrics say "not logits"."""
    scores = torch.linspace(-3, 3, 50, dtype=torch.float64)
    labels = (torch.arange(50) % 2).double()
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]: pass probabilities, not logits"):
        fit_binary(method, scores, labels)


def test_a_refused_fit_of_probabilities_pickles_as_it_was_made() -> None:
    """Its note and reason had not travelled: a fit refused in a worker process had come
    back as a BrokenProcessPool, not the ValueError."""
    import copy
    import pickle

    from calib_metrics.recalibration.scaling import RefusedProbabilities

    refused = RefusedProbabilities("what the inputs look like", "why it was refused")
    for again in (pickle.loads(pickle.dumps(refused)), copy.deepcopy(refused)):
        assert isinstance(again, ValueError) and str(again) == str(refused)
        assert (again.note, again.reason) == (refused.note, refused.reason)
