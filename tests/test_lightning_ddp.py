"""``self.log("val/calib_err", metric)`` under Lightning's 2-process CPU ``ddp_spawn``.

The logged value must be the single-process number on the union of the ranks' data:
the exact mode equals the functional core on all pairs, the streaming mode equals one
process's sketch of them. The run happens in a child Python process (this file run as a
script), so that ``ddp_spawn``'s workers can import the module by name and a hung run is
killed by its process group without taking pytest down.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import process_helpers
import pytest
import torch
from ddp_teardown import EndProcessGroup
from lightning.pytorch import Callback, LightningModule, Trainer
from torch.utils.data import DataLoader, TensorDataset

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error

# Spawns processes (tens of seconds); still run in CI.
pytestmark = pytest.mark.slow

TIMEOUT_S = 240
N = 4000  # 2000 per rank: DistributedSampler pads only sizes that do not divide evenly
BIN_SIZE = 300
PAD = -1


def dataset() -> TensorDataset:
    g = torch.Generator().manual_seed(5)
    q = torch.rand(N, generator=g) ** 2
    y = torch.bernoulli((q + 0.1).clamp(0, 1), generator=g).long()
    y[torch.rand(N, generator=g) < 0.05] = PAD
    return TensorDataset(q, y)


class Scorer(LightningModule):
    """Validation only: logs both modes of the metric as metric objects."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))  # DDP needs one parameter
        options = {"bin_size": BIN_SIZE, "ignore_index": PAD, "validate_args": False}
        self.exact = CalibrationError(**options)
        self.stream = CalibrationError(streaming=True, **options)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        q, y = batch
        q = q * self.scale.detach()
        self.exact.update(q, y)
        self.stream.update(q, y)
        self.log("val/calib_err", self.exact)
        self.log("val/calib_err_stream", self.stream)


class WriteLogged(Callback):
    """Each rank writes what it logged (module level, so that workers can unpickle it)."""

    def __init__(self, out: Path) -> None:
        self.out = out

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        logged = {k: float(v) for k, v in trainer.callback_metrics.items()}
        (self.out / f"rank{trainer.global_rank}.json").write_text(json.dumps(logged))


def run_ddp(out: Path) -> None:
    torch.set_num_threads(1)
    trainer = Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp_spawn",
        default_root_dir=out,
        logger=False,
        callbacks=[WriteLogged(out), EndProcessGroup()],
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
    )
    trainer.validate(Scorer(), DataLoader(dataset(), batch_size=250))


def test_logged_metric_is_the_single_process_number(tmp_path: Path) -> None:
    code, text = process_helpers.run_script(__file__, tmp_path, timeout=TIMEOUT_S, ddp=True)
    files = [tmp_path / f"rank{r}.json" for r in range(2)]
    if code != 0 or not all(f.exists() for f in files):
        pytest.fail(f"Lightning DDP run failed:\n{text}")
    logged = [json.loads(f.read_text()) for f in files]

    q, y = dataset().tensors
    keep = y != PAD
    exact = calibration_error(q[keep], y[keep], bin_size=BIN_SIZE, debias=True).item()
    stream = CalibrationError(bin_size=BIN_SIZE, ignore_index=PAD, streaming=True)
    stream.update(q, y)
    for values in logged:  # every rank logs the synchronised value
        assert values["val/calib_err"] == pytest.approx(exact, rel=1e-6)
        assert values["val/calib_err_stream"] == pytest.approx(stream.compute().item(), rel=1e-6)
    # Not a vacuous match: one rank's half alone gives another number.
    half = calibration_error(
        q[::2][keep[::2]], y[::2][keep[::2]], bin_size=BIN_SIZE, debias=True
    ).item()
    assert abs(half - exact) > 1e-4


if __name__ == "__main__":
    run_ddp(Path(sys.argv[1]))
