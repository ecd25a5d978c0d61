"""Time and memory of the metric core against one sort and against peer libraries.

For each N (default 1e6 and 1e7): q ~ Beta(0.3, 0.3) in float32, y ~ Bernoulli(q). In one
process, interleaved, after a warm-up, the median of ``--repeats`` runs of:

- CalibErr + interval: ``calibration_error_ci`` (S = 10,000 draws, bin size 5000);
- CalibErr alone: ``calibration_error``;
- one ``torch.sort`` of the same N float32 values (the yardstick: exact equal-mass bins
  are at most one sort away);
- our error on torchmetrics' 15 equal-width bins as the plug-in (``debias=False``), the
  row compared with torchmetrics, and as the debiased estimate (the default);
- torchmetrics' ``BinaryCalibrationError(n_bins=15, norm="l2")``, update + compute;
- torch-uncertainty's adaptive calibration error with N/β bins (β = ``--bin-size``), if
  it can be imported. It was not installed where docs/bench_metric.md was measured, so
  that row has never run against the package itself (its ``AdaptiveCalibrationError(
  task="binary", num_bins=..., norm="l2")``, read from its source);
  tests/test_benchmark_scripts.py checks the bins it asks for with a stand-in.

Before timing, the plug-in row's quantity is checked on float64 copies of the pairs, ours
against torchmetrics' (so that both bin with float64 edges and sum in float64): the two
must agree to ``PEER_RTOL``, or the script stops. The row itself bins the float32 input
with float32 edges (docs/measures.md), so a pair within rounding of an edge can fall in
the next bin (1 of 2·10⁷ pairs at seed 0; 3 of 10⁷ at seed 2, a relative 3·10⁻⁴): the
check prints its value too, and stops the script where it is more than 1% (5/√N below
N = 2.5·10⁵) from the float64 one (a fault of the float32 path alone).
torchmetrics' own row sums the float32 input in float32, whose rounding moves its value
(at N = 10⁷ tenfold, see docs/bench_metric.md); the check prints it as well.

The machine may be shared, so what the table reports is the ratio to the sort measured in
the same process with the runs interleaved, not absolute times.

Peak memory: each function runs once in a fresh subprocess (glibc's mmap threshold lowered
so that freed tensors leave the resident set); the extra peak is the rise of the resident
high-water mark (reset through /proc/self/clear_refs once the inputs exist, where the
kernel allows it), reported as a multiple of the input's bytes (q + y). On a GPU it is the
CUDA allocator's peak over what it held before the call (``torch.cuda.max_memory_allocated``):
the host's resident set does not hold device memory, and had read about 0 there.

    python benchmarks/bench_metric.py --sizes 1e6 1e7 --repeats 5 --threads 1 --write
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._args import at_least_two, count, device, size  # noqa: E402
from benchmarks._record import command_line, load_average, machine_load  # noqa: E402
from calib_metrics.functional import calibration_error, calibration_error_ci  # noqa: E402

DOC = ROOT / "docs" / "bench_metric.md"
TARGET_TIME = "≤ 1.0× the sort at 1e7 (aim 0.5×)"
TARGET_MEMORY = "≤ 2× the input's bytes"
OURS_PLUGIN = "uniform 15 bins, l2 plug-in (ours, debias=False)"
PEER = "torchmetrics BinaryCalibrationError (15 bins, l2)"
# Both sum in float64 over the same bins: only the order of the additions differs.
PEER_RTOL = 1e-9
# The timed row (float32 edges) against the same quantity on float64 copies: pairs within
# an ulp of an edge may change bins (3·10⁻⁴ relative at 10⁷, seed 2; one pair moves these
# calibrated pairs' error by about 1/√N relative: 3% at 10³), a float32 sum (torchmetrics'
# own row: tenfold at 10⁷) may not. The bound is the larger of ROW_RTOL and 5/√N.
ROW_RTOL = 1e-2


def row_tolerance(n: int) -> float:
    """How far apart, relatively, the timed row and its float64 value may be at N = n."""
    return max(ROW_RTOL, 5 / n**0.5)


def make_inputs(n: int, device: str, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """q ~ Beta(0.3, 0.3) float32, y ~ Bernoulli(q) float32, on ``device``."""
    g = torch.Generator(device=device).manual_seed(seed)
    # torch.distributions takes no generator: seed the global one.
    torch.manual_seed(seed)
    q = torch.distributions.Beta(
        torch.tensor(0.3, device=device), torch.tensor(0.3, device=device)
    ).sample((n,))
    q = q.to(torch.float32).clamp_(0, 1)
    y = torch.bernoulli(q, generator=g)
    return q, y


def peer_torchmetrics() -> Callable | None:
    try:
        from torchmetrics.classification import BinaryCalibrationError
    except ImportError:
        return None

    def run(q: torch.Tensor, y: torch.Tensor) -> float:
        metric = BinaryCalibrationError(n_bins=15, norm="l2").to(q.device)
        metric.update(q, y)
        return metric.compute().item()

    return run


def peer_torch_uncertainty(bin_size: int) -> tuple[Callable | None, str]:
    """torch-uncertainty's adaptive (equal-mass) error with N/``bin_size`` bins, the
    bins of CalibErr's row."""
    try:
        from torch_uncertainty.metrics.classification import AdaptiveCalibrationError
    except Exception as err:  # a broken install raises more than ImportError
        return None, f"not installed ({type(err).__name__}: {err})"

    def run(q: torch.Tensor, y: torch.Tensor) -> float:
        bins = max(1, q.numel() // bin_size)
        metric = AdaptiveCalibrationError(task="binary", num_bins=bins, norm="l2")
        metric = metric.to(q.device)
        metric.update(q, y.long())
        return metric.compute().item()

    return run, "installed"


def candidates(samples: int, bin_size: int) -> dict[str, Callable | None]:
    def ours_ci(q, y):
        g = torch.Generator(device=q.device).manual_seed(0)
        r = calibration_error_ci(q, y, bin_size=bin_size, n_samples=samples, generator=g)
        return r.error.item(), r.lower.item(), r.upper.item()

    def ours(q, y):
        return calibration_error(q, y, bin_size=bin_size).item()

    def sort(q, y):
        return torch.sort(q)[0][-1].item()

    def ours_uniform(q, y):
        return calibration_error(q, y, binning="uniform", n_bins=15, debias=False).item()

    def ours_uniform_debiased(q, y):
        return calibration_error(q, y, binning="uniform", n_bins=15).item()

    tu, _ = peer_torch_uncertainty(bin_size)
    return {
        "CalibErr + interval (ours)": ours_ci,
        "CalibErr (ours)": ours,
        "torch.sort of q": sort,
        OURS_PLUGIN: ours_uniform,
        "uniform 15 bins, l2 debiased (ours, the default)": ours_uniform_debiased,
        PEER: peer_torchmetrics(),
        f"torch-uncertainty adaptive CE (N/{bin_size} bins, l2)": tu,
    }


def check_peer(
    q: torch.Tensor,
    y: torch.Tensor,
    plugin: Callable[[torch.Tensor, torch.Tensor], float],
    row: float,
) -> dict[str, float]:
    """The plug-in row's quantity (``plugin``) and torchmetrics' on float64 copies of the
    pairs, which must agree to ``PEER_RTOL``: the rows compared must be the same quantity
    on the same bins, so that only the time differs. The row's own value ``row`` (the
    float32 input, float32 edges: a pair within rounding of an edge may change bins) must
    be within :func:`row_tolerance` of ours on the copies, so that a fault of the float32 path
    alone stops the script too. Raises RuntimeError otherwise."""
    q64, y64 = q.double(), y.double()
    ours, peer = plugin(q64, y64), peer_torchmetrics()(q64, y64)
    if abs(ours - peer) > PEER_RTOL * abs(peer):
        raise RuntimeError(
            f"{OURS_PLUGIN} gave {ours!r} on float64 copies of the pairs, torchmetrics "
            f"{peer!r}: not the same quantity, so their times are not comparable"
        )
    tolerance = row_tolerance(q.numel())
    if abs(row - ours) > tolerance * abs(ours):
        raise RuntimeError(
            f"{OURS_PLUGIN} gave {row!r} on the float32 input and {ours!r} on float64 "
            f"copies: more apart than bin edges an ulp apart explain ({tolerance:.3g})"
        )
    return {"ours_float64": ours, "peer_float64": peer, "ours": row}


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_all(
    n: int, device: str, repeats: int, samples: int, bin_size: int
) -> tuple[dict[str, float], dict[str, object]]:
    q, y = make_inputs(n, device)
    fns = {k: f for k, f in candidates(samples, bin_size).items() if f is not None}
    values = {name: fn(q, y) for name, fn in fns.items()}  # warm-up, and the answers
    if PEER in values:
        check = check_peer(q, y, fns[OURS_PLUGIN], values[OURS_PLUGIN])
        values["check"] = dict(check, peer=values[PEER])
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():  # interleaved, so load changes hit every entry alike
            synchronize(device)
            start = time.perf_counter()
            fn(q, y)
            synchronize(device)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}, values


