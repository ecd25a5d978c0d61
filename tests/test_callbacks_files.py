"""What CalibrationMonitor draws and keeps on disk: figures only where a logger keeps them,
one file per validation, and a history on disk that a checkpoint's run never shortens."""

from __future__ import annotations

import json
import math
import pickle
import warnings
from pathlib import Path
from typing import Any

import pytest
import test_callbacks as _helpers
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from torch.utils.data import DataLoader, TensorDataset

# The tiny tagger and run helpers of test_callbacks.py (tests are not a package).
TinyTagger, loaders, monitor, trainer, tagging_data = (
    _helpers.TinyTagger,
    _helpers.loaders,
    _helpers.monitor,
    _helpers.trainer,
    _helpers.tagging_data,
)


def quietly(fn, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _fit_saving_every_epoch(tmp_path: Path, callback, model=None):
    """A 3-epoch fit with ``callback`` and a checkpoint per epoch (ckpt/epoch=E.ckpt) into
    a CSV logger of a fixed version; its trainer, logger and model."""
    train, val = loaders()
    saved = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, filename="{epoch}")
    logger = CSVLogger(tmp_path, name="csv", version=0)
    run = trainer(
        tmp_path, 3, logger=logger, callbacks=[callback, saved], enable_checkpointing=True
    )
    model = TinyTagger() if model is None else model
    quietly(run.fit, model, train, val)
    return run, logger, model, val


@pytest.mark.parametrize(
    ("logger", "save_png"), [(False, None), ("csv", False)], ids=["no logger", "csv, no png"]
)
def test_nothing_is_drawn_when_nothing_keeps_it(tmp_path: Path, monkeypatch, logger, save_png):
    """The diagrams were drawn every epoch and thrown away (no logger, PNGs off)."""
    from calib_metrics import plot

    drawn: list[str] = []
    original = plot.reliability_diagram

    def spy(*args: Any, **kwargs: Any) -> Any:
        drawn.append(kwargs.get("title", ""))
        return original(*args, **kwargs)

    monkeypatch.setattr(plot, "reliability_diagram", spy)
    cb = monitor(save_png=save_png)
    train, val = loaders()
    chosen = CSVLogger(tmp_path, name="csv") if logger == "csv" else False
    quietly(trainer(tmp_path, 2, logger=chosen, callbacks=[cb]).fit, TinyTagger(), train, val)
    assert len(cb.history) == 2  # measured and logged all the same
    assert drawn == []
    assert not list(tmp_path.rglob("*.png"))


def test_several_validations_an_epoch_keep_a_file_each_and_plot_over_steps(
    tmp_path: Path, monkeypatch
) -> None:
    """val_check_interval=0.5: the mid-epoch diagram was overwritten by the epoch-end one
    (both named ..._epoch000.png) and the curve over epochs drew vertical segments."""
    from calib_metrics import plot

    curves: list[tuple[list, str]] = []
    original = plot.error_curve

    def spy(x: Any, *args: Any, **kwargs: Any) -> Any:
        curves.append((list(x), kwargs["xlabel"]))
        return original(x, *args, **kwargs)

    monkeypatch.setattr(plot, "error_curve", spy)
    cb = monitor()
    train, val = loaders(batch_size=8)  # 6 training batches: validation after 3 and 6
    logger = CSVLogger(tmp_path, name="csv")
    run = trainer(tmp_path, 2, logger=logger, callbacks=[cb], val_check_interval=0.5)
    quietly(run.fit, TinyTagger(), train, val)
    steps = [r["step"] for r in cb.history]
    assert [r["epoch"] for r in cb.history] == [0, 0, 1, 1]
    assert steps == sorted(set(steps))
    folder = Path(logger.log_dir) / "calibration"
    diagrams = sorted(p.name for p in folder.glob("val_reliability_diagram_*.png"))
    assert diagrams == [
        f"val_reliability_diagram_epoch{r['epoch']:03d}_step{r['step']:06d}.png" for r in cb.history
    ]
    assert curves[-1] == (steps, "step")


def test_validating_a_checkpoint_adds_a_record_of_its_weights_and_loses_none(
    tmp_path: Path,
) -> None:
    """fit, then trainer.validate(ckpt_path=<epoch 0>): Lightning restored the monitor's
    state for the validate run too, so history fell back to the checkpoint's (epoch 0) and
    val_history.json and the curve were rewritten without epochs 1 and 2; the new record
    said epoch 3 (the trainer's) for epoch 0's weights."""
    cb = monitor()
    run, logger, model, val = _fit_saving_every_epoch(tmp_path, cb)
    fitted = [dict(r) for r in cb.history]
    assert [r["epoch"] for r in fitted] == [0, 1, 2]

    first = tmp_path / "ckpt" / "epoch=0.ckpt"
    quietly(run.validate, model, val, ckpt_path=first, verbose=False)
    assert cb.history[:3] == fitted
    assert [r["fn"] for r in fitted] == ["fit"] * 3
    (record,) = cb.history[3:]
    step = torch.load(first, weights_only=False)["global_step"]
    assert (record["fn"], record["epoch"], record["step"]) == ("validate", 0, step)
    assert record["checkpoint"] == str(first)
    assert record["error"] == pytest.approx(fitted[0]["error"], rel=1e-9)  # epoch 0's weights
    folder = Path(logger.log_dir) / "calibration"
    assert json.loads((folder / "val_history.json").read_text()) == cb.history
    names = {p.name for p in folder.glob("val_reliability_diagram_*.png")}
    assert names == {
        *(f"val_reliability_diagram_epoch{e:03d}.png" for e in range(3)),
        f"val_reliability_diagram_validate_epoch000_step{step:06d}.png",
    }

    # The same checkpoint again: one more record, and its own files beside the first's.
    quietly(run.validate, model, val, ckpt_path=first, verbose=False)
    assert len(cb.history) == 5
    assert json.loads((folder / "val_history.json").read_text()) == cb.history
    assert (folder / f"val_reliability_diagram_validate_epoch000_step{step:06d}_2.png").exists()

    # A fresh monitor (a new process) validating epoch 1 into the same folder: it starts
    # from the checkpoint's history, and the file keeps every record it held.
    fresh = monitor()
    again = trainer(
        tmp_path, 3, logger=CSVLogger(tmp_path, name="csv", version=0), callbacks=[fresh]
    )
    second = tmp_path / "ckpt" / "epoch=1.ckpt"
    quietly(again.validate, TinyTagger(), val, ckpt_path=second, verbose=False)
    assert fresh.history[:2] == fitted[:2]
    assert [(r["fn"], r["epoch"]) for r in fresh.history[2:]] == [("validate", 1)]
    on_disk = json.loads((folder / "val_history.json").read_text())
    assert on_disk == [*cb.history, fresh.history[-1]]


