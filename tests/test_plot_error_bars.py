"""The reliability diagram's error bars use each bin's effective sample size, as the
estimator does: wider for correlated labels (``groups=``), and a cut tie group counted at
its share (:mod:`calib_metrics.functional.ties`)."""

import math
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

from calib_metrics.functional import calibration_error_ci
from calib_metrics.functional.intervals import effective_samples
from calib_metrics.plot import reliability_diagram
from calib_metrics.plot_panels import reliability_panels


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
    # The per-class panels (classwise --plot) draw the same bars: they had used the raw
    # counts, half as wide here.
    fig, axes = reliability_panels({"class 0": [result]}, interval="groups", debias=True)
    widths, expected = _unclipped(result, _bar_half_widths(axes[0]), _expected(result))
    plt.close(fig)
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


def test_classwise_bins_carry_each_class_effective_sample_size():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(3000, 3, generator=g, dtype=torch.float64)
    probs = torch.softmax(logits, -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    groups = torch.arange(3000) // 30
    options = {"bin_size": 300, "n_samples": 20, "generator": g, "groups": groups}
    combined = calibration_error_ci(probs, target, mode="classwise", **options)
    per_class = [
        calibration_error_ci(probs[:, c], (target == c).long(), **options) for c in range(3)
    ]
    pred = torch.cat([r.bins.pred_mean for r in per_class])
    samples = torch.cat([effective_samples(r.bins) for r in per_class])
    order = torch.argsort(pred, stable=True)
    assert torch.equal(combined.bins.pred_mean, pred[order])
    assert torch.allclose(effective_samples(combined.bins), samples[order], rtol=1e-12)
    assert not torch.allclose(samples, torch.cat([r.bins.count for r in per_class]))


def test_one_bare_bin_has_its_count_as_effective_sample_size():
    from calib_metrics.functional.binning import Bins
    from calib_metrics.functional.ties import tie_runs

    t = torch.tensor
    assert tie_runs(t([0.1]), t([0.5])).tolist() == [0]
    bins = Bins(t([0.5], dtype=torch.float64), t([0.5], dtype=torch.float64), t([2.0]).double())
    assert effective_samples(bins).tolist() == [2.0]


def test_a_label_without_an_interval_says_so() -> None:
    # Five pairs cannot be resampled: the interval is NaN, whose whiskers had been drawn
    # as 0 — an empty row that read as "known exactly".
    from calib_metrics.plot import per_label_errors

    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    with pytest.warns(UserWarning):
        few = calibration_error_ci(q[:5], y[:5])
    fig, ax = per_label_errors({"few": few, "many": calibration_error_ci(q, y, n_samples=100)})
    assert [t.get_text() for t in ax.texts] == ["no interval"]
    plt.close(fig)


def test_a_diagram_without_an_interval_names_no_level() -> None:
    # Two pairs: "CalibErr 0.0000, no interval", then "95% interval · 1 bin · N=2" had
    # named the level of an interval never computed.
    with pytest.warns(UserWarning):
        none = calibration_error_ci(torch.tensor([0.2, 0.9]), torch.tensor([0.0, 1.0]))
    fig, ax = reliability_diagram(none, interval="pairs", debias=True)
    first, second = ax.get_title().splitlines()
    assert first.endswith("no interval") and second == "1 bin · N=2"
    plt.close(fig)


def _marker_lines(ax) -> list:
    return [line for line in ax.lines if line.get_marker() not in ("None", "none", "")]


def test_bins_on_the_axes_edges_are_drawn_whole() -> None:
    """q = 1, y = 0 puts the bin in the corner of a logit axis, p̂ = 1 on the top edge:
    clipped to the axes, their markers had shown a quarter or a half."""
    for q, y in (([1.0] * 300, [0.0] * 300), ([0.3] * 20, [1.0] * 20)):
        t = torch.tensor
        r = calibration_error_ci(t(q, dtype=torch.float64), t(y, dtype=torch.float64))
        fig, ax = reliability_diagram(r)
        FigureCanvasAgg(fig).draw()
        x, y = ax.transData.transform(ax.containers[0].lines[0].get_xydata()[0])
        dots = [line for line in _marker_lines(ax) if line.get_markevery() != []]
        assert dots
        for line in dots:  # the marker's whole disc lies inside the clip box
            radius = line.get_markersize() / 2 * fig.dpi / 72
            box = line.get_clip_box()
            assert line.get_clip_path() is None
            assert box.x0 <= x - radius and x + radius <= box.x1
            assert box.y0 <= y - radius and y + radius <= box.y1
        plt.close(fig)


def test_a_zoomed_diagram_keeps_its_marks_inside_the_axes() -> None:
    """Unclipped, the bins' line and markers outside [0.9, 1] × [0.7, 1] had crossed the
    y label, and constrained layout had given up (axes sizes collapsed to zero)."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g)
    r = calibration_error_ci(q, torch.bernoulli(q**1.5, generator=g), bin_size=150, n_samples=20)
    fig, ax = reliability_diagram(r)
    ax.set_xlim(0.9, 1.0)
    ax.set_ylim(0.7, 1.0)
    canvas = FigureCanvasAgg(fig)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        canvas.draw()
    renderer = canvas.get_renderer()
    grow = 3 * fig.dpi / 72  # a marker's radius and edge, no more
    (left, bottom), (right, top) = ax.bbox.get_points() + np.array([[-grow, -grow], [grow, grow]])
    for artist in ax.containers[0].get_children() + _marker_lines(ax):
        extent = artist.get_tightbbox(renderer)
        if extent is not None:
            assert left <= extent.x0 and extent.x1 <= right
            assert bottom <= extent.y0 and extent.y1 <= top
    plt.close(fig)
