"""The CSV reader converts only the columns used, as numbers where they are, and still
names a bad cell as the file writes it; the evaluate command's notices and warnings from
the user probe (a long group bootstrap, two classes read one-vs-rest, an empty cell,
``-`` for stdin)."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics import cli
from calib_metrics.cli import main
from calib_metrics.predictions import _load, read_table


def test_only_the_columns_used_are_read(tmp_path: Path) -> None:
    file = tmp_path / "tokens.csv"
    file.write_text("prob,label,tag,note\n0.9,1,NN,x\n0.2,0,VB,y\n")
    table = _load(file)
    read = read_table(file)
    assert read.probs.tolist() == [0.9, 0.2]
    table.want(["prob", "label"])
    table["prob"]
    assert set(table._loaded) == {"prob", "label"}  # tag and note were never kept
    assert isinstance(table["prob"], np.ndarray) and table["prob"].dtype == np.float64
    assert list(table.lines) == [2, 3]


def test_a_number_out_of_range_is_named_as_written(tmp_path: Path) -> None:
    file = tmp_path / "pairs.csv"
    file.write_text("prob,label\r\n0.5,1\r\n 1e3 ,0\r\n")
    with pytest.raises(ValueError, match=r"line 3, column 'prob' holds 1e3, not a prob"):
        read_table(file)


def test_blank_lines_keep_their_line_numbers(tmp_path: Path) -> None:
    file = tmp_path / "pairs.csv"
    file.write_text("prob,label\n0.5,1\n\n1.5,0\n")
    with pytest.raises(ValueError, match=r"line 4, column 'prob' holds 1.5"):
        read_table(file)


def test_an_empty_probability_cell_is_named_so(tmp_path: Path) -> None:
    file = tmp_path / "pairs.csv"
    file.write_text("prob,label\n0.5,1\n,0\n")
    with pytest.raises(ValueError, match=r"line 3, column 'prob' is missing a value \(an empty"):
        read_table(file)


def test_stdin_is_refused_as_such(capsys) -> None:
    assert main(["evaluate", "-"]) == 2
    assert "reading from stdin is not supported: give a file path" in capsys.readouterr().err


def test_evaluate_announces_a_long_group_bootstrap(tmp_path: Path, capsys, monkeypatch) -> None:
    file = tmp_path / "tokens.csv"
    rows = [f"{(i % 97) / 97:.4f},{i % 2},s{i // 5}" for i in range(200)]
    file.write_text("prob,label,sentence\n" + "\n".join(rows) + "\n")
    monkeypatch.setattr(cli, "LONG_RUN_WEIGHTS", 40 * 100)
    assert main(["evaluate", str(file), "--groups", "sentence", "--samples", "100"]) == 0
    err = capsys.readouterr().err
    assert "drawing 100 group-bootstrap resamples of 40 groups" in err
    # With about how long: "minutes" had been said of a run of 15 minutes and more.
    assert "the draws take about 1 minute on a CPU core, more with large groups" in err
    monkeypatch.setattr(cli, "WEIGHTS_PER_SECOND", 40 * 100 / (20 * 60))  # 20 minutes' work
    assert main(["evaluate", str(file), "--groups", "sentence", "--samples", "100"]) == 0
    assert "the draws take about 20 minutes on a CPU core" in capsys.readouterr().err


def test_two_classes_one_vs_rest_warn(tmp_path: Path) -> None:
    q = torch.rand(200, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    file = tmp_path / "sk.npz"
    np.savez(file, probs=torch.stack([1 - q, q], 1).numpy(), target=(q > 0.5).long().numpy())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cli.multiclass_input(*read_table(file)[:2], file, "one_vs_rest")
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert any("2 classes read one-vs-rest" in m and "p[:, 1]" in m for m in messages)


def test_a_short_row_is_named_by_its_line_alone(tmp_path, capsys) -> None:
    # The lazy reader had wrapped row errors as "column 'p' cannot be read (...)", blaming
    # a column that was fine and naming the file twice.
    path = tmp_path / "f.csv"
    path.write_text("p,y\n0.5,1\n0.5\n")
    code = main(["evaluate", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == f"calib-metrics: error: {path}: line 3 has a different number of fields"


def test_the_probabilities_are_never_found_as_the_group_ids(tmp_path, capsys) -> None:
    # The group-id search had taken the --probs column (read as text, "0.1" and "0.10"
    # two groups): it looks among the columns no other option took.
    rows = [f"{v},{y}" for v in ("0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7")
            for v, y in ((v, 1), (v + "0", 0))]  # fmt: skip
    path = tmp_path / "gp.csv"
    path.write_text("sentence_id,y\n" + "\n".join(rows) + "\n")
    argv = ["evaluate", str(path), "--probs", "sentence_id", "--interval", "groups"]
    assert main([*argv, "--samples", "20", "--json"]) == 2
    assert capsys.readouterr().err == (
        f"calib-metrics: error: {path} has no group-id column (columns: sentence_id, y; "
        "'sentence_id' is the probabilities): name one with --groups COLUMN\n"
    )


def test_a_file_too_large_for_the_memory_is_one_line(tmp_path, capsys, monkeypatch) -> None:
    # Row errors left unwrapped let a MemoryError out of the reader as a traceback.
    from calib_metrics import predictions

    def out_of_memory(self, names):
        raise MemoryError

    monkeypatch.setattr(predictions._DelimitedTable, "_read_fast", out_of_memory)
    path = tmp_path / "big.csv"
    path.write_text("p,y\n0.5,1\n0.25,0\n")
    assert main(["evaluate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err == f"calib-metrics: error: {path}: too large to read into the memory available "
        "(an array file, .npz or .pt, takes less than a text file's rows)"
    )


def test_a_bad_byte_past_the_first_chunk_is_named_without_a_wrong_offset(tmp_path, capsys):
    # The offset had counted from the decoder's chunk: 808 for the byte at 9000.
    rows = "".join(f"0.{i % 9 + 1},{i % 2}\n" for i in range(2000))
    data = ("p,y\n" + rows).encode()
    data = data[:9000] + b"\xff" + data[9000:]
    path = tmp_path / "latin.csv"
    path.write_bytes(data)
    assert main(["evaluate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8 text (it holds the byte 0xff)" in err and "offset" not in err


@pytest.mark.parametrize("ending", ["\n", "\n\n\n", "\r\n  \r\n", "\t\n"])
def test_a_file_ending_in_blank_lines_is_read_once(tmp_path: Path, monkeypatch, ending) -> None:
    """The fast reader had handed a file ending in a blank line (a writer's extra newline)
    to the exact reader, which read it all again; the line numbers stay the file's."""
    from calib_metrics.predictions import _text

    def read_again(*args):
        raise AssertionError("read twice")

    monkeypatch.setattr(_text, "_read_delimited_exact", read_again)
    file = tmp_path / "pairs.csv"
    file.write_text("prob,label\n0.5,1\n0.25,0\n" + ending)
    assert read_table(file).probs.tolist() == [0.5, 0.25]
    table = _load(file)
    table.want(["prob", "label"])
    assert list(table.lines) == [2, 3]
    monkeypatch.undo()  # a bad cell is looked up as written by the exact reader
    file.write_text("prob,label\n0.5,1\n1.5,0\n" + ending)
    with pytest.raises(ValueError, match=r"line 3, column 'prob' holds 1.5"):
        read_table(file)


@pytest.mark.parametrize("blank", ["  ", "\t", " \t "])
def test_a_line_of_white_space_after_the_header_is_blank(tmp_path: Path, blank) -> None:
    """Skipped before the header and in JSON lines, it had stopped a CSV file after the
    header: "line 4 has a different number of fields"."""
    file = tmp_path / "pairs.csv"
    file.write_text(f"prob,label\n0.5,1\n{blank}\n0.25,0\n{blank}\n")
    assert read_table(file).probs.tolist() == [0.5, 0.25]
    table = _load(file)
    table.want(["prob", "label"])
    assert list(table.lines) == [2, 4]


@pytest.mark.parametrize(
    "cells,line,column,shown",
    [
        (("0.2_5", "1"), 2, "prob", "'0.2_5'"),
        (("\uff10.\uff17", "1"), 2, "prob", "'\uff10.\uff17'"),  # full-width digits
        (("0.25", "0_1"), 2, "label", "'0_1'"),
    ],
)
def test_numbers_only_python_reads_are_refused_by_row(tmp_path, cells, line, column, shown):
    """numpy reads as Python's float() does: "0.2_5" had become 0.25, full-width "０.７"
    0.7 and a label "0_1" 1, without a word (numpy.loadtxt refuses them)."""
    file = tmp_path / "pairs.csv"
    file.write_text("prob,label\n" + ",".join(cells) + "\n0.5,0\n", encoding="utf-8")
    match = rf"line {line}, column '{column}' holds {shown}, not a number as files write them"
    with pytest.raises(ValueError, match=match):
        read_table(file)
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text(json.dumps({"prob": cells[0], "label": cells[1]}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match.replace(f"line {line}", "line 1")):
        read_table(jsonl)


@pytest.mark.parametrize("blank", ["", "\n"])  # the fast reader, and the exact one
@pytest.mark.parametrize(
    "cells, column", [(("\xa00.5", "1"), "prob"), (("0.5", "1\u3000"), "label")]
)
def test_a_no_break_space_is_refused_as_full_width_digits_are(tmp_path, blank, cells, column):
    """Unicode white space (a no-break space, an ideographic one) had been stripped with
    the cell's spaces, and "\xa00.5" read as 0.5, while the full-width "０.５" is refused
    as a character outside ASCII: both are now, ASCII spaces still stripped."""
    file = tmp_path / "pairs.csv"
    file.write_text(f"prob,label\n{blank} 0.25 , 0\n" + ",".join(cells) + "\n", encoding="utf-8")
    line = 4 if blank else 3
    shown = re.escape(repr(cells[0 if column == "prob" else 1]))
    match = rf"line {line}, column '{column}' holds {shown}, not a number as files write them"
    with pytest.raises(ValueError, match=match):
        read_table(file)


def test_json_rows_of_other_keys_are_refused_only_where_a_key_read_is_absent(tmp_path: Path):
    """Rows whose keys differ had stopped the file ("line 4 has different keys than line
    3"), though a log's optional field is never read; a key that is read and absent from
    a row names that row (after blank lines the first row is line 3)."""
    file = tmp_path / "pairs.jsonl"
    file.write_text('\n\n{"prob": 0.3, "label": 1}\n{"prob": 0.4, "lbl": 1}\n')
    with pytest.raises(ValueError, match=r"line 4 has no key 'label', which is read"):
        read_table(file)
    with pytest.raises(ValueError, match=r"line 3 has no key 'lbl', which is read"):
        read_table(file, target="lbl")
    rows = tmp_path / "pairs.json"
    rows.write_text('[{"prob": 0.3, "label": 1}, {"prob": 0.4}]')
    with pytest.raises(ValueError, match=r"row index 1 has no key 'label'"):
        read_table(rows)
    logged = tmp_path / "log.jsonl"
    lines = [
        {"prob": 0.1 * k, "label": k % 2} | ({"text": "hi"} if k % 3 else {}) for k in range(9)
    ]
    logged.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert read_table(logged).target.tolist() == [k % 2 for k in range(9)]


def test_an_uneven_chunk_not_ending_the_file_leaves_the_rest_unread() -> None:
    """A blank line mid-file had made the fast reader list the whole rest of the file
    (1.3 GB held for a 65 MB file) before handing it to the exact reader."""
    from calib_metrics.predictions._text import _before_trailing_blanks, _Irregular

    def untouched():
        raise AssertionError("the rest of the file was read")
        yield

    for chunk in ([["0.5", "1"], [], ["0.2", "0"]], [["0.5", "1"], ["0.2"], []]):
        with pytest.raises(_Irregular):
            _before_trailing_blanks(chunk, untouched(), 2)
    rows, blank = _before_trailing_blanks([["0.5", "1"], []], iter([[], ["  "]]), 2)
    assert rows == [["0.5", "1"]] and blank == 3


@pytest.mark.parametrize(
    "body,said",
    [
        ('"0,9",1\n\u2014,0\n', r"line 2, column 'prob' holds a non-numeric value '0,9'; decimal"),
        (",1\n0.5,0\n\u2014,0\n", r"line 2, column 'prob' is missing a value \(an empty cell\)"),
        ("0.5,\u732b\n", "line 2, column 'label' holds a non-numeric value '\u732b'"),
    ],
)
def test_the_first_bad_cell_keeps_its_own_message(tmp_path: Path, body: str, said: str):
    """The check for numbers only Python reads had come first and named a later cell
    ('—' on line 3) or a word ('猫') as such a number."""
    file = tmp_path / "pairs.csv"
    file.write_text("prob,label\n" + body, encoding="utf-8")
    with pytest.raises(ValueError, match=said):
        read_table(file)


def test_text_arrays_of_numbers_only_python_reads_are_refused(tmp_path: Path) -> None:
    file = tmp_path / "pairs.npz"
    np.savez(file, probs=np.array(["0.5", "0.2_5"]), target=np.array([1, 0]))
    with pytest.raises(ValueError, match=r"row index 1, column 'probs' holds '0\.2_5', not a"):
        read_table(file)


@pytest.mark.parametrize(
    ("cell", "said"), [("0.2_5", "holds '0.2_5'"), ("x", "holds a non-numeric")]
)
def test_a_bad_cell_of_an_array_of_rows_is_named_by_its_row(tmp_path: Path, cell, said):
    """An [N, C] array's bad cell had been named by its flat index ("row index 3")."""
    file = tmp_path / "classes.npz"
    np.savez(file, probs=np.array([["0.5", "0.5"], ["0.25", cell]]), target=np.array([0, 1]))
    with pytest.raises(ValueError, match=f"row index 1, column 'probs' {said}"):
        read_table(file)


@pytest.mark.parametrize(
    ("probs", "said"),
    [
        ([["0.5", "0.5", "0.5"], ["0.5", "0.5", "x"]], "holds a non-numeric value 'x'"),
        ([[0.5, 0.5, 0.5], [0.5, 0.5, 1.5]], "holds 1.5, not a probability"),
    ],
)
def test_a_bad_cell_of_labels_of_sequences_is_named_by_its_label(tmp_path: Path, probs, said):
    """Labels [B, T] are named by their index, whatever is wrong with the cell: a text
    cell had been named by its sequence (row index 1) and a number by its flat label
    index (row index 5, which no [2, 3] array has)."""
    file = tmp_path / "tokens.npz"
    np.savez(file, probs=np.array(probs), target=np.array([[0, 1, 0], [1, 0, 1]]))
    with pytest.raises(ValueError, match=re.escape(f"index [1, 2], column 'probs' {said}")):
        read_table(file)


@pytest.mark.parametrize(
    ("second_line", "said"),
    [
        ('{"probs": [0.5, 0.5, 1.5], "target": [1, 0, 1]}', "'probs' holds 1.5, not a"),
        ('{"probs": [0.5, 0.5, 0.5], "target": [1, 2, 1]}', "'target' holds 2: a label"),
        ('{"probs": [0.5, null, 0.5], "target": [1, 0, 1]}', "'probs' is missing (null)"),
        ('{"probs": [0.5, 0.5, 0.5], "target": [1, null, 1]}', "'target' is missing (null)"),
    ],
)
def test_a_bad_value_in_a_json_lines_list_is_named_by_its_line(tmp_path: Path, second_line, said):
    """A line's list of labels (a sentence's tags) had raised an IndexError when a value
    was out of range: the check named labels by index into the lines."""
    file = tmp_path / "tags.jsonl"
    file.write_text('{"probs": [0.5, 0.5, 0.5], "target": [0, 1, 0]}\n\n' + second_line + "\n")
    with pytest.raises(ValueError, match=f"line 3, column {re.escape(said)}"):
        read_table(file)


def test_padding_in_json_lines_lists_keeps_each_labels_line(tmp_path: Path) -> None:
    file = tmp_path / "tags.jsonl"
    file.write_text(
        '{"probs": [0.5, 0.5, 0.5], "target": [0, -100, 0]}\n'
        '{"probs": [0.5, 0.5, 0.5], "target": [1, 7, -100]}\n'
    )
    with pytest.raises(ValueError, match="line 2, column 'target' holds 7: a label"):
        read_table(file, ignore_index=-100)
    file.write_text(file.read_text().replace("7", "0"))
    assert read_table(file, ignore_index=-100).target.tolist() == [0, 0, 1, 0]


@pytest.mark.parametrize(
    ("lines", "argv", "said"),
    [
        # A line's list of rows of C probabilities: the row-sum warning named line 2, or
        # raised an IndexError, for a row of line 1.
        (
            [
                '{"p": [[0.5, 0.5], [0.9, 0.9]], "y": [0, 1]}',
                '{"p": [[0.5, 0.5], [0.5, 0.5]], "y": [1, 0]}',
            ],
            [],
            "line 1 sums to 1.8",
        ),
        (
            [
                '{"p": [[0.5, 0.5], [0.5, 0.5]], "y": [0, 1]}',
                '{"p": [[0.5, 0.5], [0.9, 0.9]], "y": [1, 0]}',
            ],
            [],
            "line 2 sums to 1.8",
        ),
        (
            [
                '{"p": [[0.5, 0.5], [0.5, 0.5]], "y": [0, 1]}',
                '{"p": [[0.5, 0.5], [0.5, null]], "y": [1, 0]}',
            ],
            [],
            "line 2, column 'p' is missing (null)",
        ),
        (
            [
                '{"p": [0.5, 0.5], "y": [0, 1], "s": [1, 1]}',
                '{"p": [0.5, 0.5], "y": [1, 0], "s": [2, null]}',
            ],
            ["--groups", "s"],
            "line 2, column 's' has a missing group id (null)",
        ),
    ],
)
def test_json_lines_of_several_labels_name_each_labels_line(
    tmp_path: Path, capsys, lines, argv, said
):
    file = tmp_path / "tags.jsonl"
    file.write_text("\n".join(lines) + "\n")
    main(["evaluate", str(file), *argv])
    assert said in capsys.readouterr().err


def test_compare_names_the_line_of_a_label_in_a_lines_list(tmp_path: Path, capsys) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"p": [0.5, 0.5, 0.5], "y": [0, 1, 0]}\n{"p": [0.5, 0.5, 0.5], "y": [1, 0, 1]}\n')
    b.write_text(a.read_text().replace("[1, 0, 1]", "[1, 1, 1]"))
    assert main(["compare", str(a), str(b)]) == 2
    assert "the labels first differ at line 2 of both files: 0 vs 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("probs", "target", "said"),
    [
        ([0.3, np.nan, 0.2, 1.5], [1, -100, 0, 1], "row index 3, column 'probs' holds 1.5"),
        ([0.3, np.nan, 0.2, 0.5], [1, -100, 0, 3], "row index 3, column 'target' holds 3"),
        ([[0.3, 0.1], [np.nan, 0.2]], [[1, 0], [-100, 7]], "index [1, 1], column 'target' holds 7"),
    ],
)
def test_an_arrays_bad_value_is_named_by_its_place_in_the_file(tmp_path: Path, probs, target, said):
    """With --ignore-index the index had counted the kept labels only ("row index 2" for
    the value at 3)."""
    file = tmp_path / "padded.npz"
    np.savez(file, probs=np.array(probs), target=np.array(target))
    with pytest.raises(ValueError, match=re.escape(said)):
        read_table(file, ignore_index=-100)