def test_each_evaluation_of_a_checkpoint_in_a_new_process_adds_its_record(
    tmp_path: Path,
) -> None:
    """Two fresh monitors (two processes) validating the same checkpoint into one folder:
    the second wrote ..._2.png, but its record, equal in every number to the first's, was
    taken for one the file held, and the file kept one. Records carry their run's id."""
    _, logger, _, val = _fit_saving_every_epoch(tmp_path, monitor())
    folder = Path(logger.log_dir) / "calibration"
    fitted = json.loads((folder / "val_history.json").read_text())
    made = []
    for _ in range(2):
        fresh = monitor()
        again = trainer(
            tmp_path, 3, logger=CSVLogger(tmp_path, name="csv", version=0), callbacks=[fresh]
        )
        ckpt = tmp_path / "ckpt" / "epoch=1.ckpt"
        quietly(again.validate, TinyTagger(), val, ckpt_path=ckpt, verbose=False)
        made.append(fresh.history[-1])
    assert json.loads((folder / "val_history.json").read_text()) == [*fitted, *made]
    assert made[0]["error"] == made[1]["error"] and made[0]["run"] != made[1]["run"]
    assert len(list(folder.glob("val_reliability_diagram_validate_*.png"))) == 2


def test_a_fresh_fit_into_the_same_folder_rewrites_the_history_file(tmp_path: Path) -> None:
    """Two fresh fits (no logger, save_png=True) into one default_root_dir: the second's
    val_history.json held both runs' records and its curve drew one line through steps
    [2, 5, 2, 5]. Only a run that restored the monitor from a checkpoint adds to the file."""
    folder = tmp_path / "calibration"
    for seed in range(2):
        torch.manual_seed(seed)
        cb = monitor(save_png=True)
        train, val = loaders()
        run = trainer(tmp_path, 2, logger=False, callbacks=[cb])
        quietly(run.fit, TinyTagger(lr=0.3 + seed), train, val)
        assert json.loads((folder / "val_history.json").read_text()) == cb.history
    assert [r["epoch"] for r in cb.history] == [0, 1]


def test_test_runs_keep_their_file_names(tmp_path: Path) -> None:
    """A stage="test" monitor named trainer.test's diagram test_reliability_diagram_epoch003.png,
    then ..._test_epoch003_step000009.png, and a second trainer.test added ..._2.png. Only a
    checkpoint's evaluation (ckpt_path=) is named by its run, epoch and step."""
    train, val = loaders()
    saved = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, filename="{epoch}")
    cb = monitor(stage="test")
    logger = CSVLogger(tmp_path, name="csv", version=0)
    run = trainer(tmp_path, 3, logger=logger, callbacks=[cb, saved], enable_checkpointing=True)
    model = TinyTagger()
    quietly(run.fit, model, train, val)
    quietly(run.test, model, val, verbose=False)
    quietly(run.test, model, val, verbose=False)
    folder = Path(logger.log_dir) / "calibration"
    assert [p.name for p in folder.glob("test_reliability_diagram_*.png")] == [
        "test_reliability_diagram_epoch003.png"
    ]
    first = tmp_path / "ckpt" / "epoch=0.ckpt"
    quietly(run.test, model, val, ckpt_path=first, verbose=False)
    step = torch.load(first, weights_only=False)["global_step"]
    assert sorted(p.name for p in folder.glob("test_reliability_diagram_*.png")) == [
        "test_reliability_diagram_epoch003.png",
        f"test_reliability_diagram_test_epoch000_step{step:06d}.png",
    ]


def test_a_manual_load_state_dict_after_a_checkpoints_validation_is_not_ignored(
    tmp_path: Path,
) -> None:
    """The checkpoint a validate run restored was remembered after the run, so a later
    ``load_state_dict`` was taken for that run's restore and silently ignored."""
    train, val = loaders()
    saved = ModelCheckpoint(dirpath=tmp_path / "ckpt", filename="last")
    cb = monitor()
    run = trainer(tmp_path, 1, logger=False, callbacks=[cb, saved], enable_checkpointing=True)
    model = TinyTagger()
    quietly(run.fit, model, train, val)
    quietly(run.validate, model, val, ckpt_path=tmp_path / "ckpt" / "last.ckpt", verbose=False)
    assert [r["fn"] for r in cb.history] == ["fit", "validate"]
    cb.load_state_dict({"history": cb.history[:1]})
    assert [r["fn"] for r in cb.history] == ["fit"]


