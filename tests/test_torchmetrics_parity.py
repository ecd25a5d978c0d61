"""Uniform binning equals torchmetrics' BinaryCalibrationError (l1, l2, max) in float64.

torchmetrics (``_ce_compute``) uses bins ``bucketize(q, linspace(0, 1, n + 1), right=True)
- 1`` with the edges in the input's dtype and, for ``norm="l2"``, sqrt(Σ prop_i (acc_i −
conf_i)²): the same bins and the same RMS convention as ours. The one difference is
q == 1, to which torchmetrics gives a bin of its own (a phantom (n + 1)-th bin); the
float32 sums of torchmetrics are the other, and where they matter the tests compare with
a float64 reference instead.

torchmetrics' own test cases (``tests/unittests/classification/test_calibration_error.py``
and ``inputs.py`` in Lightning-AI/torchmetrics: 4 batches of 32, binary probabilities and
logits, with and without an extra dimension, n_bins 10/15/20, l1 and max, netcal's
``ECE``/``MCE`` as the reference) are rebuilt here with a fixed generator; logits go
through a sigmoid first since this library takes probabilities.
"""

from __future__ import annotations

import pytest
import reference as ref
import torch
from torchmetrics.classification import BinaryCalibrationError
from torchmetrics.functional.classification import binary_calibration_error

from calib_metrics.functional import calibration_error, calibration_error_ci, uniform_binning


def off_edge_data(n: int, seed: int, n_bins: int, a: float, shift: float):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    q = torch.distributions.Beta(a, a).sample((n,)).to(torch.float64)
    scaled = q * n_bins
    near_edge = (scaled - scaled.round()).abs() < 1e-6
    # Below 1: a q of exactly 1 beside others in the last bin is where the two differ
    # (test_q_equal_one_beside_the_last_bin_is_the_documented_difference).
    q = torch.where(near_edge, q + 1e-5, q).clamp(0, 1 - 1e-7)
    q[0] = 0.0  # the lower edge of the first bin is shared by both conventions
    assert (q < 1).all()
    y = torch.bernoulli((q + shift).clamp(0, 1), generator=g).long()
    return q, y


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize(
    ("n", "n_bins", "a", "shift"),
    [(5000, 15, 0.3, 0.0), (5000, 15, 2.0, 0.08), (777, 15, 0.5, -0.1), (3000, 10, 1.0, 0.03)],
)
def test_uniform_equals_torchmetrics(norm, n, n_bins, a, shift) -> None:
    q, y = off_edge_data(n, seed=n + n_bins, n_bins=n_bins, a=a, shift=shift)
    peer = BinaryCalibrationError(n_bins=n_bins, norm=norm)
    # Feed the peer in several batches, as a training loop would.
    for part in torch.arange(n).chunk(4):
        peer.update(q[part], y[part])
    expected = peer.compute()
    assert expected.dtype == torch.float64
    got = calibration_error(q, y, binning="uniform", n_bins=n_bins, norm=norm, debias=False)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-14)
    # The interval's point estimate is the same number.
    result = calibration_error_ci(
        q,
        y,
        binning="uniform",
        n_bins=n_bins,
        norm=norm,
        n_samples=10,
        generator=torch.Generator().manual_seed(0),
        debias=False,
        interval="paper",
    )
    torch.testing.assert_close(result.error, expected, rtol=1e-12, atol=1e-14)


def test_parity_holds_for_float32_input_in_our_float64_path() -> None:
    # Widening float32 values to float64 before handing them to torchmetrics gives the
    # float64 answer; ours must give it straight from the float32 input.
    q, y = off_edge_data(4000, seed=1, n_bins=15, a=0.3, shift=0.02)
    q32 = q.float()
    q32 = torch.where(((q32.double() * 15 - (q32.double() * 15).round()).abs() < 1e-6), 0.5, q32)
    peer = BinaryCalibrationError(n_bins=15, norm="l2")
    peer.update(q32.double(), y)
    got = calibration_error(q32, y, binning="uniform", n_bins=15, debias=False)
    torch.testing.assert_close(got, peer.compute(), rtol=1e-12, atol=1e-14)


def test_float32_on_an_inner_edge_lands_where_torchmetrics_puts_it() -> None:
    # float32(0.7) = 0.69999999 equals the float32 edge, so it opens bin 7 in torchmetrics;
    # compared with float64 edges it fell in bin 6 with 0.65 (l1 0.175 instead of 0.475).
    preds, target = torch.tensor([0.65, 0.7]), torch.tensor([0, 1])
    expected = binary_calibration_error(preds, target, n_bins=10, norm="l1")
    got = calibration_error(preds, target, binning="uniform", n_bins=10, norm="l1", debias=False)
    assert got.item() == pytest.approx(0.475, abs=1e-7)
    torch.testing.assert_close(got.float(), expected)
    assert uniform_binning(preds, target, 10).count.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n_bins", [10, 15, 20, 100])
