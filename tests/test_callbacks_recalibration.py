"""TemperatureRecalibration in a tiny CPU Trainer run (validation under inference mode)."""

from __future__ import annotations

import csv
import math
import warnings
from typing import Any

import host_reads
import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from tensorboard.backend.event_processing.event_accumulator import IMAGES, EventAccumulator
from torch.utils.data import DataLoader, TensorDataset

from calib_metrics.callbacks import TemperatureRecalibration
from calib_metrics.recalibration import TemperatureScaling

PAD = -100
TRUE_WEIGHT = torch.randn(5, 3, generator=torch.Generator().manual_seed(9))


def _data(n: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, 5, generator=g)
    probs = torch.softmax(x @ TRUE_WEIGHT, -1).reshape(-1, 3)
    y = torch.multinomial(probs, 1, generator=g).reshape(n, 4)
    y[:, 3] = PAD
    return TensorDataset(x, y)


class Overconfident(LightningModule):
    """The true linear tagger with its logits multiplied by 5 (and a tiny learning rate)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(5, 3)
        with torch.no_grad():
            self.net.weight.copy_(TRUE_WEIGHT.t())
            self.net.bias.zero_()

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return 5 * self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(self.logits(x).reshape(-1, 3), y.reshape(-1), ignore_index=PAD)

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        x, y = batch
        return {"logits": self.logits(x), "target": y}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=1e-4)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_fits_temperature_on_validation_under_inference_mode(tmp_path):
    torch.manual_seed(0)
    model = Overconfident()
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=200)
    loggers = [CSVLogger(tmp_path, name="csv"), TensorBoardLogger(tmp_path, name="tb")]
    trainer = Trainer(
        max_epochs=2,
        accelerator="cpu",
        logger=loggers,
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        inference_mode=True,
    )
    val = _data(300, seed=1)
    trainer.fit(
        model, DataLoader(_data(300, seed=0), batch_size=50), DataLoader(val, batch_size=64)
    )

    # The same temperature as fitting directly on the final model's validation logits.
    with torch.no_grad():
        x, y = val.tensors
        logits, target = model.logits(x).reshape(-1, 3), y.reshape(-1)
    keep = target != PAD
    expected = TemperatureScaling().fit(logits[keep], target[keep]).temperature.item()
    t = callback.recalibrator.temperature.item()
    assert t == pytest.approx(expected, rel=1e-6)
    assert 3.5 < t < 6.5 and model.calibration_temperature == pytest.approx(t)
    before = callback.results["recalibration/calib_err_before"]
    after = callback.results["recalibration/calib_err_after"]
    assert after < before
    # Under the names logged: a bare "temperature" had stood beside the prefixed ones.
    errors = ("calib_err_before", "calib_err_after")
    logged = [f"{name}{end}" for name in errors for end in ("", "_lower", "_upper")]
    assert sorted(callback.results) == sorted(
        f"recalibration/{n}" for n in [*logged, "temperature"]
    )

    with open(loggers[0].log_dir + "/metrics.csv") as f:
        rows = list(csv.DictReader(f))
    logged = {k: v for r in rows for k, v in r.items() if v}
    assert float(logged["recalibration/temperature"]) == pytest.approx(t)
    assert "recalibration/calib_err_after_upper" in logged
    events = EventAccumulator(loggers[1].log_dir, size_guidance={IMAGES: 0}).Reload()
    assert {"recalibration/reliability_before", "recalibration/reliability_after"} <= set(
        events.Tags()["images"]
    )


def test_missing_logits_key_is_a_value_error():
    with pytest.raises(ValueError, match="logits"):
        TemperatureRecalibration().extract_batch({"probs": torch.zeros(2, 3)}, None)


def test_bad_options_and_shapes_are_refused_before_training_ends():
    """Before: accepted here, and a ValueError (or a flattened mismatch) only when the
    temperature was fitted, after the whole training run."""
    for options, message in (
        ({"n_samples": 0}, "n_samples"),
        ({"bin_size": "x"}, "bin_size"),
        ({"confidence": 2.0}, "confidence"),
        # Before: accepted, then a TypeError at the first batch (extract), "None/temperature"
        # tags (prefix), or a key never found.
        ({"extract": 5}, "extract must be callable"),
        ({"ignore_index": "a"}, "ignore_index must be an integer or None"),
        ({"prefix": None}, "prefix must be a non-empty string"),
        ({"prefix": ""}, "prefix must be a non-empty string"),
        ({"logits_key": None}, "logits_key must be a non-empty string"),
        ({"target_key": 0}, "target_key must be a non-empty string"),
    ):
        with pytest.raises(ValueError, match=message):
            TemperatureRecalibration(**options)
    # A misspelt option is Python's own TypeError (a catch-all **kwargs turned it into a
    # ValueError, and hid misspellings from type checkers).
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        TemperatureRecalibration(foo=1)
    step = {"logits": torch.randn(4, 5, 3), "target": torch.zeros(4, 4, dtype=torch.long)}
    with pytest.raises(ValueError, match=r"logits \(4, 5, 3\) must be target's shape \(4, 4\)"):
        TemperatureRecalibration().extract_batch(step, None)


def test_binary_logits_with_a_class_dim_are_named_at_the_first_batch():
    """Logits [B, 1] beside a target [B] were kept as 1-class multiclass logits, and only
    the end of fit said "no temperature fitted (logits must be [N, C] with C >= 2)"."""
    step = {"logits": torch.randn(4, 1), "target": torch.tensor([0, 1, 1, 0])}
    with pytest.raises(ValueError, match=r"logits \(4, 1\) hold one class.*squeeze\(-1\)"):
        TemperatureRecalibration().extract_batch(step, None)
    # Binary scores of target's shape are taken, with or without a trailing 1.
    for shape in ((4,), (4, 1)):
        logits, _ = TemperatureRecalibration().extract_batch(
            {"logits": torch.randn(shape), "target": torch.zeros(shape)}, None
        )
        assert logits.shape == (4,)


def _single_class(n: int) -> TensorDataset:
    x, y = _data(n, seed=2).tensors
    return TensorDataset(x, y.masked_fill(y != PAD, 1))


def _all_padding(n: int) -> TensorDataset:
    x, y = _data(n, seed=3).tensors
    return TensorDataset(x, torch.full_like(y, PAD))


@pytest.mark.parametrize(
    ("val_batches", "val", "message"),
    [
        (0, _data(64, seed=1), "no validation logits were seen"),  # limit_val_batches=0
        (1.0, _single_class(64), "no temperature fitted .*single class"),
        (
            1.0,
            _all_padding(64),
            r"the 2 batches kept from the last validation epoch held no pairs \(every target "
            r"was ignore_index, or the batches were empty\): no temperature fitted$",
        ),
    ],
)
def test_nothing_to_fit_warns_and_leaves_the_fit_finished(tmp_path, val_batches, val, message):
    """Before: silence (no validation), or a ValueError from on_fit_end that failed the
    finished trainer.fit (a validation set of one class); targets all padding were told
    "logits is empty: a recalibrator needs held-out data", as if no validation had run."""
    model = Overconfident()
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    trainer = Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=TensorBoardLogger(tmp_path),
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=val_batches,
        num_sanity_val_steps=0,
    )
    train = DataLoader(_data(64, seed=0), batch_size=32)
    with pytest.warns(UserWarning, match=f"TemperatureRecalibration: {message}"):
        trainer.fit(model, train, DataLoader(val, batch_size=32))
    assert callback.recalibrator is None and callback.results == {}
    assert not hasattr(model, "calibration_temperature")


def test_all_padding_counts_the_batches_kept_not_those_skipped() -> None:
    """Of 4 validation batches, extract skipped 2 and the other 2 were all padding: the
    warning had said "the last validation epoch's 2 batches", of an epoch of 4."""

    def every_other(outputs: Any, batch: Any) -> tuple[Any, Any] | None:
        return (outputs["logits"], outputs["target"]) if outputs["odd"] else None

    class Marked(Overconfident):
        def validation_step(self, batch: Any, batch_idx: int) -> dict[str, Any]:
            return {**super().validation_step(batch, batch_idx), "odd": batch_idx % 2}

    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50, extract=every_other)
    trainer = Trainer(
        max_epochs=1, accelerator="cpu", logger=False, callbacks=[callback],
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        num_sanity_val_steps=0,
    )  # fmt: skip
    train = DataLoader(_data(64, seed=0), batch_size=32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(Marked(), train, DataLoader(_all_padding(64), batch_size=16))
    told = [str(w.message) for w in caught if "no temperature fitted" in str(w.message)]
    assert len(told) == 1
    assert told[0].startswith(
        "TemperatureRecalibration: the 2 batches kept from the last validation epoch held no pairs"
    )


@pytest.mark.parametrize(("val_batches", "val"), [(0, _data(64, seed=1)), (1.0, _single_class(64))])
def test_a_later_fit_that_fits_nothing_drops_the_earlier_temperature(tmp_path, val_batches, val):
    """The second fit trained the weights on and fitted no temperature, yet the module, the
    callback and a checkpoint saved after it kept the first fit's, for other weights."""
    torch.manual_seed(0)
    model = Overconfident()
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    options = {"accelerator": "cpu", "logger": False, "enable_checkpointing": False,
               "enable_progress_bar": False, "enable_model_summary": False,
               "num_sanity_val_steps": 0}  # fmt: skip
    train = DataLoader(_data(64, seed=0), batch_size=32)
    first = Trainer(max_epochs=1, callbacks=[callback], **options)
    first.fit(model, train, DataLoader(_data(64, seed=1), batch_size=32))
    assert model.calibration_temperatures == {
        "recalibration": callback.results["recalibration/temperature"]
    }
    # Fitting on with nothing trained (max_epochs reached): the weights, and T, stay.
    with pytest.warns(UserWarning, match="no validation logits") as told:
        first.fit(model, train, DataLoader(_data(64, seed=1), batch_size=32))
    assert not any("removed" in str(w.message) for w in told)
    assert hasattr(model, "calibration_temperature") and callback.recalibrator is not None

    second = Trainer(max_epochs=1, callbacks=[callback], limit_val_batches=val_batches, **options)
    with pytest.warns(UserWarning, match="no temperature fitted.*earlier fit.* removed"):
        second.fit(model, train, DataLoader(val, batch_size=32))
    assert callback.recalibrator is None and callback.results == {}
    assert not hasattr(model, "calibration_temperature")
    assert model.calibration_temperatures == {}
    second.save_checkpoint(tmp_path / "after.ckpt")
    assert TemperatureRecalibration.temperature_in(tmp_path / "after.ckpt") is None


