"""``compare`` pairs two files' rows by an item-id column named by ``--id``, and by
position otherwise. Rows paired by position only had let model b's file, shuffled within
each label, pass every check: the same model on the same items showed a difference of 0
with the interval [-0.088, +0.087]. Without ``--id`` nothing changes: an ``id`` column
may number tokens, sentences or each file's own rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_runs import one_line_error, run_cli

N = 400


def _items(seed: int = 0):
    """Model a's and b's probabilities and the labels of N items, and a permutation of
    the items within each label (b's file order: the same label sequence as a's)."""
    rng = np.random.default_rng(seed)
    q = rng.random(N)
    y = (rng.random(N) < q).astype(int)
    order = np.arange(N)
    for label in (0, 1):
        rows = np.flatnonzero(y == label)
        order[rows] = rng.permutation(rows)
    return q, q**1.5, y, order


def _write(path: Path, ids, q, y, extra: dict | None = None, id_name: str = "id") -> Path:
    extra = extra or {}
    names = [id_name, "prob", "label", *extra]
    rows = zip(ids, q, y, *extra.values())
    path.write_text(",".join(names) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


def _compare(capsys, *argv) -> dict:
    code, out, err = run_cli(capsys, "compare", *argv, "--samples", "200", "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def files(tmp_path: Path):
    """a.csv in item order; b.csv (model b) shuffled within each label; b_aligned.csv
    (model b) in a's order, the pairing the ids give."""
    q, qb, y, order = _items()
    a = _write(tmp_path / "a.csv", range(N), q, y)
    b = _write(tmp_path / "b.csv", order, qb[order], y[order])
    aligned = _write(tmp_path / "b_aligned.csv", range(N), qb, y)
    return a, b, aligned


NUMBERS = ("difference", "lower", "upper", "p_value")


def test_rows_are_paired_by_their_ids(files, capsys) -> None:
    """Named by --id: b's rows are put in a's order."""
    a, b, aligned = files
    by_ids = _compare(capsys, a, b, "--id", "id")
    by_position = _compare(capsys, a, aligned)
    assert {k: by_ids[k] for k in NUMBERS} == {k: by_position[k] for k in NUMBERS}
    assert by_ids["b"]["calib_err"] == by_position["b"]["calib_err"]
    assert by_ids["id_columns"] == ["id", "id"] and by_position["id_columns"] is None
    assert by_ids["settings"]["id"] == "id" and by_position["settings"]["id"] is None


def test_the_same_model_in_another_order_differs_by_exactly_nothing(tmp_path, capsys) -> None:
    q, _, y, order = _items()
    a = _write(tmp_path / "a.csv", range(N), q, y)
    b = _write(tmp_path / "b.csv", order, q[order], y[order])
    result = _compare(capsys, a, b, "--id", "id")
    assert (result["difference"], result["lower"], result["upper"]) == (0.0, 0.0, 0.0)
    # Without --id the rows pair by position, as before: the shuffled rows pass the label check.
    positional = _compare(capsys, a, b)
    assert positional["upper"] - positional["lower"] > 0.05


def test_the_text_output_says_how_the_rows_were_paired(files, capsys) -> None:
    a, b, _ = files
    code, out, err = run_cli(capsys, "compare", a, b, "--samples", "50", "--id", "id")
    assert code == 0, err
    assert out.splitlines()[0].startswith("N = 400 items paired by 'id', ")
    code, out, err = run_cli(capsys, "compare", a, b, "--samples", "50")
    assert code == 0, err
    assert out.splitlines()[0].startswith("N = 400 items, ")


def test_ids_pair_rows_of_two_formats_and_two_names(tmp_path, capsys) -> None:
    """A CSV's 7.0 and a JSON file's 7 are one id."""
    q, qb, y, order = _items()
    a = _write(tmp_path / "a.csv", [f"{i}.0" for i in range(N)], q, y)
    b = tmp_path / "b.jsonl"
    b.write_text(
        "".join(
            json.dumps({"id": int(i), "prob": float(qb[i]), "label": int(y[i])}) + "\n"
            for i in order
        )
    )
    aligned = _write(tmp_path / "b_aligned.csv", range(N), qb, y)
    by_ids = _compare(capsys, a, b, "--id", "id")
    by_position = _compare(capsys, a, aligned)
    assert {k: by_ids[k] for k in NUMBERS} == {k: by_position[k] for k in NUMBERS}
    assert by_ids["id_columns"] == ["id", "id"]


