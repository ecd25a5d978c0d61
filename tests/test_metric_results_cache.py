"""A metric's drawn results are drawn once per state. ``compute_class_results()``,
``compute_result()`` and ``plot()`` had each drawn every class's interval afresh (47
classes of 1,600 pairs: about a minute a call, and a script that computed, listed the
classes and plotted them waited minutes). They now share one drawing, kept until the
state changes, where torchmetrics drops compute()'s cached value; a kept result equals
what a fresh call draws."""

from __future__ import annotations

import copy

import matplotlib
import pytest
import torch
from torchmetrics import MetricCollection

from calib_metrics import CalibrationError

matplotlib.use("Agg")

C = 4
OPTIONS = {"num_classes": C, "mode": "classwise", "n_samples": 50, "bin_size": 40}


def _batch(seed: int, n: int = 400) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(2 * torch.randn(n, C, generator=g), -1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def _metric(*batches: int, **options) -> CalibrationError:
    metric = CalibrationError(**{**OPTIONS, **options})
    for seed in batches:
        metric.update(*_batch(seed))
    return metric


@pytest.fixture
def draws(monkeypatch) -> list[int]:
    """How many times a metric drew its results (one entry a drawing)."""
    drawn = []
    inner = CalibrationError._results

    def counted(self, *args, **kwargs):
        drawn.append(1)
        return inner(self, *args, **kwargs)

    monkeypatch.setattr(CalibrationError, "_results", counted)
    return drawn


def _same(got: list, want: list) -> bool:
    fields = ("error", "lower", "upper", "mean", "std")
    return len(got) == len(want) and all(
        torch.equal(getattr(a, f), getattr(b, f)) for a, b in zip(got, want) for f in fields
    )


def _drawn_once(metric: CalibrationError, draws: list[int]) -> list:
    """The metric's class results, drawn at most once by two calls."""
    before = len(draws)
    first = metric.compute_class_results()
    second = metric.compute_class_results()
    assert len(draws) - before <= 1
    assert _same(second, first)
    return first


def test_class_results_result_and_plot_draw_once(draws) -> None:
    metric = _metric(0, 1)
    classes = metric.compute_class_results()
    assert len(draws) == 1
    assert _same(metric.compute_class_results(), classes)
    result = metric.compute_result()
    fig, axes = metric.plot()
    assert len(draws) == 1
    assert len(axes) == C
    # What a fresh metric draws from the same pairs, with the same seed.
    fresh = _metric(0, 1)
    assert _same(classes, fresh.compute_class_results())
    assert torch.equal(result.upper, fresh.compute_result().upper)
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_caller_changing_the_list_leaves_the_kept_one_whole(draws) -> None:
    metric = _metric(0)
    classes = metric.compute_class_results()
    classes.pop()
    assert len(metric.compute_class_results()) == C
    assert len(draws) == 1


def _update(metric: CalibrationError) -> None:
    metric.update(*_batch(2))


def _forward(metric: CalibrationError) -> None:
    metric(*_batch(2))


def _merge(metric: CalibrationError) -> None:
    metric.merge_state(_metric(2))


def _load(metric: CalibrationError) -> None:
    saved = _metric(0, 1, 2)
    saved.persistent(True)
    metric.load_state_dict(saved.state_dict())


def _reset(metric: CalibrationError) -> None:
    metric.reset()
    for seed in (0, 1, 2):
        metric.update(*_batch(seed))


@pytest.mark.parametrize("change", [_update, _forward, _merge, _load, _reset])
def test_a_changed_state_draws_afresh(change, draws) -> None:
    """Each change of state gives the new state's results: those of a metric that saw
    batches 0, 1 and 2 (a kept result of batches 0 and 1 would be stale)."""
    metric = _metric(0, 1)
    old = _drawn_once(metric, draws)
    change(metric)
    new = _drawn_once(metric, draws)
    assert not _same(new, old)
    assert _same(new, _metric(0, 1, 2).compute_class_results())
    assert torch.equal(metric.compute_result().upper, _metric(0, 1, 2).compute_result().upper)


def test_a_cast_or_a_copy_keeps_results_of_its_own_state(draws) -> None:
    metric = _metric(0, 1)
    old = _drawn_once(metric, draws)
    metric.to(torch.float64)  # the states keep their dtype: the same results, drawn again
    assert _same(_drawn_once(metric, draws), old)
    assert len(draws) == 2
    twin = copy.deepcopy(metric)
    twin.update(*_batch(2))
    assert _same(twin.compute_class_results(), _metric(0, 1, 2).compute_class_results())
    assert _same(metric.compute_class_results(), old)


def test_a_collections_shared_state_draws_afresh(draws) -> None:
    """A MetricCollection updates only the first metric of a compute group (members that
    differ only in what compute does share its state), dropping the others' cached values
    from outside: theirs must go too."""
    collection = MetricCollection(
        {"a": CalibrationError(**OPTIONS), "b": CalibrationError(**OPTIONS, confidence=0.9)}
    )
    for seed in (0, 1):
        collection.update(*_batch(seed))
    old = _drawn_once(collection["b"], draws)
    collection.update(*_batch(2))
    new = collection["b"].compute_class_results()
    assert not _same(new, old)
    assert _same(new, _metric(0, 1, 2, confidence=0.9).compute_class_results())


def test_a_changed_setting_draws_afresh(draws) -> None:
    metric = _metric(0, 1)
    old = _drawn_once(metric, draws)
    metric.seed = 5
    assert _same(metric.compute_class_results(), _metric(0, 1, seed=5).compute_class_results())
    metric.n_samples = 80
    assert _same(
        metric.compute_class_results(), _metric(0, 1, seed=5, n_samples=80).compute_class_results()
    )
    metric.seed, metric.n_samples = 0, 50
    assert _same(metric.compute_class_results(), old)


def test_seed_none_keeps_its_first_draws_unless_caching_is_off(draws) -> None:
    """With seed=None the draws are the global RNG's: kept, a second call gives the first
    call's (so the figure shows the intervals listed); compute_with_cache=False draws
    afresh at every call, as before."""
    metric = _metric(0, 1, seed=None)
    torch.manual_seed(0)
    first = metric.compute_class_results()
    assert _same(metric.compute_class_results(), first)
    assert len(draws) == 1
    torch.manual_seed(0)
    assert _same(_metric(0, 1, seed=None).compute_class_results(), first)
    uncached = _metric(0, 1, seed=None, compute_with_cache=False)
    assert not _same(uncached.compute_class_results(), uncached.compute_class_results())


def test_pooled_and_per_class_results_are_kept_apart(draws) -> None:
    """A one-vs-rest metric draws its pooled result and (for CalibrationMonitor's
    per_class=True) its classes' from the same state: each is kept as its own."""
    metric = CalibrationError(num_classes=C, n_samples=50, bin_size=40)
    metric.update(*_batch(0))
    pooled = metric.compute_result()
    classes = metric._one_vs_rest_results()
    assert len(classes) == C
    assert torch.equal(metric.compute_result().upper, pooled.upper)
    assert _same(metric._one_vs_rest_results(), classes)
    assert len(draws) == 2
