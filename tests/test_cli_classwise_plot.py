"""``--mode classwise --plot``: one reliability diagram per class (evaluate and compare
alike), never one diagram of every class's bins pooled; at most 12 classes drawn."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics import plot_panels
from calib_metrics.cli import main
from calib_metrics.functional import calibration, calibration_error_ci
from calib_metrics.functional.multiclass import pair_sets
from calib_metrics.plot_panels import MAX_CLASS_PANELS


@pytest.fixture
def drawn(monkeypatch) -> list:
    """Every per-class figure the command draws: (fig, axes)."""
    figures: list = []
    original = plot_panels.reliability_panels

    def recording(*args, **kwargs):
        fig, axes = original(*args, **kwargs)
        figures.append((fig, axes))
        return fig, axes

    monkeypatch.setattr(plot_panels, "reliability_panels", recording)
    return figures


def _models(tmp_path: Path, n_classes: int, n: int, counts: list[int] | None = None):
    """Model a (sharpened) and b (calibrated) on the same n items of n_classes classes."""
    g = torch.Generator().manual_seed(n_classes)
    probs = (torch.randn(n, n_classes, generator=g, dtype=torch.float64) * 2).softmax(-1)
    if counts is None:
        target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    else:  # class c is the label of exactly counts[c] items
        target = torch.repeat_interleave(torch.arange(n_classes), torch.tensor(counts))
    sharp = torch.softmax(2 * probs.log(), -1)
    for name, p in (("a", sharp), ("b", probs)):
        np.savez(tmp_path / f"{name}.npz", probs=p.numpy(), target=target.numpy())
    return tmp_path / "a.npz", tmp_path / "b.npz", sharp, probs, target


def _run(capsys, *argv) -> dict:
    assert main([str(a) for a in [*argv, "--samples", "50", "--json"]]) == 0
    return json.loads(capsys.readouterr().out)


def _bins_drawn(ax) -> list[tuple[list[float], list[float]]]:
    """Each model's bins in a panel: the (x, y) of its error-bar line, in drawing order."""
    return [
        (c.lines[0].get_xdata().tolist(), c.lines[0].get_ydata().tolist()) for c in ax.containers
    ]


def _class_bins(probs, target) -> list:
    sets = pair_sets(probs, target, "classwise")
    return [calibration_error_ci(q, y, n_samples=10).bins for q, y, _ in sets]


def test_evaluate_draws_one_panel_per_class(tmp_path, capsys, drawn) -> None:
    a, _, sharp, _, target = _models(tmp_path, 3, 900)
    png = tmp_path / "classes.png"
    summary = _run(capsys, "evaluate", a, "--mode", "classwise", "--plot", png)
    assert png.is_file() and summary["plot_classes"] == [0, 1, 2]
    ((fig, axes),) = drawn
    assert len(axes) == len(fig.axes) == 3
    errors = []
    for c, (ax, bins) in enumerate(zip(axes, _class_bins(sharp, target), strict=True)):
        title = ax.get_title().splitlines()
        positives = int((target == c).sum())
        assert title[0].startswith(f"class {c} · {positives:,} positives")
        assert title[1].startswith("CalibErr ")
        errors.append(float(title[1].split()[1]))
        ((x, y),) = _bins_drawn(ax)  # one model: one set of bins, this class's alone
        assert y == pytest.approx(bins.freq.tolist(), abs=1e-12)
        assert len(x) == bins.count.numel()
    # The classwise error is the mean of the panels' errors (4 decimals in the titles).
    assert summary["calib_err"] == pytest.approx(sum(errors) / 3, abs=1e-4)
    # The legend's heading names the titles' interval: the whiskers are the bins' ±1.96 se
    # (its entries), and it had said "whiskers: 95% interval: debiased pair bootstrap".
    legend = fig.legends[0]
    assert legend.get_title().get_text() == (
        "titles' [lower, upper]: 95% interval: debiased pair bootstrap"
    )
    assert any("bins (±1.96 se)" in t.get_text() for t in legend.get_texts())


def test_compare_overlays_both_models_in_each_class_panel(tmp_path, capsys, drawn) -> None:
    a, b, sharp, probs, target = _models(tmp_path, 3, 900)
    png = tmp_path / "both.png"
    summary = _run(capsys, "compare", a, b, "--mode", "classwise", "--plot", png)
    assert png.is_file() and summary["plot_classes"] == [0, 1, 2]
    ((fig, axes),) = drawn
    assert len(axes) == 3
    per_model = _class_bins(sharp, target), _class_bins(probs, target)
    for c, ax in enumerate(axes):
        title = ax.get_title().splitlines()
        assert title[0].startswith(f"class {c} ·")
        assert title[1].startswith("a: CalibErr ") and title[2].startswith("b: CalibErr ")
        drawn_bins = _bins_drawn(ax)
        assert [line.get_color() for line in (k.lines[0] for k in ax.containers)] == ["C0", "C1"]
        for (_, y), bins in zip(drawn_bins, (per_model[0][c], per_model[1][c]), strict=True):
            assert y == pytest.approx(bins.freq.tolist(), abs=1e-12)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    # Each model by its key and its file as given, as the page and compare --plot name it.
    from calib_metrics.report import FIGURE_NAME_CHARS, model_title

    named = [model_title(key, str(f), FIGURE_NAME_CHARS) for key, f in (("a", a), ("b", b))]
    assert legend[1:] == [f"{named[0]}: bins (±1.96 se)", f"{named[1]}: bins (±1.96 se)"]


