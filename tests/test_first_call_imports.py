"""The first call of the estimators in a process imports nothing heavy. ``weighted_mean``
and ``tie_runs`` had called ``torch.broadcast_shapes``, which on torch 2.13 goes through
``torch._refs`` and imports sympy and torch.fx's symbolic shapes (about 480 modules,
0.3-0.5 s): every one-shot user and every command-line run paid it."""

from __future__ import annotations

import json
import subprocess
import sys

FIRST_CALLS = """
import json, sys, torch
from calib_metrics.functional import (
    calibration_error, calibration_error_ci, compare_calibration, ci_from_bins, Bins,
)
g = torch.Generator().manual_seed(0)
q = torch.rand(5000, generator=g)
y = torch.bernoulli(q, generator=g)
calibration_error(q, y)
calibration_error_ci(q, y, n_samples=20)
calibration_error_ci(q, y, n_samples=20, groups=torch.arange(5000) // 5, interval="groups")
compare_calibration(q, q.sqrt(), y, n_samples=20)
t = torch.tensor
ci_from_bins(Bins(t([0.1, 0.1, 0.7]), t([0.2, 0.2, 0.6]), t([50.0, 50.0, 80.0])), n_samples=20)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "sympy")))
"""


def test_the_default_estimators_do_not_import_sympy() -> None:
    run = subprocess.run(
        [sys.executable, "-c", FIRST_CALLS], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1]) == []
