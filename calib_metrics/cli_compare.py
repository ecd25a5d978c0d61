"""``calib-metrics compare a.csv b.csv``: two models on the same items, a paired interval.

Reads model a's and model b's (probability, label[, group]) files with the CLI's reader —
or two probability columns of one file (``compare preds.csv --probs q_a --probs-b q_b``) —
pairs their rows by position (or, with ``--id COLUMN``, by that item-id column of both
files: :func:`calib_metrics.predictions.paired_by_ids`), checks that
both hold the same labels for the items paired (and, with ``--groups``, the same grouping
of the rows when both files have a group column), and prints both calibration
errors, the difference a − b with its paired interval and the two-sided p-value of "no
difference" (:func:`calib_metrics.functional.compare_calibration`), and the verdict: the
model better calibrated where the Monte Carlo p, (S·p + 2)/(S + 1), is ≤ 1 − confidence,
else "no difference shown". With ``--label COL``
(or ``--labels``: a column naming each pair's label, the tag of a one-vs-rest query, say;
read from a's file, or b's when only b's has it, and checked to agree when both do) it
also prints one row per label — the label's paired difference, p-value
and corrected p-value — and the counts "a better / b better / not distinguishable" after
Holm's (or, ``--correction bh``, Benjamini–Hochberg's) correction
(:func:`calib_metrics.functional.compare_calibration_by_label`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calib_metrics.cli import (
    add_estimator_options,
    add_ignore_index,
    add_plot_smooth,
    announce_long_run,
    binning_of,
    estimator_of,
    estimator_summary,
    mode_note,
    multiclass_input,
    output_path,
)

if TYPE_CHECKING:
    from torch import Tensor

DESCRIPTION = "compare two models' calibration on the same items, with a paired interval"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", type=Path, help="model a's predictions")
    p.add_argument(
        "b", type=Path, nargs="?",
        help="model b's predictions: the same items, in the same order (or paired by --id)",
    )  # fmt: skip
    p.add_argument("--probs", help="column of a's probabilities (default: by name)")
    p.add_argument("--probs-b", help="column of b's probabilities (default: --probs, or by name)")
    p.add_argument(
        "--target",
        help="column of labels: 0/1, or class ids beside C probabilities (default: by name)",
    )
    p.add_argument(
        "--groups", nargs="?", const="", default=None,
        help="resample whole groups (sentences, documents): the group-id column's name, or "
        "no value to find it by name; read from both files when both have it (they must "
        "group the rows alike, or the command stops at the first row where they do not), "
        "else from the one that has it",
    )  # fmt: skip
    p.add_argument(
        "--id", metavar="COLUMN",
        help="pair b's rows with a's by this item-id column of both files, in any order "
        "(without --id, row i of a is paired with row i of b)",
    )  # fmt: skip
    add_ignore_index(p)
    p.add_argument(
        "--samples", type=int, default=2000, help="paired bootstrap draws (default: 2000)"
    )
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default: 0.95)")
    p.add_argument(
        "--seed", type=int, default=0,
        help="seed of the paired draws and --plot-smooth's (default: 0)",
    )  # fmt: skip
    p.add_argument(
        "--mode", choices=["one_vs_rest", "top_label", "classwise"], default="one_vs_rest",
        help="multiclass files: pool one-vs-rest pairs, the top label's confidence, or "
        "average the classes' errors (both models resampled together) (default: one_vs_rest)",
    )  # fmt: skip
    add_estimator_options(p)
    p.add_argument(
        "--html", type=output_path,
        help="write a self-contained HTML report here (both models, the difference, diagrams, "
        "bins, settings; its folder must exist)",
    )  # fmt: skip
    p.add_argument(
        "--plot", type=output_path,
        help="write both models' reliability diagrams, side by side, to this PNG (its folder "
        "must exist); with --mode classwise, one diagram per class with both models in each "
        "(at most 12: the most frequent labels)",
    )  # fmt: skip
    add_plot_smooth(p)
    p.add_argument(
        "--label", "--labels", dest="label", help="column (of a's file, or b's) naming each "
        "item's label: adds a paired comparison per label, with corrected counts",
    )  # fmt: skip
    p.add_argument(
        "--correction", choices=("holm", "bh"),
        help="multiple-comparison correction of --label: holm (FWER) or bh (FDR) "
        "(default: holm)",
    )  # fmt: skip
    p.add_argument("--alpha", type=float, help="level of --label's correction (default: 0.05)")
    p.add_argument(
        "--min-units", type=int, default=None,
        help="labels with fewer pairs (or groups) are reported but not called: below 50 "
        "the correction's family-wise error was not held (default: 50)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def _read_b(args: argparse.Namespace, groups: str | None, taken: dict[str, str]):
    """Model b's file; without ``--probs-b`` it reads ``--probs``'s column, which a file
    of other names lacks: the message says so (it had named the column alone, and a
    user of ``--probs model_a`` for file a looked for the mistake in file a)."""
    from calib_metrics.predictions import read_table, shared

    try:
        # A column b's file leaves unclear is named by --probs-b: --probs names a's too.
        return read_table(
            args.b, args.probs_b or shared(args.probs), shared(args.target), groups,
            args.ignore_index, taken, options={"probabilities": "probs-b"},
        )  # fmt: skip
    except ValueError as err:
        if args.probs_b is None and args.probs is not None and f"{args.probs!r}" in str(err):
            raise ValueError(
                f"{err}; model b reads --probs's column ({args.probs}) unless --probs-b "
                "names its own"
            ) from None
        raise


def _read_both(args: argparse.Namespace):
    """Both models' predictions, b's rows paired with a's by their item ids
    (:func:`_id_columns`), else by position, checked to be on the same items; a multiclass
    file's C probabilities per label become [N, C] with class ids. The group ids
    (``--groups``) are read from both files when both have the column (they must group
    the rows alike), else from the one that has it; both results carry them. Also the
    id columns read (None: rows paired by position)."""
    from calib_metrics.predictions import paired_by_ids, read_table, shared

    columns = _group_columns(args)
    ids = _id_columns(args)
    # The --label column labels the items; it is neither model's probabilities nor the labels.
    taken = {args.label: "named by --label"} if args.label is not None else {}
    if args.b is None and args.probs_b:
        taken[args.probs_b] = "named by --probs-b"
    for column in ids or ():
        taken.setdefault(column, "the item ids (--id)")
    # --target names both files' label column: an unnamed array reads its column 1.
    target = args.target if args.b is None else shared(args.target)
    a = read_table(args.a, args.probs, target, columns[0], args.ignore_index, taken)
    if args.b is None:
        if not args.probs_b:
            raise ValueError("give model b's file, or --probs-b COLUMN for a second column")
        del taken[args.probs_b]
        b = read_table(args.a, args.probs_b, args.target, columns[0], args.ignore_index, taken)
    else:
        b = _read_b(args, columns[1], taken)
    if ids is not None:
        b = paired_by_ids(a, b, (args.a, args.b), ids)
    if a.target.shape != b.target.shape:
        raise _not_same_items(
            args, f"{a.target.numel()} labels in {args.a}, {b.target.numel()} here"
        )
    classes_a, classes_b = _classes(a.probs, a.target), _classes(b.probs, b.target)
    if classes_a != classes_b:
        raise ValueError(
            f"{args.b or args.a}: the two models must score the same classes ({args.a} gives "
            f"{_describe(classes_a)} per item, this file {_describe(classes_b)})"
        )
    row = _first_difference(a.target, b.target)
    if row is not None:
        from calib_metrics.predictions import row_positions

        files = [args.a, args.b or args.a]
        shown = f"{a.target[row].item():g} vs {b.target[row].item():g}"
        raise _not_same_items(
            args,
            f"the labels first differ at {row_positions(files, row, [a.kept, b.kept])}: {shown}",
            by_ids=ids is not None,
        )
    groups = _same_groups(args, a, b, columns, by_ids=ids is not None)
    probs_a, target = multiclass_input(a.probs, a.target, args.a, args.mode, a.kept)
    probs_b, _ = multiclass_input(b.probs, b.target, args.b or args.a, args.mode, b.kept)
    return (
        a._replace(probs=probs_a, target=target, groups=groups),
        b._replace(probs=probs_b, target=target, groups=groups),
        ids,
    )


def _id_columns(args: argparse.Namespace) -> tuple[str, str] | None:
    """The item-id columns of a's and b's file that pair their rows (``--id``'s, which
    both files must have), or None: the rows are paired by position. A column is never
    taken for ids unasked: an ``id`` column may number tokens, sentences or each file's
    own rows, which positional pairing reads as its users meant."""
    from calib_metrics.predictions import item_id_column

    if args.id is None:
        return None
    if args.b is None:
        raise ValueError(
            f"--id {args.id}: --id pairs the rows of two files by the column it names "
            "(compare a.csv b.csv --id COLUMN); the two columns of one file (--probs-b) "
            "are paired already"
        )
    a, b = (item_id_column(path, args.id) for path in (args.a, args.b))
    return a, b


def _group_columns(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The group column to read from a's file and from b's (None: none). Without
    ``--groups`` neither; a file without the column is not read for it, unless neither
    file has it (then a's read names the problem)."""
    from calib_metrics.predictions import group_column

    if args.groups is None:
        return None, None
    if args.b is None:
        return args.groups, None
    found = group_column(args.a, args.groups), group_column(args.b, args.groups)
    if found == (None, None):
        return args.groups, None
    return found


