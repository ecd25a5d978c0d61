"""``calib-metrics evaluate`` on unusual and bad input: one line and exit 2, or the right
numbers, never a traceback; and its defaults (issue 13, "The command line")."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_runs import one_line_error, run_cli

from calib_metrics import CalibrationError, cli
from calib_metrics.functional import calibration_error, calibration_error_ci

Q = [0.1, 0.35, 0.35, 0.6, 0.8, 0.95, 0.2, 0.7, 0.45, 0.15, 0.85, 0.55]
Y = [0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0]


def csv_text(labels=Y, sep: str = ",", header: str = "prob,label") -> str:
    rows = [header.replace(",", sep)]
    rows += [f"{q}{sep}{y}" for q, y in zip(Q, labels, strict=True)]
    return "\n".join(rows) + "\n"


def summary(capsys, path: Path, *options) -> dict:
    code, out, err = run_cli(capsys, "evaluate", path, "--json", "--samples", "50", *options)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.csv"
    path.write_text(csv_text())
    return path


# -- bad input: one line, exit 2 -------------------------------------------------------


def test_pt_with_integer_keys(tmp_path: Path, capsys):
    path = tmp_path / "p.pt"
    torch.save({0: torch.tensor(Q), 1: torch.tensor(Y)}, path)
    line = one_line_error(capsys, "evaluate", path)
    assert "named by strings" in line and "0, 1" in line


def test_csv_field_over_the_csv_limit(tmp_path: Path, capsys):
    """A cell over the csv module's default limit (131,072 characters) is read as any:
    it had been refused ("field larger than field limit"), and the limit is the
    process's own again after the reading."""
    path = tmp_path / "long.csv"
    path.write_text("prob,label\n0.5,1\n0." + "1" * 140_000 + ",0\n")
    limit = csv.field_size_limit()
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["n"] == 2
    assert csv.field_size_limit() == limit


def test_jsonl_integer_of_400_digits(tmp_path: Path, capsys):
    path = tmp_path / "big.jsonl"
    path.write_text('{"q": 0.5, "y": 1}\n{"q": ' + "7" * 400 + ', "y": 0}\n')
    line = one_line_error(capsys, "evaluate", path)
    assert "'q'" in line and "too large" in line


BIG = '{"q": 0.5, "y": 1}\n{"q": ' + "7" * 400 + ', "y": 0}\n'
BAD_VALUES = {  # file name: (contents, the row as the message names it, the column, problem)
    "text.csv": ("prob,label\n0.3,1\n\n0.6,0\nhigh,0\n", "line 5", "'prob'", "value 'high'"),
    "range.csv": ("prob,label\n0.3,1\n1.7,0\n", "line 3", "'prob'", "1.7, not a probability"),
    "negative.tsv": ("p\ty\n0.3\t1\n0.2\t0\n-0.1\t0\n", "line 4", "'p'", "not a probability"),
    "nan.csv": ("prob,label\n0.3,1\nnan,0\n", "line 3", "'prob'", "missing (NaN)"),
    "label.csv": ("prob,label\n0.3,1\n0.6,2\n", "line 3", "'label'", "2: a label must be binary"),
    "label_text.csv": ("prob,label\n0.3,yes\n", "line 2", "'label'", "non-numeric value 'yes'"),
    "quoted.csv": ('prob,label,note\n0.3,1,"two\nlines"\n0.4,x,a\n', "line 4", "'label'", "'x'"),
    "rows.jsonl": ('{"q": 0.3, "y": 1}\n\n{"q": 1.5, "y": 0}\n', "line 3", "'q'", "1.5"),
    "big.jsonl": (BIG, "line 2", "'q'", "too large"),
}


@pytest.mark.parametrize("name", list(BAD_VALUES))
def test_a_bad_value_names_the_file_row_and_column(tmp_path: Path, capsys, name: str):
    content, row, column, problem = BAD_VALUES[name]
    path = tmp_path / name
    path.write_text(content)
    line = one_line_error(capsys, "evaluate", path, "--samples", "10")
    assert line.startswith(f"calib-metrics: error: {path}: {row}, column {column} "), line
    assert problem in line, line


def test_a_bad_value_of_an_array_file_names_its_row_index(tmp_path: Path, capsys):
    path = tmp_path / "p.npz"
    np.savez(path, probs=np.array([*Q[:3], 1.2]), target=np.array(Y[:4]))
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: row index 3, column 'probs' holds 1.2" in line
    probs = np.full((4, 3), 1 / 3)  # multiclass: 3 probabilities per label
    np.savez(path, probs=probs, target=np.array([0, 2, 3, 1]))
    line = one_line_error(capsys, "evaluate", path)
    assert "row index 2, column 'target' holds 3: a label must be a class id in 0..2" in line
    probs[1, 2] = np.nan
    np.savez(path, probs=probs, target=np.array([0, 2, 1, 1]))
    line = one_line_error(capsys, "evaluate", path)
    assert "row index 1, column 'probs' is missing (NaN)" in line


