"""When an error from binned pairs cannot be trusted: too few bins, or one-pair bins.

One rule for the metric (:class:`~calib_metrics.CalibrationError` warns once) and the
command line (one ``warning:`` line on stderr): fewer than ``MIN_BINS`` bins. With one
bin, q̂ and p̂ are the overall means: the error measures only |mean probability - mean
label|, about 0 for a model whose mean prediction matches the base rate (one fitted by
maximum likelihood with an intercept) however miscalibrated it is. And, for the debiased
error, a bin of one pair: a single label has no variance to subtract (p̂(1 − p̂) = 0), so
the bin keeps its plug-in square, biased up by about q(1 − q)/N (perfectly calibrated
pairs in ``bin_size=1`` bins score exactly the plug-in error, 0.41).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from calib_metrics.functional.binning import Bins, single_label_bins

# Fewer bins than this can hide miscalibration: one bin sees only the overall means.
MIN_BINS = 10
# What one bin measures, said beside the warning's count: "one bin scores about 0 for any
# model" had been said, untrue of a model whose mean probability misses the base rate.
ONE_BIN = (
    "(one bin measures only |mean probability - mean label|, blind to any that cancels "
    "across probabilities)"
)


def option(name: str, value: object, cli: bool = False) -> str:
    """A setting as its user writes it: ``bin_size='auto'`` in Python, ``--bin-size auto``
    on the command line (a message there had told the user of ``--paper`` to pass
    ``bin_size='auto'``).

    Example:
        >>> option("bin_size", "auto"), option("bin_size", "auto", cli=True)
        ("bin_size='auto'", '--bin-size auto')
    """
    return f"{option_name(name, cli)} {value}" if cli else f"{name}={value!r}"


def option_name(name: str, cli: bool = False) -> str:
    """A setting's name as its user writes it: ``n_bins``, or ``--n-bins``.

    Example:
        >>> option_name("n_bins"), option_name("n_bins", cli=True)
        ('n_bins', '--n-bins')
    """
    return f"--{name.replace('_', '-')}" if cli else name


def few_bins_message(
    bins: Sequence[Bins],
    *,
    binning: str,
    bin_size: int | str,
    n_bins: int,
    debias: bool = False,
    cli: bool = False,
    per_class: bool = False,
) -> str | None:
    """Why the error of these bins (one set, or one per class: the fewest counts) can hide
    miscalibration, with what to do; None when there are ``MIN_BINS`` or more (and,
    with ``debias``, no bin of one pair: :func:`single_pair_message`). ``per_class``: the
    bins are each class's (classwise, ``average=None``), and the count is said per class.

    ``binning``, ``bin_size`` and ``n_bins`` are the settings that made the bins; ``cli``
    names them as command-line options (:func:`option`).

    Example:
        >>> import torch
        >>> three = Bins(torch.rand(3), torch.rand(3), torch.tensor([4.0, 4.0, 4.0]))
        >>> few_bins_message([three], binning="adaptive", bin_size="auto", n_bins=15)
        "only 3 bins from 12 pairs (bin_size='auto'); with fewer than 10 bins the error \
can hide miscalibration (one bin measures only |mean probability - mean label|, blind to any \
that cancels across probabilities): measure more pairs (bin_size='auto' makes about sqrt(N) \
bins)"
    """
    fewest = min(bins, key=lambda b: b.count.numel())
    count = fewest.count.numel()
    if count >= MIN_BINS:
        if not debias:
            return None
        return single_pair_message(bins, binning=binning, n_bins=n_bins, cli=cli)
    n_pairs = int(fewest.count.sum().item())
    auto, adaptive = option("bin_size", "auto", cli), option("binning", "adaptive", cli)
    if binning == "uniform":
        fix = f"raise {option_name('n_bins', cli)} or use {adaptive}"
    elif bin_size == "auto":
        made = "there are about sqrt(N) auto bins" if cli else f"{auto} makes about sqrt(N) bins"
        fix = f"measure more pairs ({made})"
    elif n_pairs < MIN_BINS:
        # No bin size helps: "a bin size of at most 1" had repeated a bin size of 1.
        fix = f"measure more pairs ({MIN_BINS} bins need at least {MIN_BINS})"
    else:
        most = n_pairs // MIN_BINS
        fix = f"use {auto} or a {option_name('bin_size', cli)} of at most {most}"
    # Uniform bins are made by n_bins: name it (empty bins are not bins here).
    # Auto bins are named, not their option: the default is unset, not --bin-size auto.
    if binning == "uniform":
        setting = option("n_bins", n_bins, cli)
    elif cli and bin_size == "auto":
        setting = "auto bins"
    else:
        setting = option("bin_size", bin_size, cli)
    # The pooled N beside a class's count had read as a contradiction on the command line.
    where = " per class" if per_class else ""
    return (
        f"only {count} bin{'s' * (count != 1)} from {n_pairs} pair{'s' * (n_pairs != 1)}"
        f"{where} ({setting}); with fewer than {MIN_BINS} bins the error "
        f"can hide miscalibration {ONE_BIN}: {fix}"
    )


def single_pair_message(
    bins: Sequence[Bins], *, binning: str, n_bins: int, cli: bool = False
) -> str | None:
    """Why a debiased error of these bins is biased up: bins of one pair, which have no
    label variance to subtract; None when there are none. One host synchronisation.
    ``cli`` names the settings as command-line options (:func:`option`).

    Example:
        >>> import torch
        >>> bins = Bins(torch.rand(4), torch.rand(4), torch.tensor([1.0, 30.0, 1.0, 40.0]))
        >>> print(single_pair_message([bins], binning="uniform", n_bins=4))
        2 of 4 bins hold one pair (2 of 72 pairs): a single label has no variance for the \
