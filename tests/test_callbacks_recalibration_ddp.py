"""TemperatureRecalibration under 2-process CPU DDP (gloo): the temperature is fitted on the
logits gathered from both ranks, so it equals a single-process fit on the union.

The run happens in a child Python process (this file run as a script), so that
``ddp_spawn``'s workers can import the model by name and a hung run can be killed by PID.
Each rank's validation shard drops a different number of padded tokens, so the gathered
tensors have different lengths per rank.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import process_helpers
import pytest
import torch
import torch.nn.functional as F
from ddp_teardown import EndProcessGroup
from lightning.pytorch import Callback, LightningModule, Trainer
from torch.utils.data import DataLoader, TensorDataset

PAD = -100
TIMEOUT_S = 300
TRUE_WEIGHT = torch.randn(5, 3, generator=torch.Generator().manual_seed(9))


def data(n: int, seed: int) -> TensorDataset:
    """Sequences of 6 tokens from a linear softmax tagger, with a random number padded."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, 5, generator=g)
    probs = torch.softmax(x @ TRUE_WEIGHT, -1).reshape(-1, 3)
    y = torch.multinomial(probs, 1, generator=g).reshape(n, 6)
    lengths = torch.randint(1, 7, (n,), generator=g)
    y[torch.arange(6)[None, :] >= lengths[:, None]] = PAD
    return TensorDataset(x, y)


class Overconfident(LightningModule):
    """The true tagger's logits times 4; a tiny learning rate keeps it overconfident."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(5, 3)
        with torch.no_grad():
            self.net.weight.copy_(TRUE_WEIGHT.t())
            self.net.bias.zero_()

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return 4 * self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(self.logits(x).reshape(-1, 3), y.reshape(-1), ignore_index=PAD)

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        x, y = batch
        return {"logits": self.logits(x), "target": y}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=1e-4)


class DumpTemperature(Callback):
    """Each rank writes its fitted temperature and how many pairs it saw itself."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.local = 0

    def on_validation_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self.local = 0

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, *args) -> None:
        if not trainer.sanity_checking:
            self.local += int((batch[1] != PAD).sum())

    def on_fit_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # Runs after TemperatureRecalibration's on_fit_end (callbacks run in list order).
        rank = trainer.global_rank
        (self.out / f"rank{rank}.json").write_text(
            json.dumps({"temperature": pl_module.calibration_temperature, "local": self.local})
        )


def run_ddp(out: Path) -> None:
    """Fit on 2 CPU processes; the parent then fits on the whole validation set."""
    from calib_metrics.callbacks import TemperatureRecalibration
    from calib_metrics.recalibration import TemperatureScaling

    torch.manual_seed(0)
    model = Overconfident()
    val = data(40, seed=1)  # 20 sequences per rank
    trainer = Trainer(
        default_root_dir=out,
        max_epochs=1,
        accelerator="cpu",
        devices=2,
        strategy="ddp_spawn",
        logger=False,
        callbacks=[
            TemperatureRecalibration(ignore_index=PAD, n_samples=100),
            DumpTemperature(out),
            EndProcessGroup(),
        ],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(model, DataLoader(data(40, seed=0), batch_size=10), DataLoader(val, batch_size=7))
    # The parent holds rank 0's trained weights, the ones both ranks validated with.
    x, y = val.tensors
    with torch.no_grad():
        logits, target = model.logits(x).reshape(-1, 3), y.reshape(-1)
    keep = target != PAD
    union = TemperatureScaling().fit(logits[keep], target[keep]).temperature.item()
    # What rank 0 alone would have fitted (its shard: every other sequence).
    shard = torch.zeros(len(y), dtype=torch.bool)
    shard[0::2] = True
    mine = keep & shard.repeat_interleave(6)
    alone = TemperatureScaling().fit(logits[mine], target[mine]).temperature.item()
    # The module and callback of this (the launching) process never see the workers'
    # attributes; the temperature comes back in callback_metrics, as Lightning sends them.
    returned = trainer.callback_metrics.get("recalibration/temperature")
    summary = {"union": union, "rank0_alone": alone, "pairs": int(keep.sum())}
    summary["returned"] = None if returned is None else float(returned)
    (out / "summary.json").write_text(json.dumps(summary))


@pytest.mark.slow
def test_temperature_is_fitted_on_all_ranks_logits(tmp_path: Path) -> None:
    code, text = process_helpers.run_script(__file__, tmp_path, timeout=TIMEOUT_S, ddp=True)
    assert code == 0, f"DDP run failed or timed out:\n{text}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    # The shards differ in length, and together they are the whole validation set.
    assert ranks[0]["local"] != ranks[1]["local"]
    assert ranks[0]["local"] + ranks[1]["local"] == summary["pairs"]
    for rank in ranks:
        assert rank["temperature"] == pytest.approx(summary["union"], rel=1e-6)
    # Spawned workers: the launching process had no way to the temperature, and no word.
    assert summary["returned"] == pytest.approx(summary["union"], rel=1e-6)
    assert "trainer.callback_metrics['recalibration/temperature']" in text
    # A fit on one rank's shard alone is measurably different: the check can fail.
    assert abs(summary["rank0_alone"] - summary["union"]) > 1e-3


def run_ddp_all_padding(out: Path) -> None:
    """Fit on 2 CPU processes with every validation target padding: 2 batches a rank."""
    from calib_metrics.callbacks import TemperatureRecalibration

    x, y = data(64, seed=1).tensors  # 32 sequences a rank, in batches of 16
    trainer = Trainer(
        default_root_dir=out,
        max_epochs=1,
        accelerator="cpu",
        devices=2,
        strategy="ddp_spawn",
        logger=False,
        callbacks=[TemperatureRecalibration(ignore_index=PAD, n_samples=50), EndProcessGroup()],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
    )
    val = TensorDataset(x, torch.full_like(y, PAD))
    trainer.fit(
        Overconfident(), DataLoader(data(40, seed=0), batch_size=10), DataLoader(val, batch_size=16)
    )


@pytest.mark.slow
def test_all_padding_counts_every_rank_s_batches(tmp_path: Path) -> None:
    """The warning had counted rank 0's batches alone: "2 batches" of the epoch's 4."""
    code, text = process_helpers.run_script(
        __file__, tmp_path, "padding", timeout=TIMEOUT_S, ddp=True
    )
    assert code == 0, f"DDP run failed or timed out:\n{text}"
    told = (
        "TemperatureRecalibration: the 4 batches kept from the last validation epoch, on its "
        "2 ranks, held no pairs (every target was ignore_index, or the batches were empty): "
        "no temperature fitted"
    )
    assert told in " ".join(text.split())


if __name__ == "__main__":
    cases = {"union": run_ddp, "padding": run_ddp_all_padding}
    cases[sys.argv[2] if len(sys.argv) > 2 else "union"](Path(sys.argv[1]))
