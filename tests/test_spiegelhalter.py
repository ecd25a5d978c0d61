"""Spiegelhalter's z test: the statistic by its Brier-score definition, the p-value by
scipy, and its size and power by simulation."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from scipy import stats

from calib_metrics.functional.spiegelhalter import spiegelhalter_test, spiegelhalter_z


def test_z_is_the_standardised_brier_score_and_p_is_two_sided() -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.rand(500, generator=g, dtype=torch.float64)
    y = torch.bernoulli((q + 0.05).clamp(0, 1), generator=g)
    brier = ((y - q) ** 2).sum()
    mean = (q * (1 - q)).sum()
    variance = ((1 - 2 * q) ** 2 * q * (1 - q)).sum()
    expected_z = ((brier - mean) / variance.sqrt()).item()
    result = spiegelhalter_test(q.float(), y.long())
    assert result.z.item() == pytest.approx(expected_z, rel=1e-6)  # float32 input
    assert result.p_value.item() == pytest.approx(2 * stats.norm.sf(abs(expected_z)), rel=1e-5)


def test_size_and_power_by_simulation() -> None:
    # 4000 calibrated data sets of 300 pairs, all at once: the rejection rate at
    # α = 0.05 must be 0.05 within Monte Carlo error (sd 0.0034), and p uniform.
    g = torch.Generator().manual_seed(2)
    q = torch.rand(4000, 300, generator=g, dtype=torch.float64) * 0.9 + 0.05
    y = torch.bernoulli(q, generator=g)
    p = torch.special.erfc(spiegelhalter_z(q, y).abs() / math.sqrt(2))
    assert 0.04 < (p < 0.05).double().mean().item() < 0.06
    assert stats.kstest(p.numpy(), "uniform").pvalue > 0.01
    # Overconfident predictions (true frequency pulled towards 1/2) are caught.
    y_bad = torch.bernoulli(0.5 + 0.7 * (q - 0.5), generator=g)
    p_bad = torch.special.erfc(spiegelhalter_z(q, y_bad).abs() / math.sqrt(2))
    assert (p_bad < 0.05).double().mean().item() > 0.9


def test_multiclass_modes() -> None:
    probs = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.6, 0.3, 0.1]])
    target = torch.tensor([0, 2, 2, 1])
    ovr = spiegelhalter_test(probs, target)
    flat = spiegelhalter_test(
        probs.reshape(-1),
        torch.nn.functional.one_hot(target, 3).reshape(-1),
        groups=torch.arange(4).repeat_interleave(3),  # one-vs-rest input: grouped by item
    )
    assert ovr.z.item() == pytest.approx(flat.z.item(), rel=1e-12)
    top = spiegelhalter_test(probs, target, mode="top_label")
    conf, pred = probs.max(-1)
    assert top.z.item() == spiegelhalter_test(conf, (pred == target).long()).z.item()
    with pytest.raises(ValueError, match="one test per class"):
        spiegelhalter_test(probs, target, mode="classwise")


def test_errors() -> None:
    with pytest.raises(ValueError, match="undefined when every probability is 0, 1/2 or 1"):
        spiegelhalter_test(torch.tensor([0.0, 0.5, 1.0]), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="binary"):
        spiegelhalter_test(torch.tensor([0.2, 0.4]), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="empty"):
        spiegelhalter_test(torch.tensor([]), torch.tensor([]))


def _brute_force_grouped_z(q: list[float], y: list[float], groups: list[int]) -> float:
    """The cluster-robust z by the definition, one Python loop: S_g = Σ_{i in g} (y − q)(1 − 2q),
    z = Σ_g S_g / sqrt(Σ_g S_g²)."""
    per_group: dict[int, float] = {}
    for qi, yi, gi in zip(q, y, groups, strict=True):
        per_group[gi] = per_group.get(gi, 0.0) + (yi - qi) * (1 - 2 * qi)
    total = sum(per_group.values())
    return total / math.sqrt(sum(s * s for s in per_group.values()))


def test_grouped_z_equals_the_brute_force_cluster_robust_statistic() -> None:
    g = torch.Generator().manual_seed(4)
    q = torch.rand(300, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    groups = torch.randint(0, 37, (300,), generator=g) * 5 - 40  # unsorted, negative, gaps
    expected = _brute_force_grouped_z(q.tolist(), y.tolist(), groups.tolist())
    result = spiegelhalter_test(q.reshape(20, 15), y.reshape(20, 15), groups=groups.reshape(20, 15))
    assert result.z.item() == pytest.approx(expected, rel=1e-12)
    assert result.p_value.item() == pytest.approx(2 * stats.norm.sf(abs(expected)), rel=1e-9)
    # Groups of one pair: the empirical form of the independent variance.
    singles = spiegelhalter_test(q, y, groups=torch.arange(300)).z.item()
    expected = _brute_force_grouped_z(q.tolist(), y.tolist(), list(range(300)))
    assert singles == pytest.approx(expected, rel=1e-12)


def test_grouped_variance_keeps_the_size_under_correlated_labels() -> None:
    # 1000 calibrated data sets of 40 groups of 25 pairs whose labels share a group-level
    # probit shift (ρ = 0.5): the independent variance rejects at α = 0.05 about twice too
    # often; the cluster-robust one keeps 0.05 (Monte Carlo sd 0.007).
    g = torch.Generator().manual_seed(5)
    groups = torch.arange(1000) // 25
    rejected = torch.zeros(2)
    for _ in range(1000):
        q = torch.rand(1000, generator=g, dtype=torch.float64) * 0.9 + 0.05
        shift = torch.randn(40, generator=g, dtype=torch.float64).index_select(0, groups)
        noise = torch.randn(1000, generator=g, dtype=torch.float64)
        y = (torch.special.ndtr(math.sqrt(0.5) * (shift + noise)) < q).double()
        z = torch.stack([spiegelhalter_z(q, y), spiegelhalter_z(q, y, groups)])
        rejected += (torch.special.erfc(z.abs() / math.sqrt(2)) < 0.05).double()
    independent, robust = (rejected / 1000).tolist()
    assert independent > 0.09
    assert 0.035 < robust < 0.065


def test_grouped_one_vs_rest_follows_the_item() -> None:
    g = torch.Generator().manual_seed(6)
    probs = torch.softmax(torch.randn(200, 4, generator=g), dim=-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    items = torch.arange(200)
    multiclass = spiegelhalter_test(probs, target, groups=items)
    flat = spiegelhalter_test(
        probs.reshape(-1),
        torch.nn.functional.one_hot(target, 4).reshape(-1),
        groups=items.repeat_interleave(4),
    )
    assert multiclass.z.item() == pytest.approx(flat.z.item(), rel=1e-12)


def test_grouped_errors() -> None:
    q, y = torch.tensor([0.2, 0.4, 0.7]), torch.tensor([0, 1, 1])
    with pytest.raises(ValueError, match="at least 2 groups"):
        spiegelhalter_test(q, y, groups=torch.tensor([3, 3, 3]))
    with pytest.raises(ValueError, match="one id per pair"):
        spiegelhalter_test(q, y, groups=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="integer ids"):
        spiegelhalter_test(q, y, groups=torch.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="every group's contribution"):
        # (1 − 1/4)(1 − 1/2) + 3·(0 − 1/4)(1 − 1/2) = 0 in each group, exactly
        quarter = torch.full((8,), 0.25, dtype=torch.float64)
        one_hit = torch.tensor([1.0, 0.0, 0.0, 0.0] * 2, dtype=torch.float64)
        spiegelhalter_test(quarter, one_hit, groups=torch.arange(8) // 4)


@pytest.mark.parametrize(("n_groups", "can_reject"), [(3, False), (5, True)])
def test_few_groups_warn_that_the_grouped_z_is_bounded(n_groups, can_reject) -> None:
    # z = Σ S_g / √(Σ S_g²) ≤ √G: predicting 0.1 for 3,000 positives (independent z = 164)
    # gave p = 0.083 with 3 groups, silently.
    q, y = torch.full((3000,), 0.1, dtype=torch.float64), torch.ones(3000)
    groups = torch.arange(3000) % n_groups
    with pytest.warns(UserWarning, match=rf"{n_groups} groups; its cluster-robust z is at most"):
        result = spiegelhalter_test(q, y, groups=groups)
    assert result.z.item() == pytest.approx(math.sqrt(n_groups))
    assert (result.p_value.item() < 0.05) == can_reject
    # Multiclass one-vs-rest input is grouped by item: 3 items always wrong at 0.98.
    probs = torch.tensor([[0.98, 0.01, 0.01]] * 3, dtype=torch.float64)
    with pytest.warns(UserWarning, match="3 items .* cannot reach 0.05"):
        spiegelhalter_test(probs, torch.tensor([1, 1, 1]))


def test_enough_groups_do_not_warn() -> None:
    g = torch.Generator().manual_seed(7)
    q = torch.rand(1000, generator=g, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spiegelhalter_test(q, torch.bernoulli(q, generator=g), groups=torch.arange(1000) % 10)


def test_item_sums_drop_padding_rows_whatever_they_hold() -> None:
    """A streaming metric folds padding rows with weight 0: their NaN must stay out."""
    from calib_metrics.functional.spiegelhalter import item_score_sums, spiegelhalter_from_item_sums

    g = torch.Generator().manual_seed(4)
    probs = torch.softmax(torch.randn(400, 3, generator=g, dtype=torch.float64), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    spoiled = probs.clone()
    spoiled[::5] = float("nan")
    keep = torch.ones(400, dtype=torch.bool)
    keep[::5] = False
    sums = item_score_sums(spoiled, target, keep)
    assert sums[0].item() == 320 and bool(sums.isfinite().all())
    got = spiegelhalter_from_item_sums(sums)
    want = spiegelhalter_test(probs[keep], target[keep])
    torch.testing.assert_close(got.z, want.z)
    torch.testing.assert_close(got.p_value, want.p_value)
    with pytest.raises(ValueError, match="needs at least 2 items"):
        spiegelhalter_from_item_sums(item_score_sums(probs[:1], target[:1]))


@pytest.mark.parametrize("n_pairs", [1, 3, 9])
def test_few_pairs_warn_that_the_p_value_says_little(n_pairs) -> None:
    # One pair at q = 0.9 with y = 0 gave z = 3, p = 0.0027, silently, where P(y = 0) = 0.1.
    q, y = torch.full((n_pairs,), 0.9, dtype=torch.float64), torch.zeros(n_pairs)
    with pytest.warns(UserWarning, match=rf"{n_pairs} pairs?; its z is far from normal"):
        spiegelhalter_test(q, y)


def test_ten_pairs_do_not_warn() -> None:
    q = torch.linspace(0.05, 0.95, 10, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spiegelhalter_test(q, (q > 0.5).double())


def _one_hot_data(n: int = 300, classes: int = 3):
    g = torch.Generator().manual_seed(3)
    probs = torch.randn(n, classes, generator=g, dtype=torch.float64).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    return probs, target, torch.nn.functional.one_hot(target, classes)


def test_a_one_hot_target_beside_probability_rows_warns_once() -> None:
    # Read as independent pairs, not grouped by item as class ids are: z moves.
    probs, target, one_hot = _one_hot_data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        as_pairs = spiegelhalter_test(probs, one_hot)
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and "target looks one-hot" in said[0]
    assert "pass target.argmax(-1)" in said[0]
    assert as_pairs.z != spiegelhalter_test(probs, target).z


@pytest.mark.parametrize("case", ["multi-label", "no label", "scores"])
def test_genuine_multi_label_input_does_not_warn(case) -> None:
    probs, _, one_hot = _one_hot_data()
    if case == "multi-label":
        one_hot = one_hot.clone()
        one_hot[0] = 1  # a row of several labels
    elif case == "no label":
        one_hot = one_hot.clone()
        one_hot[0] = 0
    else:
        probs = probs * 0.5 + 0.2  # independent scores: rows sum to 1.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spiegelhalter_test(probs, one_hot)


_T = torch.tensor


@pytest.mark.parametrize(
    ("cells", "said"),
    [
        ((_T([0.2, 0.9]), _T([-1.0, 50.0]), _T([0.0, 44.0])), "count >= 0"),
        ((_T([0.2, 0.9]), _T([10.0, 50.0]), _T([11.0, 44.0])), "sum_y <= count"),
        ((_T([1.2, 0.9]), _T([10.0, 50.0]), _T([1.0, 44.0])), r"pred_mean must lie in \[0, 1\]"),
        ((_T([float("nan"), 0.9]), _T([0.0, 50.0]), _T([0.0, 44.0])), "pred_mean holds NaN"),
        ((_T([0.2, 0.9]), _T([10.0, 50.0, 3.0]), _T([1.0, 44.0])), "must have one shape"),
        ((_T([0.2, 0.9]), _T([0.0, 0.0]), _T([0.0, 0.0])), "empty histogram"),
    ],
)
def test_the_histogram_form_checks_its_cells(cells, said) -> None:
    from calib_metrics.functional.spiegelhalter import spiegelhalter_from_histogram

    with pytest.raises(ValueError, match=said):
        spiegelhalter_from_histogram(*cells)
