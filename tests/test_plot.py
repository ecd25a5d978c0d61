"""Figures' content, read back from matplotlib objects (never pixels): axes, titles, legends."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from calib_metrics.functional import (
    calibration_error_ci,
    compare_calibration,
    smooth_reliability_curve,
)
from calib_metrics.functional.intervals import CalibrationResult
from calib_metrics.plot import (
    error_curve,
    interval_label,
    per_label_errors,
    posterior_time_series,
    reliability_diagram,
)


def _pairs(n: int, skewed: bool, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Calibrated pairs: uniform q, or a tagger's (most q far below 0.05)."""
    g = torch.Generator().manual_seed(seed)
    if skewed:
        q = torch.sigmoid(torch.randn(n, generator=g, dtype=torch.float64) * 2.5 - 6)
    else:
        q = torch.rand(n, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g)


@pytest.fixture(scope="module")
def skewed():
    q, y = _pairs(40_000, skewed=True)
    return calibration_error_ci(q, y, n_samples=50, generator=torch.Generator().manual_seed(1))


@pytest.fixture(scope="module")
def uniform():
    q, y = _pairs(4_000, skewed=False)
    return calibration_error_ci(q, y, n_samples=50, generator=torch.Generator().manual_seed(1))


def _count_axis(ax: Axes) -> Axes:
    """The diagram's twin axis that counts pairs (the one sharing ax's x axis)."""
    twins = [a for a in ax.figure.axes if a is not ax and a.get_shared_x_axes().joined(a, ax)]
    assert len(twins) == 1, "the diagram has one count axis"
    return twins[0]


def _legend(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


# --------------------------------------------------------------------------------------
# reliability diagram


def test_diagram_axes_are_labelled_and_counts_have_their_own_axis(uniform) -> None:
    _, ax = reliability_diagram(uniform, xscale="linear")
    assert ax.get_xlabel() == "predicted probability q̂ (bin mean)"
    assert ax.get_ylabel() == "empirical frequency p̂"
    counts = _count_axis(ax)
    assert counts.get_ylabel() == "pairs"  # uniform q: every slice holds about N/20
    assert counts.get_yscale() == "linear"
    heights = [p.get_height() for p in counts.patches]
    assert len(heights) == 20 and sum(heights) == pytest.approx(4000)
    assert "pairs per grey bar (right axis)" in _legend(ax)


def test_count_axis_is_log_scaled_when_counts_span_decades(skewed) -> None:
    # On a linear x axis the first twentieth holds nearly all of the skewed pairs.
    _, ax = reliability_diagram(skewed, xscale="linear")
    counts = _count_axis(ax)
    assert counts.get_yscale() == "log"
    assert counts.get_ylabel() == "pairs (log scale)"
    heights = [p.get_height() for p in counts.patches if p.get_height() > 0]
    assert max(heights) >= 100 * min(heights)
    assert sum(heights) == pytest.approx(40_000)
    assert "pairs per grey bar (right axis, log)" in _legend(ax)


def test_auto_picks_logit_for_skewed_predictions_and_says_so(skewed, uniform) -> None:
    _, ax = reliability_diagram(skewed)
    assert ax.get_xscale() == "logit" and ax.get_yscale() == "linear"
    note = ax.get_title().splitlines()[-1]
    assert note.startswith("logit axes (auto): ")
    assert "of pairs in bins within 0.05 of 0 or 1" in note
    low, high = ax.get_xlim()
    bins = skewed.bins.pred_mean
    assert 0 < low <= bins.min().item() and bins.max().item() <= high < 1
    _, ax = reliability_diagram(uniform)
    assert ax.get_xscale() == "linear" and ax.get_xlim() == (0, 1)
    assert "logit" not in ax.get_title()
    # Asked for explicitly, the scale is used and no note is added.
    _, ax = reliability_diagram(uniform, xscale="logit")
    assert ax.get_xscale() == "logit" and "auto" not in ax.get_title()
    _, ax = reliability_diagram(skewed, xscale="linear")
    assert ax.get_xscale() == "linear"
    with pytest.raises(ValueError, match="xscale must be"):
        reliability_diagram(uniform, xscale="log")


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"interval": "paper", "confidence": 0.9}, "90% interval: paper Algorithm 2"),
        (
            {"interval": "pairs", "debias": True, "confidence": 0.95},
            "95% interval: debiased pair bootstrap",
        ),
        ({"interval": "groups", "confidence": 0.99}, "99% interval: group bootstrap"),
        ({"confidence": 0.8}, "80% interval"),
    ],
)
def test_title_names_the_interval_kind_and_level(uniform, options, expected) -> None:
    # A result made by hand carries no settings: those given name its interval.
    _, ax = reliability_diagram(CalibrationResult(*uniform), title="model", **options)
    lines = ax.get_title().splitlines()
    assert lines[0] == "model"
    assert lines[2].startswith(expected + " · ")
    assert lines[2].endswith("N=4,000")
    assert interval_label(**options) == expected


