"""Benchmark: linear-chain marginals (``calib_metrics.models.linear_chain``) vs pytorch-crf.

Times, in one process on one thread, on a batch of B = 1000 random-potential sentences
of up to T = 25 tokens over K = 47 tags (the Penn tag set's size; lengths uniform in
[2, T], one sentence of full length):

* pytorch-crf's ``CRF(...)(emissions, tags, mask)`` log-likelihood: it computes only
  log Z (plus the gold score), so it is the natural floor for anything that also
  returns marginals;
* pytorch-crf's log-likelihood plus ``backward()``: autograd of log Z, the usual way to
  get unigram marginals out of it;
* ours: unigram + pairwise marginals, unigram only, log Z, Viterbi (against
  pytorch-crf's ``decode``) and 10 posterior samples per sentence;
* torch-struct's ``LinearChainCRF(...).marginals`` on a 100-sentence slice, if
  ``torch_struct`` imports (against pytorch-crf on the same slice);
* the HMM's closed-form fit on all of UD English-EWT train, if
  ``calib_metrics.models.hmm`` and the shared data are there.

Each case is run ``--repeats`` times round-robin (so background load hits all cases
alike) and the median is reported, as wall time and as process CPU time (user +
system; the robust number on a shared machine). Every peer runs on one thread
(``torch.set_num_threads(1)``) in this one process. A sweep over sizes, growing B, T
and K in turn, then gives ours over pytorch-crf (marginals over its log-likelihood,
Viterbi over its ``decode``) as the median of the per-round ratios with their range,
and the load average (``uptime``'s first number) is printed at start and end.

Potentials are float32; our recursion runs in float64 (the pairwise product in
float32). First-touch page faults of fresh large outputs (the 212 MB pairwise tensor)
show up as system time; the library advises that one tensor to the kernel as
transparent huge pages (``calib_metrics/models/_memory.py``), which makes them about
4× cheaper. ``--thp`` instead sets PyTorch's ``THP_MEM_ALLOC_ENABLE=1`` (every CPU
allocation huge-page advised, read once when torch loads) for every peer alike; it
defeats glibc's reuse of pytorch-crf's per-step buffers, so the default is the plain
allocator. The HMM row needs UD English-EWT: pass ``CALIB_METRICS_DATA=<data folder>``.

Before timing, for the main table and at every size of the sweep, ours is checked
against pytorch-crf on the same sentences: unigram marginals against its autograd, log Z
against its normaliser, the Viterbi path against its ``decode`` (a different path must
be a near tie: both paths' float64 scores within the tolerance). The tolerance is
float32's (see ``SLACK``); a gap past it stops the script with the numbers.

Usage::

    CALIB_METRICS_DATA=../shared/data python benchmarks/bench_chain.py --repeats 7 --write
    python benchmarks/bench_chain.py [--device cpu] [--repeats 7] [--thp] [--skip-sweep]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if "--thp" in sys.argv:
    # Must be set before torch allocates anything; see the module docstring.
    os.environ["THP_MEM_ALLOC_ENABLE"] = "1"

import torch
from torchcrf import CRF

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._args import count  # noqa: E402
from benchmarks._args import device as device_name  # noqa: E402
from benchmarks._record import command_line  # noqa: E402
from calib_metrics.models import _memory, linear_chain  # noqa: E402

Case = tuple[str, int, Callable[[], object], str]  # (label, sentences, fn, floor key)
# pytorch-crf runs in float32: each step of its recursion rounds running values of up to
# |log Z| by eps32, and over T steps these add up like a random walk, to about
# sqrt(T)·eps32·|log Z| (T·eps32·|log Z| at worst). Its log Z and its marginals (exp of
# such sums less log Z) are off by up to that; so are our float32 outputs by the cast.
# SLACK times that scale is about 100× the largest gap measured over the main table's
# and the sweep's sizes (0.08–0.1 of the scale for log Z, 0.01 for the marginals), while
# a wrong answer (transitions transposed, a step lost) is off by far more.
SLACK = 8.0


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _potentials(batch: int, length: int, num_tags: int, device, seed: int):
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(batch, length, num_tags, generator=g)
    trans = torch.randn(num_tags, num_tags, generator=g)
    start = torch.randn(num_tags, generator=g)
    end = torch.randn(num_tags, generator=g)
    lengths = torch.randint(2, length + 1, (batch,), generator=g)
    lengths[0] = length
    mask = torch.arange(length)[None, :] < lengths[:, None]
    tags = torch.randint(0, num_tags, (batch, length), generator=g)
    return [x.to(device) for x in (em, trans, start, end, mask, tags)]


def _tolerance(log_z: torch.Tensor, length: int) -> float:
    """The float32 tolerance of a comparison with pytorch-crf on sentences of up to
    ``length`` tokens whose log Z is ``log_z`` (see ``SLACK``)."""
    scale = math.sqrt(length) * torch.finfo(torch.float32).eps * max(1.0, log_z.abs().max().item())
    return SLACK * scale


def _padded(paths: list[list[int]], like: torch.Tensor) -> torch.Tensor:
    """pytorch-crf's decoded paths as ``like`` (``[B, T]`` long, 0 past each length)."""
    out = torch.zeros_like(like)
    for row, path in enumerate(paths):
        out[row, : len(path)] = torch.tensor(path)
    return out


