"""Where an estimate lies outside its own interval, the command says so and why, in its
text, its JSON and on its page.

``evaluate --interval paper`` with the default debiased estimate printed, say, CalibErr
0.0290 with an 80% interval [0.0399, 0.0555]: Algorithm 2's draws add each bin's noise
again, so they centre near the plug-in, not on the debiased estimate (docs/coverage.md,
finding 1). And a paired comparison's interval is for the true difference, drawn from the
unbiased difference of the squared errors, while each error shown is the root of a
debiased square clipped at 0: two nearly calibrated models can have a − b outside its
interval (calib_metrics.functional.comparison, "Bias-corrected, not centred on the
estimate"). Neither output had said a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_report import Page, run


def _write(path: Path, columns: dict[str, list]) -> Path:
    rows = zip(*columns.values(), strict=True)
    text = ",".join(columns) + "\n" + "".join(",".join(map(repr, r)) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outside")


@pytest.fixture(scope="module")
def overconfident(folder: Path) -> Path:
    """2,000 pairs whose frequency is 1.1·q − 0.03: debiased 0.040, plug-in 0.071."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli((1.1 * q - 0.03).clamp(0, 1), generator=g)
    return _write(folder / "pairs.csv", {"prob": q.tolist(), "label": y.int().tolist()})


def _command(capsys, tmp_path: Path, *argv) -> tuple[str, dict, Page]:
    """The command's text, its JSON and its page."""
    out = tmp_path / "page.html"
    code, text, err = run(capsys, *argv, "--samples", "200")
    assert code == 0, err
    code, as_json, err = run(capsys, *argv, "--samples", "200", "--json", "--html", out)
    assert code == 0, err
    return text, json.loads(as_json), Page(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("options", "why"),
    [
        (["--interval", "paper"], "centre near the plug-in estimate (--no-debias)"),
        (["--interval", "paper", "--no-debias"], "lie above the plug-in estimate"),
        (["--no-debias", "--method", "percentile"], "percentile form takes the plug-in's draws"),
    ],
    ids=["paper, debiased", "paper, plug-in", "plug-in percentile"],
)
def test_evaluate_says_why_its_estimate_lies_below_its_interval(
    tmp_path, capsys, overconfident, options, why
) -> None:
    argv = ["evaluate", overconfident, *options, "--confidence", "0.8"]
    text, summary, page = _command(capsys, tmp_path, *argv)
    assert summary["calib_err"] < summary["lower"]
    note = summary["interval_note"]
    assert note.startswith("CalibErr lies below its interval: ") and why in note
    assert f"note: {note}" in text.splitlines()
    assert page.value("interval_note") == note


def test_evaluate_says_nothing_where_the_estimate_lies_inside(tmp_path, capsys, overconfident):
    text, summary, page = _command(capsys, tmp_path, "evaluate", overconfident)
    assert summary["lower"] <= summary["calib_err"] <= summary["upper"]
    assert "interval_note" not in summary and "note:" not in text
    assert "interval_note" not in page.keys


