"""How sure the comparison must be that m > 0 before it stops projecting the ends.

    python benchmarks/compare_boundary_level.py --settings unequal --n 100000 --reps 100 \
        [--variant grouped] [--levels library interval gms 0.005]

``compare_calibration`` projects the interval's ends over m = min(θ_a, θ_b) down to 0
where m's lower bound, a low quantile of the draws' m*, reaches 0 (``comparison._carried``):
a pre-test of "m = 0". Where the truth is m = 0 (a calibrated model) and its debiased square
is high by chance, the pre-test rejects m = 0 in about that quantile's level of the data
sets, the ends are carried with m* > 0 alone, and the upper end falls below the truth: misses that
add to the interval's own. A stricter pre-test (a lower quantile of m*) projects more often.
Every rule here is applied to the same draws of each data set:

- ``library``: ``comparison.boundary_level``, since 2026-11-29 the stricter of the
  interval's (1 − c)/2 and Φ(−√(2 ln ln n)) for n resampling units;
- ``interval``: the (1 − c)/2 quantile (the library before 2026-11-29's second change);
- ``hq``: Φ(−√(2 ln ln n)) alone (laxer than ``interval`` below n ≈ 920);
- ``gms``: Φ(−√(ln n)), generalised moment selection's BIC threshold (Andrews & Soares
  2010; 0.0012 at n = 10⁴, 0.00035 at 10⁵);
- a fixed quantile level such as ``0.005``.

Printed per rule: coverage of the true difference, truth above / below the interval, mean
width, and the share of data sets whose ends were projected.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calib_metrics.functional.comparison as comparison
from benchmarks._args import number
from benchmarks.coverage_compare import (
    SETTINGS,
    add_data_set_arguments,
    simulated,
    use_group_size,
)

CONFIDENCE = 0.95  # compare_calibration's default, which run() calls
RULES = ("library", "interval", "hq", "gms")
_quantile_level = number(0, 1)


def _rule(text: str) -> str:
    """A ``--levels`` entry: one of ``RULES`` or a quantile level from 0 to 1 (a word or a
    level of 2 had stopped in float()'s or torch.nanquantile's traceback after the first
    data set)."""
    if text in RULES:
        return text
    try:
        _quantile_level(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be {', '.join(RULES)} or a quantile level from 0 to 1, not {text!r}"
        ) from None
    return text


def _level(rule: str, confidence: float, units: int) -> float:
    """The quantile level of m* whose value must exceed 0 for the per-draw ends to stand."""
    if rule == "library":
        return comparison.boundary_level(confidence, units)
    if rule == "interval":
        return (1 - confidence) / 2
    if rule == "gms":
        return _normal_tail(math.sqrt(math.log(units)))
    if rule == "hq":
        return _normal_tail(math.sqrt(2 * math.log(math.log(units))))
    return float(rule)


def _normal_tail(threshold: float) -> float:
    """Φ(−threshold)."""
    return 0.5 * math.erfc(threshold / math.sqrt(2))


def _ends(square, smaller, level: float) -> tuple[torch.Tensor, bool]:
    """The interval's ends with the pre-test at ``level``, and whether they were projected."""
    lowest = torch.nanquantile(smaller, level)
    projected = bool(lowest <= 0)
    at_boundary = torch.zeros_like(smaller) if projected else smaller
    own = comparison.root_difference(square, smaller)
    bound = comparison.root_difference(square, at_boundary)
    return comparison._projected_ends(own, bound, CONFIDENCE), projected


def run(setting: str, variant: str, reps: int, n: int, seed: int, rules: list) -> dict:
    model_a, model_b, truth = SETTINGS[setting]
    carried, seen = comparison._carried, {}

    def recording(square, smaller, level):
        seen.update(square=square, smaller=smaller)
        return carried(square, smaller, level)

    outcomes = {rule: [] for rule in rules}
    comparison._carried = recording
    try:
        for q, y, groups, g in simulated(variant, reps, n, seed):
            units = n if groups is None else int(groups.max()) + 1
            result = comparison.compare_calibration(
                model_a(q), model_b(q), y, groups=groups, n_samples=1000, generator=g
            )
            for rule in rules:
                level = _level(rule, CONFIDENCE, units)
                (lower, upper), projected = _ends(seen["square"], seen["smaller"], level)
                if rule == "library":  # the same ends as the library's, from the same draws
                    assert (lower, upper) == (result.lower, result.upper), (lower, result)
                outcomes[rule].append((float(lower), float(upper), projected))
    finally:
        comparison._carried = carried
    return {rule: _summary(rows, truth) for rule, rows in outcomes.items()}


def _summary(rows: list, truth: float) -> str:
    lower, upper, projected = (torch.tensor(column, dtype=torch.float64) for column in zip(*rows))
    above, below = (upper < truth).double().mean(), (truth < lower).double().mean()
    cells = [1 - above - below, above, below, (upper - lower).mean(), projected.mean()]
    texts = [f"{float(c):.4f}" if i == 3 else f"{float(c):.3f}" for i, c in enumerate(cells)]
    return " | ".join(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_set_arguments(parser)
    parser.add_argument(
        "--levels", type=_rule, nargs="+", default=["library", "interval", "gms", "0.005"]
    )
    args = parser.parse_args()
    use_group_size(args.group_size)
    torch.set_num_threads(1)
    print(f"{args.variant} labels, N = {args.n:,}, {args.reps} data sets, seed {args.seed}\n")
    print("| setting | pre-test | coverage | truth above | truth below | mean width | projected |")
    print("|---|---|---|---|---|---|---|")
    for setting in args.settings:
        rows = run(setting, args.variant, args.reps, args.n, args.seed, args.levels)
        for rule, row in rows.items():
            print(f"| {setting} | {rule} | {row} |", flush=True)


if __name__ == "__main__":
    main()
