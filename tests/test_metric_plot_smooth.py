"""``CalibrationError.plot(smooth=True)``: the smooth reliability curve and its band on the
metric's own diagram (before, only the functions and the command line drew it)."""

from __future__ import annotations

import matplotlib
import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import smooth_calibration_error

matplotlib.use("Agg")
G = torch.Generator().manual_seed(0)
Q = torch.rand(3000, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q.sqrt(), generator=G)
P = torch.softmax(2 * torch.randn(500, 3, generator=G, dtype=torch.float64), -1)
C = torch.multinomial(P, 1, generator=G).squeeze(1)


def _smooth_label(ax) -> str:
    (label,) = [
        t.get_text() for t in ax.get_legend().get_texts() if t.get_text().startswith("smooth curve")
    ]
    return label


@pytest.mark.parametrize(
    ("options", "probs", "target", "mode"),
    [({}, Q, Y, "one_vs_rest"), ({"num_classes": 3}, P, C, "one_vs_rest"),
     ({"num_classes": 3, "mode": "top_label"}, P, C, "top_label")],
)  # fmt: skip
def test_the_smooth_curve_is_drawn_on_the_metrics_diagram(options, probs, target, mode) -> None:
    metric = CalibrationError(n_samples=100, **options)
    metric.update(probs, target)
    _, ax = metric.plot(smooth=True)
    want = smooth_calibration_error(probs, target, mode=mode).item()
    assert _smooth_label(ax).startswith(f"smooth curve (smECE {want:.4f}")
    _, plain = metric.plot()
    assert not any("smooth" in t.get_text() for t in plain.get_legend().get_texts())


def _drawn_curve(ax) -> torch.Tensor:
    (line,) = [k for k in ax.get_lines() if "smooth curve" in k.get_label()]
    drawn = torch.as_tensor(line.get_ydata(), dtype=torch.float64)
    return drawn[~drawn.isnan()]  # broken off where no q lies


def test_a_streaming_metric_past_its_buffer_draws_its_sketchs_curve() -> None:
    """Past its buffer a streaming metric had refused smooth=True ("needs the pairs"),
    though its sketch holds what the curve needs: its cells' curve is drawn, with the error
    compute_smooth() gives, within a rounding of the exact curve of the same pairs."""
    from calib_metrics.functional import smooth_curve_from_histogram, smooth_reliability_curve

    metric = CalibrationError(streaming=True, resolution=2**16, n_samples=50, seed=3)
    probs, target = Q.repeat(400), Y.repeat(400)  # 1.2·10⁶ rows: folded into the sketch
    metric.update(probs, target)
    assert not metric._exact_pairs()
    with pytest.warns(UserWarning, match="cells per bin"):
        _, ax = metric.plot(smooth=True)
    want = smooth_curve_from_histogram(
        *metric._histograms()[0], n_samples=50, generator=torch.Generator().manual_seed(3)
    )
    drawn = _drawn_curve(ax)
    assert len(drawn) > 100
    assert torch.isclose(drawn[:, None], want.curve[None]).any(1).all()
    assert _smooth_label(ax).startswith(f"smooth curve (smECE {metric.compute_smooth():.4f}")
    exact = smooth_reliability_curve(probs, target, n_samples=50)
    assert (want.curve - exact.curve).abs().nan_to_num().max() < 1e-4
    assert float(want.error) == pytest.approx(float(exact.error), abs=1e-4)
    small = CalibrationError(streaming=True, n_samples=100)
    small.update(Q, Y)  # still within its buffer: the pairs' own curve
    _, ax = small.plot(smooth=True)
    want = smooth_calibration_error(Q, Y).item()
    assert _smooth_label(ax).startswith(f"smooth curve (smECE {want:.4f}")


@pytest.mark.parametrize("average", ["none", "macro", "weighted"])
def test_per_class_error_bars_refuse_a_smooth_curve(average) -> None:
    metric = CalibrationError(num_classes=3, average=average)
    metric.update(P, C)
    with pytest.raises(ValueError, match=r"classes' errors .*or its diagram and curve with mode="):
        metric.plot(smooth=True)