def test_every_grid_value_k_over_n_is_binned_as_in_torchmetrics(dtype, n_bins) -> None:
    # Values k/n of every grid n in {10, 15, 20, 100} (q < 1), many on inner edges of
    # n_bins; the labels alternate so that a misplaced value changes the error.
    grid = torch.cat([torch.arange(n, dtype=torch.float64) / n for n in (10, 15, 20, 100)])
    q = grid.to(dtype)
    y = torch.arange(q.numel()) % 2
    for norm in ("l1", "l2", "max"):
        expected = binary_calibration_error(q, y, n_bins=n_bins, norm=norm)
        got = calibration_error(q, y, binning="uniform", n_bins=n_bins, norm=norm, debias=False)
        # float32 inputs: torchmetrics sums in float32, hence the tolerance.
        torch.testing.assert_close(got, expected.double(), rtol=1e-6, atol=1e-6)
    edges = torch.linspace(0, 1, n_bins + 1, dtype=dtype)
    peer_bins = torch.bucketize(q, edges, right=True) - 1
    ours = uniform_binning(q, y, n_bins)
    assert ours.count.tolist() == torch.bincount(peer_bins).double()[peer_bins.unique()].tolist()


def test_q_equal_one_is_the_documented_difference() -> None:
    # torchmetrics gives q = 1 a phantom bin of its own; here it joins the last bin.
    q = torch.tensor([0.95, 1.0], dtype=torch.float64)
    y = torch.tensor([0, 1])
    assert binary_calibration_error(q, y, n_bins=10, norm="l1").item() == pytest.approx(0.475)
    got = calibration_error(q, y, binning="uniform", n_bins=10, norm="l1", debias=False)
    assert got.item() == pytest.approx(abs(0.975 - 0.5))


def _pairs_with_ones(last_bin_labels: str, seed: int = 0):
    """300 pairs below 0.9, 100 in the last of 10 bins, [0.9, 1), and 50 of q = 1 whose
    labels are half 1 (their gap, mean q - mean y, about +0.5); the last bin's gap is
    negative ("all 1"), positive ("overconfident") or there is no last bin ("empty")."""
    g = torch.Generator().manual_seed(seed)
    low = torch.rand(300, generator=g, dtype=torch.float64) * 0.9
    last = 0.9 + 0.0999 * torch.rand(100, generator=g, dtype=torch.float64)
    if last_bin_labels == "empty":
        last = last[:0]
    ones = torch.ones(50, dtype=torch.float64)
    y_last = torch.ones_like(last)
    if last_bin_labels == "overconfident":
        y_last = torch.bernoulli(last - 0.15, generator=g)
    q = torch.cat([low, last, ones])
    y = torch.cat([torch.bernoulli(low, generator=g), y_last, (torch.arange(50) % 2).double()])
    return q, y


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("last_bin_labels", ["all 1", "overconfident", "empty"])
def test_q_equal_one_beside_the_last_bin_is_the_documented_difference(
    norm, last_bin_labels
) -> None:
    """docs/measures.md: torchmetrics bins q = 1 beyond the last edge; where the last bin
    holds other pairs too, ours (q = 1 in the last bin, as the float64 brute force) is
    never larger, l2 and max differ, and l1 differs when the two parts' gaps have
    opposite signs. q = 1 alone in the last bin gives the same bins, and equality."""
    q, y = _pairs_with_ones(last_bin_labels)
    got = calibration_error(q, y, binning="uniform", n_bins=10, norm=norm, debias=False).item()
    assert got == pytest.approx(ref.error(ref.uniform_bins(q, y, 10), norm), rel=1e-12)
    peer = binary_calibration_error(q, y.long(), n_bins=10, norm=norm).item()
    differs = last_bin_labels == "all 1" or (last_bin_labels != "empty" and norm != "l1")
    if differs:
        assert got < peer - 0.01
    else:
        assert got == pytest.approx(peer, rel=1e-12)


def _torchmetrics_binary_cases():
    """torchmetrics' binary inputs 1, 2, 4, 5 (probs, logits, ×EXTRA_DIM), as probabilities."""
    g = torch.Generator().manual_seed(42)
    batches, size, extra = 4, 32, 3
    probs = torch.rand(batches, size, generator=g)
    logits = (lambda u: (u / (1 - u)).log())(torch.rand(batches, size, generator=g))
    probs_x = torch.rand(batches, size, extra, generator=g)
    logits_x = (lambda u: (u / (1 - u)).log())(torch.rand(batches, size, extra, generator=g))
    cases = {}
    for name, preds in [("probs", probs), ("logits", logits), ("multidim-probs", probs_x)]:
        cases[name] = preds
    cases["multidim-logits"] = logits_x
    out = []
    for name, preds in cases.items():
        target = torch.randint(2, preds.shape, generator=g)
        q = preds.sigmoid() if "logits" in name else preds
        assert (q < 1).all()  # no phantom bin of torchmetrics' in its own cases
        out.append(pytest.param(q, target, id=name))
    return out


@pytest.mark.parametrize(("preds", "target"), _torchmetrics_binary_cases())
@pytest.mark.parametrize("n_bins", [10, 15, 20])
@pytest.mark.parametrize("norm", ["l1", "max"])
def test_torchmetrics_binary_cases(preds, target, n_bins, norm) -> None:
    netcal = pytest.importorskip("netcal.metrics", reason="netcal is torchmetrics' reference")
    reference = (netcal.ECE if norm == "l1" else netcal.MCE)(n_bins).measure(
        preds.double().numpy().ravel(), target.numpy().ravel()
    )
    got = calibration_error(
        preds, target, binning="uniform", n_bins=n_bins, norm=norm, debias=False
    )
    assert got.item() == pytest.approx(reference, abs=1e-7)
    # The class metric, fed batch by batch as torchmetrics' tester does.
    peer = BinaryCalibrationError(n_bins=n_bins, norm=norm)
    for p, t in zip(preds, target):
        peer.update(p, t)
    assert got.item() == pytest.approx(peer.compute().item(), abs=1e-6)
