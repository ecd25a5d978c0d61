"""``CalibrationComparison``: two models' calibration compared on the same items, as a Metric."""

from __future__ import annotations

import contextlib
import functools
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from calib_metrics.functional.calibration import (
    _check_interval_options,
    _check_options,
)
from calib_metrics.functional.comparison import (
    ComparisonResult,
    compare_with_classes,
    comparison_units,
    resampled_ids,
)
from calib_metrics.functional.comparison_by_label import (
    SMALL_LABEL_UNITS,
    LabelComparisonResult,
    compare_calibration_by_label,
)
from calib_metrics.functional.errors import NoPairsError, check_flag, check_tensors
from calib_metrics.functional.intervals import (
    IntervalKind,
    check_confidence,
    drawn_norm,
    drawn_samples,
    interval_kind,
)
from calib_metrics.functional.multiclass import MODES, ROW_SUM_WARNING, pair_sets
from calib_metrics.functional.smooth import SmoothCurve, smooth_reliability_curve
from calib_metrics.metric_checks import (
    _check_group_ids,
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
)
from calib_metrics.metric_state import (
    _StatesKeepTheirDtype,
    finishing_synced_result,
    warn_at_user_line,
    warnings_said_by,
)
from calib_metrics.wording import level_text

_STATES = ("probs_a", "probs_b", "target", "groups", "labels")


@contextlib.contextmanager
def _items_said(items: bool) -> Iterator[None]:
    """The smooth curve's warnings with "groups" said "items" where the comparison's units
    are an item's one-vs-rest pairs, not groups the user gave; each said once."""
    if not items:
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for text in dict.fromkeys(re.sub(r" group(s?)\b", r" item\1", str(w.message)) for w in caught):
        warnings.warn(text, UserWarning, stacklevel=2)


