"""The torchmetrics ``Metric`` base of the library's metrics, and its states' helpers.

:class:`_StatesKeepTheirDtype` keeps its states' dtypes when the module is cast,
refuses a loaded or merged state that it would count wrongly (other shapes, values,
``ignore_index`` or settings), synchronises ranks whose list states differ in dtype,
and names its states by the rule its ``update`` fills them with, so that a
``MetricCollection`` never shares a state between metrics whose updates differ.
``CalibrationError`` and ``CalibrationComparison`` build on it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Callable, Iterator, KeysView, Mapping
from typing import Any

import torch
import torchmetrics
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat
from torchmetrics.utilities.distributed import gather_all_tensors
from torchmetrics.utilities.exceptions import TorchMetricsUserError

from calib_metrics.functional.binning import SUPPORTED_DTYPES, is_id_dtype
from calib_metrics.functional.errors import CountedWarning, non_dense_layout, stacklevel_outside
from calib_metrics.functional.multiclass import one_hot_pairs_message, row_sum_message

# dtypes a list state may hold, coded by position for the ranks to agree on one: update
# converts a batch of another dtype into one of them, or refuses it.
_DTYPES = SUPPORTED_DTYPES


def _keep_dtype(fn: Callable, value: Tensor | list[Tensor]) -> Tensor | list[Tensor]:
    """``fn`` (a module-wide conversion) applied to a state for its device only."""
    if isinstance(value, list):
        return [_keep_dtype(fn, v) for v in value]
    # An empty probe shows where fn sends the state, and whether it would cast it.
    probe = fn(torch.empty(0, dtype=value.dtype, device=value.device))
    if probe.dtype == value.dtype:
        return fn(value)
    return value.to(device=probe.device)


def _moved_default(
    fn: Callable, default: Tensor | list[Tensor], fresh: Callable[[torch.device], Tensor]
) -> Tensor | list[Tensor]:
    """A state's default (what ``reset`` restores) where ``fn`` sends the module: moved
    with its values, never through ``fn`` itself, whose ``to_empty`` form had left it
    uninitialised (a reset sketch of garbage counts, or extremes of 0 for ±inf); made
    anew (``fresh``) where it was on the meta device, which holds no values."""
    if isinstance(default, list):
        return _keep_dtype(fn, default)
    probe = fn(torch.empty(0, dtype=default.dtype, device=default.device))
    if default.is_meta:
        return default if probe.device.type == "meta" else fresh(probe.device)
    return default.to(device=probe.device)


def _copy_state(value: Any, default: Tensor | list[Tensor]) -> Any:
    """A private copy of a loaded state: a new list, cloned tensors, the default's dtype."""
    if isinstance(value, (list, tuple)):
        return [v.detach().clone() if isinstance(v, Tensor) else v for v in value]
    if isinstance(value, Tensor) and isinstance(default, list):
        return [part.detach().clone() for part in _joined_as_list(value)]
    if isinstance(value, Tensor):
        dtype = default.dtype if isinstance(default, Tensor) else value.dtype
        return value.detach().to(dtype=dtype, copy=True)
    return value


def _state_problem(name: str, value: Any, default: Tensor | list[Tensor], row: tuple) -> str:
    """Why ``value`` cannot be the state ``name`` of a metric ('' when it can).

    A tensor state (the streaming sketch, the row count) must have its default's shape;
    a list of pairs must hold tensors of rows of shape ``row`` (``(C,)`` for multiclass
    probabilities, ``()`` otherwise), as ``update`` stores them.
    """
    hint = "it was saved by a metric of other settings (num_classes, mode or resolution)"
    parts = value if isinstance(value, (list, tuple)) else [value]
    for part in parts:
        layout = non_dense_layout(part) if isinstance(part, Tensor) else None
        if layout is not None:
            return f"state {name!r} holds a {layout} tensor: states are dense tensors"
    if isinstance(default, Tensor):
        shape = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
        if not isinstance(value, Tensor) or value.shape != default.shape:
            keeps = tuple(default.shape)
            return f"state {name!r} has shape {shape} where this metric keeps {keeps}: {hint}"
        return ""
    for part in parts:
        if not isinstance(part, Tensor):
            return f"state {name!r} holds a {type(part).__name__}, not tensors"
        if part.ndim == 1 and part.numel() == 0:  # what a sync of ranks that held none leaves
            continue
        if part.ndim != len(row) + 1 or tuple(part.shape[1:]) != row:
            return (
                f"state {name!r} holds rows of shape {tuple(part.shape[1:])} where this "
                f"metric keeps rows of shape {row}: {hint}"
            )
        if part.dtype not in _DTYPES:  # the ranks could not agree on it (_dtype_code)
            return (
                f"state {name!r} holds {part.dtype} values, a dtype that update() never "
                "keeps (it keeps unsigned ids as int64, float8 as float32): convert them so"
            )
    return ""


# The state dict key recording the ignore_index the saved padding rows were kept with.
_IGNORE_KEY = "_ignore_index"
# The state dict key recording what the saved pairs are: the mode's code and num_classes
# (0 for binary input). A streaming top-label sketch holds (confidence, correct) pairs in
# one row, as a binary one holds (q, y): only this tells them apart.
_SETTINGS_KEY = "_settings"
# The state dict key recording a streaming sketch's cell layout (sketch.CELL_LAYOUT).
_LAYOUT_KEY = "_sketch_layout"
# Saved in state dicts: a code never changes meaning.
_MODE_CODES = {"one_vs_rest": 0, "top_label": 1, "classwise": 2}
# Not states: the records of the options a state was saved with.
_TAG_KEYS = (_IGNORE_KEY, _SETTINGS_KEY, _LAYOUT_KEY)


