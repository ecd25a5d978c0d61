"""Classifier recalibrators against references: scikit-learn, brute force, closed forms."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

from calib_metrics.recalibration import (
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    ScalingBinning,
    TemperatureScaling,
    VectorScaling,
    fit_binary,
)

sklearn = pytest.importorskip("sklearn")


def _multiclass(n=600, c=4, scale=3.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, generator=g, dtype=torch.float64)
    target = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)[:, 0]
    return scale * logits, target


def _binary(n=800, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = 2 * torch.randn(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid(0.4 * s + 0.3), generator=g)
    return s, y


def test_temperature_matches_brute_force_grid():
    logits, target = _multiclass(n=40, c=3)
    ts = TemperatureScaling().fit(logits, target)
    grid = torch.linspace(0.5, 8, 75001, dtype=torch.float64)
    nll = torch.stack([F.cross_entropy(logits / t, target) for t in grid[::50]])
    coarse = grid[::50][nll.argmin()]
    fine = grid[(grid - coarse).abs() < 0.02]
    nll = torch.stack([F.cross_entropy(logits / t, target) for t in fine])
    assert ts.temperature.item() == pytest.approx(fine[nll.argmin()].item(), abs=2e-4)
    assert ts.temperature.item() > 1.5  # logits were made 3x overconfident


def test_binary_temperature_matches_brute_force():
    s, y = _binary(n=50)
    ts = TemperatureScaling().fit(s, y)
    grid = torch.linspace(0.5, 10, 95001, dtype=torch.float64)
    nll = torch.stack([F.binary_cross_entropy_with_logits(s / t, y) for t in grid[::100]])
    coarse = grid[::100][nll.argmin()]
    fine = grid[(grid - coarse).abs() < 0.02]
    nll = torch.stack([F.binary_cross_entropy_with_logits(s / t, y) for t in fine])
    assert ts.temperature.item() == pytest.approx(fine[nll.argmin()].item(), abs=2e-4)
    assert ts(s).shape == s.shape


def test_temperature_keeps_argmax_and_is_softmax():
    logits, target = _multiclass()
    ts = TemperatureScaling().fit(logits, target)
    probs = ts(logits)
    assert torch.equal(probs.argmax(-1), logits.argmax(-1))
    assert torch.allclose(probs, torch.softmax(logits / ts.temperature, -1))
    # [..., C] inputs are accepted once fitted.
    assert ts(logits.reshape(6, 100, 4)).shape == (6, 100, 4)


def test_platt_matches_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    s, y = _binary()
    platt = PlattScaling().fit(s, y)
    lr = LogisticRegression(C=float("inf"), tol=1e-10, max_iter=10000).fit(s[:, None].numpy(), y)
    assert platt.slope.item() == pytest.approx(lr.coef_[0, 0], abs=1e-5)
    assert platt.intercept.item() == pytest.approx(lr.intercept_[0], abs=1e-5)
    expected = torch.as_tensor(lr.predict_proba(s[:, None].numpy())[:, 1])
    assert torch.allclose(platt(s), expected, atol=1e-6)


def test_platt_on_probabilities_uses_their_logit():
    s, y = _binary()
    q = torch.sigmoid(s)
    a = PlattScaling(inputs="probs").fit(q, y)
    b = PlattScaling().fit(s, y)
    assert a.slope.item() == pytest.approx(b.slope.item(), abs=1e-6)
    assert torch.allclose(a(q), b(s), atol=1e-8)


def test_isotonic_matches_sklearn():
    from sklearn.isotonic import IsotonicRegression

    g = torch.Generator().manual_seed(1)
    q = torch.rand(500, generator=g, dtype=torch.float64).round(decimals=2)  # with ties
    y = torch.bernoulli(q**2, generator=g)
    iso = IsotonicCalibration().fit(q, y)
    ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(q.numpy(), y.numpy())
    new = torch.linspace(-0.2, 1.2, 1001, dtype=torch.float64)
    assert torch.allclose(iso(new), torch.as_tensor(ref.predict(new.numpy())), atol=1e-12)
    assert torch.allclose(iso(q), torch.as_tensor(ref.predict(q.numpy())), atol=1e-12)


def test_histogram_binning_is_bin_frequency():
    g = torch.Generator().manual_seed(2)
    q = torch.rand(1000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    hb = HistogramBinning(n_bins=10).fit(q, y)
    out = hb(q)
    assert out.unique().numel() == 10
    order = q.argsort()
    for chunk in order.chunk(10):  # equal-mass bins of 100 sorted dev scores
        assert torch.allclose(out[chunk], y[chunk].mean().expand(100))
    uniform = HistogramBinning(n_bins=4, binning="uniform").fit(q, y)
    in_first = q < 0.25
    assert torch.allclose(uniform(torch.tensor([0.1], dtype=torch.float64)), y[in_first].mean())


def test_scaling_binning_outputs_bin_means_of_platt():
    s, y = _binary(n=2000)
    sb = ScalingBinning(n_bins=10, generator=torch.Generator().manual_seed(0)).fit(s, y)
    out = sb(s)
    assert out.unique().numel() == 10
    # Each output value is the mean of the Platt outputs of its bin: within Platt's range.
    platt = sb.platt(s)
    assert out.min() >= platt.min() and out.max() <= platt.max()
    # Monotone in the score.
    sorted_out = out[s.argsort()]
    assert bool((sorted_out[1:] >= sorted_out[:-1]).all())


def test_vector_and_matrix_scaling_improve_dev_nll():
    logits, target = _multiclass(n=1000)
    logits = logits + torch.tensor([1.0, 0, 0, -1.0], dtype=torch.float64)  # class bias
    before = F.cross_entropy(logits, target).item()
    ts_nll = F.cross_entropy(TemperatureScaling().fit(logits, target).calibrated_logits(logits),
                             target).item()  # fmt: skip
    vs = VectorScaling().fit(logits, target)
    vs_nll = F.nll_loss(vs(logits).log(), target).item()
    ms = MatrixScaling(off_diagonal_l2=0.0, bias_l2=0.0).fit(logits, target)
    ms_nll = F.nll_loss(ms(logits).log(), target).item()
    # Nested models: each can do at least what the smaller one does, on dev.
    assert ms_nll <= vs_nll + 1e-6 <= ts_nll + 2e-6 < before


def test_matrix_scaling_odir_shrinks_off_diagonal():
    logits, target = _multiclass(n=150, c=5)
    free = MatrixScaling(off_diagonal_l2=0.0, bias_l2=0.0).fit(logits, target)
    odir = MatrixScaling(off_diagonal_l2=10.0, bias_l2=10.0).fit(logits, target)

    def off(m):
        w = m.weight
        return (w - torch.diag(w.diagonal())).abs().sum().item()

    assert off(odir) < 0.5 * off(free)
    assert odir.bias.abs().sum() < free.bias.abs().sum()


@pytest.mark.parametrize(
    "make",
    [TemperatureScaling, VectorScaling, MatrixScaling, PlattScaling, HistogramBinning,
     IsotonicCalibration, lambda: ScalingBinning(generator=torch.Generator().manual_seed(0))],
)  # fmt: skip
def test_state_dict_round_trip(make):
    multiclass = make in (VectorScaling, MatrixScaling)
    if multiclass:
        x, y = _multiclass()
    else:
        x, y = _binary()
        x = torch.sigmoid(x) if make in (HistogramBinning, IsotonicCalibration) else x
    fitted = make().fit(x, y)
    fresh = make()
    fresh.load_state_dict(fitted.state_dict())
    assert torch.equal(fresh(x), fitted(x))


def test_unfitted_call_is_a_value_error():
    with pytest.raises(ValueError, match="not fitted"):
        TemperatureScaling()(torch.zeros(3, 2))
    with pytest.raises(ValueError, match="not fitted"):
        IsotonicCalibration()(torch.zeros(3))


BINARY = [TemperatureScaling, PlattScaling, HistogramBinning, IsotonicCalibration, ScalingBinning]


@pytest.mark.parametrize("make", BINARY)
def test_bad_binary_inputs(make):
    q = torch.tensor([0.2, 0.4, 0.6, 0.8])
    with pytest.raises(ValueError, match="empty"):
        make().fit(torch.zeros(0), torch.zeros(0))
    with pytest.raises(ValueError, match="single class"):
        make().fit(q, torch.ones(4))
    with pytest.raises(ValueError, match="NaN"):
        make().fit(torch.tensor([0.2, math.nan, 0.6, 0.8]), torch.tensor([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="shape"):
        make().fit(q, torch.tensor([0, 1, 0]))
    with pytest.raises(ValueError, match="0 and 1"):
        make().fit(q, torch.tensor([0, 1, 2, 1]))


@pytest.mark.parametrize("make", [TemperatureScaling, VectorScaling, MatrixScaling])
def test_bad_multiclass_inputs(make):
    logits = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="empty"):
        make().fit(torch.zeros(0, 3), torch.zeros(0, dtype=torch.long))
    with pytest.raises(ValueError, match="single class"):
        make().fit(logits, torch.zeros(5, dtype=torch.long))
    bad = logits.clone()
    bad[0, 0] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        make().fit(bad, torch.tensor([0, 1, 2, 0, 1]))
    with pytest.raises(ValueError, match="target must be"):
        make().fit(logits, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="class indices"):
        make().fit(logits, torch.tensor([0, 1, 3, 0, 1]))
    with pytest.raises(ValueError, match=r"\[N, C\]"):
        make().fit(torch.randn(2, 5, 3), torch.zeros(2, 5, dtype=torch.long))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: VectorScaling(bias_l2=math.nan), r"bias_l2 must be a finite number >= 0, got nan"),
        (lambda: VectorScaling(bias_l2=-1.0), r"bias_l2 must be a finite number >= 0, got -1\.0"),
        (lambda: VectorScaling(bias_l2=True), r"bias_l2 must be a finite number >= 0, got True"),
        (lambda: MatrixScaling(off_diagonal_l2=math.inf), r"off_diagonal_l2 .* got inf"),
        (lambda: MatrixScaling(bias_l2=math.nan), r"bias_l2 must be a finite number >= 0, got nan"),
        (lambda: MatrixScaling(bias_l2="0.1"), r"bias_l2 must be a finite number >= 0, got '0\.1'"),
        (
            lambda: TemperatureScaling(max_iter=True),
            r"max_iter must be a positive integer, got True",
        ),
        (lambda: PlattScaling(max_iter=2.0), r"max_iter must be a positive integer, got 2\.0"),
        (lambda: MatrixScaling(max_iter=0), r"max_iter must be a positive integer, got 0"),
    ],
)
def test_settings_are_checked_when_the_scaler_is_built(make, message):
    """NaN and inf penalties were accepted here and failed at fit with a vague "did not
    converge (NaN loss)"; max_iter=True was taken for 1 iteration."""
    with pytest.raises(ValueError, match=message):
        make()


