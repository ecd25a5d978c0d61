"""Non-parametric recalibrators of binary scores: histogram binning, isotonic, scaling-binning.

All take scores ``[N]`` (probabilities, or any score that orders items by confidence) and
0/1 targets on a held-out set, and map new scores to probabilities. They are binary; a
multiclass or structured model goes through its one-vs-rest queries (``queries.py``)
first, or through a scaler of :mod:`calib_metrics.recalibration.scaling`.

* :class:`HistogramBinning` (Zadrozny & Elkan 2001): equal-mass (or equal-width) bins of
  the dev scores; a score maps to its bin's dev frequency of positives.
* :class:`IsotonicCalibration` (Zadrozny & Elkan 2002): the monotone least-squares fit,
  computed by scikit-learn's ``IsotonicRegression`` at the numpy edge; applied in torch
  by the same linear interpolation between its thresholds (clipped outside them).
* :class:`ScalingBinning` (Kumar, Liang & Ma 2019): Platt scaling fitted on one half of
  dev, then equal-mass bins of the scaled scores on the other half, each bin mapping to
  the mean *scaled* score in it. The output takes few values (so its calibration error
  can be measured, their point) yet keeps Platt's low variance.

Each fit warns where the dev data cannot inform it: scores all equal (every score maps to
the dev frequency of class 1), or labels that run against the scores (a map that inverts
the model; isotonic's, non-decreasing, is flattened instead). Histogram binning and
isotonic regression also warn of dev labels the scores separate, which they fit with a map
of exactly 0 or 1 where Platt and temperature scaling refuse them (as scaling-binning's
Platt step does).
"""

from __future__ import annotations

import math
from decimal import ROUND_FLOOR, Context, Decimal
from typing import Any

import torch
from torch import Tensor

from calib_metrics.functional.binning import uniform_bin_of
from calib_metrics.functional.calibration import MAX_UNIFORM_BINS
from calib_metrics.functional.errors import check_generator
from calib_metrics.recalibration._common import (
    FittedModule,
    SettingsInState,
    check_binary_target,
    check_finite,
    check_floating,
    check_nonempty,
    check_probs,
    check_tensor,
    labels_against,
    warn_caller,
    warn_inverting,
)
from calib_metrics.recalibration.scaling import PlattScaling, warn_if_decreasing

__all__ = ["HistogramBinning", "IsotonicCalibration", "ScalingBinning"]


def check_scores(scores: object, name: str = "scores", *, fitting: bool = True) -> Tensor:
    """Floating and finite; non-empty when ``fitting`` (a fitted module maps an empty
    batch to an empty one)."""
    scores = check_tensor(scores, name)
    check_floating(scores, name)
    if fitting:
        check_nonempty(scores, name)
    check_finite(scores, name)
    return scores


def _check_fit_inputs(scores: Tensor, target: Tensor, inputs: str) -> tuple[Tensor, Tensor]:
    """Scores ``[N]`` and their 0/1 target, named as the module takes them (``fit_binary``'s
    caller passed ``probs``: "scores" had named an argument they never saw)."""
    name = "probs" if inputs == "probs" else "scores"
    scores = check_scores(scores, name)
    if scores.ndim != 1:
        raise ValueError(f"{name} must be [N], got shape {tuple(scores.shape)}")
    return scores.to(torch.float64), check_binary_target(target, scores, name)


def _check_inputs(inputs: str) -> str:
    if inputs not in ("scores", "probs"):
        raise ValueError(f"inputs must be 'scores' or 'probs', got {inputs!r}")
    return inputs


def _check_n_bins(n_bins: int) -> int:
    """As many bins as the metric's uniform binning allows (10¹² had asked for 8 TB)."""
    if (
        isinstance(n_bins, bool)
        or not isinstance(n_bins, int)
        or not 1 <= n_bins <= MAX_UNIFORM_BINS
    ):
        raise ValueError(f"n_bins must be an int in [1, {MAX_UNIFORM_BINS}], got {n_bins!r}")
    return n_bins


