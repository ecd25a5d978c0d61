"""torchmetrics' wrappers around the metrics: ``Running`` keeps each window's state by
reference and then resets the metric. torchmetrics' ``reset`` clears list states in
place, so the kept pairs vanished and ``Running(CalibrationError())`` raised "no pairs"
(it does on torchmetrics' own list-state metrics too: ``Running(CatMetric())`` keeps one
batch of two). The metrics' ``reset`` now gives them new lists."""

from __future__ import annotations

import pytest
import torch
from torchmetrics import MetricCollection
from torchmetrics.wrappers import MetricTracker, Running

from calib_metrics import CalibrationComparison, CalibrationError

G = torch.Generator().manual_seed(0)
Q = torch.rand(800, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q**1.3, generator=G)
BATCHES = [slice(i, i + 200) for i in range(0, 800, 200)]


@pytest.mark.parametrize("call", ["update", "forward"])
@pytest.mark.parametrize("streaming", [False, True])
def test_running_measures_the_last_window_of_batches(streaming: bool, call: str) -> None:
    running = Running(CalibrationError(streaming=streaming, resolution=2**10), window=2)
    for part in BATCHES:
        getattr(running, call)(Q[part], Y[part])
    last = CalibrationError(streaming=streaming, resolution=2**10)
    last.update(Q[400:], Y[400:])
    torch.testing.assert_close(running.compute(), last.compute())


def test_running_comparison_measures_the_last_window() -> None:
    running = Running(CalibrationComparison(n_samples=50), window=2)
    for part in BATCHES:
        running.update(Q[part], Q[part].sqrt(), Y[part])
    last = CalibrationComparison(n_samples=50)
    last.update(Q[400:], Q[400:].sqrt(), Y[400:])
    assert running.compute().difference == last.compute().difference


def test_tracker_keeps_one_value_per_epoch() -> None:
    tracker = MetricTracker(CalibrationError(), maximize=False)
    for part in BATCHES[:3]:
        tracker.increment()
        tracker.update(Q[part], Y[part])
    want = []
    for part in BATCHES[:3]:
        one = CalibrationError()
        one.update(Q[part], Y[part])
        want.append(one.compute())
    torch.testing.assert_close(tracker.compute_all(), torch.stack(want))


@pytest.mark.parametrize("streaming", [False, True])
def test_a_collection_sharing_state_stays_right_across_resets(streaming: bool) -> None:
    # compute_groups makes the three metrics share one state; reset must not split it.
    options = {"a": {}, "b": {"norm": "l1"}, "c": {"debias": False}}
    collection = MetricCollection(
        {
            k: CalibrationError(streaming=streaming, resolution=2**10, **o)
            for k, o in options.items()
        },
        compute_groups=True,
    )
    for _ in range(2):
        collection.update(Q[:400], Y[:400])
        collection(Q[400:], Y[400:])
        assert collection.compute_groups == {0: ["a", "b", "c"]}
        for name, value in collection.compute().items():
            alone = CalibrationError(streaming=streaming, resolution=2**10, **options[name])
            alone.update(Q, Y)
            assert torch.equal(value, alone.compute())
        collection.reset()


@pytest.mark.parametrize("labels", [["x", "y", "z"], None])
def test_classwise_wrapper_cannot_replace_a_comparisons_labels(labels) -> None:
    """ClasswiseWrapper passes its labels= to the wrapped metric's state of that name: the
    comparison's labels became the class names (or None), and its next update failed with
    "this batch came without labels=" (which the user never gave) or an AttributeError."""
    from torchmetrics.wrappers import ClasswiseWrapper

    from calib_metrics import CalibrationComparison

    comparison = CalibrationComparison(num_classes=3)
    with pytest.raises(ValueError, match=r"state 'labels' holds tensors.*ClasswiseWrapper"):
        ClasswiseWrapper(comparison, labels=labels)
    assert comparison.labels == []  # left as it was
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(200, 3, generator=g), -1)
    target = torch.randint(3, (200,), generator=g)
    for _ in range(2):
        comparison.update(probs, probs, target)
    assert comparison.compute().difference == 0


def test_bootstrapper_takes_float_or_float64_quantiles() -> None:
    """compute() is float64: BootStrapper's quantiles as floats or a float64 tensor, as the
    README says (a float32 tensor fails inside torch.quantile)."""
    from torchmetrics.wrappers import BootStrapper

    for quantile in (0.05, torch.tensor([0.05, 0.95], dtype=torch.float64)):
        boot = BootStrapper(CalibrationError(), num_bootstraps=5, quantile=quantile)
        boot.update(Q.float(), Y)
        found = boot.compute()
        assert found["mean"].dtype == torch.float64
        assert bool((found["quantile"] <= found["mean"] + 3 * found["std"]).all())
