"""``CalibrationError``: the paper's calibration analysis as a torchmetrics ``Metric``."""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from calib_metrics.few_bins import few_bins_message
from calib_metrics.functional import sketch
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.binning import Bins, check_room, exact_working_bytes
from calib_metrics.functional.calibration import (
    CalibrationResult,
    _check_interval_options,
    _check_options,
    bins_and_index,
    bins_interval,
    calibration_error_ci,
    compute_bins,
    item_pairs_interval,
)
from calib_metrics.functional.clusters import grouped_bins
from calib_metrics.functional.errors import (
    NoPairsError,
    check_flag,
    check_not_meta,
    check_tensors,
    said_once_for_all,
)
from calib_metrics.functional.intervals import (
    IntervalKind,
    bin_errors,
    check_confidence,
    drawn_norm,
    pairs_counted_per,
)
from calib_metrics.functional.multiclass import (
    APART_COVERAGE,
    apart_message,
    average_results,
    most_frequent,
    pair_sets,
)
from calib_metrics.functional.sketch_gap import streaming_gap_bound
from calib_metrics.functional.smooth import (
    SmoothCurve,
    _check_bandwidth,
    smooth_calibration_error,
    smooth_calibration_from_histogram,
    smooth_curve_from_histogram,
    smooth_reliability_curve,
)
from calib_metrics.functional.spiegelhalter import (
    SpiegelhalterResult,
    item_score_sums,
    spiegelhalter_from_histogram,
    spiegelhalter_from_item_sums,
    spiegelhalter_test,
)
from calib_metrics.metric_checks import (
    _check_group_ids,
    _check_mode,
    _check_seed,
    _check_sizes,
    _kept_rows,
    _own_copy,
    _prepare_batch,
    built_again,
    check_ignore_index,
    check_num_classes,
    check_result_settings,
    ignore_index_label_warning,
    resolution_warning,
)
from calib_metrics.metric_state import (
    _LAYOUT_KEY,
    _SETTINGS_KEY,
    _as_list,
    _ids_problem,
    _row_count,
    _StatesKeepTheirDtype,
    _StatesOfRule,  # noqa: F401  # metrics pickled before the split name it here
    finishing_synced_result,
    warn_at_user_line,
    warn_once_at_user_line,
    warnings_said_by,
)

# Per class, the sketch's (count, Σr, Σr², Σy, lowest q, highest q) per cell; see
# functional/sketch.py.
_SKETCH_STATES = tuple(f"cell_{part}" for part in sketch.Sketch._fields)

_AVERAGES = ("micro", "macro", "weighted", "none", None)
# Why two classes' interval is too narrow streamed past the buffer (Metric._by_item).
_MIRRORS_STREAMED = (
    "2 classes streamed one-vs-rest past the buffer: the interval draws each item's pair "
    f"(q, y) and its mirror (1 - q, 1 - y) apart, and is too narrow ({APART_COVERAGE[2]}); "
    "streaming=False draws them together, and class 1's own error is probs[:, 1]'s "
    "with binary labels"
)


def _item_scores_problem(sums: Any) -> str:
    """Why a loaded or merged state's item sums are none that updates made ('' when they
    are, or unknown: all NaN, a state saved before they were kept; one host read)."""
    if not isinstance(sums, Tensor) or tuple(sums.shape) != (3,):
        return "" if sums is None else f"state {_ITEM_SCORES!r} must have shape [3]"
    items, _, squares = values = sums.detach().to(torch.float64).tolist()
    if all(math.isnan(v) for v in values):
        return ""
    if not all(math.isfinite(v) for v in values) or items < 0 or items != int(items) or squares < 0:
        return (
            f"state {_ITEM_SCORES!r} holds {values}: an item count, a sum and a sum of "
            "squares are what update() keeps there"
        )
    return ""


def _summed_items(parts: list[tuple[Tensor, Tensor, Tensor | None]]) -> Tensor | int:
    """:func:`item_score_sums` of rows (probs, target, keep) batch by batch, summed (0 of
    no batch)."""
    return sum(item_score_sums(probs, target, keep) for probs, target, keep in parts)


def _older_item_scores(cells: Any, device: torch.device) -> Tensor:
    """The item sums of a state saved or pickled before they were kept (2026-12-01), whose
    sketch holds ``cells``: unknown (NaN) where it holds rows, zero where it holds none (a
    state saved after a reset, or with its rows in the buffer: nothing is missing)."""
    value = 0.0 if _holds_no_cells(cells) else math.nan
    return torch.full((3,), value, dtype=torch.float64, device=device)


def _holds_no_cells(count: Any) -> bool:
    """Whether a sketch's ``cell_count`` places no row in any cell (one host read): such a
    sketch holds nothing whose cells a layout decided, so any layout's is this one's. Rows
    kept exactly beside it are pairs as given, which this version folds by its own cells."""
    return isinstance(count, Tensor) and not bool(count.any())


def _layout_problem(layout: int | None) -> str:
    """Why a sketch of cell layout ``layout`` (None: made before the layout was recorded)
    cannot take this version's pairs ('' when it can): some of their values would land
    one cell from the sketch's own equal values, splitting their tie groups."""
    if layout == sketch.CELL_LAYOUT:
        return ""
    made = "before 2026-11-30" if layout is None else f"of layout {layout}"
    return (
        f"a calib_metrics {made}, whose cells place some values one cell from where this "
        f"one's (layout {sketch.CELL_LAYOUT}) do: new pairs would split their tie groups"
    )


