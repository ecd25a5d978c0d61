"""The ``calib-metrics`` command: evaluate a file of predictions, run the demo, reproduce.

Every problem with the input ends in one line on stderr and exit code 2, never a
traceback.

This is the only library module that imports :mod:`calib_metrics.paper`, and only
inside the functions that build and run ``demo`` and ``reproduce``: ``evaluate``
never loads the paper's readers and experiments.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import itertools
import json
import logging
import os
import re
import shlex
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

EXIT_USAGE = 2
# A reader that stops early (`| head`) ends the run as SIGPIPE ends a shell tool: 128 + 13.
EXIT_BROKEN_PIPE = 141
# Bin sizes beyond this overflow torch's integer arithmetic; no data set has that many pairs.
MAX_BIN_SIZE = 2**62
# The paper's estimator (Nguyen & O'Connor 2015, Algorithm 1 and 2).
PAPER_SETTING = {"bin_size": 5000, "debias": False, "interval": "paper"}
# Bootstrap draws of --plot-smooth's band (the smooth curve's default).
SMOOTH_DRAWS = 200


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (and exit code 2)."""

    def parse_known_args(self, args: object = None, namespace: object = None) -> object:
        self._given = [str(a) for a in (sys.argv[1:] if args is None else args)]
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        hint = _option_took_the_file(getattr(self, "_given", []), message)
        # A subcommand's parser (prog "calib-metrics evaluate") says it as every other
        # error is said, by the program's name alone; its help is the subcommand's.
        program = self.prog.split(" ", 1)[0]
        self.exit(EXIT_USAGE, f"{program}: error: {message}{hint} (usage: {self.prog} --help)\n")


def _option_took_the_file(given: list[str], message: str) -> str:
    """A hint where an option of an optional value (``--groups``, ``--id``) took the file
    that follows it as its column, and the file is then missing: "the following arguments
    are required: file" had left the user to find why.

    Example:
        >>> import tempfile
        >>> file = tempfile.NamedTemporaryFile(suffix=".csv").name
        >>> _ = open(file, "w").close()
        >>> missing = "the following arguments are required: file"
        >>> _option_took_the_file(["--groups", file], missing)
        " (--groups took ... as the name of its column: put the files first, or give ...)"

    """
    if "arguments are required" not in message:
        return ""
    for option, value in itertools.pairwise(given):
        # argparse takes a prefix of an option too (--group for --groups)
        taker = next(
            (o for o in ("--groups", "--id") if len(option) > 3 and o.startswith(option)), None
        )
        if taker is not None and Path(value).is_file():
            return (
                f" ({option} took {value} as the name of its column: put the files first, "
                f"or give {taker} its column's name)"
            )
    return ""


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    from calib_metrics.functional.intervals import NORMAL_ENDS

    p = sub.add_parser(
        "evaluate",
        help="calibration of a file of (probability, label) pairs",
        description="Reads CSV/TSV (with a header), JSON (lines), .npy, .npz or .pt and prints "
        "N, the bins, CalibErr with its interval, and the Brier score split. The defaults are "
        "the estimator we recommend: β = ⌈√N⌉, debiased squared gaps, the bootstrap over "
        "pairs (over groups with --groups) (docs/coverage.md). --paper gives the paper's "
        "method: --bin-size 5000 --no-debias --interval paper.",
    )
    p.add_argument(
        "file", type=Path, help="the predictions: CSV/TSV, JSON (lines), .npy, .npz or .pt"
    )
    p.add_argument("--probs", help="column (or array) of probabilities (default: by name)")
    p.add_argument(
        "--target",
        help="column (or array) of labels: 0/1, or class ids beside C probabilities "
        "(default: by name)",
    )
    add_estimator_options(p, paper=True)
    p.add_argument("--samples", type=int, default=10000, help="interval draws S (default: 10000)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default: 0.95)")
    p.add_argument(
        "--method",
        choices=["normal", "percentile"],
        default="normal",
        help=f"the interval's ends. normal: {NORMAL_ENDS}. percentile: the draws' "
        "percentiles (default: normal)",
    )
    p.add_argument(
        "--interval",
        choices=["paper", "pairs", "groups"],
        default=None,
        help="Algorithm 2 (paper), the bootstrap over pairs, or over groups of pairs "
        "(sentences, documents) (default: pairs; groups with --groups; paper with --paper) "
        "(see docs/coverage.md)",
    )
    p.add_argument(
        "--groups",
        nargs="?",
        const="",
        default=None,
        help="column of group ids, or no value to find it by name (e.g. sentence_id; two "
        "names that fit are asked about), as compare and recalibrate take it; implies "
        "--interval groups",
    )
    add_ignore_index(p)
    p.add_argument(
        "--paper",
        action="store_true",
        help="the paper's method: --bin-size 5000 --no-debias --interval paper "
        "(options given explicitly win)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the interval draws and --plot-smooth's (default: 0)",
    )
    p.add_argument(
        "--mode",
        choices=["one_vs_rest", "top_label", "classwise"],
        default="one_vs_rest",
        help="multiclass files (C probabilities per label, e.g. an [N, C] array beside [N] "
        "class ids): pool one-vs-rest pairs, the top label's confidence, or average classes "
        "(default: one_vs_rest)",
    )
    p.add_argument("--smooth", action="store_true", help="also print the smooth ECE (binning-free)")
    p.add_argument("--spiegelhalter", action="store_true", help="also print Spiegelhalter's z test")
    p.add_argument(
        "--plot",
        type=output_path,
        help="write a reliability diagram PNG here (its folder must exist); with --mode "
        "classwise, one diagram per class (at most 12: the most frequent labels)",
    )
    add_plot_smooth(p)
    p.add_argument(
        "--html",
        type=output_path,
        help="write a self-contained HTML report here (summary, diagram, bins, settings; "
        "its folder must exist); also computes the smooth ECE and Spiegelhalter's test",
    )
    p.add_argument(
        "--label",
        help="column naming each pair's label (tag, query type): the report adds each "
        "label's error (a multiclass file's classes are its labels)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def add_ignore_index(p: argparse.ArgumentParser) -> None:
    """``--ignore-index``, shared by evaluate, compare and recalibrate."""
    p.add_argument(
        "--ignore-index",
        type=int,
        default=None,
        metavar="LABEL",
        help="drop the rows whose label is LABEL (padding, e.g. -100; their probabilities "
        "may hold anything), as the metric's ignore_index does",
    )


def add_plot_smooth(p: argparse.ArgumentParser) -> None:
    """``--plot-smooth`` and ``--bandwidth``, shared by evaluate and compare."""
    p.add_argument(
        "--plot-smooth",
        action="store_true",
        help="draw the smooth reliability curve (Błasiok & Nakkiran's kernel, its bandwidth) "
        f"with its pointwise bootstrap band ({SMOOTH_DRAWS} draws, over groups with --groups) "
        "on --plot and on the --html page's diagrams",
    )
    p.add_argument(
        "--bandwidth",
        type=_bandwidth,
        default=None,
        metavar="SIGMA",
        help="kernel width σ of the smooth ECE and the smooth curve, in [0.0001, 1] "
        "(default: the smooth ECE's own σ*, Błasiok & Nakkiran's fixed point)",
    )


def smooth_curve_for_plot(args: argparse.Namespace, probs, target, groups=None, mode=None):
    """The smooth curve with its band that ``--plot-smooth`` draws, or None without it.

    Example:
        >>> import torch
        >>> args = argparse.Namespace(plot_smooth=True, confidence=0.9, seed=0, bandwidth=0.05)
        >>> q = torch.linspace(0.01, 0.99, 500, dtype=torch.float64)
        >>> curve = smooth_curve_for_plot(args, q, (q > 0.5).double())
        >>> curve.lower.shape == curve.upper.shape == curve.grid.shape, float(curve.bandwidth)
        (True, 0.05)
    """
    if not args.plot_smooth:
        return None
    import torch

    from calib_metrics.functional import smooth_reliability_curve

    return smooth_reliability_curve(
        probs, target, n_samples=SMOOTH_DRAWS, confidence=args.confidence, groups=groups,
        generator=torch.Generator().manual_seed(args.seed), mode=mode or "one_vs_rest",
        bandwidth=args.bandwidth,
    )  # fmt: skip


def bandwidth_setting(bandwidth: float | None) -> float | str:
    """``--bandwidth`` as the JSON and the page's settings give it: ``"auto"`` (the smooth
    ECE's own σ*), as ``bin_size``'s default reads, where none was given."""
    return "auto" if bandwidth is None else bandwidth


def check_plot_smooth(args: argparse.Namespace) -> None:
    """``--plot-smooth`` draws on ``--plot`` and the ``--html`` page: refuse it alone; and
    ``--bandwidth`` in its range, beside a smooth measure it sets.

    Example:
        >>> args = argparse.Namespace(plot_smooth=False, plot=None, html=None, bandwidth=0.05,
        ...                           smooth=False)
        >>> check_plot_smooth(args)
        Traceback (most recent call last):
        ...
        ValueError: --bandwidth sets the smooth ECE's kernel: give --smooth, --plot-smooth or --html
    """
    if args.plot_smooth and args.plot is None and args.html is None:
        raise ValueError(
            "--plot-smooth draws on the reliability diagram: give --plot FILE.png or "
            "--html FILE.html"
        )
    if args.bandwidth is None:
        return
    from calib_metrics.functional.smooth import _MIN_EXPLICIT_BANDWIDTH as least

    if not least <= args.bandwidth <= 1:  # NaN too
        raise ValueError(f"--bandwidth must lie in [{least:g}, 1], got {args.bandwidth}")
    # compare has no --smooth: its page (--html) shows the smooth ECE.
    has_smooth = hasattr(args, "smooth")
    if not ((has_smooth and args.smooth) or args.plot_smooth or args.html):
        options = "--smooth, --plot-smooth or --html" if has_smooth else "--plot-smooth or --html"
        raise ValueError(f"--bandwidth sets the smooth ECE's kernel: give {options}")


def output_path(text: str, kind: str = "file") -> Path:
    """An output file option (``--html``, ``--plot``, ``--out``): a path, not an empty one,
    which ``Path`` would read as the current folder (``--html ""`` had been refused as
    "--html .: is a folder"), nor ``-``, which is no stream here (``--html -`` had written
    a file named ``-``).

    Example:
        >>> output_path("")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: '' is an empty path: give a file name
        >>> output_path("diagram.png/")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: 'diagram.png/' names a folder: give a file name
        >>> output_path("-")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: '-' is not stdout here: give a file name, or /dev/stdout
    """
    if not text:
        raise argparse.ArgumentTypeError(f"{text!r} is an empty path: give a {kind} name")
    if text == "-":  # no option writes to a stream by '-': it had made a file named '-'
        # A file may be the standard output's (a figure's --plot cannot go to --json).
        hint = ", or /dev/stdout" if kind == "file" else ""
        raise argparse.ArgumentTypeError(f"'-' is not stdout here: give a {kind} name{hint}")
    last = text.replace(os.sep, "/").rsplit("/", 1)[-1]
    if kind == "file" and last in ("", ".", ".."):
        # Path() drops a trailing slash or "/.": "--plot x.png/" had written the file x.png.
        raise argparse.ArgumentTypeError(f"{text!r} names a folder: give a file name")
    return Path(text)


def output_folder_path(text: str) -> Path:
    """An output folder option (``demo --out``, ``--img``): a path, not an empty one
    (:func:`output_path`; ``demo --out ""`` had written into the current folder).

    Example:
        >>> output_folder_path("")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: '' is an empty path: give a folder name
    """
    return output_path(text, "folder")


def _bin_size(text: str) -> int | str:
    """``--bin-size``: a positive integer (``1e4`` is read as 10000) or ``auto``.

    Example:
        >>> _bin_size("auto"), _bin_size("200"), _bin_size("1e4")
        ('auto', 200, 10000)
    """
    if text == "auto":
        return text
    try:
        value = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        value = None
    if isinstance(value, float):
        value = int(value) if value.is_integer() else None
    if value is None or not 1 <= value <= MAX_BIN_SIZE:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer up to 2**62 or 'auto', got {text!r}"
        )
    return value


