"""The command line's I/O edge: read (probability, label) pairs, write results as JSON.

CSV and TSV (with a header, UTF-8), JSON lines (``.jsonl``; ``.json`` also takes one
document: a list of row objects or an object of column lists), ``.npy`` (an [N, 2] array
or a structured array), ``.npz`` and ``.pt`` (named arrays or tensors, or one [N, 2]
array; several dimensions must line up as the Python API's inputs do). Columns
are found by name (``--probs``/``--target``/``--groups``) or by the usual names. Group
ids (sentence or document ids for the group bootstrap) may be numbers or strings; they
are numbered 0..G-1. Every problem is a ``ValueError`` (or ``FileNotFoundError``) whose
message names the file and the column, and for a bad value (not a number, a probability
outside [0, 1] or NaN, a label that is not 0/1 or a class id) the row: its line in a
text file (the header is line 1), its index in an array file.
"""

from __future__ import annotations

import csv
import gc
import json
import math
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from calib_metrics.functional.errors import check_not_meta

PROB_NAMES = ("probs", "prob", "probability", "q", "p", "pred", "prediction", "score", "confidence")
# The usual names that say "probability": an array file's integer column (0s and 1s) under
# one of them alone is read as probabilities, as a CSV's is; under another (pred,
# prediction, score) it looks like hard predictions, and --probs must name it.
PROBABILITY_NAMES = ("probs", "prob", "probability")
TARGET_NAMES = ("target", "label", "labels", "y", "gold", "truth", "outcome")
GROUP_NAMES = (
    "groups",
    "group",
    "group_id",
    "sentence",
    "sentence_id",
    "sent_id",
    "doc",
    "doc_id",
    "document",
    "document_id",
)
FORMATS = (".csv", ".tsv", ".jsonl", ".json", ".ndjson", ".npy", ".npz", ".pt", ".pth")


def _usual_names(names: list[str], usual: tuple[str, ...]) -> list[str]:
    """Every one of the ``usual`` names (any case) among ``names``, as spelled there, in
    the order of ``usual``: two spellings of one name (``label``, ``Label``) are two
    candidates, or one of them had been read without a word.

    Example:
        >>> _usual_names(["prob", "label", "Label"], TARGET_NAMES)
        ['label', 'Label']
    """
    return [name for wanted in usual for name in names if name.lower() == wanted]


# The option that names the column of each kind.
_OPTIONS = {"probabilities": "probs", "labels": "target", "group ids": "groups"}


def _only(found: list[str], what: str, path: Path) -> str:
    """The one column found for the ``what``; several are refused, not one picked."""
    if len(found) > 1:
        raise ValueError(
            f"{path}: several columns could hold the {what} ({', '.join(found)}); name one "
            f"with --{_OPTIONS[what]}"
        )
    return found[0]


def _pick(
    names: list[str],
    wanted: str | None,
    defaults: tuple[str, ...],
    what: str,
    path: Path,
    taken: Mapping[str, str] | None = None,
    unusable: set[str] | None = None,
) -> str:
    """The column of the ``what``: ``wanted``, or the one usual name present. ``taken``
    maps the columns put to other uses to those uses (``{"tag": "named by --label"}``):
    none of them is this one, and neither is a column in ``unusable`` (integer arrays
    beside a float one: an .npz's ``prediction`` beside its ``probs``). Several usual
    names are refused: a header ``p,label,q`` had read ``q``."""
    taken = taken or {}
    unusable = unusable or set()
    option = _OPTIONS[what]
    if wanted is not None:
        if wanted not in names:
            raise ValueError(f"{path}: no column {wanted!r} (columns: {', '.join(names)})")
        if wanted in taken:
            raise ValueError(
                f"{path}: column {wanted!r} is given as --{option} and is {taken[wanted]}"
            )
        return wanted
    found = [n for n in _usual_names(names, defaults) if n not in taken and n not in unusable]
    if found:
        return _only(found, what, path)
    # A table holds one probability per row: a multiclass row's C probabilities go in an
    # array file or one JSON list per line.
    multiclass = (
        " (one probability per row; multiclass probabilities [N, C] go in a .npz, .npy or .pt "
        "file, or a JSON-lines list column)"
        if what == "probabilities"
        else ""
    )
    others = "".join(f"; {name!r} is {by}" for name, by in taken.items() if name in names)
    tabs = (
        " (the header holds tabs: give a tab-separated file a .tsv name)"
        if any("\t" in name for name in names)
        else ""
    )
    raise ValueError(
        f"{path}: cannot tell which column holds the {what} (columns: {', '.join(names)}"
        f"{others}); name it with --{option}{multiclass}{tabs}"
    )


class Predictions(NamedTuple):
    """Probabilities and labels (float64), group ids 0..G-1 (int64) when asked for, and
    which of the file's labels were kept (``kept``, bool, one per label in the file; None
    when no row was dropped as padding), so that other columns of the file and messages
    line up with the labels. ``group_column`` names the column the group ids came from
    (the one found by name, when none was given), None without them."""

    probs: Tensor
    target: Tensor
    groups: Tensor | None
    kept: Tensor | None = None
    group_column: str | None = None


# What to read: the probability and label column names, and the group column name or
# "" for "find it by its usual name" (None: no groups).
Wanted = tuple[str | None, str | None, str | None]


# A column read from a file: its name (for messages) and its values.
Column = tuple[str, Any]


class SharedName(str):
    """A column name given for two files (``compare``'s ``--target``) or inherited from
    the other file (``--probs`` for model b, ``recalibrate``'s test file): a file with
    named columns must have it; an unnamed [N, 2] array, which has no names, reads its
    columns 0 and 1 (only a name given for that file alone is refused there)."""


def shared(name: str | None) -> SharedName | None:
    """``name`` as a :class:`SharedName` (None stays None)."""
    return None if name is None else SharedName(name)


class _Table(dict):
    """The columns of a text file, with the line of every row (``lines``) for messages."""

    lines: list[int]


def _row_of(lines: list[int] | None, index: int, per_row: int = 1) -> str:
    """Where value ``index`` of a column (``per_row`` values per row) is in the file.

    Example:
        >>> _row_of([2, 3, 5], 2), _row_of(None, 7, per_row=3)
        ('line 5', 'row index 2')
    """
    row = index // per_row
    return f"line {lines[row]}" if lines is not None else f"row index {row}"


def _columns_from_table(
    table: dict[str, Any], path: Path, wanted: Wanted, taken: Mapping[str, str] | None = None
) -> tuple[Column, Column, Column | None]:
    names = list(table)
    probs, target, groups = wanted
    taken = dict(taken or {})
    if groups:
        taken.setdefault(groups, "named by --groups")
    candidates = [n for n in _usual_names(names, PROB_NAMES) if n not in taken]
    integers = {n for n in candidates if probs is None and _is_integer_array(table, n)}
    # Integers give way to a float candidate (an .npz's argmax "prediction" beside its
    # "probs"). Alone, they are probabilities only under a name that says so: a column of
    # 0s and 1s named "probs" is read as a CSV's is (it had been "cannot tell which column
    # holds the probabilities"), one named "prediction" or "score" is refused.
    unusable = integers
    if len(integers) == len(candidates):
        unusable = {n for n in integers if n.lower() not in PROBABILITY_NAMES}
        if candidates and unusable == integers:
            _refuse_hard_predictions(sorted(integers, key=candidates.index), path)
    probs = _pick(names, probs, PROB_NAMES, "probabilities", path, taken, unusable)
    target = _pick(
        names, target, TARGET_NAMES, "labels", path, {**taken, probs: "the probabilities"}
    )
    picked = (probs, target)
    group = None
    if isinstance(table, _DelimitedTable):
        # One pass over the file reads the columns used, and only those (a text file's
        # columns cannot fail to read, so the group column is picked first).
        if groups is not None:
            group = _pick(names, groups or None, GROUP_NAMES, "group ids", path)
        table.want(picked, [group] if group is not None else [])
    columns = tuple((name, _column(table, name, path)) for name in picked)
    if groups is None:
        return (*columns, None)
    if group is None:
        group = _pick(names, groups or None, GROUP_NAMES, "group ids", path)
    return (*columns, (group, _column(table, group, path)))


