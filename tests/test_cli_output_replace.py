"""Outputs written whole or not at all: an overwrite that fails part-way (a disk that
fills) had left the user's previous file truncated to a fragment of the new one; a
dangling symlink as the output had been unlinked by the check before the work; a drawing
bug inside savefig had become "cannot be written" with its type lost; usetex without a
LaTeX had ended --html in a traceback after the work; an error reading recalibrate's test
file had been named as --out's; demo's outputs on a full disk had named no file."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_runs import one_line_error, run_cli

from calib_metrics.predictions import save_figure, writing_output

Q = [0.1, 0.35, 0.35, 0.6, 0.8, 0.95, 0.2, 0.7, 0.45, 0.15, 0.85, 0.55]
Y = [0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0]
PREVIOUS = "PREVIOUS RESULT " * 5000


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.csv"
    path.write_text("prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(Q, Y, strict=True)))
    return path


class _FailsPartWay:
    """A figure whose savefig writes a fragment, then fails as a full disk does."""

    def savefig(self, out, **_) -> None:
        out.write(b"NEW FRAGMENT")
        raise OSError(27, "File too large")


def test_a_failed_overwrite_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "existing.png"
    path.write_text(PREVIOUS)
    with pytest.raises(ValueError, match=r"--plot .*existing.png: cannot be written \(File too"):
        save_figure(_FailsPartWay(), path, "--plot")
    assert path.read_text() == PREVIOUS
    assert os.listdir(tmp_path) == ["existing.png"]  # nothing left beside it


def test_an_overwrite_that_fails_part_way_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "existing.csv"
    path.write_text(PREVIOUS)
    with pytest.raises(ValueError, match="cannot be written"), writing_output(path, "--out") as t:
        t.write_text("NEW FRAGMENT")
        raise OSError(27, "File too large")
    assert path.read_text() == PREVIOUS
    assert os.listdir(tmp_path) == ["existing.csv"]


def test_a_failed_new_file_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "new.csv"
    with pytest.raises(ValueError, match="cannot be written"), writing_output(path, "--out") as t:
        t.write_text("part")
        raise OSError(28, "No space left on device")
    assert os.listdir(tmp_path) == []


def test_an_overwrite_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "shared.csv"
    path.write_text(PREVIOUS)
    path.chmod(0o640)
    with writing_output(path, "--out") as target:
        target.write_text("new")
    assert path.read_text() == "new" and (path.stat().st_mode & 0o777) == 0o640


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_an_output_through_a_dangling_symlink_writes_its_target(
    tmp_path: Path, good: Path, capsys
) -> None:
    (tmp_path / "runs").mkdir()
    link = tmp_path / "latest.html"
    link.symlink_to("runs/today.html")
    code, _, err = run_cli(capsys, "evaluate", good, "--samples", "20", "--html", link)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == "runs/today.html"
    assert (tmp_path / "runs" / "today.html").read_text().startswith("<!DOCTYPE html>")


def test_a_drawing_bug_in_savefig_stays_a_traceback(tmp_path: Path) -> None:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure

    class Buggy(Artist):
        def draw(self, renderer):
            return None.missing  # type: ignore[attr-defined]

    fig = Figure()
    fig.add_artist(Buggy())
    with pytest.raises(AttributeError, match="missing"):
        save_figure(fig, tmp_path / "x.png", "--plot", dpi=50)
    assert os.listdir(tmp_path) == []


class _LatexMissing:
    """savefig failing as matplotlib's texmanager does when latex is not on PATH."""

    def savefig(self, path: Path, **_) -> None:
        try:
            subprocess.check_output(["/no/such/latex"])
        except FileNotFoundError as err:
            raise RuntimeError("Failed to process string with tex") from err


def test_a_program_failing_in_savefig_names_its_type_and_keeps_the_chain(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as caught:
        save_figure(_LatexMissing(), tmp_path / "x.png", "--plot")
    assert str(caught.value) == (
        f"--plot {tmp_path / 'x.png'}: cannot be written "
        "(RuntimeError: Failed to process string with tex)"
    )
    chain, err = [], caught.value
    while err is not None:
        chain.append(type(err))
        err = err.__cause__
    assert chain[-2:] == [RuntimeError, FileNotFoundError], chain


@pytest.fixture
def usetex_without_latex(tmp_path: Path, monkeypatch) -> None:
    import matplotlib

    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setitem(matplotlib.rcParams, "text.usetex", True)


@pytest.mark.parametrize("option,name", [("--html", "r.html"), ("--plot", "r.png")])
def test_usetex_without_latex_is_refused_before_any_work(
    tmp_path: Path, good: Path, capsys, usetex_without_latex, option: str, name: str
) -> None:
    path = tmp_path / name
    line = one_line_error(capsys, "evaluate", good, "--samples", "20", option, path)
    assert line.startswith(f"calib-metrics: error: {option} {path}: figures set their text "), line
    assert "rcParams['text.usetex'] is on" in line and "not installed" in line
    assert not path.exists()


def test_the_pages_figures_failing_in_savefig_are_an_os_error(usetex_without_latex) -> None:
    """The page's own savefig (into a buffer): named by the page's writer as --html's."""
    from matplotlib.figure import Figure

    from calib_metrics.report import figure_svg

    fig = Figure()
    fig.add_subplot().set_title("q")
    with pytest.raises(OSError, match=r"^RuntimeError: "):
        figure_svg(fig, "x")


def test_a_failure_reading_the_test_file_is_not_named_as_out(
    tmp_path: Path, good: Path, capsys, monkeypatch
) -> None:
    from calib_metrics import cli_recalibrate

    def unreadable(*_):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(cli_recalibrate, "_group_ids", unreadable)
    out = tmp_path / "o.csv"
    code, _, err = run_cli(capsys, "recalibrate", good, good, "--samples", "20", "--out", out)
    assert code != 0 and "Input/output error" in err and "--out" not in err, err
    assert not out.exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a full disk)")