def test_labels_and_groups_of_b_follow_its_rows(tmp_path, capsys) -> None:
    """b's --label and --groups columns are read in the order the ids give."""
    q, qb, y, order = _items()
    tags = np.array(["NN", "VB", "DT"])[np.arange(N) % 3]
    sentences = np.arange(N) // 4
    a = _write(tmp_path / "a.csv", range(N), q, y, {"sent": sentences})
    b = _write(
        tmp_path / "b.csv",
        order,
        qb[order],
        y[order],
        {"tag": tags[order], "sent": sentences[order]},
    )
    aligned = _write(tmp_path / "b_aligned.csv", range(N), qb, y, {"tag": tags, "sent": sentences})
    options = ["--label", "tag", "--groups", "sent"]
    by_ids = _compare(capsys, a, b, *options, "--id", "id")
    by_position = _compare(capsys, a, aligned, *options)
    assert by_ids["per_label"] == by_position["per_label"]
    assert by_ids["groups"] == by_position["groups"] == N // 4
    assert {k: by_ids[k] for k in NUMBERS} == {k: by_position[k] for k in NUMBERS}


def test_padding_rows_are_left_out_of_the_pairing(tmp_path, capsys) -> None:
    """With --ignore-index, the ids of the rows kept pair them; a padding row's id need
    not be in the other file."""
    q, qb, y, order = _items()
    a = _write(tmp_path / "a.csv", [*range(N), "pad-a"], [*q, "nan"], [*y, -100])
    b = _write(tmp_path / "b.csv", ["pad-b", *order], ["", *qb[order]], [-100, *y[order]])
    aligned = _write(tmp_path / "b_aligned.csv", range(N), qb, y)
    by_ids = _compare(capsys, a, b, "--ignore-index", "-100", "--id", "id")
    by_position = _compare(capsys, a, aligned, "--ignore-index", "-100")
    assert {k: by_ids[k] for k in NUMBERS} == {k: by_position[k] for k in NUMBERS}


def _b_with(files, tmp_path: Path, edit) -> Path:
    """b.csv with its data rows (lists of cells) edited by ``edit``."""
    _, b, _ = files
    header, *rows = b.read_text().splitlines()
    rows = edit([r.split(",") for r in rows])
    path = tmp_path / "edited.csv"
    path.write_text("\n".join([header, *(",".join(r) for r in rows)]) + "\n")
    return path


def test_a_repeated_id_is_named_with_both_rows(files, tmp_path, capsys) -> None:
    a, _, _ = files

    def repeat(rows):
        rows[9][0] = rows[3][0]
        return rows

    b = _b_with(files, tmp_path, repeat)
    line = one_line_error(capsys, "compare", a, b, "--id", "id")
    first = b.read_text().splitlines()[4].split(",")[0]
    assert f"edited.csv: line 11, column 'id' repeats item id '{first}' of line 5" in line


def test_an_id_of_a_missing_from_b_is_named(files, tmp_path, capsys) -> None:
    a, _, _ = files
    b = _b_with(files, tmp_path, lambda rows: [r for r in rows if r[0] != "17"])
    line = one_line_error(capsys, "compare", a, b, "--id", "id")
    assert "edited.csv: no row with item id '17' (column 'id'), which line 19 of" in line
    assert "the two files must hold the same items" in line


def test_an_id_of_b_missing_from_a_is_named(files, tmp_path, capsys) -> None:
    a, _, _ = files
    b = _b_with(files, tmp_path, lambda rows: [*rows, ["9999", "0.5", "1"]])
    line = one_line_error(capsys, "compare", a, b, "--id", "id")
    assert f"edited.csv: line {N + 2}, column 'id' holds item id '9999', which" in line


def test_a_missing_id_is_named(files, tmp_path, capsys) -> None:
    a, _, _ = files

    def blank(rows):
        rows[6][0] = ""
        return rows

    line = one_line_error(capsys, "compare", a, _b_with(files, tmp_path, blank), "--id", "id")
    assert "edited.csv: line 8, column 'id' has a missing item id (an empty cell)" in line


def test_id_given_for_a_file_without_the_column_is_refused(files, tmp_path, capsys) -> None:
    a, _, aligned = files
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join(",".join(r.split(",")[1:]) for r in aligned.read_text().split()))
    assert "plain.csv: no column 'id'" in one_line_error(capsys, "compare", a, plain, "--id", "id")
    # Without --id, an id column in one file only pairs nothing: rows pair by position.
    assert _compare(capsys, a, plain)["id_columns"] is None


