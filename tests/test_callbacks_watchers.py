"""A ModelCheckpoint or EarlyStopping reading a tag the monitor logs only every n-th epoch:
read before the monitor's first measured epoch, Lightning stops the fit with an error that
names no monitor; read after it, a checkpoint is scored by the last measured epoch's value
without a word. The monitor says which as the fit starts, with what works instead."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from test_callbacks import TinyTagger, loaders, monitor, trainer

from calib_metrics.callbacks._watchers import Fit, unseen_tag_messages

# A checkpoint that keeps every save, made at training epochs' ends.
_ON_EPOCH_END = {"save_top_k": -1, "save_on_train_epoch_end": True}


def _fit(
    tmp_path: Path,
    callbacks: list[Any],
    epochs: int = 4,
    ckpt_path: Path | None = None,
    **options: Any,
) -> tuple[list[str], str]:
    """The monitor's warnings of such callbacks in a fit (of 3 training batches an epoch),
    and the error that stopped the fit ("" when none did)."""
    train, val = loaders()
    run = trainer(
        tmp_path, epochs, callbacks=callbacks, logger=False, enable_checkpointing=True, **options
    )
    error = ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run.fit(TinyTagger(), train, val, ckpt_path=ckpt_path)
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
        "logs every 2 epochs only (every_n_epochs=2): before the monitor's first measured "
        "epoch Lightning finds no value and stops the fit; give the checkpoint "
        "every_n_epochs=2 too, or "
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
    ("save_every", "every", "fit", "happens"),
    [
        (1, 2, Fit(1), "stops the fit"),  # saves at epoch 0, measured from epoch 1 (0-based)
        (3, 4, Fit(1), "stops the fit"),  # saves at epoch 2, measured from epoch 3
        (3, 2, Fit(1), "scored by the last measured"),  # saves at 2 (and 5, measured), from 1
        (3, 4, Fit(2), "scored by the last measured"),  # saves at 5, measured from 3
        (1, 2, Fit(3), "stops the fit"),  # validated (and saved) at 2, measured from 5
        # Resumed at epoch 2 with no logged value: saves at 2, measured from 3.
        (3, 2, Fit(1, first_epoch=2), "stops the fit (a fit that starts at epoch 2 has none"),
        (3, 2, Fit(1, first_epoch=3), "scored by the last measured"),  # saves at 5, from 3
        # Validated by batch count: any epoch, or none, may validate.
        (5, 2, Fit(1, epochs_known=False), "either can happen"),
    ],
)
def test_the_first_save_against_the_first_measured_epoch(
    save_every: int, every: int, fit: Fit, happens: str
) -> None:
    checkpoint = ModelCheckpoint(monitor="val/calib_err", every_n_epochs=save_every)
    [said] = unseen_tag_messages([checkpoint], ["val/calib_err"], every, fit)
    assert happens in said


def test_validation_by_batch_count_off_the_epochs_claims_no_outcome(tmp_path: Path) -> None:
    """Validating every 4 batches across epochs of 3, the Trainer validates at epochs 1, 2,
    3 and 5: no epoch count says which, and the warning claims no outcome."""
    save_every_3 = ModelCheckpoint(
        dirpath=tmp_path / "a", monitor="val/calib_err", every_n_epochs=3, save_top_k=-1
    )
    said, _ = _fit(
        tmp_path,
        [monitor(every_n_epochs=2, save_png=False), save_every_3],
        epochs=6,
        val_check_interval=4,
        check_val_every_n_epoch=None,
    )
    assert len(said) == 1 and "at epochs not known ahead, so either can happen" in said[0]


def test_validation_by_batch_count_on_whole_epochs_is_decided(tmp_path: Path) -> None:
    """Validating every 9 (or 6) batches across epochs of 3, the Trainer validates at the
    end of every 3rd (2nd) epoch, as check_val_every_n_epoch=3 (2) would: a checkpoint
    saving every 3rd epoch had been told "either can happen" where the fit stops, and one
    saving at every validation (each one measured) had been warned at all."""
    by_count = {"check_val_every_n_epoch": None}
    save_every_3 = ModelCheckpoint(
        dirpath=tmp_path / "a", monitor="val/calib_err", every_n_epochs=3, save_top_k=-1
    )
    said, error = _fit(
        tmp_path,
        [monitor(every_n_epochs=2, save_png=False), save_every_3],
        epochs=6,
        val_check_interval=9,
        **by_count,
    )
    assert "could not find the monitored key" in error
    assert len(said) == 1 and "either can happen" not in said[0]
    assert (
        ": before the monitor's first measured epoch Lightning finds no value and stops "
        in (said[0])
    )
    save_every_1 = ModelCheckpoint(dirpath=tmp_path / "b", monitor="val/calib_err")
    said_and_error = _fit(
        tmp_path,
        [monitor(every_n_epochs=2, save_png=False), save_every_1],
        epochs=6,
        val_check_interval=6,
        **by_count,
    )
    assert said_and_error == ([], "")


def test_reads_at_epoch_ends_beside_validation_by_batch_count_are_warned_of(
    tmp_path: Path,
) -> None:
    """Validating every 9 batches (epochs of 3: at epochs 2 and 5), a checkpoint saving at
    every 2nd training epoch's end reads at epoch 1 and 3, where nothing (or a skipped
    epoch) was validated: the fit stopped at epoch 3 without a warning, its save epochs
    being multiples of the monitor's."""
    saving = ModelCheckpoint(
        dirpath=tmp_path / "a",
        monitor="val/calib_err",
        every_n_epochs=2,
        save_on_train_epoch_end=True,
        save_top_k=-1,
    )
    said, error = _fit(
        tmp_path,
        [monitor(every_n_epochs=2, save_png=False), saving],
        epochs=6,
        val_check_interval=9,
        check_val_every_n_epoch=None,
    )
    assert "could not find the monitored key" in error
    assert len(said) == 1 and "stops the fit" in said[0]
    # Saving at the end of every 6th epoch (validated and measured), or at validations
    # instead, at epoch 5's alone: the monitor's.
    assert said[0].endswith(
        "; give the checkpoint every_n_epochs=6 or save_on_train_epoch_end=False"
    )


