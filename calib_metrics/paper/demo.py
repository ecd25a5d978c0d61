"""``calib-metrics demo``: the thesis' synthetic study (§4.3), on no data set at all.

Calibrated and miscalibrated predictions (q ~ Beta, y ~ Bernoulli(t_k(q))) whose true
calibration error is known: the table of CalibErr with intervals against the truth,
reliability diagrams, and the error against bin size and against sample size (thesis
Figures 4.7–4.11).
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from tqdm import tqdm

from calib_metrics.cli import output_folder_path
from calib_metrics.few_bins import warn_if_few_adaptive_bins
from calib_metrics.functional import brier_decomposition, calibration_error_ci
from calib_metrics.paper import estimators, options, report
from calib_metrics.paper.synthetic import sample_pairs, true_calibration_error
from calib_metrics.predictions import check_figure_path, save_figure

DESCRIPTION = "the thesis' synthetic calibration study (no data set needed)"

SETTINGS = [  # (name, Beta a, Beta b, miscalibration k)
    ("calibrated, Beta(0.3, 0.3)", 0.3, 0.3, 0.0),
    ("k=0.05, Beta(0.3, 0.3)", 0.3, 0.3, 0.05),
    ("k=0.1, Beta(0.3, 0.3)", 0.3, 0.3, 0.1),
    ("calibrated, Beta(2, 5)", 2.0, 5.0, 0.0),
    ("k=0.1, Beta(2, 5)", 2.0, 5.0, 0.1),
]


#: The demo's progress bar: steps done and time spent, no estimate of the time left.
DEMO_BAR = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} steps [{elapsed} so far]"
#: Its line in a log (stderr a file or a pipe), at every tenth of the steps.
DEMO_LINE = "{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} steps [{elapsed} so far]"


def _progress(total: int):
    """The demo's progress: tqdm's bar on a terminal; in a log, lines (:class:`_LogProgress`;
    the bar redraws its line with carriage returns, which a log file had kept as dozens of
    fragments on one line)."""
    if sys.stderr.isatty():
        return tqdm(total=total, desc="demo", leave=False, bar_format=DEMO_BAR)
    return _LogProgress(total)


class _LogProgress:
    """A line on stderr at the start, at every tenth of ``total`` steps, and after any step
    that ends :data:`HEARTBEAT` seconds or more after the last line (:data:`DEMO_LINE`): the
    first steps are the heaviest, and a log had stayed empty for 9.5 minutes under load
    before its first tenth."""

    #: Seconds after which a finished step prints a line, tenth or not.
    HEARTBEAT = 30.0

    def __init__(self, total: int, clock: Callable[[], float] = time.perf_counter) -> None:
        self.total, self.n, self._tenths = total, 0, 0
        self._clock = clock
        self._start = self._last = clock()
        self._print()

    def update(self, n: int = 1) -> None:
        self.n += n
        tenths = self.n * 10 // max(self.total, 1)
        if tenths > self._tenths or self._clock() - self._last >= self.HEARTBEAT:
            self._tenths = max(tenths, self._tenths)
            self._print()

    def _print(self) -> None:
        self._last = self._clock()
        line = tqdm.format_meter(
            self.n, self.total, self._last - self._start, prefix="demo", bar_format=DEMO_LINE
        )
        print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        """Nothing to clear: the lines stay, as a log's do."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_out(parser, "demo")
    parser.add_argument(
        "--n", type=int, default=None, help=options.quick_help("pairs per setting", SIZES, "n")
    )
    parser.add_argument(
        "--bin-size",
        type=int,
        default=None,
        help=options.quick_help("adaptive bin size β of the paper's estimator", SIZES, "bin_size"),
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=None,
        help=options.quick_help("interval draws", SIZES, "samples"),
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the synthetic pairs and the interval draws"
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"small sizes, for tests ({options.QUICK_WINS})"
    )
    parser.add_argument(
        "--img",
        type=output_folder_path,
        default=None,
        help="also write the figures there as demo_<name>.png (docs/img: the README's)",
    )