def test_sentences_of_other_lengths_are_told_how_to_pad(tmp_path: Path) -> None:
    """One sentence a line, unpadded (a token classifier's usual output): the message had
    not said what to do."""
    file = tmp_path / "tokens.jsonl"
    file.write_text('{"p": [0.5, 0.5], "y": [0, 1]}\n{"p": [0.5, 0.5, 0.5], "y": [1, 0, 1]}\n')
    said = "line 2, column 'y' holds 3 values where line 1 holds 2: every row needs the same"
    with pytest.raises(ValueError, match=re.escape(said) + r".*pass --ignore-index -100\)"):
        read_table(file)


def test_messages_that_read_the_file_again_name_labels_of_several_dimensions(tmp_path, capsys):
    """The value checks had said "index [2, 3]" where the row-sum warning and the missing
    group id said a flat "row index 13" of the same file."""
    probs = np.full((4, 5, 3), 1 / 3)
    probs[2, 3] = 0.5
    file = tmp_path / "tokens.npz"
    np.savez(file, probs=probs, target=np.zeros((4, 5), dtype=np.int64))
    main(["evaluate", str(file)])
    assert "index [2, 3] sums to 1.5" in capsys.readouterr().err
    ids = np.zeros((4, 5))
    ids[0, 1] = np.nan
    np.savez(file, probs=probs, target=np.zeros((4, 5), dtype=np.int64), sentence_id=ids)
    with pytest.raises(ValueError, match=re.escape("index [0, 1], column 'sentence_id' has a")):
        read_table(file, groups="sentence_id")


