"""Characters that HTML does not allow (a label "ctrl\\x01x" read from a file) reach the
page as visible escapes, in its tables and its figures' SVG alike: they had been written
raw, which makes the document invalid (and matplotlib warned of missing glyphs)."""

from __future__ import annotations

import re
import warnings

import matplotlib

matplotlib.use("Agg")

import torch

from calib_metrics.functional import brier_decomposition, calibration_error_ci
from calib_metrics.report import Measures, evaluate_page

NOT_HTML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def test_control_characters_in_labels_and_file_names_are_made_visible() -> None:
    q = torch.rand(400, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = (q > 0.5).double()
    r = calibration_error_ci(q, y, bin_size=40, n_samples=20)
    summary = {"file": "a\x02.csv", "n": 400, "binning": "adaptive", "bin_size": 40,
               "norm": "l2", "debias": True, "interval": "pairs", "confidence": 0.95,
               "method": "normal", "samples": 20, "groups": None}  # fmt: skip
    labels = {"ctrl\x01x": r, "del\x7fc1\x85": r}
    with warnings.catch_warnings():  # the figures draw them as escapes: no missing glyph
        warnings.simplefilter("error")
        page = evaluate_page(summary, r, Measures(brier_decomposition(q, y)), per_label=labels)
    assert not NOT_HTML.search(page)
    assert "<td>ctrl\\x01x</td>" in page and "<td>del\\x7fc1\\x85</td>" in page
    assert "<h1>Calibration report: a\\x02.csv</h1>" in page