class CalibrationError(_StatesKeepTheirDtype):
    """RMS calibration error with adaptive bins, sampled intervals and diagrams.

    Binary input: ``probs`` and ``target`` of one shape (any shape, flattened), ``probs``
    the probability that the label is 1. Multiclass input (``num_classes=C``): ``probs``
    of shape ``[..., C]`` and integer ``target`` of shape ``[...]``; every item gives C
    binary pairs (q = probs[c], y = [target == c]), the paper's one-vs-rest expansion
    (§4.2.2). ``average="micro"`` pools all pairs; ``"none"`` (or None) gives one result
    per class, ``"macro"`` their mean and ``"weighted"`` their mean weighted by each
    class's support (torchmetrics' meanings). ``mode="top_label"`` measures one pair
    per item instead, (max probability, prediction correct) — torchmetrics'
    ``MulticlassCalibrationError`` — and ``mode="classwise"`` the mean of the per-class
    errors, as :func:`~calib_metrics.functional.calibration_error` does with the same
    ``mode``. Items whose target equals ``ignore_index`` (padding) are dropped.

    The defaults are the estimator the project recommends, not the paper's:
    ``bin_size="auto"``, the debiased error (for ``norm="l2"``; l1 and max have no
    correction and use the plug-in) and the recentred bootstrap interval over pairs, or
    over groups when ``update`` is given ``groups=``. The paper's method is
    ``CalibrationError(debias=False, bin_size=5000, interval="paper")``. Fewer than 10
    bins can hide miscalibration: the metric then warns, once. Fewer than 10
    resampling units (pairs, or groups) give no bootstrap interval: NaN ends, with a
    warning.

    ``compute()`` returns the error alone (a 0-dim tensor, or one per class), so that
    ``self.log("val/ece", metric)`` works in Lightning; :meth:`compute_result`
    returns the full :class:`~calib_metrics.CalibrationResult` with the interval.
    ``forward`` (``metric(probs, target)``) updates and returns the batch's own value:
    NaN for a batch of padding only; a rejected batch raises and changes nothing.
    The states keep their dtype when the module is cast (``.half()``, Lightning's
    ``precision="bf16-true"``). In a torchmetrics ``MetricCollection``, metrics whose
    ``update`` differs (``ignore_index``, ``validate_args``, ``interval="groups"``,
    the streaming settings) never share a state; those that differ only in what
    ``compute`` does still do. Groups given by hand (``compute_groups=[[...]]``) are
    taken as given: list together only metrics whose ``update`` agrees.

    Two memory modes. The exact mode (default) keeps every pair, so its bins are exactly
    the paper's; under DDP the pairs of all ranks are gathered and the result equals one
    process on the union. ``streaming=True`` keeps a fixed histogram of ``resolution``
    logit-spaced cells per class (count, Σr, Σr², Σy and the lowest and highest q, in
    float64: 12 MiB per class at the default; see :mod:`calib_metrics.functional.sketch`
    and ``docs/streaming.md``), merged across batches and ranks (the sums add, the
    extremes combine), whose memory does not grow with the data. Until the rows seen (on
    all ranks together) exceed ``2·resolution``
    (:func:`~calib_metrics.functional.sketch.buffer_rows`; top-label rows of C
    probabilities: ``4·resolution/(C + 1)``) it keeps them exactly as well, in at most
    the sketch's memory, and its result is the exact mode's; past that every row is
    folded into the histogram, whose bins hold exactly the exact mode's counts, and its
    error is within :meth:`streaming_tolerance` of the exact mode's (the gap
    measured by N and bin size is in ``docs/streaming.md``). Which of the two answers
    is a function of the union of the rows, so DDP and ``merge_state`` still equal one
    process on the union. With ``validate_args=False``, ``update`` never waits for the
    device in either mode.

    Args:
        num_classes: None for binary input, else the number of classes C.
        bin_size: ``"auto"`` (default): β = ⌈√N⌉ for the N pairs seen (see
            ``docs/coverage.md``), or the target bin size β of adaptive binning (the
            paper uses 5000), at most 2**62. Bins of 2 or 3 pairs make the bootstrap
            interval too narrow (about 89% coverage at 95%).
        binning: ``"adaptive"`` (equal mass) or ``"uniform"`` (equal width).
        n_bins: number of bins of uniform binning (at most 2**20). A ``bin_size`` beside
            ``binning="uniform"``, or an ``n_bins`` other than 15 beside adaptive binning,
            is refused (ValueError): each binning reads its own size.
        norm: ``"l2"`` (RMS, the paper's), ``"l1"`` or ``"max"``.
        n_samples: draws of the interval (the bootstrap's, or Algorithm 2's), from 2 to
            :data:`~calib_metrics.functional.intervals.MAX_DRAWS` (10⁷);
            keep them in the hundreds or more: the ends are Monte Carlo estimates, and a
            handful of draws can leave out the estimate itself (no warning is given).
        confidence: coverage of the interval.
        method: ``"normal"`` (the default) or ``"percentile"`` (the draws'
            percentiles). The normal form's ends
            (:data:`~calib_metrics.functional.intervals.NORMAL_ENDS`): for Algorithm 2
            (interval paper), the draws' mean ∓ z·std; for the plug-in bootstrap (no
            debias), the error ∓ z·std of the draws; for the debiased bootstrap,
            √(m ∓ z·s), m and s the mean and std of the draws' recentred squares, not
            the reported mean and std of their roots (the upper end widened by −D where
            the debiased square D is negative); ends clipped at 0.
        debias: subtract each bin's sampling noise from its squared gap (default True;
            l2 only: l1 and max fall back to the plug-in).
        interval: None (default): ``"pairs"``, or ``"groups"`` when ``update`` is given
            ``groups=`` (exact mode only); ``"paper"`` (Algorithm 2), ``"pairs"``
            (Poisson bootstrap over pairs) or ``"groups"`` (Poisson bootstrap over
            whole groups: sentences, documents; every ``update`` then takes
            ``groups=``, one id per item, and the metric keeps them, so it needs
            ``streaming=False``; with ``debias=True`` ``compute()`` and the interval
            then use each bin's cluster-robust variance over the groups). With
            ``debias=True`` the bootstrap is recentred on the debiased estimate;
            ``docs/coverage.md`` measures when each interval means what it says.
        average: ``"micro"`` (all pairs pooled), ``"none"``/None (one result per class),
            ``"macro"`` or ``"weighted"`` (the per-class errors averaged).
        mode: multiclass pairs: ``"one_vs_rest"`` (default, the paper's; combined by
            ``average``), ``"top_label"`` or ``"classwise"`` (these two need the default
            ``average="micro"``; classwise's interval is the conservative average of
            :func:`~calib_metrics.functional.multiclass.average_results`).
        ignore_index: target value marking items to drop (padding): for binary pairs not
            0 or 1 (a ValueError: it would drop every negative or positive); a class id
            of multiclass pairs is warned about (its probabilities are still scored).
        streaming: keep a fixed-size histogram instead of every pair.
        resolution: cells of the streaming histogram (even, at least 4; 2¹⁸ by default),
            checked in either mode; with ``streaming=False``, which keeps no histogram,
            another value is warned about (a forgotten ``streaming=True``).
        seed: seed of the interval's draws, for reproducible results (None: the global
            RNG; under DDP one seed from the first rank's global RNG at each compute, so
            the ranks still agree). Either way the ranks draw the same resamplings.
        validate_args: check every batch (two host synchronisations per set of
            probabilities, one more for multiclass rows' sums); False skips that, and
            each compute checks what it reads instead: the pairs (the batch check's two
            host reads), or the folded sketch (one, two one-vs-rest and classwise),
            which shows probabilities outside [0, 1], NaN and, one-vs-rest and
            classwise, class ids outside [0, C), but not every bad label.

    Example:
        >>> import torch
        >>> metric = CalibrationError()
        >>> g = torch.Generator().manual_seed(0)
        >>> for _ in range(3):  # an overconfident model: the truth is 0.5 + (q - 0.5) / 2
        ...     probs = torch.rand(400, generator=g)
        ...     metric.update(probs, torch.bernoulli(0.25 + probs / 2, generator=g))
        >>> metric.compute()
        tensor(0.1318, dtype=torch.float64)
        >>> result = metric.compute_result()
        >>> bool(result.lower < result.error < result.upper)
        True

        The paper's estimator and interval, one setting away:

        >>> paper = CalibrationError(debias=False, bin_size=5000, interval="paper")

        A classifier's top-label (confidence) error, as torchmetrics measures it:

        >>> top = CalibrationError(num_classes=3, mode="top_label", binning="uniform",
        ...                        debias=False)
        >>> probs = torch.softmax(3 * torch.randn(2000, 3, generator=g), -1)
        >>> top.update(probs, torch.multinomial(probs, 1, generator=g).squeeze(1))
        >>> top.compute()
        tensor(0.0275, dtype=torch.float64)

        Pairs that come in sentences: with ``groups=`` the interval resamples sentences.

        >>> metric = CalibrationError()
        >>> probs = torch.rand(50, 20, generator=g)  # 50 sentences of 20 tokens
        >>> sentence = torch.arange(50).unsqueeze(1).expand(50, 20)
        >>> metric.update(probs, torch.bernoulli(probs, generator=g), groups=sentence)
        >>> result = metric.compute_result()
        >>> bool(result.lower <= result.error <= result.upper)
        True
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    _WIDE_STATES = ("probs",)
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self,
        num_classes: int | None = None,
        *,
        bin_size: int | Literal["auto"] = "auto",
        binning: Literal["adaptive", "uniform"] = "adaptive",
        n_bins: int = 15,
        norm: Literal["l1", "l2", "max"] = "l2",
        n_samples: int = 10000,
        confidence: float = 0.95,
        method: Literal["normal", "percentile"] = "normal",
        debias: bool = True,
        interval: Literal["paper", "pairs", "groups"] | None = None,
        average: Literal["micro", "macro", "weighted", "none"] | None = "micro",
        mode: Literal["one_vs_rest", "top_label", "classwise"] = "one_vs_rest",
        ignore_index: int | None = None,
        streaming: bool = False,
        resolution: int = sketch.DEFAULT_RESOLUTION,
        seed: int | None = 0,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        options = dict(locals())
        super().__init__(**kwargs)
        self._check_arguments(options)
        self.num_classes = num_classes
        self.bin_size = bin_size
        self.binning = binning
        self.n_bins = n_bins
        self.norm = norm
        self.n_samples = n_samples
        self.confidence = confidence
        self.method = method
        self.debias = debias
        self.interval = interval
        self.average = None if average == "none" else average
        self.mode = mode
        self.ignore_index = ignore_index
        self.streaming = streaming
        self.resolution = resolution
        self.seed = seed
        self.validate_args = validate_args
        # What forward() needs to build a metric like this one for a single batch.
        for name in ("self", "kwargs", "__class__"):
            options.pop(name, None)
        self._options = options
        self._base_kwargs = kwargs
        self._few_bins_warned = False
        self._coarse_sketch_warned = False
        # Streaming: once rows were folded into the sketch, later rows go there directly,
        # so that the state stays the sketch alone (host-side: no synchronisation).
        self._folded = False
        # The cell layout of the sketch (sketch.CELL_LAYOUT), recorded for a pickle of the
        # metric as _sketch_layout is for its state dict; a metric pickled before it was
        # kept lacks it. None: no sketch.
        self._cell_layout = sketch.CELL_LAYOUT if streaming else None
        # Streaming keeps the pairs too, exactly, until they would outgrow the sketch.
        self.add_state("probs", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")
        if streaming:
            shape = (1,) if mode == "top_label" else (num_classes or 1,)
            # Room for two: torchmetrics keeps a copy of every state's default for reset().
            states = sketch.empty(resolution, shape, room_for=2)
            parts = zip(_SKETCH_STATES, states, sketch.MERGE)
            for name, default, merge in parts:
                self.add_state(name, default, dist_reduce_fx=merge)
            # Rows seen, kept or folded, on all ranks once synchronised.
            self.add_state("rows_seen", torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
            if num_classes is not None:
                # The folded rows' [items, Σ Sᵢ, Σ Sᵢ²] (item_score_sums): the pooled
                # one-vs-rest Spiegelhalter test's item-grouped variance, which the
                # sketch's cells, holding no items, cannot give. Kept by every multiclass
                # mode (top-label's stays 0), so that the states' keys are alike and a
                # state of another mode is refused as that.
                self.add_state(_ITEM_SCORES, torch.zeros(3, dtype=torch.float64), "sum")
        elif interval in ("groups", None):
            # interval=None resamples groups when update() is given them.
            self.add_state("groups", default=[], dist_reduce_fx="cat")
        self._name_states_by_rule()

    @staticmethod
    def _check_arguments(args: dict[str, Any]) -> None:
        """Every constructor argument, checked before any state exists."""
        norm, interval, streaming = args["norm"], args["interval"], args["streaming"]
        num_classes, average = args["num_classes"], args["average"]
        _check_options(norm, args["binning"], args["bin_size"], args["n_bins"])
        _check_sizes(args["bin_size"], args["n_bins"])
        check_confidence(args["confidence"])
        _check_interval_options(
            args["n_samples"], args["confidence"], args["method"], interval or "pairs"
        )
        _check_seed(args["seed"])
        if interval == "groups" and streaming:
            raise ValueError(
                "interval='groups' resamples whole groups, so the metric must keep every "
                "pair's group: use streaming=False (or interval='pairs' to stream)"
            )
        check_num_classes(num_classes)
        if average not in _AVERAGES:
            raise ValueError(
                f"average must be 'micro', 'macro', 'weighted' or 'none' (None), got {average!r}"
            )
        if average not in ("micro",) and num_classes is None:
            raise ValueError(f"average={average!r} averages over classes: set num_classes")
        _check_mode(args["mode"], num_classes, average)
        for flag in ("debias", "streaming", "validate_args"):
            check_flag(flag, args[flag])
        check_ignore_index(args["ignore_index"])
        warn_at_user_line(ignore_index_label_warning(args["ignore_index"], num_classes))
        warn_at_user_line(resolution_warning(args["resolution"], streaming))
        if streaming and args["binning"] == "uniform":
            # The monitor streams by default: its user had never passed streaming=True.
            raise ValueError(
                "streaming=True supports binning='adaptive' only: pass streaming=False for "
                "uniform bins"
            )

    @property
    def _per_class(self) -> bool:
        """Whether the result is made of one set of pairs per class (else one set in all)."""
        return self.num_classes is not None and (
            self.average != "micro" or self.mode == "classwise"
        )

    @property
    def _debias(self) -> bool:
        """debias as applied: the plug-in estimate for l1 and max, which have no correction."""
        return self.debias and self.norm == "l2"

    # ------------------------------------------------------------------ update
    def _prepare(self, probs: Tensor, target: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        return _prepare_batch(
            probs, target, self.num_classes, self.ignore_index, validate=self.validate_args
        )

    def _check_groups(self, groups: Tensor | None, target: Tensor) -> Tensor | None:
        """Validate ``groups=`` of one batch: one integer id per item (target's shape)."""
        if groups is None:
            if self.interval == "groups":
                raise ValueError(
                    "interval='groups' needs groups=: the group (sentence, document) id of "
                    "every item, e.g. update(probs, target, groups=sentence_ids)"
                )
            self._check_group_history(given=False)
            return None
        if self.interval in ("paper", "pairs"):
            raise ValueError(
                f"groups= is used by interval='groups' (or the default interval=None) only; "
                f"this metric has interval={self.interval!r}"
            )
        if self.streaming:
            raise ValueError(
                "groups= needs streaming=False: the streaming histogram keeps no per-pair "
                "group ids (drop groups= for the pair bootstrap)"
            )
        self._check_group_history(given=True)
        return _check_group_ids(groups, target, "groups")

    def _check_group_history(self, given: bool) -> None:
        """Refuse a batch with (without) groups= after batches without (with) them."""
        if not self._keeps_groups():
            return
        if not given and self.groups:
            raise ValueError(
                "earlier batches came with groups= and this one without: give every "
                "batch its group ids, or none"
            )
        if given and self.interval is None and self.probs and not self.groups:
            raise ValueError(
                "earlier batches came without groups= and this one with: give every batch "
                "its group ids, or none"
            )

    def _keeps_groups(self) -> bool:
        return not self.streaming and self.interval in ("groups", None)

    def _update_rule(self) -> tuple:
        """Also whether ``groups=`` is needed, kept or refused, and, streaming, how rows
        enter the sketch (its resolution, and top-label's (confidence, correct) pairs).
        The exact mode keeps the same pairs for every mode and average."""
        groups = "needed" if self.interval == "groups" else self._keeps_groups()
        into_sketch = (self.resolution, self.mode == "top_label") if self.streaming else None
        return (*super()._update_rule(), groups, into_sketch)

    def _group_ids_problem(self, target: Any, groups: Any) -> str:
        """Why a loaded or merged state of pairs ``target`` with group ids ``groups`` (None
        when not saved) cannot be this metric's ('' when it can; counts, no host sync).

        ``interval="groups"`` resamples every item's group, so it needs an id for each:
        none is refused here, a count other than the items' by the base class's check of
        every id state (``metric_state._ids_problem``); ``interval=None`` takes one id for
        each item or none (then it resamples pairs).
        """
        if not self._keeps_groups() or target is None or self.interval is None:
            return ""
        items = sum(part.numel() for part in _as_list(target))
        ids = 0 if groups is None else sum(part.numel() for part in _as_list(groups))
        if items and ids == 0:
            return (
                f"the state holds {items} items without group ids, which interval='groups' "
                "needs for every item: they come from a metric never given groups="
            )
        return ""

    def _check_states(self, states: dict[str, Any], prefix: str = "") -> None:
        """Also refuse, before anything is loaded or merged, pairs whose group ids this
        metric could not resample: accepted, they failed only at compute_result()."""
        super()._check_states(states, prefix)
        problem = (
            self._group_ids_problem(states.get(prefix + "target"), states.get(prefix + "groups"))
            or self._sketch_problem(states, prefix)
            or self._folded_early_problem(
                states.get(prefix + "rows_seen"), states.get(prefix + "probs")
            )
        )
        if problem:
            raise ValueError(f"CalibrationError: {problem}")

    def _sketch_problem(self, states: dict[str, Any], prefix: str = "") -> str:
        """Why a loaded or merged streaming state (of this metric's shapes) holds values
        that no update made ('' when it holds none; two host reads, at load or merge only):
        a sketch's cell that :func:`~calib_metrics.functional.sketch.state_problem` names,
        a row count that disagrees with the rows kept exactly and those in the sketch, or,
        one-vs-rest and classwise, targets of no class folded in (:meth:`_rows_and_labels`).
        Accepted, a NaN Σr made compute() NaN and a negative count moved the bins."""
        parts = [states.get(prefix + name) for name in _SKETCH_STATES]
        rows_seen = states.get(prefix + "rows_seen")
        if not self.streaming or not all(isinstance(t, Tensor) for t in (*parts, rows_seen)):
            return ""  # not kept here, or missing: the keys are checked apart
        cells = sketch.Sketch(*(part.detach() for part in parts))
        found = sketch.state_problem(cells)
        if found is not None:
            field, why = found
            return f"state 'cell_{field}' {why}: it is not a sketch that update() made"
        counts = cells.count.to(torch.float64).sum(-1)  # every class's row holds every row
        labels = self._rows_and_labels(cells)
        read = [
            rows_seen.detach().reshape(1).double(),
            counts,
            *([] if labels is None else [labels]),
        ]
        seen, *held = torch.cat(read).tolist()
        rows_labels = None if labels is None else held[-2:]
        held = held[: len(counts)]
        kept = _row_count(states.get(prefix + "probs"))
        if not (math.isfinite(seen) and seen >= kept and seen == int(seen)):
            return (
                f"state 'rows_seen' is {seen:g}, where the state keeps {kept} rows exactly: "
                "it counts every row seen, kept exactly or in the sketch"
            )
        # Whole numbers by now (the sketch's counts were checked): say them so.
        seen, folded, fewest, most = int(seen), int(seen) - kept, int(min(held)), int(max(held))
        # Padding rows are counted as seen but never enter the sketch; other rows add one
        # pair to each class's sketch.
        if most > folded or fewest != most or (self.ignore_index is None and most < folded):
            padding = "" if self.ignore_index is None else " at most"
            return (
                f"the sketch holds {fewest}{'' if fewest == most else f' to {most}'} "
                f"rows, where state 'rows_seen' ({seen}, {kept} of them kept exactly) "
                f"leaves it{padding} {folded}"
                + (": was it saved with an ignore_index?" if most < folded else "")
            )
        more = None if rows_labels is None else self._more_labels_problem(*rows_labels)
        if more:
            return f"the sketch holds {more}: it is not a sketch that update() made"
        no_class = None if rows_labels is None else self._no_class_problem(*rows_labels)
        if no_class:
            return (
                f"the sketch's {no_class}: {rows_labels[0] - rows_labels[1]:g} targets name no "
                f"class in [0, {self.num_classes}) (padding without ignore_index?), which a "
                "checked update refuses"
            )
        return _item_scores_problem(states.get(prefix + _ITEM_SCORES))

    def _rows_and_labels(self, cells: sketch.Sketch) -> Tensor | None:
        """[rows, Σy over the classes] of a one-vs-rest or classwise sketch (float64, on
        its device: no host read), whose folded rows each add a pair to every class's
        sketch and a label 1 to their own class's alone, so that the two are equal; a
        target that names no class (an id ≥ C, or padding without ``ignore_index``:
        every class's negative) adds none. None where the sketch cannot show such a
        target: binary (Σy is checked cell by cell) and top-label (a wrong prediction)."""
        if self.num_classes is None or self.mode == "top_label":
            return None
        count, sum_y = cells.count[0].to(torch.float64), cells.sum_y.to(torch.float64)
        return torch.stack([count.sum(), sum_y.sum()])

    def _no_class_problem(self, rows: float, labels: float) -> str | None:
        """Why a one-vs-rest or classwise sketch of ``rows`` folded rows and ``labels``
        summed over its classes (:meth:`_rows_and_labels`) holds targets of no class
        (more labels than rows are no such targets: :meth:`_more_labels_problem`)."""
        if labels >= rows:
            return None
        return f"sum_y over the classes is {labels:g} for {rows:g} rows of one class each"

    def _more_labels_problem(self, rows: float, labels: float) -> str | None:
        """What a one-vs-rest or classwise sketch holds whose ``labels`` summed over its
        classes exceed its ``rows`` (:meth:`_rows_and_labels`): no update makes it,
        checked or not, since a row adds a label to its own class alone. A hand-made
        state (multi-label rows, say) had been said to hold a negative number of
        "targets of no class"."""
        if labels <= rows:
            return None
        return (
            f"more labels than rows (sum_y over the classes is {labels:g} for {rows:g} "
            "rows, where a row adds a label to its own class alone: multi-label rows?)"
        )

    def _folded_early_problem(self, rows_seen: Any, probs: Any) -> str | None:
        """Why a streaming state whose sketch holds rows, though their number fits this
        metric's buffer, is not this metric's (one host read, at load or merge only).

        It comes from a metric with a smaller buffer: a ``mode="top_label"`` one (whose
        rows hold C probabilities) into a binary metric, whose sketch has the same shape.
        Loaded, the metric took its rows to be still buffered, and compute() said "no
        pairs" of a state of 70,000."""
        if not self.streaming or not isinstance(rows_seen, Tensor):
            return None
        seen, kept, capacity = int(rows_seen), _row_count(probs), self._buffer_capacity()
        if kept >= seen or seen > capacity:
            return None
        return (
            f"the state's sketch holds {seen - kept} of its {seen} rows, but this metric "
            f"keeps up to {capacity} rows exactly before it folds any: it was saved by a "
            "streaming metric with a smaller buffer (mode='top_label', whose rows hold C "
            "probabilities, or another num_classes); load it into a metric built with the "
            "saving metric's settings"
        )

    def update(self, probs: Tensor, target: Tensor, groups: Tensor | None = None) -> None:
        """Accumulate a batch; a batch that fails validation changes nothing, and so does an
        empty one (a rank's last, say: compute() names "no pairs" if every batch was). The
        metric keeps its own copy of the batch, so the caller may refill its buffers.

        ``groups`` (with ``interval="groups"`` only): the id of every item's group, of
        ``target``'s shape. Ids must name a group in the whole evaluation set (e.g. the
        sentence's index in the data set), also across DDP ranks, since pairs with one
        id are resampled together. With the default ``interval=None`` (and
        ``streaming=False``), passing ``groups`` makes the interval resample groups.
        Unsigned ids (uint16 token or sentence ids) are kept as int64.
        """
        try:
            self._update(probs, target, groups)
        except Exception:
            # torchmetrics counted the call before it ran; a rejected batch is no update.
            self._update_count -= 1
            raise

    def _update(self, probs: Tensor, target: Tensor, groups: Tensor | None) -> None:
        self._refuse_synced("update")
        self._refuse_stale()
        check_tensors(probs=probs, target=target)  # dense, before any shape is read
        if not probs.is_floating_point():
            raise ValueError(f"probs must be a floating-point tensor, got {probs.dtype}")
        self._check_sketch_device(probs)
        if target.numel() == 0:
            # An empty batch (a rank's last, say) is checked and changes nothing: not the
            # pairs, nor whether the batches come with groups=.
            self._prepare(probs.detach(), target.detach())
            if groups is not None:
                _check_group_ids(groups, target, "groups")
            return
        groups = self._check_groups(groups, target)
        given = probs.detach(), target.detach()
        probs, target, keep = self._prepare(*given)
        if self.validate_args and self.num_classes is None:
            self._warn_one_hot(*given)
        elif self.validate_args:
            self._warn_row_sums({"": _kept_rows(probs, target, self.ignore_index)})
        self._keep_rows(probs, target, keep, groups)

    def _check_sketch_device(self, probs: Tensor) -> None:
        """Refuse, streaming, probabilities on another device than the sketch. Checked
        per batch, host-side: the kept rows would fold into the sketch only later, and
        fail there with torch's error, many batches on."""
        check_not_meta(probs, "probs")  # moving the metric there would not help
        if self.streaming and probs.device != self.cell_count.device:
            raise ValueError(
                f"probs are on {probs.device} and the metric's sketch on "
                f"{self.cell_count.device}: move the metric with .to({str(probs.device)!r})"
            )

    def _keep_rows(
        self, probs: Tensor, target: Tensor, keep: Tensor | None, groups: Tensor | None
    ) -> None:
        """Add validated rows: kept as they are (the metric's own copies) or, streaming
        past the buffer, folded into the sketch (read at once, so not copied: a copy of
        5·10⁷ pairs had come before the fold)."""
        if self.streaming:
            self._own_sketch()
            self.rows_seen += probs.shape[0]
            capacity = self._buffer_capacity()
            if self._folded or self._buffered_rows() + probs.shape[0] > capacity:
                self._fold_buffer()
                self._accumulate(self._sketch_states(), probs, target, keep)
                self._fold_item_scores([(probs, target, keep)])
                return
        # Ignored rows stay until compute(), where dropping them may synchronise.
        self.probs.append(_own_copy(probs))
        self.target.append(_own_copy(target))
        if groups is not None:
            self.groups.append(_own_copy(groups))

    def _own_sketch(self) -> None:
        """Give the sketch states private, writable copies where they are not, before
        anything is added in place."""
        items = (_ITEM_SCORES,) if self._keeps_item_scores() else ()
        names = (*_SKETCH_STATES, "rows_seen", *items)
        states = [getattr(self, name) for name in names]
        # ddp_spawn (torch.multiprocessing) hands every rank the metric in shared
        # memory: without a private copy, the ranks would add into one buffer. A reset,
        # or a forward, under torch.inference_mode (a Lightning validation loop) made
        # inference tensors, which refuse in-place adds outside that mode.
        shared = states[0].device.type == "cpu" and states[0].is_shared()
        frozen = not torch.is_inference_mode_enabled() and any(
            state.is_inference() for state in states
        )
        if shared or frozen:
            for name in names:
                setattr(self, name, getattr(self, name).clone())

    # --------------------------------------------------------------- streaming
    def _buffer_capacity(self) -> int:
        """Rows kept exactly before they are folded into the sketch: ``buffer_rows``, in
        at most the sketch's memory. A top-label row keeps C probabilities for a sketch of
        one row, so it holds 2R·16/(8C + 8) = 4R/(C + 1) of them (with C = 100, 2R rows
        took 200 MiB beside the one-row sketch)."""
        rows = sketch.buffer_rows(self.resolution)
        if self.mode == "top_label":
            return max(1, rows * 16 // (8 * self.num_classes + 8))
        return rows

    def _sketch_states(self) -> sketch.Sketch:
        return sketch.Sketch(*(getattr(self, name) for name in _SKETCH_STATES))

    def _buffered_rows(self) -> int:
        """Rows kept exactly (a host-side count of shapes: no synchronisation)."""
        return _row_count(self.probs)

    def _accumulate(
        self, states: sketch.Sketch, probs: Tensor, target: Tensor, keep: Tensor | None
    ) -> None:
        """Add rows (probs [n] or [n, C], target [n]) to sketch states, ``keep`` 0/1 per row,
        ``_FOLD_PAIRS`` pairs at a time: the sketch's temporaries are about 50 bytes a pair
        (float64 halves, int64 cells), and one update of 5·10⁷ pairs had peaked at nine
        times its input, a fold of 524,288 rows of 47 classes at 1.1 GiB."""
        pairs_a_row = 1 if self.num_classes is None else self.num_classes
        rows = max(1, _FOLD_PAIRS // pairs_a_row)
        for start in range(0, probs.shape[0], rows):
            part = slice(start, start + rows)
            kept = None if keep is None else keep[part]
            self._accumulate_rows(states, probs[part], target[part], kept)

    def _accumulate_rows(
        self, states: sketch.Sketch, probs: Tensor, target: Tensor, keep: Tensor | None
    ) -> None:
        if self.mode == "top_label":
            confidence, predicted = probs.max(dim=-1)
            sketch.accumulate(states.of_class(0), confidence, predicted == target, keep)
        elif self.num_classes is None:
            sketch.accumulate(states.of_class(0), probs, target, keep)
        else:
            classes = torch.arange(self.num_classes, device=target.device)
            sketch.accumulate(states, probs, target.unsqueeze(1) == classes, keep)

    def _buffer_parts(self) -> list[tuple[Tensor, Tensor, Tensor | None]]:
        """The exactly kept rows batch by batch (joining them first had copied the
        buffer), each with its ``keep`` (None, or False where a row is padding)."""
        probs_parts, target_parts = _as_list(self.probs), _as_list(self.target)
        if [p.shape[0] for p in probs_parts] != [t.shape[0] for t in target_parts]:
            # Parts split otherwise (a merged or loaded state whose lists differ): joined.
            probs_parts, target_parts = [dim_zero_cat(self.probs)], [dim_zero_cat(self.target)]
        return [
            (probs, target, None if self.ignore_index is None else target != self.ignore_index)
            for probs, target in zip(probs_parts, target_parts, strict=True)
        ]

    def _add_buffer(self, states: sketch.Sketch) -> None:
        """Add the exactly kept rows to ``states``; ignored rows get weight 0."""
        for probs, target, keep in self._buffer_parts():
            self._accumulate(states, probs, target, keep)

    def _fold_item_scores(self, parts: list[tuple[Tensor, Tensor, Tensor | None]]) -> None:
        """Add rows being folded into the sketch to the item sums (a new tensor: a
        MetricCollection's compute group shares the states)."""
        if self._keeps_item_scores() and self.mode != "top_label":
            setattr(self, _ITEM_SCORES, getattr(self, _ITEM_SCORES) + _summed_items(parts))

    def _fold_buffer(self) -> None:
        """Move the exactly kept rows into the sketch (no host synchronisation)."""
        self._add_buffer(self._sketch_states())
        self._fold_item_scores(self._buffer_parts())
        self.probs, self.target = [], []
        self._folded = True

    def reset(self) -> None:
        """Forget every pair (and, streaming, start keeping pairs exactly again, in this
        version's cell layout: a metric unpickled from an older one becomes usable)."""
        super().reset()
        self._folded = False
        if self.streaming:
            self._cell_layout = sketch.CELL_LAYOUT  # the defaults are empty: any layout's

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        # The layout the sketch was filled in, not this version's: a stale metric's state
        # (_stale_problem) still saves, with its model, and is refused where it is loaded.
        # None (pickled before the record): no record, as such a version saved it.
        saved = self.streaming and self._persistent.get("target", False)
        if saved and self._cell_layout is not None:
            layout = torch.tensor(self._cell_layout, dtype=torch.int64)
            destination[prefix + _LAYOUT_KEY] = layout

    def _check_incoming(self, states: dict, tags: dict[str, Any], prefix: str = "") -> None:
        # A state dict (it has the settings' record) of another cell layout: new pairs
        # would land one cell from its own equal values, splitting their tie groups (a
        # metric_state dict has no records). Unless its cells hold no row, as a checkpoint
        # saved after the epoch's reset() does: nothing in it to split.
        if self.streaming and _SETTINGS_KEY in tags:
            saved = tags.get(_LAYOUT_KEY)
            problem = _layout_problem(None if saved is None else int(saved))
            if problem and not _holds_no_cells(states.get(prefix + "cell_count")):
                raise ValueError(
                    f"{type(self).__name__}: the state's streaming sketch was saved by "
                    f"{problem}. Compute that state with the version that saved it, or "
                    "start this metric afresh"
                )
        super()._check_incoming(states, tags, prefix)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle (``torch.load`` of the metric or of a model holding it, ``copy``).

        A streaming metric pickled by a version of another cell layout always loads, so
        that a model holding it does: with an empty sketch it takes this version's layout
        (nothing in its cells to split); with rows in its sketch it is stale
        (:meth:`_stale_problem`) until ``reset()``.
        """
        state = {"_cell_layout": None, **state}  # pickled before it was recorded
        super().__setstate__(state)
        self._add_missing_item_scores()
        if not self._stale_problem():
            return
        if _holds_no_cells(self.__dict__.get("cell_count")):
            self._cell_layout = sketch.CELL_LAYOUT
        else:
            self._computed = None  # the older version's cached value: compute() refuses too

    def _fresh_default(self, name: str, default: Tensor, device: torch.device) -> Tensor:
        """The sketch's extremes start at ±inf (its other parts, the row count and the item
        sums at 0), for a metric built on the meta device."""
        bound = {"cell_low": math.inf, "cell_high": -math.inf}.get(name)
        if bound is None:
            return super()._fresh_default(name, default, device)
        return torch.full(default.shape, bound, dtype=default.dtype, device=device)

    def _keeps_item_scores(self) -> bool:
        """Whether this metric's settings keep the folded rows' item sums (a streaming
        multiclass metric)."""
        return self.streaming and self.num_classes is not None

    def _add_missing_item_scores(self) -> None:
        """Give a metric pickled before the item sums were kept (2026-12-01) their state:
        unknown (NaN) where its sketch holds rows, so that its Spiegelhalter test takes the
        sketch's cells, and zero where it holds none."""
        if not self._keeps_item_scores() or _ITEM_SCORES in self._defaults:
            return
        device = self.cell_count.device
        self.add_state(_ITEM_SCORES, torch.zeros(3, dtype=torch.float64, device=device), "sum")
        # Saved with the sketch, as its other states are (add_state had left it out of
        # every state_dict, whose loads then took their sums for unknown).
        self._persistent[_ITEM_SCORES] = self._persistent.get("cell_count", False)
        setattr(self, _ITEM_SCORES, _older_item_scores(self.cell_count, device))

    def _complete_state(self, states: dict[str, Any], prefix: str = "") -> None:
        """Give a state saved before the item sums were kept (2026-12-01) its sums, so that
        it loads (or merges): unknown (NaN) where its sketch holds rows, whose
        Spiegelhalter test then takes the sketch's cells, and zero where it holds none (a
        state saved after a reset, or with its rows in the buffer). A multiclass state's
        item sums, offered to a metric that keeps none, are left to the settings' check,
        which names the difference (num_classes 17 into num_classes None) where the keys'
        would only say "other settings"."""
        key, cells = prefix + _ITEM_SCORES, states.get(prefix + "cell_count")
        if cells is None:
            return
        if self._keeps_item_scores() and key not in states:
            states[key] = _older_item_scores(cells, torch.device("cpu"))
        elif not self._keeps_item_scores() and self.streaming:
            states.pop(key, None)

    def _stale_problem(self) -> str:
        """Why this metric can take no pairs nor compute ('' when it can): its sketch holds
        rows placed by another cell layout (a metric unpickled from an older version)."""
        if not self.streaming:
            return ""
        return _layout_problem(self._cell_layout)

    def _refuse_stale(self) -> None:
        """Raise ValueError, changing nothing, when this metric is stale (update, forward,
        merge_state in either direction and every compute refuse it)."""
        problem = self._stale_problem()
        if problem:
            raise ValueError(
                f"{type(self).__name__}: this streaming metric was pickled by {problem}, "
                "and its sketch holds rows: it takes no pairs and computes nothing here. "
                "reset() starts it afresh in this version's layout; or compute it with the "
                "version that pickled it"
            )

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        sketch_before = self.__dict__.get("cell_count")
        super()._load_from_state_dict(*args, **kwargs)
        if self.streaming:
            # Where the next rows go follows the loaded state (host sync, at load only):
            # to the sketch once it holds rows that the kept pairs do not.
            self._folded = int(self.rows_seen) > self._buffered_rows()
            if self.cell_count is not sketch_before:
                # Loaded (a copy, checked to be of this layout or empty): it replaced
                # the whole state, a stale one's too.
                self._cell_layout = sketch.CELL_LAYOUT

    def _exact_pairs(self) -> bool:
        """Whether compute() bins the kept pairs exactly: always, or (streaming) while
        the rows seen, on all ranks once synchronised, fit the buffer (host sync)."""
        if not self.streaming:
            return True
        self._refuse_stale()  # every compute asks this first
        return int(self.rows_seen.item()) <= self._buffer_capacity()

    def _full_sketch(self) -> sketch.Sketch:
        """The sketch with the kept rows folded into a copy (the state stays as it is)."""
        states = self._sketch_states()
        if self._buffered_rows():
            states = states.clone()
            self._add_buffer(states)
        return states

    # ------------------------------------------------------------------- state
    def forward(self, *args: Any, **kwargs: Any) -> Tensor:
        """``update`` with the batch, returning the batch's own value (``compute``'s kind).

        Unlike torchmetrics' default (reset, update, compute, restore), the batch is
        measured by a separate metric of the same options and then merged in, so that
        a rejected batch raises and leaves the accumulated state as it was, and a batch
        of padding only returns NaN and keeps it too. A streaming metric measures the
        batch in the exact mode (what it reports while its rows fit the buffer) and
        buffers its rows, so that a batch never pays for a sketch of its own.
        """
        self._refuse_synced("forward")
        self._refuse_stale()
        groups = args[2] if len(args) > 2 else kwargs.get("groups")
        batch = self._batch_metric()
        batch._row_sums_warned = True  # this metric warns, once, at the caller's line
        # A batch's few bins are not the data's: the warning is compute()'s, once (a
        # batch of 500 pairs had warned "only 5 bins" beside an epoch of 100 bins).
        batch._few_bins_warned = True
        batch._one_hot_checked = True
        batch.update(*args, **kwargs)  # raises on a rejected batch; self is untouched
        if self.streaming:
            # The exact-mode batch metric takes it; this one cannot.
            self._check_sketch_device(_batch_pairs(args, kwargs)[0])
        if batch.target:  # as in update(), an empty batch says nothing about groups=
            # The batch metric has no history: whether groups= may come is this one's to say.
            self._check_group_history(given=groups is not None)
            if self.streaming and groups is not None:
                self._check_groups(groups, None)  # raises: streaming keeps no group ids
        if self.validate_args and self.num_classes is None:
            self._warn_one_hot(*_batch_pairs(args, kwargs))
        elif self.validate_args:
            self._warn_row_sums({"": _kept_rows(*_batch_pairs(args, kwargs), self.ignore_index)})
        try:
            value = batch.compute()
        except NoPairsError:
            shape = (self.num_classes,) if self.average is None else ()
            value = torch.full(shape, float("nan"), dtype=torch.float64, device=self.device)
        if self.streaming:
            self._keep_batch(batch)
        else:
            self._merge(batch, copy=False)  # which counts the batch's update
        self._forward_cache = value
        return value

    def _keep_batch(self, batch: CalibrationError) -> None:
        """Add the rows that the exact-mode ``batch`` kept to the buffer, and count its
        update. New states, never changed in place: a MetricCollection's compute group
        calls every member's forward on states they share. Past the buffer the rows are
        folded into a new sketch, once a buffer's worth of rows."""
        rows = sum(part.shape[0] for part in batch.probs)
        self.rows_seen = self.rows_seen + rows
        self.probs, self.target = [*self.probs, *batch.probs], [*self.target, *batch.target]
        if self._buffered_rows() > self._buffer_capacity():
            states = self._sketch_states().clone()
            self._add_buffer(states)
            for name, state in zip(_SKETCH_STATES, states):
                setattr(self, name, state)
            self._fold_item_scores(self._buffer_parts())
            self.probs, self.target = [], []
            self._folded = True
        self._count_merged_updates(batch)
        self._computed = None

    def _batch_metric(self) -> CalibrationError:
        """A metric like this one (cached, reset) that measures one batch for forward()."""
        batch = self.__dict__.get("_batch")
        if batch is None:
            # The batch value is synchronised only with dist_sync_on_step, as in torchmetrics.
            kwargs = {**self._base_kwargs, "sync_on_compute": self.dist_sync_on_step}
            # Streaming, in the exact mode: a reset sketch is num_classes × resolution
            # cells to clear (12 MiB a class by default), which cost 1 s a batch at C = 47.
            with built_again():
                batch = CalibrationError(**{**self._options, "streaming": False}, **kwargs)
            # Kept out of the module tree, so it is not in state_dict() nor moved by .to().
            self.__dict__["_batch"] = batch
        batch.to(self.device)
        batch.reset()
        return batch

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """Add another metric's state (or a state dict) to this one; both must keep alike.

        Also with ``dist_sync_on_step=True``, which torchmetrics' own ``merge_state``
        refuses: the states are sums, extremes and concatenations, merged as they are locally, and
        ``forward`` merges each batch through here. The merged pairs are this metric's own
        copies, as ``update``'s and ``load_state_dict``'s are: the caller may refill or
        change the incoming tensors afterwards.

        A metric is checked by its options (``streaming``, ``mode``, ``num_classes``,
        ``ignore_index``, ``resolution``, whether it keeps group ids), and its values are
        taken as its updates checked them. One built with ``validate_args=False``, merged
        into one with ``validate_args=True``, is also checked by its values, as its own
        compute checks them: its updates checked none, and this metric's compute checks
        none either, so logits are refused here, in the words of ``other.compute()``,
        before anything is merged (host reads: each batch it keeps exactly, and its
        sketch). What its compute cannot see is taken: a binary label of 2 beside 0s, or
        a top-label class id ≥ C, folded into its sketch. Into a ``validate_args=False``
        metric its pairs stay unchecked until that metric's compute checks them. A dict
        of states (``other.metric_state``) carries no options, so it is checked by its
        keys, shapes and values: probabilities in [0, 1], targets that are labels here (0
        or 1; class ids below ``num_classes``) or this metric's ``ignore_index``, and a
        sketch's cells as an update leaves them (which show logits, NaN and, one-vs-rest
        and classwise, class ids outside [0, C), but not every wrong label folded into
        them). Padding marked by a value that is a label here as well (``ignore_index=0``,
        or 2 of 3 classes, into a metric without it) cannot be told from labels and would
        be counted as labels; nor can a folded streaming top-label sketch be told from a
        binary one. Merge the metric itself, or its ``state_dict()`` (after
        ``persistent(True)``), which records ``ignore_index``, ``mode`` and
        ``num_classes`` and is checked against them as ``load_state_dict`` checks it.
        """
        self._merge(incoming_state, copy=True)

    def _merge(self, incoming_state: dict[str, Any] | Metric, *, copy: bool) -> None:
        """:meth:`merge_state`; ``copy=False`` takes the incoming pairs' tensors themselves
        (forward's batch metric, whose rows are already its own copies and whose reset
        gives it new lists)."""
        if not isinstance(incoming_state, dict | CalibrationError):
            raise ValueError(
                "a CalibrationError merges another CalibrationError or a dict of its states, "
                f"got {type(incoming_state).__name__}"
            )
        self._refuse_stale()
        if isinstance(incoming_state, CalibrationError):
            problem = self._merge_problem(incoming_state)
            if problem:
                raise ValueError(f"cannot merge these CalibrationErrors: {problem}")
            self._check_unchecked_metric(incoming_state)
        elif isinstance(incoming_state, dict):
            incoming_state = dict(incoming_state)  # the caller's dict keeps its records
            tags = self._pop_tags(incoming_state)
            self._complete_state(incoming_state)
            if set(incoming_state) != set(self._defaults):
                raise ValueError(
                    f"cannot merge a state with keys {sorted(incoming_state)} into a "
                    f"CalibrationError that keeps {sorted(self._defaults)}"
                )
            self._check_incoming(incoming_state, tags)
        incoming = incoming_state
        if isinstance(incoming, CalibrationError):
            incoming = incoming.metric_state
        incoming = self._listed(incoming)
        if copy:
            # torchmetrics' reduction joins the lists of pairs, keeping the incoming tensors
            # themselves (the sketch's sums, extremes and row count it makes anew).
            incoming = {
                key: [_own_copy(t.detach()) for t in value] if isinstance(value, list) else value
                for key, value in incoming.items()
            }
        if self._keeps_groups() and _mixes_grouped(self.metric_state, incoming):
            raise ValueError(
                "cannot merge these CalibrationErrors: one holds group ids (groups=) and "
                "the other holds pairs without them: give every batch its group ids, or none"
            )
        self._reduce_states(incoming)
        folded = self._folded or getattr(incoming_state, "_folded", False)
        if self.streaming and (folded or self._buffered_rows() > self._buffer_capacity()):
            self._fold_buffer()
        self._count_merged_updates(incoming_state)
        self._computed = None

    def _check_unchecked_metric(self, other: CalibrationError) -> None:
        """Refuse, before anything is merged, the pairs of ``other`` that no update checked
        (``validate_args=False``) when this metric's are (``validate_args=True``), whose
        compute checks none: they are checked as ``other.compute()`` would check them,
        and refused in its words (:meth:`_unchecked_pairs_problem`: each batch kept
        exactly, two host reads a batch; :meth:`_unchecked_sketch_problem`: the folded
        sketch, one or two). Logits had been merged and measured as probabilities, where
        ``other.compute()`` and the merge of ``other.metric_state`` refused them. What
        ``other``'s compute cannot see is not seen here either: a binary label of 2 beside
        a 0 in one cell of its sketch, or a top-label target of no class folded there. A
        metric whose updates were checked, forward's batch metric and DDP's
        synchronisation (ranks of one ``validate_args``, gathered by torchmetrics, not
        merged here) are not read again; into a ``validate_args=False`` metric the pairs
        stay unchecked until its compute, which checks them with its own."""
        if not self.validate_args or other.validate_args:
            return
        problem = other._unchecked_problem()
        if problem:
            raise ValueError(
                "cannot merge these CalibrationErrors: the incoming "
                f"CalibrationError(validate_args=False) {problem}; merged, this metric "
                "(validate_args=True, whose compute checks nothing) would measure them"
            )

    def _settings_problem(self, num_classes: int | None, mode: str) -> str:
        """Also the mode: the pairs kept exactly are the same for every mode, but a
        streaming top-label sketch is of (confidence, correct) pairs, which a binary
        sketch of one row would take for (q, y); and merge_state never took another
        mode's."""
        problem = super()._settings_problem(num_classes, mode)
        if not problem and mode != self.mode:
            problem = f"mode {mode!r} into mode {self.mode!r}"
        return problem

    def _load_problem(self, num_classes: int | None, mode: str) -> str:
        """A saved state is refused only where its states differ in kind from this
        metric's: the pairs kept exactly are the same for every mode, and a streaming
        one-vs-rest or classwise metric keeps the same ``[C, R]`` sketch; only a streaming
        top-label sketch (of (confidence, correct) pairs) differs from the others.
        ``merge_state(metric)`` keeps its own rule (:meth:`_settings_problem`)."""
        problem = super()._settings_problem(num_classes, mode)
        top_label = (mode == "top_label") != (self.mode == "top_label")
        if not problem and self.streaming and self.num_classes is not None and top_label:
            problem = f"mode {mode!r} into mode {self.mode!r}"
        return problem

    def _merge_problem(self, other: CalibrationError) -> str:
        """Why ``other``'s state cannot be added to this one's ('' when it can)."""
        mode = {True: "a streaming", False: "an exact-mode"}
        if other.streaming != self.streaming:
            return (
                f"{mode[other.streaming]} metric cannot be merged into {mode[self.streaming]} "
                "one (streaming= must match)"
            )
        settings = self._settings_problem(other.num_classes, other.mode)
        if settings:
            return settings
        if other.ignore_index != self.ignore_index:
            # Padding rows are kept, with their target, until compute() drops them.
            return f"ignore_index {other.ignore_index} into ignore_index {self.ignore_index}"
        if self.streaming and other.resolution != self.resolution:
            return f"resolution {other.resolution} into resolution {self.resolution}"
        if self.streaming:
            problem = _layout_problem(other.__dict__.get("_cell_layout"))
            if problem:
                return (
                    f"the incoming streaming sketch was made by {problem} (reset() it to "
                    "start it afresh in this version's layout, or compute it with the "
                    "version that pickled it)"
                )
        if set(other._defaults) != set(self._defaults):
            return "one keeps group ids and the other does not (interval= must match)"
        groups = getattr(other, "groups", None)
        if groups is not None:  # the rule every id state keeps (a dict's too)
            problem = _ids_problem("groups", groups, other.target)
            if problem:
                return problem
        return self._group_ids_problem(other.target, groups)

    # ----------------------------------------------------------------- compute
    def _pair_states(self) -> tuple[str, ...]:
        return ("probs", "target", "groups") if self._keeps_groups() else ("probs", "target")

    def _no_pairs(self) -> NoPairsError:
        """The error of a metric with nothing to measure, saying why."""
        pad = self.ignore_index
        received = self._none_received("" if pad is None else f" but padding ({pad})")
        if received:
            return NoPairsError(f"CalibrationError has no pairs: {received}")
        if self.update_count == 0:
            return NoPairsError(
                "CalibrationError has no pairs: call update() before computing (compute, "
                "compute_smooth, plot, ...)"
            )
        padding = "" if pad is None else f" or padding ({pad})"
        return NoPairsError(
            f"CalibrationError has no pairs: all {self.update_count} updates were empty{padding}"
        )

    def _pairs(self) -> tuple[Tensor, Tensor, Tensor | None]:
        """probs, target and (when kept) group ids, ignored items dropped."""
        # Lists of batches locally; one tensor each once synchronised across ranks.
        if isinstance(self.probs, list) and not self.probs:
            raise self._no_pairs()
        self._check_room()
        probs = dim_zero_cat(self.probs)
        target = dim_zero_cat(self.target)
        if probs.numel() == 0:
            raise self._no_pairs()
        groups = self._kept_groups(target)
        if self.ignore_index is not None:
            keep = target != self.ignore_index
            probs, target = probs[keep], target[keep]
            groups = None if groups is None else groups[keep]
        if target.numel() == 0:
            raise self._no_pairs()
        self._refuse_unchecked_pairs(probs, target)
        return probs, target, groups

    def _refuse_unchecked_pairs(self, probs: Tensor, target: Tensor) -> None:
        """With ``validate_args=False``, the pairs a compute measures are checked there, as
        every batch's are otherwise (the batch check's two host reads): logits or labels
        of 2 had given a tight, believable and wrong error at every compute, where
        ``CalibrationComparison`` refused them."""
        if self.validate_args:
            return
        problem = self._unchecked_pairs_problem([(probs, target)], ignore_index=None)
        if problem:
            raise ValueError(f"CalibrationError(validate_args=False) {problem}")

    def _unchecked_problem(self) -> str | None:
        """What this metric holds that no update checked and its compute would refuse
        (None: nothing), in its words: each batch kept exactly, and the folded sketch."""
        parts = [(probs, target) for probs, target, _ in self._buffer_parts()]
        problem = self._unchecked_pairs_problem(parts, self.ignore_index)
        if problem is None and self.streaming:
            problem = self._unchecked_sketch_problem(self._sketch_states())
        return problem

    def _unchecked_pairs_problem(
        self, parts: list[tuple[Tensor, Tensor]], ignore_index: int | None
    ) -> str | None:
        """What pairs that no update checked hold that a batch may not (None: nothing), as
        a ``validate_args=False`` metric's compute, or a merge of it into a checked one,
        says it: the batch check of each part (probs, target) with ``ignore_index`` (None
        where the padding is dropped already), two host reads a part."""
        for probs, target in parts:
            try:
                _prepare_batch(probs, target, self.num_classes, ignore_index)
            except ValueError as error:
                return f"holds pairs no update checked: {error}"
        return None

    def _unchecked_sketch_problem(self, states: sketch.Sketch) -> str | None:
        """What a sketch of rows no update checked holds that no checked rows leave there
        (None: nothing), as a ``validate_args=False`` metric's compute, or a merge of it
        into a checked one, says it. One host read (two for a one-vs-rest or classwise
        sketch): a probability outside [0, 1] or NaN, labels that make a cell's Σy exceed
        its count or a fraction, and, one-vs-rest and classwise, targets of no class (an id
        ≥ C, or padding without ``ignore_index``: :meth:`_rows_and_labels`). A binary
        label of 2 beside a 0 in one cell, or a top-label target of no class (a wrong
        prediction), leaves no trace: ``validate_args=True`` is the check that sees every
        batch."""
        found = sketch.state_problem(states)
        where = None if found is None else f"{found[0]} {found[1].split(', where')[0]}"
        rows_labels = None if where else self._rows_and_labels(states)
        if rows_labels is not None:
            more = self._more_labels_problem(*rows_labels.tolist())
            if more:
                return (
                    f"holds in its sketch {more}, which no update makes, checked or not: "
                    "was its state changed by hand?"
                )
            where = self._no_class_problem(*rows_labels.tolist())
        if where is None:
            return None
        if self.num_classes is None:
            labels = ", or labels other than 0/1"
        elif self.mode == "top_label":
            labels = ""
        else:
            labels = (
                f", or targets that name no class in [0, {self.num_classes}) (padding "
                "without ignore_index?)"
            )
        return (
            f"folded values no update checked into its sketch ({where}): probabilities "
            f"outside [0, 1] (logits?), NaN{labels}; validate_args=True names the batch"
        )

    def _sketch_to_read(self) -> sketch.Sketch:
        """The full sketch a streaming compute reads (:meth:`_full_sketch`), refused when it
        holds no pair, or, with ``validate_args=False``, what no valid pair leaves there
        (:meth:`_unchecked_sketch_problem`)."""
        states = self._full_sketch()
        if states.count.sum() == 0:
            raise self._no_pairs()
        problem = None if self.validate_args else self._unchecked_sketch_problem(states)
        if problem is not None:
            raise ValueError(f"CalibrationError(validate_args=False) {problem}")
        return states

    def _check_room(self) -> None:
        """Raise ValueError up front, recommending streaming, when compute() would not fit:
        the joined pairs (twice with ``ignore_index``) and the binning's working memory."""
        parts = [t for name in self._pair_states() for t in _as_list(getattr(self, name))]
        copies = 2 if self.ignore_index is not None else 1
        need = copies * sum(t.numel() * t.element_size() for t in parts)
        probs = _as_list(self.probs)
        pairs = sum(t.numel() for t in probs)
        if self.binning == "adaptive":
            bin_size = resolve_bin_size(self.bin_size, max(pairs, 1))
            need += exact_working_bytes(pairs, bin_size, probs[0].element_size())
        if not self.streaming:
            check_room(need, self.device, f"the exact mode's compute() of {pairs} pairs")
            return
        # A streaming metric still holding its rows exactly (a few MiB at most).
        check_room(
            need,
            self.device,
            f"compute() of the {pairs} pairs this streaming metric still holds exactly",
            remedy="free memory on this device, or compute() on a smaller set",
            unit="KiB",
        )

    def _kept_groups(self, target: Tensor) -> Tensor | None:
        """The group ids to resample, or None for the pair interval."""
        if not self._keeps_groups() or (isinstance(self.groups, list) and not self.groups):
            return None
        groups = dim_zero_cat(self.groups)
        if groups.numel() == 0 and self.interval is None:
            return None
        if groups.numel() != target.numel():
            raise ValueError(
                f"{groups.numel()} group ids for {target.numel()} items: some batches (or "
                "ranks) came without groups="
            )
        return groups

    def _drawn_interval(self, result: Any) -> str | None:
        """The interval behind ``result`` (one that carries no kind), for figures' labels:
        the one drawn, when it is what compute_result() returned last, else this metric's
        ``interval``, or none named where the data picks it (the state's guess had named a
        result made by hand over pairs a group bootstrap once groups came: the state
        since need not be the one behind it)."""
        drawn = self.__dict__.get("_drawn")
        if drawn is not None and drawn[0] is result:
            return drawn[1]
        return self.interval

    def _interval(self, groups: Tensor | None) -> str:
        """The interval that compute_result() draws: interval=None picks by the data."""
        if self.interval is not None:
            return self.interval
        return "pairs" if groups is None else "groups"

    def _class_pairs(
        self, per_class: bool | None = None
    ) -> list[tuple[Tensor, Tensor, Tensor | None]]:
        """Binary pairs (probs, target, groups) behind each result: one (micro) or per class
        (``per_class``: this metric's own choice when None)."""
        per_class = self._per_class if per_class is None else per_class
        probs, target, groups = self._pairs()
        if self.num_classes is None:
            return [(probs, target, groups)]
        if self.mode == "top_label":
            return [pair_sets(probs, target, "top_label", groups, check_rows=False)[0]]
        classes = torch.arange(self.num_classes, device=target.device)
        if not per_class:
            # Every item gives C pairs, all in the item's group.
            wide = None if groups is None else groups.unsqueeze(1).expand(-1, self.num_classes)
            return [(probs, target.unsqueeze(1) == classes, wide)]
        return [(probs[:, c], target == c, groups) for c in range(self.num_classes)]

    def class_bins(self) -> list[Bins]:
        """The bins behind the result: one entry (micro) or one per class. Synchronised
        under DDP: they are the union's bins on every rank, and the call is collective
        (every rank must make it, or the others wait in the gather). Unlike the
        ``compute*`` methods, which follow torchmetrics and refuse a metric the caller
        synchronised already (``sync()``), it takes such a metric as it is and leaves it
        synchronised, so that drawing code may read the bins inside the caller's sync."""
        synced = self._is_synced  # a caller's own sync() is the caller's to undo
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn,
            should_sync=self.sync_on_compute and not synced,
            should_unsync=not synced,
        ):
            return self._bins(self._per_class)

    def _bins(self, per_class: bool) -> list[Bins]:
        """The bins of the pooled pairs (one entry) or of each class's (``per_class``)."""
        if not self._exact_pairs():
            sketches = self._class_sketches(per_class)
            self._warn_coarse_sketches(sketches)
            return [
                sketch.to_bins(cells, size, redraw=not self._debias) for cells, size in sketches
            ]
        return self._bins_of(self._class_pairs(per_class))

    def _class_sketches(self, per_class: bool | None = None) -> list[tuple[sketch.Sketch, int]]:
        """The folded sketch behind each result, pooled (micro) or per class (``per_class``:
        this metric's own choice when None), with its bin size (one host synchronisation
        each)."""
        states = self._sketch_to_read()
        if self._per_class if per_class is None else per_class:
            sets = [states.of_class(c) for c in range(states.count.shape[0])]
        else:
            sets = [states.pooled()]
        pairs = [int(cells.count.sum().item()) for cells in sets]
        sizes = [resolve_bin_size(self.bin_size, n) for n in pairs]
        self._check_bins_room(pairs, sizes)
        return list(zip(sets, sizes, strict=True))

    def _check_bins_room(self, pairs: list[int], sizes: list[int]) -> None:
        """Raise ValueError up front when the bins of a sketch would not fit, as the exact
        mode refuses pairs that would not: the sketch holds any number of pairs, and
        ``bin_size="auto"`` makes about √N bins of them (6·10⁷ for counts of 4·10¹⁵).

        The classes are binned one after another: the working memory
        (``sketch.BYTES_PER_BIN``, about what compute() was measured to take) is the
        largest class's, and only the finished bins (``sketch.BYTES_PER_KEPT_BIN``) add up.
        """
        each = [max(1, n // size) for n, size in zip(pairs, sizes, strict=True)]
        bins = sum(each)
        check_room(
            max(each) * sketch.BYTES_PER_BIN + bins * sketch.BYTES_PER_KEPT_BIN,
            self.device,
            f"the streaming compute of {sum(pairs)} pairs in {bins} bins",
            "choose a larger bin_size (bin_size='auto' makes about √N bins of √N pairs)",
        )

    def _warn_coarse_sketches(self, sketches: list[tuple[sketch.Sketch, int]]) -> None:
        """One UserWarning per metric object when a folded sketch has fewer than
        ``MIN_CELLS_PER_BIN`` cells (of several values) per bin, naming the resolution that
        every class's would need or the exact mode where that takes less memory (one host
        synchronisation a sketch; once, when it warns, one more for each coarse sketch,
        whose cells are copied to the host)."""
        if self._coarse_sketch_warned:
            return
        classes = self.num_classes or 1
        # As _buffer_capacity counts them: 16 bytes a binary pair, 8C + 8 a multiclass row.
        row_bytes = 16 if self.num_classes is None else 8 * classes + 8
        kept = 1 if self.mode == "top_label" else classes
        exact = sketch.ExactCost(self.rows_seen, row_bytes, kept)
        message = sketch.coarse_sketches_message(sketches, exact)
        if message is not None:
            self._coarse_sketch_warned = True
            warn_at_user_line(f"CalibrationError: {message}", computed_by=self)

    def _bins_of(self, pairs: list[tuple[Tensor, Tensor, Tensor | None]]) -> list[Bins]:
        """Each pair set's bins; with group ids and the debiased estimate, carrying the
        groups' cluster-robust n_eff, as ``compute_result`` (the group bootstrap) has them."""
        options = {"binning": self.binning, "bin_size": self.bin_size, "n_bins": self.n_bins}
        bins = []
        for p, t, g in pairs:
            if g is None or not self._debias:
                bins.append(compute_bins(p, t, validate=False, **options))
                continue
            flat_p, flat_t = p.reshape(-1), t.reshape(-1)
            data, index = bins_and_index(flat_p, flat_t, **options)
            bins.append(grouped_bins(flat_p, flat_t, g.reshape(-1), index, data))
        return bins

    def _warn_few_bins(self, bins: list[Bins]) -> None:
        """One UserWarning per metric object when the data make fewer than MIN_BINS bins,
        or (debiased) bins of one pair."""
        if self._few_bins_warned:
            return
        message = few_bins_message(
            bins,
            binning=self.binning,
            bin_size=self.bin_size,
            n_bins=self.n_bins,
            debias=self._debias,
            per_class=len(bins) > 1,
        )
        if message is None:
            return
        self._few_bins_warned = True
        # Reached from compute(), compute_result() or torchmetrics' wrapper of compute().
        warn_at_user_line(f"CalibrationError: {message}", computed_by=self)

    def _average(self, errors: list[Tensor], bins: list[Bins]) -> Tensor:
        """One error (micro), per class (none) or their mean (macro, classwise) / weighted."""
        if not self._per_class:
            return errors[0]
        stacked = torch.stack(errors)
        if self.average is None:
            return stacked
        if self.average == "macro" or self.mode == "classwise":
            return stacked.mean()
        # weighted: by each class's support, the number of items of that class.
        support = torch.stack([(b.freq * b.count).sum() for b in bins]).to(stacked.dtype)
        return (stacked * support).sum() / support.sum()

    def compute(self) -> Tensor:
        """The calibration error: 0-dim (micro, macro, weighted) or one per class (none)."""
        bins = self._bins(self._per_class)  # synchronised by torchmetrics' wrapper
        self._warn_few_bins(bins)
        errors = [bin_errors(b, self.norm, self._debias) for b in bins]
        return self._average(errors, bins)

    def streaming_tolerance(self) -> Tensor:
        """How far :meth:`compute` may lie from the exact mode's error on the same pairs.

        0 while the pairs are kept: always in the exact mode, and in the streaming mode
        up to :func:`~calib_metrics.functional.sketch.buffer_rows` rows, where the
        result is the exact one. Past the buffer, the bound that the sketch gives
        (:func:`~calib_metrics.functional.sketch_gap.streaming_gap_bound`: four standard
        deviations of the labels that the bin boundaries cut inside cells of several
        values, plus their positions' worst case), combined over classes as
        :meth:`compute` combines the errors: a mean's gap is at most the mean of the
        gaps. It holds at every N and bin size for pairs that are exchangeable within a
        cell (which cells hold one value the sketch knows exactly, float32 scores an ulp
        apart included); labels ordered by q inside a wide cell break it
        (``functional/sketch_gap.py``, ``docs/streaming.md``). Where it
        is large next to the error's own interval (a debiased error near 0 in small
        bins, whose root moves far for a small change of its square), use a finer
        ``resolution`` or the exact mode. Same shape as :meth:`compute`; synchronised
        under DDP like :meth:`compute_result`.

        Example:
            >>> import torch
            >>> g = torch.Generator().manual_seed(0)
            >>> q = torch.rand(20_000, generator=g)
            >>> y = torch.bernoulli(q, generator=g).long()
            >>> options = {"bin_size": 2000, "debias": False}
            >>> streaming = CalibrationError(streaming=True, resolution=1024, **options)
            >>> streaming.update(q, y)  # 20,000 rows: past the 2,048 kept exactly
            >>> exact = CalibrationError(**options)
            >>> exact.update(q, y)
            >>> gap = (streaming.compute() - exact.compute()).abs()
            >>> bool(gap <= streaming.streaming_tolerance()), bool(exact.streaming_tolerance() == 0)
            (True, True)
        """
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn, should_sync=self.sync_on_compute, should_unsync=True
        ):
            if self._exact_pairs():
                classes = len(self._class_pairs())  # raises as compute() does when empty
                shape = (classes,) if self._per_class and self.average is None else ()
                return torch.zeros(shape, dtype=torch.float64, device=self.device)
            options = {"norm": self.norm, "debias": self._debias}
            bounds = [
                streaming_gap_bound(cells, size, **options)
                for cells, size in self._class_sketches()
            ]
            bins = self._bins(self._per_class) if self.average == "weighted" else []
        return self._average(bounds, bins)

    def compute_result(self) -> CalibrationResult | list[CalibrationResult]:
        """Error, interval and bins: one result (micro) or a list of one per class.

        ``average="macro"`` and ``"weighted"`` give the per-class list too (their
        average's own value is :meth:`compute`). The interval is ``interval``'s; with
        ``interval=None``, the group bootstrap when the updates gave ``groups=``, else
        the pair bootstrap. Under DDP it is synchronised like :meth:`compute`
        (torchmetrics wraps only ``compute``); do not call it inside ``sync_context``.
        """
        results, interval = self._computed_results()
        if self.mode == "classwise":
            result = average_results(results)
        else:
            result = results if self._per_class else results[0]
        return self._drawn_with(result, interval)

    def compute_class_results(self) -> list[CalibrationResult]:
        """The per-class results that ``mode="classwise"`` averages: class c's from its
        one-vs-rest pairs (q = probs[..., c], y = [target = c]), with this metric's
        estimator and interval, in class order. Synchronised under DDP like
        :meth:`compute_result`, which gives their average (:meth:`plot` draws them).

        Each call draws every class's interval afresh: ``n_samples`` resamplings a class.
        To list and draw them, draw once and pass the list on:
        ``metric.plot(metric.compute_class_results())``.

        Example:
            >>> import torch
            >>> from calib_metrics import CalibrationError
            >>> g = torch.Generator().manual_seed(0)
            >>> probs = torch.softmax(2 * torch.randn(900, 3, generator=g), -1)
            >>> target = torch.multinomial(probs, 1, generator=g).squeeze(1)
            >>> metric = CalibrationError(num_classes=3, mode="classwise", n_samples=50)
            >>> metric.update(probs, target)
            >>> per_class = metric.compute_class_results()
            >>> len(per_class), bool(torch.stack([r.error for r in per_class]).mean()
            ...                      == metric.compute())
            (3, True)
        """
        if self.mode != "classwise":
            raise ValueError(
                f"compute_class_results is mode='classwise''s, and this metric has "
                f"mode={self.mode!r}: {self._class_results_advice()}"
            )
        return self._drawn_with(*self._computed_results())

    def _class_results_advice(self) -> str:
        """How a metric of another mode gets one result per class: only settings that the
        constructor takes (it refuses ``average=None`` without ``num_classes`` and with
        ``mode="top_label"``)."""
        c = "C" if self.num_classes is None else self.num_classes
        classwise = f"CalibrationError(num_classes={c}, mode='classwise')"
        per_class = f"CalibrationError(num_classes={c}, average='none')"
        if self.num_classes is None:
            return (
                "binary input has one result, compute_result(); for one result per class "
                f"pass probs [..., C] to {classwise} (compute_class_results()) or "
                f"{per_class} (compute_result())"
            )
        if self.mode == "top_label":
            return (
                "top-label pairs (confidence, correct) belong to no class; for one result per "
                f"class build {classwise} (compute_class_results()) or {per_class} "
                "(compute_result())"
            )
        if self._per_class:  # average "none", "macro" or "weighted"
            return "its compute_result() gives one result per class (a list, in class order)"
        return f"for one result per class build {per_class} (compute_result()) or {classwise}"

    def _one_vs_rest_results(self) -> list[CalibrationResult]:
        """Each class's one-vs-rest result (class c's pairs q = probs[..., c], y = [target =
        c]), in class order, equal to ``compute_result()`` of the same metric with
        ``average=None``: a pooled (micro) or classwise metric keeps every class's pairs (or
        histogram) apart, so a caller that wants both the pooled and the per-class results
        needs no second metric holding the same state (CalibrationMonitor's
        ``per_class=True``). Synchronised under DDP like :meth:`compute_result`; the result
        that figures label (:meth:`_drawn_interval`) stays the last ``compute_result``'s.
        """
        if self.num_classes is None or self.mode == "top_label":
            raise ValueError(
                "one-vs-rest results per class need num_classes and mode='one_vs_rest' or "
                f"'classwise', got num_classes={self.num_classes!r}, mode={self.mode!r}"
            )
        return self._computed_results(per_class=True)[0]

    def _drawn_with(self, result: Any, interval: str) -> Any:
        """``result``, recorded with the interval drawn for it: under DDP the synchronised
        state picks the interval, which this rank's own state may not show (a rank without
        group ids), and the figures that label the result ask (:meth:`_drawn_interval`)."""
        self.__dict__["_drawn"] = (result, interval)
        return result

    def _computed_results(
        self, per_class: bool | None = None
    ) -> tuple[list[CalibrationResult], str]:
        """One result per pair set (one, or one per class: ``per_class``, this metric's own
        choice when None), on the synchronised state, and the interval drawn."""
        per_class = self._per_class if per_class is None else per_class
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn, should_sync=self.sync_on_compute, should_unsync=True
        ):
            seed = self._seed_of_draws()
            pairs = self._class_pairs(per_class) if self._exact_pairs() else None
            interval = self._interval(None if pairs is None else pairs[0][2])
            if interval == "pairs" and self._by_item(pairs, per_class):
                interval = "items"
            if interval in ("groups", "items"):
                inputs = pairs
            else:
                inputs = self._bins(per_class) if pairs is None else self._bins_of(pairs)
            first = inputs[0].freq if isinstance(inputs[0], Bins) else inputs[0][0]
            generator = self._generator(seed, first.device)
            synced = self._is_synced
        with finishing_synced_result(self, synced):
            results = self._results(inputs, interval, generator)
            self._warn_few_bins([r.bins for r in results])
        return results, interval

    def compute_smooth(self, bandwidth: float | None = None) -> Tensor:
        """The smooth calibration error (Błasiok & Nakkiran, 2023) of the pairs seen.

        The binning-free companion of :meth:`compute`, combined over classes as it is
        (one value, one per class with ``average="none"``, or their mean / weighted
        mean). The exact mode gives
        :func:`~calib_metrics.functional.smooth_calibration_error` of its pairs; the
        streaming mode smooths its histogram's non-empty cells at their mean q, which
        moves the result by at most
        :func:`~calib_metrics.functional.smooth.histogram_tolerance` (cells are ~1e-4
        wide relative to q at the default resolution). Synchronised under DDP like
        :meth:`compute_result`; the automatic bandwidth costs about 11 host syncs.

        Args:
            bandwidth: kernel width σ in [1e-4, 1]; None picks their fixed point.

        Example:
            >>> import torch
            >>> metric = CalibrationError()
            >>> g = torch.Generator().manual_seed(0)
            >>> q = torch.rand(4000, generator=g, dtype=torch.float64)
            >>> metric.update(q, torch.bernoulli((q + 0.1).clamp(0, 1), generator=g))
            >>> metric.compute_smooth()
            tensor(0.1000, dtype=torch.float64)
        """
        bandwidth = _check_bandwidth(bandwidth)
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn, should_sync=self.sync_on_compute, should_unsync=True
        ):
            if not self._exact_pairs():
                errors = [
                    smooth_calibration_from_histogram(*cells, bandwidth=bandwidth)
                    for cells in self._histograms()
                ]
            else:
                errors = [
                    smooth_calibration_error(p, t, bandwidth=bandwidth)
                    for p, t, _ in self._class_pairs()
                ]
            bins = self._bins(self._per_class) if self.average == "weighted" else []
        return self._average(errors, bins)

    def compute_spiegelhalter(self) -> SpiegelhalterResult | list[SpiegelhalterResult]:
        """Spiegelhalter's z test of "calibrated" on the pairs seen: one, or one per class.

        The binning-free test beside :meth:`compute` (a small p-value is evidence of
        miscalibration): :func:`~calib_metrics.functional.spiegelhalter_test` of the
        pooled pairs (``average="micro"``, top-label) or of each class's pairs (a list,
        for per-class averages and classwise). The exact mode tests its pairs, with the
        cluster-robust variance over the ``groups=`` it kept, or over the items of pooled
        one-vs-rest pairs (as the functional does); the streaming mode, past its buffer,
        tests its histogram's cells at their mean q, with the independent variance
        (:func:`~calib_metrics.functional.spiegelhalter.spiegelhalter_from_histogram`),
        and pooled one-vs-rest pairs by the sums it keeps of each folded item
        (:func:`~calib_metrics.functional.spiegelhalter.spiegelhalter_from_item_sums`:
        the exact mode's item-grouped test).
        Synchronised under DDP like :meth:`compute_result`.

        Example:
            >>> import torch
            >>> metric = CalibrationError()
            >>> g = torch.Generator().manual_seed(0)
            >>> q = torch.rand(4000, generator=g, dtype=torch.float64)
            >>> metric.update(q, torch.bernoulli(0.5 + 0.8 * (q - 0.5), generator=g))
            >>> bool(metric.compute_spiegelhalter().p_value < 1e-6)  # overconfident
            True
        """
        with (
            self.sync_context(
                dist_sync_fn=self.dist_sync_fn, should_sync=self.sync_on_compute, should_unsync=True
            ),
            warnings_said_by(self, "spiegelhalter_test"),
        ):
            if not self._exact_pairs():
                states = self._sketch_to_read()  # no pairs, or unchecked values, refused
                sums = self._item_sums() if self._pooled_one_vs_rest() else None
                if sums is not None:
                    return spiegelhalter_from_item_sums(sums)
                if self._pooled_one_vs_rest():
                    warnings.warn(_SKETCH_VARIANCE, UserWarning, stacklevel=2)
                results = [
                    spiegelhalter_from_histogram(*cells) for cells in self._histograms(states)
                ]
            else:
                results = [
                    spiegelhalter_test(p, t, groups=_items_if_pooled(p, g))
                    for p, t, g in self._class_pairs()
                ]
        return results if self._per_class else results[0]

    def _item_sums(self) -> Tensor | None:
        """The item sums of every row seen (:func:`item_score_sums`): the folded rows'
        and the kept ones'; None where the state holds none for some of its folded rows
        (one host read): a state saved, or merged, by a version before 2026-12-01."""
        held = getattr(self, _ITEM_SCORES, None)
        if held is None:
            return None
        folded = self.cell_count[0].sum()  # class 0's pairs: one per folded item
        if bool(held[0] != folded):
            return None
        return held + _summed_items(self._buffer_parts())

    def _pooled_one_vs_rest(self) -> bool:
        """Whether the pairs are every class's one-vs-rest pairs pooled (the C pairs of an
        item depend on each other)."""
        return self.num_classes is not None and self.mode == "one_vs_rest" and not self._per_class

    def _histograms(
        self, states: sketch.Sketch | None = None
    ) -> list[tuple[Tensor, Tensor, Tensor]]:
        """The sketch's non-empty cells (mean q, count, Σy): pooled (micro) or per class,
        of ``states`` (default: :meth:`_sketch_to_read`'s)."""
        states = self._sketch_to_read() if states is None else states
        if not self._per_class:
            return [sketch.histogram(states.pooled())]
        return [sketch.histogram(states.of_class(c)) for c in range(states.count.shape[0])]

    def _results(
        self, inputs: list[Any], interval: str, generator: torch.Generator | None
    ) -> list[CalibrationResult]:
        """Each input's result (pooled, or each class's: bins, or pairs with their groups),
        said as the metric's warnings; per class, a counted warning (a zero-width
        interval) names the first class that has it, as the functions' classwise call
        does (:func:`~calib_metrics.functional.errors.said_once_for_all`)."""
        with warnings_said_by(self, "calibration_error_ci"):
            drawn = (self._drawn_result(item, interval, generator) for item in inputs)
            if len(inputs) == 1:
                return list(drawn)
            with pairs_counted_per("class"):  # a class's pairs: one of each item
                return said_once_for_all(drawn)

    def _by_item(self, pairs: list | None, per_class: bool) -> bool:
        """Whether the kept ``pairs`` are two classes' pooled one-vs-rest pairs, an item's
        pair and its mirror, which the pair bootstrap draws together
        (:func:`~calib_metrics.functional.multiclass.resamples_items`). Where it draws
        them apart (streamed past the buffer, whose histogram keeps no items; three
        classes), a warning says the interval is too narrow."""
        if self.num_classes is None or self.mode != "one_vs_rest" or per_class:
            return False
        if self.num_classes == 2 and pairs is not None:
            return True
        message = apart_message(self.num_classes) if self.num_classes > 2 else _MIRRORS_STREAMED
        warn_once_at_user_line(self, message)
        return False

    def _drawn_result(
        self, item: Any, interval: str, generator: torch.Generator | None
    ) -> CalibrationResult:
        """One input's result: its bins' interval, or its pairs' over their groups (or,
        one-vs-rest pairs of [N, C] input, over their items)."""
        options = {"confidence": self.confidence, "method": self.method, "norm": self.norm}
        options["debias"] = self._debias
        if isinstance(item, Bins):
            return bins_interval(item, interval, self.n_samples, generator, **options)
        probs, target, groups = item
        if interval == "items":  # [N, 2] pairs, an item a row: in item order when flattened
            binned = {"binning": self.binning, "bin_size": self.bin_size, "n_bins": self.n_bins}
            flat, n_classes = (probs.reshape(-1), target.reshape(-1)), probs.shape[-1]
            return item_pairs_interval(
                *flat, n_classes, n_samples=self.n_samples, generator=generator, **binned, **options
            )
        return calibration_error_ci(
            probs,
            target,
            groups=groups,
            interval="groups",
            n_samples=self.n_samples,
            generator=generator,
            binning=self.binning,
            bin_size=self.bin_size,
            n_bins=self.n_bins,
            **options,
        )

    def plot(self, val: Any = None, ax: Any = None, *, smooth: bool = False) -> tuple[Any, Any]:
        """Reliability diagram (micro), per-class error bars (``average=None``; ``"macro"``
        and ``"weighted"`` add their value, in the title and as a dashed line) or, for
        ``mode="classwise"``, one reliability diagram per class (at most 12: those with
        the most positives), their titles and legends naming this metric's interval and
        confidence (those a given result carries, where it does: an earlier
        compute_result's, since reset or regrouped). A result that carries none (made by
        hand) has no resampling named unless it is what compute_result() returned last
        or ``interval=`` fixes it (the state since need not be the one behind it); a
        result of another norm, level, debias or resampling than this metric draws is a
        ValueError (its title would name this metric's norm); the binning is not checked.

        Returns ``(fig, ax)`` (``(fig, axes)`` for classwise panels, which draw their own
        figure); ``val`` may be a result from :meth:`compute_result` (classwise: the list
        from :meth:`compute_class_results`). Unlike torchmetrics' ``plot``, it takes no
        value of :meth:`compute` or ``forward``: that is the error alone, without the
        bins that a diagram draws (the errors of several steps:
        :func:`~calib_metrics.plot.error_curve`). The one exception is the value that
        ``compute()`` last returned, which ``MetricCollection.plot()`` passes on: it
        draws this metric's own state, as ``plot()`` does.

        ``smooth=True`` adds the smooth (binning-free) reliability curve with its
        pointwise bootstrap band (:func:`~calib_metrics.functional.smooth_reliability_curve`
        of the pairs seen, resampled as the interval is: pairs, or groups) to the diagram
        of the metric's own state (``val=None``: a result given would not be the pairs'),
        or, classwise, to each drawn class's panel (of the class's pairs); not to the
        per-class error bars of ``average=None``, ``"macro"`` or ``"weighted"``.
        Synchronised under DDP, as a compute is. A streaming metric past its buffer draws
        the curve of its sketch's cells
        (:func:`~calib_metrics.functional.smooth_curve_from_histogram`: its pairs at their
        cell's mean q, its band resampling pairs), as :meth:`compute_smooth` smooths them.

        Example:
            >>> import torch
            >>> g = torch.Generator().manual_seed(0)
            >>> q = torch.rand(2000, generator=g)
            >>> metric = CalibrationError(seed=0)
            >>> metric.update(q, torch.bernoulli(q, generator=g))
            >>> fig, ax = metric.plot()
            >>> print(ax.get_title())
            CalibErr 0.0000 [0.0000, 0.0411]
            95% interval: debiased pair bootstrap · 44 bins · N=2,000
            >>> classes = CalibrationError(num_classes=3, mode="classwise", seed=0)
            >>> classes.update(torch.softmax(torch.randn(600, 3, generator=g), -1),
            ...                torch.randint(0, 3, (600,), generator=g))
            >>> fig, axes = classes.plot()
            >>> len(axes)
            3
        """
        from calib_metrics import plot

        if val is not None and val is self._computed:
            # MetricCollection.plot() hands each member its compute() value: the metric's
            # own state, which plot() draws.
            val = None
        self._check_plot_value(val)
        check_flag("smooth", smooth)
        if smooth and val is not None:
            raise ValueError(
                "smooth=True draws the smooth curve of the pairs this metric holds, beside "
                "its own result: leave val=None (a result given may be of other pairs)"
            )
        if smooth and self._per_class and self.mode != "classwise":
            raise ValueError(
                "smooth=True draws a smooth curve on a reliability diagram; this metric's "
                "plot shows its classes' errors (average=None, 'macro' or 'weighted'): draw "
                "a class's curve with calib_metrics.functional.smooth_reliability_curve, or "
                "its diagram and curve with mode='classwise'"
            )
        if self.mode == "classwise":
            return self._plot_classes(val, ax, smooth)
        curve = self._smooth_curves()[0] if smooth else None
        result = self.compute_result() if val is None else val
        kind = {"norm": self.norm} | self._drawn_settings(result)
        if isinstance(result, list):
            return self._plot_per_class(result, ax, kind)
        return plot.reliability_diagram(result, ax=ax, smooth=curve, **kind)

    def _drawn_settings(self, result: Any) -> dict[str, Any]:
        """The interval settings that label ``result`` (one result, or a list of them):
        those its results carry (which must be ones this metric draws), else this
        metric's. Results of an earlier compute_result, since reset or regrouped, carry
        their own: the state's had titled them, or (a list) been refused as contradicting
        them."""
        from calib_metrics.plot._text import _carried_kind

        results = result if isinstance(result, list) else [result]
        self._check_own_norm(results)
        carried = _carried_kind(results)
        if carried is not None:  # its form (method) is read from the results themselves
            self._check_own_kind(carried)
            return {"confidence": carried.confidence, "interval": carried.interval,
                    "debias": carried.debias}  # fmt: skip
        interval = self._drawn_interval(result)
        return {"confidence": self.confidence, "interval": interval, "debias": self._debias}

    def _check_own_norm(self, results: list[Any]) -> None:
        """The norm ``results`` carry, where they do, is this metric's, which the title
        names: an l1 result had been titled as this l2 metric's "CalibErr", or refused
        for its debias when its norm was the difference."""
        for result in results:
            norm = drawn_norm(result)
            if norm is not None and norm != self.norm:
                raise ValueError(
                    f"val's error was computed with norm={norm!r}, this metric's norm is "
                    f"{self.norm!r}: plot it with the metric that computed it, or draw it "
                    "with calib_metrics.plot.reliability_diagram"
                )

    def _check_own_kind(self, kind: IntervalKind) -> None:
        """``kind`` is one this metric draws: a result of another estimator's settings
        (another level, debias or resampling) is refused, as its title would name this
        metric's norm beside them (an l1 result had been titled as this l2 metric's)."""
        check_result_settings(
            kind, self.confidence, self._debias, intervals="interval was",
            draw_with="it with calib_metrics.plot.reliability_diagram",
        )  # fmt: skip
        drawn = ("pairs", "groups") if self.interval is None else (self.interval,)
        if "pairs" in drawn and self.num_classes == 2 and self.mode == "one_vs_rest":
            drawn += ("items",)  # two classes' pairs drawn by item (_by_item)
        if kind.interval not in drawn:
            raise ValueError(
                f"val's interval resampled {kind.interval!r}, which this metric "
                f"(interval={self.interval!r}) never draws: plot it with the metric that "
                "computed it, or draw it with calib_metrics.plot.reliability_diagram"
            )

    def _smooth_curves(self, classwise: bool = False) -> dict[int, SmoothCurve]:
        """The smooth reliability curve of the pairs seen (synchronised under DDP; key 0),
        or (``classwise``) one of each class's pairs for the classes that
        :func:`~calib_metrics.plot_panels.classwise_panels` draws (those with the most
        positives), from one generator, class after class; each band resampled as the
        interval is. A streaming metric past its buffer smooths its sketch's cells
        (:func:`~calib_metrics.functional.smooth_curve_from_histogram`), as
        :meth:`compute_smooth` does."""
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn, should_sync=self.sync_on_compute, should_unsync=True
        ):
            seed = self._seed_of_draws()
            exact = self._exact_pairs()
            # (pairs, targets, groups) of each class, or (positions, counts, Σy) of its cells
            sets = self._class_pairs(per_class=classwise) if exact else self._histograms()
            drawn = range(len(sets))
            if classwise:
                from calib_metrics.plot_panels import MAX_CLASS_PANELS

                labels = [s[1] for s in sets] if exact else [s[2] for s in sets]  # y, or Σy
                positives = [round(float(y.sum())) for y in labels]
                drawn = most_frequent(positives, MAX_CLASS_PANELS)
            device = sets[0][0].device if sets else self.device
            generator = self._generator(seed, device)
            options = {"confidence": self.confidence, "generator": generator}
            function = "smooth_reliability_curve" if exact else "smooth_curve_from_histogram"
            with warnings_said_by(self, function):
                if not exact:
                    return {c: smooth_curve_from_histogram(*sets[c], **options) for c in drawn}
                curves = {}
                for c in drawn:
                    probs, target, groups = sets[c]
                    resampled = groups if self._interval(groups) == "groups" else None
                    curves[c] = smooth_reliability_curve(probs, target, groups=resampled, **options)
                return curves

    def _plot_per_class(self, results: list[CalibrationResult], ax: Any, kind: dict) -> Any:
        """Per-class error bars; under ``average="macro"`` or ``"weighted"`` with the value
        compute() returns, in the title and as a dashed line (the figure had shown the
        classes alone, as ``average=None``, and never the number logged)."""
        from calib_metrics import plot

        per_class = {str(c): r for c, r in enumerate(results)}
        if self.average not in ("macro", "weighted"):
            return plot.per_label_errors(per_class, ax=ax, names=("class",), **kind)
        value = float(self._average([r.error for r in results], [r.bins for r in results]))
        title = f"{self.average} average of {len(results)} classes: {value:.4f}"
        fig, ax = plot.per_label_errors(per_class, ax=ax, names=("class",), title=title, **kind)
        ax.axvline(value, color="0.4", linestyle="--", linewidth=1)
        return fig, ax

    def _check_plot_value(self, val: Any) -> None:
        """Refuse a ``val`` that is not a result, naming what plot() draws: torchmetrics'
        convention passes the value of compute() or forward() (or a list of them, one per
        step), which here is the error alone."""
        listed = isinstance(val, list) or type(val) is tuple  # results are named tuples
        parts = list(val) if listed else [val]
        if val is None or (parts and all(isinstance(p, CalibrationResult) for p in parts)):
            return
        kinds = " and ".join(sorted({type(p).__name__ for p in parts})) or "nothing"
        got = f"a {type(val).__name__} of {kinds}" if listed else kinds
        results = "compute_class_results()" if self.mode == "classwise" else "compute_result()"
        raise ValueError(
            f"CalibrationError.plot draws a reliability diagram, which needs the bins: val "
            f"must be what {results} returns, got {got}. compute() and forward() return the "
            "error alone: plot() draws the metric's own state, and "
            "calib_metrics.plot.error_curve(steps, errors) draws the errors of several steps"
        )

    def _plot_classes(self, val: Any, ax: Any, smooth: bool) -> tuple[Any, Any]:
        """A classwise metric's panels: its classes' bins, which one diagram would mix,
        with the drawn classes' smooth curves (``smooth``)."""
        from calib_metrics.plot_panels import classwise_panels

        if ax is not None:
            raise ValueError("a classwise metric draws one panel per class: leave ax=None")
        if val is not None and not isinstance(val, list):
            raise ValueError(
                "mode='classwise' draws its classes' own bins, one panel each: pass the list "
                "from compute_class_results() (compute_result()'s average pools the classes' "
                "bins, which one diagram would mix)"
            )
        from calib_metrics.plot import describe

        curves = {c: [k] for c, k in self._smooth_curves(classwise=True).items()} if smooth else {}
        results = self.compute_class_results() if val is None else val
        mean = average_results(results)
        title = f"classwise, the mean of {len(results)} classes: {describe(mean, self.norm)}"
        return classwise_panels(
            results, title=title, norm=self.norm, smooth=curves, **self._drawn_settings(results)
        )


