"""The scripts in benchmarks/ still run: docs quote their commands, and a library change
that breaks one is found here, not by the next reader (coverage_diagnostics.py had
called coverage.py's helpers with their old signatures and crashed at any size)."""

from __future__ import annotations

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