def _refuse_hard_predictions(integers: list[str], path: Path) -> None:
    """Refuse integer columns under a usual name that is not "probability" (``pred``,
    ``prediction``, ``score``): they look like hard predictions or class ids."""
    named = ", ".join(repr(n) for n in integers)
    several = len(integers) > 1
    raise ValueError(
        f"{path}: column{'s' if several else ''} {named} hold{'' if several else 's'} "
        "integers, which look like hard predictions (or class ids), not probabilities: give "
        "the model's probabilities, or name the column with --probs if it holds them (0s "
        "and 1s)"
    )


def _is_integer_array(table: Any, name: str) -> bool:
    """Whether a named array of an array file holds integers (text columns never do).
    Reads only the name and dtype where the format allows it."""
    if isinstance(table, _Table):
        return False
    try:
        value = table[name]
    except Exception:  # an unreadable member is reported when it is read, if it is
        return False
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, torch.dtype):
        return not dtype.is_floating_point and not dtype.is_complex
    return dtype is not None and np.dtype(dtype).kind in "iub"


def _column(table: Any, name: str, path: Path) -> Any:
    """One column's values as a list or numpy array of at least one dimension; only the
    columns used are read, so an odd extra key (a sparse or nested tensor) does not stop a
    file's valid ones."""
    if isinstance(table, _DelimitedTable):
        value = table[name]  # the file's rows are read here: its errors name their line
    else:
        try:
            value = table[name]  # a .npz member is read here
        except Exception as err:  # numpy and zipfile raise many types for a bad member
            raise ValueError(f"{path}: column {name!r} cannot be read ({err})") from None
    what = f"column {name!r}"
    if isinstance(value, Tensor):
        value = _tensor_as_numpy(value, path, what)
    elif not isinstance(value, (np.ndarray, list, tuple)):
        if not isinstance(value, (bool, int, float, np.generic)):
            # None, a string, a dict: numpy had made it a 0-dim array (or failed in len()).
            raise ValueError(
                f"{path}: {what} holds a {type(value).__name__}, not an array of values: "
                "store one value per row, a 1-D array [N]"
            )
        value = np.asarray(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        # A single value: len() of it had failed (TypeError, a traceback).
        raise ValueError(
            f"{path}: {what} has shape [] (a single value), not one value per row: store one "
            "value per row, a 1-D array [N] (or [N, C] of class probabilities)"
        )
    return value


def _tensor_as_numpy(value: Tensor, path: Path, what: str) -> np.ndarray:
    """A stored tensor as numpy, refused by name (``what``: ``"column 'probs'"``) where it
    has no values to copy (meta) or no dense layout."""
    check_not_meta(value, f"{path}: {what}")
    if value.layout != torch.strided or value.is_quantized or value.is_nested:
        kind = "quantized" if value.is_quantized else str(value.layout).split(".")[-1]
        kind = "nested" if value.is_nested else kind
        raise ValueError(f"{path}: {what} is a {kind} tensor: store a dense one (.to_dense())")
    return _to_numpy(value)


def _to_float(values: Any, path: Path, column: str, lines: list[int] | None = None) -> Tensor:
    if isinstance(values, np.ndarray) and np.iscomplexobj(values):
        raise ValueError(f"{path}: column {column!r} holds complex numbers, not real ones")
    if isinstance(values, np.ndarray) and values.dtype.kind in "mM":
        # numpy reads them as counts of their unit: 0 and 1 seconds were probabilities.
        raise ValueError(
            f"{path}: column {column!r} holds dates or durations ({values.dtype}), not numbers"
        )
    try:
        array = np.asarray(values, dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        raise _not_a_number(values, path, column, lines) from None
    return torch.from_numpy(array.reshape(-1).copy())


def _not_a_number(values: Any, path: Path, column: str, lines: list[int] | None) -> ValueError:
    """The error for a column that numpy cannot read as floats: its first bad value, or
    the first row whose number of values differs from the first row's."""
    flat = np.asarray(values, dtype=object).reshape(-1)
    ragged = _ragged_rows(flat.tolist(), path, column, lines)
    if ragged is not None:
        return ragged
    for i, value in enumerate(flat.tolist()):
        try:
            float(value)
        except OverflowError:
            where = _row_of(lines, i)
            return ValueError(
                f"{path}: {where}, column {column!r} holds a number too large for a float"
            )
        except (TypeError, ValueError):
            if isinstance(value, str) and not value.strip():
                return ValueError(
                    f"{path}: {_row_of(lines, i)}, column {column!r} is missing a value (an "
                    "empty cell)"
                )
            hint = ""
            if isinstance(value, str) and "," in value:
                hint = "; decimal commas are not read: write 0.9, not 0,9"
            shown = repr(value if len(str(value)) <= 40 else str(value)[:37] + "...")
            return ValueError(
                f"{path}: {_row_of(lines, i)}, column {column!r} holds a non-numeric value "
                f"{shown}{hint}"
            )
    return ValueError(f"{path}: column {column!r} holds a non-numeric value")


def _ragged_rows(
    rows: list[Any], path: Path, column: str, lines: list[int] | None
) -> ValueError | None:
    """The error for rows of lists (a JSON file's class probabilities) of unequal lengths."""
    sizes = [len(v) if isinstance(v, (list, tuple)) else 1 for v in rows]
    if not any(isinstance(v, (list, tuple)) for v in rows):
        return None
    i = next((k for k, size in enumerate(sizes) if size != sizes[0]), None)
    if i is None:
        return None
    values = f"{sizes[i]} value{'s' if sizes[i] != 1 else ''}"
    return ValueError(
        f"{path}: {_row_of(lines, i)}, column {column!r} holds {values} where "
        f"{_row_of(lines, 0)} holds {sizes[0]}: every row needs the same number of values"
    )


_BOOLEANS = {"true": 1.0, "false": 0.0}


def _to_labels(values: Any, path: Path, column: str, lines: list[int] | None = None) -> Tensor:
    """Labels as floats; ``True``/``False`` (any case, or JSON booleans) are 1 and 0,
    wherever they are in the column (a column whose first label was ``0`` had refused a
    later ``True`` as non-numeric).

    Example:
        >>> _to_labels(["0", "True", " false", "1"], Path("f.csv"), "label").tolist()
        [0.0, 1.0, 0.0, 1.0]
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiu":
        return _to_float(values, path, column, lines)  # numbers: no words to look for
    array = np.asarray(values, dtype=object).reshape(-1)
    words = [_BOOLEANS.get(v.strip().lower(), v) if isinstance(v, str) else v for v in array]
    return _to_float(words, path, column, lines)


def _check_values(
    q: Tensor, y: Tensor, path: Path, columns: tuple[Column, Column], lines, keep=None
) -> None:
    """Probabilities in [0, 1]; labels 0/1, or class ids in [0, C) when there are C
    probabilities per label (a multiclass array file). The first bad value is named with
    its row and column, as the file writes it (``columns``: the values read; ``keep``:
    the labels kept, as :attr:`Predictions.kept`); labels first, so that padding (a label
    such as -100 beside probabilities that may hold anything) is named as such."""
    per_row = q.numel() // y.numel() if y.numel() and q.numel() % y.numel() == 0 else 1
    _check_labels(y, per_row, path, columns[1], lines, keep, columns[0])
    _check_probs(q, per_row, path, columns[0], lines, keep)


def _holds_integers(column: Column) -> bool:
    """Whether an array file's column is of an integer (or bool) dtype."""
    return getattr(getattr(column[1], "dtype", None), "kind", "") in ("i", "u", "b")


def _check_labels(
    y: Tensor, per_row: int, path: Path, column: Column, lines, keep, probs: Column
) -> None:
    """Labels 0/1, or class ids beside ``per_row`` probabilities (:func:`_check_values`);
    where ``probs`` (their column) holds integers, the error says so: class ids in both
    columns had been "column 'target' holds 2: a label must be binary", blaming the
    labels."""
    if per_row == 1:
        bad, wanted = (y != 0) & (y != 1), "binary (0 or 1)"
    else:
        bad = (y != y.round()) | (y < 0) | (y >= per_row) | torch.isnan(y)
        wanted = f"a class id in 0..{per_row - 1} ({per_row} probabilities per label)"
    if not bool(bad.any()):
        return
    i = int(bad.nonzero()[0, 0])
    value = y[i].item()
    shown = "is missing (NaN)"
    if not math.isnan(value):
        shown = f"holds {_as_written(column[1], file_row(keep, i), value)}"
    # A negative whole number is likely padding; the hint is what --ignore-index takes.
    padding = (
        f" (padding? pass --ignore-index {int(value)})" if value < 0 and value % 1 == 0 else ""
    )
    integers = (
        f"; column {probs[0]!r} holds integers, not probabilities (class ids or hard "
        "predictions?): give the model's probabilities, [N, C] for C classes"
        if per_row == 1 and not padding and _holds_integers(probs)
        else ""
    )
    raise ValueError(
        f"{path}: {_row_of(lines, i)}, column {column[0]!r} {shown}: a label must be "
        f"{wanted}{padding}{integers}"
    )


def _check_probs(q: Tensor, per_row: int, path: Path, column: Column, lines, keep) -> None:
    """Probabilities in [0, 1], with a hint at what out-of-range values likely are."""
    bad = torch.isnan(q) | (q < 0) | (q > 1)
    if not bool(bad.any()):
        return
    i = int(bad.nonzero()[0, 0])
    value = q[i].item()
    percent = bool(((q >= 0) & (q <= 100)).all()) and float(q.max()) > 1
    hint = (
        "percentages? divide by 100; logits? apply sigmoid/softmax first"
        if percent
        else "pass probabilities, not logits: apply sigmoid/softmax first"
    )
    if _holds_integers(column):  # (a bool column holds no value outside [0, 1])
        hint = "integers: class ids or hard predictions? give the model's probabilities"
    problem = "is missing (NaN)"
    if not math.isnan(value):
        row, item = divmod(i, per_row)
        written = _as_written(column[1], file_row(keep, row), value, item, per_row)
        problem = f"holds {written}, not a probability in [0, 1] ({hint})"
    raise ValueError(f"{path}: {_row_of(lines, i, per_row)}, column {column[0]!r} {problem}")


def _as_written(values: Any, row: int, value: float, item: int = 0, per_row: int = 1) -> str:
    """Value ``item`` of data row ``row`` of a column as the file writes it: a text cell's
    own text, an array's element at its own precision (float32's 1.0000001), else the
    float read, exactly. Rounded (``:g``), a probability 1.0000001 had read "holds 1, not a
    probability in [0, 1]".

    Example:
        >>> _as_written(["0.5", " 1.0000001 "], 1, 1.0000001)
        '1.0000001'
        >>> _as_written(np.array([[0.5, 1.0000001]], dtype=np.float32), 0, 1.0, 1, 2)
        '1.0000001'
    """
    try:
        if isinstance(values, _CellNumbers):
            written = values.cell(row)
        elif isinstance(values, np.ndarray):
            written = values.reshape(-1)[row * per_row + item]
        else:
            written = values[row]
            written = written[item] if isinstance(written, (list, tuple)) else written
    except (IndexError, TypeError):  # a layout not foreseen: the number read is exact too
        written = value
    if isinstance(written, str):
        text = written.strip()
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(written, (np.floating, np.integer, int)) and not isinstance(written, bool):
        return str(written)
    return repr(float(value))


def _to_ids(values: Any, path: Path, column: str, lines: list[int] | None = None) -> Tensor:
    """Group ids of any kind (numbers, strings) numbered 0..G-1 in sorted order; a
    missing id (NaN, an empty cell, JSON null) is refused, not made a group of its own.

    Example:
        >>> _to_ids(["s2", "s1", "s2"], Path("f.csv"), "sentence").tolist()
        [1, 0, 1]
        >>> _to_ids(["s2", " ", "s2"], Path("f.csv"), "sentence", [2, 3, 4])
        Traceback (most recent call last):
        ...
        ValueError: f.csv: line 3, column 'sentence' has a missing group id (an empty cell)
    """
    array = np.asarray(values).reshape(-1)
    if isinstance(values, (list, tuple)) and path.suffix.lower() not in (".csv", ".tsv"):
        # JSON values, each judged as itself: numpy makes a list of strings and numbers
        # text, where a NaN number (a missing id) had read as an id and a string "nan"
        # (an id) as a missing one.
        _check_no_missing_id(np.array(values, dtype=object).reshape(-1), path, column, lines)
    elif array.dtype.kind not in "iub":
        _check_no_missing_id(array, path, column, lines)
    if array.dtype.kind not in "iubf":
        array = _numeric_if_numbers(array.astype(str))
    return torch.from_numpy(np.unique(array, return_inverse=True)[1].reshape(-1).astype(np.int64))


def _numeric_if_numbers(text: np.ndarray) -> np.ndarray:
    """Ids read as text that are all numbers, as numbers: numbered in numeric order, as
    the Python API numbers an integer tensor (in text order "10" came before "2", and the
    group bootstrap's draws, which follow the groups' order, differed from the API's),
    and one group per whole number ("5" and "5.0" had made two groups, "1" and "01" one);
    ids with a fraction stay text.

    Example:
        >>> _numeric_if_numbers(np.array(["10", "2", " 3"])).tolist()
        [10, 2, 3]
        >>> _numeric_if_numbers(np.array(["5", "5.0", "7"])).tolist()
        [5.0, 5.0, 7.0]
        >>> _numeric_if_numbers(np.array(["1.1", "1.10", "1.2"])).tolist()
        ['1.1', '1.10', '1.2']
        >>> _numeric_if_numbers(np.array(["s10", "s2"])).tolist()
        ['s10', 's2']
        >>> _numeric_if_numbers(np.array(["1", "--2"])).tolist()
        ['1', '--2']
    """
    stripped = np.char.strip(text)
    try:
        return stripped.astype(np.int64)
    except (ValueError, OverflowError):  # not all integers (or too large)
        pass
    try:
        numbers = stripped.astype(np.float64)
    except ValueError:  # not all numbers: order as text
        return text
    # Only whole numbers: "1.1" and "1.10" are two sentences of document 1 (or two
    # months), not one number; past 2⁵³ two integers can share a float.
    whole = np.isfinite(numbers).all() and (numbers == np.floor(numbers)).all()
    return numbers if bool(whole) and np.abs(numbers).max() < 2**53 else text


def _check_no_missing_id(array: np.ndarray, path: Path, column: str, lines) -> None:
    """ValueError naming the first id that is missing: blank text, None (JSON null) or NaN,
    a float's or a text cell's (a CSV's ``NaN``, as a probability cell reads it, had been
    a group of its own)."""
    if array.dtype.kind == "f":
        missing = np.isnan(array)
    elif array.dtype.kind == "U":
        text = np.char.lower(np.char.strip(array))
        blank, nan = text == "", np.isin(text, _NAN_TEXT)
        # A written NaN is a number's only among numbers: "nan" (Min Nan's ISO 639-3
        # code) or "Nan" (a name) among text ids is an id like the others.
        missing = blank | (nan & _all_numbers(text[~(blank | nan)]))
    else:  # JSON values: a string is an id, whatever it spells
        gone = ("null", "an empty cell")
        missing = np.array([_missing_id(v) in gone or _is_nan(v) for v in array.tolist()])
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{path}: {_row_of(lines, i)}, column {column!r} has a missing group id "
            f"({_missing_id(array[i : i + 1].tolist()[0])})"
        )


# How a text cell writes NaN (float() reads each of them as NaN), in lower case.
_NAN_TEXT = ("nan", "+nan", "-nan")


def _all_numbers(text: np.ndarray) -> bool:
    """Whether every one of the ``text`` cells reads as a number (True for none).

    Example:
        >>> _all_numbers(np.array(["1", " 2.5", "-3e2"])), _all_numbers(np.array(["eng", "1"]))
        (True, False)
    """
    try:
        text.astype(np.float64)
    except ValueError:
        return False
    return True


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _missing_id(value: Any) -> str | None:
    """How a missing group id is written (``null``, ``an empty cell``, ``NaN``), or None
    for an id.

    Example:
        >>> [_missing_id(v) for v in (None, " ", "NaN", float("nan"), "s1", 3)]
        ['null', 'an empty cell', 'NaN', 'NaN', None, None]
    """
    if value is None:
        return "null"
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        text = value.strip().lower()
        return "an empty cell" if not text else "NaN" if text in _NAN_TEXT else None
    return "NaN" if isinstance(value, float) and math.isnan(value) else None


def _delimiter(header: str, default: str) -> str:
    """``;`` for a semicolon-separated file (a header with semicolons and no commas)."""
    if default == "," and "," not in header and ";" in header:
        return ";"
    return default


def _read_delimited(path: Path, delimiter: str) -> _Table:
    """A CSV/TSV file's header, checked now; its rows are read when a column is first
    used (:class:`_DelimitedTable`)."""
    # utf-8-sig drops the byte-order mark that spreadsheet programs put before the header.
    with path.open(newline="", encoding="utf-8-sig") as handle:
        delimiter = _delimiter(handle.readline(), delimiter)
        handle.seek(0)
        reader = csv.reader(handle, delimiter=delimiter)
        try:
            names = _header(reader, path)
        except csv.Error as err:
            raise ValueError(f"{path}: line {reader.line_num}: {err}") from None
    return _DelimitedTable(path, delimiter, names)


def _read_delimited_exact(path: Path, delimiter: str) -> _Table:
    """Every cell of a CSV/TSV file as text, row by row: the reader of files that the fast
    one (:meth:`_DelimitedTable._read_fast`) does not take as they are (short rows, blank
    lines, fields over several lines, a csv error), and the one whose errors are reported."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        try:
            return _table_from_rows(reader, path)
        except csv.Error as err:
            raise ValueError(f"{path}: line {reader.line_num}: {err}") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _header(reader: Any, path: Path) -> list[str]:
    """The column names of a CSV/TSV file's first row, refused where they cannot be a
    header (none, numbers only, a name twice)."""
    header = next(reader, None)
    if not header:
        raise ValueError(f"{path}: empty file (a header row is needed)")
    names = [n.strip() for n in header]
    if all(_is_number(n) for n in names):
        raise ValueError(
            f"{path}: the first line holds numbers only ({', '.join(names[:3])}): the file "
            "needs a header line naming its columns, e.g. prob,label"
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(
            f"{path}: the header repeats column name(s) {', '.join(map(repr, repeated))}"
        )
    return names


def _table_from_rows(reader: Any, path: Path) -> _Table:
    names = _header(reader, path)
    table = _Table({n: [] for n in names})
    table.lines = []
    for row in reader:
        if not row:
            continue
        if len(row) != len(names):
            raise ValueError(f"{path}: line {reader.line_num} has a different number of fields")
        for name, raw in zip(names, row, strict=True):
            table[name].append(raw.strip())
        table.lines.append(reader.line_num)
    return table


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


class _DelimitedTable(_Table):
    """The columns of a CSV/TSV file, read when first used: only the columns asked for
    (:meth:`want` names those that the caller will use, so that one pass reads them
    all), those that hold numbers converted chunk by chunk to float64 (a
    :class:`_CellNumbers`) instead of kept as one string per cell. Every row of the file is
    checked as the exact reader checks it; a file it does not take as it is (a short
    row, a blank line, a csv error) is read by the exact reader, whose errors are
    reported."""

    def __init__(self, path: Path, delimiter: str, names: list[str]) -> None:
        super().__init__(dict.fromkeys(names))
        self.path, self.delimiter, self.names = path, delimiter, names
        self._loaded: dict[str, Any] = {}
        self._numeric: set[str] = set()
        self._text: set[str] = set()
        self._wanted: list[str] = []
        self._lines: Sequence[int] | None = None

    def want(self, numeric: Sequence[str], text: Sequence[str] = ()) -> None:
        """Columns the caller will use: ``numeric`` ones are read as numbers where they
        all are (else as text, as ``text`` ones are)."""
        # A column wanted as text too (group ids that are also the probabilities) stays
        # text: "0.1" and "0.10" are two ids, one number.
        self._numeric.update(numeric)
        self._numeric.difference_update(text)
        self._wanted = [*dict.fromkeys([*self._wanted, *numeric, *text])]

    def __getitem__(self, name: str) -> Any:
        if name not in self.names:
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
                    exact = _read_delimited_exact(self.path, self.delimiter)
                    self._loaded.update(dict(exact))
                    self._lines = exact.lines
                    return
                self._loaded.update(columns)
                self._lines = lines
                return

    def _read_fast(self, names: list[str]) -> tuple[dict[str, Any], Sequence[int]]:
        numeric = {n for n in names if n in self._numeric and n not in self._text}
        parts: dict[str, list[Any]] = {n: [] for n in names}
        get = {n: itemgetter(self.names.index(n)) for n in names}
        width, rows = len(self.names), 0
        with self.path.open(newline="", encoding="utf-8-sig") as handle, _no_gc():
            reader = csv.reader(handle, delimiter=self.delimiter)
            try:
                next(reader)
                while chunk := list(islice(reader, _CHUNK_ROWS)):
                    if set(map(len, chunk)) != {width}:
                        raise _Irregular
                    rows += len(chunk)
                    for name in names:
                        cells = list(map(get[name], chunk))
                        if name in numeric:
                            try:
                                parts[name].append(np.asarray(cells, dtype=np.float64))
                            except (OverflowError, TypeError, ValueError):
                                raise _NotNumbers(name) from None
                        else:
                            parts[name].append(list(map(str.strip, cells)))
            except csv.Error:
                raise _Irregular from None
            if reader.line_num != rows + 1:  # a blank line, or a field over several lines
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
        return columns, range(2, rows + 2)

    def cell(self, name: str, row: int) -> str:
        """The text of data row ``row`` (0-based) of column ``name``, stripped (messages)."""
        with _readable(self.path):
            exact = _read_delimited_exact(self.path, self.delimiter)
        return exact[name][row]


def _read_jsonl(path: Path) -> _Table:
    table = _Table()
    table.lines = []
    keys: set[str] | None = None
    with path.open(encoding="utf-8-sig") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: line {line_no} is not valid JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}: line {line_no} is not a JSON object")
            if not row:
                raise ValueError(f"{path}: line {line_no} is an empty JSON object")
            keys = set(row) if keys is None else keys
            if set(row) != keys:
                raise ValueError(f"{path}: line {line_no} has different keys than line 1")
            for key, value in row.items():
                table.setdefault(key, []).append(value)
            table.lines.append(line_no)
    if keys is None:
        raise ValueError(f"{path}: no rows (an empty file, or blank lines only)")
    return table


def _read_json(path: Path) -> _Table:
    """A ``.json`` file: one JSON document (a list of row objects, or an object of
    column lists, as ``json.dump`` writes them, indented or not), else JSON lines."""
    text = path.read_text(encoding="utf-8-sig")
    try:
        document = json.loads(text)
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
        document = [document]  # one row
    table = _Table()
    table.lines = None
    if isinstance(document, list) and document and all(isinstance(r, dict) for r in document):
        keys = set(document[0])
        for i, row in enumerate(document):
            if not row:
                raise ValueError(f"{path}: row index {i} is an empty object")
            if set(row) != keys:
                raise ValueError(f"{path}: row index {i} has different keys than row index 0")
            for key, value in row.items():
                table.setdefault(key, []).append(value)
        return table
    if isinstance(document, dict) and document:
        odd = next((k for k, v in document.items() if not isinstance(v, list)), None)
        if odd is not None:
            kind = type(document[odd]).__name__
            raise ValueError(
                f"{path}: key {odd!r} holds a {kind} where the others hold column lists"
            )
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
    except json.JSONDecodeError:
        return False
    return True


def _to_numpy(value: Any) -> Any:
    """A tensor as numpy: detached, on the CPU, bfloat16/half widened to float64."""
    if not isinstance(value, Tensor):
        return value
    value = value.detach().cpu()
    if value.is_floating_point() and value.dtype not in (torch.float32, torch.float64):
        value = value.double()
    return value.numpy()


def _named_columns(obj: Any, path: Path) -> dict[str, Any] | None:
    """A table, a dict or .npz of arrays, or a structured array as named columns; else None."""
    return _table_or_array(obj, path)[0]


def _table_or_array(obj: Any, path: Path) -> tuple[dict[str, Any] | None, np.ndarray | None]:
    """A file's contents as named columns (a table, a dict or .npz of arrays, a structured
    array's fields), or else as the one unnamed array it stores."""
    if isinstance(obj, dict) or hasattr(obj, "files"):
        keys = list(obj.files if hasattr(obj, "files") else obj)
        if not all(isinstance(k, str) for k in keys):
            raise ValueError(
                f"{path}: expected arrays named by strings (probs, target), got keys "
                f"{', '.join(repr(k) for k in keys[:5])}"
            )
        return obj, None
    array = _stored_array(obj, path)
    if array.dtype.names:
        return {n: array[n] for n in array.dtype.names}, None
    return None, array


def _stored_array(obj: Any, path: Path) -> np.ndarray:
    """The one unnamed array of an array file (an .npy's, or a .pt file's tensor or list
    of rows), refused by name where it is no array of values."""
    if isinstance(obj, Tensor):
        return _tensor_as_numpy(obj, path, "the stored tensor")
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, (list, tuple)):
        kind = type(obj).__name__
        arrays = [isinstance(v, (Tensor, np.ndarray)) for v in obj]
        rows = len(obj) not in (0, 2) and all(arrays)
        if rows and all(tuple(v.shape) == (2,) for v in obj):
            # Rows (probability, label) as tensors, one per row, read as a list of rows is.
            return np.stack([_row_as_numpy(v, path, i) for i, v in enumerate(obj)])
        if any(arrays):
            # [probs, target] had been read as rows: of two items, (probs[0], probs[1]) was
            # a probability and a label, silently. Two arrays of two values each are either,
            # and so are refused too.
            raise ValueError(
                f"{path}: holds a {kind} of {len(obj)} arrays where named ones are needed: "
                "store a dict of them, torch.save({'probs': ..., 'target': ...}), or one "
                "[N, 2] tensor of (probability, label) rows"
            )
        try:
            return np.asarray(obj)
        except ValueError:  # numpy's "inhomogeneous shape" had named no file
            raise ValueError(
                f"{path}: a {kind} of rows of unequal lengths, not an [N, 2] array of "
                "(probability, label) rows"
            ) from None
    raise ValueError(
        f"{path}: expected named arrays or one [N, 2] array (probability, label), got a "
        f"{type(obj).__name__}"
    )


