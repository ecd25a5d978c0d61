"""Ctrl-C gives one line and exit code 130 in every phase: in the first second, while
the parser was built (it imports torch), it had printed a 38-line KeyboardInterrupt
traceback and the process died of the signal."""

from __future__ import annotations

import pytest

from calib_metrics import cli


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("phase", ["build_parser", "_parse", "_run_command_body"])
def test_ctrl_c_is_one_line_and_exit_130_in_every_phase(monkeypatch, capsys, phase) -> None:
    if phase == "_run_command_body":
        monkeypatch.setattr(cli, "evaluate", _interrupt)
    else:
        monkeypatch.setattr(cli, phase, _interrupt)
    assert cli.main(["evaluate", "never-read.csv"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "calib-metrics: interrupted\n" and captured.out == ""