def test_interval_label_refuses_unknown_settings() -> None:
    with pytest.raises(ValueError, match="interval must be one of"):
        interval_label(0.95, "bootstrap")
    with pytest.raises(ValueError, match="confidence"):
        interval_label(95)
    with pytest.raises(ValueError, match="debias"):
        interval_label(0.95, "pairs", debias="yes")


def test_smooth_curve_and_its_band_are_drawn() -> None:
    q, y = _pairs(3000, skewed=False, seed=3)
    result = calibration_error_ci(q, y, n_samples=50, confidence=0.9)
    curve = smooth_reliability_curve(
        q, y, n_samples=30, confidence=0.9, generator=torch.Generator().manual_seed(0)
    )
    _, ax = reliability_diagram(result, confidence=0.9, smooth=curve, xscale="linear")
    labels = _legend(ax)
    assert "90% band of the σ-smoothed curve" in labels
    assert any(label.startswith("smooth curve (smECE ") for label in labels)
    smooth_line = next(line for line in ax.lines if line.get_label().startswith("smooth"))
    assert len(smooth_line.get_xdata()) > 100
    with pytest.raises(ValueError, match="smooth must be a SmoothCurve"):
        reliability_diagram(result, smooth=(1, 2))


# --------------------------------------------------------------------------------------
# per-label errors (the paper's Figure 4)


def _per_label(n_labels: int, **options) -> dict:
    results = {}
    for k in range(n_labels):
        q, y = _pairs(300, skewed=False, seed=10 + k)
        y = torch.bernoulli(q ** (1 + k / n_labels), generator=torch.Generator().manual_seed(k))
        results[f"L{k:02d}"] = calibration_error_ci(q, y, bin_size=30, n_samples=30, **options)
    return results


def test_fifty_labels_get_fifty_ticks_sorted_by_error() -> None:
    results = _per_label(50, confidence=0.9, groups=torch.arange(300) // 10)
    _, ax = per_label_errors(results)  # the legend names the results' own interval
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ax.get_yticks()) == 50 and sorted(labels) == sorted(results)
    errors = [results[label].error.item() for label in labels]
    assert errors == sorted(errors, reverse=True)
    # The first label is drawn at the top.
    assert ax.get_ylim()[0] > ax.get_ylim()[1]
    (legend,) = ax.figure.legends
    assert legend.get_title().get_text() == "whiskers: 90% interval: debiased group bootstrap"
    assert [t.get_text() for t in legend.get_texts()] == ["CalibErr (model)"]
    _, ax = per_label_errors(results, sort=False)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(results)


