"""CalibrationMonitor in real (tiny, CPU) Lightning runs, read back from the event files."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger
from tensorboard.backend.event_processing.event_accumulator import (
    IMAGES,
    SCALARS,
    TENSORS,
    EventAccumulator,
)
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.util import tensor_util
from torch.utils.data import DataLoader, TensorDataset

from calib_metrics import CalibrationError
from calib_metrics.callbacks import CalibrationMonitor, TemperatureRecalibration
from calib_metrics.functional import calibration_error, smooth_calibration_error

PAD = -100
N_CLASSES = 3
FEATURES = 6


def tagging_data(n: int = 48, length: int = 5, seed: int = 0) -> TensorDataset:
    """Sequences of feature vectors whose noisy-linear tags the model can learn; padded tails."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, length, FEATURES, generator=g)
    w = torch.randn(FEATURES, N_CLASSES, generator=torch.Generator().manual_seed(99))
    y = (x @ w + 0.8 * torch.randn(n, length, N_CLASSES, generator=g)).argmax(-1)
    lengths = torch.randint(2, length + 1, (n,), generator=g)
    y[torch.arange(length) >= lengths[:, None]] = PAD
    return TensorDataset(x, y)


class TinyTagger(LightningModule):
    """Per-token softmax over a linear layer: emits ``{"probs", "target"}`` when evaluated."""

    def __init__(self, lr: float = 0.3) -> None:
        super().__init__()
        self.lr = lr
        self.net = torch.nn.Linear(FEATURES, N_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).softmax(-1)

    def _loss(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x, y = batch
        logits = self.net(x)
        loss = F.cross_entropy(logits.reshape(-1, N_CLASSES), y.reshape(-1), ignore_index=PAD)
        return loss, logits.softmax(-1), y

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        loss, _, _ = self._loss(batch)
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        loss, probs, y = self._loss(batch)
        self.log("val/loss", loss)  # its steps are what the monitor's must match
        return {"probs": probs, "target": y}

    def test_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        loss, probs, y = self._loss(batch)
        self.log("test/loss", loss)
        return {"probs": probs, "target": y}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def loaders(batch_size: int = 16) -> tuple[DataLoader, DataLoader]:
    train = DataLoader(tagging_data(48, seed=0), batch_size=batch_size, shuffle=False)
    val = DataLoader(tagging_data(40, seed=1), batch_size=batch_size)
    return train, val


def trainer(root: Path, max_epochs: int, **kwargs: Any) -> Trainer:
    options: dict[str, Any] = dict(
        default_root_dir=root,
        max_epochs=max_epochs,
        accelerator="cpu",
        devices=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        log_every_n_steps=1,
        num_sanity_val_steps=1,
    )
    options.update(kwargs)
    return Trainer(**options)


def monitor(**kwargs: Any) -> CalibrationMonitor:
    options: dict[str, Any] = dict(
        num_classes=N_CLASSES, ignore_index=PAD, bin_size=20, n_samples=300
    )
    options.update(kwargs)
    return CalibrationMonitor(**options)


def read_events(log_dir: str | Path) -> EventAccumulator:
    acc = EventAccumulator(str(log_dir), size_guidance={IMAGES: 0, SCALARS: 0, TENSORS: 0})
    acc.Reload()
    return acc


def expected_result(model: TinyTagger, loader: DataLoader, **kwargs: Any) -> Any:
    metric = CalibrationError(N_CLASSES, ignore_index=PAD, bin_size=20, n_samples=300, **kwargs)
    with torch.no_grad():
        for x, y in loader:
            metric.update(model(x), y)
    return metric.compute_result()


@pytest.fixture(scope="module")
def three_epochs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One 3-epoch run logging to TensorBoard and CSV (a logger without images)."""
    root = tmp_path_factory.mktemp("three_epochs")
    torch.manual_seed(0)
    tb_logger = TensorBoardLogger(root, name="tb")
    csv_logger = CSVLogger(root, name="csv")
    cb = monitor(per_class=True, class_names=["A", "B", "C"])
    model = TinyTagger()
    train, val = loaders()
    t = trainer(root, 3, logger=[tb_logger, csv_logger], callbacks=[cb])
    t.fit(model, train, val)
    return {
        "acc": read_events(tb_logger.log_dir),
        "csv_dir": Path(csv_logger.log_dir),
        "monitor": cb,
        "model": model,
        "val": val,
        "trainer": t,
    }


def test_one_diagram_per_epoch_at_self_log_steps(three_epochs: dict[str, Any]) -> None:
    acc = three_epochs["acc"]
    loss_steps = [e.step for e in acc.Scalars("val/loss")]
    assert len(loss_steps) == 3  # the sanity check logged nothing
    assert loss_steps == sorted(set(loss_steps))
    images = acc.Images("val/reliability_diagram")
    assert [e.step for e in images] == loss_steps
    assert all(e.width > 100 and e.height > 100 and e.encoded_image_string for e in images)
    assert [e.step for e in acc.Images("val/calib_err_per_class")] == loss_steps
    assert [r["step"] for r in three_epochs["monitor"].history] == loss_steps


def test_three_scalars_per_epoch_with_interval(three_epochs: dict[str, Any]) -> None:
    acc = three_epochs["acc"]
    loss_steps = [e.step for e in acc.Scalars("val/loss")]
    err, low, high = (acc.Scalars(f"val/calib_err{s}") for s in ("", "_lower", "_upper"))
    for series in (err, low, high):
        assert [e.step for e in series] == loss_steps
    for e, lo, hi in zip(err, low, high, strict=True):
        assert 0 <= lo.value <= hi.value
        assert 0 <= e.value <= 1
    history = three_epochs["monitor"].history
    assert [r["epoch"] for r in history] == [0, 1, 2]
    assert [e.value for e in err] == pytest.approx([r["error"] for r in history], rel=1e-6)
    assert [e.value for e in high] == pytest.approx([r["upper"] for r in history], rel=1e-6)
    # The model gets better, so its probabilities move: the three epochs differ.
    assert len({round(r["error"], 8) for r in history}) == 3
    # The last epoch's value is the metric on the trained model's validation predictions.
    expected = expected_result(three_epochs["model"], three_epochs["val"], streaming=True)
    assert history[-1]["error"] == pytest.approx(float(expected.error), rel=1e-6)
    assert history[-1]["lower"] == pytest.approx(float(expected.lower), rel=1e-6)


def test_smooth_error_is_logged_beside_calib_err(three_epochs: dict[str, Any]) -> None:
    acc = three_epochs["acc"]
    loss_steps = [e.step for e in acc.Scalars("val/loss")]
    smooth = acc.Scalars("val/smooth_calib_err")
    assert [e.step for e in smooth] == loss_steps
    history = three_epochs["monitor"].history
    assert [e.value for e in smooth] == pytest.approx([r["smooth_error"] for r in history])
    assert len({round(r["smooth_error"], 8) for r in history}) == 3
    # The last epoch's value: the streaming histogram smoothed, which is the exact
    # (pairwise) smooth ECE of the trained model's validation predictions to ~1e-6.
    with torch.no_grad():
        batches = [(three_epochs["model"](x), y) for x, y in three_epochs["val"]]
    probs, target = torch.cat([p for p, _ in batches]), torch.cat([y for _, y in batches])
    keep = target != PAD
    exact = smooth_calibration_error(probs[keep], target[keep])
    assert history[-1]["smooth_error"] == pytest.approx(exact.item(), abs=1e-5)


def test_scalars_reach_lightning_in_float64(three_epochs: dict[str, Any]) -> None:
    """A Python float becomes Lightning's float32 tensor: the error logged had differed
    from the metric's own in the eighth digit (0.0248094704 for 0.0248094697)."""
    logged = three_epochs["trainer"].callback_metrics
    last = three_epochs["monitor"].history[-1]
    for name, key in (("", "error"), ("_lower", "lower"), ("_upper", "upper")):
        value = logged[f"val/calib_err{name}"]
        assert value.dtype == torch.float64 and value.item() == last[key]
    assert logged["val/smooth_calib_err"].dtype == torch.float64


def test_raw_bins_and_margin_layout_are_readable(three_epochs: dict[str, Any]) -> None:
    acc = three_epochs["acc"]
    events = acc.Tensors("val/calib_bins")
    assert len(events) == 3
    bins = tensor_util.make_ndarray(events[-1].tensor_proto)
    assert bins.ndim == 2 and bins.shape[1] == 3
    n_tokens = int((three_epochs["val"].dataset.tensors[1] != PAD).sum())
    assert bins[:, 2].sum() == n_tokens * N_CLASSES  # micro: C pairs per unpadded token
    assert ((bins[:, :2] >= 0) & (bins[:, :2] <= 1)).all()
    last = three_epochs["monitor"].history[-1]
    assert bins[:, 0].tolist() == pytest.approx(last["bins"]["pred_mean"])
    per_class = tensor_util.make_ndarray(acc.Tensors("val/calib_per_class")[-1].tensor_proto)
    assert per_class.shape == (N_CLASSES, 5)
    assert (per_class[:, 3] <= per_class[:, 4]).all()
    text = acc.Tensors("val/calib_bins/text_summary")[-1].tensor_proto.string_val[0].decode()
    assert "| bin |" in text and "CalibErr" in text
    # One plugin per tag: TensorBoard drops a tag reused by another kind of summary.
    tags = acc.Tags()
    kinds = [set(tags["images"]), set(tags["tensors"]), set(tags["scalars"])]
    assert not (kinds[0] & kinds[1] or kinds[0] & kinds[2] or kinds[1] & kinds[2])
    config = acc.Tensors("custom_scalars__config__")[0].tensor_proto.string_val[0]
    layout = layout_pb2.Layout.FromString(config)
    (category,) = layout.category
    (chart,) = category.chart
    (series,) = chart.margin.series
    assert (series.value, series.lower, series.upper) == (
        "val/calib_err",
        "val/calib_err_lower",
        "val/calib_err_upper",
    )


def test_per_class_numbers_are_each_class_s_one_vs_rest_result(
    three_epochs: dict[str, Any],
) -> None:
    """The per-class numbers logged are what a metric with average=None (the monitor's
    second, per-class metric until it took them from its one metric) gives."""
    want = expected_result(three_epochs["model"], three_epochs["val"], streaming=True, average=None)
    logged = three_epochs["monitor"].history[-1]["per_class"]
    assert list(logged) == ["A", "B", "C"]
    for numbers, result in zip(logged.values(), want, strict=True):
        assert numbers == {k: float(getattr(result, k)) for k in numbers}
    acc = three_epochs["acc"]
    table = tensor_util.make_ndarray(acc.Tensors("val/calib_per_class")[-1].tensor_proto)
    assert table[:, 0].tolist() == [float(r.error) for r in want]


def test_logger_without_images_gets_pngs(three_epochs: dict[str, Any]) -> None:
    folder = three_epochs["csv_dir"] / "calibration"
    names = sorted(p.name for p in folder.glob("*.png"))
    assert names == [
        "val_calib_err.png",
        *[f"val_calib_err_per_class_epoch{e:03d}.png" for e in range(3)],
        *[f"val_reliability_diagram_epoch{e:03d}.png" for e in range(3)],
    ]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in folder.glob("*.png"))
    history = json.loads((folder / "val_history.json").read_text())
    assert [r["epoch"] for r in history] == [0, 1, 2]
    # The CSV logger got the scalars from pl_module.log as well.
    metrics = (three_epochs["csv_dir"] / "metrics.csv").read_text()
    assert "val/calib_err_lower" in metrics