def _bandwidth(text: str) -> float | None:
    """``--bandwidth``: a number (its range is checked with the other options) or ``auto``
    (None: the smooth ECE's own σ*), the value ``--json`` gives for the default.

    Example:
        >>> _bandwidth("auto"), _bandwidth("0.05")
        (None, 0.05)
    """
    if text == "auto":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number in [0.0001, 1] or 'auto', got {text!r}"
        ) from None


def multiclass_input(probs, target, path, mode: str, kept=None):
    """A file's pairs as :func:`calib_metrics.predictions.as_multiclass` shapes them, and a
    ``--mode`` other than one-vs-rest refused, in the command's terms, on a binary file.

    Example:
        >>> import torch
        >>> multiclass_input(torch.tensor([0.2, 0.7]), torch.tensor([0.0, 1.0]), "p.csv",
        ...                  "top_label")
        Traceback (most recent call last):
        ...
        ValueError: p.csv: --mode top_label needs multiclass probs ...
    """
    from calib_metrics.predictions import as_multiclass

    probs, target = as_multiclass(probs, target, path)
    if mode != "one_vs_rest" and probs.dim() == target.dim():
        raise ValueError(
            f"{path}: --mode {mode} needs multiclass probs (C probabilities per label: probs "
            "[N, C] with class ids [N] in an .npz, .npy or .pt, or a JSON-lines list column); "
            "this file has one probability per label"
        )
    if probs.dim() > target.dim():
        warn_if_rows_do_not_sum_to_one(probs, path, kept)
        if mode == "one_vs_rest" and probs.shape[-1] == 2:
            warn_two_classes(path)
    return probs, target


def warn_two_classes(path) -> None:
    """A UserWarning when a multiclass file has two classes (scikit-learn's
    ``predict_proba``, [N, 2]) read one-vs-rest: each pair (q, y) is pooled with its mirror
    (1 − q, 1 − y), which is not the binary error of class 1 (the mirror halves the
    miscalibration that differs between the ends, and N doubles).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_two_classes("p.npz")
        >>> print(caught[0].message)
        p.npz: 2 classes read one-vs-rest pool each pair with its mirror (1 - q, 1 - y); ...
    """
    warnings.warn(
        f"{path}: 2 classes read one-vs-rest pool each pair with its mirror (1 - q, 1 - y); "
        "the binary error of class 1 is that of its column alone: save column 1 as its own "
        "array (e.g. probs=p[:, 1]) and pass it with the binary labels",
        UserWarning,
        stacklevel=2,
    )


def _position(path, row: int, kept=None) -> str:
    """Where row ``row`` of the labels kept (``kept``: which of the file's were, as
    :attr:`~calib_metrics.predictions.Predictions.kept`) is in the file (``line 5``), or its
    index where the file cannot be read again (probabilities not from a file)."""
    from calib_metrics.predictions import file_row, row_position

    row = file_row(kept, row)
    try:
        return row_position(path, row)
    except (OSError, ValueError):
        return f"row index {row}"


def warn_if_rows_do_not_sum_to_one(probs, path, kept=None) -> None:
    """A UserWarning (one ``warning:`` line of the command) when rows of a multiclass file's
    probabilities ``[N, C]`` do not sum to 1: the columns may be misread (a label or id
    column taken for a class) or not probabilities of one distribution; independent
    one-vs-rest scores are legitimate, so it warns, and the command goes on.

    Example:
        >>> import torch, warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_if_rows_do_not_sum_to_one(torch.tensor([[0.2, 0.8], [0.5, 0.9]]), "p.npz")
        >>> print(caught[0].message)
        p.npz: 1 of 2 rows of class probabilities do not sum to 1 (row index 1 sums to 1.4); ...
    """
    from calib_metrics.functional.multiclass import rows_off_one

    off = rows_off_one(probs)
    if off is None:
        return
    count, first, total = off
    where = _position(path, first, kept)
    warnings.warn(
        f"{path}: {count} of {probs.reshape(-1, probs.shape[-1]).shape[0]} rows of class "
        f"probabilities do not sum to 1 ({where} sums to {total:.4g}); each column is read "
        "as one class's probability as it is — check that no other column was read as a class",
        UserWarning,
        stacklevel=2,
    )


