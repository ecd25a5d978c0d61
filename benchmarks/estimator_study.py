"""Estimators against the truth as N grows: the paper's, the debiased, and the smooth ECE.

Synthetic pairs of the thesis' §4.3 (q ~ Beta(a, b), y ~ Bernoulli(t_k(q))), so every
estimator's target is known:

* ``paper`` (Algorithm 1: ``bin_size=5000, debias=False``) and ``debiased``
  (``bin_size="auto", debias=True``, the library's default) estimate the RMS error
  sqrt(E[(q − t_k(q))²]), computed by numerical integration;
* ``smooth`` (Błasiok & Nakkiran's smooth ECE at its automatic bandwidth) estimates
  its own population value, which is not the RMS error: it is an l1-type distance
  to calibration, smoothed. That value is computed here by feeding the integration
  grid, weighted by the Beta density, to the histogram path of the smooth ECE
  (:func:`calib_metrics.functional.smooth_calibration_from_histogram`).

For each setting, N ∈ {10³, …, 10⁶} and repetition the script draws fresh pairs and
prints the truth, the mean estimate, its bias and RMSE.

Run ``python benchmarks/estimator_study.py`` (``--quick`` for N ≤ 10⁴ and few reps).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calib_metrics.experiments.synthetic import (
    miscalibrate,
    sample_pairs,
    true_calibration_error,
)
from calib_metrics.functional import (
    calibration_error,
    smooth_calibration_error,
    smooth_calibration_from_histogram,
)

SETTINGS = [  # (name, Beta a, Beta b, miscalibration k)
    ("calibrated, Beta(0.3, 0.3)", 0.3, 0.3, 0.0),
    ("k=0.05, Beta(0.3, 0.3)", 0.3, 0.3, 0.05),
    ("k=0.1, Beta(2, 5)", 2.0, 5.0, 0.1),
]
SIZES = (1_000, 10_000, 100_000, 1_000_000)
ESTIMATORS = {
    "paper": lambda q, y: calibration_error(q, y, bin_size=5000, debias=False),
    "debiased": lambda q, y: calibration_error(q, y, bin_size="auto", debias=True),
    "smooth": lambda q, y: smooth_calibration_error(q, y),
}


def true_smooth_error(a: float, b: float, k: float, points: int = 400_001) -> float:
    """The population smooth ECE: the Beta density on a logit grid as a histogram."""
    u = torch.linspace(-60, 60, points, dtype=torch.float64)
    q = torch.sigmoid(u)
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    log_weight = a * torch.nn.functional.logsigmoid(u) + b * torch.nn.functional.logsigmoid(-u)
    weight = torch.exp(log_weight - log_beta) * (u[1] - u[0])
    weight[[0, -1]] /= 2  # trapezoid rule
    return smooth_calibration_from_histogram(q, weight, weight * miscalibrate(q, k)).item()


def repetitions(n: int, reps: int) -> int:
    return reps if n <= 10_000 else max(10, reps * 30_000 // n)


def study(sizes=SIZES, reps: int = 100, seed: int = 0) -> list[dict]:
    """One row per (setting, N, estimator): truth, mean, bias and RMSE over repetitions."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for name, a, b, k in SETTINGS:
        truth = {"rms": true_calibration_error(a, b, k), "smooth": true_smooth_error(a, b, k)}
        for n in sizes:
            count = repetitions(n, reps)
            values = {key: torch.empty(count, dtype=torch.float64) for key in ESTIMATORS}
            for r in range(count):
                q, y = sample_pairs(n, a, b, k, generator=g, dtype=torch.float64)
                for key, estimator in ESTIMATORS.items():
                    values[key][r] = estimator(q, y)
            for key, v in values.items():
                target = truth["smooth" if key == "smooth" else "rms"]
                error = v - target
                rows.append(
                    {
                        "setting": name,
                        "n": n,
                        "reps": count,
                        "estimator": key,
                        "truth": target,
                        "mean": v.mean().item(),
                        "bias": error.mean().item(),
                        "rmse": error.square().mean().sqrt().item(),
                    }
                )
    return rows


def render(rows: list[dict]) -> str:
    lines = [
        "| setting | N | reps | estimator | truth | mean | bias | RMSE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['setting']} | {r['n']:,} | {r['reps']} | {r['estimator']} | "
            f"{r['truth']:.4f} | {r['mean']:.4f} | {r['bias']:+.4f} | {r['rmse']:.4f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=100, help="repetitions at N ≤ 1e4")
    p.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
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
