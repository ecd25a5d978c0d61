"""Coverage of one model's interval on multiclass input read one-vs-rest, by C.

Each item of C classes gives C one-vs-rest pairs whose labels are dependent: exactly
one is 1 (with C = 2 the two pairs are (q, y) and its mirror (1 − q, 1 − y), one
observation). The pair bootstrap had drawn them one by one. Since 2026-12-03
``calibration_error_ci`` and ``CalibrationError`` draw two classes' pairs item by item
(``calib_metrics.functional.multiclass.resamples_items``), and warn that three classes'
are drawn apart (their item bootstrap costs items × draws). The data are
``benchmarks/coverage.py``'s ovr variant (π ~ Dirichlet(α·1_C), every class scored
σ(s_k·logit π_c), true error known by quadrature); the arms are

- ``items``: the item bootstrap, an item's pairs drawn together and the error debiased
  as pairs (``item_pairs_interval`` of the flat pairs; the default for two classes);
- ``pairs apart``: the same pairs flattened (``probs.reshape(-1)`` with one-hot labels),
  which the pair bootstrap draws one by one (the default from three classes on);
- ``groups``: ``groups=torch.arange(N)`` (the group bootstrap over items: observed
  gaps, cluster-robust debias);
- ``binary`` (C = 2 only): class 1's column alone (``probs[:, 1]``,
  ``class_ids == 1``), whose true error is the same (class 1's marginal is
  Beta(α, α), as class 0's).

Run ``python benchmarks/ovr_item_coverage.py``; docs/coverage.md quotes its output.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, count, number
from benchmarks._record import command_line, load_average
from benchmarks.coverage import draw_data, ovr_true_error, predictions
from calib_metrics.functional import calibration_error_ci
from calib_metrics.functional.calibration import item_pairs_interval

ARMS = ("items", "pairs apart", "groups", "binary")


def arm_inputs(probs: torch.Tensor, classes: torch.Tensor, arm: str) -> dict | None:
    """``calibration_error_ci``'s inputs for one arm (see the module docstring)."""
    one_hot = torch.nn.functional.one_hot(classes, probs.shape[1])
    if arm == "items":
        flat = {"probs": probs.reshape(-1), "target": one_hot.reshape(-1)}
        return flat | {"pairs_per_item": probs.shape[1]}
    if arm == "pairs apart":
        return {"probs": probs.reshape(-1), "target": one_hot.reshape(-1)}
    if arm == "groups":
        return {"probs": probs, "target": classes, "groups": torch.arange(classes.numel())}
    if probs.shape[1] != 2:
        return None
    return {"probs": probs[:, 1], "target": (classes == 1).long()}


def run(n: int, n_classes: int, k: float, args) -> dict[str, tuple[float, float] | None]:
    """Each arm's (coverage of the true error, mean width) over ``args.reps`` data sets
    of ``n`` items (None: the arm does not apply)."""
    g = torch.Generator().manual_seed(args.seed + 7 * n + 31 * n_classes + int(1000 * k))
    setting = SimpleNamespace(classes=n_classes, alpha=args.alpha)
    truth = ovr_true_error(args.alpha, n_classes, k)
    covered = dict.fromkeys(ARMS, 0)
    width = dict.fromkeys(ARMS, 0.0)
    for r in range(args.reps):
        pi, y, _ = draw_data(n_classes * n, setting, "ovr", g)
        probs = predictions(pi, k, "ovr").reshape(n, n_classes)
        classes = y.reshape(n, n_classes).argmax(dim=1)
        for arm in ARMS:
            inputs = arm_inputs(probs, classes, arm)
            if inputs is None:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # rows off 1 (C > 2), zero-width notes
                interval = item_pairs_interval if arm == "items" else calibration_error_ci
                result = interval(
                    **inputs, n_samples=args.samples, generator=torch.Generator().manual_seed(r)
                )
            covered[arm] += float(result.lower) <= truth <= float(result.upper)
            width[arm] += float(result.upper - result.lower)
    applies = {arm: arm != "binary" or n_classes == 2 for arm in ARMS}
    return {
        arm: (covered[arm] / args.reps, width[arm] / args.reps) if applies[arm] else None
        for arm in ARMS
    }


def _cell(value: tuple[float, float] | None) -> str:
    return "–" if value is None else f"{value[0]:.3f} ({value[1]:.4f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classes", type=at_least_two, nargs="+", default=[2, 3, 5, 10])
    parser.add_argument("--sizes", type=count, nargs="+", default=[1000, 5000])
    parser.add_argument(
        "--ks", type=number(0, 1), nargs="+", default=[0.0, 0.05, 0.1],
        help="miscalibration k: temperature 1 + 5k (0: calibrated)",
    )  # fmt: skip
    parser.add_argument("--reps", type=count, default=200)
    parser.add_argument("--samples", type=at_least_two, default=400)
    parser.add_argument(
        "--alpha", type=number(0, above=True), default=0.2, help="Dirichlet(α·1_C) of π"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print(f"$ {command_line('ovr_item_coverage.py')}  (load {load_average():.1f})\n")
    print(
        f"One-vs-rest, N items of C classes; {args.reps} data sets a cell, {args.samples} "
        "draws, 95% normal form, β auto; coverage of the true error (mean width)\n"
    )
    print("| C | k | true error | N items | " + " | ".join(ARMS) + " |")
    print("|---|---|---|---|" + "---|" * len(ARMS))
    for n_classes in args.classes:
        for k in args.ks:
            truth = ovr_true_error(args.alpha, n_classes, k)
            for n in args.sizes:
                cells = run(n, n_classes, k, args)
                shown = " | ".join(_cell(cell) for cell in cells.values())
                print(f"| {n_classes} | {k} | {truth:.4f} | {n:,} | {shown} |", flush=True)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
