"""Readers for coreference corpora: GUM / OntoGUM CoNLL-U and LitBank CoNLL-2012.

Both readers return :class:`Document` objects holding the word tokens of every
sentence (``conllu.TokenList``, multi-word ranges and empty nodes removed, so that
``sentences[s][k]`` is the ``k``-th word) and the gold :class:`Mention` list in
document order. Mention indices are 0-based token positions within a sentence.

CoNLL-U coreference follows the CorefUD bracket notation in the MISC column, e.g.
``Entity=(4-abstract-new(5-object-new)`` opens a mention of entity ``4`` and a
single-token mention of entity ``5``; ``Entity=4)`` closes the innermost open
mention of entity ``4``. The entity id is the text after ``(`` up to the first ``-``
(a number in GUM/OntoGUM). Discontinuous mentions (``(e5[1/2]`` ... ``e5[2/2])``)
become one :class:`Mention` covering their parts, whose head is chosen among the
tokens of the parts only.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import conllu

from calib_metrics.paper.conllu_io import existing_file, open_text, readable, sentences

__all__ = [
    "Document",
    "Mention",
    "read_coref_documents",
    "read_litbank_documents",
    "split_ids",
]


@dataclass(frozen=True)
class Mention:
    """A gold mention: a token span of one sentence and its entity id.

    Attributes:
        sentence: 0-based sentence index within the document.
        start: 0-based index of the first word of the span (inclusive).
        end: exclusive end index.
        head: 0-based index (within the sentence) of the syntactic head: the word of the
            span whose dependency head lies outside the span (the first such word when
            there are several). Without a parse (LitBank) it is the last word.
        entity: document-local gold entity id.

    Example:
        >>> m = Mention(sentence=0, start=1, end=3, head=2, entity="7")
        >>> m.end - m.start
        2
    """

    sentence: int
    start: int
    end: int
    head: int
    entity: str


@dataclass
class Document:
    """A document: its id, ``# meta::`` comments, parsed sentences and gold mentions.

    Example:
        >>> doc = Document("d1", {}, [], [])
        >>> doc.doc_id, len(doc.mentions)
        ('d1', 0)
    """

    doc_id: str
    meta: dict[str, str] = field(default_factory=dict)
    sentences: list[conllu.TokenList] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)

    def mention_words(self, mention: Mention) -> list[str]:
        """The word forms of a mention's span.

        Example:
            >>> docs = read_coref_documents(io.StringIO(
            ...     "# newdoc id = d\\n"
            ...     "1\\tKim\\tKim\\tPROPN\\tNNP\\t_\\t2\\tnsubj\\t_\\tEntity=(1)\\n"
            ...     "2\\tslept\\tsleep\\tVERB\\tVBD\\t_\\t0\\troot\\t_\\t_\\n\\n"))
            >>> docs[0].mention_words(docs[0].mentions[0])
            ['Kim']
        """
        sent = self.sentences[mention.sentence]
        return [sent[k]["form"] for k in range(mention.start, mention.end)]


# ---------------------------------------------------------------------------
# CoNLL-U (GUM / OntoGUM / CorefUD)

_PART = re.compile(r"^(?P<eid>[^\[\-]+)(?:\[(?P<part>\d+)/(?P<total>\d+)\])?")


def _parse_entity_field(value: str) -> Iterator[tuple[str, str, int, int]]:
    """Yield ``(kind, eid, part, total)`` for each bracket item; kind is open/close/single."""
    pos, n = 0, len(value)
    while pos < n:
        if value[pos] == "(":
            stop = pos + 1
            while stop < n and value[stop] not in "()":
                stop += 1
            body = value[pos + 1 : stop]
            single = stop < n and value[stop] == ")"
            kind = "single" if single else "open"
            pos = stop + 1 if single else stop
        else:
            stop = value.find(")", pos)
            if stop < 0:
                raise ValueError(f"malformed Entity value {value!r}: text after the last ')'")
            body = value[pos:stop]
            if "(" in body:
                raise ValueError(f"malformed Entity value {value!r}")
            kind = "close"
            pos = stop + 1
        match = _PART.match(body)
        if match is None or not match.group("eid"):
            raise ValueError(f"malformed Entity value {value!r}: no entity id in {body!r}")
        part = int(match.group("part") or 1)
        total = int(match.group("total") or 1)
        yield kind, match.group("eid"), part, total


def span_head(sentence: Iterable[dict], tokens: list[int]) -> int:
    """The head of a span given as 0-based word positions: the first word whose head is outside.

    Example:
        >>> sent = [{"id": 1, "head": 2}, {"id": 2, "head": 0}, {"id": 3, "head": 2}]
        >>> span_head(sent, [0, 1])
        1
        >>> span_head(sent, [0])
        0
    """
    sentence = list(sentence)
    position = {tok["id"]: k for k, tok in enumerate(sentence)}
    inside = set(tokens)
    for k in tokens:
        head = sentence[k].get("head")
        if head is None:
            continue
        if position.get(head) not in inside:
            return k
    # no parse (or a cycle): fall back to the last word, the usual English head
    return tokens[-1]


def _sentence_mentions(sent: conllu.TokenList, index: int, doc_id: str) -> list[Mention]:
    open_stack: list[tuple[str, int, int, int, int]] = []  # eid, part, total, start, order
    parts: list[tuple[int, str, int, int, int, int]] = []  # open order, eid, part, total, s, e
    order = 0
    for k, tok in enumerate(sent):
        misc = tok.get("misc") or {}
        value = misc.get("Entity")
        if not value:
            continue
        try:
            items = list(_parse_entity_field(value))
        except ValueError as err:
            raise ValueError(
                f"document {doc_id!r}, sentence {index}, word {k + 1}: {err}"
            ) from None
        for kind, eid, part, total in items:
            if kind == "single":
                parts.append((order, eid, part, total, k, k + 1))
            elif kind == "open":
                open_stack.append((eid, part, total, k, order))
            else:
                for pos in range(len(open_stack) - 1, -1, -1):
                    if open_stack[pos][0] == eid and open_stack[pos][1] == part:
                        _, _, tot, start, opened = open_stack.pop(pos)
                        parts.append((opened, eid, part, tot, start, k + 1))
                        break
                else:
                    raise ValueError(
                        f"document {doc_id!r}, sentence {index}: closing bracket for entity "
                        f"{eid!r} at word {k + 1} has no open mention"
                    )
            # brackets count in opening order, so equal spans keep the outer one first
            order += 1
    if open_stack:
        eid = open_stack[-1][0]
        raise ValueError(
            f"document {doc_id!r}, sentence {index}: mention of entity {eid!r} is never closed "
            "within its sentence"
        )
    # Group discontinuous parts: a part 1 starts a mention; later parts join the most
    # recent mention of the same entity that still misses parts.
    parts.sort(key=lambda p: (p[4], -p[5], p[0]))
    groups: list[tuple[str, int, list[tuple[int, int]]]] = []
    pending: dict[str, int] = {}
    for _, eid, part, total, start, end in parts:
        if total > 1 and part > 1 and eid in pending:
            groups[pending[eid]][2].append((start, end))
            if part == total:
                pending.pop(eid)
            continue
        groups.append((eid, total, [(start, end)]))
        if total > 1:
            pending[eid] = len(groups) - 1
    mentions = []
    for eid, _, spans in groups:
        words = sorted({k for s, e in spans for k in range(s, e)})
        start, end = min(s for s, _ in spans), max(e for _, e in spans)
        mentions.append(Mention(index, start, end, span_head(sent, words), eid))
    return mentions


def _finish(doc: Document) -> Document:
    doc.mentions.sort(key=lambda m: (m.sentence, m.start, -m.end))
    return doc


def read_coref_documents(
    path: str | Path | io.TextIOBase, limit: int | None = None
) -> list[Document]:
    """Read a CoNLL-U file (``.conllu`` or ``.conllu.gz``) with ``Entity=`` coreference;
    with ``limit``, only its first ``limit`` documents (the rest is not read).

    Documents start at ``# newdoc id = ...`` comments; ``# meta::key = value`` comments
    fill :attr:`Document.meta`. Multi-word token lines and empty nodes are dropped from
    the sentences so that mention indices address words directly. Nested, single-token
    and discontinuous mentions are supported (see the module docstring).

    Example:
        >>> text = (
        ...     "# newdoc id = d1\\n# meta::dateCreated = 2017-08-08\\n"
        ...     "1\\tThe\\tthe\\tDET\\tDT\\t_\\t2\\tdet\\t_\\tEntity=(1\\n"
        ...     "2\\tcat\\tcat\\tNOUN\\tNN\\t_\\t3\\tnsubj\\t_\\tEntity=1)\\n"
        ...     "3\\tsat\\tsit\\tVERB\\tVBD\\t_\\t0\\troot\\t_\\t_\\n\\n"
        ...     "1\\tIt\\tit\\tPRON\\tPRP\\t_\\t2\\tnsubj\\t_\\tEntity=(1)\\n"
        ...     "2\\tslept\\tsleep\\tVERB\\tVBD\\t_\\t0\\troot\\t_\\t_\\n\\n"
        ... )
        >>> doc = read_coref_documents(io.StringIO(text))[0]
        >>> doc.doc_id, doc.meta["dateCreated"]
        ('d1', '2017-08-08')
        >>> [(m.sentence, m.start, m.end, m.head, m.entity) for m in doc.mentions]
        [(0, 0, 2, 1, '1'), (1, 0, 1, 0, '1')]
        >>> second = text.replace("# newdoc id = d1", "# newdoc id = d2")
        >>> [d.doc_id for d in read_coref_documents(io.StringIO(text + second), limit=1)]
        ['d1']
    """
    stream = open_text(path, missing="coreference file")
    default_id = Path(str(getattr(path, "name", "document"))).name.split(".")[0]
    docs: list[Document] = []
    try:
        name = str(path) if isinstance(path, (str, Path)) else getattr(path, "name", "stream")
        for sent in sentences(stream, str(name)):
            new_id = sent.metadata.get("newdoc id") or sent.metadata.get("newdoc")
            if new_id is not None or not docs:
                if len(docs) == limit:
                    break
                docs.append(Document(doc_id=new_id or default_id))
            doc = docs[-1]
            for key, value in sent.metadata.items():
                if key.startswith("meta::"):
                    doc.meta[key[len("meta::") :].strip()] = value
            words = conllu.TokenList(
                [tok for tok in sent if isinstance(tok["id"], int)], metadata=sent.metadata
            )
            try:
                found = _sentence_mentions(words, len(doc.sentences), doc.doc_id)
            except ValueError as err:
                # The mention errors locate the sentence in its document; the file
                # holding it had gone unnamed.
                sent_id = sent.metadata.get("sent_id")
                where = f" (sent_id {sent_id})" if sent_id else ""
                raise ValueError(f"{name}: {err}{where}") from None
            doc.mentions.extend(found)
            doc.sentences.append(words)
    finally:
        if stream is not path:
            stream.close()
    return [_finish(doc) for doc in docs]


# ---------------------------------------------------------------------------
# LitBank (CoNLL-2012, no parses)

_BEGIN = re.compile(r"#begin document \((?P<doc>[^)]*)\);?\s*(?:part\s+(?P<part>\d+))?")


def _word(k: int, form: str) -> dict:
    return {
        "id": k + 1,
        "form": form,
        "lemma": None,
        "upos": None,
        "xpos": None,
        "feats": None,
        "head": None,
        "deprel": None,
        "deps": None,
        "misc": None,
    }


def _sentence_spans(corefs: list[str], where: str, source: str) -> list[tuple[int, int, str]]:
    """(start, end, entity) of every mention in one sentence's coreference column."""
    spans: list[tuple[int, int, str]] = []
    open_stack: list[tuple[str, int]] = []
    for k, col in enumerate(corefs):
        if col in ("", "-", "_"):
            continue
        for item in col.split("|"):
            if item.startswith("(") and item.endswith(")"):
                spans.append((k, k + 1, item[1:-1]))
            elif item.startswith("("):
                open_stack.append((item[1:], k))
            elif item.endswith(")"):
                eid = item[:-1]
                for pos in range(len(open_stack) - 1, -1, -1):
                    if open_stack[pos][0] == eid:
                        spans.append((open_stack.pop(pos)[1], k + 1, eid))
                        break
                else:
                    raise ValueError(
                        f"{source}: {where}: closing bracket {item!r} has no open mention"
                    )
            else:
                raise ValueError(f"{source}: malformed coreference column {col!r}")
    if open_stack:
        raise ValueError(
            f"{source}: {where}: mention of entity {open_stack[-1][0]!r} is never closed "
            "within its sentence"
        )
    return spans