def _target_problem(value: Any, num_classes: int | None, ignore_index: int | None) -> str:
    """Why a loaded or merged ``target`` state holds rows that this metric would count
    wrongly ('' when it holds none; one host sync).

    ``update`` checks every batch, but padding rows stay in the state until ``compute``
    drops those equal to the metric's own ``ignore_index``: a state saved with another
    ``ignore_index`` would have its padding counted as labels.
    """
    parts = [part.reshape(-1) for part in _as_list(value) if part.numel()]
    if not parts:
        return ""
    target = torch.cat(parts)
    if ignore_index is not None:
        target = target[target != ignore_index]
    if num_classes is None:
        bad, kind = target[(target != 0) & (target != 1)], "a binary label (0 or 1)"
    else:
        bad, kind = (
            target[(target < 0) | (target >= num_classes)],
            f"a class id in [0, {num_classes})",
        )
    if bad.numel() == 0:
        return ""
    found = bad[0].item()
    hint = f": was it saved with ignore_index={int(found)}?" if float(found).is_integer() else ""
    return (
        f"state 'target' holds {found:g}, which is neither {kind} nor this metric's "
        f"ignore_index ({ignore_index}){hint}"
    )


def _pairs_problem(name: str, probs: Any, target: Any, ignore_index: int | None) -> str:
    """Why a loaded or merged probability state ``name`` and ``target`` cannot be pairs
    ('' when they can; a host sync per part): as many rows of each, and probabilities in
    [0, 1] on every row that is not padding (padding rows may hold anything, NaN too,
    as ``update`` lets them). Checked part by part, so a large state is never copied."""
    # Empty parts hold no pairs (a sync of ranks without any leaves float32 ones of shape [0]).
    probs_parts = [part for part in _as_list(probs) if part.numel()]
    target_parts = [part for part in _as_list(target) if part.numel()]
    rows = [part.shape[0] if part.ndim else 1 for part in probs_parts]
    labels = [part.numel() for part in target_parts]
    if sum(rows) != sum(labels):
        return (
            f"states {name!r} and 'target' hold {sum(rows)} and {sum(labels)} rows: they must match"
        )
    if rows != labels:  # parts that do not pair up (a hand-made state): check them joined
        probs_parts, target_parts = (
            [torch.cat([p.reshape(-1) for p in probs_parts])],
            [torch.cat([t.reshape(-1) for t in target_parts])],
        )
    for part, part_target in zip(probs_parts, target_parts, strict=True):
        values = part.reshape(part.shape[0] if part.ndim else 1, -1)
        if ignore_index is not None:
            values = values[part_target.reshape(-1) != ignore_index]
        bad = values[~((values >= 0) & (values <= 1))]
        if bad.numel():
            return (
                f"state {name!r} holds {bad[0].item()!r}, outside [0, 1], on a row that is "
                "not padding"
            )
    return ""


def _probs_dtype_problem(name: str, probs: Any) -> str:
    """Why a loaded or merged probability state holds values ``update`` would refuse
    ('' when it holds none): integer or bool probabilities."""
    for part in _as_list(probs):
        if part.numel() and not part.is_floating_point():
            return (
                f"state {name!r} holds {part.dtype} values where update() keeps "
                "floating-point probabilities"
            )
    return ""


def _ids_problem(name: str, ids: Any, target: Any) -> str:
    """Why a loaded or merged id state (``groups`` or ``labels``) cannot go with
    ``target`` ('' when it can): integer ids, as ``update`` keeps them, and either none
    (no batch came with them) or one per item. ``compute`` would otherwise fail on every
    call, with the pairs already counted lost to it."""
    parts = [part for part in _as_list(ids) if part.numel()]  # an empty one: no ids, any dtype
    for part in parts:
        if not is_id_dtype(part.dtype):
            return f"state {name!r} holds {part.dtype} values where update() keeps integer ids"
    count, items = sum(p.numel() for p in parts), sum(t.numel() for t in _as_list(target))
    if count not in (0, items):
        return (
            f"states {name!r} and 'target' hold {count} and {items} rows: {name} needs one "
            "id per item (or none)"
        )
    return ""


def _holds_nothing(value: Any) -> bool:
    """Whether a saved list state is empty: a list of no rows, or, synchronised, one
    tensor of none."""
    if isinstance(value, Tensor):
        return value.numel() == 0
    parts = value if isinstance(value, (list, tuple)) else [value]
    return all(isinstance(part, Tensor) and part.numel() == 0 for part in parts)


def _joined_as_list(value: Tensor) -> list[Tensor]:
    """A synchronised (joined) pair state as the list ``update`` keeps: empty, or one part."""
    return [value] if value.numel() else []


def _as_list(state: Tensor | list[Tensor]) -> list[Tensor]:
    """A pair state as a list of tensors (one tensor once synchronised)."""
    return state if isinstance(state, list) else [state]


def _dtype_code(parts: list[Tensor]) -> int:
    """Position in ``_DTYPES`` of the dtype the parts concatenate to; -1 for none."""
    if not parts:
        return -1
    dtype = functools.reduce(torch.promote_types, (p.dtype for p in parts))
    return _DTYPES.index(dtype)


