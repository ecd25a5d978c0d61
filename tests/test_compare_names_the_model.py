"""A bad probability in one of two models' inputs names that model: before, the
comparison's error said "probs must lie in [0, 1]" for either, and the user had to guess
which of the two files or tensors held logits."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationComparison
from calib_metrics.functional import compare_calibration

G = torch.Generator().manual_seed(0)
Q = torch.rand(40, generator=G)
Y = torch.bernoulli(Q, generator=G)
P = torch.softmax(torch.randn(40, 3, generator=G), -1)
C = torch.randint(0, 3, (40,), generator=G)
NAN = torch.full_like(Q, float("nan"))
CASES = {
    "a logits": ((Q - 1, Q, Y), None, "probs_a must lie in"),
    "b logits": ((Q, Q + 1, Y), None, "probs_b must lie in"),
    "b NaN": ((Q, NAN, Y), None, "probs_b contains NaN"),
    "b integers": ((Q, Y.long(), Y), None, "probs_b must be a floating-point"),
    "multiclass b logits": ((P, P * 3, C), 3, "probs_b must lie in"),
    "top-label a logits": ((P - 1, P, C), 3, "probs_a must lie in"),
}


@pytest.mark.parametrize(("inputs", "classes", "message"), CASES.values(), ids=CASES.keys())
def test_the_function_and_the_metric_name_the_model(inputs, classes, message) -> None:
    mode = "top_label" if message.startswith("probs_a") and classes else "one_vs_rest"
    with pytest.raises(ValueError, match=message):
        compare_calibration(*inputs, mode=mode)
    metric = CalibrationComparison(num_classes=classes, mode=mode)
    with pytest.raises(ValueError, match=message):
        metric.update(*inputs)
    assert not metric.target  # nothing kept
