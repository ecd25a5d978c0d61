"""``CalibrationError``: the paper's calibration analysis as a torchmetrics ``Metric``."""

from __future__ import annotations

import functools
from typing import Any, Literal

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat
from torchmetrics.utilities.distributed import gather_all_tensors

from calib_metrics.functional import sketch
from calib_metrics.functional.auto_bin import resolve_bin_size
from calib_metrics.functional.binning import Bins, _check_pairs, check_probs
from calib_metrics.functional.calibration import (
    CalibrationResult,
    _check_groups,
    _check_interval_options,
    _check_options,
    calibration_error_ci,
    ci_from_bins,
    compute_bins,
    error_from_bins,
)

# dtypes a list state may hold, coded by position for the ranks to agree on one.
_DTYPES = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
)


def _dtype_code(parts: list[Tensor]) -> int:
    """Position in ``_DTYPES`` of the dtype the parts concatenate to; -1 for none."""
    if not parts:
        return -1
    dtype = functools.reduce(torch.promote_types, (p.dtype for p in parts))
    return _DTYPES.index(dtype)


# Per class, the sketch's (count, Σr, Σr², Σy) per cell; see functional/sketch.py.
_SKETCH_STATES = ("cell_count", "cell_sum_r", "cell_sum_r2", "cell_sum_y")


