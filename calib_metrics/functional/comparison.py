"""Paired comparison of two models' calibration error on the same items.

Two intervals that overlap neither prove nor refute a difference: the two errors are
measured on the same labels, so their sampling errors are correlated. Here both models
are resampled **together**: one set of Poisson(1) weights per draw, over the pairs (or
over whole groups: sentences, documents), reweights both models' bins, and each draw
gives both errors at once.

**Debiased (the default).** The interval is built on the difference of squared errors
Δ = θ_a − θ_b, which the debiased squares estimate without bias (D_a − D_b), and then
carried to the difference of errors δ = √θ_a − √θ_b. On the square scale the recentred
bootstrap of :mod:`calib_metrics.functional.intervals` serves both models at once: a
draw's root is L*_a − L*_b, and Δ's draws are (D_a − D_b) − (L*_a − L*_b). The p-value of
"no difference" (δ = 0 exactly when Δ = 0) is the two-sided bootstrap p-value of Δ's
draws.

**Which world: the linear term shrunk jointly.** A draw's root has a quadratic part, the
draw's own noise Σ wᵢ eᵢ*² less its debias term (the root in a world whose gaps are all
0), and a linear part 2 Σ wᵢ ĝᵢ eᵢ* (the root in the observed-gaps world minus the
quadratic part). The linear part is what carries the true gaps' weight, but the observed
gaps ĝ = g + ε carry noise too, and for Gaussian noise that noise adds exactly twice the
quadratic part's variance to the linear part's: E Var*(lin) = Var(lin with g) + 2 Var(quad),
model by model and for the difference a − b alike. So the draws are

    θ* = (1 − s)·θ*_zero + s·θ*_observed,
    s² = max(0, Var*(lin_a − lin_b) − 2·Var*(quad_a − quad_b)) / Var*(lin_a − lin_b),

one s for both models from the same draws (:func:`_paired_squares`). Where the two
models share bins and labels the noise of their gaps is common, cancels in g_a − g_b,
and leaves no quadratic part in the difference: s = 1, the observed gaps, which are then
exact (a single model's shrink λ = √(D₊/P) applied to each model narrowed the draws by
27% there, and the test rejected equal errors 10–12% of the time). Where both models are
calibrated their gaps are pure noise and s → 0: the draws are the noise alone (the
observed gaps made them 1.8× too wide, and the test rejected 0.3% of the time).
``tests/test_comparison_spread.py`` checks the draws' spread against the actual spread
of D_a − D_b over data sets in both cases; ``docs/coverage.md`` has the coverage study.

**The true gaps' share from the neighbouring runs.** For pure-noise gaps the excess
Var*(lin) − 2·Var*(quad) is about 4 Σ wᵢ²vᵢ(ĝᵢ² − vᵢ), the debiased squares themselves,
so s > 0 exactly in the data sets whose D_a − D_b is extreme, and those intervals widened:
two calibrated models were told apart 0.023–0.026 of the time at α = 0.05. The share is
therefore read as Cov*(lin, lin_nb), with lin_nb the linear part in the world whose gaps
are each bin's neighbouring runs' mean gap (``world="neighbours"``): where gaps change
little from one run to the next it estimates the true gaps' share, and for independent
labels its noise is independent of each bin's own: s² = max(0, Cov*)/Var*(lin), at most
1 (:func:`_neighbour_shrink`). A model with fewer than ``MIN_NEIGHBOUR_RUNS`` (10) runs of
distinct bins keeps the excess above (two runs with gaps of opposite signs would read as
pure noise).

**Each model's share, not one factor (since 2026-11-29).** One factor fitted to Δ serves
Δ, but δ = √θ_a − √θ_b weighs the two models' noise by different slopes (1/(2√θ)), so
where both are miscalibrated their common noise, which cancels in Δ, did not cancel in δ*:
two such models (errors 0.08 and 0.03) had intervals 2.6× the spread of their estimated
difference and covered it 0.997–1.000 of the time. So the two linear parts are carried
together, by the optimal-transport map of N(0, Cov*(lin_a, lin_b)) onto N(0, C), with C
the symmetrised 2 × 2 cross-covariance of (lin_a, lin_b) with their neighbouring runs'
linear parts (its part ≥ 0; :func:`_neighbour_transport`): each model's own true-gaps
share and theirs together, the scalar factor's Cov*(lin, lin_nb) for the difference
(bilinear in the two). The miscalibrated pair's interval is then 1.65× the spread (iid
labels; coverage 0.957, and 0.970 grouped), and the other settings moved towards 95% or
by at most 0.004 (``docs/coverage.md``, "The library since 2026-11-29"). Two models with
the same draws keep one factor, so that their draws stay equal.

Then each draw is carried to δ: δ* = sign(Δ*)·(√(m* + |Δ*|) − √m*) with
m* = min(θ_a*, θ_b*) the draw's smaller squared error (:func:`root_difference`, the
identity √θ_a − √θ_b written in Δ and m). The map is increasing in Δ and 0 at Δ = 0, so
δ's interval excludes 0 exactly when Δ's does, and it carries m's uncertainty: near m = 0
that matters, since a calibrated model's error √D₊ is biased up by about (sd D)^½, more
than the other model's whole spread. (An interval of the difference of the two roots
centred on the estimate covered a true difference of 0.049 against a calibrated model only
75–83% of the time.)

**Projected ends.** |√(m + Δ) − √m| is largest at the smallest m, and m = 0 (a calibrated
model) is a boundary that the draws cannot reach from above: where the truth is m = 0 the
draws' m* are mostly above it, and each draw carried with its own m* is pulled towards 0.
So where m's lower bound, a low quantile of the m* (:func:`boundary_level`), reaches 0, every
draw is also carried with m = 0, and the interval spans both percentile intervals
(:func:`_projected_ends`): Δ's interval projected over m's. Where the bound is above 0 the
map is smooth over m's interval and the per-draw ends stand (projecting there too only
widens: two miscalibrated models' interval, 2.6× the estimates' spread with one shrink
factor, was 2.7×). The
p-value is unchanged (both carry Δ*'s sign). With the per-draw ends alone (and the shrink
factor before 2026-11-28) a weak difference against a calibrated model (0.020, where the
noise of the squares is as large: N = 10⁴, bins that differ) was covered 0.887 of the time
with independent labels (0.952 grouped), the truth always above the interval. With this
construction: 0.940 (0.968), a strong one (0.049) 0.967 (0.967) at N = 10⁴.

**The pre-test's level falls with n (since 2026-11-29).** "m's lower bound reaches 0" is a
pre-test of m = 0. At the interval's own level, (1 − confidence)/2, it rejects m = 0 for a
calibrated model whose square is high by chance in that share of the data sets, and there
the upper end falls short: the strong difference above was covered 0.931 at N = 10⁵ (260
data sets), the misses all above. Such a miss costs more as n grows (the interval's width
shrinks as 1/√n, the shift √m* that a chance-high m* gives its upper end only as n^(−1/4)),
so the level falls with the n resampling units as generalised moment selection's
law-of-the-iterated-logarithm threshold does, Φ(−√(2 ln ln n)) (Andrews & Soares 2010), and
is never laxer than the interval's own: for a 95% interval 0.0175 at 10⁴ pairs, 0.0135 at
10⁵, and the interval's own 0.025 below about 920 units (so a few hundred groups are as
before); for a 90% interval the threshold is the stricter from about 48 units, for a 99% one
only past 10¹². On the same draws: 0.950 at N = 10⁵ (0.931 before), 0.970 at 10⁴ (0.967),
two miscalibrated models' interval 7% wider at 10⁴ at the same coverage, and BIC's stricter
Φ(−√(ln n)) 0.980 at 10⁴ (``benchmarks/compare_boundary_level.py``,
``benchmarks/coverage_compare.py``; ``docs/coverage.md``, "The boundary pre-test's level
falls with n").

**Ties.** A tie group cut by a bin boundary gives each part the group's mean label (the
tie rule, DESIGN.md), so such a bin's frequency carries the group's noise, not its own
nᵢ labels': the debiased square uses each bin's effective sample size n_eff = n²/Σc²/N
(:mod:`calib_metrics.functional.ties`). The per-unit bin sums share each tied pair over
its group's bins (cᵢ/N of it in bin i,
:func:`~calib_metrics.functional.intervals.unit_sum_matrix`): every draw then gives those bins
the group's reweighted mean, as the estimator counts them, the roots L* carry the same
bias as D, and θ* = D − L* is free of it. (Resampling the interleaved labels one by one
instead made tied bins noisier in the draws than in the estimator, and with correlated
labels the difference was biased: a tied and an untied calibrated model, grouped labels,
were told apart 23% of the time at α = 0.05.) ``calibration_error_ci``'s draws share
tied pairs alike (its group bootstrap through the same sums, its pair bootstrap per cut
group, :func:`~calib_metrics.functional.intervals.pair_draws`).

**Bias-corrected, not centred on the estimate.** The draws θ* = D − L* remove the bias
that the bootstrap finds in D (the basic bootstrap), while the reported errors are the
estimates themselves, clipped at 0. Where the two differ the interval is not centred on
the difference of the reported errors, and can exclude it: a model whose debiased square
is negative is reported as 0 while its draws may put its squared error above 0. (With
isotonic outputs, whose few large tie groups each span many bins, this happened to
sentiment NB before the debias term took a tie run's noise once: +0.1818 with interval
[+0.109, +0.174]; now +0.133 [+0.113, +0.195], ``docs/recalibration.md``.) The interval
is for the difference of the true errors.

**Plug-in** (``debias=False``, or the l1/max norms): the percentile interval of the
paired draws' differences of errors, shifted so that their median is the estimate (a
model near zero error has its draws clipped at 0, which would otherwise shift them all);
the p-value inverts it. For l2 each model's draws have their squares recentred on the
estimate's square before the roots are taken (:func:`_plugin_draws`): a draw's square
carries the bins' noise twice, and its root moved less than the estimate does (two models
of equal error, N = 2000, auto bins: told apart 0.145 of the time at α = 0.05, 0.065
since; ``benchmarks/compare_plugin_size.py``). The l1 and max draws have no such repair:
there the test's size is 0.110 and 0.000 on the same data sets (``docs/coverage.md``);
the debiased l2 default is the comparison to rely on.

The draws come from the one interval pipeline (:mod:`calib_metrics.functional.intervals`):
each model keeps its own bins, formed once on the data, and its per-unit bin sums (the
group generator's sparse matrix; a pair is a unit of its own without ``groups``); every
block of Poisson unit weights reweights both matrices, and each model's draws go through
the same per-draw statistics and summary as a single model's interval.
"""

