"""GUM entity reading, BIO flattening and the span-calibration experiment (synthetic corpus
everywhere; the real GUM dev file when ../shared/data is there)."""

from __future__ import annotations

import argparse
import random
from itertools import pairwise
from pathlib import Path

import pytest
import torch
from cli_runs import one_line_error

from calib_metrics.models.features import FeatureHasher
from calib_metrics.paper import ner
from calib_metrics.paper.gum_entities import (
    EntitySentence,
    Span,
    bilou_tags,
    bio_spans,
    bio_tags,
    flatten,
    parse_entity_field,
    read_gum_entities,
)
from calib_metrics.paper.locations import shared_data_dir

_PEOPLE = ["Kim", "Ana", "Bo"]
_PLACES = ["Paris", "Oslo", "Rome"]
_THINGS = ["car", "book", "idea"]


def _conllu_sentence(rng: random.Random, eid: list[int]) -> str:
    """'PERSON saw the THING in PLACE .' with the place nested in a longer mention."""
    rows: list[tuple[str, str]] = []

    def mention(words: list[str], label: str, inner: tuple[int, str] | None = None) -> None:
        eid[0] += 1
        first = len(rows)
        for w in words:
            rows.append((w, ""))
        if len(words) == 1:
            rows[first] = (words[0], f"({eid[0]}-{label}-new-x)")
        else:
            rows[first] = (words[0], f"({eid[0]}-{label}-new-x")
            rows[-1] = (rows[-1][0], f"{eid[0]})")
        if inner is not None:
            pos, inner_label = inner
            eid[0] += 1
            w, mark = rows[first + pos]
            rows[first + pos] = (w, mark + f"({eid[0]}-{inner_label}-giv-y)")

    mention([rng.choice(_PEOPLE)], "person")
    rows.append(("saw", ""))
    mention(["the", rng.choice(_THINGS)], "object")
    rows.append(("in", ""))
    mention(["the", "city", "of", rng.choice(_PLACES)], "place", inner=(3, "place"))
    rows.append((".", ""))
    lines = [
        f"{i}\t{w}\t_\t_\t_\t_\t0\tdep\t_\t" + (f"Entity={m}" if m else "_")
        for i, (w, m) in enumerate(rows, 1)
    ]
    return "\n".join(lines)


def _write_gum(folder: Path, seed: int = 0) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    eid = [0]
    for split, n in (("train", 60), ("dev", 20), ("test", 25)):
        blocks = [f"# newdoc id = doc_{split}"] + [_conllu_sentence(rng, eid) for _ in range(n)]
        (folder / f"en_gum-ud-{split}.conllu").write_text("\n\n".join(blocks) + "\n\n")
    return folder


def test_entity_field_and_reader(tmp_path):
    assert parse_entity_field("(1-person-new-a)2)") == [
        ("single", "1", "person"),
        ("close", "2", ""),
    ]
    with pytest.raises(ValueError, match="no id and type"):
        parse_entity_field("(oops)")
    folder = _write_gum(tmp_path / "ud-english-gum")
    sentences = read_gum_entities(folder / "en_gum-ud-dev.conllu")
    assert len(sentences) == 20 and sentences[0].document == "doc_dev"
    spans = sentences[0].spans
    # person, object, the 4-word place and the 1-word place nested in it.
    assert [(s.end - s.start, s.label) for s in spans] == [
        (1, "person"),
        (2, "object"),
        (4, "place"),
        (1, "place"),
    ]
    assert len(read_gum_entities(folder / "en_gum-ud-dev.conllu", limit=3)) == 3


def test_flatten_and_bio_round_trip():
    nested = [Span(0, 1, "person"), Span(4, 8, "place"), Span(7, 8, "place")]
    assert flatten(nested, max_length=6) == [Span(0, 1, "person"), Span(4, 8, "place")]
    # A mention too long to keep gives way to the one nested in it.
    assert flatten(nested, max_length=3) == [Span(0, 1, "person"), Span(7, 8, "place")]
    tags = bio_tags(9, flatten(nested, 6))
    assert tags[4:8] == ["B-place", "I-place", "I-place", "I-place"]
    assert bio_spans(tags) == flatten(nested, 6)
    with pytest.raises(ValueError, match="overlap"):
        bio_tags(9, nested)
    with pytest.raises(ValueError, match="max_length"):
        flatten(nested, 0)


