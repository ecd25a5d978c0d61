"""Streaming vs exact CalibrationError vs torchmetrics' BinaryCalibrationError.

Three measurements, every peer in the same process (peak memory: one child process per
run, so that the peaks do not mix):

1. throughput (pairs/s) of update + compute at each N of ``--n`` (10⁵, 10⁶ and 10⁷ by
   default, prefixes of the same pairs) fed in batches of 10⁵, with ``validate_args``
   on and off, and its ratio to torchmetrics' per size; medians over ``--repeats``
   rounds, every size and method timed in turn within a round (below 10⁶ pairs a timing
   is several runs, each on a fresh metric, so that it spans 10⁶ pairs; seconds are per
   run; an ``--n`` below 10³, 10³ runs a timing, is refused); the ratio is printed to two
   significant digits;
2. state bytes at N = 10⁶, 10⁷, 10⁸, those up to ``--state-max`` (all three by
   default; past the pairs drawn, the largest ``--n`` but at most 10⁷, the same pairs are
   fed again: list states then hold references, and their bytes are counted as if they
   were new);
3. peak memory of a run that draws its pairs batch by batch (RSS on CPU, the CUDA
   allocator's peak on a GPU), at the same N: the streaming metric's up to
   ``--state-max``, the others' up to ``--peak-max`` (10⁷ by default). A small run
   (``--n 1e4 --state-max 1e6 --peak-max 1e6``) stays small.

torchmetrics runs at its defaults, ``norm="l1"`` on 15 equal-width bins, while ours is
the l2 error (debiased) on equal-mass bins of 5000 pairs: different numbers, so the
throughput ratio compares the cost of the calls, not of one estimate. Before timing, at
each N, the answers are checked where they define the same number (or the script stops):
the exact metric against ``calibration_error``, the streaming one against the exact one
within its own ``streaming_tolerance()``, and torchmetrics (given float64 copies of q, so
that its sums are float64 too) against our ``calibration_error`` on its 15 bins (the l2
plug-in, which depends on the binning, where the l1 error of these pairs does not; the
pairs within 1e-6 of an edge left out, where the two libraries' edges differ by an ulp).

Run ``python benchmarks/bench_streaming.py [--device cuda] [--threads 1] [--write]``
(without ``--threads``, torch chooses; the peak-memory children run at the same count);
``--write`` puts the tables in ``docs/bench_streaming.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from torchmetrics import Metric
from torchmetrics.classification import BinaryCalibrationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._args import count, device, size
from benchmarks._record import command_line, load_average, machine_load
from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error

ROOT = Path(__file__).resolve().parents[1]
BIN_SIZE = 5000
# The N of the state-bytes and peak-memory tables (those up to --state-max / --peak-max).
TABLE_SIZES = (10**6, 10**7, 10**8)
TIMED_PAIRS = 10**6  # a timing of a smaller N repeats it, fresh metrics, to span this many
# The smallest --n: a timing of N pairs is TIMED_PAIRS / N runs, each on a fresh metric
# (at N = 10, 10⁵ runs a timing, and the script had not finished in hours).
MIN_N = 1000
PEER = "torchmetrics BinaryCalibrationError (15 bins)"
STREAMING = "calib_metrics streaming"
EXACT = "calib_metrics exact"
# The exact metric and calibration_error, and torchmetrics given float64 copies and our
# l2 plug-in on its bins, sum in float64 over the same bins: only the order of the
# additions may differ, a few ulps. The debiased l2 error is the root of a square that
# may be near 0 (clipped there), where a few ulps of the square's ~1e-3 terms move the
# root by ~1e-9: hence an absolute 1e-7 beside the relative 1e-9.
SAME_RTOL, SAME_ATOL = 1e-9, 1e-7
# The metric's warning about fewer than 10 bins (calib_metrics/few_bins.py).
FEW_BINS = r"CalibrationError: only \d+ bins? from"


def factories(validate: bool, device: str = "cpu") -> dict[str, Callable[[], Metric]]:
    """Fresh metrics on ``device`` (a streaming sketch refuses batches on another)."""
    made = {
        PEER: lambda: BinaryCalibrationError(n_bins=15, validate_args=validate),
        STREAMING: lambda: CalibrationError(
            bin_size=BIN_SIZE, streaming=True, validate_args=validate
        ),
        EXACT: lambda: CalibrationError(bin_size=BIN_SIZE, validate_args=validate),
    }
    return {name: (lambda make=make: make().to(device)) for name, make in made.items()}


def draw(n: int, device: str, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Pairs of a miscalibrated model: q ~ U(0,1)², y ~ Bernoulli(min(1, 1.2 q))."""
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.rand(n, generator=g, device=device) ** 2
    y = torch.bernoulli((1.2 * q).clamp_(max=1), generator=g).long()
    return q, y


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_once(metric: Metric, q: torch.Tensor, y: torch.Tensor, batch: int, device: str) -> float:
    synchronize(device)
    start = time.perf_counter()
    for i in range(0, q.numel(), batch):
        metric.update(q[i : i + batch], y[i : i + batch])
    metric.compute()
    synchronize(device)
    return time.perf_counter() - start


