"""Streaming − exact drift against the sketch's resolution, on ``bench_scale``'s pairs.

The streaming sketch keeps count, Σr, Σr², Σy and the extremes of q per cell of
``resolution`` cells; a bin boundary that cuts a cell of several values shares the
cell's labels out by a redraw (an exact ordered draw in cells of up to 128 pairs, a
Dirichlet split beyond; docs/streaming.md), whose noise
is what is left of the streaming mode's drift once the pairs outgrow the exact buffer.
A cell holds about N / resolution pairs, so a finer sketch cuts smaller cells and
redraws less. This prints, for one N and distribution (the same calibrated pairs as
``bench_scale.py``'s table), the exact mode's plug-in and debiased errors for β = 5000
and "auto", and the streaming mode's at each resolution, with the state bytes of each
sketch. One pass over the data feeds every sketch.

Run ``python benchmarks/drift_resolution.py --n 1e9 --dist uniform --resolutions 18 20 22``
(about 10 GB at 10⁹: the exact mode holds the pairs).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_scale import batches, exact_errors, state_bytes, streaming_errors, whole

from benchmarks._args import at_least_two, size
from calib_metrics import CalibrationError
from calib_metrics.functional import adaptive_binning
from calib_metrics.functional.auto_bin import resolve_bin_size


def streaming(n: int, dist: str, exponents: list[int]) -> dict[int, dict]:
    """Per resolution 2**k: the streaming errors (β = 5000 and "auto") and state bytes."""
    fed = {
        k: CalibrationError(streaming=True, resolution=2**k, validate_args=False) for k in exponents
    }
    for q, y in batches(n, dist):
        for metric in fed.values():
            metric.update(q, y)
    out = {}
    for k, auto in fed.items():
        fixed = CalibrationError(
            streaming=True, bin_size=5000, resolution=2**k, validate_args=False
        )
        fixed.merge_state(auto)
        with warnings.catch_warnings():  # torchmetrics: "compute ... before the update"
            warnings.simplefilter("ignore", UserWarning)
            out[k] = {
                "errors": streaming_errors({5000: fixed, "auto": auto}),
                "bytes": state_bytes(auto),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=size, default=1e8)
    parser.add_argument("--dist", choices=["uniform", "beta0.3"], default="uniform")
    parser.add_argument(
        "--resolutions",
        type=at_least_two,
        nargs="+",
        default=[18, 20, 22],
        help="log2 of the sketch's resolution (≥ 2: a resolution of at least 4)",
    )
    args = parser.parse_args()
    n = int(args.n)
    rows = streaming(n, args.dist, args.resolutions)
    q, y = whole(n, args.dist)
    auto = resolve_bin_size("auto", n)
    exact = exact_errors(
        {5000: adaptive_binning(q, y, bin_size=5000), "auto": adaptive_binning(q, y, bin_size=auto)}
    )
    del q, y
    print(f"N = {n:.0e}, q {args.dist}, β = 5000 and auto = {auto}; plug-in / debiased\n")
    print("| sketch | state | β = 5000 | streaming − exact | β = auto | streaming − exact |")
    print("|---|---:|---:|---:|---:|---:|")
    cells = [f"{exact[f'{b}/False']:.5f} / {exact[f'{b}/True']:.5f}" for b in ("5000", "auto")]
    print(f"| exact | | {cells[0]} | | {cells[1]} | |")
    for k, row in rows.items():
        parts = []
        for b in ("5000", "auto"):
            s = [row["errors"][f"{b}/{d}"] for d in (False, True)]
            e = [exact[f"{b}/{d}"] for d in (False, True)]
            parts += [f"{s[0]:.5f} / {s[1]:.5f}", f"{s[0] - e[0]:+.1e} / {s[1] - e[1]:+.1e}"]
        print(f"| 2^{k} cells | {row['bytes'] / 2**20:,.0f} MiB | " + " | ".join(parts) + " |")


if __name__ == "__main__":
    main()