def _row_as_numpy(row: Tensor | np.ndarray, path: Path, index: int) -> np.ndarray:
    """Item ``index`` of a stored list of rows as numpy (a tensor: as a column's is)."""
    if isinstance(row, Tensor):
        return _tensor_as_numpy(row, path, f"row {index} of the stored list")
    return row


def _from_arrays(
    obj: Any, path: Path, wanted: Wanted, taken: Mapping[str, str] | None = None
) -> tuple[Any, ...]:
    table, array = _table_or_array(obj, path)
    if table is not None:
        return _columns_from_table(table, path, wanted, taken)
    assert array is not None
    if array.ndim == 2 and array.shape[1] == 2:
        _check_no_names(wanted, path)
        return ("column 0", array[:, 0]), ("column 1", array[:, 1]), None
    raise ValueError(
        f"{path}: expected named arrays or one [N, 2] array (probability, label), "
        f"got shape {tuple(array.shape)}"
    )


def _check_no_names(wanted: Wanted, path: Path) -> None:
    """Refuse the column names given for an unnamed [N, 2] array (``None``: not given):
    it has columns 0 and 1 only. A name had been ignored, and ``compare preds.npy
    --probs-b q_b`` had compared the array with itself. A :class:`SharedName` is not
    refused: it was meant for the other file too."""
    probs, target, groups = wanted
    if groups is not None:
        raise ValueError(
            f"{path}: an [N, 2] array has no group ids; store named arrays "
            "(probs, target, groups) instead"
        )
    named = [name for name in (probs, target) if name is not None]
    named = [name for name in named if not isinstance(name, SharedName)]
    if named:
        raise ValueError(
            f"{path}: an unnamed array has no column {named[0]!r} (its column 0 holds the "
            "probabilities, column 1 the labels): leave the column options out, or store "
            "named arrays (an .npz, or a dict of tensors in a .pt)"
        )


