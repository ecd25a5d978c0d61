"""compare_calibration: paired draws against an explicit loop, symmetry, groups, errors."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.functional import calibration_error, compare_calibration


def _data(n: int = 600, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    worse = (q + 0.15 * torch.rand(n, generator=g, dtype=torch.float64)).clamp(max=1)
    return worse, q, y


def _weighted_plugin(q, y, weight, bin_size):
    """Plug-in error of bins fixed on the data (sorted runs of bin_size), pairs reweighted."""
    order = torch.argsort(q)
    n_bins = q.numel() // bin_size
    rank_bin = (torch.arange(q.numel()) // bin_size).clamp(max=n_bins - 1)
    index = torch.empty_like(rank_bin)
    index[order] = rank_bin
    count = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, index, weight)
    sum_q = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, index, weight * q)
    sum_y = torch.zeros(n_bins, dtype=torch.float64).index_add_(0, index, weight * y)
    gap = (sum_q - sum_y) / count.clamp_min(1)
    return ((count / count.sum()) * gap**2).sum().sqrt()


def test_paired_draws_equal_an_explicit_loop() -> None:
    a, b, y = _data()
    options = {"bin_size": 100, "debias": False, "n_samples": 300}
    result = compare_calibration(a, b, y, generator=torch.Generator().manual_seed(3), **options)
    # The same Poisson weights, one column per draw, applied to both models in a loop.
    weights = torch.poisson(
        torch.ones((y.numel(), 300), dtype=torch.float64),
        generator=torch.Generator().manual_seed(3),
    )
    diffs = torch.stack(
        [_weighted_plugin(a, y, w, 100) - _weighted_plugin(b, y, w, 100) for w in weights.T]
    )
    expected = calibration_error(a, y, bin_size=100, debias=False) - calibration_error(
        b, y, bin_size=100, debias=False
    )
    assert result.difference.item() == pytest.approx(expected.item(), abs=1e-12)
    diffs = diffs + (expected - torch.quantile(diffs, 0.5))  # the draws' spread around the estimate
    lower, upper = torch.quantile(diffs, torch.tensor([0.025, 0.975], dtype=torch.float64))
    assert result.lower.item() == pytest.approx(lower.item(), abs=1e-12)
    assert result.upper.item() == pytest.approx(upper.item(), abs=1e-12)
    p = min(1.0, 2 * min((diffs <= 0).double().mean().item(), (diffs >= 0).double().mean().item()))
    assert result.p_value.item() == pytest.approx(p)


def test_swapping_the_models_mirrors_the_result() -> None:
    a, b, y = _data(seed=1)
    ab = compare_calibration(a, b, y, n_samples=400, generator=torch.Generator().manual_seed(0))
    ba = compare_calibration(b, a, y, n_samples=400, generator=torch.Generator().manual_seed(0))
    assert ab.difference.item() == pytest.approx(-ba.difference.item())
    assert ab.lower.item() == pytest.approx(-ba.upper.item())
    assert ab.p_value.item() == pytest.approx(ba.p_value.item())
    assert ab.a.error.item() == pytest.approx(ba.b.error.item())


def test_a_clearly_worse_model_is_detected_and_equal_models_are_not() -> None:
    a, b, y = _data(n=20000, seed=2)
    worse = compare_calibration(a, b, y, n_samples=500, generator=torch.Generator().manual_seed(0))
    assert worse.lower > 0 and worse.p_value < 0.01
    same = compare_calibration(b, b, y, n_samples=200, generator=torch.Generator().manual_seed(0))
    assert same.difference.item() == 0 and same.p_value.item() == 1.0
    assert same.lower.item() == same.upper.item() == 0


def test_groups_share_one_weight_per_group_in_both_models() -> None:
    g = torch.Generator().manual_seed(4)
    n_groups, size = 60, 10
    q = torch.rand(n_groups * size, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    other = (q * 0.8 + 0.1).clamp(0, 1)
    groups = torch.arange(n_groups).repeat_interleave(size)
    options = {"n_samples": 200, "debias": False, "bin_size": 100}
    result = compare_calibration(
        q, other, y, groups=groups, generator=torch.Generator().manual_seed(5), **options
    )
    weights = torch.poisson(
        torch.ones((n_groups, 200), dtype=torch.float64), generator=torch.Generator().manual_seed(5)
    ).repeat_interleave(size, dim=0)
    diffs = torch.stack(
        [_weighted_plugin(q, y, w, 100) - _weighted_plugin(other, y, w, 100) for w in weights.T]
    )
    diffs = diffs + (result.difference - torch.quantile(diffs, 0.5))
    lower, upper = torch.quantile(diffs, torch.tensor([0.025, 0.975], dtype=torch.float64))
    assert result.lower.item() == pytest.approx(lower.item(), abs=1e-12)
    assert result.upper.item() == pytest.approx(upper.item(), abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"probs_b": torch.rand(9)}, "same items"),
        ({"probs_a": torch.full((10,), 1.5)}, r"\[0, 1\]"),
        ({"confidence": 1.5}, "confidence"),
        ({"n_samples": 1}, "n_samples"),
        ({"groups": torch.rand(10)}, "integer"),
    ],
)
def test_bad_input_is_a_clear_value_error(kwargs, message) -> None:
    args = {"probs_a": torch.rand(10), "probs_b": torch.rand(10), "target": torch.ones(10)}
    args |= kwargs
    with pytest.raises(ValueError, match=message):
        compare_calibration(**args)


def _multiclass(n: int = 3000, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(2.5 * torch.randn(n, 4, generator=g, dtype=torch.float64), -1)
    c = torch.multinomial(p, 1, generator=g).squeeze(1)
    sharp = torch.softmax(2 * p.log(), -1)
    return sharp, p, c


def test_top_label_compares_each_models_own_confidence_and_correctness() -> None:
    sharp, p, c = _multiclass()
    got = compare_calibration(
        sharp, p, c, mode="top_label", n_samples=200, generator=torch.Generator().manual_seed(1)
    )
    # By hand: each model's (max prob, argmax correct) pairs, one unit per item.
    conf_a, pred_a = sharp.max(-1)
    conf_b, pred_b = p.max(-1)
    want_a = calibration_error(conf_a, (pred_a == c).double())
    want_b = calibration_error(conf_b, (pred_b == c).double())
    torch.testing.assert_close(got.a.error, want_a)
    torch.testing.assert_close(got.b.error, want_b)
    torch.testing.assert_close(got.difference, want_a - want_b)
    assert got.a.bins.count.sum().item() == c.numel()


def test_one_vs_rest_equals_the_expanded_pairs() -> None:
    sharp, p, c = _multiclass(seed=2)
    onehot = torch.nn.functional.one_hot(c, 4).reshape(-1)
    options = {"n_samples": 200, "bin_size": 300}
    got = compare_calibration(sharp, p, c, generator=torch.Generator().manual_seed(4), **options)
    want = compare_calibration(
        sharp.reshape(-1), p.reshape(-1), onehot, generator=torch.Generator().manual_seed(4),
        **options,
    )  # fmt: skip
    for field in ("difference", "lower", "upper", "p_value"):
        torch.testing.assert_close(getattr(got, field), getattr(want, field))


def test_multiclass_groups_follow_every_pair_of_an_item() -> None:
    sharp, p, c = _multiclass(seed=3)
    items = torch.arange(c.numel()) // 10
    got = compare_calibration(
        sharp, p, c, groups=items, n_samples=200, generator=torch.Generator().manual_seed(5)
    )
    want = compare_calibration(
        sharp.reshape(-1), p.reshape(-1), torch.nn.functional.one_hot(c, 4).reshape(-1),
        groups=items.repeat_interleave(4), n_samples=200,
        generator=torch.Generator().manual_seed(5),
    )  # fmt: skip
    torch.testing.assert_close(got.lower, want.lower)
    torch.testing.assert_close(got.upper, want.upper)


@pytest.mark.parametrize(
    ("mode", "groups", "match"),
    [
        ("classwise", None, "classwise"),
        ("top_lable", None, "mode must be one of"),
        ("one_vs_rest", [0, 1], "groups must be a tensor"),
    ],
)
def test_bad_multiclass_arguments(mode, groups, match) -> None:
    sharp, p, c = _multiclass(n=50)
    with pytest.raises(ValueError, match=match):
        compare_calibration(sharp, p, c, mode=mode, groups=groups, n_samples=10)


def test_top_label_needs_class_probabilities() -> None:
    a, b, y = _data(n=50)
    with pytest.raises(ValueError, match="multiclass"):
        compare_calibration(a, b, y, mode="top_label", n_samples=10)
