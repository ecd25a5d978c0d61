"""Smooth calibration error and curve: relplot as the oracle, brute force, histogram path.

relplot (the authors' package, ``relplot.metrics.smECE``) computes what
``smooth_calibration_error`` computes where no pair lies within a grid step (≤ 0.001) of
0 or 1, except that it adds 1e-4 to the kernel density at each mesh point; that moves the
result by ~1e-8 at N = 500 and less beyond, so the comparisons hold to 1e-7. Nearer the
ends relplot counts the grid's end points once where the reflected kernel counts them
twice (the module docstring); there the definition, by brute force, is the oracle.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from calib_metrics.functional.sketch import cell_index
from calib_metrics.functional.smooth import (
    histogram_tolerance,
    smooth_bandwidth,
    smooth_calibration_error,
    smooth_calibration_from_histogram,
    smooth_reliability_curve,
)

relplot_metrics = pytest.importorskip("relplot.metrics", reason="relplot is the oracle (dev extra)")


def data(n: int, seed: int, shift: float = 0.0, power: float = 2.0, margin: float = 0.0):
    """q = u^power piles up near 0; ``margin`` keeps it that far from both ends."""
    g = torch.Generator().manual_seed(seed)
    q = margin + (1 - 2 * margin) * torch.rand(n, generator=g, dtype=torch.float64) ** power
    y = torch.bernoulli((q + shift).clamp(0, 1), generator=g)
    return q, y


# More than the widest grid step (1/1000): where relplot and the definition coincide.
AWAY_FROM_ENDS = 0.002


CASES = [(300, 0, 0.0), (2000, 1, 0.1), (20000, 2, -0.03), (5000, 3, 0.0)]


@pytest.mark.parametrize(("n", "seed", "shift"), CASES)
@pytest.mark.parametrize("sigma", [0.003, 0.05, 0.3])
def test_fixed_bandwidth_equals_relplot(n, seed, shift, sigma) -> None:
    q, y = data(n, seed, shift, margin=AWAY_FROM_ENDS)
    expected = relplot_metrics.smECE_sigma(q.numpy(), y.numpy(), sigma)
    got = smooth_calibration_error(q, y, bandwidth=sigma)
    assert got.item() == pytest.approx(expected, abs=1e-7)
    # The documented size of relplot's regulariser: a relative 1e-4/N (it was stated as
    # 1e-7 at N ≥ 100, 10× too small there).
    assert got.item() == pytest.approx(expected, rel=1.2e-4 / n)


@pytest.mark.parametrize(("n", "seed", "shift"), CASES)
def test_automatic_bandwidth_equals_relplot(n, seed, shift) -> None:
    q, y = data(n, seed, shift, margin=AWAY_FROM_ENDS)
    expected, width = relplot_metrics.smECE(q.numpy(), y.numpy(), return_width=True)
    assert smooth_bandwidth(q, y) == width
    got = smooth_calibration_error(q, y)
    assert got.item() == pytest.approx(expected, abs=1e-7)
    assert got.dtype == torch.float64 and got.ndim == 0


def test_where_the_regulariser_tips_a_halving_the_gap_is_one_step() -> None:
    """The module docstring's example: relplot's 1e-4 density term tips one step of the
    bisection on three pairs, and the two differ by at most that step, 1/1024 in σ."""
    q = torch.tensor([0.2, 0.2, 0.4], dtype=torch.float64)
    y = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    got = smooth_calibration_error(q, y).item()
    expected = relplot_metrics.smECE(q.numpy(), y.numpy())
    assert round(got, 4) == 0.1614 and round(expected, 4) == 0.1621
    assert abs(got - expected) <= 1 / 1024


def test_the_truncated_kernel_gives_relplots_number_at_large_bandwidths() -> None:
    """*The truncation*: two pairs far from calibrated give 0.739 here and in relplot
    (the untruncated definition's fixed point is 0.433, by brute force); they differ by
    the regulariser, a relative 1e-4/N while σ is small and more at σ near 1."""
    q = torch.tensor([0.1, 0.9], dtype=torch.float64)
    y = torch.tensor([1.0, 0.0], dtype=torch.float64)
    got = smooth_calibration_error(q, y).item()
    assert round(got, 3) == 0.739
    assert got == pytest.approx(relplot_metrics.smECE(q.numpy(), y.numpy()), rel=2e-4)


def test_float32_input_and_top_label_mode() -> None:
    g = torch.Generator().manual_seed(4)
    probs = (torch.randn(3000, 4, generator=g) * 1.2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    assert float(probs.amax(-1).max()) < 1 - AWAY_FROM_ENDS  # where relplot is the oracle
    confidence, correct = relplot_metrics.multiclass_logits_to_confidences(
        probs.double().numpy(), target.numpy(), probs=True
    )
    expected = relplot_metrics.smECE(confidence, correct)
    got = smooth_calibration_error(probs, target, mode="top_label")
    assert got.item() == pytest.approx(expected, abs=1e-6)  # relplot widens the float32 probs


def brute_force(q: torch.Tensor, y: torch.Tensor, sigma: float) -> float:
    """The definition itself: kernel sums at 4,001 points of [0, 1], the kernel reflected
    at 0 and 1 (images q, -q and 2 - q; the next, q ± 2, lie 1 or more away and weigh
    below e^-50 for sigma <= 0.1), each point summing the images within 12 sigma (the
    others weigh below e^-72). A [4001, 5N] kernel had taken most of these tests' time."""
    assert sigma <= 0.1
    t = torch.linspace(0, 1, 4001, dtype=torch.float64)
    images, order = torch.cat([q, -q, 2 - q]).sort()
    gaps = (q - y).repeat(3)[order]
    residual, mass = torch.empty_like(t), torch.empty_like(t)
    for block in torch.arange(t.numel()).split(100):
        points = t[block]
        reach = torch.stack([points[0] - 12 * sigma, points[-1] + 12 * sigma])
        lo, hi = torch.searchsorted(images, reach).tolist()
        kernel = torch.exp(-((points[:, None] - images[lo:hi]) ** 2) / (2 * sigma**2))
        residual[block], mass[block] = kernel @ gaps[lo:hi], kernel.sum(1)
    return (residual.abs().mean() / mass.mean()).item()


@pytest.mark.parametrize("sigma", [0.02, 0.08])
def test_equals_the_definition_by_brute_force(sigma) -> None:
    q, y = data(400, seed=5, shift=0.05)
    # relplot's discretisation (shared here) sums the integrals over a mesh of 10/σ points
    # with equal weights, end points included, where q piles up (q = u² here); with its
    # grid rounding and kernel truncation that leaves 0.8% (σ = 0.02) and 1.3% (σ = 0.08)
    # between the package's number and the integral itself.
    assert smooth_calibration_error(q, y, bandwidth=sigma).item() == pytest.approx(
        brute_force(q, y, sigma), rel=2e-2
    )


def confident_one_vs_rest(n: int = 1000, classes: int = 20):
    """One-vs-rest pairs of an overconfident 20-class model: 3 in 4 pairs below 1e-3."""
    g = torch.Generator().manual_seed(1)
    logits = 6 * torch.randn(n, classes, generator=g, dtype=torch.float64)
    target = torch.multinomial((logits / 1.5).softmax(-1), 1, generator=g).squeeze(1)
    return logits.softmax(-1), target


@pytest.mark.parametrize("sigma", [0.01, 0.05])
def test_mass_at_the_ends_weighs_as_in_the_definition(sigma) -> None:
    # A pair at q = 0 is its own mirror image: the reflected kernel folds all its mass
    # onto [0, 1]. relplot's grid counted it once, as half a pair (0.0158 for 0.0106 on
    # the one-vs-rest pairs; 31% and 76% too high with half and 9 in 10 pairs at q = 0).
    probs, target = confident_one_vs_rest()
    q, y = probs.reshape(-1), torch.nn.functional.one_hot(target, 20).double().reshape(-1)
    assert float((q < 1e-3).double().mean()) > 0.7
    definition = brute_force(q, y, sigma)
    got = smooth_calibration_error(probs, target, bandwidth=sigma).item()
    assert got == pytest.approx(definition, rel=0.04)
    assert relplot_metrics.smECE_sigma(q.numpy(), y.numpy(), sigma) > 1.4 * definition
    g = torch.Generator().manual_seed(0)
    for share in (0.5, 0.9):
        q = torch.rand(4000, generator=g, dtype=torch.float64)
        y = torch.bernoulli((q + 0.15).clamp(0, 1), generator=g)
        at_ends = torch.rand(4000, generator=g) < share
        q[at_ends] = (torch.rand(4000, generator=g, dtype=torch.float64) < 0.3)[at_ends].double()
        y[at_ends] = q[at_ends]
        got = smooth_calibration_error(q, y, bandwidth=sigma).item()
        assert got == pytest.approx(brute_force(q, y, sigma), rel=0.05)


def test_reacts_to_miscalibration_and_is_small_when_calibrated() -> None:
    q, y = data(20000, seed=6)
    calibrated = smooth_calibration_error(q, y).item()
    q_bad, y_bad = data(20000, seed=6, shift=0.1)
    assert calibrated < 0.02 < 0.05 < smooth_calibration_error(q_bad, y_bad).item()


def test_one_cell_per_pair_histogram_is_exact() -> None:
    q, y = data(3000, seed=7, shift=0.05)
    ones = torch.ones_like(q)
    for sigma in (None, 0.04):
        exact = smooth_calibration_error(q, y, bandwidth=sigma)
        from_cells = smooth_calibration_from_histogram(q, ones, y, bandwidth=sigma)
        assert from_cells.item() == pytest.approx(exact.item(), rel=1e-12)


@pytest.mark.parametrize(
    ("shift", "resolution"), [(0.0, 1 << 14), (0.05, 1 << 14), (0.05, 1 << 10)]
)
def test_sketch_cells_agree_within_the_stated_tolerance(shift, resolution) -> None:
    # The streaming sketch's cells (equal width in logit) hold count, Σq and Σy.
    q, y = data(100_000, seed=8, shift=shift, power=3.0)
    cell = cell_index(q, resolution)
    count = torch.zeros(resolution, dtype=torch.float64).index_add_(0, cell, torch.ones_like(q))
    sum_q = torch.zeros_like(count).index_add_(0, cell, q)
    sum_y = torch.zeros_like(count).index_add_(0, cell, y)
    keep = count > 0
    position = sum_q[keep] / count[keep]
    sigma = smooth_bandwidth(q, y)
    exact = smooth_calibration_error(q, y, bandwidth=sigma).item()
    histogram = smooth_calibration_from_histogram(
        position, count[keep], sum_y[keep], bandwidth=sigma
    ).item()
    bound = histogram_tolerance(q, (sum_q / count.clamp_min(1))[cell], sigma).item()
    assert abs(histogram - exact) <= bound
    if resolution == 1 << 14:  # the sketch's default resolution: well within 1e-4
        assert abs(histogram - exact) < 1e-4
    # The automatic bandwidth from the cells gives the same error to the same tolerance.
    auto = smooth_calibration_from_histogram(position, count[keep], sum_y[keep]).item()
    assert auto == pytest.approx(smooth_calibration_error(q, y).item(), abs=max(bound, 2e-3))


def test_curve_equals_relplot_kernel_smoother_and_band_holds_it() -> None:
    q, y = data(5000, seed=9, shift=0.05, margin=AWAY_FROM_ENDS)
    sigma = 0.05
    curve = smooth_reliability_curve(
        q, y, bandwidth=sigma, n_samples=100, generator=torch.Generator().manual_seed(0)
    )
    kernels = pytest.importorskip("relplot.kernels")
    expected, density = kernels.ReflectedGaussianKernel(sigma).smooth(
        q.numpy(), y.numpy(), curve.grid.numpy()
    )
    # relplot divides by density + 1e-4: compare where that is negligible.
    dense = torch.from_numpy(density) > 10
    torch.testing.assert_close(
        curve.curve[dense], torch.from_numpy(expected)[dense], rtol=1e-5, atol=0
    )
    assert bool((curve.lower <= curve.curve).all() and (curve.curve <= curve.upper).all())
    assert curve.error.item() == pytest.approx(
        smooth_calibration_error(q, y, bandwidth=sigma).item()
    )
    assert curve.density.mean().item() == pytest.approx(1.0)


def test_band_covers_the_truth_and_groups_widen_it() -> None:
    # Calibrated data: the true curve is the diagonal. Grouped labels (10 items share
    # one label draw) are far noisier than independent ones; the group band must see it.
    g = torch.Generator().manual_seed(10)
    n = 6000
    group = torch.arange(n) // 10
    q = torch.rand(n // 10, generator=g, dtype=torch.float64)
    q, y = q.repeat_interleave(10), torch.bernoulli(q, generator=g).repeat_interleave(10)
    options = {"bandwidth": 0.08, "n_samples": 200, "points": 51}
    pairs = smooth_reliability_curve(q, y, generator=torch.Generator().manual_seed(1), **options)
    groups = smooth_reliability_curve(
        q, y, groups=group, generator=torch.Generator().manual_seed(1), **options
    )
    inner = (pairs.grid > 0.1) & (pairs.grid < 0.9)
    width_pairs = (pairs.upper - pairs.lower)[inner].mean()
    width_groups = (groups.upper - groups.lower)[inner].mean()
    assert width_groups > 2 * width_pairs  # √10 ≈ 3.2 in theory
    truth = groups.grid[inner]
    covered = ((groups.lower[inner] <= truth) & (truth <= groups.upper[inner])).float().mean()
    assert covered > 0.8


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        # One range for every value out of it (0 had been told "(0, 1]", "auto" [1e-4, 1]).
        ({"bandwidth": 0.0}, r"bandwidth must be a number in \[0.0001, 1\] or None, got 0.0"),
        ({"bandwidth": 1.5}, r"bandwidth must be a number in \[0.0001, 1\] or None, got 1.5"),
        ({"bandwidth": "auto"}, r"bandwidth must be a number in \[0.0001, 1\] or None"),
        ({"bandwidth": torch.tensor([0.1])}, r"bandwidth must be a number in \[0.0001, 1\]"),
        ({"bandwidth": 1e-9}, r"1e-09 is below 0.0001: .*\(10,000,000,000 here"),  # 160 GB
        ({"bandwidth": 1e-310}, r"1e-310 is below 0.0001"),  # an OverflowError at first
        ({"n_samples": 1}, "n_samples must be at least 2, got 1"),
        ({"confidence": 1.0}, "confidence must lie strictly between"),
        ({"points": 1}, "points must be an integer >= 2"),
    ],
)
def test_curve_errors(kwargs, message) -> None:
    q, y = data(100, seed=0)
    with pytest.raises(ValueError, match=message):
        smooth_reliability_curve(q, y, **kwargs)