def _save(fig, path: Path) -> str:
    save_figure(fig, path, "--out", dpi=110)
    return path.name


# The paper's estimator, passed explicitly so that the library's defaults can move.
PAPER = {"debias": False, "interval": "paper"}


def _setting_row(name: str, a: float, b: float, k: float, n: int, bin_size: int, samples: int, g):
    """One synthetic setting: the paper's CalibErr, the recommended one, and the truth."""
    q, y = sample_pairs(n, a, b, k, generator=g)
    res = calibration_error_ci(q, y, bin_size=bin_size, n_samples=samples, generator=g, **PAPER)
    brier = brier_decomposition(q, y, bin_size=bin_size)
    # The recommended estimator and interval (docs/coverage.md) beside the paper's.
    fair = calibration_error_ci(
        q, y, bin_size="auto", debias=True, interval="pairs", n_samples=samples, generator=g
    )
    truth = true_calibration_error(a, b, k)
    result = {
        "name": name,
        "a": a,
        "b": b,
        "k": k,
        "true_error": truth,
        "error": res.error,
        "mean": res.mean,
        "std": res.std,
        "lower": res.lower,
        "upper": res.upper,
        "bins": len(res.bins.count),
        "debiased": fair.error,
        "debiased_lower": fair.lower,
        "debiased_upper": fair.upper,
        "brier": brier.brier,
        "calibration": brier.calibration,
        "refinement": brier.refinement,
    }
    row = [
        name,
        f"{truth:.4f}",
        # Algorithm 2 draws normal values per bin, resampling no pairs.
        report.format_interval(
            res.error.item(), res.lower.item(), res.upper.item(), units="pairs", resampled=False
        ),
        report.format_interval(
            fair.error.item(), fair.lower.item(), fair.upper.item(), units="pairs"
        ),
        brier.brier.item(),
        brier.refinement.item(),
    ]
    return result, row, (res, q, y)


def _settings(n: int, bin_size: int, samples: int, g, bar, out: Path):
    """Every setting's row, and the reliability diagrams of the Beta(0.3, 0.3) ones: the
    paper's bins and interval, with the smooth curve and its band (drawn from a
    generator of their own, so that the tables' numbers do not move with it)."""
    from matplotlib.figure import Figure

    from calib_metrics import plot
    from calib_metrics.functional import smooth_reliability_curve

    settings, table, shown = [], [], []
    for name, a, b, k in SETTINGS:
        result, row, res = _setting_row(name, a, b, k, n, bin_size, samples, g)
        settings.append(result)
        table.append(row)
        if a == 0.3:
            shown.append((name, res))
        bar.update()
    fig = Figure(figsize=(4.2 * len(shown), 4.8), layout="constrained")
    shared = plot.shared_x_axis([res for _, (res, _, _) in shown])  # side by side: one x axis
    for i, (name, (res, q, y)) in enumerate(shown):
        ax = fig.add_subplot(1, len(shown), i + 1)
        curve = smooth_reliability_curve(q, y, generator=torch.Generator().manual_seed(i))
        plot.reliability_diagram(
            res, ax, title=shared.title(name, i), interval="paper",
            debias=False, smooth=curve, xscale=shared.xscale, logit_range=shared.logit_range,
        )  # fmt: skip
    return settings, table, _save(fig, out / "reliability.png")


def _plot_curves(x, curves: dict, ax=None, **style):
    """One error curve with its band per label, on one axis (the bands are PAPER's)."""
    from calib_metrics import plot

    fig = None
    style["band"] = plot.interval_label(0.95, PAPER["interval"], PAPER["debias"])
    for label, res in curves.items():
        fig, ax = plot.error_curve(
            x,
            [r.error for r in res],
            [r.lower for r in res],
            [r.upper for r in res],
            ax=ax,
            logx=True,
            label=label,
            **style,
        )
        style.pop("title", None)
        style.pop("band", None)  # named once: every band is the same kind
    ax.axhline(true_calibration_error(0.3, 0.3, 0.1), color="0.5", linestyle=":", linewidth=1)
    return fig