# The first bytes of a zip archive (.npz) and of numpy's .npy format.
_MAGIC = {".npz": b"PK\x03\x04", ".npy": b"\x93NUMPY"}


def _check_magic(path: Path, suffix: str) -> None:
    """Refuse a file that does not start as ``suffix`` files do (numpy would try it as a
    pickle and blame pickled data the file does not hold)."""
    magic = _MAGIC[suffix]
    with open(path, "rb") as f:
        if f.read(len(magic)) != magic:
            kind = "a zip archive" if suffix == ".npz" else "numpy's .npy format"
            raise ValueError(f"{path}: not a {suffix} file (it does not start as {kind} does)")


def _load(path: Path) -> Any:
    """The file's contents: a table of columns (text formats) or the stored array object."""
    if path.is_dir():
        raise IsADirectoryError(f"{path}: a directory, not a file of predictions")
    if str(path) == "-" and not path.exists():
        raise ValueError("-: reading from stdin is not supported: give a file path")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise ValueError(f"{path}: not a regular file (a device or a pipe): save it to a file")
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path}: unknown format {suffix!r} (use one of {', '.join(FORMATS)})")
    with _readable(path):
        return _read_contents(path, suffix)


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


def _read_contents(path: Path, suffix: str) -> Any:
    """:func:`_load` of one suffix, text formats and array files alike."""
    if suffix in (".csv", ".tsv"):
        return _read_delimited(path, "\t" if suffix == ".tsv" else ",")
    if suffix == ".json":
        return _read_json(path)
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(path)
    if suffix in (".npy", ".npz"):
        _check_magic(path, suffix)
        try:
            return np.load(path, allow_pickle=False)
        except Exception as err:  # zipfile, zlib and numpy raise many types for a bad file
            raise ValueError(f"{path}: not a readable {suffix} file ({err})") from None
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for a bad file
        raise _unreadable_torch_file(path, err) from None


