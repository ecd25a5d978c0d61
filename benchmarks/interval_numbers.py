"""Numbers of a fixed set of seeded interval calls, to show a refactoring changes none.

Every estimator and interval path of the library is called on fixed synthetic data with
seeded generators: Algorithm 2 (``interval="paper"``), the pair and group bootstraps,
every norm, debias on and off, normal and percentile forms, uniform binning, the three
multiclass modes, bins given directly, the streaming metric, ``compare_calibration``,
the smooth curve's bootstrap band and the normal quantile. Only public names are used,
and nothing of this checkout but the script itself (not even benchmarks/_args.py), so it
runs unchanged on any revision: here with ``INTERVAL_NUMBERS_ROOT``, or copied alone into
another checkout.

Run ``python benchmarks/interval_numbers.py --write FILE`` on one revision and
``python benchmarks/interval_numbers.py --compare FILE`` on another: the comparison
prints the largest absolute and relative difference over all numbers and the calls
that differ (exit status 1 if any differs by more than ``--tolerance``, 0 by default).
``INTERVAL_NUMBERS_ROOT=DIR`` imports ``calib_metrics`` from DIR instead of this checkout,
e.g. from ``git archive REV calib_metrics | tar -x -C DIR``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(
    0, os.environ.get("INTERVAL_NUMBERS_ROOT", str(Path(__file__).resolve().parents[1]))
)

from calib_metrics import CalibrationError
from calib_metrics.functional import (
    brier_decomposition,
    calibration_error,
    calibration_error_ci,
    ci_from_bins,
    compare_calibration,
    group_bootstrap,
    pair_bootstrap,
    smooth_reliability_curve,
)
from calib_metrics.functional.calibration import compute_bins
from calib_metrics.functional.intervals import bin_index


def _tolerance(text: str) -> float:
    """A finite number of at least 0, worded as benchmarks/_args.py's ``non_negative``
    (NaN had passed every comparison, a negative tolerance failed identical numbers);
    its own, so that the script needs nothing beside it on another revision."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a number of at least 0, not {text!r}")
    return value


