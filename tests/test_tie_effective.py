"""The debias term of a bin that a tie group's boundary cuts: n_eff = n²/Σ_g c_g²/N_g.

A bin holding the edge of a tie group beside other values gives the group's part the
group's mean label (the tie rule), so its frequency is less noisy than a mean of its
own n labels. Before, only runs of whole bins inside one group were caught, and the
debiased square of calibrated bfloat16 outputs averaged -1.5e-4 (47 s.e. below 0 at
10⁵ pairs, 100 data sets; -1.6e-4 ± 2.1e-5 on this file's 40 data sets of 2·10⁴).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch

from calib_metrics import CalibrationError, cli
from calib_metrics.functional import (
    adaptive_binning,
    calibration_error,
    calibration_error_ci,
    sketch,
    uniform_binning,
)
from calib_metrics.functional import binning as binning_module
from calib_metrics.functional.binning import Bins
from calib_metrics.functional.calibration import bins_and_index, compute_bins, error_from_bins
from calib_metrics.functional.intervals import (
    debiased_square,
    draw_statistics,
    effective_samples,
    group_draws,
    pair_draws,
)


def _brute_effective(q: torch.Tensor, bin_size: int) -> torch.Tensor:
    """n²/V per adaptive bin by enumeration: V = Σ over the values in the bin of c²/N."""
    q = torch.sort(q.double()).values
    n = q.numel()
    n_bins = max(1, n // bin_size)
    bin_of = torch.clamp(torch.arange(n) // bin_size, max=n_bins - 1)
    out = []
    for b in range(n_bins):
        in_bin = q[bin_of == b]
        spread = sum(
            float((in_bin == v).sum()) ** 2 / float((q == v).sum()) for v in torch.unique(in_bin)
        )
        out.append(in_bin.numel() ** 2 / spread)
    return torch.tensor(out, dtype=torch.float64)


def _signed_square(bins: Bins) -> float:
    gap = bins.pred_mean - bins.freq
    return debiased_square(gap, bins.freq, bins.count, effective_samples(bins)).item()


HAND_MADE = [
    # A group of 5 split 2/3 between two bins.
    ([0.1, 0.2, 0.4, 0.4, 0.4, 0.4, 0.4, 0.6], 4),
    # A group spanning three bins (1 / 3 / 2 of its pairs).
    ([0.1, 0.2, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.7], 3),
    # Groups at both edges of the middle bin.
    ([0.1, 0.3, 0.3, 0.3, 0.5, 0.7, 0.7, 0.7, 0.9], 3),
]


@pytest.mark.parametrize(("q", "bin_size"), HAND_MADE)
def test_effective_counts_match_enumeration_on_hand_made_groups(q, bin_size) -> None:
    q = torch.tensor(q, dtype=torch.float64)
    y = (torch.arange(q.numel()) % 2).double()
    bins = adaptive_binning(q, y, bin_size)
    torch.testing.assert_close(effective_samples(bins), _brute_effective(q, bin_size))
    assert _brute_effective(q, bin_size).gt(bins.count).any()  # a cut that matters


def _grid_pairs(dtype: torch.dtype) -> torch.Tensor:
    """3000 q: 60 grid values (ties) and 500 uniform ones, in ``dtype``."""
    g = torch.Generator().manual_seed(3)
    q = (torch.randint(0, 60, (3000,), generator=g).double() / 64 + 1 / 128).to(dtype)
    q[:500] = torch.rand(500, generator=g, dtype=torch.float64).to(dtype)
    return q


def _dense_pairs(dtype: torch.dtype) -> torch.Tensor:
    """3000 float32 q on 600 consecutive floats above 0.3: the first level's cells hold
    several values each, so the cut ones are refined (``_refine``)."""
    g = torch.Generator().manual_seed(5)
    return (0.3 + torch.randint(0, 600, (3000,), generator=g).double() * 2**-25).to(dtype)


@pytest.mark.parametrize(
    ("make", "dtype"),
    [
        (_grid_pairs, torch.float32),
        (_grid_pairs, torch.float64),
        (_grid_pairs, torch.bfloat16),
        (_dense_pairs, torch.float32),
    ],
)
@pytest.mark.parametrize("bin_size", [7, 40])
def test_radix_select_records_the_cut_groups(monkeypatch, make, dtype, bin_size) -> None:
    # Below _SORT_BELOW pairs the binning sorts; lowered, the radix select (its cells of
    # one value, and its refining levels) gives the cut groups.
    q = make(dtype)
    y = torch.bernoulli(torch.full((3000,), 0.3, dtype=torch.float64), generator=torch.Generator())
    want = _brute_effective(q, bin_size)
    sorted_bins = adaptive_binning(q, y, bin_size)
    refined = []
    refine = binning_module._refine
    monkeypatch.setattr(binning_module, "_SORT_BELOW", 64)
    monkeypatch.setattr(binning_module, "_refine", lambda *a: refined.append(1) or refine(*a))
    radix_bins = adaptive_binning(q, y, bin_size)
    torch.testing.assert_close(effective_samples(sorted_bins), want)
    torch.testing.assert_close(effective_samples(radix_bins), want)
    assert refined or make is not _dense_pairs


def test_debias_term_is_unbiased_by_exact_enumeration() -> None:
    # Labels Bernoulli(p) with one p: E[debiased square] = Σ w (q̂ − p)² exactly when
    # n_eff is right. A group of 5 split 1/3/1 over three bins of 3.
    q = torch.tensor([0.1, 0.2, 0.4, 0.4, 0.4, 0.4, 0.4, 0.6, 0.7], dtype=torch.float64)
    p = 0.3
    expected, expected_runs = 0.0, 0.0
    for labels in itertools.product((0.0, 1.0), repeat=q.numel()):
        y = torch.tensor(labels, dtype=torch.float64)
        weight = p ** y.sum().item() * (1 - p) ** (q.numel() - y.sum().item())
        bins = adaptive_binning(q, y, 3)
        expected += weight * _signed_square(bins)
        expected_runs += weight * _signed_square(Bins(*bins))  # bare: the run heuristic
    truth = ((bins.pred_mean - p) ** 2).mean().item()
    assert expected == pytest.approx(truth, abs=1e-12)
    assert expected_runs < truth - 1e-3  # the old term over-subtracts


def test_bfloat16_calibrated_debiased_square_is_unbiased() -> None:
    # 40 calibrated data sets of 2·10⁴ bfloat16 outputs (tie groups ~ a bin's size).
    g = torch.Generator().manual_seed(0)
    squares = []
    for _ in range(40):
        q = torch.rand(20_000, generator=g).to(torch.bfloat16)
        y = (torch.rand(20_000, generator=g) < q.double()).double()
        squares.append(_signed_square(compute_bins(q, y, bin_size="auto")))
    squares = torch.tensor(squares)
    se = squares.std() / squares.numel() ** 0.5
    # Before: -1.64e-4 with s.e. 2.1e-5 (7.7 s.e. below 0); now -7.5e-6.
    assert abs(squares.mean()) < 3 * se


def test_uniform_bins_cut_no_group() -> None:
    q = (torch.randint(0, 10, (500,), generator=torch.Generator().manual_seed(1)) / 10).double()
    y = (torch.arange(500) % 3 == 0).double()
    bins = uniform_binning(q, y, 10)
    torch.testing.assert_close(effective_samples(bins), bins.count)
    assert error_from_bins(bins, debias=True) == error_from_bins(Bins(*bins), debias=True)


def test_bins_are_still_three_tuples_and_print_as_bins() -> None:
    bins = adaptive_binning(torch.tensor([0.1, 0.1, 0.1, 0.9]), torch.tensor([0, 1, 0, 1]), 2)
    assert len(tuple(bins)) == 3 and isinstance(bins, Bins) and repr(bins).startswith("Bins(")


def _bf16_pairs(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g).to(torch.bfloat16)
    return q, (torch.rand(n, generator=g) < q.double()).long()


def test_streaming_sketch_gives_the_exact_effective_counts_on_tied_data() -> None:
    # Every bfloat16 value has a sketch cell of its own: the cut cells are tie groups.
    q, y = _bf16_pairs(20_000)
    state = sketch.empty()
    sketch.accumulate(state, q, y)
    streamed, exact = sketch.to_bins(state, 142), compute_bins(q, y, bin_size=142)
    torch.testing.assert_close(effective_samples(streamed), effective_samples(exact))
    torch.testing.assert_close(
        error_from_bins(streamed, debias=True), calibration_error(q, y, bin_size=142)
    )


def test_metric_exact_streaming_and_functional_agree_on_tied_data() -> None:
    q, y = _bf16_pairs(6000, seed=1)
    want = calibration_error(q, y)
    exact, streaming = CalibrationError(), CalibrationError(streaming=True, resolution=1024)
    buffered = CalibrationError(streaming=True)  # below its buffer: the pairs themselves
    for metric in (exact, streaming, buffered):
        for part in range(3):
            metric.update(q[part::3], y[part::3])
    torch.testing.assert_close(exact.compute(), want)
    torch.testing.assert_close(buffered.compute(), want)
    # 6000 pairs fold into a 1024-cell sketch; bfloat16 values share its cells, so it is
    # within the streaming tolerance only.
    assert streaming.compute().item() == pytest.approx(want.item(), abs=2.5e-3)
    result = exact.compute_result()
    torch.testing.assert_close(error_from_bins(result.bins, debias=True), want)


def test_cli_reports_the_functional_error_on_tied_data(tmp_path: Path, capsys) -> None:
    q, y = _bf16_pairs(3000, seed=2)
    path = tmp_path / "preds.csv"
    rows = [f"{float(a)!r},{int(b)}" for a, b in zip(q.double(), y, strict=True)]
    path.write_text("prob,label\n" + "\n".join(rows) + "\n")
    assert cli.main(["evaluate", str(path), "--json", "--samples", "200"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["calib_err"] == pytest.approx(calibration_error(q.double(), y).item(), rel=1e-12)


def test_pair_draws_move_a_cut_group_once() -> None:
    # A group of 300 at q = 0.5 cut 100/200 between two bins of 200 (the first bin's
    # other 100 pairs untied): the draws' frequency spread is that of n_eff labels.
    q = torch.cat([torch.linspace(0.1, 0.3, 100, dtype=torch.float64), torch.full((300,), 0.5)])
    y = (torch.arange(400) % 2).double()
    bins = adaptive_binning(q, y, 200)
    n_eff = effective_samples(bins)
    assert n_eff.tolist() == pytest.approx([40000 / (100 + 100**2 / 300), 300.0])
    block = next(pair_draws(bins, 4000, torch.Generator().manual_seed(0)))
    spread = block.freq.std(0)
    torch.testing.assert_close(spread, (0.25 / n_eff).sqrt(), rtol=0.06, atol=0)
    # The recentred roots of calibrated-by-construction draws centre on 0.
    draws = draw_statistics(bins, [block], world="zero")
    roots = draws.square - draws.values
    assert abs(roots.mean()) < 3 * roots.std() / 4000**0.5


def test_interval_of_tied_data_is_the_functional_result() -> None:
    q, y = _bf16_pairs(5000, seed=3)
    r = calibration_error_ci(q, y, n_samples=300, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(r.error, calibration_error(q, y))
    torch.testing.assert_close(error_from_bins(r.bins, debias=True), r.error)


def _all_freqs(blocks) -> torch.Tensor:
    """The frequencies of all the generator's draws, its slices joined."""
    return torch.cat([block.freq for block in blocks])


