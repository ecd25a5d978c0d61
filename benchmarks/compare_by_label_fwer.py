"""Family-wise error of the per-label comparison when no label differs.

    python benchmarks/compare_by_label_fwer.py --labels 100 --per-label 50 --samples 300 2000 \
        --data-sets 100 [--seed 0]

``compare_calibration_by_label`` calls a label "better" where its Holm-adjusted p-value is at
most 0.05, and promises a family-wise error (the chance of calling *any* label when none
differs) of at most 0.05. Each data set here has ``--labels`` labels of ``--per-label``
pairs, q ~ U(0, 1), y ~ Bernoulli(q), and two models that are independent noisy copies of q,
(q + 0.1·ε).clamp(0, 1): exchangeable, so every label's true difference is 0. Printed per
number of draws S: the share of data sets in which some label was called, with the p-values
corrected as given (``raw``: a p of 0 as an exact 0, the library before 2026-11-29), as
the library corrects them (``Monte Carlo``: (S·p + 2)/(S + 1), Phipson & Smyth 2010) with
every label called (``min_units=10``, the library before the second change that day), and
with the library's default ``min_units`` (labels of fewer than 50 pairs are not called),
all from the same draws; ± one binomial standard error.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, count
from calib_metrics.functional import compare_calibration_by_label, holm_adjust
from calib_metrics.functional.comparison_by_label import (
    SMALL_LABEL_UNITS,
    monte_carlo_p_values,
)

ALPHA = 0.05


def data_set(labels: int, per_label: int, generator: torch.Generator):
    """Two exchangeable noisy copies of a calibrated model, label ids and target."""
    n = labels * per_label
    q = torch.rand(n, generator=generator, dtype=torch.float64)
    y = torch.bernoulli(q, generator=generator)
    a, b = ((q + 0.1 * torch.randn(n, generator=generator, dtype=torch.float64)).clamp(0, 1)
            for _ in range(2))  # fmt: skip
    return a, b, y, torch.arange(n) // per_label


def family_errors(labels: int, per_label: int, samples: int, data_sets: int, seed: int):
    """How many data sets had a label called: raw p-values, Monte Carlo p-values with every
    label called, and the library's default (labels of fewer than 50 pairs not called)."""
    generator = torch.Generator().manual_seed(seed)
    raw = every_label = default = 0
    for _ in range(data_sets):
        a, b, y, ids = data_set(labels, per_label, generator)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "no label can be called", small
            result = compare_calibration_by_label(
                a, b, y, ids, n_samples=samples, generator=generator, min_units=10
            )
        tested = ~result.p_value.isnan()
        raw += bool((holm_adjust(result.p_value[tested]) <= ALPHA).any())
        every_label += (result.a_better + result.b_better) > 0
        # The default's family: the same draws, the labels large enough to be called.
        if per_label >= SMALL_LABEL_UNITS:
            p = monte_carlo_p_values(result.p_value[tested], samples)
            default += bool((holm_adjust(p) <= ALPHA).any())
    return raw, every_label, default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=count, default=100)
    parser.add_argument("--per-label", type=count, default=50)
    parser.add_argument("--samples", type=at_least_two, nargs="+", default=[300, 2000])
    parser.add_argument("--data-sets", type=count, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{args.labels} labels of {args.per_label} pairs, {args.data_sets} data sets, "
          f"seed {args.seed}, Holm at {ALPHA}\n")  # fmt: skip
    print("| draws S | Holm needs p ≤ | floor 2/(S + 1) | family-wise error, raw p | "
          "Monte Carlo p, every label called | library default |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for samples in args.samples:
        counts = family_errors(args.labels, args.per_label, samples, args.data_sets, args.seed)
        cells = []
        for errors in counts:
            share = errors / args.data_sets
            se = math.sqrt(share * (1 - share) / args.data_sets)
            cells.append(f"{share:.3f} ± {se:.3f}")
        if args.per_label < SMALL_LABEL_UNITS:
            cells[2] = "not called"
        print(f"| {samples:,} | {ALPHA / args.labels:.2g} | {2 / (samples + 1):.2g} | "
              f"{cells[0]} | {cells[1]} | {cells[2]} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
