"""A saved state records the settings that say what its pairs are, and a load or a merge
of a state dict refuses a state of other settings.

A streaming top-label sketch past its buffer holds (confidence, correct) pairs in one row
of cells, as a binary sketch holds (q, y): loaded into a binary metric (or the other way
round, or inside a model with ``strict=True``) it was taken silently, and the binary
metric then mixed the two kinds of pairs. A dict of states carries no options, so
``merge_state(metric.metric_state)`` of padding marked 2 counted it as class 2; a
``state_dict()`` carries the records, and ``merge_state`` now takes and checks them.
"""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError

STREAM = {"streaming": True, "resolution": 256, "debias": False}
# Small sketches, for speed: their coarseness is not what these tests are about.
pytestmark = pytest.mark.filterwarnings("ignore:CalibrationError. the streaming sketch has")


def _multiclass(n: int = 3000, classes: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(2 * torch.randn(n, classes, generator=g), -1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def _binary(n: int = 3000, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g)
    return q, torch.bernoulli(q, generator=g).long()


def _saved(metric) -> dict:
    metric.persistent(True)
    return metric.state_dict()


def _top_label(**options) -> CalibrationError:
    metric = CalibrationError(num_classes=3, mode="top_label", **options)
    metric.update(*_multiclass())  # 3000 rows: past both metrics' buffers
    return metric


def _plain_binary(**options) -> CalibrationError:
    metric = CalibrationError(**options)
    metric.update(*_binary())
    return metric


def _unchanged(metric: CalibrationError, before: torch.Tensor, rows: int) -> None:
    assert int(metric.rows_seen) == rows
    torch.testing.assert_close(metric.compute(), before)


@pytest.mark.parametrize(
    ("source", "target", "named"),
    [
        (
            lambda: _top_label(**STREAM),
            lambda: _plain_binary(**STREAM),
            "num_classes 3 into num_classes None",
        ),
        (
            lambda: _plain_binary(**STREAM),
            lambda: _top_label(**STREAM),
            "num_classes None into num_classes 3",
        ),
    ],
    ids=["top-label into binary", "binary into top-label"],
)
@pytest.mark.parametrize("how", ["load_state_dict", "merge_state(state_dict)", "in a model"])
def test_a_streaming_state_of_another_mode_is_refused(source, target, named, how) -> None:
    state = _saved(source())
    metric = target()
    before, rows = metric.compute(), int(metric.rows_seen)
    if how == "in a model":
        model = torch.nn.Module()
        model.metric = metric
        with pytest.raises(RuntimeError, match=named):
            model.load_state_dict({f"metric.{k}": v for k, v in state.items()}, strict=True)
    else:
        with pytest.raises(ValueError, match=f"saved by a metric of other settings \\({named}"):
            getattr(metric, how.split("(")[0])(state)
    _unchanged(metric, before, rows)


def test_merging_a_metric_of_another_mode_is_still_refused() -> None:
    source = CalibrationError(num_classes=3, mode="top_label")
    source.update(*_multiclass(300))
    metric = CalibrationError(num_classes=3)
    with pytest.raises(ValueError, match="mode 'top_label' into mode 'one_vs_rest'"):
        metric.merge_state(source)
    assert metric.probs == [] and metric.update_count == 0


@pytest.mark.parametrize(
    ("options", "source", "target"),
    [
        ({}, "one_vs_rest", "classwise"),
        ({}, "one_vs_rest", "top_label"),
        ({}, "top_label", "classwise"),
        (STREAM, "one_vs_rest", "classwise"),
        (STREAM, "classwise", "one_vs_rest"),
    ],
)
def test_a_state_alike_in_kind_loads_into_another_mode(options, source, target) -> None:
    """The exact pairs are the same for every mode, and a streaming one-vs-rest or
    classwise metric keeps the same [C, R] sketch: the record of the mode had refused
    states that had loaded, and that compute as the target mode's own would."""
    data = _multiclass(3000, classes=4)
    saved = CalibrationError(num_classes=4, mode=source, **options)
    saved.update(*data)
    metric = CalibrationError(num_classes=4, mode=target, **options)
    metric.load_state_dict(_saved(saved))
    fresh = CalibrationError(num_classes=4, mode=target, **options)
    fresh.update(*data)
    torch.testing.assert_close(metric.compute(), fresh.compute())


@pytest.mark.parametrize(
    ("source", "target"), [("top_label", "one_vs_rest"), ("classwise", "top_label")]
)
def test_a_streaming_top_label_sketch_and_a_class_sketch_do_not_load_into_each_other(
    source, target
) -> None:
    saved = CalibrationError(num_classes=3, mode=source, **STREAM)
    saved.update(*_multiclass())
    metric = CalibrationError(num_classes=3, mode=target, **STREAM)
    with pytest.raises(ValueError, match=f"mode '{source}' into mode '{target}'"):
        metric.load_state_dict(_saved(saved))
    assert int(metric.rows_seen) == 0


def test_a_state_saved_before_the_record_still_loads() -> None:
    """Checkpoints from before the record load as they did: by shapes and values."""
    state = _saved(_top_label(**STREAM))
    del state["_settings"]
    metric = CalibrationError(num_classes=3, mode="top_label", **STREAM)
    metric.load_state_dict(state)
    torch.testing.assert_close(metric.compute(), _top_label(**STREAM).compute())


def test_a_state_dict_of_the_same_settings_merges_as_the_metric_does() -> None:
    """merge_state took a dict of the states' names only: a state_dict()'s records were
    refused as unknown keys."""
    for options in ({}, STREAM, {"num_classes": 3, "mode": "top_label", **STREAM}):
        data = _multiclass if options.get("num_classes") else _binary
        shards = [CalibrationError(**options) for _ in range(3)]
        for seed, shard in enumerate(shards):
            shard.update(*data(seed=seed + 5))
        by_dict, by_metric = CalibrationError(**options), CalibrationError(**options)
        for shard in shards[1:]:
            by_dict.merge_state(_saved(shard))
            by_metric.merge_state(shard)
        assert torch.equal(by_dict.compute(), by_metric.compute())


@pytest.mark.filterwarnings("ignore:ignore_index=\\d+ is one of the")
@pytest.mark.parametrize("kind", [CalibrationError, CalibrationComparison])
def test_a_state_dict_records_padding_that_looks_like_a_class(kind) -> None:
    """Padding 2 is class 2 of three: its values alone cannot tell, and a dict of states
    carries no ignore_index (merge_state's docstring says so); a state dict records it."""
    probs, target = _multiclass(600)
    padded = target.clone()
    padded[::3] = 2
    args = (probs, padded) if kind is CalibrationError else (probs, probs.flip(-1), padded)
    source = kind(num_classes=3, ignore_index=2)
    source.update(*args)
    metric = kind(num_classes=3)
    with pytest.raises(ValueError, match="saved with ignore_index=2, and this metric has"):
        metric.merge_state(_saved(source))
    assert metric.update_count == 0 and not metric.target
    same = kind(num_classes=3, ignore_index=2)
    same.merge_state(_saved(source))
    assert sum(t.numel() for t in same.target) == 600


def test_a_comparison_of_another_mode_still_merges_its_pairs() -> None:
    """A comparison keeps its items as given and makes pairs at compute: the mode does not
    change what its state holds, so its record does not refuse another mode's."""
    probs, target = _multiclass(300)
    source = CalibrationComparison(num_classes=3, mode="top_label", n_samples=50)
    source.update(probs, probs.flip(-1), target)
    metric = CalibrationComparison(num_classes=3, n_samples=50)
    metric.load_state_dict(_saved(source))
    assert sum(t.numel() for t in metric.target) == 300


def test_a_malformed_record_is_named() -> None:
    state = _saved(_top_label(**STREAM))
    state["_settings"] = torch.tensor([7, 3])
    metric = CalibrationError(num_classes=3, mode="top_label", **STREAM)
    with pytest.raises(ValueError, match="record of its settings \\('_settings'\\)"):
        metric.load_state_dict(state)


def test_the_record_is_checked_before_the_shapes() -> None:
    """A binary state into num_classes=3 is named by its settings, not by a shape."""
    saved = _plain_binary()
    metric = CalibrationError(num_classes=3)
    with pytest.raises(ValueError, match="num_classes None into num_classes 3"):
        metric.load_state_dict(_saved(saved))
