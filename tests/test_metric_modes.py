"""CalibrationError(mode=...): top-label and classwise, exact and streaming, as the functional.

Top-label with equal-width bins and ``debias=False`` is also torchmetrics'
``MulticlassCalibrationError`` (on data with no confidence of exactly 1, where it has a
phantom bin; see ``tests/test_multiclass_modes.py``).
"""

from __future__ import annotations

import pytest
import torch
from torchmetrics.classification import MulticlassCalibrationError

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error, calibration_error_ci

C = 4
PAD = -100


def _batches(seed: int = 0, pad: bool = False, sizes=(1500, 700, 1800)):
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        probs = torch.softmax(2.5 * torch.randn(n, C, generator=g, dtype=torch.float64), -1)
        target = torch.multinomial(probs**0.8, 1, generator=g).squeeze(1)
        if pad:
            target[torch.rand(n, generator=g) < 0.15] = PAD
        out.append((probs, target))
    return out


def _union(batches, drop_pad: bool = False):
    probs, target = (torch.cat(c) for c in zip(*batches))
    if drop_pad:
        keep = target != PAD
        probs, target = probs[keep], target[keep]
    return probs, target


@pytest.mark.parametrize("mode", ["top_label", "classwise"])
@pytest.mark.parametrize("debias", [True, False])
def test_exact_mode_equals_the_functional(mode, debias) -> None:
    batches = _batches(pad=True)
    options = {"ignore_index": PAD, "debias": debias, "seed": 5, "n_samples": 300}
    metric = CalibrationError(num_classes=C, mode=mode, **options)
    for batch in batches:
        metric.update(*batch)
    probs, target = _union(batches, drop_pad=True)
    want = calibration_error(probs, target, mode=mode, debias=debias)
    torch.testing.assert_close(metric.compute(), want, rtol=0, atol=0)
    result = metric.compute_result()
    want_ci = calibration_error_ci(
        probs, target, mode=mode, debias=debias, n_samples=300,
        generator=torch.Generator().manual_seed(5),
    )  # fmt: skip
    for field in ("error", "mean", "std", "lower", "upper"):
        torch.testing.assert_close(getattr(result, field), getattr(want_ci, field), msg=field)
    assert result.bins.count.sum().item() == target.numel() * (1 if mode == "top_label" else C)


def test_top_label_groups_follow_the_functional() -> None:
    batches = _batches(seed=3)
    metric = CalibrationError(num_classes=C, mode="top_label", n_samples=200, seed=1)
    first = 0
    for probs, target in batches:
        metric.update(probs, target, groups=(first + torch.arange(target.numel())) // 20)
        first += target.numel()
    probs, target = _union(batches)
    want = calibration_error_ci(
        probs, target, mode="top_label", groups=torch.arange(target.numel()) // 20,
        n_samples=200, generator=torch.Generator().manual_seed(1),
    )  # fmt: skip
    got = metric.compute_result()
    torch.testing.assert_close(got.lower, want.lower)
    torch.testing.assert_close(got.upper, want.upper)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_top_label_uniform_equals_torchmetrics(norm) -> None:
    batches = [(p.float(), t) for p, t in _batches(seed=7)]
    ours = CalibrationError(
        num_classes=C, mode="top_label", binning="uniform", n_bins=15, norm=norm, debias=False
    )
    theirs = MulticlassCalibrationError(num_classes=C, n_bins=15, norm=norm)
    for batch in batches:
        ours.update(*batch)
        theirs.update(*batch)
    assert (torch.cat([p for p, _ in batches]).max(-1).values < 1).all()  # no phantom bin
    torch.testing.assert_close(ours.compute(), theirs.compute().double(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["top_label", "classwise"])
def test_streaming_mode_matches_exact_bins_and_the_functional(mode) -> None:
    batches = _batches(seed=2, pad=True)
    exact = CalibrationError(num_classes=C, mode=mode, ignore_index=PAD, bin_size=200)
    stream = CalibrationError(
        num_classes=C, mode=mode, ignore_index=PAD, bin_size=200, streaming=True
    )
    for batch in batches:
        exact.update(*batch)
        stream.update(*batch)
    # The sketch's bins hold exactly the exact mode's counts (docs/streaming.md).
    for a, b in zip(exact.class_bins(), stream.class_bins(), strict=True):
        torch.testing.assert_close(a.count, b.count)
    probs, target = _union(batches, drop_pad=True)
    want = calibration_error(probs, target, mode=mode, bin_size=200)
    torch.testing.assert_close(stream.compute(), want, rtol=0, atol=2e-3)
    result = stream.compute_result()
    assert result.lower <= result.error <= result.upper


def test_forward_rejects_a_bad_batch_and_keeps_state() -> None:
    batches = _batches(seed=4)
    metric = CalibrationError(num_classes=C, mode="top_label")
    metric(*batches[0])
    probs, target = batches[1]
    with pytest.raises(ValueError, match="class id"):
        metric(probs, target + C)
    metric(*batches[2])
    want = calibration_error(*_union([batches[0], batches[2]]), mode="top_label")
    torch.testing.assert_close(metric.compute(), want)


def test_modes_do_not_merge() -> None:
    one, two = CalibrationError(num_classes=C), CalibrationError(num_classes=C, mode="top_label")
    two.update(*_batches()[0])
    with pytest.raises(ValueError, match="mode"):
        one.merge_state(two)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "top"}, "mode must be one of"),
        ({"mode": "top_label", "num_classes": None}, "set num_classes"),
        ({"mode": "classwise", "average": "none"}, "average must stay 'micro'"),
        ({"mode": "top_label", "average": "macro"}, "average must stay 'micro'"),
    ],
)
def test_bad_mode_arguments(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        CalibrationError(**{"num_classes": C, **kwargs})


@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_plot_of_an_average_shows_the_value_compute_returns(average: str) -> None:
    """The figure had drawn the classes alone, as average=None, without the number logged."""
    import matplotlib.pyplot as plt

    generator = torch.Generator().manual_seed(0)
    probs = torch.randn(3000, 3, generator=generator).softmax(-1)
    target = torch.randint(0, 3, (3000,), generator=generator)
    metric = CalibrationError(num_classes=3, average=average)
    metric.update(probs, target)
    value = metric.compute().item()
    fig, ax = metric.plot()
    assert ax.get_title() == f"{average} average of 3 classes: {value:.4f}"
    dashed = [line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert dashed == [value]
    plt.close(fig)
