"""Chain inputs whose kept tokens are not a prefix of each row, moved to the front.

A linear chain reads each sentence through a left-aligned mask (``mask[:, 0]`` all True,
then a prefix of each row). A sub-word tokenizer's batch keeps other layouts: a [CLS]
tagged -100 at the front, the later pieces of a word tagged -100 inside a sentence, a row
of padding alone. :func:`left_align` moves each row's kept tokens to the front, in order,
and drops the rows that keep none; :meth:`LeftAligned.restore` puts per-token results
(marginals, samples, tags, scaled emissions) back at the original rows and positions.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.errors import check_dense_tensors, check_not_meta
from calib_metrics.models.linear_chain import (
    as_indices,
    check_mask_dtype,
    check_mask_flags,
    mask_not_binary,
)

__all__ = ["LeftAligned", "left_align"]


class LeftAligned(NamedTuple):
    """A batch of :func:`left_align`: ``B'`` rows (those with a kept token) of ``T``
    (of one step when ``T = 0``: a chain needs a step, and ``B' = 0`` then).

    Attributes:
        emissions: ``[B', T, *]``, each row's kept tokens first, in order.
        tags: ``[B', T]`` moved alike, or ``None`` when none were given.
        mask: ``[B', T]`` bool, left-aligned: True at the kept tokens.
        rows: ``[B']`` the original row of each aligned row.
        positions: ``[B', T]`` the original position of each aligned token.
        batch_size: ``B``, the original number of rows.
        length: the original number of positions, ``T`` (0 for a batch of empty rows,
            which aligns to ``[0, 1, *]``): the width :meth:`restore` gives back.
    """

    emissions: Tensor
    tags: Tensor | None
    mask: Tensor
    rows: Tensor
    positions: Tensor
    batch_size: int
    length: int

    def restore(self, values: Tensor, fill: float = 0, dim: int = 0) -> Tensor:
        """Per-token ``values`` of the aligned batch, ``[B', T, *]`` (``dim``: where ``B'``
        lies, 1 for samples ``[S, B', T]``), at the original rows and positions: ``[B, T,
        *]``, in the dtype and on the device of ``values``. The tokens left out and the
        rows dropped hold ``fill``, which that dtype must hold (a whole number in range
        for integer values). No host synchronisation.

        A result per sentence, ``[B']`` (a log normaliser, a sequence score), has no
        tokens to restore: its ``i``-th entry is row ``rows[i]``'s. Nor have pairwise
        marginals, ``[B', T-1, K, K]``, which are refused saying how to read them: row ``i``
        is row ``rows[i]``, and pair ``t`` joins original positions ``positions[i, t]``
        and ``positions[i, t+1]`` where ``mask[i, t+1]`` (past a row's kept tokens,
        ``positions`` lists the ones left out, and the pairs there are padding).

        Example:
            >>> tags = torch.tensor([[-100, 2, -100, 1], [-100, -100, -100, -100]])
            >>> aligned = left_align(torch.zeros(2, 4, 3), tags)
            >>> aligned.restore(aligned.tags, fill=-100).equal(tags)
            True
        """
        if not isinstance(values, Tensor):
            raise ValueError(f"values must be a tensor, got {type(values).__name__}")
        if not 0 <= dim <= values.dim() - 2:
            raise ValueError(
                f"dim must index B' of values [..., B', T, ...], got {dim} for "
                f"shape {tuple(values.shape)}{_PER_SENTENCE * (values.dim() < 2)}"
            )
        ahead = values.movedim((dim, dim + 1), (0, 1))
        rows, length = self.mask.shape
        if tuple(ahead.shape[:2]) == (rows, length - 1):
            # One step short: a result per pair of adjacent aligned tokens, whose tokens
            # need not be adjacent in the original row (a sub-word piece between them).
            raise ValueError(
                f"values of shape {tuple(values.shape)} are [B', T-1] = {(rows, length - 1)} "
                f"at dims {dim} and {dim + 1}: these look like pairwise (transition) "
                "marginals [B', T-1, K, K], which have no per-token positions to restore. "
                "Read them on the aligned batch: row i is original row aligned.rows[i], and "
                "pair t joins aligned positions t and t+1, i.e. original positions "
                "aligned.positions[i, t] and aligned.positions[i, t+1], where "
                "aligned.mask[i, t+1] (the pairs past a row's kept tokens are padding)"
            )
        if tuple(ahead.shape[:2]) != tuple(self.mask.shape):
            raise ValueError(
                f"values must be [B', T] = {tuple(self.mask.shape)} at dims {dim} and "
                f"{dim + 1} (per aligned token), got shape {tuple(values.shape)}"
            )
        _check_fill(fill, values.dtype)
        trailing = (1,) * (ahead.dim() - 2)
        kept = self.mask.to(values.device).reshape(*self.mask.shape, *trailing)
        positions = self.positions.to(values.device).reshape(*self.mask.shape, *trailing)
        # positions is a permutation of each row: the scatter writes every entry once.
        in_place = torch.empty_like(ahead).scatter_(
            1, positions.expand_as(ahead), ahead.masked_fill(~kept, fill)
        )
        restored = ahead.new_full((self.batch_size, *ahead.shape[1:]), fill)
        restored.index_copy_(0, self.rows.to(values.device), in_place)
        # T = 0 was aligned one step wide, with no row: none of that step is put back.
        restored = restored[:, : self.length]
        return restored.movedim((0, 1), (dim, dim + 1))


_PER_SENTENCE = (
    " (a result per sentence, [B'] such as a log normaliser or a score, has no tokens to"
    " restore: its i-th entry is row aligned.rows[i]'s)"
)


def _check_fill(fill: object, dtype: torch.dtype) -> None:
    """Refuse a ``fill`` that ``dtype`` cannot hold: NaN had failed inside torch for
    integer values, and 2.7 had silently filled 2."""
    if not isinstance(fill, numbers.Real):
        raise ValueError(f"fill must be a number, got {type(fill).__name__}")
    if dtype.is_floating_point or dtype.is_complex:
        return
    low, high = (0, 1) if dtype == torch.bool else (torch.iinfo(dtype).min, torch.iinfo(dtype).max)
    if not (math.isfinite(fill) and fill == int(fill) and low <= fill <= high):
        raise ValueError(
            f"fill must fit values of {dtype}: a whole number in [{low}, {high}], got {fill!r}"
        )


def left_align(
    emissions: Tensor,
    tags: Tensor | None = None,
    mask: Tensor | None = None,
    ignore_index: int = -100,
) -> LeftAligned:
    """Each row's kept tokens moved to the front, in order, and the rows without one
    dropped: a batch a chain reads (its mask left-aligned, ``mask[:, 0]`` all True).

    A token is kept where ``mask`` (``[B, T]``, bool or integer 0/1) is True and ``tags``
    (``[B, T]``, integer) is not ``ignore_index``: a [CLS] or sub-word pieces tagged -100,
    a row of padding alone. ``emissions`` is ``[B, T, *]``: a chain's potentials, or any
    per-token input (a tagger's words ``[B, T]``). Everything stays on the device of
    ``emissions``, in its dtype (the tags in theirs). When nothing moves (every row keeps a
    prefix of its tokens, its first one included), ``emissions`` and ``tags`` (on that
    device) are returned as given, not copied; else they are indexed once. A batch whose
    every row is padding gives ``B' = 0``, which the chain functions and the inference of
    ``ChainTemperature`` and the taggers take (empty results, which
    :meth:`LeftAligned.restore` fills with ``fill``), so a loop over batches runs through
    it; a fit refuses it, having nothing to fit. A batch of ``T = 0`` (every row empty)
    goes the same way: no row keeps a token, and the aligned batch is one step wide
    (``[0, 1, *]``, as a chain needs ``T >= 1``), whose results ``restore`` gives back
    as ``[B, 0, *]``.

    Host synchronisations: one, how many rows keep a token (the number of rows returned
    depends on it) and whether any token moves; two with an integer mask, whose values (0
    and 1) are read first.

    Example:
        >>> from calib_metrics.models import left_align
        >>> tags = torch.tensor([[-100, 2, -100, 1], [-100, -100, -100, -100], [0, 1, 2, 0]])
        >>> aligned = left_align(torch.randn(3, 4, 3), tags)
        >>> aligned.tags.tolist()
        [[2, 1, -100, -100], [0, 1, 2, 0]]
        >>> aligned.mask.int().tolist()
        [[1, 1, 0, 0], [1, 1, 1, 1]]
        >>> aligned.rows.tolist(), aligned.positions[0].tolist()
        ([0, 2], [1, 3, 0, 2])
        >>> unigram = torch.rand(2, 4, 3)  # e.g. marginals(...).unigram of the aligned batch
        >>> aligned.restore(unigram).shape
        torch.Size([3, 4, 3])
    """
    keep, tags = _kept(emissions, tags, mask, ignore_index)
    batch, length = keep.shape
    if length == 0:  # no token: an aligned batch of one step, which a chain takes
        keep = keep.new_zeros(batch, 1)
    hole = (keep[:, 1:] & ~keep[:, :-1]).any()  # a token kept after one left out
    # The host synchronisation: B' is data.
    kept_rows, moves = torch.stack([keep.any(1).sum(), hole.long()]).tolist()
    if kept_rows == batch and not moves and length:  # every row a prefix, its first kept
        rows = torch.arange(batch, device=keep.device)
        positions = torch.arange(length, device=keep.device).expand(batch, length)
        return LeftAligned(emissions, tags, keep, rows, positions, batch, length)
    # The rows that keep a token, in order: a stable sort, whose length is known.
    rows = (~keep.any(1)).to(torch.uint8).argsort(stable=True)[:kept_rows]
    kept = keep[rows]
    positions = (~kept).to(torch.uint8).argsort(dim=1, stable=True)  # kept first, in order
    moved = rows[:, None], positions
    moved_tags = None if tags is None else tags[moved]
    return LeftAligned(
        emissions[moved], moved_tags, kept.gather(1, positions), rows, positions, batch, length
    )


def _kept(
    emissions: Tensor, tags: Tensor | None, mask: Tensor | None, ignore_index: int
) -> tuple[Tensor, Tensor | None]:
    """The tokens to keep, ``[B, T]`` bool on the device of ``emissions``, and the tags
    there; the arguments' types, layouts and shapes checked."""
    check_dense_tensors(emissions=emissions, tags=tags, mask=mask)  # before any shape is read
    if not isinstance(emissions, Tensor) or emissions.dim() < 2:
        got = tuple(emissions.shape) if isinstance(emissions, Tensor) else type(emissions).__name__
        raise ValueError(f"emissions must be a [B, T, *] tensor, got {got}")
    check_not_meta(emissions, "emissions")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        raise ValueError(f"ignore_index must be an int, got {ignore_index!r}")
    shape, device = tuple(emissions.shape[:2]), emissions.device
    keep = torch.ones(shape, dtype=torch.bool, device=device)
    for name, given in (("tags", tags), ("mask", mask)):
        if given is None:
            continue
        if not isinstance(given, Tensor) or tuple(given.shape) != shape:
            got = tuple(given.shape) if isinstance(given, Tensor) else type(given).__name__
            raise ValueError(f"{name} must be [B, T] = {shape}, got {got}")
        check_not_meta(given, name)
    if tags is not None:
        as_indices(tags, "tags")  # an integer dtype, kept as given
        tags = tags.to(device)
        keep = tags != ignore_index
    if mask is not None:
        check_mask_dtype(mask)
        if mask.dtype != torch.bool:  # a bool mask has nothing to read
            check_mask_flags(bool(mask_not_binary(mask)), False, False)
        keep = keep & mask.to(device=device, dtype=torch.bool)
    return keep, tags
