"""CalibrationMonitor on day one: the README's snippets, shared tags, several loaders, no logger."""

from __future__ import annotations

import copy
import csv
import pickle
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import test_callbacks as _helpers
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger
from torch.utils.data import DataLoader, TensorDataset

from calib_metrics import CalibrationError
from calib_metrics.callbacks import CalibrationMonitor

# The tiny tagger and run helpers of test_callbacks.py (tests are not a package).
N_CLASSES, PAD, TinyTagger = _helpers.N_CLASSES, _helpers.PAD, _helpers.TinyTagger
loaders, monitor, read_events = _helpers.loaders, _helpers.monitor, _helpers.read_events
trainer = _helpers.trainer

README = Path(__file__).resolve().parents[1] / "README.md"


def caught(fn, *args, **kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    return [str(r.message) for r in records]


def caught_result(fn, *args, **kwargs) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def test_monitor_defaults_are_the_recommended_estimator() -> None:
    metric = CalibrationMonitor().metric
    assert (metric.bin_size, metric.debias, metric.interval) == ("auto", True, None)
    assert metric.streaming and not CalibrationMonitor().accepts_groups


# ------------------------------------------------------------- the README's snippets


def readme_section_code(heading: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def padded_tags(n: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    words = torch.randint(0, 50, (n, length), generator=g)
    tags = (words % 47).clone()
    tags[:, length - 2 :] = PAD
    return words, tags


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_readme_snippets_run_as_written_and_log_what_they_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the README's Trainer logs to ./lightning_logs
    torch.manual_seed(0)
    words, tags = padded_tags(64, 12, seed=0)
    model = torch.nn.Embedding(50, 47)  # a "tagger" whose logits depend on the word
    namespace: dict[str, Any] = {
        "model": model,
        "val_loader": DataLoader(TensorDataset(words, tags), batch_size=16),
        "val_loader_with_ids": DataLoader(
            TensorDataset(words, tags, torch.arange(64)), batch_size=16
        ),
        # The comparison snippet's two taggers: the model and a sharpened copy of it, each
        # taking the padding mask the snippet passes, as the library's taggers do.
        "hmm": lambda w, mask: model(w).softmax(-1),
        "crf": lambda w, mask: (2 * model(w)).softmax(-1),
    }
    blocks = [b for b in readme_section_code("The metric in a training loop")]
    # The functional blocks name tensors the section never builds; the label-by-label
    # block reads fields of a batch object (batch.q_a, ...) that a TensorDataset lacks.
    runnable = [b for b in blocks if "calib_metrics.functional" not in b and "batch.q_a" not in b]
    assert len(runnable) == 4 and "CalibrationMonitor" in runnable[2]
    assert "CalibrationComparison" in runnable[3]
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        for block in runnable:
            exec(compile(block, str(README), "exec"), namespace)
    messages = [str(r.message) for r in records]
    # The module's own tag and the monitor's do not collide, so nothing warns about it.
    assert not [m for m in messages if "CalibrationMonitor: the LightningModule also logs" in m]
    (logged,) = namespace["metrics"]
    assert {"val/ece", "val/calib_err", "val/calib_err_lower", "val/calib_err_upper"} <= set(logged)
    with torch.no_grad():
        probs = model(words).softmax(-1)
    exact = CalibrationError(num_classes=47, ignore_index=PAD)
    exact.update(probs, tags)
    assert logged["val/ece"] == pytest.approx(exact.compute().item(), rel=1e-5)
    result = namespace["monitor"].history[-1]
    assert logged["val/calib_err"] == pytest.approx(result["error"], rel=1e-5)
    assert result["lower"] <= result["upper"]
    # The second snippet's groups made the interval resample sentences.
    assert namespace["metric"]._interval(namespace["groups"]) == "groups"
    # The comparison snippet compared the two taggers on every non-padding token.
    compared = namespace["r"]
    assert compared.a.error.item() == pytest.approx(exact.compute().item(), rel=1e-5)
    assert compared.difference.item() < 0  # the sharpened copy is the worse calibrated
    assert namespace["per_tag"].labels.numel() == 47


# ------------------------------------------------------------------- shared tag


class SelfLogging(TinyTagger):
    """Logs its own CalibrationError under the monitor's tag, as the old README did."""

    def __init__(self) -> None:
        super().__init__()
        self.calib = CalibrationError(N_CLASSES, ignore_index=PAD)

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        out = super().validation_step(batch, batch_idx)
        self.calib.update(out["probs"], out["target"])
        self.log("val/calib_err", self.calib)
        return out


def test_module_logging_the_monitors_tag_is_warned_once(tmp_path: Path) -> None:
    train, val = loaders()
    messages = caught(
        trainer(tmp_path, 2, logger=False, callbacks=[monitor()]).fit, SelfLogging(), train, val
    )
    clash = [m for m in messages if "also logs 'val/calib_err'" in m]
    assert len(clash) == 1 and "self.log('val/ece', metric)" in clash[0]


class LateSelfLogging(SelfLogging):
    """Logs the monitor's tag in validation_step from validation epoch ``first`` on."""

    def __init__(self, first: int) -> None:
        super().__init__()
        self.first = first

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        if self.current_epoch < self.first:
            return TinyTagger.validation_step(self, batch, batch_idx)
        return super().validation_step(batch, batch_idx)


def test_module_logging_the_monitors_tag_from_a_later_epoch_is_warned_once(
    tmp_path: Path,
) -> None:
    """Only the first measured epoch was checked: a module logging the tag from epoch 1 on
    got no warning, and the monitor's value replaced its own without a word."""
    train, val = loaders()
    run = trainer(tmp_path, 3, logger=False, callbacks=[monitor()])
    messages = caught(run.fit, LateSelfLogging(first=1), train, val)
    assert len([m for m in messages if "also logs 'val/calib_err'" in m]) == 1


def test_module_logging_the_monitors_tag_in_a_later_validate_is_warned(tmp_path: Path) -> None:
    """The check was made once per monitor, at the fit's first epoch: a trainer.validate
    after it, whose module logs the tag, got no warning."""
    train, val = loaders()
    run = trainer(tmp_path, 1, logger=False, callbacks=[monitor()])
    model = LateSelfLogging(first=2)
    messages = caught(run.fit, model, train, val)
    assert not [m for m in messages if "also logs" in m]
    model.first = 0
    messages = caught(run.validate, model, val, verbose=False)
    assert len([m for m in messages if "also logs 'val/calib_err'" in m]) == 1


class SelfLoggingAtEpochEnd(TinyTagger):
    """Logs a value of its own under the monitor's tag in on_validation_epoch_end, which
    Lightning calls after the callbacks' (the monitor's) hook."""

    def __init__(self, **log_options: Any) -> None:
        super().__init__()
        self.log_options = log_options

    def on_validation_epoch_end(self) -> None:
        self.log("val/calib_err", 1.0, **self.log_options)


@pytest.mark.parametrize(
    "log_options",
    [{}, {"add_dataloader_idx": False}],
    ids=["default arguments", "the monitor's arguments"],
)
def test_module_logging_the_monitors_tag_at_epoch_end_is_warned_once(
    tmp_path: Path, log_options: dict[str, Any]
) -> None:
    """At epoch end the module logs after the monitor: with the default arguments the fit
    failed on Lightning's "You called self.log(val/calib_err, ...) twice ... with different
    arguments", and with the monitor's own arguments the tag got the mean of both values
    (1.0 and the monitor's), neither warned. As in validation_step, the monitor warns once
    and its value is the one logged."""
    train, val = loaders()
    cb = monitor()
    run = trainer(tmp_path, 2, logger=False, callbacks=[cb])
    messages = caught(run.fit, SelfLoggingAtEpochEnd(**log_options), train, val)
    clash = [m for m in messages if "also logs 'val/calib_err'" in m]
    assert len(clash) == 1 and "prefix=" in clash[0]
    assert len(cb.history) == 2
    assert float(run.callback_metrics["val/calib_err"]) == pytest.approx(cb.history[-1]["error"])
    # The guard lasts one call of the hook: the module logs freely outside a run.
    model = run.lightning_module
    assert "on_validation_epoch_end" not in vars(model) and "log" not in vars(model)


def test_module_logging_the_monitors_tag_at_an_epoch_the_monitor_skips(tmp_path: Path) -> None:
    """With every_n_epochs=2 the monitor's entry of epoch 1 (add_dataloader_idx=False) stayed
    in Lightning's results, and the module's own self.log of the tag at epoch 2, which the
    monitor skips, was refused ("You called self.log(val/calib_err, ...) twice ... with
    different arguments"): the fit failed. It warns once and finishes, each epoch's value
    the one logged then."""
    train, val = loaders()
    cb = monitor(every_n_epochs=2)
    run = trainer(tmp_path, 3, logger=False, callbacks=[cb])
    messages = caught(run.fit, SelfLoggingAtEpochEnd(), train, val)
    assert len([m for m in messages if "also logs 'val/calib_err'" in m]) == 1
    assert [r["epoch"] for r in cb.history] == [1]
    assert float(run.callback_metrics["val/calib_err"]) == 1.0  # epoch 2: the module's
    pickle.loads(pickle.dumps(cb))  # the entries it remembers do not travel (ddp_spawn)


def test_entries_of_fits_validation_wait_for_its_next_epoch(tmp_path: Path) -> None:
    # trainer.validate runs another loop than fit's validation, with results of its own:
    # the monitor's fit entries, still there when the same Trainer fits on, must go then.
    train, val = loaders()
    cb = monitor(every_n_epochs=2)
    run = trainer(tmp_path, 2, logger=False, callbacks=[cb])
    model = SelfLoggingAtEpochEnd()
    caught(run.fit, model, train, val)
    caught(run.validate, model, val, verbose=False)
    run.fit_loop.max_epochs = 3
    caught(run.fit, model, train, val)  # epoch 2, skipped: the module's value alone
    assert [(r["fn"], r["epoch"]) for r in cb.history] == [("fit", 1), ("validate", 1)]
    assert float(run.callback_metrics["val/calib_err"]) == 1.0


class PaddedAtEpochEnd(SelfLoggingAtEpochEnd):
    """Logs the monitor's tags at epoch end itself; every target is padding from validation
    epoch ``padded_from`` on, and in a test while ``padded`` is set: nothing to measure."""

    def __init__(self, padded_from: int) -> None:
        super().__init__()
        self.padded_from, self.padded = padded_from, False

    def _pad(self, out: dict[str, torch.Tensor], padded: bool) -> dict[str, torch.Tensor]:
        if padded:
            out["target"] = torch.full_like(out["target"], PAD)
        return out

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        out = super().validation_step(batch, batch_idx)
        return self._pad(out, self.current_epoch >= self.padded_from)

    def test_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        return self._pad(super().test_step(batch, batch_idx), self.padded)

    def on_test_epoch_end(self) -> None:
        self.log("test/calib_err", 1.0)


def test_module_logging_the_monitors_tag_at_an_epoch_with_nothing_to_measure(
    tmp_path: Path,
) -> None:
    # An epoch with nothing to measure logs nothing: the monitor's entry of the epoch before
    # refused the module's self.log of the tag, as at an epoch every_n_epochs skips.
    train, val = loaders()
    cb = monitor()
    run = trainer(tmp_path, 2, logger=False, callbacks=[cb])
    messages = caught(run.fit, PaddedAtEpochEnd(padded_from=1), train, val)
    assert len([m for m in messages if "also logs 'val/calib_err'" in m]) == 1
    assert len([m for m in messages if "nothing to measure this epoch" in m]) == 1
    assert [r["epoch"] for r in cb.history] == [0]
    assert float(run.callback_metrics["val/calib_err"]) == 1.0


def test_a_test_with_nothing_to_measure_after_one_the_monitor_logged(tmp_path: Path) -> None:
    # The test loop keeps its results across trainer.test calls: the second test's
    # on_test_epoch_end met the first test's entry of the monitor, and failed.
    _, val = loaders()
    cb = monitor(stage="test")
    run = trainer(tmp_path, 1, logger=False, callbacks=[cb])
    model = PaddedAtEpochEnd(padded_from=0)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        (first,) = run.test(model, val, verbose=False)
        model.padded = True
        (second,) = run.test(model, val, verbose=False)
    messages = [str(r.message) for r in records]
    assert len([m for m in messages if "also logs 'test/calib_err'" in m]) == 1
    assert len([m for m in messages if "nothing to measure this epoch" in m]) == 1
    assert float(first["test/calib_err"]) == pytest.approx(cb.history[0]["error"])
    assert len(cb.history) == 1 and second["test/calib_err"] == 1.0


def test_a_hook_set_on_the_module_itself_is_guarded_too(tmp_path: Path) -> None:
    # The guard looked at the module's class alone: a hook set on the instance logged the
    # monitor's tag unguarded, and Lightning refused the second call.
    train, val = loaders()
    cb = monitor()
    model = TinyTagger()
    model.on_validation_epoch_end = lambda: model.log("val/calib_err", 1.0)
    run = trainer(tmp_path, 1, logger=False, callbacks=[cb])
    messages = caught(run.fit, model, train, val)
    assert len([m for m in messages if "also logs 'val/calib_err'" in m]) == 1
    assert float(run.callback_metrics["val/calib_err"]) == pytest.approx(cb.history[-1]["error"])


class KeepsACopy(Callback):
    """Pickles and copies the module at epoch end, after the monitor, as a callback that
    keeps the best model does: the module is guarded then."""

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.pickled = pickle.dumps(pl_module)
        self.copy = copy.deepcopy(pl_module)


def test_a_module_pickled_or_copied_while_guarded_carries_no_guard(tmp_path: Path) -> None:
    # The guard held the monitor's warning as a lambda: a module pickled in that window
    # failed ("Can't pickle local object"), and a copy taken then kept the guard (and the
    # monitor) after the fit had released the original.
    train, val = loaders()
    keeper = KeepsACopy()
    run = trainer(tmp_path, 1, logger=False, callbacks=[monitor(), keeper])
    caught(run.fit, SelfLoggingAtEpochEnd(), train, val)
    for module in (pickle.loads(keeper.pickled), keeper.copy):
        pickle.dumps(module)
        module.log = lambda *args, **kwargs: None  # outside a run, as a plain call
        module.on_validation_epoch_end()  # the module's own hook, once a stand-in
        assert "on_validation_epoch_end" not in vars(module)


# ------------------------------------------------------------- several loaders


class TwoLoaderTagger(TinyTagger):
    def validation_step(
        self, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> dict[str, torch.Tensor]:
        return super().validation_step(batch, batch_idx)

    def test_step(
        self, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> dict[str, torch.Tensor]:
        return super().test_step(batch, batch_idx)


def test_two_validation_loaders_give_one_result_each(tmp_path: Path) -> None:
    train, val = loaders()
    other = DataLoader(TensorDataset(*val.dataset.tensors[:2]), batch_size=8)
    short = DataLoader(TensorDataset(*(t[:24] for t in val.dataset.tensors)), batch_size=8)
    cb = monitor(save_png=False)
    logger = TensorBoardLogger(tmp_path, name="tb")
    model = TwoLoaderTagger()
    t = trainer(tmp_path, 1, logger=logger, callbacks=[cb])
    t.fit(model, train, [other, short])
    metrics = t.callback_metrics
    for idx, loader in enumerate((other, short)):
        suffix = f"/dataloader_idx_{idx}"
        metric = CalibrationError(
            N_CLASSES, ignore_index=PAD, bin_size=20, n_samples=300, streaming=True
        )
        with torch.no_grad():
            for x, y in loader:
                metric.update(model(x), y)
        want = metric.compute_result()
        assert metrics[f"val/calib_err{suffix}"].item() == pytest.approx(
            want.error.item(), rel=1e-5
        )
        assert metrics[f"val/calib_err_upper{suffix}"].item() == pytest.approx(
            want.upper.item(), rel=1e-5
        )
    assert "val/calib_err" not in metrics  # never pooled
    assert [r["dataloader_idx"] for r in cb.history] == [0, 1]
    assert cb.history[0]["n_pairs"] != cb.history[1]["n_pairs"]
    acc = read_events(logger.log_dir)
    for idx in (0, 1):
        assert len(acc.Images(f"val/reliability_diagram/dataloader_idx_{idx}")) == 1
        assert len(acc.Scalars(f"val/calib_err/dataloader_idx_{idx}")) == 1


@pytest.mark.parametrize("stage", ["val", "test"])
def test_each_loader_returns_and_prints_its_own_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    """trainer.validate(model, [a, b]) (or test): the monitor logged every loader's values
    at the epoch end, which Lightning copies into every loader's dict of the results it
    returns, and its printed table, which strips /dataloader_idx_* from the names, showed
    the last loader's value under every loader (0.3374 under DataLoader 0 and 1)."""
    from lightning.pytorch.loggers import CSVLogger

    _, val = loaders()
    other = DataLoader(_helpers.tagging_data(24, seed=5), batch_size=8)
    cb = monitor(stage=stage, save_png=False)
    logger = CSVLogger(tmp_path, name="csv")
    t = trainer(tmp_path, 1, logger=logger, callbacks=[cb])
    run = t.validate if stage == "val" else t.test
    monkeypatch.setenv("COLUMNS", "200")  # rich's table on one line a row
    torch.manual_seed(0)  # the weights: an error of exactly 0.0 is no value to look for
    capsys.readouterr()
    returned = run(TwoLoaderTagger(), [val, other])
    printed = capsys.readouterr().out
    errors = [r["error"] for r in cb.history]
    assert [r["dataloader_idx"] for r in cb.history] == [0, 1] and errors[0] != errors[1]
    names = (*cb.scalar_names, cb.smooth_name)
    fields = ("error", "lower", "upper", "smooth_error")
    for idx, (results, record) in enumerate(zip(returned, cb.history, strict=True)):
        suffix = f"/dataloader_idx_{idx}"
        # Its own values only, beside the module's own per-loader loss.
        assert set(results) == {f"{stage}/loss{suffix}", *(name + suffix for name in names)}
        for name, field in zip(names, fields, strict=True):
            assert results[name + suffix] == pytest.approx(record[field], rel=1e-6)
    # The table prints each loader's value once, as the value it returned (the last
    # loader's was printed under both, the first loader's nowhere).
    # rich's table (│ between cells) or Lightning's plain one (spaces) without rich.
    (shown,) = [
        cells[1:]
        for cells in (re.split(r"[\s│|]+", line.strip(" │|")) for line in printed.splitlines())
        if cells[0] == f"{stage}/calib_err"
    ]
    assert shown == [
        str(float(results[f"{stage}/calib_err/dataloader_idx_{idx}"]))
        for idx, results in enumerate(returned)
    ]
    # The loggers get each value once, under its loader's tag, as before.
    with open(Path(logger.log_dir) / "metrics.csv", encoding="utf-8") as stream:
        (logged,) = list(csv.DictReader(stream))
    for idx, error in enumerate(errors):
        assert float(logged[f"{stage}/calib_err/dataloader_idx_{idx}"]) == pytest.approx(error)
    assert f"{stage}/calib_err" not in logged


def test_without_lightning_s_per_loader_results_the_values_keep_their_tags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where Lightning's results are not as the monitor expects (another version), it logs
    as it did before: each loader's values under their own tags, in every loader's dict."""
    from calib_metrics.callbacks import _loader_results

    monkeypatch.setattr(_loader_results, "available", lambda trainer, n_loaders: False)
    _, val = loaders()
    other = DataLoader(_helpers.tagging_data(24, seed=5), batch_size=8)
    cb = monitor(save_png=False)
    t = trainer(tmp_path, 1, logger=False, callbacks=[cb])
    returned = caught_result(t.validate, TwoLoaderTagger(), [val, other], verbose=False)
    for results in returned:
        for idx, record in enumerate(cb.history):
            got = results[f"val/calib_err/dataloader_idx_{idx}"]
            assert got == pytest.approx(record["error"], rel=1e-6)


def test_loaders_that_appear_later_get_their_margin_chart(tmp_path: Path) -> None:
    """The Custom Scalars layout was written once per experiment, with the loaders of the
    first write: a fit with one validation loader, then trainer.validate with two on the
    same TensorBoardLogger, left the two loaders' bands without a chart."""
    from tensorboard.plugins.custom_scalar import layout_pb2

    train, val = loaders()
    logger = TensorBoardLogger(tmp_path, name="tb")
    model = TwoLoaderTagger()
    t = trainer(tmp_path, 1, logger=logger, callbacks=[monitor(save_png=False)])
    caught(t.fit, model, train, val)
    caught(t.validate, model, [val, val], verbose=False)
    caught(t.validate, model, [val, val], verbose=False)  # nothing new: no rewrite
    configs = read_events(logger.log_dir).Tensors("custom_scalars__config__")
    layouts = [layout_pb2.Layout.FromString(c.tensor_proto.string_val[0]) for c in configs]
    charted = [[ch.margin.series[0].value for c in lo.category for ch in c.chart] for lo in layouts]
    assert charted == [
        ["val/calib_err"],
        ["val/calib_err", "val/calib_err/dataloader_idx_0", "val/calib_err/dataloader_idx_1"],
    ]


class LayoutExperiment:
    def __init__(self) -> None:
        self.layouts: list[dict[str, Any]] = []

    def add_custom_scalars(self, layout: dict[str, Any]) -> None:
        self.layouts.append(layout)


def test_a_new_experiment_at_a_freed_one_s_id_gets_its_layout() -> None:
    """Layouts were remembered by the experiment's id alone: the next fit's logger in a
    notebook, whose writer can take a freed writer's address, got no Margin chart."""
    cb = monitor(save_png=False)
    freed = LayoutExperiment()
    cb._write_layout(None, freed)
    address = id(freed)
    del freed
    # CPython hands a freed object's memory to the next object of its size.
    candidates = [LayoutExperiment() for _ in range(1000)]
    reused = [e for e in candidates if id(e) == address]
    if not reused:
        pytest.skip("no new object took the freed one's address in this interpreter")
    experiment = reused[0]
    cb._write_layout(None, experiment)
    cb._write_layout(None, experiment)  # nothing new for a live one: no rewrite
    assert len(experiment.layouts) == 1 and "calibration" in experiment.layouts[0]
    pickle.loads(pickle.dumps(cb))  # references do not travel (ddp_spawn pickles callbacks)


# -------------------------------------------------------- stage and no logger


def test_test_run_with_only_a_val_monitor_says_so_once(tmp_path: Path) -> None:
    _, val = loaders()
    cb = monitor()
    t = trainer(tmp_path, 1, logger=False, callbacks=[cb])
    messages = caught(t.test, TinyTagger(), val, verbose=False)
    messages += caught(t.test, TinyTagger(), val, verbose=False)
    said = [m for m in messages if "stage='val'" in m and "trainer.test()" in m]
    assert len(said) == 1 and "CalibrationMonitor(stage='test')" in said[0]
    assert cb.history == []


def test_no_logger_logs_quietly_and_warns_once(tmp_path: Path) -> None:
    train, val = loaders()
    cb = monitor()
    t = trainer(tmp_path, 3, logger=False, callbacks=[cb])
    messages = caught(t.fit, TinyTagger(), train, val)
    assert not [m for m in messages if "but have no logger configured" in m]
    assert len([m for m in messages if "has no logger" in m]) == 1
    assert len(cb.history) == 3
    assert t.callback_metrics["val/calib_err"].item() == pytest.approx(cb.history[-1]["error"])
    assert not [m for m in messages if "the figures and the history file go to" in m]


def test_no_logger_with_save_png_names_the_folder_of_its_files(tmp_path: Path) -> None:
    """The warning said the scalars go "only" to callback_metrics and the history while
    save_png=True wrote figures and val_history.json to <root>/calibration."""
    train, val = loaders()
    t = trainer(tmp_path, 1, logger=False, callbacks=[monitor(save_png=True)])
    said = [m for m in caught(t.fit, TinyTagger(), train, val) if "has no logger" in m]
    folder = tmp_path / "calibration"
    assert len(said) == 1 and f"the figures and the history file go to {folder}" in said[0]
    assert (folder / "val_history.json").exists()


def test_uniform_bins_in_a_streaming_monitor_name_the_fix() -> None:
    """The monitor streams by default: "streaming=True supports binning='adaptive' only"
    named a setting its user never passed, and not the fix."""
    with pytest.raises(ValueError, match="pass streaming=False for uniform bins"):
        CalibrationMonitor(num_classes=5, mode="top_label", binning="uniform", debias=False)
