"""``reliability_diagram`` checks its ``result`` as ``per_label_errors`` does: anything but
a CalibrationResult is refused by name (once, a bare AttributeError)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("matplotlib")

import matplotlib.pyplot as plt

from calib_metrics.functional import calibration_error, calibration_error_ci
from calib_metrics.plot import reliability_diagram


@pytest.mark.parametrize("wrong", ["x", None, 0.1])
def test_reliability_diagram_refuses_what_is_not_a_result(wrong) -> None:
    with pytest.raises(ValueError, match="result must be a CalibrationResult"):
        reliability_diagram(wrong)


def test_reliability_diagram_names_a_bare_error_tensor() -> None:
    q = torch.rand(200, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="calibration_error_ci"):
        reliability_diagram(calibration_error(q, (q > 0.5).float()))
    fig, _ = reliability_diagram(calibration_error_ci(q, (q > 0.5).float(), n_samples=20))
    assert fig is not None


def test_classwise_metric_draws_its_classes_apart() -> None:
    # It had drawn every class's bins as one connected curve ("216 bins · N=12,000" for
    # 3,000 items); CalibrationComparison.plot refused the same.
    from calib_metrics import CalibrationError
    from calib_metrics.plot import describe

    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(3 * torch.randn(600, 14, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    metric = CalibrationError(num_classes=14, mode="classwise", n_samples=20)
    metric.update(probs, target)
    fig, axes = metric.plot()
    per_class = metric.compute_class_results()
    counts = torch.bincount(target, minlength=14)
    drawn = sorted(sorted(range(14), key=lambda c: (-int(counts[c]), c))[:12])
    assert len(axes) == 12  # the 12 classes with the most positives, in class order
    for ax, c in zip(axes, drawn, strict=True):
        title = ax.get_title().splitlines()
        assert title[0].startswith(f"class {c} · {int(counts[c])} positives")
        assert title[1] == describe(per_class[c])
    assert "12 of 14 classes drawn" in fig.get_suptitle()
    assert f"{metric.compute().item():.4f}" in fig.get_suptitle()
    with pytest.raises(ValueError, match="pass the list from compute_class_results"):
        metric.plot(metric.compute_result())
    with pytest.raises(ValueError, match="compute_class_results is mode='classwise''s"):
        CalibrationError(num_classes=14).compute_class_results()


@pytest.mark.parametrize("mode", ["one_vs_rest", "classwise"])
def test_metric_plot_names_what_it_draws_when_given_a_value(mode: str) -> None:
    """torchmetrics' ``plot(val)`` takes compute()'s or forward()'s value, or a list of
    them; here those are the error alone. The refusals had named the figure functions'
    arguments ("result must be a CalibrationResult", "results' values must all be...")."""
    from calib_metrics import CalibrationComparison, CalibrationError

    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(400, 3, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    metric = CalibrationError(num_classes=3, mode=mode, n_samples=20)
    values = [metric(probs[i : i + 200], target[i : i + 200]) for i in (0, 200)]
    results = "compute_class_results" if mode == "classwise" else "compute_result"
    for val, got in ((values[0], "got Tensor"), (values, "got a list of Tensor")):
        with pytest.raises(ValueError, match=rf"what {results}\(\) returns, {got}\. compute"):
            metric.plot(val)
    with pytest.raises(ValueError, match="error_curve"):
        metric.plot([metric.compute_result(), metric.compute()])
    # The value compute() last returned is this metric's own state, which plot() draws
    # (MetricCollection.plot() passes it on).
    fig, _ = metric.plot(metric.compute())
    plt.close(fig)
    comparison = CalibrationComparison(n_samples=20)
    q, y = probs[:, 0], (target == 0).float()
    steps = [comparison(q[i : i + 200], q[i : i + 200].sqrt(), y[i : i + 200]) for i in (0, 200)]
    with pytest.raises(ValueError, match=r"draws one comparison: .* got list"):
        comparison.plot(steps)
    comparison.plot(steps[-1])


def test_reliability_diagram_refuses_a_classwise_average() -> None:
    # calibration_error_ci(mode="classwise")'s bins are every class's sorted together:
    # one diagram had drawn them as one model's curve (CalibrationError.plot refused it).
    from calib_metrics.plot_panels import classwise_panels

    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(600, 3, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    result = calibration_error_ci(probs, target, mode="classwise", n_samples=20)
    assert len(result.bins.count) > 3  # the classes' bins, pooled
    with pytest.raises(ValueError, match=r"averages 3 classes .*classwise_panels"):
        reliability_diagram(result)
    per_class = [
        calibration_error_ci(probs[:, c], (target == c).float(), n_samples=20) for c in range(3)
    ]
    fig, axes = classwise_panels(per_class)
    assert len(axes) == 3
    plt.close(fig)
    for mode in ("one_vs_rest", "top_label"):  # one set of pairs each: drawn
        fig, _ = reliability_diagram(calibration_error_ci(probs, target, mode=mode, n_samples=20))
        plt.close(fig)


def test_a_bad_colour_is_refused_before_anything_is_drawn() -> None:
    """matplotlib's refusal had come with the diagonal already on the caller's axes, and a
    second call with a good colour drew a diagram beside that stray diagonal."""
    q = torch.linspace(0.01, 0.99, 200, dtype=torch.float64)
    result = calibration_error_ci(q, (q > 0.5).double(), n_samples=20)
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="color must be a matplotlib colour, got 'notacolor'"):
        reliability_diagram(result, ax=ax, color="notacolor")
    assert not ax.has_data() and not ax.lines
    plt.close(fig)


def test_a_logit_range_is_drawn_and_a_bad_one_refused() -> None:
    """``logit_range`` gives diagrams side by side one x range (recalibrate's panels)."""
    q = torch.rand(400, generator=torch.Generator().manual_seed(0), dtype=torch.float64) ** 8
    r = calibration_error_ci(q, (q > 0.5).double(), n_samples=20)
    _, ax = reliability_diagram(r, xscale="logit", logit_range=(1e-6, 1 - 1e-6))
    assert ax.get_xlim() == pytest.approx((1e-6, 1 - 1e-6))
    for wrong in [(0.9, 0.1), (0.0, 0.5), (1e-3,)]:
        with pytest.raises(ValueError, match="logit_range must be"):
            reliability_diagram(r, xscale="logit", logit_range=wrong)


@pytest.mark.parametrize(
    ("ends", "message"),
    [
        ((True, 0.9), "got True (a bool)"),
        ((0.1, np.bool_(True)), "got True (a bool)"),
        # A tensor's or array's bool had been read as 1.0 and refused for its range.
        ((torch.tensor(True), 0.9), "got True (a bool)"),
        ((0.1, np.array(False)), "got False (a bool)"),
        (torch.tensor([False, True]), "got False (a bool)"),
        (("0.1", 0.9), "got '0.1' (a string)"),
        ((1e-300, 0.9), "at least 1e-12 from 0 and from 1"),
        ((0.1, 1 - 1e-14), "at least 1e-12 from 0 and from 1"),
    ],
)
def test_a_logit_range_of_bools_strings_or_ends_past_the_floor_is_refused(ends, message):
    """``True`` had been named "1.0", ``"0.1"`` drawn, and 1e-300 drawn with matplotlib's
    overflow warning."""
    q = torch.rand(400, generator=torch.Generator().manual_seed(0), dtype=torch.float64) ** 8
    r = calibration_error_ci(q, (q > 0.5).double(), n_samples=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=re.escape(message)):
            reliability_diagram(r, xscale="logit", logit_range=ends)
