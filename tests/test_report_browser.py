"""The ``--html`` report as a reader sees it: loaded from a file:// URL in headless Chromium.

Needs Debian's ``chromium`` and ``chromium-driver`` and ``selenium`` (``browser_harness.py``);
skipped with that reason when one is missing. Every check waits (bounded) for the element
it reads; nothing is timed.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import browser_harness
import pytest
import test_report as report_tests

# Every fetch the page made, and the URL of the page itself.
RESOURCES = "return performance.getEntriesByType('resource').map(e => e.name)"
SVG_TEXTS = "return Array.from(arguments[0].querySelectorAll('text'), t => t.textContent)"


def _cli_json(capsys: pytest.CaptureFixture, *argv: Any) -> dict[str, Any]:
    code, out, err = report_tests.run(capsys, *argv, "--samples", "200", "--json")
    assert code == 0, err
    return json.loads(out)


def _axis_labels() -> dict[str, tuple[str, str]]:
    """The x and y labels that the plot module gives each figure the page embeds."""
    import torch

    from calib_metrics.functional import calibration_error_ci
    from calib_metrics.plot import per_class_errors, reliability_diagram

    q = torch.linspace(0.01, 0.99, 200, dtype=torch.float64)
    r = calibration_error_ci(q, (q > 0.5).double(), bin_size=20, n_samples=20)
    _, diagram = reliability_diagram(r)
    _, bars = per_class_errors({"m": [r]}, ["x"])
    return {
        "diagram": (diagram.get_xlabel(), diagram.get_ylabel()),
        "per_label": (bars.get_xlabel(), bars.get_ylabel()),
    }


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory):
    browser_harness.require_browser()
    with browser_harness.chromium(tmp_path_factory.mktemp("profile")) as session:
        yield session


def _open(driver: Any, page: Path) -> None:
    driver.get(page.resolve().as_uri())
    browser_harness.wait_for_css(driver, "#settings-table tr")


def _cell(driver: Any, key: str) -> str:
    cell = browser_harness.wait_for_css(driver, f'#summary-table tr[data-key="{key}"] td')
    return cell.text


def _rows(driver: Any, table_id: str) -> int:
    browser_harness.wait_for_css(driver, f"#{table_id} tbody tr")
    return len(driver.find_elements("css selector", f"#{table_id} tbody tr"))


def _svg_texts(driver: Any, css: str) -> list[str]:
    svg = browser_harness.wait_for_css(driver, css)
    return [t.strip() for t in driver.execute_script(SVG_TEXTS, svg)]


def _assert_nothing_fetched(driver: Any) -> None:
    names = driver.execute_script(RESOURCES)
    assert all(n.startswith(("data:", "file:")) for n in names), names
    assert driver.execute_script("return document.scripts.length") == 0


def _assert_axes_text(texts: list[str], labels: tuple[str, str]) -> None:
    for label in labels:
        if label and "$" not in label:  # mathtext is drawn as pieces, not one text
            assert label in texts, (label, texts[:20])
    assert sum(t.replace(".", "", 1).isdigit() for t in texts) >= 4  # tick labels


def test_evaluate_report_in_chromium(driver, tmp_path: Path, capsys) -> None:
    data = report_tests.write_tagged(tmp_path / "tagged.csv")
    page = tmp_path / "report.html"
    summary = _cli_json(
        capsys, "evaluate", data, "--probs", "prob_a", "--label", "tag", "--html", page
    )
    _open(driver, page)
    assert _cell(driver, "calib_err") == f"{summary['calib_err']:.4f}"
    assert _cell(driver, "interval") == f"[{summary['lower']:.4f}, {summary['upper']:.4f}]"
    assert _cell(driver, "n") == str(summary["n"])
    assert "recentred bootstrap over pairs" in _cell(driver, "interval_kind")
    assert _cell(driver, "smooth_ece") == f"{summary['smooth_ece']:.4f}"
    assert len(driver.find_elements("css selector", "figure svg")) == 2
    labels = _axis_labels()
    _assert_axes_text(_svg_texts(driver, "#reliability svg"), labels["diagram"])
    _assert_axes_text(_svg_texts(driver, "#per-label-chart svg"), labels["per_label"])
    assert _rows(driver, "bins-table") == summary["bins"]
    assert _rows(driver, "per-label-table") == len(report_tests.TAGS)
    _assert_nothing_fetched(driver)


def test_compare_report_in_chromium(driver, tmp_path: Path, capsys) -> None:
    data = report_tests.write_tagged(tmp_path / "tagged.csv")
    page = tmp_path / "compare.html"
    argv = ["compare", data, "--probs", "prob_a", "--probs-b", "prob_b", "--label", "tag"]
    summary = _cli_json(capsys, *argv, "--html", page)
    _open(driver, page)
    assert _cell(driver, "difference") == f"{summary['difference']:+.4f}"
    interval = f"[{summary['lower']:+.4f}, {summary['upper']:+.4f}]"
    assert _cell(driver, "difference_interval") == interval
    models = browser_harness.wait_for_css(driver, "#models-table").text
    assert f"{summary['a']['calib_err']:.4f}" in models
    assert f"{summary['b']['calib_err']:.4f}" in models
    assert len(driver.find_elements("css selector", "figure svg")) == 3
    labels = _axis_labels()
    for key in ("a", "b"):
        _assert_axes_text(_svg_texts(driver, f"#reliability-{key} svg"), labels["diagram"])
    assert _rows(driver, "per-label-table") == len(report_tests.TAGS)
    assert _rows(driver, "bins-a") > 1 and _rows(driver, "bins-b") > 1
    _assert_nothing_fetched(driver)


# The page's width in CSS pixels beside the window's: a wider page scrolls sideways.
PAGE_WIDTHS = "return [document.documentElement.scrollWidth, window.innerWidth]"


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_a_long_label_wraps_in_its_cell(driver, tmp_path: Path, capsys, command: str) -> None:
    """A label without spaces (a path, a URI) wraps: unbroken, 300 characters had pushed
    every row's numbers past the right edge (a page 2942 px wide in a 1200 px window)."""
    long_label = "L" * 300
    data = report_tests.write_tagged(tmp_path / "tagged.csv", tags=("NOUN", long_label))
    page = tmp_path / "report.html"
    argv = [command, data, "--probs", "prob_a", "--label", "tag", "--html", page]
    if command == "compare":
        argv[4:4] = ["--probs-b", "prob_b"]
    _cli_json(capsys, *argv)
    _open(driver, page)
    assert _rows(driver, "per-label-table") == 2
    page_width, window_width = driver.execute_script(PAGE_WIDTHS)
    assert page_width <= window_width, (page_width, window_width)
    numbers = driver.find_elements("css selector", "#per-label-table td.num")
    assert numbers and all("\n" not in cell.text for cell in numbers)  # numbers stay whole
    # In its own cell: a table scrolled in its box would keep the page narrow all the same.
    cell = _label_cells(driver)[long_label]
    assert driver.execute_script(LINES, cell) > 1


