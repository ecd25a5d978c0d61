"""`calib-metrics compare --binning/--bin-size/--n-bins/--norm/--no-debias`: the estimator
evaluate takes, passed to compare_calibration (the command had fixed bins of ⌈√N⌉, l2,
debiased, and refused these options as unknown)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_runs import one_line_error, two_multiclass_models

from calib_metrics.cli import main
from calib_metrics.functional import compare_calibration, compare_calibration_by_label

ESTIMATORS = [
    ([], {}),
    (["--bin-size", "50"], {"bin_size": 50}),
    (["--binning", "uniform", "--n-bins", "10"], {"binning": "uniform", "n_bins": 10}),
    (["--norm", "l1"], {"norm": "l1", "debias": False}),
    (["--norm", "max", "--bin-size", "200"], {"norm": "max", "bin_size": 200, "debias": False}),
    (["--no-debias"], {"debias": False}),
]


@pytest.fixture
def files(tmp_path: Path) -> dict:
    g = torch.Generator().manual_seed(3)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    over = torch.where(q > 0.5, q.sqrt(), q**2)
    tags = torch.arange(2000) % 3
    paths = {}
    for name, probs in (("a", over), ("b", q)):
        columns = np.c_[probs.numpy(), y.numpy(), tags.numpy()]
        paths[name] = tmp_path / f"{name}.csv"
        np.savetxt(paths[name], columns, delimiter=",", header="prob,label,tag", comments="")
    return {"paths": paths, "a": over, "b": q, "y": y, "tags": tags}


def _run(files: dict, capsys, *options: str) -> dict:
    argv = ["compare", str(files["paths"]["a"]), str(files["paths"]["b"]), "--samples", "200"]
    assert main([*argv, *options, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("options", "keywords"), ESTIMATORS)
def test_the_estimator_options_give_compare_calibrations_result(
    files, capsys, options, keywords
) -> None:
    got = _run(files, capsys, *options)
    want = compare_calibration(
        files["a"], files["b"], files["y"], n_samples=200,
        generator=torch.Generator().manual_seed(0), **keywords,
    )  # fmt: skip
    assert got["difference"] == pytest.approx(want.difference.item(), rel=1e-12)
    assert (got["lower"], got["upper"]) == pytest.approx((want.lower.item(), want.upper.item()))
    assert got["p_value"] == pytest.approx(want.p_value.item())
    for name in "ab":
        assert got[name]["calib_err"] == pytest.approx(getattr(want, name).error.item())
    settled = {"binning": "adaptive", "bin_size": "auto", "n_bins": 15, "norm": "l2"}
    settled |= {"debias": True} | keywords
    # As evaluate's JSON: the size option of the binning not used is null, and the
    # settings leave it out.
    unused = "bin_size" if settled["binning"] == "uniform" else "n_bins"
    assert {key: got[key] for key in settled} == settled | {unused: None}
    shown = {key: got["settings"][key] for key in settled if key in got["settings"]}
    assert shown == {key: value for key, value in settled.items() if key != unused}


def test_a_binning_that_differs_gives_another_error(files, capsys) -> None:
    """The options reach the numbers: had they been read and dropped, every run would
    print the default's error."""
    default = _run(files, capsys)["a"]["calib_err"]
    assert _run(files, capsys, "--bin-size", "50")["a"]["calib_err"] != default
    assert _run(files, capsys, "--norm", "l1")["a"]["calib_err"] != default


@pytest.mark.parametrize(
    ("options", "header"),
    [
        ([], "debiased CalibErr, bins of ⌈√N⌉, paired bootstrap"),
        (["--bin-size", "50", "--no-debias"], "plug-in CalibErr, bins of 50, paired"),
        (["--binning", "uniform", "--n-bins", "10", "--norm", "l1"], "CalibErr (l1), 10 equal-"),
    ],
)
def test_the_text_and_the_page_name_the_estimator(files, capsys, tmp_path, options, header):
    page = tmp_path / "page.html"
    argv = ["compare", str(files["paths"]["a"]), str(files["paths"]["b"]), "--samples", "50"]
    assert main([*argv, *options, "--html", str(page)]) == 0
    assert header in capsys.readouterr().out.splitlines()[0]
    text = page.read_text(encoding="utf-8")
    norm = options[options.index("--norm") + 1] if "--norm" in options else "l2"
    assert f", {norm}" in text
    assert ("debiased" in text.split("estimator", 1)[1][:200]) == (header.startswith("debiased"))


