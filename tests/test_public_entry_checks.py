"""Public entries that had let a wrong argument through (the argument-check probe of
2026-11-30): ``error_from_bins(debias="False")`` debiased (a truthy string) and gave 0.0,
and meta tensors reached torch's "Cannot copy out of meta tensor" or
"Tensor.item() cannot be called on meta tensors" instead of the library's ValueError."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import functional as F
from calib_metrics.functional.intervals import pair_bootstrap

G = torch.Generator().manual_seed(0)
P = torch.rand(300, generator=G)
Y = torch.bernoulli(P, generator=G)


@pytest.mark.parametrize("debias", ["False", None, 1])
def test_error_from_bins_takes_a_flag_for_debias(debias) -> None:
    bins = F.adaptive_binning(P, Y, 50)
    with pytest.raises(ValueError, match=f"debias must be True or False, got {debias!r}"):
        F.error_from_bins(bins, debias=debias)
    assert F.error_from_bins(bins, debias=False) > 0  # what "False" had meant


@pytest.mark.parametrize(
    "call",
    [F.error_from_bins, F.ci_from_bins, pair_bootstrap],
    ids=["error_from_bins", "ci_from_bins", "pair_bootstrap"],
)
def test_bins_on_meta_are_refused_by_name(call) -> None:
    bins = F.Bins(*(t.to("meta") for t in F.adaptive_binning(P, Y, 50)))
    with pytest.raises(ValueError, match=r"bins\.pred_mean is on the meta device"):
        call(bins)


@pytest.mark.parametrize("adjust", [F.bh_adjust, F.holm_adjust])
def test_p_values_on_meta_are_refused_by_name(adjust) -> None:
    with pytest.raises(ValueError, match="p_values is on the meta device"):
        adjust(torch.rand(3, dtype=torch.float64, device="meta"))


def test_a_histogram_on_meta_is_refused_by_name() -> None:
    count = torch.ones(3)
    with pytest.raises(ValueError, match="position is on the meta device"):
        F.smooth_calibration_from_histogram(torch.rand(3, device="meta"), count, count / 2)


@pytest.mark.parametrize("n_bins", [-1, 0, 2.0, True, None])
@pytest.mark.parametrize("method", ["temperature", "platt", "isotonic"])
def test_fit_binary_refuses_a_bad_n_bins_whatever_the_method(method, n_bins) -> None:
    """Methods that use no bins had taken n_bins=-1 without a word."""
    from calib_metrics.recalibration import fit_binary

    with pytest.raises(ValueError, match="n_bins must be an int"):
        fit_binary(method, P, Y, n_bins=n_bins)


def test_plot_entries_name_the_argument_at_fault() -> None:
    """They had failed with Python's own errors: "'NoneType' object has no attribute
    'lower'", "object of type 'NoneType' has no len()", "could not convert string to
    float", "not enough values to unpack"; a string of names was split into letters."""
    pytest.importorskip("matplotlib")
    from calib_metrics.plot import describe, error_curve, per_label_errors, posterior_time_series

    result = F.calibration_error_ci(P, Y, n_samples=20)
    for wrong in (None, 3, torch.tensor(0.1)):
        with pytest.raises(ValueError, match="result must be a CalibrationResult"):
            describe(wrong)
    with pytest.raises(ValueError, match="error must be a sequence of numbers, got NoneType"):
        error_curve([1, 2, 3], None)
    with pytest.raises(ValueError, match="error must hold numbers, got 'abc'"):
        error_curve([1, 2, 3], [0.1, 0.2, "abc"])
    with pytest.raises(ValueError, match="lower must be a sequence of numbers, got str"):
        error_curve([1, 2, 3], [0.1, 0.2, 0.3], lower="x", upper=[0.2, 0.3, 0.4])
    periods = ["1990", "2000"]
    with pytest.raises(ValueError, match="mean must be a sequence of numbers, got NoneType"):
        posterior_time_series(periods, None, [0, 0], [1, 1])
    with pytest.raises(ValueError, match=r"spans\[0\] must be a \(start, end\) pair"):
        posterior_time_series(periods, [1, 1], [0, 0], [1, 1], spans=[(1,), (2, 3)])
    both = {"NN": (result, result)}
    for names, said in (("ab", "sequence of 2 names"), (("a", "b", "c"), "name all 2 models")):
        with pytest.raises(ValueError, match=said):
            per_label_errors(both, names=names)
    per_label_errors({"NN": result})  # the default names fit one model
    per_label_errors(both)  # and two


def test_a_generator_on_another_device_than_the_draws_is_named() -> None:
    from calib_metrics.functional.errors import check_generator

    check_generator(torch.Generator(), torch.device("cpu"))
    with pytest.raises(ValueError, match="generator is on cpu and the draws on cuda:0"):
        check_generator(torch.Generator(), torch.device("cuda", 0))


