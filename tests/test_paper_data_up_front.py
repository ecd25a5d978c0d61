"""``calib-metrics reproduce`` on missing, partial, empty or misencoded data and on bad
options: one line naming the file (or option) and exit code 2, before any training.

A probe of 2026-11-29 found twitter-pos ending in a StopIteration traceback after training
on the tweets when EWT was missing, sentiment falling back to the movie-review sentences
when one tweet file of two was missing, errors that named no file, and options checked
only after training. The training steps are replaced here by ones that fail loudly, so
each test shows the check comes first; all data are synthetic.
"""

from __future__ import annotations

import argparse
import gzip
import random
import tarfile
from pathlib import Path

import pytest
import test_reproduce_inputs as _reproduce_inputs

from calib_metrics.paper import coref, ner, report, sentiment, twitter_pos
from calib_metrics.paper.coref_conllu import read_coref_documents, read_litbank_documents
from calib_metrics.paper.countries import COUNTRIES_FILE
from calib_metrics.paper.events import experiment as events_experiment
from calib_metrics.paper.tagging import iter_tagged_sentences
from calib_metrics.paper.tweets import POLARITY, load_corpus

# test_reproduce_inputs.py's check of a one-line error (tests/ is not a package).
one_line_error = _reproduce_inputs.one_line_error


def _never(*args, **kwargs):
    raise AssertionError("training was reached before the data or options were checked")


