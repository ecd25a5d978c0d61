"""Per-label paired comparison of two models, with a multiple-comparison correction.

The paper's Figure 4 claims ("the CRF is better calibrated on 39 of 47 tags") count
labels on which one model's error is lower. Counting point estimates counts noise as
wins; here each label's difference gets the paired interval and p-value of
:func:`~calib_metrics.functional.comparison.compare_calibration`, and the labels are
counted as "a better", "b better" or "not distinguishable" after correcting the p-values
for the number of labels tested.

**What is paired.** Label ``l``'s result *is* ``compare_calibration`` on the pairs whose
``labels`` entry is ``l`` (and their ``groups``): both models are resampled together on
those items — the pairing that matters for the difference. The one-vs-rest pairs of
``[N, C]`` input are resampled item by item within each label, as ``compare_calibration``
resamples them (:func:`~calib_metrics.functional.comparison.compare_item_pairs`). The
labels are compared one after another in increasing id order, each drawing its
resampling from ``generator`` in turn, so draws are not shared across labels. That
costs nothing the correction needs: Holm and Benjamini–Hochberg use each label's own
p-value, whose distribution does not depend on how other labels' draws were made, and it
keeps every label's result exactly ``compare_calibration``'s on its subset (whatever
that function's interval becomes).
The labels' p-values are still dependent through the data (one sentence holds queries of
many tags), which is why Holm, valid under any dependence, is the default.

**Which correction controls what** (m labels, level ``alpha``):

* ``correction="holm"`` (Holm 1979): the family-wise error rate — the probability of
  calling *any* label with no real difference "better" — is at most ``alpha``, under any
  dependence between the labels' p-values.
* ``correction="bh"`` (Benjamini & Hochberg 1995): the false discovery rate — the
  expected share of no-difference labels among those called "better" — is at most
  ``alpha``, under independence or positive dependence (PRDS) of the p-values. More
  labels are called than with Holm; some of them may be false.

**Monte Carlo p-values.** A p-value from S bootstrap draws is known only to a resolution
of 2/S: p = 0 says that no draw reached 0, not that p is 0. Corrected as if exact, p = 0
stays 0 under any correction, so with 100 labels of no real difference some label or
other was called "better" in 68% of data sets at S = 300 draws and 25% at S = 2,000 (Holm
promises at most 5%; ``benchmarks/compare_by_label_fwer.py``).
The correction therefore takes each label's Monte Carlo p-value (Phipson & Smyth 2010),
min(1, (S·p + 2)/(S + 1)) — the two-sided form of (k + 1)/(S + 1) for the k draws on the
rarer side — which is never below 2/(S + 1). Holm over m labels then calls a label only
where S ≥ 2m/alpha − 1 (4,000 draws for 100 labels at 0.05); with fewer draws no label can
be called, and a warning says how many draws would do (or, past ``MAX_DRAWS``, the smallest
alpha that would, and under Holm, where one label could be called, how many labels).

**Small labels are not called.** Holm's promise also needs each label's p-value to be
right far in its tail, at alpha/m: a bootstrap of a few dozen pairs is not. With no real
difference anywhere and 8,000 draws, labels of 20 pairs each had a family-wise error of
0.11–0.13 (50 and 100 labels) and labels of 30 pairs 0.09 (100 labels); labels of 50
pairs held it, 0.03–0.04, and of 200 pairs 0.06 ± 0.02 (``docs/coverage.md``, "Per-label
comparisons"). So labels of fewer than ``min_units`` resampling units (pairs, items of
``[N, C]`` input, or groups; ``SMALL_LABEL_UNITS`` = 50 by default; those of all the
label's pairs, whatever their labels, so a rare class's one-vs-rest label over every
item counts every item or group) stay out of the correction's family and are never
called (``not_tested`` counts them, with a warning); from ``MIN_UNITS`` (10) units up
they still get their difference, interval and uncorrected p-value. ``min_units=10``
calls those anyway, as before 2026-11-29, with a warning that their family-wise error is
not held. A label of fewer than ``MIN_UNITS`` units has no interval and no p-value (too
few units to resample) and cannot be called, whatever ``min_units``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import supported_dtype
from calib_metrics.functional.calibration import _debias_for
from calib_metrics.functional.comparison import (
    DEFAULT_SAMPLES,
    ComparisonResult,
    check_models,
    compare_item_pairs,
    single_pair_tally,
    single_pair_warning,
)
from calib_metrics.functional.errors import (
    check_dense,
    check_generator,
    check_int,
    check_not_meta,
    said_once_for_all,
    warn_at_caller,
)
from calib_metrics.functional.intervals import MAX_DRAWS, MIN_UNITS
from calib_metrics.functional.multiclass import is_multiclass, one_hot_pairs_message, pair_sets

CORRECTIONS = ("holm", "bh")

# Fewer resampling units than this and a label's bootstrap p-value is too rough in the tail
# the correction reads: with 20 or 30 pairs each Holm's family-wise error was 0.09-0.13,
# with 50 or 200 it held 0.05 (docs/coverage.md, "Per-label comparisons").
SMALL_LABEL_UNITS = 50


class LabelComparisonResult(NamedTuple):
    """Per-label ``error(a) − error(b)`` with paired intervals and corrected p-values.

    Tensors are 1-d with one entry per label, in the order of ``labels``.

    Attributes:
        labels: the label ids, increasing (int64).
        difference: error(a) − error(b) per label (negative: a is better calibrated).
        lower: lower end of each label's paired interval of the difference.
        upper: upper end.
        p_value: each label's two-sided p-value of "no difference" (uncorrected), the
            share of draws as ``compare_calibration`` gives it (0: below 2/S).
        adjusted_p_value: each label's Monte Carlo p-value ``min(1, (S·p + 2)/(S + 1))``
            of S draws, adjusted by ``correction`` (Holm or BH; module docstring).
        verdict: int8, −1 where a is better (adjusted p ≤ alpha, and most paired draws of
            the difference below 0: the side the p-value tested, which a difference of 0,
            both debiased errors clipped to 0, does not show), +1 where b is better, 0
            where the two are not distinguishable.
        a_better: how many labels a is significantly better calibrated on.
        b_better: how many labels b is.
        not_distinguishable: how many labels neither is (the untested ones included).
        correction: ``"holm"`` (family-wise error rate) or ``"bh"`` (false discovery rate).
        alpha: the level of the correction.
        per_label: each label's :class:`ComparisonResult` (with both models' results).
        not_tested: how many labels had too few resampling units to be tested: fewer
            than ``min_units`` (their p-value is given, uncorrected; the adjusted one is
            NaN), or than ``compare_calibration``'s ``MIN_UNITS`` (10: NaN interval and
            p-value). They are left out of the correction's family, verdict 0.
        units: each label's resampling units (pairs, the items of ``[N, C]`` input, or
            groups with ``groups=``), int64.
        min_units: the fewest units a label needs to be called.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(2, 2000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> a = q.clone()
        >>> a[0] = q[0].sqrt()  # label 0: a's probabilities are too high
        >>> labels = torch.arange(2).unsqueeze(1).expand_as(q)
        >>> r = compare_calibration_by_label(a, q, y, labels, n_samples=200, generator=g)
        >>> r.labels.tolist(), r.verdict.tolist(), r.b_better
        ([0, 1], [1, 0], 1)
    """

    labels: Tensor
    difference: Tensor
    lower: Tensor
    upper: Tensor
    p_value: Tensor
    adjusted_p_value: Tensor
    verdict: Tensor
    a_better: int
    b_better: int
    not_distinguishable: int
    correction: str
    alpha: float
    per_label: tuple[ComparisonResult, ...]
    not_tested: int = 0
    units: Tensor | None = None
    min_units: int = SMALL_LABEL_UNITS

    def __repr__(self) -> str:
        """One line, the counts: every label's tensors and comparison had been printed in
        full (fields give them).

        Example:
            >>> import torch
            >>> t = torch.tensor
            >>> r = LabelComparisonResult(t([0, 1]), *[t([0.0, 0.0])] * 5, t([1, 0]), 0, 1, 1,
            ...                           "holm", 0.05, ())
            >>> repr(r).split(": ")
            ['LabelComparisonResult(2 labels', 'a better on 0, b better on 1, not \
distinguishable on 1; holm at alpha = 0.05)']
        """
        n = self.labels.numel()
        untested = f", {self.not_tested} of them not tested" if self.not_tested else ""
        return (
            f"{type(self).__name__}({n} label{'s' * (n != 1)}: a better on "
            f"{self.a_better}, b better on {self.b_better}, not distinguishable on "
            f"{self.not_distinguishable}{untested}; {self.correction} at alpha = {self.alpha:g})"
        )


def holm_adjust(p_values: Tensor) -> Tensor:
    """Holm's step-down adjusted p-values (reject where adjusted ≤ alpha: FWER ≤ alpha).

    The k-th smallest p-value is multiplied by ``m − k + 1``, capped at 1, and made
    non-decreasing in that order. NaN p-values are treated as 1.

    Example:
        >>> import torch
        >>> holm_adjust(torch.tensor([0.01, 0.04, 0.03, 0.5], dtype=torch.float64))
        tensor([0.0400, 0.0900, 0.0900, 0.5000], dtype=torch.float64)
    """
    return _in_sorted_order(p_values, _holm_sorted)


def _holm_sorted(p: Tensor) -> Tensor:
    factor = torch.arange(p.numel(), 0, -1, dtype=p.dtype, device=p.device)
    return torch.cummax((p * factor).clamp(max=1.0), dim=0).values


def bh_adjust(p_values: Tensor) -> Tensor:
    """Benjamini–Hochberg adjusted p-values (reject where adjusted ≤ alpha: FDR ≤ alpha).

    The k-th smallest p-value is multiplied by ``m / k``, capped at 1, and made
    non-decreasing by taking the running minimum from the largest down. NaN p-values
    are treated as 1.

    Example:
        >>> import torch
        >>> bh_adjust(torch.tensor([0.01, 0.04, 0.03, 0.5], dtype=torch.float64))
        tensor([0.0400, 0.0533, 0.0533, 0.5000], dtype=torch.float64)
    """
    return _in_sorted_order(p_values, _bh_sorted)


def _bh_sorted(p: Tensor) -> Tensor:
    rank = torch.arange(1, p.numel() + 1, dtype=p.dtype, device=p.device)
    # m/k first: exact where it is a whole number (p·m/k had made 0.05·3/3 0.05000000000000001).
    scaled = (p * (p.numel() / rank)).clamp(max=1.0)
    return torch.cummin(scaled.flip(0), dim=0).values.flip(0)


def _in_sorted_order(p_values: Tensor, adjust_sorted) -> Tensor:
    """Apply an adjustment defined on increasing p-values, and put them back in place."""
    p = _check_p_values(p_values)
    order = torch.argsort(p, stable=True)
    return torch.empty_like(p).scatter_(0, order, adjust_sorted(p[order]))


def _check_p_values(p_values: Tensor) -> Tensor:
    if not isinstance(p_values, Tensor) or p_values.dim() != 1:
        raise ValueError("p_values must be a 1-d tensor")
    if not p_values.is_floating_point():
        raise ValueError(f"p_values must be floating point, got dtype {p_values.dtype}")
    check_not_meta(p_values, "p_values")
    p = p_values.nan_to_num(nan=1.0)
    if bool(((p < 0) | (p > 1)).any()):
        raise ValueError("p_values must lie in [0, 1]")
    return p


ADJUST = {"holm": holm_adjust, "bh": bh_adjust}


def monte_carlo_p_values(p_values: Tensor, n_samples: int) -> Tensor:
    """Two-sided bootstrap p-values of S = ``n_samples`` draws as Monte Carlo p-values,
    ``min(1, (S·p + 2)/(S + 1))``: (k + 1)/(S + 1) for the k draws on the rarer side,
    doubled (Phipson & Smyth 2010), never below 2/(S + 1). NaN stays NaN.

    Example:
        >>> import torch
        >>> monte_carlo_p_values(torch.tensor([0.0, 0.01, 1.0], dtype=torch.float64), 999)
        tensor([0.0020, 0.0120, 1.0000], dtype=torch.float64)
    """
    return ((n_samples * p_values + 2) / (n_samples + 1)).clamp(max=1.0)


def compare_calibration_by_label(
    probs_a: Tensor,
    probs_b: Tensor,
    target: Tensor,
    labels: Tensor,
    *,
    groups: Tensor | None = None,
    correction: str = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
    generator: torch.Generator | None = None,
    min_units: int = SMALL_LABEL_UNITS,
    **options,
) -> LabelComparisonResult:
    """Per-label difference in calibration error of two models scored on the same items.

    Args:
        probs_a: model a's probabilities q in [0, 1] of the binary pairs (any shape), or
            multiclass ``[..., C]``: then the pairs are its one-vs-rest pairs (C per item).
        probs_b: model b's probabilities of the same pairs, same shape.
        target: the binary labels, same shape; for multiclass probs the integer class
            ids ``[...]``.
        labels: integer id per pair of the query it belongs to (a tag of one-vs-rest
            queries, a tag pair, a document's coreference pairs), same shape. For
            multiclass probs either one per item (``target``'s shape: it follows the
            item's C pairs) or one per pair (``probs_a``'s shape; the class ids
            ``torch.arange(C).expand_as(probs_a)`` compare the models class by class).
        groups: optional group id per pair (sentence, document): whole groups are
            resampled within each label; for multiclass probs per item or per pair, as
            ``labels``.
        correction: ``"holm"`` (controls the family-wise error rate, any dependence) or
            ``"bh"`` (Benjamini–Hochberg: the false discovery rate, independent or
            positively dependent p-values).
        alpha: level at which an adjusted p-value makes a label's difference real.
        confidence: coverage of each label's interval (not adjusted for multiplicity).
        generator: source of randomness; the labels draw from it in increasing id order.
        min_units: labels with fewer resampling units (pairs, items of ``[N, C]`` input,
            or groups) are reported but not called: their bootstrap p-values are too
            rough in the tail the correction reads (module docstring); at least
            ``MIN_UNITS`` (10).
        **options: the estimator and resampling options of
            :func:`~calib_metrics.functional.comparison.compare_calibration`
            (``n_samples``, ``bin_size``, ``binning``, ``n_bins``, ``norm``, ``debias``).

    Returns:
        :class:`LabelComparisonResult`. Label ``l``'s entry is ``compare_calibration`` on
        the pairs with ``labels == l`` (module docstring: what is paired). Counting the
        verdicts syncs with the host once.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(3, 8000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> a = q.clone()
        >>> a[0] = q[0].sqrt()  # label 0: a's probabilities are too high
        >>> labels = torch.arange(3).unsqueeze(1).expand_as(q)
        >>> r = compare_calibration_by_label(a, q, y, labels, n_samples=300, generator=g)
        >>> r.verdict.tolist(), (r.a_better, r.b_better, r.not_distinguishable)
        ([1, 0, 0], (0, 1, 2))
        >>> r.per_label[1].difference.item()
        0.0

        Multiclass probabilities, compared class by class on their one-vs-rest pairs:

        >>> p = torch.softmax(torch.randn(3000, 3, generator=g), dim=-1).double()
        >>> t = torch.multinomial(p, 1, generator=g).squeeze(1)
        >>> sharp = torch.softmax(3 * p.log(), dim=-1)  # overconfident
        >>> classes = torch.arange(3).expand_as(p)
        >>> r = compare_calibration_by_label(sharp, p, t, classes, n_samples=300, generator=g)
        >>> r.labels.tolist(), r.b_better
        ([0, 1, 2], 3)
    """
    check_generator(generator)
    _check_options(options)
    flat = _check_inputs(probs_a, probs_b, target, labels, groups)
    _warn_of_one_hot_items(probs_a, target, labels, groups)
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be 'holm' or 'bh', got {correction!r}")
    # Any real number type (numpy's float32 from a config array too), not a bool.
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    alpha = float(alpha)
    check_int("min_units", min_units, MIN_UNITS)
    ids = torch.unique(flat["labels"])
    selections = [flat["labels"] == label for label in ids]
    tally = [0, 0]
    token = single_pair_tally.set(tally)  # one warning of one-pair bins, not one a label
    try:
        compared = (
            _compare_label(flat, select, confidence, generator, options) for select in selections
        )
        per_label, sides = zip(*said_once_for_all(compared, ids.tolist(), unit="label"))
    finally:
        single_pair_tally.reset(token)
    if tally[0]:
        binning, n_bins = options.get("binning", "adaptive"), options.get("n_bins", 15)
        message = single_pair_warning("compare_calibration_by_label", *tally, binning, n_bins)
        warnings.warn(message, UserWarning, stacklevel=2)
    units = [_unit_count(flat, select) for select in selections]
    large_enough = torch.tensor([n >= min_units for n in units], device=ids.device)
    n_samples = options.get("n_samples", DEFAULT_SAMPLES)
    result = _summarise(ids, per_label, sides, large_enough, correction, alpha, n_samples)
    _warn_of_small_labels(units, min_units)
    units = torch.tensor(units, dtype=torch.int64, device=ids.device)  # with the labels
    return result._replace(units=units, min_units=min_units)


# The options passed on to each label's compare_calibration.
ESTIMATOR_OPTIONS = ("n_samples", "bin_size", "binning", "n_bins", "norm", "debias")


def _check_options(options: dict) -> None:
    """Only the estimator's options go on to each label's comparison: each label's pairs
    are already one-vs-rest pairs, so ``mode`` has no meaning there."""
    if "mode" in options:
        raise ValueError(
            "compare_calibration_by_label compares each label's one-vs-rest pairs and takes "
            f"no mode= (got mode={options['mode']!r}); for the top-label or classwise error "
            "of whole models use compare_calibration(..., mode=...), and for a class-by-class "
            "comparison pass labels=torch.arange(C).expand_as(probs_a)"
        )
    if "debias" in options:  # checked before any label's comparison (or none) runs
        _debias_for("l2", options["debias"])
    unknown = sorted(set(options) - set(ESTIMATOR_OPTIONS))
    if unknown:
        raise TypeError(
            f"compare_calibration_by_label() got unexpected keyword argument(s) {unknown}; "
            f"its estimator options are {', '.join(ESTIMATOR_OPTIONS)}"
        )


def _warn_of_one_hot_items(
    probs_a: Tensor, target: Tensor, labels: Tensor, groups: Tensor | None
) -> None:
    """compare_calibration's warning of a one-hot target beside softmax rows, where a
    label holds several of an item's pairs: those are resampled pair by pair, as there
    (labels per item, ``domain[:, None].expand_as(probs_a)``). Class by class, a label
    holds one pair of each item, so its pairs are its items: nothing to warn of; nor
    with ``groups``, which name the resampling units."""
    if groups is not None or target.shape != probs_a.shape or target.ndim < 2:
        return  # class ids, or binary pairs of no row
    pairs_of_an_item_share_a_label = labels.sort(-1).values.diff(dim=-1) == 0
    if not bool(pairs_of_an_item_share_a_label.any()):
        return
    message = one_hot_pairs_message(probs_a, target, read_by="comparison")
    if message is not None:
        warn_at_caller(f"compare_calibration_by_label: {message}")


def _check_inputs(probs_a, probs_b, target, labels, groups) -> dict[str, Tensor | None]:
    """Shapes and dtypes of the per-pair inputs; everything else compare_calibration checks."""
    named = {"probs_a": probs_a, "probs_b": probs_b, "target": target, "labels": labels}
    if groups is not None:
        named["groups"] = groups
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise ValueError(f"{name} must be a tensor, got {type(value).__name__}")
        check_dense(value, name)  # before any shape is read
        check_not_meta(value, name)  # before torch.unique, which meta tensors cannot run
    for name in ("labels", "groups"):
        value = named.get(name)
        if value is None:
            continue
        # bool ids as the metric refuses them; uint64 ids past int64 named, not wrapped
        if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
            raise ValueError(f"{name} must hold integer ids, got dtype {value.dtype}")
        named[name] = supported_dtype(value, name)
    if is_multiclass(probs_a, target):
        named = _one_vs_rest(named)
        probs_a = named["probs_a"]
    for name, value in named.items():
        if value.shape != probs_a.shape:
            raise ValueError(
                f"{name} must have the shape of probs_a {tuple(probs_a.shape)}, "
                f"got {tuple(value.shape)} (multiclass probs [..., C] take integer class "
                "ids target [...], and labels and groups per item [...] or per pair [..., C])"
            )
        if value.device != probs_a.device:
            raise ValueError(f"{name} is on {value.device} but probs_a on {probs_a.device}")
    if probs_a.numel() == 0:
        raise ValueError("no pairs to compare: the inputs are empty")
    flat = {name: value.reshape(-1) for name, value in named.items()}
    return {**flat, "groups": flat.get("groups"), "items": flat.get("items")}


def _one_vs_rest(named: dict[str, Tensor]) -> dict[str, Tensor]:
    """Multiclass inputs as their flat one-vs-rest pairs; labels and groups given per item
    follow the item's C pairs, per pair they are flattened."""
    probs_a, target = named["probs_a"], named["target"]
    if named["probs_b"].shape != probs_a.shape:
        raise ValueError(
            f"probs_b must have the shape of probs_a {tuple(probs_a.shape)}, "
            f"got {tuple(named['probs_b'].shape)}"
        )
    check_models(probs_a, named["probs_b"], target)
    flat_a, onehot, _ = pair_sets(probs_a, target, "one_vs_rest", check_rows=False)[0]
    out = {"probs_a": flat_a, "probs_b": named["probs_b"].reshape(-1), "target": onehot}
    n_classes = probs_a.shape[-1]
    # Each pair's item: resampled together (an item's labels are dependent), as
    # compare_calibration resamples [N, C] input.
    items = torch.arange(target.numel(), device=target.device)
    out["items"] = items.repeat_interleave(n_classes)
    for name in ("labels", "groups"):
        if name not in named:
            continue
        value = named[name]
        if value.shape == target.shape:
            out[name] = value.reshape(-1).repeat_interleave(n_classes)
        elif value.shape == probs_a.shape:
            out[name] = value.reshape(-1)
        else:
            raise ValueError(
                f"{name} of multiclass probs {tuple(probs_a.shape)} must be given per item "
                f"{tuple(target.shape)} or per one-vs-rest pair {tuple(probs_a.shape)}, "
                f"got {tuple(value.shape)}"
            )
    return out


def _unit_count(flat: dict, select: Tensor) -> int:
    """A label's resampling units: its pairs, its items (one-vs-rest pairs of ``[N, C]``
    input), or its groups (one host sync)."""
    units = flat["groups"] if flat["groups"] is not None else flat["items"]
    if units is None:
        return int(select.sum())
    return int(torch.unique(units[select]).numel())


def _warn_of_small_labels(units: list[int], min_units: int) -> None:
    """Warn of labels left uncalled for their size (every label ``not_tested`` counts for
    it), or (``min_units`` below ``SMALL_LABEL_UNITS``) called although their family-wise
    error is not held."""
    left_out = [n for n in units if n < min_units]
    if left_out:
        warnings.warn(
            f"compare_calibration_by_label: {len(left_out)} of {len(units)} labels have fewer "
            f"than min_units={min_units} resampling units (as few as {min(left_out)}) and are "
            f"not called: {_why_not_called(left_out)}",
            UserWarning,
            stacklevel=3,
        )
    small = [n for n in units if min_units <= n < SMALL_LABEL_UNITS]
    if small:
        warnings.warn(
            f"compare_calibration_by_label: {len(small)} of the called labels have fewer than "
            f"{SMALL_LABEL_UNITS} resampling units (as few as {min(small)}): with 20-30 pairs "
            "a label the family-wise error was 0.09-0.13, not 0.05 (docs/coverage.md, "
            '"Per-label comparisons"); read their verdicts with care',
            UserWarning,
            stacklevel=3,
        )


def _why_not_called(left_out: list[int]) -> str:
    """Why labels of these unit counts (all below ``min_units``) are not called: a p-value
    too rough in its tail (``min_units=MIN_UNITS`` calls them anyway), or, below
    ``MIN_UNITS``, no interval or p-value at all (compare_calibration makes none)."""
    rough = [n for n in left_out if n >= MIN_UNITS]
    none = len(left_out) - len(rough)
    reasons = []
    if rough:
        which, them = ("them", "them") if not none else (f"those of {MIN_UNITS} or more", "those")
        reasons.append(
            f"the bootstrap p-values of {which} are too rough in the tail the correction reads "
            "(with 20-30 pairs a label the family-wise error was 0.09-0.13, not 0.05; "
            f'docs/coverage.md, "Per-label comparisons"); min_units={MIN_UNITS} calls {them} '
            "anyway"
        )
    if none:
        which = "they have" if not rough else f"{none} of them {'has' if none == 1 else 'have'}"
        reasons.append(
            f"{which} fewer than {MIN_UNITS}, too few for a bootstrap interval or p-value at "
            "all, and cannot be called"
        )
    return "; ".join(reasons)


def _compare_label(
    flat: dict, select: Tensor, confidence, generator, options
) -> tuple[ComparisonResult, Tensor]:
    """compare_calibration on one label's pairs (and their groups), and its draws' side."""
    groups = None if flat["groups"] is None else flat["groups"][select]
    items = None if flat["items"] is None else flat["items"][select]
    with warnings.catch_warnings():
        # A label with too few units is reported as not tested (``not_tested``).
        warnings.filterwarnings("ignore", "compare_calibration: .* resampling unit")
        return compare_item_pairs(
            flat["probs_a"][select], flat["probs_b"][select], flat["target"][select], items,
            groups=groups, confidence=confidence, generator=generator, **options,
        )  # fmt: skip


def _summarise(
    ids: Tensor,
    per_label: tuple,
    sides: tuple,
    large_enough: Tensor,
    correction: str,
    alpha: float,
    n_samples: int,
):
    """Stack the labels' results, correct the Monte Carlo p-values of the labels that can
    be called (``large_enough``: enough units) and count the verdicts. A called label's
    direction is the side its draws lie on (``sides``), which the p-value tested: its
    shown difference is 0 where both debiased errors are clipped to 0."""

    def stack(field: str) -> Tensor:
        return torch.stack([getattr(r, field).to(torch.float64) for r in per_label])

    difference, p_value = stack("difference"), stack("p_value")
    # Labels too small to test are no member of the family the correction counts.
    tested = ~p_value.isnan() & large_enough
    adjusted = torch.full_like(p_value, float("nan"))
    if bool(tested.any()):
        adjusted[tested] = ADJUST[correction](monte_carlo_p_values(p_value[tested], n_samples))
        _warn_if_none_can_be_called(int(tested.sum()), correction, alpha, n_samples)
    real = _called(adjusted, alpha)
    verdict = (torch.stack(sides).to(torch.float64) * real).to(torch.int8)
    counts = torch.stack([(verdict == -1).sum(), (verdict == 1).sum()]).tolist()
    return LabelComparisonResult(
        labels=ids.to(torch.int64),
        difference=difference,
        lower=stack("lower"),
        upper=stack("upper"),
        p_value=p_value,
        adjusted_p_value=adjusted,
        verdict=verdict,
        a_better=counts[0],
        b_better=counts[1],
        not_distinguishable=len(per_label) - counts[0] - counts[1],
        correction=correction,
        alpha=alpha,
        per_label=per_label,
        not_tested=int((~tested).sum()),
    )


def _warn_if_none_can_be_called(tested: int, correction: str, alpha: float, n_samples: int):
    """Warn where even labels whose every draw lies on one side (Monte Carlo p = 2/(S + 1))
    stay above ``alpha`` after the correction: then no label can be called at all."""
    if _can_call(tested, correction, alpha, n_samples):
        return
    factor = tested if correction == "holm" else 1  # the smallest p-value's multiplier
    warnings.warn(
        f"compare_calibration_by_label: no label can be called better at alpha={alpha:g}: a "
        f"p-value from {n_samples} draws is at least 2/(S + 1) = "
        f"{_beside(2 / (n_samples + 1), alpha / factor)}, and {correction} over {tested} "
        f"label{'s' * (tested != 1)} needs {_beside(alpha / factor, 2 / (n_samples + 1))} "
        f"or less; {_draws_advice(tested, correction, alpha, factor)}",
        UserWarning,
        stacklevel=4,
    )


def _draws_advice(tested: int, correction: str, alpha: float, factor: int) -> str:
    """The fewest draws that can call a label, or, past the library's most draws (which
    had been advised, then refused), what can: the smallest workable alpha, 2m/(S + 1) at
    S = ``MAX_DRAWS``, and, where one label is callable there, the most labels Holm calls
    (⌊alpha (S + 1)/2⌋; "fewer labels" had been offered where not even one could be).

    Example:
        >>> _draws_advice(3, "holm", 0.05, 3)
        'use n_samples=119 or more'
        >>> _draws_advice(2, "holm", 1e-7, 2)
        'even n_samples=10000000, the most, cannot call one: use alpha=4e-07 or more'
        >>> print(_draws_advice(20, "holm", 1e-6, 20))
        even n_samples=10000000, the most, cannot call one of 20 labels (holm calls at most 5
        at this alpha): use alpha=4e-06 or more, or 5 labels or fewer
    """
    if not _can_call(tested, correction, alpha, MAX_DRAWS):
        most = f"even n_samples={MAX_DRAWS}, the most, cannot call one"
        larger = f"use alpha={_smallest_alpha(tested, correction)} or more"
        if not _can_call(1, correction, alpha, MAX_DRAWS):  # then fewer labels would not help
            return f"{most}: {larger}"
        # Only Holm gets here: BH's smallest adjusted p-value is that of one label.
        labels = _most_callable(correction, alpha)
        return (
            f"{most} of {tested} labels ({correction} calls at most {labels} at this alpha): "
            f"{larger}, or {labels} label{'s' * (labels != 1)} or fewer"
        )
    needed = max(1, math.ceil(2 * factor / alpha) - 2)
    while not _can_call(tested, correction, alpha, needed):  # the same test, rounding and all
        needed += 1
    return f"use n_samples={needed} or more"


def _smallest_alpha(tested: int, correction: str) -> str:
    """The smallest alpha at which ``MAX_DRAWS`` draws can call a label, 2m/(S + 1) under
    Holm, 2/(S + 1) under BH, printed with the fewest digits that still can (rounded up)."""
    factor = tested if correction == "holm" else 1
    exact = 2 * factor / (MAX_DRAWS + 1)
    for digits in range(1, 17):
        shown = f"{exact:.{digits}g}"
        if _can_call(tested, correction, float(shown), MAX_DRAWS):
            return shown
    return repr(math.nextafter(exact, math.inf))


def _most_callable(correction: str, alpha: float) -> int:
    """How many labels ``MAX_DRAWS`` draws can call at ``alpha`` under Holm, which multiplies
    the smallest p-value by m: ⌊alpha (S + 1)/2⌋, up to the rounding :func:`_called` allows."""
    labels = math.floor(alpha * (MAX_DRAWS + 1) / 2)
    while labels > 0 and not _can_call(labels, correction, alpha, MAX_DRAWS):
        labels -= 1
    while _can_call(labels + 1, correction, alpha, MAX_DRAWS):  # the same test, rounding and all
        labels += 1
    return labels


def _beside(value: float, other: float) -> str:
    """``value`` with the digits that tell it from ``other`` (2 at least): rounded alike,
    2/799 and 0.05/20 had both read 0.0025, "at least 0.0025 ... needs 0.0025 or less".

    Example:
        >>> _beside(2 / 799, 0.05 / 20), _beside(0.05 / 20, 2 / 799), _beside(0.01, 0.5)
        ('0.002503', '0.0025', '0.01')
    """
    for digits in range(2, 16):
        if f"{value:.{digits}g}" != f"{other:.{digits}g}":
            return f"{value:.{digits}g}"
    return f"{value:.16g}"


def _can_call(tested: int, correction: str, alpha: float, n_samples: int) -> bool:
    """Whether ``tested`` labels at the smallest Monte Carlo p-value of ``n_samples`` draws
    would be called after the correction (as :func:`_summarise` decides)."""
    floor = torch.full((tested,), 2 / (n_samples + 1), dtype=torch.float64, device="cpu")
    return bool(_called(ADJUST[correction](floor).min(), alpha))


def _called(adjusted: Tensor, alpha: float) -> Tensor:
    """Adjusted p-values at most ``alpha``, as their exact values would be: within a few
    roundings of it counts (three p-values of 2/40 each, adjusted by BH, are 0.05 exactly
    and had come out above 0.05 by one rounding, called nothing, and warned that S = 40
    draws were needed, the S given)."""
    return adjusted <= alpha * (1 + 1e-12)
