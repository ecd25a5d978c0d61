"""The default ``interval=None`` resamples groups when every batch brings its ids and
pairs when none does; a batch that breaks the pattern is refused by ``update``. The same
must hold for ``forward`` and ``merge_state``: once, each accepted the odd batch (a fresh
batch metric has no history to check), and every later ``compute`` raised, so everything
accumulated was lost."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationError

OPTIONS = {"bin_size": 25, "n_samples": 200, "seed": 3}


def _data(n: int = 300, classes: int | None = None):
    g = torch.Generator().manual_seed(0)
    if classes is None:
        probs = torch.rand(n, generator=g, dtype=torch.float64)
        target = torch.bernoulli(probs, generator=g).long()
    else:
        probs = torch.softmax(torch.randn(n, classes, generator=g), -1)
        target = torch.randint(0, classes, (n,), generator=g)
    return probs, target, torch.arange(n) // 10


def _same(got, want) -> None:
    for name in ("error", "lower", "upper"):
        torch.testing.assert_close(getattr(got, name), getattr(want, name), msg=name)


@pytest.mark.parametrize("classes", [None, 4])
def test_forward_without_groups_after_grouped_batches_is_refused(classes) -> None:
    probs, target, ids = _data(classes=classes)
    kw = {} if classes is None else {"num_classes": classes}
    metric = CalibrationError(**kw, **OPTIONS)
    metric.update(probs[:200], target[:200], groups=ids[:200])
    before = metric.compute_result()
    with pytest.raises(ValueError, match="earlier batches came with groups="):
        metric(probs[200:], target[200:])
    _same(metric.compute_result(), before)
    metric(probs[200:], target[200:], groups=ids[200:])  # the right batch still goes in
    assert metric.compute_result().bins.count.sum() == target.numel() * (classes or 1)


def test_forward_with_groups_after_ungrouped_batches_is_refused() -> None:
    probs, target, ids = _data()
    metric = CalibrationError(**OPTIONS)
    metric(probs[:200], target[:200])
    before = metric.compute_result()
    with pytest.raises(ValueError, match="earlier batches came without groups="):
        metric(probs[200:], target[200:], groups=ids[200:])
    with pytest.raises(ValueError, match="earlier batches came without groups="):
        metric(probs[200:], target[200:], ids[200:])  # positional, as update takes it
    _same(metric.compute_result(), before)


def test_merge_state_of_grouped_and_ungrouped_metrics_is_refused() -> None:
    probs, target, ids = _data()
    grouped = CalibrationError(**OPTIONS)
    grouped.update(probs[:200], target[:200], groups=ids[:200])
    plain = CalibrationError(**OPTIONS)
    plain.update(probs[200:], target[200:])
    before = grouped.compute_result(), plain.compute_result()
    with pytest.raises(ValueError, match="group ids"):
        grouped.merge_state(plain)
    with pytest.raises(ValueError, match="group ids"):
        plain.merge_state(grouped)
    with pytest.raises(ValueError, match="group ids"):
        plain.merge_state(grouped.metric_state)
    _same(grouped.compute_result(), before[0])
    _same(plain.compute_result(), before[1])


def test_merge_state_with_an_empty_metric_is_fine_either_way() -> None:
    probs, target, ids = _data()
    grouped = CalibrationError(**OPTIONS)
    grouped.update(probs, target, groups=ids)
    want = grouped.compute_result()
    empty = CalibrationError(**OPTIONS)
    empty.merge_state(grouped)
    _same(empty.compute_result(), want)
    grouped.merge_state(CalibrationError(**OPTIONS))
    _same(grouped.compute_result(), want)


def test_merge_state_of_pairs_without_ids_into_interval_groups_is_refused() -> None:
    """interval="groups" resamples every item's group; it had taken a state of pairs
    without ids and then failed at every compute_result()."""
    probs, target, ids = _data()
    plain = CalibrationError(**OPTIONS)  # interval=None: keeps ids, but was given none
    plain.update(probs[200:], target[200:])
    grouped = CalibrationError(interval="groups", **OPTIONS)
    with pytest.raises(ValueError, match="100 items without group ids"):
        grouped.merge_state(plain)
    with pytest.raises(ValueError, match="100 items without group ids"):
        grouped.merge_state(dict(plain.metric_state))
    assert grouped.probs == [] and grouped.update_count == 0
    grouped.update(probs[:200], target[:200], groups=ids[:200])
    assert grouped.compute_result().bins.count.sum() == 200


def test_merge_state_into_a_fresh_metric_counts_its_updates() -> None:
    """compute() had warned "called before the update method" on the merged shards."""
    probs, target, _ = _data()
    shard = CalibrationError(**OPTIONS)
    shard.update(probs[:100], target[:100])
    shard.update(probs[100:], target[100:])
    merged = CalibrationError(**OPTIONS)
    merged.merge_state(shard)
    assert merged.update_count == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert merged.compute() == shard.compute()
    from_dict = CalibrationError(**OPTIONS)
    from_dict.merge_state(dict(shard.metric_state))
    assert from_dict.update_count == 1  # as a loaded state counts
    forwarded = CalibrationError(**OPTIONS)
    forwarded(probs[:100], target[:100])
    forwarded(probs[100:], target[100:])
    assert forwarded.update_count == 2  # forward counts each batch once


# A streaming metric keeps no group ids: it takes batches without them only.
@pytest.mark.parametrize(
    ("grouped_first", "streaming"), [(False, False), (True, False), (False, True)]
)
def test_forward_takes_an_empty_batch_whatever_its_groups_as_update_does(
    grouped_first: bool, streaming: bool
) -> None:
    """An empty batch (a rank's last) changes nothing, not whether groups= come: update()
    took it with or without groups=, forward() checked the history first and refused it."""
    probs, target, ids = _data()
    options = {**OPTIONS, "streaming": streaming, "resolution": 2**10}
    empty = torch.empty(0, dtype=probs.dtype), torch.empty(0, dtype=target.dtype)
    no_ids = torch.empty(0, dtype=ids.dtype)
    for call in ("update", "forward"):
        metric = CalibrationError(**options)
        metric.update(probs, target, groups=ids if grouped_first else None)
        before = metric.compute_result()
        take = metric.update if call == "update" else metric
        take(*empty, groups=None if grouped_first else no_ids)
        _same(metric.compute_result(), before)
