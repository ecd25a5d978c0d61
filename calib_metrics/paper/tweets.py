"""Emoticon-labelled tweets and sentence-polarity snippets for the paper's §4.1.

The paper labels a tweet positive iff it contains the smiley ``:)`` (the "emoticon
trick") and deletes the smiley before extracting features. This module reads the
two open sentiment sets found under ``shared/data`` (by path only; the tweets'
licence forbids copying them), applies that labelling, removes emoticons,
tokenizes for Twitter text and makes a deterministic stratified split.

Labelling and emoticon removal:

* :func:`emoticon_label` is 1 iff the raw text contains the substring ``:)``
  (so ``:))``, ``x:)`` and ``great:)`` count; ``:-)``, ``: )`` and ``:D`` do not).
* :func:`remove_emoticons` always deletes every run ``:)+`` (what the label keys
  on, wherever it sits, even glued to words or URLs). With ``which="all"`` (the
  default) it also deletes the other Western emoticons (``:-)``, ``:D``, ``;p``,
  ``:(``, ``: (``, ``(:``, ``xD`` ...): the NLTK tweets were *selected* by such
  emoticons, so keeping them would let a model read the file of origin off them.
  ``which="smiley"`` deletes only the smiley, as the paper describes.
"""

from __future__ import annotations

import gzip
import html
import os
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from calib_metrics.paper.conllu_io import readable
from calib_metrics.paper.locations import find_dataset, where_to_get

TWITTER = "nltk-twitter-samples-text"
POLARITY = "nltk-sentence-polarity"
SMILEY = ":)"

_TWITTER_FILES = {"positive": "positive_tweets.txt.gz", "negative": "negative_tweets.txt.gz"}
_POLARITY_ZIP = "sentence_polarity.zip"
_POLARITY_MEMBERS = {
    "positive": "sentence_polarity/rt-polarity.pos",
    "negative": "sentence_polarity/rt-polarity.neg",
}

# A run of smileys with any number of mouths (":)))") goes as a whole, so that no
# stray ")" tokens are left behind to correlate with the label.
SMILEY_RE = re.compile(r":\)+")
_URL_RE = re.compile(r"(?:https?://|www\.)[^\s\"“”<>]+", re.IGNORECASE)
# Eyes, optional nose, mouth. A letter mouth glued to a word on the left must not
# run into one on the right either ("Note:Dear"), but one that starts a token may
# (":Dthanks"); digits never touch (":30"); a space is allowed only before a
# bracket mouth (": ("). Reversed faces ("(:", "D:") and "xD", ";_;" too.
EMOTICON_RE = re.compile(
    r"""
    (?<![0-9])[:;=][-o^'*]?[)\](\[{}|/\\@*]+
  | (?<![A-Za-z0-9])[:;=][-o^'*]?[DPp]
  | (?<![0-9])[:;=][-o^'*]?(?:[DPpdOoXx]|3)(?![A-Za-z0-9])
  | [:;=]\ [)(]+
  | (?<![A-Za-z0-9])(?:[)(]+[-o^']?[:;=]|D[:;=])(?![0-9A-Za-z])
  | (?<![A-Za-z0-9])[xX][DdPp](?![A-Za-z0-9])
  | [;:][_-][;:]
    """,
    re.VERBOSE,
)
_SPACE_RE = re.compile(r"\s+")
# twokenize-style fallback: URLs, @handles and #hashtags, words with inner
# apostrophes, then runs of one punctuation character, then any other symbol
# (emoji are single code points here).
_TOKEN_RE = re.compile(
    r"""
    (?:https?://|www\.)\S+
  | [@\#][\w_]+
  | \w+(?:['’]\w+)*
  | ([^\w\s])\1*
    """,
    re.VERBOSE | re.IGNORECASE,
)


class SentimentCorpus(NamedTuple):
    """Texts with binary labels and the file each came from.

    ``texts`` are raw (emoticons still in); ``sources`` name the file of origin
    (``"positive"``/``"negative"``); ``emoticon_labelled`` says whether ``labels``
    came from :func:`emoticon_label` (tweets) or from the files (polarity set).
    """

    name: str
    texts: list[str]
    labels: torch.Tensor
    sources: list[str]
    emoticon_labelled: bool


def emoticon_label(text: str) -> int:
    """The paper's label: 1 iff the tweet contains the smiley ``:)``.

    Example:
        >>> [emoticon_label(t) for t in ["sunny :)", "sunny :-) :D", "x:))"]]
        [1, 0, 1]
    """
    return int(SMILEY in text)


