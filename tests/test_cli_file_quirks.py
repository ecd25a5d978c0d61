"""Files as other programs write them, read as the user means them: labels written ``1``
or ``1.0`` (one label, in a CSV or a JSON file, as group ids), a blank first line,
trailing empty columns, a long text cell in a column never read, a metadata key beside
a JSON file's column lists, a line of spaces above the header; and the messages and
refusals around padding, JSON null, a stray quote, a file named for the wrong delimiter,
``--ignore-index 0`` on binary labels and ``recalibrate --out`` named as another format."""

from __future__ import annotations

import csv
import json
import threading
from contextlib import contextmanager
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


@pytest.mark.parametrize(
    "spellings, keys",
    [
        (["01", "1"], ["01", "1"]),
        (["-0", "0"], ["-0", "0"]),
        (["1e3", "1000"], ["1000", "1e3"]),
        (["02134", "2134"], ["02134", "2134"]),
        (["2.00", "2", "x"], ["2", "x"]),
        (["1.5", "1.50"], ["1.5", "1.50"]),
    ],
)
def test_labels_are_kept_as_written_but_for_zero_decimals(tmp_path, capsys, spellings, keys):
    """Only ``1.0``-like text folds to its integer; ``01``, ``-0``, ``1e3`` and a zip code's
    ``02134`` had become other labels (``1``, ``0``, ``1000``, ``2134``) when the whole
    column held numbers, and kept otherwise: the key depended on the other rows."""
    rows = [f"{row},{spellings[i % len(spellings)]}" for i, row in enumerate(PLAIN)]
    path = _csv(tmp_path / "tags.csv", rows, "prob,label,tag")
    assert sorted(_evaluate(capsys, path, "--label", "tag")["per_label"]) == keys


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


def test_recalibrate_writes_kept_length_group_ids_beside_their_rows(tmp_path, capsys) -> None:
    """An .npz's group ids of one per label kept (as read_table takes them) had raised an
    IndexError while --out was written; padding rows get an empty group."""
    y = np.array(LABELS)
    y[6::7] = -100
    sentences = np.arange(N) // 10
    files = []
    for name in ("dev", "test"):
        files.append(tmp_path / f"{name}.npz")
        np.savez(files[-1], prob=np.array(PROBS), label=y, sentence=sentences[y != -100])
    out = tmp_path / "out.csv"
    argv = ["recalibrate", *files, "--groups", "sentence", "--ignore-index", "-100"]
    code, _, err = run_cli(capsys, *argv, "--out", out, "--samples", "20")
    assert code == 0, err
    written = [(r["target"], r["group"]) for r in csv.DictReader(out.open())]
    given = iter(sentences[y != -100].tolist())
    assert written == [(str(t), "" if t == -100 else str(next(given))) for t in y.tolist()]


# -- CSV/TSV layouts ------------------------------------------------------------------------


def test_a_line_of_spaces_above_the_header_is_blank(tmp_path, capsys) -> None:
    """It had been taken for a header naming no column (read before the blank-line
    skipping came, as it is again)."""
    plain = _csv(tmp_path / "plain.csv", PLAIN)
    path = tmp_path / "p.csv"
    path.write_text("   \n" + plain.read_text())
    assert _evaluate(capsys, path)["calib_err"] == _evaluate(capsys, plain)["calib_err"]


def test_a_stray_quote_is_refused_with_its_line(tmp_path, capsys) -> None:
    """A quote opened in a text cell and never closed made the rest of the file one
    cell: with the field limit raised, 200,000 rows had read as 6 pairs (exit 0)."""
    texts = ['"he said hi' if i == 5 else "ok" for i in range(N)]
    rows = [f"{row},{text}" for row, text in zip(PLAIN, texts)]
    path = _csv(tmp_path / "p.csv", rows, "prob,label,text")
    line = one_line_error(capsys, "evaluate", path)
    assert "p.csv: line 7: a quoted field (column 'text') opens with a \" that never" in line
    # A field over several lines that closes is read as before.
    rows[5] = f'{PLAIN[5]},"two\nlines"'
    assert _evaluate(capsys, _csv(tmp_path / "q.csv", rows, "prob,label,text"))["n"] == N


def test_a_stray_quote_in_any_column_is_refused_with_its_line(tmp_path, capsys) -> None:
    """A quote never closed in a column but the last left the file's last record short: it
    was refused as "line 1001 has a different number of fields", the file's last line,
    without a word of the quote on line 7."""
    rows = [f"{(i % 10) / 10 + 0.05:.2f},{i % 2},ok" for i in range(1000)]
    for column, name in ((0, "prob"), (1, "label")):
        cells = rows[5].split(",")
        cells[column] = '"' + cells[column]
        body = [*rows[:5], ",".join(cells), *rows[6:]]
        path = _csv(tmp_path / f"{name}.csv", body, "prob,label,text")
        line = one_line_error(capsys, "evaluate", path)
        assert f"line 7: a quoted field (column '{name}') opens with a \" that never" in line
    # A record over several lines with a field too few is named at its first line.
    body = [*rows[:5], '0.25,"two\nlines"', *rows[6:]]
    line = one_line_error(capsys, "evaluate", _csv(tmp_path / "short.csv", body, "prob,label,text"))
    assert line.endswith(
        "short.csv: lines 7-8 (a quoted cell over lines) has a different number of fields"
    )


