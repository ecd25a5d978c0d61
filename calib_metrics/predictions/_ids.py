"""Group ids (sentence or document ids for the group bootstrap) of any kind, numbers or
strings, numbered 0..G-1 in the order the Python API numbers them; a missing id (NaN, an
empty cell, JSON null) is refused, not made a group of its own.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from calib_metrics.predictions._values import _row_of


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
