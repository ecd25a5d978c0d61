"""A JSON-lines file whose rows hold different numbers of class probabilities is refused
with the row that differs, not with the first row called "non-numeric" (once:
``line 1, column 'probs' holds a non-numeric value [0.5, 0.5]``)."""

from __future__ import annotations

import json

from calib_metrics import cli


def test_ragged_probability_lists_name_the_row_that_differs(tmp_path, capsys) -> None:
    rows = [{"probs": [0.5, 0.5], "target": 1}, {"probs": [0.5, 0.5], "target": 0}]
    rows.append({"probs": [0.2, 0.3, 0.5], "target": 2})
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["evaluate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "line 3" in err and "3 values" in err and "line 1 holds 2" in err
    assert "non-numeric" not in err


def test_a_number_among_lists_is_named_too(tmp_path, capsys) -> None:
    rows = [{"probs": [0.5, 0.5], "target": 1}, {"probs": 0.5, "target": 0}]
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["evaluate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "1 value" in err and "line 1 holds 2" in err
