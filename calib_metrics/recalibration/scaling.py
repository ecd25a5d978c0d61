"""Parametric recalibrators of logits, fitted by NLL on held-out data with L-BFGS (float64).

* :class:`TemperatureScaling` (Guo et al. 2017): one ``T > 0``, ``softmax(z / T)`` or
  ``sigmoid(z / T)``; never changes the arg-max.
* :class:`VectorScaling`: ``softmax(w * z + b)``, one weight and bias per class.
* :class:`MatrixScaling`: ``softmax(W z + b)`` with the ODIR penalty of Kull et al. (2019),
  ``λ_od Σ_{i≠j} W_ij² / (C(C-1)) + λ_b Σ_j b_j² / C``: the off-diagonal weights and the
  intercepts are pulled to 0 (the diagonal is free), which keeps the C² parameters from
  overfitting a small dev set.
* :class:`PlattScaling` (Platt 1999): ``sigmoid(a s + b)`` of a binary score ``s`` (or of
  ``logit(q)`` for a probability ``q``, with ``inputs="probs"``), i.e. unpenalised
  logistic regression on the one score; plain 0/1 targets (no Platt label smoothing), so
  it equals scikit-learn's ``LogisticRegression(penalty=None)``.

Each is an ``nn.Module``: ``fit(dev) -> self``, then calling it maps logits (any device) to
probabilities; the fitted parameters are buffers, so ``state_dict`` round-trips.
"""

from __future__ import annotations

import inspect
import math
import numbers

import torch
import torch.nn.functional as F
from torch import Tensor

from calib_metrics.functional.errors import check_int
from calib_metrics.functional.multiclass import check_class_id_dtype
from calib_metrics.recalibration._common import (
    MASK_FLOOR,
    FittedModule,
    SettingsInState,
    check_binary_target,
    check_finite_optimum,
    check_floating,
    check_nonempty,
    check_temperature_optimum,
    check_tensor,
    constant_rows,
    dropped_padding,
    flat_scores_warning,
    float64_copy,
    labels_against,
    lbfgs,
    logit,
    looks_like_probabilities,
    padding_hint,
    ranks_all_right,
    scores_within_unit,
    typical_gap,
    typical_spread,
    warn_caller,
    warn_inverting,
)

__all__ = ["MatrixScaling", "PlattScaling", "TemperatureScaling", "VectorScaling"]


def check_multiclass(logits: Tensor, target: Tensor) -> Tensor:
    """Validate ``logits [N, C]`` and integer ``target [N]``; return target as long.

    Class ids held as floats or bools are refused, with the hint ``target.long()``, as
    ``TemperatureRecalibration`` and ``calibration_error`` refuse them (whole-number floats
    and bools had been fitted on here). Token logits ``[B, T, C]`` and padding ids (-100)
    are refused with the documented fix (:func:`dropped_padding`), which the messages had
    left out."""
    if logits.ndim != 2 or logits.shape[1] < 2:
        # Token logits: the documented fix both flattens them and drops their padding.
        tokens = (
            f" (token logits? flatten them, dropping any padding: {dropped_padding()})"
            if logits.ndim > 2
            else ""
        )
        raise ValueError(
            f"logits must be [N, C] with C >= 2, got shape {tuple(logits.shape)}{tokens}"
        )
    check_tensor(target, "target")
    if tuple(target.shape) != (logits.shape[0],):
        raise ValueError(
            f"target must be [N] = ({logits.shape[0]},) to match logits "
            f"{tuple(logits.shape)}, got {tuple(target.shape)}"
        )
    check_class_id_dtype(target)
    target = target.long()
    num_classes = logits.shape[1]
    outside = (target < 0) | (target >= num_classes)
    if bool(outside.any()):
        bad = int(target[outside][0])
        raise ValueError(
            f"target must hold class indices in [0, {num_classes}), got {bad}{padding_hint(bad)}"
        )
    seen = target.unique()
    if int(seen.numel()) == 1:  # no item at all is refused before
        # With three classes or more the NLL may have an optimum; it calibrates nothing
        # but how sharply that class is predicted (the message had said "cannot").
        raise ValueError(
            f"target holds a single class ({int(seen[0])} for every item): a recalibrator "
            "fitted on it would only set how sharply that class is predicted; fit on dev "
            "data where at least two classes occur"
        )
    return target


