"""The scripts in benchmarks/ still run: docs quote their commands, and a library change
that breaks one is found here, not by the next reader (coverage_diagnostics.py had
called coverage.py's helpers with their old signatures and crashed at any size)."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
# The files that run as scripts (_args.py only holds what they share).
SCRIPTS = sorted(s for s in BENCHMARKS.glob("*.py") if "__main__" in s.read_text(encoding="utf-8"))


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
        bench.check_peer(q, y, lambda q, y: 1.01 * expected, expected)
    with pytest.raises(RuntimeError, match="on the float32 input"):  # a float32-only fault
        bench.check_peer(q, y, lambda q, y: expected, 10 * expected)
    # One pair across an edge moves small N's error by percents (R2: 3% at 10³), not tenfold.
    bench.check_peer(q, y, lambda q, y: expected, 1.03 * expected)


def test_bench_metric_check_holds_where_float32_edges_move_a_pair() -> None:
    """The check compares both libraries on float64 copies: the row bins the float32
    input with float32 edges, where q = 0.20000000298 (float32) lies below bin 3's
    float32 edge 0.20000001788 but above its float64 edge 0.2. It had compared the
    float32 row with float64 torchmetrics and stopped the script at sizes where a few
    pairs fall so (1 of 2·10⁷ at seed 0)."""
    bench = _load("bench_metric")
    q, y = bench.make_inputs(2_000, "cpu")
    near_edge = torch.full((200,), 0.20000000298023224, dtype=torch.float32)
    q, y = torch.cat([q, near_edge]), torch.cat([y, torch.ones(200)])
    plugin = bench.candidates(samples=10, bin_size=500)[bench.OURS_PLUGIN]
    check = bench.check_peer(q, y, plugin, plugin(q, y))
    assert check["ours_float64"] == pytest.approx(check["peer_float64"], rel=1e-9)
    assert check["ours"] != pytest.approx(check["ours_float64"], rel=1e-6)


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


def test_bench_item_bootstrap_times_every_arm_with_the_same_error(monkeypatch, capsys) -> None:
    """Each size's row has the four arms' times and intervals, the plain loop only up to
    ``--loop-max``; the script had checked that items and pairs apart keep the error."""
    argv = ["--sizes", "300", "2000", "--draws", "20", "--repeats", "1", "--loop-max", "300"]
    _run(monkeypatch, BENCHMARKS / "bench_item_bootstrap.py", *argv)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    small, large = rows[-2:]
    assert small.startswith("| 300 |") and "; plain loop [" in small
    assert large.startswith("| 2,000 |") and "plain loop" not in large and "| – | – |" in large
    assert all(f"{arm} [" in large for arm in ("items", "pairs apart", "groups"))


def test_smooth_band_coverage_scores_two_class_items_three_ways(monkeypatch, capsys) -> None:
    """``--two-class`` pools a pair and its mirror: each kind gets the pairs' score and
    quantile bands and the items' (``groups=torch.arange(N)``), coverages in [0, 1]."""
    argv = ["--two-class", "--kinds", "tempered", "--n", "400", "--reps", "2"]
    _run(monkeypatch, BENCHMARKS / "smooth_band_coverage.py", *argv, "--samples", "10")
    out = capsys.readouterr().out
    assert "items of two classes" in out
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| tempered |")]
    assert [row[2].strip() for row in rows] == ["score", "quantile", "items"]
    assert all(0 <= float(row[k]) <= 1 for row in rows for k in (3, 4, 5, 6))


DEGENERATE = [
    ("bench_streaming.py", "--batch", "0"),
    ("bench_streaming.py", "--repeats", "-1"),
    ("bench_streaming.py", "--state-max", "0"),
    ("bench_compare.py", "--sizes", "0"),
    ("bench_metric.py", "--repeats", "0"),
    ("bench_metric.py", "--sizes", "-1e6"),
    ("bench_scale.py", "--repeats", "0"),
    ("bench_exact.py", "--sizes", "0"),
    ("bench_read.py", "--repeats", "-2"),
    ("binning_parts.py", "--sizes", "0"),
    ("binning_parts.py", "--threads", "0"),
    ("bench_chain.py", "--batch", "0"),
    ("bench_classwise.py", "--repeats", "0"),
    ("bench_item_bootstrap.py", "--draws", "0"),
    ("bench_item_bootstrap.py", "--loop-max", "-1"),
    ("bench_coref.py", "--samples", "0"),
    ("bench_import.py", "--repeats", "0"),
    ("coverage.py", "--reps", "0"),
    ("bench_metric.py", "--sizes", "1.5"),  # had been truncated to 1 pair
    # torch.set_num_threads' traceback; bench_streaming had read 0 as "the default"
    ("bench_metric.py", "--threads", "-1"),
    ("bench_exact.py", "--threads", "-1"),
    ("bench_scale.py", "--threads", "0"),
    ("bench_streaming.py", "--threads", "-2"),
    ("bench_streaming.py", "--threads", "0"),
    ("bench_chain.py", "--length", "1"),  # torch.randint(2, 2): lengths are drawn in [2, T]
    ("bench_streaming.py", "--n", "10"),  # 10⁵ fresh-metric runs a timing: hours
    # The studies' counts had been plain ints: an empty median, a division by zero, no pairs.
    ("compare_near_copies.py", "--reps", "0"),
    ("compare_noisy_models.py", "--reps", "0"),
    ("compare_plugin_size.py", "--n", "0"),
    ("compare_shrink_bias.py", "--reps", "0"),
    ("compare_spread.py", "--n", "0"),
    ("compare_transport_map.py", "--n", "0"),
    ("coverage_compare.py", "--reps", "0"),
    ("coverage_compare_diagnostics.py", "--reps", "0"),
    ("coverage_diagnostics.py", "--reps", "0"),
    ("grouped_debias.py", "--n", "0"),
    ("small_bins_coverage.py", "--reps", "0"),
    ("smooth_band_coverage.py", "--reps", "0"),
    ("streaming_gap_seeds.py", "--n", "0"),
    ("tie_debias.py", "--n", "0"),
    # One draw (or curve point) had ended in the library's "n_samples must be ... 2" traceback.
    ("coverage_compare.py", "--draws", "1"),
    ("compare_plugin_size.py", "--draws", "1"),
    ("small_bins_coverage.py", "--samples", "1"),
    ("smooth_band_coverage.py", "--points", "1"),
    ("compare_spread.py", "--draws", "1"),
]


class _Parsed(Exception):
    """Stops a script once its options are read: its namespace is ``args[0]``."""


def _parsed(monkeypatch, script: Path, *argv: str) -> argparse.Namespace:
    """The options ``script`` reads from ``argv``, without running its study."""
    parse = argparse.ArgumentParser.parse_args

    def parse_and_stop(parser, *args, **kwargs):
        raise _Parsed(parse(parser, *args, **kwargs))

    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
        with pytest.raises(_Parsed) as parsed:
            _run(patch, script, *argv)
    return parsed.value.args[0]


