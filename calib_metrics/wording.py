"""Counts as every output writes them: exactly, and with a noun that agrees.

The command's text, the HTML report and the figures' titles print pair, bin and label
counts through these, so that no output writes ``1.23457e+06 pairs`` (``:g`` keeps six
significant digits) or ``1 bins``. Pure text: it imports nothing, so that the report and
the command use it without loading matplotlib.
"""

from __future__ import annotations

import math


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
