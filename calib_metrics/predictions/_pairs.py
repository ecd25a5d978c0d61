"""Two files' rows paired by their item ids (``compare a.csv b.csv --id``): the second
file's labels put in the first's order, so that row i of both is one item. Without ids
the rows pair by position, and a file whose rows were shuffled (within each label, say)
had been paired with another item's row without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from calib_metrics.predictions._read import Predictions, file_rows, item_ids, row_position
from calib_metrics.predictions._values import file_row


def paired_by_ids(
    first: Predictions,
    second: Predictions,
    paths: Sequence[str | Path],
    columns: Sequence[str],
) -> Predictions:
    """``second`` with its labels in ``first``'s order, matched by their item ids (column
    ``columns[i]`` of ``paths[i]``, of the labels each file kept). Its ``kept`` becomes
    the file's labels in that order (:func:`~calib_metrics.predictions.file_rows`), so
    that its other columns (:func:`~calib_metrics.predictions.read_labels`) and its rows
    in messages line up; ``second`` comes back as it is when its order is ``first``'s.
    An id that is missing, repeated in a file, or in one file only is refused, the first
    one named with its row. Ids are compared as text, one spelling per id (``7`` and
    ``7.0`` are one: :func:`~calib_metrics.predictions.item_ids`).

    Example:
        >>> import tempfile, os
        >>> from calib_metrics.predictions import read_table
        >>> folder = tempfile.mkdtemp()
        >>> a, b = os.path.join(folder, "a.csv"), os.path.join(folder, "b.jsonl")
        >>> _ = open(a, "w").write("id,p,y\\nx,0.9,1\\nz,0.2,0\\n")
        >>> rows = ['{"id": "z", "p": 0.3, "y": 0}', '{"id": "x", "p": 0.8, "y": 1}']
        >>> _ = open(b, "w").write("\\n".join(rows))
        >>> paired = paired_by_ids(read_table(a), read_table(b), [a, b], ["id", "id"])
        >>> paired.probs, paired.kept
        (tensor([0.8000, 0.3000], dtype=torch.float64), tensor([1, 0]))
    """
    paths = [Path(path) for path in paths]
    files = list(zip(paths, columns, (first.kept, second.kept), strict=True))
    counts = (first.target.numel(), second.target.numel())
    ids = [item_ids(*file, n) for file, n in zip(files, counts, strict=True)]
    places = [_places(file_ids, file) for file_ids, file in zip(ids, files, strict=True)]
    order = _order(ids[0], places[1], files)
    if len(places[1]) > len(ids[0]):
        _refuse_extra(ids[1], places[0], files)
    if order == list(range(len(order))):
        return second
    return _reordered(second, torch.tensor(order, dtype=torch.long))


# A file of the pairing: its path, its id column and its labels kept (Predictions.kept).
_File = tuple[Path, str, Tensor | None]


def _where(file: _File, index: int) -> str:
    """Where label ``index`` (of those kept) of ``file`` is: ``line 5``, ``row index 4``."""
    path, _, kept = file
    return row_position(path, file_row(kept, index))


def _places(ids: list[str], file: _File) -> dict[str, int]:
    """Each id's index in ``ids``; an id twice is refused, named with both its rows."""
    places: dict[str, int] = {}
    for i, key in enumerate(ids):
        first = places.setdefault(key, i)
        if first != i:
            path, column, _ = file
            raise ValueError(
                f"{path}: {_where(file, i)}, column {column!r} repeats item id {key!r} of "
                f"{_where(file, first)}: an item id names one item"
            )
    return places


def _order(ids: list[str], places: dict[str, int], files: list[_File]) -> list[int]:
    """The index in the second file of each of the first file's ``ids`` (``places``: the
    second's); the first id it does not have is refused."""
    order = [places.get(key, -1) for key in ids]
    if -1 in order:
        i = order.index(-1)
        (path, _, _), (other, column, kept) = files
        raise ValueError(
            f"{other}: no row with item id {ids[i]!r} (column {column!r}{_kept_only(kept)}), "
            f"which {_where(files[0], i)} of {path} holds: the two files must hold the same "
            "items"
        )
    return order


def _refuse_extra(ids: list[str], places: dict[str, int], files: list[_File]) -> None:
    """Refuse the first of the second file's ``ids`` that the first file (``places``)
    does not have."""
    i = next(i for i, key in enumerate(ids) if key not in places)
    (path, _, kept), (other, column, _) = files
    raise ValueError(
        f"{other}: {_where(files[1], i)}, column {column!r} holds item id {ids[i]!r}, which "
        f"{path} does not have{_kept_only(kept)}: the two files must hold the same items"
    )


def _kept_only(kept: Tensor | None) -> str:
    """Said of a file whose padding rows were dropped: their ids are not looked at."""
    return "" if kept is None else ", among the rows kept"


def _reordered(table: Predictions, order: Tensor) -> Predictions:
    """``table``'s labels (with their probabilities, C per label in a multiclass file, and
    group ids) in the ``order`` given, and ``kept`` the file's labels in that order."""
    n = table.target.numel()
    probs = table.probs.reshape(n, -1)[order].reshape(table.probs.shape)
    groups = None if table.groups is None else table.groups[order]
    kept = file_rows(table.kept, n)[order]
    return table._replace(probs=probs, target=table.target[order], groups=groups, kept=kept)
