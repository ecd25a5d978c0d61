"""Every dtype a metric's state holds after an update is one that DDP ranks can gather.

``update`` accepted unsigned 16/32/64-bit ids (``groups=``, ``labels=``) and targets, and
float8 targets, and kept them as given. Synchronisation codes each list state's dtype by
its position in ``metric_state._DTYPES``, which knew none of them: under DDP ``compute()``
raised "tuple.index(x): x not in tuple" on every rank, or, with such ids on one rank
only, that rank raised after the first gather while the others waited in the next one
until the process group's timeout. In one process a uint16 or uint32 binary target
failed at ``compute()`` with torch's NotImplementedError ("index_select" not implemented
for 'UInt16'), in the metric as in ``calibration_error``. Such inputs are now converted
at update where no value changes (ids and targets to int64, float8 to float32) and
refused with a ValueError otherwise.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from thread_ranks import WORLD, ThreadRanks

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.functional import calibration_error, calibration_error_ci, compare_calibration
from calib_metrics.metric_state import _DTYPES

N = 120
C = 3


def _dtypes_torch_can_fill() -> list[torch.dtype]:
    """Every dtype of torch that holds 0, 0.5 and 1 (not the bit and quantized ones)."""
    found = []
    for dtype in sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # complex32 is experimental
                torch.tensor([0.0, 0.5, 1.0]).to(dtype)
        except (RuntimeError, NotImplementedError, TypeError):
            continue
        found.append(dtype)
    return found


DTYPES = _dtypes_torch_can_fill()
G = torch.Generator().manual_seed(0)
Q = torch.rand(N, generator=G).div(0.25).round().mul(0.25)  # 0, 0.25 ... 1: float8's too
Y = torch.bernoulli(Q, generator=G)
P = torch.softmax(torch.randn(N, C, generator=G), -1)
T = torch.randint(0, C, (N,), generator=G)
IDS = torch.arange(N) // 4

# name -> (metric, the batch, the argument given in the dtype under test)
CASES = {
    "binary-probs": (lambda **o: CalibrationError(**o), (Q, Y, IDS), 0),
    "binary-target": (lambda **o: CalibrationError(**o), (Q, Y, IDS), 1),
    "binary-groups": (lambda **o: CalibrationError(**o), (Q, Y, IDS), 2),
    "streaming-target": (lambda **o: CalibrationError(streaming=True, **o), (Q, Y), 1),
    "multiclass-probs": (lambda **o: CalibrationError(num_classes=C, **o), (P, T), 0),
    "multiclass-target": (lambda **o: CalibrationError(num_classes=C, **o), (P, T), 1),
    "compare-probs_a": (lambda **o: CalibrationComparison(**o), (Q, Q.sqrt(), Y), 0),
    "compare-target": (lambda **o: CalibrationComparison(**o), (Q, Q.sqrt(), Y), 2),
    "compare-groups": (lambda **o: CalibrationComparison(**o), (Q, Q.sqrt(), Y, IDS), 3),
    "compare-labels": (lambda **o: CalibrationComparison(**o), (Q, Q.sqrt(), Y, None, IDS), 4),
}


def _list_states(metric) -> dict[str, list[torch.Tensor]]:
    return {k: v for k, v in metric.metric_state.items() if isinstance(v, list)}


@pytest.mark.parametrize("validate_args", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(CASES))
def test_update_keeps_a_dtype_every_rank_can_gather_or_refuses(case, dtype, validate_args):
    make, batch, position = CASES[case]
    metric = make(validate_args=validate_args, n_samples=20)
    batch = list(batch)
    batch[position] = batch[position].to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex casts, few bins
        try:
            metric.update(*batch)
        except ValueError:
            assert metric.update_count == 0
            return
        for name, parts in _list_states(metric).items():
            for part in parts:
                assert part.dtype in _DTYPES, (name, part.dtype)
        try:
            metric.compute()  # a result, or a ValueError (a target that is not 0 or 1)
        except ValueError:
            assert not validate_args


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_unsigned_ids_give_what_int64_ids_give(dtype) -> None:
    results = []
    for ids in (IDS, IDS.to(dtype)):
        metric = CalibrationError(interval="groups", n_samples=200, seed=1, bin_size=10)
        metric.update(Q, Y, groups=ids)
        assert metric.groups[0].dtype == torch.int64
        results.append(metric.compute_result())
    for got, want in zip(*(tuple(r)[:5] for r in results), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.filterwarnings("ignore:compare_calibration_by_label")  # small labels, few draws
def test_comparison_keeps_unsigned_labels_as_int64() -> None:
    metric = CalibrationComparison(n_samples=50)
    metric.update(Q, Q.sqrt(), Y, labels=(IDS % 3).to(torch.uint16))
    assert metric.labels[0].dtype == torch.int64
    assert metric.compute_by_label(min_units=10).labels.tolist() == [0, 1, 2]


@pytest.mark.parametrize("metric_class", [CalibrationError, CalibrationComparison])
def test_uint64_ids_above_int64s_maximum_are_refused_by_name(metric_class) -> None:
    values = IDS.tolist()
    values[7] = 2**63 + 5
    ids = torch.tensor(values, dtype=torch.uint64)
    metric = metric_class(n_samples=20)
    pairs = (Q, Y) if metric_class is CalibrationError else (Q, Q.sqrt(), Y)
    with pytest.raises(ValueError, match=r"groups holds 9223372036854775813 \(dtype torch\.uint64"):
        metric.update(*pairs, groups=ids)
    assert metric.update_count == 0 and not metric.target


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_an_unsigned_binary_target_is_measured(dtype) -> None:
    """compute() had raised torch's NotImplementedError from the binning."""
    metric, want = CalibrationError(bin_size=10), CalibrationError(bin_size=10)
    metric.update(Q, Y.to(dtype))
    want.update(Q, Y)
    torch.testing.assert_close(metric.compute(), want.compute(), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_functions_measure_a_target_of_any_dtype_or_refuse_it(dtype) -> None:
    target = Y.to(dtype)
    if dtype.is_complex or not torch.equal(target.double(), Y.double()):  # e8m0 has no 0
        with pytest.raises(ValueError, match="target"):
            calibration_error(Q, target, bin_size=10)
        return
    got = calibration_error(Q, target, bin_size=10)
    torch.testing.assert_close(got, calibration_error(Q, Y, bin_size=10), rtol=0, atol=0)
    got = compare_calibration(Q, Q.sqrt(), target, n_samples=20, generator=G.manual_seed(1))
    want = compare_calibration(Q, Q.sqrt(), Y, n_samples=20, generator=G.manual_seed(1))
    torch.testing.assert_close(got.difference, want.difference, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_the_functions_measure_float8_probabilities(dtype) -> None:
    """check_probs had failed with torch's NotImplementedError ("aminmax")."""
    q = Q.to(dtype)
    torch.testing.assert_close(
        calibration_error(q, Y, bin_size=10), calibration_error(q.float(), Y, bin_size=10)
    )


def test_the_group_bootstrap_takes_uint16_ids() -> None:
    got, want = (
        calibration_error_ci(
            Q, Y, bin_size=10, n_samples=50, groups=ids, generator=G.manual_seed(2)
        )
        for ids in (IDS.to(torch.uint16), IDS)
    )
    torch.testing.assert_close(got.upper, want.upper, rtol=0, atol=0)


@pytest.mark.parametrize("how", ["merge_state", "load_state_dict"])
def test_a_state_of_another_dtype_is_refused_at_load_and_merge(how) -> None:
    """A hand-made state bypasses update(); kept, the ranks could not gather it."""
    state = {"probs": [Q], "target": [Y.to(torch.uint16)], "groups": []}
    metric = CalibrationError()
    message = r"state 'target' holds torch\.uint16 values, a dtype that update\(\) never keeps"
    with pytest.raises(ValueError, match=message):
        getattr(metric, how)(state)
    assert not metric.target


@pytest.mark.parametrize("what", ["groups", "target"])
def test_unsigned_ids_or_target_on_one_rank_give_every_rank_the_union(what) -> None:
    """uint16 on rank 0 alone: rank 0 raised before the first gather and rank 1 waited
    in it (until the process group's timeout under torch.distributed)."""
    world, metrics = ThreadRanks(), []
    half = N // 2
    for rank in range(WORLD):
        metric = CalibrationError(bin_size=10, n_samples=100, seed=0, **world.options(rank))
        part = slice(rank * half, (rank + 1) * half)
        q, y, ids = Q[part], Y[part], IDS[part]
        if rank == 0:
            y, ids = (y, ids.to(torch.uint16)) if what == "groups" else (y.to(torch.uint16), ids)
        metric.update(q, y, groups=ids)
        metrics.append(metric)
    values, errors = world.run([metric.compute_result for metric in metrics])
    assert errors == [None, None]
    whole = CalibrationError(bin_size=10, n_samples=100, seed=0)
    whole.update(Q, Y, groups=IDS)
    want = whole.compute_result()
    for value in values:
        torch.testing.assert_close(value.error, want.error, rtol=0, atol=0)
        torch.testing.assert_close(value.upper, want.upper, rtol=0, atol=0)


@pytest.mark.parametrize(
    "options",
    [
        {"num_classes": 5, "streaming": True, "resolution": 256},
        {"num_classes": 5, "streaming": True},
        {},
    ],
)
@pytest.mark.parametrize("reset", [True, False])
def test_a_metric_built_on_meta_and_moved_by_to_empty_measures_as_a_fresh_one(
    options, reset
) -> None:
    """``to_empty`` (a model built on the meta device, FSDP's path) had made the states'
    defaults uninitialised memory: a reset sketch of garbage counts (a NaN error, or
    "needs 1.1e120 GiB") or extremes of 0 for ±inf (a silently wrong error)."""
    from torch import nn

    from calib_metrics import CalibrationError

    g = torch.Generator().manual_seed(0)
    probs = (3 * torch.randn(600, 5, generator=g)).softmax(-1)
    target = torch.randint(0, 5, (600,), generator=g)
    if not options:
        probs, target = probs[:, 0], (target == 0).long()
    with torch.device("meta"):
        net = nn.Module()
        net.metric = CalibrationError(**options)
    net.to_empty(device="cpu")
    if reset:
        net.metric.reset()
    net.metric.update(probs, target)
    fresh = CalibrationError(**options)
    fresh.update(probs, target)
    assert net.metric.compute().item() == fresh.compute().item()
    result, want = net.metric.compute_result(), fresh.compute_result()
    assert torch.equal(result.bins.count, want.bins.count)


def test_to_empty_of_the_metric_itself_is_taken() -> None:
    """torch passes ``recurse`` to ``_apply``; torchmetrics' refused it (a TypeError)."""
    from calib_metrics import CalibrationComparison, CalibrationError

    metric = CalibrationError(num_classes=3, streaming=True, resolution=256).to_empty(device="cpu")
    metric.reset()
    metric.update(torch.full((4, 3), 1 / 3), torch.tensor([0, 1, 2, 0]))
    assert metric.rows_seen.item() == 4
    CalibrationComparison().to_empty(device="cpu")