def test_validating_the_current_weights_names_the_last_fit_epoch(tmp_path: Path) -> None:
    """After a 3-epoch fit, validate() without ckpt_path recorded epoch 3, step 9 for the
    weights whose fit record says epoch 2, step 8."""
    train, val = loaders()
    cb = monitor()
    run = trainer(tmp_path, 3, logger=False, callbacks=[cb])
    model = TinyTagger()
    quietly(run.fit, model, train, val)
    quietly(run.validate, model, val, verbose=False)
    last_fit, record = cb.history[-2:]
    assert (record["fn"], record["checkpoint"]) == ("validate", None)
    assert (record["epoch"], record["step"]) == (last_fit["epoch"], last_fit["step"]) == (2, 8)
    assert record["error"] == pytest.approx(last_fit["error"], rel=1e-9)


def test_validating_after_a_checkpoint_s_validation_names_the_checkpoint_s_weights(
    tmp_path: Path,
) -> None:
    """validate(ckpt_path=<epoch 0>) loads epoch 0's weights into the module at the
    trainer's unchanged step; a later validate() had credited them to epoch 2 (the last
    fit record), the usual validate(ckpt_path="best") then validate(model) pattern."""
    train, val = loaders()
    saved = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, filename="{epoch}")
    cb = monitor()
    run = trainer(tmp_path, 3, logger=False, callbacks=[cb, saved], enable_checkpointing=True)
    model = TinyTagger()
    quietly(run.fit, model, train, val)
    first = tmp_path / "ckpt" / "epoch=0.ckpt"
    quietly(run.validate, model, val, ckpt_path=first, verbose=False)
    quietly(run.validate, model, val, verbose=False)
    from_checkpoint, plain = cb.history[-2:]
    assert plain["fn"] == "validate" and plain["checkpoint"] == str(first)
    assert (plain["epoch"], plain["step"]) == (from_checkpoint["epoch"], from_checkpoint["step"])
    assert plain["error"] == pytest.approx(cb.history[0]["error"], rel=1e-9)  # epoch 0's


def test_a_monitor_reused_for_a_new_fit_starts_a_new_history(tmp_path: Path) -> None:
    """One monitor object, two fresh fits (a notebook, a search over settings): the
    second fit's history and val_history.json had held both runs, one curve through both."""
    cb = monitor(save_png=True)
    for seed in range(2):
        torch.manual_seed(seed)
        train, val = loaders()
        logger = CSVLogger(tmp_path, name="csv", version=seed)
        quietly(trainer(tmp_path, 2, logger=logger, callbacks=[cb]).fit, TinyTagger(), train, val)
        assert [(r["fn"], r["epoch"]) for r in cb.history] == [("fit", 0), ("fit", 1)]
        on_disk = Path(logger.log_dir) / "calibration" / "val_history.json"
        assert json.loads(on_disk.read_text()) == cb.history


def test_a_baseline_validate_before_fit_is_kept_by_the_same_trainer(tmp_path: Path) -> None:
    """trainer.validate(model) then trainer.fit(model), one trainer: the fit started at
    step 0 without a checkpoint, so it cleared the history; the baseline record, its
    point on the curve and its place in val_history.json were lost (its PNG orphaned).
    A new Trainer's fit still starts a new history."""
    train, val = loaders()
    cb = monitor()
    logger = CSVLogger(tmp_path, name="csv", version=0)
    run = trainer(tmp_path, 2, logger=logger, callbacks=[cb])
    model = TinyTagger()
    quietly(run.validate, model, val, verbose=False)
    baseline = cb.history[0]
    # ddp_spawn pickles the callbacks: the Trainers the monitor notes must not stop it.
    # (Lightning's log / log_dict, bound to a module of this file, do not pickle here.)
    state = {k: v for k, v in cb.__getstate__().items() if not callable(v)}
    copied = type(cb).__new__(type(cb))
    copied.__dict__.update(pickle.loads(pickle.dumps(state)))
    assert copied.history == cb.history
    quietly(run.fit, model, train, val)
    assert [(r["fn"], r["epoch"]) for r in cb.history] == [
        ("validate", 0),
        ("fit", 0),
        ("fit", 1),
    ]
    assert cb.history[0] is baseline
    folder = Path(logger.log_dir) / "calibration"
    assert json.loads((folder / "val_history.json").read_text()) == cb.history

    # Another trainer's baseline is not this fit's: a new Trainer starts from nothing.
    other = trainer(tmp_path, 1, logger=False, callbacks=[cb])
    quietly(other.validate, model, val, verbose=False)
    quietly(trainer(tmp_path, 1, logger=False, callbacks=[cb]).fit, TinyTagger(), train, val)
    assert [r["fn"] for r in cb.history] == ["fit"]


def test_a_baseline_of_fitted_weights_is_drawn_before_the_new_fit(tmp_path: Path) -> None:
    """A new Trainer validates an already fitted model, then fits it on: the baseline
    names the earlier fit's weights (epoch 1, step 5), and val_calib_err.png drew it at
    epoch 1 inside the new fit's curve, beside the new fit's own epoch 1, although it
    measured the weights the new fit started from. It is now marked and drawn at -1."""
    from calib_metrics.callbacks import _files

    train, val = loaders()
    cb, model = monitor(), TinyTagger()

    def run() -> Any:
        logger = CSVLogger(tmp_path, name="csv", version=0)
        return trainer(tmp_path, 2, logger=logger, callbacks=[cb])

    quietly(run().fit, model, train, val)
    again = run()
    quietly(again.validate, model, val, verbose=False)
    quietly(again.fit, model, train, val)
    assert [(r["fn"], r["epoch"], r["step"]) for r in cb.history] == [
        ("validate", 1, 5),
        ("fit", 0, 2),
        ("fit", 1, 5),
    ]
    assert cb.history[0]["before_fit"] is True
    assert not any("before_fit" in r for r in cb.history[1:])
    path = tmp_path / "csv" / "version_0" / "calibration" / "val_history.json"
    on_disk = json.loads(path.read_text())
    assert on_disk == cb.history
    ax = _files.curve(on_disk, "val CalibErr").axes[0]
    (bars,) = ax.containers
    assert list(bars.lines[0].get_xdata()) == [-1]
    assert bars.get_label() == "trainer.validate() before the fit"


