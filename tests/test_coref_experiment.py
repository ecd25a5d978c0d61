"""Tests for the coreference scores (MUC, B³, pairwise) and a tiny end-to-end experiment run."""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import shutil
import tarfile
from pathlib import Path

import pytest
import torch

from calib_metrics.functional.comparison import MIN_UNITS
from calib_metrics.paper import coref
from calib_metrics.paper.coref_scores import b_cubed, muc, pairwise, score_corpus

# ---------------------------------------------------------------------------
# scores: textbook examples

KEY_BB = [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10, 11, 12]]
RESPONSE_BB = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11, 12]]


def test_muc_vilain_example():
    # Vilain et al. (1995): key {A B C D}; response {A B} {C D}: R = 2/3, P = 1
    s = muc([["A", "B", "C", "D"]], [["A", "B"], ["C", "D"]])
    assert s.precision == pytest.approx(1.0) and s.recall == pytest.approx(2 / 3)
    assert s.f1 == pytest.approx(0.8)


def test_bagga_baldwin_example():
    # Bagga & Baldwin (1998): merging two key entities; MUC P = 9/10 while B³ P = 16/21
    m = muc(KEY_BB, RESPONSE_BB)
    assert m.recall == pytest.approx(1.0) and m.precision == pytest.approx(0.9)
    b = b_cubed(KEY_BB, RESPONSE_BB)
    assert b.recall == pytest.approx(1.0)
    assert b.precision == pytest.approx((5 + 2 * 2 / 7 + 5 * 5 / 7) / 12)
    p = pairwise(KEY_BB, RESPONSE_BB)
    assert p.recall == pytest.approx(1.0) and p.precision == pytest.approx(21 / 31)


def test_scores_singletons_and_perfect():
    key = [[0, 1], [2], [3, 4, 5]]
    for f in (muc, b_cubed, pairwise):
        assert f(key, key).f1 == pytest.approx(1.0)
    # all singletons: no links, B³ precision 1, recall = mean 1/|K|
    resp = [[i] for i in range(6)]
    assert muc(key, resp).f1 == 0.0 and pairwise(key, resp).f1 == 0.0
    assert b_cubed(key, resp).precision == pytest.approx(1.0)
    assert b_cubed(key, resp).recall == pytest.approx((2 * 0.5 + 1 + 3 / 3) / 6)


def test_score_corpus_micro_average_and_errors():
    s = score_corpus([KEY_BB, [[1, 2]]], [RESPONSE_BB, [[1], [2]]])
    # MUC recall: (9 + 0) / (9 + 1)
    assert s["muc"].recall == pytest.approx(0.9)
    assert s["avg"].f1 == pytest.approx((s["muc"].f1 + s["b3"].f1) / 2)
    with pytest.raises(ValueError, match="two clusters"):
        muc([[1, 2], [2, 3]], [[1]])
    with pytest.raises(ValueError, match="response documents"):
        score_corpus([KEY_BB], [])


@pytest.mark.parametrize(
    ("q", "y", "message"),
    [
        ([0.2, 1.5], [0.0, 1.0], r"q must lie in \[0, 1\], got 1.5"),
        ([0.2, -0.1], [0.0, 1.0], r"q must lie in \[0, 1\], got -0.1"),
        ([0.2, math.nan], [0.0, 1.0], "q contains NaN"),
        ([0.2, 0.3], [0.0, 1.0, 1.0], r"q and y must have the same shape .*\(2,\) and \(3,\)"),
        ([0.2, 0.3, 0.4], [0.0, 1.0], r"q and y must have the same shape .*\(3,\) and \(2,\)"),
    ],
)
def test_confidence_by_range_refuses_pairs_it_cannot_judge(q, y, message):
    """A q outside [0, 1] or NaN, in no range, had been dropped silently; q and y of
    different lengths had been a bare IndexError."""
    with pytest.raises(ValueError, match=message):
        coref.confidence_by_range(torch.tensor(q), torch.tensor(y))
    with pytest.raises(ValueError, match=r"q must be a torch\.Tensor, got list"):
        coref.confidence_by_range(q, torch.tensor(y))