debiased error to subtract, so those bins keep their plug-in square and bias the error up: \
lower n_bins (now 4) or use binning='adaptive'
    """
    # Bins of one pair inside a cut tie group had been counted too ("20 of 20 bins" of
    # one tie group of 20 at bin_size=1), though their variance is subtracted.
    singles = sum(int(single_label_bins(b).sum().item()) for b in bins)
    if singles == 0:
        return None
    total_bins = sum(int((b.count > 0).sum().item()) for b in bins)
    pairs = sum(int(b.count.sum().item()) for b in bins)
    if binning == "uniform":
        fix = f"lower {option_name('n_bins', cli)} (now {n_bins}) or use "
        fix += option("binning", "adaptive", cli)
    else:
        fix = f"use bins of at least 2 pairs ({option('bin_size', 'auto', cli)})"
    return (
        f"{singles} of {total_bins} bins hold one pair ({singles} of {pairs} pairs): a single "
        "label has no variance for the debiased error to subtract, so those bins keep their "
        f"plug-in square and bias the error up: {fix}"
    )


def adaptive_bins_message(bin_size: int, n_items: int, items: str = "pairs") -> str | None:
    """Why a command's ``--bin-size`` can hide miscalibration on ``n_items`` pairs (adaptive
    bins of ``bin_size`` make ``max(1, n_items // bin_size)`` of them), said before the
    pairs are binned; None with ``MIN_BINS`` or more. ``items`` names the pairs.

    Example:
        >>> adaptive_bins_message(100_000, 20_000, "pairs of each setting")
        '--bin-size 100000 makes 1 bin of the 20000 pairs of each setting; with fewer than \
10 bins the error can hide miscalibration (one bin measures only |mean probability - mean \
label|, blind to any that cancels across probabilities): use a --bin-size of at most 2000'
    """
    n_bins = max(1, n_items // bin_size)
    if n_bins >= MIN_BINS:
        return None
    fix = f": use a --bin-size of at most {n_items // MIN_BINS}" if n_items >= MIN_BINS else ""
    return (
        f"--bin-size {bin_size} makes {n_bins} bin{'s' * (n_bins != 1)} of the {n_items} "
        f"{items}; with fewer than {MIN_BINS} bins the error can hide miscalibration "
        f"{ONE_BIN}{fix}"
    )


class ImmediateWarning(UserWarning):
    """A UserWarning the command prints on stderr at once, not after its results as it
    does the others: one said before a long run (``demo``'s few bins had been said only
    once its minutes of work were done, after its ``wrote ...`` line)."""


def warn_if_few_adaptive_bins(
    bin_size: int, n_items: int, items: str = "pairs", *, at_once: bool = False
) -> None:
    """A UserWarning (one ``warning:`` line of the command) with
    :func:`adaptive_bins_message`'s text, when there is one; ``at_once``: an
    :class:`ImmediateWarning`, which the command prints before its run goes on."""
    message = adaptive_bins_message(bin_size, n_items, items)
    if message is not None:
        warnings.warn(message, ImmediateWarning if at_once else UserWarning, stacklevel=2)
