"""What ``reproduce`` writes: results that name their figures relative to --out and say
only what was run, and the README's word on what two demo runs repeat.

A probe of 2026-11-30 found twitter-pos' and ner's results.json holding absolute figure
paths, twitter-pos' results.md setting the thesis' WSJ numbers "beside EWT" on a run
without EWT (``--ewt-train 0``), and the README saying two demo runs gave identical files
when results.json holds the run's time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import test_events_experiment as events_experiment_tests
import test_ner_experiment as ner_experiment_tests
import test_paper_data_up_front as data_up_front  # its synthetic data sets
import test_pos_experiment as pos_experiment_tests
import test_sentiment as sentiment_tests

from calib_metrics.models.coref_ranker import AntecedentRanker
from calib_metrics.paper import ner, pos, sentiment, twitter_pos
from calib_metrics.paper.events import experiment as events


@pytest.mark.filterwarnings("ignore::UserWarning")  # a handful of tweets: too few groups
def test_twitter_pos_without_ewt_names_its_figure_and_no_ewt_comparison(tmp_path):
    data_up_front._ark(tmp_path / "data" / "ark-twitter-pos")
    out = tmp_path / "out"
    args = _parsed(twitter_pos, "--data", tmp_path / "data", "--out", out, "--quick",
                   "--ewt-train", "0", "--max-iter", "3", "--n-samples", "20",
                   "--buckets", "64")  # fmt: skip
    twitter_pos.run(args)
    figures = json.loads((out / "results.json").read_text())["figures"]
    markdown = (out / "results.md").read_text()
    # The figure had been named by its absolute path, and the WSJ numbers set "beside EWT".
    said = ("beside EWT" in markdown, "EWT was not run (--ewt-train 0)" in markdown)
    assert (figures, said) == ({"twitter": "twitter_reliability.png"}, (False, True))
    assert (out / figures["twitter"]).is_file()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_ner_names_its_figure_relative_to_out(tmp_path):
    ner_experiment_tests._write_gum(tmp_path / "data" / "ud-english-gum")
    out = tmp_path / "out"
    args = _parsed(ner, "--data", tmp_path / "data", "--out", out, "--quick", "--max-iter", "5",
                   "--n-samples", "20", "--buckets", "256")  # fmt: skip
    ner.run(args)
    saved = json.loads((out / "results.json").read_text())
    assert saved["figure"] == "ner_reliability.png"
    assert (out / saved["figure"]).is_file()


def _relative_names(figures) -> list[str]:
    """The figure names of a results.json, each a bare name (checked)."""
    names = list(figures.values()) if isinstance(figures, dict) else list(figures)
    return [n for n in names if Path(n).name == n]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_pos_names_its_figures_and_recalibration_figure_relative_to_out(tmp_path):
    pos_experiment_tests._write_corpus(tmp_path / "data" / "ud-english-ewt")
    out = tmp_path / "out"
    args = _parsed(pos, "--data", tmp_path / "data", "--out", out, "--quick", "--bin-size",
                   "100", "--n-samples", "50", "--top-pairs", "2", "--recalibrate")  # fmt: skip
    pos.run(args)
    saved = json.loads((out / "results.json").read_text())
    # Every figure had been stored as str(out / name): an absolute path, or one relative
    # to the working folder of the run, breaking when --out moves.
    figures = [*saved["figures"].values(), saved["recalibration"]["figure"]]
    assert figures == _relative_names(figures) and len(figures) == 8
    assert all((out / f).is_file() for f in figures)


def test_sentiment_names_its_figures_relative_to_out(tmp_path):
    sentiment_tests._write_tweets(tmp_path / "data" / sentiment.TWITTER, n=240)
    out = tmp_path / "out"
    args = _parsed(sentiment, "--data", tmp_path / "data", "--out", out, "--n-samples", "50",
                   "--tokenizer", "regex", "--alphas", "1", "--cs", "1",
                   "--recalibrate")  # fmt: skip
    sentiment.run(args)
    saved = json.loads((out / "results.json").read_text())
    figures = [*saved["figures"].values(), saved["recalibration"]["figure"]]
    assert figures == _relative_names(figures) and len(figures) == 4
    assert all((out / f).is_file() for f in figures)


def test_events_names_its_figures_relative_to_out(tmp_path):
    args = events_experiment_tests._args(tmp_path, "--model", "MODEL")
    args.model = str(AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt"))
    events.run(args)
    out = tmp_path / "out"
    figures = json.loads((out / "results.json").read_text())["figures"]
    assert figures and figures == _relative_names(figures)
    assert all((out / f).is_file() for f in figures)


def test_the_readme_says_which_demo_files_two_runs_repeat():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## What the demo shows", 1)[1].split("\n## ", 1)[0]
    # results.json holds the run's time: two runs had been said to give identical files.
    assert "identical files" not in section
    assert '`results.json` files that differ only in the run time,\n`"seconds"`' in section


def _parsed(module, *argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return parser.parse_args([str(a) for a in argv])


def test_the_readme_says_what_quick_cuts_in_each_experiment():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = " ".join(readme.split("## The paper's experiments, reproduced", 1)[1].split())
    section = section.split(" ### ", 1)[0]
    # It had said every --quick runs "on small subsets with fewer iterations": sentiment
    # has none, and events' reads every document, cutting only epochs and samples.
    assert "`--quick` is a smoke run on small subsets" not in section
    assert "sentiment has no `--quick`" in section
    assert "events still reads every document and only trains fewer epochs" in section
