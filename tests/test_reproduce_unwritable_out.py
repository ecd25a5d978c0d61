"""An --out that ``reproduce`` cannot write is refused before any work, in one line naming
--out, as evaluate's --plot and --html are (predictions.check_writable_folder).

A probe of 2026-11-30 found an existing read-only --out reported only by the first figure,
after the whole run (``[Errno 1] Operation not permitted: '.../ner_reliability.png'``
after 24 s). /proc stands for a folder that cannot be written: no file can be made
there, even by root. --data names no folder, so a check made after the data are read
shows up as the data's error instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runs import one_line_error

from calib_metrics import predictions

UNWRITABLE = Path("/proc")

COMMANDS = [["ner", "--quick"], ["pos", "--quick"], ["twitter-pos", "--quick"],
            ["coref", "--quick"], ["events", "--quick"], ["sentiment"]]  # fmt: skip


@pytest.mark.parametrize("out", [UNWRITABLE, UNWRITABLE / "calib-metrics-out"])
@pytest.mark.parametrize("argv", COMMANDS)
def test_reproduce_refuses_an_out_it_cannot_write_before_the_data(tmp_path, capsys, argv, out):
    err = one_line_error(capsys, "reproduce", *argv, "--data", tmp_path / "none", "--out", out)
    assert err.startswith(f"calib-metrics: error: --out {out}: cannot be written ("), err


def test_the_writability_probe_leaves_nothing_behind(tmp_path):
    predictions.check_writable_folder(tmp_path, "--out")
    predictions.check_writable_folder(tmp_path / "new" / "deeper", "--out")  # probes tmp_path
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "results.json").write_text("{}")
    predictions.check_writable_folder(tmp_path / "results.json" / "sub", "--out")  # left over
