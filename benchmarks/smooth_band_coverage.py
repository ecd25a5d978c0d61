"""Pointwise coverage of the smooth reliability curve's band (``smooth_reliability_curve``).

For each kind of data (q uniform on [0, 1]; calibrated p = q, overconfident p = q², and
shifted p = min(q + 0.1, 1)) it draws ``--reps`` data sets of ``--n`` pairs and checks,
at each of ``--points`` points t, whether the band holds the truth the curve estimates:
the label frequency smoothed at the data set's own bandwidth σ by the reflected kernel,
∫ K_σ(t, x) p(x) dx / ∫ K_σ(t, x) dx (numerical integration; the kernel mirrored at 0
and 1). Two bands from the same kind of draws are scored side by side:

* ``score``: the library's band (Wilson's score interval at the bootstrap's effective
  size, Korn & Graubard);
* ``quantile``: the (1 ± confidence)/2 quantiles of the draws themselves, the band the
  library drew until 2026-12-01, which the draws of a frequency 0 (near t = 0 on a
  calibrated model) pull onto the curve.

``--groups`` resamples groups of 10 consecutive pairs (independent labels: it checks the
group machinery, not a design effect). Run ``python benchmarks/smooth_band_coverage.py``;
the ``smooth_reliability_curve`` docstring and docs/measures.md quote its output.

``--two-class`` makes each data set N items of two classes, ``[1 − q, q]`` beside class
ids (class 1 with probability p(q)), whose curve pools the one-vs-rest pairs: a pair
(q, y) and its mirror (1 − q, 1 − y), one observation, which the band resamples one by
one. The truth is the pooled frequency (p(x) + 1 − p(1 − x)) / 2, smoothed. A third band,
``items``, is the score band with ``groups=torch.arange(N)``: an item's two pairs drawn
together. A miscalibration that is not symmetric in the classes cancels in the pooled
pairs (overconfident q² and shifted q + 0.1 pool to the diagonal), so the symmetric
``tempered`` kind, p = σ(logit(q) / 1.5), is the one to run with it:
``python benchmarks/smooth_band_coverage.py --two-class --kinds calibrated tempered``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, count
from calib_metrics.functional import smooth as smooth_module
from calib_metrics.functional.smooth import smooth_reliability_curve

KINDS = {
    "calibrated": lambda q: q,
    "overconfident": lambda q: q**2,
    "shifted": lambda q: np.minimum(q + 0.1, 1.0),
    "tempered": lambda q: 1 / (1 + (1 / np.clip(q, 1e-300, 1) - 1) ** (1 / 1.5)),
}
DEFAULT_KINDS = ["calibrated", "overconfident", "shifted"]
BANDS = ("score", "quantile")
_X = np.linspace(0.0, 1.0, 20001)


def smoothed_truth(t: np.ndarray, sigma: float, p) -> np.ndarray:
    """∫ K_σ(t, x) p(x) dx / ∫ K_σ(t, x) dx for the kernel mirrored at 0 and 1 (images
    to ±4, far past any σ the curve takes)."""
    weight = np.zeros((t.size, _X.size))
    for k in range(-2, 3):
        for image in (_X + 2 * k, -_X + 2 * k):
            weight += np.exp(-((t[:, None] - image[None, :]) ** 2) / (2 * sigma**2))
    return (weight * p(_X)).sum(1) / weight.sum(1)


def quantile_band(q, y, groups, curve, n_samples, confidence, generator):
    """The draws' own (1 ± confidence)/2 quantiles at the curve's σ and points."""
    sigma, t = curve.bandwidth.item(), curve.grid
    ones = torch.ones_like(q)
    index, cells = smooth_module._cell_sums(q, ones, y, smooth_module._grid_points(sigma))
    band = smooth_module._Band("quantile_band", n_samples, confidence, generator, groups)
    draws = smooth_module._bootstrap_curves(q, y, index, cells, sigma, t, band)
    tail = (1 - confidence) / 2
    levels = torch.tensor([tail, 1 - tail], dtype=torch.float64)
    lower, upper = torch.nanquantile(draws, levels, dim=0)
    return torch.minimum(lower, curve.curve), torch.maximum(upper, curve.curve)


def two_class_bands(q, y, groups, args, generator) -> tuple:
    """The curve of ``[1 − q, q]`` beside class ids ``y`` and its three bands
    (``--two-class``), each drawn with ``groups`` (of items) where given."""
    probs, classes = torch.stack([1 - q, q], -1), y.long()
    options = {"n_samples": args.samples, "points": args.points, "generator": generator}
    curve = smooth_reliability_curve(probs, classes, groups=groups, **options)
    flat_q, flat_y = probs.reshape(-1), torch.stack([1 - y, y], -1).reshape(-1)
    flat_groups = None if groups is None else groups.repeat_interleave(2)
    items = smooth_reliability_curve(probs, classes, groups=torch.arange(q.numel()), **options)
    bands = {
        "score": (curve.lower, curve.upper),
        "quantile": quantile_band(
            flat_q, flat_y, flat_groups, curve, args.samples, 0.95, generator
        ),
        "items": (items.lower, items.upper),
    }
    return curve, bands


def run(kind: str, args: argparse.Namespace) -> dict[str, np.ndarray]:
    p = KINDS[kind]
    truth_of = (lambda x: (p(x) + 1 - p(1 - x)) / 2) if args.two_class else p
    rng = np.random.default_rng(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    names = BANDS + ("items",) * args.two_class
    hits: dict[str, list[np.ndarray]] = {name: [] for name in names}
    widths: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for _ in range(args.reps):
        q = torch.tensor(rng.uniform(0, 1, args.n))
        y = torch.tensor((rng.uniform(size=args.n) < p(q.numpy())).astype(float))
        groups = torch.arange(args.n) // 10 if args.groups else None
        if args.two_class:
            curve, bands = two_class_bands(q, y, groups, args, generator)
        else:
            curve = smooth_reliability_curve(
                q, y, n_samples=args.samples, points=args.points, groups=groups,
                generator=generator,
            )  # fmt: skip
            bands = {
                "score": (curve.lower, curve.upper),
                "quantile": quantile_band(q, y, groups, curve, args.samples, 0.95, generator),
            }
        truth = smoothed_truth(curve.grid.numpy(), curve.bandwidth.item(), truth_of)
        for name, (lower, upper) in bands.items():
            lo, up = lower.numpy(), upper.numpy()
            hits[name].append((lo <= truth + 1e-12) & (truth - 1e-12 <= up))
            widths[name].append(up - lo)
    return {
        **{f"{n}_hits": np.array(h) for n, h in hits.items()},
        **{f"{n}_width": np.array(w) for n, w in widths.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=2000, help="pairs per data set")
    parser.add_argument("--reps", type=count, default=100, help="data sets per kind")
    parser.add_argument("--samples", type=at_least_two, default=200, help="bootstrap draws")
    parser.add_argument("--points", type=at_least_two, default=21, help="points t on [0, 1]")
    parser.add_argument("--kinds", nargs="+", default=DEFAULT_KINDS, choices=list(KINDS))
    parser.add_argument("--groups", action="store_true", help="resample groups of 10")
    parser.add_argument(
        "--two-class", action="store_true", help="items of two classes, read one-vs-rest"
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    grouped = ", groups of 10" if args.groups else ""
    counted = "items of two classes (2N one-vs-rest pairs)" if args.two_class else "pairs"
    print(
        f"N = {args.n} {counted}, {args.reps} data sets, {args.samples} draws, 95% bands, "
        f"{args.points} points{grouped}"
    )
    print("| data | band | t = 0 | t = 1 | inside (mean) | all (mean) | mean width |")
    print("|---|---|---|---|---|---|---|")
    for kind in args.kinds:
        start = time.perf_counter()
        found = run(kind, args)
        for band in BANDS + ("items",) * args.two_class:
            hits, width = found[f"{band}_hits"], found[f"{band}_width"]
            print(
                f"| {kind} | {band} | {hits[:, 0].mean():.2f} | {hits[:, -1].mean():.2f} | "
                f"{hits[:, 1:-1].mean():.3f} | {hits.mean():.3f} | {np.nanmean(width):.3f} |"
            )
        print(f"<!-- {kind}: {time.perf_counter() - start:.0f} s -->", file=sys.stderr)


if __name__ == "__main__":
    main()
