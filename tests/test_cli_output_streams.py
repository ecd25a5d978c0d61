"""Figures and pages go where they are asked to and nowhere else: ``compare --plot``
drew through pyplot (the user's configured backend, which could fail after all the
work), and ``--html /dev/stdout --json`` wrote the page into the stream the JSON was
printed to."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from calib_metrics import cli
from calib_metrics.predictions import save_figure


def _predictions(path: Path) -> Path:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(300, generator=g)
    y = torch.bernoulli(q, generator=g).long()
    b = (q * 0.8 + 0.1).tolist()
    rows = "".join(f"{p!r},{r!r},{t}\n" for p, r, t in zip(q.tolist(), b, y.tolist()))
    path.write_text("prob,prob_b,label\n" + rows)
    return path


def _main(argv: list) -> int:
    try:
        return cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        return int(exit_.code)


@pytest.mark.parametrize("smooth", [False, True], ids=["bins", "smooth"])
def test_compare_plot_never_starts_pyplot(tmp_path, capsys, monkeypatch, smooth) -> None:
    def refuse(*args, **kwargs):
        raise RuntimeError("pyplot was used: the user's backend would start")

    for name in ("subplots", "figure", "gcf", "close"):
        monkeypatch.setattr(plt, name, refuse)
    data, figure = _predictions(tmp_path / "p.csv"), tmp_path / "both.png"
    argv = ["compare", data, "--probs", "prob", "--probs-b", "prob_b", "--samples", "20"]
    argv += ["--plot", figure] + (["--plot-smooth"] if smooth else [])
    assert _main(argv) == 0, capsys.readouterr().err
    assert figure.read_bytes().startswith(b"\x89PNG")


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="no /dev/stdout on this system")
@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_json_and_a_page_on_the_standard_output_are_refused(tmp_path, capfd, command) -> None:
    data = _predictions(tmp_path / "p.csv")
    extra = ["--probs", "prob", "--probs-b", "prob_b"] if command == "compare" else []
    argv = [command, data, *extra, "--samples", "20", "--json", "--html", "/dev/stdout"]
    assert _main(argv) == 2
    out, err = capfd.readouterr()
    assert out == ""  # nothing written before the refusal
    (line,) = err.strip().splitlines()
    assert "--html /dev/stdout is the standard output, where --json prints its JSON" in line
    # Without --json the page may go to the standard output, alone: the text report goes
    # to the standard error then (its lines had come before the page), and a file beside
    # --json works.
    assert _main([command, data, *extra, "--samples", "20", "--html", "/dev/stdout"]) == 0
    out, err = capfd.readouterr()
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert "HTML report: /dev/stdout" in err and "HTML report:" not in out
    page = tmp_path / "page.html"
    assert _main([command, data, *extra, "--samples", "20", "--json", "--html", page]) == 0
    assert json.loads(capfd.readouterr().out)
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_save_figure_takes_a_text_path(tmp_path) -> None:
    figure = Figure()
    figure.add_subplot().plot([0, 1])
    save_figure(figure, str(tmp_path / "line.png"), "--plot")  # had raised AttributeError
    assert (tmp_path / "line.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="no /dev/null, /dev/stdout here")
def test_the_null_device_is_never_the_standard_output_refused(monkeypatch) -> None:
    """``--json --html /dev/null > /dev/null`` had been refused as "the standard output":
    nothing written to the null device can be mixed up with the JSON."""
    import os

    from calib_metrics.predictions import _output

    null = os.stat(os.devnull)
    monkeypatch.setattr(_output.os, "fstat", lambda fd: null)  # stdout is /dev/null
    assert not _output._is_standard_output(Path(os.devnull))


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="no /dev/stdout on this system")
def test_recalibrated_probabilities_alone_on_the_standard_output(tmp_path, capfd) -> None:
    """``recalibrate --out /dev/stdout`` (which the README names as fine): the CSV file
    alone on the standard output, the text report on the standard error. The standard
    output is written through its own stream, so a file it is appended to keeps its
    rows (``>> all.csv`` had been replaced by a new file, and the report left on the
    unlinked one)."""
    data = _predictions(tmp_path / "p.csv")
    argv = ["recalibrate", data, data, "--probs", "prob", "--samples", "20"]
    assert _main([*argv, "--out", "/dev/stdout"]) == 0
    out, err = capfd.readouterr()
    rows = out.splitlines()
    assert rows[0] == "probs,original,target" and len(rows) == 301  # the header, 300 rows
    assert "recalibrated test probabilities: /dev/stdout" in err


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="no /dev/stdout on this system")
def test_an_appended_standard_output_keeps_what_it_held(tmp_path) -> None:
    import os
    import sys

    from calib_metrics.predictions import writing_output

    log = tmp_path / "all.csv"
    log.write_text("first\n")
    saved = os.dup(1)
    with log.open("a") as appended:
        sys.stdout.flush()
        os.dup2(appended.fileno(), 1)
        try:
            with writing_output(Path("/dev/stdout"), "--out") as target:
                target.write_text("second\n")
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    assert log.read_text() == "first\nsecond\n"  # had been "second\n" in a new file


def test_a_standard_output_whose_reader_left_is_a_broken_pipe(monkeypatch) -> None:
    """``recalibrate --out /dev/stdout | head -c 100`` had ended in "--out /dev/stdout:
    cannot be written (Broken pipe)", exit code 2, where the command exits 141."""
    import os
    import sys

    from calib_metrics.predictions import _output, writing_output

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone
    monkeypatch.setattr(_output, "_is_standard_output", lambda path: True)
    saved = os.dup(1)
    sys.stdout.flush()
    os.dup2(write_end, 1)
    try:
        with (
            pytest.raises(BrokenPipeError),
            writing_output(Path("/dev/stdout"), "--out") as target,
        ):
            target.write_text("probs\n" * 100_000)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(write_end)


