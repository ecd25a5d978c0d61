"""A file (an array, or JSON rows) whose target is one-hot ``[N, C]`` beside probability rows
that sum to 1.

The reader had flattened it into N·C independent binary labels without a word:
``compare`` printed "N = 1500 items" for 500 and resampled pair by pair, and
``evaluate --spiegelhalter`` took an item's C labels as independent (p = 4.5e-07 where
the same rows with class ids give 8.7e-04). It is read as the items' class ids now,
said in a warning line (arrays and JSON rows alike); genuine multi-label rows are read as
before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_runs import one_line_error, run_cli

N, C = 500, 3
SAID = (
    "column 'target' holds one-hot rows beside probability rows that sum to 1: read as the "
    f"class ids of {N} items (its argmax), not as {N * C} independent binary labels "
    "(multi-label)"
)


def _files(folder: Path, suffix: str) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(C), N)
    ids = (rng.random((N, 1)) > p.cumsum(1)).sum(1)
    sharp = p**1.5 / (p**1.5).sum(1, keepdims=True)
    files = {}
    for name, probs in (("a", sharp), ("b", p)):
        for kind, target in (("ids", ids), ("one_hot", np.eye(C)[ids])):
            path = folder / f"{name}_{kind}{suffix}"
            _save(path, probs, target)
            files[f"{name}_{kind}"] = path
    return files


def _save(path: Path, probs: np.ndarray, target: np.ndarray) -> None:
    """The two columns in ``path``'s format: JSON lines and a JSON list of records hold
    a row's C probabilities, and its class id or one-hot row, per line or record."""
    if path.suffix == ".npz":
        np.savez(path, probs=probs, target=target)
    elif path.suffix == ".pt":
        torch.save({"probs": torch.tensor(probs), "target": torch.tensor(target)}, path)
    else:
        rows = [{"probs": p, "target": t} for p, t in zip(probs.tolist(), target.tolist())]
        if path.suffix == ".jsonl":
            path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        else:
            path.write_text(json.dumps(rows))


@pytest.mark.parametrize("suffix", [".npz", ".pt", ".json", ".jsonl"])
@pytest.mark.parametrize("command", [["compare", "a", "b"], ["evaluate", "a", "--spiegelhalter"]])
def test_one_hot_targets_are_read_as_class_ids(tmp_path, capsys, suffix, command) -> None:
    files = _files(tmp_path, suffix)

    def run(kind: str) -> tuple[int, str, str]:
        argv = [files[f"{a}_{kind}"] if a in ("a", "b") else a for a in command]
        return run_cli(capsys, *argv, "--samples", "200")

    code, out, err = run("one_hot")
    assert (code, out.replace(f"_one_hot{suffix}", f"_ids{suffix}")) == run("ids")[:2]
    warned = [line for line in err.splitlines() if line.startswith("calib-metrics: warning:")]
    # evaluate's interval draws 3 classes' pairs apart, and says so (compare draws items).
    apart = [line for line in warned if "3 classes read one-vs-rest" in line]
    assert len(apart) == (command[0] == "evaluate")
    warned = [line for line in warned if line not in apart]
    files_read = 2 if command[0] == "compare" else 1
    assert warned == [
        f"calib-metrics: warning: {files[f'{m}_one_hot']}: {SAID}" for m in "ab"[:files_read]
    ]
    assert f"N = {N} items" in out or command[0] == "evaluate"


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_multi_label_rows_are_read_as_binary_labels(tmp_path, capsys, suffix) -> None:
    """Rows of no 1 or of several, or probability rows that do not sum to 1, are
    multi-label data: read as before, one binary label a cell, and not warned of."""
    rng = np.random.default_rng(1)
    path = tmp_path / f"multi{suffix}"
    probs = rng.random((N, C))
    _save(path, probs, (rng.random((N, C)) < probs).astype(int))
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "200")
    assert code == 0 and "one-hot" not in err
    assert f"N = {N * C}" in out


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_recalibrate_refuses_one_hot_rows_saying_they_are_read_as_class_ids(
    tmp_path, capsys, suffix
) -> None:
    """A failed command prints its error line alone, not the reader's warning: "3
    probabilities per label" had not said why a file of one 0/1 label per probability
    was multiclass."""
    files = _files(tmp_path, suffix)
    line = one_line_error(capsys, "recalibrate", files["a_one_hot"], files["b_ids"])
    assert line.startswith(f"calib-metrics: error: {files['a_one_hot']}: 3 probabilities")
    assert "beside one-hot rows, which are read as class ids" in line
