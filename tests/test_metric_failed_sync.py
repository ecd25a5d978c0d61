"""Under DDP, a compute that raises leaves each rank its own state, and figures name the
interval that the synchronised state drew.

torchmetrics' ``sync_context`` unsynchronises only when its body returns: a compute that
raised (no pairs on any rank, a refusal of memory, ranks that disagree about
``groups=``) had left every rank holding the union of all ranks' pairs as one tensor,
and its next ``update`` failed with torch's "Boolean value of Tensor with no values is
ambiguous". The ranks here are threads that gather through ``dist_sync_fn``, which
is all that synchronisation sees of ``torch.distributed``.
"""

from __future__ import annotations

from typing import Any

import matplotlib
import pytest
import torch
from thread_ranks import WORLD, ThreadRanks
from torchmetrics.utilities.exceptions import TorchMetricsUserError

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics import metric as metric_module
from calib_metrics.functional.errors import NoPairsError

matplotlib.use("Agg")

PAD = -100


def _snapshot(metric: Any) -> dict[str, Any]:
    return {
        name: [t.clone() for t in value] if isinstance(value, list) else value.clone()
        for name, value in metric.metric_state.items()
    }


def _assert_same_state(metric: Any, before: dict[str, Any]) -> None:
    """The state as it was: the same lists of parts, each of its dtype and values."""
    assert not metric._is_synced
    for name, value in metric.metric_state.items():
        was = before[name]
        if isinstance(was, list):
            assert isinstance(value, list), name
            assert len(value) == len(was), name
            for part, old in zip(value, was, strict=True):
                assert part.dtype == old.dtype and torch.equal(part, old), name
        else:
            assert torch.equal(value, was), name


def _fails_on_every_rank_keeping_state(world, metrics: list, path: str, message: str) -> None:
    """Run ``path`` on every rank: each raises ``message`` and keeps its own state."""
    before = [_snapshot(metric) for metric in metrics]
    _, errors = world.run([getattr(metric, path) for metric in metrics])
    assert all(message in str(err) for err in errors), errors
    for metric, state in zip(metrics, before, strict=True):
        _assert_same_state(metric, state)


def _binary(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g)
    return q, torch.bernoulli(0.25 + q / 2, generator=g).long()


COMPUTE_PATHS = [
    "compute",
    "compute_result",
    "compute_smooth",
    "compute_spiegelhalter",
    "streaming_tolerance",
    "plot",
]


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("path", COMPUTE_PATHS)
def test_a_compute_without_pairs_leaves_each_rank_its_own_state(path: str, streaming) -> None:
    world, metrics = ThreadRanks(), []
    for rank in range(WORLD):
        metric = CalibrationError(
            ignore_index=PAD, streaming=streaming, n_samples=100, **world.options(rank)
        )
        q, _ = _binary(50, rank)
        metric.update(q, torch.full((50,), PAD))  # padding only, on every rank
        metric.update(q[:10].double(), torch.full((10,), PAD))  # a second part, of float64
        metrics.append(metric)
    _fails_on_every_rank_keeping_state(world, metrics, path, "no pairs")
    # Every rank keeps updating, and the next compute measures the union.
    for rank, metric in enumerate(metrics):
        metric.update(*_binary(500, 10 + rank))
    values, errors = world.run([metric.compute for metric in metrics])
    assert errors == [None, None]
    whole = CalibrationError(ignore_index=PAD, streaming=streaming)
    for rank in range(WORLD):
        whole.update(*_binary(500, 10 + rank))
    for value in values:
        torch.testing.assert_close(value, whole.compute())


