"""A CSV/TSV line is refused at a NUL byte or past the longest a line may hold, before it is
read whole: a 2 GB line (``truncate -s 2G``) had been read, and parsed twice, in 39 s and
21 GB, to be refused for its number of fields; a smaller machine would have killed it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from cli_runs import one_line_error

from calib_metrics.predictions import _text, read_table

ROWS = "prob,label\n0.3,0\n0.6,1\n"

# In a child process, so that its peak resident memory is the reading's own: the growth of
# the peak over the import, the exit code and the error line of the command.
PEAK = """
import contextlib, io, json, resource, sys
from calib_metrics import cli
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
err = io.StringIO()
with contextlib.redirect_stderr(err):
    code = cli.main(["evaluate", sys.argv[1]])
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps({"code": code, "err": err.getvalue(), "grown": grown}))
"""


def _peak(path) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss counts KiB on Linux")
def test_a_long_line_of_nul_bytes_is_refused_in_little_memory(tmp_path) -> None:
    """A file made sparse past its rows (``truncate``): 64 MB of NUL bytes on line 4. A
    line of 64 MB had taken 10 times its size (640 MB) before it was refused."""
    path = tmp_path / "sparse.csv"
    path.write_text(ROWS)
    with path.open("r+b") as handle:
        handle.truncate(64 << 20)
    ran = _peak(path)
    assert ran["code"] == 2
    assert ran["err"] == (
        f"calib-metrics: error: {path}: line 4 holds the byte 0x00 (NUL), which text does "
        "not: a binary file, or text saved as UTF-16? save it as UTF-8 text\n"
    )
    assert ran["grown"] < 64 << 20, f"the peak grew by {ran['grown'] / 2**20:.0f} MiB"


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss counts KiB on Linux")
def test_a_line_over_the_limit_is_refused_in_bounded_memory(tmp_path) -> None:
    """A line of 48 MB, three times the limit, is refused at the limit: read whole and
    parsed twice, it had taken about 10 times its size (480 MB)."""
    path = tmp_path / "long.csv"
    path.write_text(ROWS + "a" * (48 << 20) + "\n0.5,1\n")
    ran = _peak(path)
    assert ran["code"] == 2
    assert ran["err"] == (
        f"calib-metrics: error: {path}: line 4 holds over 16,777,216 characters, the most a "
        "line (a row and its cells) may hold: a binary file, or rows not on lines of their "
        "own?\n"
    )
    assert ran["grown"] < 240 << 20, f"the peak grew by {ran['grown'] / 2**20:.0f} MiB"


@pytest.fixture
def small_limit(monkeypatch):
    """Lines of at most 100 characters, read 16 at a time: lines across blocks and long
    lines without writing megabytes."""
    monkeypatch.setattr(_text, "_LINE_LIMIT", 100)
    monkeypatch.setattr(_text, "_FIELD_LIMIT", 101)
    monkeypatch.setattr(_text, "_BLOCK", 16)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_lines_read_in_blocks_are_the_files_lines(tmp_path, small_limit, newline) -> None:
    """Lines split across blocks (a \\r\\n too) read as the file's own lines: a long cell
    up to the limit, a quoted cell over lines, the line numbers of the messages."""
    cell = "x" * 90
    rows = ["prob,label,text", f"0.3,0,{cell}", '0.6,1,"two', 'lines"', "0.2,0,ok", "1.5,1,ok"]
    path = tmp_path / "p.csv"
    path.write_bytes(newline.join(rows).encode() + newline.encode())
    with pytest.raises(ValueError, match=r"p.csv: line 6, column 'prob' holds 1.5, not a prob"):
        read_table(path)
    path.write_bytes(newline.join(rows[:-1]).encode() + newline.encode())
    assert read_table(path).probs.tolist() == [0.3, 0.6, 0.2]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_the_line_past_the_limit_is_named(tmp_path, capsys, small_limit, newline) -> None:
    """A line may hold the limit's characters, its end not counted: one of 100 characters
    and its \\n had been refused as over 100."""
    rows = ["prob,label,text", "0.3,0,ok", "0.6,1," + "x" * 94, "0.2,0,ok"]
    path = tmp_path / "p.csv"
    path.write_bytes(newline.join(rows).encode() + newline.encode())
    assert read_table(path).probs.tolist() == [0.3, 0.6, 0.2]  # 100 characters
    rows[2:3] = ["", rows[2] + "x"]
    path.write_bytes(newline.join(rows).encode() + newline.encode())
    line = one_line_error(capsys, "evaluate", path)
    assert line.endswith(f"{path}: line 4 holds over 100 characters, the most a line (a row "
                         "and its cells) may hold: a binary file, or rows not on lines of their "
                         "own?")  # fmt: skip


def test_a_nul_in_a_column_never_read_is_refused(tmp_path, capsys) -> None:
    """A NUL byte (a binary file, UTF-16 text) had been read as any character in a column
    never read, and named as a non-numeric value in one read."""
    path = tmp_path / "p.tsv"
    path.write_text("prob\tlabel\ttext\n0.3\t0\tok\n0.6\t1\to\0k\n")
    line = one_line_error(capsys, "evaluate", path)
    assert line.endswith(f"{path}: line 3 holds the byte 0x00 (NUL), which text does not: a "
                         "binary file, or text saved as UTF-16? save it as UTF-8 text")  # fmt: skip


def test_a_stray_quote_past_the_field_limit_is_named_where_it_opens(
    tmp_path, capsys, small_limit
) -> None:
    """The rest of the file in one quoted cell stops at the field limit (it had been
    2**31 - 1 characters, 8 bytes each): named at the record's first line."""
    rows = ["0.3,0,ok", '0.6,1,"he said hi', *["0.2,0,a note of some length"] * 20]
    path = tmp_path / "p.csv"
    path.write_text("prob,label,text\n" + "\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", path)
    assert line.endswith(
        f"{path}: line 3: a quoted field runs over lines past 100 characters, the most a cell "
        'may hold: a stray " that never closes, or that a later one closes? Remove the stray '
        "quote or quote the cell whole"
    )


def test_a_stray_quote_in_the_header_is_named_where_it_opens(tmp_path, capsys, small_limit) -> None:
    """A header whose quote never closes had got the csv module's own message at the line
    where the field limit ran out: "line 6: field larger than field limit (101)"."""
    rows = ['"prob,label,text', *["0.2,0,a note of some length"] * 20]
    path = tmp_path / "p.csv"
    path.write_text("\n" + "\n".join(rows) + "\n")  # a blank line first: it opens on line 2
    line = one_line_error(capsys, "evaluate", path)
    assert line.endswith(
        f"{path}: line 2: a quoted field runs over lines past 100 characters, the most a cell "
        'may hold: a stray " that never closes, or that a later one closes? Remove the stray '
        "quote or quote the cell whole"
    )


@pytest.mark.parametrize("block", [1, 2, 3, 7])
def test_lines_in_blocks_split_as_the_files_iteration_does(tmp_path, monkeypatch, block) -> None:
    """Every way a line can end, across blocks of any size: a \\r that ends a block (before
    a \\n of the next one, or not) among them."""
    monkeypatch.setattr(_text, "_BLOCK", block)
    path = tmp_path / "lines.txt"
    for text in ["a\r\nb\rc\n\r\n\rd", "\r", "\n\n", "abc", "x\r", "\r\r\n\n", "ab\r\ncd\r"]:
        path.write_bytes(text.encode())
        with path.open(newline="") as handle:
            expected = list(handle)
        with path.open(newline="") as handle:
            assert list(_text._bounded_lines(handle, path)) == expected, text
