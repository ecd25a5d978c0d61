"""Read a file of (probability, label) pairs for the command line.

CSV and TSV (with a header), JSON lines, ``.npy`` (an [N, 2] array or a structured
array), ``.npz`` and ``.pt`` (named arrays or tensors, or one [N, 2] array). Columns
are found by name (``--probs``/``--target``) or by the usual names. Every problem is a
``ValueError`` (or ``FileNotFoundError``) whose message names the file and the column.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

PROB_NAMES = ("probs", "prob", "probability", "q", "p", "pred", "prediction", "score", "confidence")
TARGET_NAMES = ("target", "label", "labels", "y", "gold", "truth", "outcome")
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
    raise ValueError(
        f"{path}: cannot tell which column holds the {what} (columns: {', '.join(names)}); "
        f"name it with --{'probs' if what == 'probabilities' else 'target'}"
    )


def _columns_from_table(
    table: dict[str, Any], path: Path, probs: str | None, target: str | None
) -> tuple[Any, Any]:
    names = list(table)
    return (
        table[_pick(names, probs, PROB_NAMES, "probabilities", path)],
        table[_pick(names, target, TARGET_NAMES, "labels", path)],
    )


def _to_float(values: Any, path: Path, column: str) -> Tensor:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: column {column!r} holds a non-numeric value ({err})") from None
    return torch.from_numpy(array.reshape(-1).copy())


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


def _from_arrays(obj: Any, path: Path, probs: str | None, target: str | None) -> tuple[Any, Any]:
    if isinstance(obj, dict) or hasattr(obj, "files"):
        table = {k: obj[k] for k in (obj.files if hasattr(obj, "files") else obj)}
        return _columns_from_table(table, path, probs, target)
    array = obj.detach().cpu().numpy() if isinstance(obj, Tensor) else np.asarray(obj)
    if array.dtype.names:
        return _columns_from_table({n: array[n] for n in array.dtype.names}, path, probs, target)
    if array.ndim == 2 and array.shape[1] == 2:
        return array[:, 0], array[:, 1]
    raise ValueError(
        f"{path}: expected named arrays or one [N, 2] array (probability, label), "
        f"got shape {tuple(array.shape)}"
    )


def read_predictions(
    path: str | Path, probs: str | None = None, target: str | None = None
) -> tuple[Tensor, Tensor]:
    """(probabilities, labels) as float64 tensors from a file of predictions.

    Example:
        >>> import tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> file = os.path.join(folder, "preds.csv")
        >>> _ = open(file, "w").write("prob,label\\n0.9,1\\n0.2,0\\n")
        >>> read_predictions(file)
        (tensor([0.9000, 0.2000], dtype=torch.float64), tensor([1., 0.], dtype=torch.float64))
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path}: unknown format {suffix!r} (use one of {', '.join(FORMATS)})")
    if suffix in (".csv", ".tsv"):
        table = _read_delimited(path, "\t" if suffix == ".tsv" else ",")
        q, y = _columns_from_table(table, path, probs, target)
    elif suffix in (".jsonl", ".json", ".ndjson"):
        q, y = _columns_from_table(_read_jsonl(path), path, probs, target)
    elif suffix == ".npy":
        try:
            obj = np.load(path, allow_pickle=False)
        except ValueError as err:
            raise ValueError(f"{path}: not a readable .npy file ({err})") from None
        q, y = _from_arrays(obj, path, probs, target)
    elif suffix == ".npz":
        try:
            obj = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as err:
            raise ValueError(f"{path}: not a readable .npz file ({err})") from None
        q, y = _from_arrays(obj, path, probs, target)
    else:
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises many types for a bad file
            raise ValueError(f"{path}: not a readable torch file ({type(err).__name__})") from None
        q, y = _from_arrays(obj, path, probs, target)
    q = _to_float(q, path, probs or "probabilities")
    y = _to_float(y, path, target or "labels")
    if q.numel() == 0:
        raise ValueError(f"{path}: no rows")
    return q, y
