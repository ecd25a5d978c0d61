"""Smooth calibration error and the kernel-smoothed reliability curve (binning-free).

**Definition** (Błasiok & Nakkiran, "Smooth ECE: Principled Reliability Diagrams via
Kernel Smoothing", 2023). With residuals rᵢ = qᵢ − yᵢ and the reflected Gaussian
kernel K_σ on [0, 1] (a Gaussian of width σ mirrored at 0 and 1, so that no mass leaks
out of the interval),

    smECE_σ = ∫₀¹ |r̂(t)| δ̂(t) dt / ∫₀¹ δ̂(t) dt,   δ̂(t) r̂(t) = Σᵢ K_σ(t, qᵢ) rᵢ,
                                                   δ̂(t) = Σᵢ K_σ(t, qᵢ),

the kernel-smoothed residual weighted by the kernel density of q. The automatic
bandwidth is their fixed point σ* with smECE_σ* = σ*, found by bisection (10 halvings
of [0, 1], σ ≥ 0.001); smECE_σ decreases in σ, so σ* is unique, and it is the error
reported (but see *The truncation* below). The reliability curve is
ŷ(t) = Σᵢ K_σ(t, qᵢ) yᵢ / δ̂(t) at the same σ*.

**Computation** (as the authors' ``relplot`` package computes it, but for the ends):
every pair's mass is split linearly between the two nearest of M points of a grid on
[0, 1] (M − 1 ≈ 10/σ, at least 1000 intervals), the grid is convolved with the
reflected kernel (truncated at distance 1/2), and the result is interpolated linearly
onto an evaluation mesh of T = max(200, 10/σ) points, where the integrals become sums.

*The ends.* A pair at q = 0 is its own mirror image: the reflected kernel folds its
whole Gaussian onto [0, 1], twice φ_σ(t) there, so that every pair weighs 1. ``relplot``
mirrors its grid without the end points, so the mass split onto the grid's first and
last points counts once: a pair at q = 0 weighs half as much as one at 0.01, and those
within a grid step (1/(M − 1) ≤ 0.001) of an end between a half and one. Here the end
points count twice, as the definition has it. Where no pair lies within a grid step of
0 or 1, this equals ``relplot``'s ``smECE`` to rounding, or within a step of the
bisection (1/1024 in σ) where the regulariser below tips a halving: 0.1614 against
relplot's 0.1621 on q = (0.2, 0.2, 0.4), y = (0, 1, 0) (both in ``tests/test_smooth.py``). Where
many do it does not, and the definition is the one to trust: the one-vs-rest pairs of a
confident 20-class model, 74% of them below 10⁻³ (mostly right: their class is absent),
have smECE_0.01 = 0.0106 by the integral of the definition (brute force) and 0.0103
here, where ``relplot`` gives 0.0158, half again as much.

*The regulariser.* ``relplot`` adds 1e-4 to the density at each mesh point, which moves
the result by a relative 1e-4·T / Σ δ̂ = 1e-4/N while the density sums to N·T over the
mesh (small σ): 1e-6 at N = 100, 1e-8 at N = 10⁴. With σ near 1 the truncated kernel's
density sums to less, and the shift grows: 1.3e-4 at N = 2, σ = 1.

*The truncation.* The kernel is cut off at distance 1/2, as ``relplot``'s is. For small
σ nothing is lost, but once σ* reaches about 0.2 — a badly miscalibrated model, or a
handful of pairs — the computed smECE_σ departs from the definition's and need not fall
with σ. Two pairs, (0.1, y = 1) and (0.9, y = 0), give 0.739 here and in ``relplot``
where the definition's fixed point is 0.433; fifty pairs at q = 0 with y = 1 and fifty
at 1 with y = 0 give 1.0 where it is 0.456. Read such values as ``relplot``'s, which
overstate the definition's. The curve ŷ(t) steps where a pair's kernel is cut off
(|t − qᵢ| = 1/2): invisible at small σ, a visible jump at σ* ≳ 0.2, when a handful of
pairs spread their kernels over the whole interval (two pairs, (0.3, y = 1) and
(0.6, y = 0), give σ* = 0.287 and a curve that drops from 0.22 to 0 at t = 0.8).

**Histogram input.** The grid split needs only, per cell of a histogram, its position,
count and Σy (:func:`smooth_calibration_from_histogram`): the streaming sketch can
feed it without keeping pairs. A pair given to the cell at mean position m instead of
its own q moves each kernel by at most |q − m|, so the error moves by at most
2·√(2/π)/σ · (1/N) Σᵢ |qᵢ − m(i)| (each kernel's L1 derivative, doubled for the
reflection): :func:`histogram_tolerance` (with an allowance for rounding), checked in
``tests/test_smooth.py``.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import Bins, _check_pairs, check_ids
from calib_metrics.functional.errors import (
    check_generator,
    check_int,
    check_not_meta,
    warn_at_caller,
)
from calib_metrics.functional.intervals import (
    MIN_UNITS,
    check_confidence,
    check_draws,
    compact_units,
    group_draws,
    normal_quantile,
    pair_draws,
)
from calib_metrics.functional.multiclass import Mode, pair_sets

# relplot's constants: bandwidth floor and bisection steps, evaluation-mesh size.
_MIN_BANDWIDTH = 1e-3
# An explicit σ sets the grid to 10/σ points per curve (1e-9 had asked for 160 GB).
_MIN_EXPLICIT_BANDWIDTH = 1e-4
_BISECTION_STEPS = 10
_MIN_MESH = 200


class SmoothCurve(NamedTuple):
    """The kernel-smoothed reliability curve with its bootstrap band.

    Attributes:
        grid: points t in [0, 1] where the curve is evaluated (float64).
        curve: ŷ(t), the smoothed label frequency at t (NaN where no data reaches t).
        lower: lower end of the pointwise bootstrap band at each t (Wilson's score
            interval at the bootstrap's effective size: :func:`smooth_reliability_curve`;
            NaN, with a warning, from fewer than 10 pairs or groups: too few to resample).
        upper: upper end of the band.
        density: the kernel density δ̂(t) of the predictions, normalised to mean 1
            over the grid: where it is small the curve rests on few predictions (the
            plots leave out only t below 10⁻³ of the mean).
        bandwidth: the kernel width σ used (0-dim).
        error: the smooth calibration error at that σ (0-dim).
        confidence: the band's coverage, which plots name in their legends.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(1000, generator=g, dtype=torch.float64)
        >>> c = smooth_reliability_curve(
        ...     q, torch.bernoulli(q, generator=g), n_samples=50, points=5, generator=g
        ... )
        >>> c.grid.tolist(), c.confidence
        ([0.0, 0.25, 0.5, 0.75, 1.0], 0.95)
        >>> bool((c.lower <= c.curve).all() and (c.curve <= c.upper).all())
        True
    """

    grid: Tensor
    curve: Tensor
    lower: Tensor
    upper: Tensor
    density: Tensor
    bandwidth: Tensor
    error: Tensor
    confidence: float = 0.95


def _grid_points(sigma: float) -> int:
    """M, the grid size for bandwidth σ (relplot's ``max(2000, 20/σ) // 2 + 1``)."""
    return max(2000, round(20 / sigma)) // 2 + 1


def _mesh_points(sigma: float) -> int:
    return max(round(10 / sigma), _MIN_MESH)


def _split_to_grid(position: Tensor, weights: Tensor, m: int) -> Tensor:
    """Each weight (``[..., K]``) split linearly between the grid points around its position."""
    scaled = position * (m - 1)
    left = scaled.floor().long().clamp_(0, m - 2)
    frac = scaled - left
    rows = weights.reshape(-1, weights.shape[-1])
    # One flat index_add_ (row r's cells offset by r·M): far faster than adding along dim -1.
    offset = torch.arange(rows.shape[0], device=rows.device).unsqueeze(1) * m
    index = (offset + left).reshape(-1)
    out = torch.zeros(rows.shape[0] * m, dtype=torch.float64, device=weights.device)
    out.index_add_(0, index, (rows * (1 - frac)).reshape(-1))
    out.index_add_(0, index + 1, (rows * frac).reshape(-1))
    return out.reshape(*weights.shape[:-1], m)


def _reflected_smooth(values: Tensor, sigma: float) -> Tensor:
    """Grid values ``[..., M]`` convolved with a Gaussian of width σ, mirrored at 0 and 1.

    The kernel is sampled at the M grid offsets t − 1/2 (relplot's layout, so also for
    an even M where its centre falls between two samples) and the values are mirrored
    about both ends. An end point is its own mirror image, so its value counts twice
    (module docstring: relplot counts it once).
    """
    m = values.shape[-1]
    offset = torch.linspace(0, 1, m, dtype=torch.float64, device=values.device) - 0.5
    kernel = torch.exp(-(offset**2) / (2 * sigma**2)) / (math.sqrt(2 * math.pi) * sigma)
    mirrored = values.flip(-1)
    centre = values.clone()
    centre[..., 0] *= 2
    centre[..., -1] *= 2
    extended = torch.cat([mirrored[..., :-1], centre, mirrored[..., 1:]], dim=-1)
    # A direct convolution costs M² per row (10⁸ at σ = 0.002); by FFT it is M log M.
    # Padded to a power of two: an FFT of a prime length (4001 for M = 1001) is 20x slower.
    size = 1 << (extended.shape[-1] + m - 2).bit_length()
    full = torch.fft.irfft(torch.fft.rfft(extended, size) * torch.fft.rfft(kernel, size), size)
    start = m - 1 + m // 2  # where relplot's "valid" convolution, sliced at M//2, starts
    return full[..., start : start + m]


def _to_mesh(grid_values: Tensor, t: Tensor) -> Tensor:
    """Linear interpolation of grid values (points i/(M − 1)) at the mesh ``t``."""
    m = grid_values.shape[-1]
    left = (t * (m - 1)).long().clamp_(0, m - 2)
    frac = t * (m - 1) - left
    return grid_values[..., left] * (1 - frac) + grid_values[..., left + 1] * frac


def _smoothed(position: Tensor, weights: Tensor, sigma: float, t: Tensor) -> Tensor:
    """Σ K_σ(t, position) · weights on the mesh ``t``, for every leading index of weights."""
    grid = _split_to_grid(position, weights, _grid_points(sigma))
    return _to_mesh(_reflected_smooth(grid, sigma), t)


def _error_on_grid(grid: Tensor, sigma: float) -> Tensor:
    """smECE_σ from the split residual and count grids ``[2, M]``."""
    t = torch.linspace(0, 1, _mesh_points(sigma), dtype=torch.float64, device=grid.device)
    both = _to_mesh(_reflected_smooth(grid, sigma), t)
    # At most 1 (every prediction 1 away from its label), which the division rounds past.
    return (both[0].abs().sum() / both[1].sum()).clamp(max=1.0)


class _Grids:
    """The residual and count grids of some pairs, split once per grid size M."""

    def __init__(self, position: Tensor, count: Tensor, residual: Tensor) -> None:
        self.position, self.weights, self.cache = position, torch.stack([residual, count]), {}

    def error(self, sigma: float) -> Tensor:
        m = _grid_points(sigma)
        if m not in self.cache:
            self.cache[m] = _split_to_grid(self.position, self.weights, m)
        return _error_on_grid(self.cache[m], sigma)


def _error_at(position: Tensor, count: Tensor, residual: Tensor, sigma: float) -> Tensor:
    return _Grids(position, count, residual).error(sigma)


def _fixed_point(position: Tensor, count: Tensor, residual: Tensor) -> float:
    """σ* with smECE_σ* = σ*, by relplot's bisection (one host sync per step)."""
    grids = _Grids(position, count, residual)

    def too_narrow(sigma: float) -> bool:
        return sigma < _MIN_BANDWIDTH or sigma < grids.error(sigma)

    if too_narrow(1.0):
        return 1.0
    high, low = 1.0, 0.0
    for _ in range(_BISECTION_STEPS):
        middle = (high + low) / 2
        if too_narrow(middle):
            low = middle
        else:
            high = middle
    return high


def _check_bandwidth(bandwidth: float | Tensor | None) -> float | None:
    """``bandwidth`` as a float (a 0-dim tensor too: ``SmoothCurve.bandwidth``), checked.
    Every value outside [1e-4, 1] is named with that range (0 had been told "(0, 1]")."""
    if bandwidth is None:
        return None
    real = isinstance(bandwidth, Tensor) and bandwidth.ndim == 0 and bandwidth.dtype != torch.bool
    if real and not bandwidth.is_complex():
        check_not_meta(bandwidth, "bandwidth")
        bandwidth = float(bandwidth.detach())
    valid = f"bandwidth must be a number in [{_MIN_EXPLICIT_BANDWIDTH:g}, 1] or None"
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Real):
        raise ValueError(f"{valid}, got {bandwidth!r}")
    if not 0 < bandwidth <= 1:
        raise ValueError(f"{valid}, got {bandwidth!r}")
    if bandwidth < _MIN_EXPLICIT_BANDWIDTH:
        raise ValueError(
            f"bandwidth {bandwidth!r} is below {_MIN_EXPLICIT_BANDWIDTH:g}: the kernel is "
            f"evaluated on a grid of about 10/σ points ({10 / bandwidth:,.0f} here; the "
            f"automatic bandwidth stops at {_MIN_BANDWIDTH:g})"
        )
    return float(bandwidth)


