"""The command line's ``--html`` and ``--label``: per-label results and the report page.

``evaluate --label COLUMN`` measures each label's pairs on their own (with the options of
the whole file); a multiclass file's classes are its labels. ``compare --label COLUMN``
compares the two models on each label's items, paired. The page itself is built by
:mod:`calib_metrics.report`.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

# Options that are not settings of the estimate (what to do with it, not how).
_NOT_SETTINGS = (
    "command",
    "command_line",
    "json",
    "html",
    "plot",
    "out",
    "plot_smooth",
    "smooth",
    "spiegelhalter",
    "warning_lines",
)


def split_by_label(labels: list[str]) -> dict[str, Tensor]:
    """The row indices of each label, labels in :func:`label_ids`'s order (numeric where
    every label is a number, else text), as ``compare --label`` orders them: in order of
    first appearance, each label's interval had drawn from the one generator where the
    labels before it left off, so that moving one row to the top changed other labels'
    intervals.

    Example:
        >>> split_by_label(["VB", "NN", "VB"])
        {'NN': tensor([1]), 'VB': tensor([0, 2])}
    """
    names, ids = label_ids(labels)
    ids = torch.from_numpy(ids.astype("int64"))
    rows = torch.argsort(ids, stable=True)
    counts = torch.bincount(ids, minlength=len(names)).tolist()
    return {str(k): r for k, r in zip(names, torch.split(rows, counts), strict=True)}


def _renumbered(groups: Tensor | None, rows: Tensor) -> Tensor | None:
    """The group ids of ``rows``, numbered 0..G'-1 among themselves."""
    if groups is None:
        return None
    return torch.unique(groups[rows], return_inverse=True)[1]


def _read_row_labels(path: Path, column: str, n: int, kept: Tensor | None) -> list[str]:
    """Column ``column`` of ``path``, one label per (probability, label) row kept
    (``kept``: :attr:`~calib_metrics.predictions.Predictions.kept`); an empty cell or a
    JSON null is an error naming its row (it would otherwise become a label named '')."""
    from calib_metrics.predictions import file_row, read_labels, row_position

    labels = read_labels(path, column, kept)
    if len(labels) != n:
        per_row = len(labels) // n if n and len(labels) % n == 0 else 0
        # A label per class of each item (a [N, C] tag array) had been told only its count.
        hint = (
            f" ({per_row} a row: --label takes one label per item; a multiclass file is "
            "compared class by class with CalibrationComparison(num_classes=C)"
            ".compute_by_label() in Python)"
            if per_row > 1
            else ""
        )
        raise ValueError(f"{path}: {len(labels)} values in --label {column!r} for {n} rows{hint}")
    empty = next((i for i, label in enumerate(labels) if not label.strip()), None)
    if empty is not None:
        where = row_position(path, file_row(kept, empty))
        raise ValueError(f"{path}: {where} has no value in --label {column!r}")
    return labels


def compared_labels(args: argparse.Namespace, a, b, by_ids: bool = False) -> list[str] | None:
    """The --label column of ``compare`` (None without --label): a's, or b's when only
    b's file has it; when both files have it, they must name every row alike (the same
    items; ``by_ids``: the rows were paired by their item ids, not by position). Read
    before the draws, so that a column it cannot use stops the command at once."""
    from calib_metrics.predictions import has_column, row_positions

    if args.label is None:
        return None
    files = [(args.a, a.kept)] if args.b is None else [(args.a, a.kept), (args.b, b.kept)]
    found = [(path, mask) for path, mask in files if has_column(path, args.label)]
    if not found and args.b is not None:
        raise _no_label_column(args.label, args.a, args.b)
    found = found or files  # one file: its read names the column it lacks
    n = a.target.shape[0]
    labels = [_read_row_labels(path, args.label, n, mask) for path, mask in found]
    paths, kept = zip(*found)
    differ = next((i for i, pair in enumerate(zip(*labels)) if len(set(pair)) > 1), None)
    if differ is not None:
        order = "" if by_ids else " in the same order"
        raise ValueError(
            f"{args.b}: the two models must be scored on the same items{order} "
            f"(--label {args.label!r} first differs at {row_positions(paths, differ, kept)}: "
            f"{labels[0][differ]!r} vs {labels[1][differ]!r})"
        )
    return labels[0]


