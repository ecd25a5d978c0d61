"""When an error from binned pairs cannot show miscalibration: too few bins.

One rule for the metric (:class:`~calib_metrics.CalibrationError` warns once) and the
command line (one ``warning:`` line on stderr): fewer than ``MIN_BINS`` bins. With one
bin, q̂ and p̂ are the overall means, and a model whose mean prediction matches the base
rate scores about 0 however miscalibrated it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from calib_metrics.functional.binning import Bins

# Fewer bins than this cannot show miscalibration (one bin scores about 0 for any model).
MIN_BINS = 10


def few_bins_message(
    bins: Sequence[Bins], *, binning: str, bin_size: int | str, n_bins: int
) -> str | None:
    """Why the error of these bins (one set, or one per class: the fewest counts) cannot
    show miscalibration, with what to do; None when there are ``MIN_BINS`` or more.

    ``binning``, ``bin_size`` and ``n_bins`` are the settings that made the bins.

    Example:
        >>> import torch
        >>> three = Bins(torch.rand(3), torch.rand(3), torch.tensor([4.0, 4.0, 4.0]))
        >>> few_bins_message([three], binning="adaptive", bin_size="auto", n_bins=15)
        "only 3 bins from 12 pairs (bin_size='auto'); with fewer than 10 bins the error \
cannot show miscalibration (one bin scores about 0 for any model): measure more pairs \
(bin_size='auto' makes about sqrt(N) bins)"
    """
    fewest = min(bins, key=lambda b: b.count.numel())
    count = fewest.count.numel()
    if count >= MIN_BINS:
        return None
    n_pairs = int(fewest.count.sum().item())
    if binning == "uniform":
        fix = f"raise n_bins (now {n_bins}) or use binning='adaptive'"
    elif bin_size == "auto":
        fix = "measure more pairs (bin_size='auto' makes about sqrt(N) bins)"
    else:
        fix = f"use bin_size='auto' or a bin_size of at most {max(1, n_pairs // MIN_BINS)}"
    return (
        f"only {count} bin{'s' * (count != 1)} from {n_pairs} pair{'s' * (n_pairs != 1)} "
        f"(bin_size={bin_size!r}); with fewer than {MIN_BINS} bins the error "
        f"cannot show miscalibration (one bin scores about 0 for any model): {fix}"
    )