def test_a_resumed_fit_is_told_it_starts_with_no_logged_value(tmp_path: Path) -> None:
    """Lightning keeps no logged value in a checkpoint: resumed at epoch 2, a checkpoint
    saving every 3rd epoch beside a monitor measuring every 2nd reads at epoch 2 and stops
    the fit. It had been told it is scored by the last measured epoch's value, as in a
    fresh fit."""

    def callbacks() -> list[Any]:
        saving = ModelCheckpoint(
            dirpath=tmp_path / "a", monitor="val/calib_err", every_n_epochs=3, save_top_k=-1
        )
        return [monitor(every_n_epochs=2, save_png=False), saving]

    last = ModelCheckpoint(dirpath=tmp_path / "last", save_last=True, save_top_k=0)
    said, error = _fit(tmp_path, [*callbacks(), last], epochs=2)
    assert error == "" and "scored by the last measured epoch's value" in said[0]
    said, error = _fit(tmp_path, callbacks(), epochs=6, ckpt_path=tmp_path / "last" / "last.ckpt")
    assert "could not find the monitored key" in error
    assert len(said) == 1
    assert (
        "before the monitor's first measured epoch Lightning finds no value and stops the fit "
        "(a fit that starts at epoch 2 has none: Lightning keeps no logged value from before "
        "it, and a checkpoint keeps none)" in said[0]
    )