def test_a_curves_own_bandwidth_tensor_is_taken() -> None:
    """SmoothCurve.bandwidth is a 0-dim tensor: passing it back had been refused."""
    q, y = data(500, seed=1)
    curve = smooth_reliability_curve(q, y, n_samples=20, generator=torch.Generator().manual_seed(0))
    assert isinstance(curve.bandwidth, torch.Tensor) and curve.bandwidth.ndim == 0
    assert smooth_calibration_error(q, y, bandwidth=curve.bandwidth) == curve.error
    one = smooth_calibration_error(q, y, bandwidth=1)
    assert smooth_calibration_error(q, y, bandwidth=torch.tensor(1)) == one  # an int tensor
    width = curve.bandwidth.clone().requires_grad_()
    assert smooth_calibration_error(q, y, bandwidth=width) == curve.error  # no grad warning
    with pytest.raises(ValueError, match="bandwidth is on the meta device"):
        smooth_calibration_error(q, y, bandwidth=torch.tensor(0.1, device="meta"))


def test_input_errors() -> None:
    with pytest.raises(ValueError, match="must lie in"):
        smooth_calibration_error(torch.tensor([1.5]), torch.tensor([1]))
    with pytest.raises(ValueError, match="same shape"):
        smooth_calibration_error(torch.rand(3), torch.tensor([1, 0]))
    with pytest.raises(ValueError, match="sum_target <= count"):
        smooth_calibration_from_histogram(
            torch.tensor([0.5], dtype=torch.float64),
            torch.tensor([1.0], dtype=torch.float64),
            torch.tensor([2.0], dtype=torch.float64),
        )
    probs = torch.rand(5, 3).softmax(-1)
    with pytest.raises(ValueError, match="classwise"):
        smooth_reliability_curve(probs, torch.tensor([0, 1, 2, 0, 1]), mode="classwise")
    # Classwise smooth error is the mean of the per-class errors.
    target = torch.tensor([0, 1, 2, 0, 1])
    per_class = [smooth_calibration_error(probs[:, c], (target == c).long()) for c in range(3)]
    got = smooth_calibration_error(probs, target, mode="classwise")
    assert got.item() == pytest.approx(torch.stack(per_class).mean().item())


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("where", ["count", "sum_target"])
def test_a_histogram_with_nan_or_inf_is_refused(bad, where) -> None:
    """NaN passes every comparison, so such a histogram once gave a NaN error silently."""
    cells = {
        "position": torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64),
        "count": torch.tensor([100.0, 50.0, 100.0], dtype=torch.float64),
        "sum_target": torch.tensor([20.0, 25.0, 80.0], dtype=torch.float64),
    }
    cells[where][1] = bad
    with pytest.raises(ValueError, match=f"{where} holds NaN or infinite values"):
        smooth_calibration_from_histogram(**cells)


