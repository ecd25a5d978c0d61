"""The paper's text data (plain or gzipped) read with errors that name the file.

A corrupt download, a file of another format or a path to the wrong file had ended the
``reproduce`` commands in conllu's ``ParseException`` traceback, or in a gzip or decoding
error that named no file; the CoNLL-U readers go through :func:`sentences`, the readers
of line formats (GUM's entities, ARK Twitter) through :func:`lines`, and the readers of
archives (NLTK's tweets and sentence polarity, LitBank, the Phoenix lexicon) read inside
:func:`readable`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import conllu
from conllu.exceptions import ParseException


def existing_file(path: str | Path, what: str) -> Path:
    """``path`` as a Path, refused when it is no file: missing (FileNotFoundError) or a
    folder (IsADirectoryError; a data set's folder had been "not found"). ``what`` names
    the file in the message.

    Example:
        >>> import tempfile
        >>> existing_file(tempfile.gettempdir(), "coreference file")
        Traceback (most recent call last):
        ...
        IsADirectoryError: coreference file ...: a folder, not a file (give one of its files)
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{what} {path}: a folder, not a file (give one of its files)")
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    return path


def open_text(path: str | Path | io.TextIOBase, missing: str = "CoNLL-U file") -> io.TextIOBase:
    """A text stream of ``path`` (UTF-8; ``.gz`` decompressed), or ``path`` itself when it
    is a stream already; ``missing`` names the file in the error for a missing one."""
    if isinstance(path, io.TextIOBase):
        return path
    path = existing_file(path, missing)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


# What a broken archive or a file that is not UTF-8 raises while it is read.
_READ_ERRORS = (
    UnicodeDecodeError,
    EOFError,
    OSError,
    zlib.error,
    zipfile.BadZipFile,
    tarfile.TarError,
)


@contextlib.contextmanager
def readable(name: str | Path, kind: str) -> Iterator[None]:
    """Read ``name`` inside this: a truncated or corrupt archive, or a file that is not
    UTF-8, is a ValueError naming it and its ``kind`` (a missing file stays a
    FileNotFoundError).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "tweets.txt.gz"
        >>> _ = path.write_text("not gzip")
        >>> with readable(path, "gzip file"):
        ...     _ = gzip.open(path).read()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: .../tweets.txt.gz: not a readable gzip file (Not a gzipped file (b'no'))
    """
    try:
        yield
    except FileNotFoundError:
        raise
    except _READ_ERRORS as err:
        raise ValueError(f"{name}: not a readable {kind} ({_reason(err)})") from None


def lines(path: Path) -> Iterator[str]:
    """The lines of a text file (UTF-8, ``.gz`` decompressed); a file that is not UTF-8 or
    a broken archive is a ValueError naming it.

    Example:
        >>> import tempfile
        >>> file = Path(tempfile.mkdtemp()) / "t.txt.gz"
        >>> _ = file.write_bytes(b"not gzip")
        >>> list(lines(file))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: .../t.txt.gz: not readable text (Not a gzipped file (b'no'))
    """
    try:
        with open_text(path) as stream:
            yield from stream
    except _READ_ERRORS as err:
        raise ValueError(f"{path}: not readable text ({_reason(err)})") from None


def _reason(err: Exception) -> str:
    """An exception's first line, or its type when it says nothing."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


class _CheckedLines:
    """The lines of a CoNLL-U stream, refusing a tab-separated token line whose column
    count is not the file's (10, or ``# global.columns``): conllu fills missing columns
    with nothing and drops extra ones, so a shifted or truncated row was read silently."""

    def __init__(self, stream: io.TextIOBase, name: str) -> None:
        self.stream, self.name = stream, name

    def read(self, size: int = -1) -> str:  # parse_incr asks for a file-like object
        return self.stream.read(size)

    def __iter__(self) -> Iterator[str]:
        expected = 10
        for number, line in enumerate(self.stream, 1):
            if line.startswith("# global.columns ="):
                expected = len(line.split("=", 1)[1].split())
            elif line.strip() and not line.startswith("#"):
                columns = len(line.rstrip("\r\n").split("\t"))
                # One column is no tab-separated row at all: conllu names that itself.
                if columns not in (1, expected):
                    raise ValueError(
                        f"{self.name}:{number}: expected {expected} columns, got {columns}"
                    )
            yield line


def sentences(stream: io.TextIOBase, name: str) -> Iterator[conllu.TokenList]:
    """The sentences of a CoNLL-U ``stream``; a file that is not CoNLL-U (or not UTF-8, or
    a broken archive) is a ValueError naming ``name``, a row with the wrong number of
    columns one naming ``name`` and the line.

    Example:
        >>> text = "1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t_\\t_\\n\\n"
        >>> [s[0]["form"] for s in sentences(io.StringIO(text), "a.conllu")]
        ['Hi']
        >>> list(sentences(io.StringIO("<html>\\nnot this\\n"), "a.conllu"))
        Traceback (most recent call last):
        ...
        ValueError: a.conllu: not a readable CoNLL-U file (Invalid line format, line must contain either tabs or two spaces.)
        >>> list(sentences(io.StringIO("# c\\n1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\n"), "a.conllu"))
        Traceback (most recent call last):
        ...
        ValueError: a.conllu:2: expected 10 columns, got 7
    """  # noqa: E501
    try:
        yield from conllu.parse_incr(_CheckedLines(stream, name))
    except (ParseException, *_READ_ERRORS) as err:
        raise ValueError(f"{name}: not a readable CoNLL-U file ({_reason(err)})") from None
