"""Calibration error, its sampled interval, and the Brier score's decomposition.

The paper's Definition 1 estimated by Algorithm 1 (adaptive bins),

    CalibErr = sqrt( Σᵢ |Bᵢ| (q̂ᵢ − p̂ᵢ)² / N ),

and its interval by Algorithm 2: per bin p̂ᵢ⁽ˢ⁾ ~ Normal(p̂ᵢ, p̂ᵢ(1 − p̂ᵢ)/|Bᵢ|) clipped to
[0, 1], the error recomputed on each of S draws, and ``mean ∓ z·std`` over the draws
(``method="normal"``) or their quantiles (``method="percentile"``). Everything is
accumulated in float64 whatever the input dtype, on the input's device.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.auto_bin import AUTO, resolve_bin_size
from calib_metrics.functional.binning import (
    Bins,
    _check_pairs,
    _sums_to_bins,
    adaptive_bin_sums,
    uniform_binning,
)
from calib_metrics.functional.intervals import (
    Interval,
    bin_index,
    group_bootstrap,
    normal_quantile,
    pair_bootstrap,
)
from calib_metrics.functional.multiclass import Mode, average_results, pair_sets

MAX_BIN_SIZE = 2**62
MAX_UNIFORM_BINS = 2**20
Norm = Literal["l1", "l2", "max"]
Binning = Literal["adaptive", "uniform"]
IntervalMethod = Literal["normal", "percentile"]

# Draws of the interval are made in slices of at most this many normals (S·T), so a
# 10,000 × 2,000 draw never holds more than 32 MiB at once.
_DRAW_BLOCK = 1 << 22


class CalibrationResult(NamedTuple):
    """Calibration error with its sampled interval (Algorithm 2) and its bins.

    Attributes:
        error: the point estimate (Algorithm 1), 0-dim float64.
        mean: mean of the sampled errors.
        std: standard deviation of the sampled errors.
        lower: lower end of the interval.
        upper: upper end of the interval.
        bins: the :class:`~calib_metrics.functional.binning.Bins` behind the estimate.
    """

    error: Tensor
    mean: Tensor
    std: Tensor
    lower: Tensor
    upper: Tensor
    bins: Bins


class BrierDecomposition(NamedTuple):
    """Brier score and its calibration–refinement split (the paper's Eq. 1), binned.

    ``brier`` is exact, mean of (q − y)². ``calibration`` is Σ|Bᵢ|(q̂ᵢ − p̂ᵢ)²/N (the
    square of the l2 CalibErr) and ``refinement`` is Σ|Bᵢ| p̂ᵢ(1 − p̂ᵢ)/N. The binned
    terms add up to ``brier`` minus ``within_bin``, the part of the score due to the
    spread of q inside bins (Σ over bins of Var(q) − 2·Cov(q, y)), which vanishes as
    bins shrink to single values of q.
    """

    brier: Tensor
    calibration: Tensor
    refinement: Tensor
    within_bin: Tensor


def _check_options(norm: str, binning: str, bin_size: int | str, n_bins: int) -> None:
    if norm not in ("l1", "l2", "max"):
        raise ValueError(f"norm must be 'l1', 'l2' or 'max', got {norm!r}")
    if binning not in ("adaptive", "uniform"):
        raise ValueError(f"binning must be 'adaptive' or 'uniform', got {binning!r}")
    checked = (
        (("n_bins", n_bins),) if bin_size == AUTO else (("bin_size", bin_size), ("n_bins", n_bins))
    )
    for name, value in checked:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    # Past these, the ranks (int64) or the uniform edges (memory) cannot be formed.
    if bin_size != AUTO and bin_size > MAX_BIN_SIZE:
        raise ValueError(f"bin_size must be at most 2**62, got {bin_size}")
    if n_bins > MAX_UNIFORM_BINS:
        raise ValueError(f"n_bins must be at most 2**20, got {n_bins}")


def compute_bins(
    probs: Tensor,
    target: Tensor,
    *,
    binning: Binning = "adaptive",
    bin_size: int | str = 5000,
    n_bins: int = 15,
    validate: bool = True,
) -> Bins:
    """Bins of (q, y) by either rule; ``validate=False`` skips the input checks.

    ``bin_size="auto"`` picks β = ⌈√N⌉ (:func:`~calib_metrics.functional.auto_bin.auto_bin_size`).
    """
    if validate:
        probs, target = _check_pairs(probs, target)
    else:
        probs, target = probs.reshape(-1), target.reshape(-1)
    if binning == "uniform":
        return uniform_binning(probs, target, n_bins)
    size = resolve_bin_size(bin_size, probs.numel())
    return _sums_to_bins(*adaptive_bin_sums(probs, target, size))


def _debias_for(norm: str, debias: bool) -> bool:
    """``debias`` as asked for l2; l1 and max have no debiased form and use the plug-in."""
    if not isinstance(debias, bool):
        raise ValueError(f"debias must be True or False, got {debias!r}")
    return debias and norm == "l2"


def _debiased_square_gap(bins: Bins, freq: Tensor) -> Tensor:
    """(q̂ − p̂)² − p̂(1 − p̂)/(|B| − 1): unbiased for the squared gap of each bin."""
    denom = (bins.count - 1).clamp_min(1)
    return (bins.pred_mean - freq) ** 2 - freq * (1 - freq) / denom


def error_from_bins(bins: Bins, norm: Norm = "l2", *, debias: bool = False) -> Tensor:
    """The calibration error of given bins (Algorithm 1, step 5).

    ``debias=True`` (``norm="l2"`` only) replaces each squared gap by its unbiased
    estimate (q̂ᵢ − p̂ᵢ)² − p̂ᵢ(1 − p̂ᵢ)/(|Bᵢ| − 1). Derivation: given the bin (its q
    fixed), its n = |Bᵢ| labels are independent with mean pᵢ (the bin's true
    frequency), so p̂ᵢ has mean pᵢ and variance pᵢ(1 − pᵢ)/n, and

        E[(q̂ᵢ − p̂ᵢ)²] = (q̂ᵢ − pᵢ)² + pᵢ(1 − pᵢ)/n:

    the plug-in square overshoots by the sampling variance of p̂ᵢ. That variance is
    estimated without bias by p̂ᵢ(1 − p̂ᵢ)/(n − 1), because E[p̂ᵢ(1 − p̂ᵢ)] = E[p̂ᵢ] −
    E[p̂ᵢ²] = pᵢ − pᵢ² − pᵢ(1 − pᵢ)/n = pᵢ(1 − pᵢ)(n − 1)/n. Subtracting it makes each
    bin's term, and the weighted sum, unbiased for Σ wᵢ(q̂ᵢ − pᵢ)². That sum can come
    out negative (when the true gaps are smaller than the noise); it is clipped at 0
    before the square root, which makes the *error* biased upward again but far less:
    on calibrated data it is 0 about half the time instead of always ≈ √(Σ wᵢ pᵢ(1 −
    pᵢ)/n). Labels correlated within a bin (e.g. tokens of one sentence) have a larger
    variance than p(1 − p)/n, which this correction does not remove; the group
    bootstrap of :func:`calibration_error_ci` accounts for it in the interval.

    Example:
        >>> import torch
        >>> bins = Bins(torch.tensor([0.2, 0.8]), torch.tensor([0.1, 0.8]), torch.tensor([5., 5.]))
        >>> error_from_bins(bins)
        tensor(0.0707)
        >>> error_from_bins(bins, "max")
        tensor(0.1000)
    """
    if norm not in ("l1", "l2", "max"):
        raise ValueError(f"norm must be 'l1', 'l2' or 'max', got {norm!r}")
    weight = bins.count / bins.count.sum()
    gap = bins.pred_mean - bins.freq
    if debias:
        if norm != "l2":
            raise ValueError(f"debias applies to norm='l2' only, got norm={norm!r}")
        return (weight * _debiased_square_gap(bins, bins.freq)).sum().clamp_min(0).sqrt()
    if norm == "l2":
        return (weight * gap**2).sum().sqrt()
    if norm == "l1":
        return (weight * gap.abs()).sum()
    return gap.abs().max()


def calibration_error(
    probs: Tensor,
    target: Tensor,
    *,
    bin_size: int | str = "auto",
    binning: Binning = "adaptive",
    n_bins: int = 15,
    norm: Norm = "l2",
    debias: bool = True,
    mode: Mode = "one_vs_rest",
) -> Tensor:
    """RMS calibration error of binary predictions (the paper's Algorithm 1).

    Args:
        probs: predicted probabilities q in [0, 1], any shape and floating dtype.
        target: binary labels y of the same shape.
        bin_size: target bin size β of adaptive binning, or ``"auto"`` (default) for
            β = ⌈√N⌉ (the rule chosen by the coverage study, ``docs/coverage.md``); the
            paper's is 5000.
        binning: ``"adaptive"`` (equal mass, the paper's) or ``"uniform"`` (equal width).
        n_bins: number of bins of uniform binning.
        norm: ``"l2"`` (the paper's RMS error), ``"l1"`` (weighted mean absolute gap)
            or ``"max"`` (worst bin).
        debias: subtract each bin's sampling noise from its squared gap (default; l2
            only: ``l1`` and ``max`` fall back to the plug-in); see
            :func:`error_from_bins`. The paper's estimator is ``debias=False,
            bin_size=5000``.
        mode: for multiclass ``probs [..., C]`` with integer ``target [...]``:
            ``"one_vs_rest"`` (the paper's), ``"top_label"`` or ``"classwise"`` (the
            mean of the per-class errors); see :mod:`calib_metrics.functional.multiclass`.

    Returns:
        0-dim float64 tensor on the input's device.

    Example:
        >>> import torch
        >>> probs = torch.tensor([0.1, 0.2, 0.7, 0.9])
        >>> target = torch.tensor([0, 0, 1, 1])
        >>> calibration_error(probs, target, bin_size=2, debias=False)  # the paper's plug-in
        tensor(0.1768, dtype=torch.float64)
        >>> calibration_error(probs, target, bin_size=2, norm="l1")
        tensor(0.1750, dtype=torch.float64)
        >>> probs = torch.tensor([[0.8, 0.2], [0.4, 0.6], [0.9, 0.1], [0.3, 0.7]])
        >>> calibration_error(probs, torch.tensor([0, 0, 1, 1]), bin_size=2, mode="top_label",
        ...                   debias=False)
        tensor(0.2693, dtype=torch.float64)
    """
    _check_options(norm, binning, bin_size, n_bins)
    debias = _debias_for(norm, debias)
    sets = pair_sets(probs, target, mode)
    if len(sets) > 1:
        options = {"bin_size": bin_size, "binning": binning, "n_bins": n_bins}
        per_class = [
            calibration_error(q, y, norm=norm, debias=debias, **options) for q, y, _ in sets
        ]
        return torch.stack(per_class).mean()
    probs, target = sets[0].probs, sets[0].target
    bins = compute_bins(probs, target, binning=binning, bin_size=bin_size, n_bins=n_bins)
    return error_from_bins(bins, norm, debias=debias)


def sampled_errors(
    bins: Bins,
    n_samples: int,
    *,
    norm: Norm = "l2",
    debias: bool = False,
    generator: torch.Generator | None = None,
) -> Tensor:
    """S errors of bins whose frequencies are redrawn per Algorithm 2, step 2.

    One normal draw per bin and sample, vectorised; drawn in slices of at most
    ``2**22`` normals so that memory stays bounded for many bins. The draws and the
    per-draw errors are computed in float32: their rounding (~1e-7 relative) is far
    below the Monte Carlo noise of the interval (~1/√S), and it halves the time and
    memory of this, the costliest step. Bins and point estimates stay float64.
    """
    device = bins.freq.device
    draw = torch.float32
    freq0 = bins.freq.to(draw)
    pred = bins.pred_mean.to(draw)
    se = (bins.freq * (1 - bins.freq) / bins.count).sqrt().to(draw)
    weight = (bins.count / bins.count.sum()).to(draw)
    per_block = max(1, _DRAW_BLOCK // max(1, bins.freq.numel()))
    low_bins = Bins(pred, freq0, bins.count.to(draw))
    out = []
    for start in range(0, n_samples, per_block):
        size = min(per_block, n_samples - start)
        freq = torch.randn((size, freq0.numel()), generator=generator, device=device, dtype=draw)
        freq.mul_(se).add_(freq0).clamp_(0, 1)
        if debias:
            out.append((_debiased_square_gap(low_bins, freq) @ weight).clamp_min(0).sqrt())
            continue
        gap = freq.sub_(pred)
        if norm == "l2":
            out.append((gap.square_() @ weight).sqrt())
        elif norm == "l1":
            out.append(gap.abs_() @ weight)
        else:
            out.append(gap.abs_().amax(dim=1))
    return torch.cat(out).to(torch.float64)


def interval_from_samples(
    samples: Tensor, confidence: float = 0.95, method: IntervalMethod = "normal"
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(mean, std, lower, upper) of sampled errors: ``mean ∓ z·std`` or quantiles.

    The normal form's lower end is clipped at 0 (the paper's formula can dip below 0
    with few pairs per bin; a calibration error cannot).
    """
    mean = samples.mean()
    std = samples.std() if samples.numel() > 1 else torch.zeros_like(mean)
    if method == "normal":
        # An error is never negative, so the lower end is clipped at 0.
        z = normal_quantile(confidence)
        return mean, std, (mean - z * std).clamp_min(0), mean + z * std
    tail = (1 - confidence) / 2
    levels = torch.tensor([tail, 1 - tail], dtype=samples.dtype, device=samples.device)
    lower, upper = torch.quantile(samples, levels)
    return mean, std, lower, upper


def ci_from_bins(
    bins: Bins,
    *,
    n_samples: int = 10000,
    confidence: float = 0.95,
    method: IntervalMethod = "normal",
    norm: Norm = "l2",
    debias: bool = False,
    generator: torch.Generator | None = None,
    interval: Interval = "paper",
) -> CalibrationResult:
    """Algorithm 2 (or the pair bootstrap) on given bins; see :func:`calibration_error_ci`.

    ``interval="groups"`` needs the pairs and their groups, so it is not available here.
    """
    _check_interval_options(n_samples, confidence, method, interval)
    if interval == "pairs":
        summary = pair_bootstrap(
            bins,
            n_samples=n_samples,
            confidence=confidence,
            method=method,
            norm=norm,
            debias=debias,
            generator=generator,
        )
        return CalibrationResult(*summary, bins)
    if interval != "paper":
        raise ValueError(
            f"interval must be 'paper' or 'pairs' for given bins, got {interval!r} "
            "('groups' needs the pairs: use calibration_error_ci)"
        )
    error = error_from_bins(bins, norm, debias=debias)
    samples = sampled_errors(bins, n_samples, norm=norm, debias=debias, generator=generator)
    mean, std, lower, upper = interval_from_samples(samples, confidence, method)
    return CalibrationResult(error, mean, std, lower, upper, bins)


def _check_interval_options(
    n_samples: int, confidence: float, method: str, interval: str = "paper"
) -> None:
    if not isinstance(n_samples, int) or isinstance(n_samples, bool) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2, got {n_samples!r}")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float))
        or not 0 < confidence < 1
    ):
        raise ValueError(
            f"confidence must be a number strictly between 0 and 1, got {confidence!r}"
        )
    if method not in ("normal", "percentile"):
        raise ValueError(f"method must be 'normal' or 'percentile', got {method!r}")
    if interval not in ("paper", "pairs", "groups"):
        raise ValueError(f"interval must be 'paper', 'pairs' or 'groups', got {interval!r}")


def calibration_error_ci(
    probs: Tensor,
    target: Tensor,
    *,
    bin_size: int | str = "auto",
    n_samples: int = 10000,
    confidence: float = 0.95,
    generator: torch.Generator | None = None,
    method: IntervalMethod = "normal",
    binning: Binning = "adaptive",
    n_bins: int = 15,
    norm: Norm = "l2",
    debias: bool = True,
    interval: Interval | None = None,
    groups: Tensor | None = None,
    mode: Mode = "one_vs_rest",
) -> CalibrationResult:
    """Calibration error with a confidence interval.

    Defaults are the recommended estimator: ``bin_size="auto"``, debiased, and the
    recentred bootstrap over pairs (over groups when ``groups`` is given). The paper's
    method (Algorithm 1 with Algorithm 2's sampled interval) is
    ``debias=False, bin_size=5000, interval="paper"``.

    Args:
        probs: predicted probabilities q in [0, 1], any shape and floating dtype.
        target: binary labels y of the same shape.
        bin_size: target bin size β of adaptive binning, or ``"auto"`` (β = ⌈√N⌉).
        n_samples: number S of simulated error values (draws).
        confidence: coverage of the interval (0.95 gives the paper's ±1.96·std).
        generator: source of randomness (on the input's device) for reproducible draws.
        method: ``"normal"`` (mean ∓ z·std, the paper's) or ``"percentile"``.
        binning, n_bins, norm, debias: as in :func:`calibration_error`.
        interval: None (default): ``"pairs"``, or ``"groups"`` when ``groups`` is given;
            ``"paper"`` (Algorithm 2: per-bin frequencies redrawn from normals),
            ``"pairs"`` (Poisson bootstrap over pairs) or ``"groups"`` (Poisson
            bootstrap over whole groups, e.g. sentences); the bins are formed once and
            not re-formed per draw. With ``debias=True`` the bootstrap intervals are
            recentred on the debiased estimate (see
            :mod:`calib_metrics.functional.intervals`); ``docs/coverage.md`` measures
            every combination.
        groups: group id of every pair (any integer tensor of ``probs``' shape), needed
            by and only used with ``interval="groups"``.
        mode: multiclass input as in :func:`calibration_error`; ``"classwise"`` averages
            the per-class results (its interval conservatively, see
            :func:`~calib_metrics.functional.multiclass.average_results`).

    Returns:
        :class:`CalibrationResult` (error, mean, std, lower, upper, bins).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> probs = torch.rand(20000, generator=g)
        >>> target = torch.bernoulli(probs, generator=g)
        >>> result = calibration_error_ci(probs, target, bin_size=2000, generator=g,
        ...                               debias=False, interval="paper")  # the paper's
        >>> bool(result.lower < result.error < result.upper)
        True
        >>> round(result.error.item(), 3)
        0.006
        >>> groups = torch.arange(20000) // 20  # e.g. sentence ids
        >>> r = calibration_error_ci(probs, target, bin_size="auto", n_samples=500, debias=True,
        ...                          interval="groups", groups=groups, generator=g)
        >>> r.bins.count.numel(), bool(r.lower <= r.error <= r.upper)
        (140, True)
    """
    _check_options(norm, binning, bin_size, n_bins)
    if interval is None:
        interval = "pairs" if groups is None else "groups"
    _check_interval_options(n_samples, confidence, method, interval)
    debias = _debias_for(norm, debias)
    if (groups is None) != (interval != "groups"):
        raise ValueError(
            "groups= is needed by, and only used with, interval='groups' "
            f"(got interval={interval!r} and groups={'None' if groups is None else 'a tensor'})"
        )
    sets = pair_sets(probs, target, mode, groups)
    if len(sets) > 1:
        options = {"bin_size": bin_size, "n_samples": n_samples, "confidence": confidence}
        options |= {"generator": generator, "method": method, "binning": binning}
        options |= {"n_bins": n_bins, "norm": norm, "debias": debias, "interval": interval}
        per_class = [calibration_error_ci(q, y, groups=g, **options) for q, y, g in sets]
        return CalibrationResult(*average_results(per_class))
    probs, target, groups = sets[0]
    probs, target = _check_pairs(probs, target)
    bins = compute_bins(
        probs, target, binning=binning, bin_size=bin_size, n_bins=n_bins, validate=False
    )
    options = {"n_samples": n_samples, "confidence": confidence, "method": method}
    options |= {"norm": norm, "debias": debias, "generator": generator}
    if interval != "groups":
        return ci_from_bins(bins, interval=interval, **options)
    groups = _check_groups(groups, probs)
    size = bin_size if binning == "uniform" else resolve_bin_size(bin_size, probs.numel())
    index = bin_index(probs, target, binning=binning, bin_size=size, n_bins=n_bins)
    summary = group_bootstrap(probs, target, groups, bins, index, **options)
    return CalibrationResult(*summary, bins)


def _check_groups(groups: Tensor, reference: Tensor, name: str = "probs") -> Tensor:
    """Validate group ids, one per element of ``reference`` (named ``name`` in errors),
    and return them flat."""
    if not isinstance(groups, Tensor):
        raise ValueError(f"groups must be a tensor of group ids, got {type(groups).__name__}")
    if groups.numel() != reference.numel():
        raise ValueError(
            f"groups must give one id per pair: got {groups.numel()} ids for "
            f"{reference.numel()} pairs (shape {tuple(groups.shape)})"
        )
    if groups.is_floating_point() or groups.is_complex() or groups.dtype == torch.bool:
        raise ValueError(f"groups must hold integer ids, got dtype {groups.dtype}")
    if groups.device != reference.device:
        raise ValueError(f"groups on {groups.device} but {name} on {reference.device}")
    return groups.reshape(-1)


def brier_decomposition(
    probs: Tensor,
    target: Tensor,
    *,
    bin_size: int | str = "auto",
    binning: Binning = "adaptive",
    n_bins: int = 15,
    mode: Mode = "one_vs_rest",
) -> BrierDecomposition:
    """Brier score with its calibration and refinement terms from the same bins (Eq. 1).

    Multiclass ``probs [..., C]`` with integer ``target [...]`` are split by ``mode``
    (``"one_vs_rest"`` or ``"top_label"``) as in :func:`calibration_error`.

    Example:
        >>> import torch
        >>> probs = torch.tensor([0.1, 0.3, 0.6, 0.8], dtype=torch.float64)
        >>> target = torch.tensor([0, 1, 1, 1])
        >>> d = brier_decomposition(probs, target, bin_size=2)
        >>> [round(v.item(), 4) for v in d]
        [0.175, 0.09, 0.125, -0.04]
    """
    _check_options("l2", binning, bin_size, n_bins)
    if mode == "classwise":
        raise ValueError("brier_decomposition: mode='classwise' gives one split per class")
    probs, target, _ = pair_sets(probs, target, mode)[0]
    probs, target = _check_pairs(probs, target)
    bins = compute_bins(
        probs, target, binning=binning, bin_size=bin_size, n_bins=n_bins, validate=False
    )
    q = probs.to(torch.float64)
    brier = ((q - target.to(torch.float64)) ** 2).mean()
    weight = bins.count / bins.count.sum()
    calibration = (weight * (bins.pred_mean - bins.freq) ** 2).sum()
    refinement = (weight * bins.freq * (1 - bins.freq)).sum()
    return BrierDecomposition(brier, calibration, refinement, brier - calibration - refinement)
