"""A folded streaming sketch with too few cells per bin says so, once, with what to do.

At 10⁹ calibrated pairs and β = 5000 the default sketch (2¹⁸ cells, 1.3 occupied cells
per bin) gave a debiased error 4.9e-4 below the exact mode's, and 2²² cells 1.0e-4
(docs/streaming.md, benchmarks/drift_resolution.py); the metric cannot know N in
advance, so it warns at compute() when the cells are too coarse for the bins.
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import sketch


def _calibrated(n: int, seed: int = 0, classes: int | None = None):
    g = torch.Generator().manual_seed(seed)
    if classes is None:
        q = torch.rand(n, generator=g)
        return q, torch.bernoulli(q, generator=g).long()
    probs = torch.softmax(3 * torch.randn(n, classes, generator=g), -1)
    return probs, torch.multinomial(probs, 1, generator=g).squeeze(1)


def _coarse_warnings(metric: CalibrationError, calls: int = 2) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            metric.compute()
    return [str(w.message) for w in caught if "cells per bin (bins of" in str(w.message)]


def test_a_coarse_folded_sketch_warns_once_with_the_resolution_that_would_do():
    metric = CalibrationError(streaming=True, resolution=64, bin_size=500)
    metric.update(*_calibrated(10_000))  # 10,000 rows > 2 * 64: folded into the sketch
    messages = _coarse_warnings(metric)
    assert len(messages) == 1
    # 37 occupied (logit-spaced) cells, 3 of them one pair each at the far ends (one
    # value: not counted); a boundary falls in a cell of about 830 pairs (the middle
    # cells are the largest): 0.60 cells per bin of 500.
    assert "0.60 cells per bin (bins of 500 pairs; a bin boundary falls in a cell" in messages[0]
    assert "34 of 64 cells hold several values" in messages[0]
    # The bins are what the sketch draws: the diagram shows them, the interval resamples
    # them (the warning had spoken of the error alone, while the one-vs-rest interval of
    # a coarse sketch, [0.0484, 0.0494], left out the exact error 0.0527).
    assert "the bins' label sums there (the reliability diagram's frequencies)" in messages[0]
    assert "which its interval, resampled from these bins, leaves out" in messages[0]
    named = int(messages[0].split("pass resolution=")[1].split(" ")[0])
    followed = CalibrationError(streaming=True, resolution=named, bin_size=500)
    followed.update(*_calibrated(10_000))
    assert _coarse_warnings(followed) == [] and followed._folded


def test_a_fine_enough_sketch_the_exact_mode_and_the_buffer_do_not_warn():
    q, y = _calibrated(10_000)
    fine = CalibrationError(streaming=True, resolution=1024, bin_size=500)
    exact = CalibrationError(bin_size=50)
    buffered = CalibrationError(streaming=True, resolution=8192, bin_size=50)  # kept exactly
    for metric in (fine, exact, buffered):
        metric.update(q, y)
        assert _coarse_warnings(metric) == []


def test_per_class_sketches_warn_once_for_the_metric():
    metric = CalibrationError(
        num_classes=3, average="none", streaming=True, resolution=64, bin_size=300
    )
    metric.update(*_calibrated(10_000, classes=3))
    assert len(_coarse_warnings(metric)) == 1


@pytest.mark.parametrize("bin_size", [1000, 5000])
def test_the_rule_counts_occupied_cells_not_the_grid(bin_size):
    # 10⁶ pairs in 100 occupied cells of 2¹⁸, each of several values: 1000 or 200 bins.
    state = sketch.empty(sketch.num_cells())
    cells = torch.arange(100) * 2000
    state.count[cells] = 10_000.0
    state.sum_r[cells] = 10_000.0 * 0.1
    state.sum_r2[cells] = 10_000.0 * (0.1**2 + 1e-6)  # a spread of 1e-3 around 0.1
    state.low[cells], state.high[cells] = 0.099, 0.101
    assert sketch.coarse_sketch_message(state, bin_size) is not None


def test_tied_predictions_do_not_warn_since_the_sketch_shares_them_exactly():
    # q rounded to 0.01 (101 values) in a sketch of 4096 cells: every cell holds one
    # value, a tie group that the folded sketch shares out exactly as the exact mode
    # does, so the streaming error is the exact one and no resolution would change it.
    g = torch.Generator().manual_seed(0)
    q = (torch.rand(20_000, generator=g, dtype=torch.float64) * 100).round() / 100
    y = torch.bernoulli(q, generator=g).long()
    streaming = CalibrationError(streaming=True, resolution=4096)  # buffer: 8192 rows
    exact = CalibrationError()
    for metric in (streaming, exact):
        metric.update(q, y)
    assert _coarse_warnings(streaming) == []
    torch.testing.assert_close(streaming.compute(), exact.compute(), rtol=1e-9, atol=1e-12)
    constant = CalibrationError(streaming=True, resolution=64)
    constant.update(torch.full((1000,), 0.3), y[:1000])
    assert _coarse_warnings(constant) == []


def _float32_uniform_sketches(n: float, resolutions: list[int]) -> dict[int, sketch.Sketch]:
    """The sketches ``n`` pairs of float32 ``torch.rand`` fold into (the 10⁹ runs' data),
    one data set at every resolution, built value by value: a Poisson count for each of
    the 2²⁴ values k/2²⁴ it draws, so a cell near the ends, narrower than 2⁻²⁴, holds one
    value (a tie group, not counted)."""
    g = torch.Generator().manual_seed(0)
    states = {r: sketch.empty(r) for r in resolutions}
    for start in range(0, 2**24, 2**22):  # in blocks, to stay small
        q = torch.arange(start, start + 2**22, dtype=torch.float64) / 2**24
        count = torch.poisson(torch.full_like(q, n / 2**24), generator=g)
        drawn = count > 0
        for resolution, state in states.items():
            cell = sketch.cell_index(q, resolution)
            state.count.index_add_(0, cell, count)
            state.low.scatter_reduce_(0, cell[drawn], q[drawn], "amin")
            state.high.scatter_reduce_(0, cell[drawn], q[drawn], "amax")
    return states


def test_at_the_documented_1e9_drift_the_warning_names_two_to_the_21():
    """docs/streaming.md "Drift at 10⁹": 10⁹ float32 uniform pairs, β = 5000. A boundary
    of the default sketch falls in a cell of about 20,000 pairs: 0.25 cells per bin, the
    run's −4.9e-4 gap; 2²⁰ cells (0.98) had −3.5e-4, 2²¹ (1.94) −1.7e-4 and 2²² (3.8)
    −1.0e-4. β = "auto" (31,623 pairs, 1.55 cells per bin) had no gap. Counted as cells
    over pairs, as the warning first did, float32 and float64 data had differed 1.6-1.9×."""
    states = _float32_uniform_sketches(1e9, [2**18, 2**20, 2**21])
    message = sketch.coarse_sketch_message(states[2**18], 5000)
    assert message.startswith("the streaming sketch has 0.25 cells per bin")
    assert "pass resolution=2097152" in message and "96.00 MiB" in message
    assert "has 0.98 cells per bin" in sketch.coarse_sketch_message(states[2**20], 5000)
    assert sketch.coarse_sketch_message(states[2**21], 5000) is None
    assert sketch.coarse_sketch_message(states[2**18], 31_623) is None


def test_a_top_label_buffer_never_outgrows_the_sketch():
    """Top-label rows keep C probabilities for a sketch of one row: with C = 100 the
    2·R-row buffer took 200 MiB beside a 12 MiB sketch."""
    C = 100
    metric = CalibrationError(num_classes=C, mode="top_label", streaming=True, resolution=1024)
    probs, target = _calibrated(2000, classes=C)  # fewer than buffer_rows(1024) = 2048
    metric.update(probs, target)
    state = sum(
        t.numel() * t.element_size()
        for name in metric._defaults
        for t in (getattr(metric, name) if isinstance(getattr(metric, name), list)
                  else [getattr(metric, name)])
    )  # fmt: skip
    sketch_bytes = sketch.BYTES_PER_CELL * sketch.num_cells(1024)
    assert state <= 2 * sketch_bytes  # the sketch and, at most, as much again
    small = CalibrationError(num_classes=C, mode="top_label", streaming=True, resolution=1024)
    exact = CalibrationError(num_classes=C, mode="top_label")
    few = 4 * 1024 // (C + 1)  # what the buffer keeps exactly
    small.update(probs[:few], target[:few])
    exact.update(probs[:few], target[:few])
    assert small.compute().item() == exact.compute().item()


def test_tiny_probabilities_beyond_the_logit_range_do_not_ask_for_a_finer_sketch():
    """A sharp tagger's q below 1.1e-7 (logit below −16) share the cell next to 0 at every
    resolution: it had named a resolution of 2²⁶ cells (3 GiB) that splits nothing."""
    g = torch.Generator().manual_seed(0)
    tiny = torch.exp(-torch.empty(90_000).uniform_(17, 30, generator=g))  # 9e-14 … 4e-8
    rounded = (torch.rand(10_000, generator=g) * 100).round() / 100  # tie groups: not counted
    q = torch.cat([tiny, rounded])
    y = torch.bernoulli(q, generator=g).long()
    # 20 bins, 18 inside the tail; past the buffer of 8,192 rows.
    metric = CalibrationError(streaming=True, resolution=4096, bin_size=5000)
    metric.update(q, y)
    assert _coarse_warnings(metric) == []
    state = metric._sketch_states().of_class(0)
    assert state.count[1] == 90_000 and not sketch.tied_cells(state)[1]


def test_the_metric_s_compute_warnings_point_at_the_user_s_line():
    # They had named calib_metrics/metric.py (compute_result) or torchmetrics' wrapper
    # (compute): the user could not tell which of their calls warned.
    coarse = CalibrationError(streaming=True, resolution=64, bin_size=500)
    coarse.update(*_calibrated(10_000))
    few = CalibrationError(bin_size=50)
    few.update(*_calibrated(120))
    other = CalibrationError(bin_size=50)
    other.update(*_calibrated(120))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        coarse.compute()
        few.compute()
        other.compute_result()
    assert len(caught) == 3, [str(w.message) for w in caught]
    for w in caught:
        assert w.filename == __file__, (w.filename, str(w.message)[:60])


@pytest.mark.parametrize(
    ("n", "bin_size", "resolution"), [(200_000, 100, 1024), (400_000, 200, 1024)]
)
def test_the_named_resolution_is_quiet_when_followed(n, bin_size, resolution):
    """The resolution had been scaled in proportion to the shortfall, as if every finer
    cell would hold several pairs, and following it gave a second warning naming another
    (at the threshold of 8 then: 40,000 uniform pairs in bins of 50 at 2¹⁰ cells were told
    2¹⁴, which gave 5.1 cells per bin). Here sizes whose named sketch is folded, not kept
    in the exact buffer."""
    q, y = _calibrated(n, seed=33)
    warned = CalibrationError(streaming=True, resolution=resolution, bin_size=bin_size)
    warned.update(q, y)
    (message,) = _coarse_warnings(warned)
    named = int(message.split("pass resolution=")[1].split(" ")[0])
    followed = CalibrationError(streaming=True, resolution=named, bin_size=bin_size)
    followed.update(q, y)
    assert _coarse_warnings(followed) == []
    assert followed._folded  # the finer sketch itself was checked, not the exact mode


def test_bins_too_small_for_a_sketch_are_told_to_use_the_exact_mode():
    q, y = _calibrated(40_000)
    metric = CalibrationError(streaming=True, resolution=1024, bin_size=10)
    metric.update(q, y)
    (message,) = _coarse_warnings(metric)
    assert "pass resolution" not in message
    assert "use the exact mode: it keeps these 40,000 rows in at most 0.61 MiB, where" in message


@pytest.mark.parametrize(
    ("classes", "mode"), [(None, "one_vs_rest"), (100, "one_vs_rest"), (1000, "top_label")]
)
def test_the_exact_mode_is_named_where_it_takes_less_memory(classes, mode):
    """200,000 pairs within 0.5 ± 0.01 in bins of 100 need cells 10⁻⁵ wide in logit: a
    sketch that would do (2²¹ cells, 96 MiB) where the exact mode holds the pairs in 3 MiB.
    The memory is the metric's own: C sketches for C classes (100 of them named 600 MiB
    beside 15 MiB of rows), one for a top-label metric, whose C = 1000 probabilities a row
    the exact mode keeps (191 MiB: a 3 MiB sketch is named there)."""
    g = torch.Generator().manual_seed(5)
    if classes is None:
        q = torch.sigmoid(torch.randn(200_000, generator=g, dtype=torch.float64) * 0.01)
        y, bin_size, rows = torch.bernoulli(q, generator=g).long(), 100, "200,000"
    else:
        n = 20_000 if mode == "one_vs_rest" else 50_000
        q = torch.softmax(4 * torch.randn(n, classes, generator=g), -1)
        y = torch.multinomial(q, 1, generator=g).squeeze(1)
        bin_size, rows = (100, "20,000") if mode == "one_vs_rest" else (20, None)
    metric = CalibrationError(
        num_classes=classes, mode=mode, streaming=True, resolution=1024, bin_size=bin_size
    )
    metric.update(q, y)
    (message,) = _coarse_warnings(metric)
    if rows is None:
        assert "pass resolution=" in message and "use the exact mode:" not in message
    else:
        assert f"use the exact mode: it keeps these {rows} rows in" in message
        assert "pass resolution" not in message


def _one_packed_class_warning(resolution: int, bin_size: int) -> str:
    """The warning of a 3-class macro metric whose class 1 is packed around 0.3."""
    g = torch.Generator().manual_seed(1)
    n = 200_000
    packed = 0.3 + 0.002 * torch.randn(n, generator=g, dtype=torch.float64)
    spread = torch.rand(n, generator=g, dtype=torch.float64) * 0.69
    probs = torch.stack([spread, packed, 1 - spread - packed], 1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    metric = CalibrationError(
        num_classes=3, average="macro", streaming=True, resolution=resolution, bin_size=bin_size
    )
    metric.update(probs, target)
    (message,) = _coarse_warnings(metric)
    return message


def test_a_per_class_metric_names_what_its_coarsest_class_needs():
    """Class 1 packed around 0.3 needs 2¹⁷ cells where the others need 2¹¹: the warning
    named 2¹¹ from the first coarse class, and following it warned again. Over every
    class's sketch the finest need decides, and there the exact mode is the smaller."""
    message = _one_packed_class_warning(resolution=1024, bin_size=2000)
    assert message.startswith("CalibrationError: 3 of 3 streaming sketches have as few as 0.02")
    assert "use the exact mode" in message and "(131072 cells)" in message


