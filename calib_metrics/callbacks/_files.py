"""The files :class:`~calib_metrics.callbacks.CalibrationMonitor` writes for loggers without
images: each validation's figures as PNGs, the error over time with its band, the history.

A run that restored the monitor from a checkpoint (a resumed fit, a ``validate`` / ``test``
with ``ckpt_path=``) adds its new records to the history file on disk, which a fresh monitor
evaluating a checkpoint into the same folder would otherwise shorten; a resumed fit first
drops the file's records of the weights trained past its checkpoint, the run it replaces,
and puts the checkpoint's records in place of another run's up to it (in step order); an
evaluation adds only the records it made, never the checkpoint's. Any other run is a run
of its own and rewrites the file, so that two fits into one folder are not drawn as one.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def own_run(record: dict[str, Any], stage: str) -> bool:
    """Whether the record's run is the stage's own kind: a fit's validation (``stage="val"``),
    or a ``trainer.test`` of the current weights (``stage="test"``, no checkpoint). Its
    files keep the names they always had; other runs (``trainer.validate``, an evaluation of
    a checkpoint) are named by their run, epoch and step, and never replace a file.

    Example:
        >>> own_run({"fn": "test", "checkpoint": None}, "test")
        True
        >>> own_run({"fn": "test", "checkpoint": "epoch=0.ckpt"}, "test")
        False
    """
    fn = record.get("fn", "fit")
    return fn == "fit" or (fn == stage and record.get("checkpoint") is None)


def figure_suffix(record: dict[str, Any], by_step: bool, stage: str = "val") -> str:
    """The end of a figure's file name, naming the validation it shows.

    A validation while fitting (or a ``stage="test"`` monitor's test of the current
    weights: :func:`own_run`) is named by its epoch, and by its step too when validation
    runs more than once per epoch (``by_step``); any other ``trainer.validate`` / ``test``
    run by its trainer function and the epoch and step of the weights it measured.

    Example:
        >>> figure_suffix({"fn": "fit", "epoch": 3, "step": 48}, by_step=False)
        'epoch003'
        >>> figure_suffix({"fn": "fit", "epoch": 0, "step": 6}, by_step=True)
        'epoch000_step000006'
        >>> figure_suffix({"fn": "validate", "epoch": 0, "step": 12}, by_step=False)
        'validate_epoch000_step000012'
        >>> figure_suffix({"fn": "test", "epoch": 3, "step": 9}, by_step=False, stage="test")
        'epoch003'
    """
    fn = record.get("fn", "fit")
    epoch = f"epoch{record['epoch']:03d}"
    if own_run(record, stage) and not (fn == "fit" and by_step):
        return epoch
    named = f"{epoch}_step{record['step']:06d}"
    return named if fn == "fit" else f"{fn}_{named}"


def weights_steps(record: dict[str, Any], fit_points: set[tuple[Any, Any]]) -> int | None:
    """The optimizer steps the weights a record measured had taken (None if it says no step).

    A fit record's ``step`` is the one ``self.log`` logs its validation at: Lightning counts
    the batch after validating, so the weights had one step more. An evaluation of a
    checkpoint has the checkpoint's ``global_step``, the weights' own count. An evaluation
    of the current weights without a checkpoint repeats the epoch and step of the fit record
    that measured them (``fit_points``: the fit records' ``(epoch, step)``), else has the
    trainer's count.

    Example:
        >>> weights_steps({"fn": "fit", "epoch": 1, "step": 11}, set())
        12
        >>> weights_steps({"fn": "validate", "epoch": 1, "step": 12, "checkpoint": "c"}, set())
        12
        >>> weights_steps({"fn": "validate", "epoch": 1, "step": 11, "checkpoint": None}, {(1, 11)})
        12
    """
    step = _step(record)
    if step is None:
        return None
    fn = record.get("fn", "fit")
    repeats_fit = record.get("checkpoint") is None and (record.get("epoch"), step) in fit_points
    return step + 1 if fn == "fit" or repeats_fit else step


def merged_history(
    path: Path,
    history: Sequence[dict[str, Any]],
    resumed_at: int | None = None,
    run: str | None = None,
) -> list[dict[str, Any]]:
    """The records in the file at ``path``, then those of ``history`` it does not hold yet
    (a record the file holds n times stands for the first n equal ones of ``history``,
    equal but for ``before_fit``: :func:`_key`; those take its place).

    ``run``: the id of a ``validate`` / ``test`` run restored from a checkpoint, whose
    records alone (``record["run"]``) a file holding records gets. Its others are the
    checkpoint's, which the file may have dropped as those of the run a resumed fit
    replaced: added back, they went after the resumed run's, and the curve went back in
    time. A file holding none gets the whole ``history``.

    ``resumed_at``: where the checkpoint a resumed fit started from is, in the fit records'
    count: the batches that stepped to its weights (``global_step`` with one optimizer),
    as Lightning counts them on resuming. The
    file's records of weights trained past it (:func:`weights_steps`) that ``history`` does
    not hold belong to the continuation the resumed fit replaces, and are dropped: else a
    resumed fit's re-run epochs were added after the abandoned run's ones, and the curve
    went back in time. Up to it, ``history`` (the checkpoint's) is the truth: the file's
    fit record of an epoch and step that ``history`` measured otherwise is of another
    run's weights (one an earlier resumed fit replaced), and ``history``'s takes its place;
    one at a point ``history`` lacks (that run stepped otherwise an epoch) goes; the
    records ``history`` adds go in step order among the file's fit records. They had
    been added at the end, the epochs twice and the curve back in time. A validation run
    just after a mid-epoch checkpoint was saved measured the checkpoint's weights, which
    the resumed fit does not validate again: kept, as are evaluations and records
    without a step.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "val_history.json"
        >>> _ = path.write_text('[{"epoch": 0}, {"epoch": 1}]')
        >>> merged_history(path, [{"epoch": 0}, {"epoch": 4, "fn": "validate"}])
        [{'epoch': 0}, {'epoch': 1}, {'epoch': 4, 'fn': 'validate'}]
        >>> _ = path.write_text('[{"epoch": 0, "step": 5}, {"epoch": 1, "step": 11}]')
        >>> merged_history(path, [{"epoch": 1, "step": 11, "error": 0.2}], resumed_at=6)
        [{'epoch': 0, 'step': 5}, {'epoch': 1, 'step': 11, 'error': 0.2}]
        >>> restored = {"epoch": 0, "step": 5, "error": 0.3}  # the file's is another run's
        >>> merged_history(path, [restored, {"epoch": 1, "step": 9}], resumed_at=6)
        [{'epoch': 0, 'step': 5, 'error': 0.3}, {'epoch': 1, 'step': 9}]
        >>> dropped, mine = {"epoch": 2, "step": 17, "run": "a"}, {"fn": "validate", "run": "c"}
        >>> merged_history(path, [dropped, mine], run="c")[2:]
        [{'fn': 'validate', 'run': 'c'}]
    """
    try:
        on_disk = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        on_disk = []  # none yet (or not JSON: only a crash inside a write could leave that)
    if not isinstance(on_disk, list):
        on_disk = []
    on_disk = [_numbers_read(r) for r in on_disk if isinstance(r, dict)]
    if run is not None and on_disk:
        history = [r for r in history if r.get("run") == run]
    keys = [_key(r) for r in history]
    wanted = Counter(keys)
    held = Counter(_key(r) for r in on_disk) & wanted
    new = _not_held(history, keys, held)
    # The file's copy of a record the history holds gives way to the history's: a fit's
    # restart marks a baseline before_fit in memory, on the copy the file holds unmarked.
    mine: dict[str, list[dict[str, Any]]] = {}
    for record, key in zip(history, keys, strict=True):
        mine.setdefault(key, []).append(record)
    # A resumed fit's history is the truth up to its checkpoint: the file's records of the
    # points it measured are of another run's weights when they differ from its own, and
    # its own take their places.
    restored = _by_fit_point(new)
    measured = {_fit_point(r) for r in history} - {None}
    fit_points = {(r.get("epoch"), r.get("step")) for r in on_disk if r.get("fn", "fit") == "fit"}
    own_steps = {weights_steps(r, set()) for r in history if r.get("fn", "fit") == "fit"}
    kept = []
    for record in on_disk:
        key = _key(record)
        if wanted[key]:
            wanted[key] -= 1
            kept.append(mine[key].pop(0))
            continue
        if resumed_at is None:
            kept.append(record)
            continue
        steps, point = weights_steps(record, fit_points), _fit_point(record)
        if steps is not None and steps > resumed_at:
            continue  # of weights trained past the checkpoint: the run the fit replaces
        if point not in measured:
            # A fit record the checkpoint's history lacks, of earlier weights, is another
            # run's (one with other steps an epoch): the curve had gone back in time. The
            # validation just after a mid-epoch checkpoint measured its very weights, unless
            # the history has its own record of them (another run's epoch at that step).
            if point is None or (steps == resumed_at and steps not in own_steps):
                kept.append(record)
        elif restored.get(point):  # else the history's own is in the file already
            kept.append(restored[point].pop(0))
    placed = {id(r) for r in kept}
    new = [r for r in new if id(r) not in placed]
    return kept + new if resumed_at is None else _in_step_order(kept, new)


def _key(record: dict[str, Any]) -> str:
    """A record as the file compares it: as JSON, as it is stored (NaN equals NaN there,
    tuples are lists), less its ``before_fit`` mark, which a fit's restart adds in memory
    to a baseline the file may hold unmarked: both copies had been kept, the baseline
    written twice.

    Example:
        >>> _key({"fn": "validate", "before_fit": True}) == _key({"fn": "validate"})
        True
    """
    return json.dumps({k: v for k, v in record.items() if k != "before_fit"}, sort_keys=True)


def _fit_point(record: dict[str, Any]) -> tuple[Any, int] | None:
    """The ``(epoch, step)`` of a fit record, None for an evaluation or a record without a
    step (a file of an older version)."""
    step = _step(record)
    if record.get("fn", "fit") != "fit" or step is None:
        return None
    return record.get("epoch"), step


def _step(record: dict[str, Any]) -> int | None:
    """A record's ``step``, None where it has none (or not a whole number)."""
    step = record.get("step")
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def _not_held(
    history: Sequence[dict[str, Any]], keys: list[str], held: Counter[str]
) -> list[dict[str, Any]]:
    """The records of ``history`` the file lacks: one it holds n times stands for the first
    n equal ones."""
    held, new = Counter(held), []
    for record, key in zip(history, keys, strict=True):
        if held[key]:
            held[key] -= 1
        else:
            new.append(record)
    return new


def _by_fit_point(records: Sequence[dict[str, Any]]) -> dict[tuple[Any, int], list[dict[str, Any]]]:
    """The fit records among ``records`` by their ``(epoch, step)``, in order."""
    points: dict[tuple[Any, int], list[dict[str, Any]]] = {}
    for record in records:
        if (point := _fit_point(record)) is not None:
            points.setdefault(point, []).append(record)
    return points


def _in_step_order(kept: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``kept`` with ``new`` added: a fit record before the first kept one of a later step
    (the curve is drawn in the records' order), any other at the end."""
    merged = list(kept)
    for record in new:
        point = _fit_point(record)
        later = [
            i
            for i, r in enumerate(merged)
            if point is not None and (p := _fit_point(r)) is not None and p[1] > point[1]
        ]
        merged.insert(later[0] if later else len(merged), record)
    return merged


def write_files(
    folder: Path,
    stem: str,
    suffix: str,
    figures: dict[str, Any],
    history: Sequence[dict[str, Any]],
    label: str,
    *,
    unique: bool = False,
    merge: bool = False,
    resumed_at: int | None = None,
    run: str | None = None,
) -> None:
    """PNGs of one validation's figures, the error over epochs with its band, the history.

    Files: ``{stem}_{figure}_{suffix}.png`` (:func:`figure_suffix`), ``{stem}_calib_err.png``
    and ``{stem}_history.json`` in ``folder`` (created). The history written is ``history``,
    or with ``merge=True`` (a run restored from a checkpoint) the file's records followed by
    the new ones of ``history`` (of a ``validate`` / ``test`` run, its own: those whose
    ``run`` is ``run``), less, for a fit resumed from a checkpoint whose weights had
    stepped ``resumed_at`` batches, the file's records of the run it replaces
    (:func:`merged_history`); the curve draws it. With
    ``unique=True`` (a run not :func:`own_run`) figures never replace earlier files: a
    second run on the same weights gets ``..._2.png``.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp()) / "calibration"
        >>> row = {"epoch": 0, "step": 4, "error": 0.1, "lower": 0.08, "upper": 0.12}
        >>> write_files(folder, "val", "epoch000", {}, [row], "val CalibErr")
        >>> sorted(p.name for p in folder.iterdir())
        ['val_calib_err.png', 'val_history.json']
    """
    folder.mkdir(parents=True, exist_ok=True)
    if unique:
        suffix = _free_suffix(folder, stem, list(figures), suffix)
    for name, fig in figures.items():
        fig.savefig(folder / f"{stem}_{name}_{suffix}.png", dpi=100)
    path = folder / f"{stem}_history.json"
    history = merged_history(path, history, resumed_at, run) if merge else list(history)
    curve(history, label).savefig(folder / f"{stem}_calib_err.png", dpi=100)
    # Written beside, then renamed: an interrupted write leaves the old file whole.
    partial = path.with_name(path.name + ".partial")
    with open(partial, "w", encoding="utf-8") as stream:
        json.dump(_strict_json(history), stream, indent=1, allow_nan=False)
    os.replace(partial, path)


# The numbers of a record (and of its per-class results) that may be NaN: an interval's of
# fewer than 10 pairs, for one.
_NUMBERS = ("error", "mean", "std", "lower", "upper", "smooth_error")


def _strict_json(value: Any) -> Any:
    """``value`` with every non-finite float as None: JSON has no NaN, and the history's
    ``NaN`` had stopped every strict reader (JavaScript's ``JSON.parse``, a dashboard) at
    a validation of fewer than 10 pairs.

    Example:
        >>> _strict_json([{"error": 0.1, "lower": float("nan"), "bins": [[float("inf")]]}])
        [{'error': 0.1, 'lower': None, 'bins': [[None]]}]
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict_json(v) for v in value]
    return value


def _numbers_read(record: dict[str, Any]) -> dict[str, Any]:
    """A record read back from the file with its missing numbers (``null``) as NaN, as the
    monitor holds them: the curve draws them, and the record equals its own in memory.

    Example:
        >>> _numbers_read({"epoch": 0, "lower": None, "per_class": {"a": {"upper": None}}})
        {'epoch': 0, 'lower': nan, 'per_class': {'a': {'upper': nan}}}
    """

    def read(numbers: dict[str, Any]) -> dict[str, Any]:
        return {k: math.nan if k in _NUMBERS and v is None else v for k, v in numbers.items()}

    record = read(record)
    if isinstance(record.get("per_class"), dict):
        record["per_class"] = {
            name: read(r) if isinstance(r, dict) else r for name, r in record["per_class"].items()
        }
    return record


def _free_suffix(folder: Path, stem: str, names: list[str], suffix: str) -> str:
    """``suffix``, or ``suffix_2``, ``_3``, ...: the first that names no existing figure."""
    candidate, n = suffix, 1
    while any((folder / f"{stem}_{name}_{candidate}.png").exists() for name in names):
        n += 1
        candidate = f"{suffix}_{n}"
    return candidate


def curve(history: Sequence[dict[str, Any]], label: str) -> Any:
    """The error of the fit's validations as a line with its band, over epochs (over steps
    when some epoch was validated more than once), and the ``validate`` / ``test`` runs as
    points with error bars at the epoch (step) of the weights they measured; those made
    before the fit (``before_fit``: a baseline, of the weights it started from) at -1,
    before its first validation (of weights trained one epoch, or one step), whatever
    earlier fit those weights came from.

    Example:
        >>> rows = [{"epoch": e, "step": 6 * (e + 1), "error": 0.1, "lower": 0.08,
        ...          "upper": 0.12} for e in (0, 0, 1)]
        >>> curve(rows, "val CalibErr").axes[0].get_xlabel()
        'step'
    """
    from calib_metrics import plot  # matplotlib only once there is something to draw

    fit = [r for r in history if r.get("fn", "fit") == "fit"]
    runs = [r for r in history if r.get("fn", "fit") != "fit"]
    epochs = [r["epoch"] for r in fit]
    x = "step" if len(set(epochs)) < len(epochs) else "epoch"
    if fit:
        columns = ([r[key] for r in fit] for key in (x, "error", "lower", "upper"))
        fig, ax = plot.error_curve(*columns, xlabel=x, label=label, integer_x=True)
    else:  # validate / test runs alone (error_curve refuses no points): their points only
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator

        fig = Figure(figsize=(6.0, 4.0), layout="constrained")
        ax = fig.add_subplot()
        ax.set(xlabel=x, ylabel="calibration error", title=label)
        ax.title.set_fontsize(9)
        # Epochs or steps, as the fit's; one run spans less than 1: one whole tick then.
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.grid(alpha=0.3)
    for fn, before in dict.fromkeys((r["fn"], bool(r.get("before_fit"))) for r in runs):
        points = [r for r in runs if (r["fn"], bool(r.get("before_fit"))) == (fn, before)]
        error = [r["error"] for r in points]
        # An estimate may lie outside its interval (the paper's interval of an error near
        # 0): its bar starts at the estimate, a negative length had failed matplotlib.
        below = [max(r["error"] - r["lower"], 0.0) for r in points]
        above = [max(r["upper"] - r["error"], 0.0) for r in points]
        ax.errorbar(
            [-1 if before else r[x] for r in points], error, yerr=[below, above], fmt="s",
            capsize=3, label=f"trainer.{fn}()" + (" before the fit" if before else ""),
        )  # fmt: skip
    if runs:
        ax.legend(fontsize=8)
    return fig
