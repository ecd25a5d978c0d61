"""A streaming metric that has folded its kept pairs into the sketch sends later rows to
the sketch directly. Loading a state dict must reset that to what the loaded state holds:
once, a metric that had folded and then loaded an early (unfolded) checkpoint still sent
its next batches to the sketch, while compute() — seeing few rows — read the kept pairs
only: those batches were lost (or, with no kept pairs, compute raised)."""

from __future__ import annotations

import torch

from calib_metrics import CalibrationError

OPTIONS = {"streaming": True, "resolution": 2**10, "bin_size": 50}  # keeps 2,048 rows


def _data(n: int = 20_000):
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(n, generator=g, dtype=torch.float64)
    return probs, torch.bernoulli(probs**1.5, generator=g).long()


def _metric() -> CalibrationError:
    metric = CalibrationError(**OPTIONS)
    metric.persistent(True)
    return metric


def _feed(metric: CalibrationError, probs, target, rows: range) -> None:
    for i in rows:
        metric.update(probs[i : i + 1000], target[i : i + 1000])


def test_folded_metric_loading_an_unfolded_state_keeps_its_next_batches() -> None:
    probs, target = _data()
    early = _metric()
    early.update(probs[:500], target[:500])
    reused = _metric()
    _feed(reused, probs, target, range(0, 20_000, 1000))  # folds into the sketch
    reused.load_state_dict(early.state_dict())
    reused.update(probs[500:1500], target[500:1500])
    want = _metric()
    want.update(probs[:1500], target[:1500])
    assert reused.compute_result().bins.count.sum().item() == 1500
    torch.testing.assert_close(reused.compute(), want.compute())


def test_fresh_metric_loading_a_folded_state_keeps_streaming() -> None:
    probs, target = _data()
    full = _metric()
    _feed(full, probs, target, range(0, 19_000, 1000))
    resumed = _metric()
    resumed.load_state_dict(full.state_dict())
    for metric in (full, resumed):
        metric.update(probs[19_000:], target[19_000:])
    torch.testing.assert_close(resumed.compute(), full.compute())
    assert resumed.compute_result().bins.count.sum().item() == 20_000
