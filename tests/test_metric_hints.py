"""The two slips of a torchmetrics user new to the metric are named with their fix:
multiclass probabilities given to a binary metric (num_classes not set), and padding
targets (-100) with no ignore_index. Before, the errors said only "probs and target must
have the same shape" and "target holds class id -100, outside [0, 3)"."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError

PROBS = torch.softmax(torch.randn(4, 5, 3, generator=torch.Generator().manual_seed(0)), -1)
TAGS = torch.tensor([[0, 1, 2, -100, -100]]).expand(4, 5)


@pytest.mark.parametrize(
    ("metric", "args"),
    [
        (CalibrationError, (PROBS, TAGS.clamp_min(0))),
        (CalibrationComparison, (PROBS, PROBS, TAGS.clamp_min(0))),
    ],
)
def test_multiclass_probs_without_num_classes_say_set_num_classes(metric, args) -> None:
    with pytest.raises(ValueError, match="set num_classes=3"):
        metric().update(*args)


@pytest.mark.parametrize(
    ("metric", "args"),
    [(CalibrationError, (PROBS, TAGS)), (CalibrationComparison, (PROBS, PROBS, TAGS))],
)
def test_padding_without_ignore_index_says_set_ignore_index(metric, args) -> None:
    with pytest.raises(ValueError, match="ignore_index=-100"):
        metric(num_classes=3).update(*args)
    metric(num_classes=3, ignore_index=-100).update(*args)  # what the hint says works


@pytest.mark.parametrize(
    ("metric", "args"),
    [
        (CalibrationError, (PROBS[..., 0], TAGS.clamp_max(1))),
        (CalibrationComparison, (PROBS[..., 0], PROBS[..., 1], TAGS.clamp_max(1))),
    ],
)
def test_binary_padding_without_ignore_index_says_set_ignore_index(metric, args) -> None:
    """Binary targets gave the multiclass hint's fact without its fix: "target must be
    binary (0 or 1), found the value -100"."""
    with pytest.raises(ValueError, match=r"found the value -100 \(padding\? set ignore_index"):
        metric().update(*args)
    metric(ignore_index=-100).update(*args)  # what the hint says works


def test_functional_multiclass_input_of_mismatched_length_says_which_shape() -> None:
    """One item short, multiclass probs fell through to the binary check, whose message
    ("same shape, got (1500, 4) and (1499,)") said nothing of the class ids' shape."""
    from calib_metrics.functional import calibration_error

    probs = torch.softmax(torch.randn(1500, 4, generator=torch.Generator().manual_seed(0)), -1)
    with pytest.raises(ValueError, match=r"take class ids of shape \(1500,\)"):
        calibration_error(probs, torch.zeros(1499, dtype=torch.long))


@pytest.mark.parametrize("metric", [CalibrationError, CalibrationComparison])
@pytest.mark.parametrize(
    ("columns", "fix"),
    [
        (1, r"pass probs(_a)?\.squeeze\(-1\)"),
        (2, r"pass probs(_a)?\[\.\.\., 1\]; or set num_classes=2"),
    ],
)
def test_binary_probs_as_columns_say_how_to_pass_them(metric, columns, fix) -> None:
    # A binary head's [N, 1] output had been told "set num_classes=1", which is refused.
    probs = torch.rand(8, columns, generator=torch.Generator().manual_seed(1))
    target = torch.randint(0, 2, (8,))
    args = (probs, target) if metric is CalibrationError else (probs, probs, target)
    with pytest.raises(ValueError, match=fix):
        metric().update(*args)


def test_set_dtype_says_that_it_changes_nothing() -> None:
    metric = CalibrationError()
    metric.update(torch.tensor([0.2, 0.7]), torch.tensor([0, 1]))
    with pytest.warns(UserWarning, match=r"set_dtype\(torch.float16\) changes nothing"):
        assert metric.set_dtype(torch.float16) is metric
    assert metric.probs[0].dtype == torch.float32


def test_a_comparison_names_the_model_whose_shape_is_wrong() -> None:
    # The shape errors had named "probs" where the comparison has probs_a and probs_b.
    comparison = CalibrationComparison()
    with pytest.raises(ValueError, match=r"^probs_a and target must have the same shape"):
        comparison.update(torch.rand(8), torch.rand(8), torch.randint(0, 2, (9,)))
    with pytest.raises(ValueError, match=r"^multiclass input needs probs_a \[\.\.\., 3\]"):
        CalibrationComparison(3).update(
            torch.rand(8, 4), torch.rand(8, 4), torch.randint(0, 3, (8,))
        )


def test_too_few_units_is_said_by_the_metric_at_the_users_line_once() -> None:
    """The warnings had named the functions (calibration_error_ci, compare_calibration,
    compare_calibration_by_label, Spiegelhalter's test), which the user never called,
    and pointed into the library; said once per metric, as its other warnings are."""
    q, y = torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9]), torch.tensor([0, 1, 0, 1, 1])
    metric, comparison = CalibrationError(), CalibrationComparison(n_samples=50)
    grouped = CalibrationError(interval="groups")
    metric.update(q, y)
    grouped.update(q, y, groups=torch.arange(5))
    comparison.update(q, q.sqrt(), y, labels=torch.tensor([0, 0, 0, 1, 1]))
    calls = [
        (metric.compute_result, "CalibrationError: 5 pairs"),
        (comparison.compute, "CalibrationComparison: 5 resampling units"),
        (comparison.compute_by_label, "CalibrationComparison: 2 of 2 labels"),
        (grouped.compute_spiegelhalter, "CalibrationError: Spiegelhalter's test: 5 groups"),
    ]
    for call, start in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
            call()  # an epoch loop's next compute: said once
        said = [w for w in caught if str(w.message).startswith(start)]
        assert len(said) == 1, [str(w.message) for w in caught]
        assert said[0].filename == __file__
