"""Ids of any kind, numbers or strings: group ids (sentence or document ids for the group
bootstrap) numbered 0..G-1 in the order the Python API numbers them, and ids as text
(:func:`id_texts`: labels, item ids), each as written but for a whole number written with
zero decimals (``5.0`` is ``5``, in a CSV or a JSON file alike); a missing id (NaN, an
empty cell, JSON null) is refused, not made an id of its own.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from calib_metrics.predictions._values import _row_of


def _to_ids(
    values: Any,
    path: Path,
    column: str,
    lines: list[int] | None = None,
    shape: tuple[int, ...] | None = None,
) -> Tensor:
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
    try:
        array = np.asarray(values).reshape(-1)
    except ValueError:  # lists nested otherwise than the labels: numpy's message, no file
        raise ValueError(
            f"{path}: column {column!r} holds lists not laid out as the labels: give one "
            "group id per label, nested as the labels are"
        ) from None
    _check_no_missing_id(values, path, column, lines, shape)
    if array.dtype.kind not in "iubf":
        text = array.astype(str)
        whole = _all_whole_numbers(text)  # the usual ids: numbered at once
        if whole is not None:
            return torch.from_numpy(np.unique(whole, return_inverse=True)[1].astype(np.int64))
        # Each distinct text is read once: a column of 10⁶ ids holds far fewer.
        texts, inverse = np.unique(text, return_inverse=True)
        read = _each_id_by_itself(texts)
        # Texts that hold no number are numbered as they are sorted already.
        numbers = (
            np.arange(len(texts)) if read is texts else np.unique(read, return_inverse=True)[1]
        )
        return torch.from_numpy(numbers[inverse.reshape(-1)].astype(np.int64))
    return torch.from_numpy(np.unique(array, return_inverse=True)[1].reshape(-1).astype(np.int64))


def _all_whole_numbers(text: np.ndarray) -> np.ndarray | None:
    """Ids read as text that are all whole numbers, as numbers (integers, or whole floats
    below 2⁵³: one cast each, not a ``float()`` an id); None otherwise. Numbered in
    numeric order, as the Python API numbers an integer tensor (in text order "10" came
    before "2", and the group bootstrap's draws, which follow the groups' order, differed
    from the API's), one group per whole number ("5" and "5.0" had made two groups, "1"
    and "01" one).

    Example:
        >>> _all_whole_numbers(np.array(["10", "2", " 3"])).tolist()
        [10, 2, 3]
        >>> _all_whole_numbers(np.array(["5", "5.0", "7"])).tolist()
        [5.0, 5.0, 7.0]
        >>> print(_all_whole_numbers(np.array(["1", "1.1"])))
        None
    """
    stripped = np.char.strip(text)
    try:
        return stripped.astype(np.int64)
    except (ValueError, OverflowError):  # not all integers (or too large)
        pass
    try:
        numbers = stripped.astype(np.float64)
    except ValueError:  # some text
        return None
    finite = np.isfinite(numbers).all() and np.abs(numbers).max() < 2**53
    return numbers if finite and (numbers == np.floor(numbers)).all() else None


def _each_id_by_itself(text: np.ndarray) -> np.ndarray:
    """Ids not all whole numbers (:func:`_all_whole_numbers` None): ids with a fraction
    stay text ("1.1" and "1.10" are two), and among them, or other text, each whole
    number is still its integer, each id judged by itself ("1" and "1.0" had been two
    groups where one id of the column had a fraction, one where none had); ``text``
    itself where none is a whole number.

    Example:
        >>> _each_id_by_itself(np.array(["1.1", "1.10", "1.2"])).tolist()
        ['1.1', '1.10', '1.2']
        >>> _each_id_by_itself(np.array(["1", "1.0", "1.1", "s2", "-0.00"])).tolist()
        ['1', '1', '1.1', 's2', '0']
        >>> _each_id_by_itself(np.array(["s10", "s2"])).tolist()
        ['s10', 's2']
        >>> _each_id_by_itself(np.array(["1", "--2"])).tolist()
        ['1', '--2']
    """
    numbers = _whole_numbers(text)
    if None not in numbers:
        return np.array(numbers, dtype=np.float64)
    if all(n is None for n in numbers):
        return text  # as given: the caller's ids stay numbered as they are
    wholes = [t if n is None else str(int(n)) for t, n in zip(text.tolist(), numbers)]
    return np.array(wholes, dtype=str)


def _whole_numbers(text: np.ndarray) -> list[float | None]:
    """:func:`_whole_number` of every id: at once where all are numbers (ids of a
    fraction, ``12.3``), else looked at only where the id starts as a number may (a
    sign, a point, any digit ``float`` reads, a blank): a column of a million text ids
    had taken twice the time to read, each id through ``float``.

    Example:
        >>> _whole_numbers(np.array(["12.0", "12.3"])), _whole_numbers(np.array(["٣", "s"]))
        ([12.0, None], [3.0, None])
    """
    try:
        values = np.char.strip(text).astype(np.float64)
    except ValueError:  # some text: each id by itself, below
        pass
    else:
        whole = np.isfinite(values) & (values == np.floor(values)) & (np.abs(values) < 2**53)
        return [v if w else None for v, w in zip(values.tolist(), whole.tolist())]
    # The first character: np.char.lstrip alone had taken longer than the ids' float().
    leading = text.astype("<U1")
    starts = np.isin(leading, list("+-.")) | np.char.isdecimal(leading)
    maybe = np.flatnonzero(starts | np.char.isspace(leading))
    numbers: list[float | None] = [None] * len(text)
    texts = text.tolist()
    for i in maybe.tolist():
        numbers[i] = _whole_number(texts[i])
    return numbers


def _whole_number(text: str) -> float | None:
    """The number a text id writes if it is a whole one, else None. Only whole numbers:
    "1.1" and "1.10" are two sentences of document 1 (or two months), not one number;
    past 2⁵³ two integers can share a float.

    Example:
        >>> [_whole_number(t) for t in ("5.0", " 05", "1e3", "1.1", "inf", "s2", "2e16")]
        [5.0, 5.0, 1000.0, None, None, None, None]
    """
    try:
        number = float(text)
    except ValueError:
        return None
    whole = math.isfinite(number) and number.is_integer() and abs(number) < 2**53
    return number if whole else None


def _check_no_missing_id(values: Any, path: Path, column: str, lines, shape=None) -> None:
    """ValueError naming the first group id that is missing (:func:`missing_id`), by its
    line, or its index in labels of ``shape``."""
    missing = missing_id(values, path)
    if missing is not None:
        # Labels' index only for ids laid out as the labels: [B] ids beside [B, T] labels
        # are named by their own row.
        count = np.asarray(values, dtype=object).size
        laid_out = shape is not None and count == math.prod(shape)
        where = _row_of(lines, missing[0], shape=shape if laid_out else None)
        raise ValueError(
            f"{path}: {where}, column {column!r} has a missing group id ({missing[1]})"
        )


def missing_id(values: Any, path: Path) -> tuple[int, str] | None:
    """The index of the first id that is missing and how it is written (``null``, ``an
    empty cell``, ``NaN``), or None: blank text, None (JSON null) or NaN, a float's or a
    text cell's (a CSV's ``NaN``, as a probability cell reads it, had been a group of its
    own). A JSON file's values are each judged as itself: numpy makes a list of strings
    and numbers text, where a NaN number (a missing id) had read as an id and a string
    "nan" (an id) as a missing one.

    Example:
        >>> missing_id(["s1", " ", "s2"], Path("f.csv")), missing_id(["nan", 3], Path("f.json"))
        ((1, 'an empty cell'), None)
    """
    array = _judged(values, path)
    i = _first_missing(array)
    return None if i is None else (i, str(_missing_id(array[i : i + 1].tolist()[0])))


def _judged(values: Any, path: Path) -> np.ndarray:
    """Ids as the array :func:`_first_missing` judges: a JSON file's values as objects, a
    text file's cells or an array's values as numpy reads them."""
    if isinstance(values, (list, tuple)) and path.suffix.lower() not in (".csv", ".tsv"):
        return np.array(values, dtype=object).reshape(-1)
    return np.asarray(values).reshape(-1)


def _first_missing(array: np.ndarray) -> int | None:
    """The index of the first missing id of :func:`missing_id`'s ``array``, or None."""
    if array.dtype.kind == "S":
        # Bytes are judged each as itself, as they were before text ids were decoded here:
        # b"nan" among numbers stays a group id.
        array = array.astype(object)
    if array.dtype.kind == "f":
        missing = np.isnan(array)
    elif array.dtype.kind == "U":
        text = np.char.lower(np.char.strip(array))
        blank, nan = text == "", np.isin(text, _NAN_TEXT)
        # A written NaN is a number's only among numbers: "nan" (Min Nan's ISO 639-3
        # code) or "Nan" (a name) among text ids is an id like the others.
        missing = blank | (nan & (bool(nan.any()) and _all_numbers(text[~(blank | nan)])))
    elif array.dtype.kind == "O":  # JSON values: a string is an id, whatever it spells
        gone = ("null", "an empty cell")
        missing = np.array([_missing_id(v) in gone or _is_nan(v) for v in array.tolist()])
    else:  # integers and booleans are never missing
        return None
    return int(np.flatnonzero(missing)[0]) if missing.any() else None