class RecordingExperiment:
    """Anything with ``add_figure``: no class check may stand in the way."""

    def __init__(self) -> None:
        self.figures: list[tuple[str, int]] = []

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None, **_: Any) -> None:
        assert figure.axes, "an empty figure was logged"
        self.figures.append((tag, global_step))


class DuckLogger(Logger):
    def __init__(self) -> None:
        super().__init__()
        self._experiment = RecordingExperiment()
        self.metrics: list[tuple[dict[str, float], int | None]] = []

    @property
    def name(self) -> str:
        return "duck"

    @property
    def version(self) -> int:
        return 0

    @property
    def experiment(self) -> RecordingExperiment:
        return self._experiment

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.metrics.append((metrics, step))

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass


def test_duck_typed_logger_every_n_epochs_and_no_sanity(tmp_path: Path) -> None:
    logger = DuckLogger()
    cb = monitor(every_n_epochs=2, save_png=False)
    train, val = loaders()
    trainer(tmp_path, 4, logger=logger, callbacks=[cb]).fit(TinyTagger(), train, val)
    assert [r["epoch"] for r in cb.history] == [1, 3]
    steps = [s for m, s in logger.metrics if "val/calib_err" in m]
    loss_steps = [s for m, s in logger.metrics if "val/loss" in m]
    assert len(loss_steps) == 4
    assert steps == [loss_steps[1], loss_steps[3]]
    assert logger.experiment.figures == [("val/reliability_diagram", s) for s in steps]
    assert not (tmp_path / "calibration").exists()


