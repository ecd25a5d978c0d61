"""An ``ignore_index`` that is a label the pairs hold drops a class of them by its label:
refused for binary pairs (0 or 1: every negative or positive), warned about for a class
id of multiclass pairs (its items dropped, its probabilities still scored against labels
that are never it). The command line refused it for binary files only; the metrics and
multiclass files had taken it without a word (a classwise error 6× too large)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.cli import main


@pytest.mark.parametrize("metric", [CalibrationError, CalibrationComparison])
@pytest.mark.parametrize("label", [0, 1])
def test_a_binary_metric_refuses_a_binary_label(metric, label) -> None:
    kind = "negatives" if label == 0 else "positives"
    with pytest.raises(ValueError, match=f"ignore_index={label} would drop every pair .*{kind}"):
        metric(ignore_index=label)


@pytest.mark.parametrize("metric", [CalibrationError, CalibrationComparison])
def test_a_class_id_is_warned_about_at_the_users_line(metric) -> None:
    with pytest.warns(UserWarning, match="ignore_index=2 is one of the 4 class ids") as caught:
        metric(num_classes=4, ignore_index=2)
    assert caught[0].filename == __file__


@pytest.mark.parametrize("metric", [CalibrationError, CalibrationComparison])
@pytest.mark.parametrize(("num_classes", "label"), [(None, -100), (None, 2), (4, 4), (4, -1)])
def test_padding_of_its_own_label_is_taken_silently(metric, num_classes, label) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metric(num_classes=num_classes, ignore_index=label)


def test_a_multiclass_file_warns_of_a_class_id(tmp_path: Path, capsys) -> None:
    g = np.random.default_rng(0)
    probs = g.dirichlet(np.ones(4), size=200)
    file = tmp_path / "mc.npz"
    np.savez(file, probs=probs, target=g.integers(0, 4, 200))
    assert main(["evaluate", str(file), "--mode", "classwise", "--ignore-index", "0"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    said = [line for line in err if "class ids" in line]
    assert said == [
        f"calib-metrics: warning: {file}: --ignore-index 0 is one of the 4 class ids: the "
        "items labelled 0 are dropped, and class 0's probabilities are still scored against "
        "labels that are never it (for padding, use a label of its own, such as -100)"
    ]
    main(["evaluate", str(file), "--mode", "classwise", "--ignore-index", "-100", "--json"])
    out, err = capsys.readouterr()
    assert json.loads(out)["n"] == 800 and "class ids" not in err


@pytest.mark.parametrize("metric", [CalibrationError, CalibrationComparison])
def test_the_warning_is_said_once_not_again_by_forward(metric) -> None:
    """forward() builds a batch metric of the same options: the warning had come again at
    the line of the call."""
    import torch

    probs = torch.softmax(torch.randn(20, 3, generator=torch.Generator().manual_seed(0)), -1)
    target = torch.arange(20) % 3
    with pytest.warns(UserWarning, match="class ids"):
        m = metric(num_classes=3, ignore_index=0)
    args = (probs, target) if metric is CalibrationError else (probs, probs, target)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*class ids")
        m(*args)
        m(*args)


def test_a_monitors_metric_for_another_loader_says_nothing_again() -> None:
    from calib_metrics.callbacks import CalibrationMonitor

    with pytest.warns(UserWarning, match="class ids") as caught:
        monitor = CalibrationMonitor(num_classes=3, ignore_index=0)
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert monitor._metric(1) is not monitor.metric
