"""``calib-metrics compare a.csv b.csv``: two models on the same items, a paired interval.

Reads model a's and model b's (probability, label[, group]) files with the CLI's reader —
or two probability columns of one file (``compare preds.csv --probs q_a --probs-b q_b``) —
checks that both hold the same labels in the same order, and prints both calibration
errors, the difference a − b with its paired interval and the two-sided p-value of "no
difference" (:func:`calib_metrics.functional.compare_calibration`). With ``--labels COL``
(a column of a's file naming each pair's label: the tag of a one-vs-rest query, say) it
prints one row per label and the counts "a better / b better / not distinguishable" after
Holm's (or, ``--correction bh``, Benjamini–Hochberg's) correction
(:func:`calib_metrics.functional.compare_calibration_by_label`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

DESCRIPTION = "compare two models' calibration on the same items, with a paired interval"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", type=Path, help="model a's predictions")
    p.add_argument("b", type=Path, nargs="?", help="model b's predictions (same items, order)")
    p.add_argument("--probs", help="column of a's probabilities (default: by name)")
    p.add_argument("--probs-b", help="column of b's probabilities (default: --probs, or by name)")
    p.add_argument("--target", help="column of 0/1 labels (default: by name)")
    p.add_argument(
        "--groups", nargs="?", const="", default=None,
        help="resample whole groups: the column's name, or no value to find it by name",
    )  # fmt: skip
    p.add_argument("--labels", help="column (of a's file) of per-pair label ids: per label")
    p.add_argument(
        "--correction", choices=("holm", "bh"),
        help="multiple-comparison correction of --labels: holm (FWER, default) or bh (FDR)",
    )  # fmt: skip
    p.add_argument("--alpha", type=float, help="level of --labels' correction (0.05)")
    p.add_argument("--samples", type=int, default=2000, help="paired bootstrap draws")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def _read_both(args: argparse.Namespace):
    from calib_metrics.predictions import read_table

    a = read_table(args.a, args.probs, args.target, args.groups)
    if args.b is None:
        if not args.probs_b:
            raise ValueError("give model b's file, or --probs-b COLUMN for a second column")
        b = read_table(args.a, args.probs_b, args.target, args.groups)
    else:
        b = read_table(args.b, args.probs_b or args.probs, args.target, None)
    if a.target.shape != b.target.shape or not bool((a.target == b.target).all()):
        raise ValueError(
            f"{args.b or args.a}: the two models must be scored on the same items in the same "
            f"order (labels differ: {a.target.numel()} vs {b.target.numel()} rows)"
        )
    return a, b


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from calib_metrics.functional import compare_calibration

    if args.samples < 2:
        raise ValueError(f"--samples must be at least 2, got {args.samples}")
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must lie in (0, 1), got {args.confidence}")
    if args.labels is None and (args.correction is not None or args.alpha is not None):
        raise ValueError("--correction and --alpha apply to --labels COLUMN only")
    a, b = _read_both(args)
    if args.labels is not None:
        return _run_by_label(args, a, b)
    result = compare_calibration(
        a.probs, b.probs, a.target, groups=a.groups, confidence=args.confidence,
        n_samples=args.samples, generator=torch.Generator().manual_seed(args.seed),
    )  # fmt: skip
    summary = {
        "n": a.target.numel(),
        "resampled": "pairs" if a.groups is None else "groups",
        "confidence": args.confidence,
        **{
            name: {"calib_err": float(r.error), "lower": float(r.lower), "upper": float(r.upper)}
            for name, r in (("a", result.a), ("b", result.b))
        },
        "difference": float(result.difference),
        "lower": float(result.lower),
        "upper": float(result.upper),
        "p_value": float(result.p_value),
    }
    _print(summary, args)
    return summary


def _run_by_label(args: argparse.Namespace, a, b) -> dict[str, Any]:
    import torch

    from calib_metrics.functional import compare_calibration_by_label
    from calib_metrics.predictions import read_ids

    labels, names = read_ids(args.a, args.labels, args.probs, args.target)
    args.correction = args.correction or "holm"
    args.alpha = 0.05 if args.alpha is None else args.alpha
    result = compare_calibration_by_label(
        a.probs, b.probs, a.target, labels, groups=a.groups, correction=args.correction,
        alpha=args.alpha, confidence=args.confidence, n_samples=args.samples,
        generator=torch.Generator().manual_seed(args.seed),
    )  # fmt: skip
    rows = [_label_row(result, i, names[label]) for i, label in enumerate(result.labels.tolist())]
    summary = {
        "n": a.target.numel(),
        "resampled": "pairs" if a.groups is None else "groups",
        "confidence": args.confidence,
        "correction": args.correction,
        "alpha": args.alpha,
        "labels": rows,
        "a_better": result.a_better,
        "b_better": result.b_better,
        "not_distinguishable": result.not_distinguishable,
    }
    _print_by_label(summary, args)
    return summary


def _label_row(result, i: int, name: str) -> dict[str, Any]:
    """One label's numbers: pairs, both errors, the difference, p-values and the verdict."""
    r = result.per_label[i]
    numbers = {"a": r.a.error, "b": r.b.error, "difference": r.difference}
    numbers |= {"lower": r.lower, "upper": r.upper, "p_value": r.p_value}
    numbers["adjusted_p_value"] = result.adjusted_p_value[i]
    return {
        "label": name,
        "n": int(r.a.bins.count.sum().item()),
        **{key: float(value) for key, value in numbers.items()},
        "verdict": {-1: "a", 1: "b", 0: "-"}[int(result.verdict[i])],
    }