def test_checkpoint_and_resume_continue_history(tmp_path: Path) -> None:
    train, val = loaders()
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)
    first = monitor(n_samples=100)
    trainer(
        tmp_path,
        2,
        logger=CSVLogger(tmp_path, name="a"),
        callbacks=[first, ckpt],
        enable_checkpointing=True,
    ).fit(TinyTagger(), train, val)
    assert [r["epoch"] for r in first.history] == [0, 1]
    # The records are plain data: the safe loader (docs/callbacks.md) reads them.
    saved = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True)
    assert saved["callbacks"][first.state_key]["history"] == first.history

    second = monitor(n_samples=100)
    resumed = trainer(tmp_path, 4, logger=CSVLogger(tmp_path, name="b"), callbacks=[second])
    resumed.fit(TinyTagger(), train, val, ckpt_path=tmp_path / "ckpt" / "last.ckpt")
    assert [r["epoch"] for r in second.history] == [0, 1, 2, 3]
    assert second.history[:2] == first.history
    steps = [r["step"] for r in second.history]
    assert steps == sorted(set(steps))
    # The PNG history of the resumed run draws all four epochs.
    written = json.loads(
        (Path(resumed.loggers[0].log_dir) / "calibration" / "val_history.json").read_text()
    )
    assert [r["epoch"] for r in written] == [0, 1, 2, 3]


def test_test_stage_binary_extract(tmp_path: Path) -> None:
    def correct_tag(outputs: dict[str, torch.Tensor], batch: Any) -> tuple[torch.Tensor, ...]:
        # Binary pairs: the top tag's probability, and whether it is right.
        probs, target = outputs["probs"], outputs["target"]
        keep = target != PAD
        top, tag = probs[keep].max(-1)
        return top, (tag == target[keep]).float()

    cb = CalibrationMonitor(extract=correct_tag, stage="test", bin_size=10, n_samples=100)
    model = TinyTagger()
    _, val = loaders()
    t = trainer(tmp_path, 1, logger=TensorBoardLogger(tmp_path, name="tb"), callbacks=[cb])
    (metrics,) = t.test(model, val)
    assert metrics["test/calib_err_lower"] <= metrics["test/calib_err_upper"]
    assert len(cb.history) == 1 and cb.history[0]["stage"] == "test"
    n_tokens = int((val.dataset.tensors[1] != PAD).sum())
    assert cb.history[0]["n_pairs"] == n_tokens
    acc = read_events(t.loggers[0].log_dir)
    assert len(acc.Images("test/reliability_diagram")) == 1
    assert [e.step for e in acc.Scalars("test/calib_err")] == [
        e.step for e in acc.Scalars("test/loss")
    ]


def test_epoch_without_pairs_warns_and_skips(tmp_path: Path) -> None:
    cb = monitor(extract=lambda outputs, batch: None)
    train, val = loaders()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer(tmp_path, 1, logger=False, callbacks=[cb]).fit(TinyTagger(), train, val)
    assert cb.history == []
    said = [str(w.message) for w in caught if "nothing to measure" in str(w.message)]
    # Why, in the monitor's words: the metric's "call update()" named a call it makes.
    assert said == [
        "CalibrationMonitor: nothing to measure this epoch, so nothing is logged: extract "
        "returned None for all 3 batches"
    ]


def test_an_empty_second_loader_is_named_in_words(tmp_path: Path) -> None:
    """The loader's tag suffix had been glued to "epoch" (this epoch/dataloader_idx_1)."""

    class TwoLoaders(TinyTagger):
        def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> Any:
            return super().validation_step(batch, batch_idx)

    cb = monitor()
    train, val = loaders()
    empty = DataLoader(tagging_data(40, seed=1), batch_size=16, sampler=[])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer(tmp_path, 1, logger=False, callbacks=[cb]).fit(TwoLoaders(), train, [val, empty])
    said = [str(w.message) for w in caught if "nothing to measure" in str(w.message)]
    assert said == [
        "CalibrationMonitor: nothing to measure this epoch of val dataloader 1, so nothing is "
        "logged: no validation batch reached it (an empty dataloader, or limit_val_batches)"
    ]
    assert [r.get("dataloader_idx") for r in cb.history] == [0]


