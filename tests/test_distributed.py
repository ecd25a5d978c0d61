"""CalibrationError under real ``torch.distributed``: 2 CPU processes, gloo backend.

Every case shards one data set over the ranks (unevenly, in scattered pieces, or with
one rank holding nothing), lets each rank ``compute()`` the synchronised result, and
compares it with one process that saw the union. The run happens in a child Python
process (this file run as a script) that spawns the two ranks, so that a hung run is
killed by its process group without taking pytest down.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import process_helpers
import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error

# Spawns processes (tens of seconds); still run in CI.
pytestmark = pytest.mark.slow

WORLD = 2
TIMEOUT_S = 120
C = 4
PAD = -100

# name -> (metric options, data kind, which batches each rank gets)
PER_CLASS = {"num_classes": C, "average": None}
CASES = {
    "exact-uneven": ({}, "binary", [[0, 2, 3], [1]]),
    "exact-empty-rank": ({}, "binary", [[0, 1, 2, 3], []]),
    "exact-mixed-dtypes": ({}, "binary-bf16", [[0, 2], [1, 3]]),
    "exact-padding": ({"ignore_index": PAD}, "binary-padded", [[3], [0, 1, 2]]),
    "stream-uneven": ({"streaming": True}, "binary", [[1, 3], [0, 2]]),
    "stream-empty-rank": ({"streaming": True}, "binary", [[], [0, 1, 2, 3]]),
    "exact-per-class": ({**PER_CLASS, "ignore_index": PAD}, "tags-padded", [[0, 1, 2], [3]]),
    "exact-per-class-empty": (PER_CLASS, "tags", [[], [0, 1, 2, 3]]),
    "exact-micro": ({"num_classes": C, "ignore_index": PAD}, "tags-padded", [[2], [0, 1, 3]]),
    "stream-per-class": (
        {**PER_CLASS, "ignore_index": PAD, "streaming": True},
        "tags-padded",
        [[0, 3], [1, 2]],
    ),
    "stream-per-class-empty": ({**PER_CLASS, "streaming": True}, "tags", [[0, 1, 2, 3], []]),
    # Small sketches: rank 0 keeps its 1200 rows exactly, rank 1 folds its 4300 (a buffer
    # of 2048 rows); both keep theirs exactly but the union of 5500 overflows 4096.
    "stream-one-rank-folded": (
        {"streaming": True, "resolution": 1024, "ignore_index": PAD},
        "binary-padded",
        [[1, 3], [0, 2]],
    ),
    "stream-union-overflows": (
        {**PER_CLASS, "streaming": True, "resolution": 2048},
        "tags",
        [[0, 1], [2, 3]],
    ),
    "stream-union-fits": ({"streaming": True, "resolution": 4096}, "binary", [[0, 1], [2, 3]]),
    # float32 and float64 batches sharing a tie group: rank 0 folds its float32 rows
    # alone, one process folds batch 0 with float64 rows; the value's cell must not care.
    "stream-mixed-dtypes": (
        {"streaming": True, "resolution": 1024},
        "binary-mixed-f64",
        [[0, 2], [1, 3]],
    ),
    # The group bootstrap gathers every pair's group id with the pairs.
    "groups-uneven": ({"interval": "groups", "debias": True}, "binary-groups", [[0, 2, 3], [1]]),
    "groups-micro-padded": (
        {"num_classes": C, "ignore_index": PAD, "interval": "groups"},
        "tags-padded-groups",
        [[], [0, 1, 2, 3]],
    ),
    "groups-per-class": ({**PER_CLASS, "interval": "groups"}, "tags-groups", [[1, 2], [0, 3]]),
    # uint16 ids on rank 0 alone, uint16 targets on both: kept as given, they had no code
    # for the ranks to agree on a dtype, and a rank raised while the other waited.
    "groups-uint16-one-rank": ({"interval": "groups"}, "binary-groups-u16", [[0, 2], [1, 3]]),
    "target-uint16": ({}, "binary-u16", [[0, 3], [1, 2]]),
    # mode= other than one-vs-rest: top-label streams one histogram; classwise averages.
    "stream-top-label": (
        {"num_classes": C, "mode": "top_label", "ignore_index": PAD, "streaming": True},
        "tags-padded",
        [[0, 3], [1, 2]],
    ),
    "exact-classwise-empty": ({"num_classes": C, "mode": "classwise"}, "tags", [[], [0, 1, 2, 3]]),
    # Pooled one-vs-rest rows folded on rank 0 (2,600 rows past a buffer of 2,048) and
    # on the union: its Spiegelhalter test sums the folded items' sums over the ranks.
    "stream-micro-folded": (
        {"num_classes": C, "ignore_index": PAD, "streaming": True, "resolution": 1024},
        "tags-padded",
        [[0, 3], [1, 2]],
    ),
}
OPTIONS = {"bin_size": 500, "n_samples": 500, "seed": 3}
# Cases drawn with seed=None, each rank's global RNG seeded differently (as dropout and
# shuffling leave them in training): the ranks must still agree on the interval.
SEEDLESS = ("exact-uneven", "stream-uneven", "groups-uneven", "exact-per-class")
# A float32 value whose float64 logit had put it one sketch cell below its float32 one.
SPLIT_VALUE = 0.09268772602081299


def batches(kind: str) -> list[tuple[torch.Tensor, ...]]:
    """Four batches of unequal sizes; the same on every process.

    ``*-groups`` kinds add group ids (runs of 10 items, numbered across the data set),
    ``*-groups-u16`` too, of dtype uint16 in batches 0 and 2; ``binary-u16`` has uint16
    targets.
    """
    g = torch.Generator().manual_seed(11)
    out = []
    for size in (1700, 300, 2600, 900):
        if kind.startswith("tags"):
            probs = torch.softmax(2.5 * torch.randn(size, C, generator=g), -1)
            target = torch.multinomial(probs, 1, generator=g).squeeze(1)
            if kind.startswith("tags-padded"):
                target[torch.rand(size, generator=g) < 0.1] = PAD
            out.append((probs, target))
            continue
        q = torch.rand(size, generator=g) ** 3
        if kind == "binary-mixed-f64":
            q[::5] = SPLIT_VALUE
        y = torch.bernoulli((q * 1.3).clamp(0, 1), generator=g).long()
        if kind == "binary-bf16":
            q = q.to(torch.bfloat16) if len(out) % 2 == 0 else q
        if kind == "binary-mixed-f64":
            q = q.double() if len(out) % 2 else q
        if kind == "binary-padded":
            y[torch.rand(size, generator=g) < 0.2] = PAD
        out.append((q, y.to(torch.uint16) if kind == "binary-u16" else y))
    if kind.endswith(("-groups", "-groups-u16")):
        first = 0
        for i, (probs, target) in enumerate(out):
            ids = (first + torch.arange(target.numel())) // 10
            if kind.endswith("-u16") and i % 2 == 0:
                ids = ids.to(torch.uint16)
            out[i] = (probs, target, ids)
            first += target.numel()
    return out


def summarise(metric: CalibrationError) -> dict[str, torch.Tensor]:
    result = metric.compute_result()
    results = result if isinstance(result, list) else [result]
    return {
        "compute": metric.compute(),
        "error": torch.stack([r.error for r in results]),
        "lower": torch.stack([r.lower for r in results]),
        "upper": torch.stack([r.upper for r in results]),
        "pairs": torch.stack([r.bins.count.sum() for r in results]),
        # Synchronised too: a rank without data had its own (no) bins, NoPairsError.
        "class_bins": torch.stack([b.count.sum() for b in metric.class_bins()]),
    } | _pooled_spiegelhalter(metric)


def _pooled_spiegelhalter(metric: CalibrationError) -> dict[str, torch.Tensor]:
    """A streaming metric's pooled one-vs-rest test, which its folded item sums decide."""
    pooled = metric.streaming and metric.num_classes and metric.average == "micro"
    if not pooled or metric.mode != "one_vs_rest":
        return {}
    return {"spiegelhalter": metric.compute_spiegelhalter().z}