def test_pair_and_group_draws_move_tied_bins_as_the_tie_rule_counts_them() -> None:
    # Predictions rounded to 0.1: 11 tie groups of ~400, bins of 64. Both generators
    # (pairs; groups of one pair each) give every bin the spread Σ_g (c_g/n)² p_g(1 −
    # p_g)/N_g of its groups' mean labels; group draws that moved each pair in its own
    # bin gave a cut group's bins that of their own n labels.
    g = torch.Generator().manual_seed(4)
    q = torch.rand(4000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    q = torch.round(q * 10) / 10
    bins, index = bins_and_index(q, y, binning="adaptive", bin_size="auto", n_bins=15)
    value = torch.unique(q, return_inverse=True)[1]
    size = torch.bincount(value).double()
    mean = torch.bincount(value, weights=y) / size
    part = torch.zeros(bins.count.numel(), size.numel(), dtype=torch.float64)
    part.index_put_((index, value), torch.ones(4000, dtype=torch.float64), accumulate=True)
    want = ((part / bins.count[:, None]) ** 2 * mean * (1 - mean) / size).sum(1).sqrt()
    pairs = _all_freqs(pair_draws(bins, 3000, torch.Generator().manual_seed(0)))
    groups = _all_freqs(group_draws(q, y, torch.arange(4000), index, bins.count.numel(), 3000, g))
    assert pairs.shape[0] == groups.shape[0] == 3000
    for freq in (pairs, groups):
        torch.testing.assert_close(freq.std(0), want, rtol=0.1, atol=0)
