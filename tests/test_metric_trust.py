"""CalibrationError in ordinary use: recommended defaults, state never lost, clear errors."""

from __future__ import annotations

import warnings

import pytest
import torch
from torchmetrics import Metric

from calib_metrics import CalibrationComparison, CalibrationError, NoPairsError
from calib_metrics.functional import NoPairsError as FunctionalNoPairsError
from calib_metrics.functional import calibration_error, calibration_error_ci
from calib_metrics.metric import _SKETCH_STATES as SKETCH_STATES

PAD = -100


def overconfident(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Binary pairs whose true frequency is 0.25 + q/2: clearly miscalibrated."""
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g)
    return q, torch.bernoulli(0.25 + q / 2, generator=g).long()


def multiclass(n: int, c: int = 4, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(3 * torch.randn(n, c, generator=g), -1)
    return probs, torch.randint(0, c, (n,), generator=g)


def no_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------- defaults


def test_defaults_are_the_recommended_estimator() -> None:
    q, y = overconfident(3000)
    metric = CalibrationError()
    assert (metric.bin_size, metric.debias, metric.interval) == ("auto", True, None)
    metric.update(q, y)
    want = calibration_error(q, y, bin_size="auto", debias=True)
    torch.testing.assert_close(metric.compute(), want, rtol=0, atol=0)
    result = metric.compute_result()
    expected = calibration_error_ci(
        q,
        y,
        bin_size="auto",
        debias=True,
        interval="pairs",
        generator=torch.Generator().manual_seed(0),
    )
    for name in ("error", "lower", "upper"):
        torch.testing.assert_close(getattr(result, name), getattr(expected, name))


def test_one_bin_no_longer_hides_independent_labels() -> None:
    # The case: 1,500 items x 4 classes, labels independent of very confident
    # predictions. bin_size=5000 made one bin and scored ~0; the default does not.
    probs, _ = multiclass(1500)
    target = torch.randint(0, 4, (1500,), generator=torch.Generator().manual_seed(1))
    default = CalibrationError(num_classes=4)
    default.update(probs, target)
    assert default.compute() > 0.2
    paper = CalibrationError(num_classes=4, debias=False, bin_size=5000, interval="paper")
    paper.update(probs, target)
    with pytest.warns(UserWarning, match="only 1 bin from 6000 pairs"):
        assert paper.compute() < 1e-3


def test_the_few_bins_warning_says_what_one_bin_measures() -> None:
    """It had said one bin "scores about 0 for any model": a model whose mean probability
    misses the base rate scores that gap (0.4 here); one that matches it scores about 0,
    however it errs from one probability to another."""
    from calib_metrics.few_bins import adaptive_bins_message

    q = torch.full((400,), 0.9, dtype=torch.float64)
    y = (torch.arange(400) % 2).to(torch.float64)
    metric = CalibrationError(debias=False, bin_size=400)
    metric.update(q, y)
    with pytest.warns(UserWarning, match="only 1 bin from 400 pairs") as caught:
        assert metric.compute().item() == pytest.approx(0.4, rel=1e-12)
    said = str(caught[0].message)
    truth = "one bin measures only |mean probability - mean label|, blind to any that cancels"
    for message in (said, adaptive_bins_message(1000, 400)):
        assert truth in message and "for any model" not in message


def test_paper_setting_is_one_call_away() -> None:
    q, y = overconfident(12000)
    metric = CalibrationError(debias=False, bin_size=5000, interval="paper", seed=4)
    metric.update(q, y)
    want = calibration_error_ci(
        q,
        y,
        bin_size=5000,
        debias=False,
        interval="paper",
        generator=torch.Generator().manual_seed(4),
    )
    result = metric.compute_result()
    for name in ("error", "mean", "std", "lower", "upper"):
        torch.testing.assert_close(getattr(result, name), getattr(want, name))


@pytest.mark.parametrize("norm", ["l1", "max"])
def test_l1_and_max_fall_back_to_the_plug_in_silently(norm: str) -> None:
    q, y = overconfident(2000)
    metric = no_warnings(CalibrationError, norm=norm)
    metric.update(q, y)
    want = calibration_error(q, y, bin_size="auto", norm=norm)
    torch.testing.assert_close(no_warnings(metric.compute), want)
    assert no_warnings(metric.compute_result).error == pytest.approx(want.item())


def test_groups_make_the_default_interval_resample_groups() -> None:
    q, y = overconfident(2000, seed=3)
    ids = torch.arange(2000) // 20
    metric = CalibrationError(n_samples=300)
    metric.update(q[:1000], y[:1000], groups=ids[:1000])
    metric.update(q[1000:], y[1000:], groups=ids[1000:])
    want = calibration_error_ci(
        q,
        y,
        bin_size="auto",
        n_samples=300,
        debias=True,
        interval="groups",
        groups=ids,
        generator=torch.Generator().manual_seed(0),
    )
    result = metric.compute_result()
    for name in ("error", "lower", "upper"):
        torch.testing.assert_close(getattr(result, name), getattr(want, name))
    with pytest.raises(ValueError, match="came with groups= and this one without"):
        metric.update(q[:10], y[:10])
    plain = CalibrationError()
    plain.update(q[:10], y[:10])
    with pytest.raises(ValueError, match="without groups= and this one with"):
        plain.update(q[:10], y[:10], groups=ids[:10])
    with pytest.raises(ValueError, match="streaming=False"):
        CalibrationError(streaming=True).update(q[:10], y[:10], groups=ids[:10])


def test_fewer_than_ten_bins_warns_once_per_metric() -> None:
    q, y = overconfident(300)
    metric = CalibrationError(bin_size=100)
    metric.update(q, y)
    with pytest.warns(UserWarning, match=r"only 3 bins from 300 pairs.*bin_size of at most 30"):
        metric.compute()
    no_warnings(metric.compute)
    no_warnings(metric.compute_result)
    fresh = CalibrationError(bin_size=100, streaming=True)
    fresh.update(q, y)
    with pytest.warns(UserWarning, match="only 3 bins"):
        fresh.compute_result()
    enough = CalibrationError()  # auto: 18 bins of 17 pairs
    enough.update(q, y)
    no_warnings(enough.compute)
    uniform = CalibrationError(binning="uniform", n_bins=5)
    uniform.update(q, y)
    # Uniform bins are named by n_bins: the message had named bin_size ("bin_size=100",
    # which uniform binning now refuses: tests/test_binning_size_options.py).
    with pytest.warns(UserWarning, match=r"only 5 bins from \d+ pairs \(n_bins=5\).*raise n_bins"):
        uniform.compute()


def test_forward_warns_of_few_bins_for_the_data_not_the_batch() -> None:
    """forward()'s batch value is measured by a metric of its own, which had warned
    "only 5 bins from 500 pairs" at the first batch beside an epoch of 100 bins, and
    warned a second time when the epoch itself had few."""
    q, y = overconfident(10_000)
    metric = CalibrationError(bin_size=100)
    for start in range(0, 10_000, 500):
        no_warnings(metric, q[start : start + 500], y[start : start + 500])
    no_warnings(metric.compute)
    assert metric.compute_result().bins.count.numel() == 100
    few = CalibrationError(bin_size=50)
    for start in range(0, 300, 100):
        no_warnings(few, q[start : start + 100], y[start : start + 100])
    with pytest.warns(UserWarning, match=r"only 6 bins from 300 pairs") as said:
        few.compute()
    assert len(said) == 1


# --------------------------------------------------------------------- averages


def test_average_none_macro_weighted_follow_torchmetrics_meanings() -> None:
    probs, target = multiclass(600, c=3, seed=2)
    per_class = CalibrationError(num_classes=3, average="none")
    per_class.update(probs, target)
    errors = per_class.compute()
    assert errors.shape == (3,)
    legacy = CalibrationError(num_classes=3, average=None)
    legacy.update(probs, target)
    torch.testing.assert_close(legacy.compute(), errors)
    macro = CalibrationError(num_classes=3, average="macro")
    macro.update(probs, target)
    torch.testing.assert_close(macro.compute(), errors.mean())
    weighted = CalibrationError(num_classes=3, average="weighted", streaming=True)
    weighted.update(probs, target)
    support = torch.bincount(target, minlength=3).double()
    streamed = CalibrationError(num_classes=3, average="none", streaming=True)
    streamed.update(probs, target)
    want = (streamed.compute() * support).sum() / support.sum()
    torch.testing.assert_close(weighted.compute(), want)
    assert isinstance(macro.compute_result(), list) and len(macro.compute_result()) == 3
    with pytest.raises(ValueError, match="set num_classes"):
        CalibrationError(average="macro")


# ------------------------------------------------------------------ state kept


def snapshot(metric: CalibrationError) -> dict[str, list[torch.Tensor]]:
    out = {}
    for name in metric._defaults:
        value = getattr(metric, name)
        out[name] = [v.clone() for v in value] if isinstance(value, list) else [value.clone()]
    return out


def assert_same_state(metric: CalibrationError, before: dict[str, list[torch.Tensor]]) -> None:
    after = snapshot(metric)
    assert after.keys() == before.keys()
    for name in before:
        assert len(after[name]) == len(before[name]), name
        for a, b in zip(after[name], before[name]):
            assert torch.equal(a, b), name


@pytest.mark.parametrize("streaming", [False, True])
def test_forward_on_a_rejected_batch_raises_and_keeps_the_state(streaming: bool) -> None:
    probs, target = multiclass(400)
    metric = CalibrationError(num_classes=4, ignore_index=PAD, streaming=streaming)
    metric(probs, target)
    before, value, count = snapshot(metric), metric.compute(), metric.update_count
    with pytest.raises(ValueError, match="logits"):
        metric(torch.log(probs), target)
    with pytest.raises(ValueError, match="class id"):
        metric(probs, target.masked_fill(target == 0, 9))
    assert_same_state(metric, before)
    assert metric.update_count == count
    torch.testing.assert_close(metric.compute(), value, rtol=0, atol=0)


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("average", ["micro", "none"])
def test_forward_on_an_all_padding_batch_is_nan_and_keeps_the_state(
    streaming: bool, average: str
) -> None:
    probs, target = multiclass(400)
    options = {"num_classes": 4, "ignore_index": PAD, "streaming": streaming}
    metric = CalibrationError(average=average, **options)
    whole = CalibrationError(average=average, **options)
    first = metric(probs[:200], target[:200])
    assert not torch.isnan(first).any()
    value = metric(probs[200:], torch.full_like(target[200:], PAD))
    assert torch.isnan(value).all() and value.shape == first.shape
    metric(probs[200:], target[200:])
    whole.update(probs, target)
    torch.testing.assert_close(metric.compute(), whole.compute())
    assert metric.update_count == 3


@pytest.mark.parametrize(
    "options",
    [{}, {"dist_sync_on_step": True}, {"dist_sync_on_step": True, "streaming": True}],
    ids=["default", "dist_sync_on_step", "dist_sync_on_step streaming"],
)
def test_forward_batch_value_and_accumulation_equal_update_and_compute(options) -> None:
    # dist_sync_on_step: forward once raised torchmetrics' RuntimeError (its merge_state
    # refuses such metrics; ours merges the batch's local state, as its forward does).
    q, y = overconfident(1200)
    metric = CalibrationError(**options)
    values = [metric(q[i : i + 400], y[i : i + 400]) for i in range(0, 1200, 400)]
    for i, value in enumerate(values):
        part = slice(400 * i, 400 * (i + 1))
        want = calibration_error(q[part], y[part], bin_size="auto", debias=True)
        torch.testing.assert_close(value, want)
    want = calibration_error(q, y, bin_size="auto", debias=True)
    torch.testing.assert_close(metric.compute(), want)
    assert metric.update_count == 3


def test_rejected_update_does_not_count() -> None:
    metric = CalibrationError()
    metric.update(*overconfident(100))
    with pytest.raises(ValueError):
        metric.update(torch.rand(5) + 2, torch.ones(5))
    with pytest.raises(ValueError):
        metric.update([0.5], [1])
    assert metric.update_count == 1


@pytest.mark.parametrize("streaming", [False, True])
def test_load_state_dict_does_not_alias_the_callers_state(streaming: bool) -> None:
    q, y = overconfident(600)
    source = CalibrationError(streaming=streaming)
    source.update(q[:300], y[:300])
    saved = {name: getattr(source, name) for name in source._defaults}
    kept = {
        k: [t.clone() for t in v] if isinstance(v, list) else v.clone() for k, v in saved.items()
    }
    target = CalibrationError(streaming=streaming)
    target.load_state_dict(saved, strict=False)
    target.update(q[300:], y[300:])
    for name, value in saved.items():
        if isinstance(value, list):
            assert len(value) == len(kept[name])
        else:
            assert torch.equal(value, kept[name])
    want = calibration_error(q, y, bin_size="auto", debias=True)
    torch.testing.assert_close(target.compute(), want)


@pytest.mark.parametrize("cast", ["bfloat16", "half", "double"])
def test_casting_the_module_keeps_every_state_dtype(cast: str) -> None:
    q, y = overconfident(2000)
    # 512 cells keep 1024 rows exactly: the second update folds the first into the sketch.
    streaming = CalibrationError(streaming=True, resolution=512)
    exact = CalibrationError()
    for metric in (streaming, exact):
        metric.update(q[:1000], y[:1000])
    before = exact.compute()
    for metric in (streaming, exact):
        if cast == "bfloat16":
            metric.to(torch.bfloat16)
        else:
            getattr(metric, cast)()
    assert all(getattr(streaming, n).dtype == torch.float64 for n in SKETCH_STATES)
    assert streaming.rows_seen.dtype == torch.int64
    # Stored as given, never rounded.
    assert exact.probs[0].dtype == streaming.probs[0].dtype == torch.float32
    torch.testing.assert_close(exact.compute(), before, rtol=0, atol=0)
    for metric in (streaming, exact):
        metric.update(q[1000:], y[1000:])  # used to raise scatter(): Expected self.dtype
    want = calibration_error(q, y, bin_size="auto", debias=True)
    torch.testing.assert_close(exact.compute(), want)
    assert streaming.cell_count.sum().item() == 2000 and not streaming.probs
    streaming.reset()
    streaming.update(q, y)
    assert streaming.cell_count.dtype == torch.float64
    fresh = CalibrationError(streaming=True, resolution=512)
    fresh.update(q, y)
    torch.testing.assert_close(streaming.compute(), fresh.compute(), rtol=0, atol=0)


# ----------------------------------------------------------------- clear errors


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bin_size": 2**63}, "bin_size must be at most"),
        ({"binning": "uniform", "n_bins": 2**40}, "n_bins must be at most"),
        ({"confidence": "0.9"}, "confidence must be a number"),
        ({"confidence": None}, "confidence must be a number"),
        ({"confidence": float("nan")}, "confidence"),
        ({"seed": "7"}, "seed must be an integer"),
        ({"seed": 1.5}, "seed must be an integer"),
        ({"seed": True}, "seed must be an integer"),
        ({"seed": 2**70}, "seed"),
        ({"seed": torch.Generator()}, "seed must be an integer"),
        ({"interval": "sentences"}, "interval must be"),
        ({"average": "samples", "num_classes": 3}, "average must be"),
        ({"debias": "yes"}, "debias must be"),
    ],
)
def test_constructor_rejects_with_a_value_error(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        CalibrationError(**kwargs)


@pytest.mark.parametrize("streaming", [False, True])
def test_only_padding_says_so_not_call_update(streaming: bool) -> None:
    metric = CalibrationError(num_classes=3, ignore_index=PAD, streaming=streaming)
    with pytest.raises(NoPairsError, match="call update"):
        metric.compute()
    metric.update(torch.full((4, 3), 1 / 3), torch.full((4,), PAD))
    with pytest.raises(NoPairsError, match="updates were empty or padding") as err:
        metric.compute()
    assert "call update" not in str(err.value)


def test_no_pairs_error_is_a_value_error_exported_by_both_layers() -> None:
    assert NoPairsError is FunctionalNoPairsError and issubclass(NoPairsError, ValueError)
    with pytest.raises(NoPairsError):
        calibration_error(torch.tensor([]), torch.tensor([]))


def test_merging_unlike_metrics_names_the_problem_briefly() -> None:
    q, y = overconfident(500)
    exact, streaming = CalibrationError(), CalibrationError(streaming=True)
    exact.update(q, y)
    streaming.update(q, y)
    with pytest.raises(ValueError, match="exact-mode metric cannot be merged") as err:
        streaming.merge_state(exact)
    assert "tensor(" not in str(err.value) and len(str(err.value)) < 200
    with pytest.raises(ValueError, match="num_classes"):
        CalibrationError(num_classes=3).merge_state(exact)
    with pytest.raises(ValueError, match="keys") as err:
        exact.merge_state({"probs": [q]})
    assert "tensor(" not in str(err.value)


def test_no_private_torchmetrics_sync_hooks_are_overridden() -> None:
    # The metrics use the public sync(); torchmetrics' private _sync_dist may change.
    for metric_class in (CalibrationError, CalibrationComparison):
        assert metric_class._sync_dist is Metric._sync_dist
        assert metric_class.sync is not Metric.sync