@pytest.mark.parametrize(
    "last, name",
    [('0.5,"1\n', "label"), ('0.5,"1\r\n', "label"), ('0.6,"0', "label"), ('"0.5,1\n', "prob")],
)
def test_a_stray_quote_on_the_last_line_is_refused(tmp_path, capsys, last, name) -> None:
    """A quote that never closes on the file's last line read as a cell of its own:
    ``0.5,"1`` was the label 1 (exit 0), ``"0.5,1`` a record a field short."""
    path = _csv(tmp_path / "p.csv", PLAIN)
    path.write_bytes(path.read_bytes() + last.encode())
    line = one_line_error(capsys, "evaluate", path)
    assert f"p.csv: line {N + 2}: a quoted field (column '{name}') opens with a \" that" in line


def test_a_short_cell_over_lines_read_as_a_number_is_refused(tmp_path, capsys) -> None:
    """A stray quote that a later one closes two lines on, in a column read as numbers, was
    named at the line the cell ends on, with a hint at decimal commas for its rows' commas."""
    rows = [*PLAIN]
    rows[5], rows[7] = '"' + rows[5], rows[7].replace(",", '",')
    line = one_line_error(capsys, "evaluate", _csv(tmp_path / "p.csv", rows))
    # (Its first and last lines read as a row's end and start, as a stray quote's do.)
    assert "p.csv: line 7: a \" opens a quoted field (column 'prob') that runs to line 9" in line
    assert "decimal comma" not in line
    # A bad value in a record over lines is named at the line the record starts on.
    rows = [f"{row},ok" for row in PLAIN]
    rows[5] = f'{PROBS[5]},x,"two\nlines"'
    line = one_line_error(capsys, "evaluate", _csv(tmp_path / "q.csv", rows, "prob,label,text"))
    assert "q.csv: line 7, column 'label' holds a non-numeric value 'x'" in line


def test_a_stray_quote_closed_rows_later_is_refused(tmp_path, capsys) -> None:
    """A stray quote that a later one closes (an inch mark: 5" screen) made the rows between
    one cell: 200,000 rows had read as 50,005 pairs (exit 0) once the field limit was
    raised; before, the limit had refused it. A field over many lines past the csv
    module's default limit is refused, with its lines."""
    rows = 12_000
    texts = ["a note of twenty ch" for _ in range(rows)]
    texts[5], texts[11_000] = '"he said hi', 'a 5" screen'
    body = [f"{(i % 10) / 10 + 0.05:.2f},{i % 2},{text}" for i, text in enumerate(texts)]
    path = _csv(tmp_path / "p.csv", body, "prob,label,text")
    line = one_line_error(capsys, "evaluate", path)
    assert "p.csv: lines 7-11002: a quoted field (column 'text') runs over 10,996 lines" in line
    # A long cell on one line is read.
    texts[5], texts[11_000] = "x" * 200_000, "a 5 inch screen"
    body = [f"{(i % 10) / 10 + 0.05:.2f},{i % 2},{text}" for i, text in enumerate(texts)]
    assert _evaluate(capsys, _csv(tmp_path / "q.csv", body, "prob,label,text"))["n"] == rows


def test_a_field_limit_set_by_another_thread_is_left_alone(tmp_path, capsys, monkeypatch):
    """The reader puts back the limit it found only if the limit is still its own."""
    from calib_metrics.predictions import _text

    path = _csv(tmp_path / "p.csv", PLAIN)
    limit = csv.field_size_limit()
    set_meanwhile = threading.Event()
    reading = _text._long_fields

    @contextmanager
    def long_fields_and_another_limit():
        with reading():
            csv.field_size_limit(12_345)  # another thread's own setting, while a file is read
            set_meanwhile.set()
            yield

    monkeypatch.setattr(_text, "_long_fields", long_fields_and_another_limit)
    try:
        _evaluate(capsys, path)
        assert set_meanwhile.is_set() and csv.field_size_limit() == 12_345
    finally:
        csv.field_size_limit(limit)


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


SIGNED = [f"{q},{2 * y - 1}" for q, y in zip(PROBS, LABELS)]  # an SVM's -1/+1 labels


