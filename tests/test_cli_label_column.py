"""The --label column: an empty cell is an error naming its row (it became a label named
''), and ``compare`` checks b's column against a's when both files have one (it read a's
only, so two files labelling the items differently were compared silently)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from calib_metrics.cli import main


def _write(path: Path, tags: list[str], shift: float = 0.0) -> Path:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(len(tags), generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    rows = [f"{qi:.4f},{min(1.0, qi + shift):.4f},{yi},{t}" for qi, yi, t in zip(q, y, tags)]
    path.write_text("prob,prob_b,label,tag\n" + "\n".join(rows) + "\n")
    return path


def _run(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


TAGS = ["A", "B"] * 100


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_an_empty_label_cell_is_named(tmp_path, capsys, command):
    tags = list(TAGS)
    tags[5] = ""
    path = _write(tmp_path / "a.csv", tags)
    extra = ["--probs-b", "prob_b"] if command == "compare" else []
    code, _, err = _run(capsys, command, path, *extra, "--label", "tag", "--samples", "20")
    assert code == 2 and "Traceback" not in err
    assert "line 7 has no value in --label 'tag'" in err
    assert len(err.strip().splitlines()) == 1


def test_compare_refuses_files_whose_labels_differ(tmp_path, capsys):
    a = _write(tmp_path / "a.csv", TAGS)
    tags = list(TAGS)
    tags[7] = "C"
    b = _write(tmp_path / "b.csv", tags, shift=0.05)
    code, _, err = _run(capsys, "compare", a, b, "--label", "tag", "--samples", "20")
    assert code == 2 and "first differs at line 9 of both files: 'B' vs 'C'" in err


def test_compare_reads_the_label_column_from_whichever_file_has_it(tmp_path, capsys):
    a = _write(tmp_path / "a.csv", TAGS)
    b = tmp_path / "b.csv"
    b.write_text("\n".join(",".join(line.split(",")[:3]) for line in a.read_text().splitlines()))
    for first, second in [(a, b), (b, a)]:
        code, out, err = _run(capsys, "compare", first, second, "--label", "tag", "--samples", "20")
        assert code == 0, err
        assert "not distinguishable on 2 of 2 labels" in out