def single_process(name: str) -> dict[str, torch.Tensor]:
    options, kind, _ = CASES[name]
    metric = CalibrationError(**options, **OPTIONS)
    for batch in batches(kind):
        metric.update(*batch)
    return summarise(metric)


def _rank(rank: int, port: int, out: str) -> None:
    """One rank: every case on its shard, the synchronised results saved to ``out``."""
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group(
        "gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=60)
    )
    results = {}
    for name, (options, kind, shards) in CASES.items():
        metric = CalibrationError(**options, **OPTIONS)
        data = batches(kind)
        for i in shards[rank]:
            metric.update(*data[i])
        results[name] = summarise(metric)
        # compute() gathers, then restores this rank's own state.
        local = metric.metric_state
        if "cell_count" in local:
            pad = options.get("ignore_index")
            kept = sum(t.numel() if pad is None else int((t != pad).sum()) for t in local["target"])
            if options.get("mode") != "top_label":  # top-label: one pair per item
                kept *= options.get("num_classes") or 1
            pairs = float(local["cell_count"].sum()) + kept
        else:
            pairs = float(sum(t.numel() for t in local["probs"]))
        results[name]["local_pairs"] = torch.tensor(pairs)
    for name in SEEDLESS:
        options, kind, shards = CASES[name]
        torch.manual_seed(1000 + rank)
        metric = CalibrationError(**options, **{**OPTIONS, "seed": None})
        data = batches(kind)
        for i in shards[rank]:
            metric.update(*data[i])
        results[f"seedless-{name}"] = summarise(metric)
    results["one-rank-refuses"] = _one_rank_refuses_for_memory(rank)
    results["warnings"] = _warnings_of_a_synced_compute(rank)
    torch.save(results, Path(out) / f"rank{rank}.pt")
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def _one_rank_refuses_for_memory(rank: int) -> str:
    """Rank 1 alone finds too little free memory after the sync (each rank reads its own):
    the seed gather of ``seed=None`` came after that check, and rank 0 waited in it."""
    from calib_metrics.functional import binning

    torch.manual_seed(rank)
    metric = CalibrationError(**{**OPTIONS, "seed": None})
    for batch in batches("binary")[rank::2]:
        metric.update(*batch)
    free = binning.available_bytes
    if rank == 1:
        binning.available_bytes = lambda device: 1024
    try:
        metric.compute_result()
        return "computed"
    except ValueError as err:
        return f"refused: {err}"
    finally:
        binning.available_bytes = free