@pytest.mark.parametrize("suffix", [".npz", ".npy"])
def test_an_array_file_that_is_not_one_says_so(tmp_path: Path, capsys, suffix: str):
    # numpy reads a file without its magic as a pickle and refuses that: the message was
    # "This file contains pickled (object) data...", about a file that holds none.
    path = tmp_path / f"p{suffix}"
    path.write_text("prob,label\n0.2,0\n")
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: not a {suffix} file" in line and "pickle" not in line


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_arrays_of_unrelated_lengths_name_the_file(tmp_path: Path, capsys, command: str):
    # 5 probabilities for 2 labels is neither one per label nor C per label: the error
    # names the file and both counts (it was the library's "probs and target must have
    # the same shape", with no file).
    path = tmp_path / "p.npz"
    np.savez(path, probs=np.array(Q[:5]), target=np.array(Y[:2]))
    line = one_line_error(capsys, command, path, *([path] if command == "compare" else []))
    assert f"{path}: 5 probabilities in 'probs' for 2 labels in 'target'" in line


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_a_flat_column_twice_as_long_as_the_labels_is_refused(tmp_path: Path, capsys, suffix):
    """200 flat values beside 100 labels had been read as 100 rows of 2 classes, with
    a meaningless result and exit code 0."""
    path = tmp_path / f"p{suffix}"
    probs, target = (Q * 20)[:200], (Y * 10)[:100]
    if suffix == ".npz":
        np.savez(path, probs=np.array(probs), target=np.array(target))
    else:
        path.write_text(json.dumps({"prob": list(probs), "label": list(target)}))
    line = one_line_error(capsys, "evaluate", path)
    assert "200 probabilities in" in line and "for 100 labels" in line
    assert "a flat column gives one probability per label" in line


@pytest.mark.parametrize("command", ["evaluate", "compare", "recalibrate"])
@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--samples", "1", "--samples must be at least 2, got 1"),
        # A typo's extra zeros had run on without a word until stopped by hand.
        (
            "--samples",
            str(10**12),
            "--samples must be at most 10,000,000, got 1,000,000,000,000 (10,000 put a 95% "
            "interval's ends within about ±0.005 of their level)",
        ),
        ("--confidence", "1.5", "--confidence must lie in (0, 1), got 1.5"),
    ],
)
def test_draw_options_are_named_alike_by_every_command(
    good: Path, tmp_path: Path, capsys, command: str, option: str, value: str, message: str
):
    # One check for all three commands, before any work, naming the option as typed (it
    # was the library's "n_samples must be an integer >= 2" for evaluate and, after its
    # own check let 1 through, for recalibrate).
    files = [good] if command == "evaluate" else [good, good]
    out = ["--out", tmp_path / "o.csv"] if command == "recalibrate" else []
    line = one_line_error(capsys, command, *files, *out, option, value)
    assert line == f"calib-metrics: error: {message}"


@pytest.mark.parametrize("value", ["1e30", str(10**30), "0", "-3", "2.5", "nan", "many"])
def test_bin_size_out_of_range_or_not_an_integer(good: Path, capsys, value: str):
    line = one_line_error(capsys, "evaluate", good, "--bin-size", value)
    assert "--bin-size" in line and repr(value) in line


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["evaluate", "GOOD", "--samples", "abc"], "evaluate"),
        (["evaluate", "GOOD", "--bin-size", "abc"], "evaluate"),
        (["evaluate", "GOOD", "--ignore-index", "q"], "evaluate"),
        (["compare", "GOOD", "GOOD", "--seed", "x"], "compare"),
        (["recalibrate", "GOOD", "--seed", "x"], "recalibrate"),
        (["reproduce", "pos", "--seed", "z"], "reproduce pos"),
    ],
)
def test_a_subcommands_option_errors_say_the_programs_name(good: Path, capsys, argv, usage):
    """argparse's errors of a subcommand's options had said "calib-metrics evaluate:
    error: ...", every other error "calib-metrics: error: ..."; the usage hint still
    names the subcommand's help."""
    line = one_line_error(capsys, *[good if a == "GOOD" else a for a in argv])
    assert line.startswith("calib-metrics: error: argument --"), line
    assert line.endswith(f"(usage: calib-metrics {usage} --help)"), line


def test_bin_size_in_scientific_notation_is_read(good: Path, capsys):
    assert summary(capsys, good, "--bin-size", "1e4")["bin_size"] == 10_000


def test_plot_under_a_file(good: Path, capsys):
    line = one_line_error(capsys, "evaluate", good, "--plot", good / "x.png")
    assert "is a file, not a folder" in line


def test_plot_in_a_missing_folder_is_refused_not_created(tmp_path: Path, good: Path, capsys):
    target = tmp_path / "no" / "such" / "dir" / "x.png"
    line = one_line_error(capsys, "evaluate", good, "--plot", target)
    assert "does not exist" in line
    assert not (tmp_path / "no").exists()


def test_duplicate_header_names(tmp_path: Path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("prob,label,prob\n0.2,0,0.9\n0.8,1,0.1\n")
    line = one_line_error(capsys, "evaluate", path)
    assert "repeats column name" in line and "'prob'" in line


def test_decimal_commas_are_named(tmp_path: Path, capsys):
    path = tmp_path / "semi.csv"
    path.write_text("prob;label\n0,2;0\n0,8;1\n")
    line = one_line_error(capsys, "evaluate", path)
    assert "decimal comma" in line and "'prob'" in line


def test_an_os_error_anywhere_is_one_line(good: Path, capsys, monkeypatch):
    """The safety net in main: an OSError from any step is one line, exit 2."""
    from calib_metrics import predictions

    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(good))

    monkeypatch.setattr(predictions, "read_table", unreadable)
    assert "Permission denied" in one_line_error(capsys, "evaluate", good)


