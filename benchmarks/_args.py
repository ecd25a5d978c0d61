"""Argument types the benchmark scripts share: counts and sizes of at least 1, devices.

A size, batch or repeat count of 0 or less had run into the script's loops and stopped
there with a traceback (``range() arg 3 must not be zero``, an empty median, no pairs
to bin), and so had ``--threads -1`` (in ``torch.set_num_threads``) and ``--device cuda``
on a machine without CUDA (a page-long ATen error). As an argparse ``type``, these refuse
it while the command line is read: the usual ``usage`` line and one ``error: argument
--batch: ...`` line, exit status 2. ``--threads`` is a :func:`count` in every script that
takes it; left out, torch chooses (0 is refused, not read as "the default").
"""

from __future__ import annotations

import argparse
import math


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