def _warnings_of_a_synced_compute(rank: int) -> dict[str, list[str]]:
    """The metric's warnings each rank says while computing the synchronised result (few
    bins: 5500 pairs in bins of 2000), the same result on every rank."""
    import warnings

    said = {}
    for call in ("compute", "compute_result"):  # each alone: the warning comes once a metric
        metric = CalibrationError(**{**OPTIONS, "bin_size": 2000})
        for batch in batches("binary")[rank::2]:
            metric.update(*batch)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            getattr(metric, call)()
        said[call] = [str(w.message) for w in caught if "CalibrationError" in str(w.message)]
    return said


def _main(out: str) -> None:
    process_helpers.spawn_ranks(_rank, out, WORLD, TIMEOUT_S)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("ddp")
    return process_helpers.rank_results(__file__, out, WORLD, TIMEOUT_S)


@pytest.mark.parametrize("name", list(CASES))
def test_every_rank_gets_the_single_process_result(ranks, name) -> None:
    expected = single_process(name)
    for rank in ranks:
        got = rank[name]
        for key, value in expected.items():
            torch.testing.assert_close(got[key], value, rtol=1e-9, atol=1e-12, msg=key)


@pytest.mark.parametrize("name", list(CASES))
def test_sync_leaves_each_rank_its_own_state(ranks, name) -> None:
    options, kind, shards = CASES[name]
    data = batches(kind)
    for rank, result in enumerate(ranks):
        mine = [data[i] for i in shards[rank]]
        if options.get("streaming"):
            pad = options.get("ignore_index")
            expected = sum(
                int((y != pad).sum()) if pad is not None else y.numel() for _, y, *_ in mine
            )
            if options.get("mode") != "top_label":  # top-label: one pair per item
                expected *= options.get("num_classes") or 1
        else:
            expected = sum(q.numel() for q, *_ in mine)
        assert result[name]["local_pairs"].item() == expected


@pytest.mark.parametrize("name", SEEDLESS)
def test_ranks_agree_on_the_interval_without_a_seed(ranks, name) -> None:
    first, second = (rank[f"seedless-{name}"] for rank in ranks)
    for key in ("lower", "upper"):
        torch.testing.assert_close(first[key], second[key], rtol=0, atol=0, msg=key)
    # Drawn afresh: not the seeded interval's ends (lower ends at 0 may coincide).
    seeded = ranks[0][name]
    assert not (
        torch.equal(first["lower"], seeded["lower"])
        and torch.equal(first["upper"], seeded["upper"])
    )


def test_a_rank_refusing_for_memory_leaves_the_others_computing(ranks) -> None:
    assert ranks[0]["one-rank-refuses"] == "computed"
    assert ranks[1]["one-rank-refuses"].startswith("refused: ")


def test_streaming_whose_union_fits_the_buffer_is_exact(ranks) -> None:
    for rank in ranks:
        for key in ("compute", "error", "lower", "upper"):
            want = rank["exact-uneven"][key]
            torch.testing.assert_close(rank["stream-union-fits"][key], want, rtol=0, atol=0)


def test_exact_mode_equals_the_functional_on_the_union(ranks) -> None:
    q, y = (torch.cat(t) for t in zip(*batches("binary-padded")))
    keep = y != PAD
    want = calibration_error(q[keep], y[keep], bin_size=OPTIONS["bin_size"], debias=True)
    for rank in ranks:
        torch.testing.assert_close(rank["exact-padding"]["compute"], want)


def test_a_folded_pooled_spiegelhalter_test_is_the_exact_one_on_the_union(ranks) -> None:
    from calib_metrics.functional import spiegelhalter_test

    probs, target = (torch.cat(t) for t in zip(*batches("tags-padded")))
    kept = target != PAD
    want = spiegelhalter_test(probs[kept], target[kept]).z
    for rank in ranks:
        got = rank["stream-micro-folded"]["spiegelhalter"]
        torch.testing.assert_close(got, want, rtol=1e-9, atol=0)


if __name__ == "__main__":
    _main(sys.argv[1])


def test_rank_zero_alone_says_what_the_synchronised_result_warns_of(ranks) -> None:
    """Every rank computes the same result from the same pairs: "only 2 bins from 5500
    pairs" had been said once per rank."""
    for call in ("compute", "compute_result"):  # the latter draws after the sync block
        (said,) = ranks[0]["warnings"][call]
        assert said.startswith("CalibrationError: only 2 bins from 5500 pairs"), call
        assert ranks[1]["warnings"][call] == [], call
