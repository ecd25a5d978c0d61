"""Small helpers that every experiment uses to write its results."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch


def to_jsonable(value: Any) -> Any:
    """Turn tensors, paths, dataclasses and nested containers into JSON values.

    Example:
        >>> to_jsonable({"a": torch.tensor(0.5), "b": [torch.tensor([1, 2])]})
        {'a': 0.5, 'b': [[1, 2]]}
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


def write_json(path: str | Path, results: Any) -> Path:
    """Write ``results`` as indented JSON (tensors become lists), creating folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_jsonable(results), indent=2) + "\n")
    return path


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats are printed with 4 decimals.

    Example:
        >>> print(markdown_table(["model", "err"], [["HMM", 0.12345]]))
        | model | err |
        |---|---|
        | HMM | 0.1235 |
    """

    def cell(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            v = v.item()
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def format_interval(error: float, lower: float, upper: float, digits: int = 4) -> str:
    """``0.0123 [0.0101, 0.0145]``, the way every table prints an error with its interval.

    Example:
        >>> format_interval(0.01234, 0.0101, 0.0145)
        '0.0123 [0.0101, 0.0145]'
    """
    return f"{error:.{digits}f} [{lower:.{digits}f}, {upper:.{digits}f}]"


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run a block with ``n`` torch threads (None or 0: unchanged), then restore them.

    Example:
        >>> before = torch.get_num_threads()
        >>> with torch_threads(1):
        ...     torch.get_num_threads()
        1
        >>> torch.get_num_threads() == before
        True
    """
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
