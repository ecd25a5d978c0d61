"""Validation reads the device a fixed, documented number of times per batch.

``validate_args=True`` (the default) checks every batch. It had waited for the device
6 times a binary batch and 10 times a multiclass batch with padding (each bound of each
range check read apart, and padding indexed out by boolean masks); on an accelerator
each is a drain of the stream. Now the checks are read together: two reads a binary
batch, three a multiclass one (the rows' sums too), padding masked rather than indexed.
"""

from __future__ import annotations

import host_reads
import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError


def _batch(classes: int | None, padding: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    low = -1 if padding else 0
    if classes is None:
        return torch.rand(200, generator=g), torch.randint(low, 2, (200,), generator=g)
    probs = torch.softmax(torch.randn(200, classes, generator=g), -1)
    return probs, torch.randint(low, classes, (200,), generator=g)


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(("classes", "reads"), [(None, 2), (4, 3)])
@pytest.mark.parametrize("padding", [False, True])
def test_a_checked_batch_reads_the_device_the_documented_times(streaming, classes, reads, padding):
    options = {"ignore_index": -1} if padding else {}
    metric = CalibrationError(classes, streaming=streaming, **options)
    metric.update(*_batch(classes, padding))  # the first batch may warn once
    assert host_reads.count_reads(lambda: metric.update(*_batch(classes, padding, seed=1))) == reads


def test_a_comparison_reads_twice_per_model():
    g = torch.Generator().manual_seed(2)
    q, y = torch.rand(200, generator=g), torch.randint(0, 2, (200,), generator=g)
    metric = CalibrationComparison()
    metric.update(q, q**2, y)
    assert host_reads.count_reads(lambda: metric.update(q, q**2, y)) == 4


def test_the_checks_still_name_the_problem_with_padding_masked():
    metric = CalibrationError(3, ignore_index=-1)
    probs, target = _batch(3, padding=True)
    target[5] = 7
    with pytest.raises(ValueError, match=r"target holds class id 7, outside \[0, 3\)"):
        metric.update(probs, target)
    binary = CalibrationError(ignore_index=-1)
    q, y = _batch(None, padding=True)
    q[y == -1] = float("nan")  # padding may hold anything
    binary.update(q, y)
    q[torch.nonzero(y != -1)[0, 0]] = 1.5
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\], got 1.5"):
        binary.update(q, y)
    assert binary.update_count == 1