def test_a_baseline_before_a_fit_resumed_before_its_first_validation_is_written_once(
    tmp_path: Path,
) -> None:
    """A baseline validate, a fit stopped before its first validation (so the file kept
    the baseline unmarked), then resumed from its checkpoint, which holds the baseline
    marked before_fit: the two copies differed, and the file held both, one drawn at
    epoch 0 and one at -1."""
    from calib_metrics.callbacks import _files

    train, val = loaders()
    cb, model = monitor(), TinyTagger()

    def run(max_epochs: int) -> Any:
        saved = ModelCheckpoint(
            dirpath=tmp_path / "ckpt", filename="{epoch}", save_on_train_epoch_end=True
        )
        logger = CSVLogger(tmp_path, name="csv", version=0)
        return trainer(
            tmp_path, max_epochs, logger=logger, callbacks=[cb, saved],
            enable_checkpointing=True, check_val_every_n_epoch=2, num_sanity_val_steps=0,
        )  # fmt: skip

    first = run(1)
    quietly(first.validate, model, val, verbose=False)
    quietly(first.fit, model, train, val)
    quietly(run(2).fit, model, train, val, ckpt_path=tmp_path / "ckpt" / "epoch=0.ckpt")
    path = tmp_path / "csv" / "version_0" / "calibration" / "val_history.json"
    on_disk = json.loads(path.read_text())
    assert [(r["fn"], r["epoch"], r.get("before_fit")) for r in on_disk] == [
        ("validate", 0, True),
        ("fit", 1, None),
    ]
    assert on_disk == cb.history
    ax = _files.curve(on_disk, "val CalibErr").axes[0]
    points = {  # the runs' points (a lone fit point's band is drawn without a line)
        c.get_label(): list(c.lines[0].get_xdata()) for c in ax.containers if c.lines[0]
    }
    assert points["trainer.validate() before the fit"] == [-1]
    assert "trainer.validate()" not in points


def test_each_trainer_keeps_its_own_history_and_file(tmp_path: Path) -> None:
    """One monitor, fit with Trainer A, fit with Trainer B, fit on with A: A's
    val_history.json lost A's records and held B's (B's fit at step 0 had reset the one
    history, and A's next fit wrote it out)."""
    cb = monitor()
    train, val = loaders()
    runs = {}
    for name in ("a", "b"):
        logger = CSVLogger(tmp_path, name=name, version=0)
        runs[name] = (trainer(tmp_path, 2, logger=logger, callbacks=[cb]), logger)
    run_a, logger_a = runs["a"]
    run_b, logger_b = runs["b"]
    model_a = TinyTagger()
    quietly(run_a.validate, model_a, val, verbose=False)
    quietly(run_a.fit, model_a, train, val)
    history_a = list(cb.history)
    quietly(run_b.fit, TinyTagger(), train, val)
    assert [(r["fn"], r["epoch"]) for r in cb.history] == [("fit", 0), ("fit", 1)]
    history_b = list(cb.history)
    run_a.fit_loop.max_epochs = 3
    quietly(run_a.fit, model_a, train, val)
    assert cb.history[:-1] == history_a  # A's history resumed, B's set aside
    assert [(r["fn"], r["epoch"]) for r in cb.history] == [
        ("validate", 0),
        ("fit", 0),
        ("fit", 1),
        ("fit", 2),
    ]
    for logger, history in ((logger_a, cb.history), (logger_b, history_b)):
        on_disk = Path(logger.log_dir) / "calibration" / "val_history.json"
        assert json.loads(on_disk.read_text()) == history
    # B again: its own history, A's set aside.
    quietly(run_b.validate, TinyTagger(), val, verbose=False)
    assert cb.history[:-1] == history_b and cb.history[-1]["fn"] == "validate"


def test_a_new_trainer_evaluating_the_fit_continues_its_run(tmp_path: Path) -> None:
    """Trainer(logger=L).fit(...), then a new Trainer(logger=L).validate(model): the
    history and val_history.json were the validate record alone (the history was each
    Trainer object's), and the record named the new Trainer's epoch 0 for weights the
    fit's last record had measured."""
    cb = monitor()
    train, val = loaders()

    def make() -> Any:
        logger = CSVLogger(tmp_path, name="csv", version=0)
        return trainer(tmp_path, 2, logger=logger, callbacks=[cb])

    model = TinyTagger()
    quietly(make().fit, model, train, val)
    fitted = list(cb.history)
    quietly(make().validate, model, val, verbose=False)
    assert cb.history[:2] == fitted
    assert [(r["fn"], r["epoch"], r["step"]) for r in cb.history] == [
        ("fit", 0, 2),
        ("fit", 1, 5),
        ("validate", 1, 5),  # the weights the fit's last record measured
    ]
    on_disk = tmp_path / "csv" / "version_0" / "calibration" / "val_history.json"
    assert json.loads(on_disk.read_text()) == cb.history