def test_the_real_process_prints_one_line(tmp_path: Path):
    path = tmp_path / "p.pt"
    torch.save({0: torch.tensor(Q), 1: torch.tensor(Y)}, path)
    done = subprocess.run(
        [sys.executable, "-m", "calib_metrics.cli", "evaluate", str(path), "--bin-size", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# -- unusual but valid input: the same numbers as a plain file -------------------------


@pytest.fixture
def reference(good: Path, capsys) -> dict:
    return summary(capsys, good)


def _same(got: dict, want: dict) -> None:
    for key in ("n", "bins", "calib_err", "lower", "upper", "brier"):
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15), key


def test_bf16_tensors_are_read(tmp_path: Path, capsys):
    path = tmp_path / "bf16.pt"
    probs = torch.tensor(Q, dtype=torch.bfloat16)
    torch.save({"probs": probs, "target": torch.tensor(Y, dtype=torch.bfloat16)}, path)
    plain = tmp_path / "plain.csv"
    rounded = [float(v) for v in probs.double()]  # what bf16 stored
    plain.write_text("prob,label\n" + "".join(f"{q!r},{y}\n" for q, y in zip(rounded, Y)))
    _same(summary(capsys, path), summary(capsys, plain))


def test_tensors_that_require_grad_are_detached(tmp_path: Path, capsys, reference):
    path = tmp_path / "grad.pt"
    probs = torch.tensor(Q, dtype=torch.float64, requires_grad=True)
    torch.save({"probs": probs, "target": torch.tensor(Y)}, path)
    _same(summary(capsys, path), reference)
    stacked = tmp_path / "stacked.pt"
    torch.save(torch.stack([probs, torch.tensor(Y, dtype=torch.float64)], 1), stacked)
    _same(summary(capsys, stacked), reference)


def test_utf8_bom_header_is_recognised(tmp_path: Path, capsys, reference):
    path = tmp_path / "bom.csv"
    path.write_text(csv_text(), encoding="utf-8-sig")
    assert path.read_bytes()[:3] == b"\xef\xbb\xbf"
    _same(summary(capsys, path), reference)
    jsonl = tmp_path / "bom.jsonl"
    rows = [json.dumps({"prob": q, "label": y}) for q, y in zip(Q, Y, strict=True)]
    jsonl.write_text("\n".join(rows) + "\n", encoding="utf-8-sig")
    _same(summary(capsys, jsonl), reference)


@pytest.mark.parametrize("spelling", [("True", "False"), ("true", "false"), ("TRUE", "FALSE")])
def test_true_false_labels_are_accepted(tmp_path: Path, capsys, reference, spelling):
    path = tmp_path / "bool.csv"
    path.write_text(csv_text(labels=[spelling[0] if y else spelling[1] for y in Y]))
    _same(summary(capsys, path), reference)


def test_json_booleans_are_labels(tmp_path: Path, capsys, reference):
    path = tmp_path / "bool.jsonl"
    rows = [json.dumps({"q": q, "y": bool(y)}) for q, y in zip(Q, Y, strict=True)]
    path.write_text("\n".join(rows) + "\n")
    _same(summary(capsys, path), reference)


def test_semicolon_separated_csv_is_detected(tmp_path: Path, capsys, reference):
    path = tmp_path / "semi.csv"
    path.write_text(csv_text(sep=";"))
    _same(summary(capsys, path), reference)


# -- output ----------------------------------------------------------------------------


def test_bin_count_grammar(good: Path, capsys):
    code, out, _ = run_cli(capsys, "evaluate", good, "--samples", "20", "--bin-size", "100")
    assert code == 0 and re.search(r"N = 12 pairs, 1 adaptive bin\b(?!s)", out), out
    code, out, _ = run_cli(capsys, "evaluate", good, "--samples", "20", "--bin-size", "2")
    assert code == 0 and "6 adaptive bins" in out, out


def test_json_has_the_bins(good: Path, capsys):
    got = summary(capsys, good, "--bin-size", "2")
    result = calibration_error_ci(
        torch.tensor(Q, dtype=torch.float64),
        torch.tensor(Y, dtype=torch.float64),
        bin_size=2,
        n_samples=10,
        debias=True,
        interval="pairs",
    )
    per_bin = got["per_bin"]
    assert len(per_bin) == got["bins"] == 6
    assert [b["count"] for b in per_bin] == result.bins.count.tolist()
    assert [b["pred_mean"] for b in per_bin] == pytest.approx(result.bins.pred_mean.tolist())
    assert [b["freq"] for b in per_bin] == pytest.approx(result.bins.freq.tolist())


# -- defaults: the recommended estimator; the paper's one option away ------------------


def _pairs(n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    q = rng.beta(0.5, 0.5, size=n)
    return q, (rng.random(n) < np.clip(1.1 * q, 0, 1)).astype(np.int64)


def _functional(q, y, **options):
    return calibration_error_ci(
        torch.from_numpy(q),
        torch.from_numpy(y),
        n_samples=50,
        generator=torch.Generator().manual_seed(0),
        **options,
    )


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        ((), {"bin_size": "auto", "debias": True, "interval": "pairs"}),
        (("--paper",), {"bin_size": 5000, "debias": False, "interval": "paper"}),
        (
            ("--bin-size", "5000", "--no-debias", "--interval", "paper"),
            {"bin_size": 5000, "debias": False, "interval": "paper"},
        ),
        (("--paper", "--bin-size", "300"), {"bin_size": 300, "debias": False, "interval": "paper"}),
        (("--no-debias",), {"bin_size": "auto", "debias": False, "interval": "pairs"}),
    ],
)
def test_defaults_and_the_paper_setting(tmp_path: Path, capsys, argv, options):
    q, y = _pairs()
    path = tmp_path / "p.npz"
    np.savez(path, probs=q, target=y)
    got = summary(capsys, path, *argv)
    want = _functional(q, y, **options)
    assert (got["bin_size"], got["debias"], got["interval"]) == (
        options["bin_size"],
        options["debias"],
        options["interval"],
    )
    assert got["bins"] == len(want.bins.count)
    for key in ("error", "lower", "upper"):
        assert got[key if key != "error" else "calib_err"] == pytest.approx(
            getattr(want, key).item(), rel=1e-12
        )


