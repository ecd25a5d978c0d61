"""Pickled metrics across the split of metric.py into metric_state.py and metric_checks.py.

A pickle names every class it holds by module path: a metric pickled (or ``torch.save``d)
before the split names its states' record, ``_StatesOfRule``, as
``calib_metrics.metric._StatesOfRule``, and must still load.
"""

from __future__ import annotations

import ast
import importlib
import io
import pickle
import re
import sys
from pathlib import Path

import pytest
import torch

import calib_metrics.metric as metric_module
import calib_metrics.metric_state as state_module
from calib_metrics import CalibrationError
from calib_metrics.metric_compare import CalibrationComparison

PACKAGE = Path(__file__).resolve().parents[1] / "calib_metrics"
# The modules split out of calib_metrics.metric: what they held was pickled under its name.
SPLIT = ("calib_metrics.metric_state", "calib_metrics.metric_checks")
# The small streaming sketch, folded on purpose, says it is coarse: not what is tested here.
pytestmark = pytest.mark.filterwarnings("ignore:CalibrationError. the streaming sketch")


def _updated_metrics() -> dict[str, CalibrationError | CalibrationComparison]:
    """One metric of each kind whose state a pickle must carry, after an update."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(600, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    exact = CalibrationError(n_samples=20)
    exact(q, y, groups=torch.arange(600) // 10)  # forward: it keeps its batch metric too
    streaming = CalibrationError(streaming=True, resolution=16, n_samples=20)
    streaming.update(q, y)
    probs = torch.softmax(torch.randn(200, 3, generator=g), -1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    target[:4] = -1
    multiclass = CalibrationError(num_classes=3, ignore_index=-1, n_samples=20)
    multiclass.update(probs, target)
    comparison = CalibrationComparison(n_samples=20)
    comparison.update(q, (q + 0.05).clamp(0, 1), y)
    return {
        "exact": exact,
        "streaming": streaming,
        "multiclass": multiclass,
        "comparison": comparison,
    }


def _values(metrics: dict) -> dict[str, torch.Tensor]:
    return {
        name: metric.compute().difference if name == "comparison" else metric.compute()
        for name, metric in metrics.items()
    }


class _NamesSeen(pickle.Unpickler):
    """An unpickler that notes every (module, name) the pickle asks for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.names: set[tuple[str, str]] = set()

    def find_class(self, module: str, name: str) -> object:
        self.names.add((module, name))
        return super().find_class(module, name)


def _as_before_the_split(data: bytes) -> bytes:
    """A protocol-2 pickle with the split modules' names replaced by the module that held
    them before: what a metric pickled before the split looks like."""
    modules = b"|".join(re.escape(m.encode()) for m in SPLIT)
    return re.sub(rb"c(" + modules + rb")\n", b"ccalib_metrics.metric\n", data)


def test_a_pickled_metric_names_only_objects_that_resolve_to_themselves():
    metrics = _updated_metrics()
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        unpickler = _NamesSeen(pickle.dumps(metrics, protocol=protocol))
        loaded = unpickler.load()
        ours = sorted(n for n in unpickler.names if n[0].split(".")[0] == "calib_metrics")
        assert ("calib_metrics.metric", "CalibrationError") in ours
        for module, name in ours:
            found = getattr(importlib.import_module(module), name)
            assert (found.__module__, found.__qualname__) == (module, name)
        for name, value in _values(loaded).items():
            assert torch.equal(value, _values(metrics)[name]), name


def test_a_metric_pickled_before_the_split_still_loads():
    metrics = _updated_metrics()
    old = _as_before_the_split(pickle.dumps(metrics, protocol=2))
    assert b"ccalib_metrics.metric\n_StatesOfRule\n" in old
    assert not any(m.encode() in old for m in SPLIT)
    loaded = pickle.loads(old)
    assert isinstance(loaded["exact"]._defaults, state_module._StatesOfRule)
    for name, value in _values(loaded).items():
        assert torch.equal(value, _values(metrics)[name]), name
    # A loaded metric keeps counting: its update rule came back with its states.
    loaded["streaming"].update(torch.full((4,), 0.5, dtype=torch.float64), torch.ones(4))
    assert int(loaded["streaming"].rows_seen) == 604
    # Before the split, calib_metrics.metric held the states' record class itself.
    assert metric_module._StatesOfRule is state_module._StatesOfRule


def _imported(module: str) -> set[str]:
    """Every module that ``module``'s source imports (at top level or in a function)."""
    tree = ast.parse((PACKAGE / f"{module.split('.')[-1]}.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
    return names


def _outside(imported: set[str], allowed: set[str]) -> set[str]:
    """The imported modules neither in ``allowed`` (by package) nor in the functional core."""
    return {
        name
        for name in imported
        if name.split(".")[0] not in allowed and not name.startswith("calib_metrics.functional")
    }


def test_the_split_modules_sit_below_the_metrics():
    allowed = set(sys.stdlib_module_names) | {"torch", "__future__"}
    # The checks need torch and the functional core alone.
    assert _outside(_imported("calib_metrics.metric_checks"), allowed) == set()
    # The state base class adds torchmetrics, never a metric built on it.
    assert _outside(_imported("calib_metrics.metric_state"), allowed | {"torchmetrics"}) == set()
