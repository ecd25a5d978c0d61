"""Pure tensor functions: binning, calibration error and its interval, Brier split.

Every interval comes from one pipeline (:mod:`calib_metrics.functional.intervals`): a
draw generator (the paper's Algorithm 2, the Poisson bootstrap over pairs, or over
groups) yields resampled bins, one reduction turns bins into errors, one summary gives a
:class:`CalibrationResult`. Nothing here keeps state, draws figures or imports anything
but torch.

The estimators are evaluation measures, not losses: they treat the probabilities as data
(sorting, binning and several in-place kernels), so their results carry no autograd
history even when ``probs.requires_grad`` is set, as torchmetrics' calibration errors do
not. The same holds for the estimators of given bins (:func:`error_from_bins`,
:func:`ci_from_bins`, :func:`pair_bootstrap`, :func:`group_bootstrap`) and of a histogram
(:func:`smooth_calibration_from_histogram`): their inputs are detached on entry.
(:func:`holm_adjust` and :func:`bh_adjust` are arithmetic on p-values, not estimators:
they keep their input's dtype and graph.) To train for calibration, fit a recalibrator
(:mod:`calib_metrics.recalibration`).
"""

from calib_metrics.functional.auto_bin import auto_bin_size
from calib_metrics.functional.binning import Bins, adaptive_binning, uniform_binning
from calib_metrics.functional.calibration import (
    BrierDecomposition,
    CalibrationResult,
    brier_decomposition,
    calibration_error,
    calibration_error_ci,
    ci_from_bins,
    error_from_bins,
)
from calib_metrics.functional.comparison import ComparisonResult, compare_calibration
from calib_metrics.functional.comparison_by_label import (
    LabelComparisonResult,
    bh_adjust,
    compare_calibration_by_label,
    holm_adjust,
)
from calib_metrics.functional.errors import NoPairsError
from calib_metrics.functional.intervals import group_bootstrap, pair_bootstrap
from calib_metrics.functional.smooth import (
    SmoothCurve,
    smooth_calibration_error,
    smooth_calibration_from_histogram,
    smooth_curve_from_histogram,
    smooth_reliability_curve,
)
from calib_metrics.functional.spiegelhalter import SpiegelhalterResult, spiegelhalter_test

__all__ = [
    "Bins",
    "BrierDecomposition",
    "CalibrationResult",
    "ComparisonResult",
    "LabelComparisonResult",
    "NoPairsError",
    "SmoothCurve",
    "SpiegelhalterResult",
    "adaptive_binning",
    "auto_bin_size",
    "bh_adjust",
    "brier_decomposition",
    "calibration_error",
    "calibration_error_ci",
    "ci_from_bins",
    "compare_calibration",
    "compare_calibration_by_label",
    "error_from_bins",
    "group_bootstrap",
    "holm_adjust",
    "pair_bootstrap",
    "smooth_calibration_error",
    "smooth_calibration_from_histogram",
    "smooth_curve_from_histogram",
    "smooth_reliability_curve",
    "spiegelhalter_test",
    "uniform_binning",
]
