"""Array files (.pt, .npz, .npy) whose contents are not columns of values: one line and
exit 2 naming the file and the array, never a traceback."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_runs import one_line_error, run_cli

Q = torch.rand(300, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
Y = torch.bernoulli(Q, generator=torch.Generator().manual_seed(1)).long()


@pytest.fixture
def test_csv(tmp_path: Path) -> Path:
    path = tmp_path / "test.csv"
    path.write_text("probs,target\n" + "".join(f"{q!r},{y}\n" for q, y in zip(Q.tolist(), Y)))
    return path


@pytest.mark.parametrize(
    ("stored", "column"),
    [
        ({"probs": Q.to("meta"), "target": Y.to("meta")}, "probs"),
        ({"probs": Q, "target": Y.to("meta")}, "target"),
    ],
)
def test_meta_tensors_in_a_pt_file_are_one_line(tmp_path, capsys, test_csv, stored, column):
    """Every command's reader had failed in a copy out of the meta tensor:
    NotImplementedError, a traceback and exit 1."""
    path = tmp_path / "meta.pt"
    torch.save(stored, path)
    said = f"{path}: column {column!r} is on the meta device: it holds no values"
    for argv in (
        ["recalibrate", path, test_csv, "--samples", "20", "--out", tmp_path / "o.csv"],
        ["recalibrate", test_csv, path, "--samples", "20", "--out", tmp_path / "o.csv"],
        ["evaluate", path],
        ["compare", path, path],
    ):
        assert one_line_error(capsys, *argv) == f"calib-metrics: error: {said}"


def test_meta_group_ids_and_a_meta_array_alone_are_one_line(tmp_path, capsys):
    path = tmp_path / "groups.pt"
    torch.save({"probs": Q, "target": Y, "groups": torch.empty(300, device="meta")}, path)
    line = one_line_error(capsys, "evaluate", path, "--groups", "groups")
    assert line.endswith(f"{path}: column 'groups' is on the meta device: it holds no values")
    torch.save(torch.empty(300, 2, device="meta"), path)
    line = one_line_error(capsys, "evaluate", path)
    assert line.endswith(f"{path}: the stored tensor is on the meta device: it holds no values")


@pytest.mark.parametrize("suffix", [".pt", ".npz"])
@pytest.mark.parametrize("single", ["probs", "target", "both"])
def test_a_0_dim_array_is_named_with_its_shape(tmp_path, capsys, suffix, single):
    """A 0-dimensional array had failed in len(): TypeError, a traceback and exit 1."""
    path = tmp_path / f"zero{suffix}"
    arrays = {"probs": Q[:1], "target": Y[:1]}
    for name in ("probs", "target") if single == "both" else (single,):
        arrays[name] = arrays[name][0]
    if suffix == ".pt":
        torch.save(arrays, path)
    else:
        np.savez(path, **{k: v.numpy() for k, v in arrays.items()})
    name = "probs" if single != "target" else "target"
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: column {name!r} has shape [] (a single value)" in line
    assert "store one value per row" in line


def test_a_0_dim_group_id_array_is_named_with_its_shape(tmp_path, capsys):
    path = tmp_path / "groups.pt"
    torch.save({"probs": Q, "target": Y, "groups": torch.tensor(3)}, path)
    line = one_line_error(capsys, "evaluate", path, "--groups", "groups")
    assert f"{path}: column 'groups' has shape [] (a single value)" in line


@pytest.mark.parametrize(
    ("value", "kind"), [(0.5, "has shape [] (a single value)"), (None, "holds a NoneType")]
)
def test_a_python_value_for_a_column_is_named(tmp_path, capsys, value, kind):
    """A float or None for a column of a .pt file had failed in len() or iter()."""
    path = tmp_path / "value.pt"
    torch.save({"probs": value, "target": Y}, path)
    assert f"{path}: column 'probs' {kind}" in one_line_error(capsys, "evaluate", path)


def test_a_0_dim_structured_array_is_named_with_its_shape(tmp_path, capsys):
    path = tmp_path / "record.npy"
    record = np.zeros((), dtype=[("probs", "f8"), ("target", "i8")])
    np.save(path, record)
    assert f"{path}: column 'probs' has shape [] (a single value)" in one_line_error(
        capsys, "evaluate", path
    )


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda x: x.to_sparse(), "sparse_coo"),
        (lambda x: torch.quantize_per_tensor(x.float(), 0.01, 0, torch.quint8), "quantized"),
    ],
)
def test_one_stored_tensor_of_another_layout_is_one_line(tmp_path, capsys, make, kind):
    """As a column of named tensors it was refused by name; stored alone it had failed in
    .numpy(): TypeError, a traceback."""
    path = tmp_path / "one.pt"
    with warnings.catch_warnings():  # quantized tensors are deprecated in newer torch
        warnings.simplefilter("ignore")
        torch.save(make(torch.stack([Q, Y.double()], 1)), path)
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: the stored tensor is a {kind} tensor: store a dense one" in line


@pytest.mark.parametrize("container", [list, tuple])
@pytest.mark.parametrize("n", [2, 300])
def test_a_list_of_tensors_is_refused_not_read_as_rows(tmp_path, capsys, container, n):
    """[probs, target] had been read as one array of rows: of 2 items, row 0 (probs[0],
    probs[1]) was a probability and a label, silently; of 300, "got shape (2, 300)"."""
    path = tmp_path / "list.pt"
    torch.save(container([Q[:n], Y[:n]]), path)
    line = one_line_error(capsys, "evaluate", path)
    kind = container.__name__
    assert f"{path}: holds a {kind} of 2 arrays where named ones are needed" in line
    assert "torch.save({'probs': ..., 'target': ...})" in line


@pytest.mark.parametrize("n", [1, 3, 300])
@pytest.mark.parametrize("container", [list, tuple])
def test_a_list_of_row_tensors_is_read_as_rows(tmp_path, capsys, test_csv, n, container):
    """[tensor([0.1, 0.]), tensor([0.8, 1.]), ...], one (probability, label) row each, had
    been read as rows, as a list of lists is, and was then refused with the [probs,
    target] lists; two rows stay refused, as they could be either."""
    path = tmp_path / "rows.pt"
    every = torch.stack([Q, Y.double()], 1)
    rows = every[:n]
    torch.save(container(rows.float().unbind()), path)
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["n"] == n
    if n == 300:
        torch.save(rows.unbind(), path)
        code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
        _, expected, _ = run_cli(capsys, "evaluate", test_csv, "--samples", "20", "--json")
        assert json.loads(out)["calib_err"] == json.loads(expected)["calib_err"]
    torch.save(container(every[:2].unbind()), path)
    line = one_line_error(capsys, "evaluate", path)
    assert f"holds a {container.__name__} of 2 arrays where named ones are needed" in line


def test_a_list_of_arrays_of_unequal_lengths_names_the_file(tmp_path, capsys):
    """numpy's "inhomogeneous shape" had been the whole message, without the file."""
    path = tmp_path / "ragged.pt"
    torch.save([[0.5, 1.0], [0.2]], path)
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: a list of rows of unequal lengths" in line


