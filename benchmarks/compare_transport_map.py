"""The largest eigenvalue of the comparison's transport map, per simulated setting.

    python benchmarks/compare_transport_map.py [--reps 3] [--n 10000] [--seed 3]

``compare_calibration`` carries both models' linear parts by the optimal-transport map A
onto their neighbour covariance (``comparison._neighbour_transport``), not capped at the
identity. An eigenvalue of A above 1 would make the draws wider than the observed gaps'
in that direction; this prints the largest eigenvalue of A in each of ``--reps`` data sets
of every setting of ``coverage_compare.py`` (independent and grouped labels).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calib_metrics.functional.comparison as comparison
from benchmarks._args import count
from benchmarks.coverage_compare import SETTINGS, simulated


def largest_eigenvalues(setting: str, variant: str, reps: int, n: int, seed: int) -> list:
    """The largest eigenvalue of the transport map in each of ``reps`` data sets."""
    seen, transport = [], comparison._transport

    def spy(source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        carry = transport(source, target)
        seen.append(float(torch.linalg.eigvalsh(carry).max()))
        return carry

    model_a, model_b, _ = SETTINGS[setting]
    comparison._transport = spy
    try:
        for q, y, groups, g in simulated(variant, reps, n, seed):
            comparison.compare_calibration(
                model_a(q), model_b(q), y, groups=groups, n_samples=300, generator=g
            )
    finally:
        comparison._transport = transport
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=count, default=3)
    parser.add_argument("--n", type=count, default=10_000)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| setting | labels | largest eigenvalue of the map, per data set |")
    print("|---|---|---|")
    for setting in SETTINGS:
        for variant in ("iid", "grouped"):
            values = largest_eigenvalues(setting, variant, args.reps, args.n, args.seed)
            print(f"| {setting} | {variant} | {', '.join(f'{v:.3f}' for v in values)} |")


if __name__ == "__main__":
    main()