def _no_label_column(column: str, *paths: Path) -> ValueError:
    """The error for a --label column that neither of ``compare``'s files has: the label
    may come from either, and naming a's file alone had sent the user to look only there.

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> a, b = (Path(folder, name) for name in ("a.csv", "b.csv"))
        >>> _ = a.write_text("prob,label,Tag\\n0.9,1,NN\\n"), b.write_text("prob,label\\n0.8,1\\n")
        >>> message = str(_no_label_column("tag", a, b)).replace(folder + os.sep, "")
        >>> print(message.replace(" (", "\\n("))
        --label 'tag': neither a.csv nor b.csv has that column
        (a.csv: prob, label, Tag; b.csv: prob, label; did you mean 'Tag'?)
    """
    from calib_metrics.predictions import column_names

    names = [column_names(path) for path in paths]
    listed = [", ".join(found) if found is not None else "an unnamed array" for found in names]
    if listed[0] == listed[1]:
        columns = f"columns of both: {listed[0]}"
    else:
        columns = "; ".join(f"{path}: {text}" for path, text in zip(paths, listed, strict=True))
    near = {name for found in names for name in found or () if name.lower() == column.lower()}
    meant = f"; did you mean {' or '.join(map(repr, sorted(near)))}?" if near else ""
    a, b = paths
    return ValueError(f"--label {column!r}: neither {a} nor {b} has that column ({columns}{meant})")


def _label_pairs(args: argparse.Namespace, probs: Tensor, target: Tensor, groups, kept):
    """Each label's (probs, target, groups): the --label column's, or a multiclass file's
    classes (one-vs-rest pairs of each class); None when the pairs have no labels."""
    from calib_metrics.functional.multiclass import is_multiclass, pair_sets

    multiclass = is_multiclass(probs, target)
    if args.label is not None:
        if multiclass:
            raise ValueError(
                f"--label {args.label}: a multiclass file's classes are its labels already"
            )
        labels = _read_row_labels(args.file, args.label, target.numel(), kept)
        by_label = split_by_label(labels)
        return {k: (probs[r], target[r], _renumbered(groups, r)) for k, r in by_label.items()}
    if multiclass and args.html:
        sets = pair_sets(probs, target, "classwise", groups)
        return {f"class {c}": tuple(s) for c, s in enumerate(sets)}
    return None


def class_rows_note(mode: str) -> str | None:
    """What a multiclass file's per-label rows are under ``mode``: each class's one-vs-rest
    pairs in every mode (:func:`_label_pairs`), said where the mode's own pairs are others
    (a top-label page's rows had read as top-label pairs by class); None for one-vs-rest,
    whose pooled pairs they are.

    Example:
        >>> print(class_rows_note("top_label"))
        each class's one-vs-rest pairs (its probability vs [target = class]), not top-label pairs
        >>> class_rows_note("one_vs_rest") is None
        True
    """
    said = "each class's one-vs-rest pairs (its probability vs [target = class])"
    if mode == "top_label":
        return f"{said}, not top-label pairs"
    if mode == "classwise":
        return f"{said}, the classes the classwise error averages"
    return None


