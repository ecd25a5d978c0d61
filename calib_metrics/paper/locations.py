"""Where the open data sets live.

Nothing is downloaded and nothing is bundled: a reader takes a path. When the caller
gives none (``--data DIR`` on the command line), :func:`shared_data_dir` takes the
``CALIB_METRICS_DATA`` environment variable, else the ``shared/data`` folder beside a
source checkout (``<checkout>/../shared/data``, found from this package's own
location). Nothing else is searched: not the working directory's parents, not
site-packages.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "ENV_VAR",
    "data_file",
    "data_help",
    "find_dataset",
    "missing_data",
    "shared_data_dir",
    "where_to_get",
]

ENV_VAR = "CALIB_METRICS_DATA"


def data_help(what: str = "the folder holding the data sets, or the data set's own") -> str:
    """``--data``'s help in every experiment: ``what`` it takes, then where it is looked
    for when not given, in :func:`find_dataset`'s order.

    Example:
        >>> data_help("a CoNLL-U file")
        'a CoNLL-U file (default: $CALIB_METRICS_DATA when set, else shared/data beside a source checkout)'
    """  # noqa: E501
    return f"{what} (default: ${ENV_VAR} when set, else shared/data beside a source checkout)"


def _checkout_root() -> Path | None:
    """The source checkout holding this package, or None for an installed copy."""
    root = Path(__file__).resolve().parents[2]  # <root>/calib_metrics/paper/locations.py
    return root if (root / "pyproject.toml").is_file() else None


def _installed_note() -> str:
    """For a copy installed with ``pip install .`` (not ``-e``): the checkout beside the
    data is not where this package runs from, which the message had left to be guessed
    (run from inside a clone, it said "no shared/data beside a source checkout")."""
    if _checkout_root() is not None:
        return ""
    return (
        f": this calib_metrics is an installed copy ({Path(__file__).resolve().parents[1]}), "
        "not a source checkout"
    )


def shared_data_dir() -> Path | None:
    """The folder holding the shared data sets, or ``None`` when there is none.

    ``$CALIB_METRICS_DATA`` when set (None if it is not a folder), else
    ``<checkout>/../shared/data`` when this package runs from a source checkout.

    Example:
        >>> import os
        >>> found = shared_data_dir()
        >>> found is None or found.is_dir()
        True
    """
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env).expanduser()
        return path if path.is_dir() else None
    root = _checkout_root()
    if root is None:
        return None
    beside = root.parent / "shared" / "data"
    return beside if beside.is_dir() else None


def find_dataset(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Resolve a data-set folder by name (e.g. ``"ud-english-ewt"``).

    ``data_dir`` may be the data set's own folder or the folder that holds it.
    Raises ``FileNotFoundError`` with the places it looked when nothing is found.

    Example:
        >>> try:
        ...     find_dataset("no-such-set", data_dir="/nonexistent")
        ... except FileNotFoundError as err:
        ...     print("not found")
        not found
    """
    tried: list[Path] = []
    source = ""  # where the folder looked in came from, when not from data_dir
    if data_dir is not None:
        base = Path(data_dir).expanduser()
        if base.is_file():
            raise FileNotFoundError(
                f"data set {name!r} not found: {base} is a file, not a folder (pass the "
                "folder that holds the data sets, or the data set's own folder)"
            )
        tried += [base / name, base]
        if (base / name).is_dir():
            return base / name
        if base.is_dir():
            return base
    else:
        env = os.environ.get(ENV_VAR)
        if env and not Path(env).expanduser().is_dir():
            raise FileNotFoundError(
                f"data set {name!r} not found: ${ENV_VAR}={env} is not a folder "
                "(set it to the folder that holds the data sets, or pass --data)"
            )
        root = shared_data_dir()
        if root is not None:
            tried.append(root / name)
            source = f" (from ${ENV_VAR})" if env else " (the checkout's ../shared/data)"
            if (root / name).is_dir():
                return root / name
    where = ", ".join(str(p) for p in tried) or (
        f"--data not given, ${ENV_VAR} unset, no shared/data beside a source checkout"
        + _installed_note()
    )
    raise FileNotFoundError(
        f"data set {name!r} not found (looked in: {where}{source}); {where_to_get(name)}"
    )


def where_to_get(dataset: str) -> str:
    """Where a data set is expected and where to learn how to get it, for an error.

    Example:
        >>> print(where_to_get("ud-english-ewt"))
        expected as <data>/ud-english-ewt/; the README's "Data" section says where to get it
    """
    return f'expected as <data>/{dataset}/; the README\'s "Data" section says where to get it'


def missing_data(folder: Path, dataset: str, wanted: str) -> FileNotFoundError:
    """The error for ``wanted`` (a file name, or a description) missing from ``folder``.

    ``folder`` is what :func:`find_dataset` returned: the data set's own folder, or the
    base folder it falls back to, where the data set's subfolder is what was missing.

    Example:
        >>> print(missing_data(Path("/d"), "ud-english-ewt", "en_ewt-ud-train.conllu.gz"))
        no ud-english-ewt/ folder in /d (nor en_ewt-ud-train.conllu.gz in it); expected as ...
        >>> print(missing_data(Path("/d/ud-english-ewt"), "ud-english-ewt", "x.gz"))
        no x.gz in /d/ud-english-ewt; expected as <data>/ud-english-ewt/; the README's ...
    """
    # find_dataset falls back to the base folder (for --data naming the set's own folder
    # under another name), so a missing subfolder would otherwise read as a missing file.
    if folder.name == dataset:
        place = f"no {wanted} in {folder}"
    else:
        place = f"no {dataset}/ folder in {folder} (nor {wanted} in it)"
    return FileNotFoundError(f"{place}; {where_to_get(dataset)}")


def data_file(folder: Path, dataset: str, names: Sequence[str]) -> Path:
    """The first of ``names`` that is a file in ``folder``, else :func:`missing_data`'s error.

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> _ = (d / "b.conllu").write_text("")
        >>> data_file(d, "set", ["b.conllu.gz", "b.conllu"]).name
        'b.conllu'
    """
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise missing_data(folder, dataset, " or ".join(names))