def test_groups_imply_the_group_bootstrap(tmp_path: Path, capsys):
    q, y = _pairs()
    groups = np.arange(len(q)) // 10
    path = tmp_path / "p.npz"
    np.savez(path, probs=q, target=y, sentence=groups)
    got = summary(capsys, path, "--groups", "sentence")
    want = _functional(
        q, y, bin_size="auto", debias=True, interval="groups", groups=torch.from_numpy(groups)
    )
    assert got["interval"] == "groups" and got["groups"] == 300
    assert got["upper"] == pytest.approx(want.upper.item(), rel=1e-12)


class _ClosedPipe(io.StringIO):
    """A stdout whose reader has gone (`calib-metrics ... | head -1`)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_stops_early_is_not_an_error(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(1)
    q = rng.random(500)
    y = (rng.random(500) < q).astype(int)
    path = tmp_path / "a.csv"
    path.write_text("prob,label\n" + "".join(f"{float(a)!r},{b}\n" for a, b in zip(q, y)))
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    code = cli.main(["compare", str(path), str(path)])
    assert code == cli.EXIT_BROKEN_PIPE
    assert "error" not in capsys.readouterr().err


def test_a_table_of_several_probability_columns_points_to_the_multiclass_formats(
    tmp_path: Path, capsys
) -> None:
    # --probs takes one column: the advice alone could not be followed for [N, C] rows.
    wide = tmp_path / "wide.csv"
    wide.write_text("p0,p1,p2,label\n" + "0.2,0.3,0.5,1\n" * 12)
    line = one_line_error(capsys, "compare", wide, wide, "--mode", "classwise")
    assert "cannot tell which column holds the probabilities" in line
    assert ".npz" in line and "JSON-lines" in line


def test_a_directory_is_named_as_one(tmp_path: Path, capsys) -> None:
    line = one_line_error(capsys, "evaluate", tmp_path)
    assert "a directory, not a file of predictions" in line and "no such file" not in line


@pytest.mark.parametrize("command", ["evaluate", "compare", "recalibrate"])
@pytest.mark.parametrize(
    "name,message",
    [
        ("p.txt", r"--plot .*p\.txt: matplotlib writes no '\.txt' figures; use \.png"),
        ("p", "--plot .*p: matplotlib needs a suffix to choose a format"),
    ],
)
def test_a_figure_format_matplotlib_cannot_write_is_refused_before_any_output(
    tmp_path: Path, good: Path, capsys, command: str, name: str, message: str
) -> None:
    """``recalibrate --out o.csv --plot p.txt`` once wrote o.csv, then failed in savefig."""
    out = tmp_path / "o.csv"
    extra = ["--out", out] if command == "recalibrate" else []
    files = [good] if command == "evaluate" else [good, good]
    line = one_line_error(capsys, command, *files, *extra, "--plot", tmp_path / name)
    assert re.search(message, line), line
    assert not out.exists() and not (tmp_path / name).exists()


@pytest.mark.parametrize(
    "command,first", [("recalibrate", "--out"), ("evaluate", "--html"), ("compare", "--html")]
)
def test_two_outputs_that_name_one_file_are_refused(
    tmp_path: Path, good: Path, capsys, command: str, first: str
) -> None:
    """``recalibrate --out same.png --plot same.png`` wrote the CSV, then the PNG over it."""
    same = tmp_path / "same.png"
    files = [good] if command == "evaluate" else [good, good]
    line = one_line_error(capsys, command, *files, first, same, "--plot", same)
    assert "name one file" in line and first in line and "--plot" in line, line
    assert not same.exists()


@pytest.mark.parametrize("command", ["evaluate", "compare", "recalibrate"])
@pytest.mark.parametrize("seed", ["99999999999999999999999", "18446744073709551615", "-1"])
def test_a_seed_out_of_range_is_named_before_any_work(good: Path, capsys, command, seed):
    """A seed torch cannot take said "Overflow when unpacking long long"; one it takes but
    whose offsets (seed + 3) it cannot failed only after recalibrate's fit."""
    files = [good] if command == "evaluate" else [good, good]
    line = one_line_error(capsys, command, *files, "--seed", seed)
    assert line == f"calib-metrics: error: --seed must be an integer in [0, 2**32), got {seed}"


