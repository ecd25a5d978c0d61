"""Whether the dev labels run against the scores is a rank test (Mann-Whitney U, one-sided,
z below -3), not Welch's z of the two labels' mean scores: one extreme score hid an
inversion from Welch's, and 2 or 3 positives among 50 uninformative scores set it off
one time in eleven. scipy's mannwhitneyu is the oracle."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy import stats

from calib_metrics.recalibration import HistogramBinning, IsotonicCalibration, _common
from calib_metrics.recalibration._common import labels_against


def _said(fit) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught]


def _scipy_z(scores: np.ndarray, y: np.ndarray) -> float:
    """scipy's z of the positives ranking below the negatives (Φ(z) is its p-value)."""
    test = stats.mannwhitneyu(
        scores[y == 1],
        scores[y == 0],
        method="asymptotic",
        use_continuity=False,
        alternative="less",
    )
    return float(stats.norm.ppf(test.pvalue))


def _told(scores: torch.Tensor, y: torch.Tensor) -> bool:
    return labels_against(scores, y, "scores") is not None


def _tied_data_sets() -> list[tuple[np.ndarray, np.ndarray]]:
    """Scores of few distinct values (ties in every data set), the positives' shifted down
    by amounts from 0 to 3 standard deviations, so that z spans the threshold (-8 to 1.6)."""
    rng = np.random.default_rng(0)
    data = []
    for shift in np.linspace(0, 3, 60):
        n = int(rng.integers(20, 120))
        y = (rng.random(n) < 0.3).astype(np.float64)
        y[:2] = [0.0, 1.0]  # both classes
        data.append((np.round(rng.normal(size=n) - shift * y) / 4, y))
    return data


def test_the_rank_z_and_auc_are_scipy_s_on_tied_and_on_equal_scores() -> None:
    for scores, y in _tied_data_sets():
        z, auc, tied = _common._rank_test(torch.from_numpy(scores), torch.from_numpy(y))
        assert float(z) == pytest.approx(_scipy_z(scores, y), rel=1e-9, abs=1e-12)
        u = stats.mannwhitneyu(scores[y == 1], scores[y == 0]).statistic
        assert float(auc) == pytest.approx(u / (y.sum() * (1 - y).sum()), rel=1e-12)
        _, counts = np.unique(scores, return_counts=True)  # tie correction's share
        n = len(scores)
        assert float(tied) == pytest.approx((counts**3 - counts).sum() / (n**3 - n), abs=1e-12)
    equal, y = torch.full((30,), 0.7, dtype=torch.float64), torch.tensor([0.0, 1.0] * 15)
    assert float(_common._rank_z(equal, y)) == 0.0


def test_the_labels_are_told_against_the_scores_where_scipy_s_z_is_below_minus_3() -> None:
    """Welch's z had decided 3 of these 60 data sets otherwise (with 10 of each label at
    least, as the test asks); all-equal scores are never told."""
    data = _tied_data_sets()
    zs = [_scipy_z(scores, y) for scores, y in data]
    enough = [min(y.sum(), (1 - y).sum()) >= _common.MIN_EACH_LABEL for _, y in data]
    told = [_told(torch.from_numpy(scores), torch.from_numpy(y)) for scores, y in data]
    assert min(zs) < -4 and max(zs) > -2  # both sides of the threshold
    tests = [
        [float(v) for v in _common._rank_test(torch.from_numpy(s), torch.from_numpy(y))]
        for s, y in data
    ]
    weak = [tied >= 0.5 and auc > 0.5 - _common.MIN_AUC_GAP for _, auc, tied in tests]
    asked = [e and not w for e, w in zip(enough, weak)]
    assert sum(asked) > 40 and sum(z < -3 for z, a in zip(zs, asked) if a) > 10
    assert told == [z < -3 and a for z, a in zip(zs, asked)]
    assert not _told(torch.full((30,), 0.7, dtype=torch.float64), torch.tensor([0.0, 1.0] * 15))


@pytest.mark.parametrize(
    "make, positives, negatives, width, outlier, noun",
    [
        (lambda: HistogramBinning(n_bins=3), 0.0, 2.0, 1.0, 1e6, "scores"),
        (lambda: IsotonicCalibration(inputs="probs"), 0.40, 0.45, 0.01, 1 - 1e-12, "probabilities"),
    ],
)
def test_one_extreme_score_does_not_hide_an_inversion(
    make, positives, negatives, width, outlier, noun
) -> None:
    """30 positives below 30 negatives, and one positive at an extreme score: Welch's z
    had read the positives' mean and spread as the outlier's, and said nothing."""
    g = torch.Generator().manual_seed(0)
    low = positives + width * torch.rand(30, generator=g, dtype=torch.float64)
    high = negatives + width * torch.rand(30, generator=g, dtype=torch.float64)
    scores = torch.cat([low, high, torch.tensor([outlier], dtype=torch.float64)])
    y = torch.cat([torch.ones(30), torch.zeros(30), torch.ones(1)]).double()
    said = _said(lambda: make().fit(scores, y))
    assert any(f"the dev labels run against the {noun} (" in w for w in said), said


