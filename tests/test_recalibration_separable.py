"""Held-out data that a recalibrator separates have no finite optimum: the fit is refused
with a ValueError that says so (it had returned T = 0.0019 on 40 items a model got all
right, sending 95% of a test set's probabilities to exactly 0 or 1), and the Lightning
callback warns and fits nothing."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer
from torch.utils.data import DataLoader, TensorDataset

from calib_metrics.callbacks import TemperatureRecalibration
from calib_metrics.models import linear_chain
from calib_metrics.recalibration import (
    ChainTemperature,
    CorefTemperature,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)

G = torch.Generator().manual_seed(0)
DEV = torch.randn(40, 3, generator=G)
ALL_RIGHT = DEV.argmax(-1)
ONE_WRONG = ALL_RIGHT.clone()
ONE_WRONG[0] = (ONE_WRONG[0] + 1) % 3
SCORES = torch.linspace(-3, 3, 40)


@pytest.mark.parametrize("scaler", [TemperatureScaling, VectorScaling, MatrixScaling])
def test_multiclass_scalers_refuse_separable_data(scaler) -> None:
    with pytest.raises(ValueError, match=r"separable.*no finite optimum"):
        scaler().fit(DEV, ALL_RIGHT)


@pytest.mark.parametrize("scaler", [TemperatureScaling, PlattScaling])
def test_binary_scalers_refuse_separable_scores(scaler) -> None:
    with pytest.raises(ValueError, match="separable"):
        scaler().fit(SCORES, (SCORES > 0).float())


def test_one_error_leaves_a_finite_optimum() -> None:
    assert 0.05 < TemperatureScaling().fit(DEV, ONE_WRONG).temperature.item() < 1
    labels = (SCORES > 0).float()
    labels[0] = 1
    assert 0 < PlattScaling().fit(SCORES, labels).slope.item() < 10


@pytest.mark.parametrize(
    ("make", "side"),
    [
        (IsotonicCalibration, "above"),
        (lambda: HistogramBinning(n_bins=2), "above"),
        (lambda: HistogramBinning(n_bins=2), "below"),
    ],
    ids=["isotonic", "histogram", "histogram, labels the other way"],
)
def test_binning_kinds_warn_that_separable_dev_labels_map_to_0_and_1(make, side) -> None:
    """Platt and temperature scaling refuse separable dev data; isotonic regression and
    histogram binning had fitted them silently, with a map of exactly 0 and 1 (a test NLL
    of 0.755 taken to 8.04 by isotonic)."""
    labels = (SCORES > 0).float() if side == "above" else (SCORES < 0).float()
    said = rf"dev labels are separable: every class-1 score lies at or {side} .* exactly 0 or 1"
    with warnings.catch_warnings(), pytest.warns(UserWarning, match=said + " at 40 of the 40"):
        warnings.filterwarnings("ignore", message=".*run against")  # said too, the other way
        module = make().fit(SCORES, labels)
    assert set(module(SCORES).tolist()) == {0.0, 1.0}


@pytest.mark.parametrize("make", [IsotonicCalibration, lambda: HistogramBinning(n_bins=2)])
def test_one_dev_error_is_not_called_separable(make) -> None:
    labels = (SCORES > 0).float()
    labels[0] = 1
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*separable")
        make().fit(SCORES, labels)


def _chain(seed: int):
    g = torch.Generator().manual_seed(seed)
    emissions = 3 * torch.randn(30, 6, 4, generator=g, dtype=torch.float64)
    transitions = 0.1 * torch.randn(4, 4, generator=g, dtype=torch.float64)
    start = end = torch.zeros(4, dtype=torch.float64)
    return emissions, transitions, start, end


def test_chain_temperature_refuses_gold_that_is_every_viterbi_path() -> None:
    emissions, transitions, start, end = _chain(1)
    mask = torch.ones(30, 6, dtype=torch.bool)
    viterbi = linear_chain.viterbi(emissions, transitions, start, end, mask)[1]
    with pytest.raises(ValueError, match="separable"):
        ChainTemperature().fit(emissions, transitions, start, end, viterbi, mask)


def test_coref_temperature_refuses_gold_that_is_every_best_antecedent() -> None:
    g = torch.Generator().manual_seed(2)
    scores = 3 * torch.randn(4, 8, 8, generator=g, dtype=torch.float64)
    scores = scores.masked_fill(torch.ones(8, 8, dtype=torch.bool).triu(1), float("-inf"))
    best = scores.argmax(-1)
    gold = torch.nn.functional.one_hot(best, 8).bool()
    with pytest.raises(ValueError, match="separable"):
        CorefTemperature().fit(scores, gold)


class AllRight(LightningModule):
    """A model whose validation logits put every item's label first, by a wide margin."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(()))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self.weight**2

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        (y,) = batch
        return {"logits": 4 * F.one_hot(y, 3).float() + self.weight, "target": y}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.0)


