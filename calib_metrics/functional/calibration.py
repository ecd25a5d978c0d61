"""Calibration error, its sampled interval, and the Brier score's decomposition.

The paper's Definition 1 estimated by Algorithm 1 (adaptive bins),

    CalibErr = sqrt( Σᵢ |Bᵢ| (q̂ᵢ − p̂ᵢ)² / N ),

with ``norm="l1"``/``"max"`` and the debiased square as options. Its interval comes from
the one pipeline of :mod:`calib_metrics.functional.intervals`: a draw generator
(Algorithm 2's per-bin normals, or the Poisson bootstrap over pairs or over groups)
feeds the same reduction as the point estimate (:func:`error_from_bins`) and one summary
into a :class:`CalibrationResult`. Bins and estimates are float64 whatever the input
dtype, on the input's device.
"""

from __future__ import annotations

import warnings
from typing import Literal, NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.auto_bin import AUTO, check_bin_size, resolve_bin_size
from calib_metrics.functional.binning import (
    Bins,
    _check_pairs,
    adaptive_tied_bins,
    bin_index,
    check_bins,
    check_ids,
    uniform_binning,
)
from calib_metrics.functional.clusters import grouped_bins
from calib_metrics.functional.errors import (
    check_flag,
    check_generator,
    check_int,
    said_once_for_all,
    warn_at_caller,
)
from calib_metrics.functional.intervals import (
    MIN_UNITS,
    CalibrationResult,
    Draws,
    Interval,
    Norm,
    bin_errors,
    check_draw_options,
    compact_units,
    draw_statistics,
    group_draws,
    interval_of_draws,
    item_draws,
    pair_draws,
    pairs_counted_per,
    paper_draws,
    resampled_interval,
    weighted_mean,
    without_interval_if_few,
)
from calib_metrics.functional.multiclass import (
    FEW_CLASSES,
    Mode,
    PairSet,
    apart_message,
    average_results,
    is_multiclass,
    one_hot_pairs_message,
    pair_sets,
    resamples_items,
)
from calib_metrics.functional.paper_warnings import warn_of_paper_draws
from calib_metrics.functional.ties import cut_cells
from calib_metrics.functional.zero_width import warn_if_zero_width

MAX_BIN_SIZE = 2**62
MAX_UNIFORM_BINS = 2**20
# The n_bins every entry defaults to; only uniform binning reads it.
DEFAULT_UNIFORM_BINS = 15
Binning = Literal["adaptive", "uniform"]
IntervalMethod = Literal["normal", "percentile"]


class BrierDecomposition(NamedTuple):
    """Brier score and its calibration–refinement split (the paper's Eq. 1), binned.

    ``brier`` is exact, mean of (q − y)². ``calibration`` is Σ|Bᵢ|(q̂ᵢ − p̂ᵢ)²/N, the
    plug-in square: the square of the l2 CalibErr with ``debias=False``, not of the
    debiased default (which subtracts each bin's sampling noise, so is smaller).
    ``refinement`` is Σ|Bᵢ| p̂ᵢ(1 − p̂ᵢ)/N. The binned
    terms add up to ``brier`` minus ``within_bin``, the part of the score due to the
    spread of q inside bins (Σ over bins of Var(q) − 2·Cov(q, y)), which vanishes as
    bins shrink to single values of q.

    Example:
        >>> import torch
        >>> probs = torch.tensor([0.1, 0.3, 0.6, 0.8], dtype=torch.float64)
        >>> d = brier_decomposition(probs, torch.tensor([0, 1, 1, 1]), bin_size=2)
        >>> round(d.brier.item(), 4), round(d.calibration.item(), 4)
        (0.175, 0.09)
        >>> round((d.calibration + d.refinement + d.within_bin).item(), 4)  # adds up
        0.175
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
    # Not check_int: its message names the integers alone, and "auto" is the default.
    check_bin_size(bin_size)
    check_int("n_bins", n_bins)
    _check_size_matches_binning(binning, bin_size, n_bins)
    # Past these, the ranks (int64) or the uniform edges (memory) cannot be formed.
    if bin_size != AUTO and bin_size > MAX_BIN_SIZE:
        raise ValueError(f"bin_size must be at most 2**62, got {bin_size}")
    if n_bins > MAX_UNIFORM_BINS:
        raise ValueError(f"n_bins must be at most 2**20, got {n_bins}")


def _check_size_matches_binning(binning: str, bin_size: int | str, n_bins: int) -> None:
    # Each binning reads its own size; the other's, set away from its default, had been
    # ignored without a word (the command line refused it).
    if binning == "uniform" and bin_size != AUTO:
        raise ValueError(
            f"bin_size sizes adaptive bins; binning='uniform' takes n_bins, got bin_size={bin_size}"
        )
    if binning == "adaptive" and n_bins != DEFAULT_UNIFORM_BINS:
        raise ValueError(
            f"n_bins counts uniform bins; it needs binning='uniform', got n_bins={n_bins}"
        )


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

    The bins carry the tie groups their boundaries cut (``TiedBins``), which the
    debiased square and the draws use.

    ``bin_size="auto"`` picks β = ⌈√N⌉ (:func:`~calib_metrics.functional.auto_bin.auto_bin_size`).
    """
    if validate:
        probs, target = _check_pairs(probs, target)
    else:
        probs, target = probs.reshape(-1), target.reshape(-1)
    if binning == "uniform":
        return uniform_binning(probs, target, n_bins)
    size = resolve_bin_size(bin_size, probs.numel())
    return adaptive_tied_bins(probs, target, size)


