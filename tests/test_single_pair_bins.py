"""A debiased error over bins of one pair says it is biased up: one label has no variance
to subtract, so perfectly calibrated pairs in bins of one scored the plug-in 0.41."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch

from calib_metrics import CalibrationError

G = torch.Generator().manual_seed(0)
Q = torch.rand(2000, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G).long()


def _warnings(**options) -> list[str]:
    metric = CalibrationError(**options)
    metric.update(Q, Y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.compute()
        metric.compute_result()
    return [str(w.message) for w in caught if "hold one pair" in str(w.message)]


@pytest.mark.parametrize("options", [{"bin_size": 1}, {"binning": "uniform", "n_bins": 5000}])
def test_debiased_bins_of_one_pair_warn_once(options) -> None:
    found = _warnings(**options)
    assert len(found) == 1
    assert "bias the error up" in found[0]


@pytest.mark.parametrize(
    "options",
    [
        {"bin_size": 1, "debias": False},  # the plug-in error has nothing to subtract
        {"bin_size": 2},
        {"binning": "uniform", "n_bins": 15},
    ],
)
def test_no_warning_without_one_pair_debiased_bins(options) -> None:
    assert _warnings(**options) == []


def test_the_command_line_says_it_in_one_line(tmp_path) -> None:
    path = tmp_path / "p.csv"
    rows = "\n".join(f"{q:.6f},{y}" for q, y in zip(Q[:300].tolist(), Y[:300].tolist()))
    path.write_text("prob,label\n" + rows + "\n")
    command = [sys.executable, "-m", "calib_metrics.cli", "evaluate", str(path)]
    done = subprocess.run(
        [*command, "--binning", "uniform", "--n-bins", "200", "--samples", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "hold one pair" in line]
    assert len(lines) == 1 and lines[0].startswith("calib-metrics: warning:")


def test_streaming_bins_of_one_pair_keep_their_plug_in_square_as_the_warning_says() -> None:
    # Past the buffer (3,000 rows, 2,048 kept at 1,024 cells) the sketch's one-pair bins
    # come from shared cells. They had subtracted the cells' label noise (0.02 against
    # the plug-in's 0.41) while warning that they keep their plug-in square.
    g = torch.Generator().manual_seed(1)
    q = torch.rand(3000, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    streaming = CalibrationError(streaming=True, resolution=1024, bin_size=1)
    streaming.update(q, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        error = streaming.compute()
    said = [str(w.message) for w in caught if "hold one pair" in str(w.message)]
    assert len(said) == 1 and "keep their plug-in square" in said[0]
    plug_in = CalibrationError(bin_size=1, debias=False)
    plug_in.update(q, y)
    assert abs(error.item() - plug_in.compute().item()) < 1e-3


def test_one_pair_bins_inside_a_cut_tie_group_are_not_said_to_keep_their_square() -> None:
    """Bins of one pair inside a tie group its boundaries cut count at the group's mean
    label, whose variance the debiased error subtracts (0.1638, not the plug-in 0.2000):
    "20 of 20 bins hold one pair ... keep their plug-in square" had been said of them."""
    from calib_metrics.functional import calibration_error

    tied, y = torch.full((20,), 0.3), torch.tensor([0, 1] * 10)
    metric = CalibrationError(bin_size=1)
    metric.update(tied, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        error = metric.compute()
    assert not [w for w in caught if "hold one pair" in str(w.message)]
    assert (
        round(error.item(), 4)
        == 0.1638
        != round(calibration_error(tied, y, bin_size=1, debias=False).item(), 4)
    )
    half_tied = torch.cat([tied[:10], torch.linspace(0.5, 0.7, 10)])  # 10 bins of their own
    metric = CalibrationError(bin_size=1)
    metric.update(half_tied, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.compute()
    said = [str(w.message) for w in caught if "hold one pair" in str(w.message)]
    assert len(said) == 1 and "10 of 20 bins hold one pair (10 of 20 pairs)" in said[0]