def equal_mass_edges(scores: Tensor, n_bins: int) -> Tensor:
    """Interior edges splitting sorted ``scores`` into ``n_bins`` runs of (nearly) equal size.

    Edges are midpoints between neighbouring distinct scores, so tied scores always share
    a bin: a cut that falls inside a tie group moves to the group's nearer end (rounded
    or step-like scores still get their bins), and edges that coincide are kept once
    (cuts at one place, or the midpoints of adjacent doubles, which can round alike).

    Example:
        >>> equal_mass_edges(torch.tensor([0.1, 0.2, 0.2, 0.2, 0.2, 0.3, 0.4, 0.4]), 2)
        tensor([0.2500])
    """
    values, counts = torch.unique(scores, sorted=True, return_counts=True)
    n = scores.numel()
    # The rank at which each pair of neighbouring distinct values meets.
    ends = torch.cumsum(counts, 0)[:-1]
    cuts = torch.arange(1, n_bins, device=scores.device) * n // n_bins
    cuts = cuts[(cuts > 0) & (cuts < n)]
    if ends.numel() == 0 or cuts.numel() == 0:
        return values[:0]
    after = torch.searchsorted(ends, cuts).clamp_(max=ends.numel() - 1)
    before = (after - 1).clamp_(min=0)
    nearer = torch.where((cuts - ends[before]).abs() <= (ends[after] - cuts).abs(), before, after)
    nearer = nearer.unique()
    # Halved first: (a + b) / 2 overflows to inf for scores above about 9e307. Three
    # adjacent doubles' two midpoints can round to one value: kept once, as a fit's edges
    # are strictly increasing (a state with a repeated edge is refused at load).
    return torch.unique_consecutive(values[nearer] / 2 + values[nearer + 1] / 2)


def _bin_means(index: Tensor, values: Tensor, n_bins: int, empty: Tensor) -> Tensor:
    total = torch.zeros(n_bins, dtype=torch.float64, device=values.device)
    count = torch.zeros_like(total)
    total.index_add_(0, index, values.to(torch.float64))
    count.index_add_(0, index, torch.ones_like(values, dtype=torch.float64))
    return torch.where(count > 0, total / count.clamp(min=1), empty)


def _check_steps(
    module: FittedModule,
    state: dict[str, Tensor],
    names: tuple[str, str],
    extra: int,
    increasing: bool = False,
) -> None:
    """Refuse a fitted state (``state``: the loaded buffers by name) whose step function no
    fit makes: knots (``names[0]``: edges or thresholds) strictly increasing, values
    (``names[1]``) probabilities, ``extra`` more of them than knots and at least one, and
    (``increasing``) non-decreasing. Loaded, values of 1.9 had been returned as
    probabilities, unsorted knots had binned meaninglessly, and mismatched lengths or no
    thresholds failed at the call as an IndexError (one host read). A key the state lacks
    (a partial state, loaded with ``strict=False``) keeps the module's own, and is named as
    such: "the state's y_thresholds" had been said of a state that holds none."""
    knots, values = names
    buffers = {name: state.get(name, module._buffers[name]) for name in ("fitted", *names)}
    if not bool(buffers["fitted"]):
        return
    xs, ys = (buffers[name].to(torch.float64) for name in names)
    kind = type(module).__name__
    remedy = "load a state this kind saved"
    if ys.ndim != 1 or xs.ndim != 1 or ys.numel() != xs.numel() + extra or not ys.numel():
        lacked = [name for name in names if name not in state]
        whose = "the state's" if not lacked else (
            f"the state holds no {' and no '.join(lacked)}, which a partial load leaves as "
            "this module's own, and the"
        )  # fmt: skip
        raise ValueError(
            f"{kind}: {whose} {values} holds {ys.numel()} value{'s' * (ys.numel() != 1)} "
            f"for {xs.numel()} {knots}, where a fit keeps {max(xs.numel() + extra, 1)}: {remedy}"
        )
    checks = [(xs.diff() > 0).all(), ((ys >= 0) & (ys <= 1)).all(), (ys.diff() >= 0).all()]
    ordered, within, rising = torch.stack(checks).tolist()
    if not ordered:
        raise ValueError(f"{kind}: the state's {knots} are not strictly increasing: {remedy}")
    if not within:
        raise ValueError(
            f"{kind}: the state's {values} are not all probabilities in [0, 1]: {remedy}"
        )
    if increasing and not rising:
        raise ValueError(f"{kind}: the state's {values} decrease, as no fit makes them: {remedy}")


