"""Argument types the benchmark scripts share: counts and sizes of at least 1, bounded
numbers, bin sizes, devices.

A size, batch or repeat count of 0 or less had run into the script's loops and stopped
there with a traceback (``range() arg 3 must not be zero``, an empty median, no pairs
to bin), and so had ``--threads -1`` (in ``torch.set_num_threads``) and ``--device cuda``
on a machine without CUDA (a page-long ATen error). As an argparse ``type``, these refuse
it while the command line is read: the usual ``usage`` line and one ``error: argument
--batch: ...`` line, exit status 2. ``--threads`` is a :func:`count` in every script that
takes it; left out, torch chooses (0 is refused, not read as "the default").

A number option (a shift, a scale, a correlation, a tolerance, a quantile level) is a
:func:`number` with the bounds where the study means something: 0, a negative value, NaN
or infinity had run on into a math domain error, the library's refusal of probabilities
outside [0, 1], an empty median, or a table of meaningless numbers.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def count(text: str) -> int:
    """A whole number of at least 1: repeats, batch sizes, draws; ``1e5`` and ``2.0`` too.

    Example:
        >>> count("3"), count("1e5")
        (3, 100000)
        >>> count("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a whole number of at least 1, not '0'
    """
    value = _whole(text)
    if not value >= 1:  # a NaN fails too
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return int(value)


def at_least_two(text: str) -> int:
    """A whole number of at least 2: bootstrap draws or curve points (the library's floor:
    ``--draws 1`` had ended in its traceback), repetitions whose spread is reported.

    Example:
        >>> at_least_two("200")
        200
        >>> at_least_two("1")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a whole number of at least 2, not '1'
    """
    value = _whole(text)
    if not value >= 2:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 2, not {text!r}")
    return int(value)


def zero_or_at_least_two(text: str, zero_means: str) -> int:
    """0 (``zero_means``: what the option then leaves out) or :func:`at_least_two`.

    Example:
        >>> zero_or_at_least_two("0", "no check"), zero_or_at_least_two("2e3", "no check")
        (0, 2000)
    """
    if _whole(text) == 0:
        return 0
    try:
        return at_least_two(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be 0 ({zero_means}) or a whole number of at least 2, not {text!r}"
        ) from None


def draws_or_none(text: str) -> int:
    """0 (no draws: the estimates alone) or :func:`at_least_two` draws.

    Example:
        >>> draws_or_none("0"), draws_or_none("2e3")
        (0, 2000)
    """
    return zero_or_at_least_two(text, "the estimates alone")


def size(text: str) -> float:
    """A number of pairs of at least 1, in float notation (``1e6``), as a float.

    Example:
        >>> size("1e6")
        1000000.0
        >>> size("1.5")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a whole number of pairs of at least 1, not '1.5'
    """
    value = _whole(text)
    if not value >= 1:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of pairs of at least 1, not {text!r}"
        )
    return value


def bin_size(text: str) -> int | str:
    """``auto`` (the library's ⌈√N⌉) or a whole number of pairs per bin of at least 1, as
    the library's ``bin_size`` takes it (``0`` had stopped in its traceback, ``1e2`` in
    ``int()``'s).

    Example:
        >>> bin_size("auto"), bin_size("1e3")
        ('auto', 1000)
        >>> bin_size("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be auto or a bin size of at least 1, not '0'
    """
    if text == "auto":
        return text
    try:
        return count(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be auto or a bin size of at least 1, not {text!r}"
        ) from None


def number(
    low: float = -math.inf,
    high: float = math.inf,
    *,
    above: bool = False,
    below: bool = False,
    nonzero: bool = False,
    why: str = "",
) -> Callable[[str], float]:
    """The argparse type of a finite number from ``low`` to ``high`` (``above``: more than
    ``low``; ``below``: less than ``high``; ``nonzero``: 0 refused too); ``why``, if
    given, follows the bounds in the refusal.

    Example:
        >>> shift = number(0, 0.05, above=True)
        >>> shift("1e-4")
        0.0001
        >>> shift("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a number above 0 and at most 0.05, not '0'
        >>> number(-1, 1, nonzero=True)("-0.0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a number from -1 to 1 other than 0, not '-0.0'
    """
    bounds = []
    if low > -math.inf and high < math.inf and not (above or below):
        bounds.append(f"from {low:g} to {high:g}")
    else:
        if low > -math.inf:
            bounds.append(f"above {low:g}" if above else f"of at least {low:g}")
        if high < math.inf:
            bounds.append(f"below {high:g}" if below else f"at most {high:g}")
    wanted = "a number " + " and ".join(bounds) if bounds else "a finite number"
    if nonzero:
        wanted += " other than 0"
    reason = f" ({why})" if why else ""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        inside = (
            math.isfinite(value)
            and (value > low if above else value >= low)
            and (value < high if below else value <= high)
            and not (nonzero and value == 0)
        )
        if not inside:
            raise argparse.ArgumentTypeError(f"must be {wanted}{reason}, not {text!r}")
        return value

    return parse


# A scale, a Beta or Dirichlet parameter, a tolerance; a Gaussian copula's correlation.
positive = number(0, above=True)
non_negative = number(0)
correlation = number(0, 1)


def device(text: str) -> str:
    """A torch device this machine has (``cpu``, ``cuda``, ``cuda:1``), as given.

    Example:
        >>> device("cpu")
        'cpu'
        >>> device("gpu")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: not a torch device: 'gpu'
    """
    import torch  # here: bench_import.py times imports and needs no torch of its own

    try:
        kind = torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(f"not a torch device: {text!r}") from None
    if kind.type == "cuda":
        available = torch.cuda.device_count()
        if (kind.index or 0) >= available:
            raise argparse.ArgumentTypeError(
                f"{text!r}: this machine has {available} CUDA device(s)"
            )
    elif kind.type != "cpu":
        backend = getattr(torch.backends, kind.type, None) or getattr(torch, kind.type, None)
        if backend is None or not backend.is_available():
            raise argparse.ArgumentTypeError(f"{text!r}: not available on this machine")
    return text


def _whole(text: str) -> float:
    """``text``'s whole number (``12``, ``1e5``, ``2.0``) as a float; NaN for anything else
    (a fraction, which the scripts had truncated, infinity, not a number)."""
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value if math.isfinite(value) and value.is_integer() else math.nan
