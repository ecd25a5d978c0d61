"""compare_calibration_by_label: per-label paired differences, Holm and BH corrections."""

from __future__ import annotations

import itertools
import re
import warnings

import pytest
import torch
from torch import Tensor

from calib_metrics.functional import (
    LabelComparisonResult,
    bh_adjust,
    compare_calibration,
    compare_calibration_by_label,
    holm_adjust,
)
from calib_metrics.functional.comparison_by_label import monte_carlo_p_values


def holm_rejects(p: list[float], alpha: float) -> set[int]:
    """Holm's step-down procedure, as written in textbooks: walk the sorted p-values."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    rejected = set()
    for k, i in enumerate(order):
        if p[i] > alpha / (m - k):
            break
        rejected.add(i)
    return rejected


def bh_rejects(p: list[float], alpha: float) -> set[int]:
    """Benjamini–Hochberg: reject the k smallest, k the largest with p_(k) <= k alpha / m."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    passing = [k for k in range(1, m + 1) if p[order[k - 1]] <= k * alpha / m]
    return set(order[: max(passing)]) if passing else set()


def p_value_sets():
    g = torch.Generator().manual_seed(3)
    yield [0.01, 0.04, 0.03, 0.5]
    yield [0.0, 0.0, 1.0]
    yield [0.02, 0.02, 0.02, 0.02]  # ties
    for m in (1, 2, 5, 17, 48):
        p = torch.rand(m, generator=g, dtype=torch.float64) ** 3  # many small ones
        yield p.tolist()
        yield (p * 20).round().div(20).tolist()  # ties on a grid


ALPHAS = [0.001, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5]


@pytest.mark.parametrize("adjust,reference", [(holm_adjust, holm_rejects), (bh_adjust, bh_rejects)])
def test_adjusted_p_values_reject_what_the_procedure_rejects(adjust, reference):
    for p, alpha in itertools.product(p_value_sets(), ALPHAS):
        adjusted = adjust(torch.tensor(p, dtype=torch.float64))
        ours = {i for i, a in enumerate(adjusted.tolist()) if a <= alpha + 1e-12}
        assert ours == reference(p, alpha), (p, alpha)


def test_adjusted_p_values_against_the_closed_forms():
    p = [0.01, 0.04, 0.03, 0.5]
    # Holm: sorted 0.01*4, 0.03*3, 0.04*2 -> running max 0.04, 0.09, 0.09; 0.5*1.
    assert holm_adjust(torch.tensor(p)).tolist() == pytest.approx([0.04, 0.09, 0.09, 0.5])
    # BH: 0.01*4/1, 0.03*4/2, 0.04*4/3, 0.5 -> running min from the top.
    assert bh_adjust(torch.tensor(p)).tolist() == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    assert holm_adjust(torch.tensor([float("nan"), 0.01])).tolist() == pytest.approx([1.0, 0.02])


