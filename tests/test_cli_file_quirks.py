"""Files as other programs write them, read as the user means them: labels written ``1``
or ``1.0`` (one label, in a CSV or a JSON file, as group ids), a blank first line,
trailing empty columns, a long text cell in a column never read, a metadata key beside
a JSON file's column lists; and the messages and refusals around padding, JSON null, a
file named for the wrong delimiter, ``--ignore-index 0`` on binary labels and
``recalibrate --out`` with another suffix than .csv."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from cli_runs import one_line_error, run_cli

N = 120
PROBS = [round((i % 10) / 10 + 0.05, 2) for i in range(N)]
LABELS = [i % 2 for i in range(N)]


def _evaluate(capsys, path: Path, *options) -> dict:
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json", *options)
    assert code == 0, err
    return json.loads(out)


def _csv(path: Path, text_rows: list[str], header: str = "prob,label") -> Path:
    path.write_text(header + "\n" + "".join(row + "\n" for row in text_rows))
    return path


PLAIN = [f"{q},{y}" for q, y in zip(PROBS, LABELS)]


# -- labels: one spelling per label, as group ids -------------------------------------------


def test_one_and_one_point_zero_are_one_label(tmp_path, capsys) -> None:
    """In one CSV, ``1`` and ``1.0`` had been two labels (group ids 5 and 5.0 are one)."""
    rows = [f"{row},{'1' if i % 2 else '1.0'}" for i, row in enumerate(PLAIN)]
    path = _csv(tmp_path / "tags.csv", rows, "prob,label,tag")
    per_label = _evaluate(capsys, path, "--label", "tag")["per_label"]
    assert list(per_label) == ["1"] and per_label["1"]["n"] == N


def test_compare_reads_a_csvs_and_a_json_files_labels_alike(tmp_path, capsys) -> None:
    """A CSV's 1.0 and a JSON file's 1.0 (read as '1') had been different labels, and
    the command refused files that label every item alike."""
    tags = [float(1 + i % 3 // 2) for i in range(N)]
    a = _csv(tmp_path / "a.csv", [f"{r},{t}" for r, t in zip(PLAIN, tags)], "prob,label,tag")
    b = tmp_path / "b.jsonl"
    b.write_text(
        "".join(
            json.dumps({"prob": q * 0.9, "label": y, "tag": t}) + "\n"
            for q, y, t in zip(PROBS, LABELS, tags)
        )
    )
    code, out, err = run_cli(capsys, "compare", a, b, "--label", "tag", "--samples", "20", "--json")
    assert code == 0, err
    assert list(json.loads(out)["per_label"]) == ["1", "2"]


def test_group_ids_written_back_are_as_the_file_writes_them(tmp_path, capsys) -> None:
    """recalibrate's --out keeps each group id as written (5.0 stays 5.0: it joins back)."""
    rows = [f"{row},{i // 10}.0" for i, row in enumerate(PLAIN)]
    dev = _csv(tmp_path / "dev.csv", PLAIN)
    test = _csv(tmp_path / "test.csv", rows, "prob,label,doc")
    out = tmp_path / "out.csv"
    argv = ["recalibrate", dev, test, "--groups", "doc", "--out", out, "--samples", "20"]
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert [r["group"] for r in csv.DictReader(out.open())] == [f"{i // 10}.0" for i in range(N)]


# -- CSV/TSV layouts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, newline, delimiter",
    [("p.csv", "\n", ","), ("p.csv", "\r\n", ","), ("p.tsv", "\n", "\t")],
)
def test_a_blank_first_line_is_skipped(tmp_path, capsys, name, newline, delimiter) -> None:
    """It had made the file "empty (a header row is needed)"; blank lines elsewhere were
    skipped already."""
    rows = [row.replace(",", delimiter) for row in ["prob,label", *PLAIN]]
    plain = tmp_path / f"plain{Path(name).suffix}"
    plain.write_text("".join(row + "\n" for row in rows))
    path = tmp_path / name
    path.write_bytes((newline * 2 + newline.join(rows) + newline).encode())
    assert _evaluate(capsys, path)["calib_err"] == _evaluate(capsys, plain)["calib_err"]


def test_lines_are_counted_after_blank_first_lines(tmp_path, capsys) -> None:
    path = tmp_path / "p.csv"
    path.write_text("\n\nprob,label\n0.2,0\n1.7,1\n")
    line = one_line_error(capsys, "evaluate", path)
    assert "line 5, column 'prob' holds 1.7" in line


@pytest.mark.parametrize("tail", [",", ",,", ",,,"])
def test_trailing_empty_columns_are_left_out(tmp_path, capsys, tail) -> None:
    """``prob,label,,`` (a spreadsheet's export) had "repeated the column name ''"."""
    plain = _csv(tmp_path / "plain.csv", PLAIN)
    path = _csv(tmp_path / "p.csv", [row + tail for row in PLAIN], "prob,label" + tail)
    assert _evaluate(capsys, path)["calib_err"] == _evaluate(capsys, plain)["calib_err"]


