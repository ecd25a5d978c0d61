"""The linear chain's large outputs are advised to the kernel as transparent huge pages."""

from __future__ import annotations

import sys

import pytest
import torch

from calib_metrics.models._memory import _MIN_BYTES, empty_output


def _vm_flags(address: int) -> list[str]:
    """VmFlags of the mapping of this process that holds ``address``."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                begin, end = (int(x, 16) for x in head.split("-"))
                inside = begin <= address < end
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise is Linux's")
def test_large_cpu_output_is_advised_as_huge_pages():
    out = empty_output(_MIN_BYTES // 4 + 4096, dtype=torch.float32, device=torch.device("cpu"))
    middle = out.data_ptr() + out.nbytes // 2
    assert "hg" in _vm_flags(middle)  # MADV_HUGEPAGE's flag
    out.fill_(1.0)  # an ordinary tensor: writable, and freed as usual
    assert out.sum() == out.numel()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise is Linux's")
def test_small_output_is_left_alone():
    out = empty_output(1024, dtype=torch.float32, device=torch.device("cpu"))
    assert out.shape == (1024,) and "hg" not in _vm_flags(out.data_ptr())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise is Linux's")
def test_output_over_the_upper_bound_is_left_alone(monkeypatch):
    # Past the bound cold huge pages cost more than they save; the bound is lowered here
    # so that the test needs no half-gigabyte tensor.
    from calib_metrics.models import _memory

    monkeypatch.setattr(_memory, "_MAX_BYTES", _MIN_BYTES)
    out = empty_output(_MIN_BYTES // 4 + 4096, dtype=torch.float32, device=torch.device("cpu"))
    assert "hg" not in _vm_flags(out.data_ptr() + out.nbytes // 2)
