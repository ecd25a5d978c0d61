"""``reliability_panels``, ``classwise_panels`` and the ``ax`` of the plot functions check
their arguments and raise a ValueError naming the one at fault. A negative ``limit`` had
dropped the last class without a word, ``limit=0`` blamed ``results``, a float failed as a
slice index, a bare number among the results or the curves failed as an AttributeError
while drawing, a ``smooth`` key of no label was ignored, and the array of axes that
``fig.subplots(1, 2)`` returns failed deep inside ``reliability_diagram``."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure

from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import per_label_errors, reliability_diagram
from calib_metrics.plot_panels import classwise_panels, reliability_panels


@pytest.fixture(scope="module")
def results() -> list:
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(3):
        q = torch.rand(200, generator=g, dtype=torch.float64)
        out.append(calibration_error_ci(q, torch.bernoulli(q, generator=g), n_samples=10))
    return out


@pytest.mark.parametrize("limit", [-1, 0, 2.5, True, "2"])
def test_classwise_limit_must_be_a_positive_integer(results, limit) -> None:
    with pytest.raises(ValueError, match="limit must be a positive integer"):
        classwise_panels(results, limit=limit)


def test_classwise_needs_results(results) -> None:
    with pytest.raises(ValueError, match="results must hold one CalibrationResult per class"):
        classwise_panels([])
    with pytest.raises(ValueError, match=r"results must hold CalibrationResults.*got float"):
        classwise_panels([results[0], 0.1])
    _, axes = classwise_panels(results, limit=2)
    assert len(axes) == 2


def test_classwise_versus_overlays_a_second_model_of_the_same_classes(results) -> None:
    with pytest.raises(ValueError, match="versus has 2 results for 3 classes"):
        classwise_panels(results, versus=results[:2], names=("a", "b"))
    with pytest.raises(ValueError, match="names"):
        classwise_panels(results, versus=results)  # one name for two models
    _, axes = classwise_panels(results, versus=results[::-1], names=("a", "b"))
    assert [len(ax.get_title().splitlines()) for ax in axes] == [3, 3, 3]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"a": [5]}, r"results\['a'\] must hold CalibrationResults.*got int"),
        ({"a": 5}, r"results\['a'\] must be a sequence of CalibrationResults, got int"),
    ],
)
def test_panels_name_a_result_that_is_not_one(given, message) -> None:
    with pytest.raises(ValueError, match=message):
        reliability_panels(given)


@pytest.mark.parametrize(
    ("smooth", "message"),
    [
        ({"a": [1]}, r"smooth\['a'\] must hold SmoothCurves \(or None\), got int"),
        ({"zz": [None]}, r"smooth has labels that results lacks: \['zz'\]"),
        ({"a": [None, None]}, r"smooth\['a'\] holds 2 curves for 1 models"),
        ({"a": 3}, r"smooth\['a'\] must be a sequence of one SmoothCurve"),
        ([None], "smooth must be a mapping"),
    ],
)
def test_panels_check_their_smooth_curves(results, smooth, message) -> None:
    with pytest.raises(ValueError, match=message):
        reliability_panels({"a": [results[0]]}, smooth=smooth)


@pytest.mark.parametrize(
    ("smooth", "message"),
    [
        ({"class 0": [None]}, r"smooth's keys must be class ids in \[0, 2\], got \['class 0'\]"),
        ({3: [None], -1: [None]}, r"class ids in \[0, 2\], got \[3, -1\]"),
        ({True: [None]}, r"got \[True\]"),
        ([[None]] * 3, "smooth must be a mapping class id -> curves"),
        ({0: [1]}, r"smooth\['class 0'\] must hold SmoothCurves"),
    ],
)
def test_classwise_panels_check_their_smooth_curves(results, smooth, message) -> None:
    with pytest.raises(ValueError, match=message):
        classwise_panels(results, smooth=smooth)


def test_classwise_panels_draw_the_curves_of_the_classes_drawn(results) -> None:
    """classwise_panels had taken no curves (the metrics' plot(smooth=True) refused); those
    of classes not drawn are left out, so a caller may give every class's."""
    import numpy as np

    from calib_metrics.functional import smooth_reliability_curve

    g = torch.Generator().manual_seed(1)
    q = torch.rand(200, generator=g, dtype=torch.float64)
    curve = smooth_reliability_curve(q, torch.bernoulli(q, generator=g), n_samples=20)
    _, axes = classwise_panels(results, smooth={c: [curve] for c in range(3)}, limit=2)
    assert len(axes) == 2
    for ax in axes:
        assert ax.get_title().endswith(f"smECE {curve.error.item():.4f}")
    _, axes = classwise_panels(results, smooth={np.int64(2): [curve]})
    assert ["smECE" in ax.get_title() for ax in axes] == [False, False, True]


def test_an_array_of_axes_is_refused_by_name(results) -> None:
    axes = Figure().subplots(1, 2)
    with pytest.raises(ValueError, match=r"ax must be one matplotlib Axes, got ndarray.*axes\[0\]"):
        reliability_diagram(results[0], ax=axes)
    with pytest.raises(ValueError, match="ax must be one matplotlib Axes, got str"):
        per_label_errors({"x": results[0]}, ax="left")
    _, ax = reliability_diagram(results[0], ax=axes[0])
    assert ax is axes[0]


@pytest.mark.parametrize(
    ("models", "kwargs", "said"),
    [
        (1, {"names": None}, "names must be a sequence of 1 names, one per model, got None"),
        (1, {"names": "model"}, "names must be a sequence of 1 names, one per model, got 'model'"),
        (2, {"names": ["a"]}, r"names must name all 2 models, got \['a'\]"),
        (1, {"names": ["a", "b"]}, r"names must name all 1 models, got \['a', 'b'\]"),
        (2, {"names": ["a", "b"], "tags": ["a"]}, r"tags must name all 2 models, got \['a'\]"),
        (1, {"tags": "t"}, "tags must be a sequence of 1 names, one per model, got 't'"),
    ],
)
def test_panel_names_and_tags_are_checked_as_per_label_errors_checks_names(
    results, models, kwargs, said
) -> None:
    # None had failed as a TypeError, fewer tags than models as "zip() argument 4 is
    # shorter", and names="model" been split into its characters.
    with pytest.raises(ValueError, match=said):
        reliability_panels({"x": results[:models]}, **kwargs)


def test_labels_of_unequal_model_counts_are_named(results) -> None:
    with pytest.raises(ValueError, match=r"one result per model, got \{'x': 2, 'y': 1\}"):
        reliability_panels({"x": results[:2], "y": results[:1]}, names=["a", "b"])


def test_the_legend_names_what_any_panel_draws(results) -> None:
    """The figure's legend had been the first panel's alone: a smooth curve drawn on a
    later panel only went unnamed."""
    from calib_metrics.functional import smooth_reliability_curve

    q = torch.rand(300, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    y = torch.bernoulli(q, generator=torch.Generator().manual_seed(5))
    given = {"a": [results[0]], "b": [calibration_error_ci(q, y, n_samples=20)]}
    smooth = {"b": [smooth_reliability_curve(q, y, n_samples=20)]}
    fig, _ = reliability_panels(given, smooth=smooth)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "model: smooth curve" in texts and "model: 95% band of the σ-smoothed curve" in texts
    assert texts.count("model: bins (±1.96 se)") == 1