def test_a_padding_labels_group_id_in_a_json_lines_list_is_not_read(tmp_path: Path) -> None:
    """A null id beside a -100 label in a line's list had been refused as a missing group
    id, where its null probability was dropped unread."""
    file = tmp_path / "tags.jsonl"
    file.write_text(
        '{"p": [0.1, 0.2, null], "y": [0, 1, -100], "sid": ["s1", "s1", null]}\n'
        '{"p": [0.3, 0.4, 0.5], "y": [1, 0, 1], "sid": ["s2", "s2", "s2"]}\n'
    )
    table = read_table(file, groups="sid", ignore_index=-100)
    assert table.groups.tolist() == [0, 0, 1, 1, 1]


def test_json_lines_group_ids_must_match_their_lines_labels(tmp_path: Path) -> None:
    """Lists of other lengths had been joined and spread: a line's third label landed in
    the next line's group."""
    file = tmp_path / "tags.jsonl"
    file.write_text(
        '{"p": [0.1, 0.2, 0.3], "y": [1, 0, 1], "sid": ["a", "a"]}\n'
        '{"p": [0.1, 0.2, 0.3], "y": [0, 1, 1], "sid": ["b", "b", "b", "b"]}\n'
    )
    said = "line 1, column 'sid' holds 2 group ids for its 3 labels"
    for padding in (None, -100):
        with pytest.raises(ValueError, match=re.escape(said)):
            read_table(file, groups="sid", ignore_index=padding)


