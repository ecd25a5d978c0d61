"""Classes masked with -inf in multiclass logits: ``TemperatureScaling`` keeps them at
probability 0 and fits the temperature the large finite masks of docs/recalibration.md
(``-1e9``, ``finfo.min``) give; it had refused them as "logits contains NaN or infinite
values", while its own warning offered "0 and -inf" as an example and ChainTemperature
takes -inf."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
import torch
from torch import Tensor

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
    with pytest.raises(ValueError, match=said):
        PlattScaling().fit(s, (y == 0).double())
    # A binary TemperatureScaling takes masks in logits [N, C]: said so, not "taken by
    # TemperatureScaling", which it is.
    binary = (
        r"binary scores \[N\] are log-odds, where -inf is no class mask: for -inf class "
        r"masks, pass the classes' logits \[N, C\]"
    )
    with pytest.raises(ValueError, match=binary):
        TemperatureScaling().fit(s, (y == 0).double())
    s[0] = math.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values$"):
        TemperatureScaling().fit(s, (y == 0).double())


def test_gradients_through_minus_inf_masks_are_finite() -> None:
    """d(-inf / T)/dT is inf times the softmax's 0 at a mask: the gradient to T of the
    output (and of calibrated_logits) had been NaN. It is that of -1e9 masks."""
    z, y, masked = _masked_classifier()
    grads = {}
    for mask in (-math.inf, -1e9):
        logits = z.masked_fill(masked, mask)
        fitted = TemperatureScaling().fit(logits, y)
        fitted.temperature = torch.tensor(1.7, dtype=torch.float64, requires_grad=True)
        logits.requires_grad_(True)
        probs = fitted(logits)
        loss = -probs.gather(1, y.unsqueeze(1)).log().mean()
        loss.backward()
        scaled = fitted.calibrated_logits(logits)
        (dt,) = torch.autograd.grad(scaled.log_softmax(-1).gather(1, y.unsqueeze(1)).sum(),
                                    fitted.temperature)  # fmt: skip
        grads[mask] = (fitted.temperature.grad, logits.grad, dt)
        assert bool(torch.isfinite(fitted.temperature.grad)) and bool(torch.isfinite(dt))
        assert bool(torch.isfinite(logits.grad).all())
    for inf, finite in zip(grads[-math.inf], grads[-1e9]):
        torch.testing.assert_close(inf, finite)


def _only_the_target(n: int = 200, classes: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits that allow each item its target class alone."""
    y = torch.arange(n) % classes
    only = torch.full((n, classes), -math.inf, dtype=torch.float64)
    only[torch.arange(n), y] = 1.0
    return only, y


def test_items_that_allow_their_target_alone_do_not_count() -> None:
    """Such an item has probability 1 at every T: it says nothing of T, and its margin
    over the masked classes had made data where every item is one "separable"."""
    only, yy = _only_the_target()
    with pytest.warns(UserWarning, match=r"no item has two allowed classes.*kept T = 1"):
        fitted = TemperatureScaling().fit(only, yy)
    assert fitted.temperature.item() == 1.0 and fitted.nll_ == 0.0
    assert torch.equal(fitted(only), (only == 1).double())
    # Beside items of two allowed classes or more, they leave the fit as it is; nll_
    # stays the mean over every item (theirs 0).
    z, y, masked = _masked_classifier()
    z = z.masked_fill(masked, -math.inf)
    alone = TemperatureScaling().fit(z, y)
    only6 = torch.cat([only, torch.full((200, 1), -math.inf, dtype=torch.float64)], 1)
    both = TemperatureScaling().fit(torch.cat([z, only6]), torch.cat([y, yy]))
    assert both.temperature.item() == alone.temperature.item()
    assert both.nll_ == pytest.approx(alone.nll_ * 2000 / 2200, rel=1e-12)
    # An item whose one allowed class is not its target is still refused.
    wrong = only.clone()
    wrong[3] = wrong[4]
    with pytest.raises(ValueError, match=r"logits\[3\] masks its target class 3"):
        TemperatureScaling().fit(wrong, yy)


