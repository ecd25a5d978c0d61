"""Posterior summaries of event counts: sampled intervals and the exact Poisson-binomial.

Two views of the same posterior ``P(n(t, c) | x)`` (paper Eq. 5):

* **Sampled** (the paper's): ``n^(s)`` for ``s = 1..S`` coreference samples; the
  mean ``m`` and standard deviation ``s`` over samples, the normal interval
  ``m -/+ 1.96 s`` and the percentile interval. Subject to Monte Carlo error
  (``s / sqrt(S)`` for the mean).
* **Poisson-binomial**: documents are independent given their own posteriors, so
  ``n(t, c)`` is a sum of independent Bernoullis with success probabilities
  ``a(d, c) = P(a(d, c, e_d) = 1 | x_d)``; its distribution is exact given those
  probabilities and is computed by a convolution dynamic program.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.errors import check_int
from calib_metrics.functional.intervals import normal_quantile

__all__ = [
    "CountDistribution",
    "PosteriorSummary",
    "poisson_binomial_pmf",
    "poisson_binomial_summary",
    "sample_summary",
]


class PosteriorSummary(NamedTuple):
    """Summary of sampled counts; every field has the shape of one sample of counts."""

    mean: Tensor
    std: Tensor
    normal_lower: Tensor
    normal_upper: Tensor
    percentile_lower: Tensor
    percentile_upper: Tensor


class CountDistribution(NamedTuple):
    """Summary of an exact count distribution (Poisson-binomial)."""

    pmf: Tensor
    mean: Tensor
    var: Tensor
    lower: Tensor
    upper: Tensor


def sample_summary(samples: Tensor, confidence: float = 0.95) -> PosteriorSummary:
    """Mean, std, normal interval ``m -/+ z s`` and percentile interval over dim 0.

    The normal interval is the paper's (``z = 1.96`` at 95%); it can dip below zero
    for small counts, which the percentile interval never does. ``std`` is the
    population standard deviation of the samples (``unbiased=False``), so a single
    sample gives zero width.

    The percentile interval's ends are sample values, never interpolated between
    two: the smallest values whose empirical cdf reaches ``(1 - confidence) / 2``
    and ``(1 + confidence) / 2`` (the inverse of the empirical cdf, the same rule as
    :func:`poisson_binomial_summary`'s exact interval). Counts thus get whole-count
    ends, and the interval holds at least ``confidence`` of the samples (fewer than
    ``(1 - confidence) / 2`` lie below it, at most that many above).

    Example:
        >>> s = sample_summary(torch.tensor([[1.0], [2.0], [3.0], [2.0]]))
        >>> s.mean, s.std.round(decimals=4)
        (tensor([2.]), tensor([0.7071]))
        >>> s.percentile_lower, s.percentile_upper
        (tensor([1.]), tensor([3.]))
        >>> s = sample_summary(torch.tensor([0] * 97 + [1] * 3))  # 3% of samples are 1
        >>> s.percentile_lower.item(), s.percentile_upper.item()
        (0.0, 1.0)
    """
    _check_tensor("samples", samples)
    if samples.ndim < 1 or samples.shape[0] == 0:
        raise ValueError("samples must have a non-empty leading sample dim")
    if samples.is_complex() or (samples.is_floating_point() and not samples.isfinite().all()):
        # A NaN sample had given NaN means and std beside a finite percentile end.
        raise ValueError("samples must be real and finite (they hold NaN or infinity)")
    z = normal_quantile(confidence)
    x = samples.double()
    mean = x.mean(0)
    # No cells (no period or no country): torch's std of an empty reduction warns that
    # it has no degrees of freedom, and returns the same empty tensor as this.
    std = x.std(0, unbiased=False) if x.numel() else torch.zeros_like(mean)
    alpha = (1.0 - confidence) / 2.0
    n = x.shape[0]
    # The k-th smallest sample has empirical cdf (k + 1) / n; an end is the first
    # sample whose cdf reaches its level. The tolerance keeps rounding in
    # 1 - confidence from moving an end by one sample when the level is hit exactly.
    cdf = torch.arange(1, n + 1, dtype=torch.float64) / n
    tol = 1e-12
    k_lo = int((cdf < alpha - tol).sum())
    k_hi = min(int((cdf < 1.0 - alpha - tol).sum()), n - 1)
    ordered = x.sort(0).values
    lo, hi = ordered[k_lo], ordered[k_hi]
    # Counts' means and spreads in float64: a float32 mean of 77 in 1000 was written to
    # results.json as 0.07699999958276749, and counts past 2**24 lost their last digits.
    dtype = samples.dtype if samples.is_floating_point() else torch.float64
    out = (mean, std, mean - z * std, mean + z * std, lo, hi)
    return PosteriorSummary(*(t.to(dtype) for t in out))


def poisson_binomial_pmf(probs: Tensor, max_count: int | None = None) -> Tensor:
    """Exact pmf of ``sum_j Bernoulli(p_j)`` for every row of ``probs [M, L]``: ``[M, L + 1]``,
    or ``[M, max_count + 1]`` (counts ``0..max_count``) when ``max_count < L`` is given.

    Rows are padded with zeros (a ``p = 0`` term changes nothing). The terms' pmfs
    ``[1 - p, p]`` are multiplied as polynomials two at a time, halving their number at
    each step: ``log2 L`` steps, each vectorised over rows and pairs but a loop over the
    coefficients kept (about ``1.6 L`` small operations in all for a full pmf, as many
    as a loop over the terms, but each on the halved terms at once), in float64: every
    coefficient is a sum of non-negative products, so it is stable. A count's probability
    needs only the factors' coefficients up to that count, so ``max_count`` cuts every
    product there and the counts kept are exact; the mass above them is dropped (a row
    sums to less than 1). A sum of 10^5 small probabilities then costs
    ``O(L * max_count)``, not ``O(L^2)``.

    Example:
        >>> poisson_binomial_pmf(torch.tensor([[0.5, 0.5], [1.0, 0.0]]))
        tensor([[0.2500, 0.5000, 0.2500],
                [0.0000, 1.0000, 0.0000]], dtype=torch.float64)
        >>> poisson_binomial_pmf(torch.tensor([[0.5, 0.5]]), max_count=1)
        tensor([[0.2500, 0.5000]], dtype=torch.float64)
    """
    _check_tensor("probs", probs)
    if probs.ndim != 2:
        raise ValueError(f"probs must be [M, L], got shape {tuple(probs.shape)}")
    if probs.numel() and (torch.isnan(probs).any() or (probs < 0).any() or (probs > 1).any()):
        raise ValueError("probs must lie in [0, 1] (no NaN)")
    if max_count is not None:
        check_int("max_count", max_count, 0)
    p = probs.double()
    m, length = p.shape
    width = length + 1 if max_count is None else min(max_count, length) + 1
    # [M, L, 2]: one pmf per term; no term: the count 0, surely.
    pmf = torch.stack([1.0 - p, p], -1) if length else p.new_ones(m, 1, 1)
    while pmf.shape[1] > 1:
        if pmf.shape[1] % 2:  # the odd one out is paired with no term: a count of 0
            none = torch.zeros_like(pmf[:, :1])
            none[..., 0] = 1.0
            pmf = torch.cat([pmf, none], 1)
        pmf = _product(pmf[:, 0::2], pmf[:, 1::2], width)
    return pmf[:, 0, :width]


def _product(a: Tensor, b: Tensor, width: int) -> Tensor:
    """The first ``width`` coefficients of the polynomial products ``a * b`` (last dim)."""
    wa, wb = a.shape[-1], b.shape[-1]
    out = a.new_zeros(*a.shape[:-1], min(wa + wb - 1, width))
    for i in range(min(wa, width)):
        k = min(wb, width - i)
        out[..., i : i + k] += a[..., i : i + 1] * b[..., :k]
    return out


def poisson_binomial_summary(probs: Tensor, confidence: float = 0.95) -> CountDistribution:
    """Pmf, mean ``sum p``, variance ``sum p (1 - p)`` and the exact quantile interval.

    ``lower`` / ``upper`` are the smallest counts whose cdf reaches ``(1 - confidence) / 2``
    and ``(1 + confidence) / 2``, so the interval holds at least ``confidence`` mass.

    Example:
        >>> d = poisson_binomial_summary(torch.tensor([[0.5, 0.5, 0.5, 0.5]]))
        >>> d.mean.item(), d.var.item(), d.lower.item(), d.upper.item()
        (2.0, 1.0, 0, 4)
    """
    normal_quantile(confidence)  # validates confidence
    _check_tensor("probs", probs)
    pmf = poisson_binomial_pmf(probs)
    p = probs.double()
    cdf = pmf.cumsum(-1)
    alpha = (1.0 - confidence) / 2.0
    # A small tolerance so that rounding in the cumulative sum does not push a
    # quantile one count up when the cdf hits the level exactly.
    tol = 1e-12
    lower = (cdf < alpha - tol).sum(-1)
    upper = (cdf < 1.0 - alpha - tol).sum(-1).clamp(max=pmf.shape[-1] - 1)
    return CountDistribution(pmf, p.sum(-1), (p * (1 - p)).sum(-1), lower, upper)


def _check_tensor(name: str, value: object) -> None:
    if not isinstance(value, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
