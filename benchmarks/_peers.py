"""Peers that do not import as they are installed: shared by the benchmarks and the tests
that time or check against them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

# The name torch-uncertainty's calibration modules are loaded under.
TORCH_UNCERTAINTY_CALIBRATION = "_torch_uncertainty_calibration"


def torch_uncertainty_calibration() -> ModuleType | None:
    """torch-uncertainty's calibration metrics, loaded by path as a package of their own
    (None where torch-uncertainty is not installed): its top-level ``__init__`` imports
    packages it does not declare (torchvision, rich), which these modules do not need.
    A module that fails to load raises, and is not left half-loaded in ``sys.modules``."""
    spec = importlib.util.find_spec("torch_uncertainty")
    if spec is None:
        return None
    path = Path(spec.submodule_search_locations[0]) / "metrics" / "classification"
    path = path / "calibration"
    name = TORCH_UNCERTAINTY_CALIBRATION
    if name not in sys.modules:
        package_spec = importlib.util.spec_from_file_location(
            name, path / "__init__.py", submodule_search_locations=[str(path)]
        )
        package = importlib.util.module_from_spec(package_spec)
        sys.modules[name] = package  # its modules import each other relatively
        try:
            package_spec.loader.exec_module(package)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    return sys.modules[name]
