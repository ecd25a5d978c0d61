"""End-to-end tests of ``calib-metrics reproduce pos`` and the CoNLL-U reader."""

from __future__ import annotations

import argparse
import gzip
import json

import pytest
import torch

from calib_metrics.paper import paired, pos
from calib_metrics.paper.locations import shared_data_dir
from calib_metrics.paper.tagging import Vocabulary, encode_batch, read_tagged_sentences

TAGS = ["DT", "NN", "VB", "IN"]


def _conllu_sentence(words: list[str], tags: list[str], sent_id: str) -> str:
    lines = [f"# sent_id = {sent_id}", f"# text = {' '.join(words)}"]
    for i, (w, t) in enumerate(zip(words, tags, strict=True), start=1):
        lines.append(f"{i}\t{w}\t{w.lower()}\tX\t{t}\t_\t0\tdep\t_\t_")
    return "\n".join(lines) + "\n\n"


def _write_corpus(folder, seed: int = 0) -> None:
    """A tiny EWT look-alike: sentences from a random HMM over 4 tags and ambiguous words."""
    g = torch.Generator().manual_seed(seed)
    trans = torch.softmax(2 * torch.randn(4, 4, generator=g), -1)
    # Each tag emits from its own 6 words plus 3 words shared by all tags (ambiguity).
    vocab = {t: [f"{t.lower()}{i}" for i in range(6)] + ["set", "run", "up"] for t in TAGS}
    folder.mkdir(parents=True)
    for split, n in (("train", 160), ("dev", 50), ("test", 50)):
        text = ""
        for s in range(n):
            length = int(torch.randint(2, 9, (1,), generator=g))
            ys = [int(torch.randint(4, (1,), generator=g))]
            for _ in range(length - 1):
                ys.append(int(torch.multinomial(trans[ys[-1]], 1, generator=g)))
            words = [vocab[TAGS[y]][int(torch.randint(9, (1,), generator=g))] for y in ys]
            text += _conllu_sentence(words, [TAGS[y] for y in ys], f"{split}-{s}")
        with gzip.open(folder / f"en_ewt-ud-{split}.conllu.gz", "wt", encoding="utf-8") as f:
            f.write(text)


