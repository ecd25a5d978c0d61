"""Text files of predictions read into a table of columns: CSV/TSV (with a header,
UTF-8; a semicolon-separated file is recognised by its header) and JSON / JSON lines.

A CSV's rows are read when a column is first used, and only the columns used
(:class:`_DelimitedTable`); a table of a file of lines keeps each row's line for
messages. Blank lines are skipped (before the header too), columns with an empty name
(a spreadsheet's trailing ``,,``) are left out, and a line (so a cell) may hold up to
:data:`_LINE_LIMIT` characters; a NUL byte is refused (:func:`_bounded_lines`).
:func:`_readable` turns the errors of reading any file (not UTF-8, unreadable, too large
for the memory) into ValueErrors naming it.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import math
import re
import sys
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain, islice
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

# A column some rows lack, until it is read (a JSON value may itself be null).
_SPARSE = object()

# The white space a cell and a header's name are stripped of: the ASCII characters
# str.strip() takes. Its own had also taken a no-break space (U+00A0), and "\xa00.5" read
# as 0.5 where a full-width digit is refused as no number files write
# (:func:`python_only_numbers`).
_PADDING = " \t\n\r\v\f\x1c\x1d\x1e\x1f"


class _Table(dict):
    """The columns of a text file, with the line of every row (``lines``) for messages,
    and, for rows of JSON objects, where each key first is absent (``absent``: a row's
    place, ``line 4`` or ``row index 3``): a key that only some rows carry (an optional
    field of a log) is refused only if its column is read.

    The keys every row has so far are lists, appended to; a key some row lacks is kept
    sparse (row -> value) and made a list, ``None`` where absent, only when it is read:
    filled in for every row, 20,000 rows of a key each had taken 56 s and 3.7 GB.
    """

    lines: list[int]
    absent: dict[str, str]

    def add_row(self, row: dict, place: str) -> None:
        """Append a JSON object's values (``place``: its line or index)."""
        state = self.__dict__
        absent, sparse = state.setdefault("absent", {}), state.setdefault("sparse", {})
        dense: dict[str, None] = state.setdefault("dense", {})  # ordered, as a set
        first, rows = state.setdefault("first_place", place), state.get("rows", 0)
        for key in [key for key in dense if key not in row]:  # absent from here on
            sparse[key] = dict(enumerate(dict.__getitem__(self, key)))
            dict.__setitem__(self, key, _SPARSE)
            del dense[key]
            absent.setdefault(key, place)
        for key, value in row.items():  # in the file's order (a set had shuffled them)
            if key in dense:
                dict.__getitem__(self, key).append(value)
            elif key in sparse:
                sparse[key][rows] = value
            elif rows == 0:
                dense[key] = None
                dict.__setitem__(self, key, [value])
            else:  # absent from every row before this one
                sparse[key] = {rows: value}
                dict.__setitem__(self, key, _SPARSE)
                absent.setdefault(key, first)
        state["rows"] = rows + 1

    def __getitem__(self, name: str) -> Any:
        column = dict.__getitem__(self, name)
        if column is _SPARSE:  # a sparse key, read: a list at last
            cells = self.__dict__["sparse"].pop(name)
            column = [cells.get(i) for i in range(self.__dict__["rows"])]
            dict.__setitem__(self, name, column)
        return column


def _delimiter(header: str, default: str) -> str:
    """``;`` for a semicolon-separated file (a header with semicolons and no commas)."""
    if default == "," and "," not in header and ";" in header:
        return ";"
    return default


# The most characters a CSV/TSV line may hold, and so a cell: 128 times the csv module's
# default field limit (131,072), which had refused a valid file for a document's text in a
# column never read, and over 16 MB of text (War and Peace five times) in one row. Without a
# bound a 2 GB line had taken 21 GB and 39 s before it was refused.
_LINE_LIMIT = 1 << 24
# The csv module's limit on a field's length while a file is read: past the longest line
# only by a quoted field over lines (a stray quote), refused as such (:func:`_next_record`).
_FIELD_LIMIT = _LINE_LIMIT + 1
# Characters read at a time and split into lines (:func:`_bounded_lines`).
_BLOCK = 1 << 20
_fields_lock = threading.Lock()
_fields_readers = 0
_fields_saved = 0


@contextmanager
def _long_fields() -> Iterator[None]:
    """The csv field limit raised while a file is read, and put back after the last
    reader (of any thread) is done: the limit is the process's, and the user's own csv
    reading keeps its own."""
    global _fields_readers, _fields_saved
    with _fields_lock:
        if _fields_readers == 0:
            _fields_saved = csv.field_size_limit(_FIELD_LIMIT)
        _fields_readers += 1
    try:
        yield
    finally:
        with _fields_lock:
            _fields_readers -= 1
            # A limit set meanwhile (by another thread's own csv reading) is left as it is.
            if _fields_readers == 0 and csv.field_size_limit() == _FIELD_LIMIT:
                csv.field_size_limit(_fields_saved)


def _not_blank(row: list[str]) -> bool:
    """Whether a row is more than a line of white space, which is skipped wherever it
    stands (before the header it had been taken for a header naming no column, after it
    for a short row; ``,,`` is a row of empty cells still)."""
    return len(row) > 1 or bool(row and row[0].strip())


def _first_line(lines: Iterator[str]) -> str:
    """The first line of a text file that is not blank (the csv reader skips those)."""
    return next((line for line in lines if line.strip()), "")


def _bounded_lines(handle: Any, path: Path) -> Iterator[str]:
    """The lines of a text file opened with ``newline=""``, as iterating it gives them,
    refused at the first one that holds a NUL byte or more than :data:`_LINE_LIMIT`
    characters, before it is read whole: a 2 GB line (a binary file) had been read, and
    parsed twice, to be refused for its number of fields. Read in blocks, so that the
    csv module still takes the lines at C speed."""
    return chain.from_iterable(_line_blocks(handle, path))


