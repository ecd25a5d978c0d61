"""The warnings of ``interval="paper"`` (Algorithm 2), whose draws DESIGN.md fixes.

Algorithm 2 redraws each bin's frequency from Normal(p̂ᵢ, p̂ᵢ(1 − p̂ᵢ)/|Bᵢ|), bin by bin.
Two uses of it give an interval that says less than it seems to, and the formula is the
paper's, so the library says so rather than changing the draws:

* with the debiased error (``debias=True``, norm l2), each draw adds the bins' noise
  again before subtracting it once, so the draws centre near the plug-in estimate and
  the interval can exclude the debiased error it is reported with;
* where a bin boundary cuts a tie group of mixed labels, the tie rule gives each of the
  group's bins the group's mean label, yet the draws move those bins independently, with
  a variance of their own |Bᵢ|: the interval depends on where the boundaries fall.

The bootstrap over pairs (``interval="pairs"``) has neither problem: it is recentred
on the debiased estimate and draws a cut group once, shared over its bins.
"""

from __future__ import annotations

import torch

from calib_metrics.functional.binning import Bins, bin_ties
from calib_metrics.functional.errors import CountedWarning, warn_at_caller
from calib_metrics.functional.ties import cut_pairs, effective_counts, mixed_cuts

#: The warning of interval="paper" with the debiased error; the command line, which
#: notes an estimate outside its interval in its own words, leaves it out.
DEBIASED_PAPER_DRAWS = (
    "interval='paper' with debias=True: Algorithm 2's draws (each debiased) centre near "
    "the plug-in estimate, not on the debiased error reported, so the interval may exclude "
    "it; debias=False gives the paper's method, interval='pairs' an interval of the "
    "debiased estimate"
)

# Cut tie groups matter where they raise bins' effective sizes over MATERIAL_SPREAD times
# their counts (the draws' variance there too large by as much) and those bins hold
# MATERIAL_SHARE of the pairs or more. A few tied pairs do not: the demo's float32
# probabilities put 31 of 10^5 pairs in cut groups, in bins of 2 that hold 0.06% of the
# pairs, and probabilities rounded to 4 decimals raise a bin of ⌈√N⌉ pairs by 2% at most
# (N = 10^5); rounded to 2 decimals, their cut groups raise 99% of the pairs' bins.
MATERIAL_SPREAD = 1.1
MATERIAL_SHARE = 0.01


def warn_of_paper_draws(bins: Bins, debias: bool) -> None:
    """Warn of what Algorithm 2's interval of 1-D ``bins`` leaves unsaid (module
    docstring): a debiased estimate (``debias``: debiased l2), and cut tie groups of
    mixed labels where the bins whose effective size
    (:func:`~calib_metrics.functional.ties.effective_counts`) they raise over
    ``MATERIAL_SPREAD`` times their count hold ``MATERIAL_SHARE`` of the pairs or more
    (one host synchronisation). Said at the user's line; the cut groups'
    warning is a :class:`~calib_metrics.functional.errors.CountedWarning`.

    Example:
        >>> import warnings
        >>> t = torch.tensor
        >>> tied = Bins(t([0.3, 0.3]), t([0.5, 0.5]), t([4.0, 4.0]))  # one group, 2 bins
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_of_paper_draws(tied, debias=False)
        >>> print(caught[0].message)  # doctest: +ELLIPSIS
        interval='paper': 8 pairs lie in tie groups (pairs of one probability, mixed labels) ...
    """
    if debias:
        warn_at_caller(DEBIASED_PAPER_DRAWS)
    cuts = mixed_cuts(bin_ties(bins))
    count = bins.count
    spread = effective_counts(count, cuts) > MATERIAL_SPREAD * count
    share = torch.where(spread, count, 0).sum() / count.sum()
    share, cut = torch.stack([share.double(), cut_pairs(count, cuts).double()]).tolist()
    if share >= MATERIAL_SHARE:
        warn_at_caller(
            f"interval='paper': {round(cut)} pairs lie in tie groups (pairs of one "
            "probability, mixed labels) that bin boundaries cut; the tie rule gives each of "
            "a group's bins its mean label, but Algorithm 2 redraws those bins independently, "
            "so the interval depends on where the boundaries fall: interval='pairs' draws a "
            "cut group once and shares it over its bins",
            category=CountedWarning,
        )
