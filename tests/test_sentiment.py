"""The §4.1 sentiment experiment: labelling, emoticon removal, split, end to end."""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from calib_metrics.paper import sentiment
from calib_metrics.paper.locations import shared_data_dir
from calib_metrics.paper.tweets import (
    POLARITY,
    TWITTER,
    balanced_subsample,
    emoticon_label,
    label_counts,
    load_corpus,
    make_tokenizer,
    read_corpus,
    read_sentence_polarity,
    read_twitter_samples,
    regex_tokenize,
    remove_emoticons,
    stratified_split,
)

# --- labelling and emoticon removal -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("good morning :)", 1),
        ("great:)", 1),
        (":)))) yes", 1),
        ("x:)#tag", 1),
        ("good morning :-)", 0),
        ("good morning : )", 0),
        ("good morning :D", 0),
        ("so sad :(", 0),
        ("(: reversed", 0),
        ("", 0),
    ],
)
def test_emoticon_label(text, label):
    assert emoticon_label(text) == label


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("good morning :)", "good morning"),
        ("great:) see you", "great see you"),
        ("thanks!:))) bye", "thanks! bye"),
        (":)#FollowFriday", "#FollowFriday"),
        ("nice :-) :D ;) =) ;p :P xD (: (-: :') ok", "nice ok"),
        ("sad :( :-( : ( :'( D: ;_; meh", "sad meh"),
        ("hmm :/ really", "hmm really"),
        ("hey :Dthanks", "hey thanks"),
        ("fish &amp; chips &lt;3", "fish & chips <3"),
        # Not emoticons: times, words glued to colons, URLs.
        ("at 10:30 pm", "at 10:30 pm"),
        ("Note:Dear all", "Note:Dear all"),
        (
            "see http://t.co/ab:Dx and https://x.org/a:/b",
            "see http://t.co/ab:Dx and https://x.org/a:/b",
        ),
    ],
)
def test_remove_all_emoticons(text, expected):
    assert remove_emoticons(text) == expected


def test_remove_smiley_only_keeps_other_emoticons():
    assert remove_emoticons("yay :) :D :( ;)", which="smiley") == "yay :D :( ;)"
    # The label's key goes even from inside a URL.
    assert remove_emoticons("http://t.co/x:)", which="smiley") == "http://t.co/x"


def test_remove_emoticons_rejects_unknown_mode():
    with pytest.raises(ValueError, match="which"):
        remove_emoticons("x", which="some")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet=st.sampled_from(list(":)(-;=DPp/ab1 .\t&lt;htps")), max_size=40))
def test_no_smiley_survives_removal(text):
    for which in ("all", "smiley"):
        cleaned = remove_emoticons(text, which)
        assert ":)" not in cleaned
        assert emoticon_label(cleaned) == 0


def test_regex_tokenizer():
    tokens = regex_tokenize("@Ann LOVED it!!! #yay http://t.co/x?a=1 don't 😊 5")
    assert tokens == ["@Ann", "LOVED", "it", "!!!", "#yay", "http://t.co/x?a=1", "don't", "😊", "5"]


def test_make_tokenizer():
    name, tokenize = make_tokenizer("auto")
    assert name in ("nltk", "regex")
    assert tokenize("so good") == ["so", "good"]
    with pytest.raises(ValueError, match="tokenizer"):
        make_tokenizer("spacy")


# --- split -----------------------------------------------------------------------------


def _labels(n_pos=37, n_neg=63):
    return torch.tensor([1] * n_pos + [0] * n_neg)[torch.randperm(100, generator=_gen(99))]


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def test_split_partitions_and_stratifies():
    y = _labels()
    parts = stratified_split(y, (0.6, 0.2, 0.2), _gen(0))
    joined = torch.cat(parts).sort().values
    assert torch.equal(joined, torch.arange(100))
    assert [int(y[p].sum()) for p in parts] == [22, 7, 8]
    assert [p.numel() for p in parts] == [60, 20, 20]


def test_split_is_deterministic_in_the_seed():
    y = _labels()
    first = stratified_split(y, (0.6, 0.2, 0.2), _gen(0))
    again = stratified_split(y, (0.6, 0.2, 0.2), _gen(0))
    other = stratified_split(y, (0.6, 0.2, 0.2), _gen(1))
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[2], other[2])


