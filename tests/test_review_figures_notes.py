"""A review of the reports' change found three gaps. Comparison figures titled each model
with its whole path, so two absolute paths ran into each other and off a 9.4-inch figure;
``recalibrate``'s before − after, drawn by compare's bias-corrected paired interval, lay
outside it without the note ``compare`` gives; and ``classwise_panels(limit=None)`` (every
class) and results given as any iterable (a tuple, a NumPy object array, a dict's
values), which had drawn, were refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from test_cli_recalibrate import files  # noqa: F401 - the fixture

pytest.importorskip("matplotlib")

from calib_metrics.cli import main
from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot_panels import classwise_panels, reliability_panels
from calib_metrics.report import FIGURE_NAME_CHARS, model_title

LONG = "/tmp/pytest-of-root/pytest-12/test_two_files_of_one_name_are0/run{}/preds.csv"


def test_a_figure_keeps_a_long_name_short_and_its_end() -> None:
    a, b = (model_title(key, LONG.format(i), FIGURE_NAME_CHARS) for key, i in (("a", 1), ("b", 2)))
    assert len(a) == len(b) == len("a: ") + FIGURE_NAME_CHARS
    assert a.endswith("run1/preds.csv") and b.endswith("run2/preds.csv") and "…" in a
    assert model_title("a", LONG.format(1)) == "a: " + LONG.format(1)  # the page's text


def test_recalibrate_says_when_before_minus_after_lies_outside(files, capsys, monkeypatch):  # noqa: F811
    import calib_metrics.recalibration as recalibration

    def outside(*args, **kwargs):  # as compare_calibration can: both errors clipped at 0
        return {"difference": 0.0, "lower": 0.0226, "upper": 0.0589, "p_value": 0.02,
                "n_samples": 100}  # fmt: skip

    monkeypatch.setattr(recalibration, "compare_before_after", outside)
    (dev, *_), (test, *_) = files
    out = dev.parent / "out.csv"
    options = ["--method", "platt", "--samples", "50", "--out", str(out)]
    assert main(["recalibrate", str(dev), str(test), *options]) == 0
    text = capsys.readouterr().out
    assert "note: the difference lies below its paired interval" in text
    assert main(["recalibrate", str(dev), str(test), *options, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["difference_note"].startswith("the difference lies below")


@pytest.fixture(scope="module")
def per_class() -> list:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(300, generator=g, dtype=torch.float64)
    return [
        calibration_error_ci(q, torch.bernoulli(q, generator=g), n_samples=10) for _ in range(3)
    ]


def test_classwise_panels_take_none_for_every_class(per_class) -> None:
    _, axes = classwise_panels(per_class, limit=None)
    assert len(axes) == 3


@pytest.mark.parametrize(
    "given",
    [tuple, lambda r: np.array([*r, None], dtype=object)[:3], lambda r: (x for x in r)],
    ids=["tuple", "numpy object array", "generator"],
)
def test_results_may_be_any_iterable(per_class, given) -> None:
    _, axes = classwise_panels(given(per_class))
    assert len(axes) == 3
    _, axes = reliability_panels({"x": {"a": per_class[0], "b": per_class[1]}.values()},
                                 names=["a", "b"])  # fmt: skip
    assert len(axes) == 1
