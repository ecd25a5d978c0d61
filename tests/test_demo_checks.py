"""``calib-metrics demo``: --help with its defaults, an --out it cannot write refused before
the run, the few-bins warning evaluate gives, and its progress bar cleared before an error.

A probe of 2026-11-30 found ``demo --help`` without --out's and --seed's defaults or what
--seed seeds, a read-only --out reported only by the first figure, ``--bin-size 100000``
scoring each setting in one bin without the warning evaluate and sentiment give, and
the progress bar's text left on the error's line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cli_runs
import pytest

from calib_metrics.paper import demo

# A folder that cannot be written: no file can be made there, even by root.
UNWRITABLE = Path("/proc")


def _help(capsys, *argv) -> str:
    """The command's --help, its lines joined (argparse wraps them at the terminal width)."""
    code, out, _ = cli_runs.run_cli(capsys, *argv, "--help")
    assert code == 0
    return " ".join(out.split())


def test_demo_help_shows_and_explains_its_defaults(capsys):
    text = _help(capsys, "demo")
    assert "--out OUT output folder (default: out/demo)" in text
    assert "--seed SEED seed of the synthetic pairs and the interval draws (default: 0)" in text
    assert "--n N pairs per setting (default: 1000000; --quick: 20000)" in text


class Reached(Exception):
    """Raised where the demo's study would start."""


def _demo_args(*argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    return parser.parse_args([str(a) for a in argv])


def _never(*args, **kwargs):
    raise Reached


def test_demo_warns_of_a_bin_size_that_makes_too_few_bins(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "_settings", _never)
    args = _demo_args("--quick", "--bin-size", "100000", "--out", tmp_path)
    warned = "--bin-size 100000 makes 1 bin of the 20000 pairs of each setting; with fewer than"
    with pytest.warns(UserWarning, match=warned), pytest.raises(Reached):
        demo.run(args)


def test_demo_refuses_an_out_it_cannot_write_before_the_run(capsys, monkeypatch):
    monkeypatch.setattr(demo, "_settings", _never)
    err = cli_runs.one_line_error(capsys, "demo", "--quick", "--out", UNWRITABLE)
    assert err.startswith(f"calib-metrics: error: --out {UNWRITABLE}: cannot be written ("), err


def test_demo_clears_its_progress_bar_before_an_error(tmp_path, capsys, monkeypatch):
    class Bar:
        closed = False

        def __init__(self, **_) -> None:
            pass

        def update(self, n: int = 1) -> None:
            pass

        def close(self) -> None:
            Bar.closed = True

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(demo, "_progress", Bar)
    monkeypatch.setattr(demo, "_settings", fail)
    line = cli_runs.one_line_error(capsys, "demo", "--quick", "--out", tmp_path)
    assert line == "calib-metrics: error: disk full" and Bar.closed


def test_demo_prints_its_few_bins_warning_before_the_run_not_after(tmp_path, monkeypatch):
    # The CLI had held every warning until the command was done: the few-bins line came
    # after the minutes of the run and its "wrote ..." line. The study's steps are
    # stand-ins here (a --quick run takes 40 s); stdout and stderr share one stream, in
    # the order the lines were written.
    import io
    import sys

    from calib_metrics import cli

    monkeypatch.setattr(demo, "_settings", lambda *a: ([], [], "reliability.png"))
    monkeypatch.setattr(demo, "_bin_size_curve", lambda *a: ({}, "by_bin_size.png"))
    monkeypatch.setattr(demo, "_sample_size_curve", lambda *a: ({}, "by_sample_size.png"))
    monkeypatch.setattr(demo.estimators, "study", lambda **kw: {})
    monkeypatch.setattr(demo.estimators, "render", lambda results: "")
    both = io.StringIO()
    monkeypatch.setattr(sys, "stdout", both)
    monkeypatch.setattr(sys, "stderr", both)
    code = cli.main(["demo", "--quick", "--bin-size", "100000", "--out", str(tmp_path)])
    lines = both.getvalue().splitlines()
    warned = [i for i, line in enumerate(lines) if line.startswith("calib-metrics: warning:")]
    wrote = [i for i, line in enumerate(lines) if line.startswith("wrote ")]
    assert code == 0 and len(warned) == 1 and len(wrote) == 1, lines
    assert "--bin-size 100000 makes 1 bin" in lines[warned[0]]
    assert warned[0] < wrote[0], lines


def test_demo_refuses_usetex_without_latex_before_the_run(tmp_path, capsys, monkeypatch):
    """Its figures' LaTeX had been looked for by their savefig, after the whole run."""
    import matplotlib

    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setitem(matplotlib.rcParams, "text.usetex", True)
    monkeypatch.setattr(demo, "_settings", _never)
    out = tmp_path / "demo"
    err = cli_runs.one_line_error(capsys, "demo", "--quick", "--out", out)
    figure = out / "reliability.png"
    assert err.startswith(f"calib-metrics: error: --out {figure}: figures set "), err
    assert "rcParams['text.usetex'] is on" in err


@pytest.mark.parametrize("experiment", ["sentiment", "pos", "coref", "events"])
def test_reproduce_refuses_usetex_without_latex_before_the_run(
    experiment, tmp_path, capsys, monkeypatch
):
    """Only demo had looked up front; a reproduction ran for minutes, then failed in its
    first savefig (found by review)."""
    import matplotlib

    from calib_metrics import cli

    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setitem(matplotlib.rcParams, "text.usetex", True)
    monkeypatch.setattr(cli._experiment(experiment), "run", _never)
    out = tmp_path / experiment
    err = cli_runs.one_line_error(capsys, "reproduce", experiment, "--out", out)
    assert err.startswith(f"calib-metrics: error: --out {out / 'figure.png'}: figures set "), err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a full disk)")
def test_reproduces_figures_on_a_full_disk_name_the_file(tmp_path):
    import torch

    from calib_metrics.functional import calibration_error_ci
    from calib_metrics.paper.thesis_figures import Curve, thesis_figure

    p = torch.rand(200, generator=torch.Generator().manual_seed(1))
    r = calibration_error_ci(p, (p > 0.5).float(), bin_size=40, n_samples=20)
    path = tmp_path / "f.png"
    path.symlink_to("/dev/full")
    with pytest.raises(ValueError, match=f"^--out {path}: cannot be written \\(No space"):
        thesis_figure([("q", [Curve("m", "m", r)])], path, suptitle="t")
