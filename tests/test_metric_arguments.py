"""Constructor flags of the metrics are booleans: a string or number is refused by name
(once ``streaming="no"`` — truthy — silently built a streaming metric)."""

from __future__ import annotations

import pytest

from calib_metrics import CalibrationError


@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_streaming_must_be_a_bool(value) -> None:
    with pytest.raises(ValueError, match="streaming must be True or False"):
        CalibrationError(streaming=value)


@pytest.mark.parametrize("value", ["False", "no", 0, None])
@pytest.mark.parametrize("metric", ["CalibrationError", "CalibrationComparison"])
def test_validate_args_must_be_a_bool(metric, value) -> None:
    """Read for its truth, "False" left the checks on and 0 or None turned them off: a
    probability of 3.0 was then accumulated (error 0.7071)."""
    import calib_metrics

    with pytest.raises(ValueError, match="validate_args must be True or False"):
        getattr(calib_metrics, metric)(validate_args=value)


@pytest.mark.parametrize("value", ["False", 0, None])
def test_chain_functions_validate_args_must_be_a_bool(value) -> None:
    import torch

    from calib_metrics.models import linear_chain

    args = (torch.zeros(1, 2, 3), torch.zeros(3, 3), torch.zeros(3), torch.zeros(3))
    with pytest.raises(ValueError, match="validate_args must be True or False"):
        linear_chain.posterior_marginals(*args, validate_args=value)
    with pytest.raises(ValueError, match="validate_args must be True or False"):
        linear_chain.sequence_score(*args, torch.zeros(1, 2, dtype=torch.long), validate_args=value)


def test_streaming_bools_are_accepted() -> None:
    assert CalibrationError(streaming=True).streaming is True
    assert CalibrationError(streaming=False).streaming is False


@pytest.mark.parametrize("num_classes", [3, None])
def test_a_column_of_class_ids_gets_the_squeeze_hint(num_classes) -> None:
    # The functional API said so; the metric's update did not.
    import torch

    probs = torch.softmax(torch.randn(4, 3), -1)
    column = torch.tensor([[0], [1], [2], [0]])
    metric = CalibrationError(num_classes=num_classes)
    with pytest.raises(ValueError, match=r"pass target\.squeeze\(-1\), of shape \(4,\)"):
        metric.update(probs, column)
