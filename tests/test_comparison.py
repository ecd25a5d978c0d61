"""compare_calibration: paired draws against an explicit loop, symmetry, groups, errors."""

from __future__ import annotations

import warnings
from statistics import NormalDist

import pytest
import torch

from calib_metrics.functional import calibration_error, compare_calibration
from calib_metrics.functional.calibration import compute_bins
from calib_metrics.functional.comparison import (
    ComparisonResult,
    _unit_sums,
    comparison_units,
    resampled_ids,
    root_difference,
)


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


def _recentred_roots(draws, estimate):
    """A model's draws of its plug-in error with their squares recentred on the estimate's
    square (a draw's square carries the bins' noise twice)."""
    squares = draws.square()
    return (estimate.square() + squares - squares.mean()).clamp_min(0).sqrt()


def _plugin_draws(q_a, q_b, y, weights, bin_size):
    """Paired draws of the plug-in difference, each model's squares recentred."""
    draws = []
    for q in (q_a, q_b):
        errors = torch.stack([_weighted_plugin(q, y, w, bin_size) for w in weights.T])
        estimate = _weighted_plugin(q, y, torch.ones_like(y), bin_size)
        draws.append(_recentred_roots(errors, estimate))
    return draws[0] - draws[1]


def test_paired_draws_equal_an_explicit_loop() -> None:
    a, b, y = _data()
    options = {"bin_size": 100, "debias": False, "n_samples": 300}
    result = compare_calibration(a, b, y, generator=torch.Generator().manual_seed(3), **options)
    # The same Poisson weights, one column per draw, applied to both models in a loop.
    weights = torch.poisson(
        torch.ones((y.numel(), 300), dtype=torch.float64),
        generator=torch.Generator().manual_seed(3),
    )
    diffs = _plugin_draws(a, b, y, weights, 100)
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
    diffs = _plugin_draws(q, other, y, weights, 100)
    diffs = diffs + (result.difference - torch.quantile(diffs, 0.5))
    lower, upper = torch.quantile(diffs, torch.tensor([0.025, 0.975], dtype=torch.float64))
    assert result.lower.item() == pytest.approx(lower.item(), abs=1e-12)
    assert result.upper.item() == pytest.approx(upper.item(), abs=1e-12)


