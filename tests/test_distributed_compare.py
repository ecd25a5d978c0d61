"""CalibrationComparison under real ``torch.distributed``: 2 CPU processes, gloo backend.

Each case shards batches over the ranks (unevenly, or with one rank holding nothing);
every rank's synchronised ``compute()`` must equal one process that saw the union in
rank order. As in ``test_distributed.py``, the ranks run in a child process.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import process_helpers
import pytest
import torch

from calib_metrics import CalibrationComparison

pytestmark = pytest.mark.slow

WORLD = 2
TIMEOUT_S = 120
C = 4
PAD = -100
OPTIONS = {"n_samples": 300, "bin_size": 200, "seed": 3}
# name -> (metric options, data kind, which batches each rank gets)
CASES = {
    "binary-uneven": ({}, "binary", [[0, 2, 3], [1]]),
    "binary-empty-rank": ({}, "binary", [[], [0, 1, 2, 3]]),
    "binary-mixed-dtypes": ({}, "binary-mixed", [[0, 2], [1, 3]]),
    "groups": ({}, "binary-groups", [[0, 3], [1, 2]]),
    "groups-labels": ({}, "binary-groups-labels", [[2], [0, 1, 3]]),
    # uint16 ids on rank 0 alone: kept as given, they had no code for the ranks to agree
    # on a dtype; rank 0 raised after the first gather and rank 1 waited in the next.
    "groups-labels-uint16-one-rank": ({}, "binary-groups-labels-u16", [[0, 2], [1, 3]]),
    "top-label-padded": (
        {"num_classes": C, "mode": "top_label", "ignore_index": PAD},
        "tags-padded",
        [[1, 2], [0, 3]],
    ),
    "one-vs-rest-empty-rank": ({"num_classes": C}, "tags", [[0, 1, 2, 3], []]),
    # A rank without data has no labels of its own: compute_by_label had refused there
    # alone, before the gather, and left the other rank waiting in it.
    "labels-empty-rank": ({}, "binary-labels", [[0, 1, 2, 3], []]),
    "labels-empty-first-rank": ({}, "binary-labels", [[], [0, 1, 2, 3]]),
}
# Drawn with seed=None, each rank's global RNG seeded differently: the ranks must agree.
SEEDLESS = ("binary-uneven", "groups-labels")


def batches(kind: str) -> list[tuple[torch.Tensor, ...]]:
    """Four batches of unequal sizes, the same on every process."""
    g = torch.Generator().manual_seed(5)
    out, first = [], 0
    for i, size in enumerate((900, 300, 1300, 500)):
        if kind.startswith("tags"):
            p = torch.softmax(2.5 * torch.randn(size, C, generator=g), -1)
            t = torch.multinomial(p, 1, generator=g).squeeze(1)
            if kind == "tags-padded":
                t[torch.rand(size, generator=g) < 0.1] = PAD
            out.append((torch.softmax(2 * p.log(), -1), p, t))
            continue
        q = torch.rand(size, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g).long()
        a = (q**0.8).to(torch.float32 if kind == "binary-mixed" and i % 2 else torch.float64)
        batch = (a, q, y)
        if kind.startswith("binary-groups"):
            batch = (*batch, (first + torch.arange(size)) // 10)
        elif "labels" in kind:
            batch = (*batch, None)  # no groups
        if "labels" in kind:  # a label per item: compute_by_label uses them
            batch = (*batch, torch.randint(0, 3, (size,), generator=g))
        if kind.endswith("-u16") and i % 2 == 0:  # rank 0's batches (0, 2)
            batch = (*batch[:3], *(ids.to(torch.uint16) for ids in batch[3:]))
        first += size
        out.append(batch)
    return out


def summarise(metric: CalibrationComparison, kind: str) -> dict[str, torch.Tensor]:
    r = metric.compute()
    fields = [r.difference, r.lower, r.upper, r.p_value, r.a.error, r.b.error]
    out = {"result": torch.stack(fields), "pairs": r.a.bins.count.sum()}
    if "labels" in kind:
        by_label = metric.compute_by_label()
        out["by_label"] = torch.stack([by_label.difference, by_label.p_value, by_label.lower])
    return out


def single_process(name: str) -> dict[str, torch.Tensor]:
    options, kind, shards = CASES[name]
    metric = CalibrationComparison(**options, **OPTIONS)
    data = batches(kind)
    for i in shards[0] + shards[1]:
        metric.update(*data[i])
    return summarise(metric, kind)


def _rank(rank: int, port: int, out: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group(
        "gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=60)
    )
    results = {}
    for name, (options, kind, shards) in CASES.items():
        metric = CalibrationComparison(**options, **OPTIONS)
        data = batches(kind)
        for i in shards[rank]:
            metric.update(*data[i])
        results[name] = summarise(metric, kind)
        # compute() gathers, then restores this rank's own state.
        results[name]["local_items"] = torch.tensor(sum(t.numel() for t in metric.target))
    for name in SEEDLESS:
        options, kind, shards = CASES[name]
        torch.manual_seed(1000 + rank)
        metric = CalibrationComparison(**options, **{**OPTIONS, "seed": None})
        data = batches(kind)
        for i in shards[rank]:
            metric.update(*data[i])
        results[f"seedless-{name}"] = summarise(metric, kind)
    results["warnings"] = _warnings_by_label(rank)
    torch.save(results, Path(out) / f"rank{rank}.pt")
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def _warnings_by_label(rank: int) -> list[str]:
    """What each rank says while comparing label by label on the synchronised items (two
    of the three labels below min_units=1000), the same result on every rank."""
    import warnings

    metric = CalibrationComparison(**OPTIONS)
    data = batches("binary-labels")
    for i in (0, 1, 2, 3)[rank::2]:
        metric.update(*data[i])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.compute_by_label(min_units=1000)
    return [str(w.message) for w in caught if "CalibrationComparison" in str(w.message)]


def _main(out: str) -> None:
    process_helpers.spawn_ranks(_rank, out, WORLD, TIMEOUT_S)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("ddp_compare")
    return process_helpers.rank_results(__file__, out, WORLD, TIMEOUT_S)


@pytest.mark.parametrize("name", list(CASES))
def test_every_rank_gets_the_single_process_result(ranks, name) -> None:
    expected = single_process(name)
    for rank in ranks:
        for key, value in expected.items():
            torch.testing.assert_close(rank[name][key], value, rtol=0, atol=0, msg=key)


@pytest.mark.parametrize("name", list(CASES))
def test_sync_leaves_each_rank_its_own_items(ranks, name) -> None:
    _, kind, shards = CASES[name]
    data = batches(kind)
    for rank, result in enumerate(ranks):
        assert result[name]["local_items"].item() == sum(data[i][2].numel() for i in shards[rank])


@pytest.mark.parametrize("name", SEEDLESS)
def test_ranks_agree_on_the_interval_without_a_seed(ranks, name) -> None:
    first, second = (rank[f"seedless-{name}"] for rank in ranks)
    for key, value in first.items():
        torch.testing.assert_close(second[key], value, rtol=0, atol=0, msg=key)
    assert not torch.equal(first["result"], ranks[0][name]["result"])  # drawn afresh


if __name__ == "__main__":
    _main(sys.argv[1])


def test_rank_zero_alone_says_what_the_labels_comparison_warns_of(ranks) -> None:
    """compute_by_label draws after the sync block has given each rank its own items back:
    its warning had come once per rank."""
    assert len(ranks[0]["warnings"]) >= 1
    assert any("min_units" in said for said in ranks[0]["warnings"]), ranks[0]["warnings"]
    assert ranks[1]["warnings"] == []
