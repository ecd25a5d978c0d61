"""``--bandwidth SIGMA`` of evaluate and compare: the smooth ECE, the smooth curve and the
page at that kernel width, as ``smooth_calibration_error(..., bandwidth=σ)`` gives them
(the command had only the automatic σ*, which the function's ``bandwidth=`` overrides)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from cli_runs import one_line_error, run_cli

from calib_metrics.functional import smooth_calibration_error


@pytest.fixture
def files(tmp_path) -> dict:
    g = torch.Generator().manual_seed(5)
    q = torch.rand(1500, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    over = torch.where(q > 0.5, q.sqrt(), q**2)
    paths = {}
    for name, probs in (("a", over), ("b", q)):
        paths[name] = tmp_path / f"{name}.csv"
        columns = np.c_[probs.numpy(), y.numpy()]
        np.savetxt(paths[name], columns, delimiter=",", header="prob,label", comments="")
    return {"paths": paths, "a": over, "b": q, "y": y}


def test_evaluate_gives_the_smooth_ece_at_the_bandwidth(files, capsys) -> None:
    argv = ["evaluate", files["paths"]["a"], "--smooth", "--samples", "50"]
    code, out, _ = run_cli(capsys, *argv, "--bandwidth", "0.05", "--json")
    assert code == 0
    got = json.loads(out)
    want = smooth_calibration_error(files["a"], files["y"], bandwidth=0.05)
    assert got["smooth_ece"] == pytest.approx(want.item(), rel=1e-12)
    assert got["bandwidth"] == got["settings"]["bandwidth"] == 0.05
    code, out, _ = run_cli(capsys, *argv, "--json")
    auto = json.loads(out)
    assert auto["bandwidth"] == auto["settings"]["bandwidth"] == "auto"
    assert auto["smooth_ece"] == pytest.approx(
        smooth_calibration_error(files["a"], files["y"]).item()
    )
    assert auto["smooth_ece"] != got["smooth_ece"]
    code, out, _ = run_cli(capsys, *argv, "--bandwidth", "0.05")
    assert "smooth ECE = " in out and "(Błasiok & Nakkiran; σ = 0.05)" in out
    page = files["paths"]["a"].parent / "e.html"
    code, _, _ = run_cli(capsys, *argv, "--bandwidth", "0.05", "--html", page)
    assert code == 0
    assert "smooth ECE (Błasiok &amp; Nakkiran; σ = 0.05)</th>" in page.read_text(encoding="utf-8")
    # "auto", the value --json gives for the default, is taken as the default.
    code, out, _ = run_cli(capsys, *argv, "--bandwidth", "auto", "--json")
    assert code == 0 and json.loads(out)["smooth_ece"] == auto["smooth_ece"]


def test_the_plotted_curve_takes_the_bandwidth(files, capsys, tmp_path, monkeypatch) -> None:
    import calib_metrics.functional as functional

    drawn = []
    real = functional.smooth_reliability_curve

    def spy(*args, **kwargs):
        drawn.append(real(*args, **kwargs))
        return drawn[-1]

    monkeypatch.setattr(functional, "smooth_reliability_curve", spy)
    argv = ["compare", files["paths"]["a"], files["paths"]["b"], "--samples", "50"]
    png = tmp_path / "both.png"
    code, _, _ = run_cli(capsys, *argv, "--plot", png, "--plot-smooth", "--bandwidth", "0.03")
    assert code == 0 and png.stat().st_size > 0
    assert [float(curve.bandwidth) for curve in drawn] == [0.03, 0.03]


def test_the_compare_page_gives_each_models_smooth_ece_at_the_bandwidth(
    files, capsys, tmp_path
) -> None:
    argv = ["compare", files["paths"]["a"], files["paths"]["b"], "--samples", "50", "--json"]
    code, out, _ = run_cli(capsys, *argv, "--html", tmp_path / "c.html", "--bandwidth", "0.1")
    assert code == 0
    got = json.loads(out)
    for name in "ab":
        want = smooth_calibration_error(files[name], files["y"], bandwidth=0.1)
        assert got[name]["smooth_ece"] == pytest.approx(want.item(), rel=1e-12)
    assert got["settings"]["bandwidth"] == 0.1
    # The page's smooth ECE row (both models' columns) names the σ, as the text does.
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert page.count("smooth ECE (Błasiok &amp; Nakkiran; σ = 0.1)</td>") == 1


@pytest.mark.parametrize(
    ("command", "options", "message"),
    [
        ("evaluate", ["--bandwidth", "0.05"], "give --smooth, --plot-smooth or --html"),
        ("compare", ["--bandwidth", "0.05"], "give --plot-smooth or --html"),
        ("evaluate", ["--smooth", "--bandwidth", "0"], "--bandwidth must lie in [0.0001, 1]"),
        ("evaluate", ["--smooth", "--bandwidth", "2"], "--bandwidth must lie in [0.0001, 1]"),
        ("evaluate", ["--smooth", "--bandwidth", "nan"], "--bandwidth must lie in"),
        ("evaluate", ["--smooth", "--bandwidth", "wide"], "a number in [0.0001, 1] or 'auto'"),
    ],
)
def test_bad_bandwidths_are_one_line_and_exit_2(files, capsys, command, options, message):
    paths = [files["paths"]["a"]] + ([files["paths"]["b"]] if command == "compare" else [])
    assert message in one_line_error(capsys, command, *paths, *options)
