"""Reader of the ARK Twitter POS corpus (Gimpel et al. 2011; Owoputi et al. 2012), v0.3.

The release's CoNLL files hold one ``token<TAB>tag`` line per token and a blank line
between tweets, 25 coarse tags. ``oct27.{train,dev,test}`` are the split of Gimpel et
al. (1,000 / 327 / 500 tweets), the one the thesis' §4.2 uses; ``daily547`` is an
out-of-time test set (one tweet a day, 2011-01 to 2012-06). Files may be gzipped.
"""

from __future__ import annotations

import os

from calib_metrics.paper.conllu_io import existing_file, lines
from calib_metrics.paper.locations import data_file, find_dataset
from calib_metrics.paper.tagging import TaggedSentence

DATASET = "ark-twitter-pos"
SPLITS = {
    "train": "oct27.train",
    "dev": "oct27.dev",
    "test": "oct27.test",
    "daily547": "daily547.conll",
}


def read_ark_conll(path: str | os.PathLike) -> list[TaggedSentence]:
    """All tweets of one file as ``(words, tags)``.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.conll"
        >>> _ = p.write_text("I\\tO\\nwon\\tV\\n\\n@bob\\t@\\n")
        >>> read_ark_conll(p)
        [(['I', 'won'], ['O', 'V']), (['@bob'], ['@'])]
    """
    path = existing_file(path, "ARK Twitter file")
    sentences: list[TaggedSentence] = []
    words: list[str] = []
    tags: list[str] = []
    for number, line in enumerate(lines(path), 1):
        line = line.rstrip("\n")
        if not line.strip():
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"{path}:{number}: expected 'token<TAB>tag', got {line!r}")
        words.append(parts[0])
        tags.append(parts[1])
    if words:
        sentences.append((words, tags))
    return sentences


def load_ark_twitter(
    data: str | os.PathLike | None = None, splits: tuple[str, ...] = tuple(SPLITS)
) -> dict[str, list[TaggedSentence]]:
    """The named splits (``train``, ``dev``, ``test``, ``daily547``) of the corpus.

    ``data`` is the corpus folder or the folder holding ``ark-twitter-pos`` (default:
    the shared data folder, see :func:`calib_metrics.paper.locations.find_dataset`).

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "oct27.test").write_text("ok\\t!\\n")
        >>> load_ark_twitter(d, splits=("test",))
        {'test': [(['ok'], ['!'])]}
    """
    unknown = set(splits) - set(SPLITS)
    if unknown:
        raise ValueError(f"unknown splits {sorted(unknown)}; choose from {tuple(SPLITS)}")
    folder = find_dataset(DATASET, data)
    out = {}
    for split in splits:
        path = data_file(folder, DATASET, [SPLITS[split] + ext for ext in (".gz", "")])
        out[split] = read_ark_conll(path)
        if not out[split]:  # had surfaced as encode_batch's "needs at least one sentence"
            raise ValueError(f"{path} holds no sentences")
    return out