class _Binned(SettingsInState, FittedModule):
    """A binning module: its ``n_bins`` travels in the state and a load takes it, as the
    buffers take their sizes (loaded from a module of 5 bins, one built with 15 had kept
    ``n_bins == 15``, and refitted with 15). A fitted state saved before it travelled gives
    the bins it holds where a fit holds exactly n_bins (uniform bins); equal-mass bins of
    tied scores can be fewer than asked for, so there the module's own n_bins stands if it
    is at least the bins held (a module built as the one that saved such a state had
    loaded, and refitted, with fewer)."""

    n_bins: int
    values: Tensor

    def _holds_n_bins(self) -> bool:
        """Whether a fit always holds exactly ``n_bins`` bins (uniform ones do)."""
        return getattr(self, "binning", "adaptive") == "uniform"

    def get_extra_state(self) -> dict[str, Any]:
        return {**super().get_extra_state(), "n_bins": self.n_bins}

    def check_settings(self, state_dict: dict[str, Any], prefix: str) -> None:
        """Also an ``n_bins`` that a module takes, at least the bins the state holds."""
        super().check_settings(state_dict, prefix)
        saved = self.saved_settings(state_dict, prefix)
        if "n_bins" not in saved:
            return
        remedy = "load a state this kind saved"
        try:
            n_bins = _check_n_bins(saved["n_bins"])
        except ValueError as error:
            raise ValueError(f"{self.said_as}: the state's {error}: {remedy}") from None
        held = state_dict.get(prefix + "values", self.values).numel()
        if held > n_bins:
            raise ValueError(
                f"{self.said_as}: the state holds {held} bins, more than its n_bins={n_bins}, "
                f"as no fit makes them: {remedy}"
            )
        if held and held != n_bins and self._holds_n_bins():
            raise ValueError(
                f"{self.said_as}: the state holds {held} bins where its n_bins={n_bins}; a "
                f"uniform fit holds exactly n_bins: {remedy}"
            )

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:  # type: ignore[override]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        saved = self.saved_settings(state_dict, prefix)
        if "n_bins" in saved:
            self.n_bins = saved["n_bins"]
        elif not self.fitted.is_meta and self.host_value("fitted"):
            held = self.values.numel()
            if self._holds_n_bins() or held > self.n_bins:
                self.n_bins = held