def test_the_callback_warns_and_fits_nothing_on_separable_validation() -> None:
    data = DataLoader(TensorDataset(torch.randint(0, 3, (64,), generator=G)), batch_size=32)
    model = AllRight()
    callback = TemperatureRecalibration(n_samples=50)
    trainer = Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=False,
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(model, data, data)
    assert any("no temperature fitted" in str(w.message) and "separable" in str(w.message)
               for w in caught)  # fmt: skip
    assert callback.recalibrator is None
    assert not hasattr(model, "calibration_temperature")


def test_a_tied_item_does_not_hide_separable_data() -> None:
    """One item at logit 0 floored the mean NLL at log(2)/N, above the old threshold on
    the NLL: T = 0.047 was accepted and 35% of a test set went to exactly 0 or 1."""
    logits = torch.cat([torch.stack([torch.zeros(40), DEV[:, 0] - DEV[:, 1]], 1),
                        torch.zeros(1, 2)])  # fmt: skip
    target = torch.cat([(DEV[:, 0] > DEV[:, 1]).long(), torch.ones(1, dtype=torch.long)])
    with pytest.raises(ValueError, match=r"40 of 41 items first outright, the rest tied"):
        TemperatureScaling().fit(logits, target)


def test_a_large_set_with_a_few_errors_has_a_finite_optimum() -> None:
    """Its mean NLL is below 1e-6 (two near-ties wrong among 2·10⁶ sharp items), which a
    threshold on the NLL had refused as separable."""
    g = torch.Generator().manual_seed(3)
    n = 2_000_000
    sign = torch.where(torch.rand(n, generator=g) < 0.5, 1.0, -1.0)
    scores = (20 + 5 * torch.rand(n, generator=g)) * sign
    labels = (scores > 0).float()
    scores[:2] = torch.tensor([1e-3, -1e-3])
    labels[:2] = torch.tensor([0.0, 1.0])  # two errors
    fitted = TemperatureScaling().fit(scores, labels)
    assert fitted.nll_ < 1e-6 and 0 < fitted.temperature.item() < 10


def test_platt_refuses_data_separable_but_for_a_tie_group_at_the_boundary() -> None:
    """Probabilities rounded to 0.1, every item right but a mixed group at 0.5: the
    intercept sits in the tie group (at its label mix, -1.1 for one positive in four), so
    the tied items' margins were not 0 and the fit was accepted at slope 28, sending test
    probabilities to 1e-28 and 1 (NLL 3.9 after, 0.52 before; the CLI exited 0)."""
    from calib_metrics.recalibration import ScalingBinning, fit_binary

    q = torch.tensor([0.1, 0.3] * 3 + [0.5] * 4 + [0.7, 0.9] * 3, dtype=torch.float64)
    y = torch.tensor([0] * 6 + [0, 0, 0, 1] + [1] * 6)
    for probs, labels in ((q, y), (1 - q, 1 - y), (q, 1 - y)):  # either slope's sign
        with pytest.raises(ValueError, match=r"separable.*ties at the boundary included"):
            fit_binary("platt", probs, labels)
    with pytest.raises(ValueError, match=r"separable.*ties at the boundary included"):
        ScalingBinning(inputs="probs", generator=torch.Generator().manual_seed(0)).fit(
            torch.cat([q, q]), torch.cat([y, y])
        )
    mixed = y.clone()
    mixed[0] = 1  # one error below the tie group: a finite optimum
    assert 0 < fit_binary("platt", q, mixed).slope.item() < 10


