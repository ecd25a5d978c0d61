"""The command line's I/O edge: read (probability, label) pairs, write results as JSON.

CSV and TSV (with a header), JSON lines, ``.npy`` (an [N, 2] array or a structured
array), ``.npz`` and ``.pt`` (named arrays or tensors, or one [N, 2] array). Columns
are found by name (``--probs``/``--target``/``--groups``) or by the usual names. Group
ids (sentence or document ids for the group bootstrap) may be numbers or strings; they
are numbered 0..G-1. Every problem is a ``ValueError`` (or ``FileNotFoundError``) whose
message names the file and the column.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

PROB_NAMES = ("probs", "prob", "probability", "q", "p", "pred", "prediction", "score", "confidence")
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


def _pick(
    names: list[str], wanted: str | None, defaults: tuple[str, ...], what: str, path: Path
) -> str:
    if wanted is not None:
        if wanted not in names:
            raise ValueError(f"{path}: no column {wanted!r} (columns: {', '.join(names)})")
        return wanted
    lowered = {n.lower(): n for n in names}
    for name in defaults:
        if name in lowered:
            return lowered[name]
    option = {"probabilities": "probs", "labels": "target", "group ids": "groups"}[what]
    raise ValueError(
        f"{path}: cannot tell which column holds the {what} (columns: {', '.join(names)}); "
        f"name it with --{option}"
    )


class Predictions(NamedTuple):
    """Probabilities and labels (float64), and group ids 0..G-1 (int64) when asked for."""

    probs: Tensor
    target: Tensor
    groups: Tensor | None


# What to read: the probability and label column names, and the group column name or
# "" for "find it by its usual name" (None: no groups).
Wanted = tuple[str | None, str | None, str | None]


def _columns_from_table(table: dict[str, Any], path: Path, wanted: Wanted) -> tuple[Any, ...]:
    names = list(table)
    probs, target, groups = wanted
    columns = (
        table[_pick(names, probs, PROB_NAMES, "probabilities", path)],
        table[_pick(names, target, TARGET_NAMES, "labels", path)],
    )
    if groups is None:
        return (*columns, None)
    return (*columns, table[_pick(names, groups or None, GROUP_NAMES, "group ids", path)])


def _to_float(values: Any, path: Path, column: str) -> Tensor:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: column {column!r} holds a non-numeric value ({err})") from None
    return torch.from_numpy(array.reshape(-1).copy())


def _to_ids(values: Any, path: Path, column: str) -> Tensor:
    """Group ids of any kind (numbers, strings) numbered 0..G-1 in sorted order."""
    array = np.asarray(values).reshape(-1)
    if array.dtype.kind not in "iub":
        if array.dtype.kind == "f" and np.isnan(array).any():
            raise ValueError(f"{path}: column {column!r} has a missing group id (NaN)")
        array = array.astype(str)
    return torch.from_numpy(np.unique(array, return_inverse=True)[1].reshape(-1).astype(np.int64))


def _read_delimited(path: Path, delimiter: str) -> dict[str, list[str]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        if not reader.fieldnames:
            raise ValueError(f"{path}: empty file (a header row is needed)")
        names = [n.strip() for n in reader.fieldnames]
        table: dict[str, list[str]] = {n: [] for n in names}
        for line, row in enumerate(reader, start=2):
            if None in row or None in row.values():
                raise ValueError(f"{path}: line {line} has a different number of fields")
            for raw, name in zip(row.values(), names):
                table[name].append(raw.strip() if isinstance(raw, str) else raw)
    return table


def _read_jsonl(path: Path) -> dict[str, list[Any]]:
    table: dict[str, list[Any]] = {}
    with path.open() as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: line {line_no} is not valid JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}: line {line_no} is not a JSON object")
            if table and set(row) != set(table):
                raise ValueError(f"{path}: line {line_no} has different keys than line 1")
            for key, value in row.items():
                table.setdefault(key, []).append(value)
    return table


def _from_arrays(obj: Any, path: Path, wanted: Wanted) -> tuple[Any, ...]:
    if isinstance(obj, dict) or hasattr(obj, "files"):
        table = {k: obj[k] for k in (obj.files if hasattr(obj, "files") else obj)}
        table = {k: v.numpy() if isinstance(v, Tensor) else v for k, v in table.items()}
        return _columns_from_table(table, path, wanted)
    array = obj.detach().cpu().numpy() if isinstance(obj, Tensor) else np.asarray(obj)
    if array.dtype.names:
        return _columns_from_table({n: array[n] for n in array.dtype.names}, path, wanted)
    if array.ndim == 2 and array.shape[1] == 2:
        if wanted[2] is not None:
            raise ValueError(
                f"{path}: an [N, 2] array has no group ids; store named arrays "
                "(probs, target, groups) instead"
            )
        return array[:, 0], array[:, 1], None
    raise ValueError(
        f"{path}: expected named arrays or one [N, 2] array (probability, label), "
        f"got shape {tuple(array.shape)}"
    )


def read_table(
    path: str | Path,
    probs: str | None = None,
    target: str | None = None,
    groups: str | None = None,
) -> Predictions:
    """Probabilities, labels and, if ``groups`` is not None, group ids from a file.

    ``groups``: the group column's name, or ``""`` to find it by its usual names
    (``sentence_id``, ``doc_id``, ``group``, ...).

    Example:
        >>> import tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> file = os.path.join(folder, "tokens.csv")
        >>> _ = open(file, "w").write("prob,label,sentence\\n0.9,1,s2\\n0.2,0,s1\\n0.4,0,s2\\n")
        >>> read_table(file, groups="").groups
        tensor([1, 0, 1])
    """
    path = Path(path)
    wanted = (probs, target, groups)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path}: unknown format {suffix!r} (use one of {', '.join(FORMATS)})")
    if suffix in (".csv", ".tsv"):
        table = _read_delimited(path, "\t" if suffix == ".tsv" else ",")
        q, y, ids = _columns_from_table(table, path, wanted)
    elif suffix in (".jsonl", ".json", ".ndjson"):
        q, y, ids = _columns_from_table(_read_jsonl(path), path, wanted)
    elif suffix == ".npy":
        try:
            obj = np.load(path, allow_pickle=False)
        except ValueError as err:
            raise ValueError(f"{path}: not a readable .npy file ({err})") from None
        q, y, ids = _from_arrays(obj, path, wanted)
    elif suffix == ".npz":
        try:
            obj = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as err:
            raise ValueError(f"{path}: not a readable .npz file ({err})") from None
        q, y, ids = _from_arrays(obj, path, wanted)
    else:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises many types for a bad file
            raise ValueError(f"{path}: not a readable torch file ({type(err).__name__})") from None
        q, y, ids = _from_arrays(obj, path, wanted)
    q = _to_float(q, path, probs or "probabilities")
    y = _to_float(y, path, target or "labels")
    if q.numel() == 0:
        raise ValueError(f"{path}: no rows")
    if ids is not None:
        ids = _to_ids(ids, path, groups or "group ids")
        if ids.numel() != q.numel():
            raise ValueError(f"{path}: {ids.numel()} group ids for {q.numel()} probabilities")
    return Predictions(q, y, ids)


def to_jsonable(value: Any) -> Any:
    """Turn tensors, paths, dataclasses and nested containers into JSON values.

    Non-finite floats become ``None`` (JSON has no NaN).

    Example:
        >>> to_jsonable({"a": torch.tensor(0.5), "b": [torch.tensor([1, 2])], "c": float("nan")})
        {'a': 0.5, 'b': [[1, 2]], 'c': None}
    """
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().tolist()
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
