"""`calib-metrics compare`: two files or two columns, a paired interval, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from calib_metrics.cli import main


def _write(path: Path, columns: dict[str, list]) -> Path:
    names = list(columns)
    rows = zip(*columns.values())
    path.write_text(",".join(names) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


@pytest.fixture
def predictions(tmp_path: Path) -> dict[str, Path]:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long().tolist()
    over = torch.where(q > 0.5, q.sqrt(), q**2)
    return {
        "a": _write(tmp_path / "a.csv", {"prob": over.tolist(), "label": y}),
        "b": _write(tmp_path / "b.csv", {"prob": q.tolist(), "label": y}),
        "both": _write(tmp_path / "both.csv", {"qa": over.tolist(), "qb": q.tolist(), "y": y}),
        "other": _write(tmp_path / "other.csv", {"prob": q.tolist(), "label": y[::-1]}),
    }


def test_two_files_and_two_columns_give_the_same_paired_result(predictions, capsys) -> None:
    assert main(["compare", str(predictions["a"]), str(predictions["b"]), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)
    argv = ["compare", str(predictions["both"]), "--probs", "qa", "--probs-b", "qb"]
    assert main([*argv, "--target", "y", "--json"]) == 0
    columns = json.loads(capsys.readouterr().out)
    assert files["difference"] == pytest.approx(columns["difference"])
    assert files["lower"] > 0 and files["p_value"] < 0.01
    assert files["difference"] == pytest.approx(files["a"]["calib_err"] - files["b"]["calib_err"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["other"], "same items"), ([], "--probs-b"), (["b", "--samples", "1"], "--samples")],
)
def test_bad_input_is_one_line_and_exit_2(predictions, capsys, extra, message) -> None:
    argv = ["compare", str(predictions["a"])]
    argv += [str(predictions[e]) if e in predictions else e for e in extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_b_reading_a_s_probs_column_says_so(predictions, capsys) -> None:
    """``--probs qa`` for file a is model b's column too, which b.csv lacks: the message
    had named the column alone, and the mistake looked like file a's."""
    argv = ["compare", str(predictions["both"]), str(predictions["b"]), "--probs", "qa"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "no column 'qa'" in err and "model b reads --probs's column (qa) unless --probs-b" in err
    assert main([*argv, "--probs-b", "prob", "--samples", "20"]) == 0


def test_a_column_b_s_file_leaves_unclear_is_named_by_probs_b(predictions, capsys) -> None:
    """--probs names file a's column (and b's by default): the advice for b's file is
    --probs-b (it had said --probs, which would have broken file a)."""
    a = predictions["b"]
    rows = a.read_text().splitlines()[1:]
    two = a.with_name("two.csv")
    two.write_text("prob_x,prob_y,label\n" + "".join(f"{r.split(',')[0]},{r}\n" for r in rows))
    argv = ["compare", str(a), str(two)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "two.csv: cannot tell which column holds the probabilities" in err
    assert "name it with --probs-b (" in err, err
    assert main([*argv, "--probs-b", "prob_y", "--samples", "20"]) == 0


def test_one_file_names_both_models_columns(predictions, capsys) -> None:
    argv = ["compare", str(predictions["both"]), "--probs", "qa", "--probs-b", "qb"]
    assert main([*argv, "--target", "y", "--samples", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith(f"  a: {predictions['both']} [qa]: ")  # b's alone had been
    assert lines[2].startswith(f"  b: {predictions['both']} [qb]: ")


@pytest.fixture
def tagged(tmp_path: Path) -> dict:
    """Three labels' pairs; model a is overconfident on NOUN only."""
    g = torch.Generator().manual_seed(1)
    q = torch.rand(3, 1500, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    a = q.clone()
    a[1] = torch.where(q[1] > 0.5, q[1].sqrt(), q[1] ** 2)
    names = ["VERB", "NOUN", "DET"]  # sorted: DET = 0, NOUN = 1, VERB = 2
    tag = [names[i] for i in range(3) for _ in range(1500)]
    columns = {"qa": a.reshape(-1).tolist(), "qb": q.reshape(-1).tolist()}
    sentence = (torch.arange(4500) * 7919 % 4500) // 15  # 300 sentences across the tags
    columns |= {"y": y.reshape(-1).long().tolist(), "tag": tag, "sent": sentence.tolist()}
    ids = torch.tensor([sorted(names).index(t) for t in tag])
    path = _write(tmp_path / "tagged.csv", columns)
    flat = {"a": a.reshape(-1), "b": q.reshape(-1), "y": y.reshape(-1)}
    return {"path": path, **flat, "ids": ids}


def _by_label_argv(tagged: dict, *extra: str) -> list[str]:
    argv = ["compare", str(tagged["path"]), "--probs", "qa", "--probs-b", "qb", "--target", "y"]
    return [*argv, "--labels", "tag", "--samples", "300", *extra]


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_labels_give_the_functional_per_label_result(tagged, capsys, correction) -> None:
    from calib_metrics.functional import compare_calibration_by_label

    assert main(_by_label_argv(tagged, "--correction", correction, "--json")) == 0
    got = json.loads(capsys.readouterr().out)
    want = compare_calibration_by_label(
        tagged["a"], tagged["b"], tagged["y"], tagged["ids"], correction=correction,
        n_samples=300, generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    rows = got["per_label"]
    assert list(rows) == ["DET", "NOUN", "VERB"]
    assert [r["n"] for r in rows.values()] == [1500, 1500, 1500]
    assert all(type(r["n"]) is int for r in rows.values())  # a count of pairs, not 1500.0
    for key in ("difference", "lower", "upper", "p_value", "adjusted_p_value"):
        assert [r[key] for r in rows.values()] == pytest.approx(getattr(want, key).tolist())
    # Each model's own interval, which the page's per-label chart draws as its whiskers.
    for model in ("a", "b"):
        for end in ("lower", "upper"):
            wanted = [float(getattr(getattr(c, model), end)) for c in want.per_label]
            assert [r[f"{model}_{end}"] for r in rows.values()] == pytest.approx(wanted)
    assert [r["better"] for r in rows.values()] == ["-", "b", "-"]
    counts = got["label_counts"]
    assert (counts["a_better"], counts["b_better"], counts["not_distinguishable"]) == (0, 1, 2)
    assert (want.a_better, want.b_better, want.not_distinguishable) == (0, 1, 2)
    assert counts["correction"] == correction


def test_labels_with_groups_resample_sentences_within_each_label(tagged, capsys) -> None:
    from calib_metrics.functional import compare_calibration_by_label
    from calib_metrics.predictions import read_table

    assert main(_by_label_argv(tagged, "--groups", "sent", "--json")) == 0
    got = json.loads(capsys.readouterr().out)
    # The reader numbers ids in sorted order of the column's text ("10" before "2").
    sentence = read_table(tagged["path"], "qa", "y", "sent").groups
    want = compare_calibration_by_label(
        tagged["a"], tagged["b"], tagged["y"], tagged["ids"], groups=sentence,
        n_samples=300, generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert got["resampled"] == "groups"
    assert [r["lower"] for r in got["per_label"].values()] == pytest.approx(want.lower.tolist())
    assert [r["upper"] for r in got["per_label"].values()] == pytest.approx(want.upper.tolist())


def test_labels_print_a_table_and_the_counts(tagged, capsys) -> None:
    assert main(_by_label_argv(tagged)) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(out) if line.split()[:2] == ["label", "n"])
    rows = {line.split()[0]: line.split() for line in out[header + 1 : header + 4]}
    assert set(rows) == {"DET", "NOUN", "VERB"} and rows["NOUN"][-1] == "b"
    assert out[-1].strip() == (
        "a better on 0, b better on 1, not distinguishable on 2 of 3 labels "
        "(Holm (family-wise error) at alpha = 0.05)"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--labels", "nope"], "nope"),
        (["--labels", "tag", "--alpha", "1.5"], "error: --alpha must lie in (0, 1), got 1.5"),
        (["--label", ""], "no column ''"),
        (["--correction", "bh"], "--label COLUMN only"),
        (["--alpha", "0.1"], "--label COLUMN only"),
    ],
)
def test_bad_labels_are_one_line_and_exit_2(tagged, capsys, extra, message) -> None:
    argv = ["compare", str(tagged["path"]), "--probs", "qa", "--probs-b", "qb", "--target", "y"]
    assert main([*argv, *extra, "--samples", "50"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_mode_compares_multiclass_files(tmp_path, capsys, mode) -> None:
    from cli_runs import two_multiclass_models

    from calib_metrics.functional import compare_calibration

    (sharp, probs, target), paths = two_multiclass_models(tmp_path, 800)
    argv = ["compare", *paths, "--mode", mode, "--json"]
    assert main([str(a) for a in [*argv, "--samples", "200"]]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = compare_calibration(
        sharp, probs, target, mode=mode, n_samples=200, generator=torch.Generator().manual_seed(0)
    )
    assert summary["mode"] == mode
    # The pairs scored, as evaluate's n counts them: classwise had said 800, its items.
    assert summary["pairs"] == (800 if mode == "top_label" else 800 * 3)
    # An item's one-vs-rest pairs are resampled together, and so is its pair in every
    # class's set (one weight an item for all classes); a top-label item is one pair.
    units = "pairs" if mode == "top_label" else "items"
    assert summary["resampled"] == units
    assert summary["difference"] == pytest.approx(expected.difference.item(), rel=1e-12)
    assert summary["lower"] == pytest.approx(expected.lower.item(), rel=1e-12)
    assert summary["p_value"] == pytest.approx(expected.p_value.item())
    # The text's header and the page's interval kind name the same units.
    page = tmp_path / "page.html"
    assert main([str(a) for a in [*argv[:-1], "--samples", "200", "--html", page]]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert f"paired bootstrap over {units} (200 draws" in header
    # Classwise, each class's 800 items are what its ⌈√N⌉ bins count, not the 2400 pairs.
    pairs_note = {
        "one_vs_rest": " (2400 one-vs-rest pairs, the N of ⌈√N⌉)",
        "top_label": "",
        "classwise": " (2400 one-vs-rest pairs, each class's 800 binned apart)",
    }
    assert header.startswith(f"N = 800 items{pairs_note[mode]}, ")
    assert f"paired bootstrap over {units}, 200 draws" in page.read_text(encoding="utf-8")


def test_a_label_per_class_of_a_multiclass_file_is_named_as_such(
    tmp_path, capsys, monkeypatch
) -> None:
    """A tag per class beside [N, C] probabilities had been refused as "2400 values in
    --label 'tag' for 800 rows" alone, and only after the whole file's paired draws; a
    label per item (a domain) is compared per label."""
    import numpy as np

    import calib_metrics.functional.comparison as comparison

    # The command's paired draws (compare_calibration, with the side of its draws).
    drawn = []
    compare = comparison.paired_comparison
    monkeypatch.setattr(
        comparison, "paired_comparison", lambda *a, **k: drawn.append(1) or compare(*a, **k)
    )
    g = torch.Generator().manual_seed(0)
    probs = (torch.randn(800, 3, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    tag = np.tile(np.arange(3), (800, 1))
    for name in ("a", "b"):
        np.savez(tmp_path / f"{name}.npz", probs=probs.numpy(), target=target.numpy(), tag=tag)
    argv = ["compare", tmp_path / "a.npz", tmp_path / "b.npz", "--samples", "100"]
    assert main([str(a) for a in [*argv, "--label", "tag"]]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "2400 values in --label 'tag' for 800 rows (3 a row: --label takes one label" in line
    assert "compute_by_label()" in line and not drawn  # refused before the draws
    domain = np.arange(800) % 2
    for name in ("a", "b"):
        np.savez(
            tmp_path / f"{name}.npz", probs=probs.numpy(), target=target.numpy(), domain=domain
        )
    assert main([str(a) for a in [*argv, "--label", "domain", "--json"]]) == 0
    assert set(json.loads(capsys.readouterr().out)["per_label"]) == {"0", "1"} and drawn


@pytest.mark.parametrize(
    ("classes_b", "described"), [(None, "one probability (binary)"), (4, "4 class probabilities")]
)
def test_files_that_score_different_classes_are_named(tmp_path, capsys, classes_b, described):
    import numpy as np

    g = torch.Generator().manual_seed(1)
    probs = torch.randn(300, 3, generator=g, dtype=torch.float64).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    np.savez(tmp_path / "a.npz", probs=probs.numpy(), target=target.numpy())
    if classes_b is None:  # a binary file whose labels happen to be 0/1
        other = {"probs": probs[:, 1].numpy(), "target": (target == 1).long().numpy()}
    else:
        uniform = torch.full((300, classes_b), 1 / classes_b)
        other = {"probs": uniform.numpy(), "target": target.numpy()}
    np.savez(tmp_path / "b.npz", **other)
    assert main(["compare", str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "must score the same classes" in err
    assert f"gives 3 class probabilities per item, this file {described}" in err


def test_label_with_too_few_items_is_reported_as_not_tested(tmp_path, capsys) -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(402, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long().tolist()
    tags = ["NOUN"] * 400 + ["RARE"] * 2
    a = _write(tmp_path / "a.csv", {"prob": q.tolist(), "label": y, "tag": tags})
    b = _write(tmp_path / "b.csv", {"prob": (q * 0.9).tolist(), "label": y})
    assert main(["compare", str(a), str(b), "--label", "tag", "--samples", "100"]) == 0
    out = capsys.readouterr().out
    assert "(1 too small to call: fewer than 50 pairs)" in out
    rare = next(line for line in out.splitlines() if "RARE" in line)
    assert rare.endswith("      —       —  -") and "nan" not in rare.split("]")[-1], rare
    assert main(["compare", str(a), str(b), "--label", "tag", "--samples", "100", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)  # strict JSON: NaN printed as null
    assert summary["per_label"]["RARE"]["p_value"] is None
    assert summary["per_label"]["RARE"]["a_lower"] is None  # no interval of its own either
    assert summary["label_counts"]["not_tested"] == 1


def test_labels_that_differ_are_named_by_their_first_row(predictions, capsys) -> None:
    assert main(["compare", str(predictions["a"]), str(predictions["other"])]) == 2
    err = capsys.readouterr().err.strip()
    assert "first differ at line " in err and "of both files" in err and "\n" not in err


def test_labels_that_differ_are_named_by_each_files_line(tmp_path, capsys) -> None:
    """The cross-file errors name lines as the value errors do ("line 7", not "data row
    6"), each file's own where they differ (JSON lines have no header line)."""
    probs = [0.1 * (i % 9) + 0.05 for i in range(40)]
    labels = [i % 2 for i in range(40)]
    a = tmp_path / "a.jsonl"
    a.write_text("".join(f'{{"prob": {q}, "label": {y}}}\n' for q, y in zip(probs, labels)))
    labels[5] = 1 - labels[5]
    b = _write(tmp_path / "b.csv", {"prob": probs, "label": labels})
    assert main(["compare", str(a), str(b), "--samples", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"first differ at line 6 of {a}, line 7 of {b}: 1 vs 0" in err, err


def test_a_p_value_below_what_the_draws_can_show_is_printed_as_a_bound(predictions, capsys) -> None:
    """No paired draw reached 0: p is below 2/S, not 0 (the text said "p = 0")."""
    argv = ["compare", str(predictions["a"]), str(predictions["b"]), "--samples", "200"]
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # The raw p of 0 stays (it is what the draws give); its bound stands beside it.
    assert summary["p_value"] == 0 and summary["p_value_text"] == "< 0.01"
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "p < 0.01" in out and "p = 0\n" not in out


def test_recalibrate_prints_the_same_bound(tmp_path, capsys) -> None:
    g = torch.Generator().manual_seed(1)
    paths = []
    for name in ("dev", "test"):
        q = torch.rand(3000, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g).long().tolist()
        paths.append(_write(tmp_path / f"{name}.csv", {"prob": q.sqrt().tolist(), "label": y}))
    argv = ["recalibrate", *map(str, paths), "--method", "platt", "--samples", "200"]
    assert main([*argv, "--out", str(tmp_path / "out.csv")]) == 0
    out = capsys.readouterr().out
    assert "paired, p < 0.01" in out, out


def test_per_label_p_values_of_0_are_bounds_in_text_and_html(tagged, tmp_path, capsys) -> None:
    page = tmp_path / "compare.html"
    assert main(_by_label_argv(tagged, "--html", str(page))) == 0
    noun = next(line for line in capsys.readouterr().out.splitlines() if "NOUN" in line)
    # No draw of 300 reached 0: p < 2/300. The correction takes the Monte Carlo p-value
    # 2/301 (not 0, which no correction moves): Holm's smallest of 3 is 3 · 2/301.
    assert noun.count("< 0.0067") == 1 and noun.endswith("< 0.0067  0.0199  b"), noun
    assert main(_by_label_argv(tagged, "--json")) == 0
    rows = json.loads(capsys.readouterr().out)["per_label"]
    assert rows["NOUN"]["p_value"] == 0 and rows["NOUN"]["p_value_text"] == "< 0.0067"
    assert rows["NOUN"]["adjusted_p_value"] == pytest.approx(6 / 301, rel=1e-12)
    assert rows["NOUN"]["adjusted_p_value_text"] == "0.0199"
    table = page.read_text().split('id="per-label-table"')[1]
    row = next(r for r in table.split("<tr>") if "NOUN" in r)
    assert row.count("&lt; 0.0067") == 1 and row.count(">0.0199<") == 1, row


def test_too_few_draws_for_the_correction_are_one_warning_line(tagged, capsys) -> None:
    """With 30 draws (p >= 2/31) Holm over 3 labels, which needs 0.05/3, can call none:
    the command says so and how many draws would do (3 labels: 2·3/0.05 − 1 = 119)."""
    argv = _by_label_argv(tagged)
    argv[argv.index("--samples") + 1] = "30"
    assert main(argv) == 0
    captured = capsys.readouterr()
    warning = [line for line in captured.err.splitlines() if "no label can be called" in line]
    assert len(warning) == 1 and warning[0].startswith("calib-metrics: warning: ")
    assert warning[0].endswith("use --samples 119 or more")
    assert "a better on 0, b better on 0, not distinguishable on 3 of 3" in captured.out


def test_a_level_no_allowed_draws_can_reach_is_said_so(tagged, capsys) -> None:
    """At --alpha 1e-7 the warning had asked for some 60 million draws (--samples), which the
    command then refused (at most 10,000,000): it now says that no allowed count can, and the
    smallest --alpha that can (not "fewer labels": not even one label is callable), in the
    command's words, numbers written as its refusals write them."""
    argv = _by_label_argv(tagged, "--alpha", "1e-7")
    argv[argv.index("--samples") + 1] = "50"
    assert main(argv) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if "no label" in line]
    assert len(warning) == 1 and "use --samples" not in warning[0]
    assert "alpha=" not in warning[0] and "at --alpha 1e-07:" in warning[0]
    assert warning[0].endswith(
        "even --samples 10,000,000, the most, cannot call one: use --alpha 6e-07 or more"
    )


def test_the_small_label_warning_agrees_with_the_counts_line(tmp_path, capsys) -> None:
    # Labels of 3 and 37 pairs: the counts line said "2 too small to call" and the warning
    # "1 of 3 labels ... (as few as 37) ... --min-units 10 calls them anyway".
    g = torch.Generator().manual_seed(2)
    q = torch.rand(440, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    b = (q + 0.1 * torch.randn(440, generator=g, dtype=torch.float64)).clamp(0, 1)
    tags = ["BIG"] * 400 + ["FEW"] * 37 + ["ONE"] * 3
    columns = {"prob": q.tolist(), "q_b": b.tolist(), "label": y.long().tolist(), "tag": tags}
    path = _write(tmp_path / "a.csv", columns)
    argv = ["compare", str(path), "--probs-b", "q_b", "--label", "tag", "--samples", "200"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "of 3 labels (2 too small to call: fewer than 50 pairs)" in captured.out
    warning = next(line for line in captured.err.splitlines() if "not called" in line)
    assert "2 of 3 labels have fewer than --min-units 50 resampling units (as few as 3)" in warning
    assert "--min-units 10 calls those anyway" in warning
    assert warning.endswith("1 of them has fewer than 10, too few for a bootstrap interval or "
                            "p-value at all, and cannot be called")  # fmt: skip


def test_labels_of_fewer_than_50_items_are_reported_but_not_called(tmp_path, capsys) -> None:
    # Labels of 20-30 pairs had been called at a family-wise error of 0.09-0.13.
    g = torch.Generator().manual_seed(1)
    q = torch.rand(430, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    b = q.clone()
    b[400:] = 1 - y[400:]  # SMALL: b always wrong on its 30 pairs
    tags = ["BIG"] * 400 + ["SMALL"] * 30
    a_file = _write(
        tmp_path / "a.csv", {"prob": q.tolist(), "label": y.long().tolist(), "tag": tags}
    )
    b_file = _write(tmp_path / "b.csv", {"prob": b.tolist(), "label": y.long().tolist()})
    argv = ["compare", str(a_file), str(b_file), "--label", "tag", "--samples", "2000", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["label_counts"]["not_tested"] == 1
    assert (summary["label_counts"]["min_units"], summary["label_counts"]["unit"]) == (50, "pairs")
    small, big = summary["per_label"]["SMALL"], summary["per_label"]["BIG"]
    assert (small["units"], small["called"], big["units"], big["called"]) == (30, False, 400, True)
    assert summary["per_label"]["SMALL"]["better"] == "-"
    assert summary["per_label"]["SMALL"]["p_value"] < 0.001  # reported, uncorrected
    assert "--min-units 10 calls them anyway" in captured.err
    assert main([*argv, "--min-units", "10"]) == 0
    called = json.loads(capsys.readouterr().out)
    assert called["per_label"]["SMALL"]["better"] == "a"
    assert called["label_counts"]["not_tested"] == 0
    assert main([*argv, "--min-units", "5"]) == 2
    assert "--min-units must be at least 10" in capsys.readouterr().err
    assert main(["compare", str(a_file), str(b_file), "--min-units", "10"]) == 2
    assert "apply to --label COLUMN only" in capsys.readouterr().err


def test_a_long_run_is_announced_before_it_starts(predictions, capsys, monkeypatch) -> None:
    from calib_metrics import cli

    argv = ["compare", str(predictions["a"]), str(predictions["b"]), "--samples", "200"]
    assert main(argv) == 0
    assert "drawing" not in capsys.readouterr().err  # 3,000 pairs × 200 draws: no notice
    monkeypatch.setattr(cli, "LONG_RUN_WEIGHTS", 3000 * 200)

    def compare_after_notice(*args, **kwargs):
        notice = capsys.readouterr().err  # what stderr held when the draws began
        assert "drawing 200 paired resamples of 3,000 pairs" in notice
        assert "--samples" in notice and notice[-1] == "\n" and notice.count("\n") == 1
        return compare(*args, **kwargs)

    # The command's paired draws: compare_calibration, with the side of its draws.
    from calib_metrics.functional.comparison import paired_comparison as compare

    monkeypatch.setattr(
        "calib_metrics.functional.comparison.paired_comparison", compare_after_notice
    )
    assert main(argv) == 0
    assert "drawing" not in capsys.readouterr().err  # said once, not again among the warnings


def test_per_label_units_of_multiclass_items_are_shown_beside_their_pairs(tmp_path, capsys):
    """A label of 30 items (90 one-vs-rest pairs) was "fewer than 50 items, too small to
    call" beside n = 90 and no items column, in the terminal and on the page."""
    import numpy as np

    g = torch.Generator().manual_seed(0)
    probs = (torch.randn(830, 3, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    domain = np.array(["BIG"] * 800 + ["SMALL"] * 30)
    sharp = torch.softmax(1.5 * probs.log(), -1)
    for name, p in (("a", sharp), ("b", probs)):
        np.savez(tmp_path / f"{name}.npz", probs=p.numpy(), target=target.numpy(), domain=domain)
    argv = [str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--label", "domain"]
    page = tmp_path / "r.html"
    assert main(["compare", *argv, "--samples", "100", "--html", str(page)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("label"))
    assert header.split()[:3] == ["label", "n", "items"]
    small = next(line for line in lines if line.lstrip().startswith("SMALL"))
    assert small.split()[1:3] == ["90", "30"]
    html = page.read_text()
    assert "<th>items</th>" in html


def test_numeric_labels_are_compared_in_numeric_order(tmp_path, capsys) -> None:
    """Labels that are all numbers had been ordered as text (-1, 10, 100, 2, 9) in the
    table, the JSON and the order the labels draw in; words stay in text order."""
    from calib_metrics.functional import compare_calibration_by_label

    g = torch.Generator().manual_seed(3)
    q = torch.rand(2500, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    written = torch.tensor([-1, 2, 9, 10, 100])[torch.randint(0, 5, (2500,), generator=g)]
    path = tmp_path / "tagged.csv"
    rows = [f"{a},{min(a + 0.05, 1.0)},{int(t)},{int(c)}" for a, t, c in zip(q, y, written)]
    path.write_text("qa,qb,y,tag\n" + "\n".join(rows) + "\n")
    argv = ["compare", path, "--probs", "qa", "--probs-b", "qb", "--target", "y"]
    assert main([str(a) for a in [*argv, "--label", "tag", "--samples", "200", "--json"]]) == 0
    got = json.loads(capsys.readouterr().out)["per_label"]
    assert list(got) == ["-1", "2", "9", "10", "100"]
    want = compare_calibration_by_label(
        q, q.add(0.05).clamp(max=1.0), y, written, n_samples=200,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert [r["lower"] for r in got.values()] == pytest.approx(want.lower.tolist())