@pytest.mark.parametrize(("stored", "kind"), [(3.5, "float"), ("probs", "str"), (None, "NoneType")])
def test_a_pt_file_of_one_value_names_its_type(tmp_path, capsys, stored, kind):
    path = tmp_path / "value.pt"
    torch.save(stored, path)
    line = one_line_error(capsys, "evaluate", path)
    assert line.endswith(f"{path}: expected named arrays or one [N, 2] array (probability, "
                         f"label), got a {kind}")  # fmt: skip


def test_rows_of_numbers_in_a_pt_file_are_still_an_n_by_2_array(tmp_path, capsys):
    path = tmp_path / "rows.pt"
    torch.save([[q, y] for q, y in zip(Q.tolist(), Y.tolist())], path)
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["n"] == 300


@pytest.mark.parametrize("dtype", [torch.long, torch.bool])
def test_integer_probabilities_named_probs_are_read_as_a_csv_reads_them(tmp_path, capsys, dtype):
    """A .pt whose only probability column held integers 0/1 had been "cannot tell which
    column holds the probabilities (columns: probs, target)"; a CSV of the same 0s and 1s
    is read as probabilities. Integers give way only to a float candidate (an .npz's
    argmax ``prediction`` beside its ``probs``)."""
    hard = (Q > 0.5).to(dtype)
    path, text = tmp_path / "hard.pt", tmp_path / "hard.csv"
    torch.save({"probs": hard, "target": Y}, path)
    text.write_text("probs,target\n" + "".join(f"{int(q)},{y}\n" for q, y in zip(hard, Y)))
    results = []
    for file in (path, text):
        code, out, err = run_cli(capsys, "evaluate", file, "--samples", "20", "--json")
        assert code == 0, err
        results.append(json.loads(out))
    assert results[0]["n"] == 300
    assert results[0]["calib_err"] == results[1]["calib_err"]
    # JSON's booleans are read as the bool tensor's are: hard predictions, 1 and 0.
    jsonl = tmp_path / "hard.jsonl"
    jsonl.write_text("".join(f'{{"probs": {json.dumps(bool(q))}, "target": {y}}}\n'
                             for q, y in zip(hard.tolist(), Y.tolist())))  # fmt: skip
    code, out, err = run_cli(capsys, "evaluate", jsonl, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["calib_err"] == results[0]["calib_err"]
    # A float candidate still wins over an integer one.
    torch.save({"probs": Q, "prediction": hard, "target": Y}, path)
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    # Integer class ids taken as probabilities are named as such.
    torch.save({"probs": torch.arange(300) % 3, "target": Y}, path)
    line = one_line_error(capsys, "evaluate", path)
    assert "column 'probs' holds 2, not a probability in [0, 1]" in line
    assert "integers: class ids or hard predictions" in line


@pytest.mark.parametrize("name", ["probs", "prob", "probability", "Probs"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32])
def test_integer_probabilities_under_any_probability_name_are_read(tmp_path, capsys, name, dtype):
    path = tmp_path / "hard.pt"
    torch.save({name: (Q > 0.5).to(dtype), "target": Y}, path)
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["n"] == 300


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("prediction", (Q > 0.5).long()),
        ("pred", (Q > 0.5).long()),
        ("score", Q > 0.5),
        ("q", (Q > 0.5).to(torch.uint8)),
        ("prediction", torch.nn.functional.one_hot((Q > 0.5).long())),
    ],
)
def test_lone_integer_predictions_are_refused_unless_named(tmp_path, capsys, name, values):
    """Any lone integer column of a usual name (an argmax "prediction", a bool "score",
    a one-hot [N, C]) had been read as probabilities; before, the reader refused it. It
    refuses it again, saying why and how to read it anyway."""
    path = tmp_path / "hard.pt"
    torch.save({name: values, "target": Y}, path)
    line = one_line_error(capsys, "evaluate", path)
    assert (f"{path}: column {name!r} holds integers, which look like hard predictions (or "
            "class ids), not probabilities: give the model's probabilities, or name the "
            "column with --probs") in line  # fmt: skip
    if values.ndim == 1:
        code, _, err = run_cli(capsys, "evaluate", path, "--probs", name, "--samples", "20")
        assert code == 0, err
    torch.save({"pred": values, "prediction": values, "target": Y}, path)
    line = one_line_error(capsys, "evaluate", path)
    assert "columns 'pred', 'prediction' hold integers, which look like hard predictions" in line


