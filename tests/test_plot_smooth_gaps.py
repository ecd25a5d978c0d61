"""The smooth curve and its band break off where no prediction lies: with q only at 0.1
and 0.9 they had been drawn as one straight segment across [0.2, 0.8]."""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")

import torch

from calib_metrics.functional import calibration_error_ci, smooth_reliability_curve
from calib_metrics.plot import reliability_diagram

EMPTY = (0.3, 0.7)  # no prediction lies here, nor within the kernel's reach of one


def _bimodal():
    g = torch.Generator().manual_seed(0)
    q = torch.cat([torch.full((300,), 0.1), torch.full((300,), 0.9)]).double()
    y = torch.bernoulli(q, generator=g)
    curve = smooth_reliability_curve(q, y, n_samples=30, generator=g)
    return calibration_error_ci(q, y, n_samples=20), curve


def _inside(x: float) -> bool:
    return EMPTY[0] < x < EMPTY[1]


def test_the_curve_and_its_band_break_where_no_prediction_lies() -> None:
    result, curve = _bimodal()
    _, ax = reliability_diagram(result, smooth=curve, xscale="linear")
    (line,) = [ln for ln in ax.lines if ln.get_label().startswith("smooth curve")]
    x = line.get_xdata().tolist()
    assert any(math.isnan(v) for v in x)
    finite = [v for v in x if not math.isnan(v)]
    assert not any(_inside(v) for v in finite)
    # No segment between two drawn points crosses the empty range.
    for a, b in itertools.pairwise(x):
        if not (math.isnan(a) or math.isnan(b)):
            assert not (a <= EMPTY[0] and b >= EMPTY[1]), (a, b)
    (band,) = [c for c in ax.collections if "band" in c.get_label()]
    paths = band.get_paths()
    assert len(paths) == 2
    assert not any(_inside(v) for p in paths for v in p.vertices[:, 0].tolist())


def test_on_a_logit_axis_the_curve_reaches_both_ends() -> None:
    """A confident model's curve on the automatic logit axis runs to the axis' ends: the
    grid points at 0 and 1 lie past them (ε, 1 − ε) and had been dropped, so the curve
    stopped at 0.005 and 0.995 while 29% of the pairs lay beyond."""
    g = torch.Generator().manual_seed(0)
    z = torch.randn(5000, generator=g, dtype=torch.float64) * 5
    q = torch.sigmoid(z)
    y = torch.bernoulli(torch.sigmoid(0.7 * z), generator=g)
    result = calibration_error_ci(q, y, n_samples=20, generator=g)
    curve = smooth_reliability_curve(q, y, n_samples=30, generator=g)
    _, ax = reliability_diagram(result, smooth=curve)
    assert ax.get_xscale() == "logit"
    lo, hi = ax.get_xlim()
    assert (q < 0.005).any() and (q > 0.995).any()
    (line,) = [ln for ln in ax.lines if ln.get_label().startswith("smooth curve")]
    x = [v for v in line.get_xdata().tolist() if not math.isnan(v)]
    assert min(x) == lo and max(x) == hi
    assert x == sorted(x) and len(set(x)) == len(x)  # no two points drawn at one place
    (band,) = [c for c in ax.collections if "band" in c.get_label()]
    edges = band.get_paths()[0].vertices[:, 0]
    assert edges.min() == lo and edges.max() == hi
