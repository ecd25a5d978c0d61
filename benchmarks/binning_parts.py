"""Where the exact metric's time goes: the binning's parts, timed apart, on any device.

For each N: q ~ Beta(0.3, 0.3) float32 and y ~ Bernoulli(q) (``bench_metric``'s inputs),
the median of ``--repeats`` runs after a warm-up (each run synchronised on a GPU) of

- ``torch.sort`` of q, and of the order-preserving integer keys (the yardsticks);
- the two ways to F, the prefix sums at the bin boundaries: the radix selection's
  chunked passes (``_prefix_sums`` with the GPU sort switched off) and one full sort
  (``_sorted_prefix``); ``binning.sorts_all`` picks the sort on a GPU where it fits;
- ``calibration_error`` adaptive and uniform (15 bins), and the uniform bins' sums in
  place (``index_add_`` into 15 bins) against ``spread_bin_sums``.

On a GPU the selection launches some ten kernels per chunk of 2¹⁸ pairs and the adds
into 15 bins queue on their atomics; these rows show by how much.

Before timing, at each N, the ways to the same bins are checked to give them (or the
script stops): the selection's and the sort's adaptive bins (count equal, freq and
pred_mean to ``BINS_RTOL``), and the two uniform Σq.

    python benchmarks/binning_parts.py --device cuda --sizes 1e7 1e8
    python benchmarks/binning_parts.py --threads 1 --sizes 1e6 1e7
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._args import count, device, size  # noqa: E402
from benchmarks.bench_metric import make_inputs  # noqa: E402
from calib_metrics.functional import binning, calibration_error  # noqa: E402

BIN_SIZE = 5000
# Both ways sum the same float64 values by bin, in another order: a few ulps of the
# running sums (~N/2 at the last boundary) over a bin's count, far below 1e-9 of a mean.
BINS_RTOL, BINS_ATOL = 1e-9, 1e-12


@contextmanager
def selection_only():
    """The radix selection on every device (the CPU's path)."""
    original = binning.sorts_all
    binning.sorts_all = lambda n, device: n <= binning._SORT_BELOW
    try:
        yield
    finally:
        binning.sorts_all = original


def median_ms(run: Callable[[], object], device: str, repeats: int) -> float:
    def synchronize() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    run()
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        run()
        synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def adaptive_bins(prefix: tuple[torch.Tensor, ...], ranks: torch.Tensor) -> dict[str, torch.Tensor]:
    """count, freq and pred_mean of the bins between ``ranks`` from their prefix sums F
    (the rows of ``binning._prefix_sums``: Σq, Σy and a split tie group's share of y)."""
    f_q, f_y, f_share = prefix[0], prefix[1], prefix[2]
    count = ranks.diff().to(torch.float64)
    return {
        "count": count,
        "freq": (f_y + f_share).diff() / count,
        "pred_mean": f_q.diff() / count,
    }


def check_same(what: str, got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    """Stop the script (SystemExit) where ``got``'s bins differ from ``want``'s: counts
    exactly, the rest to ``BINS_RTOL``."""
    for name, mine in got.items():
        theirs = want[name]
        exact = name == "count"
        rtol, atol = (0.0, 0.0) if exact else (BINS_RTOL, BINS_ATOL)
        if mine.shape != theirs.shape or not torch.allclose(mine, theirs, rtol, atol):
            gap = (mine - theirs).abs().max().item() if mine.shape == theirs.shape else "shape"
            raise SystemExit(
                f"binning_parts: {what}: {name} differs (largest difference {gap}); the "
                "timed ways to the bins do not agree"
            )


def check_bins(q: torch.Tensor, y: torch.Tensor) -> None:
    """The timed ways to the same bins give them: the radix selection's and the full
    sort's adaptive bins, and the uniform bins' Σq in place and by ``spread_bin_sums``."""
    ranks = binning.bin_ranks(q.numel(), BIN_SIZE, q.device)
    with selection_only():
        selected = adaptive_bins(binning._prefix_sums(q, y, ranks)[0], ranks)
    by_sort = adaptive_bins(binning._sorted_prefix(q, y, ranks), ranks)
    check_same("adaptive bins, radix selection against one full sort", selected, by_sort)
    bin_of = binning.uniform_bin_of(q, 15)
    in_place = torch.zeros(15, dtype=torch.float64, device=q.device)
    in_place.index_add_(0, bin_of, q.to(torch.float64))
    spread = binning.spread_bin_sums(bin_of, 15, q)[0]
    check_same(
        "uniform bins' Σq, index_add_ against spread_bin_sums", {"Σq": in_place}, {"Σq": spread}
    )


def parts(q: torch.Tensor, y: torch.Tensor) -> dict[str, Callable[[], object]]:
    n = q.numel()
    ranks = binning.bin_ranks(n, BIN_SIZE, q.device)
    bin_of = binning.uniform_bin_of(q, 15)
    as_double = q.to(torch.float64)

    def selection() -> object:
        with selection_only():
            return binning._prefix_sums(q, y, ranks)

    def in_place() -> object:
        sums = torch.zeros(15, dtype=torch.float64, device=q.device)
        return sums.index_add_(0, bin_of, as_double)

    return {
        "torch.sort of q (float32)": lambda: torch.sort(q),
        "torch.sort of the int64 keys": lambda: torch.sort(binning._order_key(q)[0].long()),
        "F by radix selection (the CPU's path)": selection,
        "F by one full sort (a GPU's path where it fits)": lambda: binning._sorted_prefix(
            q, y, ranks
        ),
        "calibration_error, adaptive (default path)": lambda: calibration_error(
            q, y, bin_size=BIN_SIZE
        ),
        "calibration_error, uniform 15 bins": lambda: calibration_error(
            q, y, binning="uniform", n_bins=15
        ),
        "Σq by bin: index_add_ into 15 bins": in_place,
        "Σq by bin: spread_bin_sums": lambda: binning.spread_bin_sums(bin_of, 15, as_double),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", type=device, default="cpu")
    parser.add_argument("--sizes", type=size, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--repeats", type=count, default=5)
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    print(
        f"torch {torch.__version__}, {args.device}, {threads} thread(s); "
        f"median of {args.repeats} runs\n"
    )
    for n in map(int, args.sizes):
        q, y = make_inputs(n, args.device)
        check_bins(q, y)  # before any timing: a wrong way stops the script early
        print(f"### N = {n:,}\n\n| part | median ms |\n|---|---:|")
        for name, run in parts(q, y).items():
            print(f"| {name} | {median_ms(run, args.device, args.repeats):.2f} |", flush=True)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
