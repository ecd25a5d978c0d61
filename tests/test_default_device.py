"""Every tensor the library makes lands on the input's device, whatever torch's default
device is (``torch.set_default_device``). Without a second device here, the default is set
to ``meta``: a tensor made without ``device=`` lands there, and mixing it with the CPU
inputs fails (or hands back a meta result). Each case had failed so; on a GPU set as the
default they had met "expected all tensors on the same device" with CPU inputs, or (the
streaming Spiegelhalter test) returned a result on another device than the metric's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error_ci, compare_calibration
from calib_metrics.models.coref import coreference_marginals, sample_antecedents

CPU = torch.device("cpu")


@pytest.fixture
def meta_default() -> Iterator[None]:
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None)


def _pairs(n: int = 2000, seed: int = 0, ties: bool = False):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64, device=CPU)
    if ties:  # rounded scores: the adaptive bins cut tie groups
        q = (q * 10).round() / 10
    return q, torch.bernoulli(q, generator=g), torch.arange(n, device=CPU) // 10


@pytest.mark.parametrize(("binning", "ties"), [("uniform", False), ("adaptive", True)])
def test_group_intervals_and_comparisons_stay_on_the_inputs_device(
    meta_default, binning: str, ties: bool
) -> None:
    q, y, groups = _pairs(ties=ties)
    result = calibration_error_ci(
        q, y, groups=groups, binning=binning, n_samples=50, generator=torch.Generator()
    )
    assert result.lower.device == CPU and bool(result.lower <= result.upper)
    compared = compare_calibration(q, q.sqrt(), y, n_samples=50, generator=torch.Generator())
    assert compared.p_value.device == CPU and float(compared.difference) < 0


def test_coreference_samples_are_drawn_on_the_scores_device(meta_default) -> None:
    scores = torch.tensor([[[0.0, 0, 0], [5, 0, 0], [0, 5, 0]]], device=CPU)
    drawn = sample_antecedents(scores, 10, generator=torch.Generator().manual_seed(0))
    assert drawn.device == CPU and drawn.shape == (10, 1, 3)
    sampled = coreference_marginals(scores, n_samples=20, generator=torch.Generator())
    assert sampled.device == CPU


def test_a_streaming_metrics_spiegelhalter_test_is_on_its_device(meta_default) -> None:
    g = torch.Generator().manual_seed(1)
    with torch.device("cpu"):
        metric = CalibrationError(num_classes=4, streaming=True, resolution=64, n_samples=50)
    for _ in range(6):  # past the buffer: the folded items' sums are tested
        probs = torch.softmax(3 * torch.randn(2000, 4, generator=g, device=CPU), -1)
        metric.update(probs, torch.randint(0, 4, (2000,), generator=g, device=CPU))
    test = metric.compute_spiegelhalter()
    assert test.z.device == CPU and test.p_value.device == CPU


def test_classwise_bins_tensor_is_on_the_results_device(meta_default) -> None:
    """A classwise monitor's logged bins had joined the bins (on the host) to a class column
    made on the default device, at every evaluated epoch."""
    from calib_metrics.callbacks._tensorboard import classwise_bins_tensor

    q, y, _ = _pairs(200)
    result = calibration_error_ci(q, y, bin_size=50, n_samples=20, generator=torch.Generator())
    rows = classwise_bins_tensor([result, result])
    assert rows.device == CPU and rows[:, 3].tolist() == [0.0] * 4 + [1.0] * 4


def test_recalibrators_fit_on_the_inputs_device(meta_default) -> None:
    """ScalingBinning's split was drawn on the default device (with the documented CPU
    generator: "Expected a 'cuda' device type for generator"); HistogramBinning's midpoints
    and ChainTemperature's fine search were made there and copied back."""
    from calib_metrics.models.linear_chain import sample
    from calib_metrics.recalibration import ChainTemperature, HistogramBinning, ScalingBinning

    g = torch.Generator().manual_seed(0)
    s = torch.randn(2000, generator=g, device=CPU)
    y = torch.bernoulli(torch.sigmoid(2 * s), generator=g)
    with torch.device("cpu"):  # modules live where they are built, as any nn.Module
        sb = ScalingBinning(n_bins=10, generator=torch.Generator().manual_seed(0))
        hb = HistogramBinning(n_bins=10, binning="adaptive")
        ct = ChainTemperature(objective="calib_err")
    assert sb.fit(s, y)(s).device == CPU
    hb.fit(torch.sigmoid(s), y)
    assert hb(torch.sigmoid(s)).device == CPU
    em = torch.randn(200, 6, 3, generator=g, device=CPU)
    tr = torch.randn(3, 3, generator=g, device=CPU)
    st, en = torch.zeros(3, device=CPU), torch.zeros(3, device=CPU)
    tags = sample(em, tr, st, en, n_samples=1, generator=g)[0]
    ct.fit(3 * em, 3 * tr, st, en, tags)
    assert ct.temperature.device == CPU and 1.5 < float(ct.temperature) < 6