def _options(monkeypatch, script: Path, *argv: str) -> argparse.Namespace:
    """The options ``script`` takes from ``argv``, checked as its main checks them, without
    running its study: through its ``parse(argv)`` where it has one (the scripts whose
    checks go on after argparse's: ``parser.error`` of two options together), else
    argparse's alone (:func:`_parsed`)."""
    if not re.search(r"^def parse\(", script.read_text(encoding="utf-8"), re.M):
        return _parsed(monkeypatch, script, *argv)
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    return _load(script.stem).parse(list(argv))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_checks_after_argparse_are_a_parse_the_tests_can_call(script: Path) -> None:
    """A script that checks its options after ``parse_args`` (``parser.error``) does so in
    ``parse(argv)``, which its main calls: the documented commands of bench_scale,
    coverage, coverage_compare, bench_compare and bench_import had been read by argparse
    alone, their own checks never run."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        calls = {
            node.func.attr
            for node in ast.walk(function)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        if {"parse_args", "error"} <= calls:
            assert function.name == "parse", f"{script.name}: {function.name}()"


@pytest.mark.parametrize(
    ("script", "argv", "said"),
    [
        ("bench_scale.py", ["--max", "1e3"], "--max: the sizes start at 1e+04; 1000 runs none"),
        ("coverage.py", ["--variants", "ovr", "--sizes", "1001"], "a multiple of --classes 10"),
        ("coverage_compare.py", ["--neighbour-factor", "--joint-shrink"], "two shrinks"),
        ("bench_compare.py", ["--device", "cuda", "--write"], "records the CPU table"),
        ("bench_import.py", ["--before-commit", "abc123"], "give --before"),
        (
            "compare_noisy_models.py",
            ["--spread", "--reps", "1"],
            "argument --reps: must be a whole number of at least 2 with --spread",
        ),
    ],
)
def test_checks_after_argparse_refuse_in_one_line_without_a_run(
    monkeypatch, capsys, script: str, argv: list, said: str
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    import benchmarks._args

    monkeypatch.setattr(benchmarks._args, "device", str)  # "cuda" on a machine without
    with pytest.raises(SystemExit) as stop:
        _options(monkeypatch, BENCHMARKS / script, *argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert said in err.strip().splitlines()[-1]


def test_compare_spread_takes_no_draws_as_docs_coverage_md_runs_it(monkeypatch) -> None:
    """``--draws 0`` (the estimates alone) is a mode docs/coverage.md publishes; ba648d1's
    count type had refused it."""
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    from benchmarks._args import draws_or_none

    assert draws_or_none("0") == 0 and draws_or_none("200") == 200
    assert _parsed(monkeypatch, BENCHMARKS / "compare_spread.py", "--draws", "0").draws == 0


def test_counts_and_sizes_take_whole_numbers_in_float_notation(monkeypatch) -> None:
    """``--batch 1e5`` had been refused as "not a whole number" (it is one)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    from benchmarks._args import count, size

    assert (count("1e5"), count("2.0"), size("1e6")) == (100_000, 2, 1e6)


@pytest.mark.parametrize(("script", "option", "value"), DEGENERATE)
def test_degenerate_sizes_and_counts_are_refused_in_one_line(
    monkeypatch, capsys, script: str, option: str, value: str
) -> None:
    """A size, batch or repeat count below 1 is an argparse error (exit 2, one line that
    names the option), not a traceback from deep inside the run (`bench_streaming.py
    --batch 0`: "range() arg 3 must not be zero"; `bench_compare.py --sizes 0`: no pairs)."""
    with pytest.raises(SystemExit) as stop:
        _run(monkeypatch, BENCHMARKS / script, f"{option}={value}")  # "-1e6" is no flag
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"error: argument {option}: must be " in err.strip().splitlines()[-1]


# Options the studies could not use, refused while the command line is read.
MEANINGLESS = [
    # One data set (seed, repetition) had printed its sd as NaN (compare_shrink_bias:
    # statistics.stdev's traceback); these scripts print the sd over them.
    ("compare_plugin_size.py", "--reps", "1"),
    ("compare_shrink_bias.py", "--reps", "1"),
    ("compare_spread.py", "--data-sets", "1"),
    ("coverage_compare.py", "--reps", "1"),
    ("coverage_compare_diagnostics.py", "--reps", "1"),
    ("coverage_compare_mstar.py", "--reps", "1"),
    ("coverage_diagnostics.py", "--reps", "1"),
    ("grouped_debias.py", "--reps", "1"),
    ("shared_cells.py", "--seeds", "1"),
    ("streaming_gap_seeds.py", "--seeds", "1"),
    ("tie_debias.py", "--reps", "1"),
    # (compare_noisy_models prints the sd with --spread only: test_checks_after_argparse_...)
    # One bootstrap draw: the library's "n_samples must be at least 2" traceback, or NaN
    # spreads and zero-width intervals (coverage_compare_diagnostics, coverage, ...).
    ("compare_near_copies.py", "--draws", "1"),
    ("compare_noisy_models.py", "--draws", "1"),
    ("compare_shrink_bias.py", "--draws", "1"),
    ("coverage_compare_diagnostics.py", "--draws", "1"),
    ("coverage_diagnostics.py", "--samples", "1"),
    ("compare_by_label_fwer.py", "--samples", "1"),
    ("bench_metric.py", "--samples", "1"),
    ("coverage.py", "--samples", "1"),
    ("coverage.py", "--samples-large", "1"),
    # The grouped labels' correlation: √ρ and √(1 − ρ), a math domain error outside [0, 1].
    ("compare_spread.py", "--rho", "-0.1"),
    ("compare_spread.py", "--rho", "1.1"),
    ("compare_spread.py", "--rho", "nan"),  # had run, on labels of no stated correlation
    # b = a + ε: 0 leaves no near-copy (an empty median), a negative ε is scored against the
    # wrong truth, and above 0.05 b leaves [0, 1] (the library's traceback).
    ("compare_near_copies.py", "--shifts", "0"),
    ("compare_near_copies.py", "--shifts", "-1e-4"),
    ("compare_near_copies.py", "--shifts", "0.06"),
    ("compare_near_copies.py", "--shifts", "nan"),
    # An eigenvalue ratio: a negative or NaN one had silently meant "never hand over".
    ("compare_near_copies.py", "--near-copy", "-1"),
    ("compare_near_copies.py", "--near-copy", "nan"),
    ("compare_near_copies.py", "--near-copy", "2"),
    # a = q + c, b = q − c: c = 0 compares a model with itself, |c| > 0.1 leaves [0, 1]
    # (a negative c swaps a and b, and is taken).
    ("compare_plugin_size.py", "--shift", "0"),
    ("compare_plugin_size.py", "--shift", "-0"),
    ("compare_plugin_size.py", "--shift", "-0.2"),
    ("compare_plugin_size.py", "--shift", "0.2"),
    ("compare_plugin_size.py", "--shift", "inf"),
    ("compare_plugin_size.py", "--bin-size", "0"),  # the library's traceback
    ("compare_plugin_size.py", "--bin-size", "1e2.5"),  # int()'s traceback
    ("streaming_gap_seeds.py", "--bin-sizes", "0"),
    ("coverage_diagnostics.py", "--bin-size", "-5"),  # had run with β = −5
    # NaN passed every comparison, a negative tolerance failed identical numbers.
    ("interval_numbers.py", "--tolerance", "nan"),
    ("interval_numbers.py", "--tolerance", "-1"),
    ("interval_numbers.py", "--tolerance", "inf"),
    # Logits × c: 0 leaves no logits, a negative c no fit (the library's refusal), NaN and
    # infinity no finite logits.
    ("recalibration_checks.py", "--scales", "0"),
    ("recalibration_checks.py", "--scales", "-1"),
    ("recalibration_checks.py", "--scales", "nan"),
    # Past the mask floor c·z is read as masks (the targets' too: the library's refusal),
    # and below the temperatures a fit leaves room for its line search fails.
    ("recalibration_checks.py", "--scales", "1e300"),
    ("recalibration_checks.py", "--scales", "1e-200"),
    ("recalibration_checks.py", "--float16-scales", "0"),  # torch.multinomial's traceback
    # A rule's name or a quantile level: float()'s and torch.nanquantile's tracebacks.
    ("compare_boundary_level.py", "--levels", "strict"),
    ("compare_boundary_level.py", "--levels", "2"),
    ("compare_boundary_level.py", "--levels", "-0.1"),
    # log2 of a resolution: 2^−1 and 2^1 are no sketch the library takes.
    ("drift_resolution.py", "--resolutions", "-1"),
    ("drift_resolution.py", "--resolutions", "1"),
]


