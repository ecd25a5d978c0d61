"""Whose history :class:`~calib_metrics.callbacks.CalibrationMonitor` holds: the run's, a run
being the folders its history file is written to, not the Trainer object writing it.

A new Trainer that writes to the same folders (a separate Trainer to evaluate the fitted
model, a Trainer resuming from a checkpoint) continues their history, as the file does; a
Trainer writing elsewhere has a history of its own, so that one monitor serving two runs
never writes one run's records into the other's file. A Trainer with no folder (no logger,
and no ``save_png=True``) writes no file, and has a history of its own, as it would with
one monitor each.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calib_metrics.callbacks import _tensorboard as tb
from calib_metrics.callbacks._identity import IdentityMap


def run_folders(trainer: Any, file_folders: Sequence[str | Path]) -> tuple[str, ...]:
    """The folders naming the trainer's run: those its history file is written to
    (``file_folders``), else, where it writes none, its first logger's folder (``log_dir``,
    as Lightning's ``trainer.log_dir``); empty when the run has no folder.

    Example:
        >>> from types import SimpleNamespace
        >>> class Csv:
        ...     log_dir = "/tmp/logs/version_0"
        >>> trainer = SimpleNamespace(loggers=[Csv()], default_root_dir=".")
        >>> run_folders(trainer, []), run_folders(trainer, ["/tmp/other"])
        (('/tmp/logs/version_0',), ('/tmp/other',))
        >>> run_folders(SimpleNamespace(loggers=[], default_root_dir="."), [])
        ()
    """
    if not file_folders and trainer.loggers:
        file_folders = [tb.log_dir_of(trainer.loggers[0], trainer.default_root_dir)]
    return tuple(os.path.abspath(folder) for folder in file_folders)


@dataclass
class Run:
    """One run's records, and which of them are the ``validate`` / ``test`` records of which
    Trainer (weakly: a finished Trainer must not stay alive), for :meth:`restart`."""

    history: list[dict[str, Any]] = field(default_factory=list)
    evaluations: list[tuple[Callable[[], Any], dict[str, Any]]] = field(default_factory=list)
    # The history is a checkpoint's, taken by a validate / test run: the file may have
    # dropped some of its records (those of a run a resumed fit replaced), so every later
    # run adds its own records to the file rather than rewrite it with these.
    from_checkpoint: bool = False

    def note_evaluation(self, trainer: Any, record: dict[str, Any]) -> None:
        self.evaluations.append((weakref.ref(trainer), record))

    def restart(self, trainer: Any) -> None:
        """Start the history anew for a fit from step 0, keeping the evaluations
        ``trainer`` made before it (a baseline ``trainer.validate(model)``): they measured
        the weights the fit starts from, and say so (``before_fit``). Their epoch and step
        are those of the weights (an earlier fit's), which the curve had drawn inside
        this fit's, beside its own record at that epoch."""
        mine = {id(record) for ref, record in self.evaluations if ref() is trainer}
        self.history = [record for record in self.history if id(record) in mine]
        for record in self.history:
            record["before_fit"] = True
        self.from_checkpoint = False
        self.evaluations = [(ref, r) for ref, r in self.evaluations if id(r) in mine]


class Runs:
    """Every run's :class:`Run`, by its folders (:func:`run_folders`), or by its Trainer
    (weakly) where it has none; and the one the monitor serves now.

    The monitor's first run takes the history the monitor already holds (one set by hand,
    or by ``load_state_dict`` before any Trainer ran).

    Example:
        >>> runs = Runs()
        >>> runs.current.history.append({"epoch": 0})
        >>> trainer = object()
        >>> runs.follow(trainer, ("/logs/a",))  # the first run takes what the monitor holds
        >>> runs.follow(trainer, ("/logs/b",))
        >>> runs.current.history, runs.of(trainer, ("/logs/a",)).history
        ([], [{'epoch': 0}])
    """

    def __init__(self) -> None:
        self._by_folders: dict[tuple[str, ...], Run] = {}
        self._by_trainer: IdentityMap[Run] = IdentityMap()  # runs with no folder
        self._held = Run()  # before the first run, which takes it
        self._current: Run | None = None

    @property
    def current(self) -> Run:
        return self._held if self._current is None else self._current

    def follow(self, trainer: Any, folders: tuple[str, ...]) -> None:
        """Serve the run of ``folders`` (of ``trainer`` when there are none): the history
        the monitor keeps for it, else (the monitor's first run) the one it holds, else a
        new one."""
        run = self.of(trainer, folders)
        if folders:
            self._by_folders[folders] = run
        else:
            self._by_trainer[trainer] = run
        self._current = run

    def of(self, trainer: Any, folders: tuple[str, ...]) -> Run:
        """The run of ``folders`` (of ``trainer``) as :meth:`follow` would make it, without
        serving it."""
        run = self._by_folders.get(folders) if folders else self._by_trainer.get(trainer)
        if run is not None:
            return run
        return self._held if self._current is None else Run()

    def __getstate__(self) -> dict[str, Any]:
        # Weak references do not pickle, and ddp_spawn pickles the callbacks; a copy in
        # another process never sees this process's Trainers, so it needs none of them
        # (nor their runs without a folder: the IdentityMap copies empty).
        copies: dict[int, Run] = {}

        def copy(run: Run) -> Run:  # one copy per run: the current run is one of the others
            return copies.setdefault(id(run), Run(run.history))

        state = self.__dict__.copy()
        state["_by_folders"] = {key: copy(run) for key, run in self._by_folders.items()}
        state["_held"] = copy(self._held)
        state["_current"] = None if self._current is None else copy(self._current)
        folder_runs = [id(run) for run in self._by_folders.values()]  # Runs compare by value
        if self._current is not None and id(self._current) not in folder_runs:
            # A run with no folder is keyed by a Trainer the copy never sees: the copy's
            # first run takes it, as the monitor's first run takes what it holds.
            state["_held"], state["_current"] = state["_current"], None
        return state
