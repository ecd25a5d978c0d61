"""The library on a CUDA device gives what it gives on the CPU, and keeps its tensors there.

Skipped where no GPU is present (CI, most developer machines); run on a GPU machine with
``python -m pytest -q tests/test_cuda.py``. The deterministic parts (bins, errors, the
smooth error, chain and coreference marginals) must equal the CPU's to float64
round-off; the resampled parts (intervals, p-values) draw from CUDA's own random stream,
so they are checked for their device, their range and their agreement with the CPU's
within the bootstrap's own noise.
"""

from __future__ import annotations

import subprocess
import sys

import host_reads
import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.functional import (
    binning,
    calibration_error,
    calibration_error_ci,
    compare_calibration,
    smooth_calibration_error,
)
from calib_metrics.models.coref import coreference_marginals, sample_antecedents
from calib_metrics.models.hmm import HMM
from calib_metrics.models.linear_chain import posterior_marginals, sample
from calib_metrics.queries import (
    coref_pair_queries,
    span_indicators,
    span_marginals,
    span_queries,
    tag_pair_queries,
    tag_queries,
    top_tag_pairs,
)
from calib_metrics.recalibration import (
    ChainTemperature,
    CorefTemperature,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)

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


def test_the_group_interval_does_not_warn_of_sparse_invariants():
    """torch 2.11 warned, once a process, of skipped sparse invariant checks at the group
    interval's CSR matrix: a fresh process, with that warning an error."""
    code = (
        "import torch\n"
        "from calib_metrics.functional import calibration_error_ci\n"
        "q = torch.rand(5000, device='cuda', dtype=torch.float64)\n"
        "groups = torch.arange(5000, device='cuda') // 10\n"
        "calibration_error_ci(q, torch.bernoulli(q), groups=groups, n_samples=100)\n"
    )
    run = subprocess.run(
        [sys.executable, "-W", "error:Sparse invariant:UserWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]


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


def test_hmm_fitted_from_cpu_words_stays_on_cuda():
    """``HMM.fit`` rebound its parameters on the words' device: a model moved to CUDA
    and fitted from CPU words came back on the CPU without a word."""
    g = torch.Generator().manual_seed(3)
    words, tags = torch.randint(0, 7, (5, 6), generator=g), torch.randint(0, 3, (5, 6), generator=g)
    on_cpu = HMM(3, 7).fit(words, tags)
    on_cuda = HMM(3, 7).to(CUDA).fit(words, tags)
    for name, want in on_cpu.state_dict().items():
        got = on_cuda.state_dict()[name]
        assert got.device.type == "cuda", name
        torch.testing.assert_close(got.cpu(), want)


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


def _chain(batch=32, length=12, tags=5, seed=6):
    g = torch.Generator().manual_seed(seed)
    emissions = torch.randn(batch, length, tags, generator=g, dtype=torch.float64)
    transitions = torch.randn(tags, tags, generator=g, dtype=torch.float64)
    start, end = torch.randn(tags, generator=g), torch.randn(tags, generator=g)
    lengths = torch.randint(2, length + 1, (batch,), generator=g)
    mask = torch.arange(length) < lengths[:, None]
    return emissions, transitions, start.double(), end.double(), mask


def test_bfloat16_chain_samples_on_cuda_never_take_a_forbidden_step():
    """CUDA's uniforms narrowed to bfloat16 can round up to the total: the draw must stop
    at the last tag of positive weight (O -> I forbidden by -inf)."""
    emissions, transitions, start, end, mask = _chain(batch=8, length=6, tags=3)
    outside, inside = 0, 2
    transitions[outside, inside] = float("-inf")
    gen = torch.Generator(device=CUDA).manual_seed(0)
    args = [t.to(CUDA) for t in (emissions, transitions, start, end, mask)]
    draws = sample(*args, n_samples=20_000, generator=gen, compute_dtype=torch.bfloat16)
    assert draws.device.type == "cuda"
    steps = (draws[..., :-1] == outside) & (draws[..., 1:] == inside) & args[4][:, 1:]
    assert not bool(steps.any())
    exact = posterior_marginals(*args).unigram
    drawn = torch.nn.functional.one_hot(draws, 3).double().mean(0)
    assert float((drawn - exact)[args[4]].abs().max()) < 0.03


def _queries(emissions, transitions, start, end, mask, tags):
    marginals = posterior_marginals(emissions, transitions, start, end, mask)
    span = span_marginals(emissions, transitions, start, end, mask, begin=1, inside=2, max_length=3)
    return {
        "tag_queries": tag_queries(marginals.unigram, tags, mask),
        "tag_pair_queries": tuple(tag_pair_queries(marginals.pairwise, tags, mask, 3)),
        "span_marginals": (span,),
    }


def test_queries_on_cuda_equal_the_cpus():
    chain = _chain()
    g = torch.Generator().manual_seed(7)
    tags = torch.randint(5, chain[-1].shape, generator=g)
    cpu = _queries(*chain, tags)
    gpu = _queries(*(t.to(CUDA) for t in (*chain, tags)))
    for name, outputs in gpu.items():
        for got, want in zip(outputs, cpu[name]):
            assert got.device.type == "cuda", name
            torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=1e-9, msg=name)
    scores = torch.randn(3, 9, 9, generator=g, dtype=torch.float64)
    entities = torch.randint(-1, 4, (3, 9), generator=g)
    pair_marginals = coreference_marginals(scores)
    want = coref_pair_queries(pair_marginals, entities)
    got = coref_pair_queries(pair_marginals.to(CUDA), entities.to(CUDA))
    for got_part, want_part in zip(got, want):
        assert got_part.device.type == "cuda"
        torch.testing.assert_close(got_part.cpu(), want_part, rtol=1e-9, atol=1e-12)


def _fit_both(make, *tensors):
    cpu = make().fit(*tensors)
    gpu = make().to(CUDA).fit(*(t.to(CUDA) for t in tensors))
    return cpu, gpu


def test_recalibration_fits_on_cuda_as_on_the_cpu():
    g = torch.Generator().manual_seed(8)
    logits = 3 * torch.randn(4000, 4, generator=g, dtype=torch.float64)
    target = torch.multinomial(torch.softmax(logits / 2, -1), 1, generator=g).squeeze(1)
    for make in (TemperatureScaling, VectorScaling):
        cpu, gpu = _fit_both(make, logits, target)
        fitted = [dict(m.named_parameters()) | dict(m.named_buffers()) for m in (cpu, gpu)]
        for name, want in fitted[0].items():
            got = fitted[1][name]
            assert got.device.type == "cuda", name
            torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-7, msg=name)
        torch.testing.assert_close(gpu(logits.to(CUDA)).cpu(), cpu(logits), rtol=1e-5, atol=1e-7)
    scores, labels = logits[:, 0], (target == 0).double()
    cpu, gpu = _fit_both(PlattScaling, scores, labels)
    torch.testing.assert_close(gpu(scores.to(CUDA)).cpu(), cpu(scores), rtol=1e-5, atol=1e-7)
    emissions, transitions, start, end, mask = _chain(batch=64)
    tags = sample(emissions / 2, transitions / 2, start / 2, end / 2, mask, n_samples=1,
                  generator=g)[0]  # fmt: skip
    cpu, gpu = _fit_both(ChainTemperature, emissions, transitions, start, end, tags, mask)
    torch.testing.assert_close(gpu.temperature.cpu(), cpu.temperature, rtol=1e-5, atol=1e-7)
    coref = torch.randn(16, 10, 10, generator=g, dtype=torch.float64)
    antecedents = sample_antecedents(coref / 2, 1, generator=g)[0]
    gold = torch.nn.functional.one_hot(antecedents, 10).bool()  # the drawn choice is gold
    cpu, gpu = _fit_both(CorefTemperature, coref, gold)
    torch.testing.assert_close(gpu.temperature.cpu(), cpu.temperature, rtol=1e-5, atol=1e-7)