def test_ids_of_their_own_layout_are_told_their_count_first(tmp_path: Path) -> None:
    """[B] ids beside [B, T] labels: a missing one had been named by the labels' index
    ("index [0, 1]" for sequence 1), or raised numpy's IndexError; then by its own row,
    where the count was the problem the user had to fix first."""
    file = tmp_path / "tokens.npz"
    probs, labels = np.full((2, 5), 0.5), np.zeros((2, 5), dtype=np.int64)
    np.savez(file, probs=probs, labels=labels, g=np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match=r"2 group ids for 10 labels of shape \[2, 5\]"):
        read_table(file, groups="g")
    np.savez(file, probs=probs, labels=labels, g=np.append(np.zeros(11), np.nan))
    with pytest.raises(ValueError, match=r"12 group ids for 10 labels"):
        read_table(file, groups="g")


def test_a_list_of_tensors_counts_its_ids_by_their_elements(tmp_path: Path) -> None:
    """A .pt file's ids as a list of a sentence's tensors: each had counted as one id, and
    the file was told "2 group ids for 4 labels"."""
    file = tmp_path / "sentences.pt"
    pair = [torch.tensor([0.2, 0.7]), torch.tensor([0.4, 0.9])]
    torch.save(
        {"p": pair, "y": [torch.tensor([1, 0]), torch.tensor([0, 1])],
         "g": [torch.tensor([0, 0]), torch.tensor([1, 1])]},
        file,
    )  # fmt: skip
    assert read_table(file, probs="p", target="y", groups="g").groups.tolist() == [0, 0, 1, 1]


