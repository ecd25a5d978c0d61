"""Outputs that fail late: a figure format whose external program is missing is refused
before any work, and an output that fails while it is written (a full disk, a LaTeX that
halts) is one line naming the option and the path, as the checks before the work say
(``--plot /sys/x.png: cannot be written (...)``). ``--plot x.pgf`` without a LaTeX had
ended in savefig's traceback (exit 1) after all the computing, and a full disk in
``[Errno 28] No space left on device`` naming no output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_runs import one_line_error

Q = [0.1, 0.35, 0.35, 0.6, 0.8, 0.95, 0.2, 0.7, 0.45, 0.15, 0.85, 0.55]
Y = [0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0]


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.csv"
    path.write_text("prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(Q, Y, strict=True)))
    return path


def _argv(command: str, good: Path, tmp_path: Path, option: str, path: Path) -> list:
    """``command`` on ``good`` (twice: compare's and recalibrate's two files) writing
    ``path`` as ``option``; recalibrate's own --out goes to the scratch folder."""
    files = [good] if command == "evaluate" else [good, good]
    out = ["--out", tmp_path / "o.csv"] if command == "recalibrate" and option != "--out" else []
    return [command, *files, "--samples", "20", *out, option, path]


@pytest.fixture
def no_latex(tmp_path: Path, monkeypatch) -> None:
    """A PATH with no LaTeX on it (whatever this machine has installed)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.parametrize("command", ["evaluate", "compare", "recalibrate"])
def test_a_pgf_figure_without_its_latex_is_refused_before_any_work(
    tmp_path: Path, good: Path, capsys, no_latex, command: str
) -> None:
    import matplotlib

    plot = tmp_path / "diagram.pgf"
    line = one_line_error(capsys, *_argv(command, good, tmp_path, "--plot", plot))
    tex = matplotlib.rcParams["pgf.texsystem"]
    assert line == (
        f"calib-metrics: error: --plot {plot}: matplotlib writes '.pgf' figures with {tex} "
        "(rcParams['pgf.texsystem']), which is not installed; use .png, .pdf or .svg"
    )
    assert not plot.exists() and not (tmp_path / "o.csv").exists()  # refused before the work


@pytest.fixture
def halting_latex(tmp_path: Path, monkeypatch) -> None:
    """A LaTeX on PATH that halts at once, as one missing a package does: the check
    before the work finds it, and savefig fails when it runs it."""
    import matplotlib

    folder = tmp_path / "bin"
    folder.mkdir()
    tex = folder / matplotlib.rcParams["pgf.texsystem"]
    tex.write_text("#!/bin/sh\nexit 1\n")
    tex.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the LaTeX")
@pytest.mark.parametrize("command", ["evaluate", "compare", "recalibrate"])
def test_a_figure_that_fails_in_savefig_is_one_line_naming_the_option(
    tmp_path: Path, good: Path, capsys, halting_latex, command: str
) -> None:
    plot = tmp_path / "diagram.pgf"
    line = one_line_error(capsys, *_argv(command, good, tmp_path, "--plot", plot))
    assert line.startswith(f"calib-metrics: error: --plot {plot}: cannot be written ("), line
    assert not plot.exists()  # nothing half written left behind


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a full disk)")
@pytest.mark.parametrize(
    "command,option,name",
    [
        ("evaluate", "--plot", "full.png"),
        ("evaluate", "--html", "full.html"),
        ("compare", "--plot", "full.png"),
        ("compare", "--html", "full.html"),
        ("recalibrate", "--plot", "full.png"),
        ("recalibrate", "--out", "full.csv"),
    ],
)
def test_an_output_on_a_full_disk_names_the_option_and_path(
    tmp_path: Path, good: Path, capsys, command: str, option: str, name: str
) -> None:
    path = tmp_path / name
    path.symlink_to("/dev/full")  # every write to it fails: no space left on device
    line = one_line_error(capsys, *_argv(command, good, tmp_path, option, path))
    assert line == (
        f"calib-metrics: error: {option} {path}: cannot be written (No space left on device)"
    )
