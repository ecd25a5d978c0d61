"""A classwise run's too-few-pairs warning counts one class's pairs, as its header counts
them all: "N = 8 pairs (2 items × 4 classes)" beside "2 pairs; at least 10 are needed"
had read as a contradiction."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cli_runs import run_cli

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error_ci


def _two_items() -> tuple[torch.Tensor, torch.Tensor]:
    probs = torch.tensor([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]], dtype=torch.float64)
    return probs, torch.tensor([0, 3])


def test_functional_classwise_counts_pairs_per_class():
    probs, target = _two_items()
    with pytest.warns(UserWarning, match=r"2 pairs per class; at least 10 are needed"):
        calibration_error_ci(probs, target, mode="classwise", n_samples=20)


def test_one_set_of_pairs_counts_them_all():
    probs, target = _two_items()
    with pytest.warns(UserWarning, match=r"calibration_error_ci: 2 pairs; at least 10"):
        calibration_error_ci(probs, target, mode="top_label", n_samples=20)


@pytest.mark.parametrize("options", [{"mode": "classwise"}, {"average": "none"}])
def test_metric_per_class_counts_pairs_per_class(options):
    probs, target = _two_items()
    metric = CalibrationError(num_classes=4, n_samples=20, **options)
    metric.update(probs, target)
    with pytest.warns(UserWarning, match=r"2 pairs per class; at least 10 are needed"):
        metric.compute_result()


def test_command_classwise_counts_pairs_per_class(tmp_path, capsys):
    probs, target = _two_items()
    path = tmp_path / "tiny.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy())
    code, out, err = run_cli(capsys, "evaluate", path, "--mode", "classwise", "--samples", "20")
    assert code == 0 and "N = 8 pairs" in out
    assert "warning: 2 pairs per class; at least 10 are needed" in err