def test_one_id_a_line_beside_lines_of_labels_is_named_at_its_line(tmp_path: Path) -> None:
    """A sentence id a line (a bare value) beside lists of tags: a null one on line 2 had
    been named at "line 1" (the line of label 1, where id 1 is line 2's), then told the
    count; one id a line now stands for each of its labels, so the null is line 2's."""
    file = tmp_path / "tags.jsonl"
    file.write_text(
        '{"p": [0.9, 0.2], "y": [1, 0], "g": "s1"}\n{"p": [0.5, 0.3], "y": [1, 0], "g": null}\n'
    )
    with pytest.raises(ValueError, match=r"tags.jsonl: line 2, column 'g' has a missing group"):
        read_table(file, groups="g")


def test_rows_of_class_rows_of_unequal_lengths_are_named_without_a_crash(tmp_path: Path):
    """A scalar among a line's rows of class probabilities had raised an IndexError."""
    file = tmp_path / "tags.jsonl"
    file.write_text(
        '{"p": [[0.9, 0.1], [0.2, 0.8], 0], "y": [1, 0, -100]}\n'
        '{"p": [[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]], "y": [1, 0, 1]}\n'
    )
    said = "line 1 (its row 3), column 'p' holds a row of 1 value where the first row holds 2"
    with pytest.raises(ValueError, match=re.escape(said)):
        read_table(file, ignore_index=-100)


