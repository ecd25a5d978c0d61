"""The scripts in benchmarks/ still run: docs quote their commands, and a library change
that breaks one is found here, not by the next reader (coverage_diagnostics.py had
called coverage.py's helpers with their old signatures and crashed at any size)."""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def _run(monkeypatch, script: Path, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", [str(script), *argv])
    runpy.run_path(str(script), run_name="__main__")


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_script_answers_help(monkeypatch, capsys, script: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        _run(monkeypatch, script, "--help")
    assert stop.value.code == 0
    assert "usage:" in capsys.readouterr().out


@pytest.mark.parametrize("variant", ["grouped", "iid"])
def test_coverage_diagnostics_runs_at_a_small_size(monkeypatch, capsys, variant: str) -> None:
    argv = ["--variant", variant, "--n", "2000", "--reps", "2", "--samples", "20"]
    _run(monkeypatch, BENCHMARKS / "coverage_diagnostics.py", *argv)
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| 0.")]
    assert len(rows) == 4  # one per miscalibration k of the study
    coverage = [float(x) for row in rows for x in row.split("|")[-2].split("/")]
    assert all(0 <= c <= 1 for c in coverage)


def _load(name: str):
    """The script as a module (not run as __main__), so that a test can swap its parts."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore:CalibrationError. only 1 bin:UserWarning")
def test_bench_streaming_times_several_sizes(monkeypatch, capsys) -> None:
    """`--n` takes several sizes in float notation (so does `--peak-max`), and the
    throughput table has a row per size and method with its ratio to torchmetrics."""
    bench = _load("bench_streaming")
    monkeypatch.setattr(bench, "TIMED_PAIRS", 4000)
    # The state-bytes and peak tables run at fixed sizes up to 10⁸: stubbed here.
    names = list(bench.factories(False))
    seen = {}

    def peaks(args):
        seen["peak_max"] = args.peak_max
        return {name: dict.fromkeys((10**6, 10**7, 10**8)) for name in names}

    monkeypatch.setattr(
        bench,
        "state_sizes",
        lambda args: {name: dict.fromkeys((10**6, 10**7, 10**8), 0) for name in names},
    )
    monkeypatch.setattr(bench, "peaks", peaks)
    argv = ["--n", "2e3", "1e3", "--peak-max", "1e5", "--batch", "1000", "--repeats", "1"]
    monkeypatch.setattr(sys, "argv", ["bench_streaming.py", *argv])
    bench.main()
    assert seen["peak_max"] == 1e5
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith(("| 1,000 |", "| 2,000 |"))]
    assert len(rows) == 12  # 2 sizes × 3 methods × validate_args on and off
    assert all(row.rstrip(" |").endswith("×") for row in rows)
    assert rows[0].startswith("| 1,000 |") and rows[-1].startswith("| 2,000 |")


def test_bench_scale_prints_the_ratio_to_torchmetrics(monkeypatch, capsys) -> None:
    _run(monkeypatch, BENCHMARKS / "bench_scale.py", "--max", "1e4", "--torchmetrics-max", "1e4")
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.startswith("| q | N |"))
    column = head.split("|").index(" streaming / exact time ÷ torchmetrics ")
    rows = [line.split("|") for line in lines if line.startswith("| uniform | 1e+04 |")]
    assert rows[0][column].strip().count("×") == 2  # rows[1]: the drift table's
    bench = _load("bench_scale")
    assert bench.torchmetrics_ratio({"stream_s": 1.0}) == "—"
    assert bench.torchmetrics_ratio({"stream_s": 3.0, "tm_s": 2.0}) == "1.50× / —"
