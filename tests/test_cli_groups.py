"""``calib-metrics evaluate --interval groups``: group ids read from the file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics import cli
from calib_metrics.functional import calibration_error_ci


@pytest.fixture(scope="module")
def tokens() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """300 sentences of 8 tokens; sentence ids are strings, rows shuffled."""
    rng = np.random.default_rng(1)
    q = rng.beta(0.5, 0.5, size=2400)
    sentence = np.repeat(np.arange(300), 8)
    shift = rng.normal(size=300)[sentence]
    y = ((q - 0.5) * 4 + shift + rng.normal(size=2400) > 0).astype(np.int64)
    order = rng.permutation(2400)
    return q[order], y[order], sentence[order]


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def expected(q, y, sentence) -> dict[str, float]:
    # read_table numbers ids in sorted order of their text: np.unique does the same here.
    ids = np.unique(np.array([f"s{s}" for s in sentence]), return_inverse=True)[1]
    result = calibration_error_ci(
        torch.from_numpy(q),
        torch.from_numpy(y),
        bin_size="auto",
        n_samples=300,
        debias=True,
        method="percentile",
        interval="groups",
        groups=torch.from_numpy(ids.reshape(-1)),
        generator=torch.Generator().manual_seed(0),
    )
    return {k: getattr(result, k).item() for k in ("error", "lower", "upper")}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_group_interval_from_a_file_equals_the_functional(tmp_path: Path, capsys, tokens, suffix):
    q, y, sentence = tokens
    path = tmp_path / f"tokens{suffix}"
    if suffix == ".csv":
        rows = ["prob,label,sentence_id"] + [
            f"{float(a)!r},{b},s{c}" for a, b, c in zip(q, y, sentence)
        ]
        path.write_text("\n".join(rows) + "\n")
    else:
        rows = [
            json.dumps({"q": float(a), "y": int(b), "doc": f"s{c}"})
            for a, b, c in zip(q, y, sentence)
        ]
        path.write_text("\n".join(rows) + "\n")
    argv = ["evaluate", path, "--interval", "groups", "--debias", "--bin-size", "auto"]
    argv += ["--method", "percentile", "--samples", "300", "--json"]
    if suffix == ".jsonl":
        argv += ["--groups", "doc"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    got = json.loads(out)
    want = expected(q, y, sentence)
    assert got["groups"] == 300
    assert got["calib_err"] == pytest.approx(want["error"], rel=1e-12)
    assert got["lower"] == pytest.approx(want["lower"], rel=1e-12)
    assert got["upper"] == pytest.approx(want["upper"], rel=1e-12)


def test_groups_without_a_value_finds_the_column_as_compare_does(tmp_path: Path, capsys, tokens):
    """evaluate --groups had needed a value ("expected one argument"), where compare and
    recalibrate take none (a file recalibrate --out wrote names its column "group")."""
    q, y, sentence = tokens
    path = tmp_path / "tokens.npz"
    np.savez(path, probs=q, target=y, group=sentence)
    by_name = run(capsys, "evaluate", path, "--groups", "--samples", "50", "--json")
    named = run(capsys, "evaluate", path, "--groups", "group", "--samples", "50", "--json")
    assert by_name[0] == 0 and json.loads(by_name[1])["groups"] == 300
    assert json.loads(by_name[1])["upper"] == json.loads(named[1])["upper"]


def test_text_output_names_the_groups(tmp_path: Path, capsys, tokens):
    q, y, sentence = tokens
    path = tmp_path / "tokens.npz"
    np.savez(path, probs=q, target=y, group=sentence)
    code, out, err = run(capsys, "evaluate", path, "--interval", "groups", "--samples", "50")
    assert code == 0, err
    assert "N = 2400 pairs in 300 groups" in out
    assert "groups normal" in out


@pytest.mark.parametrize(
    ("content", "argv", "match"),
    [
        ("prob,label\n0.2,0\n0.7,1\n", ["--interval", "groups"], "no group-id.*--groups"),
        ("prob,label,s\n0.2,0,1\n", ["--interval", "groups", "--groups", "doc"], "no column 'doc'"),
        ("prob,label,s\n0.2,0,1\n", ["--groups", "s", "--interval", "pairs"], "groups only"),
    ],
)
def test_missing_or_unused_group_column_is_one_line_exit_2(
    tmp_path: Path, capsys, content, argv, match
):
    path = tmp_path / "p.csv"
    path.write_text(content)
    code, out, err = run(capsys, "evaluate", path, "--samples", "10", *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert re.search(match, err), err


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "{f}", "--groups"],
        ["evaluate", "{f}", "--interval", "groups"],
        ["compare", "{f}", "{f}", "--groups"],
        ["recalibrate", "{f}", "{f}", "--groups", "--out", "{f}.out.csv"],
    ],
)
def test_a_file_without_a_group_column_says_so(tmp_path: Path, capsys, argv):
    """It had said "cannot tell which column holds the group ids ...; name it with
    --groups" to a user who had given --groups, of a file with no column to name."""
    path = tmp_path / "dev.csv"
    path.write_text("prob,label\n0.2,0\n0.7,1\n0.4,1\n")
    argv = [a.format(f=path) for a in argv]
    code, out, err = run(capsys, *argv, "--samples", "10")
    assert code == 2 and out == "", err
    assert err == (
        f"calib-metrics: error: {path} has no group-id column (columns: prob, label): name "
        "one with --groups COLUMN\n"
    )


