"""evaluate's first line counts the uniform bins read and says how many of --n-bins were
empty: "11 uniform bins" after --n-bins 15 had read as a miscount."""

from __future__ import annotations

import json

import numpy as np
from cli_runs import run_cli


def test_empty_uniform_bins_are_said_to_be_dropped(tmp_path, capsys) -> None:
    q = np.linspace(0.0, 0.49, 400)  # nothing above 1/2: bins 8 to 15 of 15 are empty
    path = tmp_path / "p.csv"
    np.savetxt(path, np.c_[q, q > 0.25], delimiter=",", header="prob,label", comments="")
    argv = ["evaluate", path, "--binning", "uniform", "--n-bins", "15", "--samples", "50"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    assert ", 8 uniform bins (of --n-bins 15; 7 empty, dropped)" in out.splitlines()[0]
    code, out, _ = run_cli(capsys, *argv, "--json")
    assert code == 0 and json.loads(out)["bins"] == 8
    # With none empty there is nothing to say.
    code, out, _ = run_cli(capsys, "evaluate", path, "--binning", "uniform", "--n-bins", "2")
    assert code == 0 and out.splitlines()[0].endswith(
        ", 1 uniform bin (of --n-bins 2; 1 empty, dropped)"
    )
    code, out, _ = run_cli(capsys, "evaluate", path, "--binning", "uniform", "--n-bins", "1")
    assert code == 0 and out.splitlines()[0].endswith(", 1 uniform bin")


def test_classwise_counts_each_classes_bins(tmp_path, capsys) -> None:
    """Classwise, every class is binned apart into its own --n-bins: the note had been
    missing there, where most class × bin slots can be empty."""
    from cli_runs import two_multiclass_models

    _, (path, _) = two_multiclass_models(tmp_path, 300)
    argv = ["evaluate", path, "--mode", "classwise", "--binning", "uniform", "--n-bins", "900"]
    code, out, _ = run_cli(capsys, *argv, "--samples", "20", "--json")
    assert code == 0
    shown = json.loads(out)["bins"]
    assert shown < 2700
    code, out, _ = run_cli(capsys, *argv, "--samples", "20")
    note = f"{shown} uniform bins (of --n-bins 900 per class, 2700 in all; {2700 - shown} empty"
    assert note in out.splitlines()[0]
