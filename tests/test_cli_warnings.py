"""The library's warnings (too few bins, too few resampling units) reach the command's user
as one ``calib-metrics: warning: ...`` line on stderr each, never as Python's
``file:line: UserWarning`` text, and leave the exit code as it was."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from calib_metrics.cli import main

FEW_BINS = "calib-metrics: warning: only 3 bins from 12 pairs (auto bins); "
# Without the library function's name, which the command's user never called.
FEW_UNITS = "calib-metrics: warning: 4 resampling units (groups)"


def _write(path: Path, n: int, seed: int = 0) -> Path:
    """n rows of (prob, prob_b, label, sentence) in sentences of three."""
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    rows = [f"{a:.4f},{a**2:.4f},{b},s{i // 3}" for i, (a, b) in enumerate(zip(q, y.tolist()))]
    path.write_text("prob,prob_b,label,sentence\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return _write(tmp_path / "tiny.csv", 12)


def _run(capsys, *argv) -> tuple[int, str, list[str]]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def _no_python_warning_text(lines: list[str]) -> None:
    for line in lines:
        assert line.startswith("calib-metrics: warning: "), line
        assert "UserWarning" not in line and ".py:" not in line, line


def test_evaluate_warns_in_one_line_on_a_tiny_file(tiny, capsys) -> None:
    code, out, err = _run(capsys, "evaluate", tiny, "--samples", "50")
    assert code == 0 and "N = 12 pairs, 3 adaptive bins" in out
    assert len(err) == 1 and err[0].startswith(FEW_BINS), err
    assert err[0].endswith("measure more pairs (there are about sqrt(N) auto bins)")
    code, _, err = _run(capsys, "evaluate", tiny, "--samples", "50", "--bin-size", "2")
    assert code == 0 and len(err) == 1 and "only 6 bins from 12 pairs (--bin-size 2)" in err[0]
    # The command's options, not the library's arguments (it had said "bin_size='auto'").
    code, _, err = _run(capsys, "evaluate", tiny, "--samples", "50", "--paper")
    assert code == 0 and len(err) == 1 and "only 1 bin from 12 pairs" in err[0]
    assert "use --bin-size auto or a --bin-size of at most 1" in err[0]
    code, _, err = _run(capsys, "evaluate", tiny, "--samples", "50", "--binning", "uniform")
    assert code == 0 and "lower --n-bins (now 15) or use --binning adaptive" in err[0]
    assert "n_bins" not in err[0] and "binning=" not in err[0]
    two_bins = ("--binning", "uniform", "--n-bins", "2")
    code, _, err = _run(capsys, "evaluate", tiny, "--samples", "50", *two_bins)
    assert code == 0 and "only 2 bins from 12 pairs (--n-bins 2)" in err[0]
    assert "raise --n-bins or use --binning adaptive" in err[0]


def test_evaluate_html_report_warns_too(tiny, tmp_path: Path, capsys) -> None:
    html = tmp_path / "report.html"
    code, _, err = _run(capsys, "evaluate", tiny, "--samples", "50", "--html", html)
    assert code == 0 and html.is_file()
    assert len(err) == 1 and err[0].startswith(FEW_BINS)


def test_compare_warns_about_bins_and_resampling_units(tiny, tmp_path: Path, capsys) -> None:
    argv = ("compare", tiny, "--probs", "prob", "--probs-b", "prob_b", "--samples", "50")
    code, out, err = _run(capsys, *argv)
    assert code == 0 and "N = 12 items" in out
    assert len(err) == 1 and err[0].startswith(FEW_BINS)
    assert "--bin-size" not in err[0]  # compare has no such option to name
    html = tmp_path / "compare.html"
    code, out, err = _run(capsys, *argv, "--groups", "sentence", "--html", html)
    assert code == 0 and html.is_file()
    assert "no interval or p-value (fewer than 10 resampled groups)" in out
    _no_python_warning_text(err)
    assert len(err) == 3 and err[0].startswith(FEW_UNITS) and err[1].startswith(FEW_BINS)
    # The report's Spiegelhalter test, cluster-robust over the 4 groups, says how little
    # 4 groups can show.
    assert "Spiegelhalter's test: 4 groups; its cluster-robust z is at most √4" in err[2]


def test_classwise_warns_about_each_class_bins(tmp_path: Path, capsys) -> None:
    import numpy as np

    g = torch.Generator().manual_seed(0)
    probs = torch.rand(30, 3, generator=g, dtype=torch.float64).softmax(-1)
    path = tmp_path / "three.npz"
    np.savez(path, probs=probs.numpy(), target=(torch.arange(30) % 3).numpy())
    code, _, err = _run(capsys, "evaluate", path, "--mode", "classwise", "--samples", "20")
    # Pooled, the three classes make 15 bins; each class alone has 5 (of ⌈√30⌉ = 6 pairs).
    assert code == 0 and len(err) == 1 and "only 5 bins from 30 pairs" in err[0]


def test_enough_pairs_give_no_warning(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path / "enough.csv", 400)
    code, _, err = _run(capsys, "evaluate", path, "--samples", "50")
    assert code == 0 and err == []
    code, _, err = _run(capsys, "compare", path, "--probs-b", "prob_b", "--samples", "50")
    assert code == 0 and err == []


def test_the_real_process_prints_no_python_warning(tiny) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "calib_metrics.cli", "compare", str(tiny), "--probs-b",
         "prob_b", "--groups", "--samples", "50"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    _no_python_warning_text(lines)
    assert len(lines) == 2 and lines[0].startswith(FEW_UNITS) and lines[1].startswith(FEW_BINS)


def test_evaluate_json_of_a_tiny_file_is_strict_json(tmp_path: Path, capsys) -> None:
    """Fewer than 10 pairs: the interval's NaN ends are JSON null, not the bare NaN that
    strict parsers (jq, JavaScript's JSON.parse) refuse."""
    import json

    path = _write(tmp_path / "five.csv", 5)
    code, out, err = _run(capsys, "evaluate", path, "--samples", "50", "--json")
    assert code == 0 and len(err) == 2
    _no_python_warning_text(err)

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    summary = json.loads(out, parse_constant=refuse)
    assert summary["n"] == 5 and summary["calib_err"] > 0
    assert summary["lower"] is None and summary["upper"] is None and summary["std"] is None


def _apart_of(n_classes: int) -> str:
    from calib_metrics.cli import _in_command_terms
    from calib_metrics.functional.multiclass import apart_message

    return f"calib-metrics: warning: {_in_command_terms(apart_message(n_classes))}"


_APART_OF_THREE = _apart_of(3)


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_class_probabilities_that_do_not_sum_to_one_are_named(tmp_path: Path, capsys, command):
    """A multiclass file whose rows do not sum to 1 (a column misread as a class, or scores
    of no one distribution) runs, with one warning line naming the file and a row."""
    import numpy as np

    g = np.random.default_rng(0)
    probs = g.dirichlet([1.0, 1.0, 1.0], size=400)
    target = np.array([g.choice(3, p=row) for row in probs])
    good, bad = tmp_path / "good.npz", tmp_path / "bad.npz"
    np.savez(good, probs=probs, target=target)
    probs[::2] *= 0.8  # every other row sums to 0.8
    np.savez(bad, probs=probs, target=target)
    extra = [good] if command == "compare" else []
    code, _, err = _run(capsys, command, bad, *extra, "--samples", "20")
    assert code == 0
    # evaluate's interval draws 3 classes' pairs apart, and says so (compare draws items).
    apart = [] if command == "compare" else [_APART_OF_THREE]
    assert err == [
        f"calib-metrics: warning: {bad}: 200 of 400 rows of class probabilities do not sum to "
        "1 (row index 0 sums to 0.8); each column is read as one class's probability as it "
        "is — check that no other column was read as a class",
        *apart,
    ]
    code, _, err = _run(capsys, "evaluate", good, "--samples", "20")
    assert code == 0 and err == [_APART_OF_THREE]


def test_rows_off_by_the_tolerance_in_decimals_are_not_warned_about(tmp_path: Path, capsys):
    """Probabilities written with 2 decimals sum to 0.99 or 1.01 in decimals (0.98999… in
    binary): within the documented 0.01, so no warning (it warned on such rows)."""
    rows = [[0.47, 0.11, 0.24, 0.17], [0.26, 0.25, 0.25, 0.25], [0.5, 0.2, 0.2, 0.1]] * 100
    path = tmp_path / "rounded.jsonl"
    path.write_text("".join(f'{{"probs": {r}, "target": {i % 4}}}\n' for i, r in enumerate(rows)))
    code, _, err = _run(capsys, "evaluate", path, "--samples", "20")
    # No row-sum warning; the one line is that 4 classes' pairs are drawn apart.
    assert code == 0 and err == [_apart_of(4)]


def test_matplotlib_logged_warnings_are_the_commands_warning_lines(tmp_path: Path) -> None:
    # An .eps figure: matplotlib logs that PostScript draws the transparent interval bands
    # opaque; its bare line had reached stderr beside the command's prefixed ones.
    path = _write(tmp_path / "pairs.csv", 400)
    done = subprocess.run(
        [sys.executable, "-m", "calib_metrics.cli", "evaluate", str(path), "--samples", "50",
         "--plot", str(tmp_path / "diagram.eps")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    _no_python_warning_text(lines)
    assert lines == [
        "calib-metrics: warning: matplotlib: The PostScript backend does not support "
        "transparency; partially transparent artists will be rendered opaque."
    ]


def test_missing_glyphs_are_one_warning_said_to_be_matplotlibs_and_the_figures(
    tmp_path, capsys, monkeypatch
) -> None:
    """A label of CJK characters draws, where no font has them, matplotlib's "Glyph 21517
    missing from font(s)" warning once per character: 12 Chinese labels had said 15
    lines, burying the other warnings. They are one line, matplotlib's, listing the
    characters and saying that only the figures' drawing is touched."""
    import warnings

    from calib_metrics import plot

    drawn = plot.reliability_diagram

    def lacking_glyphs(*args, **kwargs):
        # What matplotlib's Agg backend warns (at the caller's line) for such a label; 3.7
        # named no font.
        for code, name in ((21517, "540D"), (35789, "8BCD"), (21517, "540D")):
            warnings.warn(f"Glyph {code} (\\N{{CJK UNIFIED IDEOGRAPH-{name}}}) missing from "
                          "font(s) DejaVu Sans.", UserWarning, stacklevel=2)  # fmt: skip
        warnings.warn("Glyph 20195 missing from current font.", UserWarning, stacklevel=2)
        return drawn(*args, **kwargs)

    monkeypatch.setattr(plot, "reliability_diagram", lacking_glyphs)
    path = _write(tmp_path / "nouns.csv", 500)  # an ASCII name: no real glyph is missing
    assert main(["evaluate", str(path), "--plot", str(tmp_path / "d.png")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "matplotlib" in line]
    assert lines == [
        "calib-metrics: warning: matplotlib: 3 characters of the figures' titles or labels "
        "are missing from font(s) DejaVu Sans: \u540d \u8bcd \u4ee3; a figure file draws "
        "each as a box (an HTML page's figures are drawn in the browser's fonts); the "
        "numbers are not touched"
    ]


def test_an_html_page_claims_no_boxes_for_characters_its_browser_draws(tmp_path, capsys) -> None:
    """The page's figures keep their text as text, which the browser draws in its own
    fonts: matplotlib's missing glyphs (this machine's fonts lack Chinese) had said
    "drawn as a box" once per character, on stderr and in the page's Warnings."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(600, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    tags = ["名词", "动词", "形容词"]  # matplotlib's own font, DejaVu Sans, has none of them
    rows = [f"{p!r},{int(t)},{tags[i % 3]}" for i, (p, t) in enumerate(zip(q.tolist(), y))]
    path = tmp_path / "zh.csv"
    path.write_text("prob,label,tag\n" + "\n".join(rows) + "\n", encoding="utf-8")
    page = tmp_path / "zh.html"
    argv = ["evaluate", path, "--label", "tag", "--samples", "20", "--html", page]
    code, _, err = _run(capsys, *argv)
    assert code == 0 and not [line for line in err if "matplotlib" in line], err
    text = page.read_text(encoding="utf-8")
    assert ">名词</text>" in text and 'id="warnings"' not in text
