"""Reading a saved model file, with errors that name it."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import torch


def load_torch_file(path: str | Path, map_location: Any = "cpu") -> Any:
    """``torch.load`` of a model file (``weights_only``): a missing path is a
    FileNotFoundError, a directory a ValueError saying so (it had been called missing), a
    ``map_location`` device not available here a ValueError naming it, and a file torch
    cannot read a ValueError saying that it is not a saved model, where torch raises many
    types (an unpickling error for a text file).

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
    if path.is_dir():
        raise ValueError(f"{path} is a directory: pass the path of a saved model file in it")
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    _check_device(map_location)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:
        raise ValueError(
            f"{path} cannot be read as a saved model (not one, damaged, or holding more "
            f"than tensors; torch: {_reason(err)})"
        ) from None


def _check_device(map_location: Any) -> None:
    """Refuse a ``map_location`` device that this machine cannot hold tensors on, by name:
    torch's refusal while reading (``"cuda"`` without CUDA) had been reported as a file that
    is not a saved model. A dict's target devices are checked alike; a function (torch.load's
    other form) is left to torch.

    Example:
        >>> _check_device("meta")  # no values, but a device
        >>> _check_device("gpu")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: map_location='gpu' is not a device available here (torch: RuntimeError: ...
        >>> _check_device({"cuda:0": "gpu"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: map_location={'cuda:0': 'gpu'} names 'gpu', not a device available here ...
    """
    many = isinstance(map_location, dict)
    for target in map_location.values() if many else [map_location]:
        reason = _unavailable(target) if isinstance(target, (str, torch.device)) else ""
        if reason:
            given = f"{map_location!r} names {str(target)!r}," if many else f"{str(target)!r} is"
            raise ValueError(f"map_location={given} not a device available here (torch: {reason})")


def _unavailable(device: str | torch.device) -> str:
    """Why no tensor can be made on ``device`` here ("" where one can)."""
    try:
        torch.empty(0, device=device)
    except Exception as err:  # torch raises many types: AssertionError without CUDA
        return _reason(err)
    return ""


def _reason(err: Exception) -> str:
    """torch's reason in a few words, without its advice: for any file it cannot read as
    tensors, torch suggests ``weights_only=False``, which runs whatever code a pickle holds;
    never to be passed on about a file the user merely pointed a command at."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    if not first or isinstance(err, pickle.UnpicklingError) or "weights_only" in text:
        return type(err).__name__
    return f"{type(err).__name__}: {first}"