def test_trainers_without_a_folder_keep_their_own_histories(tmp_path: Path) -> None:
    """No logger, no PNGs: A fits 2 epochs, B fits afresh, A fits on. The Trainers shared
    one history, so B's fresh fit dropped A's records (A's history became [B's epoch 0,
    A's epoch 2]) and A's checkpoint saved after B's fit held B's history."""
    cb = monitor()
    train, val = loaders()
    run_a, run_b = (trainer(tmp_path, 2, logger=False, callbacks=[cb]) for _ in range(2))
    model_a = TinyTagger()
    quietly(run_a.fit, model_a, train, val)
    history_a = list(cb.history)
    quietly(run_b.fit, TinyTagger(), train, val)
    history_b = list(cb.history)
    assert {r["run"] for r in history_b}.isdisjoint(r["run"] for r in history_a)
    quietly(run_a.save_checkpoint, tmp_path / "a.ckpt")
    saved = torch.load(tmp_path / "a.ckpt", weights_only=False)["callbacks"][cb.state_key]
    assert saved["history"] == history_a
    run_a.fit_loop.max_epochs = 3
    quietly(run_a.fit, model_a, train, val)
    assert cb.history[:2] == history_a
    assert [r["epoch"] for r in cb.history] == [0, 1, 2]
    quietly(run_b.validate, TinyTagger(), val, verbose=False)
    assert cb.history[:-1] == history_b


def test_the_run_is_the_folder_its_history_file_goes_to(tmp_path: Path) -> None:
    """Loggers [TensorBoard (a new version each Trainer), CSV (version 0)]: the history
    file goes to the CSV folder only (TensorBoard shows the figures), but the run was named
    by the first logger's folder, so a new Trainer validating the fitted model started a
    history of its own and cut the CSV folder's val_history.json to its one record."""
    cb = monitor()
    train, val = loaders()

    def make() -> Any:
        loggers = [
            TensorBoardLogger(tmp_path, name="tb"),
            CSVLogger(tmp_path, name="csv", version=0),
        ]
        return trainer(tmp_path, 2, logger=loggers, callbacks=[cb])

    model = TinyTagger()
    quietly(make().fit, model, train, val)
    quietly(make().validate, model, val, verbose=False)
    assert [(r["fn"], r["epoch"]) for r in cb.history] == [
        ("fit", 0),
        ("fit", 1),
        ("validate", 1),
    ]
    on_disk = tmp_path / "csv" / "version_0" / "calibration" / "val_history.json"
    assert json.loads(on_disk.read_text()) == cb.history


def test_a_new_trainer_validating_a_checkpoint_into_the_folder_keeps_its_history(
    tmp_path: Path,
) -> None:
    """After a fit, a new Trainer writing to the fit's folder validates a checkpoint with the
    same monitor: the checkpoint's history (epoch 0's) replaced the monitor's, as for a
    fresh monitor, because the new Trainer had no history of its own."""
    cb = monitor()
    _, _, _, val = _fit_saving_every_epoch(tmp_path, cb)
    fitted = list(cb.history)
    again = trainer(tmp_path, 3, logger=CSVLogger(tmp_path, name="csv", version=0), callbacks=[cb])
    first = tmp_path / "ckpt" / "epoch=0.ckpt"
    quietly(again.validate, TinyTagger(), val, ckpt_path=first, verbose=False)
    assert cb.history[:3] == fitted
    assert [(r["fn"], r["epoch"]) for r in cb.history[3:]] == [("validate", 0)]
    on_disk = tmp_path / "csv" / "version_0" / "calibration" / "val_history.json"
    assert json.loads(on_disk.read_text()) == cb.history


def test_an_evaluation_names_the_weights_of_its_module_after_another_trainer_ran(
    tmp_path: Path,
) -> None:
    """A.fit(model_a), B.fit(model_b), A.validate(model_a): the record named A's trainer
    epoch 2, step 6 for the weights A's last fit record (epoch 1, step 5) measured: the
    naming of the measured weights was the monitor's one, overwritten by B's fit."""
    cb = monitor()
    train, val = loaders()
    run_a, run_b = (trainer(tmp_path, 2, logger=False, callbacks=[cb]) for _ in range(2))
    model_a = TinyTagger()
    quietly(run_a.fit, model_a, train, val)
    last_a = cb.history[-1]
    quietly(run_b.fit, TinyTagger(), train, val)
    quietly(run_a.validate, model_a, val, verbose=False)
    record = cb.history[-1]
    assert (record["fn"], record["epoch"], record["step"]) == ("validate", 1, 5)
    assert record["error"] == pytest.approx(last_a["error"], rel=1e-9)


def test_a_checkpoint_holds_the_history_of_the_trainer_saving_it(tmp_path: Path) -> None:
    """A.fit, B.fit (another folder), A.save_checkpoint(path): the checkpoint held B's
    history, the one the monitor served last, and a run restoring it continued B's."""
    cb = monitor()
    train, val = loaders()
    run_a, run_b = (
        trainer(tmp_path, 2, logger=CSVLogger(tmp_path, name=name, version=0), callbacks=[cb])
        for name in ("a", "b")
    )
    quietly(run_a.fit, TinyTagger(), train, val)
    history_a = [dict(r) for r in cb.history]
    quietly(run_b.fit, TinyTagger(), train, val)
    assert {r["run"] for r in cb.history}.isdisjoint(r["run"] for r in history_a)
    quietly(run_a.save_checkpoint, tmp_path / "a.ckpt")
    saved = torch.load(tmp_path / "a.ckpt", weights_only=False)["callbacks"][cb.state_key]
    assert saved["history"] == history_a

    fresh = monitor()
    resumed = trainer(tmp_path, 3, logger=CSVLogger(tmp_path, name="c"), callbacks=[fresh])
    quietly(resumed.fit, TinyTagger(), train, val, ckpt_path=tmp_path / "a.ckpt")
    assert fresh.history[:2] == history_a
    assert [r["epoch"] for r in fresh.history] == [0, 1, 2]