def _check_histogram(
    position: Tensor,
    count: Tensor,
    sum_target: Tensor,
    names: tuple[str, str, str] = ("position", "count", "sum_target"),
) -> tuple[Tensor, Tensor, Tensor]:
    """The histogram checked, detached as :func:`_check_pairs` detaches pairs. Counts and
    label sums may be integers (``torch.bincount``'s) and are read as float64; positions
    must be floating point. ``names`` are the caller's for the three (Spiegelhalter's
    histogram calls them ``pred_mean``, ``count``, ``sum_y``)."""
    tensors = dict(zip(names, (position, count, sum_target), strict=True))
    at, n, y = names
    for name, value in tensors.items():
        if not isinstance(value, Tensor) or value.ndim != 1:
            raise ValueError(f"{name} must be a 1-D tensor")
        check_not_meta(value, name)
        if name == at and not value.is_floating_point():
            raise ValueError(f"{at} must be floating point, got dtype {value.dtype}")
        if value.is_complex() or value.dtype == torch.bool:
            raise ValueError(f"{name} must hold real numbers, got dtype {value.dtype}")
        if not value.is_floating_point():
            tensors[name] = value.to(torch.float64)  # integer counts, exactly (below 2**53)
    position, count, sum_target = tensors.values()
    if not position.shape == count.shape == sum_target.shape:
        raise ValueError(
            f"{at}, {n} and {y} must have one shape, got {tuple(position.shape)}, "
            f"{tuple(count.shape)} and {tuple(sum_target.shape)}"
        )
    for name in (n, y):
        if not bool(tensors[name].isfinite().all()):
            raise ValueError(f"{name} holds NaN or infinite values")
    # Before "empty": a histogram of negative counts had been called empty.
    if bool(((count < 0) | (sum_target < 0) | (sum_target > count)).any()):
        raise ValueError(f"histogram needs {n} >= 0 and 0 <= {y} <= {n} in every cell")
    if position.numel() == 0 or not bool((count > 0).any()):
        raise ValueError("empty histogram: at least one cell needs a positive count")
    if bool(position.isnan().any()):
        # The mean q of an empty cell is 0/0: the one NaN a hand-made histogram is likely to hold.
        raise ValueError(
            f"{at} holds NaN (the mean of an empty cell, 0/0?): give each cell a {at} "
            "in [0, 1], or leave cells of count 0 out"
        )
    if bool(((position < 0) | (position > 1)).any()):
        raise ValueError(f"{at} must lie in [0, 1]")
    return position.detach(), count.detach(), sum_target.detach()


