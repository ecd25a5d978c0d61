"""``CalibrationComparison.plot()``: both models' reliability diagrams side by side, titled
with the paired difference. Before, torchmetrics' bare ``NotImplementedError``."""

from __future__ import annotations

import warnings

import matplotlib
import pytest
import torch

from calib_metrics import CalibrationComparison

matplotlib.use("Agg")
G = torch.Generator().manual_seed(0)
Q = torch.rand(2000, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G)
OVERCONFIDENT = torch.where(Q > 0.5, Q.sqrt(), Q**2)


def test_plot_draws_both_models_and_titles_the_difference() -> None:
    metric = CalibrationComparison(n_samples=200)
    metric.update(OVERCONFIDENT, Q, Y)
    fig, axes = metric.plot()
    assert [ax.get_title().splitlines()[0] for ax in axes] == ["a", "b"]
    assert "debiased pair bootstrap" in axes[0].get_title()
    title = fig.get_suptitle()
    assert title.startswith("a − b = +0.1") and "p < 0.01" in title
    other, _ = metric.plot(metric.compute())  # val= takes a result
    assert other.get_suptitle() == title


def test_plot_without_an_interval_says_so() -> None:
    metric = CalibrationComparison(n_samples=50)
    metric.update(Q[:5], OVERCONFIDENT[:5], Y[:5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer than 10 pairs: no interval
        fig, _ = metric.plot()
    assert "no interval" in fig.get_suptitle()


def test_plot_refuses_what_one_diagram_would_mislead_on() -> None:
    probs = torch.softmax(torch.randn(300, 3, generator=G), -1)
    target = torch.multinomial(probs, 1, generator=G).squeeze(1)
    metric = CalibrationComparison(num_classes=3, mode="classwise", n_samples=50)
    metric.update(probs, probs, target)
    with pytest.raises(ValueError, match="class by class"):
        metric.plot()
    metric = CalibrationComparison(n_samples=50)
    metric.update(OVERCONFIDENT, Q, Y)
    with pytest.raises(ValueError, match="ax"):
        metric.plot(ax=object())
