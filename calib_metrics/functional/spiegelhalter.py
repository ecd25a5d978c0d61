"""Spiegelhalter's z test of calibration (Spiegelhalter, Statistics in Medicine, 1986).

Under the hypothesis that the predictions are calibrated (each yᵢ ~ Bernoulli(qᵢ),
independently), the Brier score B = Σ (yᵢ − qᵢ)² has mean Σ qᵢ(1 − qᵢ) and variance
Σ (1 − 2qᵢ)² qᵢ(1 − qᵢ). Since (y − q)² − q(1 − q) = (y − q)(1 − 2q) for y ∈ {0, 1},

    Z = Σ (yᵢ − qᵢ)(1 − 2qᵢ) / √( Σ (1 − 2qᵢ)² qᵢ(1 − qᵢ) ),

which is approximately standard normal under the hypothesis (a sum of independent
bounded terms), and the two-sided p-value is P(|N(0, 1)| ≥ |Z|) = erfc(|Z|/√2). Unlike a
binned error, the test needs no bins and no resampling. It is blind to miscalibration
that the weights (1 − 2q) cancel (e.g. errors of opposite sign on both sides of 1/2
that balance), and it assumes independent labels: labels correlated within sentences
or documents make it reject too often. Its size on calibrated synthetic data is
measured in ``benchmarks/coverage.py --spiegelhalter``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import _check_pairs
from calib_metrics.functional.multiclass import Mode, pair_sets


class SpiegelhalterResult(NamedTuple):
    """The z statistic and its two-sided p-value (0-dim float64 tensors)."""

    z: Tensor
    p_value: Tensor


def spiegelhalter_z(probs: Tensor, target: Tensor) -> Tensor:
    """Z of validated, flat pairs (batched over leading dimensions); NaN without variance."""
    q, y = probs.to(torch.float64), target.to(torch.float64)
    weight = 1 - 2 * q
    variance = (weight**2 * q * (1 - q)).sum(dim=-1)
    return ((y - q) * weight).sum(dim=-1) / variance.sqrt()


def spiegelhalter_test(
    probs: Tensor, target: Tensor, *, mode: Mode = "one_vs_rest"
) -> SpiegelhalterResult:
    """Spiegelhalter's two-sided z test of "the predictions are calibrated".

    Args:
        probs: predicted probabilities q in [0, 1] (binary, target's shape), or
            multiclass ``[..., C]`` with integer ``target [...]``.
        target: binary labels y, or class ids for multiclass probs.
        mode: ``"one_vs_rest"`` or ``"top_label"`` for multiclass input
            (``"classwise"`` would give C tests; pass one class's pairs instead).

    Returns:
        :class:`SpiegelhalterResult` (z, p_value); a small p-value is evidence of
        miscalibration. One host synchronisation (to check that the variance is
        positive).

    Raises:
        ValueError: on invalid input, or when every q is 0, 1/2 or 1 (the statistic
            has no variance under the hypothesis, so there is nothing to test).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(10000, generator=g, dtype=torch.float64)
        >>> result = spiegelhalter_test(q, torch.bernoulli(q, generator=g))
        >>> round(result.z.item(), 2), round(result.p_value.item(), 2)
        (0.96, 0.34)
        >>> overconfident = torch.bernoulli(0.5 + 0.8 * (q - 0.5), generator=g)
        >>> bool(spiegelhalter_test(q, overconfident).p_value < 1e-6)
        True
    """
    if mode == "classwise":
        raise ValueError("mode='classwise' gives one test per class: pass one class's pairs")
    probs, target, _ = pair_sets(probs, target, mode)[0]
    probs, target = _check_pairs(probs, target)
    z = spiegelhalter_z(probs, target)
    if not bool(torch.isfinite(z)):
        raise ValueError(
            "Spiegelhalter's test is undefined when every probability is 0, 1/2 or 1 "
            "(its statistic has no variance under calibration)"
        )
    return SpiegelhalterResult(z, torch.special.erfc(z.abs() / math.sqrt(2)))
