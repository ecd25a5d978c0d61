"""A state saved by a metric of other settings is refused, naming the state.

torchmetrics assigns a loaded state as it comes, and its states are not buffers, so
torch's own shape check does not see them. Before, a streaming sketch of 64 cells loaded
silently into a metric of resolution 128 (its next update added cells of one binning
into the other's), a 3-class sketch into a 4-class metric, and an exact 3-class state
into a 4-class metric that then computed on the wrong rows and failed at the next update
with torch's RuntimeError. ``merge_state`` of a state dict took them as well.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError


def _multiclass(n: int, classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(classes)
    probs = torch.softmax(torch.randn(n, classes, generator=g), -1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def _saved(metric: CalibrationError | CalibrationComparison) -> dict:
    metric.persistent(True)
    return metric.state_dict()


def _loader(**options) -> CalibrationError:
    metric = CalibrationError(**options)
    metric.persistent(True)
    return metric


def _binary_streaming(resolution: int) -> CalibrationError:
    metric = CalibrationError(streaming=True, resolution=resolution)
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(300, generator=g)
    metric.update(probs, torch.bernoulli(probs, generator=g))  # past the buffer of 128 rows
    return metric


def _multiclass_metric(classes: int, **options) -> CalibrationError:
    metric = CalibrationError(num_classes=classes, **options)
    metric.update(*_multiclass(50, classes))
    return metric


@pytest.mark.parametrize(
    ("source", "options", "named"),
    [
        (lambda: _binary_streaming(64), {"streaming": True, "resolution": 128}, "cell_count"),
        (
            lambda: _multiclass_metric(3, streaming=True, resolution=64),
            {"num_classes": 4, "streaming": True, "resolution": 64},
            # The record of the settings, checked before the shapes, names it.
            "num_classes 3 into num_classes 4",
        ),
        (lambda: _multiclass_metric(3), {"num_classes": 4}, "num_classes 3 into num_classes 4"),
        (lambda: _multiclass_metric(3), {}, "num_classes 3 into num_classes None"),
    ],
    ids=["resolution", "streaming classes", "exact classes", "multiclass into binary"],
)
def test_loading_a_state_of_other_settings_is_refused(source, options, named) -> None:
    saved = _saved(source())
    metric = _loader(**options)
    with pytest.raises(ValueError, match=named):
        metric.load_state_dict(saved)
    # Nothing was loaded: the metric is as it was.
    assert metric.update_count == 0
    assert all(
        torch.equal(value, metric._defaults[name]) if isinstance(value, torch.Tensor) else not value
        for name, value in metric.metric_state.items()
    )


def test_merging_a_state_dict_of_other_settings_is_refused() -> None:
    mine = _multiclass_metric(4)
    before = mine.compute()
    theirs = _multiclass_metric(3)
    with pytest.raises(ValueError, match="probs"):
        mine.merge_state(dict(theirs.metric_state))
    torch.testing.assert_close(mine.compute(), before)
    sketch = _binary_streaming(128)
    with pytest.raises(ValueError, match="cell_count"):
        sketch.merge_state(dict(_binary_streaming(64).metric_state))


def test_a_top_label_sketch_is_refused_by_a_binary_metric_whose_buffer_it_fits() -> None:
    # A top-label state (rows of C probabilities, a buffer of 4R/(C + 1) = 227 rows) past
    # its buffer has a one-row sketch, as a binary metric's is; it had loaded into one
    # (buffer 2R = 2048), which took its 1,000 rows to be still buffered and said "no
    # pairs" at compute().
    top = CalibrationError(num_classes=17, mode="top_label", streaming=True, resolution=1024)
    top.update(*_multiclass(1000, 17))
    binary = _loader(streaming=True, resolution=1024)
    # A state dict is named by its record (checked first), a dict of states by its rows.
    for bring, named in (
        (binary.load_state_dict, "num_classes 17 into num_classes None"),
        (binary.merge_state, r"sketch holds 1000 of its 1000 rows.*keeps up to 2048"),
    ):
        state = _saved(top) if bring == binary.load_state_dict else dict(top.metric_state)
        with pytest.raises(ValueError, match=named):
            bring(state)
        assert int(binary.rows_seen) == 0 and binary.update_count == 0
    # Past the binary buffer too, the state's record of its settings refuses it
    # (test_metric_saved_settings.py); a state saved before the record, or a dict of
    # states, cannot be told apart (docs/streaming.md).
    top.update(*_multiclass(2000, 17))
    with pytest.raises(ValueError, match="num_classes 17 into num_classes None"):
        binary.load_state_dict(_saved(top))
    older = {k: v for k, v in _saved(top).items() if k != "_settings"}
    binary.load_state_dict(older)
    torch.testing.assert_close(binary.compute(), top.compute())


def test_a_comparison_refuses_a_state_of_other_classes() -> None:
    source = CalibrationComparison(num_classes=3, n_samples=50)
    probs, target = _multiclass(40, 3)
    source.update(probs, probs.flip(-1), target)
    metric = CalibrationComparison(num_classes=4, n_samples=50)
    metric.persistent(True)
    with pytest.raises(ValueError, match="num_classes 3 into num_classes 4"):
        metric.load_state_dict(_saved(source))  # by its record, checked first
    with pytest.raises(ValueError, match="probs_a"):
        metric.merge_state(dict(source.metric_state))
    assert not metric.target


@pytest.mark.filterwarnings("ignore:The ``compute`` method")  # torchmetrics: no update yet
@pytest.mark.parametrize("streaming", [False, True])
def test_a_state_of_the_same_settings_still_loads(streaming: bool) -> None:
    options = {"streaming": streaming, "resolution": 64}
    source = _multiclass_metric(3, **options)
    metric = _loader(num_classes=3, **options)
    metric.load_state_dict(_saved(source))
    torch.testing.assert_close(metric.compute(), source.compute())


def test_a_sketch_without_its_extremes_is_refused_and_nothing_is_loaded() -> None:
    """A state of the four sums alone (saved before the sketch kept each cell's lowest and
    highest q) had loaded, leaving the extremes of the metric it was loaded into."""
    saved = _saved(_binary_streaming(64))
    older = {k: v for k, v in saved.items() if k not in ("cell_low", "cell_high")}
    metric = _loader(streaming=True, resolution=64)
    metric.update(torch.tensor([0.2, 0.7]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"lacks 'cell_high', 'cell_low'.*nothing was loaded"):
        metric.load_state_dict(older)
    assert metric.rows_seen.item() == 2 and metric.cell_count.sum().item() == 0


class _Net(torch.nn.Module):
    """A model that holds a persistent streaming metric between two layers."""

    def __init__(self, resolution: int = 64) -> None:
        super().__init__()
        self.encoder = torch.nn.Linear(2, 2)
        self.calib = _loader(streaming=True, resolution=resolution)
        self.head = torch.nn.Linear(2, 2)


def _older_checkpoint() -> tuple[_Net, dict]:
    source = _Net()
    source.calib.update(torch.rand(300), torch.randint(0, 2, (300,)))
    state = source.state_dict()
    return source, {
        k: v for k, v in state.items() if k not in ("calib.cell_low", "calib.cell_high")
    }


def test_a_model_loads_around_a_refused_metric_as_torch_loads_any_module() -> None:
    """A refusal inside a model had been a ValueError raised mid-load: the encoder was
    overwritten, the head was not, and strict=False refused too."""
    source, older = _older_checkpoint()
    target = _Net()
    target.calib.update(torch.tensor([0.2, 0.7]), torch.tensor([0, 1]))
    with (
        pytest.warns(UserWarning, match="lacks 'cell_high', 'cell_low'"),
        pytest.raises(RuntimeError, match=r'Missing key\(s\).*"calib.cell_high"'),
    ):
        target.load_state_dict(older)
    for name in ("encoder", "head"):  # torch loads the rest, then reports
        assert torch.equal(getattr(target, name).weight, getattr(source, name).weight)
    assert target.calib.rows_seen.item() == 2  # the metric keeps its own state whole
    relaxed = _Net()
    with pytest.warns(UserWarning, match="nothing was loaded"):
        result = relaxed.load_state_dict(older, strict=False)
    assert sorted(result.missing_keys) == ["calib.cell_high", "calib.cell_low"]
    assert torch.equal(relaxed.head.weight, source.head.weight)


def test_a_state_of_another_shape_inside_a_model_is_torch_s_error_after_the_rest() -> None:
    source = _Net()
    source.calib.update(torch.rand(300), torch.randint(0, 2, (300,)))
    target = _Net(resolution=128)
    with pytest.raises(RuntimeError, match="state 'cell_count' has shape"):
        target.load_state_dict(source.state_dict(), strict=False)
    assert torch.equal(target.head.weight, source.head.weight)
    assert target.calib.rows_seen.item() == 0


def test_a_state_saved_without_group_ids_loads_and_leaves_none_behind() -> None:
    """interval="pairs" keeps no group ids; the default metric does. Its state had been
    refused as an older sketch's (a regression of the missing-keys check)."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g)
    y = torch.bernoulli(q, generator=g).long()
    source = _loader(interval="pairs")
    source.update(q, y)
    target = _loader()
    target.update(q[:10], y[:10], groups=torch.arange(10))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor "compute called before update"
        target.load_state_dict(source.state_dict())
        assert target.groups == [] and target.compute() == source.compute()