def test_paired_comparison_adds_the_difference_panel() -> None:
    results = {}
    for k in range(6):
        q, y = _pairs(400, skewed=False, seed=k)
        sharp = (q + 0.3 * (q - 0.5)).clamp(0, 1)
        results[f"T{k}"] = compare_calibration(
            q, sharp, y, n_samples=50, generator=torch.Generator().manual_seed(k)
        )
    fig, ax = per_label_errors(results, names=("HMM", "CRF"), interval="pairs", debias=True)
    assert len(fig.axes) == 2
    diff = fig.axes[1]
    assert diff.get_xlabel() == "HMM − CRF (paired)"
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()][:2] == ["CalibErr (HMM)", "CalibErr (CRF)"]
    assert legend.get_title().get_text() == (
        "whiskers: 95% interval: debiased pair bootstrap, percentile"  # what they carry
    )
    # One point per label, placed at its difference.
    points = sorted(
        (y, x)
        for line in diff.lines
        if line.get_marker() == "o"
        for x, y in zip(line.get_xdata(), line.get_ydata())
    )
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert [x for _, x in points] == pytest.approx(
        [results[label].difference.item() for label in labels]
    )
    with pytest.raises(ValueError, match="leave ax=None"):
        per_label_errors(results, ax=ax)


def test_several_models_and_bad_inputs() -> None:
    results = _per_label(3)
    rows = {label: [r, r, r] for label, r in results.items()}
    fig, _ = per_label_errors(rows, names=["a", "b", "c"])
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts == ["CalibErr (a)", "CalibErr (b)", "CalibErr (c)"]
    # On a given axes the legend stays on it.
    fig, _ = per_label_errors(rows, names=["a", "b", "c"], ax=Figure().add_subplot())
    assert not fig.legends and fig.axes[0].get_legend() is not None
    with pytest.raises(ValueError, match="names must name all 3"):
        per_label_errors(rows, names=["a"])
    with pytest.raises(ValueError, match="non-empty mapping"):
        per_label_errors({})
    with pytest.raises(ValueError, match="must all be"):
        per_label_errors({"x": 1.0})


# --------------------------------------------------------------------------------------
# event counts per period, and the band over epochs


def test_event_counts_are_steps_with_gold_one_best_and_the_interval_kind() -> None:
    periods = ["2014", "2015", "2016"]
    fig, ax = posterior_time_series(
        periods,
        [0.0, 0.06, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.52, 0.0],
        label="PRK",
        one_best=[0, 0, 0],
        gold=[0, 1, 0],
        interval="normal, over posterior samples",
        confidence=0.9,
    )
    mean = next(line for line in ax.lines if line.get_label() == "PRK posterior mean")
    assert mean.get_drawstyle() == "steps-post"
    # The 2015 count covers 2015's whole width, and nothing leaks into 2014 or 2016.
    assert list(mean.get_xdata()) == [-0.5, 0.5, 1.5, 2.5]
    assert list(mean.get_ydata()) == [0.0, 0.06, 0.0, 0.0]
    best = next(line for line in ax.lines if line.get_label() == "PRK 1-best")
    assert best.get_drawstyle() == "steps-post"
    gold = next(line for line in ax.lines if line.get_label() == "PRK gold")
    assert list(gold.get_ydata()) == [0, 1, 0]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]  # below the plot
    assert "PRK 90% interval: normal, over posterior samples" in legend
    # Zero counts sit above the axis, not on it.
    assert ax.get_ylim()[0] < 0 < ax.get_ylim()[1]
    assert ax.get_ylim()[1] > 1


