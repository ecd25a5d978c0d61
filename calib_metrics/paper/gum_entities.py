"""Entity mentions of GUM (the MISC ``Entity=`` brackets) as flat BIO-tagged sentences.

GUM marks every mention, with its entity type (person, place, organization, abstract,
object, event, time, substance, animal, plant, quantity), in CorefUD brackets:
``Entity=(4-abstract-new-...(5-object-new-...)`` opens a mention of entity 4 and a
one-word mention of entity 5; ``Entity=4)`` closes entity 4's innermost open mention.
The type is the second field of the opening bracket
(``# global.Entity = GRP-etype-infstat-...``). Pronouns and common noun phrases are
mentions too, so the task is typed mention detection, not only named entities.

Mentions nest ("[[Spanish] Art]"), BIO tags do not. :func:`flatten` keeps, from the
longest down, every mention of at most ``max_length`` words that overlaps none kept
already: outer mentions win, and inside a mention too long to keep its largest
sub-mentions survive. Discontinuous mentions (``[1/2]`` parts) are dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from calib_metrics.paper.conllu_io import existing_file, lines

ENTITY_TYPES = (
    "abstract",
    "animal",
    "event",
    "object",
    "organization",
    "person",
    "place",
    "plant",
    "quantity",
    "substance",
    "time",
)
_OPEN = re.compile(r"\(([^()\-]+)-([^()\-]+)[^()]*")
_ITEM = re.compile(r"\(([^()]*)(\)?)|([^()]+)\)")


class Span(NamedTuple):
    """A mention: words ``[start, end)`` of its sentence, of entity type ``label``."""

    start: int
    end: int
    label: str


class EntitySentence(NamedTuple):
    """A sentence's words, all its (possibly nested) mentions, and its document id."""

    words: list[str]
    spans: list[Span]
    document: str


def parse_entity_field(value: str) -> list[tuple[str, str, str]]:
    """Bracket items of one ``Entity=`` value: ``(kind, entity id, type)``.

    ``kind`` is ``open``, ``close`` or ``single``; a closing bracket has no type ("").

    Example:
        >>> parse_entity_field("(4-abstract-new-x(5-object-new-y)")
        [('open', '4', 'abstract'), ('single', '5', 'object')]
        >>> parse_entity_field("4)3)")
        [('close', '4', ''), ('close', '3', '')]
    """
    items = []
    for match in _ITEM.finditer(value):
        body, closed, closing = match.groups()
        if closing is not None:
            items.append(("close", closing, ""))
            continue
        head = _OPEN.match("(" + body)
        if head is None:
            raise ValueError(f"malformed Entity value {value!r}: {body!r} has no id and type")
        items.append(("single" if closed else "open", head.group(1), head.group(2)))
    return items


def _sentence_spans(
    entity_values: list[str | None], path: Path | None = None, line_numbers: Sequence[int] = ()
) -> tuple[list[Span], int]:
    """Spans of one sentence from its words' Entity values; and how many were dropped.
    A malformed value's error names ``path`` and the word's line (``line_numbers``)."""
    stacks: dict[str, list[tuple[int, str]]] = {}
    spans: list[Span] = []
    dropped = 0
    for i, value in enumerate(entity_values):
        if not value:
            continue
        if "[" in value:  # discontinuous parts: not a contiguous span
            dropped += 1
            continue
        try:
            items = parse_entity_field(value)
        except ValueError as err:
            if path is None:
                raise
            raise ValueError(f"{path}:{line_numbers[i]}: {err}") from None
        for kind, eid, label in items:
            if kind == "single":
                spans.append(Span(i, i + 1, label))
            elif kind == "open":
                stacks.setdefault(eid, []).append((i, label))
            elif stacks.get(eid):
                start, label = stacks[eid].pop()
                spans.append(Span(start, i + 1, label))
    dropped += sum(len(s) for s in stacks.values())  # opened, never closed in the sentence
    return sorted(spans), dropped


