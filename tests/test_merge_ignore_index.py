"""Padding rows are kept with their ``ignore_index`` target until ``compute``, so two
metrics with different ``ignore_index`` cannot pool their states: once, merging one into
the other was accepted, and the padding was then scored as items of no class (a silently
wrong CalibrationError) or made every later ``compute`` raise (CalibrationComparison)."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError


def _data():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(200, 4, generator=g), -1)
    target = torch.randint(0, 4, (200,), generator=g)
    padded = target.clone()
    padded[::3] = -100
    return probs, target, padded


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("mine", [None, -1])
def test_calibration_error_refuses_to_merge_another_ignore_index(streaming, mine) -> None:
    probs, target, padded = _data()
    this = CalibrationError(num_classes=4, ignore_index=mine, streaming=streaming)
    this.update(probs, target)
    before = this.compute()
    other = CalibrationError(num_classes=4, ignore_index=-100, streaming=streaming)
    other.update(probs, padded)
    with pytest.raises(ValueError, match="ignore_index"):
        this.merge_state(other)
    torch.testing.assert_close(this.compute(), before)


def test_calibration_error_merges_the_same_ignore_index() -> None:
    probs, _, padded = _data()
    whole = CalibrationError(num_classes=4, ignore_index=-100)
    whole.update(probs, padded)
    this = CalibrationError(num_classes=4, ignore_index=-100)
    this.update(probs[:100], padded[:100])
    other = CalibrationError(num_classes=4, ignore_index=-100)
    other.update(probs[100:], padded[100:])
    this.merge_state(other)
    torch.testing.assert_close(this.compute(), whole.compute())


def test_calibration_comparison_refuses_to_merge_another_ignore_index() -> None:
    probs, target, padded = _data()
    this = CalibrationComparison(num_classes=4)
    this.update(probs, probs.flip(0), target)
    before = this.compute().difference
    other = CalibrationComparison(num_classes=4, ignore_index=-100)
    other.update(probs, probs.flip(0), padded)
    with pytest.raises(ValueError, match="ignore_index"):
        this.merge_state(other)
    torch.testing.assert_close(this.compute().difference, before)
