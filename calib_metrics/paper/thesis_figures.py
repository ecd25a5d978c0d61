"""Reliability diagrams in the thesis' layout (its Figures 4.1-4.6), on the public plot API.

The thesis shows one calibration curve per model, captioned "Calibration curve for HMM
(POS Tweet), Acc = .., CalibScore = ..", and reads them against each other ("CRF-Basic's
miscalibration is about half HMM's", "more refined predictions ... as seen from the
distributions of points along the x-axis"). :func:`thesis_figure` draws that comparison
for each query / data set as one row: first the models **overlaid in one panel** (one
colour each, the spread of each model's predictions tinted in its colour along the
bottom), then one panel per model with the thesis' caption. Every panel is
:func:`calib_metrics.plot.reliability_diagram` drawn on a given ``ax``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from calib_metrics.predictions import save_figure

__all__ = ["Curve", "overlay_reliability", "thesis_figure"]


class Curve(NamedTuple):
    """One model's calibration result on a query, with its legend label and its caption."""

    label: str
    caption: str
    result: Any  # a CalibrationResult
    # Its colour (a matplotlib colour); None: C0, C1, ... by its place in the row. A fixed
    # one keeps a curve's colour when another curve of the row is left out.
    color: str | None = None


def overlay_reliability(ax, curves: list[Curve], *, title: str, confidence: float | None = None):
    """Every curve on one ``ax`` (colours ``C0``, ``C1``, ... unless a curve has its own);
    returns ``ax``.

    Each model's spread of predictions (the count bars of ``reliability_diagram``, which
    draws a later model's in its colour on the first one's count axis) is tinted in the
    model's colour, so the refinement of the models can be compared too.

    Example:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt, torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> g = torch.Generator().manual_seed(0)
        >>> p = torch.rand(500, generator=g)
        >>> sharp, flat = (calibration_error_ci(x, (p > 0.5).float(), bin_size=50)
        ...                for x in (p, 0.5 + (p - 0.5) / 2))
        >>> fig, ax = plt.subplots()
        >>> ax = overlay_reliability(ax, [Curve("sharp", "", sharp), Curve("flat", "", flat)],
        ...                          title="two models")
        >>> [t.get_text() for t in ax.get_legend().get_texts()]
        ['perfect calibration', 'sharp', 'flat']
        >>> plt.close(fig)
    """
    from calib_metrics.plot import literal, reliability_diagram, shared_x_axis

    if not curves:
        raise ValueError("overlay_reliability needs at least one curve")
    # The first model's own axis had cut off the bins of a sharper one (drawn at its ends).
    shared = shared_x_axis([curve.result for curve in curves])
    for i, curve in enumerate(curves):
        before = set(ax.figure.axes)
        color = curve.color or f"C{i}"
        reliability_diagram(
            curve.result, ax=ax, label=curve.label, color=color, confidence=confidence,
            xscale=shared.xscale, logit_range=shared.logit_range,
        )  # fmt: skip
        for twin in set(ax.figure.axes) - before:  # the first model's count axis: grey bars
            for bar in twin.patches:
                bar.set_facecolor(color)
                bar.set_alpha(0.25)
    # The captions carry the errors: the legend names the models only. Its texts, as every
    # text of the plot module's, are drawn as written (a $ is not mathtext).
    handles = ax.get_legend_handles_labels()[0][: 1 + len(curves)]
    names = ["perfect calibration", *(literal(c.label) for c in curves)]
    ax.legend(handles, names, loc="upper left", fontsize=7)
    ax.set_title("\n".join(filter(None, [literal(title), shared.overlay_note])), fontsize=9)
    return ax


def thesis_figure(
    rows: list[tuple[str, list[Curve]]],
    path: str | Path,
    *,
    suptitle: str,
    confidence: float | None = None,
) -> str:
    """One row per query / data set: the overlay, then a panel per model; saved to ``path``.

    Example:
        >>> import tempfile, torch
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.rand(400, generator=torch.Generator().manual_seed(1))
        >>> r = calibration_error_ci(p, (p > 0.5).float(), bin_size=40)
        >>> rows = [("query A", [Curve("m1", "m1, Acc = 1", r), Curve("m2", "m2", r)])]
        >>> with tempfile.TemporaryDirectory() as d:
        ...     out = thesis_figure(rows, Path(d) / "f.png", suptitle="demo")
        ...     Path(out).stat().st_size > 0
        True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from calib_metrics.plot import literal, reliability_diagram, shared_x_axis

    if not rows or any(not curves for _, curves in rows):
        raise ValueError("thesis_figure needs at least one row, each with at least one curve")
    columns = 1 + max(len(curves) for _, curves in rows)
    fig, axes = plt.subplots(
        len(rows), columns, figsize=(4.6 * columns, 5.0 * len(rows)), squeeze=False
    )
    for row_axes, (name, curves) in zip(axes, rows, strict=True):
        overlay_reliability(row_axes[0], curves, title=name, confidence=confidence)
        # The row's panels on the overlay's x axis, so that they read alike.
        shared = shared_x_axis([curve.result for curve in curves])
        for i, (ax, curve) in enumerate(zip(row_axes[1:], curves, strict=False)):
            reliability_diagram(
                curve.result,
                ax=ax,
                title=shared.title(curve.caption, i),
                color=curve.color or f"C{i}",
                confidence=confidence,
                xscale=shared.xscale,
                logit_range=shared.logit_range,
            )
        for ax in row_axes[1 + len(curves) :]:
            ax.set_visible(False)
    fig.suptitle(literal(suptitle), fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, "--out", dpi=80, bbox_inches="tight")
    plt.close(fig)
    return str(path)