def _data(n_labels=4, n=3000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n_labels, n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    a = q.clone()
    a[0] = q[0].sqrt()  # label 0: a is worse
    b = q.clone()
    b[1] = q[1] ** 2  # label 1: b is worse
    labels = torch.arange(n_labels).mul(7).unsqueeze(1).expand_as(q)  # ids 0, 7, 14, 21
    groups = torch.arange(n_labels * n).reshape(n_labels, n) // 10
    return a, b, y, labels, groups


@pytest.mark.parametrize("grouped", [False, True])
def test_each_label_is_compare_calibration_on_its_subset(grouped):
    a, b, y, labels, groups = _data()
    groups = groups if grouped else None
    res = compare_calibration_by_label(
        a, b, y, labels, groups=groups, n_samples=200, generator=torch.Generator().manual_seed(5)
    )
    assert isinstance(res, LabelComparisonResult)
    assert res.labels.tolist() == [0, 7, 14, 21]
    g = torch.Generator().manual_seed(5)  # the labels draw in increasing id order
    for k, label in enumerate(res.labels.tolist()):
        sel = labels == label
        ref = compare_calibration(
            a[sel], b[sel], y[sel], groups=None if groups is None else groups[sel],
            n_samples=200, generator=g,
        )  # fmt: skip
        got = res.per_label[k]
        for field in ("difference", "lower", "upper", "p_value"):
            assert torch.equal(getattr(got, field), getattr(ref, field)), (label, field)
            assert getattr(res, field)[k].item() == getattr(ref, field).item()
        assert torch.equal(got.a.error, ref.a.error) and torch.equal(got.b.upper, ref.b.upper)


def test_verdicts_and_counts_follow_the_adjusted_p_values():
    a, b, y, labels, _ = _data()
    res = compare_calibration_by_label(
        a, b, y, labels, n_samples=300, generator=torch.Generator().manual_seed(1)
    )
    assert res.verdict.tolist() == [1, -1, 0, 0]  # b better on 0, a better on 7
    assert (res.a_better, res.b_better, res.not_distinguishable) == (1, 1, 2)
    assert torch.equal(res.adjusted_p_value, holm_adjust(monte_carlo_p_values(res.p_value, 300)))
    bh = compare_calibration_by_label(
        a, b, y, labels, correction="bh", n_samples=300, generator=torch.Generator().manual_seed(1)
    )
    assert torch.equal(bh.adjusted_p_value, bh_adjust(monte_carlo_p_values(bh.p_value, 300)))
    assert torch.equal(bh.p_value, res.p_value)  # same draws: only the correction differs
    assert bool((bh.adjusted_p_value <= res.adjusted_p_value).all())


def test_the_correction_decides_which_differences_are_real(monkeypatch):
    """Counts from given p-values: uncorrected all four would be 'real' at 0.05."""
    import calib_metrics.functional.comparison_by_label as module

    p_values = iter([0.001, 0.02, 0.03, 0.04])
    signs = iter([-1.0, 1.0, -1.0, 1.0])

    def fake(*args, **kwargs):
        one = torch.tensor(1.0, dtype=torch.float64)
        d = torch.tensor(next(signs), dtype=torch.float64)
        return module.ComparisonResult(d, d, d, torch.tensor(next(p_values)), one, one), d

    monkeypatch.setattr(module, "compare_item_pairs", fake)
    labels = torch.arange(4).repeat_interleave(50)  # labels large enough to be called
    pairs = (torch.rand(200), torch.rand(200), torch.ones(200))
    holm = compare_calibration_by_label(*pairs, labels)
    # Holm: 0.001*4 = 0.004 real; 0.02*3 = 0.06 stops the walk.
    assert holm.verdict.tolist() == [-1, 0, 0, 0]
    assert (holm.a_better, holm.b_better, holm.not_distinguishable) == (1, 0, 3)
    p_values, signs = iter([0.001, 0.02, 0.03, 0.04]), iter([-1.0, 1.0, -1.0, 1.0])
    bh = compare_calibration_by_label(*pairs, labels, correction="bh")
    # BH: 0.04 <= 4 * 0.05 / 4, so all four are discoveries.
    assert bh.verdict.tolist() == [-1, 1, -1, 1]
    assert (bh.a_better, bh.b_better, bh.not_distinguishable) == (2, 2, 0)


def _refitted_on_its_labels(q: Tensor, y: Tensor, bin_size: int) -> Tensor:
    """q shifted in each of its own equal-mass bins to the bin's mean label: a model whose
    binned gaps are all 0 on these labels, its debiased error far below 0 (clipped)."""
    refitted = q.clone()
    for chunk in q.argsort().split(bin_size):
        refitted[chunk] = q[chunk] + (y[chunk].mean() - q[chunk].mean())
    return refitted.clamp(1e-6, 1 - 1e-6)


def test_a_called_label_whose_errors_both_clip_to_zero_keeps_its_direction():
    """Both debiased errors clipped to 0 show a difference of 0, while every paired draw
    lies below it: the label is called by its p-value and its verdict is that side (it
    had been sign(0) = 0, "not distinguishable", at an adjusted p of 0.006: two top-100
    tag pairs of the POS reproduction)."""
    g = torch.Generator().manual_seed(3)
    q = torch.rand(5000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    a = _refitted_on_its_labels(q, y, 100)
    labels = torch.zeros_like(y, dtype=torch.long)
    res = compare_calibration_by_label(
        a, q, y, labels, n_samples=300, bin_size=100, generator=torch.Generator().manual_seed(3)
    )
    assert res.difference.tolist() == [0.0]  # both errors clipped to 0
    assert res.per_label[0].a.error == 0 and res.per_label[0].b.error == 0
    assert float(res.upper[0]) < 0 and float(res.adjusted_p_value[0]) <= 0.05
    assert res.verdict.tolist() == [-1]
    assert (res.a_better, res.b_better, res.not_distinguishable) == (1, 0, 0)
    swapped = compare_calibration_by_label(
        q, a, y, labels, n_samples=300, bin_size=100, generator=torch.Generator().manual_seed(3)
    )
    assert swapped.verdict.tolist() == [1] and float(swapped.lower[0]) > 0


def test_one_label_is_compare_calibration_itself():
    a, b, y, _, _ = _data(n_labels=2)
    a, b, y = a[:1], b[:1], y[:1]
    res = compare_calibration_by_label(
        a, b, y, torch.zeros_like(y, dtype=torch.long), n_samples=200,
        generator=torch.Generator().manual_seed(2),
    )  # fmt: skip
    ref = compare_calibration(a, b, y, n_samples=200, generator=torch.Generator().manual_seed(2))
    assert res.difference.tolist() == [ref.difference.item()]
    # m = 1: no adjustment, only the Monte Carlo p-value of 200 draws
    assert res.adjusted_p_value.tolist() == [(200 * ref.p_value.item() + 2) / 201]


def _call(**changes):
    a, b, y, labels, _ = _data(n_labels=2, n=200)
    kwargs = {"probs_a": a, "probs_b": b, "target": y, "labels": labels, "n_samples": 20}
    kwargs.update(changes)
    return compare_calibration_by_label(**kwargs)


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"labels": torch.zeros(2, 5, dtype=torch.long)}, "labels must have the shape"),
        ({"labels": torch.zeros(2, 200)}, "labels must hold integer ids"),
        ({"labels": [0, 1]}, "labels must be a tensor"),
        ({"groups": torch.zeros(2, 200)}, "groups must hold integer ids"),
        ({"groups": torch.zeros(3, dtype=torch.long)}, "groups must have the shape"),
        ({"probs_b": torch.zeros(2, 199)}, "probs_b must have the shape"),
        ({"correction": "bonferroni"}, "correction must be 'holm' or 'bh'"),
        ({"alpha": 0.0}, "alpha must be a number strictly between 0 and 1"),
        ({"alpha": True}, "alpha must be a number"),
        ({"confidence": 1.5}, "confidence"),
        ({"n_samples": 1}, "n_samples"),
        ({"norm": "l3"}, "norm"),
        ({"debias": "no"}, "debias must be True or False"),  # had been read as True
    ],
)
def test_bad_arguments_raise_value_error(changes, message):
    with pytest.raises(ValueError, match=message):
        _call(**changes)


