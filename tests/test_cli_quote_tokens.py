"""A ``"`` that is a token (quoted speech in a file of NLP tokens) in a column the command
does not read: it opened a quoted cell that the next one closed, and the rows between were
read as that cell, without a word (a 1,000-token file read as 493 pairs). A quoted cell
over lines with a line that reads as a row of its own is refused at the line its quote
opens on; text over lines, commas and all, is read as before."""

from __future__ import annotations

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
    assert "line 6 over text that reads as rows of the file's" in line


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
