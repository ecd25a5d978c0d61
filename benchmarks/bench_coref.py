"""Benchmark: batched coreference sampling and exact pairwise marginals vs a Python loop.

Times, in one process and on one thread, for the antecedent-ranking model of the
paper's §5:

* sampled clusterings (``sample_entity_roots``, and the two calls ``sample_antecedents``
  + ``entity_roots``) of one document of
  50, 200 and 800 mentions, 100 and 1,000 samples, against a straightforward Python
  loop (per sample: draw each ``a_i`` with ``random.choices`` from the softmax,
  union-find), wall-clock and CPU time (the machine is shared: CPU time leaves out
  what other processes took);
* 1,000 sampled clusterings of one 200-mention document with the pairwise estimate
  (``coreference_marginals(n_samples=1000)``), the loop adding numpy pairwise
  indicator accumulation;
* the exact dynamic program (``coreference_marginals(n_samples=None)``);
* the same over "the whole test set": the OntoGUM test documents' mention counts;
* peak memory of the exact DP, the sampler and the sampled estimate for N = 1,000 and
  3,000 mentions (each in a fresh subprocess: ``ru_maxrss`` delta on CPU,
  ``torch.cuda.max_memory_allocated`` on CUDA).

Scores are random: the time of sampling, pointer jumping, the pairwise comparison
and the DP does not depend on the score values (the Python peer's union-find barely
does).

The sampled answers are checked against the exact marginals within a Monte-Carlo band
(``SE_BAND``), or the script stops. At each document size of the growth table, after
that size's timings (a check run first had changed what the allocator mapped afresh for
the timed calls: the page-fault column read 0) and before anything is written: the
pairwise frequencies (the first rows) of ``sample_entity_roots``' clusterings and of the
Python loop's, the latter from its last timed run at each sample count (its own output:
no extra run). Before timing, on the one document: the sampled estimate and the Python
loop's (an untimed run of at most 200 samples). On the test set, before timing: the
padded batch's exact marginals against each document's (``EXACT_ATOL``); the loop's
test-set runs, the function checked at every size above on other scores, are not
checked again.

Usage::

    python benchmarks/bench_coref.py [--device cpu] [--repeats 7] [--write]
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._args import count, device  # noqa: E402
from benchmarks._record import command_line  # noqa: E402
from calib_metrics.models.coref import (  # noqa: E402
    coreference_marginals,
    entity_roots,
    sample_antecedents,
    sample_entity_roots,
)

TEST_SET = "gum-ontogum-coref/ontogum-test.conllu.gz"
# A sampled frequency of S draws has standard error sqrt(p(1 − p)/S) at the exact p.
# Counts of a p near 0 or 1 are Poisson, not normal: the 1/S added to p(1 − p) widens
# their band to k·sqrt(λ + 1) draws around λ = S·p expected. The exact binomial tails of
# small p are heavier than the normal ones: at k = 6 a correct sampler would stop about
# one default run in 300 (every pair of every check together), hence 7. A wrong sampler
# (a row's softmax off, a union missed) moves whole rows of pairs by far more.
SE_BAND = 7.0
CHECK_ROWS = 64  # rows of the roots' pair table checked per document (all rows is N²·S)
# The exact DP runs in float64 and is cast to float32: padding a document into a batch
# changes at most the order of float64 additions, so the two agree to a float32 ulp or
# two; 1e-6 is 16 ulps at 1.
EXACT_ATOL = 1e-6
# The aim: sample + clusters at least this many times the Python loop's speed.
TARGET = 50


# ----------------------------------------------------------------------------- peer


def _python_probs(scores: torch.Tensor) -> list[list[float]]:
    """Cumulative softmax weights per mention over {0..i} (NEW at i), in plain Python."""
    rows = scores.reshape(scores.shape[-2:]).tolist()  # one document [N, N]
    cum = []
    for i, row in enumerate(rows):
        logits = row[: i + 1]
        top = max(logits)
        acc, out = 0.0, []
        for v in logits:
            acc += math.exp(v - top)
            out.append(acc)
        cum.append(out)
    return cum


def _find(parent: list[int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def peer_sample_clusters(scores: torch.Tensor, n_samples: int, rng: random.Random) -> list:
    """Per sample: draw every a_i with random.choices, union-find, one label per mention."""
    cum = _python_probs(scores)
    n = len(cum)
    populations = [range(i + 1) for i in range(n)]
    labels = []
    for _ in range(n_samples):
        parent = list(range(n))
        for i in range(n):
            a = rng.choices(populations[i], cum_weights=cum[i])[0]
            if a != i:
                ra, ri = _find(parent, a), _find(parent, i)
                if ra != ri:
                    parent[ri] = ra
        labels.append([_find(parent, i) for i in range(n)])
    return labels


def peer_marginals(scores: torch.Tensor, n_samples: int, rng: random.Random) -> np.ndarray:
    """The loop above plus pairwise indicator accumulation (numpy, one sample at a time)."""
    labels = peer_sample_clusters(scores, n_samples, rng)
    n = scores.shape[-1]
    counts = np.zeros((n, n), dtype=np.int64)
    for lab in labels:
        arr = np.asarray(lab)
        counts += arr[:, None] == arr[None, :]
    return counts / n_samples


# ----------------------------------------------------------------------------- checks


def check_frequencies(what: str, estimate, exact: torch.Tensor, n_samples: int) -> float:
    """``estimate`` (pair frequencies of ``n_samples`` sampled clusterings) against the exact
    marginals, within ``SE_BAND`` standard errors; SystemExit naming ``what``, the worst
    pair and its gap otherwise. Returns the largest gap in standard errors."""
    est = torch.as_tensor(estimate, dtype=torch.float64).reshape(exact.shape)
    p = exact.double()
    se = ((p * (1 - p) + 1 / n_samples) / n_samples).sqrt()
    z = (est - p).abs() / se
    worst = int(z.argmax())
    if not z.max() <= SE_BAND:  # a NaN fails too
        i, j = divmod(worst, p.shape[-1])
        raise SystemExit(
            f"bench_coref: {what}: pair ({i}, {j}) estimated {est.flatten()[worst]:.4f} with "
            f"{n_samples} samples, exact {p.flatten()[worst]:.4f}: {z.max():.1f} standard "
            f"errors apart (band {SE_BAND:g})"
        )
    return z.max().item()


def check_roots(doc: torch.Tensor, n_samples: int, gen) -> float:
    """``sample_entity_roots``' clusterings against the exact marginals, on the pairs of
    the first ``CHECK_ROWS`` mentions (their co-clustering frequencies)."""
    roots = sample_entity_roots(doc, n_samples, generator=gen)[:, 0]  # [S, N]
    return check_clusterings(
        f"sample_entity_roots, {doc.shape[-1]} mentions", roots, coreference_marginals(doc)[0]
    )


def check_clusterings(what: str, labels: torch.Tensor, exact: torch.Tensor) -> float:
    """Sampled clusterings (``labels`` [S, N]: a cluster id per sample and mention) against
    the ``exact`` marginals, on the pairs of the first ``CHECK_ROWS`` mentions."""
    labels, rows = labels.cpu(), min(CHECK_ROWS, labels.shape[1])
    together = (labels[:, :rows, None] == labels[:, None, :]).sum(0).double() / len(labels)
    return check_frequencies(what, together, exact[:rows].cpu(), len(labels))


def check_batch(batch: torch.Tensor, mask: torch.Tensor, docs: list[torch.Tensor]) -> None:
    """The padded batch's exact marginals equal each document's (``EXACT_ATOL``)."""
    batched = coreference_marginals(batch, mask=mask)
    for k, doc in enumerate(docs):
        n = doc.shape[-1]
        gap = (batched[k, :n, :n] - coreference_marginals(doc)[0]).abs().max().item()
        if not gap <= EXACT_ATOL:
            raise SystemExit(
                f"bench_coref: exact marginals of test document {k} ({n} mentions) differ "
                f"in the padded batch by up to {gap:.3e} (tolerance {EXACT_ATOL:g})"
            )


# ----------------------------------------------------------------------------- helpers


def _median_time(fn: Callable[[], object], repeats: int, device: torch.device) -> float:
    return _median_times(fn, repeats, device)[0]


def _median_times(
    fn: Callable[[], object], repeats: int, device: torch.device
) -> tuple[float, float]:
    """Median wall-clock and median CPU time (this thread) of ``repeats`` calls.

    On a shared machine the CPU time leaves out the time the scheduler gave to other
    processes; the wall-clock time does not.
    """
    return _median_runs(fn, repeats, device)[:2]


def _median_runs(
    fn: Callable[[], object], repeats: int, device: torch.device
) -> tuple[float, float, float]:
    """Medians of wall-clock time, CPU time and minor page faults (this process)."""
    walls, cpus, faults = [], [], []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        minflt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start, cpu = time.perf_counter(), time.thread_time()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        walls.append(time.perf_counter() - start)
        cpus.append(time.thread_time() - cpu)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - minflt)
    return statistics.median(walls), statistics.median(cpus), statistics.median(faults)


def _scores(n: int, seed: int, device: torch.device) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    scores = 2.0 * torch.randn(1, n, n, generator=g)
    scores.diagonal(dim1=-2, dim2=-1).add_(3.0)  # a mix of NEW and links
    return scores.to(device)


def test_set_sizes(data_dir: Path | None) -> tuple[list[int], str]:
    """Mention counts of the OntoGUM test documents (reader if present, else MISC brackets)."""
    if data_dir is None:
        from calib_metrics.paper.locations import shared_data_dir

        data_dir = shared_data_dir()
    path = None if data_dir is None else data_dir / TEST_SET
    if path is None or not path.is_file():
        # Stand-in with the published split's size (30 docs, 3,581 mentions).
        rng = random.Random(0)
        sizes = [rng.randint(50, 189) for _ in range(30)]
        return sizes, "synthetic 30 documents (OntoGUM test file not found)"
    try:
        from calib_metrics.paper.coref_conllu import read_coref_documents

        sizes = [len(doc.mentions) for doc in read_coref_documents(path)]
        return sizes, f"{path.name} via read_coref_documents"
    except ImportError:
        sizes = []
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("# newdoc"):
                    sizes.append(0)
                elif line and line[0].isdigit():
                    misc = line.rstrip("\n").split("\t")[-1]
                    for part in misc.split("|"):
                        if part.startswith("Entity="):
                            sizes[-1] += part.count("(")
        return sizes, f"{path.name} (mentions counted from Entity= brackets)"


# ----------------------------------------------------------------------------- memory child


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> int:
    """Return freed heap to the OS and reset the peak-RSS counter; the baseline in KiB.

    Linux resets VmHWM when "5" is written to /proc/self/clear_refs, so the peak read
    afterwards belongs to the measured call alone. Elsewhere fall back to ru_maxrss.
    """
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        rss = _status_kib("VmRSS")
        if rss is not None:
            return rss
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _peak_rss_kib() -> int:
    hwm = _status_kib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _memory_child(n: int, op: str, n_samples: int, device_name: str) -> None:
    torch.set_num_threads(1)
    device = torch.device(device_name)
    scores = _scores(n, 0, device)
    gen = torch.Generator(device=device).manual_seed(0)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
    else:
        base = _reset_peak_rss()
    start = time.perf_counter()
    if op == "exact":
        out = coreference_marginals(scores)
    elif op == "sample":
        out = sample_entity_roots(scores, n_samples, generator=gen)
    else:
        out = coreference_marginals(scores, n_samples=n_samples, generator=gen)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    else:
        peak = (_peak_rss_kib() - base) / 2**10
    seconds = time.perf_counter() - start
    print(json.dumps({"peak_mib": peak, "seconds": seconds, "out_mib": out.nbytes / 2**20}))


def _memory(n: int, op: str, n_samples: int, device: str) -> dict:
    cmd = [sys.executable, __file__, "--_memory-child", str(n), op, str(n_samples), device]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- main


def _speedup(ours: float, peer: float) -> str:
    """``peer / ours`` as a factor: whole from 1 up, two digits below (never "0x")."""
    ratio = peer / ours
    return f"{ratio:.0f}x" if ratio >= 1 else f"{ratio:.2g}x"


def _against(ratio: float, target: float) -> str:
    """``ratio`` to the fewest decimals (none where they suffice) that leave it on its own
    side of ``target``: 49.6 against 50 had printed "50x (not met)".

    Example:
        >>> _against(49.6, 50), _against(49.96, 50), _against(63.2, 50), _against(50.0, 50)
        ('49.6', '49.96', '63', '50')
    """
    for digits in range(7):
        text = f"{ratio:.{digits}f}"
        if (float(text) >= target) == (ratio >= target):
            return text
    return repr(ratio)


def _faster_or_slower(ours: float, peer: float) -> str:
    """How ours compares with ``peer`` in words ("0.67x faster" had meant 1.5x slower).

    Example:
        >>> _faster_or_slower(1.0, 4.0), _faster_or_slower(3.0, 2.0)
        ('4x faster', '1.5x slower')
    """
    factor = max(peer, ours) / min(peer, ours)
    text = f"{factor:.0f}x" if factor >= 10 else f"{factor:.2g}x"
    return f"{text} {'faster' if ours <= peer else 'slower'}"


def _growth(args: argparse.Namespace, device: torch.device, gen, rng) -> tuple[list[str], dict]:
    """Sample + clusters, ours and the loop, at every document size and sample count."""
    lines = [
        "### Sample + clusters: growth with the document and the sample count",
        "",
        f"Ours: `sample_entity_roots(scores, S)`, median of {args.repeats} runs; the two "
        "calls `entity_roots(sample_antecedents(scores, S))` (same draws, a second result "
        f"buffer); the Python loop: median of {args.peer_repeats} runs, after ours, same "
        "process.",
        "",
        "| mentions | samples | ours wall (ms) | ours CPU (ms) | ours page faults "
        "| two calls wall (ms) | two calls page faults "
        "| loop wall (ms) | loop CPU (ms) | speed-up wall | speed-up CPU |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ratios = {}
    worst, worst_loop = 0.0, 0.0
    for n in args.sizes:
        doc = _scores(n, 0, device)
        doc_cpu = doc.cpu()
        loop_labels = {}  # sample count -> the loop's last timed clusterings [S, N]
        for k in args.sample_counts:

            def ours(doc=doc, k=k):
                return sample_entity_roots(doc, k, generator=gen)

            def two_calls(doc=doc, k=k):
                return entity_roots(sample_antecedents(doc, k, generator=gen))

            ours(), two_calls()  # warm-up
            ow, oc, faults = _median_runs(ours, args.repeats, device)
            tw, _, two_faults = _median_runs(two_calls, args.repeats, device)
            last = {}

            def loop(doc_cpu=doc_cpu, k=k, last=last):
                last["labels"] = peer_sample_clusters(doc_cpu, k, rng)

            pw, pc = _median_times(loop, args.peer_repeats, device)
            loop_labels[k] = torch.tensor(last.pop("labels"))
            ratios[n, k] = (pw / ow, pc / oc)
            lines.append(
                f"| {n:,} | {k:,} | {ow * 1e3:.2f} | {oc * 1e3:.2f} | {faults:.0f} "
                f"| {tw * 1e3:.2f} | {two_faults:.0f} | {pw * 1e3:.0f} | {pc * 1e3:.0f} "
                f"| {_speedup(ow, pw)} | {_speedup(oc, pc)} |"
            )
        # After the size's timings: run first, the check's allocations had changed what
        # the allocator mapped afresh (the page-fault column read 0) and the CPU times.
        worst = max(worst, check_roots(doc, max(args.sample_counts), gen))
        exact = coreference_marginals(doc)[0]
        for k, labels in loop_labels.items():  # the timed runs' own output: no extra run
            what = f"Python loop, {n} mentions, {k} samples"
            worst_loop = max(worst_loop, check_clusterings(what, labels, exact))
    checked = (
        f"Checked after each size's timings (before anything is written): at every size, "
        f"the co-clustering frequencies of "
        f"`sample_entity_roots`' {max(args.sample_counts):,} samples (pairs of the first "
        f"{CHECK_ROWS} mentions) against the exact marginals: largest gap {worst:.1f} "
        f"standard errors; the Python loop's, from its last timed run at each sample "
        f"count: {worst_loop:.1f} (band {SE_BAND:g})."
    )
    return [*lines, "", _faults_note(), "", checked, ""], ratios


def _faults_note() -> str:
    return (
        "Page faults: median minor faults a call (this process), first touches of memory "
        "the C allocator mapped afresh for the call (it returns freed memory in between)."
    )


def _document(args: argparse.Namespace, device: torch.device, gen, rng) -> list[str]:
    """The pairwise estimate and the exact marginals of one document."""
    s = args.samples
    doc = _scores(args.mentions, 0, device)
    doc_cpu = doc.cpu()

    def ours_marginals():
        return coreference_marginals(doc, n_samples=s, generator=gen)

    # The warm-up's answers, checked; the loop's with fewer samples (it is slow).
    exact = coreference_marginals(doc)
    z_ours = check_frequencies("sampled estimate, one document", ours_marginals(), exact, s)
    loop_s = min(s, 200)
    z_loop = check_frequencies(
        "Python loop, one document", peer_marginals(doc_cpu, loop_s, rng), exact.cpu(), loop_s
    )
    t_om = _median_time(ours_marginals, args.repeats, device)
    t_ex = _median_time(lambda: coreference_marginals(doc), args.repeats, device)
    t_pm = _median_time(lambda: peer_marginals(doc_cpu, s, rng), args.peer_repeats, device)
    return [
        f"### One document, {args.mentions} mentions, {s} samples",
        "",
        "| task | ours (s) | Python loop (s) | speed-up |",
        "|---|---:|---:|---:|",
        f"| sample + clusters + pairwise estimate | {t_om:.4f} | {t_pm:.3f} "
        f"| {_speedup(t_om, t_pm)} |",
        f"| exact pairwise marginals (DP) | {t_ex:.4f} | | |",
        "",
        f"Checked before timing against the exact marginals: our {s}-sample estimate, "
        f"largest gap {z_ours:.1f} standard errors; the loop's ({loop_s} samples) "
        f"{z_loop:.1f} (band {SE_BAND:g}).",
        "",
    ]


def _test_set(args: argparse.Namespace, device: torch.device, gen, rng) -> list[str]:
    """The OntoGUM test documents: sampling per document, exact per document and batched."""
    s = args.samples
    sizes, source = test_set_sizes(args.data)
    docs = [_scores(n, k + 1, device) for k, n in enumerate(sizes)]
    docs_cpu = [d.cpu() for d in docs]
    ns = max(1, args.peer_test_samples)

    def set_clusters():
        for d in docs:
            sample_entity_roots(d, s, generator=gen)

    def set_marginals():
        for d in docs:
            coreference_marginals(d, n_samples=s, generator=gen)

    def set_exact():
        for d in docs:
            coreference_marginals(d)

    # Padded batch: one call for all documents.
    n_max = max(sizes)
    batch = torch.zeros(len(sizes), n_max, n_max, device=device)
    for k, (d, n) in enumerate(zip(docs, sizes, strict=True)):
        batch[k, :n, :n] = d[0]
    mask = torch.arange(n_max, device=device)[None, :] < torch.tensor(sizes, device=device)[:, None]

    check_batch(batch, mask, docs)  # also the exact DP's warm-up
    t_sc = _median_time(set_clusters, args.repeats, device)
    t_sm = _median_time(set_marginals, args.repeats, device)
    t_se = _median_time(set_exact, args.repeats, device)
    t_sb = _median_time(lambda: coreference_marginals(batch, mask=mask), args.repeats, device)
    # The peer runs ns samples per document and is scaled linearly to s (its cost is
    # exactly linear in the number of samples: an independent loop per sample).
    scale = s / ns
    t_psc = scale * _median_time(
        lambda: [peer_sample_clusters(d, ns, rng) for d in docs_cpu], args.peer_repeats, device
    )
    t_psm = scale * _median_time(
        lambda: [peer_marginals(d, ns, rng) for d in docs_cpu], args.peer_repeats, device
    )
    n_pairs = sum(n * (n - 1) // 2 for n in sizes)
    return [
        f"### Whole test set: {len(sizes)} documents, {sum(sizes):,} mentions, "
        f"{n_pairs:,} pairs ({source}); largest document {n_max} mentions",
        "",
        "| task | ours (s) | Python loop (s) | speed-up |",
        "|---|---:|---:|---:|",
        f"| sample + clusters, {s} samples | {t_sc:.4f} | {t_psc:.3f} | {_speedup(t_sc, t_psc)} |",
        f"| {s}-sample pairwise estimate | {t_sm:.4f} | {t_psm:.3f} | {_speedup(t_sm, t_psm)} |",
        f"| exact pairwise marginals, per document | {t_se:.4f} | | |",
        f"| exact pairwise marginals, one padded batch | {t_sb:.4f} | | |",
        "",
        f"Exact marginals of the whole test set against its {s}-sample estimate: "
        f"{_faster_or_slower(t_se, t_sm)} per document, {_faster_or_slower(t_sb, t_sm)} as one "
        "padded batch "
        f"(checked before timing: the batch's exact marginals equal each document's to "
        f"{EXACT_ATOL:g}). The Python loop ran {ns} samples per test document, scaled x{scale:g} "
        "(its cost is linear in the number of samples).",
        "",
    ]


def _memory_table(args: argparse.Namespace, device: torch.device) -> list[str]:
    """Peak memory of the exact DP, the sampler and the estimate, each in a fresh process."""
    s, m_s = args.samples, args.memory_samples
    unit = (
        "MiB (torch.cuda.max_memory_allocated)"
        if device.type == "cuda"
        else "MiB (peak RSS above the baseline, fresh process)"
    )
    lines = [
        "### Peak memory, one document",
        "",
        f"| mentions | operation | peak {unit} | result MiB | time (s) |",
        "|---:|---|---:|---:|---:|",
    ]
    for n in (1000, 3000):
        ops = [
            ("exact", 0, "exact marginals (DP)"),
            ("sample", s, f"sample + entity roots, {s} samples"),
            ("estimate", m_s, f"pairwise estimate, {m_s} samples"),
        ]
        for op, k, label in ops:
            m = _memory(n, op, k, args.device)
            lines.append(
                f"| {n:,} | {label} | {m['peak_mib']:.0f} | {m['out_mib']:.0f} "
                f"| {m['seconds']:.2f} |"
            )
    return [
        *lines,
        "",
        f"Input scores alone are {1000**2 * 4 / 2**20:.0f} MiB (N=1,000) and "
        f"{3000**2 * 4 / 2**20:.0f} MiB (N=3,000) in float32 and are not counted. The "
        "pairwise estimate compares sampled roots in chunks of at most 255 samples and a "
        "tile of rows at a time, so its memory does not grow with the number of samples.",
        "",
    ]


def _load() -> str:
    if not hasattr(os, "getloadavg"):
        return "n/a"
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def run(args: argparse.Namespace) -> str:
    torch.set_num_threads(1)
    device = torch.device(args.device)
    rng = random.Random(0)
    gen = torch.Generator(device=device).manual_seed(0)
    load_start = _load()
    growth, ratios = _growth(args, device, gen, rng)
    body = growth + _document(args, device, gen, rng)
    if not args.skip_test_set:
        body += _test_set(args, device, gen, rng)
    load_end = _load()
    target = ratios.get((args.mentions, args.samples))
    verdict = []
    if target is not None:
        wall, cpu = target
        met = "met" if min(wall, cpu) >= TARGET else "not met"
        verdict = [
            f"Target: sample + clusters >= {TARGET}x the loop on the {args.mentions}-mention "
            f"document with {args.samples} samples: {_against(wall, TARGET)}x wall-clock, "
            f"{_against(cpu, TARGET)}x CPU time ({met}).",
            "",
        ]
    lines = [
        f"Device: {device}, torch {torch.__version__}, 1 thread. Machine: {os.cpu_count()} "
        f"cores, load average (1, 5, 15 min) {load_start} at start and {load_end} at the end "
        "of the timings; ours and the loop run in one process, one after the other, and the "
        "CPU-time columns leave out the time other processes took.",
        "",
        *verdict,
        *body,
    ]
    if not args.skip_memory:
        lines += _memory_table(args, device)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_memory-child":
        _memory_child(int(argv[1]), argv[2], int(argv[3]), argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", type=device, default="cpu")
    parser.add_argument("--samples", type=count, default=1000)
    parser.add_argument("--mentions", type=count, default=200)
    parser.add_argument("--sizes", type=count, nargs="+", default=[50, 200, 800])
    parser.add_argument("--sample-counts", type=count, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=count, default=7)
    parser.add_argument("--peer-repeats", type=count, default=3)
    parser.add_argument(
        "--peer-test-samples",
        type=count,
        default=100,
        help="samples per test document for the Python loop (scaled to --samples)",
    )
    parser.add_argument("--memory-samples", type=count, default=100)
    parser.add_argument("--data", type=Path, default=None, help="shared data folder")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-test-set", action="store_true")
    parser.add_argument("--write", action="store_true", help="write docs/bench_coref.md")
    args = parser.parse_args(argv)
    table = run(args)
    print(table)
    if args.write:
        out = ROOT / "docs" / "bench_coref.md"
        command = command_line("bench_coref.py", env=("CALIB_METRICS_DATA",))
        out.write_text(
            "# Coreference sampling benchmark\n\n"
            f"Generated by `{command}` with `--write`, from the repository root.\n\n"
            + table
            + "\n",
            encoding="utf-8",
        )
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