def test_fit_works_under_inference_mode():
    logits, target = _multiclass()
    with torch.inference_mode():
        ts = TemperatureScaling().fit(logits, target)
        probs = ts(logits)
    expected = TemperatureScaling().fit(logits, target).temperature
    assert ts.temperature.item() == pytest.approx(expected.item(), rel=1e-10)
    assert probs.shape == logits.shape


def test_float32_input_gives_float32_probs():
    logits, target = _multiclass()
    ts = TemperatureScaling().fit(logits.float(), target)
    assert ts(logits.float()).dtype == torch.float32
    assert ts.temperature.dtype == torch.float64


@pytest.mark.parametrize("method", ["histogram", "scaling_binning"])
def test_binning_recalibrators_keep_their_bins_on_rounded_scores(method):
    # q rounded to 0.01: every equal-mass cut of 15 bins falls inside a tie group. The
    # edges move to the groups' ends instead of vanishing (which left one bin: every
    # prediction mapped to the dev set's base rate).
    g = torch.Generator().manual_seed(0)
    q = (torch.rand(4000, generator=g, dtype=torch.float64) * 100).round() / 100
    y = torch.bernoulli(q, generator=g).long()
    recalibrator = fit_binary(method, q, y, n_bins=15, generator=g)
    assert recalibrator.edges.numel() == 14
    after = recalibrator(q)
    assert torch.corrcoef(torch.stack([after, q]))[0, 1] > 0.95


