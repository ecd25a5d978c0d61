"""The command line's reader at its edges: column names that differ only in case, group
ids after padding is dropped or written as NaN, bad values shown as the file writes them,
and a stderr whose reader has gone (exit 141, as for stdout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_runs import one_line_error, run_cli

from calib_metrics import cli
from calib_metrics.cli_report import label_lines
from calib_metrics.predictions import read_table

ROOT = Path(__file__).resolve().parents[1]
PAIRS = [(0.2, 0), (0.7, 1), (0.4, 0), (0.9, 1), (0.35, 1), (0.6, 0), (0.15, 0), (0.8, 1)]


def write_csv(path: Path, header: str, rows) -> Path:
    path.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


# -- column names that differ only in case -----------------------------------------------


@pytest.mark.parametrize(
    "header, what, names",
    [
        ("prob,label,Label", "labels", "label, Label"),
        ("Prob,prob,label", "probabilities", "Prob, prob"),
        ("p,P,label", "probabilities", "p, P"),
    ],
)
def test_two_spellings_of_a_usual_name_are_refused_not_one_read(
    tmp_path: Path, capsys, header, what, names
):
    # Names match in any case, and a dict by lower case had kept the last spelling only:
    # `prob,label,Label` read Label (its 1 - label) without a word.
    rows = [(q, y, 1 - y) if what == "labels" else (q, 1 - q, y) for q, y in PAIRS]
    path = write_csv(tmp_path / "case.csv", header, rows)
    line = one_line_error(capsys, "evaluate", path, "--samples", "20")
    option = "--target" if what == "labels" else "--probs"
    assert f"several columns could hold the {what} ({names}); name one with {option}" in line


def test_a_column_named_in_its_own_case_is_read(tmp_path: Path, capsys):
    path = write_csv(tmp_path / "case.csv", "prob,label,Label", [(q, y, 1 - y) for q, y in PAIRS])
    numbers = {}
    for column in ("label", "Label"):
        code, out, err = run_cli(
            capsys, "evaluate", path, "--target", column, "--json", "--samples", "20"
        )
        assert code == 0, err
        numbers[column] = json.loads(out)["brier"]
    assert numbers["label"] != numbers["Label"]


def test_compare_refuses_two_spellings_in_its_second_file(tmp_path: Path, capsys):
    a = write_csv(tmp_path / "a.csv", "prob,label", PAIRS)
    b = write_csv(tmp_path / "b.csv", "prob,label,LABEL", [(q, y, y) for q, y in PAIRS])
    line = one_line_error(capsys, "compare", a, b, "--samples", "20")
    assert "b.csv: several columns could hold the labels (label, LABEL)" in line


@pytest.mark.parametrize("header", ["prob,label,sentence_id,doc_id", "prob,label,doc_id,Doc_Id"])
def test_compare_without_a_group_column_name_refuses_two_candidates(tmp_path: Path, capsys, header):
    # `compare --groups` took the first usual name of each file where evaluate refuses two.
    rows = [(q, y, i // 2, i // 4) for i, (q, y) in enumerate(PAIRS)]
    path = write_csv(tmp_path / "g.csv", header, rows)
    line = one_line_error(capsys, "compare", path, path, "--groups", "--samples", "20")
    assert "several columns could hold the group ids (" in line and "--groups" in line


def test_recalibrate_refuses_two_spellings_of_the_group_column(tmp_path: Path, capsys):
    dev = write_csv(tmp_path / "dev.csv", "prob,label", PAIRS)
    rows = [(q, y, i // 2, i // 4) for i, (q, y) in enumerate(PAIRS)]
    test = write_csv(tmp_path / "test.csv", "prob,label,group,Group", rows)
    out = tmp_path / "out.csv"
    line = one_line_error(capsys, "recalibrate", dev, test, "--groups", "--out", out)
    assert "several columns could hold the group ids (group, Group)" in line


# -- labels written as words, and pandas' JSON layout ------------------------------------


def test_true_and_false_are_labels_wherever_they_are_in_the_column(tmp_path, capsys):
    # Words had been read only when the first label was one: a column starting with 0 and
    # holding a later True was refused as non-numeric 'True'.
    words = [(q, ("0", "True")[y] if i else y) for i, (q, y) in enumerate(PAIRS * 3)]
    path = write_csv(tmp_path / "words.csv", "prob,label", words)
    assert read_table(path).target.tolist() == [float(y) for _, y in PAIRS * 3]
    path.write_text("prob,label\n0.2,0\n0.3,FALSE\n0.8, true \n")
    assert read_table(path).target.tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize("orient", ["columns", "index"])
def test_pandas_default_json_layout_is_refused_with_the_layouts_read(tmp_path, capsys, orient):
    # An object of objects had been read as one row: "row index 0, column 'prob' holds a
    # non-numeric value "{'0': 0.2, ...", or no probability column found.
    columns = {"prob": {str(i): q for i, (q, _) in enumerate(PAIRS)},
               "label": {str(i): y for i, (_, y) in enumerate(PAIRS)}}  # fmt: skip
    rows = {i: {name: column[i] for name, column in columns.items()} for i in columns["prob"]}
    path = tmp_path / "pandas.json"
    path.write_text(json.dumps(columns if orient == "columns" else rows))
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: an object of objects (pandas' default DataFrame.to_json layout" in line
    assert "orient='records'" in line


# -- padding rows, whatever their probability cell holds ---------------------------------


@pytest.mark.parametrize("cell", ["", "pad", "nan", "7.5", "-"])
def test_a_padding_rows_probability_cell_may_hold_anything_in_a_csv(tmp_path, capsys, cell):
    # An empty cell or a placeholder had stopped the command ("line 4, column 'prob' is
    # missing a value"), though the same row in JSON lines (null) was dropped.
    rows = [(q, y) for q, y in PAIRS * 3]
    padded = write_csv(tmp_path / "pad.csv", "prob,label", [*rows[:2], (cell, -100), *rows[2:]])
    plain = write_csv(tmp_path / "plain.csv", "prob,label", rows)
    options = ("--ignore-index", "-100", "--samples", "20", "--json")
    code, out, err = run_cli(capsys, "evaluate", padded, *options)
    assert code == 0, err
    _, expected, _ = run_cli(capsys, "evaluate", plain, *options)
    assert json.loads(out)["calib_err"] == json.loads(expected)["calib_err"]


@pytest.mark.parametrize("value", [None, "pad", "", [0.5], {"q": 1}])
def test_a_padding_rows_probability_may_hold_anything_in_json(tmp_path, capsys, value):
    rows = [{"prob": q, "label": y} for q, y in PAIRS * 3]
    rows.insert(3, {"prob": value, "label": -100})
    path = tmp_path / "pad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = read_table(path, ignore_index=-100)
    assert table.probs.tolist() == [q for q, _ in PAIRS * 3]


def test_a_padding_row_of_a_multiclass_json_file_may_hold_anything(tmp_path):
    rows = [{"probs": [0.2, 0.3, 0.5], "label": 2}, {"probs": None, "label": -100},
            {"probs": "pad", "label": -100}, {"probs": [0.6, 0.3, 0.1], "label": 0}]  # fmt: skip
    path = tmp_path / "pad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = read_table(path, ignore_index=-100)
    assert table.probs.tolist() == [0.2, 0.3, 0.5, 0.6, 0.3, 0.1]
    assert table.kept.tolist() == [True, False, False, True]


def test_a_bad_probability_of_a_kept_row_is_still_named(tmp_path, capsys):
    path = write_csv(tmp_path / "bad.csv", "prob,label", [("", -100), ("pad", 1), (0.3, 0)])
    line = one_line_error(capsys, "evaluate", path, "--ignore-index", "-100")
    assert "line 3, column 'prob' holds a non-numeric value 'pad'" in line


# -- the number of groups after --ignore-index -------------------------------------------


@pytest.fixture
def padded_docs(tmp_path: Path) -> Path:
    """40 documents of 20 rows; every label of the first 35 is padding (-100)."""
    rng = np.random.default_rng(3)
    rows = []
    for doc in range(40):
        for _ in range(20):
            q = float(rng.random())
            rows.append((repr(q), -100 if doc < 35 else int(rng.random() < q), doc))
    return write_csv(tmp_path / "pad.csv", "prob,label,doc_id", rows)


def test_groups_of_padding_only_are_gone_from_the_ids(padded_docs: Path):
    table = read_table(padded_docs, groups="doc_id", ignore_index=-100)
    assert table.groups.unique().tolist() == [0, 1, 2, 3, 4]


def test_groups_of_padding_only_are_not_counted(padded_docs: Path, tmp_path: Path, capsys):
    # The ids were numbered before the padding rows went: "100 pairs in 40 groups", while
    # the warning (and the bootstrap) had 5.
    options = ("--ignore-index", "-100", "--groups", "doc_id", "--samples", "20")
    code, out, err = run_cli(capsys, "evaluate", padded_docs, *options)
    assert code == 0 and "N = 100 pairs in 5 groups," in out, (out, err)
    html = tmp_path / "pad.html"
    code, out, err = run_cli(capsys, "evaluate", padded_docs, *options, "--json", "--html", html)
    assert code == 0 and json.loads(out)["groups"] == 5, err
    assert "100 in 5 groups" in html.read_text(encoding="utf-8")


def test_one_group_is_singular(tmp_path: Path, capsys):
    path = write_csv(tmp_path / "one.csv", "prob,label,doc_id", [(q, y, 7) for q, y in PAIRS])
    code, out, err = run_cli(capsys, "evaluate", path, "--groups", "doc_id", "--samples", "20")
    assert code == 0 and "8 pairs in 1 group," in out, (out, err)


# -- group ids written as NaN ------------------------------------------------------------


@pytest.mark.parametrize("written", ["NaN", "nan", " -NaN"])
def test_a_nan_group_id_in_a_csv_is_missing(tmp_path: Path, capsys, written):
    # Read as text, "NaN" had become a group of its own, as a probability cell reads it
    # as a missing value.
    path = tmp_path / "g.csv"
    path.write_text(f"prob,label,group\n0.2,0,1\n0.3,1,2\n0.4,0,{written}\n0.5,1,{written}\n")
    line = one_line_error(capsys, "evaluate", path, "--groups", "group", "--samples", "20")
    assert line.endswith("g.csv: line 4, column 'group' has a missing group id (NaN)")


def test_a_nan_group_id_in_an_array_file_names_its_row(tmp_path: Path, capsys):
    path = tmp_path / "g.npz"
    groups = np.array([1.0, 2.0, np.nan, 3.0])
    np.savez(
        path, probs=np.array([0.2, 0.3, 0.4, 0.5]), target=np.array([0, 1, 0, 1]), groups=groups
    )
    line = one_line_error(capsys, "evaluate", path, "--groups", "groups", "--samples", "20")
    assert line.endswith("g.npz: row index 2, column 'groups' has a missing group id (NaN)")


def test_nan_among_text_ids_is_an_id(tmp_path: Path):
    # "nan" is Min Nan's ISO 639-3 code, "Nan" a name: among text ids (and as any JSON
    # string) they are ids; only among numbers does a written NaN read as a missing one.
    path = tmp_path / "lang.csv"
    path.write_text("prob,label,lang\n0.9,1,eng\n0.2,0,nan\n0.4,0,deu\n0.7,1,nan\n")
    assert read_table(path, groups="lang").groups.tolist() == [1, 2, 0, 2]  # deu, eng, nan
    rows = [{"prob": 0.9, "label": 1, "doc": "Alice"}, {"prob": 0.2, "label": 0, "doc": "Nan"}]
    named = tmp_path / "names.json"
    named.write_text(json.dumps(rows))
    assert read_table(named, groups="doc").groups.tolist() == [0, 1]
    # JSON values are judged as themselves, not as numpy's text of a mixed list: a NaN
    # number is a missing id among strings, a string "nan" an id among numbers.
    mixed = tmp_path / "mixed.json"
    for ids, expected in ((["a", "b", float("nan"), "a"], None), ([1, 2, "nan", 1], [0, 1, 2, 0])):
        rows = [{"prob": 0.1 * (i + 1), "label": i % 2, "doc": d} for i, d in enumerate(ids)]
        mixed.write_text(json.dumps(rows))
        if expected is None:
            with pytest.raises(
                ValueError, match=r"row index 2, column 'doc' has a missing group id"
            ):
                read_table(mixed, groups="doc")
        else:
            assert read_table(mixed, groups="doc").groups.tolist() == expected


def test_words_that_are_no_number_stay_group_names(tmp_path: Path):
    # As a probability cell holding "NA" is no missing value but not a number, a group
    # id "NA" (or "None") is a name: only what reads as NaN is missing.
    path = tmp_path / "g.csv"
    path.write_text("prob,label,group\n0.2,0,NA\n0.3,1,None\n0.4,0,NA\n")
    assert read_table(path, groups="group").groups.tolist() == [0, 1, 0]


# -- bad values as the file writes them --------------------------------------------------


@pytest.mark.parametrize(
    "cells, shown",
    [
        ("1.0000001,1", "line 3, column 'prob' holds 1.0000001, not a probability in [0, 1]"),
        ("0.5,0.9999999999", "line 3, column 'label' holds 0.9999999999: a label must be"),
    ],
)
def test_a_bad_cell_is_shown_as_written(tmp_path: Path, capsys, cells, shown):
    # Rounded by `:g`, they had read "holds 1, not a probability" and "holds 1: a label
    # must be binary".
    path = tmp_path / "bad.csv"
    path.write_text(f"prob,label\n0.2,0\n{cells}\n")
    assert shown in one_line_error(capsys, "evaluate", path)


def test_a_bad_float32_is_shown_at_its_own_precision(tmp_path: Path, capsys):
    path = tmp_path / "bad.npz"
    probs = np.array([0.2, 1.0000001], dtype=np.float32)
    np.savez(path, probs=probs, target=np.array([0, 1]))
    line = one_line_error(capsys, "evaluate", path)
    assert "row index 1, column 'probs' holds 1.0000001, not a probability" in line


def test_the_cell_shown_after_padding_is_dropped_is_the_bad_one(tmp_path: Path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("prob,label\n5,-100\n0.3,0\n1.0000001,1\n")
    line = one_line_error(capsys, "evaluate", path, "--ignore-index", "-100")
    assert "line 4, column 'prob' holds 1.0000001, not a probability" in line


# -- a stderr whose reader has gone ------------------------------------------------------


def run_with_stderr_unread(*argv) -> int:
    """Run the command with stderr a pipe whose read end is closed before it starts, so
    that its first write fails; its exit code."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "calib_metrics.cli", *map(str, argv)],
            stdout=subprocess.DEVNULL,
            stderr=write_end,
            env=env,
            timeout=300,
        )
    finally:
        os.close(write_end)
    return done.returncode