def _smooth_error(position: Tensor, count: Tensor, sum_target: Tensor, bandwidth) -> Tensor:
    position, count = position.to(torch.float64), count.to(torch.float64)
    residual = position * count - sum_target.to(torch.float64)
    sigma = _fixed_point(position, count, residual) if bandwidth is None else float(bandwidth)
    return _error_at(position, count, residual, sigma)


def smooth_calibration_from_histogram(
    position: Tensor, count: Tensor, sum_target: Tensor, *, bandwidth: float | None = None
) -> Tensor:
    """Smooth calibration error of a histogram: per cell its position, count and Σy.

    ``position`` is each cell's mean prediction (Σq / n; its centre if only that is
    known), floating point; ``count`` and ``sum_target`` may be integers (as
    ``torch.bincount`` gives them), read as float64. With one cell per pair this is
    :func:`smooth_calibration_error` exactly; with coarser cells the result moves by at
    most :func:`histogram_tolerance`. The result is a 0-dim float64 tensor without
    autograd history: the cells are data, as the pairs of
    :func:`smooth_calibration_error` are.

    Example:
        >>> import torch
        >>> position = torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)
        >>> count = torch.tensor([100.0, 50.0, 100.0], dtype=torch.float64)
        >>> sum_target = torch.tensor([20.0, 25.0, 80.0], dtype=torch.float64)
        >>> smooth_calibration_from_histogram(position, count, sum_target, bandwidth=0.05)
        tensor(0.0801, dtype=torch.float64)
    """
    bandwidth = _check_bandwidth(bandwidth)
    position, count, sum_target = _check_histogram(position, count, sum_target)
    return _smooth_error(position, count, sum_target, bandwidth)


