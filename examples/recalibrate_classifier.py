"""Recalibrate an overconfident classifier: writes dev/test CSVs, runs `calib-metrics recalibrate`.

    python examples/recalibrate_classifier.py [--out DIR] [--method platt]

A synthetic binary classifier whose scores s ~ N(0, 1) give y ~ Bernoulli(sigmoid(s)) but
which reports q = sigmoid(3 s) (3x overconfident); 3,000 dev and 5,000 test items. The
recalibrator is fitted on dev and judged on test, with the paired interval of
``before - after``. The README's and docs/recalibration.md's recalibration output comes
from this script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from calib_metrics.cli import main as calib_metrics


def write_overconfident(path: Path, n: int, seed: int) -> Path:
    """``n`` items of the 3x overconfident classifier as a ``prob,label`` CSV."""
    g = torch.Generator().manual_seed(seed)
    score = torch.randn(n, generator=g, dtype=torch.float64)
    label = torch.bernoulli(torch.sigmoid(score), generator=g).long()
    prob = torch.sigmoid(3 * score)
    rows = (f"{q!r},{y}\n" for q, y in zip(prob.tolist(), label.tolist()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("prob,label\n" + "".join(rows))
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/recalibrate"))
    parser.add_argument("--method", default="platt")
    args = parser.parse_args()
    dev = write_overconfident(args.out / "dev.csv", 3000, seed=0)
    test = write_overconfident(args.out / "test.csv", 5000, seed=1)
    recalibrated = args.out / "test.recalibrated.csv"
    command = ["recalibrate", str(dev), str(test), "--method", args.method]
    sys.exit(calib_metrics([*command, "--out", str(recalibrated)]))