def test_many_classes_draw_the_most_frequent_twelve(tmp_path, capsys, drawn) -> None:
    counts = [30, 5, 40, 6, 50, 60, 7, 70, 80, 90, 100, 110, 120, 130, 8]  # 15 classes
    a, b, *_ = _models(tmp_path, len(counts), sum(counts), counts)
    summary = _run(capsys, "compare", a, b, "--mode", "classwise", "--plot", tmp_path / "m.png")
    frequent = sorted(sorted(range(15), key=lambda c: -counts[c])[:MAX_CLASS_PANELS])
    assert MAX_CLASS_PANELS == 12 and summary["plot_classes"] == frequent
    ((fig, axes),) = drawn
    assert [ax.get_title().split(" ·")[0] for ax in axes] == [f"class {c}" for c in frequent]
    assert "12 of 15 classes drawn: the most frequent labels" in fig._suptitle.get_text()


def test_evaluate_classwise_smooth_curves_per_class(tmp_path, capsys, drawn) -> None:
    a, *_ = _models(tmp_path, 3, 900)
    argv = ("evaluate", a, "--mode", "classwise", "--plot", tmp_path / "s.png", "--plot-smooth")
    _run(capsys, *argv)
    ((_, axes),) = drawn
    for ax in axes:
        bands = [c.get_label() for c in ax.collections if not c.get_label().startswith("_")]
        assert bands == ["a.npz: 95% band of the σ-smoothed curve"]
        assert ", smECE " in ax.get_title().splitlines()[1]


def test_compare_top_label_smooth_curve_is_the_top_label_one(tmp_path, capsys, monkeypatch):
    from calib_metrics import plot
    from calib_metrics.functional import smooth_reliability_curve

    smooth = []
    original = plot.reliability_diagram

    def recording(*args, **kwargs):
        smooth.append(kwargs.get("smooth"))
        return original(*args, **kwargs)

    monkeypatch.setattr(plot, "reliability_diagram", recording)
    a, b, sharp, _, target = _models(tmp_path, 3, 600)
    argv = ("compare", a, b, "--mode", "top_label", "--plot", tmp_path / "t.png", "--plot-smooth")
    _run(capsys, *argv)
    want = smooth_reliability_curve(
        sharp, target, mode="top_label", n_samples=200,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert torch.allclose(smooth[0].curve, want.curve, equal_nan=True)


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_html_report_shows_the_class_panels(tmp_path, capsys, drawn, command) -> None:
    a, b, *_ = _models(tmp_path, 3, 900)
    page = tmp_path / "report.html"
    models = [a] if command == "evaluate" else [a, b]
    summary = _run(capsys, command, *models, "--mode", "classwise", "--html", page)
    assert summary["plot_classes"] == [0, 1, 2] and "plot" not in summary
    ((_, axes),) = drawn
    assert len(axes) == 3
    html = page.read_text()
    figure = html[
        html.index('<section id="diagrams">') : html.index(
            "</section>", html.index('<section id="diagrams">')
        )
    ]
    assert figure.count("<svg") == 1 and "their bins are never pooled" in figure
    for c in range(3):
        assert f">class {c} · " in figure
    assert figure.count(">a: CalibErr ") == (3 if command == "compare" else 0)


def test_classwise_intervals_are_drawn_once_and_shown_alike(tmp_path, capsys, monkeypatch):
    # --mode classwise --html --plot had drawn every class's interval three times: for the
    # average, again for the page's per-class table, and again for the panels, whose
    # intervals (drawn for the 12 most frequent of 15 classes only) differed from the table's.
    import calib_metrics.functional as functional

    counts = [40 + 10 * c for c in range(15)]
    a, _, sharp, _, target = _models(tmp_path, 15, sum(counts), counts)
    calls = []
    original = functional.calibration_error_ci

    def counting(*args, **kwargs):
        calls.append(kwargs.get("mode"))
        return original(*args, **kwargs)

    # Both names: the command's own calls and classwise_results' per-class ones.
    monkeypatch.setattr(functional, "calibration_error_ci", counting)
    monkeypatch.setattr(calibration, "calibration_error_ci", counting)
    shown: dict = {}
    original_panels = plot_panels.reliability_panels

    def recording(results, **kwargs):
        shown.update(results)
        return original_panels(results, **kwargs)

    monkeypatch.setattr(plot_panels, "reliability_panels", recording)
    summary = _run(capsys, "evaluate", a, "--mode", "classwise", "--html",
                   tmp_path / "page.html", "--plot", tmp_path / "classes.png")  # fmt: skip
    assert len(calls) == 15
    g = torch.Generator().manual_seed(0)
    library = original(sharp, target, mode="classwise", n_samples=50, generator=g)
    assert summary["calib_err"] == library.error.item()
    assert len(shown) == MAX_CLASS_PANELS
    for name, (result,) in shown.items():
        table = summary["per_label"][name]
        assert (table["lower"], table["upper"]) == (result.lower.item(), result.upper.item())
