"""``CalibrationError(interval="groups")``: group ids kept with the pairs, bootstrap over groups."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error_ci

PAD = -100
OPTIONS = {"bin_size": 200, "n_samples": 300, "seed": 5}


def sentences(n_sentences: int, length: int, g: torch.Generator, classes: int | None = None):
    """Tokens in sentences whose correctness shares a per-sentence shift."""
    shift = torch.randn(n_sentences, 1, generator=g)
    if classes is None:
        probs = torch.rand(n_sentences, length, generator=g, dtype=torch.float64)
        noise = torch.randn(n_sentences, length, generator=g)
        target = ((probs - 0.5) * 4 + 2 * shift + noise > 0).long()
    else:
        logits = 2 * torch.randn(n_sentences, length, classes, generator=g)
        probs = torch.softmax(logits, -1)
        target = torch.multinomial(probs.reshape(-1, classes), 1, generator=g)
        target = target.reshape(n_sentences, length)
    ids = torch.arange(n_sentences).unsqueeze(1).expand(n_sentences, length)
    return probs, target, ids


def functional(probs, target, groups, **kwargs):
    kwargs.setdefault("debias", True)  # the metric's default
    g = torch.Generator().manual_seed(OPTIONS["seed"])
    return calibration_error_ci(
        probs,
        target,
        groups=groups,
        interval="groups",
        generator=g,
        bin_size=OPTIONS["bin_size"],
        n_samples=OPTIONS["n_samples"],
        **kwargs,
    )


def assert_same(got, want) -> None:
    for name in ("error", "mean", "std", "lower", "upper"):
        torch.testing.assert_close(getattr(got, name), getattr(want, name), msg=name)
    torch.testing.assert_close(got.bins.count, want.bins.count)


@pytest.mark.parametrize("debias", [False, True])
def test_binary_batches_equal_the_functional_on_the_union(debias) -> None:
    g = torch.Generator().manual_seed(0)
    probs, target, ids = sentences(120, 15, g)
    metric = CalibrationError(interval="groups", debias=debias, **OPTIONS)
    for rows in (slice(0, 50), slice(50, 51), slice(51, 120)):
        metric.update(probs[rows], target[rows], groups=ids[rows])
    want = functional(probs, target, ids, debias=debias)
    assert_same(metric.compute_result(), want)
    torch.testing.assert_close(metric.compute(), want.error)


def test_multiclass_micro_expands_each_items_group_to_its_pairs() -> None:
    g = torch.Generator().manual_seed(1)
    probs, target, ids = sentences(80, 10, g, classes=3)
    metric = CalibrationError(num_classes=3, interval="groups", **OPTIONS)
    metric.update(probs, target, groups=ids)
    one_hot = target.unsqueeze(-1) == torch.arange(3)
    wide = ids.unsqueeze(-1).expand(-1, -1, 3)
    assert_same(metric.compute_result(), functional(probs, one_hot, wide))


def test_per_class_results_and_ignored_items_drop_their_groups() -> None:
    g = torch.Generator().manual_seed(2)
    probs, target, ids = sentences(80, 10, g, classes=3)
    target[torch.rand(target.shape, generator=g) < 0.15] = PAD
    metric = CalibrationError(
        num_classes=3, average=None, ignore_index=PAD, interval="groups", **OPTIONS
    )
    metric.update(probs[:30], target[:30], groups=ids[:30])
    metric.update(probs[30:], target[30:], groups=ids[30:])
    keep = target != PAD
    results = metric.compute_result()
    assert len(results) == 3
    # One generator runs through the classes, as in the metric.
    g = torch.Generator().manual_seed(OPTIONS["seed"])
    for c, got in enumerate(results):
        want = calibration_error_ci(
            probs[keep][:, c],
            target[keep] == c,
            groups=ids[keep],
            interval="groups",
            generator=g,
            bin_size=OPTIONS["bin_size"],
            n_samples=OPTIONS["n_samples"],
            debias=True,  # the metric's default
        )
        assert_same(got, want)


def test_group_interval_is_wider_than_pair_interval_on_correlated_sentences() -> None:
    g = torch.Generator().manual_seed(3)
    probs, target, ids = sentences(200, 30, g)
    widths = {}
    for interval in ("pairs", "groups"):
        metric = CalibrationError(interval=interval, debias=True, **OPTIONS)
        metric.update(probs, target, **({"groups": ids} if interval == "groups" else {}))
        result = metric.compute_result()
        widths[interval] = (result.upper - result.lower).item()
    assert widths["groups"] > 1.3 * widths["pairs"]


def test_bad_groups_raise_and_keep_the_state() -> None:
    g = torch.Generator().manual_seed(4)
    probs, target, ids = sentences(20, 5, g)
    metric = CalibrationError(interval="groups", **OPTIONS)
    metric.update(probs, target, groups=ids)
    before = metric.compute_result()
    with pytest.raises(ValueError, match="needs groups="):
        metric.update(probs, target)
    with pytest.raises(ValueError, match="target's shape"):
        metric.update(probs, target, groups=ids[:, :3])
    with pytest.raises(ValueError, match="integer ids"):
        metric.update(probs, target, groups=ids.double())
    with pytest.raises(ValueError, match="integer ids"):
        metric.update(probs, target, groups=ids > 3)
    with pytest.raises(ValueError, match="must lie in"):
        metric.update(probs + 2, target, groups=ids)
    assert len(metric.probs) == len(metric.groups) == 1
    assert_same(metric.compute_result(), before)


def test_groups_are_refused_where_they_cannot_be_used() -> None:
    with pytest.raises(ValueError, match="streaming=False"):
        CalibrationError(interval="groups", streaming=True)
    with pytest.raises(ValueError, match="interval must be"):
        CalibrationError(interval="sentences")
    metric = CalibrationError(interval="pairs")
    with pytest.raises(ValueError, match="interval='groups'"):
        metric.update(torch.rand(4), torch.ones(4), groups=torch.arange(4))
    assert metric.probs == []


def test_forward_and_merge_state_keep_the_groups() -> None:
    g = torch.Generator().manual_seed(6)
    probs, target, ids = sentences(40, 10, g)
    stepped = CalibrationError(interval="groups", **OPTIONS)
    stepped(probs[:20], target[:20], groups=ids[:20])  # forward: batch value, then accumulate
    stepped(probs[20:], target[20:], groups=ids[20:])
    merged = CalibrationError(interval="groups", **OPTIONS)
    merged.update(probs[:20], target[:20], groups=ids[:20])
    other = CalibrationError(interval="groups", **OPTIONS)
    other.update(probs[20:], target[20:], groups=ids[20:])
    merged.merge_state(other)
    want = functional(probs, target, ids)
    assert_same(stepped.compute_result(), want)
    assert_same(merged.compute_result(), want)