# ------------------------------------------------------------------------- memory
def _resident_peak_kib() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def extra_peak(run: Callable[[], object], device: str) -> tuple[int, bool]:
    """Bytes that ``run()`` adds at its peak, and whether the peak was reset before it.

    On a GPU, the CUDA allocator's peak over what it held before; elsewhere the rise of
    the resident high-water mark (which a GPU's tensors do not enter)."""
    if device.startswith("cuda"):
        cuda = torch.device(device)
        torch.cuda.synchronize(cuda)
        torch.cuda.reset_peak_memory_stats(cuda)
        before = torch.cuda.memory_allocated(cuda)
        run()
        torch.cuda.synchronize(cuda)
        return torch.cuda.max_memory_allocated(cuda) - before, True
    reset = _reset_peak()
    before = _resident_peak_kib()
    run()
    return (_resident_peak_kib() - before) * 1024, reset


def memory_child(name: str, n: int, device: str, samples: int, bin_size: int) -> None:
    """Run one function once on fresh inputs; print its extra peak memory."""
    fn = candidates(samples, bin_size)[name]
    q, y = make_inputs(n, device)
    small_q, small_y = make_inputs(1000, device, seed=1)
    fn(small_q, small_y)  # load lazily imported code before the baseline
    gc.collect()
    extra, reset = extra_peak(lambda: fn(q, y), device)
    input_bytes = q.numel() * q.element_size() + y.numel() * y.element_size()
    print(json.dumps({"extra": extra, "input": input_bytes, "reset": reset}))


