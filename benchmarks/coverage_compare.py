"""Coverage of compare_calibration's paired interval, and its test's size, by simulation.

    python benchmarks/coverage_compare.py --reps 300 --sizes 10000 --variants iid grouped \
        --json docs/coverage/compare4.json [--write docs/coverage.md]

Two synthetic models score the same items, q ~ U(0, 1), y ~ Bernoulli(q): independent
labels (``iid``), or (``grouped``) groups of 20 items whose labels share a Gaussian-copula
shift, y = 1 ⟺ Φ(√ρ·Z_g + √(1 − ρ)·ε) < q with ρ = 0.5 (as in ``coverage.py``; marginally
still P(y = 1 | q) = q), compared with ``groups=`` so that whole groups are resampled.
Each model's prediction is a known map of q, so its true calibration error is
sqrt(∫ (map(q) − q)² dq) (the labels' frequency given the prediction is q) and the true
difference is known:

* ``unequal``: a = min(q + 0.05, 1) against the calibrated b = q;
* ``equal``: a = min(q + 0.05, 1) against b = max(q − 0.05, 0): equal true errors by
  symmetry, so the difference is 0 and every p < α is a false positive;
* ``both calibrated``: a = q against b = q rounded to the mean of its tenth (still
  calibrated); true errors 0 and 0;
* ``unequal, b miscalibrated``: a = min(q + 0.08, 1) against b = min(q + 0.03, 1), so
  that neither true error is 0 (run by naming it in ``--settings``).

Reported per setting: coverage of the 95% interval of the difference (the truth inside
[lower, upper]) with its Monte Carlo standard error, the rejection rate of "no
difference" at α = 0.05, and the mean width.
"""

from __future__ import annotations

import argparse
import json
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
    # "unequal" with b off the boundary: whether its over-coverage on grouped labels comes
    # from b's true error being exactly 0 (where a clipped interval over-covers).
    "unequal, b miscalibrated": (
        lambda q: (q + 0.08).clamp(max=1),
        lambda q: (q + 0.03).clamp(max=1),
        _true_error(0.08) - _true_error(0.03),
    ),
}


GROUP_SIZE, RHO = 20, 0.5


def labels(q: torch.Tensor, variant: str, g: torch.Generator) -> tuple:
    """y with P(y = 1 | q) = q, and the group ids (None for independent labels)."""
    if variant == "iid":
        return torch.bernoulli(q, generator=g), None
    groups = torch.arange(q.numel()) // GROUP_SIZE
    z = torch.randn(int(groups[-1]) + 1, generator=g, dtype=torch.float64)
    eps = torch.randn(q.numel(), generator=g, dtype=torch.float64)
    latent = math.sqrt(RHO) * z.index_select(0, groups) + math.sqrt(1 - RHO) * eps
    return (torch.special.ndtr(latent) < q).to(torch.float64), groups


def run(sizes, variants, settings, reps: int, draws: int, seed: int, out) -> list:
    rows = []
    for n in sizes:
        for variant in variants:
            for name in settings:
                model_a, model_b, truth = SETTINGS[name]
                g = torch.Generator().manual_seed(seed)
                covered = rejected = 0
                width = 0.0
                estimates = []
                for _ in range(reps):
                    q = torch.rand(n, generator=g, dtype=torch.float64)
                    y, groups = labels(q, variant, g)
                    r = compare_calibration(
                        model_a(q), model_b(q), y, groups=groups, n_samples=draws, generator=g
                    )
                    covered += int(r.lower <= truth <= r.upper)
                    rejected += int(r.p_value < 0.05)
                    width += float(r.upper - r.lower) / reps
                    estimates.append(float(r.difference))
                rows.append(
                    {"setting": name, "variant": variant, "n": n, "truth": truth,
                     "coverage": covered / reps, "rejection": rejected / reps, "width": width,
                     "reps": reps, "draws": draws,
                     "estimate_sd": float(torch.tensor(estimates).std())}
                )  # fmt: skip
                print(_row(rows[-1]), flush=True)
                if out:
                    Path(out).write_text(json.dumps(rows, indent=1))
    return rows


HEADER = (
    "| setting | labels | N | true difference | coverage (95%) ± s.e. | rejection at α = 0.05 "
    "| mean width | sd of the estimate × 3.92 | reps |\n|---|---|---|---|---|---|---|---|---|"
)


def _spread(r: dict) -> str:
    """The width a normal interval of the estimates' own spread would have (runs that
    recorded it)."""
    return f"{3.92 * r['estimate_sd']:.4f}" if "estimate_sd" in r else "–"


def _row(r: dict) -> str:
    se = math.sqrt(max(r["coverage"] * (1 - r["coverage"]), 0.05 * 0.95) / r["reps"])
    return (
        f"| {r['setting']} | {r['variant']} | {r['n']:,} | {r['truth']:.4f} | "
        f"{r['coverage']:.3f} ± {se:.3f} | {r['rejection']:.3f} | {r['width']:.4f} | "
        f"{_spread(r)} | {r['reps']} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--variants", nargs="+", choices=["iid", "grouped"], default=["iid"])
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS)[:3])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the rows here as they are measured")
    parser.add_argument("--from-json", nargs="+", help="print the table of saved rows")
    parser.add_argument("--threads", type=int, default=1, help="1 is fastest on a shared CPU")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(HEADER, flush=True)
    if args.from_json:
        for path in args.from_json:
            for row in json.loads(Path(path).read_text()):
                print(_row(row))
        return
    run(args.sizes, args.variants, args.settings, args.reps, args.draws, args.seed, args.json)


if __name__ == "__main__":
    main()
