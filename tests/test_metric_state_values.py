"""A loaded or merged state is checked by its values as ``update`` checks a batch, and a
loaded state is never hidden behind the value ``compute()`` cached before."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError

G = torch.Generator().manual_seed(0)
Q = torch.rand(400, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G).long()


@pytest.mark.parametrize("streaming", [False, True])
def test_compute_after_load_state_dict_gives_the_loaded_value(streaming: bool) -> None:
    other = CalibrationError(streaming=streaming)
    other.persistent(True)
    other.update(Q, (Q > 0.5).long())  # a miscalibrated model
    metric = CalibrationError(streaming=streaming)
    metric.persistent(True)
    metric.update(Q, Y)
    metric.compute()  # cached
    metric.load_state_dict(other.state_dict())
    assert metric.compute().item() == pytest.approx(other.compute().item(), abs=1e-12)
    assert metric.compute().item() == pytest.approx(metric.compute_result().error.item())


BAD_STATES = [
    (
        {"probs": [torch.tensor([0.5, float("nan"), 0.2])], "target": [torch.tensor([0, 1, 1])]},
        "nan",
    ),
    ({"probs": [torch.tensor([0.5, 7.0, 0.2])], "target": [torch.tensor([0, 1, 1])]}, "7.0"),
    ({"probs": [torch.tensor([0.5, 0.4, 0.2])], "target": [torch.tensor([0, 1])]}, "3 and 2 rows"),
]


@pytest.mark.parametrize(("state", "named"), BAD_STATES)
def test_a_merged_state_of_bad_pairs_is_refused_and_the_metric_keeps_its_own(state, named):
    metric = CalibrationError(interval="pairs")
    metric.update(Q, Y)
    before = metric.compute().item()
    with pytest.raises(ValueError, match=named):
        metric.merge_state(state)
    assert metric.compute().item() == before
    assert sum(p.numel() for p in metric.probs) == 400


@pytest.mark.parametrize(("state", "named"), BAD_STATES)
def test_a_loaded_state_of_bad_pairs_is_refused(state, named) -> None:
    metric = CalibrationError(interval="pairs")
    metric.update(Q, Y)
    with pytest.raises(ValueError, match=named):
        metric.load_state_dict(state, strict=False)
    assert sum(p.numel() for p in metric.probs) == 400


def test_padding_rows_of_a_merged_state_may_hold_anything() -> None:
    """update() keeps padding rows (NaN included) until compute() drops them."""
    metric = CalibrationError(interval="pairs", ignore_index=-1)
    metric.update(Q, Y)
    padded = {"probs": [torch.tensor([0.5, float("nan")])], "target": [torch.tensor([1, -1])]}
    metric.merge_state(padded)
    assert torch.isfinite(metric.compute())


def test_a_comparison_refuses_a_merged_state_of_bad_pairs() -> None:
    metric = CalibrationComparison()
    metric.update(Q, Q, Y)
    state = {
        "probs_a": [torch.tensor([0.5, 0.4])],
        "probs_b": [torch.tensor([0.5, -3.0])],
        "target": [torch.tensor([0, 1])],
    }
    state |= {k: [] for k in metric._defaults if k not in state}
    with pytest.raises(ValueError, match=r"'probs_b' holds -3.0"):
        metric.merge_state(state)


def test_a_strict_load_of_another_kind_of_state_loads_nothing() -> None:
    """torch reported the unexpected keys only after loading the rest: the exact metric's
    kept pairs had been replaced by the streaming state's."""
    streaming = CalibrationError(streaming=True)
    streaming.persistent(True)
    streaming.update(Q, Y)
    metric = CalibrationError()
    metric.update(Q[:200], Y[:200])
    before = metric.compute().item()
    with pytest.raises(ValueError, match=r"'cell_count'.*does not keep.*nothing was loaded") as e:
        metric.load_state_dict(streaming.state_dict())
    assert type(e.value) is ValueError  # not a private class's name in the traceback
    with pytest.raises(ValueError, match="nothing was loaded"):
        metric.load_state_dict(streaming.state_dict(), strict=False)  # its buffer alone: no
    assert sum(p.numel() for p in metric.probs) == 200
    assert metric.compute().item() == before


