"""calib_metrics: can your model's probabilities be trusted?

Posterior calibration analysis after Nguyen & O'Connor (EMNLP 2015): adaptive-binning
RMS calibration error with sampled intervals, reliability diagrams, a streaming and
DDP-ready torchmetrics metric, and reference NLP models whose marginals feed it.
"""

from calib_metrics.functional.binning import Bins
from calib_metrics.functional.calibration import BrierDecomposition, CalibrationResult
from calib_metrics.metric import CalibrationError

__version__ = "0.1.0"

__all__ = ["Bins", "BrierDecomposition", "CalibrationError", "CalibrationResult", "__version__"]
