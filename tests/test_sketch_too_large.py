"""A resolution whose sketch cannot be allocated is a ValueError naming it, not the
allocator's RuntimeError."""

import pytest
import torch

from calib_metrics import CalibrationError
from calib_metrics.functional import sketch


def test_unallocatable_resolution_is_a_value_error():
    # 2^60 cells of 8 bytes: beyond any address space, so no overcommit setting lets the
    # allocation succeed lazily.
    with pytest.raises(ValueError, match=r"resolution=1152921504606846976 needs .* MiB"):
        CalibrationError(streaming=True, resolution=2**60)


def test_allocatable_resolution_still_works():
    count, *_ = sketch.empty(1024, (2,))
    assert count.shape == (2, 1024) and count.dtype == torch.float64
