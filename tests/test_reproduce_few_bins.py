"""Every reproduction with a ``--bin-size`` says, before its training, when the bins are too
few to show miscalibration: ``reproduce pos --bin-size 1000000`` (one bin of all its
queries) and ``reproduce coref`` had said nothing, where ``sentiment`` and ``demo`` warn."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import pytest
from test_coref_experiment import _write_data as _write_coref_data
from test_pos_experiment import TAGS, _write_corpus
from test_pos_experiment import _args as _pos_args

from calib_metrics.few_bins import ImmediateWarning
from calib_metrics.paper import coref, pos
from calib_metrics.paper.tagging import read_tagged_sentences


class _Stop(Exception):
    """Raised where the training would start: the warning had to come before it."""


def _stop(*_args, **_kwargs):
    raise _Stop


def _warned_before_training(run, args) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(_Stop):
            run(args)
    return [str(w.message) for w in caught if w.category is ImmediateWarning]


def test_pos_warns_of_too_few_bins_before_training(tmp_path: Path, monkeypatch) -> None:
    _write_corpus(tmp_path / "data" / "ud-english-ewt")
    test_file = tmp_path / "data" / "ud-english-ewt" / "en_ewt-ud-test.conllu.gz"
    n_queries = len(TAGS) * sum(len(words) for words, _ in read_tagged_sentences(test_file))
    monkeypatch.setattr(pos, "_taggers", _stop)
    said = _warned_before_training(pos.run, _pos_args(tmp_path, "--bin-size", "1000000"))
    assert said == [
        f"--bin-size 1000000 makes 1 bin of the {n_queries} test queries of all tags; with "
        "fewer than 10 bins the error can hide miscalibration (one bin measures only |mean "
        "probability - mean label|, blind to any that cancels across probabilities): use a "
        f"--bin-size of at most {n_queries // 10}"
    ]
    # Bins enough: nothing said.
    assert not _warned_before_training(pos.run, _pos_args(tmp_path, "--bin-size", "10"))


def _coref_args(data: Path, out: Path, bin_size: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    coref.add_arguments(parser)
    argv = ["--data", str(data), "--out", str(out), "--quick", "--bin-size", str(bin_size)]
    return parser.parse_args(argv)


def test_coref_warns_of_too_few_bins_of_each_set_before_training(tmp_path: Path, monkeypatch):
    _write_coref_data(tmp_path / "data")
    monkeypatch.setattr(coref, "_select_l2", _stop)
    # test_end_to_end_quick_run's sets: three test documents of 14 mentions, a book of 12.
    args = _coref_args(tmp_path / "data", tmp_path / "out", 100)
    said = _warned_before_training(coref.run, args)
    assert [text.split(";")[0] for text in said] == [
        "--bin-size 100 makes 2 bins of the 273 mention pairs of OntoGUM test",
        "--bin-size 100 makes 1 bin of the 66 mention pairs of LitBank (out of domain)",
    ]
    assert "use a --bin-size of at most 27" in said[0]
    assert not _warned_before_training(coref.run, _coref_args(args.data, args.out, 6))
