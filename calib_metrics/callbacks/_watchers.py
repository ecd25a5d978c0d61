"""The Trainer's ``ModelCheckpoint`` and ``EarlyStopping`` that read a tag the monitor
logs only every ``every_n_epochs``-th epoch: at the first validation without it Lightning
stops the fit ("could not find the monitored key", "... which is not available"), and
``EarlyStopping(strict=False)`` reads the last logged value again at the other epochs.
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


def _reads_a_skipped_epoch(callback: Any, every: int, validated_every: int) -> bool:
    """Whether ``callback`` reads its tag at an epoch the monitor, measuring every
    ``every``-th epoch, skips: the Trainer validates every ``validated_every``-th epoch,
    and a checkpoint saves at those of every ``every_n_epochs``-th epoch (0: by steps or
    time, which no epoch count settles)."""
    if isinstance(callback, EarlyStopping):
        return validated_every % every != 0
    n = callback.every_n_epochs
    # save_top_k=0 keeps no scored checkpoint and reads no tag (save_last=True, say).
    return callback.save_top_k != 0 and n >= 1 and math.lcm(validated_every, n) % every != 0


def _what_happens(callback: Any) -> str:
    """What ``callback`` does at the first epoch the monitor skips."""
    if isinstance(callback, EarlyStopping) and not callback.strict:
        return (
            "at the epochs it skips EarlyStopping(strict=False) reads the last logged value "
            "again, counted against its patience"
        )
    return "at the first epoch it skips Lightning finds no value and stops the fit"


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
    tags = list(tags)
    watchers = [
        c
        for c in callbacks
        if isinstance(c, (ModelCheckpoint, EarlyStopping))
        and _reads(c.monitor, tags)
        and _reads_a_skipped_epoch(c, every, validated_every or 1)
    ]
    return [
        f"{type(c).__name__}(monitor={c.monitor!r}) reads a tag this monitor logs every "
        f"{every} epochs only (every_n_epochs={every}): {_what_happens(c)}; {_fix(every, c)}"
        for c in watchers
    ]
