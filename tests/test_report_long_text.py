"""Long unbroken text (a 300-character label, a 200-character file name) on the page and
in the notes: it wraps on the page instead of widening it, and a note names a long label
as the per-label chart's ticks do, not in full."""

from __future__ import annotations

import re

from calib_metrics.report import STYLE, labels_outside_note
from calib_metrics.wording import MAX_NAME_CHARS

# The page's blocks of text: its title, headings, paragraphs (the notes, the command line),
# warnings and figure captions ("At the edge: ...").
TEXT_BLOCKS = ("h1", "h2", "h3", "p", "li", "figcaption")


def _wrapped_anywhere(style: str) -> set[str]:
    """The selectors of the rules of ``style`` that set ``overflow-wrap: anywhere``."""
    selectors: set[str] = set()
    for chosen, body in re.findall(r"([^{}]+)\{([^}]*)\}", style):
        if re.search(r"overflow-wrap\s*:\s*anywhere", body):
            selectors |= {s.strip() for s in chosen.split(",")}
    return selectors


def test_every_block_of_text_wraps_anywhere() -> None:
    """Only table cells had wrapped: a 200-character file name in the title and on the
    command line, or a 300-character label in a note, scrolled the page sideways."""
    assert set(TEXT_BLOCKS) <= _wrapped_anywhere(STYLE)


OUTSIDE = {"difference": 0.0, "lower": -0.0023, "upper": -0.0011}
INSIDE = {"difference": 0.01, "lower": -0.01, "upper": 0.03}


def _named(note: str) -> list[str]:
    """The labels a note names (between its first parentheses)."""
    return note[note.index("(") + 1 : note.index("):")].split(", ")


def test_a_note_shortens_a_long_label_as_the_chart_does() -> None:
    """A 300-character label had been named whole, bloating the note past 300 characters."""
    note = labels_outside_note({"L" * 300: OUTSIDE, "VB": INSIDE})
    (named,) = _named(note)
    assert len(named) == MAX_NAME_CHARS and named.startswith("LLL") and "…" in named
    # Two labels that differ only in the middle cut out are still told apart.
    rows = {"a" * 100 + m + "a" * 100: OUTSIDE for m in "XY"}
    assert [name[-3:] for name in _named(labels_outside_note(rows))] == [" #1", " #2"]
