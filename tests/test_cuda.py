"""The library on a CUDA device gives what it gives on the CPU, and keeps its tensors there.

Skipped where no GPU is present (CI, most developer machines); run on a GPU machine with
``python -m pytest -q tests/test_cuda.py``. The deterministic parts (bins, errors, the
smooth error, chain and coreference marginals) must equal the CPU's to float64
round-off; the resampled parts (intervals, p-values) draw from CUDA's own random stream,
so they are checked for their device, their range and their agreement with the CPU's
within the bootstrap's own noise.
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import (
    calibration_error,
    calibration_error_ci,
    compare_calibration,
    smooth_calibration_error,
)
from calib_metrics.models.coref import coreference_marginals, sample_antecedents
from calib_metrics.models.linear_chain import posterior_marginals

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")

CUDA = torch.device("cuda")


def _data(n: int = 20_000, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    return q**1.5, y


@pytest.mark.parametrize("debias", [True, False])
@pytest.mark.parametrize("binning", ["adaptive", "uniform"])
def test_calibration_error_equals_the_cpus(debias, binning):
    q, y = _data()
    ties = (q * 20).round() / 20  # tie groups cut by bin boundaries: the tie rule
    for probs in (q, ties):
        cpu = calibration_error(probs, y, debias=debias, binning=binning)
        gpu = calibration_error(probs.to(CUDA), y.to(CUDA), debias=debias, binning=binning)
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_multiclass_modes_equal_the_cpus(mode):
    g = torch.Generator().manual_seed(1)
    probs = torch.softmax(2 * torch.randn(6000, 4, generator=g, dtype=torch.float64), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    cpu = calibration_error(probs, target, mode=mode)
    gpu = calibration_error(probs.to(CUDA), target.to(CUDA), mode=mode)
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("interval", ["pairs", "groups", "paper"])
def test_interval_on_cuda(interval):
    q, y = _data()
    groups = torch.arange(q.numel()) // 20 if interval == "groups" else None
    kwargs = {"interval": interval, "n_samples": 400}
    if interval == "paper":
        kwargs.update(debias=False)
    cpu = calibration_error_ci(q, y, groups=groups, generator=torch.Generator(), **kwargs)
    gen = torch.Generator(device=CUDA).manual_seed(0)
    gpu_groups = None if groups is None else groups.to(CUDA)
    gpu = calibration_error_ci(q.to(CUDA), y.to(CUDA), groups=gpu_groups, generator=gen, **kwargs)
    assert all(t.device.type == "cuda" for t in (gpu.error, gpu.lower, gpu.upper))
    torch.testing.assert_close(gpu.error.cpu(), cpu.error, rtol=1e-9, atol=1e-12)
    assert gpu.lower <= gpu.error <= gpu.upper or interval == "paper"
    width = float(cpu.upper - cpu.lower)
    assert abs(float(gpu.upper - gpu.lower) - width) < 0.25 * width


@pytest.mark.parametrize("grouped", [False, True])
def test_compare_calibration_on_cuda(grouped):
    q, y = _data()
    a, b = (q + 0.05).clamp(max=1), q
    groups = torch.arange(q.numel()) // 20 if grouped else None
    cpu = compare_calibration(a, b, y, groups=groups, n_samples=500, generator=torch.Generator())
    gen = torch.Generator(device=CUDA).manual_seed(0)
    gpu = compare_calibration(
        a.to(CUDA),
        b.to(CUDA),
        y.to(CUDA),
        groups=None if groups is None else groups.to(CUDA),
        n_samples=500,
        generator=gen,
    )
    assert all(t.device.type == "cuda" for t in (gpu.difference, gpu.lower, gpu.p_value))
    torch.testing.assert_close(gpu.difference.cpu(), cpu.difference, rtol=1e-9, atol=1e-12)
    assert 0 <= float(gpu.p_value) <= 1
    width = float(cpu.upper - cpu.lower)
    assert abs(float(gpu.upper - gpu.lower) - width) < 0.25 * width


def test_smooth_error_equals_the_cpus():
    q, y = _data(5000)
    cpu = smooth_calibration_error(q, y)
    gpu = smooth_calibration_error(q.to(CUDA), y.to(CUDA))
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("streaming", [False, True])
def test_metric_on_cuda(streaming):
    q, y = _data()
    cpu_metric = CalibrationError(streaming=streaming, n_samples=200)
    gpu_metric = CalibrationError(streaming=streaming, n_samples=200).to(CUDA)
    for chunk_q, chunk_y in zip(q.split(5000), y.split(5000)):
        cpu_metric.update(chunk_q, chunk_y)
        gpu_metric.update(chunk_q.to(CUDA), chunk_y.to(CUDA))
    cpu, gpu = cpu_metric.compute(), gpu_metric.compute()
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("num_classes", [None, 3])
def test_streaming_update_never_waits_for_the_device(num_classes):
    """Past the buffer every update goes to the sketch: torch reports (here: raises on)
    any synchronising call. torch.bincount's CUDA kernel had read its input's range."""
    g = torch.Generator().manual_seed(4)
    metric = CalibrationError(
        num_classes, streaming=True, resolution=64, validate_args=False, ignore_index=-1
    ).to(CUDA)
    for _ in range(3):  # 128-row buffer: folded at the second batch
        if num_classes is None:
            probs = torch.rand(100, generator=g)
            target = torch.randint(-1, 2, (100,), generator=g)
        else:
            probs = torch.softmax(torch.randn(100, 3, generator=g), -1)
            target = torch.randint(-1, 3, (100,), generator=g)
        probs, target = probs.to(CUDA), target.to(CUDA)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            metric.update(probs, target)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert metric._folded and metric.compute().device.type == "cuda"


def test_chain_marginals_equal_the_cpus():
    g = torch.Generator().manual_seed(2)
    batch, length, tags = 64, 30, 12
    emissions = torch.randn(batch, length, tags, generator=g)
    transitions = torch.randn(tags, tags, generator=g)
    start, end = torch.randn(tags, generator=g), torch.randn(tags, generator=g)
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    mask = torch.arange(length) < lengths[:, None]
    cpu = posterior_marginals(emissions, transitions, start, end, mask)
    args = (t.to(CUDA) for t in (emissions, transitions, start, end, mask))
    gpu = posterior_marginals(*args)
    for name in ("log_partition", "unigram", "pairwise"):
        got, want = getattr(gpu, name), getattr(cpu, name)
        assert got.device.type == "cuda"
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)


def test_coreference_on_cuda():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(4, 12, 12, generator=g, dtype=torch.float64)
    exact_cpu = coreference_marginals(scores)
    exact_gpu = coreference_marginals(scores.to(CUDA))
    torch.testing.assert_close(exact_gpu.cpu(), exact_cpu, rtol=1e-9, atol=1e-12)
    gen = torch.Generator(device=CUDA).manual_seed(0)
    draws = sample_antecedents(scores.to(CUDA), 4000, generator=gen)
    assert draws.device.type == "cuda"
    assert bool((draws <= torch.arange(12, device=CUDA)).all())
    sampled = coreference_marginals(scores.to(CUDA), n_samples=4000, generator=gen)
    assert float((sampled.cpu() - exact_cpu).abs().max()) < 0.05