def test_two_or_three_positives_among_uninformative_scores_are_never_told() -> None:
    """Welch's z set off 185 of these 2000 data sets (9%, against 0.13% nominal). The rank
    test cannot: with distinct scores its z is -2.38 at least for 2 positives among 50 and
    -2.88 for 3 (every positive below every negative: z = -√(3 n1 n0 / (n + 1))), and
    fewer than 10 of a label are not tested."""
    rng = np.random.default_rng(0)
    told = 0
    for i in range(2000):
        scores = torch.from_numpy(rng.random(50))
        y = torch.zeros(50, dtype=torch.float64)
        y[: 2 + i % 2] = 1.0
        told += _told(scores, y)
    assert told == 0


@pytest.mark.parametrize("tails", ["normal", "cauchy"])
def test_a_clear_inversion_is_still_told(tails) -> None:
    """n = 200 (100 of each label), the positives' scores shifted down to an AUC of 0.24,
    on normal scores and on heavy-tailed (Cauchy) ones, whose extremes had hidden 90 of
    these 100 inversions from Welch's z: every one is told."""
    g = torch.Generator().manual_seed(0)
    y = torch.tensor([1.0, 0.0]).repeat(100).double()
    told = 0
    for _ in range(100):
        if tails == "normal":  # AUC = Φ(shift / √2)
            scores = torch.randn(200, generator=g, dtype=torch.float64) - 0.999 * y
        else:  # AUC = 1/2 + arctan(shift / 2) / π
            u = torch.rand(200, generator=g, dtype=torch.float64)
            scores = torch.tan(torch.pi * (u - 0.5)) - 2.13 * y
        told += _told(scores, y)
    assert told == 100


@pytest.mark.parametrize("positives", [1, 2])
def test_a_few_positives_among_tied_scores_are_not_told(positives) -> None:
    """Tied scores shrink the rank sum's variance: one positive among 4 scores of 0.01 and
    46 of 0.02 gives z = -3.39 wherever it lands in the low group, 4 times in 50 (8% of
    random labellings, against 0.13% nominal). Fewer than ``MIN_EACH_LABEL`` of a label
    are too few for the normal approximation, and are not tested."""
    scores = torch.tensor([0.01] * 4 + [0.02] * 46, dtype=torch.float64)
    y = torch.zeros(50, dtype=torch.float64)
    y[:positives] = 1.0  # in the low group: every such labelling ranks them lowest
    assert float(_common._rank_z(scores, y)) < -3
    assert labels_against(scores, y, "probabilities") is None
    assert not any(
        "run against" in w
        for w in _said(lambda: HistogramBinning(n_bins=2, inputs="probs").fit(scores, y))
    )


def test_ten_of_each_label_are_tested() -> None:
    """The threshold is a floor, not a silence: ten positives all below forty negatives
    (distinct scores) are told."""
    scores = torch.linspace(0.1, 0.9, 50, dtype=torch.float64)
    y = torch.zeros(50, dtype=torch.float64)
    y[:10] = 1.0
    assert labels_against(scores, y, "probabilities") is not None
    y[:10], y[40:] = 0.0, 1.0  # ten negatives below forty positives: labels with the scores
    assert labels_against(scores, y, "probabilities") is None


def test_a_small_tie_group_at_one_end_is_not_read_as_labels_against() -> None:
    """5 scores of 0.30 beside 995 of 0.31 and 50 positives, 2 of them among the five:
    z = -3.60 (the tie group shrinks the rank sum's variance; random labels gave z < -3 in
    2.5% of fits) at an AUC of 0.48, which inverts nothing. Not told; 20 of them among
    the five (AUC 0.31) are."""
    scores = torch.tensor([0.30] * 5 + [0.31] * 995, dtype=torch.float64)
    y = torch.zeros(1000, dtype=torch.float64)
    y[:2], y[5:53] = 1.0, 1.0
    z, auc, tied = _common._rank_test(scores, y)
    assert float(z) < -3 and float(auc) > 0.5 - _common.MIN_AUC_GAP and float(tied) > 0.9
    assert labels_against(scores, y, "probabilities") is None
    assert not any(
        "run against" in w
        for w in _said(lambda: HistogramBinning(n_bins=2, inputs="probs").fit(scores, y))
    )
    scores = torch.tensor([0.30] * 40 + [0.31] * 960, dtype=torch.float64)
    y = torch.zeros(1000, dtype=torch.float64)
    y[:20], y[40:70] = 1.0, 1.0
    told = labels_against(scores, y, "probabilities")
    assert told is not None and "AUC 0." in told


def test_a_weak_inversion_of_spread_scores_is_told() -> None:
    """The AUC floor is for heavy ties alone: 20,000 distinct uniform scores whose labels'
    frequency falls from 0.6 to 0.4 (AUC 0.44, z about -17) run against the scores, and
    histogram binning's map inverts them: told (R4: 10⁵ such scores had gone unwarned)."""
    g = torch.Generator().manual_seed(3)
    scores = torch.rand(20_000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(0.6 - 0.2 * scores, generator=g)
    z, auc, tied = _common._rank_test(scores, y)
    assert float(z) < -10 and 0.5 - _common.MIN_AUC_GAP < float(auc) < 0.47 and float(tied) < 1e-6
    assert labels_against(scores, y, "probabilities") is not None