def _line_blocks(handle: Any, path: Path) -> Iterator[list[str]]:
    """:func:`_bounded_lines`'s lines, a block's at a time."""
    start, unended = 1, ""  # the next line's number, and its characters read so far
    while block := handle.read(_BLOCK):
        text = unended + block
        # Split as the file's own lines are, at \n, \r\n or a lone \r (a block inside a
        # long line is not split again, each time longer).
        broken = unended.endswith("\r") or "\n" in block or "\r" in block
        lines = io.StringIO(text, newline="").readlines() if broken else [text]
        # A line that has not ended may go on in the next block (a \r before its \n too).
        unended = "" if lines[-1].endswith("\n") else lines.pop()
        if "\0" in text or len(text) > _LINE_LIMIT:  # looked for line by line only then
            every = [*lines, unended]
            bad = next((i for i, line in enumerate(every) if _is_bad(line)), None)
            if bad is not None:
                yield lines[:bad]
                raise _bad_line(path, start + bad, every[bad])
        yield lines
        start += len(lines)
    if unended:
        yield [unended]


def _is_bad(line: str) -> bool:
    r"""Whether a line holds a NUL byte or more than :data:`_LINE_LIMIT` characters, not
    counting its end (``\n``, ``\r\n`` or ``\r``): a line of 2^24 characters had been
    refused for its ``\n``.

    Example:
        >>> _is_bad("x" * _LINE_LIMIT + "\r\n"), _is_bad("x" * _LINE_LIMIT + "y")
        (False, True)
    """
    return "\0" in line or len(line.rstrip("\r\n")) > _LINE_LIMIT


def _bad_line(path: Path, number: int, line: str) -> ValueError:
    """The error for line ``number``, which holds a NUL byte or is too long."""
    if "\0" in line:
        return ValueError(
            f"{path}: line {number} holds the byte 0x00 (NUL), which text does not: a binary "
            "file, or text saved as UTF-16? save it as UTF-8 text"
        )
    return ValueError(
        f"{path}: line {number} holds over {_LINE_LIMIT:,} characters, the most a line (a row "
        "and its cells) may hold: a binary file, or rows not on lines of their own?"
    )


def _read_delimited(path: Path, delimiter: str) -> _Table:
    """A CSV/TSV file's header, checked now; its rows are read when a column is first
    used (:class:`_DelimitedTable`)."""
    # utf-8-sig drops the byte-order mark that spreadsheet programs put before the header.
    with path.open(newline="", encoding="utf-8-sig") as handle, _long_fields():
        delimiter = _delimiter(_first_line(_bounded_lines(handle, path)), delimiter)
        handle.seek(0)
        lines = _Lines(handle, path)
        reader = csv.reader(lines, delimiter=delimiter)
        try:
            names = _header(reader, lines, path)
        except csv.Error as err:
            raise ValueError(f"{path}: line {reader.line_num}: {err}") from None
    return _DelimitedTable(path, delimiter, names)


def _read_delimited_exact(
    path: Path, delimiter: str, numeric: Collection[str] = (), labels: Collection[str] = ()
) -> _Table:
    """Every cell of a CSV/TSV file as text, row by row: the reader of files that the fast
    one (:meth:`_DelimitedTable._read_fast`) does not take as they are (short rows, blank
    lines, fields over several lines, a csv error), and the one whose errors are reported.
    ``numeric``: the columns read as numbers, by which a stray quote's rows are told
    (:func:`_check_rows_inside`); ``labels``: those of them holding labels, where a padding
    row's label is told."""
    with path.open(newline="", encoding="utf-8-sig") as handle, _long_fields():
        lines = _Lines(handle, path)
        reader = csv.reader(lines, delimiter=delimiter)
        try:
            return _table_from_rows(reader, lines, path, numeric, labels)
        except csv.Error as err:
            raise ValueError(f"{path}: line {reader.line_num}: {err}") from None


class _Lines:
    """A file's lines for the csv reader, noting when they run out (``ended``): a record
    read as they did ran into the end of the file inside a quoted field, as a line ends
    a record anywhere else."""

    def __init__(self, handle: Any, path: Path) -> None:
        self.ended = False
        self._lines = self._read(handle, path)

    def _read(self, handle: Any, path: Path) -> Iterator[str]:
        yield from _bounded_lines(handle, path)
        self.ended = True

    def __iter__(self) -> Iterator[str]:
        return self._lines


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _header(reader: Any, lines: _Lines, path: Path) -> list[str]:
    """The column names of a CSV/TSV file's first row that is not blank (a blank first
    line had made the file "empty"), refused where they cannot be a header (none, numbers
    only, a name twice). An empty name is a column left out: ``prob,label,,``, as
    spreadsheets export trailing empty columns, had repeated the name ``''``."""
    header = _first_record(reader, lines, path)
    if not header:
        raise ValueError(f"{path}: empty file (a header row is needed)")
    names = [n.strip() for n in header]  # a no-break space beside a name is no harm there
    named = [n for n in names if n]
    if not named:
        raise ValueError(
            f"{path}: line {reader.line_num}, the first one not blank, names no column: the "
            "file needs a header line naming its columns, e.g. prob,label"
        )
    if all(_is_number(n) for n in named):
        raise ValueError(
            f"{path}: line {reader.line_num}, the first one not blank, holds numbers only "
            f"({', '.join(named[:3])}): the file needs a header line naming its columns, e.g. "
            "prob,label"
        )
    repeated = sorted({n for n in named if named.count(n) > 1})
    if repeated:
        raise ValueError(
            f"{path}: the header repeats column name(s) {', '.join(map(repr, repeated))}"
        )
    return names


