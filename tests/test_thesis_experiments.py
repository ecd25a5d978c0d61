"""Readers and experiments of the thesis' §3.4 / §4.1-4.2 on synthetic corpora (fast), and
data-backed checks that skip without ../shared/data."""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
from pathlib import Path

import pytest

from calib_metrics.paper import twitter_pos
from calib_metrics.paper.ark_twitter import load_ark_twitter, read_ark_conll
from calib_metrics.paper.locations import shared_data_dir

_NOUNS = ["dog", "cat", "game", "phone", "day", "bus", "song"]
_VERBS = ["runs", "won", "bet", "likes", "got", "loves"]
_NAMES = ["Lee", "Paris", "Obama", "Cliff"]


def _sentence(rng: random.Random) -> list[tuple[str, str, str]]:
    """(word, ARK tag, PTB tag) triples of a tiny grammar."""
    out = [("the", "D", "DT"), (rng.choice(_NOUNS), "N", "NN"), (rng.choice(_VERBS), "V", "VBZ")]
    if rng.random() < 0.5:
        out.append((rng.choice(_NAMES), "^", "NNP"))
    if rng.random() < 0.4:
        out.insert(0, (rng.choice(["@bob", "@amy"]), "@", "NNP"))
    out.append(("!" if rng.random() < 0.3 else ".", ",", "."))
    return out


def _write_ark(folder: Path, seed: int = 0) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in (("oct27.train", 80), ("oct27.dev", 25), ("oct27.test", 30)):
        rows = ["\n".join(f"{w}\t{t}" for w, t, _ in _sentence(rng)) for _ in range(n)]
        (folder / name).write_text("\n\n".join(rows) + "\n")
    rows = ["\n".join(f"{w}\t{t}" for w, t, _ in _sentence(rng)) for _ in range(20)]
    with gzip.open(folder / "daily547.conll.gz", "wt", encoding="utf-8") as f:
        f.write("\n\n".join(rows) + "\n")
    return folder


def _write_ewt(folder: Path, seed: int = 1) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 80), ("dev", 25), ("test", 30)):
        blocks = []
        for _ in range(n):
            lines = [
                f"{i}\t{w}\t_\t_\t{p}\t_\t0\tdep\t_\t_"
                for i, (w, _, p) in enumerate(_sentence(rng), 1)
            ]
            blocks.append("\n".join(lines))
        (folder / f"en_ewt-ud-{split}.conllu").write_text("\n\n".join(blocks) + "\n\n")
    return folder


def test_ark_reader(tmp_path):
    folder = _write_ark(tmp_path / "ark-twitter-pos")
    splits = load_ark_twitter(tmp_path)
    assert [len(splits[k]) for k in ("train", "dev", "test", "daily547")] == [80, 25, 30, 20]
    words, tags = splits["train"][0]
    assert len(words) == len(tags) and "V" in tags
    (folder / "bad").write_text("a\tN\nb N\n")
    with pytest.raises(ValueError, match="bad:2"):
        read_ark_conll(folder / "bad")
    with pytest.raises(ValueError, match="unknown splits"):
        load_ark_twitter(tmp_path, splits=("valid",))
    with pytest.raises(FileNotFoundError):
        load_ark_twitter(tmp_path / "nowhere")


def _args(module, **options) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    args = parser.parse_args(["--quick"])
    for key, value in options.items():
        setattr(args, key, value)
    return args


