"""A ``"`` that is a token (quoted speech in a file of NLP tokens) in a column the command
does not read: it opened a quoted cell that the next one closed, and the rows between were
read as that cell, without a word (a 1,000-token file read as 493 pairs). A quoted cell
over lines whose lines read as the file's rows cut by a quote (the first as a row's end,
each between as a whole row or blank, the last as a row's start: numbers in the columns
read as numbers or a padding row's, written as the file's records write them) is refused
at the line its quote opens on; text over lines, commas, numbers and pasted tables and all,
is read as before."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_runs import one_line_error, run_cli

N = 200
DOUBLED = '"' * 4  # a quote as csv writers and pandas write it: a quoted cell of ""


def _tokens_file(path: Path, quotes: list[int], sep: str, token: str = '"') -> Path:
    """A file of (sentence_id, token, prob, label) rows, ``token`` at the rows ``quotes``."""
    rows = [sep.join(["sentence_id", "token", "prob", "label"])]
    for i in range(N):
        word = token if i in quotes else f"w{i}"
        rows.append(sep.join([str(i // 20), word, f"{(i % 10) / 10 + 0.05:.2f}", str(i % 2)]))
    path.write_text("\n".join(rows) + "\n")
    return path


def _pairs(capsys, path: Path) -> int:
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    return json.loads(out)["n"]


@pytest.mark.parametrize("suffix, sep", [(".tsv", "\t"), (".csv", ",")])
@pytest.mark.parametrize("quotes", [[10, 14, 50, 51, 120, 190], [10, 14, 50, 51, 120]])
def test_a_quote_token_is_refused_where_it_opens(tmp_path, capsys, suffix, sep, quotes):
    """An even count had read as fewer pairs (exit 0); an odd one was refused at the last
    quote's line, long after the merging began. Both are named at the first quote's line
    (the header is line 1, row i is line i + 2), with the fix."""
    path = _tokens_file(tmp_path / f"tok{suffix}", quotes, sep)
    line = one_line_error(capsys, "evaluate", path)
    assert f"tok{suffix}: line 12: a \" opens a quoted field (column 'token') that runs to " in line
    assert f'a " that is a token must be written doubled inside quotes, {DOUBLED}' in line


@pytest.mark.parametrize("suffix, sep", [(".tsv", "\t"), (".csv", ",")])
def test_adjacent_quote_tokens_are_refused(tmp_path, capsys, suffix, sep):
    """Two quotes on neighbouring lines: the cell holds no whole line, only the rest of the
    first one, which reads as a row's last fields."""
    path = _tokens_file(tmp_path / f"tok{suffix}", [3, 4], sep)
    line = one_line_error(capsys, "evaluate", path)
    assert f"tok{suffix}: line 5: a \" opens a quoted field (column 'token') that runs to " in line
    assert "line 6, from text that ends a row of the file's to text that begins one" in line
    # The same bytes can be a text cell over lines: the error says how such a file is read.
    assert "read from JSON lines: pandas' to_json(orient='records', lines=True)" in line


@pytest.mark.parametrize("suffix, sep", [(".tsv", "\t"), (".csv", ",")])
def test_a_quote_token_written_doubled_is_read(tmp_path, capsys, suffix, sep):
    """The fix the message gives: every row is read, the quote as a token."""
    path = _tokens_file(tmp_path / f"tok{suffix}", [10, 14, 50], sep, token=DOUBLED)
    assert _pairs(capsys, path) == N


@pytest.mark.parametrize("column", [0, 1, 2])
def test_text_over_lines_with_commas_is_read(tmp_path, capsys, column):
    """A review's text over lines, commas and numbers in it, in any column: no line of it
    reads as a row (its fields and numbers are not where the record's are)."""
    texts = [
        '"Great product, works well,\nwould buy again, 5 stars"',
        '"Two lines:\n0.5 of it, or so"',
        '"It said, 3\nand then, 4,\nthen nothing"',
    ]
    rows = []
    for i in range(N):
        cells = [f"{(i % 10) / 10 + 0.05:.2f}", str(i % 2)]
        cells.insert(column, texts[i % 3] if i % 7 == 0 else "plain")
        rows.append(",".join(cells))
    header = ["prob", "label"]
    header.insert(column, "text")
    path = tmp_path / "reviews.csv"
    path.write_text(",".join(header) + "\n" + "\n".join(rows) + "\n")
    assert _pairs(capsys, path) == N