def test_ranks_that_disagree_about_groups_keep_their_own_state() -> None:
    """Rank 0 gave groups=, rank 1 did not: compute_result() refuses on both, and each
    keeps its pairs as it had them (rank 0's in two bfloat16 parts, not joined as the
    ranks' agreed float32 for the gather)."""
    world, metrics = ThreadRanks(), []
    for rank in range(WORLD):
        metric = CalibrationError(n_samples=100, **world.options(rank))
        q, y = _binary(400, rank)
        if rank == 0:
            ids = torch.arange(400) // 10
            metric.update(q[:200].bfloat16(), y[:200], groups=ids[:200])
            metric.update(q[200:].bfloat16(), y[200:], groups=ids[200:])
        else:
            metric.update(q, y)
        metrics.append(metric)
    _fails_on_every_rank_keeping_state(world, metrics, "compute_result", "group ids for 800 items")
    metrics[1].update(*_binary(10, 5))  # had failed with torch's RuntimeError


@pytest.mark.filterwarnings("ignore:The ``compute`` method")  # rank 1: no update, by design
def test_a_compute_that_succeeds_gives_each_rank_back_its_state_as_it_was() -> None:
    """unsync() had restored the state as the ranks agreed on it for the gather: rank 0's
    bfloat16 parts joined into one tensor, and an empty rank's lists each holding
    one empty tensor (its next batch without groups= was then refused)."""
    world, metrics = ThreadRanks(), []
    for rank in range(WORLD):
        metric = CalibrationError(n_samples=100, **world.options(rank))
        if rank == 0:
            q, y = _binary(400, rank)
            ids = torch.arange(400) // 10
            metric.update(q[:200].bfloat16(), y[:200], groups=ids[:200])
            metric.update(q[200:].bfloat16(), y[200:], groups=ids[200:])
        metrics.append(metric)
    before = [_snapshot(metric) for metric in metrics]
    _, errors = world.run([metric.compute_result for metric in metrics])
    assert errors == [None, None]
    for metric, state in zip(metrics, before, strict=True):
        _assert_same_state(metric, state)
    metrics[1].update(*_binary(10, 5))


def test_a_refusal_of_memory_leaves_each_rank_its_own_state(monkeypatch) -> None:
    def no_room(need: int, device: torch.device, what: str) -> None:
        raise ValueError(f"{what} needs {need} bytes: use streaming=True")

    monkeypatch.setattr(metric_module, "check_room", no_room)
    world, metrics = ThreadRanks(), []
    for rank in range(WORLD):
        metric = CalibrationError(**world.options(rank))
        metric.update(*_binary(300, rank))
        metrics.append(metric)
    _fails_on_every_rank_keeping_state(world, metrics, "compute", "use streaming=True")
    for metric in metrics:
        metric.update(*_binary(10, 5))


@pytest.mark.parametrize("path", ["compute", "compute_by_label"])
def test_a_comparison_whose_compute_fails_leaves_each_rank_its_own_state(path: str) -> None:
    world, metrics = ThreadRanks(), []
    for rank in range(WORLD):
        metric = CalibrationComparison(ignore_index=PAD, n_samples=100, **world.options(rank))
        q, _ = _binary(50, rank)
        metric.update(q, q.sqrt(), torch.full((50,), PAD), labels=torch.zeros(50, dtype=int))
        metrics.append(metric)
    _fails_on_every_rank_keeping_state(world, metrics, path, "no items")
    for metric in metrics:
        q, y = _binary(10, 5)
        metric.update(q, q.sqrt(), y, labels=torch.zeros(10, dtype=int))


def test_a_comparison_whose_ranks_disagree_about_groups_keeps_their_states() -> None:
    world, metrics = ThreadRanks(), []
    for rank in range(WORLD):
        metric = CalibrationComparison(n_samples=100, **world.options(rank))
        q, y = _binary(300, rank)
        ids = torch.arange(300) // 10 if rank == 0 else None
        metric.update(q, q.sqrt(), y, groups=ids)
        metrics.append(metric)
    _fails_on_every_rank_keeping_state(world, metrics, "compute", "300 groups for 600 items")


