"""Tagged-sentence reading (CoNLL-U), vocabularies and padded batches for the taggers.

The readers take a path, never a fixed location; numpy never appears, and the only
tensors made here are the padded index batches of :func:`encode_batch`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import torch

TaggedSentence = tuple[list[str], list[str]]

_COLUMNS = ("xpos", "upos")


def iter_tagged_sentences(
    path: str | os.PathLike, column: str = "xpos"
) -> Iterator[TaggedSentence]:
    """Yield ``(words, tags)`` for each sentence of a CoNLL-U file (``.conllu`` or ``.conllu.gz``).

    Multiword-token lines (ids like ``3-4``) and empty nodes (``5.1``) are skipped, so
    the words are the syntactic words that carry the tags. ``column`` is ``"xpos"``
    (language-specific tags; Penn Treebank style for English) or ``"upos"``.

    Example:
        >>> import tempfile, pathlib
        >>> text = "1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t_\\t_\\n\\n"
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.conllu"
        >>> _ = p.write_text(text)
        >>> list(iter_tagged_sentences(p))
        [(['Hi'], ['UH'])]
    """
    # imported lazily: only the readers need conllu
    from calib_metrics.paper.conllu_io import open_text, sentences

    if column not in _COLUMNS:
        raise ValueError(f"column must be one of {_COLUMNS}, got {column!r}")
    path = Path(path)
    with open_text(path) as stream:
        for sentence in sentences(stream, str(path)):
            words: list[str] = []
            tags: list[str] = []
            for token in sentence:
                if not isinstance(token["id"], int):
                    continue
                tag = token[column]
                if tag is None or tag == "_":
                    raise ValueError(
                        f"{path}: token {token['form']!r} in sentence "
                        f"{sentence.metadata.get('sent_id', '?')} has no {column} tag"
                    )
                words.append(token["form"])
                tags.append(tag)
            if words:
                yield words, tags


def read_tagged_sentences(
    path: str | os.PathLike, column: str = "xpos", limit: int | None = None
) -> list[TaggedSentence]:
    """All (or the first ``limit``) sentences of a CoNLL-U file as ``(words, tags)`` lists.

    Example:
        >>> import tempfile, pathlib
        >>> rows = ["1\\tI\\tI\\tPRON\\tPRP\\t_\\t2\\tnsubj\\t_\\t_",
        ...         "2-3\\tdon't\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_",
        ...         "2\\tdo\\tdo\\tAUX\\tVBP\\t_\\t0\\troot\\t_\\t_",
        ...         "3\\tn't\\tnot\\tPART\\tRB\\t_\\t2\\tadvmod\\t_\\t_"]
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "b.conllu"
        >>> _ = p.write_text("\\n".join(rows) + "\\n\\n")
        >>> read_tagged_sentences(p)
        [(['I', 'do', "n't"], ['PRP', 'VBP', 'RB'])]
        >>> read_tagged_sentences(p, column="upos")[0][1]
        ['PRON', 'AUX', 'PART']
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    out: list[TaggedSentence] = []
    for sentence in iter_tagged_sentences(path, column):
        if limit is not None and len(out) >= limit:
            break
        out.append(sentence)
    return out


