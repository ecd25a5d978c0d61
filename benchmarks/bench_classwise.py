"""The classwise mode's cost grows with the number of classes, not of pairs: it bins each
class's N pairs apart (one adaptive binning a class, a fixed cost of many small torch
operations). Timed beside one-vs-rest (the same N·C pairs, binned once) and top-label
(N pairs), in the same process, as C grows at a fixed N and as N grows at a fixed C.

The peer is torch-uncertainty's ``ClasswiseCalibrationError(num_bins=15, norm="l2")``,
timed (update + compute) in the same process against our classwise error on the same
15 equal-width bins as the plug-in (``binning="uniform", debias=False``), the quantity it
computes: the mean of its classes' torchmetrics binary errors (docs/measures.md). Every
call is interleaved with the others, ``--repeats`` rounds after a warm-up; the table
gives medians, and the peer's time over ours on its quantity.

Before timing, at each shape, the answers are checked (or the script stops): that
quantity, ours and the peer's, on float64 copies of probs (so that both sum in float64,
where the peer's own row sums in float32) within ``PEER_RTOL``; and the timed classwise
error (equal-mass bins, debiased, the default) against the mean of ``calibration_error``
over the classes' binary pairs (probs[:, c], [target = c]), within ``SAME_RTOL``.
torch-uncertainty's package ``__init__`` imports torchvision and rich, which it does not
declare; its calibration modules import neither, so they are loaded by path (as
tests/test_multiclass_modes.py does). Where they do not load, the peer's columns read "–".

Run ``python benchmarks/bench_classwise.py --repeats 3 --threads 1 --write``; ``--write``
puts the table in docs/measures.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_scale import write_block  # noqa: E402

from benchmarks._args import count  # noqa: E402
from benchmarks._peers import torch_uncertainty_calibration  # noqa: E402
from benchmarks._record import interleaved_medians, load_average, machine_load  # noqa: E402
from calib_metrics.functional import calibration_error  # noqa: E402

SHAPES = [(20, 100), (20, 1000), (20, 5000), (1000, 100), (10000, 100)]
MARKERS = ("<!-- bench_classwise:begin -->", "<!-- bench_classwise:end -->")
# Both sum in float64 over the same bins: only the order of the additions differs.
PEER_RTOL = 1e-9
# The classwise error and the mean of the same C binary errors: the same sums, in float64.
SAME_RTOL = 1e-9
MODES = ("classwise", "one_vs_rest", "top_label")
PLUGIN = "classwise, 15 bins, plug-in"
PEER = "torch-uncertainty"


def peer_class() -> tuple[type | None, str]:
    """torch-uncertainty's ClasswiseCalibrationError, and a word on how it loaded."""
    try:
        package = torch_uncertainty_calibration()
    except Exception as err:  # a broken install raises more than ImportError
        return None, f"not loaded ({type(err).__name__}: {err})"
    if package is None:
        return None, "not installed"
    return package.ClasswiseCalibrationError, "loaded by path"


def plugin(probs: torch.Tensor, target: torch.Tensor) -> float:
    """Our classwise error on the peer's 15 equal-width bins, the plug-in."""
    return calibration_error(
        probs, target, binning="uniform", n_bins=15, debias=False, mode="classwise"
    ).item()


def calls(peer: type | None) -> dict[str, Callable[[torch.Tensor, torch.Tensor], float]]:
    """The timed calls: our three modes at their defaults, our plug-in, the peer."""
    timed = {m: (lambda p, t, m=m: calibration_error(p, t, mode=m).item()) for m in MODES}
    timed[PLUGIN] = plugin
    if peer is not None:

        def run_peer(probs: torch.Tensor, target: torch.Tensor) -> float:
            metric = peer(num_classes=probs.shape[-1], num_bins=15, norm="l2")
            metric.update(probs, target)
            return metric.compute().item()

        timed[PEER] = run_peer
    return timed


