"""What per_label_errors and per_class_errors take: a LabelComparisonResult whole, labels
as 0-dim tensors or NumPy scalars, and clear refusals of what they cannot draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch

from calib_metrics import CalibrationComparison
from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import per_class_errors, per_label_errors


@pytest.fixture(scope="module")
def by_label():
    g = torch.Generator().manual_seed(0)
    p = torch.randn(1500, 3, generator=g).softmax(-1)
    y = torch.multinomial(p, 1, generator=g).squeeze(1)
    sharper = p**1.3 / (p**1.3).sum(-1, keepdim=True)
    metric = CalibrationComparison(num_classes=3, mode="classwise", n_samples=150)
    metric.update(p, sharper, y)
    return metric


@pytest.fixture(scope="module")
def result():
    p = torch.rand(400, generator=torch.Generator().manual_seed(2))
    return calibration_error_ci(p, (p > 0.5).float(), bin_size=100, n_samples=20)


def _ticks(ax) -> list[str]:
    return sorted(t.get_text() for t in ax.get_yticklabels())


def test_a_label_comparison_is_drawn_as_the_classwise_plot_says(by_label) -> None:
    # compute_by_label()'s result had been refused ("results must be a non-empty mapping
    # label -> result").
    r = by_label.compute_by_label()
    fig, ax = per_label_errors(r, names=["a", "b"])
    assert _ticks(ax) == ["0", "1", "2"] and len(fig.axes) == 2  # bars, differences
    dots = [line for line in fig.axes[1].lines if line.get_marker() == "o"]
    drawn = sorted(v for line in dots for v in line.get_xdata())
    assert drawn == pytest.approx(sorted(r.difference.tolist()))


@pytest.mark.parametrize("key", [torch.tensor, np.int64])
def test_a_label_key_of_a_tensor_or_numpy_scalar_is_drawn_as_its_value(result, key) -> None:
    # dict(zip(r.labels, r.per_label)) had drawn its ticks as 'tensor(4)'.
    _, ax = per_label_errors({key(4): result, key(7): result})
    assert _ticks(ax) == ["4", "7"]


@pytest.mark.parametrize(
    ("results", "said"),
    [({}, "got an empty mapping"), ([1], "got list")],
)
def test_what_is_not_a_mapping_of_results_is_named(results, said) -> None:
    with pytest.raises(ValueError, match=said):
        per_label_errors(results)


@pytest.mark.parametrize("sort", ["no", 0, None])
def test_sort_must_be_true_or_false(result, sort) -> None:
    # Any truthy value had sorted ("no" included), as debias=... is refused instead.
    with pytest.raises(ValueError, match="sort must be True or False, got"):
        per_label_errors({"a": result}, sort=sort)


@pytest.mark.parametrize(
    ("results", "labels", "said"),
    [
        ("list", ["x"], "results must be a non-empty mapping model name -> .* got list"),
        ("none", [], "results must be a non-empty mapping .* got an empty mapping"),
        ("one", [], "labels must be a non-empty ordered collection of label names, got \\[\\]"),
        ("one", "xy", "labels must be a non-empty ordered collection of label names, got 'xy'"),
        ("one", {"x"}, "labels must be a non-empty ordered collection of label names, got {"),
    ],
)
def test_per_class_errors_refuses_what_it_cannot_draw(result, results, labels, said) -> None:
    # A list of results had failed as an AttributeError, nothing drawn a blank figure.
    results = {"list": [result], "none": {}, "one": {"m": [result]}}[results]
    with pytest.raises(ValueError, match=said):
        per_class_errors(results, labels)


@pytest.mark.parametrize(
    "labels",
    [np.array(["x", "y"]), torch.arange(2), {"x": 0, "y": 1}.keys(), ("x", "y")],
    ids=["numpy", "tensor", "dict keys", "tuple"],
)
def test_per_class_errors_takes_any_ordered_labels(result, labels) -> None:
    """An array, a tensor or a dict's keys had been drawn before the check that came with
    the refusal of a list of results, which took a Sequence only (review R5)."""
    _, ax = per_class_errors({"m": [result, result]}, labels)
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == (["0", "1"] if isinstance(labels, torch.Tensor) else ["x", "y"])


def test_float_labels_read_as_their_dtype_prints_them(result) -> None:
    """A float32 label had read 0.10000000149011612 (its value as a Python float)."""
    for labels in ([np.float32(0.1), np.float32(0.2)], torch.tensor([0.1, 0.2])):
        _, ax = per_class_errors({"m": [result, result]}, labels)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["0.1", "0.2"]
