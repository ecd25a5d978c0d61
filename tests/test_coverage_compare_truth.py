"""The comparison coverage study's true differences equal a brute-force computation.

``benchmarks/coverage_compare.py`` scores the coverage of ``compare_calibration``'s
interval against a stated truth, so an error in the truth reads as an error in the
interval. The true calibration error of a prediction f(q) (q ~ U(0, 1), y ~ Bernoulli(q))
is E[(f(q) − E[q | f(q)])²]^½: here on a fine grid of q, every distinct value of f one
group whose frequency is its mean q. A clamp sends a mass of q to one value (0 or 1),
whose frequency is that mass's mean q, not q itself: the study integrated (f(q) − q)²
there until 2026-11-28 (0.04916 for `unequal` instead of 0.04905), which at N = 10⁶,
where the interval is ±0.003 wide, was enough to move its coverage by several points.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def _study():
    path = ROOT / "benchmarks" / "coverage_compare.py"
    spec = importlib.util.spec_from_file_location("coverage_compare", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _brute_force_error(model, points: int = 2_000_000) -> float:
    q = (torch.arange(points, dtype=torch.float64) + 0.5) / points
    prediction = model(q)
    values, group = torch.unique(prediction, return_inverse=True)
    size = torch.zeros_like(values).index_add_(0, group, torch.ones_like(q))
    frequency = torch.zeros_like(values).index_add_(0, group, q) / size
    return float((size * (values - frequency) ** 2).sum() / points) ** 0.5


@pytest.mark.parametrize("setting", list(_study().SETTINGS))
def test_true_difference_is_the_brute_force_one(setting):
    model_a, model_b, truth = _study().SETTINGS[setting]
    expected = _brute_force_error(model_a) - _brute_force_error(model_b)
    assert truth == pytest.approx(expected, abs=1e-6)
