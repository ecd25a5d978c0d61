"""``interval="paper"`` (Algorithm 2, whose draws DESIGN.md fixes) says what its interval
leaves unsaid: with the debiased error its draws centre near the plug-in estimate (an
interval of [0.024, 0.069] beside an error of 0 on calibrated data had come without a
word), and where a bin boundary cuts a tie group of mixed labels it redraws the group's
bins independently (500 equal q: the interval moved with the bin size)."""

from __future__ import annotations

import warnings

import pytest
import torch
from cli_runs import run_cli

from calib_metrics import CalibrationError
from calib_metrics.functional import Bins, calibration_error_ci, ci_from_bins
from calib_metrics.functional.errors import CountedWarning

CENTRE = "Algorithm 2's draws (each debiased) centre near the plug-in estimate"
CUT = "pairs lie in tie groups (pairs of one probability, mixed labels) that bin boundaries cut"


def _calibrated(n: int = 3000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    return q, torch.bernoulli(q, generator=g).long()


def _tied(n_tied: int = 500) -> tuple[torch.Tensor, torch.Tensor]:
    """Calibrated pairs with ``n_tied`` of them at q = 0.3, their labels mixed."""
    q, y = _calibrated()
    q[:n_tied] = 0.3
    y[:n_tied] = (torch.arange(n_tied) % 10 < 3).long()
    return q, y


def _said(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught]


def _ci(q, y, **options):
    generator = torch.Generator().manual_seed(0)
    return calibration_error_ci(q, y, n_samples=200, generator=generator, **options)


@pytest.mark.parametrize("mode", ["one_vs_rest", "classwise"])
def test_debiased_paper_draws_are_said_to_centre_near_the_plug_in(mode) -> None:
    q, y = _calibrated()
    probs, target = (q, y) if mode == "one_vs_rest" else (torch.stack([1 - q, q], -1), y)
    said = _said(lambda: _ci(probs, target, interval="paper", mode=mode))
    (text,) = {s for s in said if CENTRE in s}  # classwise: the same text for each class
    assert "debias=False gives the paper's method" in text
    assert "interval='pairs' an interval of the debiased estimate" in text


@pytest.mark.parametrize(
    "options",
    [
        {"interval": "paper", "debias": False},
        {"interval": "paper", "norm": "l1"},  # no debiased form: the plug-in's draws
        {"interval": "pairs"},
    ],
)
def test_no_centre_warning_where_the_draws_are_the_estimates(options) -> None:
    q, y = _calibrated()
    assert not [s for s in _said(lambda: _ci(q, y, **options)) if CENTRE in s]


def test_ci_from_bins_warns_of_debiased_paper_draws_too() -> None:
    t = torch.tensor
    bins = Bins(t([0.2, 0.7]), t([0.1, 0.8]), t([400.0, 400.0]))
    generator = torch.Generator().manual_seed(0)
    said = _said(lambda: ci_from_bins(bins, n_samples=100, debias=True, generator=generator))
    assert [s for s in said if CENTRE in s]
    assert not [s for s in _said(lambda: ci_from_bins(bins, n_samples=100)) if CENTRE in s]


def test_cut_tie_groups_are_counted_and_pairs_recommended() -> None:
    q, y = _tied()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _ci(q, y, interval="paper", debias=False)
    (cut,) = [w for w in caught if CUT in str(w.message)]
    assert issubclass(cut.category, CountedWarning) and issubclass(cut.category, UserWarning)
    assert str(cut.message).startswith("interval='paper': 500 pairs lie in tie groups")
    assert "interval='pairs' draws a cut group once" in str(cut.message)
    assert cut.filename == __file__  # the user's line, not the library's


def _without_material_ties(data: str) -> tuple[torch.Tensor, torch.Tensor]:
    q, y = _tied() if data == "one label" else _calibrated()
    if data == "one label":
        y[:500] = 1
    if data == "rounded":
        q = (q * 1e4).round() / 1e4
    if data == "two tied":  # across the second boundary of bins of 55, and of bins of 2
        order = q.argsort()
        q[order[110]] = q[order[109]]
        y[order[109]], y[order[110]] = 0, 1
    return q, y


@pytest.mark.parametrize(
    ("data", "options"),
    [
        ("tied", {"bin_size": 3000}),  # the group in one bin: not cut
        ("tied", {"binning": "uniform"}),  # equal q share a bin
        ("tied", {"interval": "pairs"}),  # the draws share a cut group
        ("one label", {}),  # a group of one label holds it in every draw
        ("two tied", {}),  # 2 pairs of one q: a bin of 55 moves by 1%
        # ... and a bin of 2 by a third, but such bins hold 0.1% of the pairs (the demo's)
        ("two tied", {"bin_size": 2}),
        ("rounded", {}),  # 4 decimals: each bin of 55 moves by 2% at most
        ("untied", {}),
    ],
)
def test_no_cut_tie_warning_where_no_cut_group_matters(data, options) -> None:
    q, y = _tied() if data == "tied" else _without_material_ties(data)
    options = {"interval": "paper", "debias": False} | options
    assert not [s for s in _said(lambda: _ci(q, y, **options)) if CUT in s]


def test_the_cut_pairs_counted_are_those_of_every_mixed_group() -> None:
    # The 2 tied pairs of a bin of 55 add to the count once a large group is cut too.
    q, y = _tied()
    last = len(q) - int(_ci(q, y).bins.count[-1])  # the rank the last bin starts at
    order = q.argsort(stable=True)
    q[order[last]] = q[order[last - 1]]  # a tie across that boundary, far from q = 0.3
    y[order[last - 1]], y[order[last]] = 0, 1
    said = _said(lambda: _ci(q, y, interval="paper", debias=False))
    assert [s for s in said if s.startswith("interval='paper': 502 pairs lie in tie")]


def test_the_metric_says_each_warning_once_whatever_the_epoch() -> None:
    # A callback computes the metric every epoch: the warnings came once per compute.
    metric = CalibrationError(interval="paper", n_samples=100, seed=0)
    said = []
    for epoch in range(3):
        metric.reset()
        q, y = _tied(300 + 50 * epoch)  # the count of cut pairs changes every epoch
        metric.update(q, y)
        said += _said(metric.compute_result)
    assert len([s for s in said if CENTRE in s]) == 1
    (cut,) = [s for s in said if CUT in s]
    assert cut.startswith("CalibrationError: interval='paper': 300 pairs")


def test_evaluate_keeps_its_note_and_says_nothing_twice(tmp_path, capsys) -> None:
    q, y = _tied()
    path = tmp_path / "tied.csv"
    rows = "".join(f"{a:.6f},{b}\n" for a, b in zip(q.tolist(), y.tolist(), strict=True))
    path.write_text("prob,label\n" + rows)
    code, out, err = run_cli(capsys, "evaluate", path, "--interval", "paper", "--samples", "200")
    assert code == 0, err
    assert "note: CalibErr lies below its interval" in out
    assert CENTRE not in err  # the note says it, in the command's words
    (line,) = err.splitlines()
    assert line.startswith("calib-metrics: warning: --interval paper: 500 pairs lie in tie")
    assert "--interval pairs draws a cut group once" in line


def test_no_word_of_an_interval_that_too_few_pairs_leave_out() -> None:
    """Eight pairs give no interval (NaN ends), yet both warnings had spoken of one."""
    q = torch.full((8,), 0.3, dtype=torch.float64)
    y = torch.tensor([1, 0, 0, 1, 0, 0, 0, 1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = calibration_error_ci(q, y, interval="paper", bin_size=2, n_samples=50)
    said = [str(w.message) for w in caught]
    assert r.lower.isnan() and len(said) == 1 and "8 pairs" in said[0], said