def _classes(probs: Tensor, target: Tensor) -> int:
    """The number of probabilities per label a file holds: 1 for a binary file's q, C for a
    multiclass file (read as C per label, flattened)."""
    return probs.numel() // target.numel() if target.numel() else 1


def _describe(classes: int) -> str:
    return "one probability (binary)" if classes == 1 else f"{classes} class probabilities"


def _not_same_items(args: argparse.Namespace, detail: str, by_ids: bool = False) -> ValueError:
    """The error for two files that do not hold the same items in the same order (or, rows
    paired by their ids, ``by_ids``, the same items)."""
    order = "" if by_ids else " in the same order"
    return ValueError(
        f"{args.b or args.a}: the two models must be scored on the same items{order} ({detail})"
    )


def _first_difference(x: Tensor, y: Tensor) -> int | None:
    """The first index where ``x`` and ``y`` (one value per data row) differ, or None."""
    differ = (x != y).nonzero()
    return int(differ[0, 0]) if differ.numel() else None


def _same_groups(args: argparse.Namespace, a, b, columns, by_ids: bool) -> Tensor | None:
    """The group ids of the comparison: a's or b's, or both files' when they group the
    rows alike (each row's group starts at the same row in both; the names of the ids
    may differ), else the error naming the first row where they do not (``by_ids``: the
    rows were paired by their item ids)."""
    if a.groups is None or b.groups is None or args.b is None:
        return b.groups if a.groups is None else a.groups
    first_a, first_b = _group_start(a.groups), _group_start(b.groups)
    row = _first_difference(first_a, first_b)
    if row is None:
        return a.groups
    from calib_metrics.predictions import file_row, group_id_texts, row_position, row_positions

    ids = [
        group_id_texts(path, column, kept)[row]
        for path, column, kept in ((args.a, columns[0], a.kept), (args.b, columns[1], b.kept))
    ]
    start, where = min(int(first_a[row]), int(first_b[row])), (args.a, args.b)
    with_start, its_rows = ((args.a, a.kept), (args.b, b.kept))[int(first_b[row]) == start]
    raise _not_same_items(
        args,
        f"the groups first differ at {row_positions(where, row, [a.kept, b.kept])} (group "
        f"{ids[0]!r} in {args.a}, {ids[1]!r} in {args.b}): it shares a group with "
        f"{row_position(with_start, file_row(its_rows, start))} in {with_start} only",
        by_ids,
    )