def test_a_term_that_rounds_to_zero_keeps_its_sign_as_a_term(tmp_path: Path, capsys) -> None:
    """The within-bin term of these top-label pairs is −1.3e-5: it printed as -0.0000, then
    as "+ within-bin 0.0000" (the page "+ 0.0000") beside a larger negative's "− 0.0001":
    the term's sign is kept, written as a term's, in the text and on the page alike."""
    g = torch.Generator().manual_seed(2)
    probs = torch.softmax(1.5 * torch.randn(1500, 4, generator=g, dtype=torch.float64), -1)
    target = torch.multinomial(probs, 1, generator=g)[:, 0]
    path = tmp_path / "mc.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy())
    page = tmp_path / "mc.html"
    argv = ["evaluate", path, "--mode", "top_label", "--samples", "50", "--html", page]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    (brier,) = [line for line in out.splitlines() if line.startswith("Brier")]
    assert brier.endswith("− within-bin 0.0000") and "-0.0000" not in out, brier
    split = page.read_text(encoding="utf-8").split('data-key="brier_split"')[1]
    assert split.split("</td>")[0].endswith("− 0.0000")


# --- What a new user's files and options found (2026-11-29): each had ended in a
# traceback, a silent wrong number, or a mislabelled one.

G_NEW = torch.Generator().manual_seed(0)
Q400 = torch.rand(400, generator=G_NEW, dtype=torch.float64)
Y400 = torch.bernoulli(Q400, generator=G_NEW).long()
CSV400 = "prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(Q400.tolist(), Y400.tolist()))
ERROR400 = calibration_error(Q400, Y400).item()


def test_arrays_that_do_not_line_up_are_refused(tmp_path, capsys) -> None:
    """Flattened, [10, 100] probabilities and [100, 10] labels paired the wrong items."""
    path = tmp_path / "transposed.npz"
    np.savez(path, probs=Q400[:400].reshape(4, 100).numpy(), target=Y400.reshape(4, 100).T.numpy())
    err = one_line_error(capsys, "evaluate", path)
    assert "'probs' has shape [4, 100] and 'target' has shape [100, 4]" in err
    right = tmp_path / "right.npz"
    np.savez(right, probs=Q400.reshape(4, 100).numpy(), target=Y400.reshape(4, 100).numpy())
    code, out, _ = run_cli(capsys, "evaluate", right, "--samples", "20", "--json")
    assert code == 0
    assert json.loads(out)["calib_err"] == pytest.approx(
        calibration_error(Q400, Y400).item(), abs=1e-12
    )


@pytest.mark.parametrize("junk", [b"PK\x03\x04junk", "half"])
def test_a_corrupt_npz_is_one_line(tmp_path, capsys, junk) -> None:
    path = tmp_path / "bad.npz"
    if junk == "half":
        np.savez(path, probs=Q400.numpy(), target=Y400.numpy())
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(junk)
    assert f"{path}: not a readable .npz file" in one_line_error(capsys, "evaluate", path)


def test_an_odd_extra_key_of_a_pt_file_is_not_read(tmp_path, capsys) -> None:
    path = tmp_path / "extra.pt"
    sparse = torch.eye(3).to_sparse()
    torch.save({"probs": Q400, "target": Y400, "other": sparse}, path)
    code, _, err = run_cli(capsys, "evaluate", path, "--samples", "20")
    assert code == 0, err
    torch.save({"probs": Q400.to_sparse(), "target": Y400}, path)
    assert "column 'probs' is a sparse_coo tensor" in one_line_error(capsys, "evaluate", path)


def test_an_object_array_is_named_with_its_file(tmp_path, capsys) -> None:
    path = tmp_path / "obj.npz"
    np.savez(path, probs=np.array([0.2, "x"], dtype=object), target=np.array([0, 1]))
    err = one_line_error(capsys, "evaluate", path)
    assert f"{path}: column 'probs' cannot be read" in err


def test_complex_probabilities_are_refused(tmp_path, capsys) -> None:
    path = tmp_path / "complex.npz"
    np.savez(path, probs=Q400.numpy() + 0j, target=Y400.numpy())
    assert "holds complex numbers" in one_line_error(capsys, "evaluate", path)


def test_empty_byte_string_group_ids_are_missing(tmp_path, capsys) -> None:
    path = tmp_path / "groups.npz"
    ids = np.array([b"s1", b""] * 200)
    np.savez(path, probs=Q400.numpy(), target=Y400.numpy(), groups=ids)
    err = one_line_error(capsys, "evaluate", path, "--groups", "groups")
    assert "row index 1, column 'groups' has a missing group id" in err


def test_json_lines_name_the_right_line_after_an_empty_object(tmp_path, capsys) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{}\n{"prob": 0.3, "label": 1}\n{"prob": 1.3, "label": 0}\n')
    assert "line 1 is an empty JSON object" in one_line_error(capsys, "evaluate", path)
    path.write_text('{"prob": 0.3, "label": 1}\n{"prob": 1.3, "label": 0}\n')
    assert "line 2, column 'prob' holds 1.3" in one_line_error(capsys, "evaluate", path)


