"""Uniform binning equals torchmetrics' BinaryCalibrationError (l1, l2, max) in float64.

torchmetrics (``_ce_compute``) uses bins ``bucketize(q, linspace(0, 1, n + 1), right=True)
- 1`` and, for ``norm="l2"``, sqrt(Σ prop_i (acc_i − conf_i)²): the same bins and the same
RMS convention as ours. The data hold no q on an inner bin edge, where float rounding of
the edges decides the bin, and no q == 1, to which torchmetrics gives a bin of its own.
"""

from __future__ import annotations

import pytest
import torch
from torchmetrics.classification import BinaryCalibrationError

from calib_metrics.functional import calibration_error, calibration_error_ci


def off_edge_data(n: int, seed: int, n_bins: int, a: float, shift: float):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    q = torch.distributions.Beta(a, a).sample((n,)).to(torch.float64)
    scaled = q * n_bins
    near_edge = (scaled - scaled.round()).abs() < 1e-6
    q = torch.where(near_edge, q + 1e-5, q).clamp(0, 1 - 1e-7)
    q[0] = 0.0  # the lower edge of the first bin is shared by both conventions
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
    got = calibration_error(q, y, binning="uniform", n_bins=n_bins, norm=norm)
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
    got = calibration_error(q32, y, binning="uniform", n_bins=15)
    torch.testing.assert_close(got, peer.compute(), rtol=1e-12, atol=1e-14)
