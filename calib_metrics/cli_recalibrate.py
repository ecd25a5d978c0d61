"""``calib-metrics recalibrate dev test --method ...``: fit on dev, show on test, paired interval.

Reads two files of (probability, 0/1 label[, group]) pairs with the CLI's reader, fits the
binary recalibrator on dev, and prints on test: CalibErr before and after, each with its
interval, the paired interval (and p-value) of the difference before - after from one
resampling of the test pairs (or groups) shared by both, accuracy, NLL and Brier score
before and after; the recalibrated test probabilities are written to ``--out`` (a CSV
file, one row per test row).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calib_metrics.cli import output_path

if TYPE_CHECKING:
    from torch import Tensor

DESCRIPTION = "fit a recalibrator on dev, show on test with a paired interval"


# recalibration.BINARY_METHODS, spelled out so that building the parser imports no torch.
METHODS = ("temperature", "platt", "isotonic", "histogram", "scaling_binning")
# The methods that take --n-bins.
BINNED = ("histogram", "scaling_binning")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dev", type=Path, help="held-out predictions to fit on")
    p.add_argument("test", type=Path, help="predictions to recalibrate and evaluate")
    p.add_argument(
        "--method", choices=METHODS, default="temperature",
        help="the recalibrator fitted on dev (default: temperature)",
    )  # fmt: skip
    p.add_argument("--probs", help="column (or array) of probabilities (default: by name)")
    p.add_argument(
        "--target",
        help="column (or array) of 0/1 labels, one per probability: the methods are binary, "
        "and a multiclass file is refused (default: by name)",
    )
    p.add_argument("--test-probs", help="the test file's probability column (default: --probs)")
    p.add_argument("--test-target", help="the test file's label column (default: --target)")
    p.add_argument(
        "--groups",
        nargs="?",
        const="",
        default=None,
        help="resample groups (sentences, documents) of the test file: the column's name, or "
        "no value to find it by its usual name",
    )
    from calib_metrics.cli import add_ignore_index

    add_ignore_index(p)
    p.add_argument(
        "--n-bins", type=int, default=None, help="bins of histogram/scaling_binning (default: 15)"
    )
    p.add_argument("--samples", type=int, default=2000, help="bootstrap draws (default: 2000)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default: 0.95)")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the bootstrap draws and of scaling_binning's dev split (default: 0)",
    )
    p.add_argument(
        "--out", type=output_path, help="CSV of recalibrated test probabilities (not "
        "named .npz, .json, ...), one row per test row, padding rows with empty "
        "probabilities, read back with --ignore-index (default: <test>.recalibrated.csv "
        "beside the test file)",
    )  # fmt: skip
    p.add_argument("--plot", type=output_path, help="PNG of the before/after reliability diagrams")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def _summary(probs: Tensor, target: Tensor, groups, args, seed_offset: int) -> dict[str, Any]:
    import torch

    from calib_metrics.functional import calibration_error_ci

    g = torch.Generator().manual_seed(args.seed + seed_offset)
    interval = "pairs" if groups is None else "groups"
    result = calibration_error_ci(
        probs, target, bin_size="auto", n_samples=args.samples, confidence=args.confidence,
        generator=g, debias=True, interval=interval,
        groups=groups, method="percentile",
    )  # fmt: skip
    y = target.to(torch.float64)
    nll, ruled_out = binary_nll(probs, target)
    return {
        "calib_err": float(result.error),
        "lower": float(result.lower),
        "upper": float(result.upper),
        "accuracy": float(((probs >= 0.5).to(torch.float64) == y).to(torch.float64).mean()),
        "nll": nll,
        "labels_at_probability_0": ruled_out,
        "brier": float(((probs.to(torch.float64) - y) ** 2).mean()),
        "result": result,
        "interval": interval,
    }


def binary_nll(probs: Tensor, target: Tensor) -> tuple[float, int]:
    """The mean log loss of 0/1 ``target`` under ``probs``, not clamped, and how many
    labels have probability 0: each makes it infinite, as a model that rules out what
    happened deserves (a clamp at 1e-12 had given such a pair a finite 27.6, unsaid).

    Example:
        >>> import torch
        >>> binary_nll(torch.tensor([1.0, 0.5]), torch.tensor([1, 0]))  # 0 · log 0 is 0
        (0.34657359027997264, 0)
        >>> binary_nll(torch.tensor([0.0, 0.5]), torch.tensor([1, 0]))
        (inf, 1)
    """
    import torch

    q, y = probs.to(torch.float64), target.to(torch.float64)
    log_likelihood = torch.xlogy(y, q) + torch.xlogy(1 - y, 1 - q)
    return float(-log_likelihood.mean()), int(torch.isneginf(log_likelihood).sum())


def _write_probs(
    path: Path, before: Tensor, after: Tensor, test, padding: int | None, groups: list[str] | None
) -> None:
    """The recalibrated file: each test row's new and original probability, its label and
    (with ``--groups``) its group id as the test file wrote it, so it joins back: row i
    is the test file's data row i, a padding row (``--ignore-index``, ``test.kept``) with
    empty probabilities beside its label (the padding rows had been left out, and the
    rows after the first of them no longer lined up)."""
    kept = [True] * before.numel() if test.kept is None else test.kept.tolist()
    new, old, labels = iter(after.tolist()), iter(before.tolist()), iter(test.target.tolist())
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["probs", "original", "target", *([] if groups is None else ["group"])])
        for i, read in enumerate(kept):
            if read:
                # Round-trip digits: ten had written 0.99999999998945 as 1, and the
                # file's "before" NLL was 1.3152 where the report's was 1.3119.
                row = [repr(next(new)), repr(next(old)), int(next(labels))]
            else:
                row = ["", "", padding]
            writer.writerow(row if groups is None else [*row, groups[i]])


def _group_ids(path: Path, wanted: str | None, kept: Tensor | None) -> list[str] | None:
    """The test file's group ids as it wrote them (``read_table`` numbers them 0..G-1), of
    every row, padding too: a column of one id per label kept (``kept``, as
    ``read_table`` takes it) gets an empty id on each padding row, a JSON line's one id
    (a sentence's, beside its list of tags) stands on each of its labels' rows."""
    if wanted is None:
        return None
    from calib_metrics.predictions import group_column, group_id_texts

    ids = group_id_texts(path, group_column(path, wanted))
    if kept is None or len(ids) == kept.numel():
        return ids
    given = iter(ids)
    return [next(given) if read else "" for read in kept.tolist()]


def _warn_if_tested_on_dev(dev, test, args: argparse.Namespace) -> None:
    """Warn when the test pairs are the dev pairs, in any order, or when many more test
    rows are copies of dev rows than chance gives (:func:`_copied_rows`): the 'after'
    error of a map fitted to them is optimistic, and the paired difference with it."""
    import warnings

    dev_rows, test_rows = _rows(dev), _rows(test)
    if dev.probs.shape == test.probs.shape and _same_pairs(dev_rows, test_rows):
        said = f"{args.test} holds the dev pairs of {args.dev}"
    else:
        copied, chance, copies = _copied_rows(dev_rows, test_rows)
        if not copies:
            return
        n_test = test.target.numel()
        said = (
            f"{copied} of {n_test} test rows ({math.floor(100 * copied / n_test)}%) of "
            f"{args.test} are also dev rows of {args.dev}, where chance would give about "
            f"{chance:.0f} (as often as dev rows equal one another)"
        )
    warnings.warn(
        f"{said}: the map was fitted to the pairs it is tested on, so 'after' and the "
        "difference are optimistic; test on held-out pairs",
        UserWarning,
        stacklevel=2,
    )


# The least share of test rows, beyond chance, copied from dev that is warned of.
COPIED_SHARE = 0.05
# The least count of them: a few rows over chance in a small file tell no copy.
COPIED_ROWS = 10


def _same_pairs(dev_rows: Tensor, test_rows: Tensor) -> bool:
    """Whether two files hold the same rows (:func:`_rows`: their (probability, label)
    pairs), as multisets: a shuffled copy had given no word (isotonic showed "after
    0.0000")."""
    import torch

    ordered = (rows[_lexicographic_order(rows)] for rows in (dev_rows, test_rows))
    return torch.equal(*ordered)


def _rows(table) -> Tensor:
    """A file's rows ``[N, columns]`` in float64: its probabilities, then its label."""
    import torch

    n = table.target.numel()
    columns = (table.probs.reshape(n, -1), table.target.reshape(n, 1))
    return torch.cat([c.to(torch.float64) for c in columns], 1)


def _lexicographic_order(rows: Tensor) -> Tensor:
    """The order ``[N]`` that sorts ``rows [N, K]`` by their first column, then their
    second, and so on: one stable sort per column, from the last. -0.0 sorts as 0.0, the
    number it equals, whichever sort the device runs (a sort of the bits would not); rows
    of another dtype sort as they are (``+ 0.0`` had made int64 rows float32, and
    2**25 + 1 sorted as 2**25).

    Example:
        >>> import torch
        >>> _lexicographic_order(torch.tensor([[0.5, 1.0], [0.2, 0.0], [0.5, 0.0]])).tolist()
        [1, 2, 0]
    """
    keys = rows + 0.0 if rows.is_floating_point() else rows  # -0.0 + 0.0 is 0.0
    order = keys[:, -1].argsort(stable=True)
    for column in range(rows.shape[1] - 2, -1, -1):
        order = order[keys[order, column].argsort(stable=True)]
    return order


def _row_groups(rows: Tensor) -> Tensor:
    """Each row's group of equal rows ``[N]``, the groups numbered in the rows' sorted
    order (:func:`_lexicographic_order`): ``torch.unique(rows, dim=0,
    return_inverse=True)[1]``, which took 10-11 s at 2e6 rows [N, 2] on one busy thread
    (its sort compares whole rows; 16-20 s reported at other loads), where these two stable
    sorts take 1.9 s. Values compare as numbers, as torch.unique's do: -0.0 and 0.0 are one
    value; the rows hold no NaN (the reader refuses it as a missing value). No host read.

    Example:
        >>> import torch
        >>> _row_groups(torch.tensor([[0.5, 1.0], [0.2, 0.0], [0.5, 1.0], [-0.0, 0.0], [0.0, 0.0]]))
        tensor([2, 1, 2, 0, 0])
    """
    import torch

    order = _lexicographic_order(rows)
    ordered = rows[order]
    starts = torch.ones(len(rows), dtype=torch.long, device=rows.device)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(1)
    groups = torch.empty_like(order)
    groups[order] = starts.cumsum(0) - 1
    return groups


def _copied_rows(dev: Tensor, test: Tensor) -> tuple[int, float, bool]:
    """How many test rows are dev rows (each value counted as often as both files hold it,
    their exact values in every column), how many chance gives, and whether the excess
    tells a copy: at least ``COPIED_ROWS`` and ``COPIED_SHARE`` of the test rows, and 4
    standard deviations of chance (its count and its estimate, over both files' sizes)
    beyond chance taken 4 standard deviations of its estimate high. Chance is ``n_test``
    times the share of dev rows that equal another dev row (plus one, over
    ``n_dev + 1``): how often a row of the same model equals one of the dev rows.

    Rows of a continuous model equal no other row by chance, and a copy of many of them
    is told (the test file, or a part of it, or the dev file with other rows); a model of
    few distinct outputs repeats every value, where a copy cannot be told from chance and
    is not (only a copy of the whole dev file is, by :func:`_same_pairs`). O(N log N)
    sorts, on the rows' device.

    Example:
        >>> import torch
        >>> dev = torch.rand(100, 2, generator=torch.Generator().manual_seed(0))
        >>> _copied_rows(dev, torch.cat([dev[:30], torch.rand(70, 2)]))
        (30, 0.99..., True)
        >>> few = torch.tensor([[0.1, 0.0], [0.9, 1.0]])  # two outputs, each row seen 50 times
        >>> _copied_rows(few.repeat(50, 1), few.repeat(20, 1))
        (40, 40.0, False)
    """
    import torch

    index = _row_groups(torch.cat([dev, test]))
    in_dev = torch.bincount(index[: len(dev)], minlength=len(index))
    in_test = torch.bincount(index[len(dev) :], minlength=len(index))
    shared = torch.minimum(in_dev, in_test).sum()
    repeated = torch.where(in_dev > 1, in_dev, 0).sum()
    copied, repeated = (int(n) for n in torch.stack([shared, repeated]).tolist())
    per_dev_row = len(test) / (len(dev) + 1)
    chance = per_dev_row * (repeated + 1)
    # The estimate from dev's repeats is itself a count, of pairs that add 2 rows each:
    # taken as exact, a file with few repeats by chance warned of honest splits of
    # low-precision outputs at a hundred rows. Chance is tested at 4 of its standard
    # deviations above the estimate, and the count 4 standard deviations beyond that.
    high = chance + 4 * per_dev_row * math.sqrt(2 * repeated + 1)
    spread = math.sqrt(high * (1 + len(test) / len(dev)))
    least = max(COPIED_ROWS, COPIED_SHARE * len(test), high - chance + 4 * spread)
    return copied, chance, copied - chance >= least


def _check_binary(table, path: Path) -> None:
    """Refuse a multiclass file (C probabilities per label): the methods here are binary.
    One-hot labels are named: the reader takes them as class ids, and the reader's warning
    that says so is not shown beside a failed command's one error line."""
    per_label = table.probs.numel() // max(table.target.numel(), 1)
    if per_label > 1:
        raise ValueError(
            f"{path}: {per_label} probabilities per label (a multiclass file: rows of "
            f"{per_label} probabilities beside class ids, or beside one-hot rows, which are "
            "read as class ids); recalibrate fits binary (probability, 0/1 label) files: "
            "recalibrate multiclass logits in Python "
            "(calib_metrics.recalibration.TemperatureScaling)"
        )


def _settle_n_bins(args: argparse.Namespace) -> None:
    """``--n-bins``: checked before any work (an option, not the dev file, is at fault), and
    refused beside a method without bins, as evaluate refuses the other binning's size
    option: it had been ignored without a word, the output the same as without it.

    Example:
        >>> _settle_n_bins(argparse.Namespace(method="platt", n_bins=5))
        Traceback (most recent call last):
        ...
        ValueError: --n-bins counts the bins of --method histogram or scaling_binning; ...
    """
    from calib_metrics.cli import check_n_bins

    if args.n_bins is None:
        args.n_bins = 15
        return
    check_n_bins(args.n_bins)
    if args.method not in BINNED:
        raise ValueError(
            f"--n-bins counts the bins of --method {' or '.join(BINNED)}; --method "
            f"{args.method} has none"
        )


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from calib_metrics.cli import announce_long_run, check_draw_options
    from calib_metrics.predictions import (
        all_or_none,
        check_csv_path,
        check_output_paths,
        read_table,
        shared,
        text_report_stream,
        writing_output,
    )
    from calib_metrics.recalibration import fit_binary

    check_draw_options(args)
    _settle_n_bins(args)
    # Output paths are checked before any work, as evaluate and compare do: a missing
    # folder is refused, never created.
    out = args.out or args.test.with_name(args.test.stem + ".recalibrated.csv")
    outputs = {"--out": out, "--plot": args.plot}
    check_output_paths(outputs, [args.dev, args.test], json_output=args.json)
    check_csv_path(out, "--out")
    dev = read_table(args.dev, args.probs, args.target, None, args.ignore_index)
    test = read_table(
        args.test,
        args.test_probs or shared(args.probs),
        args.test_target or shared(args.target),
        args.groups,
        args.ignore_index,
        options={"probabilities": "test-probs", "labels": "test-target"},
    )
    _check_binary(dev, args.dev)
    _check_binary(test, args.test)
    _warn_if_tested_on_dev(dev, test, args)
    g = torch.Generator().manual_seed(args.seed)
    try:
        recalibrator = fit_binary(
            args.method, dev.probs, dev.target, n_bins=args.n_bins, generator=g
        )
    except ValueError as err:
        raise ValueError(f"{args.dev}: {err}") from None
    # Three bootstraps of the test units: the errors before and after, and the paired
    # difference.
    announce_long_run(
        test, args.samples, "resamples", passes=3,
        again=" for each of before, after and their paired difference",
    )  # fmt: skip
    before = test.probs.to(torch.float64)
    try:
        after = recalibrator(test.probs).to(torch.float64).clamp(0, 1)
        summary = _before_after(args, dev, test, before, after)
    except ValueError as err:
        raise ValueError(f"{args.test}: {err}") from None
    if hasattr(recalibrator, "temperature"):
        summary["temperature"] = float(recalibrator.temperature)
    # Read before the writing: a failure reading the test file is not --out's.
    ids = _group_ids(args.test, args.groups, test.kept)
    with all_or_none():  # a failure writing the figure keeps the old --out beside the old figure
        with writing_output(out, "--out") as target:
            _write_probs(target, before, after, test, args.ignore_index, ids)
        summary["out"] = str(out)
        summary["settings"] = _settings(args, dev, test)
        if args.plot:
            summary["plot"] = str(_plot(args.plot, summary))
    with text_report_stream(outputs):
        _print(summary, args)
    return summary


def _settings(args: argparse.Namespace, dev, test) -> dict[str, Any]:
    """The options that shaped the numbers, as ``evaluate`` and ``compare`` give them
    (:func:`calib_metrics.cli_report.settings_of`), the columns as read: the test file's
    groups', and each file's probabilities' and labels'."""
    from calib_metrics.cli_report import column_setting, groups_setting, settings_of

    count = None if test.groups is None else int(test.groups.unique().numel())
    settings = settings_of(
        args, groups_setting(args.groups, [(str(args.test), test.group_column)], count)
    )
    dev_file, test_file = str(args.dev), str(args.test)
    for option, test_option, index in (("probs", "test_probs", 0), ("target", "test_target", 1)):
        files = [(dev_file, dev.columns[index])]
        if getattr(args, test_option) is None:  # the test file read the dev file's column
            files.append((test_file, test.columns[index]))
        else:
            settings[test_option] = column_setting(
                getattr(args, test_option), [(test_file, test.columns[index])]
            )
        settings[option] = column_setting(getattr(args, option), files)
    if args.method not in BINNED:
        del settings["n_bins"]  # temperature, Platt and isotonic fits have no bins
    return settings


def _before_after(args: argparse.Namespace, dev, test, before: Tensor, after: Tensor) -> dict:
    """The test set's errors before and after, and their paired difference."""
    import torch

    from calib_metrics.cli import warn_if_few_bins
    from calib_metrics.recalibration import compare_before_after
    from calib_metrics.report import difference_note

    summary = {
        "dev": str(args.dev),
        "test": str(args.test),
        "method": args.method,
        "n_dev": dev.probs.numel(),
        "n_test": before.numel(),
        "confidence": args.confidence,
        "before": _summary(before, test.target, test.groups, args, 1),
        "after": _summary(after, test.target, test.groups, args, 2),
        "difference": compare_before_after(
            before,
            after,
            test.target,
            test.groups,
            confidence=args.confidence,
            n_samples=args.samples,
            generator=torch.Generator().manual_seed(args.seed + 3),
        ),
    }
    # As evaluate and compare say it: before/after errors of fewer than 10 bins (a small
    # test file) can hide miscalibration, and had been printed without a word.
    warn_if_few_bins(
        [summary[which]["result"].bins for which in ("before", "after")],
        binning="adaptive", bin_size="auto", n_bins=15, debias=True,
    )  # fmt: skip
    # The interval is compare's, bias-corrected: it may leave the difference shown out.
    note = difference_note(summary["difference"])
    if note is not None:
        summary["difference_note"] = note
    return summary


def _plot(path: Path, summary: dict[str, Any]) -> Path:
    from calib_metrics import plot
    from calib_metrics.predictions import save_figure

    fig, axes = _subplots()
    # One x axis for both: "before" alone had gone logit (its scores piled at the ends)
    # beside a linear "after", whose shapes and count bars then read unlike.
    shared = plot.shared_x_axis([summary[which]["result"] for which in ("before", "after")])
    for index, (ax, which) in enumerate(zip(axes, ("before", "after"), strict=True)):
        plot.reliability_diagram(
            summary[which]["result"],
            ax,
            title=shared.title(f"{which} ({summary['method']})", index),
            confidence=summary["confidence"],
            interval=summary[which]["interval"],
            debias=True,
            xscale=shared.xscale,
            logit_range=shared.logit_range,
        )
    save_figure(fig, path, "--plot", dpi=120, bbox_inches="tight")
    return path


def _subplots():
    from matplotlib.figure import Figure

    # Constrained: each panel's right-hand count label had run into the next panel's y label.
    fig = Figure(figsize=(10, 4.5), layout="constrained")
    return fig, fig.subplots(1, 2)


def _print(summary: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        from calib_metrics.predictions import to_jsonable
        from calib_metrics.report import p_value_or_none

        clean = dict(summary)
        d = summary["difference"]
        clean["difference"] = d | {"p_value_text": p_value_or_none(d["p_value"], d["n_samples"])}
        for which in ("before", "after"):
            clean[which] = {k: v for k, v in summary[which].items() if k != "result"}
        print(json.dumps(to_jsonable(clean), indent=2))
        return
    from calib_metrics.report import fixed, no_interval, p_value_phrase, untested_phrase
    from calib_metrics.wording import counted, level_text, visible_controls

    pct = level_text(args.confidence)
    units = "pairs" if args.groups is None else "groups"
    dev, test = (visible_controls(str(summary[key])) for key in ("dev", "test"))
    extra = f" (T = {summary['temperature']:.4f})" if "temperature" in summary else ""
    print(f"fitted {summary['method']}{extra} on {dev}: {counted(summary['n_dev'], 'pair')}")
    # The intervals' kind (evaluate's of the same file are normal, of 10,000 draws): each
    # error's from its own bootstrap, the difference's from one paired one.
    draws = summary["difference"]["n_samples"]
    print(f"test {test}: {counted(summary['n_test'], 'pair')}; CalibErr debiased, auto bins, "
          f"{pct} percentile intervals of {draws} bootstrap draws over {units} (the "
          "difference's paired)")  # fmt: skip
    for which in ("before", "after"):
        s = summary[which]
        missing = no_interval(s["lower"], s["upper"], units)
        interval = f" [{missing}]" if missing else f" [{s['lower']:.4f}, {s['upper']:.4f}]"
        ruled_out = s["labels_at_probability_0"]
        nll = (
            f"inf ({counted(ruled_out, 'label')} at probability 0)"
            if ruled_out
            else f"{s['nll']:.4f}"
        )
        print(
            f"  {which:6s} CalibErr {s['calib_err']:.4f}{interval}"
            f"  accuracy {s['accuracy']:.4f}  NLL {nll}  Brier {s['brier']:.4f}"
        )
    d = summary["difference"]
    if d["p_value"] != d["p_value"]:  # NaN: too few units to resample, as compare says it
        tested = f", {untested_phrase(units)}"
    else:
        tested = (
            f" [{fixed(d['lower'], sign='+')}, {fixed(d['upper'], sign='+')}] "
            f"paired, {p_value_phrase(d['p_value'], d['n_samples'])}"
        )
    print(f"  before - after {fixed(d['difference'], sign='+')}{tested}")
    if "difference_note" in summary:
        print(f"  note: {summary['difference_note']}")
    print(f"recalibrated test probabilities: {visible_controls(str(summary['out']))}")