def test_comparison_metric_on_cuda():
    q, y = _data()
    a, b = (q + 0.05).clamp(max=1), q
    cpu_metric = CalibrationComparison(n_samples=300)
    gpu_metric = CalibrationComparison(n_samples=300).to(CUDA)
    for chunk_a, chunk_b, chunk_y in zip(a.split(5000), b.split(5000), y.split(5000)):
        cpu_metric.update(chunk_a, chunk_b, chunk_y)
        gpu_metric.update(chunk_a.to(CUDA), chunk_b.to(CUDA), chunk_y.to(CUDA))
    cpu, gpu = cpu_metric.compute(), gpu_metric.compute()
    assert gpu.difference.device.type == "cuda"
    torch.testing.assert_close(gpu.difference.cpu(), cpu.difference, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(("classes", "stated"), [(None, 2), (4, 3)])
@pytest.mark.parametrize("padding", [False, True])
def test_a_checked_batch_synchronises_as_documented(streaming, classes, stated, padding):
    """CUDA's own count (tests/test_validation_syncs.py counts the Python-visible reads)."""
    g = torch.Generator().manual_seed(5)
    low = -1 if padding else 0
    if classes is None:
        probs, target = torch.rand(200, generator=g), torch.randint(low, 2, (200,), generator=g)
    else:
        probs = torch.softmax(torch.randn(200, classes, generator=g), -1)
        target = torch.randint(low, classes, (200,), generator=g)
    probs, target = probs.to(CUDA), target.to(CUDA)
    options = {"ignore_index": -1} if padding else {}
    metric = CalibrationError(classes, streaming=streaming, **options).to(CUDA)
    metric.update(probs, target)  # the first batch may warn once
    assert host_reads.cuda_syncs(lambda: metric.update(probs, target)) == stated
    comparison = CalibrationComparison(classes, **options).to(CUDA)
    comparison.update(probs, probs, target)
    syncs = host_reads.cuda_syncs(lambda: comparison.update(probs, probs, target))
    assert syncs == 2 * stated


def test_queries_synchronise_as_their_docstrings_state():
    emissions, transitions, start, end, mask = (t.to(CUDA) for t in _chain(4, 6, 3))
    g = torch.Generator().manual_seed(9)
    tags = torch.randint(3, mask.shape, generator=g).to(CUDA)
    chain = posterior_marginals(emissions, transitions, start, end, mask)
    span = {"begin": 1, "inside": 2}
    probs = span_marginals(emissions, transitions, start, end, mask, max_length=2, **span)
    marginals = coreference_marginals(torch.randn(4, 6, 6, dtype=torch.float64).to(CUDA))
    calls = {
        tag_queries: lambda: tag_queries(chain.unigram, tags, mask),
        top_tag_pairs: lambda: top_tag_pairs(tags, mask, 3, 2),
        tag_pair_queries: lambda: tag_pair_queries(chain.pairwise, tags, mask, 2),
        span_marginals: lambda: span_marginals(
            emissions, transitions, start, end, mask, max_length=2, **span
        ),
        span_indicators: lambda: span_indicators(tags, mask, max_length=2, **span),
        span_queries: lambda: span_queries(probs, tags, mask, **span),
        coref_pair_queries: lambda: coref_pair_queries(marginals, tags, mask),
    }
    for function, call in calls.items():
        assert host_reads.cuda_syncs(call) == host_reads.stated_syncs(function), function.__name__


def test_adaptive_bins_of_many_pairs_equal_the_cpus_without_a_sync():
    """Past 2¹⁷ pairs the CPU selects the bin boundaries by radix while a GPU sorts
    (binning.sorts_all): the same bins, ties and all, and the GPU's binning never waits
    for the device (the selection's chunks had read it back one by one)."""
    q, y = _data(300_000)
    for probs in (q, (q * 40).round() / 40, q.float()):
        cpu = binning.adaptive_tied_sums(probs, y, 1000)
        on_gpu = probs.to(CUDA), y.to(CUDA)
        gpu = binning.adaptive_tied_sums(*on_gpu, 1000)
        torch.testing.assert_close(tuple(gpu), tuple(cpu), rtol=1e-9, atol=1e-9, check_device=False)
        assert (
            host_reads.cuda_syncs(lambda args=on_gpu: binning.adaptive_tied_sums(*args, 1000)) == 0
        )
    bin_of = binning.uniform_bin_of(q.to(CUDA), 15)
    values = q.to(CUDA), y.to(CUDA)
    sums = binning.spread_bin_sums(bin_of, 15, *values)
    want = binning.spread_bin_sums(bin_of.cpu(), 15, q, y)
    torch.testing.assert_close(sums.cpu(), want, rtol=1e-12, atol=1e-9)
    assert host_reads.cuda_syncs(lambda: binning.spread_bin_sums(bin_of, 15, *values)) == 0


def test_a_cpu_generator_for_cuda_draws_is_refused_by_name() -> None:
    """torch refuses it deep in the draws ("Expected a 'cuda' device type for generator");
    every docstring example builds a CPU generator, so a GPU user meets it first."""
    q = torch.rand(2000, device="cuda", dtype=torch.float64)
    y = torch.bernoulli(q)
    cpu = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="generator is on cpu and the draws on cuda"):
        calibration_error_ci(q, y, n_samples=20, generator=cpu)
    with pytest.raises(ValueError, match="generator is on cpu and the draws on cuda"):
        compare_calibration(q, q.sqrt(), y, n_samples=20, generator=cpu)
    em = torch.randn(2, 4, 3, device="cuda", dtype=torch.float64)
    tr, st = torch.zeros(3, 3, device="cuda"), torch.zeros(3, device="cuda")
    with pytest.raises(ValueError, match="generator is on cpu and the draws on cuda"):
        sample(em, tr, st, st, n_samples=2, generator=cpu)
    on_device = torch.Generator(device="cuda").manual_seed(0)
    calibration_error_ci(q, y, n_samples=20, generator=on_device)