def test_a_plain_array_has_no_groups(tmp_path: Path, capsys):
    path = tmp_path / "p.npy"
    np.save(path, np.array([[0.2, 0.0], [0.7, 1.0]]))
    code, _, err = run(capsys, "evaluate", path, "--interval", "groups", "--samples", "10")
    assert code == 2 and "no group ids" in err


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("p.csv", "prob,label,s\n0.2,0,a\n0.7,1,\n0.4,0,b\n", "line 3"),
        ("p.csv", "prob,label,s\n0.2,0,1\n0.7,1,2\n0.4,0,  \n", "line 4"),
        (
            "p.jsonl",
            '{"prob": 0.2, "label": 0, "s": 1}\n{"prob": 0.7, "label": 1, "s": null}\n',
            "line 2",
        ),
    ],
)
def test_a_missing_group_id_is_refused_not_made_a_group(
    tmp_path: Path, capsys, name, content, where
):
    # An empty cell (or JSON null) used to become one more group, "" (or "None"), that
    # pooled every row missing its id into one bogus group of the group bootstrap.
    path = tmp_path / name
    path.write_text(content)
    for command in (["evaluate", path], ["compare", path, path]):
        code, out, err = run(capsys, *command, "--groups", "s", "--samples", "10")
        assert code == 2 and out == ""
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert "missing group id" in err and where in err and "'s'" in err, err


