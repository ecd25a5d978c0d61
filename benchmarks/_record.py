"""What a benchmark's --write output records about its run: the command and the machine's load.

The scripts that write a doc (bench_metric, bench_streaming, bench_compare, bench_chain,
bench_coref, bench_import, bench_scale, bench_exact, bench_read and bench_classwise;
bench_exact's command comes through bench_scale's ``write_block``) import these, so that a doc names
the command that made its numbers (not one typed into the script by hand) and the load
the machine was under. Run on its own it prints this machine's line, to see the load
before starting a benchmark:

    python benchmarks/_record.py
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence


def command_line(script: str, threads: int | None = None, env: Sequence[str] = ()) -> str:
    """The run's command as typed (all its options but ``--write``), from the repository root.

    ``threads``: the torch thread count it ran on, added as ``--threads`` where the command
    did not give it (None: the script has no such option). ``env``: names of environment
    variables that change what the script measures, shown in front where they are set.
    """
    argv = [a for a in sys.argv[1:] if a != "--write"]
    if threads is not None and not any(a.startswith("--threads") for a in argv):
        argv += ["--threads", str(threads)]
    assignments = [f"{name}={shlex.quote(os.environ[name])}" for name in env if name in os.environ]
    return " ".join([*assignments, shlex.join(["python", f"benchmarks/{script}", *argv])])


def load_average() -> float:
    """The 1-minute load average (``uptime``'s first number); NaN where the OS has none."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan


def machine_load(load_start: float) -> str:
    """One sentence: the machine's cores and its load average at the start (``load_start``,
    from :func:`load_average`) and now, at the end. Timings on a shared machine depend on
    both, so a doc states them next to its numbers."""
    return (
        f"Machine: {os.cpu_count()} cores; load average (1 minute) {load_start:.2f} at the "
        f"start and {load_average():.2f} at the end."
    )


def interleaved_medians(
    timed: dict[str, Callable[..., object]], inputs: Sequence[object], repeats: int
) -> dict[str, float]:
    """Median seconds of each of the ``timed`` calls on ``inputs`` over ``repeats``
    rounds, the calls interleaved within a round, so that load on a shared machine hits
    all of them alike (warm them up before)."""
    times: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(repeats):
        for name, fn in timed.items():
            start = time.perf_counter()
            fn(*inputs)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    print(f"Machine: {os.cpu_count()} cores; load average (1 minute) {load_average():.2f} now.")


if __name__ == "__main__":
    main()