def _print_by_label(summary: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    level = f"{100 * summary['confidence']:g}%"
    print(
        f"N = {summary['n']} pairs in {len(summary['labels'])} labels, debiased CalibErr, "
        f"paired bootstrap over {summary['resampled']} ({args.samples} draws) per label"
    )
    width = max(5, *(len(r["label"]) for r in summary["labels"]))
    print(
        f"  {'label':<{width}} {'n':>7} {'a':>7} {'b':>7} {'a - b':>8} "
        f"{'[' + level + ']':>19} {'p':>7} {'p adj':>7}  better"
    )
    for r in summary["labels"]:
        interval = f"[{r['lower']:+.4f}, {r['upper']:+.4f}]"
        print(
            f"  {r['label']:<{width}} {r['n']:>7} {r['a']:>7.4f} {r['b']:>7.4f} "
            f"{r['difference']:>+8.4f} {interval:>19} {r['p_value']:>7.3g} "
            f"{r['adjusted_p_value']:>7.3g}  {r['verdict']}"
        )
    name = {"holm": "Holm (family-wise error)", "bh": "Benjamini-Hochberg (false discovery)"}
    print(
        f"  a better on {summary['a_better']}, b better on {summary['b_better']}, not "
        f"distinguishable on {summary['not_distinguishable']} of {len(summary['labels'])} "
        f"labels ({name[summary['correction']]} at alpha = {summary['alpha']:g})"
    )


def _print(summary: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    level = f"{100 * summary['confidence']:g}%"
    print(f"N = {summary['n']} items, debiased CalibErr, bins of ⌈√N⌉, "
          f"paired bootstrap over {summary['resampled']} ({args.samples} draws)")  # fmt: skip
    for name, path in (("a", args.a), ("b", args.b or f"{args.a} [{args.probs_b}]")):
        r = summary[name]
        print(
            f"  {name}: {path}: {r['calib_err']:.4f} [{level}: {r['lower']:.4f}, {r['upper']:.4f}]"
        )
    print(
        f"  a - b = {summary['difference']:+.4f} [{level}: {summary['lower']:+.4f}, "
        f"{summary['upper']:+.4f}], p = {summary['p_value']:.3g}"
    )
