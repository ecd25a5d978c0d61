"""After a ``compute()``, every rank calls ``update`` once (a ``DistributedSampler`` loop):
rank 0's batch changes nothing (empty, or refused and caught), rank 1's adds pairs. Both
ranks must gather in the next ``compute()`` and agree with one process on the union.

A change that kept the cached value on a batch that changes nothing had rank 0 return its
stale value while rank 1 waited in the gather (a hang until the process group's timeout).
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from thread_ranks import ThreadRanks

from calib_metrics import CalibrationComparison, CalibrationError

G = torch.Generator().manual_seed(0)
Q = torch.rand(600, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G).long()


def _metric(kind: str, **options):
    if kind == "exact":
        return CalibrationError(bin_size=50, **options)
    return CalibrationComparison(n_samples=20, bin_size=50, **options)


def _pairs(kind: str, q: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (q, y) if kind == "exact" else (q, q.sqrt(), y)


def _nothing(metric, kind: str, how: str) -> None:
    empty = _pairs(kind, torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.long))
    if how == "empty update":
        metric.update(*empty)
    elif how == "empty forward":
        metric(*empty)
    else:
        with contextlib.suppress(ValueError):
            metric.update(*_pairs(kind, torch.full((5,), 1.5, dtype=torch.float64), Y[:5]))


def _value(result) -> torch.Tensor:
    return result if isinstance(result, torch.Tensor) else result.difference


@pytest.mark.parametrize("kind", ["exact", "comparison"])
@pytest.mark.parametrize("how", ["empty update", "empty forward", "refused"])
def test_every_rank_that_updated_gathers_in_the_next_compute(kind, how) -> None:
    world = ThreadRanks()
    metrics = [_metric(kind, **world.options(rank)) for rank in range(2)]
    for rank, metric in enumerate(metrics):
        metric.update(
            *_pairs(kind, Q[rank * 200 : rank * 200 + 200], Y[rank * 200 : rank * 200 + 200])
        )
    _, errors = world.run([m.compute for m in metrics])
    assert errors == [None, None]
    _nothing(metrics[0], kind, how)
    metrics[1].update(*_pairs(kind, Q[400:500], Y[400:500]))
    values, errors = world.run([m.compute for m in metrics])
    assert errors == [None, None]
    alone = _metric(kind)
    alone.update(*_pairs(kind, Q[:500], Y[:500]))
    expected = _value(alone.compute())
    assert torch.equal(_value(values[0]), expected) and torch.equal(_value(values[1]), expected)