def _first_record(reader: Any, lines: _Lines, path: Path) -> list[str] | None:
    """The first record that is not blank, None if there is none; a stray quote that
    opens it is named as in a row (:func:`_next_record`), not by the csv module's
    "field larger than field limit" at the line where the limit ran out, and so is one
    that never closes (``lines`` ran out inside it: :func:`_refuse_unclosed_header`) or
    that a later quote closes (:func:`_refuse_header_over_lines`)."""
    while (row := _next_record(reader, path, start := reader.line_num + 1)) is not None:
        if lines.ended:  # before the blank-line skip: a lone " is a record too
            _refuse_unclosed_header(path, row, start)
        if _not_blank(row):
            if reader.line_num > start:
                _refuse_header_over_lines(path, row, start)
            return row
    return None


def _refuse_unclosed_header(path: Path, header: list[str], start: int) -> None:
    """Refuse a header whose last name opens a quote that never closes, at the line it
    opens on: it had been said to "run to" the file's last line, as if a quote there
    closed it."""
    opened = start + sum(len(_BREAK.findall(name)) for name in header[:-1])
    raise ValueError(
        f"{path}: line {opened}: the header's quote never closes: column {len(header)}'s name "
        'opens with a " that no later one closes (the rest of the file would be that name); '
        "remove the stray quote"
    )


def _refuse_header_over_lines(path: Path, header: list[str], start: int) -> None:
    r"""Refuse a header whose quoted name runs over lines: no column's name holds a line
    break, and ``prob,label,"note`` had made the rows up to the next quote that name,
    left out without a word (14 of 20 rows read, exit 0). A name with a line break of
    its own (``"my\nnote"``) had been called a stray quote."""
    column, name = next((i, n) for i, n in enumerate(header, 1) if _BREAK.search(n))
    opened = start + sum(len(_BREAK.findall(before)) for before in header[: column - 1])
    shown = name if len(name) <= 40 else name[:40] + "..."
    raise ValueError(
        f"{path}: lines {opened}-{opened + len(_BREAK.findall(name))}: the header's column "
        f"{column} is a quoted name over lines, {shown!r}: a column name over lines is not "
        'supported; write it on one line (or remove a stray " that a later one closes)'
    )


def _table_from_rows(
    reader: Any, lines: _Lines, path: Path, numeric: Collection[str], labels: Collection[str]
) -> _Table:
    names = _header(reader, lines, path)
    table = _Table({n: [] for n in names if n})
    table.lines = []  # each row's first line, where its record starts
    end = reader.line_num  # the last record's last line
    numbers = [(LABEL if name in labels else NUMBER) if name in numeric else 0 for name in names]
    # A stray quote's rows are told by their numbers: in a column besides the quote's own.
    rows_told = sum(kind > 0 for kind in numbers) > 1
    # A cell that reads as rows only with white space beside their numbers, as prose's
    # have: refused at the end if a record of the file's has such numbers too.
    held = None
    records = iter(reader)
    try:
        while (row := _next_record(records, path, end + 1)) is not None:
            start, end = end + 1, reader.line_num
            if lines.ended:  # before the blank-line skip: a lone " is a record too
                _refuse_unclosed(path, row, names, start)
            if not _not_blank(row):  # a line of spaces too, as before the header and in JSON lines
                continue
            if len(row) != len(names):
                _wrong_field_count(path, start, end)
            if end > start:
                _check_spanned(path, row, names, start, end)
                if rows_told:
                    found = _check_rows_inside(
                        path, row, names, reader.dialect.delimiter, start, numbers
                    )
                    held = held or found
            for name, raw in zip(names, row, strict=True):
                if name:  # a column without a name is never read
                    table[name].append(raw.strip(_PADDING))
            table.lines.append(start)
    except ValueError:
        # A later fault (another stray quote, one that never closes) is named after the
        # cell held, if the records read before it space their numbers.
        _refuse_held(held, path, reader.dialect.delimiter, numbers, len(table.lines))
        raise
    _refuse_held(held, path, reader.dialect.delimiter, numbers)
    return table


def _next_record(records: Iterator[list[str]], path: Path, start: int) -> list[str] | None:
    """The next record, from line ``start``, or None after the last; a field past the csv
    field limit, which only a quoted field over lines reaches (a line is shorter), is
    refused as the stray quote it is, at the line the record starts on: with the limit at
    2**31 - 1 such a field had grown to the rest of the file, 4 bytes a character."""
    try:
        return next(records)
    except StopIteration:
        return None
    except csv.Error as err:
        if "field larger than field limit" not in str(err):
            raise
        raise ValueError(
            f"{path}: line {start}: a quoted field runs over lines past {_LINE_LIMIT:,} "
            'characters, the most a cell may hold: a stray " that never closes, or that a '
            "later one closes? Remove the stray quote or quote the cell whole"
        ) from None


def _last_line_opens_a_quote(path: Path) -> bool:
    """Whether the file's last line (of its last 64 KiB) holds an odd number of quotes:
    one left open there, say, which a loose reading of the file takes for a cell's end. A
    record over lines that opens its quote on an earlier line is not seen here."""
    with path.open("rb") as handle:
        handle.seek(max(0, handle.seek(0, 2) - (1 << 16)))
        tail = handle.read().rstrip(b"\r\n")
    last = tail.rsplit(b"\n", 1)[-1].rsplit(b"\r", 1)[-1]
    return last.count(b'"') % 2 == 1


def _wrong_field_count(path: Path, start: int, end: int) -> None:
    """Refuse a record of another number of fields than the header, at its first line."""
    where = f"line {start}" if end == start else f"lines {start}-{end} (a quoted cell over lines)"
    raise ValueError(f"{path}: {where} has a different number of fields")