def _group_start(groups: Tensor) -> Tensor:
    """Each row's first row in its group: two files group the rows alike exactly when
    these agree, whatever the ids are called.

    Example:
        >>> import torch
        >>> _group_start(torch.tensor([2, 0, 2, 1, 0]))
        tensor([0, 1, 0, 3, 1])
    """
    import torch

    rows = torch.arange(groups.numel())
    first = torch.full((int(groups.max()) + 1,), groups.numel(), dtype=torch.long)
    return first.scatter_reduce(0, groups, rows, "amin")[groups]


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from calib_metrics import cli_report
    from calib_metrics.cli import (
        check_draw_options,
        check_plot_smooth,
        estimate_bins,
        per_bin_rows,
        settle_estimator,
        warn_if_few_bins,
    )
    from calib_metrics.functional.comparison import comparison_units, paired_comparison
    from calib_metrics.functional.comparison_by_label import SMALL_LABEL_UNITS
    from calib_metrics.functional.intervals import MIN_UNITS
    from calib_metrics.predictions import all_or_none, check_output_paths, text_report_stream
    from calib_metrics.report import (
        better_model,
        difference_note,
        labels_outside_note,
        p_value_or_none,
    )

    settle_estimator(args)
    check_plot_smooth(args)
    outputs = {"--html": args.html, "--plot": args.plot}
    check_output_paths(outputs, [args.a, args.b], json_output=args.json)
    check_draw_options(args)
    if args.label is not None and args.mode != "one_vs_rest":
        # The per-label table compares each label's own pairs, one-vs-rest; it would have
        # answered another question than a top-label or classwise headline, silently.
        raise ValueError(
            f"--label COLUMN compares each label's pairs one-vs-rest; it cannot be combined "
            f"with --mode {args.mode}"
        )
    by_label_options = (args.correction, args.alpha, args.min_units)
    if args.label is None and any(option is not None for option in by_label_options):
        raise ValueError("--correction, --alpha and --min-units apply to --label COLUMN only")
    if args.label is not None:  # the settings the table and the page state
        args.min_units = SMALL_LABEL_UNITS if args.min_units is None else args.min_units
        args.correction = args.correction or "holm"
        args.alpha = 0.05 if args.alpha is None else args.alpha
    if args.min_units is not None and args.min_units < MIN_UNITS:
        raise ValueError(f"--min-units must be at least {MIN_UNITS}, got {args.min_units}")
    if args.alpha is not None and not 0 < args.alpha < 1:
        raise ValueError(f"--alpha must lie in (0, 1), got {args.alpha}")
    a, b, ids = _read_both(args)
    labels = cli_report.compared_labels(args, a, b, by_ids=ids is not None)
    per_label = args.label is not None
    announce_long_run(
        a, args.samples, "paired resamples", passes=2 if per_label else 1,
        again=" (and again per label)" if per_label else "",
    )  # fmt: skip
    # compare_calibration, with the side of 0 its draws lie on (the verdict's direction)
    # and each class's results (what --mode classwise draws).
    paired = paired_comparison(
        a.probs, b.probs, a.target, None, groups=a.groups, confidence=args.confidence,
        n_samples=args.samples, generator=torch.Generator().manual_seed(args.seed),
        mode=args.mode, **estimator_of(args),
    )  # fmt: skip
    result, side = paired.result, paired.side
    binning = binning_of(args)
    bins = [estimate_bins(m.probs, m.target, args.mode, r, **binning) for m, r in
            ((a, result.a), (b, result.b))]  # fmt: skip
    # Bins of one pair are compare_calibration's own warning, which names the paired
    # interval they narrow: a second one, of each error's bias, had followed it.
    warn_if_few_bins(bins[0] + bins[1], **binning, per_class=args.mode == "classwise")
    sources = _group_sources(args, a, b)
    summary = {
        "n": a.target.numel(),
        # The pairs scored: C per item one-vs-rest and classwise (as evaluate's n counts).
        "pairs": a.target.numel() if args.mode == "top_label" else a.probs.numel(),
        "id_columns": None if ids is None else list(ids),  # a's and b's; None: by position
        "resampled": comparison_units(a.probs, a.target, args.mode, a.groups),
        "groups": None if a.groups is None else int(a.groups.unique().numel()),
        "mode": args.mode,
        **estimator_summary(args),
        "confidence": args.confidence,
        "a": _model_summary(result.a, sources[0]),
        "b": _model_summary(result.b, sources[1]),
        "difference": float(result.difference),
        "lower": float(result.lower),
        "upper": float(result.upper),
        "p_value": float(result.p_value),
        "p_value_text": p_value_or_none(float(result.p_value), args.samples),
        "better": better_model(float(result.p_value), int(side), args.confidence, args.samples),
        "samples": args.samples,
    }
    note = difference_note(summary)
    if note:  # a − b outside its paired interval, and why
        summary["difference_note"] = note
    # Each model's bins (classwise: each bin with its class) and measures, as evaluate's
    # JSON gives them: the page had shown them, and the JSON of its run had not.
    measures = cli_report.models_measures(args, (a, b))
    for name, model_bins, own in zip("ab", bins, measures, strict=True):
        summary[name] |= cli_report.measures_summary(own)
        summary[name]["per_bin"] = per_bin_rows(model_bins)
    per_label = None
    by_label = cli_report.compare_per_label(args, a, b, labels)
    if by_label is not None:
        names, labelled = by_label
        per_label = dict(zip(names, labelled.per_label, strict=True))
        rows = [_label_row(labelled, i, args.samples) for i in range(len(names))]
        _add_adjusted_texts(rows)
        summary["per_label"] = dict(zip(names, rows, strict=True))
        per_label_note = labels_outside_note(summary["per_label"])
        if per_label_note:  # some label's a − b outside its own interval, and why
            summary["per_label_note"] = per_label_note
        summary["label_counts"] = {
            "a_better": labelled.a_better,
            "b_better": labelled.b_better,
            "not_distinguishable": labelled.not_distinguishable,
            "not_tested": labelled.not_tested,
            "min_units": labelled.min_units,
            "unit": summary["resampled"],  # pairs, items ([N, C] OvR or classwise), groups
            "correction": labelled.correction,
            "alpha": labelled.alpha,
        }
    summary["settings"] = cli_report.compare_settings(args, summary, a, b)
    panels = None
    if args.mode == "classwise" and (args.plot or args.html):
        panels, summary["plot_classes"] = _class_panels(args, a, b, paired, summary)
    smooth = None if panels is not None else _smooth_curves(args, a, b)
    with all_or_none():  # a failure writing the page keeps the old figure beside the old page
        if args.plot:  # first: the page carries what writing it says (a format's warning)
            summary["plot"] = _plot(args, result, a, b, panels, smooth)
        if args.html:
            summary["html"] = cli_report.write_compare(
                args, summary, result, measures, per_label, panels, smooth
            )
    with text_report_stream(outputs):
        _print(summary, args)
    return summary


