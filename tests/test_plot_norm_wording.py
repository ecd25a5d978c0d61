"""Figures name a norm other than l2 (``--norm max`` had been titled "CalibErr 0.3177"
like the l2 error), and a classwise page's estimator row reads properly (it had said
"adaptive bins of β = auto")."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import cli_runs as _runs
import numpy as np
import pytest
import test_callbacks as helpers
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import per_label_errors, reliability_diagram
from calib_metrics.plot_panels import classwise_panels


@pytest.fixture(scope="module")
def pairs():
    g = torch.Generator().manual_seed(0)
    q = torch.rand(600, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q**2, generator=g)


def test_figures_name_the_norm_unless_l2(pairs) -> None:
    q, y = pairs
    r = calibration_error_ci(q, y, norm="max", debias=False, n_samples=20)
    assert (
        ax_title(reliability_diagram(r, norm="max")).splitlines()[0].startswith("CalibErr (max) ")
    )
    # The result carries its norm, which names it; one made by hand carries none: l2.
    assert ax_title(reliability_diagram(r)).startswith("CalibErr (max) ")
    assert ax_title(reliability_diagram(r._replace(lower=r.lower))).startswith("CalibErr 0.")
    # A result made by hand names the norm given (one that carries its own is pinned in
    # test_plot_label_result_settings).
    _, ax = per_label_errors({"a": r._replace(lower=r.lower)}, norm="l1")
    assert ax.get_xlabel() == "calibration error (l1)"
    _, axes = classwise_panels([r, r], norm="max")
    assert axes[0].get_title().splitlines()[1].startswith("CalibErr (max) ")
    with pytest.raises(ValueError, match="norm must be one of"):
        reliability_diagram(r, norm="L2")


def ax_title(drawn) -> str:
    return drawn[1].get_title()


def test_the_metric_names_its_norm(pairs) -> None:
    metric = CalibrationError(norm="max", n_samples=20)
    metric.update(*pairs)
    _, ax = metric.plot()
    assert ax.get_title().startswith(f"CalibErr (max) {metric.compute().item():.4f}")


def test_evaluate_plot_names_the_norm(tmp_path, capsys, monkeypatch, pairs) -> None:
    from calib_metrics import plot

    titles = []
    original = plot.reliability_diagram

    def recording(*args, **kwargs):
        fig, ax = original(*args, **kwargs)
        titles.append(ax.get_title())
        return fig, ax

    monkeypatch.setattr(plot, "reliability_diagram", recording)
    q, y = pairs
    path = tmp_path / "p.npz"
    np.savez(path, probs=q.numpy(), target=y.numpy())
    argv = ["evaluate", path, "--norm", "max", "--samples", "20", "--plot", tmp_path / "f.png"]
    code, _, err = _runs.run_cli(capsys, *argv)
    assert code == 0, err
    assert titles[0].splitlines()[1].startswith("CalibErr (max) ")


def test_classwise_page_reads_its_bin_rule(tmp_path, capsys) -> None:
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(300, 3, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    path = tmp_path / "c.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy())
    page = tmp_path / "r.html"
    argv = ["evaluate", path, "--mode", "classwise", "--samples", "20", "--html", page]
    code, _, err = _runs.run_cli(capsys, *argv)
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert "β = auto" not in text
    assert "adaptive bins of β = ⌈√N⌉ per class (auto)" in text


def test_the_comparison_metric_names_its_norm(pairs) -> None:
    from calib_metrics.metric_compare import CalibrationComparison

    q, y = pairs
    metric = CalibrationComparison(norm="max", debias=False, n_samples=20)
    metric.update(q, q.sqrt(), y)
    _, axes = metric.plot()
    assert all(ax.get_title().splitlines()[1].startswith("CalibErr (max) ") for ax in axes)


def test_the_monitor_names_its_norm(tmp_path) -> None:
    # CalibrationMonitor(norm="max") had titled its figures like the l2 error.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny tagger's few bins
        figures = helpers._run(tmp_path, norm="max")
    (diagram,) = figures["val/reliability_diagram"]
    assert diagram.axes[0].get_title().splitlines()[1].startswith("CalibErr (max) ")
    (per_class,) = figures["val/calib_err_per_class"]
    assert per_class.axes[0].get_xlabel() == "calibration error (max)"


def test_the_classwise_monitor_names_its_norm(tmp_path) -> None:
    logger = helpers.FigureLogger()
    cb = helpers.monitor(mode="classwise", norm="max", bin_size=5, save_png=False)
    train, val = helpers.loaders()
    run = helpers.trainer(tmp_path, 1, logger=logger, callbacks=[cb], num_sanity_val_steps=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.fit(helpers.TinyTagger(), train, val)
    (figure,) = logger.experiment.figures["val/reliability_diagram"]
    assert "classwise CalibErr (max) " in figure.get_suptitle()
    assert figure.axes[0].get_title().splitlines()[1].startswith("CalibErr (max) ")


def test_the_monitor_curve_names_its_norm(tmp_path, monkeypatch) -> None:
    from calib_metrics import plot

    labels = []
    original = plot.error_curve

    def spy(*args, **kwargs):
        labels.append(kwargs["label"])
        return original(*args, **kwargs)

    monkeypatch.setattr(plot, "error_curve", spy)
    cb = helpers.monitor(norm="max", save_png=True)
    train, val = helpers.loaders()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        helpers.trainer(tmp_path, 1, logger=False, callbacks=[cb]).fit(
            helpers.TinyTagger(), train, val
        )
    assert labels and labels[0].startswith("val CalibErr (max) (95% interval")
