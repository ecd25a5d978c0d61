"""Host synchronisations of TemperatureRecalibration's batch extraction: dropping padding
(``ignore_index``) took two (a boolean index of the logits, another of the targets);
one lookup of the kept rows serves both."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from calib_metrics.callbacks import TemperatureRecalibration

# Ops whose result size (or value) the host must read from the device.
_WAITING = {
    "aten.nonzero.default",
    "aten.masked_select.default",
    "aten._local_scalar_dense.default",
}


class _HostWaits(TorchDispatchMode):
    """Counts the ops that wait for the device, boolean indexing included."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        bool_index = str(func) == "aten.index.Tensor" and any(
            i is not None and i.dtype == torch.bool for i in args[1]
        )
        self.count += str(func) in _WAITING or bool_index
        return func(*args, **(kwargs or {}))


def test_dropping_padding_waits_for_the_device_once() -> None:
    callback = TemperatureRecalibration(ignore_index=-100)
    logits = torch.randn(4, 7, 3)
    target = torch.randint(0, 3, (4, 7)).masked_fill(torch.rand(4, 7) < 0.3, -100)
    with _HostWaits() as waits:
        kept_logits, kept_target = callback.extract_batch(
            {"logits": logits, "target": target}, None, check_targets=False
        )
    assert waits.count == 1
    keep = target != -100
    assert torch.equal(kept_logits, logits[keep]) and torch.equal(kept_target, target[keep])