def test_extract_batch_errors() -> None:
    cb = monitor()
    with pytest.raises(ValueError, match="'probs' and 'target'"):
        cb.extract_batch(torch.zeros(3), None)
    with pytest.raises(ValueError, match="no 'target'"):
        cb.extract_batch({"probs": torch.zeros(3, 3)}, None)
    with pytest.raises(ValueError, match="must be tensors"):
        cb.extract_batch({"probs": [0.5], "target": [1]}, None)
    keyed = monitor(probs_key="p", target_key="y")
    probs, _ = keyed.extract_batch({"p": torch.full((2, 3), 1 / 3).half(), "y": torch.ones(2)}, 0)
    assert probs.dtype == torch.float32
    bad = monitor(extract=lambda outputs, batch: outputs)
    with pytest.raises(ValueError, match="extract must return"):
        bad.extract_batch("nope", None)
    # Named as a tensor (before: "got <class 'torch.Tensor'>"), as TemperatureRecalibration
    # names it: one check serves both callbacks.
    with pytest.raises(ValueError, match=r"got one Tensor of shape \(2, 5, 3\)"):
        bad.extract_batch(torch.zeros(2, 5, 3), None)


class CountingTagger(TinyTagger):
    """Counts its training steps: an error found at the sanity check comes before any."""

    def __init__(self) -> None:
        super().__init__()
        self.trained = 0

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        self.trained += 1
        return super().training_step(batch, batch_idx)


def test_a_malformed_step_output_fails_the_sanity_check(tmp_path: Path) -> None:
    """The sanity check's batches were not looked at: padding without ignore_index (or a bad
    key, a shape) failed the fit only after its first training epoch."""
    model = CountingTagger()
    train, val = loaders()
    run = trainer(tmp_path, 2, logger=False, callbacks=[monitor(ignore_index=None)])
    with pytest.raises(ValueError, match=r"class id -100, .*\(padding\? set ignore_index=-100\)"):
        run.fit(model, train, val)
    assert model.trained == 0


class _MetricAtTrainStart(Callback):
    """What the monitor's metric holds when training starts, after the sanity check."""

    def __init__(self, cb: CalibrationMonitor) -> None:
        self.cb, self.updates = cb, None

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self.updates = self.cb.metric.update_count


def test_the_sanity_check_s_batches_are_not_measured(tmp_path: Path) -> None:
    """Checked at the sanity check, the batches must not reach the first epoch's result,
    nor stay in the metric until it: read between (at on_train_start) it held them, and
    kept the pairs of an exact (streaming=False) metric through the first training epoch."""
    cb = monitor(streaming=False)
    probe = _MetricAtTrainStart(cb)
    model = TinyTagger()
    train, val = loaders()
    run = trainer(tmp_path, 1, logger=False, callbacks=[cb, probe], num_sanity_val_steps=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.fit(model, train, val)
    assert probe.updates == 0
    pairs = sum(int((y != PAD).sum()) for _, y in val) * N_CLASSES
    assert [r["n_pairs"] for r in cb.history] == [pairs]
    assert cb.history[0]["error"] == pytest.approx(
        expected_result(model, val).error.item(), rel=1e-9
    )


class SanitySkipping(TinyTagger):
    """Skips its work during the sanity check (a common guard) and returns nothing there."""

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor] | None:
        if self.trainer.sanity_checking:
            return None
        return super().validation_step(batch, batch_idx)


@pytest.mark.parametrize(
    "extract", [None, lambda out, batch: (out["probs"], out["target"])], ids=["keys", "extract"]
)
def test_a_module_returning_nothing_at_the_sanity_check_is_measured(
    tmp_path: Path, extract: Any
) -> None:
    """A None output at the sanity check failed the fit before it trained (checked as a
    step output since the sanity check's batches are checked); a real epoch's None is
    still named."""
    cb = monitor(extract=extract)
    train, val = loaders()
    run = trainer(tmp_path, 1, logger=False, callbacks=[cb], num_sanity_val_steps=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.fit(SanitySkipping(), train, val)
    assert [r["epoch"] for r in cb.history] == [0]

    class Nothing(TinyTagger):
        def validation_step(self, batch: Any, batch_idx: int) -> None:
            return None

    bare = trainer(tmp_path, 1, logger=False, callbacks=[monitor()], num_sanity_val_steps=2)
    with pytest.raises(ValueError, match=r"return a dict .* \(got NoneType\)"):
        bare.fit(Nothing(), train, val)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"stage": "train"}, "stage must be"),
        ({"every_n_epochs": 0}, "every_n_epochs"),
        ({"every_n_epochs": 1.5}, "every_n_epochs"),
        ({"num_classes": None, "per_class": True}, "per_class=True needs num_classes"),
        ({"class_names": ["a"], "per_class": True}, "class_names must have"),
        # Before: accepted, each a surprise later (a tag "/calib_err", a string read as
        # three names, names never used, a truthy "yes", a None key at the first batch).
        ({"prefix": ""}, "prefix must be a non-empty string"),
        ({"prefix": 123}, "prefix must be a non-empty string"),
        ({"prefix": "val/"}, "without a leading or trailing '/'"),
        ({"per_class": "yes"}, "per_class must be True or False"),
        ({"prog_bar": "yes"}, "prog_bar must be True or False"),
        ({"probs_key": None}, "probs_key must be a non-empty string"),
        ({"target_key": 3}, "target_key must be a non-empty string"),
        ({"class_names": "abc", "per_class": True}, "got the string 'abc'"),
        ({"class_names": ["a", "a", "b"], "per_class": True}, "unique, repeated: 'a'"),
        ({"num_classes": None, "class_names": ["a", "b"]}, "class_names needs num_classes"),
        # Before: "average must stay 'micro', got None", an option the user never set.
        ({"mode": "top_label", "per_class": True}, "mode='top_label' has none"),
        ({"save_png": "yes"}, "save_png"),
        # 1 and 0.0 equal True and False, and had been kept as they were.
        ({"save_png": 1}, "save_png must be None, True or False, got 1"),
        ({"save_png": 0.0}, "save_png must be None, True or False, got 0.0"),
        ({"smooth": "yes"}, "smooth must be"),
        ({"average": None}, "per_class=True instead"),
        ({"extract": 3}, "extract must be callable"),
        ({"bin_size": 0}, "bin_size"),
    ],
)
def test_bad_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        monitor(**kwargs)


