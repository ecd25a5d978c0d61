"""CalibrationError (torchmetrics Metric) against the functional core and the reference."""

from __future__ import annotations

from pathlib import Path

import pytest
import reference as ref
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from calib_metrics import CalibrationError, CalibrationResult
from calib_metrics.functional import calibration_error, calibration_error_ci


def binary_batches(n_batches: int = 3, shape=(4, 50), seed: int = 0, shift: float = 0.05):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        q = torch.rand(shape, generator=g) ** 2
        y = torch.bernoulli((q + shift).clamp(0, 1), generator=g).long()
        out.append((q, y))
    return out


def multiclass_batch(batch: int = 6, length: int = 30, c: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(2 * torch.randn(batch, length, c, generator=g), dim=-1)
    target = torch.multinomial(probs.reshape(-1, c), 1, generator=g).reshape(batch, length)
    return probs, target


def cat(batches):
    return torch.cat([q.reshape(-1) for q, _ in batches]), torch.cat(
        [y.reshape(-1) for _, y in batches]
    )


def state_snapshot(metric: CalibrationError):
    return [(p.clone(), t.clone()) for p, t in zip(metric.probs, metric.target, strict=True)]


# --------------------------------------------------------------------------------------
# binary


def test_binary_any_shape_equals_functional() -> None:
    batches = binary_batches(shape=(2, 5, 20))
    metric = CalibrationError(bin_size=50, debias=False)  # the reference is the plug-in
    for q, y in batches:
        metric.update(q, y)
    q, y = cat(batches)
    value = metric.compute()
    assert value.shape == () and value.dtype == torch.float64
    expected = calibration_error(q, y, bin_size=50, debias=False)
    torch.testing.assert_close(value, expected, rtol=0, atol=0)
    expected = ref.error(ref.adaptive_bins(q.double().numpy(), y.numpy(), 50))
    assert value.item() == pytest.approx(expected, rel=1e-12)


def test_compute_result_equals_functional_interval() -> None:
    batches = binary_batches()
    metric = CalibrationError(bin_size=60, n_samples=500, seed=7)
    for q, y in batches:
        metric.update(q, y)
    result = metric.compute_result()
    assert isinstance(result, CalibrationResult)
    q, y = cat(batches)
    expected = calibration_error_ci(
        q,
        y,
        bin_size=60,
        n_samples=500,
        generator=torch.Generator().manual_seed(7),
        debias=True,
        interval="pairs",
    )
    for name in ("error", "mean", "std", "lower", "upper"):
        torch.testing.assert_close(getattr(result, name), getattr(expected, name))
    torch.testing.assert_close(result.bins.count, expected.bins.count)
    assert result.lower <= result.mean <= result.upper
    # The seed makes compute_result reproducible.
    torch.testing.assert_close(metric.compute_result().mean, result.mean, rtol=0, atol=0)


def test_uniform_binning_and_norms_follow_the_functional() -> None:
    batches = binary_batches(seed=3)
    q, y = cat(batches)
    for norm in ("l1", "l2", "max"):
        metric = CalibrationError(binning="uniform", n_bins=10, norm=norm)
        for qb, yb in batches:
            metric.update(qb, yb)
        # The default debias=True is the plug-in for l1 and max, which have no correction.
        debias = norm == "l2"
        expected = calibration_error(q, y, binning="uniform", n_bins=10, norm=norm, debias=debias)
        torch.testing.assert_close(metric.compute(), expected)


def test_forward_returns_batch_value_and_accumulates() -> None:
    batches = binary_batches(seed=1)
    metric = CalibrationError(bin_size=40)
    for q, y in batches:
        batch_value = metric(q, y)
        torch.testing.assert_close(batch_value, calibration_error(q, y, bin_size=40, debias=True))
    q, y = cat(batches)
    torch.testing.assert_close(metric.compute(), calibration_error(q, y, bin_size=40, debias=True))


@pytest.mark.filterwarnings("ignore:The ``compute`` method")
def test_reset_forgets_everything() -> None:
    first, second = binary_batches(n_batches=2, seed=2)
    metric = CalibrationError(bin_size=30)
    metric.update(*first)
    metric.reset()
    with pytest.raises(ValueError, match="no pairs"):
        metric.compute()
    metric.update(*second)
    torch.testing.assert_close(
        metric.compute(), calibration_error(*second, bin_size=30, debias=True)
    )


def test_merge_state_equals_one_metric_on_the_union() -> None:
    batches = binary_batches(n_batches=4, seed=4)
    left, right, whole = (CalibrationError(bin_size=70, n_samples=200) for _ in range(3))
    for i, (q, y) in enumerate(batches):
        (left if i % 2 else right).update(q, y)
        whole.update(q, y)
    left.merge_state(right)
    torch.testing.assert_close(left.compute(), whole.compute())
    merged, single = left.compute_result(), whole.compute_result()
    torch.testing.assert_close(merged.bins.count, single.bins.count)
    torch.testing.assert_close(merged.upper, single.upper)


@pytest.mark.filterwarnings("ignore:The ``compute`` method")
def test_compute_before_update_is_an_error() -> None:
    with pytest.raises(ValueError, match="no pairs"):
        CalibrationError().compute()


@pytest.mark.filterwarnings("ignore")
def test_lightning_self_log_accepts_the_metric() -> None:
    # Lightning refuses a dict from compute(); a 0-dim tensor is logged at epoch end.
    pl = pytest.importorskip("lightning.pytorch")

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(3, 1)
            self.calib = CalibrationError(bin_size=20, n_samples=10)
            self.seen: list[tuple[torch.Tensor, torch.Tensor]] = []

        def validation_step(self, batch, batch_idx):
            x, y = batch
            q = torch.sigmoid(self.linear(x)).squeeze(-1)
            self.seen.append((q.detach(), y))
            self.calib.update(q, y)
            self.log("val/calib_err", self.calib, on_epoch=True)

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(200, 3, generator=g), (torch.rand(200, generator=g) < 0.5).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=50)
    module = Module()
    trainer = pl.Trainer(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    (logged,) = trainer.validate(module, loader, verbose=False)
    q, y = cat(module.seen)
    expected = calibration_error(q, y, bin_size=20, debias=True)
    assert logged["val/calib_err"] == pytest.approx(expected.item(), rel=1e-6)


def test_state_stays_on_input_device_and_dtype() -> None:
    q, y = binary_batches(n_batches=1)[0]
    metric = CalibrationError(bin_size=20)
    metric.update(q.to(torch.bfloat16), y)
    assert metric.probs[0].device == q.device
    # The pairs are stored as given (no float64 copy per batch); sums are float64 later.
    assert metric.probs[0].dtype == torch.bfloat16
    assert metric.compute().device == q.device


def test_plot_returns_figure_and_axes(tmp_path: Path) -> None:
    metric = CalibrationError(bin_size=50, n_samples=100)
    for q, y in binary_batches():
        metric.update(q, y)
    fig, ax = metric.plot()
    assert isinstance(fig, Figure) and isinstance(ax, Axes)
    fig.savefig(tmp_path / "diagram.png")
    assert (tmp_path / "diagram.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------
# multiclass: the paper's one-vs-rest expansion


def expand(probs: torch.Tensor, target: torch.Tensor, c: int):
    """Each item gives C pairs (probs[c], target == c)."""
    q = probs.reshape(-1, c)
    y = torch.nn.functional.one_hot(target.reshape(-1), c)
    return q.reshape(-1), y.reshape(-1)


def test_multiclass_one_vs_rest_equals_functional_on_expanded_pairs() -> None:
    c = 4
    batches = [multiclass_batch(c=c, seed=s) for s in range(3)]
    metric = CalibrationError(num_classes=c, bin_size=60, debias=False)  # as the reference
    for probs, target in batches:
        metric.update(probs, target)
    q = torch.cat([expand(p, t, c)[0] for p, t in batches])
    y = torch.cat([expand(p, t, c)[1] for p, t in batches])
    expected = calibration_error(q, y, bin_size=60, debias=False)
    torch.testing.assert_close(metric.compute(), expected)
    expected = ref.error(ref.adaptive_bins(q.double().numpy(), y.numpy(), 60))
    assert metric.compute().item() == pytest.approx(expected, rel=1e-12)


def test_multiclass_per_class() -> None:
    c = 3
    probs, target = multiclass_batch(batch=8, c=c, seed=5)
    metric = CalibrationError(num_classes=c, average=None, bin_size=25, n_samples=100)
    metric.update(probs, target)
    values = metric.compute()
    assert values.shape == (c,)
    results = metric.compute_result()
    assert isinstance(results, list) and len(results) == c
    for k in range(c):
        expected = calibration_error(probs[..., k], target == k, bin_size=25, debias=True)
        torch.testing.assert_close(values[k], expected)
        torch.testing.assert_close(results[k].error, expected)
        assert results[k].bins.count.sum().item() == target.numel()
    fig, ax = metric.plot()
    assert isinstance(fig, Figure) and isinstance(ax, Axes)


def test_ignore_index_drops_padding_multiclass() -> None:
    c = 4
    probs, target = multiclass_batch(batch=5, length=40, c=c, seed=6)
    padded = target.clone()
    padded[:, 30:] = -100  # padding at the end of every sequence
    metric = CalibrationError(num_classes=c, ignore_index=-100, bin_size=50)
    metric.update(probs, padded)
    q, y = expand(probs[:, :30], target[:, :30], c)
    torch.testing.assert_close(metric.compute(), calibration_error(q, y, bin_size=50, debias=True))


def test_ignore_index_drops_padding_binary() -> None:
    q, y = binary_batches(n_batches=1, shape=(3, 40), seed=8)[0]
    padded = y.clone()
    padded[:, 35:] = -1
    metric = CalibrationError(ignore_index=-1, bin_size=20)
    metric.update(q, padded)
    expected = calibration_error(q[:, :35], y[:, :35], bin_size=20, debias=True)
    torch.testing.assert_close(metric.compute(), expected)


# --------------------------------------------------------------------------------------
# rejected input: ValueError naming the problem, state unchanged


BAD_BINARY = [
    ("logits", lambda q, y: (torch.logit(q.clamp(0.01, 0.99)), y), "logits"),
    ("above one", lambda q, y: (q + 1.0, y), r"\[0, 1\]"),
    ("nan", lambda q, y: (q.masked_fill(q > 0.5, float("nan")), y), "NaN"),
    ("non-binary", lambda q, y: (q, y + 1), "binary"),
    ("shape", lambda q, y: (q, y[:, :-1]), "shape"),
    ("integer probs", lambda q, y: (y, y), "floating"),
]


@pytest.mark.parametrize(("name", "corrupt", "match"), BAD_BINARY, ids=[b[0] for b in BAD_BINARY])
def test_rejected_update_leaves_state_unchanged(name, corrupt, match) -> None:
    good, bad = binary_batches(n_batches=2, seed=9)
    metric = CalibrationError(bin_size=40, n_samples=50)
    metric.update(*good)
    before, snapshot = metric.compute(), state_snapshot(metric)
    with pytest.raises(ValueError, match=match):
        metric.update(*corrupt(*bad))
    after = state_snapshot(metric)
    assert len(after) == len(snapshot)
    for (p0, t0), (p1, t1) in zip(snapshot, after, strict=True):
        assert torch.equal(p0, p1) and torch.equal(t0, t1)
    torch.testing.assert_close(metric.compute(), before, rtol=0, atol=0)


BAD_MULTICLASS = [
    ("class id", lambda p, t: (p, t.masked_fill(t == 0, 4)), "class"),
    ("negative id", lambda p, t: (p, t.masked_fill(t == 0, -3)), "class"),
    ("float target", lambda p, t: (p, t.float()), "integer"),
    ("wrong C", lambda p, t: (p[..., :3], t), "multiclass"),
    ("logits", lambda p, t: (torch.log(p), t), "logits"),
]


@pytest.mark.parametrize(
    ("name", "corrupt", "match"), BAD_MULTICLASS, ids=[b[0] for b in BAD_MULTICLASS]
)
def test_rejected_multiclass_update_leaves_state_unchanged(name, corrupt, match) -> None:
    metric = CalibrationError(num_classes=4, bin_size=40)
    metric.update(*multiclass_batch(seed=1))
    before = metric.compute()
    with pytest.raises(ValueError, match=match):
        metric.update(*corrupt(*multiclass_batch(seed=2)))
    assert len(metric.probs) == 1
    torch.testing.assert_close(metric.compute(), before, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bin_size": 0}, "bin_size"),
        ({"n_bins": 0, "binning": "uniform"}, "n_bins"),
        ({"norm": "l3"}, "norm"),
        ({"binning": "equal"}, "binning"),
        ({"confidence": 1.5}, "confidence"),
        ({"n_samples": 1}, "n_samples"),
        ({"method": "bca"}, "method"),
        ({"num_classes": 1}, "num_classes"),
        ({"num_classes": 3, "average": "samples"}, "average"),
        ({"average": None}, "num_classes"),
        ({"debias": None}, "debias"),
        ({"ignore_index": "pad"}, "ignore_index"),
    ],
)
def test_bad_constructor_arguments(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        CalibrationError(**kwargs)


# --------------------------------------------------------------------------------------
# streaming mode: fixed-size state


def test_streaming_merges_exactly_and_approximates_exact_mode() -> None:
    batches = binary_batches(n_batches=4, shape=(50, 100), seed=10)
    # 4096 cells keep 8192 rows exactly: the second batch of each overflows into the sketch.
    left, right, whole = (
        CalibrationError(bin_size=1000, streaming=True, resolution=4096) for _ in range(3)
    )
    exact = CalibrationError(bin_size=1000)
    for i, (q, y) in enumerate(batches):
        (left if i % 2 else right).update(q, y)
        whole.update(q, y)
        exact.update(q, y)
    left.merge_state(right)
    torch.testing.assert_close(left.compute(), whole.compute())
    # Bins from whole sketch cells differ from the exact ones only slightly.
    assert abs(whole.compute().item() - exact.compute().item()) < 0.01
    assert whole.cell_count.sum().item() == 4 * 50 * 100
