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


def test_classwise_metric_does_not_pool_its_classes_into_one_diagram() -> None:
    # It had drawn every class's bins as one connected curve ("216 bins · N=12,000" for
    # 3,000 items); CalibrationComparison.plot refused the same.
    from calib_metrics import CalibrationError

    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(3 * torch.randn(600, 4, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    metric = CalibrationError(num_classes=4, mode="classwise", n_samples=20)
    metric.update(probs, target)
    with pytest.raises(ValueError, match="mode='classwise' pools every class's bins"):
        metric.plot()
    per_class = CalibrationError(num_classes=4, average=None, n_samples=20)
    per_class.update(probs, target)
    fig, _ = per_class.plot()  # what the message points to
    assert fig is not None
