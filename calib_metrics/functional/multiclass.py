"""Multiclass probabilities as binary (q, y) pairs: one-vs-rest, top-label, classwise.

Input ``probs [..., C]`` (one probability per class) with integer ``target [...]``
becomes binary pairs in one of three ways (``mode``):

* ``"one_vs_rest"`` (the paper's §4.2.2, the default): every item gives C pairs
  (q = probs[c], y = [target = c]), all pooled into one set of pairs.
* ``"top_label"``: one pair per item, the confidence q = max_c probs[c] and
  y = [argmax_c probs = target] (the first maximum wins a tie, as in ``torch.max``).
  This is torchmetrics' ``MulticlassCalibrationError`` (equal-width bins; but for a
  confidence of exactly 1 beside others in the last bin, which torchmetrics bins apart), and
  torch-uncertainty's adaptive calibration error where their equal-mass bins coincide
  (N a multiple of its ``n_bins``, ``bin_size=N // n_bins``, no tied confidences).
* ``"classwise"``: C sets of pairs, one per class (q = probs[c], y = [target = c]);
  the error is the average of the C per-class errors.

Binary input (``probs`` and ``target`` of one shape) is already a set of pairs; it is
passed through under ``"one_vs_rest"`` and refused by the other two modes, which need
the class dimension.
"""

from __future__ import annotations

import warnings
from typing import Literal, NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.binning import (
    Bins,
    check_probs,
    class_id_hint,
    one_hot_advice,
    supported_dtype,
)
from calib_metrics.functional.clusters import with_samples
from calib_metrics.functional.errors import check_id_tensor, check_tensors
from calib_metrics.functional.intervals import CalibrationResult, effective_samples

Mode = Literal["one_vs_rest", "top_label", "classwise"]
MODES = ("one_vs_rest", "top_label", "classwise")


class PairSet(NamedTuple):
    """One set of binary pairs (flat), with the group id of each pair or None."""

    probs: Tensor
    target: Tensor
    groups: Tensor | None


def is_multiclass(probs: Tensor, target: Tensor) -> bool:
    """True for ``probs [..., C]`` with ``target [...]``, False for equal shapes.

    Example:
        >>> import torch
        >>> is_multiclass(torch.rand(4, 3), torch.tensor([0, 2, 1, 1]))
        True
        >>> is_multiclass(torch.rand(4), torch.tensor([0, 1, 1, 0]))
        False
    """
    return (
        isinstance(probs, Tensor)
        and isinstance(target, Tensor)
        and probs.ndim == target.ndim + 1
        and probs.shape[:-1] == target.shape
    )


def check_class_id_dtype(target: Tensor) -> None:
    """A multiclass target holds integer class ids: not floats, complex numbers or bools.

    Example:
        >>> import torch
        >>> check_class_id_dtype(torch.tensor([0, 2]))
        >>> check_class_id_dtype(torch.tensor([True, False]))
        Traceback (most recent call last):
        ...
        ValueError: multiclass target must hold integer class ids, got dtype torch.bool (...)
    """
    if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
        hint = (
            ""
            if target.is_complex()
            else " (class ids held as floats or bools: pass target.long())"
        )
        raise ValueError(
            f"multiclass target must hold integer class ids, got dtype {target.dtype}{hint}"
        )


# How far a row of class probabilities may sum from 1 unnoticed: softmax outputs written
# with 4 decimals for 50 classes are within 50 · 0.00005.
ROW_SUM_TOLERANCE = 0.01


def rows_off_one(probs: Tensor) -> tuple[int, int, float] | None:
    """Rows of class probabilities ``[N, C]`` that do not sum to 1 within
    ``ROW_SUM_TOLERANCE``: (how many, the first one's index, its sum), or None when every
    row does. One host synchronisation.

    Example:
        >>> import torch
        >>> rows_off_one(torch.tensor([[0.2, 0.8], [0.5, 0.9], [0.7, 0.7]]))
        (2, 1, 1.4)
        >>> rows_off_one(torch.tensor([[0.2, 0.8]])) is None
        True
    """
    sums = probs.sum(dim=-1, dtype=torch.float64).reshape(-1)
    # The slack keeps a row that sums to 0.99 in decimals (0.98999… in binary) within.
    off = ((sums - 1).abs() > ROW_SUM_TOLERANCE + 1e-9).nonzero()
    if off.numel() == 0:
        return None
    first = int(off[0, 0])
    return off.shape[0], first, round(sums[first].item(), 4)