# How torch.load(weights_only=True) names an object it does not unpickle.
_UNSUPPORTED_GLOBAL = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")


def _unreadable_torch_file(path: Path, err: Exception) -> ValueError:
    """The error for a .pt file that ``torch.load`` refuses: one that holds numpy arrays
    (a valid torch file, whose arrays only an unsafe load reads) says so and how to save
    it; one that holds another object names it (``weights_only=False`` could run code the
    file carries, so it is never tried).

    Example:
        >>> import pickle
        >>> text = "... Unsupported global: GLOBAL numpy._core.multiarray._reconstruct was not"
        >>> str(_unreadable_torch_file(Path("p.pt"), pickle.UnpicklingError(text)))[:52]
        'p.pt: holds numpy arrays where tensors are needed (a'
    """
    found = _UNSUPPORTED_GLOBAL.search(str(err))
    if found is None:
        return ValueError(f"{path}: not a readable torch file ({type(err).__name__})")
    name = found.group(1)
    if name.split(".")[0] == "numpy":
        what = "numbers" if name.endswith(".scalar") else "arrays"
        return ValueError(
            f"{path}: holds numpy {what} where tensors are needed (a .pt file is read "
            "without running the code of pickled objects): save tensors, torch.from_numpy("
            "array), or save the arrays as an .npz (np.savez)"
        )
    return ValueError(
        f"{path}: holds a {name} object, which is not read (a .pt file is read "
        "without running the code of pickled objects): save tensors, in a dict or alone"
    )