@pytest.mark.parametrize(
    "document",
    [
        lambda rows: json.dumps(rows, indent=2),  # a list of row objects, as json.dump writes
        lambda rows: json.dumps(
            {"prob": [r["prob"] for r in rows], "label": [r["label"] for r in rows]}
        ),
        lambda rows: "".join(json.dumps(r) + "\n" for r in rows),  # JSON lines still
    ],
)
def test_a_json_file_may_be_one_document(tmp_path, capsys, document) -> None:
    rows = [{"prob": q, "label": y} for q, y in zip(Q400.tolist(), Y400.tolist())]
    path = tmp_path / "preds.json"
    path.write_text(document(rows))
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["calib_err"] == pytest.approx(
        calibration_error(Q400, Y400).item(), abs=1e-12
    )


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_a_file_that_is_not_utf8_is_named(tmp_path, capsys, encoding) -> None:
    path = tmp_path / "preds.csv"
    path.write_bytes("prob,label,note\n0.5,1,é\n0.4,0,x\n".encode(encoding))
    err = one_line_error(capsys, "evaluate", path)
    assert f"{path}: not UTF-8 text" in err


def test_compare_refuses_per_label_rows_under_another_mode(tmp_path, capsys) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, probs=torch.softmax(torch.randn(50, 3), -1).numpy(),
             target=np.arange(50) % 3, tag=np.array(["x", "y"] * 25))  # fmt: skip
    err = one_line_error(capsys, "compare", path, path, "--label", "tag", "--mode", "top_label")
    assert "--label COLUMN compares each label's pairs one-vs-rest" in err


def test_recalibrate_refuses_too_many_bins_before_any_work(tmp_path, capsys) -> None:
    path = tmp_path / "dev.csv"
    path.write_text(
        "prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(Q400.tolist(), Y400.tolist()))
    )
    err = one_line_error(
        capsys, "recalibrate", path, path, "--method", "histogram", "--n-bins", str(10**12),
        "--out", tmp_path / "out.csv",
    )  # fmt: skip
    assert "--n-bins must be an integer in [1, 1048576]" in err


def test_recalibrate_writes_the_group_ids_as_the_test_file_wrote_them(tmp_path, capsys) -> None:
    path = tmp_path / "test.csv"
    ids = [f"doc{i % 7}" for i in range(400)]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["prob", "label", "doc_id"])
        writer.writerows(zip(Q400.tolist(), Y400.tolist(), ids))
    out = tmp_path / "out.csv"
    code, _, err = run_cli(capsys, "recalibrate", path, path, "--method", "platt", "--groups",
                           "--samples", "20", "--out", out)  # fmt: skip
    assert code == 0, err
    with open(out) as f:
        assert [row["group"] for row in csv.DictReader(f)] == ids


def test_debias_with_l1_or_max_is_refused_and_their_label_says_plug_in(tmp_path, capsys):
    path = tmp_path / "p.csv"
    path.write_text(
        "prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(Q400.tolist(), Y400.tolist()))
    )
    err = one_line_error(capsys, "evaluate", path, "--norm", "l1", "--debias")
    assert "--debias applies to --norm l2 only" in err
    code, out, _ = run_cli(capsys, "evaluate", path, "--norm", "max", "--samples", "20")
    assert code == 0 and "CalibErr (max) =" in out and "debiased" not in out


