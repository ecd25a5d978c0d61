"""The experiments' options, settled and checked before any data are read.

Every ``calib-metrics reproduce`` experiment (and ``demo``) fills the options its user
left unset with the full run's default or ``--quick``'s (:func:`settle`: an option given
explicitly always wins), then refuses a bad value in one line naming the option. A probe
of 2026-11-30 found values accepted at start and refused after 15–70 s of training
(``--n-samples 1``, ``--epochs -1``, ``--lr nan``) and ``--quick`` silently replacing
values the user gave (``--max-iter 100`` run as 30).

Example:
    >>> import argparse
    >>> args = argparse.Namespace(quick=True, max_iter=None, n_samples=1)
    >>> settle(args, {"max_iter": (100, 30)})
    >>> args.max_iter
    30
    >>> check_integers(args, n_samples=2)
    Traceback (most recent call last):
    ...
    ValueError: --n-samples must be an integer >= 2, got 1
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calib_metrics.few_bins import option_name
from calib_metrics.functional.errors import check_int

__all__ = [
    "add_out",
    "check_draws",
    "check_file",
    "check_in_range",
    "check_integers",
    "check_numbers",
    "quick_help",
    "settle",
]

#: Per option (its attribute name): the full run's default and ``--quick``'s.
QuickDefaults = Mapping[str, tuple[Any, Any]]

#: What ``--quick`` says of the options it sets, in every experiment's help.
QUICK_WINS = "options given explicitly win"
# The --quick runs that read their training subset from the file's start, no further.
QUICK_PREFIX = (
    "the training subset is read from its file's start: a damaged end shows in a full run"
)


def _shown(value: Any) -> str:
    """A default as the user would type it: ``0.1 0.01`` for a list, ``3000`` for 3000."""
    if isinstance(value, (list, tuple)):
        return " ".join(_shown(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def quick_help(text: str, defaults: QuickDefaults, name: str) -> str:
    """``text`` with the option's two defaults: ``L-BFGS iterations (default: 100;
    --quick: 30)``.

    Example:
        >>> quick_help("L2 grid", {"l2": ([1e-5, 1e-4, 1e-3], [1e-5, 1e-4])}, "l2")
        'L2 grid (default: 1e-05 0.0001 0.001; --quick: 1e-05 0.0001)'
    """
    full, quick = defaults[name]
    return f"{text} (default: {_shown(full)}; --quick: {_shown(quick)})"


def settle(args: argparse.Namespace, defaults: QuickDefaults) -> None:
    """Fill each option of ``defaults`` left unset (None) with its full run's default, or
    ``--quick``'s; a value the user gave is kept, ``--quick`` or not. A list default is
    copied (the caller may change its value).

    Example:
        >>> args = argparse.Namespace(quick=False, epochs=None, l2=[0.5])
        >>> settle(args, {"epochs": (8, 3), "l2": ([1e-4], [1e-4])})
        >>> args.epochs, args.l2
        (8, [0.5])
    """
    for name, (full, quick) in defaults.items():
        if getattr(args, name) is None:
            value = quick if args.quick else full
            setattr(args, name, list(value) if isinstance(value, (list, tuple)) else value)


def _values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def check_integers(args: argparse.Namespace, **least: int) -> None:
    """Refuse an integer option (or any value of a list option) below its least value:
    ``--max-iter must be a positive integer, got 0``.

    Example:
        >>> check_integers(argparse.Namespace(epochs=-1), epochs=0)
        Traceback (most recent call last):
        ...
        ValueError: --epochs must be an integer >= 0, got -1
    """
    for name, low in least.items():
        for value in _values(getattr(args, name)):
            check_int(option_name(name, cli=True), value, low)


def check_in_range(args: argparse.Namespace, name: str, low: int, high: int) -> None:
    """Refuse an integer option outside ``[low, high]``.

    Example:
        >>> check_in_range(argparse.Namespace(n_bits=0), "n_bits", 4, 30)
        Traceback (most recent call last):
        ...
        ValueError: --n-bits must be an integer in [4, 30], got 0
    """
    value = getattr(args, name)
    if not low <= value <= high:
        raise ValueError(
            f"{option_name(name, cli=True)} must be an integer in [{low}, {high}], got {value}"
        )


def add_out(parser: argparse.ArgumentParser, name: str) -> None:
    """Every experiment's ``--out``, its output folder (default ``out/<name>``), checked as
    it is parsed, before any data are read: an empty path or ``-`` (no stream here) is
    refused in one line (:func:`~calib_metrics.cli.output_folder_path`, as ``evaluate``'s
    outputs are); ``reproduce``'s had made a folder named ``-``.

    Example:
        >>> p = argparse.ArgumentParser(prog="pos", exit_on_error=False)
        >>> add_out(p, "pos")
        >>> p.parse_args([]).out.as_posix()
        'out/pos'
        >>> p.parse_args(["--out", "-"])
        Traceback (most recent call last):
        ...
        argparse.ArgumentError: argument --out: '-' is not stdout here: give a folder name
    """
    from calib_metrics.cli import output_folder_path

    parser.add_argument(
        "--out", type=output_folder_path, default=Path("out") / name, help="output folder"
    )


def check_draws(args: argparse.Namespace, name: str) -> None:
    """Refuse an interval's draws option outside the library's ``[2, MAX_DRAWS]``
    (:data:`~calib_metrics.functional.intervals.MAX_DRAWS`), in ``evaluate --samples``'
    words (:func:`~calib_metrics.cli.check_draw_count`): a value past it had been taken
    at start and had failed only at the first interval, after training.

    Example:
        >>> check_draws(argparse.Namespace(n_samples=1), "n_samples")
        Traceback (most recent call last):
        ...
        ValueError: --n-samples must be at least 2, got 1
    """
    from calib_metrics.cli import check_draw_count

    check_draw_count(option_name(name, cli=True), getattr(args, name))  # parsed as an int


def check_numbers(args: argparse.Namespace, name: str, low: float, *, above: bool = False) -> None:
    """Refuse a float option (or any value of a list option) that is not a finite number
    ``>= low`` (``> low`` with ``above``): ``nan`` passes every comparison of a plain
    ``value < low`` test, and had failed only inside the fit.

    Example:
        >>> check_numbers(argparse.Namespace(lr=float("nan")), "lr", 0, above=True)
        Traceback (most recent call last):
        ...
        ValueError: --lr must be a finite number > 0, got nan
        >>> check_numbers(argparse.Namespace(c2=[1.0, -1.0]), "c2", 0)
        Traceback (most recent call last):
        ...
        ValueError: --c2 values must be finite numbers >= 0, got -1.0
    """
    given = getattr(args, name)
    for value in _values(given):
        if not (math.isfinite(value) and (value > low if above else value >= low)):
            relation = f"{'>' if above else '>='} {low:g}"
            what = (
                f"values must be finite numbers {relation}"
                if isinstance(given, (list, tuple))
                else f"must be a finite number {relation}"
            )
            raise ValueError(f"{option_name(name, cli=True)} {what}, got {value}")


def check_file(path: str | Path | None, option: str) -> None:
    """Refuse an input file option naming no file, before the data are read (a missing
    ``--model`` had been found only once the corpus was read, after 20 s).

    Example:
        >>> check_file("/no/such/ranker.pt", "--model")
        Traceback (most recent call last):
        ...
        ValueError: --model /no/such/ranker.pt: no such file
    """
    if path is None:
        return
    path = Path(path)
    if not path.is_file():
        if path.is_dir():
            what = "a folder, not a file"
        elif path.exists():  # /dev/null, a pipe: there, but not a file to load
            what = "not a regular file (a device or a pipe)"
        else:
            what = "no such file"
        raise ValueError(f"{option} {path}: {what}")


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """``--help`` of ``demo`` and the experiments: each option's text ends with its
    default, unless the text names it already (``--quick``'s two defaults, a default
    said in words). Unlike argparse's ArgumentDefaultsHelpFormatter, an unset default
    (None) and a flag's False are not shown."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if isinstance(default, (list, tuple)) and "%(default)s" in text:
            # As the user would type it (2000-01-01), not Python's ['2000-01-01'].
            text = text.replace("%(default)s", _shown(default).replace("%", "%%"))
        if (
            not action.option_strings
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or "default" in text
        ):
            return text or action.help
        # argparse fills %-fields of the help: a % in the default is written as is.
        return f"{text} (default: {_shown(default).replace('%', '%%')})"
