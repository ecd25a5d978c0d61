"""CalibrationError.compute_spiegelhalter: the metric's form of Spiegelhalter's test."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import spiegelhalter_test


def _binary(n: int, seed: int = 0, slope: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(0.5 + slope * (q - 0.5), generator=g)


def test_exact_mode_equals_the_functional_on_the_concatenation() -> None:
    q, y = _binary(3000, slope=0.9)
    metric = CalibrationError()
    for batch in torch.arange(3000).chunk(3):
        metric.update(q[batch], y[batch])
    got, want = metric.compute_spiegelhalter(), spiegelhalter_test(q, y)
    torch.testing.assert_close(got.z, want.z)
    torch.testing.assert_close(got.p_value, want.p_value)


def test_kept_groups_give_the_cluster_robust_variance() -> None:
    q, y = _binary(2000)
    groups = torch.arange(2000) // 20
    metric = CalibrationError()
    metric.update(q, y, groups=groups)
    got = metric.compute_spiegelhalter()
    torch.testing.assert_close(got.z, spiegelhalter_test(q, y, groups=groups).z)
    assert got.z != spiegelhalter_test(q, y).z


def test_streaming_histogram_agrees_with_the_exact_test() -> None:
    # Beyond the exact buffer (524,288 rows) the streaming mode keeps only its histogram.
    q, y = _binary(700_000, seed=1, slope=0.99)
    metric = CalibrationError(streaming=True)
    for batch in torch.arange(q.numel()).chunk(4):
        metric.update(q[batch], y[batch])
    got, want = metric.compute_spiegelhalter(), spiegelhalter_test(q, y)
    assert got.z.item() == pytest.approx(want.z.item(), abs=2e-3)
    assert want.p_value < 0.05  # the case is one the test can see


@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label"])
def test_multiclass_modes_equal_the_functional(mode) -> None:
    g = torch.Generator().manual_seed(2)
    p = torch.softmax(2 * torch.randn(1500, 3, generator=g, dtype=torch.float64), -1)
    c = torch.multinomial(p, 1, generator=g).squeeze(1)
    sharp = torch.softmax(2 * p.log(), -1)
    metric = CalibrationError(num_classes=3, mode=mode)
    metric.update(sharp, c)
    got = metric.compute_spiegelhalter()
    torch.testing.assert_close(got.z, spiegelhalter_test(sharp, c, mode=mode).z)


def test_per_class_average_gives_one_test_per_class() -> None:
    g = torch.Generator().manual_seed(3)
    p = torch.softmax(2 * torch.randn(1500, 3, generator=g, dtype=torch.float64), -1)
    c = torch.multinomial(p, 1, generator=g).squeeze(1)
    metric = CalibrationError(num_classes=3, average=None)
    metric.update(p, c)
    got = metric.compute_spiegelhalter()
    assert len(got) == 3
    for k, result in enumerate(got):
        torch.testing.assert_close(result.z, spiegelhalter_test(p[:, k], (c == k).double()).z)


def _items(n: int = 40000, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    probs = torch.rand(n, 5, generator=g).pow(3).softmax(-1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def _streamed(probs, target, forward: bool = False, **options) -> CalibrationError:
    metric = CalibrationError(num_classes=5, streaming=True, resolution=2**12, **options)
    for start in range(0, target.numel(), 5000):
        batch = probs[start : start + 5000], target[start : start + 5000]
        metric(*batch) if forward else metric.update(*batch)
    return metric


@pytest.mark.parametrize("forward", [False, True])
def test_a_folded_one_vs_rest_sketch_tests_its_items_as_the_exact_mode_does(forward) -> None:
    """Folded into the sketch, pooled one-vs-rest pairs had been tested as independent,
    with a warning (p 0.71 where the exact test, items as groups, gave 0.10): the metric
    now keeps each folded item's sums, and tests them as the exact mode does."""
    import warnings

    probs, target = _items()
    metric = _streamed(probs, target, forward)
    assert not metric._exact_pairs()  # folded: 40,000 rows past the buffer of 8,192
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = metric.compute_spiegelhalter()
    want = spiegelhalter_test(probs, target)
    assert got.z.item() == pytest.approx(want.z.item(), rel=1e-9)
    assert round(want.p_value.item(), 2) == 0.1
    padded = target.clone()
    padded[::7] = -100
    kept = padded != -100
    ignoring = _streamed(probs, padded, forward, ignore_index=-100).compute_spiegelhalter()
    want = spiegelhalter_test(probs[kept], target[kept]).z.item()
    assert ignoring.z.item() == pytest.approx(want, rel=1e-9)


def test_folded_item_sums_merge_and_load_as_the_union() -> None:
    probs, target = _items()
    first, second = (
        _streamed(probs[:24000], target[:24000]),
        _streamed(probs[24000:], target[24000:]),
    )
    second.persistent(True)
    first.merge_state(second.state_dict())
    want = spiegelhalter_test(probs, target).z.item()
    assert first.compute_spiegelhalter().z.item() == pytest.approx(want, rel=1e-9)
    first.persistent(True)
    loaded = CalibrationError(num_classes=5, streaming=True, resolution=2**12)
    loaded.load_state_dict(first.state_dict())
    assert loaded.compute_spiegelhalter().z.item() == pytest.approx(want, rel=1e-9)
    state = first.state_dict()
    state["item_scores"] = torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64)
    with pytest.raises(ValueError, match="state 'item_scores' holds"):
        loaded.load_state_dict(state)


