"""Adaptive (equal-mass) and uniform (equal-width) binning of (q, y) pairs.

Both return :class:`Bins`: per bin the mean prediction ``pred_mean`` (q̂ᵢ), the
label frequency ``freq`` (p̂ᵢ) and the number of pairs ``count`` (|Bᵢ|), in float64
whatever the input dtype, sorted by ``pred_mean``.

Adaptive binning is the paper's Algorithm 1, steps 1–4. Pairs are ordered by q; bins
are consecutive runs of ``bin_size`` ranks and a short last run joins the one before.
A tie group (pairs of equal q) that a bin boundary splits gives each bin its share of
the group's pairs at the group's mean label: the expectation over every way of
breaking the tie, so the bins never depend on the input order and a group's labels
are not sorted apart (``Bins.freq`` may then be a fractional count over the size).

On the CPU the implementation never sorts the N pairs (radix select). Every bin's sums are
differences of F(r), the sums of q and y over the first r pairs, at the boundary
ranks r. A histogram over cells of an order-preserving integer key of q gives F at
every cell edge by a cumulative sum. The first level's cells follow the data: a
strided sample of the keys says how many pairs fall under each prefix of the key's
leading bits, and each prefix gets cells (the key's next bits) in proportion, about
128 pairs a cell whatever the distribution. Only the cells that a boundary cuts
through are set aside: a cell of one value (all key bits used, q = 0, q = 1, or a
float32 cell whose Σq is its count times its largest q) is a tie group, shared out as
above; the others' pairs, cell after cell in q order, are sorted when few, or refined
by histograms over fixed key bits, level after level, when many (heavy ties). Passes
read the pairs in chunks; the first keeps every pair's cell (2 or 4 bytes) so that the
second, which sets the cut cells' pairs aside, does not compute them again. On the CPU
the extra memory measured at most 1.22× the input's bytes from 10⁷ pairs on
(docs/streaming.md), and :func:`adaptive_bin_sums` checks the estimate against the free
memory up front.

On a GPU the pairs are sorted whenever the sort's memory (:data:`_SORT_BYTES` a pair, 8×
a float32 input's bytes) fits in half the free memory (:func:`sorts_all`): a GPU's radix
sort beats the selection's chunked passes, each a dozen or more small kernels
(docs/bench_gpu.md: 22 ms against 157 ms for 10⁸ pairs on an H200). F is the same either
way: every tie group at its mean label.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from contextvars import ContextVar
from typing import Literal, NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.errors import (
    NoPairsError,
    as_int64,
    check_dense,
    check_id_tensor,
    check_int,
    check_not_meta,
    check_tensors,
    non_dense_layout,
)
from calib_metrics.functional.free_memory import host_available_bytes
from calib_metrics.functional.ties import TieCuts, effective_counts, no_cuts, run_cuts

# Level-0 histogram cells: about N/16 (at least 2**10, at most 2**22), so the cells
# that a bin boundary cuts through hold few pairs while small inputs do not pay for a
# big histogram. Half-precision keys (15 bits) get one cell per value at once.
_MIN_CELL_BITS = 10
_MAX_CELL_BITS = 22
# A refining level's histogram has at most max(2**16, pairs/16) cells (24 bytes each and
# the smallest and largest q, i.e. at most 2.5 bytes per pair) and splits each cut cell
# by at least 2**4.
_MIN_REFINE_BITS = 4
# Pairs are streamed through the passes in chunks to bound the extra memory: at most
# 2**18 pairs (their temporaries, ~60 bytes a pair, stay ~16 MB), and about a sixteenth
# of the input (at least 2**15), so that at 10⁶ pairs the temporaries stay under the
# input's bytes.
_CHUNK = 1 << 18
_MIN_CHUNK = 1 << 15
# Below this many pairs the first level's cells are computed again by the second pass
# rather than kept (2 or 4 bytes a pair, 0.4-0.8x a float32 input's bytes): at 10⁶
# pairs the kept cells took the extra peak over 2x the input for a 5 % gain in time.
_MEMO_MIN_PAIRS = 1 << 22
# At most this many pending pairs are sorted rather than refined by another level.
_SORT_BELOW = 1 << 17
# On a GPU, adds into a few bins queue on their atomics (docs/bench_gpu.md): each bin is
# spread over up to this many slots, in at most _SPREAD_SLOTS slots in all (more bins
# queue less, and their slots would cost memory).
_SPREAD = 1024
_SPREAD_SLOTS = 1 << 16


class Bins(NamedTuple):
    """Per-bin statistics, float64, sorted by ``pred_mean``.

    Attributes:
        pred_mean: mean prediction q̂ᵢ of each bin.
        freq: label frequency p̂ᵢ (fraction of y = 1) of each bin; a tie group split
            by a boundary counts at its mean label, so it may be fractional.
        count: number of pairs |Bᵢ| in each bin.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> adaptive_binning(t([0.1, 0.2, 0.7, 0.9]), t([0, 0, 1, 1]), 2).pred_mean
        tensor([0.1500, 0.8000], dtype=torch.float64)

        Bins made by hand (another library's histogram) are taken, checked and in
        float64 (:func:`check_bins`), by :func:`~calib_metrics.functional.error_from_bins`
        and :func:`~calib_metrics.functional.ci_from_bins`:

        >>> pred_mean, freq, count = check_bins(Bins(t([0.2, 0.8]), t([0.1, 0.8]), t([5, 5])))
        >>> count
        tensor([5., 5.], dtype=torch.float64)
    """

    pred_mean: Tensor
    freq: Tensor
    count: Tensor


class TiedBins(Bins):
    """:class:`Bins` that also know the tie groups their boundaries cut (``ties``, a
    :class:`~calib_metrics.functional.ties.TieCuts`): what the library's adaptive
    binning returns, exact or streaming. Still a 3-tuple ``(pred_mean, freq, count)``;
    the debiased square and the resampled draws read ``ties`` (:func:`bin_ties`).

    Bins made from a streaming sketch for the debiased error may also carry ``unplaced``
    (:func:`bin_unplaced`): per bin, the variance of its label sum that the sketch leaves
    open, where a boundary cuts a cell of several values whose labels it cannot place
    (:func:`~calib_metrics.functional.sketch.to_bins`). Uniform bins carry ``edges``: each
    bin's lower and upper edge (rows), on which a reliability diagram counts its pairs."""

    ties: TieCuts
    unplaced: Tensor | None = None
    edges: Tensor | None = None

    def __repr__(self) -> str:
        return repr(Bins(*self))


def with_ties(bins: Bins, cuts: TieCuts, unplaced: Tensor | None = None) -> Bins:
    """``bins`` carrying the tie groups that their boundaries cut (:class:`TiedBins`)
    and, from a streaming sketch, the variance of each bin's label sum left ``unplaced``.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> from calib_metrics.functional.ties import no_cuts
        >>> bins = with_ties(Bins(t([0.2]), t([0.0]), t([3.0])), no_cuts(t([3.0])))
        >>> pred_mean, freq, count = bins
        >>> bin_ties(bins).size.tolist(), bin_unplaced(bins)
        ([0.0, 0.0], None)
    """
    tied = TiedBins(*bins)
    tied.ties = cuts
    tied.unplaced = unplaced
    return tied


def bin_ties(bins: Bins) -> TieCuts:
    """The tie groups that the boundaries of 1-D ``bins`` cut: those the binning recorded
    (:class:`TiedBins`), or for bare bins the runs of adjacent bins with equal gap and
    frequency (:func:`~calib_metrics.functional.ties.run_cuts`).

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bin_ties(Bins(t([0.4, 0.4]), t([0.5, 0.5]), t([2.0, 2.0]))).size.tolist()
        [0.0, 4.0, 0.0]
    """
    cuts = getattr(bins, "ties", None)
    if cuts is not None:
        return cuts
    return run_cuts(bins.pred_mean - bins.freq, bins.freq, bins.count)


def single_label_bins(bins: Bins) -> Tensor:
    """Per bin, whether it holds one pair whose label is its own: the debiased error has
    no label variance to subtract there, and a resampling none to draw. A bin of one pair
    inside a tie group that its boundaries cut counts at the group's mean label, whose
    variance it has (its effective size, :func:`~calib_metrics.functional.ties.effective_counts`,
    is the group's), and is not one.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> single_label_bins(Bins(t([0.1, 0.4, 0.4]), t([0.0, 0.5, 0.5]), t([1.0, 1, 1]))).tolist()
        [True, False, False]
    """
    return (bins.count == 1) & (effective_counts(bins.count, bin_ties(bins)) <= 1)


def bin_unplaced(bins: Bins) -> Tensor | None:
    """Per bin, the variance of its label sum that the data the bins were made from leave
    open (:class:`TiedBins`): a streaming sketch's bins for the debiased error carry it;
    None for every other bins, whose label sums are known.

    Example:
        >>> import torch
        >>> t = torch.tensor
        >>> bin_unplaced(Bins(t([0.4]), t([0.5]), t([2.0]))) is None
        True
    """
    return getattr(bins, "unplaced", None)


# The dtypes the estimators take as they are: torch's kernels (sort, index_select, cumsum)
# cover them, and the metrics keep their states in them, which DDP ranks gather
# (metric_state codes them by position to agree on one). supported_dtype converts the rest.
SUPPORTED_DTYPES = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
)
_WIDE_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)
# The float8 formats, whose every value is a float32's. Named, not "a 1-byte float":
# packed float4 (float4_e2m1fn_x2, two values a byte) is one too, and torch converts it
# to nothing. getattr: older torch builds lack some.
_FLOAT8_NAMES = (
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
)
_FLOAT8 = tuple(dtype for name in _FLOAT8_NAMES if (dtype := getattr(torch, name, None)))


