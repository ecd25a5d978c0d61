"""Matplotlib figures: reliability diagrams, per-label errors, curves and time series.

Every function draws on a given ``ax`` or on a new ``matplotlib.figure.Figure`` (never
pyplot's global state, so nothing leaks between calls or threads) and returns
``(fig, ax)``. This module is imported lazily: the metric works without matplotlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.functional.intervals import normal_quantile


def _axes(ax: Axes | None, size: tuple[float, float] = (5.0, 5.0)) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def _numbers(x: Any) -> list[float]:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().reshape(-1).tolist()
    return [float(v) for v in x]


def describe(result: CalibrationResult) -> str:
    """``CalibErr 0.0123 [0.0101, 0.0145]``: the error and its interval, for titles.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import Bins
        >>> t = torch.tensor
        >>> empty = Bins(t([]), t([]), t([]))
        >>> describe(CalibrationResult(t(0.0123), t(0.013), t(0.001), t(0.011), t(0.015), empty))
        'CalibErr 0.0123 [0.0110, 0.0150]'
    """
    return (
        f"CalibErr {result.error.item():.4f} [{result.lower.item():.4f}, {result.upper.item():.4f}]"
    )


def reliability_diagram(
    result: CalibrationResult,
    ax: Axes | None = None,
    *,
    title: str | None = None,
    label: str | None = None,
    color: str = "C0",
    confidence: float = 0.95,
) -> tuple[Figure, Axes]:
    """The paper's calibration curve: (q̂ᵢ, p̂ᵢ) per bin with ±z·se bars (z from
    ``confidence``: 1.96 at 0.95).

    The diagonal marks perfect calibration: points above it are underconfident
    (q < p), below it overconfident. Grey bars along the bottom show how the
    predictions are spread over [0, 1] (the refinement: mass piled near 0 and 1 means
    sharp predictions). The title gives the error with its interval.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.rand(2000, generator=torch.Generator().manual_seed(1))
        >>> fig, ax = reliability_diagram(calibration_error_ci(p, (p > 0.5).float(), bin_size=200))
        >>> ax.get_xlabel()
        'predicted probability q̂ (bin mean)'
    """
    fig, ax = _axes(ax)
    bins = result.bins
    q, p, n = _numbers(bins.pred_mean), _numbers(bins.freq), _numbers(bins.count)
    z = normal_quantile(confidence)
    se = [z * (pi * (1 - pi) / ni) ** 0.5 for pi, ni in zip(p, n)]
    ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="perfect calibration")
    ax.errorbar(
        q,
        p,
        yerr=se,
        fmt="o-",
        color=color,
        markersize=3,
        capsize=2,
        linewidth=1,
        label=label or f"bins (±{z:.2f} se)",
    )
    total = sum(n)
    # The spread of q (the refinement): pairs per twentieth of [0, 1], as grey bars along
    # the bottom fifth of the plot.
    mass = ax.twinx()
    heights, _, _ = mass.hist(
        q,
        bins=20,
        range=(0, 1),
        weights=[ni / total for ni in n],
        color="0.75",
        alpha=0.6,
        zorder=0,
    )
    mass.set_ylim(0, max(float(max(heights)), 1e-12) * 5)
    mass.set_yticks([])
    ax.set_zorder(mass.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_box_aspect(1)
    ax.set_xlabel("predicted probability q̂ (bin mean)")
    ax.set_ylabel("empirical frequency p̂")
    ax.legend(loc="upper left", fontsize=8)
    heading = describe(result) + f"  ({len(q)} bins, N={int(total)})"
    ax.set_title(f"{title}\n{heading}" if title else heading, fontsize=9)
    return fig, ax


def per_class_errors(
    results: Mapping[str, Sequence[CalibrationResult]],
    labels: Sequence[str],
    ax: Axes | None = None,
    *,
    title: str | None = None,
) -> tuple[Figure, Axes]:
    """Grouped bars of each label's error with its interval, one colour per model (Fig. 4).

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.rand(500, generator=torch.Generator().manual_seed(2))
        >>> r = calibration_error_ci(p, (p > 0.5).float(), bin_size=100)
        >>> fig, ax = per_class_errors({"A": [r, r], "B": [r, r]}, ["x", "y"])
        >>> len(ax.patches)
        4
    """
    fig, ax = _axes(ax, (max(6.0, 0.35 * len(labels) * len(results)), 4.0))
    width = 0.8 / max(1, len(results))
    for k, (name, rows) in enumerate(results.items()):
        x = [i + (k - (len(results) - 1) / 2) * width for i in range(len(labels))]
        err = [r.error.item() for r in rows]
        low = [max(0.0, e - r.lower.item()) for e, r in zip(err, rows)]
        high = [max(0.0, r.upper.item() - e) for e, r in zip(err, rows)]
        ax.bar(
            x,
            err,
            width=width,
            yerr=[low, high],
            capsize=1.5,
            label=name,
            error_kw={"linewidth": 0.6},
        )
    ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
    ax.set_ylabel("calibration error")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax


def error_curve(
    x: Sequence[float],
    error: Any,
    lower: Any = None,
    upper: Any = None,
    ax: Axes | None = None,
    *,
    label: str | None = None,
    xlabel: str = "",
    logx: bool = False,
    color: str | None = None,
    title: str | None = None,
) -> tuple[Figure, Axes]:
    """A calibration error against a parameter (bin size, sample size), with a band.

    Example:
        >>> fig, ax = error_curve([1, 2, 3], [0.1, 0.05, 0.03], [0.08, 0.04, 0.02],
        ...                       [0.12, 0.06, 0.04], xlabel="bin size")
        >>> ax.get_xlabel()
        'bin size'
    """
    fig, ax = _axes(ax, (6.0, 4.0))
    (line,) = ax.plot(list(x), _numbers(error), "o-", markersize=3, label=label, color=color)
    if lower is not None and upper is not None:
        ax.fill_between(
            list(x),
            _numbers(lower),
            _numbers(upper),
            alpha=0.25,
            color=line.get_color(),
            linewidth=0,
        )
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("calibration error")
    ax.grid(alpha=0.3)
    if label:
        ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax


def posterior_time_series(
    periods: Sequence[str],
    mean: Any,
    lower: Any,
    upper: Any,
    *,
    ax: Axes | None = None,
    label: str | None = None,
    color: str | None = None,
    one_best: Any = None,
    title: str | None = None,
    confidence: float = 0.95,
) -> tuple[Figure, Axes]:
    """Posterior mean per period with its shaded interval, and the 1-best line (Fig. 6).

    ``confidence`` names the interval's level in the legend (the interval itself is given).

    Call it twice on one ``ax`` to overlay two series (the paper's Yugoslavia/NATO).

    Example:
        >>> fig, ax = posterior_time_series(["2001Q1", "2001Q2"], [1.0, 2.5], [0.2, 1.0],
        ...                                 [1.8, 4.0], label="USA", one_best=[1, 3])
        >>> len(ax.lines)
        2
    """
    fig, ax = _axes(ax, (7.0, 3.5))
    x = list(range(len(periods)))
    (line,) = ax.plot(
        x,
        _numbers(mean),
        "-",
        color=color,
        linewidth=1.5,
        label=f"{label} posterior mean" if label else "posterior mean",
    )
    ax.fill_between(
        x,
        _numbers(lower),
        _numbers(upper),
        color=line.get_color(),
        alpha=0.25,
        linewidth=0,
        label=f"{100 * confidence:g}% interval",
    )
    if one_best is not None:
        ax.plot(
            x,
            _numbers(one_best),
            ":",
            color=line.get_color(),
            linewidth=1,
            label=f"{label} 1-best" if label else "1-best",
        )
    step = max(1, len(periods) // 12)
    ax.set_xticks(x[::step], list(periods)[::step], rotation=45, fontsize=7)
    ax.set_ylabel("documents")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return fig, ax
