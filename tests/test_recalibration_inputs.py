"""``fit_binary`` takes probabilities, whatever the method: every method refuses values
outside [0, 1] (logits passed by mistake). Once, ``"isotonic"`` and ``"histogram"`` — whose
modules take any real scores — fitted on logits without a word, while the three others
refused them."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.recalibration import BINARY_METHODS, fit_binary


@pytest.mark.parametrize("method", BINARY_METHODS)
@pytest.mark.parametrize("shift", [1.0, -1.0])
def test_fit_binary_refuses_values_outside_0_1(method, shift) -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(200, generator=g)
    y = torch.bernoulli(q, generator=g)
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        fit_binary(method, q + shift, y)


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_fit_binary_still_fits_probabilities_at_the_ends(method) -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.rand(200, generator=g)
    q[:3] = torch.tensor([0.0, 1.0, 0.5])
    y = torch.bernoulli(q, generator=g)
    out = fit_binary(method, q, y, generator=g)(q)
    assert out.shape == q.shape and bool(((out >= 0) & (out <= 1)).all())
