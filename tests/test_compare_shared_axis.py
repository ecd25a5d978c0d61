"""Two models' reliability diagrams side by side share one x axis: ``compare --plot``, the
compare page and ``CalibrationComparison.plot`` had drawn a sharp model's panel logit
(its scores piled at 0 and 1) beside a soft model's linear one, as ``recalibrate --plot``
no longer did, so the two panels read unlike."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
import torch

from calib_metrics import CalibrationComparison, report
from calib_metrics.cli import main
from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import shared_x_axis
from calib_metrics.plot._counts import DIAGONAL

matplotlib.use("Agg")
NOTE = "logit x axes (auto, for both panels)"
S = torch.randn(2000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
Y = torch.bernoulli(torch.sigmoid(S), generator=torch.Generator().manual_seed(1))
SHARP, SOFT = torch.sigmoid(8 * S), torch.sigmoid(0.5 * S)  # 71% within 0.05 of 0 or 1; none


def _diagrams(fig) -> list:
    return [ax for ax in fig.axes if any(line.get_gid() == DIAGONAL for line in ax.lines)]


def _assert_one_axis(diagrams: list) -> None:
    assert [ax.get_xscale() for ax in diagrams] == ["logit", "logit"]
    assert diagrams[0].get_xlim() == diagrams[1].get_xlim()
    assert all(NOTE in ax.get_title() for ax in diagrams)


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = []
    for name, probs in (("sharp", SHARP), ("soft", SOFT)):
        rows = [f"{q!r},{int(y)}" for q, y in zip(probs.tolist(), Y.tolist(), strict=True)]
        path = tmp_path / f"{name}.csv"
        path.write_text("prob,label\n" + "\n".join(rows) + "\n")
        paths.append(str(path))
    return paths


def test_compare_plot_draws_both_models_on_one_x_axis(files, tmp_path, monkeypatch, capsys):
    from matplotlib.figure import Figure

    figures = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda f, *a, **k: figures.append(f) or save(f, *a, **k))
    plot = tmp_path / "both.png"
    assert main(["compare", *files, "--samples", "20", "--plot", str(plot)]) == 0
    (fig,) = figures
    _assert_one_axis(_diagrams(fig))


def test_the_compare_page_draws_both_models_on_one_x_axis(files, tmp_path, monkeypatch, capsys):
    figures = []
    svg = report.figure_svg
    monkeypatch.setattr(report, "figure_svg", lambda f, name: figures.append(f) or svg(f, name))
    page = tmp_path / "page.html"
    assert main(["compare", *files, "--samples", "20", "--html", str(page)]) == 0
    drawn = [ax for fig in figures for ax in _diagrams(fig)]
    assert len(drawn) == 2  # a's figure and b's
    _assert_one_axis(drawn)
    assert NOTE in page.read_text()


def test_calibration_comparison_plot_draws_both_models_on_one_x_axis():
    metric = CalibrationComparison(n_samples=20)
    metric.update(SHARP, SOFT, Y)
    fig, axes = metric.plot()
    assert _diagrams(fig) == list(axes)
    _assert_one_axis(list(axes))
    assert [ax.get_title().splitlines()[0] for ax in axes] == ["a", "b"]


def test_shared_x_axis_is_linear_unless_one_result_would_go_logit():
    sharp, soft = (calibration_error_ci(q, Y, n_samples=20) for q in (SHARP, SOFT))
    assert shared_x_axis([soft, soft]) == ("linear", None, "")
    both = shared_x_axis([soft, sharp])
    assert both.xscale == "logit" and both.note == NOTE
    # The range shows every bin of both: the sharp model's alone is the widest here.
    assert both.logit_range == shared_x_axis([sharp]).logit_range
    assert shared_x_axis([sharp]).note == "logit x axis (auto)"
    assert shared_x_axis([sharp] * 3).note == "logit x axes (auto, for all 3 panels)"


@pytest.mark.parametrize(
    ("results", "message"),
    [([], "at least one result"), (["a result"], "takes CalibrationResults")],
)
def test_shared_x_axis_refuses_no_results_and_other_things(results, message):
    with pytest.raises(ValueError, match=message):
        shared_x_axis(results)