class HistogramBinning(_Binned):
    """Histogram binning: each score maps to its bin's frequency of positives on dev.

    Args:
        n_bins: number of bins.
        binning: ``"adaptive"`` (equal mass on the dev scores; any real scores) or
            ``"uniform"`` (equal width on [0, 1]; probabilities only). An empty uniform bin
            maps to its midpoint.
        inputs: ``"scores"`` (any real numbers) or ``"probs"``: fit and calls take
            probabilities in [0, 1] only (what ``fit_binary`` builds; uniform bins always
            do), so a logit passed by mistake is refused rather than binned.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(400, generator=g)
        >>> y = torch.bernoulli(q**2, generator=g)  # q is overconfident
        >>> hb = HistogramBinning(n_bins=4).fit(q, y)  # 100 dev pairs a bin
        >>> hb(torch.tensor([0.1, 0.5, 0.9]))
        tensor([0.0100, 0.3900, 0.7500])
    """

    settings = ("binning",)  # inputs= only checks the range: the buffers read alike

    def __init__(self, n_bins: int = 15, binning: str = "adaptive", inputs: str = "scores") -> None:
        super().__init__()
        self.n_bins = _check_n_bins(n_bins)
        if binning not in ("adaptive", "uniform"):
            raise ValueError(f"binning must be 'adaptive' or 'uniform', got {binning!r}")
        self.binning = binning
        self.inputs = _check_inputs(inputs)
        self.register_buffer("edges", torch.zeros(0, dtype=torch.float64))
        self.register_buffer("values", torch.zeros(0, dtype=torch.float64))

    def fit(self, scores: Tensor, target: Tensor) -> HistogramBinning:
        given = scores  # uniform bins compare it in its own dtype, as a call will
        scores, y = _check_fit_inputs(scores, target, self.inputs)
        if self._takes_probs():
            check_probs(scores, self.inputs)  # names them as the module takes them
        if self.binning == "uniform":
            grid = torch.linspace(0, 1, self.n_bins + 1, dtype=torch.float64, device=scores.device)
            edges, midpoints = grid[1:-1], (grid[1:] + grid[:-1]) / 2
        else:
            edges = equal_mass_edges(scores, self.n_bins)
            midpoints = torch.full(
                (edges.numel() + 1,), 0.5, dtype=torch.float64, device=scores.device
            )
        self.edges = edges.to(torch.float64)
        index = self._bin_index(given.reshape(-1), self.edges, self.n_bins)
        self.values = _bin_means(index, y, self.edges.numel() + 1, midpoints.to(scores.device))
        self.fitted = torch.tensor(True, device=scores.device)
        _warn_of_small_bins(y.numel(), self.values.numel())
        _warn_if_uninformative(self, scores, y)
        _warn_if_separable(self, given.reshape(-1), y)
        return self

    def forward(self, scores: Tensor) -> Tensor:
        """Recalibrated probabilities: the shape, dtype and device of ``scores``."""
        self.check_fitted()
        scores = check_scores(scores, fitting=False)
        if self._takes_probs():
            check_probs(scores, self.inputs)  # names them as the module takes them
        index = self._bin_index(scores, self.edges.to(scores.device), self.values.numel())
        return self.values.to(scores.device)[index].to(scores.dtype)

    def _takes_probs(self) -> bool:
        return self.inputs == "probs" or self.binning == "uniform"

    def check_state(self, state: dict[str, Tensor]) -> None:
        super().check_state(state)
        _check_steps(self, state, ("edges", "values"), extra=1)

    def _bin_index(self, scores: Tensor, edges: Tensor, n_bins: int) -> Tensor:
        """Each score's bin, alike at fit and call: uniform bins hold [eᵢ, eᵢ₊₁) with the
        edges in the scores' dtype (``uniform_bin_of``, as ``uniform_binning``'s; a score on
        an edge once fell below it); equal-mass edges lie between distinct dev scores, and
        scores are compared with them in float64."""
        if self.binning == "uniform":
            return uniform_bin_of(scores, n_bins)
        # bucketize warns (and copies anyway) on a strided view such as scores[:, 0].
        return torch.bucketize(scores.to(torch.float64).contiguous(), edges)


# Fewer dev pairs a bin than this on average and many bins' frequencies are 0 or 1:
# test probabilities of exactly 0 and 1 (3,000 dev pairs in 100,000 bins gave every test
# probability 0 or 1, NLL 11; in 500 bins NLL 1.5 against 0.6 before).
MIN_PAIRS_PER_BIN = 20


