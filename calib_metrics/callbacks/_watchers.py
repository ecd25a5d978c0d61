"""The Trainer's ``ModelCheckpoint`` and ``EarlyStopping`` that read a tag the monitor
logs only every ``every_n_epochs``-th epoch.

Who reads when (Lightning 2.6): a checkpoint after each validation of its every
``every_n_epochs``-th epoch, EarlyStopping after each validation. Given
``save_on_train_epoch_end=True`` / ``check_on_train_epoch_end=True`` they read at the end
of the training epoch instead, validated or not: a checkpoint every ``every_n_epochs``-th
epoch, EarlyStopping every epoch. (Left unset, they read there only when the Trainer
validates once at each epoch's end: the same epochs.)

What they find: the value last logged in this fit (a checkpoint keeps none, so a resumed
fit starts without one). Finding none, Lightning stops the fit ("could not find the
monitored key", "... which is not available"), except that a checkpoint saving at a
training epoch's end before the fit's first validation only warns and saves nothing.
After the monitor's first measured epoch a checkpoint saved at an epoch it skips is
scored by the last measured epoch's value, and EarlyStopping counts that value again
against its patience.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

from lightning.fabric.utilities.data import sized_len
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.loops.fetchers import _DataLoaderIterDataFetcher


class Fit(NamedTuple):
    """When a fit validates, as known at its start."""

    validated_every: int  # every how many epochs it validates; 1 where not known ahead
    first_epoch: int = 0  # a resumed fit's first epoch (0-based)
    epochs_known: bool = True  # False when validating by time, or by a batch count off epochs
    by_count: bool = False  # validating by batch count across epochs (check_val_every_n_epoch=None)


def fit_of(trainer: Any) -> Fit:
    """The fit ``trainer`` starts (its loops restored, for a resumed fit)."""
    # By time, any of the validating epochs may validate, or none.
    if getattr(trainer, "_val_check_time_interval", None) is not None:
        return Fit(trainer.check_val_every_n_epoch or 1, trainer.current_epoch, False)
    every = trainer.check_val_every_n_epoch
    if every is not None:
        return Fit(every, trainer.current_epoch)
    every = _whole_epochs_per_validation(trainer)  # by batch count across epochs
    return Fit(every or 1, trainer.current_epoch, every is not None, by_count=True)


def _whole_epochs_per_validation(trainer: Any) -> int | None:
    """Every how many epochs a Trainer validating every ``val_check_batch`` batches across
    epochs validates, where each validation ends an epoch: None where it need not."""
    batches, interval = trainer.num_training_batches, trainer.val_check_batch
    done = trainer.fit_loop.epoch_loop.batch_progress.total.ready  # before this fit
    if (
        # An epoch of a loader of no length ends where its data does: num_training_batches
        # is then inf, or limit_train_batches, which need not be reached.
        not _all_sized(trainer)
        or batches < 1
        or interval % batches
        # Counted from the fit's first batch on, not from its first epoch's.
        or (done - trainer.current_epoch * batches) % interval
        # Epochs of reloaded data may change length.
        or trainer.reload_dataloaders_every_n_epochs > 0
        # A training_step taking the dataloader_iter validates at every epoch's end too.
        or isinstance(trainer.fit_loop._data_fetcher, _DataLoaderIterDataFetcher)
    ):
        return None
    return interval // batches


def _all_sized(trainer: Any) -> bool:
    """Whether every training dataloader of ``trainer``'s fit has a length."""
    loaders = trainer.fit_loop._combined_loader  # no public way to its flattened loaders
    return loaders is not None and all(sized_len(dl) is not None for dl in loaders.flattened)


def _reads(monitored: str | None, tags: Iterable[str]) -> bool:
    """Whether ``monitored`` is one of ``tags``, or one of them for a dataloader.

    Example:
        >>> _reads("val/calib_err/dataloader_idx_1", ["val/calib_err"])
        True
    """
    return monitored is not None and any(
        monitored == tag or monitored.startswith(f"{tag}/dataloader_idx_") for tag in tags
    )


def _given_train_epoch_end(callback: Any) -> bool:
    """Whether ``callback`` is set to read at training epochs' ends (EarlyStopping's own
    setup sets that where left unset and the Trainer validates once at every epoch's end)."""
    if isinstance(callback, EarlyStopping):
        return callback._check_on_train_epoch_end is True
    return callback._save_on_train_epoch_end is True


def _at_train_epoch_end(callback: Any, fit: Fit) -> bool:
    """Whether ``callback`` reads at training epochs' ends that may see no validation."""
    # Where every epoch validates, before its end, its end is read at the same epochs as its
    # validation.
    return _given_train_epoch_end(callback) and (fit.validated_every > 1 or not fit.epochs_known)


def _validate_every(every: int, callback: Any, fit: Fit) -> str:
    """The change that validates every ``every``-th epoch alone, measuring each validation."""
    trainer = f"check_val_every_n_epoch={every}"
    if fit.by_count:
        # Lightning refuses a val_check_interval over an epoch's batches once it counts
        # epochs; a shorter one would go on validating within them.
        trainer += ", val_check_interval=1.0"
    change = (
        f"measure every epoch (every_n_epochs=1), with Trainer({trainer}) to validate every "
        f"{every} epochs"
    )
    if not _given_train_epoch_end(callback):
        return change
    # Read at every (every_n_epochs-th) epoch's end, it would read at those unvalidated.
    if isinstance(callback, EarlyStopping):
        return f"give EarlyStopping check_on_train_epoch_end=False, and {change}"
    return f"save_on_train_epoch_end=False and {change}"


