"""Counts and names as every output writes them: counts exactly, with a noun that agrees.

The command's text, the HTML report and the figures' titles print pair, bin and label
counts through these, so that no output writes ``1.23457e+06 pairs`` (``:g`` keeps six
significant digits) or ``1 bins``. Text that no output can show (control characters)
is written as its escape. Pure text: it imports nothing of the library, so that the
report and the command use it without loading matplotlib.
"""

from __future__ import annotations

import math
import re


def count_text(count: float) -> str:
    """A count, exactly: a whole one as an integer, a fractional one (a hand-built bin's,
    say) with at most three decimals.

    Example:
        >>> count_text(1234567.0), count_text(12), count_text(12.5), count_text(2 / 3)
        ('1234567', '12', '12.5', '0.667')
        >>> count_text(float("nan"))
        'nan'
    """
    value = float(count)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer():
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")


def counted(count: float, noun: str, plural: str | None = None) -> str:
    """``count`` (:func:`count_text`) and ``noun``, plural unless the count is exactly 1
    (``plural`` names an irregular one).

    Example:
        >>> counted(1, "bin"), counted(3, "bin"), counted(1234567, "pair")
        ('1 bin', '3 bins', '1234567 pairs')
        >>> counted(1, "class", "classes"), counted(2, "class", "classes")
        ('1 class', '2 classes')
    """
    word = noun if float(count) == 1 else (plural or f"{noun}s")
    return f"{count_text(count)} {word}"


#: Characters that neither HTML allows in a document nor a font draws (controls other
#: than tab, line feed and carriage return; C1 controls; lone surrogates, which UTF-8
#: cannot even encode; noncharacters): a label read from a file may hold them.
_NOT_TEXT = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]"
)


def visible_controls(text: str) -> str:
    r"""``text`` with every character of :data:`_NOT_TEXT` written as its Python escape
    (``\x01``), so that a label holding one is shown, not dropped or garbled: the HTML
    report's page and every figure's text pass through this.

    Example:
        >>> print(visible_controls("ctrl\x01x, del\x7f, line\nkept"))
        ctrl\x01x, del\x7f, line
        kept
    """
    return _NOT_TEXT.sub(lambda m: ascii(m.group(0))[1:-1], text)