def test_class_ids_in_both_columns_say_the_probabilities_are_integers(tmp_path, capsys):
    """probs=[0, 2, 1, 1], target=[0, 2, 2, 1] had blamed the target alone ("a label must
    be binary"); the class ids in probs are the likelier mistake."""
    path = tmp_path / "ids.npz"
    np.savez(path, probs=np.array([0, 2, 1, 1]), target=np.array([0, 2, 2, 1]))
    line = one_line_error(capsys, "evaluate", path)
    assert "row index 1, column 'target' holds 2: a label must be binary (0 or 1)" in line
    said = (
        "column 'probs' holds integers, not probabilities (class ids or hard predictions?): "
        "give the model's probabilities, [N, C] for C classes"
    )
    assert said in line
    np.savez(path, probs=np.array([0.1, 0.9, 0.2, 0.4]), target=np.array([0, 2, 2, 1]))
    line = one_line_error(capsys, "evaluate", path)
    assert "a label must be binary (0 or 1)" in line and "integers" not in line


@pytest.mark.parametrize("dtype", ["timedelta64[s]", "datetime64[D]"])
def test_dates_and_durations_are_no_probabilities(tmp_path, capsys, dtype):
    """numpy reads them as counts of their unit: durations of 0 and 1 seconds had been
    read as probabilities 0 and 1, silently."""
    path = tmp_path / "times.npz"
    np.savez(path, probs=(Q > 0.5).numpy().astype(np.int64).astype(dtype), target=Y.numpy())
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: column 'probs' holds dates or durations ({dtype}), not numbers" in line


# -- an unnamed [N, 2] array: columns 0 and 1, no names ----------------------------------


@pytest.fixture
def unnamed(tmp_path: Path) -> dict[str, Path]:
    """One [N, 2] array of (probability, label) rows as an .npy and as a .pt tensor."""
    rows = torch.stack([Q, Y.double()], 1)
    npy, pt = tmp_path / "preds.npy", tmp_path / "preds.pt"
    np.save(npy, rows.numpy())
    torch.save(rows, pt)
    return {"npy": npy, "pt": pt}


