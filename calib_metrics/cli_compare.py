"""``calib-metrics compare a.csv b.csv``: two models on the same items, a paired interval.

Reads model a's and model b's (probability, label[, group]) files with the CLI's reader —
or two probability columns of one file (``compare preds.csv --probs q_a --probs-b q_b``) —
checks that both hold the same labels in the same order, and prints both calibration
errors, the difference a − b with its paired interval and the two-sided p-value of "no
difference" (:func:`calib_metrics.functional.compare_calibration`).
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
    p.add_argument("--samples", type=int, default=2000, help="paired bootstrap draws")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--html", type=Path,
        help="write a self-contained HTML report here (both models, the difference, diagrams, "
        "bins, settings; its folder must exist)",
    )  # fmt: skip
    p.add_argument(
        "--label", help="column (of a's file) naming each item's label: adds a paired "
        "comparison per label",
    )  # fmt: skip
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

    from calib_metrics import cli_report
    from calib_metrics.functional import compare_calibration
    from calib_metrics.predictions import check_output_path

    check_output_path(args.html, "--html")
    if args.samples < 2:
        raise ValueError(f"--samples must be at least 2, got {args.samples}")
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must lie in (0, 1), got {args.confidence}")
    a, b = _read_both(args)
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
        "samples": args.samples,
    }
    per_label = cli_report.compare_per_label(args, a, b)
    if per_label is not None:
        summary["per_label"] = {
            k: {"n": c.a.bins.count.sum().item(), "difference": float(c.difference),
                "lower": float(c.lower), "upper": float(c.upper), "p_value": float(c.p_value)}
            for k, c in per_label.items()
        }  # fmt: skip
    if args.html:
        summary["html"] = cli_report.write_compare(args, summary, result, a, b, per_label)
    _print(summary, args)
    return summary


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
    for k, r in summary.get("per_label", {}).items():
        print(f"    {k}: a - b = {r['difference']:+.4f} [{r['lower']:+.4f}, {r['upper']:+.4f}], "
              f"p = {r['p_value']:.3g}, {r['n']:g} items")  # fmt: skip
    if "html" in summary:
        print(f"HTML report: {summary['html']}")
