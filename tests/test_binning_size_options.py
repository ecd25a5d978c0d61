"""Each binning reads its own size option: ``n_bins`` beside adaptive binning, or
``bin_size`` beside uniform binning, is refused at every public entry (it had been ignored
without a word, while the command line refused the same options)."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import (
    calibration_error,
    calibration_error_ci,
    compare_calibration,
    compare_calibration_by_label,
)

ADAPTIVE_WITH_N_BINS = ({"n_bins": 5}, "n_bins counts uniform bins; it needs binning='uniform'")
UNIFORM_WITH_BIN_SIZE = (
    {"binning": "uniform", "bin_size": 50},
    "bin_size sizes adaptive bins; binning='uniform' takes n_bins",
)


@pytest.fixture
def pairs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(400, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g)


ENTRIES = {
    "calibration_error": lambda q, y, **o: calibration_error(q, y, **o),
    "calibration_error_ci": lambda q, y, **o: calibration_error_ci(q, y, n_samples=20, **o),
    "compare_calibration": lambda q, y, **o: compare_calibration(q, q**2, y, n_samples=20, **o),
    "compare_calibration_by_label": lambda q, y, **o: compare_calibration_by_label(
        q, q**2, y, torch.arange(q.numel()) % 2, n_samples=20, **o
    ),
    "CalibrationError": lambda q, y, **o: CalibrationError(n_samples=20, **o),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize(("options", "message"), [ADAPTIVE_WITH_N_BINS, UNIFORM_WITH_BIN_SIZE])
def test_the_other_binnings_size_is_refused(pairs, entry, options, message) -> None:
    with pytest.raises(ValueError, match=message):
        ENTRIES[entry](*pairs, **options)


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_each_binnings_own_size_is_taken(pairs, entry) -> None:
    """The refusal is of the other binning's option only: each still takes its own, and
    the defaults of the other (n_bins=15, bin_size="auto") pass as they always have."""
    for options in ({"bin_size": 50}, {"binning": "uniform", "n_bins": 7}, {"n_bins": 15}):
        ENTRIES[entry](*pairs, **options)
    q, y = pairs
    seven, fifteen = (calibration_error(q**2, y, binning="uniform", n_bins=n) for n in (7, 15))
    assert seven != fifteen