def test_a_padding_row_of_one_null_is_told_to_hold_a_null_per_class(tmp_path: Path):
    """A padding token's probabilities written as one null had been named "a row of 1
    value" alone; the fix (a null per class) is what the padding hint says."""
    file = tmp_path / "tags.jsonl"
    file.write_text(
        '{"p": [[0.9, 0.1], [0.2, 0.8], [0.3, 0.7]], "y": [1, 0, 1]}\n'
        '{"p": [[0.9, 0.1], [0.2, 0.8], null], "y": [1, 0, -100]}\n'
    )
    said = (
        "line 2 (its row 3), column 'p' holds a single null where the first row holds 2 "
        "values: a padding row (its label the ignore index) holds 2 nulls ([null, null]), "
        "any other row 2 probabilities"
    )
    with pytest.raises(ValueError, match=re.escape(said)):
        read_table(file, ignore_index=-100)
    file.write_text(file.read_text().replace("null]", "[null, null]]"))
    assert read_table(file, ignore_index=-100).target.tolist() == [1, 0, 1, 1, 0]


def test_the_label_layout_is_the_last_reads(tmp_path: Path) -> None:
    """Another pair of columns of one .npz, read after a [2, 5] pair, had been named by
    the earlier labels' index ("index [1, 2]" for row 7), or raised numpy's IndexError."""
    from calib_metrics.predictions import row_position

    file = tmp_path / "two.npz"
    np.savez(
        file, p2=np.full((2, 5), 0.5), y2=np.zeros((2, 5)), p1=np.full(12, 0.5), y1=np.zeros(12)
    )
    read_table(file, "p2", "y2")
    assert row_position(file, 7) == "index [1, 2]"
    read_table(file, "p1", "y1")
    assert (row_position(file, 7), row_position(file, 11)) == ("row index 7", "row index 11")


