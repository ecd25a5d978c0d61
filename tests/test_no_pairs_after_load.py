"""The no-pairs error says how the state came to hold none. A loaded or merged state counts
as an update (so that ``compute()`` does not warn that ``update()`` was never called): an
empty state loaded over an update of 5000 pairs had been reported as "all 1 updates were
empty"."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError, NoPairsError

PAD = -100


def _options(streaming: bool) -> dict:
    return {"streaming": True, "resolution": 1024} if streaming else {}


def _saved(metric):
    metric.persistent(True)
    return metric.state_dict()


def _probs(n: int = 5000) -> torch.Tensor:
    return torch.rand(n, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("streaming", [False, True])
def test_an_empty_state_loaded_over_pairs_is_named(streaming: bool) -> None:
    metric = CalibrationError(**_options(streaming))
    probs = _probs()
    metric.update(probs, (probs > 0.5).long())
    metric.load_state_dict(_saved(CalibrationError(**_options(streaming))))
    with pytest.raises(NoPairsError, match="the loaded state holds none") as err:
        metric.compute()
    assert "updates were empty" not in str(err.value)


def test_updates_after_the_load_that_bring_only_padding_say_so() -> None:
    metric = CalibrationError(ignore_index=PAD)
    metric.load_state_dict(_saved(CalibrationError(ignore_index=PAD)))
    metric.update(torch.tensor([0.3, 0.7]), torch.tensor([PAD, PAD]))
    with pytest.raises(NoPairsError, match=r"no update since added any but padding \(-100\)"):
        metric.compute()


@pytest.mark.parametrize("streaming", [False, True])
def test_an_empty_merged_state_is_named(streaming: bool) -> None:
    metric = CalibrationError(**_options(streaming))
    metric.merge_state(CalibrationError(**_options(streaming)).metric_state)
    with pytest.raises(NoPairsError, match="the merged state holds none, and no update added"):
        metric.compute()


def test_a_load_then_a_merge_names_both() -> None:
    metric = CalibrationError()
    metric.load_state_dict(_saved(CalibrationError()))
    metric.merge_state(CalibrationError())
    with pytest.raises(
        NoPairsError, match="the loaded and merged states hold none, and no update since"
    ):
        metric.compute()


@pytest.mark.filterwarnings("ignore:The ``compute`` method:UserWarning")  # after reset()
@pytest.mark.parametrize("streaming", [False, True])
def test_forward_and_reset_are_not_a_received_state(streaming: bool) -> None:
    """forward merges its batch's own metric: an update, named as one."""
    metric = CalibrationError(**_options(streaming))
    metric(torch.tensor([]), torch.tensor([], dtype=torch.long))
    with pytest.raises(NoPairsError, match="all 1 updates were empty"):
        metric.compute()
    metric.load_state_dict(_saved(CalibrationError(**_options(streaming))))
    metric.reset()
    with pytest.raises(NoPairsError, match=r"call update\(\) before computing"):
        metric.compute()


def test_comparison_names_the_loaded_state_too() -> None:
    comparison = CalibrationComparison(n_samples=20)
    probs = _probs(200)
    comparison.update(probs, probs.flip(0), (probs > 0.5).long())
    comparison.load_state_dict(_saved(CalibrationComparison(n_samples=20)))
    with pytest.raises(NoPairsError, match="the loaded state holds none") as err:
        comparison.compute()
    assert "call update() first" not in str(err.value)