def test_a_resumed_fit_replaces_the_file_s_records_after_its_checkpoint(tmp_path: Path) -> None:
    """A fit resumed from epoch 1's checkpoint into the same folder added its re-run epoch 2
    after the abandoned run's epoch 2 in val_history.json (and the curve went back in
    time), whenever the re-run differs (here: other training data). The file's records of
    weights trained past the checkpoint go; those of earlier weights stay."""
    first = monitor()
    run, logger, model, val = _fit_saving_every_epoch(tmp_path, first)
    quietly(run.validate, model, val, verbose=False)  # the last weights: past the checkpoint
    quietly(run.validate, model, val, ckpt_path=tmp_path / "ckpt" / "epoch=0.ckpt", verbose=False)
    folder = Path(logger.log_dir) / "calibration"
    abandoned = json.loads((folder / "val_history.json").read_text())
    assert [(r["fn"], r["step"]) for r in abandoned] == [
        ("fit", 2),
        ("fit", 5),
        ("fit", 8),
        ("validate", 8),
        ("validate", 3),
    ]

    other = torch.utils.data.DataLoader(_helpers.tagging_data(48, seed=7), batch_size=16)
    second = monitor()
    resumed = trainer(
        tmp_path, 3, logger=CSVLogger(tmp_path, name="csv", version=0), callbacks=[second]
    )
    quietly(resumed.fit, TinyTagger(), other, val, ckpt_path=tmp_path / "ckpt" / "epoch=1.ckpt")
    assert second.history[:2] == first.history[:2]
    assert second.history[2]["error"] != first.history[2]["error"]  # a different epoch 2
    on_disk = json.loads((folder / "val_history.json").read_text())
    assert on_disk == [*second.history[:2], abandoned[4], second.history[2]]


def test_validating_an_abandoned_run_s_checkpoint_adds_only_its_own_record(
    tmp_path: Path,
) -> None:
    """Fit (run A), resume from A's epoch-0 checkpoint (run B: the file drops A's epochs 1
    and 2), then a fresh monitor validates A's epoch-2 checkpoint into the folder: it takes
    the checkpoint's history (A's three epochs), and the file got A's dropped epochs back,
    after B's, before the validate record."""
    _, logger, _, val = _fit_saving_every_epoch(tmp_path, monitor())
    folder = Path(logger.log_dir) / "calibration"
    other = torch.utils.data.DataLoader(_helpers.tagging_data(48, seed=7), batch_size=16)
    resumed = trainer(
        tmp_path, 3, logger=CSVLogger(tmp_path, name="csv", version=0), callbacks=[monitor()]
    )
    quietly(resumed.fit, TinyTagger(), other, val, ckpt_path=tmp_path / "ckpt" / "epoch=0.ckpt")
    after_resume = json.loads((folder / "val_history.json").read_text())
    assert [r["epoch"] for r in after_resume] == [0, 1, 2]

    fresh = monitor()
    again = trainer(
        tmp_path, 3, logger=CSVLogger(tmp_path, name="csv", version=0), callbacks=[fresh]
    )
    abandoned = tmp_path / "ckpt" / "epoch=2.ckpt"
    model = TinyTagger()
    quietly(again.validate, model, val, ckpt_path=abandoned, verbose=False)
    assert [(r["fn"], r["epoch"]) for r in fresh.history] == [
        ("fit", 0),
        ("fit", 1),
        ("fit", 2),
        ("validate", 2),
    ]
    on_disk = json.loads((folder / "val_history.json").read_text())
    assert on_disk == [*after_resume, fresh.history[-1]]
    # A plain validate after it, same Trainer and weights: it had rewritten the file with
    # the monitor's history, the checkpoint's, and run A's dropped epochs came back.
    quietly(again.validate, model, val, verbose=False)
    on_disk = json.loads((folder / "val_history.json").read_text())
    assert on_disk == [*after_resume, *fresh.history[-2:]]


def test_a_fit_resumed_from_a_replaced_run_s_checkpoint_puts_its_records_back_in_place(
    tmp_path: Path,
) -> None:
    """Fit (run A), resume from A's epoch-0 checkpoint (run B, other training data: the file
    holds A's epoch 0 then B's epochs 1, 2), then resume from A's epoch-1 checkpoint (run
    C). The file kept B's epoch 1, of weights up to the checkpoint's step, and added A's
    epoch 1 from the checkpoint's history after it: epoch 1 twice, the curve back in time.
    The checkpoint's history is the truth for its weights: its records replace B's."""
    _, logger, _, val = _fit_saving_every_epoch(tmp_path, monitor())
    folder = Path(logger.log_dir) / "calibration"

    def resume(train: DataLoader, checkpoint: str) -> Any:
        cb = monitor()
        run = trainer(
            tmp_path, 3, logger=CSVLogger(tmp_path, name="csv", version=0), callbacks=[cb]
        )
        quietly(run.fit, TinyTagger(), train, val, ckpt_path=tmp_path / "ckpt" / checkpoint)
        return cb

    other = DataLoader(_helpers.tagging_data(48, seed=7), batch_size=16)
    replacing = resume(other, "epoch=0.ckpt")
    on_disk = json.loads((folder / "val_history.json").read_text())
    assert on_disk == replacing.history

    third = resume(loaders()[0], "epoch=1.ckpt")
    assert third.history[1]["error"] != replacing.history[1]["error"]  # another epoch 1
    on_disk = json.loads((folder / "val_history.json").read_text())
    assert [(r["epoch"], r["step"]) for r in on_disk] == [(0, 2), (1, 5), (2, 8)]
    assert on_disk == third.history


