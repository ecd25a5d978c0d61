"""CalibrationComparison: the functional comparison on the concatenated batches, state rules."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationComparison
from calib_metrics.functional import compare_calibration
from calib_metrics.functional.errors import NoPairsError

PAD = -100
OPTIONS = {"n_samples": 300, "bin_size": 200, "seed": 7}


def _binary(sizes=(700, 300, 1000), seed: int = 0, groups: bool = False):
    g = torch.Generator().manual_seed(seed)
    out, first = [], 0
    for n in sizes:
        q = torch.rand(n, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g)
        a = (q + 0.1 * torch.rand(n, generator=g, dtype=torch.float64)).clamp(max=1)
        batch = (a, q, y)
        if groups:
            batch = (*batch, (first + torch.arange(n)) // 10)
        first += n
        out.append(batch)
    return out


def _tags(sizes=(500, 800), seed: int = 1, pad: bool = False, c: int = 4):
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        p = torch.softmax(2.5 * torch.randn(n, c, generator=g, dtype=torch.float64), -1)
        t = torch.multinomial(p, 1, generator=g).squeeze(1)
        if pad:
            t[torch.rand(n, generator=g) < 0.2] = PAD
        out.append((torch.softmax(2 * p.log(), -1), p, t))
    return out


def _functional(batches, keep=None, **options):
    columns = [torch.cat(c) for c in zip(*batches)]
    if keep is not None:
        columns = [c[keep] for c in columns]
    a, b, y, *groups = columns
    generator = torch.Generator().manual_seed(OPTIONS["seed"])
    estimator = {k: v for k, v in OPTIONS.items() if k != "seed"} | options
    return compare_calibration(
        a, b, y, groups=groups[0] if groups else None, generator=generator, **estimator
    )


def _assert_equal(got, want) -> None:
    for field in ("difference", "lower", "upper", "p_value"):
        torch.testing.assert_close(getattr(got, field), getattr(want, field), rtol=0, atol=0)
    for side in ("a", "b"):
        for field in ("error", "lower", "upper"):
            got_v, want_v = getattr(getattr(got, side), field), getattr(getattr(want, side), field)
            torch.testing.assert_close(got_v, want_v, rtol=0, atol=0)


@pytest.mark.parametrize("groups", [False, True])
def test_equals_the_functional_on_the_concatenation(groups) -> None:
    batches = _binary(groups=groups)
    metric = CalibrationComparison(**OPTIONS)
    for batch in batches:
        metric.update(*batch)
    _assert_equal(metric.compute(), _functional(batches))


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_multiclass_modes_with_padding_equal_the_functional(mode) -> None:
    batches = _tags(pad=True)
    metric = CalibrationComparison(num_classes=4, mode=mode, ignore_index=PAD, **OPTIONS)
    for batch in batches:
        metric.update(*batch)
    keep = torch.cat([t for *_, t in batches]) != PAD
    _assert_equal(metric.compute(), _functional(batches, keep=keep, mode=mode))


def test_padded_sequences_batch_time_classes_equal_the_flat_items() -> None:
    """[batch, time, C] probabilities with [batch, time] tags, as a tagger gives them."""
    flat = _tags(sizes=(600,), pad=True)[0]
    a, b, t = (x.reshape(20, 30, *x.shape[1:]) for x in flat)
    metric = CalibrationComparison(num_classes=4, ignore_index=PAD, **OPTIONS)
    metric.update(a, b, t)
    keep = flat[2] != PAD
    _assert_equal(metric.compute(), _functional([flat], keep=keep))


def test_forward_returns_the_batch_comparison_and_accumulates_in_order() -> None:
    batches = _binary()
    metric = CalibrationComparison(**OPTIONS)
    first = metric(*batches[0])
    _assert_equal(first, _functional(batches[:1]))
    for batch in batches[1:]:
        metric(*batch)
    _assert_equal(metric.compute(), _functional(batches))


def test_forward_of_padding_only_gives_none_and_keeps_state() -> None:
    batches = _tags(pad=True)
    metric = CalibrationComparison(num_classes=4, ignore_index=PAD, **OPTIONS)
    metric.update(*batches[0])
    a, b, t = batches[1]
    assert metric(a, b, torch.full_like(t, PAD)) is None
    keep = torch.cat([batches[0][2], torch.full_like(t, PAD)]) != PAD
    _assert_equal(metric.compute(), _functional([batches[0], (a, b, t)], keep=keep))


BAD = {
    "shape": (lambda a, b, y: (a, b[:-1], y), "same items"),
    "range": (lambda a, b, y: (a, b + 2, y), r"\[0, 1\]"),
    "nan": (lambda a, b, y: (a.clone().fill_(float("nan")), b, y), "NaN"),
    "labels": (lambda a, b, y: (a, b, y + 3), "binary"),
    "int-probs": (lambda a, b, y: (a, b.long(), y), "floating-point"),
}


@pytest.mark.parametrize("name", list(BAD))
@pytest.mark.parametrize("call", ["update", "forward"])
def test_bad_input_keeps_state(name, call) -> None:
    batches = _binary()
    metric = CalibrationComparison(**OPTIONS)
    metric.update(*batches[0])
    corrupt, match = BAD[name]
    with pytest.raises(ValueError, match=match):
        (metric.update if call == "update" else metric)(*corrupt(*batches[1]))
    assert metric.update_count == 1
    metric.update(*batches[2])
    _assert_equal(metric.compute(), _functional([batches[0], batches[2]]))


def test_groups_with_some_batches_only_are_refused() -> None:
    batches = _binary(groups=True)
    metric = CalibrationComparison(**OPTIONS)
    metric.update(*batches[0])
    with pytest.raises(ValueError, match="without groups="):
        metric.update(*batches[1][:3])
    with pytest.raises(ValueError, match="one id per item"):
        metric.update(*batches[1][:3], groups=batches[1][3][:-1])
    _assert_equal(metric.compute(), _functional(batches[:1]))


def test_merge_state_appends_after_its_own_pairs() -> None:
    batches = _binary()
    one, two = CalibrationComparison(**OPTIONS), CalibrationComparison(**OPTIONS)
    one.update(*batches[0])
    two.update(*batches[1])
    one.merge_state(two)
    _assert_equal(one.compute(), _functional(batches[:2]))


def test_compute_without_items_and_reset() -> None:
    metric = CalibrationComparison(**OPTIONS)
    with pytest.raises(NoPairsError, match="no items"):
        metric.compute()
    metric.update(*_binary()[0])
    metric.reset()
    with pytest.raises(NoPairsError):
        metric.compute()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "classwise"}, "num_classes"),
        ({"mode": "per_class", "num_classes": 3}, "mode must be"),
        ({"mode": "top_label"}, "num_classes"),
        ({"num_classes": 1}, "num_classes"),
        ({"norm": "l3"}, "norm"),
        ({"n_samples": 1}, "n_samples"),
        ({"confidence": 1.5}, "confidence"),
        ({"seed": "x"}, "seed"),
        ({"ignore_index": 1.5}, "ignore_index"),
        ({"debias": "yes"}, "debias"),
    ],
)
def test_bad_constructor_arguments(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        CalibrationComparison(**kwargs)


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_compute_by_label_is_the_functional_per_class(correction) -> None:
    from calib_metrics.functional import compare_calibration_by_label

    batches = _tags(pad=True)
    metric = CalibrationComparison(num_classes=4, ignore_index=PAD, **OPTIONS)
    for batch in batches:
        metric.update(*batch)
    got = metric.compute_by_label(correction=correction)
    a, b, t = (torch.cat(c) for c in zip(*batches))
    keep = t != PAD
    a, b, t = a[keep], b[keep], t[keep]
    labels = torch.arange(4).expand(t.numel(), 4).reshape(-1)
    onehot = torch.nn.functional.one_hot(t, 4).reshape(-1)
    estimator = {k: v for k, v in OPTIONS.items() if k != "seed"}
    want = compare_calibration_by_label(
        a.reshape(-1), b.reshape(-1), onehot, labels, correction=correction,
        generator=torch.Generator().manual_seed(OPTIONS["seed"]), **estimator,
    )  # fmt: skip
    assert got.labels.tolist() == [0, 1, 2, 3]
    for field in ("difference", "lower", "upper", "p_value", "adjusted_p_value", "verdict"):
        torch.testing.assert_close(getattr(got, field), getattr(want, field), rtol=0, atol=0)
    assert (got.a_better, got.b_better) == (want.a_better, want.b_better)


@pytest.mark.parametrize(
    "options", [{}, {"num_classes": 4, "mode": "top_label"}], ids=["binary", "top_label"]
)
def test_compute_by_label_needs_one_vs_rest_classes(options) -> None:
    metric = CalibrationComparison(**options, **OPTIONS)
    if not options:  # binary items without labels (none at all: NoPairsError, below)
        metric.update(*_binary()[0])
    with pytest.raises(ValueError, match="class by class"):
        metric.compute_by_label()


def test_compute_by_label_of_no_items_is_no_pairs_as_compute_is() -> None:
    """Empty batches given labels= hold no labels: compute_by_label had asked for labels=
    where compute() raises NoPairsError, which callers catch."""
    metric = CalibrationComparison(**OPTIONS)
    empty = torch.empty(0)
    metric.update(empty, empty, empty.long(), labels=empty.long())
    with pytest.raises(NoPairsError):
        metric.compute()
    with pytest.raises(NoPairsError):
        metric.compute_by_label()


def test_casting_the_module_keeps_the_states_dtype() -> None:
    batches = _binary()
    metric = CalibrationComparison(**OPTIONS)
    metric.update(*batches[0])
    metric = metric.to(torch.bfloat16)
    assert metric.probs_a[0].dtype == torch.float64 and metric.target[0].dtype == torch.float64
    metric.update(*batches[1])
    _assert_equal(metric.compute(), _functional(batches[:2]))


def _labelled(batches, seed: int = 3, n_labels: int = 3):
    """Each batch with a label per item (5th argument of update), groups or None before it."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for batch in batches:
        labels = torch.randint(0, n_labels, batch[2].shape, generator=g)
        groups = batch[3] if len(batch) > 3 else None
        out.append((*batch[:3], groups, labels))
    return out


