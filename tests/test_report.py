"""``evaluate --html`` and ``compare --html`` (issue 19): the page's structure read with
``html.parser`` (no browser needed), escaping, nothing fetched, and bad paths."""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics import cli
from calib_metrics.predictions import read_labels

TAGS = ("NOUN", "VERB", "ADJ")


def write_tagged(path: Path, n: int = 600, tags=TAGS) -> Path:
    """prob_a (overconfident), prob_b (calibrated), label, tag: a small two-model file."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(n, generator=g, dtype=torch.float64) * 0.98 + 0.01
    y = torch.bernoulli(q, generator=g).long()
    a = torch.where(q > 0.5, q.sqrt(), q**2)
    rows = [
        f"{pa:.6f},{pb:.6f},{t},{tags[i % len(tags)]}"
        for i, (pa, pb, t) in enumerate(zip(a.tolist(), q.tolist(), y.tolist()))
    ]
    path.write_text("prob_a,prob_b,label,tag\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


class Page(HTMLParser):
    """Tags, attributes, table rows and text of a page, as html.parser reads them."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: dict[str, int] = {}  # table id -> rows in its <tbody>
        self.keys: dict[str, list[str]] = {}  # data-key -> cell texts of that row
        self.text: list[str] = []
        self._table: list[str] = []
        self._key: str | None = None
        self._in_tbody = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table":
            self._table.append(a.get("id") or "")
            self.rows.setdefault(self._table[-1], 0)
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._in_tbody and self._table:
            self.rows[self._table[-1]] += 1
            self._key = a.get("data-key")
            if self._key:
                self.keys[self._key] = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table.pop()
        elif tag == "tbody":
            self._in_tbody = False
        elif tag == "tr":
            self._key = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._key and data.strip():
            self.keys[self._key].append(data.strip())

    def count(self, tag: str) -> int:
        return sum(1 for t, _ in self.tags if t == tag)

    def value(self, key: str) -> str:
        """The value cell of a summary row (the last cell: a row is th name, td value)."""
        return self.keys[key][-1]


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys, *argv) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.fixture(scope="module")
def tagged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tagged(tmp_path_factory.mktemp("report") / "tagged.csv")


def evaluate_json(capsys, path: Path, html: Path, *options) -> dict:
    argv = ["evaluate", path, "--probs", "prob_a", "--samples", "200", "--json", "--html", html]
    code, out, err = run(capsys, *argv, *options)
    assert code == 0, err
    return json.loads(out)


def assert_self_contained(page: Page) -> None:
    """No script, stylesheet link, image, frame or any URL outside the page."""
    for tag in ("script", "link", "img", "iframe", "object", "embed"):
        assert page.count(tag) == 0, tag
    for tag, attrs in page.tags:
        for name in ("src", "href", "xlink:href", "action", "data"):
            value = attrs.get(name)
            assert value is None or value.startswith("#"), (tag, name, value)
    (csp,) = [a for t, a in page.tags if t == "meta" and a.get("http-equiv")]
    assert "default-src 'none'" in csp["content"]


def test_evaluate_page_has_summary_figures_labels_bins_settings(tmp_path, tagged, capsys):
    out = tmp_path / "report.html"
    summary = evaluate_json(capsys, tagged, out, "--label", "tag")
    assert summary["html"] == str(out)
    page = Page(out.read_text(encoding="utf-8"))
    assert page.value("calib_err") == f"{summary['calib_err']:.4f}"
    assert page.value("interval") == f"[{summary['lower']:.4f}, {summary['upper']:.4f}]"
    assert page.value("n") == str(summary["n"])
    # The figures' name for it first (the page had named one interval two ways).
    assert page.value("interval_kind") == (
        "95% interval: debiased pair bootstrap (recentred bootstrap over pairs, normal form, "
        f"{summary['samples']} draws)"
    )
    named = [t for t in page.text if t.startswith("95% interval: debiased pair bootstrap")]
    assert len(named) >= 2  # the summary's row and the diagram's title
    assert page.value("brier") == f"{summary['brier']:.4f}"
    assert page.value("smooth_ece") == f"{summary['smooth_ece']:.4f}"
    assert page.value("spiegelhalter").startswith(f"z = {summary['spiegelhalter_z']:.3f}")
    # Its variance named as the text names it: the page had left out the independent one.
    assert page.value("spiegelhalter").endswith("(independent variance)")
    assert page.count("svg") == 2  # the reliability diagram and the per-label chart
    assert page.rows["bins-table"] == summary["bins"] == len(summary["per_bin"])
    assert page.rows["per-label-table"] == len(TAGS) == len(summary["per_label"])
    assert page.value("setting-bin_size") == "auto" and page.value("setting-label") == "tag"
    assert_self_contained(page)


