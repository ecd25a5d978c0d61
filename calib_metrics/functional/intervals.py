"""Bootstrap intervals of the calibration error: over pairs and over groups of pairs.

**What is resampled.** The bins are formed once, on the data, and are *not* re-formed
per draw: a draw reweights the pairs (or the groups) and recomputes every bin's count,
mean prediction and label frequency from the reweighted sums. Weights are Poisson(1)
(the Poisson bootstrap: each unit is copied Poisson(1) times, so the number of units
varies slightly from draw to draw, which leaves the variance of means unchanged to
first order and makes draws independent across bins, hence cheap to vectorise).

* ``interval="pairs"`` resamples pairs. Within a bin, the copies of its n₁ pairs with
  y = 1 and of its n₀ pairs with y = 0 sum to Poisson(n₁) and Poisson(n₀) exactly, so a
  draw needs only the bins: counts and frequencies are exact Poisson-bootstrap draws,
  and the bin's mean prediction is held fixed (its bootstrap spread, the spread of q
  inside one bin over √n, is negligible next to that of the frequency). Cost O(S·T)
  for S draws and T bins, whatever N.
* ``interval="groups"`` resamples whole groups (``groups=`` gives each pair a sentence
  or document id): per (group, bin) cell the sums of 1, q and y form a sparse [3T, G]
  matrix, and a block of draws is that matrix times Poisson(1) group weights [G, S].
  Labels that are correlated inside a group therefore move together in every draw.

**Estimators.** With ``debias=False`` the draws give the plug-in error of each draw,
and the interval is their quantiles (``method="percentile"``) or error ∓ z·std
(``"normal"``). Both inherit the plug-in's upward bias (≈ Σᵢ wᵢ p̂ᵢ(1 − p̂ᵢ)/|Bᵢ| in the
square) and add it again, since each draw is noisier than the data it came from.

With ``debias=True`` the interval is built for θ = Σᵢ wᵢ (q̂ᵢ − pᵢ)² (the squared error
that the debiased estimate D estimates without bias) from a *recentred* bootstrap: the
draws are made in a world whose gaps are the observed ones shrunk by λ = √(D₊ / P)
(P the plug-in square), so its θ̃ = Σ wᵢ (λ gᵢ)² equals D₊ = max(D, 0), and each draw's
debiased estimate D* is compared with that known θ̃. The root L* = D* − θ̃ imitates
D − θ, including the extra bias that correlated labels leave in D (their within-bin
variance is larger than p̂(1 − p̂)/(n − 1) assumes). The draws θ_s = D − L*_s then give
the interval: their quantiles (``"percentile"``, the basic bootstrap) or mean ∓ z·std
(``"normal"``), each end clipped at 0 and square-rooted.

**Which world, pairs or groups.** The spread of L* comes mostly from its linear term
2 Σ wᵢ gᵢ eᵢ*, so it is only right if the world's gaps carry the true gaps' weight. For
independent pairs the shrink λ above does that in expectation (the observed gaps'
squares exceed the true ones by the same noise that D removes). When labels are
correlated within groups, the group effects move every bin's error together and the
linear term's spread no longer shrinks with the noise: the shrunk world then understates
it (by 19% at a small true error in ``benchmarks/coverage_diagnostics.py``), while the
unshrunk world matches a world built from the true gaps to within 10%. So the group
bootstrap uses the observed gaps (λ = 1), the conservative choice: on weakly correlated
groups it over-covers at a small true error rather than under-covering on strongly
correlated ones (``docs/coverage.md``).

**Covering zero.** A calibration error is never negative, so both ends are clipped at
0. When the true error is exactly 0 a two-sided interval clipped this way covers it
unless its lower end is positive: it misses in one tail only, so its coverage there is
1 − α/2 (0.975 at 95%), not 1 − α. ``docs/coverage.md`` shows this on calibrated data.
"""

from __future__ import annotations

import warnings
from statistics import NormalDist
from typing import Literal, NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import (
    Bins,
    _bin_of_rank,
    _order_key,
    _sort_pairs,
    uniform_bin_of,
)

Interval = Literal["paper", "pairs", "groups"]
# Draws are made in blocks of at most this many cells (S·T or S·G), to bound memory.
_BLOCK = 1 << 22


