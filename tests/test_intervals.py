"""Debiased calibration error, pair/group bootstrap intervals and ``bin_size="auto"``."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.cli import main
from calib_metrics.functional import (
    calibration_error,
    calibration_error_ci,
    ci_from_bins,
    compare_calibration,
    compare_calibration_by_label,
    error_from_bins,
    intervals,
    smooth_curve_from_histogram,
    smooth_reliability_curve,
)
from calib_metrics.functional.auto_bin import auto_bin_size, resolve_bin_size
from calib_metrics.functional.calibration import compute_bins
from calib_metrics.functional.intervals import bin_index, group_sum_matrix, pair_bootstrap
from calib_metrics.paper.synthetic import sample_pairs, true_calibration_error

ROOT = Path(__file__).resolve().parents[1]


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _correlated_groups(n_groups: int = 200, size: int = 50, seed: int = 0):
    """Pairs whose labels are shared by the whole group (maximal within-group correlation)."""
    g = _gen(seed)
    probs = 0.4 + 0.2 * torch.rand(n_groups * size, generator=g, dtype=torch.float64)
    group_label = torch.bernoulli(torch.full((n_groups,), 0.5, dtype=torch.float64), generator=g)
    groups = torch.arange(n_groups * size) // size
    return probs, group_label[groups], groups


def test_debiased_mean_on_calibrated_data_is_far_below_plugin():
    g = _gen(1)
    plugin, debiased, square = [], [], []
    for _ in range(20):
        q = torch.rand(20_000, generator=g, dtype=torch.float64)
        bins = compute_bins(q, torch.bernoulli(q, generator=g), bin_size=500)
        plugin.append(error_from_bins(bins).item())
        debiased.append(error_from_bins(bins, debias=True).item())
        gap, noise = bins.pred_mean - bins.freq, bins.freq * (1 - bins.freq) / (bins.count - 1)
        square.append((bins.count / bins.count.sum() * (gap**2 - noise)).sum().item())
    mean_plugin, mean_debiased = sum(plugin) / 20, sum(debiased) / 20
    # The plug-in sits near sqrt(E[q(1 − q)]/β) = sqrt(1/6/500) ≈ 0.018; the clipped
    # debiased error near 0.41·(2/T)^(1/4) of it with T = 40 bins, about a fifth.
    assert 0.015 < mean_plugin < 0.022
    assert mean_debiased < mean_plugin / 3
    # Before clipping, the debiased square is centred on the true 0.
    assert abs(sum(square) / 20) < 0.1 * mean_plugin**2


def test_debiased_error_is_unbiased_for_the_square_on_miscalibrated_data():
    g = _gen(2)
    truth = true_calibration_error(0.3, 0.3, 0.1)
    squares, plugins = [], []
    for _ in range(4):
        q, y = sample_pairs(30_000, 0.3, 0.3, 0.1, generator=g)
        squares.append(calibration_error(q, y, bin_size=150, debias=True).item() ** 2)
        plugins.append(calibration_error(q, y, bin_size=150, debias=False).item() ** 2)
    assert abs(math.sqrt(sum(squares) / 4) - truth) < 0.003
    # The plug-in square overshoots by the binomial noise Σ wᵢ pᵢ(1 − pᵢ)/|Bᵢ|.
    assert sum(plugins) / 4 - sum(squares) / 4 > 2e-4


def test_paper_interval_misses_zero_where_the_debiased_bootstrap_covers_it():
    q, y = sample_pairs(200_000, 0.3, 0.3, 0.0, generator=_gen(3))
    paper = calibration_error_ci(
        q, y, n_samples=2000, generator=_gen(4), debias=False, interval="paper", bin_size=5000
    )
    fixed = calibration_error_ci(
        q, y, n_samples=2000, generator=_gen(4), interval="pairs", debias=True, bin_size=5000
    )
    assert paper.lower > 0.003  # Algorithm 2 excludes the true error 0
    assert fixed.lower == 0 and fixed.upper < paper.upper


@pytest.mark.parametrize("interval", ["pairs", "groups"])
def test_bootstrap_is_deterministic_given_a_generator(interval):
    probs, target, groups = _correlated_groups(100, 20)
    options = {"bin_size": 200, "n_samples": 300, "interval": interval, "debias": True}
    if interval == "groups":
        options["groups"] = groups
    first = calibration_error_ci(probs, target, generator=_gen(7), **options)
    second = calibration_error_ci(probs, target, generator=_gen(7), **options)
    other = calibration_error_ci(probs, target, generator=_gen(8), **options)
    for a, b in zip(first[:5], second[:5]):
        assert torch.equal(a, b)
    assert not torch.equal(first.upper, other.upper)


@pytest.mark.parametrize("debias", [False, True])
def test_group_bootstrap_is_wider_than_pair_bootstrap_on_correlated_groups(debias):
    probs, target, groups = _correlated_groups()
    options = {"bin_size": 1000, "n_samples": 500, "debias": debias, "method": "percentile"}
    pairs = calibration_error_ci(probs, target, interval="pairs", generator=_gen(), **options)
    grouped = calibration_error_ci(
        probs, target, interval="groups", groups=groups, generator=_gen(), **options
    )
    assert grouped.upper - grouped.lower > 2 * (pairs.upper - pairs.lower)
    assert grouped.std > 2 * pairs.std


def test_group_bootstrap_with_singleton_groups_matches_pair_bootstrap():
    q, y = sample_pairs(10_000, 0.3, 0.3, 0.05, generator=_gen(5))
    options = {"bin_size": 500, "n_samples": 600, "debias": True}
    pairs = calibration_error_ci(q, y, interval="pairs", generator=_gen(), **options)
    single = calibration_error_ci(
        q, y, interval="groups", groups=torch.arange(10_000), generator=_gen(), **options
    )
    assert torch.equal(pairs.error, single.error)
    for a, b in ((pairs.lower, single.lower), (pairs.upper, single.upper)):
        assert abs(a - b) < 0.1 * pairs.error


def test_pair_bootstrap_from_bins_agrees_with_functional_and_metric():
    q, y = sample_pairs(30_000, 0.3, 0.3, 0.05, generator=_gen(6))
    bins = compute_bins(q, y, bin_size=1000)
    direct = pair_bootstrap(bins, n_samples=400, debias=True, method="normal", generator=_gen(9))
    via_bins = ci_from_bins(bins, n_samples=400, debias=True, interval="pairs", generator=_gen(9))
    functional = calibration_error_ci(
        q, y, bin_size=1000, n_samples=400, debias=True, interval="pairs", generator=_gen(9)
    )
    metric = CalibrationError(bin_size=1000, n_samples=400, debias=True, interval="pairs", seed=9)
    metric.update(q, y)
    result = metric.compute_result()
    for other in (via_bins, functional):
        assert torch.equal(torch.stack(direct[:5]), torch.stack(other[:5]))
    assert torch.allclose(torch.stack(direct[:5]), torch.stack(result[:5]), atol=1e-3)


def test_debiased_bootstrap_interval_contains_its_estimate():
    q, y = sample_pairs(20_000, 0.3, 0.3, 0.1, generator=_gen(10))
    for method in ("normal", "percentile"):
        r = calibration_error_ci(
            q, y, bin_size=300, n_samples=500, debias=True, interval="pairs", method=method
        )
        assert r.lower < r.error < r.upper
        assert r.lower < true_calibration_error(0.3, 0.3, 0.1) < r.upper


@pytest.mark.parametrize("bin_size", [2, 3])
def test_debiased_bootstrap_of_tiny_bins_contains_its_estimate(bin_size):
    """A drawn bin of one pair cannot subtract its own label noise: it had kept it, every
    draw's square sat above its world's, and the recentred interval below the estimate
    (bins of 2: 0.016 with the interval [0, 0]; of 3: 0.047 with [0, 0.024])."""
    torch.manual_seed(0)
    q = torch.rand(6000)
    y = torch.bernoulli(q)
    r = calibration_error_ci(q, y, bin_size=bin_size, n_samples=2000, generator=_gen(0))
    assert r.lower <= r.error < r.upper


def test_streaming_one_pair_bins_interval_contains_the_estimate():
    """The sketch's bins of one pair from a cell of several score their expected plug-in
    square; their draws had subtracted the label noise instead, and the interval,
    [0.305, 0.348], missed the estimate, 0.408."""
    torch.manual_seed(0)
    q = torch.rand(6000)
    y = torch.bernoulli(q)
    metric = CalibrationError(streaming=True, resolution=1024, bin_size=1, n_samples=2000)
    metric.update(q, y)
    with pytest.warns(UserWarning):  # the coarse sketch, and the bins of one pair
        r = metric.compute_result()
    assert r.lower < r.error < r.upper


@pytest.mark.parametrize("binning", ["adaptive", "uniform"])
def test_bin_index_matches_compute_bins(binning):
    g = _gen(11)
    # Ties in q (rounded values) and empty uniform bins (values only in [0, 0.5)).
    probs = (torch.rand(5000, generator=g, dtype=torch.float64) * 50).round() / 100
    target = torch.bernoulli(probs, generator=g)
    bins = compute_bins(probs, target, binning=binning, bin_size=300, n_bins=20)
    index = bin_index(probs, target, binning=binning, bin_size=300, n_bins=20)
    count = torch.bincount(index).to(torch.float64)
    if binning == "adaptive":
        # A tie group split by a boundary counts at its mean label (DESIGN.md).
        _, tie = torch.unique(probs, return_inverse=True)
        mean = torch.zeros(int(tie.max()) + 1, dtype=torch.float64).index_add_(0, tie, target)
        target = (mean / torch.bincount(tie)).index_select(0, tie)
    freq = torch.zeros_like(count).index_add_(0, index, target) / count
    assert torch.equal(count, bins.count)
    assert torch.allclose(freq, bins.freq)


def test_auto_bin_size_rule():
    assert [auto_bin_size(n) for n in (1, 2, 1000, 10_000, 100_000, 1_000_000)] == [
        1,
        2,
        32,
        100,
        317,
        1000,
    ]
    assert all(auto_bin_size(n) ** 2 >= n > (auto_bin_size(n) - 1) ** 2 for n in range(1, 500))
    assert resolve_bin_size("auto", 10_000) == 100 and resolve_bin_size(7, 10_000) == 7
    q, y = sample_pairs(10_000, generator=_gen(12))
    auto = calibration_error(q, y, bin_size="auto", debias=False)
    assert torch.equal(auto, calibration_error(q, y, bin_size=100, debias=False))
    assert (
        len(
            calibration_error_ci(
                q, y, bin_size="auto", n_samples=10, debias=False, interval="paper"
            ).bins.count
        )
        == 100
    )
    for streaming in (False, True):
        metric = CalibrationError(bin_size="auto", streaming=streaming, debias=False)
        metric.update(q, y)
        # (the streaming sketch shares out the pairs of cut cells approximately)
        plug_in = calibration_error(q, y, bin_size="auto", debias=False)
        assert torch.allclose(metric.compute(), plug_in, atol=5e-4)


def test_cli_accepts_auto_bins_and_bootstrap(tmp_path, capsys):
    q, y = sample_pairs(5000, 0.3, 0.3, 0.05, generator=_gen(13))
    file = tmp_path / "preds.csv"
    file.write_text("prob,label\n" + "".join(f"{a},{int(b)}\n" for a, b in zip(q, y)))
    args = ["evaluate", str(file), "--bin-size", "auto", "--interval", "pairs", "--debias"]
    assert main([*args, "--samples", "200"]) == 0
    out = capsys.readouterr().out
    assert "debiased" in out and "pairs" in out and "70 adaptive bins" in out
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", str(file), "--bin-size", "big"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"interval": "groups"}, "groups= is needed"),
        ({"interval": "pairs", "groups": torch.zeros(100, dtype=torch.long)}, "groups= is needed"),
        ({"interval": "groups", "groups": torch.zeros(99, dtype=torch.long)}, "one id per"),
        ({"interval": "groups", "groups": torch.zeros(100)}, "integer ids"),
        ({"interval": "groups", "groups": [0] * 100}, "tensor of group ids"),
        ({"interval": "jackknife"}, "interval must be"),
        ({"bin_size": "big"}, "bin_size must be"),
        ({"bin_size": 0}, "bin_size must be"),
    ],
)
def test_bad_options_raise(options, message):
    probs = torch.rand(100, generator=_gen(14))
    target = torch.bernoulli(probs, generator=_gen(15))
    with pytest.raises(ValueError, match=message):
        calibration_error_ci(probs, target, n_samples=10, **options)


def test_bad_interval_options_raise_elsewhere():
    bins = compute_bins(torch.rand(50), torch.ones(50), bin_size=10)
    with pytest.raises(ValueError, match="'groups' needs the pairs"):
        ci_from_bins(bins, interval="groups")
    with pytest.raises(ValueError, match="interval must be"):
        CalibrationError(interval="documents")
    with pytest.raises(ValueError, match="bin_size must be"):
        calibration_error(torch.rand(5), torch.ones(5), bin_size="sqrt", debias=False)


def _draws_nothing(*args, **kwargs):
    raise AssertionError("drew before refusing n_samples")


_Q = torch.rand(100, generator=_gen(16), dtype=torch.float64)
_Y = torch.bernoulli(_Q, generator=_gen(17))
_BINS = compute_bins(_Q, _Y, bin_size=10)
_MANY_DRAWS = {
    "pairs": lambda n: calibration_error_ci(_Q, _Y, n_samples=n),
    "paper": lambda n: calibration_error_ci(_Q, _Y, n_samples=n, interval="paper"),
    "groups": lambda n: calibration_error_ci(_Q, _Y, n_samples=n, groups=torch.arange(100) // 5),
    "bins": lambda n: ci_from_bins(_BINS, n_samples=n),
    "compare": lambda n: compare_calibration(_Q, _Q.sqrt(), _Y, n_samples=n),
    "metric": lambda n: CalibrationError(n_samples=n),
    "comparison metric": lambda n: CalibrationComparison(n_samples=n),
    "by label": lambda n: compare_calibration_by_label(
        _Q, _Q.sqrt(), _Y, torch.arange(100) % 2, n_samples=n
    ),
    # The smooth curves' bands had been checked only for n_samples >= 2.
    "smooth curve": lambda n: smooth_reliability_curve(_Q, _Y, n_samples=n),
    "smooth curve, groups": lambda n: smooth_reliability_curve(
        _Q, _Y, n_samples=n, groups=torch.arange(100) // 5
    ),
    "smooth histogram": lambda n: smooth_curve_from_histogram(
        _Q, torch.ones_like(_Q), _Y, n_samples=n
    ),
}


def test_the_most_draws_is_public():
    """Docstrings point to MAX_DRAWS, which had not been among the module's names."""
    assert "MAX_DRAWS" in intervals.__all__


