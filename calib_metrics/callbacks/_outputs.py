"""What both callbacks take from one evaluation step's output, checked alike: ``extract``'s
return value and the tensors in it; and, in the same words, why batches gave nothing.

A malformed output is a ValueError naming the problem at the first batch, not Python's
"too many values to unpack" or "'list' object has no attribute 'detach'", and never a
silent misreading.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor


def extracted(value: Any, forms: Sequence[Sequence[str]]) -> tuple[Any, ...]:
    """``extract``'s return value as a tuple, checked to be a tuple or list as long as one of
    ``forms`` (each the names of its items, for the message).

    A tensor is never taken for the tuple, though Python unpacks one: a ``[2, 5, 3]`` tensor
    read as ``(logits, target)`` fitted a temperature on its two halves without a word.

    Example:
        >>> extracted([1, 2], [("probs", "target")])
        (1, 2)
        >>> extracted((1, 2, 3), [("logits", "target")])
        Traceback (most recent call last):
        ...
        ValueError: extract must return (logits, target) or None, got 3 items
        >>> import torch
        >>> extracted(torch.zeros(2, 5), [("logits", "target")])
        Traceback (most recent call last):
        ...
        ValueError: extract must return (logits, target) or None, got one Tensor of shape
        (2, 5) (a tuple is needed: a tensor would be unpacked along its first dimension)
    """
    if isinstance(value, (tuple, list)) and len(value) in {len(form) for form in forms}:
        return tuple(value)
    wanted = " or ".join(f"({', '.join(form)})" for form in forms)
    if isinstance(value, (tuple, list)):
        got = f"{len(value)} items"
    elif isinstance(value, Tensor):
        got = (
            f"one Tensor of shape {tuple(value.shape)} (a tuple is needed: a tensor would be "
            "unpacked along its first dimension)"
        )
    else:
        got = type(value).__name__
    raise ValueError(f"extract must return {wanted} or None, got {got}")


def held_no_pairs(batches: int, which: str = "") -> str:
    """Why ``batches`` evaluation batches, each one taken, gave no pairs; ``which`` says
    which batches they are.

    Example:
        >>> held_no_pairs(3)
        '3 batches held no pairs (every target was ignore_index, or the batches were empty)'
        >>> held_no_pairs(1, " kept").split(" (")[0]
        '1 batch kept held no pairs'
    """
    return (
        f"{batches} batch{'es' * (batches != 1)}{which} held no pairs (every target was "
        "ignore_index, or the batches were empty)"
    )
