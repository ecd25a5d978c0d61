"""Every argument of every ``calib-metrics`` subcommand has a help text in ``--help``, and
every option with a default (not None, not a flag's) ends it with ``(default: X)``, X as
the user would type it.

A probe of 2026-12-02 found ``evaluate --help`` with a bare ``--binning``, ``--norm`` and
``--seed`` (no text, no default: adaptive, l2, 0) and ``compare --help`` with a bare
``--seed``, while ``recalibrate --help`` said its ``--seed``'s default as "(0)" and
``demo``'s as "(default: 0)".
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from calib_metrics.cli import build_parser
from calib_metrics.paper import options


def _arguments(
    parser: argparse.ArgumentParser, command: str
) -> Iterator[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    """Each argument of ``parser`` and of its subcommands', with the command it belongs to."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if sub.add_help:  # demo/reproduce listed only (build_parser(paper=False))
                    yield from _arguments(sub, f"{command} {name}")
            continue
        yield command, parser, action


def _help_line(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The text ``--help`` prints beside the argument, as one line."""
    if not action.help:
        return ""
    return " ".join(parser._get_formatter()._expand_help(action).split())


def _name(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def test_every_argument_of_every_subcommand_has_help():
    bare = [
        f"{command} {_name(action)}"
        for command, parser, action in _arguments(build_parser(), "calib-metrics")
        if not _help_line(parser, action)
    ]
    assert not bare, bare


def test_every_default_is_shown_as_the_others_are():
    unsaid = []
    for command, parser, action in _arguments(build_parser(), "calib-metrics"):
        default = action.default
        if default is None or default is argparse.SUPPRESS or isinstance(default, bool):
            continue
        text = _help_line(parser, action)
        if f"(default: {options._shown(default)}" not in text:
            unsaid.append(f"{command} {_name(action)} ({default!r}): {text!r}")
    assert not unsaid, unsaid


def _listings(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """The line of each subcommand in its parent's ``--help``, at every level."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action._choices_actions
            for sub in action.choices.values():
                yield from _listings(sub)


def test_every_subcommand_is_listed_with_a_line():
    listed = {choice.dest: choice.help for choice in _listings(build_parser())}
    assert {"evaluate", "compare", "recalibrate", "demo", "reproduce", "pos"} <= set(listed)
    assert all(listed.values()), listed