def test_a_state_of_joined_tensors_loads_as_lists_and_keeps_updating() -> None:
    """A synchronised state holds each pair state as one tensor; loaded, it had stayed a
    tensor, and the next update or merge failed with torch's errors."""
    g = torch.Generator().manual_seed(1)
    q = torch.rand(200, generator=g)
    y = torch.bernoulli(q, generator=g).long()
    source = _loader()
    source.update(q[:100], y[:100])
    joined = {k: torch.cat(v) if v else torch.empty(0) for k, v in source.metric_state.items()}
    target = _loader()
    target.load_state_dict(joined)
    assert isinstance(target.probs, list)
    target.update(q[100:], y[100:])
    whole = CalibrationError()
    whole.update(q, y)
    assert target.compute() == whole.compute()


class _Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Sequential(_Net())


def test_the_refusal_warning_inside_a_model_points_at_the_caller_s_line() -> None:
    """The warning had pointed into torch's load recursion (a fixed stacklevel), whose
    depth grows with the metric's nesting."""
    _, older = _older_checkpoint()
    for model, state in (
        (_Net(), older),
        (_Outer(), {f"inner.0.{k}": v for k, v in older.items()}),
    ):
        with pytest.warns(UserWarning, match="nothing was loaded") as caught:
            model.load_state_dict(state, strict=False)
        assert [w.filename for w in caught] == [__file__]