def test_empty_input_and_bad_p_values_raise_value_error():
    empty = torch.zeros(0, dtype=torch.float64)
    with pytest.raises(ValueError, match="empty"):
        compare_calibration_by_label(empty, empty, empty, empty.long())
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        holm_adjust(torch.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match="1-d"):
        bh_adjust(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="floating point"):
        bh_adjust(torch.tensor([0, 1]))


def test_multiclass_input_is_compared_on_its_one_vs_rest_pairs() -> None:
    g = torch.Generator().manual_seed(8)
    p = torch.softmax(torch.randn(400, 3, generator=g, dtype=torch.float64), dim=-1)
    target = torch.multinomial(p, 1, generator=g).squeeze(1)
    sharp = torch.softmax(2 * p.log(), dim=-1)
    items, groups = torch.arange(400) % 2, torch.arange(400) // 4
    options = {"n_samples": 50, "bin_size": 40}
    flat = (sharp.reshape(-1), p.reshape(-1), torch.nn.functional.one_hot(target, 3).reshape(-1))
    cases = [  # (labels, groups) per item, and the per-pair class ids
        ((items, groups), (items.repeat_interleave(3), groups.repeat_interleave(3))),
        ((torch.arange(3).expand_as(p), None), (torch.arange(3).repeat(400), None)),
    ]
    for (labels, grouping), (flat_labels, flat_groups) in cases:
        got = compare_calibration_by_label(
            sharp, p, target, labels, groups=grouping,
            generator=torch.Generator().manual_seed(1), **options,
        )  # fmt: skip
        expected = compare_calibration_by_label(
            *flat, flat_labels, groups=flat_groups,
            generator=torch.Generator().manual_seed(1), **options,
        )  # fmt: skip
        assert got.labels.tolist() == expected.labels.tolist()
        for field in ("difference", "lower", "upper", "p_value"):
            assert torch.equal(getattr(got, field), getattr(expected, field)), field