def supported_dtype(tensor: Tensor, name: str) -> Tensor:
    """``tensor`` in one of :data:`SUPPORTED_DTYPES`: as it is, or converted where no value
    changes: unsigned 16-, 32- and 64-bit integers (token or sentence ids) to int64, float8
    formats to float32. A ValueError naming ``name`` and the dtype otherwise: a uint64 value
    above int64's maximum (one host synchronisation, for uint64 only), complex numbers,
    packed float4; or naming the layout: a sparse or nested tensor (:func:`check_dense`).
    Every public entry's tensors pass here before they are reshaped.

    Example:
        >>> supported_dtype(torch.tensor([0, 65535], dtype=torch.uint16), "groups")
        tensor([    0, 65535])
        >>> supported_dtype(torch.tensor([2**63], dtype=torch.uint64), "groups")
        Traceback (most recent call last):
        ...
        ValueError: groups holds 9223372036854775808 (dtype torch.uint64), above int64's ...
    """
    check_dense(tensor, name)
    dtype = tensor.dtype
    if dtype in SUPPORTED_DTYPES:
        return tensor
    if dtype in _WIDE_UNSIGNED:
        return as_int64(tensor, name)
    if dtype in _FLOAT8:
        return tensor.to(torch.float32)
    raise ValueError(
        f"{name} has dtype {dtype}: pass bool, integer or real floating-point values "
        "(float16, bfloat16, float32, float64 or a float8 format)"
    )


def check_probs(probs: Tensor, name: str = "probs", keep: Tensor | None = None) -> None:
    """Raise ValueError unless ``probs`` is a floating tensor of values in [0, 1]; the
    message calls it ``name`` (``"probs_b"``: which of two models). With ``keep`` (a
    mask broadcastable to ``probs``) only the kept entries are checked, without indexing.
    One host synchronisation (more on the way to an error).
    """
    if not probs.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {probs.dtype}")
    check_not_meta(probs, name)
    probs = supported_dtype(probs, name)  # a float8's extremes are taken in float32
    if probs.numel() == 0:
        return
    if keep is None:
        low, high = torch.aminmax(probs.reshape(-1))
    else:  # dropped entries (padding, maybe NaN) reach neither end
        low = torch.where(keep, probs, math.inf).amin()
        high = torch.where(keep, probs, -math.inf).amax()
    has_nan, below, above = torch.stack([low.isnan() | high.isnan(), low < 0, high > 1]).tolist()
    if has_nan:
        raise ValueError(f"{name} contains NaN")
    if below or above:
        # repr-exact: 1 + 6e-8 must not print as 1.
        offending = low.item() if below else high.item()
        raise ValueError(
            f"{name} must lie in [0, 1], got {offending!r} (values span "
            f"[{low.item():.4g}, {high.item():.4g}]); pass probabilities, not logits "
            "(apply sigmoid/softmax first)"
        )


def is_id_dtype(dtype: torch.dtype) -> bool:
    """Whether ``dtype`` holds integer ids (group ids, labels): an integer dtype, not bool."""
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def check_ids(
    groups: Tensor, reference: Tensor, name: str = "probs", what: str = "groups"
) -> Tensor:
    """Validate integer ids (group ids, or labels: named ``what`` in errors), one per
    element of ``reference`` (named ``name``), and return them flat, in a supported dtype
    (:func:`supported_dtype`: uint16 ids as int64)."""
    check_id_tensor(groups, what)
    if groups.numel() != reference.numel():
        raise ValueError(
            f"{what} must give one id per pair: got {groups.numel()} ids for "
            f"{reference.numel()} pairs (shape {tuple(groups.shape)})"
        )
    if not is_id_dtype(groups.dtype):
        raise ValueError(f"{what} must hold integer ids, got dtype {groups.dtype}")
    if groups.device != reference.device:
        raise ValueError(f"{what} on {groups.device} but {name} on {reference.device}")
    return supported_dtype(groups, what).reshape(-1)


def check_bins(bins: object) -> Bins:
    """``bins`` checked: three tensors ``(pred_mean, freq, count)`` of one shape with at
    least one bin, counts finite and ≥ 0 with a positive total (a bin of count 0 weighs
    nothing), mean predictions and frequencies in [0, 1]. Counts need not be whole: they
    weigh the bins as pair counts do. They come back as :class:`Bins` (a plain 3-tuple
    too) in float64 without autograd history (:func:`float64_bins`). One host
    synchronisation.

    Example:
        >>> check_bins((torch.tensor([0.2]), torch.tensor([1.5]), torch.tensor([4.0])))
        Traceback (most recent call last):
        ...
        ValueError: bins.freq must lie in [0, 1], got values in [1.5, 1.5]
    """
    if not (
        isinstance(bins, tuple) and len(bins) == 3 and all(isinstance(v, Tensor) for v in bins)
    ):
        raise ValueError(
            f"bins must be Bins(pred_mean, freq, count) of tensors, got {type(bins).__name__}"
        )
    bins = bins if isinstance(bins, Bins) else Bins(*bins)
    shapes = [tuple(v.shape) for v in bins]
    if len(set(shapes)) != 1 or not shapes[0]:
        raise ValueError(f"bins' pred_mean, freq and count must have one shape, got {shapes}")
    if bins.count.numel() == 0:
        raise NoPairsError("bins: no bin (at least one bin with a positive count is needed)")
    for name, v in zip(Bins._fields, bins):
        check_not_meta(v, f"bins.{name}")
        if v.is_complex():
            raise ValueError(f"bins.{name} must be real, got dtype {v.dtype}")
    # Checked in float64: comparisons are not implemented for every dtype (float8, uint32).
    bins = float64_bins(bins)
    count = bins.count
    good = [((v >= 0) & (v <= 1)).all() for v in bins[:2]]
    good += [((count >= 0) & count.isfinite()).all(), count.sum() > 0]
    mean_ok, freq_ok, count_ok, some = torch.stack(good).tolist()  # the one host sync
    for name, ok in (("pred_mean", mean_ok), ("freq", freq_ok)):
        if not ok:
            values = getattr(bins, name)
            if values.isnan().any():
                raise ValueError(f"bins.{name} contains NaN")
            raise ValueError(
                f"bins.{name} must lie in [0, 1], got values in "
                f"[{values.min().item():.4g}, {values.max().item():.4g}]"
            )
    if not count_ok:
        raise ValueError(f"bins.count must be finite and >= 0, got {bins.count.tolist()[:8]}")
    if not some:
        raise NoPairsError("bins.count sums to 0: the bins hold no pairs")
    return bins


