"""``compare --plot`` names each panel as the page and ``--mode classwise`` do: the model's
key and its whole name. It had titled each panel with the file's base name alone, so two
files ``run1/preds.csv`` and ``run2/preds.csv`` gave two panels both titled "preds.csv",
and model b of ``--probs-b probs/b`` was titled "b]"."""

from __future__ import annotations

import pytest
import torch
from test_report import run

pytest.importorskip("matplotlib")

from calib_metrics import plot
from calib_metrics.report import FIGURE_NAME_CHARS, model_title


@pytest.fixture
def titles(monkeypatch) -> list[str]:
    """The title of every reliability diagram the command draws, in order."""
    drawn: list[str] = []
    original = plot.reliability_diagram

    def recording(*args, **kwargs):
        drawn.append(kwargs.get("title"))
        return original(*args, **kwargs)

    monkeypatch.setattr(plot, "reliability_diagram", recording)
    return drawn


def _title(key: str, name: object) -> str:
    """The name as given, its middle cut where it is long (tmp_path's are)."""
    return model_title(key, str(name), FIGURE_NAME_CHARS)


def _pairs(seed: int) -> tuple[list[float], list[float], list[int]]:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(300, generator=g, dtype=torch.float64) * 0.9 + 0.05
    y = torch.bernoulli(q, generator=g)
    return q.tolist(), q.sqrt().tolist(), [int(v) for v in y.tolist()]


def test_two_files_of_one_name_are_told_apart(tmp_path, capsys, titles) -> None:
    q, sharp, y = _pairs(0)
    files = []
    for folder, probs in (("run1", q), ("run2", sharp)):
        (tmp_path / folder).mkdir()
        path = tmp_path / folder / "preds.csv"
        path.write_text("prob,label\n" + "".join(f"{p!r},{t}\n" for p, t in zip(probs, y)))
        files.append(path)
    png = tmp_path / "both.png"
    code, _, err = run(capsys, "compare", *files, "--samples", "20", "--plot", png)
    assert code == 0, err
    assert titles == [_title("a", files[0]), _title("b", files[1])]
    assert titles[0].endswith("run1/preds.csv") and titles[1].endswith("run2/preds.csv")


def test_a_column_with_a_slash_names_model_b_whole(tmp_path, capsys, titles) -> None:
    q, sharp, y = _pairs(1)
    path = tmp_path / "both.csv"
    rows = "".join(f"{a!r},{b!r},{t}\n" for a, b, t in zip(q, sharp, y))
    path.write_text("probs/a,probs/b,label\n" + rows)
    argv = ["compare", path, "--probs", "probs/a", "--probs-b", "probs/b", "--samples", "20"]
    code, _, err = run(capsys, *argv, "--plot", tmp_path / "both.png")
    assert code == 0, err
    assert titles == [_title("a", f"{path} [probs/a]"), _title("b", f"{path} [probs/b]")]


def test_the_page_names_its_diagrams_alike(tmp_path, capsys, titles) -> None:
    q, sharp, y = _pairs(2)
    path = tmp_path / "both.csv"
    path.write_text("qa,qb,label\n" + "".join(f"{a!r},{b!r},{t}\n" for a, b, t in zip(q, sharp, y)))
    argv = ["compare", path, "--probs", "qa", "--probs-b", "qb", "--samples", "20"]
    code, _, err = run(capsys, *argv, "--html", tmp_path / "p.html", "--plot", tmp_path / "p.png")
    assert code == 0, err
    page, figure = titles[:2], titles[2:]
    assert page == figure == [_title("a", f"{path} [qa]"), _title("b", f"{path} [qb]")]