def test_a_metric_inside_a_module_is_checked_under_its_prefix() -> None:
    parent, other = torch.nn.Module(), torch.nn.Module()
    parent.metric, other.metric = CalibrationError(), CalibrationError(streaming=True)
    other.metric.persistent(True)
    other.metric.update(Q, Y)
    parent.metric.update(Q[:200], Y[:200])
    # Inside a model the refusal takes torch's channels (the keys, then torch's error).
    with (
        pytest.warns(UserWarning, match="'rows_seen'"),
        pytest.raises(RuntimeError, match=r'Unexpected key\(s\).*"metric.rows_seen"'),
    ):
        parent.load_state_dict(other.state_dict())
    assert sum(p.numel() for p in parent.metric.probs) == 200


@pytest.mark.parametrize("streaming", [False, True])  # streaming: its buffer of pairs
@pytest.mark.parametrize("incoming", ["dict", "metric"])
def test_merged_pairs_are_the_metric_s_own_copies(streaming: bool, incoming: str) -> None:
    """merge_state had kept the incoming tensors themselves: a caller that reused its
    buffer after the merge changed the merged metric (0.217 became 0.184)."""
    source = CalibrationError(debias=False, streaming=streaming)
    source.update(Q, Y)
    state = {
        k: [t.clone() for t in v] if isinstance(v, list) else v.clone()
        for k, v in source.metric_state.items()
    }
    metric = CalibrationError(debias=False, streaming=streaming)
    metric.merge_state(state if incoming == "dict" else source)
    metric.compute()  # cached
    held = state if incoming == "dict" else source.metric_state
    held["probs"][0].mul_(0.5)  # the caller reuses its tensors
    metric.update(Q[:1], Y[:1])  # any later call: the cached value is dropped
    fresh = CalibrationError(debias=False, streaming=streaming)
    fresh.update(Q, Y)
    fresh.update(Q[:1], Y[:1])
    assert metric.compute().item() == fresh.compute().item()