def _check_penalty(name: str, value: object) -> float:
    """A penalty weight as a float. NaN, inf or a bool had been accepted when the scaler was
    built, and NaN and inf failed only at fit, as "did not converge (NaN loss)"."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


# Where -inf class masks go, said to a caller whose scores take none.
_MASKS_GO = "-inf class masks are taken by TemperatureScaling of multiclass logits [..., C] only"


def check_logits(
    logits: object,
    *,
    fitting: bool = True,
    masks: bool = False,
    no_masks: str = _MASKS_GO,
    name: str = "logits",
) -> Tensor:
    """Floating and finite; when ``fitting``, at least 1-D and non-empty (a fitted binary
    module maps scores of any shape, a 0-dim one or an empty batch included). With
    ``masks`` (multiclass logits ``[..., C]`` of a temperature), ``-inf`` entries are
    masked classes, and a row needs one class that is not masked. Without, a ``-inf`` is
    refused with ``no_masks``, what to change for masks. Errors call the input ``name``."""
    logits = _check_form(logits, fitting, name)
    if masks and logits.ndim >= 1:
        _check_class_masks(logits)
    elif not bool(torch.isfinite(logits).all()):
        _refuse_infinite(logits, name, no_masks)
    return logits


def _check_form(values: object, fitting: bool, name: str = "logits") -> Tensor:
    """A floating tensor; when ``fitting``, at least 1-D and non-empty (no host read). The
    input is ``name``d as the module takes it: probabilities had been called "logits"."""
    values = check_tensor(values, name)
    check_floating(values, name)
    if fitting:
        if values.ndim == 0:
            raise ValueError(f"{name} must have at least one dimension, got a 0-dim tensor")
        check_nonempty(values, name)
    return values


def _refuse_infinite(values: Tensor, name: str, no_masks: str) -> None:
    """Refuse ``values`` (the input ``name``) that hold NaN or an infinity, saying
    ``no_masks`` where every one is a ``-inf``, which may have been meant as a mask."""
    only_masks = not bool((torch.isnan(values) | torch.isposinf(values)).any())
    raise ValueError(
        f"{name} contains NaN or infinite values" + (f" ({no_masks})" if only_masks else "")
    )


def _check_probs_input(probs: object, *, fitting: bool, rows: bool, no_masks: str) -> Tensor:
    """:func:`_check_form` of probabilities, finite (else refused with ``no_masks``, as by
    :func:`check_logits`) and in ``[0, 1]``; as multiclass ``rows`` ``[..., C]``, none all 0,
    which leaves no class to predict (a 0 is a masked class, :func:`_log_probs`). One host
    read for all of it, as the logits' check: a fitted scaler's call reads nothing else of
    its input (the checks had been four reads, the finiteness twice)."""
    probs = _check_form(probs, fitting, "probs")
    checks = [~torch.isfinite(probs).all(), ((probs < 0) | (probs > 1)).any()]
    if rows and probs.ndim >= 1:
        checks.append(_rows_all(probs == 0).any())
    bad, outside, *empty = torch.stack(checks).tolist()
    if bad:
        _refuse_infinite(probs, "probs", no_masks)
    if outside:
        raise ValueError(
            "probs must lie in [0, 1]: pass probabilities, not logits (or build the module "
            "with inputs='logits')"
        )
    if any(empty):
        _refuse_all_masked(probs == 0, "probs", "0")
    return probs


def _check_class_masks(logits: Tensor) -> None:
    """No NaN or +inf; -inf (a masked class) is fine, but not in every class of a row,
    which leaves no class to predict (one host read)."""
    bad, empty = torch.stack(
        [(torch.isnan(logits) | torch.isposinf(logits)).any(), _all_masked(logits).any()]
    ).tolist()
    if bad:
        raise ValueError("logits contains NaN or +inf (-inf, a masked class, is fine)")
    if empty:
        _refuse_all_masked(logits == -math.inf, "logits", "-inf")


def _refuse_all_masked(masked: Tensor, name: str, mask: str) -> None:
    """Name the first row of the input ``name`` (``masked``: where its entries are masks,
    which read ``mask``) that is masked in every class."""
    # One row [C] has no index to name (it had read "logits[] is -inf").
    row = _rows_all(masked).nonzero()[0].tolist() if masked.ndim > 1 else None
    where = f"{name}{row}" if row is not None else f"the row of {name} {list(masked.shape)}"
    raise ValueError(f"{where} is {mask} in every class: a row needs one class that is not masked")


def _log_probs(probs: Tensor) -> Tensor:
    """``log p`` (float64) of multiclass probabilities, a 0 read as a masked class: ``-inf``,
    as the logits' masks, which every temperature keeps at probability 0. Clamped at 1e-12,
    a 0 had been a logit of -27.6 that ``T > 1`` raised (up to 0.26% of the mass on classes
    the model ruled out, and another ``T`` than the masked logits'); only a fit reads a
    target's 0 so (:meth:`TemperatureScaling._dev_logits`). The gradient to ``p`` stays
    finite at a 0 (``log`` of it is never taken). No host read: a row all 0 is refused by
    :func:`_check_probs_input`."""
    p = probs.to(torch.float64)
    zero = p == 0
    return p.masked_fill(zero, 1.0).log().masked_fill(zero, -math.inf)


def _all_masked(logits: Tensor) -> Tensor:
    """Which rows are -inf in every class (none of a row of no classes, refused later)."""
    return _rows_all(logits == -math.inf)


def _rows_all(masked: Tensor) -> Tensor:
    """Which rows of ``masked`` ``[..., C]`` are True in every class (none of a row of no
    classes, refused later)."""
    if masked.shape[-1] == 0:
        return torch.zeros(masked.shape[:-1], dtype=torch.bool, device=masked.device)
    return masked.all(-1)


def _sums_to_one(rows: Tensor) -> Tensor:
    """Which ``rows`` (last dim ``C``) sum to 1 to their dtype's rounding, as a softmax's
    do (a few ulps; float32's of 50000 classes by 27), keeping the dim: those a map at the
    identity returns as they are (no host read).

    Example:
        >>> _sums_to_one(torch.tensor([[0.5, 0.3, 0.2], [0.5, 0.3, 0.1]])).tolist()
        [[True], [False]]
    """
    eps = torch.finfo(rows.dtype).eps
    total = rows.sum(-1, keepdim=True, dtype=torch.float64)
    # A softmax sums its C terms in at least float32: the growth with C is float32's, not
    # a half precision's (bfloat16's eps·√C had let a row of 50000 classes sum to 0.4).
    summed = min(eps, torch.finfo(torch.float32).eps) * math.sqrt(rows.shape[-1])
    return (total - 1).abs() <= 8 * eps + summed


def _margins(out: Tensor, y: Tensor, binary: bool) -> Tensor:
    """Each item's label score minus the best other class's (binary: the signed score)."""
    if binary:
        return torch.where(y == 1, out, -out)
    own = out.gather(1, y.unsqueeze(1)).squeeze(1)
    others = out.scatter(1, y.unsqueeze(1), float("-inf")).amax(1)
    return own - others


class _LogitScaler(SettingsInState, FittedModule):
    """Common fit/forward of the scalers: subclasses say how logits are transformed."""

    binary_ok = False
    # Whether multiclass logits may mask classes with -inf (kept -inf by the map).
    class_masks = False
    # Whether binary scores that all lie in [0, 1] are worth a word: a temperature of
    # sigmoid outputs is not the model's; Platt scaling maps scores of any range.
    binary_unit_scores_suspect = True
    # Whether a fit takes multiclass logits [N, C] (PlattScaling's takes binary scores only).
    multiclass_ok = True
    # What its errors call logits, as its fit's argument is named (PlattScaling: scores).
    input_name = "logits"
    settings = ("inputs",)

    def __init__(self, max_iter: int = 200, inputs: str = "logits") -> None:
        super().__init__()
        check_int("max_iter", max_iter)
        if inputs not in ("logits", "probs"):
            raise ValueError(f"inputs must be 'logits' or 'probs', got {inputs!r}")
        self.max_iter = max_iter
        self.inputs = inputs
        # 0 until fitted; 1 for binary scores [N], else C.
        self.register_buffer("num_classes", torch.tensor(0))

    def check_state(self, state: dict[str, Tensor]) -> None:
        """Also a ``num_classes`` that a fit keeps (:meth:`_check_num_classes`)."""
        super().check_state(state)
        self._check_num_classes(state)

    def _check_num_classes(self, state: dict[str, Tensor]) -> None:
        """Refuse a ``num_classes`` that no fit keeps: once fitted, 1 for binary scores and
        ``C >= 2`` for logits ``[N, C]``, where the kind takes them (0 before the fit).
        Loaded, 1.5 had been read as 1 (each logit through its own sigmoid, rows not
        summing to 1), 0 or -3 had skipped the call's check of ``C``, and a PlattScaling
        state of 3 classes refused every binary call (one host read each)."""
        classes, fitted = (state.get(k, self._buffers[k]) for k in ("num_classes", "fitted"))
        if classes.is_meta or fitted.is_meta:  # a module built on meta, assigned a partial state
            return
        value, done = classes.item(), bool(fitted)
        kinds = {
            "1 for binary scores [N]": self.binary_ok,
            "the number of classes C >= 2 of logits [N, C]": self.multiclass_ok,
        }
        taken = [what for what, ok in kinds.items() if ok]
        whole = math.isfinite(value) and value == int(value)
        if done:
            kept_here = (self.binary_ok and value == 1) or (self.multiclass_ok and value >= 2)
        elif "fitted" in state:  # a fit sets num_classes with the flag: 3 unfitted had loaded
            kept_here = value == 0
        else:  # a partial state without its flag (strict=False): the caller completes it
            kept_here = value >= 0
        if whole and kept_here:
            return
        fits = " or ".join(taken)
        raise ValueError(
            f"{self.said_as}: the state's num_classes is {value:g}"
            f"{' (fitted)' if done else ' (not fitted)'}, where a fit keeps {fits} (0 before "
            "the fit): load a state this kind saved"
        )

    def _init_params(self, num_classes: int, device: torch.device) -> list[Tensor]:
        raise NotImplementedError

    def _start(self, num_classes: int, device: torch.device) -> list[Tensor]:
        """The free parameters a fit starts from, :meth:`_check_separable`'s too:
        :meth:`_init_params`, here."""
        return self._init_params(num_classes, device)

    def _constrain(self, free: list[Tensor]) -> list[Tensor]:
        """Free (optimised) parameters -> the stored ones (e.g. ``log T`` -> ``T``)."""
        return free

    def _transform(self, z: Tensor, params: list[Tensor]) -> Tensor:
        raise NotImplementedError

    def _penalty(self, params: list[Tensor]) -> Tensor | float:
        return 0.0

    def _unpenalised(self, params: list[Tensor]) -> list[Tensor] | None:
        """Masks of ``params``, 1 where no penalty holds an entry; None if none is held."""
        return None

    def _store(self, params: list[Tensor]) -> None:
        raise NotImplementedError

    def _stored(self) -> list[Tensor]:
        raise NotImplementedError

    def _describe(self, params: list[Tensor]) -> str:
        """The fitted parameters in a few words, for errors."""
        largest = max(float(p.abs().max()) for p in params)
        return f"parameters up to {largest:.3g} in size"

    def _prepare_input(self, logits: Tensor, binary: bool) -> Tensor:
        """Probabilities become logits: ``logit(q)`` of binary scores, clamped at 1e-12 so
        that 0 and 1 stay finite (a binary score is a log-odds, never a class mask: a 0 or
        1 is often a rounding), and ``log p`` of multiclass rows, a 0 a masked class
        (:func:`_log_probs`).

        Which of the two is the model's kind (binary: fitted on ``[N]``), never the input's
        number of dimensions: binary scores of a batch of sentences ``[B, T]`` are still
        binary, one multiclass row ``[C]`` still multiclass. The input is checked
        (:meth:`_check_input`): no host read here.
        """
        if self.inputs == "logits":
            return logits
        return logit(logits) if binary else _log_probs(logits)

    @property
    def _input_noun(self) -> str:
        """What errors call the input: ``probs``, or the fit's own name for logits."""
        return "probs" if self.inputs == "probs" else self.input_name

    def _masks(self, binary: bool) -> bool:
        """Whether these logits may hold -inf class masks."""
        return self.class_masks and not binary and self.inputs == "logits"

    def _check_input(self, logits: object, binary: bool, fitting: bool = True) -> Tensor:
        """:func:`check_logits` of this module's input, with -inf class masks where it takes
        them, or :func:`_check_probs_input` of probabilities (one host read either way);
        where it takes no masks, the refusal says what to change for the case at hand."""
        no_masks = _MASKS_GO
        if self.inputs == "probs":
            no_masks = (
                "probabilities lie in [0, 1], a masked class's at 0; for -inf class masks, "
                "pass logits [N, C] to TemperatureScaling(inputs='logits')"
                if self.class_masks
                else "probabilities lie in [0, 1], a masked class's at 0"
            )
            return _check_probs_input(logits, fitting=fitting, rows=not binary, no_masks=no_masks)
        if self.class_masks and binary:
            no_masks = (
                "binary scores [N] are log-odds, where -inf is no class mask: for -inf class "
                "masks, pass the classes' logits [N, C], C >= 2, to TemperatureScaling"
            )
        return check_logits(
            logits,
            fitting=fitting,
            masks=self._masks(binary),
            no_masks=no_masks,
            name=self.input_name,
        )

    def fit(self, logits: Tensor, target: Tensor) -> _LogitScaler:
        """Fit on held-out ``logits`` ``[N, C]`` with class ids ``target`` ``[N]`` (or, where
        the kind takes them, binary scores ``[N]`` with 0/1 labels); returns ``self``.

        Token logits ``[B, T, C]`` with padding (HuggingFace's -100) are flattened and the
        padding dropped first, ``keep = target != -100; fit(logits[keep], target[keep])``;
        the fitted module then takes logits of any leading shape, ``[B, T, C]`` included.
        """
        binary = check_tensor(logits, self._input_noun).ndim == 1
        given = self._check_input(logits, binary)
        logits = self._prepare_input(given, binary)
        if binary and not self.binary_ok:
            raise ValueError(
                f"{type(self).__name__} needs multiclass logits [N, C], got shape "
                f"{tuple(logits.shape)}"
            )
        if binary:
            y = check_binary_target(target, logits, self._input_noun)
        else:
            y = check_multiclass(logits, target)
        suspicion = self._probabilities_note(given, binary)
        num_classes = 1 if binary else logits.shape[1]
        # A mask of float64's lowest value overflows to -inf once divided by T < 1, and the
        # gradient with it (NaN loss); any logit beyond ±MASK_FLOOR decides its probability
        # (0 or 1) there as at the floor. Both sides: a binary score is a log-odds either way.
        _refuse_clamped(logits, binary)
        z = float64_copy(logits).clamp(MASK_FLOOR, -MASK_FLOOR)
        y = y.detach().clone()
        z = self._dev_logits(z, y)
        used, y_used = self._informative(z, y)
        try:
            fitted = self._fit_params(used, y_used, num_classes)
            self._check_optimum(used, y_used, fitted)
            self._check_separable(used, y_used, fitted)
        except ValueError as refusal:  # the likelier cause first, in the one message
            if suspicion:
                raise RefusedProbabilities(suspicion, str(refusal)) from None
            raise
        if suspicion:
            warn_caller(f"{suspicion}; fitted as logits, the result is not the model's")
        if used is not z:  # nll_ is the mean over every dev item
            with torch.no_grad():
                self.nll_ = float(self._nll(z, y, fitted))
        self._store(fitted)
        self.num_classes = torch.tensor(num_classes, device=self.num_classes.device)
        self.fitted = torch.tensor(True, device=self.fitted.device)
        return self

    def _probabilities_note(self, logits: Tensor, binary: bool) -> str:
        """What to say when the logits a fit is given look like probabilities ('' when
        they do not; one host read): softmax rows had been fitted silently (T = 0.30 where
        the logits' own was 1), as the Lightning callback, given them, refuses to. A fit
        that goes ahead warns of it; a refused one names it first, before the refusal (a
        warning that said "fitted as logits" had come before an error blaming the data)."""
        if self.inputs != "logits":
            return ""
        name = type(self).__name__
        # Only the kinds that take probabilities are told to (VectorScaling has no inputs=).
        takes_probs = "inputs" in inspect.signature(type(self)).parameters
        or_probs = ", or build it with inputs='probs'" if takes_probs else ""
        if not binary and looks_like_probabilities(logits):
            return (
                f"{name}: the logits it is fitted on are probabilities (every row in "
                f"[0, 1], summing to 1): pass the scores before the softmax{or_probs}"
            )
        if binary and self.binary_unit_scores_suspect and scores_within_unit(logits):
            return (
                f"{name}: every binary score it is fitted on lies in [0, 1]: if they are "
                f"sigmoid outputs, pass the scores before the sigmoid{or_probs}"
            )
        return ""

    def _dev_logits(self, z: Tensor, y: Tensor) -> Tensor:
        """The dev logits ``z`` (float64, masks at :data:`MASK_FLOOR`) as fitted, and as
        their dev NLL ``nll_`` counts them: as they are, here."""
        return z

    def _informative(self, z: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """The dev items that say something of the parameters (all of them, here): the fit
        and its checks see only these."""
        return z, y

    def _nll(self, z: Tensor, y: Tensor, params: list[Tensor]) -> Tensor:
        """The mean dev NLL plus the penalty at the stored-form ``params``."""
        out = self._transform(z, params)
        if out.ndim == 1:
            nll = F.binary_cross_entropy_with_logits(out, y)
        else:
            nll = F.cross_entropy(out, y)
        return nll + self._penalty(params)

    def _check_separable(self, z: Tensor, y: Tensor, fitted: list[Tensor]) -> None:
        """:func:`check_finite_optimum` of the fit, which runs off exactly when some
        direction of the unpenalised parameters ranks every item right (the scaled logits
        are linear in the parameters); a penalised one costs more the further it goes.

        A penalised fit may rank every item right at a finite optimum: a bias shift that
        ``bias_l2`` holds (the default ``MatrixScaling`` had refused such data as having
        no finite optimum). Its margins then say nothing, and those checked are of a fit
        of the unpenalised parameters alone, the others held at 0, which ranks every item
        right when such a direction exists, as far as L-BFGS goes: a tie group of mixed
        labels that the direction keeps tied leaves no item of it strictly right, and such
        data (separable but for ties) still fit wherever the fit stops, as before; an
        exact test needs a linear program."""
        masks = self._unpenalised(fitted)
        margins = self._margins_at(z, y, fitted)
        if masks is not None and ranks_all_right(margins):
            free = self._start(z.shape[-1] if z.ndim == 2 else 1, z.device)

            def alone() -> list[Tensor]:
                return [p * m for p, m in zip(self._constrain(free), masks)]

            lbfgs(free, lambda: self._nll(z, y, alone()), self.max_iter)
            margins = self._margins_at(z, y, [p.detach() for p in alone()])
        check_finite_optimum(margins, self._describe(fitted))

    def _margins_at(self, z: Tensor, y: Tensor, params: list[Tensor]) -> Tensor:
        with torch.no_grad():
            return _margins(self._transform(z, params), y, z.ndim == 1)

    def _check_optimum(self, z: Tensor, y: Tensor, fitted: list[Tensor]) -> None:
        """Refuse a fit that ran off to a flat end it can reach (a temperature at ``∞``);
        nothing to check for a scaler without a temperature."""

    def _fit_params(self, z: Tensor, y: Tensor, num_classes: int) -> list[Tensor]:
        """The fitted parameters (detached, in stored form), and ``nll_``: L-BFGS on the dev
        NLL from :meth:`_start`."""
        return self._descend(self._start(num_classes, z.device), z, y)

    def _descend(self, free: list[Tensor], z: Tensor, y: Tensor) -> list[Tensor]:
        """L-BFGS on the dev NLL from the free parameters ``free``: the fitted ones, detached
        and in stored form; ``nll_`` its value there (the penalty included)."""
        self.nll_ = lbfgs(free, lambda: self._nll(z, y, self._constrain(free)), self.max_iter)
        return [p.detach() for p in self._constrain(free)]

    def forward(self, logits: Tensor) -> Tensor:
        """Probabilities: softmax over the last dim ``C``, or the sigmoid of binary scores.

        Probabilities (``inputs="probs"``) where the fitted map is the identity
        (:meth:`_at_identity`: ``T = 1`` exactly, or Platt's slope 1 and intercept 0) are
        returned as they are, in a new tensor: the round trip through ``logit`` and
        ``sigmoid`` (or ``log`` and ``softmax``) moved a third of them by an ulp, and a map
        kept at ``T = 1`` read as a significant change. A multiclass row is returned as it
        is only when it sums to 1 (to rounding, :func:`_sums_to_one`); another is
        normalised, as at any ``T`` near 1. The choice is made on the device
        (``torch.where``, no host read), from the parameters as they are now (edited in
        place or not); a parameter that requires grad, with grad on, is never shortcut, so
        that the output's gradient to it is the map's.

        Host synchronisations: one a call, the input's check (finite; probabilities in
        ``[0, 1]`` and, multiclass, no row all 0, which has no class left). Whether the
        module is fitted, and its number of classes, are read once after a fit or a load.
        """
        self.check_fitted()
        c = int(self.host_value("num_classes"))
        checked = self._checked_input(logits, c)
        params = [p.to(checked.device) for p in self._stored()]
        z = self._map(checked, c, params)
        probs = (torch.sigmoid(z) if c == 1 else torch.softmax(z, -1)).to(checked.dtype)
        if self.inputs != "probs" or (
            torch.is_grad_enabled() and any(p.requires_grad for p in params)
        ):
            return probs
        same = self._at_identity(params)
        if same is None:
            return probs
        if c > 1:
            same = same & _sums_to_one(checked)
        return torch.where(same, checked, probs)

    def _at_identity(self, params: list[Tensor]) -> Tensor | None:
        """Whether the map of ``params`` leaves every input as it is: a 0-dim bool tensor on
        their device, or None where no value of them does."""
        return None

    def calibrated_logits(self, logits: Tensor) -> Tensor:
        """The recalibrated logits (float64), before the softmax or sigmoid; the host
        synchronisations of :meth:`forward`."""
        self.check_fitted()
        return self._calibrated(logits, int(self.host_value("num_classes")))

    def _checked_input(self, logits: object, c: int) -> Tensor:
        """``logits`` of a call of a fitted model of ``c`` classes (1: binary), checked."""
        logits = self._check_input(logits, c == 1, fitting=False)
        if c > 1 and (logits.ndim == 0 or logits.shape[-1] != c):
            raise ValueError(f"logits must end in C = {c} classes, got shape {tuple(logits.shape)}")
        return logits

    def _calibrated(self, logits: Tensor, c: int) -> Tensor:
        """:meth:`calibrated_logits` of a fitted model of ``c`` classes (1: binary)."""
        checked = self._checked_input(logits, c)
        return self._map(checked, c, [p.to(checked.device) for p in self._stored()])

    def _map(self, checked: Tensor, c: int, params: list[Tensor]) -> Tensor:
        """The recalibrated logits (float64) of a checked input, at ``params``."""
        logits = self._prepare_input(checked, binary=c == 1)
        return self._transform(logits.to(torch.float64), params)


def _refuse_clamped(logits: Tensor, binary: bool) -> None:
    """Refuse scores the fit would clamp at ``-MASK_FLOOR`` = 1e200: a binary score beyond
    ±1e200 or a multiclass logit above it (one below -1e200 is a mask). Clamped, scores of
    that scale had been fitted silently wrong (T/scale 0.99 for 1.89 at 1e200, 1e-50 times
    it at 1e250). One host read.

    Example:
        >>> _refuse_clamped(torch.tensor([3e200, -1.0, 2.0], dtype=torch.float64), binary=True)
        Traceback (most recent call last):
        ...
        ValueError: 1 of 3 scores lie beyond ±1e200, where the fit clamps them: divide ...
    """
    beyond = logits.abs() > -MASK_FLOOR if binary else logits > -MASK_FLOOR
    count = int(beyond.sum())
    if count:
        noun, bound = ("scores", "±1e200") if binary else ("logits", "+1e200")
        raise ValueError(
            f"{count:,} of {logits.numel():,} {noun} lie beyond {bound}, where the fit clamps "
            "them: divide them by a constant, at fit and at call alike (the weights absorb "
            "it: temperature, Platt and vector scaling fit the same probabilities)"
        )


class TemperatureScaling(_LogitScaler):
    """Temperature scaling: ``softmax(logits / T)`` (or ``sigmoid(scores / T)``), ``T > 0``.

    ``fit(logits [N, C] or [N], target [N])`` minimises the dev NLL over ``log T`` by L-BFGS
    in float64; calling the fitted module on logits ``[..., C]`` (or binary scores of any
    shape) returns probabilities. The arg-max, hence accuracy, never changes.

    Args:
        max_iter: L-BFGS iterations.
        inputs: ``"logits"``, or ``"probs"`` for probabilities (a model that gives no
            logits): binary ``q`` ``[N]`` are used through ``logit(q)`` (clamped at
            1e-12: a binary 0 or 1 is a score, and moves with the others), multiclass
            ``p`` ``[N, C]`` through ``log p``, where a 0 is a masked class (``-inf``): it
            stays 0 at every ``T``, and the fit gives the ``T`` of the masked logits. An
            item whose target has probability 0 (a float16 softmax underflows to 0 below
            6e-8) is fitted with that one entry at ``log 1e-12``, with a warning; logits
            avoid it. A row all 0 is refused.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> logits = 3 * torch.randn(2000, 4, generator=g)   # overconfident by 3x
        >>> target = torch.multinomial(torch.softmax(logits / 3, -1), 1, generator=g)[:, 0]
        >>> ts = TemperatureScaling().fit(logits, target)
        >>> 2.5 < ts.temperature.item() < 3.5
        True
        >>> ts(logits).shape
        torch.Size([2000, 4])
        >>> TemperatureScaling().load_state_dict(ts.state_dict())
        <All keys matched successfully>
    """

    binary_ok = True
    class_masks = True
    positive = ("temperature",)

    def __init__(self, max_iter: int = 200, inputs: str = "logits") -> None:
        super().__init__(max_iter, inputs)
        self.register_buffer("temperature", torch.tensor(1.0, dtype=torch.float64))

    def _init_params(self, num_classes: int, device: torch.device) -> list[Tensor]:
        return [torch.zeros((), dtype=torch.float64, device=device, requires_grad=True)]

    def _constrain(self, free: list[Tensor]) -> list[Tensor]:
        return [free[0].exp()]  # fitted on log T, so T stays positive

    def _transform(self, z: Tensor, params: list[Tensor]) -> Tensor:
        """``z / T``, a -inf class mask kept -inf without a NaN gradient: d(-inf / T)/dT is
        inf times the softmax's 0 there, and ``torch.where`` of ``z / T`` alone passes that
        NaN back to ``T`` through the branch it does not select; so the division sees a
        masked entry as 0."""
        masked = torch.isneginf(z)
        return torch.where(masked, z, z.masked_fill(masked, 0.0) / params[0])

    def _describe(self, params: list[Tensor]) -> str:
        return f"T = {float(params[0]):.3g}"

    def _dev_logits(self, z: Tensor, y: Tensor) -> Tensor:
        """Refuse an item whose target class the logits mask: no temperature gives it any
        probability. Probabilities are another matter: a 0 is often an underflow (a
        float16 softmax is 0 below 6e-8, a logit gap above ~17), and refusing the fit for
        one confidently wrong item among 10⁵ had been too harsh; an item whose target has
        probability 0 is fitted with its target's log-probability at ``log 1e-12``
        (:data:`_TARGET_FLOOR`, the clamp every 0 had before a 0 became a mask), the rest
        of its row as it is, with a warning. One host read (none for binary scores, which
        have no masks)."""
        if z.ndim != 2:
            return z
        own = z.gather(1, y.unsqueeze(1))
        masked = own.squeeze(1) <= MASK_FLOOR
        count = int(masked.sum())
        if not count:
            return z
        first = int(masked.nonzero()[0, 0])
        if self.inputs == "logits":
            raise ValueError(
                f"logits[{first}] masks its target class {int(y[first])} (-inf): no "
                "temperature gives it any probability; unmask the target class or leave the "
                "item out"
            )
        _warn_of_zero_targets(count, first, int(y[first]))
        return z.scatter(1, y.unsqueeze(1), own.masked_fill(masked.unsqueeze(1), _TARGET_FLOOR))

    def _informative(self, z: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Multiclass items with two allowed classes or more (those not masked: logits
        above :data:`MASK_FLOOR`; a masked target is refused or floored before,
        :meth:`_dev_logits`). An item that allows its target alone has probability 1 at
        every ``T`` and says nothing of it; its margin over masked classes had made data
        "separable" (every item allowed only its target: refused, where ``T`` is merely
        unset). ``one_class_items_`` counts those left out (one host read)."""
        self.one_class_items_ = 0
        if z.ndim != 2:
            return z, y
        allowed = z > MASK_FLOOR
        several = allowed.sum(1) >= 2
        self.one_class_items_ = int((~several).sum())
        if not self.one_class_items_:
            return z, y
        return z[several], y[several]

    def _fit_params(self, z: Tensor, y: Tensor, num_classes: int) -> list[Tensor]:
        """L-BFGS, unless the scores do not depend on ``T`` (binary: all 0; multiclass:
        each row's logits all equal on its classes that are not masked): then ``T = 1``,
        with a warning.

        A masked class (``-inf``, or any logit at or below :data:`MASK_FLOOR`, where ``z``
        holds it) is left out of the start and of the flatness test, as it is of the
        softmax at every ``T``; items with one allowed class are left out before
        (:meth:`_informative`)."""
        allowed = z > MASK_FLOOR if z.ndim == 2 else None
        if allowed is not None and z.shape[0] == 0:
            self.flat_ = True
            fitted = [torch.ones((), dtype=torch.float64, device=z.device)]
            self.nll_ = 0.0  # every item has probability 1 at every T
            flat_scores_warning(
                type(self).__name__,
                f"logits of {self.one_class_items_} items",
                how="allow one class each, the target (no item has two allowed classes: the "
                "others are masked)",
            )
            return fitted
        self.flat_ = constant_rows(z, allowed) if z.ndim == 2 else not bool(z.any())
        if not self.flat_:
            # Fitted in units of the scores' top gap (:func:`typical_gap`), so that it
            # starts where ``z / T`` is O(1); binary scores are class 1's logit against a
            # class 0 fixed at 0.
            rows = torch.stack([torch.zeros_like(z), z], -1) if z.ndim == 1 else z
            size = typical_gap(rows if allowed is None else rows.masked_fill(~allowed, -math.inf))
            (temperature,) = super()._fit_params(z / size, y, num_classes)
            return [temperature * size]
        fitted = [torch.ones((), dtype=torch.float64, device=z.device)]
        with torch.no_grad():
            self.nll_ = float(self._nll(z, y, fitted))
        if z.ndim == 1:
            flat_scores_warning(type(self).__name__, f"{z.shape[0]} scores", how=_ALL_ZERO)
        else:
            flat_scores_warning(type(self).__name__, f"logits of {z.shape[0]} items")
        return fitted

    def _check_optimum(self, z: Tensor, y: Tensor, fitted: list[Tensor]) -> None:
        """:func:`check_temperature_optimum` with the slope ``dNLL/dβ`` at ``β = 1/T = 0``:
        the mean of ``mean_j z_j - z_y`` (binary, where ``β z`` is class 1's logit against
        a class 0 fixed at 0: the mean of ``z (1/2 - y)``)."""
        if self.flat_:
            return
        with torch.no_grad():
            if z.ndim == 1:
                slope = (z * (0.5 - y)).mean()
                uniform = self._nll(z, y, [torch.full_like(fitted[0], math.inf)])
                scale = z.abs().max()
            else:
                # Over each row's classes that are not masked: at T = ∞ a masked class
                # stays masked, and the others are uniform.
                allowed = z > MASK_FLOOR
                kept = torch.where(allowed, z, 0.0)
                count = allowed.sum(1)
                own = z.gather(1, y.unsqueeze(1)).squeeze(1)
                slope = (kept.sum(1) / count - own).mean()
                uniform = count.to(z.dtype).log().mean()
                scale = kept.abs().max()
            slope, scale, nll, uniform = torch.stack(
                [slope, scale, self._nll(z, y, fitted), uniform]
            ).tolist()
        check_temperature_optimum(slope, scale, nll, uniform, self._describe(fitted), "scores")

    def _at_identity(self, params: list[Tensor]) -> Tensor | None:
        return params[0] == 1

    def _store(self, params: list[Tensor]) -> None:
        self.temperature = params[0].to(self.temperature.device)

    def _stored(self) -> list[Tensor]:
        return [self.temperature]


# The per-class scaler whose weight has each number of dimensions: its state loads into it.
_KINDS = {1: "VectorScaling", 2: "MatrixScaling"}


# A fit reads a target's probability 0 at this log-probability (TemperatureScaling
# ._dev_logits): the clamp at 1e-12 that every 0 had before a 0 became a masked class.
_TARGET_FLOOR = math.log(1e-12)


def _warn_of_zero_targets(count: int, first: int, target: int) -> None:
    """Say that ``count`` dev items (the first ``first``, of target class ``target``) give
    their target probability 0, fitted at 1e-12, and what avoids it."""
    warn_caller(
        f"TemperatureScaling: {count} dev item{'s' * (count != 1)} with probability 0 on the "
        f"target class (the first: probs[{first}], class {target}), which no temperature "
        "raises: the fit reads that 0 as 1e-12, as a rounding (a float16 softmax is 0 below "
        "6e-8); every 0 stays 0 in the fitted map. The model's logits avoid this: fit on "
        "them where it gives them"
    )


# How binary scores that do not depend on T are (flat_scores_warning).
_ALL_ZERO = "are all 0 (probabilities all 0.5)"


def _temperature_start(z: Tensor, y: Tensor, max_iter: int) -> Tensor:
    """``T`` of the temperature fit of finite logits ``z [N, C]``: the start of vector and
    matrix scaling, which hold its map. Fitted as :class:`TemperatureScaling` fits, on
    ``log T`` from the logits' :func:`typical_gap`, without its checks: data that refuse a
    temperature refuse the per-class fit too, by its own checks."""
    gap = typical_gap(z)
    log_t = torch.zeros((), dtype=torch.float64, device=z.device, requires_grad=True)
    lbfgs([log_t], lambda: F.cross_entropy(z / gap / log_t.exp(), y), max_iter)
    return gap * log_t.detach().exp()


def _weight_units(z: Tensor, temperature: Tensor, matrix: bool) -> Tensor:
    """The units of the per-class weights (``[C, C]``, or ``[C]`` unless ``matrix``), fitted
    from the temperature fit ``T`` of logits ``z``: each the larger of the logits' scale
    and the root of the NLL's curvature in the weight there (:func:`_curvature_roots`).

    The scale is ``T``, capped at the logits' spread (their typical distance from their
    row's median). The spread alone had been the unit, and with classes masked by a large
    finite score (``-1e9``, ``finfo.min``) in most of a row the median is a mask's: the
    unit ~1e9, the NLL flat in the weights, which stayed at ``1 / T`` (6 of 10 classes
    masked at ``-1e9``: vector scaling's dev NLL 1.087908 against the optimum's 1.084830),
    silently. Masks do not move ``T`` (a masked class has probability 0 at every ``T``);
    the cap is for labels that go against the logits, which send ``T`` to ``∞`` (2.7e10
    on logits of size 3), where the weights, whose fit is negative, would be flat.

    A weight of matrix scaling on another class's logits acts on that class's masks too,
    and the NLL is far steeper in it than the scale says: in the scale's unit a weight on
    classes masked at float32's ``finfo.min`` held the fit at the temperature's map. The
    curvature's root measures it. It does not replace the scale: on logits without masks,
    in the curvature's units alone L-BFGS took up to 7 times the loss evaluations.
    """
    scale = torch.fmin(temperature, typical_spread(z - z.median(-1, keepdim=True).values))
    return torch.maximum(scale, _curvature_roots(z, temperature, matrix))


def _curvature_roots(z: Tensor, temperature: Tensor, matrix: bool) -> Tensor:
    """The root of the mean dev NLL's curvature in each weight at the start ``W = I / T``,
    ``b = 0``: in ``W_ij``, ``mean_n p_ni (1 - p_ni) z_nj²`` (``[C, C]``, or its diagonal
    ``[C]`` unless ``matrix``). A masked class has probability 0 there: its own weight's
    curvature counts only the items that allow it, another's weight on it counts its
    masks.

    Each column is measured in units of its largest value, as the square of a mask at
    ``-1e200`` overflows; where its masks are 10¹⁵⁴ times its other logits, the squares of
    those underflow beside the masks' (the class's own weight's curvature then reads 0,
    and the scale of :func:`_weight_units` holds it).
    """
    with torch.no_grad():
        calibrated = z / temperature
        p = torch.softmax(calibrated, -1)
        share = p * (1 - p) / z.shape[0]
        size = calibrated.abs().amax(0)
        size = torch.where(size > 0, size, torch.ones_like(size))
        scaled = (calibrated / size).square()
        curvature = share.t() @ scaled if matrix else (share * scaled).sum(0)
        return temperature * size * curvature.sqrt()


class RefusedProbabilities(ValueError):
    """A refused fit of inputs that look like probabilities: what they look like
    (``note``, said first: the likelier cause) and why the fit was refused (``reason``),
    apart for a caller that says the first in its own words (the Lightning callback)."""

    def __init__(self, note: str, reason: str) -> None:
        super().__init__(f"{note}. The fit was refused: {reason}")
        self.note, self.reason = note, reason

    def __reduce__(self) -> tuple:  # pickled as made (a worker process's error, deepcopy)
        return type(self), (self.note, self.reason), self.__dict__


#: What a partial (``strict=False``) load of a scaler's state leaves of the keys it lacks.
_KEPT = " (a key the state lacks keeps this module's own value)"


class _PerClassScaler(_LogitScaler):
    """Vector and matrix scaling: each class has its own bias and weights, so a class absent
    from the dev target gives them nothing to fit but "less of it"."""

    bias_l2: float
    # Whether the weights on other classes' logits are free too (the whole row of W).
    whole_row_free = False

    def _other_kind(self, name: str, incoming: Tensor) -> str:
        kind = _KINDS.get(incoming.ndim) if name == "weight" else None
        if kind is None:
            return super()._other_kind(name, incoming)
        return f"the state is a {kind}'s: load it into a {kind} ({kind}().load_state_dict(state))"

    def _check_num_classes(self, state: dict[str, Tensor]) -> None:
        """First one number of classes ``C`` throughout: weight [C] (vector scaling) or
        [C, C] (matrix scaling), bias [C], ``num_classes`` C (0 before the fit)."""
        # The module as the load leaves it: a key missing from a strict=False load keeps its
        # buffer (a fitted state without its bias had loaded, and every call then failed).
        weight, bias, classes, fitted = (
            state.get(k, self._buffers[k]) for k in ("weight", "bias", "num_classes", "fitted")
        )
        if classes.is_meta or fitted.is_meta:  # a module built on meta, loaded with assign=True
            return
        missing = {"weight", "bias", "num_classes", "fitted"} - state.keys()
        c = bias.shape[0]
        counted = classes.item()
        if tuple(weight.shape) != (c,) * weight.ndim or counted != c or (bool(fitted) and c == 0):
            raise ValueError(
                f"{type(self).__name__}: the state's weight has shape {list(weight.shape)}, "
                f"its bias {list(bias.shape)} and its num_classes {counted:g}: they do not "
                "describe one model of C classes (weight "
                f"{'[C]' if weight.ndim == 1 else '[C, C]'}, bias [C], num_classes C, and "
                f"C > 0 once fitted){_KEPT * bool(missing)}"
            )
        super()._check_num_classes(state)

    def _fit_params(self, z: Tensor, y: Tensor, num_classes: int) -> list[Tensor]:
        """L-BFGS from the temperature fit (``W = I / T``, ``b = 0``), the weights in units of
        the logits' scale or of the NLL's curvature in them there (:meth:`_units_of_weights`).

        L-BFGS stops on absolute tolerances: from ``W = I`` in absolute units, logits ×1e-7
        left the NLL flat (the weights kept at 1, a bias-only fit, dev NLL above the
        temperature's) and logits ×1e6 stopped short. In these units the unpenalised fit of
        ``c z`` is the fit of ``z`` with ``W / c``; :meth:`_constrain` folds the units back
        into ``W``, so the penalties weigh the weights as stored.

        The fit ends at or below the temperature's NLL, with no check: it starts at that
        map, where no penalty holds anything, and L-BFGS only descends (its strong-Wolfe
        line search returns the lowest point it tried, the start included). A warning had
        guarded "the fit ended above the temperature's", which L-BFGS cannot reach, and its
        advice, raise ``max_iter``, could not have helped."""
        self._check_absent_classes(z, y)
        self._temperature = _temperature_start(z, y, self.max_iter)
        self._weight_units = self._units_of_weights(z, self._temperature)
        return super()._fit_params(z, y, num_classes)

    def _start(self, num_classes: int, device: torch.device) -> list[Tensor]:
        """The temperature fit's map, ``W = I / T``, ``b = 0``, in the fitted units, for
        the fit and for the check of separable data, which fits the unpenalised parameters
        from it: ``W = I`` in these units (each weight in its own unit) is no temperature's
        map, and on separable data it need not rank every item right where ``I / T``
        does."""
        free = self._init_params(num_classes, device)
        with torch.no_grad():
            free[0].mul_(self._weight_units / self._temperature)
        return free

    def _units_of_weights(self, z: Tensor, temperature: Tensor) -> Tensor:
        """The units of the weights as fitted (stored ``W`` = fitted / units) for logits
        ``z`` fitted from temperature ``T``: :func:`_weight_units`."""
        return _weight_units(z, temperature, matrix=False)

    def _constrain(self, free: list[Tensor]) -> list[Tensor]:
        """The weights, fitted in the units of :meth:`_units_of_weights`, in the logits'
        own units."""
        weight, bias = free
        return [weight / self._weight_units, bias]

    def _check_absent_classes(self, z: Tensor, y: Tensor) -> None:
        """Refuse a class absent from ``y`` whose own parameters can lower its logit on
        every item without a penalty: the NLL then falls without end (its probability
        going to 0, which wrecked test items of the class: NLL 1.23 to 8.0), with no finite
        optimum. Its bias can when unpenalised; an unpenalised weight can when the logit
        it multiplies has one sign on every dev item (for the whole row of W, a sufficient
        test, not an exact one). Otherwise the penalty holds the fit finite, but it still
        lowers the class everywhere: a warning."""
        c = z.shape[1]
        one_sign = ((z >= 0).all(0) & (z > 0).any(0)) | ((z <= 0).all(0) & (z < 0).any(0))
        absent, one_sign = torch.stack([y.bincount(minlength=c) == 0, one_sign]).tolist()
        classes = [k for k in range(c) if absent[k]]
        if not classes:
            return
        name = type(self).__name__
        plural = len(classes) > 1
        said = (f"class{'es' if plural else ''} {', '.join(map(str, classes))} never "
                f"occur{'' if plural else 's'} in the held-out target")  # fmt: skip
        advice = (
            "fit on held-out data that hold every class, or fit TemperatureScaling, whose "
            "one parameter serves all classes"
        )
        if self.bias_l2 == 0:
            raise ValueError(
                f"{said}, so {name} has no finite optimum: "
                f"{'the bias of each' if plural else 'its bias'} falls without end, sending "
                f"{'their' if plural else 'its'} probability to 0 on every item; {advice}, "
                "or penalise the bias (bias_l2 > 0)"
            )
        columns = range(c) if self.whole_row_free else classes
        signed = [j for j in columns if one_sign[j]]
        if signed:
            raise ValueError(
                f"{said}, and the logits of class{'es' if len(signed) > 1 else ''} "
                f"{', '.join(map(str, signed))} have one sign on every held-out item, so "
                f"{name} has no finite optimum: an unpenalised weight on them lowers "
                f"{'each absent class' if plural else 'the absent class'}'s logit on every "
                f"item without end; {advice}, or centre "
                "the logits (subtract each row's mean, which leaves the softmax as it is)"
            )
        warn_caller(
            f"{name}: {said}: the fit can only lower {'their' if plural else 'its'} "
            "probability on every item, as far as its penalty (or a few items of the other "
            "sign) allows, which miscalibrates "
            f"test items of {'those classes' if plural else 'that class'}; {advice}"
        )


class VectorScaling(_PerClassScaler):
    """Vector scaling: ``softmax(w * logits + b)`` with ``w, b`` in ``R^C``.

    The fit starts at the temperature fit (``w = 1/T``, ``b = 0``), a map it holds, so its
    dev NLL is at most the temperature's, and runs in units of the NLL's curvature there:
    logits ×c fit ``w / c`` and the same ``b``, at any ``c``, and a class masked with a
    large finite score (``-1e9``, ``finfo.min``) fits as a ``-inf`` mask would.

    Args:
        bias_l2: weight of the penalty ``bias_l2 * Σ b_j² / C`` (0: none, as Guo et al.).
        max_iter: L-BFGS iterations.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> logits = torch.randn(500, 3, generator=g)
        >>> shifted = torch.softmax(logits + torch.tensor([1.0, 0, 0]), -1)
        >>> target = torch.multinomial(shifted, 1, generator=g)[:, 0]
        >>> vs = VectorScaling().fit(logits, target)
        >>> bool(vs.bias[0] > vs.bias[1])
        True
    """

    def __init__(self, bias_l2: float = 0.0, max_iter: int = 200) -> None:
        super().__init__(max_iter)
        self.bias_l2 = _check_penalty("bias_l2", bias_l2)
        self.register_buffer("weight", torch.ones(0, dtype=torch.float64))
        self.register_buffer("bias", torch.zeros(0, dtype=torch.float64))

    def _init_params(self, num_classes: int, device: torch.device) -> list[Tensor]:
        w = torch.ones(num_classes, dtype=torch.float64, device=device, requires_grad=True)
        b = torch.zeros(num_classes, dtype=torch.float64, device=device, requires_grad=True)
        return [w, b]

    def _transform(self, z: Tensor, params: list[Tensor]) -> Tensor:
        return z * params[0] + params[1]

    def _penalty(self, params: list[Tensor]) -> Tensor | float:
        return self.bias_l2 * params[1].square().mean() if self.bias_l2 else 0.0

    def _unpenalised(self, params: list[Tensor]) -> list[Tensor] | None:
        weight, bias = params
        return [torch.ones_like(weight), torch.zeros_like(bias)] if self.bias_l2 else None

    def _store(self, params: list[Tensor]) -> None:
        self.weight, self.bias = (p.to(self.weight.device) for p in params)

    def _stored(self) -> list[Tensor]:
        return [self.weight, self.bias]


class MatrixScaling(_PerClassScaler):
    """Matrix scaling ``softmax(W logits + b)`` with ODIR regularisation (Kull et al. 2019).

    The loss is the mean dev NLL plus ``off_diagonal_l2 * Σ_{i≠j} W_ij² / (C(C-1))`` plus
    ``bias_l2 * Σ_j b_j² / C``; ``W`` starts at the temperature fit's ``I / T`` (no
    penalty there, so the dev NLL ends at most the temperature's). Kull et al. pick the two
    weights by cross-validation; the defaults (0.01 each) are a mild setting for dev sets
    of a few thousand items of a network's logits (of a size near 1 to 10); set both to 0
    for unregularised matrix scaling.

    The fit runs in units of the NLL's curvature at its start, which scale with the
    logits, and the penalty on ``b`` is in the output's units: only the off-diagonal
    penalty is on ``W`` as stored, in the logits' own units, so logits ×c fit with
    ``off_diagonal_l2 * c²`` what the logits fit with ``off_diagonal_l2`` (``W / c``, the
    same ``b``); unpenalised, any ``c`` fits the same map.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> logits = torch.randn(500, 3, generator=g)
        >>> target = torch.multinomial(torch.softmax(2 * logits, -1), 1, generator=g)[:, 0]
        >>> ms = MatrixScaling().fit(logits, target)
        >>> ms.weight.shape, bool(ms.weight.diagonal().min() > 1.2)
        (torch.Size([3, 3]), True)
    """

    def __init__(
        self, off_diagonal_l2: float = 0.01, bias_l2: float = 0.01, max_iter: int = 500
    ) -> None:
        super().__init__(max_iter)
        self.off_diagonal_l2 = _check_penalty("off_diagonal_l2", off_diagonal_l2)
        self.bias_l2 = _check_penalty("bias_l2", bias_l2)
        self.whole_row_free = self.off_diagonal_l2 == 0
        self.register_buffer("weight", torch.zeros(0, 0, dtype=torch.float64))
        self.register_buffer("bias", torch.zeros(0, dtype=torch.float64))

    def _init_params(self, num_classes: int, device: torch.device) -> list[Tensor]:
        w = torch.eye(num_classes, dtype=torch.float64, device=device).requires_grad_()
        b = torch.zeros(num_classes, dtype=torch.float64, device=device, requires_grad=True)
        return [w, b]

    def _transform(self, z: Tensor, params: list[Tensor]) -> Tensor:
        return z @ params[0].t() + params[1]

    def _penalty(self, params: list[Tensor]) -> Tensor | float:
        w, b = params
        c = w.shape[0]
        off = w - torch.diag(w.diagonal())
        return self.off_diagonal_l2 * off.square().sum() / (c * (c - 1)) + self.bias_l2 * (
            b.square().mean()
        )

    def _units_of_weights(self, z: Tensor, temperature: Tensor) -> Tensor:
        """:func:`_weight_units` of every weight, an off-diagonal one's with the
        curvature of its penalty, ``2 λ_od / (C(C-1))`` in the stored units, which dwarfs
        the NLL's for tiny logits: fitted in the NLL's unit alone, the default penalty on
        logits ×1e-8 had a curvature 10¹⁴ times the NLL's, and L-BFGS left the fit at its
        start."""
        units = _weight_units(z, temperature, matrix=True)
        c = units.shape[0]
        penalty = math.sqrt(2 * self.off_diagonal_l2 / (c * (c - 1)))
        eye = torch.eye(c, dtype=torch.bool, device=units.device)
        # hypot: the square of a unit of masks at -1e200 overflows.
        return torch.where(eye, units, torch.hypot(units, torch.full_like(units, penalty)))

    def _unpenalised(self, params: list[Tensor]) -> list[Tensor] | None:
        """The diagonal of ``W`` always; its other entries and ``b`` when unpenalised."""
        if not (self.off_diagonal_l2 or self.bias_l2):
            return None
        weight, bias = params
        eye = torch.eye(weight.shape[0], dtype=weight.dtype, device=weight.device)
        rows = eye if self.off_diagonal_l2 else torch.ones_like(weight)
        return [rows, torch.zeros_like(bias) if self.bias_l2 else torch.ones_like(bias)]

    def _store(self, params: list[Tensor]) -> None:
        self.weight, self.bias = (p.to(self.weight.device) for p in params)

    def _stored(self) -> list[Tensor]:
        return [self.weight, self.bias]


class PlattScaling(_LogitScaler):
    """Platt scaling: ``sigmoid(a * s + b)`` of binary scores ``s`` ``[N]``.

    Args:
        inputs: ``"logits"`` (scores on the real line) or ``"probs"``: probabilities ``q``
            in ``[0, 1]`` (e.g. any ``queries`` output), used through ``logit(q)``, clamped
            at 1e-12 so that 0 and 1 stay finite.
        max_iter: L-BFGS iterations.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> s = torch.randn(4000, generator=g)
        >>> y = torch.bernoulli(torch.sigmoid(0.5 * s - 1), generator=g)
        >>> platt = PlattScaling().fit(s, y)
        >>> [round(v, 1) for v in (platt.slope.item(), platt.intercept.item())]
        [0.5, -1.0]
    """

    binary_ok = True
    multiclass_ok = False
    binary_unit_scores_suspect = False
    input_name = "scores"
    #: Who its warnings name: ScalingBinning's Platt step speaks in ScalingBinning's (a
    #: class default, so that a module pickled before it had this attribute has it too).
    said_as = "PlattScaling"

    def __init__(self, inputs: str = "logits", max_iter: int = 200) -> None:
        super().__init__(max_iter, inputs)
        self.register_buffer("slope", torch.tensor(1.0, dtype=torch.float64))
        self.register_buffer("intercept", torch.tensor(0.0, dtype=torch.float64))

    def fit(self, scores: Tensor, target: Tensor) -> PlattScaling:  # type: ignore[override]
        """Fit ``a`` and ``b`` on held-out binary ``scores`` ``[N]`` (or probabilities, with
        ``inputs="probs"``) and 0/1 labels ``target`` ``[N]``; returns ``self``. A slope
        below 0 (a map that inverts the model) is warned of where the labels run against
        the scores by a rank test's z below -3 (:func:`warn_if_decreasing`)."""
        self._fit_unsaid(scores, target)
        warn_if_decreasing("PlattScaling", "the fitted map", self, scores, target)
        return self

    def _fit_unsaid(self, scores: Tensor, target: Tensor) -> PlattScaling:
        """:meth:`fit` without its warning of a decreasing map, which
        :class:`~calib_metrics.recalibration.binning.ScalingBinning` gives of its Platt step
        in its own name."""
        self._check_input(scores, binary=True)
        if scores.ndim != 1:
            raise ValueError(f"scores must be [N], got shape {tuple(scores.shape)}")
        return super().fit(scores, target)  # type: ignore[return-value]

    def _fit_params(self, z: Tensor, y: Tensor, num_classes: int) -> list[Tensor]:
        """Refuse separable scores; fit all-equal ones in closed form; else L-BFGS, on the
        scores in units of their spread.

        With an intercept the boundary can sit inside a tie group: a tie group of mixed
        labels keeps a finite loss there while the slope grows without end, and its items'
        margins at the fitted parameters are those of the tie group's label mix (±1.1 for
        one label against three), not 0, so the margins cannot tell. The data can: no
        finite optimum exactly when one class's scores all lie at or above the other's
        (one host read), unless every score is the same. Then only ``a s + b`` is set, to
        the dev frequency's logit, and any slope fits as well as any other: slope 0 maps
        every score to that frequency, as histogram binning and isotonic regression of
        such scores do (they had been called separable)."""
        ones, zeros = y == 1, y == 0
        low1, high1 = torch.where(ones, z, math.inf).min(), torch.where(ones, z, -math.inf).max()
        low0, high0 = torch.where(zeros, z, math.inf).min(), torch.where(zeros, z, -math.inf).max()
        equal = (low1 == high1) & (low0 == high0) & (low1 == low0)
        equal, above, below = torch.stack([equal, high0 <= low1, high1 <= low0]).tolist()
        if equal:
            rate = y.mean()
            fitted = [torch.zeros_like(rate), torch.log(rate) - torch.log1p(-rate)]
            self.nll_ = float(self._nll(z, y, fitted))
            warn_caller(
                f"{self.said_as}: the {z.numel()} scores it is fitted on are all equal, so they "
                "cannot set a slope: fitted slope 0, which maps every score to the dev "
                f"frequency of class 1 ({float(rate):.4g}); fit on held-out data whose scores "
                "vary"
            )
            return fitted
        if above or below:
            side = "above" if above else "below"
            raise ValueError(
                f"the held-out data are separable: every class-1 score lies at or {side} "
                "every class-0 score (ties at the boundary included), so Platt scaling has "
                "no finite optimum (its slope grows without end); fit on more held-out data, "
                "on which the model makes some errors"
            )
        # The slope in units of the scores' spread (:func:`typical_spread`).
        size = typical_spread(z)
        slope, intercept = super()._fit_params(z / size, y, num_classes)
        return [slope / size, intercept]

    def _init_params(self, num_classes: int, device: torch.device) -> list[Tensor]:
        a = torch.ones((), dtype=torch.float64, device=device, requires_grad=True)
        b = torch.zeros((), dtype=torch.float64, device=device, requires_grad=True)
        return [a, b]

    def _transform(self, z: Tensor, params: list[Tensor]) -> Tensor:
        return params[0] * z + params[1]

    def _describe(self, params: list[Tensor]) -> str:
        return f"slope {float(params[0]):.3g}"

    def _at_identity(self, params: list[Tensor]) -> Tensor | None:
        return (params[0] == 1) & (params[1] == 0)

    def _store(self, params: list[Tensor]) -> None:
        self.slope, self.intercept = (p.to(self.slope.device) for p in params)

    def _stored(self) -> list[Tensor]:
        return [self.slope, self.intercept]


def warn_if_decreasing(
    owner: str, step: str, platt: PlattScaling, scores: Tensor, target: Tensor
) -> None:
    """Warn where ``platt`` (``owner``'s ``step``), fitted on ``scores`` and ``target``,
    decreases and the dev labels run against the scores (a Mann-Whitney z below -3:
    :func:`~calib_metrics.recalibration._common.labels_against`, the test histogram
    binning and isotonic regression use): the map then inverts the model (accuracy
    0.73 → 0.26 on dev labels coded the other way), where a temperature refuses such
    scores. A slope below 0 alone had told 39% of a weak, calibrated model's dev sets
    (scores in [0.45, 0.55], n = 50) that they invert it. Two host reads at most."""
    value = float(platt.slope)
    if value >= 0:
        return
    noun = "probabilities" if platt.inputs == "probs" else "scores"
    x = scores.detach().to(torch.float64)
    against = labels_against(x, target.detach().to(x.device, torch.float64), noun)
    if against is not None:
        warn_inverting(owner, f"{step} decreases (slope {value:.3g}) and {against}")
