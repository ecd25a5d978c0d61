"""Every option of ``demo`` and of each ``reproduce`` experiment that has a default (not
None, not a flag's) shows it in ``--help``, as the user would type it.

A probe of 2026-12-01 found ``reproduce events --help`` without the defaults of
``--period`` (year), ``--confidence`` (0.95) and ``--seed`` (0), options without a help
text, whose defaults argparse never shows, and ``--unknown-dates`` showing Python's
``['2000-01-01']``.
"""

from __future__ import annotations

import argparse
import importlib

import pytest

from calib_metrics.cli import main
from calib_metrics.paper import EXPERIMENTS, options


def _module(name: str):
    if name == "demo":
        return importlib.import_module("calib_metrics.paper.demo")
    try:
        return importlib.import_module(EXPERIMENTS[name])
    except ImportError as err:  # an extra not installed: the CLI lists it as unavailable
        pytest.skip(f"{name}: {err}")


@pytest.mark.parametrize("name", ["demo", *EXPERIMENTS])
def test_every_option_with_a_default_shows_it_in_help(name):
    parser = argparse.ArgumentParser(formatter_class=options.DefaultsHelpFormatter)
    _module(name).add_arguments(parser)
    formatter = parser._get_formatter()
    missing = []
    for action in parser._actions:
        default = action.default
        if (
            not action.option_strings
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
        ):
            continue
        shown = options._shown(default)
        # What --help prints for the option: no help text, no default shown.
        text = " ".join(formatter._expand_help(action).split()) if action.help else ""
        if shown not in text or ("[" in text and str(default) in text):
            missing.append(f"{action.option_strings[0]} ({shown}): {text!r}")
    assert not missing, missing


def test_events_help_shows_its_defaults_as_typed(capsys):
    pytest.importorskip("calib_metrics.paper.events.experiment")
    with pytest.raises(SystemExit):
        main(["reproduce", "events", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: year)" in text and "(default: 0.95)" in text
    assert "(default: 2000-01-01," in text and "['2000-01-01']" not in text
