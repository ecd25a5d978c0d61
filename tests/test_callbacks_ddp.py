"""CalibrationMonitor under 2-process CPU DDP: every rank computes the synced value, rank 0 writes.

The run happens in a child Python process (this file run as a script), so that
``ddp_spawn``'s workers can import the model by name and a hung run can be killed by PID
without taking pytest down.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import process_helpers
import pytest
from ddp_teardown import EndProcessGroup
from lightning.pytorch import Callback, LightningModule, Trainer

EPOCHS = 2
TIMEOUT_S = 300


class DumpHistory(Callback):
    """Writes each rank's monitor history (module level, so that DDP workers can unpickle it)."""

    def __init__(self, out: Path) -> None:
        self.out = out

    def on_fit_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        from calib_metrics.callbacks import CalibrationMonitor

        (monitor,) = (c for c in trainer.callbacks if isinstance(c, CalibrationMonitor))
        path = self.out / f"rank{trainer.global_rank}.json"
        path.write_text(json.dumps(monitor.history))


def run_ddp(out: Path, logger: str = "tb") -> None:
    """Fit on 2 CPU processes, then write what each rank and the parent saw to ``out``.
    ``logger="csv"``: a logger without images and ``save_png=False``, so nothing draws."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch
    from lightning.pytorch import Trainer
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
    from test_callbacks import PAD, TinyTagger, loaders

    from calib_metrics import CalibrationError
    from calib_metrics.callbacks import CalibrationMonitor

    torch.manual_seed(0)
    train, val = loaders(batch_size=10)  # 40 validation sequences: 20 per rank, no padding
    model = TinyTagger()
    monitor = CalibrationMonitor(
        num_classes=3, ignore_index=PAD, bin_size=20, n_samples=300, save_png=logger == "tb"
    )
    trainer = Trainer(
        default_root_dir=out,
        max_epochs=EPOCHS,
        accelerator="cpu",
        devices=2,
        strategy="ddp_spawn",
        logger=TensorBoardLogger(out, name="tb") if logger == "tb" else CSVLogger(out, name="csv"),
        callbacks=[monitor, DumpHistory(out), EndProcessGroup()],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=1,
        log_every_n_steps=1,
    )
    trainer.fit(model, train, val)
    # The parent holds rank 0's trained weights: the metric on the whole validation set
    # is what the synchronised ranks must have logged.
    metric = CalibrationError(3, ignore_index=PAD, bin_size=20, n_samples=300, streaming=True)
    with torch.no_grad():
        for x, y in val:
            metric.update(model(x), y)
    expected = metric.compute_result()
    summary = {
        "logged": {k: float(v) for k, v in trainer.callback_metrics.items()},
        "expected": {"error": float(expected.error), "upper": float(expected.upper)},
        # ddp_spawn fits in spawned processes: this process's monitor never records.
        "parent_history": monitor.history,
    }
    (out / "summary.json").write_text(json.dumps(summary))


@pytest.mark.slow
def test_ddp_two_cpu_processes(tmp_path: Path) -> None:
    code, text = process_helpers.run_script(__file__, tmp_path, timeout=TIMEOUT_S, ddp=True)
    assert code == 0, f"DDP run failed or timed out:\n{text}"

    summary = json.loads((tmp_path / "summary.json").read_text())
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    # Every rank computed, over both ranks' data, the same result.
    for history in ranks:
        assert [r["epoch"] for r in history] == list(range(EPOCHS))
    assert [r["error"] for r in ranks[0]] == [r["error"] for r in ranks[1]]
    assert [r["n_pairs"] for r in ranks[0]] == [r["n_pairs"] for r in ranks[1]]
    n_tokens = ranks[0][0]["n_pairs"] // 3
    assert n_tokens > 40  # both halves of the 40 sequences, not one rank's 20
    logged, expected = summary["logged"], summary["expected"]
    assert logged["val/calib_err"] == pytest.approx(expected["error"], rel=1e-5)
    assert logged["val/calib_err_upper"] == pytest.approx(expected["upper"], rel=1e-5)
    assert ranks[0][-1]["error"] == pytest.approx(expected["error"], rel=1e-9)

    # Rank zero alone wrote: one event file, one image and one value per epoch.
    from tensorboard.backend.event_processing.event_accumulator import (
        IMAGES,
        SCALARS,
        EventAccumulator,
    )

    # (The parent's logger, asked after the run, names the next version: look at all.)
    (events,) = (tmp_path / "tb").glob("version_*/events.out.tfevents.*")
    log_dir = events.parent
    acc = EventAccumulator(str(log_dir), size_guidance={IMAGES: 0, SCALARS: 0})
    acc.Reload()
    assert len(acc.Images("val/reliability_diagram")) == EPOCHS
    assert len(acc.Scalars("val/calib_err")) == EPOCHS
    pngs = sorted((log_dir / "calibration").glob("val_reliability_diagram_epoch*.png"))
    assert len(pngs) == EPOCHS
    # docs/callbacks.md: the parent's monitor.history stays empty; the file holds the records.
    assert summary["parent_history"] == []
    written = json.loads((log_dir / "calibration" / "val_history.json").read_text())
    assert written == ranks[0]


@pytest.mark.slow
def test_ddp_with_a_logger_that_takes_no_figures(tmp_path: Path) -> None:
    """Rank 0's CSV logger takes no figures (save_png=False: nothing is drawn), while rank 1
    holds Lightning's dummy experiment, whose every attribute seems a method: rank 1 made
    the smooth curves, whose state gather rank 0 never joined, and the fit hung."""
    code, text = process_helpers.run_script(__file__, tmp_path, "csv", timeout=TIMEOUT_S, ddp=True)
    assert code == 0, f"DDP run failed or timed out:\n{text}"
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["epoch"] for r in ranks[0]] == [r["epoch"] for r in ranks[1]] == [0, 1]
    assert [r["smooth_error"] for r in ranks[0]] == [r["smooth_error"] for r in ranks[1]]
    assert not list(tmp_path.rglob("*.png"))  # nothing drawn, as asked


@pytest.mark.parametrize(
    ("items", "drop_last", "said"),
    [
        (41, False, "the validation sampler repeats 1 of the 41 items (42 drawn, 21 on each"),
        (41, True, "the validation sampler drops 1 of the 41 items (drop_last=True: 40 drawn"),
        (40, False, None),
    ],
)
def test_a_sampler_that_repeats_or_drops_items_is_named_once(
    tmp_path: Path, items: int, drop_last: bool, said: str | None
) -> None:
    """DistributedSampler pads 41 items to 2 x 21 by repeating one: the "whole validation
    set" value counted it twice without a word. Rank 0's sampler of a 2-rank world, in one
    process, is what each rank's loader holds under DDP."""
    import warnings

    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_callbacks import PAD, TinyTagger, loaders, tagging_data

    from calib_metrics.callbacks import CalibrationMonitor

    data = tagging_data(items, seed=1)
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=False, drop_last=drop_last)
    val = DataLoader(data, batch_size=10, sampler=sampler)
    monitor = CalibrationMonitor(num_classes=3, ignore_index=PAD, bin_size=20, n_samples=50)
    trainer = Trainer(
        default_root_dir=tmp_path, max_epochs=2, accelerator="cpu", devices=1, logger=False,
        callbacks=[monitor], enable_progress_bar=False, enable_model_summary=False,
        enable_checkpointing=False, num_sanity_val_steps=0,
    )  # fmt: skip
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(TinyTagger(), loaders()[0], val)
    told = [str(w.message) for w in caught if "under DDP" in str(w.message)]
    if said is None:
        assert told == []
        return
    (message,) = told  # once, not every epoch
    assert said in message
    assert "size divisible by the 2 ranks" in message
    assert "use_distributed_sampler=False" in message


if __name__ == "__main__":
    run_ddp(Path(sys.argv[1]), *sys.argv[2:])


def test_a_module_that_lets_a_shard_be_empty_is_told_the_monitor_would_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With allow_zero_length_dataloader_with_multiple_devices a rank whose validation shard
    is empty skips Lightning's validation hooks, and the other ranks' synchronised compute
    waited for it until the process group's timeout (30 minutes), without a word."""
    import warnings

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_callbacks import TinyTagger

    from calib_metrics.callbacks import CalibrationMonitor

    module = TinyTagger()
    trainer = Trainer(default_root_dir=tmp_path, accelerator="cpu", devices=1, logger=False)
    monkeypatch.setattr(Trainer, "world_size", property(lambda self: 2))
    for allowed in (False, True):
        module.allow_zero_length_dataloader_with_multiple_devices = allowed
        monitor = CalibrationMonitor(num_classes=3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            monitor.setup(trainer, module, "fit")
        told = [str(w.message) for w in caught if "shard is empty" in str(w.message)]
        assert len(told) == allowed
