"""A batch that changes nothing (refused and caught by the caller, or empty) keeps the
value that ``compute()`` cached, on ``update`` as on ``forward``.

torchmetrics' update wrapper drops the cached value before ``update`` runs, and the
rollback of a refused batch gave back only the update count. Under DDP a rank whose
batch changed nothing then gathered in its next ``compute()`` while the others
returned their cached values: it waited in the gather until the process group's
timeout (30 minutes by default). The ranks here are threads (``thread_ranks``), whose
gathers give up after 30 s.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from thread_ranks import WORLD, ThreadRanks

from calib_metrics import CalibrationComparison, CalibrationError

G = torch.Generator().manual_seed(0)
Q = torch.rand(600, generator=G)
Y = torch.bernoulli(Q**1.5, generator=G).long()

METRICS = {
    "exact": lambda **o: CalibrationError(bin_size=50, **o),
    "streaming": lambda **o: CalibrationError(bin_size=50, streaming=True, **o),
    "comparison": lambda **o: CalibrationComparison(n_samples=50, bin_size=50, **o),
}


def _pairs(metric, q: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (q, y) if isinstance(metric, CalibrationError) else (q, q.sqrt(), y)


def _refused(metric) -> None:
    """A batch of probabilities above 1, refused and caught, as a training loop might."""
    with contextlib.suppress(ValueError):
        metric.update(*_pairs(metric, torch.full((5,), 1.5), torch.ones(5, dtype=torch.long)))


def _empty_update(metric) -> None:
    metric.update(*_pairs(metric, torch.empty(0), torch.empty(0, dtype=torch.long)))


def _empty_forward(metric) -> None:
    metric(*_pairs(metric, torch.empty(0), torch.empty(0, dtype=torch.long)))


BATCHES = {"refused": _refused, "empty update": _empty_update, "empty forward": _empty_forward}
# A refused batch is no update; an empty one is counted, as it was.
COUNTED = {"refused": 0, "empty update": 1, "empty forward": 1}


@pytest.mark.parametrize("batch", list(BATCHES))
@pytest.mark.parametrize("kind", list(METRICS))
def test_a_batch_that_changes_nothing_keeps_the_computed_value(kind, batch) -> None:
    metric = METRICS[kind]()
    metric.update(*_pairs(metric, Q, Y))
    value = metric.compute()
    BATCHES[batch](metric)
    assert metric.update_count == 1 + COUNTED[batch]
    assert metric.compute() is value  # the cached value itself: nothing was recomputed
    metric.update(*_pairs(metric, Q[:100], Y[:100]))
    assert metric.compute() is not value  # a batch that adds pairs drops it


@pytest.mark.parametrize("batch", list(BATCHES))
@pytest.mark.parametrize("kind", list(METRICS))
def test_ranks_agree_after_one_ranks_batch_changes_nothing(kind, batch) -> None:
    """Rank 0 alone gets the batch; the second compute() had rank 0 gather alone."""
    world, metrics = ThreadRanks(), []
    for rank in range(WORLD):
        metric = METRICS[kind](**world.options(rank))
        metric.update(*_pairs(metric, Q[rank::2], Y[rank::2]))
        metrics.append(metric)
    first, errors = world.run([metric.compute for metric in metrics])
    assert errors == [None, None]
    BATCHES[batch](metrics[0])
    second, errors = world.run([metric.compute for metric in metrics])
    assert errors == [None, None]
    for rank in range(WORLD):
        assert second[rank] is first[rank]
