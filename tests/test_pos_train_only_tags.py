"""A tag that only training holds (EWT's WP$) has no test token: ``reproduce pos`` had
scored it anyway, labels all 0, and warned of its interval's zero width without naming it,
though the per-tag table never shows it."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

from test_pos_experiment import TAGS, _args, _conllu_sentence, _write_corpus

from calib_metrics.functional.zero_width import ZeroWidthWarning
from calib_metrics.paper import pos


def test_a_tag_with_no_test_token_is_not_scored_or_warned_of(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "ud-english-ewt"
    _write_corpus(folder)
    only_train = "".join(
        _conllu_sentence(["whose", "nn1"], ["WP$", "NN"], f"w-{k}") for k in range(3)
    )
    with gzip.open(folder / "en_ewt-ud-train.conllu.gz", "at", encoding="utf-8") as f:
        f.write(only_train)
    args = _args(tmp_path, "--quick", "--bin-size", "100", "--n-samples", "200", "--top-pairs", "2")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = pos.run(args)
    assert results["num_tags"] == len(TAGS) + 1  # WP$ is one of the models' tags
    for model in results["models"].values():
        assert set(model["per_tag"]) == set(TAGS)
    said = [str(w.message) for w in caught if issubclass(w.category, ZeroWidthWarning)]
    assert said == []
