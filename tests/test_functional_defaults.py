"""The functional API's defaults are the recommended estimator; every public entry says
clearly what is wrong with a bad argument (issue 13)."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.functional import (
    Bins,
    brier_decomposition,
    calibration_error,
    calibration_error_ci,
    ci_from_bins,
    error_from_bins,
    group_bootstrap,
    pair_bootstrap,
)
from calib_metrics.functional.calibration import compute_bins
from calib_metrics.functional.intervals import bin_index


def _independent_labels(n: int = 1500, classes: int = 4, seed: int = 0):
    """Very confident predictions whose labels are independent of them (issue 13)."""
    g = torch.Generator().manual_seed(seed)
    logits = 8 * torch.randn(n, classes, generator=g, dtype=torch.float64)
    return logits.softmax(-1), torch.randint(0, classes, (n,), generator=g)


def test_default_error_sees_miscalibration_on_a_small_validation_set() -> None:
    probs, target = _independent_labels()
    # The old default (one bin of 6000 pairs) scored this useless model ≈ 0.
    assert calibration_error(probs, target, bin_size=5000, debias=False) < 1e-6
    assert calibration_error(probs, target) > 0.3


def test_defaults_are_auto_bins_debiased_and_the_pair_bootstrap() -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.rand(4000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    explicit = calibration_error(q, y, bin_size="auto", debias=True)
    assert calibration_error(q, y) == explicit
    default = calibration_error_ci(q, y, n_samples=200, generator=torch.Generator().manual_seed(0))
    pairs = calibration_error_ci(
        q, y, n_samples=200, generator=torch.Generator().manual_seed(0),
        bin_size="auto", debias=True, interval="pairs",
    )  # fmt: skip
    assert torch.equal(torch.stack(default[:5]), torch.stack(pairs[:5]))
    groups = torch.arange(4000) // 10
    grouped = calibration_error_ci(
        q, y, groups=groups, n_samples=200, generator=torch.Generator().manual_seed(0)
    )
    explicit_groups = calibration_error_ci(
        q, y, groups=groups, n_samples=200, generator=torch.Generator().manual_seed(0),
        interval="groups",
    )  # fmt: skip
    assert torch.equal(torch.stack(grouped[:5]), torch.stack(explicit_groups[:5]))


def test_l1_and_max_fall_back_to_the_plug_in_without_an_error() -> None:
    q = torch.tensor([0.1, 0.2, 0.7, 0.9])
    y = torch.tensor([0, 0, 1, 1])
    for norm in ("l1", "max"):
        assert calibration_error(q, y, norm=norm, bin_size=2) == calibration_error(
            q, y, norm=norm, bin_size=2, debias=False
        )
        calibration_error_ci(q, y, norm=norm, bin_size=2, n_samples=50)


def test_refinement_is_never_larger_than_the_brier_score_by_default() -> None:
    probs, target = _independent_labels()
    split = brier_decomposition(probs, target)
    assert split.refinement <= split.brier + 1e-12
    assert split.calibration > 0.1


BINS = Bins(torch.tensor([0.2, 0.7]), torch.tensor([0.1, 0.8]), torch.tensor([100.0, 100.0]))
Q, Y = torch.rand(50, generator=torch.Generator().manual_seed(0)), torch.ones(50)


def _group_bootstrap(**options):
    """The public group bootstrap on Q, Y in groups of 5 and bins of 10, with ``options``."""
    bins, index = compute_bins(Q, Y, bin_size=10), bin_index(Q, Y, bin_size=10)
    return group_bootstrap(Q, Y, torch.arange(50) // 5, bins, index, **options)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: calibration_error(Q, Y, bin_size=2**63), "bin_size"),
        (lambda: calibration_error(Q, Y, binning="uniform", n_bins=2**40), "n_bins"),
        (lambda: calibration_error_ci(Q, Y, confidence="0.9"), "confidence"),
        (lambda: calibration_error_ci(Q, Y, confidence=None), "confidence"),
        (lambda: calibration_error_ci(Q, Y, confidence=1.5), "confidence"),
        (lambda: calibration_error(Q, Y, debias="yes"), "debias"),
        (lambda: ci_from_bins(BINS, n_samples=1), "n_samples"),
        (lambda: ci_from_bins(BINS, confidence=1.5), "confidence"),
        (lambda: error_from_bins(BINS, "L2"), "norm"),
        (lambda: pair_bootstrap(BINS, method="foo"), "method"),
        (lambda: pair_bootstrap(BINS, n_samples=0), "n_samples"),
        (lambda: pair_bootstrap(BINS, confidence=2), "confidence"),
        (lambda: pair_bootstrap(BINS, norm="l3"), "norm"),
        (lambda: pair_bootstrap(BINS, debias="yes"), "debias"),
        (lambda: pair_bootstrap(BINS, generator=0), "generator"),
        (lambda: _group_bootstrap(n_samples=1), "n_samples"),
        (lambda: _group_bootstrap(confidence=1.5), "confidence"),
        (lambda: _group_bootstrap(method="basic"), "method"),
        (lambda: _group_bootstrap(norm="L2"), "norm"),
    ],
)
def test_bad_arguments_are_value_errors_that_name_the_problem(call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_an_out_of_range_probability_is_shown_exactly() -> None:
    probs = torch.tensor([0.2, 1 + 6e-8], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"got 1\.00000006"):
        calibration_error(probs, torch.tensor([0, 1]))


def test_diagram_bars_and_legend_follow_the_confidence() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from calib_metrics.plot import posterior_time_series, reliability_diagram

    g = torch.Generator().manual_seed(0)
    q = torch.rand(2000, generator=g)
    y = torch.bernoulli(q, generator=g)
    result = calibration_error_ci(q, y, n_samples=50, confidence=0.9)
    _, ax = reliability_diagram(result)  # a result names its own level
    assert "bins (±1.64 se)" in [t.get_text() for t in ax.get_legend().get_texts()]
    _, ax = posterior_time_series(["a", "b"], [1, 2], [0, 1], [2, 3], confidence=0.8)
    assert "80% interval" in [c.get_label() for c in ax.collections]
    with pytest.raises(ValueError, match="confidence"):
        reliability_diagram(result, confidence=1.2)