def test_resuming_a_finished_fit_keeps_the_checkpoint_s_temperature(tmp_path) -> None:
    """A fresh Trainer resuming a finished run (ckpt_path=, nothing left to train) had
    removed the checkpoint's temperature: Lightning sets the trainer's step after
    on_fit_start, so the fit seemed to start at step 0 and to have trained the weights."""
    torch.manual_seed(0)
    options = {"accelerator": "cpu", "logger": False, "enable_checkpointing": False,
               "enable_progress_bar": False, "enable_model_summary": False,
               "num_sanity_val_steps": 0}  # fmt: skip
    train = DataLoader(_data(64, seed=0), batch_size=32)
    val = DataLoader(_data(64, seed=1), batch_size=32)
    first = Trainer(
        max_epochs=1,
        callbacks=[TemperatureRecalibration(ignore_index=PAD, n_samples=50)],
        **options,
    )
    first.fit(Overconfident(), train, val)
    first.save_checkpoint(tmp_path / "done.ckpt")
    fitted = TemperatureRecalibration.temperature_in(tmp_path / "done.ckpt")
    assert fitted is not None
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    resumed = Trainer(max_epochs=1, callbacks=[callback], **options)
    with pytest.warns(UserWarning, match="no validation logits") as told:
        resumed.fit(Overconfident(), train, val, ckpt_path=tmp_path / "done.ckpt")
    assert not any("removed" in str(w.message) for w in told)
    # The warning had said "no temperature fitted" and nothing of the one kept.
    assert any(f"({fitted:.4g}) still fits the weights and is kept" in str(w.message) for w in told)
    assert callback.recalibrator is not None
    assert float(callback.recalibrator.temperature) == pytest.approx(fitted)


