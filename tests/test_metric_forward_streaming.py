"""A streaming metric's forward(): the batch is measured in the exact mode and its rows
buffered, never a sketch of its own; and states reset under torch.inference_mode (a
Lightning validation loop) still take updates outside it.

Before, forward reset a streaming batch metric, which clones the whole num_classes ×
resolution sketch, and merged it back (about 1 s and 1.2 GB a batch at 47 classes with
the default resolution); and a reset under inference_mode made inference tensors that
every later update outside it failed on with torch's RuntimeError, after adding the
batch to rows_seen."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationError

CLASSES = 5


def _batches(count: int, rows: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(count):
        probs = torch.softmax(2 * torch.randn(rows, CLASSES, generator=g), -1)
        yield probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def test_forward_clones_nothing_of_the_sketchs_size(monkeypatch) -> None:
    metric = CalibrationError(CLASSES, streaming=True, resolution=2**10)
    sketch_cells = CLASSES * 2**10
    cloned: list[int] = []
    original = torch.Tensor.clone

    def clone(self, *args, **kwargs):
        cloned.append(self.numel())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "clone", clone)
    for probs, target in _batches(3, 40):
        metric(probs, target)
    assert max(cloned, default=0) < sketch_cells


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label"])
def test_forward_and_update_accumulate_alike_across_folds(mode) -> None:
    # 30 batches of 40 rows pass the buffer (2 × 64 rows) many times over.
    options = {"streaming": True, "resolution": 64, "mode": mode}
    by_forward, by_update = (
        CalibrationError(CLASSES, **options),
        CalibrationError(CLASSES, **options),
    )
    for probs, target in _batches(30, 40):
        value = by_forward(probs, target)
        alone = CalibrationError(CLASSES, mode=mode)
        alone.update(probs, target)
        torch.testing.assert_close(value, alone.compute())
        by_update.update(probs, target)
    assert by_forward._folded and by_forward.update_count == 30
    assert int(by_forward.rows_seen) == int(by_update.rows_seen) == 1200
    torch.testing.assert_close(by_forward.compute(), by_update.compute(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("call", ["update", "forward"])
def test_a_reset_under_inference_mode_keeps_later_updates(call) -> None:
    metric = CalibrationError(CLASSES, streaming=True, resolution=64)
    batches = list(_batches(8, 40, seed=3))
    for probs, target in batches[:4]:  # folded into the sketch
        metric.update(probs, target)
    with torch.inference_mode():
        metric.reset()
    for probs, target in batches[4:]:
        (metric.update if call == "update" else metric)(probs, target)
    fresh = CalibrationError(CLASSES, streaming=True, resolution=64)
    for probs, target in batches[4:]:
        fresh.update(probs, target)
    assert int(metric.rows_seen) == 160
    torch.testing.assert_close(metric.compute(), fresh.compute(), rtol=1e-9, atol=1e-12)


def test_a_forward_under_inference_mode_keeps_later_updates() -> None:
    # The forward's new rows_seen was an inference tensor beside normal sketch states:
    # the next update outside that mode failed, after counting its batch.
    metric = CalibrationError(CLASSES, streaming=True, resolution=64)
    (probs, target), (more, more_target) = _batches(2, 40, seed=4)
    with torch.inference_mode():
        metric(probs, target)
    metric.update(more, more_target)
    assert int(metric.rows_seen) == 80 == sum(part.shape[0] for part in metric.probs)


def test_forward_refuses_what_a_streaming_update_refuses() -> None:
    # The batch is measured in the exact mode, which takes group ids and any device: the
    # streaming metric's own checks must run first, and change nothing.
    probs, target = next(_batches(1, 40, seed=5))
    metric = CalibrationError(CLASSES, streaming=True, resolution=64)
    with pytest.raises(ValueError, match="groups= needs streaming=False"):
        metric(probs, target, groups=torch.arange(40))
    on_meta = CalibrationError(CLASSES, streaming=True, resolution=64).to("meta")
    with pytest.raises(ValueError, match="the metric's sketch on meta"):
        on_meta(probs, target)
    assert metric.update_count == on_meta.update_count == 0
    assert int(metric.rows_seen) == 0 and not metric.probs


@pytest.mark.parametrize("streaming", [False, True], ids=["exact", "streaming"])
@pytest.mark.parametrize("updated", [False, True], ids=["empty", "updated"])
def test_a_metric_on_meta_is_refused_by_every_compute(streaming: bool, updated: bool) -> None:
    """A streaming metric on meta had failed in torch ("Tensor.item() cannot be called on
    meta tensors"), an updated exact one with "META device type not an accelerator"."""
    import warnings

    from calib_metrics import CalibrationComparison

    probs, target = next(_batches(1, 40, seed=6))
    metric = CalibrationError(CLASSES, streaming=streaming, resolution=64)
    if updated:
        metric.update(probs, target)
    metric = metric.to("meta")
    calls = ["compute", "compute_result", "compute_smooth", "compute_spiegelhalter"]
    calls += ["streaming_tolerance", "class_bins"]
    # An exact metric that holds nothing has no state on meta: it has no pairs.
    said = "is on the meta device" if updated or streaming else "has no pairs"
    for name in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torchmetrics' "compute before update"
            with pytest.raises(ValueError, match=f"CalibrationError {said}"):
                getattr(metric, name)()
    comparison = CalibrationComparison()
    if updated:
        comparison.update(probs[:, 0], probs[:, 1], (target == 0).long())
    comparison = comparison.to("meta")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        said = "is on the meta device" if updated else "has no items"
        with pytest.raises(ValueError, match=f"CalibrationComparison {said}"):
            comparison.compute()


def test_a_metric_built_under_a_meta_default_device_computes() -> None:
    """torchmetrics takes its nominal device from the default one: a metric built under
    ``torch.device("meta")`` (a lazily initialised model's) reports meta and keeps real
    tensors. The meta check had refused it, which computed before."""
    from calib_metrics import CalibrationComparison

    probs, target = next(_batches(1, 40, seed=8))
    with torch.device("meta"):
        metric = CalibrationError(CLASSES)
        comparison = CalibrationComparison()
    assert metric.device.type == "meta"
    metric.update(probs, target)
    reference = CalibrationError(CLASSES)
    reference.update(probs, target)
    assert torch.equal(metric.compute(), reference.compute())
    q, y = probs[:, 0], (target == 0).long()
    comparison.update(q, q.sqrt(), y)
    comparison.compute()


@pytest.mark.parametrize("streaming", [False, True], ids=["exact", "streaming"])
def test_a_meta_batch_is_refused_unchecked_too(streaming: bool) -> None:
    """With validate_args=False a meta batch had been kept, and every later compute failed
    in torch ("Tensor on device meta is not on the expected device cpu!"): the pairs
    already held were lost. A streaming metric had advised moving itself to meta."""
    from calib_metrics import CalibrationComparison

    probs, target = next(_batches(1, 40, seed=7))
    metric = CalibrationError(CLASSES, streaming=streaming, validate_args=False)
    metric.update(probs, target)
    before = metric.compute()
    with pytest.raises(ValueError, match="probs is on the meta device: it holds no values"):
        metric.update(probs.to("meta"), target.to("meta"))
    assert metric.update_count == 1 and torch.equal(metric.compute(), before)
    comparison = CalibrationComparison(validate_args=False)
    q, y = probs[:, 0], (target == 0).long()
    comparison.update(q, q.sqrt(), y)
    with pytest.raises(ValueError, match="is on the meta device"):
        comparison.update(q.to("meta"), q.sqrt().to("meta"), y.to("meta"))
    assert comparison.update_count == 1
    comparison.compute()


@pytest.mark.parametrize("num_classes", [None, 5])
def test_streaming_folds_a_large_batch_in_bounded_pieces(monkeypatch, num_classes) -> None:
    """The sketch's temporaries are about 50 bytes a pair: one update of 5·10⁷ pairs had
    peaked at nine times its input, a fold of the buffer (524,288 rows of 47 classes) at
    1.1 GiB. Rows now fold at most _FOLD_PAIRS pairs at a time, with the same result."""
    from calib_metrics import metric as metric_module
    from calib_metrics.functional import sketch

    g = torch.Generator().manual_seed(0)
    if num_classes is None:
        probs = torch.rand(6000, generator=g)
        target = torch.bernoulli(probs, generator=g)
    else:
        probs = torch.softmax(2 * torch.randn(6000, num_classes, generator=g), -1)
        target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    options = {"num_classes": num_classes, "streaming": True, "resolution": 1024}
    whole = CalibrationError(**options)
    whole.update(probs, target)
    sizes = []
    accumulate = sketch.accumulate

    def recorded(state, p, t, w=None):
        sizes.append(p.numel())
        return accumulate(state, p, t, w)

    monkeypatch.setattr(metric_module, "_FOLD_PAIRS", 1000)
    monkeypatch.setattr(sketch, "accumulate", recorded)
    pieces = CalibrationError(**options)
    pieces.update(probs[:100], target[:100])  # kept exactly, then folded with the rest
    pieces.update(probs[100:], target[100:])
    assert sizes and max(sizes) <= 1000
    assert sum(sizes) == probs.numel()
    torch.testing.assert_close(pieces.compute(), whole.compute(), rtol=1e-12, atol=1e-12)


def test_a_merged_state_whose_parts_split_otherwise_still_folds() -> None:
    """A state dict whose target list was joined (one part beside two of probs): the
    buffer's fold had zipped the parts ("zip() argument 2 is shorter") and left the
    metric broken, its rows counted and its sketch half filled."""
    g = torch.Generator().manual_seed(0)
    p = torch.rand(100, generator=g)
    y = torch.bernoulli(p, generator=g).long()
    source = CalibrationError(streaming=True, resolution=64)
    source.update(p[:60], y[:60])
    source.update(p[60:], y[60:])
    state = dict(source.metric_state)
    state["target"] = [torch.cat(state["target"])]
    merged = CalibrationError(streaming=True, resolution=64)
    extra = torch.rand(50, generator=g)
    merged.update(extra, torch.ones(50, dtype=torch.long))
    merged.merge_state(state)
    whole = CalibrationError(streaming=True, resolution=64)
    whole.update(torch.cat([extra, p]), torch.cat([torch.ones(50, dtype=torch.long), y]))
    torch.testing.assert_close(merged.compute(), whole.compute())