def test_confidence_by_range_verdicts():
    q = torch.tensor([0.8] * 1000 + [0.2] * 1000)
    y = torch.tensor([1.0] * 500 + [0.0] * 500 + [1.0] * 200 + [0.0] * 800)
    rows = {r["range"]: r for r in coref.confidence_by_range(q, y)}
    assert rows["0.7-0.9"]["verdict"] == "overconfident"  # says 0.8, happens 0.5
    assert rows["0.1-0.3"]["verdict"].startswith("calibrated")


@pytest.mark.parametrize(
    ("q", "y"),
    [
        ([0.55], [1.0]),  # one pair: the observed frequency's se had been 0
        ([0.8, 0.8], [1.0, 1.0]),  # calibrated q = 0.8 gives two positives 64% of the time
        ([0.03] * 20, [0.0] * 20),  # no positive where 0.6 were expected
        ([1.0, 1.0], [1.0, 1.0]),  # certain and right: no gap at all
    ],
)
def test_confidence_by_range_small_ranges_are_judged_by_their_own_claim(q, y):
    """The standard error is the one the range's q's imply, not the observed frequency's,
    which is ~0 at a frequency of 0 or 1 and had called such ranges underconfident."""
    (row,) = coref.confidence_by_range(torch.tensor(q), torch.tensor(y))
    assert row["verdict"].startswith("calibrated")


def test_confidence_by_range_still_calls_a_clear_miss():
    n = 400
    y = (torch.arange(n) < n * 0.95).double()  # 0.95 come true where 0.8 was claimed
    (row,) = coref.confidence_by_range(torch.full((n,), 0.8), y)
    assert row["verdict"] == "underconfident"
    (row,) = coref.confidence_by_range(torch.full((n,), 0.8), 1 - y)
    assert row["verdict"] == "overconfident"


def test_confidence_by_range_a_certain_prediction_proved_wrong_is_overconfident():
    """q = 0 allows no positive at all; the observed frequency's se had let one pass."""
    (row,) = coref.confidence_by_range(torch.zeros(2), torch.tensor([0.0, 1.0]))
    assert row["verdict"] == "overconfident"


@pytest.mark.parametrize(
    ("q", "positives"),
    [
        ([0.8], 0),  # a calibrated q = 0.8 does not corefer 20% of the time
        ([0.2], 1),  # the mirror image
        ([1e-4] * 10_000, 3),  # P(>= 3 positives) = 0.08 where 1 is expected
    ],
)
def test_confidence_by_range_few_expected_events_are_tested_exactly(q, positives):
    """1.96 se of a normal had called these overconfident: where sum q (1 - q) is small the
    count's exact Poisson-binomial p-value decides."""
    y = (torch.arange(len(q)) < positives).double()
    (row,) = coref.confidence_by_range(torch.tensor(q), y)
    assert row["verdict"] == "calibrated (exact p ≥ 0.05)"


@pytest.mark.parametrize(
    ("q", "n", "positives", "verdict"),
    [
        (1e-4, 10_000, 6, "overconfident"),  # 1 expected: P(>= 6) = 0.0006
        (0.85, 20, 13, "overconfident"),  # 17 expected: p = 0.022
        # 3.4 expected, none seen: p = 0.045, though 3.4 is within 1.96 se (3.43)
        (0.1, 34, 0, "underconfident"),
        (0.9, 34, 34, "underconfident"),
        # Past the pmf's cut (1 expected + 100): taken as p = 0.
        (1e-4, 10_000, 200, "overconfident"),
        # Above 0.5 the negatives are counted (and cut): 1 expected.
        (0.9999, 10_000, 10_000 - 3, "calibrated (exact p ≥ 0.05)"),  # 3 negatives: p = 0.08
        (0.9999, 10_000, 10_000 - 6, "overconfident"),  # 6 negatives: p = 0.0006
        (0.9999, 10_000, 10_000 - 200, "overconfident"),  # past the cut
    ],
)
def test_confidence_by_range_exact_test_still_calls_a_miss(q, n, positives, verdict):
    y = (torch.arange(n) < positives).double()
    (row,) = coref.confidence_by_range(torch.full((n,), q), y)
    assert row["verdict"] == verdict