def remove_emoticons(text: str, which: str = "all") -> str:
    """Delete emoticons (see the module notes) and collapse whitespace.

    HTML entities are unescaped first, so ``&lt;3`` reads as ``<3``; URLs are
    left intact apart from the smiley, which goes wherever it is.

    Example:
        >>> remove_emoticons("great:) see http://t.co/x :D ;-) : ( xD")
        'great see http://t.co/x'
        >>> remove_emoticons("great:) :D", which="smiley")
        'great :D'
    """
    if which not in ("all", "smiley"):
        raise ValueError(f"`which` must be 'all' or 'smiley', got {which!r}")
    text = SMILEY_RE.sub(" ", html.unescape(text))
    if which == "all":
        pieces, start = [], 0
        for url in _URL_RE.finditer(text):
            pieces += [EMOTICON_RE.sub(" ", text[start : url.start()]), url.group()]
            start = url.end()
        pieces.append(EMOTICON_RE.sub(" ", text[start:]))
        text = "".join(pieces)
    return _SPACE_RE.sub(" ", text).strip()


def regex_tokenize(text: str) -> list[str]:
    """A twokenize-style tokenizer: URLs, handles, hashtags, words, punctuation runs.

    Example:
        >>> regex_tokenize("@ann loved it!!! #yay http://t.co/x don't")
        ['@ann', 'loved', 'it', '!!!', '#yay', 'http://t.co/x', "don't"]
    """
    return [m.group() for m in _TOKEN_RE.finditer(text)]


def make_tokenizer(name: str = "auto") -> tuple[str, Callable[[str], list[str]]]:
    """Return ``(resolved_name, tokenize)`` for ``"nltk"``, ``"regex"`` or ``"auto"``.

    ``"nltk"`` is NLTK's ``TweetTokenizer``; ``"auto"`` uses it when nltk is
    installed and :func:`regex_tokenize` otherwise.

    Example:
        >>> name, tok = make_tokenizer("regex")
        >>> name, tok("so good!!")
        ('regex', ['so', 'good', '!!'])
    """
    if name not in ("auto", "nltk", "regex"):
        raise ValueError(f"tokenizer must be 'auto', 'nltk' or 'regex', got {name!r}")
    if name == "regex":
        return "regex", regex_tokenize
    try:
        from nltk.tokenize import TweetTokenizer
    except ImportError as err:
        if name == "auto":
            return "regex", regex_tokenize
        raise ImportError(
            "tokenizer 'nltk' needs nltk: pip install nltk (or calib-metrics[experiments])"
        ) from err
    return "nltk", TweetTokenizer().tokenize


def _lines(data: bytes, where: str) -> list[str]:
    # Split on b"\n" only: a few tweets hold a bare "\r", which universal-newline
    # reading would turn into extra lines.
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{where} is not UTF-8 text: {err}") from err
    return [line for line in text.split("\n") if line.strip()]


def read_twitter_samples(folder: str | os.PathLike) -> SentimentCorpus:
    """Read NLTK's ``twitter_samples`` text export and label it by the emoticon trick.

    Each line is ``<tweet>\\t<positive|negative>``; the file's label is kept in
    ``sources`` and the label used is :func:`emoticon_label` of the text.

    Example:
        >>> import gzip, tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> def write(name, text):
        ...     with gzip.open(d / name, "wt") as f:
        ...         _ = f.write(text)
        >>> write("positive_tweets.txt.gz", "fun :)\\tpositive\\nok :D\\tpositive\\n")
        >>> write("negative_tweets.txt.gz", "sad :(\\tnegative\\n")
        >>> c = read_twitter_samples(d)
        >>> c.labels.tolist(), c.sources
        ([1, 0, 0], ['positive', 'positive', 'negative'])
    """
    folder = Path(folder)
    texts: list[str] = []
    sources: list[str] = []
    for source, filename in _TWITTER_FILES.items():
        path = folder / filename
        if not path.is_file():
            raise FileNotFoundError(f"{TWITTER}: missing {path}; {where_to_get(TWITTER)}")
        with readable(path, "gzip file"), gzip.open(path, "rb") as handle:
            data = handle.read()
        lines = _lines(data, str(path))
        if not lines:  # else reported later as a split with an empty part
            raise ValueError(f"{path} holds no tweets")
        for number, line in enumerate(lines, 1):
            text, tab, label = line.rpartition("\t")
            if not tab or label.strip() != source:
                raise ValueError(
                    f"{path}:{number}: expected '<text>\\t{source}', got {line[:60]!r}"
                )
            texts.append(text)
            sources.append(source)
    labels = torch.tensor([emoticon_label(t) for t in texts], dtype=torch.long)
    return SentimentCorpus(TWITTER, texts, labels, sources, emoticon_labelled=True)