def test_bio_constraints_forbid_ill_formed_transitions():
    tags = ner.bio_vocabulary(["person", "place"])
    trans, start, end = ner.bio_constraints(tags)
    i_person = tags["I-person"]
    allowed = {tags.itos[i] for i in range(len(tags)) if trans[i, i_person] == 0}
    assert allowed == {"B-person", "I-person"}
    assert start[i_person] == float("-inf") and start[tags["B-place"]] == 0
    assert (end == 0).all() and (trans[tags["B-person"]] == 0).sum() == len(tags) - 1


def test_bilou_constraints_admit_exactly_the_well_formed_sequences():
    tags = ner.bio_vocabulary(["person", "place"], "bilou")
    trans, start, end = ner.bio_constraints(tags)
    names = tags.itos

    def well_formed(seq: list[str]) -> bool:
        return bilou_tags(len(seq), bio_spans(seq)) == seq

    import itertools

    for seq in itertools.product(names, repeat=3):
        score = start[tags[seq[0]]] + end[tags[seq[-1]]]
        score = score + sum(trans[tags[a], tags[b]] for a, b in pairwise(seq))
        assert bool(score == 0) == well_formed(list(seq)), seq


def test_bilou_tags_round_trip():
    spans = [Span(0, 1, "person"), Span(2, 5, "place")]
    tags = bilou_tags(6, spans)
    assert tags == ["U-person", "O", "B-place", "I-place", "L-place", "O"]
    assert bio_spans(tags) == spans


def _args(tmp_path, **options) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    ner.add_arguments(parser)
    args = parser.parse_args(["--quick"])
    defaults = dict(
        data=str(tmp_path), out=str(tmp_path / "out"), max_iter=15, n_samples=50, buckets=1024
    )
    for key, value in (defaults | options).items():
        setattr(args, key, value)
    return args


@pytest.mark.parametrize("scheme", ["bio", "bilou"])
def test_span_tables_sum_to_the_begin_marginals(tmp_path, scheme):
    """Summed over lengths, P(span of type X starts at t) is P(y_t = B-X) (BILOU: + U-X)."""
    _write_gum(tmp_path / "ud-english-gum")
    args = _args(tmp_path, max_length=12)
    raw, _, _ = ner._load(args)
    data, tags, _ = ner.tagged_splits(raw, args.max_length, scheme)
    model, hasher, _ = ner.ce.fit_crf(
        ner.ABLATION["+shape"],
        data["train"],
        data["dev"],
        len(tags),
        buckets=1024,
        c2_grid=[1.0],
        max_iter=10,
    )
    split = data["test"]
    pot = ner.constrained_potentials(model, ner.ce.features(split, hasher), split.mask, tags)
    unigram = ner.linear_chain.posterior_marginals(*pot, split.mask).unigram
    probs, gold, types = ner.span_tables(pot, split, tags, args.max_length)
    openers = [[f"{p}-{x}" for p in ("BU" if scheme == "bilou" else "B")] for x in types]
    want = torch.stack([unigram[..., [tags[n] for n in names]].sum(-1) for names in openers], -1)
    torch.testing.assert_close(probs.sum(2), want.to(probs.dtype), atol=1e-6, rtol=0)
    assert int(gold.sum()) == sum(len(bio_spans(t)) for _, t in split.sentences)
    if scheme == "bilou":
        assert any(t.startswith("U-") for _, ts in split.sentences for t in ts)


def test_ner_experiment_on_a_synthetic_corpus(tmp_path):
    _write_gum(tmp_path / "ud-english-gum")
    results = ner.run(_args(tmp_path))
    test = results["test"]
    assert test["spans"]["gold"] == 25 * 3  # the nested place is flattened away
    assert 0 < test["spans"]["f1"] <= 1
    for key in ("token", "predicted_spans", "top10_spans"):
        for setting in ("paper", "recommended"):
            r = test[key][setting]
            assert 0 <= r["lower"] <= r["upper"] <= 1 and r["n"] > 0
    assert test["top10_spans"]["paper"]["n"] == 25 * 10
    assert (tmp_path / "out" / "ner_reliability.png").stat().st_size > 0
    markdown = (tmp_path / "out" / "results.md").read_text()
    assert "predicted (Viterbi) spans" in markdown
    # What "paper" and "recommended" mean, under the table that shows them.
    assert "\n\npaper: the paper's estimator, plug-in in bins of 5000" in markdown
    assert "recommended: bins of ⌈√N⌉ pairs, debiased, with the recentred bootstrap" in markdown
    # The predicted-span count had exceeded the row's N without saying why.
    too_long = test["spans"]["predicted_too_long"]
    assert f"({too_long} longer than --max-length" in markdown