from __future__ import annotations

import inspect
import math
import warnings
from contextvars import ContextVar
from typing import Any, NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import (
    Bins,
    _check_pairs,
    check_ids,
    check_probs,
    single_label_bins,
)
from calib_metrics.functional.calibration import (
    CalibrationResult,
    _check_interval_options,
    _check_options,
    _debias_for,
    bins_and_index,
)
from calib_metrics.functional.clusters import grouped_effective_counts, with_samples
from calib_metrics.functional.errors import (
    check_generator,
    check_id_tensor,
    check_tensors,
    warn_at_caller,
)
from calib_metrics.functional.intervals import (
    MIN_UNITS,
    IntervalKind,
    UnitSums,
    compact_units,
    draw_statistics,
    drawn_count,
    drawn_result,
    interval_of_draws,
    reweighted_bins,
    summary,
    unit_sum_matrix,
    unit_weights,
    without_interval,
)
from calib_metrics.functional.multiclass import (
    Mode,
    average_results,
    is_multiclass,
    one_hot_pairs_message,
    pair_sets,
    warn_row_sums,
)
from calib_metrics.functional.ties import cut_cells, tie_runs
from calib_metrics.functional.zero_width import warn_if_comparison_zero_width


class ComparisonResult(NamedTuple):
    """``error(a) − error(b)`` on the same items, with its paired interval and p-value.

    Attributes:
        difference: error(a) − error(b), 0-dim float64 (negative: a is better calibrated).
        lower: lower end of the paired interval of the difference.
        upper: upper end.
        p_value: two-sided p-value of "no difference" from the same paired draws.
        a: model a's :class:`~calib_metrics.functional.calibration.CalibrationResult`,
            carrying its interval's kind for the figures
            (:func:`~calib_metrics.functional.intervals.interval_kind`: what was resampled,
            and the form). Under ``mode="classwise"`` it is the classes' average: its
            error, mean, std and ends are the means of the classes' own, and its ``bins``
            are every class's own bins sorted together by mean prediction (``bins.classes``
            says how many classes; its repr, ``<176 bins of 4 classes, 8000 pairs>``),
            not one binning of the pooled pairs, so no reliability diagram draws them
            (``calib_metrics.plot_panels.classwise_panels`` draws each class's).
        b: model b's.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(2000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> r = compare_calibration(q.sqrt(), q, y, n_samples=200, generator=g)
        >>> bool(r.lower > 0), bool(r.difference == r.a.error - r.b.error)
        (True, True)
    """

    difference: Tensor
    lower: Tensor
    upper: Tensor
    p_value: Tensor
    a: CalibrationResult
    b: CalibrationResult

    def __repr__(self) -> str:
        """One line a model: the difference, its interval and p-value, then each model's
        result in one line (in full, both models' bins had filled some 90 lines)."""
        numbers = ", ".join(
            f"{name}={summary(getattr(self, name))}" for name in ("difference", "lower", "upper")
        )
        p_value = summary(self.p_value, ".4g")
        models = f"\n  a={self.a!r},\n  b={self.b!r}"
        return f"{type(self).__name__}({numbers}, p_value={p_value},{models})"


