"""A refused fit leaves a recalibrator as it was: its fitted values, ``nll_`` and the
other fit attributes. The refusal came after the optimiser had set ``nll_`` (the refused
optimum's, beside the kept temperature: 1.0986 with T = 3.016, whose own was 0.6972)."""

from __future__ import annotations

import pickle

import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.models.coref import sample_antecedents
from calib_metrics.recalibration import (
    ChainTemperature,
    CorefTemperature,
    TemperatureScaling,
    VectorScaling,
)

G = torch.Generator().manual_seed(0)


def _chain() -> tuple[tuple, tuple]:
    """Dev potentials of a sharp chain and the same negated (refused: no usable signal)."""
    emissions = torch.randn(120, 6, 3, generator=G, dtype=torch.float64) * 1.5
    transitions = torch.randn(3, 3, generator=G, dtype=torch.float64)
    ends = torch.zeros(3, dtype=torch.float64)
    tags = linear_chain.sample(emissions, transitions, ends, ends, n_samples=1, generator=G)[0]
    good = (3 * emissions, 3 * transitions, ends, ends, tags)
    return good, (-good[0], -good[1], ends, ends, tags)


def _coref() -> tuple[tuple, tuple]:
    scores = torch.randn(60, 8, 8, generator=G, dtype=torch.float64)
    gold = torch.nn.functional.one_hot(sample_antecedents(scores, 1, generator=G)[0], 8).bool()
    worst = scores.masked_fill(~torch.ones(8, 8, dtype=torch.bool).tril(), torch.inf).argmin(-1)
    return (2 * scores, gold), (scores, torch.nn.functional.one_hot(worst, 8).bool())


def _classifier(make) -> tuple[tuple, tuple]:
    z = torch.randn(400, 4, generator=G, dtype=torch.float64) * 3
    y = torch.multinomial(torch.softmax(z / 2, -1), 1, generator=G).squeeze(1)
    return (z, y), (z, z.argmax(-1))  # the second: separable, no finite optimum


CASES = {
    "chain": (ChainTemperature, _chain, "no usable signal"),
    "chain calib_err": (lambda: ChainTemperature(objective="calib_err"), _chain, "no usable"),
    "coref": (CorefTemperature, _coref, "no usable signal"),
    "temperature": (TemperatureScaling, lambda: _classifier(TemperatureScaling), "finite"),
    "vector": (VectorScaling, lambda: _classifier(VectorScaling), "finite"),
}


def _fit_state(module) -> bytes:
    """Everything a fit sets: the buffers and the ``name_`` attributes."""
    attributes = {k: v for k, v in vars(module).items() if k.endswith("_") and k[0] != "_"}
    return pickle.dumps((module.state_dict(), attributes))


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_fit_changes_nothing(case) -> None:
    make, data, refusal = CASES[case]
    good, refused = data()
    module = make().fit(*good)
    before, nll = _fit_state(module), module.nll_
    with pytest.raises(ValueError, match=refusal):
        module.fit(*refused)
    assert _fit_state(module) == before and module.nll_ == nll
    fresh = make()
    with pytest.raises(ValueError, match=refusal):
        fresh.fit(*refused)
    assert not hasattr(fresh, "nll_") and not bool(fresh.fitted)
    assert bool(fresh.fit(*good).fitted)  # and the module still fits