def check(probs: torch.Tensor, target: torch.Tensor, timed: dict) -> None:
    """The checks of the module docstring; SystemExit naming the shape otherwise."""
    shape = f"N = {probs.shape[0]:,}, C = {probs.shape[1]:,}"
    per_class = [
        calibration_error(probs[:, c], (target == c).float()).item() for c in range(probs.shape[1])
    ]
    want, got = statistics.fmean(per_class), timed["classwise"](probs, target)
    if not abs(got - want) <= SAME_RTOL * abs(want):  # a NaN fails too
        raise SystemExit(
            f"bench_classwise: classwise error {got!r} at {shape}, the mean of the classes' "
            f"binary errors {want!r}: the timed answer is wrong"
        )
    if PEER in timed:
        ours, peer = plugin(probs.double(), target), timed[PEER](probs.double(), target)
        if not abs(ours - peer) <= PEER_RTOL * abs(peer):
            raise SystemExit(
                f"bench_classwise: {PLUGIN} {ours!r} at {shape} on float64 copies, "
                f"torch-uncertainty {peer!r}: not the same quantity, so their times are "
                "not comparable"
            )


def medians(probs: torch.Tensor, target: torch.Tensor, timed: dict, repeats: int) -> dict:
    """Median seconds of each call, the calls interleaved round by round (after the
    warm-up in :func:`check` and one call each here)."""
    for fn in timed.values():
        fn(probs, target)
    return interleaved_medians(timed, (probs, target), repeats)


def row(n: int, c: int, each: dict[str, float]) -> str:
    peer = f"{each[PEER]:.3f} | {each[PEER] / each[PLUGIN]:.2g}×" if PEER in each else "– | –"
    return (
        f"| {n:,} | {c:,} | {each['classwise']:.3f} | {1000 * each['classwise'] / c:.2f} | "
        f"{each['one_vs_rest']:.3f} | {each['top_label']:.4f} | "
        f"{each['classwise'] / each['one_vs_rest']:.0f} | {each[PLUGIN]:.3f} | {peer} |"
    )


def shape(text: str) -> tuple[int, int]:
    """``--shapes``' N×C, written ``NxC`` (``20x5000``)."""
    n, _, c = text.partition("x")
    try:
        return count(n), count(c)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be NxC, two whole numbers of at least 1, not {text!r}"
        ) from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--shapes",
        type=shape,
        nargs="+",
        default=SHAPES,
        help="N x C of each row, as NxC (default: "
        + " ".join(f"{n}x{c}" for n, c in SHAPES)
        + "; the peer took 6 s a call at 20x1000, and grows with C)",
    )
    parser.add_argument("--repeats", type=count, default=3)
    parser.add_argument(
        "--threads", type=count, default=None, help="torch threads (default: torch's choice)"
    )
    parser.add_argument("--write", action="store_true", help="write docs/measures.md's table")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    load_start = load_average()
    peer, status = peer_class()
    timed = calls(peer)
    generator = torch.Generator().manual_seed(0)
    lines = [
        f"torch-uncertainty's ClasswiseCalibrationError: {status}; medians of "
        f"{args.repeats} interleaved runs, {torch.get_num_threads()} thread(s).",
        "",
        "| N | C | classwise s | ms per class | one-vs-rest s | top-label s | × one-vs-rest "
        "| classwise, 15 bins, plug-in s | torch-uncertainty s | torch-uncertainty ÷ ours |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for n, c in args.shapes:
        probs = (3 * torch.randn(n, c, generator=generator)).softmax(-1)
        target = torch.randint(0, c, (n,), generator=generator)
        check(probs, target, timed)  # before this shape's timing: a wrong answer stops it
        lines.append(row(n, c, medians(probs, target, timed, args.repeats)))
        print(lines[-1], flush=True)
    lines += ["", machine_load(load_start)]
    print(lines[-1])
    if args.write:
        write_block(ROOT / "docs" / "measures.md", MARKERS, "bench_classwise.py", "\n".join(lines))


if __name__ == "__main__":
    main()