# What a row-sum warning says past its counts; the functions say only this, so that
# Python's warning filter shows it once per call site rather than once per batch.
ROW_SUM_WARNING = (
    "rows of class probabilities do not sum to 1 (within 0.01): each column is read as one "
    "class's probability as it is; if they are softmax outputs, take the softmax over the "
    "class dimension (dim=-1); independent one-vs-rest scores are fine as they are"
)


def row_sum_message(probs: Tensor) -> str | None:
    """Why rows of class probabilities ``[N, C]``, a metric's batch, look wrong, with their
    count and the first one (None when they sum to 1): a softmax over the batch instead
    of the classes gives a meaningless error with no error raised. Independent one-vs-rest
    scores are legitimate, so the metrics warn, once per object, and check no later batch:
    the count is the first such batch's, and says so (it had read as the whole run's).

    Example:
        >>> import torch
        >>> logits = torch.tensor([[1.0, 2.0, 3.0]] * 4)
        >>> print(row_sum_message(logits.softmax(dim=0)))  # over the batch: 0.25 each
        ... # doctest: +ELLIPSIS
        4 of 4 rows (row 0 sums to 0.75) in the first batch with any such rows (warned once;
        later batches are not checked): rows of class probabilities do not sum to 1 ...
    """
    off = rows_off_one(probs)
    if off is None:
        return None
    count, first, total = off
    rows = probs.reshape(-1, probs.shape[-1]).shape[0]
    return (
        f"{count} of {rows} rows (row {first} sums to {total:.4g}) in the first batch with "
        f"any such rows (warned once; later batches are not checked): {ROW_SUM_WARNING}"
    )


def warn_row_sums(probs: Tensor, name: str = "probs", stacklevel: int = 2) -> None:
    """The functions' row-sum UserWarning (one stable text per argument), when rows of
    ``probs [..., C]`` do not sum to 1. One host synchronisation."""
    if rows_off_one(probs) is not None:
        warnings.warn(f"{name}: {ROW_SUM_WARNING}", UserWarning, stacklevel=stacklevel + 1)


def one_hot_pairs_message(
    probs: Tensor, target: Tensor, metric: bool = False, read_by: str = "spiegelhalter"
) -> str | None:
    """Why a one-hot ``target`` beside rows of ``probs`` (one shape ``[..., C]``) that sum
    to 1 is read wrongly, or None: such input is taken as independent binary pairs
    (multi-label), which the pooled one-vs-rest error does not mind, but Spiegelhalter's
    variance does, an item's C labels summing to 1 (with C = 2 an item's two pairs add one
    score twice, so z is √2 times too large: at α = 0.05 it rejected 0.16 of calibrated
    data sets), and so do the intervals, which resample class ids' pairs item by item
    (:func:`resamples_items`) but these pair by pair: one model's (``read_by="interval"``;
    a metric's, ``"metric"``, has both) is too narrow with few classes, and a paired
    comparison (``"comparison"``) called two equally calibrated models different at
    α = 0.05 in 0.09–0.14 of data sets against 0.03–0.07 (docs/coverage.md).
    Genuine multi-label targets (a row of no 1 or of several) and scores whose rows do
    not sum to 1 get None. The advice names the metric's ``num_classes`` for a metric.
    One host synchronisation for a target of ``probs``' shape ``[..., C]``, two where it
    looks one-hot, none otherwise.

    Example:
        >>> import torch
        >>> probs = torch.tensor([[0.3, 0.7], [0.6, 0.4]])
        >>> print(one_hot_pairs_message(probs, torch.tensor([[0, 1], [1, 0]])))
        ... # doctest: +ELLIPSIS
        target looks one-hot beside rows of probabilities that sum to 1, and is read as ...
        an item's labels sum to 1 ...: for one class per item pass target.argmax(-1)
        >>> one_hot_pairs_message(probs, torch.tensor([[1, 1], [0, 0]])) is None  # multi-label
        True
    """
    advice = one_hot_advice(probs, target)
    if not advice or rows_off_one(probs) is not None:
        return None
    advice += f" with num_classes={probs.shape[-1]}" if metric else ""
    return (
        "target looks one-hot beside rows of probabilities that sum to 1, and is read as "
        f"independent binary pairs (multi-label): {_ONE_HOT_COST[read_by]}, though an "
        f"item's labels sum to 1{_ONE_HOT_EFFECT[read_by]}: for one class per item pass {advice}"
    )


