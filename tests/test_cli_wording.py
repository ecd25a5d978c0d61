"""Small words the command line got wrong: "1 pairs", a NaN interval printed as numbers
by compare, and an analytic p-value that underflowed printed as "p = 0"."""

from __future__ import annotations

from pathlib import Path

import pytest

from calib_metrics.cli import main


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_one_pair_is_singular(tmp_path: Path, capsys):
    path = tmp_path / "one.csv"
    path.write_text("prob,label\n0.3,1\n")
    code, out, err = _run(capsys, "evaluate", path, "--samples", "20")
    assert code == 0 and "N = 1 pair, 1 adaptive bin" in out
    assert "from 1 pair " in err


def test_compare_counts_one_item_in_the_singular(tmp_path: Path, capsys):
    # compare had printed "N = 1 items".
    path = tmp_path / "one.csv"
    path.write_text("prob,label\n0.3,1\n")
    code, out, _ = _run(capsys, "compare", path, path, "--samples", "20")
    assert code == 0 and out.startswith("N = 1 item, ")


def test_compare_over_too_few_items_says_there_is_no_interval(tmp_path: Path, capsys):
    path = tmp_path / "five.csv"
    rows = ["0.3,0.2,1", "0.6,0.5,0", "0.2,0.1,0", "0.9,0.8,1", "0.5,0.4,1"]
    path.write_text("prob,prob_b,label\n" + "\n".join(rows) + "\n")
    code, out, _ = _run(capsys, "compare", path, "--probs-b", "prob_b", "--samples", "20")
    line = next(x for x in out.splitlines() if "a - b" in x)
    assert code == 0 and "nan" not in line
    assert line.endswith("no interval or p-value (fewer than 10 resampled pairs)")


def test_an_underflowing_spiegelhalter_p_is_a_bound(tmp_path: Path, capsys):
    path = tmp_path / "sure.csv"
    path.write_text("prob,label\n" + "0.4,1\n0.3,1\n" * 10000)  # z ≈ 230: p underflows to 0
    code, out, _ = _run(capsys, "evaluate", path, "--spiegelhalter", "--samples", "20")
    assert code == 0 and "two-sided p < 1e-300" in out and "p = 0 " not in out


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("one_vs_rest", "N = 600 pairs (120 items × 5 classes, one-vs-rest)"),
        ("top_label", "N = 120 pairs (one top-label pair per item, of 5 classes)"),
    ],
)
def test_a_multiclass_file_s_pairs_are_told_from_its_items(tmp_path: Path, capsys, mode, said):
    """ "N = 600 pairs" of 120 items had been left to the reader to explain."""
    import numpy as np

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(5), size=120)
    path = tmp_path / "mc.npz"
    np.savez(path, probs=probs, target=rng.integers(0, 5, 120))
    assert main(["evaluate", str(path), "--mode", mode, "--samples", "20"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{path}: {said}, ") and first.endswith(" adaptive bins")
    page = tmp_path / "page.html"
    assert (
        main(["evaluate", str(path), "--mode", mode, "--samples", "20", "--html", str(page)]) == 0
    )
    assert said.split(" = ", 1)[1].replace(" pairs", "", 1) in page.read_text()  # its N row


@pytest.mark.parametrize("command", ["compare", "recalibrate", "demo"])
def test_help_shows_no_docstring_markup(capsys, command):
    """``calib-metrics compare`` and :func:`...` had been shown as written."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = capsys.readouterr().out
    assert "``" not in shown and ":func:" not in shown and ":mod:" not in shown


def test_a_label_column_of_words_says_what_labels_are(tmp_path: Path, capsys):
    path = tmp_path / "words.csv"
    path.write_text("prob,label\n0.2,neg\n0.8,pos\n")
    assert main(["evaluate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("holds a non-numeric value 'neg'; labels are 0/1 (or True/False), "
                        "or class ids 0..C-1 beside C probabilities per row")  # fmt: skip