def _viterbi_gap(chain: tuple, crf: CRF) -> tuple[int, float]:
    """Sentences whose Viterbi path differs from pytorch-crf's ``decode``, and the largest
    float64 score gap between the two paths there (a near tie breaks either way)."""
    em, trans, start, end, mask = chain
    ours = linear_chain.viterbi(*chain)[1]
    theirs = _padded(crf.decode(em, mask), ours)
    differ = (ours != theirs).any(1)
    if not differ.any():
        return 0, 0.0
    wide = [x.double() for x in (em[differ], trans, start, end)]
    scores = [linear_chain.sequence_score(*wide, p[differ], mask[differ]) for p in (ours, theirs)]
    return int(differ.sum()), (scores[0] - scores[1]).abs().max().item()


Checked = tuple[dict[str, float], float]  # (max |diff| per quantity, the tolerance)


def _check_chain(chain: tuple, tags: torch.Tensor, crf: CRF) -> Checked:
    """Ours against pytorch-crf on ``chain``'s sentences (untimed): unigram marginals
    against its autograd, log Z against its normaliser, Viterbi against its ``decode``.
    Raises SystemExit naming the quantity, the size and the gap past the tolerance."""
    em, mask = chain[0], chain[-1]
    with torch.no_grad():
        # The normaliser half of pytorch-crf's forward (score − normaliser): its log Z.
        theirs_z = crf._compute_normalizer(em.transpose(0, 1), mask.transpose(0, 1))
    e = em.clone().requires_grad_()
    crf(e, tags, mask, reduction="sum").backward()
    autograd = torch.nn.functional.one_hot(tags, em.shape[2]) * mask[..., None] - e.grad
    unigram = linear_chain.posterior_marginals(*chain).unigram
    differ, path_gap = _viterbi_gap(chain, crf)
    gaps = {
        "unigram marginals vs pytorch-crf autograd": (unigram - autograd).abs().max().item(),
        "log Z vs pytorch-crf": (linear_chain.log_partition(*chain) - theirs_z).abs().max().item(),
        f"Viterbi vs pytorch-crf decode ({differ} of {len(em)} paths differ; score gap)": path_gap,
    }
    tolerance = _tolerance(theirs_z, em.shape[1])
    size = "B, T, K = {}, {}, {}".format(*em.shape)
    for what, gap in gaps.items():
        if not gap <= tolerance:  # a NaN fails too
            raise SystemExit(
                f"bench_chain: {what} at {size}: max |diff| = {gap:.3e}, past the float32 "
                f"tolerance {tolerance:.3e}; ours and pytorch-crf disagree"
            )
    return gaps, tolerance


def _checked_text(checked: Checked) -> str:
    gaps, tolerance = checked
    listed = "; ".join(f"{what}: max |diff| = {gap:.2e}" for what, gap in gaps.items())
    return f"Checked before timing (float32 tolerance {tolerance:.1e}): {listed}."