def _example():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "train_tagger_lightning.py"
    spec = importlib.util.spec_from_file_location("train_tagger_lightning", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_bilstm_example_recalibrates_on_dev_and_reports_test(tmp_path, capsys, monkeypatch):
    import calib_metrics.plot

    example = _example()
    threads = torch.get_num_threads()
    sizes = ["--train-sentences", "60", "--dev-sentences", "30", "--test-sentences", "40"]
    titles = []
    draw = calib_metrics.plot.reliability_diagram

    def drawn(*args, **kwargs):  # the diagrams' titles, as the figure shows them
        fig, ax = draw(*args, **kwargs)
        titles.append(ax.get_title())
        return fig, ax

    monkeypatch.setattr(calib_metrics.plot, "reliability_diagram", drawn)
    try:
        out = example.main(
            ["--synthetic", "--model", "bilstm", "--recalibrate", "--epochs", "2", *sizes,
             "--bin-size", "100", "--n-samples", "50", "--out", str(tmp_path)]
        )  # fmt: skip
        assert f"wrote {tmp_path / 'bilstm_recalibration.png'}" in capsys.readouterr().out
        # One line and exit 2, as a command line says it (before: a ValueError traceback).
        bad = {
            "--recalibrate needs --model bilstm": ["--synthetic", "--recalibrate", *sizes],
            "--epochs must be >= 1": ["--epochs", "0"],
            "not found": ["--data", str(tmp_path / "none"), "--epochs", "1"],
        }
        for message, argv in bad.items():
            with pytest.raises(SystemExit) as exit_info:
                example.main(argv)
            assert exit_info.value.code == 2
            assert message in capsys.readouterr().err
    finally:
        torch.set_num_threads(threads)  # the script sets it for its own process
    row = out["recalibration"]
    assert row["method"].startswith("temperature (T = ")
    assert row["accuracy"][0] == row["accuracy"][1]  # a temperature keeps the argmax
    d = row["difference"]
    assert d["lower"] <= d["difference"] <= d["upper"]
    assert row["before"]["error"] - row["after"]["error"] == pytest.approx(d["difference"])
    assert row["interval_over"] == "sentences"
    assert (tmp_path / "bilstm_recalibration.png").stat().st_size > 0
    # The intervals resample sentences, and the diagrams say so (they had named pairs).
    report = [title for title in titles if title.startswith("BiLSTM: ")]  # not the monitor's
    assert len(report) == 2 and all("group bootstrap" in title for title in report)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_temperature_travels_with_a_checkpoint(tmp_path):
    """The fitted T was a plain module attribute: no checkpoint could hold it."""
    torch.manual_seed(0)
    options = {"accelerator": "cpu", "logger": False, "enable_progress_bar": False}
    options |= {"enable_model_summary": False, "enable_checkpointing": False}
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    trainer = Trainer(max_epochs=1, callbacks=[callback], **options)
    val = DataLoader(_data(300, seed=1), batch_size=64)
    trainer.fit(Overconfident(), DataLoader(_data(300, seed=0), batch_size=50), val)
    fitted = callback.recalibrator.temperature.item()
    path = tmp_path / "final.ckpt"
    trainer.save_checkpoint(path)

    assert TemperatureRecalibration.temperature_in(path) == pytest.approx(fitted)
    restored, model = TemperatureRecalibration(ignore_index=PAD), Overconfident()
    Trainer(callbacks=[restored], **options).validate(model, val, ckpt_path=path, verbose=False)
    assert restored.recalibrator.temperature.item() == pytest.approx(fitted)
    assert model.calibration_temperature == pytest.approx(fitted)


def test_a_checkpoint_without_a_temperature_gives_none():
    assert TemperatureRecalibration.temperature_in({"callbacks": {}}) is None
    empty = TemperatureRecalibration()
    empty.load_state_dict(empty.state_dict())  # saved before fit ended: nothing to restore
    assert empty.recalibrator is None
    # inf had been restored: uniform predictions; 0.0 had been read by temperature_in as
    # no temperature, while restoring the same checkpoint refused it.
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="positive finite float"):
            empty.load_state_dict({"temperature": bad})
        saved = {"callbacks": {"TemperatureRecalibration": {"temperature": bad, "prefix": "r"}}}
        with pytest.raises(ValueError, match="positive finite float"):
            TemperatureRecalibration.temperature_in(saved)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_two_callbacks_with_their_own_prefix_share_a_trainer_and_a_checkpoint(tmp_path):
    """Once the callback had a checkpoint state, Lightning refused a second one in the same
    Trainer (one state key per class): a model with two heads could not recalibrate both."""
    torch.manual_seed(0)
    options = {"accelerator": "cpu", "logger": False, "enable_progress_bar": False}
    options |= {"enable_model_summary": False, "enable_checkpointing": False}
    shared = {"ignore_index": PAD, "n_samples": 50}
    pair = [TemperatureRecalibration(prefix=p, **shared) for p in ("head_a", "head_b")]
    trainer = Trainer(max_epochs=1, callbacks=pair, **options)
    val = DataLoader(_data(300, seed=1), batch_size=64)
    trainer.fit(Overconfident(), DataLoader(_data(300, seed=0), batch_size=50), val)
    path = tmp_path / "two.ckpt"
    trainer.save_checkpoint(path)
    fitted = pair[0].recalibrator.temperature.item()
    assert TemperatureRecalibration.temperature_in(path, prefix="head_b") == pytest.approx(fitted)
    assert TemperatureRecalibration.temperature_in(path, prefix="other") is None
    with pytest.raises(ValueError, match="pass prefix= \\(one of 'head_a', 'head_b'\\)"):
        TemperatureRecalibration.temperature_in(path)
    restored = [TemperatureRecalibration(prefix=p) for p in ("head_b", "head_a")]
    Trainer(callbacks=restored, **options).validate(Overconfident(), val, ckpt_path=path)
    assert [r.recalibrator.temperature.item() for r in restored] == pytest.approx([fitted] * 2)


