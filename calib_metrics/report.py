"""One self-contained static HTML page of a calibration analysis (``--html report.html``).

The page holds a summary table, the reliability diagram(s), a per-label chart and table
when the pairs have labels, the bins and the settings used. Figures are inline SVG
(matplotlib's ``savefig(format="svg")`` with text kept as text), styles are inline, and a
Content-Security-Policy forbids every fetch: the page loads nothing from anywhere. Every
text taken from the input (file names, labels, settings) is escaped.

This module only lays out what the caller computed; :mod:`calib_metrics.plot` (and so
matplotlib) is imported when a page is built, never on import.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from calib_metrics.functional.auto_bin import auto_bin_size
from calib_metrics.functional.binning import Bins
from calib_metrics.functional.calibration import BrierDecomposition, CalibrationResult
from calib_metrics.functional.comparison import ComparisonResult
from calib_metrics.functional.comparison_by_label import monte_carlo_p_values
from calib_metrics.functional.intervals import MIN_UNITS, interval_kind
from calib_metrics.wording import (
    count_text,
    counted,
    cut_middle,
    escaped_controls,
    level_text,
    one_line_names,
    short_names,
    visible_controls,
)

if TYPE_CHECKING:
    from calib_metrics.plot import SharedXAxis

# Nothing may be fetched: no scripts, fonts, images or styles from anywhere.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
# How each interval is drawn, after the name the figures give it (plot.interval_label); a
# bootstrap's is recentred or not by the estimate (_interval_how).
INTERVAL_KINDS = {
    "paper": "normal draws per bin",
    "pairs": "bootstrap over pairs",
    "groups": "bootstrap over groups",
    # A multiclass file's one-vs-rest pairs, an item's C drawn together.
    "items": "bootstrap over items",
}
EVALUATE_KEYS = (
    "file", "n", "binning", "bin_size", "norm", "debias", "interval", "confidence", "method",
    "samples",
)  # fmt: skip
COMPARE_KEYS = ("n", "resampled", "confidence", "samples")
# Every block of text wraps anywhere: a label or path without spaces (300 characters) had
# scrolled the page sideways from its title or a note. A table wider than the window scrolls
# in its own box (a compare page had been 1010 px wide at 400), the page's text off its
# edges, so its cells keep words whole: wrapping anywhere, they had broken "calibratio/n"
# at 400 px, and shrunk a label column to one letter beside long cells ("NOU/N" at 1200
# px). A label column breaks a word past 20em alone; numbers never break.
STYLE = """
body { font-family: sans-serif; margin: 2em auto; padding: 0 1em; max-width: 70em; color: #222; }
.scroll { overflow-x: auto; margin: 0.5em 0 1.5em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
h1, h2, h3, p, li, figcaption { overflow-wrap: anywhere; }
td:not(.num), tbody th { overflow-wrap: break-word; }
#per-label-table td:first-child { max-width: 20em; }
td.words { overflow-wrap: normal; }
thead th { background: #f0f0f0; }
figure { display: inline-block; margin: 0 1em 1em 0; vertical-align: top; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; max-width: 40em; }
.side { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
.side > * { min-width: 0; }
"""


class Estimator(NamedTuple):
    """The settings behind an interval, for the figures: its level, kind and estimate (and
    the error's norm)."""

    confidence: float
    interval: str
    debias: bool
    norm: str = "l2"


class Measures(NamedTuple):
    """One model's numbers beside CalibErr: the Brier split, the smooth ECE, Spiegelhalter.

    ``smooth_ece``, ``spiegelhalter_z`` and ``spiegelhalter_p`` are None when not computed;
    ``spiegelhalter_groups`` is the number of clusters of the test's cluster-robust
    variance (None: the independent variance) and ``spiegelhalter_cluster`` what they are
    (``"groups"``, or ``"items"``: a multiclass file's one-vs-rest pairs grouped by item,
    where no groups were given); ``spiegelhalter_note`` says why the test was not
    computed (hard 0/1 predictions, ``mode="classwise"``), as the command's text does;
    ``brier_pairs`` says which pairs the Brier split is of where they are not those of
    CalibErr (``mode="classwise"``: :data:`BRIER_OF_CLASSWISE`); ``smooth_bandwidth`` is
    the σ the smooth ECE was given (None: its own σ*), which its row names.
    """

    brier: BrierDecomposition
    smooth_ece: float | None = None
    spiegelhalter_z: float | None = None
    spiegelhalter_p: float | None = None
    spiegelhalter_groups: int | None = None
    spiegelhalter_note: str | None = None
    brier_pairs: str | None = None
    spiegelhalter_cluster: str | None = None
    smooth_bandwidth: float | None = None


def smooth_ece_source(bandwidth: float | str | None) -> str:
    """Whose smooth ECE, and at which σ where one was given (None or ``"auto"``: its own
    σ*), as the text and the page name it.

    Example:
        >>> smooth_ece_source(0.05), smooth_ece_source("auto")
        ('Błasiok & Nakkiran; σ = 0.05', 'Błasiok & Nakkiran')
    """
    if bandwidth is None or bandwidth == "auto":
        return "Błasiok & Nakkiran"
    return f"Błasiok & Nakkiran; σ = {bandwidth:g}"


#: The pairs of ``--mode classwise``'s Brier split: one split of every class's pairs (its
#: calibration term had sat under the classwise bins' header, and is no CalibErr²).
BRIER_OF_CLASSWISE = "pooled one-vs-rest pairs, in bins of their own"


def brier_pairs(mode: str) -> str | None:
    """Which pairs the Brier split of ``mode`` is of, where they are not CalibErr's."""
    return BRIER_OF_CLASSWISE if mode == "classwise" else None


def _text(value: Any, one_line: bool = False) -> str:
    """``value`` as the page's text: shown (:func:`visible_controls`, ``one_line`` as
    its), then HTML-escaped."""
    return html.escape(visible_controls(str(value), one_line), quote=True)


def _typed_text(value: Any) -> str:
    """The command as the page's text, to be pasted: its controls shown, its backslashes
    as typed (:func:`escaped_controls`), then HTML-escaped. Doubled, as every other text's
    are where they read as an escape (a file's name too, as the figures show it), they had
    named another file (``'run\\temp.npz'``)."""
    return html.escape(escaped_controls(str(value)), quote=True)


# Brier terms (all at most 1) nearer 0 than this are float round-off of a zero term.
ROUND_OFF = 1e-12


def plus_term(value: Any, digits: int = 4) -> str:
    """A term of a sum after the first: ``+ 0.0134``, or ``− 0.0001`` for a negative one
    (the within-bin term can be; "+ -0.0001" read badly), ``− 0.0000`` for a tiny negative
    one too: its sign is the term's, which "+ 0.0000" had hidden beside a "− 0.0001". A
    term within ``ROUND_OFF`` of 0 is 0: the within-bin term is a difference of Brier-sized
    numbers (at most 1), so −1e-16 there is float round-off, not a negative term. The
    command's text and the page write the Brier split's terms with it.

    Example:
        >>> plus_term(0.0134), plus_term(-1e-4), plus_term(-1e-6), plus_term(0.0)
        ('+ 0.0134', '− 0.0001', '− 0.0000', '+ 0.0000')
        >>> plus_term(-1.1e-16)
        '+ 0.0000'
    """
    value = float(value)
    text = f"{0.0 if abs(value) < ROUND_OFF else value:.{digits}f}"
    return f"− {text[1:]}" if text.startswith("-") else f"+ {text}"


def fixed(value: Any, digits: int = 4, sign: str = "") -> str:
    """A number with ``digits`` decimals, never ``-0.0000`` (a tiny negative rounds to 0);
    ``sign="+"`` writes a sign on every number (a difference's ``+0.0123``), and
    ``+0.0000`` for a tiny negative.

    Example:
        >>> fixed(-1.3e-5), fixed(-0.25, 2), fixed(-1.3e-5, sign="+"), fixed(0.0123, sign="+")
        ('0.0000', '-0.25', '+0.0000', '+0.0123')
    """
    text = f"{float(value):{sign}.{digits}f}"
    if text.startswith("-") and not text.strip("-0."):
        return sign + text[1:]
    return text


def _interval(result: Any, units: str, digits: int = 4, sign: str = "") -> str:
    """``[lower, upper]``, or where there is none (NaN ends: too few ``units`` to
    resample) :func:`untested_phrase`'s, not ``[nan, nan]``."""
    missing = no_interval(result.lower, result.upper, units)
    if missing:
        return missing
    return f"[{fixed(result.lower, digits, sign)}, {fixed(result.upper, digits, sign)}]"


def no_interval(lower: Any, upper: Any, units: str, resampled: bool = True) -> str | None:
    """What the page and the commands' text write in place of an interval whose ends are
    NaN (too few ``units`` to resample: :func:`untested_phrase`; not ``resampled`` for
    Algorithm 2, whose draws are normal values per bin), or None where it has ends.

    Example:
        >>> no_interval(float("nan"), float("nan"), "pairs"), no_interval(0.01, 0.02, "pairs")
        ('no interval (fewer than 10 resampled pairs)', None)
        >>> no_interval(float("nan"), float("nan"), "pairs", resampled=False)
        'no interval (fewer than 10 pairs)'
    """
    if math.isnan(float(lower)) or math.isnan(float(upper)):
        return untested_phrase(units, "interval", resampled)
    return None


def interval_note(summary: Mapping[str, Any]) -> str | None:
    """Why ``evaluate``'s CalibErr lies outside its own interval, for the command's text,
    its JSON (``interval_note``) and the page; None where it lies inside (as printed, to 4
    decimals) or there is no interval. An interval that is not built around the estimate
    can miss it, and a reader had been left to wonder which number was wrong.

    ``summary``: the command's ``calib_err``, ``lower``, ``upper``, ``interval`` and
    ``debias`` (a plug-in interval of the bootstrap misses its estimate only in the
    percentile form: the normal form is centred on it).

    Example:
        >>> s = {"calib_err": 0.029, "lower": 0.0399, "upper": 0.0555, "interval": "paper",
        ...      "debias": True}
        >>> interval_note(s)[:70]
        "CalibErr lies below its interval: Algorithm 2's draws add each bin's n"
        >>> interval_note(s | {"lower": 0.02}) is None
        True
    """
    side = _side(summary["calib_err"], summary["lower"], summary["upper"])
    if side is None:
        return None
    return f"CalibErr lies {side} its interval: {_why_outside(summary)}"


def _why_outside(summary: Mapping[str, Any]) -> str:
    """Why an interval of ``summary``'s kind may miss its estimate (docs/coverage.md)."""
    redrawn = "Algorithm 2's draws add each bin's noise again, so they"
    if summary["interval"] == "paper" and summary["debias"]:
        return (
            f"{redrawn} centre near the plug-in estimate (--no-debias), not on the debiased "
            "one (docs/coverage.md, finding 1); --paper gives the paper's method, the default "
            "--interval pairs an interval of this estimate"
        )
    if summary["interval"] == "paper":
        return (
            f"{redrawn} lie above the plug-in estimate (docs/coverage.md, finding 1); the "
            "default (debiased, --interval pairs) gives an interval of the true error"
        )
    if not summary["debias"]:
        return (
            "the percentile form takes the plug-in's draws as they are, which carry its upward "
            "bias twice (README, 'Trustworthy intervals'); --method normal centres the interval "
            "on the estimate"
        )
    return (
        "the recentred interval is for the true error (its draws correct the bias the "
        "bootstrap finds in the estimate), while CalibErr is the root of the debiased square "
        "clipped at 0 (docs/coverage.md, 'Set-up')"
    )


def difference_note(summary: Mapping[str, Any]) -> str | None:
    """Why ``compare``'s a − b lies outside its paired interval (``difference_note`` of its
    text, JSON and page), or None where it lies inside (as printed) or there is none.

    The interval is bias-corrected: it is for the difference of the true errors, drawn
    from the unbiased difference of the debiased squares, while each reported error is the
    root of its model's debiased square clipped at 0 (of each class's, averaged, under
    ``--mode classwise``), which is biased near 0; where a model is nearly calibrated the
    two can part (:mod:`calib_metrics.functional.comparison`, "Bias-corrected, not centred
    on the estimate").

    Example:
        >>> s = {"difference": -0.009, "lower": -0.0315, "upper": -0.0095}
        >>> difference_note(s)[:49]
        'the difference lies above its paired interval: th'
    """
    side = _side(summary["difference"], summary["lower"], summary["upper"], sign="+")
    if side is None:
        return None
    return f"the difference lies {side} its paired interval: {paired_interval_why(classwise=True)}"


def paired_interval_why(many: bool = False, classwise: bool = False) -> str:
    """Why a difference can lie outside its paired interval (:func:`difference_note`), said
    of one interval or (``many``) of a table's; ``classwise``: of a comparison that may
    have been one under ``--mode classwise``.

    Example:
        >>> paired_interval_why()[:40], paired_interval_why(many=True)[:42]
        ('the interval is for the true difference,', 'the intervals are for the true differences')
    """
    interval, s = ("intervals are", "s") if many else ("interval is", "")
    per_class = " (per class with --mode classwise)" if classwise else ""
    return (
        f"the {interval} for the true difference{s}, drawn from the unbiased difference{s} "
        "of the squared errors, while each error shown is the root of its debiased square "
        f"clipped at 0{per_class}, biased near 0 (docs/coverage.md, 'The paired difference "
        "interval')"
    )


# Labels a note names before it says how many more there are.
NAMED_LABELS = 5


def labels_outside(per_label: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The labels whose ``difference`` lies outside their own ``lower``/``upper`` as printed
    (4 decimals), in the order given; a label without an interval (NaN ends) is not.

    Example:
        >>> rows = {"NN": {"difference": 0.0, "lower": -0.0023, "upper": -0.0011},
        ...         "VB": {"difference": 0.01, "lower": -0.01, "upper": 0.03}}
        >>> labels_outside(rows)
        ['NN']
    """
    return [
        str(name)
        for name, d in per_label.items()
        if _side(d["difference"], d["lower"], d["upper"], sign="+") is not None
    ]


def difference_order(differences: Mapping[str, Any]) -> list[str]:
    """Labels by the size of their a − b (``differences``: label -> a − b), largest first:
    the compare page's per-label chart and table, and the numbers that
    :func:`labels_outside_note` gives names alike once shortened, so that the note's "#1"
    is the chart's.

    Example:
        >>> difference_order({"NN": 0.01, "VB": -0.05, "JJ": 0.02})
        ['VB', 'JJ', 'NN']
    """
    return sorted(differences, key=lambda k: -abs(float(differences[k])))


def labels_outside_note(per_label: Mapping[str, Mapping[str, Any]]) -> str | None:
    """How many of the labels with an interval have their difference outside it
    (:func:`labels_outside`), the first :data:`NAMED_LABELS` named as written, but
    shortened as the per-label chart's ticks are (:func:`~calib_metrics.wording.short_names`
    with ``one_line=True``: a 300-character label had made a note of over 300), names alike
    numbered in the chart's order (:func:`difference_order`; in the labels' order, the
    note's "#1" had been the chart's "#2"), and why; None where none has: a per-label table
    had shown them without a word (nine in ``reproduce pos``'s run). The caller shows the
    note on one line (``visible_controls(note, one_line=True)``), which shows each name as
    the chart does (:func:`~calib_metrics.wording.one_line_names`): the rest of the note
    holds no control or backslash.

    Example:
        >>> rows = {"NN": {"difference": 0.0, "lower": -0.0023, "upper": -0.0011},
        ...         "VB": {"difference": 0.01, "lower": -0.01, "upper": 0.03}}
        >>> labels_outside_note(rows)[:67]
        "1 of 2 labels' difference lies outside its paired interval (NN): th"
        >>> labels_outside_note({"VB": rows["VB"]}) is None
        True
    """
    outside = labels_outside(per_label)
    if not outside:
        return None
    with_interval = sum(not no_interval(d["lower"], d["upper"], "") for d in per_label.values())
    names = [str(k) for k in difference_order({k: d["difference"] for k, d in per_label.items()})]
    shown = dict(zip(names, short_names(names, one_line=True), strict=True))
    named = ", ".join(shown[k] for k in outside[:NAMED_LABELS])
    if len(outside) > NAMED_LABELS:
        named += f" and {len(outside) - NAMED_LABELS} more"
    many = len(outside) > 1
    what = "differences lie outside their paired intervals"
    if not many:
        what = "difference lies outside its paired interval"
    return (
        f"{len(outside)} of {with_interval} labels' {what} ({named}): {paired_interval_why(many)}"
    )


def _side(estimate: Any, lower: Any, upper: Any, sign: str = "") -> str | None:
    """``"below"`` or ``"above"``: where ``estimate`` lies against [lower, upper] as they
    are printed (4 decimals, so a note never contradicts the numbers beside it); None
    inside, or without an interval (NaN ends).

    Example:
        >>> _side(0.029, 0.0399, 0.0555), _side(0.04, 0.04000001, 0.05), _side(1, 0.0, 0.5)
        ('below', None, 'above')
    """
    shown = [float(fixed(x, sign=sign)) for x in (estimate, lower, upper)]
    value, low, high = shown
    if math.isnan(low) or math.isnan(high):
        return None
    return "below" if value < low else "above" if value > high else None


def _has_interval(result: Any) -> bool:
    return no_interval(result.lower, result.upper, "pairs") is None


def resampled_units(interval: str | None) -> str:
    """What an interval of the library's ``interval=`` setting resamples: groups, or pairs
    (``"items"``: a multiclass file's items, whose one-vs-rest pairs are drawn together).

    Example:
        >>> resampled_units("groups"), resampled_units("pairs"), resampled_units("items")
        ('groups', 'pairs', 'items')
    """
    return interval if interval in ("groups", "items") else "pairs"


def _units(summary: Mapping[str, Any]) -> str:
    """What ``evaluate``'s interval resamples: groups, or pairs."""
    return resampled_units(summary["interval"])


def figure_svg(fig: Any, name: str) -> str:
    """A matplotlib figure as an inline ``<svg>`` element: text kept as text, no prolog.

    ``name`` prefixes the element ids (and the references to them) so that several
    figures on one page never share one: matplotlib numbers ``figure_1``, ``axes_1``, ...
    afresh in each figure, and salts only its hashed ids.

    Example:
        >>> from matplotlib.figure import Figure
        >>> fig = Figure(figsize=(2, 2))
        >>> _ = fig.add_subplot().set_xlabel("q")
        >>> svg = figure_svg(fig, "x")
        >>> svg.startswith("<svg") and ">q</text>" in svg
        True
        >>> 'id="x-figure_1"' in svg
        True
    """
    import warnings  # here: the page's functions take a ``warnings`` argument

    import matplotlib

    from calib_metrics.figure_programs import figure_write_failures

    buffer = io.StringIO()
    style = {"svg.fonttype": "none", "svg.hashsalt": f"calib-{name}"}
    # A program savefig runs (a LaTeX, with text.usetex) failing is an OSError, as a
    # file's writing is: the page's writer names its path.
    with matplotlib.rc_context(style), figure_write_failures(), warnings.catch_warnings():
        # Text kept as text is drawn by the browser, in fonts that have the characters
        # matplotlib's lack: its "Glyph ... missing" is not true of this figure (12 Chinese
        # labels had put 15 such warnings, "drawn as a box", on the page and stderr).
        warnings.filterwarnings("ignore", r"Glyph \d+ .*missing from", UserWarning)
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    return _prefix_ids(svg[svg.index("<svg") :].strip(), name)


def _prefix_ids(svg: str, prefix: str) -> str:
    """``svg`` with every element id, and every ``#id`` reference to one, prefixed; only
    inside tags, so that text drawn in the figure (a file or label name) is left alone."""
    ids = set(re.findall(r'<[^>]*\bid="([^"]+)"', svg))

    def reference(match: re.Match) -> str:
        target = match.group(2)
        return f"{match.group(1)}{prefix}-{target}" if target in ids else match.group(0)

    def in_tag(match: re.Match) -> str:
        tag = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', match.group(0))
        return re.sub(r"(url\(#|href=\"#)([^)\"]+)", reference, tag)

    return re.sub(r"<[^>]*>", in_tag, svg)


def _table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    table_id: str,
    numeric_from: int = 1,
    names_shown: bool = False,
) -> str:
    """A table of escaped cells; columns from ``numeric_from`` on are right-aligned numbers,
    kept on one line, but for words in their place ("no interval (…)"), which wrap between
    words. With ``names_shown`` the first column holds label names shown already
    (:func:`~calib_metrics.wording.one_line_names`), HTML-escaped alone."""
    head = "".join(f"<th>{_text(h)}</th>" for h in header)
    body = []
    for row in rows:
        texts = [
            html.escape(c, quote=True) if i == 0 and names_shown else _text(c)
            for i, c in enumerate(row)
        ]
        cells = "".join(
            f"<td{_cell_class(c) if i >= numeric_from else ''}>{text}</td>"
            for i, (c, text) in enumerate(zip(row, texts, strict=True))
        )
        body.append(f"<tr>{cells}</tr>")
    return _scrolling(
        f'<table id="{table_id}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _cell_class(cell: str) -> str:
    """The class of a cell of a numbers' column: ``num``, or ``words`` for a phrase standing
    in for a number, which on one line had widened a per-label table past 1200 px (a
    verdict's one letter stays ``num``, aligned with its column's "-").

    Example:
        >>> _cell_class("[+0.0452, +0.0713]"), _cell_class("b")
        (' class="num"', ' class="num"')
        >>> _cell_class("no interval (fewer than 10 resampled pairs)")
        ' class="words"'
    """
    return ' class="words"' if cell[:1].isalpha() and " " in cell else ' class="num"'


def _scrolling(table: str) -> str:
    """``table`` in a box of the page's width that scrolls it sideways where it is wider."""
    return f'<div class="scroll">{table}</div>'


def _key_table(rows: Sequence[tuple[str, str, str]], table_id: str) -> str:
    """A two-column table of (key, name, value) rows; ``data-key`` marks each row."""
    body = "".join(
        f'<tr data-key="{_text(k)}"><th>{_text(name)}</th><td>{_text(value)}</td></tr>'
        for k, name, value in rows
    )
    return _scrolling(f'<table id="{table_id}"><tbody>{body}</tbody></table>')


def bins_rows(bins: Bins) -> list[list[str]]:
    """One row per bin: index, q̂, p̂, q̂ − p̂, pairs (the bins table's cells).

    Example:
        >>> import torch
        >>> bins_rows(Bins(torch.tensor([0.25]), torch.tensor([0.5]), torch.tensor([8.0])))
        [['1', '0.2500', '0.5000', '-0.2500', '8']]
    """
    q, p, n = bins.pred_mean.tolist(), bins.freq.tolist(), bins.count.tolist()
    return [
        [str(i + 1), fixed(qi), fixed(pi), fixed(qi - pi), count_text(ni)]
        for i, (qi, pi, ni) in enumerate(zip(q, p, n, strict=True))
    ]


def _bins_section(
    bins: Bins, table_id: str, heading: str, classes: Sequence[int] | None = None
) -> str:
    """The bins table; with ``classes`` (each bin's class: a classwise run, whose classes
    are binned apart) a class column first."""
    header = ["bin", "q̂ (mean probability)", "p̂ (frequency)", "q̂ − p̂", "pairs"]
    rows = bins_rows(bins)
    if classes is not None:
        header = ["class", *header]
        rows = [[str(c), *row] for c, row in zip(classes, rows, strict=True)]
    # One box for the heading and its table: side by side (compare), they move together.
    table = _table(header, rows, table_id=table_id)
    return f'<div class="bins"><h3>{_text(heading)}</h3>{table}</div>'


def _model_bins(summary: Mapping[str, Any], result: Any, table_id: str, name: str = "") -> str:
    """One model's bins table (headed ``name``, or its bin count): the summary's ``per_bin``
    when it keeps each bin's class (a classwise run: the classes binned apart), else the
    result's bins."""
    per_bin = summary.get("per_bin") or []
    if per_bin and "class" in per_bin[0]:
        bins, classes = _class_bins(per_bin)
        count = (
            f"{counted(len(classes), 'bin')} of {counted(len(set(classes)), 'class', 'classes')}"
            ", each class binned apart"
        )
        return _bins_section(bins, table_id, f"{name}: {count}" if name else count, classes)
    return _bins_section(result.bins, table_id, name or counted(len(result.bins.count), "bin"))


def _class_bins(per_bin: Sequence[Mapping[str, Any]]) -> tuple[Bins, list[int]]:
    """A classwise summary's bins (each entry with its ``class``) and their classes."""
    pred_mean, freq, count = (
        torch.tensor([float(b[key]) for b in per_bin], dtype=torch.float64)
        for key in ("pred_mean", "freq", "count")
    )
    return Bins(pred_mean, freq, count), [int(b["class"]) for b in per_bin]


def _measure_rows(prefix: str, measures: Measures) -> list[tuple[str, str, str]]:
    b = measures.brier
    rows = [
        (f"{prefix}brier", "Brier score", fixed(b.brier)),
        (
            f"{prefix}brier_split",
            "Brier = calibration (plug-in) + refinement + within-bin"
            + (f" ({measures.brier_pairs})" if measures.brier_pairs else ""),
            f"{fixed(b.calibration)} {plus_term(b.refinement)} {plus_term(b.within_bin)}",
        ),
    ]
    if measures.smooth_ece is not None:
        rows.append(
            (
                f"{prefix}smooth_ece",
                f"smooth ECE ({smooth_ece_source(measures.smooth_bandwidth)})",
                fixed(measures.smooth_ece),
            )
        )
    if measures.spiegelhalter_z is not None:
        p = p_phrase(normal_p_text(measures.spiegelhalter_p))
        # Its variance named as the text names it, the independent one too.
        n_clusters, cluster = measures.spiegelhalter_groups, measures.spiegelhalter_cluster
        variance = spiegelhalter_variance(n_clusters, cluster)
        test = f"z = {fixed(measures.spiegelhalter_z, 3)}, two-sided {p} ({variance})"
        rows.append((f"{prefix}spiegelhalter", "Spiegelhalter test", test))
    elif measures.spiegelhalter_note:
        # The text output says why; the page had dropped the row without a word.
        note = not_computed(measures.spiegelhalter_note)
        rows.append((f"{prefix}spiegelhalter", "Spiegelhalter test", note))
    return rows


def spiegelhalter_variance(n_clusters: int | None, cluster: str | None = "groups") -> str:
    """The variance of Spiegelhalter's test as the text and the page name it: over the
    ``--groups`` or, for a multiclass file's one-vs-rest pairs, over its items (those had
    read "over 3000 groups" where no groups were given).

    Example:
        >>> spiegelhalter_variance(3000, "items"), spiegelhalter_variance(1, "groups")
        ('cluster-robust variance over 3000 items', 'cluster-robust variance over 1 group')
        >>> spiegelhalter_variance(None, None)
        'independent variance'
    """
    if n_clusters is None:
        return "independent variance"
    noun = "item" if cluster == "items" else "group"
    return f"cluster-robust variance over {counted(n_clusters, noun)}"


def not_computed(reason: str | None = None) -> str:
    """What the command's text and the page write for a measure not computed, and why.

    Example:
        >>> not_computed("every probability is 0 or 1"), not_computed()
        ('not computed (every probability is 0 or 1)', 'not computed')
    """
    return f"not computed ({reason})" if reason else "not computed"


def _settings_section(settings: Mapping[str, Any], command: str | None) -> str:
    rows = [(f"setting-{k}", k, "—" if v is None else v) for k, v in settings.items()]
    out = '<section id="settings"><h2>Settings used</h2>'
    if command:
        out += f"<p>Command: <code>{_typed_text(command)}</code></p>"
    return out + _key_table(rows, "settings-table") + "</section>"


def _figure(svg: str, caption: str, figure_id: str) -> str:
    return f'<figure id="{figure_id}">{svg}<figcaption>{_text(caption)}</figcaption></figure>'


def _page(title: str, sections: Sequence[str]) -> str:
    """The whole document; every text in it (tables and the figures' SVG alike) has its
    characters that HTML does not allow made visible: each text was shown by
    :func:`visible_controls` (:func:`_text`, the figures' ``literal``), and what any other
    holds is escaped here without doubling those texts' backslashes again."""
    from calib_metrics import __version__

    return escaped_controls(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{_text(title)}</h1>{''.join(sections)}"
        f"<footer><p>calib_metrics {_text(__version__)}</p></footer></body></html>\n"
    )


def _interval_kind(summary: Mapping[str, Any], drawn: bool) -> str:
    """The interval's level, kind, form and draws; none drawn when there were too few
    units to resample (the page had claimed the draws beside a NaN interval)."""
    from calib_metrics.plot import interval_label

    # The figures' name first: the page had called one interval "recentred bootstrap over
    # pairs" here and "debiased pair bootstrap" on its diagram.
    interval = summary["interval"]
    named = interval_label(summary["confidence"], interval, bool(summary["debias"]))
    how = _interval_how(summary)
    form = f", {summary['method']} form" if summary["method"] else ""
    if not drawn:
        return f"{named} ({how}{form}); none drawn (fewer than {MIN_UNITS} {_units(summary)})"
    return f"{named} ({how}{form}, {summary['samples']} draws)"


def _interval_how(summary: Mapping[str, Any]) -> str:
    """How ``summary``'s interval is drawn: a bootstrap is recentred on the debiased l2
    estimate only (README, "Trustworthy intervals"); the page had called a plug-in's
    (``--no-debias``, ``l1``, ``max``) recentred too, against its own note.

    Example:
        >>> s = {"interval": "pairs", "debias": True, "norm": "l2"}
        >>> _interval_how(s), _interval_how(s | {"debias": False, "norm": "max"})
        ('recentred bootstrap over pairs', 'bootstrap over pairs of the plug-in, not recentred')
        >>> _interval_how(s | {"interval": "paper"})
        'normal draws per bin'
    """
    interval = summary["interval"]
    how = INTERVAL_KINDS.get(interval, interval)
    if interval == "paper":
        return how
    if summary["debias"] and summary.get("norm", "l2") == "l2":
        return f"recentred {how}"
    return f"{how} of the plug-in, not recentred"


def _diagram(
    result: CalibrationResult,
    title: str,
    name: str,
    estimator: Estimator,
    smooth: Any = None,
    axis: SharedXAxis | None = None,
    index: int = 0,
) -> str:
    """A reliability diagram as inline SVG, its interval at the estimator's confidence
    (with the ``smooth`` curve and band of ``--plot-smooth``, if given), on the ``axis``
    it shares with the diagrams beside it (:func:`~calib_metrics.plot.shared_x_axis`), as
    its ``index``-th."""
    from calib_metrics.plot import reliability_diagram

    shared = {} if axis is None else {"xscale": axis.xscale, "logit_range": axis.logit_range}
    if axis is not None:
        title = axis.title(title, index)
    fig, _ = reliability_diagram(
        result, title=title, smooth=smooth, **estimator._asdict(), **shared
    )
    return figure_svg(fig, name)


def _per_label_chart(
    per_label: Mapping[str, CalibrationResult] | Mapping[str, ComparisonResult],
    order: list[str],
    estimator: Estimator,
) -> str:
    """Each label's error (one model) or both models' errors (a comparison), in ``order``."""
    from calib_metrics.plot import per_label_errors

    chart = {label: per_label[label] for label in order}
    names = (
        ("a", "b")
        if all(isinstance(r, ComparisonResult) for r in chart.values())
        else ("this model",)
    )
    fig, _ = per_label_errors(chart, names=names, sort=False, **estimator._asdict())
    return figure_svg(fig, "per-label")


def _pairs(result: CalibrationResult) -> str:
    return count_text(result.bins.count.sum())


def evaluate_page(
    summary: Mapping[str, Any],
    result: CalibrationResult,
    measures: Measures,
    *,
    per_label: Mapping[str, CalibrationResult] | None = None,
    settings: Mapping[str, Any] | None = None,
    command: str | None = None,
    class_panels: Any = None,
    warnings: Sequence[str] = (),
    smooth: Any = None,
) -> str:
    """The page of ``calib-metrics evaluate``: summary, diagram, per-label, bins, settings.

    ``summary`` is the command's summary (``file``, ``n``, ``binning``, ``bin_size``,
    ``norm``, ``debias``, ``interval``, ``confidence``, ``method``, ``samples``,
    ``groups``); ``per_label`` maps each label to its own result; ``class_panels`` (a
    figure of one reliability diagram per class, for ``mode="classwise"``:
    :func:`calib_metrics.plot_panels.reliability_panels`) replaces the one diagram,
    which would pool the classes' bins; ``warnings`` (the command's, one line each) follow
    the summary; ``smooth`` (:func:`~calib_metrics.functional.smooth_reliability_curve`)
    is drawn on the diagram.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import brier_decomposition, calibration_error_ci
        >>> q = torch.rand(400, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        >>> y = (q > 0.5).double()
        >>> r = calibration_error_ci(q, y, bin_size=100, n_samples=50, confidence=0.9)
        >>> s = {"file": "a.csv", "n": 400, "binning": "adaptive", "bin_size": 100,
        ...      "norm": "l2", "debias": True, "interval": "pairs", "confidence": 0.9,
        ...      "method": "normal", "samples": 50, "groups": None}
        >>> page = evaluate_page(s, r, Measures(brier_decomposition(q, y, bin_size=100)))
        >>> page.count("<svg"), page.count("<tr>")  # one diagram; 4 bins and a header row
        (1, 5)
        >>> evaluate_page({"file": "a.csv"}, r, Measures(brier_decomposition(q, y)))
        Traceback (most recent call last):
        ValueError: evaluate_page: the summary lacks n, binning, bin_size, ...
    """
    _require(summary, EVALUATE_KEYS, "evaluate_page")
    title = f"Calibration report: {summary['file']}"
    estimator = Estimator(
        summary["confidence"], summary["interval"], bool(summary["debias"]), summary["norm"]
    )
    debiased = ", debiased" if summary["debias"] else ""
    rows = [
        ("file", "file", summary["file"]),
        ("n", "N (pairs)", _n_text(summary)),
        (
            "estimator",
            "estimator",
            f"{_bin_rule(summary)}, {counted(len(result.bins.count), 'bin')}; "
            f"{summary['norm']}{debiased}{_mode(summary)}",
        ),
        ("calib_err", f"CalibErr ({summary['norm']}{debiased})", fixed(result.error)),
        (
            "interval",
            f"{level_text(summary['confidence'])} interval",
            _interval(result, _units(summary)),
        ),
        ("interval_kind", "interval kind", _interval_kind(summary, _has_interval(result))),
        *_note_row("interval_note", summary),
        *_measure_rows("", measures),
    ]
    sections = [
        '<section id="summary"><h2>Summary</h2>' + _key_table(rows, "summary-table") + "</section>",
        '<section id="diagrams"><h2>Reliability diagram</h2>'
        + (
            _class_figure(class_panels)
            if class_panels is not None
            else _figure(
                _diagram(result, str(summary["file"]), "reliability", estimator, smooth),
                "Each point is one bin: its mean predicted probability q̂ against the "
                "observed frequency p̂; the dashed diagonal is perfect calibration.",
                "reliability",
            )
        )
        + "</section>",
    ]
    if per_label:
        groups = {k: row["groups"] for k, row in summary.get("per_label", {}).items()
                  if "groups" in row}  # fmt: skip
        note = summary.get("per_label_note")
        # A class's or label's pairs may be drawn otherwise than the pooled ones (pairs, where
        # the pooled one-vs-rest pairs of a multiclass file are drawn by item).
        drawn = {kind.interval for r in per_label.values() if (kind := interval_kind(r))}
        label_interval = drawn.pop() if len(drawn) == 1 else estimator.interval
        labels_estimator = estimator._replace(interval=label_interval)
        units = resampled_units(label_interval)
        sections.append(_evaluate_labels(per_label, labels_estimator, units, groups, note))
    table = _model_bins(summary, result, "bins-table")
    sections.append('<section id="bins"><h2>Bins</h2>' + table + "</section>")
    sections.append(_settings_section(settings or {}, command))
    return _page(title, _with_warnings(sections, warnings))


def _with_warnings(sections: list[str], warnings: Sequence[str]) -> list[str]:
    """``sections`` with the warnings after the first (the summary), read once every
    figure is drawn: drawing says its own (a font without a label's glyphs)."""
    return [sections[0], *_warnings_section(warnings), *sections[1:]]


def _warnings_section(warnings: Sequence[str]) -> list[str]:
    """The command's warnings as a section of the page (none: no section).

    Example:
        >>> print(_warnings_section(["1 bin <b>"])[0])
        <section id="warnings"><h2>Warnings</h2><ul><li>1 bin &lt;b&gt;</li></ul></section>
    """
    if not warnings:
        return []
    items = "".join(f"<li>{_text(w)}</li>" for w in warnings)
    return [f'<section id="warnings"><h2>Warnings</h2><ul>{items}</ul></section>']


def _note_row(key: str, summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The summary row of the command's note ``key`` (:func:`interval_note`,
    :func:`difference_note`), where it has one."""
    note = summary.get(key)
    return [(key, "note", note)] if note else []


def _verdict_row(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The summary row of the command's verdict (:func:`verdict_text`), where it has one."""
    verdict = verdict_text(summary)
    return [("verdict", "verdict", verdict)] if verdict else []


def _n_text(summary: Mapping[str, Any]) -> str:
    """``4000``, or ``4000 in 200 groups`` when the summary's ``groups`` were resampled;
    items that are not the pairs binned say their pairs (:func:`pairs_note`, a
    comparison's) or the pairs their items (:func:`items_note`, evaluate's)."""
    groups = summary.get("groups")
    in_groups = f" in {counted(groups, 'group')}" if groups else ""
    return f"{summary['n']}{pairs_note(summary)}{items_note(summary)}{in_groups}"


def items_note(summary: Mapping[str, Any]) -> str:
    """What a multiclass file's N of pairs counts (it had read "N = 15000 pairs" of 3,000
    items of 5 classes, unexplained): nothing for binary pairs.

    Example:
        >>> items_note({"items": 3000, "classes": 5, "mode": "one_vs_rest", "n": 15000})
        ' (3000 items × 5 classes, one-vs-rest)'
        >>> items_note({"items": 1, "classes": 2, "mode": "one_vs_rest", "n": 2})
        ' (1 item × 2 classes, one-vs-rest)'
        >>> items_note({"items": 3000, "classes": 5, "mode": "top_label", "n": 3000})
        ' (one top-label pair per item, of 5 classes)'
        >>> items_note({"items": None, "classes": None, "mode": "one_vs_rest", "n": 9})
        ''
    """
    items, classes = summary.get("items"), summary.get("classes")
    if items is None:
        return ""
    mode = summary.get("mode", "one_vs_rest")
    if mode == "top_label":
        return f" (one top-label pair per item, of {classes} classes)"
    kind = "one-vs-rest" if mode == "one_vs_rest" else "each class's, binned apart"
    return f" ({counted(items, 'item')} × {classes} classes, {kind})"


def pairs_note(summary: Mapping[str, Any]) -> str:
    """`` (2400 one-vs-rest pairs, the N of ⌈√N⌉)`` where a comparison's items are not the
    pairs its bins count (C per item, one-vs-rest), else nothing: a page of 600 items had
    shown bins of 2,400 pairs, and its ⌈√N⌉ could not be told from the items'.

    Classwise, each class's N items are binned apart, and N is what ⌈√N⌉ counts.

    Example:
        >>> pairs_note({"n": 600, "pairs": 2400}), pairs_note({"n": 600, "pairs": 600})
        (' (2400 one-vs-rest pairs, the N of ⌈√N⌉)', '')
        >>> pairs_note({"n": 600, "pairs": 2400, "mode": "classwise"})
        " (2400 one-vs-rest pairs, each class's 600 binned apart)"
        >>> pairs_note({"n": 600, "pairs": 2400, "bin_size": 50})
        ' (2400 one-vs-rest pairs, binned together)'
    """
    pairs = summary.get("pairs")
    if pairs is None or pairs == summary["n"]:
        return ""
    if summary.get("mode") == "classwise":  # each class's N items are binned apart
        return f" ({counted(pairs, 'one-vs-rest pair')}, each class's {summary['n']} binned apart)"
    counted_pairs = counted(pairs, "one-vs-rest pair")
    if summary.get("binning", "adaptive") == "uniform" or summary.get("bin_size", "auto") != "auto":
        return f" ({counted_pairs}, binned together)"
    return f" ({counted_pairs}, the N of ⌈√N⌉)"


def _class_figure(panels: Any) -> str:
    """The per-class reliability diagrams of a classwise run, as one figure."""
    return _figure(
        figure_svg(panels, "reliability"),
        "One diagram per class (its one-vs-rest pairs, binned on their own): the classwise "
        "error averages the classes' errors, so their bins are never pooled. Each point is "
        "one bin: q̂ against p̂; the dashed diagonal is perfect calibration.",
        "reliability",
    )


def _mode(summary: Mapping[str, Any]) -> str:
    """``; top_label pairs`` for a multiclass mode other than the default, else nothing."""
    mode = summary.get("mode", "one_vs_rest")
    return "" if mode == "one_vs_rest" else f"; {mode} pairs"


def _require(summary: Mapping[str, Any], keys: tuple[str, ...], who: str) -> None:
    missing = [k for k in keys if k not in summary]
    if missing:
        raise ValueError(f"{who}: the summary lacks {', '.join(missing)}")


def _compare_estimator(summary: Mapping[str, Any]) -> str:
    """A comparison's estimator, from the summary's ``binning``, ``bin_size``, ``n_bins``,
    ``norm`` and ``debias`` where it gives them; the command's defaults otherwise (it
    always uses them: adaptive bins of ⌈√N⌉, l2, debiased). Every comparison had been
    described so, an l1 plug-in one of bins of 50 too.

    Example:
        >>> _compare_estimator({"n": 400})
        'adaptive bins of ⌈√N⌉, l2, debiased'
        >>> _compare_estimator({"n": 400, "bin_size": 50, "norm": "l1", "debias": False})
        'adaptive bins of β = 50, l1'
    """
    rule = {"binning": "adaptive", "bin_size": "auto", **summary}
    if rule["binning"] == "adaptive" and rule["bin_size"] == "auto":
        bins = "adaptive bins of ⌈√N⌉"  # N: the pairs, which a multiclass file's items are not
    else:
        bins = _bin_rule(rule)
    norm = summary.get("norm", "l2")
    debiased = ", debiased" if summary.get("debias", True) and norm == "l2" else ""
    return f"{bins}, {norm}{debiased}{_mode(summary)}"


def _bin_rule(summary: Mapping[str, Any]) -> str:
    """``adaptive bins of β = 71 (auto: ⌈√N⌉)``, under ``mode="classwise"`` each class's
    own ⌈√N⌉ (it had read "adaptive bins of β = auto"), or the uniform rule."""
    if summary["binning"] == "uniform":
        return "equal-width bins (empty ones dropped)"
    size = summary["bin_size"]
    if size != "auto":
        return f"adaptive bins of β = {size}"
    if summary.get("mode", "one_vs_rest") == "classwise":
        return "adaptive bins of β = ⌈√N⌉ per class (auto)"
    return f"adaptive bins of β = {auto_bin_size(int(summary['n']))} (auto: ⌈√N⌉)"


def _evaluate_labels(
    per_label: Mapping[str, CalibrationResult],
    estimator: Estimator,
    units: str,
    groups: Mapping[str, int],
    note: str | None = None,
) -> str:
    """The per-label section: chart, and each label's pairs (and ``groups``, where the
    interval resamples them: the compare page's rule), error and interval; ``note`` says
    what the rows are where the mode's pairs are others (the compare page's note)."""
    order = sorted(per_label, key=lambda k: -float(per_label[k].error))
    chart = _per_label_chart(per_label, order, estimator)
    rows = [
        [shown, _pairs(r), fixed(r.error), _interval(r, units)]
        for shown, r in zip(one_line_names(order), (per_label[k] for k in order), strict=True)
    ]
    header = ["label", "pairs", "CalibErr", "interval"]
    if groups:
        header.insert(2, "groups")
        for k, row in zip(order, rows, strict=True):
            row.insert(2, count_text(groups[k]) if k in groups else "—")
    table = _table(header, rows, table_id="per-label-table", names_shown=True)
    return (
        f'<section id="per-label"><h2>Per label ({counted(len(order), "label")})</h2>'
        + (f"<p>Note: the rows are {_text(note, one_line=True)}.</p>" if note else "")
        + _figure(
            chart,
            "Each label's pairs binned and measured on their own, with the "
            "interval its legend names; sorted by error.",
            "per-label-chart",
        )
        + table
        + "</section>"
    )


def compare_page(
    summary: Mapping[str, Any],
    comparison: ComparisonResult,
    measures: tuple[Measures, Measures],
    *,
    names: tuple[str, str] = ("a", "b"),
    per_label: Mapping[str, ComparisonResult] | None = None,
    settings: Mapping[str, Any] | None = None,
    command: str | None = None,
    class_panels: Any = None,
    warnings: Sequence[str] = (),
    smooth: tuple[Any, Any] | None = None,
) -> str:
    """The page of ``calib-metrics compare``: both models, the paired difference, figures.

    ``summary`` is the command's summary (``n``, ``resampled``, ``confidence``,
    ``samples``; and the estimator's ``binning``, ``bin_size``, ``n_bins``, ``norm`` and
    ``debias`` where they are not the command's defaults, which the page names otherwise);
    ``names`` are the two models' names (their files); ``per_label`` maps
    each label to the paired comparison on its items; ``class_panels`` (a figure of one
    reliability diagram per class, both models in each, for ``mode="classwise"``)
    replaces the two diagrams, which would pool the classes' bins; ``warnings`` (the
    command's, one line each) follow the summary; ``smooth``, both models' smooth curves,
    are drawn on their diagrams.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import brier_decomposition, compare_calibration
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(400, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> c = compare_calibration(q.sqrt(), q, y, n_samples=50, generator=g)
        >>> m = Measures(brier_decomposition(q, y))
        >>> s = {"n": 400, "resampled": "pairs", "confidence": 0.95, "samples": 50}
        >>> page = compare_page(s, c, (m, m), names=("sqrt.csv", "q.csv"))
        >>> page.count("<svg"), page.count('id="bins-')
        (2, 2)
    """
    _require(summary, COMPARE_KEYS, "compare_page")
    a, b = names
    level = level_text(summary["confidence"])
    units = summary["resampled"]
    drawn = (
        f"{summary['samples']} draws, {_paired_forms(summary)}"
        if _has_interval(comparison)
        else f"none drawn (fewer than {MIN_UNITS} {units})"
    )
    setup = [
        ("n", "N (items)", _n_text(summary)),
        ("estimator", "estimator", _compare_estimator(summary)),
        (
            "interval_kind",
            "interval kind",
            f"{level} paired bootstrap over {units}, {drawn}",
        ),
        ("difference", "a − b", fixed(comparison.difference, sign="+")),
        (
            "difference_interval",
            f"a − b, paired {level} interval",
            _interval(comparison, units, sign="+"),
        ),
        *_note_row("difference_note", summary),
        (
            "p_value",
            "p-value of no difference (two-sided)",
            _p_value(comparison, summary["samples"], units),
        ),
        *_verdict_row(summary),
    ]
    models = _models_table((a, b), (comparison.a, comparison.b), measures, (level, units))
    norm = summary.get("norm", "l2")
    debias = bool(summary.get("debias", True)) and norm == "l2"
    estimator = Estimator(summary["confidence"], summary["resampled"], debias, norm)
    figures = (
        _class_figure(class_panels)
        if class_panels is not None
        else _model_diagrams(comparison, names, estimator, smooth)
    )
    sections = [
        '<section id="summary"><h2>Summary</h2>'
        + _key_table(setup, "summary-table")
        + models
        + "</section>",
        f'<section id="diagrams"><h2>Reliability diagrams</h2>{figures}</section>',
    ]
    if per_label:
        sections.append(_compare_labels(per_label, summary, estimator))
    tables = "".join(
        _model_bins(summary.get(key, {}), r, f"bins-{key}", f"model {key}: {name}")
        for key, name, r in (("a", a, comparison.a), ("b", b, comparison.b))
    )
    sections.append(f'<section id="bins"><h2>Bins</h2><div class="side">{tables}</div></section>')
    sections.append(_settings_section(settings or {}, command))
    return _page(f"Calibration comparison: {a} vs {b}", _with_warnings(sections, warnings))


def _model_diagrams(
    comparison: ComparisonResult,
    names: tuple[str, str],
    estimator: Estimator,
    smooth: tuple[Any, Any] | None,
) -> str:
    """Both models' reliability diagrams, side by side on one x axis: a alone had gone
    logit (its scores piled at the ends) beside a linear b, which then read unlike."""
    from calib_metrics.plot import shared_x_axis

    axis = shared_x_axis([comparison.a, comparison.b])
    models = zip("ab", names, (comparison.a, comparison.b), smooth or (None, None), strict=True)
    return "".join(
        _figure(_diagram(r, model_title(key, name, FIGURE_NAME_CHARS), f"reliability-{key}",
                         estimator, curve, axis, index),
                f"model {model_title(key, name)}", f"reliability-{key}")
        for index, (key, name, r, curve) in enumerate(models)
    )  # fmt: skip


def _paired_forms(summary: Mapping[str, Any]) -> str:
    """The form of a comparison's intervals, as the command's text names it ("percentile
    intervals"; the page had left it out); a plug-in's models have normal ones
    (:func:`~calib_metrics.functional.compare_calibration`).

    Example:
        >>> _paired_forms({}), _paired_forms({"norm": "l1"})[:30]
        ('percentile intervals', "a − b's percentile interval, e")
    """
    if summary.get("debias", True) and summary.get("norm", "l2") == "l2":
        return "percentile intervals"
    return "a − b's percentile interval, each model's normal one"


# A figure's model name is cut to this many characters: two panel titles (or a legend's
# two entries) side by side had run off a 9.4-inch figure and over each other.
FIGURE_NAME_CHARS = 44


def model_title(key: str, name: str, room: int | None = None) -> str:
    """How a comparison's figures name model ``key`` (``"a"`` or ``"b"``): the key and the
    model's whole name (its file as given, or, of one file, the file and the model's
    column: :func:`~calib_metrics.cli_compare.model_names`), on the page, in
    ``compare --plot`` and in its classwise panels alike. A file's base name alone had
    titled run1/preds.csv and run2/preds.csv both "preds.csv", and b's column
    ``probs/b`` "b]". With ``room``, a longer name keeps its first third and last two
    thirds around "…": the end of a path tells runs apart.

    Example:
        >>> model_title("b", "run2/preds.csv"), model_title("b", "preds.csv [probs/b]")
        ('b: run2/preds.csv', 'b: preds.csv [probs/b]')
        >>> model_title("a", "/tmp/pytest-of-root/pytest-12/test_names0/run1/preds.csv", 30)
        'a: /tmp/pyte…ames0/run1/preds.csv'
    """
    return f"{key}: {name if room is None else cut_middle(name, room, keep_end=True)}"


def _p_value(comparison: ComparisonResult, samples: int, units: str) -> str:
    """The p-value as text; NaN: none, from too few ``units`` (the interval's words)."""
    p = float(comparison.p_value)
    if p != p:
        return untested_phrase(units, "p-value")
    text = p_value_text(p, samples)
    return f"{text} (no paired draw reached 0)" if p == 0 else text


def p_value_text(p: float, samples: int) -> str:
    """A bootstrap p-value as text: 0 means that no one of the ``samples`` paired draws
    reached 0, i.e. p below 2/S, and is written so (a printed "p = 0" claims more than
    S draws can show).

    Example:
        >>> p_value_text(0.0, 2000), p_value_text(0.0312, 2000)
        ('< 0.001', '0.0312')
    """
    return f"< {2 / samples:.2g}" if p == 0 else f"{p:.3g}"


def p_value_or_none(p: float, samples: int) -> str | None:
    """:func:`p_value_text` for JSON: None where there is no p-value (NaN: too few units to
    resample), so that a reader of the raw ``p_value`` of 0 finds the bound beside it.

    Example:
        >>> p_value_or_none(0.0, 200), p_value_or_none(float("nan"), 200)
        ('< 0.01', None)
    """
    return None if p != p else p_value_text(p, samples)


def adjusted_p_texts(adjusted: Sequence[float]) -> list[str]:
    """Corrected p-values as text, in the order given; "—" for a label not tested (NaN).

    They are corrections of Monte Carlo p-values, never below 2/(S + 1)
    (:func:`~calib_metrics.functional.comparison_by_label.monte_carlo_p_values`), so
    unlike a raw p of 0 each is a number, not a bound.

    Example:
        >>> adjusted_p_texts([0.0029985, 0.5, 1.0, float("nan")])
        ['0.003', '0.5', '1', '—']
    """
    return ["—" if a != a else f"{a:.3g}" for a in (float(a) for a in adjusted)]


def normal_p_text(p: float) -> str:
    """An analytic (normal) p-value as text; one that underflows to 0 is below 1e-300.

    Example:
        >>> normal_p_text(0.0), normal_p_text(3.54e-28)
        ('< 1e-300', '3.54e-28')
    """
    return "< 1e-300" if p == 0 else f"{p:.3g}"


def p_value_phrase(p: float, samples: int) -> str:
    """``p = 0.0312`` or, when no draw reached 0, ``p < 0.001``.

    Example:
        >>> p_value_phrase(0.0, 2000), p_value_phrase(0.0312, 2000)
        ('p < 0.001', 'p = 0.0312')
    """
    return p_phrase(p_value_text(p, samples))


def better_model(p: float, side: int, confidence: float, samples: int) -> str:
    """The model a comparison calls better calibrated: ``"a"`` or ``"b"`` where the Monte
    Carlo p-value of its ``samples`` draws, (S·p + 2)/(S + 1), is at most 1 − confidence,
    by the side of 0 its draws lie on (``side``, −1: a − b below 0, a better), as the
    per-label table's ``better`` takes it; else ``"-"`` (NaN p: too few units to test).
    A raw p of 0 from S draws only bounds p below 2/S, so a few draws call nothing: 20
    draws of which none reached 0 are p ≤ 0.095, not a difference shown at 95%.

    Example:
        >>> better_model(0.0, 1, 0.95, 2000), better_model(0.0, 1, 0.95, 20)
        ('b', '-')
        >>> better_model(0.08, -1, 0.9, 2000), better_model(0.21, -1, 0.95, 2000)
        ('a', '-')
    """
    called = _monte_carlo_p(p, samples) <= (1 - confidence) * (1 + 1e-12)
    return {-1: "a", 1: "b"}.get(side, "-") if called else "-"


def _monte_carlo_p(p: float, samples: int) -> float:
    """The per-label correction's Monte Carlo p-value of one raw p (:func:`better_model`)."""
    return float(monte_carlo_p_values(torch.tensor(p, dtype=torch.float64), samples))


def verdict_text(summary: Mapping[str, Any]) -> str | None:
    """``compare``'s verdict, from its summary's ``better`` (:func:`better_model`), p-value,
    draws and confidence: "b is better calibrated (p < 0.001)", or "no difference shown at
    95% (p = 0.21)"; None where there is no p-value (too few units) or no ``better``. Where
    the raw p alone would decide otherwise than its Monte Carlo p does (few draws, or p at
    the level), the line gives the Monte Carlo p too, so that it never reads as its own
    contradiction ("p = 0.048" beside "no difference shown at 95%").

    Example:
        >>> s = {"better": "b", "p_value": 0.0, "samples": 2000, "confidence": 0.95}
        >>> verdict_text(s), verdict_text(s | {"better": "-", "p_value": 0.21})
        ('b is better calibrated (p < 0.001)', 'no difference shown at 95% (p = 0.21)')
        >>> verdict_text(s | {"better": "-", "p_value": 0.048, "samples": 500})
        'no difference shown at 95% (p = 0.048; Monte Carlo p = 0.0519 over 500 draws)'
    """
    p = summary.get("p_value", float("nan"))
    if "better" not in summary or p != p:
        return None
    samples, confidence = summary["samples"], summary["confidence"]
    phrase = p_value_phrase(p, samples)
    called = summary["better"] in ("a", "b")
    if called != (p <= round(1 - confidence, 12)):
        phrase += f"; Monte Carlo p = {_monte_carlo_p(p, samples):.3g} over {samples} draws"
    if called:
        return f"{summary['better']} is better calibrated ({phrase})"
    return f"no difference shown at {level_text(confidence)} ({phrase})"


def untested_phrase(units: str, what: str = "interval or p-value", resampled: bool = True) -> str:
    """What a result with too few resampling units (``pairs`` or ``groups``; too few
    ``units`` of a draw that resamples none, not ``resampled``) has in place of ``what``:
    a comparison's interval and p-value, one model's interval.

    Example:
        >>> untested_phrase("groups")
        'no interval or p-value (fewer than 10 resampled groups)'
        >>> untested_phrase("pairs", "interval")
        'no interval (fewer than 10 resampled pairs)'
    """
    return f"no {what} (fewer than {MIN_UNITS} {'resampled ' * resampled}{units})"


def p_phrase(text: str) -> str:
    """A p-value's text (a number, or a bound ``< x``) as ``p = …`` or ``p < …``.

    Example:
        >>> p_phrase("0.0312"), p_phrase("< 1e-300")
        ('p = 0.0312', 'p < 1e-300')
    """
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def _models_table(
    names: tuple[str, str],
    results: tuple[CalibrationResult, CalibrationResult],
    measures: tuple[Measures, Measures],
    interval: tuple[str, str],
) -> str:
    """Model a and b side by side: file, CalibErr, interval (``interval``: its level and
    the units resampled) and the other measures."""
    level, units = interval
    rows = [
        ("file", *names),
        ("CalibErr", *(fixed(r.error) for r in results)),
        (f"{level} interval", *(_interval(r, units) for r in results)),
    ]
    per_model = [{name: value for _, name, value in _measure_rows("", m)} for m in measures]
    # Either model's measures: a's alone had dropped b's test where a's was not computed.
    names = list(dict.fromkeys([*per_model[0], *per_model[1]]))
    rows += [(name, *(model.get(name, not_computed()) for model in per_model)) for name in names]
    return _table(["", "model a", "model b"], rows, table_id="models-table", numeric_from=3)


def _compare_labels(
    per_label: Mapping[str, ComparisonResult], summary: Mapping[str, Any], estimator: Estimator
) -> str:
    """The per-label section: chart, and each label's difference with its raw and
    corrected p-value and verdict (the summary's ``per_label`` and ``label_counts``)."""
    samples = summary["samples"]
    order = difference_order({k: c.difference for k, c in per_label.items()})
    chart = _per_label_chart(per_label, order, estimator)
    verdicts = summary.get("per_label", {})
    adjusted = _adjusted(verdicts, summary.get("label_counts"))
    shown = dict(zip(order, one_line_names(order), strict=True))
    rows = [
        [shown[k], _pairs(c.a), fixed(c.a.error), fixed(c.b.error), fixed(c.difference, sign="+"),
         _interval(c, summary["resampled"], sign="+"), _p_value(c, samples, summary["resampled"]),
         adjusted.get(k, "—"),
         verdicts.get(k, {}).get("better", "")]
        for k, c in ((k, per_label[k]) for k in order)
    ]  # fmt: skip
    header = ["label", "pairs", "a: CalibErr", "b: CalibErr", "a − b", "interval", "p",
              "adjusted p", "better"]  # fmt: skip
    if summary["resampled"] != "pairs":
        # The units a label is called on: 450 pairs "too small to call" read as a
        # contradiction where its 45 groups (or 150 items of 3 classes) were not shown.
        header.insert(2, summary["resampled"])
        for k, row in zip(order, rows, strict=True):
            row.insert(2, str(verdicts.get(k, {}).get("units", "—")))
    note = summary.get("per_label_note")
    return (
        f'<section id="per-label"><h2>Per label ({counted(len(order), "label")})</h2>'
        + _label_counts(summary.get("label_counts"), len(order))
        + (f"<p>Note: {_text(note, one_line=True)}.</p>" if note else "")
        + _figure(
            chart,
            "Each label's items compared on their own (paired); sorted by the size of the "
            "difference. Left: each model's CalibErr with its own interval (--json: per_label's "
            "a_lower, a_upper, b_lower, b_upper); right: a − b with its paired interval, the "
            "table's." + _edge_note(per_label, order, shown, summary),
            "per-label-chart",
        )
        + _table(header, rows, table_id="per-label-table", names_shown=True)
        + "</section>"
    )


def _edge_note(
    per_label: Mapping[str, ComparisonResult],
    order: list[str],
    shown: Mapping[str, str],
    summary: Mapping[str, Any],
) -> str:
    """Where a label's interval and its p-value disagree on 0 (the chart marks the first,
    the table shows the second): said, with why, instead of left as a contradiction. The
    labels are named as the table ``shown`` names them (a raw line feed had read as a
    space, and a typed ``a\nb`` as the other label).

    Both come from the same draws, but p is the doubled share of draws on the rarer side of
    0 and the ends are interpolated quantiles: with 100 draws at 95%, 3 draws at or above 0
    give p = 0.06 while the upper end, between the 97th and 98th, is still below 0. The
    default 2,000 draws rarely meet such an edge.
    """
    # 1 − 0.9 is 0.09999999999999998 in floating point: a p of 0.1 is at the level.
    level = round(1 - summary["confidence"], 12)
    edge = []
    for k in order:
        c = per_label[k]
        lower, upper, p = float(c.lower), float(c.upper), float(c.p_value)
        if math.isnan(lower) or math.isnan(upper) or math.isnan(p):
            continue
        if (lower > 0 or upper < 0) != (p <= level):
            edge.append(shown[k])
    if not edge:
        return ""
    return (
        f" At the edge: {', '.join(edge)}, whose interval excludes 0 while its uncorrected p "
        f"is above {level:g}, or the reverse: both come from {summary['samples']} draws, p "
        "as the doubled share of draws on the rarer side of 0, the ends as interpolated "
        "quantiles; more draws (--samples) settle it."
    )


def _adjusted(verdicts: Mapping[str, Any], counts: Mapping[str, Any] | None) -> dict[str, str]:
    """Each label's corrected p-value as text ("—": not tested), by label."""
    if not verdicts or not counts:
        return {}
    texts = adjusted_p_texts([r["adjusted_p_value"] for r in verdicts.values()])
    return dict(zip(verdicts, texts, strict=True))


def _label_counts(counts: Mapping[str, Any] | None, n_labels: int) -> str:
    """The verdict counts after the correction, as the command prints them."""
    if not counts:
        return ""
    return f"<p>{html.escape(label_counts_sentence(counts, n_labels))}.</p>"


def label_counts_sentence(counts: Mapping[str, Any], n_labels: int) -> str:
    """ "a better on A, b better on B, not distinguishable on N of L labels (…)".

    Example:
        >>> counts = {"a_better": 0, "b_better": 2, "not_distinguishable": 1,
        ...           "correction": "holm", "alpha": 0.05}
        >>> label_counts_sentence(counts, 3)[:66]
        'a better on 0, b better on 2, not distinguishable on 1 of 3 labels'
    """
    name = {"holm": "Holm (family-wise error)", "bh": "Benjamini-Hochberg (false discovery)"}
    k = counts.get("not_tested", 0)
    fewest = f": fewer than {counts['min_units']} {counts['unit']}" if "min_units" in counts else ""
    untested = f"({k} too small to call{fewest}) " if k else ""
    return (
        f"a better on {counts['a_better']}, b better on {counts['b_better']}, not "
        f"distinguishable on {counts['not_distinguishable']} of {n_labels} labels "
        f"{untested}({name[counts['correction']]} at alpha = {counts['alpha']:g})"
    )