def test_platt_fits_dev_scores_that_are_all_equal_as_their_frequency() -> None:
    """All-equal scores were called separable ("every class-1 score lies at or above every
    class-0 score ... slope grows without end"). They have a finite optimum, if not a
    unique one: any slope with its intercept; slope 0 maps every score to the dev
    frequency, as histogram binning and isotonic regression of such scores do."""
    from calib_metrics.recalibration import ScalingBinning, fit_binary

    q = torch.full((100,), 0.7, dtype=torch.float64)
    y = (torch.arange(100) < 30).to(torch.float64)
    with pytest.warns(UserWarning, match=r"the 100 scores it is fitted on are all equal.*slope 0"):
        platt = PlattScaling(inputs="probs").fit(q, y)
    assert platt.slope.item() == 0
    assert platt.intercept.item() == pytest.approx(math.log(0.3 / 0.7), abs=1e-12)
    assert platt.nll_ == pytest.approx(F.binary_cross_entropy(torch.full((100,), 0.3), y.float()))
    torch.testing.assert_close(platt(torch.tensor([0.1, 0.7, 0.99])), torch.full((3,), 0.3))
    for method in ("platt", "histogram", "isotonic"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = fit_binary(method, q, y)
        assert fitted(q[:1]).item() == pytest.approx(0.3)
    with pytest.warns(UserWarning, match="all equal"):
        binning = ScalingBinning(inputs="probs", generator=torch.Generator().manual_seed(0))
        binning.fit(q, y)
    assert binning(q[:1]).item() == pytest.approx(0.3)


def _anti(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits, and labels drawn from their negation: anti-correlated."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, 3, generator=g, dtype=torch.float64)
    return z, torch.multinomial(torch.softmax(-z, -1), 1, generator=g)[:, 0]


def test_temperature_scaling_refuses_scores_that_carry_no_signal() -> None:
    """The other end from separable: the NLL falls as T grows, towards uniform. The fit had
    returned T = 6e9 (a uniform output) silently."""
    z, y = _anti(300, 0)
    with pytest.raises(ValueError, match=r"no usable signal in the scores.*no finite optimum"):
        TemperatureScaling().fit(z, y)
    s = torch.tensor([1.0, -1.0, 2.0, -2.0, 0.5])
    with pytest.raises(ValueError, match=r"no usable signal.*stopped at T = \d.*e\+\d\d"):
        TemperatureScaling().fit(s, torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0]))
    # Equal scores of the wrong sign for the labels' frequency: only T = ∞ fits them.
    with pytest.raises(ValueError, match="no usable signal"):
        TemperatureScaling(inputs="probs").fit(torch.full((10,), 0.7), torch.arange(10) < 3)
    # A weak signal is a large but finite temperature.
    g = torch.Generator().manual_seed(1)
    weak = torch.randn(2000, 3, generator=g, dtype=torch.float64)
    target = torch.multinomial(torch.softmax(weak / 20, -1), 1, generator=g)[:, 0]
    assert 10 < TemperatureScaling().fit(weak, target).temperature.item() < 100