BIN_SIZE_TAKERS = {
    "CalibrationMonitor": lambda size: CalibrationMonitor(bin_size=size),
    "TemperatureRecalibration": lambda size: TemperatureRecalibration(bin_size=size),
    "CalibrationError": lambda size: CalibrationError(bin_size=size),
    "calibration_error": lambda size: calibration_error(
        torch.rand(8), torch.ones(8), bin_size=size
    ),
}


@pytest.mark.parametrize("size", ["Auto", "sqrt", 0])
@pytest.mark.parametrize("make", BIN_SIZE_TAKERS.values(), ids=BIN_SIZE_TAKERS.keys())
def test_a_bad_bin_size_is_told_it_may_be_auto(make: Any, size: Any) -> None:
    # "bin_size must be a positive integer, got 'Auto'" never named "auto", the default and
    # recommended value; the callbacks and the library share the one check.
    wanted = f"bin_size must be a positive integer or 'auto', got {size!r}"
    with pytest.raises(ValueError, match=re.escape(wanted)):
        make(size)


@pytest.mark.parametrize(
    "names",
    [
        lambda: __import__("numpy").array(["ADJ", "NOUN", "VERB"]),  # LabelEncoder.classes_
        lambda: {"ADJ": 0, "NOUN": 1, "VERB": 2}.keys(),
        lambda: __import__("pandas").Index(["ADJ", "NOUN", "VERB"]),
        lambda: ("ADJ", "NOUN", "VERB"),
    ],
    ids=["ndarray", "dict_keys", "pandas Index", "tuple"],
)
def test_class_names_may_be_any_iterable_of_names(names: Any) -> None:
    """An ndarray, dict_keys or pandas Index of names was refused as "not a sequence"."""
    cb = monitor(per_class=True, class_names=names())
    assert cb.class_names == ["ADJ", "NOUN", "VERB"]
    assert all(type(name) is str for name in cb.class_names)


def test_class_names_without_per_class_warn_and_are_unused() -> None:
    """class_names without per_class=True was harmless, then refused with a ValueError."""
    with pytest.warns(UserWarning, match="only per_class=True makes .* unused here"):
        cb = monitor(class_names=["a", "b", "c"])
    assert cb.per_class is False


def test_sync_on_compute_false_is_refused_only_across_processes(tmp_path: Path) -> None:
    """In one process sync_on_compute=False changes nothing, and was refused all the same."""
    from types import SimpleNamespace

    cb = monitor(sync_on_compute=False)
    train, val = loaders()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer(tmp_path, 1, logger=False, callbacks=[cb]).fit(TinyTagger(), train, val)
    assert len(cb.history) == 1
    with pytest.raises(ValueError, match="sync_on_compute must stay True"):
        cb.setup(SimpleNamespace(world_size=2), TinyTagger(), "fit")


def test_classwise_mode_charts_the_classes_it_averages() -> None:
    """per_class=True with mode='classwise' was refused (about average=None, never set)."""
    cb = monitor(mode="classwise", per_class=True, class_names=["a", "b", "c"])
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(300, N_CLASSES, generator=g), -1)
    target = torch.randint(0, N_CLASSES, (300,), generator=g)
    cb.metric.update(probs, target)
    per_class = [float(r.error) for r in cb.metric.compute_class_results()]
    assert float(cb.metric.compute_result().error) == pytest.approx(sum(per_class) / 3)


