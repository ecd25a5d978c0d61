"""Tests for the coreference readers (GUM/OntoGUM CoNLL-U, LitBank CoNLL-2012, splits)."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from calib_metrics.paper.coref_conllu import (
    Mention,
    read_coref_documents,
    read_litbank_documents,
    span_head,
    split_ids,
)
from calib_metrics.paper.locations import shared_data_dir


def row(i, form, upos="NOUN", xpos="NN", head=0, deprel="dep", misc="_", feats="_"):
    return f"{i}\t{form}\t{form.lower()}\t{upos}\t{xpos}\t{feats}\t{head}\t{deprel}\t_\t{misc}"


# "The president of France met him ." with nested mentions, then a second doc.
SNIPPET = "\n".join(
    [
        "# newdoc id = doc_a",
        "# meta::dateCreated = 2017-08-08",
        "# meta::genre = news",
        "# sent_id = a-1",
        row(1, "The", "DET", "DT", 2, "det", "Entity=(1-person-new"),
        row(2, "president", head=5, deprel="nsubj"),
        row(3, "of", "ADP", "IN", 4, "case"),
        row(4, "France", "PROPN", "NNP", 2, "nmod", "Entity=(2-place-new)1)"),
        row(5, "met", "VERB", "VBD", 0, "root"),
        row(6, "him", "PRON", "PRP", 5, "obj", "Entity=(3)"),
        row(7, ".", "PUNCT", ".", 5, "punct"),
        "",
        "# sent_id = a-2",
        "1-2\tHe's\t_\t_\t_\t_\t_\t_\t_\t_",
        row(1, "He", "PRON", "PRP", 3, "nsubj", "Entity=(1)"),
        row(2, "'s", "AUX", "VBZ", 3, "aux"),
        row(3, "happy", "ADJ", "JJ", 0, "root"),
        "3.1\tis\tbe\tAUX\tVBZ\t_\t_\t_\t3:cop\t_",
        row(4, "France", "PROPN", "NNP", 3, "obl", "Entity=(2(4)2)"),
        "",
        "# newdoc id = doc_b",
        row(1, "Kim", "PROPN", "NNP", 2, "nsubj", "Entity=(7[1/2]-x"),
        row(2, "slept", "VERB", "VBD", 0, "root", "Entity=7[1/2])"),
        row(3, "and", "CCONJ", "CC", 5, "cc"),
        row(4, "quietly", "ADV", "RB", 5, "advmod"),
        row(5, "Kim", "PROPN", "NNP", 2, "conj", "Entity=(7[2/2])"),
        "",
    ]
)


def test_reader_nested_single_and_meta():
    docs = read_coref_documents(io.StringIO(SNIPPET + "\n"))
    assert [d.doc_id for d in docs] == ["doc_a", "doc_b"]
    a = docs[0]
    assert a.meta == {"dateCreated": "2017-08-08", "genre": "news"}
    assert docs[1].meta == {}
    # multi-word range and empty node are removed: indices address words
    assert [t["form"] for t in a.sentences[1]] == ["He", "'s", "happy", "France"]
    got = [(m.sentence, m.start, m.end, m.head, m.entity) for m in a.mentions]
    assert got == [
        (0, 0, 4, 1, "1"),  # "The president of France", head "president"
        (0, 3, 4, 3, "2"),  # nested "France"
        (0, 5, 6, 5, "3"),
        (1, 0, 1, 0, "1"),
        (1, 3, 4, 3, "2"),  # outer "(2 ... 2)" around the single "(4)"
        (1, 3, 4, 3, "4"),
    ]
    assert a.mention_words(a.mentions[0]) == ["The", "president", "of", "France"]


def test_reader_discontinuous_mention_is_one_covering_span():
    doc = read_coref_documents(io.StringIO(SNIPPET + "\n"))[1]
    assert len(doc.mentions) == 1
    m = doc.mentions[0]
    assert (m.start, m.end, m.entity) == (0, 5, "7")
    # head chosen among the parts' words ("Kim slept" + "Kim"): "slept" is the root
    assert m.head == 1


def test_reader_sorts_by_start_then_longer_first():
    text = "\n".join(
        [
            "# newdoc id = s",
            row(1, "big", "ADJ", "JJ", 2, "amod", "Entity=(5"),
            row(2, "dogs", head=0, deprel="root", misc="Entity=(6)5)"),
            "",
        ]
    )
    doc = read_coref_documents(io.StringIO(text + "\n"))[0]
    assert [(m.start, m.end) for m in doc.mentions] == [(0, 2), (1, 2)]


@pytest.mark.parametrize(
    "misc, message",
    [("Entity=3)", "no open mention"), ("Entity=(3", "never closed")],
)
def test_reader_rejects_unbalanced_brackets(misc, message):
    text = "# newdoc id = bad\n" + row(1, "x", misc=misc) + "\n\n"
    with pytest.raises(ValueError, match=message):
        read_coref_documents(io.StringIO(text))


def test_reader_gz_file_and_missing(tmp_path: Path):
    path = tmp_path / "x.conllu.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(SNIPPET + "\n")
    assert len(read_coref_documents(path)) == 2
    with pytest.raises(FileNotFoundError):
        read_coref_documents(tmp_path / "nope.conllu")


def test_span_head_first_word_with_outside_head():
    sent = [{"id": 1, "head": 0}, {"id": 2, "head": 1}, {"id": 3, "head": 1}]
    # both 2 and 3 attach outside [1, 3): tie goes to the first
    assert span_head(sent, [1, 2]) == 1
    # no parse: last word
    assert span_head([{"id": 1, "head": None}, {"id": 2, "head": None}], [0, 1]) == 1


LITBANK = """#begin document (9_book); part 0
9_book\t0\t0\tMr.\t_\t_\t_\t_\t_\t_\t_\t_\t(0
9_book\t0\t1\tBrown\t_\t_\t_\t_\t_\t_\t_\t_\t0)
9_book\t0\t2\tsaw\t_\t_\t_\t_\t_\t_\t_\t_\t_
9_book\t0\t3\this\t_\t_\t_\t_\t_\t_\t_\t_\t(1|(0)
9_book\t0\t4\tdog\t_\t_\t_\t_\t_\t_\t_\t_\t1)

