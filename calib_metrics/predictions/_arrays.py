"""The contents of an array file (.npy, .npz, .pt) as numpy: named columns (a dict or
.npz of arrays, a structured array's fields), or else the one unnamed array it stores.
Tensors are detached and moved to the CPU, and refused by name where they have no dense
values to copy (meta, sparse, quantized, nested).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from calib_metrics.functional.errors import check_not_meta


def _tensor_as_numpy(value: Tensor, path: Path, what: str) -> np.ndarray:
    """A stored tensor as numpy, refused by name (``what``: ``"column 'probs'"``) where it
    has no values to copy (meta) or no dense layout."""
    check_not_meta(value, f"{path}: {what}")
    if value.layout != torch.strided or value.is_quantized or value.is_nested:
        kind = "quantized" if value.is_quantized else str(value.layout).split(".")[-1]
        kind = "nested" if value.is_nested else kind
        raise ValueError(f"{path}: {what} is a {kind} tensor: store a dense one (.to_dense())")
    return _to_numpy(value)


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
