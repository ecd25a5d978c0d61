"""Checks of the metrics' constructor arguments and of one batch of probabilities and
targets, validated and shaped as the metrics keep it: ``CalibrationError`` and
``CalibrationComparison`` share them.

It imports torch and :mod:`calib_metrics.functional` alone, so that a module that only
checks an argument the metrics share (the recalibration callback's ``ignore_index``)
does not load the metrics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import torch
from torch import Tensor

from calib_metrics.functional import sketch
from calib_metrics.functional.binning import (
    _check_pairs,
    check_binary_target,
    check_ids,
    check_probs,
    class_id_hint,
    column_target_hint,
    supported_dtype,
)
from calib_metrics.functional.calibration import MAX_BIN_SIZE, MAX_UNIFORM_BINS
from calib_metrics.functional.errors import check_id_tensor, check_not_meta, python_int_hint
from calib_metrics.functional.intervals import IntervalKind
from calib_metrics.functional.multiclass import MODES, check_class_id_dtype

# Beyond these, bin arithmetic overflows int64 or the bins do not fit in memory.
_MAX_BIN_SIZE = MAX_BIN_SIZE
_MAX_N_BINS = MAX_UNIFORM_BINS


def _check_sizes(bin_size: int | str, n_bins: int) -> None:
    """Upper limits the functional checks leave to the caller (they only ask for >= 1)."""
    if isinstance(bin_size, int) and bin_size > _MAX_BIN_SIZE:
        raise ValueError(f"bin_size must be at most 2**62, got {bin_size!r}")
    if isinstance(n_bins, int) and n_bins > _MAX_N_BINS:
        raise ValueError(f"n_bins must be at most 2**20 = {_MAX_N_BINS}, got {n_bins!r}")


def _check_seed(seed: Any) -> None:
    """A seed must be what ``torch.Generator.manual_seed`` takes: None or an int in range."""
    if seed is None:
        return
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(
            f"seed must be an integer or None, got {type(seed).__name__} {seed!r}"
            f"{python_int_hint('seed', seed)}"
        )
    try:
        torch.Generator().manual_seed(seed)
    except (RuntimeError, ValueError, OverflowError) as err:
        raise ValueError(f"seed {seed} is out of range for torch.Generator: {err}") from None


def check_num_classes(value: Any) -> None:
    """``num_classes`` is None (binary) or an integer (not a bool) of at least 2.

    Example:
        >>> check_num_classes(1)
        Traceback (most recent call last):
        ...
        ValueError: num_classes must be None or an integer >= 2, got 1
    """
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 2):
        raise ValueError(
            f"num_classes must be None or an integer >= 2, got {value!r}"
            f"{python_int_hint('num_classes', value, 2)}"
        )


def check_ignore_index(value: Any) -> None:
    """``ignore_index`` is an integer (not a bool) or None.

    Example:
        >>> check_ignore_index("a")
        Traceback (most recent call last):
        ...
        ValueError: ignore_index must be an integer or None, got 'a'
    """
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ValueError(
            f"ignore_index must be an integer or None, got {value!r}"
            f"{python_int_hint('ignore_index', value)}"
        )


# Set while a metric is built from another's options (forward's batch metric, a monitor's
# metric for another loader): their warnings were said when the options were given.
_BUILT_AGAIN: ContextVar[bool] = ContextVar("_BUILT_AGAIN", default=False)


@contextlib.contextmanager
def built_again() -> Iterator[None]:
    """Build a metric from options already checked, without saying their warnings again
    (the ignore_index one had come twice, the second time at the line of ``forward`` or
    inside Lightning)."""
    token = _BUILT_AGAIN.set(True)
    try:
        yield
    finally:
        _BUILT_AGAIN.reset(token)


def ignore_index_label_warning(value: int | None, num_classes: int | None) -> str | None:
    """``ignore_index`` of a label the pairs hold drops a class of them by its label:
    refused for binary pairs (0 or 1 drops every negative or positive; it had been taken
    without a word); for a class id, the warning to give (a background or padding
    class's items dropped, its probabilities still scored against labels that are never
    it), None inside :func:`built_again` or for any other value.

    Example:
        >>> ignore_index_label_warning(1, None)
        Traceback (most recent call last):
        ...
        ValueError: ignore_index=1 would drop every pair labelled 1 (the positives): give ...
        >>> ignore_index_label_warning(-100, 4) is None
        True
    """
    if value is None:
        return None
    if num_classes is None and value in (0, 1):
        kind = "negatives" if value == 0 else "positives"
        raise ValueError(
            f"ignore_index={value} would drop every pair labelled {value} (the {kind}): "
            "give padding a label of its own, such as -100"
        )
    if num_classes is None or not 0 <= value < num_classes or _BUILT_AGAIN.get():
        return None
    return (
        f"ignore_index={value} is one of the {num_classes} class ids: the items labelled "
        f"{value} are dropped, and class {value}'s probabilities are still scored against "
        "labels that are never it (for padding, use a label of its own, such as -100)"
    )


def resolution_warning(resolution: Any, streaming: bool) -> str | None:
    """``resolution`` checked in either mode (an even integer of at least 4: the exact
    mode had taken ``"x"`` or 3 without a word), and, for another value than the default
    with ``streaming=False``, the warning to give: the exact mode keeps every pair and no
    histogram, so a forgotten ``streaming=True`` leaves memory growing with the data. Not
    refused: options shared by both modes (``streaming=flag, resolution=R``) are common.
    None inside :func:`built_again` (forward's exact-mode batch metric of a streaming one).

    Example:
        >>> resolution_warning(1024, streaming=True) is None
        True
        >>> resolution_warning(1024, streaming=False).split(" (")[0]
        'resolution=1024 sets the streaming histogram, which streaming=False does not keep'
    """
    sketch.num_cells(resolution)
    if streaming or resolution == sketch.DEFAULT_RESOLUTION or _BUILT_AGAIN.get():
        return None
    return (
        f"resolution={resolution} sets the streaming histogram, which streaming=False does "
        "not keep (the exact mode keeps every pair, in memory that grows with them): pass "
        "streaming=True to stream, or leave resolution out"
    )


def _check_mode(mode: Any, num_classes: int | None, average: str | None) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "one_vs_rest":
        return
    if num_classes is None:
        raise ValueError(f"mode={mode!r} needs multiclass input: set num_classes")
    if average != "micro":
        raise ValueError(
            f"mode={mode!r} makes its own result (top-label: one set of pairs; classwise: the "
            f"mean of the per-class errors), so average must stay 'micro', got {average!r}; "
            "for one result per class use mode='one_vs_rest' with average='none'"
        )


def _prepare_batch(
    probs: Tensor,
    target: Tensor,
    num_classes: int | None,
    ignore_index: int | None,
    *,
    validate: bool = True,
    name: str = "probs",
) -> tuple[Tensor, Tensor, Tensor | None]:
    """Validate one batch; return probs [n] or [n, C], target [n] and the rows to keep;
    errors call the probabilities ``name``.

    Rows whose target is ``ignore_index`` are not removed here (boolean indexing
    would wait for the device): the keep mask goes along, and only the optional
    validation looks at the kept rows alone. The caller has checked both are tensors.
    """
    if num_classes is None:
        if probs.shape != target.shape:
            multiclass = probs.ndim == target.ndim + 1 and probs.shape[:-1] == target.shape
            hint = column_target_hint(probs, target)
            if multiclass:
                hint = _class_column_hint(probs.shape[-1])
            raise ValueError(
                f"{name} and target must have the same shape, got {tuple(probs.shape)} "
                f"and {tuple(target.shape)}{hint.replace('probs', name)}"
            )
        probs, target = _supported(probs, target, name)
        probs, target = probs.reshape(-1), target.reshape(-1)
        keep = None if ignore_index is None else target != ignore_index
        if validate and probs.numel():
            # Padding masked, not indexed out.
            _check_pairs(probs, target, name, keep, lambda bad: padding_hint(bad, ignore_index))
        return probs, target, keep
    c = num_classes
    if probs.ndim < 1 or probs.shape[-1] != c or probs.shape[:-1] != target.shape:
        raise ValueError(
            f"multiclass input needs {name} [..., {c}] and target [...], got {name} "
            f"{tuple(probs.shape)} and target {tuple(target.shape)}" + class_id_hint(probs, target)
        )
    check_class_id_dtype(target)
    probs, target = _supported(probs, target, name)
    probs, target = probs.reshape(-1, c), target.reshape(-1)
    keep = None if ignore_index is None else target != ignore_index
    if validate and target.numel():
        check_class_ids(target, c, keep, ignore_index)
        check_probs(probs, name, None if keep is None else keep.unsqueeze(1))
    return probs, target, keep


def _supported(probs: Tensor, target: Tensor, name: str) -> tuple[Tensor, Tensor]:
    """A batch in dtypes the states keep (:func:`supported_dtype`), whether or not it is
    validated: a state of another dtype (uint16 targets) failed at compute(), and under DDP
    its rank's gather raised while the other ranks waited in the next one. A batch on the
    meta device is refused too, checked or not (no host read): with ``validate_args=False``
    it had been kept, and every later compute failed in torch."""
    check_not_meta(probs, name)
    check_not_meta(target, "target")
    return supported_dtype(probs, name), supported_dtype(target, "target")


def check_class_ids(
    target: Tensor,
    num_classes: int | None,
    keep: Tensor | None = None,
    ignore_index: int | None = None,
) -> None:
    """Every target (every kept one, with the mask ``keep``) names a class: 0 or 1 for
    binary data (``num_classes=None``), else an id in ``[0, num_classes)``; a value that
    looks like padding gets a hint at ``ignore_index`` (:func:`padding_hint`). One host
    synchronisation.

    Example:
        >>> import torch
        >>> check_class_ids(torch.tensor([0, 2, -100]), 3)
        Traceback (most recent call last):
        ...
        ValueError: target holds class id -100, outside [0, 3) (padding? set ignore_index=-100)
        >>> check_class_ids(torch.tensor([0, 1, -100]), None, ignore_index=-100)
        Traceback (most recent call last):
        ...
        ValueError: target must be binary (0 or 1), found the value -100
    """
    if num_classes is None:
        check_binary_target(target, keep, lambda bad: padding_hint(bad, ignore_index))
        return
    # Padding masked, not indexed out (that would wait for the device too).
    outside = (target < 0) | (target >= num_classes)
    if keep is not None:
        outside &= keep
    if bool(outside.any()):
        bad = target[outside][0].item()
        hint = padding_hint(bad, ignore_index)
        raise ValueError(f"target holds class id {bad}, outside [0, {num_classes}){hint}")


def padding_hint(value: Any, ignore_index: int | None) -> str:
    """The end of the message for a target ``value`` that is no class: a hint at
    ``ignore_index`` when it looks like padding (a negative whole number, as -100 is) and
    none is set, else nothing.

    Example:
        >>> padding_hint(-100, None)
        ' (padding? set ignore_index=-100)'
        >>> padding_hint(-100, -1), padding_hint(7, None)
        ('', '')
    """
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ignore_index is not None or not number or not value < 0 or value % 1:
        return ""
    return f" (padding? set ignore_index={int(value)})"


def _class_column_hint(columns: int) -> str:
    """The hint for binary ``target`` beside ``probs`` with one more dimension."""
    if columns == 1:  # a binary head's [N, 1] output, not one class
        return " (binary probs of shape [..., 1]: pass probs.squeeze(-1))"
    if columns == 2:
        return " (binary probs as two columns: pass probs[..., 1]; or set num_classes=2)"
    return f" (multiclass probs: set num_classes={columns})"


def _check_group_ids(ids: Tensor | None, target: Tensor, name: str) -> Tensor:
    """One integer id per item of ``target`` (its shape), detached: ``groups`` or ``labels``."""
    check_id_tensor(ids, name)  # a dense tensor, before its shape is read
    if ids.shape != target.shape:
        raise ValueError(
            f"{name} must have the target's shape {tuple(target.shape)} (one id per "
            f"item), got {tuple(ids.shape)}"
        )
    return check_ids(ids, target, "target", name).detach()


def _kept_rows(probs: Tensor, target: Tensor, ignore_index: int | None) -> Tensor:
    """The rows ``[n, C]`` of a checked multiclass batch, padding rows replaced by rows
    that sum to 1 exactly (masked rather than indexed out, which would wait for the
    device), for the row-sum check."""
    rows = probs.detach().reshape(-1, probs.shape[-1])
    if ignore_index is None:
        return rows
    first = torch.arange(rows.shape[-1], device=rows.device) == 0
    padding = (target.reshape(-1) == ignore_index).unsqueeze(1)
    return torch.where(padding, first.to(rows.dtype), rows)


def _own_copy(tensor: Tensor) -> Tensor:
    """A batch's tensor as a metric keeps it: its own copy, so that a caller who refills
    the same buffer (a pinned loader's, a preallocated output) cannot change pairs that
    were already counted."""
    return tensor.clone()


def check_result_settings(
    kind: IntervalKind, confidence: float, debias: bool, *, intervals: str, draw_with: str
) -> None:
    """``kind``'s level and debias are the metric's own: a result of another estimator's
    is refused by the setting that differs (``intervals``: how the message names the
    result's, ``draw_with``: what draws it instead), as its figure would name the
    metric's settings beside them."""
    own = {"confidence": float(confidence), "debias": debias}
    for name, value in own.items():
        if getattr(kind, name) != value:
            raise ValueError(
                f"val's {intervals} computed with {name}={getattr(kind, name)!r}, this "
                f"metric's {name} is {value!r}: plot it with the metric that computed it, "
                f"or draw {draw_with}"
            )
