"""Streaming metrics pickled by a calib_metrics of another cell layout (before 2026-11-30,
when a value's cell came to depend on the value alone; see ``docs/streaming.md``).

Such a pickle always loads, so that ``torch.load`` of a model (or a Lightning checkpoint
pickled with its module) and ``copy.deepcopy`` of a module holding the metric do: the
first fix of a probe's finding (new pairs landed one cell from the old sketch's equal
values, 0.3526 for the exact 0.0424) raised in ``__setstate__``, so one evaluation metric
kept a whole model from loading, even with nothing in its sketch. Now an old metric whose
sketch holds no rows takes this version's layout (nothing in its cells to split); one
whose sketch holds rows is stale: update, forward, every compute and merge_state (either
way) refuse it, changing nothing, its state dict records its true layout (so a load
refuses it), and ``reset()`` makes it usable.
"""

from __future__ import annotations

import copy
import io
import pickle

import pytest
import torch
from torchmetrics import MetricCollection

from calib_metrics import CalibrationError
from calib_metrics.functional import sketch

# The small sketch, folded on purpose, says it is coarse: not what is tested here.
pytestmark = pytest.mark.filterwarnings("ignore:CalibrationError. the streaming sketch")

G = torch.Generator().manual_seed(1)
Q = torch.rand(3000, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G)
STALE = r"pickled by a calib_metrics before 2026-11-30, .*reset\(\) starts it afresh"


def _streaming(rows: slice) -> CalibrationError:
    metric = CalibrationError(streaming=True, resolution=64, debias=False, n_samples=20)
    if rows.stop:
        metric.update(Q[rows], Y[rows])
    return metric


def _as_old(metric: CalibrationError, layout: int | None = None) -> CalibrationError:
    """``metric`` as a calib_metrics of cell layout ``layout`` made it (None: before the
    layout was recorded on the metric, which then lacked the attribute)."""
    if layout is None:
        metric.__dict__.pop("_cell_layout", None)
    else:
        metric._cell_layout = layout
    return metric


def _loaded_old(rows: slice) -> CalibrationError:
    return pickle.loads(pickle.dumps(_as_old(_streaming(rows))))


def test_a_model_holding_an_old_metric_loads_and_copies() -> None:
    model = torch.nn.Module()
    model.metric = _as_old(_streaming(slice(0, 1000)))  # folded: past 2·64 rows
    model.empty = _as_old(_streaming(slice(0, 0)))
    saved = io.BytesIO()
    torch.save(model, saved)  # a whole model, as a checkpoint of the module
    saved.seek(0)
    loaded = torch.load(saved, weights_only=False)
    assert torch.equal(loaded.metric.cell_count, model.metric.cell_count)
    copied = copy.deepcopy(model)
    assert torch.equal(copied.metric.cell_count, model.metric.cell_count)
    with pytest.raises(ValueError, match=STALE):
        loaded.metric.compute()
    loaded.empty.update(Q[:1000], Y[:1000])  # nothing was in its cells: it takes this layout
    assert torch.equal(loaded.empty.compute(), _streaming(slice(0, 1000)).compute())


@pytest.mark.parametrize("rows", [slice(0, 0), slice(0, 100)], ids=["nothing", "rows kept"])
def test_an_old_metric_with_an_empty_sketch_takes_this_layout(rows) -> None:
    old = _loaded_old(rows)  # 100 rows are kept exactly, beside an empty sketch
    assert old._cell_layout == sketch.CELL_LAYOUT
    old.update(Q[rows.stop : 1000], Y[rows.stop : 1000])
    assert torch.equal(old.compute(), _streaming(slice(0, 1000)).compute())


def _refusals(stale: CalibrationError, other: CalibrationError) -> dict:
    q, y = Q[:10], Y[:10]
    return {
        "update": lambda: stale.update(q, y),
        "forward": lambda: stale(q, y),
        "compute": stale.compute,
        "compute_result": stale.compute_result,
        "compute_smooth": stale.compute_smooth,
        "compute_spiegelhalter": stale.compute_spiegelhalter,
        "streaming_tolerance": stale.streaming_tolerance,
        "class_bins": stale.class_bins,
        "merge_state into it": lambda: stale.merge_state(other),
        "merge_state of its state": lambda: stale.merge_state(other.metric_state),
    }


