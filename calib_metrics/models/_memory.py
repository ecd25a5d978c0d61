"""Large fresh CPU outputs whose first touch costs 2 MiB page faults instead of 4 KiB ones.

A tensor of tens of megabytes is its own ``mmap`` (glibc maps every allocation above
32 MiB afresh and unmaps it when freed), so each call that returns one pays a page fault
per 4 KiB page on first write: half the time of the linear chain's pairwise marginals at
B = 1000, K = 47 (212 MB; ``benchmarks/bench_chain.py``). Advising the mapping's aligned
interior as ``MADV_HUGEPAGE`` lets the kernel back it with transparent huge pages where
the system allows them (``/sys/kernel/mm/transparent_hugepage/enabled`` set to
``madvise`` or ``always``), about 5× cheaper to fault in when the kernel has recently
freed 2 MiB blocks at hand. This is PyTorch's own ``THP_MEM_ALLOC_ENABLE=1`` applied to
one tensor rather than to every allocation of the process (which would also defeat
glibc's reuse of small per-step buffers). The advice is only a hint: the tensor is an
ordinary ``torch.empty`` tensor, and where the call is unavailable (not Linux, not CPU,
a tensor under 32 MiB or over 512 MiB) nothing is done. A huge page that must come cold
(compacted, or on a virtual machine with free page reporting, provided by the host again)
can cost more than the 4 KiB faults it saves, hence the upper bound; setting the system's
``enabled`` to ``never`` turns the advice off altogether.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import sys
from collections.abc import Callable

import torch
from torch import Tensor

# The x86-64 and (4 KiB-page) arm64 transparent huge page size; with larger pages the
# advice covers fewer of them, which is harmless.
_HUGE_PAGE = 2 << 20
# Below glibc's largest mmap threshold the allocator reuses freed heap memory, which is
# already faulted in; advising it would only split the heap's mapping.
_MIN_BYTES = 32 << 20
# Above this the kernel must find so many free 2 MiB blocks that some are cold (to be
# compacted, or, on a virtual machine with free page reporting, provided by the host
# again), and then a huge page costs more than the 4 KiB faults it saves: measured by
# benchmarks/bench_chain.py on such a machine, 212 and 315 MB outputs gain, 848 MB loses.
_MAX_BYTES = 512 << 20


def empty_output(*shape: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``torch.empty(shape)``, advised to the kernel as huge pages when large and on CPU.

    Example:
        >>> out = empty_output(4, 3, dtype=torch.float32, device=torch.device("cpu"))
        >>> out.shape, out.dtype
        (torch.Size([4, 3]), torch.float32)
    """
    out = torch.empty(shape, dtype=dtype, device=device)
    advise = _madvise()
    if advise is not None and out.device.type == "cpu" and _MIN_BYTES <= out.nbytes <= _MAX_BYTES:
        begin = -(-out.data_ptr() // _HUGE_PAGE) * _HUGE_PAGE
        end = (out.data_ptr() + out.nbytes) // _HUGE_PAGE * _HUGE_PAGE
        if end > begin:
            advise(begin, end - begin, mmap.MADV_HUGEPAGE)  # a hint: failure is ignored
    return out


@functools.cache
def _madvise() -> Callable[[int, int, int], int] | None:
    """libc's ``madvise``, or None where there is none to call."""
    if not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_HUGEPAGE"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return function
