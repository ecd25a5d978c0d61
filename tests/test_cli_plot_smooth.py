"""``--plot-smooth``: evaluate's and compare's ``--plot`` get the smooth curve and its band."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from calib_metrics import cli, plot
from calib_metrics.functional import smooth_reliability_curve


@pytest.fixture
def drawn(monkeypatch) -> list[tuple[object, object]]:
    """Every reliability diagram the command draws: (its smooth argument, its axes)."""
    calls: list[tuple[object, object]] = []
    original = plot.reliability_diagram

    def recording(*args, **kwargs):
        fig, ax = original(*args, **kwargs)
        calls.append((kwargs.get("smooth"), ax))
        return fig, ax

    monkeypatch.setattr(plot, "reliability_diagram", recording)
    return calls


@pytest.fixture
def pairs(tmp_path: Path) -> tuple[Path, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    q = torch.rand(600, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    sharp = torch.where(q > 0.5, q.sqrt(), q**2)
    path = tmp_path / "pairs.csv"
    rows = [
        f"{a!r},{b!r},{int(c)},{i // 6}"
        for i, (a, b, c) in enumerate(zip(q.tolist(), sharp.tolist(), y.tolist()))
    ]
    path.write_text("prob,prob_b,label,sentence_id\n" + "\n".join(rows) + "\n")
    return path, q, sharp, y


def run(capsys, *argv) -> tuple[int, str]:
    code = cli.main([str(a) for a in argv])
    return code, capsys.readouterr().err


def band_labels(ax) -> list[str]:
    return [c.get_label() for c in ax.collections if "σ-smoothed curve" in c.get_label()]


def test_evaluate_draws_the_smooth_curve_with_its_band(tmp_path, capsys, pairs, drawn) -> None:
    path, q, _, y = pairs
    png = tmp_path / "diagram.png"
    options = ("--samples", "20", "--confidence", "0.9", "--seed", "4", "--plot", png)
    code, err = run(capsys, "evaluate", path, *options, "--plot-smooth")
    assert code == 0, err
    ((smooth, ax),) = drawn
    expected = smooth_reliability_curve(
        q, y, confidence=0.9, generator=torch.Generator().manual_seed(4)
    )
    for field in ("curve", "lower", "upper", "bandwidth"):
        torch.testing.assert_close(getattr(smooth, field), getattr(expected, field))
    assert band_labels(ax) == ["90% band of the σ-smoothed curve"]
    assert png.stat().st_size > 0
    drawn.clear()
    code, err = run(capsys, "evaluate", path, *options)  # without the flag: bins only
    assert code == 0, err
    assert drawn[0][0] is None and band_labels(drawn[0][1]) == []


def test_compare_draws_both_models_with_group_bands(tmp_path, capsys, pairs, drawn) -> None:
    path, q, sharp, y = pairs
    png = tmp_path / "both.png"
    argv = ("compare", path, "--probs", "prob", "--probs-b", "prob_b", "--groups", "sentence_id")
    code, err = run(capsys, *argv, "--samples", "20", "--plot", png, "--plot-smooth")
    assert code == 0, err
    assert png.stat().st_size > 0 and len(drawn) == 2
    # integer group ids are numbered in numeric order, as the API numbers them
    sentence = torch.arange(600) // 6
    for (smooth, ax), probs in zip(drawn, (q, sharp), strict=True):
        expected = smooth_reliability_curve(
            probs, y, groups=sentence, generator=torch.Generator().manual_seed(0)
        )
        torch.testing.assert_close(smooth.upper, expected.upper)
        assert band_labels(ax) == ["95% band of the σ-smoothed curve"]


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_plot_smooth_without_a_figure_is_one_line(capsys, pairs, command) -> None:
    extra = ("--probs-b", "prob_b") if command == "compare" else ()
    code, err = run(capsys, command, pairs[0], *extra, "--plot-smooth")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "give --plot FILE.png or --html FILE.html" in err


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_the_page_draws_the_smooth_curves_the_figure_draws(
    tmp_path, capsys, pairs, drawn, command
) -> None:
    """--plot-smooth had been refused beside --html alone, and the page's diagrams never
    had the curve; the page and --plot now draw the same curves, made once."""
    extra = ("--probs", "prob", "--probs-b", "prob_b") if command == "compare" else ()
    page = tmp_path / "page.html"
    code, err = run(capsys, command, pairs[0], *extra, "--samples", "20", "--html", page,
                    "--plot-smooth")  # fmt: skip
    assert code == 0, err
    models = 2 if command == "compare" else 1
    assert len(drawn) == models and all(smooth is not None for smooth, _ in drawn)
    assert page.read_text().count("band of the σ-smoothed curve") == models
    drawn.clear()
    png = tmp_path / "figure.png"
    code, err = run(capsys, command, pairs[0], *extra, "--samples", "20", "--html", page,
                    "--plot", png, "--plot-smooth")  # fmt: skip
    assert code == 0, err
    on_page, on_figure = drawn[models:], drawn[:models]  # --plot is written first
    assert all(a is b for (a, _), (b, _) in zip(on_page, on_figure, strict=True))


def test_compare_bands_of_one_vs_rest_items_resample_items(tmp_path, monkeypatch) -> None:
    """The bands had resampled an item's one-vs-rest pairs apart, beside a comparison (and
    a figure title) resampling items."""
    import numpy as np

    import calib_metrics.cli as cli

    drawn = []
    curve_of = cli.smooth_curve_for_plot

    def recording(args, probs, target, groups=None, mode=None):
        drawn.append(groups)
        return curve_of(args, probs, target, groups, mode)

    monkeypatch.setattr(cli, "smooth_curve_for_plot", recording)
    g = torch.Generator().manual_seed(0)
    probs = (torch.randn(300, 3, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    for name in ("a", "b"):
        np.savez(tmp_path / f"{name}.npz", probs=probs.numpy(), target=target.numpy())
    argv = ["compare", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--samples", "50"]
    assert cli.main([*argv, "--plot", str(tmp_path / "p.png"), "--plot-smooth"]) == 0
    assert len(drawn) == 2 and all(torch.equal(ids, torch.arange(300)) for ids in drawn)
