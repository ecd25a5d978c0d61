"""Recalibrators fitted on held-out data, for classifiers and structured models.

Classifiers (multiclass logits or binary scores): :class:`TemperatureScaling`,
:class:`VectorScaling`, :class:`MatrixScaling`, :class:`PlattScaling`,
:class:`HistogramBinning`, :class:`IsotonicCalibration`, :class:`ScalingBinning`.
Structured models: :class:`ChainTemperature` (linear chains: HMM, CRF) and
:class:`CorefTemperature` (antecedent rankers). For a black-box structured model, fit any
binary recalibrator on its ``queries`` output ``(q, y)`` (:func:`fit_binary`,
``PlattScaling(inputs="probs")``, ...): the query level needs nothing more.

Each is an ``nn.Module``: ``fit(dev...) -> self``, then call it (or ``marginals``); fitting
runs in float64 with gradients on, also when called under ``torch.inference_mode``.
See ``docs/recalibration.md``.
"""

from calib_metrics.recalibration.binary import BINARY_METHODS, fit_binary
from calib_metrics.recalibration.binning import (
    HistogramBinning,
    IsotonicCalibration,
    ScalingBinning,
)
from calib_metrics.recalibration.compare import compare_before_after
from calib_metrics.recalibration.scaling import (
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)
from calib_metrics.recalibration.structured import ChainTemperature, CorefTemperature

__all__ = [
    "BINARY_METHODS",
    "ChainTemperature",
    "CorefTemperature",
    "HistogramBinning",
    "IsotonicCalibration",
    "MatrixScaling",
    "PlattScaling",
    "ScalingBinning",
    "TemperatureScaling",
    "VectorScaling",
    "compare_before_after",
    "fit_binary",
]