def test_a_json_lines_log_of_many_optional_keys_reads_its_columns(tmp_path: Path) -> None:
    """Every row with a key of its own: each key had been filled in for every row."""
    file = tmp_path / "log.jsonl"
    rows = [{"prob": 0.25, "label": k % 2, f"ts_{k}": k} for k in range(500)]
    file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert read_table(file).target.tolist() == [k % 2 for k in range(500)]
    with pytest.raises(ValueError, match="line 2 has no key 'ts_0', which is read"):
        read_table(file, target="ts_0")


def test_padded_json_lines_keep_their_group_id_lists(tmp_path: Path) -> None:
    """The id lists had been checked against the kept labels' count: a padded file whose
    lines each lose one label was refused ("holds 3 group ids for the line's 2 labels")."""
    file = tmp_path / "tags.jsonl"
    file.write_text(
        '{"p": [0.1, 0.2, null], "y": [0, 1, -100], "sid": ["a", "a", "a"]}\n'
        '{"p": [0.3, 0.4, null], "y": [1, 0, -100], "sid": ["b", "b", "b"]}\n'
    )
    assert read_table(file, groups="sid", ignore_index=-100).groups.tolist() == [0, 0, 1, 1]


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        # One label a line beside lists of ids: an IndexError had followed.
        ("one.jsonl",
         '{"p": 0.1, "y": 1, "sid": ["a", "b"]}\n{"p": 0.2, "y": 0, "sid": ["c", null]}\n',
         "line 1, column 'sid' holds 2 group ids for its 1 label"),
        # Records: numpy's "inhomogeneous shape", without the file, had been the message.
        ("rows.json", '[{"p": [0.1, 0.2, 0.3], "y": [1, 0, 1], "sid": ["a", "a"]},'
         ' {"p": [0.1, 0.2, 0.3], "y": [1, 0, 1], "sid": ["b", "b", "b", "b"]}]',
         "row index 0, column 'sid' holds 2 group ids for its 3 labels"),
    ],
)  # fmt: skip
def test_json_group_id_lists_of_another_length_are_named(tmp_path: Path, name, text, said):
    file = tmp_path / name
    file.write_text(text)
    with pytest.raises(ValueError, match=re.escape(said)):
        read_table(file, groups="sid")


def test_a_json_object_of_columns_with_a_null_column_is_named(tmp_path: Path) -> None:
    """A null where a column belongs had been read as a column not yet built ('sparse')."""
    file = tmp_path / "columns.json"
    file.write_text('{"probs": [0.1, 0.9], "label": [0, 1], "group": null}')
    with pytest.raises(ValueError, match="column 'group' holds a NoneType, not an array"):
        read_table(file, groups="group")


@pytest.mark.parametrize(
    ("lines", "groups"),
    [
        # One id per label kept, as an .npz may hold them: refused by the per-line check.
        (['{"p": [0.9, 0.2, null], "y": [1, 0, -100], "sid": ["a", "a"]}',
          '{"p": [0.7, 0.4, 0.6], "y": [1, 0, 1], "sid": ["b", "b", "b"]}',
          '{"p": [0.3, null, null], "y": [0, -100, -100], "sid": ["c"]}'],
         [0, 0, 1, 1, 1, 2]),
        # A line of nested label lists: its ids counted at the top level only (2 for 4).
        (['{"p": [[0.9, 0.2], [0.3, 0.4]], "y": [[1, 0], [0, 1]], '
          '"sid": [["a", "a"], ["b", "b"]]}',
          '{"p": [[0.7, 0.6], [0.5, 0.1]], "y": [[1, 1], [0, 0]], '
          '"sid": [["c", "c"], ["d", "d"]]}'],
         [0, 0, 1, 1, 2, 2, 3, 3]),
    ],
)  # fmt: skip
def test_json_lines_group_ids_per_label_kept_or_nested_read(tmp_path: Path, lines, groups):
    file = tmp_path / "tags.jsonl"
    file.write_text("\n".join(lines) + "\n")
    assert read_table(file, groups="sid", ignore_index=-100).groups.tolist() == groups


