"""Brute-force numpy reference of the paper's Algorithms 1 and 2, used by the tests.

Written to be obviously right rather than fast: a full sort of all N pairs by
q, tie groups at their mean label, bins as consecutive runs of β with a short last run
merged into the one before, and explicit per-sample loops in float64. The tests
``import reference`` (pyproject's ``pythonpath`` puts tests/ on the path).

Example:
    >>> import numpy as np
    >>> q = np.array([0.1, 0.9, 0.1, 0.8, 0.2, 0.7])
    >>> bins = adaptive_bins(q, np.array([0, 1, 1, 1, 0, 0]), 2)
    >>> bins.pred_mean.round(4).tolist(), bins.freq.tolist(), bins.count.tolist()
    ([0.1, 0.45, 0.85], [0.5, 0.0, 1.0], [2, 2, 2])
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class RefBins(NamedTuple):
    """Per-bin mean prediction, label frequency and size, float64 / int64."""

    pred_mean: np.ndarray
    freq: np.ndarray
    count: np.ndarray


def _as_float64(probs, target) -> tuple[np.ndarray, np.ndarray]:
    q = np.asarray(probs, dtype=np.float64).reshape(-1)
    y = np.asarray(target, dtype=np.float64).reshape(-1)
    assert q.shape == y.shape and q.size > 0
    return q, y


def adaptive_bins(probs, target, bin_size: int) -> RefBins:
    """Algorithm 1, steps 1–4: sort by q, runs of ``bin_size``, last run merged.

    A tie group split by a boundary counts at its mean label in every bin it reaches
    (DESIGN.md): each pair's y is replaced by its tie group's mean before the runs.
    """
    q, y = _as_float64(probs, target)
    order = np.argsort(q, kind="stable")
    q, y = q[order], y[order]
    _, group = np.unique(q, return_inverse=True)
    y = (np.bincount(group, weights=y) / np.bincount(group))[group]
    n = q.size
    n_bins = max(1, n // bin_size)
    # Bin b is the run [b·β, (b+1)·β) of the sorted pairs; the last runs to the end.
    starts = [b * bin_size for b in range(n_bins)]
    ends = [*starts[1:], n]
    pred_mean, freq, count = [], [], []
    for start, end in zip(starts, ends, strict=True):
        count.append(end - start)
        pred_mean.append(float(np.mean(q[start:end])))
        freq.append(float(np.mean(y[start:end])))
    return RefBins(np.array(pred_mean), np.array(freq), np.array(count, dtype=np.int64))


def uniform_bins(probs, target, n_bins: int) -> RefBins:
    """Equal-width bins [i/n, (i+1)/n), q = 1 in the last; empty bins dropped."""
    q, y = _as_float64(probs, target)
    label = np.minimum(np.floor(q * n_bins).astype(np.int64), n_bins - 1)
    pred_mean, freq, count = [], [], []
    for b in range(n_bins):
        members = label == b
        if members.any():
            count.append(int(members.sum()))
            pred_mean.append(float(np.mean(q[members])))
            freq.append(float(np.mean(y[members])))
    return RefBins(np.array(pred_mean), np.array(freq), np.array(count, dtype=np.int64))


def error(bins: RefBins, norm: str = "l2", debias: bool = False) -> float:
    """Algorithm 1, step 5 (and the l1 / max variants) on the given bins."""
    weight = bins.count / bins.count.sum()
    gap = bins.pred_mean - bins.freq
    if debias:
        noise = bins.freq * (1 - bins.freq) / np.maximum(bins.count - 1, 1)
        return float(np.sqrt(max(0.0, float(np.sum(weight * (gap**2 - noise))))))
    if norm == "l2":
        return float(np.sqrt(np.sum(weight * gap**2)))
    if norm == "l1":
        return float(np.sum(weight * np.abs(gap)))
    return float(np.max(np.abs(gap)))


def sampled_errors(
    bins: RefBins, n_samples: int, rng: np.random.Generator, norm: str = "l2"
) -> np.ndarray:
    """Algorithm 2, step 2: S errors with each bin's frequency redrawn from its normal."""
    sigma = np.sqrt(bins.freq * (1 - bins.freq) / bins.count)
    # Row s holds sample s: one normal per bin, clipped to [0, 1].
    freq = np.clip(rng.normal(bins.freq, sigma, size=(n_samples, bins.freq.size)), 0.0, 1.0)
    return np.array([error(RefBins(bins.pred_mean, row, bins.count), norm) for row in freq])


def interval(
    bins: RefBins, n_samples: int, rng: np.random.Generator, z: float = 1.959963984540054
) -> tuple[float, float, float, float]:
    """Algorithm 2, step 3: (mean, std, mean − z·std, mean + z·std) of the sampled errors."""
    samples = sampled_errors(bins, n_samples, rng)
    mean, std = float(samples.mean()), float(samples.std(ddof=1))
    return mean, std, mean - z * std, mean + z * std
