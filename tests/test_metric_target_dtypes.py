"""A multiclass target of bools is refused by ``update`` as by ``forward`` and the
functional API: once, ``update`` accepted it and every later ``compute()`` raised, so the
pairs accumulated before were lost to the user."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError


def _batch():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(200, 2, generator=g), -1)
    return probs, torch.randint(0, 2, (200,), generator=g)


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
@pytest.mark.parametrize("streaming", [False, True])
def test_update_refuses_bool_class_ids_and_keeps_its_state(mode, streaming) -> None:
    probs, target = _batch()
    metric = CalibrationError(num_classes=2, mode=mode, streaming=streaming, bin_size=20)
    metric.update(probs, target)
    before = metric.compute()
    with pytest.raises(ValueError, match=r"integer class ids, got dtype torch\.bool"):
        metric.update(probs, target.bool())
    torch.testing.assert_close(metric.compute(), before)


def test_comparison_update_refuses_bool_class_ids() -> None:
    probs, target = _batch()
    metric = CalibrationComparison(num_classes=2, n_samples=50)
    with pytest.raises(ValueError, match=r"integer class ids, got dtype torch\.bool"):
        metric.update(probs, probs.flip(0), target.bool())
