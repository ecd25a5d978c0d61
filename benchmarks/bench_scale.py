"""Exact vs streaming vs torchmetrics from N = 10⁴ to 10⁹: time, memory and drift.

Every peer runs in the same process on the same pairs, so the printed ratios hold on a
loaded machine even where the absolute times do not. Pairs are calibrated,
y ~ Bernoulli(q), with q uniform or "beta0.3" (a symmetric power map of a uniform with
Beta(0.3, 0.3)'s U shape), drawn in batches of 10⁶ from fixed
seeds, all of them before any timing (float32 q and bool y, 5 bytes a pair: 5 GB at
10⁹): the exact mode bins the whole tensors, the streaming metric and torchmetrics are
fed consecutive slices of 10⁶ pairs of them (views, no copies), so no method's time
includes drawing the data. Every method is called once, untimed, before the first size
(one-time costs: thread pools, allocator arenas, first calls); at a size where every
method's call takes under a second, the methods are called ``--repeats`` times,
interleaved, and each gets its best time (one call is noise there).

Per N it measures, for each method, the time from the pairs in memory to the error and
its extra peak memory (the rise of the process' peak RSS over its RSS before the call,
the peak reset through /proc/self/clear_refs; the largest over the calls):

* exact: what ``calibration_error(q, y, bin_size="auto")`` does, ``adaptive_binning``
  (validation included) on all pairs and the debiased l2 error of its bins, only up to
  ``--exact-max`` and only when the binning's estimated working memory fits in the
  memory free beside the pairs; next to one ``torch.sort`` of q (up to ``--sort-max``:
  its values and int64 indices take 12 bytes a pair, 12 GB at 10⁹), and its extra peak
  memory next to the input's bytes;
* streaming: ``CalibrationError(streaming=True, bin_size="auto")`` fed batch by batch,
  then ``compute()``; its extra peak memory (the sketch and the pass's temporaries), and
  apart from it its state bytes after the pass (the sketch, plus the pairs it keeps
  exactly below ``2·resolution``: what it holds, not a peak). β only enters at
  ``compute()``, so the β = 5000 metric takes the same state by ``merge_state`` (one
  pass over the data, not two) and its state bytes are printed too;
* torchmetrics' ``BinaryCalibrationError`` (15 bins, l1; it keeps every pair) up to
  ``--torchmetrics-max``, fed the same slices (its int64 targets converted before the
  timing), update + compute, and the streaming and exact times over its time at each N
  where it ran ("÷ torchmetrics");
* drift: streaming − exact, plug-in and debiased, ``bin_size`` = 5000 and "auto";
* the 1-minute load average, as the shared machine's timings depend on it.

The answers are checked at each N after the first timed call of each method, before the
repeated ones (or the script stops): streaming − exact within the streaming metric's
``streaming_tolerance()`` (and each drift entry within its own), and torchmetrics given
float64 copies of the pairs (so that it sums in float64, as ours does) equal to our l1
plug-in on its 15 bins, the pairs at q = 1 left out (torchmetrics bins them apart, our
last bin holds them). The timed torchmetrics call sums the float32 input in float32,
which moves its value a little; it is kept in the JSON rows ("tm_error").

Run ``python benchmarks/bench_scale.py --threads 1 --write`` (add ``--max 1e8
--exact-max 1e8``, or 1e9 where the memory allows: about 10 GB at 10⁹, see
docs/streaming.md);
``--write`` puts the tables in ``docs/streaming.md`` and the plot in
``docs/img/scale.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torchmetrics.classification import BinaryCalibrationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._args import count, size
from benchmarks._record import command_line
from benchmarks.bench_streaming import SAME_ATOL, SAME_RTOL, check_same
from calib_metrics import CalibrationError
from calib_metrics.functional import adaptive_binning, calibration_error
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.binning import Bins, available_bytes, exact_working_bytes
from calib_metrics.functional.calibration import error_from_bins

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ROOT = Path(__file__).resolve().parents[1]
BATCH = 1_000_000
SIZES = (10**4, 10**5, 10**6, 10**7, 10**8, 10**9)
# A call shorter than this is repeated (best of --repeats): one timing of it is noise.
SHORT_S = 1.0
BEGIN, END = "<!-- bench_scale:begin -->", "<!-- bench_scale:end -->"


def batches(n: int, dist: str):
    """Calibrated pairs in batches of at most 10⁶, the same for every caller."""
    for i, start in enumerate(range(0, n, BATCH)):
        take = min(BATCH, n - start)
        g = torch.Generator().manual_seed(1000 * i + (dist == "beta0.3"))
        if dist == "uniform":
            q = torch.rand(take, generator=g)
        else:
            u = torch.rand(take, generator=g)
            # Beta(0.3, 0.3) by inverting its CDF is slow; a symmetric power map of a
            # uniform has the same U shape and is drawn from the generator alone.
            q = torch.where(u < 0.5, (2 * u) ** (1 / 0.3) / 2, 1 - (2 - 2 * u) ** (1 / 0.3) / 2)
        yield q, torch.bernoulli(q, generator=g).bool()


def whole(n: int, dist: str) -> tuple[torch.Tensor, torch.Tensor]:
    q = torch.empty(n)
    y = torch.empty(n, dtype=torch.bool)
    for i, (bq, by) in enumerate(batches(n, dist)):
        q[i * BATCH : i * BATCH + bq.numel()] = bq
        y[i * BATCH : i * BATCH + bq.numel()] = by
    return q, y


def slices(q: torch.Tensor, y: torch.Tensor):
    """The pairs in memory as consecutive batches of at most 10⁶: views, not copies, so
    feeding them costs the consumer's work alone."""
    for start in range(0, q.numel(), BATCH):
        yield q[start : start + BATCH], y[start : start + BATCH]


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    return 0


