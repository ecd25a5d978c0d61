"""Typed errors of the functional layer, for callers that must tell them apart."""

from __future__ import annotations


class NoPairsError(ValueError):
    """There is no (probability, target) pair to measure: empty input, or only padding.

    A ``ValueError``, so code that catches bad input still catches it; callers that
    must skip an empty evaluation (a callback at the end of an epoch without data)
    catch this class instead of matching message text.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error
        >>> try:
        ...     calibration_error(torch.tensor([]), torch.tensor([]))
        ... except NoPairsError as err:
        ...     print(type(err).__name__, isinstance(err, ValueError))
        NoPairsError True
    """