def _agree_on_list_dtypes(
    metric: Metric, widths: dict[str, tuple[int, ...]], gather: Callable, group: Any
) -> None:
    """Make every rank's list states one tensor of one dtype, ahead of ``all_gather``.

    ``widths`` names the list states and each one's trailing shape (``(C,)`` for
    multiclass probabilities, ``()`` otherwise). The ranks agree on one dtype per state
    (pairs are kept as given, e.g. bfloat16 on one rank and float32 on another), and a
    rank without data contributes an empty tensor of that dtype and shape.
    """
    for name, width in widths.items():
        parts = getattr(metric, name)
        if not isinstance(parts, list):
            continue
        code = torch.tensor(_dtype_code(parts), device=metric.device)
        codes = [int(c) for c in gather(code, group=group)]
        if max(codes) < 0:
            continue  # no rank has data: compute() will say so
        dtype = functools.reduce(torch.promote_types, (_DTYPES[c] for c in codes if c >= 0))
        if parts:
            parts = [dim_zero_cat(parts).to(dtype)]
        else:
            parts = [torch.empty((0, *width), dtype=dtype, device=metric.device)]
        # A new list, so that the caller's earlier lists stay as they were.
        setattr(metric, name, parts)


_LIBRARY_DIRS = (
    os.path.dirname(torch.__file__) + os.sep,
    os.path.dirname(os.path.abspath(torchmetrics.__file__)) + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    contextlib.__file__,  # the exit of a context manager of the library's (warnings_said_by)
)


def _row_count(parts: Tensor | list[Tensor] | None) -> int:
    """Rows of a pair state, a tensor or a list of them (shapes only: no synchronisation)."""
    if parts is None:
        return 0
    return parts.shape[0] if isinstance(parts, Tensor) else sum(p.shape[0] for p in parts)


def _user_stacklevel() -> int:
    """``stacklevel`` for a warning raised by the caller that points at the user's line:
    the first frame outside torch, torchmetrics and this package.

    A load inside a model reaches the metric through torch's recursion, one frame per
    level of nesting, and ``compute()`` through torchmetrics' wrapper, so no fixed
    ``stacklevel`` names the user's call.
    """
    # One less than for a warning of this function's: the caller warns, a frame nearer.
    return stacklevel_outside(_LIBRARY_DIRS) - 1


def says_warnings(owner: Any) -> bool:
    """Whether this process says the warnings of ``owner``'s compute: while its state is
    synchronised across ranks every rank computes the same result from the same pairs,
    and only rank zero (of its process group) says what that result warns of; the "only
    6 bins" warning had come once per rank.

    Example:
        >>> says_warnings(type("Metric", (), {"_is_synced": False})())
        True
    """
    synced = getattr(owner, "_is_synced", False) or owner.__dict__.get("_result_synced", False)
    if not synced:
        return True
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return True
    return dist.get_rank(group=getattr(owner, "process_group", None)) == 0


@contextlib.contextmanager
def finishing_synced_result(owner: Any, synced: bool) -> Iterator[None]:
    """Within: ``owner`` finishes a result whose state was synchronised (``synced``, read
    inside the sync block), after the block has given each rank its own state back, so
    that :func:`says_warnings` still knows every rank computes the same result (the
    per-class results and intervals are drawn there: "only 4 bins" came once per rank)."""
    before = owner.__dict__.get("_result_synced", False)
    owner.__dict__["_result_synced"] = synced
    try:
        yield
    finally:
        owner.__dict__["_result_synced"] = before


def warn_at_user_line(message: str | None, computed_by: Any = None) -> None:
    """A UserWarning of ``message`` (none for None) at the user's line
    (:func:`_user_stacklevel`); of what a metric ``computed_by`` computed, only where that
    metric :func:`says_warnings`."""
    if message is None or (computed_by is not None and not says_warnings(computed_by)):
        return
    warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())


def warn_once_at_user_line(owner: Any, message: str | None) -> None:
    """:func:`warn_at_user_line` of ``message`` (none for None) as the metric ``owner``'s,
    once per metric object, as :func:`warnings_said_by` says the functions' warnings: a
    warning of every compute had come again at every epoch.

    Example:
        >>> metric = type("CalibrationError", (), {})()
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     for _ in range(2):
        ...         warn_once_at_user_line(metric, "too narrow")
        >>> [str(w.message) for w in caught]
        ['CalibrationError: too narrow']
    """
    said_before = owner.__dict__.setdefault("_warnings_said", set())
    text = None if message is None else f"{type(owner).__name__}: {message}"
    if text is not None and text not in said_before:
        said_before.add(text)
        warn_at_user_line(text, owner)


