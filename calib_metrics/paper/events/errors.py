"""Error analysis of uncertain event predictions (the paper's §6.2, last paragraphs).

For a calibrated model, the documents whose event probability ``a(d, c)`` is near
0.5 are the ones most likely to be wrong. For each such document this module
shows the sentences involved and the coreference decisions that decide the
outcome: for every mention ``i`` and antecedent choice ``j``, ``P(a_i = j)`` and the
event rate among samples that made that choice, ``P(event | a_i = j)``. Decisions
are ranked by the share of the event's variance they explain,
``sum_j P(a_i = j) (P(event | a_i = j) - P(event))^2`` (the variance of the
conditional expectation): a decision whose choices all give the same event rate
cannot flip the outcome. The sum runs over the choices sampled often enough to give
a rate (``min_support``, :data:`MIN_SUPPORT` by default), so it is a lower bound where
some are not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from calib_metrics.models.linear_chain import as_indices
from calib_metrics.paper.events.analysis import EventAnalysis, MentionTable

__all__ = [
    "MIN_SUPPORT",
    "Choice",
    "Decision",
    "UncertainDocument",
    "decision_effects",
    "pairs_in_band",
    "uncertain_documents",
]

#: The fewest samples whose event rate :func:`uncertain_documents` uses: a choice made in
#: fewer has no usable rate (it is listed, but ranks no decision).
MIN_SUPPORT = 5


@dataclass
class Choice:
    """One antecedent choice of a mention: its target (``None`` = NEW), probability, event
    rate, and ``support``, the number of samples that made it (the rate's sample size: one
    of fewer than :data:`MIN_SUPPORT` samples is no usable rate)."""

    antecedent: int | None
    text: str
    prob: float
    event_rate: float
    sentence: int | None = None
    support: int = 0


@dataclass
class Decision:
    """A mention's antecedent decision and how it moves the event."""

    mention: int
    text: str
    sentence: int
    explained: float
    choices: list[Choice] = field(default_factory=list)


@dataclass
class UncertainDocument:
    """A document whose event probability for ``code`` is near 0.5."""

    doc_id: str
    code: str
    prob: float
    sentences: list[str]
    decisions: list[Decision]