def test_ner_experiment_with_bilou_tags(tmp_path):
    _write_gum(tmp_path / "ud-english-gum")
    results = ner.run(_args(tmp_path, scheme="bilou", out=str(tmp_path / "bilou")))
    assert results["scheme"] == "bilou" and "U-person" in results["tags"]
    assert results["test"]["spans"]["gold"] == 25 * 3
    assert 0 < results["test"]["spans"]["f1"] <= 1
    assert "token: BILOU tag" in (tmp_path / "bilou" / "results.md").read_text()


def test_ner_rejects_bad_options(tmp_path):
    with pytest.raises(ValueError, match="top-k"):
        ner.run(_args(tmp_path, top_k=0))


_DATA = shared_data_dir()


@pytest.mark.skipif(
    _DATA is None or not (_DATA / "ud-english-gum").is_dir(),
    reason="needs ../shared/data/ud-english-gum",
)
@pytest.mark.shared_data
def test_gum_dev_mentions_match_the_release_counts():
    sentences = read_gum_entities(_DATA / "ud-english-gum" / "en_gum-ud-dev.conllu.gz")
    assert len(sentences) == 1575
    assert sum(len(s.words) for s in sentences) == 28119
    assert sum(len(s.spans) for s in sentences) == 7897  # SOURCE.md's mention count
    flat = [flatten(s.spans, 6) for s in sentences]
    assert all(b.start >= a.end for spans in flat for a, b in pairwise(spans))


def _add_animals(folder: Path, split: str, n: int) -> None:
    """Append ``n`` sentences whose one mention has a type train never tags (animal)."""
    sentence = "1\tdogs\t_\t_\t_\t_\t0\tdep\t_\tEntity=(900-animal-new-x)\n"
    sentence += "2\tbark\t_\t_\t_\t_\t0\tdep\t_\t_\n\n"
    path = folder / f"en_gum-ud-{split}.conllu"
    path.write_text(path.read_text() + sentence * n)


def _add_long_animal(folder: Path) -> None:
    """Append a training sentence whose one mention, an animal, is 7 words long."""
    words = ["the", "big", "old", "brown", "dog", "over", "there"]
    marks = {1: "Entity=(901-animal-new-x", 7: "Entity=901)"}
    rows = [f"{i}\t{w}\t_\t_\t_\t_\t0\tdep\t_\t{marks.get(i, '_')}" for i, w in enumerate(words, 1)]
    path = folder / "en_gum-ud-train.conllu"
    path.write_text(path.read_text() + "\n".join(rows) + "\n\n")


def test_ner_reports_the_sentences_left_out_for_an_unseen_type(tmp_path):
    """They had vanished without a word: results.md said "test, 25 sentences" only. Train
    holds an animal, in a mention longer than --max-length: flattening drops it, and the
    line had said that no training sentence holds the type."""
    folder = _write_gum(tmp_path / "ud-english-gum")
    _add_animals(folder, "test", 2)
    _add_long_animal(folder)
    results = ner.run(_args(tmp_path))
    assert results["sentences"]["test"] == 25
    assert results["sentences"]["dropped_unknown_tag"] == {"dev": 0, "test": 2}
    markdown = (tmp_path / "out" / "results.md").read_text()
    assert (
        "Left out: 2 of 27 test sentences, each holding an entity type that no training "
        "sentence tags once nested mentions are flattened, keeping none longer than "
        "--max-length 6 words (the model cannot predict it)." in markdown
    )


def test_ner_refuses_a_split_left_without_a_sentence(tmp_path):
    folder = _write_gum(tmp_path / "ud-english-gum")
    (folder / "en_gum-ud-test.conllu").write_text("")
    _add_animals(folder, "test", 3)
    raw, _, _ = ner._load(_args(tmp_path))
    with pytest.raises(ValueError) as refused:
        ner.tagged_splits(raw, 6)
    # Training, all read, has no animal: more of it had been the advice.
    assert str(refused.value) == (
        "every test sentence holds an entity type that the 60 training sentences do not tag "
        "once nested mentions are flattened, keeping none longer than --max-length 6 words: "
        "the training file, all read, mentions no animal"
    )


def test_ner_refusal_names_max_length_where_it_took_the_type_from_training(tmp_path):
    """Training's only animal is 7 words long: the refusal had said "train on more"."""
    folder = _write_gum(tmp_path / "ud-english-gum")
    (folder / "en_gum-ud-test.conllu").write_text("")
    _add_animals(folder, "test", 3)
    _add_long_animal(folder)
    raw, _, _ = ner._load(_args(tmp_path))
    with pytest.raises(ValueError) as refused:
        ner.tagged_splits(raw, 6)
    # The whole training file was read: more of it is no advice (it had been given).
    assert str(refused.value) == (
        "every test sentence holds an entity type that the 61 training sentences do not tag "
        "once nested mentions are flattened, keeping none longer than --max-length 6 words: "
        "raise --max-length to 7 (training holds animal only in longer mentions)"
    )
    with pytest.raises(ValueError, match=r"longer mentions\), or train on more \(--train-s"):
        ner.tagged_splits(raw, 6, more_training=True)
    _, tags, dropped = ner.tagged_splits(raw, 7)  # long enough to keep it
    assert "B-animal" in tags.itos and dropped["test"] == 0


