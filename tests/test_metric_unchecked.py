"""``validate_args=False`` skips the per-batch checks, not the check at compute(): logits
or labels of 2 had given a tight, believable and wrong error (0.3941 [0.3910, 0.3972] for
the logits of 5 classes), where ``CalibrationComparison`` refused them."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationError

G = torch.Generator().manual_seed(0)
LOGITS = 2 * torch.randn(3000, 5, generator=G)
CLASSES = torch.randint(0, 5, (3000,), generator=G)
Q = torch.rand(3000, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G)

COMPUTES = ("compute", "compute_result", "compute_smooth", "compute_spiegelhalter")


@pytest.mark.parametrize("streaming", [False, True], ids=["exact", "streaming"])
@pytest.mark.parametrize("method", COMPUTES)
def test_logits_are_refused_at_compute(streaming: bool, method: str) -> None:
    metric = CalibrationError(5, streaming=streaming, resolution=64, validate_args=False)
    metric.update(LOGITS, CLASSES)  # streaming: past the buffer of 128 rows, folded
    with pytest.raises(ValueError, match=r"validate_args=False\) .*(logits|\[0, 1\])"):
        getattr(metric, method)()
    metric.reset()
    metric.update(LOGITS.softmax(-1), CLASSES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(metric, method)()  # the same metric, given probabilities, computes


SPOILED = torch.arange(3000) == 5
# Pair 5 alone in the sketch's top cell, so that its label of 2 shows there (Σy > count).
ALONE = torch.where(SPOILED, 0.999, 0.9 * Q)


@pytest.mark.parametrize("streaming", [False, True], ids=["exact", "streaming"])
@pytest.mark.parametrize(
    ("q", "y", "named"),
    [
        (ALONE, torch.where(SPOILED, 2.0, Y), "binary|sum_y"),
        (torch.where(SPOILED, torch.nan, Q), Y, "NaN|low"),
    ],
    ids=["label 2", "NaN"],
)
def test_a_binary_label_of_2_or_a_nan_is_refused_at_compute(streaming: bool, q, y, named):
    metric = CalibrationError(streaming=streaming, resolution=64, validate_args=False)
    metric.update(q[:1000], y[:1000])
    metric.update(q[1000:], y[1000:])
    with pytest.raises(ValueError, match=named):
        metric.compute()


def test_valid_pairs_unchecked_give_the_checked_metrics_number() -> None:
    for streaming in (False, True):
        kw = {"streaming": streaming, "resolution": 64, "seed": 0}
        checked, unchecked = CalibrationError(**kw), CalibrationError(**kw, validate_args=False)
        for metric in (checked, unchecked):
            metric.update(Q, Y)
        assert torch.equal(checked.compute(), unchecked.compute())
        a, b = checked.compute_result(), unchecked.compute_result()
        assert (a.lower, a.upper) == (b.lower, b.upper)
