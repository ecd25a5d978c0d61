"""CalibrationError's one-hot warning: at the caller's line through a MetricCollection
(a fixed stacklevel had named torchmetrics' frame), decided on a batch that can tell (a
one-row first batch of two multi-label pairs had warned falsely and disarmed the check),
and armed again by reset()."""

from __future__ import annotations

import warnings

import torch
from torchmetrics import MetricCollection

from calib_metrics import CalibrationError


def _one_hot(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(torch.randn(n, 2, generator=g, dtype=torch.float64), -1)
    target = torch.nn.functional.one_hot(torch.multinomial(probs, 1, generator=g)[:, 0], 2)
    return probs, target


def _one_hot_warnings(run) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if "looks one-hot" in str(w.message)]


def test_a_collection_warns_at_the_callers_line() -> None:
    probs, target = _one_hot(100)
    for call in ("update", "forward"):
        collection = MetricCollection({"ce": CalibrationError(n_samples=20)})
        run = collection.update if call == "update" else collection
        said = _one_hot_warnings(lambda run=run: run(probs, target))
        assert [w.filename for w in said] == [__file__], call


def test_a_one_row_batch_does_not_decide() -> None:
    metric = CalibrationError(n_samples=20)
    row = torch.tensor([[0.3, 0.705]], dtype=torch.float64), torch.tensor([[0, 1]])
    assert not _one_hot_warnings(lambda: metric.update(*row))
    assert len(_one_hot_warnings(lambda: metric.update(*_one_hot(100)))) == 1


def test_reset_arms_the_check_again() -> None:
    metric = CalibrationError(n_samples=20)
    assert len(_one_hot_warnings(lambda: metric.update(*_one_hot(100)))) == 1
    metric.reset()
    assert len(_one_hot_warnings(lambda: metric.update(*_one_hot(100, seed=1)))) == 1
