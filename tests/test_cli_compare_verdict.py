"""`calib-metrics compare` says which model is better calibrated, and names both files when
neither has the --label column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from calib_metrics.cli import main


def _write(path: Path, probs: list[float], labels: list[int], tags: list[str] | None = None):
    header = "prob,label" + (",tag" if tags else "")
    cells = zip(probs, labels, tags or [None] * len(probs), strict=True)
    rows = "".join(f"{q},{y}" + (f",{t}" if t else "") + "\n" for q, y, t in cells)
    path.write_text(header + "\n" + rows)
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """a overconfident, b calibrated, on the same 2,000 items."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long().tolist()
    over = torch.where(q > 0.5, q.sqrt(), q**2).tolist()
    tags = ["NOUN" if i % 2 else "VERB" for i in range(2000)]
    return {
        "a": _write(tmp_path / "a.csv", over, y, tags),
        "b": _write(tmp_path / "b.csv", q.tolist(), y),
    }


def _text(argv: list[str], capsys) -> list[str]:
    assert main(["compare", *argv, "--samples", "200"]) == 0
    return capsys.readouterr().out.splitlines()


def test_the_better_calibrated_model_is_named(files, capsys) -> None:
    """The text had given a − b and p, and left the reader to work out which model won."""
    lines = _text([str(files["a"]), str(files["b"])], capsys)
    at = next(i for i, line in enumerate(lines) if line.startswith("  a - b = +"))
    assert lines[at + 1] == "  b is better calibrated (p < 0.01)"
    swapped = _text([str(files["b"]), str(files["a"])], capsys)
    assert "  a is better calibrated (p < 0.01)" in swapped


def test_no_difference_is_said_at_the_interval_s_level(files, capsys) -> None:
    lines = _text([str(files["b"]), str(files["b"]), "--confidence", "0.9"], capsys)
    assert "  no difference shown at 90% (p = 1)" in lines
    assert not any("better calibrated" in line for line in lines)


def test_the_verdict_follows_the_p_value_and_the_per_label_rule(files, capsys) -> None:
    """JSON ``better`` is the side of the draws where p ≤ 1 − confidence, as each label's
    ``better`` column is (after its correction)."""
    argv = ["compare", str(files["a"]), str(files["b"]), "--samples", "200", "--json"]
    assert main([*argv, "--label", "tag"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["p_value"] <= 0.05 and summary["better"] == "b"
    assert {row["better"] for row in summary["per_label"].values()} == {"b"}
    assert main(["compare", str(files["b"]), str(files["b"]), "--json", "--samples", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["better"] == "-"


def test_a_few_draws_that_all_lie_on_one_side_call_nothing(files, capsys) -> None:
    """20 draws of which none reached 0 bound p by 2/20 only: (20·0 + 2)/21 = 0.095 is no
    difference shown at 95% (the raw p = 0 had called b better, "p < 0.1"), as the
    per-label rule has it."""
    argv = ["compare", str(files["a"]), str(files["b"]), "--json", "--samples", "20"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["p_value"] == 0 and summary["better"] == "-"


def test_the_page_states_the_verdict(files, tmp_path: Path, capsys) -> None:
    page = tmp_path / "compare.html"
    _text([str(files["a"]), str(files["b"]), "--html", str(page)], capsys)
    assert "<th>verdict</th><td>b is better calibrated (p &lt; 0.01)</td>" in page.read_text()


def test_a_label_column_neither_file_has_names_both(files, capsys) -> None:
    """The label may come from either file: the message had named a's file alone."""
    assert main(["compare", str(files["a"]), str(files["b"]), "--label", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert f"neither {files['a']} nor {files['b']} has that column" in err
    assert f"{files['a']}: prob, label, tag; {files['b']}: prob, label" in err
    assert main(["compare", str(files["a"]), str(files["b"]), "--label", "TAG"]) == 2
    assert "did you mean 'tag'?" in capsys.readouterr().err
