"""The linear chain's large CPU outputs are advised to the kernel as transparent huge pages.

The advice itself is the kernel's business (its flags depend on the system's THP setting
and on what the allocator reused), so these tests record the calls instead of reading
/proc/self/smaps, which made them depend on the order the suite ran in.
"""

from __future__ import annotations

import mmap

import pytest
import torch

from calib_metrics.models import _memory
from calib_metrics.models._memory import _HUGE_PAGE, _MIN_BYTES, empty_output


@pytest.fixture
def calls(monkeypatch) -> list[tuple[int, int, int]]:
    recorded: list[tuple[int, int, int]] = []

    def fake_madvise(address: int, length: int, advice: int) -> int:
        recorded.append((address, length, advice))
        return 0

    monkeypatch.setattr(_memory, "_madvise", lambda: fake_madvise)
    return recorded


def test_large_cpu_output_is_advised_over_its_aligned_interior(calls):
    out = empty_output(_MIN_BYTES // 4 + 4096, dtype=torch.float32, device=torch.device("cpu"))
    assert len(calls) == 1
    address, length, advice = calls[0]
    assert advice == getattr(mmap, "MADV_HUGEPAGE", advice)
    assert address % _HUGE_PAGE == 0 and length % _HUGE_PAGE == 0 and length > 0
    assert out.data_ptr() <= address and address + length <= out.data_ptr() + out.nbytes
    out.fill_(1.0)  # an ordinary tensor: writable, and freed as usual
    assert out.sum() == out.numel()


def test_small_output_is_left_alone(calls):
    out = empty_output(1024, dtype=torch.float32, device=torch.device("cpu"))
    assert out.shape == (1024,) and calls == []


def test_output_over_the_upper_bound_is_left_alone(calls, monkeypatch):
    # The bound is lowered here so that the test needs no half-gigabyte tensor.
    monkeypatch.setattr(_memory, "_MAX_BYTES", _MIN_BYTES)
    empty_output(_MIN_BYTES // 4 + 4096, dtype=torch.float32, device=torch.device("cpu"))
    assert calls == []


def test_without_madvise_the_output_is_plain(monkeypatch):
    monkeypatch.setattr(_memory, "_madvise", lambda: None)
    out = empty_output(_MIN_BYTES // 4 + 4096, dtype=torch.float32, device=torch.device("cpu"))
    assert out.numel() == _MIN_BYTES // 4 + 4096