def test_explicit_groups_override_the_paper_interval(tmp_path, capsys) -> None:
    path = tmp_path / "p.csv"
    rows = zip(Q400.tolist(), Y400.tolist(), [i // 4 for i in range(400)])
    path.write_text("prob,label,sentence_id\n" + "".join(f"{q},{y},{s}\n" for q, y, s in rows))
    code, out, err = run_cli(
        capsys, "evaluate", path, "--paper", "--groups", "sentence_id", "--samples", "20", "--json"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["interval"] == "groups" and summary["bin_size"] == 5000


def test_demo_refuses_one_draw_before_the_run_starts(capsys) -> None:
    err = one_line_error(capsys, "demo", "--quick", "--samples", "1")
    assert err == "calib-metrics: error: --samples must be at least 2, got 1"  # as evaluate's


def test_labels_as_a_column_vector_still_line_up(tmp_path, capsys) -> None:
    path = tmp_path / "col.npz"
    np.savez(path, probs=Q400.numpy(), target=Y400.numpy()[:, None])
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["calib_err"] == pytest.approx(ERROR400, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[\n {"prob": 0.2, "label": 1},\n {"prob": 0.3 "label": 0}\n]', "at line 3, column"),
        ("[{}]", "row index 0 is an empty object"),
        # A key of one value beside the column lists is ignored, unless it is a candidate.
        ('{"prob": [0.2], "score": 0.9, "label": [1]}', "several columns could hold the prob"),
    ],
)
def test_a_json_document_names_its_own_problem(tmp_path, capsys, text, named) -> None:
    path = tmp_path / "p.json"
    path.write_text(text)
    assert named in one_line_error(capsys, "evaluate", path)


def test_an_untested_label_shows_no_interval(tmp_path, capsys) -> None:
    """Its p columns said — and its interval [+nan, +nan]."""
    path = tmp_path / "tagged.csv"
    tags = ["big"] * 392 + ["tiny"] * 8
    rows = zip(Q400.tolist(), Q400.sqrt().tolist(), Y400.tolist(), tags)
    path.write_text(
        "prob,prob_b,label,tag\n" + "".join(f"{a},{b},{y},{t}\n" for a, b, y, t in rows)
    )
    code, out, err = run_cli(capsys, "compare", path, "--probs", "prob", "--probs-b", "prob_b",
                             "--label", "tag", "--samples", "100")  # fmt: skip
    assert code == 0, err
    (tiny,) = [line for line in out.splitlines() if line.strip().startswith("tiny")]
    assert "nan" not in tiny and tiny.split()[5] == "—"


def test_spiegelhalter_of_one_multiclass_item_names_the_item() -> None:
    from calib_metrics.functional import spiegelhalter_test

    with pytest.raises(ValueError, match="needs at least 2 items"):
        spiegelhalter_test(torch.tensor([[0.2, 0.8]]), torch.tensor([1]))


def test_an_output_that_cannot_be_written_is_refused_before_the_work(tmp_path: Path, capsys):
    """/proc takes no new files: the error had come after the whole computation, as
    torch's or matplotlib's OSError without the option's name."""
    path = tmp_path / "p.csv"
    path.write_text("prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(Q, Y)))
    line = one_line_error(capsys, "evaluate", path, "--html", "/proc/no-such-report.html")
    assert line.startswith(
        "calib-metrics: error: --html /proc/no-such-report.html: cannot be written"
    )
    made = tmp_path / "report.html"  # a writable place: probed, and nothing left behind
    assert cli.main(["evaluate", str(path), "--html", str(made)]) == 0
    assert made.exists()


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("rows.json", "[]", "no rows (an empty JSON list)"),
        ("columns.json", "{}", "no rows (an empty JSON object)"),
        ("lines.jsonl", "", "no rows (an empty file, or blank lines only)"),
        ("blank.jsonl", "\n\n", "no rows (an empty file, or blank lines only)"),
    ],
)
def test_an_empty_json_file_says_it_has_no_rows(tmp_path: Path, capsys, name, text, said):
    """They had said 'expected a list of row objects ... got a JSON list' and 'cannot
    tell which column holds the probabilities (columns: )'."""
    path = tmp_path / name
    path.write_text(text)
    assert one_line_error(capsys, "evaluate", path).endswith(f"{path}: {said}")


def test_padded_sequences_are_read_with_ignore_index(tmp_path: Path, capsys):
    """Padded [B, T, C] tensors could not be evaluated at all: -100 was refused as a
    class id, with no way to drop it and no word of padding."""
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(30, 12, 4, generator=g), -1)
    target = torch.multinomial(probs.reshape(-1, 4), 1, generator=g).reshape(30, 12)
    target[:, 9:] = -100
    probs[:, 9:] = float("nan")  # padding may hold anything
    path = tmp_path / "padded.pt"
    torch.save({"probs": probs, "target": target}, path)
    line = one_line_error(capsys, "evaluate", path)
    assert "holds -100" in line and "(padding? pass --ignore-index -100)" in line
    assert cli.main(["evaluate", str(path), "--ignore-index", "-100", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    metric = CalibrationError(num_classes=4, ignore_index=-100)
    metric.update(probs, target)
    assert got["calib_err"] == pytest.approx(metric.compute().item(), rel=1e-12)


# Which columns are read, and files that cannot be (a user's probe, 2026-11-29): several
# candidate columns are refused rather than one picked silently, a --label column is never
# the labels, and odd files say what is odd.
def write(tmp_path: Path, name: str, header: str, extra=lambda i: "") -> Path:
    rows = [header] + [f"{q},{y}{extra(i)}" for i, (q, y) in enumerate(zip(Q, Y, strict=True))]
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    ("header", "message"),
    [
        # q held 0/1 and had been read as the probabilities: CalibErr 0.5152, silently.
        ("p,label,q", r"could hold the probabilities \(q, p\); name one with --probs"),
        ("prob,target,label", r"could hold the labels \(target, label\); name one with --target"),
    ],
)  # fmt: skip
def test_several_candidate_columns_are_refused(tmp_path, capsys, header, message) -> None:
    path = write(tmp_path, "ambiguous.csv", header, extra=lambda i: f",{i % 2}")
    assert re.search(message, one_line_error(capsys, "evaluate", path))
    # Naming the column settles it.
    option = "--probs" if "probabilities" in message else "--target"
    column = "p" if option == "--probs" else "target"
    code, out, _ = run_cli(capsys, "evaluate", path, option, column, "--samples", "20")
    assert code == 0 and "N = 12 pairs" in out


def test_the_label_column_is_not_the_labels(tmp_path, capsys) -> None:
    # --label label had grouped the items by their own outcome (errors 0.37 and 0.31).
    path = write(tmp_path, "tags.csv", "prob,label")
    line = one_line_error(capsys, "evaluate", path, "--label", "label")
    assert "cannot tell which column holds the labels" in line
    assert "'label' is named by --label" in line
    line = one_line_error(capsys, "evaluate", path, "--label", "label", "--target", "label")
    assert "column 'label' is given as --target and is named by --label" in line
    other = write(tmp_path, "b.csv", "prob,label")
    line = one_line_error(capsys, "compare", path, other, "--label", "label")
    assert "'label' is named by --label" in line


@pytest.mark.parametrize(
    ("text", "name", "message"),
    [
        ("0.8,1\n0.3,0\n", "noheader.csv", "holds numbers only .* needs a header line"),
        ("prob,label\n84.5,1\n30,0\n", "percent.csv", r"84\.5, .* \(percentages\? divide by 100"),
        ("prob\tlabel\n0.3\t0\n", "tabs.csv", r"give a tab-separated file a \.tsv name"),
    ],
)  # fmt: skip
def test_odd_files_say_what_is_odd(tmp_path, capsys, text, name, message) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert re.search(message, one_line_error(capsys, "evaluate", path))


def test_a_pipe_is_not_a_missing_file(tmp_path, capsys) -> None:
    pipe = tmp_path / "fifo.csv"
    os.mkfifo(pipe)  # it exists: "no such file" had said otherwise
    line = one_line_error(capsys, "evaluate", pipe)
    assert "not a regular file (a device or a pipe)" in line


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--n-bins", "5"), "--n-bins counts uniform bins; it needs --binning uniform"),
        (("--binning", "uniform", "--bin-size", "10"), "--bin-size sizes adaptive bins"),
    ],
)
def test_the_other_binnings_size_option_is_refused(tmp_path, capsys, options, message) -> None:
    # Each had been ignored without a word: the output was the same as without it.
    path = write(tmp_path, "good.csv", "prob,label")
    assert message in one_line_error(capsys, "evaluate", path, *options)