def _args(tmp_path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    pos.add_arguments(parser)
    return parser.parse_args(
        ["--data", str(tmp_path / "data"), "--out", str(tmp_path / "out"), *extra]
    )


def test_reproduce_pos_end_to_end_on_a_synthetic_corpus(tmp_path, capsys):
    _write_corpus(tmp_path / "data" / "ud-english-ewt")
    # Two test sentences hold a tag training never saw: left out, and said so in results.md
    # (they had been counted in results.json alone).
    unseen = "".join(_conllu_sentence(["oh", "dt1"], ["UH", "DT"], f"x-{k}") for k in range(2))
    with gzip.open(tmp_path / "data" / "ud-english-ewt" / "en_ewt-ud-test.conllu.gz", "at") as f:
        f.write(unseen)
    args = _args(
        tmp_path, "--quick", "--bin-size", "100", "--n-samples", "200", "--top-pairs", "2", "6"
    )
    results = pos.run(args)
    out = tmp_path / "out"
    for name in (
        "results.json",
        "results.md",
        "pos_reliability.png",
        "pos_per_tag.png",
        "pos_pairs.png",
        "pos_reliability_hmm.png",
        "pos_reliability_crf.png",
        "pos_per_tag_paired.png",
    ):
        assert (out / name).is_file(), name
    saved = json.loads((out / "results.json").read_text())
    assert saved["num_tags"] == 4
    assert saved["sentences"] == {
        "train": 160,
        "dev": 50,
        "test": 50,
        "dropped_unknown_tag": {"dev": 0, "test": 2},
    }
    assert set(saved["models"]) == {"hmm", "crf_matched", "crf"}
    for m in saved["models"].values():
        assert 0.4 < m["test_accuracy"] <= 1.0
        a = m["all_tags"]
        assert a["lower"] <= a["mean"] <= a["upper"]
        assert 0.0 <= a["error"] < 0.5
        s = m["all_tags_sentences"]
        assert s["n"] == a["n"] and s["lower"] <= s["error"] <= s["upper"]
        assert set(m["per_tag"]) == set(TAGS)
        assert m["top2_pairs"]["average"] >= 0
        assert len(m["top6_pairs"]["per_pair"]) == 6
    assert saved["models"]["crf_matched"]["train_sentences"] <= 160
    # Issue 15: each CRF against the HMM, paired over sentences, overall and per label.
    assert set(saved["paired"]) == {"crf_matched", "crf"}
    for c in saved["paired"].values():
        d = c["all_tags"]
        assert d["lower"] <= d["difference"] <= d["upper"] and 0 <= d["p_value"] <= 1
        assert d["difference"] == pytest.approx(d["a"] - d["b"])
        # --quick cuts the paired draws too: 8m/α per label had taken 86% of a quick run.
        assert d["samples"] == paired.QUICK_SAMPLES < paired.RECOMMENDED["n_samples"]
        for field, n in (("per_tag", 4), ("top6_pairs", 6)):
            counts = c[field]
            assert counts["samples"] == paired.QUICK_SAMPLES < paired.label_draws(n)
            assert counts["of"] == n == len(counts["per_label"])
            assert counts["a_better"] + counts["b_better"] + counts["not_distinguishable"] == n
            for v in counts["per_label"].values():
                assert v["adjusted_p_value"] >= v["p_value"]
                assert v["verdict"] == 0 or v["adjusted_p_value"] <= 0.05
        assert set(c["per_tag"]["per_label"]) == set(TAGS)
    markdown = (out / "results.md").read_text()
    assert (
        "\n\nLeft out: 2 of 52 test sentences, each holding a tag that no training sentence "
        "holds (the model cannot predict it).\n\n" in markdown
    )
    assert "− HMM, paired [95%]" in markdown and "not distinguishable on" in markdown
    assert "top-k pairs: the queries of the k most frequent gold tag bigrams" in markdown
    # The paired phase, most of a full run, shows its progress.
    assert "paired draws" in capsys.readouterr().err
    assert saved["selection"]["hmm"]["pseudocount"] in pos.HMM_PSEUDOCOUNTS
    assert saved["selection"]["crf"]["c2"] in pos.CRF_C2S
    assert "| HMM |" in (out / "results.md").read_text()
    assert results["models"]["hmm"]["test_accuracy"] == saved["models"]["hmm"]["test_accuracy"]
    # The concatenated tag queries hold K queries per test token (of the sentences kept).
    n_tokens = sum(
        len(w)
        for w, tags in read_tagged_sentences(
            tmp_path / "data" / "ud-english-ewt" / "en_ewt-ud-test.conllu.gz"
        )
        if set(tags) <= set(TAGS)
    )
    assert saved["models"]["hmm"]["all_tags"]["n"] == 4 * n_tokens


def test_quick_per_label_draws_give_no_advice_the_command_cannot_take() -> None:
    """Under --quick, "no label can be called ...: use n_samples=3999 or more" ended the run,
    advice in a Python keyword the command has no option for (--quick fixes the draws); a
    full run's draws call labels, and the warning stays for the library's users."""
    import warnings

    g = torch.Generator().manual_seed(0)
    q = torch.rand(40, 300, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    names = [f"T{i}" for i in range(40)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = paired.by_label(q.sqrt(), q, y, names, quick=True)
    assert r["samples"] == paired.QUICK_SAMPLES and r["of"] == 40
    from calib_metrics.functional import compare_calibration_by_label

    labels = torch.arange(40)[:, None].expand_as(q).reshape(-1)
    with pytest.warns(UserWarning, match="use n_samples="):
        compare_calibration_by_label(q.sqrt().reshape(-1), q.reshape(-1), y.reshape(-1),
                                     labels, n_samples=paired.QUICK_SAMPLES)  # fmt: skip


def test_posterior_queries_carry_each_tokens_sentence():
    class Uniform:
        def marginals(self, words, mask, pairwise):
            from types import SimpleNamespace

            b, t = words.shape
            unigram = torch.full((b, t, 3), 1 / 3)
            return SimpleNamespace(unigram=unigram, pairwise=torch.full((b, t - 1, 3, 3), 1 / 9))

    lengths = torch.tensor([3, 1, 5, 2])
    mask = torch.arange(5) < lengths[:, None]
    words = torch.where(mask, 1, 0)
    # Token t of sentence s gets tag (s + t) % 3, so the gold tags identify the sentence.
    tags = torch.where(mask, (torch.arange(4)[:, None] + torch.arange(5)) % 3, 0)
    split = pos.Split(words, tags, mask)
    queries = pos.posterior_queries(Uniform(), split, torch.tensor([[0, 1]]), max_tokens=6)
    assert sorted(queries.sentence.tolist()) == [0, 0, 0, 1, 2, 2, 2, 2, 2, 3, 3]
    # A token pair (t, t+1) belongs to the sentence of its tokens: lengths 3, 1, 5, 2.
    assert sorted(queries.pair_sentence.tolist()) == [0, 0, 2, 2, 2, 2, 3]
    assert queries.pair_sentence.numel() == queries.pair_q.shape[1]
    # Row-major within chunks: a token's gold tag (from y) matches its sentence's pattern.
    gold = queries.tag_y.argmax(0)
    position = torch.zeros_like(queries.sentence)
    for s in range(4):
        where = (queries.sentence == s).nonzero().flatten()
        position[where] = torch.arange(where.numel())
    assert torch.equal(gold, (queries.sentence + position) % 3)


def test_missing_data_names_the_data_set(tmp_path):
    (tmp_path / "data").mkdir()
    args = _args(tmp_path, "--quick")
    with pytest.raises(FileNotFoundError, match="train"):
        pos.run(args)


def test_reader_skips_multiword_tokens_and_empty_nodes(tmp_path):
    rows = [
        "# sent_id = a",
        "1-2\tcannot\t_\t_\t_\t_\t_\t_\t_\t_",
        "1\tcan\tcan\tAUX\tMD\t_\t0\troot\t_\t_",
        "2\tnot\tnot\tPART\tRB\t_\t1\tadvmod\t_\t_",
        "2.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t1:x\t_",
        "3\t.\t.\tPUNCT\t.\t_\t1\tpunct\t_\t_",
    ]
    path = tmp_path / "a.conllu"
    path.write_text("\n".join(rows) + "\n\n")
    assert read_tagged_sentences(path) == [(["can", "not", "."], ["MD", "RB", "."])]
    assert read_tagged_sentences(path, column="upos")[0][1] == ["AUX", "PART", "PUNCT"]
    with pytest.raises(ValueError, match="column"):
        read_tagged_sentences(path, column="lemma")
    with pytest.raises(FileNotFoundError):
        read_tagged_sentences(tmp_path / "missing.conllu")


def test_vocabulary_and_padding():
    sents = [(["The", "cat", "sat"], ["DT", "NN", "VB"]), (["the", "dog"], ["DT", "NN"])]
    words = Vocabulary.build((w for w, _ in sents), lowercase=True, min_count=2)
    assert words.itos == ["<unk>", "the"]
    assert words["CAT"] == 0 and words["The"] == 1
    tags = Vocabulary.build((t for _, t in sents), unknown=False)
    w, t, m = encode_batch(sents, words, tags)
    assert w.tolist() == [[1, 0, 0], [1, 0, 0]]
    assert m.tolist() == [[True, True, True], [True, True, False]]
    assert tags.decode(t[0].tolist()) == ["DT", "NN", "VB"]
    with pytest.raises(ValueError, match="unknown tag"):
        encode_batch([(["a"], ["ZZ"])], words, tags)
    with pytest.raises(ValueError, match="empty"):
        encode_batch([([], [])], words, tags)
    with pytest.raises(ValueError, match="min_count"):
        Vocabulary.build([["a"]], unknown=False, min_count=2)


def test_shared_ewt_reads_penn_tags():
    root = shared_data_dir()
    path = None if root is None else root / "ud-english-ewt" / "en_ewt-ud-train.conllu.gz"
    if path is None or not path.is_file():
        pytest.skip("shared data (ud-english-ewt) not found; set CALIB_METRICS_DATA to run this")
    sentences = read_tagged_sentences(path, limit=20)
    assert len(sentences) == 20
    tags = {t for _, ts in sentences for t in ts}
    assert {"NN", "IN", "DT"} <= tags  # Penn Treebank tags, not UPOS
    assert all(len(w) == len(t) > 0 for w, t in sentences)
    upos = read_tagged_sentences(path, column="upos", limit=20)
    assert {"NOUN", "ADP"} <= {t for _, ts in upos for t in ts}
    assert [w for w, _ in upos] == [w for w, _ in sentences]


def test_differences_outside_their_interval_are_named_with_why() -> None:
    def label(difference: float, lower: float, upper: float) -> dict:
        return {"difference": difference, "lower": lower, "upper": upper, "p_value": 0.0,
                "adjusted_p_value": 0.5, "verdict": 0}  # fmt: skip

    def counts(per_label: dict) -> dict:
        return {"a_better": 0, "b_better": 0, "not_distinguishable": len(per_label),
                "of": len(per_label), "correction": "holm", "alpha": 0.05,
                "per_label": per_label}  # fmt: skip

    inside, below_zero = label(-0.01, -0.02, 0.0), label(0.0, -0.0023, -0.0011)
    comparisons = {
        "crf_matched": {
            "per_tag": counts({"NN": inside, "``": label(0.01, 0.0, 0.005)}),
            "top100_pairs": counts({"CC PRP": below_zero, "DT NN": inside}),
        },
        "crf": {
            "per_tag": counts({"NN": inside, "``": inside}),
            "top100_pairs": counts({"CC PRP": inside, ", PRP": below_zero}),
        },
    }
    lines = pos._paired_markdown(comparisons, quick=False)
    (line,) = [x for x in lines if x.startswith("Differences outside")]
    assert line.startswith(
        "Differences outside their own paired interval: CRF (accuracy-matched), 1 of 2 tags "
        "(``` `` ```); CRF (accuracy-matched), 1 of 2 pairs (`CC PRP`); CRF (all train), "
        "1 of 2 pairs (`, PRP`). "
    )
    assert "the intervals are for the true differences" in line and "clipped at 0" in line
    assert "--mode classwise" not in line  # no option of this command
    for c in comparisons.values():
        for field in c.values():
            field["per_label"] = {k: inside for k in field["per_label"]}
    assert not any(
        x.startswith("Differences outside") for x in pos._paired_markdown(comparisons, False)
    )