def _mixes_grouped(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Whether two exact states, both holding pairs, differ in holding group ids."""

    def held(state: dict[str, Any], name: str) -> int:
        return sum(t.numel() for t in _as_list(state[name]))

    if not held(mine, "target") or not held(theirs, "target"):
        return False
    return bool(held(mine, "groups")) != bool(held(theirs, "groups"))


def _batch_pairs(args: tuple, kwargs: dict) -> tuple[Tensor, Tensor]:
    """``forward``'s probs and target, however they were passed."""
    probs = args[0] if args else kwargs["probs"]
    target = args[1] if len(args) > 1 else kwargs["target"]
    return probs, target


# Pairs a streaming metric folds into its sketch at a time (about 50 MiB of temporaries).
_FOLD_PAIRS = 2**20


# Said once a streaming metric has folded pooled one-vs-rest pairs into its sketch: until
# then its test had been the exact one, and its p-value moved (0.10 to 0.71) silently.
_SKETCH_VARIANCE = (
    "compute_spiegelhalter tests the streaming sketch's cells: this state keeps no sums of "
    "its folded items (saved or merged by a version before 2026-12-01), so it takes the "
    "one-vs-rest pairs as independent, which they are not (an item's labels sum to 1): its "
    "size is off either way (0.012 to 0.024 at alpha = 0.05 for 10 classes, "
    "docs/coverage.md; too liberal for two classes); reset() the metric to keep them"
)
#: The state of the folded rows' item sums (functional.spiegelhalter.item_score_sums).
_ITEM_SCORES = "item_scores"


def _items_if_pooled(probs: Tensor, groups: Tensor | None) -> Tensor | None:
    """Pooled one-vs-rest pairs ``[N, C]`` without groups: each item is its own group."""
    if groups is not None or probs.ndim < 2:
        return groups
    items = torch.arange(probs.shape[0], device=probs.device)
    return items.unsqueeze(1).expand(-1, probs.shape[1])
