"""Structured predictions to binary calibration queries ``(q, y)``.

A structured model's posterior answers many yes/no questions ("is token t an NN?",
"are tokens t, t+1 tagged DT NN?", "are mentions i and j one entity?"); each
question gives one predicted probability ``q`` and one gold outcome ``y`` in {0, 1},
which the calibration metric bins (the paper's §2-3 and §4.2.2-4.2.3).

Only torch is imported here; every function works on the input's device and is
vectorised over sentences and documents.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


def _check_mask(mask: Tensor | None, shape: torch.Size, like: Tensor) -> Tensor:
    if mask is None:
        return torch.ones(shape, dtype=torch.bool, device=like.device)
    if mask.shape != shape:
        raise ValueError(f"mask must have shape {tuple(shape)}, got {tuple(mask.shape)}")
    return mask.bool()


def _check_tags(tags: Tensor, shape: torch.Size, num_tags: int, mask: Tensor) -> None:
    if tags.shape != shape:
        raise ValueError(f"tags must have shape {tuple(shape)}, got {tuple(tags.shape)}")
    if tags.dtype.is_floating_point or tags.dtype == torch.bool:
        raise ValueError(f"tags must be an integer tensor, got {tags.dtype}")
    valid = tags[mask]
    if valid.numel() and (valid.min() < 0 or valid.max() >= num_tags):
        raise ValueError(f"tags must lie in [0, {num_tags}) where mask is True")


def tag_queries(
    unigram: Tensor,
    tags: Tensor,
    mask: Tensor | None = None,
    *,
    per_tag: bool = False,
) -> tuple[Tensor, Tensor]:
    """One-vs-rest queries "does token t have tag k?" for every token and tag (§4.2.2).

    Args:
        unigram: ``[B, T, K]`` posterior marginals ``P(y_t = k | x)``.
        tags: ``[B, T]`` gold tag indices.
        mask: ``[B, T]`` bool, True at real tokens (None: all).
        per_tag: return one row per tag instead of the concatenation.

    Returns:
        ``(q, y)``. By default both are flat ``[K * N]`` over the N masked tokens, tag
        by tag (all tokens' queries for tag 0, then tag 1, ...), which is the paper's
        "concatenate across the tags". With ``per_tag=True`` both are ``[K, N]`` and row
        ``k`` holds tag ``k``'s queries. ``y`` has ``q``'s dtype.

    Example:
        >>> unigram = torch.tensor([[[0.9, 0.1], [0.2, 0.8]]])
        >>> tags = torch.tensor([[0, 0]])
        >>> q, y = tag_queries(unigram, tags)
        >>> q.tolist(), y.tolist()
        ([0.9, 0.2, 0.1, 0.8], [1.0, 1.0, 0.0, 0.0])
        >>> q, y = tag_queries(unigram, tags, per_tag=True)
        >>> q.shape, y[1].tolist()
        (torch.Size([2, 2]), [0.0, 0.0])
    """
    if unigram.dim() != 3:
        raise ValueError(f"unigram must be [B, T, K], got shape {tuple(unigram.shape)}")
    num_tags = unigram.shape[-1]
    mask = _check_mask(mask, unigram.shape[:2], unigram)
    _check_tags(tags, unigram.shape[:2], num_tags, mask)
    q = unigram[mask].transpose(0, 1)  # [K, N]
    y = (tags[mask][None, :] == torch.arange(num_tags, device=tags.device)[:, None]).to(q.dtype)
    if per_tag:
        return q, y
    return q.reshape(-1), y.reshape(-1)


class TagPairQueries(NamedTuple):
    """Queries "are tokens t, t+1 tagged (i, j)?" for the most frequent gold tag pairs.

    ``pairs[m] = (i, j)`` is the m-th most frequent gold pair and ``counts[m]`` its
    count; ``pair_q[m]``/``pair_y[m]`` (``[k, M]`` over the M consecutive-token
    positions) are its queries, and ``q``/``y`` are those rows concatenated.
    """

    q: Tensor
    y: Tensor
    pairs: Tensor
    counts: Tensor
    pair_q: Tensor
    pair_y: Tensor


def top_tag_pairs(
    tags: Tensor, mask: Tensor | None, num_tags: int, top_k: int
) -> tuple[Tensor, Tensor]:
    """The ``top_k`` most frequent gold consecutive tag pairs: ``(pairs Long[k, 2], counts [k])``.

    Pairs are counted at positions t where tokens t and t+1 are both real; ties in
    count go to the smaller pair index ``i * K + j``, so the choice is deterministic.
    Pairs never seen are never chosen (fewer than ``top_k`` rows then).

    Example:
        >>> tags = torch.tensor([[0, 1, 0, 1], [1, 1, 0, 0]])
        >>> pairs, counts = top_tag_pairs(tags, None, num_tags=2, top_k=2)
        >>> pairs.tolist(), counts.tolist()
        ([[0, 1], [1, 0]], [2, 2])
    """
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    if tags.dim() != 2:
        raise ValueError(f"tags must be [B, T], got shape {tuple(tags.shape)}")
    mask = _check_mask(mask, tags.shape, tags)
    _check_tags(tags, tags.shape, num_tags, mask)
    both = mask[:, :-1] & mask[:, 1:]
    gold = (tags[:, :-1] * num_tags + tags[:, 1:])[both]
    counts = torch.bincount(gold, minlength=num_tags * num_tags)
    order = torch.sort(-counts, stable=True).indices
    chosen = order[: min(top_k, int((counts > 0).sum()))]
    return torch.stack([chosen // num_tags, chosen % num_tags], dim=1), counts[chosen]


def tag_pair_queries(
    pairwise: Tensor,
    tags: Tensor,
    mask: Tensor | None = None,
    top_k: int = 5,
    *,
    pairs: Tensor | None = None,
) -> TagPairQueries:
    """Queries over consecutive tag pairs for the ``top_k`` most frequent gold pairs (§4.2.3).

    The pairs are those of :func:`top_tag_pairs` over the given data, unless ``pairs``
    (``Long [k, 2]``) fixes them, e.g. to chosen once over a whole test set when its
    sentences are processed in chunks.

    Args:
        pairwise: ``[B, T-1, K, K]`` marginals ``P(y_t = i, y_{t+1} = j | x)``.
        tags: ``[B, T]`` gold tags.
        mask: ``[B, T]`` bool (None: all real).
        top_k: how many pairs to keep (>= 1); ignored when ``pairs`` is given.
        pairs: explicit ``(i, j)`` rows to query.

    Example:
        >>> pw = torch.tensor([[[[0.6, 0.1], [0.2, 0.1]], [[0.1, 0.7], [0.1, 0.1]]]])
        >>> tags = torch.tensor([[0, 0, 1]])
        >>> out = tag_pair_queries(pw, tags, top_k=2)
        >>> out.pairs.tolist(), out.counts.tolist()
        ([[0, 0], [0, 1]], [1, 1])
        >>> out.pair_q.tolist(), out.pair_y.tolist()
        ([[0.6, 0.1], [0.1, 0.7]], [[1.0, 0.0], [0.0, 1.0]])
        >>> out.q.tolist()
        [0.6, 0.1, 0.1, 0.7]
        >>> tag_pair_queries(pw, tags, pairs=torch.tensor([[1, 0]])).pair_q.tolist()
        [[0.2, 0.1]]
    """
    if pairwise.dim() != 4 or pairwise.shape[-1] != pairwise.shape[-2]:
        raise ValueError(f"pairwise must be [B, T-1, K, K], got shape {tuple(pairwise.shape)}")
    batch, steps, num_tags, _ = pairwise.shape
    shape = torch.Size((batch, steps + 1))
    mask = _check_mask(mask, shape, pairwise)
    _check_tags(tags, shape, num_tags, mask)
    if pairs is None:
        pairs, _ = top_tag_pairs(tags, mask, num_tags, top_k)
    elif pairs.dim() != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must be [k, 2], got shape {tuple(pairs.shape)}")
    elif pairs.numel() and (pairs.min() < 0 or pairs.max() >= num_tags):
        raise ValueError(f"pairs must lie in [0, {num_tags})")
    pairs = pairs.to(tags.device).long()
    chosen = pairs[:, 0] * num_tags + pairs[:, 1]
    both = mask[:, :-1] & mask[:, 1:]  # [B, T-1]
    gold = (tags[:, :-1] * num_tags + tags[:, 1:])[both]  # [M] flat pair ids
    counts = torch.bincount(gold, minlength=num_tags * num_tags)[chosen]
    flat_q = pairwise.reshape(batch, steps, num_tags * num_tags)[both]  # [M, K*K]
    pair_q = flat_q[:, chosen].transpose(0, 1)  # [k, M]
    pair_y = (gold[None, :] == chosen[:, None]).to(pair_q.dtype)
    return TagPairQueries(
        q=pair_q.reshape(-1),
        y=pair_y.reshape(-1),
        pairs=pairs,
        counts=counts,
        pair_q=pair_q,
        pair_y=pair_y,
    )


def coref_pair_queries(
    marginals: Tensor,
    entity_ids: Tensor,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Queries "are mentions i and j one entity?" over all pairs j < i of each document.

    Args:
        marginals: ``[B, N, N]`` with ``marginals[b, i, j] = P(i ~ j | x)``; only the
            strictly lower triangle (j < i) is read.
        entity_ids: ``[B, N]`` gold entity of each mention. A negative id marks a
            mention with no gold entity (a singleton): it is coreferent with nothing.
        mask: ``[B, N]`` bool, True at real mentions (None: all).

    Returns:
        ``(q, y)`` flat over documents, then ``i``, then ``j`` (row-major lower
        triangle); ``y`` is 1.0 where both mentions share a (non-negative) gold entity.

    Example:
        >>> marg = torch.tensor([[[1.0, 0.0, 0.0], [0.8, 1.0, 0.0], [0.3, 0.4, 1.0]]])
        >>> ids = torch.tensor([[5, 5, -1]])
        >>> q, y = coref_pair_queries(marg, ids)
        >>> q.tolist(), y.tolist()
        ([0.8, 0.3, 0.4], [1.0, 0.0, 0.0])
    """
    if marginals.dim() != 3 or marginals.shape[1] != marginals.shape[2]:
        raise ValueError(f"marginals must be [B, N, N], got shape {tuple(marginals.shape)}")
    shape = marginals.shape[:2]
    if entity_ids.shape != shape:
        raise ValueError(
            f"entity_ids must have shape {tuple(shape)}, got {tuple(entity_ids.shape)}"
        )
    if entity_ids.dtype.is_floating_point:
        raise ValueError(f"entity_ids must be an integer tensor, got {entity_ids.dtype}")
    mask = _check_mask(mask, shape, marginals)
    n = shape[1]
    rows, cols = torch.tril_indices(n, n, offset=-1, device=marginals.device)
    valid = mask[:, rows] & mask[:, cols]  # [B, P]
    q = marginals[:, rows, cols][valid]
    same = (entity_ids[:, rows] == entity_ids[:, cols]) & (entity_ids[:, rows] >= 0)
    return q, same[valid].to(q.dtype)