def test_a_state_saved_before_the_item_sums_tests_the_cells_and_says_so() -> None:
    """A state dict, or a pickle, of a version that kept no item sums loads (it had been
    refused, "lacks 'item_scores'") and takes the cells' independent variance, with a
    warning, until reset()."""
    import pickle
    import warnings

    probs, target = _items()
    metric = _streamed(probs, target)
    metric.persistent(True)
    older = {k: v for k, v in metric.state_dict().items() if k != "item_scores"}
    pickled = _streamed(probs, target)
    for table in (pickled._defaults, pickled._persistent, pickled._reductions):
        del table["item_scores"]
    del pickled.item_scores  # as a metric pickled before 2026-12-01 holds it
    loaded = CalibrationError(num_classes=5, streaming=True, resolution=2**12)
    loaded.load_state_dict(older)
    for old in (loaded, pickle.loads(pickle.dumps(pickled))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            old.compute_spiegelhalter()
            old.compute_spiegelhalter()  # said once per metric
        said = [w for w in caught if "keeps no sums of its folded items" in str(w.message)]
        assert len(said) == 1
        old.reset()
        for start in range(0, 40000, 5000):
            old.update(probs[start : start + 5000], target[start : start + 5000])
        want = spiegelhalter_test(probs, target).z.item()
        assert old.compute_spiegelhalter().z.item() == pytest.approx(want, rel=1e-9)


def test_an_older_state_without_folded_rows_keeps_the_item_sums_exact() -> None:
    """An older version's state whose sketch holds no rows (saved after a reset, or with
    its rows in the buffer) lacks no item sums: it had been marked unknown, and every row
    folded after it (or merged with it) took the cells' test, with a warning."""
    import warnings

    probs, target = _items()

    def older(metric: CalibrationError) -> dict:
        metric.persistent(True)
        return {k: v for k, v in metric.state_dict().items() if k != "item_scores"}

    buffered = _streamed(probs[:3000], target[:3000])  # within its buffer of 8,192 rows
    loaded = CalibrationError(num_classes=5, streaming=True, resolution=2**12)
    loaded.load_state_dict(older(buffered))
    for start in range(3000, 40000, 5000):
        loaded.update(probs[start : start + 5000], target[start : start + 5000])
    merged = _streamed(probs, target)
    merged.merge_state(older(CalibrationError(num_classes=5, streaming=True, resolution=2**12)))
    want = spiegelhalter_test(probs, target).z.item()
    for metric in (loaded, merged):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert metric.compute_spiegelhalter().z.item() == pytest.approx(want, rel=1e-9)


def test_top_label_sketches_test_their_cells_without_a_word() -> None:
    import warnings

    probs, target = _items()
    metric = CalibrationError(num_classes=5, mode="top_label", streaming=True, resolution=2**12)
    metric.update(probs, target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = metric.compute_spiegelhalter()
    want = spiegelhalter_test(probs, target, mode="top_label").z.item()
    assert got.z.item() == pytest.approx(want, abs=1e-2)  # cells of 1/4096 at their mean q
    exact = CalibrationError(num_classes=5, streaming=True)
    exact.update(probs[:5000], target[:5000])  # within the buffer: the exact test, no word
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = exact.compute_spiegelhalter()
    assert result.z == spiegelhalter_test(probs[:5000], target[:5000]).z


def test_an_older_pickles_item_sums_are_saved_with_its_sketch() -> None:
    """The sums an unpickled older metric is given had been left out of every later
    state_dict (add_state makes a state non-persistent): their loads took them for
    unknown, and the test for the cells', whatever reset() did."""
    import pickle

    probs, target = _items()
    older = CalibrationError(num_classes=5, streaming=True, resolution=2**12)
    older.persistent(True)
    for table in (older._defaults, older._persistent, older._reductions):
        del table["item_scores"]
    del older.item_scores  # as a metric pickled before 2026-12-01 holds it
    metric = pickle.loads(pickle.dumps(older))  # an empty sketch: sums of zero, not unknown
    for start in range(0, 40000, 5000):
        metric.update(probs[start : start + 5000], target[start : start + 5000])
    state = metric.state_dict()
    assert "item_scores" in state
    loaded = CalibrationError(num_classes=5, streaming=True, resolution=2**12)
    loaded.load_state_dict(state)
    want = spiegelhalter_test(probs, target).z.item()
    assert loaded.compute_spiegelhalter().z.item() == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("forward", [False, True])
def test_a_one_hot_target_warns_once_at_the_caller(forward) -> None:
    """A binary metric reads a one-hot target as independent pairs; its test then takes an
    item's labels, which sum to 1, as independent, silently."""
    g = torch.Generator().manual_seed(5)
    probs = torch.randn(200, 3, generator=g, dtype=torch.float64).softmax(-1)
    one_hot = torch.nn.functional.one_hot(torch.multinomial(probs, 1, generator=g)[:, 0], 3)
    metric = CalibrationError()
    add = metric if forward else metric.update
    with pytest.warns(UserWarning, match=r"one-hot.*target\.argmax\(-1\) with num_classes=3") as w:
        add(probs[:100], one_hot[:100])
        add(probs[100:], one_hot[100:])
    said = [x for x in w if "one-hot" in str(x.message)]
    assert len(said) == 1 and said[0].filename == __file__
    multi_label = CalibrationError()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        multi_label.update(probs, (one_hot + (probs > 0.4)).clamp(max=1))
