"""The paired comparison of calibration before and after recalibration, on the same items."""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["compare_before_after"]


def compare_before_after(
    before: Tensor,
    after: Tensor,
    target: Tensor,
    groups: Tensor | None = None,
    *,
    confidence: float = 0.95,
    n_samples: int = 2000,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    """Error(before) - error(after) on the same test items, with its paired interval.

    The debiased CalibErr (``bin_size="auto"``) of both, from one resampling of the pairs
    (or of whole groups) shared by both; returns ``difference``, ``lower``, ``upper`` and
    ``p_value`` (two-sided, of "no difference").

    The one place that calls :func:`calib_metrics.functional.compare_calibration`; until it
    is in the library, a recentred paired bootstrap of the debiased error (the same resampled
    pairs or groups for both, ``bin_size`` fixed at ``⌈√N⌉``) stands in.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(2000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> worse = (q + 0.2).clamp(max=1)
        >>> d = compare_before_after(worse, q, y, confidence=0.95, n_samples=200,
        ...                          generator=torch.Generator().manual_seed(0))
        >>> bool(d["lower"] > 0)
        True
    """
    if before.shape != after.shape or before.shape != target.shape:
        raise ValueError(
            f"before, after and target must have one shape, got {tuple(before.shape)}, "
            f"{tuple(after.shape)} and {tuple(target.shape)}"
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int, got {n_samples!r}")
    try:
        from calib_metrics.functional import compare_calibration
    except ImportError:
        return _paired_bootstrap(before, after, target, groups, confidence, n_samples, generator)
    result = compare_calibration(
        before, after, target, groups=groups, confidence=confidence, generator=generator,
        n_samples=n_samples, bin_size="auto", debias=True,
    )  # fmt: skip
    return {
        "difference": float(result.difference),
        "lower": float(result.lower),
        "upper": float(result.upper),
        "p_value": float(result.p_value),
    }


def _paired_bootstrap(before, after, target, groups, confidence, n_samples, generator):
    from calib_metrics.functional import calibration_error

    n = target.numel()
    bin_size = max(1, math.ceil(math.sqrt(n)))  # "auto" at the original N, kept fixed

    def difference(idx: Tensor) -> float:
        a = calibration_error(before[idx], target[idx], bin_size=bin_size, debias=True)
        b = calibration_error(after[idx], target[idx], bin_size=bin_size, debias=True)
        return float(a - b)

    if groups is None:
        draws = [difference(torch.randint(n, (n,), generator=generator)) for _ in range(n_samples)]
    else:
        order = groups.argsort()
        members = torch.split(order, torch.bincount(groups).tolist())
        n_groups = len(members)
        draws = []
        for _ in range(n_samples):
            pick = torch.randint(n_groups, (n_groups,), generator=generator).tolist()
            draws.append(difference(torch.cat([members[g] for g in pick])))
    observed = difference(torch.arange(n))
    # Recentred (basic) bootstrap: resampling with repeats shifts the debiased error, so the
    # draws' spread around their own mean is laid around the observed difference.
    spread = torch.tensor(draws, dtype=torch.float64)
    spread = spread - spread.mean()
    alpha = (1 - confidence) / 2
    quantiles = torch.tensor([alpha, 1 - alpha], dtype=torch.float64)
    lower, upper = observed + torch.quantile(spread, quantiles)
    p_value = float((spread.abs() >= abs(observed)).double().mean())
    return {"difference": observed, "lower": float(lower), "upper": float(upper),
            "p_value": p_value}  # fmt: skip
