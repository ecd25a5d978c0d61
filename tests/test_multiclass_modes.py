"""Multiclass modes: one-vs-rest, top-label and classwise, against peers and brute force.

Top-label with equal-width bins is torchmetrics' ``MulticlassCalibrationError``
(``debias=False``), checked on torchmetrics' own multiclass test cases with netcal as their
reference, and top-label with equal-mass bins is torch-uncertainty's adaptive calibration
error where the bins coincide (N a multiple of the bin count, no tied confidences), and
classwise with equal-width bins is torch-uncertainty's ``ClasswiseCalibrationError``.
Where a peer is wrong the test says so and checks against a float64 brute force
(``tests/reference.py``) instead: torchmetrics sums in float32 and gives a confidence of
exactly 1 a phantom bin of its own.

torch-uncertainty 0.13 installs against torch 2.13, but its package ``__init__`` imports
torchvision (and rich), whose only wheel here would replace torch; its calibration
modules import neither, so the test loads them by path (the adaptive module alone, or the
calibration package under a private name).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import reference as ref
import torch
from torchmetrics.classification import MulticlassCalibrationError
from torchmetrics.functional.classification import multiclass_calibration_error

from calib_metrics.functional import brier_decomposition, calibration_error, calibration_error_ci

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._peers import torch_uncertainty_calibration


def softmax_data(n: int, n_classes: int, seed: int, scale: float = 2.0):
    g = torch.Generator().manual_seed(seed)
    probs = (torch.randn(n, n_classes, generator=g) * scale).softmax(-1)
    target = torch.multinomial(probs.double() ** 0.8, 1, generator=g).squeeze(1)
    return probs, target


def top_label_pairs(probs: torch.Tensor, target: torch.Tensor):
    confidence, predicted = probs.max(-1)
    return confidence.double().numpy(), (predicted == target).long().numpy()


def torch_uncertainty_ace_module():
    spec = importlib.util.find_spec("torch_uncertainty")
    if spec is None:
        pytest.skip("torch-uncertainty is not installed (dev extra)")
    path = Path(spec.submodule_search_locations[0])
    path = path / "metrics" / "classification" / "calibration" / "adaptive_calibration_error.py"
    module_spec = importlib.util.spec_from_file_location("_torch_uncertainty_ace", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("n_bins", [10, 15])
def test_top_label_uniform_equals_torchmetrics(norm, n_bins) -> None:
    probs, target = softmax_data(3000, 5, seed=n_bins)
    assert (probs.max(-1).values < 1).all()  # no phantom bin in this data
    expected = multiclass_calibration_error(probs, target, 5, n_bins=n_bins, norm=norm)
    got = calibration_error(
        probs, target, binning="uniform", n_bins=n_bins, norm=norm, mode="top_label", debias=False
    )
    torch.testing.assert_close(got, expected.double(), rtol=1e-5, atol=1e-6)
    reference = ref.error(ref.uniform_bins(*top_label_pairs(probs, target), n_bins), norm)
    assert got.item() == pytest.approx(reference, rel=1e-12, abs=1e-15)


def test_torchmetrics_float32_sums_and_phantom_bin_against_float64_reference() -> None:
    # 4e5 items: torchmetrics' float32 scatter sums move l1 by ~1e-5, and the few
    # confidences of exactly 1 get a bin of their own there; ours is the float64 answer.
    probs, target = softmax_data(400_000, 4, seed=0, scale=4.0)
    confidence, correct = top_label_pairs(probs, target)
    assert (confidence == 1).any()
    expected = ref.error(ref.uniform_bins(confidence, correct, 15), "l1")
    peer = multiclass_calibration_error(probs, target, 4, n_bins=15, norm="l1").item()
    got = calibration_error(
        probs, target, binning="uniform", n_bins=15, norm="l1", mode="top_label", debias=False
    ).item()
    assert abs(peer - expected) > 1e-5  # the peer is off ...
    assert got == pytest.approx(expected, rel=1e-12)  # ... ours is not


@pytest.mark.parametrize("norm", ["l2", "max"])
def test_top_label_confidence_of_one_beside_the_last_bin_differs_from_torchmetrics(norm) -> None:
    """docs/measures.md's exception: rows of confidence exactly 1 beside confidences in
    [0.9, 1) fall in one last bin here (the float64 brute force) and in two bins in
    torchmetrics, whose l2 and max are then larger."""
    probs, target = softmax_data(2000, 3, seed=5, scale=3.0)
    probs = probs.double()
    certain = torch.arange(2000) % 10 == 0  # one row in ten one-hot at its argmax
    probs[certain] = torch.nn.functional.one_hot(probs[certain].argmax(-1), 3).double()
    confidence, correct = top_label_pairs(probs, target)
    assert (confidence == 1).sum() == 200 and ((confidence >= 0.9) & (confidence < 1)).any()
    got = calibration_error(
        probs, target, binning="uniform", n_bins=10, norm=norm, mode="top_label", debias=False
    ).item()
    assert got == pytest.approx(
        ref.error(ref.uniform_bins(confidence, correct, 10), norm), rel=1e-12
    )
    peer = multiclass_calibration_error(probs, target, 3, n_bins=10, norm=norm).item()
    assert got < peer - 0.01


def _torchmetrics_multiclass_cases():
    """torchmetrics' multiclass inputs 1, 2, 4, 5 (probs, logits, ×EXTRA_DIM) as probs [..., C]."""
    g = torch.Generator().manual_seed(42)
    batches, size, classes, extra = 4, 32, 5, 3
    cases = {
        "probs": torch.randn(batches, size, classes, generator=g).softmax(-1),
        "logits": torch.rand(batches, size, classes, generator=g).log_softmax(-1).softmax(-1),
        "multidim-probs": torch.rand(batches, size, classes, extra, generator=g).softmax(-2),
        "multidim-logits": torch.rand(batches, size, classes, extra, generator=g)
        .log_softmax(-2)
        .softmax(-2),
    }
    out = []
    for name, preds in cases.items():
        target_shape = (batches, size, extra) if "multidim" in name else (batches, size)
        target = torch.randint(classes, target_shape, generator=g)
        if "multidim" in name:
            preds = preds.movedim(2, -1)  # torchmetrics' [N, C, E] -> this library's [..., C]
        assert (preds.max(-1).values < 1).all()  # no phantom bin of torchmetrics' here
        out.append(pytest.param(preds, target, id=name))
    return out