def test_multiclass_input_with_misshapen_labels_says_what_to_pass() -> None:
    p = torch.softmax(torch.randn(10, 3, generator=torch.Generator().manual_seed(0)), dim=-1)
    target = torch.arange(10) % 3
    with pytest.raises(ValueError, match=r"per item \(10,\) or per one-vs-rest pair \(10, 3\)"):
        compare_calibration_by_label(p, p, target, torch.zeros(7, dtype=torch.long))
    with pytest.raises(ValueError, match=r"probs_b must have the shape of probs_a \(10, 3\)"):
        compare_calibration_by_label(p, p[:, :2], target, target)
    with pytest.raises(ValueError, match=r"multiclass probs \[..., C\] take integer class ids"):
        compare_calibration_by_label(p, p, target[:7], target[:7])


def test_labels_with_too_few_items_are_not_tested() -> None:
    # One label of 1 item and one of 2: a bootstrap over them is degenerate (with one item
    # every draw is the same: a zero-width interval and p = 0, which was counted as real).
    g = torch.Generator().manual_seed(0)
    q = torch.rand(503, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    labels = torch.cat([torch.zeros(500), torch.tensor([1.0, 2.0, 2.0])]).long()
    a = torch.where(labels == 0, q, (q + 0.3).clamp(max=1))
    r = compare_calibration_by_label(
        a, q, y, labels, n_samples=100, generator=torch.Generator().manual_seed(1)
    )
    assert r.not_tested == 2
    assert r.p_value[1:].isnan().all() and r.adjusted_p_value[1:].isnan().all()
    assert r.verdict[1:].tolist() == [0, 0] and r.b_better == 0
    # The family the correction counts is the tested label alone.
    assert r.adjusted_p_value[0].item() == pytest.approx(r.p_value[0].item())


def test_compare_calibration_on_one_item_gives_no_interval() -> None:
    t = torch.tensor
    with pytest.warns(UserWarning, match="resampling unit"):
        r = compare_calibration(t([0.9]), t([0.6]), t([1.0]), n_samples=50)
    assert r.difference.item() == pytest.approx(-0.3)
    assert r.lower.isnan() and r.upper.isnan() and r.p_value.isnan()


def test_mode_and_unknown_options_are_named_up_front() -> None:
    # mode= went on to each label's already one-vs-rest pairs and failed there, naming
    # flattened shapes the caller never passed; an unknown option named compare_calibration.
    p = torch.softmax(torch.randn(40, 3, generator=torch.Generator().manual_seed(0)), -1)
    target = torch.arange(40) % 3
    classes = torch.arange(3).expand_as(p)
    for mode in ("top_label", "classwise"):
        with pytest.raises(ValueError, match="takes no mode="):
            compare_calibration_by_label(p, p.flip(-1), target, classes, mode=mode)
    with pytest.raises(TypeError, match=r"compare_calibration_by_label\(\) got .*'foo'"):
        compare_calibration_by_label(p, p.flip(-1), target, classes, foo=1)


def _exchangeable(seed: int, n_labels: int = 100, per_label: int = 20):
    """Two noisy copies of one calibrated model: no label has a real difference."""
    g = torch.Generator().manual_seed(seed)
    n = n_labels * per_label
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    a = (q + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)).clamp(0, 1)
    b = (q + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)).clamp(0, 1)
    return a, b, y, torch.arange(n) // per_label, g


