"""The paired comparison of calibration before and after recalibration, on the same items."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from calib_metrics.functional import compare_calibration
from calib_metrics.functional.binning import check_probs
from calib_metrics.functional.errors import check_dense, check_generator

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
    (or of whole groups) shared by both; returns ``difference``, ``lower``, ``upper``,
    ``p_value`` (two-sided, of "no difference"; 0 when no draw reached 0, i.e. below
    2/``n_samples``) and ``n_samples``.

    The recalibration code's one call of
    :func:`calib_metrics.functional.compare_calibration` (debiased, ``bin_size="auto"``).

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
    check_generator(generator)
    for name, value in (("before", before), ("after", after), ("target", target)):
        if not isinstance(value, Tensor):
            raise ValueError(f"{name} must be a tensor, got {type(value).__name__}")
        check_dense(value, name)  # before any shape is read
    check_probs(before, "before")
    check_probs(after, "after")
    if before.shape != after.shape or before.shape != target.shape:
        raise ValueError(
            f"before, after and target must have one shape, got {tuple(before.shape)}, "
            f"{tuple(after.shape)} and {tuple(target.shape)}"
        )
    # confidence and n_samples are compare_calibration's to check (and name alike); its
    # warnings said again at the caller's line, as this function's (they had pointed here).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compare_calibration(
            before, after, target, groups=groups, confidence=confidence, generator=generator,
            n_samples=n_samples, bin_size="auto", debias=True,
        )  # fmt: skip
    for said in caught:
        text = str(said.message).replace("compare_calibration: ", "compare_before_after: ", 1)
        warnings.warn(text, said.category, stacklevel=2)
    return {
        "difference": float(result.difference),
        "lower": float(result.lower),
        "upper": float(result.upper),
        "p_value": float(result.p_value),
        "n_samples": n_samples,
    }