def test_a_histogram_position_of_nan_is_named_as_an_empty_cells_mean() -> None:
    """An empty cell's mean q (0/0) had been refused as "position must lie in [0, 1]"."""
    with pytest.raises(ValueError, match=r"position holds NaN \(the mean of an empty cell"):
        smooth_calibration_from_histogram(
            torch.tensor([0.1, float("nan"), 0.9], dtype=torch.float64),
            torch.tensor([100.0, 0.0, 100.0], dtype=torch.float64),
            torch.tensor([20.0, 0.0, 80.0], dtype=torch.float64),
        )
    with pytest.raises(ValueError, match=r"position must lie in \[0, 1\]"):
        smooth_calibration_from_histogram(*(torch.tensor([1.5], dtype=torch.float64),) * 3)


@pytest.mark.parametrize("groups", [None, "three"])
def test_a_band_from_too_few_units_is_nan_with_a_warning(groups) -> None:
    """A band from 1 pair had width 0 (it looked certain), one from 3 groups was drawn
    where calibration_error_ci gives no interval: both now NaN, as its ends are."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    if groups is None:
        q, y, ids, unit = q[:1], y[:1], None, "1 pair;"
    else:
        ids, unit = torch.arange(3000) % 3, "3 groups;"
    with pytest.warns(UserWarning, match=f"smooth_reliability_curve: {unit} at least 10"):
        c = smooth_reliability_curve(q, y, groups=ids, n_samples=50)
    assert c.lower.isnan().all() and c.upper.isnan().all()
    assert not c.curve.isnan().all()  # the curve stands
    # Drawn, the legend names no band (it had named one beside an empty plot).
    from calib_metrics.functional import calibration_error_ci
    from calib_metrics.plot import reliability_diagram

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no interval from so few units, as said above
        result = calibration_error_ci(q, y, n_samples=20, groups=ids)
    _, ax = reliability_diagram(result, smooth=c)
    entries = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("band" in e for e in entries) and any("smooth curve" in e for e in entries)


def test_ten_units_give_a_band() -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.rand(10, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    c = smooth_reliability_curve(q, y, n_samples=50, generator=g)
    assert not c.lower.isnan().all()


def test_numpy_bandwidths_are_numbers() -> None:
    np = pytest.importorskip("numpy")
    q, y = data(500, seed=11)
    expected = smooth_calibration_error(q, y, bandwidth=0.125)
    for kind in (np.float32, np.float64):  # np.float32 was refused, np.float64 taken
        assert smooth_calibration_error(q, y, bandwidth=kind(0.125)).item() == expected.item()
    with pytest.raises(ValueError, match=r"below 0\.0001"):
        smooth_calibration_error(q, y, bandwidth=1e-5)


def test_the_curve_is_a_frequency_where_data_reach_and_nan_elsewhere() -> None:
    """The NaN floor had been 1e-12 of the density summed over the evaluation points: with
    points coarse next to σ that sum was FFT round-off, and round-off over round-off came
    back as curve values from −22.6 to 276 (drawn by reliability_diagram) and densities
    below 0."""
    g = torch.Generator().manual_seed(0)
    values = torch.tensor([80.5, 120.5, 160.5], dtype=torch.float64) / 199  # between points
    q = values[torch.randint(0, 3, (3000,), generator=g)]
    y = torch.bernoulli(q, generator=g)
    far = smooth_reliability_curve(q, y, bandwidth=2e-4, n_samples=20, generator=g)
    assert bool(far.curve.isnan().all() and far.lower.isnan().all())  # every t is 12σ off
    assert bool((far.density == 0).all())
    q = torch.full((12,), 0.4, dtype=torch.float64)
    y = torch.tensor([1] * 5 + [0] * 7)
    few = smooth_reliability_curve(q, y, n_samples=50, points=5, generator=g)
    reached = ~few.curve.isnan()
    assert reached.tolist() == [False, False, True, False, False]  # within 6σ of 0.4 only
    torch.testing.assert_close(few.curve[reached], torch.tensor([5 / 12], dtype=torch.float64))
    assert bool((few.lower[reached] >= 0).all() and (few.upper[reached] <= 1).all())
    assert bool((few.density >= 0).all())


def test_the_error_of_every_prediction_wrong_is_one_not_more() -> None:
    assert smooth_calibration_error(torch.ones(20), torch.zeros(20)).item() <= 1.0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((torch.rand(5), torch.rand(5), 0), r"bandwidth must be a number in \[0.0001, 1\]"),
        ((torch.rand(5), torch.rand(5), -0.1), r"bandwidth must be a number in \[0.0001, 1\]"),
        ((torch.rand(5), torch.rand(5), None), "bandwidth must be the number"),
        ((torch.rand(5), torch.rand(3), 0.1), "must have one non-empty shape"),
        (([0.1], [0.2], 0.1), "probs must be a floating-point tensor, got list"),
        ((torch.tensor([math.nan]), torch.tensor([0.5]), 0.1), r"probs must lie in \[0, 1\]"),
        ((torch.rand(2), torch.tensor([0.5, 1.5]), 0.1), "position_of_pair must lie"),
    ],
)
def test_histogram_tolerance_names_a_bad_argument(args, said) -> None:
    """A bandwidth of 0 had been a ZeroDivisionError, a negative one a negative bound,
    shapes torch's RuntimeError, a list an AttributeError and NaN a NaN bound."""
    with pytest.raises(ValueError, match=said):
        histogram_tolerance(*args)


