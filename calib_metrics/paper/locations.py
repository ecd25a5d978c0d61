"""Where the open data sets live.

Nothing is downloaded and nothing is bundled: a reader takes a path, and when the
caller gives none, :func:`shared_data_dir` looks at the ``CALIB_METRICS_DATA``
environment variable, then for a ``shared/data`` folder beside (or above) the
working directory, as in a checkout that sits next to ``../shared/data``.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "CALIB_METRICS_DATA"


def shared_data_dir() -> Path | None:
    """The folder holding the shared data sets, or ``None`` when there is none.

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
    here = Path.cwd().resolve()
    package_root = Path(__file__).resolve().parents[2]
    for start in (here, package_root):
        for folder in (start, *start.parents):
            candidate = folder / "shared" / "data"
            if candidate.is_dir():
                return candidate
            sibling = folder.parent / "shared" / "data"
            if sibling.is_dir():
                return sibling
    return None


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
    if data_dir is not None:
        base = Path(data_dir).expanduser()
        tried += [base / name, base]
        if (base / name).is_dir():
            return base / name
        if base.is_dir():
            return base
    else:
        root = shared_data_dir()
        if root is not None:
            tried.append(root / name)
            if (root / name).is_dir():
                return root / name
    where = ", ".join(str(p) for p in tried) or f"${ENV_VAR} unset and no shared/data found"
    raise FileNotFoundError(f"data set {name!r} not found (looked in: {where})")