def _fix(every: int, callback: Any, fit: Fit) -> str:
    """What makes ``callback`` read the tag only at the epochs the monitor measures."""
    validate = _validate_every(every, callback, fit)
    measured_every = math.lcm(fit.validated_every, every)
    if isinstance(callback, ModelCheckpoint):
        if _at_train_epoch_end(callback, fit):
            # Either change alone may do: saving at the ends of epochs both validated and
            # measured, or at validations (where it measures each one saved at).
            changes = {
                f"every_n_epochs={measured_every}": fit.epochs_known,
                "save_on_train_epoch_end=False": (
                    math.lcm(fit.validated_every, callback.every_n_epochs) % measured_every == 0
                ),
            }
            enough = [change for change, alone in changes.items() if alone]
            return "give the checkpoint " + (" or ".join(enough) or " and ".join(changes))
        return f"give the checkpoint every_n_epochs={every} too, or {validate}"
    if _at_train_epoch_end(callback, fit) and fit.validated_every % measured_every == 0:
        # It then reads at each validation: enough where the monitor measures them all.
        return "give EarlyStopping check_on_train_epoch_end=False"
    if _given_train_epoch_end(callback):
        return validate
    return f"{validate} (EarlyStopping has no every_n_epochs)"


def _reads_every(callback: Any, fit: Fit) -> int:
    """Every how many epochs ``callback`` reads its tag."""
    if isinstance(callback, EarlyStopping):
        return 1 if _at_train_epoch_end(callback, fit) else fit.validated_every
    if _at_train_epoch_end(callback, fit):
        return callback.every_n_epochs
    return math.lcm(fit.validated_every, callback.every_n_epochs)


def _first(every: int, start: int) -> int:
    """The first epoch from ``start`` on (both 0-based) that is an every ``every``-th one.

    Example:
        >>> _first(3, 0), _first(3, 2), _first(3, 3)
        (2, 2, 5)
    """
    return math.ceil((start + 1) / every) * every - 1


def _reads_a_skipped_epoch(callback: Any, every: int, fit: Fit) -> bool:
    """Whether ``callback`` reads its tag at an epoch the monitor, measuring every
    ``every``-th epoch of those validated, skips."""
    # save_top_k=0 keeps no scored checkpoint and reads no tag (save_last=True, say);
    # every_n_epochs=0 saves by steps or time, which no epoch count settles.
    if isinstance(callback, ModelCheckpoint) and (
        callback.save_top_k == 0 or callback.every_n_epochs < 1
    ):
        return False
    if not fit.epochs_known and _at_train_epoch_end(callback, fit):
        # It reads at training epochs' ends, validated or not, and which epochs validate
        # is not known ahead: any of its reads may find a skipped epoch's (or no) value.
        return True
    return _reads_every(callback, fit) % math.lcm(fit.validated_every, every) != 0


def _finds_none(callback: Any, every: int, fit: Fit) -> bool:
    """Whether ``callback`` reads before the monitor's first measured epoch of ``fit``."""
    reads_from = fit.first_epoch
    if isinstance(callback, ModelCheckpoint) and _at_train_epoch_end(callback, fit):
        reads_from = _first(fit.validated_every, fit.first_epoch)  # before: a warning
    first_read = _first(_reads_every(callback, fit), reads_from)
    return first_read < _first(math.lcm(fit.validated_every, every), fit.first_epoch)


def _what_happens(callback: Any, every: int, fit: Fit) -> str:
    """What ``callback`` does at the epochs the monitor skips."""
    if isinstance(callback, EarlyStopping) and not callback.strict:
        return (
            "at the epochs it skips EarlyStopping(strict=False) reads the last logged value "
            "again, counted against its patience"
        )
    stops = "before the monitor's first measured epoch Lightning finds no value and stops the fit"
    if fit.first_epoch > 0:
        stops += (
            f" (a fit that starts at epoch {fit.first_epoch} has none: Lightning keeps no "
            "logged value from before it, and a checkpoint keeps none)"
        )
    if isinstance(callback, ModelCheckpoint):
        stale = (
            "a checkpoint saved at an epoch it skips is scored by the last measured epoch's value"
        )
    else:
        stale = (
            "at the epochs it skips EarlyStopping reads the last measured epoch's value again, "
            "counted against its patience"
        )
    if not fit.epochs_known:
        return (
            "the Trainer validates by batch count or time, at epochs not known ahead, so "
            f"either can happen: {stops}, after it {stale}"
        )
    return stops if _finds_none(callback, every, fit) else stale


def unseen_tag_messages(
    callbacks: Iterable[Any], tags: Iterable[str], every: int, fit: Fit
) -> list[str]:
    """One message for each ``ModelCheckpoint`` or ``EarlyStopping`` among ``callbacks``
    that reads one of ``tags`` at an epoch the monitor, measuring every ``every``-th
    epoch, skips in ``fit``.

    Example:
        >>> saves = [ModelCheckpoint(monitor="val/calib_err", every_n_epochs=k) for k in (1, 2)]
        >>> [m.split(" reads")[0] for m in unseen_tag_messages(saves, ["val/calib_err"], 2, Fit(1))]
        ["ModelCheckpoint(monitor='val/calib_err')"]
    """
    tags = list(tags)
    watchers = [
        c
        for c in callbacks
        if isinstance(c, (ModelCheckpoint, EarlyStopping))
        and _reads(c.monitor, tags)
        and _reads_a_skipped_epoch(c, every, fit)
    ]
    return [
        f"{type(c).__name__}(monitor={c.monitor!r}) reads a tag this monitor logs every "
        f"{every} epochs only (every_n_epochs={every}): "
        f"{_what_happens(c, every, fit)}; {_fix(every, c, fit)}"
        for c in watchers
    ]