def _by_label(got, want) -> None:
    assert got.labels.tolist() == want.labels.tolist()
    for field in ("difference", "lower", "upper", "p_value", "adjusted_p_value", "verdict"):
        torch.testing.assert_close(getattr(got, field), getattr(want, field), rtol=0, atol=0)
    assert (got.a_better, got.b_better, got.correction) == (want.a_better, want.b_better, "bh")


@pytest.mark.parametrize("groups", [False, True])
def test_compute_by_label_with_labels_equals_the_functional(groups) -> None:
    from calib_metrics.functional import compare_calibration_by_label

    batches = _labelled(_binary(groups=groups))
    metric = CalibrationComparison(**OPTIONS)
    for batch in batches:
        metric.update(*batch)
    a, b, y, labels = (torch.cat([batch[i] for batch in batches]) for i in (0, 1, 2, 4))
    g = torch.cat([batch[3] for batch in batches]) if groups else None
    estimator = {k: v for k, v in OPTIONS.items() if k != "seed"}
    want = compare_calibration_by_label(
        a, b, y, labels, groups=g, correction="bh",
        generator=torch.Generator().manual_seed(OPTIONS["seed"]), **estimator,
    )  # fmt: skip
    _by_label(metric.compute_by_label(correction="bh"), want)
    unlabelled = [batch[: 4 if groups else 3] for batch in batches]
    _assert_equal(metric.compute(), _functional(unlabelled))  # labels change nothing here


