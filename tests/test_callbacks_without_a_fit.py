"""What the Lightning callbacks refuse, say and hand back, checked without a Trainer run:
constructor arguments, the sampler warning's words, the temperature in callback_metrics."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler

from calib_metrics.callbacks import CalibrationMonitor, TemperatureRecalibration
from calib_metrics.recalibration import TemperatureScaling

KEY_PAIRS = [
    (CalibrationMonitor, {"probs_key": "p", "target_key": "p"}, "probs_key and target_key"),
    (CalibrationMonitor, {"probs_key": "groups"}, "probs_key and groups_key"),
    # groups_key given, at its default's value: it had been named "groups_key (default
    # 'groups')", as if left out; the message cannot tell, and names no default.
    (
        CalibrationMonitor,
        {"probs_key": "groups", "groups_key": "groups"},
        "probs_key and groups_key",
    ),
    (CalibrationMonitor, {"target_key": "g", "groups_key": "g"}, "target_key and groups_key"),
    (TemperatureRecalibration, {"logits_key": "z", "target_key": "z"}, "logits_key and target_key"),
]


@pytest.mark.parametrize(("make", "keys", "named"), KEY_PAIRS)
def test_one_key_for_two_outputs_is_refused_at_construction(
    make: type, keys: dict[str, str], named: str
) -> None:
    """Accepted before, and the first batch failed naming a shape or a dtype, not the keys.
    The message names the two options and their one value, and never calls a key the
    default: one passed explicitly cannot be told from one left out."""
    value = next(iter(keys.values()))
    options = {"num_classes": 3} if make is CalibrationMonitor else {}
    with pytest.raises(ValueError, match=re.escape(f"{named} must differ, both {value!r}")) as e:
        make(**options, **keys)
    assert "default" not in str(e.value)


@pytest.mark.parametrize(("make", "keys"), [(make, keys) for make, keys, _ in KEY_PAIRS])
def test_the_keys_may_be_anything_when_extract_replaces_them(
    make: type, keys: dict[str, str]
) -> None:
    """extract reads the step's output itself: the keys go unused, yet probs_key="groups"
    was refused as the groups key, which extract had replaced."""
    options = {"num_classes": 3} if make is CalibrationMonitor else {}
    made = make(**options, **keys, extract=lambda outputs, batch: None)
    assert made.extract is not None


@pytest.mark.parametrize(
    ("names", "said"),
    [(["a", "b", 3], "got 3 (int) at position 2"), ([b"a", "b", "c"], "got b'a' (bytes)")],
)
def test_class_names_that_are_not_strings_are_refused(names: list[Any], said: str) -> None:
    """3 had become the name "3" without a word."""
    with pytest.raises(ValueError, match=re.escape(f"class_names must be strings, {said}")):
        CalibrationMonitor(num_classes=3, per_class=True, class_names=names)


def test_the_temperature_reaches_callback_metrics_unrounded() -> None:
    """Put there as a float32 tensor, 0.5059001914756017 read back as 0.5059002041816711:
    the value docs/recalibration.md sends ddp_spawn users to read."""
    callback = TemperatureRecalibration()
    g = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(200, 3, generator=g, dtype=torch.float64)
    target = (logits + torch.randn(200, 3, generator=g, dtype=torch.float64)).argmax(-1)
    callback.recalibrator = TemperatureScaling().fit(logits, target)
    fitted = float(callback.recalibrator.temperature)
    assert float(torch.tensor(fitted)) != fitted  # a float32 would round it
    trainer = SimpleNamespace(callback_metrics={}, strategy=SimpleNamespace(launcher=None))
    callback._return_to_launcher(trainer)
    logged = trainer.callback_metrics["recalibration/temperature"]
    assert logged.dtype == torch.float64
    assert float(logged) == fitted


def _padding_trainer() -> SimpleNamespace:
    """A trainer whose one validation loader's distributed sampler draws 42 of 41 items."""
    items = torch.arange(41)
    sampler = DistributedSampler(items, num_replicas=2, rank=0, shuffle=False)
    return SimpleNamespace(val_dataloaders=DataLoader(items, sampler=sampler))


@pytest.mark.parametrize("ignore_index", [None, -100])
@pytest.mark.parametrize("kind", ["monitor", "recalibration"])
def test_the_sampler_warning_counts_twice_only_what_is_counted(
    kind: str, ignore_index: int | None
) -> None:
    """A repeated item whose targets are ignore_index is not counted at all: the warning
    had said "count them twice" all the same."""
    trainer = _padding_trainer()
    with pytest.warns(UserWarning, match="repeats 1 of the 41 items") as told:
        if kind == "monitor":
            CalibrationMonitor(num_classes=3, ignore_index=ignore_index)._check_samplers(trainer)
        else:
            TemperatureRecalibration(ignore_index=ignore_index)._check_samplers(trainer, 1)
    message = str(told[0].message)
    if ignore_index is None:
        assert "count them twice" in message
    else:
        assert "count them twice" not in message
        assert "count their pairs twice, but for those whose target is ignore_index (-100)" in (
            message
        )