def _pytorch_crf(trans, start, end) -> CRF:
    crf = CRF(trans.shape[0], batch_first=True).to(trans.device)
    with torch.no_grad():
        crf.transitions.copy_(trans)
        crf.start_transitions.copy_(start)
        crf.end_transitions.copy_(end)
    return crf


def _torch_struct_potentials(em, trans, start, end, mask):
    """torch-struct's edge scores ``[B, N-1, C_next, C_prev]`` for our chain."""
    edge = trans.t()[None, None] + em[:, 1:, :, None]  # [B, T-1, j, i]
    edge = edge.clone()
    edge[:, 0] += (start + em[:, 0])[:, None, :]
    last_edge = mask.sum(1) - 2
    rows = torch.arange(em.shape[0], device=em.device)
    edge[rows, last_edge] += end[None, :, None]
    return edge, mask.sum(1)


Timing = tuple[float, float, float]  # wall, process CPU (user + system), system seconds


def _clock() -> Timing:
    return (
        time.perf_counter(),
        time.process_time(),
        resource.getrusage(resource.RUSAGE_SELF).ru_stime,
    )


def _since(start: Timing) -> Timing:
    return tuple(now - then for now, then in zip(_clock(), start, strict=True))  # type: ignore[return-value]


def _time_rounds(cases: list[Case], repeats: int, device) -> dict[str, list[Timing]]:
    """(wall, CPU, system) seconds of each case in each of ``repeats`` round-robin rounds.

    CPU time is reported beside wall time because on a shared machine other processes
    inflate wall time; on one thread the two agree when the machine is idle. System time
    is mostly the kernel providing fresh zeroed pages for large new tensors.
    """
    times: dict[str, list[Timing]] = {label: [] for label, *_ in cases}
    for _, _, fn, _ in cases:  # warm-up
        fn()
    for _ in range(repeats):
        for label, _, fn, _ in cases:
            _sync(device)
            start = _clock()
            fn()
            _sync(device)
            times[label].append(_since(start))
    return times


def _time_round_robin(cases: list[Case], repeats: int, device) -> dict[str, Timing]:
    """Median (wall, CPU, system) seconds per case over ``repeats`` round-robin rounds."""
    return {
        label: tuple(statistics.median(x[i] for x in t) for i in range(3))  # type: ignore[misc]
        for label, t in _time_rounds(cases, repeats, device).items()
    }


def _ratio(ours: list[Timing], floor: list[Timing]) -> str:
    """Median CPU-time ratio over the rounds, with its range: ``0.61× (0.55–0.70)``.

    Each round times both cases back to back, so a round's ratio sees one load.
    """
    ratios = sorted(a[1] / b[1] for a, b in zip(ours, floor, strict=True))
    return f"{statistics.median(ratios):.2f}× ({ratios[0]:.2f}–{ratios[-1]:.2f})"


def _thp_setting() -> str:
    """The kernel's transparent-huge-page mode, as ``enabled`` shows it."""
    try:
        return Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    except OSError:
        return "not available"


def _load() -> str:
    """The 1-minute load average (``uptime``'s first number) on this machine's cores."""
    return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def _without_huge_pages(fn: Callable[..., object], *args) -> object:
    """``fn(*args)`` with the library's huge-page advice switched off (a private knob)."""
    threshold = _memory._MIN_BYTES
    _memory._MIN_BYTES = 1 << 62
    try:
        return fn(*args)
    finally:
        _memory._MIN_BYTES = threshold


