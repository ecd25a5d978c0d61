"""``calib-metrics reproduce``'s options: refused at once, naming the option, and kept as
given under ``--quick``.

A probe of 2026-11-30 found ``--n-samples 1`` (ner, pos, twitter-pos) and ``--ci-samples
0`` (coref) accepted at start and refused by the library after 15–30 s of training, events'
``--epochs -1``, ``--n-bits 0`` and ``--model /nonexistent.pt`` after 20–70 s, coref's
``--lr nan`` after loading; and ``--quick`` replacing values the user gave (``--c2 1
0.1 --max-iter 100`` run as one c2 and 30 iterations). Here --data names no folder, so
an option checked after the data are read shows up as the data's error instead; where
the values must reach training, training is replaced by a step that stops the run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import test_paper_data_up_front as data_up_front
from cli_runs import one_line_error

from calib_metrics import cli
from calib_metrics.paper import coref, demo, ner, pos, twitter_pos
from calib_metrics.paper.events import experiment as events_experiment


class Reached(Exception):
    """Raised where training would start, with what it was given."""


def _stop(**recorded):
    def stop(*args, **kwargs):
        raise Reached(recorded | kwargs | {"args": args})

    return stop


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["ner", "--quick", "--n-samples", "1"], "--n-samples must be at least 2, got 1"),
        (["pos", "--quick", "--n-samples", "1"], "--n-samples must be at least 2, got 1"),
        (
            ["twitter-pos", "--quick", "--ewt-train", "0", "--n-samples", "1"],
            "--n-samples must be at least 2, got 1",
        ),
        (["coref", "--quick", "--ci-samples", "0"], "--ci-samples must be at least 2, got 0"),
        (["coref", "--quick", "--ci-samples", "1"], "--ci-samples must be at least 2, got 1"),
        (["sentiment", "--n-samples", "1"], "--n-samples must be at least 2, got 1"),
    ],
)
def test_too_few_interval_draws_are_refused_before_the_data(tmp_path, capsys, argv, named):
    err = one_line_error(capsys, "reproduce", *argv, "--data", tmp_path / "none",
                         "--out", tmp_path / "out")  # fmt: skip
    assert err == f"calib-metrics: error: {named}"


# The library's most interval draws is 10**7 (intervals.MAX_DRAWS); a typo's 10**12 had
# been taken at start and had failed only once the first interval was drawn, after
# training (out of memory, or the library's own refusal).
TOO_MANY = str(10**12)


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["reproduce", "ner", "--quick", "--n-samples", TOO_MANY], "--n-samples"),
        (["reproduce", "pos", "--quick", "--n-samples", TOO_MANY], "--n-samples"),
        (["reproduce", "twitter-pos", "--quick", "--n-samples", TOO_MANY], "--n-samples"),
        (["reproduce", "coref", "--quick", "--ci-samples", TOO_MANY], "--ci-samples"),
        (["reproduce", "sentiment", "--n-samples", TOO_MANY], "--n-samples"),
        (["demo", "--quick", "--samples", TOO_MANY], "--samples"),
    ],
)
def test_too_many_interval_draws_are_refused_before_the_data(
    tmp_path, capsys, monkeypatch, argv, option
):
    # The demo needs no data: taken, its study would start drawing (for hours).
    monkeypatch.setattr(demo, "_settings", _stop())
    data = ["--data", tmp_path / "none"] if argv[0] == "reproduce" else []
    err = one_line_error(capsys, *argv, *data, "--out", tmp_path / "out")
    # In evaluate --samples' words: they had been "an integer in [2, 10000000], got
    # 1000000000000" here, without the thousands' separators.
    refused = f"{option} must be at most 10,000,000, got 1,000,000,000,000 (10,000 put a 95% "
    assert err.startswith(f"calib-metrics: error: {refused}")
    assert err.endswith("interval's ends within about ±0.005 of their level)")
    assert not (tmp_path / "out").exists()


def test_the_most_interval_draws_reach_training(tmp_path, monkeypatch):
    monkeypatch.setattr(twitter_pos, "_train", lambda *a: _stop()(a[-1]))
    data = _tagging_data(tmp_path / "data")
    argv = ["twitter-pos", "--data", data, "--out", tmp_path / "out", "--ewt-train", "0"]
    (args,) = _reached("reproduce", *argv, "--quick", "--n-samples", str(10**7))["args"]
    assert args.n_samples == 10**7


# One past the binning's bound, 2**62.
WIDE_BIN = str(2**62 + 1)
WIDE_BIN_REFUSED = f"--bin-size must be an integer in [1, {2**62}], got {WIDE_BIN}"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["events", "--quick", "--epochs", "-1"], "--epochs must be an integer >= 0, got -1"),
        (["events", "--quick", "--n-bits", "0"], "--n-bits must be an integer in [4, 30], got 0"),
        # Had been the sampler's "n_samples must be in [1, 2147483648)", once the corpus was read.
        (
            ["events", "--quick", "--samples", "3000000000"],
            "--samples must be an integer in [2, 2147483647], got 3000000000",
        ),
        # Had been taken silently: it matched no document, and GUM's placeholder-dated
        # documents were counted in 2000 (a false CHN event).
        (
            ["events", "--quick", "--unknown-dates", "2000-01-01", "1/1/2000"],
            "--unknown-dates: '1/1/2000' is not a date written YYYY-MM-DD (or YYYY-MM, YYYY)",
        ),
        (["events", "--quick", "--unknown-dates", "2000-02-30"], "'2000-02-30' is not a date"),
        (["coref", "--quick", "--n-bits", "31"], "--n-bits must be an integer in [4, 30], got 31"),
        # Had been the sampler's "n_samples must be in [1, 2147483648)", once the ranker was
        # trained and saved.
        (
            ["coref", "--quick", "--samples", "2147483648"],
            "--samples must be an integer in [1, 2147483647], got 2147483648",
        ),
        # Had been the binning's "bin_size must be at most 2**62", after training.
        (["coref", "--quick", "--bin-size", WIDE_BIN], WIDE_BIN_REFUSED),
        (["pos", "--quick", "--bin-size", WIDE_BIN], WIDE_BIN_REFUSED),
        (["sentiment", "--bin-size", WIDE_BIN], WIDE_BIN_REFUSED),
        (["coref", "--quick", "--lr", "-1"], "--lr must be a finite number > 0, got -1.0"),
        (["coref", "--quick", "--lr", "nan"], "--lr must be a finite number > 0, got nan"),
        (["coref", "--quick", "--l2", "nan"], "--l2 values must be finite numbers >= 0, got nan"),
        (["coref", "--quick", "--max-distance", "0"], "--max-distance must be a positive integer"),
        (["coref", "--quick", "--epochs", "-1"], "--epochs must be an integer >= 0, got -1"),
        (["ner", "--quick", "--c2", "nan"], "--c2 values must be finite numbers >= 0, got nan"),
        (["ner", "--quick", "--train-sentences", "0"], "--train-sentences must be a positive"),
        (["twitter-pos", "--quick", "--c2", "inf"], "--c2 values must be finite numbers >= 0"),
        (["twitter-pos", "--quick", "--max-iter", "0"], "--max-iter must be a positive integer"),
        (["pos", "--quick", "--max-iter", "0"], "--max-iter must be a positive integer, got 0"),
        (["pos", "--quick", "--max-tokens", "0"], "--max-tokens must be a positive integer"),
        (["pos", "--quick", "--top-pairs", "5", "0"], "--top-pairs must be a positive integer"),
        (["sentiment", "--alphas", "nan"], "--alphas values must be finite numbers > 0, got nan"),
        (["sentiment", "--split", "0.6", "0.2", "nan"], "--split: the train, dev and test"),
    ],
)
def test_options_are_refused_before_the_data(tmp_path, capsys, argv, named):
    err = one_line_error(capsys, "reproduce", *argv, "--data", tmp_path / "none",
                         "--out", tmp_path / "out")  # fmt: skip
    assert named in err


def test_events_reads_its_model_before_the_data(tmp_path, capsys):
    missing = tmp_path / "none.pt"
    err = one_line_error(capsys, "reproduce", "events", "--quick", "--model", missing,
                         "--data", tmp_path / "none", "--out", tmp_path / "out")  # fmt: skip
    assert err == f"calib-metrics: error: --model {missing}: no such file"
    text = tmp_path / "ranker.pt"
    text.write_text("not a model\n")
    err = one_line_error(capsys, "reproduce", "events", "--quick", "--model", text,
                         "--data", tmp_path / "none", "--out", tmp_path / "out")  # fmt: skip
    assert f"{text} cannot be read as a saved model" in err
    # torch's advice to retry with weights_only=False (running any code the file holds)
    # had been passed on about a file the user merely pointed at.
    assert "weights_only" not in err and "arbitrary code" not in err
    assert not (tmp_path / "out").exists()


def _tagging_data(root: Path) -> Path:
    data_up_front._ark(root / "ark-twitter-pos")
    data_up_front._ewt(root / "ud-english-ewt")
    gum = root / "ud-english-gum"
    # The first word of each sentence is an entity: ner refuses training without one.
    first, *rest = data_up_front._conllu_rows().split("\n")
    sentence = "\n".join([first.rsplit("\t", 1)[0] + "\tEntity=(1-person-new-x)", *rest])
    for split in ("train", "dev", "test"):
        data_up_front._gz(gum / f"en_gum-ud-{split}.conllu.gz", sentence * 3)
    return root


def _reached(*argv) -> dict:
    with pytest.raises(Reached) as stopped:
        cli.main([str(a) for a in argv])
    return stopped.value.args[0]


@pytest.mark.parametrize("command", ["ner", "twitter-pos"])
def test_quick_keeps_the_feature_crf_options_given(tmp_path, monkeypatch, command):
    monkeypatch.setattr(ner.ce, "fit_crf", _stop())  # twitter-pos' module too
    data = _tagging_data(tmp_path / "data")
    common = [command, "--data", data, "--out", tmp_path / "out"]
    common += ["--ewt-train", "0"] if command == "twitter-pos" else []
    given = _reached("reproduce", *common, "--quick", "--c2", "1", "0.1", "--max-iter", "100")
    assert (given["c2_grid"], given["max_iter"]) == ([1.0, 0.1], 100)  # had been [1.0], 30
    defaults = _reached("reproduce", *common, "--quick")
    assert (defaults["c2_grid"], defaults["max_iter"]) == ([0.1], 30)


def test_quick_cuts_twitter_pos_interval_draws(tmp_path, monkeypatch):
    """Its some 700 intervals had drawn 2000 times each under --quick too (a quarter of
    the run)."""
    monkeypatch.setattr(twitter_pos, "_train", lambda *a: _stop()(a[-1]))
    data = _tagging_data(tmp_path / "data")
    common = ["twitter-pos", "--data", data, "--out", tmp_path / "out", "--ewt-train", "0"]
    assert _reached("reproduce", *common, "--quick")["args"][0].n_samples == 200
    (args,) = _reached("reproduce", *common, "--quick", "--n-samples", "2000")["args"]
    assert args.n_samples == 2000
    assert _reached("reproduce", *common)["args"][0].n_samples == 2000


def test_quick_keeps_pos_max_iter(tmp_path, monkeypatch):
    def stop(self, *args, **kwargs):
        raise Reached(kwargs)

    monkeypatch.setattr(pos.CRFTagger, "fit", stop)
    data = _tagging_data(tmp_path / "data")
    common = ["pos", "--data", data, "--out", tmp_path / "out", "--quick"]
    assert _reached("reproduce", *common, "--max-iter", "60")["max_iter"] == 60  # had been 15
    assert _reached("reproduce", *common)["max_iter"] == 15


def test_quick_keeps_coref_epochs_and_grid(tmp_path, monkeypatch):
    monkeypatch.setattr(coref, "_select_l2", lambda splits, feats, args, gen: _stop()(args))
    data = tmp_path / "data"
    data_up_front._ontogum(data / "gum-ontogum-coref", empty="")
    common = ["coref", "--data", data, "--out", tmp_path / "out", "--quick", "--no-litbank"]
    argv = [*common, "--epochs", "8", "--l2", "1e-5", "1e-4", "1e-3"]
    (args,) = _reached("reproduce", *argv)["args"]
    assert (args.epochs, args.l2) == (8, [1e-5, 1e-4, 1e-3])  # had been 3, [1e-5, 1e-4]
    (args,) = _reached("reproduce", *common)["args"]
    assert (args.epochs, args.l2) == (3, [1e-5, 1e-4])


def test_quick_keeps_events_samples_and_epochs(tmp_path, monkeypatch):
    monkeypatch.setattr(events_experiment, "_load", lambda args: _stop()(args))
    common = ["events", "--data", tmp_path, "--out", tmp_path / "out", "--quick"]
    (args,) = _reached("reproduce", *common, "--samples", "100", "--epochs", "3")["args"]
    assert (args.samples, args.epochs) == (100, 3)  # had been 20, 1
    (args,) = _reached("reproduce", *common)["args"]
    assert (args.samples, args.epochs) == (20, 1)


@pytest.mark.parametrize("module", [ner, pos, twitter_pos, coref, events_experiment])
def test_quick_says_that_given_options_win(module):
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    quick = next(a for a in parser._actions if "--quick" in a.option_strings)
    assert "options given explicitly win" in quick.help


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "pos", "--bogus"],
        ["reproduce", "sentiment", "--bogus"],
        ["demo", "--bogus"],
        ["evaluate", "preds.csv", "--bogus"],
    ],
)
def test_an_unknown_option_points_to_its_own_commands_help(capsys, argv):
    """It had pointed to ``calib-metrics --help``, which lists no experiment's options."""
    command = " ".join(["calib-metrics", *(a for a in argv[:-1] if not a.endswith(".csv"))])
    err = one_line_error(capsys, *argv)
    assert err == f"calib-metrics: error: unrecognized arguments: --bogus (usage: {command} --help)"


@pytest.mark.parametrize(
    "argv, command",
    [
        (["--bogus", "evaluate", "preds.csv"], "calib-metrics"),
        (["reproduce", "--bogus", "pos"], "calib-metrics reproduce"),
    ],
)
def test_an_unknown_option_is_refused_where_it_was_typed(capsys, argv, command):
    """Typed before a subcommand, it had been blamed on the innermost one."""
    err = one_line_error(capsys, *argv)
    assert err == f"calib-metrics: error: unrecognized arguments: --bogus (usage: {command} --help)"


@pytest.mark.parametrize("training", [["--n-bits", "10"], ["--epochs", "0"]])
def test_events_refuses_training_options_beside_a_saved_ranker(tmp_path, capsys, training):
    """They had been dropped silently: a run "with 10 bits" was the saved ranker's."""
    paths = ["--data", tmp_path / "none", "--out", tmp_path / "out"]
    model = ["--model", tmp_path / "ranker.pt"]
    err = one_line_error(capsys, "reproduce", "events", *model, *training, *paths)
    assert f"{training[0]} train a ranker, and --model uses a saved one" in err
    assert not (tmp_path / "out").exists()
