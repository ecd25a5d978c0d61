"""A truncated or corrupt archive among the paper's data is a ValueError naming the file,
and on the command line one line with exit code 2.

A probe of 2026-11-29 (seventh session) found four readers that ended in EOFError,
zipfile.BadZipFile, tarfile.ReadError or gzip's "Not a gzipped file" (no path), and the
``reproduce`` commands in a traceback with exit code 1 — coref only after three minutes of
training.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from calib_metrics.cli import main
from calib_metrics.paper.coref_conllu import read_litbank_documents
from calib_metrics.paper.countries import COUNTRIES_FILE, CountryLexicon
from calib_metrics.paper.tweets import read_sentence_polarity, read_twitter_samples


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _not_an_archive(data: bytes) -> bytes:
    return b"this is a text line, not an archive\n"


def _gzipped(text: str) -> bytes:
    return gzip.compress(text.encode() * 200)


def _zipped() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("sentence_polarity/rt-polarity.pos", "a gem .\n" * 500)
        archive.writestr("sentence_polarity/rt-polarity.neg", "dull .\n" * 500)
    return buffer.getvalue()


def _tarred() -> bytes:
    row = "b1\t0\t0\tAlice\t_\t_\t_\t_\t_\t_\t_\t_\t(0)\n"
    text = ("#begin document (b1); part 0\n" + row * 200 + "#end document\n").encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("litbank/b1.conll")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    return buffer.getvalue()


def _tweets(folder: Path, spoil: Callable[[bytes], bytes]) -> Path:
    folder.mkdir(parents=True)
    (folder / "positive_tweets.txt.gz").write_bytes(spoil(_gzipped("fun :)\tpositive\n")))
    (folder / "negative_tweets.txt.gz").write_bytes(_gzipped("sad :(\tnegative\n"))
    return folder / "positive_tweets.txt.gz"


READERS = {
    "tweets": (_tweets, read_twitter_samples),
    "polarity": (
        lambda d, spoil: _write(d / "sentence_polarity.zip", spoil(_zipped())),
        read_sentence_polarity,
    ),
    "litbank": (
        lambda d, spoil: _write(d / "litbank-coref-conll.tar.gz", spoil(_tarred())),
        lambda d: read_litbank_documents(d / "litbank-coref-conll.tar.gz"),
    ),
    "lexicon": (
        lambda d, spoil: _write(d / COUNTRIES_FILE, spoil(_gzipped("FRANCE_ [FRA]\n"))),
        CountryLexicon.load,
    ),
}


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("spoil", [_truncated, _not_an_archive])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_spoilt_archive_is_a_value_error_naming_it(tmp_path: Path, reader, spoil) -> None:
    write, read = READERS[reader]
    spoilt = write(tmp_path / "data", spoil)
    with pytest.raises(ValueError, match=f"{spoilt}: not a readable"):
        read(tmp_path / "data")


def test_the_readers_read_the_unspoilt_archives(tmp_path: Path) -> None:
    """The same builders, unspoilt: the errors above come from the spoiling."""
    for name, (write, read) in READERS.items():
        write(tmp_path / name, lambda data: data)
        assert read(tmp_path / name), name


def test_reproduce_sentiment_on_a_truncated_archive_is_one_line_and_exit_2(
    tmp_path: Path, capsys
) -> None:
    spoilt = _tweets(tmp_path / "data" / "nltk-twitter-samples-text", _truncated)
    code = main(
        ["reproduce", "sentiment", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "out")]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and f"{spoilt}: not a readable gzip file" in err