def test_chain_temperature_refuses_potentials_that_carry_no_signal() -> None:
    """One emission score ranking tag 0 first, gold tags 0, 1, 1: the fit ran to
    T = 2e9, where every scaled path score lay within the check's tolerance of 0, and was
    refused as "separable: 3 of 3 items first outright", the opposite of the data."""
    emissions = torch.tensor([[[1.0, 0.0]]] * 3)
    zeros = torch.zeros(2)
    tags = torch.tensor([[0], [1], [1]])
    with pytest.raises(ValueError, match="no usable signal in the potentials") as caught:
        ChainTemperature().fit(emissions, torch.zeros(2, 2), zeros, zeros, tags)
    assert "separable" not in str(caught.value)
    g = torch.Generator().manual_seed(0)
    emissions = torch.randn(40, 5, 3, generator=g, dtype=torch.float64)
    transitions = 2 * torch.randn(3, 3, generator=g, dtype=torch.float64)
    start = end = torch.zeros(3, dtype=torch.float64)
    tags = linear_chain.sample(emissions, -transitions, start, end, n_samples=1, generator=g)[0]
    with pytest.raises(ValueError, match=r"in the transition, start and end scores.*T_tr = "):
        ChainTemperature(separate=True).fit(emissions, transitions, start, end, tags)


@pytest.mark.parametrize(("new_offset", "scores"), [(False, "scores"), (True, "scores beyond")])
def test_coref_temperature_refuses_scores_that_carry_no_signal(new_offset, scores) -> None:
    from calib_metrics.models.coref import sample_antecedents

    g = torch.Generator().manual_seed(0)
    antecedent_scores = torch.randn(20, 6, 6, generator=g, dtype=torch.float64)
    chosen = sample_antecedents(-antecedent_scores, 1, generator=g)[0]
    gold = torch.nn.functional.one_hot(chosen, 6).bool()
    with pytest.raises(ValueError, match=f"no usable signal in the {scores}"):
        CorefTemperature(new_offset=new_offset).fit(antecedent_scores, gold)


def test_chain_temperature_keeps_transitions_that_do_not_depend_on_t_at_one() -> None:
    """Transitions, start and end all 0, or 0 and -inf (a softmax tagger with BIO
    constraints): the NLL is exactly flat in T_tr, which had been refused as "no usable
    signal ... the NLL keeps falling"; T_tr stays 1, with a warning, and T_em is fitted."""
    g = torch.Generator().manual_seed(0)
    emissions = torch.randn(100, 6, 3, generator=g, dtype=torch.float64)
    zeros = torch.zeros(3, dtype=torch.float64)
    constrained = torch.zeros(3, 3, dtype=torch.float64)
    constrained[0, 2] = -math.inf
    for transitions in (torch.zeros(3, 3, dtype=torch.float64), constrained):
        tags = linear_chain.sample(
            2 * emissions, transitions, zeros, zeros, n_samples=1, generator=g
        )[0]
        with pytest.warns(UserWarning, match="do not depend on T_tr.*kept T_tr = 1"):
            fitted = ChainTemperature(separate=True).fit(emissions, transitions, zeros, zeros, tags)
        assert fitted.transition_temperature.item() == 1.0
        assert 0.3 < fitted.temperature.item() < 0.7  # the emissions are 2x underconfident


def test_temperature_scaling_keeps_scores_that_do_not_depend_on_t_at_one() -> None:
    """Each row's logits all equal, binary scores all 0, probabilities all 0.5: any T fits
    as well as any other (they had been refused as "no usable signal"); T = 1, with a
    warning, as PlattScaling fits slope 0 on equal scores."""
    rows = torch.arange(12, dtype=torch.float64)[:, None].expand(12, 3)
    y = torch.arange(12) % 3
    cases = [
        (TemperatureScaling(), rows, y),
        (TemperatureScaling(), torch.zeros(12), (y == 0).float()),
        (TemperatureScaling(inputs="probs"), torch.full((12,), 0.5), (y == 0).float()),
    ]
    for scaler, scores, target in cases:
        with pytest.warns(UserWarning, match="do not depend on T.*kept T = 1"):
            scaler.fit(scores, target)
        assert scaler.temperature.item() == 1.0


def test_coref_temperature_keeps_scores_that_do_not_depend_on_t_at_one() -> None:
    gold = torch.eye(5, dtype=torch.bool).expand(4, 5, 5).clone()
    gold[:, 3, 1] = True
    gold[:, 2, 2], gold[:, 2, 0] = False, True
    for new_offset in (False, True):
        with pytest.warns(UserWarning, match="do not depend on T"):
            fitted = CorefTemperature(new_offset=new_offset).fit(torch.zeros(4, 5, 5), gold)
        assert fitted.temperature.item() == 1.0


