"""Observation features of words for feature-template taggers, hashed to integer ids.

A *template* turns a token in its sentence into zero or more string attributes
(``"w=Dog"``, ``"suf3=dog"``, ``"shape=Xxx"``); :class:`FeatureHasher` hashes every
attribute to an id in ``[1, num_buckets)`` (0 is padding) with CRC-32, which is
stable across processes (Python's ``hash`` is salted), and pads the ids of a batch
into ``Long [B, T, F]``, the input of :class:`~calib_metrics.models.feature_crf.FeatureCRF`.

Templates (names of :data:`TEMPLATES`):

- ``bias``: one attribute every token has (a per-tag bias).
- ``word``: the word itself (the tag-word feature of the HMM and CRF-Basic).
- ``context``: the lower-cased current, previous and next words (sentence boundaries
  are ``<s>`` and ``</s>``).
- ``affixes``: lower-cased prefixes and suffixes of length 1 to 4 (those no longer
  than the word).
- ``shape``: the word shape (``Xxxx``, ``dd-dd``), its short form (runs collapsed),
  a length bucket, and flags: has a digit, all digits, has a hyphen, capitalised,
  all capitals, has no letter or digit.

:data:`ABLATION` lists the nested template sets of the thesis' ablation, from
CRF-Basic to CRF-Advanced (§4.1.2).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import torch

__all__ = ["ABLATION", "TEMPLATES", "FeatureHasher", "token_attributes", "word_shape"]

TEMPLATES = ("bias", "word", "context", "affixes", "shape")

ABLATION: dict[str, tuple[str, ...]] = {
    "basic": ("bias", "word"),
    "+context": ("bias", "word", "context"),
    "+affixes": ("bias", "word", "context", "affixes"),
    "+shape": ("bias", "word", "context", "affixes", "shape"),
}

_LENGTH_BUCKETS = (1, 2, 3, 4, 6, 9)
_RUNS = re.compile(r"(.)\1+")


def word_shape(word: str) -> str:
    """Capitals to ``X``, lower-case letters to ``x``, digits to ``d``; other characters kept.

    Example:
        >>> word_shape("McDonald's"), word_shape("2015-11"), word_shape("@user")
        ("XxXxxxxx'x", 'dddd-dd', '@xxxx')
    """
    return "".join(
        "X" if c.isupper() else "x" if c.isalpha() else "d" if c.isdigit() else c for c in word
    )


def _length_bucket(n: int) -> str:
    for limit in _LENGTH_BUCKETS:
        if n <= limit:
            return str(limit)
    return f">{_LENGTH_BUCKETS[-1]}"


def _shape_attributes(word: str) -> list[str]:
    shape = word_shape(word)
    short = _RUNS.sub(r"\1", shape)
    out = [f"shape={shape}", f"short={short}", f"len={_length_bucket(len(word))}"]
    flags = {
        "digit": any(c.isdigit() for c in word),
        "alldigits": word.isdigit(),
        "hyphen": "-" in word,
        "cap": word[:1].isupper(),
        "allcaps": word.isupper(),
        "nonalnum": not any(c.isalnum() for c in word),
    }
    return out + [f"flag={name}" for name, on in flags.items() if on]


def token_attributes(words: Sequence[str], templates: Sequence[str]) -> list[list[str]]:
    """The string attributes of every token of one sentence under ``templates``.

    Example:
        >>> token_attributes(["The", "dog"], ["word", "context"])
        [['w=The', 'lw=the', 'pw=<s>', 'nw=dog'], ['w=dog', 'lw=dog', 'pw=the', 'nw=</s>']]
        >>> token_attributes(["Hi"], ["affixes"])
        [['p1=h', 's1=i', 'p2=hi', 's2=hi']]
    """
    if isinstance(templates, str):
        raise ValueError(f"templates must be a sequence of names, got the string {templates!r}")
    if isinstance(words, str) or not all(isinstance(w, str) for w in words):
        raise ValueError(
            f"a sentence must be a sequence of word strings, got {_describe(words)} "
            "(encode takes a list of sentences, each a list of words)"
        )
    unknown = set(templates) - set(TEMPLATES)
    if unknown:
        raise ValueError(f"unknown templates {sorted(unknown)}; choose from {TEMPLATES}")
    lower = [w.lower() for w in words]
    out: list[list[str]] = []
    for t, word in enumerate(words):
        attrs: list[str] = []
        if "bias" in templates:
            attrs.append("bias")
        if "word" in templates:
            attrs.append(f"w={word}")
        if "context" in templates:
            prev = lower[t - 1] if t > 0 else "<s>"
            nxt = lower[t + 1] if t + 1 < len(words) else "</s>"
            attrs += [f"lw={lower[t]}", f"pw={prev}", f"nw={nxt}"]
        if "affixes" in templates:
            for n in range(1, min(4, len(word)) + 1):
                attrs += [f"p{n}={lower[t][:n]}", f"s{n}={lower[t][-n:]}"]
        if "shape" in templates:
            attrs += _shape_attributes(word)
        out.append(attrs)
    return out


def _describe(words: object) -> str:
    """``words`` as an error message names it: a string, or the first non-string word."""
    if isinstance(words, str):
        return f"the string {words!r}"
    bad = next((w for w in words if not isinstance(w, str)), None)  # type: ignore[union-attr]
    return f"a word of type {type(bad).__name__} ({bad!r})"


class FeatureHasher:
    """Hash the attributes of a template set to ids and pad them into a batch.

    Args:
        templates: names from :data:`TEMPLATES`.
        num_buckets: ids lie in ``[1, num_buckets)``; 0 is the padding id. More buckets,
            fewer collisions (two attributes sharing an id share a weight).

    Example:
        >>> hasher = FeatureHasher(["bias", "word"], num_buckets=1000)
        >>> ids, mask = hasher.encode([["a", "b"], ["a"]])
        >>> ids.shape, mask.tolist()
        (torch.Size([2, 2, 2]), [[True, True], [True, False]])
        >>> bool(ids[0, 0].eq(ids[1, 0]).all()), int(ids[1, 1].sum())
        (True, 0)
    """

    def __init__(self, templates: Sequence[str], num_buckets: int = 2**18):
        if isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets < 2:
            raise ValueError(
                f"num_buckets must be an int >= 2 (id 0 is padding), got {num_buckets!r}"
            )
        if not templates:
            raise ValueError("templates must name at least one template")
        token_attributes(["x"], templates)  # validates the names
        self.templates = tuple(templates)
        self.num_buckets = num_buckets

    def __repr__(self) -> str:
        return f"FeatureHasher(templates={self.templates}, num_buckets={self.num_buckets})"

    def hash(self, attribute: str) -> int:
        """The id of one attribute string, in ``[1, num_buckets)``."""
        return zlib.crc32(attribute.encode("utf-8")) % (self.num_buckets - 1) + 1

    def sentence_ids(self, words: Sequence[str]) -> list[list[int]]:
        """Ids of every token's attributes (one list per token)."""
        return [[self.hash(a) for a in attrs] for attrs in token_attributes(words, self.templates)]

    def encode(
        self, sentences: Sequence[Sequence[str]], device: torch.device | str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ids Long [B, T, F], mask Bool [B, T])``: padded ids (0 = none) and real tokens."""
        if len(sentences) == 0:
            raise ValueError("encode needs at least one sentence")
        if any(len(s) == 0 for s in sentences):
            raise ValueError("every sentence needs at least one word")
        per_sentence = [self.sentence_ids(s) for s in sentences]
        width = max(len(s) for s in sentences)
        slots = max(len(ids) for sent in per_sentence for ids in sent)
        padded_token = [0] * slots
        rows = [
            [ids + [0] * (slots - len(ids)) for ids in sent] + [padded_token] * (width - len(sent))
            for sent in per_sentence
        ]
        out = torch.tensor(rows, dtype=torch.long)
        lengths = torch.tensor([len(s) for s in sentences])
        mask = torch.arange(width) < lengths[:, None]
        return out.to(device), mask.to(device)
