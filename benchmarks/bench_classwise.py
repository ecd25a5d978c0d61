"""The classwise mode's cost grows with the number of classes, not of pairs: it bins each
class's N pairs apart (one adaptive binning a class, a fixed cost of many small torch
operations). Timed beside one-vs-rest (the same N·C pairs, binned once) and top-label
(N pairs), in the same process, as C grows at a fixed N and as N grows at a fixed C.

Run ``python benchmarks/bench_classwise.py [--repeats 3] [--threads 1]``; docs/measures.md
quotes it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._args import count
from calib_metrics.functional import calibration_error

SHAPES = [(20, 100), (20, 1000), (20, 5000), (1000, 100), (10000, 100)]


def seconds(probs: torch.Tensor, target: torch.Tensor, mode: str, repeats: int) -> float:
    """Median seconds of ``calibration_error(probs, target, mode=mode)``."""
    calibration_error(probs, target, mode=mode)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        calibration_error(probs, target, mode=mode)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=count, default=3)
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    columns = "N | C | classwise s | ms per class | one-vs-rest s | top-label s | × one-vs-rest"
    print(f"| {columns} |")
    print("|---|---|---|---|---|---|---|")
    for n, c in SHAPES:
        probs = (3 * torch.randn(n, c, generator=generator)).softmax(-1)
        target = torch.randint(0, c, (n,), generator=generator)
        each = {
            m: seconds(probs, target, m, args.repeats)
            for m in ("classwise", "one_vs_rest", "top_label")
        }
        print(
            f"| {n:,} | {c:,} | {each['classwise']:.3f} | {1000 * each['classwise'] / c:.2f} | "
            f"{each['one_vs_rest']:.3f} | {each['top_label']:.4f} | "
            f"{each['classwise'] / each['one_vs_rest']:.0f} |"
        )


if __name__ == "__main__":
    main()
