"""``group_bootstrap`` is public (exported with an example) but took its tensors on trust:
misaligned ids gave torch's IndexError, float group ids and NaN probabilities passed, and
targets of 3 gave an "interval" of [1.08, 1.42] for an error that cannot exceed 1. It now
checks them as ``calibration_error_ci(..., groups=)`` does. Options given as NumPy
integers are told to pass a Python int (the message had read "must be a positive integer,
got np.int64(10)")."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.functional import (
    adaptive_binning,
    auto_bin_size,
    calibration_error,
    calibration_error_ci,
    group_bootstrap,
)
from calib_metrics.functional.binning import bin_index

G = torch.Generator().manual_seed(0)
Q = torch.rand(200, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G)
GROUPS = torch.arange(200) // 10
BINS = adaptive_binning(Q, Y, 20)
INDEX = bin_index(Q, Y, bin_size=20)

BAD = {
    "groups one short": ((Q, Y, GROUPS[:-1], BINS, INDEX), "groups must give one id per pair"),
    "index half as long": ((Q, Y, GROUPS, BINS, INDEX[:100]), "index must give one id per pair"),
    "float group ids": ((Q, Y, GROUPS.float(), BINS, INDEX), "groups must hold integer ids"),
    "NaN probabilities": ((Q * float("nan"), Y, GROUPS, BINS, INDEX), "NaN"),
    "targets of 3": ((Q, Y * 3, GROUPS, BINS, INDEX), "binary"),
    "probs and target apart": ((Q, Y[:100], GROUPS, BINS, INDEX), "same shape"),
    "an index past the bins": ((Q, Y, GROUPS, BINS, INDEX + 5), "index must hold bin numbers"),
    "a float index": ((Q, Y, GROUPS, BINS, INDEX.double()), "index must hold integer ids"),
    "bins of a plain list": ((Q, Y, GROUPS, [0.1], INDEX), "bins must be Bins"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_group_bootstrap_refuses_bad_tensors_by_name(case: str) -> None:
    args, words = BAD[case]
    with pytest.raises(ValueError, match=words):
        group_bootstrap(*args, n_samples=50, generator=torch.Generator().manual_seed(1))


def test_group_bootstrap_still_agrees_with_the_grouped_interval() -> None:
    options = {"n_samples": 200, "debias": True, "method": "percentile"}
    ours = group_bootstrap(
        Q, Y, GROUPS, BINS, INDEX, generator=torch.Generator().manual_seed(3), **options
    )
    ci = calibration_error_ci(
        Q,
        Y,
        groups=GROUPS,
        bin_size=20,
        interval="groups",
        generator=torch.Generator().manual_seed(3),
        **options,
    )
    assert torch.equal(ours.error, ci.error)
    assert torch.equal(ours.lower, ci.lower) and torch.equal(ours.upper, ci.upper)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: calibration_error(Q, Y, bin_size=np.int64(10)), "bin_size"),
        (lambda: calibration_error(Q, Y, binning="uniform", n_bins=np.int64(10)), "n_bins"),
        (lambda: calibration_error_ci(Q, Y, n_samples=np.int64(100)), "n_samples"),
        (lambda: calibration_error(Q, Y, bin_size=torch.tensor(10)), "bin_size"),
    ],
)
def test_integer_options_of_another_type_are_told_to_pass_a_python_int(call, name) -> None:
    with pytest.raises(ValueError, match=rf"options take a Python int, pass int\({name}\)"):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: calibration_error(Q, Y, bin_size=np.int64(0)),  # wrong whatever its type
        lambda: calibration_error(Q, Y, bin_size=torch.tensor(True)),  # int(True) is 1
        lambda: calibration_error(Q, Y, bin_size=torch.tensor(10, device="meta")),
        lambda: calibration_error(Q, Y, binning="uniform", n_bins=torch.tensor(3, device="meta")),
    ],
)
def test_no_python_int_hint_where_int_would_not_help(call) -> None:
    # A meta tensor had raised torch's RuntimeError from operator.index.
    with pytest.raises(ValueError) as caught:
        call()
    assert "pass int(" not in str(caught.value)


def test_a_count_may_be_a_numpy_integer() -> None:
    assert auto_bin_size(np.int64(1000)) == 32  # "pass int(the number of pairs)" before


@pytest.mark.parametrize(
    "options, name",
    [
        ({"num_classes": np.int64(3)}, "num_classes"),
        ({"ignore_index": np.int64(-100)}, "ignore_index"),
        ({"seed": np.int64(7)}, "seed"),
    ],
)
def test_the_metric_options_get_the_hint_too(options, name) -> None:
    with pytest.raises(ValueError, match=rf"pass int\({name}\)"):
        CalibrationError(**options)
    with pytest.raises(ValueError, match=rf"pass int\({name}\)"):
        CalibrationComparison(**options)
