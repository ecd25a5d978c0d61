"""``reproduce pos``'s console summary words the interval count as results.md does: it had
printed "(significant 3)" for three disjoint intervals, right above the paired test that
called none of the tags."""

from __future__ import annotations

from pathlib import Path

from calib_metrics.paper import pos


def test_disjoint_intervals_are_not_called_significant(capsys) -> None:
    results = {
        "models": {},
        "comparisons": {"CRF vs HMM, tags": {"lower_error": 28, "of": 43, "significant": 3}},
        "paired": {},
    }
    pos._print_summary(results, Path("out"))
    printed = capsys.readouterr().out
    assert "CRF vs HMM, tags: better on 28/43 (non-overlapping intervals on 3)" in printed
    assert "significant" not in printed


def test_an_unmatched_crf_is_said_to_be_one() -> None:
    selection = {"reached": False, "target": 0.779, "dev_accuracy_by_size": {400: 0.734}}
    assert "not matched" in pos._unmatched_note(selection)
    assert pos._unmatched_note({**selection, "reached": True}) == ""