def _pairs(n: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    q = torch.rand(n, generator=g)
    return q, torch.bernoulli(0.25 + q / 2, generator=g).long()


@pytest.mark.parametrize("source_interval", ["pairs", None])
def test_pairs_without_group_ids_are_refused_by_interval_groups(source_interval) -> None:
    """interval="groups" had loaded them silently, and then every compute_result() failed
    (before and after grouped updates): what it had kept was lost."""
    q, y = _pairs()
    source = _loader(interval=source_interval)
    source.update(q[:500], y[:500])
    metric = _loader(interval="groups")
    metric.update(q[500:], y[500:], groups=torch.arange(500) // 10)
    before = metric.compute_result()
    with pytest.raises(ValueError, match="500 items without group ids, which interval='groups'"):
        metric.load_state_dict(_saved(source))
    assert metric.compute_result().error == before.error
    assert sum(g.numel() for g in metric.groups) == 500
    model = torch.nn.Sequential(_loader(interval="groups"))
    with pytest.raises(RuntimeError, match="500 items without group ids"):
        model.load_state_dict({f"0.{k}": v for k, v in _saved(source).items()})
    assert model[0].probs == []


def test_an_empty_state_without_group_ids_still_loads_into_interval_groups() -> None:
    metric = _loader(interval="groups")
    metric.load_state_dict(_saved(CalibrationError(interval="pairs")))
    q, y = _pairs(300)
    metric.update(q, y, groups=torch.arange(300) // 10)
    assert metric.compute_result().bins.count.sum() == 300


@pytest.mark.parametrize("interval", ["pairs", "paper"])
def test_a_default_state_never_given_groups_loads_into_a_pair_interval(interval) -> None:
    """Its empty list of group ids had been refused as a state this metric does not keep
    ("saved by a metric of other settings"), and inside a model its valid pairs were left
    behind; an empty list holds nothing to lose."""
    q, y = _pairs()
    source = _loader()
    source.update(q, y)
    want = _loader(interval=interval)
    want.update(q, y)
    metric = _loader(interval=interval)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metric.load_state_dict(_saved(source))
        assert metric.compute() == want.compute()
    model = torch.nn.Sequential(_loader(interval=interval))
    model.load_state_dict({f"0.{k}": v for k, v in _saved(source).items()})  # strict
    assert model[0].compute() == want.compute()


def test_group_ids_that_hold_something_are_still_refused_by_a_pair_interval() -> None:
    q, y = _pairs()
    source = _loader()
    source.update(q, y, groups=torch.arange(1000) // 10)
    metric = _loader(interval="pairs")
    with pytest.raises(ValueError, match="the state holds 'groups', which this metric"):
        metric.load_state_dict(_saved(source))
