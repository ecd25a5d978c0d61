"""A result that carries its interval's settings is drawn with them by every caller that
passes none of its own (R8): a metric's earlier result, a thesis figure of a 90% result;
and a bad setting is refused as bad, not as a contradiction."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import reliability_diagram


def _pairs(n: int = 400):
    g = torch.Generator().manual_seed(3)
    p = torch.rand(n, generator=g, dtype=torch.float64)
    return p, torch.bernoulli(p, generator=g), torch.arange(n) // 10


def test_a_metric_draws_an_earlier_result_by_its_own_interval() -> None:
    """The state's interval (pairs, after a reset) had been passed for a result drawn
    over groups, which the diagram now refuses: "interval='pairs' contradicts"."""
    p, y, groups = _pairs()
    metric = CalibrationError(n_samples=50)
    metric.update(p, y, groups=groups)
    grouped = metric.compute_result()
    metric.reset()
    metric.update(p, y)
    metric.compute_result()
    _, ax = metric.plot(grouped)
    assert "group bootstrap" in ax.get_title()


@pytest.mark.parametrize(
    "options", [{"average": "none"}, {"average": "macro"}, {"mode": "classwise"}]
)
def test_a_metric_draws_earlier_class_results_by_their_own_interval(options) -> None:
    """Per-class bars were passed the state's interval (pairs, after a reset) for results
    drawn over groups, and refused them ("interval='pairs' contradicts"); classwise
    panels were titled with it, as a pair bootstrap."""
    g = torch.Generator().manual_seed(4)
    probs = torch.softmax(2 * torch.randn(600, 3, generator=g, dtype=torch.float64), -1)
    target = torch.multinomial(probs, 1, generator=g)[:, 0]
    metric = CalibrationError(num_classes=3, n_samples=50, **options)
    classwise = metric.mode == "classwise"
    results = metric.compute_class_results if classwise else metric.compute_result
    metric.update(probs, target, groups=torch.arange(600) // 10)
    grouped = results()
    metric.reset()
    metric.update(probs, target)
    results()
    fig, _ = metric.plot(grouped)
    legend = fig.legends[0].get_title().get_text()
    assert legend.endswith("95% interval: debiased group bootstrap")


def _interval_line(fig, ax) -> str:
    """The line naming the interval: a diagram's title's last, or a legend's title."""
    if fig.legends:
        return fig.legends[0].get_title().get_text()
    return ax.get_title().splitlines()[-1]


