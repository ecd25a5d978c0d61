"""Results print in a line or three: their bins (and a comparison's two models' bins) had
been printed in full, some 45 and 90 lines, the error lost at the top."""

from __future__ import annotations

import torch

from calib_metrics.functional import calibration_error_ci, compare_calibration

G = torch.Generator().manual_seed(0)
Q = torch.rand(3000, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G)


def test_a_result_prints_its_numbers_and_counts_its_bins() -> None:
    result = calibration_error_ci(Q.sqrt(), Y, n_samples=200, generator=G)
    text = repr(result)
    assert "\n" not in text and str(result) == text
    assert text.startswith(f"CalibrationResult(error={result.error.item():.4f}, ")
    assert f"upper={result.upper.item():.4f}" in text
    assert text.endswith(f"bins=<{result.bins.count.numel()} bins, 3000 pairs>)")


def test_a_comparison_prints_one_line_a_model() -> None:
    result = compare_calibration(Q.sqrt(), Q, Y, n_samples=200, generator=G)
    lines = repr(result).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"ComparisonResult(difference={result.difference.item():.4f}")
    assert lines[1].startswith("  a=CalibrationResult(") and lines[2].startswith("  b=")
    # Still the NamedTuple whose fields DESIGN.md fixes.
    assert result._fields == ("difference", "lower", "upper", "p_value", "a", "b")


def test_a_label_by_label_comparison_prints_its_counts() -> None:
    from calib_metrics.functional import compare_calibration_by_label

    labels = torch.arange(3000) % 3
    result = compare_calibration_by_label(Q.sqrt(), Q, Y, labels, n_samples=200, generator=G)
    assert repr(result) == (
        f"LabelComparisonResult(3 labels: a better on {result.a_better}, b better on "
        f"{result.b_better}, not distinguishable on {result.not_distinguishable}; holm at "
        "alpha = 0.05)"
    )
