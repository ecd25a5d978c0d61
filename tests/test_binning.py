"""Adaptive and uniform binning against the brute-force numpy reference (tests/reference.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import reference as ref
import torch

from calib_metrics.functional import adaptive_binning, uniform_binning
from calib_metrics.functional import binning as binning_module

LOW_PRECISION = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
# Values that the planted ties repeat: both ends, values that round in float16/bfloat16,
# and a -0.0 (which must tie with +0.0).
TIE_POOL = (0.0, -0.0, 1.0, 0.5, 0.25, 0.7, 0.1, 0.3333, 0.9999, 1e-4)


def tied_data(
    n: int, seed: int, dtype: torch.dtype = torch.float32, tie_fraction: float = 0.6
) -> tuple[torch.Tensor, torch.Tensor]:
    """q with many exact repeats (so runs of equal q straddle bin boundaries), y ~ Bernoulli(q)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.distributions.Beta(0.4, 0.4).sample((n,)).to(torch.float64)
    pick = torch.rand(n, generator=g) < tie_fraction
    pool = torch.tensor(TIE_POOL, dtype=torch.float64)
    q = torch.where(pick, pool[torch.randint(len(TIE_POOL), (n,), generator=g)], q)
    q = q.to(dtype)
    y = torch.bernoulli(q.to(torch.float64).abs(), generator=g).to(torch.int64)
    return q, y


def assert_bins_equal(bins, expected, rtol: float = 1e-12) -> None:
    """Compare our Bins with the reference's: counts exactly, means to ``rtol``."""
    assert bins.count.dtype == torch.float64
    assert bins.pred_mean.dtype == torch.float64 and bins.freq.dtype == torch.float64
    np.testing.assert_array_equal(bins.count.numpy(), expected.count.astype(np.float64))
    np.testing.assert_allclose(bins.freq.numpy(), expected.freq, rtol=rtol, atol=1e-15)
    np.testing.assert_allclose(bins.pred_mean.numpy(), expected.pred_mean, rtol=rtol, atol=1e-15)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


# (N, bin_size): multiple of β, N not a multiple, N < β, N == β, β = 1, one pair,
# N just under 2β (one bin), a short last run of one pair.
SIZES = [(1000, 100), (1037, 100), (50, 100), (100, 100), (37, 1), (1, 5), (199, 100), (301, 50)]


