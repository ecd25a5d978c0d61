"""PlattScaling's argument is ``scores``: its errors had called them "logits" ("logits
contains NaN", "fit(logits[keep], target[keep])") beside its own "scores must be [N]"."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.recalibration import PlattScaling, TemperatureScaling


def _scores() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    s = torch.randn(100, generator=g, dtype=torch.float64)
    return s, torch.bernoulli(torch.sigmoid(s), generator=g).long()


@pytest.mark.parametrize(
    ("kind", "name"), [(PlattScaling, "scores"), (TemperatureScaling, "logits")]
)
def test_errors_name_the_input_as_the_fit_does(kind, name) -> None:
    s, y = _scores()
    nan = s.clone()
    nan[3] = float("nan")
    with pytest.raises(ValueError, match=rf"^{name} contains NaN or infinite values"):
        kind().fit(nan, y)
    padded = y.clone()
    padded[0] = -100
    with pytest.raises(ValueError, match=rf"fit\({name}\[keep\], target\[keep\]\)"):
        kind().fit(s, padded)
    with pytest.raises(ValueError, match=rf"target must have the shape of {name} \(100,\)"):
        kind().fit(s, y[:50])
    fitted = kind().fit(s, y)
    with pytest.raises(ValueError, match=rf"^{name} contains NaN"):
        fitted(nan)


def test_probabilities_are_still_called_probs() -> None:
    s, y = _scores()
    q = torch.sigmoid(s)
    with pytest.raises(ValueError, match=r"target must have the shape of probs"):
        PlattScaling(inputs="probs").fit(q, y[:50])