def _model_summary(result, source: tuple[str | None, str | None]) -> dict[str, Any]:
    """One model's error and interval, and where its groups came from (``source``:
    :func:`_group_sources`) as ``group_column`` and ``group_file``."""
    numbers = {"calib_err": result.error, "lower": result.lower, "upper": result.upper}
    column, file = source
    return {k: float(v) for k, v in numbers.items()} | {"group_column": column, "group_file": file}


def _group_sources(args: argparse.Namespace, a, b) -> list[tuple[str | None, str | None]]:
    """Each model's group column and the file it was read from; (None, None) without
    groups. A model whose file lacks the column has the other's (the comparison resamples
    one grouping for both): b's had read null beside its Spiegelhalter row's "over 200
    groups", which were a's."""
    read = [(a.group_column, str(args.a)), (b.group_column, str(args.b or args.a))]
    found = [source for source in read if source[0] is not None]
    shared = found[0] if found else (None, None)
    return [source if source[0] is not None else shared for source in read]


def _print(summary: dict[str, Any], args: argparse.Namespace) -> None:
    from calib_metrics.predictions import to_jsonable
    from calib_metrics.report import (
        _paired_forms,
        fixed,
        no_interval,
        p_value_phrase,
        pairs_note,
        untested_phrase,
        verdict_text,
    )
    from calib_metrics.wording import counted, level_text, visible_controls

    if args.json:
        print(json.dumps(to_jsonable(summary), indent=2))
        return
    level = level_text(summary["confidence"])
    mode = mode_note(summary["mode"])
    groups = f" in {counted(summary['groups'], 'group')}" if summary["groups"] else ""
    groups += _paired_by(summary["id_columns"])
    print(f"N = {counted(summary['n'], 'item')}{pairs_note(summary)}{groups}, "
          f"{_estimator_words(summary)}{mode}, "
          f"paired bootstrap over {summary['resampled']} ({args.samples} draws, "
          f"{_paired_forms(summary)})")  # fmt: skip

    for name, path in zip("ab", model_names(args), strict=True):
        r = summary[name]
        missing = no_interval(r["lower"], r["upper"], summary["resampled"])
        interval = f", {missing}" if missing else f" [{level}: {r['lower']:.4f}, {r['upper']:.4f}]"
        print(f"  {name}: {visible_controls(path)}: {r['calib_err']:.4f}{interval}")

    if summary["p_value"] != summary["p_value"]:  # NaN: too few units to resample
        tested = f", {untested_phrase(summary['resampled'])}"
    else:
        tested = (
            f" [{level}: {fixed(summary['lower'], sign='+')}, "
            f"{fixed(summary['upper'], sign='+')}], "
            f"{p_value_phrase(summary['p_value'], args.samples)}"
        )
    print(f"  a - b = {fixed(summary['difference'], sign='+')}{tested}")
    verdict = verdict_text(summary)
    if verdict is not None:
        print(f"  {verdict}")
    if "difference_note" in summary:
        print(f"  note: {summary['difference_note']}")
    if "per_label" in summary:
        _print_per_label(summary, level, args.samples)
    if "html" in summary:
        print(f"HTML report: {visible_controls(summary['html'])}")
    if "plot" in summary:
        print(f"reliability diagrams: {visible_controls(summary['plot'])}")


