"""``evaluate --mode / --smooth / --spiegelhalter``: multiclass files and the extra measures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics.cli import main
from calib_metrics.functional import (
    calibration_error,
    smooth_calibration_error,
    spiegelhalter_test,
)
from calib_metrics.report import BRIER_OF_CLASSWISE


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def multiclass_file(tmp_path: Path) -> tuple[Path, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    probs = (torch.randn(600, 3, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    path = tmp_path / "multiclass.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy())
    return path, probs, target


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_mode_reaches_the_computation(capsys, multiclass_file, mode) -> None:
    path, probs, target = multiclass_file
    options = ("--bin-size", "50", "--samples", "100", "--json", "--mode", mode, "--smooth")
    code, out, err = run(capsys, "evaluate", path, *options)
    assert code == 0, err
    summary = json.loads(out)
    expected = calibration_error(probs, target, bin_size=50, debias=True, mode=mode).item()
    assert summary["calib_err"] == pytest.approx(expected, rel=1e-12)
    assert summary["mode"] == mode
    assert summary["n"] == (600 if mode == "top_label" else 1800)
    smooth = smooth_calibration_error(probs, target, mode=mode).item()
    assert summary["smooth_ece"] == pytest.approx(smooth, rel=1e-12)


@pytest.mark.parametrize(
    ("mode", "named"),
    [
        ("one_vs_rest", "(l2, debiased)"),
        ("top_label", "(l2, debiased, top_label)"),
        ("classwise", "(l2, debiased, classwise)"),
    ],
)
def test_text_names_the_mode_as_compare_does(capsys, multiclass_file, mode, named) -> None:
    # The text said "CalibErr (l2, debiased)" whatever --mode was: a classwise mean over
    # classes read like the pooled one-vs-rest error.
    path = multiclass_file[0]
    code, out, err = run(capsys, "evaluate", path, "--samples", "100", "--mode", mode)
    assert code == 0, err
    assert f"CalibErr {named} = " in out.splitlines()[1]


@pytest.mark.parametrize("command", ["evaluate", "compare"])
@pytest.mark.parametrize("mode", ["top_label", "classwise"])
def test_a_mode_on_a_binary_file_is_said_in_the_commands_terms(capsys, tmp_path, command, mode):
    # The library's message ended "pass torch.stack([1 - p, p], -1)": Python, for a user
    # at the command line, and no file named.
    path = tmp_path / "binary.csv"
    path.write_text("prob,label\n0.2,0\n0.7,1\n0.6,0\n")
    files = [path] if command == "evaluate" else [path, path]
    code, out, err = run(capsys, command, *files, "--mode", mode)
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert f"{path}: --mode {mode} needs multiclass probs" in line
    assert "torch" not in line


def test_text_lines_for_smooth_and_spiegelhalter(capsys, multiclass_file) -> None:
    path, probs, target = multiclass_file
    argv = ("--bin-size", "50", "--samples", "100", "--mode", "top_label")
    code, out, err = run(capsys, "evaluate", path, *argv, "--smooth", "--spiegelhalter")
    assert code == 0, err
    test = spiegelhalter_test(probs, target, mode="top_label")
    assert f"Spiegelhalter z = {test.z.item():.3f}" in out
    smooth = smooth_calibration_error(probs, target, mode="top_label").item()
    assert f"smooth ECE = {smooth:.4f}" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--mode", "top_label", "--binary"), "needs multiclass probs"),
    ],
)
def test_one_line_errors(capsys, tmp_path, multiclass_file, argv, message) -> None:
    path = multiclass_file[0]
    if "--binary" in argv:
        path = tmp_path / "binary.csv"
        path.write_text("prob,label\n0.2,0\n0.7,1\n0.6,0\n")
        argv = argv[:-1]
    code, out, err = run(capsys, "evaluate", path, "--bin-size", "2", "--samples", "10", *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_spiegelhalter_uses_the_groups_and_a_multiclass_file_s_items(capsys, tmp_path) -> None:
    g = torch.Generator().manual_seed(3)
    q = torch.rand(400, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    sentence = torch.arange(400) // 8
    path = tmp_path / "tokens.csv"
    rows = [f"{a!r},{int(b)},{int(s)}" for a, b, s in zip(q.tolist(), y.tolist(), sentence)]
    path.write_text("prob,label,sentence_id\n" + "\n".join(rows) + "\n")
    argv = ("--samples", "20", "--spiegelhalter", "--json")
    code, out, err = run(capsys, "evaluate", path, "--groups", "sentence_id", *argv)
    assert code == 0, err
    summary = json.loads(out)
    grouped = spiegelhalter_test(q, y, groups=sentence)
    assert summary["spiegelhalter_z"] == pytest.approx(grouped.z.item(), rel=1e-12)
    assert summary["spiegelhalter_groups"] == 50 and summary["spiegelhalter_cluster"] == "groups"
    assert grouped.z.item() != pytest.approx(spiegelhalter_test(q, y).z.item(), rel=1e-3)
    code, out, err = run(capsys, "evaluate", path, "--samples", "20", "--spiegelhalter")
    assert code == 0 and "(independent variance)" in out
    # A multiclass file's one-vs-rest pairs: each item is a group (its labels sum to 1).
    probs = torch.softmax(torch.randn(300, 3, generator=g, dtype=torch.float64), dim=-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    npz = tmp_path / "multiclass.npz"
    np.savez(npz, probs=probs.numpy(), target=target.numpy())
    code, out, err = run(capsys, "evaluate", npz, "--samples", "20", "--spiegelhalter")
    assert code == 0, err
    by_item = spiegelhalter_test(probs, target, groups=torch.arange(300))
    assert f"Spiegelhalter z = {by_item.z.item():.3f}" in out
    # Its clusters are the items, not groups the user never gave.
    assert "(cluster-robust variance over 300 items)" in out


def test_a_multiclass_file_s_spiegelhalter_clusters_are_called_its_items(
    tmp_path, capsys, multiclass_file
) -> None:
    """One-vs-rest pairs grouped by item: the text and both pages had said "cluster-robust
    variance over 600 groups" where no groups were given, and the JSON gave
    ``spiegelhalter_groups: 600`` beside ``groups: null`` without saying what they were."""
    path = multiclass_file[0]
    page = tmp_path / "e.html"
    code, out, err = run(capsys, "evaluate", path, "--samples", "20", "--html", page, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["groups"] is None and summary["spiegelhalter_groups"] == 600
    assert summary["spiegelhalter_cluster"] == "items"
    assert "(cluster-robust variance over 600 items)" in page.read_text(encoding="utf-8")
    page = tmp_path / "c.html"
    code, out, err = run(capsys, "compare", path, path, "--samples", "20", "--html", page, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert [summary[m]["spiegelhalter_cluster"] for m in "ab"] == ["items", "items"]
    assert page.read_text(encoding="utf-8").count("cluster-robust variance over 600 items") == 2


@pytest.mark.parametrize("q", [[0.0, 1.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5]])
def test_an_undefined_spiegelhalter_test_does_not_abort_the_run(tmp_path, capsys, q) -> None:
    # Hard 0/1 or constant-½ predictions: the test has no variance; the rest is reported.
    rows = 25 * [f"{p},{y}" for p, y in zip(q, [0, 1, 1, 0], strict=True)]
    path = tmp_path / "hard.csv"
    path.write_text("prob,label\n" + "\n".join(rows) + "\n")
    code, out, err = run(capsys, "evaluate", path, "--spiegelhalter", "--smooth", "--samples", "50")
    assert code == 0, err
    assert "CalibErr" in out and "Spiegelhalter: not computed" in out


def test_compare_html_measures_follow_the_mode(tmp_path, capsys, multiclass_file) -> None:
    path, probs, target = multiclass_file
    html = tmp_path / "c.html"
    options = ("--mode", "top_label", "--samples", "50", "--html", html)
    code, _, err = run(capsys, "compare", path, path, *options)
    assert code == 0, err
    smooth = smooth_calibration_error(probs, target, mode="top_label").item()
    assert f"{smooth:.4f}" in html.read_text()


def test_classwise_spiegelhalter_is_reported_as_not_computed(capsys, multiclass_file) -> None:
    argv = ("--bin-size", "50", "--samples", "10", "--mode", "classwise", "--spiegelhalter")
    code, out, err = run(capsys, "evaluate", multiclass_file[0], *argv)
    assert code == 0, err
    # In the command's own words: it had said "mode='classwise' ... pass one class's pairs".
    assert "Spiegelhalter: not computed (--mode classwise would give one test per class; " in out
    assert "mode='classwise'" not in out


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_a_test_not_computed_names_no_grouping(capsys, tmp_path, command) -> None:
    """``--mode classwise --groups``: ``spiegelhalter_z`` was null with a note that the test
    was not computed, beside ``spiegelhalter_groups`` 50 and ``spiegelhalter_cluster``
    "groups", the grouping of a variance never taken; null, as z and p are."""
    g = torch.Generator().manual_seed(4)
    probs = (torch.randn(400, 3, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    path = tmp_path / "tagged.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy(), doc=(torch.arange(400) // 8).numpy())
    argv = ["--groups", "doc", "--mode", "classwise", "--samples", "10", "--json"]
    argv += ["--html", tmp_path / "page.html"]
    code, out, err = run(capsys, command, path, *([path] if command == "compare" else []), *argv)
    assert code == 0, err
    summary = json.loads(out)
    for model in [summary] if command == "evaluate" else [summary["a"], summary["b"]]:
        assert model["spiegelhalter_z"] is None and model["spiegelhalter_note"]
        assert model["spiegelhalter_groups"] is None and model["spiegelhalter_cluster"] is None


def test_groups_of_a_multiclass_file_are_one_per_item(capsys, tmp_path) -> None:
    from calib_metrics.functional import calibration_error_ci

    g = torch.Generator().manual_seed(4)
    probs = (torch.randn(400, 3, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    sentence = torch.arange(400) // 8
    path = tmp_path / "tagged.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy(), sentence_id=sentence.numpy())
    argv = ("--groups", "sentence_id", "--interval", "groups", "--samples", "100", "--json")
    code, out, err = run(capsys, "evaluate", path, *argv)
    assert code == 0, err
    expected = calibration_error_ci(
        probs, target, groups=sentence, interval="groups", n_samples=100,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    summary = json.loads(out)
    assert summary["upper"] == pytest.approx(expected.upper.item(), rel=1e-9)


def test_a_classwise_few_bins_warning_says_its_count_is_per_class(capsys, tmp_path) -> None:
    """The header counts the pooled N·C pairs; the warning had said "only 6 bins from 50
    pairs" beside "N = 200 pairs, 24 adaptive bins", which read as a contradiction."""
    generator = torch.Generator().manual_seed(0)
    file = tmp_path / "small.npz"
    probs = torch.randn(50, 4, generator=generator).softmax(-1)
    np.savez(file, probs=probs.numpy(), target=torch.randint(0, 4, (50,), generator=generator))
    code, out, err = run(capsys, "evaluate", str(file), "--mode", "classwise")
    assert code == 0 and "N = 200 pairs" in out
    assert "only 6 bins from 50 pairs per class (auto bins)" in err


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_a_classwise_brier_split_says_which_pairs_it_is_of(capsys, tmp_path, multiclass_file, mode):
    """Under --mode classwise the split is of the pooled one-vs-rest pairs in their own bins:
    it had sat under the header of the classwise bins, its calibration term no CalibErr²."""
    path = multiclass_file[0]
    options = ("--samples", "20", "--mode", mode)
    code, out, err = run(capsys, "evaluate", path, *options)
    assert code == 0, err
    brier = next(line for line in out.splitlines() if line.startswith("Brier"))
    named = f"Brier ({BRIER_OF_CLASSWISE}) = " if mode == "classwise" else "Brier = "
    assert brier.startswith(named)
    _, out, _ = run(capsys, "evaluate", path, *options, "--json")
    assert json.loads(out).get("brier_pairs") == (
        BRIER_OF_CLASSWISE if mode == "classwise" else None
    )
    html = tmp_path / f"{mode}.html"
    run(capsys, "compare", path, path, *options, "--html", html)
    assert (f"within-bin ({BRIER_OF_CLASSWISE})" in html.read_text()) == (mode == "classwise")