def read_gum_entities(path: str | os.PathLike, limit: int | None = None) -> list[EntitySentence]:
    """Sentences (all, or the first ``limit``) of a GUM CoNLL-U file with their mentions.

    Multiword-token ranges and empty nodes are skipped; lines are split by hand, since
    only the word and MISC columns are needed (several times faster than a full parse).

    Example:
        >>> import tempfile, pathlib
        >>> cols = "\\t_\\t_\\t_\\t_\\t0\\tdep\\t_\\tEntity="
        >>> rows = ["# newdoc id = d1", "1\\tSpanish" + cols + "(2-abstract-new(3-place-new)",
        ...         "2\\tArt" + cols + "2)"]
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "g.conllu"
        >>> _ = p.write_text("\\n".join(rows) + "\\n\\n")
        >>> read_gum_entities(p)[0].spans
        [Span(start=0, end=1, label='place'), Span(start=0, end=2, label='abstract')]
    """
    path = existing_file(path, "GUM file")
    out: list[EntitySentence] = []
    document, words, values = "", [], []
    numbers: list[int] = []  # each word's line, for a malformed Entity value's error
    for number, line in enumerate(lines(path), 1):
        if limit is not None and len(out) >= limit:
            break
        if line.startswith("# newdoc id"):
            document = line.split("=", 1)[1].strip()
        if line.startswith("#"):
            continue
        if not line.strip():
            if words:
                spans = _sentence_spans(values, path, numbers)[0]
                out.append(EntitySentence(words, spans, document))
            words, values, numbers = [], [], []
            continue
        cols = line.rstrip("\n").split("\t")
        if len(cols) != 10:
            raise ValueError(f"{path}:{number}: expected 10 columns, got {len(cols)}")
        if not cols[0].isdigit():  # multiword range or empty node
            continue
        words.append(cols[1])
        entity = [f[7:] for f in cols[9].split("|") if f.startswith("Entity=")]
        values.append(entity[0] if entity else None)
        numbers.append(number)
    if words and (limit is None or len(out) < limit):
        out.append(EntitySentence(words, _sentence_spans(values, path, numbers)[0], document))
    return out


def flatten(spans: list[Span], max_length: int) -> list[Span]:
    """Non-overlapping spans: longest first, each of at most ``max_length`` words.

    Example:
        >>> nested = [Span(0, 1, "place"), Span(0, 2, "abstract"), Span(3, 9, "event"),
        ...           Span(4, 6, "person")]
        >>> flatten(nested, max_length=4)
        [Span(start=0, end=2, label='abstract'), Span(start=4, end=6, label='person')]
    """
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    kept: list[Span] = []
    taken: set[int] = set()
    for span in sorted(spans, key=lambda s: (s.start - s.end, s.start, s.label)):
        positions = range(span.start, span.end)
        if span.end - span.start <= max_length and taken.isdisjoint(positions):
            kept.append(span)
            taken.update(positions)
    return sorted(kept)


def bio_tags(length: int, spans: list[Span]) -> list[str]:
    """BIO tags of a sentence of ``length`` words with non-overlapping ``spans``.

    Example:
        >>> bio_tags(4, [Span(0, 2, "person"), Span(3, 4, "place")])
        ['B-person', 'I-person', 'O', 'B-place']
    """
    tags = ["O"] * length
    for start, end, label in spans:
        if any(t != "O" for t in tags[start:end]):
            raise ValueError(f"spans overlap at {start}:{end}; flatten them first")
        tags[start:end] = [f"B-{label}"] + [f"I-{label}"] * (end - start - 1)
    return tags


def bilou_tags(length: int, spans: list[Span]) -> list[str]:
    """BILOU tags: a one-word span is ``U-X``, a longer one ``B-X I-X* L-X``.

    Example:
        >>> bilou_tags(5, [Span(0, 3, "person"), Span(4, 5, "place")])
        ['B-person', 'I-person', 'L-person', 'O', 'U-place']
    """
    tags = bio_tags(length, spans)
    for start, end, label in spans:
        if end - start == 1:
            tags[start] = f"U-{label}"
        else:
            tags[end - 1] = f"L-{label}"
    return tags


def bio_spans(tags: list[str]) -> list[Span]:
    """Spans of a BIO or BILOU sequence (an ``I-X`` or ``L-X`` that does not continue
    ``X`` opens one; ``L-X`` and ``U-X`` close theirs).

    Example:
        >>> bio_spans(["B-person", "I-person", "O", "I-place"])
        [Span(start=0, end=2, label='person'), Span(start=3, end=4, label='place')]
        >>> bio_spans(["B-person", "L-person", "U-place", "O"])
        [Span(start=0, end=2, label='person'), Span(start=2, end=3, label='place')]
    """
    spans: list[Span] = []
    start, label = None, None
    for i, tag in enumerate([*tags, "O"]):
        continues = tag[:2] in ("I-", "L-") and tag[2:] == label
        if start is not None and not continues:
            spans.append(Span(start, i, label))
            start, label = None, None
        if tag[:2] in ("B-", "U-") or (tag[:2] in ("I-", "L-") and not continues):
            start, label = i, tag[2:]
        if tag[:2] in ("L-", "U-"):
            spans.append(Span(start, i + 1, label))
            start, label = None, None
    return spans
