"""The example scripts run, and print what the README and docs quote from them.

The quoted outputs are the docs' figures: a change of a default or a rule that moves them
must rerun the example and update the page, and this test says which block is stale.
(``examples/train_tagger_lightning.py`` is run by ``tests/test_callbacks.py``.)
"""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(example: str, capsys, monkeypatch, tmp_path: Path) -> list[str]:
    """The example's printed lines, run from an empty folder with its default ``--out``
    (a relative path, so that its printed paths read as the docs' do)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [example])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(ROOT / "examples" / example), run_name="__main__")
    out = capsys.readouterr().out
    assert exit_.value.code in (0, None), out
    return out.splitlines()


def _quoted_blocks(page: str, first_line: str) -> list[list[str]]:
    """The plain fenced blocks of ``page`` with a line starting with ``first_line``, from
    that line on (a block may first show the command)."""
    blocks: list[list[str]] = []
    block: list[str] | None = None  # the plain block being read, if any
    fenced = False
    for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if fenced and block is not None:
                blocks.append(block)
            fenced = not fenced
            block = [] if fenced and line == "```" else None
        elif block is not None:
            block.append(line)
    starts = [[i for i, line in enumerate(b) if line.startswith(first_line)] for b in blocks]
    return [block[found[0] :] for block, found in zip(blocks, starts) if found]


def _assert_quoted(printed: list[str], page: str, first_line: str) -> None:
    blocks = _quoted_blocks(page, first_line)
    assert blocks, f"{page}: no block starting {first_line!r}"
    for block in blocks:
        stale = [line for line in block if line not in printed]
        assert not stale, f"{page}: quoted lines the example no longer prints: {stale}"


def test_compare_two_models_prints_the_readme_s_comparisons(capsys, monkeypatch, tmp_path):
    printed = _run("compare_two_models.py", capsys, monkeypatch, tmp_path)
    _assert_quoted(printed, "README.md", "N = 5000 items")
    _assert_quoted(printed, "README.md", "N = 6000 items")
    assert (tmp_path / "out" / "compare" / "tagged.csv").is_file()


def test_recalibrate_classifier_prints_the_quoted_before_and_after(capsys, monkeypatch, tmp_path):
    printed = _run("recalibrate_classifier.py", capsys, monkeypatch, tmp_path)
    for page in ("README.md", "docs/recalibration.md"):
        _assert_quoted(printed, page, "fitted platt on")
    assert (tmp_path / "out" / "recalibrate" / "test.recalibrated.csv").is_file()


LABEL_ROW = re.compile(
    r"^  (\w+) +(\d+) +([\d.]+) +([\d.]+) +([+-][\d.]+) +\[([+-][\d.]+), ([+-][\d.]+)\] +"
    r"([<\d. ]+?) +([\d.]+) +\S+$"
)


def test_html_report_writes_both_pages_and_docs_report_s_table(capsys, monkeypatch, tmp_path):
    """docs/report.md tabulates the comparison the example prints (no screenshot here:
    that needs Chromium, and the page itself is tested in tests/test_report.py)."""
    printed = _run("html_report.py", capsys, monkeypatch, tmp_path)
    for page in ("compare.html", "evaluate.html"):
        assert (tmp_path / "out" / "report" / page).stat().st_size > 0
    table = (ROOT / "docs" / "report.md").read_text(encoding="utf-8").replace("−", "-")
    pooled = next(line for line in printed if line.startswith("  a - b = "))
    difference, p = re.fullmatch(r"  a - b = (.*?) \[95%: (.*)\], p = (.*)", pooled).group(1, 3)
    assert f"| {difference} [" in table and f"| {p} |" in table
    rows = [LABEL_ROW.match(line) for line in printed]
    rows = [row.groups() for row in rows if row]
    assert len(rows) == 3, printed
    for label, n, a, b, diff, low, high, p, p_holm in rows:
        expected = f"| {label} ({int(n):,}) | {a} | {b} | {diff} [{low}, {high}] | {p} | {p_holm} |"
        assert expected in table, f"docs/report.md lacks the row {expected}"