@pytest.mark.parametrize("suffix", ["npy", "pt"])
@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["evaluate", "{f}", "--probs", "no_such_column", "--target", "nor_this"],
         "no_such_column"),
        (["evaluate", "{f}", "--target", "gold"], "gold"),
        (["compare", "{f}", "--probs-b", "model_b_prob"], "model_b_prob"),
        (["compare", "{f}", "{f}", "--probs", "q"], "q"),
        (["recalibrate", "{f}", "{f}", "--test-probs", "q", "--out", "{out}"], "q"),
    ],
)  # fmt: skip
def test_a_column_named_for_an_unnamed_array_is_refused(
    tmp_path, capsys, unnamed, suffix, argv, named
):
    """The names had been ignored for columns 0 and 1: `compare preds.npy --probs-b
    model_b_prob` compared the array with itself (a - b = +0.0000, p = 1), exit 0."""
    path = unnamed[suffix]
    filled = [a.format(f=path, out=tmp_path / "o.csv") for a in argv]
    line = one_line_error(capsys, *filled, "--samples", "20")
    assert f"{path}: an unnamed array has no column {named!r}" in line


@pytest.mark.parametrize("suffix", ["npy", "pt"])
def test_an_unnamed_array_without_column_options_is_still_read(
    tmp_path, capsys, unnamed, suffix, test_csv
):
    """Only a name given is refused: the options left out read columns 0 and 1."""
    path = unnamed[suffix]
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    _, expected, _ = run_cli(capsys, "evaluate", test_csv, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["calib_err"] == json.loads(expected)["calib_err"]
    code, out, err = run_cli(capsys, "compare", path, test_csv, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["difference"] == 0.0


@pytest.mark.parametrize("suffix", ["npy", "pt"])
@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "{named}", "{f}", "--probs", "q", "--target", "y"],
        ["compare", "{f}", "{named}", "--probs-b", "q", "--target", "y"],
        ["recalibrate", "{named}", "{f}", "--probs", "q", "--target", "y", "--out", "{out}"],
    ],
)
def test_a_name_meant_for_the_other_file_passes_an_unnamed_array_by(
    tmp_path, capsys, unnamed, suffix, argv
):
    """A name typed for the named file (or for both: compare's --target) was handed on to
    the unnamed array and refused there, with no way to leave it out for that file."""
    named = tmp_path / "named.npz"
    np.savez(named, q=Q.numpy(), y=Y.numpy())
    filled = [a.format(f=unnamed[suffix], named=named, out=tmp_path / "o.csv") for a in argv]
    code, out, err = run_cli(capsys, *filled, "--samples", "20", "--json")
    assert code == 0, err
    if argv[0] == "compare":  # the same pairs in both files
        assert json.loads(out)["difference"] == 0.0


def test_a_name_typed_for_the_unnamed_file_is_still_refused(tmp_path, capsys, unnamed):
    named = tmp_path / "named.npz"
    np.savez(named, q=Q.numpy(), y=Y.numpy())
    line = one_line_error(
        capsys, "compare", named, unnamed["npy"], "--probs", "q", "--probs-b", "q_b"
    )
    assert f"{unnamed['npy']}: an unnamed array has no column 'q_b'" in line


# -- a .pt file of numpy arrays ----------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "what"),
    [
        ({"probs": Q.numpy(), "target": Y.numpy()}, "arrays"),
        (np.stack([Q.numpy(), Y.numpy()], 1), "arrays"),
        ({"probs": Q, "target": [np.int64(y) for y in Y.tolist()]}, "numbers"),
    ],
)
def test_a_pt_file_of_numpy_arrays_says_to_save_tensors(tmp_path, capsys, stored, what):
    """torch.load(weights_only=True) refuses numpy objects, and the command had said only
    "not a readable torch file (UnpicklingError)"."""
    path = tmp_path / "preds.pt"
    torch.save(stored, path)
    line = one_line_error(capsys, "evaluate", path)
    assert line == (
        f"calib-metrics: error: {path}: holds numpy {what} where tensors are needed (a .pt "
        "file is read without running the code of pickled objects): save tensors, "
        "torch.from_numpy(array), or save the arrays as an .npz (np.savez)"
    )


def test_a_pt_file_of_another_object_names_it(tmp_path, capsys):
    path = tmp_path / "preds.pt"
    torch.save({"probs": Q, "target": Y, "when": Path("x")}, path)
    line = one_line_error(capsys, "evaluate", path)
    assert f"{path}: holds a pathlib" in line and "object, which is not read" in line


def test_a_truncated_pt_file_says_why_torch_cannot_read_it(tmp_path, capsys):
    """A .pt file cut short had been "not a readable torch file (RuntimeError)" alone,
    torch's reason (its archive's directory is missing) thrown away."""
    whole = tmp_path / "whole.pt"
    torch.save({"prob": torch.rand(50_000), "label": torch.zeros(50_000)}, whole)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    line = one_line_error(capsys, "evaluate", cut)
    assert "not a readable torch file (RuntimeError: " in line
    assert "failed finding central directory" in line