@contextlib.contextmanager
def warnings_said_by(owner: Any, function: str) -> Iterator[None]:
    """The warnings of ``function`` (a functional entry the metric ``owner`` calls) said
    again as the metric's, at the user's line (:func:`_user_stacklevel`), each once per
    metric object, as its other warnings are: a metric's too-few-units warning had named
    ``calibration_error_ci``, which the user never called, pointed into the library, and
    (the registry of "once per line" being reset by the capture) come again at every
    compute of an epoch loop. A :class:`~calib_metrics.functional.errors.CountedWarning`
    is said once whatever its count (which changes from epoch to epoch).

    Example:
        >>> metric = type("CalibrationError", (), {})()
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     for _ in range(2):
        ...         with warnings_said_by(metric, "calibration_error_ci"):
        ...             warnings.warn("calibration_error_ci: 5 pairs", UserWarning)
        >>> [str(w.message) for w in caught]
        ['CalibrationError: 5 pairs']
    """
    name = type(owner).__name__
    said_before = owner.__dict__.setdefault("_warnings_said", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    if not says_warnings(owner):
        return
    for said in caught:
        text = str(said.message)
        if text.startswith(f"{function}: "):
            text = text[len(function) + 2 :]
        if not text.startswith(f"{name}: "):
            text = f"{name}: {text}"
        once = said.category.__name__ if issubclass(said.category, CountedWarning) else text
        if once not in said_before:
            said_before.add(once)
            warnings.warn(text, said.category, stacklevel=_user_stacklevel())


class _KeysRefused(ValueError):
    """A loaded state whose keys this metric does not take (``prefix + name``)."""

    def __init__(self, message: str, missing: list[str], unexpected: list[str]) -> None:
        super().__init__(message)
        self.missing, self.unexpected = missing, unexpected


class _NamesOfRule(KeysView):
    """The names of a metric's states, equal only to the names of states filled by the
    same ``update`` rule (:class:`_StatesOfRule`)."""

    def __init__(self, states: dict, rule: tuple) -> None:
        super().__init__(states)
        self.rule = rule

    def __eq__(self, other: object) -> bool:
        return getattr(other, "rule", None) == self.rule and super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a set's view, as dict.keys() is


class _StatesOfRule(dict):
    """A metric's ``_defaults`` (its states' defaults, by name) whose ``keys()`` also say
    by which rule its ``update`` fills them (:meth:`_StatesKeepTheirDtype._update_rule`).

    torchmetrics' ``MetricCollection`` (``compute_groups=True``, its default) lets the
    members whose ``_defaults.keys()`` and state values are equal after the first
    update share one state, and from then on runs the first member's ``update`` alone.
    These metrics keep padding rows until compute (and unchecked rows with
    ``validate_args=False``), so two members that differed only in ``ignore_index``
    were equal after a batch without padding, and the one without ``ignore_index``
    counted the other's padding as labels. Members that differ only in what compute
    does (norm, bin_size, mode of the exact mode...) still share. The names themselves,
    and so state dicts, merges and synchronisation, are unchanged.
    """

    def __init__(self, states: dict, rule: tuple) -> None:
        super().__init__(states)
        self.rule = rule

    def keys(self) -> _NamesOfRule:  # type: ignore[override]
        return _NamesOfRule(self, self.rule)


class _StatesKeepTheirDtype(Metric):
    """A Metric whose states follow the module's device but never its dtype casts, and
    that refuses a loaded or merged state of another shape (:meth:`_check_states`)."""

    # The list states that hold probabilities, [n, C] when num_classes is set.
    _WIDE_STATES: tuple[str, ...] = ()
    num_classes: int | None = None
    ignore_index: int | None = None
    mode: str = "one_vs_rest"

    def reset(self) -> None:
        """Forget every state. List states get new lists: torchmetrics clears them in
        place, which emptied the lists a caller still held (``torchmetrics.wrappers.Running``
        keeps each window's state that way)."""
        for key, default in self._defaults.items():
            if isinstance(default, list):
                setattr(self, key, [])
        self._one_hot_checked = False  # the next data may be another model's
        self._received = ()  # no loaded or merged state any more (_states_received)
        super().reset()

    def _seed_of_draws(self) -> int | None:
        """The seed of one compute's resamplings: ``seed``; with ``seed=None``, this
        process's global RNG (None), except on a synchronised state under DDP, where the
        ranks take one seed drawn from the group's first rank's global RNG, so they draw
        the same resamplings of the same union and agree on the interval (one more gather
        and one host read). Collective, like the synchronisation: call it first thing
        inside the compute's ``sync_context``, before any check that one rank alone may
        fail (free memory is each rank's own), or the others wait in its gather."""
        seed = getattr(self, "seed", None)
        if seed is None and self._is_synced:
            gather = self.dist_sync_fn or gather_all_tensors
            drawn = torch.randint(2**62, (1,), dtype=torch.int64).to(self.device)
            seed = int(gather(drawn, group=self.process_group)[0].item())
        return seed

    @staticmethod
    def _generator(seed: int | None, device: torch.device) -> torch.Generator | None:
        """A generator of ``seed`` on ``device`` (None: the global RNG)."""
        return None if seed is None else torch.Generator(device=device).manual_seed(seed)

    def _update_rule(self) -> tuple:
        """What decides how ``update`` fills the states from a batch, what it keeps and
        what it refuses: metrics whose rules differ never share a state in a
        ``MetricCollection`` (:class:`_StatesOfRule`)."""
        return (self.num_classes, self.ignore_index, self.validate_args)

    def _name_states_by_rule(self) -> None:
        """Tag the states' names with :meth:`_update_rule`, once every state is added."""
        self._defaults = _StatesOfRule(self._defaults, self._update_rule())

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if not isinstance(self._defaults, _StatesOfRule):
            # Pickled before the states' names carried the update rule.
            self._name_states_by_rule()

    def _refuse_synced(self, call: str) -> None:
        """Refuse a batch while the caller's own ``sync()`` holds (torchmetrics' forward
        refuses it too): the states are every rank's joined, as one tensor each."""
        if self._is_synced:
            raise TorchMetricsUserError(
                f"{type(self).__name__}.{call}() on a synchronised metric: after sync() its "
                "states hold every rank's pairs joined, and unsync() gives back this rank's "
                f"own, without the batch; call unsync() before {call}()"
            )

    # Set to silence the row-sum check (forward's batch metric: the metric itself warns);
    # each input otherwise warns once (``_row_sums_warned_for``).
    _row_sums_warned = False

    def _warn_row_sums(self, batch: Mapping[str, Tensor]) -> None:
        """Warn once per input of the metric object (by name; "" for a metric of one), in
        the first batch where its rows of class probabilities do not all sum to 1 (a
        softmax over the batch, say); validation's host synchronisation, until that input
        has warned. Called from ``update``'s or ``forward``'s own code."""
        if self._row_sums_warned:
            return
        # Each input has its own once: a comparison's probs_b had gone unchecked once
        # probs_a (of its batch or an earlier one) had warned.
        warned = self.__dict__.setdefault("_row_sums_warned_for", set())
        for name, probs in batch.items():
            message = None if name in warned else row_sum_message(probs)
            if message is not None:
                warned.add(name)
                named = f"{name}: " if name else ""
                # No fixed stacklevel names the caller's line: a comparison's forward
                # reaches here through its batch's update, and had named its own line.
                text = f"{type(self).__name__}: {named}{message}"
                warnings.warn(text, UserWarning, stacklevel=_user_stacklevel())

    # Set once a batch of binary pairs was looked at (forward's batch metric: the metric
    # itself looks): a one-hot target is one-hot in every batch. Cleared by reset().
    _one_hot_checked = False
    #: Whose reading of one-hot rows as independent pairs the warning names
    #: (:func:`~calib_metrics.functional.multiclass.one_hot_pairs_message`'s ``read_by``).
    _one_hot_read_by = "metric"

    def _warn_one_hot(self, probs: Tensor, target: Tensor) -> None:
        """Warn, once per metric object until reset, when the first batch of binary pairs
        that can tell holds a one-hot target beside rows of probabilities that sum to 1
        (:func:`~calib_metrics.functional.multiclass.one_hot_pairs_message`): read as
        independent pairs, which ``compute_spiegelhalter`` and the interval take as
        independent. A batch
        of fewer than 2 rows ``[..., C]`` cannot tell (one row of two multi-label pairs,
        [0.3, 0.705] with [0, 1], looks one-hot) and leaves the check armed. The batch as
        given (before flattening), validated; a host synchronisation where its target is
        ``[..., C]``, in the deciding batch only. Called from ``update``'s or
        ``forward``'s own code."""
        if self._one_hot_checked or target.numel() == 0:
            return
        if target.ndim >= 2 and target.numel() < 2 * target.shape[-1]:
            return
        self._one_hot_checked = True
        message = one_hot_pairs_message(probs, target, True, self._one_hot_read_by)
        if message is not None:
            text = f"{type(self).__name__}: {message}"
            # As _warn_row_sums: no fixed stacklevel names the caller's line (a
            # MetricCollection's update reaches here through its own frames).
            warnings.warn(text, UserWarning, stacklevel=_user_stacklevel())

    def _count_merged_updates(self, incoming_state: dict[str, Any] | Metric) -> None:
        """Count the updates behind a merged state (a state dict's as one, as a loaded state
        counts), so that compute() on a fresh metric that merged shards does not warn that
        update() was never called."""
        if isinstance(incoming_state, Metric):
            self._update_count += incoming_state.update_count
        else:
            self._update_count = max(self._update_count, 1)
        if incoming_state is not self.__dict__.get("_batch"):  # forward's batch: an update
            received = self._states_received()
            self._received = received if "merged" in received else (*received, "merged")

    def _states_received(self) -> tuple[str, ...]:
        """How the state came besides updates since the last reset: ``"loaded"`` (which
        replaced all before it) and ``"merged"``, in that order. Each counts in
        ``update_count`` as an update, which it was not (see :meth:`_none_received`)."""
        return self.__dict__.get("_received", ())  # none in a metric pickled before

    def _none_received(self, padding: str = "") -> str | None:
        """Why a metric holds no pairs when a loaded or merged state is part of the
        answer (None when not): "all 1 updates were empty" had been said of a metric
        whose update held 5000 pairs before an empty state was loaded over them."""
        received = self._states_received()
        if not received:
            return None
        hold = "states hold" if len(received) > 1 else "state holds"
        since = " since" if "loaded" in received else ""
        return f"the {' and '.join(received)} {hold} none, and no update{since} added any{padding}"

    def _list_state_widths(self) -> dict[str, tuple[int, ...]]:
        """Each list state's trailing shape: ``(C,)`` for multiclass probabilities."""
        wide = () if self.num_classes is None else (self.num_classes,)
        return {
            key: wide if key in self._WIDE_STATES else ()
            for key, default in self._defaults.items()
            if isinstance(default, list)
        }

    def sync(
        self,
        dist_sync_fn: Callable | None = None,
        process_group: Any | None = None,
        should_sync: bool = True,
        distributed_available: Callable | None = None,
    ) -> None:
        """Gather every rank's states: torchmetrics' ``sync``, after one step of its own.

        The ranks first agree on one dtype per list state (pairs are kept as given, e.g.
        bfloat16 on one rank and float32 on another), and a rank without data contributes
        an empty tensor of that dtype and of the right shape, which ``all_gather`` needs.
        ``unsync`` then restores this rank's states exactly as ``update`` left them, and a
        gather that fails leaves them so too.
        """
        available = distributed_available or self.distributed_available_fn
        gathers = should_sync and callable(available) and available()
        if self._is_synced or not gathers:
            # Raises when already synchronised; otherwise there is nothing to gather.
            super().sync(dist_sync_fn, process_group, should_sync, distributed_available)
            return
        local = {key: getattr(self, key) for key in self._defaults}
        try:
            gather, group = dist_sync_fn or gather_all_tensors, process_group or self.process_group
            _agree_on_list_dtypes(self, self._list_state_widths(), gather, group)
            super().sync(dist_sync_fn, process_group, should_sync, distributed_available)
        except BaseException:
            for key, value in local.items():
                setattr(self, key, value)
            self._cache = None
            raise
        # torchmetrics keeps a copy taken after the ranks agreed: each list joined into one
        # tensor, cast. The states themselves are intact (the gather replaces them, never
        # changes them in place), and they are what unsync() should give back.
        self._cache = local

    @contextlib.contextmanager
    def sync_context(
        self,
        dist_sync_fn: Callable | None = None,
        process_group: Any | None = None,
        should_sync: bool = True,
        should_unsync: bool = True,
        distributed_available: Callable | None = None,
    ) -> Iterator[None]:
        """torchmetrics' ``sync_context``, which also unsynchronises when its body raises.

        torchmetrics' leaves the metric synchronised for good after a compute that failed
        (no pairs on any rank, a refusal of memory, ranks that disagree about ``groups=``):
        the rank's pairs were the union, one tensor, and its next ``update`` crashed.
        Every compute passes through it, and a state on the meta device is refused here
        first (:meth:`_states_on_meta`): it holds no values (a streaming metric had failed
        in torch with "Tensor.item() cannot be called on meta tensors", an exact one with
        "META device type not an accelerator").
        """
        if self._states_on_meta():
            raise ValueError(
                f"{type(self).__name__} is on the meta device, whose states hold no values "
                "(and torch cannot copy them out): build the metric on a real device and "
                "update it there before computing"
            )
        synced_before = self._is_synced  # a caller's own sync() is the caller's to undo
        self.sync(dist_sync_fn, process_group, should_sync, distributed_available)
        try:
            yield
        except BaseException:
            # Nothing was computed, so nothing this context synchronised is worth keeping.
            self.unsync(should_unsync=self._is_synced and not synced_before)
            raise
        self.unsync(should_unsync=self._is_synced and should_unsync)

    def _states_on_meta(self) -> bool:
        """Whether a state tensor is on the meta device. The states, not the metric's
        nominal device: a metric built under ``torch.device("meta")`` (as a model is for
        a lazy init) reports meta and keeps real tensors."""
        for key in self._defaults:
            value = getattr(self, key)
            parts = value if isinstance(value, list) else [value]
            if any(isinstance(part, Tensor) and part.is_meta for part in parts):
                return True
        return False

    def _listed(self, states: dict[str, Any]) -> dict[str, Any]:
        """``states`` with every pair state as a list of non-empty tensors, as ``update``
        keeps them: a synchronised state (``metric_state`` after ``sync()``, a joined
        dict) holds one tensor, which the merges would add to a list."""
        listed = dict(states)
        for key, default in self._defaults.items():
            value = listed.get(key)
            if isinstance(default, list) and isinstance(value, Tensor):
                listed[key] = _joined_as_list(value)
        return listed

    def _check_states(self, states: dict[str, Any], prefix: str = "") -> None:
        """Raise ValueError naming the first of ``states`` (``prefix + name``: a state
        dict's keys) whose shape this metric does not keep; torchmetrics assigns states
        as they come, and they are not buffers, whose shapes torch would check."""
        for key, default in self._defaults.items():
            if prefix + key not in states:
                continue
            wide = key in self._WIDE_STATES and self.num_classes is not None
            row = (self.num_classes,) if wide else ()
            problem = _state_problem(key, states[prefix + key], default, row)
            if not problem and key == "target":
                problem = _target_problem(states[prefix + key], self.num_classes, self.ignore_index)
            if problem:
                raise ValueError(f"{type(self).__name__}: {problem}")
        target = states.get(prefix + "target")
        for key in self._WIDE_STATES:
            if target is None or prefix + key not in states:
                continue
            problem = _probs_dtype_problem(key, states[prefix + key]) or _pairs_problem(
                key, states[prefix + key], target, self.ignore_index
            )
            if problem:
                raise ValueError(f"{type(self).__name__}: {problem}")
        for key in ("groups", "labels"):
            if target is None or key not in self._defaults or prefix + key not in states:
                continue
            problem = _ids_problem(key, states[prefix + key], target)
            if problem:
                raise ValueError(f"{type(self).__name__}: {problem}")

    def set_dtype(self, dst_type: str | torch.dtype) -> _StatesKeepTheirDtype:
        """Change nothing, and say so: the states keep their dtypes (see :meth:`_apply`),
        where torchmetrics' ``set_dtype`` would cast them."""
        warnings.warn(
            f"{type(self).__name__}.set_dtype({dst_type}) changes nothing: its states keep "
            "their dtypes (float64 sums, the probabilities as given)",
            UserWarning,
            stacklevel=2,
        )
        return self

    def _apply(
        self, fn: Callable, exclude_state: Any = (), recurse: bool = True
    ) -> _StatesKeepTheirDtype:
        """Move the states with the module, but never change their dtype.

        ``.to(torch.bfloat16)``, ``.half()`` or Lightning's ``precision="bf16-true"``
        cast a module's tensors; cast, the float64 sums of the streaming state would
        stop accepting updates and the exact mode's stored probabilities would be
        rounded. The states (and their defaults, which ``reset`` restores) only follow
        the device; every other tensor is left to torchmetrics. ``recurse`` (which
        ``to_empty`` passes, and torchmetrics' own ``_apply`` refused as a TypeError) is
        taken: a metric's submodules, if any, always follow it.
        """
        this = super()._apply(fn, exclude_state=(*exclude_state, *self._defaults))
        for key, default in this._defaults.items():
            if key in exclude_state:
                continue
            moved = _moved_default(
                fn, default, lambda device, k=key, d=default: this._fresh_default(k, d, device)
            )
            this._defaults[key] = moved
            state = getattr(this, key)
            if isinstance(state, Tensor) and state.is_meta and not moved.is_meta:
                setattr(this, key, moved.clone())  # built on meta: no pair seen, empty
            else:
                setattr(this, key, _keep_dtype(fn, state))
        # torchmetrics casts the cached compute() value too; recomputing it is exact.
        this._computed = None
        return this

    def _fresh_default(self, name: str, default: Tensor, device: torch.device) -> Tensor:
        """State ``name``'s default made anew on ``device`` (``default``: its meta tensor,
        of the metric built on the meta device): zeros, unless a subclass says otherwise."""
        return torch.zeros(default.shape, dtype=default.dtype, device=device)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if self._persistent.get("target", False):
            # The padding rows are kept with their target: which value marks them goes too.
            ignore = self.ignore_index
            flag_and_value = [0, 0] if ignore is None else [1, ignore]
            destination[prefix + _IGNORE_KEY] = torch.tensor(flag_and_value, dtype=torch.int64)
            # And what the pairs are, which their shapes do not always say.
            settings = [_MODE_CODES[self.mode], self.num_classes or 0]
            destination[prefix + _SETTINGS_KEY] = torch.tensor(settings, dtype=torch.int64)

    @staticmethod
    def _pop_tags(states: dict, prefix: str = "") -> dict[str, Any]:
        """Take the records of the options (``_TAG_KEYS``, after ``prefix``) out of
        ``states``; return them by their bare names."""
        return {key: states.pop(prefix + key) for key in _TAG_KEYS if prefix + key in states}

    def _check_incoming(self, states: dict, tags: dict[str, Any], prefix: str = "") -> None:
        """Refuse a loaded or merged state (``prefix + name`` keys) that this metric would
        count wrongly, before any of it is taken: one saved with another ``ignore_index``
        (by its record), of other shapes or values (named by the state), or by a metric
        of other settings (by its record, which catches what the shapes cannot tell: a
        top-label sketch from a binary one). A state without the records (saved before
        they were kept, or a ``metric_state`` dict) is checked by its shapes and values
        alone."""
        self._check_saved_ignore_index(tags.get(_IGNORE_KEY))
        # The record first: it names a binary state loaded into num_classes=3 as such,
        # where the shapes would only say that they differ.
        self._check_saved_settings(tags.get(_SETTINGS_KEY))
        self._check_states(states, prefix)

    def _settings_problem(self, num_classes: int | None, mode: str) -> str:
        """Why pairs of a metric of ``num_classes`` and ``mode`` cannot join this one's
        ('' when they can). A comparison keeps its pairs as given whatever the mode (it
        turns them into pairs at compute), so only num_classes counts here."""
        if num_classes != self.num_classes:
            return f"num_classes {num_classes} into num_classes {self.num_classes}"
        return ""

    def _load_problem(self, num_classes: int | None, mode: str) -> str:
        """Why a state saved by a metric of ``num_classes`` and ``mode`` cannot be loaded
        into this one ('' when it can): where the states are alike, so that a load takes
        what a fresh metric of this one's settings would have kept of the same data."""
        return self._settings_problem(num_classes, mode)

    def _check_saved_settings(self, saved: Any) -> None:
        """Refuse a state saved by a metric of other settings (``_SETTINGS_KEY``)."""
        if saved is None:
            return
        codes = {code: mode for mode, code in _MODE_CODES.items()}
        values = saved.tolist() if isinstance(saved, Tensor) else None
        if not (isinstance(values, list) and len(values) == 2 and values[0] in codes):
            raise ValueError(
                f"{type(self).__name__}: the state's record of its settings "
                f"({_SETTINGS_KEY!r}) is {saved!r}, not [mode code, num_classes]"
            )
        mode, num_classes = codes[values[0]], int(values[1]) or None
        problem = self._load_problem(num_classes, mode)
        if problem:
            raise ValueError(
                f"{type(self).__name__}: the state was saved by a metric of other settings "
                f"({problem}); build the metric with num_classes={num_classes}, "
                f"mode={mode!r}"
            )

    def _check_saved_ignore_index(self, saved: Tensor | None) -> None:
        """Refuse a state saved with another ``ignore_index`` (states saved before it was
        recorded are checked by their values only, :func:`_target_problem`)."""
        if saved is None:
            return
        flag, value = (int(v) for v in saved.tolist())
        theirs = value if flag else None
        if theirs != self.ignore_index:
            raise ValueError(
                f"{type(self).__name__}: the state was saved with ignore_index={theirs}, and "
                f"this metric has ignore_index={self.ignore_index}: its padding rows would be "
                f"counted as labels or labels dropped; build the metric with "
                f"ignore_index={theirs}"
            )

    def _drop_empty_states_not_kept(self, state_dict: dict, prefix: str) -> None:
        """Drop from ``state_dict`` the list states this metric does not keep that hold
        nothing: the group ids of a metric that keeps them (``interval=None``) but was never
        given any. Nothing in them can be lost, and the pairs beside them are valid here
        (``interval="pairs"`` or ``"paper"``), so the load goes ahead without them."""
        known = {*self._defaults, *self._buffers, *self._parameters}
        for key in list(state_dict):
            name = key[len(prefix) :]
            if not key.startswith(prefix) or "." in name or name in known:
                continue
            if _holds_nothing(state_dict[key]):
                del state_dict[key]

    def _complete_state(self, states: dict[str, Any], prefix: str = "") -> None:
        """Add, in place, what a state saved by an earlier version lacks but this metric
        can do without (nothing here; a subclass's own)."""

    def _check_keys(self, state_dict: dict, prefix: str) -> None:
        """Refuse, before anything is loaded, a state with keys this metric does not keep,
        as a state of other shapes is (torch passes ``strict=True`` here whatever the
        caller asked): torch reports them only after loading the rest, which had replaced
        the pairs already kept (a streaming state loaded into an exact metric)."""
        known = {*self._defaults, *self._buffers, *self._parameters}
        unexpected = sorted(
            key[len(prefix) :]
            for key in state_dict
            if key.startswith(prefix) and "." not in key[len(prefix) :]
            and key[len(prefix) :] not in known
        )  # fmt: skip
        if unexpected:
            raise _KeysRefused(
                f"{type(self).__name__}: the state holds {', '.join(map(repr, unexpected))}, "
                f"which this metric does not keep: it was saved by a metric of other settings "
                f"(streaming=, interval=); nothing was loaded",
                [],
                [prefix + key for key in unexpected],
            )
        held = [key for key in self._defaults if prefix + key in state_dict]
        # A missing list state is one the saving metric did not keep (group ids, saved
        # with interval="pairs"): it loads as empty, where this metric can do without it
        # (_check_states refuses it for interval="groups"). A missing tensor would leave part of
        # this metric's state beside the loaded rest: a sketch's sums without its extremes
        # (saved before they were kept) would mix two states.
        missing = sorted(
            key
            for key, default in self._defaults.items()
            if prefix + key not in state_dict and isinstance(default, Tensor)
        )
        if held and missing:
            older = any(key in ("cell_low", "cell_high") for key in missing)
            raise _KeysRefused(
                f"{type(self).__name__}: the state lacks {', '.join(map(repr, missing))}, "
                "which this metric keeps: it was saved by a metric of other settings"
                + (
                    " or by a calib_metrics from before 2026-11-29, whose streaming sketch "
                    "kept no lowest and highest q per cell"
                    if older
                    else ""
                )
                + "; nothing was loaded",
                [prefix + key for key in missing],
                [],
            )

    def _load_from_state_dict(
        self,
        state_dict: dict,
        prefix: str,
        local_metadata: dict,
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        try:
            tags = self._pop_tags(state_dict, prefix)
            self._drop_empty_states_not_kept(state_dict, prefix)
            self._complete_state(state_dict, prefix)
            self._check_keys(state_dict, prefix)
            self._check_incoming(state_dict, tags, prefix)
        except ValueError as refused:
            if not prefix:  # the metric's own load_state_dict: the library's ValueError
                if isinstance(refused, _KeysRefused):
                    # A plain one: the traceback had named the private class.
                    raise ValueError(str(refused)) from None
                raise
            # Inside a model, torch's channels: the rest of the model loads, ``strict=``
            # decides about missing and unexpected keys as for any module, and torch raises
            # the other refusals at the end, as it does a shape mismatch. This metric keeps
            # its own state whole.
            if isinstance(refused, _KeysRefused):
                missing_keys.extend(refused.missing)
                unexpected_keys.extend(refused.unexpected)
                # strict=False reports keys without a word: say why the metric kept its own.
                warn_at_user_line(str(refused))
            else:
                error_msgs.append(str(refused))
            return
        # torchmetrics assigns the caller's own lists and tensors: later updates would
        # append to (or, streaming, add into) the caller's dict. Load copies instead.
        loaded = False
        for key in self._defaults:
            name = prefix + key
            if name in state_dict:
                state_dict[name] = _copy_state(state_dict[name], self._defaults[key])
                loaded = True
        if loaded:  # pair states the saving metric did not keep: none, not this one's own
            for key, default in self._defaults.items():
                if isinstance(default, list) and prefix + key not in state_dict:
                    setattr(self, key, [])
            # A loaded state counts as updated: compute() need not warn that it was not.
            self._update_count = max(self._update_count, 1)
            self._received = ("loaded",)  # it replaced whatever came before
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        # compute() caches its value: a loaded state is a new one.
        self._computed = None