def test_classwise_mode_draws_one_panel_per_class(tmp_path: Path, monkeypatch) -> None:
    """A classwise monitor had drawn its result's bins, every class's pooled, as one curve
    (the metric's plot() refused that for the comparison); it draws each class's panel."""
    from calib_metrics import plot_panels

    drawn = []

    def spy(classes, **kwargs):
        figure = panels(classes, **kwargs)
        drawn.append((classes, kwargs["title"], figure[1]))
        return figure

    panels = plot_panels.classwise_panels
    monkeypatch.setattr(plot_panels, "classwise_panels", spy)
    cb = monitor(mode="classwise", save_png=True, bin_size=5)
    train, val = loaders()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer(tmp_path, 1, logger=False, callbacks=[cb], num_sanity_val_steps=0).fit(
            TinyTagger(), train, val
        )
    ((classes, title, axes),) = drawn
    assert len(classes) == len(axes) == N_CLASSES
    mean = sum(float(r.error) for r in classes) / N_CLASSES
    assert cb.history[-1]["error"] == pytest.approx(mean)
    assert f"classwise CalibErr {mean:.4f}" in title
    assert [ax.get_title().split(" · ")[0] for ax in axes] == ["class 0", "class 1", "class 2"]
    assert (tmp_path / "calibration" / "val_reliability_diagram_epoch000.png").is_file()
    # Names the user gave title the panels, as they label the per-class chart.
    drawn.clear()
    named = monitor(mode="classwise", save_png=True, bin_size=5, class_names=["A", "B", "C"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer(tmp_path, 1, logger=False, callbacks=[named], num_sanity_val_steps=0).fit(
            TinyTagger(), train, val
        )
    assert [ax.get_title().split(" · ")[0] for ax in drawn[0][2]] == ["A", "B", "C"]


class TensorExperiment(RecordingExperiment):
    """Keeps what ``add_tensor`` and ``add_text`` get, as TensorBoard would store it."""

    def __init__(self) -> None:
        super().__init__()
        self.tensors: dict[str, Any] = {}
        self.texts: dict[str, str] = {}

    def add_tensor(self, tag: str, tensor: torch.Tensor, global_step: int | None = None) -> None:
        self.tensors[tag] = tensor

    def add_text(self, tag: str, text: str, global_step: int | None = None) -> None:
        self.texts[tag] = text


def test_classwise_bins_are_logged_class_by_class(tmp_path: Path) -> None:
    """A classwise monitor logged its result's bins, every class's merged and sorted by mean
    prediction, as val/calib_bins and history["bins"]: not "class 0's first", as the docs
    said, and no row could be told to be of one class. They come class by class now, each
    row with its class."""
    cb = monitor(mode="classwise", class_names=["A", "B", "C"])
    model, (_, val) = TinyTagger(), loaders()
    logger = DuckLogger()
    logger._experiment = experiment = TensorExperiment()
    run = trainer(tmp_path, 1, logger=logger, callbacks=[cb])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.validate(model, val, verbose=False)
    reference = CalibrationError(
        N_CLASSES, ignore_index=PAD, bin_size=20, mode="classwise", streaming=True
    )
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few bins: what is compared here is their order
        for x, y in val:
            reference.update(model(x), y)
        classes = reference.compute_class_results()
    expected = torch.cat(
        [torch.stack([r.bins.pred_mean, r.bins.freq, r.bins.count], 1) for r in classes]
    ).double()
    owner = [c for c, r in enumerate(classes) for _ in range(len(r.bins.count))]
    logged = experiment.tensors["val/calib_bins"]
    assert logged.shape == (len(owner), 4)
    assert torch.allclose(logged[:, :3], expected)
    assert logged[:, 3].tolist() == owner
    bins = cb.history[-1]["bins"]
    assert bins["class"] == owner
    assert bins["pred_mean"] == pytest.approx(expected[:, 0].tolist())
    text = experiment.texts["val/calib_bins"]
    assert "| bin | class |" in text and "| 0 | A |" in text


@pytest.mark.parametrize("norm", ["l1", "max"])
def test_text_tab_names_the_norm_as_the_figures_do(tmp_path: Path, norm: str) -> None:
    """The Text tab had headed an l1 or max error "CalibErr **0.14775**" and its per-class
    table "| class | CalibErr |", the paper's RMS name, while the same epoch's diagram said
    "CalibErr (l1)"."""
    cb = monitor(norm=norm, per_class=True)
    logger = DuckLogger()
    logger._experiment = experiment = TensorExperiment()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer(tmp_path, 1, logger=logger, callbacks=[cb]).validate(
            TinyTagger(), loaders()[1], verbose=False
        )
    lines = experiment.texts["val/calib_bins"].splitlines()
    assert lines[0].startswith(f"CalibErr ({norm}) **{cb.history[-1]['error']:.5f}**")
    assert f"| class | CalibErr ({norm}) | lower | upper |" in lines


def test_state_dict_round_trip_and_state_key() -> None:
    cb = monitor()
    cb.history.append({"epoch": 0, "error": 0.1})
    other = monitor()
    other.load_state_dict(cb.state_dict())
    assert other.history == cb.history and other.history is not cb.history
    assert monitor(stage="test").state_key != cb.state_key
    with pytest.raises(ValueError, match="history must be a list"):
        other.load_state_dict({"history": 3})


def example_script() -> Any:
    """``examples/train_tagger_lightning.py`` as a module."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "examples" / "train_tagger_lightning.py"
    spec = importlib.util.spec_from_file_location("train_tagger_lightning", path)
    example = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(example)
    return example


@pytest.mark.parametrize("model", ["crf", "bilstm"])
def test_example_script_runs_on_synthetic_data(tmp_path: Path, model: str) -> None:
    example = example_script()
    threads = torch.get_num_threads()
    try:
        out = example.main(
            [
                "--synthetic",
                "--model",
                model,
                "--epochs",
                "2",
                "--train-sentences",
                "60",
                "--dev-sentences",
                "30",
                "--bin-size",
                "100",
                "--out",
                str(tmp_path),
            ]
        )
    finally:
        torch.set_num_threads(threads)  # the script sets it for its own process
    assert [r["epoch"] for r in out["history"]] == [0, 1]
    assert out["last"]["lower"] <= out["last"]["upper"]
    acc = read_events(out["log_dir"])
    assert len(acc.Images("val/reliability_diagram")) == 2
    assert len(acc.Images("val/calib_err_per_class")) == 2


# An accelerator this machine lacks, whichever it has: MPS exists on macOS only.
_ABSENT = "mps" if torch.cuda.is_available() else "cuda"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--lr", "-1"], "--lr must be a finite number > 0, got -1.0"),
        (["--lr", "nan"], "--lr must be a finite number > 0, got nan"),
        (["--accelerator", _ABSENT], f"--accelerator {_ABSENT}: "),
        (["--accelerator", "abacus"], "--accelerator abacus: unknown accelerator (choose"),
    ],
    ids=["negative lr", "nan lr", "absent accelerator", "unknown accelerator"],
)
def test_example_script_refuses_bad_arguments_in_one_line(
    tmp_path: Path, capsys, option: list[str], message: str
) -> None:
    """These ended in tracebacks (exit 1), the others in argparse's one line (exit 2)."""
    example = example_script()
    threads = torch.get_num_threads()
    sizes = ["--train-sentences", "20", "--dev-sentences", "10", "--epochs", "1"]
    try:
        with pytest.raises(SystemExit) as exit_info:
            example.main(["--synthetic", *sizes, *option, "--out", str(tmp_path)])
    finally:
        torch.set_num_threads(threads)  # the script sets it for its own process
    assert exit_info.value.code == 2
    (last,) = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert message in last
    assert not list(tmp_path.iterdir())  # stopped before writing anything


def test_example_script_checks_the_accelerator_before_the_corpus_and_only_it(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """--accelerator was checked when the Trainer was built, after the corpus had loaded,
    and any error building it (not the accelerator's) was reported as --accelerator's."""
    example = example_script()
    threads = torch.get_num_threads()
    sizes = ["--train-sentences", "20", "--dev-sentences", "10", "--epochs", "1"]
    options = ["--synthetic", *sizes, "--out", str(tmp_path)]

    def no_corpus(args: Any) -> None:
        pytest.fail("the corpus loaded before --accelerator was checked")

    def broken_trainer(**settings: Any) -> None:
        raise ValueError("a setting other than the accelerator")

    try:
        with monkeypatch.context() as patch:
            patch.setattr(example, "load_corpus", no_corpus)
            with pytest.raises(SystemExit) as exit_info:
                example.main([*options, "--accelerator", "abacus"])
        assert exit_info.value.code == 2
        assert "--accelerator abacus: unknown accelerator" in capsys.readouterr().err
        monkeypatch.setattr(example, "Trainer", broken_trainer)
        with pytest.raises(ValueError, match="a setting other than the accelerator"):
            example.main([*options, "--accelerator", "cpu"])
    finally:
        torch.set_num_threads(threads)  # the script sets it for its own process


class SentenceTagger(TinyTagger):
    """Also returns each token's sentence id (its row in the data set) as ``groups``."""

    def test_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        out = super().test_step(batch, batch_idx)
        y = batch[1]
        sentence = batch_idx * 16 + torch.arange(y.shape[0])
        return {**out, "sentence": sentence.unsqueeze(1).expand_as(y)}


def test_group_interval_resamples_the_steps_sentences(tmp_path: Path) -> None:
    options = {"interval": "groups", "debias": True, "streaming": False}
    cb = monitor(stage="test", groups_key="sentence", **options)
    model = SentenceTagger()
    _, val = loaders()
    t = trainer(tmp_path, 1, logger=False, callbacks=[cb])
    (metrics,) = t.test(model, val)
    metric = CalibrationError(N_CLASSES, ignore_index=PAD, bin_size=20, n_samples=300, **options)
    with torch.no_grad():
        for i, (x, y) in enumerate(val):
            sentence = (i * 16 + torch.arange(y.shape[0])).unsqueeze(1).expand_as(y)
            metric.update(model(x), y, groups=sentence)
    want = metric.compute_result()
    assert metrics["test/calib_err"] == pytest.approx(want.error.item(), rel=1e-5)
    assert metrics["test/calib_err_lower"] == pytest.approx(want.lower.item(), rel=1e-5)
    assert metrics["test/calib_err_upper"] == pytest.approx(want.upper.item(), rel=1e-5)


def test_group_interval_needs_ids_and_the_exact_mode() -> None:
    with pytest.raises(ValueError, match="streaming=False"):
        monitor(interval="groups")  # the monitor streams by default
    cb = monitor(interval="groups", streaming=False)
    batch = {"probs": torch.full((2, 3), 1 / 3), "target": torch.ones(2, dtype=torch.long)}
    with pytest.raises(ValueError, match="'groups'"):
        cb.extract_batch(batch, None)
    *_, groups = cb.extract_batch({**batch, "groups": torch.arange(2)}, None)
    assert groups.tolist() == [0, 1]
    two = monitor(
        interval="groups", streaming=False, extract=lambda o, b: (o["probs"], o["target"])
    )
    with pytest.raises(ValueError, match=r"\(probs, target, groups\)"):
        two.extract_batch(batch, None)


@pytest.mark.parametrize(
    "options",
    [{"streaming": False}, {"mode": "classwise"}],
    ids=["exact, sentences resampled", "classwise"],
)
def test_per_class_results_come_from_the_one_metric(tmp_path: Path, monkeypatch, options) -> None:
    """per_class=True kept a second metric with the same one-vs-rest state (600 MiB more
    at C = 50, the default resolution) and updated both every batch. One metric now holds
    the state; each class's numbers are still those of a metric with average=None."""
    updates: list[int] = []
    update = CalibrationError.update

    def spy(metric: CalibrationError, *args: Any, **kwargs: Any) -> None:
        updates.append(id(metric))
        update(metric, *args, **kwargs)

    monkeypatch.setattr(CalibrationError, "update", spy)
    cb = monitor(stage="test", groups_key="sentence", per_class=True, **options)
    metrics = [v for v in vars(cb).values() if isinstance(v, CalibrationError)]
    assert metrics == [cb.metric]
    model = SentenceTagger()
    _, val = loaders()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer(tmp_path, 1, logger=False, callbacks=[cb]).test(model, val, verbose=False)
    assert updates == [id(cb.metric)] * len(val)

    exact = not options.get("mode") and not options.get("streaming", True)
    reference = CalibrationError(
        N_CLASSES, ignore_index=PAD, bin_size=20, n_samples=300, average=None,
        streaming=options.get("streaming", True),
    )  # fmt: skip
    with torch.no_grad():
        for i, (x, y) in enumerate(val):
            sentence = (i * 16 + torch.arange(y.shape[0])).unsqueeze(1).expand_as(y)
            reference.update(model(x), y, **({"groups": sentence} if exact else {}))
    want = reference.compute_result()
    logged = cb.history[-1]["per_class"]
    for numbers, result in zip(logged.values(), want, strict=True):
        assert numbers == {k: float(getattr(result, k)) for k in numbers}


# --------------------------------------------------------------------------------------
# what the figures say: the interval's kind and level, the per-label chart, epoch ticks


class FigureExperiment:
    """Keeps every figure given to ``add_figure``, by tag."""

    def __init__(self) -> None:
        self.figures: dict[str, list[Any]] = {}

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None, **_: Any) -> None:
        self.figures.setdefault(tag, []).append(figure)


class FigureLogger(DuckLogger):
    def __init__(self) -> None:
        super().__init__()
        self._experiment = FigureExperiment()


def _run(tmp_path: Path, **options: Any) -> dict[str, list[Any]]:
    logger = FigureLogger()
    cb = monitor(per_class=True, class_names=["ADJ", "NOUN", "VERB"], save_png=False, **options)
    train, val = loaders()
    trainer(tmp_path, 1, logger=logger, callbacks=[cb]).fit(TinyTagger(), train, val)
    return logger.experiment.figures


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ({}, "95% interval: debiased pair bootstrap"),
        (
            {"confidence": 0.9, "interval": "paper", "debias": False},
            "90% interval: paper Algorithm 2",
        ),
    ],
)
def test_monitor_figures_name_the_interval_and_draw_the_per_label_chart(
    tmp_path: Path, options: dict, kind: str
) -> None:
    figures = _run(tmp_path, **options)
    (diagram,) = figures["val/reliability_diagram"]
    assert kind + " · " in diagram.axes[0].get_title()
    (per_class,) = figures["val/calib_err_per_class"]
    ax = per_class.axes[0]
    # The per-label chart: one horizontal bar per class, labels on the y axis, sorted.
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == ["ADJ", "NOUN", "VERB"]
    widths = [p.get_width() for p in ax.patches]
    assert widths == sorted(widths, reverse=True)
    (legend,) = per_class.legends
    assert legend.get_title().get_text() == "whiskers: " + kind
    assert [t.get_text() for t in legend.get_texts()] == ["CalibErr (val)"]
    # Thumbnail-sized: not wider than a reliability diagram.
    assert per_class.get_size_inches()[0] <= diagram.get_size_inches()[0]


