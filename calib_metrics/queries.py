"""Structured predictions to binary calibration queries ``(q, y)``.

A structured model's posterior answers many yes/no questions ("is token t an NN?",
"are tokens t, t+1 tagged DT NN?", "are mentions i and j one entity?"); each
question gives one predicted probability ``q`` and one gold outcome ``y`` in {0, 1},
which the calibration metric bins (the paper's §2-3 and §4.2.2-4.2.3).

Only torch, the functional layer's argument checks and the linear-chain core (for span
probabilities) are imported here; every function works on the input's device and is
vectorised over sentences and documents.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from calib_metrics.functional.errors import (
    as_int,
    check_computable_float,
    check_dense,
    check_dense_tensors,
    check_flag,
    check_not_meta,
)
from calib_metrics.models import linear_chain
from calib_metrics.models.linear_chain import _hinted_pairwise_rows


def _check_tensors(**named: object) -> None:
    """Raise ValueError naming the first argument that is not a tensor (a nested list,
    say, which had failed with an AttributeError on ``.dim()``), not a dense one (a
    nested or sparse tensor: :func:`check_dense`), is of a floating storage format
    (:func:`check_computable_float`) or is on the meta device (no values to read: torch's
    own error had come from a copy or an ``.item()``)."""
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        check_dense(value, name)
        check_computable_float(value, name)
        check_not_meta(value, name)


def _check_probabilities(q: Tensor, name: str) -> None:
    """Refuse queries' probabilities that are not floating point or lie outside [0, 1]
    (NaN too), naming the argument they came from (one host read): logits passed for
    marginals had become queries of q in [-2.3, 2.0], which the metric then blamed on
    ``probs``."""
    if not q.is_floating_point():
        raise ValueError(f"{name} must be floating-point probabilities, got dtype {q.dtype}")
    if bool(((q < 0) | (q > 1) | q.isnan()).any()):
        raise ValueError(
            f"{name} must be probabilities in [0, 1] where mask is True (posterior "
            "marginals, not scores or logits), got values outside it or NaN"
        )


def _check_mask(
    mask: Tensor | None,
    shape: torch.Size,
    like: Tensor,
    *,
    left_aligned: bool = False,
    hint: str = "",
) -> Tensor:
    """``mask`` as bool: bool or integer 0/1, left-aligned if asked (one host read, none
    for a bool mask that need not be left-aligned); a layout error ends with ``hint``."""
    _check_tensors(**({} if mask is None else {"mask": mask}))
    if mask is None:
        return torch.ones(shape, dtype=torch.bool, device=like.device)
    if mask.shape != shape:
        raise ValueError(f"mask must have shape {tuple(shape)}, got {tuple(mask.shape)}")
    linear_chain.check_mask_dtype(mask)
    if left_aligned or mask.dtype != torch.bool:  # else there is nothing to read
        not_binary, _, not_left_aligned = linear_chain.mask_flags(mask).tolist()
        linear_chain.check_mask_flags(not_binary, False, left_aligned and not_left_aligned, hint)
    # On the probabilities' device, as the chain functions take it: a CPU mask beside
    # CUDA marginals had failed in torch at the first selection.
    return mask.to(device=like.device, dtype=torch.bool)


def _check_tags(
    tags: Tensor, shape: torch.Size, num_tags: int, mask: Tensor, mask_given: bool
) -> Tensor:
    """``tags`` as int64, in range where ``mask`` is True (one host read); padding's -100
    there is told with the mask that drops it (``mask_given``: the caller's kept)."""
    if tags.shape != shape:
        raise ValueError(f"tags must have shape {tuple(shape)}, got {tuple(tags.shape)}")
    tags = linear_chain.as_indices(tags, "tags").to(mask.device)  # the probabilities'
    linear_chain.check_tag_range(tags, mask, num_tags, mask_given)
    return tags


def _check_span_tags(tags: Tensor, mask: Tensor, mask_given: bool) -> None:
    """Refuse a negative tag id where ``mask`` is True (one host read): a span query
    knows no number of tags, but padding's -100 had been read as a real token of no
    entity, and the padding's (q = 0, y = 0) queries lowered the error (0.081 to 0.059)."""
    negative = (tags < 0) & mask
    if bool(negative.any()):
        value = int(tags[negative][0])
        raise ValueError(
            f"tags hold {value} where mask is True (every position without a mask), and tag "
            f"ids are >= 0{linear_chain.padded_tags_hint(value, mask_given)}; {value} inside "
            "a sentence (a sub-word's) needs word-level tags, one per first sub-word"
        )


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

    Host synchronisations: three, the tags' range check, the selection of the masked
    tokens and the probabilities' range check, and one more for the values of an
    integer mask.

    Example:
        >>> unigram = torch.tensor([[[0.9, 0.1], [0.2, 0.8]]], dtype=torch.float64)
        >>> tags = torch.tensor([[0, 0]])
        >>> q, y = tag_queries(unigram, tags)
        >>> q.tolist(), y.tolist()
        ([0.9, 0.2, 0.1, 0.8], [1.0, 1.0, 0.0, 0.0])
        >>> q, y = tag_queries(unigram, tags, per_tag=True)
        >>> q.shape, y[1].tolist()
        (torch.Size([2, 2]), [0.0, 0.0])
    """
    _check_tensors(unigram=unigram, tags=tags)
    if unigram.dim() != 3:
        raise ValueError(f"unigram must be [B, T, K], got shape {tuple(unigram.shape)}")
    num_tags = unigram.shape[-1]
    given = mask is not None
    mask = _check_mask(mask, unigram.shape[:2], unigram)
    tags = _check_tags(tags, unigram.shape[:2], num_tags, mask, given)
    check_flag("per_tag", per_tag)  # "yes" had changed the result's shape as True does
    tokens = mask.nonzero(as_tuple=True)  # one read for both selections
    q = unigram[tokens].transpose(0, 1)  # [K, N]
    _check_probabilities(q, "unigram")
    y = (tags[tokens][None, :] == torch.arange(num_tags, device=tags.device)[:, None]).to(q.dtype)
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

    Host synchronisations: three, the tags' range check, the selection of the positions
    and the number of pairs seen, and one more for the values of an integer mask.

    Example:
        >>> tags = torch.tensor([[0, 1, 0, 1], [1, 1, 0, 0]])
        >>> pairs, counts = top_tag_pairs(tags, None, num_tags=2, top_k=2)
        >>> pairs.tolist(), counts.tolist()
        ([[0, 1], [1, 0]], [2, 2])
    """
    num_tags = as_int("num_tags", num_tags, 1)
    top_k = as_int("top_k", top_k, 1)
    _check_tensors(tags=tags)
    if tags.dim() != 2:
        raise ValueError(f"tags must be [B, T], got shape {tuple(tags.shape)}")
    given = mask is not None
    mask = _check_mask(mask, tags.shape, tags)
    tags = _check_tags(tags, tags.shape, num_tags, mask, given)
    return _most_frequent(_pair_counts(_gold_pairs(tags, mask, num_tags)[1], num_tags), top_k)


def _gold_pairs(tags: Tensor, mask: Tensor, num_tags: int) -> tuple[tuple[Tensor, Tensor], Tensor]:
    """The positions ``(b, t)`` whose tokens t and t+1 are both real, and the flat ids
    ``i * K + j`` of their gold pairs (checked inputs; one host read, the selection)."""
    where = (mask[:, :-1] & mask[:, 1:]).nonzero(as_tuple=True)
    return where, tags[:, :-1][where] * num_tags + tags[:, 1:][where]


def _pair_counts(gold: Tensor, num_tags: int) -> Tensor:
    """How often each flat pair id ``i * K + j`` is gold, ``[K * K]`` (no host read:
    ``torch.bincount`` would read the ids' min and max on a GPU)."""
    counts = torch.zeros(num_tags * num_tags, dtype=torch.long, device=gold.device)
    return counts.index_add_(0, gold, torch.ones_like(gold))


def _most_frequent(counts: Tensor, top_k: int) -> tuple[Tensor, Tensor]:
    """:func:`top_tag_pairs` of the pairs' counts (one host read: the pairs seen)."""
    num_tags = math.isqrt(counts.numel())
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

    Host synchronisations: four, the tags' range check, the selection of the positions,
    the number of pairs seen (or, given ``pairs``, their range check) and the queried
    probabilities' range check, and one more for the values of an integer mask.

    Example:
        >>> pw = torch.tensor([[[[0.6, 0.1], [0.2, 0.1]], [[0.1, 0.7], [0.1, 0.1]]]],
        ...                   dtype=torch.float64)
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
    _check_tensors(pairwise=pairwise, tags=tags, **({} if pairs is None else {"pairs": pairs}))
    if pairwise.dim() != 4 or pairwise.shape[-1] != pairwise.shape[-2]:
        raise ValueError(f"pairwise must be [B, T-1, K, K], got shape {tuple(pairwise.shape)}")
    batch, steps, num_tags, _ = pairwise.shape
    shape = torch.Size((batch, steps + 1))
    if tags.shape != shape:
        raise ValueError(
            f"tags must have shape {tuple(shape)}, one more step than pairwise's "
            f"[B, T-1] = {(batch, steps)}, got {tuple(tags.shape)}"
        )
    if pairs is None:
        top_k = as_int("top_k", top_k, 1)
    elif pairs.dim() != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must be [k, 2], got shape {tuple(pairs.shape)}")
    else:
        pairs = linear_chain.as_indices(pairs, "pairs")
    given = mask is not None
    mask = _check_mask(mask, shape, pairwise)
    tags = _check_tags(tags, shape, num_tags, mask, given)
    where, gold = _gold_pairs(tags, mask, num_tags)  # [M] flat pair ids
    all_counts = _pair_counts(gold, num_tags)
    if pairs is None:
        pairs, _ = _most_frequent(all_counts, top_k)
    elif bool(((pairs < 0) | (pairs >= num_tags)).any()):
        raise ValueError(f"pairs must lie in [0, {num_tags})")
    pairs = pairs.to(tags.device)
    chosen = pairs[:, 0] * num_tags + pairs[:, 1]
    counts = all_counts[chosen]
    flat_q = pairwise.reshape(batch, steps, num_tags * num_tags)[where]  # [M, K*K]
    pair_q = flat_q[:, chosen].transpose(0, 1)  # [k, M]
    _check_probabilities(pair_q, "pairwise")
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

    Host synchronisations: two, the selection of the pairs of real mentions and the
    probabilities' range check, and one more for the values of an integer mask.

    Example:
        >>> marg = torch.tensor([[[1.0, 0.0, 0.0], [0.8, 1.0, 0.0], [0.3, 0.4, 1.0]]],
        ...                     dtype=torch.float64)
        >>> ids = torch.tensor([[5, 5, -1]])
        >>> q, y = coref_pair_queries(marg, ids)
        >>> q.tolist(), y.tolist()
        ([0.8, 0.3, 0.4], [1.0, 0.0, 0.0])
    """
    _check_tensors(marginals=marginals, entity_ids=entity_ids)
    if marginals.dim() != 3 or marginals.shape[1] != marginals.shape[2]:
        raise ValueError(f"marginals must be [B, N, N], got shape {tuple(marginals.shape)}")
    shape = marginals.shape[:2]
    if entity_ids.shape != shape:
        raise ValueError(
            f"entity_ids must have shape {tuple(shape)}, got {tuple(entity_ids.shape)}"
        )
    # A bool id would make every False entity 0, coreferent with all the others.
    entity_ids = linear_chain.as_indices(entity_ids, "entity_ids").to(marginals.device)
    mask = _check_mask(mask, shape, marginals)
    n = shape[1]
    rows, cols = torch.tril_indices(n, n, offset=-1, device=marginals.device)
    valid = (mask[:, rows] & mask[:, cols]).nonzero(as_tuple=True)  # one read for both
    q = marginals[:, rows, cols][valid]
    _check_probabilities(q, "marginals")
    same = (entity_ids[:, rows] == entity_ids[:, cols]) & (entity_ids[:, rows] >= 0)
    return q, same[valid].to(q.dtype)


class _Spans(NamedTuple):
    """The span tags and ``max_length`` as Python ints; ``last`` and ``unit`` are None
    for BIO tags."""

    begin: int
    inside: int
    max_length: int
    last: int | None
    unit: int | None


def _span_args(
    num_tags: int | None,
    begin: int,
    inside: int,
    max_length: int,
    last: int | None = None,
    unit: int | None = None,
) -> _Spans:
    """Check the span tags (tag indices below ``num_tags``, if given) and ``max_length``."""
    if (last is None) != (unit is None):
        raise ValueError("last and unit must be given together (BILOU) or not at all (BIO)")
    begin = as_int("begin", begin, 0, num_tags)
    inside = as_int("inside", inside, 0, num_tags)
    if last is not None:
        last, unit = as_int("last", last, 0, num_tags), as_int("unit", unit, 0, num_tags)
    return _Spans(begin, inside, as_int("max_length", max_length, 1), last, unit)


def _span_keywords(spans: _Spans, with_length: bool = True) -> str:
    """The span arguments as a call passes them: ``begin=1, inside=2, max_length=3``."""
    roles = spans._asdict()
    if not with_length:
        del roles["max_length"]
    return ", ".join(f"{name}={value}" for name, value in roles.items() if value is not None)


def _aligned_spans_hint(arguments: str, call: str, table: bool = True) -> str:
    """The fix of a span function's mask that is no prefix of each row (sub-word pieces
    masked out): a span runs over words, so the chain's inputs are aligned by
    :func:`~calib_metrics.models.left_align` (``arguments``) and every span function called
    on that one batch (``call``). A ``table`` (``[B', T, max_length]``, of
    :func:`span_marginals`, :func:`span_indicators`, :func:`spans_inside`) is over aligned
    positions, and the hint says how they map back (``LeftAligned.restore`` would put a
    span's start back but not the tokens it runs over); span_queries' are flat, with
    nothing to map.

    Example:
        >>> print(_aligned_spans_hint("emissions, mask=mask", "f(aligned.mask)"))
         (a [CLS], sub-word pieces or a row masked out? spans run over the kept tokens
         moved to the front, in one aligned batch for the marginals and the gold tags;
         the result's [i, t, l] is then the span over row aligned.rows[i]'s tokens
         aligned.positions[i, t : t + l + 1] (spans are over aligned positions: no
         aligned.restore): from calib_metrics.models import left_align; aligned =
         left_align(emissions, mask=mask); f(aligned.mask))
    """
    mapped = (
        "; the result's [i, t, l] is then the span over row aligned.rows[i]'s tokens"
        " aligned.positions[i, t : t + l + 1] (spans are over aligned positions: no"
        " aligned.restore)"
        if table
        else ""
    )
    return (
        " (a [CLS], sub-word pieces or a row masked out? spans run over the kept tokens"
        f" moved to the front, in one aligned batch for the marginals and the gold tags{mapped}:"
        f" from calib_metrics.models import left_align; aligned = left_align({arguments});"
        f" {call})"
    )


def _shift_left(x: Tensor, by: int) -> Tensor:
    """``x[:, t + by]`` at ``t``, 0 past the end."""
    pad = x.new_zeros((x.shape[0], by))
    return torch.cat([x[:, by:], pad], 1) if by < x.shape[1] else pad[:, : x.shape[1]]


def _given(pairs: Tensor, total: Tensor) -> Tensor:
    """``[B, T, R]``: ``pairs`` (``[B, T-1, R]``, summed pairwise marginals of the rows)
    over the rows' ``total``, the posterior's next-tag probability given ``y_t = rows[r]``;
    0 where no tag follows ``t`` (its last token, padding) or the row's tag is impossible."""
    given = torch.where(total > 0, pairs / total, 0.0)
    return torch.cat([given, given.new_zeros(given.shape[0], 1, given.shape[2])], 1)


@torch.no_grad()
def span_marginals(
    emissions: Tensor,
    transitions: Tensor,
    start: Tensor,
    end: Tensor,
    mask: Tensor | None = None,
    *,
    begin: int,
    inside: int,
    max_length: int,
    last: int | None = None,
    unit: int | None = None,
) -> Tensor:
    """Exact probability of every candidate span ``[t, t + l]`` being one labelled entity.

    ``out[b, t, l] = P(y_t = begin, y_{t+1..t+l} = inside, y_{t+l+1} != inside | x)`` under
    the linear chain of :mod:`calib_metrics.models.linear_chain` (same potentials and
    conventions as ``posterior_marginals``), for span lengths ``l + 1 = 1 .. max_length``.
    A span that ends at the sentence's last token needs no following tag; a span that
    runs past the sentence (or starts in padding) gets 0. With BIO tags pass ``B-X``
    and ``I-X``.

    **BILOU** (``last`` and ``unit`` given, e.g. ``L-X`` and ``U-X``): a one-token span is
    ``y_t = unit``, a longer one ``y_t = begin, y_{t+1..t+l-1} = inside, y_{t+l} = last``
    (the ``last`` tag closes it, so the next tag is not constrained):
    ``out[b, t, 0] = P(y_t = unit)``, ``out[b, t, l] = P(begin, inside^(l-1), last)``.

    Computed in one batched pass from the pairwise marginals of the rows ``begin`` and
    ``inside`` (:func:`~calib_metrics.models.linear_chain.pairwise_rows`): the span's
    probability is ``P(y_t = begin)`` times the posterior's next-tag probabilities
    ``P(y_{s+1} | y_s)`` along it (into ``inside``, then out of it or into ``last``) — a
    loop over ``max_length`` steps of ``[B, T]`` work, never an enumeration of tag
    sequences. Each factor is a normalised probability, so the result is as exact as the
    marginals at any score scale (log messages as large as the scores, added and less
    ``log Z``, had cancelled every digit at 1e16). float64 throughout; the result has the
    dtype of ``emissions``. An impossible sentence (log Z = -inf) gets zeros.

    Host synchronisations: three, those of
    :func:`~calib_metrics.models.linear_chain.pairwise_rows` (the argument checks and the
    fast recursions' two precision checks).

    Args:
        emissions, transitions, start, end, mask: the chain, as in
            :func:`~calib_metrics.models.linear_chain.posterior_marginals`.
        begin: tag index that opens a span.
        inside: tag index that continues it.
        max_length: longest span length considered (>= 1); ``l`` runs over
            ``0 .. max_length - 1`` (``l = 0`` is a one-token span).
        last: BILOU only: tag index that closes a span of two or more tokens.
        unit: BILOU only: tag index of a one-token span.

    Returns:
        ``[B, T, max_length]`` probabilities in ``[0, 1]``, without gradient (outputs, as
        ``posterior_marginals``' are).

    Raises:
        ValueError: on the chain's errors (see ``posterior_marginals``), a span tag or
            ``max_length`` out of range, or only one of ``last`` and ``unit`` given.

    Example:
        >>> O, B, I = 0, 1, 2
        >>> em = torch.tensor([[[0.0, 2.0, -1.0], [0.0, -1.0, 2.0], [1.0, 0.0, 0.0]]])
        >>> tr = torch.zeros(3, 3)
        >>> tr[O, I] = float("-inf")  # BIO: no I after O
        >>> probs = span_marginals(em, tr, torch.zeros(3), torch.zeros(3),
        ...                        begin=B, inside=I, max_length=3)
        >>> probs.shape
        torch.Size([1, 3, 3])
        >>> probs[0].round(decimals=3)  # row t: spans starting at t of 1, 2, 3 tokens
        tensor([[0.1270, 0.6380, 0.1720],
                [0.0380, 0.0100, 0.0000],
                [0.2180, 0.0000, 0.0000]])

        BILOU tags ``O B I L U``: the spans of the sentence ``B L U`` are the most probable.

        >>> O, B, I, L, U = range(5)
        >>> em = torch.full((1, 3, 5), -2.0)
        >>> em[0, 0, B] = em[0, 1, L] = em[0, 2, U] = 2.0
        >>> spans = span_marginals(em, torch.zeros(5, 5), torch.zeros(5), torch.zeros(5),
        ...                        begin=B, inside=I, last=L, unit=U, max_length=3)
        >>> spans[0].argmax(-1).tolist(), round(spans[0, 0, 1].item(), 3)  # [0, 1] is B L
        ([1, 0, 0], 0.868)
    """
    check_dense_tensors(emissions=emissions)  # before its shape is read
    if not isinstance(emissions, Tensor) or emissions.dim() != 3:
        raise ValueError("emissions must be a [B, T, K] tensor")
    begin, inside, max_length, last, unit = _span_args(
        emissions.shape[-1], begin, inside, max_length, last, unit
    )
    bilou = last is not None
    linear_chain.refuse_vmap("span_marginals", emissions, transitions, start, end, mask)
    spans = _Spans(begin, inside, max_length, last, unit)
    call = (
        "span_marginals(aligned.emissions, transitions, start, end, aligned.mask, "
        f"{_span_keywords(spans)})"
    )
    hint = _aligned_spans_hint("emissions, mask=mask", call)
    chain = _hinted_pairwise_rows(
        emissions, transitions, start, end, mask, rows=(begin, inside), hint=hint
    )
    uni, pair = chain.unigram, chain.pairwise  # [B, T-1, 2, K]: `begin`'s, `inside`'s rows
    total = pair.sum(-1)
    staying = _given(pair[..., inside], total)
    if bilou:
        # A span closes with `last` after `begin` or `inside`: lengths 2, 3, ... at steps
        # 0, 1, ...; one token is `unit`.
        closing, first = _given(pair[..., last], total), 1
    else:
        # A span closes with `begin` or `inside` at its last token, then anything but
        # `inside`, or the sentence's end (where no tag follows, and every row is 0).
        leaving = pair[..., :inside].sum(-1) + pair[..., inside + 1 :].sum(-1)
        real = uni.sum(-1) > 0.5  # in the mask, of a possible sentence
        ends = real & ~_shift_left(real, 1)
        closing, first = _given(leaving, total) + ends[..., None], 0
    # Spans of more than T tokens fit no sentence: probability 0, not a step each (a
    # max_length of 10⁵ on sentences of 4 tokens had run 10⁵ steps of growing padding).
    out = uni.new_zeros((*uni.shape[:2], max_length))
    if bilou:
        out[..., 0] = uni[..., unit]
    run = uni[..., begin]  # P(`begin` at t, `inside` through t + step)
    for step in range(min(max_length - first, uni.shape[1] - first)):
        row = min(step, 1)  # the tag at t + step: `begin`, then `inside`
        out[..., step + first] = run * _shift_left(closing[..., row], step)
        run = run * _shift_left(staying[..., row], step)
    return out.clamp_(0, 1).to(emissions.dtype)


def span_indicators(
    tags: Tensor,
    mask: Tensor | None = None,
    *,
    begin: int,
    inside: int,
    max_length: int,
    last: int | None = None,
    unit: int | None = None,
) -> Tensor:
    """Gold counterpart of :func:`span_marginals`: ``out[b, t, l]`` is True where the gold
    tags hold ``begin`` at ``t``, ``inside`` through ``t + l`` and not ``inside`` at ``t + l + 1``
    (or the sentence ends), so a span's query and its outcome use one definition. With
    ``last`` and ``unit`` (BILOU): ``unit`` at ``t`` for ``l = 0``, else ``begin``, ``inside``
    through ``t + l - 1`` and ``last`` at ``t + l``.

    Example:
        >>> O, B, I = 0, 1, 2
        >>> span_indicators(torch.tensor([[B, I, O, B]]), begin=B, inside=I, max_length=2)
        tensor([[[False,  True],
                 [False, False],
                 [False, False],
                 [ True, False]]])
        >>> O, B, I, L, U = range(5)
        >>> span_indicators(torch.tensor([[B, L, U]]), begin=B, inside=I, last=L, unit=U,
        ...                 max_length=2)[0].tolist()
        [[False, True], [False, False], [True, False]]

    Host synchronisations: two, the mask's check (its values and left alignment; none
    without a mask) and the tags' (no negative id, such as padding's -100, where the mask
    is True).
    """
    if not isinstance(tags, Tensor) or tags.dim() != 2:
        raise ValueError("tags must be a [B, T] integer tensor")
    check_not_meta(tags, "tags")
    tags = linear_chain.as_indices(tags, "tags")
    spans = _span_args(None, begin, inside, max_length, last, unit)
    call = f"span_indicators(aligned.tags, aligned.mask, {_span_keywords(spans)})"
    hint = _aligned_spans_hint("emissions, tags, mask", call)
    given = mask is not None
    mask = _check_mask(mask, tags.shape, tags, left_aligned=True, hint=hint)
    _check_span_tags(tags, mask, given)
    return _span_indicators(tags, mask, spans)


def _span_indicators(tags: Tensor, mask: Tensor, spans: _Spans) -> Tensor:
    """:func:`span_indicators` of checked inputs (no host read)."""
    begin, inside, max_length, last, unit = spans
    bilou = last is not None
    # Read off the gold tags directly (the roles may coincide: begin == inside, IO tags).
    roles = {begin, inside} if last is None else {begin, inside, last, unit}
    holds = {role: (tags == role) & mask for role in roles}
    out = torch.zeros((*tags.shape, max_length), dtype=torch.bool, device=tags.device)
    run = holds[begin]  # `begin` at t, then `inside` through t + length (BILOU: - 1)
    for length in range(max_length):
        if bilou:
            out[..., length] = holds[unit] if length == 0 else run & _later(holds[last], length)
            run = run & _later(holds[inside], length) if length else run
        else:
            run = run & _later(holds[inside], length) if length else run
            out[..., length] = run & ~_later(holds[inside], length + 1)
    return out


def _later(held: Tensor, by: int) -> Tensor:
    """``held[:, t + by]`` at ``t``, False past the end."""
    pad = held.new_zeros((held.shape[0], min(by, held.shape[1])))
    return torch.cat([held[:, by:], pad], 1)


def spans_inside(mask: Tensor, max_length: int) -> Tensor:
    """``[B, T, max_length]``: whether the span of words ``[t, t + l]`` ends inside its
    sentence, for a left-aligned ``mask`` (``[B, T]``, bool or integer 0/1); on the mask's
    device.

    These are the candidate spans of :func:`span_marginals`' table: the entries past a
    sentence's end are padding (q = y = 0), which no query may count.

    Host synchronisations: one, the mask's check (its values and left alignment).

    Example:
        >>> spans_inside(torch.tensor([[True, True, False]]), max_length=2)[0].tolist()
        [[True, True], [True, False], [False, False]]
    """
    _check_tensors(mask=mask)
    if mask.dim() != 2:
        raise ValueError(f"mask must be a [B, T] tensor, got shape {tuple(mask.shape)}")
    max_length = as_int("max_length", max_length, 1)
    call = f"spans_inside(aligned.mask, {max_length})"
    hint = _aligned_spans_hint("emissions, mask=mask", call)
    mask = _check_mask(mask, mask.shape, mask, left_aligned=True, hint=hint)
    return _spans_inside(mask, max_length)


def _spans_inside(mask: Tensor, max_length: int) -> Tensor:
    """:func:`spans_inside` of a checked mask (no host read)."""
    positions = torch.arange(mask.shape[1], device=mask.device)
    ends = positions[:, None] + torch.arange(max_length, device=mask.device)  # [T, L]
    return ends < mask.sum(1)[:, None, None]


def span_queries(
    span_probs: Tensor,
    tags: Tensor,
    mask: Tensor | None = None,
    *,
    begin: int,
    inside: int,
    top_k: int | None = None,
    last: int | None = None,
    unit: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Queries "is this span one entity?" as flat ``(q, y)`` for the calibration metric.

    ``q`` comes from :func:`span_marginals` and ``y`` from :func:`span_indicators` on the
    gold ``tags`` (same ``begin``, ``inside``, BILOU's ``last`` and ``unit`` if
    given, and ``max_length``, the last dim of
    ``span_probs``). Every span that lies inside its sentence is a query, or, with
    ``top_k``, only the ``top_k`` most probable spans of each sentence (the candidates a
    tagger would show). Gold spans longer than ``max_length`` are not queried.

    Host synchronisations: four, the mask's check (its values and left alignment; none
    without a mask), the tags' (no negative id, such as padding's -100, where the mask is
    True), the probabilities' range check and the selection of the queried spans.

    Example:
        >>> O, B, I = 0, 1, 2
        >>> probs = torch.tensor([[[0.75, 0.25], [0.125, 0.0], [0.0, 0.0]]])
        >>> q, y = span_queries(probs, torch.tensor([[B, O, O]]), begin=B, inside=I)
        >>> q.tolist(), y.tolist()  # spans (0, 1 token), (0, 2), (1, 1), (1, 2), (2, 1)
        ([0.75, 0.25, 0.125, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0])
        >>> span_queries(probs, torch.tensor([[B, O, O]]), begin=B, inside=I, top_k=1)
        (tensor([0.7500]), tensor([1.]))
    """
    if not isinstance(span_probs, Tensor) or span_probs.dim() != 3:
        raise ValueError("span_probs must be a [B, T, max_length] tensor")
    batch, length, max_length = span_probs.shape
    if not isinstance(tags, Tensor) or tuple(tags.shape) != (batch, length):
        raise ValueError(f"tags must have shape {(batch, length)} to match span_probs")
    check_not_meta(span_probs, "span_probs")
    check_not_meta(tags, "tags")
    if top_k is not None:
        top_k = as_int("top_k", top_k, 1)
    tags = linear_chain.as_indices(tags, "tags").to(span_probs.device)
    spans = _span_args(None, begin, inside, max_length, last, unit)
    roles = _span_keywords(spans, with_length=False) + f", top_k={top_k}" * (top_k is not None)
    call = (  # span_probs read in the sub-word layout would span pieces: computed again
        "span_probs = span_marginals(aligned.emissions, transitions, start, end, "
        f"aligned.mask, {_span_keywords(spans)}); "
        f"span_queries(span_probs, aligned.tags, aligned.mask, {roles})"
    )
    hint = _aligned_spans_hint("emissions, tags, mask", call, table=False)
    given = mask is not None
    mask = _check_mask(mask, tags.shape, tags, left_aligned=True, hint=hint)
    _check_span_tags(tags, mask, given)
    gold = _span_indicators(tags, mask, spans)
    inside_sentence = _spans_inside(mask, max_length)  # [B, T, L]
    # [B, T·L] (reshape(batch, -1) cannot infer the width of no sentences)
    q_all = span_probs.reshape(batch, length * max_length)
    y_all = gold.reshape(batch, length * max_length).to(span_probs.dtype)
    keep = inside_sentence.reshape(batch, length * max_length)
    # Every span inside its sentence, queried or not: logits had become queries (top-k
    # ones too), which the metric then blamed on ``probs``.
    _check_probabilities(torch.where(keep, q_all, 0), "span_probs")
    if top_k is None:
        spans_kept = keep.nonzero(as_tuple=True)  # one read for both selections
        return q_all[spans_kept], y_all[spans_kept]
    ranked = q_all.masked_fill(~keep, -1.0)
    k = min(top_k, ranked.shape[1])
    top = ranked.topk(k, dim=1).indices
    chosen = keep.gather(1, top).nonzero(as_tuple=True)
    return q_all.gather(1, top)[chosen], y_all.gather(1, top)[chosen]