def _begin_document(line: str, source: str) -> Document:
    match = _BEGIN.match(line)
    doc_id = match.group("doc") if match else source
    if match and match.group("part") not in (None, "0"):
        doc_id = f"{doc_id}_part{match.group('part')}"
    return Document(doc_id=doc_id)


def _parse_conll2012(lines: Iterable[str], source: str) -> list[Document]:
    docs: list[Document] = []
    doc: Document | None = None
    words: list[dict] = []
    corefs: list[str] = []

    def flush() -> None:
        nonlocal words, corefs
        if doc is None or not words:
            return
        index = len(doc.sentences)
        where = f"document {doc.doc_id!r}, sentence {index}"
        spans = _sentence_spans(corefs, where, source)
        # no parse: the head of an English NP is taken to be its last word
        doc.mentions.extend(Mention(index, s, e, e - 1, eid) for s, e, eid in spans)
        doc.sentences.append(conllu.TokenList([_word(k, w["form"]) for k, w in enumerate(words)]))
        words, corefs = [], []

    for raw in lines:
        line = raw.rstrip("\n")
        if line.startswith("#begin document"):
            flush()
            doc = _begin_document(line, source)
            docs.append(doc)
        elif line.startswith("#end document"):
            flush()
            doc = None
        elif not line.strip():
            flush()
        else:
            cols = line.split("\t") if "\t" in line else line.split()
            if doc is None:
                raise ValueError(f"{source}: token line outside '#begin document': {line!r}")
            if len(cols) < 5:
                raise ValueError(f"{source}: expected >= 5 columns, got {len(cols)}: {line!r}")
            words.append({"form": cols[3]})
            corefs.append(cols[-1].strip())
    flush()
    return [_finish(d) for d in docs]