def _shared_blocks(matrices: list[UnitSums], n_units: int, n_samples: int, generator):
    """Blocks of every matrix's resampled bins from one set of unit weights per draw."""
    rows = sum(matrix.rows for matrix in matrices)
    device = matrices[0].direct.device
    for weights in unit_weights(n_units, n_samples, rows, generator, device):
        yield [reweighted_bins(matrix, weights) for matrix in matrices]


def _paired_blocks(matrix_a: UnitSums, matrix_b: UnitSums, n_units: int, n_samples: int, generator):
    """Blocks of both models' resampled bins from one set of unit weights per draw."""
    yield from _shared_blocks([matrix_a, matrix_b], n_units, n_samples, generator)


def _unit_sums(
    probs: Tensor, target: Tensor, units: Tensor, n_units: int, options: dict, grouped=False
):
    """The model's bins and its per-unit bin sums (count, Σq, Σy), each
    tied pair shared over its group's bins (:func:`~.intervals.unit_sum_matrix`); with
    ``grouped`` the bins carry the groups' cluster-robust n_eff (:mod:`.clusters`)."""
    bins, index = bins_and_index(probs, target, **options)
    cells = cut_cells(probs, index, bins.count.numel())
    if grouped:
        samples = grouped_effective_counts(probs, target, units, index, bins, cells, n_units)
        bins = with_samples(bins, samples)
    return bins, unit_sum_matrix(probs, target, units, index, bins.count.numel(), n_units, cells)


def _model_result(
    bins: Bins, blocks: list, confidence: float, norm: str, debias: bool, world: str, unit: str
) -> tuple[Tensor, CalibrationResult]:
    """One model's per-draw errors and its result from its draws: debiased, the percentile
    interval of its recentred squares; plug-in, the normal interval centred on its
    estimate, :func:`calibration_error_ci`'s default (the plug-in draws sit above the
    estimate by the bias, and their percentiles had excluded it: 0.0653 with
    [0.0716, 0.1058]). The result carries that kind, resampled over ``unit``, for the
    figures to name (they had named a percentile interval over items a pair bootstrap's)."""
    draws = draw_statistics(bins, blocks, norm=norm, debias=debias, world=world)
    method = "percentile" if debias else "normal"
    summary = interval_of_draws(draws, confidence=confidence, method=method)
    kind = IntervalKind(float(confidence), unit, debias, method)
    return draws.errors, drawn_result(summary, bins, kind, norm, drawn_count(draws))


# compare_calibration's number of paired draws unless given.
DEFAULT_SAMPLES = 2000


def compare_calibration(
    probs_a: Tensor,
    probs_b: Tensor,
    target: Tensor,
    *,
    groups: Tensor | None = None,
    confidence: float = 0.95,
    generator: torch.Generator | None = None,
    n_samples: int = DEFAULT_SAMPLES,
    bin_size: int | str = "auto",
    binning: str = "adaptive",
    n_bins: int = 15,
    norm: str = "l2",
    debias: bool = True,
    mode: Mode = "one_vs_rest",
) -> ComparisonResult:
    """Difference in calibration error of two models scored on the same items.

    Args:
        probs_a: model a's probabilities q in [0, 1] (binary, any shape), or multiclass
            ``[..., C]`` with integer ``target [...]``.
        probs_b: model b's probabilities for the same items, same shape.
        target: the binary labels (``probs_a``'s shape), or the class ids.
        groups: optional group id per item (sentence, document): whole groups are
            resampled, so labels correlated within a group move together, and the
            debiased errors use each bin's cluster-robust variance over the groups.
            Without it, the one-vs-rest pairs of multiclass input are resampled item by
            item (an item's C labels are dependent), the errors debiased as pairs
            (:func:`comparison_units`).
        confidence: coverage of the interval of the difference.
        generator: source of randomness for reproducible draws.
        n_samples: number S of paired bootstrap draws, from 2 to
            :data:`~calib_metrics.functional.intervals.MAX_DRAWS` (10⁷). The ends and the
            p-value are Monte Carlo estimates: the p-value moves in steps of 2/S (p = 0
            says only that no draw reached 0), so keep S in the hundreds or more (no
            warning is given below that).
        bin_size, binning, n_bins, norm, debias: the estimator, as in
            :func:`~calib_metrics.functional.calibration.calibration_error` (defaults: the
            recommended one; ``debias`` falls back to the plug-in for l1 and max).
        mode: multiclass input as in :func:`~calib_metrics.functional.calibration_error`:
            ``"one_vs_rest"`` (every item gives C pairs, resampled together),
            ``"top_label"`` (each model's own confidence and correctness; the pairs of an
            item stay paired across the models) or ``"classwise"`` (the mean over classes
            of each class's error: every draw reweights the items once for all classes
            and both models, and its difference is the mean of the classes' draws).

    Returns:
        :class:`ComparisonResult`: ``difference = error(a) − error(b)``, its percentile
        interval over the paired draws (debiased: the draws of Δ = θ_a − θ_b carried to
        √θ_a − √θ_b with each draw's smaller square, and, where that square's lower
        bound reaches 0, also with 0, the interval spanning both; plug-in: the draws'
        differences centred on the
        estimate; see the module docstring), the two-sided p-value
        ``min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0)))`` of the draws d, and each model's own
        :class:`CalibrationResult` from the same draws: its error is
        :func:`calibration_error_ci`'s, its interval (debiased: the percentiles of its
        draws, as the difference's; plug-in: normal) need not be that function's
        default one, whose draws are its own (``mode="classwise"``: the classes'
        average, its ``bins`` each class's own, :class:`ComparisonResult`). With fewer
        than ``MIN_UNITS``
        (10) resampling units (pairs, items, or groups) the interval and the p-value are NaN,
        and so are ``a``'s and ``b``'s own interval ends (as
        :func:`calibration_error_ci` gives them), with a warning: too few to resample.
        An interval of zero width (a model's max-norm error decided by a pure bin in
        every draw; the difference of two such) warns
        (:func:`~calib_metrics.functional.zero_width.warn_if_comparison_zero_width`).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(20000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> overconfident = torch.where(q > 0.5, q.sqrt(), q**2)
        >>> r = compare_calibration(overconfident, q, y, n_samples=500, generator=g)
        >>> bool(r.difference > 0), bool(r.lower > 0), bool(r.p_value < 0.01)
        (True, True, True)
        >>> same = compare_calibration(q, q, y, n_samples=200, generator=g)
        >>> same.difference.item(), same.p_value.item()
        (0.0, 1.0)

        Multiclass: the top-label (confidence) error of two classifiers.

        >>> p = torch.softmax(3 * torch.randn(4000, 3, generator=g), -1)
        >>> c = torch.multinomial(p, 1, generator=g).squeeze(1)
        >>> sharp = torch.softmax(3 * p.log(), -1)  # overconfident: temperature 1/3
        >>> r = compare_calibration(sharp, p, c, mode="top_label", n_samples=300, generator=g)
        >>> bool(r.lower > 0)
        True
        >>> r = compare_calibration(sharp, p, c, mode="classwise", n_samples=300, generator=g)
        >>> bool(r.lower > 0), bool(r.p_value < 0.01)
        (True, True)
    """
    return _compare(**locals(), items=None).result