def test_scaling_binning_splits_each_class_into_both_halves() -> None:
    """40 dev items with 2 positives: a plain random half held no positive in 4 of 20
    seeds, and the fit failed with 'target holds a single class', which it does not."""
    g = torch.Generator().manual_seed(0)
    for seed in range(20):
        s = torch.randn(40, generator=g)
        y = torch.zeros(40)
        y[torch.randperm(40, generator=g)[:6]] = 1  # 6 positives: 3 in each half
        s[y == 1] -= 2.0  # the positives mixed in with the negatives' scores
        s[y == 1] += 4 * torch.rand(6, generator=g)
        try:
            ScalingBinning(n_bins=4, generator=torch.Generator().manual_seed(seed)).fit(s, y)
        except ValueError as error:
            assert "single class" not in str(error)
            assert "half of dev (20 items, 3 of class 1)" in str(error)


def test_scaling_binning_needs_two_items_of_each_class() -> None:
    y = torch.zeros(40)
    y[0] = 1
    with pytest.raises(ValueError, match=r"at least 2 dev items of each class.*got 1 of class 1"):
        ScalingBinning().fit(torch.randn(40), y)


def test_compare_before_after_names_its_own_arguments() -> None:
    from calib_metrics.recalibration import compare_before_after

    q, y = torch.rand(20), torch.ones(20)
    with pytest.raises(ValueError, match=r"^before contains NaN"):
        compare_before_after(torch.full((20,), float("nan")), q, y)
    with pytest.raises(ValueError, match=r"^after must lie in"):
        compare_before_after(q, q + 2, y)


