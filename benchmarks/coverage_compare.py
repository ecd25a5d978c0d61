"""Coverage of compare_calibration's paired interval, and its test's size, by simulation.

    python benchmarks/coverage_compare.py --reps 200 --sizes 10000 100000 [--write]

Two synthetic models score the same items, q ~ U(0, 1), y ~ Bernoulli(q), independent
labels. Each model's prediction is a known map of q, so its true calibration error is
sqrt(∫ (map(q) − q)² dq) (the labels' frequency given the prediction is q) and the true
difference is known:

* ``unequal``: a = min(q + 0.05, 1) against the calibrated b = q;
* ``equal``: a = min(q + 0.05, 1) against b = max(q − 0.05, 0): equal true errors by
  symmetry, so the difference is 0 and every p < α is a false positive;
* ``both calibrated``: a = q against b = q rounded to the mean of its tenth (still
  calibrated); true errors 0 and 0.

Reported per setting: coverage of the 95% interval of the difference (the truth inside
[lower, upper]), the rejection rate of "no difference" at α = 0.05, and the mean width.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

from calib_metrics.functional import compare_calibration

SHIFT = 0.05


def _true_error(shift: float) -> float:
    """sqrt(∫₀¹ (clamp(q + shift) − q)² dq), in closed form for |shift| < 1."""
    s = abs(shift)
    return math.sqrt(s**2 * (1 - s) + s**3 / 3)


SETTINGS = {
    "unequal": (lambda q: (q + SHIFT).clamp(max=1), lambda q: q, _true_error(SHIFT)),
    "equal": (lambda q: (q + SHIFT).clamp(max=1), lambda q: (q - SHIFT).clamp(min=0), 0.0),
    "both calibrated": (lambda q: q, lambda q: (torch.floor(q * 10) + 0.5) / 10, 0.0),
}


def run(sizes: list[int], reps: int, draws: int, seed: int) -> list[dict]:
    rows = []
    for name, (model_a, model_b, truth) in SETTINGS.items():
        for n in sizes:
            g = torch.Generator().manual_seed(seed)
            covered = rejected = 0
            width = 0.0
            for _ in range(reps):
                q = torch.rand(n, generator=g, dtype=torch.float64)
                y = torch.bernoulli(q, generator=g)
                r = compare_calibration(model_a(q), model_b(q), y, n_samples=draws, generator=g)
                covered += int(r.lower <= truth <= r.upper)
                rejected += int(r.p_value < 0.05)
                width += float(r.upper - r.lower) / reps
            rows.append(
                {"setting": name, "n": n, "truth": truth, "coverage": covered / reps,
                 "rejection": rejected / reps, "width": width, "reps": reps}
            )  # fmt: skip
            print(_row(rows[-1]), flush=True)
    return rows


def _row(r: dict) -> str:
    return (
        f"| {r['setting']} | {r['n']:,} | {r['truth']:.4f} | {r['coverage']:.3f} | "
        f"{r['rejection']:.3f} | {r['width']:.4f} | {r['reps']} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", type=Path, help="append the markdown table to this file")
    args = parser.parse_args()
    header = (
        "| setting | N | true difference | coverage (95%) | rejection at α = 0.05 | "
        "mean width | reps |\n|---|---|---|---|---|---|---|"
    )
    print(header, flush=True)
    rows = run(args.sizes, args.reps, args.draws, args.seed)
    if args.write:
        with open(args.write, "a") as f:
            f.write("\n" + header + "\n" + "\n".join(_row(r) for r in rows) + "\n")


if __name__ == "__main__":
    main()
