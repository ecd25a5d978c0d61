"""A ``$`` in a file, column or label name is a dollar sign in every figure, never the
start of matplotlib's mathtext: ``m$\\frac$.csv`` had failed ``--plot`` (exit 2, no file),
``p$x^2$.csv`` was titled ``px².csv``, and classwise report figures split such names into
one SVG text per character."""

from __future__ import annotations

import html
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from cli_runs import run_cli

from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import (
    error_curve,
    per_class_errors,
    per_label_errors,
    posterior_time_series,
    reliability_diagram,
)
from calib_metrics.plot_panels import classwise_panels, reliability_panels
from calib_metrics.report import figure_svg

BROKEN = r"m$\frac$.csv"  # mathtext that does not parse: the draw had failed
TYPESET = "p$x^2$.csv"  # mathtext that parses: drawn as px².csv


def _texts(fig) -> list[str]:
    """Every text the figure draws, as SVG text elements (mathtext comes out in pieces)."""
    svg = figure_svg(fig, "t")
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def _drawn(fig, name: str) -> bool:
    return any(name in text for text in _texts(fig))


@pytest.fixture(scope="module")
def result():
    q = torch.rand(300, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return calibration_error_ci(q, (q > 0.5).double(), bin_size=30, n_samples=20)


def _figures(r, name: str):
    """One figure of each drawing function, ``name`` in every text it takes."""
    yield reliability_diagram(r, title=name, label=name)[0]
    yield per_label_errors({name: [r, r], "x": [r, r]}, names=[name, "b"], title=name)[0]
    yield per_class_errors({name: [r]}, [name], title=name)[0]
    yield error_curve([1, 2], [0.1, 0.2], [0, 0], [1, 1], label=name, xlabel=name, band=name)[0]
    yield posterior_time_series([name, "b"], [1, 2], [0, 1], [2, 3], label=name, title=name)[0]
    yield reliability_panels({name: [r]}, names=[name], title=name, note=name)[0]
    yield classwise_panels([r, r], class_names=[name, "b"], title=name)[0]


@pytest.mark.parametrize("name", [BROKEN, TYPESET])
def test_every_drawing_function_draws_dollars_as_written(result, name) -> None:
    for fig in _figures(result, name):
        assert _drawn(fig, name), _texts(fig)


def test_a_dollar_escaped_by_the_caller_stays_as_written(result) -> None:
    fig, _ = reliability_diagram(result, title=r"a\$b$")
    assert _drawn(fig, r"a\$b$")


def _write_csv(path: Path, probs_b: str = "q_b") -> Path:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(400, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    rows = [f"{a:.6f},{b},{(a * 0.9):.6f}" for a, b in zip(q.tolist(), y.tolist())]
    path.write_text(f"prob,label,{probs_b}\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _svg_texts(path: Path) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())]


@pytest.mark.parametrize("name", [BROKEN, TYPESET])
def test_evaluate_plot_of_a_file_named_with_dollars(tmp_path, capsys, name) -> None:
    path = _write_csv(tmp_path / name)
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text kept as text, to read back
        code, _, err = run_cli(
            capsys, "evaluate", path, "--samples", "20", "--plot", tmp_path / "f.svg"
        )
    assert code == 0, err
    assert name in _svg_texts(tmp_path / "f.svg")


def test_compare_plot_of_a_column_named_with_dollars(tmp_path, capsys) -> None:
    path = _write_csv(tmp_path / "dollarcol.csv", probs_b=BROKEN)
    argv = ["compare", path, "--probs", "prob", "--probs-b", BROKEN, "--samples", "20"]
    code, _, err = run_cli(capsys, *argv, "--plot", tmp_path / "dc.png")
    assert code == 0, err
    assert (tmp_path / "dc.png").stat().st_size > 0


def test_classwise_report_draws_a_file_name_with_dollars_as_one_text(tmp_path, capsys) -> None:
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(300, 3, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    path = tmp_path / r"c$\frac$.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy())
    page = tmp_path / "r.html"
    argv = ["evaluate", path, "--mode", "classwise", "--samples", "20", "--html", page]
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    texts = _svg_texts(page)
    assert any(t.startswith(r"c$\frac$.npz: ") for t in texts), texts