def histogram_tolerance(probs: Tensor, position_of_pair: Tensor, bandwidth: float) -> Tensor:
    """Bound on |smECE(pairs) − smECE(histogram)| at bandwidth σ.

    2·√(2/π)/σ · mean |qᵢ − m(i)|, where ``position_of_pair`` is the position m(i) of
    the cell that holds pair i (see the module docstring), plus (N + M)·ε for float64's
    rounding (ε = 2.2e-16; the worst case of sums over the N pairs and the M grid points
    of σ): where every pair sits at its cell's mean the first term is 0, yet the two
    values, summed in another order, had differed by up to 1.5e-15.

    Example:
        >>> import torch
        >>> q = torch.tensor([0.1, 0.12, 0.5])
        >>> histogram_tolerance(q, torch.tensor([0.11, 0.11, 0.5]), 0.05)
        tensor(0.2128, dtype=torch.float64)
        >>> histogram_tolerance(q, q, 0.05).item()  # N = 3, M = 1001
        2.2293278334473143e-13
    """
    # Checked as the smoothing it bounds checks its inputs: a bandwidth of 0 had been a
    # ZeroDivisionError, a negative one a negative bound, NaN a NaN bound.
    if bandwidth is None:
        raise ValueError("bandwidth must be the number the histogram was smoothed at, got None")
    bandwidth = _check_bandwidth(bandwidth)
    for name, value in (("probs", probs), ("position_of_pair", position_of_pair)):
        if not isinstance(value, Tensor) or not value.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor, got {_kind(value)}")
        check_not_meta(value, name)
        if bool(((value < 0) | (value > 1) | value.isnan()).any()):
            raise ValueError(f"{name} must lie in [0, 1] (no NaN)")
    if probs.shape != position_of_pair.shape or probs.numel() == 0:
        raise ValueError(
            "probs and position_of_pair must have one non-empty shape, got "
            f"{tuple(probs.shape)} and {tuple(position_of_pair.shape)}"
        )
    shift = (probs.to(torch.float64) - position_of_pair.to(torch.float64)).abs().mean()
    rounding = torch.finfo(torch.float64).eps * (probs.numel() + _grid_points(bandwidth))
    return 2 * math.sqrt(2 / math.pi) / bandwidth * shift + rounding


