"""Antecedent-ranking coreference: batched sampling of clusterings and exact pairwise marginals.

The model of the paper's §5 (Durrett & Klein 2013 as independent softmaxes): every
mention ``i`` picks an antecedent ``a_i`` among the earlier mentions ``j < i`` or NEW,
independently of the others, and the entities are the connected components of the
antecedent graph. Scores follow one convention everywhere (DESIGN.md):

* ``scores[b, i, j]`` for ``j < i`` scores "the antecedent of mention ``i`` is ``j``";
* ``scores[b, i, i]`` scores NEW (``i`` starts an entity);
* entries ``j > i`` are ignored.

An antecedent vector uses the same indexing: ``a[..., i] = j <= i``, with ``j == i``
meaning NEW. Because every pointer goes backwards, the entity of a mention is named by
its first mention (its *root*), found by pointer jumping in ``O(log N)`` gathers.

``mask`` (``[B, N]`` bool or integer 0/1, True for real mentions, normally left-aligned;
its values are checked with the distribution's own host read) marks padding:
a padded mention always takes NEW, so it is a singleton, and no real mention ever
attaches to it.

Example:
    >>> import torch
    >>> scores = torch.tensor([[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 3.0, 0.0]]])
    >>> coreference_marginals(scores).round(decimals=3)
    tensor([[[1.0000, 0.8810, 0.8460],
             [0.8810, 1.0000, 0.9490],
             [0.8460, 0.9490, 1.0000]]])
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.errors import (
    MOST_SAMPLES,
    as_int,
    check_computable_float,
    check_dense_tensors,
    check_generator,
    check_not_meta,
)
from calib_metrics.models.coref_sampler import draw, prepare, roots
from calib_metrics.models.linear_chain import (
    as_indices,
    check_mask_dtype,
    check_mask_flags,
    default_compute_dtype,
    mask_not_binary,
)

__all__ = [
    "antecedent_log_probs",
    "clusters",
    "coreference_marginals",
    "entity_roots",
    "most_probable_antecedents",
    "sample_antecedents",
    "sample_entity_roots",
]

# Elements held at once by the pairwise comparison of sampled roots; bounds memory
# whatever S, B and N are.
_PAIR_CHUNK_ELEMENTS = 1 << 24
# Row-block size of the exact dynamic program: large enough that the off-block work is
# matrix-matrix (BLAS-3), small enough that the in-block loop stays cheap.
_DP_BLOCK = 64


class _Checked(NamedTuple):
    mask: Tensor | None  # bool
    not_binary: Tensor | None  # 0-dim bool on the device: an integer mask not 0/1


def _check_scores(scores: Tensor, mask: Tensor | None) -> _Checked:
    check_dense_tensors(scores=scores, mask=mask)  # before any shape is read
    if not isinstance(scores, Tensor):
        raise ValueError(f"scores must be a torch.Tensor, got {type(scores).__name__}")
    if scores.ndim != 3:
        raise ValueError(
            f"scores must have shape [B, N, N] (3 dims), got {scores.ndim} dims "
            f"with shape {tuple(scores.shape)}"
        )
    if scores.shape[1] != scores.shape[2]:
        raise ValueError(
            f"scores must be square in its last two dims [B, N, N], got {tuple(scores.shape)}"
        )
    if not scores.is_floating_point():
        raise ValueError(f"scores must be a floating-point tensor, got dtype {scores.dtype}")
    check_computable_float(scores, "scores")
    check_not_meta(scores, "scores")
    if mask is None:
        return _Checked(None, None)
    if not isinstance(mask, Tensor):
        raise ValueError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if tuple(mask.shape) != tuple(scores.shape[:2]):
        raise ValueError(
            f"mask must have shape [B, N] = {tuple(scores.shape[:2])} to match scores "
            f"{tuple(scores.shape)}, got {tuple(mask.shape)}"
        )
    check_not_meta(mask, "mask")
    if mask.device != scores.device:
        raise ValueError(f"mask is on {mask.device} but scores are on {scores.device}")
    check_mask_dtype(mask)  # 0.5 would read as a real mention
    if mask.dtype == torch.bool:
        return _Checked(mask, None)
    # Read with the distribution's own check (:func:`_checked`): no host read of its own.
    return _Checked(mask != 0, mask_not_binary(mask))


def _triangle(n: int, device: torch.device, diagonal: int, upper: bool = False) -> Tensor:
    """``[N, N]`` bool, True where ``j - i <= diagonal`` (``>=`` if ``upper``)."""
    ones = torch.ones((n, n), dtype=torch.bool, device=device)
    return ones.triu_(diagonal) if upper else ones.tril_(diagonal)


def _logits(scores: Tensor, mask: Tensor | None, owned: bool = False) -> Tensor:
    """``scores`` with the forbidden choices at -inf (mask already a bool tensor).

    ``owned=True`` lets it overwrite ``scores`` (a private copy), saving an N x N buffer.
    """
    n = scores.shape[-1]
    earlier = _triangle(n, scores.device, -1)  # [N, N]: j < i
    if mask is None:
        can_attach = earlier.expand(scores.shape)
        forbidden = _triangle(n, scores.device, 1, upper=True)  # j > i
    else:
        # Padding neither attaches nor is attached to.
        can_attach = earlier & mask[:, :, None] & mask[:, None, :]
        forbidden = ~can_attach
        forbidden.diagonal(dim1=-2, dim2=-1).fill_(False)  # NEW stays allowed
    # A mention with no candidate antecedent (the first one, or padding) takes NEW with
    # probability 1 whatever its NEW score, so a -inf there cannot produce NaN. A real
    # mention's NaN or +inf is left in place, for the distribution's check to refuse as
    # it refuses one anywhere else (padding's scores are never read).
    only_new = ~can_attach.any(-1)  # [B, N]
    if owned:
        logits = scores.masked_fill_(forbidden, float("-inf"))
    else:
        logits = scores.masked_fill(forbidden, float("-inf"))
    del forbidden
    new = logits.diagonal(dim1=-2, dim2=-1)
    refused = torch.isnan(new) | torch.isposinf(new)
    if mask is not None:
        refused &= mask
    new.masked_fill_(only_new & ~refused, 0.0)
    return logits


def _checked(distribution: Tensor, not_binary: Tensor | None = None) -> Tensor:
    """``distribution`` (log-probabilities or probabilities), or ValueError if it has NaN
    or the integer mask it came from holds other values than 0 and 1 (one host read)."""
    has_nan = torch.isnan(distribution).any()
    if not_binary is None:
        bad_mask, bad = False, bool(has_nan)
    else:
        bad_mask, bad = torch.stack([not_binary, has_nan]).tolist()
    check_mask_flags(bad_mask, False, False)
    if bad:
        raise ValueError(
            "scores give no valid distribution for some mention: an allowed score "
            "(j <= i) is NaN or +inf, or all of a mention's allowed scores are -inf"
        )
    return distribution


def _log_probs(scores: Tensor, checked: _Checked, owned: bool = False) -> Tensor:
    """Validated-input core of :func:`antecedent_log_probs`."""
    return _checked(_logits(scores, checked.mask, owned).log_softmax(-1), checked.not_binary)


def antecedent_log_probs(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Log-probabilities of each mention's antecedent choice, ``log P(a_i = j | x)``.

    A softmax per mention ``i`` over ``{j < i}`` and NEW (at ``j = i``); entries ``j > i``
    are ``-inf``. A padded mention (``mask`` False) puts all its mass on NEW and real
    mentions never attach to padding.

    Args:
        scores: ``[B, N, N]`` floating-point antecedent scores (see the module docstring).
        mask: optional ``[B, N]`` bool, True for real mentions.

    Returns:
        ``[B, N, N]`` log-probabilities, same dtype and device as ``scores``.

    Example:
        >>> import torch
        >>> scores = torch.zeros(1, 3, 3)
        >>> antecedent_log_probs(scores).exp()
        tensor([[[1.0000, 0.0000, 0.0000],
                 [0.5000, 0.5000, 0.0000],
                 [0.3333, 0.3333, 0.3333]]])
        >>> antecedent_log_probs(scores, mask=torch.tensor([[True, True, False]])).exp()
        tensor([[[1.0000, 0.0000, 0.0000],
                 [0.5000, 0.5000, 0.0000],
                 [0.0000, 0.0000, 1.0000]]])
    """
    checked = _check_scores(scores, mask)
    return _log_probs(scores, checked)