def _gz(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(text)
    return path


_WORDS = [("the", "D", "DT"), ("dog", "N", "NN"), ("runs", "V", "VBZ"), ("!", ",", ".")]


def _ark(folder: Path) -> Path:
    rng = random.Random(0)
    tweet = "\n".join(f"{w}\t{t}" for w, t, _ in _WORDS)
    for name in ("oct27.train", "oct27.dev", "oct27.test", "daily547.conll"):
        _gz(folder / f"{name}.gz", "\n\n".join(tweet for _ in range(rng.randint(3, 6))) + "\n")
    return folder


def _conllu_rows(column: int = 4) -> str:
    rows = []
    for i, (word, _, ptb) in enumerate(_WORDS, 1):
        cells = [str(i), word, "_", "_", "_", "_", "0" if i == 1 else "1", "dep", "_", "_"]
        cells[column] = ptb
        rows.append("\t".join(cells))
    return "\n".join(rows) + "\n\n"


def _ewt(folder: Path, skip: str = "", empty: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        if split != skip:
            text = "" if split == empty else _conllu_rows() * 3
            _gz(folder / f"en_ewt-ud-{split}.conllu.gz", text)
    return folder


@pytest.mark.parametrize("ewt", ["absent", "empty folder", "no test file"])
def test_twitter_pos_checks_ewt_before_training_on_tweets(tmp_path, capsys, monkeypatch, ewt):
    monkeypatch.setattr(twitter_pos, "_train", _never)
    data = tmp_path / "data"
    _ark(data / "ark-twitter-pos")
    if ewt == "empty folder":
        (data / "ud-english-ewt").mkdir()
    elif ewt == "no test file":
        _ewt(data / "ud-english-ewt", skip="test")
    out = tmp_path / "out"
    err = one_line_error(capsys, "reproduce", "twitter-pos", "--quick", "--data", data,
                         "--out", out)  # fmt: skip
    split = "test" if ewt == "no test file" else "train"
    assert f"en_ewt-ud-{split}.conllu.gz" in err
    assert not out.exists()


def _polarity(folder: Path) -> Path:
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "sentence_polarity.zip", "w") as archive:
        archive.writestr("sentence_polarity/rt-polarity.pos", "a gem .\n" * 50)
        archive.writestr("sentence_polarity/rt-polarity.neg", "dull .\n" * 50)
    return folder


@pytest.mark.parametrize("present", [["positive"], ["negative"], []])
def test_a_partial_tweet_folder_is_named_not_replaced_by_the_fallback(
    tmp_path, capsys, monkeypatch, present
):
    monkeypatch.setattr(sentiment, "_feature_texts", _never)
    data = tmp_path / "data"
    _polarity(data / "nltk-sentence-polarity")
    tweets = data / "nltk-twitter-samples-text"
    tweets.mkdir(parents=True)
    for source in present:
        _gz(tweets / f"{source}_tweets.txt.gz", f"fun\t{source}\n")
    missing = next(s for s in ("positive", "negative") if s not in present)
    with pytest.raises(FileNotFoundError, match=f"{tweets / missing}_tweets.txt.gz"):
        load_corpus(str(data))
    err = one_line_error(capsys, "reproduce", "sentiment", "--data", data, "--out", tmp_path / "o")
    assert f"{missing}_tweets.txt.gz" in err


def test_the_fallback_stays_when_the_tweet_folder_is_absent(tmp_path):
    _polarity(tmp_path / "nltk-sentence-polarity")
    corpus, folder = load_corpus(str(tmp_path))
    assert corpus.name == POLARITY and folder.name == POLARITY


_LITBANK_ROW = "b1\t0\t0\t{word}\t_\t_\t_\t_\t_\t_\t_\t_\t(0)\n"


def _litbank_bytes(word: bytes) -> bytes:
    row = _LITBANK_ROW.encode().replace(b"{word}", word)
    return b"#begin document (b1); part 0\n" + row + b"\n" + row + b"#end document\n"


def test_a_litbank_file_that_is_not_utf8_is_named(tmp_path):
    folder = tmp_path / "litbank"
    folder.mkdir()
    bad = folder / "b1.conll"
    bad.write_bytes(_litbank_bytes(b"caf\xe9"))
    for source in (folder, bad):
        with pytest.raises(ValueError, match=f"^{bad}: not a readable CoNLL-2012 file"):
            read_litbank_documents(source)
    archive = tmp_path / "litbank-coref-conll.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(bad, arcname="coref/b1.conll")
    with pytest.raises(ValueError, match=f"^{archive}:coref/b1.conll: not a readable CoNLL-2012"):
        read_litbank_documents(archive)


def _coref_row(k: int, form: str, misc: str = "_") -> str:
    head = 0 if k == 1 else 1
    return f"{k}\t{form}\t{form}\tPROPN\tNNP\t_\t{head}\tdep\t_\t{misc}"


def test_a_malformed_entity_names_file_document_and_sentence(tmp_path):
    text = "\n".join(
        ["# newdoc id = d1", "# sent_id = d1-1", _coref_row(1, "Kim", "Entity=(1)"), "",
         "# sent_id = d1-2", _coref_row(1, "Lee", "Entity=((1"), _coref_row(2, "ran"), ""]
    )  # fmt: skip
    path = _gz(tmp_path / "ontogum-train.conllu.gz", text + "\n")
    with pytest.raises(ValueError) as raised:
        read_coref_documents(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: document 'd1', sentence 1, word 1: malformed Entity")
    assert "(sent_id d1-2)" in message


def _ontogum(folder: Path, empty: str) -> Path:
    doc = "\n".join(
        ["# newdoc id = {d}", _coref_row(1, "Kim", "Entity=(1)"), _coref_row(2, "met"),
         _coref_row(3, "Lee", "Entity=(2)"), "", _coref_row(1, "Kim", "Entity=(1)"),
         _coref_row(2, "ran"), ""]
    )  # fmt: skip
    for split in ("train", "dev", "test"):
        text = "" if split == empty else "\n".join(doc.format(d=f"{split}{k}") for k in range(3))
        _gz(folder / f"ontogum-{split}.conllu.gz", text)
    return folder


@pytest.mark.parametrize("empty", ["train", "test"])
def test_coref_refuses_an_empty_split_before_training(tmp_path, capsys, monkeypatch, empty):
    monkeypatch.setattr(coref, "_select_l2", _never)
    data = tmp_path / "data"
    _ontogum(data / "gum-ontogum-coref", empty)
    err = one_line_error(capsys, "reproduce", "coref", "--quick", "--no-litbank", "--data", data,
                         "--out", tmp_path / "out")  # fmt: skip
    assert f"ontogum-{empty}.conllu.gz holds no documents with coreference mentions" in err


@pytest.mark.parametrize(
    ("command", "folder", "empty"),
    [
        ("twitter-pos", "ark-twitter-pos", "oct27.test.gz"),
        ("twitter-pos", "ud-english-ewt", "en_ewt-ud-test.conllu.gz"),
        ("ner", "ud-english-gum", "en_gum-ud-test.conllu.gz"),
    ],
)
def test_an_empty_but_valid_gz_is_named_before_training(
    tmp_path, capsys, monkeypatch, command, folder, empty
):
    monkeypatch.setattr(twitter_pos, "_train", _never)
    monkeypatch.setattr(ner.ce, "fit_crf", _never)
    data = tmp_path / "data"
    _ark(data / "ark-twitter-pos")
    _ewt(data / "ud-english-ewt")
    gum = data / "ud-english-gum"
    for split in ("train", "dev", "test"):
        _gz(gum / f"en_gum-ud-{split}.conllu.gz", _conllu_rows() * 3)
    _gz(data / folder / empty, "")
    err = one_line_error(capsys, "reproduce", command, "--quick", "--data", data,
                         "--out", tmp_path / "out")  # fmt: skip
    assert f"{data / folder / empty} holds no sentences" in err


@pytest.mark.parametrize(
    ("command", "folder"),
    [
        ("pos", "ud-english-ewt"),
        ("twitter-pos", "ark-twitter-pos"),
        ("ner", "ud-english-gum"),
        ("coref", "gum-ontogum-coref"),
        ("events", "ud-english-gum"),
        ("sentiment", "nltk-twitter-samples-text"),
    ],
)
def test_missing_data_names_the_folder_and_where_to_get_it(tmp_path, capsys, command, folder):
    nodata = tmp_path / "nodata"
    nodata.mkdir()
    lexicon = tmp_path / "lexicon"
    _gz(lexicon / COUNTRIES_FILE, "FRANCE_ [FRA]\n")
    extra = ["--lexicon", lexicon] if command == "events" else []
    quick = [] if command == "sentiment" else ["--quick"]
    err = one_line_error(capsys, "reproduce", command, *quick, "--data", nodata,
                         "--out", tmp_path / "out", *extra)  # fmt: skip
    assert f"<data>/{folder}/" in err and 'README\'s "Data" section' in err
    if command != "sentiment":  # which reports both sets it looked for
        assert f"no {folder}/ folder in {nodata}" in err


def test_twitter_pos_names_the_missing_ewt_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(twitter_pos, "_train", _never)
    data = tmp_path / "data"
    _ark(data / "ark-twitter-pos")
    err = one_line_error(capsys, "reproduce", "twitter-pos", "--quick", "--data", data,
                         "--out", tmp_path / "out")  # fmt: skip
    assert f"no ud-english-ewt/ folder in {data} (nor en_ewt-ud-train.conllu.gz" in err


def test_the_readme_data_section_lists_every_folder_the_errors_name():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert "\n## Data\n" in readme
    section = readme.split("\n## Data\n", 1)[1].split("\n## ", 1)[0]
    for folder in ("ud-english-ewt", "ud-english-gum", "gum-ontogum-coref", "litbank-coref",
                   "ark-twitter-pos", "nltk-twitter-samples-text", "nltk-sentence-polarity",
                   "phoenix-country-actors"):  # fmt: skip
        assert f"`{folder}/`" in section, folder


@pytest.mark.parametrize(
    ("option", "named"),
    [
        (["--confidence", "1.5"], "--confidence must lie in (0, 1), got 1.5"),
        (["--confidence", "nan"], "--confidence must lie in (0, 1), got nan"),
        (["--band", "0.9", "0.1"], "--band LO HI must satisfy 0 <= LO <= HI <= 1, got 0.9 0.1"),
        (["--band", "-0.1", "0.5"], "--band LO HI must satisfy 0 <= LO <= HI <= 1"),
    ],
)
def test_events_checks_confidence_and_band_before_any_work(tmp_path, capsys, option, named):
    # No data at all: an option checked late had been reported as the missing data.
    err = one_line_error(capsys, "reproduce", "events", "--quick", "--data", tmp_path / "none",
                         "--out", tmp_path / "out", *option)  # fmt: skip
    assert named in err


@pytest.mark.parametrize("below", ["results.json/sub", "results.json/a/b"])
def test_an_out_path_under_a_file_is_refused_first(tmp_path, capsys, below):
    (tmp_path / "results.json").write_text("{}")
    out = tmp_path / below
    with pytest.raises(ValueError, match=r"results\.json is a file, not a folder"):
        report.output_folder(out)
    err = one_line_error(capsys, "reproduce", "sentiment", "--data", tmp_path / "none",
                         "--out", out)  # fmt: skip
    assert f"--out {out}: {tmp_path / 'results.json'} is a file, not a folder" in err
    assert report.output_folder(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"


@pytest.mark.parametrize("columns", [7, 12])
def test_the_conllu_readers_refuse_a_row_with_the_wrong_column_count(tmp_path, columns):
    good = _conllu_rows().splitlines()
    cells = good[1].split("\t")
    bad = "\t".join([*cells, "_", "_"][:columns])
    path = _gz(tmp_path / "en_ewt-ud-train.conllu.gz", "\n".join([good[0], bad, *good[2:]]))
    message = rf"^{path}:2: expected 10 columns, got {columns}$"
    with pytest.raises(ValueError, match=message):
        list(iter_tagged_sentences(path))
    with pytest.raises(ValueError, match=message):
        read_coref_documents(path)


def test_a_conllu_plus_file_keeps_its_declared_columns(tmp_path):
    text = "# global.columns = ID FORM XPOS\n1\tHi\tUH\n2\tthere\tRB\n\n"
    path = _gz(tmp_path / "plus.conllu.gz", text)
    assert list(iter_tagged_sentences(path)) == [(["Hi", "there"], ["UH", "RB"])]


def test_the_events_doc_quotes_the_commands_default_band():
    parser = argparse.ArgumentParser()
    events_experiment.add_arguments(parser)
    lo, hi = parser.parse_args([]).band
    doc = (Path(__file__).resolve().parents[1] / "docs" / "events.md").read_text()
    section = doc.split("## Error analysis", 1)[1]
    assert f"within\n[{lo}, {hi}]" in section