def test_a_quote_token_is_refused_where_a_text_column_holds_a_number(tmp_path, capsys):
    """The columns that must hold numbers were those of the merged record's own cells: a
    comment of "5" in the row whose quote closes the cell made that column one, the first
    line's "ok" no number, and 10 rows read as 7 (exit 0). They are the columns read."""
    rows = [f"0,w{i},{0.15 + i / 20:.2f},{i % 2},ok" for i in range(10)]
    rows[2], rows[5] = '0,",0.35,1,ok', '0,",0.40,0,5'
    path = tmp_path / "tok.csv"
    path.write_text("sentence_id,token,prob,label,comment\n" + "\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", path)
    assert "tok.csv: line 4: a \" opens a quoted field (column 'token') that runs to line 7" in line


@pytest.mark.parametrize("sep", [",", ";"])
def test_a_quote_token_closed_by_a_quoted_cell_is_refused(tmp_path, capsys, sep):
    """A " token closed on the next line by the opening quote of a cell quoted for its
    delimiter ("d,2"): the cell's last line ran a field past the token's column, its text
    after that quote ending the record's next cell (2"), and 10 rows had read as 9 (exit 0)."""
    rows = [sep.join([f"{0.15 + i / 20:.2f}", str(i % 2), f"w{i}", "d1"]) for i in range(10)]
    rows[2] = sep.join(["0.35", "1", '"', "d1"])
    rows[3] = sep.join(["0.4", "0", "w3", f'"d{sep}2"'])
    path = tmp_path / "tok.csv"
    path.write_text(sep.join(["prob", "label", "token", "doc"]) + "\n" + "\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", path)
    assert "tok.csv: line 4: a \" opens a quoted field (column 'token') that runs to line 5" in line


def _prompts_file(tmp_path: Path, text: str, column: int) -> Path:
    """N rows as csv writers write them, every seventh's prompt ``text``, in ``column``."""
    path = tmp_path / "prompts.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        header = ["prob", "label"]
        header.insert(column, "prompt")
        writer.writerow(header)
        for i in range(N):
            cells = [f"{(i % 10) / 10 + 0.05:.2f}", str(i % 2)]
            cells.insert(column, text if i % 7 == 0 else "plain")
            writer.writerow(cells)
    return path


@pytest.mark.parametrize(
    "text",
    [
        "Which row has the larger y?\nx,y,z\nA,0.2,1\nB,0.7,0",
        "Data:\n0.1,0.2,0.3\nend",
        "name,score,rank\nfoo,0.5,1\nbar,0.7,2",
    ],
)
@pytest.mark.parametrize("column", [0, 2])
def test_a_table_pasted_into_a_text_cell_is_read(tmp_path, capsys, text, column):
    """A prompt holding a small table, quoted whole as csv writers and pandas write it: a
    line of it between the first and the last read as a row of the file's, and the file was
    refused with no way round (150 of 300 random such files)."""
    assert _pairs(capsys, _prompts_file(tmp_path, text, column)) == N


@pytest.mark.parametrize(
    "text, column",
    [
        ("Ratings, 4, 5\nGreat", 0),  # prose's numbers: a space before them
        ("x,0.5,1\nname,score\nGreat", 0),  # a line between that is no row
        ("see\n70, 53, 1", 2),
        ("see\nname,score,rank\n0.5,1,more", 2),
    ],
)
def test_text_in_the_first_or_last_column_is_read(tmp_path, capsys, text, column):
    """A cell over lines in the first or last column has one end that any text reads as a
    row's (no numbers before or after it): files whose other end read as one were refused,
    278 of 1,000 random pandas files with a table in a text cell. A stray quote's lines
    between are rows of the file's, its numbers written as the record's (no space before)."""
    assert _pairs(capsys, _prompts_file(tmp_path, text, column)) == N