def test_a_resumed_fit_s_records_go_in_step_order_among_the_file_s(tmp_path: Path) -> None:
    """A record of the resumed fit's history the file lacks goes before the file's records
    of later steps (here the validation just after the mid-epoch checkpoint at step 6, not
    after it, where the curve drew it back in time); the file's record of a point the
    history measured is replaced in its place."""
    from calib_metrics.callbacks import _files

    path = tmp_path / "val_history.json"
    other = [{"fn": "fit", "epoch": 0, "step": s, "error": 0.3} for s in (2, 5)]
    path.write_text(json.dumps(other))
    restored = [{"fn": "fit", "epoch": 0, "step": s, "error": 0.1} for s in (2, 4)]
    merged = _files.merged_history(path, restored, resumed_at=6)
    assert merged == [restored[0], restored[1], other[1]]


def test_a_replaced_run_s_records_of_other_steps_go(tmp_path: Path) -> None:
    """Run B, resumed from A's epoch 0 with 5 batches an epoch (A had 3), left its epochs at
    steps 7 and 12; C resumed from A's epoch-2 checkpoint (9 steps). B's epoch 2 is past it
    and went, but B's epoch 1 (step 7), a point A's history never measured, stayed beside
    A's (step 5): epoch 1 twice. The checkpoint's history is the truth up to its step."""
    from calib_metrics.callbacks import _files

    def records(run: str, points: list[tuple[int, int]]) -> list[dict[str, Any]]:
        return [{"fn": "fit", "epoch": e, "step": s, "run": run} for e, s in points]

    a, b = records("A", [(0, 2), (1, 5), (2, 8)]), records("B", [(1, 7), (2, 12)])
    c = records("C", [(3, 11)])
    path = tmp_path / "val_history.json"
    path.write_text(json.dumps([a[0], *b]))
    assert _files.merged_history(path, [*a, *c], resumed_at=9) == [*a, *c]
    # R4: B with 6 batches an epoch left its epoch 1 at step 8, A's epoch 2's step, whose
    # weights (9 steps) are the checkpoint's: not the validation just after a mid-epoch
    # checkpoint, as the history has its own record of those weights.
    b = records("B", [(1, 8), (2, 14)])
    path.write_text(json.dumps([a[0], *b]))
    assert _files.merged_history(path, [*a, *c], resumed_at=9) == [*a, *c]


def test_a_validation_just_after_a_mid_epoch_checkpoint_stays_in_the_file(
    tmp_path: Path,
) -> None:
    """A checkpoint saved every 3 steps comes before that batch's validation (logged at
    step 2), which measured the checkpoint's weights and which the resumed fit does not
    repeat: it stays; the validations after it (steps 5, 8) are re-run and replaced."""
    from calib_metrics.callbacks import _files

    path = tmp_path / "val_history.json"
    old = [{"fn": "fit", "epoch": 0, "step": s, "error": 0.1} for s in (2, 5, 8)]
    path.write_text(json.dumps(old))
    new = [{"fn": "fit", "epoch": 0, "step": s, "error": 0.2} for s in (5, 8)]
    assert _files.merged_history(path, new, resumed_at=3) == [old[0], *new]
    assert _files.merged_history(path, new) == [*old, *new]  # not resumed: nothing goes


@pytest.mark.parametrize(
    ("schedule", "batch_size", "steps"),
    [
        ({"max_epochs": 1, "val_check_interval": 3}, 8, [(0, 2), (0, 5)]),
        ({"max_epochs": 2}, 16, [(0, 2), (1, 5)]),
    ],
    ids=["mid-epoch", "at the epoch's last batch"],
)
def test_a_fit_resumed_from_a_step_checkpoint_keeps_the_validation_of_its_weights(
    tmp_path: Path, schedule: dict[str, Any], batch_size: int, steps: list[tuple[int, int]]
) -> None:
    """ModelCheckpoint(every_n_train_steps=3) saves epoch=0-step=3.ckpt in on_train_batch_end,
    before that batch's validation (logged at step 2), whose batch count it holds one low
    (2). The resume point was taken from that count, and the resumed fit dropped the
    validation of the checkpoint's own weights from the file, though it does not repeat it
    (the docs' own example, and with a checkpoint every epoch, epoch 0's validation)."""

    def fit(ckpt_path: Path | None = None) -> Any:
        cb = monitor()
        saved = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, every_n_train_steps=3)
        run = trainer(
            tmp_path,
            logger=CSVLogger(tmp_path, name="csv", version=0),
            callbacks=[cb, saved],
            enable_checkpointing=True,
            num_sanity_val_steps=0,
            **schedule,
        )
        quietly(run.fit, TinyTagger(), *loaders(batch_size), ckpt_path=ckpt_path)
        return cb

    first = fit()
    assert [(r["epoch"], r["step"]) for r in first.history] == steps
    resumed = fit(tmp_path / "ckpt" / "epoch=0-step=3.ckpt")
    assert [(r["epoch"], r["step"]) for r in resumed.history] == steps[1:]  # not repeated
    on_disk = json.loads(
        (tmp_path / "csv" / "version_0" / "calibration" / "val_history.json").read_text()
    )
    assert on_disk == [first.history[0], *resumed.history]


