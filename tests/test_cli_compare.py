"""`calib-metrics compare`: two files or two columns, a paired interval, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from calib_metrics.cli import main


def _write(path: Path, columns: dict[str, list]) -> Path:
    names = list(columns)
    rows = zip(*columns.values())
    path.write_text(",".join(names) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


@pytest.fixture
def predictions(tmp_path: Path) -> dict[str, Path]:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long().tolist()
    over = torch.where(q > 0.5, q.sqrt(), q**2)
    return {
        "a": _write(tmp_path / "a.csv", {"prob": over.tolist(), "label": y}),
        "b": _write(tmp_path / "b.csv", {"prob": q.tolist(), "label": y}),
        "both": _write(tmp_path / "both.csv", {"qa": over.tolist(), "qb": q.tolist(), "y": y}),
        "other": _write(tmp_path / "other.csv", {"prob": q.tolist(), "label": y[::-1]}),
    }


def test_two_files_and_two_columns_give_the_same_paired_result(predictions, capsys) -> None:
    assert main(["compare", str(predictions["a"]), str(predictions["b"]), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)
    argv = ["compare", str(predictions["both"]), "--probs", "qa", "--probs-b", "qb"]
    assert main([*argv, "--target", "y", "--json"]) == 0
    columns = json.loads(capsys.readouterr().out)
    assert files["difference"] == pytest.approx(columns["difference"])
    assert files["lower"] > 0 and files["p_value"] < 0.01
    assert files["difference"] == pytest.approx(files["a"]["calib_err"] - files["b"]["calib_err"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["other"], "same items"), ([], "--probs-b"), (["b", "--samples", "1"], "--samples")],
)
def test_bad_input_is_one_line_and_exit_2(predictions, capsys, extra, message) -> None:
    argv = ["compare", str(predictions["a"])]
    argv += [str(predictions[e]) if e in predictions else e for e in extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
