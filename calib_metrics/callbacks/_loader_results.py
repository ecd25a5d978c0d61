"""Epoch-end values of one evaluation dataloader, given to that loader's results alone.

Lightning keeps one dict of results per evaluation dataloader: ``trainer.validate`` /
``test`` return them, and print them as the table's "DataLoader i" columns. It fills loader
i's dict when it moves on from loader i, with what was logged while loader i ran (tagged
``/dataloader_idx_i``), and copies what is logged in ``on_validation_epoch_end``, after every
loader ran, into every loader's dict. The monitor's values of loader 1, logged there as
``val/calib_err/dataloader_idx_1``, thus went into loader 0's dict too, and the table,
which strips ``/dataloader_idx_*`` from the names, showed the last loader's value under
every loader.

So the monitor logs loader i's values as if loader i were running (Lightning then tags them
``/dataloader_idx_i`` itself), and adds them to loader i's dict as Lightning does when it
moves on from a loader; the loggers and ``trainer.callback_metrics`` get them from there,
under the same tags and at the same step as before. Lightning has no public way to do this:
this reads its result collection and evaluation loop, and where they are not as expected
(another Lightning version, a loader that ran no batch), :func:`available` says so and the
monitor logs as before, each value into every loader's dict.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def available(trainer: Any, n_loaders: int) -> bool:
    """Whether this evaluation's results can take values for one loader: Lightning keeps a
    dict of results for each of its ``n_loaders`` loaders (one a loader that ran no batch
    lacks), and the means to fill one.

    Example:
        >>> from types import SimpleNamespace
        >>> available(SimpleNamespace(), 2)
        False
    """
    results = getattr(trainer, "_results", None)
    connector = getattr(trainer, "_logger_connector", None)
    if not hasattr(results, "dataloader_idx") or connector is None:
        return False
    if not callable(getattr(connector, "update_eval_epoch_metrics", None)):
        return False
    outputs = _loader_outputs(trainer)
    return isinstance(outputs, list) and len(outputs) == n_loaders


@contextmanager
def logging_for(trainer: Any, idx: int) -> Iterator[None]:
    """Within, ``self.log(name, ..., add_dataloader_idx=True)`` logs ``name`` for loader
    ``idx``, as its steps do (tagged ``name/dataloader_idx_{idx}``); on leaving, what was
    logged goes to that loader's dict of results. Only where :func:`available`."""
    results = trainer._results
    before = results.dataloader_idx
    results.dataloader_idx = idx
    try:
        yield
        # What Lightning does when it moves on from a loader: the values logged for it
        # (its steps' again, unchanged: each is computed once) into its dict, and into
        # the callback and progress-bar metrics.
        _loader_outputs(trainer)[idx].update(trainer._logger_connector.update_eval_epoch_metrics())
    finally:
        results.dataloader_idx = before


def _loader_outputs(trainer: Any) -> list[dict[str, Any]] | None:
    """The running evaluation loop's dicts of results, one per loader that ran so far."""
    try:
        loop = trainer._evaluation_loop
    except (AttributeError, RuntimeError):  # RuntimeError: no evaluation is running
        return None
    return getattr(loop, "_logged_outputs", None)
