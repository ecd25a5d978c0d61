"""The Trainer's ``ModelCheckpoint`` and ``EarlyStopping`` that read a tag the monitor
logs only every ``every_n_epochs``-th epoch. Lightning keeps the last logged value: read
before the monitor's first measured epoch there is none, and Lightning stops the fit
("could not find the monitored key", "... which is not available"); after it, a
checkpoint saved at an epoch the monitor skips is scored by the last measured epoch's
value, and ``EarlyStopping(strict=False)`` reads that value again at the other epochs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint


def _reads(monitored: str | None, tags: Iterable[str]) -> bool:
    """Whether ``monitored`` is one of ``tags``, or one of them for a dataloader.

    Example:
        >>> _reads("val/calib_err/dataloader_idx_1", ["val/calib_err"])
        True
    """
    return monitored is not None and any(
        monitored == tag or monitored.startswith(f"{tag}/dataloader_idx_") for tag in tags
    )


def _fix(every: int, callback: Any) -> str:
    """What makes ``callback`` read the tag only at the epochs the monitor measures."""
    validate = (
        f"measure every epoch (every_n_epochs=1), with Trainer(check_val_every_n_epoch={every}) "
        f"to validate every {every} epochs"
    )
    if isinstance(callback, ModelCheckpoint):
        return f"give the checkpoint every_n_epochs={every} too, or {validate}"
    return f"{validate} (EarlyStopping has no every_n_epochs)"


def _reads_every(callback: Any, validated_every: int) -> int:
    """Every how many epochs ``callback`` reads its tag when the Trainer validates every
    ``validated_every``-th epoch: EarlyStopping at each validation, a checkpoint at those
    of its every ``every_n_epochs``-th epochs."""
    if isinstance(callback, EarlyStopping):
        return validated_every
    return math.lcm(validated_every, callback.every_n_epochs)


def _reads_a_skipped_epoch(callback: Any, every: int, validated_every: int) -> bool:
    """Whether ``callback`` reads its tag at an epoch the monitor, measuring every
    ``every``-th epoch, skips: the Trainer validates every ``validated_every``-th epoch."""
    # save_top_k=0 keeps no scored checkpoint and reads no tag (save_last=True, say);
    # every_n_epochs=0 saves by steps or time, which no epoch count settles.
    if isinstance(callback, ModelCheckpoint) and (
        callback.save_top_k == 0 or callback.every_n_epochs < 1
    ):
        return False
    return _reads_every(callback, validated_every) % every != 0


def _what_happens(callback: Any, every: int, validated_every: int) -> str:
    """What ``callback`` does at the epochs the monitor skips."""
    if isinstance(callback, EarlyStopping) and not callback.strict:
        return (
            "at the epochs it skips EarlyStopping(strict=False) reads the last logged value "
            "again, counted against its patience"
        )
    # Lightning keeps the last logged value: only a read before the monitor's first
    # measured epoch finds none. EarlyStopping reads at every validation, so always does.
    if _reads_every(callback, validated_every) < math.lcm(validated_every, every):
        return "at the first epoch it skips Lightning finds no value and stops the fit"
    return "a checkpoint saved at an epoch it skips is scored by the last measured epoch's value"


def unseen_tag_messages(
    callbacks: Iterable[Any], tags: Iterable[str], every: int, validated_every: int | None
) -> list[str]:
    """One message for each ``ModelCheckpoint`` or ``EarlyStopping`` among ``callbacks``
    that reads one of ``tags`` at an epoch the monitor, measuring every ``every``-th
    epoch, skips (``validated_every``: the Trainer's ``check_val_every_n_epoch``, None when
    it validates by steps, at any epoch).

    Example:
        >>> saves = [ModelCheckpoint(monitor="val/calib_err", every_n_epochs=k) for k in (1, 2)]
        >>> [m.split(" reads")[0] for m in unseen_tag_messages(saves, ["val/calib_err"], 2, 1)]
        ["ModelCheckpoint(monitor='val/calib_err')"]
    """
    tags, validated = list(tags), validated_every or 1
    watchers = [
        c
        for c in callbacks
        if isinstance(c, (ModelCheckpoint, EarlyStopping))
        and _reads(c.monitor, tags)
        and _reads_a_skipped_epoch(c, every, validated)
    ]
    return [
        f"{type(c).__name__}(monitor={c.monitor!r}) reads a tag this monitor logs every "
        f"{every} epochs only (every_n_epochs={every}): "
        f"{_what_happens(c, every, validated)}; {_fix(every, c)}"
        for c in watchers
    ]
