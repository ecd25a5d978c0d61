"""A measure one model lacks is said to be not computed, with the reason, on both pages.

Spiegelhalter's test is undefined for hard 0/1 predictions and not given for
``--mode classwise``. The command's text said "Spiegelhalter: not computed (…)"; the
evaluate page dropped the row without a word, and the compare page took its rows from
model a alone: b's test vanished where a's was not computed, and a blank cell stood for
b's where b's was not.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from test_report import Page, _table_cells, run


def _write(path: Path, probs: torch.Tensor, target: torch.Tensor) -> Path:
    rows = "\n".join(f"{q!r},{int(y)}" for q, y in zip(probs.tolist(), target.tolist()))
    path.write_text("prob,label\n" + rows + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same 400 items scored hard (0/1) and soft."""
    folder = tmp_path_factory.mktemp("not_computed")
    g = torch.Generator().manual_seed(3)
    q = torch.rand(400, generator=g, dtype=torch.float64) * 0.9 + 0.05
    y = torch.bernoulli(q, generator=g)
    return {
        "hard": _write(folder / "hard.csv", (q > 0.5).double(), y),
        "soft": _write(folder / "soft.csv", q, y),
    }


def _evaluate(capsys, tmp_path: Path, *argv) -> tuple[dict, Page]:
    out = tmp_path / "page.html"
    code, text, err = run(capsys, "evaluate", *argv, "--samples", "20", "--json", "--html", out)
    assert code == 0, err
    return json.loads(text), Page(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize("hard_is", ["a", "b"])
def test_compare_page_keeps_each_models_test_and_says_why_one_is_missing(
    models, tmp_path, capsys, hard_is
) -> None:
    a, b = (models["hard"], models["soft"]) if hard_is == "a" else (models["soft"], models["hard"])
    out = tmp_path / "compare.html"
    code, _, err = run(capsys, "compare", a, b, "--samples", "20", "--html", out)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    rows = [
        cells for cells in _table_cells(text, "models-table") if cells[0] == "Spiegelhalter test"
    ]
    assert len(rows) == 1, rows
    hard_cell, soft_cell = rows[0][1:] if hard_is == "a" else rows[0][:0:-1]
    assert hard_cell.startswith("not computed (") and "every probability is 0" in hard_cell
    assert soft_cell.startswith("z = ")


@pytest.mark.parametrize("case", ["hard", "classwise"], ids=["hard predictions", "mode classwise"])
def test_evaluate_page_says_why_the_test_was_not_computed(models, tmp_path, capsys, case):
    if case == "hard":
        argv = [models["hard"]]
    else:
        g = torch.Generator().manual_seed(4)
        probs = torch.softmax(torch.randn(300, 3, generator=g, dtype=torch.float64), -1)
        target = torch.multinomial(probs, 1, generator=g).squeeze(1)
        path = tmp_path / "three.npz"
        np.savez(path, probs=probs.numpy(), target=target.numpy())
        argv = [path, "--mode", "classwise"]
    summary, page = _evaluate(capsys, tmp_path, *argv)
    assert summary["spiegelhalter_z"] is None and summary["spiegelhalter_note"]
    assert page.value("spiegelhalter") == f"not computed ({summary['spiegelhalter_note']})"
