"""Dev data that cannot inform a recalibrator is said by the recalibrator's own fit: labels
that run against the scores (a decreasing Platt map, an inverting histogram, a flattened
isotonic one), scores all equal, and multiclass class ids held as floats or bools."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics.recalibration import (
    BINARY_METHODS,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    ScalingBinning,
    TemperatureScaling,
    VectorScaling,
    fit_binary,
)


def _dev() -> tuple[torch.Tensor, torch.Tensor]:
    """Overconfident probabilities and their labels."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(1000, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q**2, generator=g)


def _said(fit) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught]


def test_flipped_labels_flatten_isotonic_and_it_says_so() -> None:
    """fit_binary('isotonic', q, 1 - y) had mapped every probability to one value without
    a word (the command reported it as a significant improvement)."""
    q, y = _dev()
    said = _said(lambda: fit_binary("isotonic", q, 1 - y))
    assert len(said) == 1, said
    assert said[0].startswith("IsotonicCalibration: the dev labels run against the probabilities")
    assert "maps every score to" in said[0] and "the model's ranking is lost" in said[0]
    assert _said(lambda: fit_binary("isotonic", q, y)) == []


def test_a_flat_isotonic_map_is_said_without_labels_clearly_against() -> None:
    q = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    iso = IsotonicCalibration()
    said = _said(lambda: iso.fit(q, torch.tensor([1.0, 0.0, 1.0, 0.0])))
    assert iso(q).unique().numel() == 1
    assert len(said) == 1 and "the dev labels do not rise with the scores" in said[0], said


@pytest.mark.parametrize(
    "make, says",
    [
        (IsotonicCalibration, "it maps every score to the dev frequency of class 1 (0.3)"),
        (HistogramBinning, "it maps every score to the dev frequency of class 1 (0.3)"),
        (lambda: HistogramBinning(2, "uniform"), "their bin maps to the dev frequency"),
    ],
)
def test_equal_dev_scores_are_said_as_platt_says_them(make, says) -> None:
    """Platt and scaling-binning warned of equal dev scores; isotonic and histogram binning
    mapped every score to the dev frequency silently."""
    q = torch.full((40,), 0.7, dtype=torch.float64)
    y = torch.tensor([1.0, 0, 0, 1, 0, 0, 1, 0, 0, 0]).repeat(4)
    said = _said(lambda: make().fit(q, y))
    assert len(said) == 1 and "40 scores it is fitted on are all equal" in said[0], said
    assert says in said[0]


@pytest.mark.parametrize("kind", [PlattScaling, ScalingBinning])
def test_the_classes_warn_of_a_decreasing_map(kind) -> None:
    """Fitted directly, they had fitted a map that inverts the model silently: only
    fit_binary and the command warned."""
    q, y = _dev()
    z = torch.logit(q)
    fit = kind(generator=torch.Generator().manual_seed(0)) if kind is ScalingBinning else kind()
    said = _said(lambda: fit.fit(z, 1 - y))
    assert len(said) == 1, said
    assert said[0].startswith(f"{kind.__name__}: ") and "decreases (slope -" in said[0]
    assert "so the map fitted inverts the model" in said[0]
    assert _said(lambda: kind().fit(z, y)) == []


@pytest.mark.parametrize("kind", [PlattScaling, ScalingBinning])
def test_a_weak_calibrated_model_is_not_told_it_is_inverted(kind) -> None:
    """A slope below 0 alone had told 39% of a weak, calibrated model's dev sets (scores
    in [0.45, 0.55], n = 50) that the map inverts the model: the labels must run against
    the scores (a rank test's z below -3), as histogram binning's and isotonic's test asks."""
    told = 0
    for seed in range(40):
        g = torch.Generator().manual_seed(seed)
        q = 0.45 + 0.1 * torch.rand(50, generator=g, dtype=torch.float64)
        y = torch.bernoulli(q, generator=g)
        # Scaling binning's halves are drawn from its generator: fixed, never the global one.
        split = {"generator": g} if kind is ScalingBinning else {}
        fit = kind(inputs="probs", **split)
        said = _said(lambda fit=fit, q=q, y=y: fit.fit(q, y))
        told += any("inverts the model" in w for w in said)
    assert told == 0


def test_scaling_binning_s_equal_scores_are_said_in_its_own_name() -> None:
    """Its Platt step's warning had named PlattScaling, which the user never called."""
    q = torch.full((40,), 0.7, dtype=torch.float64)
    y = torch.tensor([1.0, 0, 0, 1, 0, 0, 1, 0, 0, 0]).repeat(4)
    said = _said(lambda: fit_binary("scaling_binning", q, y))
    assert said and all(not w.startswith("PlattScaling") for w in said), said
    assert said[0].startswith("ScalingBinning (its Platt step, on half of dev): the 20 scores")


@pytest.mark.parametrize("method", [m for m in BINARY_METHODS if m != "temperature"])
def test_fit_binary_warns_once_of_flipped_labels(method) -> None:
    q, y = _dev()
    said = _said(lambda: fit_binary(method, q, 1 - y))
    assert len(said) == 1, said
    assert "the dev labels run against" in said[0] or "decreases (slope -" in said[0]


@pytest.mark.parametrize("kind", [TemperatureScaling, VectorScaling, MatrixScaling])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_multiclass_class_ids_held_as_floats_or_bools_are_refused(kind, dtype) -> None:
    """They had been fitted on, where TemperatureRecalibration and calibration_error refuse
    them."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(300, 2, generator=g, dtype=torch.float64)
    target = torch.bernoulli(logits.softmax(-1)[:, 1], generator=g).long()
    with pytest.raises(ValueError, match=r"integer class ids, got dtype .*pass target\.long"):
        kind().fit(logits, target.to(dtype))
    kind().fit(logits, target)


def test_rounding_is_not_read_as_labels_against_the_scores() -> None:
    """Scores ulps apart with equal means by label, and scores near float64's largest,
    whose sums overflow, are no labels against the scores."""
    middle = torch.tensor(0.7, dtype=torch.float64)
    ulps = [torch.nextafter(middle, torch.tensor(side, dtype=torch.float64)) for side in (0, 1)]
    tied = torch.cat([ulps[0].repeat(100), middle.repeat(100), ulps[1].repeat(100)])
    halves = torch.tensor([0.0, 1.0]).repeat_interleave(50).repeat(3).double()
    huge = torch.tensor([1.0, 1.2, 1.4, 1.6, 1.7, 1.75] * 20, dtype=torch.float64) * 1e308
    rising = torch.tensor([0.0, 1, 0, 1, 1, 1] * 20, dtype=torch.float64)
    assert _said(lambda: HistogramBinning(n_bins=3).fit(tied, halves)) == []
    assert _said(lambda: HistogramBinning(n_bins=3).fit(huge, rising)) == []
    said = _said(lambda: HistogramBinning(n_bins=3).fit(huge, 1 - rising))
    assert len(said) == 1 and "(mean score 1.2e+308 for label 1, 1.56e+308" in said[0], said