def test_event_counts_on_a_time_scale_leave_empty_years_as_gaps() -> None:
    # Documents in 2000, 2001 and 2015 only: 2002-2014 is a gap, not a neighbour.
    periods = ["2000", "2001", "2015"]
    spans = [(2000.0, 2001.0), (2001.0, 2002.0), (2015.0, 2016.0)]
    _, ax = posterior_time_series(
        periods, [0.2, 0.0, 0.5], [0.0, 0.0, 0.1], [0.6, 0.0, 0.9],
        label="PRK", one_best=[0, 0, 1], gold=[1, 0, 1], spans=spans,
    )  # fmt: skip
    mean = next(line for line in ax.lines if line.get_label() == "PRK posterior mean")
    assert mean.get_drawstyle() == "steps-post"
    x, y = mean.get_xdata().tolist(), mean.get_ydata().tolist()
    # Each period a step from its start to its end; a NaN breaks the line in the gap.
    nan = [k for k, v in enumerate(x) if math.isnan(v)]
    assert len(nan) == 1 and math.isnan(y[nan[0]])
    assert x[: nan[0]] == [2000.0, 2001.0, 2002.0] and y[: nan[0]] == [0.2, 0.0, 0.0]
    assert x[nan[0] + 1 :] == [2015.0, 2016.0] and y[nan[0] + 1 :] == [0.5, 0.5]
    # The band is one box per run of touching periods, nothing over 2002-2015.
    (band,) = ax.collections
    boxes = [(p.vertices[:, 0].min(), p.vertices[:, 0].max()) for p in band.get_paths()]
    assert sorted(boxes) == [(2000.0, 2002.0), (2015.0, 2016.0)]
    gold = next(line for line in ax.lines if line.get_label() == "PRK gold")
    assert gold.get_xdata().tolist() == [(a + b) / 2 for a, b in spans]
    assert ax.get_xlim() == (2000.0, 2016.0)
    assert ax.get_ylim()[0] < 0 < ax.get_ylim()[1]
    with pytest.raises(ValueError, match="not overlap"):
        posterior_time_series(["a", "b"], [1, 2], [0, 1], [2, 3], spans=[(0, 2), (1, 3)])
    with pytest.raises(ValueError, match="spans has 1 values"):
        posterior_time_series(["a", "b"], [1, 2], [0, 1], [2, 3], spans=[(0, 1)])
    with pytest.raises(ValueError, match="end after it starts"):
        posterior_time_series(["a"], [1], [0], [2], spans=[(1, 1)])


def test_band_over_epochs_has_integer_ticks() -> None:
    epochs = [0, 1, 2]
    _, ax = error_curve(epochs, [0.1, 0.08, 0.07], [0.08, 0.06, 0.05], [0.12, 0.1, 0.09],
                        xlabel="epoch", integer_x=True)  # fmt: skip
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    _, ax = error_curve(epochs, [0.1, 0.08, 0.07], xlabel="epoch")
    assert not all(float(t).is_integer() for t in ax.get_xticks())


def test_error_curve_names_its_band() -> None:
    band = interval_label(0.9, "paper")
    _, ax = error_curve([1, 2], [0.1, 0.08], [0.08, 0.06], [0.12, 0.1], label="k=0.1", band=band)
    assert _legend(ax) == ["k=0.1", "90% interval: paper Algorithm 2"]


def test_count_axis_covers_the_diagram_in_a_grid_of_panels(uniform) -> None:
    fig = Figure(figsize=(10, 5.6), layout="constrained")
    panels = fig.subplots(1, 2)
    for ax in panels:
        reliability_diagram(uniform, ax=ax, title="panel")
    fig.canvas.draw()
    for ax in panels:
        counts = _count_axis(ax)
        assert counts.get_position().bounds == pytest.approx(ax.get_position().bounds)


def _one_result():
    p = torch.rand(300, generator=torch.Generator().manual_seed(0))
    return calibration_error_ci(p, (p > 0.5).float(), bin_size=50, n_samples=50)


def test_per_class_errors_refuses_results_that_do_not_match_the_labels() -> None:
    """One result for two labels drew the first label's bar under the second's name."""
    from calib_metrics.plot import per_class_errors

    r = _one_result()
    with pytest.raises(ValueError, match=r"results\['A'\] holds 1 results for 2 labels"):
        per_class_errors({"A": [r]}, ["x", "y"])
    with pytest.raises(ValueError, match="holds 3 results for 1 labels"):
        per_class_errors({"A": [r, r, r]}, ["x"])
    with pytest.raises(ValueError, match="must be a sequence of CalibrationResults"):
        per_class_errors({"A": r}, ["x"])


def test_per_label_errors_puts_labels_without_an_error_last() -> None:
    r = _one_result()

    def with_error(e):
        return r._replace(error=torch.tensor(e))

    errors = {"d": 0.05, "nan1": float("nan"), "e": 0.1, "b": 0.24, "nan2": float("nan")}
    _, ax = per_label_errors({k: with_error(e) for k, e in errors.items()})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["b", "e", "d", "nan1", "nan2"]


