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


def _warnings(page: str) -> str:
    return page.split('<section id="warnings">')[1].split("</section>")[0]


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_the_warnings_say_there_is_no_interval_not_nan(tmp_path, capsys, command) -> None:
    """The page's warnings (and stderr's) had said "so its ends are NaN" beside a table that
    writes "no interval (…)" and a JSON that writes null: the command shows no NaN. The
    library keeps its words: NaN is what a caller of the functions holds."""
    path = _write(tmp_path / "eight.csv", 8)
    argv = [command, path, "--probs", "prob", "--samples", "30", "--html", tmp_path / "r.html"]
    if command == "compare":
        argv[4:4] = ["--probs-b", "q_b"]
    code, _, err = _runs.run_cli(capsys, *argv)
    assert code == 0, err
    said = _warnings((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "NaN" not in said and "NaN" not in err
    none = "so there is none" if command == "evaluate" else "so there is neither"
    assert none in said and none in err
    from calib_metrics.functional import calibration_error_ci

    with pytest.warns(UserWarning, match="so its ends are NaN"):
        calibration_error_ci(torch.rand(8), torch.ones(8), n_samples=20)


@pytest.mark.parametrize(("groups", "units"), [([], "pairs"), (["--groups", "group"], "groups")])
def test_a_missing_p_value_names_the_units_its_interval_names(tmp_path, capsys, groups, units):
    """The interval cell said "fewer than 10 resampled pairs" and the p cell beside it "not
    tested (too few items)": one word for the units, in the summary and the table."""
    path = _write(tmp_path / "eight.csv", 8)
    argv = ["compare", path, "--probs", "prob", "--probs-b", "q_b", "--label", "tag", *groups]
    page = _page(tmp_path, capsys, *argv)
    missing = f"no p-value (fewer than 10 resampled {units})"
    assert _row(page, "p_value") == missing
    assert page.count(f">{missing}</td>") == 3  # the summary and both tags
    assert "items" not in page.split('id="per-label-table"')[1].split("</table>")[0]
