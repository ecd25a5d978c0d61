"""One-hot targets beside softmax rows in a paired comparison.

Read as independent binary pairs (multi-label), they were resampled pair by pair, not
item by item as class ids are, which calls equally calibrated models different too
often (docs/coverage.md, "Two noisy copies": 0.09–0.14 at α = 0.05 against 0.03–0.07),
without a word: spiegelhalter_test and CalibrationError warned of the same input, the
comparison did not."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationComparison
from calib_metrics.functional import compare_calibration, compare_calibration_by_label

SAID = "target looks one-hot beside rows of probabilities that sum to 1"


def _models(n: int = 300, classes: int = 3):
    g = torch.Generator().manual_seed(0)
    a = torch.softmax(torch.randn(n, classes, generator=g), -1)
    b = torch.softmax(torch.randn(n, classes, generator=g), -1)
    ids = torch.multinomial(a, 1, generator=g).squeeze(1)
    return a, b, ids, torch.nn.functional.one_hot(ids, classes)


def _said(call) -> list[str]:
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in told if SAID in str(w.message)]


def test_compare_calibration_warns_of_one_hot_targets_at_the_callers_line() -> None:
    a, b, _, one_hot = _models()
    with pytest.warns(UserWarning, match="resamples them pair by pair") as told:
        compare_calibration(a, b, one_hot, n_samples=50)
    ours = [w for w in told if SAID in str(w.message)]
    assert len(ours) == 1 and ours[0].filename == __file__
    assert str(ours[0].message).startswith("compare_calibration: ")
    assert str(ours[0].message).endswith("pass target.argmax(-1)")


def test_class_ids_groups_and_multi_label_rows_are_not_warned_of() -> None:
    a, b, ids, one_hot = _models()
    multi_label = one_hot.clone()
    multi_label[0] = torch.tensor([1, 1, 0])  # a row of two 1s: genuine multi-label
    groups = torch.arange(len(ids)).unsqueeze(1).expand_as(one_hot)
    assert not _said(lambda: compare_calibration(a, b, ids, n_samples=50))
    assert not _said(lambda: compare_calibration(a, b, multi_label, n_samples=50))
    assert not _said(lambda: compare_calibration(a, b, one_hot, groups=groups, n_samples=50))


@pytest.mark.parametrize("how", ["update", "forward"])
def test_the_metric_warns_once_through_update_and_forward(how: str) -> None:
    a, b, _, one_hot = _models()
    metric = CalibrationComparison(n_samples=50)
    step = metric.update if how == "update" else metric

    def three_batches() -> None:
        for rows in torch.arange(len(a)).chunk(3):
            step(a[rows], b[rows], one_hot[rows])

    said = _said(three_batches)
    assert len(said) == 1
    assert said[0].startswith("CalibrationComparison: ")
    assert said[0].endswith("pass target.argmax(-1) with num_classes=3")


def test_the_metric_of_class_ids_says_nothing() -> None:
    a, b, ids, _ = _models()
    metric = CalibrationComparison(num_classes=3, n_samples=50)
    assert not _said(lambda: (metric.update(a, b, ids), metric(a, b, ids)))


def test_compare_calibration_by_label_warns_where_a_label_holds_an_items_pairs() -> None:
    """Labels per item (expanded over the classes) put an item's C one-hot pairs in one
    label, where they are resampled pair by pair, as compare_calibration resamples them.
    Class by class, a label holds one pair of each item, its pairs are its items, and a
    one-hot target is compared as class ids are: not warned of."""
    a, b, ids, one_hot = _models()
    per_item = (torch.arange(len(ids)) % 2).unsqueeze(1).expand_as(one_hot)
    by_class = torch.arange(one_hot.shape[1]).expand_as(one_hot)
    options = {"n_samples": 100, "min_units": 10}
    with pytest.warns(UserWarning, match="resamples them pair by pair") as told:
        compare_calibration_by_label(a, b, one_hot, per_item, **options)
    ours = [w for w in told if SAID in str(w.message)]
    assert len(ours) == 1 and ours[0].filename == __file__
    assert str(ours[0].message).startswith("compare_calibration_by_label: ")
    groups = torch.arange(len(ids)).unsqueeze(1).expand_as(one_hot)
    assert not _said(lambda: compare_calibration_by_label(a, b, one_hot, by_class, **options))
    assert not _said(lambda: compare_calibration_by_label(a, b, ids, per_item, **options))
    assert not _said(
        lambda: compare_calibration_by_label(a, b, one_hot, per_item, groups=groups, **options)
    )


def test_class_by_class_a_one_hot_target_is_compared_as_class_ids_are() -> None:
    """Why class by class is not warned of: each label's pairs are its items either way,
    so the same draws give the same intervals."""
    a, b, ids, one_hot = _models()
    by_class = torch.arange(one_hot.shape[1]).expand_as(one_hot)

    def compared(target: torch.Tensor):
        g = torch.Generator().manual_seed(1)
        return compare_calibration_by_label(a, b, target, by_class, n_samples=200, generator=g)

    of_ids, of_one_hot = compared(ids), compared(one_hot)
    for field in ("difference", "lower", "upper", "p_value"):
        assert torch.equal(getattr(of_ids, field), getattr(of_one_hot, field)), field