class _FullDisk:
    """A stdout on a full disk (``>/dev/full``): every write fails with ENOSPC."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        raise OSError("no file")


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
def test_results_that_stdout_cannot_take_name_stdout(tmp_path, capsys, monkeypatch, json_output):
    """``evaluate preds.csv >/dev/full`` had said "[Errno 28] No space left on device",
    which did not say that the results, not an input or a figure, could not be written."""
    import sys

    data = _predictions(tmp_path / "p.csv")
    monkeypatch.setattr(sys, "stdout", _FullDisk())
    code = _main(["evaluate", data, "--samples", "20", *(["--json"] if json_output else [])])
    assert code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("calib-metrics: error: stdout cannot be written (No space left")
    assert isinstance(sys.stdout, _FullDisk)  # given back as it was


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_stdout_exits_2_with_one_line_when_buffered(tmp_path) -> None:
    """With stdout block-buffered (no PYTHONUNBUFFERED), the results left in the buffer
    had failed again when Python flushed it at exit: "Exception ignored", exit code 120."""
    import os
    import subprocess
    import sys

    data = _predictions(tmp_path / "p.csv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    argv = [sys.executable, "-m", "calib_metrics.cli", "evaluate", str(data), "--samples", "20"]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            argv, stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120
        )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("calib-metrics: error: stdout cannot be written (No space left")


@pytest.mark.parametrize("failure", ["full disk", "broken pipe"])
@pytest.mark.parametrize("given", ["argv", "sys.argv"])
def test_a_caller_s_stdout_stays_its_own_after_a_failed_write(
    tmp_path, capsys, monkeypatch, failure, given
):
    """cli.main called from Python (with its arguments, or from sys.argv): a failed write
    had pointed the caller's file descriptor at /dev/null for the rest of the caller's run
    (letting go of stdout is for the command's own process, cli.command)."""
    import os
    import sys

    data = _predictions(tmp_path / "p.csv")
    log = open(tmp_path / "log.txt", "w")  # noqa: SIM115  # the caller's, kept open
    error = OSError(28, "No space left on device") if failure == "full disk" else None

    class FailingWithFile(_FullDisk):
        def write(self, text: str) -> int:
            raise error or BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            if error is None:  # a pipe whose reader left fails every flush too
                raise BrokenPipeError(32, "Broken pipe")

        def fileno(self) -> int:
            return log.fileno()

    monkeypatch.setattr(sys, "stdout", FailingWithFile())
    argv = ["evaluate", str(data), "--samples", "20"]
    if given == "sys.argv":
        monkeypatch.setattr(sys, "argv", ["my_script.py", *argv])
        code = cli.main()
    else:
        code = cli.main(argv)
    assert code == (2 if failure == "full disk" else 141)
    assert os.path.samestat(os.fstat(log.fileno()), os.stat(tmp_path / "log.txt"))
    log.write("after main\n")
    log.close()
    assert (tmp_path / "log.txt").read_text() == "after main\n"
