"""Counts print exactly (``:g`` had printed 1,234,567 pairs as ``1.23457e+06``) and their
nouns agree with them (``1 bins`` in the diagram's title and the report)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch

from calib_metrics.functional import Bins, brier_decomposition, calibration_error_ci
from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.plot import reliability_diagram
from calib_metrics.report import Measures, bins_rows, evaluate_page
from calib_metrics.wording import count_text, counted

BIG = 1_234_567


def test_bins_table_prints_counts_exactly() -> None:
    bins = Bins(torch.tensor([0.2, 0.6]), torch.tensor([0.1, 0.5]), torch.tensor([BIG, 12.5]))
    assert [row[-1] for row in bins_rows(bins)] == ["1234567", "12.5"]


def test_label_lines_print_counts_exactly() -> None:
    from calib_metrics.cli_report import label_lines

    row = {"calib_err": 0.01, "lower": 0.0, "upper": 0.02}
    lines = label_lines({"NN": {"n": BIG, **row}, "VB": {"n": 1, **row}})
    assert lines[0].endswith(", 1234567 pairs") and lines[1].endswith(", 1 pair")


def test_compare_per_label_table_prints_counts_exactly(capsys) -> None:
    from calib_metrics.cli_compare import _print_per_label

    row = {"n": BIG, "a": 0.1, "b": 0.2, "difference": -0.1, "lower": -0.2, "upper": 0.0}
    row |= {"p_value": 0.5, "adjusted_p_value": 0.5, "better": "-"}
    counts = {"a_better": 0, "b_better": 0, "not_distinguishable": 1, "correction": "holm",
              "alpha": 0.05, "unit": "pairs"}  # fmt: skip
    _print_per_label({"per_label": {"NN": row}, "label_counts": counts}, "95%", 2000)
    out = capsys.readouterr().out
    assert " 1234567 " in out and "e+06" not in out


@pytest.fixture(scope="module")
def one_bin():
    q = torch.rand(400, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = (q > 0.5).double()
    return q, y, calibration_error_ci(q, y, bin_size=400, n_samples=20)


def test_diagram_title_says_one_bin(one_bin) -> None:
    _, ax = reliability_diagram(one_bin[2])
    assert " · 1 bin · " in ax.get_title()


def test_report_says_one_bin_and_one_label(one_bin) -> None:
    q, y, result = one_bin
    summary = {"file": "a.csv", "n": 400, "binning": "adaptive", "bin_size": 400,
               "norm": "l2", "debias": True, "interval": "pairs", "confidence": 0.95,
               "method": "normal", "samples": 20, "groups": None}  # fmt: skip
    page = evaluate_page(
        summary, result, Measures(brier_decomposition(q, y)), per_label={"NN": result}
    )
    assert "1 bins" not in page and "1 labels" not in page
    assert "adaptive bins of β = 400, 1 bin;" in page and "Per label (1 label)" in page


@pytest.mark.parametrize(
    "count,text",
    [
        (10**30, "1" + "0" * 30),  # an int stays exact (via float: ...19884624838656)
        (torch.tensor(2**62 + 1), str(2**62 + 1)),  # so does an integer tensor
        (np.int64(2**62 + 1), str(2**62 + 1)),
        (0.0004, "0.0004"),  # a small fraction is not printed as 0
        (0.000123456, "0.000123"),
        (2 / 3, "0.667"),
        (torch.tensor(12.5), "12.5"),
        (np.float32(1234567.0), "1234567"),
    ],
)
def test_count_text_is_exact(count, text) -> None:
    assert count_text(count) == text


def test_the_noun_agrees_with_the_printed_count() -> None:
    assert counted(0.9996, "pair") == "1 pair"  # printed "1": singular
    assert counted(1.5, "pair") == "1.5 pairs" and counted(0.0004, "pair") == "0.0004 pairs"


def _hand_built(pred_mean, freq, count) -> CalibrationResult:
    t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    nan = t(float("nan"))
    return CalibrationResult(t(0.1), nan, nan, nan, nan, Bins(t(pred_mean), t(freq), t(count)))


def test_diagram_of_fractional_counts_titles_their_sum() -> None:
    # Bins of 0.5 and 0.4 pairs had been titled "N=0".
    _, ax = reliability_diagram(_hand_built([0.2, 0.7], [0.0, 1.0], [0.5, 0.4]))
    assert ax.get_title().endswith(" · N=0.9")
    _, ax = reliability_diagram(_hand_built([0.2], [0.5], [BIG]))
    assert ax.get_title().endswith(" · N=1,234,567")