#: How a quote that is a cell's own text (a token) is written.
QUOTE_AS_TEXT = 'a " that is a token must be written doubled inside quotes, """"'


def _refuse_unclosed(path: Path, row: list[str], names: list[str], start: int) -> None:
    """Refuse the record from line ``start`` that ran into the end of the file: its last
    field opens a quote that never closes (a stray ``"`` in a text cell), and the csv
    module reads the rest of the file into that one cell. With the field limit raised
    (:func:`_long_fields`) a file of 200,000 rows had read as 6 pairs without a word; on
    the file's last line, ``0.5,"1`` had read as the label 1."""
    name = names[len(row) - 1] if 0 < len(row) <= len(names) else ""
    field = f"column {name!r}" if name else f"field {len(row)}"
    raise ValueError(
        f'{path}: line {start}: a quoted field ({field}) opens with a " that never closes: '
        "the rest of the file would be one cell; remove the stray quote or quote the cell "
        f"whole ({QUOTE_AS_TEXT})"
    )


# The csv module's default field limit: a field over several lines longer than this is
# refused, as it was before the limit was raised for long one-line cells.
_SPANNED_LIMIT = 131_072


def _check_spanned(path: Path, row: list[str], names: list[str], start: int, end: int) -> None:
    """Refuse a record whose quoted field runs over many lines and past the csv module's
    default limit: a stray ``"`` that a later one (an inch mark, quoted speech) closes makes
    the rows between one cell, and with the limit raised for long one-line cells
    (:func:`_long_fields`) a file of 200,000 rows had read as 50,005 pairs without a word."""
    for name, cell in zip(names, row, strict=True):
        if len(cell) > _SPANNED_LIMIT and "\n" in cell:
            raise _spanned_cell(path, name, start, end, cell)


#: What a quoted cell over lines that is no cell of the file's says of its cause.
STRAY_QUOTE = 'a stray " that a later one closes? Remove the stray quote or quote the cell whole'
# A line break inside a quoted cell, as the file's lines break (:func:`_line_blocks`).
_BREAK = re.compile(r"\r\n|\r|\n")


def _check_rows_inside(
    path: Path,
    row: list[str],
    names: list[str],
    delimiter: str,
    start: int,
    numbers: list[int],
) -> ValueError | None:
    """Refuse a record from line ``start`` whose quoted cell over lines reads as rows of
    the file's cut at a quote (:func:`_reads_as_rows`): as a ``"`` that is a token (quoted
    speech in a file of NLP tokens) leaves it where the next one closes it, and a
    1,000-token file had read as 493 pairs without a word. Named at the line the quote
    opens on, not at the end of the file where an odd one never closes. ``numbers``: the
    columns read as numbers (probabilities, labels), where the rows of any file hold
    numbers; a mask of the record's own cells had taken a text column for numbers where a
    row's text was one ("5"), and missed the quote.

    Numbers with white space beside them are a row's only if the record's own have some
    (:func:`_spaced_numbers`); a cell that reads as rows only with such numbers is
    returned, for the caller to refuse if another record of the file's has them: in
    columns aligned with spaces (``0.1   ,0``) a record whose numbers fill the column
    (``0.1234,1``) had read the rows between as prose, and 10 rows as 5."""
    spaced, held = _spaced_numbers(row, numbers), None
    for column, cell in enumerate(row):
        if "\n" not in cell and "\r" not in cell:  # on one line (most cells): no quote over lines
            continue
        if _reads_as_rows(cell, row, column, delimiter, numbers, spaced):
            raise _rows_inside(path, row, names, column, start)
        if not (spaced or held) and _reads_as_rows(cell, row, column, delimiter, numbers, True):
            held = _rows_inside(path, row, names, column, start)
    return held


def _rows_inside(
    path: Path, row: list[str], names: list[str], column: int, start: int
) -> ValueError:
    """The error for the record from line ``start`` whose quoted cell in ``column`` reads
    as rows of the file's, named at the line its quote opens on."""
    opened = start + sum(len(_BREAK.findall(before)) for before in row[:column])
    return ValueError(
        f'{path}: line {opened}: a " opens a quoted field (column {names[column]!r}) '
        f"that runs to line {opened + len(_BREAK.findall(row[column]))}, from text that "
        f"ends a row of the file's to text that begins one: {QUOTE_AS_TEXT}, as csv "
        "writers and pandas write it; remove a stray one (a cell of text over lines "
        "that reads so is read from JSON lines: pandas' to_json(orient='records', "
        "lines=True))"
    )


def _reads_as_rows(
    cell: str,
    row: list[str],
    column: int,
    delimiter: str,
    numbers: list[int],
    spaced: bool = False,
) -> bool:
    r"""Whether the lines of ``row``'s quoted ``cell`` in ``column`` read as the file's rows
    that a stray quote has cut: the first as a row's end (:func:`_ends_a_row`), every one
    between as a whole row or a blank line (:func:`_is_a_row`), the last as a row's start
    (:func:`_begins_a_row`). A table pasted into a prompt has lines between that are no
    rows of the file's, and prose's numbers ("Ratings, 4, 5") a space beside them that
    the file's own numbers have not (``spaced``: they have): with the first and last lines
    alone looked at, and any white space, 278 of 1,000 random pandas files holding a table
    in a text cell had been refused (now 120), and 370 of 1,000 holding prompts (now 38).

    Example:
        >>> numbers = [True, True, False]  # prob,label,text
        >>> row = ["0.5", "1", "\n0.2,0,w\n0.3,1,"]  # 0.5,1," then 0.2,0,w then 0.3,1,"
        >>> _reads_as_rows(row[2], row, 2, ",", numbers)
        True
        >>> row = ["0.5", "1", "see\nname,score,rank\n0.2,0,x"]  # a table pasted
        >>> _reads_as_rows(row[2], row, 2, ",", numbers)
        False
        >>> row = ["Ratings, 4, 5\nGreat", "0.5", "1"]  # text,prob,label
        >>> _reads_as_rows(row[0], row, 0, ",", [False, True, True])
        False
    """
    bare = not spaced
    # The first line first: most text over lines has not the fields of a row's end.
    first = _BREAK.split(cell, 1)[0]
    if not _ends_a_row(first.split(delimiter), row, column, numbers, bare=bare):
        return False
    *between, last = _BREAK.split(cell)[1:]
    return all(_is_a_row(line.split(delimiter), numbers, bare=bare) for line in between) and (
        _begins_a_row(last.split(delimiter), row, column, numbers, bare=bare)
    )