def compare_item_pairs(
    probs_a: Tensor, probs_b: Tensor, target: Tensor, items: Tensor | None, **options: Any
) -> tuple[ComparisonResult, Tensor]:
    """:func:`compare_calibration` (``options``: its keyword arguments) of binary pairs
    made from ``items`` (one id per pair; None: pairs of their own): without ``groups``,
    each item's pairs are resampled together and the errors debiased as pairs, as the
    one-vs-rest pairs of ``[N, C]`` input are. :func:`compare_calibration_by_label`
    passes each label its share of those pairs, and reads a called label's direction
    from the side its draws lie on (returned beside the result, ``PairedDraws.side``);
    with ``items`` None it is :func:`compare_calibration` and that side, whose verdict
    ``calib-metrics compare`` prints."""
    paired = paired_comparison(probs_a, probs_b, target, items, **options)
    return paired.result, paired.side


def compare_with_classes(
    probs_a: Tensor, probs_b: Tensor, target: Tensor, **options: Any
) -> tuple[ComparisonResult, list[CalibrationResult], list[CalibrationResult]]:
    """:func:`compare_calibration` (``options``: its keyword arguments), and each model's
    results of every class from the same draws under ``mode="classwise"`` (the one pair
    set's result otherwise): what a classwise comparison's per-class panels draw."""
    paired = paired_comparison(probs_a, probs_b, target, None, **options)
    return paired.result, paired.results_a, paired.results_b


def paired_comparison(
    probs_a: Tensor, probs_b: Tensor, target: Tensor, items: Tensor | None, **options: Any
) -> PairedDraws:
    """All that one paired resampling gives (:class:`PairedDraws`):
    :func:`compare_item_pairs`' result and side, and :func:`compare_with_classes`' results
    of every class, which ``calib-metrics compare --mode classwise`` draws beside the
    verdict that it prints."""
    return _compare(**_arguments(probs_a, probs_b, target, options), items=items)


class PairedDraws(NamedTuple):
    """What one paired resampling gives: the comparison, each pair set's two results, and
    ``side``, the side of 0 most draws of the difference lie on (−1, 0 or +1, 0-dim): the
    direction in which ``p_value`` rejects "no difference". The shown difference is not
    that direction where both debiased errors are clipped to 0 (a difference of 0 whose
    draws all lie below it)."""

    result: ComparisonResult
    results_a: list[CalibrationResult]
    results_b: list[CalibrationResult]
    side: Tensor


def _arguments(probs_a: Tensor, probs_b: Tensor, target: Tensor, options: dict) -> dict:
    """compare_calibration's arguments, its defaults where ``options`` leaves them."""
    bound = inspect.signature(compare_calibration).bind(probs_a, probs_b, target, **options)
    bound.apply_defaults()
    return bound.arguments


