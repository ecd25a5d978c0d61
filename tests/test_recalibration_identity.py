"""A scaler of probabilities at the identity (``T = 1``, Platt's slope 1 and intercept 0)
returns its input as it is. The shortcut had been decided from a host copy of the
parameters cached at fit or load, which in-place edits never cleared: after
``ts.temperature.fill_(2.0)``, an optimizer step or ``platt.slope.mul_(2)`` the module
kept returning its input, and a temperature that required grad got none. At ``T = 1`` a
multiclass row that did not sum to 1 was returned as it was, though at ``T = 1 + 1e-12``
it was normalised."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics.recalibration import PlattScaling, TemperatureScaling, fit_binary

G = torch.Generator().manual_seed(0)
Q = torch.rand(500, generator=G, dtype=torch.float64).clamp(0.01, 0.99)
Y = torch.bernoulli(Q, generator=G)


def _kept_at_one() -> TemperatureScaling:
    with pytest.warns(UserWarning, match="kept T = 1"):
        return fit_binary("temperature", torch.full((40,), 0.5, dtype=torch.float64),
                          torch.arange(40) % 2)  # fmt: skip


def _scaled(q: torch.Tensor, temperature: float) -> torch.Tensor:
    """``sigmoid(logit(q) / T)``, the map away from the identity."""
    return torch.sigmoid((torch.log(q) - torch.log1p(-q)) / temperature)


def test_a_temperature_edited_in_place_is_the_temperature_used() -> None:
    ts = _kept_at_one()
    assert torch.equal(ts(Q), Q)
    with torch.no_grad():
        ts.temperature.fill_(2.0)
    torch.testing.assert_close(ts(Q), _scaled(Q, 2.0))
    ts.state_dict()["temperature"].copy_(3.0)
    torch.testing.assert_close(ts(Q), _scaled(Q, 3.0))
    ts.state_dict()["temperature"].copy_(1.0)  # back at the identity: exact again
    assert torch.equal(ts(Q), Q)
    # An optimizer's step on the temperature.
    ts.temperature.requires_grad_(True)
    optimizer = torch.optim.SGD([ts.temperature], lr=0.5)
    loss = torch.nn.functional.binary_cross_entropy(ts(Q), Y)
    loss.backward()
    optimizer.step()
    assert ts.temperature.item() != 1.0
    with torch.no_grad():
        torch.testing.assert_close(ts(Q), _scaled(Q, ts.temperature.item()))


def test_platt_edited_in_place_is_the_platt_used() -> None:
    platt = PlattScaling(inputs="probs").fit(Q, Y)
    platt.slope = torch.tensor(1.0, dtype=torch.float64)
    platt.intercept = torch.tensor(0.0, dtype=torch.float64)
    assert torch.equal(platt(Q), Q)
    platt.slope.mul_(2)
    torch.testing.assert_close(platt(Q), _scaled(Q, 0.5))
    platt.slope.fill_(1.0)
    platt.intercept.add_(0.5)
    assert not torch.equal(platt(Q), Q)


def test_a_temperature_that_requires_grad_gets_the_maps_gradient_at_one() -> None:
    """d sigmoid(logit(q) / T) / dT at T = 1 is -q (1 - q) logit(q); the shortcut had
    returned q itself, which does not require grad."""
    ts = _kept_at_one()
    ts.temperature.requires_grad_(True)
    out = ts(Q)
    assert out.requires_grad
    out.sum().backward()
    logit = torch.log(Q) - torch.log1p(-Q)
    torch.testing.assert_close(ts.temperature.grad, -(Q * (1 - Q) * logit).sum())
    torch.testing.assert_close(out.detach(), Q)
    # Without grad the identity is exact again, and so it is for the inputs' own grad.
    with torch.no_grad():
        assert torch.equal(ts(Q), Q)
    ts.temperature.requires_grad_(False)
    q = Q.clone().requires_grad_(True)
    out = ts(q)
    assert torch.equal(out.detach(), Q)
    out.sum().backward()
    assert torch.equal(q.grad, torch.ones_like(Q))


def test_the_identity_keeps_the_dtype_and_returns_a_new_tensor() -> None:
    ts = _kept_at_one()
    q = Q.float()
    out = ts(q)
    assert out.dtype == torch.float32 and torch.equal(out, q) and out.data_ptr() != q.data_ptr()
    assert ts(torch.tensor(0.3)).shape == ()  # a 0-dim score still maps to one


def test_rows_that_do_not_sum_to_one_are_normalised_at_t_one_as_near_it() -> None:
    """At T = 1 a row summing to 0.9 had been returned as it was; at T = 1 + 1e-12 it was
    normalised (softmax of log p)."""
    with pytest.warns(UserWarning, match="kept T = 1"):
        kept = TemperatureScaling(inputs="probs").fit(torch.full((12, 3), 1 / 3),
                                                      torch.arange(12) % 3)  # fmt: skip
    near = TemperatureScaling(inputs="probs")
    near.load_state_dict(kept.state_dict())
    near.temperature = torch.tensor(1 + 1e-12, dtype=torch.float64)
    rows = torch.tensor([[0.5, 0.3, 0.1], [0.5, 0.3, 0.2], [0.2, 0.2, 0.2]])
    out = kept(rows)
    torch.testing.assert_close(out.sum(-1), torch.ones(3))
    torch.testing.assert_close(out, near(rows))
    torch.testing.assert_close(out[0], torch.tensor([5 / 9, 3 / 9, 1 / 9]))
    assert torch.equal(out[1], rows[1])  # a normalised row, as it is
    # Softmax outputs sum to 1 only to rounding: still returned bit for bit.
    for dtype, classes in ((torch.float32, 3), (torch.float32, 1000), (torch.float64, 7),
                           (torch.bfloat16, 3)):  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = TemperatureScaling(inputs="probs").fit(
                torch.full((2 * classes, classes), 1 / classes), torch.arange(2 * classes) % classes
            )
        soft = torch.softmax(3 * torch.randn(200, classes, generator=G).to(dtype), -1)
        assert torch.equal(model(soft), soft), (dtype, classes)


def test_the_identity_is_chosen_on_the_device() -> None:
    """No host read of the parameters: a call at T = 1 reads the device as often as one
    at T = 2 (the input checks' reads), binary and multiclass."""
    import host_reads

    ts = _kept_at_one()
    ts(Q)  # whether it is fitted, and its number of classes, are read once
    at_one = host_reads.count_reads(lambda: ts(Q))
    ts.temperature = torch.tensor(2.0, dtype=torch.float64)
    assert host_reads.count_reads(lambda: ts(Q)) == at_one
    with pytest.warns(UserWarning, match="kept T = 1"):
        rows = TemperatureScaling(inputs="probs").fit(torch.full((12, 3), 1 / 3),
                                                      torch.arange(12) % 3)  # fmt: skip
    soft = torch.softmax(torch.randn(20, 3, generator=G), -1)
    rows(soft)
    # Multiclass probabilities, their input check (a row all 0 too) one read, as above.
    at_one = host_reads.count_reads(lambda: rows(soft))
    rows.temperature = torch.tensor(2.0, dtype=torch.float64)
    assert host_reads.count_reads(lambda: rows(soft)) == at_one


def test_a_half_precision_row_far_from_one_is_normalised_at_t_one() -> None:
    # bfloat16's eps * sqrt(C) had let a row of 50,000 classes summing to 0.4 through as
    # "sums to 1" at T = 1, while T = 1 + 1e-9 normalised it.
    g = torch.Generator().manual_seed(0)
    row = torch.rand(1, 50_000, generator=g, dtype=torch.float64)
    row = (0.4 * row / row.sum()).to(torch.bfloat16)
    logits = 3 * torch.randn(400, 50_000, generator=g)
    target = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)[:, 0]
    scaler = TemperatureScaling(inputs="probs").fit(torch.softmax(logits / 2, -1), target)
    with torch.no_grad():
        scaler.temperature.fill_(1.0)
    out = scaler(row)
    assert abs(out.double().sum().item() - 1) < 0.01
    softmax = torch.softmax(torch.randn(4, 50_000, generator=g), -1).to(torch.bfloat16)
    assert torch.equal(scaler(softmax), softmax)  # a true softmax row stays itself
