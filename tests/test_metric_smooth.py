"""CalibrationError.compute_smooth: the functional smooth ECE, exact and streaming."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError, NoPairsError
from calib_metrics.functional import sketch, smooth_calibration_error
from calib_metrics.functional.smooth import histogram_tolerance, smooth_bandwidth

C = 3


def _binary(seed: int = 0, sizes=(1500, 2500)):
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        q = torch.rand(n, generator=g, dtype=torch.float64) ** 2
        out.append((q, torch.bernoulli((q * 1.2).clamp(0, 1), generator=g)))
    return out


def _tags(seed: int = 1, sizes=(900, 1100)):
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        p = torch.softmax(2 * torch.randn(n, C, generator=g, dtype=torch.float64), -1)
        out.append((p, torch.multinomial(p**0.7, 1, generator=g).squeeze(1)))
    return out


def _fill(metric, batches):
    for batch in batches:
        metric.update(*batch)
    return metric


def test_exact_binary_equals_the_functional() -> None:
    batches = _binary()
    q, y = (torch.cat(c) for c in zip(*batches))
    metric = _fill(CalibrationError(), batches)
    torch.testing.assert_close(metric.compute_smooth(), smooth_calibration_error(q, y))
    got = metric.compute_smooth(bandwidth=0.05)
    torch.testing.assert_close(got, smooth_calibration_error(q, y, bandwidth=0.05))


@pytest.mark.parametrize(
    ("options", "mode"),
    [
        ({}, "one_vs_rest"),
        ({"mode": "top_label"}, "top_label"),
        ({"mode": "classwise"}, "classwise"),
        ({"average": "macro"}, "classwise"),
    ],
)
def test_exact_multiclass_equals_the_functional(options, mode) -> None:
    batches = _tags()
    p, t = (torch.cat(c) for c in zip(*batches))
    metric = _fill(CalibrationError(num_classes=C, **options), batches)
    torch.testing.assert_close(metric.compute_smooth(), smooth_calibration_error(p, t, mode=mode))


def test_per_class_gives_one_value_per_class() -> None:
    batches = _tags(seed=2)
    p, t = (torch.cat(c) for c in zip(*batches))
    metric = _fill(CalibrationError(num_classes=C, average="none"), batches)
    want = torch.stack([smooth_calibration_error(p[:, c], (t == c).long()) for c in range(C)])
    torch.testing.assert_close(metric.compute_smooth(), want)


@pytest.mark.parametrize("bandwidth", [0.02, 0.1, None])
def test_streaming_is_within_the_histogram_tolerance(bandwidth) -> None:
    # More rows than the streaming buffer keeps exactly (2 * resolution): the sketch path.
    batches = _binary(seed=3, sizes=(5000, 5000))
    q, y = (torch.cat(c) for c in zip(*batches))
    metric = _fill(CalibrationError(streaming=True, resolution=1 << 12), batches)
    assert not metric._exact_pairs()
    got = metric.compute_smooth(bandwidth=bandwidth)
    want = smooth_calibration_error(q, y, bandwidth=bandwidth)
    # Every pair's cell and the cell's mean q, from the sketch's own cells.
    position, _, _ = sketch.histogram(metric._sketch_states().of_class(0))
    cells = sketch.cell_index(q, 1 << 12)
    occupied = torch.unique(cells)
    position_of_pair = position[torch.searchsorted(occupied, cells)]
    sigma = bandwidth if bandwidth is not None else smooth_bandwidth(q, y)
    bound = histogram_tolerance(q, position_of_pair, sigma).item()
    assert 0 < bound < 0.05  # a bound that means something at this coarse resolution
    if bandwidth is not None:
        assert abs(got.item() - want.item()) <= bound
    else:  # the bandwidth is itself picked from the histogram: within the bound, plus 2 %
        assert abs(got.item() - want.item()) <= bound + 0.02 * want.item()


def test_streaming_multiclass_top_label_is_close() -> None:
    batches = _tags(seed=4, sizes=(1500, 1500))
    p, t = (torch.cat(c) for c in zip(*batches))
    options = {"mode": "top_label", "streaming": True, "resolution": 1 << 10}
    metric = _fill(CalibrationError(num_classes=C, **options), batches)
    assert not metric._exact_pairs()  # past the exact buffer: the histogram path
    want = smooth_calibration_error(p, t, mode="top_label", bandwidth=0.05)
    torch.testing.assert_close(metric.compute_smooth(0.05), want, rtol=0, atol=1e-3)


def test_no_pairs_and_bad_bandwidth() -> None:
    for streaming in (False, True):
        metric = CalibrationError(streaming=streaming)
        with pytest.raises(NoPairsError):
            metric.compute_smooth()
    metric = _fill(CalibrationError(), _binary())
    for bad in (0, 1.5, "auto", True):
        with pytest.raises(ValueError, match="bandwidth"):
            metric.compute_smooth(bad)


def test_streaming_below_its_buffer_is_the_exact_smooth_error() -> None:
    """Streaming keeps the pairs exactly until they would outgrow the sketch."""
    batches = _binary(seed=5)
    q, y = (torch.cat(c) for c in zip(*batches))
    metric = _fill(CalibrationError(streaming=True), batches)
    torch.testing.assert_close(metric.compute_smooth(), smooth_calibration_error(q, y))
