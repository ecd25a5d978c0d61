"""How much of the paired draws' excess spread the clamped joint shrink factor causes.

    python benchmarks/compare_shrink_bias.py --n 100000 --reps 30 --draws 300 \\
        --settings "both calibrated"

``compare_calibration`` shrinks both models' linear parts by one factor
s = √(max(0, Var lin − 2·Var quad) / Var lin) (``comparison._linear_shrink``). Where the
true gaps are 0 the noise-free share is 0, but the clamp at 0 leaves s > 0 whenever
the estimated excess is positive by chance. For one setting of ``coverage_compare.py``
(independent labels) and R data sets this prints the distribution of s, and the mean sd
of the draws of Δ* = θ_a* − θ_b* with the library's s, with s forced to 0 and with s
forced to 1 (the observed gaps), beside the actual sd of D_a − D_b over the data sets:
the width the draws should have. Nothing here changes the library; the factor is
recorded by wrapping the private functions for the run.

The library has moved on: since 2026-11-28 it read s from the neighbouring runs' gaps
(``comparison._neighbour_shrink``), and since 2026-11-29 it carries the two linear parts
by a 2 × 2 map (``comparison._neighbour_transport``), which has no one factor to record.
``--construction`` picks which one-factor construction the run studies: ``joint`` (the
default: the factor above, as when docs/coverage.md's table was made, 2026-11-25) or
``neighbour`` (the neighbouring runs' factor, which the library keeps for near-copies).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's benchmarks/

from benchmarks._args import at_least_two, count
from benchmarks.coverage_compare import SETTINGS, labels
from calib_metrics.functional import compare_calibration
from calib_metrics.functional import comparison as cmp
from calib_metrics.functional.calibration import compute_bins
from calib_metrics.functional.intervals import debiased_square, effective_samples


class Recorder:
    """Wraps ``_linear_shrink`` and ``_neighbour_shrink`` (recording s, or forcing it) and
    ``root_difference`` (recording the sd of the draws of Δ* it is given)."""

    def __init__(self) -> None:
        self.force: float | None = None
        self.shrink: list[float] = []
        self.spread: float = float("nan")
        self._shrink, self._root = cmp._linear_shrink, cmp.root_difference
        self._neighbour = cmp._neighbour_shrink

    def linear_shrink(self, linear: torch.Tensor, quadratic: torch.Tensor) -> torch.Tensor:
        return self._recorded(self._shrink(linear, quadratic))

    def neighbour_shrink(self, linear: torch.Tensor, crossed: torch.Tensor) -> torch.Tensor:
        return self._recorded(self._neighbour(linear, crossed))

    def _recorded(self, s: torch.Tensor) -> torch.Tensor:
        self.shrink.append(float(s))
        return s if self.force is None else torch.full_like(s, self.force)

    def root_difference(self, square: torch.Tensor, smaller: torch.Tensor) -> torch.Tensor:
        self.spread = float(square[~square.isnan()].std())
        return self._root(square, smaller)


def _square(q: torch.Tensor, y: torch.Tensor) -> float:
    """The data's debiased square D, as ``compare_calibration`` forms it (β = ⌈√N⌉)."""
    bins = compute_bins(q, y, bin_size="auto")
    gap = bins.pred_mean - bins.freq
    return float(debiased_square(gap, bins.freq, bins.count, effective_samples(bins)))


CONSTRUCTIONS = {
    "joint": lambda worlds, beside_a, beside_b: cmp._joint_shrink(*worlds),
    "neighbour": lambda worlds, beside_a, beside_b: cmp._one_factor(worlds, beside_a, beside_b),
}


def run(setting: str, n: int, reps: int, draws: int, seed: int, construction: str) -> str:
    make_a, make_b, _ = SETTINGS[setting]
    recorder = Recorder()
    transport = cmp._neighbour_transport
    cmp._neighbour_transport = CONSTRUCTIONS[construction]
    cmp._linear_shrink, cmp.root_difference = recorder.linear_shrink, recorder.root_difference
    cmp._neighbour_shrink = recorder.neighbour_shrink
    spreads: dict[str, list[float]] = {"its own s": [], "s = 0": [], "s = 1": []}
    shrink, differences = [], []
    g = torch.Generator().manual_seed(seed)
    try:
        for rep in range(reps):
            q = torch.rand(n, generator=g, dtype=torch.float64)
            y, _ = labels(q, "iid", g)
            q_a, q_b = make_a(q), make_b(q)
            differences.append(_square(q_a, y) - _square(q_b, y))
            for name, force in (("its own s", None), ("s = 0", 0.0), ("s = 1", 1.0)):
                recorder.force, recorder.shrink = force, []
                draw_seed = torch.Generator().manual_seed(rep)
                compare_calibration(q_a, q_b, y, n_samples=draws, generator=draw_seed)
                spreads[name].append(recorder.spread)
                if force is None:
                    shrink.append(recorder.shrink[0])
    finally:
        cmp._linear_shrink, cmp.root_difference = recorder._shrink, recorder._root
        cmp._neighbour_shrink, cmp._neighbour_transport = recorder._neighbour, transport
    return "\n".join(
        [
            f"{setting}, iid, N = {n:,}, {reps} data sets, {draws} draws, {construction} factor",
            f"  shrink factor s: mean {statistics.mean(shrink):.3f}, median "
            f"{statistics.median(shrink):.3f}, share above 0 "
            f"{sum(s > 0 for s in shrink) / reps:.2f}",
            f"  actual sd of D_a − D_b over the data sets: {statistics.stdev(differences):.3e}",
            *(
                f"  mean sd of the draws of Δ*, {name}: {statistics.mean(v):.3e}"
                for name, v in spreads.items()
            ),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=100_000)
    parser.add_argument(
        "--reps", type=at_least_two, default=30, help="data sets (≥ 2: their sd is printed)"
    )
    parser.add_argument("--draws", type=at_least_two, default=300)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--settings", nargs="+", default=["both calibrated"], choices=SETTINGS)
    parser.add_argument("--construction", choices=sorted(CONSTRUCTIONS), default="joint")
    args = parser.parse_args()
    for setting in args.settings:
        print(run(setting, args.n, args.reps, args.draws, args.seed, args.construction))


if __name__ == "__main__":
    main()