def test_spiegelhalter_of_few_pairs_is_said_in_one_line(tmp_path, capsys) -> None:
    # One pair at 0.9 with label 0 had printed p = 0.0027 without a word.
    path = tmp_path / "one.csv"
    path.write_text("prob,label\n0.9,0\n")
    code, out, err = run(capsys, "evaluate", path, "--spiegelhalter", "--samples", "20")
    assert code == 0, err
    assert "Spiegelhalter z = 3.000" in out
    said = [line for line in err.splitlines() if "Spiegelhalter" in line]
    assert said == [
        "calib-metrics: warning: Spiegelhalter's test: 1 pair; its z is far from normal below "
        "10 pairs, so the p-value says little"
    ]


def test_the_brier_splits_calibration_term_is_said_to_be_the_plug_in(tmp_path, capsys) -> None:
    """The line "CalibErr (l2, debiased) = 0.1053" stood above "calibration 0.0138", which is the
    plug-in square (√0.0138 = 0.1176, the --no-debias CalibErr), not 0.1053²: unsaid, a
    reader squares the wrong number."""
    g = torch.Generator().manual_seed(3)
    probs = torch.rand(400, generator=g, dtype=torch.float64)
    target = torch.bernoulli(probs, generator=g)
    path = tmp_path / "preds.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy())
    plug_in = calibration_error(probs, target, debias=False).item()
    assert abs(plug_in**2 - calibration_error(probs, target).item() ** 2) > 1e-3  # they differ
    page = tmp_path / "page.html"
    code, out, err = run(capsys, "evaluate", path, "--samples", "20", "--html", page)
    assert code == 0, err
    (brier,) = [line for line in out.splitlines() if line.startswith("Brier")]
    assert f" = calibration (plug-in) {plug_in**2:.4f} + refinement " in brier, brier
    assert "Brier = calibration (plug-in) + refinement + within-bin" in page.read_text()
    _, out, _ = run(capsys, "evaluate", path, "--samples", "20", "--json")
    assert json.loads(out)["calibration"] == pytest.approx(plug_in**2, rel=1e-12)
