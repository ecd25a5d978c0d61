"""The --label column: an empty cell is an error naming its row (it became a label named
''), and ``compare`` checks b's column against a's when both files have one (it read a's
only, so two files labelling the items differently were compared silently)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics.cli import main


def _write(path: Path, tags: list[str], shift: float = 0.0) -> Path:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(len(tags), generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    rows = [f"{qi:.4f},{min(1.0, qi + shift):.4f},{yi},{t}" for qi, yi, t in zip(q, y, tags)]
    path.write_text("prob,prob_b,label,tag\n" + "\n".join(rows) + "\n")
    return path


def _run(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


TAGS = ["A", "B"] * 100


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_an_empty_label_cell_is_named(tmp_path, capsys, command):
    tags = list(TAGS)
    tags[5] = ""
    path = _write(tmp_path / "a.csv", tags)
    extra = ["--probs-b", "prob_b"] if command == "compare" else []
    code, _, err = _run(capsys, command, path, *extra, "--label", "tag", "--samples", "20")
    assert code == 2 and "Traceback" not in err
    assert "line 7 has no value in --label 'tag'" in err
    assert len(err.strip().splitlines()) == 1


def test_compare_refuses_files_whose_labels_differ(tmp_path, capsys):
    a = _write(tmp_path / "a.csv", TAGS)
    tags = list(TAGS)
    tags[7] = "C"
    b = _write(tmp_path / "b.csv", tags, shift=0.05)
    code, _, err = _run(capsys, "compare", a, b, "--label", "tag", "--samples", "20")
    assert code == 2 and "first differs at line 9 of both files: 'B' vs 'C'" in err


def test_compare_reads_the_label_column_from_whichever_file_has_it(tmp_path, capsys):
    a = _write(tmp_path / "a.csv", TAGS)
    b = tmp_path / "b.csv"
    b.write_text("\n".join(",".join(line.split(",")[:3]) for line in a.read_text().splitlines()))
    for first, second in [(a, b), (b, a)]:
        code, out, err = _run(capsys, "compare", first, second, "--label", "tag", "--samples", "20")
        assert code == 0, err
        assert "not distinguishable on 2 of 2 labels" in out


def _padded(path: Path, every: int = 10) -> Path:
    """``path`` with the label of every ``every``-th data row set to -100 (padding)."""
    header, *rows = path.read_text().splitlines()
    cells = [row.split(",") for row in rows]
    for i in range(0, len(cells), every):
        cells[i][2] = "-100"
    path.write_text("\n".join([header, *(",".join(c) for c in cells)]) + "\n")
    return path


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_label_column_drops_the_padding_rows_as_the_labels_do(tmp_path, capsys, command):
    path = _padded(_write(tmp_path / "a.csv", TAGS))
    extra = ["--probs-b", "prob_b"] if command == "compare" else []
    argv = [command, path, *extra, "--label", "tag", "--ignore-index", "-100", "--json"]
    code, out, err = _run(capsys, *argv, "--samples", "20")
    assert code == 0, err  # it had read 200 labels for 180 rows and stopped
    rows = json.loads(out)["per_label"]
    # Rows 0, 10, 20, ... are padding: all of them are A's (even rows), none a B.
    assert (rows["A"]["n"], rows["B"]["n"]) == (80, 100)


def test_a_padded_files_messages_name_the_files_lines(tmp_path, capsys):
    a = _padded(_write(tmp_path / "a.csv", TAGS))
    tags = list(TAGS)
    tags[7] = "C"
    b = _padded(_write(tmp_path / "b.csv", tags, shift=0.05))
    argv = ["compare", a, b, "--label", "tag", "--ignore-index", "-100", "--samples", "20"]
    code, _, err = _run(capsys, *argv)
    # Data row 7 is line 9; it is the 7th row kept (row 0 was padding), not line 8.
    assert code == 2 and "first differs at line 9 of both files: 'B' vs 'C'" in err


def test_a_json_null_label_is_named_not_read_as_a_label_named_none(tmp_path, capsys):
    rows = [{"prob": (i % 10) / 10 + 0.05, "label": i % 2, "tag": "AB"[i % 2]} for i in range(60)]
    rows[4]["tag"] = None
    path = tmp_path / "null.json"
    path.write_text(json.dumps(rows))
    code, _, err = _run(capsys, "evaluate", path, "--label", "tag", "--samples", "20")
    assert code == 2 and "row index 4 has no value in --label 'tag'" in err


def test_whole_number_labels_beside_a_fraction_keep_their_names(tmp_path, capsys):
    rows = [{"prob": (i % 10) / 10 + 0.05, "label": i % 2, "tag": [1, 2, 0.5][i % 3]}
            for i in range(60)]  # fmt: skip
    path = tmp_path / "numbers.json"
    path.write_text(json.dumps(rows))
    code, out, err = _run(capsys, "evaluate", path, "--label", "tag", "--samples", "20", "--json")
    assert code == 0, err
    assert sorted(json.loads(out)["per_label"]) == ["0.5", "1", "2"]  # not '1.0', '2.0'


def test_many_labels_announce_their_intervals_before_drawing(tmp_path, capsys, monkeypatch):
    from calib_metrics import cli
    from calib_metrics.functional import calibration_error_ci

    path = _write(tmp_path / "a.csv", TAGS)
    argv = ["evaluate", path, "--label", "tag", "--samples", "20"]
    monkeypatch.setattr(cli, "LONG_RUN_LABEL_DRAWS", 2 * 20 + 1)
    assert _run(capsys, *argv)[0] == 0
    assert "drawing" not in capsys.readouterr().err  # 2 labels × 20 draws: just under
    monkeypatch.setattr(cli, "LONG_RUN_LABEL_DRAWS", 2 * 20)
    seen = []

    def interval_after_notice(*args, **kwargs):
        seen.append(capsys.readouterr().err)  # what stderr held when a draw began
        return calibration_error_ci(*args, **kwargs)

    monkeypatch.setattr("calib_metrics.functional.calibration_error_ci", interval_after_notice)
    code, _, err = _run(capsys, *argv)
    assert code == 0 and "drawing" not in err  # said once, before, not among the warnings
    # The whole file's interval first, then the labels': the notice precedes the labels'.
    assert "drawing 20 interval draws for each of 2 labels" in "".join(seen[:2])


def test_large_labels_announce_their_intervals_by_their_pairs(tmp_path, capsys, monkeypatch):
    """Each label's draw had been counted at 14 µs however many its pairs: 5 labels of
    200,000 pairs (3 ms a draw) ran minutes without a notice. Its pairs' weights count
    now, as the whole file's do."""
    from calib_metrics import cli

    said = []
    monkeypatch.setattr(cli, "say_long_run", lambda what, seconds: said.append((what, seconds)))
    monkeypatch.setattr(cli, "LONG_RUN_WEIGHTS", len(TAGS) * 20)  # 200 pairs × 20 draws
    path = _write(tmp_path / "a.csv", TAGS)
    assert _run(capsys, "evaluate", path, "--label", "tag", "--samples", "20")[0] == 0
    labels = [(what, s) for what, s in said if "labels" in what]
    assert labels == [
        (
            "drawing 20 interval draws for each of 2 labels (200 pairs in all)",
            pytest.approx(2 * 20 * cli.LABEL_DRAW_SECONDS + 200 * 20 / cli.WEIGHTS_PER_SECOND),
        )
    ]