def _data(n: int = 20_000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Miscalibrated binary pairs with correlated groups of 20, and their group ids."""
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    groups = torch.arange(n) // 20
    shift = (torch.rand(n // 20, generator=g, dtype=torch.float64) - 0.5) * 0.2
    p = (q**1.3 + shift.repeat_interleave(20)).clamp(0, 1)
    return q, torch.bernoulli(p, generator=g), groups


def _multiclass(n: int = 3000, classes: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(n, classes, generator=g, dtype=torch.float64) * 2
    probs = logits.softmax(-1)
    target = torch.multinomial(probs.sqrt() / probs.sqrt().sum(-1, keepdim=True), 1, generator=g)
    return probs, target.squeeze(1)


def _gen(seed: int = 7) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _flat(value) -> list[float]:
    """Every tensor inside ``value`` (tuples, bins) as one flat list of floats."""
    if isinstance(value, torch.Tensor):
        return value.detach().double().reshape(-1).tolist()
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [float(value)]


def calls() -> dict[str, Callable[[], object]]:
    """Name -> a zero-argument call whose tensors are recorded."""
    q, y, groups = _data()
    probs, labels = _multiclass()
    out: dict[str, Callable[[], object]] = {}
    for norm in ("l2", "l1", "max"):
        for debias in (False, True):
            for binning in ("adaptive", "uniform"):
                opts = {"norm": norm, "debias": debias, "binning": binning, "bin_size": 500}
                name = f"error/{norm}/{debias}/{binning}"
                out[name] = lambda o=opts: calibration_error(q, y, **o)
    for interval in ("paper", "pairs", "groups"):
        for method in ("normal", "percentile"):
            for debias in (False, True):
                for norm in ("l2", "l1", "max"):
                    if debias and norm != "l2":
                        continue
                    opts = {"interval": interval, "method": method, "debias": debias, "norm": norm}
                    opts |= {"groups": groups if interval == "groups" else None}
                    opts |= {"bin_size": 400, "n_samples": 700, "confidence": 0.9}
                    name = f"ci/{interval}/{method}/{debias}/{norm}"
                    out[name] = lambda o=opts: calibration_error_ci(q, y, generator=_gen(), **o)
    for interval in ("paper", "pairs", "groups"):
        opts = {"interval": interval, "binning": "uniform", "n_bins": 15, "n_samples": 500}
        opts |= {"groups": groups if interval == "groups" else None}
        out[f"ci_uniform/{interval}"] = lambda o=opts: calibration_error_ci(
            q, y, generator=_gen(), **o
        )
    # Many bins: the draws of Algorithm 2 and of the pair bootstrap come in several blocks.
    many = {"bin_size": 20, "n_samples": 5000, "debias": False}
    for interval in ("paper", "pairs"):
        out[f"ci_blocks/{interval}"] = lambda i=interval: calibration_error_ci(
            q, y, interval=i, generator=_gen(), **many
        )
    out["ci_blocks/groups"] = lambda: calibration_error_ci(
        q, y, interval="groups", groups=torch.arange(q.numel()), bin_size=200, n_samples=1000,
        generator=_gen(),
    )  # fmt: skip
    for mode in ("one_vs_rest", "top_label", "classwise"):
        for interval in ("paper", "pairs"):
            out[f"multiclass/{mode}/{interval}"] = lambda m=mode, i=interval: calibration_error_ci(
                probs, labels, mode=m, interval=i, bin_size=300, n_samples=400, generator=_gen()
            )
        out[f"multiclass_error/{mode}"] = lambda m=mode: calibration_error(
            probs, labels, mode=m, bin_size=300
        )
    bins = compute_bins(q, y, bin_size=400)
    for interval in ("paper", "pairs"):
        out[f"from_bins/{interval}"] = lambda i=interval: ci_from_bins(
            bins, interval=i, n_samples=600, generator=_gen(), debias=True
        )
    # The first five fields (the bins joined these results later).
    out["pair_bootstrap"] = lambda: pair_bootstrap(
        bins, n_samples=600, debias=True, method="normal", generator=_gen()
    )[:5]
    index = bin_index(q, y, bin_size=400)
    out["group_bootstrap"] = lambda: group_bootstrap(
        q, y, groups, bins, index, n_samples=600, debias=False, generator=_gen()
    )[:5]
    for debias in (False, True):
        for use_groups in (False, True):
            out[f"compare/{debias}/{use_groups}"] = lambda d=debias, u=use_groups: (
                compare_calibration(
                    q**1.1, q, y, groups=groups if u else None, debias=d, bin_size=400,
                    n_samples=500, generator=_gen(),
                )
            )  # fmt: skip
    out["compare/l1/uniform"] = lambda: compare_calibration(
        q**1.1, q, y, norm="l1", binning="uniform", n_samples=500, generator=_gen()
    )
    for streaming in (False, True):
        for interval in ("paper", "pairs"):
            out[f"metric/{streaming}/{interval}"] = lambda s=streaming, i=interval: _metric(
                q, y, streaming=s, interval=i
            )
    out["metric/groups"] = lambda: _metric(q, y, interval="groups", groups=groups)
    out["smooth_curve/pairs"] = lambda: smooth_reliability_curve(
        q, y, n_samples=200, points=21, generator=_gen()
    )
    out["smooth_curve/groups"] = lambda: smooth_reliability_curve(
        q, y, groups=groups, n_samples=200, points=21, generator=_gen()
    )
    out["brier"] = lambda: brier_decomposition(q, y, bin_size=400)
    return out


def _metric(q, y, *, interval, streaming=False, groups=None):
    metric = CalibrationError(
        bin_size=400, n_samples=500, interval=interval, streaming=streaming, seed=4
    )
    for part in range(4):
        cut = slice(part * 5000, (part + 1) * 5000)
        metric.update(q[cut], y[cut], **({} if groups is None else {"groups": groups[cut]}))
    return metric.compute(), metric.compute_result()


def record() -> dict[str, list[float]]:
    return {name: _flat(call()) for name, call in calls().items()}


def compare(old: dict[str, list[float]], new: dict[str, list[float]]) -> tuple[float, float, list]:
    """Largest absolute and relative difference, and the names that differ at all."""
    worst_abs = worst_rel = 0.0
    differ = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None or b is None or len(a) != len(b):
            differ.append((name, float("inf")))
            continue
        diffs = [abs(x - z) for x, z in zip(a, b) if not (x != x and z != z)]
        gap = max(diffs, default=0.0)
        rel = max((d / max(abs(x), 1e-300) for d, x in zip(diffs, a) if d), default=0.0)
        worst_abs, worst_rel = max(worst_abs, gap), max(worst_rel, rel)
        if gap:
            differ.append((name, gap))
    return worst_abs, worst_rel, differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="record the numbers in this JSON file")
    parser.add_argument("--compare", type=Path, help="compare with the numbers in this file")
    parser.add_argument(
        "--tolerance",
        type=_tolerance,
        default=0.0,
        help="the largest absolute difference that passes (0: none)",
    )
    args = parser.parse_args(argv)
    numbers = record()
    print(f"{len(numbers)} calls, {sum(map(len, numbers.values()))} numbers")
    if args.write:
        args.write.write_text(json.dumps(numbers, indent=0))
    if args.compare:
        worst_abs, worst_rel, differ = compare(json.loads(args.compare.read_text()), numbers)
        print(f"largest difference: {worst_abs:.3g} absolute, {worst_rel:.3g} relative")
        for name, gap in differ:
            print(f"  {name}: {gap:.3g}")
        return int(worst_abs > args.tolerance)
    return 0


if __name__ == "__main__":
    sys.exit(main())