def test_reads_at_the_training_epochs_end_are_warned_of(tmp_path: Path) -> None:
    """Validating every 2nd epoch, EarlyStopping(check_on_train_epoch_end=True) reads at
    every epoch's end, and ModelCheckpoint(save_on_train_epoch_end=True) at every one of its
    every_n_epochs-th: neither had been warned of, though the first stops the fit at epoch
    0 and the second scores epoch 2's checkpoint by epoch 1's value."""
    every_2nd = {"check_val_every_n_epoch": 2}
    stopping = EarlyStopping("val/calib_err", check_on_train_epoch_end=True)
    said, error = _fit(tmp_path, [monitor(every_n_epochs=2, save_png=False), stopping], **every_2nd)
    assert "which is not available" in error
    assert said == [
        "CalibrationMonitor: EarlyStopping(monitor='val/calib_err') reads a tag this monitor "
        "logs every 2 epochs only (every_n_epochs=2): before the monitor's first measured "
        "epoch Lightning finds no value and stops the fit; give EarlyStopping "
        "check_on_train_epoch_end=False"
    ]
    # That alone is the fix (it had been told to measure every epoch as well).
    at_validations = EarlyStopping("val/calib_err", check_on_train_epoch_end=False)
    callbacks = [monitor(every_n_epochs=2, save_png=False), at_validations]
    assert _fit(tmp_path, callbacks, **every_2nd) == ([], "")
    checkpoint = ModelCheckpoint(dirpath=tmp_path / "a", monitor="val/calib_err", **_ON_EPOCH_END)
    measuring = monitor(every_n_epochs=2, save_png=False)
    said, error = _fit(tmp_path, [measuring, checkpoint], **every_2nd)
    assert error == ""
    assert said == [
        "CalibrationMonitor: ModelCheckpoint(monitor='val/calib_err') reads a tag this monitor "
        "logs every 2 epochs only (every_n_epochs=2): a checkpoint saved at an epoch it skips "
        "is scored by the last measured epoch's value; give the checkpoint every_n_epochs=2 "
        "or save_on_train_epoch_end=False"
    ]
    scores = {
        Path(path).name.split("-")[0]: float(s) for path, s in checkpoint.best_k_models.items()
    }
    assert scores["epoch=2"] == scores["epoch=1"] == measuring.history[0]["error"]
    # Either fix the warning gives, alone (it had asked for both).
    for fix in ({"every_n_epochs": 2}, {"save_on_train_epoch_end": False}):
        aligned = ModelCheckpoint(
            dirpath=tmp_path / next(iter(fix)), monitor="val/calib_err", **{**_ON_EPOCH_END, **fix}
        )
        callbacks = [monitor(every_n_epochs=2, save_png=False), aligned]
        assert _fit(tmp_path, callbacks, **every_2nd) == ([], "")


def _at_epoch_ends(every_n_epochs: int) -> ModelCheckpoint:
    return ModelCheckpoint(
        monitor="val/calib_err", **{**_ON_EPOCH_END, "every_n_epochs": every_n_epochs}
    )


@pytest.mark.parametrize(
    ("watcher", "fit", "fix"),
    [
        # Validated every 3rd epoch, measured every 6th: reading at validations is not enough.
        (
            EarlyStopping("val/calib_err", check_on_train_epoch_end=True),
            Fit(3),
            "give EarlyStopping check_on_train_epoch_end=False, and measure every epoch",
        ),
        # Saving at every 6th epoch's end, or at validations (every 6th epoch's, the monitor's).
        (
            _at_epoch_ends(2),
            Fit(3),
            "give the checkpoint every_n_epochs=6 or save_on_train_epoch_end=False",
        ),
        # Saving at every 3rd epoch's end, or at every validation: at every 6th epoch's end
        # alone (it had been told to save every 2nd epoch and at validations, both).
        (_at_epoch_ends(3), Fit(3), "give the checkpoint every_n_epochs=6"),
        # Validated at epochs not known ahead: neither change alone.
        (
            _at_epoch_ends(3),
            Fit(1, epochs_known=False),
            "give the checkpoint every_n_epochs=2 and save_on_train_epoch_end=False",
        ),
    ],
)
def test_reads_at_the_training_epochs_end_are_told_the_changes_they_need(
    watcher: Any, fit: Fit, fix: str
) -> None:
    [said] = unseen_tag_messages([watcher], ["val/calib_err"], 2, fit)
    assert said.endswith(f"; {fix}") or f"; {fix} " in said


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


def _trainer_advised(said: str) -> dict[str, Any]:
    """The Trainer options of the warning's "measure every epoch" alternative."""
    [options] = re.findall(r"with Trainer\((.*?)\) to validate", said)
    return {k: ast.literal_eval(v) for k, v in (o.split("=") for o in options.split(", "))}