def test_minus_one_of_plus_minus_one_labels_is_called_a_class_not_padding(tmp_path, capsys):
    """A -1/+1 file had been told "(padding? pass --ignore-index -1)", and following the
    hint dropped every negative and scored the positives alone, exit 0."""
    path = _csv(tmp_path / "p.csv", SIGNED)
    line = one_line_error(capsys, "evaluate", path)
    assert "holds -1: a label must be binary (0 or 1) (labels -1/+1? write -1 as 0)" in line
    assert "--ignore-index" not in line
    line = one_line_error(capsys, "evaluate", path, "--ignore-index", "-1")
    assert "--ignore-index -1 drops 60 of 120 rows and leaves labels all 1: -1 is a class" in line
    assert "if -1 is padding, give it a label of its own, such as -100" in line


def _dropping_minus_ones(capsys, path: Path) -> tuple[int, dict, str]:
    code, out, err = run_cli(
        capsys, "evaluate", path, "--samples", "20", "--json", "--ignore-index", "-1"
    )
    return code, json.loads(out) if code == 0 else {}, err


def test_a_few_minus_ones_beside_labels_all_1_are_dropped_with_a_warning(tmp_path, capsys):
    """Under a tenth of the rows, -1 beside labels all 1 may be an imbalanced -1/+1 file's
    negatives or padding: the rows are dropped as asked, and the warning names both
    readings (they had been dropped without a word, scoring the positives alone)."""
    ones = [row for row in PLAIN if row.endswith(",1")] + ["0.5,-1"] * 6
    code, summary, err = _dropping_minus_ones(capsys, _csv(tmp_path / "o.csv", ones))
    assert code == 0 and summary["n"] == 60, err
    assert "--ignore-index -1 drops 6 of 66 rows and leaves labels all 1" in err
    assert "write it as 0" in err and "label it -100" in err
    mixed = PLAIN + ["0.5,-1"] * 6
    code, _, err = _dropping_minus_ones(capsys, _csv(tmp_path / "m.csv", mixed))
    assert code == 0 and "--ignore-index -1 drops" not in err, err


def test_padding_of_a_few_rows_is_still_dropped(tmp_path, capsys) -> None:
    """Padding rows, a few of a file whose other labels are 0 and 1 (or even of one
    class, where they are under a tenth of the rows), are dropped as before."""
    padded = PLAIN + ["0.5,-1"] * 20
    assert _evaluate(capsys, _csv(tmp_path / "p.csv", padded), "--ignore-index", "-1")["n"] == N
    ones = [row for row in PLAIN if row.endswith(",1")] + ["0.5,-1"] * 6
    assert _evaluate(capsys, _csv(tmp_path / "o.csv", ones), "--ignore-index", "-1")["n"] == 60


def test_ignore_index_0_stays_a_class_of_a_multiclass_file(tmp_path, capsys) -> None:
    path = tmp_path / "p.npz"
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]] * 20)
    np.savez(path, probs=probs, target=np.array([2, 0] * 20))
    # 20 items of class 2 kept, 3 one-vs-rest pairs each.
    assert _evaluate(capsys, path, "--ignore-index", "0")["n"] == 60


# -- recalibrate --out ------------------------------------------------------------------------


OTHER_FORMAT = "is written as CSV text: give it a .csv name"
OTHER_NAMES = ["out.npz", "out.json", "out.pt", "out.jsonl", "out.NPY", "out.tsv"]
COMPRESSED = "is written as plain CSV text, not compressed"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        *((name, OTHER_FORMAT) for name in OTHER_NAMES),
        # Plain CSV text had been written under a .csv.gz name, which nothing reads back.
        *((name, COMPRESSED) for name in ["out.csv.gz", "out.csv.bz2", "out.xz", "out.ZIP"]),
    ],
)
def test_recalibrate_out_must_be_a_csv_name(tmp_path, capsys, name, said) -> None:
    """It had written CSV text under any name (an .npz that no reader then took)."""
    dev = _csv(tmp_path / "dev.csv", PLAIN)
    test = _csv(tmp_path / "test.csv", PLAIN)
    out = tmp_path / name
    line = one_line_error(capsys, "recalibrate", dev, test, "--out", out, "--samples", "20")
    assert f"--out {out}: {said}" in line
    assert not out.exists()


@pytest.mark.parametrize("name", ["out.txt", "out", "out.CSV"])
def test_recalibrate_out_takes_a_name_of_no_other_format(tmp_path, capsys, name) -> None:
    """A .txt, a name without suffix (or a device: /dev/stdout) had been written before
    .csv was required, and no reader takes them for another format."""
    dev = _csv(tmp_path / "dev.csv", PLAIN)
    test = _csv(tmp_path / "test.csv", PLAIN)
    out = tmp_path / name
    code, _, err = run_cli(capsys, "recalibrate", dev, test, "--out", out, "--samples", "20")
    assert code == 0, err
    assert len(out.read_text().splitlines()) == N + 1