def check_draw_count(option: str, value: int) -> None:
    """An interval's draws given on the command line (``--samples``; the reproductions'
    ``--n-samples`` and ``--ci-samples``): from 2 to the library's
    :data:`~calib_metrics.functional.intervals.MAX_DRAWS`, said alike by every command
    (the reproductions had said "an integer in [2, 10000000]").

    Example:
        >>> check_draw_count("--n-samples", 10**12)
        Traceback (most recent call last):
        ...
        ValueError: --n-samples must be at most 10,000,000, got 1,000,000,000,000 (10,000 ...
    """
    from calib_metrics.functional.intervals import MAX_DRAWS

    if value < 2:
        raise ValueError(f"{option} must be at least 2, got {value}")
    if value > MAX_DRAWS:
        # A typo's extra zeros (10¹²) had run on without a word until stopped by hand.
        raise ValueError(
            f"{option} must be at most {MAX_DRAWS:,}, got {value:,} (10,000 put a 95% "
            "interval's ends within about ±0.005 of their level)"
        )


def check_draw_options(args: argparse.Namespace) -> None:
    """``--samples`` and ``--confidence``, checked alike by every command before any work.

    Example:
        >>> check_draw_options(argparse.Namespace(samples=1, confidence=0.95))
        Traceback (most recent call last):
        ...
        ValueError: --samples must be at least 2, got 1
    """
    check_draw_count("--samples", args.samples)
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must lie in (0, 1), got {args.confidence}")


#: Resampling weights (units × draws) from which a command says, before it starts, that
#: the draws will take a while: each is a Poisson draw, about 10⁷ a second on a CPU core,
#: so 10⁶ pairs at the default 2,000 draws take minutes and printed nothing until done.
LONG_RUN_WEIGHTS = 5 * 10**8


def announce_long_run(table, n_samples: int, kind: str, passes: int = 1, again: str = "") -> None:
    """Say on stderr, at once, that the draws will take a while (a warning would wait for
    the results, as the CLI prints warnings after them): ``n_samples`` draws of ``kind``
    over ``table``'s pairs (its groups, when it has them), run ``passes`` times, which
    ``again`` tells the reader."""
    unit = "pairs" if table.groups is None else "groups"
    n_units = table.target.shape[0] if table.groups is None else table.groups.unique().numel()
    weights = n_units * n_samples * passes
    if weights >= LONG_RUN_WEIGHTS:
        seconds = weights / WEIGHTS_PER_SECOND
        say_long_run(f"drawing {n_samples:,} {kind} of {n_units:,} {unit}{again}", seconds)


#: Resampling weights a CPU core draws in a second, about: 5·10⁶ pairs at the default
#: 2,000 paired draws (10¹⁰ weights) ran past 15 minutes, where the notice said "minutes".
WEIGHTS_PER_SECOND = 10**7


#: Labels × draws from which ``evaluate --label`` says that its per-label intervals will
#: take a while: each label's interval costs about 14 µs a draw on a CPU core however
#: few its pairs, so 1,000 labels at the default 10,000 draws took two silent minutes.
LONG_RUN_LABEL_DRAWS = 5 * 10**6
#: Seconds a CPU core takes for one label's interval draw beyond its weights (about 14 µs,
#: as above).
LABEL_DRAW_SECONDS = 14e-6


def announce_label_draws(units: Sequence[int], n_samples: int, unit: str) -> None:
    """Say on stderr, at once, that ``evaluate --label``'s intervals will take a while:
    ``n_samples`` draws for each label, of its ``units`` (pairs, or groups), each draw
    costing its fixed :data:`LABEL_DRAW_SECONDS` and its units' weights, counted as
    :func:`announce_long_run` counts them. The fixed cost alone had been counted: 5 labels
    of 200,000 pairs ran minutes (3 ms a label's draw) without a word."""
    draws, weights = len(units) * n_samples, sum(units) * n_samples
    if draws >= LONG_RUN_LABEL_DRAWS or weights >= LONG_RUN_WEIGHTS:
        say_long_run(
            f"drawing {n_samples:,} interval draws for each of {len(units)} labels "
            f"({sum(units):,} {unit} in all)",
            draws * LABEL_DRAW_SECONDS + weights / WEIGHTS_PER_SECOND,
        )


def say_long_run(what: str, seconds: float) -> None:
    """One line on stderr, at once: ``what`` the command will draw, and about how long its
    draws take on one CPU core (``seconds``, estimated from the weights alone: large
    groups and classwise runs take several times longer, more threads or a GPU less)."""
    print(
        f"calib-metrics: {what}; the draws take about {_duration(seconds)} on a CPU core, "
        "more with large groups or per class (--samples N draws fewer, the time in "
        "proportion)",
        file=sys.stderr,
        flush=True,
    )


def _duration(seconds: float) -> str:
    """``seconds`` in words: whole minutes (at least one), hours past 90 minutes, days past
    48 hours.

    Example:
        >>> _duration(50), _duration(1_000), _duration(20_000), _duration(10**7)
        ('1 minute', '17 minutes', '5.6 hours', '116 days')
    """
    if seconds >= 48 * 3600:
        return f"{seconds / 86400:,.0f} days"
    if seconds >= 90 * 60:
        return f"{seconds / 3600:.1f} hours"
    minutes = max(1, round(seconds / 60))
    return f"{minutes} minute{'s' * (minutes > 1)}"


# Commands derive further seeds from --seed by small offsets (seed + 1, + 1000·i, ...).
MAX_SEED = 2**32


def check_seed(seed: int | None) -> None:
    """``--seed``, checked for every command before any work: an integer in [0, 2³²), so
    that the seeds a command derives from it by small offsets stay within what torch's
    generators take (a seed near 2⁶⁴ failed only after the fit, naming the test file).

    Example:
        >>> check_seed(2**64)
        Traceback (most recent call last):
        ...
        ValueError: --seed must be an integer in [0, 2**32), got 18446744073709551616
    """
    if seed is not None and not 0 <= seed < MAX_SEED:
        raise ValueError(f"--seed must be an integer in [0, 2**32), got {seed}")


def check_n_bins(n_bins: int) -> None:
    """``--n-bins``, refused in the option's own name before any work (evaluate had read
    the file first and then said ``n_bins must ...``, the library's argument).

    Example:
        >>> check_n_bins(-3)
        Traceback (most recent call last):
        ...
        ValueError: --n-bins must be an integer in [1, 1048576], got -3
    """
    from calib_metrics.functional.calibration import MAX_UNIFORM_BINS

    if not 1 <= n_bins <= MAX_UNIFORM_BINS:
        raise ValueError(f"--n-bins must be an integer in [1, {MAX_UNIFORM_BINS}], got {n_bins}")


def add_estimator_options(p: argparse.ArgumentParser, paper: bool = False) -> None:
    """The estimator's options, as ``evaluate`` and ``compare`` take them: ``--bin-size``,
    ``--binning``, ``--n-bins``, ``--norm`` and ``--debias`` (``paper``: the command has
    ``--paper``, which sets ``--bin-size 5000 --no-debias``); :func:`settle_estimator`
    fills and checks them."""
    paper_size = "; 5000 with --paper" if paper else ""
    p.add_argument(
        "--bin-size", type=_bin_size, default=None,
        help=f"adaptive bin size β, or 'auto': ⌈√N⌉ (default: auto{paper_size})",
    )  # fmt: skip
    p.add_argument(
        "--binning", choices=["adaptive", "uniform"], default="adaptive",
        help="equal-mass bins of --bin-size pairs, or --n-bins equal-width bins "
        "(default: adaptive)",
    )  # fmt: skip
    p.add_argument("--n-bins", type=int, default=None, help="bins of uniform binning (default: 15)")
    p.add_argument(
        "--norm", choices=["l2", "l1", "max"], default="l2",
        help="the bins' gaps as RMS (l2), mean absolute (l1) or worst (max) (default: l2)",
    )  # fmt: skip
    p.add_argument(
        "--debias", action=argparse.BooleanOptionalAction, default=None,
        help="debiased squared gaps (default for l2; --no-debias for the plug-in estimate)",
    )  # fmt: skip