class CalibrationError(Metric):
    """RMS calibration error with adaptive bins, sampled intervals and diagrams.

    Binary input: ``probs`` and ``target`` of one shape (any shape, flattened), ``probs``
    the probability that the label is 1. Multiclass input (``num_classes=C``): ``probs``
    of shape ``[..., C]`` and integer ``target`` of shape ``[...]``; every item gives C
    binary pairs (q = probs[c], y = [target == c]), the paper's one-vs-rest expansion
    (§4.2.2). ``average="micro"`` pools all pairs; ``average=None`` gives one result per
    class. Items whose target equals ``ignore_index`` (padding) are dropped.

    ``compute()`` returns the error alone (a 0-dim tensor, or one per class), so that
    ``self.log("val/calib_err", metric)`` works in Lightning; :meth:`compute_result`
    returns the full :class:`~calib_metrics.CalibrationResult` with the interval.

    Two memory modes. The exact mode (default) keeps every pair, so its bins are exactly
    the paper's; under DDP the pairs of all ranks are gathered and the result equals one
    process on the union. ``streaming=True`` keeps a fixed histogram of ``resolution``
    logit-spaced cells per class (count, Σr, Σr², Σy in float64, 512 KiB per class at
    the default; see :mod:`calib_metrics.functional.sketch` and ``docs/streaming.md``),
    merged by addition across batches and ranks, whose memory does not grow with the
    data; its bins hold exactly the exact mode's counts, and its error and interval
    bounds were within 2e-5 of the exact mode's on 10⁶ pairs. With
    ``validate_args=False``, ``update`` never waits for the device in either mode.

    Args:
        num_classes: None for binary input, else the number of classes C.
        bin_size: target bin size β of adaptive binning (the paper uses 5000), or
            ``"auto"``: β = ⌈√N⌉ for the N pairs seen (see ``docs/coverage.md``).
        binning: ``"adaptive"`` (equal mass) or ``"uniform"`` (equal width).
        n_bins: number of bins of uniform binning.
        norm: ``"l2"`` (RMS, the paper's), ``"l1"`` or ``"max"``.
        n_samples: draws of the sampled interval (Algorithm 2).
        confidence: coverage of the interval.
        method: ``"normal"`` (mean ∓ z·std, the paper's) or ``"percentile"``.
        debias: subtract each bin's sampling noise from its squared gap (l2 only).
        interval: ``"paper"`` (Algorithm 2), ``"pairs"`` (Poisson bootstrap over
            pairs) or ``"groups"`` (Poisson bootstrap over whole groups: sentences,
            documents; every ``update`` then takes ``groups=``, one id per item, and
            the metric keeps them, so it needs ``streaming=False``). With
            ``debias=True`` the bootstrap is recentred on the debiased estimate;
            ``docs/coverage.md`` measures when each interval means what it says.
        average: ``"micro"`` (all pairs pooled) or None (one result per class).
        ignore_index: target value marking items to drop (padding).
        streaming: keep a fixed-size histogram instead of every pair.
        resolution: cells of the streaming histogram (even; 2¹⁴ by default).
        seed: seed of the interval's draws, for reproducible results (None: global RNG).
        validate_args: check every batch (one host synchronisation); False skips it.

    Example:
        >>> import torch
        >>> metric = CalibrationError(bin_size=100)
        >>> g = torch.Generator().manual_seed(0)
        >>> for _ in range(3):
        ...     probs = torch.rand(400, generator=g)
        ...     metric.update(probs, torch.bernoulli(probs, generator=g))
        >>> metric.compute()
        tensor(0.0238, dtype=torch.float64)
        >>> result = metric.compute_result()
        >>> bool(result.lower < result.upper)
        True

        Pairs that come in sentences, with the recommended interval:

        >>> metric = CalibrationError(bin_size="auto", debias=True, interval="groups")
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
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self,
        num_classes: int | None = None,
        *,
        bin_size: int | Literal["auto"] = 5000,
        binning: Literal["adaptive", "uniform"] = "adaptive",
        n_bins: int = 15,
        norm: Literal["l1", "l2", "max"] = "l2",
        n_samples: int = 10000,
        confidence: float = 0.95,
        method: Literal["normal", "percentile"] = "normal",
        debias: bool = False,
        interval: Literal["paper", "pairs", "groups"] = "paper",
        average: Literal["micro"] | None = "micro",
        ignore_index: int | None = None,
        streaming: bool = False,
        resolution: int = sketch.DEFAULT_RESOLUTION,
        seed: int | None = 0,
        validate_args: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_options(norm, binning, bin_size, n_bins)
        _check_interval_options(n_samples, confidence, method, interval)
        if interval == "groups" and streaming:
            raise ValueError(
                "interval='groups' resamples whole groups, so the metric must keep every "
                "pair's group: use streaming=False (or interval='pairs' to stream)"
            )
        if num_classes is not None and (
            not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 2
        ):
            raise ValueError(f"num_classes must be None or an integer >= 2, got {num_classes!r}")
        if average not in ("micro", None):
            raise ValueError(f"average must be 'micro' or None, got {average!r}")
        if average is None and num_classes is None:
            raise ValueError("average=None gives one result per class: set num_classes")
        if debias and norm != "l2":
            raise ValueError(f"debias applies to norm='l2' only, got norm={norm!r}")
        if ignore_index is not None and not isinstance(ignore_index, int):
            raise ValueError(f"ignore_index must be an integer or None, got {ignore_index!r}")
        if streaming and binning == "uniform":
            raise ValueError("streaming=True supports binning='adaptive' only")
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
        self.average = average
        self.ignore_index = ignore_index
        self.streaming = streaming
        self.resolution = resolution
        self.seed = seed
        self.validate_args = validate_args
        if streaming:
            shape = (num_classes or 1,)
            for name, default in zip(_SKETCH_STATES, sketch.empty(resolution, shape)):
                self.add_state(name, default, dist_reduce_fx="sum")
        else:
            self.add_state("probs", default=[], dist_reduce_fx="cat")
            self.add_state("target", default=[], dist_reduce_fx="cat")
            if interval == "groups":
                self.add_state("groups", default=[], dist_reduce_fx="cat")

    # ------------------------------------------------------------------ update
    def _prepare(self, probs: Tensor, target: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """Validate one batch; return probs [n] or [n, C], target [n] and the rows to keep.

        Rows whose target is ``ignore_index`` are not removed here (boolean indexing
        would wait for the device): the keep mask goes along, and only the optional
        validation looks at the kept rows alone. ``update`` has checked both are tensors.
        """
        if self.num_classes is None:
            if probs.shape != target.shape:
                raise ValueError(
                    f"probs and target must have the same shape, got {tuple(probs.shape)} "
                    f"and {tuple(target.shape)}"
                )
            probs, target = probs.reshape(-1), target.reshape(-1)
            keep = None if self.ignore_index is None else target != self.ignore_index
            if self.validate_args and probs.numel():
                if keep is None:
                    _check_pairs(probs, target)
                elif keep.any():
                    _check_pairs(probs[keep], target[keep])
            return probs, target, keep
        c = self.num_classes
        if probs.ndim < 1 or probs.shape[-1] != c or probs.shape[:-1] != target.shape:
            raise ValueError(
                f"multiclass input needs probs [..., {c}] and target [...], got probs "
                f"{tuple(probs.shape)} and target {tuple(target.shape)}"
            )
        if target.is_floating_point():
            raise ValueError(f"multiclass target must hold integer class ids, got {target.dtype}")
        probs, target = probs.reshape(-1, c), target.reshape(-1)
        keep = None if self.ignore_index is None else target != self.ignore_index
        if self.validate_args and target.numel():
            kept_probs, kept = (probs, target) if keep is None else (probs[keep], target[keep])
            if kept.numel():
                low, high = torch.aminmax(kept)
                if low < 0 or high >= c:
                    bad = kept[(kept < 0) | (kept >= c)][0].item()
                    raise ValueError(f"target holds class id {bad}, outside [0, {c})")
                check_probs(kept_probs)
        return probs, target, keep

    def _check_groups(self, groups: Tensor | None, target: Tensor) -> Tensor | None:
        """Validate ``groups=`` of one batch: one integer id per item (target's shape)."""
        if self.interval != "groups":
            if groups is not None:
                raise ValueError(
                    f"groups= is used by interval='groups' only; this metric has "
                    f"interval={self.interval!r}"
                )
            return None
        if groups is None:
            raise ValueError(
                "interval='groups' needs groups=: the group (sentence, document) id of "
                "every item, e.g. update(probs, target, groups=sentence_ids)"
            )
        if isinstance(groups, Tensor) and groups.shape != target.shape:
            raise ValueError(
                f"groups must have the target's shape {tuple(target.shape)} (one id per "
                f"item), got {tuple(groups.shape)}"
            )
        return _check_groups(groups, target, "target").detach()

    def update(self, probs: Tensor, target: Tensor, groups: Tensor | None = None) -> None:
        """Accumulate a batch; a batch that fails validation changes nothing.

        ``groups`` (with ``interval="groups"`` only): the id of every item's group, of
        ``target``'s shape. Ids must name a group in the whole evaluation set (e.g. the
        sentence's index in the data set), also across DDP ranks, since pairs with one
        id are resampled together.
        """
        if not isinstance(probs, Tensor) or not isinstance(target, Tensor):
            raise ValueError("probs and target must be tensors")
        if not probs.is_floating_point():
            raise ValueError(f"probs must be a floating-point tensor, got {probs.dtype}")
        groups = self._check_groups(groups, target)
        probs, target, keep = self._prepare(probs.detach(), target.detach())
        if self.streaming:
            if self.cell_count.device.type == "cpu" and self.cell_count.is_shared():
                # ddp_spawn (torch.multiprocessing) hands every rank the metric in shared
                # memory: without a private copy, the ranks would add into one buffer.
                for name in _SKETCH_STATES:
                    setattr(self, name, getattr(self, name).clone())
            states = [getattr(self, name) for name in _SKETCH_STATES]
            if self.num_classes is None:
                sketch.accumulate(*(s[0] for s in states), probs, target, keep)
            else:
                classes = torch.arange(self.num_classes, device=target.device)
                one_hot = target.unsqueeze(1) == classes
                sketch.accumulate(*states, probs, one_hot, keep)
            return
        # Ignored rows stay until compute(), where dropping them may synchronise.
        self.probs.append(probs)
        self.target.append(target)
        if groups is not None:
            self.groups.append(groups)

    def _sync_dist(self, dist_sync_fn: Any = None, process_group: Any = None) -> None:
        """Gather the pairs of every rank (exact mode) or sum the sketches (streaming).

        Before gathering, the ranks agree on one dtype per list state (pairs are kept
        as given, e.g. bfloat16 on one rank and float32 on another), and a rank without
        data contributes an empty tensor of that dtype and of the right shape, which
        ``all_gather`` needs.
        """
        kwargs = {} if dist_sync_fn is None else {"dist_sync_fn": dist_sync_fn}
        if not self.streaming:
            gather = dist_sync_fn or gather_all_tensors
            group = process_group or self.process_group
            for name in self._pair_states():
                parts = getattr(self, name)
                code = torch.tensor(_dtype_code(parts), device=self.device)
                codes = [int(c) for c in gather(code, group=group)]
                if max(codes) < 0:
                    continue  # no rank has data: compute() will say so
                dtype = functools.reduce(torch.promote_types, (_DTYPES[c] for c in codes if c >= 0))
                wide = name == "probs" and self.num_classes is not None
                width = (self.num_classes,) if wide else ()
                if parts:
                    parts = [dim_zero_cat(parts).to(dtype)]
                else:
                    parts = [torch.empty((0, *width), dtype=dtype, device=self.device)]
                # A new list, so that the copy kept for unsync() stays as it was.
                setattr(self, name, parts)
        super()._sync_dist(process_group=process_group, **kwargs)

    # ----------------------------------------------------------------- compute
    def _pair_states(self) -> tuple[str, ...]:
        return ("probs", "target", "groups") if self.interval == "groups" else ("probs", "target")

    def _pairs(self) -> tuple[Tensor, Tensor, Tensor | None]:
        """probs, target and (interval='groups') group ids, ignored items dropped."""
        # Lists of batches locally; one tensor each once synchronised across ranks.
        if isinstance(self.probs, list) and not self.probs:
            raise ValueError("CalibrationError has no pairs: call update() before compute()")
        probs = dim_zero_cat(self.probs)
        target = dim_zero_cat(self.target)
        groups = dim_zero_cat(self.groups) if self.interval == "groups" else None
        if self.ignore_index is not None:
            keep = target != self.ignore_index
            probs, target = probs[keep], target[keep]
            groups = None if groups is None else groups[keep]
        if probs.numel() == 0:
            raise ValueError("CalibrationError has no pairs: every update was empty")
        return probs, target, groups

    def _class_pairs(self) -> list[tuple[Tensor, Tensor, Tensor | None]]:
        """Binary pairs (probs, target, groups) behind each result: one (micro) or per class."""
        probs, target, groups = self._pairs()
        if self.num_classes is None:
            return [(probs, target, groups)]
        classes = torch.arange(self.num_classes, device=target.device)
        if self.average == "micro":
            # Every item gives C pairs, all in the item's group.
            wide = None if groups is None else groups.unsqueeze(1).expand(-1, self.num_classes)
            return [(probs, target.unsqueeze(1) == classes, wide)]
        return [(probs[:, c], target == c, groups) for c in range(self.num_classes)]

    def class_bins(self) -> list[Bins]:
        """The bins behind the result: one entry (micro) or one per class."""
        if self.streaming:
            states = [getattr(self, name) for name in _SKETCH_STATES]
            if states[0].sum() == 0:
                raise ValueError("CalibrationError has no pairs: call update() before compute()")
            if self.average == "micro":
                # Cells are aligned across classes, so pooling them is a sum.
                pooled = [s.sum(0) for s in states]
                size = resolve_bin_size(self.bin_size, int(pooled[0].sum().item()))
                return [sketch.to_bins(*pooled, size)]
            return [
                sketch.to_bins(
                    *(s[c] for s in states),
                    resolve_bin_size(self.bin_size, int(states[0][c].sum().item())),
                )
                for c in range(states[0].shape[0])
            ]
        options = {"binning": self.binning, "bin_size": self.bin_size, "n_bins": self.n_bins}
        return [
            compute_bins(probs, target, validate=False, **options)
            for probs, target, _ in self._class_pairs()
        ]

    def compute(self) -> Tensor:
        """The calibration error: 0-dim (micro) or one value per class (average=None)."""
        errors = [error_from_bins(b, self.norm, debias=self.debias) for b in self.class_bins()]
        return errors[0] if self.average == "micro" else torch.stack(errors)

    def compute_result(self) -> CalibrationResult | list[CalibrationResult]:
        """Error, sampled interval and bins: one result (micro) or a list per class.

        Under DDP it is synchronised like :meth:`compute` (torchmetrics wraps only
        ``compute``), unless the caller already holds the metric synchronised.
        """
        with self.sync_context(
            dist_sync_fn=self.dist_sync_fn,
            should_sync=self._to_sync and not self._is_synced,
            should_unsync=self._should_unsync and not self._is_synced,
        ):
            inputs = self._class_pairs() if self.interval == "groups" else self.class_bins()
        options = {"n_samples": self.n_samples, "confidence": self.confidence}
        options |= {"method": self.method, "norm": self.norm, "debias": self.debias}
        generator = None
        results = []
        for item in inputs:
            if self.seed is not None and generator is None:
                device = item.freq.device if isinstance(item, Bins) else item[0].device
                generator = torch.Generator(device=device).manual_seed(self.seed)
            if isinstance(item, Bins):
                results.append(
                    ci_from_bins(item, generator=generator, interval=self.interval, **options)
                )
                continue
            probs, target, groups = item
            results.append(
                calibration_error_ci(
                    probs,
                    target,
                    groups=groups,
                    interval="groups",
                    generator=generator,
                    binning=self.binning,
                    bin_size=self.bin_size,
                    n_bins=self.n_bins,
                    **options,
                )
            )
        return results[0] if self.average == "micro" else results

    def plot(self, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """Reliability diagram (micro) or per-class error bars (``average=None``).

        Returns ``(fig, ax)``; ``val`` may be a result from :meth:`compute_result`.
        """
        from calib_metrics import plot

        result = self.compute_result() if val is None else val
        if isinstance(result, list):
            labels = [str(c) for c in range(len(result))]
            return plot.per_class_errors({"model": result}, labels, ax=ax)
        return plot.reliability_diagram(result, ax=ax)
