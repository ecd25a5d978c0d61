"""The tie rule of adaptive binning (DESIGN.md, "Semantics"): a tie group split by a
bin boundary counts at its mean label in every bin, the expectation over every way of
breaking the tie; and the radix-select implementation at every refinement depth."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import reference as ref
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import adaptive_binning, calibration_error
from calib_metrics.functional import binning as binning_module


def bins_over_all_tie_breaks(q: np.ndarray, y: np.ndarray, bin_size: int) -> np.ndarray:
    """Per-bin Σy averaged over every order of the labels inside each tie group."""
    order = np.argsort(q, kind="stable")
    q, y = q[order], y[order]
    groups = [np.flatnonzero(q == v) for v in np.unique(q)]
    n_bins = max(1, q.size // bin_size)
    bin_of_rank = np.minimum(np.arange(q.size) // bin_size, n_bins - 1)
    total, n_orders = np.zeros(n_bins), 0
    for orders in itertools.product(*(set(itertools.permutations(y[g])) for g in groups)):
        labels = np.empty_like(y)
        for g, labels_in_order in zip(groups, orders, strict=True):
            labels[g] = labels_in_order
        total += np.bincount(bin_of_rank, weights=labels, minlength=n_bins)
        n_orders += 1
    return total / n_orders


@pytest.mark.parametrize("path", ["sort", "histogram"])
@pytest.mark.parametrize("seed", range(6))
def test_equals_the_average_over_every_tie_break(path, seed, monkeypatch) -> None:
    if path == "histogram":
        monkeypatch.setattr(binning_module, "_SORT_BELOW", 0)
    g = np.random.default_rng(seed)
    q = g.choice([0.0, 0.2, 0.5, 0.7, 1.0], size=13)
    y = (g.random(13) < 0.5).astype(np.float64)
    bin_size = int(g.integers(2, 5))
    bins = adaptive_binning(torch.tensor(q), torch.tensor(y), bin_size=bin_size)
    expected = bins_over_all_tie_breaks(q, y, bin_size)
    np.testing.assert_allclose((bins.freq * bins.count).numpy(), expected, atol=1e-12)


def test_bins_do_not_depend_on_input_order() -> None:
    g = torch.Generator().manual_seed(0)
    q = (torch.randint(0, 21, (5000,), generator=g) / 20).to(torch.float32)
    y = torch.bernoulli(q.double(), generator=g).long()
    perm = torch.randperm(5000, generator=g)
    a, b = adaptive_binning(q, y, bin_size=300), adaptive_binning(q[perm], y[perm], bin_size=300)
    for x, z in zip(a, b, strict=True):
        torch.testing.assert_close(x, z, rtol=1e-13, atol=1e-15)


def test_calibrated_grid_data_from_the_issue() -> None:
    # Issue 14: calibrated q on a 0.05 grid, N = 1e4, bins of 1000, 200 data sets: the
    # old rule (zeros first) averaged 0.0276, a random tie-break 0.0125, the expectation
    # over tie-breaks 0.0110.
    g = torch.Generator().manual_seed(14)
    errors = []
    for _ in range(200):
        q = torch.randint(0, 21, (10_000,), generator=g).double() / 20
        y = torch.bernoulli(q, generator=g)
        errors.append(calibration_error(q, y, bin_size=1000, debias=False).item())
    assert float(np.mean(errors)) == pytest.approx(0.0110, abs=0.0007)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("bin_size", [1, 7, 1000])
def test_deep_refinement_matches_reference(dtype, bin_size, monkeypatch) -> None:
    # Few pairs sorted at the end, so cut cells are refined level after level.
    monkeypatch.setattr(binning_module, "_SORT_BELOW", 64)
    g = torch.Generator().manual_seed(bin_size)
    n = 200_000 if bin_size > 1 else 20_000  # the reference loops over bins
    q = torch.distributions.Beta(0.3, 0.3).sample((n,)).to(torch.float64)
    q[: n // 3] = torch.tensor([0.0, 1.0, 0.5, 1e-9])[torch.randint(0, 4, (n // 3,), generator=g)]
    q = q.to(dtype)
    y = torch.bernoulli(q.double().clamp(0, 1), generator=g).bool()
    bins = adaptive_binning(q, y, bin_size=bin_size)
    expected = ref.adaptive_bins(q.double().numpy(), y.double().numpy(), bin_size)
    np.testing.assert_array_equal(bins.count.numpy(), expected.count)
    np.testing.assert_allclose(bins.freq.numpy(), expected.freq, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bins.pred_mean.numpy(), expected.pred_mean, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["uniform", "beta0.1", "tagger", "tagger-subnormal", "float16"])
def test_exact_mode_sets_few_pairs_aside(kind, monkeypatch) -> None:
    # Linear memory: beyond its histograms, the exact mode only copies the pairs of the
    # cells that a boundary cuts; at 1e6 pairs and bins of 1000 they are a small fraction.
    g = torch.Generator().manual_seed(3)
    n = 1_000_000
    q = torch.rand(n, generator=g)
    if kind == "beta0.1":
        q = torch.where(q < 0.5, (2 * q) ** 10 / 2, 1 - (2 - 2 * q) ** 10 / 2)
    elif kind.startswith("tagger"):
        q = torch.where(torch.rand(n, generator=g) < 0.64, 0.0, q**8)
        if kind == "tagger-subnormal":
            # Subnormal q next to the mass of zeros: the zeros must stay one tie group.
            q[:100] = torch.tensor(1e-44).expand(100)
    elif kind == "float16":
        q = q.half()
    y = torch.bernoulli(q.float(), generator=g).bool()
    y[:100] |= kind == "tagger-subnormal"  # positives that must not join the zeros
    set_aside = []
    compact = binning_module._compact

    def recording(*args):
        set_aside.append(args[-1])
        return compact(*args)

    monkeypatch.setattr(binning_module, "_compact", recording)
    bins = adaptive_binning(q, y, bin_size=1000)
    assert bins.count.sum().item() == n
    # The first level's cells follow a sample of the data (2**15 cells here), so the
    # 1000 boundaries set aside a few cells' worth each whatever the distribution:
    # measured 2.3% on uniform q, at most 1.8% otherwise. (With cells of fixed leading
    # key bits, 65% on uniform q, where the bit patterns crowd [1/4, 3/4] into few cells.)
    assert sum(set_aside) <= 0.05 * n, sum(set_aside) / n
    if kind == "tagger-subnormal":
        # Zeros and subnormals are different values: the bins are those of one sort.
        monkeypatch.setattr(binning_module, "_SORT_BELOW", n)
        for got, want in zip(bins, adaptive_binning(q, y, bin_size=1000)):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_mode_computes_each_pairs_key_once(dtype, monkeypatch) -> None:
    # Linear time: the first pass keeps every pair's cell, so the pass that sets the cut
    # cells' pairs aside does not compute the pairs' keys and cells again, and the pairs
    # set aside are sorted once (the earlier code did both twice: over 2N keys). The
    # cells are kept from 2**22 pairs on; the threshold is lowered to test it at 10⁶.
    monkeypatch.setattr(binning_module, "_MEMO_MIN_PAIRS", 0)
    g = torch.Generator().manual_seed(6)
    n = 1_000_000
    q = torch.rand(n, generator=g, dtype=dtype)
    y = torch.bernoulli(q, generator=g).bool()
    keyed = []
    order_key = binning_module._order_key

    def counting(probs):
        keyed.append(probs.numel())
        return order_key(probs)

    monkeypatch.setattr(binning_module, "_order_key", counting)
    bins = adaptive_binning(q, y, bin_size=1000)
    assert bins.count.sum().item() == n
    # N for the first pass, a 2**16 sample, and the few percent of pairs set aside.
    assert n < sum(keyed) <= 1.1 * n, sum(keyed) / n


def test_exact_mode_fails_up_front_when_memory_is_short(monkeypatch) -> None:
    # With less memory free than the estimate (a fake limit of 1 MiB), the exact mode
    # raises before reading the pairs and recommends the streaming mode, rather than
    # dying of an out-of-memory kill at 10⁹ pairs.
    g = torch.Generator().manual_seed(4)
    q = torch.rand(300_000, generator=g)
    y = torch.bernoulli(q, generator=g)
    metric = CalibrationError(bin_size=1000)
    metric.update(q, y)

    def started(*args):
        raise AssertionError("the binning started")

    with monkeypatch.context() as patch:
        patch.setattr(binning_module, "available_bytes", lambda device: 2**20)
        patch.setattr(binning_module, "_histogram", started)
        with pytest.raises(ValueError, match=r"streaming=True"):
            adaptive_binning(q, y, bin_size=1000)
        with pytest.raises(ValueError, match=r"compute\(\) of 300000 pairs.*streaming=True"):
            metric.compute()
    # With room (here 1 GiB), the same calls run.
    monkeypatch.setattr(binning_module, "available_bytes", lambda device: 2**30)
    torch.testing.assert_close(metric.compute(), calibration_error(q, y, bin_size=1000))
    # The documented estimate at 10⁹ float32 pairs with bin_size="auto" (β = 31623).
    assert 8 < binning_module.exact_working_bytes(10**9, 31623, 4) / 2**30 < 9


@pytest.mark.parametrize("target_dtype", [torch.int64, torch.bool])
def test_exact_mode_at_1e9_on_a_24_gb_machine(target_dtype, monkeypatch) -> None:
    # The 10⁹ arithmetic of docs/streaming.md, on state tensors that hold no memory
    # (expanded): a 24 GB machine whose free memory is what the state leaves of 23 GiB.
    # With int64 targets the state is 12 GB and compute() would join another 12 GB:
    # it must raise up front, recommending streaming. With bool targets (5 GB, joined
    # 5 GB, binning estimated at 8.6 GiB) it must go ahead.
    n = 10**9
    metric = CalibrationError()
    metric.probs = [torch.zeros(1).expand(n)]
    metric.target = [torch.zeros(1, dtype=target_dtype).expand(n)]
    state = 4 * n + metric.target[0].element_size() * n
    monkeypatch.setattr(binning_module, "available_bytes", lambda device: 23 * 2**30 - state)
    if target_dtype == torch.int64:
        with pytest.raises(ValueError, match=r"1000000000 pairs needs .*streaming=True"):
            metric._check_room()
    else:
        metric._check_room()