def test_a_long_file_name_wraps_in_the_title_and_the_command(driver, tmp_path: Path, capsys):
    """A 200-character file name without spaces wraps: only table cells had wrapped, so
    the page's title and its "Command:" line had scrolled the page sideways."""
    data = report_tests.write_tagged(tmp_path / ("F" * 196 + ".csv"))
    page = tmp_path / "report.html"
    _cli_json(capsys, "evaluate", data, "--probs", "prob_a", "--html", page)
    _open(driver, page)
    page_width, window_width = driver.execute_script(PAGE_WIDTHS)
    assert page_width <= window_width, (page_width, window_width)


# Line boxes of an element's text: a label broken mid-word takes two.
LINES = (
    "const r = document.createRange(); r.selectNodeContents(arguments[0]); "
    "return r.getClientRects().length"
)


def _label_cells(driver: Any) -> dict[str, Any]:
    browser_harness.wait_for_css(driver, "#per-label-table tbody tr")
    cells = driver.find_elements("css selector", "#per-label-table tbody td:first-child")
    return {cell.text: cell for cell in cells}


def test_short_labels_stay_whole_beside_long_cells(driver, tmp_path: Path, capsys) -> None:
    """A row's long cells ("no interval (fewer than 10 resampled pairs)", kept on one line)
    had squeezed the label column to one letter: "NOU/N", "RAR/E" at 1200 px."""
    tags = ("NOUN",) * 60 + ("VERB",) * 59 + ("RARE",)  # RARE: 5 pairs, no interval
    data = report_tests.write_tagged(tmp_path / "tagged.csv", tags=tags)
    page = tmp_path / "compare.html"
    argv = ["compare", data, "--probs", "prob_a", "--probs-b", "prob_b", "--label", "tag"]
    _cli_json(capsys, *argv, "--html", page)
    _open(driver, page)
    cells = _label_cells(driver)
    assert set(cells) == {"NOUN", "VERB", "RARE"}
    lines = {label: driver.execute_script(LINES, cell) for label, cell in cells.items()}
    assert lines == {"NOUN": 1, "VERB": 1, "RARE": 1}


