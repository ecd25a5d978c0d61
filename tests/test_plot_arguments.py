"""``reliability_diagram`` checks its ``result`` as ``per_label_errors`` does: anything but
a CalibrationResult is refused by name (once, a bare AttributeError)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("matplotlib")

from calib_metrics.functional import calibration_error, calibration_error_ci
from calib_metrics.plot import reliability_diagram


@pytest.mark.parametrize("wrong", ["x", None, 0.1])
def test_reliability_diagram_refuses_what_is_not_a_result(wrong) -> None:
    with pytest.raises(ValueError, match="result must be a CalibrationResult"):
        reliability_diagram(wrong)


def test_reliability_diagram_names_a_bare_error_tensor() -> None:
    q = torch.rand(200, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="calibration_error_ci"):
        reliability_diagram(calibration_error(q, (q > 0.5).float()))
    fig, _ = reliability_diagram(calibration_error_ci(q, (q > 0.5).float(), n_samples=20))
    assert fig is not None
