"""A ModelCheckpoint or EarlyStopping reading a tag the monitor logs only every n-th epoch:
read before the monitor's first measured epoch, Lightning stops the fit with an error that
names no monitor; read after it, a checkpoint is scored by the last measured epoch's value
without a word. The monitor says which at setup, with what works instead."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from test_callbacks import TinyTagger, loaders, monitor, trainer

from calib_metrics.callbacks._watchers import unseen_tag_messages


def _fit(tmp_path: Path, callbacks: list[Any], **options: Any) -> tuple[list[str], str]:
    """The monitor's warnings of such callbacks in a 4-epoch fit, and the error that
    stopped the fit ("" when none did)."""
    train, val = loaders()
    run = trainer(
        tmp_path, 4, callbacks=callbacks, logger=False, enable_checkpointing=True, **options
    )
    error = ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run.fit(TinyTagger(), train, val)
        except (MisconfigurationException, RuntimeError) as stop:
            error = str(stop)
    return [str(w.message) for w in caught if "reads a tag this monitor" in str(w.message)], error


def test_a_checkpoint_on_a_skipped_epoch_is_warned_of_before_lightning_stops_the_fit(
    tmp_path: Path,
) -> None:
    checkpoint = ModelCheckpoint(dirpath=tmp_path / "a", monitor="val/calib_err")
    said, error = _fit(tmp_path, [monitor(every_n_epochs=2, save_png=False), checkpoint])
    assert "could not find the monitored key" in error
    assert said == [
        "CalibrationMonitor: ModelCheckpoint(monitor='val/calib_err') reads a tag this monitor "
        "logs every 2 epochs only (every_n_epochs=2): at the first epoch it skips Lightning "
        "finds no value and stops the fit; give the checkpoint every_n_epochs=2 too, or "
        "measure every epoch (every_n_epochs=1), with Trainer(check_val_every_n_epoch=2) to "
        "validate every 2 epochs"
    ]
    # The fix the warning gives: the checkpoint saves at the monitor's epochs alone.
    aligned = ModelCheckpoint(
        dirpath=tmp_path / "b", monitor="val/calib_err", every_n_epochs=2, save_top_k=-1
    )
    assert _fit(tmp_path, [monitor(every_n_epochs=2, save_png=False), aligned]) == ([], "")
    # Every checkpoint kept: which scored best depends on the weights (the best one had
    # been asserted, and failed one run in two).
    saved = sorted(path.name.split("-")[0] for path in (tmp_path / "b").glob("*.ckpt"))
    assert saved == ["epoch=1", "epoch=3"]


def test_a_checkpoint_first_saved_after_a_measured_epoch_is_told_its_stale_score(
    tmp_path: Path,
) -> None:
    """Saving every 3rd epoch beside a monitor measuring every 2nd, the checkpoint of epoch
    2 (0-based) is scored by epoch 1's value and the fit goes on: the warning had said
    Lightning stops the fit."""
    checkpoint = ModelCheckpoint(
        dirpath=tmp_path / "a", monitor="val/calib_err", every_n_epochs=3, save_top_k=-1
    )
    measuring = monitor(every_n_epochs=2, save_png=False)
    said, error = _fit(tmp_path, [measuring, checkpoint])
    assert error == ""
    assert said == [
        "CalibrationMonitor: ModelCheckpoint(monitor='val/calib_err') reads a tag this monitor "
        "logs every 2 epochs only (every_n_epochs=2): a checkpoint saved at an epoch it skips "
        "is scored by the last measured epoch's value; give the checkpoint every_n_epochs=2 "
        "too, or measure every epoch (every_n_epochs=1), with "
        "Trainer(check_val_every_n_epoch=2) to validate every 2 epochs"
    ]
    [(path, score)] = checkpoint.best_k_models.items()
    assert Path(path).name.startswith("epoch=2-")
    assert [record["epoch"] for record in measuring.history] == [1, 3]
    assert float(score) == measuring.history[0]["error"]


@pytest.mark.parametrize(
    ("save_every", "every", "validated_every", "happens"),
    [
        (1, 2, 1, "stops the fit"),  # saves at epoch 0, measured from epoch 1 (0-based)
        (3, 4, 1, "stops the fit"),  # saves at epoch 2, measured from epoch 3
        (3, 2, 1, "scored by the last measured"),  # saves at 2 (and 5, measured), from 1
        (5, 2, None, "scored by the last measured"),  # validated by steps: any epoch
        (3, 4, 2, "scored by the last measured"),  # saves at 5, measured from 3
        (1, 2, 3, "stops the fit"),  # validated (and saved) at 2, measured from 5
    ],
)
def test_the_first_save_against_the_first_measured_epoch(
    save_every: int, every: int, validated_every: int | None, happens: str
) -> None:
    checkpoint = ModelCheckpoint(monitor="val/calib_err", every_n_epochs=save_every)
    [said] = unseen_tag_messages([checkpoint], ["val/calib_err"], every, validated_every)
    assert happens in said


def test_early_stopping_on_a_skipped_epoch_is_warned_of(tmp_path: Path) -> None:
    stopping = EarlyStopping(monitor="val/smooth_calib_err")
    said, error = _fit(tmp_path, [monitor(every_n_epochs=2, save_png=False), stopping])
    assert "which is not available" in error
    assert len(said) == 1
    assert said[0].startswith("CalibrationMonitor: EarlyStopping(monitor='val/smooth_calib_err')")
    assert "with Trainer(check_val_every_n_epoch=2) to validate every 2 epochs" in said[0]
    # The fix the warning gives: validation every 2nd epoch, measured every time.
    for every in (1, 2):
        callbacks = [monitor(every_n_epochs=every, save_png=False), EarlyStopping("val/calib_err")]
        assert _fit(tmp_path, callbacks, check_val_every_n_epoch=2) == ([], "")


def test_what_each_watcher_is_told(tmp_path: Path) -> None:
    """EarlyStopping(strict=False) does not stop: it reads the last value again (it had
    been told the fit stops); a checkpoint of save_top_k=0 reads no tag; the smooth
    error's tag is no tag of a monitor that does not log it (it had been advised to
    keep to epochs at which that tag never comes)."""
    loose = EarlyStopping(monitor="val/calib_err", strict=False)
    said, error = _fit(tmp_path, [monitor(every_n_epochs=2, save_png=False), loose])
    assert error == "" and len(said) == 1
    assert "EarlyStopping(strict=False) reads the last logged value again" in said[0]
    assert "stops the fit" not in said[0]
    last_only = ModelCheckpoint(
        dirpath=tmp_path / "c", monitor="val/calib_err", save_top_k=0, save_last=True
    )
    assert _fit(tmp_path, [monitor(every_n_epochs=2, save_png=False), last_only]) == ([], "")
    never = EarlyStopping(monitor="val/smooth_calib_err")
    said, error = _fit(tmp_path, [monitor(every_n_epochs=2, smooth=False, save_png=False), never])
    assert said == [] and "which is not available" in error


def test_every_fit_is_warned(tmp_path: Path) -> None:
    """A second fit with the same callbacks (a notebook's rerun) had been warned of
    nothing, the warning said once per monitor."""
    callbacks = [monitor(every_n_epochs=2, save_png=False), EarlyStopping("val/calib_err")]
    for _ in range(2):
        said, error = _fit(tmp_path, callbacks)
        assert len(said) == 1 and "which is not available" in error