@pytest.mark.parametrize("sep, column", [(",", 0), (",", 2), (", ", 0)])
def test_a_quote_token_over_rows_and_a_blank_line_is_refused(tmp_path, capsys, sep, column):
    """The lines a stray quote's cell holds between its first and last are the file's
    rows, a blank one (between sentences) among them, and its numbers are written as the
    record's own, with a space before them where the file's have one (``, `` between
    cells; a quote after the space is text, so only in the first column): refused in the
    first and last column, where one end reads as a row's whatever the text."""
    rows = []
    for i in range(20):
        cells = [f"{0.15 + i / 40:.3f}", str(i % 2)]
        cells.insert(column, '"' if i in (3, 6) else f"w{i}")
        rows.append(sep.join(cells) + ("\n" if i == 4 else ""))
    header = ["prob", "label"]
    header.insert(column, "token")
    path = tmp_path / "tok.csv"
    path.write_text(sep.join(header) + "\n" + "\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", path)
    assert "tok.csv: line 5: a \" opens a quoted field (column 'token') that runs to line 9" in line


def test_a_stray_quote_in_the_header_is_refused(tmp_path, capsys):
    """A header whose last name opens a quote that a row's closes: the rows up to it were
    that name, left out without a word (14 of 20 rows read, exit 0)."""
    rows = [f"{0.1 + i / 100:.2f},{i % 2},w{i}" for i in range(20)]
    rows[5] = '0.55,1,"'
    path = tmp_path / "notes.csv"
    path.write_text('prob,label,"note\n' + "\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", path)
    assert (
        "notes.csv: lines 1-7: the header's column 3 is a quoted name over lines, 'note\\n" in line
    )
    assert (
        'a column name over lines is not supported; write it on one line (or remove a stray "'
        in line
    )


def test_a_header_name_over_lines_is_named_as_one(tmp_path, capsys):
    """A name holding a line break inside its quotes, as a spreadsheet writes a cell of two
    lines, had been called a stray quote: it is named, with the fix."""
    path = tmp_path / "names.csv"
    path.write_text('prob,"gold\nlabel"\n' + "".join(f"0.{i % 9 + 1},{i % 2}\n" for i in range(20)))
    line = one_line_error(capsys, "evaluate", path)
    assert line.endswith(
        "names.csv: lines 1-2: the header's column 2 is a quoted name over lines, "
        "'gold\\nlabel': a column name over lines is not supported; write it on one line "
        '(or remove a stray " that a later one closes)'
    )


@pytest.mark.parametrize("rows", [20, 0])
def test_a_header_quote_that_never_closes_is_named_so(tmp_path, capsys, rows):
    """A header's quote that no later one closes had been said to run to the file's last
    line (line 21), as if a quote there closed it; in a header alone, ``prob,"label``, it
    had read as the name ``label``, and the file as one of no rows."""
    path = tmp_path / "open.csv"
    path.write_text('prob,"label' + "".join(f"\n0.{i % 9 + 1},{i % 2}" for i in range(rows)))
    line = one_line_error(capsys, "evaluate", path)
    assert line.endswith(
        "open.csv: line 1: the header's quote never closes: column 2's name opens with a \" "
        "that no later one closes (the rest of the file would be that name); remove the "
        "stray quote"
    )


def test_only_cells_over_lines_are_looked_at(tmp_path, capsys, monkeypatch):
    """The check of a record over lines split every cell at line breaks and tested each for
    a number: a file of two-line reviews read 3 times slower. Cells on one line are not
    looked at, nor a cell over lines whose end lines have not a row's fields."""
    from calib_metrics.predictions import _text

    tested = []
    monkeypatch.setattr(_text, "_is_number", lambda text: tested.append(text) or False)
    rows = [f'"review {i}, good\nthanks {i}",{(i % 10) / 10 + 0.05:.2f},{i % 2}' for i in range(N)]
    path = tmp_path / "reviews.csv"
    path.write_text("text,prob,label\n" + "\n".join(rows) + "\n")
    assert _pairs(capsys, path) == N
    assert len(tested) <= 3  # the header's names, not the rows' cells