def test_histogram_bins_of_a_few_dev_pairs_warn_and_enough_do_not():
    """3,000 dev pairs in 100,000 bins had mapped every test probability to 0 or 1,
    silently (NLL 11 from the command line)."""
    import warnings as _warnings

    from calib_metrics.recalibration import HistogramBinning

    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    with pytest.warns(UserWarning, match=r"bins for 3000 dev pairs.*use at most 150 bins"):
        HistogramBinning(n_bins=500).fit(q, y)
    with _warnings.catch_warnings():
        _warnings.simplefilter("error")
        HistogramBinning(n_bins=150).fit(q, y)


def test_a_single_bin_of_a_few_pairs_gets_no_advice_it_already_follows():
    """One bin of 4 dev pairs had warned "use at most 1 bin"; fewer bins cannot help it."""
    import warnings as _warnings

    from calib_metrics.recalibration import HistogramBinning

    y = torch.tensor([0, 1, 1, 0])
    with _warnings.catch_warnings():
        _warnings.simplefilter("error")
        HistogramBinning(n_bins=1).fit(torch.tensor([0.2, 0.3, 0.5, 0.5]), y)
        # Tied: one bin, and only its equal scores are said.
        with pytest.warns(UserWarning, match="are all equal") as said:
            HistogramBinning(n_bins=15).fit(torch.full((4,), 0.5), y)
    assert len(said) == 1
    # The pairs a bin, to 3 digits (13.3 had read "1e+01").
    g = torch.Generator().manual_seed(0)
    q = torch.rand(200, generator=g, dtype=torch.float64)
    with pytest.warns(UserWarning, match=r"15 bins for 200 dev pairs, 13\.3 a bin.*at most 10"):
        HistogramBinning(n_bins=15).fit(q, torch.bernoulli(q, generator=g))


def test_the_pairs_a_bin_never_round_up_to_the_threshold_they_warn_below():
    """The warning is for fewer than 20 dev pairs a bin: 2999 pairs in 150 bins (19.99) had
    read "20 a bin". Rounded down to 3 digits, a small count keeps its digits (not 0.0)."""
    from calib_metrics.recalibration import HistogramBinning

    g = torch.Generator().manual_seed(0)
    q = torch.rand(2999, generator=g, dtype=torch.float64)
    with pytest.warns(UserWarning, match=r"150 bins for 2999 dev pairs, 19\.9 a bin.*at most 149"):
        HistogramBinning(n_bins=150).fit(q, torch.bernoulli(q, generator=g))
    q = torch.rand(300, generator=g, dtype=torch.float64)
    with pytest.warns(UserWarning, match=r"10000 bins for 300 dev pairs, 0\.03 a bin"):
        HistogramBinning(n_bins=10000, binning="uniform").fit(q, torch.bernoulli(q, generator=g))


