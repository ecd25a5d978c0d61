"""DDP ranks as threads, for tests of what synchronisation does without ``torch.distributed``.

Each rank's metric gathers through the ``dist_sync_fn`` that :meth:`ThreadRanks.options`
gives it, which is all that synchronisation sees of ``torch.distributed``. A rank that
waits for a gather the others never join raises ``threading.BrokenBarrierError`` after
:data:`WAIT_S` seconds, so a test of a would-be deadlock fails rather than hangs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

WORLD = 2
WAIT_S = 30


class ThreadRanks:
    """Ranks as threads: each one's ``dist_sync_fn`` gathers every rank's tensor."""

    def __init__(self) -> None:
        self.slots: list[torch.Tensor | None] = [None] * WORLD
        self.barrier = threading.Barrier(WORLD, timeout=WAIT_S)

    def options(self, rank: int) -> dict[str, Any]:
        def gather(tensor: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
            self.slots[rank] = tensor.clone()
            self.barrier.wait()
            gathered = [slot.clone() for slot in self.slots]
            self.barrier.wait()
            return gathered

        return {"dist_sync_fn": gather, "distributed_available_fn": lambda: True}

    def run(self, calls: list[Callable[[], Any]]) -> tuple[list[Any], list[BaseException]]:
        """Every rank's call at once: the values, and the exceptions raised."""
        values: list[Any] = [None] * WORLD
        errors: list[Any] = [None] * WORLD

        def work(rank: int) -> None:
            try:
                values[rank] = calls[rank]()
            except Exception as err:  # the test looks at what each rank raised
                errors[rank] = err

        threads = [threading.Thread(target=work, args=(rank,)) for rank in range(WORLD)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return values, errors
