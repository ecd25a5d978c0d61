"""A generator that is not a torch.Generator is a ValueError naming it at every public
entry that takes one (before, torch's TypeError from deep inside, or nothing at all)."""

import pytest
import torch

from calib_metrics.functional import (
    calibration_error_ci,
    compare_calibration,
    smooth_reliability_curve,
)
from calib_metrics.functional.calibration import ci_from_bins, compute_bins, sampled_errors
from calib_metrics.functional.comparison_by_label import compare_calibration_by_label
from calib_metrics.models import coref, linear_chain
from calib_metrics.models.hmm import HMM
from calib_metrics.recalibration import fit_binary
from calib_metrics.recalibration.binning import ScalingBinning
from calib_metrics.recalibration.compare import compare_before_after

g = torch.Generator().manual_seed(0)
Q = torch.rand(300, generator=g, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=g)
BINS = compute_bins(Q, Y, bin_size=30)
LABELS = torch.arange(300) % 3
EM, TR, ST, EN = torch.zeros(2, 3, 2), torch.zeros(2, 2), torch.zeros(2), torch.zeros(2)
SCORES = torch.zeros(2, 4, 4)

CALLS = {
    "calibration_error_ci": lambda gen: calibration_error_ci(Q, Y, n_samples=10, generator=gen),
    "ci_from_bins": lambda gen: ci_from_bins(BINS, n_samples=10, generator=gen),
    "sampled_errors": lambda gen: sampled_errors(BINS, n_samples=10, generator=gen),
    "compare_calibration": lambda gen: compare_calibration(Q, Q, Y, n_samples=10, generator=gen),
    "compare_calibration_by_label": lambda gen: compare_calibration_by_label(
        Q, Q, Y, LABELS, n_samples=10, generator=gen
    ),
    "smooth_reliability_curve": lambda gen: smooth_reliability_curve(
        Q, Y, n_samples=10, generator=gen
    ),
    "fit_binary": lambda gen: fit_binary("platt", Q, Y, generator=gen),
    "ScalingBinning": lambda gen: ScalingBinning(generator=gen),
    "compare_before_after": lambda gen: compare_before_after(Q, Q, Y, n_samples=10, generator=gen),
    "linear_chain.sample": lambda gen: linear_chain.sample(
        EM, TR, ST, EN, n_samples=2, generator=gen
    ),
    "ChainTagger.sample": lambda gen: HMM(2, 3).sample(
        torch.ones(2, 3, dtype=torch.long), n_samples=2, generator=gen
    ),
    "sample_antecedents": lambda gen: coref.sample_antecedents(SCORES, 2, generator=gen),
    "sample_entity_roots": lambda gen: coref.sample_entity_roots(SCORES, 2, generator=gen),
    "coreference_marginals": lambda gen: coref.coreference_marginals(SCORES, 2, generator=gen),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_generator_that_is_not_one_is_named(name):
    with pytest.raises(ValueError, match=r"generator must be a torch\.Generator or None, got str"):
        CALLS[name]("x")