def release_free_memory() -> None:
    """Hand the allocator's free pages back to the system (glibc), so that a call's peak
    RSS counts the memory it allocates rather than hiding it in pages freed earlier."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def measured(fn, clock=time.perf_counter):
    """(result, seconds, extra peak bytes) of fn(); seconds by ``clock`` (wall time by
    default; ``time.process_time`` counts only this process' CPU time)."""
    release_free_memory()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status("VmRSS")
    start = clock()
    out = fn()
    seconds = clock() - start
    return out, seconds, max(0, _status("VmHWM") - before)


def streaming_metric(q: torch.Tensor, y: torch.Tensor) -> CalibrationError:
    """A streaming CalibrationError (bin_size="auto") fed every batch (it keeps the
    pairs exactly while they fit in the sketch's memory, ``sketch.buffer_rows``), its
    error computed."""
    metric = CalibrationError(streaming=True, bin_size="auto", validate_args=False)
    for bq, by in slices(q, y):
        metric.update(bq, by)
    metric.compute()
    return metric


def exact_error(q: torch.Tensor, y: torch.Tensor, bin_size: int) -> tuple[Bins, float]:
    """``calibration_error(q, y, bin_size=bin_size)``'s work, its bins kept for the drift
    table: the adaptive bins (validation included) and their debiased l2 error."""
    bins = adaptive_binning(q, y, bin_size=bin_size)
    return bins, error_from_bins(bins, debias=True).item()


def with_bin_size(fed: CalibrationError, bin_size: int) -> CalibrationError:
    """A streaming metric with ``bin_size`` holding ``fed``'s state (the same sketch
    and kept pairs: β only enters at ``compute()``), its bins computed."""
    metric = CalibrationError(streaming=True, bin_size=bin_size, validate_args=False)
    metric.merge_state(fed)
    with warnings.catch_warnings():  # torchmetrics: "compute ... before the update"
        warnings.simplefilter("ignore", UserWarning)
        metric.class_bins()
    return metric


def state_bytes(metric: CalibrationError) -> int:
    tensors = []
    for value in metric.metric_state.values():
        tensors += value if isinstance(value, list) else [value]
    return sum(t.numel() * t.element_size() for t in tensors)


def streaming_errors(metrics: dict) -> tuple[dict, dict]:
    """Each metric's plug-in and debiased error, each from the bins the metric forms for
    that estimator (the sketch redraws cut cells' labels for the plug-in only), and the
    ``streaming_tolerance()`` of each."""
    out, tolerance = {}, {}
    for bin_size, metric in metrics.items():
        chosen = metric.debias
        for debias in (False, True):
            metric.debias = debias
            bins = metric.class_bins()[0]
            out[f"{bin_size}/{debias}"] = error_from_bins(bins, debias=debias).item()
            tolerance[f"{bin_size}/{debias}"] = metric.streaming_tolerance().item()
        metric.debias = chosen
    return out, tolerance


def exact_errors(bins_by_size: dict) -> dict:
    out = {}
    for bin_size, bins in bins_by_size.items():
        for debias in (False, True):
            out[f"{bin_size}/{debias}"] = error_from_bins(bins, debias=debias).item()
    return out


def fits(what: str, n: int, need: int) -> bool:
    """Whether ``need`` bytes fit in the memory free now (says so when not)."""
    free = available_bytes(torch.device("cpu"))
    if free is not None and need > free:
        print(
            f"{what} at N = {n:.0e} skipped: needs {need / 2**30:.1f} GiB, "
            f"{free / 2**30:.1f} GiB free",
            flush=True,
        )
        return False
    return True


def torchmetrics_error(q: torch.Tensor, y: torch.Tensor) -> float:
    metric = BinaryCalibrationError(n_bins=15, validate_args=False)
    for bq, by in slices(q, y):
        metric.update(bq, by)
    return metric.compute().item()


def within(what: str, got: float, want: float, tolerance: float, n: int) -> None:
    """Stop the script unless ``got`` is within ``tolerance`` of ``want``, plus the slack
    of two float64 sums over the same bins in another order."""
    slack = SAME_RTOL * abs(want) + SAME_ATOL
    check_same(what, got, want, tolerance + slack, n, script="bench_scale")


def check_peer(q: torch.Tensor, y: torch.Tensor) -> dict:
    """torchmetrics' l1 error of float64 copies of the pairs against our l1 plug-in on the
    same 15 bins (both sum in float64), the pairs at q = 1 left out: torchmetrics bins
    them apart, our last bin holds them. Stops the script where the two differ."""
    below_one = q < 1
    q64, y_kept = q[below_one].double(), y[below_one]
    peer = torchmetrics_error(q64, y_kept.long())
    ours = calibration_error(q64, y_kept, binning="uniform", n_bins=15, norm="l1", debias=False)
    within(
        "torchmetrics (float64 copies) vs our l1 plug-in on its 15 bins",
        peer,
        ours.item(),
        0,
        q.numel(),
    )
    return {"peer_float64": peer, "ours": ours.item()}


def check_answers(q: torch.Tensor, y: torch.Tensor, results: dict) -> dict:
    """The first timed call's answers, where two methods define the same number (see the
    module docstring); what was compared, for the JSON row."""
    n, checked = q.numel(), {}
    if "exact" in results:
        stream, exact = results["stream"], results["exact"][1]
        tolerance = stream.streaming_tolerance().item()
        within("streaming vs exact error", stream.compute().item(), exact, tolerance, n)
    if "tm" in results:
        checked["tm_check"] = check_peer(q, y)
    return checked


def sort_once(q: torch.Tensor) -> None:
    torch.sort(q)  # its 12 bytes a pair are freed on return, not held past the timing


def timed(
    calls: dict, repeats: int, check: Callable[[dict], None] | None = None
) -> tuple[dict, int]:
    """{name: (first result, best seconds, largest extra peak)} of each of ``calls``
    (zero-argument functions), and the number of rounds. One round calls each in turn
    (interleaved, so a change of the machine's load hits them alike); more rounds, up to
    ``repeats``, only where every call of the first took under ``SHORT_S``. ``check``
    is given the first round's results ({name: result}) before any further round."""
    first = {name: measured(fn) for name, fn in calls.items()}
    if check is not None:
        check({name: result for name, (result, _, _) in first.items()})
    rounds = repeats if max(s for _, s, _ in first.values()) < SHORT_S else 1
    best = {name: [s] for name, (_, s, _) in first.items()}
    peak = {name: [p] for name, (_, _, p) in first.items()}
    for _ in range(rounds - 1):
        for name, fn in calls.items():
            _, seconds, extra = measured(fn)
            best[name].append(seconds)
            peak[name].append(extra)
    return {name: (first[name][0], min(best[name]), max(peak[name])) for name in calls}, rounds


def run_size(n: int, dist: str, args) -> dict | None:
    row: dict = {"n": n, "dist": dist, "load": os.getloadavg()[0]}
    with_peer = n <= args.torchmetrics_max
    # float32 q and bool y; torchmetrics' int64 targets and the float64 copy of q that
    # checks it on top where it runs.
    if not fits("the pairs", n, 5 * n + 16 * n * with_peer):
        return None
    q, y = whole(n, dist)
    row["input_bytes"] = q.numel() * q.element_size() + y.numel() * y.element_size()
    calls = {"stream": lambda: streaming_metric(q, y)}
    if with_peer:
        y_long = y.long()
        calls["tm"] = lambda: torchmetrics_error(q, y_long)
    bin_size = resolve_bin_size("auto", n)
    if n <= args.exact_max and fits("exact", n, exact_working_bytes(n, bin_size, 4)):
        calls["exact"] = lambda: exact_error(q, y, bin_size)
        if n <= args.sort_max:
            calls["sort"] = lambda: sort_once(q)
    checked = {}
    results, row["calls"] = timed(
        calls, args.repeats, check=lambda first: checked.update(check_answers(q, y, first))
    )
    row.update(checked)
    for name, (_, seconds, peak) in results.items():
        row[f"{name}_s"] = seconds
        if name != "sort":
            row[f"{name}_peak"] = peak
    if "tm" in results:
        row["tm_error"] = results["tm"][0]
    auto = results["stream"][0]
    fixed = with_bin_size(auto, 5000)
    row["stream_state"] = state_bytes(auto)
    row["stream_state_5000"] = state_bytes(fixed)
    row["stream"], row["tolerance"] = streaming_errors({5000: fixed, "auto": auto})
    if "exact" in results:
        bins = results["exact"][0][0]
        row["exact"] = exact_errors({5000: adaptive_binning(q, y, bin_size=5000), "auto": bins})
        check_drift(row)
    print(json.dumps(row), flush=True)
    return row


def check_drift(row: dict) -> None:
    """Every drift entry, streaming − exact, within its ``streaming_tolerance()``."""
    for key, exact in row["exact"].items():
        bin_size, debias = key.split("/")
        what = f"drift at β = {bin_size}, {'debiased' if debias == 'True' else 'plug-in'}"
        within(what, row["stream"][key], exact, row["tolerance"][key], row["n"])


def mib(x: float) -> str:
    return f"{x / 2**20:,.1f}"


def exact_cells(r: dict) -> tuple[str, str]:
    """The exact mode's time (× sort where the sort ran) and extra peak (× input)."""
    if "exact_s" not in r:
        return "—", "—"
    sort = f" ({r['exact_s'] / r['sort_s']:.2f}×)" if "sort_s" in r else " (no sort)"
    return f"{r['exact_s'] / r['n']:.1e}{sort}", peak_cell(r, "exact")


def torchmetrics_ratio(r: dict) -> str:
    """Streaming / exact time over torchmetrics' time at the same N ("—" where one of
    the two did not run)."""
    if "tm_s" not in r:
        return "—"
    ratios = [f"{r[k] / r['tm_s']:.2f}×" if k in r else "—" for k in ("stream_s", "exact_s")]
    return " / ".join(ratios)


def peak_cell(r: dict, name: str) -> str:
    """A method's extra peak memory and its multiple of the input's bytes."""
    return f"{mib(r[name + '_peak'])} MiB ({r[name + '_peak'] / r['input_bytes']:.2f}×)"


TIMED = (
    "Each time is one call's, from the pairs in memory to the error: exact, "
    "`adaptive_binning` (validation included) and the debiased l2 error of its bins (what "
    "`calibration_error` does); streaming, `update` on slices of 10⁶ pairs and `compute()`; "
    "torchmetrics, `update` on the same slices and `compute()` (l1, 15 equal-width bins). "
    "Extra peak: the rise of the process' peak RSS during the call. Streaming state: the "
    "bytes the metric holds after the pass (not a peak; its peak is the column before). "
    "Checked after the first call, before the others: streaming − exact within "
    "`streaming_tolerance()` (every drift entry below too), torchmetrics on float64 copies "
    "equal to our l1 plug-in on its 15 bins."
)


def tables(rows: list[dict]) -> str:
    out = [
        TIMED,
        "",
        "| q | N | exact s/pair (× sort) | exact extra peak (× input) | streaming s/pair | "
        "streaming extra peak (× input) | streaming state, not a peak (β = auto / 5000) | "
        "torchmetrics s/pair | torchmetrics extra peak | "
        "streaming / exact time ÷ torchmetrics | calls | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ex, mem = exact_cells(r)
        tm = f"{r['tm_s'] / r['n']:.1e}" if "tm_s" in r else "—"
        tm_peak = f"{mib(r['tm_peak'])} MiB" if "tm_s" in r else "—"
        state = f"{mib(r['stream_state'])} / {mib(r['stream_state_5000'])} MiB"
        out.append(
            f"| {r['dist']} | {r['n']:.0e} | {ex} | {mem} | {r['stream_s'] / r['n']:.1e} | "
            f"{peak_cell(r, 'stream')} | {state} | {tm} | {tm_peak} | {torchmetrics_ratio(r)} | "
            f"{r['calls']} | {r['load']:.1f} |"
        )
    out += [
        "",
        "Drift, streaming − exact (plug-in / debiased), each within the streaming metric's "
        "`streaming_tolerance()`:",
        "",
        "| q | N | β = 5000: exact | streaming − exact | β = auto: exact | streaming − exact |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "exact" not in r:
            continue
        cells = []
        for b in ("5000", "auto"):
            e = [r["exact"][f"{b}/{d}"] for d in (False, True)]
            s = [r["stream"][f"{b}/{d}"] for d in (False, True)]
            cells.append(f"{e[0]:.5f} / {e[1]:.5f}")
            cells.append(f"{s[0] - e[0]:+.1e} / {s[1] - e[1]:+.1e}")
        out.append(f"| {r['dist']} | {r['n']:.0e} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot(rows: list[dict], path: Path) -> Figure:
    """Time and memory against N on uniform q, saved at ``path``; the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    rows = [r for r in rows if r["dist"] == "uniform"]
    times = {
        "exact": "exact_s",
        "streaming": "stream_s",
        "torchmetrics": "tm_s",
        "torch.sort": "sort_s",
    }
    for name, key in times.items():
        have = [r for r in rows if key in r]
        if have:
            ax_t.loglog([r["n"] for r in have], [r[key] for r in have], "o-", label=name)
    # The streaming state is what the metric holds, not a peak: its own dashed line,
    # beside the streaming metric's measured peak.
    memory = {
        "exact, extra peak": ("exact_peak", "C0", "o-"),
        "streaming, extra peak": ("stream_peak", "C1", "o-"),
        "streaming, state (not a peak)": ("stream_state", "C1", "s--"),
        "torchmetrics, extra peak": ("tm_peak", "C2", "o-"),
    }
    for name, (key, color, style) in memory.items():
        # A peak below the RSS page granularity reads 0: left out of the log scale.
        sized = [r for r in rows if r.get(key, 0) > 0]
        if sized:
            mem = [r[key] / 2**20 for r in sized]
            ax_m.loglog([r["n"] for r in sized], mem, style, color=color, label=name)
    ax_t.set(xlabel="N pairs", ylabel="seconds", title="time to the error (uniform q)")
    ax_m.set(xlabel="N pairs", ylabel="MiB", title="extra peak memory, and streaming state")
    ax_t.legend()
    ax_m.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def warm_up() -> None:
    """One call of every timed method: one-time costs (thread pools, allocator arenas,
    first calls) are not the peers'."""
    q, y = whole(200_000, "beta0.3")
    exact_error(q, y, 447)
    streaming_metric(q[:10_000], y[:10_000])
    torchmetrics_error(q[:10_000], y[:10_000].long())
    sort_once(q)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of ``argv`` (default: the command line), checked: argparse's usage
    line, one error line and exit 2 for any it refuses. Runs nothing: the tests read the
    documented commands through it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max", type=size, default=1e7)
    parser.add_argument("--exact-max", type=size, default=1e7)
    parser.add_argument("--torchmetrics-max", type=size, default=1e7)
    parser.add_argument("--sort-max", type=size, default=1e8)
    parser.add_argument(
        "--repeats",
        type=count,
        default=5,
        help=f"calls of each method where every call takes under {SHORT_S:g} s (best time)",
    )
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    if args.max < SIZES[0]:
        parser.error(f"--max: the sizes start at {SIZES[0]:.0e}; {args.max:g} runs none")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    warm_up()
    sizes = [n for n in SIZES if n <= args.max]
    rows = [run_size(n, dist, args) for n in sizes for dist in ("uniform", "beta0.3")]
    rows = [r for r in rows if r is not None]
    text = tables(rows)
    print(text)
    if args.write:
        write_block(ROOT / "docs" / "streaming.md", (BEGIN, END), "bench_scale.py", text)
        plot(rows, ROOT / "docs" / "img" / "scale.png")


def write_block(doc: Path, markers: tuple[str, str], script: str, text: str) -> None:
    """Put ``text`` with the command that made it between ``markers`` in ``doc`` (appended
    when the markers are not there yet)."""
    begin, end = markers
    body = doc.read_text()
    command = command_line(script, torch.get_num_threads())
    block = f"{begin}\n`{command}`, torch {torch.__version__}:\n\n{text}\n{end}"
    if begin in body:
        body = body[: body.index(begin)] + block + body[body.index(end) + len(end) :]
    else:
        body += "\n" + block + "\n"
    doc.write_text(body)


if __name__ == "__main__":
    main()
