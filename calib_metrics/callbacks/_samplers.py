"""Whether an evaluation dataloader's distributed sampler measures each item exactly once.

``DistributedSampler`` gives every rank as many items: it repeats items to fill the last
round when the set does not divide by the world size (501 items on 2 ranks -> 502), or
with ``drop_last=True`` drops them. The metric, summed over ranks, then counts the
repeated items twice (or never sees the dropped ones) without a word.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch.utils.data import DistributedSampler


def loaders_of(dataloaders: Any) -> list[Any]:
    """The trainer's ``val_dataloaders`` / ``test_dataloaders`` as a list (it may hold one
    loader, a sequence or a mapping of them, or None).

    Example:
        >>> loaders_of(None), loaders_of("a"), loaders_of(["a", "b"]), loaders_of({"x": "a"})
        ([], ['a'], ['a', 'b'], ['a'])
    """
    if dataloaders is None:
        return []
    if isinstance(dataloaders, Mapping):
        return list(dataloaders.values())
    if isinstance(dataloaders, (list, tuple)):
        return list(dataloaders)
    return [dataloaders]


def uneven_items(loader: Any) -> tuple[int, int, int] | None:
    """``(items, drawn, ranks)`` when the loader's distributed sampler draws ``drawn`` items
    in all for a set of ``items`` (more: repeated; fewer: dropped) over ``ranks`` ranks;
    None when it has no such sampler or draws each item once.

    Example:
        >>> import torch
        >>> from torch.utils.data import DataLoader
        >>> data = torch.arange(501)
        >>> uneven_items(DataLoader(data, sampler=DistributedSampler(data, 2, 0)))
        (501, 502, 2)
        >>> uneven_items(DataLoader(data)) is None
        True
    """
    batch_sampler = getattr(loader, "batch_sampler", None)
    for sampler in (getattr(loader, "sampler", None), getattr(batch_sampler, "sampler", None)):
        # Lightning's DistributedSamplerWrapper and UnrepeatedDistributedSampler are
        # subclasses; the latter's total_size is the set's size.
        if not isinstance(sampler, DistributedSampler) or sampler.num_replicas <= 1:
            continue
        try:
            items = len(sampler.dataset)
        except TypeError:  # an iterable without a length: nothing to compare
            return None
        drawn = int(sampler.total_size)
        return None if drawn == items else (items, drawn, int(sampler.num_replicas))
    return None


def uneven_message(
    stage: str,
    uneven: dict[int, tuple[int, int, int]],
    many: bool,
    counted: str = "the logged values",
    ignore_index: int | None = None,
) -> str:
    """What the uneven samplers do to what is ``counted`` (the logged value), and how to
    avoid it. With an ``ignore_index`` a repeated item's pairs whose target is that value
    are not counted at all, nor twice: the sampler's duplicates may be padding only.

    Example:
        >>> print(uneven_message("val", {0: (501, 502, 2)}, many=False))  # doctest: +ELLIPSIS
        under DDP the validation sampler repeats 1 of the 501 items (502 drawn, 251 on each
        of 2 ranks), so the logged values count them twice; ...
        >>> print(uneven_message("val", {0: (501, 502, 2)}, False, ignore_index=-100))
        under DDP ... so the logged values count their pairs twice, but for those whose
        target is ignore_index (-100); ...
    """
    name = "validation" if stage == "val" else "test"
    twice = "them twice"
    if ignore_index is not None:
        twice = f"their pairs twice, but for those whose target is ignore_index ({ignore_index})"
    parts = []
    for idx, (items, drawn, ranks) in uneven.items():
        where = f"dataloader {idx}'s" if many else "the"
        share = f"{drawn} drawn, {drawn // ranks} on each of {ranks} ranks"
        if drawn > items:
            parts.append(
                f"{where} {name} sampler repeats {drawn - items} of the {items} items "
                f"({share}), so {counted} count {twice}"
            )
        else:
            parts.append(
                f"{where} {name} sampler drops {items - drawn} of the {items} items "
                f"(drop_last=True: {share}), so {counted} leave them out"
            )
    ranks = next(iter(uneven.values()))[2]
    return (
        f"under DDP {'; '.join(parts)}; to measure every item once, give the {name} set a "
        f"size divisible by the {ranks} ranks, evaluate on one device, or pass "
        f"Trainer(use_distributed_sampler=False) with a sampler that neither pads nor drops"
        f"{_unrepeated_hint()}"
    )


def _unrepeated_hint() -> str:
    try:
        from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSampler
    except ImportError:  # not in every Lightning version
        return ""
    return (
        f" ({UnrepeatedDistributedSampler.__module__}.UnrepeatedDistributedSampler: ranks "
        "then run unequal numbers of batches, which hangs a step that communicates across "
        "ranks, e.g. self.log(..., on_step=True, sync_dist=True))"
    )