def test_per_label_comparisons_use_the_estimator(files, capsys) -> None:
    got = _run(files, capsys, "--label", "tag", "--bin-size", "40", "--norm", "l1")
    want = compare_calibration_by_label(
        files["a"], files["b"], files["y"], files["tags"], n_samples=200,
        generator=torch.Generator().manual_seed(0), bin_size=40, norm="l1", debias=False,
    )  # fmt: skip
    rows = list(got["per_label"].values())
    assert [r["a"] for r in rows] == pytest.approx([r.a.error.item() for r in want.per_label])
    assert [r["difference"] for r in rows] == pytest.approx(want.difference.tolist())


def test_classwise_files_take_the_estimator(tmp_path, capsys) -> None:
    (sharp, probs, target), paths = two_multiclass_models(tmp_path, 900)
    argv = ["compare", *map(str, paths), "--mode", "classwise"]
    options = ["--binning", "uniform", "--n-bins", "8", "--samples", "100", "--json"]
    assert main([*argv, *options]) == 0
    got = json.loads(capsys.readouterr().out)
    want = compare_calibration(
        sharp, probs, target, mode="classwise", binning="uniform", n_bins=8, n_samples=100,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert got["difference"] == pytest.approx(want.difference.item(), rel=1e-12)
    # Each class's own 8 equal-width bins at most: its ⌈√900⌉ = 30 would give 90 rows.
    assert 3 < len(got["a"]["per_bin"]) <= 3 * 8


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--n-bins", "5"], "--n-bins counts uniform bins; it needs --binning uniform"),
        (["--binning", "uniform", "--bin-size", "9"], "--bin-size sizes adaptive bins"),
        (["--norm", "l1", "--debias"], "--debias applies to --norm l2 only"),
        (["--binning", "uniform", "--n-bins", "0"], "--n-bins must be an integer in [1,"),
        (["--bin-size", "0"], "--bin-size"),
        (["--norm", "l3"], "--norm"),
    ],
)
def test_bad_estimator_options_are_one_line_and_exit_2(files, capsys, options, message):
    line = one_line_error(capsys, "compare", files["paths"]["a"], files["paths"]["b"], *options)
    assert message in line


def test_bins_of_one_pair_are_one_warning_in_the_commands_words(files, capsys) -> None:
    """compare_calibration's warning (the paired interval too narrow) had come in the
    library's words (``bin_size='auto'``, ``debias=False``), followed by the command's own
    of the same bins, with other counts."""
    argv = ["compare", str(files["paths"]["a"]), str(files["paths"]["b"]), "--samples", "50"]
    assert main([*argv, "--bin-size", "1"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "bins hold one pair" in lines[0]
    assert "--bin-size auto" in lines[0] and "--no-debias" in lines[0]
    assert "bin_size" not in lines[0] and "debias=" not in lines[0]


def test_paper_with_uniform_bins_takes_no_bin_size(files, capsys) -> None:
    """--paper's 5000 sizes adaptive bins: beside --binning uniform it had been filled in
    and refused as a bin_size the user never typed."""
    from calib_metrics.functional import calibration_error_ci

    argv = ["evaluate", str(files["paths"]["a"]), "--paper", "--binning", "uniform"]
    assert main([*argv, "--samples", "100", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = calibration_error_ci(
        files["a"], files["y"], binning="uniform", debias=False, interval="paper",
        n_samples=100, generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert got["calib_err"] == pytest.approx(want.error.item())
    assert (got["binning"], got["bin_size"], got["n_bins"], got["debias"]) == (
        "uniform", None, 15, False,
    )  # fmt: skip