def test_the_class_described_and_the_class_that_names_the_remedy_may_differ():
    """Class 0 has the fewest cells per bin and needs 2¹⁷ cells; class 1 (3,000 distinct
    values within 3e-10) no sketch would do: the exact mode is named, from class 1, while
    class 0 is described. Naming the coarsest sketch's own need would have said 2¹⁷."""
    g = torch.Generator().manual_seed(0)
    n = 100_000
    first = 0.4 + 0.2 * torch.rand(n, generator=g, dtype=torch.float64)
    second = 0.1 * torch.rand(n, generator=g, dtype=torch.float64)
    second[:3000] = 0.3 + torch.arange(3000, dtype=torch.float64) * 1e-13
    probs = torch.stack([first, second, 1 - first - second], 1)
    target = torch.multinomial(probs.float(), 1, generator=g).squeeze(1)
    metric = CalibrationError(
        num_classes=3, average="macro", streaming=True, resolution=4096, bin_size=100
    )
    metric.update(probs, target)
    (message,) = _coarse_warnings(metric)
    assert "streaming sketches have as few as 0.10 cells per bin" in message
    assert "no sketch of up to 33,554,432 cells" in message
    assert "pass resolution" not in message


def test_one_coarse_sketch_of_several_is_named_in_the_singular():
    message = _one_packed_class_warning(resolution=4096, bin_size=4000)
    assert message.startswith("CalibrationError: 1 of 3 streaming sketches has ")


def test_bins_of_one_pair_are_named_in_the_singular():
    """bin_size=1 had been described as 'bins of 1 pairs'."""
    metric = CalibrationError(streaming=True, resolution=16, bin_size=1)
    metric.update(*_calibrated(1000))
    messages = _coarse_warnings(metric, calls=1)
    assert len(messages) == 1 and "(bins of 1 pair; a bin boundary" in messages[0]
    assert re.search(r"\b1 pairs", messages[0]) is None