@pytest.mark.parametrize("call", _MANY_DRAWS.values(), ids=_MANY_DRAWS)
def test_more_than_the_most_draws_are_refused_before_any_is_drawn(monkeypatch, call):
    """10**12 draws had been drawn block by block, each draw's error kept, until time or
    memory ran out; the reproductions had no bound of the library's to check first."""
    monkeypatch.setattr(intervals, "_block_sizes", _draws_nothing)
    too_many = intervals.MAX_DRAWS + 1
    with pytest.raises(ValueError, match=f"n_samples must be at most {intervals.MAX_DRAWS:,}, "):
        call(too_many)
    intervals.check_draw_options(intervals.MAX_DRAWS, 0.95, "normal")  # the most is taken


@pytest.mark.parametrize("call", _MANY_DRAWS.values(), ids=_MANY_DRAWS)
def test_too_few_draws_are_said_as_the_commands_say_them(call):
    """One draw had been "n_samples must be an integer >= 2, got 1" in the library and
    "--samples must be at least 2, got 1" on the command line: one wording now."""
    from calib_metrics.cli import check_draw_count

    with pytest.raises(ValueError, match=r"^n_samples must be at least 2, got 1$"):
        call(1)
    with pytest.raises(ValueError, match=r"^--samples must be at least 2, got 1$"):
        check_draw_count("--samples", 1)
    with pytest.raises(ValueError, match=r"^n_samples must be an integer >= 2, got 2\.5$"):
        intervals.check_draws(2.5)  # another type is refused as such