def test_a_refused_minus_inf_says_what_to_change() -> None:
    """TemperatureScaling(inputs="probs") and a binary TemperatureScaling had been told
    that "-inf class masks are taken by TemperatureScaling of multiclass logits" only,
    which they are; one row [C] masked in every class had read "logits[] is -inf"."""
    row = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.8, -math.inf]])
    said = r"^probs contains NaN or infinite values \(probabilities lie in \[0, 1\], a masked "
    for scaler, probs in (
        (TemperatureScaling(inputs="probs"), row),
        (PlattScaling(inputs="probs"), row[1]),
    ):
        with pytest.raises(ValueError, match=said + "class's at 0"):
            scaler.fit(probs, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"pass logits \[N, C\] to TemperatureScaling\(inputs="
                       r"'logits'\)\)$"):  # fmt: skip
        TemperatureScaling(inputs="probs").fit(row, torch.tensor([0, 1]))
    z, y, masked = _masked_classifier()
    fitted = TemperatureScaling().fit(z.masked_fill(masked, -math.inf), y)
    with pytest.raises(ValueError, match=r"^the row of logits \[6\] is -inf in every class"):
        fitted(torch.full((6,), -math.inf))
    assert fitted(z[0]).shape == (6,)


def test_a_zero_probability_is_a_masked_class_that_stays_zero() -> None:
    """Probabilities read through ``log p`` clamped at 1e-12 had made a 0 a logit of -27.6,
    which a temperature above 1 raised: up to 0.26% of the mass on classes the model ruled
    out, and T 3.689 against 3.763 from the same model's -inf-masked logits."""
    z, y, masked = _masked_classifier()
    logits = z.masked_fill(masked, -math.inf)
    probs = torch.softmax(logits, -1)
    assert bool((probs[masked] == 0).all())
    from_logits = TemperatureScaling().fit(logits, y)
    from_probs = TemperatureScaling(inputs="probs").fit(probs, y)
    t = from_probs.temperature.item()
    assert t == pytest.approx(from_logits.temperature.item(), rel=1e-9)
    out = from_probs(probs)
    assert bool((out[masked] == 0).all()) and not out.isnan().any()
    torch.testing.assert_close(out, from_logits(logits))
    assert bool((from_probs.calibrated_logits(probs)[masked] == -math.inf).all())
    # The gradient to the probabilities stays finite at a 0, as the logits' at a -inf.
    given = probs[:5].clone().requires_grad_()
    from_probs(given)[:, 0].sum().backward()
    assert bool(given.grad.isfinite().all())


def _nll_of_probs_at(probs: Tensor, y: Tensor, t: float) -> float:
    """The dev NLL that a fit on multiclass probabilities minimises, in numpy float64: a
    class at probability 0 left out of its row's softmax, but a target at 0 read as 1e-12."""
    from scipy import special

    p = probs.numpy()
    rows = np.arange(len(p))
    logp = np.full(p.shape, -np.inf)
    logp[p > 0] = np.log(p[p > 0])
    own = logp[rows, y.numpy()]
    logp[rows, y.numpy()] = np.where(own == -np.inf, np.log(1e-12), own)
    return float(np.mean(special.logsumexp(logp / t, axis=1) - logp[rows, y.numpy()] / t))