def _estimator_words(summary: dict[str, Any]) -> str:
    """The estimator, as the text's first line names it.

    Example:
        >>> s = {"binning": "adaptive", "bin_size": "auto", "n_bins": 15, "norm": "l2",
        ...      "debias": True}
        >>> _estimator_words(s)
        'debiased CalibErr, bins of ⌈√N⌉'
        >>> _estimator_words(s | {"bin_size": 50, "debias": False})
        'plug-in CalibErr, bins of 50'
        >>> _estimator_words(s | {"binning": "uniform", "n_bins": 1, "norm": "l1"})
        'CalibErr (l1), 1 equal-width bin'
    """
    from calib_metrics.wording import counted

    if summary["norm"] != "l2":
        error = f"CalibErr ({summary['norm']})"
    else:
        error = f"{'debiased' if summary['debias'] else 'plug-in'} CalibErr"
    if summary["binning"] == "uniform":
        return f"{error}, {counted(summary['n_bins'], 'equal-width bin')}"
    size = summary["bin_size"]
    return f"{error}, bins of {'⌈√N⌉' if size == 'auto' else size}"


def _paired_by(columns: list[str] | None) -> str:
    """How the rows were paired, said where it was by their item ids (``columns``: a's
    and b's id column).

    Example:
        >>> _paired_by(["id", "id"]), _paired_by(["id", "item_id"]), _paired_by(None)
        (" paired by 'id'", " paired by 'id' (a) and 'item_id' (b)", '')
    """
    from calib_metrics.wording import escaped_controls

    if columns is None:
        return ""
    # A repr's backslashes are its own escapes' already: doubled, they would read as two.
    a, b = (escaped_controls(repr(column)) for column in columns)
    return f" paired by {a}" if a == b else f" paired by {a} (a) and {b} (b)"