def measure_memory(
    name: str, n: int, device: str, samples: int, bin_size: int, threads: int
) -> dict | None:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", PYTHONPATH=str(ROOT))
    cmd = [
        sys.executable,
        __file__,
        "--memory-child",
        name,
        "--sizes",
        str(n),
        "--device",
        device,
        "--samples",
        str(samples),
        "--bin-size",
        str(bin_size),
        # The child had run at torch's default thread count, whatever the header said.
        "--threads",
        str(threads),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        print(f"memory run of {name!r} failed: {done.stderr.strip()[-500:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------- report
def peak_kind(device: str) -> str:
    """What the extra peak memory column measures on ``device`` (see :func:`extra_peak`)."""
    if device.startswith("cuda"):
        return "rise of the CUDA allocator's peak (`torch.cuda.max_memory_allocated`)"
    return "rise of the resident high-water mark"


def format_value(value: object) -> str:
    if isinstance(value, tuple):
        error, lower, upper = value
        return f"{error:.5f} [{lower:.5f}, {upper:.5f}]"
    if isinstance(value, float):
        return f"{value:.5f}"
    return str(value)


def short(n: int) -> str:
    """1000000 -> '1e6'."""
    return f"{n:.0e}".replace("e+0", "e").replace("e+", "e")


def table(n: int, medians: dict[str, float], values: dict, memory: dict[str, dict | None]) -> str:
    sort_time = medians["torch.sort of q"]
    rows = [
        f"**N = {short(n)}**",
        "",
        "| method | median time (s) | ratio to sort | extra peak memory / input bytes | value |",
        "|---|---:|---:|---:|---|",
    ]
    for name, median in medians.items():
        mem = memory.get(name)
        mem_text = f"{mem['extra'] / mem['input']:.2f}×" if mem else "–"
        value = "" if name == "torch.sort of q" else format_value(values[name])
        rows.append(f"| {name} | {median:.4f} | {median / sort_time:.2f}× | {mem_text} | {value} |")
    if "check" in values:
        check = values["check"]
        gap = abs(check["ours_float64"] - check["peer_float64"]) / abs(check["peer_float64"])
        rows += [
            "",
            f"Checked before timing: {OURS_PLUGIN.split(' (')[0]} on float64 copies of the "
            f"pairs, ours {check['ours_float64']:.10f}, torchmetrics "
            f"{check['peer_float64']:.10f} (relative difference {gap:.1e}); on the float32 "
            f"input (float32 edges), ours, the row: {check['ours']:.10f}; torchmetrics' "
            f"row: {check['peer']:.10f}.",
        ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", type=device, default="cpu")
    parser.add_argument("--sizes", nargs="+", type=size, default=[1e6, 1e7])
    parser.add_argument("--repeats", type=count, default=5)
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    parser.add_argument("--samples", type=at_least_two, default=10000, help="interval draws S")
    parser.add_argument(
        "--bin-size",
        type=count,
        default=5000,
        help="β: CalibErr's bin size, and N/β bins for torch-uncertainty's row (run only "
        "where torch-uncertainty imports)",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes]
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.memory_child:
        memory_child(args.memory_child, sizes[0], args.device, args.samples, args.bin_size)
        return 0

    _, tu_status = peer_torch_uncertainty(args.bin_size)
    load_before = load_average()
    header = [
        "# Benchmark: calibration metric core",
        "",
        f"`{command_line('bench_metric.py', torch.get_num_threads())}` on {args.device} "
        f"(torch {torch.__version__}, {os.cpu_count()} CPUs). q ~ Beta(0.3, 0.3) float32, "
        "y ~ Bernoulli(q) "
        f"float32; bin size {args.bin_size}, S = {args.samples} interval draws. Times are "
        f"medians of {args.repeats} interleaved runs after a warm-up; the ratio is to one "
        "`torch.sort` of q in the same process. Extra peak memory: "
        f"{peak_kind(args.device)} in a fresh process, over the bytes of q + y.",
        "",
        f"Targets: CalibErr + interval {TARGET_TIME}; extra peak memory {TARGET_MEMORY}.",
        "The value column gives CalibErr [lower, upper]: the functional defaults at the bin "
        "size above, the debiased error and its pair-bootstrap interval (Poisson resamplings "
        "of the bins' pairs; interval=\"paper\" is Algorithm 2's). torchmetrics and our "
        "uniform binning use the same 15 bins; the plug-in row (debias=False) is the "
        "quantity torchmetrics computes, checked against it before timing (below each "
        "table), the debiased row is the default; torchmetrics sums in float32, which "
        "moves its value. On a machine "
        "shared by many processes, pass --threads 1: with several intra-op threads every "
        "tensor operation waits for all of them to be scheduled, which measures the load, "
        "not the algorithm.",
        f"torch-uncertainty: {tu_status}.",
        "",
    ]
    print("\n".join(header))
    sections = []
    for n in sizes:
        medians, values = time_all(n, args.device, args.repeats, args.samples, args.bin_size)
        memory = {}
        if not args.no_memory:
            for name in medians:
                memory[name] = measure_memory(
                    name, n, args.device, args.samples, args.bin_size, torch.get_num_threads()
                )
        section = table(n, medians, values, memory)
        print(section + "\n", flush=True)
        sections.append(section)
    load = machine_load(load_before)
    print(load)
    if args.write:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text("\n".join([*header, load, ""]) + "\n" + "\n\n".join(sections) + "\n")
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