def _warn_of_small_bins(n_pairs: int, n_bins: int) -> None:
    """Warn when histogram bins hold fewer than ``MIN_PAIRS_PER_BIN`` dev pairs each, and
    fewer bins could help: one bin (asked for, or all that tied scores make) had been told
    to "use at most 1 bin"."""
    if n_pairs >= MIN_PAIRS_PER_BIN * n_bins or n_bins == 1:
        return
    most = max(1, n_pairs // MIN_PAIRS_PER_BIN)
    each = _pairs_a_bin(n_pairs, n_bins)
    warn_caller(
        f"HistogramBinning: {n_bins} bins for {n_pairs} dev pairs, {each} a bin: a bin's "
        "frequency of so few pairs is often exactly 0 or 1, and so are the "
        f"test probabilities it maps to; use at most {most} bin{'s' * (most != 1)} "
        "(or scaling-binning)"
    )


def _pairs_a_bin(n_pairs: int, n_bins: int) -> str:
    """``n_pairs / n_bins`` to 3 digits, rounded down: the warning is for fewer than
    ``MIN_PAIRS_PER_BIN`` a bin, and rounded to nearest, 2999 pairs in 150 bins (19.99)
    had read "20 a bin".

    Example:
        >>> _pairs_a_bin(2999, 150), _pairs_a_bin(200, 15), _pairs_a_bin(3000, 100000)
        ('19.9', '13.3', '0.03')
    """
    return f"{Context(prec=3, rounding=ROUND_FLOOR).divide(Decimal(n_pairs), Decimal(n_bins)):f}"


def _warn_if_uninformative(
    module: HistogramBinning | IsotonicCalibration, scores: Tensor, y: Tensor
) -> None:
    """Warn where the dev ``scores`` (float64) cannot inform ``module``'s fit on labels
    ``y``: all equal, they map every score to the dev frequency of class 1, as Platt
    scaling's slope 0 does (and warns); labels that run against them
    (:func:`~calib_metrics.recalibration._common.labels_against`) give histogram binning
    a map that inverts the model, and flatten an isotonic one, which is said too where it
    is flat for any other reason.
    These fits had been silent: flipped dev labels took isotonic's every test probability
    to 0.5003, reported as a significant improvement. Two host reads at most."""
    kind = type(module).__name__
    noun = "probabilities" if module.inputs == "probs" else "scores"
    y = y.to(scores.device)
    low, high, rate = torch.stack([scores.min(), scores.max(), y.mean()]).tolist()
    if low == high:
        _say_equal_scores(module, kind, noun, y.numel(), rate)
        return
    against = labels_against(scores, y, noun)
    if isinstance(module, IsotonicCalibration):
        _say_if_flat(module, kind, noun, against)
    elif against is not None:
        warn_inverting(kind, against)


def _say_equal_scores(
    module: HistogramBinning | IsotonicCalibration, kind: str, noun: str, n: int, rate: float
) -> None:
    """Dev scores all equal: what ``module``'s map then is (``rate``: the dev frequency of
    class 1)."""
    frequency = f"the dev frequency of class 1 ({rate:.4g})"
    if getattr(module, "binning", None) == "uniform":
        maps = f"their bin maps to {frequency}, and the other bins, empty, to their midpoints"
    else:
        maps = f"it maps every score to {frequency}"
    warn_caller(
        f"{kind}: the {n} {noun} it is fitted on are all equal, so they cannot order the "
        f"labels: {maps}; fit on held-out data whose {noun} vary"
    )


def _say_if_flat(module: IsotonicCalibration, kind: str, noun: str, against: str | None) -> None:
    """Warn where the isotonic map is flat, or where the labels run ``against`` the scores
    (what they do, or None): non-decreasing, the map then flattens instead of inverting
    the model, and keeps little or none of its ranking. One host read."""
    ys = module.y_thresholds
    low, high = torch.stack([ys[0], ys[-1]]).tolist()  # non-decreasing: its ends
    if against is None and low != high:
        return
    flat = (
        f"maps every score to {low:.4g}, the dev frequency of class 1,"
        if low == high
        else f"rises only from {low:.4g} to {high:.4g},"
    )
    warn_inverting(
        kind,
        against or f"the dev labels do not rise with the {noun}",
        f"so the non-decreasing map fitted {flat} and the model's ranking is lost",
    )


def _warn_if_separable(
    module: HistogramBinning | IsotonicCalibration, scores: Tensor, y: Tensor
) -> None:
    """Warn where one label's dev ``scores`` all lie at or above the other's (ties at the
    boundary included: Platt scaling's test of separable data, which it refuses) and the
    fitted ``module`` maps some of them to exactly 0 or 1. Such a map scores test items
    near them as certain, wrongly for every test error there: isotonic regression of 100
    separable dev pairs had taken a test NLL from 0.755 to 8.04 (CalibErr 0.159 to 0.290),
    silently. One host read where the labels are not separable."""
    ones = y.to(scores.device) == 1
    low1, high1 = (
        scores.masked_fill(~ones, math.inf).min(),
        scores.masked_fill(~ones, -math.inf).max(),
    )
    low0, high0 = (
        scores.masked_fill(ones, math.inf).min(),
        scores.masked_fill(ones, -math.inf).max(),
    )
    above, below = torch.stack([high0 <= low1, high1 <= low0]).tolist()
    if not (above or below):
        return
    mapped = module(scores)
    certain = int(((mapped == 0) | (mapped == 1)).sum())
    if not certain:  # all equal, or a flat isotonic map: warned of as such
        return
    noun, one = (
        ("probabilities", "probability") if module.inputs == "probs" else ("scores", "score")
    )
    warn_caller(
        f"{type(module).__name__}: the dev labels are separable: every class-1 {one} lies at "
        f"or {'above' if above else 'below'} every class-0 one (ties at the boundary "
        f"included), so the map fitted is exactly 0 or 1 at {certain} of the {y.numel()} dev "
        f"{noun}, and at test {noun} near them: a test error there gets probability 0 for its "
        "label (Platt and temperature scaling refuse such data); fit on more held-out "
        + ("data, on which the model makes some errors" if above else "data")
    )


class IsotonicCalibration(FittedModule):
    """Isotonic regression of the labels on the scores (scikit-learn's, at the numpy edge).

    Fitting calls ``sklearn.isotonic.IsotonicRegression(y_min=0, y_max=1,
    out_of_bounds="clip")`` on CPU copies of the ranks of the distinct scores, so that
    the map depends on their order only (scikit-learn pools scores within about 1e-15 of
    each other); the fitted thresholds, mapped back to scores, are buffers and prediction
    is torch's linear interpolation between them, on the input's device, equal to
    scikit-learn's ``predict`` wherever it tells the scores apart.

    Args:
        inputs: ``"scores"`` (any real numbers) or ``"probs"``: fit and calls take
            probabilities in [0, 1] only (what ``fit_binary`` builds), so a logit passed
            by mistake is refused rather than clipped to the fitted range.

    Example:
        >>> import torch
        >>> q = torch.tensor([0.1, 0.3, 0.2, 0.6, 0.8, 0.9])
        >>> y = torch.tensor([0, 1, 0, 0, 1, 1])
        >>> iso = IsotonicCalibration().fit(q, y)
        >>> iso(torch.tensor([0.0, 0.25, 0.7, 1.0]))
        tensor([0.0000, 0.2500, 0.7500, 1.0000])
    """

    def __init__(self, inputs: str = "scores") -> None:
        super().__init__()
        self.inputs = _check_inputs(inputs)
        self.register_buffer("x_thresholds", torch.zeros(0, dtype=torch.float64))
        self.register_buffer("y_thresholds", torch.zeros(0, dtype=torch.float64))

    def fit(self, scores: Tensor, target: Tensor) -> IsotonicCalibration:
        scores, y = _check_fit_inputs(scores, target, self.inputs)
        if self.inputs == "probs":
            check_probs(scores, "probs")
        try:
            from sklearn.isotonic import IsotonicRegression
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError(
                "IsotonicCalibration needs scikit-learn (pip install scikit-learn)"
            ) from err
        # Fitted on the ranks of the distinct scores, whose thresholds are ranks too:
        # scikit-learn pools values within about 1e-15 of each other, so on the scores
        # themselves the map had depended on their scale (flat at scores of 1e-20).
        distinct, rank = torch.unique(scores.detach().double(), return_inverse=True)
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
        iso.fit(rank.cpu().double().numpy(), y.detach().cpu().numpy())
        at = torch.as_tensor(iso.X_thresholds_.round(), dtype=torch.long, device=scores.device)
        self.x_thresholds = distinct[at]
        self.y_thresholds = torch.as_tensor(
            iso.y_thresholds_, dtype=torch.float64, device=scores.device
        )
        self.fitted = torch.tensor(True, device=scores.device)
        _warn_if_uninformative(self, scores, y)
        _warn_if_separable(self, scores, y)
        return self

    def check_state(self, state: dict[str, Tensor]) -> None:
        super().check_state(state)
        _check_steps(self, state, ("x_thresholds", "y_thresholds"), extra=0, increasing=True)

    def forward(self, scores: Tensor) -> Tensor:
        """Recalibrated probabilities: the shape, dtype and device of ``scores``."""
        self.check_fitted()
        scores = check_scores(scores, fitting=False)
        if self.inputs == "probs":
            check_probs(scores, "probs")
        xs = self.x_thresholds.to(scores.device)
        ys = self.y_thresholds.to(scores.device)
        if xs.numel() == 1:
            # A copy: a view of the buffer, edited in place, had rewritten the fit (and a
            # 0-d score had failed to expand).
            return ys.to(scores.dtype).reshape(()).expand(scores.shape).clone()
        x = scores.to(torch.float64).clamp(xs[0], xs[-1])
        right = torch.searchsorted(xs, x, right=True).clamp(1, xs.numel() - 1)
        x0, x1, y0, y1 = xs[right - 1], xs[right], ys[right - 1], ys[right]
        slope = (y1 - y0) / (x1 - x0)
        return (y0 + slope * (x - x0)).to(scores.dtype)


class ScalingBinning(_Binned):
    """Scaling-binning calibrator of Kumar, Liang & Ma (NeurIPS 2019).

    ``fit`` splits dev at random into two halves, each holding half of each class: Platt
    scaling is fitted on the first;
    the second half's scaled scores are cut into ``n_bins`` equal-mass bins, and each bin
    outputs the mean scaled score in it.

    Args:
        n_bins: number of bins.
        inputs: ``"logits"`` or ``"probs"`` (passed to :class:`PlattScaling`).
        generator: ``torch.Generator`` of the random split (on CPU).

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> s = torch.randn(2000, generator=g)
        >>> y = torch.bernoulli(torch.sigmoid(2 * s), generator=g)
        >>> sb = ScalingBinning(n_bins=10, generator=torch.Generator().manual_seed(0)).fit(s, y)
        >>> sb(s).unique().numel()
        10
    """

    parts = ("platt",)

    def __init__(
        self, n_bins: int = 15, inputs: str = "logits", generator: torch.Generator | None = None
    ) -> None:
        check_generator(generator)
        super().__init__()
        self.n_bins = _check_n_bins(n_bins)
        self.platt = PlattScaling(inputs=inputs)
        self.platt.said_as = "ScalingBinning (its Platt step, on half of dev)"
        self.generator = generator
        self.register_buffer("edges", torch.zeros(0, dtype=torch.float64))
        self.register_buffer("values", torch.zeros(0, dtype=torch.float64))

    def fit(self, scores: Tensor, target: Tensor) -> ScalingBinning:
        scores_checked, labels = _check_fit_inputs(scores, target, self.platt.inputs)
        n = scores_checked.numel()
        if n < 4:
            raise ValueError(f"scaling-binning needs at least 4 dev items, got {n}")
        ones = int(labels.sum())
        if min(ones, n - ones) < 2:
            raise ValueError(
                f"scaling-binning needs at least 2 dev items of each class, one for each half "
                f"of its split, got {ones} of class 1 and {n - ones} of class 0"
            )
        # Stratified: shuffled, sorted by class (stably, so the shuffle stays within each
        # class), then dealt out alternately, so each half holds half of each class. A plain
        # random half of 40 items with 2 positives held none in 4 of 20 seeds.
        # Drawn where the generator is (the host by default), whatever the default device.
        drawn_on = "cpu" if self.generator is None else self.generator.device
        order = torch.randperm(n, generator=self.generator, device=drawn_on).to(scores.device)
        order = order[torch.argsort(labels.reshape(-1)[order], stable=True)]
        first, second = order[0::2], order[1::2]
        try:
            self.platt._fit_unsaid(scores[first], target[first])
        except ValueError as error:
            half = f"{first.numel()} items, {int(labels[first].sum())} of class 1"
            raise ValueError(
                f"scaling-binning fits Platt scaling on half of dev ({half}): {error}"
            ) from error
        scaled = self.platt(scores[second].to(torch.float64))
        edges = equal_mass_edges(scaled, self.n_bins)
        index = torch.bucketize(scaled, edges)
        empty = torch.full((edges.numel() + 1,), 0.5, dtype=torch.float64, device=scores.device)
        self.edges = edges
        self.values = _bin_means(index, scaled, edges.numel() + 1, empty)
        self.fitted = torch.tensor(True, device=scores.device)
        warn_if_decreasing(
            "ScalingBinning", "its Platt step", self.platt, scores[first], target[first]
        )
        return self

    def check_state(self, state: dict[str, Tensor]) -> None:
        super().check_state(state)
        _check_steps(self, state, ("edges", "values"), extra=1)

    def forward(self, scores: Tensor) -> Tensor:
        """Recalibrated probabilities: the shape, dtype and device of ``scores``.

        The Platt step runs in float64: rounded to a float16 input's dtype first, scaled
        scores near an edge had crossed it, and 7 of 2,000 took a neighbouring bin's value
        (0.10 away)."""
        self.check_fitted()
        scores = check_scores(scores, fitting=False)
        scaled = self.platt(scores.to(torch.float64))
        edges = self.edges.to(scaled.device)
        return self.values.to(scaled.device)[torch.bucketize(scaled, edges)].to(scores.dtype)
