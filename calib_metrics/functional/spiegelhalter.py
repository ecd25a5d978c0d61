"""Spiegelhalter's z test of calibration (Spiegelhalter, Statistics in Medicine, 1986).

Under the hypothesis that the predictions are calibrated (each yᵢ ~ Bernoulli(qᵢ),
independently), the Brier score B = Σ (yᵢ − qᵢ)² has mean Σ qᵢ(1 − qᵢ) and variance
Σ (1 − 2qᵢ)² qᵢ(1 − qᵢ). Since (y − q)² − q(1 − q) = (y − q)(1 − 2q) for y ∈ {0, 1},

    Z = Σ (yᵢ − qᵢ)(1 − 2qᵢ) / √( Σ (1 − 2qᵢ)² qᵢ(1 − qᵢ) ),

which is approximately standard normal under the hypothesis (a sum of independent
bounded terms), and the two-sided p-value is P(|N(0, 1)| ≥ |Z|) = erfc(|Z|/√2). Unlike a
binned error, the test needs no bins and no resampling. It is blind to miscalibration
that the weights (1 − 2q) cancel (e.g. errors of opposite sign on both sides of 1/2
that balance).

The variance above assumes independent labels: labels correlated within sentences or
documents make it reject a calibrated model too often, and the one-vs-rest pairs of one
example (their labels sum to 1) too rarely. With ``groups`` (a sentence or document id
per pair) the denominator is the cluster-robust one: the score contributions
sᵢ = (yᵢ − qᵢ)(1 − 2qᵢ) are summed per group, S_g = Σ_{i ∈ g} sᵢ, and

    Z = Σ_g S_g / √( Σ_g S_g² ),

since under calibration every S_g has mean 0 and the groups are independent, so Σ_g S_g²
estimates Var(Σ_g S_g) whatever the correlation inside a group (the sandwich estimator
with a known mean). It is normal as the number of groups grows; with groups of one pair
it estimates the independent variance by its unbiased empirical form. The size of both
forms on calibrated synthetic data is measured in ``benchmarks/coverage.py
--spiegelhalter``.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import _check_pairs, check_ids
from calib_metrics.functional.errors import check_tensors, warn_at_caller
from calib_metrics.functional.intervals import MIN_UNITS
from calib_metrics.functional.multiclass import (
    Mode,
    is_multiclass,
    one_hot_pairs_message,
    pair_sets,
)
from calib_metrics.functional.smooth import _check_histogram


class SpiegelhalterResult(NamedTuple):
    """The z statistic and its two-sided p-value (0-dim float64 tensors).

    Example:
        >>> import torch
        >>> q = torch.full((12,), 0.9, dtype=torch.float64)
        >>> z, p_value = spiegelhalter_test(q, torch.tensor([0, 1] * 6))
        >>> round(z.item(), 4), round(p_value.item(), 6)  # 0.9 is too confident
        (4.6188, 4e-06)
    """

    z: Tensor
    p_value: Tensor


def spiegelhalter_z(probs: Tensor, target: Tensor, groups: Tensor | None = None) -> Tensor:
    """Z of validated pairs (batched over leading dimensions without ``groups``; flat,
    aligned pairs and group ids with them); NaN without variance."""
    q, y = probs.to(torch.float64), target.to(torch.float64)
    weight = 1 - 2 * q
    score = (y - q) * weight
    if groups is None:
        variance = (weight**2 * q * (1 - q)).sum(dim=-1)
    else:
        variance = group_sums(score, groups).square().sum()
    return score.sum(dim=-1) / variance.sqrt()


def resolve_groups(
    probs: Tensor, target: Tensor, mode: str, groups: Tensor | None
) -> Tensor | None:
    """The groups the test uses: ``groups``, or each item's id for multiclass one-vs-rest
    input without them (an item's C labels sum to 1), else None.

    Example:
        >>> resolve_groups(torch.rand(3, 4), torch.tensor([0, 2, 1]), "one_vs_rest", None)
        tensor([0, 1, 2])
    """
    if groups is None and mode == "one_vs_rest" and is_multiclass(probs, target):
        return torch.arange(target.numel(), device=target.device).reshape(target.shape)
    return groups


def group_sums(values: Tensor, groups: Tensor) -> Tensor:
    """Sum of ``values`` per distinct id of ``groups`` (flat, aligned), in id order.

    Example:
        >>> group_sums(torch.tensor([1.0, 2.0, 4.0]), torch.tensor([7, 3, 7]))
        tensor([2., 5.])
    """
    ids, inverse = torch.unique(groups, return_inverse=True)
    return values.new_zeros(ids.numel()).index_add_(0, inverse, values)


def spiegelhalter_test(
    probs: Tensor,
    target: Tensor,
    *,
    mode: Mode = "one_vs_rest",
    groups: Tensor | None = None,
) -> SpiegelhalterResult:
    """Spiegelhalter's two-sided z test of "the predictions are calibrated".

    Args:
        probs: predicted probabilities q in [0, 1] (binary, target's shape), or
            multiclass ``[..., C]`` with integer ``target [...]``.
        target: binary labels y, or class ids for multiclass probs.
        mode: ``"one_vs_rest"`` or ``"top_label"`` for multiclass input
            (``"classwise"`` would give C tests; pass one class's pairs instead).
        groups: optional integer group id per pair (per item for multiclass input: it
            follows every pair made from the item), e.g. sentence or document ids; the
            variance is then the cluster-robust one (see the module). Give it whenever
            labels are correlated within groups. Multiclass one-vs-rest input without
            ``groups`` is grouped by item (an item's C labels sum to 1, so its pairs are
            not independent: the independent variance rejected 0.012–0.024 of calibrated
            data sets at α = 0.05, ``docs/coverage.md``). It needs at least 2 groups,
            and many (tens or more) to be normal: below 10 groups it warns, as it does
            below 10 pairs without groups.

    Returns:
        :class:`SpiegelhalterResult` (z, p_value); a small p-value is evidence of
        miscalibration.

    Host synchronisations: three for binary pairs (the checks of the probabilities and of
    the labels, and the variance's sign; two for bool labels, which need no check), seven
    for multiclass input (its class ids and
    rows are checked too); ``groups`` add torch.unique's two (finding and counting the
    groups), and multiclass one-vs-rest input, grouped by item, has those two as well.
    Binary pairs of shape ``[..., C]`` (C ≥ 2) without ``groups`` add one, two where the
    target looks one-hot: such a target beside rows of probabilities that sum to 1 is
    warned of (:func:`~calib_metrics.functional.multiclass.one_hot_pairs_message`), since
    it is read as independent pairs, not grouped by item as class ids
    ``target.argmax(-1)`` would be.

    Raises:
        ValueError: on invalid input, when every q is 0, 1/2 or 1 (the statistic
            has no variance under the hypothesis, so there is nothing to test), or with
            ``groups`` when there is one group or every group's contribution is 0.

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

        Labels that come in groups (here 100 sentences of 100 tokens whose labels share
        one draw per sentence: calibrated, but strongly correlated):

        >>> groups = torch.arange(10000) // 100
        >>> shared = torch.rand(100, generator=g, dtype=torch.float64)[groups]
        >>> y = (shared < q).double()
        >>> z = spiegelhalter_test(q, y).z  # the independent variance under-states its spread
        >>> z_groups = spiegelhalter_test(q, y, groups=groups).z  # the cluster-robust one
        >>> round(z.item(), 2), round(z_groups.item(), 2)
        (-1.85, -0.44)
    """
    if mode == "classwise":
        raise ValueError("mode='classwise' gives one test per class: pass one class's pairs")
    check_tensors(probs=probs, target=target)  # dense, before resolve_groups reads shapes
    given = groups is not None
    groups = resolve_groups(probs, target, mode, groups)
    q, y, groups = pair_sets(probs, target, mode, groups)[0]
    q, y = _check_pairs(q, y)
    # After the pairs' checks (valid labels); with groups= the pairs' dependence is given.
    one_hot = None if given else one_hot_pairs_message(probs, target)
    if one_hot is not None:
        warn_at_caller(f"spiegelhalter_test: {one_hot}")
    if groups is not None:
        groups = check_ids(groups, q)
        _check_group_count(torch.unique(groups).numel(), given)
    else:
        _check_pair_count(q.numel())
    z = spiegelhalter_z(q, y, groups)
    if not bool(torch.isfinite(z)):
        raise ValueError(
            "Spiegelhalter's test is undefined when every probability is 0, 1/2 or 1 "
            + ("" if groups is None else "or every group's contribution sums to 0 ")
            + "(its statistic has no variance under calibration)"
        )
    return SpiegelhalterResult(z, torch.special.erfc(z.abs() / math.sqrt(2)))


def _check_group_count(n_groups: int, given: bool) -> None:
    """At least 2 groups, and a warning below ``MIN_UNITS``: the cluster-robust z is
    Σ S_g / √(Σ S_g²) ≤ √G, so with 3 groups or fewer it cannot reach 1.96 however
    miscalibrated the model (3 items always wrong at 0.98: p = 0.083), and with a few
    more it is far from normal."""
    # Without groups=, one-vs-rest pairs are grouped by their item.
    unit = "groups" if given else "items (each item's one-vs-rest pairs are one group)"
    if n_groups < 2:
        raise ValueError(f"Spiegelhalter's test with groups needs at least 2 {unit}, got 1")
    if n_groups < MIN_UNITS:
        warnings.warn(
            f"Spiegelhalter's test: {n_groups} {unit}; its cluster-robust z is at most "
            f"√{n_groups} = {math.sqrt(n_groups):.2f} and far from normal below {MIN_UNITS} "
            f"groups, so the p-value says little{' (it cannot reach 0.05)' * (n_groups <= 3)}",
            UserWarning,
            stacklevel=3,
        )


def _check_pair_count(n_pairs: int) -> None:
    """A warning below ``MIN_UNITS`` independent pairs, as :func:`_check_group_count` warns
    below that many groups: the normal approximation of a sum of a few Bernoulli terms is
    poor: one pair at q = 0.9 with y = 0 gives z = 3, p = 0.0027, where P(y = 0) is 0.1,
    so a single confident miss reads as strong evidence of miscalibration."""
    if n_pairs < MIN_UNITS:
        warn_at_caller(
            f"Spiegelhalter's test: {n_pairs} pair{'s' * (n_pairs != 1)}; its z is far from "
            f"normal below {MIN_UNITS} pairs, so the p-value says little"
        )


def spiegelhalter_from_histogram(
    pred_mean: Tensor, count: Tensor, sum_y: Tensor
) -> SpiegelhalterResult:
    """Spiegelhalter's test from histogram cells (mean q, count, Σy): the streaming form.

    Every pair of a cell is taken at the cell's mean q̄, so each cell adds
    (Σy − n q̄)(1 − 2q̄) to the numerator and n (1 − 2q̄)² q̄(1 − q̄) to the variance; the
    error is of the order of the cells' width (~1e-4 relative at the streaming sketch's
    default resolution). Independent labels only (a histogram keeps no groups). The cells
    are checked as :func:`~calib_metrics.functional.smooth_calibration_from_histogram`
    checks its own (1-D, of one shape, ``pred_mean`` in [0, 1] and not NaN, ``count`` ≥ 0,
    0 ≤ ``sum_y`` ≤ ``count``, some count positive): ValueError otherwise.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> r = spiegelhalter_from_histogram(t([0.2, 0.9]), t([100.0, 50.0]), t([30.0, 44.0]))
        >>> round(r.z.item(), 3)  # = spiegelhalter_test on the 150 pairs themselves
        2.313
    """
    names = ("pred_mean", "count", "sum_y")
    q, n, y = (x.to(torch.float64) for x in _check_histogram(pred_mean, count, sum_y, names))
    weight = 1 - 2 * q
    z = ((y - n * q) * weight).sum() / (n * weight**2 * q * (1 - q)).sum().sqrt()
    if not bool(torch.isfinite(z)):
        raise ValueError(
            "Spiegelhalter's test is undefined when every probability is 0, 1/2 or 1 "
            "(its statistic has no variance under calibration)"
        )
    return SpiegelhalterResult(z, torch.special.erfc(z.abs() / math.sqrt(2)))


def item_score_sums(probs: Tensor, target: Tensor, keep: Tensor | None = None) -> Tensor:
    """``[items, Σ Sᵢ, Σ Sᵢ²]`` (float64) of multiclass rows ``probs [n, C]`` with class ids
    ``target [n]``: Sᵢ = Σ_c (yᵢc − qᵢc)(1 − 2qᵢc), item i's one-vs-rest pairs' score
    contributions summed, the cluster-robust test's group sums with each item a group.
    ``keep`` ([n], bool) drops rows (padding; they may hold anything). What a streaming
    metric keeps of its folded rows for :func:`spiegelhalter_from_item_sums`; no host
    synchronisation.

    Example:
        >>> probs = torch.tensor([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]], dtype=torch.float64)
        >>> [round(v, 4) for v in item_score_sums(probs, torch.tensor([0, 2])).tolist()]
        [2.0, -0.44, 0.1168]
    """
    q = probs.to(torch.float64)
    classes = torch.arange(q.shape[-1], device=q.device)
    y = (target.unsqueeze(-1) == classes).to(torch.float64)
    per_item = ((y - q) * (1 - 2 * q)).sum(-1)
    kept = torch.ones_like(per_item) if keep is None else keep.to(torch.float64)
    per_item = torch.where(kept > 0, per_item, 0.0)  # a dropped row's NaN stays out
    return torch.stack([kept.sum(), per_item.sum(), per_item.square().sum()])


def spiegelhalter_from_item_sums(sums: Tensor) -> SpiegelhalterResult:
    """Spiegelhalter's test of one-vs-rest pairs grouped by item, from
    :func:`item_score_sums` (summed over batches): Z = Σ Sᵢ / √(Σ Sᵢ²), the
    cluster-robust form :func:`spiegelhalter_test` takes for multiclass one-vs-rest input
    (equal to it on the same items, to rounding). One host read.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> probs = torch.softmax(torch.randn(500, 4, generator=g, dtype=torch.float64), -1)
        >>> target = torch.multinomial(probs, 1, generator=g).squeeze(1)
        >>> parts = [item_score_sums(p, t) for p, t in zip(probs.chunk(3), target.chunk(3))]
        >>> streamed = spiegelhalter_from_item_sums(torch.stack(parts).sum(0))
        >>> exact = spiegelhalter_test(probs, target)
        >>> bool(torch.isclose(streamed.z, exact.z))
        True
    """
    items, total, squares = sums.to(torch.float64).tolist()
    _check_group_count(round(items), given=False)
    statistic = total / math.sqrt(squares) if squares > 0 else math.nan
    z = torch.tensor(statistic, dtype=torch.float64, device=sums.device)  # the input's
    if not math.isfinite(z.item()):
        raise ValueError(
            "Spiegelhalter's test is undefined when every item's contribution sums to 0 "
            "(its statistic has no variance under calibration)"
        )
    return SpiegelhalterResult(z, torch.special.erfc(z.abs() / math.sqrt(2)))
