"""Which columns hold the probabilities, the labels and the group ids: the names given
(``--probs``/``--target``/``--groups``) or the usual ones, several candidates refused,
integer columns that look like hard predictions refused; and one column's values as a
list or numpy array, read only when used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from calib_metrics.predictions._arrays import _table_or_array, _tensor_as_numpy
from calib_metrics.predictions._text import _DelimitedTable, _Table

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
_OPTIONS = {"probabilities": "probs", "labels": "target", "group ids": "groups", "item ids": "id"}


# A file's own options where they are not _OPTIONS' (recalibrate's test file:
# {"labels": "test-target"}), for the messages.
Options = Mapping[str, str]


def _option(what: str, options: Options | None = None, wanted: str | None = None) -> str:
    """The option that names the column of the ``what`` in this file: its own
    (``options``), but the shared one that gave it ``wanted``, a :class:`SharedName`.
    recalibrate's test file had been told to name its labels with --target, which the
    dev file's labels take.

    Example:
        >>> _option("labels", {"labels": "test-target"}), _option("labels")
        ('test-target', 'target')
        >>> _option("labels", {"labels": "test-target"}, SharedName("y"))
        'target'
    """
    if options is None or isinstance(wanted, SharedName):
        return _OPTIONS[what]
    return options.get(what, _OPTIONS[what])


def _only(found: list[str], what: str, path: Path, options: Options | None = None) -> str:
    """The one column found for the ``what``; several are refused, not one picked."""
    if len(found) > 1:
        raise ValueError(
            f"{path}: several columns could hold the {what} ({', '.join(found)}); name one "
            f"with --{_option(what, options)}"
        )
    return found[0]


def no_column(path: Path, wanted: str, names: list[str], took: str = "") -> ValueError:
    """The error for a column named that the file lacks (``took``: a hint that ends it):
    one named in another case gets "did you mean", as the usual names match any case.

    Example:
        >>> print(no_column(Path("f.csv"), "PROB", ["prob", "label"]))
        f.csv: no column 'PROB' (columns: prob, label; did you mean 'prob'?)
    """
    near = [name for name in names if name.lower() == wanted.lower()]
    meant = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
    return ValueError(f"{path}: no column {wanted!r} (columns: {', '.join(names)}{meant}{took})")


def _pick(
    names: list[str],
    wanted: str | None,
    defaults: tuple[str, ...],
    what: str,
    path: Path,
    taken: Mapping[str, str] | None = None,
    unusable: set[str] | None = None,
    options: Options | None = None,
) -> str:
    """The column of the ``what``: ``wanted``, or the one usual name present. ``taken``
    maps the columns put to other uses to those uses (``{"tag": "named by --label"}``):
    none of them is this one, and neither is a column in ``unusable`` (integer arrays
    beside a float one: an .npz's ``prediction`` beside its ``probs``). Several usual
    names are refused: a header ``p,label,q`` had read ``q``. The messages name the
    file's own ``options``."""
    taken = taken or {}
    unusable = unusable or set()
    option = _option(what, options, wanted)
    if wanted is not None:
        if wanted not in names:
            # `compare --groups a.csv b.csv`: the option took a file for its column.
            took = (
                "; it is a file: put the files before the option" if Path(wanted).is_file() else ""
            )
            raise no_column(path, wanted, names, took)
        if wanted in taken:
            raise ValueError(
                f"{path}: column {wanted!r} is given as --{option} and is {taken[wanted]}"
                f"{_leave_out(wanted, taken[wanted], what)}"
            )
        return wanted
    found = [n for n in _usual_names(names, defaults) if n not in taken and n not in unusable]
    if found:
        return _only(found, what, path, options)
    raise _none_found(names, defaults, what, path, taken, unusable, option)


def _none_found(
    names: list[str],
    defaults: tuple[str, ...],
    what: str,
    path: Path,
    taken: Mapping[str, str],
    unusable: set[str],
    option: str,
) -> ValueError:
    """The error for a file none of whose free columns has a usual name of the ``what``,
    with the ``option`` that names it; or, where an option has taken the usual column, that
    option to leave out (``--label target`` had been told to name the labels with
    --target, which then clashed with --label over 'target')."""
    # A table holds one probability per row: a multiclass row's C probabilities go in an
    # array file or one JSON list per line.
    multiclass = (
        " (one probability per row; multiclass probabilities [N, C] go in a .npz, .npy or .pt "
        "file, or a JSON-lines list column)"
        if what == "probabilities"
        else ""
    )
    others = "".join(f"; {name!r} is {by}" for name, by in taken.items() if name in names)
    advice = f"; name it with --{option}"
    left_out = [_leave_out(n, taken.get(n), what) for n in _usual_names(names, defaults)]
    if any(left_out):
        rest = [n for n in names if n not in taken and n not in unusable]
        advice = next(filter(None, left_out))
        advice += f", or name another column with --{option}" if rest else ""
    elif what == "group ids":
        # Groups are asked for (--groups, --interval groups): "name it with --groups" had
        # told a user who gave --groups to give it, as if a column were there to name.
        # Told of the other columns only where one has a group-id name (--target doc).
        usual = _usual_names(names, defaults)
        others = "".join(f"; {name!r} is {by}" for name, by in taken.items() if name in usual)
        return ValueError(
            f"{path} has no group-id column (columns: {', '.join(names)}{others}): name one "
            f"with --{option} COLUMN{_delimiter_hint(names, path)}"
        )
    return ValueError(
        f"{path}: cannot tell which column holds the {what} (columns: {', '.join(names)}"
        f"{others}){advice}{multiclass}{_delimiter_hint(names, path)}"
    )


def _leave_out(name: str, by: str | None, what: str) -> str:
    """How to read column ``name`` as the ``what`` when an option has taken it (``by``:
    ``"named by --label"``); "" when none has. ``--label`` names a column beside the
    labels (a tag, a type), never the labels, which the messages had not said.

    Example:
        >>> _leave_out("target", "named by --label", "labels")
        ": --label names a column other than the labels; leave it out (or give it another
        column) to read 'target' as the labels"
    """
    option = (by or "").removeprefix("named by ")
    # Only options that never name the wanted column: --probs-b names model b's
    # probabilities, which a single-file comparison needs.
    if option not in ("--label", "--groups"):
        return ""
    return (
        f": {option} names a column other than the {what}; leave it out (or give it another "
        f"column) to read {name!r} as the {what}"
    )


def _delimiter_hint(names: list[str], path: Path) -> str:
    """A hint for a header read with the wrong delimiter, its names run together: a
    tab-separated file named .csv, or a comma-separated one named .tsv (which had had no
    hint).

    Example:
        >>> _delimiter_hint(["prob,label"], Path("p.tsv"))
        ' (the header holds commas: give a comma-separated file a .csv name)'
    """
    if any("\t" in name for name in names) and path.suffix.lower() != ".tsv":
        return " (the header holds tabs: give a tab-separated file a .tsv name)"
    if any("," in name for name in names) and path.suffix.lower() == ".tsv":
        return " (the header holds commas: give a comma-separated file a .csv name)"
    return ""


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


def _columns_from_table(
    table: dict[str, Any],
    path: Path,
    wanted: Wanted,
    taken: Mapping[str, str] | None = None,
    options: Options | None = None,
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
            _refuse_hard_predictions(sorted(integers, key=candidates.index), path, options)
    probs = _pick(names, probs, PROB_NAMES, "probabilities", path, taken, unusable, options)
    taken = {**taken, probs: "the probabilities"}
    target = _pick(names, target, TARGET_NAMES, "labels", path, taken, options=options)
    taken = {**taken, target: "the labels"}
    picked = (probs, target)
    group = None
    if isinstance(table, _DelimitedTable):
        # One pass over the file reads the columns used, and only those (a text file's
        # columns cannot fail to read, so the group column is picked first).
        if groups is not None:
            group = _pick_groups(names, groups, path, taken)
        table.want(picked, [group] if group is not None else [], labels=[target])
    columns = tuple((name, _column(table, name, path)) for name in picked)
    if groups is None:
        return (*columns, None)
    if group is None:
        group = _pick_groups(names, groups, path, taken)
    return (*columns, (group, _column(table, group, path)))


def _pick_groups(names: list[str], groups: str, path: Path, taken: Mapping[str, str]) -> str:
    """The group-id column: ``groups``, or ("") the one usual name among the columns no
    other option has taken. A bare ``--groups`` had read the labels ``--target doc`` named
    as the groups. A named one is taken already, by ``--groups`` itself."""
    if groups:
        return _pick(names, groups, GROUP_NAMES, "group ids", path)
    return _pick(names, None, GROUP_NAMES, "group ids", path, taken)


def _refuse_hard_predictions(
    integers: list[str], path: Path, options: Options | None = None
) -> None:
    """Refuse integer columns under a usual name that is not "probability" (``pred``,
    ``prediction``, ``score``): they look like hard predictions or class ids."""
    named = ", ".join(repr(n) for n in integers)
    several = len(integers) > 1
    option = _option("probabilities", options)
    raise ValueError(
        f"{path}: column{'s' if several else ''} {named} hold{'' if several else 's'} "
        "integers, which look like hard predictions (or class ids), not probabilities: give "
        f"the model's probabilities, or name the column with --{option} if it holds them (0s "
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
    absent = getattr(table, "absent", {}).get(name)
    if absent is not None:
        raise ValueError(
            f"{path}: {absent} has no key {name!r}, which is read: every row needs it (a key "
            "only some rows have is fine where it is not read)"
        )
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


def _from_arrays(
    obj: Any,
    path: Path,
    wanted: Wanted,
    taken: Mapping[str, str] | None = None,
    options: Options | None = None,
) -> tuple[Any, ...]:
    table, array = _table_or_array(obj, path)
    if table is not None:
        return _columns_from_table(table, path, wanted, taken, options)
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
