"""``calib-metrics demo``'s table of results: a note below it says why its Brier and
refinement columns need not add up.

A probe of 2026-12-02 found ``demo --quick``'s calibrated rows with refinement above
Brier (0.0936 > 0.0933), by the negative within-bin term the table does not show, and no
word of it. The note is a line below the table: the README quotes the rows as written.
"""

from __future__ import annotations

import torch

from calib_metrics.paper import demo


def _results(bin_size: int) -> dict:
    estimator = {"setting": "s", "n": 1000, "reps": 2, "estimator": "paper", "truth": 0.0}
    estimator |= {"mean": 0.01, "bias": 0.01, "rmse": 0.02}
    return {"n": 20000, "bin_size": bin_size, "samples": 20, "estimators": [estimator]}


def test_a_note_below_the_table_says_brier_and_refinement_need_not_add_up(tmp_path, capsys):
    g = torch.Generator().manual_seed(0)
    result, row, _ = demo._setting_row("calibrated, Beta(0.3, 0.3)", 0.3, 0.3, 0, 4000, 400, 20, g)
    results = _results(400) | {"figures": [], "seconds": 1.0}
    demo._write(results, [row], tmp_path)
    lines = (tmp_path / "results.md").read_text().splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("| calibrated")]
    assert len(rows) == 1 and lines[rows[0]].endswith(
        f"| {result['brier']:.4f} | {result['refinement']:.4f} |"
    )  # the row as before: no column added
    blank, note = lines[rows[0] + 1 : rows[0] + 3]
    assert blank == "" and note.startswith("Brier = calibration + refinement + within-bin, in ")
    assert "bins of 400" in note and "need not equal Brier, and refinement may exceed it." in note
    # The note calls the term left out the paper's CalibErr²: the same bins, plug-in.
    assert abs(result["calibration"] - result["error"] ** 2) < 1e-12
    assert note in capsys.readouterr().out  # the printed table has it too


def test_the_estimator_table_says_what_its_paper_rows_binned(tmp_path, capsys):
    """Its "paper" rows bin 5000 pairs whatever --bin-size, while the table above it
    names the demo's bin size: at --quick --bin-size 200 a reader took the N = 1000
    row's 0.0061 (one bin) for bins of 200."""
    demo._write(_results(200) | {"figures": [], "seconds": 1.0}, [], tmp_path)
    said = "paper: plug-in, adaptive bins of 5000 pairs (one bin at N = 1000), whatever --bin-size"
    assert said in (tmp_path / "results.md").read_text()
    assert said in capsys.readouterr().out


def test_too_few_pairs_for_algorithm_2_are_not_called_resampled():
    """--n 5 had printed the paper column's "no interval (fewer than 10 resampled
    units)": Algorithm 2 resamples no units (it draws normal values per bin)."""
    g = torch.Generator().manual_seed(0)
    _, row, _ = demo._setting_row("k=0.1, Beta(2, 5)", 2.0, 5.0, 0.1, 5, 5, 20, g)
    assert row[2].endswith(", no interval (fewer than 10 pairs)")
    assert row[3].endswith(", no interval (fewer than 10 resampled pairs)")