def test_loose_quoting_is_read_by_the_fast_reader(tmp_path, monkeypatch) -> None:
    """A cell such as '"5" screen' (a quote the csv module reads loosely) sent the whole
    file to the exact reader, four times slower, once the fast reader read strictly for
    a quote left open on the last line: it now reads such a file again, loosely."""
    from calib_metrics.predictions import _text, read_table

    path = tmp_path / "loose.csv"
    path.write_text('prob,label,note\n0.2,0,plain\n0.7,1,"5" screen\n0.4,0,x\n')

    def exact(*args, **kwargs):
        raise AssertionError("the exact reader read a file the fast one reads")

    monkeypatch.setattr(_text, "_read_delimited_exact", exact)
    read = read_table(path)
    assert read.probs.tolist() == [0.2, 0.7, 0.4] and read.target.tolist() == [0, 1, 0]
    monkeypatch.undo()
    # Beside loose quoting, a quote left open on the last line is refused all the same.
    for end in ("\n", ""):
        path.write_text(f'prob,note,label\n0.2,plain,0\n0.7,"5" screen,1\n0.4,x,"0{end}')
        with pytest.raises(ValueError, match=r"line 4: a quoted field .* never closes"):
            read_table(path)


@pytest.mark.parametrize(
    ("suffix", "cell"), [(".csv", '"[0.7, 0.2, 0.1]"'), (".tsv", "[0.7,0.2,0.1]")]
)
def test_a_text_cell_of_class_probabilities_names_the_multiclass_formats(
    tmp_path, capsys, suffix, cell
) -> None:
    """A CSV cell '[0.7, 0.2, 0.1]' (multiclass probabilities in one column) had been told
    to write decimal points for its commas; it is told where C probabilities per row go."""
    sep = "," if suffix == ".csv" else "\t"
    path = tmp_path / f"p{suffix}"
    path.write_text(f"prob{sep}label\n0.3{sep}1\n{cell}{sep}0\n")
    line = one_line_error(capsys, "evaluate", path)
    assert f"p{suffix}: line 3, column 'prob' holds a list of 3 numbers" in line
    assert "decimal comma" not in line
    assert "an [N, C] array (.npy, .npz, .pt)" in line and "a JSON list per row" in line


def test_a_json_string_of_class_probabilities_is_told_to_drop_the_quotes(tmp_path, capsys) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prob": 0.3, "label": 1}\n{"prob": "[0.7, 0.2, 0.1]", "label": 0}\n')
    line = one_line_error(capsys, "evaluate", path)
    assert "column 'prob' holds a list of 3 numbers" in line and "written as text" in line
    assert "decimal comma" not in line and "a JSON list, without quotes" in line


@pytest.mark.parametrize(
    ("cell", "said"),
    [
        ('"[0, 0, 1]"', "class 2's one-hot label: write its class id, 2"),
        ('"[0.5, 0.5]"', "a label cell holds one number: 0/1, or a class id 0..C-1"),
    ],
)
def test_a_list_in_the_label_column_is_read_as_a_label_not_probabilities(
    tmp_path, capsys, cell, said
) -> None:
    """A label cell '[0, 0, 1]' had been told it is how 'a row's class probabilities are
    written'; it is a one-hot label, and the one number to write is its class id."""
    path = tmp_path / "p.csv"
    path.write_text(f"prob,label\n0.3,1\n0.7,{cell}\n")
    line = one_line_error(capsys, "evaluate", path)
    assert "line 3, column 'label' holds a list of" in line and said in line
    assert "class probabilities are written" not in line


# -- probabilities [N, 1] beside labels [N]: the binary reading is said ---------------------


def test_one_probability_column_beside_class_ids_says_it_is_read_binary(tmp_path, capsys):
    # The functions refuse probs [N, 1] beside class ids [N]; the command reads binary
    # pairs, and had said nothing: class ids all 0 beside 0.7 gave CalibErr 0.70.
    path = tmp_path / "col.npz"
    np.savez(path, probs=np.full((200, 1), 0.7), target=np.zeros(200, dtype=int))
    code, _, err = run_cli(capsys, "evaluate", path, "--samples", "20")
    assert code == 0
    assert "probs has shape (200, 1) beside 200 labels: read as one probability per label" in err


@pytest.mark.parametrize("labels", [(200,), (200, 1)])
def test_probabilities_of_the_labels_shape_are_read_without_a_word(tmp_path, capsys, labels):
    path = tmp_path / "pairs.npz"
    probs = np.full(labels, 0.7)
    np.savez(path, probs=probs, target=(np.arange(200) % 3 > 0).astype(int).reshape(labels))
    code, _, err = run_cli(capsys, "evaluate", path, "--samples", "20")
    assert code == 0 and "shape" not in err, err