def test_a_histogram_of_integer_counts_is_read_as_its_floats() -> None:
    """Counts straight from ``torch.bincount`` had been refused ("must be a 1-D
    floating-point tensor"); they are exact in float64 and give the float histogram's
    numbers. Positions stay floating point, and bools are no counts."""
    from calib_metrics.functional.smooth import smooth_curve_from_histogram

    g = torch.Generator().manual_seed(3)
    q = torch.rand(5000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q**1.3, generator=g).long()
    cell = (q * 20).long().clamp(max=19)
    count, sum_y = torch.bincount(cell, minlength=20), torch.bincount(cell, y, minlength=20)
    sum_y = sum_y.round().long()  # bincount with weights gives floats: make them integers
    position = torch.bincount(cell, q, minlength=20) / count
    as_ints = smooth_calibration_from_histogram(position, count, sum_y)
    as_floats = smooth_calibration_from_histogram(position, count.double(), sum_y.double())
    assert as_ints.item() == as_floats.item() > 0
    curve_ints = smooth_curve_from_histogram(position, count, sum_y)
    curve_floats = smooth_curve_from_histogram(position, count.double(), sum_y.double())
    assert torch.equal(curve_ints.curve, curve_floats.curve)
    with pytest.raises(ValueError, match="position must be floating point"):
        smooth_calibration_from_histogram(torch.arange(3), count[:3], sum_y[:3])
    with pytest.raises(ValueError, match=r"count must hold real numbers, got dtype torch\.bool"):
        smooth_calibration_from_histogram(position[:3], count[:3] > 0, sum_y[:3])