def read_sentence_polarity(folder: str | os.PathLike) -> SentimentCorpus:
    """Read Pang & Lee's sentence polarity set from NLTK's ``sentence_polarity.zip``.

    Labels come from the files (``rt-polarity.pos`` = 1), not from emoticons.

    Example:
        >>> import zipfile, tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> with zipfile.ZipFile(d / "sentence_polarity.zip", "w") as z:
        ...     z.writestr("sentence_polarity/rt-polarity.pos", "a gem . \\n")
        ...     z.writestr("sentence_polarity/rt-polarity.neg", "dull . \\nflat . \\n")
        >>> c = read_sentence_polarity(d)
        >>> c.labels.tolist(), c.texts[0]
        ([1, 0, 0], 'a gem .')
    """
    path = Path(folder) / _POLARITY_ZIP
    if not path.is_file():
        raise FileNotFoundError(f"{POLARITY}: missing {path}; {where_to_get(POLARITY)}")
    texts: list[str] = []
    sources: list[str] = []
    with readable(path, "zip file"), zipfile.ZipFile(path) as archive:
        for source, member in _POLARITY_MEMBERS.items():
            try:
                data = archive.read(member)
            except KeyError as err:
                raise FileNotFoundError(f"{POLARITY}: {path} has no member {member}") from err
            lines = [line.strip() for line in _lines(data, f"{path}:{member}")]
            if not lines:
                raise ValueError(f"{path}:{member} holds no sentences")
            texts += lines
            sources += [source] * len(lines)
    labels = torch.tensor([int(s == "positive") for s in sources], dtype=torch.long)
    return SentimentCorpus(POLARITY, texts, labels, sources, emoticon_labelled=False)


def read_corpus(folder: str | os.PathLike) -> SentimentCorpus:
    """Read whichever of the two sets ``folder`` holds (tweets first).

    Example:
        >>> try:
        ...     read_corpus("/nonexistent")
        ... except FileNotFoundError:
        ...     print("neither set")
        neither set
    """
    folder = Path(folder)
    tweets = [(folder / f).is_file() for f in _TWITTER_FILES.values()]
    if all(tweets):
        return read_twitter_samples(folder)
    if (folder / _POLARITY_ZIP).is_file():
        return read_sentence_polarity(folder)
    if any(tweets):
        return read_twitter_samples(folder)  # names the file that is missing
    wanted = ", ".join([*_TWITTER_FILES.values(), _POLARITY_ZIP])
    raise FileNotFoundError(
        f"{folder} holds neither {TWITTER} nor {POLARITY} ({wanted}); {where_to_get(TWITTER)}"
        f" (or {POLARITY}/)"
    )


def _some_tweets(folder: Path) -> bool:
    """Whether ``folder`` is the tweets' own folder, or holds one of their files and not
    the polarity set (beside which a lone tweet file is a stray)."""
    if folder.name == TWITTER:
        return True
    stray = any((folder / f).is_file() for f in _TWITTER_FILES.values())
    return stray and not (folder / _POLARITY_ZIP).is_file()


def load_corpus(data: str | None, dataset: str = "auto") -> tuple[SentimentCorpus, Path]:
    """Find and read the tweets, or the polarity set when the tweets are missing.

    Example:
        >>> try:
        ...     load_corpus("/nonexistent")
        ... except FileNotFoundError:
        ...     print("missing")
        missing
    """
    if dataset not in ("auto", TWITTER, POLARITY):
        raise ValueError(f"dataset must be 'auto', {TWITTER!r} or {POLARITY!r}, got {dataset!r}")
    errors = []
    for name in (TWITTER, POLARITY) if dataset == "auto" else (dataset,):
        try:
            folder = find_dataset(name, data)
        except FileNotFoundError as err:
            errors.append(str(err))
            continue
        if name == TWITTER and _some_tweets(folder):
            # A tweet folder short of a file is a broken copy, not an absent set: falling
            # back to the movie reviews had hidden which file was missing.
            return read_twitter_samples(folder), folder
        try:
            corpus = read_corpus(folder)
        except FileNotFoundError as err:
            errors.append(str(err))
            continue
        if dataset != "auto" and corpus.name != dataset:
            errors.append(f"{folder} holds {corpus.name}, not {dataset}")
            continue
        return corpus, folder
    unique = list(dict.fromkeys(errors))  # one folder can answer for both names
    other = _other_set_there(data, dataset)
    if other is not None:  # a folder of the other set had read "holds neither" the two
        raise FileNotFoundError(
            f"{dataset} not found: the data folder holds {other} only (--dataset auto or "
            f"--dataset {other} reads it); {where_to_get(dataset)}"
        )
    raise FileNotFoundError("no sentiment data set found: " + "; ".join(unique))


