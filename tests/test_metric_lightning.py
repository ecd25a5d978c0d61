"""CalibrationError inside a LightningModule trained with precision="bf16-true" (CPU)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from lightning.pytorch import LightningModule, Trainer
from torch.utils.data import DataLoader, TensorDataset

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error
from calib_metrics.metric import _SKETCH_STATES as SKETCH_STATES

N_CLASSES = 3


class Classifier(LightningModule):
    """A linear classifier that keeps two metrics as attributes (cast with the module)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(4, N_CLASSES)
        self.streaming = CalibrationError(num_classes=N_CLASSES, streaming=True)
        self.exact = CalibrationError(num_classes=N_CLASSES)
        self.seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x).float(), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        # float32 probabilities from a bf16 model: the metric must keep them as given.
        probs = self.net(x).float().softmax(-1)
        self.seen.append((probs, y))
        self.streaming.update(probs, y)
        self.exact.update(probs, y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader(seed: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(96, 4, generator=g)
    y = (x[:, :N_CLASSES] + torch.randn(96, N_CLASSES, generator=g)).argmax(-1)
    return DataLoader(TensorDataset(x, y), batch_size=32)


def make_trainer(tmp_path: Any) -> Trainer:
    return Trainer(
        default_root_dir=tmp_path,
        precision="bf16-true",
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )


@pytest.mark.filterwarnings("ignore")
def test_bf16_true_training_keeps_the_metric_states(tmp_path: Any) -> None:
    model = Classifier()
    make_trainer(tmp_path).fit(model, loader(0), loader(1))
    assert model.net.weight.dtype == torch.bfloat16  # the module was cast
    # A second run casts the module again, with pairs already stored.
    make_trainer(tmp_path).validate(model, loader(2), verbose=False)
    assert model.net.weight.dtype == torch.bfloat16
    for name in SKETCH_STATES:
        assert getattr(model.streaming, name).dtype == torch.float64, name
    assert model.streaming.rows_seen.dtype == torch.int64
    for metric in (model.streaming, model.exact):
        assert {p.dtype for p in metric.probs} == {torch.float32}
    probs = torch.cat([p for p, _ in model.seen])
    target = torch.cat([t for _, t in model.seen])
    one_hot = torch.nn.functional.one_hot(target, N_CLASSES)
    want = calibration_error(probs, one_hot, bin_size="auto", debias=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few bins on this tiny set
        torch.testing.assert_close(model.exact.compute(), want, rtol=0, atol=0)
        fresh = CalibrationError(num_classes=N_CLASSES, streaming=True)
        fresh.update(probs, target)
        torch.testing.assert_close(model.streaming.compute(), fresh.compute())
        model.streaming.reset()
        model.streaming.update(probs, target)  # reset() recovers the float64 sketch
        assert model.streaming.cell_count.dtype == torch.float64
