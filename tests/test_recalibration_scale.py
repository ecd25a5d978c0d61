"""Temperature and Platt fits are scale-free: scores scaled by ``c`` fit ``c`` times the
temperature (``1/c`` times Platt's slope). L-BFGS stops on absolute tolerances, and from
``T = 1`` (slope 1) scores of size 1e-6 left the NLL flat: ``TemperatureScaling``,
``ChainTemperature`` and ``CorefTemperature`` returned exactly ``T = 1`` and Platt slope
1 instead of 1e7, silently, every output near uniform. Vector and matrix scaling fit the
same map of logits ×c at every ``c`` (their weights ``1/c`` times), at most the
temperature's NLL."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from calib_metrics.models import linear_chain
from calib_metrics.models.coref import antecedent_log_probs, sample_antecedents
from calib_metrics.recalibration import (
    ChainTemperature,
    CorefTemperature,
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)
from calib_metrics.recalibration._common import MASK_FLOOR

optimize = pytest.importorskip("scipy.optimize")

SCALES = [1e-8, 1e-6, 1e-3, 1.0, 1e4]


def _best_temperature(nll) -> float:
    """The NLL's minimiser over ``T`` by scipy's bounded search on ``log T``."""
    found = optimize.minimize_scalar(
        lambda log_t: float(nll(math.exp(log_t))),
        bounds=(-5.0, 5.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return math.exp(found.x)


def _classifier():
    g = torch.Generator().manual_seed(0)
    z = 2 * torch.randn(2000, 4, generator=g, dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / 2, -1), 1, generator=g)[:, 0]
    return z, y


@pytest.mark.parametrize("c", SCALES)
def test_temperature_scaling_fits_c_times_the_optimum_of_logits_times_c(c) -> None:
    z, y = _classifier()
    best = _best_temperature(lambda t: F.cross_entropy(z / t, y))
    assert TemperatureScaling().fit(c * z, y).temperature.item() == pytest.approx(
        c * best, rel=1e-4
    )
    binary, labels = z[:, 0] - z[:, 1], (y == 0).double()
    best = _best_temperature(lambda t: F.binary_cross_entropy_with_logits(binary / t, labels))
    fitted = TemperatureScaling().fit(c * binary, labels).temperature.item()
    assert fitted == pytest.approx(c * best, rel=1e-4)


def _chain():
    g = torch.Generator().manual_seed(1)
    em = 2 * torch.randn(150, 6, 3, generator=g, dtype=torch.float64)
    tr = torch.randn(3, 3, generator=g, dtype=torch.float64)
    st = en = torch.zeros(3, dtype=torch.float64)
    mask = torch.ones(150, 6, dtype=torch.bool)
    tags = linear_chain.sample(em / 2, tr / 2, st, en, mask, n_samples=1, generator=g)[0]
    return (em, tr, st, en), tags, mask


@pytest.mark.parametrize("c", SCALES)
def test_chain_temperature_fits_c_times_the_optimum_of_potentials_times_c(c) -> None:
    parts, tags, mask = _chain()

    def nll(t: float):
        scaled = [x / t for x in parts]
        score = linear_chain.sequence_score(*scaled, tags, mask)
        return (linear_chain.log_partition(*scaled, mask) - score).sum() / mask.sum()

    scaled = [c * x for x in parts]
    fitted = ChainTemperature().fit(*scaled, tags, mask).temperature.item()
    assert fitted == pytest.approx(c * _best_temperature(nll), rel=1e-4)
    separate = ChainTemperature(separate=True)
    unit = ChainTemperature(separate=True).fit(*parts, tags, mask)
    separate.fit(*scaled, tags, mask)
    for name in ("temperature", "transition_temperature"):
        expected = c * getattr(unit, name).item()
        assert getattr(separate, name).item() == pytest.approx(expected, rel=1e-4)


def _coref():
    g = torch.Generator().manual_seed(2)
    scores = 3 * torch.randn(60, 7, 7, generator=g, dtype=torch.float64)
    chosen = sample_antecedents(scores / 3, 1, generator=g)[0]
    return scores, F.one_hot(chosen, 7).bool()


@pytest.mark.parametrize("c", SCALES)
def test_coref_temperature_fits_c_times_the_optimum_of_scores_times_c(c) -> None:
    scores, gold = _coref()

    def nll(t: float):
        logp = antecedent_log_probs(scores / t)
        return -logp.masked_fill(~gold, -math.inf).logsumexp(-1).mean()

    fitted = CorefTemperature().fit(c * scores, gold).temperature.item()
    assert fitted == pytest.approx(c * _best_temperature(nll), rel=1e-4)
    unit = CorefTemperature(new_offset=True).fit(scores, gold)
    with_offset = CorefTemperature(new_offset=True).fit(c * scores, gold)
    assert with_offset.temperature.item() == pytest.approx(c * unit.temperature.item(), rel=1e-4)
    assert with_offset.offset.item() == pytest.approx(unit.offset.item(), rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("c", [1e-7, 1.0, 1e4])
def test_platt_slope_is_the_optimum_over_c_of_scores_times_c(c) -> None:
    g = torch.Generator().manual_seed(3)
    s = torch.randn(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid(1.5 * s - 0.5), generator=g)

    def nll_and_grad(ab):
        params = torch.tensor(ab, dtype=torch.float64, requires_grad=True)
        loss = F.binary_cross_entropy_with_logits(params[0] * s + params[1], y)
        loss.backward()
        return loss.item(), params.grad.numpy()

    best = optimize.minimize(nll_and_grad, [1.0, 0.0], jac=True, method="BFGS",
                             options={"gtol": 1e-12}).x  # fmt: skip
    platt = PlattScaling().fit(c * s, y)
    assert platt.slope.item() == pytest.approx(best[0] / c, rel=1e-5)
    assert platt.intercept.item() == pytest.approx(best[1], rel=1e-5)


@pytest.mark.parametrize("c", [1e-6, 1.0])
@pytest.mark.parametrize("mask", [-1e9, torch.finfo(torch.float32).min])
def test_masked_classes_in_most_of_a_row_do_not_set_the_start(c, mask) -> None:
    # Classes masked with a large finite score (the -1e9 or finfo.min of many models) in
    # 6 of 10 columns had set the rows' median spread, the fit's start: T ≈ 1e37, where
    # the NLL is flat, and uniform outputs over the real classes, silently.
    z, y = _classifier()
    padded = torch.cat([c * z, torch.full((z.shape[0], 6), mask, dtype=z.dtype)], 1)
    alone = TemperatureScaling().fit(c * z, y).temperature.item()
    fitted = TemperatureScaling().fit(padded, y).temperature.item()
    assert fitted == pytest.approx(alone, rel=1e-4)


def test_forbidden_transitions_in_most_rows_do_not_set_the_start() -> None:
    # Two of three transitions out of most tags forbidden with -1e30 had started the
    # transitions' temperature at ~1e30 (T_tr = 3.9e28 fitted), silently.
    (em, tr, st, en), _, mask = _chain()
    forbidden = torch.tensor([[0, 1, 1], [1, 0, 1], [0, 0, 1]], dtype=torch.bool)
    g = torch.Generator().manual_seed(5)
    fits = []
    # All three make the same chain (exp(-1e4) is 0); float64's lowest value had failed as
    # "NaN or +inf" once divided by T < 1.
    for written in (-1e4, -1e30, torch.finfo(torch.float64).min):
        tr_forbidden = tr.masked_fill(forbidden, written)
        g.manual_seed(5)
        tags = linear_chain.sample(em / 2, tr_forbidden, st, en, mask, n_samples=1, generator=g)[0]
        fits.append(ChainTemperature(separate=True).fit(em, tr_forbidden, st, en, tags, mask))
    for name in ("temperature", "transition_temperature"):
        low, *others = (getattr(fit, name).item() for fit in fits)
        assert 0.2 < low < 5 and others == pytest.approx([low, low], rel=1e-3)


def test_masks_of_float64_s_lowest_value_fit() -> None:
    # torch.finfo(float64).min overflowed to -inf once divided by T < 1, and the gradient
    # with it: "did not converge (NaN loss)".
    z, y = _classifier()
    lowest = torch.finfo(torch.float64).min
    padded = torch.cat([z, torch.full((z.shape[0], 3), lowest, dtype=z.dtype)], 1)
    alone = TemperatureScaling().fit(z, y).temperature.item()
    assert TemperatureScaling().fit(padded, y).temperature.item() == pytest.approx(alone, rel=1e-4)


def test_transitions_that_vary_only_between_rows_still_fit() -> None:
    # Transitions set by the source tag alone (each row constant, rows unlike) and zero
    # start and end scores have no row with a gap: the start had failed on an empty
    # quantile (IndexError) where the fit from T = 1 had worked.
    (em, _, st, en), _, mask = _chain()
    by_source = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)[:, None].expand(3, 3)
    g = torch.Generator().manual_seed(7)
    tags = linear_chain.sample(em / 2, by_source / 2, st, en, mask, n_samples=1, generator=g)[0]
    for separate in (True, False):
        fitted = ChainTemperature(separate=separate).fit(em, by_source, st, en, tags, mask)
        assert 0.1 < fitted.temperature.item() < 10


def test_a_lost_line_search_is_a_clear_value_error() -> None:
    # torch's strong-Wolfe search fails with an IndexError on a score of 1e199 whose
    # label it gets wrong; the fit now says it did not converge.
    g = torch.Generator().manual_seed(0)
    s = torch.randn(2000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid(1.5 * s - 0.3), generator=g)
    scores = torch.cat([s, torch.tensor([-1e199], dtype=torch.float64)])
    labels = torch.cat([y, torch.ones(1, dtype=torch.float64)])
    with pytest.raises(ValueError, match="did not converge: the line search failed"):
        PlattScaling().fit(scores, labels)


def _shifted_classifier():
    """Logits [1000, 4], 3x overconfident and with class biases a temperature cannot fit."""
    g = torch.Generator().manual_seed(0)
    z = 3 * torch.randn(1000, 4, generator=g, dtype=torch.float64)
    shift = torch.tensor([0.5, 0.0, 0.0, -0.5], dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / 3 + shift, -1), 1, generator=g)[:, 0]
    return z, y


def _best_nll(z, y, matrix: bool, masked=None, off_unit: float = 1.0) -> float:
    """The unpenalised optimum of ``softmax(w * z + b)`` (or ``W z + b``) by scipy's BFGS;
    with ``masked``, those outputs set to ``-inf`` (true masks). ``W``'s off-diagonal
    weights are fitted in units of ``off_unit``, which only conditions the problem (the
    NLL is convex in the weights, in any units)."""
    c = z.shape[1]
    start = torch.cat([torch.eye(c).flatten() if matrix else torch.ones(c), torch.zeros(c)])
    eye = torch.eye(c, dtype=torch.float64)

    def nll_and_grad(flat):
        params = torch.tensor(flat, dtype=torch.float64, requires_grad=True)
        w, b = params[:-c], params[-c:]
        if matrix:
            w = w.view(c, c) * (eye + (1 - eye) * off_unit)
        out = z @ w.t() + b if matrix else z * w + b
        if masked is not None:
            out = out.masked_fill(masked, -math.inf)
        loss = F.cross_entropy(out, y)
        loss.backward()
        return loss.item(), params.grad.numpy()

    found = optimize.minimize(nll_and_grad, start.double().numpy(), jac=True, method="BFGS",
                              options={"gtol": 1e-10})  # fmt: skip
    return float(found.fun)


@pytest.mark.parametrize("matrix", [False, True], ids=["vector", "matrix"])
@pytest.mark.parametrize("c", [1e-7, 1.0, 1e6])
def test_vector_and_matrix_scaling_fit_the_optimum_of_logits_times_c(c, matrix) -> None:
    """``softmax(W (c z) + b)`` can express the same maps at every ``c``, but the fits
    started at ``W = I`` in absolute units: at ``c = 1e-7`` the weights stayed at 1 (dev NLL
    1.3226, above the temperature's 1.1277), at ``c = 1e6`` they stopped short (vector
    1.1205 against 1.0583), silently."""
    z, y = _shifted_classifier()
    best = _best_nll(z, y, matrix)
    scaler = (MatrixScaling(0.0, 0.0) if matrix else VectorScaling()).fit(c * z, y)
    assert scaler.nll_ == pytest.approx(best, abs=1e-6)
    # The same map: its probabilities on the scaled logits are the scale-1 fit's.
    unit = (MatrixScaling(0.0, 0.0) if matrix else VectorScaling()).fit(z, y)
    torch.testing.assert_close(scaler(c * z), unit(z), rtol=0, atol=1e-4)


@pytest.mark.parametrize("make", [VectorScaling, lambda: VectorScaling(bias_l2=0.1),
                                  MatrixScaling, lambda: MatrixScaling(1.0, 1.0)])  # fmt: skip
@pytest.mark.parametrize("c", [1e-8, 1e-7, 1.0, 1e5, 1e6])
def test_per_class_scaling_fits_no_worse_than_the_temperature_it_nests(make, c) -> None:
    """Vector and matrix scaling hold the temperature's maps (``W = I / T``, ``b = 0``, no
    penalty there): their dev NLL is at most the temperature's, penalised or not."""
    z, y = _shifted_classifier()
    temperature = TemperatureScaling().fit(c * z, y)
    scaler = make().fit(c * z, y)
    nll = F.cross_entropy(scaler.calibrated_logits(c * z), y).item()
    assert nll <= temperature.nll_ + 1e-9


