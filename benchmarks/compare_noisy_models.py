"""The size of compare_calibration's test for two equally calibrated models that are noisy
copies of one score, one-vs-rest pairs resampled pair by pair or item by item.

    python benchmarks/compare_noisy_models.py                # the table in docs/coverage.md
    python benchmarks/compare_noisy_models.py --reps 100     # a quick look

coverage_compare.py's models are fixed maps of the true probability, so both rank the
items alike and their bins hold the same items. Two trained models are not: each adds
its own error to a shared score. Here the true class logits are ``2·Z`` (Z standard
normal, C classes; binary: one logit against 0), the label is drawn from their softmax,
and each model predicts ``softmax(2·(2·Z) + 0.3·E)`` with its own standard normal noise
E: both are overconfident in the same way and exchangeable, so their true errors are
equal and every p < α is a false positive. Rows:

* ``one-vs-rest, pairs``: the flattened ``[N·C]`` pairs with one-hot labels, resampled
  pair by pair (what ``compare_calibration`` did with ``[N, C]`` input until 2026-12-01);
* ``one-vs-rest, items``: the ``[N, C]`` input as the library now resamples it, each
  item's C pairs together;
* ``binary``: one logit per item (N pairs), for scale.

Printed per row: the rejection rate of "no difference" at α = 0.05 and 0.10 with its
Monte Carlo standard error (from 2 data sets per row on: ``--reps 1`` prints the rates
alone), and how often the 95% interval holds 0.

``--spread`` prints instead, for the binary pair at N = 3,000, the difference's spread
over data sets beside the paired draws' own (the interval's width / 3.92) and that of a
naive bootstrap forming the bins again in every draw (items drawn with replacement):

    python benchmarks/compare_noisy_models.py --spread --reps 150 --draws 150
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._args import at_least_two, count
from benchmarks._record import command_line, load_average, machine_load
from calib_metrics.functional import calibration_error, compare_calibration

# (rows' kind, items N, classes C)
CELLS = [
    ("one-vs-rest, pairs", 300, 3),
    ("one-vs-rest, items", 300, 3),
    ("one-vs-rest, pairs", 1000, 10),
    ("one-vs-rest, items", 1000, 10),
    ("one-vs-rest, pairs", 3000, 3),
    ("one-vs-rest, items", 3000, 3),
    ("binary", 3000, 2),
    ("binary", 10000, 2),
]


def noisy_pair(n: int, c: int, g: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Two exchangeable noisy models' probabilities of the same items, and the labels."""
    if c == 2:  # binary: class 1's logit against 0
        z = 2 * torch.randn(n, generator=g, dtype=torch.float64)
        y = torch.bernoulli(torch.sigmoid(z), generator=g)
        noise = (0.3 * torch.randn(n, generator=g, dtype=torch.float64) for _ in range(2))
        a, b = (torch.sigmoid(2 * z + e) for e in noise)
        return a, b, y
    z = 2 * torch.randn(n, c, generator=g, dtype=torch.float64)
    y = torch.multinomial(z.softmax(-1), 1, generator=g).squeeze(1)
    noise = (0.3 * torch.randn(n, c, generator=g, dtype=torch.float64) for _ in range(2))
    a, b = ((2 * z + e).softmax(-1) for e in noise)
    return a, b, y


def one_test(kind: str, n: int, c: int, draws: int, g: torch.Generator) -> tuple[float, bool]:
    """The p-value of one data set, and whether the interval holds 0."""
    a, b, y = noisy_pair(n, c, g)
    if kind == "one-vs-rest, pairs":
        a, b = a.reshape(-1), b.reshape(-1)
        y = torch.nn.functional.one_hot(y, c).to(torch.float64).reshape(-1)
    r = compare_calibration(a, b, y, n_samples=draws, generator=g)
    return float(r.p_value), bool(r.lower <= 0 <= r.upper)