def test_compute_by_label_with_labels_of_multiclass_items_and_padding() -> None:
    from calib_metrics.functional import compare_calibration_by_label

    batches = _labelled(_tags(pad=True), n_labels=2)
    metric = CalibrationComparison(num_classes=4, ignore_index=PAD, **OPTIONS)
    for batch in batches:
        metric.update(*batch)
    a, b, t, labels = (torch.cat([batch[i] for batch in batches]) for i in (0, 1, 2, 4))
    keep = t != PAD
    estimator = {k: v for k, v in OPTIONS.items() if k != "seed"}
    want = compare_calibration_by_label(
        a[keep], b[keep], t[keep], labels[keep], correction="bh",
        generator=torch.Generator().manual_seed(OPTIONS["seed"]), **estimator,
    )  # fmt: skip
    _by_label(metric.compute_by_label(correction="bh"), want)


def test_labels_state_rules_and_merge() -> None:
    batches = _labelled(_binary())
    metric = CalibrationComparison(**OPTIONS)
    metric.update(*batches[0])
    with pytest.raises(ValueError, match="without labels="):
        metric.update(*batches[1][:3])
    with pytest.raises(ValueError, match="labels must have the target's shape"):
        metric.update(*batches[1][:3], labels=batches[1][4][:-1])
    with pytest.raises(ValueError, match="labels must hold integer ids"):
        metric.update(*batches[1][:3], labels=batches[1][4].double())
    assert metric.update_count == 1
    other = CalibrationComparison(**OPTIONS)
    other.update(*batches[1])
    metric.merge_state(other)
    unlabelled = CalibrationComparison(**OPTIONS)
    unlabelled.update(*batches[2][:3])
    with pytest.raises(ValueError, match="one state has labels"):
        metric.merge_state(unlabelled)
    single = CalibrationComparison(**OPTIONS)
    single.update(*batches[0])
    single(*batches[1][:3], labels=batches[1][4])  # forward keeps the batch's labels too
    _by_label(metric.compute_by_label(correction="bh"), single.compute_by_label(correction="bh"))
    top = CalibrationComparison(num_classes=4, mode="top_label", **OPTIONS)
    a, b, t = _tags()[0]
    top.update(a, b, t, labels=t % 2)
    # It had said "needs labels= in update ... (this metric has ... with labels)".
    with pytest.raises(ValueError) as refused:
        top.compute_by_label()
    assert str(refused.value) == (
        "compute_by_label compares binary or one-vs-rest pairs, not mode='top_label' ones "
        "(an item's highest probability): build the metric with mode='one_vs_rest' to "
        "compare by the labels= given in update"
    )