def test_a_p_value_of_zero_is_a_bound_not_a_call() -> None:
    """With 300 draws a p-value of 0 says only p < 2/300: Holm over 100 labels, which needs
    p <= 0.0005, must not call such a label (corrected as exact 0, one of 100 labels
    without a real difference was called better, and a user was told FWER <= 0.05)."""
    a, b, y, labels, g = _exchangeable(seed=1)
    with pytest.warns(UserWarning, match=r"no label can be called.*n_samples=3999 or more"):
        res = compare_calibration_by_label(
            a, b, y, labels, n_samples=300, generator=g, min_units=10
        )
    assert bool((res.p_value == 0).any())  # a label here has p = 0: no draw reached 0
    assert (res.a_better, res.b_better) == (0, 0)
    assert float(res.adjusted_p_value.min()) >= 100 * 2 / 301 - 1e-12


def test_monte_carlo_p_values_are_phipson_smyth() -> None:
    """(k + 1)/(S + 1) on the rarer side, doubled, from the share p = 2k/S."""
    draws = 400
    for k in (0, 1, 7, 200):
        p = torch.tensor([min(1.0, 2 * k / draws)], dtype=torch.float64)
        expected = min(1.0, 2 * (k + 1) / (draws + 1))
        assert monte_carlo_p_values(p, draws).item() == pytest.approx(expected, rel=1e-12)
    nan = torch.tensor([float("nan")], dtype=torch.float64)
    assert monte_carlo_p_values(nan, draws).isnan().all()


def test_enough_draws_give_no_warning_and_still_call_real_differences() -> None:
    """Four labels, two miscalibrated: 300 draws resolve Holm's 0.05/4, so no warning."""
    a, b, y, labels, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = compare_calibration_by_label(
            a, b, y, labels, n_samples=300, generator=torch.Generator().manual_seed(1)
        )
    assert (res.a_better, res.b_better) == (1, 1)


@pytest.mark.parametrize(
    "correction,alpha,labels,draws",
    [("holm", 0.03, 9, 300), ("bh", 0.05, 3, 20), ("holm", 0.05, 100, 2000)],
)
def test_the_draws_the_warning_asks_for_are_the_fewest_that_can_call(
    correction, alpha, labels, draws
) -> None:
    """The count came from a formula whose rounding could differ from the test itself:
    Holm over 9 labels at 0.03 was told 599 draws, at which it still could call none."""
    from calib_metrics.functional.comparison_by_label import (
        _can_call,
        _warn_if_none_can_be_called,
    )

    with pytest.warns(UserWarning, match="no label can be called") as caught:
        _warn_if_none_can_be_called(labels, correction, alpha, draws)
    needed = int(re.search(r"n_samples=(\d+) or more", str(caught[0].message)).group(1))
    assert _can_call(labels, correction, alpha, needed)
    assert not _can_call(labels, correction, alpha, needed - 1)