def _streaming_state(
    ignore_index: int | None = None, classes: int | None = None, rows: int = 3000
) -> dict:
    """A saved streaming state, as update made it: past its buffer of 512 rows, all in
    the sketch (3000 rows), or all kept exactly (``rows`` ≤ 512)."""
    g = torch.Generator().manual_seed(4)
    if classes is None:
        probs = torch.rand(3000, generator=g, dtype=torch.float64)
        target = torch.bernoulli(probs, generator=g).long()
    else:
        probs = torch.softmax(torch.randn(3000, classes, generator=g), -1)
        target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    if ignore_index is not None:
        target[::5] = ignore_index
    metric = CalibrationError(
        num_classes=classes, streaming=True, resolution=256, ignore_index=ignore_index
    )
    metric.persistent(True)
    metric.update(probs[: rows // 2], target[: rows // 2])
    metric.update(probs[rows // 2 : rows], target[rows // 2 : rows])
    return metric.state_dict()


def _set(name: str, index: tuple, value: float):
    def change(state: dict) -> None:
        state[name] = state[name].clone()
        state[name][index] = value

    return change


def _occupied(state: dict, occupied: bool = True) -> int:
    return int(((state["cell_count"][0] > 0) == occupied).nonzero()[0])


BAD_SKETCHES = {
    "negative count": (lambda s: _set("cell_count", (0, _occupied(s)), -5.0)(s), "'cell_count'"),
    "fractional count": (lambda s: _set("cell_count", (0, _occupied(s)), 2.5)(s), "'cell_count'"),
    "sum_y over count": (lambda s: _set("cell_sum_y", (0, _occupied(s)), 1e9)(s), "'cell_sum_y'"),
    "NaN sum_r": (lambda s: _set("cell_sum_r", (0, _occupied(s)), float("nan"))(s), "'cell_sum_r'"),
    "sum_r2 beyond": (lambda s: _set("cell_sum_r2", (0, _occupied(s)), 1e9)(s), "'cell_sum_r2'"),
    "low of an empty cell": (
        lambda s: _set("cell_low", (0, _occupied(s, False)), 0.5)(s),
        "'cell_low'",
    ),
    "high above 1": (lambda s: _set("cell_high", (0, _occupied(s)), 1.5)(s), "'cell_high'"),
    "rows_seen below kept": (
        lambda s: s.__setitem__("rows_seen", torch.tensor(5)),
        r"'rows_seen' is 5, where the state keeps 300 rows exactly",
    ),
    "rows_seen beyond the sketch": (
        lambda s: s.__setitem__("rows_seen", s["rows_seen"] + 10**6),
        r"sketch holds 3000 rows, where state 'rows_seen' \(1003000, 0 of them",
    ),
    "rows_seen short of the sketch": (
        lambda s: s.__setitem__("rows_seen", s["rows_seen"] - 100),
        r"sketch holds 3000 rows, where state 'rows_seen' \(2900, 0 of them",
    ),
}


@pytest.mark.parametrize("how", ["load_state_dict", "merge_state"])
@pytest.mark.parametrize("case", list(BAD_SKETCHES))
def test_a_streaming_state_of_impossible_values_is_refused(case: str, how: str) -> None:
    """Only the sketch's shapes were checked: a NaN Σr loaded and compute() gave NaN; a
    negative count, Σy above the count or a row count short of the rows kept loaded too
    and moved the result."""
    state = _streaming_state(rows=300 if case == "rows_seen below kept" else 3000)
    change, named = BAD_SKETCHES[case]
    change(state)
    metric = CalibrationError(streaming=True, resolution=256)
    metric.persistent(True)
    metric.update(Q, Y)
    before = metric.compute()
    with pytest.raises(ValueError, match=named):
        getattr(metric, how)(state)
    assert int(metric.rows_seen) == 400 and metric.update_count == 1
    torch.testing.assert_close(metric.compute(), before)


@pytest.mark.parametrize(
    "options", [{}, {"ignore_index": -1}, {"classes": 3}, {"classes": 3, "ignore_index": -1}]
)
def test_a_streaming_state_that_update_made_loads(options: dict) -> None:
    state = _streaming_state(**options)
    metric = CalibrationError(
        num_classes=options.get("classes"),
        streaming=True,
        resolution=256,
        ignore_index=options.get("ignore_index"),
    )
    metric.load_state_dict(state)
    metric.merge_state(state)
    assert int(metric.rows_seen) == 6000


@pytest.mark.parametrize(("excess", "refused"), [(5e-6, False), (2e-5, True)])
def test_sum_r2_near_its_bound_is_left_to_rounding(excess, refused) -> None:
    """A cell of q = 0.49999988 holds Σr² at 1 − 4.8·10⁻⁷ of count/4; long sums and
    merges in float64 round it further, which a slack of 10⁻⁶ had too little room for.
    The slack is 10⁻⁵: 5·10⁻⁶ past the bound is rounding, 2·10⁻⁵ a bad state."""
    from calib_metrics.functional import sketch

    state = sketch.empty(256)
    sketch.accumulate(
        state, torch.full((10_000,), 0.49999988, dtype=torch.float64), torch.ones(10_000)
    )
    cell = int(state.count.nonzero()[0])
    state.sum_r2[cell] = state.count[cell] / 4 * (1 + excess)
    found = sketch.state_problem(state)
    assert (found is not None and found[0] == "sum_r2") if refused else found is None


def _comparison_state(**changes) -> dict:
    """A comparison's state of five items with a group id each, ``changes`` applied."""
    state = {
        "probs_a": [Q[:5]],
        "probs_b": [Q[:5].sqrt()],
        "target": [Y[:5]],
        "groups": [torch.arange(5)],
        "labels": [],
    }
    return {**state, **changes}


BAD_ID_STATES = [
    (_comparison_state(groups=[torch.arange(1000, 1004)]), "'groups' and 'target' hold 4 and 5"),
    (_comparison_state(groups=[torch.arange(5.0)]), "'groups' holds torch.float32"),
    (_comparison_state(labels=[torch.zeros(4, dtype=torch.long)]), "'labels' and 'target' hold 4"),
    (_comparison_state(labels=[torch.ones(5, dtype=torch.bool)]), "'labels' holds torch.bool"),
    (_comparison_state(probs_a=[torch.ones(5, dtype=torch.long)]), "'probs_a' holds torch.int64"),
]


@pytest.mark.parametrize("how", ["merge_state", "load_state_dict"])
@pytest.mark.parametrize(("state", "named"), BAD_ID_STATES)
def test_a_comparison_refuses_ids_or_probabilities_that_update_would(state, named, how) -> None:
    """Group ids or labels that do not give one integer id per item had been taken in,
    and every compute() after failed ("some batches came without groups="), the items
    already counted lost to it; integer probabilities had been kept as they came."""
    metric = CalibrationComparison(n_samples=50)
    metric.update(Q.sqrt(), Q, Y, groups=torch.arange(400))
    before = metric.compute().difference.item()
    incoming = (
        state
        if how == "merge_state"
        else {k: torch.cat(v) if v else torch.zeros(0, dtype=torch.long) for k, v in state.items()}
    )
    with pytest.raises(ValueError, match=named):
        getattr(metric, how)(incoming)
    assert metric.compute().difference.item() == before


def test_a_metric_refuses_merged_group_ids_that_miss_items() -> None:
    metric = CalibrationError(interval="groups", n_samples=50)
    metric.update(Q, Y, groups=torch.arange(400))
    before = metric.compute().item()
    state = {"probs": [Q[:5]], "target": [Y[:5]], "groups": [torch.arange(3)]}
    with pytest.raises(ValueError, match="'groups' and 'target' hold 3 and 5 rows"):
        metric.merge_state(state)
    assert metric.compute().item() == before
    metric.merge_state({**state, "groups": [torch.arange(400, 405)]})  # one id per item
    assert sum(p.numel() for p in metric.groups) == 405


@pytest.mark.parametrize("how", ["merge_state", "load_state_dict"])
@pytest.mark.parametrize("interval", [None, "groups"])
def test_the_state_of_ranks_that_held_nothing_merges_as_nothing(how, interval) -> None:
    """sync() over ranks without pairs leaves torchmetrics' empty float32 tensors of shape
    [0] in every list state; merging or loading them had failed inside torch
    ("cannot reshape tensor of 0 elements into shape [0, -1]")."""
    empty = torch.tensor([])
    metric = CalibrationError(interval=interval, n_samples=50)
    metric.update(Q, Y, groups=torch.arange(400) // 4)
    before = metric.compute().item()
    state = {"probs": empty, "target": empty, "groups": empty}
    if how == "merge_state":
        metric.merge_state(state)
    else:
        metric.load_state_dict(state, strict=False)
        metric.merge_state({"probs": [Q], "target": [Y], "groups": [torch.arange(400) // 4]})
    assert metric.compute().item() == pytest.approx(before, abs=1e-12)


@pytest.mark.parametrize("how", ["merge_state", "load_state_dict"])
def test_a_multiclass_state_of_ranks_that_held_nothing_merges_as_nothing(how) -> None:
    """sync() leaves float32 [0] states whatever the rows' width: a [N, 3] metric had
    refused them as "rows of shape () ... saved by a metric of other settings"."""
    probs = torch.softmax(torch.randn(300, 3, generator=torch.Generator().manual_seed(1)), -1)
    target = torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(2))[:, 0]
    metric = CalibrationError(num_classes=3, n_samples=50)
    metric.update(probs, target)
    before = metric.compute().item()
    empty = {"probs": torch.tensor([]), "target": torch.tensor([]), "groups": torch.tensor([])}
    if how == "merge_state":
        metric.merge_state(empty)
    else:
        metric.load_state_dict(empty, strict=False)
        metric.merge_state({"probs": [probs], "target": [target], "groups": []})
    assert metric.compute().item() == pytest.approx(before, abs=1e-12)


def test_merging_a_metric_whose_group_ids_miss_items_is_refused() -> None:
    a = CalibrationError(n_samples=50)
    a.update(Q, Y, groups=torch.arange(400) // 4)
    b = CalibrationError(n_samples=50)
    b.update(Q, Y, groups=torch.arange(400) // 4)
    b.groups = [b.groups[0][:395]]
    with pytest.raises(ValueError, match="'groups' and 'target' hold 395 and 400 rows"):
        a.merge_state(b)
    assert sum(p.numel() for p in a.probs) == 400


def test_an_empty_part_of_another_row_shape_is_still_refused() -> None:
    """Only sync's empty [0] part passes: an empty [0, 5] part into a 3-class metric had
    been taken in, and every compute() after failed inside torch.cat."""
    probs = torch.softmax(torch.randn(300, 3, generator=torch.Generator().manual_seed(1)), -1)
    metric = CalibrationError(num_classes=3, n_samples=50)
    metric.update(probs, torch.multinomial(probs, 1)[:, 0])
    state = {"probs": [torch.empty(0, 5)], "target": [torch.empty(0, dtype=torch.long)]}
    with pytest.raises(ValueError, match=r"rows of shape \(5,\)"):
        metric.merge_state({**state, "groups": []})
    assert metric.compute().isfinite()