def most_probable_antecedents(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """The most probable antecedent of every mention (NEW is ``i`` itself): ``Long [B, N]``.

    Because the choices are independent, this vector is the joint argmax
    ``argmax_a P(a | x)``; ``entity_roots`` / ``clusters`` of it give the 1-best clustering.
    That is not always the most probable clustering: several antecedent vectors give one
    clustering, and its probability is their sum (mention 2 choosing 0 or 1 when 0 and 1
    corefer). Ties go to the earliest index.

    Example:
        >>> import torch
        >>> scores = torch.tensor([[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, -1.0, 1.0]]])
        >>> most_probable_antecedents(scores)
        tensor([[0, 0, 2]])
    """
    checked = _check_scores(scores, mask)
    if scores.shape[-1] == 0:  # no mentions: no choices (argmax has nothing to reduce)
        return torch.zeros(scores.shape[:-1], dtype=torch.long, device=scores.device)
    return _log_probs(scores, checked).argmax(-1)


def _float64_copy(scores: Tensor) -> Tensor:
    # A private copy even for float64 input, so later steps may work in place.
    return scores.to(torch.float64, copy=True)


def _probabilities(scores: Tensor, checked: _Checked) -> Tensor:
    """``P(a_i = j | x)`` in float64 ``[B, N, N]``, exactly 0 where forbidden or ``j > i``."""
    logits = _logits(_float64_copy(scores), checked.mask, owned=True)
    return _checked(logits.softmax(-1), checked.not_binary)


def sample_antecedents(
    scores: Tensor,
    n_samples: int,
    mask: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Draw ``n_samples`` independent antecedent vectors per document: ``Long [S, B, N]``.

    Every ``a[s, b, i]`` is drawn from ``P(a_i | x)`` (:func:`antecedent_log_probs`), all
    mentions, documents and samples at once by Walker's alias method: one float64
    uniform per draw, taken sample-major from ``generator``, picks one of mention ``i``'s
    ``i + 1`` equal columns and a comparison keeps the column or hands the draw to its
    alias (two gathers, no search; tables built per call without a loop over choices,
    see :mod:`~calib_metrics.models.coref_sampler`), a cache-sized chunk of samples at a
    time on CPU. With fewer samples than mentions the tables do not pay, and each draw
    is instead the first index whose cumulative probability exceeds its uniform
    (``torch.searchsorted``). A generator gives the same samples whatever the chunking.
    Choices of probability 0 are never drawn. Host synchronisation: one, the argument
    check.
    ``a[s, b, i] <= i``; ``i`` means NEW; padded mentions always get ``i``.

    Args:
        scores: ``[B, N, N]`` antecedent scores.
        n_samples: number of samples ``S``: a positive int, NumPy integer or one-element
            integer tensor.
        mask: optional ``[B, N]`` bool, True for real mentions.
        generator: optional ``torch.Generator`` (on the device of ``scores``).

    Example:
        >>> import torch
        >>> scores = torch.tensor([[[0.0, 0.0, 0.0], [5.0, 0.0, 0.0], [0.0, 5.0, 0.0]]])
        >>> g = torch.Generator().manual_seed(0)
        >>> a = sample_antecedents(scores, 1000, generator=g)
        >>> a.shape
        torch.Size([1000, 1, 3])
        >>> bool((a <= torch.arange(3)).all())
        True
        >>> round((a[:, 0, 2] == 1).double().mean().item(), 1)
        1.0
    """
    checked = _check_scores(scores, mask)
    n_samples = as_int("n_samples", n_samples, 1, MOST_SAMPLES)
    check_generator(generator, scores.device)
    with torch.no_grad():
        return draw(prepare(_probabilities(scores, checked), n_samples), n_samples, generator)


def sample_entity_roots(
    scores: Tensor,
    n_samples: int,
    mask: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Sampled clusterings as entity roots: ``Long [S, B, N]``, one call.

    Equal to ``entity_roots(sample_antecedents(scores, n_samples, mask, generator))`` for
    the same generator state (the same draws), but the roots overwrite the draws in
    place and the draws, valid by construction, are not checked again: one ``[S, B, N]``
    buffer instead of two. On CPU that halves the memory the call touches for the first
    time (a fresh buffer of a few MB is mapped, and page-faulted in, anew on every call).
    Host synchronisation: the argument check, and on CPU the early stop of
    :func:`entity_roots`.

    Args:
        scores: ``[B, N, N]`` antecedent scores.
        n_samples: number of samples ``S``: a positive int, NumPy integer or one-element
            integer tensor.
        mask: optional ``[B, N]`` bool, True for real mentions.
        generator: optional ``torch.Generator`` (on the device of ``scores``).

    Returns:
        ``Long [S, B, N]``: ``r[s, b, i]`` is the first mention of mention ``i``'s entity in
        sample ``s``; two mentions corefer in a sample iff their roots are equal.

    Example:
        >>> import torch
        >>> scores = torch.tensor([[[0.0, 0.0, 0.0], [5.0, 0.0, 0.0], [0.0, 5.0, 0.0]]])
        >>> r = sample_entity_roots(scores, 1000, generator=torch.Generator().manual_seed(0))
        >>> r.shape, round((r[:, 0, 2] == 0).double().mean().item(), 1)
        (torch.Size([1000, 1, 3]), 1.0)
    """
    drawn = sample_antecedents(scores, n_samples, mask, generator)
    return roots(drawn, in_place=True, check=False)


def entity_roots(antecedents: Tensor) -> Tensor:
    """The first mention of every mention's entity, by pointer jumping.

    Antecedents point backwards (``a[..., i] <= i``), so following them ends at the
    entity's first mention; ``root = root[root]`` repeated at most ``ceil(log2 N)`` times
    (one ``gather`` each, no loop over mentions or samples) gets there. Works on any
    leading dims and strides, e.g. ``[S, B, N]`` samples or a ``[B, S, N]`` permuted
    view of them; the result is contiguous. On CPU it goes a cache-sized block of rows
    at a time and stops a block early once a round changes nothing; elsewhere it makes
    one host synchronisation (the argument check).

    Args:
        antecedents: integer tensor ``[..., N]`` with ``0 <= a[..., i] <= i``.

    Returns:
        ``Long`` tensor of the same shape; two mentions corefer iff their roots are equal.

    Example:
        >>> import torch
        >>> entity_roots(torch.tensor([0, 0, 2, 1, 3, 5]))
        tensor([0, 0, 2, 0, 0, 5])
    """
    if not isinstance(antecedents, Tensor):
        raise ValueError(f"antecedents must be a torch.Tensor, got {type(antecedents).__name__}")
    check_dense_tensors(antecedents=antecedents)
    if antecedents.ndim < 1:
        raise ValueError("antecedents must have at least one dim [..., N], got a 0-dim tensor")
    check_not_meta(antecedents, "antecedents")
    # roots checks 0 <= a[..., i] <= i as it goes (ValueError otherwise).
    return roots(as_indices(antecedents, "antecedents"))


def clusters(antecedents: Tensor) -> list[list[int]]:
    """One clustering's entities as lists of mention indices.

    Takes one antecedent vector ``[N]`` (a sample, or :func:`most_probable_antecedents`
    of one document) or its :func:`entity_roots`. Entities are ordered by first mention
    and each lists its mentions in document order; singletons are included. For a padded
    document, slice off the padding first (``a[:n]``).

    Example:
        >>> import torch
        >>> clusters(torch.tensor([0, 0, 2, 1, 3, 5]))
        [[0, 1, 3, 4], [2], [5]]
    """
    if isinstance(antecedents, Tensor) and antecedents.ndim != 1:
        raise ValueError(
            f"clusters takes one antecedent vector [N], got shape {tuple(antecedents.shape)}"
        )
    roots = entity_roots(antecedents).tolist()
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(roots):
        groups.setdefault(r, []).append(i)
    return list(groups.values())


def _exact_marginals(logp: Tensor, block: int = _DP_BLOCK) -> Tensor:
    """Exact ``P(i ~ j)`` from float64 log-probabilities ``[B, N, N]``.

    Q[i, j] (j < i) = sum_{k < i} P(a_i = k) Q[k, j] with Q[k, k] = 1, since a_i is
    independent of the earlier choices that decide Q[k, j]. Mentions are taken in row
    blocks I = [s, e): their links to the earlier mentions solve the unit lower
    triangular system (1 - L_II) X = L_I,<s Q_<s,<s (a matrix product and a triangular
    solve), and only the links inside the block need a loop over its rows.
    """
    bsz, n, _ = logp.shape
    # In place: the caller hands over its log-probabilities, saving an N x N buffer.
    links = logp.exp_().tril_(-1)  # P(a_i = k) for k < i; NEW and j > i dropped
    q = torch.zeros_like(links)
    for s in range(0, n, block):
        e = min(s + block, n)
        # inner[t, u] = Q[s+t, s+u]: starts as sum_{k < s} P(a_{s+t} = k) Q[k, s+u] and
        # is completed row by row below; kept contiguous so the loop's products are cheap.
        if s > 0:
            rhs = links[:, s:e, :s] @ q[:, :s, :s]
            x = torch.linalg.solve_triangular(
                -links[:, s:e, s:e], rhs, upper=False, unitriangular=True
            )
            q[:, s:e, :s] = x
            q[:, :s, s:e] = x.transpose(-1, -2)
            inner = links[:, s:e, :s] @ x.transpose(-1, -2)
        else:
            inner = torch.zeros((bsz, e - s, e - s), dtype=q.dtype, device=q.device)
        inner.diagonal(dim1=-2, dim2=-1).fill_(1.0)
        local = links[:, s:e, s:e].contiguous()
        for t in range(1, e - s):
            row = torch.baddbmm(inner[:, t : t + 1, :t], local[:, t : t + 1, :t], inner[:, :t, :t])
            inner[:, t : t + 1, :t] = row
            inner[:, :t, t : t + 1] = row.transpose(-1, -2)
        q[:, s:e, s:e] = inner
    return q.clamp_(0.0, 1.0)


def _sampled_marginals(
    probs: Tensor, n_samples: int, generator: torch.Generator | None, dtype: torch.dtype
) -> Tensor:
    bsz, n, _ = probs.shape
    counts = torch.zeros((bsz, n, n), dtype=torch.int32, device=probs.device)
    # At most 255 samples per chunk, so that a chunk's counts fit uint8: summing bytes
    # into bytes vectorises, while a widening reduction over samples is ~100x slower.
    chunk = min(255, n_samples)
    # The comparison is done for a tile of rows at a time (only columns up to the tile,
    # the rest is mirrored), so memory stays near _PAIR_CHUNK_ELEMENTS bytes for any N.
    # About four tiles per document at least, so the mirrored half is mostly skipped.
    rows = min(n, max(64, -(-n // 4)), _PAIR_CHUNK_ELEMENTS // max(1, chunk * bsz * n))
    rows = max(1, rows)
    buffer = torch.empty(chunk * bsz * rows * n, dtype=torch.bool, device=probs.device)
    narrow = torch.int16 if n <= torch.iinfo(torch.int16).max else torch.long
    table = prepare(probs, n_samples)
    for start in range(0, n_samples, chunk):
        c = min(chunk, n_samples - start)
        drawn = draw(table, c, generator)
        sampled = roots(drawn, in_place=True, check=False).to(narrow)  # [c, B, N]
        for r0 in range(0, n, rows):
            r1 = min(n, r0 + rows)
            same = buffer[: c * bsz * (r1 - r0) * r1].view(c, bsz, r1 - r0, r1)
            torch.eq(sampled[..., r0:r1, None], sampled[..., None, :r1], out=same)
            counts[:, r0:r1, :r1] += same.view(torch.uint8).sum(0, dtype=torch.uint8)
    lower = counts.tril_()
    lower += lower.tril(-1).transpose(-1, -2)
    if torch.finfo(dtype).bits > 16:
        return lower.to(dtype).div_(n_samples)
    # Divided in the widest float, then cast: a float16 count overflows to inf past
    # 65,504 samples, and bfloat16 rounds counts past 256 before the division. (Not for
    # every dtype: a float64 copy of [B, N, N] is a third more peak memory.)
    wide = default_compute_dtype(counts.device)
    return lower.to(wide).div_(n_samples).to(dtype)


def coreference_marginals(
    scores: Tensor,
    n_samples: int | None = None,
    mask: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Pairwise coreference probabilities ``P(i and j are in one entity | x)``: ``[B, N, N]``.

    With ``n_samples=None`` the result is exact: antecedent choices are independent and
    point backwards, so ``Q[i, :i] = P(a_i = .)[:i] @ Q[:i, :i]`` with ``Q[k, k] = 1``; it
    is computed in float64 by a blocked dynamic program (``O(N^3)`` flops, mostly matrix
    products). With ``n_samples=S`` it is the paper's Monte Carlo estimate, the fraction
    of ``S`` sampled clusterings (:func:`sample_antecedents` + :func:`entity_roots`) in
    which ``i`` and ``j`` corefer, chunked over samples so memory stays bounded.

    The result is symmetric with diagonal 1. Padded mentions are singletons: their rows
    and columns are 0 off the diagonal (and 1 on it). It carries no gradient (train on
    :func:`antecedent_log_probs`, which does).

    Args:
        scores: ``[B, N, N]`` antecedent scores.
        n_samples: ``None`` for the exact marginals, or the number of samples (a positive
            int, NumPy integer or one-element integer tensor).
        mask: optional ``[B, N]`` bool, True for real mentions.
        generator: optional ``torch.Generator`` for the sampled estimate.

    Returns:
        ``[B, N, N]`` in the dtype and on the device of ``scores``.

    Example:
        >>> import torch
        >>> scores = torch.zeros(1, 3, 3)
        >>> coreference_marginals(scores)
        tensor([[[1.0000, 0.5000, 0.5000],
                 [0.5000, 1.0000, 0.5000],
                 [0.5000, 0.5000, 1.0000]]])
        >>> g = torch.Generator().manual_seed(0)
        >>> est = coreference_marginals(scores, n_samples=4000, generator=g)
        >>> bool((est - coreference_marginals(scores)).abs().max() < 0.05)
        True
    """
    checked = _check_scores(scores, mask)
    check_generator(generator)  # also unused (exact): a wrong one had passed without a word
    if n_samples is not None:
        n_samples = as_int("n_samples", n_samples, 1, MOST_SAMPLES)
        check_generator(generator, scores.device)
    # An evaluation quantity: the DP fills its table in place, so no graph is recorded.
    with torch.no_grad():
        if n_samples is None:
            logp = _log_probs(_float64_copy(scores), checked, owned=True)
            return _exact_marginals(logp).to(scores.dtype)
        return _sampled_marginals(
            _probabilities(scores, checked), n_samples, generator, scores.dtype
        )
