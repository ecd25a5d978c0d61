"""Time of the paired comparison against its parts and against the way it was computed before.

For each N (default 1e4, 3e4, 1e5: at 1e6 a call takes about a minute on one CPU core):
q ~ U(0, 1) in float64, y ~ Bernoulli(q), model a
overconfident (min(q + 0.05, 1)) and model b calibrated (q). In one process, interleaved,
after a warm-up, the median of ``--repeats`` runs of:

- ``compare_calibration(a, b, y)`` as the library computes it (2,000 paired draws; both
  linear parts carried onto their neighbouring runs' covariance, the ends projected over
  m's lower bound, ``calib_metrics.functional.comparison``);
- the same with the shrink factor before 2026-11-28 (Var*(lin) − 2·Var*(quad), one pass
  fewer over the draws): what the neighbour world costs;
- two ``calibration_error_ci`` calls, one per model (2,000 draws each, the pair
  bootstrap): the unpaired intervals a user would otherwise read side by side;
- one ``torch.sort`` of the N probabilities (the yardstick of the metric's benchmark).

The machine may be shared, so the table reports each time's ratio to the library's
comparison measured in the same process with the runs interleaved. Before timing, each
model's error in every row (the comparisons' ``a`` and ``b``, the two intervals' point
errors) is checked against ``calibration_error`` on that model, or the script stops.

    python benchmarks/bench_compare.py --sizes 1e4 3e4 1e5 --repeats 3 --write
    python benchmarks/bench_compare.py --device cuda --sizes 1e5 1e6 1e7   # printed only

On a GPU the inputs, the generators and the draws live on the device, and each run ends
with ``torch.cuda.synchronize`` so that the time is the device's work, not its launch.
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
from benchmarks._record import command_line, load_average, machine_load  # noqa: E402
from benchmarks.coverage_compare import joint_shrink_squares  # noqa: E402
from calib_metrics.functional import (  # noqa: E402
    calibration_error,
    calibration_error_ci,
    compare_calibration,
    comparison,
)

DOC = ROOT / "docs" / "bench_compare.md"
SAMPLES = 2000
# Every row's point error is the same float64 computation on the same bins as
# calibration_error's (it is bitwise equal where measured): at most the order of the
# additions differs, a few ulps of the square; near a square of 0 (model b is calibrated,
# its debiased error clipped at 0) the root of a few ulps of terms of ~1e-3 is ~1e-9, so
# an absolute 1e-7 never fires spuriously, while a wrong error is off by far more.
ERROR_RTOL, ERROR_ATOL = 1e-9, 1e-7


def make_inputs(
    n: int, seed: int = 0, device: str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Model a's and model b's probabilities and the labels (float64), on ``device``."""
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    a, b, y = (q + 0.05).clamp(max=1), q, torch.bernoulli(q, generator=g)
    return a.to(device), b.to(device), y.to(device)


@contextmanager
def joint_shrink():
    """compare_calibration with the shrink factor it had before 2026-11-28."""
    original = comparison._paired_squares
    comparison._paired_squares = joint_shrink_squares
    try:
        yield
    finally:
        comparison._paired_squares = original


def candidates(device: str = "cpu") -> dict[str, Callable]:
    def generator() -> torch.Generator:
        return torch.Generator(device=device).manual_seed(1)

    def library(a, b, y):
        return compare_calibration(a, b, y, n_samples=SAMPLES, generator=generator())

    def before(a, b, y):
        with joint_shrink():
            return library(a, b, y)

    def unpaired(a, b, y):
        g = generator()
        return [calibration_error_ci(p, y, n_samples=SAMPLES, generator=g) for p in (a, b)]

    def sort(a, b, y):
        return torch.sort(a)

    return {
        "compare_calibration": library,
        "compare, shrink before 2026-11-28": before,
        "2 × calibration_error_ci (unpaired)": unpaired,
        "torch.sort (yardstick)": sort,
    }