def model_names(args: argparse.Namespace) -> tuple[str, str]:
    """The two models' names: their files, or, of one file, the file and each model's
    column (a's when ``--probs`` names it: only b's had been said)."""
    if args.b:
        return str(args.a), str(args.b)
    a = f"{args.a} [{args.probs}]" if args.probs else str(args.a)
    return a, f"{args.a} [{args.probs_b}]"


def _smooth_curves(args: argparse.Namespace, a, b) -> tuple | None:
    """Both models' smooth curves with their bands (``--plot-smooth``), or None: drawn once
    for ``--plot`` and the page."""
    from calib_metrics.cli import smooth_curve_for_plot
    from calib_metrics.functional.comparison import resampled_ids

    if not args.plot_smooth:
        return None
    # Each band resampled as the comparison is (an item's one-vs-rest pairs together).
    ids = resampled_ids(a.probs, a.target, args.mode, a.groups)
    return tuple(
        smooth_curve_for_plot(args, model.probs, model.target, ids, args.mode) for model in (a, b)
    )


def _plot(args: argparse.Namespace, result, a, b, panels, smooth) -> str:
    """Write ``--plot``: the per-class ``panels`` (``--mode classwise``), else both models'
    reliability diagrams side by side (with ``--plot-smooth``, each with its ``smooth``
    curve and band); its path."""
    from matplotlib.figure import Figure

    from calib_metrics.functional.comparison import comparison_units
    from calib_metrics.plot import reliability_diagram, shared_x_axis
    from calib_metrics.predictions import save_figure
    from calib_metrics.report import FIGURE_NAME_CHARS, model_title

    if panels is not None:
        save_figure(panels, args.plot, "--plot", dpi=120)
        return str(args.plot)
    interval = comparison_units(a.probs, a.target, args.mode, a.groups)
    # A plain Figure, as the other commands' figures: pyplot would start the user's
    # configured backend (WebAgg without tornado raised after all the work was done).
    fig = Figure(figsize=(9.4, 4.8))
    axes = fig.subplots(1, 2)
    curves = smooth or (None, None)
    # One x axis for both, as on the page: a alone had gone logit beside a linear b.
    shared = shared_x_axis([result.a, result.b])
    for index, (ax, curve, one, key, name, color) in enumerate(zip(
        axes, curves, (result.a, result.b), "ab", model_names(args), ("C0", "C1"), strict=True
    )):  # fmt: skip
        title = shared.title(model_title(key, name, FIGURE_NAME_CHARS), index)
        reliability_diagram(
            one, ax, title=title, color=color, confidence=args.confidence, interval=interval,
            debias=args.debias, norm=args.norm, smooth=curve, xscale=shared.xscale,
            logit_range=shared.logit_range,
        )  # fmt: skip
    fig.tight_layout()
    save_figure(fig, args.plot, "--plot", dpi=120)
    return str(args.plot)