def read_litbank_documents(path: str | Path) -> list[Document]:
    """Read LitBank coreference in CoNLL-2012 format.

    ``path`` may be the ``litbank-coref-conll.tar.gz`` archive, a folder of ``.conll``
    files or one ``.conll`` file. LitBank has no POS tags or parses: the tokens carry
    only ``form`` (other fields are ``None``) and every mention's head is the last word
    of its span. Singletons are annotated, so every entity is kept.

    Example:
        >>> import tempfile, os
        >>> rows = ["#begin document (b1); part 0",
        ...         "b1\\t0\\t0\\tAlice\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t(0)",
        ...         "b1\\t0\\t1\\tran\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_", "",
        ...         "b1\\t0\\t0\\tShe\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t(0)", "#end document"]
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     p = os.path.join(tmp, "b1.conll")
        ...     _ = open(p, "w").write("\\n".join(rows) + "\\n")
        ...     doc = read_litbank_documents(p)[0]
        >>> doc.doc_id, [(m.sentence, m.start, m.entity) for m in doc.mentions]
        ('b1', [(0, 0, '0'), (1, 0, '0')])
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"LitBank data not found: {path}")
    docs: list[Document] = []
    if path.is_dir():
        files = sorted(path.rglob("*.conll"))
        if not files:
            raise FileNotFoundError(f"no .conll files under {path}")
        for file in files:
            with readable(file, "CoNLL-2012 file"):
                text = file.read_text(encoding="utf-8")
            docs += _parse_conll2012(text.splitlines(), str(file))
    elif path.name.endswith((".tar.gz", ".tgz", ".tar")):
        with readable(path, "tar archive"), tarfile.open(path) as tar:
            members = sorted(
                (m for m in tar.getmembers() if m.isfile() and m.name.endswith(".conll")),
                key=lambda m: m.name,
            )
            if not members:
                raise FileNotFoundError(f"no .conll files inside {path}")
            for member in members:
                source = f"{path}:{member.name}"
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                with readable(source, "CoNLL-2012 file"):
                    text = data.decode("utf-8")
                docs += _parse_conll2012(text.splitlines(), source)
    else:
        with readable(path, "CoNLL-2012 file"):
            text = path.read_text(encoding="utf-8")
        docs = _parse_conll2012(text.splitlines(), str(path))
    return docs


# ---------------------------------------------------------------------------
# splits


def split_ids(path: str | Path) -> dict[str, list[str]]:
    """Parse GUM's ``splits.md``: ``## name`` headings followed by ``* doc_id`` bullets.

    Returns every split listed (for GUM: ``dev``, ``test``, ``test2``, ``train``), in file
    order.

    Example:
        >>> import tempfile, os
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     p = os.path.join(tmp, "splits.md")
        ...     text = "# Splits\\n\\n## dev\\n\\n  * A\\n  * B\\n\\n## test\\n  * C\\n"
        ...     _ = open(p, "w").write(text)
        ...     split_ids(p)
        {'dev': ['A', 'B'], 'test': ['C']}
    """
    path = existing_file(path, "splits file")
    splits: dict[str, list[str]] = {}
    current: str | None = None
    with readable(path, "splits file"):
        text = path.read_text(encoding="utf-8")
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("## "):
            current = stripped[3:].strip()
            splits[current] = []
        elif current is not None and stripped[:2] in ("* ", "- "):
            splits[current].append(stripped[2:].strip())
    if not splits:
        raise ValueError(f"{path}: no '## split' sections found")
    return splits
