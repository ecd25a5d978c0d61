"""Shared pieces of the recalibrators: argument checks, a float64 L-BFGS fit, buffers.

Fitting always runs in float64 with gradients on, outside inference mode, on private
copies of the inputs: Lightning's validation loop runs under ``torch.inference_mode``,
whose tensors cannot be saved for backward, so a recalibrator fitted from a callback
would otherwise fail. Every :class:`FittedModule`'s ``fit`` runs in :func:`fitting_mode`
(set once, by the class), so its buffers are never inference tensors either.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from calib_metrics.functional.errors import check_dense, check_not_meta, warn_at_caller
from calib_metrics.functional.multiclass import ROW_SUM_TOLERANCE
from calib_metrics.models import linear_chain


@contextmanager
def fitting_mode() -> Iterator[None]:
    """Grad on and inference mode off, whatever the caller's context."""
    with torch.inference_mode(False), torch.enable_grad():
        yield


# Scores beyond ±this are masks (or as good as): a fit reads them at it, which leaves
# room for temperatures down to 1e-100 (float64's lowest value overflowed once divided by
# T < 1, and the gradient with it).
MASK_FLOOR = -1e200


def float64_copy(x: Tensor) -> Tensor:
    """A float64 copy that is a normal tensor (never an inference tensor) and needs no grad.

    Call inside :func:`fitting_mode` (a fit runs in it).
    """
    return plain_copy(x).to(torch.float64)


def masked_float64_copy(x: Tensor) -> Tensor:
    """:func:`float64_copy` with every score at or below :data:`MASK_FLOOR` made ``-inf``:
    a forbidden choice, as ``-inf`` is. Divided by T < 1 float64's lowest value had
    overflowed, and failed as "NaN or +inf"; read as a score, a -1e300 mask counted as an
    allowed choice once T was large, and anti-correlated scores had been fitted at T = 7.6e9
    rather than refused.

    Call inside :func:`fitting_mode` (a fit runs in it).
    """
    return float64_copy(x).masked_fill(x <= MASK_FLOOR, -math.inf)


def plain_copy(x: Tensor) -> Tensor:
    """A copy that autograd may save (an inference tensor's cannot be): masks, gold tags.

    Call inside :func:`fitting_mode` (a fit runs in it).
    """
    return x.detach().clone()


