"""Whose history :class:`~calib_metrics.callbacks.CalibrationMonitor` holds: the run's, a run
being the folder its history file is written to, not the Trainer object writing it.

A new Trainer that writes to the same folder (a separate Trainer to evaluate the fitted
model, a Trainer resuming from a checkpoint) continues that folder's history, as its file
does; a Trainer writing elsewhere has a history of its own, so that one monitor serving two
runs never writes one run's records into the other's file. Trainers with no folder (no
logger, and no ``save_png=True``) write no file, and share one history: the monitor's.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from calib_metrics.callbacks import _tensorboard as tb


def run_folder(trainer: Any, save_png: bool | None) -> str | None:
    """The folder naming the trainer's run: its first logger's folder (``log_dir``, as
    Lightning's ``trainer.log_dir``), or ``default_root_dir`` where files go without a
    logger (``save_png=True``); None when the run writes no folder.

    Example:
        >>> from types import SimpleNamespace
        >>> class Csv:
        ...     log_dir = "/tmp/logs/version_0"
        >>> run_folder(SimpleNamespace(loggers=[Csv()], default_root_dir="."), None)
        '/tmp/logs/version_0'
        >>> print(run_folder(SimpleNamespace(loggers=[], default_root_dir="."), None))
        None
    """
    if trainer.loggers:
        folder = tb.log_dir_of(trainer.loggers[0], trainer.default_root_dir)
    elif save_png:
        folder = trainer.default_root_dir
    else:
        return None
    return os.path.abspath(folder)


@dataclass
class Run:
    """One run's records, and which of them are the ``validate`` / ``test`` records of which
    Trainer (weakly: a finished Trainer must not stay alive), for :meth:`restart`."""

    history: list[dict[str, Any]] = field(default_factory=list)
    evaluations: list[tuple[Callable[[], Any], dict[str, Any]]] = field(default_factory=list)

    def note_evaluation(self, trainer: Any, record: dict[str, Any]) -> None:
        self.evaluations.append((weakref.ref(trainer), record))

    def restart(self, trainer: Any) -> None:
        """Start the history anew for a fit from step 0, keeping the evaluations
        ``trainer`` made before it (a baseline ``trainer.validate(model)``): they measured
        the weights the fit starts from."""
        mine = {id(record) for ref, record in self.evaluations if ref() is trainer}
        self.history = [record for record in self.history if id(record) in mine]
        self.evaluations = [(ref, r) for ref, r in self.evaluations if id(r) in mine]


class Runs:
    """Every run's :class:`Run` by folder, and the one the monitor serves now.

    The monitor's first run takes the history the monitor already holds (one set by hand,
    or by ``load_state_dict`` before any Trainer ran).

    Example:
        >>> runs = Runs()
        >>> runs.current.history.append({"epoch": 0})
        >>> runs.follow("/logs/a")  # the first run takes what the monitor holds
        >>> runs.follow("/logs/b")
        >>> runs.current.history, runs.of("/logs/a").history
        ([], [{'epoch': 0}])
    """

    def __init__(self) -> None:
        self._runs: dict[str | None, Run] = {}
        self._held = Run()  # before the first run, which takes it
        self._bound = False
        self._folder: str | None = None

    @property
    def current(self) -> Run:
        return self._runs[self._folder] if self._bound else self._held

    def follow(self, folder: str | None) -> None:
        """Serve the run of ``folder``: the history the monitor keeps for it, else (the
        monitor's first run) the one it holds, else a new one."""
        self._runs.setdefault(folder, self.of(folder))
        self._folder, self._bound = folder, True

    def of(self, folder: str | None) -> Run:
        """The run of ``folder`` as :meth:`follow` would make it, without serving it."""
        if folder in self._runs:
            return self._runs[folder]
        return Run() if self._bound else self._held

    def __getstate__(self) -> dict[str, Any]:
        # Weak references do not pickle, and ddp_spawn pickles the callbacks; a copy in
        # another process never sees this process's Trainers, so it needs none of them.
        state = self.__dict__.copy()
        state["_runs"] = {folder: Run(run.history) for folder, run in self._runs.items()}
        state["_held"] = Run(self._held.history)
        return state