@pytest.mark.parametrize(
    ("options", "how"),
    [
        ((), "recentred bootstrap over pairs, normal form"),
        (("--no-debias",), "bootstrap over pairs of the plug-in, not recentred, normal form"),
        (("--norm", "l1"), "bootstrap over pairs of the plug-in, not recentred, normal form"),
        (
            ("--norm", "max", "--method", "percentile"),
            "bootstrap over pairs of the plug-in, not recentred, percentile form",
        ),
    ],
)
def test_interval_kind_is_recentred_for_the_debiased_estimate_only(
    tmp_path, tagged, capsys, options, how
):
    """Recentring is the debiased l2 estimate's (README, "Trustworthy intervals"): the page
    had called a plug-in's percentile interval "recentred bootstrap over pairs" too."""
    out = tmp_path / "report.html"
    evaluate_json(capsys, tagged, out, *options)
    assert f"({how}, 200 draws)" in Page(out.read_text(encoding="utf-8")).value("interval_kind")


def test_compare_bins_keep_each_heading_with_its_table(tmp_path, tagged, capsys):
    # The side-by-side box laid out the headings and tables as four items: model b's
    # heading sat beside a's table and b's table wrapped below it with no heading.
    out = tmp_path / "compare.html"
    argv = ["compare", tagged, "--probs", "prob_a", "--probs-b", "prob_b", "--samples", "50"]
    code, _, err = run(capsys, *argv, "--html", out)
    assert code == 0, err
    html = out.read_text(encoding="utf-8")
    section = html[
        html.index('<section id="bins">') : html.index(
            "</section>", html.index('<section id="bins">')
        )
    ]
    one = (
        r'<div class="bins"><h3>[^<]*</h3><div class="scroll"><table id="bins-[ab]".*?'
        r"</table></div></div>"
    )
    assert re.fullmatch(
        rf'<section id="bins"><h2>Bins</h2><div class="side">({one}){{2}}</div>', section, re.DOTALL
    )


def test_compare_page_has_both_models_and_the_paired_difference(tmp_path, tagged, capsys):
    out = tmp_path / "compare.html"
    argv = ["compare", tagged, "--probs", "prob_a", "--probs-b", "prob_b", "--label", "tag"]
    code, stdout, err = run(capsys, *argv, "--samples", "200", "--json", "--html", out)
    assert code == 0, err
    summary = json.loads(stdout)
    page = Page(out.read_text(encoding="utf-8"))
    assert page.value("difference") == f"{summary['difference']:+.4f}"
    assert page.value("difference_interval") == (
        f"[{summary['lower']:+.4f}, {summary['upper']:+.4f}]"
    )
    assert page.value("p_value").split()[0] in (f"{summary['p_value']:.3g}", "<")
    # The intervals' form, as the text's header names it ("percentile intervals").
    kind = "95% paired bootstrap over pairs, 200 draws, percentile intervals"
    assert page.value("interval_kind") == kind
    assert page.count("svg") == 3  # two diagrams and the per-label chart
    assert page.rows["models-table"] >= 3
    text = "".join(page.text)
    assert f"{summary['a']['calib_err']:.4f}" in text and f"{summary['b']['calib_err']:.4f}" in text
    assert page.rows["bins-a"] > 1 and page.rows["bins-b"] > 1
    assert page.rows["per-label-table"] == len(TAGS)
    # The correction's verdicts, as the command prints them: adjusted p and the counts.
    counts = summary["label_counts"]
    assert f"a better on {counts['a_better']}, b better on {counts['b_better']}" in text
    cells = {
        row[0]: row for row in _table_cells(out.read_text(encoding="utf-8"), "per-label-table")
    }
    for tag, row in summary["per_label"].items():
        assert cells[tag][-1] == row["better"]
    assert_self_contained(page)


