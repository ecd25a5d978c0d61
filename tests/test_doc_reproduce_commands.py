"""The ``calib-metrics reproduce`` commands that README.md and docs/*.md show: two commands
of one block that write one ``--out`` folder run one setting (the later one may only add
to it: ``--recalibrate``, ``--save-models``), else the second overwrites the first's
results, as docs/sentiment.md's ``--no-balance --bin-size 200`` run had overwritten
``out/sentiment``; and docs/sentiment.md says what the fallback's output says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from test_sentiment import _args as _sentiment_args
from test_sentiment import _write_polarity

from calib_metrics.cli import build_parser
from calib_metrics.paper import sentiment

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.DOTALL | re.MULTILINE)
# What a later command may add to an earlier one's run in the same folder: it reruns the
# same setting and writes more (or reads the data from elsewhere).
ADDITIONS = {"data", "recalibrate", "save_models"}


def _commands(block: str) -> list[list[str]]:
    """The block's ``calib-metrics reproduce`` commands, as argument lists (no comments,
    continuation lines joined; a command with a ``...`` placeholder is left out)."""
    lines = block.replace("\\\n", " ").splitlines()
    words = [shlex.split(line, comments=True) for line in lines]
    return [w[2:] for w in words if w[:2] == ["calib-metrics", "reproduce"] and "..." not in w]


def _blocks() -> list[tuple[str, list[list[str]]]]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = []
    for path in files:
        for i, block in enumerate(BLOCK.findall(path.read_text(encoding="utf-8")), 1):
            commands = _commands(block)
            if len(commands) > 1:
                found.append((f"{path.relative_to(ROOT)}#{i}", commands))
    return found


def test_some_blocks_show_several_reproduce_commands() -> None:
    assert len(_blocks()) >= 3  # the test below would pass on none


@pytest.mark.parametrize(("where", "commands"), _blocks(), ids=[w for w, _ in _blocks()])
def test_commands_writing_one_folder_run_one_setting(where: str, commands: list) -> None:
    parser = build_parser()
    first_in: dict[tuple, dict] = {}
    for argv in commands:
        args = vars(parser.parse_args(["reproduce", *argv]))
        assert "unavailable" not in args, (where, argv)
        key = (args["experiment"], Path(args["out"]))
        setting = {k: v for k, v in args.items() if k not in ADDITIONS}
        earlier = first_in.setdefault(key, setting)
        changed = sorted(k for k in setting if setting[k] != earlier[k])
        assert not changed, f"{where}: {shlex.join(argv)} overwrites {key[1]} with {changed}"


def _fallback_section() -> str:
    text = (ROOT / "docs" / "sentiment.md").read_text(encoding="utf-8")
    return " ".join(text.split("### Fallback")[1].split("\n## ")[0].split())


@pytest.mark.filterwarnings("ignore::UserWarning")  # a handful of sentences: few bins
@pytest.mark.parametrize("chosen", [False, True])
def test_the_docs_say_what_the_polarity_runs_output_says(tmp_path, capsys, chosen) -> None:
    _write_polarity(tmp_path / sentiment.POLARITY, n=150)
    argv = ["--data", str(tmp_path), "--out", str(tmp_path / "out"), "--n-samples", "50"]
    argv += ["--cs", "1", "--alphas", "1", "--no-balance"]
    argv += ["--dataset", sentiment.POLARITY] if chosen else []
    results = sentiment.run(_sentiment_args(*argv))
    note = results["note"].split(" (")[0]  # what the snippets are follows
    assert note in capsys.readouterr().out and results["fallback"] is not chosen
    section = _fallback_section()
    if chosen:  # the docs had said FALLBACK for --dataset nltk-sentence-polarity too
        assert "FALLBACK" not in note and f'"{note}"' in section
        assert '`--dataset nltk-sentence-polarity` (the note then reads "' in section
    else:
        assert note.startswith("FALLBACK:") and "start `FALLBACK:`" in section