@pytest.mark.parametrize("fractions", [(0.5, 0.6), (1.0,), (0.7, 0.3, 0.0), (0.8, -0.1, 0.3)])
def test_split_rejects_bad_fractions(fractions):
    with pytest.raises(ValueError, match="fractions"):
        stratified_split(_labels(), fractions)


def test_split_rejects_bad_labels():
    with pytest.raises(ValueError, match="0 or 1"):
        stratified_split(torch.tensor([0, 2, 1]))
    with pytest.raises(ValueError, match="non-empty"):
        stratified_split(torch.tensor([], dtype=torch.long))


def test_balanced_subsample():
    y = _labels()
    keep = balanced_subsample(y, _gen(0))
    assert int(y[keep].sum()) == 37 and keep.numel() == 74
    assert torch.equal(keep, balanced_subsample(y, _gen(0)))
    assert not torch.equal(keep, balanced_subsample(y, _gen(1)))
    with pytest.raises(ValueError, match="both classes"):
        balanced_subsample(torch.ones(5, dtype=torch.long))


# --- readers ---------------------------------------------------------------------------

POS_WORDS = ["love", "great", "happy", "thanks", "awesome", "fun", "enjoy", "beautiful"]
NEG_WORDS = ["hate", "awful", "sad", "sorry", "miss", "tired", "sick", "worst"]
NEUTRAL = ["the", "a", "today", "going", "to", "work", "my", "you", "and", "with", "weekend"]