@pytest.mark.parametrize("ids", ["groups", "labels"])
def test_forward_without_ids_after_batches_with_them_says_so_as_update_does(ids) -> None:
    """forward had refused the batch only when merging it, with "cannot merge: one state
    has groups and the other does not"."""
    batches = _binary(groups=True)
    metric = CalibrationComparison(**OPTIONS)
    first, second = batches[0], batches[1]
    given = {ids: first[3]}
    metric(*first[:3], **given)
    before = metric.compute()
    with pytest.raises(ValueError, match=f"this batch came without {ids}= and earlier ones did"):
        metric(*second[:3])
    _assert_equal(metric.compute(), before)
    assert metric.update_count == 1
    plain = CalibrationComparison(**OPTIONS)
    plain(*first[:3])
    with pytest.raises(ValueError, match=f"this batch came with {ids}= and earlier ones did not"):
        plain(*second[:3], **{ids: second[3]})


def test_merge_state_into_a_fresh_comparison_counts_its_updates() -> None:
    """compute() had warned "called before the update method" on the merged shards."""
    batches = _binary()
    shard, merged = CalibrationComparison(**OPTIONS), CalibrationComparison(**OPTIONS)
    for batch in batches:
        shard.update(*batch)
    merged.merge_state(shard)
    assert merged.update_count == len(batches)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _assert_equal(merged.compute(), shard.compute())
    from_dict = CalibrationComparison(**OPTIONS)
    from_dict.merge_state(dict(shard.metric_state))
    assert from_dict.update_count == 1
    metric = CalibrationComparison(**OPTIONS)
    metric(*batches[0])
    metric(*batches[1])
    assert metric.update_count == 2  # forward counts each batch once


@pytest.mark.parametrize(
    "combine", [lambda m: m + m, lambda m: 2 * m, lambda m: m - 0.1, lambda m: -m, lambda m: m < 1]
)
def test_arithmetic_is_refused_where_it_is_written(combine) -> None:
    """torchmetrics' composite metric had been made without complaint, and its compute()
    failed inside torch.add with a TypeError naming no metric."""
    metric = CalibrationComparison(n_samples=50)
    with pytest.raises(TypeError, match="CalibrationComparison does not support arithmetic"):
        combine(metric)
