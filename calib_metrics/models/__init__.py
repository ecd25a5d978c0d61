"""Reference models whose posteriors feed the calibration metric.

``linear_chain`` holds the shared dynamic-programming core (forward-backward
marginals, Viterbi, posterior sampling) under the ``hmm`` and ``crf`` taggers;
``coref`` holds the antecedent-ranking model. Import the submodules directly,
e.g. ``from calib_metrics.models.linear_chain import posterior_marginals``;
this package imports nothing eagerly: :func:`~calib_metrics.models.alignment.left_align`
(a sub-word batch moved into a chain's layout) is imported on first use.

Example:
    >>> from calib_metrics.models import left_align
    >>> left_align.__module__
    'calib_metrics.models.alignment'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "LeftAligned": "calib_metrics.models.alignment",
    "left_align": "calib_metrics.models.alignment",
}

__all__ = ["LeftAligned", "left_align"]

if TYPE_CHECKING:
    from calib_metrics.models.alignment import LeftAligned, left_align


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module 'calib_metrics.models' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
