"""The scripts in benchmarks/ still run: docs quote their commands, and a library change
that breaks one is found here, not by the next reader (coverage_diagnostics.py had
called coverage.py's helpers with their old signatures and crashed at any size)."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
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


def _squeezed(text: str) -> str:
    """``text`` without whitespace: argparse reflows a description to the terminal."""
    return "".join(text.split())


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_scripts_help_agrees_with_its_docstring(monkeypatch, capsys, script: Path) -> None:
    """`--help` gives the docstring's whole first paragraph (bench_read.py's stopped
    mid-sentence at the end of its first line), and every option of the commands the
    docstring shows for the script is one it takes (coverage_compare.py's showed a
    `--write` it does not have)."""
    with pytest.raises(SystemExit):
        _run(monkeypatch, script, "--help")
    help_text = capsys.readouterr().out
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    assert _squeezed(doc.split("\n\n")[0]) in _squeezed(help_text)
    command = rf"python (?:-\S+ )*benchmarks/{re.escape(script.name)}([^\n`]*)"
    commands = re.findall(command, re.sub(r"\\\n\s*", " ", doc))
    shown = {opt for c in commands for opt in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", c)}
    assert shown <= set(re.findall(r"--[a-z][a-z0-9-]*", help_text)), commands


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


def test_bench_scale_draws_the_pairs_before_any_timing(monkeypatch) -> None:
    """Every method is timed on pairs already in memory: drawing them (torch.rand, the
    Bernoulli labels) inside the streaming and torchmetrics timings, and not inside the
    exact one, had put 24–36% of streaming's time into its column."""
    bench = _load("bench_scale")
    timing = []
    draw = bench.batches

    def batches(*args):
        assert not timing, "pairs drawn inside a timed call"
        yield from draw(*args)

    def measured(fn, *args, **kwargs):
        timing.append(fn)
        try:
            return unguarded(fn, *args, **kwargs)
        finally:
            timing.pop()

    unguarded = bench.measured
    monkeypatch.setattr(bench, "batches", batches)
    monkeypatch.setattr(bench, "measured", measured)
    # Every call counts as short, whatever the machine's load: short calls are repeated
    # and the best time kept, as one timing of them is noise.
    monkeypatch.setattr(bench, "SHORT_S", float("inf"))
    args = argparse.Namespace(torchmetrics_max=1e4, exact_max=1e4, sort_max=1e4, repeats=2)
    row = bench.run_size(10_000, "uniform", args)
    assert {"stream_s", "tm_s", "exact_s", "sort_s"} <= row.keys()
    assert row["calls"] == 2


def test_bench_metric_compares_torchmetrics_with_the_same_quantity() -> None:
    """The row timed against torchmetrics is our plug-in on its 15 bins, which equals
    torchmetrics' value given float64 copies of the pairs (the default, debiased, row is
    another quantity: 0.0 against 0.0019 at 3·10⁵ pairs), and the script stops when the
    two disagree."""
    from torchmetrics.classification import BinaryCalibrationError

    bench = _load("bench_metric")
    n = 20_000
    q, y = bench.make_inputs(n, "cpu")
    peer = BinaryCalibrationError(n_bins=15, norm="l2")
    peer.update(q.double(), y.double())
    expected = peer.compute().item()
    _, values = bench.time_all(n, "cpu", repeats=1, samples=10, bin_size=500)
    ours = {k: v for k, v in values.items() if k.startswith("uniform 15 bins")}
    same = [k for k, v in ours.items() if abs(v - expected) <= 1e-9 * expected]
    assert same and all("plug-in" in k for k in same), (ours, expected)
    with pytest.raises(RuntimeError, match="not the same quantity"):
        bench.check_peer(q, y, 1.01 * expected)


def test_bench_metric_torch_uncertainty_bins_follow_the_bin_size(monkeypatch) -> None:
    """torch-uncertainty's adaptive error gets N/β bins with β = --bin-size (it had N/5000
    whatever the bin size). The package is not installed here: a stand-in records the
    bins it is asked for."""
    import types

    asked = []

    class AdaptiveCalibrationError:
        def __new__(cls, task, num_bins, norm):
            asked.append(num_bins)
            from torchmetrics.classification import BinaryCalibrationError

            return BinaryCalibrationError(n_bins=num_bins, norm=norm)

    module = types.ModuleType("torch_uncertainty.metrics.classification")
    module.AdaptiveCalibrationError = AdaptiveCalibrationError
    for name in ("torch_uncertainty", "torch_uncertainty.metrics"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    bench = _load("bench_metric")
    q, y = bench.make_inputs(2_000, "cpu")
    peers = bench.candidates(10, 100)
    peer = next(fn for name, fn in peers.items() if name.startswith("torch-uncertainty"))
    peer(q, y)
    assert asked == [20]


def test_coverage_grouped_table_names_each_rows_data() -> None:
    """A run with `--variants grouped ovr` has a grouped and an ovr row for each (k, N, β)
    in the table of the debiased error with `groups=`: each row says which it is."""
    coverage = _load("coverage")
    row = {
        "k": 0.0, "n": 1000, "beta": "auto", "reps": 10, "truth": 0.0,
        "debiased_bias": 0.01, "debiased_rmse": 0.02,
        "debiased_grouped_bias": 0.01, "debiased_grouped_rmse": 0.02,
    }  # fmt: skip
    rows = [dict(row, variant=variant) for variant in ("grouped", "ovr")]
    lines = coverage.grouped_estimator_table(rows)
    head, *body = [line for line in lines if line.startswith("| ")]
    assert head.startswith("| data |")
    assert [line.split("|")[1].strip() for line in body] == ["grouped", "ovr"]


def test_coverage_tables_re_render_from_their_saved_results() -> None:
    """docs/coverage.md's generated tables come back from the JSON they were made from,
    whatever the interpreter's string hashing: β rules of equal value (auto = 100 at
    N = 10⁴) had kept a set's order, which followed PYTHONHASHSEED."""
    import os
    import subprocess

    root = BENCHMARKS.parent
    names = ("iid", "grouped", "grouped6", "grouped6b", "beta", "target", "cbrt", "ovr")
    argv = ["--from-json", *(f"docs/coverage/{name}.json" for name in names)]
    doc = (root / "docs" / "coverage.md").read_text(encoding="utf-8")
    begin, end = "<!-- coverage:begin -->", "<!-- coverage:end -->"
    block = doc[doc.index(begin) : doc.index(end) + len(end)]
    for seed in ("1", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed, OMP_NUM_THREADS="1")
        out = subprocess.run(
            [sys.executable, str(BENCHMARKS / "coverage.py"), *argv],
            cwd=root, env=env, capture_output=True, text=True, timeout=300, check=True,
        ).stdout  # fmt: skip
        assert out[out.index(begin) : out.index(end) + len(end)] == block, seed