def _shifted_pair(debias: bool):
    """``compare_calibration`` of a = q + c and b = q − c (c = 0.05) on 4,000 calibrated
    pairs in bins of 100, and the sd of the difference of their squares, 4c·sqrt(Σ wᵢ²
    fᵢ(1 − fᵢ)/nᵢ) (they share their bins, so it is exact)."""
    g = torch.Generator().manual_seed(7)
    q = 0.1 + 0.8 * torch.rand(4000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    c = 0.05
    r = compare_calibration(
        q + c, q - c, y, bin_size=100, n_samples=4000, debias=debias,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    bins = compute_bins(q + c, y, bin_size=100)
    w = bins.count / bins.count.sum()
    return r, 4 * c * (w**2 * bins.freq * (1 - bins.freq) / bins.count).sum().sqrt()


def test_equal_errors_the_test_has_the_spread_of_the_difference_of_squares() -> None:
    # a = q + c and b = q − c share their bins, and their debias terms cancel, so
    # D_a − D_b = 4c·Σ wᵢ (q̄ᵢ − fᵢ) exactly: its sd is 4c·sqrt(Σ wᵢ² fᵢ(1 − fᵢ)/nᵢ). The
    # p-value must be that of z = (D_a − D_b)/sd. The single-model shrink (λ² = D₊/P, here
    # ≈ 0.56) narrowed the draws by λ and gave p = 0.02 for a z of 1.77 (p = 0.08): the
    # equal-error false-positive rate was 0.10–0.15 at α = 0.05 in the coverage study.
    r, sd = _shifted_pair(debias=True)
    z = (r.a.error**2 - r.b.error**2) / sd
    implied = NormalDist().inv_cdf(1 - r.p_value.item() / 2)
    assert 1.7 < z.item() < 1.8
    assert implied == pytest.approx(z.item(), rel=0.1)


def test_the_plug_in_test_has_the_spread_of_the_difference_of_roots() -> None:
    # As above, A_a − A_b = 4c·Σ wᵢ (q̄ᵢ − fᵢ) for the plug-in squares, and the roots'
    # difference moves by that over √A_a + √A_b. A draw's square carries the bins' noise
    # twice; its root, taken at that higher level, moved less: the draws were 0.8× the
    # spread, the p-value 0.031 for a z of 1.77, and two models of equal error were told
    # apart 0.145 of the time at α = 0.05 (N = 2000, auto bins).
    r, sd = _shifted_pair(debias=False)
    sd = sd / (r.a.error + r.b.error)
    z = (r.a.error - r.b.error) / sd
    implied = NormalDist().inv_cdf(1 - r.p_value.item() / 2)
    assert 1.7 < z.item() < 1.8
    assert implied == pytest.approx(z.item(), rel=0.1)
    assert 0.9 < ((r.upper - r.lower) / 3.92 / sd).item() < 1.15


def test_against_a_calibrated_model_the_interval_reaches_the_whole_difference() -> None:
    # b = q is calibrated (true error 0), a = q + 0.05 (true difference 0.05). b's error
    # √D₊ is biased up (≈ 0.007 here), so an interval centred on error(a) − error(b) fell
    # short of the truth (upper end 0.0492 on this data); the draws of Δ carried with m*
    # reach the upper end of √Δ.
    g = torch.Generator().manual_seed(11)
    q = 0.1 + 0.8 * torch.rand(10_000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    r = compare_calibration(
        q + 0.05, q, y, bin_size=100, n_samples=2000, generator=torch.Generator().manual_seed(0)
    )
    assert r.b.error > 0.008  # the calibrated model's estimate is off 0 on this data
    assert r.lower < r.difference < 0.05 < r.upper


def test_a_tied_calibrated_model_is_not_called_better_than_an_untied_one() -> None:
    # Both calibrated (true errors 0). Model a ties every item at ½, so its 40 bins of 100
    # each get the mean label of all 4000: the debias term f(1 − f)/99 over-subtracts and
    # D_a averages −0.0025, which read as "a is better" (interval [−0.073, −0.026],
    # p = 0.012 on these data) until the draws shared tie groups over their bins.
    g = torch.Generator().manual_seed(0)
    y = torch.bernoulli(torch.full((4000,), 0.5, dtype=torch.float64), generator=g)
    tied = torch.full((4000,), 0.5, dtype=torch.float64)
    untied = 0.5 + 1e-9 * torch.randn(4000, generator=g, dtype=torch.float64)
    r = compare_calibration(
        tied, untied, y, bin_size=100, n_samples=1000, generator=torch.Generator().manual_seed(0)
    )
    assert r.lower < 0 < r.upper and r.p_value > 0.2


def test_unit_sums_share_a_tie_group_over_its_bins_as_the_tie_rule_does() -> None:
    # Per bin, the shared unit sums are the bins (the tie rule's mean label on every
    # part of a split group), and one group's weight moves all of its bins together.
    g = torch.Generator().manual_seed(3)
    u = torch.rand(500, generator=g, dtype=torch.float64)
    q = torch.where(torch.rand(500, generator=g) < 0.6, 0.3, u)
    y = torch.bernoulli(q, generator=g)
    options = {"binning": "adaptive", "bin_size": 40, "n_bins": 15}
    bins, matrix = _unit_sums(q, y, torch.arange(500), 500, options)
    sums = matrix.to_dense().sum(dim=1).reshape(3, -1)
    torch.testing.assert_close(sums[0], bins.count)
    torch.testing.assert_close(sums[1] / sums[0], bins.pred_mean)
    torch.testing.assert_close(sums[2] / sums[0], bins.freq)
    tied_bins = ((bins.pred_mean - 0.3).abs() < 1e-12).nonzero().squeeze(1)
    assert tied_bins.numel() > 3
    first_tied = int((q == 0.3).nonzero()[0])
    column = matrix.to_dense()[:, first_tied].reshape(3, -1)[0]
    assert bool((column[tied_bins] > 0).all()) and column.sum().item() == pytest.approx(1.0)


def test_root_difference_is_the_difference_of_roots() -> None:
    theta_a = torch.tensor([0.04, 0.01, 0.0, 0.09], dtype=torch.float64)
    theta_b = torch.tensor([0.01, 0.04, 0.0, 0.0], dtype=torch.float64)
    got = root_difference(theta_a - theta_b, torch.minimum(theta_a, theta_b))
    torch.testing.assert_close(got, theta_a.sqrt() - theta_b.sqrt())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"probs_b": torch.rand(9)}, "same items"),
        ({"probs_a": torch.full((10,), 1.5)}, r"\[0, 1\]"),
        ({"confidence": 1.5}, "confidence"),
        ({"n_samples": 1}, "n_samples"),
        ({"groups": torch.rand(10)}, "integer"),
        ({"debias": "False"}, "debias must be True or False"),  # had run the debiased one
        ({"debias": None}, "debias must be True or False"),
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


@pytest.mark.parametrize("debias", [False, True])
def test_one_vs_rest_is_the_expanded_pairs_resampled_item_by_item(debias) -> None:
    """An item's C pairs are resampled together: its labels are dependent (one is 1), and
    resampled pair by pair two equally calibrated models had been called different one
    time in ten at α = 0.05 (400 items of 3 classes; 0.05 item by item)."""
    sharp, p, c = _multiclass(seed=2)
    onehot = torch.nn.functional.one_hot(c, 4).reshape(-1)
    items = torch.arange(c.numel()).repeat_interleave(4)
    options = {"n_samples": 200, "bin_size": 300, "debias": debias}

    def compared(*args, **kwargs) -> ComparisonResult:
        return compare_calibration(*args, generator=torch.Generator().manual_seed(4), **kwargs)

    got = compared(sharp, p, c, **options)
    pairs = compared(sharp.reshape(-1), p.reshape(-1), onehot, **options)
    torch.testing.assert_close(got.difference, pairs.difference)  # the same estimate
    assert got.lower != pairs.lower and got.upper != pairs.upper
    if not debias:  # groups= also makes the debiased error cluster-robust: not here
        by_item = compared(sharp.reshape(-1), p.reshape(-1), onehot, groups=items, **options)
        for field in ("difference", "lower", "upper", "p_value"):
            torch.testing.assert_close(getattr(got, field), getattr(by_item, field))
    assert comparison_units(sharp, c, "one_vs_rest", None) == "items"


@pytest.mark.parametrize("mode", ["classwise", "top_label"])
def test_classwise_items_are_what_a_comparison_names_as_resampled(mode) -> None:
    """A classwise draw weighs each item once for every class's set: its units are items
    (they had been named "pairs"); a top-label item is one pair. Within one class's set an
    item is one pair, so a smooth band of that set still resamples pairs (no ids)."""
    sharp, p, c = _multiclass(n=6, seed=2)
    units = "items" if mode == "classwise" else "pairs"
    assert comparison_units(sharp, c, mode, None) == units
    assert resampled_ids(sharp, c, mode, None) is None
    with pytest.warns(UserWarning, match=rf"6 resampling units \({units}\)"):
        compare_calibration(sharp, p, c, mode=mode, n_samples=20)


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


def test_classwise_difference_is_the_mean_of_the_classes_differences() -> None:
    sharp, p, c = _multiclass()
    g = torch.Generator().manual_seed(3)
    got = compare_calibration(sharp, p, c, mode="classwise", n_samples=300, generator=g)
    per_class = [
        compare_calibration(sharp[:, k], p[:, k], (c == k).double(), n_samples=20, generator=g)
        for k in range(p.shape[1])
    ]
    expected = torch.stack([r.difference for r in per_class]).mean()
    torch.testing.assert_close(got.difference, expected)
    # Each model's result is calibration_error's classwise value (the mean of the classes').
    torch.testing.assert_close(got.a.error, calibration_error(sharp, c, mode="classwise"))
    torch.testing.assert_close(got.b.error, calibration_error(p, c, mode="classwise"))
    # Overconfident against calibrated: clearly worse, and the interval says so.
    assert got.lower < got.difference < got.upper
    assert got.lower > 0 and got.p_value < 0.01


def test_classwise_of_one_model_with_itself_is_zero() -> None:
    _, p, c = _multiclass(n=500)
    got = compare_calibration(
        p, p, c, mode="classwise", n_samples=50, generator=torch.Generator().manual_seed(0)
    )
    assert got.difference.item() == 0.0 and got.p_value.item() == 1.0
    assert got.lower.item() == 0.0 and got.upper.item() == 0.0


@pytest.mark.parametrize("grouped", [False, True], ids=["pairs", "groups"])
def test_plug_in_models_results_are_calibration_error_cis(grouped: bool) -> None:
    """With ``debias=False`` each model's own interval had been the raw percentiles of its
    plug-in draws, which sit above the estimate by the bias: 0.0653 with [0.0716, 0.1058]
    where calibration_error_ci gives [0.048, 0.083]."""
    from calib_metrics.functional import calibration_error_ci

    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    groups = torch.arange(2000) // 10 if grouped else None
    seed = torch.Generator().manual_seed
    result = compare_calibration(q.sqrt(), q, y, groups=groups, debias=False, generator=seed(0))
    for own, probs in ((result.a, q.sqrt()), (result.b, q)):
        alone = calibration_error_ci(probs, y, groups=groups, debias=False, generator=seed(0))
        assert own.lower < own.error < own.upper
        assert own.error == alone.error
        # Two sets of draws of the same bootstrap: ends within a few % of the width.
        width = float(alone.upper - alone.lower)
        assert abs(float(own.lower - alone.lower)) < 0.05 * width
        assert abs(float(own.upper - alone.upper)) < 0.05 * width


def test_bins_of_one_pair_warn_that_the_debiased_interval_is_too_narrow() -> None:
    """At ``bin_size=1`` the debiased comparison's draws lack the labels' noise: the
    interval [−0.0011, −0.0007] called a 0.0009 difference at p = 0 where the plug-in's
    is [−0.0021, +0.0005], silently (CalibrationError warned of one-pair bins)."""
    from calib_metrics import CalibrationComparison

    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    with pytest.warns(UserWarning, match="4000 of 4000 bins hold one pair.*too narrow"):
        compare_calibration(q, q**0.9, y, bin_size=1, n_samples=50)
    metric = CalibrationComparison(bin_size=1, n_samples=50)
    metric.update(q, q**0.9, y)
    with pytest.warns(UserWarning, match="bins hold one pair"):
        metric.compute()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the plug-in, and bins of 2 or more: no warning
        compare_calibration(q, q**0.9, y, bin_size=1, debias=False, n_samples=50)
        compare_calibration(q, q**0.9, y, bin_size=2, n_samples=50)


def test_one_pair_bins_inside_a_cut_tie_group_are_not_warned_of() -> None:
    """They hold the group's mean label, which the draws move (the interval is as wide
    as at bin_size=2): "800 of 800 bins hold one pair ... too narrow" had been said."""
    tied = torch.full((400,), 0.3, dtype=torch.float64)
    y = torch.bernoulli(torch.full((400,), 0.35), generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare_calibration(tied, tied + 0.1, y, bin_size=1, n_samples=200)
    untied = torch.linspace(0.2, 0.4, 400, dtype=torch.float64)
    with pytest.warns(UserWarning, match="400 of 800 bins hold one pair"):
        compare_calibration(tied, untied, y, bin_size=1, n_samples=200)


def test_the_one_pair_warning_names_a_fix_uniform_bins_take_and_is_said_once_by_label():
    """Uniform bins ignore bin_size: the warning had told them to use bin_size='auto'. By
    label it had come once a label (five identical lines for five labels)."""
    from calib_metrics.functional import compare_calibration_by_label

    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g, dtype=torch.float64) ** 6
    y = torch.bernoulli(q, generator=g)
    with pytest.warns(UserWarning, match=r"bins hold one pair.*lower n_bins \(now 100\)"):
        compare_calibration(q, q**0.9, y, binning="uniform", n_bins=100, n_samples=50)
    labels = torch.arange(5).repeat_interleave(400)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare_calibration_by_label(q.sqrt(), q, y, labels, n_samples=50, bin_size=1)
    said = [str(w.message) for w in caught if "hold one pair" in str(w.message)]
    assert said == [
        "compare_calibration_by_label: 4000 of 4000 bins hold one pair, whose label has no "
        "noise for the debiased comparison to resample: its interval comes out too narrow "
        "and its p-value too small; use bins of at least 2 pairs (bin_size='auto') or "
        "debias=False"
    ]


def test_compare_calibration_warns_at_its_callers_line() -> None:
    """Its body moved a frame down (_compare): its warnings had pointed into the library."""
    g = torch.Generator().manual_seed(0)
    rows = torch.rand(50, 3, generator=g, dtype=torch.float64)  # rows not summing to 1
    q = torch.rand(300, generator=g, dtype=torch.float64)
    calls = [
        lambda: compare_calibration(q[:5], q[:5], torch.ones(5)),  # too few units
        lambda: compare_calibration(rows, rows, torch.zeros(50, dtype=torch.long)),
        lambda: compare_calibration(q, q, torch.bernoulli(q, generator=g), bin_size=1),
    ]
    for call in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught and {w.filename for w in caught} == {__file__}, [str(w) for w in caught]