# What reading one-hot rows as independent pairs costs each reader, and how.
_ONE_HOT_COST = {
    "spiegelhalter": "Spiegelhalter's test then takes their labels as independent",
    "comparison": "the paired bootstrap then resamples them pair by pair, not item by item",
    "interval": "the pair bootstrap then resamples them pair by pair, not item by item",
    "metric": "Spiegelhalter's test and the interval then take their labels as independent",
}
_ONE_HOT_EFFECT = {
    "spiegelhalter": " (with two classes its z is √2 times too large)",
    "comparison": " (the interval is too narrow: equally calibrated models are called different "
    "too often)",
    "interval": " (with few classes the interval is too narrow: with two, a pair and its "
    "mirror drawn apart, 95% covered the true error 0.85-0.86 of the time, where class ids "
    "draw them together)",
    "metric": " (with two classes z is √2 times too large, and with few the interval too narrow)",
}
#: Up to this many classes, one model's interval over one-vs-rest pairs drawn apart (three
#: classes or more; a stream of two past its buffer) is warned of as too narrow:
#: benchmarks/ovr_item_coverage.py, docs/coverage.md.
FEW_CLASSES = 5
#: What drawing an item's pairs apart costs, as measured there: two classes, and few.
APART_COVERAGE = {
    2: "95% covered the true error 0.85-0.86 of the time at 2 classes, docs/coverage.md",
    "few": "95% covered the true error 0.87-0.97 of the time at 3 classes and 0.895-0.925 "
    "at 5, docs/coverage.md",
}
#: And what the group bootstrap over items covered there, at 3 and 5 classes.
GROUPS_COVERAGE = "0.96-1.00"


def _check_multiclass(
    probs: Tensor, target: Tensor, check_rows: bool = True
) -> tuple[Tensor, Tensor, int]:
    """Validate multiclass input and return it in supported dtypes with the number of
    classes C; with ``check_rows``, warn when rows do not sum to 1 (:func:`row_sum_message`).
    Widened first (:func:`supported_dtype`): torch has no min/max for uint32 class ids, nor
    for float8 probabilities (the top label's confidence)."""
    n_classes = probs.shape[-1]
    if n_classes < 2:
        raise ValueError(
            f"multiclass probs need at least 2 classes, got shape {tuple(probs.shape)}"
        )
    if target.numel() == 0:
        raise ValueError("empty input: at least one item is needed")
    check_class_id_dtype(target)
    if probs.device != target.device:
        raise ValueError(f"probs on {probs.device} but target on {target.device}")
    check_probs(probs)
    probs, target = supported_dtype(probs, "probs"), supported_dtype(target, "target")
    if check_rows:
        warn_row_sums(probs, stacklevel=4)
    low, high = torch.aminmax(target.reshape(-1))
    if low < 0 or high >= n_classes:
        bad = (low if low < 0 else high).item()
        raise ValueError(f"target class ids must lie in [0, {n_classes - 1}], found {bad}")
    return probs, target, n_classes


