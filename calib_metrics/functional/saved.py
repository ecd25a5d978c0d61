"""The classes a saved result is made of, for ``torch.load(path, weights_only=True)``.

``weights_only=True`` (torch's default since 2.6) unpickles only the classes it is told to
trust. A result holds more than its documented class: a drawn interval's result is a
private subclass that carries its :class:`~calib_metrics.functional.intervals.IntervalKind`
(and its norm and number of draws),
and the library's adaptive bins carry the tie groups their boundaries cut. Allowlisting
the documented classes alone therefore fails; :data:`SAFE_GLOBALS` (also
``calib_metrics.SAFE_GLOBALS``) names every class of the results the functional layer and
the metrics return, and nothing that runs code. The example's
``torch.serialization.safe_globals`` needs torch 2.5 or later (``add_safe_globals``,
from 2.4); torch before 2.4 allowlists no class.

Example:
    >>> import io
    >>> import torch
    >>> from calib_metrics.functional import calibration_error_ci
    >>> g = torch.Generator().manual_seed(0)
    >>> q = torch.rand(500, generator=g)
    >>> result = calibration_error_ci(q, torch.bernoulli(q, generator=g), n_samples=100)
    >>> buffer = io.BytesIO()
    >>> torch.save(result, buffer)
    >>> _ = buffer.seek(0)
    >>> with torch.serialization.safe_globals(SAFE_GLOBALS):
    ...     loaded = torch.load(buffer, weights_only=True)
    >>> bool(loaded.upper == result.upper), loaded.kind == result.kind
    (True, True)
"""

from __future__ import annotations

from calib_metrics.functional.binning import Bins, TiedBins
from calib_metrics.functional.calibration import BrierDecomposition
from calib_metrics.functional.comparison import ComparisonResult
from calib_metrics.functional.comparison_by_label import LabelComparisonResult
from calib_metrics.functional.intervals import CalibrationResult, IntervalKind, _DrawnResult
from calib_metrics.functional.smooth import SmoothCurve
from calib_metrics.functional.spiegelhalter import SpiegelhalterResult
from calib_metrics.functional.ties import TieCuts

SAFE_GLOBALS: tuple[type, ...] = (
    Bins,
    TiedBins,
    TieCuts,
    CalibrationResult,
    _DrawnResult,
    IntervalKind,
    BrierDecomposition,
    ComparisonResult,
    LabelComparisonResult,
    SmoothCurve,
    SpiegelhalterResult,
)