class _TwoOptimizers(TinyTagger):
    """Manual optimization of two optimizers: global_step counts two a batch."""

    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.other = torch.nn.Linear(1, 1)

    def training_step(self, batch, batch_idx):
        tagger, other = self.optimizers()
        loss = self._loss(batch)[0]
        tagger.zero_grad()
        self.manual_backward(loss)
        tagger.step()
        other.zero_grad()
        self.manual_backward(self.other(torch.ones(1, 1)).sum())
        other.step()

    def configure_optimizers(self):
        return [
            torch.optim.SGD(self.net.parameters(), lr=0.3),
            torch.optim.SGD(self.other.parameters(), lr=0.1),
        ]


def test_a_resume_counts_in_the_records_own_steps_with_two_optimizers(tmp_path: Path) -> None:
    """The checkpoint's global_step (12 after two epochs of 3 batches, two optimizers) had
    been compared with the records' batch counts (epoch 2 logged at 8): the abandoned
    epoch 2 stayed in the file beside the re-run one."""
    first = monitor()
    _, logger, _, val = _fit_saving_every_epoch(tmp_path, first, _TwoOptimizers())
    other = torch.utils.data.DataLoader(_helpers.tagging_data(48, seed=7), batch_size=16)
    second = monitor()
    resumed = trainer(
        tmp_path, 3, logger=CSVLogger(tmp_path, name="csv", version=0), callbacks=[second]
    )
    ckpt = tmp_path / "ckpt" / "epoch=1.ckpt"
    quietly(resumed.fit, _TwoOptimizers(), other, val, ckpt_path=ckpt)
    assert second.history[2]["error"] != first.history[2]["error"]  # a different epoch 2
    on_disk = json.loads((Path(logger.log_dir) / "calibration" / "val_history.json").read_text())
    assert on_disk == second.history


def test_a_copy_for_another_process_keeps_the_history_of_a_run_without_a_folder() -> None:
    """ddp_spawn pickles the monitor: a run with no folder is keyed by a Trainer the copy
    never sees, and the copy's first run (the spawned process's Trainer) had started anew."""
    from calib_metrics.callbacks._histories import Runs

    class Trainer:  # weakly referable, as Lightning's
        pass

    runs, trainer = Runs(), Trainer()
    runs.follow(trainer, ())
    runs.current.history.append({"epoch": 0})
    runs.follow(Trainer(), ("/logs/other",))
    runs.follow(trainer, ())  # served last: the run the copy continues
    copy = pickle.loads(pickle.dumps(runs))
    copy.follow(Trainer(), ())
    assert copy.current.history == [{"epoch": 0}]
    assert copy.of(Trainer(), ("/logs/other",)).history == []


def test_the_history_file_is_strict_json_when_an_interval_is_missing(tmp_path: Path) -> None:
    """A validation of fewer than 10 pairs has no interval (NaN): the file had held
    ``"lower": NaN``, which JSON has not (JavaScript's JSON.parse stopped there). It holds
    null, reads back as NaN, and a later run restored from the file duplicates nothing."""
    train, _ = loaders()
    val = DataLoader(TensorDataset(*tagging_data(1, length=2, seed=1).tensors), batch_size=1)
    logger = CSVLogger(tmp_path, name="csv", version=0)
    saved = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, filename="{epoch}")
    cb = monitor()
    run = trainer(tmp_path, 2, logger=logger, callbacks=[cb, saved], enable_checkpointing=True)
    quietly(run.fit, TinyTagger(), train, val)
    quietly(run.validate, TinyTagger(), val, verbose=False)
    path = Path(logger.log_dir) / "calibration" / "val_history.json"

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    records = json.loads(path.read_text(), parse_constant=refuse)
    assert len(records) == len(cb.history) == 3
    assert all(r["lower"] is None and r["upper"] is None for r in records)
    assert all(math.isnan(r["lower"]) for r in cb.history)
    assert [r["error"] for r in records] == [r["error"] for r in cb.history]
    # A run restored from a checkpoint merges its history (NaNs included) with the file's.
    again = trainer(tmp_path, 2, logger=CSVLogger(tmp_path, name="csv", version=0),
                    callbacks=[monitor()])  # fmt: skip
    ckpt = tmp_path / "ckpt" / "epoch=1.ckpt"
    quietly(again.validate, TinyTagger(), val, ckpt_path=ckpt, verbose=False)
    merged = json.loads(path.read_text(), parse_constant=refuse)
    assert merged[:3] == records and len(merged) == 4 and merged[3]["fn"] == "validate"


def test_the_curve_of_runs_alone_names_its_metric_on_whole_epochs() -> None:
    """Validate / test runs without a fit record: the curve had no points for error_curve,
    then ticks at -0.04 ... 0.04 and no word of the metric it shows (review R6)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from calib_metrics.callbacks import _files

    rows = [{"fn": "validate", "epoch": 3, "step": 12, "error": 0.1, "lower": 0.08, "upper": 0.12}]
    fig = _files.curve(rows, "val CalibErr (95% interval)")
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    assert ax.get_title() == "val CalibErr (95% interval)"
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_a_run_whose_error_lies_outside_its_interval_is_drawn() -> None:
    """The paper's interval of an error near 0 may lie above it: its negative bar length
    had failed matplotlib ("'yerr' must not contain negative values") and, with it, the
    run's files (review R7)."""
    from calib_metrics.callbacks import _files

    run = {"fn": "validate", "epoch": 0, "step": 3, "error": 0.0, "lower": 0.004, "upper": 0.15}
    fit = {"fn": "fit", "epoch": 0, "step": 3, "error": 0.1, "lower": 0.05, "upper": 0.15}
    for rows in ([run], [fit, run]):
        assert _files.curve(rows, "val CalibErr").axes