def float64_bins(bins: Bins) -> Bins:
    """``bins`` as :class:`Bins` are documented: float64 tensors, detached (estimates are
    data, not losses; see :mod:`calib_metrics.functional`), with what they carry (tie
    groups, effective sample sizes) kept. Bins made by hand may hold integer counts,
    which the draws' float kernels refuse, or float16 ones, whose sums overflow at 65504.

    Example:
        >>> t = torch.tensor
        >>> float64_bins(Bins(t([0.2]), t([0.5]), t([3]))).count
        tensor([3.], dtype=torch.float64)
    """
    if all(v.dtype == torch.float64 and not v.requires_grad for v in bins):
        return bins
    converted = bins._replace(
        **{name: getattr(bins, name).detach().to(torch.float64) for name in Bins._fields}
    )
    if hasattr(bins, "__dict__"):  # TiedBins and bins with samples carry attributes
        vars(converted).update(vars(bins))
    return converted


def check_binary_target(
    target: Tensor, keep: Tensor | None = None, hint: Callable[[object], str] | None = None
) -> None:
    """Raise ValueError unless every target (every kept one, with the mask ``keep``) is
    0 or 1 (bool, integer or float); ``hint(value)`` ends the message (the metrics' hint at
    ``ignore_index``). One host synchronisation."""
    if target.dtype == torch.bool or target.numel() == 0:
        return
    if target.is_complex():
        raise ValueError(f"target must be binary (0/1), got dtype {target.dtype}")
    wrong = (target != 0) & (target != 1)  # NaN and fractions included
    if keep is not None:
        wrong &= keep
    if bool(wrong.any()):
        bad = target[wrong][0].item()
        told = "" if hint is None else hint(bad)
        raise ValueError(f"target must be binary (0 or 1), found the value {bad!r}{told}")


def column_target_hint(probs: Tensor, target: Tensor) -> str:
    """A hint for class ids given as a column ``[..., 1]`` (as many loaders yield them)
    beside multiclass ``probs [..., C]``; empty otherwise."""
    shape = tuple(probs.shape)
    if len(shape) >= 2 and shape[-1] >= 2 and tuple(target.shape) == (*shape[:-1], 1):
        return (
            f" (target looks like a column of class ids: pass target.squeeze(-1), of "
            f"shape {shape[:-1]})"
        )
    return ""


def one_hot_hint(probs: Tensor, target: Tensor) -> str:
    """A hint for a one-hot target (``probs``' shape ``[..., C]``, 0/1 with one 1 per
    row) where class ids ``[...]`` are needed; empty otherwise. One host synchronisation,
    for a message only.

    Example:
        >>> probs = torch.tensor([[0.3, 0.7], [0.6, 0.4]])
        >>> one_hot_hint(probs, torch.tensor([[0, 1], [1, 0]]))
        ' (target looks one-hot: pass target.argmax(-1))'
        >>> one_hot_hint(probs, torch.tensor([[False, True], [True, False]]))
        ' (target looks one-hot: pass target.long().argmax(-1))'
        >>> one_hot_hint(probs, torch.tensor([[1, 1], [1, 0]]))
        ''
    """
    advice = one_hot_advice(probs, target)
    return f" (target looks one-hot: pass {advice})" if advice else ""


def one_hot_advice(probs: Tensor, target: Tensor) -> str:
    """The class ids of a one-hot ``target`` (:func:`one_hot_hint`) as code to pass,
    ``"target.argmax(-1)"``; empty where ``target`` is not one-hot. One host
    synchronisation where ``target`` has ``probs``' shape ``[..., C]``, none otherwise."""
    shape = tuple(probs.shape)
    if len(shape) < 2 or shape[-1] < 2 or tuple(target.shape) != shape:
        return ""
    if target.is_complex() or target.is_meta or non_dense_layout(target) is not None:
        return ""
    # In float64: comparisons and sums are not implemented for every dtype (uint32, float8).
    rows = target.detach().reshape(-1, shape[-1]).to(torch.float64)
    binary = ((rows == 0) | (rows == 1)).all() & (rows.sum(-1) == 1).all()
    if rows.numel() == 0 or not bool(binary):
        return ""
    # torch has no argmax of bools, unsigned 16- to 64-bit integers or float8.
    direct = target.dtype in SUPPORTED_DTYPES and target.dtype != torch.bool
    return f"target{'' if direct else '.long()'}.argmax(-1)"


def class_id_hint(probs: Tensor, target: Tensor) -> str:
    """A hint for class ids given as a column ``[..., 1]`` (:func:`column_target_hint`) or
    one-hot (:func:`one_hot_hint`) beside multiclass ``probs [..., C]``; empty otherwise."""
    return column_target_hint(probs, target) or one_hot_hint(probs, target)


def _check_pairs(
    probs: Tensor,
    target: Tensor,
    name: str = "probs",
    keep: Tensor | None = None,
    hint: Callable[[object], str] | None = None,
) -> tuple[Tensor, Tensor]:
    """Validate (q, y) and return them flattened and detached; raise ValueError naming the
    problem (and calling the probabilities ``name``). With ``keep`` (a mask of their
    shape) only the kept pairs are checked; ``hint`` as :func:`check_binary_target`'s. Two
    host synchronisations."""
    check_tensors(probs=probs, target=target)
    if probs.shape != target.shape:
        multiclass = probs.ndim == target.ndim + 1 and probs.shape[-1] >= 2
        hint = (
            f" (multiclass probs [..., C] take class ids of shape {tuple(probs.shape[:-1])})"
            if multiclass
            else column_target_hint(probs, target)
        )
        raise ValueError(
            f"probs and target must have the same shape, got {tuple(probs.shape)} and "
            f"{tuple(target.shape)}{hint}"
        )
    if probs.numel() == 0:
        raise NoPairsError("empty input: at least one (probability, target) pair is needed")
    if probs.device != target.device:
        raise ValueError(f"probs on {probs.device} but target on {target.device}")
    check_probs(probs, name, keep)
    target = supported_dtype(target, "target")
    check_binary_target(target, keep, hint)
    # A model's probabilities may carry autograd history; the estimators treat them as
    # data (several kernels write in place, which autograd refuses).
    probs = supported_dtype(probs.detach(), name)
    return probs.reshape(-1), target.detach().reshape(-1)


def _key_width(dtype: torch.dtype) -> int:
    """Bit width of the order keys of ``dtype`` (see :func:`_order_key`)."""
    if dtype == torch.float64:
        return 63
    return 15 if dtype in (torch.float16, torch.bfloat16) else 31


def _order_key(probs: Tensor) -> tuple[Tensor, int]:
    """Integer keys that order exactly like ``probs`` in [0, 1], and their bit width.

    The bit pattern of a non-negative float orders like its value but is coarse near
    1, where NLP models put much of their mass. For q > 1/2 the key is therefore built
    from 1 − q, which is exact in floating point there (Sterbenz), mirrored above the
    key of 1/2: q ≤ 1/2 ↦ bits(q), q > 1/2 ↦ 2·bits(1/2) − bits(1 − q). Equal q give
    equal keys, so ties stay ties. Half-precision input keeps its own 15-bit keys.
    """
    if probs.dtype == torch.float64:
        as_int, half = torch.int64, 0x3FE0000000000000
    elif probs.dtype == torch.float16:
        as_int, half = torch.int16, 0x3800
    elif probs.dtype == torch.bfloat16:
        as_int, half = torch.int16, 0x3F00
    else:
        probs, as_int, half = probs.to(torch.float32), torch.int32, 0x3F000000
    width = _key_width(probs.dtype)
    # The distance to the nearer end, exact (+ 0.0 turns a -0.0, whose bit pattern
    # would sort last, into +0.0); mirrored above 1/2 without a branch: with u = -1,
    # (bits ^ u) + (u & (2·half + 1)) = 2·half − bits, and with u = 0 it is bits.
    # In place where it can: two temporaries of the input's size, not eight.
    nearer = 1.0 - probs
    nearer = torch.minimum(probs, nearer, out=nearer).add_(0.0).view(as_int)
    # u = -1 where q > 1/2: the sign of bits(1/2) − bits(q) (sign bit of -0.0 cleared),
    # integer arithmetic being several times faster than a bool mask on CPU.
    upper = (probs.view(as_int) & ((1 << width) - 1)).neg_().add_(half)
    upper >>= width
    key = nearer.bitwise_xor_(upper)
    return key.add_(upper.bitwise_and_(2 * half + 1)), width