def resamples_items(probs: Tensor, target: Tensor, mode: str) -> bool:
    """Whether the pair bootstrap draws an item's one-vs-rest pairs together: ``mode``
    one-vs-rest on probs ``[..., 2]`` beside class ids, whose item gives a pair (q, y) and
    its mirror (1 − q, 1 − y), one observation. Drawn apart, the 95% interval had
    covered the true error 0.85–0.86 of the time, drawn together 0.91–0.96
    (``benchmarks/ovr_item_coverage.py``, docs/coverage.md). Items of more classes are
    drawn pair by pair: the cells of identical items, about as many as the bins for two
    classes, are as many as the items from three classes on, and the draws cost cells ×
    draws (:func:`apart_message` warns where that leaves the interval too narrow).

    Example:
        >>> resamples_items(torch.rand(5, 2), torch.zeros(5, dtype=torch.long), "one_vs_rest")
        True
        >>> resamples_items(torch.rand(5, 3), torch.zeros(5, dtype=torch.long), "one_vs_rest")
        False
    """
    return mode == "one_vs_rest" and is_multiclass(probs, target) and probs.shape[-1] == 2


def apart_message(n_classes: int) -> str | None:
    """Why one model's interval over the pooled one-vs-rest pairs of ``n_classes`` classes,
    drawn pair by pair, is too narrow (from three classes to ``FEW_CLASSES``), or None.

    Example:
        >>> print(apart_message(3))  # doctest: +ELLIPSIS
        3 classes read one-vs-rest: the pair bootstrap draws an item's 3 pairs apart, ...
        >>> apart_message(2), apart_message(10)
        (None, None)
    """
    if not 3 <= n_classes <= FEW_CLASSES:
        return None
    return (
        f"{n_classes} classes read one-vs-rest: the pair bootstrap draws an item's "
        f"{n_classes} pairs apart, and its interval is too narrow with few classes "
        f"({APART_COVERAGE['few']}); groups=torch.arange(N), one id per item, draws whole "
        f"items with the group bootstrap ({GROUPS_COVERAGE}; its cost grows with items x "
        "draws)"
    )