_PLAIN = "1\tit\t_\t_\t_\t_\t0\tdep\t_\t_\n2\trains\t_\t_\t_\t_\t0\tdep\t_\t_\n\n"


def test_ner_refuses_a_training_subset_without_an_entity(tmp_path, capsys):
    """It had failed in span_tables' torch.stack ("expects a non-empty TensorList"), exit 1.
    The refusal had then advised "train on more (--train-sentences)" with the whole file
    read: a file without entity annotation has no more to give."""
    folder = _write_gum(tmp_path / "ud-english-gum")
    (folder / "en_gum-ud-train.conllu").write_text(_PLAIN * 5)
    for split in ("dev", "test"):
        path = folder / f"en_gum-ud-{split}.conllu"
        path.write_text(path.read_text() + _PLAIN * 3)
    argv = ["reproduce", "ner", "--quick", "--data", tmp_path, "--out", tmp_path / "out"]
    assert one_line_error(capsys, *argv) == (
        "calib-metrics: error: the training file (5 sentences, all read) has no entity "
        "annotation (no mention to flatten)"
    )
    # Mentions there, but every one longer than --max-length: that is what to change.
    _add_long_animal(folder)
    raw, _, more_training = ner._load(_args(tmp_path))
    assert not more_training
    with pytest.raises(ValueError) as refused:
        ner.tagged_splits(raw, 6)
    assert str(refused.value) == (
        "the 6 training sentences tag no entity once nested mentions are flattened, keeping "
        "none longer than --max-length 6 words: raise --max-length to 7 (training holds "
        "animal only in longer mentions)"
    )


def test_ner_advises_more_training_sentences_only_where_the_file_holds_more(tmp_path, capsys):
    """A first training sentence without a mention, then the synthetic corpus: one read
    sentence is too few (and is one sentence, not "none of the 1 training sentences")."""
    folder = _write_gum(tmp_path / "ud-english-gum")
    path = folder / "en_gum-ud-train.conllu"
    path.write_text(_PLAIN + path.read_text())
    argv = ["reproduce", "ner", "--data", tmp_path, "--out", tmp_path / "out"]
    err = one_line_error(capsys, *argv, "--train-sentences", 1)
    assert err == (
        "calib-metrics: error: the 1 training sentence read mentions no entity: train on more "
        "(--train-sentences)"
    )
    assert ner._load(_args(tmp_path, train_sentences=60))[2]  # 61 in the file
    assert not ner._load(_args(tmp_path, train_sentences=61))[2]
    assert len(ner._load(_args(tmp_path, train_sentences=60))[0]["train"]) == 60
    # Every mention longer than --max-length: each type with the --max-length it needs.
    long = EntitySentence(["w"] * 9, [Span(0, 7, "animal"), Span(2, 5, "plant")], "d")
    with pytest.raises(ValueError) as refused:
        ner.tagged_splits({"train": [long]}, 2, more_training=True)
    assert str(refused.value) == (
        "the 1 training sentence tags no entity once nested mentions are flattened, keeping "
        "none longer than --max-length 2 words: raise --max-length to 3 for plant, 7 for "
        "animal (training holds plant, animal only in longer mentions), or train on more "
        "(--train-sentences)"
    )


def test_top_k_spans_rank_only_the_spans_inside_the_sentence():
    """A one-token sentence has one candidate per type: k = 3 had added two spans running
    past its end (q = y = 0 filler), as span_queries(top_k=...) does not."""
    p = torch.zeros(2, 3, 2, 1)
    p[0, 0, 0, 0] = 0.9
    p[1] = 0.1
    p[1, 1:] = 0
    mask = torch.tensor([[True, True, True], [True, False, False]])
    idx, rows = ner.top_k_spans(p, mask, 3)
    assert rows.tolist() == [0, 0, 0, 1] and idx[-1].item() == 6  # sentence 1's (t 0, 1 word)
    assert (idx[:3] < 6).all() and 0 in idx.tolist() and 5 not in idx.tolist()  # (2, 2 words)