@pytest.mark.parametrize("value", ["-3", "0", "100000000000"])
def test_n_bins_out_of_range_is_named_as_the_option_before_the_file_is_read(
    tmp_path, capsys, value
) -> None:
    # It had said "n_bins must be a positive integer" (the library's argument), after
    # reading the file; recalibrate already named --n-bins.
    missing = tmp_path / "missing.csv"
    line = one_line_error(capsys, "evaluate", missing, "--binning", "uniform", "--n-bins", value)
    assert line == (
        f"calib-metrics: error: --n-bins must be an integer in [1, 1048576], got {value}"
    )


def test_two_group_columns_are_refused_and_integer_arrays_are_no_probabilities(
    tmp_path, capsys
) -> None:
    path = write(
        tmp_path, "groups.csv", "prob,label,sentence_id,doc_id", lambda i: f",{i},{i // 4}"
    )
    line = one_line_error(capsys, "evaluate", path, "--interval", "groups")
    assert "several columns could hold the group ids (sentence_id, doc_id)" in line
    # An .npz of multiclass probs beside its argmax ids ("prediction", a usual name) reads
    # the probabilities; it had been refused as two candidates.
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(60, 3, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    file = tmp_path / "mc.npz"
    np.savez(file, probs=probs.numpy(), prediction=probs.argmax(-1).numpy(), target=target.numpy())
    code, out, err = run_cli(capsys, "evaluate", file, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["n"] == 60 * 3  # one-vs-rest pairs of the probabilities


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "pos", "--load-models", os.devnull],
        ["reproduce", "events", "--model", os.devnull],
    ],
)
def test_a_device_as_an_experiments_input_file_is_not_a_missing_file(tmp_path, capsys, argv):
    # /dev/null exists: "no such file" had said otherwise.
    pytest.importorskip("calib_metrics.paper.events.experiment")
    line = one_line_error(capsys, *argv, "--data", tmp_path, "--out", tmp_path / "out")
    assert line.endswith(f"{argv[-2]} {os.devnull}: not a regular file (a device or a pipe)")


@pytest.mark.parametrize(
    ("argv", "wanted", "meant"),
    [
        (["evaluate", "F", "--probs", "PROB"], "PROB", "prob"),
        (["evaluate", "F", "--target", "Label"], "Label", "label"),
        (["evaluate", "F", "--groups", "SENTENCE_ID"], "SENTENCE_ID", "sentence_id"),
        (["evaluate", "F", "--label", "tag"], "tag", "Tag"),
        (["compare", "F", "F", "--id", "TOKEN_ID"], "TOKEN_ID", "token_id"),
    ],
)
def test_a_column_named_in_another_case_gets_did_you_mean(tmp_path, capsys, argv, wanted, meant):
    """The usual names match in any case, a column named by an option only as written:
    "no column 'PROB' (columns: prob, ...)" had left the user to spot the case."""
    path = tmp_path / "p.csv"
    rows = [f"{q},{y},s{i // 3},t{i % 2},{i}" for i, (q, y) in enumerate(zip(Q, Y))]
    path.write_text("prob,label,sentence_id,Tag,token_id\n" + "\n".join(rows) + "\n")
    line = one_line_error(capsys, *[path if a == "F" else a for a in argv])
    assert f"p.csv: no column {wanted!r} (columns: " in line
    assert line.endswith(f"; did you mean {meant!r}?)"), line
    # Without a name in another case, none is guessed.
    line = one_line_error(capsys, "evaluate", path, "--probs", "score")
    assert "did you mean" not in line