def pair_sets(
    probs: Tensor,
    target: Tensor,
    mode: Mode = "one_vs_rest",
    groups: Tensor | None = None,
    *,
    check_rows: bool = True,
) -> list[PairSet]:
    """The binary pair set(s) that ``mode`` makes of (multiclass) input.

    Args:
        probs: binary probabilities (``target``'s shape) or multiclass ``[..., C]``.
        target: binary labels, or integer class ids ``[...]`` for multiclass probs.
        mode: ``"one_vs_rest"``, ``"top_label"`` or ``"classwise"`` (see the module).
        groups: optional group id per item (``target``'s shape); it follows every pair
            made from the item.
        check_rows: warn when rows of class probabilities do not sum to 1 (callers that
            checked them at ``update`` pass False).

    Returns:
        One :class:`PairSet` (one-vs-rest, top-label, binary input) or C (classwise),
        each flat. Binary input is returned as given (validated later, with the pairs).

    Example:
        >>> import torch
        >>> probs = torch.tensor([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]])
        >>> target = torch.tensor([0, 1])
        >>> q, y, _ = pair_sets(probs, target, "top_label")[0]
        >>> q, y
        (tensor([0.7000, 0.4000]), tensor([1, 0]))
        >>> pair_sets(probs, target)[0].target
        tensor([1, 0, 0, 0, 1, 0])
        >>> [s.probs.tolist() for s in pair_sets(probs, target, "classwise")][1]
        [0.20000000298023224, 0.30000001192092896]
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    check_tensors(probs=probs, target=target)  # before shapes: an array has one too
    _check_group_shape(groups, target)
    if not is_multiclass(probs, target):
        if mode != "one_vs_rest":
            tensors = isinstance(probs, Tensor) and isinstance(target, Tensor)
            hint = class_id_hint(probs, target) if tensors else ""
            raise ValueError(
                f"mode={mode!r} needs multiclass probs [..., C] with integer targets [...], "
                f"got shapes {tuple(getattr(probs, 'shape', ()))} and "
                f"{tuple(getattr(target, 'shape', ()))}"
                + (hint or " (for binary scores p pass torch.stack([1 - p, p], -1))")
            )
        return [PairSet(probs, target, groups)]
    probs, target, n_classes = _check_multiclass(probs, target, check_rows)
    if groups is not None and groups.numel() != target.numel():
        raise ValueError(
            f"groups must give one id per item: got {groups.numel()} ids for "
            f"{target.numel()} items (target shape {tuple(target.shape)})"
        )
    probs, target = probs.reshape(-1, n_classes), target.reshape(-1)
    flat_groups = None if groups is None else groups.reshape(-1)
    if mode == "top_label":
        confidence, predicted = probs.max(dim=-1)
        return [PairSet(confidence, (predicted == target).long(), flat_groups)]
    onehot = torch.nn.functional.one_hot(target.long(), n_classes)
    if mode == "one_vs_rest":
        repeated = None if groups is None else flat_groups.repeat_interleave(n_classes)
        return [PairSet(probs.reshape(-1), onehot.reshape(-1), repeated)]
    # One contiguous row per class, so that each class's pairs are read in one sweep.
    columns, labels = probs.T.contiguous(), onehot.T.contiguous()
    return [PairSet(columns[c], labels[c], flat_groups) for c in range(n_classes)]


def _check_group_shape(groups: Tensor | None, target: Tensor) -> None:
    """Group ids come per item: of the target's shape, or flat. Another layout with as
    many elements (ids [T, B] for targets [B, T]) would group the wrong items together."""
    if groups is not None:
        check_id_tensor(groups)
    if groups is None or groups.ndim <= 1:
        return
    shape = tuple(getattr(target, "shape", ()))
    if tuple(groups.shape) != shape:
        raise ValueError(
            f"groups must have the target's shape {shape} (one id per item), or be flat, "
            f"got {tuple(groups.shape)}"
        )


def average_results(results: list) -> CalibrationResult:
    """Average per-class results (error, mean, std, lower, upper, bins) into one.

    The error and the centre are the means over classes. The spread is the mean of the
    per-class spreads and the ends are the means of the per-class ends: by Minkowski's
    inequality the standard deviation of an average of C errors is at most the average
    of their standard deviations, whatever the correlation between classes (which share
    items), so the averaged interval is conservative rather than too narrow. The bins
    are every class's bins together, sorted by mean prediction, each carrying its
    class's effective sample size (so a diagram's error bars and
    :func:`~calib_metrics.functional.intervals.effective_samples` read the per-class ones),
    and the number of classes they pool as ``bins.classes``: one reliability diagram of
    them would mix the classes, and :func:`~calib_metrics.plot.reliability_diagram`
    refuses them.

    Example:
        >>> import torch
        >>> t, b = torch.tensor, Bins(torch.tensor([0.5]), torch.tensor([0.5]), torch.tensor([2.0]))
        >>> out = average_results([(t(0.1), t(0.1), t(0.02), t(0.06), t(0.14), b),
        ...                        (t(0.3), t(0.3), t(0.04), t(0.22), t(0.38), b)])
        >>> [round(v.item(), 3) for v in out[:5]], out[5].count.tolist(), out[5].classes
        ([0.2, 0.2, 0.03, 0.14, 0.26], [2.0, 2.0], 2)
    """
    fields = [torch.stack([r[i] for r in results]).mean() for i in range(5)]
    pred = torch.cat([r[5].pred_mean for r in results])
    order = torch.argsort(pred, stable=True)
    freq = torch.cat([r[5].freq for r in results]).index_select(0, order)
    count = torch.cat([r[5].count for r in results]).index_select(0, order)
    samples = torch.cat([effective_samples(r[5]) for r in results]).index_select(0, order)
    bins = with_samples(Bins(pred.index_select(0, order), freq, count), samples)
    bins.classes = len(results)
    return CalibrationResult(*fields, bins)


def most_frequent(counts: list[float], limit: int) -> list[int]:
    """The ids of the ``limit`` largest ``counts`` (ties: the lower id), in id order; all
    of them when there are at most ``limit``. The classes a figure has room for.

    Example:
        >>> most_frequent([1, 2, 1, 3], 2), most_frequent([5, 1], 3)
        ([1, 3], [0, 1])
    """
    return sorted(sorted(range(len(counts)), key=lambda c: (-counts[c], c))[:limit])