@pytest.mark.parametrize("sigma", [0.01, 0.05, 0.3])
def test_the_tolerance_of_pairs_at_their_cells_means_allows_for_rounding(sigma) -> None:
    # Discrete ties: every pair sits at its cell's mean, so the shift term is 0, while the
    # exact and histogram values, summed in another order, differ by rounding (the bound
    # had been exactly 0 and |gap| <= bound failed).
    g = torch.Generator().manual_seed(1)
    q = (torch.randint(0, 21, (5000,), generator=g) / 20).double()
    y = torch.bernoulli(q * 0.9 + 0.05, generator=g)
    position, cell = torch.unique(q, return_inverse=True)
    count = torch.zeros_like(position).index_add_(0, cell, torch.ones_like(q))
    sum_y = torch.zeros_like(position).index_add_(0, cell, y)
    histogram = smooth_calibration_from_histogram(position, count, sum_y, bandwidth=sigma)
    gap = abs(histogram - smooth_calibration_error(q, y, bandwidth=sigma)).item()
    assert gap > 0  # the case in point: a rounding difference
    assert gap <= histogram_tolerance(q, position[cell], sigma).item() < 1e-11


def test_a_histogram_of_negative_counts_is_named_so_not_empty() -> None:
    """Every count negative had been told "empty histogram"."""
    from calib_metrics.functional.smooth import smooth_calibration_from_histogram

    with pytest.raises(ValueError, match=r"histogram needs count >= 0"):
        smooth_calibration_from_histogram(
            torch.tensor([0.2, 0.8]), torch.tensor([-3.0, -1.0]), torch.tensor([0.0, 0.0])
        )


def test_compute_smooth_of_an_empty_metric_does_not_name_compute_alone() -> None:
    from calib_metrics import CalibrationError
    from calib_metrics.functional.errors import NoPairsError

    said = r"call update\(\) before computing \(compute, compute_smooth"
    with pytest.raises(NoPairsError, match=said):
        CalibrationError().compute_smooth()