def bins_and_index(
    probs: Tensor, target: Tensor, *, binning: Binning, bin_size: int | str, n_bins: int
) -> tuple[Bins, Tensor]:
    """:func:`compute_bins` of validated flat pairs and each pair's bin (``bin_index``),
    what the group bootstrap resamples."""
    options = {"binning": binning, "n_bins": n_bins}
    size = bin_size if binning == "uniform" else resolve_bin_size(bin_size, probs.numel())
    bins = compute_bins(probs, target, bin_size=size, validate=False, **options)
    return bins, bin_index(probs, target, bin_size=size, **options)


def _debias_for(norm: str, debias: bool) -> bool:
    """``debias`` as asked for l2; l1 and max have no debiased form and use the plug-in."""
    check_flag("debias", debias)
    return debias and norm == "l2"


def error_from_bins(bins: Bins, norm: Norm = "l2", *, debias: bool = False) -> Tensor:
    """The calibration error of given bins (Algorithm 1, step 5).

    ``debias=True`` (``norm="l2"`` only) replaces each squared gap by its unbiased
    estimate (q̂ᵢ − p̂ᵢ)² − p̂ᵢ(1 − p̂ᵢ)/(nᵢ − 1), nᵢ the bin's effective sample size.
    Derivation: given the bin (its q fixed), its n = |Bᵢ| labels are independent with
    mean pᵢ (the bin's true frequency), so p̂ᵢ has mean pᵢ and variance pᵢ(1 − pᵢ)/n, and

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

    Ties: a bin that meets a tie group cut by a bin boundary counts the group's part at
    the group's mean label (the tie rule), so its p̂ is as noisy as a mean of
    n_eff = n²/Σ_g c_g²/N_g labels (c_g of a group's N_g pairs in the bin, an untied
    pair being c = N = 1), and n_eff replaces n above
    (:func:`~calib_metrics.functional.intervals.debiased_square`). The bins that this
    library's binning returns record the cut groups (exact and streaming); bins built
    by hand do not, and fall back to counting each run of adjacent bins with the same
    mean prediction and frequency (bins wholly inside one group) as one sample of the
    run's count (:func:`~calib_metrics.functional.ties.tie_run_counts`), which misses a
    bin holding a group's edge beside other values. Bins are checked
    (:func:`~calib_metrics.functional.binning.check_bins`, one host sync): counts ≥ 0 with
    a positive total, means and frequencies in [0, 1], one shape; else ValueError. They
    are then taken in float64 and detached, whatever their dtype (integer counts,
    float16), so the result is a 0-dim float64 tensor without autograd history.

    Example:
        >>> import torch
        >>> bins = Bins(torch.tensor([0.2, 0.8]), torch.tensor([0.1, 0.8]), torch.tensor([5, 5]))
        >>> error_from_bins(bins)
        tensor(0.0707, dtype=torch.float64)
        >>> error_from_bins(bins, "max")
        tensor(0.1000, dtype=torch.float64)
    """
    if norm not in ("l1", "l2", "max"):
        raise ValueError(f"norm must be 'l1', 'l2' or 'max', got {norm!r}")
    check_flag("debias", debias)  # "False" is truthy: it had given the debiased 0.0
    if debias and norm != "l2":
        raise ValueError(f"debias applies to norm='l2' only, got norm={norm!r}")
    return bin_errors(check_bins(bins), norm, debias)


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
        n_bins: number of bins of uniform binning. Each binning reads its own size: a
            ``bin_size`` beside ``binning="uniform"``, or an ``n_bins`` other than 15
            beside adaptive binning, is refused (ValueError), not ignored.
        norm: ``"l2"`` (the paper's RMS error), ``"l1"`` (weighted mean absolute gap)
            or ``"max"`` (worst bin).
        debias: subtract each bin's sampling noise from its squared gap (default; l2
            only: ``l1`` and ``max`` fall back to the plug-in), with each bin's effective
            sample size where a bin boundary cuts a tie group; see
            :func:`error_from_bins`. The paper's estimator is ``debias=False,
            bin_size=5000``. A bin of one pair has no label noise to subtract and keeps
            its plug-in square (with no tied q, ``bin_size=1`` gives the plug-in, √Brier;
            a tie group cut into one-pair bins gives each the group's mean label); this function
            does not warn of it, nor of fewer than 10 bins:
            :class:`~calib_metrics.CalibrationError` and the command line do
            (:mod:`calib_metrics.few_bins`).
        mode: for multiclass ``probs [..., C]`` with integer ``target [...]``:
            ``"one_vs_rest"`` (the paper's), ``"top_label"`` or ``"classwise"`` (the
            mean of the per-class errors); see :mod:`calib_metrics.functional.multiclass`.

    Returns:
        0-dim float64 tensor on the input's device, without autograd history (the
        probabilities are treated as data; see :mod:`calib_metrics.functional`).

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
    return bin_errors(bins, norm, debias)