def settle_estimator(args: argparse.Namespace, paper: bool = False) -> None:
    """Fill the estimator's options left unset (:func:`add_estimator_options`): the
    recommended estimator, or with ``paper`` the paper's bins and plug-in; refuse a size
    option the binning does not read and ``--debias`` beside a norm without it.

    Example:
        >>> args = argparse.Namespace(binning="uniform", bin_size=50, n_bins=None,
        ...                           norm="l2", debias=None)
        >>> settle_estimator(args)
        Traceback (most recent call last):
        ...
        ValueError: --bin-size sizes adaptive bins; --binning uniform takes --n-bins
    """
    # Each binning reads its own size option; the other's had been ignored without a word.
    if args.binning == "uniform" and args.bin_size is not None:
        raise ValueError("--bin-size sizes adaptive bins; --binning uniform takes --n-bins")
    if args.binning == "adaptive" and args.n_bins is not None:
        raise ValueError("--n-bins counts uniform bins; it needs --binning uniform")
    if args.n_bins is None:
        args.n_bins = 15
    check_n_bins(args.n_bins)
    if args.bin_size is None:  # the paper's size is of adaptive bins: uniform ones take none
        paper_bins = paper and args.binning == "adaptive"
        args.bin_size = PAPER_SETTING["bin_size"] if paper_bins else "auto"
    if args.debias and args.norm != "l2":
        raise ValueError(f"--debias applies to --norm l2 only (--norm {args.norm} has no debiased "
                         "estimate: it is the plug-in)")  # fmt: skip
    if args.debias is None:
        # The debiased estimate exists for l2 only; l1 and max keep the plug-in.
        args.debias = not paper and args.norm == "l2"


def binning_of(args: argparse.Namespace) -> dict[str, Any]:
    """The settled binning options (:func:`settle_estimator`) as the library's keyword
    arguments: ``binning``, ``bin_size`` and ``n_bins``."""
    return {"binning": args.binning, "bin_size": args.bin_size, "n_bins": args.n_bins}