def _bin_size_curve(quick: bool, g, bar, out: Path) -> tuple[dict, str]:
    """Error against bin size on 10^5 pairs (thesis Fig. 4.7 log scale; 4.8/4.9 linear)."""
    m = 100_000 if not quick else 20_000
    sizes = [2**e for e in range(1, 17) if 2**e <= m]
    curves: dict = {}
    for label, k in (("calibrated", 0.0), ("k=0.1", 0.1)):
        q, y = sample_pairs(m, 0.3, 0.3, k, generator=g)
        curves[label] = [
            calibration_error_ci(q, y, bin_size=s, n_samples=200, generator=g, **PAPER)
            for s in sizes
        ]
        bar.update(8)
    truth = true_calibration_error(0.3, 0.3, 0.1)
    labelled = {"calibrated": curves["calibrated"], f"k=0.1 (true {truth:.4f})": curves["k=0.1"]}
    fig = _plot_curves(
        sizes,
        labelled,
        xlabel="bin size β (log scale)",
        title=f"CalibErr against bin size, N={m}, Beta(0.3, 0.3)",
    )
    summary = {"sizes": sizes, **{k: [r.error for r in c] for k, c in curves.items()}}
    return summary, _save(fig, out / "error_vs_bin_size.png")


def _sample_size_curve(quick: bool, g, bar, out: Path) -> tuple[dict, str]:
    """Error against sample size with β = sqrt(N) (thesis Figs. 4.10/4.11)."""
    ns = [int(v) for v in torch.logspace(3, 6 if not quick else 4.5, 12).tolist()]
    curves: dict = {}
    for label, k in (("calibrated", 0.0), ("k=0.1", 0.1)):
        q_all, y_all = sample_pairs(ns[-1], 0.3, 0.3, k, generator=g)
        curves[label] = [
            calibration_error_ci(
                q_all[:size],
                y_all[:size],
                bin_size=max(1, int(math.sqrt(size))),
                n_samples=200,
                generator=g,
                **PAPER,
            )
            for size in ns
        ]
        bar.update(6)
    fig = _plot_curves(
        ns,
        curves,
        xlabel="number of pairs N (β = √N, log scale)",
        title="CalibErr against sample size, Beta(0.3, 0.3)",
    )
    summary = {"n": ns, **{k: [r.error for r in c] for k, c in curves.items()}}
    return summary, _save(fig, out / "error_vs_sample_size.png")


def brier_note(bin_size: int) -> str:
    """The line under the table: why its Brier and refinement need not add up (a calibrated
    row's refinement had exceeded its Brier, by the negative within-bin term it lacks).

    Example:
        >>> brier_note(5000).split(":")[0]
        "Brier = calibration + refinement + within-bin, in the paper's bins of 5000"
    """
    return (
        f"Brier = calibration + refinement + within-bin, in the paper's bins of {bin_size}: "
        "the calibration term (the paper's CalibErr²) and the within-bin term (the spread "
        "of q inside bins, possibly negative) are not shown, so calibration + refinement "
        "need not equal Brier, and refinement may exceed it."
    )