def test_integer_group_ids_in_a_csv_are_numbered_as_the_api_numbers_them(
    tmp_path: Path, capsys, tokens
):
    """Read as text, ids 0…299 were numbered in text order (10 before 2), and the group
    bootstrap's draws, which follow the groups' order, gave another interval than the
    Python API on the same integer ids and seed."""
    q, y, sentence = tokens
    path = tmp_path / "tokens.csv"
    rows = ["prob,label,sentence_id"] + [f"{float(a)!r},{b},{c}" for a, b, c in zip(q, y, sentence)]
    path.write_text("\n".join(rows) + "\n")
    argv = ["evaluate", path, "--interval", "groups", "--debias", "--bin-size", "auto"]
    argv += ["--method", "percentile", "--samples", "300", "--json"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    got = json.loads(out)
    want = calibration_error_ci(
        torch.from_numpy(q), torch.from_numpy(y), bin_size="auto", n_samples=300,
        debias=True, method="percentile", interval="groups",
        groups=torch.from_numpy(sentence), generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert got["lower"] == pytest.approx(want.lower.item(), rel=1e-12)
    assert got["upper"] == pytest.approx(want.upper.item(), rel=1e-12)


def test_ids_written_as_numbers_are_one_group_per_number(tmp_path: Path, capsys, tokens):
    # "5" and "5.0" (a spreadsheet's mixed export) had made two groups, "1" and "01" one.
    q, y, sentence = tokens
    written = [f"{c}.0" if i % 2 else str(c) for i, c in enumerate(sentence)]
    path = tmp_path / "mixed.csv"
    rows = ["prob,label,sentence_id"] + [f"{float(a)!r},{b},{c}" for a, b, c in zip(q, y, written)]
    path.write_text("\n".join(rows) + "\n")
    argv = ["evaluate", path, "--interval", "groups", "--samples", "50", "--json"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert json.loads(out)["groups"] == len(set(sentence.tolist()))
    # Ids with a fraction stay text: "1.1" and "1.10" are two sentences of document 1.
    dotted = [f"1.{c + 1}" for c in sentence.tolist()]
    path.write_text("\n".join(
        ["prob,label,sentence_id"] + [f"{float(a)!r},{b},{c}" for a, b, c in zip(q, y, dotted)]
    ) + "\n")  # fmt: skip
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert json.loads(out)["groups"] == len(set(sentence.tolist()))


def test_a_whole_number_is_one_group_whatever_the_column_holds(tmp_path: Path, capsys, tokens):
    """One id with a fraction had made the column text, and "5" and "5.0" two groups."""
    q, y, sentence = tokens
    written = [f"{c}.0" if i % 2 else str(c) for i, c in enumerate(sentence)]
    written[0] = "0.5"  # a sentence of its own, beside the whole numbers
    path = tmp_path / "mixed.csv"
    rows = ["prob,label,sentence_id"] + [f"{float(a)!r},{b},{c}" for a, b, c in zip(q, y, written)]
    path.write_text("\n".join(rows) + "\n")
    code, out, err = run(
        capsys, "evaluate", path, "--interval", "groups", "--samples", "50", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["groups"] == len(set(sentence[1:].tolist())) + 1


def test_recalibrates_out_file_reads_back_with_its_groups(tmp_path: Path, capsys, tokens):
    """Where the test file held one group id per kept label, --out leaves the padding rows'
    group cells empty, and reading it back with --groups had refused "a missing group id"."""
    q, y, sentence = tokens
    padded = np.where(np.arange(y.size) % 7 == 0, -100, y)
    test = tmp_path / "test.npz"
    np.savez(test, probs=q, target=padded, group=sentence[padded != -100])
    out = tmp_path / "test.recalibrated.csv"
    argv = ["--ignore-index", "-100", "--groups", "--samples", "50"]
    code, _, err = run(capsys, "recalibrate", test, test, *argv, "--out", out)
    assert code == 0, err
    assert ",,-100,\n" in out.read_text()  # a padding row: no probabilities, no group
    code, text, err = run(capsys, "evaluate", out, *argv, "--json")
    assert code == 0, err
    assert json.loads(text)["groups"] == 300


def test_one_group_id_per_sentence_is_told_the_files_count_and_shape(tmp_path: Path) -> None:
    """Ids [B] beside labels [B, T] with padding had been "20 group ids for 200 labels",
    a number the file does not hold (the labels kept)."""
    from calib_metrics.predictions import read_table

    target = np.zeros((20, 15), dtype=np.int64)
    target[:, 10:] = -100
    file = tmp_path / "sentences.npz"
    np.savez(file, probs=np.full((20, 15), 0.5), target=target, sentence_id=np.arange(20))
    said = "20 group ids for 300 labels of shape [20, 15], 200 of them kept (give one per label"
    with pytest.raises(ValueError, match=re.escape(said)):
        read_table(file, groups="sentence_id", ignore_index=-100)


def test_groups_that_took_the_file_say_so(tmp_path: Path, capsys) -> None:
    """`evaluate --groups t.csv` had been "the following arguments are required: file",
    and `compare --groups a b` "no column 'a'", leaving the user to find why."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (a, b):
        path.write_text('{"probs": 0.2, "target": 0}\n{"probs": 0.7, "target": 1}\n')
    code, _, err = run(capsys, "evaluate", "--groups", a)
    assert code == 2 and f"--groups took {a} as the name of its column: put the files" in err
    code, _, err = run(capsys, "evaluate", "--group", a)  # argparse's prefix of --groups
    assert code == 2 and f"--group took {a} as the name" in err
    code, _, err = run(capsys, "compare", "--groups", a, b)
    assert code == 2
    assert f"no column '{a}' (columns: probs, target; it is a file: put the files" in err


def test_one_group_id_per_json_line_stands_for_each_of_its_labels(tmp_path: Path, capsys):
    """A file of sentences, one line each with its id beside its padded tags, had been
    refused: "40 group ids for 320 labels, 158 of them kept (give one per label ...)"."""
    rng = np.random.default_rng(3)
    lines, spread = [], []
    for sentence in range(40):
        length = int(rng.integers(1, 9))
        q = [round(float(v), 4) for v in rng.uniform(size=length)]
        y = [int(v < p) for v, p in zip(rng.uniform(size=length), q)]
        pad = 8 - length
        row = {"prob": q + [None] * pad, "label": y + [-100] * pad}
        lines.append(json.dumps({"sid": f"s{sentence}", **row}))
        spread.append(json.dumps({"sid": [f"s{sentence}"] * 8, **row}))
    one, each = tmp_path / "one.jsonl", tmp_path / "each.jsonl"
    one.write_text("\n".join(lines) + "\n")
    each.write_text("\n".join(spread) + "\n")
    options = ("--ignore-index", "-100", "--groups", "sid", "--samples", "100", "--json")
    results = []
    for path in (one, each):
        code, out, err = run(capsys, "evaluate", path, *options)
        assert code == 0, err
        results.append(json.loads(out))
    assert results[0]["groups"] == 40
    for key in ("calib_err", "lower", "upper", "n", "groups"):
        assert results[0][key] == results[1][key]
    code, out, err = run(capsys, "compare", one, each, *options)
    assert code == 0, err
    # recalibrate --out writes each label's row with its line's id (it had stopped with a
    # StopIteration traceback once such a file was read).
    written = tmp_path / "out.csv"
    code, _, err = run(capsys, "recalibrate", one, one, *options[:-1], "--out", written)
    assert code == 0, err
    rows = written.read_text().splitlines()[1:]
    assert len(rows) == 40 * 8
    assert [r.rsplit(",", 1)[1] for r in rows] == [f"s{i // 8}" for i in range(320)]


def test_compare_names_the_line_where_one_id_a_line_groups_differ(tmp_path: Path, capsys):
    """Two files of one id a line, grouping the lines otherwise: the message had indexed
    the lines' ids by label (line 2 named with line 9's id), or raised an IndexError."""
    rows = [{"prob": [0.2, 0.7, 0.4], "label": [0, 1, i % 2]} for i in range(20)]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"sid": f"s{i}", **r}) + "\n" for i, r in enumerate(rows)))
    b.write_text("".join(json.dumps({"sid": f"t{max(i, 14) // 2}", **r}) + "\n"
                         for i, r in enumerate(rows)))  # fmt: skip
    code, out, err = run(capsys, "compare", a, b, "--groups", "sid", "--samples", "20")
    assert code == 2 and out == "" and "Traceback" not in err
    # b's first 16 lines are one group, t7: line 2 is the first whose group differs.
    assert "first differ at line 2 of both files (group 's1' in " in err
    assert "'t7' in " in err and "shares a group with line 1 in " in err


def test_one_group_id_per_json_line_only_and_mixed_rows(tmp_path: Path, capsys):
    """One id alone stands for a JSON line's labels only: a JSON document's ids, fewer than
    its labels, are refused by their count (spread, a column of half the labels' ids had
    grouped neighbours, review R5). One id alone on some lines and lists on others is
    named at the first line that differs (it had blamed the first, valid, line)."""
    records = [{"g": f"s{i}", "p": [0.2, 0.7, 0.4], "y": [0, 1, i % 2]} for i in range(20)]
    document = tmp_path / "records.json"
    document.write_text(json.dumps(records))
    for command in (["evaluate", document], ["recalibrate", document, document]):
        code, _, err = run(capsys, *command, "--groups", "g", "--samples", "20")
        assert code == 2 and "20 group ids for 60 labels" in err and "Traceback" not in err
    mixed = tmp_path / "mixed.jsonl"
    spread = {**records[3], "g": ["s3"] * 3}
    mixed.write_text("".join(json.dumps(r if i != 3 else spread) + "\n"
                             for i, r in enumerate(records)))  # fmt: skip
    code, _, err = run(capsys, "evaluate", mixed, "--groups", "g", "--samples", "20")
    assert code == 2
    assert "line 4, column 'g' holds a list of ids where line 1 holds one id alone" in err


def test_a_json_documents_ids_are_not_told_to_come_one_alone(tmp_path: Path, capsys):
    """The hint offered one id alone for a row's labels, which a JSON document's records
    do not take (only JSON lines do): following it led to another refusal (review R6)."""
    records = [{"g": ["a", "a"], "p": [0.2, 0.7, 0.4], "y": [0, 1, 1]} for _ in range(12)]
    document = tmp_path / "records.json"
    document.write_text(json.dumps(records))
    code, _, err = run(capsys, "evaluate", document, "--groups", "g", "--samples", "20")
    assert code == 2 and "holds 2 group ids for its 3 labels" in err and "alone" not in err
    lines = tmp_path / "records.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, _, err = run(capsys, "evaluate", lines, "--groups", "g", "--samples", "20")
    assert code == 2 and "or one id alone for the line's labels" in err


def test_an_id_is_read_alike_beside_text_ids() -> None:
    """Digits float() reads (Arabic-Indic, full-width) and blanks before a number: one
    group with the plain number whatever else the column holds (beside a text id they
    had been text, beside numbers alone numbers)."""
    from calib_metrics.predictions._ids import _to_ids

    for odd in ("٣", "３", "\xa03", "\u30003", "\n3"):
        assert _to_ids([odd, "3"], Path("x.csv"), "g").tolist() == [0, 0]
        assert _to_ids([odd, "3", "s"], Path("x.csv"), "g").tolist() == [0, 0, 1]


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_a_bare_groups_never_takes_the_labels_column(tmp_path: Path, capsys, suffix):
    """``--target doc --groups`` had read the labels column 'doc' (a usual group-id name)
    as the group ids too; it is found among the columns no other option took."""
    columns = {
        "prob": np.array([0.2, 0.7, 0.4]),
        "doc": np.array([0, 1, 1]),
        "sentence": np.array([1, 2, 2]),
    }
    path = tmp_path / f"d{suffix}"

    def write(names: list[str]) -> None:
        if suffix == ".npz":
            np.savez(path, **{n: columns[n] for n in names})
        else:
            rows = zip(*(columns[n] for n in names), strict=True)
            path.write_text("\n".join([",".join(names), *(",".join(map(str, r)) for r in rows)]))

    write(["prob", "doc", "sentence"])
    code, out, err = run(capsys, "evaluate", path, "--target", "doc", "--groups", "--json")
    assert code == 0, err
    assert json.loads(out)["group_column"] == "sentence"
    write(["prob", "doc"])
    code, out, err = run(capsys, "evaluate", path, "--target", "doc", "--groups")
    assert code == 2 and out == ""
    assert err.startswith(f"calib-metrics: error: {path} has no group-id column"), err
