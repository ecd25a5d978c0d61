"""Drawing a classwise metric from its listed results: each call draws every class's
interval (n_samples resamplings a class; 47 classes took about a minute a call), so the
README shows ``metric.plot(metric.compute_class_results())``, which must draw them once."""

from __future__ import annotations

from unittest import mock

import matplotlib
import torch

from calib_metrics import CalibrationError

matplotlib.use("Agg")


def test_plotting_the_listed_class_results_draws_no_interval_again() -> None:
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(900, 3, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    metric = CalibrationError(num_classes=3, mode="classwise", n_samples=50, seed=0)
    metric.update(probs, target)
    listed = metric.compute_class_results()
    with mock.patch.object(CalibrationError, "_results", side_effect=AssertionError("redrawn")):
        fig, _ = metric.plot(listed)
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert len(titles) == 3
    for result, title in zip(listed, titles):
        assert f"{result.error.item():.4f}" in title
