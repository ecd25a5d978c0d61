"""`calib-metrics compare a b --groups`: the group ids come from both files (or either)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from calib_metrics.cli import main
from calib_metrics.functional import compare_calibration
from calib_metrics.predictions import read_table

N, PER_GROUP = 1200, 8


def _write(path: Path, columns: dict[str, list]) -> Path:
    rows = zip(*columns.values())
    path.write_text(",".join(columns) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


@pytest.fixture
def models(tmp_path: Path) -> dict:
    """Two models of the same N items in N / 8 sentences; a is overconfident."""
    g = torch.Generator().manual_seed(3)
    q = torch.rand(N, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long().tolist()
    over = torch.where(q > 0.5, q.sqrt(), q**2).tolist()
    sentence = (torch.arange(N) // PER_GROUP).tolist()
    return {
        "q": q, "over": over, "y": y, "sentence": sentence, "dir": tmp_path,
        "a": _write(tmp_path / "a.csv", {"prob": over, "label": y, "sent": sentence}),
    }  # fmt: skip


def _b(models: dict, name: str, **groups: list) -> Path:
    columns = {"prob": models["q"].tolist(), "label": models["y"], **groups}
    return _write(models["dir"] / name, columns)


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["compare", *map(str, argv), "--samples", "200"])
    out, err = capsys.readouterr()
    return code, out, err


def _paired(models: dict) -> float:
    """The functional comparison resampling whole sentences: the interval's lower end."""
    over = torch.tensor(models["over"], dtype=torch.float64)
    # The reader numbers ids in sorted order of their text ("10" before "2").
    groups = read_table(models["a"], groups="sent").groups
    result = compare_calibration(
        over, models["q"], torch.tensor(models["y"], dtype=torch.float64), groups=groups,
        n_samples=200, generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    return result.lower.item()


def test_both_files_groups_that_agree_are_used(models, capsys) -> None:
    # b names the same sentences differently: what must agree is which rows share one.
    renamed = [f"s{s}" for s in models["sentence"]]
    b = _b(models, "b.csv", sent=renamed)
    code, out, err = _run(capsys, models["a"], b, "--groups", "sent", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["resampled"] == "groups"
    assert summary["lower"] == pytest.approx(_paired(models), rel=1e-12)


def test_groups_that_disagree_name_the_first_differing_row(models, capsys) -> None:
    moved = list(models["sentence"])
    moved[20] = moved[20] + 1  # line 22 moves to the next sentence in b only
    b = _b(models, "b.csv", sent=moved)
    code, out, err = _run(capsys, models["a"], b, "--groups", "sent")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("calib-metrics: error: ") and str(b) in err
    # Both files' ids are named with their file: '2' vs '3' alone read as a contradiction
    # where the ids happened to be equal.
    where = f"(group '2' in {models['a']}, '3' in {b})"
    assert "the groups first differ at line 22 of both files " + where in err
    assert "shares a group with line 18 in " + str(models["a"]) + " only" in err


def test_groups_found_by_name_in_both_files_are_checked(models, capsys) -> None:
    a = _write(models["dir"] / "a2.csv", {"prob": models["over"], "label": models["y"],
                                          "sentence_id": models["sentence"]})  # fmt: skip
    shifted = [(i + 1) // PER_GROUP for i in range(N)]
    b = _b(models, "b.csv", doc_id=shifted)
    code, _, err = _run(capsys, a, b, "--groups")
    assert code == 2 and "the groups first differ at line 9 of both files (group " in err


def test_a_group_column_in_one_file_only_is_used(models, capsys) -> None:
    plain = _write(models["dir"] / "plain.csv", {"prob": models["over"], "label": models["y"]})
    b = _b(models, "b.csv", sent=models["sentence"])
    code, out, err = _run(capsys, plain, b, "--groups", "sent", "--json")
    assert code == 0, err
    assert json.loads(out)["lower"] == pytest.approx(_paired(models), rel=1e-12)
    code, out, err = _run(capsys, models["a"], _b(models, "b2.csv"), "--groups", "sent", "--json")
    assert code == 0, err
    assert json.loads(out)["lower"] == pytest.approx(_paired(models), rel=1e-12)


def test_no_group_column_in_either_file_is_one_line(models, capsys) -> None:
    plain = _write(models["dir"] / "plain.csv", {"prob": models["over"], "label": models["y"]})
    code, _, err = _run(capsys, plain, _b(models, "b.csv"), "--groups", "sent")
    assert code == 2 and "no column 'sent'" in err and err.count("\n") == 1
