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
glibc's reuse of small per-step buffers). Past 512 MiB (or without ``madvise``), where
each 4 KiB page is faulted in on its own, the output is instead a private mapping of the
kernel's zero pages (:func:`fresh_output`), so a page that is never written is never
faulted in, and the chain leaves a padded batch's padding unwritten
(:func:`faults_page_by_page`). The advice is only a hint, and where the call is
unavailable (not Linux, not CPU, a tensor under 32 MiB or over 512 MiB) nothing is done.
A huge page that must come cold (compacted, or on a virtual machine with free page
reporting, provided by the host again) can cost more than the 4 KiB faults it saves,
hence the upper bound; setting the system's
``enabled`` to ``never`` turns the advice off altogether.
"""

from __future__ import annotations

import ctypes
import functools
import math
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


def fresh_output(*shape: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """An output for the caller to fill, as ``torch.empty`` gives: on CPU from
    ``_MIN_BYTES`` up to ``_MAX_BYTES`` advised as huge pages, and past ``_MAX_BYTES`` (or
    without ``madvise``) a private anonymous mapping of its own: the kernel's zero pages,
    each faulted in on its first write, so that rows the caller never writes (a padded
    batch's padding, where :func:`faults_page_by_page`) stay 0 and cost nothing. Like
    ``torch.from_numpy``'s, such a tensor's storage cannot be resized (``resize_``).

    Example:
        >>> out = fresh_output(4, 3, dtype=torch.float32, device=torch.device("cpu"))
        >>> out.shape, out.dtype
        (torch.Size([4, 3]), torch.float32)
    """
    numel = math.prod(shape)
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    if torch.device(device).type != "cpu" or nbytes < _MIN_BYTES:
        # Small outputs reuse freed heap memory, already faulted in.
        return torch.empty(shape, dtype=dtype, device=device)
    if _zero_pages(nbytes):
        # Private, like malloc's own mappings (a shared one is shmem, slower to fault);
        # the tensor keeps the mapping alive and unmaps it when freed.
        mapping = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
        return torch.frombuffer(mapping, dtype=dtype, count=numel).view(shape)
    out = torch.empty(shape, dtype=dtype, device=device)
    begin = -(-out.data_ptr() // _HUGE_PAGE) * _HUGE_PAGE
    end = (out.data_ptr() + nbytes) // _HUGE_PAGE * _HUGE_PAGE
    if end > begin:
        _madvise()(begin, end - begin, mmap.MADV_HUGEPAGE)  # a hint: failure is ignored
    return out


def _zero_pages(nbytes: int) -> bool:
    """Whether a CPU output of ``nbytes`` (at least ``_MIN_BYTES``) is a mapping of zero
    pages of its own rather than huge-page-advised memory: past ``_MAX_BYTES``, or when
    there is no ``madvise`` to call."""
    return nbytes > _MAX_BYTES or _madvise() is None


def faults_page_by_page(out: Tensor) -> bool:
    """Whether a :func:`fresh_output` tensor is zero pages faulted in one by one on first
    write (a mapping of its own not advised as huge pages): then each 4 KiB page never
    written is a fault saved, and a writer gains by skipping rows that are to stay 0.

    Example:
        >>> faults_page_by_page(fresh_output(4, dtype=torch.float32, device=torch.device("cpu")))
        False
    """
    return out.device.type == "cpu" and out.nbytes >= _MIN_BYTES and _zero_pages(out.nbytes)


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