def _write_tweets(folder: Path, n: int = 240, seed: int = 0) -> None:
    """Synthetic ``twitter_samples`` export: positive-file tweets carry ':)' or ':D'."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for source, words, faces in (
        ("positive", POS_WORDS, [":)", "great:)", ":)))", ":D"]),
        ("negative", NEG_WORDS, [":(", ":-(", ": ("]),
    ):
        lines = []
        for i in range(n):
            # Noisy cues so that neither model is perfect.
            mix = [rng.choice(words if rng.random() < 0.7 else POS_WORDS + NEG_WORDS)]
            mix += rng.sample(NEUTRAL, 4)
            rng.shuffle(mix)
            lines.append(f"{' '.join(mix)} {faces[i % len(faces)]}\t{source}")
        with gzip.open(folder / f"{source}_tweets.txt.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def _write_polarity(folder: Path, n: int = 150, seed: int = 0) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "sentence_polarity.zip", "w") as z:
        for member, words in (("pos", POS_WORDS), ("neg", NEG_WORDS)):
            lines = [
                " ".join(
                    [
                        rng.choice(words if rng.random() < 0.75 else POS_WORDS + NEG_WORDS),
                        *rng.sample(NEUTRAL, 4),
                    ]
                )
                + " . "
                for _ in range(n)
            ]
            z.writestr(f"sentence_polarity/rt-polarity.{member}", "\n".join(lines) + "\n")


def test_read_twitter_samples_labels_by_smiley(tmp_path):
    _write_tweets(tmp_path, n=50)
    corpus = read_twitter_samples(tmp_path)
    assert corpus.name == TWITTER and corpus.emoticon_labelled
    assert len(corpus.texts) == 100
    assert corpus.labels.tolist() == [emoticon_label(t) for t in corpus.texts]
    counts = label_counts(corpus)
    assert counts["negative"]["1"] == 0
    assert 0 < counts["positive"]["0"] < counts["positive"]["1"]


def test_read_twitter_samples_splits_on_newline_only(tmp_path):
    with gzip.open(tmp_path / "positive_tweets.txt.gz", "wb") as f:
        f.write(b"one\rline :)\tpositive\n")
    with gzip.open(tmp_path / "negative_tweets.txt.gz", "wb") as f:
        f.write(b"bad\ttab\tnegative\nno :(\tnegative\n")
    corpus = read_twitter_samples(tmp_path)
    assert corpus.texts == ["one\rline :)", "bad\ttab", "no :("]
    assert corpus.labels.tolist() == [1, 0, 0]


def test_read_twitter_samples_rejects_wrong_label(tmp_path):
    with gzip.open(tmp_path / "positive_tweets.txt.gz", "wt") as f:
        f.write("fine :)\tnegative\n")
    with gzip.open(tmp_path / "negative_tweets.txt.gz", "wt") as f:
        f.write("bad :(\tnegative\n")
    with pytest.raises(ValueError, match="positive_tweets"):
        read_twitter_samples(tmp_path)


@pytest.mark.parametrize("empty", ["", "\n\n"])
def test_an_empty_tweets_file_is_named(tmp_path, empty):
    """An empty positive_tweets.txt.gz had been reported as a split with an empty part."""
    _write_tweets(tmp_path, n=20)
    path = tmp_path / "positive_tweets.txt.gz"
    path.write_bytes(b"")  # a 0-byte file, as an interrupted copy leaves it
    if empty:
        with gzip.open(path, "wt") as f:
            f.write(empty)
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))} holds no tweets$"):
        read_twitter_samples(tmp_path)


def test_an_empty_polarity_member_is_named(tmp_path):
    with zipfile.ZipFile(tmp_path / "sentence_polarity.zip", "w") as z:
        z.writestr("sentence_polarity/rt-polarity.pos", "a gem .\n")
        z.writestr("sentence_polarity/rt-polarity.neg", "")
    with pytest.raises(ValueError, match=r"sentence_polarity/rt-polarity\.neg holds no sentences$"):
        read_sentence_polarity(tmp_path)


def test_read_sentence_polarity(tmp_path):
    _write_polarity(tmp_path, n=20)
    corpus = read_sentence_polarity(tmp_path)
    assert corpus.name == POLARITY and not corpus.emoticon_labelled
    assert corpus.labels.tolist() == [1] * 20 + [0] * 20
    assert all(t.endswith(" .") for t in corpus.texts)


def test_load_corpus_falls_back_to_polarity(tmp_path):
    _write_polarity(tmp_path / POLARITY, n=10)
    corpus, folder = load_corpus(str(tmp_path))
    assert corpus.name == POLARITY and folder == tmp_path / POLARITY
    # The folder holds the other set: said so (it had read "holds neither" of the two).
    said = f"{TWITTER} not found: the data folder holds {POLARITY} only (--dataset auto"
    with pytest.raises(FileNotFoundError, match=re.escape(said)):
        load_corpus(str(tmp_path), TWITTER)
    with pytest.raises(FileNotFoundError, match="no sentiment data set"):
        load_corpus(str(tmp_path / "empty"), POLARITY)
    with pytest.raises(FileNotFoundError):
        read_corpus(tmp_path)


def test_asking_for_the_polarity_set_beside_the_tweets_names_them(tmp_path):
    _write_tweets(tmp_path / TWITTER, n=10)
    said = f"{POLARITY} not found: the data folder holds {TWITTER} only"
    with pytest.raises(FileNotFoundError, match=re.escape(said)):
        load_corpus(str(tmp_path), POLARITY)


def test_missing_sklearn_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ImportError, match=r"a dependency of calib-metrics: pip install scikit"):
        sentiment._require_sklearn()


# --- model fits ------------------------------------------------------------------------


def _blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info

    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def _two_blas_threads():
    """A block with BLAS on two threads (skipped where BLAS will not take two)."""
    from threadpoolctl import threadpool_limits

    limits = threadpool_limits(limits=2, user_api="blas")
    if _blas_threads() != {2}:
        limits.restore_original_limits()
        pytest.skip("BLAS does not take two threads here")
    return limits


def test_selection_fits_with_one_blas_thread():
    """liblinear's weights had followed the BLAS thread count (OPENBLAS_NUM_THREADS 1 or
    2 moved the LR-isotonic row of the docs' table by 0.0003)."""
    seen = []

    class Model:
        def fit(self, x, y):
            seen.append(_blas_threads())
            return self

        def predict_proba(self, x):
            return np.full((len(x), 2), 0.5)

    with _two_blas_threads():
        sentiment.select(lambda v: Model(), [1.0], ([[0]], [0]), ([[0], [1]], [0, 1]), "lr")
        assert _blas_threads() == {2}  # restored after the fit
    assert seen == [{1}]


