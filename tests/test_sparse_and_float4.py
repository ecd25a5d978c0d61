"""Probabilities, targets and group ids that torch cannot compute with as given are
refused by name at every public entry, as complex ones are: packed float4
(``float4_e2m1fn_x2``, a 1-byte float that the "float8 → float32" rule had taken, then
``NotImplementedError: "copy_kernel" not implemented``) and sparse tensors (``RuntimeError:
reshape is not implemented for sparse tensors``). One shared check
(``binning.supported_dtype``, with ``check_dense``) decides."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import (
    adaptive_binning,
    calibration_error,
    calibration_error_ci,
    compare_calibration,
    smooth_calibration_error,
    uniform_binning,
)

G = torch.Generator().manual_seed(0)
Q = torch.rand(40, generator=G)
Y = torch.bernoulli(Q, generator=G).long()
IDS = torch.arange(40) // 4
PROBS = torch.softmax(torch.randn(40, 3, generator=G), -1)
LABELS = torch.randint(0, 3, (40,), generator=G)


def _float4(t: torch.Tensor) -> torch.Tensor:
    return torch.zeros(t.numel(), dtype=torch.uint8).view(torch.float4_e2m1fn_x2).view(t.shape)


def _updated(**options):
    def update(probs, target, groups=None):
        metric = CalibrationError(n_samples=20, **options)
        metric.update(probs, target, *(() if groups is None else (groups,)))

    return update


ENTRIES = {
    "adaptive_binning": lambda p, t, g=None: adaptive_binning(p, t, 10),
    "uniform_binning": lambda p, t, g=None: uniform_binning(p, t, 10),
    "calibration_error": lambda p, t, g=None: calibration_error(p, t),
    "calibration_error_ci": lambda p, t, g=None: calibration_error_ci(p, t, n_samples=20, groups=g),
    "compare_calibration": lambda p, t, g=None: compare_calibration(p, p, t, groups=g),
    "smooth_calibration_error": lambda p, t, g=None: smooth_calibration_error(p, t),
    "update": _updated(),
    "update, streaming": _updated(streaming=True, resolution=64),
    "forward": lambda p, t, g=None: CalibrationError(n_samples=20)(p, t),
}
TAKE_GROUPS = ("calibration_error_ci", "compare_calibration", "update")


def _cases():
    for entry in ENTRIES:
        for argument in ("probs", "target", "groups"):
            if argument != "groups" or entry in TAKE_GROUPS:
                yield entry, argument


@pytest.mark.parametrize("entry, argument", list(_cases()))
def test_a_sparse_tensor_is_refused_by_name(entry, argument) -> None:
    given = {"probs": Q, "target": Y, "groups": IDS}
    given[argument] = given[argument].to_sparse()
    name = "probs_a" if entry == "compare_calibration" and argument == "probs" else argument
    with pytest.raises(ValueError, match=rf"^{name} is a sparse_coo tensor: pass a dense one"):
        groups = given["groups"] if argument == "groups" else None
        ENTRIES[entry](given["probs"], given["target"], groups)


@pytest.mark.parametrize("entry", ENTRIES)
def test_packed_float4_probabilities_are_refused_by_name(entry) -> None:
    name = "probs_a" if entry == "compare_calibration" else "probs"
    with pytest.raises(ValueError, match=rf"^{name} has dtype torch.float4_e2m1fn_x2: pass"):
        ENTRIES[entry](_float4(Q), Y)


@pytest.mark.parametrize(
    "options",
    [{}, {"streaming": True, "resolution": 64}, {"mode": "top_label"}, {"mode": "classwise"}],
)
@pytest.mark.parametrize("odd", ["sparse", "float4"])
def test_multiclass_probabilities_are_refused_by_name(options, odd) -> None:
    probs = PROBS.to_sparse() if odd == "sparse" else _float4(PROBS)
    words = "is a sparse_coo tensor" if odd == "sparse" else "has dtype torch.float4_e2m1fn_x2"
    with pytest.raises(ValueError, match=f"^probs {words}"):
        CalibrationError(num_classes=3, **options).update(probs, LABELS)
    mode = options.get("mode", "one_vs_rest")
    with pytest.raises(ValueError, match=f"^probs {words}"):
        calibration_error(probs, LABELS, mode=mode)
    with pytest.raises(ValueError, match=r"^target is a sparse_coo tensor"):
        CalibrationError(num_classes=3, **options).update(PROBS, LABELS.to_sparse())


def test_float8_probabilities_are_still_measured() -> None:
    q = (Q * 4).round() / 4  # float8's values too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few bins
        expected = calibration_error(q, Y)
        assert torch.equal(calibration_error(q.to(torch.float8_e4m3fn), Y), expected)


def _sparse_probs_state() -> dict:
    source = CalibrationError(n_samples=20)
    source.persistent(True)
    source.update(Q, Y)
    state = source.state_dict()
    state["probs"] = [part.to_sparse() for part in state["probs"]]
    return state


@pytest.mark.parametrize("entry", ["merge_state", "load_state_dict"])
def test_sparse_states_are_refused_by_name_and_nothing_is_lost(entry) -> None:
    # torch's "reshape is not implemented for sparse tensors" had come out of both.
    metric = CalibrationError(n_samples=20)
    metric.update(Q, Y)
    before = metric.compute()
    state = _sparse_probs_state()
    with pytest.raises(ValueError, match="state 'probs' holds a sparse_coo tensor"):
        if entry == "merge_state":
            metric.merge_state({name: state[name] for name in ("probs", "target", "groups")})
        else:
            metric.load_state_dict(state)
    assert torch.equal(metric.compute(), before)
