"""Kernels behind :mod:`calib_metrics.models.coref`: inverse-CDF draws and entity roots.

Internal: :func:`~calib_metrics.models.coref.sample_antecedents` and
:func:`~calib_metrics.models.coref.entity_roots` check their arguments and call these.

**Draws.** ``a[s, b, i]`` is ``searchsorted(cdf[b, i], u[s, b, i], right=True)`` for one
float64 uniform per draw, the uniforms taken sample-major from the generator, so a
generator gives the same samples whatever the chunking, and the same samples as a plain
binary search. For documents of up to :data:`TABLE_MAX_MENTIONS` mentions the search is
a bucket table (Chen & Asau's indexed search, refined): each mention's ``[0, 1)`` is cut
into ``M`` equal buckets, ``M`` the next power of two ``>= N``, so that ``floor(u * M)``
and ``floor(cdf * M)`` are exact. A bucket stores how many boundaries lie below it and
its first and last boundary; a draw reads its bucket and compares ``u`` with those two.
That is exactly the searched index unless ``u`` falls strictly between two boundaries of
one bucket (3.3 % of the draws of the benchmark's 200-mention document); those
draws come out negative and take a short branch-free binary search. The table holds
``B * N * (M + 1)`` entries of 20 bytes, at most about 5x the float64 ``cdf``. Longer
documents use ``torch.searchsorted`` (measured: the table no longer pays at 800 mentions).

**Roots.** Pointer jumping, ``r = r[r]``, on ping-pong buffers, a cache-sized block of
rows at a time, stopping a block once a round changes nothing (CPU).

Working buffers are chunk-sized and reused across chunks: drawing all the uniforms at
once (one more ``[S, B, N]`` float64 temporary) measured slower, through page faults.

Example:
    >>> import torch
    >>> cdf = torch.tensor([[[float("inf")] * 3, [0.25, float("inf"), float("inf")],
    ...                      [0.5, 0.75, float("inf")]]], dtype=torch.float64)
    >>> a = draw(cdf, 4000, torch.Generator().manual_seed(0))
    >>> a.shape, round((a[:, 0, 2] == 1).double().mean().item(), 1)
    (torch.Size([4000, 1, 3]), 0.2)
    >>> roots(torch.tensor([[0, 0, 1, 3, 2]]))
    tensor([[0, 0, 0, 3, 0]])
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = ["TABLE_MAX_MENTIONS", "Tables", "draw", "roots", "tables"]

# Documents longer than this draw by torch.searchsorted instead of the bucket table.
TABLE_MAX_MENTIONS = 512
# Draws handled at once: the chunk's working buffers (~40 bytes a draw) stay in L2.
_CHUNK_DRAWS = 1 << 15
# Draws per torch.searchsorted call (long documents): each row's many searches then run
# back to back (measured at N = 800: 37 ms for 1,000 samples against 48 ms at 2 ** 15).
_SEARCH_DRAWS = 1 << 22
# Bits of a table entry that hold the bucket's start (N <= 2 ** _START_BITS).
_START_BITS = 10
# Owed by a draw past a bucket's first boundary and paid back past its last: a draw
# strictly between them comes out negative and is finished by a binary search.
_ESCAPE = 1 << 20
# Elements per block of rows in the pointer jumping.
_ROOT_BLOCK = 1 << 15


class Tables(NamedTuple):
    """The bucket table of a batch's cumulative distributions, flat over (row, bucket).

    Row ``(b, i)``, bucket ``floor(u * M)`` sits at ``base[b, i] + bucket`` (a row has
    ``M + 1`` entries; the last is only a guard). A bucket with ``c`` boundaries stores
    its first and last boundary and ``entry = start + (jump << _START_BITS)``, ``start``
    the row's boundaries below it and ``jump = c - 1 + _ESCAPE`` (0 if ``c = 0``). A draw
    is ``start + [u >= first] * (1 - _ESCAPE) + [u >= last] * jump``: ``start`` below the
    first boundary, ``start + c`` from the last on, and negative strictly between them
    (only when ``c >= 2``), where a binary search finishes it.
    """

    cdf: Tensor  # [B, N, N] float64, +inf at j >= i
    buckets: int  # M, a power of two
    base: Tensor  # [B, N] int32: (b * N + i) * (M + 1)
    entry: Tensor  # int32 [B * N * (M + 1)]
    first: Tensor  # float64 [B * N * (M + 1)]
    last: Tensor  # float64 [B * N * (M + 1)]
    widest: int  # most boundaries in a bucket if some bucket holds two or more, else 0


def tables(cdf: Tensor) -> Tables | None:
    """The bucket table of ``cdf`` ``[B, N, N]``; None above :data:`TABLE_MAX_MENTIONS` or empty.

    One host synchronisation: the most boundaries a bucket holds.
    """
    b, n, _ = cdf.shape
    if n > min(TABLE_MAX_MENTIONS, (1 << _START_BITS) - 1) or cdf.numel() == 0:
        return None
    m = 1 << (n - 1).bit_length()  # buckets: the next power of two >= N
    rows = cdf.view(b * n, n)
    # Bucket of every boundary (exact: m is a power of two); +inf (j >= i) and a
    # boundary at 1 go to the extra column m, which no draw reads.
    bins = torch.mul(rows, m).floor_().clamp_(max=m).long()
    count = torch.zeros((b * n, m + 1), dtype=torch.int32, device=cdf.device)
    count.scatter_add_(1, bins, torch.ones_like(bins, dtype=torch.int32))
    start = count.cumsum(1, dtype=torch.int32).sub_(count)
    # The boundaries at start and start + count - 1 (clamped into the row): the first
    # and last of the bucket. An empty bucket reads a later boundary as its first, so
    # its draws stay at start (its jump is 0).
    offset = torch.arange(0, b * n * n, n, dtype=torch.int32, device=cdf.device)[:, None]
    flat = cdf.view(-1)
    first = flat.index_select(0, (start.clamp(max=n - 1) + offset).view(-1))
    last_at = (start + count).sub_(1).clamp_(0, n - 1).add_(offset)
    last = flat.index_select(0, last_at.view(-1))
    widest = int(count.max())  # a host synchronisation
    # c - 1 + _ESCAPE, or 0 when the bucket is empty.
    jump = count.clamp(max=1).mul_(_ESCAPE - 1).add_(count)
    entry = start.add_(jump.bitwise_left_shift_(_START_BITS))
    base = torch.arange(b * n, dtype=torch.int32, device=cdf.device).view(b, n).mul_(m + 1)
    return Tables(cdf, m, base, entry.view(-1), first, last, widest if widest >= 2 else 0)


def _lookup(t: Tables, u: Tensor, out: Tensor, work: dict[str, Tensor]) -> None:
    """Table draws for uniforms ``u`` ``[c, B, N]`` into ``out`` (int32, same shape)."""
    index, value, entry, above = work["index"], work["value"], work["entry"], work["above"]
    # u < 1, so the bucket is < M (u = 1 would read the row's guard entry).
    torch.mul(u, t.buckets, out=value)
    index.copy_(value)
    index += t.base
    flat = index.view(-1)
    torch.index_select(t.entry, 0, flat, out=entry.view(-1))
    torch.bitwise_and(entry, (1 << _START_BITS) - 1, out=out)
    entry.bitwise_right_shift_(_START_BITS)  # the jump
    torch.index_select(t.first, 0, flat, out=value.view(-1))
    torch.ge(u, value, out=above)
    out.add_(above, alpha=1 - _ESCAPE)
    torch.index_select(t.last, 0, flat, out=value.view(-1))
    torch.ge(u, value, out=above)
    out.addcmul_(above, entry)


def first_pass(t: Tables, u: Tensor) -> Tensor:
    """Table draws of uniforms ``u`` ``[c, B, N]`` before the binary search (int32)."""
    found = torch.empty(u.shape, dtype=torch.int32, device=u.device)
    _lookup(t, u, found, _workspace(u.shape, u.dtype, u.device))
    return found


def _workspace(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> dict:
    """The buffers :func:`_lookup` writes, for a chunk of ``shape`` uniforms."""
    return {
        "index": torch.empty(shape, dtype=torch.int32, device=device),
        "value": torch.empty(shape, dtype=dtype, device=device),
        "entry": torch.empty(shape, dtype=torch.int32, device=device),
        "above": torch.empty(shape, dtype=torch.int32, device=device),
    }


def search(t: Tables, u: Tensor) -> Tensor:
    """``Long``: ``searchsorted(cdf[b, i], u[s, b, i], right=True)`` by the table."""
    out = first_pass(t, u).long()
    where = (out < 0).view(-1).nonzero().squeeze(-1)
    if where.numel():
        _finish(t, out, where, u.reshape(-1).index_select(0, where))
    return out


def draw(
    cdf: Tensor, n_samples: int, generator: torch.Generator | None, t: Tables | None = None
) -> Tensor:
    """``Long [S, B, N]``: ``searchsorted(cdf[b, i], u, right=True)`` per uniform ``u``.

    ``t`` may pass :func:`tables` of ``cdf`` already built. Host synchronisations: with
    the table, the one of :func:`tables` and one per chunk of draws (the count left to
    the binary search); none otherwise.
    """
    b, n, _ = cdf.shape
    out = torch.empty((n_samples, b, n), dtype=torch.long, device=cdf.device)
    if out.numel() == 0:
        return out
    t = tables(cdf) if t is None else t
    if t is None:
        return _searchsorted_draws(cdf, out, max(1, _SEARCH_DRAWS // (b * n)), generator)
    chunk = max(1, _CHUNK_DRAWS // (b * n))
    shape = (min(chunk, n_samples), b, n)
    uniforms = torch.empty(shape, dtype=cdf.dtype, device=cdf.device)
    work = _workspace(shape, cdf.dtype, cdf.device)
    found = torch.empty(shape, dtype=torch.int32, device=cdf.device)
    left: list[tuple[Tensor, Tensor]] = []
    for first in range(0, n_samples, chunk):
        c = min(chunk, n_samples - first)
        # Sample-major uniforms: chunks of one stream equal one big draw on CPU.
        u = torch.rand((c, b, n), generator=generator, dtype=cdf.dtype, out=uniforms[:c])
        _lookup(t, u, found[:c], {k: v[:c] for k, v in work.items()})
        out[first : first + c].copy_(found[:c])
        if t.widest:
            where = (found[:c] < 0).view(-1).nonzero().squeeze(-1)  # a host synchronisation
            if where.numel():
                left.append((where + first * b * n, u.view(-1).index_select(0, where)))
    if left:
        where, u = (torch.cat(parts) for parts in zip(*left))
        _finish(t, out, where, u)
    return out


def _finish(t: Tables, out: Tensor, where: Tensor, u: Tensor) -> None:
    """Finish the draws left negative (at ``where``, uniforms ``u``) by a binary search.

    Such a draw came out as ``start + 1 - _ESCAPE``; its answer lies in
    ``[start, start + t.widest]`` (its bucket's boundaries are among the ``t.widest``
    from ``start`` on, and those past the bucket exceed ``u``). The search is branch-free
    and reads the rows with ``t.widest`` entries of +inf appended, so it needs no clamp.
    """
    flat = out.view(-1)
    _, b, n = out.shape
    width = n + t.widest
    padded = torch.full((b * n, width), float("inf"), dtype=t.cdf.dtype, device=u.device)
    padded[:, :n] = t.cdf.view(b * n, n)
    # The searched range is [base, base + size - 1], base in flat coordinates of padded.
    row = (where % (b * n)) * width
    base = flat.index_select(0, where).add_(_ESCAPE - 1).add_(row)
    size = t.widest + 1
    while size > 1:
        half = size // 2
        beyond = padded.view(-1).index_select(0, base + (half - 1)) <= u
        base += beyond.long().mul_(half)
        size -= half
    flat.index_copy_(0, where, base.sub_(row))


def _searchsorted_draws(
    cdf: Tensor, out: Tensor, chunk: int, generator: torch.Generator | None
) -> Tensor:
    n_samples, b, n = out.shape
    for first in range(0, n_samples, chunk):
        c = min(chunk, n_samples - first)
        u = torch.rand((c, b, n), generator=generator, dtype=cdf.dtype, device=cdf.device)
        # Mention-major queries: each row's searches run back to back, in cache.
        a = torch.searchsorted(cdf, u.permute(1, 2, 0).contiguous(), right=True)
        out[first : first + c] = a.permute(2, 0, 1)
    return out


def roots(antecedents: Tensor, in_place: bool = False, check: bool = True) -> Tensor:
    """Entity roots of ``Long [..., N]`` antecedents by pointer jumping.

    ``in_place`` overwrites ``antecedents`` (contiguous) with the roots. With ``check``
    it raises ValueError unless ``0 <= a[..., i] <= i``. On CPU it works a cache-sized
    block of rows at a time, checks each block before jumping and stops a block once a
    round changes nothing (host synchronisations are free there); elsewhere it checks all
    rows at once (one host synchronisation) and runs the ``ceil(log2 N)`` rounds.
    """
    n = antecedents.shape[-1]
    out = antecedents if in_place else torch.empty_like(antecedents)
    if out.numel() == 0:
        return out
    rows = antecedents.reshape(-1, n)
    flat_out = out.view(-1, n)
    on_cpu = out.device.type == "cpu"
    block = max(1, _ROOT_BLOCK // n) if on_cpu else rows.shape[0]
    x = torch.empty((min(block, rows.shape[0]), n), dtype=torch.long, device=out.device)
    y = torch.empty_like(x)
    beyond = torch.empty_like(x, dtype=torch.bool)
    position = torch.arange(n, device=out.device)
    # After k rounds r = a^(2^k); chains have at most N - 1 links.
    rounds = math.ceil(math.log2(n)) if n > 1 else 0
    for first in range(0, rows.shape[0], block):
        c = min(block, rows.shape[0] - first)
        a, result = rows[first : first + c], flat_out[first : first + c]
        if check:
            _check_block(a, position, beyond[:c])
        _jump(a, result, (x[:c], y[:c]), rounds, on_cpu)
    return out


def _jump(a: Tensor, result: Tensor, spare: tuple[Tensor, Tensor], rounds: int, early: bool):
    """``result = a^(2^rounds)`` by gathers into ``spare``, the last one into ``result``.

    ``result`` may be ``a`` itself: only a round that reads a spare buffer writes it.
    With ``early``, stops once a round changes nothing: pointers only move backwards, so
    a round changes nothing exactly when it leaves the sum of the pointers unchanged.
    """
    src, total = a, None
    for k in range(rounds):
        dst = result if 0 < k == rounds - 1 else spare[k % 2]
        torch.gather(src, -1, src, out=dst)
        src = dst
        if early and 2 <= k < rounds - 1:
            total, before = dst.sum(), total
            if before is not None and bool(total == before):  # a host synchronisation
                break
    if src is not result:
        result.copy_(src)


def _check_block(a: Tensor, position: Tensor, scratch: Tensor) -> None:
    beyond = torch.gt(a, position, out=scratch).view(torch.uint8).max()
    if bool(beyond | (a.min() < 0)):  # a host synchronisation
        raise ValueError("antecedents must satisfy 0 <= a[..., i] <= i (i means NEW)")