@pytest.mark.parametrize(("preds", "target"), _torchmetrics_multiclass_cases())
@pytest.mark.parametrize("n_bins", [15, 20])
@pytest.mark.parametrize("norm", ["l1", "max"])
def test_torchmetrics_multiclass_cases(preds, target, n_bins, norm) -> None:
    netcal = pytest.importorskip("netcal.metrics", reason="netcal is torchmetrics' reference")
    flat, flat_target = preds.reshape(-1, 5), target.reshape(-1)
    reference = (netcal.ECE if norm == "l1" else netcal.MCE)(n_bins).measure(
        flat.double().numpy(), flat_target.numpy()
    )
    got = calibration_error(
        preds, target, binning="uniform", n_bins=n_bins, norm=norm, mode="top_label", debias=False
    )
    assert got.item() == pytest.approx(reference, abs=1e-7)
    peer = MulticlassCalibrationError(num_classes=5, n_bins=n_bins, norm=norm)
    for p, t in zip(flat.chunk(4), flat_target.chunk(4)):
        peer.update(p, t)
    assert got.item() == pytest.approx(peer.compute().item(), abs=1e-6)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_top_label_adaptive_equals_torch_uncertainty(norm) -> None:
    module = torch_uncertainty_ace_module()
    probs, target = softmax_data(3000, 4, seed=7)
    n_bins = 12  # 3000 = 12 bins of 250: the two binnings coincide
    peer = module.MulticlassAdaptiveCalibrationError(num_classes=4, n_bins=n_bins, norm=norm)
    peer.update(probs, target)
    got = calibration_error(
        probs, target, bin_size=3000 // n_bins, norm=norm, mode="top_label", debias=False
    )
    # torch-uncertainty sums in float32: agreement to its rounding, and to float64 exactly.
    assert got.item() == pytest.approx(peer.compute().item(), abs=2e-6)
    reference = ref.error(ref.adaptive_bins(*top_label_pairs(probs, target), 250), norm)
    assert got.item() == pytest.approx(reference, rel=1e-12, abs=1e-15)


def test_top_label_adaptive_where_torch_uncertainty_bins_otherwise() -> None:
    """1,000 items in bins of 33: ours join the short last run to the bin before, its 30
    bins are near-equal pieces (docs/measures.md quotes these two numbers)."""
    module = torch_uncertainty_ace_module()
    probs, target = softmax_data(1000, 5, seed=7)
    peer = module.MulticlassAdaptiveCalibrationError(num_classes=5, n_bins=30, norm="max")
    peer.update(probs, target)
    got = calibration_error(probs, target, bin_size=33, norm="max", mode="top_label", debias=False)
    reference = ref.error(ref.adaptive_bins(*top_label_pairs(probs, target), 33), "max")
    assert got.item() == pytest.approx(reference, rel=1e-12)
    assert (round(got.item(), 4), round(peer.compute().item(), 4)) == (0.2279, 0.2165)