def _ends_a_row(
    fields: list[str], row: list[str], column: int, numeric: list[int], bare: bool = False
) -> bool:
    """Whether the ``fields`` of the first line of a quoted cell in ``column`` of ``row``
    read as the last fields of a row, as a stray quote leaves them: one a column from
    ``column`` on, numbers in the columns read as numbers (``numeric``) after the cell's
    own (``bare``: without white space beside them), or anything there in a padding row
    (:func:`_is_padding`), whose first fields are the record's before the cell.

    Example:
        >>> numeric = [False, True, True]
        >>> _ends_a_row(["", "0.3", "0"], [], 0, numeric), _ends_a_row(["x", "0.3"], [], 0, numeric)
        (True, False)
        >>> _ends_a_row(["Great", " works well", ""], [], 0, numeric)
        False
        >>> _ends_a_row(["Ratings", " 4", " 5"], [], 0, numeric, bare=True)
        False
        >>> _ends_a_row(["", "None", "-100"], [], 0, numeric)  # a padding row's
        True
    """
    return len(fields) == len(numeric) - column and (
        _numbers_where(fields[1:], numeric[column + 1 :], bare)
        or _is_padding([*row[:column], *fields], numeric, bare)
    )


def _is_a_row(fields: list[str], numeric: list[int], bare: bool = False) -> bool:
    """Whether a line's ``fields`` read as a whole row of the file's, as the lines a
    stray quote's cell holds between its first and last do: as many as the file's
    columns, numbers in the columns read as numbers (``numeric``; ``bare``: without white
    space beside them) or a padding row's (:func:`_is_padding`); or a blank line, which a
    file may hold between rows.

    Example:
        >>> numeric = [True, True, False]
        >>> _is_a_row(["0.5", "1", "x"], numeric), _is_a_row([" "], numeric)
        (True, True)
        >>> _is_a_row(["name", "score", "rank"], numeric), _is_a_row(["0.5", "1"], numeric)
        (False, False)
        >>> _is_a_row(["None", "-100", "x"], numeric)  # a padding row's
        True
    """
    if len(fields) == 1 and not fields[0].strip():
        return True
    return len(fields) == len(numeric) and (
        _numbers_where(fields, numeric, bare) or _is_padding(fields, numeric, bare)
    )


def _begins_a_row(
    fields: list[str], row: list[str], column: int, numeric: list[int], bare: bool = False
) -> bool:
    """Whether the ``fields`` of the last line of a quoted cell in ``column`` of ``row``
    read as the first fields of a row, as a stray quote leaves them: numbers in the
    columns read as numbers (``numeric``; ``bare``: without white space beside them) up
    to the cell its closing quote is in, the cell's column, or a later one where that
    quote opens a quoted cell that holds the delimiter (``"d,2"``), whose text after it
    ends the record's cell there in that cell's own closing quote (``2"``); or anything
    there in a padding row (:func:`_is_padding`), whose last fields are the record's
    after that cell.

    Example:
        >>> numeric = [True, True, False]
        >>> _begins_a_row(["0.3", "1", "x"], ["0.3", "1", "x"], 2, numeric)
        True
        >>> _begins_a_row(["0.3", "d"], ["x", '2"', "1"], 0, numeric)
        True
        >>> _begins_a_row(["buy it", " 5 stars"], ["x", "2", "0.3"], 0, numeric)
        False
        >>> _begins_a_row(["None", "x"], ["w", "x", "-100"], 1, [True, False, True])
        True
    """
    spilled = len(fields) - 1 - column  # fields past the cell's column
    closes = spilled == 0 or (0 < spilled < len(row) - column and row[column + spilled][-1:] == '"')
    return closes and (
        _numbers_where(fields[:-1], numeric, bare)
        or _is_padding([*fields, *row[len(fields) :]], numeric, bare)
    )


def _numbers_where(fields: list[str], numeric: list[int], bare: bool = False) -> bool:
    """Whether the ``fields`` read as values where ``numeric``, from the same column, says
    a column is read as numbers: a number, a label ``True``/``False`` (any case, as
    labels are read), or a blank (a padding row's probability); with ``bare``, written
    without white space beside them. Without the blank and the labels a stray quote in a
    file of bool labels, or opening on a padding row, had merged its rows without a
    word."""
    return all(
        _is_value(text) and not (bare and _spaced(text))
        for text, number in zip(fields, numeric)
        if number
    )


# Kinds of ``numeric`` entries beyond True/False: a column read as numbers, and one of
# labels, where alone a padding row's label is looked for.
NUMBER, LABEL = 1, 2