def test_logistic_regression_weights_do_not_follow_the_blas_threads():
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    # Sparse binary features as the experiment's, long enough for BLAS to split its sums.
    rng = np.random.default_rng(0)
    x = sparse.random(4000, 10000, density=0.001, random_state=1, format="csr")
    x.data[:] = 1.0
    y = (x @ rng.normal(size=10000) + rng.normal(size=4000) > 0).astype(int)

    def weights():
        factory = lambda c: LogisticRegression(C=c, solver="liblinear")  # noqa: E731
        _, model, _ = sentiment.select(factory, [1.0], (x, y), (x[:100], y[:100]), "lr")
        return model.coef_

    one = weights()
    with _two_blas_threads():
        two = weights()
    assert np.array_equal(one, two)  # bit for bit; had differed by 4e-15


# --- end to end ------------------------------------------------------------------------


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sentiment.add_arguments(parser)
    return parser.parse_args(list(argv))


def _check_results(results: dict, out: Path) -> None:
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["dataset"] == results["dataset"]
    assert (out / "results.md").read_text().startswith("# Sentiment")
    for key in ("naive_bayes", "logistic_regression"):
        m = on_disk["models"][key]
        assert 0.5 < m["accuracy"] <= 1 and 0 < m["f1"] <= 1
        assert 0 <= m["calib_err_lower"] <= m["calib_err_upper"]
        assert 0 <= m["calib_err"] < 0.5
        parts = m["brier_calibration"] + m["brier_refinement"] + m["brier_within_bin"]
        assert m["brier"] == pytest.approx(parts, abs=1e-9)
        assert m["brier_calibration"] == pytest.approx(m["calib_err"] ** 2, rel=1e-9)
        assert m["value"] in [float(v) for v in m["dev"]]
        best = max(d["f1"] for d in m["dev"].values())
        assert m["dev"][f"{m['value']:g}"]["f1"] == best
        assert (out / on_disk["figures"][key]).stat().st_size > 1000
    assert (out / on_disk["figures"]["both"]).is_file()
    # Issue 15: NB against LR, paired on the same test items.
    d = on_disk["paired"]
    assert d["lower"] <= d["difference"] <= d["upper"] and 0 <= d["p_value"] <= 1
    assert d["difference"] == pytest.approx(d["a"] - d["b"])
    assert "NB − LR, paired [95%]" in (out / "results.md").read_text()
    # The CalibErr column's estimator named, with its draws (it had said "samples" only).
    said = "CalibErr [95% CI]: the paper's estimator, plug-in, with its Algorithm 2 interval"
    assert said in (out / "results.md").read_text()
    # The diagram's end bins, which docs/sentiment.md quotes (they had been read off the
    # figure by hand): the first and last of the result's sorted bins.
    for key in ("naive_bayes", "logistic_regression"):
        low, high = on_disk["models"][key]["lowest_bin"], on_disk["models"][key]["highest_bin"]
        assert 0 <= low["mean_prob"] <= high["mean_prob"] <= 1
        assert 0 <= low["frequency"] <= 1 and 0 <= high["frequency"] <= 1
    nb = on_disk["models"]["naive_bayes"]["lowest_bin"]
    said = f"Naive Bayes {nb['mean_prob']:.3f} ({100 * nb['frequency']:.1f}% positive) to "
    assert (
        "Reliability ends (the diagram's lowest and highest bins"
        in (out / "results.md").read_text()
        and said in (out / "results.md").read_text()
    )


def test_end_to_end_on_synthetic_tweets(tmp_path, capsys):
    data = tmp_path / "data"
    _write_tweets(data / TWITTER, n=240)
    out = tmp_path / "out"
    argv = ["--data", str(data), "--out", str(out), "--n-samples", "200", "--tokenizer", "regex"]
    results = sentiment.run(_args(*argv, "--alphas", "0.1", "1", "--cs", "0.1", "1"))
    _check_results(results, out)
    assert not results["fallback"] and results["tokenizer"] == "regex"
    # 180 ':)' tweets of 480: balanced to 180 + 180, split 60/20/20 per class.
    assert results["labelling"]["positive"] == 180
    assert results["split"]["sizes"] == [216, 72, 72]
    assert results["split"]["test_positives"] == 36
    assert results["bin_size"] == 7
    assert "F1" in capsys.readouterr().out
    # Same seed, same numbers.
    again = sentiment.run(_args(*argv, "--alphas", "0.1", "1", "--cs", "0.1", "1"))
    assert again["models"] == results["models"]
    assert again["paired"] == results["paired"]


