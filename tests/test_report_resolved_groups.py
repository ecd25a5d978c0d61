"""The page's settings table shows the group column as resolved, not the option as typed.

``compare a b --groups`` (no value: found by name) had shown groups = '' and
``evaluate --interval groups`` groups = '—', though the ``sentence_id`` column was found
and resampled; and nothing on the compare page named the column or the number of groups.
docs/report.md: the settings table holds every option that shaped the numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from test_report import Page, run

N, SIZE = 400, 8  # 50 groups of 8 pairs


def _write(path: Path, probs: torch.Tensor, target: torch.Tensor, column: str | None) -> Path:
    head = "prob,label" + (f",{column}" if column else "")
    rows = [
        f"{q!r},{int(y)}" + (f",s{i // SIZE}" if column else "")
        for i, (q, y) in enumerate(zip(probs.tolist(), target.tolist()))
    ]
    path.write_text(head + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pairs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    q = torch.rand(N, generator=g, dtype=torch.float64) * 0.9 + 0.05
    return q, torch.bernoulli(q, generator=g)


def _page(capsys, tmp_path: Path, *argv) -> tuple[dict, Page, dict[str, str]]:
    out = tmp_path / "page.html"
    code, text, err = run(capsys, *argv, "--samples", "20", "--json", "--html", out)
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    settings = dict(re.findall(r'data-key="setting-(\w+)"><th>[^<]*</th><td>([^<]*)</td>', page))
    return json.loads(text), Page(page), settings


@pytest.mark.parametrize(
    ("options", "shown"),
    [
        (["--interval", "groups"], "sentence_id (found by name): 50 groups"),
        (["--groups", "sentence_id"], "sentence_id: 50 groups"),
        ([], "—"),
    ],
)
def test_evaluate_shows_the_group_column_it_resampled(tmp_path, capsys, pairs, options, shown):
    path = _write(tmp_path / "grouped.csv", *pairs, "sentence_id")
    summary, page, settings = _page(capsys, tmp_path, "evaluate", path, *options)
    assert settings["groups"] == shown
    grouped = bool(options)
    assert summary["group_column"] == ("sentence_id" if grouped else None)
    assert page.value("n") == (f"{N} in 50 groups" if grouped else str(N))


def test_compare_shows_the_group_column_and_the_groups_resampled(tmp_path, capsys, pairs):
    q, y = pairs
    a = _write(tmp_path / "a.csv", q, y, "sentence_id")
    b = _write(tmp_path / "b.csv", q.sqrt(), y, "sentence_id")
    summary, page, settings = _page(capsys, tmp_path, "compare", a, b, "--groups")
    assert settings["groups"] == "sentence_id (found by name): 50 groups"
    assert page.value("n") == f"{N} in 50 groups"
    assert summary["groups"] == 50
    assert summary["a"]["group_column"] == summary["b"]["group_column"] == "sentence_id"
    assert (summary["a"]["group_file"], summary["b"]["group_file"]) == (str(a), str(b))


def test_compare_says_which_file_had_the_column(tmp_path, capsys, pairs):
    q, y = pairs
    a = _write(tmp_path / "a.csv", q, y, "sent")
    b = _write(tmp_path / "b.csv", q.sqrt(), y, None)
    summary, _, settings = _page(capsys, tmp_path, "compare", a, b, "--groups", "sent")
    assert settings["groups"] == f"sent of {a}: 50 groups"
    # b's groups are a's, the ones its Spiegelhalter row's "over 50 groups" counts: its
    # group_column had read null beside them.
    assert summary["b"]["spiegelhalter_groups"] == 50
    for model in "ab":
        assert (summary[model]["group_column"], summary[model]["group_file"]) == ("sent", str(a))
    summary, _, _ = _page(capsys, tmp_path, "compare", b, a, "--groups", "sent")  # b's file first
    assert (summary["a"]["group_column"], summary["a"]["group_file"]) == ("sent", str(a))
    summary, _, settings = _page(capsys, tmp_path, "compare", a, b)
    assert settings["groups"] == "—"
    assert (summary["b"]["group_column"], summary["b"]["group_file"]) == (None, None)


@pytest.mark.parametrize(
    ("options", "probs", "target"),
    [
        ([], "prob (found by name)", "label (found by name)"),
        (["--probs", "prob", "--target", "label"], "prob", "label"),
    ],
)
def test_evaluate_shows_the_columns_it_scored(tmp_path, capsys, pairs, options, probs, target):
    """The probability and label columns found by name had shown as '—' (null in the JSON),
    beside a group column said to be "found by name": the page could not say which column
    was scored."""
    path = _write(tmp_path / "pairs.csv", *pairs, None)
    summary, _, settings = _page(capsys, tmp_path, "evaluate", path, *options)
    assert (settings["probs"], settings["target"]) == (probs, target)
    assert (summary["settings"]["probs"], summary["settings"]["target"]) == (probs, target)


def test_compare_shows_each_models_column(tmp_path, capsys, pairs) -> None:
    q, y = pairs
    one = tmp_path / "one.csv"
    rows = [f"{a!r},{b!r},{int(t)}" for a, b, t in zip(q.tolist(), q.sqrt().tolist(), y.tolist())]
    one.write_text("score,other,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    summary, _, settings = _page(capsys, tmp_path, "compare", one, "--probs-b", "other")
    assert (settings["probs"], settings["probs_b"]) == ("score (found by name)", "other")
    assert settings["target"] == "label (found by name)"
    # Two files naming their columns apart: each file's, found by name.
    a = _write(tmp_path / "a.csv", q, y, None)
    b = tmp_path / "b.csv"
    b.write_text(one.read_text(encoding="utf-8").replace("score,", "q,", 1), encoding="utf-8")
    summary, _, settings = _page(capsys, tmp_path, "compare", a, b)
    assert settings["probs"] == f"prob of {a}, q of {b} (found by name)"
    assert summary["settings"]["probs_b"] is None