def _class_panels(args: argparse.Namespace, a, b, paired, summary: dict[str, Any]):
    """``--mode classwise``: one reliability diagram per class, a and b overlaid
    (:mod:`calib_metrics.cli_classwise`), each class's results those of the ``paired``
    draws behind the printed average (drawn again class by class, each model on its own,
    the panels had shown other intervals, named a pair bootstrap's); the figure and the
    classes drawn."""
    from calib_metrics.cli_classwise import class_panels
    from calib_metrics.report import FIGURE_NAME_CHARS, model_title

    estimator = {"n_samples": args.samples, "confidence": args.confidence,
                 "interval": summary["resampled"], **estimator_of(args)}  # fmt: skip
    models = [(a.probs, a.target), (b.probs, b.target)]
    names = [
        model_title(key, name, FIGURE_NAME_CHARS)
        for key, name in zip("ab", model_names(args), strict=True)
    ]
    title = "classwise: one reliability diagram per class, a and b on the same items"
    computed = [paired.results_a, paired.results_b]
    return class_panels(
        args, models, names, a.groups, estimator, title, tags=("a", "b"), computed=computed
    )


def _label_row(result, i: int, samples: int) -> dict[str, Any]:
    """Label i's numbers: pairs, both errors with their own intervals (the page's chart
    draws them), the difference, p-values (the raw one's text too) and the verdict."""
    from calib_metrics.report import p_value_or_none

    r = result.per_label[i]
    numbers = {"a": r.a.error, "b": r.b.error, "difference": r.difference}
    numbers |= {"a_lower": r.a.lower, "a_upper": r.a.upper}
    numbers |= {"b_lower": r.b.lower, "b_upper": r.b.upper}
    numbers |= {"lower": r.lower, "upper": r.upper, "p_value": r.p_value}
    numbers["adjusted_p_value"] = result.adjusted_p_value[i]
    row = {
        "n": round(r.a.bins.count.sum().item()),  # a count of pairs: an int in the JSON
        **{key: float(value) for key, value in numbers.items()},
    }
    row["p_value_text"] = p_value_or_none(row["p_value"], samples)
    # Resampling units (pairs, items of [N, C] input, or groups with --groups); a label
    # outside the correction's family (too few of them) has no corrected p-value.
    row["units"] = int(result.units[i])
    row["called"] = row["adjusted_p_value"] == row["adjusted_p_value"]
    return row | {"better": {-1: "a", 1: "b", 0: "-"}[int(result.verdict[i])]}