def _other_set_there(data: str | None, dataset: str) -> str | None:
    """The other sentiment set, where ``dataset`` names one and ``data`` holds the other."""
    if dataset == "auto":
        return None
    other = POLARITY if dataset == TWITTER else TWITTER
    try:
        corpus = read_corpus(find_dataset(other, data))
    except (FileNotFoundError, ValueError):
        return None
    return other if corpus.name == other else None


def label_counts(corpus: SentimentCorpus) -> dict[str, dict[str, int]]:
    """Labels by file of origin, e.g. ``{"positive": {"1": 3546, "0": 1454}, ...}``.

    Example:
        >>> c = SentimentCorpus("x", ["a", "b"], torch.tensor([1, 0]), ["positive"] * 2, True)
        >>> label_counts(c)
        {'positive': {'0': 1, '1': 1}}
    """
    counts = Counter(zip(corpus.sources, corpus.labels.tolist(), strict=True))
    return {
        source: {str(y): counts[(source, y)] for y in (0, 1)}
        for source in dict.fromkeys(corpus.sources)
    }


def _check_labels(labels: torch.Tensor) -> None:
    if labels.ndim != 1 or labels.numel() == 0:
        raise ValueError(f"labels must be a non-empty 1-d tensor, got shape {tuple(labels.shape)}")
    if not bool(((labels == 0) | (labels == 1)).all()):
        raise ValueError("labels must be 0 or 1")


def check_fractions(fractions: Sequence[float]) -> list[float]:
    """The fractions of :func:`stratified_split` as floats, or a ValueError: at least two,
    each positive, summing to 1.

    Example:
        >>> check_fractions([0.5, 0.5, 0.1])
        Traceback (most recent call last):
        ...
        ValueError: fractions must be >= 2 positive numbers summing to 1, got [0.5, 0.5, 0.1]
    """
    fractions = [float(f) for f in fractions]
    # `not f > 0` refuses NaN too, which every comparison lets through.
    if (
        len(fractions) < 2
        or any(not f > 0 for f in fractions)
        or not abs(sum(fractions) - 1) <= 1e-6
    ):
        raise ValueError(f"fractions must be >= 2 positive numbers summing to 1, got {fractions}")
    return fractions


def stratified_split(
    labels: torch.Tensor,
    fractions: Sequence[float] = (0.6, 0.2, 0.2),
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, ...]:
    """Shuffle each class and cut it by ``fractions``; return sorted index tensors.

    Every part gets ``round(fraction * class size)`` of each class (the last part
    takes the remainder), so class proportions agree across parts. The same
    generator state gives the same split.

    Example:
        >>> y = torch.tensor([0, 1] * 10)
        >>> g = torch.Generator().manual_seed(0)
        >>> train, dev, test = stratified_split(y, (0.6, 0.2, 0.2), g)
        >>> [len(train), len(dev), len(test)], y[test].sum().item()
        ([12, 4, 4], 2)
    """
    _check_labels(labels)
    fractions = check_fractions(fractions)
    parts: list[list[torch.Tensor]] = [[] for _ in fractions]
    for cls in (0, 1):
        members = torch.nonzero(labels == cls).flatten()
        members = members[torch.randperm(members.numel(), generator=generator).to(members.device)]
        start = 0
        for i, fraction in enumerate(fractions):
            stop = (
                members.numel()
                if i == len(fractions) - 1
                else start + round(fraction * members.numel())
            )
            parts[i].append(members[start:stop])
            start = stop
    return tuple(torch.cat(p).sort().values for p in parts)


def balanced_subsample(
    labels: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Sorted indices keeping every minority-class item and as many of the majority.

    The paper's sets hold equal numbers of positive and negative tweets.

    Example:
        >>> y = torch.tensor([1, 0, 0, 0, 1])
        >>> keep = balanced_subsample(y, torch.Generator().manual_seed(0))
        >>> y[keep].tolist().count(0)
        2
    """
    _check_labels(labels)
    pos = torch.nonzero(labels == 1).flatten()
    neg = torch.nonzero(labels == 0).flatten()
    if pos.numel() == 0 or neg.numel() == 0:
        raise ValueError("balancing needs both classes present")
    small, large = (pos, neg) if pos.numel() <= neg.numel() else (neg, pos)
    chosen = large[
        torch.randperm(large.numel(), generator=generator)[: small.numel()].to(large.device)
    ]
    return torch.cat([small, chosen]).sort().values