@contextlib.contextmanager
def _window_width(driver: Any, width: int):
    """The page laid out in a window ``width`` CSS pixels wide (a phone's), then as before."""
    metrics = {"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_a_narrow_window_scrolls_wide_tables_not_the_page(driver, tmp_path, capsys, command):
    """At 400 px the compare page had been 1010 px wide (its right-hand columns off screen)
    and evaluate's 409, their text flush with the window's left edge: a wide table scrolls
    in its own box, and the text keeps a margin."""
    data = report_tests.write_tagged(tmp_path / "tagged.csv")
    page = tmp_path / "report.html"
    argv = [command, data, "--probs", "prob_a", "--label", "tag", "--html", page]
    if command == "compare":
        argv[4:4] = ["--probs-b", "prob_b"]
    _cli_json(capsys, *argv)
    with _window_width(driver, 400):
        _open(driver, page)
        assert driver.execute_script("return window.innerWidth") == 400
        page_width, window_width = driver.execute_script(PAGE_WIDTHS)
        assert page_width <= window_width, (page_width, window_width)
        title = browser_harness.wait_for_css(driver, "h1")
        assert title.rect["x"] >= 8  # a margin, not flush with the edge
        table = browser_harness.wait_for_css(driver, "#per-label-table")
        assert table.rect["width"] > 0 and _label_cells(driver)


# Words of a table's cells that the browser broke mid-word ("calibratio|n"): where the line
# box's height changes between two letters, neither a hyphen nor a slash before the break.
BROKEN_WORDS = """
const broken = [];
const top = (node, i) => {
  const r = document.createRange();
  r.setStart(node, i);
  r.setEnd(node, i + 1);
  return Math.round(r.getClientRects()[0].top);
};
for (const cell of arguments[0].querySelectorAll('td, th')) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.data.matchAll(/\\S+/g)) {
      const end = m.index + m[0].length;
      for (let i = m.index + 1; i < end; i++) {
        if (top(node, i) !== top(node, i - 1) && !'-/'.includes(node.data[i - 1])) {
          broken.push(node.data.slice(m.index, i) + '|' + node.data.slice(i, end));
        }
      }
    }
  }
}
return broken;
"""


def test_a_narrow_window_keeps_table_words_whole(driver, tmp_path, capsys) -> None:
    """At 400 px the compare page's tables had broken words mid-word ("calibratio/n",
    "Spiegelha/lter", "p = 2.75e-/17"), wrapping anywhere though they scroll in a box."""
    data = report_tests.write_tagged(tmp_path / "tagged.csv")
    page = tmp_path / "compare.html"
    argv = ["compare", data, "--probs", "prob_a", "--probs-b", "prob_b", "--label", "tag"]
    _cli_json(capsys, *argv, "--html", page)
    with _window_width(driver, 400):
        _open(driver, page)
        for table_id in ("models-table", "summary-table"):
            table = browser_harness.wait_for_css(driver, f"#{table_id}")
            assert driver.execute_script(BROKEN_WORDS, table) == [], table_id