def _fit_saving_checkpoints(
    folder, callback, train_seed: int = 0, module: type[LightningModule] = Overconfident
) -> tuple[Trainer, Any]:
    """A 2-epoch fit of a ``module`` with ``callback`` saving ``folder/epoch=E.ckpt`` each epoch and
    ``folder/last.ckpt`` (saved before fit ends, as ModelCheckpoint saves it); the trainer
    and the validation loader."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    checkpoints = ModelCheckpoint(
        dirpath=folder, filename="{epoch}", save_top_k=-1, save_last=True, monitor=None
    )
    trainer = Trainer(
        max_epochs=2, accelerator="cpu", logger=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=[callback, checkpoints],
    )  # fmt: skip
    val = DataLoader(_data(300, seed=1), batch_size=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module(), DataLoader(_data(300, seed=train_seed), batch_size=50), val)
    return trainer, val


def _validate(trainer: Trainer, model: LightningModule, val, ckpt_path) -> list[str]:
    """``trainer.validate(model, val, ckpt_path=)``: the callback's warnings."""
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        trainer.validate(model, val, ckpt_path=ckpt_path, verbose=False)
    return [str(w.message) for w in told if "TemperatureRecalibration" in str(w.message)]


def test_restoring_a_checkpoint_from_before_the_fit_ended_drops_the_temperature(tmp_path):
    """fit, then validate(ckpt_path=) of an earlier epoch: the temperature fitted at the end
    of fit belongs to the last epoch's weights, not the restored ones; it was kept silently."""
    torch.manual_seed(0)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    trainer, val = _fit_saving_checkpoints(tmp_path, callback)
    model = trainer.lightning_module
    assert callback.recalibrator is not None and hasattr(model, "calibration_temperature")
    told = _validate(trainer, model, val, tmp_path / "epoch=0.ckpt")
    assert len(told) == 1 and "holds no temperature" in told[0]
    assert callback.recalibrator is None and not hasattr(model, "calibration_temperature")


def test_the_last_checkpoint_of_the_fit_keeps_its_temperature(tmp_path):
    """validate(ckpt_path="last") right after fit dropped the temperature fitted at its end,
    warning that it belonged to other weights: last.ckpt, saved before fit ended, holds no
    temperature, but it holds the very weights the temperature was fitted on."""
    torch.manual_seed(0)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    trainer, val = _fit_saving_checkpoints(tmp_path, callback)
    fitted = float(callback.recalibrator.temperature)
    assert TemperatureRecalibration.temperature_in(tmp_path / "last.ckpt") is None
    assert _validate(trainer, trainer.lightning_module, val, "last") == []
    assert float(callback.recalibrator.temperature) == fitted
    assert trainer.lightning_module.calibration_temperature == fitted
    fresh = Overconfident()  # the checkpoint's weights, loaded into another module object
    assert _validate(trainer, fresh, val, tmp_path / "last.ckpt") == []
    assert fresh.calibration_temperature == fitted


def test_another_fit_s_checkpoint_at_the_same_step_drops_the_temperature(tmp_path):
    """The weights are told apart by their values, not by the checkpoint's step: the last
    checkpoint of an earlier fit (other training data, the same number of steps) holds
    other weights than those the callback's temperature was fitted on."""
    torch.manual_seed(0)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    _fit_saving_checkpoints(tmp_path / "a", callback)
    trainer, val = _fit_saving_checkpoints(tmp_path / "b", callback, train_seed=7)
    steps = [
        torch.load(tmp_path / f / "last.ckpt", weights_only=False)["global_step"] for f in "ab"
    ]
    assert steps[0] == steps[1]
    told = _validate(trainer, trainer.lightning_module, val, tmp_path / "a" / "last.ckpt")
    assert len(told) == 1 and "holds no temperature" in told[0]
    assert callback.recalibrator is None


class WithUnusedLazyHead(Overconfident):
    """An auxiliary lazy head this fit never calls: its weight stays uninitialized."""

    def __init__(self) -> None:
        super().__init__()
        self.aux = torch.nn.LazyLinear(2)