def torch_uncertainty_calibration_package():
    """torch-uncertainty's calibration metrics, loaded as a package of their own: its
    top-level ``__init__`` imports packages it does not declare (torchvision, rich)."""
    package = torch_uncertainty_calibration()
    if package is None:
        pytest.skip("torch-uncertainty is not installed (dev extra)")
    return package


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_classwise_uniform_equals_torch_uncertainty(norm) -> None:
    """torch-uncertainty's ClasswiseCalibrationError: the mean over classes of torchmetrics'
    binary error of (probs[c], [target = c]) in 15 equal-width bins (float32 sums)."""
    package = torch_uncertainty_calibration_package()
    probs, target = softmax_data(3000, 5, seed=2)
    peer = package.ClasswiseCalibrationError(num_classes=5, num_bins=15, norm=norm)
    peer.update(probs, target)
    got = calibration_error(
        probs, target, binning="uniform", n_bins=15, norm=norm, mode="classwise", debias=False
    )
    assert got.item() == pytest.approx(peer.compute().item(), rel=1e-5, abs=1e-6)
    per_class = [
        ref.error(
            ref.uniform_bins(probs[:, c].double().numpy(), (target == c).long().numpy(), 15), norm
        )
        for c in range(5)
    ]
    assert got.item() == pytest.approx(float(np.mean(per_class)), rel=1e-12)


@pytest.mark.parametrize("bandwidth", ["auto", 0.05])
def test_top_label_smooth_equals_torch_uncertainty_reflected(bandwidth) -> None:
    """torch-uncertainty's SmoothCalibrationError is top-label (binary input too: its
    confidence max(p, 1 - p)); with kernel_type="reflected", relplot's kernel, it equals
    ours on the top-label pairs, away from the ends (float32 there)."""
    from calib_metrics.functional import smooth_calibration_error

    package = torch_uncertainty_calibration_package()
    probs, target = softmax_data(3000, 5, seed=4, scale=1.0)
    assert probs.max() < 0.99  # the ends, where relplot's kernel counts a pair at 1 once
    peer = package.SmoothCalibrationError(kernel_type="reflected", bandwidth=bandwidth)
    peer.update(probs, target)
    ours = smooth_calibration_error(
        probs.double(),
        target,
        mode="top_label",
        bandwidth=None if bandwidth == "auto" else bandwidth,
    )
    assert ours.item() == pytest.approx(peer.compute().item(), abs=1e-6)


@pytest.mark.parametrize("binning", ["adaptive", "uniform"])
def test_classwise_is_the_mean_of_per_class_errors(binning) -> None:
    probs, target = softmax_data(2000, 3, seed=3)
    size = {"bin_size": 200} if binning == "adaptive" else {"n_bins": 10}
    options = {"binning": binning, **size, "norm": "l2", "debias": False}
    got = calibration_error(probs, target, mode="classwise", **options)
    per_class = []
    for c in range(3):
        q, y = probs[:, c].double().numpy(), (target == c).long().numpy()
        bins = ref.uniform_bins(q, y, 10) if binning == "uniform" else ref.adaptive_bins(q, y, 200)
        per_class.append(ref.error(bins, "l2"))
    assert got.item() == pytest.approx(float(np.mean(per_class)), rel=1e-12)


def test_one_vs_rest_is_the_default_and_pools_every_class() -> None:
    probs, target = softmax_data(1000, 4, seed=5)
    onehot = torch.nn.functional.one_hot(target, 4)
    pooled = calibration_error(probs.reshape(-1), onehot.reshape(-1), bin_size=100, debias=False)
    assert calibration_error(probs, target, bin_size=100, debias=False).item() == pooled.item()
    explicit = calibration_error(probs, target, bin_size=100, mode="one_vs_rest", debias=False)
    assert explicit.item() == pooled.item()


