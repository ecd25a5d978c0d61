"""Padding rows are kept with their ``ignore_index`` target until ``compute``, so two
metrics with different ``ignore_index`` cannot pool their states: once, merging one into
the other was accepted, and the padding was then scored as items of no class (a silently
wrong CalibrationError) or made every later ``compute`` raise (CalibrationComparison)."""

from __future__ import annotations

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError


def _data():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(200, 4, generator=g), -1)
    target = torch.randint(0, 4, (200,), generator=g)
    padded = target.clone()
    padded[::3] = -100
    return probs, target, padded


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("mine", [None, -1])
def test_calibration_error_refuses_to_merge_another_ignore_index(streaming, mine) -> None:
    probs, target, padded = _data()
    this = CalibrationError(num_classes=4, ignore_index=mine, streaming=streaming)
    this.update(probs, target)
    before = this.compute()
    other = CalibrationError(num_classes=4, ignore_index=-100, streaming=streaming)
    other.update(probs, padded)
    with pytest.raises(ValueError, match="ignore_index"):
        this.merge_state(other)
    torch.testing.assert_close(this.compute(), before)


def test_calibration_error_merges_the_same_ignore_index() -> None:
    probs, _, padded = _data()
    whole = CalibrationError(num_classes=4, ignore_index=-100)
    whole.update(probs, padded)
    this = CalibrationError(num_classes=4, ignore_index=-100)
    this.update(probs[:100], padded[:100])
    other = CalibrationError(num_classes=4, ignore_index=-100)
    other.update(probs[100:], padded[100:])
    this.merge_state(other)
    torch.testing.assert_close(this.compute(), whole.compute())


def test_calibration_comparison_refuses_to_merge_another_ignore_index() -> None:
    probs, target, padded = _data()
    this = CalibrationComparison(num_classes=4)
    this.update(probs, probs.flip(0), target)
    before = this.compute().difference
    other = CalibrationComparison(num_classes=4, ignore_index=-100)
    other.update(probs, probs.flip(0), padded)
    with pytest.raises(ValueError, match="ignore_index"):
        this.merge_state(other)
    torch.testing.assert_close(this.compute().difference, before)


def _binary_padded():
    g = torch.Generator().manual_seed(8)
    q = torch.rand(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    y[::4] = -100
    return q, y


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("mine", [None, -1])
@pytest.mark.parametrize("how", ["load_state_dict", "merge_state(dict)"])
def test_a_state_of_another_ignore_index_is_refused_by_load_and_dict_merge(
    streaming, mine, how
) -> None:
    """The state alone carries the padding rows: loading one saved with ignore_index=-100
    into a metric without it scored the padding as labels (0.58 for a calibrated model)."""
    q, y = _binary_padded()
    source = CalibrationError(ignore_index=-100, streaming=streaming)
    source.persistent(True)
    source.update(q, y)
    this = CalibrationError(ignore_index=mine, streaming=streaming)
    this.persistent(True)
    this.update(q[:100], y[:100].clamp(0, 1))
    before = this.compute()
    # A state dict records its ignore_index; a dict of states is checked by its values.
    message = {
        "load_state_dict": "saved with ignore_index=-100, and this metric has",
        "merge_state(dict)": r"state 'target' holds -100.*ignore_index=-100",
    }[how]
    with pytest.raises(ValueError, match=message):
        if how == "load_state_dict":
            this.load_state_dict(source.state_dict())
        else:
            this.merge_state(source.metric_state)
    torch.testing.assert_close(this.compute(), before)  # nothing accumulated was lost


def test_a_state_of_the_same_ignore_index_loads_and_gives_the_same_error() -> None:
    q, y = _binary_padded()
    source = CalibrationError(ignore_index=-100)
    source.persistent(True)
    source.update(q, y)
    this = CalibrationError(ignore_index=-100)
    this.persistent(True)
    this.load_state_dict(source.state_dict())
    torch.testing.assert_close(this.compute(), source.compute())


@pytest.mark.filterwarnings("ignore:ignore_index=\\d+ is one of the")
@pytest.mark.parametrize("metric", [CalibrationError, CalibrationComparison])
def test_a_state_records_its_ignore_index_even_when_padding_is_a_valid_label(metric) -> None:
    """Padding 0 looks like class 0: the values alone cannot tell, so a state saved with
    ignore_index=0 loaded into a metric without it and counted the padding (0.200 → 0.240)."""
    probs, target, _ = _data()
    source = metric(num_classes=4, ignore_index=0)
    source.persistent(True)
    args = (probs, target) if metric is CalibrationError else (probs, probs.flip(0), target)
    source.update(*args)
    state = source.state_dict()
    for other in (None, -100):
        this = metric(num_classes=4, ignore_index=other)
        this.persistent(True)
        with pytest.raises(ValueError, match="saved with ignore_index=0, and this metric has"):
            this.load_state_dict(state)
    same = metric(num_classes=4, ignore_index=0)
    same.persistent(True)
    same.load_state_dict(state)
    if metric is CalibrationError:
        torch.testing.assert_close(same.compute(), source.compute())


def test_a_state_saved_before_the_record_is_still_checked_by_its_values() -> None:
    probs, _, padded = _data()
    source = CalibrationError(num_classes=4, ignore_index=-100)
    source.persistent(True)
    source.update(probs, padded)
    state = source.state_dict()
    del state["_ignore_index"]  # as states were saved before the key existed
    same = CalibrationError(num_classes=4, ignore_index=-100)
    same.persistent(True)
    same.load_state_dict(state)
    torch.testing.assert_close(same.compute(), source.compute())
    with pytest.raises(ValueError, match=r"holds -100, which is neither a class id in \[0, 4\)"):
        CalibrationError(num_classes=4).load_state_dict(state)


def test_merging_a_state_of_joined_tensors_equals_merging_the_batches() -> None:
    """A synchronised state holds each pair state as one tensor: merging one had raised
    torch's TypeError (a list plus a tensor) and, in the comparison, RuntimeError."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(200, generator=g)
    y = torch.bernoulli(q, generator=g).long()
    first, second = slice(0, 100), slice(100, 200)
    for kind in (CalibrationError, CalibrationComparison):

        def filled(rows: slice, kind=kind):
            metric = kind()
            pair = (q[rows],) if kind is CalibrationError else (q[rows], q[rows] ** 2)
            metric.update(*pair, y[rows])
            return metric

        joined = {
            k: torch.cat(v) if v else torch.empty(0) for k, v in filled(second).metric_state.items()
        }
        by_lists, by_tensors = filled(first), filled(first)
        by_lists.merge_state(filled(second))
        by_tensors.merge_state(joined)
        want, got = by_lists.compute(), by_tensors.compute()
        if kind is CalibrationComparison:
            want, got = want.difference, got.difference
        assert torch.equal(got, want)
