"""An HTML calibration report of two models with per-label results (docs/report.md).

    python examples/html_report.py [--out DIR]

Writes DIR/tagged.csv — 6,000 synthetic items in three labels ("NOUN", "VERB", "ADJ"),
q ~ Beta(0.5, 0.5), y ~ Bernoulli(q) — where model b is calibrated and model a is
overconfident on NOUN and VERB and underconfident on ADJ; then runs

    calib-metrics compare DIR/tagged.csv --probs prob_a --probs-b prob_b --label tag \
        --html DIR/compare.html
    calib-metrics evaluate DIR/tagged.csv --probs prob_a --label tag --html DIR/evaluate.html

With ``--screenshot PNG`` it also photographs the top of DIR/compare.html in headless
Chromium; docs/img/report.png is made so:

    python examples/html_report.py --screenshot docs/img/report.png
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from calib_metrics.cli import main as calib_metrics

# label: how model a distorts q (> 1: overconfident, < 1: underconfident; see _distort)
LABELS = {"NOUN": 2.0, "VERB": 1.5, "ADJ": 0.6}


def _distort(q: torch.Tensor, power: torch.Tensor) -> torch.Tensor:
    """Push q away from 1/2 (power > 1: overconfident) or towards it (power < 1)."""
    centred = 2 * q - 1
    return (1 + centred.sign() * centred.abs() ** (1 / power)) / 2


def write_predictions(path: Path, n: int = 6000, seed: int = 0) -> Path:
    """The synthetic file: prob_a, prob_b, label (0/1) and tag columns."""
    g = torch.Generator().manual_seed(seed)
    beta = torch.distributions.Beta(torch.tensor(0.5), torch.tensor(0.5))
    torch.manual_seed(seed)  # Beta sampling takes no generator
    q = beta.sample((n,)).double().clamp(1e-4, 1 - 1e-4)
    y = torch.bernoulli(q, generator=g).long()
    tags = list(LABELS)
    tag = torch.randint(len(tags), (n,), generator=g)
    power = torch.tensor(list(LABELS.values()), dtype=torch.float64)[tag]
    a = _distort(q, power)
    rows = (
        f"{pa:.6f},{pb:.6f},{t},{tags[k]}\n"
        for pa, pb, t, k in zip(a.tolist(), q.tolist(), y.tolist(), tag.tolist())
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("prob_a,prob_b,label,tag\n" + "".join(rows))
    return path


def screenshot(page: Path, png: Path, size: tuple[int, int] = (1200, 1900)) -> None:
    """The top ``size`` pixels of ``page`` as rendered by headless Chromium, into ``png``."""
    browser = next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "chrome"))), None
    )
    if browser is None:
        raise SystemExit("--screenshot needs chromium (Debian: apt-get install -y chromium)")
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    window = f"--window-size={size[0]},{size[1]}"
    command = [browser, *flags, window, f"--screenshot={png.resolve()}", page.resolve().as_uri()]
    subprocess.run(command, check=True, capture_output=True, timeout=300)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/report"))
    parser.add_argument("--screenshot", type=Path, help="PNG of the top of compare.html")
    args = parser.parse_args()
    csv = str(write_predictions(args.out / "tagged.csv"))
    compare = ["compare", csv, "--probs", "prob_a", "--probs-b", "prob_b", "--label", "tag"]
    code = calib_metrics([*compare, "--html", str(args.out / "compare.html")])
    evaluate = ["evaluate", csv, "--probs", "prob_a", "--label", "tag"]
    code = code or calib_metrics([*evaluate, "--html", str(args.out / "evaluate.html")])
    if code == 0 and args.screenshot:
        screenshot(args.out / "compare.html", args.screenshot)
    sys.exit(code)
