"""Opening a file of predictions by its suffix (:data:`FORMATS`): text files are read into
a table of columns, array files loaded (an .npy/.npz checked by its first bytes, a .pt
file read without running pickled code), and a file that cannot be read is a ValueError
naming it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from calib_metrics.predictions._text import _read_delimited, _read_json, _read_jsonl, _readable

FORMATS = (".csv", ".tsv", ".jsonl", ".json", ".ndjson", ".npy", ".npz", ".pt", ".pth")


# The first bytes of a zip archive (.npz) and of numpy's .npy format.
_MAGIC = {".npz": b"PK\x03\x04", ".npy": b"\x93NUMPY"}


def _check_magic(path: Path, suffix: str) -> None:
    """Refuse a file that does not start as ``suffix`` files do (numpy would try it as a
    pickle and blame pickled data the file does not hold)."""
    magic = _MAGIC[suffix]
    with open(path, "rb") as f:
        if f.read(len(magic)) != magic:
            kind = "a zip archive" if suffix == ".npz" else "numpy's .npy format"
            raise ValueError(f"{path}: not a {suffix} file (it does not start as {kind} does)")


def _load(path: Path) -> Any:
    """The file's contents: a table of columns (text formats) or the stored array object."""
    if path.is_dir():
        raise IsADirectoryError(f"{path}: a directory, not a file of predictions")
    if str(path) == "-" and not path.exists():
        raise ValueError("-: reading from stdin is not supported: give a file path")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise ValueError(f"{path}: not a regular file (a device or a pipe): save it to a file")
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path}: unknown format {suffix!r} (use one of {', '.join(FORMATS)})")
    with _readable(path):
        return _read_contents(path, suffix)


def _read_contents(path: Path, suffix: str) -> Any:
    """:func:`_load` of one suffix, text formats and array files alike."""
    if suffix in (".csv", ".tsv"):
        return _read_delimited(path, "\t" if suffix == ".tsv" else ",")
    if suffix == ".json":
        return _read_json(path)
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(path)
    if suffix in (".npy", ".npz"):
        _check_magic(path, suffix)
        try:
            return np.load(path, allow_pickle=False)
        except Exception as err:  # zipfile, zlib and numpy raise many types for a bad file
            raise ValueError(f"{path}: not a readable {suffix} file ({err})") from None
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for a bad file
        raise _unreadable_torch_file(path, err) from None


# How torch.load(weights_only=True) names an object it does not unpickle.
_UNSUPPORTED_GLOBAL = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")


def _unreadable_torch_file(path: Path, err: Exception) -> ValueError:
    """The error for a .pt file that ``torch.load`` refuses: one that holds numpy arrays
    (a valid torch file, whose arrays only an unsafe load reads) says so and how to save
    it; one that holds another object names it (``weights_only=False`` could run code the
    file carries, so it is never tried).

    Example:
        >>> import pickle
        >>> text = "... Unsupported global: GLOBAL numpy._core.multiarray._reconstruct was not"
        >>> str(_unreadable_torch_file(Path("p.pt"), pickle.UnpicklingError(text)))[:52]
        'p.pt: holds numpy arrays where tensors are needed (a'
    """
    found = _UNSUPPORTED_GLOBAL.search(str(err))
    if found is None:
        # torch's own first sentence where it reads the archive (a truncated file: "failed
        # finding central directory"); an unpickling error's text is about weights_only.
        # "[enforce fail at inline_container.cc:180] . file in archive is not ...": the
        # location in brackets dropped, the first sentence kept.
        text = re.sub(r"^\[[^\]]*\]\s*\.?\s*", "", str(err))
        said = text.split(". ")[0].strip() if isinstance(err, RuntimeError) else ""
        reason = f": {said}" if said else ""
        return ValueError(f"{path}: not a readable torch file ({type(err).__name__}{reason})")
    name = found.group(1)
    if name.split(".")[0] == "numpy":
        what = "numbers" if name.endswith(".scalar") else "arrays"
        return ValueError(
            f"{path}: holds numpy {what} where tensors are needed (a .pt file is read "
            "without running the code of pickled objects): save tensors, torch.from_numpy("
            "array), or save the arrays as an .npz (np.savez)"
        )
    return ValueError(
        f"{path}: holds a {name} object, which is not read (a .pt file is read "
        "without running the code of pickled objects): save tensors, in a dict or alone"
    )