def test_end_to_end_falls_back_to_polarity(tmp_path, capsys):
    _write_polarity(tmp_path / POLARITY, n=150)
    out = tmp_path / "out"
    argv = ["--data", str(tmp_path), "--out", str(out), "--n-samples", "100", "--cs", "1"]
    # The fallback's examples are sentences: its texts had called them tweets.
    with pytest.warns(UserWarning, match="3 bins of the 60 test sentences"):
        results = sentiment.run(_args(*argv, "--alphas", "1", "--no-balance", "--bin-size", "20"))
    _check_results(results, out)
    text = (out / "results.md").read_text()
    assert "on the same test sentences" in text and "tweets" not in text
    assert not results["balanced"] and results["bin_size"] == 20
    assert results["split"]["sizes"] == [180, 60, 60]
    assert results["fallback"] and results["dataset"] == POLARITY
    assert "FALLBACK" in results["note"] and "FALLBACK" in capsys.readouterr().out


@pytest.mark.parametrize(
    "bad", [["--bin-size", "0"], ["--n-samples", "0"], ["--alphas", "0"], ["--cs", "1", "-1"]]
)
def test_run_rejects_bad_options(tmp_path, bad):
    with pytest.raises(ValueError, match=bad[0].lstrip("-").replace("-", ".")):
        sentiment.run(_args("--data", str(tmp_path), "--out", str(tmp_path / "o"), *bad))


# --- shared data -----------------------------------------------------------------------


def _shared(name: str) -> Path:
    root = shared_data_dir()
    if root is None or not (root / name).is_dir():
        pytest.skip(f"shared data set {name} not found (set CALIB_METRICS_DATA)")
    return root / name


@pytest.mark.shared_data
def test_shared_tweets_label_counts():
    corpus = read_twitter_samples(_shared(TWITTER))
    assert len(corpus.texts) == 10000
    assert label_counts(corpus) == {
        "positive": {"0": 1454, "1": 3546},
        "negative": {"0": 4998, "1": 2},
    }
    cleaned = [remove_emoticons(t) for t in corpus.texts]
    assert not any(":)" in t or ":(" in t.split() for t in cleaned)


@pytest.mark.shared_data
def test_shared_sentence_polarity():
    corpus = read_sentence_polarity(_shared(POLARITY))
    assert len(corpus.texts) == 10662 and int(corpus.labels.sum()) == 5331


def test_a_bin_size_that_makes_too_few_bins_warns(tmp_path):
    """--bin-size 100000 ran with one bin and said nothing, where evaluate warns."""
    data = tmp_path / "data"
    _write_tweets(data / TWITTER, n=240)
    options = ["--n-samples", "50", "--tokenizer", "regex", "--alphas", "1", "--cs", "1"]
    argv = ["--data", str(data), "--out", str(tmp_path / "out"), *options, "--bin-size", "100000"]
    with pytest.warns(UserWarning, match="makes 1 bin of the 72 test tweets; with fewer than 10"):
        sentiment.run(_args(*argv))


def test_the_few_bins_warning_is_printed_before_the_run_goes_on(tmp_path, monkeypatch):
    # The CLI holds warnings until the command is done; this one is known before the
    # models are scored, so it is printed then (as demo's is), not after the tables.
    import io
    import sys

    from calib_metrics import cli

    data = tmp_path / "data"
    _write_tweets(data / TWITTER, n=240)
    options = ["--n-samples", "50", "--tokenizer", "regex", "--alphas", "1", "--cs", "1"]
    both = io.StringIO()
    monkeypatch.setattr(sys, "stdout", both)
    monkeypatch.setattr(sys, "stderr", both)
    argv = ["--data", str(data), "--out", str(tmp_path / "out"), *options, "--bin-size", "100000"]
    code = cli.main(["reproduce", "sentiment", *argv])
    lines = both.getvalue().splitlines()
    warned = [i for i, x in enumerate(lines) if "--bin-size 100000 makes 1 bin" in x]
    tables = [i for i, x in enumerate(lines) if x.startswith("|")]
    assert code == 0 and len(warned) == 1 and tables, lines
    assert warned[0] < tables[0], lines