def test_confidence_by_range_refuses_labels_other_than_0_and_1() -> None:
    """The exact test counts positives: labels of 0.45 had been read as a count of 4 of
    10 (rounded), the normal branch as a frequency of 0.45."""
    with pytest.raises(ValueError, match="y must hold 0/1 labels"):
        coref.confidence_by_range(torch.full((10,), 0.2), torch.full((10,), 0.45))


@pytest.mark.parametrize(
    ("q", "freq", "verdict"),
    [
        (0.40, 0.80, "overconfident"),  # says "not coreferent" at 0.6, right 20% of the time
        (0.60, 0.20, "overconfident"),  # the mirror image
        (0.40, 0.20, "underconfident"),  # the same side, farther from 0.5
        (0.60, 0.40, "overconfident"),  # across 0.5, and no farther from it than q
        (0.50, 0.80, "underconfident"),  # q = 0.5 claims neither side
    ],
)
def test_confidence_by_range_verdict_when_the_frequency_crosses_one_half(q, freq, verdict):
    """The verdict reads q as confidence in its side of 0.5: a frequency across 0.5 is
    overconfident however far from 0.5 it lies (docs/coref.md had said "under" for a
    frequency farther from 0.5 than q, which is the rule only on q's side)."""
    n = 1000
    y = (torch.arange(n) < round(freq * n)).double()
    (row,) = coref.confidence_by_range(torch.full((n,), q), y)
    assert row["freq"] == pytest.approx(freq) and row["verdict"] == verdict


# ---------------------------------------------------------------------------
# tiny end-to-end run on synthetic CoNLL-U

NAMES = [("Anna", "she"), ("Boris", "he"), ("Clara", "she"), ("David", "he"), ("Ella", "she")]


def _line(k, form, upos, xpos, head, deprel, entity=None):
    misc = f"Entity={entity}" if entity else "_"
    return f"{k}\t{form}\t{form.lower()}\t{upos}\t{xpos}\t_\t{head}\t{deprel}\t_\t{misc}"


def _conllu_doc(rng: random.Random, doc_id: str) -> str:
    lines = [f"# newdoc id = {doc_id}", "# meta::dateCreated = 2020-01-01"]
    cast = rng.sample(range(len(NAMES)), 3)
    prev = None
    for _ in range(7):
        subj, obj = rng.sample(cast, 2)
        if prev is not None and rng.random() < 0.5:
            subj = prev
            first = _line(1, NAMES[subj][1].capitalize(), "PRON", "PRP", 2, "nsubj", f"({subj})")
        else:
            first = _line(1, NAMES[subj][0], "PROPN", "NNP", 2, "nsubj", f"({subj})")
        lines += [first, _line(2, "met", "VERB", "VBD", 0, "root")]
        lines += [_line(3, NAMES[obj][0], "PROPN", "NNP", 2, "obj", f"({obj})")]
        lines += [_line(4, ".", "PUNCT", ".", 2, "punct"), ""]
        prev = subj
    return "\n".join(lines) + "\n"


def _write_data(root: Path) -> None:
    rng = random.Random(0)
    folder = root / "gum-ontogum-coref"
    folder.mkdir(parents=True)
    for split, n in (("train", 8), ("dev", 2), ("test", 3)):
        text = "".join(_conllu_doc(rng, f"{split}_{k}") for k in range(n))
        (folder / f"ontogum-{split}.conllu").write_text(text)
    lit = root / "litbank-coref"
    lit.mkdir()
    rows = ["#begin document (1_book); part 0"]
    for s in range(6):
        k = s % 2
        rows += [f"1_book\t0\t0\t{NAMES[k][0]}\t_\t_\t_\t_\t_\t_\t_\t_\t({k})",
                 "1_book\t0\t1\tsaw\t_\t_\t_\t_\t_\t_\t_\t_\t_",
                 f"1_book\t0\t2\t{NAMES[k][1]}\t_\t_\t_\t_\t_\t_\t_\t_\t({k})", ""]  # fmt: skip
    rows.append("#end document")
    plain = lit / "1_book.conll"
    plain.write_text("\n".join(rows) + "\n")
    with tarfile.open(lit / "litbank-coref-conll.tar.gz", "w:gz") as tar:
        tar.add(plain, arcname="coref/conll/1_book.conll")
    plain.unlink()


