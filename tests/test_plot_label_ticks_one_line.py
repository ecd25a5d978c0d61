"""A label name's tick is one line: a line feed in the name had broken it into two lines
over the next row, and an empty name had drawn a blank tick, read as no label. A bar's
"no interval" note stays inside the axes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import per_class_errors, per_label_errors


@pytest.fixture(scope="module")
def result():
    q = torch.rand(300, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return calibration_error_ci(q, (q > 0.5).double(), bin_size=30, n_samples=20)


NAMES = ["new\nline", r"typed\n", "tab\tx", ""]
SHOWN = [r"new\nline", r"typed\\n", r"tab\tx", '""']


def test_a_line_feed_and_an_empty_name_are_shown_on_one_line(result) -> None:
    _, ax = per_label_errors(dict.fromkeys(NAMES, result), sort=False)
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks == SHOWN  # the typed backslash-n is not read as a line feed
    _, ax = per_class_errors({"m": [result] * len(NAMES)}, NAMES)
    assert [t.get_text() for t in ax.get_xticklabels()] == SHOWN


def test_a_long_name_with_line_feeds_counts_their_escapes(result) -> None:
    _, ax = per_label_errors({"\n" * 100: result}, sort=False)
    (tick,) = (t.get_text() for t in ax.get_yticklabels())
    assert "\n" not in tick and len(tick) <= 60


def test_a_no_interval_note_beside_the_longest_bar_stays_inside_the_axes(result) -> None:
    from calib_metrics.functional import Bins, CalibrationResult

    t, nan = torch.tensor, torch.tensor(float("nan"))
    empty = Bins(t([]), t([]), t([]))
    alone = CalibrationResult(t(0.3), t(0.3), t(0.0), nan, nan, empty)
    _, ax = per_label_errors({"long": alone, "short": result})
    (note,) = ax.texts
    # Beside the bar's end it had run past the axes' right edge.
    assert note.get_text() == "no interval" and note.get_horizontalalignment() == "right"
    assert note.xyann == (-3, 0)