def _kind(value: object) -> str:
    return f"dtype {value.dtype}" if isinstance(value, Tensor) else type(value).__name__


def smooth_calibration_error(
    probs: Tensor,
    target: Tensor,
    *,
    bandwidth: float | None = None,
    mode: Mode = "one_vs_rest",
) -> Tensor:
    """The smooth ECE of Błasiok & Nakkiran (2023), binning-free.

    Args:
        probs: predicted probabilities q in [0, 1] (binary, target's shape), or
            multiclass ``[..., C]`` with integer ``target [...]``.
        target: binary labels y, or class ids for multiclass probs.
        bandwidth: kernel width σ in [1e-4, 1]; ``None`` picks their fixed point
            smECE_σ = σ (about 11 host synchronisations for the bisection).
        mode: multiclass input as in :func:`~calib_metrics.functional.calibration_error`
            (``"top_label"`` is relplot's confidence calibration).

    Returns:
        0-dim float64 tensor on the input's device.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(5000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> round(smooth_calibration_error(q, y).item(), 4)
        0.0224
        >>> y = torch.bernoulli((q + 0.1).clamp(0, 1), generator=g)  # under-predicts
        >>> round(smooth_calibration_error(q, y).item(), 4)
        0.079
    """
    bandwidth = _check_bandwidth(bandwidth)
    sets = pair_sets(probs, target, mode)
    if len(sets) > 1:
        per_class = [smooth_calibration_error(q, y, bandwidth=bandwidth) for q, y, _ in sets]
        return torch.stack(per_class).mean()
    probs, target = _check_pairs(sets[0].probs, sets[0].target)
    ones = torch.ones_like(probs, dtype=torch.float64)
    return _smooth_error(probs, ones, target, bandwidth)


def smooth_bandwidth(probs: Tensor, target: Tensor) -> float:
    """The automatic bandwidth σ* (smECE_σ* = σ*) of binary pairs.

    Example:
        >>> import torch
        >>> q = torch.tensor([0.2, 0.4, 0.6, 0.8], dtype=torch.float64)
        >>> smooth_bandwidth(q, torch.tensor([0, 1, 0, 1]))
        0.1318359375
    """
    probs, target = _check_pairs(probs, target)
    q = probs.to(torch.float64)
    return _fixed_point(q, torch.ones_like(q), q - target.to(torch.float64))


def _cell_sums(position: Tensor, count: Tensor, sum_y: Tensor, m: int) -> tuple[Tensor, Bins]:
    """Each pair's (or histogram cell's) grid cell — the occupied intervals of the M-point
    grid, numbered densely — and those cells as :class:`Bins`, so that the library's
    bootstrap draws can resample them."""
    raw = (position * (m - 1)).long().clamp_(0, m - 2)
    cells, index = torch.unique(raw, return_inverse=True)
    total = torch.zeros(cells.numel(), dtype=torch.float64, device=position.device)
    sum_q = torch.zeros_like(total).index_add_(0, index, position * count)
    labels = torch.zeros_like(total).index_add_(0, index, sum_y)
    total.index_add_(0, index, count)
    return index, Bins(sum_q / total, labels / total, total)


