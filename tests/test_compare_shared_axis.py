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
NOTE = "logit axes (auto, shared): "
S = torch.randn(2000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
Y = torch.bernoulli(torch.sigmoid(S), generator=torch.Generator().manual_seed(1))
SHARP, SOFT = torch.sigmoid(8 * S), torch.sigmoid(0.5 * S)  # 68% in bins near 0 or 1; 0%


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
    assert shared_x_axis([soft, soft])[:2] == ("linear", None)
    assert shared_x_axis([soft, soft]).title("a", 0) == "a"
    both = shared_x_axis([soft, sharp])
    assert both.xscale == "logit"
    # Each title names its own diagram's share near the ends (what "auto" alone would
    # have named), and no count of panels (an overlay row had said "both" of three).
    near = "of pairs in bins within 0.05 of 0 or 1"
    assert both.title("b", 0) == f"b\n{NOTE}0% {near}"
    assert both.title("a", 1) == f"a\n{NOTE}68% {near}"
    assert both.overlay_note == f"logit axes (auto): up to 68% of a model's {near[3:]}"
    assert both.logit_range == shared_x_axis([sharp]).logit_range


def test_shared_x_axis_shows_the_bins_of_a_result_that_alone_would_be_linear():
    g = torch.Generator().manual_seed(0)
    near_zero = torch.where(torch.arange(2000) < 1200, 0.02, 0.5).double()  # logit alone
    spread = torch.rand(2000, generator=g, dtype=torch.float64) * 0.6 + 0.2
    spread[:300] = 1e-5  # 15% of its pairs: linear alone, a bin at 1e-5
    y = torch.bernoulli(torch.full((2000,), 0.3, dtype=torch.float64), generator=g)
    a, b = (calibration_error_ci(q, y, n_samples=20) for q in (near_zero, spread))
    assert shared_x_axis([a]).logit_range[0] > 1e-5 and shared_x_axis([b]).xscale == "linear"
    low, _ = shared_x_axis([a, b]).logit_range
    assert low <= 1e-5  # b's bin at 1e-5 on the axis, not cut at a's own end


def test_a_classwise_panel_goes_logit_when_one_model_would():
    from calib_metrics.plot_panels import reliability_panels

    sharp, soft = (calibration_error_ci(q, Y, n_samples=20) for q in (SHARP, SOFT))
    _, axes = reliability_panels({"class 1": [sharp, soft]}, names=["a", "b"])
    assert axes[0].get_xscale() == "logit"  # the pooled share (34%) had kept it linear


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ([], "at least one result"),
        (["a result"], "takes CalibrationResults"),
        (None, "got one NoneType"),
        ("one", "got one str"),
        ({"a": None}, r"got a mapping: pass its \.values\(\)"),
    ],
)
def test_shared_x_axis_refuses_no_results_and_other_things(results, message):
    with pytest.raises(ValueError, match=message):
        shared_x_axis(results)


def test_shared_x_axis_refuses_one_result_and_a_classwise_average():
    result = calibration_error_ci(SOFT, Y, n_samples=20)
    with pytest.raises(ValueError, match=r"got one CalibrationResult: pass \[result\]"):
        shared_x_axis(result)
    probs = torch.softmax(torch.randn(300, 3, generator=torch.Generator().manual_seed(2)), 1)
    pooled = calibration_error_ci(probs, torch.randint(0, 3, (300,)), mode="classwise")
    with pytest.raises(ValueError, match="averages 3 classes"):
        shared_x_axis([pooled])


def test_shared_x_axis_takes_any_iterable_of_results():
    """A generator or dict.values() had been refused as "got one dict_values"."""
    results = {k: calibration_error_ci(torch.sigmoid(k * S), Y, n_samples=20) for k in (8.0, 0.5)}
    listed = shared_x_axis(list(results.values()))
    assert listed.xscale == "logit"
    assert shared_x_axis(results.values()) == listed
    assert shared_x_axis(r for r in results.values()) == listed
    assert shared_x_axis(iter(results.values())) == listed
