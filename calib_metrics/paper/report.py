"""Small helpers that every experiment uses to write its results."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from calib_metrics.predictions import check_writable_folder, to_jsonable
from calib_metrics.report import no_interval
from calib_metrics.wording import split_function_name

__all__ = [
    "format_interval",
    "markdown_table",
    "to_jsonable",
    "torch_threads",
    "write_json",
    "write_text",
]


def named_warnings(name: str, score: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``score(*args, **kwargs)``, its warnings said again with ``name`` in front (after
    the library function's own name, which the command line drops): a warning of one
    tag's or one data set's estimate (a zero-width interval, too few documents to
    resample) had not said which it was of.

    Example:
        >>> import warnings
        >>> def estimate():
        ...     warnings.warn("3 groups; at least 10 are needed for an interval")
        ...     return 0.04
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     named_warnings("LitBank", estimate)
        0.04
        >>> str(caught[0].message)
        'LitBank: 3 groups; at least 10 are needed for an interval'
        >>> def interval():
        ...     warnings.warn("calibration_error_ci: 5 pairs; at least 10 are needed")
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     named_warnings("tag NN", interval)
        >>> str(caught[0].message)
        'calibration_error_ci: tag NN: 5 pairs; at least 10 are needed'
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = score(*args, **kwargs)
    for said in caught:
        function, rest = split_function_name(str(said.message))
        warnings.warn(f"{function}{name}: {rest}", said.category, stacklevel=2)
    return result


def write_json(path: str | Path, results: Any) -> Path:
    """Write ``results`` as indented JSON (tensors become lists), creating folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, json.dumps(to_jsonable(results), indent=2) + "\n")


def write_text(path: Path, text: str, option: str = "--out") -> Path:
    """Write one of ``option``'s files (results.md, results.json): a failure while writing
    (a full disk) names the file, as the command line's own outputs do
    (:func:`calib_metrics.predictions.writing_output`)."""
    from calib_metrics.predictions import writing_output

    with writing_output(path, option) as target:
        target.write_text(text)
    return path


def output_folder(path: str | Path, option: str = "--out", *, exists: bool = False) -> Path:
    """``option``'s folder to write into, checked before any work: an existing file, or
    a path under one, is refused (they had failed only after training, with a raw
    ``[Errno 17]`` or ``[Errno 20]``), and with ``exists=True`` a folder that does not
    exist (one the command does not make). The folder itself is made later, once the data
    are read, so that a run stopped by missing data leaves nothing behind.

    Example:
        >>> import tempfile, os
        >>> file = os.path.join(tempfile.mkdtemp(), "results.json")
        >>> _ = open(file, "w").write("{}")
        >>> output_folder(file)
        Traceback (most recent call last):
        ...
        ValueError: --out ...results.json: a file, not a folder
    """
    path = Path(path)
    _refuse_broken_links(path, option)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{option} {path}: a file, not a folder")
    for parent in path.absolute().parents:
        if parent.exists():  # the nearest existing one decides: all above it are folders
            if not parent.is_dir():
                raise ValueError(f"{option} {path}: {parent} is a file, not a folder")
            break
    # Before the probe: a missing --img under /proc had been "cannot be written (No such
    # file or directory)", the probe's error in the folder above.
    if exists and not path.exists():
        raise ValueError(f"{option} {path}: does not exist (make the folder first)")
    check_writable_folder(path, option)
    return path


def _refuse_broken_links(path: Path, option: str) -> None:
    """Refuse ``path``, or a path under a link, that is a link to nothing (a missing
    target, a loop): it had passed the checks and failed after the data were read, with
    a raw ``[Errno 17] File exists`` when the folder was made."""
    absolute = path.absolute()
    for link in (absolute, *absolute.parents):
        if link.is_symlink() and not link.exists():
            target = os.readlink(link)
            raise ValueError(
                f"{option} {path}: {link} is a broken link to {target} "
                "(its target is missing, or a loop)"
            )


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats are printed with 4 decimals, and a ``|`` inside a
    cell is escaped (it would split the cell).

    Example:
        >>> print(markdown_table(["model", "mean |q - y|"], [["HMM", 0.12345]]))
        | model | mean \\|q - y\\| |
        |---|---|
        | HMM | 0.1235 |
    """

    def cell(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            v = v.item()
        return (f"{v:.4f}" if isinstance(v, float) else str(v)).replace("|", "\\|")

    lines = ["| " + " | ".join(map(cell, headers)) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def format_interval(
    error: float,
    lower: float,
    upper: float,
    digits: int = 4,
    units: str = "units",
    resampled: bool = True,
) -> str:
    """``0.0123 [0.0101, 0.0145]``, the way every table prints an error with its interval;
    where too few ``units`` were resampled for one (NaN ends; too few of them for
    Algorithm 2, which resamples none, where not ``resampled``), what the library's
    reports write instead.

    Example:
        >>> format_interval(0.01234, 0.0101, 0.0145)
        '0.0123 [0.0101, 0.0145]'
        >>> format_interval(0.1423, float("nan"), float("nan"), units="documents")
        '0.1423, no interval (fewer than 10 resampled documents)'
    """
    missing = no_interval(lower, upper, units, resampled)
    if missing:
        return f"{error:.{digits}f}, {missing}"
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