def test_a_target_at_probability_zero_is_fitted_at_1e_12_with_a_warning() -> None:
    """A float16 softmax is 0 below 6e-8 (a logit gap above ~17): a confidently wrong
    item's target underflows to 0, and one such item among 10^5 had refused the whole fit.
    It is fitted with that one entry at log 1e-12; the other zeros stay masks, and every
    0 stays 0 in the fitted map."""
    optimize = pytest.importorskip("scipy.optimize")
    z, y, masked = _masked_classifier()
    probs = torch.softmax(z.masked_fill(masked, -math.inf), -1)
    wrong = y.clone()
    wrong[7], wrong[30] = 4, 5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = TemperatureScaling(inputs="probs").fit(probs, wrong)
    said = [str(w.message) for w in caught]
    assert len(said) == 1, said  # once, however many items
    assert re.match(
        r"TemperatureScaling: 2 dev items with probability 0 on the target class \(the "
        r"first: probs\[7\], class 4\), which no temperature raises: the fit reads that 0 as "
        r"1e-12, .*The model's logits avoid this",
        said[0],
    ), said[0]
    assert caught[0].filename == __file__  # said at the caller's fit
    t = fitted.temperature.item()
    assert math.isfinite(t)
    best = optimize.minimize_scalar(
        lambda log_t: _nll_of_probs_at(probs, wrong, math.exp(log_t)),
        bounds=(-5.0, 5.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert t == pytest.approx(math.exp(best.x), rel=1e-6)
    assert fitted.nll_ == pytest.approx(_nll_of_probs_at(probs, wrong, t), rel=1e-9)
    out = fitted(probs)
    assert bool((out[masked] == 0).all()) and not out.isnan().any()


def test_a_row_all_zero_is_still_refused() -> None:
    """No class is left to predict, at fit and at a call."""
    z, y, masked = _masked_classifier()
    probs = torch.softmax(z.masked_fill(masked, -math.inf), -1)
    empty = probs.clone()
    empty[9] = 0.0
    with pytest.raises(ValueError, match=r"^probs\[9\] is 0 in every class"):
        TemperatureScaling(inputs="probs").fit(empty, y)
    fitted = TemperatureScaling(inputs="probs").fit(probs, y)
    with pytest.raises(ValueError, match=r"^probs\[9\] is 0 in every class"):
        fitted(empty)
    with pytest.raises(ValueError, match=r"^the row of probs \[6\] is 0 in every class"):
        fitted(torch.zeros(6, dtype=torch.float64))


def test_a_call_on_probabilities_reads_the_device_as_its_docstring_says() -> None:
    """The check for a row all 0 had been a read of its own at every call on multiclass
    probabilities: 4 reads a call with the range and the finiteness (read twice), 3 for
    binary probabilities, against the logits' 1. One check of all of them now."""
    import host_reads

    z, y, masked = _masked_classifier()
    probs = torch.softmax(z.masked_fill(masked, -math.inf), -1)
    rows = TemperatureScaling(inputs="probs").fit(probs, y)
    q, labels = probs[:, 0], (y == 0).double()
    scores = TemperatureScaling(inputs="probs").fit(q, labels)

    def reads(call, x: Tensor) -> int:
        return host_reads.count_reads(lambda: call(x))

    counts = {}
    for name, module, x in (("rows", rows, probs), ("one row", rows, probs[0]),
                            ("binary", scores, q)):  # fmt: skip
        module(x)  # whether it is fitted, and its number of classes, are read once
        counts[name] = (reads(module, x), reads(module.calibrated_logits, x))
    assert counts == dict.fromkeys(counts, (1, 1))
    assert host_reads.stated_syncs(TemperatureScaling.forward) == 1


def test_binary_probabilities_of_0_and_1_stay_scores_not_masks() -> None:
    """A binary score is a log-odds, not a class: a 0 or 1 (often a rounding, in a file of
    4 digits) is read as logit ∓27.6 and moves as the other scores do; a label on the
    other side is fitted, not refused."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(500, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    q[:2], y[:2] = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])
    for scaler in (TemperatureScaling(inputs="probs"), PlattScaling(inputs="probs")):
        out = scaler.fit(q, y)(torch.tensor([0.0, 1.0], dtype=torch.float64))
        assert 0 < out[0].item() < 1e-3 and 1 - 1e-3 < out[1].item() < 1, type(scaler)