def _curve(position: Tensor, count: Tensor, sum_y: Tensor, sigma: float, t: Tensor):
    """(ŷ(t), δ̂(t)) for weights ``[..., K]``; ŷ is NaN and δ̂ 0 where no mass reaches t.

    "Reaches": δ̂(t) above 1e-12 of the density that all the mass at t would give (the
    kernel's peak), the FFT's round-off lying far below it. The floor had been 1e-12 of
    δ̂ summed over the evaluation points, which is not the mass when they are coarse next
    to σ: round-off over round-off came back as a curve from −22 to 276.
    """
    num, dens = _smoothed(position, torch.stack([sum_y, count]), sigma, t).unbind(0)
    peak = count.sum(dim=-1, keepdim=True) / (math.sqrt(2 * math.pi) * sigma)
    reached = dens > 1e-12 * peak
    # A frequency of labels in {0, 1} lies in [0, 1]; the division can round past it.
    curve = torch.where(reached, (num / dens).clamp(0.0, 1.0), torch.nan)
    return curve, torch.where(reached, dens, 0.0)


def smooth_reliability_curve(
    probs: Tensor,
    target: Tensor,
    *,
    bandwidth: float | None = None,
    n_samples: int = 200,
    confidence: float = 0.95,
    groups: Tensor | None = None,
    generator: torch.Generator | None = None,
    points: int = 200,
    mode: Mode = "one_vs_rest",
) -> SmoothCurve:
    """The kernel-smoothed reliability curve ŷ(t) with a pointwise bootstrap band.

    The curve is smoothed at the smooth ECE's bandwidth σ* (or ``bandwidth``). The band
    comes from ``n_samples`` Poisson-bootstrap draws of the curve made by the library's
    own resampling (:mod:`calib_metrics.functional.intervals`): of pairs, or of whole
    groups when ``groups`` (one id per item) is given. A draw reweights the pairs of each
    interval of the smoothing grid (width ≤ σ/10) at the interval's mean prediction; σ is
    held fixed. At each t the band is Wilson's score interval of ŷ(t) at the effective
    size of Korn & Graubard (1998): ŷ(1 − ŷ) over the draws' variance, at most Kish's
    size of the kernel weights (Σ K)²/Σ K², which it is where ŷ is 0 or 1. A group
    bootstrap's wider draws shrink the size; where few labels decide ŷ(t) (near 0 and 1
    on a calibrated model) the score interval, unlike the draws' quantiles, is not
    pulled onto ŷ. On calibrated data (N = 2000, 100 data sets) the draws' 95% quantiles
    had covered the smoothed truth 0.68 and 0.76 of the time at t = 0 and 1, and this
    band covers it 1.00 and 0.97 (0.947 inside); on miscalibrated data it is on the safe
    side, 0.97–0.98 on average where the quantiles gave 0.93–0.95
    (``python benchmarks/smooth_band_coverage.py``; docs/measures.md). It is a band of
    the curve smoothed at σ, not of the true calibration curve: near 0 and 1, where
    smoothing bends the curve inwards, it need not hold the diagonal even for a
    calibrated model. Two classes' one-vs-rest pairs, a pair and its mirror, are drawn
    one by one (unlike ``calibration_error_ci``'s item bootstrap): drawn together
    (``groups=torch.arange(N)``) they gave the same coverage and width
    (``--two-class``; docs/measures.md).

    Args:
        probs, target, mode: as in :func:`smooth_calibration_error` (``"classwise"``
            has no single curve and is refused).
        bandwidth: kernel width σ in [1e-4, 1], or ``None`` for σ*.
        n_samples: bootstrap draws, from 2 to
            :data:`~calib_metrics.functional.intervals.MAX_DRAWS` (10⁷).
        confidence: coverage of the pointwise band, in (0, 1).
        groups: integer group id per item (on the probs' device, as every function taking
            groups wants them) for the group bootstrap, or ``None`` for pairs.
        generator: source of randomness of the draws.
        points: number of evaluation points t, evenly spaced on [0, 1] (≥ 2).

    Returns:
        :class:`SmoothCurve` (grid, curve, lower, upper, density, bandwidth, error,
        confidence).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(4000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> c = smooth_reliability_curve(q, y, n_samples=100, points=11, generator=g)
        >>> c.grid[5].item(), round(c.curve[5].item(), 1)
        (0.5, 0.5)
        >>> bool((c.lower <= c.curve).all() and (c.curve <= c.upper).all())
        True
    """
    check_generator(generator)
    bandwidth = _check_bandwidth(bandwidth)
    _check_curve_options(n_samples, confidence, points, mode)
    probs, target, groups = pair_sets(probs, target, mode, groups)[0]
    probs, target = _check_pairs(probs, target)
    q, y = probs.to(torch.float64), target.to(torch.float64)
    if groups is not None:
        groups = check_ids(groups, q)
    band = _Band("smooth_reliability_curve", n_samples, confidence, generator, groups)
    return _curve_with_band(q, torch.ones_like(q), y, bandwidth, points, band)