def test_measuring_every_epoch_also_stops_reads_at_the_training_epochs_end(
    tmp_path: Path,
) -> None:
    """Validated every epoch, a callback reading at training epochs' ends had been told to
    measure every epoch and validate every 2nd alone: it then read at epoch 0's end, where
    nothing was validated (EarlyStopping stops the fit), and a checkpoint at epoch 2's, of
    epoch 1's value. The advice now sets its option False as well, and works."""
    stopping = EarlyStopping("val/calib_err", check_on_train_epoch_end=True)
    said, error = _fit(tmp_path, [monitor(every_n_epochs=2, save_png=False), stopping])
    assert "which is not available" in error
    assert said[0].endswith(
        "; give EarlyStopping check_on_train_epoch_end=False, and measure every epoch "
        "(every_n_epochs=1), with Trainer(check_val_every_n_epoch=2) to validate every 2 epochs"
    )
    at_validations = EarlyStopping("val/calib_err", check_on_train_epoch_end=False)
    callbacks = [monitor(save_png=False), at_validations]
    assert _fit(tmp_path, callbacks, **_trainer_advised(said[0])) == ([], "")

    saving = ModelCheckpoint(dirpath=tmp_path / "a", monitor="val/calib_err", **_ON_EPOCH_END)
    said, _ = _fit(tmp_path, [monitor(every_n_epochs=2, save_png=False), saving])
    assert said[0].endswith(
        "; give the checkpoint every_n_epochs=2 too, or save_on_train_epoch_end=False and "
        "measure every epoch (every_n_epochs=1), with Trainer(check_val_every_n_epoch=2) to "
        "validate every 2 epochs"
    )
    at_validations = ModelCheckpoint(
        dirpath=tmp_path / "b",
        monitor="val/calib_err",
        **{**_ON_EPOCH_END, "save_on_train_epoch_end": False},
    )
    measuring = monitor(save_png=False)
    callbacks = [measuring, at_validations]
    assert _fit(tmp_path, callbacks, **_trainer_advised(said[0])) == ([], "")
    # Each checkpoint scored by its own epoch's value.
    scores = {
        Path(path).name.split("-")[0]: float(s) for path, s in at_validations.best_k_models.items()
    }
    assert scores == {f"epoch={r['epoch']}": r["error"] for r in measuring.history}
    assert sorted(scores) == ["epoch=1", "epoch=3"]


def test_a_fit_validating_by_batch_count_is_told_a_trainer_lightning_accepts(
    tmp_path: Path,
) -> None:
    """Validating every 9 batches (every 3rd epoch of 3 batches), the advice had been
    Trainer(check_val_every_n_epoch=2), which Lightning refuses beside val_check_interval=9
    (more than an epoch's batches): it now sets val_check_interval=1.0 too."""
    by_count = {"check_val_every_n_epoch": None, "val_check_interval": 9}
    stopping = EarlyStopping("val/calib_err")
    said, error = _fit(
        tmp_path, [monitor(every_n_epochs=2, save_png=False), stopping], epochs=6, **by_count
    )
    assert "which is not available" in error
    assert said[0].endswith(
        "; measure every epoch (every_n_epochs=1), with Trainer(check_val_every_n_epoch=2, "
        "val_check_interval=1.0) to validate every 2 epochs (EarlyStopping has no every_n_epochs)"
    )
    callbacks = [monitor(save_png=False), EarlyStopping("val/calib_err")]
    advised = {**by_count, **_trainer_advised(said[0])}
    assert _fit(tmp_path, callbacks, epochs=6, **advised) == ([], "")


def test_a_checkpoint_at_epoch_ends_is_told_the_one_count_that_is_enough(
    tmp_path: Path,
) -> None:
    """Validating every 3rd epoch, measuring every 2nd, a checkpoint saving at every 3rd
    training epoch's end (stopping the fit at epoch 2) had been told every_n_epochs=2 and
    save_on_train_epoch_end=False, both; every_n_epochs=6 alone saves at epochs both
    validated and measured."""
    every_3rd = {"check_val_every_n_epoch": 3}
    saving = ModelCheckpoint(
        dirpath=tmp_path / "a",
        monitor="val/calib_err",
        **{**_ON_EPOCH_END, "every_n_epochs": 3},
    )
    said, error = _fit(
        tmp_path, [monitor(every_n_epochs=2, save_png=False), saving], epochs=6, **every_3rd
    )
    assert "could not find the monitored key" in error  # at epoch 2, validated, not measured
    assert said[0].endswith("; give the checkpoint every_n_epochs=6")
    aligned = ModelCheckpoint(
        dirpath=tmp_path / "b",
        monitor="val/calib_err",
        **{**_ON_EPOCH_END, "every_n_epochs": 6},
    )
    callbacks = [monitor(every_n_epochs=2, save_png=False), aligned]
    assert _fit(tmp_path, callbacks, epochs=6, **every_3rd) == ([], "")
    assert [Path(path).name.split("-")[0] for path in aligned.best_k_models] == ["epoch=5"]