class IntervalSummary(NamedTuple):
    """Error, centre, spread and ends of an interval (0-dim float64 tensors)."""

    error: Tensor
    mean: Tensor
    std: Tensor
    lower: Tensor
    upper: Tensor


def normal_quantile(confidence: float) -> float:
    """z with P(|Z| < z) = confidence for a standard normal Z (1.96 for 0.95).

    Example:
        >>> round(normal_quantile(0.95), 2)
        1.96
    """
    return NormalDist().inv_cdf((1 + confidence) / 2)


def bin_index(
    probs: Tensor,
    target: Tensor,
    *,
    binning: str = "adaptive",
    bin_size: int = 5000,
    n_bins: int = 15,
) -> Tensor:
    """Each pair's bin, as an index into the bins that ``compute_bins`` returns.

    Adaptive bins are runs of ``bin_size`` pairs in q order, a tie group's labels spread
    evenly over its runs (the last run, if short, joins the one before); uniform bins
    are equal-width, empty ones dropped. The pairs must be validated and flat.

    Example:
        >>> import torch
        >>> probs = torch.tensor([0.9, 0.1, 0.5, 0.2])
        >>> bin_index(probs, torch.tensor([1, 0, 1, 0]), bin_size=2)
        tensor([1, 0, 1, 0])
    """
    n = probs.numel()
    if binning == "uniform":
        raw = uniform_bin_of(probs, n_bins)
        # compute_bins drops empty bins, so renumber the occupied ones consecutively.
        occupied = torch.bincount(raw, minlength=n_bins) > 0
        return (torch.cumsum(occupied, 0) - 1).index_select(0, raw)
    key, width = _order_key(probs)
    order = _interleave_ties(key, _sort_pairs(key, width, target), target)
    rank_bin = _bin_of_rank(torch.arange(n, device=probs.device), bin_size, max(1, n // bin_size))
    return torch.empty_like(rank_bin).index_put_((order,), rank_bin)


def _interleave_ties(key: Tensor, order: Tensor, target: Tensor) -> Tensor:
    """``order`` (by key, zeros first) with each tie group's labels spread evenly.

    The bins give a split tie group's every part its mean label (DESIGN.md); a pair must
    still sit in one bin, so within a tie group the i-th of its n₀ zeros goes to position
    (i + ½)/n₀ and the j-th of its n₁ ones to (j + ½)/n₁. Every run of the group then holds
    its share of ones up to one pair, and resampling the pairs moves those bins' labels
    as the bins themselves count them (zeros first would give bins of all 0 or all 1).
    """
    n = key.numel()
    if n < 2:
        return order
    k, y = key.index_select(0, order), (target.index_select(0, order) != 0).to(torch.int64)
    starts_group = torch.ones(n, dtype=torch.bool, device=key.device)
    starts_group[1:] = k[1:] != k[:-1]
    group = torch.cumsum(starts_group, 0) - 1
    label_class = 2 * group + y  # consecutive: a group's zeros, then its ones
    starts_class = torch.ones(n, dtype=torch.bool, device=key.device)
    starts_class[1:] = label_class[1:] != label_class[:-1]
    class_id = torch.cumsum(starts_class, 0) - 1
    class_start = torch.nonzero(starts_class).squeeze(1)
    size = torch.bincount(class_id).to(torch.float64)
    within = torch.arange(n, device=key.device) - class_start.index_select(0, class_id)
    position = (within + 0.5) / size.index_select(0, class_id)
    by_position = torch.sort(position, stable=True)[1]
    regroup = torch.sort(group.index_select(0, by_position), stable=True)[1]
    return order.index_select(0, by_position.index_select(0, regroup))


def _pair_blocks(bins: Bins, n_samples: int, generator: torch.Generator | None):
    """Blocks of Poisson-bootstrap bin sums (count, Σq, Σy), each [S_b, T]."""
    ones = bins.count * bins.freq
    zeros = bins.count - ones
    per_block = max(1, _BLOCK // max(1, ones.numel()))
    for start in range(0, n_samples, per_block):
        size = min(per_block, n_samples - start)
        n1 = torch.poisson(ones.expand(size, *ones.shape).contiguous(), generator=generator)
        n0 = torch.poisson(zeros.expand(size, *ones.shape).contiguous(), generator=generator)
        count = n1 + n0
        yield count, count * bins.pred_mean, n1


def group_sum_matrix(group: Tensor, index: Tensor, n_bins: int, n_groups: int, values) -> Tensor:
    """Sparse CSR ``[V·T, G]``: row v·T + t holds, per group, the sum of ``values[v]`` over
    the group's pairs in bin t.

    ``group`` holds compact ids in [0, G) and ``index`` each pair's bin in [0, T), both
    flat and aligned with every tensor of ``values``. Cells are keyed bin-major, so the
    sorted unique keys are already in CSR order and no COO conversion (a second sort)
    is needed; the V row blocks share one sparsity pattern.

    Example:
        >>> import torch
        >>> m = group_sum_matrix(
        ...     torch.tensor([0, 0, 1]), torch.tensor([0, 1, 1]), 2, 2, [torch.ones(3)]
        ... )
        >>> m.to_dense()
        tensor([[1., 0.],
                [1., 1.]], dtype=torch.float64)
    """
    device = index.device
    cell, cell_of_pair = torch.unique(index * n_groups + group, return_inverse=True)
    nnz = cell.numel()
    per_bin = torch.bincount(cell // n_groups, minlength=n_bins)
    starts = torch.cumsum(per_bin, 0) - per_bin
    crow = torch.cat(
        [starts + v * nnz for v in range(len(values))]
        + [torch.tensor([len(values) * nnz], device=device)]
    )
    sums = [
        torch.zeros(nnz, dtype=torch.float64, device=device).index_add_(
            0, cell_of_pair, v.to(torch.float64)
        )
        for v in values
    ]
    with warnings.catch_warnings():
        # CSR is "beta" in torch but its product with a dense matrix is the fastest path.
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            crow,
            (cell % n_groups).repeat(len(values)),
            torch.cat(sums),
            (len(values) * n_bins, n_groups),
            check_invariants=False,
        )


def _group_blocks(
    probs: Tensor,
    target: Tensor,
    groups: Tensor,
    index: Tensor,
    n_bins: int,
    n_samples: int,
    generator: torch.Generator | None,
):
    """Blocks of group-bootstrap bin sums (count, Σq, Σy), each [S_b, T]."""
    group = torch.unique(groups.reshape(-1), return_inverse=True)[1]
    n_groups = int(group.max().item()) + 1
    ones = torch.ones_like(probs, dtype=torch.float64)
    matrix = group_sum_matrix(group, index, n_bins, n_groups, [ones, probs, target])
    per_block = max(1, _BLOCK // max(n_groups, 3 * n_bins))
    for start in range(0, n_samples, per_block):
        size = min(per_block, n_samples - start)
        rate = torch.ones((n_groups, size), dtype=torch.float64, device=probs.device)
        sums = torch.sparse.mm(matrix, torch.poisson(rate, generator=generator)).T
        yield sums[:, :n_bins], sums[:, n_bins : 2 * n_bins], sums[:, 2 * n_bins :]


def _plugin_of_draws(count: Tensor, sum_q: Tensor, sum_y: Tensor, norm: str) -> Tensor:
    """Plug-in error of bin sums along the last dimension."""
    weight = count / count.sum(dim=-1, keepdim=True)
    gap = (sum_q - sum_y) / count.clamp_min(1)
    if norm == "l2":
        return (weight * gap**2).sum(dim=-1).sqrt()
    if norm == "l1":
        return (weight * gap.abs()).sum(dim=-1)
    return torch.where(count > 0, gap.abs(), 0).amax(dim=-1)


def _debiased_square(count: Tensor, gap: Tensor, freq: Tensor) -> Tensor:
    """Σ wᵢ [gapᵢ² − fᵢ(1 − fᵢ)/(nᵢ − 1)] along the last dimension (unclipped)."""
    weight = count / count.sum(dim=-1, keepdim=True)
    noise = freq * (1 - freq) / (count - 1).clamp_min(1)
    return (weight * (gap**2 - noise)).sum(dim=-1)


class Draws(NamedTuple):
    """Per-draw statistics of a bootstrap, draws along dimension 0.

    ``plugin``: the plug-in error of each draw; ``theta``: the recentred squared error
    D − (D* − θ̃) of each draw; ``error``/``debiased``: the data's plug-in error and its
    unclipped debiased square D. Leading batch dimensions of the bins are kept.
    """

    plugin: Tensor
    theta: Tensor | None
    error: Tensor
    debiased: Tensor | None


def draw_statistics(
    bins: Bins, blocks, *, norm: str = "l2", debias: bool = True, shrink: bool = True
) -> Draws:
    """Reduce blocks of bootstrap bin sums ``[S_b, ..., T]`` to per-draw statistics.

    The bins may carry leading batch dimensions (``[..., T]``, e.g. repetitions of a
    simulation), which the blocks share. ``shrink``: build the recentred world from the
    observed gaps shrunk to the debiased estimate (pairs) or from the observed gaps
    themselves (groups); see the module docstring.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> g = torch.Generator().manual_seed(0)
        >>> d = draw_statistics(bins, _pair_blocks(bins, 100, g))
        >>> d.plugin.shape, d.theta.shape, round(d.error.item(), 3)
        (torch.Size([100]), torch.Size([100]), 0.1)
    """
    gap = bins.pred_mean - bins.freq
    sums = (bins.count, bins.count * bins.pred_mean, bins.count * bins.freq)
    error = _plugin_of_draws(*sums, norm)
    plugins, thetas, estimate = [], [], None
    if debias:
        if norm != "l2":
            raise ValueError(f"debias applies to norm='l2' only, got norm={norm!r}")
        estimate = _debiased_square(bins.count, gap, bins.freq)
        plugin = error**2
        # Shrunk, the bootstrap world's θ̃ equals max(D, 0); unshrunk, it is P.
        factor = torch.where(plugin > 0, estimate.clamp_min(0) / plugin, 0).sqrt()
        if not shrink:
            factor = torch.ones_like(factor)
        shrunk = factor.unsqueeze(-1) * gap
        target_square = factor**2 * plugin
    for count, sum_q, sum_y in blocks:
        plugins.append(_plugin_of_draws(count, sum_q, sum_y, norm))
        if debias:
            safe = count.clamp_min(1)
            freq = sum_y / safe
            # The draw's movement of each bin's gap, added to the shrunk gap.
            gap_draw = shrunk + (sum_q / safe - bins.pred_mean) - (freq - bins.freq)
            root = _debiased_square(count, gap_draw, freq) - target_square
            thetas.append(estimate - root)
    theta = torch.cat(thetas) if debias else None
    return Draws(torch.cat(plugins), theta, error, estimate)


def _nan_mean_std(values: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and standard deviation along dimension 0, leaving NaN (empty draws) out."""
    valid = ~values.isnan()
    n = valid.sum(dim=0)
    mean = torch.where(valid, values, 0).sum(dim=0) / n.clamp_min(1)
    square = torch.where(valid, values - mean, 0).pow(2).sum(dim=0)
    return mean, (square / (n - 1).clamp_min(1)).sqrt()


def interval_of_draws(
    draws: Draws, *, confidence: float = 0.95, method: str = "percentile", debias: bool = False
) -> IntervalSummary:
    """The interval of :func:`draw_statistics`' draws; see the module docstring.

    Plug-in (``debias=False``): quantiles of the draws' errors, or error ∓ z·std.
    Debiased: quantiles of θ draws, or their mean ∓ z·std, clipped at 0, square-rooted.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> g = torch.Generator().manual_seed(0)
        >>> d = draw_statistics(bins, _pair_blocks(bins, 2000, g))
        >>> s = interval_of_draws(d, debias=True)
        >>> bool(s.lower < s.error < s.upper), round(s.error.item(), 3)
        (True, 0.098)
    """
    if debias:
        if draws.theta is None:
            raise ValueError("these draws were made with debias=False")
        values, errors = draws.theta, draws.theta.clamp_min(0).sqrt()
        error, centre = draws.debiased.clamp_min(0).sqrt(), None
    else:
        values = errors = draws.plugin
        error = centre = draws.error
    # A draw that gave every unit weight 0 is empty (NaN): it is left out, i.e. the
    # bootstrap is conditioned on a non-empty draw (only likely with a handful of groups).
    mean, std = _nan_mean_std(errors)
    if method == "normal":
        z = normal_quantile(confidence)
        middle, spread = _nan_mean_std(values)
        middle = middle if centre is None else centre
        low, high = middle - z * spread, middle + z * spread
    else:
        tail = (1 - confidence) / 2
        levels = torch.tensor([tail, 1 - tail], dtype=values.dtype, device=values.device)
        low, high = torch.nanquantile(values, levels, dim=0)
    if debias:
        # A negative debiased square is a sampling accident (the truth is ≥ 0): the upper
        # end is taken as if the estimate were 0, so it cannot collapse to a [0, 0]
        # interval that claims certainty (it did on ~10% of calibrated data sets).
        high = high + (-draws.debiased).clamp_min(0)
    low, high = low.clamp_min(0), high.clamp_min(0)
    if debias:
        low, high = low.sqrt(), high.sqrt()
    return IntervalSummary(error, mean, std, low, high)


def summarize_draws(
    bins: Bins,
    blocks,
    *,
    confidence: float = 0.95,
    method: str = "percentile",
    norm: str = "l2",
    debias: bool = False,
    shrink: bool = True,
) -> IntervalSummary:
    """Interval from blocks of bootstrap bin sums: :func:`draw_statistics` then
    :func:`interval_of_draws`."""
    draws = draw_statistics(bins, blocks, norm=norm, debias=debias, shrink=shrink)
    return interval_of_draws(draws, confidence=confidence, method=method, debias=debias)


def pair_bootstrap(
    bins: Bins,
    *,
    n_samples: int = 10000,
    confidence: float = 0.95,
    method: str = "percentile",
    norm: str = "l2",
    debias: bool = False,
    generator: torch.Generator | None = None,
) -> IntervalSummary:
    """Interval of the calibration error by the Poisson bootstrap over pairs.

    Needs only the bins (exact Poisson counts per bin and label; see the module
    docstring), so it also serves the streaming metric.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> s = pair_bootstrap(bins, n_samples=2000, generator=torch.Generator().manual_seed(0))
        >>> bool(s.lower < s.error < s.upper)
        True
    """
    if method not in ("normal", "percentile"):
        raise ValueError(f"method must be 'normal' or 'percentile', got {method!r}")
    blocks = _pair_blocks(bins, n_samples, generator)
    return summarize_draws(
        bins, blocks, confidence=confidence, method=method, norm=norm, debias=debias
    )


def group_bootstrap(
    probs: Tensor,
    target: Tensor,
    groups: Tensor,
    bins: Bins,
    index: Tensor,
    *,
    n_samples: int = 10000,
    confidence: float = 0.95,
    method: str = "percentile",
    norm: str = "l2",
    debias: bool = False,
    generator: torch.Generator | None = None,
) -> IntervalSummary:
    """Interval of the calibration error by the Poisson bootstrap over groups.

    ``probs``, ``target``, ``groups`` and ``index`` (each pair's bin, from
    :func:`bin_index`) are flat and aligned; ``bins`` are the bins of the data.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> probs = torch.rand(2000, generator=g, dtype=torch.float64)
        >>> target = torch.bernoulli(probs, generator=g)
        >>> groups = torch.arange(2000) // 10
        >>> from calib_metrics.functional.calibration import compute_bins
        >>> bins = compute_bins(probs, target, bin_size=200)
        >>> index = bin_index(probs, target, bin_size=200)
        >>> s = group_bootstrap(
        ...     probs, target, groups, bins, index, n_samples=500, debias=True, generator=g
        ... )
        >>> bool(s.lower <= s.error <= s.upper), s.lower.item()
        (True, 0.0)
    """
    blocks = _group_blocks(
        probs.to(torch.float64), target, groups, index, bins.count.numel(), n_samples, generator
    )
    return summarize_draws(
        bins, blocks, confidence=confidence, method=method, norm=norm, debias=debias, shrink=False
    )