def test_temperature_fit_stopped_early_is_not_blamed_on_the_data() -> None:
    """A weak signal (optimum near T = 40) at max_iter=3 stops far below the optimum, no
    better than T = ∞: that is a fit that did not converge, not scores without signal.
    The sign of dNLL/d(1/T) at 1/T = 0 tells the two apart, whatever the scale. (Calibrated
    logits x1e4 at max_iter=10 had been such a fit; the fit now starts at the logits' own
    size, and converges there as it does at x1.)"""
    g = torch.Generator().manual_seed(1)
    weak = torch.randn(2000, 3, generator=g, dtype=torch.float64)
    target = torch.multinomial(torch.softmax(weak / 20, -1), 1, generator=g)[:, 0]
    with pytest.raises(ValueError, match=r"did not converge \(stopped at T = .*raise max_iter"):
        TemperatureScaling(max_iter=3).fit(weak * 1e4, target)
    assert 10 < TemperatureScaling().fit(weak, target).temperature.item() < 100
    g = torch.Generator().manual_seed(0)
    z = 3 * torch.randn(500, 4, generator=g, dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z, -1), 1, generator=g)[:, 0]
    fitted = TemperatureScaling(max_iter=10).fit(z * 1e4, y).temperature.item()
    assert fitted == pytest.approx(1e4 * TemperatureScaling().fit(z, y).temperature.item())
    anti, target = _anti(300, 0)  # anti-correlated: still no usable signal, at any scale
    with pytest.raises(ValueError, match="no usable signal"):
        TemperatureScaling(max_iter=10).fit(anti * 1e4, target)


def _class_3_absent(shift: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """4-class logits whose dev labels never take class 3 (shifted by ``shift``)."""
    g = torch.Generator().manual_seed(0)
    z = 2 * torch.randn(600, 4, generator=g, dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / 2, -1), 1, generator=g)[:, 0]
    keep = y != 3
    return z[keep] + shift, y[keep]


@pytest.mark.parametrize(
    "scaler",
    [VectorScaling, lambda: MatrixScaling(off_diagonal_l2=0.0, bias_l2=0.0),
     lambda: MatrixScaling(off_diagonal_l2=0.01, bias_l2=0.0)],
)  # fmt: skip
def test_an_absent_class_with_a_free_bias_is_refused(scaler) -> None:
    """An absent class's bias falls without end: VectorScaling fitted anyway with bias[3] =
    -18.6 and took a test NLL from 1.23 to 8.0 (TemperatureScaling: 1.10)."""
    z, y = _class_3_absent()
    with pytest.raises(ValueError, match=r"class 3 never occurs .* no finite optimum.*bias"):
        scaler().fit(z, y)
    TemperatureScaling().fit(z, y)  # one parameter for all classes: fitted


@pytest.mark.parametrize(
    "scaler", [lambda: VectorScaling(bias_l2=0.01), MatrixScaling, lambda: MatrixScaling(0, 0.01)]
)
def test_an_absent_class_whose_logits_have_one_sign_is_refused(scaler) -> None:
    """With the bias penalised, the class's own weight (unpenalised) still drives it to 0 on
    every item when its logits are all of one sign: the default MatrixScaling took a test
    NLL to 8.7 on logits shifted by +10."""
    z, y = _class_3_absent(shift=10.0)
    with pytest.raises(ValueError, match=r"class 3 never occurs .* one sign.*centre"):
        scaler().fit(z, y)