def _hmm_rows(device, repeats: int) -> tuple[list[str], list[str]]:
    """Rows for the HMM fit on EWT train, or notes saying why there are none."""
    try:
        from calib_metrics.models.hmm import HMM
    except ImportError as err:
        return [], [f"HMM fit: skipped (calib_metrics.models.hmm not importable: {err})"]
    try:
        from calib_metrics.paper.locations import find_dataset
        from calib_metrics.paper.tagging import Vocabulary, encode_batch, read_tagged_sentences
    except ImportError as err:
        return [], [f"HMM fit: skipped (tagging reader not importable: {err})"]
    try:
        folder = find_dataset("ud-english-ewt")
    except FileNotFoundError as err:
        return [], [f"HMM fit: skipped ({err})"]
    start = time.perf_counter()
    sentences = read_tagged_sentences(folder / "en_ewt-ud-train.conllu.gz")
    words_vocab = Vocabulary.build(w for w, _ in sentences)
    tag_vocab = Vocabulary.build((t for _, t in sentences), unknown=False)
    words, tags, mask = encode_batch(sentences, words_vocab, tag_vocab, device=device)
    read_s = time.perf_counter() - start
    hmm = HMM(len(tag_vocab), len(words_vocab), pseudocount=1.0).to(device)
    fit = _time_round_robin([("fit", 0, lambda: hmm.fit(words, tags, mask), "")], repeats, device)
    wall, cpu, sys_ = fit["fit"]
    tokens = int(mask.sum())
    row = (
        f"| HMM closed-form fit, all of EWT train ({len(sentences)} sentences, {tokens} tokens, "
        f"K = {len(tag_vocab)}, V = {len(words_vocab)}) | {len(sentences)} | "
        f"{wall * 1e3:.1f} | {cpu * 1e3:.1f} | {sys_ * 1e3:.1f} | target < 1 s | |"
    )
    note = f"EWT train read + encoded in {read_s:.1f} s (CoNLL-U parsing; not part of the fit)."
    return [row], [note]


