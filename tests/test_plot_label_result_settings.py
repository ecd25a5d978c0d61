"""per_label_errors names the interval its results carry, as reliability_diagram does, and
refuses a setting that contradicts it, or results of different settings (one legend names
one): it had named its own defaults, "95% interval", beside 90% results."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from calib_metrics.functional import calibration_error_ci, compare_calibration
from calib_metrics.plot import per_label_errors


def _result(seed: int, **options):
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(400, generator=g, dtype=torch.float64)
    y = torch.bernoulli(p, generator=g)
    return calibration_error_ci(p, y, bin_size=40, n_samples=50, generator=g, **options)


def _legend(fig) -> str:
    return fig.legends[0].get_title().get_text()


def test_the_legend_names_the_results_own_interval() -> None:
    results = {
        "a": _result(0, confidence=0.9, debias=False),
        "b": _result(1, confidence=0.9, debias=False),
    }
    fig, _ = per_label_errors(results)
    assert _legend(fig) == "whiskers: 90% interval: pair bootstrap"
    # Settings that agree with the results' are taken.
    fig, _ = per_label_errors(results, confidence=0.9, interval="pairs", debias=False)
    assert _legend(fig) == "whiskers: 90% interval: pair bootstrap"


def test_several_models_name_their_shared_interval() -> None:
    paper = {"interval": "paper", "debias": False}
    rows = {k: [_result(i, **paper), _result(i + 5, **paper)] for i, k in enumerate("xyz")}
    fig, _ = per_label_errors(rows, names=["m", "n"])
    assert _legend(fig) == "whiskers: 95% interval: paper Algorithm 2"


@pytest.mark.parametrize(
    "given, message",
    [
        ({"confidence": 0.95}, r"confidence=0\.95 contradicts the results' intervals, .*0\.9"),
        ({"interval": "groups"}, "interval='groups' contradicts"),
        ({"debias": True}, "debias=True contradicts"),
    ],
)
def test_a_contradicting_setting_is_refused(given, message) -> None:
    results = {
        "a": _result(0, confidence=0.9, debias=False),
        "b": _result(1, confidence=0.9, debias=False),
    }
    with pytest.raises(ValueError, match=message):
        per_label_errors(results, **given)


def test_results_of_different_settings_are_refused_by_name() -> None:
    mixed = {"a": _result(0, confidence=0.9), "b": _result(1)}
    with pytest.raises(ValueError, match=r"results' intervals differ \(90% .*; 95% "):
        per_label_errors(mixed)
    models = {"a": [_result(0), _result(1, interval="paper", debias=False)]}
    with pytest.raises(ValueError, match="results' intervals differ"):
        per_label_errors(models, names=["m", "n"])


def test_a_label_without_an_interval_takes_the_others_settings() -> None:
    """A label of too few pairs has no interval, and carries no settings."""
    g = torch.Generator().manual_seed(4)
    p = torch.rand(5, generator=g, dtype=torch.float64)
    with pytest.warns(UserWarning, match="at least 10 are needed"):
        few = calibration_error_ci(p, torch.bernoulli(p, generator=g), n_samples=50)
    fig, _ = per_label_errors({"a": _result(0, confidence=0.9), "few": few})
    assert _legend(fig) == "whiskers: 90% interval: debiased pair bootstrap"


def test_comparisons_name_the_settings_they_carry() -> None:
    """A comparison's results carry their settings, the percentile form too (they had
    carried none, and the caller's had named the whiskers a normal interval's)."""
    g = torch.Generator().manual_seed(5)
    p = torch.rand(400, generator=g, dtype=torch.float64)
    y = torch.bernoulli(p, generator=g)
    c = compare_calibration(p, (p * 0.9).clamp(0, 1), y, n_samples=50, generator=g)
    fig, _ = per_label_errors({"a": c, "b": c}, interval="pairs", debias=True)
    assert _legend(fig) == "whiskers: 95% interval: debiased pair bootstrap, percentile"
    with pytest.raises(ValueError, match="interval='groups' contradicts"):
        per_label_errors({"a": c}, interval="groups")


def test_the_per_label_charts_and_panels_name_the_norm_their_results_carry() -> None:
    """per_label_errors, reliability_panels and classwise_panels took norm="l2" by default
    and ignored the norm their results carry: an l1 result's axis read "calibration
    error", its panels "CalibErr", and norm="max" renamed it. They now take the carried
    norm, as reliability_diagram does, through the same check."""
    from calib_metrics.plot_panels import classwise_panels, reliability_panels

    l1 = [_result(seed, norm="l1") for seed in (0, 1)]
    _, ax = per_label_errors({"a": l1[0], "b": l1[1]})
    assert ax.get_xlabel() == "calibration error (l1)"
    _, axes = classwise_panels(l1)
    assert axes[0].get_title().splitlines()[1].startswith("CalibErr (l1) ")
    _, axes = reliability_panels({"a": l1, "b": l1}, names=["x", "y"])
    assert axes[0].get_title().splitlines()[1].startswith("x: CalibErr (l1) ")
    # Its own norm, given, is no contradiction; another is refused, as by the diagram.
    _, ax = per_label_errors({"a": l1[0]}, norm="l1")
    assert ax.get_xlabel() == "calibration error (l1)"
    for draw in (
        lambda: per_label_errors({"a": l1[0], "b": l1[1]}, norm="max"),
        lambda: classwise_panels(l1, norm="l2"),
    ):
        with pytest.raises(ValueError, match="contradicts the results' errors, computed with"):
            draw()
    with pytest.raises(ValueError, match="norm='max' contradicts result's error"):
        per_label_errors({"a": l1[0]}, norm="max")
    # Results of two norms cannot share one axis label or legend.
    l2 = _result(2, debias=False, norm="l2")
    l1_plain = _result(3, debias=False, norm="l1")
    with pytest.raises(ValueError, match=r"results' errors differ in norm \('l1', 'l2'\)"):
        per_label_errors({"a": l2, "b": l1_plain})
    with pytest.raises(ValueError, match=r"results' errors differ in norm \('l1', 'l2'\)"):
        classwise_panels([l2], versus=[l1_plain], names=["a", "b"])
    # A result made by hand carries none: the others' norm, or norm= for it alone.
    hand_made = l1[1]._replace(lower=l1[1].lower)
    _, ax = per_label_errors({"a": l1[0], "b": hand_made})
    assert ax.get_xlabel() == "calibration error (l1)"
    _, axes = classwise_panels([hand_made], norm="max")
    assert axes[0].get_title().splitlines()[1].startswith("CalibErr (max) ")