def rates(kind: str, n: int, c: int, reps: int, draws: int, seed: int) -> dict:
    """The rejection rates at α = 0.05 and 0.10, each with its Monte Carlo standard error
    (None for one data set, which says nothing of the rate's spread), and how often the
    interval holds 0."""
    g = torch.Generator().manual_seed(seed)
    outcomes = [one_test(kind, n, c, draws, g) for _ in range(reps)]
    p = torch.tensor([o[0] for o in outcomes])
    row = {"kind": kind, "n": n, "c": c}
    for alpha in (0.05, 0.10):
        rate = float((p < alpha).double().mean())
        se = math.sqrt(max(rate * (1 - rate), 1e-12) / reps) if reps > 1 else None
        row[alpha] = (rate, se)
    row["holds 0"] = sum(o[1] for o in outcomes) / reps
    return row


def spreads(n: int, reps: int, draws: int, seed: int) -> dict[str, float]:
    """The binary pair's difference: its standard deviation over ``reps`` data sets, and
    the mean standard deviation the paired draws (fixed bins) and a bootstrap that bins
    every draw anew give it."""
    g = torch.Generator().manual_seed(seed)
    found, fixed, rebinned = [], [], []
    for _ in range(reps):
        a, b, y = noisy_pair(n, 2, g)
        r = compare_calibration(a, b, y, n_samples=draws, generator=g)
        found.append(float(r.difference))
        fixed.append(float(r.upper - r.lower) / (2 * 1.959964))
        drawn = []
        for _ in range(draws):
            i = torch.randint(n, (n,), generator=g)
            drawn.append(float(calibration_error(a[i], y[i]) - calibration_error(b[i], y[i])))
        rebinned.append(float(torch.tensor(drawn).std()))
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    return {
        "over data sets": float(torch.tensor(found).std()),
        "paired draws (fixed bins)": mean(fixed),
        "bins formed in every draw": mean(rebinned),
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of ``argv`` (default: the command line), checked: argparse's usage
    line, one error line and exit 2 for any it refuses. Runs nothing: the tests read the
    documented commands through it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--reps",
        type=count,
        default=300,
        help="data sets per row (300); with --spread at least 2, whose sd it prints "
        "(1 prints the rates without their standard errors)",
    )
    parser.add_argument(
        "--draws", type=at_least_two, default=2000, help="paired draws per test (2,000)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spread", action="store_true", help="the spreads at N = 3,000")
    args = parser.parse_args(argv)
    if args.spread and args.reps < 2:
        # 1 data set runs without --spread: the rates are printed without a standard error.
        parser.error(
            "argument --reps: must be a whole number of at least 2 with --spread, which "
            f"prints the sd over the data sets, not {args.reps}"
        )
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # small-bin warnings of the N = 300 rows
    load_start = load_average()
    print(command_line("compare_noisy_models.py"))
    if args.spread:
        start = time.perf_counter()
        found = spreads(3000, args.reps, args.draws, args.seed)
        print(f"binary, N = 3,000, {args.reps} data sets, {args.draws} draws each:")
        for name, value in found.items():
            print(f"  standard deviation of the difference, {name}: {value:.5f}")
        print(f"{time.perf_counter() - start:.0f} s. {machine_load(load_start)}")
        return
    print(f"\n{args.reps} data sets per row, {args.draws} paired draws each\n")
    print("| pairs | N items | C | rejected at 0.05 | rejected at 0.10 | interval holds 0 |")
    print("|---|---|---|---|---|---|")
    start = time.perf_counter()
    for i, (kind, n, c) in enumerate(CELLS):
        # The pairs and items rows of a cell start from one seed: their first data set is
        # the same, the rest not (the draws take the generator apart); independent estimates.
        r = rates(kind, n, c, args.reps, args.draws, args.seed + i // 2)
        cells = [
            f"{rate:.3f}" + ("" if se is None else f" ± {se:.3f}")
            for rate, se in (r[0.05], r[0.10])
        ]
        print(f"| {kind} | {n:,} | {c if c > 2 else '–'} | {' | '.join(cells)} | "
              f"{r['holds 0']:.3f} |")  # fmt: skip
    print(f"\n{time.perf_counter() - start:.0f} s. {machine_load(load_start)}")


if __name__ == "__main__":
    main()
