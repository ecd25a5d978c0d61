"""A metric's batches as callers really pass them: a refilled buffer, an empty batch.

Both metrics kept references to the caller's tensors, so a loop that refilled one buffer
changed the pairs already counted; and an empty batch fixed "no groups" for every later
batch (found by trying the library as a new user, 2026-11-29).
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import (
    calibration_error,
    calibration_error_ci,
    compare_calibration,
)
from calib_metrics.metric_compare import CalibrationComparison

N, BATCH = 400, 200


@pytest.fixture
def pairs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(N, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g)


def _refilled(q: torch.Tensor, *columns: torch.Tensor):
    """Each batch copied into the same buffers, as a preallocated loader does."""
    buffers = [torch.empty(BATCH, dtype=c.dtype) for c in (q, *columns)]
    for start in range(0, N, BATCH):
        for buffer, column in zip(buffers, (q, *columns), strict=True):
            buffer.copy_(column[start : start + BATCH])
        yield buffers


@pytest.mark.parametrize("streaming", [False, True])
def test_a_refilled_buffer_does_not_change_counted_pairs(pairs, streaming: bool) -> None:
    q, y = pairs
    metric = CalibrationError(streaming=streaming)
    for probs, target in _refilled(q**2, y):
        metric.update(probs, target)
    assert metric.compute().item() == pytest.approx(calibration_error(q**2, y).item(), abs=1e-12)


def test_a_refilled_buffer_does_not_change_a_comparison(pairs) -> None:
    q, y = pairs
    metric = CalibrationComparison(n_samples=50)
    groups = torch.arange(N) // 4
    for probs_a, probs_b, target, ids in _refilled(q**2, q, y, groups):
        metric.update(probs_a, probs_b, target, groups=ids)
    want = compare_calibration(q**2, q, y, groups=groups, n_samples=50)
    assert metric.compute().difference.item() == pytest.approx(want.difference.item(), abs=1e-12)


def test_an_empty_batch_does_not_decide_whether_groups_come(pairs) -> None:
    q, y = pairs
    groups = torch.arange(N) // 4
    metric = CalibrationError(n_samples=50)
    metric.update(q[:0], y[:0])
    metric.update(q**2, y, groups=groups)  # raised "earlier ones did not" before
    want = calibration_error_ci(q**2, y, groups=groups, n_samples=50).error
    assert metric.compute().item() == pytest.approx(want.item(), abs=1e-12)
    comparison = CalibrationComparison(n_samples=50)
    comparison.update(q[:0], q[:0], y[:0])
    comparison.update(q**2, q, y, groups=groups)
    assert comparison.compute().difference.item() > 0


def test_an_empty_batch_still_has_its_shapes_checked(pairs) -> None:
    q, y = pairs
    with pytest.raises(ValueError, match=r"groups must have the target's shape \(0,\)"):
        CalibrationError().update(q[:0], y[:0], groups=torch.arange(3))
    with pytest.raises(ValueError, match="same shape"):
        CalibrationError().update(q[:0], y[:3])


def test_a_comparison_names_a_misshapen_batch_before_the_batch_history(pairs) -> None:
    # The history ("earlier ones did not") hid the plain shape error.
    q, y = pairs
    comparison = CalibrationComparison(n_samples=50)
    comparison.update(q, q, y)
    with pytest.raises(ValueError, match=r"groups must have the target's shape \(400,\)"):
        comparison.update(q, q, y, groups=torch.arange(3))