def test_queries_take_a_cpu_mask_and_tags_beside_cuda_marginals() -> None:
    """The chain functions move a CPU mask to the potentials' device; the queries had
    failed in torch at their first selection. The per-label units come back on the
    labels' device too."""
    from calib_metrics.functional import compare_calibration_by_label

    g = torch.Generator().manual_seed(0)
    unigram = torch.softmax(torch.randn(2, 5, 3, generator=g), -1)
    tags = torch.randint(0, 3, (2, 5), generator=g)
    mask = torch.ones(2, 5, dtype=torch.bool)
    q, y = tag_queries(unigram.cuda(), tags, mask)
    q_cpu, y_cpu = tag_queries(unigram, tags, mask)
    assert q.device.type == "cuda" and torch.equal(q.cpu(), q_cpu) and torch.equal(y.cpu(), y_cpu)
    marg = torch.rand(2, 5, 5, generator=g)
    q, _ = coref_pair_queries(marg.cuda(), tags, mask)
    assert torch.equal(q.cpu(), coref_pair_queries(marg, tags, mask)[0])
    p = torch.rand(600, device="cuda", dtype=torch.float64)
    labels = torch.arange(3, device="cuda").repeat_interleave(200)
    result = compare_calibration_by_label(p, p.sqrt(), torch.bernoulli(p), labels, n_samples=20)
    assert result.units.device == result.labels.device


def test_a_cuda_batch_beside_a_cpu_sketch_is_refused_at_once() -> None:
    metric = CalibrationError(streaming=True, resolution=64)
    metric.update(torch.tensor([0.2, 0.8]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"probs are on cuda:0 and the metric's sketch on cpu"):
        metric.update(torch.rand(10, device=CUDA), torch.zeros(10, dtype=torch.long, device=CUDA))
    assert metric.rows_seen.item() == 2