def fed(metric: Metric, q: torch.Tensor, y: torch.Tensor, batch: int) -> Metric:
    """``metric`` updated with the pairs in batches of ``batch``, as the timed runs feed it."""
    for i in range(0, q.numel(), batch):
        metric.update(q[i : i + batch], y[i : i + batch])
    return metric


def check_same(
    what: str, got: float, want: float, tolerance: float, n: int, script: str = "bench_streaming"
) -> None:
    """Stop the script (SystemExit) when ``got`` and ``want`` differ by more than
    ``tolerance``, naming the script, what differed and by how much."""
    if not abs(got - want) <= tolerance:  # a NaN fails too
        raise SystemExit(
            f"{script}: {what} at N = {n:,}: {got!r} against {want!r} (difference "
            f"{got - want:.3e}, tolerance {tolerance:.3e}); the timed methods' answers are wrong"
        )


def check_answers(q: torch.Tensor, y: torch.Tensor, batch: int, device: str) -> None:
    """Each method's answer on these pairs, fed as the timed runs feed them, where two of
    them define the same number (see the module docstring); untimed."""
    n = q.numel()
    made = factories(False, device)
    exact = fed(made[EXACT](), q, y, batch).compute().item()
    reference = calibration_error(q, y, bin_size=BIN_SIZE).item()
    check_same(
        "exact metric vs calibration_error", exact, reference, SAME_RTOL * reference + SAME_ATOL, n
    )
    streaming = fed(made[STREAMING](), q, y, batch)
    # The sketch's own bound on its gap to the exact error (0 while it keeps the pairs),
    # plus the float64 slack of two sums over the same bins.
    tolerance = streaming.streaming_tolerance().item() + SAME_RTOL * exact + SAME_ATOL
    check_same("streaming metric vs exact metric", streaming.compute().item(), exact, tolerance, n)
    # l2, not the timed l1: on these pairs every bin's frequency is above its confidence,
    # so the l1 error is |mean(y) - mean(q)| for any binning and would miss a binning
    # fault. The pairs within EDGE_GAP of an edge k/15 are left out (see EDGE_GAP).
    off_edges = ((q.double() * 15 - (q.double() * 15).round()).abs() > 15 * EDGE_GAP).cpu()
    q_far, y_far = q.cpu()[off_edges], y.cpu()[off_edges]
    peer = BinaryCalibrationError(n_bins=15, norm="l2")
    peer.update(q_far.double(), y_far)
    ours = calibration_error(
        q_far.double(), y_far, binning="uniform", n_bins=15, norm="l2", debias=False
    ).item()
    check_same(
        "torchmetrics (float64 copies, l2) vs our l2 plug-in on its 15 bins",
        peer.compute().item(),
        ours,
        SAME_RTOL * ours + SAME_ATOL,
        n,
    )


# How far from an edge k/15 a pair must be for the torchmetrics check. Both libraries bin
# the float64 copies with a float64 linspace's edges (each in its input's dtype), so
# they agree at the edges too; the guard keeps the check off either one's edge rule.
EDGE_GAP = 1e-6


def timed_size(text: str) -> float:
    """A size of ``--n``: a whole number of pairs of at least ``MIN_N``."""
    value = size(text)
    if value < MIN_N:
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_N:,} pairs (a timing of N pairs is {TIMED_PAIRS:.0e} / N "
            f"runs on fresh metrics), not {text!r}"
        )
    return value