def evaluate_per_label(
    args: argparse.Namespace,
    probs: Tensor,
    target: Tensor,
    groups,
    kept: Tensor | None = None,
    per_class: list | None = None,
) -> tuple[dict[str, Any], dict[str, int] | None] | None:
    """Each label's CalibrationResult with the command's estimator, and, when the interval
    resamples groups, each label's number of groups (the units its interval is drawn
    over); None without labels. ``kept``: which of the file's labels were kept (when
    padding was dropped); ``per_class``: a classwise run's own per-class results, used as
    they are.

    Example:
        >>> import os, tempfile, torch
        >>> from calib_metrics.cli import _settle_options, build_parser
        >>> file = os.path.join(tempfile.mkdtemp(), "tags.csv")
        >>> rows = [f"{(i % 10) / 10 + 0.05},{i % 2},{'AB'[i % 3 == 0]}" for i in range(60)]
        >>> _ = open(file, "w").write("prob,label,tag\\n" + "\\n".join(rows) + "\\n")
        >>> args = build_parser(paper=False).parse_args(
        ...     ["evaluate", file, "--label", "tag", "--samples", "20"])
        >>> _settle_options(args)
        >>> q, y = torch.tensor([(i % 10) / 10 + 0.05 for i in range(60)]), torch.arange(60) % 2
        >>> results, groups = evaluate_per_label(args, q, y.double(), None)
        >>> sorted(results), groups
        (['A', 'B'], None)
    """
    import warnings

    from calib_metrics.functional import calibration_error_ci

    if per_class is not None and args.label is None:  # the classes, drawn once already
        # (a multiclass file's classes are its labels on the page only, as _label_pairs's)
        if not args.html:
            return None
        results = {f"class {c}": r for c, r in enumerate(per_class)}
        return results, _group_counts(args, dict.fromkeys(results, groups))
    per_label = _label_pairs(args, probs, target, groups, kept)
    if per_label is None:
        return None
    counts = _group_counts(args, {k: g for k, (_, _, g) in per_label.items()})
    from calib_metrics.cli import announce_label_draws

    # Each label's units, as its interval resamples them: its groups, else its pairs.
    units = list(counts.values()) if counts else [y.shape[0] for _, y, _ in per_label.values()]
    announce_label_draws(units, args.samples, "groups" if counts else "pairs")
    generator = torch.Generator().manual_seed(args.seed)
    options = estimator_options(args)
    with warnings.catch_warnings():  # few pairs per label: few bins is expected here
        warnings.simplefilter("ignore", UserWarning)
        results = {
            k: calibration_error_ci(q, y, groups=g, generator=generator, **options)
            for k, (q, y, g) in per_label.items()
        }
    return results, counts


def _group_counts(args: argparse.Namespace, groups: dict[str, Any]) -> dict[str, int] | None:
    """Each label's number of groups where the interval resamples them, else None: a
    label's "fewer than 10 resampled groups" beside its 450 pairs had read as a
    contradiction where its groups were not counted."""
    if args.interval != "groups":
        return None
    return {k: int(torch.unique(g).numel()) for k, g in groups.items()}


def estimator_options(args: argparse.Namespace) -> dict[str, Any]:
    """``evaluate``'s estimator as :func:`~calib_metrics.functional.calibration_error_ci`'s
    options (all but ``groups``, ``generator`` and ``mode``)."""
    from calib_metrics.cli import estimator_of

    return estimator_of(args) | {
        "n_samples": args.samples, "confidence": args.confidence, "method": args.method,
        "interval": args.interval,
    }  # fmt: skip


def label_ids(text: list[str]) -> tuple[list[str], Any]:
    """The distinct labels of ``text`` in order, and each row's index among them: in
    numeric order where every label is a number (-1, 2, 9, 10, 100 had been ordered as
    text: -1, 10, 100, 2, 9), else as text.

    Only the distinct labels are ordered, and rows are mapped to them by lookup: an array of
    the rows' text had taken memory and time in proportion to rows × the longest label
    (3.7 GB for a million rows and one label of 300 characters), and dropped trailing NULs,
    so that "A" and "A\\x00" read as one label.

    Example:
        >>> names, ids = label_ids(["10", "-1", "2", "10"])
        >>> names, ids.tolist()
        (['-1', '2', '10'], [2, 0, 1, 2])
        >>> label_ids(["NOUN", "ADJ", "10"])[0]
        ['10', 'ADJ', 'NOUN']
    """
    import numpy as np

    names = _label_order(list(dict.fromkeys(text)))
    index = {name: i for i, name in enumerate(names)}
    return names, np.fromiter((index[t] for t in text), dtype=np.int64, count=len(text))


def _label_order(names: list[str]) -> list[str]:
    """Distinct ``names`` in numeric order where every one is a number (none NaN), names of
    one value ("1", "1.0") as text among themselves; else in text order.

    Example:
        >>> _label_order(["10", "1.0", "2", "1"]), _label_order(["nan", "1"])
        (['1', '1.0', '2', '10'], ['1', 'nan'])
    """
    try:
        values = {name: float(name) for name in names}
    except ValueError:  # a word among them: text order
        return sorted(names)
    if any(math.isnan(v) for v in values.values()):
        return sorted(names)
    return sorted(names, key=lambda name: (values[name], name))


