"""Where ``streaming_tolerance()`` holds and where not: data that probe what it assumes.

    python benchmarks/streaming_gap_assumptions.py --resolutions 1024 262144

The bound (``calib_metrics/functional/sketch_gap.py``) assumes that the pairs of a
sketch cell are exchangeable, so that the ones before a boundary inside it are a
hypergeometric share of the cell's. Which cells hold one value (a tie group, shared by
the exact mode's rule) it knows from each cell's lowest and highest q. Five data sets,
each past the buffer (``N`` = 40 × the resolution, at least 40,000):

* ``ulp clusters``: 20 scores, each nudged by 0–3 float32 ulps (the same inputs scored
  in different batch shapes), calibrated labels. The exact mode sorts the distinct
  values; before the sketch kept its extremes, the four sums read each cluster as one
  value (a variance at rounding level) and the bound was 1e-12 against gaps up to 3.5e-2.
* ``ulp clusters rounded to 6 decimals``: ties, but for a cluster across a rounding
  boundary, which is two values 1e-6 apart.
* ``threshold labels``: y = 1[q > 0.3], a boundary in the cell holding 0.3: the labels
  inside that cell are ordered by q (breaks the assumption where cells are wide).
* ``tie in a spread cell``: 2,000 pairs at exactly q = 0.3, all labelled 0, among
  calibrated spread values, a boundary inside the tie group: the exact mode shares the
  group at its own mean label, the sketch redraws or shares the cell as a whole.
* ``tie of ones in a spread cell`` (a reviewer's): 4,000 pairs at q = 0.3, all labelled
  1, a boundary of 1,000-pair bins 5 pairs into the group: the group's labels differ
  from the cell's other pairs, so the cell's labels are not exchangeable (breaks it).

Printed per data set, resolution and estimator: the gap |streaming − exact|, the
tolerance, and their ratio (above 1: the bound does not hold).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import count
from calib_metrics import CalibrationError

ESTIMATORS = {
    "debiased": {"debias": True},
    "plug-in": {"debias": False},
    "l1": {"norm": "l1"},
    "max": {"norm": "max"},
}


def ulp_clusters(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    base = torch.linspace(0.1, 0.9, 20)
    q = base[torch.randint(0, 20, (n,), generator=g)]
    ulps = torch.randint(0, 4, (n,), generator=g)
    for k in range(1, 4):
        nudged = ulps >= k
        q[nudged] = torch.nextafter(q[nudged], torch.ones_like(q[nudged]))
    return q, torch.bernoulli(q, generator=g).long(), n // 80


def threshold_labels(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    q = torch.rand(n, generator=g, dtype=torch.float64)
    return q, (q > 0.3).long(), n // 10


def tie_in_spread_cell(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    q = torch.cat([q, torch.full((2000,), 0.3, dtype=torch.float64)])
    y = torch.cat([y, torch.zeros(2000, dtype=torch.long)])
    return q, y, int((q < 0.3).sum()) + 1000


def ones_tie_in_spread_cell(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    """4,000 pairs at exactly q = 0.3, all labelled 1, among calibrated spread values; a
    filler at q = 0.01 puts a boundary of the 1,000-pair bins 5 pairs into the group."""
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    bin_size, group = 1000, 4000
    fill = (-(int((q < 0.3).sum()) + 5)) % bin_size
    filler = torch.full((fill,), 0.01, dtype=torch.float64)
    q = torch.cat([q, filler, torch.full((group,), 0.3, dtype=torch.float64)])
    y = torch.cat([y, torch.bernoulli(filler, generator=g).long(), torch.ones(group).long()])
    return q, y, bin_size


def ulp_clusters_rounded(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The clusters rounded to 6 decimals: ties, or values 1e-6 apart across a boundary."""
    q, y, bin_size = ulp_clusters(n, g)
    return q.round(decimals=6), y, bin_size


DATA = {
    "ulp clusters": ulp_clusters,
    "ulp clusters rounded to 6 decimals": ulp_clusters_rounded,
    "threshold labels": threshold_labels,
    "tie in a spread cell": tie_in_spread_cell,
    "tie of ones in a spread cell": ones_tie_in_spread_cell,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolutions", type=count, nargs="+", default=[1024, 2**18])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # the coarse-sketch warning: these are its cases too
    print("| data | resolution | N | bin size | estimator | gap | tolerance | gap / tolerance |")
    print("|---|---|---|---|---|---|---|---|")
    for resolution in args.resolutions:
        n = max(40_000, 40 * resolution)
        for name, make in DATA.items():
            q, y, bin_size = make(n, torch.Generator().manual_seed(args.seed))
            for label, options in ESTIMATORS.items():
                exact = CalibrationError(bin_size=bin_size, **options)
                exact.update(q, y)
                streaming = CalibrationError(
                    bin_size=bin_size, streaming=True, resolution=resolution, **options
                )
                streaming.update(q, y)
                gap = float((streaming.compute() - exact.compute()).abs())
                tolerance = float(streaming.streaming_tolerance())
                ratio = gap / tolerance if tolerance else float("inf") if gap > 1e-12 else 0.0
                print(f"| {name} | {resolution:,} | {q.numel():,} | {bin_size:,} | {label} "
                      f"| {gap:.1e} | {tolerance:.1e} | {ratio:.2f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
