"""The reliability diagram's error bars use each bin's effective sample size, as the
estimator does: wider for correlated labels (``groups=``), and a cut tie group counted at
its share (:mod:`calib_metrics.functional.ties`)."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from calib_metrics.functional import calibration_error_ci
from calib_metrics.functional.intervals import effective_samples
from calib_metrics.plot import reliability_diagram


def _bar_half_widths(ax) -> list[float]:
    """Half the drawn length of each bin's error bar (bars clipped at 0 and 1 excluded)."""
    (container,) = [c for c in ax.containers if hasattr(c, "has_yerr") and c.has_yerr]
    segments = container.lines[2][0].get_segments()
    return [float(abs(s[1][1] - s[0][1]) / 2) for s in segments]


def _expected(result, z: float = 1.959964) -> list[float]:
    bins = result.bins
    samples = effective_samples(bins)
    return [z * math.sqrt(p * (1 - p) / n) for p, n in zip(bins.freq.tolist(), samples.tolist())]


def _unclipped(result, widths, expected):
    keep = [
        i
        for i, (p, e) in enumerate(zip(result.bins.freq.tolist(), expected))
        if p - e > 0 and p + e < 1
    ]
    return [widths[i] for i in keep], [expected[i] for i in keep]


def test_grouped_bars_use_the_cluster_robust_sample_size():
    g = torch.Generator().manual_seed(0)
    q = torch.rand(4000, generator=g, dtype=torch.float64)
    groups = torch.arange(4000) // 40
    shift = torch.randn(100, generator=g, dtype=torch.float64)[groups]
    y = (torch.special.ndtr(shift + 0.5 * torch.randn(4000, generator=g)) < q).double()
    result = calibration_error_ci(q, y, groups=groups, bin_size=400, n_samples=50, generator=g)
    samples = effective_samples(result.bins)
    assert float((samples / result.bins.count).min()) < 0.7  # the groups matter here
    fig, ax = reliability_diagram(result, interval="groups", debias=True)
    widths, expected = _unclipped(result, _bar_half_widths(ax), _expected(result))
    plt.close(fig)
    assert len(widths) >= 5
    assert widths == pytest.approx(expected, rel=1e-6)


def test_a_cut_tie_group_is_counted_at_its_share():
    # 600 pairs tied at 0.5 are cut over three bins of 200 beside 600 untied pairs.
    g = torch.Generator().manual_seed(1)
    q = torch.cat(
        [
            torch.rand(600, generator=g, dtype=torch.float64) * 0.4,
            torch.full((600,), 0.5, dtype=torch.float64),
        ]
    )
    y = torch.bernoulli(q, generator=g)
    result = calibration_error_ci(q, y, bin_size=200, n_samples=50, generator=g)
    samples = effective_samples(result.bins)
    assert float((samples - result.bins.count).abs().max()) > 1  # the ties matter here
    fig, ax = reliability_diagram(result, interval="pairs", debias=True)
    widths, expected = _unclipped(result, _bar_half_widths(ax), _expected(result))
    plt.close(fig)
    assert widths == pytest.approx(expected, rel=1e-6)
