"""Top-label error of half-precision input on equal-width bins: ours against torchmetrics.

Uniform bins use edges ``linspace(0, 1, n + 1)`` in the input's dtype, as torchmetrics
does for float32, but torchmetrics' ``MulticlassCalibrationError`` casts half-precision
confidences to float32, edges included, so a confidence equal to a float16 (bfloat16)
edge lands in the bin above it here and below it there. This prints how far the two
errors part on one softmax data set, beside a float64 brute force of each rule (the
confidences binned against the half-precision edges, and against float64 ones), and how
many confidences sit exactly on a half-precision edge.

Run ``python benchmarks/half_precision_bins.py``; docs/measures.md quotes its output.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, count
from calib_metrics.functional import calibration_error


def brute_l1(confidence: torch.Tensor, correct: torch.Tensor, edges: torch.Tensor) -> float:
    """The l1 top-label error with bin i = [e_i, e_{i+1}) (the last closed), in float64."""
    index = (torch.bucketize(confidence, edges, right=True) - 1).clamp(0, edges.numel() - 2)
    total = 0.0
    for b in index.unique():
        inside = index == b
        gap = (confidence[inside].mean() - correct[inside].mean()).abs()
        total += float(inside.double().mean() * gap)
    return total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=5000, help="items")
    parser.add_argument("--classes", type=at_least_two, default=7)
    parser.add_argument("--bins", type=at_least_two, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from torchmetrics.classification import MulticlassCalibrationError

    g = torch.Generator().manual_seed(args.seed)
    probs = torch.softmax(2 * torch.randn(args.n, args.classes, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    print(f"N = {args.n} items × {args.classes} classes, {args.bins} bins, l1, top-label\n")
    print("| dtype | ours | torchmetrics | brute, edges in dtype | brute, float64 edges "
          "| confidences on an edge |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for dtype in (torch.float16, torch.bfloat16):
        half = probs.to(dtype)
        confidence, predicted = half.max(-1)
        correct = (predicted == target).double()
        edges = torch.linspace(0, 1, args.bins + 1, dtype=dtype)
        options = {"mode": "top_label", "binning": "uniform", "n_bins": args.bins}
        ours = calibration_error(half, target, norm="l1", debias=False, **options)
        peer = MulticlassCalibrationError(args.classes, n_bins=args.bins, norm="l1")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = peer(half, target)
        in_dtype = brute_l1(confidence.double(), correct, edges.double())
        in_64 = brute_l1(confidence.double(), correct, torch.linspace(0, 1, args.bins + 1).double())
        on_edge = int((confidence[:, None] == edges).any(-1).sum())
        print(
            f"| {str(dtype).removeprefix('torch.')} | {float(ours):.5f} | {float(theirs):.5f} "
            f"| {in_dtype:.5f} | {in_64:.5f} | {on_edge} |"
        )


if __name__ == "__main__":
    main()