def test_a_header_of_empty_names_says_so(tmp_path, capsys) -> None:
    path = _csv(tmp_path / "p.csv", ["0.2,1", "0.3,0"], ",")
    line = one_line_error(capsys, "evaluate", path)
    assert "line 1, the first one not blank, names no column" in line


def test_a_long_text_cell_in_a_column_never_read(tmp_path, capsys) -> None:
    """A document's text over the csv module's default field limit (131,072 characters)
    had stopped the file; the process's limit is its own again afterwards."""
    text = ("word " * 30_000).strip()
    rows = [f'"{text if i == 3 else "short"}",{row}' for i, row in enumerate(PLAIN)]
    path = _csv(tmp_path / "docs.csv", rows, "doc_text,prob,label")
    limit = csv.field_size_limit()
    assert _evaluate(capsys, path)["n"] == N
    assert csv.field_size_limit() == limit


def test_a_comma_separated_tsv_gets_a_hint(tmp_path, capsys) -> None:
    path = _csv(tmp_path / "p.tsv", PLAIN)
    line = one_line_error(capsys, "evaluate", path)
    assert "(the header holds commas: give a comma-separated file a .csv name)" in line


# -- JSON -------------------------------------------------------------------------------------


def test_a_metadata_key_beside_column_lists_is_ignored(tmp_path, capsys) -> None:
    """As an .npz's unused member is: it had stopped the file ("key 'model' holds a str")."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"model": "bert", "prob": PROBS, "label": LABELS}))
    array = tmp_path / "p.npz"
    np.savez(array, model=np.array("bert"), prob=np.array(PROBS), label=np.array(LABELS))
    assert _evaluate(capsys, path)["calib_err"] == _evaluate(capsys, array)["calib_err"]
    line = one_line_error(capsys, "evaluate", path, "--probs", "model")
    assert "column 'model' holds a str, not an array of values" in line


def test_a_json_null_probability_is_called_null(tmp_path, capsys) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prob": 0.2, "label": 0}\n{"prob": null, "label": 1}\n')
    assert "line 2, column 'prob' is missing (null)" in one_line_error(capsys, "evaluate", path)


# -- padding ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, text, line",
    [
        ("empty.csv", "prob,label\n0.2,0\n,-100\n0.7,1\n", 3),
        ("word.csv", "prob,label\n0.2,0\npad,-100\n0.7,1\n", 3),
        ("word.jsonl", '{"prob": 0.2, "label": 0}\n{"prob": "pad", "label": -100}\n', 2),
        ("null.jsonl", '{"prob": 0.2, "label": 0}\n{"prob": null, "label": -100}\n', 2),
        ("nan.csv", "prob,label\n0.2,0\nnan,-100\n0.7,1\n", 3),
    ],
)
def test_padding_is_named_as_such_whatever_its_probability(tmp_path, capsys, name, text, line):
    """An empty or placeholder probability beside -100 had been refused as a missing or
    non-numeric probability, without the hint a NaN beside it got."""
    path = tmp_path / name
    path.write_text(text)
    message = one_line_error(capsys, "evaluate", path)
    assert f"line {line}, column 'label' holds -100" in message
    assert "(padding? pass --ignore-index -100)" in message


@pytest.mark.parametrize("label", ["0", "1"])
def test_ignore_index_0_or_1_is_refused_for_binary_labels(tmp_path, capsys, label) -> None:
    """--ignore-index 0 had dropped every negative of a binary file without a word."""
    path = _csv(tmp_path / "p.csv", PLAIN)
    line = one_line_error(capsys, "evaluate", path, "--ignore-index", label)
    assert f"--ignore-index {label} would drop every pair labelled {label}" in line
    assert "such as -100" in line


def test_ignore_index_0_stays_a_class_of_a_multiclass_file(tmp_path, capsys) -> None:
    path = tmp_path / "p.npz"
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]] * 20)
    np.savez(path, probs=probs, target=np.array([2, 0] * 20))
    # 20 items of class 2 kept, 3 one-vs-rest pairs each.
    assert _evaluate(capsys, path, "--ignore-index", "0")["n"] == 60


# -- recalibrate --out ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["out.npz", "out.json", "out.pt", "out"])
def test_recalibrate_out_must_be_a_csv_name(tmp_path, capsys, name) -> None:
    """It had written CSV text under any name (an .npz that no reader then took)."""
    dev = _csv(tmp_path / "dev.csv", PLAIN)
    test = _csv(tmp_path / "test.csv", PLAIN)
    out = tmp_path / name
    line = one_line_error(capsys, "recalibrate", dev, test, "--out", out, "--samples", "20")
    assert f"--out {out}: is written as CSV text: give it a .csv name" in line
    assert not out.exists()
