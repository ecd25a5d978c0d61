"""The exact mode's adaptive binning next to one ``torch.sort`` of q, by distribution.

For each distribution of q and each N, in one process on the same pairs: ``--repeats``
times ``adaptive_bin_sums`` (bin_size = "auto") and then ``torch.sort(q)``, back to
back, in CPU time (``time.process_time``; run it with ``--threads 1``); the best of each,
the median of the per-repeat ratios, the 1-minute load average, and the binning's extra
peak RSS over the input's bytes (q and a bool y), the largest over the repeats after one
untimed warm-up call (the allocator's free pages handed back before each call, so that
they are counted).
Distributions: uniform, "beta0.3" and "beta0.1" (float32; a symmetric power map of a
uniform with exponent 1/a, which has Beta(a, a)'s U shape), a tagger with 64% of
q exactly 0, uniform q in float16 and bfloat16, uniform q of three decimals (1,001
values: a CSV's, say, heavy ties) in float32 and in float64, and uniform q in float64.
Before timing, the binning's per-bin
sums (its untimed warm-up call) are checked against a reference built on the sort it is
timed against: the same counts, and sums of q and y within float64 rounding, or the
script stops.

Run ``python benchmarks/bench_exact.py --threads 1 --repeats 3 --sizes 1e6 1e7 1e8
--write``; ``--write`` puts the table in ``docs/streaming.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import measured, write_block

from benchmarks._args import count, size
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.binning import adaptive_bin_sums

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- bench_exact:begin -->", "<!-- bench_exact:end -->"
KINDS = ("uniform", "beta0.3", "beta0.1", "tagger", "float16", "bfloat16", "decimals3",
         "decimals3-float64", "uniform-float64")  # fmt: skip
# CPU time of this process: on the shared machine, wall time also counts the time that
# other processes held the core (with one thread, CPU time is the work itself).
CLOCK = time.process_time
# Both sides sum n float64 terms as running sums and difference them at the boundaries:
# each prefix is within n·eps of the total of its terms (the textbook bound on recursive
# summation), so two such differences, on two sides, within 4·n·eps·total. Measured gaps
# are far below it (1e-14 on Σq, 3e-8 on Σy of float16 ties at 1e6, 1.5e-6 at 1e7); a
# pair moved across a boundary or a label miscounted moves a sum by ~0.5 or 1. The bound
# grows as n², past 0.5 at 1e8 (4.4 for uniform q), so it is capped at SUM_CAP, which
# still leaves the measured gaps far below it and catches one pair moved.
SUM_SLACK = 4 * torch.finfo(torch.float64).eps
SUM_CAP = 0.01


def pairs(kind: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """q of the given kind and calibrated labels y ~ Bernoulli(q), from fixed seeds."""
    g = torch.Generator().manual_seed(KINDS.index(kind))
    u = torch.rand(n, generator=g)
    if kind.startswith("beta"):
        # Beta(a, a) by inverting its CDF is slow; a symmetric power map of a uniform
        # has the same U shape (exponent 1/a) and is drawn from the generator alone.
        a = float(kind[4:])
        q = torch.where(u < 0.5, (2 * u) ** (1 / a) / 2, 1 - (2 - 2 * u) ** (1 / a) / 2)
    elif kind == "tagger":
        q = torch.where(torch.rand(n, generator=g) < 0.64, 0.0, u**8)
    elif kind.startswith("decimals3"):  # rounded in float64, as a reader of text rounds
        q = (u.double() * 1000).round() / 1000
    elif kind.endswith("float64"):
        q = u.double()
    else:
        q = u
    y = torch.bernoulli(q, generator=g).bool()
    if kind.endswith("16"):
        return q.to(getattr(torch, kind)), y
    return (q if kind.endswith("float64") else q.float()), y


def sorted_reference(q: torch.Tensor, y: torch.Tensor, bin_size: int) -> tuple[torch.Tensor, ...]:
    """Per-bin (count, Σq, Σy) of the adaptive bins from their definition: q sorted, cut at
    ranks 0, β, 2β, … and n (the short last run joined to the one before), each tie group
    of q counting at its mean label in every bin it spans (float64)."""
    values, order = torch.sort(q)
    labels = y[order].double()
    _, group, sizes = torch.unique_consecutive(values, return_inverse=True, return_counts=True)
    means = torch.zeros(sizes.numel(), dtype=torch.float64).index_add_(0, group, labels) / sizes
    n = q.numel()
    ranks = torch.arange(max(1, n // bin_size) + 1) * bin_size
    ranks[-1] = n

    def sums(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x.new_zeros(1), x.cumsum(0)])[ranks].diff()

    return ranks.diff().double(), sums(values.double()), sums(means[group])


def check_sums(kind: str, n: int, ours: tuple[torch.Tensor, ...], reference: tuple) -> None:
    """Counts identical, Σq and Σy within ``SUM_SLACK``·n·total (at most ``SUM_CAP``);
    SystemExit otherwise,
    naming the distribution, the column and the largest gap."""
    if ours[0].shape != reference[0].shape:
        raise SystemExit(
            f"bench_exact: {kind} at N = {n:.0e}: {ours[0].numel()} bins, the sort's "
            f"{reference[0].numel()}"
        )
    if not torch.equal(ours[0], reference[0]):
        first = int((ours[0] != reference[0]).nonzero()[0])
        raise SystemExit(
            f"bench_exact: {kind} at N = {n:.0e}: bin {first} counts "
            f"{ours[0][first].item():.0f} pairs, the sort's {reference[0][first].item():.0f}"
        )
    for column, mine, theirs in zip(("Σq", "Σy"), ours[1:], reference[1:], strict=True):
        gap = (mine - theirs).abs().max().item()
        tolerance = min(SUM_SLACK * n * theirs.abs().sum().item(), SUM_CAP)
        if not gap <= tolerance:
            raise SystemExit(
                f"bench_exact: {kind} at N = {n:.0e}: per-bin {column} differs from the "
                f"sort-based reference by up to {gap:.3e} (tolerance {tolerance:.3e})"
            )


def run(kind: str, n: int, repeats: int) -> dict:
    q, y = pairs(kind, n)
    bin_size = resolve_bin_size("auto", n)
    exact, sort = [], []
    # One untimed call first: the process' one-time costs (lazy initialisation, the
    # first touch of the allocator's arenas: up to 3x the input at 10⁶) are not the
    # binning's working memory. Its answer is checked (untimed, before any timing).
    check_sums(kind, n, adaptive_bin_sums(q, y, bin_size), sorted_reference(q, y, bin_size))
    for _ in range(repeats):
        # Each repeat times the binning and the sort back to back, so that their ratio
        # sees the same load; the median ratio is reported.
        exact.append(measured(lambda: adaptive_bin_sums(q, y, bin_size), CLOCK)[1:])
        sort.append(measured(lambda: torch.sort(q), CLOCK)[1])
    ratios = sorted(e / s for (e, _), s in zip(exact, sort))
    # The fastest times; the largest peak (a repeat may reuse pages the allocator kept).
    row = {"kind": kind, "n": n, "exact_s": min(t for t, _ in exact), "sort_s": min(sort)}
    row["ratio"] = ratios[len(ratios) // 2]
    row["peak"] = max(peak for _, peak in exact)
    row["input"] = q.numel() * q.element_size() + y.numel()
    row["load"] = os.getloadavg()[0]
    print(row, flush=True)
    return row


def table(rows: list[dict]) -> str:
    out = [
        "| q | N | exact CPU s | torch.sort CPU s | exact / sort | extra peak / input | load |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['kind']} | {r['n']:.0e} | {r['exact_s']:.3f} | {r['sort_s']:.3f} | "
            f"{r['ratio']:.2f}× | {r['peak'] / r['input']:.2f}× | {r['load']:.1f} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=size, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--repeats", type=count, default=5)
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    # A first call's one-time allocations (thread pools, allocator arenas) are not the
    # binning's working memory: make them before measuring.
    adaptive_bin_sums(*pairs("beta0.3", 200_000), 447)
    rows = [run(kind, int(n), args.repeats) for n in args.sizes for kind in args.kinds]
    text = table(rows)
    print(text)
    if args.write:
        write_block(ROOT / "docs" / "streaming.md", (BEGIN, END), "bench_exact.py", text)


if __name__ == "__main__":
    main()
