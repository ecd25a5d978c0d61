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

    python benchmarks/binning_parts.py --device cuda --sizes 1e7 1e8
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

from benchmarks.bench_metric import make_inputs  # noqa: E402
from calib_metrics.functional import binning, calibration_error  # noqa: E402

BIN_SIZE = 5000


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
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, {args.device}; median of {args.repeats} runs\n")
    for n in map(int, args.sizes):
        q, y = make_inputs(n, args.device)
        print(f"### N = {n:,}\n\n| part | median ms |\n|---|---:|")
        for name, run in parts(q, y).items():
            print(f"| {name} | {median_ms(run, args.device, args.repeats):.2f} |", flush=True)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
