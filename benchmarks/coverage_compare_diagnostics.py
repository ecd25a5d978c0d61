"""Why the paired difference interval missed, and which construction fixes it.

    python benchmarks/coverage_compare_diagnostics.py --n 10000 --reps 60 --draws 300 \\
        --settings unequal equal

For the settings of ``coverage_compare.py`` (independent labels) and R data sets, one
paired pair bootstrap per data set (the library's own blocks), this prints per setting:

* the actual mean and sd of D_a − D_b (the difference of debiased squares) against its
  truth θ_a − θ_b, and the mean of error(a) − error(b) = √D_a₊ − √D_b₊ against δ;
* per bootstrap world (``shrunk``: gaps × λ = √(D₊/P), the single-model pair world;
  ``observed``: the observed gaps): the bootstrap sd of Δ* = θ_a* − θ_b*, the coverage of
  Δ's percentile interval and the rejection rate of "no difference" at α = 0.05;
* the coverage of δ by: ``roots`` (the previous construction: √θ_a*₊ − √θ_b*₊ centred on
  the estimate), ``per-draw m`` (the library's: each Δ* carried with the draw's own
  m* = min(θ_a*, θ_b*)), ``m interval`` (Δ's ends carried with the widening end of m's
  interval) and ``m̂`` (Δ's ends carried with the estimate min(D_a, D_b)₊).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's benchmarks/

from benchmarks._args import at_least_two, count
from benchmarks.coverage_compare import SETTINGS, SHIFT, _true_error, labels
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.comparison import (
    _paired_blocks,
    _paired_squares,
    _unit_sums,
    root_difference,
)
from calib_metrics.functional.intervals import draw_statistics


def _ends(x: torch.Tensor) -> torch.Tensor:
    return torch.quantile(x, torch.tensor([0.025, 0.975], dtype=x.dtype))


WORLDS = ("shrunk", "observed", "joint")


def one_data_set(q, y, groups, setting, draws, g) -> dict:
    """Every construction's interval on one data set (pairs or groups resampled)."""
    model_a, model_b, _ = SETTINGS[setting]
    n = q.numel()
    units = torch.arange(n) if groups is None else groups
    n_units = int(units.max()) + 1
    options = {"binning": "adaptive", "bin_size": resolve_bin_size("auto", n), "n_bins": 15}
    bins_a, sums_a = _unit_sums(model_a(q), y, units, n_units, options)
    bins_b, sums_b = _unit_sums(model_b(q), y, units, n_units, options)
    blocks = list(_paired_blocks(sums_a, sums_b, n_units, draws, g))
    blocks_a, blocks_b = [b[0] for b in blocks], [b[1] for b in blocks]
    out = {}
    for world in WORLDS:
        da = draw_statistics(bins_a, blocks_a, world="observed" if world == "joint" else world)
        db = draw_statistics(bins_b, blocks_b, world="observed" if world == "joint" else world)
        theta_a, theta_b = da.values, db.values
        if world == "joint":
            theta_a, theta_b = _paired_squares(bins_a, bins_b, blocks_a, blocks_b)
        squares = theta_a - theta_b
        out[f"{world} Δ ends"] = _ends(squares)
        out[f"{world} sd"] = squares.std()
        estimate = da.square.clamp_min(0).sqrt() - db.square.clamp_min(0).sqrt()
        roots = theta_a.clamp_min(0).sqrt() - theta_b.clamp_min(0).sqrt()
        out[f"{world} roots"] = _ends(roots + (estimate - roots.median()))
        smaller = torch.minimum(theta_a, theta_b)
        out[f"{world} per-draw m"] = _ends(root_difference(squares, smaller))
        (low, high), (m_low, m_high) = _ends(squares), _ends(smaller)
        out[f"{world} m interval"] = torch.stack(
            [
                root_difference(low, m_high if low > 0 else m_low),
                root_difference(high, m_low if high > 0 else m_high),
            ]
        )
        m_hat = torch.minimum(da.square, db.square)
        out[f"{world} m̂"] = root_difference(_ends(squares), m_hat)
    out["D_a − D_b"] = da.square - db.square
    out["estimate"] = estimate
    return out


def study(setting: str, n: int, reps: int, draws: int, seed: int, variant: str) -> list[str]:
    _, _, truth = SETTINGS[setting]
    error_a = _true_error(SHIFT) if setting != "both calibrated" else 0.0
    square = error_a**2 - (error_a - truth) ** 2
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(reps):
        q = torch.rand(n, generator=g, dtype=torch.float64)
        y, groups = labels(q, variant, g)
        rows.append(one_data_set(q, y, groups, setting, draws, g))
    d = torch.stack([r["D_a − D_b"] for r in rows])
    est = torch.stack([r["estimate"] for r in rows])
    lines = [
        f"{setting}, {variant} labels, N = {n:,}, {reps} data sets × {draws} draws: "
        f"D_a − D_b − Δ mean "
        f"{(d.mean() - square).item():+.1e}, sd {d.std().item():.2e}; "
        f"error(a) − error(b) − δ mean {(est.mean() - truth).item():+.4f}",
        "",
        "| world | bootstrap sd of Δ* | Δ coverage | rejection | roots | per-draw m "
        "| m interval | m̂ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for world in WORLDS:
        ends = torch.stack([r[f"{world} Δ ends"] for r in rows])
        cover = ((ends[:, 0] <= square) & (square <= ends[:, 1])).double().mean()
        reject = ((ends[:, 0] > 0) | (ends[:, 1] < 0)).double().mean()
        cells = [world, f"{torch.stack([r[f'{world} sd'] for r in rows]).mean():.2e}"]
        cells += [f"{cover:.3f}", f"{reject:.3f}"]
        for name in ("roots", "per-draw m", "m interval", "m̂"):
            e = torch.stack([r[f"{world} {name}"] for r in rows])
            cells.append(f"{((e[:, 0] <= truth) & (truth <= e[:, 1])).double().mean():.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=count, default=10_000)
    parser.add_argument(
        "--reps", type=at_least_two, default=60, help="data sets (≥ 2: their sd is printed)"
    )
    parser.add_argument("--draws", type=at_least_two, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--variant", choices=["iid", "grouped"], default="iid")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for setting in args.settings:
        lines = study(setting, args.n, args.reps, args.draws, args.seed, args.variant)
        print("\n".join(lines) + "\n", flush=True)


if __name__ == "__main__":
    main()
