"""Kernels behind :mod:`calib_metrics.models.coref`: alias-method draws and entity roots.

Internal: :func:`~calib_metrics.models.coref.sample_antecedents` and
:func:`~calib_metrics.models.coref.entity_roots` check their arguments and call these.

**Draws** use Walker's alias method. Mention ``i`` has ``K = i + 1`` choices; its row is
cut into ``K`` equal columns, column ``c`` keeps a draw with probability ``prob[c]`` and
otherwise hands it to ``alias[c]``, chosen so that every choice ``j`` gets exactly
``P(a_i = j)`` (up to float64 rounding, ~1e-15). One float64 uniform ``u`` per draw,
taken sample-major from the generator: ``x = u * K``, column ``c = floor(x)``, and the
draw is ``c`` if ``x < c + prob[c]`` else ``alias[c]``: two gathers and a comparison, no
search, at any document length. A zero-probability choice keeps nothing
(``prob = 0``) and is no alias, so it is never drawn.

The tables are built for all rows at once, without a loop over choices, by Vose's
sweep written as a merge (Hübschle-Schneider & Sanders, "Parallel weighted random
sampling", 2019): with ``w = K * P`` the *light* columns (``w <= 1``) have deficits
``1 - w`` and the *heavy* ones excesses ``w - 1``, each in column order with prefix sums
``D`` and ``E``. The sweep gives a light column the first heavy column whose ``E``
exceeds the light's ``D`` before it; a heavy column keeps ``1 - (D* - E)``, ``D*`` the
smallest ``D >= E`` (the deficits aliased at or before it: a scatter-add and a prefix
sum), and hands the rest to the next heavy column (one ``searchsorted`` finds both kinds
of alias). The build is some 30 passes over the ``B * N * N`` entries, so
:func:`prepare` uses the tables from as many samples as mentions; fewer samples search
the cumulative probabilities (``torch.searchsorted``, a binary search per draw, the same
uniforms).

**Roots.** Pointer jumping, ``r = r[r]``, on ping-pong buffers, a cache-sized block of
rows at a time, stopping a block once a round changes nothing (CPU).

Example:
    >>> import torch
    >>> probs = torch.tensor([[[1.0, 0, 0], [0.25, 0.75, 0], [0.5, 0.25, 0.25]]],
    ...                      dtype=torch.float64)
    >>> a = draw(tables(probs.clone()), 4000, torch.Generator().manual_seed(0))
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

from calib_metrics.functional.errors import check_flag
from calib_metrics.models.linear_chain import last_positive

__all__ = ["Tables", "cumulative", "draw", "prepare", "roots", "tables"]

# Draws handled at once on CPU: the chunk's working buffers (~30 bytes a draw) stay in L2.
_CHUNK_DRAWS = 1 << 15
# Table entries built at once: bounds the construction's temporaries (~60 bytes an entry).
_BUILD_ENTRIES = 1 << 18
# Draws per torch.searchsorted call (inverse-CDF path): each row's many searches then run
# back to back.
_SEARCH_DRAWS = 1 << 22
# Elements per block of rows in the pointer jumping.
_ROOT_BLOCK = 1 << 15


class Tables(NamedTuple):
    """The alias tables of a batch of antecedent distributions, flat over (row, column).

    Row ``(b, i)``, column ``c`` sits at ``base[b, i] + c``.
    """

    threshold: Tensor  # float64 [B * N * N]: c + prob[c]; a draw x = u * K stays if x < it
    shift: Tensor  # int32 [B * N * N]: alias[c] - c, where column c sends what it does not keep
    base: Tensor  # [B, N] int32 (int64 from 2 ** 31 entries): (b * N + i) * N
    width: Tensor  # float64 [N]: K = i + 1, the choices of mention i


def prepare(probs: Tensor, n_samples: int) -> Tables | Tensor:
    """What :func:`draw` needs for ``n_samples`` samples of ``probs`` (overwritten).

    The alias tables cost some 30 passes over the ``B * N * N`` probabilities and save
    a binary search per draw, so they pay once there are as many samples as mentions
    (``n_samples >= N``); fewer samples search the cumulative probabilities instead.
    """
    return tables(probs) if n_samples >= probs.shape[-1] else cumulative(probs)


def cumulative(probs: Tensor) -> Tensor:
    """Cumulative ``probs`` ``[B, N, N]`` (in place), normalised by each row's total and
    +inf from the row's last choice of positive probability on (at ``j = i`` at the latest).

    A uniform in ``[0, 1)`` then never passes that choice, whatever the rounding of the
    prefix sums; zero-probability choices before it are flat steps, which the search
    (the first index whose value exceeds the uniform) skips: a zero-probability choice
    (NEW included) is never drawn.
    """
    beyond = torch.arange(probs.shape[-1], device=probs.device) >= last_positive(probs)[..., None]
    cdf = probs.cumsum_(-1)
    # The totals are copied out before the division: read from the tensor being divided,
    # a row split between threads (or GPU blocks) could be divided in part by its own
    # last entry already overwritten with 1.
    cdf /= cdf[..., -1:].clone()
    return cdf.masked_fill_(beyond, float("inf"))


def tables(probs: Tensor) -> Tables:
    """The alias tables of ``probs`` ``[B, N, N]`` float64 (rows sum to 1, 0 at ``j > i``).

    Overwrites ``probs`` (its storage becomes the thresholds). No host synchronisation.
    Mentions are built in groups of rows that see only the columns they can choose (the
    first half of the mentions, then blocks of at most ``_BUILD_ENTRIES`` entries).
    """
    b, n, _ = probs.shape
    device = probs.device
    shift = torch.zeros(probs.shape, dtype=torch.int32, device=device)
    first = 0
    while first < n:
        last = first + max(1, _BUILD_ENTRIES // max(1, b * n))
        last = min(n, last, (n + 1) // 2) if first == 0 else min(n, last)
        width = torch.arange(first + 1, last + 1, device=device)
        _build(probs[:, first:last, :last], width, shift[:, first:last, :last])
        first = last
    index = torch.int32 if b * n * n < 2**31 else torch.long
    base = torch.arange(b * n, dtype=index, device=device).mul_(n).view(b, n)
    width = torch.arange(1, n + 1, dtype=probs.dtype, device=device)
    return Tables(probs.view(-1), shift.view(-1), base, width)


def _build(rows: Tensor, width: Tensor, shift: Tensor) -> None:
    """Alias tables of ``rows`` ``[..., R, N]`` with ``width`` ``[R]`` choices, in place.

    ``rows`` becomes ``c + prob[c]`` and ``shift`` ``alias[c] - c`` (see the module docs).
    A heavy column whose excess is too small to raise ``E`` in float64 (under one ulp of
    ``E``) keeps its whole column instead, losing that excess (< 2.3e-16 of ``K``).
    """
    n = rows.shape[-1]
    col = torch.arange(n, device=rows.device)
    w = rows.mul_(width[:, None])  # 0 past the row's choices
    deficit = torch.sub(1, w).clamp_(min=0).mul_(col < width[:, None])  # lights' 1 - w
    e_sum = torch.sub(w, 1).clamp_(min=0).cumsum_(-1)  # E: prefix sums of the excesses
    query = deficit.cumsum(-1).sub_(deficit)  # a light's D before it
    # The heavy columns: where E rises. A light's alias is the first of them whose E
    # passes the light's D before it, a heavy column's the next one: both the first
    # column whose E exceeds a query. E is searched as +inf from the last heavy column
    # on, so that column catches what rounding leaves over and is its own alias; a row
    # without a heavy column (every w = 1 up to rounding) aliases to column 0.
    rises = torch.empty(rows.shape, dtype=torch.bool, device=rows.device)
    torch.gt(e_sum[..., :1], 0, out=rises[..., :1])
    torch.gt(e_sum[..., 1:], e_sum[..., :-1], out=rises[..., 1:])
    capped = e_sum.masked_fill(e_sum >= e_sum[..., -1:], float("inf"))
    alias = torch.searchsorted(capped, torch.where(rises, e_sum, query, out=query), right=True)
    # A heavy column's D*, the smallest D >= its E: the deficits of the lights aliased
    # at or before it, summed (D and the alias columns both grow along the row).
    reach = query.zero_().scatter_add_(-1, alias, deficit).cumsum_(-1)
    kept = e_sum.sub_(reach).add_(1).clamp_(0, 1)
    torch.sub(alias, col, out=shift)
    torch.where(rises, kept, w.clamp_(max=1), out=rows).add_(col)


def draw(t: Tables | Tensor, n_samples: int, generator: torch.Generator | None) -> Tensor:
    """``Long [S, B, N]``: one draw per float64 uniform. No host synchronisation.

    ``t`` is :func:`tables` (the alias rule) or :func:`cumulative` (the first index
    whose cumulative probability exceeds the uniform). The uniforms are taken
    sample-major, so a generator gives the same draws whatever the chunking (on CPU the
    alias draws go a cache-sized chunk of samples at a time).
    """
    if isinstance(t, Tensor):
        return _search_draws(t, n_samples, generator)
    b, n = t.base.shape
    device = t.base.device
    out = torch.empty((n_samples, b, n), dtype=torch.long, device=device)
    if out.numel() == 0:
        return out
    chunk = max(1, _CHUNK_DRAWS // (b * n)) if device.type == "cpu" else n_samples
    shape = (min(chunk, n_samples), b, n)
    x = torch.empty(shape, dtype=t.threshold.dtype, device=device)
    bound = torch.empty_like(x)
    column = torch.empty(shape, dtype=t.shift.dtype, device=device)
    index = torch.empty(shape, dtype=t.base.dtype, device=device)
    shift = torch.empty_like(column)
    moves = torch.empty(shape, dtype=torch.bool, device=device)
    for first in range(0, n_samples, chunk):
        c = min(chunk, n_samples - first)
        u = torch.rand((c, b, n), generator=generator, dtype=x.dtype, device=x.device, out=x[:c])
        u.mul_(t.width)  # x = u * K < K, since u <= 1 - 2 ** -53
        col = column[:c]
        col.copy_(u)  # floor: x >= 0
        flat = torch.add(col, t.base, out=index[:c]).view(-1)
        torch.index_select(t.threshold, 0, flat, out=bound[:c].view(-1))
        torch.ge(u, bound[:c], out=moves[:c])
        torch.index_select(t.shift, 0, flat, out=shift[:c].view(-1))
        torch.addcmul(col, moves[:c], shift[:c], out=out[first : first + c])
    return out


def _search_draws(cdf: Tensor, n_samples: int, generator: torch.Generator | None) -> Tensor:
    b, n, _ = cdf.shape
    out = torch.empty((n_samples, b, n), dtype=torch.long, device=cdf.device)
    chunk = max(1, _SEARCH_DRAWS // max(1, b * n))
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
    ``in_place`` and ``check`` must be True or False (a ValueError otherwise).
    """
    # A non-empty string is truthy: in_place="no" had overwritten the caller's tensor.
    check_flag("in_place", in_place)
    check_flag("check", check)
    n = antecedents.shape[-1]
    # Contiguous whatever the input's strides (empty_like would copy a permutation's):
    # the blocks below are views of it.
    out = (
        antecedents
        if in_place
        else torch.empty_like(antecedents, memory_format=torch.contiguous_format)
    )
    if out.numel() == 0:
        return out
    rows = antecedents.reshape(-1, n)
    flat_out = out.view(-1, n)
    on_cpu = out.device.type == "cpu"
    block = max(1, _ROOT_BLOCK // n) if on_cpu else rows.shape[0]
    spare = torch.empty((min(block, rows.shape[0]), n), dtype=torch.long, device=out.device)
    position = torch.arange(n, device=out.device)
    # After k rounds r = a^(2^k); chains have at most N - 1 links.
    rounds = math.ceil(math.log2(n)) if n > 1 else 0
    for first in range(0, rows.shape[0], block):
        c = min(block, rows.shape[0] - first)
        a, result = rows[first : first + c], flat_out[first : first + c]
        if check:
            _check_block(a, position, spare[:c])
        _jump(a, result, spare[:c], rounds, on_cpu, in_place)
    return out


def _jump(a: Tensor, result: Tensor, spare: Tensor, rounds: int, early: bool, same: bool):
    """``result = a^(2^rounds)`` by gathers alternating between ``spare`` and ``result``.

    ``same``: ``result`` is ``a``'s memory (then the first round goes to ``spare``). With
    ``early``, stops once a round changes nothing: pointers only move backwards, so a
    round changes nothing exactly when it leaves the sum of the pointers unchanged.
    """
    src, total = a, None
    for k in range(rounds):
        dst = spare if src is result or (k == 0 and same) else result
        torch.gather(src, -1, src, out=dst)
        src = dst
        if early and 2 <= k < rounds - 1:
            total, before = dst.sum(), total
            if before is not None and bool(total == before):  # a host synchronisation
                break
    if src is not result:
        result.copy_(src)


def _check_block(a: Tensor, position: Tensor, scratch: Tensor) -> None:
    # 0 <= a <= i exactly when a and i - a are both >= 0, i.e. when their OR is.
    torch.sub(position, a, out=scratch).bitwise_or_(a)
    if bool(scratch.min() < 0):  # a host synchronisation
        raise ValueError("antecedents must satisfy 0 <= a[..., i] <= i (i means NEW)")