def length(text: str) -> int:
    """``--length``: T of at least 2, as the sentences' lengths are drawn from [2, T]
    (T = 1 had stopped in ``torch.randint(2, 2)`` with a traceback)."""
    value = count(text)
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of at least 2 (lengths are drawn from [2, T]), not {text!r}"
        )
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", type=device_name, default="cpu")
    parser.add_argument("--batch", type=count, default=1000)
    parser.add_argument("--length", type=length, default=25, help="T, at least 2")
    parser.add_argument("--tags", type=count, default=47)
    parser.add_argument("--slice", type=count, default=100, help="sentences for torch-struct")
    parser.add_argument("--repeats", type=count, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--thp", action="store_true", help="huge-page allocator (see docstring)")
    parser.add_argument("--write", action="store_true", help="write docs/bench_chain.md")
    parser.add_argument("--skip-sweep", action="store_true", help="no table over sizes")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    load_before = _load()
    device = torch.device(args.device)
    em, trans, start, end, mask, tags = _potentials(
        args.batch, args.length, args.tags, device, args.seed
    )
    crf = _pytorch_crf(trans, start, end)
    pm = linear_chain.posterior_marginals
    notes = [_checked_text(_check_chain((em, trans, start, end, mask), tags, crf))]

    def crf_ll(e=em, m=mask, y=tags):
        with torch.no_grad():
            return crf(e, y, m, reduction="none")

    def crf_autograd():
        e = em.clone().requires_grad_()
        crf(e, tags, mask, reduction="sum").backward()
        return e.grad

    n = args.batch
    cases: list[Case] = [
        ("pytorch-crf log-likelihood (log Z only; the floor)", n, crf_ll, "full"),
        ("pytorch-crf log-likelihood + backward (autograd unigram)", n, crf_autograd, "full"),
        ("ours: unigram + pairwise marginals", n, lambda: pm(em, trans, start, end, mask), "full"),
        (
            "ours: the same, without the huge-page advice (4 KiB page faults)",
            n,
            lambda: _without_huge_pages(pm, em, trans, start, end, mask),
            "full",
        ),
        (
            "ours: unigram marginals only",
            n,
            lambda: pm(em, trans, start, end, mask, pairwise=False),
            "full",
        ),
        ("ours: log Z", n, lambda: linear_chain.log_partition(em, trans, start, end, mask), "full"),
        (
            "reference: torch.zeros of the pairwise output's shape (allocation alone)",
            n,
            lambda: torch.zeros(args.batch, args.length - 1, args.tags, args.tags, device=device),
            "full",
        ),
        ("ours: Viterbi", n, lambda: linear_chain.viterbi(em, trans, start, end, mask), "full"),
        ("pytorch-crf decode (Viterbi)", n, lambda: crf.decode(em, mask), "full"),
        (
            "ours: 10 posterior samples per sentence",
            n,
            lambda: linear_chain.sample(
                em, trans, start, end, mask, n_samples=10, generator=torch.Generator(device)
            ),
            "full",
        ),
    ]

    k = min(args.slice, args.batch)
    sl = (em[:k], trans, start, end, mask[:k])
    cases += [
        (
            f"pytorch-crf log-likelihood, {k}-sentence slice",
            k,
            lambda: crf_ll(em[:k], mask[:k], tags[:k]),
            "slice",
        ),
        (f"ours: unigram + pairwise, {k}-sentence slice", k, lambda: pm(*sl), "slice"),
    ]
    medians = _time_round_robin(cases, args.repeats, device)
    floor_label = {"full": cases[0][0], "slice": cases[-2][0]}

    try:
        from torch_struct import LinearChainCRF
    except ImportError:
        print("torch-struct: not installed")
        notes.append("torch-struct: not installed")
    else:
        # torch-struct takes about a minute per call on CPU: one timed run, which also
        # serves as the correctness check.
        edge, lengths = _torch_struct_potentials(*sl)
        started = _clock()
        theirs = LinearChainCRF(edge.clone().requires_grad_(), lengths=lengths).marginals
        _sync(device)
        struct_label = f"torch-struct LinearChainCRF marginals, {k}-sentence slice (1 run)"
        medians[struct_label] = _since(started)
        cases.append((struct_label, k, lambda: None, "slice"))
        gap = (theirs.detach().transpose(-1, -2) - pm(*sl).pairwise).abs().max().item()
        notes.append(f"torch-struct vs ours, pairwise marginals: max |diff| = {gap:.2e}")

    rows = []
    for label, sents, _, key in cases:
        (wall, cpu, sys_), (floor_wall, floor_cpu, _) = medians[label], medians[floor_label[key]]
        rows.append(
            f"| {label} | {sents} | {wall * 1e3:.1f} | {cpu * 1e3:.1f} | {sys_ * 1e3:.1f} | "
            f"{wall / floor_wall:.2f}× | {cpu / floor_cpu:.2f}× |"
        )

    notes.append(
        f"Transparent huge pages: {_thp_setting()}. Our pairwise output is advised as huge "
        "pages; the row without the advice shows what its 4 KiB page faults cost. In a "
        "virtual machine whose host backs fresh guest memory lazily, a huge page that the "
        "guest has not used before can fault in slower than 4 KiB pages; that is what a "
        "wide (min–max) range in the sweep below shows."
    )

    hmm_rows, hmm_notes = _hmm_rows(device, args.repeats)
    rows += hmm_rows
    notes += hmm_notes
    allocator = "THP_MEM_ALLOC_ENABLE=1" if args.thp else "plain allocator"
    sweep = "" if args.skip_sweep else "\n" + _sweep(device, args.repeats, args.seed) + "\n"
    header = (
        f"`{command_line('bench_chain.py', env=('CALIB_METRICS_DATA',))}`: "
        f"B = {args.batch}, T = {args.length} (lengths uniform in [2, T]), K = {args.tags}, "
        f"float32 potentials (our recursion in float64), device {device}, "
        f"{torch.get_num_threads()} thread for every peer, torch {torch.__version__}, "
        f"{allocator}; median of {args.repeats} round-robin runs. Load average "
        f"{load_before} at the start, {_load()} at the end. The floor is pytorch-crf's "
        "log-likelihood on the same sentences; CPU = process CPU time (user + system)."
    )
    table = "\n".join(
        [
            "| what | sentences | wall ms | CPU ms | of which system ms | × floor (wall) "
            "| × floor (CPU) |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
    text = header + "\n\n" + table + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    print(text + sweep)
    text += sweep
    if args.write:
        _write_doc(ROOT / "docs" / "bench_chain.md", allocator, text)


# Growth in each of B, T and K from the first row (B = 1000, T = 25, K = 47: the Penn
# tag set): the per-step work grows with B * K^2 for both sides, the output with T too.
SWEEP_SIZES = [
    (1000, 25, 47),
    (100, 25, 47),
    (4000, 25, 47),
    (200, 50, 47),
    (50, 200, 47),
    (10, 1000, 47),
    (1000, 25, 9),
    (100, 100, 20),
    (200, 25, 128),
]


def _sweep(device, repeats: int, seed: int) -> str:
    """Ours against pytorch-crf over several (B, T, K): marginals vs its log-likelihood,
    Viterbi vs its decode; round-robin, median CPU time, the ratio and its range."""
    rows: list[str] = []
    checks: list[Checked] = []
    for batch, length, num_tags in SWEEP_SIZES:
        em, trans, start, end, mask, tags = _potentials(batch, length, num_tags, device, seed)
        crf = _pytorch_crf(trans, start, end)

        def crf_ll(em=em, tags=tags, mask=mask, crf=crf):
            with torch.no_grad():
                return crf(em, tags, mask, reduction="none")

        chain = (em, trans, start, end, mask)
        checks.append(_check_chain(chain, tags, crf))
        cases: list[Case] = [
            ("ll", 0, crf_ll, ""),
            ("marg", 0, lambda chain=chain: linear_chain.posterior_marginals(*chain), ""),
            (
                "marg_4k",
                0,
                lambda chain=chain: _without_huge_pages(linear_chain.posterior_marginals, *chain),
                "",
            ),
            ("decode", 0, lambda crf=crf, em=em, mask=mask: crf.decode(em, mask), ""),
            ("viterbi", 0, lambda chain=chain: linear_chain.viterbi(*chain), ""),
        ]
        rounds = _time_rounds(cases, repeats, device)
        cpu = {k: statistics.median(x[1] for x in v) * 1e3 for k, v in rounds.items()}
        rows.append(
            f"| {batch} | {length} | {num_tags} | {cpu['ll']:.1f} | {cpu['marg']:.1f} | "
            f"{_ratio(rounds['marg'], rounds['ll'])} | {_ratio(rounds['marg_4k'], rounds['ll'])} "
            f"| {cpu['decode']:.1f} | "
            f"{cpu['viterbi']:.1f} | {_ratio(rounds['viterbi'], rounds['decode'])} |"
        )
        del em, crf, cases, rounds  # the next size's tensors should not stack on these
    return "\n".join(
        [
            "### Over sizes (median CPU ms; lengths uniform in [2, T]; ratio: median over "
            "the rounds, (min–max) in brackets)",
            "",
            f"Load average at the end of the sweep: {_load()}. Targets: both ratios ≤ 1.0×.",
            "Checked before timing at every size, as the table above (unigram marginals, "
            "log Z and Viterbi against pytorch-crf, within float32's tolerance at that "
            f"size): the largest gap is {_worst(checks):.2g} of its tolerance.",
            "",
            "| B | T | K | pytorch-crf log-likelihood | ours: unigram + pairwise | ratio "
            "| ratio without the huge-page advice | pytorch-crf decode | ours: Viterbi | ratio |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )


def _worst(checks: list[Checked]) -> float:
    """The largest gap of the checks as a fraction of its tolerance."""
    return max(gap / tolerance for gaps, tolerance in checks for gap in gaps.values())


def _write_doc(path: Path, allocator: str, text: str) -> None:
    """Write this run's section, keeping the other allocator's section if present."""
    sections = {}
    if path.exists():
        for chunk in path.read_text().split("\n## ")[1:]:
            title, _, body = chunk.partition("\n\n")
            sections[title.strip()] = body.strip() + "\n"
    sections[allocator] = text
    order = [a for a in ("plain allocator", "THP_MEM_ALLOC_ENABLE=1") if a in sections]
    path.write_text(
        "# Linear-chain marginals benchmark\n\n"
        "Generated by `python benchmarks/bench_chain.py ... --write` from the repository "
        "root, one section per allocator (`--thp` for THP_MEM_ALLOC_ENABLE=1); each section "
        "opens with the command that made it (`--write` left out).\n"
        + "".join(f"\n## {a}\n\n{sections[a]}" for a in order)
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