def smooth_curve_from_histogram(
    position: Tensor,
    count: Tensor,
    sum_target: Tensor,
    *,
    bandwidth: float | None = None,
    n_samples: int = 200,
    confidence: float = 0.95,
    generator: torch.Generator | None = None,
    points: int = 200,
) -> SmoothCurve:
    """:func:`smooth_reliability_curve` of a histogram: per cell its position (mean
    prediction), count and Σy, as :func:`smooth_calibration_from_histogram` takes them.

    The streaming sketch's cells feed it, so a streaming metric draws the curve without
    keeping pairs. The band resamples pairs: a cell's ones and zeros are drawn as the
    pairs' would be (the draws need only the counts), and the pairs sit at their cell's
    position, which moves the curve and error as little as it moves the error
    (:func:`histogram_tolerance`). Counts must be whole numbers of pairs for the band.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(4000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> cell = (q * 1000).long()  # 1000 cells of width 0.001
        >>> count = torch.zeros(1000, dtype=torch.float64).index_add_(0, cell, torch.ones_like(q))
        >>> sum_q = torch.zeros_like(count).index_add_(0, cell, q)
        >>> sum_y = torch.zeros_like(count).index_add_(0, cell, y)
        >>> kept = count > 0
        >>> c = smooth_curve_from_histogram(
        ...     sum_q[kept] / count[kept], count[kept], sum_y[kept], n_samples=100, points=11,
        ...     generator=g,
        ... )
        >>> exact = smooth_reliability_curve(q, y, n_samples=100, points=11, generator=g)
        >>> bool((c.curve - exact.curve).abs().max() < 1e-3)
        True
    """
    check_generator(generator)
    bandwidth = _check_bandwidth(bandwidth)
    _check_curve_options(n_samples, confidence, points, "one_vs_rest")
    position, count, sum_target = _check_histogram(position, count, sum_target)
    if not bool((count == count.round()).all()):
        raise ValueError(
            "count must hold whole numbers of pairs: the band resamples them (a weighted "
            "histogram's curve has no pairs to resample)"
        )
    kept = count > 0  # an empty cell's position is anything: it must not reach the grid
    histogram = [x[kept].to(torch.float64) for x in (position, count, sum_target)]
    band = _Band("smooth_curve_from_histogram", n_samples, confidence, generator, None)
    return _curve_with_band(*histogram, bandwidth, points, band)


class _Band(NamedTuple):
    """How a curve's band is drawn: the public function drawing it (its warnings' name),
    draws, coverage, generator, and the groups (one id per pair) when whole groups are
    resampled."""

    function: str
    n_samples: int
    confidence: float
    generator: torch.Generator | None
    groups: Tensor | None


def _curve_with_band(
    position: Tensor, count: Tensor, sum_y: Tensor, bandwidth: float | None, points: int,
    band: _Band,
) -> SmoothCurve:  # fmt: skip
    """The curve of pairs (``count`` all 1) or histogram cells, at σ* or ``bandwidth``,
    with its score band of bootstrap draws."""
    residual = position * count - sum_y
    sigma = _fixed_point(position, count, residual) if bandwidth is None else float(bandwidth)
    t = torch.linspace(0, 1, points, dtype=torch.float64, device=position.device)
    curve, density = _curve(position, count, sum_y, sigma, t)
    if _too_few_units(count, band):
        lower = upper = torch.full_like(curve, float("nan"))
    else:
        index, cells = _cell_sums(position, count, sum_y, _grid_points(sigma))
        draws = _bootstrap_curves(position, sum_y, index, cells, sigma, t, band)
        n_eff = _effective_sizes(curve, draws, _kish_sizes(cells, sigma, t))
        lower, upper = _score_band(curve, n_eff, band.confidence)
    return SmoothCurve(
        t,
        curve,
        lower,
        upper,
        density / density.mean().clamp(min=torch.finfo(torch.float64).tiny),  # 0 if none
        torch.tensor(sigma, dtype=torch.float64, device=position.device),
        _error_at(position, count, residual, sigma),
        float(band.confidence),
    )


def _too_few_units(count: Tensor, band: _Band) -> bool:
    """Whether fewer than ``MIN_UNITS`` pairs (or groups) are there to resample, with a
    warning: then the band is NaN, as ``calibration_error_ci``'s ends are (one pair gave a
    band of width 0 around the curve, which looked certain)."""
    groups = band.groups
    n_units = int(count.sum().item()) if groups is None else compact_units(groups)[1]
    if n_units >= MIN_UNITS:
        return False
    unit = "pair" if groups is None else "group"
    warn_at_caller(
        f"{band.function}: {n_units} {unit}{'s' * (n_units != 1)}; at least "
        f"{MIN_UNITS} are needed for a band, so its ends are NaN (the curve stands)"
    )
    return True


