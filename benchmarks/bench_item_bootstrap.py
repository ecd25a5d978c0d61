"""What the two-class item bootstrap costs: the default interval of ``[N, 2]`` probabilities
beside class ids, timed against the other ways to draw the same N items, as N grows.

Since 2026-12-03 ``calibration_error_ci`` draws a two-class item's one-vs-rest pairs, a
pair and its mirror, together (``intervals.item_draws``): identical items (same bins or
cut tie groups, same labels) are drawn as one cell, Poisson(n) of its n items, so its
draws cost about cells × draws, not items × draws. The timed calls, in the same process,
on the same pairs and the same number of draws:

- ``items``: ``calibration_error_ci(probs, class_ids)``, the default;
- ``pairs apart``: the same 2N pairs flattened (``probs.reshape(-1)`` beside one-hot
  labels), which the pair bootstrap draws one by one (the interval it gives is too narrow:
  docs/coverage.md, "One model's interval on one-vs-rest items");
- ``groups``: ``groups=torch.arange(N)``, the group bootstrap over items, whose draws
  weight every item: items × draws;
- ``plain loop``: the textbook bootstrap a user writes, N items drawn with replacement
  and ``calibration_error`` called on them, once a draw (bins re-formed each time; its
  interval is the draws' 2.5 and 97.5 percentiles). It runs up to ``--loop-max`` items.

Before timing, at each N, the script checks (or stops) that ``items`` and ``pairs apart``
give ``calibration_error(probs, class_ids)``'s error exactly: the item bootstrap changes
the interval, not the estimate. The table gives median seconds of ``--repeats``
interleaved rounds after a warm-up, the ratios, and each interval.

Run ``python benchmarks/bench_item_bootstrap.py --threads 1 --write``; ``--write`` puts
the table in docs/bench_items.md.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_scale import write_block  # noqa: E402

from benchmarks._args import count  # noqa: E402
from benchmarks._record import interleaved_medians, load_average, machine_load  # noqa: E402
from calib_metrics.functional import calibration_error, calibration_error_ci  # noqa: E402

SIZES = [1_000, 10_000, 100_000, 1_000_000]
MARKERS = ("<!-- bench_item_bootstrap:begin -->", "<!-- bench_item_bootstrap:end -->")
ARMS = ("items", "pairs apart", "groups", "plain loop")
# Items' class-1 probability q and its label's true frequency σ(logit(q) / TEMPERATURE): an
# overconfident model, so that the interval is not one of a zero error. (A miscalibration
# that is not symmetric in the two classes, such as q^1.25, cancels in the one-vs-rest pairs.)
TEMPERATURE = 1.5

Interval = tuple[float, float, float]


def two_class_items(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``[n, 2]`` float32 probabilities and class ids of a miscalibrated model."""
    q = torch.distributions.Beta(0.5, 0.5).sample((n,)).clamp(1e-6, 1 - 1e-6)
    truth = torch.sigmoid(torch.logit(q.double()) / TEMPERATURE)
    class_ids = torch.bernoulli(truth, generator=generator).long()
    return torch.stack([1 - q, q], -1), class_ids


def plain_loop(probs: torch.Tensor, class_ids: torch.Tensor, draws: int, seed: int) -> Interval:
    """The textbook item bootstrap: resample the items, call ``calibration_error``."""
    generator = torch.Generator().manual_seed(seed)
    n = class_ids.numel()
    errors = torch.empty(draws, dtype=torch.float64)
    for s in range(draws):
        index = torch.randint(n, (n,), generator=generator)
        errors[s] = calibration_error(probs[index], class_ids[index])
    low, high = torch.quantile(errors, torch.tensor([0.025, 0.975], dtype=torch.float64))
    return calibration_error(probs, class_ids).item(), low.item(), high.item()