def _grouped_on_rank_one(metric_class: type, **options: Any) -> tuple[ThreadRanks, list[Any]]:
    """Two ranks; rank 0 has no data, rank 1 pairs with group ids."""
    world, metrics = ThreadRanks(), []
    q, y = _binary(2000, 0)
    for rank in range(WORLD):
        metric = metric_class(n_samples=200, **options, **world.options(rank))
        if rank == 1:
            pairs = (q, y) if metric_class is CalibrationError else (q, q.sqrt(), y)
            metric.update(*pairs, groups=torch.arange(2000) // 20)
        metrics.append(metric)
    return world, metrics


def test_the_diagram_of_an_empty_rank_names_the_group_bootstrap_drawn() -> None:
    """It had read the rank's own (empty) group ids: "pair bootstrap"."""
    world, metrics = _grouped_on_rank_one(CalibrationError)
    figures, errors = world.run([metric.plot for metric in metrics])
    assert errors == [None, None]
    for _, ax in figures:
        assert "group bootstrap" in ax.get_title()
    # A result passed back to plot() (on one rank, say) keeps its label.
    results, _ = world.run([metric.compute_result for metric in metrics])
    _, ax = metrics[0].plot(results[0])
    assert "group bootstrap" in ax.get_title()


@pytest.mark.filterwarnings("ignore:The ``compute`` method")  # rank 0: no update, by design
def test_the_comparison_of_an_empty_rank_names_the_group_bootstrap_drawn() -> None:
    world, metrics = _grouped_on_rank_one(CalibrationComparison)
    figures, errors = world.run([metric.plot for metric in metrics])
    assert errors == [None, None]
    for _, axes in figures:
        assert all("group bootstrap" in ax.get_title() for ax in axes)


def test_a_callers_own_sync_stays_the_callers_to_undo() -> None:
    # torchmetrics' manual pattern (sync_on_compute=False: sync(); compute(); unsync()):
    # a compute that failed inside had unsynchronised already, and the caller's unsync()
    # raised "already been un-synced", hiding the real error in a finally.
    def gather(tensor: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
        return [tensor.clone()]

    metric = CalibrationError(
        sync_on_compute=False, dist_sync_fn=gather, distributed_available_fn=lambda: True
    )
    metric.sync(dist_sync_fn=gather)
    with pytest.raises(NoPairsError):
        metric.compute_result()
    assert metric._is_synced
    metric.unsync()
    metric.update(*_binary(40, seed=3))
    assert metric.compute_result().bins.count.sum().item() == 40


@pytest.mark.parametrize("sync_on_compute", [True, False])
def test_class_bins_after_a_callers_own_sync(sync_on_compute) -> None:
    """class_bins() synchronises like compute_result(); after the caller's own sync() it
    had tried again and raised torchmetrics' "already been synced"."""

    def gather(tensor: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
        return [tensor.clone()]

    metric = CalibrationError(
        sync_on_compute=sync_on_compute, dist_sync_fn=gather, distributed_available_fn=lambda: True
    )
    metric.update(*_binary(40, seed=3))
    metric.sync(dist_sync_fn=gather)
    assert metric.class_bins()[0].count.sum().item() == 40
    assert metric._is_synced
    metric.unsync()
    assert metric.class_bins()[0].count.sum().item() == 40 and not metric._is_synced


@pytest.mark.parametrize("call", ["update", "forward"])
@pytest.mark.parametrize("metric_class", [CalibrationError, CalibrationComparison])
def test_a_batch_while_the_caller_holds_a_sync_is_refused_by_name(metric_class, call) -> None:
    """It had failed in the groups' history check with torch's "Boolean value of Tensor
    with no values is ambiguous"; torchmetrics' forward refuses a synchronised metric."""

    def gather(tensor: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
        return [tensor.clone()]

    metric = metric_class(dist_sync_fn=gather, distributed_available_fn=lambda: True)
    q, y = _binary(400, seed=3)
    pairs = (q, y) if metric_class is CalibrationError else (q, q.sqrt(), y)
    metric.update(*pairs)
    before = _snapshot(metric)
    metric.sync(dist_sync_fn=gather)
    take = metric.update if call == "update" else metric
    with pytest.raises(TorchMetricsUserError, match=rf"{call}\(\) on a synchronised .* unsync"):
        take(*pairs)
    metric.unsync()
    _assert_same_state(metric, before)
    assert metric.update_count == 1
    take(*pairs)
    assert metric.update_count == 2
