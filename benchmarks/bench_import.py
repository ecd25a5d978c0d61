"""Import time of the package's entry points, against ``import torch`` (the floor).

Each import runs in a fresh interpreter (``python -c``), the statements taken in turn
``--repeats`` times so that a loaded machine slows them alike; the table gives medians
and the ratio to ``import torch`` measured in the same rounds. ``import calib_metrics``
and ``import calib_metrics.functional`` should cost torch alone: ``CalibrationError``
(torchmetrics, which pulls matplotlib and scipy) is imported on first use.

Run ``python benchmarks/bench_import.py [--repeats 7] [--before CHECKOUT [--before-commit
COMMIT]] [--write]``;
``--write`` puts the table in ``docs/bench_import.md``. ``CHECKOUT`` must hold a
``calib_metrics/`` package, and every child checks, after its timing, that the
``calib_metrics`` it imported lies under its folder (or the script stops): an installed
package is found where the folder holds none.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._args import count  # noqa: E402
from benchmarks._record import command_line, load_average, machine_load  # noqa: E402

STATEMENTS = {
    "import torch": "import torch",
    "import calib_metrics.functional": "import calib_metrics.functional",
    "import calib_metrics": "import calib_metrics",
    "from calib_metrics import CalibrationError": "from calib_metrics import CalibrationError",
    "import torchmetrics": "import torchmetrics",
}
TIMER = "import time; t = time.perf_counter(); {statement}; t = time.perf_counter() - t"
# After the timing, the child checks that the calib_metrics it imported is the one under
# the root it was given: an editable install is found when the root holds none, and a
# --before folder without calib_metrics/ had timed the current package as "(--before)".
WHERE = (
    "import calib_metrics, pathlib, sys; where = pathlib.Path(calib_metrics.__file__).resolve()"
    "\nif pathlib.Path({root!r}).resolve() not in where.parents:"
    "\n    sys.exit(f'imported {{where}}, not the calib_metrics under {root}')"
)


def time_import(statement: str, root: Path = ROOT) -> float:
    """Seconds one fresh interpreter spends on ``statement`` with ``root`` on the path.

    Stops the script (SystemExit) where the child fails, or where the ``calib_metrics``
    it imported does not lie under ``root``."""
    code = [TIMER.format(statement=statement)]
    if "calib_metrics" in statement:
        code.append(WHERE.format(root=str(root)))
    code.append("print(t)")
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(code)],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"bench_import: `{statement}` in {root}: {why}")
    return float(done.stdout.strip())


def checkout(text: str) -> Path:
    """A folder holding a ``calib_metrics/`` package, for ``--before``."""
    folder = Path(text)
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {text!r}")
    if not (folder / "calib_metrics" / "__init__.py").is_file():
        raise argparse.ArgumentTypeError(
            f"{text!r} holds no calib_metrics/ package (the installed one would be timed)"
        )
    return folder


def measure(repeats: int, before: Path | None) -> dict[str, float]:
    """Median seconds per statement, the statements interleaved round by round.

    With ``before`` (another checkout, e.g. the code before lazy imports), its
    ``import calib_metrics.functional`` is timed in the same rounds.
    """
    runs = {name: (statement, ROOT) for name, statement in STATEMENTS.items()}
    if before is not None:
        runs["import calib_metrics.functional (--before)"] = (
            "import calib_metrics.functional",
            before,
        )
    for statement, root in runs.values():  # warm the file cache
        time_import(statement, root)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (statement, root) in runs.items():
            times[name].append(time_import(statement, root))
    return {name: statistics.median(values) for name, values in times.items()}


def table(
    medians: dict[str, float], repeats: int, load_start: float, before_commit: str | None = None
) -> str:
    floor = medians["import torch"]
    lines = [
        f"`{command_line('bench_import.py')}` — Python "
        f"{platform.python_version()}, {platform.machine()}; medians of {repeats} fresh "
        "interpreters per statement, taken in turn.",
        machine_load(load_start),
        "",
    ]
    if before_commit is not None:
        # The --before folder is the runner's own: say how to make it again (the page had
        # named a /tmp folder no reader has).
        lines += [
            f"The --before checkout is `git archive {before_commit}`, unpacked: "
            f"`mkdir DIR && git archive {before_commit} | tar -x -C DIR`.",
            "",
        ]
    lines += [
        "| statement | seconds | × `import torch` |",
        "|---|---:|---:|",
    ]
    lines += [f"| `{name}` | {t:.3f} | {t / floor:.2f}× |" for name, t in medians.items()]
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of ``argv`` (default: the command line), checked: argparse's usage
    line, one error line and exit 2 for any it refuses. Runs nothing: the tests read the
    documented commands through it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=count, default=7)
    parser.add_argument("--write", action="store_true", help="write docs/bench_import.md")
    parser.add_argument(
        "--before",
        type=checkout,
        help="another checkout to time `import calib_metrics.functional` in",
    )
    parser.add_argument(
        "--before-commit", help="the commit --before holds (`git archive COMMIT`), for the page"
    )
    args = parser.parse_args(argv)
    if args.before_commit is not None and args.before is None:
        parser.error("--before-commit names the commit of --before's checkout: give --before")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    load_start = load_average()
    medians = measure(args.repeats, args.before)
    text = table(medians, args.repeats, load_start, args.before_commit)
    print(text)
    if args.write:
        out = ROOT / "docs" / "bench_import.md"
        out.write_text("# Import time\n\n" + text + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
