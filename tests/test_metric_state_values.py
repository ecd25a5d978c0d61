"""A loaded or merged state is checked by its values as ``update`` checks a batch, and a
loaded state is never hidden behind the value ``compute()`` cached before."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError

G = torch.Generator().manual_seed(0)
Q = torch.rand(400, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G).long()


@pytest.mark.parametrize("streaming", [False, True])
def test_compute_after_load_state_dict_gives_the_loaded_value(streaming: bool) -> None:
    other = CalibrationError(streaming=streaming)
    other.persistent(True)
    other.update(Q, (Q > 0.5).long())  # a miscalibrated model
    metric = CalibrationError(streaming=streaming)
    metric.persistent(True)
    metric.update(Q, Y)
    metric.compute()  # cached
    metric.load_state_dict(other.state_dict())
    assert metric.compute().item() == pytest.approx(other.compute().item(), abs=1e-12)
    assert metric.compute().item() == pytest.approx(metric.compute_result().error.item())


BAD_STATES = [
    (
        {"probs": [torch.tensor([0.5, float("nan"), 0.2])], "target": [torch.tensor([0, 1, 1])]},
        "nan",
    ),
    ({"probs": [torch.tensor([0.5, 7.0, 0.2])], "target": [torch.tensor([0, 1, 1])]}, "7.0"),
    ({"probs": [torch.tensor([0.5, 0.4, 0.2])], "target": [torch.tensor([0, 1])]}, "3 and 2 rows"),
]


@pytest.mark.parametrize(("state", "named"), BAD_STATES)
def test_a_merged_state_of_bad_pairs_is_refused_and_the_metric_keeps_its_own(state, named):
    metric = CalibrationError(interval="pairs")
    metric.update(Q, Y)
    before = metric.compute().item()
    with pytest.raises(ValueError, match=named):
        metric.merge_state(state)
    assert metric.compute().item() == before
    assert sum(p.numel() for p in metric.probs) == 400


@pytest.mark.parametrize(("state", "named"), BAD_STATES)
def test_a_loaded_state_of_bad_pairs_is_refused(state, named) -> None:
    metric = CalibrationError(interval="pairs")
    metric.update(Q, Y)
    with pytest.raises(ValueError, match=named):
        metric.load_state_dict(state, strict=False)
    assert sum(p.numel() for p in metric.probs) == 400


def test_padding_rows_of_a_merged_state_may_hold_anything() -> None:
    """update() keeps padding rows (NaN included) until compute() drops them."""
    metric = CalibrationError(interval="pairs", ignore_index=-1)
    metric.update(Q, Y)
    padded = {"probs": [torch.tensor([0.5, float("nan")])], "target": [torch.tensor([1, -1])]}
    metric.merge_state(padded)
    assert torch.isfinite(metric.compute())


def test_a_comparison_refuses_a_merged_state_of_bad_pairs() -> None:
    metric = CalibrationComparison()
    metric.update(Q, Q, Y)
    state = {
        "probs_a": [torch.tensor([0.5, 0.4])],
        "probs_b": [torch.tensor([0.5, -3.0])],
        "target": [torch.tensor([0, 1])],
    }
    state |= {k: [] for k in metric._defaults if k not in state}
    with pytest.raises(ValueError, match=r"'probs_b' holds -3.0"):
        metric.merge_state(state)


def test_a_strict_load_of_another_kind_of_state_loads_nothing() -> None:
    """torch reported the unexpected keys only after loading the rest: the exact metric's
    kept pairs had been replaced by the streaming state's."""
    streaming = CalibrationError(streaming=True)
    streaming.persistent(True)
    streaming.update(Q, Y)
    metric = CalibrationError()
    metric.update(Q[:200], Y[:200])
    before = metric.compute().item()
    with pytest.raises(ValueError, match=r"'cell_count'.*does not keep.*nothing was loaded"):
        metric.load_state_dict(streaming.state_dict())
    with pytest.raises(ValueError, match="nothing was loaded"):
        metric.load_state_dict(streaming.state_dict(), strict=False)  # its buffer alone: no
    assert sum(p.numel() for p in metric.probs) == 200
    assert metric.compute().item() == before


def test_a_metric_inside_a_module_is_checked_under_its_prefix() -> None:
    parent, other = torch.nn.Module(), torch.nn.Module()
    parent.metric, other.metric = CalibrationError(), CalibrationError(streaming=True)
    other.metric.persistent(True)
    other.metric.update(Q, Y)
    parent.metric.update(Q[:200], Y[:200])
    # Inside a model the refusal takes torch's channels (the keys, then torch's error).
    with (
        pytest.warns(UserWarning, match="'rows_seen'"),
        pytest.raises(RuntimeError, match=r'Unexpected key\(s\).*"metric.rows_seen"'),
    ):
        parent.load_state_dict(other.state_dict())
    assert sum(p.numel() for p in parent.metric.probs) == 200


@pytest.mark.parametrize("streaming", [False, True])  # streaming: its buffer of pairs
@pytest.mark.parametrize("incoming", ["dict", "metric"])
def test_merged_pairs_are_the_metric_s_own_copies(streaming: bool, incoming: str) -> None:
    """merge_state had kept the incoming tensors themselves: a caller that reused its
    buffer after the merge changed the merged metric (0.217 became 0.184)."""
    source = CalibrationError(debias=False, streaming=streaming)
    source.update(Q, Y)
    state = {
        k: [t.clone() for t in v] if isinstance(v, list) else v.clone()
        for k, v in source.metric_state.items()
    }
    metric = CalibrationError(debias=False, streaming=streaming)
    metric.merge_state(state if incoming == "dict" else source)
    metric.compute()  # cached
    held = state if incoming == "dict" else source.metric_state
    held["probs"][0].mul_(0.5)  # the caller reuses its tensors
    metric.update(Q[:1], Y[:1])  # any later call: the cached value is dropped
    fresh = CalibrationError(debias=False, streaming=streaming)
    fresh.update(Q, Y)
    fresh.update(Q[:1], Y[:1])
    assert metric.compute().item() == fresh.compute().item()