def estimator_of(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`binning_of`, with ``norm`` and ``debias``: the estimator's keyword arguments."""
    return binning_of(args) | {"norm": args.norm, "debias": args.debias}


def estimator_summary(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`estimator_of` as the JSON summary gives it: the size option of the binning
    not used is None ("auto" under uniform binning had read as used)."""
    estimator = estimator_of(args)
    unused = "n_bins" if args.binning == "adaptive" else "bin_size"
    return estimator | {unused: None}


def _settle_options(args: argparse.Namespace) -> None:
    """Fill the options left unset: the recommended estimator, or the paper's (``--paper``)."""
    settle_estimator(args, args.paper)
    if args.interval is None:
        # An explicit --groups asks for the group bootstrap, over --paper's interval too.
        if args.groups is not None:
            args.interval = "groups"
        else:
            args.interval = PAPER_SETTING["interval"] if args.paper else "pairs"
    if args.groups is not None and args.interval != "groups":
        raise ValueError(
            f"--groups is used by --interval groups only (got --interval {args.interval})"
        )


def _compute(args: argparse.Namespace):
    """Read the file; the error with its interval, the Brier decomposition, and under
    ``--mode classwise`` each class's result (else None), which the page and the figure
    reuse rather than draw again."""
    import torch

    from calib_metrics import cli_report
    from calib_metrics.functional import brier_decomposition, calibration_error_ci
    from calib_metrics.functional.calibration import classwise_results
    from calib_metrics.functional.multiclass import average_results, pair_sets
    from calib_metrics.predictions import read_table

    wanted_groups = (args.groups or "") if args.interval == "groups" else None
    taken = {args.label: "named by --label"} if args.label is not None else {}
    table = read_table(args.file, args.probs, args.target, wanted_groups, args.ignore_index, taken)
    probs, target = multiclass_input(table.probs, table.target, args.file, args.mode, table.kept)
    groups = table.groups
    if groups is not None:  # the group bootstrap: a Poisson weight per group and draw
        announce_long_run(table, args.samples, "group-bootstrap resamples")
    options = binning_of(args)
    generator = torch.Generator().manual_seed(args.seed)
    estimator = cli_report.estimator_options(args)
    sets = pair_sets(probs, target, args.mode, groups) if args.mode == "classwise" else []
    per_class = None
    if len(sets) > 1:
        # The library's classwise average, class after class from one generator: the same
        # numbers and warnings, with each class's result kept.
        per_class = classwise_results(sets, generator=generator, **estimator)
        result = average_results(per_class)
    else:
        result = calibration_error_ci(
            probs, target, generator=generator, groups=groups, mode=args.mode, **estimator
        )
    brier = brier_decomposition(*_brier_pairs(probs, target, args.mode), **options)
    return table._replace(probs=probs, target=target), result, brier, per_class


def _summary(args: argparse.Namespace, table, result, brier, class_bins: list) -> dict:
    """The run's numbers for --json and the HTML page; ``table``: the pairs read (their
    groups and the column those came from); ``class_bins``: the bins behind the error (one
    set, or each class's under --mode classwise: those carry their class)."""
    from calib_metrics.cli_report import brier_numbers
    from calib_metrics.report import BRIER_OF_CLASSWISE

    groups = table.groups
    bins = result.bins
    multiclass = table.probs.ndim == table.target.ndim + 1
    return {
        "file": str(args.file),
        "n": int(bins.count.sum().item()),
        # A multiclass file's items and classes, whose pairs N counts (None: binary pairs).
        "items": int(table.target.numel()) if multiclass else None,
        "classes": int(table.probs.shape[-1]) if multiclass else None,
        "bins": len(bins.count),
        **estimator_summary(args),
        "confidence": args.confidence,
        "method": args.method,
        "interval": drawn_interval(args.interval, table.probs, table.target, args.mode),
        "samples": args.samples,
        "groups": None if groups is None else int(groups.unique().numel()),
        # The column resampled, as found: --interval groups finds it by name.
        "group_column": table.group_column,
        "calib_err": result.error,
        "mean": result.mean,
        "std": result.std,
        "lower": result.lower,
        "upper": result.upper,
        **brier_numbers(brier),
        **({"brier_pairs": BRIER_OF_CLASSWISE} if args.mode == "classwise" else {}),
        "per_bin": per_bin_rows(class_bins if args.mode == "classwise" else [bins]),
    }


def per_bin_rows(class_bins: list) -> list[dict]:
    """Each bin's numbers; with several sets (the classes of a classwise run), its class.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import Bins
        >>> one = Bins(torch.tensor([0.2]), torch.tensor([0.0]), torch.tensor([3.0]))
        >>> per_bin_rows([one, one])[1]
        {'class': 1, 'pred_mean': 0.2..., 'freq': 0.0, 'count': 3.0}
    """
    rows = []
    for c, bins in enumerate(class_bins):
        numbers = zip(bins.pred_mean.tolist(), bins.freq.tolist(), bins.count.tolist(), strict=True)
        for q, f, n in numbers:
            rows.append({"pred_mean": q, "freq": f, "count": n})
            if len(class_bins) > 1:
                rows[-1] = {"class": c, **rows[-1]}
    return rows


def drawn_interval(interval: str, probs, target, mode: str) -> str:
    """The interval ``evaluate`` draws on ``probs`` and ``target`` as read: ``--interval``'s,
    or ``"items"`` where the pair bootstrap draws the one-vs-rest pairs of a two-class file
    item by item (:func:`~calib_metrics.functional.multiclass.resamples_items`), whether
    or not there were enough items for an interval.

    Example:
        >>> import torch
        >>> two = torch.tensor([[0.3, 0.7], [0.6, 0.4]]), torch.tensor([1, 0])
        >>> drawn_interval("pairs", *two, "one_vs_rest"), drawn_interval("pairs", *two, "top_label")
        ('items', 'pairs')
    """
    from calib_metrics.functional.multiclass import resamples_items

    return "items" if interval == "pairs" and resamples_items(probs, target, mode) else interval


def mode_note(mode: str) -> str:
    """How a command's text names ``--mode``: nothing for the default one-vs-rest pairs.

    Example:
        >>> mode_note("one_vs_rest"), mode_note("classwise")
        ('', ', classwise')
    """
    return "" if mode == "one_vs_rest" else f", {mode}"


def _print_text(args: argparse.Namespace, summary: dict, result, brier) -> None:
    from calib_metrics.report import fixed, items_note, no_interval, plus_term, resampled_units
    from calib_metrics.wording import level_text, visible_controls

    pct = level_text(args.confidence)
    groups = summary["groups"]
    in_groups = "" if groups is None else f" in {groups} group{'s' * (groups != 1)}"
    print(
        f"{visible_controls(str(args.file))}: N = {summary['n']} pair"
        f"{'s' * (summary['n'] != 1)}{items_note(summary)}{in_groups}, {bins_text(summary)}"
    )
    drawn = summary["interval"]
    missing = no_interval(result.lower, result.upper, resampled_units(drawn))
    interval = (
        f", {missing}"
        if missing
        else f"  {pct} interval [{result.lower.item():.4f}, {result.upper.item():.4f}] "
        f"({drawn} {args.method}, {args.samples} draws)"
    )
    print(
        f"CalibErr ({args.norm}{', debiased' if args.debias else ''}"
        f"{mode_note(summary['mode'])}) = {result.error.item():.4f}{interval}"
    )
    if "interval_note" in summary:
        print(f"note: {summary['interval_note']}")
    # The within-bin term may be negative (− 0.0001), a tiny negative too (− 0.0000).
    sign, _, within = plus_term(brier.within_bin).partition(" ")
    of = f" ({summary['brier_pairs']})" if "brier_pairs" in summary else ""
    # The calibration term is the l2 plug-in square (--norm l2 --no-debias's CalibErr², at
    # any --norm), not the debiased CalibErr's above it: said, or a reader squares the
    # wrong number.
    print(
        f"Brier{of} = {fixed(brier.brier)} = calibration (plug-in) {fixed(brier.calibration)} "
        f"+ refinement {fixed(brier.refinement)} {sign} within-bin {within}"
    )
    for line in _extra_lines(summary):
        print(line)
    if "per_label" in summary:
        from calib_metrics.cli_report import label_lines

        rows_note = f"; {summary['per_label_note']}" if "per_label_note" in summary else ""
        print(f"per label ({len(summary['per_label'])}{rows_note}):")
        print("\n".join(label_lines(summary["per_label"], resampled_units(drawn))))
    if args.plot:
        print(f"reliability diagram: {visible_controls(str(args.plot))}")
    if args.html:
        print(f"HTML report: {visible_controls(str(args.html))}")


def bins_text(summary: dict) -> str:
    """The bins the error was read from: uniform bins say how many of ``--n-bins`` were
    empty, which hold no pair and are dropped ("11 uniform bins" after ``--n-bins 15`` had
    read as a miscount). Classwise, the bins are every class's together.

    Example:
        >>> bins_text({"bins": 11, "binning": "uniform", "n_bins": 15, "mode": "top_label"})
        '11 uniform bins (of --n-bins 15; 4 empty, dropped)'
        >>> bins_text({"bins": 1, "binning": "adaptive", "n_bins": None})
        '1 adaptive bin'
        >>> bins_text({"bins": 5, "binning": "uniform", "n_bins": 15, "mode": "classwise",
        ...            "classes": 3})
        '5 uniform bins (of --n-bins 15 per class, 45 in all; 40 empty, dropped)'
    """
    count, binning = summary["bins"], summary["binning"]
    text = f"{count} {binning} bin{'' if count == 1 else 's'}"
    if binning != "uniform":
        return text
    asked = summary["n_bins"]
    if summary.get("mode") == "classwise":  # each class binned apart: its own --n-bins
        classes = summary["classes"]
        of = f"--n-bins {asked} per class, {asked * classes} in all"
        asked *= classes
    else:
        of = f"--n-bins {asked}"
    if count < asked:
        text += f" (of {of}; {asked - count} empty, dropped)"
    return text


def evaluate(args: argparse.Namespace) -> dict:
    """``calib-metrics evaluate``: read, compute, plot if asked, print; the summary."""
    from calib_metrics import cli_report
    from calib_metrics.predictions import (
        all_or_none,
        check_output_paths,
        text_report_stream,
        to_jsonable,
    )
    from calib_metrics.report import interval_note

    _settle_options(args)
    check_draw_options(args)
    check_plot_smooth(args)
    outputs = {"--plot": args.plot, "--html": args.html}
    check_output_paths(outputs, [args.file], json_output=args.json)
    if args.html:  # the page shows every measure the command has
        args.smooth = args.spiegelhalter = True
    table, result, brier, per_class = _compute(args)
    probs, target, groups = table.probs, table.target, table.groups
    options = binning_of(args)
    bins = estimate_bins(probs, target, args.mode, result, **options)
    warn_if_few_bins(
        bins,
        **options,
        debias=args.debias and args.norm == "l2",
        per_class=args.mode == "classwise",
    )
    summary = _summary(args, table, result, brier, bins)
    summary["settings"] = cli_report.evaluate_settings(args, summary, table)
    note = interval_note(summary)
    if note:  # an estimate outside its own interval, and why
        summary["interval_note"] = note
    summary |= _extra_measures(probs, target, args, groups)
    per_label = None
    labels = cli_report.evaluate_per_label(args, probs, target, groups, table.kept, per_class)
    if labels is not None:
        per_label, label_groups = labels
        summary["per_label"] = cli_report.label_summary(per_label, label_groups)
        rows_note = None if args.label is not None else cli_report.class_rows_note(args.mode)
        if rows_note:
            summary["per_label_note"] = rows_note
    panels = None
    if args.mode == "classwise" and (args.plot or args.html):
        from calib_metrics.cli_classwise import class_panels

        name = Path(args.file).name
        panels, summary["plot_classes"] = class_panels(
            args, [(probs, target)], [name], groups, cli_report.estimator_options(args),
            title=f"{name}: classwise, one reliability diagram per class", computed=[per_class],
        )  # fmt: skip
    # One smooth curve for --plot and the page (its band's draws are the run's longest).
    smooth = None if panels is not None else smooth_curve_for_plot(args, probs, target, groups,
                                                                   args.mode)  # fmt: skip
    with all_or_none():  # a failure writing the page keeps the old figure beside the old page
        if args.plot:
            _plot(args, result, panels, smooth, summary["interval"])
            summary["plot"] = str(args.plot)
        if args.html:
            summary["html"] = cli_report.write_evaluate(
                args, summary, result, brier, per_label, panels, smooth
            )
    if args.json:
        print(json.dumps(to_jsonable(summary), indent=2))
    else:
        with text_report_stream(outputs):
            _print_text(args, summary, result, brier)
    return summary


def _plot(args: argparse.Namespace, result, panels, smooth, interval: str) -> None:
    """Write ``--plot``: the per-class ``panels`` (classwise), else the reliability diagram
    of ``result`` (with the ``smooth`` curve, when asked: :func:`smooth_curve_for_plot`),
    naming the ``interval`` drawn (:func:`drawn_interval`)."""
    from calib_metrics.predictions import save_figure

    if panels is None:
        from calib_metrics.plot import reliability_diagram

        panels, _ = reliability_diagram(
            result, title=Path(args.file).name, confidence=args.confidence,
            interval=interval, debias=args.debias, norm=args.norm,
            smooth=smooth,
        )  # fmt: skip
    save_figure(panels, args.plot, "--plot", dpi=120)


def _brier_pairs(probs, target, mode: str):
    """The binary pairs behind the Brier split: top-label pairs, else one-vs-rest."""
    from calib_metrics.functional.multiclass import pair_sets

    pairs = pair_sets(probs, target, "top_label" if mode == "top_label" else "one_vs_rest")
    return pairs[0].probs, pairs[0].target


def _extra_measures(probs, target, args: argparse.Namespace, groups=None) -> dict:
    """The measures beside CalibErr that --mode, --smooth and --spiegelhalter ask for."""
    extra: dict = {"mode": args.mode}
    if args.smooth:
        from calib_metrics.functional import smooth_calibration_error

        extra["smooth_ece"] = smooth_calibration_error(
            probs, target, mode=args.mode, bandwidth=args.bandwidth
        )
        extra["bandwidth"] = bandwidth_setting(args.bandwidth)
    if args.spiegelhalter:
        extra |= spiegelhalter_summary(probs, target, args.mode, groups)
    return extra


def spiegelhalter_summary(probs, target, mode: str, groups=None) -> dict:
    """Spiegelhalter's test as the command reports it: with the cluster-robust variance
    over ``groups`` when given, and over the items of a multiclass file's one-vs-rest
    pairs (an item's labels sum to 1); ``spiegelhalter_groups`` is the number of those
    clusters, ``spiegelhalter_cluster`` what they are, ``"groups"`` or ``"items"`` (both
    None: the independent variance, or no test: ``spiegelhalter_note`` says why).

    Example:
        >>> import torch
        >>> probs = torch.tensor([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8], [0.9, 0.1]])
        >>> summary = spiegelhalter_summary(probs, torch.tensor([0, 1, 0, 0]), "one_vs_rest")
        >>> summary["spiegelhalter_groups"], summary["spiegelhalter_cluster"]  # one per item
        (4, 'items')
    """
    import torch

    from calib_metrics.functional import spiegelhalter_test
    from calib_metrics.functional.spiegelhalter import resolve_groups

    # The items, where the test groups a multiclass file's pairs itself: the user gave none.
    cluster = "groups" if groups is not None else None
    groups = resolve_groups(probs, target, mode, groups)
    n_groups = None if groups is None else int(torch.unique(groups).numel())
    cluster = cluster or (None if groups is None else "items")
    clusters = {"spiegelhalter_groups": n_groups, "spiegelhalter_cluster": cluster}
    try:
        if mode == "classwise":  # the library's advice names its own arguments
            raise ValueError(
                "--mode classwise would give one test per class; --mode one_vs_rest or "
                "top_label gives one"
            )
        test = spiegelhalter_test(probs, target, mode=mode, groups=groups)
    except ValueError as error:
        # Hard 0/1 or constant-½ predictions, classwise mode: the rest of the report stands.
        # No test, no variance of one: its clusters had read 250 "groups" beside z null.
        note = str(error).split(" (")[0]
        return {"spiegelhalter_z": None, "spiegelhalter_p": None, "spiegelhalter_groups": None,
                "spiegelhalter_cluster": None, "spiegelhalter_note": note}  # fmt: skip
    return {"spiegelhalter_z": test.z, "spiegelhalter_p": test.p_value, **clusters}


def _extra_lines(summary: dict) -> list[str]:
    lines = []
    if "smooth_ece" in summary:
        from calib_metrics.report import smooth_ece_source

        source = smooth_ece_source(summary["bandwidth"])
        lines.append(f"smooth ECE = {summary['smooth_ece'].item():.4f} ({source})")
    if summary.get("spiegelhalter_note"):
        from calib_metrics.report import not_computed

        lines.append(f"Spiegelhalter: {not_computed(summary['spiegelhalter_note'])}")
    elif "spiegelhalter_z" in summary:
        from calib_metrics.report import fixed, normal_p_text, p_phrase, spiegelhalter_variance

        p = p_phrase(normal_p_text(summary["spiegelhalter_p"].item()))
        variance = spiegelhalter_variance(
            summary["spiegelhalter_groups"], summary["spiegelhalter_cluster"]
        )
        lines.append(
            f"Spiegelhalter z = {fixed(summary['spiegelhalter_z'], 3)}, two-sided {p} ({variance})"
        )
    return lines


def _experiment(name: str):
    from calib_metrics.paper import EXPERIMENTS

    return importlib.import_module(EXPERIMENTS[name])


PAPER_COMMANDS = {
    "demo": "the thesis' synthetic calibration study (no data set needed)",
    "reproduce": "run one of the paper's experiments",
}


def plain_text(doc: str | None) -> str | None:
    """A module docstring as ``--help`` shows it: its reST markup (````code````,
    ``:func:`name```) as plain text, which the terminal had shown as written.

    Example:
        >>> plain_text("``compare a b``: see :func:`calib_metrics.functional.compare_calibration`.")
        'compare a b: see calib_metrics.functional.compare_calibration.'
    """
    if doc is None:
        return None
    doc = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", doc)
    return re.sub(r"``([^`]+)``", r"\1", doc)


def _add_paper_commands(sub: argparse._SubParsersAction) -> None:
    """``demo`` and ``reproduce``, whose options come from the paper's modules."""
    from calib_metrics.paper import EXPERIMENTS, demo, options

    shown = {"formatter_class": options.DefaultsHelpFormatter}  # each option's default
    description = plain_text(demo.__doc__)
    demo_parser = sub.add_parser("demo", help=demo.DESCRIPTION, description=description, **shown)
    demo.add_arguments(demo_parser)
    reproduce = sub.add_parser("reproduce", help=PAPER_COMMANDS["reproduce"])
    experiments = reproduce.add_subparsers(dest="experiment", required=True)
    for name in EXPERIMENTS:
        try:
            module = _experiment(name)
        except ImportError as err:
            missing = experiments.add_parser(name, help=f"(unavailable: {err})")
            missing.set_defaults(unavailable=str(err))
            continue
        exp_parser = experiments.add_parser(name, help=module.DESCRIPTION, **shown)
        module.add_arguments(exp_parser)


def build_parser(paper: bool = True) -> argparse.ArgumentParser:
    """The command's parser; with ``paper=False`` ``demo``/``reproduce`` are listed only.

    Example:
        >>> build_parser(paper=False).parse_args(["evaluate", "preds.csv"]).command
        'evaluate'
    """
    parser = _Parser(
        prog="calib-metrics",
        description="Posterior calibration analysis (Nguyen & O'Connor, EMNLP 2015).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_evaluate(sub)
    from calib_metrics import cli_recalibrate

    recal = sub.add_parser(
        "recalibrate",
        help=cli_recalibrate.DESCRIPTION,
        description=plain_text(cli_recalibrate.__doc__),
    )
    cli_recalibrate.add_arguments(recal)
    from calib_metrics import cli_compare

    compare = sub.add_parser(
        "compare", help=cli_compare.DESCRIPTION, description=plain_text(cli_compare.__doc__)
    )
    cli_compare.add_arguments(compare)
    if paper:
        _add_paper_commands(sub)
    else:
        for name, text in PAPER_COMMANDS.items():
            sub.add_parser(name, help=text, add_help=False)
    return parser


def _wants_paper(argv: Sequence[str]) -> bool:
    """Whether the command named in ``argv`` is one of the paper's (or no command is)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    return command is None or command in PAPER_COMMANDS


def _run_paper_command(args: argparse.Namespace) -> None:
    if args.command == "demo":
        from calib_metrics.paper import demo

        demo.run(args)
        return
    if getattr(args, "unavailable", None):
        raise ValueError(f"experiment {args.experiment!r} is unavailable: {args.unavailable}")
    if getattr(args, "out", None) is not None:
        # Their .png figures' needs (a LaTeX with text.usetex), said before minutes of work.
        from calib_metrics.predictions import check_figure_path

        check_figure_path(Path(args.out) / "figure.png", "--out")
    _experiment(args.experiment).run(args)


def _one_line(err: BaseException | Warning | str) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 500 else text[:497] + "..."


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[list[str]]:
    """Collect, as one line each (each text once), every warning shown while the command
    runs, instead of Python's ``file:line`` form; the library's UserWarnings (too few
    bins, too few resampling units) are always collected. An ``ImmediateWarning`` (one
    said before a long run) is printed on stderr at once instead, as a long draw's
    notice is."""
    from calib_metrics.few_bins import ImmediateWarning
    from calib_metrics.functional.paper_warnings import DEBIASED_PAPER_DRAWS

    lines: list[str] = []
    said: list[str] = []
    glyphs = _MissingGlyphs(lines)

    def collect(message, category, filename, lineno, file=None, line=None) -> None:
        shown = _in_command_terms(_without_function(_one_line(message)))
        if glyphs.took(shown):
            return
        text = f"calib-metrics: warning: {shown}"
        if text in lines or text in said:
            return
        if issubclass(category, ImmediateWarning):
            try:
                print(text, file=sys.stderr, flush=True)
                said.append(text)
                return
            except OSError:  # left for the end, which deals with a stderr gone
                pass
        lines.append(text)

    with warnings.catch_warnings(), _matplotlib_logs_to(collect):
        warnings.simplefilter("always", UserWarning)
        # The functions' row-sum warning: the reader's own names the file and the line.
        warnings.filterwarnings(
            "ignore", r".*rows of class probabilities do not sum to 1 \(within", UserWarning
        )
        # Algorithm 2's debiased draws: evaluate notes an estimate outside its interval
        # in its own words (report.interval_note); a reproduction names the tag first.
        warnings.filterwarnings("ignore", ".*" + re.escape(DEBIASED_PAPER_DRAWS), UserWarning)
        warnings.showwarning = collect
        yield lines


def _without_function(text: str) -> str:
    """A library warning without the function's name, which the command's user never
    called (``calibration_error_ci: 4 pairs; ...`` had named it).

    Example:
        >>> _without_function("calibration_error_ci: 4 pairs; at least 10 are needed")
        '4 pairs; at least 10 are needed'
        >>> _without_function("only 3 bins")
        'only 3 bins'
    """
    from calib_metrics.wording import split_function_name

    return split_function_name(text)[1]


#: The library's NaN results as the command shows them: it writes "no interval (…)" and
#: JSON null, never NaN (the page's warnings had read "so its ends are NaN" beside it). A
#: caller of the functions keeps the library's words: NaN is the value it holds. And a
#: piece of Python advice as the command's option.
_NAN_IN_COMMAND_TERMS = (
    ("so its ends are NaN (the error stands)", "so there is none (the error stands)"),
    ("so its ends are NaN (the curve stands)", "so there is none (the curve stands)"),
    (
        "so both are NaN, as are each model's interval ends (the difference stands)",
        "so there is neither, nor an interval of either model (the difference stands)",
    ),
    # multiclass.apart_message: the file's rows are the items.
    (
        "groups=torch.arange(N), one id per item, draws whole items",
        "--groups naming a column of row ids draws whole items",
    ),
)


#: The library's keyword arguments as the command's options, where a warning advises one.
_OPTIONS_IN_COMMAND_TERMS = (
    (re.compile(r"\binterval='(\w+)'"), r"--interval \1"),
    (re.compile(r"\bbin_size='?(\w+)'?"), r"--bin-size \1"),
    (re.compile(r"\bn_bins\b"), "--n-bins"),
    (re.compile(r"\bdebias=False\b"), "--no-debias"),
)


def _in_command_terms(text: str) -> str:
    """A library warning's options as the command's (``interval='pairs'`` is
    ``--interval pairs``), and its NaN results as the command shows them (none).

    Example:
        >>> _in_command_terms("interval='paper': 12 pairs ...; interval='pairs' draws")
        '--interval paper: 12 pairs ...; --interval pairs draws'
        >>> _in_command_terms("8 pairs; ..., so its ends are NaN (the error stands)")
        '8 pairs; ..., so there is none (the error stands)'
        >>> _in_command_terms("use bin_size='auto' or debias=False; lower n_bins (now 9)")
        'use --bin-size auto or --no-debias; lower --n-bins (now 9)'
    """
    for library, command in _NAN_IN_COMMAND_TERMS:
        text = text.replace(library, command)
    for keyword, option in _OPTIONS_IN_COMMAND_TERMS:
        text = keyword.sub(option, text)
    return text


#: matplotlib's missing-glyph warning, one per character and font: 3.7 says "Glyph 21517
#: missing from current font.", later ones "... missing from font(s) DejaVu Sans.". It
#: gives the caller's file and line (``_api.warn_external``): it is known by its text.
_MISSING_GLYPH = re.compile(r"Glyph (\d+) .*missing from (?:current font|font\(s\) (.+?))\.?$")

#: The most missing characters a warning lists.
_GLYPHS_LISTED = 20


class _MissingGlyphs:
    """matplotlib's missing-glyph warnings as one line of the command's, named as
    matplotlib's and said to touch the figures' drawing only: one line per character
    (12 Chinese labels had said 15) buried the other warnings. The line stands where the
    first was said, rewritten as more characters come."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._at: int | None = None
        self._characters: list[str] = []
        self._fonts: list[str] = []

    def took(self, text: str) -> bool:
        """Whether ``text`` is such a warning, then counted in the line."""
        found = _MISSING_GLYPH.match(text)
        if found is None:
            return False
        for new, known in ((chr(int(found[1])), self._characters), (found[2], self._fonts)):
            if new is not None and new not in known:
                known.append(new)
        line = f"calib-metrics: warning: {_missing_glyphs_text(self._characters, self._fonts)}"
        if self._at is None:
            self._at = len(self._lines)
            self._lines.append(line)
        else:
            self._lines[self._at] = line
        return True


def _missing_glyphs_text(characters: Sequence[str], fonts: Sequence[str]) -> str:
    """The one warning of the ``characters`` that ``fonts`` (none: matplotlib 3.7's
    "current font") lack, the first :data:`_GLYPHS_LISTED` of them listed.

    Example:
        >>> text = _missing_glyphs_text(["名", "词"], ["DejaVu Sans"])
        >>> print(text)  # doctest: +NORMALIZE_WHITESPACE
        matplotlib: 2 characters of the figures' titles or labels are missing from font(s)
        DejaVu Sans: 名 词; a figure file draws each as a box (an HTML page's figures are
        drawn in the browser's fonts); the numbers are not touched
        >>> text = _missing_glyphs_text([chr(0x4E00 + i) for i in range(25)], [])
        >>> text.split(" of ")[0]
        'matplotlib: 25 characters'
        >>> listed = text.split(": ")[2].split(";")[0].split()
        >>> len(listed), listed[-2:]
        (21, ['专', '…'])
    """
    from calib_metrics.wording import counted, visible_controls

    listed = " ".join(visible_controls(c) for c in characters[:_GLYPHS_LISTED])
    more = " …" if len(characters) > _GLYPHS_LISTED else ""
    font = f"font(s) {', '.join(fonts)}" if fonts else "the figures' font"
    return (
        f"matplotlib: {counted(len(characters), 'character')} of the figures' titles or "
        f"labels are missing from {font}: {listed}{more}; a figure file draws each as a box "
        "(an HTML page's figures are drawn in the browser's fonts); the numbers are not "
        "touched"
    )


@contextlib.contextmanager
def _matplotlib_logs_to(collect) -> Iterator[None]:
    """matplotlib's logged warnings (an .eps figure: "The PostScript backend does not
    support transparency", the interval bands then drawn opaque) given to ``collect`` as
    warnings, instead of reaching stderr as a bare line of logging's."""

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            collect(f"matplotlib: {record.getMessage()}", UserWarning, record.pathname, 0)

    logger = logging.getLogger("matplotlib")
    handler, propagate = Handler(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False  # said once, here, not again by a handler of the caller's
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def warn_if_few_bins(
    bins: list,
    *,
    binning: str,
    bin_size: int | str,
    n_bins: int,
    debias: bool = False,
    per_class: bool = False,
) -> None:
    """A UserWarning (one ``warning:`` line of the command) when the bins are too few to
    show miscalibration that cancels across probabilities, or hold one pair for a debiased error
    (:func:`calib_metrics.few_bins.few_bins_message`, naming the command's options;
    ``per_class``: the bins are each class's).

    Example:
        >>> import torch, warnings
        >>> from calib_metrics.functional import Bins
        >>> bins = Bins(torch.rand(3), torch.rand(3), torch.tensor([4.0, 4.0, 4.0]))
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_if_few_bins([bins], binning="adaptive", bin_size="auto", n_bins=15)
        >>> str(caught[0].message)[:25]
        'only 3 bins from 12 pairs'
    """
    from calib_metrics.few_bins import few_bins_message

    message = few_bins_message(
        bins, binning=binning, bin_size=bin_size, n_bins=n_bins, debias=debias, cli=True,
        per_class=per_class,
    )  # fmt: skip
    if message is not None:
        warnings.warn(message, UserWarning, stacklevel=2)


def estimate_bins(probs, target, mode: str, result, **binning) -> list:
    """The bins behind an error: ``result``'s, or under ``mode="classwise"`` (whose
    result pools the classes' bins) each class's, made with ``binning``'s options."""
    if mode != "classwise":
        return [result.bins]
    from calib_metrics.functional.calibration import compute_bins
    from calib_metrics.functional.multiclass import pair_sets

    return [compute_bins(s.probs, s.target, **binning) for s in pair_sets(probs, target, mode)]


def command() -> int:
    """The ``calib-metrics`` command (its console script, and ``python -m
    calib_metrics.cli``): :func:`main` of ``sys.argv``, in a process of its own, which lets
    go of a stdout or stderr that fails (pointed at /dev/null, so that what Python still
    buffers cannot fail again at exit: "Exception ignored", exit code 120)."""
    token = _LETS_GO.set(True)
    try:
        return main()
    finally:
        _LETS_GO.reset(token)


# Whether a failed stdout or stderr is pointed at /dev/null: only in the command's own
# process (command()); a caller of main() from Python keeps its streams as they were.
_LETS_GO: ContextVar[bool] = ContextVar("_LETS_GO", default=False)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not _writable(sys.stderr):
        # A closed stderr (2>&-) leaves Python's stderr None, and print(file=None) writes
        # to stdout: warning lines had ended up inside `--json` output; a read-only one
        # (2</dev/null) failed the first notice and so the command (exit code 2).
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the process's stderr from here)
    try:  # building the parser imports torch: a second or so that Ctrl-C may cut short
        args = _parse(build_parser(paper=_wants_paper(argv)), argv)
    except KeyboardInterrupt:
        return _interrupted()
    # As typed (shell-quoted), for the report page: main's own arguments, not sys.argv,
    # which holds a script's arguments when main is called from Python.
    args.command_line = shlex.join(["calib-metrics", *argv])
    if not _writable(sys.stdout):
        # A closed stdout (>&-) leaves Python's stdout None, and print() wrote nowhere: the
        # results were lost with exit code 0. Refused before any work, as an unwritable
        # output file is.
        return _print_error(
            ValueError(
                "stdout is closed (or read-only): the results would be lost; redirect it to "
                "a file, or to /dev/null to keep only the files the command writes"
            )
        )
    stdout, sys.stdout = sys.stdout, _NamedStdout(sys.stdout)
    try:
        with _warnings_as_lines() as lines:
            # The lines said so far, for an --html page: its reader never sees stderr.
            args.warning_lines = lines
            code = _run(args)
            if code == 0:  # what stdout still buffers fails here, not at exit
                code = _flush_results()
    finally:
        sys.stdout = stdout
    if code == 0:  # after the results; a failed command's one line is its error
        code = _print_warnings(lines)
    return code


class _NamedStdout:
    """The command's stdout, whose failed write names it: on a full disk (``>/dev/full``)
    the error had read "[Errno 28] No space left on device", which did not say whether
    an input, a --plot file or the results had failed. A reader that left (a broken pipe)
    stays that error; everything else is the stream's own."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._named(self._stream.write, text)

    def flush(self) -> None:
        self._named(self._stream.flush)

    def _named(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as err:
            # What the stream still buffers would fail again when Python flushes it at
            # exit ("Exception ignored ...", exit code 120): to /dev/null with it.
            _to_devnull(self._stream)
            raise ValueError(
                f"stdout cannot be written ({err.strerror or err}): the results are lost; "
                "redirect it to a file that can take them"
            ) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _flush_results() -> int:
    """Flush the results on stdout: exit code 0, or the error's (a full disk) or 141."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _broken_streams_to_devnull()
        return EXIT_BROKEN_PIPE
    except ValueError as err:
        return _print_error(err)
    return 0


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with an unrecognised option refused by the subcommand it
    was given to: argparse hands it up to the top parser, whose error had pointed
    ``reproduce pos --bogus`` to ``calib-metrics --help`` instead of the experiment's own."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        # The option goes to the (sub)command typed before it: `--bogus evaluate f.csv`
        # is the top parser's, `reproduce pos --bogus` the experiment's.
        typed_at = argv.index(extras[0]) if extras[0] in argv else len(argv)
        chosen = _chosen_parser(parser, args, argv[:typed_at])
        chosen.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _chosen_parser(
    parser: argparse.ArgumentParser, args: argparse.Namespace, before: list[str]
) -> argparse.ArgumentParser:
    """The innermost (sub)command's parser that ``args`` went through whose name is among
    the arguments ``before`` (those typed before the unrecognised option)."""
    for action in parser._actions:  # argparse lists its subcommands only there
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            chosen = action.choices.get(name)
            if chosen is not None and name in before:
                return _chosen_parser(chosen, args, before[before.index(name) + 1 :])
    return parser


def _writable(stream) -> bool:
    """Whether ``stream`` is there and open for writing (a stand-in without a file is)."""
    if stream is None:
        return False
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): the prints' own handlers stand
        return True
    try:
        flags = fcntl.fcntl(stream.fileno(), fcntl.F_GETFL)
    except (AttributeError, OSError, TypeError, ValueError):  # no file (a capture, a mock)
        return True
    return flags & os.O_ACCMODE != os.O_RDONLY


def _print_warnings(lines: list[str]) -> int:
    """Print the collected warning lines on stderr: exit code 0, or 141 when stderr's
    reader has gone (`2>&1 >/dev/null | true`), as for stdout; the error had escaped
    the command's handler and ended it with a traceback nobody saw and exit code 1."""
    try:
        for line in lines:
            print(line, file=sys.stderr, flush=True)
    except BrokenPipeError:
        _broken_streams_to_devnull()
        return EXIT_BROKEN_PIPE
    except OSError:  # a stderr that cannot be written (2</dev/null): the results stand
        _to_devnull(sys.stderr)
    return 0


# What a command recommends when the exact computation would not fit in memory: the
# library's streaming mode (check_room's advice) has no command-line option, and only
# one model's error has a streaming form (a comparison needs every pair).
ROOM_REMEDY_OF = {
    "evaluate": "free memory (or use a machine with more), measure a sample of the rows, or, "
    "in Python, feed the file in chunks to CalibrationError(streaming=True), whose memory "
    "does not grow with N",
}
ROOM_REMEDY_ELSE = "free memory (or use a machine with more), or measure a sample of the rows"


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command: its exit code, and any problem as one line on stderr."""
    from calib_metrics.functional.binning import ROOM_REMEDY

    token = ROOM_REMEDY.set(ROOM_REMEDY_OF.get(args.command, ROOM_REMEDY_ELSE))
    try:
        return _run_command(args)
    finally:
        ROOM_REMEDY.reset(token)


def _run_command(args: argparse.Namespace) -> int:
    """:func:`_run` with the command line's words for a lack of memory."""
    try:
        check_seed(getattr(args, "seed", None))
        if args.command == "evaluate":
            evaluate(args)
        elif args.command == "recalibrate":
            from calib_metrics import cli_recalibrate

            cli_recalibrate.run(args)
        elif args.command == "compare":
            from calib_metrics import cli_compare

            cli_compare.run(args)
        else:
            _run_paper_command(args)
    except BrokenPipeError:
        # Not a problem of the command: say nothing, and keep Python from reporting the
        # pipe again when it flushes stdout (or stderr) at exit.
        _broken_streams_to_devnull()
        return EXIT_BROKEN_PIPE
    except (ValueError, OSError, ImportError) as err:
        # Each known problem is a ValueError raised at its cause; this also keeps any
        # other bad input or unwritable output to one line, never a traceback.
        return _print_error(err)
    except KeyboardInterrupt:
        return _interrupted()
    return 0


def _interrupted() -> int:
    """Ctrl-C's one line, and the shell's exit code for it (128 + SIGINT)."""
    print("calib-metrics: interrupted", file=sys.stderr)
    return 130


def _print_error(err: BaseException) -> int:
    """The command's one error line on stderr: exit code 2, or 141 when nobody reads it."""
    try:
        print(f"calib-metrics: error: {_one_line(err)}", file=sys.stderr, flush=True)
    except BrokenPipeError:
        _broken_streams_to_devnull()
        return EXIT_BROKEN_PIPE
    except OSError:  # a stderr that cannot be written: the exit code still says it
        _to_devnull(sys.stderr)
    return EXIT_USAGE


def _broken_streams_to_devnull() -> None:
    """Point stdout and stderr, each whose reader has gone, at /dev/null: what they still
    buffer would fail again at exit, and Python would end with exit code 120. A stream
    that still works is left as it is."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            _to_devnull(stream)
        except (AttributeError, OSError, ValueError):  # closed, or no stream at all
            pass


def _to_devnull(stream) -> None:
    """Point ``stream``'s file at /dev/null (a stand-in stream without a file is left), in
    the command's own process only (:func:`command`)."""
    if not _LETS_GO.get():
        return
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(command())