def test_end_to_end_quick_run(tmp_path: Path, capsys):
    _write_data(tmp_path / "data")
    parser = argparse.ArgumentParser()
    coref.add_arguments(parser)
    out = tmp_path / "out"
    args = parser.parse_args(
        ["--data", str(tmp_path / "data"), "--out", str(out), "--quick", "--n-bits", "12",
         "--samples", "300", "--ci-samples", "200", "--epochs", "3", "--l2", "1e-5", "1e-2"]
    )  # fmt: skip
    results = coref.run(args)
    for name in ("results.json", "results.md", "ranker.pt"):
        assert (out / name).is_file(), name
    assert set(results["sets"]) == {"ontogum_test", "litbank"}
    test = results["sets"]["ontogum_test"]
    n = [7 * 2] * 3  # three test documents of 14 mentions each
    assert test["pairs"] == sum(k * (k - 1) // 2 for k in n)
    for which in ("exact", "sampled"):
        assert 0.0 <= test[which]["main"]["error"] <= 1.0
        assert test[which]["main"]["lower"] <= test[which]["main"]["upper"]
        assert "small" in test[which]  # too few pairs for 10 bins of 5000
        assert (out / test[which]["figure"]).is_file()
    d = test["exact_documents"]
    assert d["bins"] >= 1 and 0.0 <= d["error"] <= 1.0
    if test["documents"] >= MIN_UNITS:
        assert d["lower"] <= d["error"] <= d["upper"]
    else:  # three documents: too few groups to resample, no interval (NaN ends)
        assert math.isnan(d["lower"]) and math.isnan(d["upper"])
    per = d["per_document"]
    assert 0 <= per["documents"] <= test["documents"]
    if per["documents"]:
        assert per["min"] <= per["median"] <= per["max"]
    assert 0.0 <= test["abs_diff_mean"] <= test["abs_diff_max"] <= 1.0
    # Issue 15: sampled against exact marginals, paired over documents.
    for ev in results["sets"].values():
        c = ev["sampled_minus_exact"]
        # An interval for the difference of true errors: it need not hold the difference of
        # the clipped estimates (compare_calibration's docstring), but it is an interval.
        if ev["documents"] >= MIN_UNITS:
            assert c["lower"] <= c["upper"] and 0 <= c["p_value"] <= 1
        else:  # too few documents to resample: no interval, no p-value (NaN, null in JSON)
            assert all(c[k] is None or math.isnan(c[k]) for k in ("lower", "upper", "p_value"))
        assert c["difference"] == pytest.approx(c["a"] - c["b"])
        assert c["b"] == pytest.approx(ev["exact_documents"]["error"])  # the same estimator
    assert test["abs_diff_mean"] < 0.05  # 300 samples: Monte Carlo error ~ 0.03 at most
    assert len(results["l2_grid"]) == 2
    for g in results["l2_grid"]:
        assert g["objective"][-1] < g["objective"][0]
    saved = json.loads((out / "results.json").read_text())
    assert saved["sets"]["litbank"]["pairs"] == 12 * 11 // 2
    markdown = (out / "results.md").read_text()
    assert "CalibErr" in markdown and "sampled − exact, paired [95%]" in markdown
    # The paper's columns are named, with the draws they were given.
    assert "CalibErr exact and sampled [95% CI]: the paper's estimator, plug-in in bins" in markdown
    assert f"({saved['settings']['ci_samples']} normal draws per bin)" in markdown
    # The L2 grid's 1e-5 had been written with 4 decimals: "0.0000", as if no penalty.
    assert "| 1e-05 |" in markdown and "| 0.01 |" in markdown
    # A header cell's |…| had split it: 15 header cells over 13 columns, no table on GitHub.
    header, rule = next(
        (line, after) for line, after in zip(markdown.splitlines(), markdown.splitlines()[1:])
        if line.startswith("| set |")
    )  # fmt: skip
    assert r"mean / max \|sampled − exact\|" in header
    assert len(re.split(r"(?<!\\)\|", header)) == rule.count("|") + 1
    assert "LitBank not evaluated" not in markdown
    # Too few pairs for 10 bins of 5000: the figures bin finer, and results.md gives each
    # figure's numbers (it had given only the exact one; the sampled figure's title read a
    # CalibErr found nowhere in the text).
    for ev in saved["sets"].values():
        for which in ("exact", "sampled", "sampled_random_ties"):
            f = ev[which]["small"]
            title = f"{f['error']:.4f} [{f['lower']:.4f}, {f['upper']:.4f}] · {f['bins']} bins"
            assert title in markdown, (which, title)
    # The paper's interval redraws cut tie groups' bins independently: the pairs in them
    # are counted per column (the library's warning, whose advice the command cannot take,
    # is not printed).
    assert "Pairs in tie groups of mixed labels that bin boundaries cut" in markdown
    assert all(
        isinstance(ev[which]["main"]["cut_tie_pairs"], int)
        for ev in saved["sets"].values() for which in ("exact", "sampled")
    )  # fmt: skip
    # The ranges' freq − q is signed as every difference (a positive one had been unsigned).
    ranges = markdown.split("confidence by range")[1].split("\n\n")[1].splitlines()[2:]
    gaps = [row.split(" | ")[4] for row in ranges]
    assert gaps and all(re.fullmatch(r"[+-]\d\.\d{4}", gap) for gap in gaps), gaps
    # Three test documents and one book: no interval to print, said in the library's words
    # (the table and the summary had printed [nan, nan] and [+nan, +nan]).
    printed = capsys.readouterr().out
    for text in (markdown, printed):
        assert not re.search(r"\bnan\b", text, re.IGNORECASE), text
        assert "no interval (fewer than 10 resampled documents)" in text


def _quick_args(data: Path, out: Path) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    coref.add_arguments(parser)
    return parser.parse_args(
        ["--data", str(data), "--out", str(out), "--quick", "--n-bits", "12",
         "--samples", "50", "--ci-samples", "50", "--epochs", "1", "--l2", "1e-2"]
    )  # fmt: skip


def test_quick_reads_only_the_documents_it_keeps(tmp_path: Path):
    """--quick had parsed all of OntoGUM to keep 12 / 3 / 3 documents: half its time."""
    _write_data(tmp_path / "data")
    folder = tmp_path / "data" / "gum-ontogum-coref"
    rng = random.Random(1)
    quick = {"train": 12, "dev": 3, "test": 3}
    for split, kept in quick.items():
        docs = "".join(_conllu_doc(rng, f"{split}_{k}") for k in range(kept + 1))
        # Unreadable past the first sentence of the first document after the kept ones.
        (folder / f"ontogum-{split}.conllu").write_text(docs + "<html>not CoNLL-U</html>\n")
    splits = coref._load(folder, quick=True)
    assert {k: len(v) for k, v in splits.items()} == quick == coref.QUICK_DOCUMENTS
    with pytest.raises(ValueError, match="not a readable CoNLL-U file"):
        coref._load(folder, quick=False)


def test_a_broken_litbank_archive_stops_the_run_before_training(tmp_path: Path):
    """It had been read after training and the OntoGUM evaluation (3 minutes in a full run),
    then ended in tarfile's ReadError."""
    _write_data(tmp_path / "data")
    archive = tmp_path / "data" / "litbank-coref" / "litbank-coref-conll.tar.gz"
    archive.write_bytes(archive.read_bytes()[:40])
    with pytest.raises(ValueError, match=r"litbank-coref-conll\.tar\.gz: not a readable tar"):
        coref.run(_quick_args(tmp_path / "data", tmp_path / "out"))
    assert not (tmp_path / "out" / "ranker.pt").exists()


def test_a_run_without_litbank_says_so(tmp_path: Path, capsys):
    """LitBank had been left out without a word on stdout, stderr or in results.md."""
    _write_data(tmp_path / "data")
    shutil.rmtree(tmp_path / "data" / "litbank-coref")
    results = coref.run(_quick_args(tmp_path / "data", tmp_path / "out"))
    assert set(results["sets"]) == {"ontogum_test"}
    assert "LitBank not evaluated" in capsys.readouterr().err
    assert "LitBank not evaluated" in (tmp_path / "out" / "results.md").read_text()


def test_no_litbank_says_it_was_asked_for(tmp_path: Path, capsys):
    """With the archive there, --no-litbank had been reported as a missing archive."""
    _write_data(tmp_path / "data")
    args = _quick_args(tmp_path / "data", tmp_path / "out")
    args.litbank = False
    assert coref._litbank(args) == (None, "LitBank not evaluated: --no-litbank given")


def test_run_reports_missing_data(tmp_path: Path):
    parser = argparse.ArgumentParser()
    coref.add_arguments(parser)
    args = parser.parse_args(["--data", str(tmp_path), "--out", str(tmp_path / "o"), "--quick"])
    with pytest.raises(FileNotFoundError, match="ontogum-train"):
        coref.run(args)


def test_litbank_asked_for_but_absent_is_named(tmp_path: Path):
    """--data holding OntoGUM alone: find_dataset fell back to --data itself, and the
    refusal said only "no .conll files under <data>", naming neither LitBank nor the
    README's Data section."""
    _write_data(tmp_path / "data")
    shutil.rmtree(tmp_path / "data" / "litbank-coref")
    args = _quick_args(tmp_path / "data", tmp_path / "out")
    args.litbank = True
    with pytest.raises(FileNotFoundError, match=r"no litbank-coref/ folder in .*\"Data\" section"):
        coref.run(args)
    assert not (tmp_path / "out" / "ranker.pt").exists()


def test_the_exact_test_counts_negatives_above_one_half_and_cuts_the_pmf(monkeypatch):
    """10⁴ pairs at q = 0.9999: the negatives are counted (every probability ≤ 0.5) and the
    pmf is cut about 100 counts above the one expected, not built 10⁴ counts wide; the
    verdicts alone are the same either way (the cost is not)."""
    calls = []

    def spy(probs, max_count=None):
        calls.append((float(probs.max()), max_count))
        return poisson_binomial_pmf(probs, max_count=max_count)

    from calib_metrics.paper.events.stats import poisson_binomial_pmf

    monkeypatch.setattr(coref, "poisson_binomial_pmf", spy)
    y = (torch.arange(10_000) >= 3).double()  # 3 negatives
    (row,) = coref.confidence_by_range(torch.full((10_000,), 0.9999), y)
    assert row["verdict"] == "calibrated (exact p ≥ 0.05)"
    ((largest, max_count),) = calls
    assert largest <= 0.5 and max_count <= 2 + coref.EXACT_TAIL  # ⌈1.0002⌉ expected + tail


def test_the_exact_columns_do_not_depend_on_the_samples(tmp_path: Path):
    """The intervals had drawn from the sampler's generator after it: the exact column's
    ends moved with --samples (OntoGUM's document bootstrap upper end 0.0628 at 1 sample,
    0.0633 at 1000), though the README said the exact columns do not depend on them."""
    _write_data(tmp_path / "data")
    runs = []
    for samples in ("50", "7"):
        args = _quick_args(tmp_path / "data", tmp_path / f"out{samples}")
        args.samples = int(samples)
        runs.append(coref.run(args)["sets"])

    def written(value) -> str:  # NaN ends (too few documents) equal as the JSON writes them
        return json.dumps(value, sort_keys=True, default=repr)

    for name, few in runs[1].items():
        many = runs[0][name]
        for column in ("exact", "exact_documents"):
            assert written(few[column]) == written(many[column]), (name, column)
        assert few["sampled"]["main"]["error"] != many["sampled"]["main"]["error"]


def test_too_few_documents_are_said_of_the_set_they_are_in(tmp_path: Path):
    """ "3 groups; at least 10 are needed for an interval" had been said once for both
    sets, of neither by name (the bin-size warning of the same run names its set)."""
    import warnings

    from calib_metrics.wording import split_function_name

    _write_data(tmp_path / "data")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        coref.run(_quick_args(tmp_path / "data", tmp_path / "out"))
    # The set's name follows the library function's, which the command line drops.
    said = [split_function_name(str(w.message))[1] for w in caught]
    said = [text for text in said if "groups" in text]
    assert said and all(text.startswith(tuple(coref.TITLES.values())) for text in said), said
    assert {text.split(":")[0] for text in said} == set(coref.TITLES.values())