class Counting(Overconfident):
    """A non-persistent buffer: it changes as the module trains, and no checkpoint holds it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("batches_seen", torch.zeros(()), persistent=False)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        self.batches_seen += 1
        return super().training_step(batch, batch_idx)


def test_a_lazy_module_never_run_leaves_the_fit_finished() -> None:
    """Reading the weights' values at the end of fit crashed on an uninitialized lazy
    parameter ("Attempted to use an uninitialized parameter"), the fit trained."""
    torch.manual_seed(0)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = _fit(WithUnusedLazyHead(), _data(300, seed=1), callback)
    assert callback.recalibrator is not None
    assert trainer.lightning_module.calibration_temperature == callback.recalibrator.temperature


def test_a_non_persistent_buffer_is_not_part_of_the_checkpoint_s_weights(tmp_path):
    """A buffer no checkpoint holds (persistent=False) read otherwise in a fresh module
    loaded from last.ckpt: the temperature of the very weights restored was dropped."""
    torch.manual_seed(0)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    trainer, val = _fit_saving_checkpoints(tmp_path, callback, module=Counting)
    fitted = float(callback.recalibrator.temperature)
    fresh = Counting()
    assert _validate(trainer, fresh, val, tmp_path / "last.ckpt") == []
    assert fresh.calibration_temperature == fitted


def test_sparse_and_nested_buffers_leave_the_weights_readable() -> None:
    """R4: a sparse buffer (an adjacency matrix) had raised at the fit's end, its bits read
    through a view it has no storage for; it reads as its indices and values now (R5: read
    dense, 4·10⁴ nodes had taken 18 GiB). A nested
    tensor, whose bits no view reads, reads as never the same: the temperature is dropped
    on a restore (the safe side), and nothing raises."""
    from calib_metrics.callbacks.recalibration import _weights_of

    for sparse in (torch.eye(3).to_sparse(), torch.eye(3).to_sparse_csr()):
        module = torch.nn.Module()
        module.register_buffer("adjacency", sparse)
        assert _weights_of(module) == _weights_of(module)
        moved = torch.nn.Module()
        moved.register_buffer("adjacency", (2 * torch.eye(3)).to_sparse())
        assert _weights_of(moved) != _weights_of(module)
    # R5: read by its integer representation, a quantized buffer of twice the values at
    # twice the scale had read the same.
    quantized = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantize_per_tensor's deprecation
        for scale in (0.1, 0.2):
            module = torch.nn.Module()
            values = torch.tensor([1.0, 2.0, -3.0]) * scale
            module.register_buffer("q", torch.quantize_per_tensor(values, scale, 0, torch.qint8))
            quantized.append(_weights_of(module))
    assert quantized[0] != quantized[1]
    module = torch.nn.Module()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors' prototype warning
        module.register_buffer("ragged", torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]))
    assert _weights_of(module) != _weights_of(module)


def test_the_same_weights_in_another_layout_read_the_same() -> None:
    """A float64 sum of 2^24 elements depends on the order they are added in (another
    device, another memory layout): the same weights read as others, their temperature
    dropped. Their bit patterns sum exactly, in any order."""
    from calib_metrics.callbacks.recalibration import _weights_of

    weight = torch.randn(4096, 4096, generator=torch.Generator().manual_seed(0)) * 0.02
    rows, columns = torch.nn.Linear(4096, 4096, bias=False), torch.nn.Linear(4096, 4096, False)
    rows.weight = torch.nn.Parameter(weight)
    columns.weight = torch.nn.Parameter(weight.t().contiguous().t())  # column-major
    assert torch.equal(rows.weight, columns.weight) and not columns.weight.is_contiguous()
    assert _weights_of(rows) == _weights_of(columns)


def test_weights_that_moved_with_their_sum_conserved_read_as_others() -> None:
    """SGD on a softmax head conserves each parameter's sum over the classes: weights told
    apart by their sums read the same after they moved."""
    from calib_metrics.callbacks.recalibration import _weights_of

    head = torch.nn.Linear(1, 2)
    with torch.no_grad():
        head.bias.zero_()
        head.weight.copy_(torch.tensor([[0.25], [-0.25]]))
        before = _weights_of(head)
        head.weight.mul_(2)
    assert _weights_of(head) != before


class ReturnsProbabilities(Overconfident):
    """A validation step that gives the softmax under the "logits" key."""

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        x, y = batch
        return {"logits": self.logits(x).softmax(-1), "target": y}


def test_probabilities_given_as_logits_are_named_and_nothing_is_fitted(tmp_path):
    """Fitted as logits they gave a meaningless temperature and a "before" error of
    softmax(p) (0.27 where the model's was 0.045), logged with no word."""
    model = ReturnsProbabilities()
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    trainer = Trainer(
        max_epochs=1, accelerator="cpu", logger=False, callbacks=[callback],
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        num_sanity_val_steps=0,
    )  # fmt: skip
    train = DataLoader(_data(64, seed=0), batch_size=32)
    with pytest.warns(UserWarning, match="'logits' are probabilities .* no temperature fitted"):
        trainer.fit(model, train, DataLoader(_data(64, seed=1), batch_size=32))
    assert callback.recalibrator is None and callback.results == {}
    assert not hasattr(model, "calibration_temperature")


def test_bfloat16_probabilities_given_as_logits_are_named_and_nothing_is_fitted() -> None:
    """Under bf16-mixed the step's softmax rows sum to 1 only within bfloat16's rounding
    (2.7e-3 off here, where the check allowed 1e-3, summing in bfloat16): they were fitted
    as logits, silently (a meaningless temperature and a "before" error of softmax(p))."""
    model = ReturnsProbabilities()
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    trainer = Trainer(
        max_epochs=1, accelerator="cpu", logger=False, callbacks=[callback],
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        num_sanity_val_steps=0, precision="bf16-mixed",
    )  # fmt: skip
    train = DataLoader(_data(64, seed=0), batch_size=32)
    with pytest.warns(UserWarning, match="'logits' are probabilities .* no temperature fitted"):
        trainer.fit(model, train, DataLoader(_data(128, seed=2), batch_size=32))
    assert callback.recalibrator is None and callback.results == {}
    assert not hasattr(model, "calibration_temperature")


class BinaryProbabilities(Overconfident):
    """A binary head (class 1 against the rest) whose step gives the sigmoid as logits."""

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        x, y = batch
        keep = y != PAD
        score = self.logits(x)[..., 1] - self.logits(x)[..., 0]
        return {"logits": torch.sigmoid(score[keep]), "target": (y[keep] == 1).float()}


def test_binary_scores_all_in_zero_one_are_fitted_with_a_warning() -> None:
    """Sigmoid outputs given as logits had been fitted silently (T = 1.04 of
    sigmoid(sigmoid(z)), where the logits give 1.19). Nothing tells them from a weak
    head's logits that all lie in [0, 1] (review R4: refusing had left such a head with
    no temperature), so the fit goes on, and says what it may be fitting."""
    callback = TemperatureRecalibration(n_samples=50)
    said = r"every binary 'logits' value lies in \[0, 1\]: if they are sigmoid outputs, return"
    with pytest.warns(UserWarning, match=said):
        _fit(BinaryProbabilities(), _data(64, seed=1), callback, num_sanity_val_steps=0)
    assert callback.recalibrator is not None


class ChangingClasses(Overconfident):
    """A validation step whose second batch has one class fewer (another label set)."""

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        x, y = batch
        logits = self.logits(x)
        if batch_idx == 1:
            logits, y = logits[..., :2], y.clamp(max=1).masked_fill(y == PAD, PAD)
        return {"logits": logits, "target": y}


def test_logits_that_change_shape_fit_nothing_and_leave_the_fit_finished() -> None:
    """Each batch passed its check, and the end of fit's cat had failed the finished fit
    with torch's RuntimeError (sizes 3 and 2)."""
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    with pytest.warns(UserWarning, match=r"changed shape between batches or ranks "
                      r"\(\[B, 2\], \[B, 3\]\).* no temperature fitted"):  # fmt: skip
        trainer = _fit(ChangingClasses(), _data(64, seed=1), callback, num_sanity_val_steps=0)
    assert trainer.state.finished and callback.recalibrator is None


@pytest.mark.parametrize("classes", [2, 4, 50, 5000])
def test_probability_rows_are_told_from_logits_in_every_dtype(classes) -> None:
    """Rows of probabilities are told by their sum, in float64, to the library's tolerance
    for rows of class probabilities or, where wider, their dtype's rounding; logits, and
    rows in [0, 1] that do not sum to 1, are not."""
    from calib_metrics.recalibration._common import looks_like_probabilities

    g = torch.Generator().manual_seed(classes)
    logits = 3 * torch.randn(4000 // classes + 20, classes, generator=g)
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        probs = logits.to(dtype).softmax(-1)
        assert looks_like_probabilities(probs), dtype
        # Half-precision softmax rows widened to float32, as a step may return them.
        assert looks_like_probabilities(probs.float()), dtype
        assert not looks_like_probabilities(logits.to(dtype)), dtype
        assert not looks_like_probabilities(1.02 * probs.double()), dtype
    uniform = torch.rand(logits.shape, generator=g)
    assert not looks_like_probabilities(uniform / uniform.sum(-1, keepdim=True) * 0.95)


class TwoHeads(Overconfident):
    """Head a is 5× overconfident, head b 15×: their temperatures differ."""

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        x, y = batch
        return {"logits": self.logits(x), "logits_b": 3 * self.logits(x), "target": y}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_two_heads_keep_their_own_temperatures_on_the_module() -> None:
    """Both had written pl_module.calibration_temperature: the last one fitted won."""
    torch.manual_seed(0)
    model = TwoHeads()
    head_a = TemperatureRecalibration(ignore_index=PAD, prefix="head_a", n_samples=50)
    head_b = TemperatureRecalibration(
        ignore_index=PAD, prefix="head_b", logits_key="logits_b", n_samples=50
    )
    trainer = Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=False,
        callbacks=[head_a, head_b],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, DataLoader(_data(100, 0), batch_size=50), DataLoader(_data(200, 1)))
    fitted = model.calibration_temperatures
    assert fitted == {
        "head_a": head_a.results[f"{head_a.prefix}/temperature"],
        "head_b": head_b.results[f"{head_b.prefix}/temperature"],
    }
    assert fitted["head_b"] == pytest.approx(3 * fitted["head_a"], rel=1e-4)
    assert not hasattr(model, "calibration_temperature")  # ambiguous with two heads


_LOGITS, _TARGET = torch.randn(8, 3), torch.randint(0, 3, (8,))


@pytest.mark.parametrize(
    ("extract", "output", "message"),
    [
        # Before: Python's "too many values to unpack (expected 2)".
        (lambda o, b: (o["logits"], o["target"], None), None, r"\(logits, target\) or None, got 3"),
        # Before: a [2, 5, 3] tensor unpacked into logits [5, 3] and "target" [5, 3]: a
        # temperature fitted on its halves, without a word.
        (lambda o, b: torch.randn(2, 5, 3), None, r"got one Tensor of shape \(2, 5, 3\)"),
        # Before: "'list' object has no attribute 'detach'".
        (None, {"logits": _LOGITS.tolist(), "target": _TARGET}, "must be tensors, got list and"),
        (None, {"logits": _LOGITS, "target": _TARGET.tolist()}, "must be tensors, got Tensor and"),
        # Before: a KeyError naming only the key.
        (None, {"logits": _LOGITS}, r"keys 'logits' and 'target' \(got \['logits'\]\)"),
    ],
    ids=["three items", "one tensor", "logits a list", "target a list", "no target"],
)
def test_a_malformed_step_output_is_named(extract, output, message) -> None:
    callback = TemperatureRecalibration(extract=extract)
    output = {"logits": _LOGITS, "target": _TARGET} if output is None else output
    with pytest.raises(ValueError, match=message):
        callback.extract_batch(output, None)


_IDS = "must hold integer class ids, got dtype"


@pytest.mark.parametrize(
    ("logits", "target", "message"),
    [
        # Before: accepted at every batch, then "no temperature fitted (target must hold
        # integer class indices)" when fitting ended, after the training run.
        (_LOGITS[:4], torch.tensor([0.0, 1.5, 2.0, 0.0]), f"{_IDS} torch.float32"),
        # Before: fitted on. Now refused with the monitor's message and its remedy.
        (
            _LOGITS[:4],
            torch.tensor([0.0, 1.0, 2.0, 0.0]),
            rf"{_IDS} torch.float32 .*target\.long\(\)",
        ),
        (_LOGITS[:4], torch.tensor([True, False, True, True]), f"{_IDS} torch.bool"),
        # Before: "no temperature fitted (logits must be floating point ...)" at the end.
        (torch.randint(0, 3, (4, 3)), _TARGET[:4], "logits must be floating point, got dtype"),
        (torch.tensor([1, 0, 1, 1]), torch.tensor([1, 0, 1, 1]), "logits must be floating point"),
    ],
    ids=["fractional targets", "float targets", "bool targets", "integer logits", "binary integer"],
)
def test_logits_and_targets_of_the_wrong_dtype_are_refused_at_every_batch(
    logits, target, message
) -> None:
    callback = TemperatureRecalibration()
    for check_targets in (True, False):  # a dtype needs no host read: every batch
        with pytest.raises(ValueError, match=f"TemperatureRecalibration: .*{message}"):
            callback.extract_batch({"logits": logits, "target": target}, None,
                                   check_targets=check_targets)  # fmt: skip
    # Binary targets may be floats: 0. and 1. are taken, 1.5 is no class.
    scores = torch.randn(4)
    callback.extract_batch({"logits": scores, "target": torch.tensor([0.0, 1, 1, 0])}, None)
    with pytest.raises(ValueError, match=r"target must be binary \(0 or 1\), found the value 1.5"):
        callback.extract_batch({"logits": scores, "target": torch.tensor([0.0, 1.5, 1, 0])}, None)


@pytest.mark.parametrize("label", [0, 1])
def test_a_binary_ignore_index_that_is_a_label_is_refused(label: int) -> None:
    """ignore_index=0 beside binary scores had dropped every negative without a word, and
    the temperature was fitted on the positives alone; the metrics refuse it too."""
    callback = TemperatureRecalibration(ignore_index=label)
    output = {"logits": torch.randn(4), "target": torch.tensor([0, 1, 1, 0])}
    for check_targets in (True, False):  # every batch: no host read is needed
        with pytest.raises(ValueError, match=f"TemperatureRecalibration: ignore_index={label} "):
            callback.extract_batch(output, None, check_targets=check_targets)


def test_a_0_dim_binary_logit_is_one_item() -> None:
    """logits.squeeze() of a last batch of one item is 0-dim: the ignore_index check read
    its shape[-1] and raised an IndexError (review R2)."""
    logits, target = TemperatureRecalibration(ignore_index=-100).extract_batch(
        {"logits": torch.tensor(0.5), "target": torch.tensor(1)}, None
    )
    assert logits.tolist() == [0.5] and target.tolist() == [1]


def test_a_multiclass_ignore_index_that_is_a_class_is_warned_about_once() -> None:
    callback = TemperatureRecalibration(ignore_index=0)
    output = {"logits": torch.randn(4, 3), "target": torch.tensor([0, 1, 2, 1])}
    with pytest.warns(UserWarning, match="ignore_index=0 is one of the 3 class ids") as told:
        for check_targets in (False, True, True):
            logits, _ = callback.extract_batch(output, None, check_targets=check_targets)
    assert len([w for w in told if "class ids" in str(w.message)]) == 1
    assert logits.shape == (3, 3)  # the class-0 item is still dropped, as asked


class _Padded(Overconfident):
    """Returns the targets with their padding, binary (is it class 0?) when asked."""

    def __init__(self, binary: bool = False) -> None:
        super().__init__()
        self.binary = binary
        self.trained = 0

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        self.trained += 1
        return super().training_step(batch, batch_idx)

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        x, y = batch
        if not self.binary:
            return {"logits": self.logits(x), "target": y}
        scores = self.logits(x)[..., 0] - self.logits(x)[..., 1:].logsumexp(-1)
        return {"logits": scores, "target": (y == 0).long().masked_fill(y == PAD, PAD)}


@pytest.mark.parametrize(
    ("binary", "target", "message"),
    [
        (False, None, r"class id -100, outside \[0, 3\) \(padding\? set ignore_index=-100\)"),
        (True, None, r"binary \(0 or 1\), found the value -100 \(padding\? set ignore_index"),
        # A class past the logits: no padding hint.
        (False, lambda y: y.masked_fill(y == PAD, 3), r"class id 3, outside \[0, 3\)$"),
    ],
    ids=["padding", "binary padding", "class past the logits"],
)
def test_targets_naming_no_class_fail_the_sanity_check(binary, target, message) -> None:
    """Padded targets without ignore_index ran the whole fit, which ended in a warning, "no
    temperature fitted (target must hold class indices in [0, 4))", without a hint; and the
    sanity check checked nothing, so even a shape error came after the first epoch."""
    model = _Padded(binary)
    x, y = _data(64, seed=1).tensors
    val = TensorDataset(x, y if target is None else target(y))
    trainer = Trainer(
        max_epochs=2,
        accelerator="cpu",
        logger=False,
        callbacks=[TemperatureRecalibration(n_samples=50)],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=1,
    )
    train = DataLoader(_data(64, seed=0), batch_size=32)
    with pytest.raises(ValueError, match=f"TemperatureRecalibration: target .*{message}"):
        trainer.fit(model, train, DataLoader(val, batch_size=32))
    assert model.trained == 0  # found before training


def _fit(model: LightningModule, val: TensorDataset, callback, **options: Any) -> Trainer:
    """A 1-epoch fit of ``model`` on ``_data(64)`` validated on ``val`` in batches of 32."""
    settings: dict[str, Any] = dict(
        max_epochs=1,
        accelerator="cpu",
        logger=False,
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=2,
    )
    trainer = Trainer(**(settings | options))
    trainer.fit(model, DataLoader(_data(64, seed=0), batch_size=32), DataLoader(val, batch_size=32))
    return trainer


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_sanity_check_is_checked_but_not_fitted_on() -> None:
    """The sanity check's batches go through the checks only: T is fitted on the last
    epoch's logits alone, and a fit whose sanity check no validation epoch follows
    (check_val_every_n_epoch past max_epochs) fits nothing, not the untrained weights'
    sanity-check logits."""
    torch.manual_seed(0)
    model = Overconfident()
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    val = _data(96, seed=1)
    _fit(model, val, callback)
    with torch.no_grad():
        x, y = val.tensors
        logits, target = model.logits(x).reshape(-1, 3), y.reshape(-1)
    keep = target != PAD
    expected = TemperatureScaling().fit(logits[keep], target[keep]).temperature.item()
    assert callback.results["recalibration/temperature"] == pytest.approx(expected, rel=1e-6)

    unvalidated = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    with pytest.warns(UserWarning, match="no validation logits were seen"):
        _fit(Overconfident(), val, unvalidated, check_val_every_n_epoch=2)
    assert unvalidated.recalibrator is None


class _SanitySkipping(Overconfident):
    """Skips its work during the sanity check (a common guard) and returns nothing there."""

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor] | None:
        if self.trainer.sanity_checking:
            return None
        return super().validation_step(batch, batch_idx)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "extract", [None, lambda out, batch: (out["logits"], out["target"])], ids=["keys", "extract"]
)
def test_a_module_returning_nothing_at_the_sanity_check_is_fitted(extract) -> None:
    """A None output at the sanity check failed the fit before it trained ("needs the
    validation step to return a dict", or extract's own TypeError on None)."""
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50, extract=extract)
    _fit(_SanitySkipping(), _data(96, seed=1), callback)
    assert callback.recalibrator is not None