def test_an_old_metric_holding_rows_refuses_everything_and_changes_nothing() -> None:
    stale = _loaded_old(slice(0, 1000))
    counts, updates = stale.cell_count.clone(), stale.update_count
    other = _streaming(slice(1000, 3000))
    before = other.compute()
    for call, refused in _refusals(stale, other).items():
        with pytest.raises(ValueError, match=STALE):
            refused()
        assert torch.equal(stale.cell_count, counts), call
        assert stale.update_count == updates, call
        assert int(stale.rows_seen) == 1000, call
    # Into a metric of this layout: refused before anything is taken.
    with pytest.raises(ValueError, match=r"incoming .* before 2026-11-30.*reset\(\) it"):
        other.merge_state(stale)
    assert torch.equal(other.compute(), before)
    assert int(other.rows_seen) == 2000


def test_an_old_metrics_state_dict_says_its_layout_and_is_refused_where_loaded() -> None:
    stale = _loaded_old(slice(0, 1000))
    stale.persistent(True)
    state = stale.state_dict()  # saving a model that holds it still works
    assert "_sketch_layout" not in state  # what a state saved before the record lacks
    receiver = _streaming(slice(1000, 3000))
    before = receiver.compute()
    for call in ("load_state_dict", "merge_state"):
        with pytest.raises(ValueError, match=r"saved by a calib_metrics before 2026-11-30"):
            getattr(receiver, call)(dict(state))
        assert torch.equal(receiver.compute(), before)
    # A state of this layout replaces the stale one whole: it is usable again.
    current = _streaming(slice(0, 1000))
    current.persistent(True)
    stale.load_state_dict(current.state_dict())
    stale.update(Q[1000:], Y[1000:])
    assert torch.allclose(stale.compute(), _streaming(slice(0, 3000)).compute(), atol=1e-12)


def test_reset_makes_an_old_metric_usable() -> None:
    stale = _loaded_old(slice(0, 1000))
    stale.reset()
    assert stale._cell_layout == sketch.CELL_LAYOUT
    stale.update(Q[1000:], Y[1000:])
    assert torch.equal(stale.compute(), _streaming(slice(1000, 3000)).compute())


@pytest.mark.parametrize("layout", [None, 1], ids=["before the record", "another layout"])
def test_merging_a_metric_of_another_layout_is_refused_and_changes_nothing(layout) -> None:
    receiver = _streaming(slice(1000, 3000))
    before = receiver.compute()
    counts = receiver.cell_count.clone()
    incoming = _as_old(_streaming(slice(0, 1000)), layout)
    words = "before 2026-11-30" if layout is None else "of layout 1"
    with pytest.raises(ValueError, match=rf"cannot merge .* made by a calib_metrics {words}"):
        receiver.merge_state(incoming)
    assert torch.equal(receiver.cell_count, counts)
    assert torch.equal(receiver.compute(), before)


def test_this_layouts_pickles_and_old_exact_mode_pickles_still_load() -> None:
    streaming = _streaming(slice(0, 1000))
    loaded = pickle.loads(pickle.dumps(streaming))
    assert torch.equal(loaded.compute(), streaming.compute())
    loaded.merge_state(copy.deepcopy(streaming))  # a copy is a pickle too
    loaded.merge_state(streaming.clone())
    loaded.update(Q[:10], Y[:10])
    assert int(loaded.rows_seen) == 3010
    collection = MetricCollection({"a": streaming, "b": _streaming(slice(0, 1000))})
    cloned = collection.clone(prefix="val/")
    assert torch.equal(cloned["val/a"].compute(), streaming.compute())
    # An exact-mode metric holds no sketch: pickled before the record, it still loads.
    exact = CalibrationError(n_samples=20)
    exact.update(Q, Y)
    old = pickle.loads(pickle.dumps(_as_old(exact)))
    assert torch.equal(old.compute(), exact.compute())
    old.update(Q[:10], Y[:10])
    assert old._cell_layout is None