@pytest.mark.parametrize(
    ("correction", "alpha", "labels", "advice"),
    [
        ("holm", 1e-7, 2, "use alpha=4e-07 or more"),
        ("holm", 1e-8, 5, "use alpha=1e-06 or more"),
        ("bh", 1e-8, 2, "use alpha=2e-07 or more"),
    ],
)
def test_past_the_most_draws_the_warning_asks_for_none(correction, alpha, labels, advice) -> None:
    """At alpha=1e-7 the warning had said "use n_samples=39999999 or more", which the
    library then refuses (MAX_DRAWS): it now says that no allowed number of draws can, and
    the smallest alpha that can. Not even one label is callable there, so "or fewer labels"
    (which it had added under Holm) is not offered."""
    from calib_metrics.functional.comparison_by_label import _can_call, _warn_if_none_can_be_called
    from calib_metrics.functional.intervals import MAX_DRAWS

    assert not _can_call(1, correction, alpha, MAX_DRAWS)
    with pytest.warns(UserWarning, match="no label can be called") as caught:
        _warn_if_none_can_be_called(labels, correction, alpha, 50)
    said = str(caught[0].message)
    assert "use n_samples" not in said and "labels or fewer" not in said
    assert said.endswith(f"even n_samples={MAX_DRAWS}, the most, cannot call one: {advice}")
    smallest = float(advice.split("=")[1].split()[0])
    assert _can_call(labels, correction, smallest, MAX_DRAWS)


def test_past_the_most_draws_holm_names_how_many_labels_it_can_call() -> None:
    """At alpha=1e-6 MAX_DRAWS draws can call one label under Holm but not one of 20: the
    warning names the most it calls, ⌊alpha (S + 1)/2⌋ = 5, and the smallest alpha for 20."""
    from calib_metrics.functional.comparison_by_label import _can_call, _warn_if_none_can_be_called
    from calib_metrics.functional.intervals import MAX_DRAWS

    assert _can_call(5, "holm", 1e-6, MAX_DRAWS) and not _can_call(6, "holm", 1e-6, MAX_DRAWS)
    with pytest.warns(UserWarning, match="no label can be called") as caught:
        _warn_if_none_can_be_called(20, "holm", 1e-6, 50)
    assert str(caught[0].message).endswith(
        f"even n_samples={MAX_DRAWS}, the most, cannot call one of 20 labels (holm calls at most "
        "5 at this alpha): use alpha=4e-06 or more, or 5 labels or fewer"
    )
    assert _can_call(20, "holm", 4e-6, MAX_DRAWS)


def test_at_the_most_draws_the_warning_still_asks_for_them() -> None:
    """A level that MAX_DRAWS draws can reach keeps its count (the bound is allowed)."""
    from calib_metrics.functional.comparison_by_label import _can_call, _warn_if_none_can_be_called
    from calib_metrics.functional.intervals import MAX_DRAWS

    alpha = 4 / (MAX_DRAWS + 1)  # holm over 2 labels: exactly MAX_DRAWS draws' floor
    assert _can_call(2, "holm", alpha, MAX_DRAWS)
    with pytest.warns(UserWarning, match="no label can be called") as caught:
        _warn_if_none_can_be_called(2, "holm", alpha, 50)
    needed = int(re.search(r"use n_samples=(\d+) or more", str(caught[0].message)).group(1))
    assert needed <= MAX_DRAWS and not _can_call(2, "holm", alpha, needed - 1)


def _labels_of(sizes: list[int], seed: int = 0):
    """Two noisy copies of one calibrated model over labels of these sizes (pairs)."""
    g = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    a = (q + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)).clamp(0, 1)
    labels = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    return a, q, y, labels, g