def _add_adjusted_texts(rows: list[dict[str, Any]]) -> None:
    """Each label's corrected p-value as the table writes it (None for a label not tested)."""
    from calib_metrics.report import adjusted_p_texts

    texts = adjusted_p_texts([r["adjusted_p_value"] for r in rows])
    for row, text in zip(rows, texts, strict=True):
        row["adjusted_p_value_text"] = None if text == "—" else text


def _print_per_label(summary: dict[str, Any], level: str, samples: int) -> None:
    """The per-label table (difference, interval, p and corrected p) and the counts."""
    from calib_metrics.report import adjusted_p_texts, fixed, label_counts_sentence, p_value_text
    from calib_metrics.wording import count_text, one_line_names, visible_controls

    # Label names as the page writes them (an ESC had reached the terminal; a line feed
    # had broken its row), and the column as wide as the names printed.
    per_label = summary["per_label"]
    rows = list(zip(one_line_names(list(per_label)), per_label.values(), strict=True))
    adjusted = adjusted_p_texts([r["adjusted_p_value"] for _, r in rows])
    width = max(5, *(len(k) for k, _ in rows))
    # The units a label is called on, where they are not its pairs (groups, or the items
    # of [N, C] input): "fewer than 50 items" beside n = 90 pairs had read as a mistake.
    unit = summary["label_counts"]["unit"]
    units = "" if unit == "pairs" else f" {unit:>7}"
    print(
        f"  {'label':<{width}} {'n':>7}{units} {'a':>7} {'b':>7} {'a - b':>8} "
        f"{'[' + level + ']':>19} {'p':>7} {'p adj':>7}  better"
    )
    for (k, r), adjusted_text in zip(rows, adjusted, strict=True):
        untested = r["lower"] != r["lower"]  # NaN ends: too few units for an interval
        interval = (
            "—" if untested else f"[{fixed(r['lower'], sign='+')}, {fixed(r['upper'], sign='+')}]"
        )
        p = r["p_value"]
        p_text = "—" if p != p else p_value_text(p, samples)  # NaN: a label not tested
        own = "" if unit == "pairs" else f" {count_text(r['units']):>7}"
        print(
            f"  {k:<{width}} {count_text(r['n']):>7}{own} {r['a']:>7.4f} {r['b']:>7.4f} "
            f"{fixed(r['difference'], sign='+'):>8} {interval:>19} {p_text:>7} "
            f"{adjusted_text:>7}  {r['better']}"
        )
    print("  " + label_counts_sentence(summary["label_counts"], len(rows)))
    if "per_label_note" in summary:  # its label names shown as in the table
        print(f"  note: {visible_controls(summary['per_label_note'], one_line=True)}")