def _study():
    spec = importlib.util.spec_from_file_location("coverage", ROOT / "benchmarks" / "coverage.py")
    coverage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(coverage)
    return coverage


# The study's data settings used here: Beta(0.3, 0.3), sentences of 20, ρ = 0.5.
STUDY_ARGS = argparse.Namespace(a=0.3, b=0.3, group_size=20, rho=0.5)


def test_grouped_variant_of_the_study_keeps_the_true_error():
    coverage = _study()
    for k in (0.0, 0.1):
        grouped = coverage.grouped_true_error(0.3, 0.3, k, 0.5)
        assert grouped == pytest.approx(true_calibration_error(0.3, 0.3, k), abs=1e-6)
    q, u, _ = coverage.draw_data(10_000, STUDY_ARGS, "grouped", _gen(16))
    y = coverage.labels(q, u, 0.1, "grouped")
    # Within a group, correctness is positively correlated (the point of the variant).
    correct = (y == (q > 0.5)).to(torch.float64).reshape(-1, 20)
    between = correct.mean(1).var()
    assert between > 2 * correct.var() / 20


def test_group_sum_matrix_equals_dense_sums():
    g = torch.Generator().manual_seed(8)
    n, n_bins, n_groups = 500, 7, 40
    group = torch.randint(0, n_groups, (n,), generator=g)
    index = torch.randint(0, n_bins, (n,), generator=g)
    values = [torch.ones(n), torch.rand(n, generator=g, dtype=torch.float64)]
    matrix = group_sum_matrix(group, index, n_bins, n_groups, values).to_dense()
    for v, value in enumerate(values):
        dense = torch.zeros(n_bins, n_groups, dtype=torch.float64)
        dense.index_put_((index, group), value.double(), accumulate=True)
        torch.testing.assert_close(matrix[v * n_bins : (v + 1) * n_bins], dense)


