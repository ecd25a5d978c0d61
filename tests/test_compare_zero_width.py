"""A comparison's zero-width intervals are said to be so, as calibration_error_ci's are:
two models whose max-norm errors are each decided by a pure bin had [0.4, 0.4],
[0.396, 0.396] and a difference [0.004, 0.004] with p = 0 and no word."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from calib_metrics import CalibrationComparison
from calib_metrics.cli import main
from calib_metrics.functional import compare_calibration, compare_calibration_by_label
from calib_metrics.functional.zero_width import ZeroWidthWarning

OPTIONS = {"binning": "uniform", "n_bins": 10, "norm": "max", "debias": False}
PURE = (
    "the max-norm interval has zero width: its worst bin's 10 labels are all 0, and the draws "
    "hold a bin's frequency where its labels put it; 10 labels of 0 are consistent with a "
    "true frequency up to 0.31 (95%, exact Clopper-Pearson)"
)
DIFFERENCE = (
    "the interval of the difference has zero width: its draws all gave one difference, so "
    "its p-value (0) is not to be trusted"
)


def _pure_worst_bin() -> tuple[torch.Tensor, torch.Tensor]:
    """990 pairs at 0.9, about 90% ones, and 10 at 0.4 all 0: the worst bin, pure."""
    g = torch.Generator().manual_seed(0)
    correct = torch.rand(990, generator=g) < 0.9
    q = torch.cat([torch.full((990,), 0.9), torch.full((10,), 0.4)])
    return q, torch.cat([correct.float(), torch.zeros(10)])


def _said(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, ZeroWidthWarning)]


def test_each_model_and_the_difference_are_said_to_have_zero_width() -> None:
    q, y = _pure_worst_bin()
    g = torch.Generator().manual_seed(0)
    said = _said(lambda: compare_calibration(q, 0.99 * q, y, generator=g, **OPTIONS))
    assert said == [f"models a and b: {PURE}; {DIFFERENCE}"]


def test_a_model_compared_with_itself_is_not_warned_of() -> None:
    """Its difference is 0 in every draw, rightly, and each model's interval has width."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    assert _said(lambda: compare_calibration(q, q, y, n_samples=200, generator=g)) == []


def test_the_metric_says_it_once_per_object() -> None:
    q, y = _pure_worst_bin()
    metric = CalibrationComparison(n_samples=200, **OPTIONS)
    metric.update(q, 0.99 * q, y)
    said = _said(lambda: [metric.compute() for _ in range(2)])
    assert said == [f"CalibrationComparison: models a and b: {PURE}; {DIFFERENCE}"]


def test_the_command_says_it_in_one_line(tmp_path: Path, capsys) -> None:
    """The command's estimator is the debiased l2 one: labels all 0 at one probability per
    model make every bin pure with one gap, so every draw gives one error."""
    file = tmp_path / "both.csv"
    file.write_text("qa,qb,y\n" + "0.4,0.3,0\n" * 1000)
    argv = ["compare", str(file), "--probs", "qa", "--probs-b", "qb", "--target", "y"]
    assert main([*argv, "--samples", "200"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "zero width" in line]
    assert len(lines) == 1
    assert lines[0].startswith("calib-metrics: warning: models a and b: the interval has zero")
    assert lines[0].endswith(DIFFERENCE)


def test_by_label_names_the_first_label_once() -> None:
    q, y = _pure_worst_bin()
    qs, ys = torch.cat([q, q, q]), torch.cat([y, y, y])
    labels = torch.arange(3).repeat_interleave(1000) + 7
    g = torch.Generator().manual_seed(0)
    call = lambda: compare_calibration_by_label(  # noqa: E731
        qs, 0.99 * qs, ys, labels, n_samples=200, generator=g, **OPTIONS
    )
    assert _said(call) == [f"label 7: models a and b: {PURE}; {DIFFERENCE} (so do 2 other labels)"]