@pytest.mark.parametrize(("script", "option", "value"), MEANINGLESS)
def test_meaningless_study_options_are_refused_in_one_line(
    monkeypatch, capsys, script: str, option: str, value: str
) -> None:
    """A value the study cannot use is an argparse error (exit 2, one line that names the
    option), not a traceback deep in the run or a table of NaN. (Where the value is taken,
    the study does not run: the options read, the test fails.)"""
    with pytest.raises(SystemExit) as stop:
        _options(monkeypatch, BENCHMARKS / script, f"{option}={value}")  # "-0.1" is no flag
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"error: argument {option}: must be " in err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("script", "argv", "option", "value"),
    [
        ("compare_spread.py", ["--rho", "1"], "rho", 1.0),  # one shared latent per group
        ("compare_spread.py", ["--rho", "0"], "rho", 0.0),
        ("compare_spread.py", ["--data-sets", "2"], "data_sets", 2),
        ("compare_near_copies.py", ["--shifts", "0.05"], "shifts", [0.05]),
        ("compare_near_copies.py", ["--near-copy", "0"], "near_copy", 0.0),
        ("compare_near_copies.py", ["--near-copy", "1"], "near_copy", 1.0),
        ("compare_plugin_size.py", ["--shift", "0.1"], "shift", 0.1),
        ("compare_plugin_size.py", ["--shift", "-0.1"], "shift", -0.1),  # a and b swapped
        ("compare_noisy_models.py", ["--reps", "1"], "reps", 1),  # rates: no sd printed
        ("compare_noisy_models.py", ["--spread", "--reps", "2"], "reps", 2),
        ("compare_plugin_size.py", ["--bin-size", "1e3"], "bin_size", 1000),
        ("compare_plugin_size.py", [], "bin_size", "auto"),
        ("coverage_diagnostics.py", [], "bin_size", "auto"),
        ("coverage_diagnostics.py", ["--bin-size", "300"], "bin_size", 300),
        ("streaming_gap_seeds.py", [], "bin_sizes", ["auto", 5000, 1000, 200]),
        ("interval_numbers.py", ["--tolerance", "0"], "tolerance", 0.0),
        ("recalibration_checks.py", ["--scales", "1e-8", "1e6"], "scales", [1e-8, 1e6]),
        ("recalibration_checks.py", ["--scales", "1e-155", "1e198"], "scales", [1e-155, 1e198]),
        ("compare_boundary_level.py", ["--levels", "hq", "0", "1"], "levels", ["hq", "0", "1"]),
        ("drift_resolution.py", ["--resolutions", "2"], "resolutions", [2]),
        ("tie_debias.py", ["--reps", "2"], "reps", 2),
    ],
)
def test_study_options_take_the_ends_of_their_ranges(
    monkeypatch, script: str, argv: list, option: str, value
) -> None:
    assert getattr(_options(monkeypatch, BENCHMARKS / script, *argv), option) == value


def test_recalibration_scales_stop_before_the_mask_floor(monkeypatch) -> None:
    """``--scales 1e300`` had passed argparse, and the fit read the logits c·z at or below
    the library's mask floor as masked classes, the targets' too (its traceback). The
    largest c taken is the last power of 10 that keeps every logit c·z above it."""
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    checks = _load("recalibration_checks")
    z = checks.shifted_classifier()[0]
    largest = checks.largest_scale()
    assert (largest * z).abs().max() < -checks.MASK_FLOOR <= (10 * largest * z).abs().max()
    assert _options(monkeypatch, BENCHMARKS / "recalibration_checks.py").scales[-1] < largest


def test_recalibration_scales_start_where_every_fit_converges(monkeypatch, capsys) -> None:
    """The smallest c had been 1e-100, "below this c, a fit's line search fails", but
    1e-101 to 1e-155 fit: every fit of the scale table converges at the smallest c taken,
    and unpenalised matrix scaling's line search fails at a tenth of it."""
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    checks = _load("recalibration_checks")
    smallest = checks.SMALLEST_SCALE
    assert _options(monkeypatch, BENCHMARKS / "recalibration_checks.py", "--scales",
                    f"{smallest:g}").scales == [smallest]  # fmt: skip
    checks.scale_table([smallest])
    assert f"{smallest:g}" in capsys.readouterr().out
    z, y = checks.shifted_classifier()
    with pytest.raises(ValueError, match="line search failed"):
        checks.MatrixScaling(0.0, 0.0).fit(smallest / 10 * z, y)


