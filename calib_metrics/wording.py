"""Counts, names and interval levels as every output writes them: counts exactly, with a
noun that agrees; levels with every digit they have (``99.9%``).

The command's text, the HTML report and the figures' titles print pair, bin and label
counts through these, so that no output writes ``1.23457e+06 pairs`` (``:g`` keeps six
significant digits) or ``1 bins``. Text that no output can show (control characters)
is written as its escape. Pure text: it imports nothing of the library, so that the
report and the command use it without loading matplotlib.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from collections.abc import Sequence


def count_text(count: float, grouped: bool = False) -> str:
    """A count, exactly: a whole one as an integer (a Python int, or an integer tensor or
    array, as it is: through a float 10**30 had printed as 1000000000000000019884624838656),
    a fractional one (a hand-built bin's, say) with at most three decimals, or three
    significant digits where those would print 0 (0.0004 had printed as ``0``).
    ``grouped=True`` separates thousands with commas (titles' ``N=1,234,567``).

    Example:
        >>> count_text(1234567.0), count_text(12), count_text(12.5), count_text(2 / 3)
        ('1234567', '12', '12.5', '0.667')
        >>> count_text(10**30) == "1" + "0" * 30, count_text(0.0004), count_text(0.000123456)
        (True, '0.0004', '0.000123')
        >>> count_text(float("nan")), count_text(1234567.5, grouped=True)
        ('nan', '1,234,567.5')
    """
    # A tensor's, an array's or a NumPy scalar's own value: an int for an integer dtype.
    value = count.item() if hasattr(count, "item") else count
    text = str(int(value)) if isinstance(value, int) else _real_text(float(value))
    return _grouped(text) if grouped else text


def _real_text(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    if value.is_integer():
        return str(int(value))
    # Three decimals; more for a small fraction, so that its first three digits show.
    decimals = max(3, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


def _grouped(text: str) -> str:
    """``text`` (a number :func:`count_text` printed) with commas between thousands."""
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, point, fraction = digits.partition(".")
    if not whole.isdigit():  # nan, inf
        return text
    return f"{sign}{int(whole):,}{point}{fraction}"


def counted(count: float, noun: str, plural: str | None = None, grouped: bool = False) -> str:
    """``count`` (:func:`count_text`, ``grouped`` as there) and ``noun``, plural unless the
    count prints as ``1`` (0.9996 prints as 1: "1 pair", not "1 pairs"; ``plural`` names
    an irregular one).

    Example:
        >>> counted(1, "bin"), counted(3, "bin"), counted(1234567, "pair")
        ('1 bin', '3 bins', '1234567 pairs')
        >>> counted(1, "class", "classes"), counted(2, "class", "classes")
        ('1 class', '2 classes')
        >>> counted(0.9996, "pair"), counted(1.5, "pair")
        ('1 pair', '1.5 pairs')
    """
    text = count_text(count, grouped)
    word = noun if text == "1" else (plural or f"{noun}s")
    return f"{text} {word}"


def level_text(confidence: float) -> str:
    """An interval's level as every output writes it: ``95%``, ``99.9%``, ``97.5%``. Every
    digit the level has is kept (up to ten, more for a level that ten round to 100%):
    rounded to a whole percent, 0.999 had read "100%" and 0.975 "98%"; float noise
    (100 × 0.57 = 56.99999999999999) is not shown.

    Example:
        >>> level_text(0.95), level_text(0.999), level_text(0.975), level_text(0.57)
        ('95%', '99.9%', '97.5%', '57%')
        >>> level_text(0.9999999), level_text(0.9999999999999999)
        ('99.99999%', '99.99999999999999%')
    """
    text = f"{100 * float(confidence):.10g}"
    if text == "100" and confidence < 1:  # a level below 1 had read "100%"
        text = repr(100 * float(confidence))
    return f"{text}%"


#: Characters that no font draws, and most of which HTML does not allow in a document
#: (controls other than line feed; C1 controls; lone surrogates, which UTF-8 cannot even
#: encode; noncharacters): a label read from a file may hold them. Tab and carriage return
#: are among them: HTML allows them, but a figure drew neither (matplotlib warned "Glyph 9
#: missing from font") and the page showed a tab as a space, so each output writes them as
#: escapes alike. A line feed stays a line break. And the invisible format characters
#: that change how the text around them reads without a mark of their own: the bidi
#: embeddings, overrides and isolates (U+202E drew "\u202eBREV" as "VERB", one label
#: passing for another), the zero-width space and word joiner, the byte-order mark and
#: the soft hyphen. What text needs to read or shape stays: the zero-width (non-)joiners
#: (emoji, Persian), the directional marks of Hebrew and Arabic text (U+200E, U+200F,
#: U+061C) and Mongolian's vowel separator (U+180E).
_NOT_TEXT = re.compile(
    r"[\x00-\x09\x0b-\x1f\x7f-\x9f\xad\u200b\u202a-\u202e\u2060-\u2064\u2066-\u2069"
    r"\ufeff\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]"
)


#: Backslashes that would read as the start of an escape :func:`visible_controls` writes:
#: those right before a ``t``, ``r``, ``x`` or ``u``, or before a character it escapes.
#: Each such run is doubled, so that an odd run there starts an escape and an even one is
#: only backslashes: the four characters ``a\tb`` had shown as a label holding a tab did.
#: Every other backslash stays as typed (``C:\data``, ``\\server``). A line feed stays a
#: line break and every escaped character is below U+10000, so ``\n`` and ``\U`` are
#: never written and need no doubling.
_ESCAPE_LIKE = re.compile(rf"\\+(?=[trxu]|{_NOT_TEXT.pattern})")

#: The same for a text shown on one line (``one_line=True``: a figure's tick, where a
#: line break had run into the next row): the line feed is escaped too, and a
#: backslash run before an ``n`` doubled.
_NOT_ONE_LINE = re.compile(rf"{_NOT_TEXT.pattern}|\n")
_ESCAPE_LIKE_ONE_LINE = re.compile(rf"\\+(?=[trxun]|{_NOT_ONE_LINE.pattern})")


def _patterns(one_line: bool) -> tuple[re.Pattern, re.Pattern]:
    """What is escaped, and the backslash runs doubled, in a text shown (on one line)."""
    return (_NOT_ONE_LINE, _ESCAPE_LIKE_ONE_LINE) if one_line else (_NOT_TEXT, _ESCAPE_LIKE)


def visible_controls(text: str, one_line: bool = False) -> str:
    r"""``text`` with every character of :data:`_NOT_TEXT` written as its Python escape
    (``\x01``), so that a label holding one is shown, not dropped or garbled: the HTML
    report's page and every figure's text pass through this. Backslashes that would
    read as such an escape are doubled (:data:`_ESCAPE_LIKE`), so that no two texts are
    shown alike. ``one_line=True`` escapes a line feed too (``\n``).

    Example:
        >>> print(visible_controls("ctrl\x01x, del\x7f, tab\tcr\r, line\nkept"))
        ctrl\x01x, del\x7f, tab\tcr\r, line
        kept
        >>> print(visible_controls("\u202eBREV, zero\u200bwidth"))
        \u202eBREV, zero\u200bwidth
        >>> print(visible_controls(r"a\tb"), visible_controls("a\tb"), visible_controls(r"C:\data"))
        a\\tb a\tb C:\data
        >>> print(visible_controls("\\\t"), visible_controls(r"\\t"), visible_controls(r"\\s\n\$"))
        \\\t \\\\t \\s\n\$
        >>> print(visible_controls("a\nb", one_line=True), visible_controls(r"a\nb", one_line=True))
        a\nb a\\nb
    """
    like = _patterns(one_line)[1]
    return escaped_controls(like.sub(lambda m: 2 * m.group(0), text), one_line)


def escaped_controls(text: str, one_line: bool = False) -> str:
    r"""``text`` with every character of :data:`_NOT_TEXT` written as its escape, and its
    backslashes as they are: for a text whose parts were each shown by
    :func:`visible_controls` already (a page, whose figures' text matplotlib wrote), or
    that is unambiguous as it is (a ``repr``), where doubling them again would garble it.

    Example:
        >>> print(escaped_controls("a\\\\tb\x01"), escaped_controls(visible_controls("a\\tb")))
        a\\tb\x01 a\\tb
    """
    return _patterns(one_line)[0].sub(lambda m: ascii(m.group(0))[1:-1], text)


def cut_middle(text: str, room: int, keep_end: bool = False, one_line: bool = False) -> str:
    r"""``text`` in at most ``room`` characters as it is shown (:func:`visible_controls`),
    its middle cut to "…": two thirds of the room kept at its start, or with ``keep_end``
    at its end (where a path's file is). A control counts the characters of its escape
    (300 ESC characters, each shown as ``\x1b``, had come out 237 characters long), and a
    letter keeps its combining marks (an accent cut from its "e" had sat on the "…").
    ``one_line`` as :func:`visible_controls`'.

    Example:
        >>> cut_middle("abcdefghij", 7), cut_middle("abcdefghij", 7, keep_end=True)
        ('abcd…ij', 'ab…ghij')
        >>> len(visible_controls(cut_middle("\x1b" * 300, 60)))
        57
        >>> cut_middle("e\u0301" * 9, 8) == "e\u0301" * 2 + "…" + "e\u0301"
        True
    """
    if len(visible_controls(text, one_line)) <= room:
        return text
    characters = _characters(text, one_line)
    third = (room - 1) // 3
    head = _leading(characters, third if keep_end else room - 1 - third)
    start = "".join(c for c, _ in head)
    # The head's last run of backslashes, before "…", is not doubled: its shown length.
    # At least one character is cut: the rest after the head and that one.
    rest = characters[len(head) + 1 :]
    tail = _leading(rest[::-1], room - 1 - len(visible_controls(start, one_line)))[::-1]
    return start + "…" + "".join(c for c, _ in tail)


# Marks a letter keeps before the next starts a character of its own: Unicode's
# stream-safe limit of non-starters (UAX #15), so that a run of 300 marks is cut, not
# shown as "…" alone.
MAX_MARKS = 30


def _characters(text: str, one_line: bool = False) -> list[tuple[str, int]]:
    """``text`` as the characters a reader sees, each with the marks after it (any
    category M: accents, spacing vowel signs, variation selectors; at most
    :data:`MAX_MARKS`), and the characters each takes as shown: a control its escape's, a
    backslash 2 where :func:`visible_controls` doubles it (:data:`_ESCAPE_LIKE`, read in
    ``text``; the head's last run, before "…", is measured as shown, undoubled)."""
    like = _patterns(one_line)[1]
    doubled = {i for m in like.finditer(text) for i in range(m.start(), m.end())}
    characters: list[tuple[str, int]] = []
    marks = 0
    for i, char in enumerate(text):
        width = 2 if i in doubled else len(escaped_controls(char, one_line))
        if characters and unicodedata.category(char).startswith("M") and marks < MAX_MARKS:
            letter, shown = characters[-1]
            characters[-1] = (letter + char, shown + width)
            marks += 1
        else:
            characters.append((char, width))
            marks = 0
    return characters


def _leading(characters: list[tuple[str, int]], room: int) -> list[tuple[str, int]]:
    """The first of ``characters`` that are shown in ``room`` characters."""
    used = 0
    for i, (_, width) in enumerate(characters):
        used += width
        if used > room:
            return characters[:i]
    return characters


#: Longest label name shown whole by a figure's tick or a note; longer ones lose their
#: middle to "…" (one 300-character name had widened the per-label chart until its bars
#: were unreadable, and bloated the per-label note).
MAX_NAME_CHARS = 60


#: How the empty name is shown.
EMPTY_NAME = '""'


def short_names(
    names: Sequence[str], room: int = MAX_NAME_CHARS, one_line: bool = False
) -> list[str]:
    """Label names in at most ``room`` characters each as shown, the middle of a longer one
    cut to "…" (:func:`cut_middle`: its start and end tell labels apart), as figures'
    ticks and notes name them. Names that would still read alike (they differ only in the
    middle cut out) are numbered ``#1``, ``#2``, ... in their order; a number whose text
    another name shows already is skipped (a real name "….. #1" had read as another's).
    ``one_line=True`` counts a line feed as its escape (:func:`visible_controls`). The
    empty name is :data:`EMPTY_NAME`, numbered where a name ``""`` reads alike.

    Example:
        >>> short_names(["NOUN"]), [len(t) for t in short_names(["x" * 300])]
        (['NOUN'], [60])
        >>> [t[-4:] for t in short_names(["a" * 100 + m + "a" * 100 for m in "XY"])]
        ['a #1', 'a #2']
        >>> x, y = ("a" * 100 + m + "a" * 100 for m in "XY")
        >>> [t[-2:] for t in short_names([x, y, cut_middle(x, 57) + " #1"])]
        ['#2', '#3', '#1']
    """
    short = [cut_middle(name or EMPTY_NAME, room, one_line=one_line) for name in names]
    alike: dict[str, list[str]] = {}  # each shortening -> the names it stands for
    for name, text in zip(names, short, strict=True):
        if name not in alike.setdefault(text, []):
            alike[text].append(name)
    taken = {text for text, stood_for in alike.items() if len(stood_for) == 1}
    numbered: dict[str, str] = {}
    for stood_for in (group for group in alike.values() if len(group) > 1):
        number = 0
        for name in stood_for:
            number, numbered[name] = _numbered(name, room, number, taken, one_line)
            taken.add(numbered[name])
    return [numbered.get(name, text) for name, text in zip(names, short, strict=True)]


def _numbered(
    name: str, room: int, after: int, taken: set[str], one_line: bool = False
) -> tuple[int, str]:
    """The first number above ``after`` whose text of ``name`` (cut to ``room`` with its
    number) is not ``taken``, and that text."""
    number = after + 1
    while (text := _with_number(name, room, number, one_line)) in taken:
        number += 1
    return number, text


def _with_number(name: str, room: int, number: int, one_line: bool = False) -> str:
    suffix = f" #{number}"
    return cut_middle(name or EMPTY_NAME, room - len(suffix), one_line=one_line) + suffix


def one_line_names(names: Sequence[str], room: int | None = None) -> list[str]:
    r"""Label names as every output shows them on one line: the per-label chart's ticks,
    the per-label note, the command's text table and the page's table. Each is visible
    (:func:`visible_controls` with ``one_line=True``: a line feed as ``\n``, a typed
    backslash before an ``n`` doubled, ``\\n``), the empty name ``""`` (a blank tick or
    cell had read as no label), cut to ``room`` characters where given
    (:func:`short_names`), and names that would still read alike are numbered ``#1``,
    ``#2`` in their order (the empty name and a name ``""``). A name without controls or
    backslashes is shown as it is. The chart had shown a line feed as ``\n`` while the
    note and the tables kept it, the note's ``a\nb`` naming the other label.

    Example:
        >>> print(*one_line_names(["a\nb", r"a\nb", "NOUN"]))
        a\nb a\\nb NOUN
        >>> one_line_names(["", '""', "x" * 70], room=60)[:2]
        ['"" #1', '"" #2']
    """
    room = sys.maxsize if room is None else room
    return [visible_controls(t, one_line=True) for t in short_names(names, room, one_line=True)]


#: The library functions whose warnings start with their name, for callers of the API.
_FUNCTION_PREFIX = re.compile(
    r"^(calibration_error_ci|compare_calibration_by_label|compare_calibration"
    r"|compare_before_after): "
)


def split_function_name(text: str) -> tuple[str, str]:
    """A library warning split into the name of the function that gave it (with its
    ``": "``; empty where it names none) and the rest. The command line drops the name,
    which its user never called; a reproduction that names a tag puts the tag after it,
    so that the command can still drop it (``calibration_error_ci:`` had stayed, after
    ``tag NN:``).

    Example:
        >>> split_function_name("calibration_error_ci: 4 pairs; at least 10 are needed")
        ('calibration_error_ci: ', '4 pairs; at least 10 are needed')
        >>> split_function_name("only 3 bins")
        ('', 'only 3 bins')
    """
    found = _FUNCTION_PREFIX.match(text)
    cut = found.end() if found else 0
    return text[:cut], text[cut:]
