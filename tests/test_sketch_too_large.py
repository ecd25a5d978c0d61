"""A resolution whose sketch cannot be allocated is a ValueError naming it, not the
allocator's RuntimeError."""

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import sketch


@pytest.mark.parametrize("resolution", [2**26, 2**30, 2**60])
def test_a_resolution_finer_than_float32_places_is_refused(resolution):
    """Cells are placed in float32, exact up to 2**24 a half: at 2**26 q = 0.5 had been
    counted in the lower half (CalibErr 0.158 where the exact mode gives 0.0028), and no
    resolution past 2**25 split any cell 2**25 does not (2**60 had been refused only as
    memory it could not allocate)."""
    said = rf"resolution must be at most 33,554,432 \(2\*\*25\), got {resolution:,}"
    way_out = r".*use the exact mode: streaming=False, with resolution left out"
    with pytest.raises(ValueError, match=said + way_out):
        CalibrationError(streaming=True, resolution=resolution)
    with pytest.raises(ValueError, match=said):
        sketch.cell_index(torch.tensor([0.5]), resolution)


def test_the_finest_resolution_keeps_each_half_apart():
    below, half = torch.tensor([0.49999997, 0.5], dtype=torch.float32)
    cells = sketch.cell_index(torch.stack([below, half]), sketch.MAX_RESOLUTION).tolist()
    assert cells[0] < sketch.MAX_RESOLUTION // 2 <= cells[1]


def test_allocatable_resolution_still_works():
    count, *_ = sketch.empty(1024, (2,))
    assert count.shape == (2, 1024) and count.dtype == torch.float64


def _scaled_streaming_state(factor: int) -> dict:
    """A streaming state of 4,000 rows (past its buffer) whose sketch counts every row
    ``factor`` times, as a long enough stream would."""
    g = torch.Generator().manual_seed(0)
    q = (torch.rand(4000, generator=g) * 20).round() / 20
    metric = CalibrationError(streaming=True, resolution=256, debias=False, n_samples=200)
    metric.persistent(True)
    metric.update(q, torch.bernoulli(q, generator=g).long())
    state = metric.state_dict()
    for name in ("cell_count", "cell_sum_r", "cell_sum_r2", "cell_sum_y", "rows_seen"):
        state[name] = state[name] * factor
    return state


def test_bins_of_a_sketch_that_would_not_fit_are_refused_up_front(monkeypatch):
    """bin_size="auto" makes about √N bins: counts of 4·10¹⁵ (6·10⁷ bins) had exhausted
    the memory in compute(); the exact mode refuses pairs that would not fit before it
    starts, and so does the streaming mode now. Here 10¹¹ pairs (316,227 bins) beside a
    free memory made small."""
    from calib_metrics.functional import binning

    metric = CalibrationError(streaming=True, resolution=256, debias=False, n_samples=200)
    metric.load_state_dict(_scaled_streaming_state(25_000_000))
    monkeypatch.setattr(binning, "available_bytes", lambda device: 2**26)  # 64 MiB
    for compute in (metric.compute, metric.compute_result, metric.streaming_tolerance):
        with pytest.raises(ValueError, match=r"in 316227 bins needs .* larger bin_size"):
            compute()
    monkeypatch.undo()
    assert metric.compute_result().bins.count.numel() == 316227


def test_bins_that_fit_are_not_refused(monkeypatch):
    """10⁸ pairs at bin_size=50 (2·10⁶ bins) take about 0.33 GiB in compute(); at 2 KiB a
    bin the check had demanded 3.8 GiB and refused them beside 2 GiB free. Checked (by
    _class_sketches, which every compute runs first) without making the bins."""
    from calib_metrics.functional import binning

    metric = CalibrationError(streaming=True, resolution=256, debias=False, bin_size=50)
    metric.load_state_dict(_scaled_streaming_state(25_000))  # 4,000 rows × 25,000 = 10⁸
    monkeypatch.setattr(binning, "available_bytes", lambda device: 2 * 2**30)
    [(cells, size)] = metric._class_sketches()
    assert (int(cells.count.sum()), size) == (10**8, 50)


