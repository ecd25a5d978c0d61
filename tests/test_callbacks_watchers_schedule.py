"""Validation by batch count across epochs (``check_val_every_n_epoch=None``) is taken as
validating every so many epochs only where each validation ends an epoch. In each fit
below the count is a whole number of the first epoch's batches, yet the Trainer validates
at other epochs: the monitor's warning must see those epochs as not known ahead (and so
claim no outcome), not as every count / batches epochs."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import EarlyStopping
from test_callbacks import TinyTagger, loaders, monitor, tagging_data, trainer
from torch.utils.data import DataLoader, IterableDataset

from calib_metrics.callbacks._watchers import Fit, fit_of

BY_COUNT = {"check_val_every_n_epoch": None, "val_check_interval": 6}


class _Schedule(Callback):
    """The fit the warning sees as training starts, and the epochs validated after."""

    def __init__(self) -> None:
        self.fit: Fit | None = None
        self.validated: list[int] = []

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self.fit = fit_of(trainer)

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not trainer.sanity_checking:
            self.validated.append(trainer.current_epoch)


def _schedule(
    tmp_path: Path,
    model: LightningModule,
    train: Any = None,
    epochs: int = 6,
    ckpt_path: Path | None = None,
    save_to: Path | None = None,
    **options: Any,
) -> _Schedule:
    """The schedule of a fit of ``model`` on ``train`` (the module's own loader when None),
    from ``ckpt_path``; a checkpoint of its end saved to ``save_to``."""
    schedule = _Schedule()
    run = trainer(tmp_path, epochs, callbacks=[schedule], logger=False, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's, of few batches
        run.fit(model, train, loaders()[1], ckpt_path=ckpt_path)
    if save_to is not None:
        run.save_checkpoint(save_to)
    return schedule


class _Stream(IterableDataset):
    """32 sequences, 2 batches of 16, and no length."""

    def __iter__(self) -> Any:
        data = tagging_data(48)
        return (data[i] for i in range(32))


@pytest.mark.parametrize("limit", [3, None])
def test_a_training_loader_of_no_length_leaves_the_epochs_undecided(
    tmp_path: Path, limit: int | None
) -> None:
    """Given limit_train_batches=3, Lightning counts 3 batches an epoch of a loader of no
    length, which runs out after 2: taken as validating every 2nd epoch (1, 3, 5), the fit
    validated at epochs 2 and 5, and EarlyStopping beside a monitor of every 2nd epoch
    stopped the fit at epoch 2 without a warning. Without a limit the count is inf."""
    stream = DataLoader(_Stream(), batch_size=16)
    schedule = _Schedule()
    callbacks = [
        schedule,
        monitor(every_n_epochs=2, save_png=False),
        EarlyStopping("val/calib_err"),
    ]
    run = trainer(
        tmp_path, 6, callbacks=callbacks, logger=False, limit_train_batches=limit, **BY_COUNT
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="which is not available"):
            run.fit(TinyTagger(), stream, loaders()[1])
    said = [str(w.message) for w in caught if "reads a tag this monitor" in str(w.message)]
    assert schedule.fit == Fit(1, epochs_known=False, by_count=True)
    assert schedule.validated == [2]
    assert len(said) == 1 and "at epochs not known ahead, so either can happen" in said[0]


def test_a_resumed_fit_whose_earlier_epochs_were_shorter_is_undecided(tmp_path: Path) -> None:
    """Epoch 0 of 2 batches, then epochs of 3 validated every 6 batches from the fit's
    first: at batch 6 (in epoch 2) and 12 (in epoch 4), not at every 2nd epoch's end."""
    checkpoint = tmp_path / "epoch0.ckpt"
    short = {**BY_COUNT, "limit_train_batches": 2}
    _schedule(tmp_path, TinyTagger(), loaders()[0], epochs=1, save_to=checkpoint, **short)
    resumed = _schedule(tmp_path, TinyTagger(), loaders()[0], ckpt_path=checkpoint, **BY_COUNT)
    assert resumed.fit == Fit(1, first_epoch=1, epochs_known=False, by_count=True)
    assert resumed.validated == [2, 4]


class _Shrinking(TinyTagger):
    """3 training batches at epoch 0, 2 at every later one."""

    def train_dataloader(self) -> DataLoader:
        return DataLoader(tagging_data(48 if self.current_epoch == 0 else 32), batch_size=16)


def test_reloaded_training_loaders_leave_the_epochs_undecided(tmp_path: Path) -> None:
    schedule = _schedule(tmp_path, _Shrinking(), reload_dataloaders_every_n_epochs=1, **BY_COUNT)
    assert schedule.fit == Fit(1, epochs_known=False, by_count=True)
    assert schedule.validated == [2, 5]  # at batches 6 and 12: not every 2nd epoch's end


class _StepOnIterator(TinyTagger):
    """A training_step that takes the dataloader_iter."""

    def training_step(self, dataloader_iter: Any) -> torch.Tensor:  # type: ignore[override]
        batch, _, _ = next(dataloader_iter)
        return self._loss(batch)[0]


def test_a_training_step_on_the_dataloader_iter_leaves_the_epochs_undecided(
    tmp_path: Path,
) -> None:
    schedule = _schedule(tmp_path, _StepOnIterator(), loaders()[0], **BY_COUNT)
    assert schedule.fit == Fit(1, epochs_known=False, by_count=True)
    assert schedule.validated == [0, 1, 2, 3, 4, 5]  # at every epoch's end too
