"""Shared steps of the thesis' tagging experiments: encode, fit, score, calibrate, plot.

The taggers (HMM, feature CRF) all answer ``marginals(x, mask)`` and
``viterbi(x, mask)``; ``x`` is word ids for the HMM and hashed feature ids for the
CRF, so one evaluation serves both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch

from calib_metrics.functional import calibration_error_ci
from calib_metrics.models.feature_crf import FeatureCRF
from calib_metrics.models.features import FeatureHasher
from calib_metrics.models.hmm import HMM
from calib_metrics.paper.tagging import TaggedSentence, Vocabulary, encode_batch

# The paper's estimator, passed explicitly: β = 5000, plug-in, Algorithm 2.
PAPER_SETTING = {"debias": False, "bin_size": 5000, "interval": "paper"}
# The project's recommendation (docs/coverage.md): β = ⌈√N⌉, debiased, and the
# bootstrap over whole sentences, since a sentence's tokens are not independent.
RECOMMENDED_SETTING = {"debias": True, "bin_size": "auto", "interval": "groups"}
# The two settings in words, under every table that shows both.
SETTINGS_LEGEND = (
    "paper: the paper's estimator, plug-in in bins of 5000, with its Algorithm 2 interval "
    "(normal draws per bin, which take a sentence's tokens as independent: too narrow); "
    "recommended: bins of ⌈√N⌉ pairs, debiased, with the recentred bootstrap over whole sentences."
)


class Tagged(NamedTuple):
    """A split as tensors: HMM word ids, gold tags, mask, sentence id of each token."""

    sentences: list[TaggedSentence]
    words: torch.Tensor
    tags: torch.Tensor
    mask: torch.Tensor


def keep_known_tags(
    sentences: Sequence[TaggedSentence], tags: Vocabulary
) -> tuple[list[TaggedSentence], int]:
    """Sentences whose tags are all in ``tags``, and how many were dropped.

    Example:
        >>> tv = Vocabulary(["N", "V"], unknown=False)
        >>> keep_known_tags([(["a"], ["N"]), (["b"], ["X"])], tv)
        ([(['a'], ['N'])], 1)
    """
    kept = [s for s in sentences if all(t in tags for t in s[1])]
    return kept, len(sentences) - len(kept)


def dropped_note(
    kept: Mapping[str, int],
    dropped: Mapping[str, int],
    *,
    what: str = "a tag",
    unseen: str = "no training sentence holds",
) -> str:
    """The results line naming the sentences :func:`keep_known_tags` left out; '' if none.

    ``kept`` and ``dropped`` count each split's sentences; ``what`` names the tags and ``unseen``
    says what training lacks: pos and twitter-pos take the defaults, ner names its entity
    types, those of the flattened mentions.

    Example (made-up counts):
        >>> print(dropped_note({"dev": 7, "test": 9}, {"dev": 3, "test": 1}))
        Left out: 3 of 10 dev and 1 of 10 test sentences, each holding a tag that no
        training sentence holds (the model cannot predict it).
        >>> dropped_note({"test": 9}, {"test": 0})
        ''
    """
    parts = [f"{n} of {kept[split] + n} {split}" for split, n in dropped.items() if n > 0]
    if not parts:
        return ""
    return (
        f"Left out: {' and '.join(parts)} sentences, each holding {what} that {unseen} "
        "(the model cannot predict it)."
    )


def encode(sentences: list[TaggedSentence], words: Vocabulary, tags: Vocabulary) -> Tagged:
    """Pad a split for the HMM (word ids) and keep the sentences for the feature hasher."""
    return Tagged(sentences, *encode_batch(sentences, words, tags))


def features(split: Tagged, hasher: FeatureHasher) -> torch.Tensor:
    """Hashed feature ids ``[B, T, F]`` of a split, aligned with its tags and mask."""
    ids, _ = hasher.encode([w for w, _ in split.sentences])
    return ids


def accuracy(model: Any, x: torch.Tensor, split: Tagged) -> float:
    """Token accuracy of the Viterbi tags."""
    pred = model.viterbi(x, split.mask)[1]
    return float((pred == split.tags)[split.mask].double().mean())


def fit_hmm(train: Tagged, dev: Tagged, n_tags: int, n_words: int, grid: Sequence[float]):
    """HMM with the pseudocount of best dev accuracy: ``(model, {pseudocount: dev acc})``."""
    scores, models = {}, {}
    for alpha in grid:
        models[alpha] = HMM(n_tags, n_words, alpha).fit(train.words, train.tags, train.mask)
        scores[alpha] = accuracy(models[alpha], dev.words, dev)
    best = max(scores, key=lambda a: (scores[a], a))
    return models[best], {"grid": scores, "pseudocount": best}


def fit_crf(
    templates: Sequence[str],
    train: Tagged,
    dev: Tagged,
    n_tags: int,
    *,
    buckets: int,
    c2_grid: Sequence[float],
    max_iter: int,
) -> tuple[FeatureCRF, FeatureHasher, dict]:
    """Feature CRF with the L2 strength of best dev accuracy (each fit starts at 0)."""
    hasher = FeatureHasher(templates, buckets)
    x_train, x_dev = features(train, hasher), features(dev, hasher)
    scores, models = {}, {}
    for c2 in c2_grid:
        model = FeatureCRF(n_tags, buckets).fit(
            x_train, train.tags, train.mask, c2=c2, max_iter=max_iter, tol=1e-4
        )
        models[c2], scores[c2] = model, accuracy(model, x_dev, dev)
    best = max(scores, key=lambda c: (scores[c], -c))
    info = models[best].fit_info
    return models[best], hasher, {"grid": scores, "c2": best, "fit": dataclasses.asdict(info)}


def sentence_ids(mask: torch.Tensor) -> torch.Tensor:
    """The sentence index of every masked token, in row-major (tag_queries') order."""
    rows = torch.arange(mask.shape[0], device=mask.device)
    return rows[:, None].expand_as(mask)[mask]


def calibration(
    q: torch.Tensor, y: torch.Tensor, setting: dict, *, groups: torch.Tensor, seed: int, n: int
) -> dict:
    """CalibErr with its interval under one setting; the result object kept for plots."""
    g = torch.Generator().manual_seed(seed)
    options = dict(setting)
    if options.get("interval") == "groups":
        options["groups"] = groups
    result = calibration_error_ci(
        q.double().clamp(0, 1), y.double(), n_samples=n, generator=g, **options
    )
    out = {k: float(getattr(result, k)) for k in ("error", "lower", "upper")}
    bins = len(result.bins.count)
    return {**out, "mse": out["error"] ** 2, "n": q.numel(), "bins": bins, "_result": result}


def strip(value: Any) -> Any:
    """Drop the ``_result`` objects, leaving what JSON can hold."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k != "_result"}
    return value