def test_classwise_panels_carry_each_drawn_classs_smooth_curve() -> None:
    """plot(smooth=True) had been refused for the classwise panels (the command line drew
    them): each drawn class's panel carries the curve of that class's pairs, drawn from
    one generator of the metric's seed, class after class, for the drawn classes alone."""
    from calib_metrics.functional import smooth_reliability_curve

    probs = torch.softmax(2 * torch.randn(700, 14, generator=G, dtype=torch.float64), -1)
    target = torch.multinomial(probs, 1, generator=G).squeeze(1)
    metric = CalibrationError(num_classes=14, mode="classwise", n_samples=100, seed=7)
    metric.update(probs, target)
    _, axes = metric.plot(smooth=True)
    assert len(axes) == 12
    generator = torch.Generator().manual_seed(7)
    for ax in axes:
        c = int(ax.get_title().split(" · ")[0].split()[1])
        want = smooth_reliability_curve(probs[:, c], target == c, generator=generator)
        (line,) = [k for k in ax.get_lines() if k.get_label().endswith("smooth curve")]
        drawn_curve = torch.as_tensor(line.get_ydata(), dtype=want.curve.dtype)
        drawn_curve = drawn_curve[~drawn_curve.isnan()]  # broken off where no q lies
        assert len(drawn_curve) > 100
        assert torch.isclose(drawn_curve[:, None], want.curve[None]).any(1).all()
        # The band is the draws' (the curve is not): of the generator's draws, class after class.
        band = _band_edges(ax, line.get_color())
        assert torch.isclose(band[:, None], torch.cat([want.lower, want.upper])[None]).any(1).all()
        assert ax.get_title().endswith(f"smECE {want.error.item():.4f}")
    _, plain = metric.plot()
    assert not any(k.get_label().endswith("smooth curve") for k in plain[0].get_lines())


def test_classwise_smooth_panels_without_class_0_drawn() -> None:
    """The curves' generator had been made on the device of class 0's pairs, which are
    not kept when class 0 is not drawn: KeyError: 0."""
    probs = torch.softmax(torch.randn(1500, 14, generator=G, dtype=torch.float64), -1)
    target = torch.multinomial(probs, 1, generator=G).squeeze(1)
    target[target == 0] = 1
    metric = CalibrationError(num_classes=14, mode="classwise", n_samples=20)
    metric.update(probs, target)
    _, axes = metric.plot(smooth=True)
    titles = [ax.get_title() for ax in axes]
    assert len(axes) == 12 and not any(t.startswith("class 0 ·") for t in titles)
    assert all("smECE" in t for t in titles)


def test_a_classwise_streaming_metric_past_its_buffer_draws_each_classs_curve() -> None:
    """Each drawn class's panel carries the curve of that class's sketch cells (it had
    been refused), from one generator of the metric's seed, class after class."""
    from calib_metrics.functional import smooth_curve_from_histogram

    metric = CalibrationError(
        num_classes=3, mode="classwise", streaming=True, resolution=2**12, n_samples=30, seed=5
    )
    metric.update(P.repeat(900, 1), C.repeat(900))  # 450,000 rows: folded into the sketch
    assert not metric._exact_pairs()
    with pytest.warns(UserWarning, match="cells per bin"):
        _, axes = metric.plot(smooth=True)
    generator = torch.Generator().manual_seed(5)
    for c, (ax, cells) in enumerate(zip(axes, metric._histograms(), strict=True)):
        assert ax.get_title().startswith(f"class {c} ·")
        want = smooth_curve_from_histogram(*cells, n_samples=30, generator=generator)
        assert torch.isclose(_drawn_curve(ax)[:, None], want.curve[None]).any(1).all()
        assert ax.get_title().endswith(f"smECE {want.error.item():.4f}")


def test_smooth_takes_no_val_whose_pairs_it_cannot_know() -> None:
    """A given result had been drawn beside the curve of the state's other pairs (and a
    list of results had dropped the curve without a word)."""
    metric = CalibrationError(n_samples=50)
    metric.update(Q, Y)
    result = metric.compute_result()
    for val in (result, [result, result]):
        with pytest.raises(ValueError, match="leave val=None"):
            metric.plot(val, smooth=True)


def test_the_curves_warnings_are_the_metrics_at_the_users_line() -> None:
    """They had named smooth_reliability_curve and pointed into the library."""
    import warnings

    metric = CalibrationError(n_samples=50)
    metric.update(Q[:5], Y[:5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.plot(smooth=True)
    mine = [w for w in caught if "5 pairs" in str(w.message)]
    assert mine and all(str(w.message).startswith("CalibrationError: ") for w in mine)
    assert {w.filename for w in mine} == {__file__}


def _band_edges(ax, color: str) -> torch.Tensor:
    """The y values of the band drawn in ``color`` on ``ax`` (its polygon's vertices)."""
    from matplotlib.colors import same_color

    bands = [c for c in ax.collections if c.get_label().endswith("band of the σ-smoothed curve")]
    (band,) = [c for c in bands if same_color(c.get_facecolor()[0][:3], color)]
    edges = [torch.as_tensor(path.vertices[:, 1]) for path in band.get_paths()]  # its runs
    return torch.cat(edges).double()