def _chunks(q: Tensor) -> list[slice]:
    n = q.numel()
    size = min(_CHUNK, max(_MIN_CHUNK, n // 16))
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def bins_of_means(count: Tensor, sum_q: Tensor, sum_y: Tensor) -> Bins:
    """Bins of non-empty bins' sums: their means, clamped to [0, 1] because a bin's sums
    (differences of running sums, or a sketch's shares) can round a hair past it.

    Example:
        >>> t = torch.tensor
        >>> bins_of_means(t([2.0]), t([2.0000000000000004]), t([1.0]))
        Bins(pred_mean=tensor([1.]), freq=tensor([0.5000]), count=tensor([2.]))
    """
    return Bins((sum_q / count).clamp_(0, 1), (sum_y / count).clamp_(0, 1), count)


def _sums_to_bins(count: Tensor, sum_q: Tensor, sum_y: Tensor, edges: Tensor) -> Bins:
    """The non-empty bins of these sums, carrying their ``edges`` (a row per bin)."""
    # One host synchronisation (how many bins hold pairs): a boolean mask per tensor had
    # read it back once for each.
    kept = torch.nonzero(count > 0).squeeze(1)
    count, sum_q, sum_y, edges = (v.index_select(0, kept) for v in (count, sum_q, sum_y, edges))
    # A tie group never straddles an equal-width edge: no boundary cuts one.
    bins = bins_of_means(count.to(torch.float64), sum_q, sum_y)
    bins = with_ties(bins, no_cuts(bins.count))
    bins.edges = edges
    return bins


def _sort_pairs(key: Tensor, width: int, target: Tensor) -> Tensor:
    """The permutation that sorts pairs by key, then by y (zeros first)."""
    if width < 63:
        return torch.sort((key.to(torch.int64) << 1) | (target != 0).to(torch.int64))[1]
    by_label = torch.sort((target != 0).to(torch.uint8), stable=True)[1]
    return by_label.index_select(0, torch.sort(key.index_select(0, by_label), stable=True)[1])


def _bin_of_rank(rank: Tensor, bin_size: int, n_bins: int) -> Tensor:
    # Runs of bin_size in rank order; the short last run joins the bin before it.
    return torch.div(rank, bin_size, rounding_mode="floor").clamp_(max=n_bins - 1)


# A refinement plan: per level, (bits, slot_map), where slot_map sends the previous
# level's cells to the slots refined at this level (-1: not refined; None at level 0).
# A pair's cell at a level is slot·2^bits + the key's next ``bits`` bits.
_Plan = list[tuple[int, "Tensor | None"]]


def _cell_index(key: Tensor, width: int, plan: _Plan) -> Tensor:
    """Each pair's cell at the last level of ``plan`` (int64)."""
    consumed = plan[0][0]
    # Level 0 keeps q = 0 (key 0) in a cell of its own, so a mass of exact zeros is
    # never refined; q = 1 is alone in its cell already (see _order_key).
    cell = torch.where(key == 0, 0, (key >> (width - consumed)).long() + 1)
    for bits, slot_map in plan[1:]:
        consumed += bits
        low = ((key >> (width - consumed)) & ((1 << bits) - 1)).long()
        cell = (slot_map.index_select(0, cell) << bits).bitwise_or_(low)
    return cell


_CellOf = Callable[[Tensor], Tensor]


def _plan_cells(plan: _Plan) -> _CellOf:
    """The cell function of a refinement plan: q ↦ its cell at the plan's last level."""
    return lambda q: _cell_index(*_order_key(q), plan)


def _histogram(
    q: Tensor,
    y: Tensor,
    cell_of: _CellOf,
    size: int,
    top: Tensor | None = None,
    memo: Tensor | None = None,
    bottom: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Per cell (``cell_of``, 0 … size − 1): number of pairs, Σq and Σy (float64 sums);
    with ``top`` (size, q's dtype) also the largest q of every cell, in place, and with
    ``bottom`` the smallest; with ``memo`` (see :func:`_new_memo`) also every pair's
    cell, for the next pass."""
    counts = torch.zeros(2 * size, dtype=torch.int64, device=q.device)
    sum_q = torch.zeros(size, dtype=torch.float64, device=q.device)
    for part in _chunks(q):
        cell = cell_of(q[part])
        if memo is not None:
            memo[part] = cell - _memo_offset(memo)
        if top is not None:
            with warnings.catch_warnings():  # "index_reduce() is in beta"
                warnings.simplefilter("ignore", UserWarning)
                top.index_reduce_(0, cell, q[part], "amax")
                if bottom is not None:
                    bottom.index_reduce_(0, cell, q[part], "amin")
        # One histogram of (cell, y) counts the pairs and the ones of every cell.
        label = y[part] if y.dtype == torch.bool else y[part] != 0
        # index_add_ of ones adds in place (bincount would allocate 2·size counts a chunk).
        one = counts.new_ones(1).expand(cell.numel())
        counts.index_add_(0, torch.add(label, cell, alpha=2), one)
        # index_add_ is much faster than bincount with weights on CPU.
        sum_q.index_add_(0, cell, q[part].to(torch.float64))
    by_label = counts.view(size, 2)
    return by_label.sum(1), sum_q, by_label[:, 1].to(torch.float64)


def available_bytes(device: torch.device) -> int | None:
    """Memory free on ``device``: CUDA's free memory, or the host's
    (:func:`~calib_metrics.functional.free_memory.host_available_bytes`: MemAvailable, or
    the room under a container's memory limit; None where it cannot be read)."""
    if device.type == "cuda":
        # The caching allocator's freed blocks are free to this process too.
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return torch.cuda.mem_get_info(device)[0] + cached
    return host_available_bytes()


#: What :func:`check_room` recommends where its caller names no remedy: the library's
#: streaming mode; the command line, which has none, sets its own words (``cli.main``).
ROOM_REMEDY: ContextVar[str] = ContextVar(
    "room_remedy",
    default="use the streaming mode (CalibrationError(streaming=True)), whose memory does "
    "not grow with N",
)


def check_room(
    need: int,
    device: torch.device,
    what: str,
    remedy: str | None = None,
    unit: Literal["GiB", "MiB", "KiB"] = "GiB",
) -> None:
    """Raise ValueError, saying ``remedy`` (by default :data:`ROOM_REMEDY`'s: use the
    streaming mode), if ``need`` bytes are not free: up front, rather than the
    allocator's error (or the host's out-of-memory killer) part way through. The message
    gives both amounts in ``unit``, or a smaller one where the smaller amount is under
    one ``unit`` ("needs 0.0 GiB, more than the 0.0 GiB free" had said nothing of 9 MiB
    beside 4 MiB).

    Example:
        >>> check_room(1024, torch.device("cpu"), "a small job")
    """
    free = available_bytes(device)
    if free is not None and need > free:
        units = {"GiB": (2**30, ".1f"), "MiB": (2**20, ",.0f"), "KiB": (2**10, ",.0f")}
        names = list(units)[list(units).index(unit) :]

        def same(name: str) -> bool:  # both amounts print alike in this unit
            scale, digits = units[name]
            return f"{need / scale:{digits}}" == f"{free / scale:{digits}}"

        while len(names) > 1 and (min(need, free) < units[names[0]][0] or same(names[0])):
            names.pop(0)
        unit = names[0]
        scale, digits = units[unit]
        remedy = ROOM_REMEDY.get() if remedy is None else remedy
        raise ValueError(
            f"{what} needs {need / scale:{digits}} {unit}, more than the "
            f"{free / scale:{digits}} {unit} free on {device}: {remedy}"
        )


# Bytes per pair of sorting pairs (_sorted_prefix): int64 keys sorted with their
# permutation, the sorted q and y in float64 and their cumulative sums (on a GPU also
# the radix sort's own scratch, some 16 bytes a pair: within this bound).
_SORT_BYTES = 64
# torch's CUDA sort takes at most 2³¹ − 1 elements.
_SORT_MAX = (1 << 31) - 1


def _memo_bytes(n: int, q_bytes: int) -> int:
    """Bytes per pair of the first level's kept cells, at most (none for half precision
    nor below :data:`_MEMO_MIN_PAIRS`)."""
    return 0 if q_bytes == 2 or n < _MEMO_MIN_PAIRS else 4


def _new_memo(probs: Tensor, size: int) -> Tensor | None:
    """Room for every pair's first-level cell (of ``size``), kept by the histogram pass
    for the pass that sets the cut cells' pairs aside, rather than computing them again
    (some 20 operations a pair): int16 (cell − 2¹⁵) up to 2¹⁶ cells, else int32; none for
    half precision, whose input (3 bytes a pair with a bool y) is smaller, nor below
    :data:`_MEMO_MIN_PAIRS` pairs."""
    if _memo_bytes(probs.numel(), probs.element_size()) == 0:
        return None
    return torch.empty_like(probs, dtype=torch.int16 if size <= 1 << 16 else torch.int32)


def _memo_offset(memo: Tensor) -> int:
    return 1 << 15 if memo.dtype == torch.int16 else 0


def _memo_cells(memo: Tensor) -> Callable[[slice], Tensor]:
    """part ↦ the kept cells of the pairs ``[part]`` (int32)."""
    offset = _memo_offset(memo)
    return lambda part: memo[part].to(torch.int32).add_(offset) if offset else memo[part]


def sorts_all(n: int, device: torch.device) -> bool:
    """Whether adaptive binning sorts all ``n`` pairs rather than selecting the bin
    boundaries by radix: at most :data:`_SORT_BELOW` pairs anywhere, and on a GPU
    whenever the sort's memory (:data:`_SORT_BYTES` a pair) is at most half the free
    memory (read from the driver, not from the stream: no synchronisation).

    Example:
        >>> sorts_all(1000, torch.device("cpu")), sorts_all(10**8, torch.device("cpu"))
        (True, False)
    """
    if n <= _SORT_BELOW:
        return True
    if device.type != "cuda" or n > _SORT_MAX:
        return False
    free = available_bytes(device)
    return free is not None and n * _SORT_BYTES <= free // 2


def exact_working_bytes(n: int, bin_size: int, q_bytes: int) -> int:
    """Estimated memory that exact adaptive binning of ``n`` pairs (q of ``q_bytes``)
    needs beyond its input: the first level's cells and chunk temporaries, the pairs
    set aside (about two cells' worth at each bin boundary) and the next level's, and
    the larger of every pair's kept cell (4 bytes, first pass) and the sort of the
    set-aside pairs (of at most 2¹⁷ when they are many and refined; second pass).

    Example:
        >>> round(exact_working_bytes(10**9, 31623, 4) / 2**30, 1)  # GiB
        8.6
    """
    if n <= _SORT_BELOW:
        return n * _SORT_BYTES
    cells = _first_level_cells(n, n // bin_size)
    chunk = min(_CHUNK, max(_MIN_CHUNK, n // 16))
    aside = min(n, 2 * (n // bin_size) * (n // cells))
    sorted_ = aside if aside <= n // _SORT_FRACTION else _SORT_BELOW
    passes = max(n * _memo_bytes(n, q_bytes), sorted_ * _SORT_BYTES)
    # A first-level cell: 28 bytes, and float64's smallest and largest q (heavy ties).
    cell_bytes = 28 + (2 * q_bytes if q_bytes == 8 else 0)
    return cell_bytes * cells + 64 * chunk + 2 * aside * (q_bytes + 1) + passes


def _cells_of_parts(q: Tensor, cell_of: _CellOf) -> Callable[[slice], Tensor]:
    """part ↦ the cells of the pairs ``q[part]``, computed from their q."""
    return lambda part: cell_of(q[part])


def _compact(
    q: Tensor, y: Tensor, cells: Callable[[slice], Tensor], slot_map: Tensor, m: int
) -> tuple[Tensor, Tensor]:
    """The ``m`` pairs whose cell ``slot_map`` refines, q in its dtype and y as bool
    (``cells(part)``: the cells of the pairs ``q[part]``)."""
    check_room(m * (q.element_size() + 1), q.device, f"setting {m} pairs aside")
    out_q = torch.empty(m, dtype=q.dtype, device=q.device)
    out_y = torch.empty(m, dtype=torch.bool, device=q.device)
    pos, refined = 0, slot_map >= 0
    for part in _chunks(q):
        pick = refined.index_select(0, cells(part)).nonzero().squeeze(1)
        end = pos + pick.numel()
        out_q[pos:end] = q[part].index_select(0, pick)
        out_y[pos:end] = y[part].index_select(0, pick) != 0
        pos = end
    return out_q, out_y


def _sorted_prefix(q: Tensor, y: Tensor, ranks: Tensor) -> Tensor:
    """F(r) of the pairs (Σq, Σy of the first r in q order, tie groups at their mean)
    as the :data:`_ROWS` rows (see :func:`_prefix_sums`)."""
    return _rows_at(*_sorted_sums(q, y), ranks)


def _sorted_sums(q: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The pairs' sorted order keys and the running Σq, Σy in that order (from 0)."""
    key, _ = _order_key(q)
    key, order = torch.sort(key.long())
    zero = torch.zeros(1, dtype=torch.float64, device=q.device)
    cum_q = torch.cat([zero, torch.cumsum(q.index_select(0, order).to(torch.float64), 0)])
    cum_y = torch.cat([zero, torch.cumsum(y.index_select(0, order).to(torch.float64), 0)])
    return key, cum_q, cum_y


def _rows_at(key: Tensor, cum_q: Tensor, cum_y: Tensor, ranks: Tensor) -> Tensor:
    """The rows of F at ``ranks`` from sorted keys and running sums (:func:`_sorted_sums`)."""
    value = key.index_select(0, ranks.clamp(max=key.numel() - 1))
    first = torch.searchsorted(key, value, right=False)
    last = torch.searchsorted(key, value, right=True)
    share = (ranks - first).to(torch.float64) / (last - first)
    f_q = cum_q[first] + share * (cum_q[last] - cum_q[first])
    ones = cum_y[last] - cum_y[first]
    cut = _cut_rows((ranks > first) & (ranks < last), last - first, ranks - first, ones)
    return torch.cat(
        [torch.stack([f_q, cum_y[first], _share_of(ones, ranks - first, last - first)]), cut]
    )


def _sorted_ends(key: Tensor, dtype: torch.dtype) -> Tensor:
    """The pairs at q = 0 and at q = 1 (int64, shape 2) from their sorted order keys:
    key 0 is q = 0 (and −0.0), the largest key q = 1."""
    # Filled on the keys' device, not copied there: a copy from the host waits for it.
    one = torch.ones(1, dtype=dtype, device="cpu")  # a number now: not on a default device
    ends = key.new_full((2,), int(_order_key(one)[0]))
    ends[0] = 0
    at = torch.searchsorted(key, ends, right=True)
    return torch.stack([at[0], key.numel() - torch.searchsorted(key, ends[1:])[0]])


def _zero_and_one(like: Tensor) -> Tensor:
    """[0, 1] in ``like``'s dtype, filled on its device (no copy from the host)."""
    ends = like.new_ones(2)
    ends[0] = 0
    return ends


def _share_of(ones: Tensor, before: Tensor, size: Tensor) -> Tensor:
    """The ones of a tie group of ``size`` pairs that its first ``before`` pairs hold at its
    mean label, ``before · ones / size``: multiplied first, so that a group of all ones
    (or none) gives whole counts exactly, and a bin of all ones a frequency of exactly 1
    (``before / size · ones`` had given 0.9999999999999996)."""
    return before.to(torch.float64) * ones / size.to(torch.float64)


def _cut_rows(cut: Tensor, size: Tensor, before: Tensor, ones: Tensor) -> Tensor:
    """The tie group rows of F (size, pairs before the rank, ones), 0 where not ``cut``."""
    rows = torch.stack([size.to(torch.float64), before.to(torch.float64), ones])
    return torch.where(cut, rows, 0.0)


def _level_bits(consumed: int, width: int, n: int, m: int, n_slots: int) -> int:
    """Key bits of the next level (0: sort the pending pairs instead)."""
    if consumed == 0:
        if width <= 16:
            return width
        return min(_MAX_CELL_BITS, max(_MIN_CELL_BITS, n.bit_length() - 4))
    if m <= _SORT_BELOW:
        return 0
    cap = max(1 << 16, m // 16, n // 16)
    bits = min(width - consumed, (cap // n_slots).bit_length() - 1)
    return bits if bits >= min(_MIN_REFINE_BITS, width - consumed) else 0


class _Queries(NamedTuple):
    """Unresolved queries: their index, rank in the pending sequence (the pending pairs
    of every refined cell, cell after cell) and the rank where their cell starts."""

    index: Tensor
    rel: Tensor
    origin: Tensor


def _resolve(
    cells: tuple[Tensor, Tensor, Tensor],
    single: Tensor | bool,
    queries: _Queries,
    f: Tensor,
) -> tuple[Tensor, Tensor, Tensor]:
    """Add each query's sums over the cells before its rank to ``f``; a rank inside
    a cell of one value (``single`` cells, all q = 0 or all q = 1) takes its share.
    Returns the queries left inside cells of several values (mask), their cells and
    offsets in them."""
    count, sum_q, sum_y = cells
    size = count.numel()
    end = torch.cumsum(count, 0)
    start = end - count
    cum_q, cum_y = torch.cumsum(sum_q, 0) - sum_q, torch.cumsum(sum_y, 0) - sum_y
    # Origins sit on cell edges.
    o = torch.searchsorted(end, queries.origin, right=True).clamp_(max=size - 1)
    k = torch.searchsorted(end, queries.rel, right=True).clamp_(max=size - 1)
    t, c = queries.rel - start[k], count[k]
    inside = (t > 0) & (t < c)
    final = (sum_q[k] == 0) | (sum_q[k] == c)
    final |= single.index_select(0, k) if isinstance(single, Tensor) else single
    whole = (t >= c).to(torch.float64)
    share = torch.where(inside & final, t.to(torch.float64) / c.clamp(min=1), 0.0)
    f_q = cum_q[k] + (whole + share) * sum_q[k] - cum_q[o]
    f_y = cum_y[k] + whole * sum_y[k] - cum_y[o]
    ones = torch.where(inside & final, _share_of(sum_y[k], t, c.clamp(min=1)), 0.0)
    # A cut cell of one value is the whole tie group (equal q, equal key, one cell).
    cut = _cut_rows(inside & final, c, t, sum_y[k])
    f.index_add_(1, queries.index, torch.cat([torch.stack([f_q, f_y, ones]), cut]))
    return inside & ~final, k, t


def _set_aside(count: Tensor, queries: _Queries, left: Tensor, k: Tensor, t: Tensor):
    """The cells to refine (slot map: cell -> slot or -1), the number of their pairs and
    the ``left`` queries' ranks in the sequence of those pairs."""
    index, k, t = queries.index[left], k[left], t[left]
    cells = torch.unique(k)
    slot_map = torch.full((count.numel(),), -1, dtype=torch.int64, device=count.device)
    slot_map[cells] = torch.arange(cells.numel(), device=count.device)
    sizes = count.index_select(0, cells)
    starts = torch.cumsum(sizes, 0) - sizes
    origin = starts.index_select(0, slot_map.index_select(0, k))
    return slot_map, int(sizes.sum()), _Queries(index, origin + t, origin)


def _refine(probs: Tensor, target: Tensor, ranks: Tensor) -> Tensor:
    """F(r) by radix select over fixed key bits: level after level, the cells that a
    rank cuts are refined by the key's next bits, until one value or few pairs are left."""
    n, width = probs.numel(), _key_width(probs.dtype)
    f = torch.zeros(_ROWS, ranks.numel(), dtype=torch.float64, device=probs.device)
    queries = _Queries(torch.arange(ranks.numel(), device=ranks.device), ranks, 0 * ranks)
    q, y, plan, consumed, n_slots, slot_map = probs, target, [], 0, 1, None
    if n <= _SORT_BELOW:
        return _sorted_prefix(probs, target, ranks)
    while True:
        bits = _level_bits(consumed, width, n, q.numel(), n_slots)
        if bits == 0:
            # Cells from different slots never tie, so one sort orders the sequence.
            _add_sorted(q, y, queries, f)
            return f
        plan.append((bits, slot_map))
        consumed += bits
        size = (n_slots << bits) + (len(plan) == 1)
        top, bottom = q.new_zeros(size), q.new_ones(size)
        cells = _histogram(q, y, _plan_cells(plan), size, top, bottom=bottom)
        # Heavy ties (q of 3 decimals) had gone on for every bit of the key, 63 in float64
        # (one pass over the pending pairs per 4–7 bits, some 20× float32's time).
        cells, one_value = _one_value_cells(cells, top, bottom)
        single = one_value if consumed < width else True
        left, k, t = _resolve(cells, single, queries, f)
        if not bool(left.any()):
            return f
        slot_map, m, queries = _set_aside(cells[0], queries, left, k, t)
        q, y = _compact(q, y, _cells_of_parts(q, _plan_cells(plan)), slot_map, m)
        n_slots = int(slot_map.max()) + 1


def _add_sorted(q: Tensor, y: Tensor, queries: _Queries, f: Tensor) -> None:
    """Add F(rel) − F(origin) of the pending pairs (q, y) to the queries' sums ``f``."""
    j = queries.rel.numel()
    both = _sorted_prefix(q, y, torch.cat([queries.rel, queries.origin]))  # one sort
    f.index_add_(1, queries.index, both[:, :j] - both[:, j:])


# The first level's cells follow the data: a strided sample of up to 2**16 keys gives
# the share of the pairs under each prefix of the key's leading bits (12 for float32,
# 16 for float64; half precision takes all 15, one cell per value), and each prefix gets
# about that share of N/128 cells (at least 2**15, so that below 4 million pairs the
# cut cells set aside little; at most 2**18, which still fit the caches) as a power of
# two, so that cells hold alike many pairs whatever the distribution.
_SAMPLE = 1 << 16
_PREFIX_BITS = {15: 15, 31: 12, 63: 16}
_MIN_CELLS, _MAX_CELLS = 1 << 15, 1 << 18
# But at least 16 cells a bin (up to 2**22), so that the cut cells stay a small part of
# the pairs when bins are few pairs each (N = 10⁹ with β = 5000).
_CELLS_PER_BIN, _MAX_BIN_CELLS = 16, 1 << 22
_PAIRS_PER_CELL = 128
# Pairs set aside by the first level are sorted when they are at most N / 8.
_SORT_FRACTION = 8
# Rows of F (see _prefix_sums): Σq, Σy, a split group's share of its ones, and the cut
# tie group's size, pairs before the rank and ones.
_ROWS = 6


def _first_level_cells(n: int, n_bins: int) -> int:
    """About how many cells the first level spreads ``n`` pairs over (see above)."""
    by_pairs = min(_MAX_CELLS, max(_MIN_CELLS, n // _PAIRS_PER_CELL))
    return min(_MAX_BIN_CELLS, max(by_pairs, _CELLS_PER_BIN * n_bins))


def _sampled_cells(probs: Tensor, n_bins: int) -> tuple[_CellOf, int, Tensor]:
    """The first level's cell function, its number of cells and which hold one key.

    Cell 0 holds q = 0 alone (the others move up by one), so that a mass of exact zeros
    is one tie group even beside subnormal q. Arithmetic stays in int32 below 64-bit
    keys (int64 is several times slower on CPU).
    """
    n, width = probs.numel(), _key_width(probs.dtype)
    prefix = _PREFIX_BITS[width]
    rest = width - prefix
    as_int = torch.int64 if width > 31 else torch.int32
    sample, _ = _order_key(probs[:: max(1, n // _SAMPLE)])
    hits = torch.bincount((sample.to(as_int) >> rest).long(), minlength=1 << prefix)
    cells = _first_level_cells(n, n_bins)
    want = hits.to(torch.float64) * (cells / sample.numel())
    extra = torch.ceil(torch.log2(want.clamp(min=1))).long().clamp_(0, rest)
    span = torch.ones_like(extra) << extra
    # Prefix p's cells start after the spans before it (base); a key's cell is base + its
    # next ``extra`` bits, base and shift read from one table (base · 64 + shift: one
    # gather per pair; base < 2**23, so the table fits int32).
    shift = rest - extra
    base = torch.cumsum(span, 0) - span
    table = ((base << 6) | shift).to(as_int)
    single = torch.cat([shift.new_ones(1, dtype=torch.bool), shift == 0]).repeat_interleave(
        torch.cat([span.new_ones(1), span])
    )

    def cell_of(q: Tensor) -> Tensor:
        # base + the ``extra`` bits after the prefix; + 1 unless q = 0 (keys are >= 0).
        key = _order_key(q)[0].to(as_int)  # a new tensor: changed in place below
        packed = table.index_select(0, key >> rest)
        packed += torch.clamp(key, max=1).bitwise_left_shift_(6)  # base + 1 unless q = 0
        low = key.bitwise_and_((1 << rest) - 1).bitwise_right_shift_(packed & 63)
        return low.add_(packed.bitwise_right_shift_(6))

    return cell_of, int(span.sum()) + 1, single


def _one_value_cells(
    cells: tuple[Tensor, Tensor, Tensor], top: Tensor, bottom: Tensor
) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
    """Which cells hold one value (their smallest q ``bottom`` equals their largest
    ``top``): a tie group that a rank may split, never one to refine. Returns the cells'
    sums with such a cell's Σq set to its count times that value, exactly (float64 sums
    of many equal terms drift: 210,000 adds of 0.3 by 2.4e-7), and that mask."""
    count, sum_q, sum_y = cells
    one_value = torch.eq(top, bottom)  # never an empty cell: its top is 0, its bottom 1
    exact = count.to(torch.float64) * top.to(torch.float64)
    return (count, torch.where(one_value, exact, sum_q), sum_y), one_value


def _repeats_values(probs: Tensor) -> bool:
    """Whether at most half of a strided sample of q (up to :data:`_SAMPLE` values) are
    distinct: heavy ties. One host synchronisation.

    Example:
        >>> _repeats_values(torch.rand(1000).round(decimals=2)), _repeats_values(torch.rand(1000))
        (True, False)
    """
    sample = probs[:: max(1, probs.numel() // _SAMPLE)]
    return torch.unique(sample).numel() <= sample.numel() // 2


def _prefix_sums(probs: Tensor, target: Tensor, ranks: Tensor) -> tuple[Tensor, Tensor]:
    """F(r) = (Σq, Σy) of the first r pairs in q order at the ranks ``ranks`` (int64),
    every tie group at its mean label, by radix select (see the module docstring).

    Rows (:data:`_ROWS`): Σq, Σy of the whole pairs and the share of a split tie group's
    ones, kept apart so that Σy does not depend on how the pairs were cut into cells
    (nor so on the input's order, which the first level's sample follows); then the tie
    group that the rank cuts, if any: its size, its pairs before the rank and its ones
    (:class:`~calib_metrics.functional.ties.TieCuts`), 0 where none is cut.

    Also the pairs at q = 0 and at q = 1 (int64, shape 2; :func:`exact_end_bins`), read
    from what the passes hold already: the sorted keys, or the first level's cells of
    q = 0 and of q = 1, each of which holds that value alone."""
    if sorts_all(probs.numel(), probs.device):
        key, cum_q, cum_y = _sorted_sums(probs, target)
        return _rows_at(key, cum_q, cum_y, ranks), _sorted_ends(key, probs.dtype)
    f = torch.zeros(_ROWS, ranks.numel(), dtype=torch.float64, device=probs.device)
    queries = _Queries(torch.arange(ranks.numel(), device=ranks.device), ranks, 0 * ranks)
    cell_of, size, single = _sampled_cells(probs, ranks.numel() - 1)
    memo = _new_memo(probs, size)
    if probs.dtype == torch.float32:
        top = torch.zeros(size, dtype=torch.float32, device=probs.device)
        cells = _histogram(probs, target, cell_of, size, top, memo)
        # Float32 sums are exact in float64 (a cell's q share an exponent), so a cell
        # whose Σq is its count times its largest q holds one value: a tie group that
        # a rank may split, never one to refine (1 − 2⁻²⁴ and its like near 1).
        single = single | (cells[1] == cells[0] * top.to(torch.float64))
    elif probs.dtype == torch.float64 and _repeats_values(probs):
        # Float64 sums are not exact: a cell holds one value where its smallest and
        # largest q are equal. Heavy ties (q of a few decimals, say) had gone on to be
        # refined for every bit of their key, 10–30× the time of the same q in float32;
        # without them the two reductions a pair cost 10–50% more for nothing.
        top, bottom = probs.new_zeros(size), probs.new_ones(size)
        cells = _histogram(probs, target, cell_of, size, top, memo, bottom)
        cells, one_value = _one_value_cells(cells, top, bottom)
        single = single | one_value
    else:
        cells = _histogram(probs, target, cell_of, size, memo=memo)
    ends = cells[0].index_select(0, cell_of(_zero_and_one(probs)))
    left, k, t = _resolve(cells, single, queries, f)
    if not bool(left.any()):
        return f, ends
    slot_map, m, queries = _set_aside(cells[0], queries, left, k, t)
    if memo is None:
        q, y = _compact(probs, target, _cells_of_parts(probs, cell_of), slot_map, m)
    else:
        q, y = _compact(probs, target, _memo_cells(memo), slot_map, m)
        del memo  # before the set-aside pairs are sorted
    # The cut cells' pairs, cell after cell, are in q order: one sort orders a few of
    # them, more (heavy ties) are refined as one sequence.
    if m <= probs.numel() // _SORT_FRACTION:
        _add_sorted(q, y, queries, f)
        return f, ends
    j = queries.rel.numel()
    a = _refine(q, y, torch.cat([queries.rel, queries.origin]))
    f.index_add_(1, queries.index, a[:, :j] - a[:, j:])
    return f, ends


def bin_ranks(n: int, bin_size: int, device: torch.device) -> Tensor:
    """The adaptive bins' boundary ranks in q order: 0, β, 2β, …, and n, the short last
    run joined to the one before (int64; no host synchronisation).

    Example:
        >>> bin_ranks(10, 4, torch.device("cpu"))
        tensor([ 0,  4, 10])
    """
    n_bins = max(1, n // bin_size)
    positions = torch.arange(n_bins + 1, device=device)
    # where(), not ranks[-1] = n: a GPU waits to copy a Python int written into a tensor.
    return torch.where(positions < n_bins, positions * bin_size, n)


def adaptive_bin_sums(probs: Tensor, target: Tensor, bin_size: int) -> tuple[Tensor, ...]:
    """Per-bin (count, sum of q, sum of y) of the adaptive bins, in float64 (the sums of
    :func:`adaptive_tied_sums` without the cuts)."""
    return adaptive_tied_sums(probs, target, bin_size)[:3]


def adaptive_tied_sums(
    probs: Tensor, target: Tensor, bin_size: int
) -> tuple[Tensor, Tensor, Tensor, TieCuts]:
    """Per-bin (count, sum of q, sum of y) of the adaptive bins, in float64, and the tie
    groups that the bin boundaries cut (:class:`~calib_metrics.functional.ties.TieCuts`).

    The pairs must already be validated and flat (see :func:`adaptive_binning`). Reads
    the pairs a few times in chunks; synchronises with the device once per level, and
    for float64 q once more, to look for heavy ties in a sample (not at all where
    :func:`sorts_all`: one sort, no level).
    Raises ValueError up front, recommending the streaming mode, when the estimated
    working memory (:func:`exact_working_bytes`) exceeds what the device has free.
    """
    n = probs.numel()
    need = exact_working_bytes(n, bin_size, probs.element_size())
    check_room(need, probs.device, f"exact adaptive binning of {n} pairs")
    ranks = bin_ranks(n, bin_size, probs.device)
    (f_q, f_y, f_share, *cuts), (zeros, ones) = _prefix_sums(probs, target, ranks)
    f_y = f_y + f_share
    count = ranks.diff().to(torch.float64)
    # Differences of prefix sums may leave adjacent bins of one tied value an ulp out of
    # order; the bins' means are sorted by construction, so restore that exactly.
    sum_q = torch.cummax(f_q.diff() / count, 0).values * count
    sum_q = exact_end_bins(ranks, sum_q, zeros, ones)
    return count, sum_q, f_y.diff(), TieCuts(*cuts)


def exact_end_bins(ranks: Tensor, sum_q: Tensor, zeros: Tensor, ones: Tensor) -> Tensor:
    """``sum_q`` of the bins between boundary ranks ``ranks`` with the bins made only of
    q = 0 pairs at exactly 0 and those made only of q = 1 pairs at exactly their count,
    given the pairs at q = 0 (``zeros``, the first in q order) and at q = 1 (``ones``,
    the last). Differences of running sums had left such a bin's mean an ulp or so off
    (0.9999999999999999), which the reliability diagram's logit axis read as a mean
    strictly inside (0, 1), stretching to 1 − 1e-6. No host synchronisation.

    Example:
        >>> ranks = torch.tensor([0, 2, 4, 6])
        >>> sum_q = torch.tensor([1e-17, 1.2, 1.9999999999999998], dtype=torch.float64)
        >>> exact_end_bins(ranks, sum_q, torch.tensor(2), torch.tensor(2)).tolist()
        [0.0, 1.2, 2.0]
    """
    count = ranks.diff().to(sum_q.dtype)
    sum_q = torch.where(ranks[1:] <= zeros, 0.0, sum_q)
    return torch.where(ranks[:-1] >= ranks[-1] - ones, count, sum_q)


def adaptive_tied_bins(probs: Tensor, target: Tensor, bin_size: int) -> Bins:
    """The adaptive bins of validated flat pairs, carrying the cut tie groups
    (:class:`TiedBins`)."""
    count, sum_q, sum_y, cuts = adaptive_tied_sums(probs, target, bin_size)
    return with_ties(bins_of_means(count, sum_q, sum_y), cuts)


def adaptive_binning(probs: Tensor, target: Tensor, bin_size: int = 5000) -> Bins:
    """Equal-mass bins of ``bin_size`` consecutive pairs in q order (Algorithm 1); a tie
    group split by a boundary counts at its mean label in each bin.

    Args:
        probs: predicted probabilities q in [0, 1], any shape and floating dtype.
        target: binary labels y of the same shape (bool, integer or float 0/1).
        bin_size: target bin size β; fewer than β pairs make one bin, and a short last
            run is merged into the bin before it.

    Returns:
        :class:`Bins` in float64, sorted by ``pred_mean``.

    Example:
        >>> import torch
        >>> probs = torch.tensor([0.1, 0.9, 0.1, 0.8, 0.2, 0.7])
        >>> target = torch.tensor([0, 1, 1, 1, 0, 0])
        >>> bins = adaptive_binning(probs, target, bin_size=2)
        >>> bins.pred_mean
        tensor([0.1000, 0.4500, 0.8500], dtype=torch.float64)
        >>> bins.freq
        tensor([0.5000, 0.0000, 1.0000], dtype=torch.float64)
        >>> bins.count
        tensor([2., 2., 2.], dtype=torch.float64)
    """
    check_int("bin_size", bin_size)
    probs, target = _check_pairs(probs, target)
    return adaptive_tied_bins(probs, target, bin_size)


def uniform_bin_of(probs: Tensor, n_bins: int) -> Tensor:
    """Equal-width bin of each probability, 0 … n_bins − 1 (q = 1 in the last bin).

    The edges are ``linspace(0, 1, n_bins + 1)`` in the input's own dtype, as
    torchmetrics builds them, so a probability on an inner edge falls where it falls
    there. ``probs`` must be validated.

    Example:
        >>> import torch
        >>> uniform_bin_of(torch.tensor([0.0, 0.65, 0.7, 1.0]), 10)
        tensor([0, 6, 7, 9])
    """
    edges = _uniform_edges(probs, n_bins)
    # bucketize warns (and copies anyway) on a strided view such as probs[:, 0].
    return (torch.bucketize(probs.contiguous(), edges, right=True) - 1).clamp_(0, n_bins - 1)


def _uniform_edges(probs: Tensor, n_bins: int) -> Tensor:
    """The ``n_bins + 1`` equal-width edges over [0, 1] in ``probs``' dtype and device."""
    return torch.linspace(0, 1, n_bins + 1, dtype=probs.dtype, device=probs.device)


def _spread(device: torch.device) -> int:
    return _SPREAD if device.type == "cuda" else 1


def _spread_for(device: torch.device, n_bins: int) -> int:
    """Slots a bin for :func:`spread_bin_sums` (1: add in place)."""
    return max(1, min(_spread(device), _SPREAD_SLOTS // n_bins))


def spread_bin_sums(bin_of: Tensor, n_bins: int, *values: Tensor) -> Tensor:
    """``[len(values), n_bins]`` float64 sums of each of ``values`` (flat, like
    ``bin_of``) by bin. On a GPU each of few bins is spread over up to :data:`_SPREAD`
    slots by the pair's position, so that their adds do not queue on one address; the
    CPU adds in place. No host synchronisation (``torch.bincount`` reads its ids' range on
    a GPU).

    Example:
        >>> import torch
        >>> spread_bin_sums(torch.tensor([0, 2, 2]), 3, torch.tensor([1.0, 2.0, 3.0]))
        tensor([[1., 0., 5.]], dtype=torch.float64)
    """
    spread = _spread_for(bin_of.device, n_bins)
    slot = bin_of
    if spread > 1:
        position = torch.arange(bin_of.numel(), device=bin_of.device)
        slot = position.bitwise_and_(spread - 1).add_(bin_of, alpha=spread)
    sums = torch.zeros(len(values), n_bins * spread, dtype=torch.float64, device=bin_of.device)
    for row, value in zip(sums, values):
        row.index_add_(0, slot, value.to(torch.float64))
    return sums.view(len(values), n_bins, spread).sum(-1)


def uniform_binning(probs: Tensor, target: Tensor, n_bins: int = 15) -> Bins:
    """Equal-width bins over [0, 1]; empty bins are dropped.

    Bin i holds q in [eᵢ, eᵢ₊₁) with the edges ``linspace(0, 1, n + 1)`` computed in the
    input's dtype, as in torchmetrics' ``BinaryCalibrationError``, so a q on an inner
    edge lands in the same bin as there (float32(0.7) < float32 edge 0.7 would not hold
    against float64 edges); the sums are float64 whatever the dtype. The one difference:
    q = 1 belongs to the last bin here, while torchmetrics gives it a bin of its own.

    The bins carry their edges (``edges``, a row per bin kept).

    Example:
        >>> import torch
        >>> bins = uniform_binning(torch.tensor([0.05, 0.15, 0.95]), torch.tensor([0, 1, 1]), 10)
        >>> bins.pred_mean
        tensor([0.0500, 0.1500, 0.9500], dtype=torch.float64)
        >>> bins.freq
        tensor([0., 1., 1.], dtype=torch.float64)
        >>> bins.edges[-1].tolist()
        [0.8999999761581421, 1.0]
    """
    check_int("n_bins", n_bins)
    probs, target = _check_pairs(probs, target)
    b = uniform_bin_of(probs, n_bins)
    ones = probs.new_ones((), dtype=torch.float64).expand(b.numel())
    count, sum_q, sum_y = spread_bin_sums(b, n_bins, ones, probs, target)
    edges = _uniform_edges(probs, n_bins).double()
    return _sums_to_bins(count, sum_q, sum_y, torch.stack([edges[:-1], edges[1:]], dim=1))


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