@pytest.mark.parametrize("name", ["TemperatureScaling", "PlattScaling", "HistogramBinning"])
def test_a_fitted_recalibrator_reads_the_device_once_a_call(name, monkeypatch):
    """forward had read ``fitted`` and ``num_classes`` from the device at every call (3
    reads with the input's check); they are read once after a fit or a load."""
    import calib_metrics.recalibration as recalibration

    g = torch.Generator().manual_seed(0)
    if name == "TemperatureScaling":
        scores = torch.randn(500, 4, generator=g) * 3
        target = torch.multinomial(torch.softmax(scores, -1), 1, generator=g).squeeze(1)
    else:
        scores = torch.rand(500, generator=g, dtype=torch.float64)
        target = torch.bernoulli(scores, generator=g)
    module = getattr(recalibration, name)().fit(scores, target)
    module(scores)  # the first call reads the fitted flags once
    reads = []
    for method in ("item", "__bool__", "__int__", "__float__", "tolist"):
        original = getattr(torch.Tensor, method)

        def counted(*args, _original=original, _method=method, **kwargs):
            reads.append(_method)
            return _original(*args, **kwargs)

        monkeypatch.setattr(torch.Tensor, method, counted)
    module(scores)
    monkeypatch.undo()
    assert len(reads) <= 1, reads  # the input's finiteness check alone
    state = module.state_dict()
    fresh = getattr(recalibration, name)()
    fresh.load_state_dict(state)
    torch.testing.assert_close(fresh(scores), module(scores))
    with pytest.raises(ValueError, match="is not fitted"):
        getattr(recalibration, name)()(scores)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_scaling_binning_bins_a_low_precision_input_as_its_float64_value(dtype) -> None:
    """The Platt step had rounded the scaled scores to the input's dtype before binning:
    7 of 2,000 float16 inputs (18 bfloat16) took a neighbouring bin's value, 0.10 away."""
    from calib_metrics.recalibration import ScalingBinning

    g = torch.Generator().manual_seed(0)
    s = torch.randn(2000, generator=g, dtype=torch.float64) * 2
    y = torch.bernoulli(torch.sigmoid(s / 2), generator=g).long()
    q = torch.sigmoid(s)
    sb = ScalingBinning(n_bins=10, inputs="probs", generator=torch.Generator().manual_seed(1))
    sb.fit(q, y)
    low = q.to(dtype)
    same_values = sb(low.to(torch.float64))  # the map of the very values the input holds
    assert torch.equal(sb(low), same_values.to(dtype))


@pytest.mark.parametrize(
    ("make", "max_iter"),
    [(VectorScaling, 2), (MatrixScaling, 1), (PlattScaling, 1)],
    ids=["vector", "matrix", "platt"],
)
def test_a_fit_stopped_short_by_max_iter_warns(make, max_iter) -> None:
    """Vector scaling at max_iter=2 had sharpened 3x overconfident logits further (dev NLL
    2.06 against 1.83 unscaled and 1.24 converged: docs/recalibration.md), silently."""
    g = torch.Generator().manual_seed(0)
    z = torch.randn(2000, 5, generator=g, dtype=torch.float64) * 3
    shift = torch.linspace(0.6, -0.6, 5, dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / 3 + shift, -1), 1, generator=g)[:, 0]
    if make is PlattScaling:
        z, y = z[:, 0], (y == 0).long()
    with pytest.warns(UserWarning, match=r"stopped at max_iter=\d before converging") as said:
        make(max_iter=max_iter).fit(z, y)
    assert len(said) == 1 and said[0].filename == __file__  # once a fit, at the caller's line
    assert str(said[0].message).startswith(f"{make.__name__}: the fit stopped")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        converged = make().fit(z, y)  # the default converges: no warning
    if make is VectorScaling:  # docs/recalibration.md's numbers
        short = make(max_iter=max_iter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            short.fit(z, y)
        nll = [F.cross_entropy(m, y).item() for m in
               (z, short.calibrated_logits(z), converged.calibrated_logits(z))]  # fmt: skip
        assert [round(v, 2) for v in nll] == [1.83, 2.06, 1.24]


@pytest.mark.parametrize(
    ("make", "labels"),
    # (vector scaling fits anti-correlated logits with negative weights: it has an optimum)
    [(TemperatureScaling, "separable"), (TemperatureScaling, "anti-correlated"),
     (VectorScaling, "separable")],
)  # fmt: skip
def test_a_short_fit_of_data_without_an_optimum_says_only_that(make, labels) -> None:
    """A fit stopped short had warned "raise max_iter", then refused the data as having
    no finite optimum, which no max_iter helps."""
    g = torch.Generator().manual_seed(0)
    z = torch.randn(500, 4, generator=g, dtype=torch.float64) * 3
    y = z.argmax(-1) if labels == "separable" else z.argmin(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning before the refusal
        with pytest.raises(ValueError, match="finite optimum"):
            make(max_iter=5).fit(z, y)


def test_a_short_platt_step_inside_scaling_binning_names_its_max_iter() -> None:
    """ScalingBinning has no max_iter: the warning had said "raise max_iter"."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q**3, generator=g)
    binning = ScalingBinning(n_bins=5)
    binning.platt.max_iter = 1
    with pytest.warns(UserWarning, match=r"^ScalingBinning: .*raise \.platt\.max_iter$"):
        binning.fit(q, y)