@pytest.mark.parametrize(
    "min_units,said",
    [
        (50, r"2 of 3 labels have fewer than min_units=50 resampling units \(as few as 3\) "
         r"and are not called: the bootstrap p-values of those of 10 or more are too rough "
         r".*; min_units=10 calls those anyway; 1 of them has fewer than 10, too few for a "
         r"bootstrap interval or p-value at all, and cannot be called$"),
        (10, r"1 of 3 labels have fewer than min_units=10 resampling units \(as few as 3\) "
         r"and are not called: they have fewer than 10, too few for a bootstrap interval or "
         r"p-value at all, and cannot be called$"),
    ],
)  # fmt: skip
def test_the_small_label_warning_counts_every_label_not_tested(min_units, said) -> None:
    """Labels of 3 and 37 pairs under min_units=50: ``not_tested`` counted 2 but the
    warning said "1 of 3 labels ... (as few as 37) ... min_units=10 calls them anyway",
    silently leaving out the label under MIN_UNITS (10), which has no p-value at all and
    which no min_units can call; with min_units=10 that label had no warning."""
    a, b, y, labels, g = _labels_of([3, 37, 200])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = compare_calibration_by_label(
            a, b, y, labels, n_samples=200, generator=g, min_units=min_units
        )
    texts = [str(w.message) for w in caught if "not called" in str(w.message)]
    assert len(texts) == 1 and re.search(said, texts[0]), texts
    assert int(re.search(r"(\d+) of 3 labels", texts[0]).group(1)) == res.not_tested
    assert bool(res.p_value[0].isnan()) and bool(res.p_value[1:].isfinite().all())


def test_small_labels_are_reported_but_not_called() -> None:
    """Labels of 20-30 pairs gave Holm a family-wise error of 0.09-0.13 at enough draws
    (docs/coverage.md); they had been called, with a warning. Now they stay out of the
    correction's family unless min_units= says otherwise."""
    a, b, y, labels, g = _exchangeable(seed=0, n_labels=3, per_label=20)
    a[:20], b[:20] = y[:20], 1 - y[:20]  # label 0: a is perfect, b always wrong
    with pytest.warns(
        UserWarning, match="3 of 3 labels have fewer than min_units=50 .* not called"
    ):
        res = compare_calibration_by_label(a, b, y, labels, n_samples=2000, generator=g)
    assert res.not_tested == 3 and (res.a_better, res.b_better) == (0, 0)
    assert bool(res.p_value.isfinite().all()) and bool(res.adjusted_p_value.isnan().all())
    assert res.p_value[0].item() < 0.001  # reported: the user can read it
    g = torch.Generator().manual_seed(0)
    with pytest.warns(UserWarning, match="3 of the called labels have fewer than 50"):
        called = compare_calibration_by_label(
            a, b, y, labels, n_samples=2000, generator=g, min_units=10
        )
    assert called.not_tested == 0 and called.a_better == 1
    with pytest.raises(ValueError, match="min_units must be an integer >= 10"):
        compare_calibration_by_label(a, b, y, labels, min_units=5)
    a, b, y, labels, _ = _data()  # 3,000 pairs a label
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare_calibration_by_label(
            a, b, y, labels, n_samples=300, generator=torch.Generator().manual_seed(1)
        )


