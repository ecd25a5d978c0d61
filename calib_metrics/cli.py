"""The ``calib-metrics`` command: evaluate a file of predictions, run the demo, reproduce.

Every problem with the input ends in one line on stderr and exit code 2, never a
traceback.

This is the only library module that imports :mod:`calib_metrics.paper`, and only
inside the functions that build and run ``demo`` and ``reproduce``: ``evaluate``
never loads the paper's readers and experiments.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_USAGE = 2


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="calibration of a file of (probability, label) pairs",
        description="Reads CSV/TSV (with a header), JSON lines, .npy, .npz or .pt and prints "
        "N, the bins, CalibErr with its interval, and the Brier score split. For an interval "
        "that means what it says use --debias --interval pairs --bin-size auto, or "
        "--interval groups when pairs come in sentences or documents (docs/coverage.md).",
    )
    p.add_argument("file", type=Path)
    p.add_argument("--probs", help="column (or array) of probabilities (default: by name)")
    p.add_argument("--target", help="column (or array) of 0/1 labels (default: by name)")
    p.add_argument(
        "--bin-size", type=_bin_size, default=5000, help="adaptive bin size β, or 'auto' (⌈√N⌉)"
    )
    p.add_argument("--binning", choices=["adaptive", "uniform"], default="adaptive")
    p.add_argument("--n-bins", type=int, default=15, help="bins of uniform binning")
    p.add_argument("--norm", choices=["l2", "l1", "max"], default="l2")
    p.add_argument("--samples", type=int, default=10000, help="interval draws S")
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--method", choices=["normal", "percentile"], default="normal")
    p.add_argument("--debias", action="store_true", help="debiased squared gaps (l2)")
    p.add_argument(
        "--interval",
        choices=["paper", "pairs", "groups"],
        default="paper",
        help="Algorithm 2 (paper), the bootstrap over pairs, or over groups of pairs "
        "(sentences, documents: needs a group column) (see docs/coverage.md)",
    )
    p.add_argument(
        "--groups",
        help="column of group ids for --interval groups (default: by name, e.g. sentence_id)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", type=Path, help="write a reliability diagram PNG here")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def _bin_size(text: str) -> int | str:
    """``--bin-size``: a positive integer or ``auto``."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer or 'auto', got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}")
    return value


def evaluate(args: argparse.Namespace) -> dict:
    import torch

    from calib_metrics.functional import brier_decomposition, calibration_error_ci
    from calib_metrics.predictions import read_table, to_jsonable

    if args.groups is not None and args.interval != "groups":
        raise ValueError(
            f"--groups is used by --interval groups only (got --interval {args.interval})"
        )
    wanted_groups = (args.groups or "") if args.interval == "groups" else None
    probs, target, groups = read_table(args.file, args.probs, args.target, wanted_groups)
    g = torch.Generator().manual_seed(args.seed)
    options = {"bin_size": args.bin_size, "binning": args.binning, "n_bins": args.n_bins}
    result = calibration_error_ci(
        probs,
        target,
        n_samples=args.samples,
        confidence=args.confidence,
        generator=g,
        method=args.method,
        norm=args.norm,
        debias=args.debias,
        interval=args.interval,
        groups=groups,
        **options,
    )
    brier = brier_decomposition(probs, target, **options)
    summary = {
        "file": str(args.file),
        "n": probs.numel(),
        "bins": len(result.bins.count),
        "binning": args.binning,
        "bin_size": args.bin_size,
        "norm": args.norm,
        "confidence": args.confidence,
        "method": args.method,
        "debias": args.debias,
        "interval": args.interval,
        "groups": None if groups is None else int(groups.max()) + 1,
        "calib_err": result.error,
        "mean": result.mean,
        "std": result.std,
        "lower": result.lower,
        "upper": result.upper,
        "brier": brier.brier,
        "calibration": brier.calibration,
        "refinement": brier.refinement,
        "within_bin": brier.within_bin,
    }
    if args.plot:
        from calib_metrics.plot import reliability_diagram

        fig, _ = reliability_diagram(result, title=Path(args.file).name)
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=120)
        summary["plot"] = str(args.plot)
    if args.json:
        print(json.dumps(to_jsonable(summary), indent=2))
    else:
        pct = f"{args.confidence:.0%}"
        in_groups = "" if groups is None else f" in {summary['groups']} groups"
        print(
            f"{args.file}: N = {summary['n']} pairs{in_groups}, "
            f"{summary['bins']} {args.binning} bins"
        )
        print(
            f"CalibErr ({args.norm}{', debiased' if args.debias else ''}) = "
            f"{result.error.item():.4f}  {pct} interval [{result.lower.item():.4f}, "
            f"{result.upper.item():.4f}] ({args.interval} {args.method}, {args.samples} draws)"
        )
        print(
            f"Brier = {brier.brier.item():.4f} = calibration {brier.calibration.item():.4f}"
            f" + refinement {brier.refinement.item():.4f}"
            f" + within-bin {brier.within_bin.item():.4f}"
        )
        if args.plot:
            print(f"reliability diagram: {args.plot}")
    return summary


def _experiment(name: str):
    from calib_metrics.paper import EXPERIMENTS

    return importlib.import_module(EXPERIMENTS[name])


PAPER_COMMANDS = {
    "demo": "the thesis' synthetic calibration study (no data set needed)",
    "reproduce": "run one of the paper's experiments",
}


def _add_paper_commands(sub: argparse._SubParsersAction) -> None:
    """``demo`` and ``reproduce``, whose options come from the paper's modules."""
    from calib_metrics.paper import EXPERIMENTS, demo

    demo_parser = sub.add_parser("demo", help=demo.DESCRIPTION, description=demo.__doc__)
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
        exp_parser = experiments.add_parser(name, help=module.DESCRIPTION)
        module.add_arguments(exp_parser)


def build_parser(paper: bool = True) -> argparse.ArgumentParser:
    """The command's parser; with ``paper=False`` ``demo``/``reproduce`` are listed only.

    Example:
        >>> build_parser(paper=False).parse_args(["evaluate", "preds.csv"]).command
        'evaluate'
    """
    parser = argparse.ArgumentParser(
        prog="calib-metrics",
        description="Posterior calibration analysis (Nguyen & O'Connor, EMNLP 2015).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_evaluate(sub)
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
    _experiment(args.experiment).run(args)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(paper=_wants_paper(argv))
    args = parser.parse_args(argv)
    try:
        if args.command == "evaluate":
            evaluate(args)
        else:
            _run_paper_command(args)
    except (ValueError, FileNotFoundError, ImportError) as err:
        print(f"calib-metrics: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("calib-metrics: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