def test_warnings_to_a_closed_stderr_end_with_exit_141(tmp_path: Path):
    # The warning lines were printed outside the handler of broken pipes: exit code 1.
    path = write_csv(tmp_path / "one.csv", "prob,label", PAIRS[:1])
    assert run_with_stderr_unread("evaluate", path, "--samples", "20") == cli.EXIT_BROKEN_PIPE


def test_an_error_to_a_closed_stderr_ends_with_exit_141(tmp_path: Path):
    assert run_with_stderr_unread("evaluate", tmp_path / "none.csv") == cli.EXIT_BROKEN_PIPE


def run_without_stderr(stderr, *argv, close: bool = False) -> subprocess.CompletedProcess:
    """Run the command with ``stderr`` (or with file descriptor 2 closed); its result."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-m", "calib_metrics.cli", *map(str, argv)],
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        timeout=300,
        preexec_fn=(lambda: os.close(2)) if close else None,
    )


@pytest.mark.skipif(os.name != "posix", reason="reads the descriptor's flags (fcntl)")
def test_a_read_only_stderr_does_not_fail_a_long_run(tmp_path: Path, capsys, monkeypatch):
    # The long-run notice is printed while the command runs: to a read-only
    # stderr (2</dev/null) its OSError ended the command with exit code 2 and no results.
    monkeypatch.setattr(cli, "LONG_RUN_WEIGHTS", 1)
    rows = [(q, round(q * q, 4), y) for q, y in PAIRS * 3]
    path = write_csv(tmp_path / "pairs.csv", "prob,prob_b,label", rows)
    argv = ["compare", str(path), "--probs", "prob", "--probs-b", "prob_b", "--json"]
    with open(os.devnull) as read_only:
        monkeypatch.setattr(sys, "stderr", read_only)
        code = cli.main([*argv, "--samples", "20"])
    assert code == 0 and "difference" in json.loads(capsys.readouterr().out)


def test_a_stderr_without_a_descriptor_is_left_as_it_is(tmp_path: Path, capsys):
    # A mock's fileno() returns no int, and fcntl's TypeError had ended the command.
    from unittest import mock

    path = write_csv(tmp_path / "pairs.csv", "prob,label", PAIRS * 3)
    with mock.patch("sys.stderr"):
        code = cli.main(["evaluate", str(path), "--json", "--samples", "20"])
    assert code == 0 and json.loads(capsys.readouterr().out)["n"] == 3 * len(PAIRS)


@pytest.mark.skipif(os.name != "posix", reason="closes a file descriptor in the child")
def test_a_closed_or_unwritable_stderr_keeps_stdout_clean_and_the_exit_code(tmp_path: Path):
    # With 2>&- Python's stderr is None, and print(file=None) wrote the warning lines into
    # the --json output; with a read-only stderr (2</dev/null) the write raised OSError:
    # exit code 1 and a traceback nobody saw.
    path = write_csv(tmp_path / "few.csv", "prob,label", PAIRS)
    with open(os.devnull) as read_only:
        for stderr, close in ((None, True), (read_only, False)):
            done = run_without_stderr(stderr, "evaluate", path, "--json", "--samples", "20",
                                      close=close)  # fmt: skip
            assert done.returncode == 0, done
            assert json.loads(done.stdout)["n"] == len(PAIRS)
            failed = run_without_stderr(stderr, "evaluate", tmp_path / "none.csv", close=close)
            assert failed.returncode == 2 and failed.stdout == b""


@pytest.mark.skipif(os.name != "posix", reason="closes a file descriptor in the child")
def test_a_closed_or_read_only_stdout_fails_before_any_work(tmp_path: Path):
    # With >&- Python's stdout is None and print() wrote nowhere: the results were lost
    # with exit code 0 (>/dev/full already ended with exit code 2).
    path = write_csv(tmp_path / "pairs.csv", "prob,label", PAIRS * 3)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    html = tmp_path / "report.html"
    argv = [sys.executable, "-m", "calib_metrics.cli", "evaluate", str(path), "--json",
            "--samples", "20", "--html", str(html)]  # fmt: skip
    with open(os.devnull) as read_only:
        for stdout, close in ((None, True), (read_only, False)):
            done = subprocess.run(
                argv, stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=300,
                preexec_fn=(lambda: os.close(1)) if close else None,
            )  # fmt: skip
            lines = done.stderr.decode().splitlines()
            assert done.returncode == 2 and len(lines) == 1, done
            assert lines[0].startswith("calib-metrics: error: stdout is closed (or read-only)")
            assert not html.exists()  # refused before the work


# -- wording -----------------------------------------------------------------------------


def test_a_label_of_one_pair_is_singular():
    line = label_lines({"NN": {"n": 1.0, "calib_err": 0.1, "lower": 0.0, "upper": 0.2}})
    assert line == ["  NN: CalibErr 0.1000 [0.0000, 0.2000], 1 pair"]


def test_too_few_pairs_for_any_bin_size_are_told_to_measure_more(tmp_path: Path, capsys):
    # "a --bin-size of at most 1" had repeated the --bin-size 1 given.
    path = write_csv(tmp_path / "one.csv", "prob,label", PAIRS[:1])
    code, _, err = run_cli(capsys, "evaluate", path, "--bin-size", "1", "--samples", "20")
    few = next(line for line in err.splitlines() if "only 1 bin" in line)
    assert code == 0 and "at most" not in few and "measure more pairs" in few, err