def test_json_lines_ids_per_label_kept_write_back_and_compare(tmp_path: Path, capsys) -> None:
    """recalibrate --out had raised StopIteration (the lists kept whole, an id written
    back as "['s0', 's0']"), and compare named a whole list as a line's group."""
    lines = []
    for i in range(30):
        kept = 3 if i % 2 else 2
        p = [0.2 + 0.02 * i, 0.7, 0.4][:kept] + [None] * (3 - kept)
        y = [i % 2, 1, 0][:kept] + [-100] * (3 - kept)
        lines.append(json.dumps({"p": p, "y": y, "sid": [f"s{i}"] * kept}))
    test = tmp_path / "test.jsonl"
    test.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.csv"
    argv = ["--groups", "sid", "--ignore-index", "-100", "--samples", "50"]
    assert main(["recalibrate", str(test), str(test), *argv, "--out", str(out)]) == 0
    rows = out.read_text().splitlines()
    assert rows[1].endswith(",s0") and rows[3] == ",,-100," and rows[4].endswith(",s1")
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(lines).replace('["s5", "s5", "s5"]', '["s5", "s5", "t5"]') + "\n")
    capsys.readouterr()
    assert main(["compare", str(test), str(other), *argv]) == 2
    assert f"(group 's5' in {test}, 't5' in {other})" in capsys.readouterr().err


def test_group_id_lists_nested_otherwise_than_the_labels_are_named(tmp_path: Path) -> None:
    """numpy's "inhomogeneous shape", without the file or the column, had been the message."""
    file = tmp_path / "nested.jsonl"
    row = '{"p": [[0.5, 0.5], [0.5, 0.5]], "y": [[1, 0], [0, 1]], "sid": %s}\n'
    file.write_text(row % '[["a", "a", "b"], ["b"]]' + row % '[["c", "c"], ["d", "d"]]')
    with pytest.raises(ValueError, match="column 'sid' holds lists not laid out as the labels"):
        read_table(file, groups="sid")


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_repeated_json_key_is_refused_as_a_repeated_csv_column(tmp_path: Path, suffix):
    """json kept the last of two "prob" values silently (scored 0.9, not 0.1); a CSV
    header that repeats a column is refused."""
    file = tmp_path / f"dup{suffix}"
    file.write_text('{"prob": 0.1, "label": 1, "prob": 0.9}\n{"prob": 0.2, "label": 0}\n')
    with pytest.raises(ValueError, match=rf"dup{suffix}: line 1 repeats the key\(s\) 'prob'"):
        read_table(file)
    file.write_text('{"prob": [0.1, 0.2], "label": [1, 0], "prob": [0.9, 0.8]}')
    if suffix == ".json":
        with pytest.raises(ValueError, match=r"the object of columns repeats the key\(s\) 'prob'"):
            read_table(file)
        file.write_text('[{"prob": 0.1, "label": 1}, {"label": 0, "prob": 0.2, "label": 1}]')
        with pytest.raises(ValueError, match=r"row index 1 repeats the key\(s\) 'label'"):
            read_table(file)
    # Metadata no column reads may repeat a key: it is kept unread, as before.
    meta = '"model": {"name": "bert", "name": "bert-base"}'
    file.write_text(f'{{"prob": [0.1, 0.9], "label": [0, 1], {meta}}}')
    if suffix == ".json":
        assert read_table(file).target.tolist() == [0, 1]
    file.write_text(f'{{"prob": 0.1, "label": 0, {meta}}}\n{{"prob": 0.9, "label": 1, {meta}}}\n')
    assert read_table(file).target.tolist() == [0, 1]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_json_nested_past_the_recursion_limit_is_refused_by_name(tmp_path: Path, suffix):
    """json raised RecursionError (a traceback on the command line), even for a field
    never read."""
    file = tmp_path / f"deep{suffix}"
    file.write_text('{"prob": 0.3, "label": 1, "log": ' + "[" * 5000 + "]" * 5000 + "}\n")
    where = "line 1" if suffix == ".jsonl" else "the document"
    with pytest.raises(ValueError, match=f"deep{suffix}: {where} nests JSON .* too deeply"):
        read_table(file)


def test_a_bom_past_the_first_json_line_is_named(tmp_path: Path) -> None:
    """The reused decoder skips json.loads' BOM check: "(Expecting value)" had named it."""
    file = tmp_path / "bom.jsonl"
    rows = ['{"p": 0.1, "y": 0}', '{"p": 0.9, "y": 1}', '\ufeff{"p": 0.5, "y": 1}']
    file.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3 is not valid JSON \(Unexpected UTF-8 BOM"):
        read_table(file)