def id_texts(values: Any) -> list[str]:
    """Ids (labels, item ids) as text, each as the file writes it, except what is
    clearly one number written another way: a text ``1.0`` or ``-2.00`` (:data:`_WHOLE`)
    is ``1`` or ``-2``, as a JSON or array float of a whole value is, so that a CSV's and
    a JSON file's labels agree. Every other text is kept (``01``, ``-0``, ``1e3`` stay
    apart), each id judged by itself, whatever the rest of the column holds; bytes are
    decoded, JSON null is empty.

    Example:
        >>> id_texts(["1.0", "2", "-2.00", "01", "-0", "1e3"]), id_texts([1.0, 2.5, None, "NN"])
        (['1', '2', '-2', '01', '-0', '1e3'], ['1', '2.5', '', 'NN'])
        >>> id_texts(np.array(["1.1", "1.10"])), id_texts(np.array([b"DET", b"NN"]))
        (['1.1', '1.10'], ['DET', 'NN'])
        >>> id_texts(np.array([3.0, 0.5])), id_texts(np.array(["1.0", "x", None], dtype=object))
        (['3', '0.5'], ['1', 'x', ''])
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        return values.reshape(-1).astype(str).tolist()  # one numpy step for a million ids
    if isinstance(values, np.ndarray) and values.dtype.kind in "SU":
        text = values.reshape(-1)
        if text.dtype.kind == "S":
            text = np.char.decode(text, "utf-8", errors="replace")
        # Only texts with a dot may be whole numbers written with decimals.
        dotted = np.flatnonzero(np.char.find(text, ".") >= 0)
        texts = text.tolist()
        for i in dotted.tolist():
            texts[i] = _as_text(texts[i])
        return texts
    flat = values.reshape(-1).tolist() if isinstance(values, np.ndarray) else values
    return [_as_text(v) for v in flat]


# A whole number written with decimals, all of them zeros: "1.0", "-2.00".
_WHOLE = re.compile(r"(-?\d+)\.0+")


def _as_text(value: Any, fold: bool = True) -> str:
    """An id as text (:func:`id_texts`): a missing value (JSON null) is empty, a whole
    float its integer, bytes (a numpy ``S`` array's) decoded (they had printed as
    ``b'DET'``), a text of :data:`_WHOLE` its integer (unless not ``fold``: a group id
    written back as the file wrote it), any other text as it is.

    Example:
        >>> [_as_text(v) for v in (None, 2.0, 0.5, "NN", True, b"DET", "3.00", "1e3")]
        ['', '2', '0.5', 'NN', 'True', 'DET', '3', '1e3']
    """
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        whole = _WHOLE.fullmatch(value) if fold else None
        return value if whole is None else whole[1]
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


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
