"""Group ids are given per item: of the target's shape, or flat. Once, any tensor with the
right number of elements was taken and flattened, so sentence ids laid out [T, B] for
targets [B, T] (a transposed expand) silently grouped the wrong tokens together."""

from __future__ import annotations

import re

import pytest
import torch

from calib_metrics.functional import (
    calibration_error_ci,
    compare_calibration,
    smooth_reliability_curve,
    spiegelhalter_test,
)

B, T = 12, 5


def _tokens():
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(B, T, generator=g, dtype=torch.float64)
    target = torch.bernoulli(probs, generator=g)
    sentence = torch.arange(B)
    return probs, target, sentence[:, None].expand(B, T), sentence.expand(T, B)


def _seeded() -> dict:
    return {"n_samples": 20, "generator": torch.Generator().manual_seed(0)}


CALLS = {
    "calibration_error_ci": lambda q, y, g: calibration_error_ci(q, y, groups=g, **_seeded()),
    "compare_calibration": lambda q, y, g: compare_calibration(q, q**2, y, groups=g, **_seeded()),
    "smooth_reliability_curve": lambda q, y, g: smooth_reliability_curve(
        q, y, groups=g, points=5, **_seeded()
    ),
    "spiegelhalter_test": lambda q, y, g: spiegelhalter_test(q, y, groups=g),
}


@pytest.mark.parametrize("name", CALLS)
def test_group_ids_of_another_shape_are_refused(name) -> None:
    probs, target, _, transposed = _tokens()
    with pytest.raises(ValueError, match=r"groups must have the target's shape \(12, 5\)"):
        CALLS[name](probs, target, transposed)


@pytest.mark.parametrize("name", ["calibration_error_ci", "spiegelhalter_test"])
def test_flat_group_ids_equal_ids_of_the_targets_shape(name) -> None:
    probs, target, ids, _ = _tokens()
    shaped = CALLS[name](probs, target, ids)
    flat = CALLS[name](probs, target, ids.reshape(-1))
    for a, b in zip(shaped, flat):
        if isinstance(a, torch.Tensor):
            torch.testing.assert_close(a, b)


def test_multiclass_group_ids_of_another_shape_are_refused() -> None:
    g = torch.Generator().manual_seed(1)
    probs = torch.softmax(torch.randn(B, T, 3, generator=g), -1)
    target = torch.randint(0, 3, (B, T), generator=g)
    transposed = torch.arange(B).expand(T, B)
    for mode in ("one_vs_rest", "top_label", "classwise"):
        with pytest.raises(ValueError, match="groups must have the target's shape"):
            calibration_error_ci(probs, target, groups=transposed, mode=mode, n_samples=20)


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_too_few_multiclass_group_ids_name_the_targets_own_shape(mode) -> None:
    # Sentence ids [B] for tags [B, T]: the message had named the flattened target, (60,).
    g = torch.Generator().manual_seed(2)
    probs = torch.softmax(torch.randn(B, T, 3, generator=g), -1)
    target = torch.randint(0, 3, (B, T), generator=g)
    shape = re.escape("(12, 5)")
    with pytest.raises(ValueError, match=f"got 12 ids for 60 items \\(target shape {shape}\\)"):
        compare_calibration(probs, probs, target, groups=torch.arange(B), mode=mode, n_samples=20)


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("dtype", [torch.bool, torch.float32])
def test_group_ids_that_are_not_integers_are_refused_by_every_call(name, dtype) -> None:
    """A bool mask passed as groups was taken by smooth_reliability_curve as two groups
    (a NaN band and a warning) where every other function refused it."""
    probs, target, ids, _ = _tokens()
    with pytest.raises(ValueError, match=f"groups must hold integer ids, got dtype {dtype}"):
        CALLS[name](probs, target, (ids % 2).to(dtype))