@contextlib.contextmanager
def _rows_said_at_update() -> Iterator[None]:
    """The functions' row-sum warning, silenced: the metric said it once, at update."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", f".*{re.escape(ROW_SUM_WARNING)}", UserWarning)
        yield


class CalibrationComparison(_StatesKeepTheirDtype):
    """Difference in calibration error of two models scored on the same items.

    The Metric form of :func:`~calib_metrics.functional.compare_calibration`: ``update``
    takes both models' probabilities for one batch of items with the items' labels (and
    optionally their group ids: sentences, documents); ``compute`` returns the
    :class:`~calib_metrics.functional.ComparisonResult` of every item seen —
    ``difference = error(a) − error(b)``, its paired bootstrap interval and the p-value
    of "no difference", and each model's own result — exactly what the functional gives
    on the concatenated batches (the comparison needs every pair, so there is no
    streaming mode). Under DDP the pairs of all ranks are gathered, and the result equals
    one process on the union of the data (in rank order).

    Binary input: ``probs_a``, ``probs_b`` and ``target`` of one shape. Multiclass input
    (``num_classes=C``): ``probs_* [..., C]`` with integer ``target [...]``, turned into
    pairs by ``mode`` (``"one_vs_rest"``, the paper's, ``"top_label"`` or ``"classwise"``; see
    :func:`~calib_metrics.functional.compare_calibration`). Items whose target is
    ``ignore_index`` are dropped. A rejected ``update`` or ``forward`` raises and leaves
    the state as it was; ``forward`` returns the batch's own comparison (None for a batch
    of padding only). :meth:`compute_by_label` compares label by label — the ``labels``
    given to ``update`` (a POS tag pair, a coreference mention type per item), or else the
    classes of one-vs-rest input — with Holm's or Benjamini–Hochberg's correction and the
    counts of the paper's Figure 4.

    Args:
        num_classes: None for binary input, else the number of classes C.
        mode: ``"one_vs_rest"``, ``"top_label"`` or ``"classwise"`` (multiclass only).
        ignore_index: target value marking items to drop (padding), as
            :class:`~calib_metrics.CalibrationError` takes it (not 0 or 1 for binary pairs).
        n_samples: paired bootstrap draws S, from 2 to
            :data:`~calib_metrics.functional.intervals.MAX_DRAWS` (10⁷); keep S in the
            hundreds or more, as for :func:`~calib_metrics.functional.compare_calibration`
            (its p-value moves in steps of 2/S).
        confidence: coverage of the interval of the difference.
        bin_size, binning, n_bins, norm, debias: the estimator, as in
            :class:`~calib_metrics.CalibrationError`.
        seed: seed of the draws, for reproducible results (None: the global RNG; under
            DDP one seed from the first rank's global RNG at each compute, so the ranks
            still agree).
        validate_args: check every batch (two host synchronisations per set of
            probabilities, one more for multiclass rows' sums); False skips it.

    Example:
        >>> import torch
        >>> metric = CalibrationComparison(n_samples=500)
        >>> g = torch.Generator().manual_seed(0)
        >>> for _ in range(4):
        ...     q = torch.rand(5000, generator=g, dtype=torch.float64)
        ...     y = torch.bernoulli(q, generator=g)
        ...     overconfident = torch.where(q > 0.5, q.sqrt(), q**2)
        ...     metric.update(overconfident, q, y)
        >>> result = metric.compute()
        >>> bool(result.difference > 0), bool(result.lower > 0), bool(result.p_value < 0.01)
        (True, True, True)
        >>> round(result.a.error.item(), 3), round(result.b.error.item(), 3)
        (0.157, 0.0)
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False
    _one_hot_read_by = "comparison"
    _WIDE_STATES = ("probs_a", "probs_b")

    def __init__(
        self,
        num_classes: int | None = None,
        *,
        mode: Literal["one_vs_rest", "top_label", "classwise"] = "one_vs_rest",
        ignore_index: int | None = None,
        n_samples: int = 2000,
        confidence: float = 0.95,
        bin_size: int | Literal["auto"] = "auto",
        binning: Literal["adaptive", "uniform"] = "adaptive",
        n_bins: int = 15,
        norm: Literal["l1", "l2", "max"] = "l2",
        debias: bool = True,
        seed: int | None = 0,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        options = {k: v for k, v in locals().items() if k not in ("self", "kwargs", "__class__")}
        super().__init__(**kwargs)
        _check_arguments(options)
        self.num_classes, self.mode, self.ignore_index = num_classes, mode, ignore_index
        self.seed, self.validate_args = seed, validate_args
        self.estimator = {
            "n_samples": n_samples, "confidence": confidence, "bin_size": bin_size,
            "binning": binning, "n_bins": n_bins, "norm": norm, "debias": debias,
        }  # fmt: skip
        self._options, self._base_kwargs = options, kwargs
        for name in _STATES:
            self.add_state(name, default=[], dist_reduce_fx="cat")
        self._name_states_by_rule()

    def __setattr__(self, name: str, value: Any) -> None:
        """Refuse a state set to anything but tensors (a list of them, or one). torchmetrics'
        ``ClasswiseWrapper`` passes its ``labels=`` on to the wrapped metric's state of
        that name: the comparison's own labels were replaced by the class names (or None),
        and its next update failed with "this batch came without labels=" or a raw
        AttributeError."""
        if name in self.__dict__.get("_defaults", ()) and not _holds_tensors(value):
            raise ValueError(
                f"CalibrationComparison's state {name!r} holds tensors, got "
                f"{_described(value)}: a wrapper set it? ClasswiseWrapper cannot wrap a "
                "comparison (compute() gives one ComparisonResult, not a value per class): "
                "compare class by class with compute_by_label()"
            )
        super().__setattr__(name, value)

    def _no_arithmetic(self, *_: Any) -> Any:
        """Refuse torchmetrics' metric arithmetic (``a + b``, ``2 * a``, ``-a`` ...): its
        composite metric would combine two ComparisonResults at ``compute()``, where it had
        failed inside ``torch.add`` with a TypeError naming neither metric."""
        raise TypeError(
            "CalibrationComparison does not support arithmetic: compute() gives a "
            "ComparisonResult, not a tensor; combine its fields (difference, a.error, "
            "b.error) instead"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arithmetic
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _no_arithmetic
    __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _no_arithmetic
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _no_arithmetic
    __lt__ = __le__ = __gt__ = __ge__ = _no_arithmetic
    __abs__ = __neg__ = __pos__ = __invert__ = __inv__ = _no_arithmetic

    # ------------------------------------------------------------------ update
    def update(
        self,
        probs_a: Tensor,
        probs_b: Tensor,
        target: Tensor,
        groups: Tensor | None = None,
        labels: Tensor | None = None,
    ) -> None:
        """Accumulate a batch; a batch that fails validation changes nothing, and so does an
        empty one. The metric keeps its own copy of the batch, so the caller may refill its
        buffers.

        ``groups``: optional group id of every item (``target``'s shape), unique across
        the whole evaluation set (and the DDP ranks); give it with every batch or none.
        ``labels``: optional integer label of every item (``target``'s shape: the query
        type of a binary pair, the tag of a multiclass item), kept for
        :meth:`compute_by_label`; give it with every batch or none. Unsigned ids (uint16)
        are kept as int64.
        """
        try:
            self._update(probs_a, probs_b, target, groups, labels)
        except Exception:
            self._update_count -= 1  # torchmetrics counted the call before it ran
            raise

    def _update(self, probs_a, probs_b, target, groups, labels) -> None:
        self._refuse_synced("update")
        check_tensors(probs_a=probs_a, probs_b=probs_b, target=target)  # dense, before shapes
        if probs_a.shape != probs_b.shape:
            raise ValueError(
                "the two models must score the same items: probs_a has shape "
                f"{tuple(probs_a.shape)}, probs_b {tuple(probs_b.shape)}"
            )
        for name, probs in (("probs_a", probs_a), ("probs_b", probs_b)):
            if not probs.is_floating_point():
                raise ValueError(f"{name} must be a floating-point tensor, got {probs.dtype}")
        groups, labels = (
            None if ids is None else _check_group_ids(ids, target, name)
            for name, ids in (("groups", groups), ("labels", labels))
        )
        options = (self.num_classes, self.ignore_index)
        # Both models are checked against the batch's own target (any shape, [...] or
        # [..., C] probabilities); the flat target is stored once.
        target = target.detach()
        checked = {"validate": self.validate_args}
        a, flat_target, _ = _prepare_batch(
            probs_a.detach(), target, *options, **checked, name="probs_a"
        )
        b, _, _ = _prepare_batch(probs_b.detach(), target, *options, **checked, name="probs_b")
        if self.validate_args and self.num_classes is not None:
            kept = {
                name: _kept_rows(probs, flat_target, self.ignore_index)
                for name, probs in (("probs_a", a), ("probs_b", b))
            }
            self._warn_row_sums(kept)
        if flat_target.numel() == 0:
            return  # an empty batch changes nothing: not the pairs, nor which ids come along
        if self.validate_args and self.num_classes is None and groups is None:
            self._warn_one_hot(probs_a.detach(), target)  # groups= names the units itself
        for name, ids in (("groups", groups), ("labels", labels)):
            self._check_id_history(name, given=ids is not None)
        self.probs_a.append(_own_copy(a))
        self.probs_b.append(_own_copy(b))
        self.target.append(_own_copy(flat_target))
        for name, ids in (("groups", groups), ("labels", labels)):
            if ids is not None:
                getattr(self, name).append(_own_copy(ids))

    def _check_id_history(self, name: str, given: bool) -> None:
        """``groups`` or ``labels`` come with every batch (of items) or with none."""
        if given != bool(getattr(self, name)) and self.target:
            came, earlier = ("with", "did not") if given else ("without", "did")
            raise ValueError(
                f"this batch came {came} {name}= and earlier ones {earlier}: give every batch "
                f"its {name}, or none"
            )

    def forward(self, *args: Any, **kwargs: Any) -> ComparisonResult | None:
        """``update`` with the batch, returning the batch's own comparison.

        The batch is measured by a separate metric of the same options and then appended,
        so a rejected batch leaves the state as it was; a batch of padding only gives None.
        """
        self._refuse_synced("forward")
        batch = self.__dict__.get("_batch")
        if batch is None:
            kwargs_ = {**self._base_kwargs, "sync_on_compute": self.dist_sync_on_step}
            with built_again():
                batch = CalibrationComparison(**self._options, **kwargs_)
            self.__dict__["_batch"] = batch  # out of the module tree and its state_dict
        batch.to(self.device)
        batch.reset()
        # The batch warns of rows off 1 for this metric: once per input, for both.
        batch.__dict__["_row_sums_warned_for"] = self.__dict__.setdefault(
            "_row_sums_warned_for", set()
        )
        batch._one_hot_checked = True  # this metric warns, once, below
        batch.update(*args, **kwargs)  # raises on a rejected batch; self is untouched
        if batch.target:  # the batch has no history: whether ids may come is this one's to say
            for name in ("groups", "labels"):
                self._check_id_history(name, given=bool(getattr(batch, name)))
            if self.validate_args and self.num_classes is None and not batch.groups:
                self._warn_one_hot(*_batch_models(args, kwargs))
        try:
            value = batch.compute()
        except NoPairsError:
            value = None
        self.merge_state(batch)  # which counts the batch's update
        self._forward_cache = value
        return value

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """Append another comparison's pairs (or a state dict's) after this one's.

        The pair bootstrap gives each pair its own weight in order, so the order is kept:
        this metric's pairs first, then the incoming ones. The merged pairs are this
        metric's own copies.

        A comparison is checked by its options (``num_classes``, ``ignore_index``; it
        keeps pairs as given whatever its ``mode``); a dict of states
        (``other.metric_state``) carries none. Either is checked by its keys, shapes and
        values (host reads per batch), whatever either metric's ``validate_args``: both
        models' probabilities in [0, 1] (a ``validate_args=False`` comparison's logits are
        refused), targets that are labels here or this metric's ``ignore_index``, and ids
        one per item or none. Padding marked by a value that is a label here as well
        (``ignore_index=0`` into a metric without it) cannot be told from labels and would
        be counted as labels: merge the comparison itself, or its ``state_dict()`` (after
        ``persistent(True)``), whose record of ``ignore_index`` and ``num_classes`` is
        checked as ``load_state_dict`` checks it.
        """
        source = incoming_state
        if isinstance(incoming_state, Metric):
            if not isinstance(incoming_state, CalibrationComparison):
                raise ValueError(
                    f"cannot merge a {type(incoming_state).__name__} into a CalibrationComparison"
                )
            settings = self._settings_problem(incoming_state.num_classes, incoming_state.mode)
            if settings:
                raise ValueError(f"cannot merge {settings}")
            if incoming_state.ignore_index != self.ignore_index:
                # Padding rows are kept, with their target, until compute() drops them.
                raise ValueError(
                    f"cannot merge ignore_index {incoming_state.ignore_index} into "
                    f"ignore_index {self.ignore_index}"
                )
            incoming_state, tags = incoming_state.metric_state, {}
        else:
            incoming_state = dict(incoming_state) if isinstance(incoming_state, dict) else None
            tags = {} if incoming_state is None else self._pop_tags(incoming_state)
        if incoming_state is None or set(incoming_state) != set(_STATES):
            raise ValueError(f"a CalibrationComparison state is a dict with keys {list(_STATES)}")
        incoming_state = self._listed(incoming_state)
        self._check_incoming(incoming_state, tags)
        own = self._listed(self.metric_state)  # one tensor each once synchronised
        for name in ("groups", "labels"):
            if (own["target"] and incoming_state["target"]) and (
                bool(own[name]) != bool(incoming_state[name])
            ):
                raise ValueError(f"cannot merge: one state has {name} and the other does not")
        for name in _STATES:
            theirs = (t.detach().clone() for t in incoming_state[name])
            setattr(self, name, [*own[name], *theirs])
        self._count_merged_updates(source)
        self._computed = None

    # ----------------------------------------------------------------- compute
    def _pairs(self) -> tuple[Tensor, Tensor, Tensor, Tensor | None, Tensor | None]:
        """Both models' probabilities, the targets, the group ids and the labels (None
        when not given); padding dropped."""
        # Lists of batches locally; one tensor each once synchronised across ranks.
        probs_a, probs_b, target, *ids = (_cat(getattr(self, name)) for name in _STATES)
        if target is None or target.numel() == 0:
            why = self._none_received() or "call update() first"
            raise NoPairsError(f"CalibrationComparison has no items: {why}")
        for i, name in enumerate(("groups", "labels")):
            if ids[i] is not None and ids[i].numel() == 0:
                ids[i] = None
            if ids[i] is not None and ids[i].numel() != target.numel():
                raise ValueError(
                    f"{ids[i].numel()} {name} for {target.numel()} items: some batches (or "
                    f"ranks) came without {name}="
                )
        if self.ignore_index is not None:
            keep = target != self.ignore_index
            probs_a, probs_b, target = probs_a[keep], probs_b[keep], target[keep]
            ids = [None if v is None else v[keep] for v in ids]
            if target.numel() == 0:
                raise NoPairsError(
                    f"CalibrationComparison has no items: all were padding ({self.ignore_index})"
                )
        return probs_a, probs_b, target, *ids

    def compute(self) -> ComparisonResult:
        """The comparison of every item seen (see :func:`compare_calibration`)."""
        seed = self._seed_of_draws()  # compute() runs synchronised; first, as it gathers
        probs_a, probs_b, target, groups, _ = self._pairs()
        generator = self._generator(seed, target.device)
        mode = self.mode if self.num_classes is not None else "one_vs_rest"
        with (
            warnings_said_by(self, "compare_calibration"),
            _rows_said_at_update(),
        ):
            result, classes_a, classes_b = compare_with_classes(
                probs_a, probs_b, target, groups=groups, generator=generator, mode=mode,
                **self.estimator,
            )  # fmt: skip
        # Under DDP the synchronised state says whether groups were resampled, which this
        # rank's own state may not show (a rank without data): plot() labels by it. A
        # classwise plot draws the classes' results of these draws: on one rank alone
        # (no collective), and of the items behind ``result`` (not those updated since).
        units = comparison_units(probs_a, target, mode, groups)
        self.__dict__["_drawn"] = (result, units, (classes_a, classes_b))
        return _Whole(result)  # unwrapped by _wrap_compute

    def _wrap_compute(self, compute: Callable) -> Callable:
        """torchmetrics' compute wrapper (synchronisation, cache), around a result it
        cannot take apart: it rebuilds every tuple it finds to squeeze one-element
        tensors and to clone, which turned one bin into 0-dim tensors and dropped the
        bins' records (the tie groups their boundaries cut, the effective sample sizes
        over ``groups=``) that error bars and the debiased error read."""
        wrapped = super()._wrap_compute(compute)

        @functools.wraps(compute)
        def whole(*args: Any, **kwargs: Any) -> Any:
            value = wrapped(*args, **kwargs)
            return value.result if isinstance(value, _Whole) else value

        return whole

    def compute_by_label(
        self,
        *,
        correction: Literal["holm", "bh"] = "holm",
        alpha: float = 0.05,
        min_units: int = SMALL_LABEL_UNITS,
    ) -> LabelComparisonResult:
        """Label by label: each label's paired difference, with corrected counts.

        The per-tag comparison of the paper's Figure 4:
        :func:`~calib_metrics.functional.compare_calibration_by_label` with the p-values
        corrected by Holm's procedure (family-wise error) or Benjamini–Hochberg's
        (``"bh"``, false discovery rate) and the counts "a better / b better / not
        distinguishable" at ``alpha``; labels of fewer than ``min_units`` resampling units
        are reported but not called. The labels are the ``labels`` given to ``update``
        (binary pairs, or the one-vs-rest pairs of each multiclass item, which follow
        their item's label); without them, the classes of one-vs-rest input. Equal to
        the functional on every item seen (in order); synchronised under DDP like
        :meth:`compute`.

        Example:
            >>> import torch
            >>> g = torch.Generator().manual_seed(0)
            >>> p = torch.softmax(2 * torch.randn(6000, 3, generator=g), -1)
            >>> c = torch.multinomial(p, 1, generator=g).squeeze(1)
            >>> metric = CalibrationComparison(num_classes=3, n_samples=300)
            >>> metric.update(torch.softmax(3 * p.log(), -1), p, c)  # a: overconfident
            >>> r = metric.compute_by_label()
            >>> r.labels.tolist(), (r.a_better, r.b_better, r.not_distinguishable)
            ([0, 1, 2], (0, 3, 0))

            Binary pairs with a label each (the tag pair of a pairwise query, say):

            >>> q = torch.rand(8000, generator=g, dtype=torch.float64)
            >>> y = torch.bernoulli(q, generator=g)
            >>> tag = torch.arange(8000) % 2
            >>> a = torch.where(tag == 0, q.sqrt(), q)  # a: miscalibrated on tag 0 only
            >>> metric = CalibrationComparison(n_samples=300)
            >>> for batch in torch.arange(8000).chunk(4):
            ...     metric.update(a[batch], q[batch], y[batch], labels=tag[batch])
            >>> metric.compute_by_label().verdict.tolist()
            [1, 0]
        """
        # Decided by the options before the ranks gather (every rank alike); whether labels
        # came, only after: a rank without data has none of its own, and refusing there
        # alone left the other ranks waiting in the gather.
        if self.num_classes is not None and self.mode == "top_label":
            raise self._by_label_refused(has_labels=bool(self.labels))
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn, should_sync=self.sync_on_compute, should_unsync=True
        ):
            seed = self._seed_of_draws()
            # No items at all first (NoPairsError, as compute() raises): empty batches
            # given labels= hold no labels, which is no reason to ask for them.
            probs_a, probs_b, target, groups, labels = self._pairs()
            if self.num_classes is None and labels is None:
                raise self._by_label_refused(has_labels=False)
            generator = self._generator(seed, target.device)
            synced = self._is_synced
        if labels is None:  # class by class: the class ids of the one-vs-rest pairs
            labels = torch.arange(self.num_classes, device=target.device).expand_as(probs_a)
        with (
            finishing_synced_result(self, synced),
            warnings_said_by(self, "compare_calibration_by_label"),
            _rows_said_at_update(),
        ):
            return compare_calibration_by_label(
                probs_a, probs_b, target, labels, groups=groups, correction=correction,
                alpha=alpha, generator=generator, min_units=min_units,
                **self.estimator,
            )  # fmt: skip

    def _by_label_refused(self, has_labels: bool) -> ValueError:
        """Why this metric cannot compare label by label: a top-label metric's labels had
        been called missing in the words that said it had them."""
        if self.mode == "top_label":
            by = "by the labels= given in update" if has_labels else "class by class"
            return ValueError(
                "compute_by_label compares binary or one-vs-rest pairs, not mode='top_label' "
                "ones (an item's highest probability): build the metric with "
                f"mode='one_vs_rest' to compare {by}"
            )
        return ValueError(
            "compute_by_label needs labels= in update (binary or one-vs-rest pairs), or "
            "num_classes with mode 'one_vs_rest' or 'classwise' to compare class by class "
            f"(this metric has num_classes={self.num_classes} and no labels)"
        )

    def plot(
        self, val: ComparisonResult | None = None, ax: Any = None, *, smooth: bool = False
    ) -> tuple[Any, Any]:
        """Both models' reliability diagrams side by side (a in ``C0``, b in ``C1``) on
        one x axis (:func:`~calib_metrics.plot.shared_x_axis`: logit for both, over one
        range, when either is mostly near 0 or 1), the figure titled with the paired
        difference a − b, its interval and p-value.

        ``val``: a result of :meth:`compute` or ``forward`` (default: computed); one
        comparison, not a list of them (their differences over steps:
        :func:`~calib_metrics.plot.error_curve`). The figure is its own
        (two panels), so ``ax`` must be None. Its titles name what ``val`` itself
        resampled (pairs, items or groups: its models carry it), not what this metric's
        state would resample now (a ``val`` made by hand, which carries none, has none
        named unless it is what :meth:`compute` returned last), and its p-value's bound
        is that of the draws ``val`` was computed with (where they are not known,
        "p < 2/S, no draw reached 0"). A ``val`` of another norm, level
        or debias than this metric's is a ValueError (its titles name this metric's), as
        is one whose two models carry different intervals; the binning is not checked.

        A classwise comparison's bins are every class's pooled, which one diagram would
        mix: it draws one panel per class instead (both models overlaid, at most
        :data:`~calib_metrics.plot_panels.MAX_CLASS_PANELS`: those with the most
        positives), each model's result of the class from the draws behind the result;
        ``val`` is then None or what :meth:`compute` returned last (it keeps those, so
        that one rank may draw them under DDP).

        ``smooth=True`` adds each model's smooth (binning-free) reliability curve with its
        pointwise bootstrap band (:func:`~calib_metrics.functional.smooth_reliability_curve`
        of the items seen, resampled as the comparison is: pairs, items or groups) to its
        diagram (classwise: to each drawn class's panel, of the class's pairs), with
        ``val=None`` (the curves are of the metric's own items, synchronised under DDP as a
        compute is).

        Returns ``(fig, axes)``: the two diagrams' axes (one per class drawn, classwise).

        Example:
            >>> import torch
            >>> metric = CalibrationComparison(n_samples=200)
            >>> q = torch.rand(2000, generator=torch.Generator().manual_seed(0))
            >>> metric.update(q.sqrt(), q, torch.bernoulli(q))
            >>> fig, axes = metric.plot()
            >>> fig.get_suptitle()[:9], axes[1].get_title().splitlines()[0]
            ('a − b = +', 'b')
        """
        if ax is not None:
            raise ValueError("CalibrationComparison.plot draws its own figure: leave ax=None")
        if val is not None and not isinstance(val, ComparisonResult):
            raise ValueError(
                "CalibrationComparison.plot draws one comparison: val must be a result of "
                f"compute() or forward(), got {type(val).__name__}"
            )
        check_flag("smooth", smooth)
        if smooth and val is not None:
            raise ValueError(
                "smooth=True draws the smooth curves of the items this metric holds, beside "
                "its own result: leave val=None (a result given may be of other items)"
            )
        if self.num_classes is not None and self.mode == "classwise":
            return self._plot_classes(val, smooth)
        from matplotlib.figure import Figure

        from calib_metrics.plot import reliability_diagram, shared_x_axis

        curves = [model[0] for model in self._smooth_curves()] if smooth else (None, None)
        result = self.compute() if val is None else val
        kind = self._drawn_kind(result)
        # One x axis for both, as compare --plot draws them: a alone had gone logit.
        shared = shared_x_axis([result.a, result.b])
        kind |= {"xscale": shared.xscale, "logit_range": shared.logit_range}
        fig = Figure(figsize=(9.4, 5.0), layout="constrained")
        axes = fig.subplots(1, 2)
        models = zip(axes, (result.a, result.b), "ab", curves, strict=True)
        for index, (axis, one, name, curve) in enumerate(models):
            reliability_diagram(
                one, axis, title=shared.title(name, index), color=f"C{index}", smooth=curve, **kind
            )
        fig.suptitle(self._difference_text(result), fontsize=9)
        return fig, axes

    def _smooth_curves(self, classes: Sequence[int] | None = None) -> list[list[SmoothCurve]]:
        """Each model's smooth reliability curve on the items seen (synchronised under
        DDP), or one of each of ``classes``' pairs (classwise; class after class from the
        model's generator), each band resampled as the comparison is: groups, or else an
        item's pairs together (one-vs-rest input), or pairs."""
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn, should_sync=self.sync_on_compute, should_unsync=True
        ):
            seed = self._seed_of_draws()
            probs_a, probs_b, target, groups, _ = self._pairs()
            mode = self.mode if self.num_classes is not None else "one_vs_rest"
            ids = resampled_ids(probs_a, target, mode, groups)
            items = groups is None and ids is not None

            def curves(probs: Tensor) -> list[SmoothCurve]:
                if classes is None:
                    sets = [(probs, target, ids)]
                else:  # each class's pairs made once, the drawn ones kept
                    per_class = pair_sets(probs, target, "classwise", ids, check_rows=False)
                    sets = [per_class[c] for c in classes]
                generator = self._generator(seed, target.device)  # each model's draws alike
                return [
                    smooth_reliability_curve(
                        q,
                        y,
                        groups=g,
                        mode=mode if classes is None else "one_vs_rest",
                        generator=generator,
                        confidence=self.estimator["confidence"],
                    )
                    for q, y, g in sets
                ]

            with warnings_said_by(self, "smooth_reliability_curve"), _items_said(items):
                return [curves(probs_a), curves(probs_b)]  # fmt: skip

    def _plot_classes(self, val: ComparisonResult | None, smooth: bool) -> tuple[Any, Any]:
        """A classwise comparison's panels: each class's two results, overlaid, with the
        drawn classes' smooth curves (``smooth``)."""
        from calib_metrics.plot_panels import classwise_panels, drawn_classes

        if val is not None and val is not self.__dict__.get("_drawn", (None,))[0]:
            raise ValueError(
                "a classwise comparison draws the classes behind its result, one panel "
                "each: val must be None or what compute() returned last (a batch's "
                "forward() result pools that batch's classes)"
            )
        result = self.compute() if val is None else val
        if len(self.__dict__["_drawn"]) < 3:
            # Kept by a version before 2026-12-01 (a pickle): no classes; torchmetrics'
            # cached value would not compute them again.
            self._computed = None
            result = self.compute()
        classes_a, classes_b = self.__dict__["_drawn"][2]
        curves = {}
        if smooth:
            classes = drawn_classes(classes_a)
            curves = dict(
                zip(classes, zip(*self._smooth_curves(classes), strict=True), strict=True)
            )
        return classwise_panels(
            classes_a, versus=classes_b, names=("a", "b"), smooth=curves,
            title=f"classwise: {self._difference_text(result)}", **self._drawn_kind(result),
        )  # fmt: skip

    def _drawn_kind(self, result: ComparisonResult) -> dict[str, Any]:
        """The settings behind ``result``'s intervals, as the diagrams label them."""
        norm = self.estimator["norm"]
        debias = self.estimator["debias"] and norm == "l2"
        own = {"norm": norm, "confidence": self.estimator["confidence"], "debias": debias}
        return own | {"interval": self._drawn_interval(result, own)}

    def _drawn_interval(self, result: ComparisonResult, own: dict[str, Any]) -> str | None:
        """What ``result`` resampled, for the figure's labels: what its models carry (the
        state's guess had named an earlier result over pairs a group bootstrap once groups
        came); of a result that carries none (a classwise average, one made by hand), the
        one drawn when it is what compute() returned last, else none named (the state
        since need not be the one behind it). What it carries must be this metric's
        ``own`` norm, level and debias, which the titles name: an l1 result had been
        titled as this l2 metric's "CalibErr"."""
        _check_own_norm(result, own["norm"])
        kind = _carried_kind(result)
        if kind is not None:
            check_result_settings(
                kind, own["confidence"], own["debias"], intervals="intervals were",
                draw_with="val.a and val.b with reliability_diagram",
            )  # fmt: skip
            return kind.interval
        return self.__dict__["_drawn"][1] if self._is_last(result) else None

    def _is_last(self, result: ComparisonResult) -> bool:
        """Whether ``result`` is what compute() returned last (kept with what it drew)."""
        drawn = self.__dict__.get("_drawn")
        return drawn is not None and drawn[0] is result

    def _draws_of(self, result: ComparisonResult) -> int | None:
        """The draws behind ``result``'s p-value: those its models carry, else this
        metric's when it is what compute() returned last, else not known (a 20-draw
        result plotted by a 100,000-draw metric had read "p < 2e-05", not "p < 0.1")."""
        carried = drawn_samples(result.a)
        if carried is not None:
            return carried
        return self.estimator["n_samples"] if self._is_last(result) else None

    def _difference_text(self, result: ComparisonResult) -> str:
        """``a − b = +0.1367 [95%: +0.1052, +0.1703], p < 0.004 (paired)``, or that there
        is no interval."""
        from calib_metrics.report import fixed, p_value_phrase

        text = f"a − b = {fixed(result.difference, sign='+')}"
        if torch.isnan(result.p_value):
            return f"{text} (no interval: fewer than 10 resampling units)"
        level = level_text(self.estimator["confidence"])
        ends = f"[{level}: {fixed(result.lower, sign='+')}, {fixed(result.upper, sign='+')}]"
        p, draws = result.p_value.item(), self._draws_of(result)
        if p == 0 and draws is None:
            # p = 0 says only that no draw reached 0: p < 2/S, of S draws not known here.
            return f"{text} {ends}, p < 2/S, no draw reached 0 (paired)"
        return f"{text} {ends}, {p_value_phrase(p, draws or 1)} (paired)"  # S bounds p = 0 only


class _Whole:
    """A result that torchmetrics' compute wrapper passes through untouched (it is not a
    tensor nor a collection), for ``_wrap_compute`` to unwrap."""

    __slots__ = ("result",)

    def __init__(self, result: ComparisonResult) -> None:
        self.result = result


def _holds_tensors(value: Any) -> bool:
    """Whether ``value`` is a state's value: a tensor, or a list of tensors."""
    if isinstance(value, list):
        return all(isinstance(item, Tensor) for item in value)
    return isinstance(value, Tensor)


def _described(value: Any) -> str:
    """``value``'s kind for a message: ``None``, ``a list of str``, ``int``."""
    if isinstance(value, list):
        kinds = sorted({type(item).__name__ for item in value if not isinstance(item, Tensor)})
        return f"a list of {', '.join(kinds)}"
    return "None" if value is None else type(value).__name__


def _carried_kind(result: ComparisonResult) -> IntervalKind | None:
    """The interval kind that ``result``'s models carry (None where neither does). Models
    of different kinds, their form (``method``) too, or of which one alone carries a kind
    (put together by hand) are refused: a comparison resamples both alike, and one title
    names one (a kind carried by a alone had named b's interval too)."""
    from calib_metrics.plot import interval_label

    kind_a, kind_b = interval_kind(result.a), interval_kind(result.b)
    if kind_a != kind_b:
        named = "; ".join(
            f"{name}: {'none' if k is None else interval_label(*k)}"
            for name, k in (("a", kind_a), ("b", kind_b))
        )
        raise ValueError(
            f"val's two models carry different intervals ({named}): a comparison resamples "
            "both models alike, and its title names one"
        )
    return kind_a


def _check_own_norm(result: ComparisonResult, norm: str) -> None:
    """The norm ``result``'s models carry, where they do, is this metric's ``norm``, which
    the titles name (an l1 result had been titled "CalibErr", this l2 metric's, or refused
    for its debias when its norm was the difference)."""
    for name, model in (("a", result.a), ("b", result.b)):
        carried = drawn_norm(model)
        if carried is not None and carried != norm:
            raise ValueError(
                f"val.{name}'s error was computed with norm={carried!r}, this metric's norm "
                f"is {norm!r}: plot it with the metric that computed it, or draw val.a and "
                "val.b with reliability_diagram"
            )


def _cat(value: list[Tensor] | Tensor) -> Tensor | None:
    """A state as one tensor (None for an empty list)."""
    if isinstance(value, list) and not value:
        return None
    return dim_zero_cat(value)


def _check_arguments(args: dict[str, Any]) -> None:
    """Every constructor argument, checked before any state exists."""
    num_classes, mode, ignore_index = args["num_classes"], args["mode"], args["ignore_index"]
    check_num_classes(num_classes)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode != "one_vs_rest" and num_classes is None:
        raise ValueError(f"mode={mode!r} needs multiclass input: set num_classes")
    check_ignore_index(ignore_index)
    warn_at_user_line(ignore_index_label_warning(ignore_index, num_classes))
    _check_options(args["norm"], args["binning"], args["bin_size"], args["n_bins"])
    _check_sizes(args["bin_size"], args["n_bins"])
    check_confidence(args["confidence"])
    _check_interval_options(args["n_samples"], args["confidence"], "percentile", "pairs")
    _check_seed(args["seed"])
    check_flag("debias", args["debias"])
    check_flag("validate_args", args["validate_args"])


def _batch_models(args: tuple, kwargs: dict) -> tuple[Tensor, Tensor]:
    """``forward``'s first model's probabilities and the target, however they were passed."""
    probs = args[0] if args else kwargs["probs_a"]
    target = args[2] if len(args) > 2 else kwargs["target"]
    return probs.detach(), target.detach()
