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

``calib-metrics demo`` prints the table (``--quick``: N ≤ 10⁴, 10 repetitions);
``python benchmarks/estimator_study.py`` runs it alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from calib_metrics.functional import (
    calibration_error,
    smooth_calibration_error,
    smooth_calibration_from_histogram,
)
from calib_metrics.paper.synthetic import (
    miscalibrate,
    sample_pairs,
    true_calibration_error,
)

SETTINGS = [  # (name, Beta a, Beta b, miscalibration k)
    ("calibrated, Beta(0.3, 0.3)", 0.3, 0.3, 0.0),
    ("k=0.05, Beta(0.3, 0.3)", 0.3, 0.3, 0.05),
    ("k=0.1, Beta(2, 5)", 2.0, 5.0, 0.1),
]
SIZES = (1_000, 10_000, 100_000, 1_000_000)
# The paper's bins here, whatever the demo's --bin-size: its table's own β.
PAPER_BIN_SIZE = 5000
# Said above the table: what each estimator's row binned (a reader took the demo's
# --bin-size, which the table above this one uses, for the paper rows' too).
SETTINGS_NOTE = (
    f"paper: plug-in, adaptive bins of {PAPER_BIN_SIZE} pairs (one bin at N = 1000), "
    "whatever --bin-size; debiased: β = ⌈√N⌉; smooth: its automatic bandwidth"
)
ESTIMATORS = {
    "paper": lambda q, y: calibration_error(q, y, bin_size=PAPER_BIN_SIZE, debias=False),
    "debiased": lambda q, y: calibration_error(q, y, bin_size="auto", debias=True),
    "smooth": lambda q, y: smooth_calibration_error(q, y),
}


def true_smooth_error(a: float, b: float, k: float, points: int = 400_001) -> float:
    """The population smooth ECE: the Beta density on a logit grid as a histogram.

    Example:
        >>> round(true_smooth_error(2.0, 5.0, 0.1), 4)
        0.0842
    """
    u = torch.linspace(-60, 60, points, dtype=torch.float64)
    q = torch.sigmoid(u)
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    log_weight = a * torch.nn.functional.logsigmoid(u) + b * torch.nn.functional.logsigmoid(-u)
    weight = torch.exp(log_weight - log_beta) * (u[1] - u[0])
    weight[[0, -1]] /= 2  # trapezoid rule
    return smooth_calibration_from_histogram(q, weight, weight * miscalibrate(q, k)).item()


def demo_options(quick: bool) -> dict:
    """The study's sizes and repetitions in ``calib-metrics demo`` (``--quick``: small)."""
    return {"sizes": (1_000, 10_000), "reps": 10} if quick else {"sizes": SIZES, "reps": 100}


def repetitions(n: int, reps: int) -> int:
    return reps if n <= 10_000 else max(10, reps * 30_000 // n)


def study_steps(sizes=SIZES, reps: int = 100) -> int:
    """The data sets :func:`study` draws: the steps it reports to ``progress``.

    Example:
        >>> study_steps(sizes=(1000, 1_000_000), reps=100)
        330
    """
    return len(SETTINGS) * sum(repetitions(n, reps) for n in sizes)


def study(
    sizes=SIZES, reps: int = 100, seed: int = 0, progress: Callable[[int], object] | None = None
) -> list[dict]:
    """One row per (setting, N, estimator): truth, mean, bias and RMSE over repetitions.

    ``reps`` repetitions at N ≤ 10⁴, fewer above (30 at 10⁵, 10 at 10⁶ for 100).
    ``progress(1)`` is called after each data set (:func:`study_steps` in all).

    Example:
        >>> rows = study(sizes=(1000,), reps=2)
        >>> [r["estimator"] for r in rows[:3]], rows[0]["truth"]
        (['paper', 'debiased', 'smooth'], 0.0)
    """
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
                if progress is not None:
                    progress(1)
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
    """The rows as a markdown table.

    Example:
        >>> row = {"setting": "s", "n": 1000, "reps": 2, "estimator": "paper", "truth": 0.0,
        ...        "mean": 0.01, "bias": 0.01, "rmse": 0.02}
        >>> render([row]).splitlines()[-1]
        '| s | 1,000 | 2 | paper | 0.0000 | 0.0100 | +0.0100 | 0.0200 |'
    """
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