@pytest.mark.parametrize("scaler", [lambda: VectorScaling(bias_l2=0.01), MatrixScaling])
def test_an_absent_class_with_a_finite_penalised_optimum_warns(scaler) -> None:
    z, y = _class_3_absent()
    with pytest.warns(UserWarning, match=r"class 3 never occurs .* penalty"):
        fitted = scaler().fit(z, y)
    assert math.isfinite(fitted.nll_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every class present: no word
        scaler().fit(*_multiclass_all_present())


def _multiclass_all_present() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    z = 2 * torch.randn(300, 4, generator=g, dtype=torch.float64)
    return z, torch.multinomial(torch.softmax(z / 2, -1), 1, generator=g)[:, 0]


def _bias_separable() -> tuple[torch.Tensor, torch.Tensor]:
    """2-class logits ``[x, 0]`` whose labels (class 0 iff x > 5) a bias shift separates,
    and no weight alone: the logits change sign at x = 0, not at 5."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(400, generator=g, dtype=torch.float64) * 10
    x = torch.where(x < 5, x - 2, x + 2)
    return torch.stack([x, torch.zeros_like(x)], 1), (x < 5).long()


def _penalised_optimum(z, y, off_diagonal_l2: float, bias_l2: float, matrix: bool):
    """The documented objective (mean NLL + ODIR penalties) minimised by scipy's BFGS."""
    optimize = pytest.importorskip("scipy.optimize")
    c = z.shape[1]
    size = c * c if matrix else c

    def objective(flat):
        params = torch.tensor(flat, dtype=torch.float64, requires_grad=True)
        w, b = params[:size], params[size:]
        if matrix:
            w = w.reshape(c, c)
            off = w - torch.diag(w.diagonal())
            out = z @ w.t() + b
            penalty = off_diagonal_l2 * off.square().sum() / (c * (c - 1))
        else:
            out, penalty = z * w + b, 0.0
        loss = F.cross_entropy(out, y) + penalty + bias_l2 * b.square().mean()
        loss.backward()
        return loss.item(), params.grad.numpy()

    start = torch.cat([torch.eye(c).flatten() if matrix else torch.ones(c), torch.zeros(c)])
    found = optimize.minimize(objective, start.numpy(), jac=True, method="BFGS",
                              options={"gtol": 1e-11})  # fmt: skip
    params = torch.from_numpy(found.x)
    return params[:size].reshape(c, c) if matrix else params[:size], params[size:]


@pytest.mark.parametrize("matrix", [True, False])
def test_a_penalised_bias_holds_data_only_a_bias_separates(matrix) -> None:
    """The bias that separates them pays its penalty: a finite optimum (W diag 0.973, b ±2.03
    for the default MatrixScaling), which was refused as "separable ... no finite
    optimum" because the fitted model ranked every item right."""
    z, y = _bias_separable()
    fitted = (MatrixScaling() if matrix else VectorScaling(bias_l2=0.01)).fit(z, y)
    weight, bias = _penalised_optimum(z, y, 0.01, 0.01, matrix)
    # The logits' class 1 is 0 on every item: the diagonal weight on it fits nothing and
    # stays at its start (the temperature's 1 / T here, 1 in scipy's), so the weights on
    # class 0's logit are compared.
    torch.testing.assert_close(fitted.weight[..., 0], weight[..., 0], rtol=0, atol=1e-5)
    torch.testing.assert_close(fitted.bias, bias, rtol=0, atol=1e-5)
    assert bool((fitted(z).argmax(-1) == y).all())  # every item right, at a finite optimum


@pytest.mark.parametrize(
    "scaler",
    [VectorScaling, lambda: MatrixScaling(bias_l2=0.0), lambda: MatrixScaling(0.0, 0.0)],
)
def test_an_unpenalised_bias_that_separates_is_still_refused(scaler) -> None:
    z, y = _bias_separable()
    with pytest.raises(ValueError, match=r"separable.*no finite optimum"):
        scaler().fit(z, y)


@pytest.mark.parametrize(
    "scaler", [lambda: VectorScaling(bias_l2=0.01), lambda: MatrixScaling(1.0, 1.0)]
)
def test_unpenalised_weights_that_separate_are_refused_whatever_the_penalties(scaler) -> None:
    """The diagonal (VectorScaling's weights) is never penalised: data that the logits
    themselves rank right have no finite optimum, penalties or not."""
    with pytest.raises(ValueError, match=r"separable.*no finite optimum"):
        scaler().fit(DEV, ALL_RIGHT)
