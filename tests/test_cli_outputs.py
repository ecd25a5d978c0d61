"""An output path (``--out``, ``--plot``, ``--html``) that names one of the command's own
input files is refused before any work: once, ``recalibrate dev.csv test.csv --out
dev.csv`` (or ``evaluate preds.csv --html preds.csv``) overwrote the input it had read."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from calib_metrics import cli


def _write(path: Path, seed: int, extra: str = "") -> Path:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(200, generator=g)
    y = torch.bernoulli(q, generator=g).long()
    rows = "".join(f"{a!r},{b}\n" for a, b in zip(q.tolist(), y.tolist()))
    path.write_text("prob,label\n" + rows)
    return path


def _refused(capsys, argv: list, victim: Path) -> str:
    before = victim.read_bytes()
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert victim.read_bytes() == before  # the input is untouched
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_recalibrate_refuses_to_write_over_its_dev_or_test_file(tmp_path, capsys) -> None:
    dev, test = _write(tmp_path / "dev.csv", 0), _write(tmp_path / "test.csv", 1)
    line = _refused(capsys, ["recalibrate", dev, test, "--out", dev], dev)
    assert "--out" in line and "input" in line and "dev.csv" in line
    _refused(capsys, ["recalibrate", dev, test, "--out", test], test)
    # the same file by another spelling of its path
    other = tmp_path / "sub" / ".." / "test.csv"
    (tmp_path / "sub").mkdir()
    _refused(capsys, ["recalibrate", dev, test, "--out", other], test)
    _refused(capsys, ["recalibrate", dev, test, "--plot", dev], dev)


def test_evaluate_and_compare_refuse_to_write_over_their_inputs(tmp_path, capsys) -> None:
    a, b = _write(tmp_path / "a.csv", 2), _write(tmp_path / "b.csv", 3)
    line = _refused(capsys, ["evaluate", a, "--html", a], a)
    assert "--html" in line and "input" in line
    _refused(capsys, ["evaluate", a, "--plot", a], a)
    _refused(capsys, ["compare", a, b, "--html", b], b)
    _refused(capsys, ["compare", a, b, "--plot", a], a)


def test_outputs_beside_the_inputs_are_still_written(tmp_path, capsys) -> None:
    dev, test = _write(tmp_path / "dev.csv", 4), _write(tmp_path / "test.csv", 5)
    assert cli.main(["recalibrate", str(dev), str(test)]) == 0
    assert (tmp_path / "test.recalibrated.csv").exists()
    capsys.readouterr()


@pytest.mark.parametrize("option", ["--plot", "--html"])
def test_a_new_output_file_is_fine(tmp_path, capsys, option) -> None:
    a = _write(tmp_path / "a.csv", 6)
    suffix = ".png" if option == "--plot" else ".html"
    assert cli.main(["evaluate", str(a), option, str(tmp_path / f"out{suffix}")]) == 0
    capsys.readouterr()