def check_tensor(x: object, name: str) -> Tensor:
    """``x``, a dense tensor (:func:`~calib_metrics.functional.errors.check_dense`) with
    values (not on the meta device): every recalibrator's first check of an input, before
    its shape is read (a nested tensor's had failed in torch, or as a shape mismatch)."""
    if not isinstance(x, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    check_dense(x, name)
    check_not_meta(x, name)
    return x


def check_floating(x: Tensor, name: str) -> None:
    """Refuse a tensor of integers (or bools): scores, logits and probabilities are real
    numbers, and an integer one would be divided and truncated. No host read."""
    if not x.is_floating_point():
        raise ValueError(f"{name} must be floating point, got dtype {x.dtype}")


def check_finite(x: Tensor, name: str) -> None:
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or infinite values")


def check_nonempty(x: Tensor, name: str) -> None:
    if x.numel() == 0:
        raise ValueError(f"{name} is empty: a recalibrator needs held-out data to fit on")


def check_binary_target(target: Tensor, like: Tensor, name: str = "scores") -> Tensor:
    """``target`` as float64 0/1 of ``like``'s shape, with both classes present."""
    target = check_tensor(target, "target")
    if tuple(target.shape) != tuple(like.shape):
        raise ValueError(
            f"target must have the shape of {name} {tuple(like.shape)}, got {tuple(target.shape)}"
        )
    check_finite(target.to(torch.float64) if not target.is_floating_point() else target, "target")
    outside = (target != 0) & (target != 1)
    if bool(outside.any()):
        bad = target[outside][0]
        raise ValueError(
            f"target must hold only 0 and 1 for binary recalibration, got "
            f"{label_repr(bad)}{_binary_label_hint(target, bad, name)}"
        )
    positives = int((target == 1).sum())
    if positives in (0, target.numel()):
        raise ValueError(
            f"target holds a single class ({'1' if positives else '0'} everywhere): "
            "a recalibrator cannot be fitted on it"
        )
    return target.to(torch.float64)


def _binary_label_hint(target: Tensor, bad: Tensor, name: str) -> str:
    """Labels of exactly -1 and +1 are a coding, not padding: dropping the -1s would
    leave a single class. Any other negative whole number may be padding."""
    if bool(bad % 1 != 0):
        return ""
    if bool(((target == -1) | (target == 1)).all()) and bool((target == 1).any()):
        return " (labels coded -1/+1? pass (target + 1) / 2)"
    return padding_hint(bad, name)


def label_repr(value: Tensor | float) -> str:
    """A label as a caller would type it: a whole number without ``.0`` (``-100``), else
    the fewest digits that give back the value in its own dtype (``-1e+30``, not 31 digits).

    Example:
        >>> label_repr(-100.0), label_repr(torch.tensor(-1e30)), label_repr(0.25)
        ('-100', '-1e+30', '0.25')
    """
    value = torch.as_tensor(value)
    number = value.item()
    if number % 1 == 0 and abs(number) < 1e15:
        return str(int(number))
    for digits in range(1, 17):
        text = f"{number:.{digits}g}"
        if bool(torch.tensor(float(text), dtype=value.dtype) == value):
            return text
    return repr(number)


def dropped_padding(value: Tensor | float = -100, inputs: str = "logits") -> str:
    """How a caller drops padding ``value`` before a fit, which takes no ``ignore_index``:
    the documented fix of token logits ``[B, T, C]`` (the mask also flattens them)."""
    return f"keep = target != {label_repr(value)}; fit({inputs}[keep], target[keep])"


def padding_hint(value: Tensor | float, inputs: str = "logits") -> str:
    """The end of the message for a class id ``value`` that is no class: where it looks
    like padding (a negative id, as HuggingFace's -100), how to drop it first; else
    nothing. The metrics' hint names their ``ignore_index`` instead, which a fit lacks.

    Example:
        >>> padding_hint(-100)
        ' (padding? drop it first: keep = target != -100; fit(logits[keep], target[keep]))'
        >>> padding_hint(4)
        ''
    """
    return f" (padding? drop it first: {dropped_padding(value, inputs)})" if value < 0 else ""


def tag_padding_hint(
    value: int | None,
    mask_given: bool = False,
    empty_row: int | None = None,
    leading_row: int | None = None,
    inside_row: int | None = None,
    method: str = "fit",
) -> str:
    """The fix of a structured model's gold ``tags`` padded with ``value`` (``None``: a
    mask given alone, whose layout a chain cannot read): one call for every problem
    present, as a chain's mask keeps a prefix of each row. Trailing padding alone is
    masked. A row of padding alone (``empty_row``, an empty sentence), padding at a
    sentence's first position (``leading_row``, a [CLS]) or inside it (``inside_row``,
    HuggingFace's sub-word pieces) are named, each by its first row, and fixed by
    :func:`~calib_metrics.models.left_align`, which moves each row's kept tokens to the
    front and drops the empty rows (each fix had been told alone, and the call it
    suggested refused for the next; then all of them as a 300-character gather). The call
    is ``method``'s (``nll`` had been told to call ``fit``).

    Example:
        >>> tag_padding_hint(-100), tag_padding_hint(5)
        (' (padding? pass mask=(tags != -100))', '')
        >>> tag_padding_hint(-100, mask_given=True)
        ' (padding? pass mask=mask & (tags != -100))'
        >>> print(tag_padding_hint(-100, empty_row=7, leading_row=0, inside_row=1))
         (padding at a sentence's first position (row 0), inside a sentence (row 1: sub-word
         pieces?) and filling row 7: from calib_metrics.models import left_align; aligned =
         left_align(emissions, tags); fit(aligned.emissions, transitions, start, end,
         aligned.tags, mask=aligned.mask))
        >>> hint = tag_padding_hint(-1, mask_given=True, empty_row=0, method="nll")
        >>> hint.split("= ")[1].split("; ")
        ['left_align(emissions, tags, mask, ignore_index=-1)', 'nll(aligned.emissions, ...)']
    """
    if value is not None and value >= 0:
        return ""
    if empty_row is None and leading_row is None and inside_row is None:
        return "" if value is None else linear_chain.padded_tags_hint(value, mask_given)
    arguments = "emissions, tags" + ", mask" * (mask_given or value is None)
    if value is not None and value != -100:
        arguments += f", ignore_index={value}"
    return (
        f" ({_named_layouts(value, empty_row, leading_row, inside_row)}: from"
        f" calib_metrics.models import left_align; aligned = left_align({arguments});"
        f" {method}(aligned.emissions, transitions, start, end, aligned.tags,"
        " mask=aligned.mask))"
    )


def _named_layouts(
    value: int | None, empty_row: int | None, leading_row: int | None, inside_row: int | None
) -> str:
    """Where the padding (or the masked tokens) lies that no chain mask can drop."""
    problems = []
    if leading_row is not None:
        problems.append(f"at a sentence's first position (row {leading_row})")
    if inside_row is not None:
        problems.append(f"inside a sentence (row {inside_row}: sub-word pieces?)")
    if empty_row is not None:
        problems.append(f"filling row {empty_row}")
    named = " and ".join([", ".join(problems[:-1]), problems[-1]] if problems[1:] else problems)
    return f"{'masked tokens' if value is None else 'padding'} {named}"


def check_probs(probs: Tensor, name: str = "probs") -> Tensor:
    probs = check_tensor(probs, name)
    check_floating(probs, name)
    check_finite(probs, name)
    if bool(((probs < 0) | (probs > 1)).any()):
        # As the metrics say it: scores outside [0, 1] are most often logits.
        raise ValueError(
            f"{name} must lie in [0, 1]: pass probabilities, not logits (apply sigmoid first)"
        )
    return probs


def logit(probs: Tensor, eps: float = 1e-12) -> Tensor:
    """``log(q / (1 - q))`` with ``q`` clamped to ``[eps, 1 - eps]`` so 0 and 1 stay finite."""
    q = probs.to(torch.float64).clamp(eps, 1 - eps)
    return torch.log(q) - torch.log1p(-q)


def check_finite_optimum(margins: Tensor, fitted: str) -> None:
    """Raise ValueError when the fitted model ranks every held-out item right: each item's
    ``margins`` (its label's score minus the best other one, at the fitted parameters; a
    binary item's signed score) ≥ 0 and some > 0. Sharpening then lowers the likelihood
    without end, so it has no finite optimum, and L-BFGS had stopped wherever its steps
    became small (T = 0.0019 on 40 items a model got all right, which sent 95% of a test
    set's probabilities to exactly 0 or 1). An item at a margin of 0 (a tie) does not
    stop it; one item below 0 does, however large the set. ``fitted`` names where the fit
    stopped (e.g. ``"T = 0.0019"``)."""
    if ranks_all_right(margins):
        first = int((margins > 0).sum())
        raise ValueError(
            f"the held-out data are separable: the fitted model ranks no item's label below "
            f"another ({first} of {margins.numel()} items first outright, the rest tied), so "
            f"sharpening it lowers the likelihood without end and it has no finite optimum "
            f"(the fit stopped at {fitted}); fit on more held-out data, on which the model "
            "makes some errors"
        )


def ranks_all_right(margins: Tensor) -> bool:
    """Whether ``margins`` (see :func:`check_finite_optimum`) are all ≥ 0 and some > 0:
    scaling such a model up lowers every item's loss or leaves it."""
    return bool((margins >= 0).all()) and bool((margins > 0).any())


def check_temperature_optimum(
    slope: float, scale: float, nll: float, uniform_nll: float, fitted: str, scores: str
) -> None:
    """Raise ValueError when a temperature fitted to the ``scores`` has no finite optimum at
    the flat end, ``T = ∞``, or when the fit stopped short of it.

    The NLL is convex in ``β = 1 / T``; ``β = 0`` divides the scores to 0 (uniform
    probabilities, forbidden choices kept forbidden). ``slope`` is ``dNLL/dβ`` at
    ``β = 0``: the mean over items of the uniform (or, with the other temperatures held,
    the flattened model's) expected score minus the label's score, a sample covariance of
    scores and labels. ``slope ≥ 0`` (to rounding, relative to ``scale``, the scores' size):
    the NLL is lowest at ``T = ∞`` and keeps falling as ``T`` grows, so there is no finite
    optimum (L-BFGS had stopped wherever its steps became small, ``T = 1.9e9`` on scores
    anti-correlated with the labels: uniform output, silently, or, on a chain,
    "separable"). ``slope < 0``: a finite ``T`` beats ``T = ∞``, so a fit whose mean dev
    NLL ``nll`` is no better than ``uniform_nll`` (at ``T = ∞``) stopped early (calibrated
    logits ×1e4 at ``max_iter=10``: ``T = 1.28e3`` against an optimum near 9600). The
    separable data of :func:`check_finite_optimum` are the other end, ``T → 0``; scores
    that do not depend on ``T`` at all (all equal) are the caller's to keep at ``T = 1``.
    ``fitted`` names where the fit stopped."""
    if slope >= -1e-10 * scale:
        raise ValueError(
            f"the held-out data leave no usable signal in the {scores}: the NLL keeps "
            "falling as T grows, towards T = ∞, where they count for nothing, so it has no "
            f"finite optimum (the fit stopped at {fitted}, doing no better than T = ∞); they "
            "are uncorrelated or anti-correlated with the labels: check that they are the "
            "model's scores for these labels (same order, same label coding)"
        )
    if nll >= uniform_nll - 1e-12 * (1 + abs(uniform_nll)):
        raise ValueError(
            f"the temperature fit of the {scores} did not converge (stopped at {fitted}, "
            "doing no better than T = ∞, though the scores correlate with the labels, so a "
            "finite T does better): raise max_iter"
        )


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_caller(message: str) -> None:
    """A UserWarning that names the line which called into the recalibrators: the first
    frame outside this package. A fit reaches its warnings at a depth that differs by kind
    (PlattScaling's fit calls the scalers' fit, each run in :func:`fitting_mode` by a
    frame of its own, and ``fit_binary`` adds one), so no fixed ``stacklevel`` names it."""
    warn_at_caller(message, _PACKAGE)


def warn_inverting(
    owner: str, why: str, outcome: str = "so the map fitted inverts the model"
) -> None:
    """Warn that ``owner``'s fit runs against the model's scores (``why``: a slope below 0,
    or dev labels against the scores), with its ``outcome``: most often dev labels coded
    the other way, or scores not the model's for them."""
    warn_caller(
        f"{owner}: {why}, {outcome}: check that the dev scores are the model's for these "
        "labels (same order, same label coding)"
    )


# Fewer of either label and the rank sum's normal approximation fails where scores tie:
# one positive among 4 scores of 0.01 and 46 of 0.02 gave z = -3.39 one time in 12.
MIN_EACH_LABEL = 10
# How far below 1/2 the AUC must be too where ties take half the ranks' variance or more:
# then the rank sum counts the positives in a few small tie groups, whose normal
# approximation fails whatever the labels' counts (5 scores of 0.30 beside 995 of 0.31, 50
# positives independent of them: z < -3 in 2.5% of fits, at an AUC of 0.49). Not where
# the scores spread (10⁵ uniform scores, z = -37 at an AUC of 0.43: an inversion).
MIN_AUC_GAP = 0.1


def labels_against(scores: Tensor, y: Tensor, noun: str) -> str | None:
    """How the dev labels ``y`` run against the ``scores`` where a rank test says they do
    (:func:`_rank_test`: the Mann-Whitney U test's z below -3, an AUC at most
    ``1/2 - MIN_AUC_GAP`` where ties take half the ranks' variance, and ``MIN_EACH_LABEL``
    of each label at least); None where not.
    "The positives' mean below the negatives'" had told a weak, calibrated model's dev
    set (scores in [0.45, 0.55], n = 50) so one time in three; Welch's z of the two means,
    which followed, missed an inversion behind one extreme score (its mean and variance
    are the outlier's) and told 9% of dev sets with 2 or 3 positives among 50 distinct,
    uninformative scores so. The message gives the two labels' mean scores
    (:func:`_label_means`) and the AUC. One host read."""
    z, auc, tied = _rank_test(scores, y)
    n1, n = y.sum(), y.numel()
    m1, m0, z, auc, tied, n1 = torch.stack([*_label_means(scores, y), z, auc, tied, n1]).tolist()
    weak = tied >= 0.5 and auc > 0.5 - MIN_AUC_GAP
    if z >= -3 or weak or min(n1, n - n1) < MIN_EACH_LABEL:
        return None
    mean = "mean probability" if noun == "probabilities" else "mean score"
    means = f"{mean} {m1:.3g} for label 1, {m0:.3g} for label 0, AUC {auc:.2f}"
    return f"the dev labels run against the {noun} ({means})"


def _rank_z(scores: Tensor, y: Tensor) -> Tensor:
    """:func:`_rank_test`'s z alone."""
    return _rank_test(scores, y)[0]


def _rank_test(scores: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The Mann-Whitney U test's z of the positives' (``y`` = 1) ``scores`` against the
    negatives', by its normal approximation without continuity correction (below 0 where
    the positives rank below), the AUC ``U / (n1 n0)``, and the share of the ranks'
    variance the ties take (0 without ties, 1 where all are equal). Ties take their midranks, and
    the variance is the tie-corrected ``n1 n0 / 12 · ((n + 1) - Σ(t³ - t) / (n (n - 1)))``,
    written as the permutation variance of the positives' rank sum,
    ``n1 n0 / (n (n - 1)) · Σ(r - r̄)²`` (the same number): a sum of squares, 0 exactly
    where all scores are equal, which then give z = 0. 0-dim float64 tensors on the
    scores' device (an AUC of 1/2 where a label is missing); no host read.

    The ranks are found by binary search of the sorted scores in themselves (each tie
    group spans ``[left, right)`` there), so no tie group's count is read to the host, and
    the labels follow the sort: the scores searched in their own order had jumped about
    the sorted array (45 s at 10⁷ pairs, 7 s so).

    Example:
        >>> scores = torch.tensor([0.1, 0.2, 0.2, 0.3, 0.4], dtype=torch.float64)
        >>> z, auc, tied = _rank_test(scores, torch.tensor([1.0, 0, 1, 0, 0]))
        >>> round(float(z), 4), round(float(auc), 4), round(float(tied), 4)
        (-1.4809, 0.0833, 0.05)
    """
    ordered, order = scores.flatten().sort()
    y = y.flatten().to(torch.float64)[order]
    n = y.numel()
    left = torch.searchsorted(ordered, ordered)
    right = torch.searchsorted(ordered, ordered, right=True)
    ranks = (left + right - n).to(torch.float64) / 2  # midrank less (n + 1) / 2: halves
    n1 = y.sum()
    pairs = n1 * (n - n1)
    shift = (ranks * y).sum()  # U - n1 n0 / 2: the rank sum less its mean
    spread = (ranks**2).sum()
    variance = pairs / (n * (n - 1)) * spread
    z = torch.where(variance > 0, shift / variance.clamp_min(1e-300).sqrt(), 0.0)
    auc = torch.where(pairs > 0, 0.5 + shift / pairs.clamp_min(1), 0.5)
    untied = n * (n * n - 1) / 12  # Σ(r - r̄)² of the ranks 1..n
    tied = 1 - spread / untied if n > 1 else spread.new_ones(())
    return z, auc, tied


def _label_means(scores: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """The positives' and the negatives' mean score (0-dim, on the scores' device). The
    scores are first scaled by a power of two into [-1, 1] and centred on their median,
    both exact for neighbouring scores: scores near float64's largest had overflowed the
    sums, and scores ulps apart, of equal means by label, had rounded into unequal
    ones."""
    exponent = torch.frexp(scores.abs().max()).exponent
    x = torch.ldexp(scores, -exponent)
    centre = x.median()
    x = x - centre
    m1 = (x * y).sum() / y.sum()
    m0 = (x * (1 - y)).sum() / (1 - y).sum()
    return torch.ldexp(m1 + centre, exponent), torch.ldexp(m0 + centre, exponent)


def flat_scores_warning(
    owner: str,
    scores: str,
    temperature: str = "T",
    how: str = "are all equal on each item's allowed choices (e.g. all 0, or 0 and -inf)",
) -> None:
    """Warn that the ``scores`` do not depend on the temperature (``how`` says why: all
    equal on each item's allowed choices, those not masked with -inf), which is kept at 1:
    any value fits as well as any other, as with Platt scaling's slope on equal scores."""
    warn_caller(
        f"{owner}: the {scores} it is fitted on {how}, so they do not depend on "
        f"{temperature} and cannot set it: kept {temperature} = 1; fit on held-out data "
        "whose scores vary"
    )


def constant_rows(x: Tensor, allowed: Tensor | None = None) -> bool:
    """Whether each row (last dim) of ``x`` takes one value on its finite entries (and
    ``allowed`` ones): a row with none counts as constant. One host read."""
    keep = torch.isfinite(x) if allowed is None else torch.isfinite(x) & allowed
    high = torch.where(keep, x, -math.inf).amax(-1)
    low = torch.where(keep, x, math.inf).amin(-1)
    return bool((high <= low).all())


# The quantile of the rows' top gaps at which a temperature fit starts (typical_gap).
GAP_QUANTILE = 0.1


def typical_gap(*parts: Tensor) -> Tensor:
    """A low quantile (:data:`GAP_QUANTILE`) over the rows of ``parts`` (last dim) of the
    gap between a row's largest finite score and its next lower one: the temperature at
    which a fit starts, so that the fit is scale-free. Rows without two distinct finite
    scores do not count; where none has two, the start is 1.

    L-BFGS stops on absolute tolerances, and a fit started at ``T = 1`` on scores of size
    1e-6 found the NLL flat there and returned ``T = 1`` (uniform outputs) silently. At
    this temperature a typical row's best score leads by about 1. A start below the
    optimum is safe (the NLL is steep there), one far above it is not (flat): masked
    classes written as large finite scores (``-1e9``, ``finfo.min``) only make gaps
    larger, so the measure is the top gap, not a row's spread (masks in most of a row
    set its median, and a fit started at ``T`` ≈ 1e37), and a low quantile, not the
    median (forbidden transitions of ``-1e30`` in most rows of a transition matrix).

    Example:
        >>> rows = torch.tensor([[1.0, 2.0, 4.0], [0.0, 3.0, -1e9], [5.0, 5.0, -1e9]])
        >>> typical_gap(1e-7 * rows)  # gaps 2, 3 and 1e9 (the tie at 5 is one score)
        tensor(2.0000e-07)
    """
    gaps = []
    for rows in parts:
        kept = torch.where(torch.isfinite(rows), rows, -math.inf)
        top = kept.amax(-1, keepdim=True)
        below = torch.where(kept < top, kept, -math.inf).amax(-1)
        gaps.append((top.squeeze(-1) - below).flatten())
    gap = torch.cat(gaps)
    gap = gap[torch.isfinite(gap) & (gap > 0)]  # one host read: a fit's start, once
    if gap.numel() == 0:
        # Scores that vary only between rows (transitions set by the source tag alone):
        # no row has a gap, and the start is T = 1, as before.
        return torch.ones((), dtype=gap.dtype, device=gap.device)
    return gap.kthvalue(math.ceil(GAP_QUANTILE * gap.numel())).values


def typical_spread(scores: Tensor) -> Tensor:
    """The median distance of the (flat, finite) ``scores`` from their median, zeros left
    out: the unit in which Platt's slope is fitted, so that the fit is scale-free (from
    slope 1, scores of size 1e-7 left the NLL flat and the slope at 1).

    Example:
        >>> typical_spread(1e-7 * torch.tensor([1.0, 2.0, 2.0, 4.0, 8.0]))
        tensor(2.0000e-07)
    """
    distance = (scores - scores.median()).abs()
    return torch.where(distance > 0, distance, math.nan).nanmedian()


def lbfgs(
    params: list[Tensor], loss_fn: Callable[[], Tensor], max_iter: int = 200, tol: float = 1e-10
) -> float:
    """Minimise ``loss_fn`` over ``params`` (float64 leaves) by L-BFGS with a Wolfe search;
    note when it used all ``max_iter`` iterations and is still far from a stationary point
    (:func:`note_unconverged`)."""
    optimizer = torch.optim.LBFGS(
        params,
        lr=1.0,
        max_iter=max_iter,
        tolerance_grad=tol,
        tolerance_change=tol * 1e-2,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure() -> Tensor:
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    try:
        optimizer.step(closure)
    except IndexError as err:  # torch's strong-Wolfe search, lost on scores of 1e199 and up
        raise ValueError(
            "recalibration did not converge: the line search failed (scores of extreme size?)"
        ) from err
    with torch.no_grad():
        loss = float(loss_fn())
    if loss != loss:  # NaN: the data admit no finite optimum
        raise ValueError("recalibration did not converge (NaN loss)")
    # The budget spent: max_iter iterations, or torch's default max_eval of evaluations
    # (5/4 of them; the line search spends several an iteration).
    spent = optimizer.state[params[0]]
    if spent.get("n_iter", 0) >= max_iter or spent.get("func_evals", 0) >= max_iter * 5 // 4:
        note_unconverged(params, loss_fn, max_iter)
    return loss


# A mean NLL's gradient above this, per parameter, at the last iteration: not converged.
UNCONVERGED_GRADIENT = 1e-3


# The L-BFGS runs of the fit in progress that stopped short: (max_iter, steepest gradient).
_STOPPED_SHORT: ContextVar[list[tuple[int, float]] | None] = ContextVar(
    "stopped_short", default=None
)


def note_unconverged(params: list[Tensor], loss_fn: Callable[[], Tensor], max_iter: int) -> None:
    """Note, for the fit in progress to warn of once it succeeds (:func:`_in_fitting_mode`),
    an L-BFGS run that used all ``max_iter`` iterations and stopped where the loss still
    falls steeply (a gradient entry above :data:`UNCONVERGED_GRADIENT`): vector scaling at
    ``max_iter=2`` had sharpened 3× overconfident logits further (dev NLL 2.06 against
    1.83 unscaled and 1.24 converged), silently. A fit that then refuses its data
    (separable, no signal) says only that: no value of ``max_iter`` would help."""
    stopped = _STOPPED_SHORT.get()
    if stopped is None:  # no fit to warn: the gradient is not worth a pass
        return
    gradients = torch.autograd.grad(loss_fn(), params, allow_unused=True)
    steepest = max(float(g.abs().max()) for g in gradients if g is not None and g.numel())
    if steepest > UNCONVERGED_GRADIENT:
        stopped.append((max_iter, steepest))


def _warn_stopped_short(module: nn.Module, stopped: list[tuple[int, float]]) -> None:
    """One warning for a fit whose L-BFGS runs stopped short (:func:`note_unconverged`),
    naming the ``max_iter`` to raise: the module's, or that of the fit inside it
    (``ScalingBinning``'s Platt step, ``.platt.max_iter``)."""
    max_iter = min(m for m, _ in stopped)
    steepest = max(g for _, g in stopped)
    owner = next(
        (f".{name}.max_iter" for name, child in module.named_children()
         if getattr(child, "max_iter", None) == max_iter and not hasattr(module, "max_iter")),
        "max_iter",
    )  # fmt: skip
    warn_caller(
        f"{type(module).__name__}: the fit stopped at max_iter={max_iter} before converging "
        f"(a gradient of {steepest:.2g} is left): it may be far from the optimum, even worse "
        f"than no recalibration; raise {owner}"
    )


class SettingsInState:
    """Mixin of a :class:`FittedModule` whose constructor ``settings`` give its fitted
    buffers their meaning (``inputs="probs"`` reads a temperature through ``logit(q)``,
    ``binning="uniform"`` reads the edges as equal-width): they travel in the state as its
    extra state, and a load into a module built otherwise is refused before anything
    changes. A module built with the defaults had loaded a ``fit_binary`` state ("All keys
    matched") and mapped 0.05 to 0.51. A state from before the settings were saved loads
    as it did."""

    settings: tuple[str, ...] = ()
    #: Per setting and value, what a module of that value does (said in a refusal, of the
    #: module's value and the state's).
    otherwise: ClassVar[dict[str, dict[Any, str]]] = {}

    def get_extra_state(self) -> dict[str, Any]:
        """The kind's name (:meth:`FittedModule.get_extra_state`) and the settings."""
        kind = super().get_extra_state()  # type: ignore[misc]
        return {**kind, **{name: getattr(self, name) for name in self.settings}}

    def check_settings(self, state_dict: dict[str, Any], prefix: str) -> None:
        """Refuse a state saved with other ``settings`` than this module's (once
        :meth:`FittedModule.check_settings` has refused another kind's)."""
        super().check_settings(state_dict, prefix)  # type: ignore[misc]
        saved = self.saved_settings(state_dict, prefix)  # type: ignore[attr-defined]
        said = self.said_as  # type: ignore[attr-defined]
        for name in self.settings:
            if name in saved and saved[name] != getattr(self, name):
                raise ValueError(
                    f"{said}: the state was fitted with {self._setting(name, saved[name])}, "
                    f"this module has {self._setting(name, getattr(self, name))}: build it "
                    f"with {name}={saved[name]!r}"
                )

    def _setting(self, name: str, value: Any) -> str:
        """``name=value``, and what a module of that value does where the kind says it: the
        refusal had said one value's meaning whichever way round the two were."""
        does = self.otherwise.get(name, {}).get(value)
        return f"{name}={value!r}" + (f" (which {does})" if does else "")


def _is_real(buffer: Tensor | None) -> bool:
    """Whether a buffer holds real numbers (a fitted parameter, float64 by design), not a
    flag or a count."""
    return buffer is not None and buffer.is_floating_point()


def _first_value(values: Tensor) -> str:
    """A temperature's value as the state holds it, or its first non-positive entry.

    Example:
        >>> _first_value(torch.tensor(-1.0)), _first_value(torch.tensor([2.0, 0.0]))
        ('-1', '0 (entry 1)')
    """
    if values.ndim == 0:
        return f"{values.item():g}"
    index = int((values <= 0).flatten().nonzero()[0])
    return f"{values.flatten()[index].item():g} (entry {index})"


def _dimensions(ndim: int) -> str:
    """A buffer's number of dimensions in words.

    Example:
        >>> [_dimensions(n) for n in (0, 1, 2)]
        ['a single value (shape [])', 'a vector (1 dimension)', 'a matrix (2 dimensions)']
    """
    if ndim == 0:
        return "a single value (shape [])"
    kind = {1: "a vector", 2: "a matrix"}.get(ndim, "an array")
    return f"{kind} ({ndim} dimension{'s' if ndim != 1 else ''})"


@contextmanager
def _unchanged_if_refused(module: nn.Module) -> Iterator[None]:
    """Leave ``module`` (and its submodules) as it was when the block raises: a refused
    fit had already set ``nll_`` (the refused optimum's, beside the kept temperature), and
    a load refused by torch's check of the keys had already loaded the rest."""
    # Fits and loads assign new tensors and values (a load copies into buffers made anew,
    # FittedModule._replace_buffers), never edit them in place: shallow copies do.
    kept = [
        (part, dict(part._buffers), dict(part._parameters), _fit_attributes(part))
        for part in module.modules()
    ]
    try:
        yield
    except BaseException:
        for part, buffers, parameters, attributes in kept:
            part._buffers.clear()
            part._buffers.update(buffers)
            part._parameters.clear()
            part._parameters.update(parameters)
            for name in set(_fit_attributes(part)) - set(attributes):
                delattr(part, name)
            part.__dict__.update(attributes)
        raise


def _fit_attributes(module: nn.Module) -> dict[str, Any]:
    """What a fit or a load sets besides buffers: its public attributes (scikit-learn's
    ``name_`` ones, ``nll_`` and ``flat_``, and a binning module's ``n_bins``, which a load
    takes from the state), and the host copies of buffers (:meth:`FittedModule.host_value`)."""
    attributes = {k: v for k, v in vars(module).items() if not k.startswith("_")}
    if "_host_values" in vars(module):
        attributes["_host_values"] = dict(module._host_values)
    return attributes


def _refuse_a_fit_on_meta(module: nn.Module) -> None:
    """Refuse to fit a module on the ``meta`` device, which holds no values: a scaler
    built under ``torch.device("meta")`` (as Lightning's ``init_module`` builds modules)
    had taken its fit to its own device without a word, and failed at its first call
    ("Tensor.item() cannot be called on meta tensors"); ScalingBinning failed so inside
    its fit. Every kind alike, though the binning kinds keep a fit on the data's device."""
    if any(buffer.is_meta for buffer in module.buffers()):
        raise ValueError(
            f"{type(module).__name__} is on the meta device, which holds no values: it "
            "cannot keep a fit. Build it outside torch.device('meta') (to_empty() would "
            "leave its buffers uninitialised, 'fitted' among them), or load a fitted "
            "state into it with load_state_dict(state, assign=True)"
        )


def _in_fitting_mode(fit: Callable) -> Callable:
    """``fit`` run in :func:`fitting_mode`, whatever its caller's context, leaving the
    module as it was when it refuses (:func:`_unchanged_if_refused`)."""

    @functools.wraps(fit)
    def fit_in_fitting_mode(self: FittedModule, *args: Any, **kwargs: Any) -> Any:
        if _STOPPED_SHORT.get() is not None:  # a fit inside another (Platt's scaler)
            with fitting_mode():
                return fit(self, *args, **kwargs)
        stopped: list[tuple[int, float]] = []
        token = _STOPPED_SHORT.set(stopped)
        try:
            _refuse_a_fit_on_meta(self)
            with fitting_mode(), _unchanged_if_refused(self):
                fitted = fit(self, *args, **kwargs)
        finally:
            _STOPPED_SHORT.reset(token)
        if stopped:  # said once the fit stands: a refused one says why, alone
            _warn_stopped_short(self, stopped)
        return fitted

    return fit_in_fitting_mode


#: The library's recalibrator kinds by name (:meth:`FittedModule.get_extra_state`).
_KINDS: dict[str, type] = {}


def _kind_of(cls: type) -> type | None:
    """The library kind ``cls`` is: itself, or the one a user's subclass of it extends
    (None for a module of no library kind)."""
    return next((c for c in cls.__mro__ if _KINDS.get(c.__name__) is c), None)


def _arguments_taken(cls: type) -> set[str]:
    """The constructor arguments of ``cls`` and of the classes it extends up to its library
    kind: a user's subclass passing ``**kwargs`` on takes its kind's (the settings of a
    state that ``MyHB(n_bins=5)`` saved had been called "a setting this kind has not" by
    ``MyHB()``). Not those of the library's base classes beyond its kind: a VectorScaling
    takes no ``inputs=``, which its base class does."""
    kind, taken = _kind_of(cls), set()
    for part in cls.__mro__:
        init = vars(part).get("__init__")
        if init is not None and issubclass(part, FittedModule):
            parameters = list(inspect.signature(init).parameters.values())[1:]  # less self
            taken |= {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        if part is kind:
            break
    return taken


class FittedModule(nn.Module):
    """An ``nn.Module`` whose buffers take the shapes they are loaded with.

    Binning recalibrators learn a number of bins that depends on the data; a fresh object
    must still accept their ``state_dict``, and ``fitted`` (a buffer) says whether the
    object has been fitted or loaded.

    Every subclass's ``fit`` runs in :func:`fitting_mode`, set here once for all kinds:
    fitted under ``torch.inference_mode`` (a Lightning hook), the binning modules had kept
    inference tensors as buffers, and a later call on scores that require grad failed
    ("Inference tensors cannot be saved for backward").
    """

    #: The names of the submodules a kind holds (``ScalingBinning``'s ``platt``): the
    #: keys under them mark a state of that kind (:meth:`_refuse_parts_not_held`).
    parts: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "fit" in cls.__dict__:
            cls.fit = _in_fitting_mode(cls.__dict__["fit"])  # type: ignore[attr-defined]
        if cls.__module__.startswith("calib_metrics.") and not cls.__name__.startswith("_"):
            _KINDS[cls.__name__] = cls

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fitted", torch.tensor(False))

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(name, value)
        # A buffer assigned anew (fit): its host copy is read again when next needed.
        self.__dict__.get("_host_values", {}).pop(name, None)

    def host_value(self, name: str) -> bool | int | float:
        """A 0-dim buffer's value on the host, read from the device once after each fit or
        load and then remembered, so that ``forward`` does not wait for the device to
        learn whether the module is fitted, or its number of classes. Only for those two,
        which no use edits in place: a fitted parameter (a temperature an optimizer steps,
        or one set by ``fill_``) is read from its tensor at each call, never from here."""
        cache = self.__dict__.setdefault("_host_values", {})
        if name not in cache:
            cache[name] = getattr(self, name).item()
        return cache[name]

    def _apply(self, fn: Callable, recurse: bool = True) -> FittedModule:
        """Follow a module-wide conversion's device, never its dtype.

        The fitted parameters are float64 by design: ``.half()`` or a parent's
        ``.to(torch.bfloat16)`` rounded a temperature of 0.53423 to 0.53418, and made
        ``MatrixScaling`` fail on the next call (a float64 matrix times float16 ones).
        The module still takes logits of any float dtype and returns their dtype.
        """

        def device_only(tensor: Tensor) -> Tensor:
            # An empty probe shows where fn sends the tensor, and whether it would cast it.
            probe = fn(torch.empty(0, dtype=tensor.dtype, device=tensor.device))
            return fn(tensor) if probe.dtype == tensor.dtype else tensor.to(probe.device)

        return super()._apply(device_only, recurse)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """torch's load, and a load refused leaves the module (and the modules inside it)
        as it was. torch checks the keys (``strict=True``) once every module has loaded:
        a fitted HistogramBinning state had loaded its edges into a ScalingBinning, marked
        it fitted, and only then been refused for the Platt step's missing keys; each kind
        had kept the rest of its own state less a key. The refusals that come before any
        change (:meth:`_checked_state`) are the library's; this one is torch's, undone.
        Inside another module, torch's load of that module decides, as for any module."""
        with _unchanged_if_refused(self):
            return super().load_state_dict(state_dict, strict=strict, assign=assign)

    @property
    def said_as(self) -> str:
        """Who its messages name: its class, unless a module holding it speaks for it
        (:class:`~calib_metrics.recalibration.binning.ScalingBinning`'s Platt step)."""
        return type(self).__name__

    @property
    def said_kind(self) -> str:
        """The kind its messages name: :attr:`said_as`'s, less what it says of the part
        ("ScalingBinning" for its Platt step, whose state is a ScalingBinning's)."""
        return self.said_as.partition(" (")[0]

    def _load_from_state_dict(  # type: ignore[override]
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, errors
    ) -> None:
        foreign = self.keys_not_held(state_dict, prefix)
        lacked = self._keys_lacked(state_dict, prefix)
        # A state holding all of this module's keys is of its kind, whatever else it
        # holds but a part this module has not (check_settings): it loads, and torch names
        # the extra keys as it does for any module (a TemperatureScaling state beside a
        # 'note' had loaded nothing with strict=False, its result naming no key missing).
        if strict and foreign and lacked:
            # Another kind's state: torch's own strict check names its keys, and this
            # module is left as it was (torch passes strict=True here for every load: with
            # strict=False nothing of it loads, its result naming the keys, where 'fitted'
            # alone would have loaded). Its values checked first, an IsotonicCalibration
            # had been told of "the state's y_thresholds" by a state that holds none (a
            # HistogramBinning's), and a PlattScaling refused a TemperatureScaling's state
            # marked fitted, its slope and intercept the defaults.
            unexpected_keys.extend(foreign)
            missing_keys.extend(lacked)
            return
        state_dict = self._checked_state(state_dict, prefix)
        args = (local_metadata, strict, missing_keys, unexpected_keys, errors)
        # Buffers made under torch.inference_mode (a Lightning evaluation hook) would be
        # inference tensors, which a later call on scores that require grad cannot use.
        with torch.inference_mode(False):
            self._replace_buffers(state_dict, prefix, *args)
        self.__dict__.get("_host_values", {}).clear()  # loaded in place: read again
        key = prefix + "_extra_state"
        if key not in state_dict and key in missing_keys:  # saved before it travelled
            missing_keys.remove(key)

    def keys_not_held(self, state_dict: dict[str, Any], prefix: str) -> list[str]:
        """The keys under ``prefix`` that name nothing of this module (another kind's
        state), as torch's strict load finds them; a module inside it reads its own."""
        ours = self._buffers.keys() | self._parameters.keys() | {"_extra_state"}
        foreign = []
        for key in (k for k in state_dict if k.startswith(prefix)):
            name, *inside = key[len(prefix) :].split(".", 1)
            if name not in (self._modules if inside else ours):
                foreign.append(key)
        return foreign

    def _keys_lacked(self, state_dict: dict[str, Any], prefix: str) -> list[str]:
        """This module's own keys (not its extra state, which older states lack) that
        ``state_dict`` lacks under ``prefix``."""
        own = [n for n, b in self._buffers.items() if b is not None] + list(self._parameters)
        kept = [n for n in own if n not in self._non_persistent_buffers_set]
        return [prefix + n for n in kept if prefix + n not in state_dict]

    def _checked_state(self, state_dict: dict[str, Any], prefix: str) -> dict[str, Any]:
        """``state_dict``, its single values of shape [1] under ``prefix`` as shape [],
        once this module's part (:meth:`check_settings`, :meth:`check_state`) and that of
        every fitted module inside it are checked: torch loads a module before the modules
        inside it, and a ``ScalingBinning``'s edges had been replaced by a state that its
        Platt step then refused."""
        loaded = {
            name: state_dict[prefix + name]
            for name, buffer in self._buffers.items()
            if buffer is not None and isinstance(state_dict.get(prefix + name), Tensor)
        }
        single = {
            name: value.reshape(())
            for name, value in loaded.items()
            if self._buffers[name].ndim == 0 and value.shape == (1,)  # type: ignore[union-attr]
        }
        if single:
            # A single value of shape [1] (a temperature set by hand as torch.tensor([1.5]))
            # had loaded and broadcast as the value itself: it still does, as shape [].
            loaded.update(single)
            state_dict = {**state_dict, **{prefix + name: v for name, v in single.items()}}
        self.check_settings(state_dict, prefix)
        self.check_state(loaded)
        for name, module in self.named_children():
            if isinstance(module, FittedModule):
                module._checked_state(state_dict, f"{prefix}{name}.")
        return state_dict

    def get_extra_state(self) -> dict[str, Any]:
        """What travels beside the buffers: the name of the library kind that saved the
        state (a user's subclass saves its kind's), read by :meth:`check_settings`; the
        settings of a kind that has any (:class:`SettingsInState`)."""
        kind = _kind_of(type(self))
        return {} if kind is None else {"kind": kind.__name__}

    def set_extra_state(self, state: Any) -> None:
        """Checked in :meth:`check_settings`, before any buffer changes."""

    def saved_settings(self, state_dict: dict[str, Any], prefix: str) -> dict[str, Any]:
        """The settings the state under ``prefix`` was saved with, less the kind that saved
        it ({} where it holds none: saved before they travelled, or by hand). Read beside
        keys of no part of this module too: a state of its kind beside an extra key loads
        with ``strict=False``, and a ``fit_binary`` TemperatureScaling's had loaded so into
        one built with the defaults, its ``inputs='probs'`` unread."""
        saved = state_dict.get(prefix + "_extra_state")
        if not isinstance(saved, dict):
            return {}
        return {name: value for name, value in saved.items() if name != "kind"}

    def check_settings(self, state_dict: dict[str, Any], prefix: str) -> None:
        """Refuse a state (``state_dict``'s part under ``prefix``) that another kind saved,
        or that was saved with a setting this kind does not take; a kind's own settings are
        compared by :class:`SettingsInState`.

        The state names the kind that saved it: a ``ScalingBinning``'s, which holds every
        key of a ``HistogramBinning`` and its Platt step's besides, had loaded into one with
        ``strict=False``, marked fitted, its edges (on the Platt scale) read as scores'. A
        subclass's state counts as its kind's, both ways. A state saved before the kind
        travelled is known by its keys and settings: a ``HistogramBinning``'s ``binning=``
        in a ``ScalingBinning``, whose keys it all holds, and a ``ScalingBinning``'s
        ``platt.*`` keys in a ``HistogramBinning`` (:meth:`_refuse_parts_not_held`). A
        setting this kind takes but no longer saves (``inputs=`` of a ``HistogramBinning``
        or an ``IsotonicCalibration`` saved between c3b195b and 77ad799) is no sign of
        another kind; one it does not take (a newer version's?) is refused, as the buffers
        may mean something else under it."""
        extra = state_dict.get(prefix + "_extra_state")
        said, kind = self.said_as, _kind_of(type(self))
        named = isinstance(extra, dict) and "kind" in extra and kind is not None
        if not named:
            self._refuse_parts_not_held(state_dict, prefix)
        if not isinstance(extra, dict):
            return
        if "kind" in extra and kind is not None:
            saver = _KINDS.get(extra["kind"]) if isinstance(extra["kind"], str) else None
            if saver is None:
                raise ValueError(
                    f"{said}: the state was saved by {extra['kind']!r}, a kind this version "
                    "of calib_metrics has not: load it into the module that saved it"
                )
            if not (issubclass(kind, saver) or issubclass(saver, kind)):
                raise ValueError(
                    f"{said}: the state is a {saver.__name__}'s: load it into a "
                    f"{saver.__name__} (a state names the kind that saved it, where this "
                    f"module is a {kind.__name__})"
                )
        kept, taken = self.get_extra_state(), _arguments_taken(type(self))
        for name, value in self.saved_settings(state_dict, prefix).items():
            if name not in taken and (name not in kept or value != kept[name]):
                whose = (
                    "a state of another version of calib_metrics"
                    if named
                    else "another kind's state, or one of another version"
                )
                raise ValueError(
                    f"{said}: the state was fitted with {name}={value!r}, a setting this "
                    f"kind does not take ({whose}): load it into the module that saved it"
                )

    def _refuse_parts_not_held(self, state_dict: dict[str, Any], prefix: str) -> None:
        """Refuse a state that names no kind but holds keys of a part this module has not:
        only another kind's state has them. A ScalingBinning state saved before states
        named their kind holds every key of a HistogramBinning and its Platt step's
        besides, and had loaded into one with ``strict=False``, marked fitted, its
        Platt-scale edges read as scores. A key of no library kind's part (a ``'note'``,
        a ``'meta.version'``) is no sign of another kind: torch names it, as for any
        module."""
        library_parts = {part for kind in _KINDS.values() for part in kind.parts}
        parts = [
            key
            for key in self.keys_not_held(state_dict, prefix)
            if key[len(prefix) :].split(".")[0] in library_parts and "." in key[len(prefix) :]
        ]
        if parts:
            belong = "belongs" if len(parts) == 1 else "belong"
            raise ValueError(
                f"{self.said_as}: the state holds {', '.join(map(repr, parts))}, which {belong} "
                f"to no part of a {self.said_kind}: it is another kind's state (saved before "
                "states named their kind): load it into the module that saved it"
            )

    def _replace_buffers(self, state_dict, prefix, *args, **kwargs) -> None:
        """Load the state's buffers, each made anew in the state's shape and dtype."""
        real = [name for name, buffer in self._buffers.items() if _is_real(buffer)]
        for name in list(self._buffers):
            key = prefix + name
            if key in state_dict and self._buffers[name] is not None:
                incoming = state_dict[key]
                self._buffers[name] = torch.empty_like(incoming, device=self._buffers[name].device)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        # The fitted parameters stay float64, as a fit makes them, whatever dtype the state
        # holds (a hand-made state is float32, torch's default): a float32 matrix had
        # loaded "All keys matched", and every call of MatrixScaling then failed ("expected
        # m1 and m2 to have the same dtype"). Also after a load with assign=True.
        for name in real:
            self._buffers[name] = self._buffers[name].to(torch.float64)  # type: ignore[union-attr]

    def check_state(self, state: dict[str, Tensor]) -> None:
        """Refuse, before a load changes anything, a state whose buffers (``state``: this
        module's, by name) this module would read otherwise: one of another number of
        dimensions than this kind keeps (every fit keeps it). A ``VectorScaling`` state in
        a ``MatrixScaling`` had matched every key, and its weight [C] was read as a matrix:
        outputs of shape [3] for 3 items, a RuntimeError for 2."""
        for name, incoming in state.items():
            ndim = self._buffers[name].ndim  # type: ignore[union-attr]
            if incoming.ndim != ndim:
                raise ValueError(
                    f"{self.said_as}: the state's {name} has shape "
                    f"{list(incoming.shape)}, where this module keeps {_dimensions(ndim)}: "
                    f"{self._other_kind(name, incoming)}"
                )
        self._check_values(state)
        self._check_flag(state)

    def _check_flag(self, state: dict[str, Tensor]) -> None:
        """Refuse a ``fitted`` flag other than False or True (0 or 1), what a module keeps
        before and after its fit: 2 had loaded, and read as fitted (one host read)."""
        flag = state.get("fitted")
        if flag is None or flag.is_meta:  # a key a partial load lacks keeps the module's own
            return
        value = flag.item()
        if value not in (0, 1):  # NaN included
            raise ValueError(
                f"{self.said_as}: the state's fitted is {value!r}, where a module keeps False "
                "or True (0 or 1): load a state this kind saved"
            )

    #: Buffers that hold a temperature: a fit keeps each positive.
    positive: tuple[str, ...] = ()

    def _check_values(self, state: dict[str, Tensor]) -> None:
        """Refuse fitted parameters that no fit makes (one host read a buffer): NaN or
        infinite values, and a temperature of 0 or less. Loaded, T = -1 had reversed every
        ranking and T = 0 or NaN returned NaN probabilities, with no word."""
        for name, incoming in state.items():
            if not _is_real(self._buffers[name]) or incoming.dtype == torch.bool:
                continue
            # Read as the load stores it (float64): T = -1 saved as an integer too.
            incoming = incoming.to(torch.float64)
            finite, positive = torch.stack(
                [torch.isfinite(incoming).all(), (incoming > 0).all()]
            ).tolist()
            if not finite:
                raise ValueError(
                    f"{self.said_as}: the state's {name} holds NaN or infinite "
                    "values, which no fit makes: load a state this kind saved"
                )
            if name in self.positive and not positive:
                raise ValueError(
                    f"{self.said_as}: the state's {name} is "
                    f"{_first_value(incoming)}; a temperature must be positive (a fit "
                    "keeps it so): load a state this kind saved"
                )

    def _other_kind(self, name: str, incoming: Tensor) -> str:
        """How to load a state whose ``name`` buffer is ``incoming``, which this kind's is
        not: the module to build, where its shape says."""
        return f"the state is not a {self.said_kind}'s; load it into the module that saved it"

    def check_fitted(self) -> None:
        if not self.host_value("fitted"):
            raise ValueError(f"{type(self).__name__} is not fitted: call fit(...) first")


def looks_like_probabilities(logits: Tensor) -> bool:
    """Whether multiclass "logits" ``[M, C]`` are rows of probabilities: all in [0, 1], each
    summing to 1 (in float64) within the library's tolerance for rows of class probabilities
    (``ROW_SUM_TOLERANCE``, the metrics' row check) or, where wider, their dtype's rounding
    (:func:`row_sum_rounding`). Fitted as logits they gave a meaningless temperature and a
    "before" error of softmax(p), not of the model (0.27 where the model's was 0.045), with
    no word; summed in their own dtype to 1e-3, a ``bf16-mixed`` step's softmax rows (off
    by up to 3e-3) were fitted so. Logits in [0, 1] whose every row sums to 1 are no
    model's. One host read."""
    if logits.ndim != 2 or logits.numel() == 0:
        return False
    in_range = ((logits >= 0) & (logits <= 1)).all()
    off = (logits.sum(-1, dtype=torch.float64) - 1).abs().amax()
    tolerance = max(ROW_SUM_TOLERANCE, row_sum_rounding(logits.dtype, logits.shape[-1]))
    return bool(in_range & (off <= tolerance))


def row_sum_rounding(dtype: torch.dtype, num_classes: int) -> float:
    """How far from 1 a softmax's row of ``num_classes`` values in ``dtype`` may sum, by
    rounding alone, with a factor 2 to spare: each value rounded to the dtype moves by half
    an ulp, ``eps / 2`` of it (the row by ``eps / 2``, as its values sum to 1) or, below the
    normal range, half the smallest subnormal (``C`` of those); the softmax computes them
    in float32 at least (torch's does for half precision), whose sum of ``C`` terms is off
    by up to ``C`` roundings. Above ``ROW_SUM_TOLERANCE`` only for half precision and
    tens of thousands of classes (bfloat16: 0.0078 + C · 1.2e-7).

    Example:
        >>> round(row_sum_rounding(torch.bfloat16, 4), 5), row_sum_rounding(torch.float64, 4)
        (0.00781, 1.11...e-15)
    """
    own = torch.finfo(dtype)
    computed = torch.finfo(torch.promote_types(dtype, torch.float32))
    subnormal = own.smallest_normal * own.eps
    return own.eps + num_classes * (subnormal + computed.eps)


def scores_within_unit(scores: Tensor) -> bool:
    """Whether every score lies in [0, 1], some strictly inside, as sigmoid outputs do (one
    host read): scores of 0 alone are no sign of them.

    Example:
        >>> scores_within_unit(torch.tensor([0.2, 1.0])), scores_within_unit(torch.zeros(3))
        (True, False)
    """
    inside = (scores > 0) & (scores < 1)
    return bool(((scores >= 0) & (scores <= 1)).all() & inside.any())