def test_targets_are_checked_at_the_sanity_check_and_each_epoch_s_first_batch(
    monkeypatch,
) -> None:
    """The check of the targets waits for the device (one host synchronisation); it ran
    at every validation batch. Now: the sanity check's batches, each epoch's first batch,
    and all the kept targets once when fitting ends."""
    from calib_metrics.callbacks import recalibration

    checked = []
    original = recalibration.check_class_ids

    def counted(target, *args, **kwargs):
        checked.append(len(target))
        return original(target, *args, **kwargs)

    monkeypatch.setattr(recalibration, "check_class_ids", counted)
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(Overconfident(), _data(96, seed=1), callback, max_epochs=2)  # 3 batches an epoch
    batch = 32 * 3  # a batch's tokens, padding dropped
    # Two sanity batches, the first of each epoch, and the last epoch's 3 at fit end.
    assert checked == [batch, batch, batch, batch, 3 * batch]
    # Without the check the batch reads nothing back from the device.
    logits, target = torch.randn(8, 3), torch.randint(0, 3, (8,))
    plain = TemperatureRecalibration()
    output = {"logits": logits, "target": target}
    assert (
        host_reads.count_reads(lambda: plain.extract_batch(output, None, check_targets=False)) == 0
    )
    assert host_reads.count_reads(lambda: plain.extract_batch(output, None)) == 1


