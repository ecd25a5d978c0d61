"""Time of reading a CSV of (probability, label) rows: the command line's reader against
peers in the same process.

For each N (default 1e4, 1e5, 1e6; add 1e7 with ``--sizes``): a CSV ``prob,label`` with
q ~ U(0, 1) written with 17 digits, y ~ Bernoulli(q), in a temporary folder. In one
process, interleaved, after a warm-up, the median of ``--repeats`` runs of:

- ours: ``calib_metrics.predictions.read_table`` (what ``calib-metrics evaluate`` calls);
- csv + float: the ``csv`` module's rows, each cell ``float()``-ed into two lists;
- numpy.loadtxt: ``np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)``;
- pandas.read_csv, if pandas can be imported (it is no dependency).

The machine may be shared, so what counts is the ratio to each peer measured in the same
process, printed per size, not the absolute times. Before timing, the values each reader
parsed (from its warm-up call) are checked against ours: the same probabilities and
labels, bit for bit, or the script stops. At the end it prints the table, with the
command, the machine's load and whether ours is faster or slower than each peer;
``--write`` puts it in ``docs/bench_read.md`` too.

    OMP_NUM_THREADS=1 python benchmarks/bench_read.py --sizes 1e4 1e5 1e6 --repeats 3 --write
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks._args import count, size  # noqa: E402
from benchmarks._record import command_line, load_average, machine_load  # noqa: E402
from calib_metrics.predictions import read_table  # noqa: E402

DOC = ROOT / "docs" / "bench_read.md"


def write_csv(path: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    q = rng.random(n)
    y = (rng.random(n) < q).astype(np.int64)
    with path.open("w") as f:
        f.write("prob,label\n")
        f.writelines(f"{a!r},{b}\n" for a, b in zip(q.tolist(), y.tolist()))


def ours(path: Path) -> object:
    return read_table(path)


def csv_float(path: Path) -> object:
    with path.open(newline="") as f:
        reader = csv.reader(f)
        next(reader)
        q, y = [], []
        for a, b in reader:
            q.append(float(a))
            y.append(float(b))
    return q, y


def loadtxt(path: Path) -> object:
    # ndmin=2: one row is read as a 1-D array otherwise (--sizes 1 had stopped there).
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def peers() -> dict[str, Callable[[Path], object]]:
    found: dict[str, Callable[[Path], object]] = {
        "csv + float": csv_float,
        "numpy.loadtxt": loadtxt,
    }
    try:
        import pandas as pd
    except ImportError:
        return found
    found["pandas.read_csv"] = pd.read_csv
    return found


def parsed(result: object) -> tuple[torch.Tensor, torch.Tensor]:
    """(probabilities, labels) as float64 tensors, from any reader's result."""
    if hasattr(result, "probs"):  # ours: Predictions
        return result.probs.double(), result.target.double()
    if isinstance(result, tuple):  # csv + float: two lists
        return torch.tensor(result[0], dtype=torch.float64), torch.tensor(result[1]).double()
    table = torch.as_tensor(np.asarray(result, dtype=np.float64))  # an array or a DataFrame
    return table[:, 0], table[:, 1]


def check_values(results: dict[str, object]) -> None:
    """Every reader parsed the same probabilities and labels as ours, exactly: the file
    holds each probability's shortest repr, which every correct parser reads back to the
    same double. Raises SystemExit naming the reader, the column and the largest gap."""
    q, y = parsed(results["ours"])
    for name, result in results.items():
        for column, mine, theirs in zip(("prob", "label"), (q, y), parsed(result), strict=True):
            if mine.shape != theirs.shape:
                raise SystemExit(
                    f"bench_read: {name} read {tuple(theirs.shape)} {column} values, "
                    f"ours {tuple(mine.shape)}"
                )
            if not torch.equal(mine, theirs):
                gap = (mine - theirs).abs().max().item()
                raise SystemExit(
                    f"bench_read: {name} and ours parsed different {column} values "
                    f"(largest difference {gap:.3e})"
                )


def median_times(functions: dict[str, Callable[[Path], object]], path: Path, repeats: int):
    check_values({name: f(path) for name, f in functions.items()})  # the warm-up, checked
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, f in functions.items():  # interleaved
            start = time.perf_counter()
            f(path)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def _slower_or_faster(ratio: float) -> str:
    """Our time over a peer's in words: "2.1× slower", "1.3× faster" (1.0×: "as fast").

    Example:
        >>> _slower_or_faster(2.14), _slower_or_faster(0.5), _slower_or_faster(1.0)
        ('2.1× slower', '2.0× faster', 'as fast')
    """
    if f"{ratio:.1f}" == "1.0":
        return "as fast"
    return f"{ratio:.1f}× slower" if ratio > 1 else f"{1 / ratio:.1f}× faster"


def table(results: dict[int, dict[str, float]], repeats: int, load_start: float) -> str:
    """docs/bench_read.md: the medians, ours over each peer, and a sentence per peer
    saying whether ours is slower or faster, at each N."""
    names = list(next(iter(results.values())))
    others = [name for name in names if name != "ours"]
    command = command_line("bench_read.py", torch.get_num_threads(), env=("OMP_NUM_THREADS",))
    header = [f"{name} s" for name in names] + [f"ours ÷ {name}" for name in others]
    lines = [
        "# Reading a CSV of (probability, label) rows: time",
        "",
        f"`{command}` (torch {torch.__version__}); medians of {repeats} interleaved runs "
        "after a checked warm-up (every reader parsed the same values as ours, bit for "
        "bit). The machine may be shared: read the ratios, measured in one process.",
        machine_load(load_start),
        "",
        "| N | " + " | ".join(header) + " |",
        "|---:|" + "---:|" * len(header),
    ]
    for n, times in results.items():
        seconds = " | ".join(f"{times[name]:.3g}" for name in names)
        ratios = " | ".join(f"{times['ours'] / times[name]:.2f}" for name in others)
        lines.append(f"| {n:,} | {seconds} | {ratios} |")
    lines += ["", "Ours against each peer (ours ÷ peer above 1: ours is slower):", ""]
    for name in others:
        each = ", ".join(
            f"{_slower_or_faster(times['ours'] / times[name])} at N = {n:,}"
            for n, times in results.items()
        )
        lines.append(f"- {name}: ours is {each}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[int, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=size, nargs="+", default=[1e4, 1e5, 1e6])
    parser.add_argument("--repeats", type=count, default=3)
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    parser.add_argument("--write", action="store_true", help="write docs/bench_read.md")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    load_start = load_average()
    functions = {"ours": ours, **peers()}
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for given in args.sizes:
            n = int(given)
            path = Path(folder) / f"pairs_{n}.csv"
            write_csv(path, n)
            times = median_times(functions, path, args.repeats)
            results[n] = times
            cells = ", ".join(
                f"{name} {t:.3f} s (ours/{name} {times['ours'] / t:.2f})"
                for name, t in times.items()
                if name != "ours"
            )
            print(f"N={n:.0e}: ours {times['ours']:.3f} s; {cells}", flush=True)
            path.unlink()
    text = table(results, args.repeats, load_start)
    print(f"\n{text}")
    if args.write:
        DOC.write_text(text)
        print(f"wrote {DOC}")
    return results


if __name__ == "__main__":
    main()