def test_study_group_draws_are_weighted_sums_of_the_groups():
    coverage = _study()
    reps, n, size, samples = 2, 600, 50, 5
    q, u, groups = coverage.draw_data(reps * n, STUDY_ARGS, "grouped", _gen(3))
    q, u, groups = q.reshape(reps, n), u.reshape(reps, n), groups.reshape(reps, n)
    order = torch.argsort(q, dim=1)
    q, u = q.gather(1, order), u.gather(1, order)
    groups = (groups - groups[:, :1]).gather(1, order)
    ys = [coverage.labels(q, u, k, "grouped") for k in (0.0, 0.1)]
    starts, ends = coverage.rank_bins(n, size)
    weights = torch.poisson(torch.ones(reps * 30, samples, dtype=torch.float64), generator=_gen(4))
    blocks = coverage.group_draws([q], ys, groups, 30, starts, ends, weights)
    count, sum_q, sum_y = (torch.cat(parts) for parts in zip(*blocks[1]))
    # Direct: every pair carries its group's weight into its rank's bin.
    bin_of_rank = torch.repeat_interleave(torch.arange(starts.numel()), ends - starts)
    for r in range(reps):
        w = weights[r * 30 + groups[r]]  # [n, S]
        for t in range(starts.numel()):
            rows = bin_of_rank == t
            torch.testing.assert_close(count[:, r, t], w[rows].sum(0))
            torch.testing.assert_close(sum_q[:, r, t], (w[rows] * q[r, rows, None]).sum(0))
            torch.testing.assert_close(sum_y[:, r, t], (w[rows] * ys[1][r, rows, None]).sum(0))
    # And the bins of sorted data match compute_bins.
    bins = coverage.sorted_bins(coverage.cumulative(q), coverage.cumulative(ys[1]), starts, ends)
    ref = compute_bins(q[1], ys[1][1], bin_size=size)
    torch.testing.assert_close(bins.freq[1], ref.freq)
    torch.testing.assert_close(bins.pred_mean[1], ref.pred_mean)


