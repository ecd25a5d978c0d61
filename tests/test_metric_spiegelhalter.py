"""CalibrationError.compute_spiegelhalter: the metric's form of Spiegelhalter's test."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import spiegelhalter_test


def _binary(n: int, seed: int = 0, slope: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(0.5 + slope * (q - 0.5), generator=g)


def test_exact_mode_equals_the_functional_on_the_concatenation() -> None:
    q, y = _binary(3000, slope=0.9)
    metric = CalibrationError()
    for batch in torch.arange(3000).chunk(3):
        metric.update(q[batch], y[batch])
    got, want = metric.compute_spiegelhalter(), spiegelhalter_test(q, y)
    torch.testing.assert_close(got.z, want.z)
    torch.testing.assert_close(got.p_value, want.p_value)


def test_kept_groups_give_the_cluster_robust_variance() -> None:
    q, y = _binary(2000)
    groups = torch.arange(2000) // 20
    metric = CalibrationError()
    metric.update(q, y, groups=groups)
    got = metric.compute_spiegelhalter()
    torch.testing.assert_close(got.z, spiegelhalter_test(q, y, groups=groups).z)
    assert got.z != spiegelhalter_test(q, y).z


def test_streaming_histogram_agrees_with_the_exact_test() -> None:
    # Beyond the exact buffer (524,288 rows) the streaming mode keeps only its histogram.
    q, y = _binary(700_000, seed=1, slope=0.99)
    metric = CalibrationError(streaming=True)
    for batch in torch.arange(q.numel()).chunk(4):
        metric.update(q[batch], y[batch])
    got, want = metric.compute_spiegelhalter(), spiegelhalter_test(q, y)
    assert got.z.item() == pytest.approx(want.z.item(), abs=2e-3)
    assert want.p_value < 0.05  # the case is one the test can see


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label"])
def test_multiclass_modes_equal_the_functional(mode) -> None:
    g = torch.Generator().manual_seed(2)
    p = torch.softmax(2 * torch.randn(1500, 3, generator=g, dtype=torch.float64), -1)
    c = torch.multinomial(p, 1, generator=g).squeeze(1)
    sharp = torch.softmax(2 * p.log(), -1)
    metric = CalibrationError(num_classes=3, mode=mode)
    metric.update(sharp, c)
    got = metric.compute_spiegelhalter()
    torch.testing.assert_close(got.z, spiegelhalter_test(sharp, c, mode=mode).z)


def test_per_class_average_gives_one_test_per_class() -> None:
    g = torch.Generator().manual_seed(3)
    p = torch.softmax(2 * torch.randn(1500, 3, generator=g, dtype=torch.float64), -1)
    c = torch.multinomial(p, 1, generator=g).squeeze(1)
    metric = CalibrationError(num_classes=3, average=None)
    metric.update(p, c)
    got = metric.compute_spiegelhalter()
    assert len(got) == 3
    for k, result in enumerate(got):
        torch.testing.assert_close(result.z, spiegelhalter_test(p[:, k], (c == k).double()).z)


def test_a_folded_one_vs_rest_sketch_says_its_test_takes_the_pairs_as_independent() -> None:
    """Once a streaming metric folds pooled one-vs-rest pairs into its sketch, its test
    takes them as independent (which they are not): p moved from 0.10 (the exact
    test, items as groups) to 0.71 here without a word."""
    import warnings

    g = torch.Generator().manual_seed(1)
    probs = torch.rand(40000, 5, generator=g).pow(3).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    for mode, told in (("one_vs_rest", 1), ("top_label", 0)):
        metric = CalibrationError(num_classes=5, mode=mode, streaming=True, resolution=2**12)
        for start in range(0, 40000, 5000):
            metric.update(probs[start : start + 5000], target[start : start + 5000])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            metric.compute_spiegelhalter()
            metric.compute_spiegelhalter()  # said once per metric
        said = [w for w in caught if "takes the pairs as independent" in str(w.message)]
        assert len(said) == told
    exact = CalibrationError(num_classes=5, streaming=True)
    exact.update(probs[:5000], target[:5000])  # within the buffer: the exact test, no word
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = exact.compute_spiegelhalter()
    assert result.z == spiegelhalter_test(probs[:5000], target[:5000]).z
