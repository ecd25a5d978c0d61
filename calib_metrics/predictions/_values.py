"""Columns' values as float64 tensors, checked: probabilities in [0, 1], labels 0/1 (or
``True``/``False``) or class ids, and arrays of several dimensions that line up as the
Python API's inputs do. A bad value is named with its row (:func:`_row_of`: its line in a
text file, its index in an array file) and as the file writes it.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from calib_metrics.predictions._columns import Column
from calib_metrics.predictions._text import (
    STRAY_QUOTE,
    _CellNumbers,
    _OverFloat,
    python_only_numbers,
)


def _row_of(
    lines: list[int] | None, index: int, per_row: int = 1, shape: tuple[int, ...] | None = None
) -> str:
    """Where value ``index`` of a column (``per_row`` values per row) is in the file: its
    line in a text file, else its row index, or its index in labels of ``shape`` with
    several dimensions (an array of sequences' "row index 29" had meant [2, 5]).

    Example:
        >>> _row_of([2, 3, 5], 2), _row_of(None, 7, per_row=3), _row_of(None, 29, shape=(5, 12))
        ('line 5', 'row index 2', 'index [2, 5]')
    """
    row = index // per_row
    if lines is not None:
        return f"line {lines[row]}"
    if shape is not None and len(shape) > 1 and row < math.prod(shape):
        return f"index [{', '.join(str(int(i)) for i in np.unravel_index(row, shape))}]"
    return f"row index {row}"


def _kept_row_of(lines: list[int] | None, keep: Any, row: int, shape: tuple | None = None) -> str:
    """Where kept label ``row`` is in the file: ``lines`` are the kept labels' lines (a
    text file's); an array file's index (in labels of ``shape``) counts the padding rows
    before it too, which --ignore-index had left out ("row index 2" for the value at 3).

    Example:
        >>> import torch
        >>> _kept_row_of(None, torch.tensor([True, False, True, True]), 2)
        'row index 3'
    """
    if lines is not None:
        return _row_of(lines, row)
    return _row_of(None, file_row(keep, row), shape=shape)


def _to_float(
    values: Any,
    path: Path,
    column: str,
    lines: list[int] | None = None,
    labels: tuple[int, ...] | None = None,
    ragged_hint: str = "",
    of_labels: bool = False,
) -> Tensor:
    """``values`` as a flat float64 tensor; a cell that is no number is named by its row
    (``lines``: each row's line in a text file; ``labels``: an array file's labels'
    shape, whose index names its rows); ``ragged_hint`` ends the message for rows of
    unequal lengths; ``of_labels``: the column holds labels, so a list in a cell is
    read as a one-hot label, not a row's probabilities."""
    if isinstance(values, np.ndarray) and np.iscomplexobj(values):
        raise ValueError(f"{path}: column {column!r} holds complex numbers, not real ones")
    if isinstance(values, np.ndarray) and values.dtype.kind in "mM":
        # numpy reads them as counts of their unit: 0 and 1 seconds were probabilities.
        raise ValueError(
            f"{path}: column {column!r} holds dates or durations ({values.dtype}), not numbers"
        )
    _refuse_python_only_numbers(values, path, column, lines, labels)
    try:
        array = np.asarray(values, dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        raise _not_a_number(values, path, column, lines, labels, ragged_hint, of_labels) from None
    return torch.from_numpy(array.reshape(-1).copy())


def _refuse_python_only_numbers(
    values: Any, path: Path, column: str, lines: list[int] | None, labels: tuple | None
) -> None:
    """Refuse the first cell, in row order, that only Python reads as a number
    (:func:`python_only_numbers`: ``float()`` takes it, files do not write it so). A cell
    before it that is no number at all is left to the usual message, which names it."""
    if isinstance(values, np.ndarray) and values.dtype.kind not in "OUS":
        return
    cells = np.asarray(values, dtype=object)
    flat = [_as_text(v) for v in cells.reshape(-1).tolist()]
    texts = [v for v in flat if isinstance(v, str)]
    if not texts or not python_only_numbers(texts):
        return
    per_row = _values_per_row(cells, lines, labels)
    for i, value in enumerate(flat):
        if not isinstance(value, str):
            continue
        try:
            float(value)
        except (TypeError, ValueError, OverflowError):
            return  # not a number at all: the usual message comes first
        if python_only_numbers([value]):
            raise ValueError(
                f"{path}: {_row_of(lines, i, per_row, labels)}, column {column!r} holds {value!r}, "
                "not a number as files write them (an underscore, or a character outside ASCII)"
            )


def _values_per_row(cells: np.ndarray, lines: list[int] | None, labels: tuple | None) -> int:
    """How many of these cells a row holds, so that flat index i is in row i // that: a
    text file's line (``lines``, one per row: a JSON line may hold a list of labels), an
    array file's label (``labels``: their shape; for the labels themselves, None: one
    each). An [N, C] array's bad cell had been named by its flat index, and then a [B, T]
    one by its sequence where the value checks name its label.

    Example:
        >>> _values_per_row(np.zeros((4, 3)), None, (4,))
        3
        >>> _values_per_row(np.zeros((2, 3)), None, (2, 3))
        1
        >>> _values_per_row(np.zeros((2, 3), dtype=object), [1, 2], None)  # lists of 3 a line
        3
    """
    rows = len(lines) if lines is not None else (math.prod(labels) if labels else None)
    if not rows or cells.size % rows:
        return 1
    return cells.size // rows


def _as_text(value: Any) -> Any:
    """A bytes cell (an array of ``S`` dtype) as the text numpy reads it as; else as it is."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _not_a_number(
    values: Any,
    path: Path,
    column: str,
    lines: list[int] | None,
    labels: tuple | None,
    ragged_hint: str = "",
    of_labels: bool = False,
) -> ValueError:
    """The error for a column that numpy cannot read as floats: its first bad value, or
    the first row whose number of values differs from the first row's."""
    cells = np.asarray(values, dtype=object)
    flat = cells.reshape(-1)
    ragged = _ragged_rows(flat.tolist(), path, column, lines, ragged_hint)
    if ragged is not None:
        return ragged
    per_row = _values_per_row(cells, lines, labels)
    for i, value in enumerate(flat.tolist()):
        try:
            float(value)
        except OverflowError:
            where = _row_of(lines, i, per_row, labels)
            return ValueError(
                f"{path}: {where}, column {column!r} holds a number too large for a float"
            )
        except (TypeError, ValueError):
            if isinstance(value, str) and not value.strip():
                return ValueError(
                    f"{path}: {_row_of(lines, i, per_row, labels)}, column {column!r} is missing a "
                    "value (an empty cell)"
                )
            over_lines = _over_lines(value, path, column, lines, i // per_row)
            if over_lines is not None:
                return over_lines
            where = f"{path}: {_row_of(lines, i, per_row, labels)}, column {column!r}"
            listed = _listed_numbers(value, path, of_labels)
            if listed is not None:
                return ValueError(f"{where} holds {listed}")
            hint = ""
            if isinstance(value, str) and "," in value:
                hint = "; decimal commas are not read: write 0.9, not 0,9"
            shown = repr(value if len(str(value)) <= 40 else str(value)[:37] + "...")
            return ValueError(f"{where} holds a non-numeric value {shown}{hint}")
    return ValueError(f"{path}: column {column!r} holds a non-numeric value")


# The layouts that hold C probabilities per row (README, "Command line").
MULTICLASS_LAYOUTS = (
    "C probabilities per row go in an [N, C] array (.npy, .npz, .pt) or a JSON list per "
    "row (.json, .jsonl), beside one class id per row"
)


def _listed_numbers(value: Any, path: Path, of_labels: bool = False) -> str | None:
    """What to say of a text cell that is a bracketed list of numbers, ``[0.7, 0.2, 0.1]``:
    a row's class probabilities, or in a label column (``of_labels``) a one-hot label,
    which a text cell cannot hold (its commas had drawn the hint at decimal commas); None
    for any other value.

    Example:
        >>> print(_listed_numbers("[0.7, 0.2, 0.1]", Path("p.csv")))
        ... # doctest: +ELLIPSIS
        a list of 3 numbers '[0.7, 0.2, 0.1]', as a row's class probabilities are written; ...
        >>> print(_listed_numbers("[0, 1, 0]", Path("p.csv"), of_labels=True))
        ... # doctest: +ELLIPSIS
        a list of 3 numbers '[0, 1, 0]', class 1's one-hot label: write its class id, 1; ...
        >>> _listed_numbers("0,7", Path("p.csv")) is None
        True
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) < 2 or (text[0], text[-1]) not in (("[", "]"), ("(", ")")):
        return None
    items = text[1:-1].replace(",", " ").split()
    try:
        numbers = [float(item) for item in items]
    except ValueError:
        return None
    if not items:
        return None
    shown = repr(text if len(text) <= 40 else text[:37] + "...")
    said = f"a list of {len(items)} number{'s' * (len(items) > 1)} {shown}"
    if path.suffix.lower() in (".json", ".jsonl", ".ndjson"):
        # The list is there, but quoted: JSON reads it as one string.
        return f"{said}, written as text: write it as a JSON list, without quotes"
    if of_labels:
        return f"{said}, {_one_hot_advice(numbers)}; {MULTICLASS_LAYOUTS}"
    return (
        f"{said}, as a row's class probabilities are written; a text cell holds one "
        f"number: {MULTICLASS_LAYOUTS}"
    )


def _one_hot_advice(numbers: list[float]) -> str:
    """What a label cell's list is, and the one number to write instead.

    Example:
        >>> _one_hot_advice([0.0, 0.0, 1.0])
        "class 2's one-hot label: write its class id, 2"
        >>> _one_hot_advice([0.5, 0.5])
        'a label cell holds one number: 0/1, or a class id 0..C-1'
    """
    if set(numbers) <= {0.0, 1.0} and numbers.count(1.0) == 1:
        k = numbers.index(1.0)
        return f"class {k}'s one-hot label: write its class id, {k}"
    return "a label cell holds one number: 0/1, or a class id 0..C-1"


def _over_lines(
    value: Any, path: Path, column: str, lines: list[int] | None, row: int
) -> ValueError | None:
    """The error for a CSV/TSV cell over several lines where a number is read: a stray
    quote that a later one closes, the rows between read as one cell (it had been named at
    the line it ends on, with a hint at decimal commas for the commas of those rows).

    Example:
        >>> print(_over_lines("0.5,1\\n0.3,0\\n0.4", Path("f.csv"), "prob", [2, 3], 1))
        ... # doctest: +ELLIPSIS
        f.csv: the record from line 3: its quoted field (column 'prob') runs over 3 lines (15 ...
    """
    if not isinstance(value, str) or lines is None or path.suffix.lower() not in (".csv", ".tsv"):
        return None
    breaks = value.count("\n") + value.count("\r") - value.count("\r\n")
    if not breaks:
        return None
    # The row's line is where its record starts: this cell starts there or, after another
    # cell over lines, later (its own lines had been counted from the record's first).
    return ValueError(
        f"{path}: the record from line {lines[row]}: its quoted field (column {column!r}) "
        f"runs over {breaks + 1:,} lines ({len(value):,} characters): {STRAY_QUOTE}"
    )


# For labels of unequal lengths: JSON lines of sentences, unpadded.
PAD_HINT = (
    " (sentences of other lengths: pad each line's lists to the longest, the labels with "
    "-100 and their probabilities with null, a row of C nulls for rows of C classes, and "
    "pass --ignore-index -100)"
)


def _ragged_rows(
    rows: list[Any], path: Path, column: str, lines: list[int] | None, hint: str = ""
) -> ValueError | None:
    """The error for rows of lists (a JSON file's class probabilities, a line's labels)
    of unequal lengths, ``hint`` at its end; ``rows`` may be a line's several (rows of
    class probabilities, a line's list of them: a line holds ``len(rows) // len(lines)``)."""
    sizes = [len(v) if isinstance(v, (list, tuple)) else 1 for v in rows]
    if not any(isinstance(v, (list, tuple)) for v in rows):
        return None
    i = next((k for k, size in enumerate(sizes) if size != sizes[0]), None)
    if i is None:
        return None
    per_line = len(rows) // len(lines) if lines and len(rows) % len(lines) == 0 else 1
    values = f"{sizes[i]} value{'s' if sizes[i] != 1 else ''}"
    # A line of several rows (a sentence's rows of class probabilities): rows, not lines.
    held, first = ("a row of ", "the first row") if per_line > 1 else ("", _row_of(lines, 0))
    where = _row_of(lines, i, per_line)
    if per_line > 1:
        where += f" (its row {i % per_line + 1})"
    if rows[i] is None and sizes[0] > 1:  # a padding token's probabilities as one null
        nulls = ", ".join(["null"] * min(sizes[0], 3)) + ", ..." * (sizes[0] > 3)
        return ValueError(
            f"{path}: {where}, column {column!r} holds a single null where {first} holds "
            f"{sizes[0]} values: a padding row (its label the ignore index) holds "
            f"{sizes[0]} nulls ([{nulls}]), any other row {sizes[0]} probabilities"
        )
    return ValueError(
        f"{path}: {where}, column {column!r} holds {held}{values} "
        f"where {first} holds {sizes[0]}: every row needs the same number of values{hint}"
    )


_BOOLEANS = {"true": 1.0, "false": 0.0}


def _to_labels(
    values: Any,
    path: Path,
    column: str,
    lines: list[int] | None = None,
    shape: tuple[int, ...] | None = None,
) -> Tensor:
    """Labels as floats; ``True``/``False`` (any case, or JSON booleans) are 1 and 0,
    wherever they are in the column (a column whose first label was ``0`` had refused a
    later ``True`` as non-numeric).

    Example:
        >>> _to_labels(["0", "True", " false", "1"], Path("f.csv"), "label").tolist()
        [0.0, 1.0, 0.0, 1.0]
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiu":
        return _to_float(values, path, column, lines, shape, of_labels=True)  # no words
    array = np.asarray(values, dtype=object).reshape(-1)
    words = [_BOOLEANS.get(v.strip().lower(), v) if isinstance(v, str) else v for v in array]
    try:
        return _to_float(words, path, column, lines, shape, PAD_HINT, of_labels=True)
    except ValueError as err:
        if "holds a non-numeric value" not in str(err):
            raise
        # A label column of words ('pos', 'neg') had been told only that it is no number.
        raise ValueError(
            f"{err}; labels are 0/1 (or True/False), or class ids 0..C-1 beside C "
            "probabilities per row"
        ) from None


def _check_values(
    q: Tensor, y: Tensor, path: Path, columns: tuple[Column, Column], lines, keep=None
) -> None:
    """Probabilities in [0, 1]; labels 0/1, or class ids in [0, C) when there are C
    probabilities per label (a multiclass array file). The first bad value is named with
    its row and column, as the file writes it (``columns``: the values read; ``keep``:
    the labels kept, as :attr:`Predictions.kept`); labels first, so that padding (a label
    such as -100 beside probabilities that may hold anything) is named as such."""
    per_row = q.numel() // y.numel() if y.numel() and q.numel() % y.numel() == 0 else 1
    shape = _shape(columns[1][1])
    _check_labels(y, per_row, path, columns[1], lines, keep, columns[0], shape)
    _check_probs(q, per_row, path, columns[0], lines, keep, shape)


def _holds_integers(column: Column) -> bool:
    """Whether an array file's column is of an integer (or bool) dtype."""
    return getattr(getattr(column[1], "dtype", None), "kind", "") in ("i", "u", "b")


def _check_labels(
    y: Tensor, per_row: int, path: Path, column: Column, lines, keep, probs: Column, shape=None
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
    shown = _missing(column[1], file_row(keep, i))
    if not math.isnan(value):
        shown = f"holds {_as_written(column[1], file_row(keep, i), value)}"
    # A negative whole number is likely padding, and the hint is what --ignore-index
    # takes; but the -1 of labels all -1 or +1 is the negative class.
    padding = (
        f" (padding? pass --ignore-index {int(value)})" if value < 0 and value % 1 == 0 else ""
    )
    if per_row == 1 and value == -1 and bool(((y == -1) | (y == 1)).all()):
        padding = " (labels -1/+1? write -1 as 0)"
    integers = (
        f"; column {probs[0]!r} holds integers, not probabilities (class ids or hard "
        "predictions?): give the model's probabilities, [N, C] for C classes"
        if per_row == 1 and not padding and _holds_integers(probs)
        else ""
    )
    raise ValueError(
        f"{path}: {_kept_row_of(lines, keep, i, shape)}, column {column[0]!r} {shown}: a label "
        f"must be {wanted}{padding}{integers}"
    )


def _check_probs(
    q: Tensor, per_row: int, path: Path, column: Column, lines, keep, shape=None
) -> None:
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
    row, item = divmod(i, per_row)
    problem = _missing(column[1], file_row(keep, row), item, per_row)
    if not math.isnan(value):
        written = _as_written(column[1], file_row(keep, row), value, item, per_row)
        problem = f"holds {written}, not a probability in [0, 1] ({hint})"
    where = _kept_row_of(lines, keep, row, shape)
    raise ValueError(f"{path}: {where}, column {column[0]!r} {problem}")


def warn_if_hard(q: Tensor, path: Path, column: str) -> None:
    """A UserWarning (the command's one warning line) when every probability is exactly 0
    or 1: hard predictions (an argmax, a threshold's decisions), in whatever form they come
    (integers or booleans in an array file or JSON, ``0``/``1`` in a CSV), had been scored
    as probabilities without a word (an integer .npy: CalibErr 0.5038).

    Example:
        >>> import torch
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_if_hard(torch.tensor([0.0, 1.0, 1.0]), Path("p.npy"), "column 0")
        >>> print(caught[0].message)
        p.npy: every value of column 'column 0' is 0 or 1: hard predictions, not ...
    """
    if q.numel() and bool(((q == 0) | (q == 1)).all()):
        warnings.warn(
            f"{path}: every value of column {column!r} is 0 or 1: hard predictions, not "
            "probabilities? They are scored as probabilities of 0 and 1; give the model's "
            "probabilities",
            UserWarning,
            stacklevel=2,
        )


def _list_depth(cell: Any) -> int:
    """How deep a JSON cell nests its lists (0 for a value), by its first elements.

    Example:
        >>> _list_depth(0.5), _list_depth([0.2, 0.8]), _list_depth([[0.2, 0.8]]), _list_depth([])
        (0, 1, 2, 1)
    """
    depth = 0
    while isinstance(cell, (list, tuple)):
        depth += 1
        if not cell:
            break
        cell = cell[0]
    return depth


def check_nesting(probs: Column, labels: Column, path: Path, lines: list[int] | None) -> None:
    """Refuse a JSON row whose probabilities nest their lists deeper than its labels allow:
    a number (binary) or a list of C (one per class) beside a label, a list of those beside
    a list of labels (a sentence's). ``[[0.2, 0.8]]`` beside the label 1 had been flattened
    into one item of 2 classes without a word. The first row read stands for all: numpy
    refuses rows nested unlike it."""
    q_values, y_values = probs[1], labels[1]
    if not isinstance(q_values, list) or not isinstance(y_values, list):
        return
    row = next((i for i, cell in enumerate(q_values) if cell is not None), None)
    if row is None or row >= len(y_values):
        return
    depth, label_depth = _list_depth(q_values[row]), _list_depth(y_values[row])
    if depth <= label_depth + 1:
        return
    shown = repr(q_values[row])
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    beside = "a list of labels" if label_depth else "one label"
    raise ValueError(
        f"{path}: {_row_of(lines, row)}, column {probs[0]!r} nests lists {depth} deep "
        f"({shown}) beside {beside} in column {labels[0]!r}: give each label one "
        "probability, or a list of C for C classes"
    )


def _missing(values: Any, row: int, item: int = 0, per_row: int = 1) -> str:
    """The problem of a value read as NaN, value ``item`` of data row ``row`` of a column:
    a JSON null is named as such (it had read "is missing (NaN)"), any other NaN as NaN.

    Example:
        >>> _missing([0.5, None], 1), _missing([[0.5, None]], 0, 1, 2), _missing(["nan"], 0)
        ('is missing (null)', 'is missing (null)', 'is missing (NaN)')
    """
    values = _one_cell_per_label(values, per_row)
    try:
        written = values[row] if isinstance(values, (list, tuple)) else math.nan
        written = written[item] if isinstance(written, (list, tuple)) else written
    except IndexError:  # a layout not foreseen: a NaN it is
        written = math.nan
    return "is missing (null)" if written is None else "is missing (NaN)"


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
            written = _one_cell_per_label(values, per_row)[row]
            written = written[item] if isinstance(written, (list, tuple)) else written
    except (IndexError, TypeError):  # a layout not foreseen: the number read is exact too
        written = value
    if isinstance(written, _OverFloat):  # a JSON number too large for a float
        written = written.written
    if isinstance(written, str):
        text = written.strip()
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(written, (np.floating, np.integer, int)) and not isinstance(written, bool):
        return str(written)
    return repr(float(value))


def _one_cell_per_label(values: Any, per_row: int) -> Any:
    """A JSON column's cells, one per label: a line's list of labels (a sentence's tags),
    or of their probabilities, is spread out, so that label i is cell i (``per_row``: the
    values per label; C of them stay a row). Anything else is as it is.

    Example:
        >>> _one_cell_per_label([[0, 1, 0], [1, 2, 1]], 1)
        [0, 1, 0, 1, 2, 1]
        >>> _one_cell_per_label([[0.2, 0.8], [0.5, 0.5]], 2)
        [[0.2, 0.8], [0.5, 0.5]]
        >>> _one_cell_per_label([[[0.2, 0.8], [0.5, None]]], 2)  # a line of 2 labels' rows
        [[0.2, 0.8], [0.5, None]]
    """
    listed = (list, tuple)

    def one_label(cell: Any) -> bool:  # a value (binary), or a row of C values
        if per_row == 1 or cell is None:
            return not isinstance(cell, listed)
        return isinstance(cell, listed) and not any(isinstance(v, listed) for v in cell)

    while isinstance(values, list) and not all(one_label(v) for v in values):
        spread = [v for cell in values for v in (cell if isinstance(cell, listed) else [cell])]
        if len(spread) == len(values):
            break
        values = spread
    return values


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


def file_row(kept: Tensor | None, index: int) -> int:
    """The file's data row of label ``index`` of a :class:`Predictions` with ``kept``: a
    mask of the labels kept, or the file's labels in the order used (int64).

    Example:
        >>> import torch
        >>> file_row(torch.tensor([False, True, False, True]), 1), file_row(None, 1)
        (3, 1)
        >>> file_row(torch.tensor([4, 0, 2]), 1)
        0
    """
    if kept is None:
        return index
    return int(kept.nonzero()[index]) if kept.dtype == torch.bool else int(kept[index])