def test_classes_binned_one_after_another_are_not_summed(monkeypatch):
    """Four classes of 2·10⁶ bins each: each class's working memory is freed before the
    next's, so only the finished bins add up (4 × 2·10⁶ × 64 B + 2·10⁶ × 256 B ≈ 1 GiB)."""
    from calib_metrics.functional import binning

    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(2000, 4, generator=g), -1)
    options = {"streaming": True, "resolution": 256, "debias": False, "bin_size": 50}
    source = CalibrationError(num_classes=4, mode="classwise", **options)
    source.persistent(True)
    source.update(probs, torch.multinomial(probs, 1, generator=g).squeeze(1))
    state = source.state_dict()
    for name in ("cell_count", "cell_sum_r", "cell_sum_r2", "cell_sum_y", "rows_seen"):
        state[name] = state[name] * 50_000  # 2,000 rows × 50,000 = 10⁸ pairs per class
    metric = CalibrationError(num_classes=4, mode="classwise", **options)
    metric.load_state_dict(state)
    monkeypatch.setattr(binning, "available_bytes", lambda device: int(1.5 * 2**30))
    sets = metric._class_sketches()
    assert [size for _, size in sets] == [50] * 4


def test_the_refusal_reads_as_a_sentence(monkeypatch):
    """It had read "needs 3.8 GiB more than the 2.0 GiB free", as if 3.8 GiB beyond it."""
    from calib_metrics.functional import binning

    monkeypatch.setattr(binning, "available_bytes", lambda device: 2 * 2**30)
    with pytest.raises(ValueError, match=r"a job needs 3\.8 GiB, more than the 2\.0 GiB free"):
        binning.check_room(int(3.8 * 2**30), torch.device("cpu"), "a job")


def test_a_refusal_under_one_gib_is_said_in_mib(monkeypatch):
    """The exact binning's refusal of 10⁶ pairs beside 4 MiB free had read "needs 0.0 GiB,
    more than the 0.0 GiB free"."""
    from calib_metrics.functional import binning

    monkeypatch.setattr(binning, "available_bytes", lambda device: 4 * 2**20)
    with pytest.raises(ValueError, match=r"needs 9 MiB, more than the 4 MiB free"):
        binning.check_room(9 * 2**20, torch.device("cpu"), "a job")
    with pytest.raises(ValueError, match=r"needs 2,048 MiB, more than the 4 MiB free"):
        binning.check_room(2 * 2**30, torch.device("cpu"), "a job")
    monkeypatch.setattr(binning, "available_bytes", lambda device: int(1.01 * 2**30))
    with pytest.raises(ValueError, match=r"needs 1,065 MiB, more than the 1,034 MiB free"):
        binning.check_room(int(1.04 * 2**30), torch.device("cpu"), "a job")  # not 1.0, 1.0
    monkeypatch.setattr(binning, "available_bytes", lambda device: 512)
    with pytest.raises(ValueError, match=r"needs 1,024 KiB, more than the 0 KiB free"):
        binning.check_room(2**20, torch.device("cpu"), "a job")


def test_a_sketch_larger_than_the_free_memory_is_refused_when_the_metric_is_made(monkeypatch):
    """On Linux torch.zeros of more than is free succeeds lazily and the ±inf fill of the
    extremes touches every page: CalibrationError(streaming=True, resolution=2**31), or
    about 2,700 classes at the default resolution, had the process OOM-killed (exit 137)
    rather than refused. The room is checked up front, as the exact mode's is: here 20
    classes at the default (240 MiB, twice: the state and reset()'s copy) beside 64 MiB."""
    from calib_metrics.functional import binning

    monkeypatch.setattr(binning, "available_bytes", lambda device: 2**26)
    words = r"resolution=262144 for 20 classes .*needs 480 MiB, more than the 64 MiB free"
    with pytest.raises(ValueError, match=words + r".*smaller resolution.*fewer classes"):
        CalibrationError(streaming=True, num_classes=20)
    with pytest.raises(ValueError, match=r"resolution=2097152 for one class .*needs 192 MiB"):
        CalibrationError(streaming=True, resolution=2**21)
    with pytest.raises(ValueError, match=r"needs 96 MiB"):
        sketch.empty(2**21, room_for=1)
    # What fits is made as before: 2 × 48 MiB of one class at 2**20 cells.
    CalibrationError(streaming=True, resolution=2**19)
    CalibrationError(num_classes=20)  # the exact mode keeps no sketch


def test_a_streaming_metric_refused_for_memory_is_not_told_to_stream(monkeypatch):
    """Its rows still held exactly, a streaming metric took the exact mode's check, whose
    message said "use the streaming mode" and "needs 0.0 GiB, more than the 0.0 GiB free"."""
    from calib_metrics.functional import binning

    metric = CalibrationError(streaming=True)
    q = torch.rand(1000, generator=torch.Generator().manual_seed(0))
    metric.update(q, torch.bernoulli(q, generator=torch.Generator().manual_seed(1)))
    monkeypatch.setattr(binning, "available_bytes", lambda device: 1024)
    with pytest.raises(
        ValueError, match=r"streaming metric still holds exactly needs \d+ KiB"
    ) as err:
        metric.compute()
    assert "use the streaming mode" not in str(err.value)