def test_a_later_batch_s_padding_is_named_when_fitting_ends() -> None:
    """Padding in a batch after the epoch's first, without ignore_index: not checked at
    the batch, it is named in the warning at the end of fit, which fits nothing."""
    x, y = _data(96, seed=1).tensors
    y[:32] = y[:32].masked_fill(y[:32] == PAD, 0)  # the first batch holds no padding
    callback = TemperatureRecalibration(n_samples=50)
    message = r"no temperature fitted \(target holds class id -100, outside \[0, 3\) \(padding\?"
    with pytest.warns(UserWarning, match=message):
        _fit(Overconfident(), TensorDataset(x, y), callback, num_sanity_val_steps=1)
    assert callback.recalibrator is None


def _ddp_warnings(tmp_path, callback, items: int, max_epochs: int) -> list[str]:
    """The "under DDP" warnings of a fit whose validation loader holds rank 0's
    DistributedSampler of a 2-rank world over ``items`` items (what each rank's loader
    holds under DDP)."""
    from torch.utils.data import DistributedSampler

    val_data = _data(items, seed=1)
    sampler = DistributedSampler(val_data, num_replicas=2, rank=0, shuffle=False)
    trainer = Trainer(
        default_root_dir=tmp_path, max_epochs=max_epochs, accelerator="cpu", devices=1,
        logger=False, callbacks=[callback], enable_progress_bar=False,
        enable_model_summary=False, enable_checkpointing=False, num_sanity_val_steps=0,
    )  # fmt: skip
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(
            Overconfident(),
            DataLoader(_data(100, seed=0), batch_size=50),
            DataLoader(val_data, batch_size=10, sampler=sampler),
        )
    return [str(w.message) for w in caught if "under DDP" in str(w.message)]


