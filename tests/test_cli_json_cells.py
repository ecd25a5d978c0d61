"""What a probability cell may be: hard predictions (every value 0 or 1, in any format)
are warned about, a JSON row's lists nested deeper than its labels allow and an empty list
are refused with their line."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from cli_runs import one_line_error, run_cli

from calib_metrics.predictions import read_table

RNG = np.random.default_rng(3)
HARD = (RNG.random(200) < 0.5).astype(np.int64)
LABELS = (RNG.random(200) < 0.5).astype(np.int64)


def _hard_files(tmp_path) -> list:
    """The same 0/1 predictions as an integer .npy, a bool .npz, a CSV's text and JSON's
    booleans."""
    npy, npz = tmp_path / "n.npy", tmp_path / "b.npz"
    text, jsonl = tmp_path / "t.csv", tmp_path / "j.jsonl"
    np.save(npy, np.stack([HARD, LABELS], 1))
    np.savez(npz, probs=HARD.astype(bool), target=LABELS)
    text.write_text("prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(HARD, LABELS)))
    jsonl.write_text("".join(json.dumps({"prob": bool(q), "label": int(y)}) + "\n"
                             for q, y in zip(HARD, LABELS)))  # fmt: skip
    return [(npy, "column 0"), (npz, "probs"), (text, "prob"), (jsonl, "prob")]


def test_hard_predictions_are_warned_about_in_every_format(tmp_path, capsys) -> None:
    """An integer .npy of 0s and 1s had been scored without a word (CalibErr 0.5038), as a
    CSV's 0/1 text, a bool array and JSON's true/false (read as hard predictions, 1 and 0)
    are: each says so in one warning line, and is still scored, alike."""
    scores = set()
    for path, column in _hard_files(tmp_path):
        code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
        assert code == 0, err
        scores.add(json.loads(out)["calib_err"])
        said = (
            f"calib-metrics: warning: {path}: every value of column {column!r} is 0 or 1: hard "
            "predictions, not probabilities? They are scored as probabilities of 0 and 1; "
            "give the model's probabilities"
        )
        assert said in err.splitlines(), err
    assert len(scores) == 1


def test_probabilities_among_zeros_and_ones_are_not_warned_about(tmp_path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("prob,label\n0,0\n1,1\n0.5,1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_table(path).probs.tolist() == [0.0, 1.0, 0.5]
    # One-hot rows of a multiclass file are hard predictions too.
    path = tmp_path / "m.npz"
    np.savez(path, probs=np.eye(3)[[0, 2, 1]], target=np.array([0, 2, 2]))
    with pytest.warns(UserWarning, match="every value of column 'probs' is 0 or 1"):
        read_table(path)


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        (['{"prob": [[0.2, 0.8]], "label": 1}'], "line 1, column 'prob' nests lists 2 deep "
         "([[0.2, 0.8]]) beside one label in column 'label'"),
        (['{"prob": 0.4, "label": 0}', "", '{"prob": [[0.2, 0.8]], "label": 1}'],
         "line 3, column 'prob' holds a non-numeric value [[0.2, 0.8]]"),  # rows unalike
        (['{"prob": [[[0.2, 0.8]]], "label": [1]}'], "line 1, column 'prob' nests lists 3 deep "
         "([[[0.2, 0.8]]]) beside a list of labels in column 'label'"),
        (['{"prob": null, "label": -100}', '{"prob": [[0.2, 0.8]], "label": 1}'],
         "line 2, column 'prob' nests lists 2 deep"),
    ],
)  # fmt: skip
def test_lists_nested_past_the_labels_are_refused(tmp_path, capsys, rows, said) -> None:
    """``[[0.2, 0.8]]`` beside the label 1 had been read as one item of 2 classes ("N = 2
    pairs (1 items × 2 classes, one-vs-rest)")."""
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", path, "--ignore-index", "-100")
    assert f"{path}: {said}" in line
    if "nests" in said:
        assert line.endswith("give each label one probability, or a list of C for C classes")
        with pytest.raises(ValueError, match="nests lists"):
            read_table(path, ignore_index=-100)


def test_a_json_document_nested_past_its_labels_is_refused(tmp_path, capsys) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"prob": [[[0.2, 0.8]], [[0.5, 0.5]]], "label": [1, 0]}))
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: row index 0, column 'prob' nests lists 2 deep ([[0.2, 0.8]])" in line


def test_lists_as_deep_as_the_labels_allow_are_read(tmp_path, capsys) -> None:
    """A sentence's rows of class probabilities beside its list of labels; one item is
    counted as such."""
    path = tmp_path / "p.jsonl"
    path.write_text('{"prob": [[0.2, 0.8], [0.6, 0.4]], "label": [1, 0]}\n')
    assert read_table(path).probs.tolist() == [0.2, 0.8, 0.6, 0.4]
    path.write_text('{"prob": [0.2, 0.8], "label": 1}\n')
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20")
    assert code == 0, err
    assert out.startswith(f"{path}: N = 2 pairs (1 item × 2 classes, one-vs-rest)")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"prob": [], "label": 0}\n', "line 1, column 'prob' holds 0 values (an empty list): "
         "every row needs its probability, or a list of C for C classes"),
        ('\n{"prob": [], "label": []}\n', "line 2, column 'prob' holds 0 values (an empty list)"),
        ('{"prob": [], "label": 0}\n{"prob": [0.3], "label": 1}\n',
         "line 2, column 'prob' holds 1 value where line 1 holds 0"),  # as before
    ],
)  # fmt: skip
def test_a_row_of_an_empty_list_is_named(tmp_path, capsys, text, said) -> None:
    """A file of one row whose list is empty had been told "no rows"."""
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    assert f"{path}: {said}" in one_line_error(capsys, "evaluate", path)


def test_a_file_without_rows_still_says_so(tmp_path, capsys) -> None:
    path = tmp_path / "p.pt"
    torch.save({"probs": torch.zeros(0), "target": torch.zeros(0)}, path)
    assert one_line_error(capsys, "evaluate", path).endswith(f"{path}: no rows")


@pytest.mark.parametrize(
    "first, second, shown",
    [
        ("0.5", "1e400", "1e400"),
        ("0.5", "-1E999", "-1E999"),
        ("0.5", "Infinity", "Infinity"),
        ("[0.5, 0.5]", "[0.2, 1e400]", "1e400"),  # a row of two classes' probabilities
    ],
)
def test_a_json_number_too_large_is_named_as_written(tmp_path, capsys, first, second, shown):
    """``1e400`` had been named "holds inf" where a CSV's is named as written."""
    rows = [f'{{"prob": {first}, "label": 1}}', f'{{"prob": {second}, "label": 0}}']
    lines = tmp_path / "p.jsonl"
    lines.write_text("\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", lines)
    assert f"p.jsonl: line 2, column 'prob' holds {shown}, not a probability" in line
    document = tmp_path / "p.json"
    document.write_text("[" + ", ".join(rows) + "]")
    line = one_line_error(capsys, "evaluate", document)
    assert f"p.json: row index 1, column 'prob' holds {shown}, not a probability" in line