@pytest.mark.parametrize(
    "options", [{}, {"num_classes": 3, "average": "none"}, {"num_classes": 3, "mode": "classwise"}]
)
def test_a_result_made_by_hand_is_not_named_by_the_state_since(options) -> None:
    """A result that carries no kind, over pairs, had been titled a group bootstrap once
    the state held groups: the guess of what the state would draw now, not what the
    result resampled. Only what compute_result() returned last names its draw."""
    from calib_metrics.functional import CalibrationResult

    g = torch.Generator().manual_seed(4)
    probs = torch.softmax(2 * torch.randn(600, 3, generator=g, dtype=torch.float64), -1)
    target = torch.multinomial(probs, 1, generator=g)[:, 0]
    if "num_classes" not in options:
        probs, target = probs[:, 0], (target == 0).double()
    metric = CalibrationError(n_samples=50, **options)
    classwise = metric.mode == "classwise"
    results = metric.compute_class_results if classwise else metric.compute_result
    metric.update(probs, target)
    pairs = results()
    bare = [CalibrationResult(*r) for r in pairs] if isinstance(pairs, list) else None
    bare = CalibrationResult(*pairs) if bare is None else bare
    metric.reset()
    metric.update(probs, target, groups=torch.arange(600) // 10)
    last = results()
    line = _interval_line(*metric.plot(bare))
    assert "95% interval" in line and "bootstrap" not in line, line
    assert "debiased group bootstrap" in _interval_line(*metric.plot(last))


def test_a_kind_less_result_is_named_by_a_fixed_interval() -> None:
    # interval= is this metric's own setting, not a guess from the state: it still names it.
    from calib_metrics.functional import CalibrationResult

    p, y, _ = _pairs()
    metric = CalibrationError(n_samples=50, interval="pairs")
    metric.update(p, y)
    bare = CalibrationResult(*metric.compute_result())
    metric.compute_result()
    _, ax = metric.plot(bare)
    assert "95% interval: debiased pair bootstrap" in ax.get_title()


@pytest.mark.parametrize(
    "other, message",
    [
        ({"confidence": 0.9}, r"computed with confidence=0\.9, this metric's confidence is 0\.95"),
        ({"debias": False}, "computed with debias=False, this metric's debias is True"),
        # Its norm is the difference: it had been refused for the debias that follows.
        ({"norm": "l1"}, "computed with norm='l1', this metric's norm is 'l2'"),
        ({"interval": "paper"}, r"resampled 'paper', which this metric \(interval=None\)"),
    ],
    ids=["level", "debias", "norm", "interval"],
)
def test_a_result_of_another_estimators_settings_is_refused_by_name(other, message) -> None:
    """It had been titled with its own level and debias beside this metric's norm (an l1
    result named as this l2 metric's debiased CalibErr)."""
    p, y, groups = _pairs()
    metric = CalibrationError(n_samples=50)
    metric.update(p, y, groups=groups)
    metric.compute_result()
    theirs = CalibrationError(n_samples=50, **other)
    theirs.update(p, y)
    with warnings.catch_warnings():  # interval='paper' with debias=True warns: not this test's
        warnings.simplefilter("ignore")
        result = theirs.compute_result()
    with pytest.raises(ValueError, match=message):
        metric.plot(result)


@pytest.mark.parametrize("norm", ["l1", "max"])
def test_a_result_of_another_norm_is_refused_by_a_metric_of_its_other_settings(norm) -> None:
    """An l1 result under an l2 metric of debias=False (its level, debias and resampling
    all alike) had been titled as this metric's "CalibErr", not "CalibErr (l1)"."""
    p, y, _ = _pairs()
    metric = CalibrationError(n_samples=50, debias=False)
    metric.update(p, y)
    theirs = CalibrationError(n_samples=50, norm=norm)
    theirs.update(p, y)
    with pytest.raises(ValueError, match=f"computed with norm='{norm}', this metric's norm is"):
        metric.plot(theirs.compute_result())
    _, ax = theirs.plot(theirs.compute_result())  # its own metric names its norm
    assert ax.get_title().startswith(f"CalibErr ({norm}) ")


def test_a_grouped_result_is_refused_by_a_metric_of_pairs() -> None:
    p, y, groups = _pairs()
    grouped = CalibrationError(n_samples=50)
    grouped.update(p, y, groups=groups)
    metric = CalibrationError(n_samples=50, interval="pairs")
    metric.update(p, y)
    with pytest.raises(ValueError, match=r"resampled 'groups', which this metric \(interval="):
        metric.plot(grouped.compute_result())


def test_a_thesis_figure_of_a_90_percent_result_names_90(tmp_path) -> None:
    """thesis_figure passed its default confidence, 0.95, on: a 90% result raised."""
    from calib_metrics.paper.thesis_figures import Curve, thesis_figure

    p, y, _ = _pairs()
    r = calibration_error_ci(p, y, bin_size=40, n_samples=50, confidence=0.9)
    thesis_figure([("q", [Curve("m", "m", r)])], tmp_path / "f.png", suptitle="s")
    assert (tmp_path / "f.png").stat().st_size > 0


@pytest.mark.parametrize(
    "given, message",
    [({"interval": "bogus"}, "interval must be one of"), ({"debias": "yes"}, "debias")],
)
def test_a_bad_setting_is_refused_as_bad(given, message) -> None:
    p, y, _ = _pairs()
    r = calibration_error_ci(p, y, bin_size=40, n_samples=50)
    with pytest.raises(ValueError, match=message) as caught:
        reliability_diagram(r, **given)
    assert "contradicts" not in str(caught.value)


def test_reliability_diagram_names_the_norm_a_result_carries() -> None:
    """reliability_diagram took norm="l2" by default: an l1 result was titled "CalibErr",
    and norm="max" on it was drawn as "CalibErr (max)". Its carried norm now names it and a
    contradicting norm= is refused, as a contradicting confidence= is."""
    p, y, _ = _pairs()
    l1 = calibration_error_ci(p, y, bin_size=40, n_samples=50, norm="l1")
    _, ax = reliability_diagram(l1)
    assert ax.get_title().startswith("CalibErr (l1) ")
    _, ax = reliability_diagram(l1, norm="l1")  # its own norm, given, is no contradiction
    assert ax.get_title().startswith("CalibErr (l1) ")
    with pytest.raises(ValueError, match="norm='max' contradicts result's error, computed with"):
        reliability_diagram(l1, norm="max")
    hand_made = l1._replace(lower=l1.lower)  # a result made by hand carries no norm
    _, ax = reliability_diagram(hand_made, norm="max")
    assert ax.get_title().startswith("CalibErr (max) ")


def test_an_overlay_of_another_norm_is_refused() -> None:
    """An l1 result overlaid on an l2 diagram of its interval's settings had been drawn
    under the l2 title (its entry "CalibErr", not "CalibErr (l1)")."""
    p, y, _ = _pairs()
    l2 = calibration_error_ci(p, y, bin_size=40, n_samples=50, debias=False)
    l1 = calibration_error_ci(p, y, bin_size=40, n_samples=50, norm="l1")
    _, ax = reliability_diagram(l2, label="a")
    with pytest.raises(ValueError, match="drawn on ax is of a norm='l2' error and this result's"):
        reliability_diagram(l1, ax=ax, label="b")
    _, ax = reliability_diagram(l1, label="a")
    reliability_diagram(l1._replace(lower=l1.lower), ax=ax, label="b")  # hand-made: the drawn
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(text.startswith("b: CalibErr (l1) ") for text in legend), legend
