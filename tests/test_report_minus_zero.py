"""No output writes ``-0.0000``: a tiny negative number is written as 0 (``+0.0000`` where
a sign is written), as :func:`calib_metrics.report.fixed` does. The bins table's q̂ − p̂
had been formatted apart (``-0.0000`` for a bin whose frequency exceeded its mean
probability by 1e-5), and so had every signed difference (a − b, its interval's ends)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calib_metrics.functional import Bins, brier_decomposition, calibration_error_ci
from calib_metrics.functional.comparison import ComparisonResult
from calib_metrics.report import Measures, bins_rows, compare_page, fixed, plus_term

TINY = -1.3e-5


def test_a_bins_tiny_negative_gap_is_zero() -> None:
    t = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    rows = bins_rows(Bins(t(0.5, 0.7), t(0.50001, 0.2), t(1000.0, 10.0)))
    assert [row[3] for row in rows] == ["0.0000", "0.5000"]


@pytest.mark.parametrize(
    ("value", "text"), [(TINY, "+0.0000"), (-0.01, "-0.0100"), (0.02, "+0.0200")]
)
def test_a_signed_number_never_reads_minus_zero(value, text) -> None:
    assert fixed(value, sign="+") == text


def test_the_compare_page_writes_no_minus_zero() -> None:
    q = torch.rand(400, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = torch.bernoulli(q, generator=torch.Generator().manual_seed(1))
    r = calibration_error_ci(q, y, n_samples=20, debias=True, interval="pairs")
    tiny = torch.tensor(TINY, dtype=torch.float64)
    comparison = ComparisonResult(tiny, tiny * 3, -tiny, torch.tensor(0.9), r, r)
    m = Measures(brier_decomposition(q, y))
    summary = {"n": 400, "resampled": "pairs", "confidence": 0.95, "samples": 20}
    page = compare_page(summary, comparison, (m, m))
    assert "-0.0000" not in page and "−0.0000" not in page
    assert "<td>+0.0000</td>" in page and "<td>[+0.0000, +0.0000]</td>" in page


def test_the_comparison_metric_figure_title_never_reads_minus_zero() -> None:
    from calib_metrics import CalibrationComparison

    metric = CalibrationComparison(n_samples=20)
    base = calibration_error_ci(
        torch.rand(50, dtype=torch.float64),
        torch.ones(50),
        bin_size=10,
        n_samples=20,
        generator=torch.Generator().manual_seed(0),
    )
    d = torch.tensor(TINY, dtype=torch.float64)
    result = ComparisonResult(d, d, d, torch.tensor(0.5, dtype=torch.float64), base, base)
    text = metric._difference_text(result)
    assert "-0.0000" not in text and text.startswith("a − b = +0.0000 [95%: +0.0000, +0.0000]")


def test_a_round_off_within_bin_term_reads_plus_zero() -> None:
    # Five distinct scores in ten uniform bins: each bin holds one score, so the within-bin
    # term is 0 in exact arithmetic; in floats brier − calibration − refinement is −1.1e-16.
    rng = np.random.default_rng(1)
    q = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], 1000)
    y = rng.random(1000) < q
    d = brier_decomposition(torch.tensor(q), torch.tensor(y).long(), binning="uniform", n_bins=10)
    assert -1e-12 < d.within_bin.item() < 0
    assert plus_term(d.within_bin) == "+ 0.0000"
    # A real negative term keeps its sign.
    assert plus_term(TINY) == "− 0.0000"
