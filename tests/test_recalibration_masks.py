"""Classes masked with -inf in multiclass logits: ``TemperatureScaling`` keeps them at
probability 0 and fits the temperature the large finite masks of docs/recalibration.md
(``-1e9``, ``finfo.min``) give; it had refused them as "logits contains NaN or infinite
values", while its own warning offered "0 and -inf" as an example and ChainTemperature
takes -inf."""

from __future__ import annotations

import math

import pytest
import torch

from calib_metrics.recalibration import (
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)


def _masked_classifier(seed: int = 0):
    """Logits [N, 6] whose classes 4 and 5 are masked everywhere and class 3 on a third
    of the items (never the target), with the mask positions."""
    g = torch.Generator().manual_seed(seed)
    z = 2 * torch.randn(2000, 4, generator=g, dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / 2, -1), 1, generator=g)[:, 0]
    z = torch.cat([z, torch.zeros(2000, 2, dtype=torch.float64)], 1)
    masked = torch.zeros_like(z, dtype=torch.bool)
    masked[:, 4:] = True
    masked[:, 3] = (torch.rand(2000, generator=g) < 1 / 3) & (y != 3)
    return z, y, masked


def test_minus_inf_masks_fit_the_temperature_of_large_finite_masks() -> None:
    z, y, masked = _masked_classifier()
    fits = {}
    for mask in (-math.inf, torch.finfo(torch.float64).min, -1e9):
        fits[mask] = TemperatureScaling().fit(z.masked_fill(masked, mask), y)
    t = {mask: fit.temperature.item() for mask, fit in fits.items()}
    assert t[-math.inf] == t[torch.finfo(torch.float64).min]  # both read as masks
    assert t[-math.inf] == pytest.approx(t[-1e9], rel=1e-4)
    assert 1.5 < t[-math.inf] < 2.5  # the logits were made 2x overconfident
    probs = fits[-math.inf](z.masked_fill(masked, -math.inf))
    assert bool((probs[masked] == 0).all()) and not probs.isnan().any()
    torch.testing.assert_close(probs.sum(-1), torch.ones(2000, dtype=torch.float64))
    torch.testing.assert_close(probs, fits[-1e9](z.masked_fill(masked, -1e9)))
    logits = fits[-math.inf].calibrated_logits(z.masked_fill(masked, -math.inf))
    assert bool((logits[masked] == -math.inf).all())  # a -inf stays -inf after z / T


def test_rows_equal_but_for_their_masks_keep_t_at_one() -> None:
    """The warning's own example: rows all 0 but for -inf masks do not depend on T."""
    z = torch.zeros(12, 4, dtype=torch.float64)
    z[::2, 3] = -math.inf
    y = torch.arange(12) % 3
    with pytest.warns(UserWarning, match=r"all equal on each item's allowed choices \(e\.g\. "
                      r"all 0, or 0 and -inf\).*kept T = 1"):  # fmt: skip
        fitted = TemperatureScaling().fit(z, y)
    assert fitted.temperature.item() == 1.0


def test_minus_inf_where_no_temperature_helps_is_refused() -> None:
    z, y, masked = _masked_classifier()
    z = z.masked_fill(masked, -math.inf)
    on_target = z.clone()
    on_target[7, y[7]] = -math.inf
    with pytest.raises(ValueError, match=rf"logits\[7\] masks its target class {int(y[7])}"):
        TemperatureScaling().fit(on_target, y)
    every = z.clone()
    every[5] = -math.inf
    with pytest.raises(ValueError, match=r"logits\[5\] is -inf in every class"):
        TemperatureScaling().fit(every, y)
    fitted = TemperatureScaling().fit(z, y)
    with pytest.raises(ValueError, match=r"logits\[0, 5\] is -inf in every class"):
        fitted(every.reshape(2, 1000, 6))
    for bad in (math.inf, math.nan):
        wrong = z.clone()
        wrong[3, 0] = bad
        with pytest.raises(ValueError, match=r"NaN or \+inf \(-inf, a masked class, is fine\)"):
            TemperatureScaling().fit(wrong, y)
        with pytest.raises(ValueError, match=r"NaN or \+inf"):
            fitted(wrong)


def test_minus_inf_is_refused_where_it_is_no_class_mask() -> None:
    """Binary scores (a log-odds) and the per-class scalers, whose fitted weights can turn
    a -inf into +inf or NaN, take finite logits only, and say who takes masks."""
    z, y, masked = _masked_classifier()
    said = r"NaN or infinite values \(-inf class masks are taken by TemperatureScaling of "
    for scaler in (VectorScaling(), MatrixScaling()):
        with pytest.raises(ValueError, match=said):
            scaler.fit(z.masked_fill(masked, -math.inf), y)
    s = z[:, 0].clone()
    s[0] = -math.inf
    for scaler in (TemperatureScaling(), PlattScaling()):
        with pytest.raises(ValueError, match=said):
            scaler.fit(s, (y == 0).double())
    s[0] = math.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values$"):
        TemperatureScaling().fit(s, (y == 0).double())
