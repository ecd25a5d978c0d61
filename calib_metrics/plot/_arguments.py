"""What every figure takes: the axes to draw on (a given ``ax`` or a new ``Figure``,
never pyplot's) and sequences of numbers checked for equal lengths.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure


def _axes(ax: Axes | None, size: tuple[float, float] = (5.0, 5.0)) -> tuple[Figure, Axes]:
    if ax is not None:
        _check_ax(ax)
        return ax.figure, ax
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def _check_ax(ax: object) -> None:
    """``ax`` is one matplotlib Axes with plain x and y axes: the array that
    ``fig.subplots(1, 2)`` returns had failed deep inside with an AttributeError, a 3-D
    ax with matplotlib's "errorbar() missing ... 'z'" and a polar one with "Cannot set
    Axes adjustable to 'datalim'".

    Example:
        >>> from matplotlib.figure import Figure
        >>> _check_ax(Figure().subplots(1, 2))
        Traceback (most recent call last):
        ...
        ValueError: ax must be one matplotlib Axes, got ndarray (an array of axes, ...
        >>> _check_ax(Figure().add_subplot(projection="polar"))
        Traceback (most recent call last):
        ...
        ValueError: ax must have plain x and y axes (projection 'rectilinear'), got a 'polar' ...
    """
    if isinstance(ax, Axes):
        if ax.name != "rectilinear":  # what each figure draws is x against y
            raise ValueError(
                "ax must have plain x and y axes (projection 'rectilinear'), got a "
                f"{ax.name!r} projection: make it with fig.add_subplot()"
            )
        return
    array = hasattr(ax, "shape") and hasattr(ax, "flat")
    hint = " (an array of axes, as fig.subplots(1, 2) returns: pass one of them, ax=axes[0])"
    raise ValueError(f"ax must be one matplotlib Axes, got {type(ax).__name__}{hint * array}")


def _check_lengths(against: str, length: int, **series: Any) -> None:
    """Every given series (None: not drawn) has one value per entry of ``against``."""
    for name, values in series.items():
        count = length if values is None else len(_numbers(values, name))
        if count != length:
            raise ValueError(f"{name} has {count} values where {against} has {length}")


def _numbers(x: Any, name: str = "values") -> list[float]:
    """``x`` (a tensor or a sequence of numbers) as floats; anything else is refused by
    ``name`` (None had failed as "'NoneType' object is not iterable", a word as "could
    not convert string to float"), and so is an array of two or more dimensions (a
    tensor's had been flattened, its rows drawn one after another as one series).

    Example:
        >>> _numbers(torch.zeros(2, 3), "error")
        Traceback (most recent call last):
        ...
        ValueError: error must be 1-d (one value per point), got shape (2, 3)
    """
    if getattr(x, "ndim", 1) > 1 and hasattr(x, "shape"):
        raise ValueError(f"{name} must be 1-d (one value per point), got shape {tuple(x.shape)}")
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().reshape(-1).tolist()
    if x is None or isinstance(x, (str, bytes)) or not isinstance(x, Iterable):
        raise ValueError(f"{name} must be a sequence of numbers, got {type(x).__name__}")
    values = list(x)
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        bad = next(v for v in values if not _is_number(v))
        raise ValueError(f"{name} must hold numbers, got {bad!r}") from None


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
