"""Compare two models' calibration on the same items: writes a CSV, runs `calib-metrics compare`.

    python examples/compare_two_models.py [--out DIR]

5,000 synthetic items, q ~ U(0, 1) and y ~ Bernoulli(q): model b is calibrated, model a
is made overconfident (q -> sqrt(q) above 1/2, q^2 below). The README's comparison output
comes from this script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from calib_metrics.cli import main as calib_metrics


def write_predictions(path: Path, n: int = 5000, seed: int = 0) -> Path:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    overconfident = torch.where(q > 0.5, q.sqrt(), q**2)
    rows = (
        f"{a:.6f},{b:.6f},{t}\n" for a, b, t in zip(overconfident.tolist(), q.tolist(), y.tolist())
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("prob_a,prob_b,label\n" + "".join(rows))
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/compare"))
    args = parser.parse_args()
    csv = write_predictions(args.out / "two_models.csv")
    sys.exit(calib_metrics(["compare", str(csv), "--probs", "prob_a", "--probs-b", "prob_b"]))