def test_study_smoke_run_writes_every_setting(tmp_path):
    coverage = _study()
    out = tmp_path / "r.json"
    argv = ["--sizes", "2000", "--reps", "4", "--samples", "40", "--target-reps", "0"]
    args = coverage.parse([*argv, "--bin-sizes", "100", "auto", "--json", str(out)])
    results = coverage.run(args)
    rows = results["rows"]
    assert len(rows) == 2 * 2 * 4  # variants × β × k
    for row in rows:
        assert row["reps"] == 4
        covs = [v for key, v in row.items() if key.startswith("cov_")]
        assert len(covs) == (12 if row["variant"] == "grouped" else 8)
        assert all(0 <= c <= 1 for c in covs)
    assert "Coverage summary" in coverage.render(results)


@pytest.mark.parametrize("debias", [False, True])
@pytest.mark.parametrize("method", ["normal", "percentile"])
def test_group_bootstrap_with_few_groups_leaves_empty_draws_out(debias, method):
    # With 2 groups, e^-2 = 14% of Poisson draws give both weight 0 (an empty draw).
    g = _gen(21)
    probs = torch.rand(400, generator=g, dtype=torch.float64)
    target = torch.bernoulli(probs, generator=g)
    groups = torch.arange(400) // 200
    # The group bootstrap itself (calibration_error_ci gives no interval below 10 groups).
    from calib_metrics.functional.calibration import bins_and_index
    from calib_metrics.functional.intervals import group_bootstrap

    bins, index = bins_and_index(probs, target, binning="adaptive", bin_size=50, n_bins=15)
    result = group_bootstrap(
        probs, target, groups, bins, index, n_samples=500, debias=debias, method=method,
        generator=g,
    )  # fmt: skip
    values = torch.stack([result.mean, result.std, result.lower, result.upper])
    assert torch.isfinite(values).all()
    assert result.lower <= result.upper


