"""``calib-metrics reproduce`` on missing, partial, empty or misencoded data and on bad
options: one line naming the file (or option) and exit code 2, before any training.

A probe of 2026-11-30 found twitter-pos ending in a StopIteration traceback after training
on the tweets when EWT was missing, sentiment falling back to the movie-review sentences
when one tweet file of two was missing, errors that named no file, and options checked
only after training. The training steps are replaced here by ones that fail loudly, so
each test shows the check comes first; all data are synthetic.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from calib_metrics import cli
from calib_metrics.paper import sentiment, twitter_pos
from calib_metrics.paper.tweets import POLARITY, load_corpus


def one_line_error(capsys, *argv) -> str:
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    lines = [line for line in err.splitlines() if line.startswith("calib-metrics: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _never(*args, **kwargs):
    raise AssertionError("training was reached before the data or options were checked")


def _gz(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(text)
    return path


_WORDS = [("the", "D", "DT"), ("dog", "N", "NN"), ("runs", "V", "VBZ"), ("!", ",", ".")]


def _ark(folder: Path) -> Path:
    rng = random.Random(0)
    tweet = "\n".join(f"{w}\t{t}" for w, t, _ in _WORDS)
    for name in ("oct27.train", "oct27.dev", "oct27.test", "daily547.conll"):
        _gz(folder / f"{name}.gz", "\n\n".join(tweet for _ in range(rng.randint(3, 6))) + "\n")
    return folder


def _conllu_rows(column: int = 4) -> str:
    rows = []
    for i, (word, _, ptb) in enumerate(_WORDS, 1):
        cells = [str(i), word, "_", "_", "_", "_", "0" if i == 1 else "1", "dep", "_", "_"]
        cells[column] = ptb
        rows.append("\t".join(cells))
    return "\n".join(rows) + "\n\n"


def _ewt(folder: Path, skip: str = "", empty: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        if split != skip:
            text = "" if split == empty else _conllu_rows() * 3
            _gz(folder / f"en_ewt-ud-{split}.conllu.gz", text)
    return folder


@pytest.mark.parametrize("ewt", ["absent", "empty folder", "no test file"])
def test_twitter_pos_checks_ewt_before_training_on_tweets(tmp_path, capsys, monkeypatch, ewt):
    monkeypatch.setattr(twitter_pos, "_train", _never)
    data = tmp_path / "data"
    _ark(data / "ark-twitter-pos")
    if ewt == "empty folder":
        (data / "ud-english-ewt").mkdir()
    elif ewt == "no test file":
        _ewt(data / "ud-english-ewt", skip="test")
    out = tmp_path / "out"
    err = one_line_error(capsys, "reproduce", "twitter-pos", "--quick", "--data", data,
                         "--out", out)  # fmt: skip
    split = "test" if ewt == "no test file" else "train"
    assert f"en_ewt-ud-{split}.conllu.gz" in err
    assert not out.exists()


def _polarity(folder: Path) -> Path:
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "sentence_polarity.zip", "w") as archive:
        archive.writestr("sentence_polarity/rt-polarity.pos", "a gem .\n" * 50)
        archive.writestr("sentence_polarity/rt-polarity.neg", "dull .\n" * 50)
    return folder


@pytest.mark.parametrize("present", [["positive"], ["negative"], []])
def test_a_partial_tweet_folder_is_named_not_replaced_by_the_fallback(
    tmp_path, capsys, monkeypatch, present
):
    monkeypatch.setattr(sentiment, "_feature_texts", _never)
    data = tmp_path / "data"
    _polarity(data / "nltk-sentence-polarity")
    tweets = data / "nltk-twitter-samples-text"
    tweets.mkdir(parents=True)
    for source in present:
        _gz(tweets / f"{source}_tweets.txt.gz", f"fun\t{source}\n")
    missing = next(s for s in ("positive", "negative") if s not in present)
    with pytest.raises(FileNotFoundError, match=f"{tweets / missing}_tweets.txt.gz"):
        load_corpus(str(data))
    err = one_line_error(capsys, "reproduce", "sentiment", "--data", data, "--out", tmp_path / "o")
    assert f"{missing}_tweets.txt.gz" in err


def test_the_fallback_stays_when_the_tweet_folder_is_absent(tmp_path):
    _polarity(tmp_path / "nltk-sentence-polarity")
    corpus, folder = load_corpus(str(tmp_path))
    assert corpus.name == POLARITY and folder.name == POLARITY