@pytest.mark.parametrize("labels", ["bool", "padding"])
def test_a_quote_token_beside_bool_labels_or_a_padding_row_is_refused(tmp_path, labels):
    """Labels written True/False (pandas' bool column), or a quote opening on a padding row
    whose probability is blank, were not read as the numbers of a row's end: the rows
    between merged without a word (10 rows read as 7)."""
    from calib_metrics.predictions import read_table

    if labels == "bool":
        rows = [f"0\tw{i}\t{0.15 + i / 20:.2f}\t{bool(i % 2)}" for i in range(10)]
        rows[2], rows[5] = '0\t"\t0.35\tFalse', '0\t"\t0.40\tTrue'
    else:
        rows = [f"0\tw{i}\t{0.15 + i / 20:.2f}\t{i % 2}" for i in range(10)]
        rows[2], rows[5] = '0\t"\t\t-100', '0\t"\t0.40\t0'
    path = tmp_path / "tok.tsv"
    path.write_text("sentence_id\ttoken\tprob\tlabel\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match="line 4: a \" opens a quoted field \\(column 'token'\\)"):
        read_table(path, ignore_index=-100)


@pytest.mark.parametrize("padding, column", [(5, 0), (5, 2), (3, 0), (7, 2)])
def test_a_quote_token_over_a_padding_row_of_any_probability_is_refused(tmp_path, padding, column):
    """A padding row's probability may hold anything (``None``, beside its label -100):
    between two " tokens, or where one opens or closes, it was not read as a row of the
    file's, and the rows between merged without a word (11 pairs read as 8)."""
    from calib_metrics.predictions import read_table

    rows = []
    for i in range(12):
        cells = ["None", "-100"] if i == padding else [f"0.{i + 1}", str(i % 2)]
        cells.insert(column, '"' if i in (3, 7) else f"w{i}")
        rows.append("\t".join(cells))
    header = ["prob", "label"]
    header.insert(column, "token")
    path = tmp_path / "tok.tsv"
    path.write_text("\t".join(header) + "\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r'line 5: a " opens a quoted field .* to line 9'):
        read_table(path, ignore_index=-100)


@pytest.mark.parametrize(
    "cell", ["Inventory changes:\n-5,apples,3\n-2,pears,1", "Deltas:\n-1,worse,x\n-2,worse,y"]
)
def test_a_text_cell_whose_lines_start_with_negative_numbers_is_read(tmp_path, cell):
    """A padding row is told by its label: ``-5,apples,3`` had read as a padding row
    (-5 in the probability's column) and refused a valid pandas file."""
    import pandas as pd

    from calib_metrics.predictions import read_table

    frame = pd.DataFrame({"prob": [0.1, 0.2, 0.3, 0.4], "label": [0, 1, 0, 1]})
    frame["note"] = ["a", cell, "b", "c"]
    path = tmp_path / "notes.csv"
    frame.to_csv(path, index=False)
    assert read_table(path).target.tolist() == [0, 1, 0, 1]


@pytest.mark.parametrize(
    "probs, line, to",
    [
        ([0.1, 0.25, 0.125, 0.0625, 0.3, 0.4, 0.5, 0.1234, 0.7, 0.8], 4, 9),
        ([0.1234, 0.5678, 0.3, 0.25, 0.7123, 0.2, 0.45, 0.8, 0.35, 0.9], 3, 6),
    ],
)
def test_a_quote_token_in_columns_aligned_with_spaces_is_refused(tmp_path, probs, line, to):
    """Probabilities aligned with spaces (``0.1   ,0``): a " token's record whose own
    numbers fill the column (``0.1234,1``) read the spaced rows between as prose's, and 10
    rows had read as 5 without a word; so had one seen before any spaced row."""
    from calib_metrics.predictions import read_table

    quotes = (line - 2, to - 2)
    tokens = ['"' if i in quotes else f"w{i}" for i in range(len(probs))]
    rows = [f"{token},{p!s:<6},{i % 2}" for i, (token, p) in enumerate(zip(tokens, probs))]
    path = tmp_path / "aligned.csv"
    path.write_text("token,prob,label\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=rf'line {line}: a " opens a quoted field .* line {to},'):
        read_table(path)


def test_a_no_break_space_beside_a_header_name_is_read_as_before(tmp_path, capsys):
    """Header names stripped as cells are (ASCII only) had refused `prob\\xa0` with "no
    column 'prob' (columns: prob , label)", the space shown plain."""
    path = tmp_path / "nbsp.csv"
    path.write_text("prob\xa0,label\n" + "".join(f"0.{i % 9 + 1},{i % 2}\n" for i in range(20)))
    assert _pairs(capsys, path) == 20