def test_study_pools_runs_of_one_setting(tmp_path):
    coverage = _study()
    base = {"variant": "iid", "k": 0.1, "n": 1000, "beta": "auto", "truth": 0.07, "samples": 40}
    runs = [
        {**base, "reps": 100, "cov_pairs_db_norm": 0.9, "plugin_rmse": 0.3, "plugin_bias": 0.1},
        {**base, "reps": 300, "cov_pairs_db_norm": 1.0, "plugin_rmse": 0.1, "plugin_bias": -0.1},
    ]
    paths = []
    for i, row in enumerate(runs):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps({"config": {}, "rows": [row]}))
    (row,) = coverage.merge([str(p) for p in paths])["rows"]
    assert row["reps"] == 400 and row["truth"] == 0.07 and row["k"] == 0.1
    assert row["cov_pairs_db_norm"] == pytest.approx(0.975)
    assert row["plugin_bias"] == pytest.approx(-0.05)
    assert row["plugin_rmse"] == pytest.approx(math.sqrt((100 * 0.09 + 300 * 0.01) / 400))


@pytest.mark.parametrize("mode", ["one_vs_rest", "classwise"])
def test_the_few_pairs_warning_names_the_callers_line(mode) -> None:
    """It had named calib_metrics/functional/calibration.py (a line of the library)."""
    import warnings

    from calib_metrics.functional import calibration_error_ci

    probs = torch.softmax(torch.rand(3, 3, generator=torch.Generator().manual_seed(0)), -1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calibration_error_ci(probs, torch.tensor([0, 1, 2]), mode=mode)  # 9 pairs, 3 a class
    said = [w for w in caught if "at least 10 are needed" in str(w.message)]
    assert said and all(w.filename == __file__ for w in said)


def _words(text: str) -> str:
    return " ".join(text.split())


def _method_help() -> str:
    """``calib-metrics evaluate --help``'s text for ``--method``, as one line."""
    from calib_metrics.cli import build_parser

    evaluate = next(
        a for a in build_parser(paper=False)._actions if isinstance(a, argparse._SubParsersAction)
    ).choices["evaluate"]
    action = next(a for a in evaluate._actions if "--method" in a.option_strings)
    return _words(evaluate._get_formatter()._expand_help(action))


def test_every_description_of_the_normal_ends_is_the_shared_one():
    """The help had said "error ∓ z·std of the draws" and the docstrings "mean ∓ z·std":
    each true of one estimator only (the plug-in bootstrap's, Algorithm 2's), neither of
    the default debiased bootstrap's. Every description now says the one wording."""
    wording = _words(intervals.NORMAL_ENDS)
    assert wording in _method_help()
    assert wording in _words(calibration_error_ci.__doc__)
    assert wording in _words(CalibrationError.__doc__)
    assert wording in _words((ROOT / "README.md").read_text())
    for wrong in ("mean ∓ z·std, the paper's", "error ∓ z·std of the draws, or"):
        assert wrong not in _method_help() + calibration_error_ci.__doc__
        assert wrong not in CalibrationError.__doc__


def test_the_normal_ends_are_what_the_shared_wording_says():
    """Each of the wording's three recipes rebuilds the ends it describes: from the result's
    mean and std (Algorithm 2), its error and std (the plug-in bootstrap), and from the
    mean m and std s of the recentred squares (the debiased bootstrap), where the result's
    own mean and std do not give them."""
    z = intervals.normal_quantile(0.95)
    q, y = sample_pairs(4000, 0.3, 0.3, 0.05, generator=_gen(3))
    bins = compute_bins(q, y, bin_size=100)
    options = {"n_samples": 2000, "method": "normal"}

    paper = ci_from_bins(bins, interval="paper", debias=False, generator=_gen(1), **options)
    assert paper.lower.item() == pytest.approx(
        max(0.0, float(paper.mean - z * paper.std)), abs=1e-12
    )
    assert paper.upper.item() == pytest.approx(float(paper.mean + z * paper.std), abs=1e-12)
    # (the draws lie above the plug-in: the error ∓ z·std would be another interval)
    assert abs(paper.upper - (paper.error + z * paper.std)) > 1e-3

    plugin = ci_from_bins(bins, interval="pairs", debias=False, generator=_gen(1), **options)
    assert plugin.lower.item() == pytest.approx(
        max(0.0, float(plugin.error - z * plugin.std)), abs=1e-12
    )
    assert plugin.upper.item() == pytest.approx(float(plugin.error + z * plugin.std), abs=1e-12)
    assert abs(plugin.upper - (plugin.mean + z * plugin.std)) > 1e-3

    debiased = ci_from_bins(bins, interval="pairs", debias=True, generator=_gen(1), **options)
    draws = intervals.draw_statistics(
        bins, intervals.pair_draws(bins, 2000, _gen(1)), debias=True, world="shrunk"
    )
    m, s = draws.values.mean(), draws.values.std()
    assert draws.square > 0  # (no widening by −D here)
    assert debiased.lower.item() == pytest.approx(math.sqrt(max(0.0, float(m - z * s))), abs=1e-12)
    assert debiased.upper.item() == pytest.approx(math.sqrt(float(m + z * s)), abs=1e-12)
    # The result's mean and std are of the roots: neither form rebuilds these ends.
    for centre in (debiased.error, debiased.mean):
        assert abs(debiased.lower - (centre - z * debiased.std)) > 1e-4
        assert abs(debiased.upper - (centre + z * debiased.std)) > 1e-4


def test_the_json_rebuilds_the_normal_ends_as_the_readme_says(tmp_path, capsys):
    """README, "Trustworthy intervals": ``--interval paper``'s ends from the JSON's mean and
    std, ``--no-debias``'s bootstrap ends from its calib_err and std."""
    z = intervals.normal_quantile(0.95)
    q, y = sample_pairs(3000, 0.3, 0.3, 0.05, generator=_gen(5))
    file = tmp_path / "preds.csv"
    file.write_text("prob,label\n" + "".join(f"{a},{int(b)}\n" for a, b in zip(q, y)))
    base = ["evaluate", str(file), "--json", "--samples", "500"]
    for options, centre in (
        (["--paper", "--bin-size", "100"], "mean"),
        (["--no-debias"], "calib_err"),
    ):
        assert main([*base, *options]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["lower"] == pytest.approx(max(0.0, d[centre] - z * d["std"]), abs=1e-12)
        assert d["upper"] == pytest.approx(d[centre] + z * d["std"], abs=1e-12)