def test_top_k_spans_build_their_indices_on_the_inputs_device():
    """Its in-sentence mask and row ids had come from torch.arange without device=: on the
    default device (meta here, a GPU elsewhere) beside CPU inputs, "Expected all tensors
    to be on the same device"."""
    p = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.0, 0.4]]).reshape(2, 3, 1, 1)
    mask = torch.tensor([[True] * 3, [True, True, False]])
    torch.set_default_device("meta")
    try:
        idx, rows = ner.top_k_spans(p, mask, 2)
    finally:
        torch.set_default_device(None)
    assert idx.device == rows.device == torch.device("cpu")
    assert idx.tolist() == [1, 2, 3, 4] and rows.tolist() == [0, 0, 1, 1]


def test_ner_top_k_row_holds_no_span_past_the_sentence_end(tmp_path):
    _write_gum(tmp_path / "ud-english-gum")
    results = ner.run(_args(tmp_path, top_k=1000, max_iter=5))
    # Every sentence has 10 words: spans of 1-6 words inside it, for each of 3 types.
    inside = sum(min(6, 10 - t) for t in range(10))
    assert results["test"]["top1000_spans"]["paper"]["n"] == 25 * 3 * inside


class _AllOutside:
    """A tagger whose potentials favour ``O`` everywhere: its Viterbi paths hold no span."""

    def potentials(self, x, mask):
        emissions = torch.zeros(*mask.shape, 7)  # O and B-/I- of 3 types
        emissions[..., 0] = 5.0
        return emissions, torch.zeros(7, 7), torch.zeros(7), torch.zeros(7)


def test_ner_without_predicted_spans_reports_the_rest(tmp_path, monkeypatch):
    """It had stopped at "empty input: at least one (probability, target) pair is needed"."""
    _write_gum(tmp_path / "ud-english-gum")
    fake = (_AllOutside(), FeatureHasher(["word"], 8), {"c2": 0.1})
    monkeypatch.setattr(ner.ce, "fit_crf", lambda *a, **k: fake)
    results = ner.run(_args(tmp_path))
    test = results["test"]
    assert test["spans"]["predicted"] == 0 and test["spans"]["gold"] == 25 * 3
    assert test["predicted_spans"]["paper"] == {
        "n": 0,
        "not_computed": "the Viterbi paths predict no entity span",
    }
    assert test["top10_spans"]["paper"]["n"] == 25 * 10
    markdown = (tmp_path / "out" / "results.md").read_text()
    assert "| span: predicted (Viterbi) spans | 0 | not computed (the Viterbi paths " in markdown
    assert (tmp_path / "out" / "ner_reliability.png").stat().st_size > 0
    # 0 of 0 predicted spans correct is no precision (it had read 0.0000); F1, 2 hits /
    # (predicted + gold) = 0 / 75, is 0, as in sklearn's f1_score (it had read n/a).
    assert test["spans"]["precision"] is None
    assert test["spans"]["recall"] == 0 and test["spans"]["f1"] == 0
    assert "precision n/a, recall 0.0000, F1 0.0000;" in markdown


def test_ner_figure_keeps_each_curves_colour_and_names_the_one_left_out(tmp_path, monkeypatch):
    """Without the predicted-span curve, the top-10 curve had taken its orange (C1), and
    nothing on the figure said a curve was missing."""
    _write_gum(tmp_path / "ud-english-gum")
    fake = (_AllOutside(), FeatureHasher(["word"], 8), {"c2": 0.1})
    monkeypatch.setattr(ner.ce, "fit_crf", lambda *a, **k: fake)
    drawn = {}

    def thesis_figure(rows, path, *, suptitle):
        drawn.update(rows=rows, suptitle=suptitle)
        return str(path)

    monkeypatch.setattr(ner, "thesis_figure", thesis_figure)
    ner.run(_args(tmp_path))
    [(_, curves)] = drawn["rows"]
    assert [(c.label, c.color) for c in curves] == [
        ("token: BIO tag", "C0"),
        ("top-10 spans", "C2"),
    ]
    assert drawn["suptitle"].endswith(
        "\nno curve for predicted spans: not computed (the Viterbi paths predict no entity span)"
    )


@pytest.mark.skipif(
    _DATA is None or not (_DATA / "ud-english-gum").is_dir(),
    reason="needs ../shared/data/ud-english-gum",
)
@pytest.mark.shared_data
def test_gum_sentences_left_out_by_three_training_sentences_are_counted(tmp_path):
    raw, _, _ = ner._load(_args(tmp_path, data=str(_DATA), train_sentences=3))
    data, _, dropped = ner.tagged_splits(raw, 6)
    assert dropped == {"dev": 51, "test": 49}
    assert [len(data[s].sentences) for s in ("dev", "test")] == [29, 71]
