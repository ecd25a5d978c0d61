"""``ChainTemperature(objective="calib_err")``: the search follows the potentials' scale and
shares the likelihood fit's checks. It had searched a fixed grid over T in [0.2, 5]: 10x
overconfident potentials got its edge T = 5 (dev CalibErr 0.097, against 0.024 at T = 10),
potentials x0.01 got 0.2; all-zero potentials got 0.2 without a warning, anti-correlated
ones 5 (the likelihood fit keeps T = 1 with a warning, and refuses the latter)."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from calib_metrics.functional import calibration_error
from calib_metrics.models import linear_chain
from calib_metrics.recalibration import ChainTemperature, structured


def _chain() -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """Potentials and gold tags sampled from them (a calibrated chain at T = 1)."""
    g = torch.Generator().manual_seed(0)
    em = torch.randn(150, 6, 3, generator=g, dtype=torch.float64)
    tr = torch.randn(3, 3, generator=g, dtype=torch.float64)
    zero = torch.zeros(3, dtype=torch.float64)
    tags = linear_chain.sample(em, tr, zero, zero, n_samples=1, generator=g)[0]
    return (em, tr, zero, zero), tags


def _scaled(factor: float) -> tuple[torch.Tensor, ...]:
    (em, tr, st, en), _ = _chain()
    return factor * em, factor * tr, st, en


def _dev_calib_err(parts, tags, t: float) -> float:
    unigram = linear_chain.posterior_marginals(*(x / t for x in parts), pairwise=False).unigram
    y = torch.nn.functional.one_hot(tags, unigram.shape[-1]).to(unigram.dtype)
    return float(calibration_error(unigram.reshape(-1), y.reshape(-1), debias=True))


@pytest.mark.parametrize("factor", [10.0, 0.01])
def test_the_search_follows_the_potentials_scale(factor) -> None:
    _, tags = _chain()
    parts = _scaled(factor)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an optimum inside the range searched: no warning
        fitted = ChainTemperature(objective="calib_err").fit(*parts, tags)
    t = fitted.temperature.item()
    # Near the likelihood fit's T (10.05 and 0.01005), not the old grid's edge (5 and 0.2).
    likelihood = ChainTemperature().fit(*parts, tags).temperature.item()
    assert 0.5 < t / likelihood < 2
    assert fitted.transition_temperature.item() == t
    assert fitted.calib_err_ == pytest.approx(_dev_calib_err(parts, tags, t), abs=1e-12)
    old_edge = 5.0 if factor > 1 else 0.2
    assert fitted.calib_err_ < _dev_calib_err(parts, tags, old_edge) - 0.05


def test_flat_potentials_keep_t_1_with_the_likelihood_fits_warning() -> None:
    (em, tr, st, en), tags = _chain()
    zeros = (torch.zeros_like(em), torch.zeros_like(tr), st, en)
    with pytest.warns(UserWarning, match="do not depend on T and cannot set it: kept T = 1"):
        fitted = ChainTemperature(objective="calib_err").fit(*zeros, tags)
    assert fitted.temperature.item() == 1.0
    assert fitted.calib_err_ == pytest.approx(_dev_calib_err(zeros, tags, 1.0), abs=1e-12)


def test_anti_correlated_potentials_are_refused_as_the_likelihood_fit_refuses_them() -> None:
    (em, tr, st, en), tags = _chain()
    for objective in ("likelihood", "calib_err"):
        with pytest.raises(ValueError, match="leave no usable signal in the potentials"):
            ChainTemperature(objective=objective).fit(-em, -tr, st, en, tags)


def test_separable_dev_data_are_refused_as_the_likelihood_fit_refuses_them() -> None:
    (em, tr, st, en), _ = _chain()
    viterbi = linear_chain.viterbi(3 * em, tr, st, en)[1]
    with pytest.raises(ValueError, match="separable"):
        ChainTemperature(objective="calib_err").fit(3 * em, tr, st, en, viterbi)


def test_an_optimum_beyond_the_range_widens_it_and_a_bound_is_warned(monkeypatch) -> None:
    """10x overconfident potentials: the lowest dev CalibErr lies about two lattice steps
    below the likelihood fit's T; a range of one step either side finds it by widening,
    and warns (naming the fit's line) when it may not widen."""
    _, tags = _chain()
    parts = _scaled(10.0)
    wide = ChainTemperature(objective="calib_err").fit(*parts, tags).temperature.item()
    monkeypatch.setattr(structured, "_GRID_REACH", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        widened = ChainTemperature(objective="calib_err").fit(*parts, tags)
    assert widened.temperature.item() == wide
    monkeypatch.setattr(structured, "_GRID_WIDENINGS", 0)
    with pytest.warns(UserWarning, match="lowest at the lowest temperature searched") as caught:
        bounded = ChainTemperature(objective="calib_err").fit(*parts, tags)
    assert {w.filename for w in caught} == {__file__}
    assert bounded.temperature.item() > wide


@pytest.mark.parametrize("seed", [0, 4])
def test_a_plateau_of_zero_error_keeps_the_likelihood_temperature(seed) -> None:
    """On a small calibrated dev set the debiased error is exactly 0 over a range of T that
    holds the likelihood fit's T; ties had gone to the range's lowest T (0.968 for 1.093 at
    seed 0), sharpening the model for nothing."""
    g = torch.Generator().manual_seed(seed)
    em = torch.randn(20, 5, 3, generator=g, dtype=torch.float64)
    tr = torch.randn(3, 3, generator=g, dtype=torch.float64)
    zero = torch.zeros(3, dtype=torch.float64)
    tags = linear_chain.sample(em, tr, zero, zero, n_samples=1, generator=g)[0]
    likelihood = ChainTemperature().fit(em, tr, zero, zero, tags).temperature.item()
    fitted = ChainTemperature(objective="calib_err").fit(em, tr, zero, zero, tags)
    assert fitted.calib_err_ == 0.0
    fine_step = 2 * structured._GRID_STEP / 20
    assert abs(math.log(fitted.temperature.item() / likelihood)) <= fine_step