def _check_layout(q: Column, y: Column, ids: Column | None, path: Path) -> None:
    """Arrays of several dimensions must line up as the Python API's inputs do: the
    labels of the probabilities' shape (binary) or of it without its last, class,
    dimension (multiclass), and group ids of the labels' shape. Flattened, probabilities
    [10, 100] and labels [100, 10] had paired each probability with another item's label.
    Flat columns (a text file's, or 1-D arrays) line up by position."""
    shape_q, shape_y = _shape(q[1]), _shape(y[1])
    _check_flat_lengths(q, y, shape_q, path)
    if shape_q is None or shape_y is None or max(len(shape_q), len(shape_y)) < 2:
        return
    if shape_q != shape_y and shape_q[:-1] != shape_y:
        raise ValueError(
            f"{path}: {q[0]!r} has shape {list(shape_q)} and {y[0]!r} has shape "
            f"{list(shape_y)}: the labels need the probabilities' shape (binary) or that "
            "shape without its last, class, dimension (multiclass)"
        )
    shape_ids = None if ids is None else _shape(ids[1])
    if shape_ids is not None and len(shape_ids) >= 2 and shape_ids != shape_y:
        raise ValueError(
            f"{path}: {ids[0]!r} has shape {list(shape_ids)} and {y[0]!r} has shape "
            f"{list(shape_y)}: give one group id per label, in the labels' shape"
        )


def _check_flat_lengths(q: Column, y: Column, shape_q: tuple | None, path: Path) -> None:
    """A flat column of probabilities (a 1-D array, or a list of numbers) gives one per
    label: 200 values beside 100 labels had been read as 100 rows of 2 classes. C per
    label come as rows: an [N, C] array, or a list per row."""
    values = q[1]
    if shape_q is not None:
        flat = len(shape_q) == 1
    else:
        first = next((v for v in values if v is not None and v != ""), None)
        flat = not isinstance(first, (list, tuple))
    n_q, n_y = len(values), len(y[1])
    if flat and n_q != n_y:
        raise ValueError(
            f"{path}: {n_q} probabilities in {q[0]!r} for {n_y} labels in {y[0]!r}: a flat "
            "column gives one probability per label (for a multiclass file, give each label "
            "a row of C probabilities: an [N, C] array, or a list per row)"
        )


def _shape(values: Any) -> tuple[int, ...] | None:
    """An array column's shape without trailing dimensions of size 1 (labels [N, 1] are
    labels [N]); None for a list (a text file's column)."""
    shape = getattr(values, "shape", None)
    if shape is None:
        return None
    shape = tuple(shape)
    while len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    return shape