def sampled_errors(
    bins: Bins,
    n_samples: int,
    *,
    norm: Norm = "l2",
    debias: bool = False,
    generator: torch.Generator | None = None,
) -> Tensor:
    """The S errors of Algorithm 2's draws of ``bins`` (float64; drawn in float32).

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> sampled_errors(bins, 3, generator=torch.Generator().manual_seed(0)).shape
        torch.Size([3])
    """
    check_generator(generator)
    draws = paper_draws(bins, n_samples, generator)
    return draw_statistics(bins, draws, norm=norm, debias=debias, world="draws").errors


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
    Bins made by hand are checked and taken in float64 as :func:`error_from_bins` takes
    them; a bin of count 0 weighs nothing, in the draws as in the estimate.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> r = ci_from_bins(bins, n_samples=1000, generator=torch.Generator().manual_seed(0))
        >>> round(r.error.item(), 3), bool(r.lower < r.mean < r.upper)
        (0.1, True)
    """
    check_draw_options(n_samples, confidence, method, norm, debias, generator)
    if interval not in ("paper", "pairs"):
        raise ValueError(
            f"interval must be 'paper' or 'pairs' for given bins, got {interval!r} "
            "('groups' needs the pairs: use calibration_error_ci)"
        )
    options = {"confidence": confidence, "method": method, "norm": norm, "debias": debias}
    return bins_interval(check_bins(bins), interval, n_samples, generator, **options)


def bins_interval(
    bins: Bins,
    interval: Interval,
    n_samples: int,
    generator: torch.Generator | None,
    **options: object,
) -> CalibrationResult:
    """:func:`ci_from_bins` unchecked, for bins this library made (``interval`` "paper" or
    "pairs"; ``options``: confidence, method, norm, debias). The paper's draws come with
    the warnings of :mod:`~calib_metrics.functional.paper_warnings`, an interval of zero
    width with :func:`~calib_metrics.functional.zero_width.warn_if_zero_width`'s.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
        >>> r = bins_interval(bins, "pairs", 100, torch.Generator().manual_seed(0))
        >>> round(r.error.item(), 3)
        0.1
    """
    draws = {"paper": paper_draws, "pairs": pair_draws}[interval](bins, n_samples, generator)
    result = resampled_interval(bins, draws, interval, **options)
    # Host sync: the number of pairs. The paper's draws of a bin of one pair (or of any
    # bin whose pairs agree) are its frequency itself: one pair had a "certain"
    # zero-width interval, [0.7, 0.7].
    n_pairs = round(float(bins.count.sum()))
    if interval == "paper" and n_pairs >= MIN_UNITS:  # of no interval, nothing to say
        debiased = bool(options.get("debias")) and options.get("norm", "l2") == "l2"
        warn_of_paper_draws(bins, debiased)
    result = without_interval_if_few(result, n_pairs, "pair")
    return warn_if_zero_width(result, options.get("norm", "l2"), options.get("confidence", 0.95))


def _check_interval_options(
    n_samples: int, confidence: float, method: str, interval: str = "paper"
) -> None:
    check_draw_options(n_samples, confidence, method)
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
            Bins of 2 or 3 pairs make a bootstrap interval too narrow (about 89%
            coverage at 95%: ``docs/coverage.md``).
        n_samples: number S of simulated error values (draws), from 2 to
            :data:`~calib_metrics.functional.intervals.MAX_DRAWS` (10⁷). The ends are
            Monte Carlo estimates: keep S in the hundreds or more (the default 10,000);
            with a handful of draws they are noisy enough to leave out the estimate
            itself (no warning is given).
        confidence: coverage of the interval (0.95 gives the paper's ±1.96·std).
        generator: source of randomness (on the input's device) for reproducible draws.
        method: ``"normal"`` (the default) or ``"percentile"`` (the draws'
            percentiles). The normal form's ends
            (:data:`~calib_metrics.functional.intervals.NORMAL_ENDS`): for Algorithm 2
            (interval paper), the draws' mean ∓ z·std; for the plug-in bootstrap (no
            debias), the error ∓ z·std of the draws; for the debiased bootstrap,
            √(m ∓ z·s), m and s the mean and std of the draws' recentred squares, not
            the reported mean and std of their roots (the upper end widened by −D where
            the debiased square D is negative); ends clipped at 0.
        binning, n_bins, norm, debias: as in :func:`calibration_error`.
        interval: None (default): ``"pairs"``, or ``"groups"`` when ``groups`` is given;
            ``"paper"`` (Algorithm 2: per-bin frequencies redrawn from normals),
            ``"pairs"`` (Poisson bootstrap over pairs; the one-vs-rest pairs of two
            classes, a pair and its mirror, are drawn item by item, and the result's kind
            says ``"items"``: :func:`~calib_metrics.functional.multiclass.resamples_items`;
            the pairs of three to five classes, and a one-hot target of at most five,
            drawn apart, are warned of) or ``"groups"`` (Poisson bootstrap over whole groups,
            e.g. sentences); the bins are formed once and not re-formed per draw. With
            ``debias=True`` the bootstrap intervals are recentred on the debiased estimate (see
            :mod:`calib_metrics.functional.intervals`); ``docs/coverage.md`` measures
            every combination. ``"paper"`` warns with ``debias=True`` (its draws centre
            near the plug-in estimate), and where a bin boundary cuts a tie group of
            mixed labels: it redraws each of the group's bins on its own, so its
            interval depends on where the boundaries fall, while ``"pairs"`` draws the
            group once (:mod:`~calib_metrics.functional.paper_warnings`).
        groups: group id of every pair (any integer tensor of ``probs``' shape; for
            multiclass input, of ``target``'s: one id per item), needed
            by and only used with ``interval="groups"``; with ``debias=True`` the noise
            term is then each bin's cluster-robust variance over the groups
            (:mod:`~calib_metrics.functional.clusters`), so ``error`` may differ slightly
            from :func:`calibration_error`'s, which assumes independent labels.
            Independent pairs need no groups: groups of one pair each give a wider,
            conservative interval than ``interval="pairs"``, since the group bootstrap
            draws around the observed gaps (λ = 1, :mod:`~calib_metrics.functional.intervals`).
            Fewer than ``MIN_UNITS`` (10) groups — or, with ``interval="pairs"`` or
            ``"paper"``, pairs — give no interval: NaN mean, std and ends, with a warning
            (the error stands).
        mode: multiclass input as in :func:`calibration_error`; ``"classwise"`` averages
            the per-class results (its interval conservatively, see
            :func:`~calib_metrics.functional.multiclass.average_results`) and says each
            class's warning once for the call (:func:`classwise_results`).

    Every interval holds a bin whose labels all agree at that frequency in every draw
    (a pure bin's ones and zeros are redrawn as ones and zeros; Algorithm 2's variance
    p̂(1 − p̂)/|B| is 0 there). The max norm takes the worst bin alone, so when that bin
    is pure the interval has zero width (10 labels of 0 in a bin of mean prediction 0.4:
    [0.4, 0.4]), though its labels leave the true frequency open (up to 0.31 at 95%); the
    l1 and l2 norms weigh the bins by their drawn counts and collapse only where every bin
    that counts is pure (``interval="paper"`` on separable labels). An interval of zero
    width warns (:class:`~calib_metrics.functional.zero_width.ZeroWidthWarning`), naming
    the pure bin and the exact (Clopper-Pearson) bound its labels put on its frequency.

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
    check_generator(generator)
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
        return average_results(classwise_results(sets, **options))
    by_item = interval == "pairs" and resamples_items(probs, target, mode)
    if interval == "pairs" and not by_item:
        _warn_of_pairs_apart(probs, target, mode)
    n_classes = probs.shape[-1]
    probs, target, groups = sets[0]
    options = {"n_samples": n_samples, "confidence": confidence, "method": method}
    options |= {"norm": norm, "debias": debias, "generator": generator}
    binned = {"binning": binning, "bin_size": bin_size, "n_bins": n_bins}
    if by_item:  # an item's C pairs, flat in item order, are drawn together
        return item_pairs_interval(probs, target, n_classes, **binned, **options)
    probs, target = _check_pairs(probs, target)
    if interval != "groups":
        bins = compute_bins(probs, target, **binned, validate=False)
        n_samples, generator = options.pop("n_samples"), options.pop("generator")
        return bins_interval(bins, interval, n_samples, generator, **options)
    # Compact group ids, found once for the debias term and the draws (host sync: G).
    units, n_groups = compact_units(check_ids(groups, probs))
    return _unit_interval(probs, target, units, n_groups, "groups", binned, options)


def _warn_of_pairs_apart(probs: Tensor, target: Tensor, mode: str) -> None:
    """Warn where the pair bootstrap draws apart the one-vs-rest pairs of an item of few
    classes: class ids beside probs ``[..., C]`` of 3 to ``FEW_CLASSES`` classes
    (:func:`~calib_metrics.functional.multiclass.apart_message`), or a one-hot target of
    at most ``FEW_CLASSES`` beside rows that sum to 1, whose advice is class ids
    (:func:`~calib_metrics.functional.multiclass.one_hot_pairs_message`)."""
    if mode == "one_vs_rest" and is_multiclass(probs, target):
        message = apart_message(probs.shape[-1])
    elif probs.ndim < 2 or probs.shape != target.shape or probs.shape[-1] > FEW_CLASSES:
        return
    else:
        message = one_hot_pairs_message(probs, target, read_by="interval")
    if message is not None:
        warn_at_caller(f"calibration_error_ci: {message}")


def item_pairs_interval(
    probs: Tensor, target: Tensor, pairs_per_item: int, **options: object
) -> CalibrationResult:
    """:func:`calibration_error_ci`'s pair bootstrap (``interval="pairs"``) of flat,
    checked pairs whose every ``pairs_per_item`` consecutive pairs are one item's, drawn
    together (``options``: its binning, draw and interval options); the result's kind
    (:func:`~calib_metrics.functional.intervals.interval_kind`) says ``"items"``. The
    error is the pairs' (debiased as pairs), as :func:`calibration_error` gives it.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(500, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> probs, target = torch.stack([1 - q, q], -1), torch.stack([1 - y, y], -1)
        >>> r = item_pairs_interval(probs.reshape(-1), target.reshape(-1), 2, n_samples=100,
        ...                         generator=g)
        >>> bool(r.error == calibration_error(probs.reshape(-1), target.reshape(-1)))
        True
    """
    probs, target = _check_pairs(probs, target)
    binned = {"binning": "adaptive", "bin_size": AUTO, "n_bins": 15}
    binned |= {key: options.pop(key) for key in binned if key in options}
    defaults = {"confidence": 0.95, "method": "normal", "norm": "l2", "debias": True}
    options = defaults | {"n_samples": 10000, "generator": None} | options
    n_items = probs.numel() // pairs_per_item
    return _unit_interval(probs, target, pairs_per_item, n_items, "items", binned, options)


def _unit_interval(
    probs: Tensor,
    target: Tensor,
    units: Tensor | int,
    n_units: int,
    interval: Interval,
    binned: dict,
    options: dict,
) -> CalibrationResult:
    """The bootstrap over ``n_units`` units: ``interval="groups"`` (``units``: compact
    group ids in [0, n_units), one per flat pair; the cluster-robust debias term and the
    observed gaps' world) or ``"items"`` (``units``: the pairs per item, consecutive; the
    pairs' debias term and shrunk world, as
    :func:`~calib_metrics.functional.comparison.compare_calibration` draws items, drawn
    by :func:`~calib_metrics.functional.intervals.item_draws`; the result's kind says
    ``"items"``, which figures name "item bootstrap")."""
    norm, confidence = options["norm"], options["confidence"]
    n_samples, generator = options.pop("n_samples"), options.pop("generator")
    bins, index = bins_and_index(probs, target, **binned)
    # The cut tie groups, found once for the debias term and the draws.
    cells = cut_cells(probs, index, bins.count.numel())
    if interval == "groups" and options["debias"]:
        bins = grouped_bins(probs, target, units, index, bins, cells, n_units)
    probs = probs.to(torch.float64)
    n_bins = bins.count.numel()
    if interval == "items":
        draws = item_draws(probs, target, units, index, n_bins, n_samples, generator, cells)
    else:
        draws = group_draws(
            probs, target, units, index, n_bins, n_samples, generator, cells, n_units
        )
    result = resampled_interval(bins, draws, interval, **options)
    result = without_interval_if_few(result, n_units, interval[:-1])
    return warn_if_zero_width(result, norm, confidence)


def classwise_results(sets: list[PairSet], **options: object) -> list[CalibrationResult]:
    """:func:`calibration_error_ci` of each class's pairs (``sets``, in class order; its
    ``options`` but ``groups``), the classes' warnings said once for the call
    (:func:`~calib_metrics.functional.errors.said_once_for_all`): the same text once, and
    a :class:`~calib_metrics.functional.errors.CountedWarning` (a zero-width interval, cut
    tie groups), whose text counts one class's pairs, for the first class that has it,
    named, with how many others do.

    Example:
        >>> import warnings
        >>> from calib_metrics.functional.multiclass import pair_sets
        >>> probs = torch.full((4, 3), 1 / 3)
        >>> sets = pair_sets(probs, torch.tensor([0, 1, 2, 0]), "classwise")
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     results = classwise_results(sets, n_samples=10)
        >>> len(results), len(caught)
        (3, 1)
    """
    with pairs_counted_per("class"):  # each class has every item's pair: N of all
        return said_once_for_all(
            calibration_error_ci(q, y, groups=g, **options) for q, y, g in sets
        )


def brier_decomposition(
    probs: Tensor,
    target: Tensor,
    *,
    bin_size: int | str = "auto",
    binning: Binning = "adaptive",
    n_bins: int = 15,
    mode: Mode = "one_vs_rest",
) -> BrierDecomposition:
    """Brier score with its calibration and refinement terms from the same bins (Eq. 1);
    the calibration term is the plug-in square (see :class:`BrierDecomposition`).

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
    calibration = weighted_mean((bins.pred_mean - bins.freq) ** 2, bins.count)
    refinement = weighted_mean(bins.freq * (1 - bins.freq), bins.count)
    return BrierDecomposition(brier, calibration, refinement, brier - calibration - refinement)


def interval_from_samples(
    samples: Tensor, confidence: float = 0.95, method: IntervalMethod = "normal"
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Retired: (mean, std, lower, upper) of Algorithm 2's sampled errors.

    Use :func:`~calib_metrics.functional.intervals.interval_of_draws` (or
    :func:`ci_from_bins`); this wrapper warns and calls it.
    """
    warnings.warn(
        "interval_from_samples is retired: use calib_metrics.functional.intervals."
        "interval_of_draws",
        DeprecationWarning,
        stacklevel=2,
    )
    draws = Draws(samples, samples, None, samples.mean(), None)
    return interval_of_draws(draws, confidence=confidence, method=method)[1:]