def _compare(
    probs_a: Tensor,
    probs_b: Tensor,
    target: Tensor,
    *,
    groups: Tensor | None,
    items: Tensor | None,
    confidence: float,
    generator: torch.Generator | None,
    n_samples: int,
    bin_size: int | str,
    binning: str,
    n_bins: int,
    norm: str,
    debias: bool,
    mode: Mode,
) -> PairedDraws:
    """:func:`compare_calibration`, with the ``items`` of :func:`compare_item_pairs`, each
    pair set's two results (:func:`compare_with_classes`) and the draws' side."""
    check_generator(generator)
    _check_options(norm, binning, bin_size, n_bins)
    _check_interval_options(n_samples, confidence, "percentile", "pairs")
    check_tensors(probs_a=probs_a, probs_b=probs_b)  # dense, before any shape is read
    if probs_a.shape != probs_b.shape:
        raise ValueError(
            "the two models must score the same items: probs_a has shape "
            f"{tuple(probs_a.shape)}, probs_b {tuple(probs_b.shape)}"
        )
    debias = _debias_for(norm, debias)  # "False" had run the debiased estimator
    pairs_given = groups is None and items is None  # else the user named the units
    sets, groups, by_item = _paired_sets(probs_a, probs_b, target, groups, mode)
    one_hot = one_hot_pairs_message(probs_a, target, read_by="comparison") if pairs_given else None
    if one_hot is not None:  # after the pairs' checks: valid labels
        warn_at_caller(f"compare_calibration: {one_hot}")
    if items is not None and groups is None and by_item is None:
        by_item = check_ids(items, sets[0][0])
    units, n_units = _units(sets[0][1], groups if groups is not None else by_item)
    unit_name = "items" if by_item is not None else comparison_units(probs_a, target, mode, groups)
    grouped = debias and groups is not None
    options = {"binning": binning, "bin_size": bin_size, "n_bins": n_bins}
    models = [
        (
            _unit_sums(q_a, y_a, units, n_units, options, grouped=grouped),
            _unit_sums(q_b, y_b, units, n_units, options, grouped=grouped),
        )
        for q_a, y_a, q_b, y_b in sets
    ]
    if debias and n_units >= MIN_UNITS:  # below it there is no interval to be too narrow
        _warn_of_single_pair_bins([b for pair in models for b, _ in pair], binning, n_bins)
    matrices = [sums for model_a, model_b in models for _, sums in (model_a, model_b)]
    blocks = list(_shared_blocks(matrices, n_units, n_samples, generator))
    # Each model's own result as calibration_error_ci reports it: the shrunk world for
    # pairs, the observed gaps for groups (see calib_metrics.functional.intervals).
    world = "shrunk" if groups is None else "observed"
    estimator = {"confidence": confidence, "norm": norm, "debias": debias, "world": world,
                 "unit": unit_name}  # fmt: skip
    level = boundary_level(confidence, n_units)
    results_a, results_b, draws = [], [], []
    for k, ((bins_a, _), (bins_b, _)) in enumerate(models):
        blocks_a, blocks_b = [blk[2 * k] for blk in blocks], [blk[2 * k + 1] for blk in blocks]
        errors_a, a = _model_result(bins_a, blocks_a, **estimator)
        errors_b, b = _model_result(bins_b, blocks_b, **estimator)
        results_a.append(a)
        results_b.append(b)
        draws.append(
            _root_draws(bins_a, bins_b, blocks_a, blocks_b, level)
            if debias
            else (_plugin_draws(errors_a, errors_b, a.error, b.error, norm),)
        )
    a, b = _combined(results_a), _combined(results_b)
    difference = a.error - b.error
    if n_units < MIN_UNITS:
        warnings.warn(
            f"compare_calibration: {n_units} resampling unit{'s' * (n_units != 1)} "
            f"({unit_name}); at least {MIN_UNITS} are needed for an interval or a p-value, "
            "so both are NaN, as are each model's interval ends (the difference stands)",
            UserWarning,
            stacklevel=3,  # the caller of compare_calibration (through _compare)
        )
        nan = torch.full_like(difference, float("nan"))
        result = ComparisonResult(
            difference, nan, nan, nan, without_interval(a), without_interval(b)
        )
        results_a, results_b = ([without_interval(r) for r in rs] for rs in (results_a, results_b))
        return PairedDraws(result, results_a, results_b, torch.sign(difference))
    # Classwise: the error is the mean of the per-class errors, and so is each draw.
    draws = [torch.stack(kind).mean(dim=0) for kind in zip(*draws)]
    draws = [kind[~kind.isnan()] for kind in draws]
    if not debias:
        lower, upper, p_value, centred = _plugin_difference(draws[0], difference, confidence)
        result = ComparisonResult(difference, lower, upper, p_value, a, b)
        side = _side(centred)
    else:
        own, at_bound = draws
        ends = _projected_ends(own, at_bound, confidence)
        result = ComparisonResult(difference, *ends, _p_value(own), a, b)
        side = _side(own)
    warn_if_comparison_zero_width(result, norm, confidence, grouped=groups is not None)
    return PairedDraws(result, results_a, results_b, side)


# Where set (by compare_calibration_by_label), the one-pair bins of each comparison are
# added up here, [bins of one pair, bins], and warned of once by the caller.
single_pair_tally: ContextVar[list[int] | None] = ContextVar("single_pair_tally", default=None)


def _warn_of_single_pair_bins(bins: list[Bins], binning: str, n_bins: int) -> None:
    """Warn that bins of one pair leave the debiased comparison's interval too narrow.

    A bin of one pair keeps its plug-in square, and its resampled frequency never moves:
    the draws' noise, which the paired interval is built from (module docstring), is
    missing. At ``bin_size=1`` on 2,000 pairs the interval had a fifth of the width of
    the estimates' spread and called a 0.001 difference at p < 0.001. One host read.
    """
    # Bins of one pair inside a cut tie group hold the group's mean label, which draws move.
    singles = int(sum(single_label_bins(b).sum() for b in bins))
    if singles == 0:
        return
    total = sum(int((b.count > 0).sum()) for b in bins)
    tally = single_pair_tally.get()
    if tally is not None:
        tally[0] += singles
        tally[1] += total
        return
    message = single_pair_warning("compare_calibration", singles, total, binning, n_bins)
    warnings.warn(message, UserWarning, stacklevel=4)


def single_pair_warning(who: str, singles: int, total: int, binning: str, n_bins: int) -> str:
    """The warning of :func:`_warn_of_single_pair_bins`, with the fix that ``binning``
    takes (uniform bins are sized by ``n_bins``).

    Example:
        >>> single_pair_warning("compare_calibration", 7, 199, "uniform", 100)[-42:]
        'lower n_bins (now 100) or use debias=False'
    """
    if binning == "uniform":
        fix = f"lower n_bins (now {n_bins}) or use debias=False"
    else:
        fix = "use bins of at least 2 pairs (bin_size='auto') or debias=False"
    return (
        f"{who}: {singles} of {total} bins hold one pair, whose label has no noise for the "
        "debiased comparison to resample: its interval comes out too narrow and its p-value "
        f"too small; {fix}"
    )


def _units(target: Tensor, groups: Tensor | None) -> tuple[Tensor, int]:
    """Each pair's resampling unit (itself, or its group) as compact ids, and their number."""
    if groups is None:
        return torch.arange(target.numel(), device=target.device), target.numel()
    return compact_units(groups)


def _combined(results: list[CalibrationResult]) -> CalibrationResult:
    """One model's result: the one pair set's, or the classwise average of C."""
    if len(results) == 1:
        return results[0]
    return average_results(results)


def _root_draws(
    bins_a: Bins, bins_b: Bins, blocks_a: list, blocks_b: list, level: float
) -> tuple[Tensor, Tensor]:
    """Draws of √θ_a − √θ_b, twice: each draw's Δ* carried with its own smaller square m*,
    and with m = 0 where m's lower bound, the ``level`` quantile of the m*
    (:func:`boundary_level`), reaches that boundary (else with m* again; module docstring).

    Their signs are Δ*'s, so the p-value of either is that of Δ's draws.
    """
    theta_a, theta_b = _paired_squares(bins_a, bins_b, blocks_a, blocks_b)
    return _carried(theta_a - theta_b, torch.minimum(theta_a, theta_b), level)


def _carried(square: Tensor, smaller: Tensor, level: float) -> tuple[Tensor, Tensor]:
    """Draws of Δ* with their smaller squares m* carried to √θ_a − √θ_b: with m*, and with
    m = 0 where m's lower bound, their ``level`` quantile, reaches it (else m* again;
    :func:`_root_draws`)."""
    lowest = torch.nanquantile(smaller, level)
    # Off the boundary the per-draw carry is a smooth map's percentile interval already;
    # projecting it there too only widened it (2.7× the estimates' spread, not 2.6×).
    at_boundary = torch.where(lowest > 0, smaller, torch.zeros_like(smaller))
    return root_difference(square, smaller), root_difference(square, at_boundary)


