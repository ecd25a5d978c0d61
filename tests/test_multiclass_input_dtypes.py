"""Multiclass input in every dtype the binary pairs and the metric take, and a one-hot
target told apart from binary scores.

Unsigned class ids (uint16/32/64) had reached ``torch.aminmax``, which torch lacks for
them, and float8 probabilities ``probs.max`` under ``mode="top_label"``: torch's
NotImplementedError where binary pairs and ``CalibrationError.update`` widen both.
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import (
    calibration_error,
    compare_calibration,
    smooth_calibration_error,
    spiegelhalter_test,
)


def _data(n: int = 60, n_classes: int = 3):
    g = torch.Generator().manual_seed(0)
    probs = torch.randn(n, n_classes, generator=g).softmax(-1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def _measures(probs, target, mode):
    g = torch.Generator().manual_seed(0)
    values = [
        calibration_error(probs, target, mode=mode),
        smooth_calibration_error(probs, target, mode=mode),
        compare_calibration(probs, probs, target, mode=mode, n_samples=20, generator=g).a.error,
    ]
    if mode != "classwise":  # one test per class: refused
        values.append(spiegelhalter_test(probs, target, mode=mode).z)
    return values


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_unsigned_class_ids_give_the_int64_answer(dtype, mode) -> None:
    probs, target = _data()
    expected = _measures(probs, target, mode)
    for got, want in zip(_measures(probs, target.to(dtype), mode), expected, strict=True):
        torch.testing.assert_close(got, want)


def test_class_ids_past_int64_are_named() -> None:
    probs = torch.tensor([[0.25, 0.75]])
    with pytest.raises(ValueError, match="above int64's maximum"):
        calibration_error(probs, torch.tensor([2**63], dtype=torch.uint64))


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_float8_probabilities_are_taken_in_every_mode(mode) -> None:
    probs, target = _data()
    low = probs.to(torch.float8_e4m3fn)
    expected = _measures(low.float(), target, mode)
    for got, want in zip(_measures(low, target, mode), expected, strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("mode", ["top_label", "classwise"])
def test_float8_top_label_agrees_with_the_metric(mode) -> None:
    probs, target = _data()
    low = probs.to(torch.float8_e4m3fn)
    metric = CalibrationError(num_classes=3, mode=mode)
    metric.update(low, target)
    torch.testing.assert_close(metric.compute(), calibration_error(low, target, mode=mode))


ONE_HOT = r"target looks one-hot: pass target\.(long\(\)\.)?argmax\(-1\)\)$"


@pytest.mark.parametrize("mode", ["top_label", "classwise"])
@pytest.mark.parametrize(
    ("dtype", "widened"),
    # torch has no argmax of bools or uint32: the advice widens them first.
    [(torch.long, False), (torch.float32, False), (torch.bool, True), (torch.uint32, True)],
)
def test_a_one_hot_target_is_told_to_take_the_argmax(mode, dtype, widened) -> None:
    # The hint had been "for binary scores p pass torch.stack([1 - p, p], -1)": the wrong way.
    probs, target = _data()
    one_hot = torch.nn.functional.one_hot(target, 3).to(dtype)
    for measure in (calibration_error, smooth_calibration_error):
        with pytest.raises(ValueError, match=ONE_HOT) as caught:
            measure(probs, one_hot, mode=mode)
        assert "stack" not in str(caught.value)
        assert ("long()" in str(caught.value)) == widened
    advised = (one_hot.long() if widened else one_hot).argmax(-1)
    torch.testing.assert_close(advised, target)


def test_the_metric_with_num_classes_names_a_one_hot_target() -> None:
    probs, target = _data()
    metric = CalibrationError(num_classes=3, mode="top_label")
    with pytest.raises(ValueError, match=ONE_HOT):
        metric.update(probs, torch.nn.functional.one_hot(target, 3))


@pytest.mark.parametrize(
    "target",
    [
        torch.tensor([[1, 1, 0], [0, 0, 1]]),  # two ones in a row: multi-label
        torch.tensor([[0, 0, 0], [0, 0, 1]]),  # a row without a one
        torch.tensor([[0.6, 0.4, 0.0], [0.0, 0.0, 1.0]]),  # soft labels
    ],
)
def test_other_targets_of_the_probs_shape_keep_the_binary_scores_hint(target) -> None:
    probs = torch.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"torch\.stack\(\[1 - p, p\], -1\)") as caught:
        calibration_error(probs, target, mode="top_label")
    assert "one-hot" not in str(caught.value)