def _is_padding(fields: list[str], numeric: list[int], bare: bool = False) -> bool:
    """Whether a row's ``fields`` read as a padding row's: a label that looks like padding,
    a negative whole number (``-100``, with ``bare`` written without white space beside
    it), in the label column (``numeric``'s ``LABEL``; any column read as numbers where no
    label column is known), and anything in the others: a padding
    row's probability may hold anything (``None``, ``pad``), and :func:`read_table` drops
    such a row with ``ignore_index`` or refuses its label. Without it a stray quote over a
    padding row of ``None`` had merged the rows between without a word (11 tokens read as
    8 pairs).

    Example:
        >>> numeric = [False, True, True]  # token,prob,label
        >>> _is_padding(["w", "None", "-100"], numeric), _is_padding(["w", "None", "1"], numeric)
        (True, False)
        >>> _is_padding(["-5", "apples", "x"], [NUMBER, LABEL, 0])  # -5 is no label
        False
    """
    labels = [kind == LABEL for kind in numeric]
    where = labels if any(labels) else numeric
    return any(_is_padding_label(text, bare) for text, looked in zip(fields, where) if looked)


def _is_padding_label(text: str, bare: bool = False) -> bool:
    """A negative whole number, as a padding label is (with ``bare``, written without white
    space beside it).

    Example:
        >>> [_is_padding_label(t) for t in ("-100", "-1.0", "-0.5", "1", "-inf", "x")]
        [True, True, False, False, False, False]
    """
    try:
        value = float(text)
    except ValueError:
        return False
    return value < 0 and value.is_integer() and not (bare and _spaced(text))


def _spaced_numbers(row: list[str], numbers: list[int]) -> bool:
    """Whether a record writes a number (in a column that ``numbers`` says is read as
    numbers) with white space beside it, in a cell on one line: columns aligned with
    spaces (``0.1   ,0``). A cell over lines (a quote's) is no number of the record's."""
    return any(
        _spaced(cell) and "\n" not in cell and "\r" not in cell
        for cell, number in zip(row, numbers)
        if number
    )


def _refuse_held(
    held: ValueError | None,
    path: Path,
    delimiter: str,
    numbers: list[int],
    records: int | None = None,
) -> None:
    """Raise ``held``, the error for a cell that reads as rows only with white space beside
    their numbers (:func:`_check_rows_inside`), if one of the file's first ``records``
    records (all: None) writes a number so (:func:`_spaced_numbers`): columns aligned with
    spaces. The file is read again for it only where a cell is held: the reading of any
    other file does not pay for it, row by row."""
    if held is None:
        return
    with path.open(newline="", encoding="utf-8-sig") as handle:
        rows = filter(_not_blank, csv.reader(_bounded_lines(handle, path), delimiter=delimiter))
        next(rows, None)  # the header
        if any(_spaced_numbers(row, numbers) for row in islice(rows, records)):
            raise held from None


def _spaced(text: str) -> bool:
    """Whether a cell has white space beside its text (``4`` in ``Ratings, 4``)."""
    return text != text.strip()


def _is_value(text: str) -> bool:
    """A number, ``True``/``False`` in any case, or a blank cell.

    Example:
        >>> [_is_value(t) for t in ("0.5", " TRUE", "", "no")]
        [True, True, True, False]
    """
    bare = text.strip()
    return not bare or bare.lower() in ("true", "false") or _is_number(bare)


def _spanned_cell(path: Path, column: str, start: int, end: int, cell: str) -> ValueError:
    """The error for a quoted cell over lines ``start``-``end`` too long to be a cell of
    the file's: a stray quote that a later one closes."""
    return ValueError(
        f"{path}: lines {start}-{end}: a quoted field (column {column!r}) runs over "
        f"{end - start + 1:,} lines ({len(cell):,} characters): {STRAY_QUOTE}"
    )


@contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: it scanned the heap again and again while the
    csv module made a list per row (none in a cycle), and had doubled the reading time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Irregular(Exception):
    """A CSV/TSV file that the fast reader leaves to the exact one."""


def python_only_numbers(cells: list[str]) -> bool:
    """Whether some of these texts hold what only Python's ``float()`` reads as a number:
    an underscore (``0.2_5``) or a character outside ASCII (the full-width ``０.７``).
    numpy's reading follows ``float()``, and a typo had become 0.25 without a word.

    Example:
        >>> python_only_numbers(["0.25", "1e-3"]), python_only_numbers(["0.2_5"])
        (False, True)
    """
    joined = "".join(cells)
    return "_" in joined or not joined.isascii()


class _NotNumbers(Exception):
    """A column that does not read as numbers, to be read as text."""


# Rows read (and converted) at a time by the fast reader.
_CHUNK_ROWS = 1 << 16


class _CellNumbers(np.ndarray):
    """A CSV/TSV column read as numbers (float64), that can still give a cell's text for
    messages (:func:`_as_written`): ``1e3`` is named as the file writes it, not 1000.0."""

    table: _DelimitedTable
    name: str

    def cell(self, row: int) -> str:
        """The text of data row ``row`` (0-based) of the column, stripped."""
        return self.table.cell(self.name, row)


def _before_trailing_blanks(
    chunk: list[list[str]], reader: Iterator, width: int
) -> tuple[list[list[str]], int]:
    """A chunk of rows, not all ``width`` wide, that ends the file in blank lines (a
    writer's extra newline): its rows before them and the number of blank lines, the rest
    of the file read too, row by row. Any other unevenness is the exact reader's
    (:class:`_Irregular`), found before the rest is read: a file ending in a blank line had
    been read twice."""
    kept = len(chunk)
    while kept and not _not_blank(chunk[kept - 1]):
        kept -= 1
    if kept == len(chunk) or any(len(row) != width for row in chunk[:kept]):
        raise _Irregular
    blank = len(chunk) - kept
    for row in reader:
        if _not_blank(row):
            raise _Irregular
        blank += 1
    return chunk[:kept], blank


