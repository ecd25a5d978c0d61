"""The thesis' figure layout: models overlaid in one panel per query, then one panel each."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
import torch

from calib_metrics.functional import calibration_error_ci
from calib_metrics.paper.thesis_figures import Curve, overlay_reliability, thesis_figure


def _results():
    g = torch.Generator().manual_seed(3)
    p = torch.rand(3000, generator=g)
    y = (torch.rand(3000, generator=g) < p).double()
    over = (p - 0.5) * 1.6 + 0.5  # an overconfident model of the same outcomes
    return [calibration_error_ci(x.clamp(0, 1), y, bin_size=300) for x in (p, over)]


def test_overlay_draws_every_model_in_its_colour_on_one_panel():
    good, bad = _results()
    fig, ax = plt.subplots()
    overlay_reliability(ax, [Curve("good", "", good), Curve("bad", "", bad)], title="q")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["perfect calibration", "good", "bad"]
    # Each model's curve passes through its own bin means, in its own colour.
    bars = [c for c in ax.containers if c.get_label().split(":")[0] in ("good", "bad")]
    curves = [c.lines[0] for c in bars]
    assert [c.get_color() for c in curves] == ["C0", "C1"]
    for line, r in zip(curves, (good, bad), strict=True):
        assert line.get_xdata() == pytest.approx(r.bins.pred_mean.tolist())
    # The spread of each model's predictions is tinted in its colour, on one count axis.
    (twin,) = [a for a in fig.axes if a is not ax]
    colours = {matplotlib.colors.to_hex(b.get_facecolor()[:3]) for b in twin.patches}
    assert colours == {matplotlib.colors.to_hex(c) for c in ("C0", "C1")}
    assert ax.get_title() == "q"
    plt.close(fig)


def test_thesis_figure_has_an_overlay_and_a_captioned_panel_per_model(tmp_path, monkeypatch):
    good, bad = _results()
    saved = {}
    monkeypatch.setattr(plt, "close", lambda fig: saved.setdefault("fig", fig))
    rows = [
        ("query V", [Curve("HMM", "HMM, Acc = 0.7", good), Curve("CRF", "CRF, Acc = 0.8", bad)]),
        ("query NN", [Curve("HMM", "HMM (EWT)", good)]),
    ]
    path = thesis_figure(rows, tmp_path / "f.png", suptitle="s")
    assert (tmp_path / "f.png").stat().st_size > 0 and path.endswith("f.png")
    main = [a for a in saved["fig"].axes if a.get_visible() and a.get_xlabel()]
    titles = [a.get_title().split("\n")[0] for a in main]
    assert titles == ["query V", "HMM, Acc = 0.7", "CRF, Acc = 0.8", "query NN", "HMM (EWT)"]
    with pytest.raises(ValueError, match="at least one"):
        thesis_figure([("empty", [])], tmp_path / "g.png", suptitle="s")


def test_overlay_shows_one_count_axis_for_all_models():
    good, bad = _results()
    fig, ax = plt.subplots()
    overlay_reliability(ax, [Curve("good", "", good), Curve("bad", "", bad)], title="q")
    (twin,) = [a for a in fig.axes if a is not ax]  # each model's own would print its ticks
    tallest = max(bar.get_height() for bar in twin.patches)
    assert twin.get_ylim()[1] >= tallest
    plt.close(fig)


def test_overlay_and_figure_draw_dollars_as_written(tmp_path, monkeypatch):
    # The overlay's legend and title and the figure's suptitle had gone to matplotlib
    # unescaped: "p$x^2$" came out as mathtext, unlike every other figure's text.
    good, bad = _results()
    fig, ax = plt.subplots()
    overlay_reliability(ax, [Curve("a$x^2$", "", good), Curve("b$", "", bad)], title="q$1$")
    assert [t.get_text() for t in ax.get_legend().get_texts()][1:] == [r"a\$x^2\$", r"b\$"]
    assert ax.get_title() == r"q\$1\$"
    fig.canvas.draw()  # a lone "$" would fail here, were it mathtext
    plt.close(fig)
    saved = {}
    monkeypatch.setattr(plt, "close", lambda figure: saved.setdefault("fig", figure))
    rows = [("r$", [Curve("m", "m", good)])]
    thesis_figure(rows, tmp_path / "f.png", suptitle="s$x$")
    assert saved["fig"].get_suptitle() == r"s\$x\$"


def test_a_rows_overlay_and_panels_share_one_x_axis(tmp_path, monkeypatch):
    """The overlay took its first model's own axis (a sharper second model's bins drawn at
    its ends), and each panel its own: one linear beside one logit."""
    s = torch.randn(2000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid(s), generator=torch.Generator().manual_seed(1))
    soft, sharp = (calibration_error_ci(torch.sigmoid(k * s), y) for k in (0.5, 8.0))
    saved = {}
    monkeypatch.setattr(plt, "close", lambda fig: saved.setdefault("fig", fig))
    thesis_figure([("q", [Curve("soft", "S", soft), Curve("sharp", "H", sharp)])],
                  tmp_path / "f.png", suptitle="s")  # fmt: skip
    main = [a for a in saved["fig"].axes if a.get_visible() and a.get_xlabel()]
    assert [a.get_xscale() for a in main] == ["logit"] * 3
    assert len({a.get_xlim() for a in main}) == 1
