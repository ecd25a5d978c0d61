"""Estimators against the truth as N grows (see :mod:`calib_metrics.paper.estimators`).

Run ``python benchmarks/estimator_study.py`` (``--quick`` for N ≤ 10⁴ and 10 repetitions);
``calib-metrics demo`` prints the same table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import count
from calib_metrics.paper.estimators import SIZES, render, study


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=count, default=100, help="repetitions at N ≤ 1e4")
    p.add_argument("--sizes", type=count, nargs="*", default=list(SIZES))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="N ≤ 1e4, 10 repetitions")
    args = p.parse_args(argv)
    sizes = [s for s in args.sizes if s <= 10_000] if args.quick else args.sizes
    reps = min(args.reps, 10) if args.quick else args.reps
    torch.set_num_threads(1)
    start = time.perf_counter()
    print(render(study(sizes, reps, args.seed)))
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