@pytest.mark.parametrize(("items", "said"), [(41, "repeats 1 of the 41 items"), (40, None)])
def test_a_sampler_that_repeats_items_is_named_once(tmp_path, items, said) -> None:
    """DistributedSampler pads 41 items to 2 x 21: the temperature had been fitted with the
    repeated item counted twice, without a word (the monitor says it of its values)."""
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    told = _ddp_warnings(tmp_path, callback, items, max_epochs=2)
    if said is None:
        assert told == []
        return
    (message,) = told  # once, not every epoch
    assert message.startswith("TemperatureRecalibration: under DDP the validation sampler")
    assert said in message and "the temperature and its before/after errors count" in message


def test_each_fit_checks_its_own_samplers(tmp_path) -> None:
    """One callback, two fits: the second fit's repeating sampler had gone unsaid, the
    check spent on the first fit's even one."""
    callback = TemperatureRecalibration(ignore_index=PAD, n_samples=50)
    said = [_ddp_warnings(tmp_path, callback, items, max_epochs=1) for items in (40, 41)]
    assert said[0] == [] and len(said[1]) == 1


class BinaryNoise(Overconfident):
    """Sigmoid outputs that carry nothing of the labels: no temperature can be fitted."""

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        _, y = batch
        keep = y != PAD
        noise = torch.randn(int(keep.sum()), generator=torch.Generator().manual_seed(batch_idx))
        return {"logits": torch.sigmoid(3 * noise), "target": (y[keep] == 1).float()}


def test_a_refused_fit_of_sigmoid_outputs_gives_no_advice_the_callback_cannot_take() -> None:
    """TemperatureScaling's refusal names probabilities first with its own advice (build
    it with inputs='probs'), which the callback, building it itself, cannot take: the
    callback says the sigmoid outputs in its words, and the refusal's reason alone."""
    callback = TemperatureRecalibration(n_samples=50)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fit(BinaryNoise(), _data(64, seed=1), callback, num_sanity_val_steps=0)
    said = [str(w.message) for w in caught]
    refusal = [s for s in said if "no temperature fitted (" in s]
    assert refusal and "the held-out data leave no usable signal" in refusal[0]
    assert not any("inputs='probs'" in s for s in said)
    assert any("if they are sigmoid outputs, return the scores before" in s for s in said)
    assert callback.recalibrator is None


def test_one_hot_targets_beside_logits_of_their_shape_are_warned_of_once() -> None:
    """One-hot [B, C] targets beside [B, C] logits are read, as documented, as C binary
    labels an item: a softmax model's temperature had been fitted as one sigmoid
    temperature over every logit without a word. Multi-label rows (no 1, several) are
    not warned of."""
    logits = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
    one_hot = torch.nn.functional.one_hot(torch.tensor([0, 1, 2, 0, 1, 2]), 3).float()
    multi_label = torch.tensor([[1, 1, 0], [0, 0, 0], [1, 0, 0]] * 2).float()
    callback = TemperatureRecalibration()
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        TemperatureRecalibration().extract_batch({"logits": logits, "target": multi_label}, None)
        for _ in range(2):
            callback.extract_batch({"logits": logits, "target": one_hot}, None)
    assert [str(w.message) for w in told] == [
        "TemperatureRecalibration: 'target' looks one-hot beside 'logits' of its shape (6, 3), "
        "and is read as 3 independent binary labels an item (a multi-label head: one sigmoid "
        "temperature); for a softmax model return class ids, target.argmax(-1)"
    ]
