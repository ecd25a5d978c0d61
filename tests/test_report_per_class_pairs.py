"""The per-label rows of a multiclass file's classes are one-vs-rest in every mode: under
``--mode top_label`` (or classwise) the page and the text say so, and what they are."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_runs import run_cli

from calib_metrics.functional import calibration_error


def _three_classes(tmp_path: Path) -> tuple[Path, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    probs = (torch.randn(600, 3, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    path = tmp_path / "mc.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy())
    return path, probs, target


def _section(page: str) -> str:
    return html.unescape(re.search(r'<section id="per-label">.*?</section>', page, re.DOTALL)[0])


def test_top_label_page_says_its_class_rows_are_one_vs_rest(tmp_path, capsys) -> None:
    """The top-label page's per-label section had listed each class's one-vs-rest error
    under the top-label error without a word: read as top-label pairs by predicted class."""
    path, probs, target = _three_classes(tmp_path)
    page = tmp_path / "top.html"
    argv = ["evaluate", path, "--mode", "top_label", "--html", page, "--samples", "20"]
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    summary = json.loads(out)
    # What the note says is so: class 0's row is its 600 one-vs-rest pairs' error.
    row = summary["per_label"]["class 0"]
    assert row["n"] == 600
    ours = calibration_error(probs[:, 0], (target == 0).double(), bin_size="auto")
    assert row["calib_err"] == pytest.approx(ours.item(), rel=1e-12)
    note = summary["per_label_note"]
    assert "one-vs-rest" in note and "[target = class]" in note and "not top-label" in note
    assert note in _section(page.read_text(encoding="utf-8"))
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    (heading,) = [line for line in out.splitlines() if line.startswith("per label (3")]
    assert heading == f"per label (3; {note}):"


@pytest.mark.parametrize(("mode", "said"), [("classwise", "classwise error averages"),
                                            ("one_vs_rest", None)])  # fmt: skip
def test_the_other_modes_say_what_their_class_rows_are(tmp_path, capsys, mode, said) -> None:
    path, _, _ = _three_classes(tmp_path)
    page = tmp_path / f"{mode}.html"
    code, out, err = run_cli(capsys, "evaluate", path, "--mode", mode, "--html", page,
                             "--samples", "20", "--json")  # fmt: skip
    assert code == 0, err
    summary = json.loads(out)
    if said is None:  # the pooled pairs are the classes' pairs: nothing to tell apart
        assert "per_label_note" not in summary
        assert "one-vs-rest" not in _section(page.read_text(encoding="utf-8"))
    else:
        assert said in summary["per_label_note"]
        assert summary["per_label_note"] in _section(page.read_text(encoding="utf-8"))