9_book\t0\t0\tIt\t_\t_\t_\t_\t_\t_\t_\t_\t(1)
#end document
"""


def test_litbank_reader_plain_and_tar(tmp_path: Path):
    plain = tmp_path / "9_book.conll"
    plain.write_text(LITBANK)
    archive = tmp_path / "lb.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(plain, arcname="coref/conll/9_book.conll")
    for source in (plain, archive, tmp_path):
        docs = read_litbank_documents(source)
        assert len(docs) == 1
        doc = docs[0]
        assert doc.doc_id == "9_book"
        got = [(m.sentence, m.start, m.end, m.head, m.entity) for m in doc.mentions]
        assert got == [(0, 0, 2, 1, "0"), (0, 3, 5, 4, "1"), (0, 3, 4, 3, "0"), (1, 0, 1, 0, "1")]
        assert doc.sentences[0][4]["form"] == "dog"
        assert doc.sentences[0][4]["upos"] is None


def test_split_ids(tmp_path: Path):
    p = tmp_path / "splits.md"
    p.write_text("# Splits\n\ntext\n\n## dev\n\n  * A\n  * B\n\n## train\n\n  * C\n")
    assert split_ids(p) == {"dev": ["A", "B"], "train": ["C"]}
    bad = tmp_path / "bad.md"
    bad.write_text("nothing\n")
    with pytest.raises(ValueError, match="no '## split'"):
        split_ids(bad)


def _shared(name: str) -> Path:
    root = shared_data_dir()
    if root is None or not (root / name).is_dir():
        pytest.skip(f"shared data set {name} not available")
    return root / name


def test_shared_ontogum_test_split_counts():
    folder = _shared("gum-ontogum-coref")
    docs = read_coref_documents(folder / "ontogum-test.conllu.gz")
    # numbers from the data set's SOURCE.md
    assert len(docs) == 30
    assert sum(len(d.sentences) for d in docs) == 1464
    assert sum(len(d.mentions) for d in docs) == 3581
    assert sum(len({m.entity for m in d.mentions}) for d in docs) == 858
    test_ids = set(split_ids(folder / "splits.md")["test"])
    assert {d.doc_id for d in docs} <= test_ids
    assert all("dateCreated" in d.meta for d in docs)
    for d in docs:
        for m in d.mentions:
            assert isinstance(m, Mention)
            assert 0 <= m.start <= m.head < m.end <= len(d.sentences[m.sentence])


def test_shared_litbank_counts():
    folder = _shared("litbank-coref")
    docs = read_litbank_documents(folder / "litbank-coref-conll.tar.gz")
    assert len(docs) == 100
    assert sum(len(d.mentions) for d in docs) == 29103
    assert sum(len({m.entity for m in d.mentions}) for d in docs) == 7927


def test_shared_gum_richer_coref_aligns_with_ontogum():
    gum = _shared("ud-english-gum")
    onto = _shared("gum-ontogum-coref")
    docs = read_coref_documents(gum / "en_gum-ud-test.conllu.gz")
    onto_docs = read_coref_documents(onto / "ontogum-test.conllu.gz")
    assert [d.doc_id for d in docs] == [d.doc_id for d in onto_docs]
    # same tokens; GUM's own scheme keeps singletons, so it has more mentions
    assert [len(s) for s in docs[0].sentences] == [len(s) for s in onto_docs[0].sentences]
    assert sum(len(d.mentions) for d in docs) > sum(len(d.mentions) for d in onto_docs)