def test_the_sketch_histogram_reads_the_device_once() -> None:
    """Seven selections by one mask had each waited for the device (one is stated)."""
    import host_reads

    from calib_metrics.functional import sketch

    state = sketch.empty(64)
    q = torch.rand(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    sketch.accumulate(state, q, torch.bernoulli(q).long())
    assert host_reads.count_reads(lambda: sketch.histogram(state)) == 1


def test_spiegelhalter_reads_as_often_as_its_docstring_says(monkeypatch) -> None:
    """It said one read (three with groups); binary pairs take three, multiclass seven, and
    groups add torch.unique's two (which count_reads cannot see)."""
    import host_reads

    from calib_metrics.functional import spiegelhalter_test

    calls = []
    unique = torch.unique

    def counted(*args, **kwargs):
        calls.append(1)
        return unique(*args, **kwargs)

    monkeypatch.setattr(torch, "unique", counted)
    probs = torch.softmax(torch.randn(100, 4, generator=G), -1)
    classes = torch.randint(0, 4, (100,), generator=G)
    groups = torch.arange(300) // 10
    cases = [
        (lambda: spiegelhalter_test(P, Y), 3, 0),
        (lambda: spiegelhalter_test(P, Y, groups=groups), 3, 2),
        (lambda: spiegelhalter_test(probs, classes, mode="top_label"), 7, 0),
        (lambda: spiegelhalter_test(probs, classes), 7, 2),  # grouped by item
    ]
    assert host_reads.stated_syncs(spiegelhalter_test) == 3  # binary pairs: the first stated
    for call, reads, uniques in cases:
        calls.clear()
        assert host_reads.count_reads(call) == reads
        assert len(calls) == uniques


def test_review_three_findings() -> None:
    """A generator of cuda:0 serves draws on cuda:1 (torch compares the type alone: the
    index had been refused); a NumPy array of emissions beside a generator is named, not
    an AttributeError; bytes cells are numbers as files write them too; per_label_errors
    takes a NumPy array of names; posterior_time_series names lower and upper."""
    import numpy as np

    from calib_metrics.functional.errors import check_generator
    from calib_metrics.models.linear_chain import sample
    from calib_metrics.plot import per_label_errors, posterior_time_series

    class OnCuda0(torch.Generator):
        device = torch.device("cuda", 0)

    check_generator(OnCuda0(), torch.device("cuda", 1))
    zeros = torch.zeros(2)
    with pytest.raises(ValueError, match="emissions must be"):
        sample(np.zeros((1, 2, 2), np.float32), torch.zeros(2, 2), zeros, zeros,
               n_samples=2, generator=torch.Generator())  # fmt: skip
    result = F.calibration_error_ci(P, Y, n_samples=20)
    per_label_errors({"x": result, "z": result}, names=np.array(["A"]))
    for name in ("lower", "upper"):
        args = {"mean": [0.5], "lower": [0.0], "upper": [1.0], name: None}
        with pytest.raises(ValueError, match=f"{name} must be a sequence of numbers"):
            posterior_time_series(["a"], args["mean"], args["lower"], args["upper"])


def test_a_bytes_array_of_numbers_only_python_reads_is_refused(tmp_path) -> None:
    import numpy as np

    from calib_metrics.predictions import read_table

    file = tmp_path / "pairs.npz"
    np.savez(file, probs=np.array([b"0.5", b"0.2_5"]), target=np.array([1, 0]))
    with pytest.raises(ValueError, match=r"row index 1, column 'probs' holds '0\.2_5'"):
        read_table(file)


def test_review_four_findings() -> None:
    """Panels renamed the last collection as the band, which a NaN band no longer draws:
    an IndexError, or model a's whiskers named as b's band. A set of names (its order the
    hash's) or a 0-d array had passed; an iterator of counts was spent by the checks."""
    import warnings

    import numpy as np

    from calib_metrics.functional import smooth_reliability_curve
    from calib_metrics.plot import per_label_errors, posterior_time_series
    from calib_metrics.plot_panels import reliability_panels

    groups = torch.arange(300) // 60  # 5 groups: too few for a band
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = F.calibration_error_ci(P, Y, n_samples=20, groups=groups)
        nan_band = smooth_reliability_curve(P, Y, groups=groups, n_samples=20)
    banded = smooth_reliability_curve(P, Y, n_samples=20, generator=G)
    fig, axes = reliability_panels(
        {"c": [result, result]}, names=("a", "b"), smooth={"c": [banded, nan_band]}
    )
    labels = [h.get_label() for h in fig.legends[0].legend_handles] if fig.legends else []
    labels += [t for ax in axes for t in ax.get_legend_handles_labels()[1]]
    assert any(t.startswith("a: 95% band of the σ-smoothed curve") for t in labels)
    assert not any(t.startswith("b: 95% band of the σ-smoothed curve") for t in labels)
    both = {"x": (result, result), "z": (result, result)}
    for names in ({"b", "a"}, {"a": 1, "b": 2}, np.array("A"), torch.tensor([1, 2])):
        with pytest.raises(ValueError, match="names must be a sequence of 2 names"):
            per_label_errors(both, names=names)
    per_label_errors(both, names=np.array(["A", "B"]))
    fig, ax = posterior_time_series(
        ["a", "b"], iter([1.0, 2.0]), iter([0.0, 0.5]), iter([2.0, 3.0]), one_best=iter([1, 2])
    )
    assert len(ax.lines) >= 1


def test_a_numpy_confidence_is_told_the_conversion() -> None:
    """np.float32(0.9) had been refused as "must be a number in (0, 1), got
    np.float32(0.9)", which it is."""
    import numpy as np

    from calib_metrics import CalibrationComparison, CalibrationError
    from calib_metrics.functional import calibration_error_ci

    q = torch.rand(50, generator=torch.Generator().manual_seed(0))
    for given in (np.float32(0.9), torch.tensor(0.9)):
        with pytest.raises(
            ValueError, match=r"in \(0, 1\), got .*: write the level as a float, confidence=0.9$"
        ):
            calibration_error_ci(q, (q > 0.5).float(), confidence=given)
        for metric in (CalibrationError, CalibrationComparison):
            with pytest.raises(ValueError, match=r"must be a Python float in \(0, 1\)"):
                metric(confidence=given)
