"""The reader's entries: :func:`read_table` (probabilities, labels and group ids from
a file, padding rows dropped, every value checked) and the look-ups the commands make
in a file for extra columns and messages (:func:`read_labels`, :func:`row_position`,
:func:`group_column`, :func:`has_column`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from calib_metrics.functional.multiclass import rows_off_one
from calib_metrics.predictions._arrays import _named_columns
from calib_metrics.predictions._columns import (
    GROUP_NAMES,
    _column,
    _from_arrays,
    _only,
    _pick,
    _usual_names,
    no_column,
)
from calib_metrics.predictions._files import _load
from calib_metrics.predictions._ids import _as_text, _to_ids, id_texts, missing_id
from calib_metrics.predictions._values import (
    _check_layout,
    _check_values,
    _one_cell_per_label,
    _row_of,
    _shape,
    _to_float,
    _to_labels,
    check_nesting,
    file_row,
    warn_if_hard,
)


class Predictions(NamedTuple):
    """Probabilities and labels (float64), group ids 0..G-1 (int64) when asked for, and
    which of the file's labels were kept (``kept``, bool, one per label in the file; None
    when no row was dropped as padding; or, once the labels are put in another file's
    order by :func:`~calib_metrics.predictions.paired_by_ids`, the file's label behind
    each, int64), so that other columns of the file and messages line up with the labels
    (:func:`~calib_metrics.predictions.file_row`). ``group_column`` names the column the
    group ids came from (the one found by name, when none was given), None without them;
    ``columns`` the probabilities' and the labels' columns, as read (found by name, when
    none was given; ``"column 0"`` and ``"column 1"`` of an unnamed array)."""

    probs: Tensor
    target: Tensor
    groups: Tensor | None
    kept: Tensor | None = None
    group_column: str | None = None
    columns: tuple[str, str] | None = None


def read_table(
    path: str | Path,
    probs: str | None = None,
    target: str | None = None,
    groups: str | None = None,
    ignore_index: int | None = None,
    taken: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
) -> Predictions:
    """Probabilities, labels and, if ``groups`` is not None, group ids from a file.

    ``groups``: the group column's name, or ``""`` to find it by its usual names
    (``sentence_id``, ``doc_id``, ``group``, ...). Rows whose label is ``ignore_index``
    (padding: their probabilities may hold anything) are dropped first. Columns are
    found by their usual names when not given; several candidates are refused, and so
    are the columns in ``taken`` (column -> its other use, ``{"tag": "named by
    --label"}``). An unnamed [N, 2] array holds the probabilities in column 0 and the
    labels in column 1, and refuses any column name given (but a :class:`SharedName`).
    ``options`` names the options that give this file's columns where they are not
    ``--probs`` and ``--target`` (``{"probabilities": "test-probs", "labels":
    "test-target"}``: recalibrate's test file), for the messages.

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
    q, y, ids = _from_arrays(contents, path, (probs, target, groups), taken, options)
    lines = getattr(contents, "lines", None)  # a CSV's rows are read with its columns
    _check_layout(q, y, ids, path)
    columns = (q, y)
    shape = _shape(y[1])  # the labels' (an array's), by which an array's values are named
    _warn_of_one_column(q, shape, getattr(y[1], "shape", None), path)
    rows = shape or _list_rows(y[1])  # a JSON file's rows of C labels: [N, C] too
    y = _to_labels(y[1], path, y[0], lines, shape)
    check_nesting(q, columns[1], path, lines)
    keep = None if ignore_index is None else y != ignore_index
    labels = shape or (y.numel(),)  # a JSON file's list: its labels in a row
    q = _to_float(_padding_blanked(q[1], _rows_read(y, keep)), path, q[0], lines, labels)
    if q.numel() == 0:
        raise _no_probabilities(columns[0], path, lines)
    if y.numel() == 0 or q.numel() % y.numel():
        raise ValueError(
            f"{path}: {q.numel()} probabilities for {y.numel()} labels (give one per label, "
            "or C per label for a multiclass file)"
        )
    _check_ignore_index(ignore_index, q, y, path)
    _remember_label_layout(path, lines, y.numel(), shape)
    row_lines, every_line = lines, _line_of_each_label(lines, y.numel())
    lines = every_line
    if keep is not None:
        q = q.reshape(y.numel(), -1)[keep].reshape(-1)
        y, lines = y[keep], None if lines is None else [n for n, k in zip(lines, keep) if k]
        if y.numel() == 0:
            raise ValueError(f"{path}: no rows but padding (every label is {ignore_index})")
    _check_values(q, y, path, columns, lines, keep)
    read = (str(columns[0][0]), str(columns[1][0]))
    if ids is None and keep is None:
        y = _one_hot_as_class_ids(q, y, rows, path, read[1])
    warn_if_hard(q, path, read[0])
    if ids is None:
        return Predictions(q, y, None, keep, None, read)
    layout = (row_lines, every_line, shape)
    return Predictions(q, y, _group_ids(ids, path, y, keep, layout), keep, str(ids[0]), read)


def _warn_of_one_column(
    q: tuple[Any, Any], labels: tuple[int, ...] | None, written: Any, path: Path
) -> None:
    """Say how probabilities ``[N, 1]`` beside N labels ``[N]`` (``labels``: their shape
    without trailing 1s; ``written``: as the file has it, where ``[N, 1]`` beside them is
    plainly binary) are read: as binary pairs, each the
    probability that its label is 1. The functions refuse that input (one class is no
    multiclass input), and the command had read it silently: class ids all 0 beside 0.7
    gave CalibErr 0.70, the one-class reading 0.30.

    Example:
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _warn_of_one_column(("probs", np.full((3, 1), 0.7)), (3,), (3,), Path("p.npz"))
        >>> print(caught[0].message)  # doctest: +ELLIPSIS
        p.npz: probs has shape (3, 1) beside 3 labels: read as one probability per label ...
    """
    shape = getattr(q[1], "shape", None)
    if labels is None or shape is None or tuple(shape) != (*labels, 1):
        return
    if written is not None and tuple(written) == tuple(shape):
        return  # labels [N, 1] beside probabilities [N, 1]: binary pairs alike
    warnings.warn(
        f"{path}: {q[0]} has shape {tuple(shape)} beside {math.prod(labels)} labels: read as "
        "one probability per label (binary pairs, each the probability that its label is "
        "1); a multiclass file gives C >= 2 probabilities per label, [N, C] with class ids",
        UserWarning,
        stacklevel=2,
    )


def _one_hot_as_class_ids(
    q: Tensor, y: Tensor, shape: tuple[int, ...] | None, path: Path, column: str
) -> Tensor:
    """An array's (or a JSON file's rows of) one-hot labels ``[N, C]`` beside probability
    rows of that shape that sum to 1, as the class ids of its N items, said in a warning;
    other labels as read.
    Read as N·C independent binary labels (multi-label), they had been resampled pair by
    pair (``compare``: "N = 1500 items" for 500, a narrower interval) and taken as
    independent by Spiegelhalter's test (z √2 times too large with two classes), without
    a word. A single row cannot tell (one multi-label row [0.3, 0.7] with [0, 1] looks
    one-hot), nor can a file of groups or padding, whose ids and rows are per label."""
    if shape is None or len(shape) != 2 or shape[0] < 2 or shape[1] < 2:
        return y
    rows = y.reshape(shape)
    one_hot = ((rows == 0) | (rows == 1)).all() & (rows.sum(-1) == 1).all()
    if q.numel() != y.numel() or not bool(one_hot) or rows_off_one(q.reshape(shape)):
        return y
    _remember_label_layout(path, None, shape[0], None)  # a label is a row now
    warnings.warn(
        f"{path}: column {column!r} holds one-hot rows beside probability rows that sum to "
        f"1: read as the class ids of {shape[0]} items (its argmax), not as "
        f"{y.numel()} independent binary labels (multi-label)",
        UserWarning,
        stacklevel=3,
    )
    return rows.argmax(-1).to(y.dtype)


def _list_rows(values: Any) -> tuple[int, int] | None:
    """``(N, C)`` for a JSON column of N rows that each hold a flat list of C labels, else
    None: JSON rows had been left out of the one-hot reading, which only arrays' shapes
    reached (``[[0, 1, 0], ...]`` was read as 3·N independent labels without a word)."""
    if not isinstance(values, list) or not values or not isinstance(values[0], list):
        return None
    size = len(values[0])
    for row in values:
        if not isinstance(row, list) or len(row) != size or any(isinstance(v, list) for v in row):
            return None
    return len(values), size


def _no_probabilities(column: tuple[str, Any], path: Path, lines: list[int] | None) -> ValueError:
    """The error for a file that gives no probability: rows whose lists are empty (a JSON
    row's ``[]``, which had been told "no rows"), else no rows at all."""
    name, values = column
    if isinstance(values, list) and values:
        return ValueError(
            f"{path}: {_row_of(lines, 0)}, column {name!r} holds 0 values (an empty list): "
            "every row needs its probability, or a list of C for C classes"
        )
    return ValueError(f"{path}: no rows")


def _group_ids(
    ids: tuple[str, Any], path: Path, y: Tensor, keep: Tensor | None, layout: tuple
) -> Tensor:
    """The group ids of the labels kept, numbered 0..G-1, one per label: per pair, or per
    item of a multiclass file (C values each). ``layout``: the file's rows' lines, each
    label's line and the labels' shape, for the messages."""
    row_lines, every_line, shape = layout
    ids = (ids[0], _one_id_per_line_spread(ids[1], row_lines, keep if keep is not None else y))
    _check_ids_per_line(ids, path, row_lines, keep if keep is not None else y.numel())
    filled = _padding_ids_filled(ids[1], keep)
    # The count before the values: a missing id among ids of another count (one a line
    # beside lines of several labels) had been named at the line of the label of its index.
    _check_id_count(_leaves(filled), path, y, keep, shape)
    return _kept_ids(_to_ids(filled, path, ids[0], every_line, shape), keep)


def _one_id_per_line_spread(values: Any, lines: list[int] | None, labels: Tensor) -> Any:
    """A JSON line's one group id beside its list of labels (a sentence's id beside its
    tags) given to each of them: the natural layout of a file of sentences had been
    refused ("40 group ids for 320 labels"). ``labels``: the file's labels (or its
    kept-mask); ``lines``: the file's rows' lines. Only lines: a JSON document's column
    or an array file's list of ids, shorter than the labels, is refused by its count (a
    column of half the labels' ids had been spread over pairs of neighbours, review R5).

    Example:
        >>> _one_id_per_line_spread(["s1", "s2"], [1, 2], torch.zeros(6))
        [['s1', 's1', 's1'], ['s2', 's2', 's2']]
        >>> _one_id_per_line_spread(["s1", "s2"], [1, 2], torch.zeros(2))  # one label a line
        ['s1', 's2']
    """
    if not isinstance(values, list) or not lines or len(values) != len(lines):
        return values
    if not all(_one_value(v) for v in values):
        return values
    n_labels = labels.numel()
    if n_labels == len(values) or n_labels % len(values):
        return values
    return [[v] * (n_labels // len(values)) for v in values]


def _one_value(cell: Any) -> bool:
    """Whether a JSON cell (or a .pt list's element) is one value, not a list of them (a
    sentence's tensor of ids is a list)."""
    if isinstance(cell, (np.ndarray, Tensor)):
        return cell.ndim == 0
    return not isinstance(cell, (list, tuple))


def _check_id_count(
    count: int, path: Path, y: Tensor, keep: Tensor | None, shape: tuple[int, ...] | None
) -> None:
    """ValueError unless ``count`` group ids are one per label of the file, or one per
    label kept (``y``: the labels kept)."""
    held = y.numel() if keep is None else keep.numel()
    if count in (held, y.numel()):
        return
    # The file's count (and shape) first: the kept count alone had read as a number the
    # file does not hold.
    kept = "" if keep is None else f", {y.numel()} of them kept"
    where = f" of shape {list(shape)}" if shape is not None and len(shape) > 1 else ""
    raise ValueError(
        f"{path}: {count} group ids for {held} labels{where}{kept} (give one per label, in "
        "the labels' shape)"
    )


# A file's layout of labels, by the file's identity, where a label is not a line or a row
# index: a text file's labels per line where a line holds several (a JSON line's list of
# a sentence's tags), an array file's labels' shape of several dimensions. The messages
# that read the file again (row_position) name a label by it. A changed file is new.
_LABEL_LAYOUT: dict[tuple[str, int, int], tuple[int, tuple[int, ...] | None]] = {}


def _file_identity(path: Path) -> tuple[str, int, int]:
    status = path.stat()
    return str(path.resolve()), status.st_mtime_ns, status.st_size


def _remember_label_layout(
    path: Path, lines: list[int] | None, n_labels: int, shape: tuple[int, ...] | None
) -> None:
    """The layout of the labels just read (the last read of a file wins: another pair of
    columns of one .npz may be laid out otherwise)."""
    identity = _file_identity(path)
    if lines and n_labels != len(lines) and n_labels % len(lines) == 0:
        _LABEL_LAYOUT[identity] = (n_labels // len(lines), None)
    elif lines is None and shape is not None and len(shape) > 1:
        _LABEL_LAYOUT[identity] = (1, shape)
    else:
        _LABEL_LAYOUT.pop(identity, None)


def _line_of_each_label(lines: list[int] | None, n_labels: int) -> list[int] | None:
    """Each label's line: a JSON line may hold a list of labels (a sentence's tags), and
    the value checks name labels by their index (a bad one in the second line's list had
    raised an IndexError).

    Example:
        >>> _line_of_each_label([2, 4], 6), _line_of_each_label(None, 6)
        ([2, 2, 2, 4, 4, 4], None)
    """
    if lines is None or not lines or n_labels == len(lines) or n_labels % len(lines):
        return lines
    return [n for n in lines for _ in range(n_labels // len(lines))]


def _rows_read(y: Tensor, keep: Tensor | None) -> Tensor | None:
    """Which rows' probabilities are read (None: all): not the padding rows (``keep``
    False), nor those whose label looks like padding (a negative whole number): that label
    is refused first, with the padding hint, whatever their probability cell holds
    (:func:`_check_values`): an empty cell or ``pad`` beside ``-100`` had been refused as
    a missing or non-numeric probability, with no hint.

    Example:
        >>> _rows_read(torch.tensor([0.0, -100.0, 1.0]), None)
        tensor([ True, False,  True])
    """
    padding = (y < 0) & (y == y.round())
    if not bool(padding.any()):
        return keep
    return ~padding if keep is None else keep & ~padding


# A -1 held by this share of a binary file's rows or more, beside labels all 1, is the
# negative class of -1/+1 labels, not padding (padding of arrays [B, T] may be any share,
# but beside labels of both classes, or all 0).
_CLASS_SHARE = 0.1


def _refuse_a_dropped_class(ignore_index: int, y: Tensor, path: Path) -> None:
    """Refuse ``--ignore-index -1`` of a binary file where -1 is the negative class of
    -1/+1 labels: a tenth of the rows or more, beside labels all 1. The reader's own hint
    ("padding? pass --ignore-index -1") had dropped every negative of such a file, scoring
    the positives alone (CalibErr 0.41 for a calibrated model) without a word. Fewer -1s
    beside labels all 1 may be either (an imbalanced -1/+1 file, or padding of a model
    scored on positives only): warned about, as neither can be told from the file.

    Example:
        >>> y = torch.tensor([-1.0, 1.0, -1.0, 1.0])
        >>> _refuse_a_dropped_class(-1, y, Path("svm.csv"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: svm.csv: --ignore-index -1 drops 2 of 4 rows and leaves labels all 1: ...
    """
    if ignore_index != -1:
        return
    dropped = y == -1
    count = int(dropped.sum())
    if count == 0 or count == y.numel() or bool((y[~dropped] != 1).any()):
        return
    dropping = (
        f"{path}: --ignore-index -1 drops {count:,} of {y.numel():,} rows and leaves labels all 1"
    )
    padding = "if -1 is padding, give it a label of its own, such as -100 (--ignore-index -100)"
    if count >= _CLASS_SHARE * y.numel():
        raise ValueError(
            f"{dropping}: -1 is a class here, not padding (labels -1/+1?): write it as 0, "
            f"as a label is 0 or 1; {padding}"
        )
    warnings.warn(
        f"{dropping}: if -1 is the negative class of labels -1/+1, write it as 0 (only "
        "the positives were scored); if it is padding, label it -100 (--ignore-index "
        "-100) to say so",
        stacklevel=2,
    )


def _check_ignore_index(ignore_index: int | None, q: Tensor, y: Tensor, path: Path) -> None:
    """Refuse ``--ignore-index`` 0 or 1 for a binary file (one probability per label): it
    had dropped every negative (or positive) pair without a word. A class id of a
    multiclass file (C probabilities per label) is warned about, as the metric warns: its
    items are dropped and its probabilities still scored."""
    if ignore_index is None or y.numel() == 0:
        return
    if ignore_index in (0, 1) and q.numel() == y.numel():
        raise ValueError(
            f"{path}: --ignore-index {ignore_index} would drop every pair labelled "
            f"{ignore_index}, a binary file's {'negatives' if ignore_index == 0 else 'positives'}"
            ": give padding a label of its own, such as -100"
        )
    if q.numel() == y.numel():
        _refuse_a_dropped_class(ignore_index, y, path)
    classes = q.numel() // y.numel()
    if classes >= 2 and q.numel() % y.numel() == 0 and 0 <= ignore_index < classes:
        warnings.warn(
            f"{path}: --ignore-index {ignore_index} is one of the {classes} class ids: the "
            f"items labelled {ignore_index} are dropped, and class {ignore_index}'s "
            "probabilities are still scored against labels that are never it (for padding, "
            "use a label of its own, such as -100)",
            UserWarning,
            stacklevel=2,
        )


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


def _check_ids_per_line(
    ids: tuple[str, Any], path: Path, lines: list[int] | None, labels: Tensor | int
) -> None:
    """A JSON row's group ids (a line's, or a record's) are one per label of the row, or
    one per label kept, every row alike (``labels``: the file's kept-mask of labels, or
    their count): lists of other lengths had been joined and spread over the labels, a
    row's label landing in the next row's group, or raised an IndexError.

    Example:
        >>> _check_ids_per_line(("sid", [["a", "a"], ["b"] * 4]), Path("t.jsonl"), [1, 2], 6)
        Traceback (most recent call last):
        ...
        ValueError: t.jsonl: line 1, column 'sid' holds 2 group ids for its 3 labels (give ...)
    """
    name, values = ids
    n_labels = labels if isinstance(labels, int) else labels.numel()
    listed = isinstance(values, list) and any(isinstance(v, (list, tuple)) for v in values)
    if not listed or not values or n_labels % len(values):
        return
    alone = [_one_value(v) for v in values]
    if any(alone) and lines is not None:  # one id alone on some lines, lists on others
        i = alone.index(not alone[0])
        held = ("one id alone", "a list of ids") if alone[0] else ("a list of ids", "one id alone")
        raise ValueError(
            f"{path}: {_row_of(lines, i)}, column {name!r} holds {held[1]} where "
            f"{_row_of(lines, 0)} holds {held[0]}: give every row its ids alike"
        )
    per_row = n_labels // len(values)
    kept = [per_row] * len(values)
    if not isinstance(labels, int):
        kept = labels.reshape(len(values), per_row).sum(1).tolist()
    counts = [_leaves(cell) for cell in values]
    for alike in ([per_row] * len(values), kept):  # one per label, or one per label kept
        if counts == alike:
            return
    i = next((i for i, c in enumerate(counts) if c not in (per_row, kept[i])), None)
    if i is None:  # each row is one or the other, but not all the same one
        i = next(i for i, c in enumerate(counts) if (c == per_row) != (counts[0] == per_row))
    held = "" if kept[i] == per_row else f", {kept[i]} kept"
    # One id alone stands for a JSON line's labels only (_one_id_per_line_spread).
    alone_too = ", or one id alone for the line's labels" if lines is not None else ""
    raise ValueError(
        f"{path}: {_row_of(lines, i)}, column {name!r} holds {counts[i]} group id"
        f"{'s' * (counts[i] != 1)} for its {per_row} label{'s' * (per_row != 1)}{held} "
        f"(give one per label, or one per label kept, in every row alike{alone_too})"
    )


def _leaves(cell: Any) -> int:
    """How many values a JSON cell (or an array, a tensor) holds, at any depth (a line's
    list of lists)."""
    if isinstance(cell, np.ndarray):
        return cell.size
    if isinstance(cell, Tensor):  # a .pt file's list of a sentence's tensors
        return cell.numel()
    return sum(_leaves(v) for v in cell) if isinstance(cell, (list, tuple)) else 1


def _padding_ids_filled(values: Any, keep: Tensor | None) -> Any:
    """A group column (one id per label) with the padding rows' ids (``keep`` False) made
    a kept row's, whatever they hold: they are dropped unread, as padding's probabilities
    are, and an empty one had refused the file that ``recalibrate --out`` writes (its
    padding rows' group cells are empty where the test file held ids for kept labels).

    Example:
        >>> _padding_ids_filled(["s1", "", "s2"], torch.tensor([True, False, True]))
        ['s1', 's1', 's2']
    """
    if isinstance(values, list) and keep is not None and len(values) != keep.numel():
        values = _one_cell_per_label(values, 1)  # a JSON line's list of ids, spread out
    count = values.size if isinstance(values, np.ndarray) else len(values)
    if keep is None or count != keep.numel() or not bool(keep.any()):
        return values
    kept = keep.reshape(-1).tolist()
    if isinstance(values, np.ndarray):
        first = values.reshape(-1)[kept.index(True)]
        return np.where(keep.numpy().reshape(values.shape), values, first)
    first = values[kept.index(True)]
    return [v if k else first for v, k in zip(values, kept, strict=True)]


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


def read_labels(
    path: str | Path, column: str, kept: Tensor | None = None, as_written: bool = False
) -> list[str]:
    """Each row's value in ``column`` as text: the label (query type, class name) of a pair,
    as written but for a whole number written with zero decimals (``1.0`` is ``1``, in a
    CSV or a JSON file alike: :func:`~calib_metrics.predictions._ids.id_texts`), or, with
    ``as_written``, each cell as the file writes it (a group id written back to a file).
    With ``kept`` (:attr:`Predictions.kept`), the kept labels' values, in its order; a
    column of another length is returned whole, for the caller to refuse with its count.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "pairs.csv")
        >>> _ = open(file, "w").write("prob,label,tag\\n0.9,1,1.0\\n0.2,0,2\\n")
        >>> read_labels(file, "tag"), read_labels(file, "tag", as_written=True)
        (['1', '2'], ['1.0', '2'])
    """
    values = _column_values(Path(path), column, kept)
    return [_as_text(v, fold=False) for v in values.tolist()] if as_written else id_texts(values)


def _column_values(path: Path, column: str, kept: Tensor | None) -> np.ndarray:
    """The values of a named ``column`` of the labels ``kept`` (:func:`read_labels`), flat."""
    values = _named_values(path, column).reshape(-1)
    return values if kept is None else _kept_values(values, kept)


def _named_values(path: Path, column: str) -> np.ndarray:
    """A named ``column``'s values as the file holds them, in their shape."""
    table = _named_columns(_load(path), path)
    if table is None:
        raise ValueError(f"{path}: an unnamed array has no column {column!r}")
    if column not in table:
        raise no_column(path, column, list(table))
    values = _column(table, column, path)
    if isinstance(values, list) and any(isinstance(v, (list, tuple)) for v in values):
        # A JSON line's list (a sentence's tags or ids, one per label or per label kept),
        # one cell per label: lists of unequal lengths had been kept whole, and a group id
        # written back as "['s0', 's0']", or a StopIteration raised.
        values = _one_cell_per_label(values, 1)
    # A list (JSON) stays objects: numpy would make [1, 0.5]'s 1 a '1.0' and null 'None'.
    return np.asarray(values, dtype=object if isinstance(values, list) else None)


def _kept_values(values: np.ndarray, kept: Tensor) -> np.ndarray:
    """The ``values`` of the labels that ``kept`` uses (a mask of the labels kept, or the
    file's kept labels in another order: :func:`file_rows`), whether the column holds one
    value per label of the file or one per label kept (as :func:`read_table` takes group
    ids). Values of another length are taken as they are.

    Example:
        >>> rows = torch.tensor([3, 0])  # the file's labels 3 and 0; 1 and 2 were padding
        >>> _kept_values(np.array(["a", "b", "c", "d"]), rows).tolist()
        ['d', 'a']
        >>> _kept_values(np.array(["a", "d"]), rows).tolist()  # one per label kept
        ['d', 'a']
    """
    if kept.dtype == torch.bool:
        return values[kept.numpy()] if values.shape[0] == kept.shape[0] else values
    rows = kept.numpy()
    if values.shape[0] == rows.size:
        # One value per label kept, in the file's order: label i is the file's kept label
        # of rank i among them (rows holds every kept label once).
        return values[np.argsort(np.argsort(rows, kind="stable"), kind="stable")]
    return values[rows] if rows.size == 0 or values.shape[0] > rows.max() else values


def file_rows(kept: Tensor | None, n: int) -> Tensor:
    """The file's label (data row) behind each of the ``n`` labels of a
    :class:`Predictions` with ``kept``: what :attr:`Predictions.kept` becomes when the
    labels are put in another order (:func:`~calib_metrics.predictions.paired_by_ids`).

    Example:
        >>> file_rows(torch.tensor([True, False, True]), 2), file_rows(None, 2)
        (tensor([0, 2]), tensor([0, 1]))
    """
    if kept is None:
        return torch.arange(n)
    return kept.nonzero().reshape(-1) if kept.dtype == torch.bool else kept


def item_ids(
    path: str | Path, column: str, kept: Tensor | None = None, n: int | None = None
) -> list[str]:
    """Each kept label's item id in ``column`` as text, one spelling per id (as
    :func:`read_labels` gives labels); a missing id (an empty cell, JSON null, NaN) is
    refused with its row, as a missing group id is, and so is a column that does not hold
    one id per label (``n`` labels kept): one id per sequence beside [B, T] labels would
    not pair the labels.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "pairs.csv")
        >>> _ = open(file, "w").write("id,prob,label\\n7.0,0.9,1\\n12,0.2,0\\n")
        >>> item_ids(file, "id")
        ['7', '12']
    """
    path = Path(path)
    values = _named_values(path, column)
    _check_one_id_per_label(values, path, column, kept, n)
    values = values if kept is None else _kept_values(values, kept)
    missing = missing_id(values.tolist() if values.dtype == object else values, path)
    if missing is not None:
        row, how = missing
        raise ValueError(
            f"{path}: {row_position(path, file_row(kept, row))}, column {column!r} has a "
            f"missing item id ({how})"
        )
    return id_texts(values)


def _check_one_id_per_label(
    values: np.ndarray, path: Path, column: str, kept: Tensor | None, n: int | None
) -> None:
    """Refuse item ids that are not one per label: not 1-D (a list per row included), or
    neither one per label of the file nor one per label kept (``n``)."""
    nested = values.dtype == object and any(isinstance(v, (list, dict)) for v in values.flat)
    if values.ndim != 1 or nested:
        shape = "x".join(map(str, values.shape)) if values.ndim != 1 else "lists"
        raise ValueError(
            f"{path}: column {column!r} holds {shape} of item ids: --id needs one id per "
            "label, a 1-D column"
        )
    if n is None:
        return
    counts = {n} if kept is None or kept.dtype != torch.bool else {n, kept.shape[0]}
    if values.shape[0] not in counts:
        raise ValueError(
            f"{path}: column {column!r} holds {values.shape[0]} item ids for {n} labels: "
            "--id needs one id per label"
        )


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
    path = Path(path)
    lines = getattr(_load(path), "lines", None)
    per_line, shape = _LABEL_LAYOUT.get(_file_identity(path), (1, None))
    return _row_of(lines, row, per_line, shape)


def _labels_per_line(path: str | Path) -> int:
    """How many labels each line of a text file holds, as its last reading found them (a
    JSON line's list of a sentence's tags); 1 where a line holds one, or for array files.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "s.jsonl")
        >>> _ = open(file, "w").write('{"p": [0.9, 0.2], "y": [1, 0]}\\n')
        >>> _ = read_table(file, probs="p", target="y")
        >>> _labels_per_line(file)
        2
    """
    per_line, shape = _LABEL_LAYOUT.get(_file_identity(Path(path)), (1, None))
    return per_line if shape is None else 1


def group_id_texts(path: str | Path, column: str, kept: Tensor | None = None) -> list[str]:
    """The group ids of ``column`` as the file writes them, one per label (a JSON line's
    one id beside its list of labels stands for each of them, as :func:`read_table` takes
    it), of the labels ``kept`` (:attr:`Predictions.kept`; a column of one id per label
    kept is taken as it is). For messages and for writing the ids back.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "s.jsonl")
        >>> _ = open(file, "w").write('{"p": [0.9, 0.2], "y": [1, 0], "g": "s1"}\\n')
        >>> _ = read_table(file, probs="p", target="y", groups="g")
        >>> group_id_texts(file, "g")
        ['s1', 's1']
    """
    path = Path(path)
    ids = read_labels(path, column, as_written=True)
    per_line, lines = _labels_per_line(path), getattr(_load(path), "lines", None)
    if per_line > 1 and lines is not None and len(ids) == len(lines):
        ids = [i for i in ids for _ in range(per_line)]
    return ids if kept is None else _kept_values(np.array(ids, dtype=object), kept).tolist()


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


def item_id_column(path: str | Path, wanted: str, taken: Mapping[str, str] | None = None) -> str:
    """The item-id column ``wanted`` of the file (``compare --id`` pairs two files' rows by
    it), refused where the file lacks it or where it is one of the columns ``taken`` (put
    to other uses: ``{"tag": "named by --label"}``).

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "pairs.csv")
        >>> _ = open(file, "w").write("ID,prob,label\\n7,0.9,1\\n")
        >>> item_id_column(file, "ID")
        'ID'
    """
    path = Path(path)
    table = _named_columns(_load(path), path)
    if table is None:
        raise ValueError(
            f"{path}: an unnamed array has no item ids; store named arrays (an .npz, or a "
            "dict of tensors in a .pt) with an id column"
        )
    return _pick(list(table), wanted, (), "item ids", path, taken)


def has_column(path: str | Path, column: str) -> bool:
    """Whether the file has a column named ``column``.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "tokens.csv")
        >>> _ = open(file, "w").write("prob,label,tag\\n0.9,1,NN\\n")
        >>> has_column(file, "tag"), has_column(file, "doc")
        (True, False)
    """
    names = column_names(path)
    return names is not None and column in names


def column_names(path: str | Path) -> list[str] | None:
    """The file's column names, or None for an unnamed array.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "tokens.csv")
        >>> _ = open(file, "w").write("prob,label,tag\\n0.9,1,NN\\n")
        >>> column_names(file)
        ['prob', 'label', 'tag']
    """
    path = Path(path)
    table = _named_columns(_load(path), path)
    return None if table is None else list(table)