def boundary_level(confidence: float, n_units: int) -> float:
    """The quantile level of the draws' smaller squares m* that must exceed 0 for the
    interval's ends to be carried with the m* alone: the interval's own (1 − confidence)/2,
    or, where it is stricter, Φ(−√(2 ln ln n)) for n resampling units (module docstring).

    A pre-test of "m = 0" at a fixed level misses a calibrated model in a fixed share of
    data sets, and each miss costs more as n grows (the interval's width shrinks as 1/√n,
    the shift √m* of its upper end as n^(−1/4)), so the level falls with n as generalised
    moment selection's law-of-the-iterated-logarithm threshold κ_n = √(2 ln ln n) does
    (Andrews & Soares 2010): 0.0175 at n = 10⁴, 0.0135 at 10⁵, 0.011 at 10⁶. Below
    n ≈ 920 the interval's own level is the stricter at 95% (below n ≈ 48 at 90%, for
    any practical n at 99%).

    Example:
        >>> round(boundary_level(0.95, 500), 4), round(boundary_level(0.95, 100_000), 4)
        (0.025, 0.0135)
        >>> round(boundary_level(0.99, 100_000), 4)  # never laxer than the interval's own
        0.005
    """
    own = (1 - confidence) / 2
    if n_units < 3:  # ln ln n ≤ 0: no threshold (and no interval below MIN_UNITS)
        return own
    threshold = math.sqrt(2 * math.log(math.log(n_units)))
    return min(own, 0.5 * math.erfc(threshold / math.sqrt(2)))


# A model with fewer runs of distinct bins than this has too few neighbours to stand in
# for its gaps' true values (two runs with opposite gaps would read as pure noise): the
# shrink factor then subtracts twice the quadratic part's variance instead.
MIN_NEIGHBOUR_RUNS = 10


def _paired_squares(bins_a: Bins, bins_b: Bins, blocks_a: list, blocks_b: list):
    """Both models' recentred draws θ* with their linear terms' noise taken off (module
    docstring).

    Each draw's root splits into a quadratic part (the ``"zero"`` world's root: the draw's
    own noise) and a linear part (the observed world's root minus it, 2 Σ wᵢ ĝᵢ eᵢ*). The
    observed gaps ĝ carry their own noise, which inflates the linear part's variance. Both
    linear parts are carried onto the true gaps' share of their 2 × 2 covariance, read
    from the linear parts in the world of the neighbouring runs' gaps
    (:func:`_neighbour_transport`); for a model with fewer than ``MIN_NEIGHBOUR_RUNS`` runs,
    one factor s leaves the true gaps' share of Var(lin_a − lin_b) after twice the
    quadratic part's variance is taken off, θ* = (1 − s)·θ*_zero + s·θ*_observed
    (:func:`_joint_shrink`).
    """
    worlds = _world_draws(bins_a, bins_b, blocks_a, blocks_b)
    if min(_run_count(bins_a), _run_count(bins_b)) < MIN_NEIGHBOUR_RUNS:
        return _joint_shrink(*worlds)
    beside_a, beside_b = (
        draw_statistics(bins, blocks, debias=True, world="neighbours").values
        for bins, blocks in ((bins_a, blocks_a), (bins_b, blocks_b))
    )
    return _neighbour_transport(worlds, beside_a, beside_b)


# Below this ratio of the two linear parts' covariance eigenvalues the models are
# near-copies: the 2 × 2 map's middle matrix has about the square of the ratio, which
# float64 cannot resolve below ~1e-12 (b = a + 1e-9 gives 1e-16; a shift of 1e-4, 1e-6;
# between the coverage settings' models the ratio was 7.8e-3 or more).
NEAR_COPY = 1e-5


def _world_draws(bins_a: Bins, bins_b: Bins, blocks_a: list, blocks_b: list):
    """Both models' recentred draws θ* in the observed and the zero world:
    (observed_a, observed_b, zero_a, zero_b)."""
    draws = []
    for world in ("observed", "zero"):
        for bins, blocks in ((bins_a, blocks_a), (bins_b, blocks_b)):
            draws.append(draw_statistics(bins, blocks, debias=True, world=world).values)
    return tuple(draws)


def _joint_shrink(observed_a: Tensor, observed_b: Tensor, zero_a: Tensor, zero_b: Tensor):
    """θ*_a, θ*_b with both linear parts shrunk by the one factor of :func:`_linear_shrink`
    (models with few runs, and the library before 2026-11-28)."""
    worlds = (observed_a, observed_b, zero_a, zero_b)
    return _shrunk(worlds, _linear_shrink(_linear_difference(*worlds), zero_a - zero_b))


def _linear_difference(observed_a: Tensor, observed_b: Tensor, zero_a: Tensor, zero_b: Tensor):
    """lin_a − lin_b: each model's linear part, its zero world's draw minus its observed's."""
    return (zero_a - observed_a) - (zero_b - observed_b)


def _shrunk(worlds: tuple[Tensor, ...], shrink: Tensor) -> tuple[Tensor, Tensor]:
    """θ*_a, θ*_b = (1 − s)·θ*_zero + s·θ*_observed for the worlds of :func:`_world_draws`."""
    observed_a, observed_b, zero_a, zero_b = worlds
    return torch.lerp(zero_a, observed_a, shrink), torch.lerp(zero_b, observed_b, shrink)


def _run_count(bins: Bins) -> int:
    """The number of runs of adjacent bins with equal gap and frequency (one host sync)."""
    runs = tie_runs(bins.pred_mean - bins.freq, bins.freq)
    return int(runs[-1]) + 1 if runs.numel() else 0