def _bootstrap_curves(q, y, index, cells, sigma, t, band: _Band) -> Tensor:
    """Curves of the bootstrap draws, ``[S, points]``, of the pairs (``index``: each
    one's cell of ``cells``) or of their groups."""
    if band.groups is None:
        blocks = pair_draws(cells, band.n_samples, band.generator)
    else:
        n_cells = cells.count.numel()
        blocks = group_draws(q, y, band.groups, index, n_cells, band.n_samples, band.generator)
    # A draw's bins are a reweighted histogram: its counts and label sums are the masses.
    return torch.cat(
        [_curve(cells.pred_mean, d.count, d.freq * d.count, sigma, t)[0] for d in blocks]
    )


def _kish_sizes(cells: Bins, sigma: float, t: Tensor) -> Tensor:
    """Kish's effective number of pairs behind ŷ(t), (Σᵢ Kᵢ)² / Σᵢ Kᵢ², with Kᵢ the
    weight the curve gives pair i at t: the kernel mirrored once at 0 and at 1 and cut off
    at distance 1/2, as :func:`_reflected_smooth`'s is (the cells' counts at their mean
    q). About 2√π·σ·N·δ̂(t) inside [0, 1] for a small σ (δ̂ the density of the
    predictions, mean 1), half that at the ends; without the
    cut-off, at σ = 0.6 the size at t = 1 had counted three times the pairs that ŷ(1)
    rests on."""
    position, count = cells.pred_mean, cells.count
    # The curve splits each pair between two grid points and reads a mesh point between
    # two more, so its mass reaches two grid steps past the cut-off: without them, ŷ(t)
    # there had a NaN band.
    reach = 0.5 + 2 / (_grid_points(sigma) - 1)
    first, second = [], []
    for chunk in t.split(max(1, 2**20 // max(position.numel(), 1))):
        offsets = chunk[:, None] - torch.stack([position, -position, 2 - position])[:, None]
        reached = offsets.abs() <= reach
        weight = torch.where(reached, torch.exp(-(offsets**2) / (2 * sigma**2)), 0.0).sum(dim=0)
        first.append(weight @ count)
        second.append(weight.square() @ count)
    return torch.cat(first).square() / torch.cat(second)


def _effective_sizes(curve: Tensor, draws: Tensor, kish: Tensor) -> Tensor:
    """The effective sample size at each t (Korn & Graubard, 1998): p̂(1 − p̂) over the
    bootstrap variance of ŷ(t) (so a group bootstrap's design effect counts), at most
    Kish's size, which it is where p̂ is 0 or 1 and the draws cannot vary."""
    variance = torch.nanmean((draws - draws.nanmean(dim=0)).square(), dim=0)
    binomial = curve * (1 - curve)
    from_draws = binomial / variance
    usable = (binomial > 0) & (variance > 0)
    return torch.where(usable, torch.minimum(from_draws, kish), kish)


def _score_band(curve: Tensor, n_eff: Tensor, confidence: float) -> tuple[Tensor, Tensor]:
    """Wilson's score interval of a frequency ``curve`` of ``n_eff`` labels, at each t.

    A percentile band of the draws had covered the truth 0.68 and 0.76 of the time at
    t = 0 and 1 on calibrated data (N = 2000), where a few labels decide ŷ(t): the draws of a
    frequency 0 are all 0. The score interval is not pulled to 0 by them, and with
    Korn–Graubard's effective size it keeps the bootstrap's width elsewhere.

    Example:
        >>> lower, upper = _score_band(torch.tensor([0.0, 0.5]), torch.tensor([50.0, 100.0]), 0.95)
        >>> [round(v, 4) for v in lower.tolist()], [round(v, 4) for v in upper.tolist()]
        ([0.0, 0.4038], [0.0713, 0.5962])
    """
    z2 = normal_quantile(confidence) ** 2
    centre = (curve + z2 / (2 * n_eff)) / (1 + z2 / n_eff)
    half = (z2 * (curve * (1 - curve) / n_eff + z2 / (4 * n_eff**2))).sqrt() / (1 + z2 / n_eff)
    lower, upper = (centre - half).clamp(min=0.0), (centre + half).clamp(max=1.0)
    return torch.minimum(lower, curve), torch.maximum(upper, curve)


def _check_curve_options(n_samples: int, confidence: float, points: int, mode: str) -> None:
    check_draws(n_samples)  # 10**12 draws had been drawn until time or memory ran out
    check_confidence(confidence)
    check_int("points", points, 2)
    if mode == "classwise":
        raise ValueError("mode='classwise' has one curve per class: pass one class's pairs")
