"""The figures name the interval drawn, as the text does: an overlay of another interval is
refused on a diagram whose title names the first's; a comparison's models carry their
intervals' kind (what was resampled, and the percentile form), which its figures name
(``compare --plot``, its page, ``CalibrationComparison.plot``, the classwise panels);
and a classwise average's bins say they are several classes' own."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from calib_metrics import CalibrationComparison, plot_panels
from calib_metrics.cli import main
from calib_metrics.functional import calibration_error_ci, compare_calibration
from calib_metrics.functional.intervals import IntervalKind, interval_kind
from calib_metrics.plot import reliability_diagram


def _pairs(n: int = 3000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g)


def _multiclass(n: int = 900, classes: int = 3):
    g = torch.Generator().manual_seed(classes)
    probs = (torch.randn(n, classes, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    return torch.softmax(2 * probs.log(), -1), probs, target


@pytest.mark.parametrize(
    "other",
    [{"confidence": 0.9}, {"method": "percentile"}, {"debias": False}],
    ids=["level", "form", "kind"],
)
def test_an_overlay_of_another_interval_is_refused_before_drawing(other) -> None:
    # A 90% interval had been drawn under the title's "95% interval", its bars at ±1.96 se.
    q, y = _pairs()
    first = calibration_error_ci(q, y, n_samples=50)
    second = calibration_error_ci(q, y, n_samples=50, **other)
    _, ax = reliability_diagram(first)
    title, lines, containers = ax.get_title(), len(ax.lines), len(ax.containers)
    with pytest.raises(ValueError, match=r"name different intervals .* draw results of one"):
        reliability_diagram(second, ax=ax, label="m2", color="C1")
    assert (ax.get_title(), len(ax.lines), len(ax.containers)) == (title, lines, containers)


def test_an_overlay_of_the_same_interval_is_drawn() -> None:
    q, y = _pairs()
    _, ax = reliability_diagram(calibration_error_ci(q, y, n_samples=50), label="m1")
    reliability_diagram(calibration_error_ci(q**1.2, y, n_samples=50), ax, label="m2", color="C1")
    assert sum(t.get_text().startswith("m2: CalibErr") for t in ax.get_legend().get_texts()) == 1


def test_an_overlay_given_a_contradicting_setting_is_refused() -> None:
    # A result that carries no kind takes the diagram's; a setting given must agree with it.
    q, y = _pairs()
    _, ax = reliability_diagram(calibration_error_ci(q, y, n_samples=50))
    bare = calibration_error_ci(q, y, n_samples=50)._replace()  # carries no kind
    reliability_diagram(bare, ax, label="same", color="C1")
    with pytest.raises(ValueError, match=r"0\.9 contradicts the interval of the diagram"):
        reliability_diagram(bare, ax, label="other", color="C2", confidence=0.9)


def test_a_comparisons_models_carry_their_intervals_kind() -> None:
    q, y = _pairs()
    r = compare_calibration(q.sqrt(), q, y, n_samples=50)
    assert (
        interval_kind(r.a) == interval_kind(r.b) == IntervalKind(0.95, "pairs", True, "percentile")
    )
    plugin = compare_calibration(q.sqrt(), q, y, n_samples=50, debias=False, confidence=0.9)
    assert interval_kind(plugin.a) == IntervalKind(0.9, "pairs", False, "normal")
    sharp, probs, target = _multiclass()
    items = compare_calibration(sharp, probs, target, n_samples=50)
    assert interval_kind(items.a) == IntervalKind(0.95, "items", True, "percentile")
    _, ax = reliability_diagram(items.a)
    # On a line of its own: beside the bins' count it is too long for the diagram's width.
    assert "95% interval: debiased item bootstrap, percentile" in ax.get_title().splitlines()


def test_calibration_comparison_plot_names_the_percentile_interval() -> None:
    q, y = _pairs(2000)
    metric = CalibrationComparison(n_samples=50)
    metric.update(q.sqrt(), q, y)
    _, axes = metric.plot()
    for ax in axes:
        assert "95% interval: debiased pair bootstrap, percentile" in ax.get_title().splitlines()


def test_classwise_average_bins_say_whose_they_are() -> None:
    sharp, probs, target = _multiclass(2000, 4)
    r = compare_calibration(sharp, probs, target, mode="classwise", n_samples=50)
    assert r.a.bins.classes == 4
    assert f"bins of 4 classes, {2000 * 4} pairs>" in repr(r.a)
    assert "bins of" not in repr(calibration_error_ci(*_pairs(), n_samples=50))


def _files(tmp_path: Path) -> tuple[Path, Path]:
    sharp, probs, target = _multiclass()
    for name, p in (("a", sharp), ("b", probs)):
        np.savez(tmp_path / f"{name}.npz", probs=p.numpy(), target=target.numpy())
    return tmp_path / "a.npz", tmp_path / "b.npz"


def test_compare_classwise_panels_draw_and_name_the_printed_intervals(
    tmp_path, capsys, monkeypatch
) -> None:
    # The panels had drawn each model's own pair bootstrap, class by class, named "95%
    # interval: debiased pair bootstrap", beside a text of percentile intervals over items.
    a, b = _files(tmp_path)
    drawn: list = []
    original = plot_panels.reliability_panels

    def recording(results, **kwargs):
        drawn.append(results)
        return original(results, **kwargs)

    monkeypatch.setattr(plot_panels, "reliability_panels", recording)
    page = tmp_path / "page.html"
    argv = ["compare", a, b, "--mode", "classwise", "--samples", "50", "--html", page]
    assert main([str(v) for v in argv]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "paired bootstrap over items (50 draws, percentile intervals)" in header
    named = "titles' [lower, upper]: 95% interval: debiased item bootstrap, percentile"
    assert named in page.read_text(encoding="utf-8")
    assert main([str(v) for v in [*argv[:-2], "--json"]]) == 0
    summary = json.loads(capsys.readouterr().out)
    (results,) = drawn
    for key, k in (("a", 0), ("b", 1)):  # the average's ends are the classes' ends' means
        lower = np.mean([models[k].lower.item() for models in results.values()])
        assert summary[key]["lower"] == pytest.approx(lower, abs=1e-12)


def test_compare_plot_names_the_percentile_interval(tmp_path, capsys, monkeypatch) -> None:
    q, y = _pairs(1000)
    for name, p in (("a", q.sqrt()), ("b", q)):
        np.savetxt(tmp_path / f"{name}.csv", np.stack([p, y], 1), delimiter=",",
                   header="prob,label", comments="")  # fmt: skip
    titles: list = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: titles.extend(
        ax.get_title() for ax in fig.axes))  # fmt: skip
    argv = ["compare", tmp_path / "a.csv", tmp_path / "b.csv", "--samples", "50", "--plot",
            tmp_path / "both.png"]  # fmt: skip
    assert main([str(v) for v in argv]) == 0
    assert "(50 draws, percentile intervals)" in capsys.readouterr().out
    drawn = [t for t in titles if "interval" in t]
    assert len(drawn) == 2
    assert all("95% interval: debiased pair bootstrap, percentile" in t.splitlines() for t in drawn)


def test_a_result_saved_before_its_form_was_kept_is_drawn_with_a_new_one() -> None:
    """A kind without its form (``method`` None, as saved before the form was kept) had
    been refused beside a new result of the same settings, both named alike."""
    from calib_metrics.functional.intervals import drawn_result
    from calib_metrics.plot import per_label_errors

    q, y = _pairs()
    new = calibration_error_ci(q, y, n_samples=50)
    old = drawn_result(tuple(new)[:-1], new.bins, interval_kind(new)._replace(method=None))
    fig, _ = per_label_errors({"A": old, "B": new})
    legend = " ".join(t.get_text() for t in [fig.legends[0].get_title(), *fig.legends[0].texts])
    assert "95% interval: debiased pair bootstrap" in legend
    _, ax = reliability_diagram(old)
    reliability_diagram(new, ax=ax, label="new")  # and the other way round
    _, ax = reliability_diagram(new)
    reliability_diagram(old, ax=ax, label="old")


def test_a_diagram_of_a_result_made_by_hand_takes_an_overlay_that_carries_its_kind() -> None:
    """A hand-made result's title names the settings it was given, which bind no other:
    a real result overlaid on it had been refused, though the reverse order was drawn."""
    from calib_metrics.functional.intervals import CalibrationResult

    q, y = _pairs()
    real = calibration_error_ci(q, y, n_samples=50)
    hand = CalibrationResult(*real)
    for given in ({}, {"confidence": 0.95, "interval": "pairs", "debias": True}):
        _, ax = reliability_diagram(hand, label="hand", **given)
        reliability_diagram(real, ax=ax, label="real")


def test_a_diagram_of_a_result_made_by_hand_still_refuses_another_level() -> None:
    """Its title names a level (and the settings given): an overlay of another level had
    been drawn beneath it, its bars at ±1.64 se under a "95% interval" title."""
    from calib_metrics.functional.intervals import CalibrationResult

    q, y = _pairs()
    hand = CalibrationResult(*calibration_error_ci(q, y, n_samples=50))
    ninety = calibration_error_ci(q, y, n_samples=50, confidence=0.9)
    for first, given in ((hand, {}), (hand, {"interval": "groups"})):
        _, ax = reliability_diagram(first, label="hand", **given)
        with pytest.raises(ValueError, match=r"name different intervals \(95% interval"):
            reliability_diagram(ninety, ax=ax, label="90%")


def test_a_long_interval_heading_gets_a_line_of_its_own() -> None:
    """ "95% interval: debiased group bootstrap, percentile · 479 bins · N=230,208" had run
    into the next panel's title in a figure of four diagrams (docs/img/coref_recalibration)."""
    from calib_metrics.plot import reliability_diagram

    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    result = calibration_error_ci(
        q, torch.bernoulli(q, generator=g), groups=torch.arange(3000) // 10,
        method="percentile", n_samples=100,
    )  # fmt: skip
    _, ax = reliability_diagram(result)
    lines = ax.get_title().splitlines()
    assert "95% interval: debiased group bootstrap, percentile" in lines
    assert max(len(line) for line in lines) <= 62
