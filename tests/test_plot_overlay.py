"""Two models on one ``ax``: the second call had added a second count axis over the first,
a second "perfect calibration" legend entry, and replaced the title with its own error
(the first model's label beside the second's numbers)."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error_ci, smooth_reliability_curve
from calib_metrics.plot import describe, reliability_diagram


@pytest.fixture(scope="module")
def two():
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    return [calibration_error_ci(x, y, n_samples=30) for x in (q, q.sqrt())]


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_a_second_model_is_drawn_over_the_first(two) -> None:
    a, b = two
    fig, ax = reliability_diagram(a, label="model a")
    title = ax.get_title()
    reliability_diagram(b, ax, label="model b", color="C1", title="ignored")
    assert len(fig.axes) == 2  # one count axis for both
    assert _legend(ax) == [
        "perfect calibration",
        "model a",
        f"model b: {describe(b)}",
        "pairs per bar (right axis): the first model's grey, each other's in its colour",
    ]
    assert ax.get_title() == title and title.splitlines()[0] == f"model a: {describe(a)}"
    (counts,) = [other for other in fig.axes if other is not ax]
    colours = {to_hex(bar.get_facecolor()[:3]) for bar in counts.patches}
    assert to_hex("C1") in colours and len(colours) == 2
    assert counts.get_ylim()[1] >= max(bar.get_height() for bar in counts.patches)


def test_the_second_model_keeps_the_first_ones_x_axis(two) -> None:
    a, b = two
    _, ax = reliability_diagram(a, xscale="logit")
    limits = ax.get_xlim()
    reliability_diagram(b, ax, xscale="linear")
    assert ax.get_xscale() == "logit" and ax.get_xlim() == limits


def test_a_neighbouring_diagram_sharing_x_is_not_a_second_model(two) -> None:
    # A subplot of sharex=True shares x with the left diagram's count axis: the right
    # diagram had been taken for a second model (no title, its bars on the left one's).
    a, b = two
    fig = Figure()
    left, right = fig.subplots(1, 2, sharex=True)
    reliability_diagram(a, left, title="left")
    reliability_diagram(b, right, title="right")
    assert right.get_title().splitlines()[0] == "right"
    assert left.get_title().splitlines()[0] == "left"
    assert len(fig.axes) == 4  # each diagram its own count axis
    assert "perfect calibration" in _legend(right)


def test_a_cleared_ax_draws_a_fresh_diagram(two) -> None:
    # ax.clear() leaves the count axis: the next epoch's diagram had joined it untitled.
    a, b = two
    fig, ax = reliability_diagram(a)
    ax.clear()
    reliability_diagram(b, ax, title="epoch 2")
    assert ax.get_title().splitlines()[0] == "epoch 2"
    (counts,) = [other for other in fig.axes if other is not ax]  # the stale one removed
    total = sum(bar.get_height() for bar in counts.patches)
    assert total == pytest.approx(float(b.bins.count.sum()))


def test_several_models_legend_says_the_bars_are_coloured(two) -> None:
    a, b = two
    _, ax = reliability_diagram(a, label="a")
    assert _legend(ax)[-1] == "pairs per grey bar (right axis)"
    reliability_diagram(b, ax, label="b", color="C1")
    entry = _legend(ax)[-1]
    assert "grey bar" not in entry and entry.startswith("pairs per bar (right axis")
    assert "colour" in entry


def test_a_second_models_smooth_curve_is_named_by_its_label(two) -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    curve = smooth_reliability_curve(q.sqrt(), y, n_samples=20, generator=g)
    a, b = two
    _, ax = reliability_diagram(a, label="A")
    reliability_diagram(b, ax, label="B", color="C1", smooth=curve)
    entries = _legend(ax)
    assert any(e.startswith("B: smooth curve (smECE ") for e in entries)
    assert any(e.startswith("B: ") and "band of the σ-smoothed curve" in e for e in entries)


def test_the_first_models_smooth_curve_is_named_by_its_label_too(two) -> None:
    """Only a further model's curve and band had been named: the first call's "m1" left
    its entries bare beside "m2: smooth curve", told apart by colour alone."""
    g = torch.Generator().manual_seed(1)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    curve = smooth_reliability_curve(q, torch.bernoulli(q, generator=g), n_samples=20)
    a, b = two
    _, ax = reliability_diagram(a, label="m1", smooth=curve)
    reliability_diagram(b, ax, label="m2", color="C1", smooth=curve)
    smooth = [e for e in _legend(ax) if "smooth curve" in e or "smoothed curve" in e]
    assert sorted(e.split(": ")[0] for e in smooth) == ["m1", "m1", "m2", "m2"]
    _, alone = reliability_diagram(a, smooth=curve)  # no label: nothing to name them by
    assert any(e.startswith("smooth curve (smECE ") for e in _legend(alone))


def _inside(fig, artist) -> bool:
    FigureCanvasAgg(fig).draw()  # laid out and drawn: the renderer's own extents
    box, page = artist.get_window_extent(), fig.bbox
    return page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1


def test_an_overlays_legend_fits_the_figure_and_hides_no_bin() -> None:
    # Two models with smooth curves: their eight entries had run 27 px past the figure's
    # right edge and covered model b's bins at the upper left.
    g = torch.Generator().manual_seed(0)
    q, q2 = torch.rand(4000, generator=g), torch.rand(4000, generator=g)
    y, y2 = torch.bernoulli(q**1.5, generator=g), torch.bernoulli(q2, generator=g)
    fig, ax = reliability_diagram(calibration_error_ci(q, y), label="model a",
                                  smooth=smooth_reliability_curve(q, y, n_samples=20))  # fmt: skip
    size = ax.get_window_extent().size
    reliability_diagram(calibration_error_ci(q2, y2), ax, label="model b", color="C1",
                        smooth=smooth_reliability_curve(q2, y2, n_samples=20))  # fmt: skip
    legend = ax.get_legend()
    assert len(legend.get_texts()) == 8 and _inside(fig, legend)
    assert legend.get_window_extent().y1 < ax.get_window_extent().y0  # below the plot
    # The figure grew by the legend: the plot keeps (about) its size.
    assert ax.get_window_extent().size == pytest.approx(size, rel=0.05)


@pytest.mark.parametrize(
    ("font", "size", "models"),
    [(14, None, 2), (20, None, 2), (10, (3.0, 3.0), 2), (14, None, 3), (16, None, 4)],
)
def test_an_overlays_legend_below_clears_the_x_axis_labels(two, font, size, models) -> None:
    """The legend hung 0.15 axes heights under the diagram: at 14 pt it touched the x
    label, at 20 pt it hid it, and so did the default font under a small diagram; then,
    judged by that share at the call, it still touched the label at 14 pt with three
    models (the figure grown by the second's legend) and hid it at 16 pt with four."""
    a, b = two
    with matplotlib.rc_context({"font.size": font}):
        fig = None if size is None else Figure(figsize=size, layout="constrained")
        ax = None if fig is None else fig.add_subplot()
        fig, ax = reliability_diagram(a, ax, label="a")
        for k in range(1, models):
            reliability_diagram((a, b)[k % 2], ax, label=f"m{k}", color=f"C{k}")
        FigureCanvasAgg(fig).draw()
        legend, labels = ax.get_legend().get_window_extent(), ax.xaxis.get_tightbbox()
    # Under the tick labels and the x label, with a gap (2 pt): at 14 pt it was 0.3 pt.
    assert labels.y0 - legend.y1 >= 2 * fig.dpi / 72
    assert fig.bbox.y0 <= legend.y0  # on the canvas, as laid out


def test_a_third_model_grows_the_figure_by_its_own_entries_only(two) -> None:
    a, b = two
    fig, ax = reliability_diagram(a, label="a")
    reliability_diagram(b, ax, label="b", color="C1")
    height = fig.get_figheight()
    reliability_diagram(a, ax, label="c", color="C2")
    added = fig.get_figheight() - height  # one entry: about 7 pt * 1.5 lines
    assert 0 < added < 0.25 and _inside(fig, ax.get_legend())


def test_an_overlay_in_a_figure_of_several_panels_keeps_its_size(two) -> None:
    a, b = two
    fig = Figure(figsize=(9, 5), layout="constrained")
    left, right = fig.subplots(1, 2)
    reliability_diagram(a, left, label="a")
    reliability_diagram(b, left, label="b", color="C1")
    reliability_diagram(b, right)
    assert fig.get_size_inches().tolist() == [9.0, 5.0] and _inside(fig, left.get_legend())


def test_an_overlay_in_a_plain_figure_keeps_its_legend_inside(two) -> None:
    """A user's figure without constrained layout makes no room below the diagram: the
    legend moved there had fallen off the canvas, taking model b's error with it (review
    R5). It stays inside the diagram there."""
    a, b = two
    fig = Figure(figsize=(5, 5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    reliability_diagram(a, ax, label="a")
    reliability_diagram(b, ax, label="b", color="C1")
    legend = ax.get_legend()
    assert any(t.get_text().startswith("b: CalibErr") for t in legend.get_texts())
    assert _inside(fig, legend) and fig.get_size_inches().tolist() == [5.0, 5.0]


def test_an_overlay_in_a_subfigure_of_constrained_layout_draws(two) -> None:
    """A SubFigure has no height to grow: the overlay had raised an AttributeError
    (review R6)."""
    a, b = two
    fig = Figure(figsize=(9, 5), layout="constrained")
    ax = fig.subfigures(1, 2)[0].subplots()
    reliability_diagram(a, ax, label="a")
    reliability_diagram(b, ax, label="b", color="C1")
    assert fig.get_size_inches().tolist() == [9.0, 5.0] and _inside(fig, ax.get_legend())


def _ends_pairs():
    """Model a near 0.02 / 0.98 draws a logit axis over [0.01, 0.999]; model b, at 1e-6 and
    1 − 1e-7, lies past both of its ends."""
    g = torch.Generator().manual_seed(0)
    high = torch.rand(4000, generator=g) > 0.5
    y = torch.bernoulli(torch.where(high, 0.98, 0.02).double(), generator=g)
    qa = torch.where(high, 0.98, 0.02).double() + 0.005 * torch.rand(4000, generator=g)
    qb = torch.where(high, 1 - 1e-7, 1e-6).double()
    return qa, qb, y


def _ends_overlay():
    qa, qb, y = _ends_pairs()
    return [calibration_error_ci(q, y, n_samples=20) for q in (qa, qb)]


def test_a_second_models_bins_past_a_logit_axis_are_said_so() -> None:
    a, b = _ends_overlay()
    _, ax = reliability_diagram(a, label="a", xscale="logit")
    lo, hi = ax.get_xlim()
    past = int(((b.bins.pred_mean < lo) | (b.bins.pred_mean > hi)).sum())
    message = rf"model 'b': {past} of its {len(b.bins.count)} bins \([\d,]+ pairs\) lie past"
    with pytest.warns(UserWarning, match=message):
        reliability_diagram(b, ax, label="b", color="C1")
    assert ax.get_xlim() == (lo, hi)
    (entry,) = [t for t in _legend(ax) if t.startswith("b: ")]
    assert entry.endswith(f"({past} bins at the x axis' ends)")


def test_a_second_model_within_the_axis_is_not_warned_of(two) -> None:
    a, b = two
    _, ax = reliability_diagram(a, label="a", xscale="logit")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reliability_diagram(b, ax, label="b", color="C1")
    assert not any("axis' ends" in t for t in _legend(ax))


def test_bins_at_exactly_0_or_1_on_a_wider_first_axis_are_not_warned_of() -> None:
    """A bin at q̂ = 0 lies at an end of any logit axis: drawn at the end of a first axis
    wider than its own, it had been counted as past it."""
    g = torch.Generator().manual_seed(1)
    qa = torch.rand(4000, generator=g, dtype=torch.float64) * 1e-3 + 1e-4
    qa = torch.where(torch.rand(4000, generator=g) < 0.5, qa, 1 - qa)
    mid = 0.2 + 0.6 * torch.rand(2000, generator=g, dtype=torch.float64)
    qb = torch.cat([torch.zeros(1000, dtype=torch.float64), torch.ones(1000), mid])
    a, b = (
        calibration_error_ci(q, torch.bernoulli(q, generator=g), n_samples=20) for q in (qa, qb)
    )
    assert b.bins.pred_mean[0] == 0 and b.bins.pred_mean[-1] == 1
    _, ax = reliability_diagram(a, label="a", xscale="logit")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reliability_diagram(b, ax, label="b", color="C1")
    assert not any("axis' ends" in t for t in _legend(ax))


def test_the_past_the_ends_warning_names_the_users_line_through_a_metric() -> None:
    qa, qb, y = _ends_pairs()
    _, ax = reliability_diagram(calibration_error_ci(qa, y, n_samples=20), xscale="logit")
    metric = CalibrationError(n_samples=20)
    metric.update(qb, y)
    with pytest.warns(UserWarning, match="past the ends") as caught:
        metric.plot(ax=ax)
    assert [w.filename for w in caught if "past the ends" in str(w.message)] == [__file__]
