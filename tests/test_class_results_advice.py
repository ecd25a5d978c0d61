"""``compute_class_results()`` on a metric of another mode says how to get one result per
class. It had told binary and top-label metrics to use ``average=None``, which their
constructor refuses; every metric its message names must now be one that can be made,
and give one result per class."""

from __future__ import annotations

import ast
import re

import pytest
import torch

from calib_metrics import CalibrationError

G = torch.Generator().manual_seed(0)
PROBS = torch.softmax(torch.randn(600, 3, generator=G), -1)
TARGET = torch.multinomial(PROBS, 1, generator=G).squeeze(1)


@pytest.mark.parametrize(
    "options",
    [{}, {"num_classes": 3, "mode": "top_label"}, {"num_classes": 3}],
    ids=["binary", "top-label", "one-vs-rest micro"],
)
def test_the_advice_names_metrics_that_give_one_result_per_class(options) -> None:
    with pytest.raises(ValueError, match="compute_class_results is mode='classwise''s") as info:
        CalibrationError(**options).compute_class_results()
    advised = re.findall(r"CalibrationError\(([^)]*)\)", str(info.value))
    assert advised, str(info.value)
    for arguments in advised:
        call = ast.parse(f"f({arguments.replace('=C', '=3')})", mode="eval").body
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        metric = CalibrationError(n_samples=20, **kwargs)  # the constructor takes it
        metric.update(PROBS, TARGET)
        if kwargs.get("mode") == "classwise":
            assert len(metric.compute_class_results()) == 3
        else:
            assert len(metric.compute_result()) == 3  # average="none": one per class


@pytest.mark.parametrize("average", ["none", "macro", "weighted"])
def test_a_per_class_one_vs_rest_metric_is_pointed_at_its_own_result(average) -> None:
    """Macro and weighted metrics list one result per class too: they were told to build
    an average='none' metric for what their own compute_result() gives."""
    metric = CalibrationError(num_classes=3, average=average, n_samples=20)
    with pytest.raises(ValueError, match=r"its compute_result\(\) gives one result per class"):
        metric.compute_class_results()
    metric.update(PROBS, TARGET)
    assert len(metric.compute_result()) == 3