def calls(draws: int, loop: bool) -> dict[str, Callable[[torch.Tensor, torch.Tensor], Interval]]:
    """The timed calls of the module docstring, each returning (error, lower, upper)."""

    def ends(**inputs: object) -> Interval:
        generator = torch.Generator().manual_seed(0)
        r = calibration_error_ci(**inputs, n_samples=draws, generator=generator)
        return r.error.item(), r.lower.item(), r.upper.item()

    def flat(probs: torch.Tensor, class_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        one_hot = torch.nn.functional.one_hot(class_ids, 2)
        return {"probs": probs.reshape(-1), "target": one_hot.reshape(-1)}

    timed = {
        "items": lambda p, c: ends(probs=p, target=c),
        "pairs apart": lambda p, c: ends(**flat(p, c)),
        "groups": lambda p, c: ends(probs=p, target=c, groups=torch.arange(c.numel())),
    }
    if loop:
        timed["plain loop"] = lambda p, c: plain_loop(p, c, draws, 0)
    return timed


def check(probs: torch.Tensor, class_ids: torch.Tensor, timed: dict) -> dict[str, Interval]:
    """Each call's interval; SystemExit where ``items`` or ``pairs apart`` change the error."""
    want = calibration_error(probs, class_ids).item()
    got = {name: fn(probs, class_ids) for name, fn in timed.items()}
    for name in ("items", "pairs apart"):
        if got[name][0] != want:
            raise SystemExit(
                f"bench_item_bootstrap: {name} gives the error {got[name][0]!r} at "
                f"N = {class_ids.numel():,}, calibration_error {want!r}: the timed answer "
                "is wrong"
            )
    return got


def row(n: int, each: dict[str, float], ends: dict[str, Interval]) -> str:
    loop = "plain loop" in each
    loop_cells = (
        f"{each['plain loop']:.3f} | {each['plain loop'] / each['items']:.0f}×" if loop else "– | –"
    )
    shown = [f"{name} [{lo:.4f}, {hi:.4f}]" for name, (_, lo, hi) in ends.items()]
    return (
        f"| {n:,} | {each['items']:.4f} | {each['pairs apart']:.4f} | "
        f"{each['items'] / each['pairs apart']:.2f}× | {each['groups']:.3f} | "
        f"{each['groups'] / each['items']:.1f}× | {loop_cells} | "
        f"{ends['items'][0]:.4f}: {'; '.join(shown)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=count, nargs="+", default=SIZES, help="items N")
    parser.add_argument("--draws", type=count, default=2000, help="bootstrap draws S")
    parser.add_argument(
        "--loop-max", type=count, default=100_000, help="largest N the plain loop runs at"
    )
    parser.add_argument("--repeats", type=count, default=3)
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    parser.add_argument("--write", action="store_true", help="write docs/bench_items.md")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    load_start = load_average()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    lines = [
        f"[N, 2] float32 probabilities, q ~ Beta(0.5, 0.5), class 1 with probability "
        f"σ(logit(q) / {TEMPERATURE}); {args.draws:,} draws a call; medians of "
        f"{args.repeats} interleaved rounds, {torch.get_num_threads()} thread(s). Intervals: "
        "95%, the debiased bootstraps' normal form; the plain loop's percentiles.",
        "",
        "| N items | items s | pairs apart s | items ÷ pairs apart | groups s | groups ÷ items "
        "| plain loop s | plain loop ÷ items | error: intervals |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    print("\n".join(lines), flush=True)
    with warnings.catch_warnings():
        # "pairs apart" is warned of (a one-hot target of two classes): it is the point.
        warnings.simplefilter("ignore")
        for n in args.sizes:
            probs, class_ids = two_class_items(n, generator)
            timed = calls(args.draws, n <= args.loop_max)
            ends = check(probs, class_ids, timed)  # also the warm-up
            each = interleaved_medians(timed, (probs, class_ids), args.repeats)
            lines.append(row(n, each, ends))
            print(lines[-1], flush=True)
    lines += ["", machine_load(load_start)]
    print(lines[-1])
    if args.write:
        doc = ROOT / "docs" / "bench_items.md"
        if not doc.exists():
            doc.write_text("# The two-class item bootstrap: time\n")
        write_block(doc, MARKERS, "bench_item_bootstrap.py", "\n".join(lines))


if __name__ == "__main__":
    main()