def compare_per_label(args: argparse.Namespace, a, b, text: list[str] | None):
    """Label by label, models a and b compared (``compare_calibration_by_label``) on
    ``text``, each row's label (:func:`compared_labels`): the labels' names, in sorted
    order, and the result; None without labels."""
    import warnings

    import numpy as np

    from calib_metrics.cli import estimator_of
    from calib_metrics.functional import compare_calibration_by_label

    if text is None:
        return None
    names, ids = label_ids(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        result = compare_calibration_by_label(
            a.probs, b.probs, a.target, torch.from_numpy(ids.astype(np.int64)),
            groups=a.groups, correction=args.correction, alpha=args.alpha,
            confidence=args.confidence, n_samples=args.samples, min_units=args.min_units,
            generator=torch.Generator().manual_seed(args.seed), **estimator_of(args),
        )  # fmt: skip
    # Each label's own warnings (too few bins) are not the command's; those on the whole
    # correction (too few draws, too small labels) are, in the command's own words.
    for warning in caught:
        prefix, _, text = str(warning.message).partition(": ")
        if prefix == "compare_calibration_by_label":
            warnings.warn(_in_option_words(text), UserWarning, stacklevel=2)
    return [str(n) for n in names], result


def _in_option_words(text: str) -> str:
    """A library warning's keywords as this command's options, its draw counts written as
    the options' refusals write them.

    Example:
        >>> _in_option_words("at alpha=1e-07: even n_samples=10000000 ...; use alpha=4e-07")
        'at --alpha 1e-07: even --samples 10,000,000 ...; use --alpha 4e-07'
    """
    text = re.sub(r"\bn_samples=(\d+)", lambda m: f"--samples {int(m[1]):,}", text)
    text = re.sub(r"\balpha=", "--alpha ", text).replace("this alpha", "this --alpha")
    return text.replace("min_units=", "--min-units ")


def _measures_of(
    probs: Tensor, target: Tensor, groups: Tensor | None, mode: str, bandwidth: float | None
):
    """The Brier split (bins of ⌈√N⌉), the smooth ECE (at ``bandwidth``; None: its σ*) and
    Spiegelhalter's test (over the groups, when given) of one model's pairs under ``mode``,
    as ``evaluate`` gives them."""
    from calib_metrics.cli import _brier_pairs, spiegelhalter_summary
    from calib_metrics.functional import brier_decomposition, smooth_calibration_error
    from calib_metrics.report import Measures, brier_pairs

    test = spiegelhalter_summary(probs, target, mode, groups)
    return Measures(
        brier_decomposition(*_brier_pairs(probs, target, mode)),
        float(smooth_calibration_error(probs, target, mode=mode, bandwidth=bandwidth)),
        _float_or_none(test["spiegelhalter_z"]),
        _float_or_none(test["spiegelhalter_p"]),
        test["spiegelhalter_groups"],
        test.get("spiegelhalter_note"),
        brier_pairs(mode),
        test["spiegelhalter_cluster"],
        bandwidth,
    )


def models_measures(args: argparse.Namespace, models: tuple) -> tuple:
    """``compare``'s measures of both models (read from their files, paired): the Brier
    split, and with ``--html`` the page's smooth ECE and Spiegelhalter's test too (over
    a's groups, which both models share), as ``evaluate`` computes them."""
    from calib_metrics.cli import _brier_pairs
    from calib_metrics.functional import brier_decomposition
    from calib_metrics.report import Measures, brier_pairs

    groups = models[0].groups
    if args.html:
        return tuple(
            _measures_of(m.probs, m.target, groups, args.mode, args.bandwidth) for m in models
        )
    return tuple(
        Measures(
            brier_decomposition(*_brier_pairs(m.probs, m.target, args.mode)),
            brier_pairs=brier_pairs(args.mode),
        )
        for m in models
    )


def brier_numbers(split) -> dict[str, float]:
    """A Brier decomposition under the keys of ``--json``: ``brier``, ``calibration``,
    ``refinement`` and ``within_bin`` (one model's, in ``evaluate`` and ``compare``)."""
    keys = ("brier", "calibration", "refinement", "within_bin")
    return {key: float(getattr(split, key)) for key in keys}


def measures_summary(measures) -> dict[str, Any]:
    """One model's measures under the keys of ``evaluate --json``: the Brier split, and
    the smooth ECE and Spiegelhalter's test where computed (the test's note where not).

    Example:
        >>> import torch
        >>> from calib_metrics.functional import brier_decomposition
        >>> from calib_metrics.report import Measures
        >>> q = torch.tensor([0.2, 0.8, 0.6, 0.3], dtype=torch.float64)
        >>> y = torch.tensor([0.0, 1.0, 1.0, 0.0], dtype=torch.float64)
        >>> sorted(measures_summary(Measures(brier_decomposition(q, y))))
        ['brier', 'calibration', 'refinement', 'within_bin']
    """
    numbers = brier_numbers(measures.brier)
    if measures.smooth_ece is not None:
        numbers["smooth_ece"] = measures.smooth_ece
    if measures.spiegelhalter_z is not None or measures.spiegelhalter_note is not None:
        numbers["spiegelhalter_z"] = measures.spiegelhalter_z
        numbers["spiegelhalter_p"] = measures.spiegelhalter_p
        numbers["spiegelhalter_groups"] = measures.spiegelhalter_groups
        numbers["spiegelhalter_cluster"] = measures.spiegelhalter_cluster
    if measures.spiegelhalter_note is not None:
        numbers["spiegelhalter_note"] = measures.spiegelhalter_note
    if measures.brier_pairs is not None:
        numbers["brier_pairs"] = measures.brier_pairs
    return numbers


def _float_or_none(value) -> float | None:
    return None if value is None else float(value)


def settings_of(args: argparse.Namespace, groups: str | None = None) -> dict[str, Any]:
    """The options that shaped the numbers: the report's settings table and the
    ``settings`` of ``--json`` alike (the JSON had lacked ``n_bins`` and ``seed``);
    ``groups``: the group column as resolved (:func:`groups_setting`), in place of the
    option as typed (``''`` for a column found by name, or none at all under ``--interval
    groups``). The size option of the binning not used is left out: ``--binning uniform``
    had listed ``bin_size: auto``.

    Example:
        >>> from calib_metrics.cli import _settle_options, build_parser
        >>> args = build_parser(paper=False).parse_args(
        ...     ["evaluate", "p.csv", "--binning", "uniform", "--n-bins", "7", "--seed", "3"])
        >>> _settle_options(args)
        >>> settings = settings_of(args)
        >>> settings["n_bins"], settings["seed"], "bin_size" in settings
        (7, 3, False)
    """
    unused = {"adaptive": "n_bins", "uniform": "bin_size"}.get(getattr(args, "binning", None))
    settings = {
        k: str(v) if isinstance(v, Path) else v
        for k, v in vars(args).items()
        if k not in _NOT_SETTINGS and k != unused and not callable(v)
    }
    if groups is not None:
        settings["groups"] = groups
    if "bandwidth" in settings:
        from calib_metrics.cli import bandwidth_setting

        settings["bandwidth"] = bandwidth_setting(settings["bandwidth"])
    return settings


def evaluate_settings(args: argparse.Namespace, summary: dict, table) -> dict[str, Any]:
    """``evaluate``'s settings (:func:`settings_of`), its columns as resolved: the
    probabilities', the labels' and the groups' (``table``: the file read)."""
    file = str(args.file)
    columns = [(file, summary["group_column"])]
    settings = settings_of(args, groups_setting(args.groups, columns, summary["groups"]))
    probs, target = table.columns
    settings["probs"] = column_setting(args.probs, [(file, probs)])
    settings["target"] = column_setting(args.target, [(file, target)])
    return settings


def compare_settings(args: argparse.Namespace, summary: dict, a, b) -> dict[str, Any]:
    """``compare``'s settings (:func:`settings_of`), the columns read from each file (the
    probabilities', b's, the labels' and the groups') and the item-id columns that paired
    the rows (None: paired by position)."""
    files = [(str(args.a), a.group_column)] + ([(str(args.b), b.group_column)] if args.b else [])
    settings = settings_of(args, groups_setting(args.groups, files, summary["groups"]))
    file_a, file_b = str(args.a), str(args.b or args.a)
    probs = [(file_a, a.columns[0])]
    if args.b is not None and args.probs_b is None:  # b read --probs's column (or by name)
        probs.append((file_b, b.columns[0]))
    else:
        settings["probs_b"] = column_setting(args.probs_b, [(file_b, b.columns[0])])
    settings["probs"] = column_setting(args.probs, probs)
    targets = [(file_a, a.columns[1])] + ([(file_b, b.columns[1])] if args.b else [])
    settings["target"] = column_setting(args.target, targets)
    columns = summary["id_columns"]
    settings["id"] = None if columns is None else columns[0]  # --id names both files' column
    return settings


def column_setting(typed: str | None, columns: Sequence[tuple[str, str | None]]) -> str | None:
    """A column option as resolved: the column read from each file of ``columns`` ((file,
    column or None)), said to be found by name where none was ``typed`` (not of an unnamed
    array, whose columns are 0 and 1); None where no file read one. The settings had shown
    "—" for a probability column found by name, and the page could not say which was
    scored.

    Example:
        >>> column_setting(None, [("t.csv", "prob")])
        'prob (found by name)'
        >>> column_setting("q", [("a.csv", "q"), ("b.csv", "q")])
        'q'
        >>> column_setting(None, [("a.csv", "prob"), ("b.csv", "score")])
        'prob of a.csv, score of b.csv (found by name)'
        >>> column_setting(None, [("a.npy", "column 0")])
        'column 0'
    """
    read = [(file, column) for file, column in columns if column is not None]
    if not read:
        return None
    if len(read) == len(columns) and len({column for _, column in read}) == 1:
        where = read[0][1]
    else:  # one file had the column, or the two files name it apart
        where = ", ".join(f"{column} of {file}" for file, column in read)
    unnamed = all(column in _ARRAY_COLUMNS for _, column in read)
    return where if typed or unnamed else f"{where} (found by name)"


#: How :func:`~calib_metrics.predictions.read_table` names an unnamed array's columns.
_ARRAY_COLUMNS = ("column 0", "column 1")


def groups_setting(
    typed: str | None, columns: Sequence[tuple[str, str | None]], count: int | None
) -> str | None:
    """The settings table's ``groups``: the group column resampled (:func:`column_setting`)
    and the number of groups; None without groups.

    Example:
        >>> groups_setting(None, [("t.csv", "sentence_id")], 200)
        'sentence_id (found by name): 200 groups'
        >>> groups_setting("sent", [("a.csv", "sent"), ("b.csv", "sent")], 30)
        'sent: 30 groups'
        >>> groups_setting("", [("a.csv", "sent"), ("b.csv", None)], 30)
        'sent of a.csv (found by name): 30 groups'
    """
    from calib_metrics.wording import counted

    where = column_setting(typed, columns)
    if count is None or where is None:
        return None
    return f"{where}: {counted(count, 'group')}"


def _command_line(args: argparse.Namespace) -> str:
    """The command as typed: what :func:`calib_metrics.cli.main` was given, or, for a
    caller that parsed its own arguments, the process's."""
    import shlex
    import sys

    return getattr(args, "command_line", None) or shlex.join(["calib-metrics", *sys.argv[1:]])


def label_summary(
    per_label: dict, groups: dict[str, int] | None = None
) -> dict[str, dict[str, float | int]]:
    """Each label's pairs, error and interval, for the command's JSON and text output, and
    its number of ``groups`` when the interval resamples them.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> q = torch.linspace(0.05, 0.95, 40, dtype=torch.float64)
        >>> r = calibration_error_ci(q, (q > 0.5).double(), bin_size=10, n_samples=20)
        >>> label_summary({"NN": r})["NN"]["n"]
        40
    """
    summary: dict[str, dict[str, float | int]] = {
        k: {
            "n": round(float(r.bins.count.sum())),
            "calib_err": float(r.error),
            "lower": float(r.lower),
            "upper": float(r.upper),
        }
        for k, r in per_label.items()
    }
    for k, count in (groups or {}).items():
        summary[k]["groups"] = count
    return summary


def label_lines(per_label: dict[str, dict[str, float]], units: str = "pairs") -> list[str]:
    """One line per label of :func:`label_summary`'s output; ``units``: what the intervals
    resample (named where a label had too few of them). Label names are shown on one line
    as the page and its chart show them (:func:`~calib_metrics.wording.one_line_names`: a
    line feed had broken its line).

    Example:
        >>> label_lines({"NN": {"n": 812.0, "calib_err": 0.0123, "lower": 0.01, "upper": 0.015}})
        ['  NN: CalibErr 0.0123 [0.0100, 0.0150], 812 pairs']
        >>> nan = float("nan")  # too few pairs to resample
        >>> label_lines({"UH": {"n": 4.0, "calib_err": 0.2, "lower": nan, "upper": nan}})
        ['  UH: CalibErr 0.2000, no interval (fewer than 10 resampled pairs), 4 pairs']
        >>> row = {"n": 450, "groups": 8, "calib_err": 0.2, "lower": nan, "upper": nan}
        >>> print(label_lines({"NN": row}, "groups")[0])
          NN: CalibErr 0.2000, no interval (fewer than 10 resampled groups), 450 pairs in 8 groups
    """
    from calib_metrics.report import no_interval
    from calib_metrics.wording import counted, one_line_names

    def interval(r: dict[str, float]) -> str:
        missing = no_interval(r["lower"], r["upper"], units)
        return f", {missing}" if missing else f" [{r['lower']:.4f}, {r['upper']:.4f}]"

    return [
        f"  {shown}: CalibErr {r['calib_err']:.4f}{interval(r)}, "
        + counted(r["n"], "pair")
        + (f" in {counted(r['groups'], 'group')}" if "groups" in r else "")
        for shown, r in zip(one_line_names(list(per_label)), per_label.values(), strict=True)
    ]


def write_evaluate(args, summary: dict, result, brier, per_label, panels=None, smooth=None) -> str:
    """Write ``evaluate``'s page to ``args.html`` (with the per-class ``panels`` of
    ``--mode classwise`` as its diagram, the ``smooth`` curve of ``--plot-smooth`` on the
    one diagram); its path."""
    from calib_metrics.report import Measures, evaluate_page

    measures = Measures(
        brier,
        float(summary["smooth_ece"]),
        _float_or_none(summary["spiegelhalter_z"]),
        _float_or_none(summary["spiegelhalter_p"]),
        summary["spiegelhalter_groups"],
        summary.get("spiegelhalter_note"),
        summary.get("brier_pairs"),
        summary["spiegelhalter_cluster"],
        args.bandwidth,
    )
    _write_page(
        Path(args.html),
        lambda: evaluate_page(
            summary,
            result,
            measures,
            per_label=per_label,
            settings=summary["settings"],
            command=_command_line(args),
            class_panels=panels,
            warnings=_page_warnings(args),
            smooth=smooth,
        ),
    )
    return str(args.html)


class _SaidSoFar(Sequence[str]):
    """The warnings the command has said, read when the page is done (those of drawing its
    figures too), without the terminal's prefix: a page of one bin from 3 pairs had shown
    CalibErr 0.0000 without the warning that one bin measures only |mean q - mean y|."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    def __len__(self) -> int:
        return len(self._lines)

    def __getitem__(self, index):  # type: ignore[override]
        prefix = "calib-metrics: warning: "
        if isinstance(index, slice):
            return [line.removeprefix(prefix) for line in self._lines[index]]
        return self._lines[index].removeprefix(prefix)


def _page_warnings(args) -> Sequence[str]:
    """The command's warnings as its page reads them (:class:`_SaidSoFar`)."""
    return _SaidSoFar(getattr(args, "warning_lines", []))


def write_compare(
    args, summary: dict, comparison, measures, per_label, panels=None, smooth=None
) -> str:
    """Write ``compare``'s page to ``args.html`` (both models' ``measures``, with the
    per-class ``panels`` of ``--mode classwise`` as its diagrams, the two ``smooth`` curves
    of ``--plot-smooth`` on theirs); its path."""
    from calib_metrics.cli_compare import model_names
    from calib_metrics.report import compare_page

    names = model_names(args)
    _write_page(
        Path(args.html),
        lambda: compare_page(
            summary,
            comparison,
            measures,
            names=names,
            per_label=per_label,
            settings=summary["settings"],
            command=_command_line(args),
            class_panels=panels,
            warnings=_page_warnings(args),
            smooth=smooth,
        ),
    )
    return str(args.html)


def _write_page(path: Path, page: Callable[[], str]) -> None:
    """Draw an ``--html`` page (``page()``), then write it: a failure of either's writing
    (a program the figures' savefig runs; a full disk) names the option and the path."""
    from calib_metrics.predictions import output_failures, writing_output

    # Drawn before the file is made: a run stopped while drawing leaves nothing beside it.
    with output_failures(path, "--html"):
        text = page()
    with writing_output(path, "--html") as target:
        target.write_text(text, encoding="utf-8")