def _neighbour_transport(worlds: tuple[Tensor, ...], beside_a: Tensor, beside_b: Tensor):
    """θ*_a, θ*_b = θ*_zero + A·lin: both linear parts carried by the optimal-transport map A
    of N(0, Cov* lin) onto N(0, C), C the symmetrised cross-covariance of (lin_a, lin_b)
    with their neighbouring runs' linear parts (its part ≥ 0): each model's true-gaps share
    and theirs together, not one factor for the difference (module docstring).

    Two models with the same draws (the same bins) keep one factor, so that their draws stay
    equal to the last bit, and so do near-copies (their linear parts' covariance eigenvalues
    more than 1/``NEAR_COPY`` apart), whose difference float64 cannot resolve in the map.
    The map is not capped at the identity (the one factor is, at 1):
    where C exceeds Cov* lin in some direction the draws there are wider than the observed
    gaps' — conservative; in the simulated settings its largest eigenvalue was 0.31–0.998
    (``docs/coverage.md``).
    """
    observed_a, observed_b, zero_a, zero_b = worlds
    if torch.equal(observed_a, observed_b) and torch.equal(zero_a, zero_b):
        return _one_factor(worlds, beside_a, beside_b)
    linear = torch.stack([observed_a - zero_a, observed_b - zero_b])
    beside = torch.stack([beside_a - zero_a, beside_b - zero_b])
    valid = ~(linear.isnan() | beside.isnan()).any(dim=0)
    if int(valid.sum()) < 3:
        return observed_a, observed_b
    covariance = torch.cov(torch.cat([linear[:, valid], beside[:, valid]]))
    source, cross = covariance[:2, :2], covariance[:2, 2:]
    spread = torch.linalg.eigvalsh(source)
    if NEAR_COPY > 0 and spread[0] < NEAR_COPY * spread[1]:
        # Near-copies (b = a + 1e-9): the 2 × 2 map cannot resolve their difference, whose
        # draws then collapsed onto D_a − D_b (p = 0, either sign); one factor for it can.
        return _one_factor(worlds, beside_a, beside_b)
    target = _symmetric_power((cross + cross.T) / 2, 1.0)
    carried = _transport(source, target) @ linear
    return zero_a + carried[0], zero_b + carried[1]


def _one_factor(worlds: tuple[Tensor, ...], beside_a: Tensor, beside_b: Tensor):
    """θ*_a, θ*_b with both linear parts shrunk by the difference's own noise-free share
    (:func:`_neighbour_shrink`): for models with the same draws, or nearly."""
    _, _, zero_a, zero_b = worlds
    crossed = (zero_a - beside_a) - (zero_b - beside_b)
    return _shrunk(worlds, _neighbour_shrink(_linear_difference(*worlds), crossed))


def _transport(source: Tensor, target: Tensor) -> Tensor:
    """The optimal-transport map A of N(0, source) onto N(0, target): A·source·Aᵀ = target
    on source's range (both symmetric, ≥ 0)."""
    values, vectors = torch.linalg.eigh(source)
    root, inverse_root = (_powered(values, vectors, power) for power in (0.5, -0.5))
    # The middle matrix's eigenvalues spread as the square of source's: its floor is the
    # square of theirs, or a direction source keeps would be dropped here.
    middle = torch.linalg.eigh(root @ target @ root)
    return inverse_root @ _powered(*middle, 0.5, floor=1e-24) @ inverse_root


def _symmetric_power(matrix: Tensor, power: float) -> Tensor:
    """A symmetric matrix's power over its positive eigenvalues (the others, and those below
    1e-12 of the largest, as 0: the pseudo-inverse for a negative power)."""
    return _powered(*torch.linalg.eigh(matrix), power)


def _powered(values: Tensor, vectors: Tensor, power: float, floor: float = 1e-12) -> Tensor:
    """:func:`_symmetric_power` from the matrix's eigendecomposition; eigenvalues below
    ``floor`` of the largest count as 0."""
    keep = values > floor * values.abs().max()
    powered = torch.where(keep, values.clamp_min(1e-300) ** power, torch.zeros_like(values))
    return vectors @ torch.diag(powered) @ vectors.T


def _neighbour_shrink(linear: Tensor, crossed: Tensor) -> Tensor:
    """s = √(max(0, Cov*(lin, lin_nb)) / Var* lin), at most 1: the linear part's noise-free
    share, with lin_nb the linear part in the world of the neighbouring runs' gaps.

    Cov*(Σ ĝᵢ eᵢ*, Σ ĝ_nb,ⱼ eⱼ*) estimates the true gaps' Var(Σ gᵢ eᵢ) where the gaps change
    little from one run to the next, and, for independent labels, its noise is independent
    of each bin's own: unlike Var*(lin) − 2·Var*(quad), which for pure-noise gaps is about
    4 Σ wᵢ²vᵢ(ĝᵢ² − vᵢ) — the debiased squares themselves — it does not widen the draws
    exactly where D_a − D_b is extreme (two calibrated models were then told apart 0.023
    of the time at α = 0.05; docs/coverage.md).
    """
    valid = ~(linear.isnan() | crossed.isnan())
    if int(valid.sum()) < 2:
        return linear.new_ones(())
    (variance, covariance), _ = torch.cov(torch.stack([linear[valid], crossed[valid]]))
    ratio = torch.where(variance > 0, covariance.clamp_min(0) / variance, torch.ones_like(variance))
    return ratio.clamp(max=1).sqrt()


def _linear_shrink(linear: Tensor, quadratic: Tensor) -> Tensor:
    """s = √(max(0, Var lin − 2·Var quad) / Var lin): the linear part's noise-free share.

    With gaps ĝ = g + ε, E Var*(2 Σ w ĝ e*) = Var(2 Σ w g e) + 2·Var(Σ w e²) for Gaussian
    noise, so subtracting twice the quadratic part's variance leaves the true gaps' share.
    """
    valid = ~(linear.isnan() | quadratic.isnan())
    var_linear = linear[valid].var() if int(valid.sum()) > 1 else linear.new_zeros(())
    var_quadratic = quadratic[valid].var() if int(valid.sum()) > 1 else linear.new_zeros(())
    excess = (var_linear - 2 * var_quadratic).clamp_min(0)
    ratio = torch.where(var_linear > 0, excess / var_linear, torch.ones_like(var_linear))
    return ratio.sqrt()


def check_models(probs_a: Tensor, probs_b: Tensor, target: Tensor) -> None:
    """Both models' probabilities checked, each named (``pair_sets`` would say "probs"),
    and, multiclass, a warning of rows that do not sum to 1 at the caller's line of the
    public function, two frames above this one's caller."""
    for name, probs in (("probs_a", probs_a), ("probs_b", probs_b)):
        check_probs(probs, name)
        if is_multiclass(probs, target):
            warn_row_sums(probs, name, stacklevel=5)