def test_label_draws_are_timed_by_their_groups_weights(monkeypatch) -> None:
    from calib_metrics import cli

    said = []
    monkeypatch.setattr(cli, "say_long_run", lambda what, seconds: said.append((what, seconds)))
    cli.announce_label_draws([49_000] * 5, 10_000, "groups")  # the probe's 5 labels
    ((what, seconds),) = said
    assert what == "drawing 10,000 interval draws for each of 5 labels (245,000 groups in all)"
    # 2.45·10⁹ weights at 10⁷ a second, and 14 µs for each of 50,000 label-draws.
    assert seconds == pytest.approx(245 + 0.7)
    said.clear()
    cli.announce_label_draws([100] * 5, 10_000, "pairs")  # 5·10⁶ weights, 5·10⁴ draws: brief
    assert said == []


def _padded_npz(path: Path, tag_length: int) -> Path:
    """200 pairs, every 10th label padding (-100), and a tag column of ``tag_length``."""
    import numpy as np

    g = np.random.default_rng(0)
    q = g.uniform(size=200)
    y = (g.uniform(size=200) < q).astype(np.int64)
    y[::10] = -100
    np.savez(path, prob=q, label=y, tag=np.array(["A", "B"] * (tag_length // 2)))
    return path


def test_a_label_column_of_the_kept_rows_only_is_taken_as_it_is(tmp_path, capsys):
    # read_table takes group ids of one per kept label so; the --label column had been too.
    path = _padded_npz(tmp_path / "kept.npz", 180)
    argv = ["evaluate", path, "--ignore-index", "-100", "--label", "tag", "--json"]
    code, out, err = _run(capsys, *argv, "--samples", "20")
    assert code == 0, err
    rows = json.loads(out)["per_label"]
    assert (rows["A"]["n"], rows["B"]["n"]) == (90, 90)


def test_a_label_column_of_another_length_is_refused(tmp_path, capsys):
    path = _padded_npz(tmp_path / "long.npz", 400)
    argv = ["evaluate", path, "--ignore-index", "-100", "--label", "tag", "--samples", "20"]
    code, _, err = _run(capsys, *argv)
    assert code == 2 and "400 values in --label 'tag' for 180 rows" in err


def test_a_label_too_small_for_an_interval_says_so_in_the_text_output(tmp_path, capsys):
    # 4 pairs of tag C cannot be resampled: the line read "[nan, nan]".
    path = _write(tmp_path / "p.csv", TAGS + ["C"] * 4)
    code, out, _ = _run(capsys, "evaluate", path, "--label", "tag", "--samples", "50")
    assert code == 0
    line = next(x for x in out.splitlines() if x.strip().startswith("C:"))
    assert "nan" not in line and "no interval" in line and "4 pairs" in line


def test_byte_string_labels_are_decoded(tmp_path, capsys):
    # A numpy `S` array's labels had printed as b'DET' in compare's table and JSON.
    g = torch.Generator().manual_seed(0)
    q = torch.rand(400, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    tags = np.array(["DET", "NOUN"] * 200).astype("S")
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    np.savez(a, probs=q.numpy(), target=y.numpy(), tag=tags)
    np.savez(b, probs=(q**1.2).numpy(), target=y.numpy())
    code, out, err = _run(capsys, "compare", a, b, "--label", "tag", "--samples", "20", "--json")
    assert code == 0, err
    assert sorted(json.loads(out)["per_label"]) == ["DET", "NOUN"]
    code, out, err = _run(capsys, "evaluate", a, "--label", "tag", "--samples", "20", "--json")
    assert code == 0, err
    assert sorted(json.loads(out)["per_label"]) == ["DET", "NOUN"]


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_label_naming_the_target_column_says_to_leave_label_out(tmp_path, capsys, command):
    # Multiclass .pt files (probs [N, C], target [N]), as the README saves them: `--label
    # target` had been told to name the labels with --target, and `--target target` then
    # clashed with --label; neither said that --label names a column other than the labels.
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(200, 4, generator=g), dim=1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    path = tmp_path / "mc.pt"
    torch.save({"probs": probs, "target": target}, path)
    files = [path] if command == "evaluate" else [path, path]
    leave_out = (
        ": --label names a column other than the labels; leave it out (or give it another "
        "column) to read 'target' as the labels"
    )
    for given in ((), ("--target", "target")):
        code, out, err = _run(capsys, command, *files, "--label", "target", *given)
        assert code == 2 and out == ""
        assert err.endswith(f"{leave_out}\n") and "name it with --target" not in err
    code, _, _ = _run(capsys, command, *files, "--samples", "20")
    assert code == 0


def test_probs_b_naming_the_probabilities_is_not_told_to_be_left_out(tmp_path, capsys):
    """--probs-b names model b's probabilities, which one file's comparison needs: the
    advice to leave an option out is --label's and --groups' alone."""
    path = tmp_path / "one.csv"
    path.write_text("probs,target\n0.2,0\n0.7,1\n0.4,0\n")
    code, out, err = _run(capsys, "compare", path, "--probs-b", "probs")
    assert code == 2 and out == ""
    assert "leave it out" not in err and "name it with --probs" in err


def test_evaluate_labels_do_not_depend_on_the_row_order(tmp_path, capsys):
    """Each label's interval draws from the one generator seeded with --seed, in the
    labels' sorted order, as ``compare --label`` draws them: in order of first appearance,
    moving one ADJ row to the top had changed NOUN's interval, the numbers else the same
    (a label's own result does not depend on the order of its pairs)."""
    tags = ["NOUN", "VERB", "ADJ"] * 80
    path = _write(tmp_path / "tags.csv", tags)
    header, *rows = path.read_text().splitlines()
    shuffled = tmp_path / "shuffled.csv"
    order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(1)).tolist()
    shuffled.write_text("\n".join([header, *(rows[i] for i in order)]) + "\n")
    results = []
    for file in (path, shuffled):
        code, out, err = _run(capsys, "evaluate", file, "--label", "tag", "--samples", "50",
                              "--json")  # fmt: skip
        assert code == 0, err
        results.append(json.loads(out)["per_label"])
    assert results[0] == results[1]
    assert list(results[0]) == ["ADJ", "NOUN", "VERB"]  # listed in that order too


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_labels_that_differ_by_a_trailing_nul_stay_apart(tmp_path, capsys, command):
    """The labels went through an array of NumPy strings, which drop trailing NULs: the
    JSON labels "A" and "A\\u0000" were measured as one label "A"."""
    rows = [{"prob": (i % 10) / 10 + 0.05, "prob_b": (i % 10) / 10 + 0.04, "label": i % 2,
             "tag": ["A", "A\x00", "B"][i % 3]} for i in range(240)]  # fmt: skip
    path = tmp_path / "nul.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    extra = ["--probs-b", "prob_b"] if command == "compare" else []
    code, out, err = _run(capsys, command, path, *extra, "--label", "tag", "--samples", "20",
                          "--json")  # fmt: skip
    assert code == 0, err
    per_label = json.loads(out)["per_label"]
    assert list(per_label) == ["A", "A\x00", "B"]
    assert {per_label[k]["n"] for k in per_label} == {80}