@pytest.mark.parametrize("mode", ["one_vs_rest", "classwise"])
def test_monitor_diagrams_carry_the_smooth_curve_of_the_logged_error(
    tmp_path: Path, mode: str
) -> None:
    """The diagrams had drawn the bins alone beside the logged smooth error: each carries
    the smooth curve and band (classwise: each class's panel), smooth=False none."""
    for smooth in (True, False):
        logger = FigureLogger()
        cb = monitor(save_png=False, smooth=smooth, mode=mode)
        train, val = loaders()
        trainer(tmp_path, 1, logger=logger, callbacks=[cb]).fit(TinyTagger(), train, val)
        (diagram,) = logger.experiment.figures["val/reliability_diagram"]
        labels = [k.get_label() for ax in diagram.axes for k in ax.get_lines()]
        curves = [label for label in labels if "smooth curve" in label]
        if not smooth:
            assert curves == []
        elif mode == "one_vs_rest":
            logged = cb.history[-1]["smooth_error"]
            assert curves == [f"smooth curve (smECE {logged:.4f}, σ {curves[0].split('σ ')[1]}"]
        else:  # one curve per class panel, each titled with its class's smooth error
            assert len(curves) == N_CLASSES
            titled = [ax.get_title() for ax in diagram.axes if "smECE" in ax.get_title()]
            assert len(titled) == N_CLASSES