def test_per_label_errors_widens_for_long_label_names() -> None:
    r = _one_result()
    short = per_label_errors({"a": r, "b": r})[0].get_size_inches()[0]
    long = per_label_errors({"a" * 60: r, "b" * 60: r})[0].get_size_inches()[0]
    assert long > short + 3


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: error_curve([1, 2, 3], [0.1, 0.2]), "error has 2 values where x has 3"),
        (lambda: error_curve([1, 2], [0.1, 0.2], [0.05], [0.2, 0.3]), "lower has 1 values"),
        (lambda: posterior_time_series([], [], [], []), "periods is empty"),
        (lambda: posterior_time_series(["a", "b"], [1.0], [0.5], [2.0]), "mean has 1 values"),
    ],
)
def test_curves_of_mismatched_lengths_are_named(call, message) -> None:
    """These failed inside matplotlib ("shapes (3,) and (2,)") or drew silently."""
    with pytest.raises(ValueError, match=message):
        call()


def test_the_band_is_named_at_its_own_level_not_the_diagrams() -> None:
    # A 50% band beside the diagram's default 0.95 had been labelled "95% ... band".
    q, y = _pairs(3000, skewed=False, seed=3)
    curve = smooth_reliability_curve(
        q, y, n_samples=30, confidence=0.5, generator=torch.Generator().manual_seed(0)
    )
    result = calibration_error_ci(q, y, n_samples=50)
    _, ax = reliability_diagram(result, smooth=curve, xscale="linear")
    assert "50% band of the σ-smoothed curve" in _legend(ax)
    assert not [label for label in _legend(ax) if label.startswith("95% band")]
    from calib_metrics.plot_panels import reliability_panels

    fig, _ = reliability_panels({"all": [result]}, smooth={"all": [curve]}, names=["model"])
    bands = [c.get_label() for a in fig.axes for c in a.collections if "band" in c.get_label()]
    assert bands == ["model: 50% band of the σ-smoothed curve"]


def test_reliability_panels_name_smooth_curves_that_do_not_match_the_models() -> None:
    """Two curves for one model failed in zip() ("argument 2 is longer than argument 1")."""
    from calib_metrics.plot_panels import reliability_panels

    with pytest.raises(ValueError, match=r"smooth\['c'\] holds 2 curves for 1 models"):
        reliability_panels({"c": [_one_result()]}, smooth={"c": [None, None]})


def test_the_title_names_the_kind_its_result_carries() -> None:
    # reliability_diagram(calibration_error_ci(q, y), smooth=c) had been titled "95% interval ·
    # 44 bins", its kind unnamed (and a 90% interval called 95%) unless passed again.
    q, y = _pairs(2000, skewed=False)
    g = torch.Generator().manual_seed(0)
    smooth = smooth_reliability_curve(q, y, n_samples=20, generator=g)
    default = calibration_error_ci(q, y, n_samples=50, generator=g)
    _, ax = reliability_diagram(default, smooth=smooth, xscale="linear")
    assert ax.get_title().splitlines()[1].startswith("95% interval: debiased pair bootstrap · ")
    paper = calibration_error_ci(
        q, y, n_samples=50, generator=g, interval="paper", debias=False, confidence=0.9
    )
    _, ax = reliability_diagram(paper, xscale="linear")
    assert ax.get_title().splitlines()[1].startswith("90% interval: paper Algorithm 2 · ")
    # A setting given is checked against the result's, not taken over it (confidence=0.8
    # had titled this 90% interval 80%), and one given leaves the others the result's.
    with pytest.raises(ValueError, match=r"confidence=0\.8 contradicts .* confidence=0\.9"):
        reliability_diagram(paper, xscale="linear", confidence=0.8)
    _, ax = reliability_diagram(default, xscale="linear", interval="pairs")
    assert ax.get_title().splitlines()[1].startswith("95% interval: debiased pair bootstrap · ")
