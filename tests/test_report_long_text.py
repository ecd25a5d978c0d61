"""Long unbroken text (a 300-character label, a 200-character file name) on the page and
in the notes: it wraps on the page instead of widening it, and a note names a long label
as the per-label chart's ticks do, not in full."""

from __future__ import annotations

import re

from calib_metrics.plot._text import _tick_labels
from calib_metrics.report import STYLE, difference_order, labels_outside_note
from calib_metrics.wording import MAX_NAME_CHARS, cut_middle, short_names, visible_controls

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


def test_a_notes_numbers_are_the_charts() -> None:
    """The note numbered names alike in the labels' order, the chart by the size of the
    difference: the note called X "#1" where the chart called it "#2"."""
    x, y = ("a" * 100 + m + "a" * 100 for m in "XY")
    rows = {x: {**OUTSIDE, "difference": 0.01}, y: {**OUTSIDE, "difference": 0.05}}
    order = difference_order({k: d["difference"] for k, d in rows.items()})
    assert order == [y, x]  # the chart's: largest difference first
    ticks = dict(zip(order, _tick_labels(order), strict=True))
    assert _named(labels_outside_note(rows)) == [ticks[x], ticks[y]]
    assert [ticks[x][-2:], ticks[y][-2:]] == ["#2", "#1"]


def test_a_long_name_of_controls_is_shortened_as_it_is_shown() -> None:
    """Characters had been counted before each control became its escape: 300 ESC
    characters came out 237 characters long, shown."""
    (short,) = short_names(["\x1b" * 300])
    assert 50 <= len(visible_controls(short)) <= MAX_NAME_CHARS and "…" in short


def test_a_cut_keeps_each_letter_with_its_combining_marks() -> None:
    """A cut between "e" and its accent (U+0301) had left the accent on the "…"."""
    (short,) = short_names(["e\u0301" * 40])
    head, tail = short.split("…")
    assert head.startswith("e") and tail.startswith("e") and head.endswith("\u0301")
    assert len(short) <= MAX_NAME_CHARS


def test_a_real_name_like_a_numbered_one_is_kept_apart() -> None:
    """A label named as another's numbered shortening ("…a #1") had shown alike with it."""
    x, y = ("a" * 100 + m + "a" * 100 for m in "XY")
    names = [x, y, cut_middle(x, MAX_NAME_CHARS - 3) + " #1"]
    shown = short_names(names)
    assert len(set(shown)) == 3 and shown[2] == names[2]
    assert all(len(text) <= MAX_NAME_CHARS for text in shown)


def test_a_cut_keeps_spacing_vowel_signs_and_selectors_with_their_letter() -> None:
    """Marks of combining class 0 (Devanagari's vowel sign U+093F, Thai's U+0E31, the
    emoji variation selector U+FE0F) had been cut from their letter onto the "…"."""
    for text in ("\u0915\u093f" * 45, "\u0e01\u0e31" * 45, "\u2764\ufe0f" * 45):
        head, tail = cut_middle(text, MAX_NAME_CHARS).split("…")
        assert head[:1] == tail[:1] == text[0] and head[-1] == text[1]
        assert len(head) % 2 == 0 and len(tail) % 2 == 0


def test_a_run_of_marks_is_cut_not_shown_as_an_ellipsis_alone() -> None:
    """300 accents (alone, or on one "e") had been one character wider than the room, so
    both sides of the cut came out empty: "…" alone, and two such labels "… #1", "… #2"."""
    for text in ("\u0301" * 300, "e" + "\u0301" * 300):
        short = cut_middle(text, MAX_NAME_CHARS)
        assert 30 <= len(short) <= MAX_NAME_CHARS and short != "…"


def test_a_backslash_counts_twice_only_where_it_is_shown_doubled() -> None:
    """Every backslash had counted 2, so a Windows path or a run of backslashes was cut to
    half the room; only those read as an escape (before t, r, x, u or a control) are
    doubled when shown."""
    for text in ("\\" * 300, "C:\\" + "a\\" * 100):
        assert len(visible_controls(cut_middle(text, MAX_NAME_CHARS))) == MAX_NAME_CHARS
    # A run doubled in the text but cut before "…" is shown single: the tail has its room.
    for text in ("\\" * 100 + "t" + "a" * 100, "C:" + "\\" * 50 + "users" + "a" * 100):
        assert len(visible_controls(cut_middle(text, MAX_NAME_CHARS))) == MAX_NAME_CHARS
    doubled = "\\t" * 100  # each shown as \\t: three characters
    shown = visible_controls(cut_middle(doubled, MAX_NAME_CHARS))
    assert MAX_NAME_CHARS - 3 <= len(shown) <= MAX_NAME_CHARS