def test_band_over_epochs_puts_ticks_on_whole_epochs(tmp_path: Path, monkeypatch) -> None:
    from calib_metrics import plot
    from calib_metrics.callbacks import _files

    drawn: list[dict] = []
    original = plot.error_curve

    def spy(*args: Any, **kwargs: Any) -> Any:
        drawn.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(plot, "error_curve", spy)
    rows = [{"epoch": e, "step": e, "error": 0.1, "lower": 0.08, "upper": 0.12} for e in range(3)]
    _files.write_files(tmp_path, "val", "epoch002", {}, rows, "val CalibErr")
    assert drawn and drawn[0]["integer_x"] is True and drawn[0]["xlabel"] == "epoch"


def test_a_test_monitor_keeps_the_validation_chart(tmp_path: Path) -> None:
    """TensorBoard shows a run's last Custom Scalars layout only: the test monitor's used to
    replace the validation monitor's, and the validation band disappeared."""
    train, val = loaders()
    logger = TensorBoardLogger(str(tmp_path), name="tb")
    monitors = [monitor(), monitor(stage="test")]
    run = trainer(tmp_path, 1, logger=logger, callbacks=monitors)
    model = TinyTagger()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.fit(model, train, val)
        run.test(model, val, verbose=False)
    configs = read_events(logger.log_dir).Tensors("custom_scalars__config__")
    layout = layout_pb2.Layout.FromString(configs[-1].tensor_proto.string_val[0])
    values = {chart.margin.series[0].value for c in layout.category for chart in c.chart}
    assert values == {"val/calib_err", "test/calib_err"}


def test_the_stage_advice_looks_at_the_other_monitors(tmp_path: Path) -> None:
    """A val monitor said 'add CalibrationMonitor(stage="test")' beside one that was there."""
    train, val = loaders()
    model = TinyTagger()
    for monitors, advised in (([monitor(), monitor(stage="test")], False), ([monitor()], True)):
        run = trainer(tmp_path, 1, logger=False, callbacks=monitors)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run.fit(model, train, val)
            run.test(model, val, verbose=False)
        said = any("stage='test') to the callbacks" in str(w.message) for w in caught)
        assert said == advised


def test_unused_groups_get_the_advice_that_fits_the_monitor(tmp_path: Path) -> None:
    """An exact monitor with interval='pairs' was told to pass streaming=False, then to pass
    interval=None: it is told that the ids are not used because it asked for pairs."""
    cb = monitor(stage="test", groups_key="sentence", streaming=False, interval="pairs")
    _, val = loaders()
    run = trainer(tmp_path, 1, logger=False, callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.test(SentenceTagger(), val, verbose=False)
    (said,) = [str(w.message) for w in caught if "group ids" in str(w.message)]
    assert "the group ids are not used: interval='pairs' was asked for" in said
    assert "pass" not in said


def test_class_names_as_a_set_are_refused() -> None:
    """A set's order follows string hashing, which changes from process to process: the
    names would land on other classes in each run."""
    with pytest.raises(ValueError, match="class_names must be ordered"):
        monitor(per_class=True, class_names={"ADJ", "NOUN", "VERB"})