def test_twitter_pos_experiment_on_synthetic_corpora(tmp_path):
    _write_ark(tmp_path / "ark-twitter-pos")
    _write_ewt(tmp_path / "ud-english-ewt")
    args = _args(
        twitter_pos,
        data=str(tmp_path),
        out=str(tmp_path / "out"),
        c2=[1.0],
        max_iter=8,
        n_samples=50,
        buckets=1024,
    )
    results = twitter_pos.run(args)
    tw = results["twitter"]["models"]
    assert set(tw) == {"hmm", "basic", "+context", "+affixes", "+shape"}
    for model in tw.values():
        test = model["test"]
        assert 0.5 < test["accuracy"] <= 1.0
        for setting in ("paper", "recommended"):
            query = test[setting]["query"]
            assert 0 <= query["lower"] <= query["upper"] <= 1
            assert query["n"] == test["tokens"]
            assert "V" in test[setting]["per_tag"]
        assert "daily547" in model
    assert results["ewt"]["query_tag"] == "NN" and set(results["ewt"]["models"]) == {
        "hmm",
        "basic",
        "+shape",
    }
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["twitter"]["models"]["+shape"]["test"]["paper"]["query"]["bins"] == 1
    text = (tmp_path / "out" / "results.md").read_text()
    assert "CRF-Advanced" in text and "tag NN" in text
    # Under each corpus's table, what its "paper" and "recommended" columns mean.
    assert text.count("\n\npaper: the paper's estimator, plug-in in bins of 5000") == 2
    # The heading had said 25 tags over a table of however many occur in test.
    tables = re.findall(r"the (\d+) most frequent training tags that occur in test:"
                                  r"\n\n\|.*\n\|.*\n((?:\|.*\n)+)", text)  # fmt: skip
    assert tables and all(int(count) == rows.count("\n") for count, rows in tables)
    assert (tmp_path / "out" / "twitter_reliability.png").stat().st_size > 0
    assert (tmp_path / "out" / "ewt_reliability.png").stat().st_size > 0
    # Paired differences with their signs, as `calib-metrics compare` prints them (the
    # positive ends had none: "[-0.0277, 0.0112]").
    signed = r"[+-]\d\.\d{4}"
    assert re.search(rf"\n- basic - hmm: {signed} \[{signed}, {signed}\], p", text)


def test_twitter_pos_tag_counts_say_they_cover_more_tags_than_the_table() -> None:
    """The count ran over every test tag beside a table cut at 25: 20 of 41 could not be
    checked from the 25 rows shown."""
    tags = [f"T{k}" for k in range(30)]
    per_tag = {
        model: {t: 0.01 * (k % 3) for k, t in enumerate(tags)} for model in twitter_pos.MODELS
    }
    block = {
        "models": {
            model: {"test": {"recommended": {"per_tag": errors}}}
            for model, errors in per_tag.items()
        }
    }
    lines = twitter_pos._per_tag_table(block)
    counts = [line for line in lines if " below " in line]
    assert counts and all(
        line.endswith("of 30 tags (every tag in test; the table shows 25)") for line in counts
    )


def test_twitter_pos_says_which_sentences_it_left_out() -> None:
    """A Daily547 tweet holding a tag training never saw is left out: counted in
    results.json alone, under "dropped", it had gone unsaid in results.md."""
    rng = random.Random(0)
    tweet = [(w, t) for w, t, _ in _sentence(rng)]
    raw = {
        split: [([w for w, _ in tweet], [t for _, t in tweet])] * n
        for split, n in (("train", 4), ("dev", 2), ("test", 3), ("daily547", 2))
    }
    raw["daily547"] = [*raw["daily547"], (["lol"], ["!"])]
    data, _, sizes = twitter_pos._splits(raw, {})
    assert sizes["dropped"] == {"train": 0, "dev": 0, "test": 0, "daily547": 1}
    assert sizes["sentences"] == {split: len(v.sentences) for split, v in data.items()}
    block = {"query_tag": "V", "models": {}, "paired": {}} | sizes
    text = "\n".join(twitter_pos._corpus_tables(block, "twitter"))
    assert (
        "\n\nLeft out: 1 of 3 daily547 sentences, each holding a tag that no training "
        "sentence holds (the model cannot predict it).\n\n" in text
    )
    # None left out, nothing said (as in every table docs/thesis.md holds).
    data, _, sizes = twitter_pos._splits({k: v[:2] for k, v in raw.items()}, {})
    block = {"query_tag": "V", "models": {}, "paired": {}} | sizes
    assert "Left out" not in "\n".join(twitter_pos._corpus_tables(block, "twitter"))


def test_twitter_pos_rejects_bad_options(tmp_path):
    with pytest.raises(ValueError, match="c2"):
        twitter_pos.run(_args(twitter_pos, c2=[-1.0], out=str(tmp_path)))


_DATA = shared_data_dir()
needs_data = pytest.mark.skipif(
    _DATA is None or not (_DATA / "ark-twitter-pos").is_dir(),
    reason="needs ../shared/data/ark-twitter-pos",
)


@needs_data
@pytest.mark.shared_data
def test_ark_twitter_counts_match_the_release():
    splits = load_ark_twitter(_DATA)
    tweets = {k: len(v) for k, v in splits.items()}
    tokens = {k: sum(len(w) for w, _ in v) for k, v in splits.items()}
    assert tweets == {"train": 1000, "dev": 327, "test": 500, "daily547": 547}
    assert tokens["train"] == 14619 and tokens["dev"] == 4823 and tokens["test"] == 7152
    tags = {t for _, ts in splits["train"] for t in ts}
    assert len(tags) == 25 and "V" in tags
