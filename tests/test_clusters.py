"""The cluster-robust effective sample size that the debiased square uses with groups=."""

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error_ci, compare_calibration
from calib_metrics.functional.binning import bin_ties
from calib_metrics.functional.calibration import bins_and_index, error_from_bins
from calib_metrics.functional.clusters import grouped_effective_counts
from calib_metrics.functional.intervals import debiased_square, effective_samples
from calib_metrics.functional.ties import effective_counts


def _brute_force(q, y, units, index, bins):
    """n_eff from the dense matrix of each pair's weight a in each bin (the tie rule)."""
    count, freq = bins.count.double(), bins.freq.double()
    n_bins, n = count.numel(), q.numel()
    weight = torch.zeros(n_bins, n, dtype=torch.float64)
    for value in q.unique():
        members = q == value
        met = index[members].unique()
        if met.numel() == 1:
            weight[met[0], members] = 1.0
            continue
        for b in met:
            weight[b, members] = (index[members] == b).sum().double() / members.sum()
    ungrouped = effective_counts(count, bin_ties(bins))
    result = ungrouped.clone()
    one_hot = torch.nn.functional.one_hot(units).double()  # [N, G]
    for b in range(n_bins):
        a = weight[b]
        c, s, kappa = a @ one_hot, (a * y) @ one_hot, (a**2) @ one_hot
        p, nb = freq[b], count[b]
        e2 = ((s - p * c) ** 2).sum()
        k = kappa.sum()
        scale = k - 2 * (c * kappa).sum() / nb + k * (c**2).sum() / nb**2
        met = int((c > 0).sum())
        spread = p * (1 - p)
        if met < 2 or spread <= 0 or scale <= 1e-12 * k:
            continue
        variance = k / nb**2 * e2 / scale
        result[b] = min(1 + spread / variance, 1e15) if variance > 0 else 1e15
    return result


@pytest.mark.parametrize("seed", range(6))
def test_matches_the_dense_definition_with_ties_and_groups(seed):
    g = torch.Generator().manual_seed(seed)
    n = 300
    # Few distinct values: tie groups cut by boundaries and bins wholly inside one.
    grid = [0.05, 0.1, 0.2] if seed % 2 else [0.01]
    q = torch.round(torch.rand(n, generator=g, dtype=torch.float64) / grid[seed % len(grid)])
    q = (q * grid[seed % len(grid)]).clamp(0, 1)
    q[: n // 3] = 0.0  # a large tie group spanning several bins
    y = torch.bernoulli(q.clamp(0.05, 0.95), generator=g)
    units = torch.randint(0, 25, (n,), generator=g)
    units = torch.unique(units, return_inverse=True)[1]
    bins, index = bins_and_index(q, y, binning="adaptive", bin_size=20, n_bins=15)
    got = grouped_effective_counts(q, y, units, index, bins)
    want = _brute_force(q, y, units, index, bins)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


def test_singleton_groups_give_the_ungrouped_counts():
    g = torch.Generator().manual_seed(1)
    q = torch.rand(5000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    bins, index = bins_and_index(q, y, binning="adaptive", bin_size=70, n_bins=15)
    got = grouped_effective_counts(q, y, torch.arange(5000), index, bins)
    torch.testing.assert_close(got, bins.count.double(), rtol=1e-9, atol=1e-9)


def _clustered(seed: int, n: int = 10000, size: int = 20):
    """Calibrated pairs in groups of ``size`` with nearby q (so a group shares a bin) and
    labels correlated inside the group (Gaussian copula, ρ = 0.5)."""
    g = torch.Generator().manual_seed(seed)
    groups = torch.arange(n) // size
    centre = torch.rand(n // size, generator=g, dtype=torch.float64)[groups]
    q = (centre + 0.002 * torch.rand(n, generator=g, dtype=torch.float64)).clamp(0, 1)
    shared = torch.randn(n // size, generator=g, dtype=torch.float64)[groups]
    z = 0.5**0.5 * shared + 0.5**0.5 * torch.randn(n, generator=g, dtype=torch.float64)
    y = (torch.special.ndtr(z) < q).double()
    return q, y, groups


def test_debiased_square_is_unbiased_for_correlated_groups():
    # The ungrouped term p(1 − p)/(n − 1) under-states a bin's variance when its pairs
    # come in correlated groups: the debiased square of calibrated data stays positive.
    grouped, ungrouped = [], []
    for seed in range(60):
        q, y, groups = _clustered(seed)
        bins = calibration_error_ci(q, y, groups=groups, bin_size=100, n_samples=2).bins
        gap = bins.pred_mean - bins.freq
        grouped.append(debiased_square(gap, bins.freq, bins.count, effective_samples(bins)))
        ungrouped.append(debiased_square(gap, bins.freq, bins.count))
    for name, values in (("grouped", grouped), ("ungrouped", ungrouped)):
        values = torch.stack(values)
        z = values.mean() / (values.std() / values.numel() ** 0.5)
        if name == "grouped":
            assert abs(z) < 3.5, f"grouped debiased square biased: z = {z:.1f}"
        else:
            assert z > 10, f"the ungrouped term should be biased here: z = {z:.1f}"


def test_every_entry_point_reports_the_grouped_error():
    q, y, groups = _clustered(0)
    result = calibration_error_ci(q, y, groups=groups, n_samples=50)
    assert error_from_bins(result.bins, debias=True) == result.error
    plain = calibration_error_ci(q, y, n_samples=50)
    assert result.error < plain.error  # the correlation the plain term leaves in
    metric = CalibrationError(n_samples=50)
    metric.update(q, y, groups=groups)
    assert metric.compute() == result.error
    assert metric.compute_result().error == result.error
    compared = compare_calibration(q, q.sqrt(), y, groups=groups, n_samples=50)
    assert compared.a.error == result.error
    # The plug-in never reads n_eff: groups leave it alone.
    assert calibration_error_ci(q, y, groups=groups, debias=False, n_samples=50).error == (
        calibration_error_ci(q, y, debias=False, n_samples=50).error
    )