@pytest.mark.parametrize(("n", "bin_size"), SIZES)
@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_adaptive_matches_reference(n: int, bin_size: int, dtype: torch.dtype) -> None:
    q, y = tied_data(n, seed=n * 7 + bin_size, dtype=dtype)
    bins = adaptive_binning(q, y, bin_size=bin_size)
    # The reference sees exactly the same values, widened to float64.
    expected = ref.adaptive_bins(q.to(torch.float64).numpy(), y.numpy(), bin_size)
    assert_bins_equal(bins, expected)
    assert bins.count.sum().item() == n
    assert len(bins.count) == max(1, n // bin_size)


@pytest.fixture
def histogram_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the histogram algorithm, which normally starts at 2**17 pairs."""
    monkeypatch.setattr(binning_module, "_SORT_BELOW", 0)


@pytest.mark.parametrize(("n", "bin_size"), SIZES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64])
def test_histogram_path_matches_reference(histogram_path, n, bin_size, dtype) -> None:
    q, y = tied_data(n, seed=n * 3 + bin_size, dtype=dtype)
    bins = adaptive_binning(q, y, bin_size=bin_size)
    assert_bins_equal(bins, ref.adaptive_bins(q.to(torch.float64).numpy(), y.numpy(), bin_size))


@pytest.mark.parametrize(
    "target_dtype", [torch.bool, torch.int64, torch.int32, torch.uint8, torch.float32]
)
def test_target_dtypes_agree(target_dtype: torch.dtype) -> None:
    q, y = tied_data(777, seed=3)
    bins = adaptive_binning(q, y.to(target_dtype), bin_size=40)
    assert_bins_equal(bins, ref.adaptive_bins(q.numpy(), y.numpy(), 40))


def test_split_tie_group_counts_at_its_mean_label() -> None:
    # Ten pairs at q = 0.7, five of each label: one tie group, mean label 1/2, so every
    # bin (3, 3 and the merged 4) holds its pairs at frequency 1/2, whatever the order.
    q = torch.full((10,), 0.7, dtype=torch.float64)
    y = torch.tensor([1, 0] * 5)
    bins = adaptive_binning(q, y, bin_size=3)
    assert bins.count.tolist() == [3.0, 3.0, 4.0]
    assert bins.freq.tolist() == [0.5, 0.5, 0.5]
    assert bins.pred_mean.tolist() == pytest.approx([0.7, 0.7, 0.7], abs=1e-15)


@pytest.mark.parametrize("path", ["sort", "histogram"])
def test_one_value_for_all_pairs(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every pair in one histogram cell: the whole input is one cut cell.
    if path == "histogram":
        monkeypatch.setattr(binning_module, "_SORT_BELOW", 0)
    q = torch.full((1003,), 0.7)
    y = torch.arange(1003) % 3 == 0  # 335 ones
    bins = adaptive_binning(q, y, bin_size=100)
    assert bins.count.tolist() == [100.0] * 9 + [103.0]
    # One tie group: every bin at the group's mean label.
    assert bins.freq.tolist() == pytest.approx([335 / 1003] * 10, rel=1e-12)


@pytest.mark.parametrize("path", ["sort", "histogram"])
def test_negative_zero_ties_with_zero(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "histogram":
        monkeypatch.setattr(binning_module, "_SORT_BELOW", 0)
    # -0.0 == 0.0; its bit pattern would sort last if taken naively.
    q = torch.tensor([-0.0, 0.0, 0.5, -0.0, 0.0, 0.5])
    y = torch.tensor([1, 0, 1, 0, 1, 0])
    bins = adaptive_binning(q, y, bin_size=2)
    assert bins.count.tolist() == [2.0, 2.0, 2.0]
    # The four zeros are one tie group (labels 1, 0, 0, 1), split across two bins.
    assert bins.freq.tolist() == [0.5, 0.5, 0.5]
    assert bins.pred_mean.tolist() == [0.0, 0.0, 0.5]


@pytest.mark.parametrize("path", ["sort", "histogram"])
def test_float64_values_closer_than_float32_resolution_keep_their_order(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "histogram":
        monkeypatch.setattr(binning_module, "_SORT_BELOW", 0)
    # Adjacent float64 values collapse to one float32; if they were treated as a tie the
    # label would decide the order instead of q.
    base = np.float64(0.3)
    q = np.array([base, np.nextafter(base, 1.0), np.nextafter(np.nextafter(base, 1.0), 1.0)])
    qq = np.concatenate([q, 1.0 - q])  # also just below 0.7, where keys use 1 - q
    y = np.array([1, 0, 1, 1, 0, 1])
    bins = adaptive_binning(torch.from_numpy(qq), torch.from_numpy(y), bin_size=1)
    expected = ref.adaptive_bins(qq, y, 1)
    assert_bins_equal(bins, expected, rtol=0)


@pytest.mark.parametrize("n", [5003, 150_001])
def test_input_order_does_not_change_bins(n: int) -> None:
    # 150,001 pairs take the histogram path, 5003 the plain sort.
    q, y = tied_data(n, seed=11)
    bins = adaptive_binning(q, y, bin_size=250)
    perm = torch.randperm(q.numel(), generator=torch.Generator().manual_seed(5))
    shuffled = adaptive_binning(q[perm], y[perm], bin_size=250)
    assert torch.equal(bins.count, shuffled.count)
    assert torch.equal(bins.freq, shuffled.freq)
    torch.testing.assert_close(bins.pred_mean, shuffled.pred_mean, rtol=1e-14, atol=0)


def test_any_shape_is_flattened() -> None:
    q, y = tied_data(600, seed=2)
    flat = adaptive_binning(q, y, bin_size=50)
    shaped = adaptive_binning(q.reshape(4, 15, 10), y.reshape(4, 15, 10), bin_size=50)
    assert torch.equal(flat.count, shaped.count)
    assert torch.equal(flat.freq, shaped.freq)


def test_dense_cluster_cut_by_many_boundaries(histogram_path) -> None:
    # Thousands of distinct values inside one histogram cell, so several bin boundaries
    # fall inside one cell and the cell is resolved by the exact sort.
    g = torch.Generator().manual_seed(9)
    q = 0.3 + torch.rand(20000, generator=g, dtype=torch.float64) * 1e-9
    q = torch.cat([q, torch.rand(3001, generator=g, dtype=torch.float64)])
    y = torch.bernoulli(torch.full_like(q, 0.5), generator=g).long()
    for dtype in (torch.float64, torch.float32):
        qd = q.to(dtype)
        bins = adaptive_binning(qd, y, bin_size=700)
        assert_bins_equal(bins, ref.adaptive_bins(qd.double().numpy(), y.numpy(), 700))


def test_several_chunks(histogram_path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The passes stream the pairs in chunks; a small chunk size exercises the joins.
    monkeypatch.setattr(binning_module, "_CHUNK", 1000)
    q, y = tied_data(10_007, seed=21)
    bins = adaptive_binning(q, y, bin_size=300)
    assert_bins_equal(bins, ref.adaptive_bins(q.numpy(), y.numpy(), 300))


def test_pred_mean_sorted_and_bin_sizes_bounded() -> None:
    q, y = tied_data(4321, seed=4)
    bins = adaptive_binning(q, y, bin_size=100)
    assert bool((bins.pred_mean[1:] >= bins.pred_mean[:-1]).all())
    assert bool((bins.count >= 100).all()) and bool((bins.count < 200).all())


def test_docstring_example_values() -> None:
    probs = torch.tensor([0.1, 0.9, 0.1, 0.8, 0.2, 0.7])
    target = torch.tensor([0, 1, 1, 1, 0, 0])
    bins = adaptive_binning(probs, target, bin_size=2)
    assert_bins_equal(bins, ref.adaptive_bins(probs.double().numpy(), target.numpy(), 2))


# Uniform binning: data kept away from the inner bin edges so that float rounding of the
# edges cannot move a point; 0 and 1 are included on purpose.
def edge_free(n: int, n_bins: int, seed: int, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q = torch.distributions.Beta(0.5, 0.5).sample((n,)).to(torch.float64)
    scaled = q * n_bins
    q = torch.where((scaled - scaled.round()).abs() < 1e-4, q * 0.5 + 0.25 / n_bins, q)
    q[:3] = torch.tensor([0.0, 1.0, 1.0], dtype=torch.float64)
    q = q.to(dtype)
    y = torch.bernoulli(q.to(torch.float64), generator=g).long()
    return q, y


@pytest.mark.parametrize("n_bins", [1, 2, 7, 15, 100])
@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_uniform_matches_reference(n_bins: int, dtype: torch.dtype) -> None:
    q, y = edge_free(2000, n_bins, seed=n_bins, dtype=dtype)
    scaled = q.double() * n_bins
    inner = (scaled > 0) & (scaled < n_bins)
    if dtype in (torch.float16, torch.bfloat16):
        # Rounding to a coarse dtype can land a value on an edge, and the edges are
        # rounded to the dtype too (as torchmetrics does): drop pairs within 2 ulps.
        ulps = 2 * torch.finfo(dtype).eps * q.double() * n_bins
        keep = ~inner | ((scaled - scaled.round()).abs() > ulps)
        q, y = q[keep], y[keep]
    bins = uniform_binning(q, y, n_bins)
    assert_bins_equal(bins, ref.uniform_bins(q.double().numpy(), y.numpy(), n_bins))


def test_uniform_drops_empty_bins_and_keeps_one_in_last() -> None:
    bins = uniform_binning(torch.tensor([0.05, 0.05, 1.0]), torch.tensor([0, 1, 1]), 10)
    assert bins.count.tolist() == [2.0, 1.0]
    assert bins.pred_mean.tolist() == pytest.approx([0.05, 1.0])
    assert bins.freq.tolist() == [0.5, 1.0]


def test_uniform_binning_of_a_strided_view_is_silent_and_equal() -> None:
    # A column of a [N, 2] tensor is a strided view; torch.bucketize warned about it
    # ("input value tensor is non-contiguous") from inside the library.
    g = torch.Generator().manual_seed(0)
    both = torch.rand(1000, 2, generator=g)
    q, y = both[:, 0], (both[:, 1] < both[:, 0]).float()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bins = uniform_binning(q, y, n_bins=10)
    expected = uniform_binning(q.contiguous(), y, n_bins=10)
    for got, want in zip(bins, expected):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_uniform_bins_spread_over_slots_sum_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a GPU each of few bins is spread over slots, so that float64 adds do not queue on
    # one address (10⁸ pairs into 15 bins: 65 ms, spread 3 ms on an H200); the sums are
    # the same.
    g = torch.Generator().manual_seed(11)
    q = torch.rand(50_000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    plain = uniform_binning(q, y, 15)
    monkeypatch.setattr(binning_module, "_spread", lambda device: 8)
    spread = uniform_binning(q, y, 15)
    for got, want in zip(spread, plain):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_a_gpu_sorts_all_pairs_where_the_sort_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    # A GPU's radix sort of 10⁸ pairs (21 ms on an H200) beats the selection's chunked
    # passes (150 ms); the CPU keeps the selection, and a GPU short of memory too.
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    monkeypatch.setattr(binning_module, "available_bytes", lambda device: 2**30)
    assert binning_module.sorts_all(10**6, cuda)  # 64 MB of 1 GiB free
    assert not binning_module.sorts_all(10**8, cuda)  # 6.4 GB
    assert not binning_module.sorts_all(10**6, cpu)
    assert binning_module.sorts_all(1000, cpu)
    limit = 2**30 // 2 // binning_module._SORT_BYTES  # half the free memory, exactly
    assert binning_module.sorts_all(limit, cuda) and not binning_module.sorts_all(limit + 1, cuda)
    monkeypatch.setattr(binning_module, "available_bytes", lambda device: 2**50)
    assert not binning_module.sorts_all(2**31, cuda)  # past torch's CUDA sort
    monkeypatch.setattr(binning_module, "available_bytes", lambda device: None)
    assert not binning_module.sorts_all(10**6, cuda)


def test_many_uniform_bins_are_not_spread() -> None:
    # 1,024 slots for each of 10⁵ bins would take 2.3 GiB for three rows of sums; many
    # bins do not queue on their atomics anyway.
    cuda = torch.device("cuda")
    assert binning_module._spread_for(cuda, 15) == binning_module._SPREAD
    assert binning_module._spread_for(cuda, 10**5) == 1
    assert binning_module._spread_for(torch.device("cpu"), 15) == 1


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    "n_zeros,n_ones,bin_size", [(90, 110, 15), (90_000, 140_000, 7001)]
)  # sorted, and radix select (more than 2**17 pairs)
def test_bins_of_only_zeros_or_only_ones_are_exact(n_zeros, n_ones, bin_size, dtype) -> None:
    """With y = q in {0, 1}, bins of q = 1 pairs only had pred_mean 0.9999999999999999 and
    freq 0.9999999999999996 (differences of running sums, a tie group's share of its ones
    as before / size · ones), in the exact and the streaming (sketch) bins alike, and the
    reliability diagram's logit axis then stretched to 1 − 1e-6 at one end only."""
    from calib_metrics.functional import sketch

    q = torch.cat([torch.zeros(n_zeros, dtype=dtype), torch.ones(n_ones, dtype=dtype)])
    q = q[torch.randperm(q.numel(), generator=torch.Generator().manual_seed(0))]
    y = q.clone()
    state = sketch.empty(1 << 12)
    sketch.accumulate(state, q, y)
    streamed = [sketch.to_bins(state, bin_size, redraw=redraw) for redraw in (True, False)]
    for bins in (adaptive_binning(q, y, bin_size), *streamed):
        edges = torch.cat([torch.zeros(1, dtype=torch.float64), bins.count.cumsum(0)])
        zeros, ones = edges[1:] <= n_zeros, edges[:-1] >= n_zeros
        assert int(zeros.sum()) >= 4 and int(ones.sum()) >= 4, bins.count
        assert bins.pred_mean[zeros].tolist() == [0.0] * int(zeros.sum())
        assert bins.freq[zeros].tolist() == [0.0] * int(zeros.sum())
        assert bins.pred_mean[ones].tolist() == [1.0] * int(ones.sum())
        assert bins.freq[ones].tolist() == [1.0] * int(ones.sum())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
@pytest.mark.parametrize("n", [3_000, 300_000])  # sorted, and radix select
def test_end_bins_come_from_the_binning_passes(n, dtype, monkeypatch) -> None:
    """The q = 0 and q = 1 counts behind the exact end bins had their own pass over the
    pairs, and asked sorts_all (on a GPU, the driver's free memory) a second time; they
    come from the sort or the first level's cells now. q just inside (0, 1) must not be
    counted: bins holding them are not end bins."""
    calls = []
    asked = binning_module.sorts_all
    monkeypatch.setattr(binning_module, "sorts_all", lambda *a: calls.append(a) or asked(*a))
    g = torch.Generator().manual_seed(1)
    near = torch.tensor([1 - torch.finfo(dtype).eps / 2, torch.finfo(dtype).tiny], dtype=dtype)
    parts = [torch.zeros(n // 5), torch.ones(n // 4), near.repeat(n // 20).double()]
    inner = torch.rand(n - sum(p.numel() for p in parts), generator=g, dtype=torch.float64)
    q = torch.cat([*parts, inner]).to(dtype)
    q = q[torch.randperm(n, generator=g)]
    y = torch.bernoulli(q.double().clamp(0, 1), generator=g)
    bins = adaptive_binning(q, y, int(n**0.5))
    assert len(calls) == 1
    edges = torch.cat([torch.zeros(1, dtype=torch.float64), bins.count.cumsum(0)])
    n_zeros, n_ones = int((q == 0).sum()), int((q == 1).sum())
    zeros, ones = edges[1:] <= n_zeros, edges[:-1] >= n - n_ones
    assert int(zeros.sum()) >= 2 and int(ones.sum()) >= 2
    assert bins.pred_mean[zeros].eq(0).all() and bins.pred_mean[ones].eq(1).all()
    # The bins of the smallest q > 0 are not pinned to 0 (near 1, a bin's mean may round
    # to 1 in float64 whatever its count).
    assert bins.pred_mean[~(zeros | ones)].gt(0).all()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_the_end_keys_are_made_on_the_keys_device(dtype) -> None:
    # The key of q = 1 was made on the CPU and joined to the sorted keys: every exact
    # adaptive binning on a GPU would have raised (shown on the meta device, which has no
    # data but checks devices as CUDA does).
    key = torch.arange(10, device="meta")
    assert binning_module._sorted_ends(key, dtype).device.type == "meta"
    assert (
        binning_module._zero_and_one(torch.empty(3, dtype=dtype, device="meta")).device.type
        == "meta"
    )


def test_the_command_line_recommends_what_it_can_do_when_memory_is_short(
    monkeypatch: pytest.MonkeyPatch, tmp_path, capsys
) -> None:
    """The command line had recommended CalibrationError(streaming=True), which it has no
    option for; the library still does."""
    from calib_metrics.cli import main

    file = tmp_path / "p.csv"
    file.write_text("prob,label\n" + "".join(f"{i / 400},{i % 2}\n" for i in range(400)))
    monkeypatch.setattr(binning_module, "available_bytes", lambda device: 1024)
    assert main(["evaluate", str(file), "--samples", "20"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "more than the 1 KiB free on cpu: free memory (or use a machine with more)" in line
    with pytest.raises(ValueError, match=r"free on cpu: use the streaming mode \(Calib"):
        binning_module.adaptive_bin_sums(torch.rand(400), torch.ones(400), 20)


def test_compare_does_not_recommend_a_streaming_mode_it_lacks(
    monkeypatch: pytest.MonkeyPatch, tmp_path, capsys
) -> None:
    """One remedy for every command had told compare to stream, which a comparison cannot."""
    from calib_metrics.cli import main

    file = tmp_path / "p.csv"
    rows = "".join(f"{i / 400},{(i / 400) ** 0.5},{i % 2}\n" for i in range(400))
    file.write_text("prob,prob_b,label\n" + rows)
    monkeypatch.setattr(binning_module, "available_bytes", lambda device: 1024)
    argv = ["compare", str(file), "--probs", "prob", "--probs-b", "prob_b", "--samples", "20"]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.endswith(
        "free memory (or use a machine with more), or measure a sample of the rows"
    )


def _heavy_ties(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    q = ((torch.rand(40_000, generator=g, dtype=torch.float64) * 1000).round() / 1000).to(dtype)
    return q, torch.bernoulli(q.to(torch.float64), generator=g).to(torch.int64)


def _counted_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every histogram pass over pairs, counted (the histogram path from 2**10 pairs)."""
    monkeypatch.setattr(binning_module, "_SORT_BELOW", 1 << 10)
    passes: list[int] = []
    histogram = binning_module._histogram
    monkeypatch.setattr(
        binning_module, "_histogram", lambda *a, **k: passes.append(1) or histogram(*a, **k)
    )
    return passes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_heavy_ties_are_shared_in_the_first_pass(dtype, monkeypatch: pytest.MonkeyPatch):
    """q of three decimals (a CSV's, say): the cells a rank cuts hold one value each, a tie
    group to share, not to refine. Float64 input had refined them for every bit of their
    63-bit key, ten passes over the pairs where float32 takes one (about 20× the time at
    2·10⁶ pairs): its first pass now sees them as float32's does."""
    passes = _counted_passes(monkeypatch)
    q, y = _heavy_ties(dtype)
    bins = adaptive_binning(q, y, bin_size=200)
    assert_bins_equal(bins, ref.adaptive_bins(q.to(torch.float64).numpy(), y.numpy(), 200))
    assert len(passes) == 1


def test_a_refining_level_shares_a_cell_of_one_value(monkeypatch: pytest.MonkeyPatch):
    """Ties the first pass does not look for (its sample says "no heavy ties") reach the
    refining levels, which stop at a cell of one value too."""
    passes = _counted_passes(monkeypatch)
    monkeypatch.setattr(binning_module, "_repeats_values", lambda probs: False)
    q, y = _heavy_ties(torch.float64)
    bins = adaptive_binning(q, y, bin_size=200)
    assert_bins_equal(bins, ref.adaptive_bins(q.numpy(), y.numpy(), 200))
    assert len(passes) <= 3


def test_a_cell_of_one_value_sums_exactly():
    """Σq of a cell of one float64 value is its count times the value: summed one pair at
    a time it drifts (2.4e-7 over 210,000 adds of 0.3), and the bins' means had been
    1.5e-12 off here; what is left (1.5e-14) is the differences of running sums."""
    q = torch.full((300_000,), 0.42, dtype=torch.float64)
    bins = adaptive_binning(q, torch.arange(300_000) % 2, bin_size=1000)
    assert (bins.pred_mean - 0.42).abs().max().item() <= 1e-13