def test_compare_says_why_the_difference_lies_outside_its_interval(tmp_path, capsys, folder):
    # Two nearly calibrated models, both shown as 0.0000, whose draws tell them apart.
    g = torch.Generator().manual_seed(11)
    q = torch.rand(1000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    columns = {"qa": q.tolist(), "qb": (0.9 * q + 0.05).tolist(), "label": y.int().tolist()}
    path = _write(folder / "two.csv", columns)
    argv = ["compare", path, "--probs", "qa", "--probs-b", "qb"]
    text, summary, page = _command(capsys, tmp_path, *argv)
    assert not summary["lower"] <= summary["difference"] <= summary["upper"]
    note = summary["difference_note"]
    assert note.startswith("the difference lies above its paired interval: ")
    assert "clipped at 0" in note and "The paired difference interval" in note
    assert f"  note: {note}" in text.splitlines()
    assert page.value("difference_note") == note


def _whiskers(ax) -> list[tuple[float, float]]:
    """The (start, end) along x of every interval whisker drawn on ``ax``."""
    from matplotlib.container import ErrorbarContainer

    ends = []
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            for segment in container.lines[2][0].get_segments():
                ends.append((float(segment[0][0]), float(segment[1][0])))
    return ends


def test_the_per_label_charts_draw_an_interval_from_its_own_ends(overconfident) -> None:
    # Whiskers measured from the estimate and clipped at 0 had drawn [estimate, upper] for
    # an interval wholly above it, as if it held the estimate.
    pytest.importorskip("matplotlib")
    import numpy as np

    from calib_metrics.functional import calibration_error_ci, compare_calibration
    from calib_metrics.plot import per_label_errors

    data = np.genfromtxt(overconfident, delimiter=",", names=True)
    q, y = torch.tensor(data["prob"]), torch.tensor(data["label"])
    seeded = {"n_samples": 200, "generator": torch.Generator().manual_seed(0)}
    paper = calibration_error_ci(q, y, interval="paper", confidence=0.8, **seeded)
    assert paper.error < paper.lower
    _, ax = per_label_errors({"all": paper})
    assert _whiskers(ax) == [pytest.approx((paper.lower.item(), paper.upper.item()))]

    g = torch.Generator().manual_seed(11)
    q = torch.rand(1000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    seeded["generator"] = torch.Generator().manual_seed(0)
    two = compare_calibration(q, 0.9 * q + 0.05, y, **seeded)
    assert two.difference > two.upper
    fig, _ = per_label_errors({"all": two}, names=("a", "b"))
    difference_panel = fig.axes[1]
    assert _whiskers(difference_panel) == [pytest.approx((two.lower.item(), two.upper.item()))]


def test_compare_names_the_labels_whose_difference_lies_outside_their_interval(
    tmp_path, capsys, folder
):
    """The per-label table had shown such labels without a word (nine in ``reproduce
    pos``'s run); a called one's verdict is the side of its draws, not of a clipped 0. The
    note names a label as the table does: its control characters shown, not sent."""
    import csv

    from calib_metrics.wording import visible_controls

    g = torch.Generator().manual_seed(11)
    q = torch.rand(1000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    near = "\x1b[31mnear<b>"  # an ESC, and markup
    path = folder / "tagged.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        rows = zip(
            q.tolist() * 2,
            (0.9 * q + 0.05).tolist() + q.sqrt().tolist(),  # near, then far: b worse
            y.int().tolist() * 2,
            [near] * 1000 + ["far"] * 1000,
            strict=True,
        )
        csv.writer(f).writerows([("qa", "qb", "label", "tag"), *rows])
    argv = ["compare", path, "--probs", "qa", "--probs-b", "qb", "--label", "tag"]
    text, summary, page = _command(capsys, tmp_path, *argv)
    near_row, far_row = summary["per_label"][near], summary["per_label"]["far"]
    assert not near_row["lower"] <= near_row["difference"] <= near_row["upper"]
    assert far_row["lower"] <= far_row["difference"] <= far_row["upper"]
    note = summary["per_label_note"]  # the JSON keeps the name as the file writes it
    assert note.startswith(f"1 of 2 labels' difference lies outside its paired interval ({near}): ")
    assert "clipped at 0" in note and "The paired difference interval" in note
    assert "--mode classwise" not in note  # a per-label table is one-vs-rest
    lines = text.splitlines()
    counts = next(i for i, line in enumerate(lines) if line.startswith("  a better on "))
    assert lines[counts + 1] == f"  note: {visible_controls(note)}"
    assert "\x1b" not in text
    assert f"Note: {visible_controls(note)}." in "".join(page.text)
    # Both errors shown as 0.0000, every draw below 0: a is called better, not "-".
    assert near_row["a"] == near_row["b"] == 0 and near_row["upper"] < 0
    assert near_row["adjusted_p_value"] <= 0.05 and near_row["better"] == "a"
    assert (summary["label_counts"]["a_better"], summary["label_counts"]["b_better"]) == (2, 0)