def read_table(
    path: str | Path,
    probs: str | None = None,
    target: str | None = None,
    groups: str | None = None,
    ignore_index: int | None = None,
    taken: Mapping[str, str] | None = None,
) -> Predictions:
    """Probabilities, labels and, if ``groups`` is not None, group ids from a file.

    ``groups``: the group column's name, or ``""`` to find it by its usual names
    (``sentence_id``, ``doc_id``, ``group``, ...). Rows whose label is ``ignore_index``
    (padding: their probabilities may hold anything) are dropped first. Columns are
    found by their usual names when not given; several candidates are refused, and so
    are the columns in ``taken`` (column -> its other use, ``{"tag": "named by
    --label"}``). An unnamed [N, 2] array holds the probabilities in column 0 and the
    labels in column 1, and refuses any column name given (but a :class:`SharedName`).

    Example:
        >>> import tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> file = os.path.join(folder, "tokens.csv")
        >>> _ = open(file, "w").write("prob,label,sentence\\n0.9,1,s2\\n0.2,0,s1\\n0.4,0,s2\\n")
        >>> read_table(file, groups="").groups
        tensor([1, 0, 1])
        >>> read_table(file, groups="").group_column  # found by its usual name
        'sentence'
    """
    path = Path(path)
    contents = _load(path)
    q, y, ids = _from_arrays(contents, path, (probs, target, groups), taken)
    lines = getattr(contents, "lines", None)  # a CSV's rows are read with its columns
    _check_layout(q, y, ids, path)
    columns = (q, y)
    y = _to_labels(y[1], path, y[0], lines)
    keep = None if ignore_index is None else y != ignore_index
    q = _to_float(_padding_blanked(q[1], keep), path, q[0], lines)
    if q.numel() == 0:
        raise ValueError(f"{path}: no rows")
    if y.numel() == 0 or q.numel() % y.numel():
        raise ValueError(
            f"{path}: {q.numel()} probabilities for {y.numel()} labels (give one per label, "
            "or C per label for a multiclass file)"
        )
    every_line = lines
    if keep is not None:
        q = q.reshape(y.numel(), -1)[keep].reshape(-1)
        y, lines = y[keep], None if lines is None else [n for n, k in zip(lines, keep) if k]
        if y.numel() == 0:
            raise ValueError(f"{path}: no rows but padding (every label is {ignore_index})")
    _check_values(q, y, path, columns, lines, keep)
    group_column = None if ids is None else str(ids[0])
    if ids is not None:
        ids = _to_ids(ids[1], path, ids[0], every_line)
        ids = _kept_ids(ids, keep)
        # One id per label: per pair, or per item of a multiclass file (C values each).
        if ids.numel() != y.numel():
            raise ValueError(
                f"{path}: {ids.numel()} group ids for {y.numel()} labels (give one per label)"
            )
    return Predictions(q, y, ids, keep, group_column)


def _padding_blanked(values: Any, keep: Tensor | None) -> Any:
    """A text or JSON column of probabilities (a list, one cell per label) with the cells
    of the padding rows (``keep`` False) read as NaN, whatever they hold: an empty cell or
    a placeholder (``pad``) had stopped the command, though padding is dropped unread. An
    array's values are numbers already, and are taken as they are.

    Example:
        >>> _padding_blanked(["0.2", "", "pad"], torch.tensor([True, False, False]))
        ['0.2', nan, nan]
        >>> _padding_blanked([[0.2, 0.8], None], torch.tensor([True, False]))
        [[0.2, 0.8], [nan, nan]]
    """
    if keep is None or not isinstance(values, list) or len(values) != keep.numel():
        return values
    kept = keep.tolist()
    # A multiclass row is a list of C probabilities: the blank row is C NaNs.
    first = next((v for v, k in zip(values, kept, strict=True) if k), None)
    blank = [math.nan] * len(first) if isinstance(first, (list, tuple)) else math.nan
    return [v if k else blank for v, k in zip(values, kept, strict=True)]


def _kept_ids(ids: Tensor, keep: Tensor | None) -> Tensor:
    """The group ids of the rows kept, numbered 0..G-1 again: a group of padding rows only
    is gone, and had still been counted (40 groups reported where 5 were resampled). Ids
    of another length than ``keep`` (one per kept label already) are taken as they are.

    Example:
        >>> _kept_ids(torch.tensor([0, 0, 1, 2, 2]), torch.tensor([1, 1, 0, 1, 0]).bool())
        tensor([0, 0, 1])
    """
    if keep is None or ids.numel() != keep.numel():
        return ids
    return torch.unique(ids[keep], return_inverse=True)[1]


def as_multiclass(probs: torch.Tensor, target: torch.Tensor, path: str | Path):
    """C probabilities per label (k·N values for N labels, k ≥ 2) become [N, C] with
    integer class ids; equal counts stay binary pairs.

    Example:
        >>> import torch
        >>> as_multiclass(torch.tensor([0.2, 0.8, 0.6, 0.4]), torch.tensor([1.0, 0.0]), "f")
        (tensor([[0.2000, 0.8000],
                [0.6000, 0.4000]]), tensor([1, 0]))
    """
    n, total = target.numel(), probs.numel()
    if total == n or n == 0 or total % n:
        return probs, target
    if not bool((target == target.round()).all()):
        raise ValueError(f"{path}: {total // n} probabilities per label need integer class ids")
    return probs.reshape(n, total // n), target.to(torch.long)


def read_labels(path: str | Path, column: str, kept: Tensor | None = None) -> list[str]:
    """Each row's value in ``column`` as text: the label (query type, class name) of a pair.
    With ``kept`` (:attr:`Predictions.kept`), a column of one value per label in the file
    gives the kept labels' values, and one of a value per kept label is taken as it is (as
    :func:`read_table` takes group ids); a column of another length is returned whole, for
    the caller to refuse with its count.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "pairs.csv")
        >>> _ = open(file, "w").write("prob,label,tag\\n0.9,1,NN\\n0.2,0,VB\\n")
        >>> read_labels(file, "tag")
        ['NN', 'VB']
    """
    path = Path(path)
    table = _named_columns(_load(path), path)
    if table is None:
        raise ValueError(f"{path}: an unnamed array has no label column {column!r}")
    if column not in table:
        raise ValueError(f"{path}: no column {column!r} (columns: {', '.join(table)})")
    values = _column(table, column, path)
    # A list (JSON) stays objects: numpy would make [1, 0.5]'s 1 a '1.0' and null 'None'.
    values = np.asarray(values, dtype=object if isinstance(values, list) else None).reshape(-1)
    if kept is not None and values.shape[0] == kept.shape[0]:
        values = values[kept.numpy()]
    return [_as_text(v) for v in values.tolist()]


def _as_text(value: Any) -> str:
    """A label as text: a missing value (JSON null) is empty, a whole float its integer,
    bytes (a numpy ``S`` array's) decoded (they had printed as ``b'DET'``).

    Example:
        >>> [_as_text(v) for v in (None, 2.0, 0.5, "NN", True, b"DET")]
        ['', '2', '0.5', 'NN', 'True', 'DET']
    """
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def file_row(kept: Tensor | None, index: int) -> int:
    """The file's data row of label ``index`` of a :class:`Predictions` with ``kept``.

    Example:
        >>> import torch
        >>> file_row(torch.tensor([False, True, False, True]), 1), file_row(None, 1)
        (3, 1)
    """
    return index if kept is None else int(kept.nonzero()[index])


def row_position(path: str | Path, row: int) -> str:
    """Where data row ``row`` (0-based) of ``path`` is, as the value errors name it:
    ``line N`` in a text file (its header and skipped lines counted), ``row index N`` in
    an array file. For messages only: it reads the file again.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "pairs.jsonl")
        >>> _ = open(file, "w").write('{"p": 0.9, "y": 1}\\n\\n{"p": 0.2, "y": 0}\\n')
        >>> row_position(file, 1)
        'line 3'
    """
    return _row_of(getattr(_load(Path(path)), "lines", None), row)


def row_positions(
    paths: Sequence[str | Path], row: int, kept: Sequence[Tensor | None] | None = None
) -> str:
    """Where data row ``row`` is in each of two files (:func:`row_position`): one place when
    both have it there (``line 9 of both files``), else each file's. With ``kept`` (each
    file's :attr:`Predictions.kept`), ``row`` counts the labels kept, not the data rows.

    Example:
        >>> import tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> a, b = os.path.join(folder, "a.csv"), os.path.join(folder, "b.npy")
        >>> _ = open(a, "w").write("p,y\\n0.9,1\\n0.2,0\\n")
        >>> np.save(b, np.array([[0.8, 1.0], [0.3, 1.0]]))
        >>> row_positions([a, a], 1)
        'line 3 of both files'
        >>> row_positions([a, b], 1).replace(folder + os.sep, "")
        'line 3 of a.csv, row index 1 of b.npy'
    """
    kept = [None] * len(paths) if kept is None else kept
    where = [row_position(path, file_row(mask, row)) for path, mask in zip(paths, kept)]
    if len(set(where)) == 1:
        return f"{where[0]} of both files"
    return ", ".join(f"{place} of {path}" for place, path in zip(where, paths))


def group_column(path: str | Path, wanted: str) -> str | None:
    """The name of the file's group-id column, or None when it has none: ``wanted``
    if the file has that column, or, with ``wanted=""``, the usual name it has
    (``sentence_id``, ``doc_id``, ``group``, ...; see :func:`read_table`); two are refused
    as :func:`read_table` refuses them (``compare --groups`` had taken the first).

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "tokens.csv")
        >>> _ = open(file, "w").write("prob,label,sentence\\n0.9,1,s2\\n")
        >>> group_column(file, ""), group_column(file, "doc")
        ('sentence', None)
    """
    path = Path(path)
    table = _named_columns(_load(path), path)
    if table is None:
        return None
    if wanted:
        return wanted if wanted in table else None
    found = _usual_names(list(table), GROUP_NAMES)
    return _only(found, "group ids", path) if found else None


def has_column(path: str | Path, column: str) -> bool:
    """Whether the file has a column named ``column``.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "tokens.csv")
        >>> _ = open(file, "w").write("prob,label,tag\\n0.9,1,NN\\n")
        >>> has_column(file, "tag"), has_column(file, "doc")
        (True, False)
    """
    path = Path(path)
    table = _named_columns(_load(path), path)
    return table is not None and column in table


def check_output_path(path: Path | None, option: str, inputs: Sequence[Path | None] = ()) -> None:
    """Refuse, before any work, an output path that is a folder, whose folder is missing,
    or that is one of the command's ``inputs`` (writing it would destroy what was read).

    Example:
        >>> check_output_path(Path("/no/such/folder/report.html"), "--html")
        Traceback (most recent call last):
        ValueError: --html /no/such/folder/report.html: /no/such/folder does not exist
    """
    if path is None:
        return
    if path.is_dir():
        raise ValueError(f"{option} {path}: is a folder; give a file name in it")
    for given in inputs:
        if given is not None and _same_file(path, given):
            raise ValueError(
                f"{option} {path}: is the input file {given}; writing it would overwrite "
                "what the command reads: give another file name"
            )
    folder = path.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"{option} {path}: {folder} {what}")
    _check_writable(path, option)


