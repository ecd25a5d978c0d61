"""Coreference evaluation over clusters: MUC, B³ and pairwise (link) precision / recall / F1.

Pure Python over lists of clusters (each a list of hashable mention ids). Corpus scores
are micro-averaged the way the CoNLL scorer does: numerators and denominators are
summed over documents before dividing.

* MUC (Vilain et al. 1995): recall = sum_K (|K| - |p(K)|) / sum_K (|K| - 1), where
  ``p(K)`` partitions key cluster ``K`` by the response clusters (a mention missing
  from the response is its own part); precision swaps key and response.
* B³ (Bagga & Baldwin 1998): recall = mean over key mentions of
  ``|K(m) ∩ R(m)| / |K(m)|``; precision the same over response mentions.
* Pairwise: precision and recall of the set of coreferent mention pairs.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from itertools import combinations
from typing import NamedTuple

__all__ = ["PRF", "b_cubed", "muc", "pairwise", "score_corpus"]

Clusters = Sequence[Iterable[Hashable]]


class PRF(NamedTuple):
    """Precision, recall and F1 (F1 is 0 when both are 0)."""

    precision: float
    recall: float
    f1: float


def _prf(p_num: float, p_den: float, r_num: float, r_den: float) -> PRF:
    p = p_num / p_den if p_den else 0.0
    r = r_num / r_den if r_den else 0.0
    return PRF(p, r, 2 * p * r / (p + r) if p + r else 0.0)


def _sets(clusters: Clusters, name: str) -> list[frozenset]:
    out = [frozenset(c) for c in clusters]
    seen: set = set()
    for c in out:
        if not c:
            raise ValueError(f"{name} contains an empty cluster")
        if seen & c:
            raise ValueError(f"{name}: mention(s) {sorted(map(str, seen & c))} are in two clusters")
        seen |= c
    return out


def _muc_counts(key: list[frozenset], response: list[frozenset]) -> tuple[int, int]:
    owner = {m: k for k, c in enumerate(response) for m in c}
    num = den = 0
    for c in key:
        parts = {owner.get(m, ("missing", m)) for m in c}
        num += len(c) - len(parts)
        den += len(c) - 1
    return num, den


def _b3_counts(key: list[frozenset], response: list[frozenset]) -> tuple[float, int]:
    owner = {m: c for c in response for m in c}
    num = 0.0
    for c in key:
        for m in c:
            other = owner.get(m)
            if other is not None:
                num += len(c & other) / len(c)
    return num, sum(len(c) for c in key)


def _links(clusters: list[frozenset]) -> set[frozenset]:
    return {frozenset(p) for c in clusters for p in combinations(c, 2)}


def _counts(key: Clusters, response: Clusters) -> dict[str, tuple[float, ...]]:
    k, r = _sets(key, "key"), _sets(response, "response")
    muc_r, muc_p = _muc_counts(k, r), _muc_counts(r, k)
    b3_r, b3_p = _b3_counts(k, r), _b3_counts(r, k)
    lk, lr = _links(k), _links(r)
    common = len(lk & lr)
    return {
        "muc": (muc_p[0], muc_p[1], muc_r[0], muc_r[1]),
        "b3": (b3_p[0], b3_p[1], b3_r[0], b3_r[1]),
        "pairwise": (common, len(lr), common, len(lk)),
    }


def muc(key: Clusters, response: Clusters) -> PRF:
    """MUC precision, recall and F1 of one document.

    Example (Vilain et al. 1995: key {A,B,C,D}, response {A,B} {C,D}):
        >>> muc([["A", "B", "C", "D"]], [["A", "B"], ["C", "D"]])
        PRF(precision=1.0, recall=0.6666666666666666, f1=0.8)
    """
    return _prf(*_counts(key, response)["muc"])


def b_cubed(key: Clusters, response: Clusters) -> PRF:
    """B³ precision, recall and F1 of one document.

    Example (Bagga & Baldwin 1998, Fig. 2: two key entities merged):
        >>> key = [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10, 11, 12]]
        >>> response = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11, 12]]
        >>> round(b_cubed(key, response).precision, 4)
        0.7619
    """
    return _prf(*_counts(key, response)["b3"])


def pairwise(key: Clusters, response: Clusters) -> PRF:
    """Precision, recall and F1 of coreferent mention pairs.

    Example:
        >>> pairwise([[1, 2, 3]], [[1, 2], [3]])
        PRF(precision=1.0, recall=0.3333333333333333, f1=0.5)
    """
    return _prf(*_counts(key, response)["pairwise"])


def score_corpus(keys: Sequence[Clusters], responses: Sequence[Clusters]) -> dict[str, PRF]:
    """Micro-averaged MUC, B³ and pairwise scores over documents, plus their mean F1.

    ``"avg"`` is the mean of the MUC and B³ F1 (the CoNLL average also includes CEAF-e,
    which is not computed here).

    Example:
        >>> s = score_corpus([[[1, 2]], [[1, 2, 3]]], [[[1, 2]], [[1], [2, 3]]])
        >>> round(s["muc"].recall, 4), round(s["pairwise"].precision, 4)
        (0.6667, 1.0)
    """
    if len(keys) != len(responses):
        raise ValueError(f"got {len(keys)} key documents but {len(responses)} response documents")
    totals = {name: [0.0, 0.0, 0.0, 0.0] for name in ("muc", "b3", "pairwise")}
    for key, response in zip(keys, responses, strict=True):
        for name, counts in _counts(key, response).items():
            for k, v in enumerate(counts):
                totals[name][k] += v
    out = {name: _prf(*v) for name, v in totals.items()}
    out["avg"] = PRF(
        (out["muc"].precision + out["b3"].precision) / 2,
        (out["muc"].recall + out["b3"].recall) / 2,
        (out["muc"].f1 + out["b3"].f1) / 2,
    )
    return out
