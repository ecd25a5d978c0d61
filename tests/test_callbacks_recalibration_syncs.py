"""Host synchronisations of TemperatureRecalibration's batch extraction: dropping padding
(``ignore_index``) took two (a boolean index of the logits, another of the targets);
one lookup of the kept rows serves both."""

from __future__ import annotations

import host_reads
import torch

from calib_metrics.callbacks import TemperatureRecalibration


def test_dropping_padding_waits_for_the_device_once() -> None:
    callback = TemperatureRecalibration(ignore_index=-100)
    logits = torch.randn(4, 7, 3)
    target = torch.randint(0, 3, (4, 7)).masked_fill(torch.rand(4, 7) < 0.3, -100)
    output = {"logits": logits, "target": target}
    assert (
        host_reads.count_reads(lambda: callback.extract_batch(output, None, check_targets=False))
        == 1
    )
    kept_logits, kept_target = callback.extract_batch(output, None, check_targets=False)
    keep = target != -100
    assert torch.equal(kept_logits, logits[keep]) and torch.equal(kept_target, target[keep])
