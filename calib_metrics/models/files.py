"""Reading a saved model file, with errors that name it."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import torch


def load_torch_file(path: str | Path, map_location: Any = "cpu") -> Any:
    """``torch.load`` of a model file (``weights_only``): a missing path is a
    FileNotFoundError, and a file torch cannot read a ValueError saying that it is not a
    saved model, where torch raises many types (an unpickling error for a text file).

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
        ValueError: .../notes.txt cannot be read as a saved model (not one, damaged, or ...
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:
        raise ValueError(
            f"{path} cannot be read as a saved model (not one, damaged, or holding more "
            f"than tensors; torch: {_reason(err)})"
        ) from None


def _reason(err: Exception) -> str:
    """torch's reason in a few words, without its advice: for any file it cannot read as
    tensors, torch suggests ``weights_only=False``, which runs whatever code a pickle holds;
    never to be passed on about a file the user merely pointed a command at."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    if not first or isinstance(err, pickle.UnpicklingError) or "weights_only" in text:
        return type(err).__name__
    return f"{type(err).__name__}: {first}"