def test_id_with_one_file_is_refused(files, capsys) -> None:
    a, _, _ = files
    line = one_line_error(capsys, "compare", a, "--probs-b", "prob", "--id", "id")
    assert "--id pairs the rows of two files" in line


# -- without --id: by position, as before any id pairing ---------------------------------------


def _positional_cases(tmp_path: Path):
    """Pairs of files whose id-like columns are no item ids of both (two usual names in a
    file, a sentence id repeated per token, each file's own row numbers), and the same
    files without those columns."""
    q, qb, y, _ = _items()
    rows = np.arange(N)
    cases = {
        "two": ({"id": rows, "uid": rows}, {"id": rows, "uid": rows}),
        "token": ({"id": rows // 5}, {"id": rows // 5}),
        "row numbers": ({"id": rows}, {"id": rows + 1}),
    }
    for name, (ids_a, ids_b) in cases.items():
        files = []
        for model, probs, ids in (("a", q, ids_a), ("b", qb, ids_b)):
            path = tmp_path / f"{name}_{model}.csv"
            first, *rest = ids
            _write(path, ids[first], probs, y, {k: ids[k] for k in rest}, id_name=first)
            files.append(path)
        plain = [_write(tmp_path / f"{name}_{m}_plain.csv", [0] * N, p, y, id_name="x")
                 for m, p in (("a", q), ("b", qb))]  # fmt: skip
        yield name, files, plain


def test_without_id_rows_pair_by_position_whatever_id_columns_the_files_have(
    tmp_path, capsys
) -> None:
    """Two usual id names, a sentence id on each token, per-file row numbers: no new
    refusal, no pairing by the column, the numbers of the files without it."""
    for name, files, plain in _positional_cases(tmp_path):
        code, out, err = run_cli(capsys, "compare", *files, "--samples", "200", "--json")
        assert code == 0, (name, err)
        result = json.loads(out)
        assert result["id_columns"] is None, name
        expected = _compare(capsys, *plain)
        assert {k: result[k] for k in NUMBERS} == {k: expected[k] for k in NUMBERS}, name


def test_id_needs_a_column_name(files, capsys) -> None:
    """``--id`` without a value had found the column by its usual name, and ``--id a.csv
    b.csv`` took the file for the column's name."""
    a, b, _ = files
    code, _, err = run_cli(capsys, "compare", a, b, "--id")
    assert code == 2 and "--id: expected one argument" in err


def test_one_id_per_sequence_beside_token_labels_is_refused(tmp_path, capsys) -> None:
    """[B] ids beside [B, T] labels (and [B, 2] ids) had raised an IndexError."""
    rng = np.random.default_rng(0)
    q, y = rng.random((40, 8)), rng.integers(0, 2, (40, 8))
    for name, ids in (("seq", np.arange(40)), ("wide", np.arange(640).reshape(320, 2))):
        a, b = tmp_path / f"{name}_a.npz", tmp_path / f"{name}_b.npz"
        np.savez(a, id=ids, prob=q, label=y)
        np.savez(b, id=ids, prob=q**1.5, label=y)
        line = one_line_error(capsys, "compare", a, b, "--id", "id")
        shown = "40 item ids for 320 labels" if name == "seq" else "320x2 of item ids"
        assert f"{name}_a.npz: column 'id' holds {shown}" in line


def test_a_label_column_of_the_kept_rows_follows_bs_rows(tmp_path, capsys) -> None:
    """b's --label column holds one value per label kept (padding dropped), b's rows in
    another order than a's: each label's numbers are those of b in a's order (the column
    had stayed in b's own order, and the tags went to other items)."""
    rng = np.random.default_rng(0)
    n = 600
    q = rng.random(n)
    y = (rng.random(n) < q).astype(np.int64)
    tag = np.where(np.arange(n) % 2 == 0, "EVEN", "ODD")
    q = np.where(tag == "ODD", q * 0.3, q)
    y[6::7] = -100
    kept = y != -100
    ids = np.arange(n)
    order = rng.permutation(n)
    a, b, aligned = (tmp_path / f"{name}.npz" for name in ("a", "b", "aligned"))
    np.savez(a, id=ids, prob=q, label=y)
    np.savez(b, id=ids[order], prob=q[order], label=y[order], tag=tag[order][y[order] != -100])
    np.savez(aligned, id=ids, prob=q, label=y, tag=tag[kept])
    options = ["--id", "id", "--label", "tag", "--ignore-index", "-100"]
    assert (
        _compare(capsys, a, b, *options)["per_label"]
        == _compare(capsys, a, aligned, *options)["per_label"]
    )