def _write(results: dict, table: list, out: Path) -> None:
    headers = [
        "setting",
        "true CalibErr",
        "paper: CalibErr [95% interval]",
        "debiased, β = √N, pair bootstrap [95%]",
        "Brier",
        "refinement",
    ]
    n, bin_size, samples = results["n"], results["bin_size"], results["samples"]
    # A footnote below the table, whose rows the README quotes as written.
    markdown = f"{report.markdown_table(headers, table)}\n\n{brier_note(bin_size)}"
    report.write_json(out / "results.json", results)
    by_estimator = estimators.render(results["estimators"])
    report.write_text(
        out / "results.md",
        f"N = {n} pairs per setting, bin size {bin_size}, {samples} interval draws.\n\n"
        + markdown
        + "\n\nEstimators against their true values as N grows "
        + f"({estimators.SETTINGS_NOTE}):\n\n{by_estimator}\n",
    )
    print(
        f"Synthetic calibration study (thesis §4.3): N={n}, bin size {bin_size}, "
        f"{samples} interval draws\n"
    )
    print(markdown)
    print(
        "\nPaper, debiased and smooth estimators against the truth "
        f"({estimators.SETTINGS_NOTE}):\n\n{by_estimator}"
    )
    print(
        f"\nwrote {', '.join(results['figures'])}, results.json, results.md to {out} "
        f"in {results['seconds']:.1f} s"
    )


def _copy_figures(names: list[str], out: Path, img: Path) -> None:
    """The figures under ``img`` as ``demo_<name>``, the names docs/img gives them."""
    for name in names:
        shutil.copyfile(out / name, img / f"demo_{name}")
    print(f"copied {', '.join(names)} to {img} as demo_*.png")


# --n, --bin-size and --samples unless given: (full run, --quick).
SIZES = {"n": (1_000_000, 20_000), "bin_size": (5000, 1000), "samples": (10_000, 500)}


def _sizes(args: argparse.Namespace) -> tuple[int, int, int]:
    """--n, --bin-size and --samples: as given (--quick too keeps what the user gave), or
    the full run's or --quick's defaults; refused before any work when too small (an
    interval needs 2 draws) or, for --samples, past the library's most draws, as the
    library says only once the run has started."""
    options.settle(args, SIZES)
    options.check_integers(args, n=1, bin_size=1)
    options.check_draws(args, "samples")
    return args.n, args.bin_size, args.samples


def run(args: argparse.Namespace) -> dict:
    # Said before the long run, which had ended in a raw "[Errno 17] File exists".
    out = report.output_folder(args.out)
    if args.img is not None:
        report.output_folder(args.img, "--img", exists=True)
    # Its .png figures' needs (a LaTeX with text.usetex), said now, not after the run.
    check_figure_path(out / "reliability.png", "--out")
    n, bin_size, samples = _sizes(args)
    out.mkdir(parents=True, exist_ok=True)
    # As evaluate says it: the table's settings are scored in --bin-size bins; said at
    # once, before the minutes of the run (the CLI prints other warnings after it).
    warn_if_few_adaptive_bins(bin_size, n, "pairs of each setting", at_once=True)
    g = torch.Generator().manual_seed(args.seed)
    start = time.perf_counter()
    study_options = estimators.demo_options(args.quick)
    steps = len(SETTINGS) + 16 + 12 + estimators.study_steps(**study_options)
    # No rate or time left: the first steps (10⁶ pairs, 10,000 draws each) take minutes and
    # the last ones milliseconds, and tqdm's estimate from the first had said 8-12 hours.
    bar = _progress(total=steps)
    results: dict = {"n": n, "bin_size": bin_size, "samples": samples}
    try:
        results["settings"], table, reliability = _settings(n, bin_size, samples, g, bar, out)
        results["bin_size_curve"], by_bin_size = _bin_size_curve(args.quick, g, bar, out)
        curve = _sample_size_curve(args.quick, g, bar, out)
        results["sample_size_curve"], by_sample_size = curve
        results["estimators"] = estimators.study(
            **study_options, seed=args.seed, progress=bar.update
        )
    finally:  # the bar's line is cleared before any error is printed on it
        bar.close()
    results["seconds"] = time.perf_counter() - start
    results["figures"] = [reliability, by_bin_size, by_sample_size]
    _write(results, table, out)
    if args.img is not None:
        _copy_figures(results["figures"], out, Path(args.img))
    return results
