"""Reading a saved model file, with errors that name it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def load_torch_file(path: str | Path, map_location: Any = "cpu") -> Any:
    """``torch.load`` of a model file (``weights_only``): a missing path is a
    FileNotFoundError, and a file torch cannot read a ValueError naming it and torch's
    reason, where torch raises many types (an unpickling error for a text file).

    Example:
        >>> import tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> torch.save({"weight": torch.ones(2)}, os.path.join(folder, "m.pt"))
        >>> load_torch_file(os.path.join(folder, "m.pt"))["weight"]
        tensor([1., 1.])
        >>> _ = open(os.path.join(folder, "notes.txt"), "w").write("not a model")
        >>> load_torch_file(os.path.join(folder, "notes.txt"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: .../notes.txt is not a readable torch file (UnpicklingError: ...)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        detail = f"{type(err).__name__}: {reason}" if reason else type(err).__name__
        raise ValueError(f"{path} is not a readable torch file ({detail})") from None
