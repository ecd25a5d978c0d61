"""What a new user's files and options found in the command line (2026-11-29): each had
ended in a traceback, a silent wrong number, or a mislabelled one."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from calib_metrics import cli
from calib_metrics.functional import calibration_error

G = torch.Generator().manual_seed(0)
Q = torch.rand(400, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G).long()


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse errors
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys, *argv) -> str:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


def test_arrays_that_do_not_line_up_are_refused(tmp_path, capsys) -> None:
    """Flattened, [10, 100] probabilities and [100, 10] labels paired the wrong items."""
    path = tmp_path / "transposed.npz"
    np.savez(path, probs=Q[:400].reshape(4, 100).numpy(), target=Y.reshape(4, 100).T.numpy())
    err = one_line_error(capsys, "evaluate", path)
    assert "'probs' has shape [4, 100] and 'target' has shape [100, 4]" in err
    right = tmp_path / "right.npz"
    np.savez(right, probs=Q.reshape(4, 100).numpy(), target=Y.reshape(4, 100).numpy())
    code, out, _ = run_cli(capsys, "evaluate", right, "--samples", "20", "--json")
    assert code == 0
    assert json.loads(out)["calib_err"] == pytest.approx(calibration_error(Q, Y).item(), abs=1e-12)


@pytest.mark.parametrize("junk", [b"PK\x03\x04junk", "half"])
def test_a_corrupt_npz_is_one_line(tmp_path, capsys, junk) -> None:
    path = tmp_path / "bad.npz"
    if junk == "half":
        np.savez(path, probs=Q.numpy(), target=Y.numpy())
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(junk)
    assert f"{path}: not a readable .npz file" in one_line_error(capsys, "evaluate", path)


def test_an_odd_extra_key_of_a_pt_file_is_not_read(tmp_path, capsys) -> None:
    path = tmp_path / "extra.pt"
    sparse = torch.eye(3).to_sparse()
    torch.save({"probs": Q, "target": Y, "other": sparse}, path)
    code, _, err = run_cli(capsys, "evaluate", path, "--samples", "20")
    assert code == 0, err
    torch.save({"probs": Q.to_sparse(), "target": Y}, path)
    assert "column 'probs' is a sparse_coo tensor" in one_line_error(capsys, "evaluate", path)


def test_an_object_array_is_named_with_its_file(tmp_path, capsys) -> None:
    path = tmp_path / "obj.npz"
    np.savez(path, probs=np.array([0.2, "x"], dtype=object), target=np.array([0, 1]))
    err = one_line_error(capsys, "evaluate", path)
    assert f"{path}: column 'probs' cannot be read" in err


def test_complex_probabilities_are_refused(tmp_path, capsys) -> None:
    path = tmp_path / "complex.npz"
    np.savez(path, probs=Q.numpy() + 0j, target=Y.numpy())
    assert "holds complex numbers" in one_line_error(capsys, "evaluate", path)


def test_empty_byte_string_group_ids_are_missing(tmp_path, capsys) -> None:
    path = tmp_path / "groups.npz"
    ids = np.array([b"s1", b""] * 200)
    np.savez(path, probs=Q.numpy(), target=Y.numpy(), groups=ids)
    err = one_line_error(capsys, "evaluate", path, "--groups", "groups")
    assert "row index 1, column 'groups' has a missing group id" in err


def test_json_lines_name_the_right_line_after_an_empty_object(tmp_path, capsys) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{}\n{"prob": 0.3, "label": 1}\n{"prob": 1.3, "label": 0}\n')
    assert "line 1 is an empty JSON object" in one_line_error(capsys, "evaluate", path)
    path.write_text('{"prob": 0.3, "label": 1}\n{"prob": 1.3, "label": 0}\n')
    assert "line 2, column 'prob' holds 1.3" in one_line_error(capsys, "evaluate", path)


@pytest.mark.parametrize(
    "document",
    [
        lambda rows: json.dumps(rows, indent=2),  # a list of row objects, as json.dump writes
        lambda rows: json.dumps(
            {"prob": [r["prob"] for r in rows], "label": [r["label"] for r in rows]}
        ),
        lambda rows: "".join(json.dumps(r) + "\n" for r in rows),  # JSON lines still
    ],
)
def test_a_json_file_may_be_one_document(tmp_path, capsys, document) -> None:
    rows = [{"prob": q, "label": y} for q, y in zip(Q.tolist(), Y.tolist())]
    path = tmp_path / "preds.json"
    path.write_text(document(rows))
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--json")
    assert code == 0, err
    assert json.loads(out)["calib_err"] == pytest.approx(calibration_error(Q, Y).item(), abs=1e-12)


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_a_file_that_is_not_utf8_is_named(tmp_path, capsys, encoding) -> None:
    path = tmp_path / "preds.csv"
    path.write_bytes("prob,label,note\n0.5,1,é\n0.4,0,x\n".encode(encoding))
    err = one_line_error(capsys, "evaluate", path)
    assert f"{path}: not UTF-8 text" in err


def test_compare_refuses_per_label_rows_under_another_mode(tmp_path, capsys) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, probs=torch.softmax(torch.randn(50, 3), -1).numpy(),
             target=np.arange(50) % 3, tag=np.array(["x", "y"] * 25))  # fmt: skip
    err = one_line_error(capsys, "compare", path, path, "--label", "tag", "--mode", "top_label")
    assert "--label COLUMN compares each label's pairs one-vs-rest" in err


def test_recalibrate_refuses_too_many_bins_before_any_work(tmp_path, capsys) -> None:
    path = tmp_path / "dev.csv"
    path.write_text("prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(Q.tolist(), Y.tolist())))
    err = one_line_error(
        capsys, "recalibrate", path, path, "--method", "histogram", "--n-bins", str(10**12),
        "--out", tmp_path / "out.csv",
    )  # fmt: skip
    assert "--n-bins must be an integer in [1, 2**20]" in err


def test_recalibrate_writes_the_group_ids_as_the_test_file_wrote_them(tmp_path, capsys) -> None:
    path = tmp_path / "test.csv"
    ids = [f"doc{i % 7}" for i in range(400)]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["prob", "label", "doc_id"])
        writer.writerows(zip(Q.tolist(), Y.tolist(), ids))
    out = tmp_path / "out.csv"
    code, _, err = run_cli(capsys, "recalibrate", path, path, "--method", "platt", "--groups",
                           "--samples", "20", "--out", out)  # fmt: skip
    assert code == 0, err
    with open(out) as f:
        assert [row["group"] for row in csv.DictReader(f)] == ids


def test_debias_with_l1_or_max_is_refused_and_their_label_says_plug_in(tmp_path, capsys):
    path = tmp_path / "p.csv"
    path.write_text("prob,label\n" + "".join(f"{q},{y}\n" for q, y in zip(Q.tolist(), Y.tolist())))
    err = one_line_error(capsys, "evaluate", path, "--norm", "l1", "--debias")
    assert "--debias applies to --norm l2 only" in err
    code, out, _ = run_cli(capsys, "evaluate", path, "--norm", "max", "--samples", "20")
    assert code == 0 and "CalibErr (max) =" in out and "debiased" not in out


def test_explicit_groups_override_the_paper_interval(tmp_path, capsys) -> None:
    path = tmp_path / "p.csv"
    rows = zip(Q.tolist(), Y.tolist(), [i // 4 for i in range(400)])
    path.write_text("prob,label,sentence_id\n" + "".join(f"{q},{y},{s}\n" for q, y, s in rows))
    code, out, err = run_cli(
        capsys, "evaluate", path, "--paper", "--groups", "sentence_id", "--samples", "20", "--json"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["interval"] == "groups" and summary["bin_size"] == 5000


def test_demo_refuses_one_draw_before_the_run_starts(capsys) -> None:
    err = one_line_error(capsys, "demo", "--quick", "--samples", "1")
    assert "--samples must be an integer >= 2, got 1" in err