class _DelimitedTable(_Table):
    """The columns of a CSV/TSV file, read when first used: only the columns asked for
    (:meth:`want` names those that the caller will use, so that one pass reads them
    all), those that hold numbers converted chunk by chunk to float64 (a
    :class:`_CellNumbers`) instead of kept as one string per cell. Every row of the file is
    checked as the exact reader checks it; a file it does not take as it is (a short
    row, a blank line, a csv error) is read by the exact reader, whose errors are
    reported."""

    def __init__(self, path: Path, delimiter: str, names: list[str]) -> None:
        # ``names``: every column's, "" for one left out (:func:`_header`); the table's
        # keys are the named columns.
        super().__init__(dict.fromkeys(n for n in names if n))
        self.path, self.delimiter, self.names = path, delimiter, names
        self._loaded: dict[str, Any] = {}
        self._numeric: set[str] = set()
        self._labels: set[str] = set()
        self._text: set[str] = set()
        self._wanted: list[str] = []
        self._lines: Sequence[int] | None = None

    def want(
        self, numeric: Sequence[str], text: Sequence[str] = (), labels: Sequence[str] = ()
    ) -> None:
        """Columns the caller will use: ``numeric`` ones are read as numbers where they
        all are (else as text, as ``text`` ones are); ``labels``: the numeric ones holding
        labels (a padding row is told by its label)."""
        self._labels.update(labels)
        # A column wanted as text too (group ids that are also the probabilities) stays
        # text: "0.1" and "0.10" are two ids, one number.
        self._numeric.update(numeric)
        self._numeric.difference_update(text)
        self._wanted = [*dict.fromkeys([*self._wanted, *numeric, *text])]

    def __getitem__(self, name: str) -> Any:
        if name not in self:
            raise KeyError(name)
        if name not in self._loaded:
            self._read([n for n in dict.fromkeys([*self._wanted, name]) if n not in self._loaded])
        return self._loaded[name]

    @property
    def lines(self) -> Sequence[int]:  # type: ignore[override]
        if self._lines is None:
            self._read([n for n in self._wanted if n not in self._loaded])
        assert self._lines is not None
        return self._lines

    def _read(self, names: list[str]) -> None:
        with _readable(self.path):
            while True:
                try:
                    columns, lines = self._read_fast(names)
                except _NotNumbers as err:
                    self._text.add(str(err))
                    continue
                except _Irregular:
                    exact = _read_delimited_exact(
                        self.path, self.delimiter, self._numeric, self._labels
                    )
                    self._loaded.update(dict(exact))
                    self._lines = exact.lines
                    return
                self._loaded.update(columns)
                self._lines = lines
                return

    def _read_fast(
        self, names: list[str], strict: bool = True
    ) -> tuple[dict[str, Any], Sequence[int]]:
        numeric = {n for n in names if n in self._numeric and n not in self._text}
        parts: dict[str, list[Any]] = {n: [] for n in names}
        get = {n: itemgetter(self.names.index(n)) for n in names}
        width, rows = len(self.names), 0
        with self.path.open(newline="", encoding="utf-8-sig") as handle, _no_gc(), _long_fields():
            # Strict: a quote that never closes, on the last line too, is the exact reader's.
            lines = _bounded_lines(handle, self.path)
            reader = csv.reader(lines, delimiter=self.delimiter, strict=strict)
            try:
                next((row for row in reader if _not_blank(row)), None)  # after blank lines
                header, blank = reader.line_num, 0
                while chunk := list(islice(reader, _CHUNK_ROWS)):
                    if set(map(len, chunk)) != {width}:
                        chunk, blank = _before_trailing_blanks(chunk, reader, width)
                    rows += len(chunk)
                    for name in names:
                        cells = list(map(get[name], chunk))
                        if name in numeric:
                            if python_only_numbers(cells):  # named by row as text
                                raise _NotNumbers(name)
                            try:
                                parts[name].append(np.asarray(cells, dtype=np.float64))
                            except (OverflowError, TypeError, ValueError):
                                raise _NotNumbers(name) from None
                        else:
                            parts[name].append([c.strip(_PADDING) for c in cells])
            except csv.Error as err:
                loose = strict and "unexpected end of data" not in str(err)
                if loose and not _last_line_opens_a_quote(self.path):
                    # Loose quoting ('"5" screen' in a text column), which the exact reader
                    # reads alike, four times slower: read again as before, not strictly
                    # (a quote left open on the last line stays the exact reader's).
                    return self._read_fast(names, strict=False)
                raise _Irregular from None
            if reader.line_num != header + rows + blank:  # a field over several lines
                raise _Irregular
        columns: dict[str, Any] = {}
        for name in names:
            if name in numeric:
                joined = np.concatenate(parts[name]) if parts[name] else np.zeros(0)
                column = joined.view(_CellNumbers)
                column.table, column.name = self, name
                columns[name] = column
            else:
                columns[name] = [cell for part in parts[name] for cell in part]
        return columns, range(header + 1, header + rows + 1)

    def cell(self, name: str, row: int) -> str:
        """The text of data row ``row`` (0-based) of column ``name``, stripped (messages)."""
        with _readable(self.path):
            exact = _read_delimited_exact(self.path, self.delimiter, self._numeric, self._labels)
        return exact[name][row]


def _read_jsonl(path: Path) -> _Table:
    table = _Table()
    table.lines = []
    with path.open(encoding="utf-8-sig") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = _json_document(line, path, f"line {line_no}")
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: line {line_no} is not valid JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}: line {line_no} is not a JSON object")
            _check_row_keys(row, path, f"line {line_no}")
            if not row:
                raise ValueError(f"{path}: line {line_no} is an empty JSON object")
            table.add_row(row, f"line {line_no}")
            table.lines.append(line_no)
    if not table.lines:
        raise ValueError(f"{path}: no rows (an empty file, or blank lines only)")
    return table


