"""Which validation logits TemperatureRecalibration fits on: which dataloaders, and whether
the weights changed after they were collected."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import test_callbacks_recalibration as _helpers
import torch
from lightning.pytorch import Trainer
from torch.utils.data import DataLoader, TensorDataset

from calib_metrics.callbacks import TemperatureRecalibration
from calib_metrics.recalibration import TemperatureScaling

# The overconfident tagger and its data, from test_callbacks_recalibration.py.
PAD, Overconfident, _data = _helpers.PAD, _helpers.Overconfident, _helpers._data


class TwoLoaders(Overconfident):
    def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> dict:
        return super().validation_step(batch, batch_idx)


def _noise(n: int) -> TensorDataset:
    """Targets drawn from a 10x flatter softmax than the first set's: its temperature is far
    above the first set's. (Targets unrelated to the inputs have no finite temperature,
    and are refused.)"""
    x, y = _data(n, seed=3).tensors
    g = torch.Generator().manual_seed(4)
    flat = torch.softmax(x @ _helpers.TRUE_WEIGHT / 10, -1).reshape(-1, 3)
    noisy = torch.multinomial(flat, 1, generator=g).reshape(y.shape)
    return TensorDataset(x, noisy.masked_fill(y == PAD, PAD))


def _run(**trainer_options: Any) -> Trainer:
    options: dict[str, Any] = {
        "max_epochs": 1, "accelerator": "cpu", "logger": False, "enable_checkpointing": False,
        "enable_progress_bar": False, "enable_model_summary": False, "num_sanity_val_steps": 0,
    }  # fmt: skip
    return Trainer(**(options | trainer_options))


def _temperature(model: Overconfident, *sets: TensorDataset) -> float:
    """The temperature fitted directly on the model's logits of ``sets``, pooled."""
    x = torch.cat([s.tensors[0] for s in sets])
    y = torch.cat([s.tensors[1] for s in sets]).reshape(-1)
    with torch.no_grad():
        logits = model.logits(x).reshape(-1, 3)
    keep = y != PAD
    return TemperatureScaling().fit(logits[keep], y[keep]).temperature.item()


@pytest.mark.parametrize("choice", [None, 0, [1], "all"])
def test_the_temperature_is_fitted_on_the_chosen_dataloaders(choice: Any) -> None:
    """Two validation dataloaders were pooled without a word: the noise set pulled T up."""
    torch.manual_seed(0)
    first, noise = _data(200, seed=1), _noise(200)
    options = {} if choice is None else {"dataloader_idx": choice}
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50, **options)
    model = TwoLoaders()
    val = [DataLoader(first, batch_size=64), DataLoader(noise, batch_size=64)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run(callbacks=[callback]).fit(model, DataLoader(_data(100, seed=0), batch_size=50), val)
    told = [str(w.message) for w in caught if "validation dataloaders" in str(w.message)]
    fitted_on = (noise,) if choice == [1] else (first, noise) if choice == "all" else (first,)
    expected = _temperature(model, *fitted_on)
    assert callback.recalibrator.temperature.item() == pytest.approx(expected, rel=1e-6)
    assert _temperature(model, first) < 0.5 * _temperature(model, first, noise)  # distinct
    if choice is None:
        (message,) = told
        assert "fitted on dataloader 0 alone" in message and "dataloader_idx='all'" in message
    else:
        assert told == []


def test_a_dataloader_the_trainer_lacks_is_named_at_the_first_validation() -> None:
    callback = TemperatureRecalibration(ignore_index=PAD, dataloader_idx=[0, 2])
    val = [DataLoader(_data(64, seed=1), batch_size=64)] * 2
    run = _run(callbacks=[callback], num_sanity_val_steps=1)
    with pytest.raises(ValueError, match=r"names dataloader 2, but the trainer has 2 validation"):
        run.fit(TwoLoaders(), DataLoader(_data(64, seed=0), batch_size=64), val)


@pytest.mark.parametrize("bad", [-1, True, "first", [], [0, 0], 1.0])
def test_a_bad_dataloader_idx_is_refused_up_front(bad: Any) -> None:
    with pytest.raises(ValueError, match="dataloader_idx must be"):
        TemperatureRecalibration(dataloader_idx=bad)


@pytest.mark.parametrize(("max_epochs", "stale"), [(3, True), (4, False)])
def test_logits_of_earlier_weights_are_named(max_epochs: int, stale: bool) -> None:
    """check_val_every_n_epoch=2, max_epochs=3: T was fitted on epoch 1's logits and put on
    the weights of epoch 2 without a word."""
    torch.manual_seed(0)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    train = DataLoader(_data(100, seed=0), batch_size=50)  # 2 steps an epoch
    run = _run(callbacks=[callback], max_epochs=max_epochs, check_val_every_n_epoch=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.fit(Overconfident(), train, DataLoader(_data(64, seed=1), batch_size=64))
    told = [str(w.message) for w in caught if "training went on" in str(w.message)]
    assert callback.recalibrator is not None  # fitted all the same
    if not stale:
        assert told == []
        return
    (message,) = told
    assert "the last validation ran at epoch 1 (step 4), and training went on to step 6" in message


def test_validate_and_test_after_fit_neither_check_nor_collect() -> None:
    """Fitted with dataloader_idx=1, ``trainer.validate(model, one_loader)`` raised "names
    dataloader 1, but the trainer has 1 validation dataloader": the check (and the
    "dataloader 0 alone" warning, and the collection) ran in runs that fit nothing."""
    torch.manual_seed(0)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50, dataloader_idx=1)
    val = [DataLoader(_data(64, seed=1), batch_size=64), DataLoader(_noise(64), batch_size=64)]
    run = _run(callbacks=[callback])
    model = TwoLoaders()
    run.fit(model, DataLoader(_data(64, seed=0), batch_size=64), val)
    fitted = model.calibration_temperature
    run.validate(model, val[0], verbose=False)  # one loader: no dataloader 1, and no error
    assert callback._logits == []  # nothing kept from a run that fits nothing
    assert model.calibration_temperature == fitted

    # Fitted on one loader, validated on two with the default dataloader_idx: no fit, so
    # nothing is "fitted on dataloader 0 alone".
    plain = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    run = _run(callbacks=[plain])
    run.fit(model, DataLoader(_data(64, seed=0), batch_size=64), val[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.validate(model, val, verbose=False)
    assert not [w for w in caught if "validation dataloaders" in str(w.message)]


def test_logits_of_a_validate_run_are_not_fitted_by_a_later_fit() -> None:
    """``trainer.validate(m)`` then ``fit(limit_val_batches=0)`` fitted T on the untrained
    weights' logits of the validate run, and the stale warning named epoch 0."""
    torch.manual_seed(0)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    model, val = Overconfident(), DataLoader(_data(64, seed=1), batch_size=64)
    _run(callbacks=[callback]).validate(model, val, verbose=False)
    run = _run(callbacks=[callback], limit_val_batches=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.fit(model, DataLoader(_data(64, seed=0), batch_size=64), val)
    told = [str(w.message) for w in caught if "TemperatureRecalibration" in str(w.message)]
    assert callback.recalibrator is None and not hasattr(model, "calibration_temperature")
    assert len(told) == 1 and "no validation logits were seen" in told[0]
