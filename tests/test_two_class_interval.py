"""Two classes read one-vs-rest: an item's pair and its mirror are drawn together.

Probabilities ``[N, 2]`` beside class ids give each item two pairs, (q, y) and
(1 − q, 1 − y): one observation. Resampled one by one (as the pair bootstrap had done)
the 95% interval covered the true error 0.86 of the time where the binary column's
covered 0.99. Three to five classes' pairs are still drawn one by one (their item
bootstrap costs items × draws), with a warning; from six on, without
(benchmarks/ovr_item_coverage.py measures all of it, for C = 2, 3, 5 and 10).
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import calibration_error, calibration_error_ci

# P(y = 1 | q) = q + 0.05 sin(2πq): the binary error is 0.05/√2, and the pooled
# one-vs-rest pairs' error is the same (a mirror's gap at 1 − q equals the pair's at q).
TRUE_ERROR = 0.05 / math.sqrt(2)


def _two_class_items(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    p = (q + 0.05 * torch.sin(2 * math.pi * q)).clamp(0, 1)
    classes = (torch.rand(n, generator=g, dtype=torch.float64) < p).long()
    return torch.stack([1 - q, q], -1), classes


def _covers(result) -> bool:
    return float(result.lower) <= TRUE_ERROR <= float(result.upper)


def test_two_class_interval_covers_as_the_binary_column_does():
    # 60 fixed data sets of 2,000 items (the seeds fix every draw): pairs drawn apart
    # covered 46 of them (0.77), drawn by item all 60.
    covered = 0
    for seed in range(60):
        probs, classes = _two_class_items(2000, seed)
        g = torch.Generator().manual_seed(seed)
        covered += _covers(calibration_error_ci(probs, classes, n_samples=300, generator=g))
    assert covered >= 55


def test_two_class_interval_is_the_item_bootstrap_of_the_flat_pairs():
    from calib_metrics.functional.calibration import item_pairs_interval

    probs, classes = _two_class_items(800, 1)
    one_hot = torch.nn.functional.one_hot(classes, 2)
    flat = probs.reshape(-1), one_hot.reshape(-1)
    g = torch.Generator().manual_seed(3)
    got = calibration_error_ci(probs, classes, n_samples=200, generator=g)
    want = item_pairs_interval(*flat, 2, n_samples=200, generator=torch.Generator().manual_seed(3))
    apart = calibration_error_ci(*flat, n_samples=200, generator=torch.Generator().manual_seed(3))
    assert torch.equal(torch.stack(got[:5]), torch.stack(want[:5]))
    # The error itself is the pooled pairs' (debiased as pairs), whatever the draws.
    assert got.error == calibration_error(*flat) == apart.error
    assert not torch.equal(torch.stack(got[1:5]), torch.stack(apart[1:5]))


def _items_of(n_classes: int, n: int = 600) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(n_classes)
    probs = torch.softmax(torch.randn(n, n_classes, generator=g, dtype=torch.float64), -1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


@pytest.mark.parametrize("n_classes", [3, 5, 10])
def test_more_classes_are_drawn_pair_by_pair(n_classes):
    from calib_metrics.functional.intervals import interval_kind

    probs, classes = _items_of(n_classes)
    flat = probs.reshape(-1), torch.nn.functional.one_hot(classes, n_classes).reshape(-1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = calibration_error_ci(probs, classes, n_samples=100, generator=torch.Generator())
    want = calibration_error_ci(*flat, n_samples=100, generator=torch.Generator())
    assert torch.equal(torch.stack(got[:5]), torch.stack(want[:5]))
    assert interval_kind(got).interval == "pairs"
    apart = [w for w in caught if "pairs apart" in str(w.message)]
    assert len(apart) == (n_classes <= 5)
    if apart:
        assert f"{n_classes} classes read one-vs-rest" in str(apart[0].message)
        assert "groups=torch.arange(N)" in str(apart[0].message)


def test_item_draws_move_a_pair_and_its_mirror_together():
    from calib_metrics.functional.calibration import bins_and_index
    from calib_metrics.functional.intervals import item_draws
    from calib_metrics.functional.ties import cut_cells

    # q and 1 - q exactly (multiples of 1/1024), no ties: bin k holds the items whose
    # pair lies in it and those whose mirror does, as bin B - 1 - k holds them reversed.
    g = torch.Generator().manual_seed(8)
    q = (torch.randperm(1023, generator=g)[:400] + 1).to(torch.float64) / 1024
    y = torch.bernoulli(q, generator=g)
    probs, target = torch.stack([1 - q, q], -1).reshape(-1), torch.stack([1 - y, y], -1)
    target = target.reshape(-1)
    bins, index = bins_and_index(probs, target, binning="adaptive", bin_size=40, n_bins=15)
    n_bins = bins.count.numel()
    cells = cut_cells(probs, index, n_bins)
    drawn = list(item_draws(probs, target, 2, index, n_bins, 50, torch.Generator(), cells))
    count = torch.cat([b.count for b in drawn])
    ones = torch.cat([b.freq * b.count for b in drawn])
    assert count.shape == (50, n_bins) and count.std(0).min() > 0
    assert torch.equal(count, count.flip(-1))  # an item is drawn into both its bins
    assert torch.allclose(ones + ones.flip(-1), count)  # its labels y and 1 - y


@pytest.mark.parametrize("n_slots", [7, 2**40])
def test_identical_items_are_found_by_one_key_as_by_sorting_rows(n_slots):
    """Items are grouped into cells by one int64 key an item (``torch.unique(dim=0)``
    on the rows had taken 2.2 s of the 3.2 s interval at 10⁶ items): the same cells,
    numbered in the same order, as the rows' lexicographic sort gives, also where the
    key would overflow and the rows are sorted instead (``n_slots`` 2⁴⁰ with 2 pairs)."""
    from calib_metrics.functional.intervals import _identical_items

    g = torch.Generator().manual_seed(3)
    slot = torch.randint(0, 7, (500, 2), generator=g) * (n_slots // 7)
    labels = torch.randint(0, 2, (500, 2), generator=g)
    rows = torch.cat([slot, labels], 1)
    want = torch.unique(rows, dim=0, return_inverse=True, return_counts=True)[1:]
    got = _identical_items(slot, labels, n_slots)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert want[1].sum() == 500 and want[1].numel() <= 7 * 7 * 4  # shared cells, not 500


def test_one_hot_targets_of_few_classes_are_warned_of():
    probs, classes = _two_class_items(300, 0)
    one_hot = torch.nn.functional.one_hot(classes, 2)
    with pytest.warns(UserWarning, match="pair by pair, not item by item.*target.argmax"):
        calibration_error_ci(probs, one_hot, n_samples=20)


def test_few_items_name_items():
    probs, classes = _two_class_items(6, 0)  # 12 pairs but 6 items: no interval
    with pytest.warns(UserWarning, match="6 items; at least 10 are needed"):
        result = calibration_error_ci(probs, classes, n_samples=50)
    assert result.lower.isnan() and not result.error.isnan()


def test_metric_draws_two_class_items_together():
    probs, classes = _two_class_items(1500, 2)
    metric = CalibrationError(num_classes=2, seed=4, n_samples=200)
    metric.update(probs[:700], classes[:700])
    metric.update(probs[700:], classes[700:])
    got = metric.compute_result()
    g = torch.Generator().manual_seed(4)
    want = calibration_error_ci(probs, classes, n_samples=200, generator=g)
    assert torch.allclose(torch.stack(got[:5]), torch.stack(want[:5]), rtol=1e-12, atol=0)


def test_streamed_two_classes_past_the_buffer_warn():
    probs, classes = _two_class_items(6000, 5)
    metric = CalibrationError(num_classes=2, streaming=True, resolution=1024, n_samples=50)
    metric.update(probs, classes)
    with pytest.warns(UserWarning, match=r"its mirror \(1 - q, 1 - y\) apart, and is too narrow"):
        metric.compute_result()
    exact = CalibrationError(num_classes=2, n_samples=50)
    exact.update(probs, classes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact.compute_result()


def test_metric_of_three_classes_warns_that_pairs_are_drawn_apart():
    probs, classes = _items_of(3)
    metric = CalibrationError(num_classes=3, n_samples=50)
    metric.update(probs, classes)
    with pytest.warns(UserWarning, match="CalibrationError: 3 classes read one-vs-rest"):
        metric.compute_result()
    per_class = CalibrationError(num_classes=3, n_samples=50, average="none")
    per_class.update(probs, classes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a class's pairs are one per item
        per_class.compute_result()


def test_command_names_the_item_bootstrap(tmp_path, capsys):
    import json

    import numpy as np
    from cli_runs import run_cli

    probs, classes = _two_class_items(300, 7)
    path = tmp_path / "two.npz"
    np.savez(path, probs=probs.numpy(), target=classes.numpy())
    code, out, _ = run_cli(capsys, "evaluate", path, "--samples", "50", "--seed", "3")
    assert code == 0 and "(items normal, 50 draws)" in out
    code, out, _ = run_cli(capsys, "evaluate", path, "--samples", "50", "--seed", "3", "--json")
    summary = json.loads(out)
    g = torch.Generator().manual_seed(3)
    want = calibration_error_ci(probs, classes, n_samples=50, generator=g)
    assert summary["interval"] == "items"
    assert summary["lower"] == pytest.approx(float(want.lower), abs=1e-12)


def test_command_warns_of_three_classes_in_its_own_terms(tmp_path, capsys):
    import numpy as np
    from cli_runs import run_cli

    probs, classes = _items_of(3, 300)
    path = tmp_path / "three.npz"
    np.savez(path, probs=probs.numpy(), target=classes.numpy())
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "50")
    assert code == 0 and "(pairs normal, 50 draws)" in out
    assert "warning: 3 classes read one-vs-rest: the pair bootstrap draws an item's 3 pairs" in err
    assert "--groups naming a column of row ids draws whole items" in err
    assert "torch.arange" not in err


def test_command_names_items_where_too_few_for_an_interval(tmp_path, capsys):
    import json

    import numpy as np
    from cli_runs import run_cli

    probs, classes = _two_class_items(8, 9)  # 16 pairs, 8 items: no interval
    path = tmp_path / "tiny.npz"
    np.savez(path, probs=probs.numpy(), target=classes.numpy())
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "50")
    assert code == 0 and "no interval (fewer than 10 resampled items)" in out
    assert "warning: 8 items; at least 10 are needed" in err
    code, out, _ = run_cli(capsys, "evaluate", path, "--samples", "50", "--json")
    assert json.loads(out)["interval"] == "items"


@pytest.mark.parametrize(
    "options", [{"num_classes": 3}, {"num_classes": 2, "streaming": True, "resolution": 64}]
)
def test_metric_says_pairs_apart_once(options):
    n_classes = options["num_classes"]
    probs, classes = _items_of(n_classes, 3000) if n_classes == 3 else _two_class_items(3000, 4)
    metric = CalibrationError(n_samples=20, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # epochs
            metric.update(probs, classes)
            metric.compute_result()
            metric.compute_result()
            metric.reset()
    apart = [w for w in caught if "one-vs-rest" in str(w.message) and "apart" in str(w.message)]
    assert len(apart) == 1, [str(w.message) for w in apart]


def test_one_hot_target_of_three_classes_is_told_to_pass_class_ids():
    probs, classes = _items_of(3)
    one_hot = torch.nn.functional.one_hot(classes, 3)
    with pytest.warns(UserWarning, match="target looks one-hot.*pass target.argmax") as caught:
        calibration_error_ci(probs, one_hot, n_samples=20)
    assert not any("groups=torch.arange" in str(w.message) for w in caught)