def _paired_sets(probs_a: Tensor, probs_b: Tensor, target: Tensor, groups, mode: str):
    """Both models' flat, checked binary pair sets under ``mode`` (one, or C classwise) as
    ``(q_a, y_a, q_b, y_b)``, the pairs' group ids (or None), and, for one-vs-rest pairs of
    multiclass items without groups, each pair's item (else None): the unit resampled.

    An item's C one-vs-rest labels are dependent (exactly one is 1), and both models'
    pairs of one item move together across classes: resampled pair by pair, two equally
    calibrated models had been called different at α = 0.05 far more often than
    resampled item by item (``benchmarks/compare_noisy_models.py``; docs/coverage.md,
    "Two noisy copies")."""
    if groups is not None:
        check_id_tensor(groups)
    check_models(probs_a, probs_b, target)
    ids = resampled_ids(probs_a, target, mode, groups)
    by_item = groups is None and ids is not None
    groups = ids
    sets_a = pair_sets(probs_a, target, mode, groups, check_rows=False)
    sets_b = pair_sets(probs_b, target, mode, check_rows=False)
    groups = sets_a[0].groups
    sets = []
    for (q_a, y_a, _), (q_b, y_b, _) in zip(sets_a, sets_b):
        q_a, y_a = _check_pairs(q_a, y_a)
        q_b, y_b = _check_pairs(q_b, y_b)
        sets.append((q_a, y_a, q_b, y_b))
    if groups is not None:
        groups = check_ids(groups, sets[0][0])
    return (sets, None, groups) if by_item else (sets, groups, None)


def comparison_units(probs: Tensor, target: Tensor, mode: str, groups: Tensor | None) -> str:
    """What :func:`compare_calibration` resamples, as its reports name it: ``"groups"``
    (given), ``"items"`` (multiclass items: one-vs-rest, each item's C pairs together;
    classwise, each item's pair in every class's set together, one weight an item for all
    classes) or ``"pairs"`` (binary pairs; a top-label item is one pair).

    Example:
        >>> import torch
        >>> probs, target = torch.full((4, 3), 1 / 3), torch.tensor([0, 1, 2, 0])
        >>> comparison_units(probs, target, "one_vs_rest", None)
        'items'
        >>> comparison_units(probs, target, "classwise", None)
        'items'
        >>> comparison_units(probs, target, "top_label", None)
        'pairs'
    """
    if groups is not None:
        return "groups"
    by_item = mode != "top_label" and is_multiclass(probs, target)
    return "items" if by_item else "pairs"


def resampled_ids(probs: Tensor, target: Tensor, mode: str, groups: Tensor | None) -> Tensor | None:
    """The ids :func:`compare_calibration` resamples a pair set by, one per item
    (``target``'s shape): ``groups``, each item's own id where a set holds several pairs
    of an item (one-vs-rest ``[N, C]`` input: its C pairs), else None (pairs: a
    classwise set holds one pair of each item, and the one weight an item gets in every
    class's set is the pair's own in each). A smooth curve's band drawn beside a
    comparison resamples by them too.

    Example:
        >>> import torch
        >>> resampled_ids(torch.full((3, 2), 0.5), torch.tensor([0, 1, 1]), "one_vs_rest", None)
        tensor([0, 1, 2])
        >>> resampled_ids(torch.full((3, 2), 0.5), torch.tensor([0, 1, 1]), "classwise", None)
    """
    if groups is not None or mode != "one_vs_rest" or not is_multiclass(probs, target):
        return groups
    return torch.arange(target.numel(), device=target.device).reshape(target.shape)


def _p_value(diffs: Tensor) -> Tensor:
    """Two-sided bootstrap p-value of no difference: min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0)))."""
    if bool((diffs == 0).all()):
        return torch.ones((), dtype=torch.float64, device=diffs.device)
    below, above = (diffs <= 0).double().mean(), (diffs >= 0).double().mean()
    return (2 * torch.minimum(below, above)).clamp(max=1.0)


def _side(diffs: Tensor) -> Tensor:
    """The side of 0 most draws lie on: the one :func:`_p_value`'s smaller tail is not."""
    return torch.sign((diffs > 0).double().mean() - (diffs < 0).double().mean())


def _ends(values: Tensor, confidence: float) -> Tensor:
    """The (1 − confidence)/2 and (1 + confidence)/2 quantiles of ``values``."""
    tail = (1 - confidence) / 2
    levels = torch.tensor([tail, 1 - tail], dtype=values.dtype, device=values.device)
    return torch.quantile(values, levels)


def _projected_ends(own: Tensor, at_bound: Tensor, confidence: float) -> Tensor:
    """The interval spanning both percentile intervals: of the draws carried with their own
    m*, and of those carried with m = 0 where m's lower bound reaches it, or with their own m*
    again elsewhere (module docstring)."""
    own_ends, bound_ends = _ends(own, confidence), _ends(at_bound, confidence)
    return torch.stack([own_ends[0].minimum(bound_ends[0]), own_ends[1].maximum(bound_ends[1])])


def _plugin_draws(
    errors_a: Tensor, errors_b: Tensor, error_a: Tensor, error_b: Tensor, norm: str
) -> Tensor:
    """Draws of the plug-in difference. For ``l2`` each model's squares are recentred on
    its own estimate's before the roots are taken: a draw's square carries the bins'
    noise twice, and its root, taken at that higher level, moved less than the estimate
    does (two models of equal error, N = 2000, auto bins: told apart 0.145 of the time at
    α = 0.05, the draws' spread 0.76× the estimates')."""
    if norm != "l2":
        return errors_a - errors_b
    roots = []
    for draws, error in ((errors_a, error_a), (errors_b, error_b)):
        squares = draws.square()
        roots.append((error.square() + squares - squares.nanmean()).clamp_min(0).sqrt())
    return roots[0] - roots[1]


def _plugin_difference(diffs: Tensor, difference: Tensor, confidence: float):
    """Percentile interval and p-value of plug-in differences centred on the estimate, and
    those centred draws."""
    diffs = diffs + (difference - torch.quantile(diffs, 0.5))
    lower, upper = _ends(diffs, confidence)
    return lower, upper, _p_value(diffs), diffs


def root_difference(square: Tensor, smaller: Tensor) -> Tensor:
    """√θ_a − √θ_b from Δ = θ_a − θ_b and m = min(θ_a, θ_b): sign(Δ)·(√(m + |Δ|) − √m).

    m is clipped at 0. Increasing in Δ, 0 at Δ = 0, shrinking towards 0 as m grows.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> root_difference(t([0.16 - 0.09, -0.04]), t([0.09, 0.0]))  # 0.4 − 0.3, 0 − 0.2
        tensor([ 0.1000, -0.2000])
    """
    m = smaller.clamp_min(0)
    return torch.sign(square) * ((m + square.abs()).sqrt() - m.sqrt())
