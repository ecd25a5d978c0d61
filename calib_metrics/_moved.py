"""Old import paths of modules that moved, kept working with a ``DeprecationWarning``.

The paper's reproductions moved from ``calib_metrics.experiments``, ``calib_metrics.data``
and the top-level ``calib_metrics.events*`` modules into :mod:`calib_metrics.paper`, and
the prediction-file reader to :mod:`calib_metrics.predictions`. A finder on
``sys.meta_path`` answers the old names with the new modules themselves (one module
object under two names, so classes and state are shared), warning once per old name.
This is the only place besides :mod:`calib_metrics.cli` that names the paper package,
and it imports it only when an old path is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

_PAPER = "calib_metrics.paper"
MOVED: dict[str, str] = {
    "calib_metrics.experiments": _PAPER,
    **{
        f"calib_metrics.experiments.{name}": f"{_PAPER}.{name}"
        for name in ("pos", "coref", "coref_scores", "demo", "sentiment", "synthetic", "report")
    },
    "calib_metrics.experiments.events": f"{_PAPER}.events.experiment",
    "calib_metrics.data": f"{_PAPER}.locations",
    **{
        f"calib_metrics.data.{name}": f"{_PAPER}.{name}"
        for name in ("coref_conllu", "countries", "tagging", "tweets", "locations")
    },
    "calib_metrics.data.predictions": "calib_metrics.predictions",
    "calib_metrics.models.coref_features": f"{_PAPER}.coref_features",
    "calib_metrics.events": f"{_PAPER}.events.analysis",
    "calib_metrics.events_errors": f"{_PAPER}.events.errors",
    "calib_metrics.events_stats": f"{_PAPER}.events.stats",
}


# Old packages whose new home is a plain module: they get a namespace of the module's
# public names and an empty __path__, so their old submodules still resolve here.
_OLD_PACKAGES = {"calib_metrics.data"}
# Any other module under an old package is the paper's module of that name: the old
# package's __path__ would otherwise load it a second time, as a second module object.
_OLD_PREFIXES = ("calib_metrics.experiments.", "calib_metrics.data.")


def _new_name(fullname: str) -> str | None:
    """Where an old module name lives now, or None when it is not an old name."""
    if fullname in MOVED:
        return MOVED[fullname]
    for prefix in _OLD_PREFIXES:
        if fullname.startswith(prefix):
            candidate = f"{_PAPER}.{fullname[len(prefix) :]}"
            return candidate if importlib.util.find_spec(candidate) is not None else None
    return None


def _message(old: str, new: str) -> str:
    if old in _OLD_PACKAGES:  # its modules went to the paper, its own names to ``new``
        return f"{old} moved: its modules to {_PAPER}, its own names to {new}"
    return f"{old} moved to {new}"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and loads it as the module it moved to."""

    def find_spec(self, fullname, path=None, target=None):
        new = _new_name(fullname)
        if new is None:
            return None
        is_package = fullname in _OLD_PACKAGES or hasattr(importlib.import_module(new), "__path__")
        return importlib.machinery.ModuleSpec(fullname, self, is_package=is_package)

    def create_module(self, spec) -> ModuleType:
        new = _new_name(spec.name)
        assert new is not None  # find_spec found it
        warnings.warn(
            f"{_message(spec.name, new)}; the old path will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        if spec.name not in _OLD_PACKAGES:
            return module
        namespace = ModuleType(spec.name, module.__doc__)
        namespace.__dict__.update({k: getattr(module, k) for k in module.__all__})
        namespace.__path__ = []
        return namespace

    def exec_module(self, module: ModuleType) -> None:
        """The new module is already executed."""


def install() -> None:
    """Put the alias finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
