"""What ``reproduce`` tells its user: --help with every default and where the data are
looked for, and a malformed entity named by its file and line.

A probe of 2026-11-30 found ``--data``'s help naming only shared/data (not
``$CALIB_METRICS_DATA``, which comes first) and ner's malformed Entity error without its
file and line.
"""

from __future__ import annotations

import cli_runs
import pytest

from calib_metrics.paper import EXPERIMENTS
from calib_metrics.paper.gum_entities import read_gum_entities


def _help(capsys, *argv) -> str:
    """The command's --help, its lines joined (argparse wraps them at the terminal width)."""
    code, out, _ = cli_runs.run_cli(capsys, *argv, "--help")
    assert code == 0
    return " ".join(out.split())


@pytest.mark.parametrize("experiment", sorted(EXPERIMENTS))
def test_data_help_says_where_the_data_are_looked_for(capsys, experiment):
    text = _help(capsys, "reproduce", experiment)
    assert "(default: $CALIB_METRICS_DATA when set, else shared/data beside a source " in text
    assert "(default: None)" not in text


def test_reproduce_help_shows_each_default(capsys):
    text = _help(capsys, "reproduce", "ner")
    assert "--out OUT output folder (default: out/ner)" in text
    assert "--n-samples N_SAMPLES interval draws (default: 2000)" in text
    assert "--max-iter MAX_ITER L-BFGS iterations (default: 100; --quick: 30)" in text
    assert "--c2 C2 [C2 ...] L2 grid (dev) (default: 0.1)" in text


def test_a_malformed_gum_entity_names_its_file_and_line(tmp_path):
    cells = "\t_\t_\t_\t_\t0\tdep\t_\t"
    rows = ["# newdoc id = d1", f"1\tKim{cells}Entity=(1-person-new)", "", f"1\tLee{cells}_",
            f"2\tran{cells}Entity=(person"]  # fmt: skip
    path = tmp_path / "en_gum-ud-train.conllu"
    path.write_text("\n".join(rows) + "\n\n")
    with pytest.raises(ValueError, match=rf"^{path}:5: malformed Entity value '\(person'"):
        read_gum_entities(path)