def test_adjusted_p_values_exactly_at_alpha_are_called() -> None:
    """Three labels whose every draw lies on one side: Monte Carlo p = 2/(S + 1) = 0.05 at
    S = 39, which BH leaves at 0.05 exactly. It had made it 0.05000000000000001 by
    rounding, called none and warned that S = 40 was needed."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(3, 400, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    labels = torch.arange(3).unsqueeze(1).expand_as(q)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = compare_calibration_by_label(
            q.sqrt(), q, y, labels, n_samples=39, correction="bh",
            generator=torch.Generator().manual_seed(0),
        )  # fmt: skip
    assert res.p_value.tolist() == [0.0, 0.0, 0.0]
    assert res.adjusted_p_value.tolist() == [0.05, 0.05, 0.05]
    assert res.b_better == 3


def test_meta_inputs_and_a_numpy_alpha() -> None:
    """Meta inputs had reached torch.unique (NotImplementedError), and alpha as numpy's
    float32 (a config array's) had been "not a number strictly between 0 and 1"."""
    import numpy as np

    g = torch.Generator().manual_seed(0)
    q = torch.rand(400, generator=g, dtype=torch.float64)
    y, labels = torch.bernoulli(q, generator=g), torch.arange(400) % 2
    meta = [t.to("meta") for t in (q, q, y, labels)]
    with pytest.raises(ValueError, match="probs_a is on the meta device"):
        compare_calibration_by_label(*meta)
    r = compare_calibration_by_label(q**0.7, q, y, labels, alpha=np.float32(0.05), n_samples=50)
    assert r.labels.tolist() == [0, 1]


def test_the_none_called_warning_tells_its_two_numbers_apart() -> None:
    """2/799 and 0.05/20 had both read 0.0025: "at least 0.0025 ... needs 0.0025 or less"."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y, labels = torch.bernoulli(q, generator=g), torch.arange(2000) % 20
    said = "= 0.002503, and holm over 20 labels needs 0.0025 or less; use n_samples=799"
    with pytest.warns(UserWarning, match=re.escape(said)):
        compare_calibration_by_label(q**0.7, q, y, labels, n_samples=798, generator=g)


def test_a_label_of_multiclass_items_is_resampled_item_by_item_as_the_whole_comparison():
    """Per-label comparisons of [N, C] input had kept resampling pair by pair (the whole
    comparison resamples items): one label over every item is now the whole comparison."""
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(2 * torch.randn(800, 3, generator=g, dtype=torch.float64), -1)
    t = torch.multinomial(p, 1, generator=g).squeeze(1)
    sharp = torch.softmax(1.5 * p.log(), -1)
    one_label = torch.zeros_like(t)
    res = compare_calibration_by_label(
        sharp, p, t, one_label, n_samples=200, generator=torch.Generator().manual_seed(3)
    )
    ref = compare_calibration(
        sharp, p, t, n_samples=200, generator=torch.Generator().manual_seed(3)
    )
    assert res.units.tolist() == [800]  # items, not their 2,400 pairs
    for field in ("difference", "lower", "upper", "p_value"):
        torch.testing.assert_close(getattr(res.per_label[0], field), getattr(ref, field))


@pytest.mark.parametrize("unnormalised", ["probs_a", "probs_b"])
def test_each_models_row_sums_are_checked_by_name(unnormalised: str) -> None:
    """Only probs_a's rows had been checked (and called "probs"): model b's unnormalised
    scores went into the table without a word, and swapping a and b changed that."""
    g = torch.Generator().manual_seed(21)
    p = torch.softmax(torch.randn(600, 3, generator=g, dtype=torch.float64), -1)
    c = torch.multinomial(p, 1, generator=g).squeeze(1)
    models = {"probs_a": p, "probs_b": p}
    models[unnormalised] = p * 0.5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare_calibration_by_label(
            models["probs_a"], models["probs_b"], c, torch.arange(3).expand_as(p), n_samples=200
        )
    said = [str(w.message) for w in caught if "do not sum to 1" in str(w.message)]
    assert len(said) == 1 and said[0].startswith(f"{unnormalised}: rows")
    assert all(w.filename == __file__ for w in caught if "do not sum to 1" in str(w.message))


def test_labels_are_ids_as_the_metric_takes_them() -> None:
    """uint64 labels past int64's maximum had come back wrapped to negative ids, and bool
    labels passed here but not at CalibrationComparison.update."""
    g = torch.Generator().manual_seed(2)
    q = torch.rand(600, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    upper = q > 0.5
    big = torch.where(upper, torch.tensor(2**63 + 5, dtype=torch.uint64), 3)
    with pytest.raises(ValueError, match=r"labels holds 9223372036854775813 .*int64's maximum"):
        compare_calibration_by_label(q.sqrt(), q, y, big, n_samples=100)
    with pytest.raises(ValueError, match=r"labels must hold integer ids, got dtype torch\.bool"):
        compare_calibration_by_label(q.sqrt(), q, y, upper, n_samples=100)
    from calib_metrics import CalibrationComparison

    with pytest.raises(ValueError, match=r"labels must hold integer ids, got dtype torch\.bool"):
        CalibrationComparison().update(q.sqrt(), q, y, labels=upper)
    small = torch.where(upper, 70000, 3).to(torch.uint32)  # below int64's maximum: taken
    result = compare_calibration_by_label(q.sqrt(), q, y, small, n_samples=100)
    assert result.labels.tolist() == [3, 70000]