def test_demo_outputs_on_a_full_disk_name_the_file(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from calib_metrics.paper import demo, report

    path = tmp_path / "reliability.png"
    path.symlink_to("/dev/full")
    with pytest.raises(ValueError, match=f"^--out {path}: cannot be written \\(No space"):
        demo._save(Figure(), path)
    results = tmp_path / "results.json"
    results.symlink_to("/dev/full")
    with pytest.raises(ValueError, match=f"^--out {results}: cannot be written \\(No space"):
        report.write_json(results, {"n": 1})


def test_a_figure_is_drawn_before_its_file_is_made(tmp_path: Path) -> None:
    """A run stopped while a figure is drawn (a SIGTERM skips every finally) had left the
    empty file being written beside the target."""

    class Checks:
        def savefig(self, out, **_) -> None:
            assert os.listdir(tmp_path) == [], "a file was made before the drawing"
            out.write(b"png")

    save_figure(Checks(), tmp_path / "x.png", "--plot")
    assert os.listdir(tmp_path) == ["x.png"]


def test_the_page_is_drawn_before_its_file_is_made(
    tmp_path: Path, good: Path, capsys, monkeypatch
) -> None:
    from calib_metrics import report

    out = tmp_path / "out"
    out.mkdir()

    def page(*_, **__) -> str:
        assert os.listdir(out) == [], "a file was made before the page was drawn"
        return "<!DOCTYPE html>"

    monkeypatch.setattr(report, "evaluate_page", page)
    code, _, err = run_cli(capsys, "evaluate", good, "--samples", "20", "--html", out / "r.html")
    assert code == 0, err
    assert os.listdir(out) == ["r.html"]


def test_a_file_being_written_is_not_seen_by_a_glob_of_its_suffix(tmp_path: Path) -> None:
    with writing_output(tmp_path / "x.png", "--plot") as target:
        target.write_bytes(b"half")
        assert list(tmp_path.glob("*.png")) == []
    assert [p.name for p in tmp_path.glob("*.png")] == ["x.png"]


_STOPPED_WHILE_DRAWING = """
import sys, time
from pathlib import Path
from calib_metrics import cli, report

def page(*_, **__):
    Path(sys.argv[1]).write_text("drawing")
    time.sleep(120)

report.evaluate_page = page
sys.exit(cli.main(["evaluate", sys.argv[2], "--samples", "20", "--html", sys.argv[3]]))
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGTERM")
def test_a_run_stopped_while_the_page_is_drawn_leaves_nothing(tmp_path: Path, good: Path) -> None:
    import signal
    import sys
    import time

    out, marker = tmp_path / "out", tmp_path / "drawing"
    out.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-c", _STOPPED_WHILE_DRAWING, marker, good, out / "r.html"]
    run = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), run.stderr.read().decode() if run.poll() is not None else "late"
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == -signal.SIGTERM
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=60)
        run.stderr.close()
    assert os.listdir(out) == []


def _fails_on(monkeypatch, method: str) -> None:
    """Make ``Path.<method>`` (the page's write_text, a figure's write_bytes) fail as a
    file over its size limit does (``ulimit -f``)."""

    def too_large(*_, **__):
        raise OSError(27, "File too large")

    monkeypatch.setattr(Path, method, too_large)


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_a_page_that_fails_to_be_written_keeps_the_old_figure_too(
    tmp_path: Path, good: Path, capsys, monkeypatch, command
) -> None:
    """The new figure had been moved over the old one before the page failed: exit 2 with
    the new figure beside the old page."""
    plot, page = tmp_path / "r.png", tmp_path / "r.html"
    plot.write_text("OLD FIGURE")
    page.write_text("OLD PAGE")
    _fails_on(monkeypatch, "write_text")
    models = [good, good] if command == "compare" else [good]
    argv = [command, *models, "--samples", "20", "--plot", plot, "--html", page]
    assert "--html" in one_line_error(capsys, *argv)
    assert (plot.read_text(), page.read_text()) == ("OLD FIGURE", "OLD PAGE")
    assert sorted(os.listdir(tmp_path)) == ["good.csv", "r.html", "r.png"]


def test_a_figure_that_fails_to_be_written_keeps_the_old_recalibrated_file(
    tmp_path: Path, good: Path, capsys, monkeypatch
) -> None:
    out, plot = tmp_path / "o.csv", tmp_path / "o.png"
    out.write_text("OLD OUT")
    plot.write_text("OLD FIGURE")
    _fails_on(monkeypatch, "write_bytes")
    argv = ["recalibrate", good, good, "--samples", "20", "--out", out, "--plot", plot]
    assert "--plot" in one_line_error(capsys, *argv)
    assert (out.read_text(), plot.read_text()) == ("OLD OUT", "OLD FIGURE")
    assert sorted(os.listdir(tmp_path)) == ["good.csv", "o.csv", "o.png"]


def test_outputs_written_together_replace_theirs_once_all_are_written(tmp_path: Path) -> None:
    from calib_metrics.predictions import all_or_none

    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    with all_or_none():
        for path in (first, second):
            with writing_output(path, "--out") as target:
                target.write_text(path.name)
        assert not first.exists() and not second.exists()
    assert (first.read_text(), second.read_text()) == ("a.csv", "b.csv")
    assert sorted(os.listdir(tmp_path)) == ["a.csv", "b.csv"]