def test_a_penalised_matrix_scaling_of_tiny_logits_leaves_its_start() -> None:
    """On logits ×1e-8 the default ODIR penalty weighs each off-diagonal weight 10¹⁴ times as
    hard as the NLL: the off-diagonals stay at 0, and the fit is vector scaling with the same
    bias penalty. In the diagonal's units L-BFGS had left the fit at its start (the
    temperature's map, dev NLL 1.1277 against 1.0584)."""
    z, y = _shifted_classifier()
    fitted = MatrixScaling().fit(1e-8 * z, y)
    vector = VectorScaling(bias_l2=0.01).fit(z, y)
    assert fitted.nll_ == pytest.approx(vector.nll_, abs=1e-6)
    off = fitted.weight - torch.diag(fitted.weight.diagonal())
    assert off.abs().max().item() * 1e-8 < 1e-6


def _masked_rows():
    """Logits [2000, 10], 3x overconfident, with class biases from 0.5 to -0.5, whose
    items mask 6 random classes each (never the target), and the mask positions."""
    g = torch.Generator().manual_seed(1)
    z = 3 * torch.randn(2000, 10, generator=g, dtype=torch.float64)
    masked = torch.rand(2000, 10, generator=g).argsort(-1) < 6
    shift = torch.linspace(0.5, -0.5, 10, dtype=torch.float64)
    allowed = torch.softmax((z / 3 + shift).masked_fill(masked, -math.inf), -1)
    y = torch.multinomial(allowed, 1, generator=g)[:, 0]
    return z, y, masked