def _check_writable(path: Path, option: str) -> None:
    """Open ``path`` for appending (nothing written; a file made here is removed), so
    that a place the command cannot write (a read-only or virtual file system, an
    immutable file) is refused before the work rather than after it."""
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as err:
        raise _unwritable(path, option, err) from None
    if not existed:
        path.unlink(missing_ok=True)


def check_writable_folder(path: Path, option: str) -> None:
    """Refuse, before any work, an output folder the command cannot write into: a file
    is made there and removed at once (in the nearest existing folder above, for a folder
    still to be made). A path with a file in the way is left to the caller's own check.

    Example:
        >>> check_writable_folder(Path("/proc/out"), "--out")
        Traceback (most recent call last):
        ValueError: --out /proc/out: cannot be written (...)
    """
    # An existing read-only folder had been found only by the first figure, after the
    # whole run (ner: 24 s; demo: minutes).
    nearest = next(p for p in (path.absolute(), *path.absolute().parents) if p.exists())
    if not nearest.is_dir():
        return
    try:
        with tempfile.TemporaryFile(dir=nearest):
            pass
    except OSError as err:
        raise _unwritable(path, option, err) from None


def _unwritable(path: Path, option: str, err: OSError) -> ValueError:
    return ValueError(f"{option} {path}: cannot be written ({err.strerror})")


def check_output_paths(
    outputs: Mapping[str, Path | None], inputs: Sequence[Path | None] = ()
) -> None:
    """Refuse, before any work, each output path as :func:`check_output_path` does, two
    options that name one file (the later write would destroy the earlier), and a
    ``--plot`` figure that matplotlib cannot write (:func:`check_figure_path`).

    Example:
        >>> check_output_paths({"--out": Path("same.png"), "--plot": Path("same.png")})
        Traceback (most recent call last):
        ValueError: --out and --plot name one file, same.png: give each its own
    """
    given = {option: path for option, path in outputs.items() if path is not None}
    for option, path in given.items():
        check_output_path(path, option, inputs)
    options = list(given)
    for i, first in enumerate(options):
        for second in options[i + 1 :]:
            if _same_file(given[first], given[second]):
                raise ValueError(
                    f"{first} and {second} name one file, {given[first]}: give each its own"
                )
    if "--plot" in given:
        check_figure_path(given["--plot"], "--plot")


def check_figure_path(path: Path, option: str) -> None:
    """Refuse a figure file whose suffix names no format matplotlib writes (or none: it
    would add ``.png`` to the name, and the file would not be where the command says).

    Example:
        >>> check_figure_path(Path("diagram.txt"), "--plot")
        Traceback (most recent call last):
        ValueError: --plot diagram.txt: matplotlib writes no '.txt' figures; use .png, .pdf or .svg
    """
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = path.suffix.lower().lstrip(".")
    if suffix not in FigureCanvasBase.get_supported_filetypes():
        what = f"writes no '.{suffix}' figures" if suffix else "needs a suffix to choose a format"
        raise ValueError(f"{option} {path}: matplotlib {what}; use .png, .pdf or .svg")


def _same_file(path: Path, other: Path) -> bool:
    """Whether two paths name one file (an existing one by inode, else by resolved path)."""
    if path.exists() and other.exists():
        return path.samefile(other)
    return path.resolve() == other.resolve()


def to_jsonable(value: Any) -> Any:
    """Turn tensors, paths, dataclasses and nested containers into JSON values.

    Non-finite floats become ``None`` (JSON has no NaN).

    Example:
        >>> to_jsonable({"a": torch.tensor(0.5), "b": [torch.tensor([1, 2])], "c": float("nan")})
        {'a': 0.5, 'b': [[1, 2]], 'c': None}
        >>> to_jsonable(torch.tensor([0.5, float("nan"), float("inf")]))
        [0.5, None, None]
    """
    if isinstance(value, torch.Tensor):
        return to_jsonable(value.detach().cpu().tolist())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "_asdict"):
        return to_jsonable(value._asdict())
    if hasattr(value, "__dataclass_fields__"):
        return to_jsonable({k: getattr(value, k) for k in value.__dataclass_fields__})
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
