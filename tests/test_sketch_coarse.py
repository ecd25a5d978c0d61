"""A folded streaming sketch with too few cells per bin says so, once, with what to do.

At 10⁹ calibrated pairs and β = 5000 the default sketch (2¹⁸ cells, 1.3 occupied cells
per bin) gave a debiased error 4.9e-4 below the exact mode's, and 2²² cells 9.7e-5
(docs/streaming.md, benchmarks/drift_resolution.py); the metric cannot know N in
advance, so it warns at compute() when the cells are too coarse for the bins.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import sketch


def _calibrated(n: int, seed: int = 0, classes: int | None = None):
    g = torch.Generator().manual_seed(seed)
    if classes is None:
        q = torch.rand(n, generator=g)
        return q, torch.bernoulli(q, generator=g).long()
    probs = torch.softmax(3 * torch.randn(n, classes, generator=g), -1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def _coarse_warnings(metric: CalibrationError, calls: int = 2) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            metric.compute()
    return [str(w.message) for w in caught if "occupied cells per bin" in str(w.message)]


def test_a_coarse_folded_sketch_warns_once_with_the_resolution_that_would_do():
    metric = CalibrationError(streaming=True, resolution=64, bin_size=500)
    metric.update(*_calibrated(10_000))  # 10,000 rows > 2 * 64: folded into the sketch
    messages = _coarse_warnings(metric)
    assert len(messages) == 1
    # 20 bins over the 37 occupied (logit-spaced) cells: 1.9 per bin; 8 per bin needs
    # about 4.3 times the cells, 2⁹.
    assert "(37 of 64 cells, 20 bins of 500)" in messages[0]
    assert "pass resolution=512" in messages[0]


def test_a_fine_enough_sketch_the_exact_mode_and_the_buffer_do_not_warn():
    q, y = _calibrated(10_000)
    fine = CalibrationError(streaming=True, resolution=1024, bin_size=500)
    exact = CalibrationError(bin_size=50)
    buffered = CalibrationError(streaming=True, resolution=8192, bin_size=50)  # kept exactly
    for metric in (fine, exact, buffered):
        metric.update(q, y)
        assert _coarse_warnings(metric) == []


def test_per_class_sketches_warn_once_for_the_metric():
    metric = CalibrationError(
        num_classes=3, average="none", streaming=True, resolution=64, bin_size=300
    )
    metric.update(*_calibrated(10_000, classes=3))
    assert len(_coarse_warnings(metric)) == 1


@pytest.mark.parametrize("bin_size", [1000, 5000])
def test_the_rule_counts_occupied_cells_not_the_grid(bin_size):
    # 10⁶ pairs on 100 distinct values: 100 occupied cells of 2¹⁸, 1000 or 200 bins.
    count = torch.zeros(sketch.num_cells())
    count[torch.arange(100) * 2000] = 10_000.0
    assert sketch.coarse_sketch_message(count, bin_size) is not None
