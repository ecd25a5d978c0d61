"""Public entries that had let a wrong argument through (the argument-check probe of
2026-11-30): ``error_from_bins(debias="False")`` debiased (a truthy string) and gave 0.0,
and meta tensors reached torch's "Cannot copy out of meta tensor" or
"Tensor.item() cannot be called on meta tensors" instead of the library's ValueError."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import functional as F
from calib_metrics.functional.intervals import pair_bootstrap

G = torch.Generator().manual_seed(0)
P = torch.rand(300, generator=G)
Y = torch.bernoulli(P, generator=G)


@pytest.mark.parametrize("debias", ["False", None, 1])
def test_error_from_bins_takes_a_flag_for_debias(debias) -> None:
    bins = F.adaptive_binning(P, Y, 50)
    with pytest.raises(ValueError, match=f"debias must be True or False, got {debias!r}"):
        F.error_from_bins(bins, debias=debias)
    assert F.error_from_bins(bins, debias=False) > 0  # what "False" had meant


@pytest.mark.parametrize(
    "call",
    [F.error_from_bins, F.ci_from_bins, pair_bootstrap],
    ids=["error_from_bins", "ci_from_bins", "pair_bootstrap"],
)
def test_bins_on_meta_are_refused_by_name(call) -> None:
    bins = F.Bins(*(t.to("meta") for t in F.adaptive_binning(P, Y, 50)))
    with pytest.raises(ValueError, match=r"bins\.pred_mean is on the meta device"):
        call(bins)


@pytest.mark.parametrize("adjust", [F.bh_adjust, F.holm_adjust])
def test_p_values_on_meta_are_refused_by_name(adjust) -> None:
    with pytest.raises(ValueError, match="p_values is on the meta device"):
        adjust(torch.rand(3, dtype=torch.float64, device="meta"))


def test_a_histogram_on_meta_is_refused_by_name() -> None:
    count = torch.ones(3)
    with pytest.raises(ValueError, match="position is on the meta device"):
        F.smooth_calibration_from_histogram(torch.rand(3, device="meta"), count, count / 2)