def _read_json(path: Path) -> _Table:
    """A ``.json`` file: one JSON document (a list of row objects, or an object of
    column lists, as ``json.dump`` writes them, indented or not, with any keys of one
    value beside them kept unread), else JSON lines."""
    text = path.read_text(encoding="utf-8-sig")
    try:
        document = _json_document(text, path, "the document")
    except json.JSONDecodeError as err:
        first = text.lstrip().split("\n", 1)[0]
        if _parses(first):
            return _read_jsonl(path)  # one document per line: JSON lines
        raise ValueError(
            f"{path}: not valid JSON at line {err.lineno}, column {err.colno} ({err.msg})"
        ) from None
    if document in ([], {}):
        kind = "list" if isinstance(document, list) else "object"
        raise ValueError(f"{path}: no rows (an empty JSON {kind})")
    if isinstance(document, dict) and all(isinstance(v, dict) for v in document.values()):
        raise ValueError(
            f"{path}: an object of objects (pandas' default DataFrame.to_json layout, "
            "orient='columns', or orient='index') is not read: save a list of row objects "
            "(orient='records'), JSON lines (orient='records', lines=True) or an object of "
            "column lists"
        )
    if (
        isinstance(document, dict)
        and document
        and not any(isinstance(v, list) for v in document.values())
    ):
        _check_row_keys(document, path, "the object")
        document = [document]  # one row
    table = _Table()
    table.lines = None
    if isinstance(document, list) and document and all(isinstance(r, dict) for r in document):
        for i, row in enumerate(document):
            if not row:
                raise ValueError(f"{path}: row index {i} is an empty object")
            _check_row_keys(row, path, f"row index {i}")
            table.add_row(row, f"row index {i}")
        return table
    if isinstance(document, dict) and document:
        # A key beside the column lists that holds one value (metadata: "model": "bert")
        # is kept, and refused only if read as a column, as an .npz's or a .pt's is: it
        # had stopped the whole file.
        _check_row_keys(document, path, "the object of columns")
        table.update(document)
        return table
    raise ValueError(
        f"{path}: expected a list of row objects, an object of column lists, or JSON lines "
        f"(one object per line), got a JSON {type(document).__name__}"
    )


def _parses(line: str) -> bool:
    """Whether one line is a JSON document on its own."""
    try:
        json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


class _RepeatedKeys(dict):
    """A JSON object that named a key twice (its last value kept, as ``json`` keeps it),
    with the keys it repeated: refused where it is a row (:func:`_check_row_keys`), kept
    where it is metadata no column reads."""

    repeated: list[str]


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s object hook: a dict, or a :class:`_RepeatedKeys` where keys repeat."""
    made = dict(pairs)
    if len(made) != len(pairs):
        keys = [key for key, _ in pairs]
        made = _RepeatedKeys(made)
        made.repeated = sorted({key for key in keys if keys.count(key) > 1})
    return made


class _OverFloat(float):
    """A JSON number past a float's range (``1e400``, or the constant ``-Infinity``), read
    as ±inf as ``json`` reads it, with its text (``written``) for messages: a .jsonl's
    ``1e400`` had been named "inf" where a CSV's is named as written."""

    written: str


_INFINITE = (math.inf, -math.inf)


def _json_float(text: str) -> float:
    """``json``'s hook for numbers with a fraction or an exponent, and for constants:
    ``float(text)``, keeping the text where it is infinite. It costs the reading of
    JSON lines of floats about 3%."""
    value = float(text)
    if value in _INFINITE:
        value = _OverFloat(value)
        value.written = text
    return value


# One decoder for every document: json.loads(text, object_pairs_hook=...) builds a new
# one per call, which had made reading JSON lines twice as slow.
_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_pairs, parse_float=_json_float, parse_constant=_json_float
)


def _json_document(text: str, path: Path, where: str) -> Any:
    """``text`` parsed (``where``: its place in ``path``, for messages); a JSON decoding
    error is the caller's to name. A document nested past Python's recursion limit
    (about 1,000 levels, in a field never read even) is refused, where ``json`` had
    raised RecursionError."""
    if text.startswith("\ufeff"):  # as json.loads says it (a BOM past the first line)
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError(
            f"{path}: {where} nests JSON arrays or objects too deeply to read (more than "
            f"about {sys.getrecursionlimit()} levels)"
        ) from None


def _check_row_keys(row: dict, path: Path, where: str) -> None:
    """Refuse a row object (a line's, a record's, or the object of column lists) that
    repeats a key, as a CSV header that repeats a column name is: ``json`` had kept the
    last value silently (``{"prob": 0.1, ..., "prob": 0.9}`` scored 0.9)."""
    if isinstance(row, _RepeatedKeys):
        keys = ", ".join(map(repr, row.repeated))
        raise ValueError(
            f"{path}: {where} repeats the key(s) {keys}: which value is meant? write each key once"
        )


@contextmanager
def _readable(path: Path) -> Iterator[None]:
    """Reading ``path``: text that is not UTF-8, an unreadable file and one too large for
    the memory are ValueErrors naming it (a CSV's rows are read when a column is first
    used, after :func:`_load`). No offset is given for a bad byte: the decoder's counts
    from the start of its current chunk, not of the file."""
    try:
        yield
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path}: not UTF-8 text (it holds the byte {err.object[err.start]:#04x}); "
            "save it as UTF-8"
        ) from None
    except MemoryError:
        raise ValueError(
            f"{path}: too large to read into the memory available (an array file, .npz or "
            ".pt, takes less than a text file's rows)"
        ) from None
    except OSError as err:  # unreadable: permissions, an I/O error ("[Errno 5]" named no file)
        raise ValueError(f"{path}: cannot read it ({err.strerror or err})") from None