def test_text_from_files_is_escaped(tmp_path, capsys):
    evil = ("<script>alert(1)</script>", "$5 & $10", 'q"uote')
    path = write_tagged(tmp_path / "<b>bold<i>.csv", n=300, tags=evil)
    out = tmp_path / "r.html"
    evaluate_json(capsys, path, out, "--label", "tag")
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert page.count("script") == page.count("b") == page.count("i") == 0
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    labels = {row[0] for row in _table_cells(text, "per-label-table")}
    assert labels == set(evil)
    start = text.index('id="per-label-chart"')
    chart = Page(text[start : text.index("</svg>", start)]).text
    assert "$5 & $10" in chart  # drawn as typed: the $ pair did not start mathtext


def _table_cells(text: str, table_id: str) -> list[list[str]]:
    """The cell texts of each body row of one table."""
    start = text.index(f'id="{table_id}"')
    body = text[start : text.index("</table>", start)]
    rows = []
    for row in body.split("<tr>")[2:]:  # after the header row
        cells = Page(row).text
        rows.append([c for c in cells if c.strip()])
    return rows


def test_multiclass_classes_are_the_labels(tmp_path, capsys):
    g = torch.Generator().manual_seed(1)
    probs = torch.softmax(torch.randn(300, 3, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(-1)
    path = tmp_path / "mc.npz"
    np.savez(path, prob_a=probs.numpy(), target=target.numpy())
    out = tmp_path / "mc.html"
    summary = evaluate_json(capsys, path, out)
    assert sorted(summary["per_label"]) == ["class 0", "class 1", "class 2"]
    assert Page(out.read_text()).rows["per-label-table"] == 3
    line = one_line_error(capsys, "evaluate", path, "--probs", "prob_a", "--label", "target")
    assert "multiclass" in line


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_html_in_a_missing_folder_is_refused_not_created(tmp_path, tagged, capsys, command):
    target = tmp_path / "no" / "such" / "report.html"
    extra = ["--probs", "prob_a"] + (["--probs-b", "prob_b"] if command == "compare" else [])
    line = one_line_error(capsys, command, tagged, *extra, "--html", target)
    assert "--html" in line and "does not exist" in line
    assert not (tmp_path / "no").exists()


def test_html_that_is_a_folder_or_under_a_file(tmp_path, tagged, capsys):
    line = one_line_error(capsys, "evaluate", tagged, "--probs", "prob_a", "--html", tmp_path)
    assert "is a folder" in line
    line = one_line_error(
        capsys, "evaluate", tagged, "--probs", "prob_a", "--html", tagged / "r.html"
    )
    assert "is a file, not a folder" in line


def test_missing_label_column_is_one_line(tmp_path, tagged, capsys):
    out = tmp_path / "r.html"
    line = one_line_error(capsys, "evaluate", tagged, "--probs", "prob_a", "--label", "pos")
    assert "no column 'pos'" in line and not out.exists()


def test_read_labels_from_named_arrays_and_not_from_a_plain_one(tmp_path):
    path = tmp_path / "p.npz"
    np.savez(path, probs=np.array([0.2, 0.9]), target=np.array([0, 1]), tag=np.array(["x", "y"]))
    assert read_labels(path, "tag") == ["x", "y"]
    plain = tmp_path / "p.npy"
    np.save(plain, np.array([[0.2, 0.0], [0.9, 1.0]]))
    with pytest.raises(ValueError, match="unnamed array"):
        read_labels(plain, "tag")


def test_the_report_module_loads_no_matplotlib():
    code = "import sys, calib_metrics.report; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_labels_with_groups_resample_each_labels_groups(tmp_path, capsys):
    rows = ["prob,label,tag,sentence"]
    g = torch.Generator().manual_seed(3)
    q = torch.rand(400, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    rows += [f"{qi:.4f},{yi},{'AB'[i % 2]},s{i // 8}" for i, (qi, yi) in enumerate(zip(q, y))]
    path = tmp_path / "tokens.csv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "g.html"
    argv = ["evaluate", path, "--groups", "sentence", "--label", "tag", "--samples", "100"]
    code, stdout, err = run(capsys, *argv, "--json", "--html", out)
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["interval"] == "groups" and sorted(summary["per_label"]) == ["A", "B"]
    assert all(r["n"] == 200 for r in summary["per_label"].values())
    assert all(type(r["n"]) is int for r in summary["per_label"].values())
    page = Page(out.read_text())
    assert page.value("n") == "400 in 50 groups"
    assert "bootstrap over groups" in page.value("interval_kind")


def test_label_array_of_another_length_is_one_line(tmp_path, capsys):
    path = tmp_path / "p.npz"
    np.savez(path, probs=np.array([0.2, 0.9, 0.4]), target=np.array([0, 1, 0]), tag=np.array(["x"]))
    line = one_line_error(capsys, "evaluate", path, "--label", "tag")
    assert "1 values in --label 'tag' for 3 rows" in line


def test_label_without_html_prints_each_label(tagged, capsys):
    code, out, err = run(capsys, "evaluate", tagged, "--probs", "prob_a", "--label", "tag")
    assert code == 0, err
    assert "per label (3):" in out
    assert all(any(line.startswith(f"  {t}: CalibErr ") for line in out.splitlines()) for t in TAGS)


def _three_classes(tmp_path: Path, seed: int) -> Path:
    """A .npz of 600 items' class probabilities over 3 classes and labels drawn from them."""
    g = torch.Generator().manual_seed(seed)
    probs = (torch.randn(600, 3, generator=g) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    path = tmp_path / "mc.npz"
    np.savez(path, probs=probs.numpy(), target=target.numpy())
    return path


def test_a_classwise_run_keeps_each_bin_with_its_class(tmp_path, capsys) -> None:
    """The JSON and the page had pooled the classes' bins without saying whose."""
    path = _three_classes(tmp_path, seed=0)
    page = tmp_path / "cw.html"
    code, out, err = run(capsys, "evaluate", path, "--mode", "classwise", "--html", page,
                         "--samples", "20", "--json")  # fmt: skip
    assert code == 0, err
    per_bin = json.loads(out)["per_bin"]
    assert sorted({b["class"] for b in per_bin}) == [0, 1, 2]
    text = page.read_text()
    assert "<th>class</th><th>bin</th>" in text and "each class binned apart" in text


def test_a_page_of_several_figures_has_no_repeated_ids(tmp_path, capsys) -> None:
    """matplotlib numbers figure_1, axes_1, ... afresh in each figure."""
    path = tmp_path / "two.csv"
    g = torch.Generator().manual_seed(1)
    q = torch.rand(500, generator=g)
    y = torch.bernoulli(q, generator=g)
    rows = "".join(f"{a},{b},{int(c)}\n" for a, b, c in zip(q.sqrt().tolist(), q.tolist(), y))
    path.write_text("prob,prob_b,label\n" + rows)
    page = tmp_path / "cmp.html"
    code, _, err = run(capsys, "compare", path, "--probs", "prob", "--probs-b", "prob_b",
                       "--target", "label", "--html", page, "--samples", "20")  # fmt: skip
    assert code == 0, err
    ids = re.findall(r'\bid="([^"]+)"', page.read_text())
    assert len(ids) > 50 and len(ids) == len(set(ids))
    referenced = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', page.read_text()))
    assert referenced <= set(ids)  # every reference still finds its element


def test_prefixing_ids_leaves_the_figures_text_alone() -> None:
    from matplotlib.figure import Figure

    from calib_metrics.report import figure_svg

    fig = Figure(figsize=(2, 2))
    fig.add_subplot().set_title('id="figure_1" href="#axes_1"')
    svg = figure_svg(fig, "x")
    assert 'id="figure_1" href="#axes_1"' in svg.replace("&quot;", '"')  # the title's text
    assert 'id="x-figure_1"' in svg  # the element's id


def test_a_classwise_comparison_keeps_each_bin_with_its_class(tmp_path, capsys) -> None:
    path = _three_classes(tmp_path, seed=2)
    page = tmp_path / "cw.html"
    code, out, err = run(capsys, "compare", path, path, "--mode", "classwise", "--html", page,
                         "--samples", "20", "--json")  # fmt: skip
    assert code == 0, err
    summary = json.loads(out)
    assert sorted({b["class"] for b in summary["b"]["per_bin"]}) == [0, 1, 2]
    text = page.read_text()
    assert text.count("<th>class</th><th>bin</th>") == 2
    assert "each class binned apart" in text and "debiased; classwise" in text


def test_the_page_states_the_command_that_ran_and_the_settings_it_used(tmp_path, tagged, capsys):
    out = tmp_path / "compare.html"
    argv = ["compare", tagged, "--probs", "prob_a", "--probs-b", "prob_b", "--label", "tag"]
    code, _, err = run(capsys, *argv, "--samples", "50", "--html", out)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    # main's own arguments, not the test runner's sys.argv.
    typed = shlex.join(["calib-metrics", *map(str, argv), "--samples", "50", "--html", str(out)])
    shown = re.search(r"Command: <code>(.*?)</code>", text, re.DOTALL)
    assert shown is not None and html.unescape(shown.group(1)) == typed
    settings = dict(re.findall(r'data-key="setting-(\w+)"><th>[^<]*</th><td>([^<]*)</td>', text))
    assert (settings["correction"], settings["alpha"], settings["min_units"]) == (
        "holm",
        "0.05",
        "50",
    )


@pytest.mark.parametrize(
    ("options", "size"),
    [(("--binning", "uniform", "--n-bins", "7"), "n_bins"), ((), "bin_size")],
)
def test_the_json_settings_are_the_pages_settings_table(tmp_path, tagged, capsys, options, size):
    # --json had lacked n_bins and the seed the page lists, and under --binning uniform both
    # said bin_size "auto", an option that binning does not read.
    out = tmp_path / "report.html"
    summary = evaluate_json(capsys, tagged, out, "--seed", "3", "--groups", "tag", *options)
    settings = summary["settings"]
    assert settings["seed"] == 3 and settings["groups"] == "tag: 3 groups"
    unused = {"n_bins", "bin_size"} - {size}
    assert size in settings and not unused & set(settings), settings
    assert summary[size] == settings[size] and summary[unused.pop()] is None
    page = Page(out.read_text(encoding="utf-8"))
    shown = {k.removeprefix("setting-"): v[-1] for k, v in page.keys.items() if "setting-" in k}
    assert shown == {k: "—" if v is None else str(v) for k, v in settings.items()}


def test_compare_and_recalibrate_json_give_their_settings_too(tmp_path, tagged, capsys):
    code, out, err = run(capsys, "compare", tagged, "--probs", "prob_a", "--probs-b", "prob_b",
                         "--samples", "50", "--seed", "4", "--json")  # fmt: skip
    assert code == 0, err
    settings = json.loads(out)["settings"]
    assert (settings["seed"], settings["probs_b"], settings["samples"]) == (4, "prob_b", 50)
    code, out, err = run(capsys, "recalibrate", tagged, tagged, "--probs", "prob_a",
                         "--samples", "50", "--seed", "5", "--out", tmp_path / "r.csv",
                         "--json")  # fmt: skip
    assert code == 0, err
    settings = json.loads(out)["settings"]
    assert (settings["seed"], settings["method"]) == (5, "temperature")
    assert "n_bins" not in settings  # a temperature has no bins
    code, out, err = run(capsys, "recalibrate", tagged, tagged, "--probs", "prob_a",
                         "--method", "histogram", "--n-bins", "7", "--samples", "50",
                         "--out", tmp_path / "r.csv", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["settings"]["n_bins"] == 7
    assert "out" not in settings


def test_compare_json_carries_each_models_page_numbers(tmp_path, tagged, capsys):
    """The compare page showed both models' Brier split, smooth ECE, Spiegelhalter's test
    and bins, and the JSON of its run held only each CalibErr and interval. They are now
    evaluate's numbers for each model's column, under evaluate's keys."""
    out = tmp_path / "compare.html"
    argv = ["compare", tagged, "--probs", "prob_a", "--probs-b", "prob_b", "--samples", "100"]
    code, stdout, err = run(capsys, *argv, "--json", "--html", out)
    assert code == 0, err
    summary = json.loads(stdout)
    keys = ("brier", "calibration", "refinement", "within_bin", "smooth_ece")
    keys += ("spiegelhalter_z", "spiegelhalter_p", "per_bin")
    for name, column in (("a", "prob_a"), ("b", "prob_b")):
        one = evaluate_json(capsys, tagged, tmp_path / f"{name}.html", "--probs", column)
        for key in keys:
            assert summary[name][key] == one[key], (name, key)
    cells = {
        row[0]: row[1:] for row in _table_cells(out.read_text(encoding="utf-8"), "models-table")
    }
    assert cells["Brier score"] == [f"{summary[m]['brier']:.4f}" for m in "ab"]
    # Without --html the Brier split and the bins still come (the page's other measures
    # are computed for the page).
    code, stdout, err = run(capsys, *argv, "--json")
    plain = json.loads(stdout)
    assert plain["a"]["brier"] == summary["a"]["brier"] and "smooth_ece" not in plain["a"]
    assert plain["b"]["per_bin"] == summary["b"]["per_bin"]


def test_compare_page_names_the_estimator_the_summary_gives():
    """compare_page had named every comparison "adaptive bins of ⌈√N⌉, l2, debiased" (and
    its diagrams a debiased bootstrap), an l1 plug-in one of bins of 50 too."""
    from calib_metrics.functional import brier_decomposition, compare_calibration
    from calib_metrics.report import Measures, compare_page

    g = torch.Generator().manual_seed(0)
    q = torch.rand(4000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    measures = (Measures(brier_decomposition(q, y)),) * 2
    base = {"n": 4000, "resampled": "pairs", "confidence": 0.95, "samples": 50}
    options = {"bin_size": 50, "norm": "l1", "debias": False}
    comparison = compare_calibration(q.sqrt(), q, y, n_samples=50, generator=g, **options)
    page = Page(compare_page({**base, **options}, comparison, measures))
    assert page.value("estimator") == "adaptive bins of β = 50, l1"
    titles = "".join(page.text)
    assert "debiased pair bootstrap" not in titles and "pair bootstrap" in titles
    default = compare_calibration(q.sqrt(), q, y, n_samples=50, generator=g)
    page = Page(compare_page(base, default, measures))
    assert page.value("estimator") == "adaptive bins of ⌈√N⌉, l2, debiased"
    assert "debiased pair bootstrap" in "".join(page.text)


def test_items_note_takes_a_summary_without_a_mode() -> None:
    """A summary of items without "mode" (not among the page's required keys) had raised
    KeyError; it is one-vs-rest, as the page's other helpers take it."""
    from calib_metrics.report import items_note

    assert (
        items_note({"items": 100, "classes": 4, "n": 400})
        == " (100 items × 4 classes, one-vs-rest)"
    )


def test_a_label_whose_interval_and_p_disagree_is_named_under_the_chart() -> None:
    """The chart marks a label whose interval excludes 0, the table gives its p: with 100
    draws VERB's interval excluded 0 beside p = 0.06, a contradiction left unexplained."""
    from types import SimpleNamespace

    from calib_metrics.report import _edge_note
    from calib_metrics.wording import one_line_names

    def result(lower: float, upper: float, p: float) -> SimpleNamespace:
        return SimpleNamespace(lower=lower, upper=upper, p_value=p)

    per_label = {
        "VERB": result(-0.087, -0.001, 0.06),  # excludes 0, p above 0.05: the edge
        "NOUN": result(-0.02, 0.03, 0.6),  # both say no
        "DET": result(0.01, 0.05, 0.01),  # both say yes
        "X": result(float("nan"), float("nan"), float("nan")),  # no interval
    }
    summary = {"confidence": 0.95, "samples": 100}
    same = {k: k for k in per_label}
    note = _edge_note(per_label, list(per_label), same, summary)
    assert note.startswith(" At the edge: VERB, whose interval excludes 0 while its ")
    assert "100 draws" in note and "--samples" in note
    both = ["NOUN", "DET"]
    assert _edge_note({k: per_label[k] for k in both}, both, same, summary) == ""
    # A p of exactly 1 − confidence is at the level (1 − 0.9 is 0.09999999999999998).
    at_level = {7: result(-0.9, -0.01, 0.1)}  # an int label too
    assert _edge_note(at_level, [7], {7: "7"}, {"confidence": 0.9, "samples": 100}) == ""
    edge = _edge_note({7: result(-0.9, -0.01, 0.12)}, [7], {7: "7"}, summary)
    assert edge.startswith(" At the edge: 7,")
    # Named as the table names them: a line feed had stayed one (read as a space on the
    # page), and the typed a\nb had read as the line-feed label.
    names = ["a\nb", "a\\nb"]
    shown = dict(zip(names, one_line_names(names), strict=True))
    edgy = {k: result(-0.05, -0.01, 0.2) for k in names}
    assert _edge_note(edgy, names, shown, summary).startswith(" At the edge: a\\nb, a\\\\nb,")
