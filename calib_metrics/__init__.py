"""calib_metrics: can your model's probabilities be trusted?

Posterior calibration analysis after Nguyen & O'Connor (EMNLP 2015): adaptive-binning
RMS calibration error with sampled intervals, reliability diagrams, a streaming and
DDP-ready torchmetrics metric, and reference NLP models whose marginals feed it.

The top-level names are imported on first use (PEP 562), so that
``import calib_metrics.functional`` costs torch alone: torchmetrics (which pulls
matplotlib and scipy) is imported when :class:`CalibrationError` is first touched.

Example:
    >>> import calib_metrics
    >>> calib_metrics.CalibrationError.__name__
    'CalibrationError'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from calib_metrics import _moved

__version__ = "0.1.0"

# name -> module that defines it
_LAZY = {
    "Bins": "calib_metrics.functional.binning",
    "BrierDecomposition": "calib_metrics.functional.calibration",
    "CalibrationResult": "calib_metrics.functional.calibration",
    "CalibrationComparison": "calib_metrics.metric_compare",
    "CalibrationError": "calib_metrics.metric",
    "NoPairsError": "calib_metrics.functional.errors",
    "SAFE_GLOBALS": "calib_metrics.functional.saved",
}

__all__ = [
    "SAFE_GLOBALS",
    "Bins",
    "BrierDecomposition",
    "CalibrationComparison",
    "CalibrationError",
    "CalibrationResult",
    "NoPairsError",
    "__version__",
]

if TYPE_CHECKING:
    from calib_metrics.functional.binning import Bins
    from calib_metrics.functional.calibration import BrierDecomposition, CalibrationResult
    from calib_metrics.functional.errors import NoPairsError
    from calib_metrics.functional.saved import SAFE_GLOBALS
    from calib_metrics.metric import CalibrationError
    from calib_metrics.metric_compare import CalibrationComparison

_moved.install()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module 'calib_metrics' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