_MASKS = [-1e9, torch.finfo(torch.float32).min, torch.finfo(torch.float64).min]


@pytest.mark.parametrize("mask", _MASKS, ids=["-1e9", "float32_min", "float64_min"])
def test_vector_scaling_of_finite_masks_fits_the_optimum_of_minus_inf_masks(mask) -> None:
    """A class masked with a large finite score has probability 0 at every weight the fit
    reaches, as a ``-inf``'s. Masks in most of a row had set the weights' unit (the logits'
    distance from their row's median, ~1e9): the NLL was flat in the weights, which stayed
    at ``1 / T`` (dev NLL 1.087908 against the optimum's 1.084830), silently."""
    z, y, masked = _masked_rows()
    best = _best_nll(z, y, matrix=False, masked=masked)
    fitted = VectorScaling().fit(z.masked_fill(masked, mask), y)
    assert fitted.nll_ == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("mask", _MASKS, ids=["-1e9", "float32_min", "float64_min"])
def test_matrix_scaling_of_finite_masks_fits_its_optimum(mask) -> None:
    """To matrix scaling a finite mask is a score: class i's weight on a masked class j adds
    ``weight × mask`` to class i's logit on exactly the items that mask j, which ``-inf``
    masks do not allow (and a weight that mixed j's other logits into i's would add
    ``±1e9 × weight`` there), so its optimum lies below vector scaling's, not at matrix
    scaling's with ``-inf`` masks. The reference fits the same objective with those
    weights in units of ``1 / |mask|``, where it is well conditioned. Fitted in the spread's
    unit (~1e9) the diagonal had stayed at ``1 / T`` (dev NLL 1.073314 against 1.069757;
    with float64's lowest value 1.087908). In the temperature's unit alone (no curvature)
    the weights on float32's ``finfo.min`` are so steep that the fit stays at the
    temperature's map (1.125730)."""
    z, y, masked = _masked_rows()
    read = max(mask, MASK_FLOOR)  # a fit reads a lower logit at MASK_FLOOR
    best = _best_nll(z.masked_fill(masked, read), y, matrix=True, off_unit=-1 / read)
    fitted = MatrixScaling(0.0, 0.0).fit(z.masked_fill(masked, mask), y)
    assert fitted.nll_ == pytest.approx(best, abs=1e-6)
    assert best < _best_nll(z, y, matrix=False, masked=masked) - 0.01


@pytest.mark.parametrize("matrix", [False, True], ids=["vector", "matrix"])
def test_labels_that_go_against_the_logits_fit_negative_weights(matrix) -> None:
    """Labels drawn from ``softmax(-z / 3)`` send the temperature to ``∞`` (``T`` ≈ 2.7e10
    on logits of size 3), and the weights' optimum is negative: the weights' unit is capped
    at the logits' spread. In units of ``T`` the NLL is flat in them, and they stay at
    ``1 / T`` ≈ 0 (dev NLL 1.3863, log 4, against vector scaling's 1.0703)."""
    g = torch.Generator().manual_seed(0)
    z = 3 * torch.randn(1000, 4, generator=g, dtype=torch.float64)
    y = torch.multinomial(torch.softmax(-z / 3, -1), 1, generator=g)[:, 0]
    fitted = (MatrixScaling(0.0, 0.0) if matrix else VectorScaling()).fit(z, y)
    assert fitted.nll_ == pytest.approx(_best_nll(z, y, matrix), abs=1e-6)
    assert bool((fitted.weight.diagonal() if matrix else fitted.weight).max() < 0)