def test_noisy_models_print_no_standard_error_of_one_data_set(monkeypatch, capsys) -> None:
    """``--reps 1`` (no --spread) had printed every rate as "1.000 ± 0.000": the Monte
    Carlo standard error of one data set means nothing. It prints the rates alone, as
    the rule for counts of data sets has it (at least 2 where a spread is printed)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    noisy = _load("compare_noisy_models")
    monkeypatch.setattr(noisy, "CELLS", [("binary", 300, 2)])
    rows = {}
    for reps in (1, 2):
        noisy.main(["--reps", str(reps), "--draws", "2"])
        rows[reps] = [line for line in capsys.readouterr().out.splitlines()
                      if line.startswith("| binary |")]  # fmt: skip
    assert len(rows[1]) == 1 and "±" not in rows[1][0]
    assert re.fullmatch(r"\| binary \| 300 \| – \| [01]\.\d{3} \| [01]\.\d{3} \| .*", rows[1][0])
    assert len(rows[2]) == 1 and rows[2][0].count("±") == 2


def test_interval_numbers_runs_copied_alone_onto_another_revision(tmp_path) -> None:
    """Its docstring says it runs unchanged on any revision; its --tolerance type had come
    from this checkout's benchmarks/_args.py, which an older checkout lacks (or the
    package of INTERVAL_NUMBERS_ROOT beside it): ModuleNotFoundError there."""
    import os
    import subprocess

    (tmp_path / "benchmarks").mkdir()
    script = tmp_path / "benchmarks" / "interval_numbers.py"
    script.write_bytes((BENCHMARKS / "interval_numbers.py").read_bytes())
    (tmp_path / "revision").mkdir()
    (tmp_path / "revision" / "calib_metrics").symlink_to(BENCHMARKS.parent / "calib_metrics")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(INTERVAL_NUMBERS_ROOT=str(tmp_path / "revision"), OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, str(script), "--tolerance", "-1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.endswith("error: argument --tolerance: must be a number of at least 0, not '-1'")


def test_coverage_rho_and_compare_spreads_are_one_type(monkeypatch) -> None:
    """coverage.py's --rho stops at RHO_MAX (its grouped truth's integral); compare_spread's,
    whose truth does not depend on ρ, at 1: both are _args.number from 0."""
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    coverage = _load("coverage")
    assert coverage._rho("0.9") == 0.9
    with pytest.raises(
        argparse.ArgumentTypeError, match=re.escape("must be a number from 0 to 0.9 (")
    ):
        coverage._rho("0.95")
    from benchmarks._args import correlation

    assert correlation("0.95") == 0.95
    with pytest.raises(
        argparse.ArgumentTypeError, match=re.escape("must be a number from 0 to 1,")
    ):
        correlation("-0.5")


DOCS = [BENCHMARKS.parent / "README.md", *sorted((BENCHMARKS.parent / "docs").glob("*.md"))]
FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
SCRIPT = re.compile(r"benchmarks/(\w+\.py)")
# A command: environment settings, python and its flags (or the script alone, inline),
# the script, its options.
COMMAND = re.compile(
    r"(?:[A-Z_]+=(?:<[^>]*>|\S+) )*(?P<python>python3? (?:-\S+ )*)?benchmarks/(\w+\.py)(.*)"
)


def _code(text: str) -> list[str]:
    """The code of a markdown page, its whitespace (line breaks too) made single spaces:
    each line of its fenced blocks, backslash continuations joined and the comment left
    out, and each inline span, wrapped over lines or not."""
    pieces = []
    for block in FENCE.finditer(text):
        for line in re.sub(r"\\\n", " ", block.group(1)).splitlines():
            pieces.append(" ".join(re.split(r"(?:^|\s)#", line)[0].split()))
    for paragraph in FENCE.sub("\n\n", text).split("\n\n"):
        pieces += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", paragraph)]
    return pieces


def _commands(piece: str) -> tuple[str, list[list[str]]] | None:
    """The script a piece of code runs and every argv it shows for it (:func:`_alternatives`;
    ``{a,b}`` expanded; placeholders set, ``...``: the options a run chose, left out; a
    pipe or redirection cut off); None for a piece that is no command (the script's bare
    path, inline, names it)."""
    found = COMMAND.fullmatch(piece)
    if not found or not (found["python"] or found[3].strip()):
        return None
    root = str(BENCHMARKS.parent)
    placeholders = {"SEED": ["41"], "SETTING": ["unequal"], "CHECKOUT": [root], "...": []}
    argvs = []
    for line in _alternatives(found[3]):
        argv = []
        for token in shlex.split(line):
            if token in ("|", ">", ">>", "&&", ";", "2>&1"):
                break
            braces = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", token)
            parts = braces.group(2).split(",") if braces else [None]
            argv += [f"{braces[1]}{p}{braces[3]}" if braces else token for p in parts]
        argvs.append([given for token in argv for given in placeholders.get(token, [token])])
    return found[2], argvs


def _alternatives(line: str) -> list[str]:
    """``line`` with each ``[a | b]`` one of its alternatives, and each optional ``[a]``
    given and left out: one line per choice."""
    group = re.search(r"\[([^\[\]]*)\]", line)
    if group is None:
        return [line]
    head, tail = line[: group.start()], line[group.end() :]
    choices = group.group(1).split("|")
    choices += [] if len(choices) > 1 else [""]
    return [expanded for choice in choices for expanded in _alternatives(f"{head} {choice} {tail}")]


def _documented_commands() -> list[tuple[str, str, list[str]]]:
    """Every command of a benchmark script that README.md and docs/*.md show, as (doc,
    script, argv): ``python benchmarks/X.py ...`` in a code block or inline (wrapped
    after ``python`` too), and an inline ``benchmarks/X.py --option ...``."""
    found = []
    for doc in DOCS:
        for piece in _code(doc.read_text(encoding="utf-8")):
            command = _commands(piece)
            if command:
                found += [(doc.name, command[0], argv) for argv in command[1]]
    return found


DOCUMENTED = _documented_commands()


def test_every_script_the_docs_show_is_a_command_read_or_a_name() -> None:
    """Each ``benchmarks/X.py`` of README.md and docs/*.md is in the code the commands are
    read from, and there either a command (its argv tested below) or the script's bare
    path: the commands wrapped after ``python`` (README's grouped_debias, two of
    docs/coverage.md, docs/recalibration.md's, docs/streaming.md's bench_scale) and an
    inline ``benchmarks/compare_boundary_level.py --n 1000000`` had been skipped, and of
    ``[--neighbour-factor | --joint-shrink --per-draw-ends]`` only the first taken."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        pieces = _code(text)
        assert sum(len(SCRIPT.findall(piece)) for piece in pieces) == len(SCRIPT.findall(text))
        for piece in pieces:
            for script in SCRIPT.findall(piece):
                named = piece == f"benchmarks/{script}"
                assert named or _commands(piece), f"{doc.name}: `{piece}`"
    found = {(doc, script, shlex.join(argv)) for doc, script, argv in DOCUMENTED}
    assert ("README.md", "grouped_debias.py", "--reps 1500 --seed 11") in found
    assert ("streaming.md", "bench_scale.py", "--threads 1 --max 1e9 --exact-max 1e9 "
            "--torchmetrics-max 1e7 --write") in found  # fmt: skip
    assert ("recalibration.md", "recalibration_checks.py", "") in found
    assert ("coverage.md", "compare_boundary_level.py", "--n 1000000") in found
    shrinks = {argv for doc, script, argv in found if "--group-size 333" in argv}
    assert any(a.endswith("--neighbour-factor") for a in shrinks)
    assert any(a.endswith("--joint-shrink --per-draw-ends") for a in shrinks)


@pytest.mark.parametrize(
    ("doc", "script", "argv"), DOCUMENTED, ids=[f"{d}:{s}" for d, s, _ in DOCUMENTED]
)
def test_every_documented_command_is_one_its_script_takes(monkeypatch, doc, script, argv) -> None:
    """The commands docs/*.md and README.md publish still parse, through the script's own
    checks after argparse's too: an option type narrowed to refuse what a study cannot
    use must take every value they show (``--draws 0`` of compare_spread had been refused
    once). Devices are this machine's (no CUDA here)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS.parent))
    import benchmarks._args

    monkeypatch.setattr(benchmarks._args, "device", str)
    try:
        _options(monkeypatch, BENCHMARKS / script, *argv)
    except SystemExit as stop:
        pytest.fail(f"{doc}: python benchmarks/{script} {shlex.join(argv)}: exit {stop.code}")


def test_bench_scale_refuses_a_max_below_its_sizes(monkeypatch, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        _run(monkeypatch, BENCHMARKS / "bench_scale.py", "--max", "1e3")
    assert stop.value.code == 2
    assert "error: --max: the sizes start at 1e+04" in capsys.readouterr().err


def test_bench_streaming_state_and_peak_runs_stop_at_their_max(monkeypatch) -> None:
    """`--state-max` bounds the state-bytes table and the streaming metric's peak run
    (both had always fed 10⁸ pairs, whatever `--n`), `--peak-max` the others' peak runs."""
    import subprocess

    bench = _load("bench_streaming")
    monkeypatch.setattr(bench, "TABLE_SIZES", (2000, 4000, 8000))
    asked, threads = [], []

    def run(command, **kwargs):
        asked.append(
            (command[command.index("--_peak") + 1], int(command[command.index("--_peak") + 2]))
        )
        threads.append(command[command.index("--threads") + 1])
        return subprocess.CompletedProcess(command, 0, stdout="123\n")

    monkeypatch.setattr(bench.subprocess, "run", run)
    args = argparse.Namespace(
        n=[1000], device="cpu", batch=1000, threads=None, state_max=4000, peak_max=2000
    )
    sizes = bench.state_sizes(args)
    assert all(by_n[8000] is None and by_n[4000] > 0 for by_n in sizes.values())
    peak = bench.peaks(args)
    assert sorted(n for name, n in asked if name == bench.STREAMING) == [2000, 4000]
    assert {n for name, n in asked if name != bench.STREAMING} == {2000}
    assert peak[bench.STREAMING] == {2000: 123, 4000: 123, 8000: None}
    # The children run at this process' thread count (they had been passed "0").
    assert set(threads) == {str(torch.get_num_threads())}


def _scale_args() -> argparse.Namespace:
    return argparse.Namespace(torchmetrics_max=1e4, exact_max=1e4, sort_max=1e4, repeats=1)


def test_bench_scale_times_each_method_to_its_error_and_checks_them(monkeypatch) -> None:
    """Every timed call ends in the error (the exact row had timed the binning alone while
    torchmetrics' timed update + compute), the answers are checked (torchmetrics' had been
    thrown away, streaming − exact never compared with `streaming_tolerance()`), and the
    streaming metric's measured peak is in the table beside its state."""
    bench = _load("bench_scale")
    answers = {}
    timed = bench.timed

    def spy(calls, repeats, check=None):
        results, rounds = timed(calls, repeats, check)
        answers.update({name: result for name, (result, _, _) in results.items()})
        return results, rounds

    monkeypatch.setattr(bench, "timed", spy)
    row = bench.run_size(10_000, "uniform", _scale_args())
    bins, error = answers["exact"]
    assert bins.count.sum() == 10_000
    assert error == pytest.approx(bench.calibration_error(*bench.whole(10_000, "uniform")).item())
    assert answers["stream"]._computed is not None  # compute() ran inside the timing
    assert row["tm_error"] == answers["tm"]
    assert row["tm_check"]["peer_float64"] == pytest.approx(row["tm_check"]["ours"], rel=1e-9)
    assert row["tolerance"].keys() == row["stream"].keys() == row["exact"].keys()
    head, _, line = bench.tables([row]).splitlines()[2:5]
    cells = dict(zip(head.split("|"), line.split("|"), strict=True))
    peak = f"{row['stream_peak'] / 2**20:,.1f} MiB"
    assert cells[" streaming extra peak (× input) "].strip().startswith(peak)
    assert "not a peak" in head


@pytest.mark.parametrize("wrong", ["exact", "torchmetrics"])
def test_bench_scale_stops_on_a_wrong_answer(monkeypatch, wrong: str) -> None:
    bench = _load("bench_scale")
    if wrong == "exact":
        right = bench.exact_error
        monkeypatch.setattr(bench, "exact_error", lambda q, y, size: (right(q, y, size)[0], 0.5))
    else:
        right = bench.torchmetrics_error
        monkeypatch.setattr(bench, "torchmetrics_error", lambda q, y: right(q, y) + 1e-3)
    with pytest.raises(SystemExit, match=r"bench_scale: .* at N = 10,000"):
        bench.run_size(10_000, "uniform", _scale_args())


def test_bench_scale_plots_the_streaming_peak_apart_from_its_state(tmp_path) -> None:
    bench = _load("bench_scale")
    row = {
        "n": 10**6, "dist": "uniform", "exact_s": 1.0, "stream_s": 1.0, "tm_s": 1.0,
        "exact_peak": 7 * 2**20, "stream_peak": 75 * 2**20, "tm_peak": 37 * 2**20,
        "stream_state": 12 * 2**20,
    }  # fmt: skip
    fig = bench.plot([row, dict(row, n=10**7)], tmp_path / "scale.png")
    memory = fig.axes[1]
    lines = {line.get_label(): line for line in memory.get_lines()}
    assert lines["streaming, extra peak"].get_ydata()[0] == 75
    assert lines["streaming, state (not a peak)"].get_ydata()[0] == 12
    assert "state" in memory.get_title()


def test_bench_metric_measures_the_cuda_allocator_on_a_gpu(monkeypatch) -> None:
    """On a GPU the extra peak is the CUDA allocator's (the host's resident set, all it
    read, does not hold device memory: ~0, which met "≤ 2× input" for nothing); on the
    CPU it stays the resident high-water mark. No GPU here: torch.cuda is stood in for."""
    bench = _load("bench_metric")
    calls = []
    fake = {
        "synchronize": lambda device=None: calls.append("synchronize"),
        "reset_peak_memory_stats": lambda device=None: calls.append("reset"),
        "memory_allocated": lambda device=None: 1000,
        "max_memory_allocated": lambda device=None: 5096,
    }
    for name, fn in fake.items():
        monkeypatch.setattr(bench.torch.cuda, name, fn)

    def no_host_peak():
        raise AssertionError("the host's resident set read on a GPU")

    monkeypatch.setattr(bench, "_resident_peak_kib", no_host_peak)
    assert bench.extra_peak(lambda: calls.append("run"), "cuda") == (4096, True)
    assert calls == ["synchronize", "reset", "run", "synchronize"]
    assert "CUDA allocator" in bench.peak_kind("cuda:0")
    monkeypatch.undo()

    def no_cuda(*args, **kwargs):
        raise AssertionError("the CUDA allocator read on the CPU")

    monkeypatch.setattr(bench.torch.cuda, "max_memory_allocated", no_cuda)
    extra, _ = bench.extra_peak(lambda: torch_ones(2**23), "cpu")
    assert extra >= 0
    assert bench.peak_kind("cpu") == "rise of the resident high-water mark"


def torch_ones(n: int):
    import torch

    return torch.ones(n).sum()


def test_binning_parts_checks_its_ways_to_the_bins(monkeypatch, capsys) -> None:
    """The timed ways to the same bins are checked before timing (the script stops where
    one is wrong), and `--threads` sets torch's threads, as in the other scripts."""
    import torch

    parts = _load("binning_parts")
    q, y = parts.make_inputs(200_000, "cpu")
    parts.check_bins(q, y)  # the selection and the sort agree
    right = parts.binning._sorted_prefix

    def off(q, y, ranks):
        f = right(q, y, ranks).clone()
        f[1, 1] += 1  # one label moved between the first two bins
        return f

    monkeypatch.setattr(parts.binning, "_sorted_prefix", off)
    with pytest.raises(SystemExit, match="freq differs"):
        parts.check_bins(q, y)
    monkeypatch.undo()
    threads = torch.get_num_threads()
    try:
        parts.main(["--sizes", "2e3", "--repeats", "1", "--threads", "1"])
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert "1 thread(s)" in capsys.readouterr().out


def test_bench_classwise_takes_threads(monkeypatch, capsys) -> None:
    import torch

    bench = _load("bench_classwise")
    monkeypatch.setattr(bench, "SHAPES", [(30, 3)])
    monkeypatch.setattr(sys, "argv", ["bench_classwise.py", "--repeats", "1", "--threads", "1"])
    threads = torch.get_num_threads()
    try:
        bench.main()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert any(line.startswith("| 30 | 3 |") for line in out.splitlines())
    assert "load average" in out


def test_bench_read_writes_its_table_and_says_slower_or_faster(monkeypatch, tmp_path) -> None:
    """`--write` puts a markdown table in docs/bench_read.md (the script had printed lines
    only, and nothing was published), with a sentence per peer saying whether ours is
    slower or faster at each N."""
    bench = _load("bench_read")
    monkeypatch.setattr(bench, "DOC", tmp_path / "bench_read.md")
    monkeypatch.setattr(
        sys, "argv", ["bench_read.py", "--sizes", "500", "--repeats", "1", "--write"]
    )
    results = bench.main(["--sizes", "500", "--repeats", "1", "--write"])
    text = (tmp_path / "bench_read.md").read_text(encoding="utf-8")
    assert "python benchmarks/bench_read.py --sizes 500 --repeats 1 --threads" in text
    assert "| 500 |" in text
    for peer, t in results[500].items():
        if peer != "ours":
            word = "slower" if results[500]["ours"] > t else "faster"
            line = next(line for line in text.splitlines() if line.startswith(f"- {peer}:"))
            assert word in line or "as fast" in line, line


def test_coverage_run_line_and_one_bin_rows(monkeypatch) -> None:
    """The Run line describes the ovr variant only where it ran (it had described it, and
    its true errors, after any run), and a β that makes one bin of the N pairs is marked
    (β = 1000 and 5000 at N = 1000 had been two rows of the same numbers, unexplained)."""
    coverage = _load("coverage")
    config = {
        "a": 0.3, "b": 0.3, "group_size": 20, "rho": 0.5, "classes": 10, "alpha": 0.2,
        "truths": {0.0: 0.0}, "grouped_truths": {0.0: 0.0}, "ovr_truths": {0.0: 0.0},
    }  # fmt: skip
    row = {
        "variant": "iid", "k": 0.0, "n": 1000, "reps": 5, "samples": 20, "truth": 0.0,
        "plugin_bias": 0.01, "plugin_rmse": 0.01, "debiased_bias": 0.0, "debiased_rmse": 0.0,
    }  # fmt: skip
    rows = [dict(row, beta=beta) for beta in ("auto", 1000, 5000)]
    text = coverage.render({"config": config, "rows": rows})
    assert "ovr variant" not in text
    estimates = [line for line in text.splitlines() if line.startswith("| iid | 0.0 | 1,000 |")]
    assert [line.split("|")[4].strip() for line in estimates[:3]] == [
        "1000 *(one bin)*", "5000 *(one bin)*", "auto"
    ]  # fmt: skip
    assert "*(one bin)*: more than N/2" in text
    with_ovr = coverage.render(
        {"config": config, "rows": [*rows, dict(row, variant="ovr", beta="auto")]}
    )
    assert "ovr variant: C = 10 classes" in with_ovr


def test_bench_coref_verdict_prints_the_digits_it_decides_on() -> None:
    """49.6 against the 50x target had printed "50x (not met)"."""
    bench = _load("bench_coref")
    assert bench._against(49.6, 50) == "49.6"
    assert bench._against(49.996, 50) == "49.996"
    assert bench._against(50.4, 50) == "50"
    assert bench._against(120.0, 50) == "120"


@pytest.mark.parametrize(
    "script",
    ["bench_metric.py", "bench_streaming.py", "bench_compare.py", "bench_chain.py",
     "bench_coref.py", "binning_parts.py"],
)  # fmt: skip
@pytest.mark.parametrize("device", ["cuda:99", "gpu"])
def test_a_device_the_machine_lacks_is_refused_in_one_line(
    monkeypatch, capsys, script: str, device: str
) -> None:
    """`bench_metric.py --device cuda` without CUDA had stopped in a page-long ATen error."""
    with pytest.raises(SystemExit) as stop:
        _run(monkeypatch, BENCHMARKS / script, "--device", device)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"{script}: error: argument --device: ")


@pytest.mark.parametrize("folder", ["empty", "missing"])
def test_bench_import_refuses_a_before_folder_without_the_package(
    monkeypatch, capsys, tmp_path, folder: str
) -> None:
    """An empty --before folder had timed the installed package as "(--before)", and a
    missing one stopped in a FileNotFoundError traceback."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as stop:
        _run(monkeypatch, BENCHMARKS / "bench_import.py", "--before", str(tmp_path / folder))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "error: argument --before: " in err.strip().splitlines()[-1]


def test_bench_import_child_stops_where_it_imported_another_package(tmp_path) -> None:
    """Whatever the path holds, the timed child checks that `calib_metrics` came from
    the root it was given (here none: an installed one, or none at all, is found)."""
    bench = _load("bench_import")
    with pytest.raises(SystemExit, match=rf"bench_import: .* in {re.escape(str(tmp_path))}"):
        bench.time_import("import calib_metrics", tmp_path)
    assert bench.time_import("import calib_metrics") > 0


def test_bench_metric_memory_child_runs_at_the_threads_given(monkeypatch) -> None:
    """docs/bench_metric.md's memory column, whose header says --threads 1, had run at
    torch's default: the child was not passed --threads."""
    import subprocess

    bench = _load("bench_metric")
    asked = []

    def run(command, **kwargs):
        asked.append(command)
        return subprocess.CompletedProcess(command, 0, stdout='{"extra": 1, "input": 2}\n')

    monkeypatch.setattr(bench.subprocess, "run", run)
    assert bench.measure_memory("CalibErr (ours)", 1000, "cpu", 10, 100, 3)["extra"] == 1
    command = asked[0]
    assert command[command.index("--threads") + 1] == "3"


def test_bench_read_reads_a_file_of_one_pair(monkeypatch, capsys) -> None:
    """`--sizes 1` had stopped in an IndexError: np.loadtxt reads one row as 1-D."""
    results = _load("bench_read").main(["--sizes", "1", "2", "--repeats", "1"])
    assert set(results) == {1, 2}


def test_bench_streaming_ratios_keep_two_significant_digits() -> None:
    """One decimal had printed 0.05 and 0.14 alike, as "0.1×"."""
    ratio = _load("bench_streaming").ratio
    assert [ratio(x) for x in (0.05, 0.14, 1.0, 1.26, 12.4, 123.4)] == [
        "0.050×", "0.14×", "1.0×", "1.3×", "12×", "123×"
    ]  # fmt: skip


def test_bench_coref_checks_the_python_loop_at_every_size_it_times(monkeypatch) -> None:
    """The loop was checked once (200 mentions), not at the growth table's sizes: its
    timed output is now checked there, and a wrong loop stops the script."""
    import random

    bench = _load("bench_coref")
    args = argparse.Namespace(sizes=[30], sample_counts=[60], repeats=1, peer_repeats=1)
    device = torch.device("cpu")

    def growth():
        gen = torch.Generator().manual_seed(0)
        return bench._growth(args, device, gen, random.Random(0))

    lines, _ = growth()
    assert "the Python loop's, from its last timed run" in "\n".join(lines)
    right = bench.peer_sample_clusters
    # Every mention alone: the NEW choice taken always, the links never.
    monkeypatch.setattr(
        bench,
        "peer_sample_clusters",
        lambda scores, k, rng: [list(range(scores.shape[-1]))] * len(right(scores, k, rng)),
    )
    with pytest.raises(SystemExit, match="Python loop, 30 mentions, 60 samples"):
        growth()


def test_bench_classwise_checks_its_answers_and_the_peer(monkeypatch) -> None:
    """The timed classwise error is checked against its classes' binary errors, and
    torch-uncertainty's ClasswiseCalibrationError against our plug-in on its 15 bins
    (the script had no peer and no check)."""
    bench = _load("bench_classwise")
    peer, status = bench.peer_class()
    if peer is None:
        pytest.skip(f"torch-uncertainty's calibration modules: {status}")
    g = torch.Generator().manual_seed(0)
    probs = (3 * torch.randn(300, 7, generator=g)).softmax(-1)
    target = torch.randint(0, 7, (300,), generator=g)
    timed = bench.calls(peer)
    bench.check(probs, target, timed)
    with pytest.raises(SystemExit, match="mean of the classes' binary errors"):
        bench.check(probs, target, dict(timed, classwise=lambda p, t: 0.5))
    monkeypatch.setattr(bench, "plugin", lambda p, t: 1.01 * timed[bench.PEER](p, t))
    with pytest.raises(SystemExit, match="not the same quantity"):
        bench.check(probs, target, timed)


COVERAGE_REFUSED = [
    ("--rho", "0.99"),  # the grouped truth 0.0054 at k = 0, not 0
    ("--rho", "1"),  # divides by √(1 − ρ) = 0
    ("--rho", "-0.1"),  # math domain error
    ("--target-reps", "-1"),  # torch.cat of no repetitions
    ("--target-reps", "1"),  # a standard error of one repetition
    ("--bin-sizes", "0"),  # ZeroDivisionError
    ("--bin-sizes", "-3"),  # the library's traceback
    ("--bin-sizes", "auto*0"),
    ("--a", "-1"),  # lgamma's math domain error
    ("--alpha", "0"),
    ("--classes", "1"),  # lgamma(0) in the ovr truth, whatever --variants
    ("--reps", "1"),  # had run 2 without a word
    ("--pair-budget", "-5"),  # had been accepted
    ("--from-json", "missing.json"),  # FileNotFoundError traceback
    ("--device", "cuda"),  # exit status 1 through SystemExit(str)
]


@pytest.mark.parametrize(("option", "value"), COVERAGE_REFUSED)
def test_coverage_refuses_what_it_cannot_run_in_one_line(capsys, option, value) -> None:
    """coverage.py's options that had crashed deep in the run, or been silently changed,
    are argparse errors: exit status 2, one line that names the option."""
    coverage = _load("coverage")
    with pytest.raises(SystemExit) as stop:
        coverage.parse([f"{option}={value}"])
    assert stop.value.code == 2
    assert f"error: argument {option}: " in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "argv",
    [
        ["--quick", "--sizes", "100000"],  # every size dropped: empty tables, exit 0
        ["--variants", "ovr", "--classes", "3", "--sizes", "1000"],  # a reshape's traceback
    ],
)
def test_coverage_refuses_settings_that_leave_nothing_to_run(capsys, argv) -> None:
    coverage = _load("coverage")
    with pytest.raises(SystemExit) as stop:
        coverage.parse(argv)
    assert stop.value.code == 2
    assert "error: --" in capsys.readouterr().err.strip().splitlines()[-1]


def test_coverage_from_json_reads_only_saved_runs(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": []}', encoding="utf-8")
    coverage = _load("coverage")
    with pytest.raises(SystemExit) as stop:
        coverage.parse(["--from-json", str(bad)])
    assert stop.value.code == 2
    assert "holds no run's config and rows" in capsys.readouterr().err
    saved = str(BENCHMARKS.parent / "docs" / "coverage" / "iid.json")
    assert coverage.parse(["--from-json", saved]).from_json == [saved]


def test_coverage_stops_when_its_two_true_errors_disagree(monkeypatch, tmp_path, capsys) -> None:
    """The grouped true error is the ungrouped one in theory; where the integration says
    otherwise (ρ near 1 had given 0.0054 at a true 0), the script refuses to run instead of
    scoring every grouped interval against it."""
    coverage = _load("coverage")
    monkeypatch.setattr(coverage, "true_calibration_error", lambda a, b, k: k)
    monkeypatch.setattr(coverage, "grouped_true_error", lambda a, b, k, rho: k + 0.0054)
    monkeypatch.setattr(coverage, "ovr_true_error", lambda alpha, classes, k: k)
    argv = ["--sizes", "--target-reps", "0", "--json", str(tmp_path / "r.json")]
    with pytest.raises(SystemExit) as stop:
        coverage.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "error: the grouped true error is off the ungrouped one by 5.4e-03" in err
    monkeypatch.setattr(coverage, "grouped_true_error", lambda a, b, k, rho: k + 1e-7)
    coverage.main(argv)  # within the tolerance: runs (here nothing but its truths)


def test_coverage_grouped_truth_holds_up_to_the_largest_rho() -> None:
    """At ρ = RHO_MAX the 64-node integral still gives the ungrouped truth at k = 0 (the
    sharpest case) within the tolerance the script stops at."""
    coverage = _load("coverage")
    grouped = coverage.grouped_true_error(0.3, 0.3, 0.0, coverage.RHO_MAX)
    assert abs(grouped) <= coverage.TRUTH_TOLERANCE / 10


def test_coverage_batch_pairs_help_says_it_changes_the_draws(capsys) -> None:
    """`--batch-pairs` changes the results (other draws); its help had said only "pairs
    per rep batch"."""
    coverage = _load("coverage")
    with pytest.raises(SystemExit):
        coverage.parse(["--help"])
    help_text = _squeezed(capsys.readouterr().out)
    assert _squeezed("it changes the draws: a run is reproduced by --seed with") in help_text


def test_bench_read_prints_its_table_without_write(monkeypatch, tmp_path, capsys) -> None:
    """The documented table is printed whether or not `--write` is given (it had been
    printed only by writing docs/bench_read.md)."""
    bench = _load("bench_read")
    monkeypatch.setattr(bench, "DOC", tmp_path / "bench_read.md")
    bench.main(["--sizes", "300", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "# Reading a CSV of (probability, label) rows: time" in out
    assert any(line.startswith("| 300 |") for line in out.splitlines())
    assert not (tmp_path / "bench_read.md").exists()


def test_bench_streaming_small_sizes_time_without_warnings(monkeypatch) -> None:
    """`--n 1e3` makes one bin of 5000: the metric's few-bins warning is expected there and
    had been printed on every timed run."""
    import warnings

    bench = _load("bench_streaming")
    monkeypatch.setattr(bench, "TIMED_PAIRS", 2000)
    args = argparse.Namespace(n=[1000], device="cpu", batch=500, repeats=1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rows = bench.throughput(args)
    assert len(rows) == 6
    assert not [w for w in seen if "only 1 bin" in str(w.message)]
    with warnings.catch_warnings(record=True) as seen:  # outside the timings it still warns
        warnings.simplefilter("always")
        bench.fed(bench.factories(False)[bench.EXACT](), *bench.draw(1000, "cpu"), 500).compute()
    assert [w for w in seen if "only 1 bin" in str(w.message)]


def _small_n_rows() -> dict[str, list[str]]:
    doc = (BENCHMARKS.parent / "docs" / "coverage.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Small N and few groups") :]
    section = section[: section.index("\n## ")]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ")]
    return {f"{r[0].strip()} {r[2].strip()}": [c.strip() for c in r] for r in rows[1:]}


def test_coverage_small_n_table_quotes_its_saved_runs() -> None:
    """docs/coverage.md's hand-written "Small N and few groups" lengths and RMSEs are the
    saved runs' ranges to three decimals (0.062–0.087 had stood for 0.06165–0.08648)."""
    coverage = _load("coverage")
    grid = ("iid", "grouped", "grouped6", "grouped6b", "beta", "target", "cbrt", "ovr")
    runs = {
        "small_n": ["small_n"], "groups12": ["groups12"], "groups20": ["groups20"], "grid": grid
    }  # fmt: skip
    cells = {
        ("iid", 100, "small_n"): "iid 100 pairs", ("iid", 300, "small_n"): "iid 300 pairs",
        ("iid", 1000, "grid"): "iid 1,000 pairs",
        ("grouped", 1000, "grid"): "grouped 50 groups of 20",
        ("grouped", 10_000, "groups12"): "grouped 12 groups of 834",
        ("grouped", 10_000, "groups20"): "grouped 20 groups of 500",
        ("grouped", 10_000, "grid"): "grouped 500 groups of 20",
    }  # fmt: skip
    table = _small_n_rows()
    for (variant, n, run), name in cells.items():
        paths = [str(BENCHMARKS.parent / "docs" / "coverage" / f"{f}.json") for f in runs[run]]
        rows = [
            r
            for r in coverage.merge(paths)["rows"]
            if (r["variant"], r["n"], r["beta"]) == (variant, n, "auto")
        ]
        grouped = variant == "grouped"
        length = [r["len_groups_db_perc" if grouped else "len_pairs_db_norm"] for r in rows]
        rmse = [r["debiased_grouped_rmse" if grouped else "debiased_rmse"] for r in rows]
        assert table[name][4] == f"{min(length):.3f}–{max(length):.3f}", name
        assert table[name][5] == f"{min(rmse):.3f}–{max(rmse):.3f}", name


def test_docs_citations_of_coverage_md_name_one_section() -> None:
    """A citation `docs/coverage.md, "Title"` names one heading: "Grouped data" had matched
    the generated grid table and a separate seed-7 run, whose numbers differ."""
    root = BENCHMARKS.parent
    headings = [
        line.lstrip("#").strip()
        for line in (root / "docs" / "coverage.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    ]
    cited = 0
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = " ".join(doc.read_text(encoding="utf-8").split())
        for title in re.findall(r"coverage\.md`?\)?, \"([^\"]+)\"", text):
            cited += 1
            matches = [h for h in headings if h.startswith(title)]
            assert len(matches) == 1, (doc.name, title, matches)
    assert cited >= 5