def run_timed(make: Callable[[], Metric], n: int, q, y, batch: int, device: str) -> float:
    """Seconds of one run of update + compute on the first n pairs: the mean over enough
    runs, each on a fresh metric, to span ``TIMED_PAIRS`` pairs."""
    loops = -(-TIMED_PAIRS // n)
    return sum(run_once(make(), q[:n], y[:n], batch, device) for _ in range(loops)) / loops


def throughput(args: argparse.Namespace) -> list[dict]:
    # Below 10 bins of BIN_SIZE (N < 5·10⁴: --n 1e3 1e4) every fresh metric warns that
    # few bins can hide miscalibration, on every timed run: expected here, where the
    # time is what is measured, and silenced (a warning per run had flooded the output).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=FEW_BINS, category=UserWarning)
        return _throughput(args)


def _throughput(args: argparse.Namespace) -> list[dict]:
    sizes = sorted(set(args.n))
    q, y = draw(sizes[-1], args.device)
    for n in sizes:  # before any timing: a wrong answer stops the script early
        check_answers(q[:n], y[:n], args.batch, args.device)
    makers = {
        (name, v): make for v in (False, True) for name, make in factories(v, args.device).items()
    }
    for make in makers.values():  # warm-up: first calls allocate and load kernels
        run_once(make(), q[: 10 * args.batch], y[: 10 * args.batch], args.batch, args.device)
    keys = [(n, *key) for n in sizes for key in makers]
    times: dict[tuple[int, str, bool], list[float]] = {key: [] for key in keys}
    for _ in range(args.repeats):  # all in turn, so that load on the machine hits all alike
        for n, name, validate in keys:
            make = makers[(name, validate)]
            times[(n, name, validate)].append(run_timed(make, n, q, y, args.batch, args.device))
    rows = []
    for (n, name, validate), runs in times.items():
        peer = times[(n, PEER, validate)]
        median = statistics.median(runs)
        rows.append(
            {
                "n": n,
                "method": name,
                "validate_args": validate,
                "seconds": median,
                "pairs_per_s": n / median,
                # Ratio within each round (same load), then the median over rounds.
                "vs_torchmetrics": statistics.median(p / t for p, t in zip(peer, runs)),
            }
        )
    return rows


def state_bytes(metric: Metric) -> int:
    total = 0
    for value in metric.metric_state.values():
        parts = value if isinstance(value, list) else [value]
        total += sum(t.numel() * t.element_size() for t in parts)
    return total


def state_sizes(args: argparse.Namespace) -> dict[str, dict[int, int | None]]:
    """Each method's state bytes after N pairs, at each of ``TABLE_SIZES`` up to
    ``--state-max`` (None past it)."""
    q, y = draw(min(max(args.n), 10**7), args.device, seed=1)
    sizes: dict[str, dict[int, int | None]] = {}
    for name, make in factories(False, args.device).items():
        sizes[name] = dict.fromkeys(TABLE_SIZES)
        for n in (n for n in TABLE_SIZES if n <= args.state_max):
            metric = make()
            fed = 0
            while fed < n:  # past the pairs drawn: the same again, held by reference
                take = min(n - fed, q.numel())
                for i in range(0, take, args.batch):
                    end = min(i + args.batch, take)
                    metric.update(q[i:end], y[i:end])
                fed += take
            sizes[name][n] = state_bytes(metric)
    return sizes


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def reset_peak_rss() -> int:
    """Reset the peak resident memory to the current one (Linux) and return it, in bytes.

    ``ru_maxrss`` cannot serve: it is inherited from the parent across fork and exec.
    """
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kib("VmRSS") * 1024


def peak_rss() -> int:
    return _status_kib("VmHWM") * 1024


def peak_child(name: str, n: int, device: str, batch: int) -> int:
    """Peak memory (bytes) of drawing n pairs batch by batch into the metric + compute."""
    make = factories(False, device)[name]
    metric = make()
    metric.update(*draw(batch, device, seed=99))  # warm-up, then a fresh metric
    metric = make()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    else:
        before = reset_peak_rss()
    for seed in range(n // batch):
        metric.update(*draw(batch, device, seed=seed))
    metric.compute()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    return peak_rss() - before


def peaks(args: argparse.Namespace) -> dict[str, dict[int, int | None]]:
    """Each method's peak memory of a run of N pairs in a child process, at each of
    ``TABLE_SIZES``: the streaming metric's up to ``--state-max`` (its memory is its
    state), the others' up to ``--peak-max`` (None past them)."""
    out: dict[str, dict[int, int | None]] = {}
    for name in factories(False):
        out[name] = {}
        largest = args.state_max if name == STREAMING else args.peak_max
        for n in TABLE_SIZES:
            if n > largest:
                out[name][n] = None
                continue
            command = [sys.executable, __file__, "--_peak", name, str(n), "--device", args.device]
            # The thread count this process runs at, torch's choice included.
            command += ["--batch", str(args.batch), "--threads", str(torch.get_num_threads())]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            out[name][n] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def mib(value: int | None) -> str:
    return "—" if value is None else f"{value / 2**20:,.2f} MiB"


def seconds(value: float) -> str:
    """Three significant digits: a run at 10⁵ pairs takes milliseconds."""
    return f"{value:.3f}" if value >= 0.1 else f"{value:.3g}"


def ratio(value: float) -> str:
    """Two significant digits (one decimal had printed 0.05 and 0.14 alike, as "0.1×")."""
    text = f"{value:,.0f}" if value >= 100 else f"{value:#.2g}".rstrip(".")
    return f"{text}×"


def tables(
    args: argparse.Namespace, rows: list[dict], sizes: dict, peak: dict, load_start: float
) -> str:
    threads = torch.get_num_threads()
    cpu = platform.processor() or platform.machine()
    lines = [
        "# Benchmark: streaming calibration error",
        "",
        f"`{command_line('bench_streaming.py', threads)}` — torch {torch.__version__}, {cpu}"
        f" ({args.device}, {threads} thread(s)); medians of {args.repeats} runs taken in turn.",
        machine_load(load_start),
        "",
        f"## Throughput: update + compute, N pairs in batches of {args.batch:,}",
        "",
        "× torchmetrics: torchmetrics' seconds over the method's at the same N and"
        " validate_args, per round, median over the rounds. torchmetrics runs at its"
        ' defaults, norm="l1" on 15 equal-width bins; ours is the debiased l2 error on'
        f" equal-mass bins of {BIN_SIZE:,} pairs: another number, so the ratio compares the"
        " cost of the calls. Checked before timing, at each N: the exact metric equals"
        " `calibration_error`, the streaming one is within its `streaming_tolerance()` of"
        " the exact one, and torchmetrics (l2) given float64 copies of q equals our l2"
        " plug-in on its 15 bins (pairs within 1e-6 of an edge left out).",
        "",
        "| N | method | validate_args | seconds | pairs/s | × torchmetrics |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['method']} | {r['validate_args']} | {seconds(r['seconds'])} | "
            f"{r['pairs_per_s'] / 1e6:.1f} M | {ratio(r['vs_torchmetrics'])} |"
        )
    ns = TABLE_SIZES
    head = "| method | " + " | ".join(f"N = 1e{len(str(n)) - 1}" for n in ns) + " |"
    skipped = " (— = not run: past --state-max)" if args.state_max < ns[-1] else ""
    lines += ["", f"## State bytes{skipped}", "", head, "|---|---:|---:|---:|"]
    for name, by_n in sizes.items():
        lines.append(f"| {name} | " + " | ".join(mib(by_n[n]) for n in ns) + " |")
    kind = "CUDA allocator peak" if args.device.startswith("cuda") else "peak RSS − RSS before"
    lines += [
        "",
        f"## Peak memory of a run ({kind}; pairs drawn batch by batch; — = not run)",
        "",
        head,
        "|---|---:|---:|---:|",
    ]
    for name, by_n in peak.items():
        lines.append(f"| {name} | " + " | ".join(mib(by_n[n]) for n in ns) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", type=device, default="cpu")
    parser.add_argument(
        "--n",
        nargs="+",
        type=timed_size,
        default=[1e5, 1e6, 1e7],
        help=f"pairs of the throughput runs, one or more sizes (1e5 accepted), each at least "
        f"{MIN_N:,}",
    )
    parser.add_argument("--batch", type=count, default=10**5)
    parser.add_argument("--repeats", type=count, default=3)
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    parser.add_argument(
        "--peak-max", type=size, default=1e7, help="largest N of the peers' peak runs"
    )
    parser.add_argument(
        "--state-max",
        type=size,
        default=1e8,
        help="largest N of the state-bytes table and of the streaming metric's peak run "
        "(1e6, 1e7, 1e8 up to it; 1e5 runs neither)",
    )
    parser.add_argument("--write", action="store_true", help="write docs/bench_streaming.md")
    parser.add_argument("--_peak", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.n = sorted({int(n) for n in args.n})
    if args.threads:
        torch.set_num_threads(args.threads)
    if args._peak:
        name, n = args._peak
        print(json.dumps(peak_child(name, int(n), args.device, args.batch)))
        return
    load_start = load_average()
    rows = throughput(args)
    sizes = state_sizes(args)
    peak = peaks(args)
    text = tables(args, rows, sizes, peak, load_start)
    print(text)
    if args.write:
        (ROOT / "docs" / "bench_streaming.md").write_text(text)


if __name__ == "__main__":
    main()
