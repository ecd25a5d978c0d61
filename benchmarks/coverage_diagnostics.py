"""Why does the recentred group bootstrap under-cover on grouped data? A diagnostic.

For one (variant, N, β) of the coverage study (``benchmarks/coverage.py``), it draws
data sets and compares, per k, the actual spread of the debiased square D over data
sets with the spread of the bootstrap roots L* = D* − θ̃ in three bootstrap worlds:

* ``shrunk``: gaps ĝ shrunk by λ = √(D₊/P), the pair bootstrap's world;
* ``unshrunk``: the observed gaps ĝ (λ = 1), the group bootstrap's world;
* ``oracle``: the true gaps of each bin, known here from t_k (not available to a user).

It also prints the normal-form coverage of the true error for ``shrunk`` and
``unshrunk``, and the mean of D − θ (θ the true squared error) against the mean root.
Group bootstrap for grouped data, pair bootstrap otherwise.

Run ``python benchmarks/coverage_diagnostics.py --variant grouped --n 100000``; docs/
coverage.md quotes its output.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import at_least_two, bin_size, count
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.intervals import (
    bins_of_sums,
    debiased_square,
    draw_statistics,
    pair_draws,
    weighted_mean,
)
from calib_metrics.paper.synthetic import miscalibrate, true_calibration_error

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("coverage", ROOT / "benchmarks" / "coverage.py")
study = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(study)


def roots(bins, blocks, gaps: torch.Tensor) -> torch.Tensor:
    """D* − θ̃ of every draw in the world whose bin gaps are ``gaps``."""
    world = weighted_mean(gaps**2, bins.count)
    out = []
    for draw in blocks:
        moved = gaps + (draw.pred_mean - bins.pred_mean) - (draw.freq - bins.freq)
        out.append(debiased_square(moved, draw.freq, draw.count) - world)
    return torch.cat(out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", choices=["iid", "grouped"], default="grouped")
    p.add_argument("--n", type=count, default=100_000)
    p.add_argument("--bin-size", type=bin_size, default="auto", help="β (auto: ⌈√N⌉)")
    p.add_argument(
        "--reps", type=at_least_two, default=240, help="data sets (≥ 2: their sd is printed)"
    )
    p.add_argument("--samples", type=at_least_two, default=400)
    p.add_argument("--seed", type=int, default=5)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(args.seed)
    n, grouped = args.n, args.variant == "grouped"
    size = resolve_bin_size(args.bin_size, n)
    batch = max(1, 400_000 // n)
    # The coverage study's grouped setting: q ~ Beta(0.3, 0.3), groups of 20, ρ = 0.5.
    setting = SimpleNamespace(a=0.3, b=0.3, group_size=20, rho=0.5)
    truths = {k: true_calibration_error(setting.a, setting.b, k) for k in study.KS}
    keys = ("D", "shrunk", "unshrunk", "oracle", "cover_shrunk", "cover_unshrunk", "root")
    acc = {k: {key: [] for key in keys} for k in study.KS}
    for _ in range(math.ceil(args.reps / batch)):
        q, u, groups = study.draw_data(batch * n, setting, args.variant, g)
        q, u = q.reshape(batch, n), u.reshape(batch, n)
        order = torch.argsort(q, dim=1)
        q, u = q.gather(1, order), u.gather(1, order)
        ys = [study.labels(q, u, k, args.variant) for k in study.KS]
        starts, ends = study.rank_bins(n, size)
        cum_q = study.cumulative(q)
        if grouped:
            groups = groups.reshape(batch, n)
            groups = (groups - groups[:, :1]).gather(1, order)
            n_groups = int(groups.max()) + 1
            rate = torch.ones((batch * n_groups, args.samples), dtype=torch.float64)
            weights = torch.poisson(rate, generator=g)
            group_blocks = study.group_draws([q], ys, groups, n_groups, starts, ends, weights)
        for i, k in enumerate(study.KS):
            bins = study.sorted_bins(cum_q, study.cumulative(ys[i]), starts, ends)
            if grouped:
                blocks = [bins_of_sums(*block) for block in group_blocks[i]]
            else:
                blocks = list(pair_draws(bins, args.samples, g))
            cum_t = study.cumulative(miscalibrate(q, k))
            true_gap = bins.pred_mean - (cum_t[:, ends] - cum_t[:, starts]) / bins.count
            stats = draw_statistics(bins, blocks)
            a = acc[k]
            a["D"].append(stats.square)
            shrunk = stats.square - stats.values
            a["root"].append(shrunk.mean(0))
            gap = bins.pred_mean - bins.freq
            unshrunk = roots(bins, blocks, gap)
            for name, r in (("shrunk", shrunk), ("unshrunk", unshrunk)):
                a[name].append(r.std(0))
                theta = stats.square - r
                low = (theta.mean(0) - 1.96 * theta.std(0)).clamp_min(0).sqrt()
                high = theta.mean(0) + 1.96 * theta.std(0) + (-stats.square).clamp_min(0)
                covered = (low <= truths[k]) & (truths[k] <= high.clamp_min(0).sqrt())
                a[f"cover_{name}"].append(covered.double())
            a["oracle"].append(roots(bins, blocks, true_gap).std(0))
    print(f"{args.variant}, N = {n:,}, β = {size}, {args.reps} data sets, {args.samples} draws")
    print("| k | sd of D (actual) | sd of L*: shrunk / unshrunk / oracle gaps | "
          "mean D − θ | mean L* (shrunk) | coverage shrunk / unshrunk |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for k, a in acc.items():
        cat = {key: torch.cat(v)[: args.reps] for key, v in a.items()}
        print(
            f"| {k} | {cat['D'].std():.2e} | {cat['shrunk'].mean():.2e} / "
            f"{cat['unshrunk'].mean():.2e} / {cat['oracle'].mean():.2e} | "
            f"{(cat['D'] - truths[k] ** 2).mean():+.1e} | {cat['root'].mean():+.1e} | "
            f"{cat['cover_shrunk'].mean():.3f} / {cat['cover_unshrunk'].mean():.3f} |"
        )


if __name__ == "__main__":
    main()
