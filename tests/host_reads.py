"""Counting a call's device reads on the CPU, for the tests of the syncs docstrings state
(loaded by file: tests/ is not a package)."""

from __future__ import annotations

import collections
import re
import warnings
from collections.abc import Callable

import pytest
import torch

# The Tensor methods that read a value back to the host.
READS = ("item", "tolist", "__bool__", "__int__", "__float__", "nonzero")


def count_reads(call: Callable[[], object]) -> int:
    """How often ``call()`` reads the device: a value read back, or a selection by a
    bool mask (its size is a read). Kernels that read inside C++ are not seen."""
    counts: collections.Counter = collections.Counter()
    with pytest.MonkeyPatch.context() as patch:
        for name in READS:
            original = getattr(torch.Tensor, name)

            def counted(*args, _name=name, _original=original, **kwargs):
                counts[_name] += 1
                return _original(*args, **kwargs)

            patch.setattr(torch.Tensor, name, counted)
        getitem = torch.Tensor.__getitem__

        def masked(self, index):
            parts = index if isinstance(index, tuple) else (index,)
            if any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in parts):
                counts["mask"] += 1
            return getitem(self, index)

        patch.setattr(torch.Tensor, "__getitem__", masked)
        call()
    return sum(counts.values())


_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def stated_syncs(function: Callable) -> int:
    """The number of host synchronisations ``function``'s docstring states (its first
    number: "Host synchronisations: three, ...")."""
    found = re.search(r"Host synchronisations: (\w+)", " ".join((function.__doc__ or "").split()))
    assert found, f"{function.__name__}'s docstring states no host synchronisations"
    return _NUMBERS[found.group(1)]


def cuda_syncs(call: Callable[[], object]) -> int:
    """How often ``call()`` synchronises with a CUDA device, as torch's sync debug mode
    reports it (kernels that read inside C++ included). ``call`` runs twice: the first
    window may count torch's own lazy set-up."""
    for _ in range(2):
        torch.cuda.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                call()
            finally:
                torch.cuda.set_sync_debug_mode("default")
    # Not torch's once-a-process note that it "does not yet detect all synchronizing
    # operations".
    return sum("called a synchronizing CUDA operation" in str(w.message) for w in caught)