@pytest.mark.parametrize("interval", ["paper", "pairs", "groups"])
def test_interval_modes(interval) -> None:
    probs, target = softmax_data(4000, 3, seed=11)
    groups = torch.arange(4000) // 8 if interval == "groups" else None
    options = {"bin_size": 200, "n_samples": 200, "interval": interval, "groups": groups}
    options["debias"] = False
    for mode in ("one_vs_rest", "top_label", "classwise"):
        result = calibration_error_ci(
            probs, target, mode=mode, generator=torch.Generator().manual_seed(0), **options
        )
        point = calibration_error(probs, target, bin_size=200, mode=mode, debias=False)
        assert result.error.item() == pytest.approx(point.item(), rel=1e-12)
        # Algorithm 2 centres on the mean of its (upward-biased) draws, not on the error.
        centre = result.mean if interval == "paper" else result.error
        assert result.lower <= centre <= result.upper
        expected_pairs = {"one_vs_rest": 12000, "top_label": 4000, "classwise": 12000}[mode]
        assert result.bins.count.sum().item() == expected_pairs


def test_classwise_interval_averages_per_class_intervals() -> None:
    probs, target = softmax_data(3000, 3, seed=2)
    options = {"bin_size": 300, "n_samples": 300, "interval": "paper"}
    result = calibration_error_ci(
        probs, target, mode="classwise", generator=torch.Generator().manual_seed(1), **options
    )
    g = torch.Generator().manual_seed(1)
    per_class = [
        calibration_error_ci(probs[:, c], (target == c).long(), generator=g, **options)
        for c in range(3)
    ]
    for field in ("error", "mean", "std", "lower", "upper"):
        expected = torch.stack([getattr(r, field) for r in per_class]).mean()
        torch.testing.assert_close(getattr(result, field), expected)


@pytest.mark.parametrize(
    ("probs", "target", "mode", "message"),
    [
        (torch.rand(4, 3), torch.tensor([0, 1, 2, 0]), "top", "mode must be one of"),
        (torch.rand(4), torch.tensor([0, 1, 1, 0]), "top_label", "needs multiclass probs"),
        (torch.rand(4, 3), torch.tensor([0.0, 1.0, 2.0, 0.0]), "top_label", "integer class"),
        (torch.rand(4, 3), torch.tensor([0, 1, 3, 0]), "classwise", r"\[0, 2\], found 3"),
        (torch.rand(4, 1), torch.tensor([0, 0, 0, 0]), "top_label", "at least 2 classes"),
        (torch.full((2, 3), 1.5), torch.tensor([0, 1]), "top_label", "must lie in"),
        # A column of class ids, as loaders yield: the hint had spoken of binary scores.
        (torch.rand(4, 3), torch.tensor([[0], [1], [2], [0]]), "top_label", r"squeeze\(-1\)"),
        (torch.rand(4, 3), torch.tensor([[0], [1], [2], [0]]), "one_vs_rest", r"squeeze\(-1\)"),
        # Arrays had been told their (valid) shapes were wrong, with a binary-scores hint.
        (np.full((4, 3), 1 / 3), np.array([0, 1, 2, 0]), "top_label", "must be tensors, got nd"),
        (torch.full((4, 3), 1 / 3), [0, 1, 2, 0], "classwise", "must be tensors, got Tensor and"),
    ],
)
def test_mode_errors(probs, target, mode, message) -> None:
    with pytest.raises(ValueError, match=message):
        calibration_error(probs, target, mode=mode, debias=False, bin_size=5000)
    with pytest.raises(ValueError, match=message):
        calibration_error_ci(
            probs, target, mode=mode, n_samples=10, debias=False, interval="paper", bin_size=5000
        )


def test_brier_decomposition_takes_multiclass_input() -> None:
    probs, target = softmax_data(1000, 3, seed=12)
    onehot = torch.nn.functional.one_hot(target, 3)
    pooled = brier_decomposition(probs.reshape(-1), onehot.reshape(-1), bin_size=100)
    assert brier_decomposition(probs, target, bin_size=100) == pooled
    confidence, predicted = probs.max(-1)
    top = brier_decomposition(confidence, (predicted == target).long(), bin_size=100)
    assert brier_decomposition(probs, target, bin_size=100, mode="top_label") == top
    with pytest.raises(ValueError, match="one split per class"):
        brier_decomposition(probs, target, mode="classwise", bin_size=5000)


@pytest.mark.parametrize("mode", ["top_label", "classwise", "one_vs_rest"])
def test_group_ids_as_a_list_are_refused_by_name(mode) -> None:
    """A list had raised AttributeError ('list' object has no attribute 'numel')."""
    probs, target = torch.full((4, 3), 1 / 3), torch.tensor([0, 1, 2, 0])
    with pytest.raises(ValueError, match="groups must be a tensor of group ids, got list"):
        calibration_error_ci(probs, target, groups=[0, 0, 1, 1], interval="groups", mode=mode)
