"""An interval of zero width is said to be one: every draw holds a pure bin's frequency
where its labels put it, so a max-norm error decided by a pure bin (and any error whose
deciding bins are all pure under ``interval="paper"``) had a point for an interval
([0.4, 0.4]) with no word; a classwise call says each warning once, not once per class."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.cli import main
from calib_metrics.functional import calibration_error_ci
from calib_metrics.functional.binning import Bins
from calib_metrics.functional.zero_width import ZeroWidthWarning, _consistent, _zero_width_text

MAX_PURE = (
    "the max-norm interval has zero width: its worst bin's 10 labels are all {label}, and "
    "the draws hold a bin's frequency where its labels put it; 10 labels of {label} are "
    "consistent with a true frequency {bound} (95%, exact Clopper-Pearson)"
)
OPTIONS = {"binning": "uniform", "n_bins": 10, "norm": "max", "debias": False}


def _top_label(last_label: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """990 items at confidence 0.9 about 90% right, and 10 at confidence 0.4 whose top
    class is right for none (``last_label`` 2) or for all (0): a bin of 10 pure labels
    with the largest gap, 0.4 or 0.6."""
    g = torch.Generator().manual_seed(0)
    conf = torch.full((990,), 0.9)
    correct = torch.rand(990, generator=g) < 0.9
    confident = torch.stack([conf, (1 - conf) / 2, (1 - conf) / 2], -1)
    probs = torch.cat([confident, torch.tensor([[0.4, 0.35, 0.25]] * 10)])
    target = torch.cat([torch.where(correct, 0, 1), torch.full((10,), last_label)])
    return probs, target


def _caught(call) -> tuple[object, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, [w for w in caught if issubclass(w.category, ZeroWidthWarning)]


@pytest.mark.parametrize("interval", ["pairs", "paper"])
@pytest.mark.parametrize("method", ["normal", "percentile"])
def test_a_max_norm_interval_of_a_pure_worst_bin_is_said_to_have_zero_width(
    interval: str, method: str
) -> None:
    probs, target = _top_label()
    call = lambda: calibration_error_ci(  # noqa: E731
        probs, target, mode="top_label", interval=interval, method=method, n_samples=500,
        generator=torch.Generator().manual_seed(1), **OPTIONS,
    )  # fmt: skip
    result, caught = _caught(call)
    assert float(result.lower) == float(result.upper) == pytest.approx(0.4)
    assert [str(w.message) for w in caught] == [MAX_PURE.format(label=0, bound="up to 0.31")]
    assert caught[0].filename == __file__  # at the caller's line


def test_a_pure_bin_of_ones_bounds_its_frequency_from_below() -> None:
    probs, target = _top_label(last_label=0)
    call = lambda: calibration_error_ci(probs, target, mode="top_label", n_samples=200, **OPTIONS)  # noqa: E731
    result, caught = _caught(call)
    assert float(result.lower) == float(result.upper) == pytest.approx(0.6)
    assert [str(w.message) for w in caught] == [MAX_PURE.format(label=1, bound="down to 0.69")]


def test_paper_draws_of_separable_bins_are_said_to_have_zero_width() -> None:
    """Algorithm 2's variance p̂(1 − p̂)/|B| is 0 in a pure bin: with every bin pure
    (separable labels) every draw of the l2 error is the same."""
    q = torch.linspace(0.05, 0.95, 200, dtype=torch.float64)
    y = (q > 0.5).long()
    call = lambda: calibration_error_ci(q, y, bin_size=20, debias=False, interval="paper")  # noqa: E731
    result, caught = _caught(call)
    assert float(result.lower) == float(result.upper)
    assert len(caught) == 1
    assert str(caught[0].message).startswith(
        "the interval has zero width: 10 of its 10 bins hold labels all 0 or all 1, and the "
        "draws hold a bin's frequency where its labels put it; in the smallest, 20 labels of "
    )


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("interval", ["pairs", "paper"])
def test_no_warning_on_a_calibrated_model(norm: str, interval: str) -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(10_000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    call = lambda: calibration_error_ci(q, y, norm=norm, interval=interval, n_samples=500)  # noqa: E731
    result, caught = _caught(call)
    assert float(result.lower) < float(result.upper) and caught == []


def test_no_interval_is_no_zero_width_interval() -> None:
    """Too few pairs give NaN ends, warned of otherwise: a pure bin of 5 is not said twice."""
    q, y = torch.full((5,), 0.4), torch.zeros(5)
    result, caught = _caught(lambda: calibration_error_ci(q, y, norm="max", n_samples=50))
    assert result.lower.isnan() and caught == []


def test_the_metric_says_it_once_per_object() -> None:
    probs, target = _top_label()
    metric = CalibrationError(num_classes=3, mode="top_label", n_samples=200, **OPTIONS)
    metric.update(probs, target)

    def twice() -> None:
        metric.compute_result()
        metric.compute_result()

    _, caught = _caught(twice)
    assert [str(w.message) for w in caught] == [
        "CalibrationError: " + MAX_PURE.format(label=0, bound="up to 0.31")
    ]


def test_the_command_says_it_in_one_line(tmp_path: Path, capsys) -> None:
    probs, target = _top_label()
    file = tmp_path / "pure.npz"
    np.savez(file, probs=probs.numpy(), target=target.numpy())
    argv = ["evaluate", str(file), "--mode", "top_label", "--binning", "uniform", "--norm"]
    code = main([*argv, "max", "--no-debias", "--samples", "200"])
    out, err = capsys.readouterr()
    assert code == 0 and "95% interval [0.4000, 0.4000]" in out
    expected = "calib-metrics: warning: " + MAX_PURE.format(label=0, bound="up to 0.31")
    assert expected in err.splitlines()


def test_classwise_says_each_warning_once_per_call() -> None:
    """9 items of 15 classes: the too-few-pairs warning had come once per class."""
    probs = torch.full((9, 15), 1 / 15)
    target = torch.arange(9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = calibration_error_ci(probs, target, mode="classwise", n_samples=50)
    assert result.lower.isnan()
    texts = [str(w.message) for w in caught]
    # Each class's 9 pairs: the header of a classwise run counts all 135.
    assert len(texts) == 1
    assert texts[0].startswith("calibration_error_ci: 9 pairs per class; at least 10")


def test_classwise_names_the_first_class_of_a_zero_width_interval() -> None:
    probs, target = _top_label()
    call = lambda: calibration_error_ci(  # noqa: E731
        probs, target, mode="classwise", n_samples=200, **OPTIONS
    )
    _, caught = _caught(call)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.startswith("class 0: the max-norm interval has zero width: its worst bin's")
    assert text.endswith(" (so do 2 other classes)")


def test_a_classwise_loop_warns_once_under_the_default_filters() -> None:
    """Python says a warning once per line by default; each class's catch_warnings had
    reset that registry, and a loop of classwise calls warned at every pass."""
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(8, 3, generator=g), -1)
    target = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for _ in range(3):
            calibration_error_ci(probs, target, mode="classwise", n_samples=50)
    assert [str(w.message)[:29] for w in caught] == ["calibration_error_ci: 8 pairs"]


def _sharp_classes() -> tuple[torch.Tensor, torch.Tensor]:
    """100 items of 10 classes, sharp softmax: classes 3 and 4 have a max-norm worst bin
    of 10 labels all 1."""
    g = torch.Generator().manual_seed(0)
    probs = (5 * torch.randn(100, 10, generator=g)).softmax(-1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def test_the_normal_form_of_equal_draws_is_said_to_have_zero_width() -> None:
    """Its ends are the draws' mean ∓ z·std, and the std of equal draws is a few ulps:
    [0.24905003011226640, 0.24905003011226673] had been no zero width."""
    probs, target = _sharp_classes()
    q, y = probs[:, 3], (target == 3).long()
    call = lambda: calibration_error_ci(  # noqa: E731
        q, y, norm="max", method="normal", n_samples=200, generator=torch.Generator().manual_seed(0)
    )
    result, caught = _caught(call)
    assert 0 < float(result.upper - result.lower) < 1e-15
    assert [str(w.message) for w in caught] == [MAX_PURE.format(label=1, bound="down to 0.69")]


def test_the_metric_names_the_class_of_a_zero_width_interval() -> None:
    """Per class the metric had said "the max-norm interval has zero width" beside a
    class average of width 0.27, naming no class."""
    probs, target = _sharp_classes()
    options = {"norm": "max", "interval": "pairs", "method": "percentile", "n_samples": 200}
    metric = CalibrationError(num_classes=10, mode="classwise", seed=0, **options)
    metric.update(probs, target)
    result, caught = _caught(metric.compute_result)
    assert float(result.upper - result.lower) > 0.2
    text = MAX_PURE.format(label=1, bound="down to 0.69")
    assert [str(w.message) for w in caught] == [
        f"CalibrationError: class 3: {text} (so does 1 other class)"
    ]


def test_grouped_labels_bound_their_frequency_if_independent() -> None:
    """The exact bound counts labels; over groups it holds only if they are independent."""
    probs, target = _top_label()
    groups, generator = torch.arange(1000), torch.Generator().manual_seed(0)
    call = lambda: calibration_error_ci(  # noqa: E731
        probs, target, groups=groups, mode="top_label", n_samples=200, generator=generator,
        **OPTIONS,
    )  # fmt: skip
    _, caught = _caught(call)
    assert [str(w.message) for w in caught] == [
        MAX_PURE.format(label=0, bound="up to 0.31")[:-1] + ", if the labels are independent)"
    ]


def test_counts_are_whole_with_separators_and_bounds_rounded_outward() -> None:
    t = torch.tensor
    bins = Bins(t([0.3, 0.9]), t([0.0, 0.9]), t([1_234_567.0, 990.0]))
    text = _zero_width_text(bins, "max", 0.95)
    assert "1,234,567 labels are all 0" in text and "1.23457e+06" not in text
    # 12 labels: the exact bounds are 0.2646 and 0.7354, said 0.26 and 0.74 before.
    assert "true frequency up to 0.27 (" in _consistent(12, 0, 0.95)
    assert "true frequency down to 0.73 (" in _consistent(12, 1, 0.95)
