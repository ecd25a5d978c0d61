r"""One rule shows a label name on one line, in the per-label chart's ticks, the per-label
note, the command's text table and the page's table (``wording.one_line_names``): a line
feed as ``\n``, a typed backslash before an ``n`` doubled (``\\n``), the empty name as
``""``. The note and the tables had kept the line feed (the text table's row broke in
two) while the chart drew ``a\nb``, so that the note's ``a\nb`` named the other label,
the typed one; and an empty name and a name ``""`` had drawn the same tick."""

from __future__ import annotations

import csv
import json
import re

import matplotlib

matplotlib.use("Agg")

import torch
from cli_runs import run_cli

from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import per_label_errors
from calib_metrics.plot._text import _tick_labels
from calib_metrics.wording import one_line_names

FED, TYPED = "a\nb", "a\\nb"  # a line feed; a backslash and an n


def test_the_chart_s_ticks_follow_the_rule() -> None:
    assert _tick_labels([FED, TYPED, "NOUN"]) == one_line_names([FED, TYPED, "NOUN"], 60)
    assert _tick_labels([FED, TYPED]) == ["a\\nb", "a\\\\nb"]


def test_an_empty_name_and_a_name_of_two_quotes_draw_different_ticks() -> None:
    assert _tick_labels(["", '""']) == ['"" #1', '"" #2']
    q = torch.rand(300, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    r = calibration_error_ci(q, torch.bernoulli(q), bin_size=30, n_samples=20)
    _, ax = per_label_errors({"": r, '""': r, "NN": r}, sort=False)
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert len(set(ticks)) == 3 and ticks[2] == "NN"


def test_ordinary_names_are_shown_as_they_are() -> None:
    names = ["NOUN", "C:/data", "名詞", "x" * 80, "a b"]
    assert one_line_names(names) == names


def _tagged(path) -> None:
    """Labels a<LF>b and a\\nb (typed), both with a − b outside their own interval (b =
    0.9 q + 0.05: both errors clipped at 0), and "far" (b = √q) inside its own."""
    g = torch.Generator().manual_seed(11)
    q = torch.rand(1000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    near = (0.9 * q + 0.05).tolist()
    with path.open("w", newline="", encoding="utf-8") as f:
        rows = zip(
            q.tolist() * 3, near + near + q.sqrt().tolist(), y.int().tolist() * 3,
            [FED] * 1000 + [TYPED] * 1000 + ["far"] * 1000, strict=True,
        )  # fmt: skip
        csv.writer(f).writerows([("qa", "qb", "label", "tag"), *rows])


def test_the_note_and_both_tables_name_labels_as_the_chart_does(tmp_path, capsys) -> None:
    path, page = tmp_path / "tagged.csv", tmp_path / "page.html"
    _tagged(path)
    argv = ["compare", path, "--probs", "qa", "--probs-b", "qb", "--label", "tag"]
    code, text, err = run_cli(capsys, *argv, "--samples", "200", "--html", page)
    assert code == 0, err
    code, as_json, err = run_cli(capsys, *argv, "--samples", "200", "--json")
    assert code == 0, err
    summary = json.loads(as_json)
    shown = dict(zip([FED, TYPED], _tick_labels([FED, TYPED]), strict=True))  # the chart's
    # The JSON keeps the names as the file writes them.
    assert summary["per_label_note"].startswith("2 of 3 labels' differences lie outside")
    assert FED in summary["per_label_note"] and TYPED in summary["per_label_note"]
    # The text: each label's row one line, the note naming both as the chart does.
    lines = text.splitlines()
    rows = {line.split()[0]: line for line in lines if line.endswith(("  -", "  a", "  b"))}
    assert set(rows) == {shown[FED], shown[TYPED], "far"}
    (note,) = (line for line in lines if line.startswith("  note: "))
    named = re.search(r"\((.*)\): ", note).group(1).split(", ")
    assert sorted(named) == sorted(shown.values())
    # The page: its table's cells and its note, as the chart.
    html = page.read_text(encoding="utf-8")
    table = html[html.index('id="per-label-table"') :]
    cells = re.findall(r"<tr><td>(.*?)</td>", table[: table.index("</table>")], re.S)
    assert sorted(cells) == sorted([*shown.values(), "far"])
    page_note = re.search(r"<p>Note: [^<]*?\((.*?)\): ", html).group(1).split(", ")
    assert sorted(page_note) == sorted(shown.values())


def test_evaluate_s_per_label_lines_follow_the_rule() -> None:
    from calib_metrics.cli_report import label_lines

    row = {"n": 400.0, "calib_err": 0.01, "lower": 0.0, "upper": 0.02}
    lines = label_lines({FED: row, TYPED: row, "": row, '""': row})
    names = [line.split(": CalibErr")[0].strip() for line in lines]
    assert names == [*_tick_labels([FED, TYPED]), '"" #1', '"" #2']