def decision_effects(
    antecedents: Tensor, events: Tensor, probs: Tensor | None = None, min_support: int = 1
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Choice probabilities and conditional event rates of every antecedent decision.

    Args:
        antecedents: ``Long [S, N]`` sampled antecedents of one document.
        events: ``Bool [S]`` the event indicator in each sample.
        probs: optional exact ``P(a_i = j)`` ``[N, N]`` (from the model's scores);
            by default the sample frequencies.
        min_support: a choice made in fewer samples than this does not count towards
            ``explained`` (its event rate is too noisy to rank decisions by), which is then
            a lower bound of the variance over all choices.

    Returns:
        ``(choice_prob [N, N], rate [N, N], support [N, N], explained [N])``: rate is
        ``P(event | a_i = j)`` (NaN where no sample chose ``j``), support the number of
        samples that did, explained the variance of the conditional event rate: the sum
        over the supported choices of ``P(a_i = j) (rate - P(event))^2``.

    Example:
        >>> a = torch.tensor([[0, 0], [0, 1], [0, 0], [0, 1]])
        >>> ev = torch.tensor([True, False, True, False])
        >>> p, rate, support, explained = decision_effects(a, ev)
        >>> rate[1].tolist(), explained.tolist()
        ([1.0, 0.0], [0.0, 0.25])
    """
    antecedents, events = _checked_samples(antecedents, events, probs)
    s, n = antecedents.shape
    key = (torch.arange(n, device=antecedents.device) * n + antecedents).reshape(-1)
    weights = events.double()[:, None].expand(s, n).reshape(-1)
    support = torch.bincount(key, minlength=n * n).view(n, n).double()
    hits = torch.bincount(key, weights=weights, minlength=n * n).view(n, n)
    rate = hits / support  # NaN where never chosen
    choice = probs.double() if probs is not None else support / s
    mean = events.double().mean()
    dev = torch.nan_to_num(rate - mean, nan=0.0)
    # A choice with too little support has no rate to add; its own weight P(a_i = j) keeps
    # the others' (renormalising had given one supported choice the whole variance).
    supported = support >= max(min_support, 1)
    explained = (choice * supported * dev**2).sum(-1)
    return choice, rate, support, explained


def _checked_samples(
    antecedents: Tensor, events: Tensor, probs: Tensor | None
) -> tuple[Tensor, Tensor]:
    """The samples as ``Long`` antecedents and ``bool`` events, or a ValueError naming
    what is wrong: an antecedent outside ``0 <= a[:, i] <= i`` had been counted as a
    choice of the next mention (``i·N + a`` spilling over), events other than 0/1 had
    given an "explained variance" of 10, and no samples all-NaN rates."""
    for name, value in (("antecedents", antecedents), ("events", events), ("probs", probs)):
        if value is not None and not isinstance(value, Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if antecedents.ndim != 2 or events.shape != antecedents.shape[:1]:
        raise ValueError("antecedents must be [S, N] and events [S]")
    if antecedents.shape[0] == 0:
        raise ValueError("no samples: antecedents must hold at least one sample [S >= 1, N]")
    antecedents = as_indices(antecedents, "antecedents")
    position = torch.arange(antecedents.shape[1], device=antecedents.device)
    if bool(((antecedents < 0) | (antecedents > position)).any()):
        raise ValueError("antecedents must satisfy 0 <= a[:, i] <= i (i means NEW)")
    if events.dtype != torch.bool:
        if events.is_complex() or not bool(((events == 0) | (events == 1)).all()):
            raise ValueError("events must be bool or hold only 0 and 1 (one per sample)")
        events = events == 1
    n = antecedents.shape[1]
    if probs is not None and (probs.shape != (n, n) or not probs.is_floating_point()):
        raise ValueError(
            f"probs must be a floating-point [N, N] = [{n}, {n}] tensor of P(a_i = j), got "
            f"{probs.dtype} {tuple(probs.shape)}"
        )
    return antecedents, events


def _sentence_text(doc, k: int) -> str:
    sent = doc.sentences[k]
    text = (getattr(sent, "metadata", None) or {}).get("text")
    return text or " ".join(str(t["form"]) for t in sent)


def _mention_text(doc, i: int) -> str:
    m = doc.mentions[i]
    return " ".join(str(doc.sentences[m.sentence][k]["form"]) for k in range(m.start, m.end))


def pairs_in_band(analysis: EventAnalysis, band: tuple[float, float]) -> Tensor:
    """The (document, country) pairs of ``analysis`` with ``band[0] <= a(d, c) <= band[1]``,
    closest to 0.5 first (ties in pair order): ``Long [K]`` indices of ``analysis.doc_probs``.
    :func:`uncertain_documents` lists the first ``top`` of them.

    Example:
        >>> from types import SimpleNamespace
        >>> probs = torch.tensor([0.02, 0.3, 0.6, 0.97])
        >>> pairs_in_band(SimpleNamespace(doc_probs=probs), (0.05, 0.95)).tolist()
        [2, 1]
    """
    lo, hi = band
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"band must satisfy 0 <= lo <= hi <= 1, got {band}")
    p = analysis.doc_probs
    keep = ((p >= lo) & (p <= hi)).nonzero().flatten()
    return keep[torch.argsort((p[keep] - 0.5).abs(), stable=True)]


def uncertain_documents(
    analysis: EventAnalysis,
    docs: Sequence,
    tables: Sequence[MentionTable],
    antecedents: Mapping[int, Tensor],
    choice_probs: Mapping[int, Tensor] | None = None,
    *,
    band: tuple[float, float] = (0.1, 0.9),
    top: int = 10,
    decisions: int = 3,
    choices: int = 4,
    min_prob: float = 0.01,
    min_support: int = MIN_SUPPORT,
) -> list[UncertainDocument]:
    """The (document, country) pairs with ``band[0] <= a(d, c) <= band[1]``, closest to 0.5 first.

    Args:
        analysis: the sampled :class:`~calib_metrics.paper.events.analysis.EventAnalysis`.
        docs, tables: the documents and their mention tables (indexed like ``analysis.doc_ids``).
        antecedents: document index -> sampled antecedents ``Long [S, N]`` (the samples
            behind ``analysis``).
        choice_probs: optional document index -> exact ``P(a_i = j)`` ``[N, N]``.
        band: the probability range that counts as uncertain.
        top: at most this many (document, country) pairs, the closest to 0.5 of
            :func:`pairs_in_band` (which says how many there are in all).
        decisions: at most this many decisions per document.
        choices: at most this many choices per decision (the most probable ones).
        min_prob: choices less probable than this are not listed.
        min_support: choices sampled fewer times are listed (each with its ``support``)
            but do not rank a decision.
    """
    keep = pairs_in_band(analysis, band)[:top]
    p = analysis.doc_probs
    out: list[UncertainDocument] = []
    for pair in keep.tolist():
        d = int(analysis.pair_doc[pair])
        code = analysis.codes[int(analysis.pair_code[pair])]
        if d not in antecedents:
            continue
        doc, table = docs[d], tables[d]
        events = analysis.pair_samples[:, pair]
        probs = None if choice_probs is None else choice_probs.get(d)
        choice, rate, support, explained = decision_effects(
            antecedents[d], events, probs, min_support=min_support
        )
        order = torch.argsort(explained, descending=True, stable=True)
        found: list[Decision] = []
        for i in order.tolist()[:decisions]:
            if explained[i] <= 0:
                break
            m = doc.mentions[i]
            # list the choices that move the event most, then the most probable ones
            mean = events.double().mean()
            gap = torch.nan_to_num(rate[i] - mean, nan=0.0) ** 2
            weight = choice[i] * gap * (support[i] >= min_support)
            usable = (choice[i] >= min_prob) & (support[i] > 0)
            key = torch.where(usable, weight + 1e-9 * choice[i], torch.full_like(weight, -1.0))
            picked = [
                j for j in torch.argsort(key, descending=True)[:choices].tolist() if key[j] >= 0
            ]
            listed = []
            for j in sorted(picked, key=lambda j: -float(choice[i, j])):
                text = "NEW" if j == i else _mention_text(doc, j)
                listed.append(
                    Choice(
                        None if j == i else j,
                        text,
                        float(choice[i, j]),
                        float(rate[i, j]),
                        None if j == i else doc.mentions[j].sentence,
                        int(support[i, j]),
                    )
                )
            found.append(
                Decision(i, _mention_text(doc, i), m.sentence, float(explained[i]), listed)
            )
        # the attack sentences, the first sentences naming the country, the decisions'
        column = table.codes.index(code)
        attack = {doc.mentions[i].sentence for i in table.attacks.nonzero()[:, 0].tolist()}
        named = sorted(
            {doc.mentions[i].sentence for i in table.countries[:, column].nonzero()[:, 0].tolist()}
        )
        wanted = sorted(attack | set(named[:2]) | {dec.sentence for dec in found})
        out.append(
            UncertainDocument(
                doc.doc_id, code, float(p[pair]), [_sentence_text(doc, k) for k in wanted], found
            )
        )
    return out