class Vocabulary:
    """A string-to-index map built from training data.

    With ``unknown=True`` index 0 is reserved for :attr:`UNK`, which every string not in
    the vocabulary (or seen fewer than ``min_count`` times) maps to; with
    ``unknown=False`` (tag sets) an unseen string raises ``KeyError``. Items are
    ordered by decreasing count, ties alphabetically, so a vocabulary is reproducible.

    Example:
        >>> vocab = Vocabulary.build([["the", "cat"], ["the", "dog"]], min_count=1)
        >>> len(vocab), vocab.itos
        (4, ['<unk>', 'the', 'cat', 'dog'])
        >>> vocab.encode(["the", "cow"])
        [1, 0]
        >>> tags = Vocabulary.build([["DT", "NN"]], unknown=False)
        >>> tags["NN"], tags.itos
        (1, ['DT', 'NN'])
    """

    UNK = "<unk>"

    def __init__(self, items: Iterable[str], *, unknown: bool = True, lowercase: bool = False):
        self.unknown = unknown
        self.lowercase = lowercase
        self.itos: list[str] = [self.UNK] if unknown else []
        self.stoi: dict[str, int] = {}
        for item in items:
            key = item.lower() if lowercase else item
            if key not in self.stoi and not (unknown and key == self.UNK):
                self.stoi[key] = len(self.itos)
                self.itos.append(key)
        if unknown:
            self.stoi[self.UNK] = 0

    @classmethod
    def build(
        cls,
        sequences: Iterable[Sequence[str]],
        *,
        unknown: bool = True,
        lowercase: bool = False,
        min_count: int = 1,
    ) -> Vocabulary:
        """Count the strings of ``sequences`` and keep those seen at least ``min_count`` times."""
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        if not unknown and min_count > 1:
            raise ValueError("min_count > 1 needs unknown=True (dropped items need an index)")
        counts: Counter[str] = Counter()
        for seq in sequences:
            counts.update(s.lower() for s in seq) if lowercase else counts.update(seq)
        kept = sorted(
            (s for s, c in counts.items() if c >= min_count), key=lambda s: (-counts[s], s)
        )
        return cls(kept, unknown=unknown, lowercase=lowercase)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, item: str) -> bool:
        return (item.lower() if self.lowercase else item) in self.stoi

    def __getitem__(self, item: str) -> int:
        key = item.lower() if self.lowercase else item
        index = self.stoi.get(key)
        if index is not None:
            return index
        if self.unknown:
            return 0
        raise KeyError(f"{item!r} is not in the vocabulary ({len(self)} items)")

    def encode(self, items: Sequence[str]) -> list[int]:
        """Indices of ``items`` (unknown strings give 0 when ``unknown=True``)."""
        return [self[s] for s in items]

    def decode(self, indices: Iterable[int]) -> list[str]:
        """Strings of ``indices``."""
        return [self.itos[int(i)] for i in indices]

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, unknown={self.unknown}, lowercase={self.lowercase})"


def encode_batch(
    sentences: Sequence[TaggedSentence],
    word_vocab: Vocabulary,
    tag_vocab: Vocabulary,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad sentences into ``(words Long[B,T], tags Long[B,T], mask Bool[B,T])``, left-aligned.

    Padding positions hold index 0 and ``mask`` False; ``T`` is the longest sentence.
    A tag missing from ``tag_vocab`` raises ``ValueError`` naming it.

    Example:
        >>> sents = [(["a", "b"], ["X", "Y"]), (["b"], ["Y"])]
        >>> wv = Vocabulary.build(w for w, _ in sents)
        >>> tv = Vocabulary.build((t for _, t in sents), unknown=False)
        >>> words, tags, mask = encode_batch(sents, wv, tv)
        >>> words.tolist(), tags.tolist(), mask.tolist()
        ([[2, 1], [1, 0]], [[1, 0], [0, 0]], [[True, True], [True, False]])
    """
    if len(sentences) == 0:
        raise ValueError("encode_batch needs at least one sentence")
    lengths_list = [len(w) for w, _ in sentences]
    for i, ((_, t), n) in enumerate(zip(sentences, lengths_list, strict=True)):
        if n == 0:
            raise ValueError(f"sentence {i} is empty")
        if len(t) != n:
            raise ValueError(f"sentence {i} has {n} words but {len(t)} tags")
    flat_words = [word_vocab[s] for w, _ in sentences for s in w]
    try:
        flat_tags = [tag_vocab[s] for _, t in sentences for s in t]
    except KeyError as err:
        raise ValueError(f"unknown tag: {err.args[0]}") from None
    lengths = torch.tensor(lengths_list, device=device)
    max_len = int(max(lengths_list))
    mask = torch.arange(max_len, device=device) < lengths[:, None]
    words = torch.zeros(len(sentences), max_len, dtype=torch.long, device=device)
    tags = torch.zeros_like(words)
    # Row-major boolean indexing visits positions in sentence order, matching the flat lists.
    words[mask] = torch.tensor(flat_words, dtype=torch.long, device=device)
    tags[mask] = torch.tensor(flat_tags, dtype=torch.long, device=device)
    return words, tags, mask
