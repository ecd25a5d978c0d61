"""CoNLL-U files (plain or gzipped) read sentence by sentence, with errors naming the file.

A corrupt download, a file of another format or a path to the wrong file had ended the
``reproduce`` commands in conllu's ``ParseException`` traceback; every reader of the
paper's CoNLL-U data goes through :func:`sentences`, which names the file instead.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from pathlib import Path

import conllu
from conllu.exceptions import ParseException


def open_text(path: str | Path | io.TextIOBase, missing: str = "CoNLL-U file") -> io.TextIOBase:
    """A text stream of ``path`` (UTF-8; ``.gz`` decompressed), or ``path`` itself when it
    is a stream already; ``missing`` names the file in the error for a missing one."""
    if isinstance(path, io.TextIOBase):
        return path
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{missing} not found: {path}")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def sentences(stream: io.TextIOBase, name: str) -> Iterator[conllu.TokenList]:
    """The sentences of a CoNLL-U ``stream``; a file that is not CoNLL-U (or not UTF-8, or
    a broken archive) is a ValueError naming ``name``.

    Example:
        >>> text = "1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t_\\t_\\n\\n"
        >>> [s[0]["form"] for s in sentences(io.StringIO(text), "a.conllu")]
        ['Hi']
        >>> list(sentences(io.StringIO("<html>\\nnot this\\n"), "a.conllu"))
        Traceback (most recent call last):
        ...
        ValueError: a.conllu: not a readable CoNLL-U file (Invalid line format, line must contain either tabs or two spaces.)
    """  # noqa: E501
    try:
        yield from conllu.parse_incr(stream)
    except (ParseException, UnicodeDecodeError, EOFError, OSError, zlib.error) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{name}: not a readable CoNLL-U file ({reason})") from None
