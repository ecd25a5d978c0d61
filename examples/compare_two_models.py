"""Compare two models' calibration on the same items: writes a CSV, runs `calib-metrics compare`.

    python examples/compare_two_models.py [--out DIR]

5,000 synthetic items, q ~ U(0, 1) and y ~ Bernoulli(q): model b is calibrated, model a
is made overconfident (q -> sqrt(q) above 1/2, q^2 below). Then, label by label
(``--labels``), 2,000 items of each of three tags: a is overconfident on NOUN, a little on
VERB (q -> q^0.9 above 1/2, q^1.1 below) and calibrated on DET. The README's comparison
outputs come from this script.
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


def write_tagged(path: Path, n: int = 2000, seed: int = 1) -> Path:
    g = torch.Generator().manual_seed(seed)
    rows = []
    for tag, power in (("DET", 1.0), ("NOUN", 0.5), ("VERB", 0.9)):
        q = torch.rand(n, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g).long()
        a = torch.where(q > 0.5, q**power, q ** (1 / power))
        rows += [
            f"{x:.6f},{b:.6f},{t},{tag}\n" for x, b, t in zip(a.tolist(), q.tolist(), y.tolist())
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("prob_a,prob_b,label,tag\n" + "".join(rows))
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/compare"))
    args = parser.parse_args()
    csv = write_predictions(args.out / "two_models.csv")
    columns = ["--probs", "prob_a", "--probs-b", "prob_b"]
    status = calib_metrics(["compare", str(csv), *columns])
    print()
    tagged = write_tagged(args.out / "tagged.csv")
    sys.exit(status or calib_metrics(["compare", str(tagged), *columns, "--label", "tag"]))