def point_errors(result: object) -> list[float] | None:
    """Model a's and model b's point errors in a row's result (None for the sort's)."""
    if isinstance(result, comparison.ComparisonResult):
        return [result.a.error.item(), result.b.error.item()]
    if isinstance(result, list):
        return [r.error.item() for r in result]
    return None


def check_errors(results: dict[str, object], inputs: tuple) -> None:
    """Each row's errors of model a and model b equal ``calibration_error`` on that model
    (to ``ERROR_RTOL`` and ``ERROR_ATOL``): the rows time the same errors, or their times
    are not comparable. Raises SystemExit naming the row, the model and the gap."""
    a, b, y = inputs
    expected = [calibration_error(p, y).item() for p in (a, b)]
    for name, result in results.items():
        errors = point_errors(result)
        if errors is None:
            continue
        for model, got, want in zip("ab", errors, expected, strict=True):
            if abs(got - want) > ERROR_RTOL * abs(want) + ERROR_ATOL:
                raise SystemExit(
                    f"bench_compare: {name!r} gave model {model}'s error {got!r}, "
                    f"calibration_error {want!r} (difference {got - want:.3e}, N = {y.numel()})"
                )


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def answers(functions: dict[str, Callable], inputs: tuple) -> dict[str, object]:
    """Each function's result from one untimed call: the warm-up, and what is checked."""
    return {name: run(*inputs) for name, run in functions.items()}


def time_all(
    functions: dict[str, Callable], inputs: tuple, repeats: int, device: str = "cpu"
) -> dict[str, float]:
    """Median seconds of each function, runs interleaved (warm them up first: answers)."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, run in functions.items():
            synchronize(device)
            start = time.perf_counter()
            run(*inputs)
            synchronize(device)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def table(n: int, medians: dict[str, float]) -> str:
    reference = medians["compare_calibration"]
    rows = [
        f"| {name} | {seconds * 1e3:.1f} | {seconds / reference:.2f}× |"
        for name, seconds in medians.items()
    ]
    header = f"### N = {n:,}\n\n| computation | median ms | × compare_calibration |\n|---|---|---|"
    return "\n".join([header, *rows])


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of ``argv`` (default: the command line), checked: argparse's usage
    line, one error line and exit 2 for any it refuses. Runs nothing: the tests read the
    documented commands through it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", type=device, default="cpu")
    parser.add_argument("--sizes", type=size, nargs="+", default=[1e4, 3e4, 1e5])
    parser.add_argument("--repeats", type=count, default=5)
    parser.add_argument("--threads", type=count, default=1)
    parser.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.write and args.device != "cpu":
        parser.error(f"--write records the CPU table in {DOC.relative_to(ROOT)}; print GPU runs")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    torch.set_num_threads(args.threads)
    load_start = load_average()
    sections = []
    for n in map(int, args.sizes):
        inputs = make_inputs(n, device=args.device)
        functions = candidates(args.device)
        check_errors(answers(functions, inputs), inputs)
        medians = time_all(functions, inputs, args.repeats, args.device)
        sections.append(table(n, medians))
        print(sections[-1] + "\n", flush=True)
    load = machine_load(load_start)
    print(load)
    if args.write:
        command = command_line("bench_compare.py", args.threads)
        header = [
            "# Paired comparison: time",
            "",
            f"`{command}` ({args.threads} thread(s), {args.device}, torch {torch.__version__}; the",
            "machine may be shared: read the ratios, measured interleaved in one process).",
            load,
            "",
            "Before timing, every row's errors of model a and model b were checked against",
            "`calibration_error` on each model (they agree, or the script stops).",
            "",
            "The paired draws weight every resampling unit (each of the N pairs, or each group)",
            "in each of the 2,000 draws, O(N·S), so that both models see the same resample;",
            "`calibration_error_ci`'s default interval draws per bin. The neighbour world",
            "(each model's linear part carried onto its neighbour covariance since 2026-11-29,",
            "one factor before) adds one pass over the draws per model.",
            "",
        ]
        DOC.write_text("\n".join(header) + "\n" + "\n\n".join(sections) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
