"""Where there is no interval (fewer than 10 pairs or groups to resample), the page says
so in words: it had printed ``[nan, nan]`` (``[+nan, +nan]`` for a difference) and an
interval kind that claimed the draws were made."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import cli_runs as _runs
import pytest
import torch


def _write(path: Path, n: int) -> Path:
    """prob, label, tag (two tags), group (one per pair), q_b: n rows."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(n, generator=g, dtype=torch.float64) * 0.9 + 0.05
    y = torch.bernoulli(q, generator=g).long()
    rows = [
        f"{a:.6f},{b},{'AB'[i % 2]},{i},{a * 0.8:.6f}"
        for i, (a, b) in enumerate(zip(q.tolist(), y.tolist()))
    ]
    path.write_text("prob,label,tag,group,q_b\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _row(page: str, key: str) -> str:
    start = page.index(f'<tr data-key="{key}">')
    return page[page.index("<td>", start) + 4 : page.index("</td>", start)]


def _page(tmp_path, capsys, *argv) -> str:
    out = tmp_path / "r.html"
    code, _, err = _runs.run_cli(capsys, *argv, "--samples", "30", "--html", out)
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    assert "nan," not in page and "nan]" not in page  # tables and figures alike
    return page


def test_evaluate_of_eight_pairs_says_there_is_no_interval(tmp_path, capsys) -> None:
    path = _write(tmp_path / "eight.csv", 8)
    page = _page(tmp_path, capsys, "evaluate", path, "--probs", "prob", "--label", "tag")
    assert _row(page, "interval") == "no interval (fewer than 10 resampled pairs)"
    assert _row(page, "interval_kind").endswith("none drawn (fewer than 10 pairs)")
    assert "draws" not in _row(page, "interval_kind")
    assert page.count(">no interval (fewer than 10 resampled pairs)</td>") == 3  # + 2 tags


def test_evaluate_over_eight_groups_says_there_is_no_interval(tmp_path, capsys) -> None:
    path = _write(tmp_path / "many.csv", 80)
    groups = ["--groups", "group"]
    path.write_text(  # 8 groups of 10 pairs
        "\n".join(
            line if i == 0 else ",".join([*line.split(",")[:3], str(i % 8), line.split(",")[4]])
            for i, line in enumerate(path.read_text().splitlines())
        )
        + "\n"
    )
    page = _page(tmp_path, capsys, "evaluate", path, "--probs", "prob", *groups)
    assert _row(page, "interval") == "no interval (fewer than 10 resampled groups)"
    assert _row(page, "interval_kind").endswith("none drawn (fewer than 10 groups)")


@pytest.mark.parametrize("label", [[], ["--label", "tag"]])
def test_compare_of_eight_items_says_there_is_no_interval(tmp_path, capsys, label) -> None:
    path = _write(tmp_path / "eight.csv", 8)
    argv = ["compare", path, "--probs", "prob", "--probs-b", "q_b", *label]
    page = _page(tmp_path, capsys, *argv)
    assert _row(page, "difference_interval") == "no interval (fewer than 10 resampled pairs)"
    assert _row(page, "interval_kind").endswith("none drawn (fewer than 10 pairs)")
