"""A Lightning callback that fits a temperature on the validation set when fitting ends."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.utilities import rank_zero_only, rank_zero_warn
from torch import Tensor

from calib_metrics.callbacks import _arguments as checks
from calib_metrics.callbacks import _outputs as step_output
from calib_metrics.callbacks import _runs as runs
from calib_metrics.callbacks import _samplers as samplers
from calib_metrics.callbacks import _tensorboard as tb
from calib_metrics.functional import calibration_error_ci
from calib_metrics.functional.binning import one_hot_advice
from calib_metrics.functional.calibration import (
    CalibrationResult,
    _check_interval_options,
    _check_options,
)
from calib_metrics.functional.errors import check_tensors
from calib_metrics.functional.multiclass import check_class_id_dtype
from calib_metrics.metric_checks import (
    check_class_ids,
    check_ignore_index,
    ignore_index_label_warning,
)
from calib_metrics.recalibration import TemperatureScaling
from calib_metrics.recalibration._common import (
    check_floating,
    fitting_mode,
    looks_like_probabilities,
    scores_within_unit,
)
from calib_metrics.recalibration.scaling import RefusedProbabilities

Extract = Callable[[Any, Any], "tuple[Tensor, Tensor] | None"]
# Each state_dict tensor's name, shape, dtype and sum of bit patterns, or its name and a
# marker equal to nothing where its bits cannot be read: _weights_of.
Weights = tuple[tuple[object, ...], ...]
# The integer type that reads a tensor's elements as bits, by element size in bytes.
_BITS_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_BIT_BLOCK = 1 << 22  # elements summed into int64 at a time


class TemperatureRecalibration(Callback):
    """Fit :class:`~calib_metrics.recalibration.TemperatureScaling` on the last validation
    epoch's logits at the end of ``fit``, and log the calibration before and after.

    Each validation step returns a dict with ``"logits"`` (``[..., C]`` with ``C >= 2``
    beside a target ``[...]``, or binary scores of the target's own shape: ``[B]`` with
    ``[B]``, ``[B, 1]`` with ``[B, 1]``) and ``"target"`` (the keys are options), or
    ``extract(outputs, batch)`` returns ``(logits, target)``. The logits of the fit's last
    validation epoch (never the sanity check, nor a ``trainer.validate`` / ``test`` run) are
    kept; the sanity check's are checked only, so that a malformed output (a shape, targets
    naming no class: padding without ``ignore_index``) is a ValueError before the fit
    trains (a ``None`` output there, from a module that skips the sanity check, is passed
    over). Shapes, keys and dtypes (floating logits; integer class ids beside multiclass
    logits) are checked at every batch; targets' values, which costs a host
    synchronisation, at the sanity check's batches and each validation epoch's first batch
    of each dataloader, and a later batch's targets naming no class when fitting ends: no
    temperature is fitted, with a warning naming them. When fitting ends the temperature is
    fitted on the kept logits (in float64, with grad enabled and outside inference mode, on
    copies of the inference-mode tensors Lightning's validation produces), stored as
    :attr:`recalibrator` and on the module as ``pl_module.calibration_temperatures[prefix]``
    (a float, so it can be applied at prediction time: ``softmax(logits / T)``) and, when
    it is the Trainer's only such callback, as ``pl_module.calibration_temperature`` too
    (with one per output head, each head reads its own by its ``prefix``), and

    * ``{prefix}/temperature``, ``{prefix}/calib_err_before`` and ``{prefix}/calib_err_after``
      (with ``_lower`` / ``_upper`` interval ends) go to every logger's ``log_metrics``;
    * the reliability diagrams ``{prefix}/reliability_before`` and ``..._after`` go to every
      logger whose ``experiment`` has ``add_figure``;
    * :attr:`results` holds the logged numbers under the logged names.

    The fitted temperature is this callback's checkpoint state: a checkpoint saved after
    ``fit`` (``trainer.save_checkpoint(path)``) holds it, a run restored from one
    (``trainer.validate/test/predict/fit(..., ckpt_path=path)`` with this callback) gets it
    back, as :attr:`recalibrator` and on the module as above, and
    :meth:`temperature_in` reads it from the file without a Trainer (for a model loaded
    with ``load_from_checkpoint``, which restores no callback).

    The last validation must come after the last training step for T to fit the final
    weights: when training went on after it (``check_val_every_n_epoch=2,
    max_epochs=3``), the callback still fits, and warns naming the steps.

    When no validation logits were seen (``limit_val_batches=0``, an empty validation
    loader, every target ``ignore_index``) or the temperature cannot be fitted on them (a
    single class, NaN logits), the callback warns and fits nothing: the finished fit is
    not failed. A temperature from before (an earlier fit's, a restored checkpoint's)
    belongs to the weights this fit started from: when the fit trained them, it is
    removed, from the module, the callback and its checkpoint state.

    The errors are measured on the validation set the temperature was fitted on (an
    in-sample check); the held-out verdict comes from a test set (``calib-metrics
    recalibrate``, ``docs/recalibration.md``). Multiclass probabilities are measured
    one-vs-rest (the paper's §4.2.2).

    Under DDP the validation set is split over the ranks: each rank's logits and targets
    (of any length, even none) are gathered from all ranks first
    (``torchmetrics``' ``gather_all_tensors``: pad, ``all_gather``, trim), so every rank
    fits the same temperature on the whole validation set, in rank order; rank zero alone
    logs and draws.

    Args:
        logits_key, target_key: keys of the step's output dict (two different ones, unless
            ``extract`` is given).
        extract: ``extract(outputs, batch) -> (logits, target) | None``, replacing the keys.
        ignore_index: target value of items to drop (padding); not 0 or 1 beside binary
            scores, which would drop a class.
        dataloader_idx: the validation dataloader(s) whose logits fit the temperature: an
            index, a list of them, or ``"all"`` (pooled). None (the default) takes
            dataloader 0 and, when there are more, warns once that the others are left
            out. A temperature is fitted for the data it will be applied to, which the
            first validation set is by Lightning's convention; further validation sets are
            more often other domains or comparison sets, and pooling them (as this callback
            did, without a word) moves T towards a mixture no prediction will see.
        prefix: start of every logged name (no leading or trailing ``/``).
        bin_size, n_samples, confidence: of the before/after errors (debiased, bootstrap
            over pairs).

    Example:
        >>> import torch
        >>> cb = TemperatureRecalibration(ignore_index=-100)
        >>> logits, target = torch.randn(4, 3), torch.tensor([0, 2, -100, 1])
        >>> [t.shape for t in cb.extract_batch({"logits": logits, "target": target}, None)]
        [torch.Size([3, 3]), torch.Size([3])]
    """

    def __init__(
        self,
        *,
        logits_key: str = "logits",
        target_key: str = "target",
        extract: Extract | None = None,
        ignore_index: int | None = None,
        dataloader_idx: int | Sequence[int] | Literal["all"] | None = None,
        prefix: str = "recalibration",
        bin_size: int | str = "auto",
        n_samples: int = 2000,
        confidence: float = 0.95,
    ) -> None:
        super().__init__()
        # Checked now, not at the first batch or when fitting ends (after the training run);
        # a misspelt option is Python's TypeError, which type checkers see too.
        keys = {"logits_key": logits_key, "target_key": target_key}
        for name, key in keys.items():
            checks.check_key(name, key)
        if extract is None:  # extract replaces the keys: they may be anything then
            checks.check_keys_differ(keys)
        checks.check_extract(extract)
        check_ignore_index(ignore_index)
        checks.check_prefix(prefix)
        self._loaders = checks.check_dataloader_idx(dataloader_idx)
        self.dataloader_idx = dataloader_idx
        _check_options("l2", "adaptive", bin_size, 15)
        _check_interval_options(n_samples, confidence, "normal", "pairs")
        self.logits_key, self.target_key = logits_key, target_key
        self.extract = extract
        self.ignore_index = ignore_index
        self.prefix = prefix
        self.options = {"bin_size": bin_size, "n_samples": n_samples, "confidence": confidence}
        self.recalibrator: TemperatureScaling | None = None
        self._restored = False
        self.results: dict[str, float] = {}
        self._logits: list[Tensor] = []
        self._target: list[Tensor] = []
        self._told_loaders = False
        self._told_samplers = False
        self._told_ignore_index = False
        self._told_one_hot = False
        self._collected_at: tuple[int, int] | None = None  # (epoch, global step)
        self._fit_from_step: int | None = None
        # The step of the checkpoint a resumed fit restored, until on_fit_start reads it.
        self._restored_step: int | None = None
        # The weights the temperature belongs to (_weights_of), and those of the checkpoint
        # being restored, until load_state_dict compares them.
        self._fitted_on: Weights | None = None
        self._loaded: Weights | None = None

    def extract_batch(
        self, outputs: Any, batch: Any, *, check_targets: bool = True
    ) -> tuple[Tensor, Tensor] | None:
        """``(logits [M, C] or [M], target [M])`` of one step, padding dropped; a malformed
        output (a missing key, a shape, a list where a tensor belongs, integer logits,
        multiclass targets that are not integer class ids) is a ValueError here, at the
        first validation batch, not when fitting ends. Dropping padding
        (``ignore_index``) costs one host synchronisation. With
        ``check_targets`` so are targets that name no class (padding without
        ``ignore_index``, a class id past the logits, binary targets other than 0 / 1), at
        the cost of one host synchronisation; the callback asks it of the sanity check's
        batches and of each validation epoch's first batch of each dataloader only, and
        names any later batch's when fitting ends (in its warning that no temperature was
        fitted)."""
        if self.extract is not None:
            pair = self.extract(outputs, batch)
            if pair is None:
                return None
            logits, target = step_output.extracted(pair, [("logits", "target")])
        else:
            keys = (self.logits_key, self.target_key)
            if not isinstance(outputs, Mapping) or any(key not in outputs for key in keys):
                got = sorted(outputs) if isinstance(outputs, Mapping) else type(outputs).__name__
                raise ValueError(
                    f"TemperatureRecalibration needs the validation step to return a dict "
                    f"with keys {self.logits_key!r} and {self.target_key!r} (got {got}); set "
                    "logits_key / target_key or pass extract=(outputs, batch) -> (logits, target)"
                )
            logits, target = outputs[self.logits_key], outputs[self.target_key]
        check_tensors(logits=logits, target=target)
        logits, target = logits.detach(), target.detach()
        binary = logits.shape == target.shape
        if not binary and logits.shape[:-1] != target.shape:
            raise ValueError(
                f"TemperatureRecalibration: logits {tuple(logits.shape)} must be target's "
                f"shape {tuple(target.shape)} (binary scores) or that plus a class dim"
            )
        if not binary and logits.shape[-1] < 2:
            raise ValueError(
                f"TemperatureRecalibration: logits {tuple(logits.shape)} hold one class "
                f"score per item: give binary scores in target's shape {tuple(target.shape)} "
                "(logits.squeeze(-1)), or multiclass logits [..., C] with C >= 2"
            )
        self._check_dtypes(logits, target, binary)
        self._check_ignore_index(binary, None if binary else logits.shape[-1])
        if check_targets and binary:
            self._warn_if_one_hot(logits, target)
        logits = logits.reshape(-1) if binary else logits.reshape(-1, logits.shape[-1])
        target = target.reshape(-1)
        if self.ignore_index is not None:
            # One lookup of the kept rows for both tensors: two boolean indexings would
            # each wait for the device.
            kept = (target != self.ignore_index).nonzero().squeeze(1)
            logits, target = logits.index_select(0, kept), target.index_select(0, kept)
        if check_targets:
            try:
                self._check_target(logits, target)
            except ValueError as err:
                raise ValueError(f"TemperatureRecalibration: {err}") from None
        return logits, target

    @staticmethod
    def _check_dtypes(logits: Tensor, target: Tensor, binary: bool) -> None:
        """Logits that are no scores (integers) and, beside multiclass logits, targets not
        of an integer dtype (floats, bools) are a ValueError, as the monitor's are. Integer
        logits and fractional targets (``[0., 1.5, 2.]``) had been refused only when
        fitting ended, after the training run, as "no temperature fitted"; whole-number
        float and bool targets had been fitted on, and now need ``target.long()``, as the
        monitor has always asked. A dtype is read without waiting for the device, so every
        batch is checked. Binary targets may be floats, 0 and 1 (their values are checked
        with the targets')."""
        try:
            check_floating(logits, "logits")
            if not binary:
                check_class_id_dtype(target)
        except ValueError as err:
            raise ValueError(f"TemperatureRecalibration: {err}") from None

    def _check_target(self, logits: Tensor, target: Tensor) -> None:
        """Targets that name no class (padding without ``ignore_index``, a class id past the
        logits) are a ValueError, as the monitor's are, with its hint; data that is merely
        unfit to fit on (one class) is left to the end of fit, which warns. One host
        synchronisation."""
        num_classes = None if logits.ndim == 1 else logits.shape[-1]
        check_class_ids(target, num_classes, ignore_index=self.ignore_index)

    def _warn_if_one_hot(self, logits: Tensor, target: Tensor) -> None:
        """Warn once of one-hot targets beside logits of their shape ``[..., C]``: read, as
        documented, as C binary labels an item (a multi-label head's), they fit one sigmoid
        temperature, not a softmax model's, without a word (the monitor refuses them
        beside ``num_classes``). One host synchronisation, where the shapes allow it."""
        advice = "" if self._told_one_hot else one_hot_advice(logits, target)
        if advice:
            self._told_one_hot = True
            rank_zero_warn(
                f"TemperatureRecalibration: {self.target_key!r} looks one-hot beside "
                f"{self.logits_key!r} of its shape {tuple(logits.shape)}, and is read as "
                f"{logits.shape[-1]} independent binary labels an item (a multi-label head: one "
                f"sigmoid temperature); for a softmax model return class ids, {advice}"
            )

    def _check_ignore_index(self, binary: bool, num_classes: int | None) -> None:
        """An ``ignore_index`` of 0 or 1 beside binary scores is a ValueError (it drops
        every negative or positive: the temperature had been fitted on one class without
        a word); a class id beside multiclass logits is warned about once. No host read:
        every batch is checked, as the metrics check it at construction."""
        try:
            told = ignore_index_label_warning(self.ignore_index, num_classes)
        except ValueError as err:
            raise ValueError(f"TemperatureRecalibration: {err}") from None
        if told is not None and not self._told_ignore_index:
            self._told_ignore_index = True
            rank_zero_warn(f"TemperatureRecalibration: {told}")

    @staticmethod
    def _fitting(trainer: Trainer) -> bool:
        # Only a fit's validations are fitted on: a trainer.validate / test run (after fit,
        # or restoring the temperature with ckpt_path=) may have other loaders, and its
        # logits must not reach a later fit.
        return runs.trainer_fn(trainer) == "fit"

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # Logits of an earlier fit of this callback belong to other weights.
        self._logits, self._target = [], []
        self._told_samplers = False  # each fit's loaders are its own
        self._collected_at = None
        # The weights' step when this fit starts (after any checkpoint it resumes): a
        # temperature from before belongs to these weights only while it is unchanged.
        restored, self._restored_step = self._restored_step, None
        self._fit_from_step = int(trainer.global_step) if restored is None else restored

    def on_load_checkpoint(
        self, trainer: Trainer, pl_module: LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        # A resumed fit starts from the checkpoint's weights, at its step; Lightning
        # restores the callbacks before on_fit_start (after it, for strategies that restore
        # after setup) but the trainer's step after it: a fresh Trainer still says 0 there.
        if self._fitting(trainer):
            self._fit_from_step = self._restored_step = int(checkpoint.get("global_step", 0))
        # Lightning loads the weights before the callbacks' state: the module holds the
        # checkpoint's now, for load_state_dict to tell whose temperature it may keep.
        self._loaded = _weights_of(pl_module)

    def on_validation_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not self._fitting(trainer):
            return
        self._logits, self._target = [], []
        n_loaders = runs.loader_count(trainer, "val")
        missing = sorted(set(self._loaders or ()) - set(range(n_loaders)))
        if missing:
            # Found at the sanity check (or the first validation), not when fitting ends.
            raise ValueError(
                f"TemperatureRecalibration: dataloader_idx={self.dataloader_idx!r} names "
                f"dataloader {', '.join(map(str, missing))}, but the trainer has "
                f"{n_loaders} validation dataloader{'s' if n_loaders > 1 else ''}"
            )
        self._check_samplers(trainer, n_loaders)
        if self.dataloader_idx is None and n_loaders > 1 and not self._told_loaders:
            self._told_loaders = True
            rank_zero_warn(
                f"TemperatureRecalibration: the trainer has {n_loaders} validation "
                "dataloaders; the temperature is fitted on dataloader 0 alone. Pass "
                "dataloader_idx=0 to say so (and silence this), another index or a list of "
                "them, or dataloader_idx='all' to pool every dataloader's logits"
            )

    def _check_samplers(self, trainer: Trainer, n_loaders: int) -> None:
        """Warn once when a distributed sampler of a loader fitted on repeats (or drops)
        items: DistributedSampler's padding had been fitted on silently, its duplicate
        counted twice (T = 1.5820 where the 41 items give 1.5897), as the monitor says of
        its logged values."""
        if self._told_samplers:
            return
        self._told_samplers = True
        loaders = samplers.loaders_of(trainer.val_dataloaders)
        fitted = range(n_loaders) if self._loaders is None else sorted(self._loaders)
        found = {i: samplers.uneven_items(loaders[i]) for i in fitted if i < len(loaders)}
        uneven = {i: u for i, u in found.items() if u is not None}
        if uneven:
            counted = "the temperature and its before/after errors"
            message = samplers.uneven_message(
                "val", uneven, n_loaders > 1, counted, self.ignore_index
            )
            rank_zero_warn(f"TemperatureRecalibration: {message}")

    def on_validation_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if not self._fitting(trainer):
            return
        if self._loaders is not None and dataloader_idx not in self._loaders:
            return
        # The sanity check's batches are checked, not kept: a malformed output fails the
        # fit before it trains. A module skipping its work there returns nothing to check.
        if trainer.sanity_checking and outputs is None:
            return
        # The targets' check waits for the device: the sanity check's batches and each
        # epoch's first take it, later batches' targets are checked once, at fit end.
        first = trainer.sanity_checking or batch_idx == 0
        pair = self.extract_batch(outputs, batch, check_targets=first)
        if pair is not None and not trainer.sanity_checking:
            self._logits.append(pair[0])
            self._target.append(pair[1])

    def on_validation_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not trainer.sanity_checking and self._fitting(trainer):
            # The weights these logits come from, to compare with the final ones at fit end.
            self._collected_at = (int(trainer.current_epoch), int(trainer.global_step))

    def _warn_if_stale(self, trainer: Trainer) -> None:
        """Warn when training went on after the validation whose logits the temperature is
        fitted on: T then fits earlier weights than the ones it is applied to."""
        if self._collected_at is None or self._collected_at[1] == trainer.global_step:
            return
        epoch, step = self._collected_at
        rank_zero_warn(
            f"TemperatureRecalibration: the last validation ran at epoch {epoch} (step "
            f"{step}), and training went on to step {trainer.global_step}: the temperature "
            "is fitted on the logits of earlier weights than the final ones it is applied "
            "to. Let a validation come after the last training step (e.g. "
            "check_val_every_n_epoch dividing max_epochs), or refit on the final model's "
            "validation logits (calib_metrics.recalibration.TemperatureScaling)"
        )

    @property
    def state_key(self) -> str:
        """The checkpoint key: the class and ``prefix``, so that callbacks logging under
        different prefixes (two heads, say) share a Trainer and a checkpoint."""
        return self._generate_state_key(prefix=self.prefix)

    def state_dict(self) -> dict[str, Any]:
        """The fitted temperature (None before the end of ``fit``) and the ``prefix``, for
        checkpoints."""
        temperature = None if self.recalibrator is None else self.recalibrator.temperature
        temperature = None if temperature is None else float(temperature)
        return {"temperature": temperature, "prefix": self.prefix}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the temperature of a checkpoint saved after ``fit``. A checkpoint saved
        before (``ckpt_path="best"``, ``"last"``) holds none: the temperature fitted since
        is kept when the checkpoint holds the weights it was fitted on (``"last"`` after
        the fit), and dropped with a warning when it holds other weights."""
        temperature = state_dict.get("temperature")
        loaded, self._loaded = self._loaded, None
        if temperature is None:
            if self.recalibrator is not None and loaded is not None and loaded == self._fitted_on:
                # The final weights, saved before fit ended (last.ckpt): its temperature
                # fits them, and goes on the module the weights were loaded into.
                self._restored = True
                return
            if self.recalibrator is not None:
                rank_zero_warn(
                    "TemperatureRecalibration: the restored checkpoint was saved before fit "
                    "ended and holds no temperature; the one fitted at the end of fit belongs "
                    "to other weights and is dropped (calibration_temperature removed)"
                )
                self.recalibrator = None
                self._restored = True
            return
        _check_saved_temperature(temperature)
        self.recalibrator = TemperatureScaling()
        self.recalibrator.temperature.fill_(temperature)
        self._fitted_on = loaded
        self._restored = True

    def _apply_restored(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # Checkpoints are restored after ``setup``: the module gets the temperature when
        # the loop that restored it starts.
        if not self._restored:
            return
        self._restored = False
        temperature = None if self.recalibrator is None else float(self.recalibrator.temperature)
        self._set_on_module(trainer, pl_module, temperature)

    def _set_on_module(
        self, trainer: Trainer, pl_module: LightningModule, temperature: float | None
    ) -> None:
        """Put this head's temperature on the module (None: remove it), by ``prefix`` in
        ``calibration_temperatures``, and as ``calibration_temperature`` when this is the
        Trainer's only TemperatureRecalibration: with two heads that one attribute would
        hold whichever fitted last."""
        temperatures = dict(getattr(pl_module, "calibration_temperatures", {}))
        temperatures.pop(self.prefix, None)
        if temperature is not None:
            temperatures[self.prefix] = temperature
        pl_module.calibration_temperatures = temperatures
        heads = [c for c in trainer.callbacks if isinstance(c, TemperatureRecalibration)]
        if temperature is not None and len(heads) == 1:
            pl_module.calibration_temperature = temperature
        elif hasattr(pl_module, "calibration_temperature"):
            del pl_module.calibration_temperature

    on_train_start = on_validation_start = on_test_start = on_predict_start = _apply_restored

    @staticmethod
    def temperature_in(
        checkpoint: str | Path | dict[str, Any], prefix: str | None = None
    ) -> float | None:
        """The temperature a checkpoint (a path, or the loaded dict) holds, or None when
        it holds none (saved before the end of ``fit``, or without this callback). A
        checkpoint of several such callbacks needs the ``prefix`` of the one wanted.

        Example:
            >>> state = {"temperature": 1.5, "prefix": "recalibration"}
            >>> TemperatureRecalibration.temperature_in(
            ...     {"callbacks": {"TemperatureRecalibration{'prefix': 'recalibration'}": state}})
            1.5
        """
        if not isinstance(checkpoint, dict):
            checkpoint = torch.load(checkpoint, map_location="cpu", weights_only=False)
        found = {
            state.get("prefix"): state["temperature"]
            for key, state in checkpoint.get("callbacks", {}).items()
            # "is not None": a saved 0.0 had been read as no temperature, which restoring
            # the same checkpoint refuses.
            if str(key).startswith("TemperatureRecalibration")
            and state.get("temperature") is not None
        }
        for temperature in found.values():
            _check_saved_temperature(temperature)
        if prefix is not None:
            return found.get(prefix)
        if len(found) > 1:
            raise ValueError(
                f"the checkpoint holds {len(found)} TemperatureRecalibration temperatures: "
                f"pass prefix= (one of {', '.join(sorted(map(repr, found)))})"
            )
        return next(iter(found.values()), None)

    def on_fit_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._restored_step = None  # restored after on_fit_start: not the next fit's
        with fitting_mode():
            # Logits of another shape in a later batch (another loader's classes, a binary
            # head beside a multiclass one) passed each batch's check, and the cat below
            # had failed the finished fit with torch's RuntimeError.
            shapes = sorted({tuple(t.shape[1:]) for t in self._logits})
            # Validation ran in inference mode: cat outside it gives normal tensors.
            local, batches = None, len(self._logits)
            if self._logits and len(shapes) == 1:
                local = (torch.cat(self._logits), torch.cat(self._target))
            self._logits, self._target = [], []
            mixed = len(shapes) > 1
            if _distributed(trainer):
                local, mixed, batches = _gather_ranks(local, pl_module.device, mixed, batches)
            if mixed:
                seen = _shapes_text(shapes)
                self._fitted_nothing(
                    trainer,
                    pl_module,
                    f"the validation step's {self.logits_key!r} changed shape between batches "
                    f"or ranks ({seen}): one temperature needs one set of classes "
                    "(dataloader_idx= picks one loader); no temperature fitted",
                )
                return
            # Batches whose every target was ignore_index leave empty tensors (a rank's
            # gather, none): TemperatureScaling's "logits is empty" had said no validation ran.
            if local is None or not len(local[1]):
                why = _why_no_logits(batches, trainer.world_size if _distributed(trainer) else 1)
                self._fitted_nothing(trainer, pl_module, f"{why}: no temperature fitted")
                return
            logits, target = (t.clone() for t in local)
        self._warn_if_stale(trainer)
        if looks_like_probabilities(logits):
            self._fitted_nothing(
                trainer,
                pl_module,
                f"the validation step's {self.logits_key!r} are probabilities (every row in "
                "[0, 1], summing to 1), not logits: return the scores before the softmax; no "
                "temperature fitted",
            )
            return
        if logits.ndim == 1 and scores_within_unit(logits):
            # Nothing tells sigmoid outputs from a weak head's logits that all happen to
            # lie in [0, 1]: fitted, and said (sigmoid outputs had been fitted silently).
            rank_zero_warn(
                f"TemperatureRecalibration: every binary {self.logits_key!r} value lies in "
                "[0, 1]: if they are sigmoid outputs, return the scores before the sigmoid "
                "(the temperature fitted here is then that of sigmoid(sigmoid(z)), and "
                "its before/after errors are not the model's)"
            )
        try:
            # Targets of the batches not checked one by one (after each epoch's first):
            # padding without ignore_index is named here, with the hint.
            self._check_target(logits, target)
            with warnings.catch_warnings():
                # Said above, once, in this callback's words and on rank zero alone.
                warnings.filterwarnings("ignore", "TemperatureScaling: every binary score")
                recalibrator = TemperatureScaling().fit(logits, target)
        except ValueError as err:
            # Data the last epoch happened to give (one class, diverged logits) must not
            # fail a finished fit; every rank holds the same data, so all skip together.
            # Sigmoid outputs were named above in this callback's words: TemperatureScaling's
            # own advice (build it with inputs='probs') is not the user's to follow here.
            reason = err.reason if isinstance(err, RefusedProbabilities) else err
            self._fitted_nothing(trainer, pl_module, f"no temperature fitted ({reason})")
            return
        self.recalibrator = recalibrator
        self._fitted_on = _weights_of(pl_module)
        self._set_on_module(trainer, pl_module, float(self.recalibrator.temperature))
        self._return_to_launcher(trainer)
        before = self._measure(_probs(logits), target)
        after = self._measure(self.recalibrator(logits), target)
        # Under the names logged: a bare "temperature" had stood beside prefixed names.
        self.results = {f"{self.prefix}/temperature": float(self.recalibrator.temperature)}
        for name, result in (("before", before), ("after", after)):
            numbers = tb.result_numbers(result)
            base = f"{self.prefix}/calib_err_{name}"
            self.results |= {base: numbers["error"], f"{base}_lower": numbers["lower"],
                             f"{base}_upper": numbers["upper"]}  # fmt: skip
        self._write(trainer, before, after)

    def _return_to_launcher(self, trainer: Trainer) -> None:
        """Put the temperature in ``trainer.callback_metrics`` (as ``<prefix>/temperature``),
        which Lightning sends back from the worker processes of ``strategy="ddp_spawn"``
        (or ``"ddp_fork"``), where the module and this callback the fit was called with
        never see the fit's attributes; and say so there, once, on rank 0."""
        temperature = float(self.recalibrator.temperature)  # type: ignore[union-attr]
        # In float64, as the monitor logs its values: a float32 tensor had changed the
        # temperature in its eighth digit.
        metrics = trainer.callback_metrics
        metrics[f"{self.prefix}/temperature"] = tb.float64(temperature, torch.device("cpu"))
        launcher = getattr(trainer.strategy, "launcher", None)
        if type(launcher).__name__ == "_MultiProcessingLauncher":
            rank_zero_warn(
                f"TemperatureRecalibration: the temperature ({temperature:.4f}) was fitted in "
                "the worker processes of a spawned/forked DDP run: the module and this "
                "callback in the process that called fit() do not get it (nor does a "
                "checkpoint saved there). Read it there from "
                f"trainer.callback_metrics[{self.prefix + '/temperature'!r}], or use "
                'strategy="ddp", whose processes keep their state'
            )

    def _fitted_nothing(self, trainer: Trainer, pl_module: LightningModule, told: str) -> None:
        """Warn that this fit fitted no temperature. One from before (an earlier fit, a
        restored checkpoint) belongs to the weights this fit started from: when it trained
        them, it is removed (from the module, the callback and its checkpoint state), as a
        restore does with one that belongs to other weights; a fit that trained nothing
        (resuming a finished run) keeps it."""
        if self.recalibrator is not None and trainer.global_step != self._fit_from_step:
            self.recalibrator = None
            self.results = {}
            self._set_on_module(trainer, pl_module, None)
            told += (
                "; the temperature of an earlier fit belongs to the weights before this fit "
                "trained them, and is removed (calibration_temperature too)"
            )
        elif self.recalibrator is not None:
            # Said, or a user read "no temperature fitted" as the restored one lost.
            told += (
                f"; this fit trained nothing, so the temperature restored or fitted before "
                f"({self.recalibrator.temperature.item():.4g}) still fits the weights and is "
                f"kept (calibration_temperature too)"
            )
        rank_zero_warn(f"TemperatureRecalibration: {told}")

    def _measure(self, probs: Tensor, target: Tensor) -> CalibrationResult:
        generator = torch.Generator().manual_seed(0)
        if probs.ndim == 2:
            target = torch.nn.functional.one_hot(target.long(), probs.shape[-1])
        return calibration_error_ci(
            probs.reshape(-1).cpu(), target.reshape(-1).cpu(), generator=generator,
            debias=True, interval="pairs", **self.options,
        )  # fmt: skip

    @rank_zero_only
    def _write(self, trainer: Trainer, before: CalibrationResult, after: CalibrationResult) -> None:
        step = int(trainer.global_step)
        metrics = dict(self.results)
        figures = None
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=step)
            experiment = tb.experiment_of(logger)
            if tb.has_method(experiment, "add_figure"):
                figures = figures or self._figures(before, after)
                for name, fig in figures.items():
                    experiment.add_figure(f"{self.prefix}/{name}", fig, global_step=step)
            if hasattr(logger, "save"):
                logger.save()

    def _figures(self, before: CalibrationResult, after: CalibrationResult) -> dict[str, Any]:
        from calib_metrics import plot  # matplotlib only once there is something to draw

        t = self.results[f"{self.prefix}/temperature"]
        kind = {"interval": "pairs", "debias": True}  # as _result() draws it
        if "confidence" in self.options:
            kind["confidence"] = self.options["confidence"]
        # Read side by side, as recalibrate --plot draws them: one x axis for both.
        shared = plot.shared_x_axis([before, after])
        kind |= {"xscale": shared.xscale, "logit_range": shared.logit_range}
        titles = ("before", f"after (T = {t:.3f})")
        return {
            f"reliability_{which}": plot.reliability_diagram(
                result, title=shared.title(title, index), **kind
            )[0]
            for index, (which, result, title) in enumerate(
                zip(("before", "after"), (before, after), titles, strict=True)
            )
        }


def _distributed(trainer: Trainer) -> bool:
    dist = torch.distributed
    return trainer.world_size > 1 and dist.is_available() and dist.is_initialized()


def _gather_ranks(
    local: tuple[Tensor, Tensor] | None, device, mixed: bool = False, batches: int = 0
) -> tuple[tuple[Tensor, Tensor] | None, bool, int]:
    """Every rank's ``(logits, target)`` concatenated in rank order, on every rank;
    whether any rank's logits were ``mixed`` (of several shapes) or the ranks' classes
    differ (then no pairs: every rank skips the fit alike); and the ranks' ``batches``
    kept, summed (for the message when none held pairs).

    Collective: all ranks must call it. A rank without validation pairs takes part with
    empty tensors, shaped after the others' (a header of sizes is gathered first).
    Logits travel as float64 and targets as float64, so that ranks agree on dtypes.
    """
    from torchmetrics.utilities.distributed import gather_all_tensors

    count, width = (0, -1) if local is None else (len(local[1]), _width(local[0]))
    sent = torch.tensor([count, width, int(mixed), batches], device=device)
    header = torch.stack(gather_all_tensors(sent))
    batches = int(header[:, 3].sum())
    widths = {int(w) for c, w, _, _ in header.tolist() if c > 0}
    if bool(header[:, 2].any()) or len(widths) > 1:
        return None, True, batches
    if int(header[:, 0].sum()) == 0:
        return None, False, batches
    width = int(header[:, 1].max())
    if local is None:
        shape = (0, width) if width else (0,)
        local = (torch.zeros(shape, device=device), torch.zeros(0, device=device))
    logits, target = (t.to(device=device, dtype=torch.float64) for t in local)
    logits = torch.cat(gather_all_tensors(logits))
    target = torch.cat(gather_all_tensors(target))
    return (logits, target.long() if width else target), False, batches


def _why_no_logits(batches: int, ranks: int = 1) -> str:
    """Why the last validation epoch of a fit left no logits to fit on, from the
    ``batches`` kept on its ``ranks`` (the monitor's words for batches that held nothing).
    Kept: not those ``extract`` returned None for, nor other loaders' (``dataloader_idx``).

    Example:
        >>> _why_no_logits(2).split(" (")[0]
        'the 2 batches kept from the last validation epoch held no pairs'
        >>> _why_no_logits(4, ranks=2).split(" (")[0]
        'the 4 batches kept from the last validation epoch, on its 2 ranks, held no pairs'
    """
    if batches == 0:
        return (
            "no validation logits were seen while fitting (no validation epoch ran, or "
            "extract returned None for every batch)"
        )
    which = " kept from the last validation epoch"
    which += f", on its {ranks} ranks," if ranks > 1 else ""
    return f"the {step_output.held_no_pairs(batches, which)}"


def _shapes_text(shapes: list[tuple[int, ...]]) -> str:
    """The logits' shapes this rank saw, as ``[B, 4]``, ``[B]``; where it saw one (or none),
    the conflict was another rank's.

    Example:
        >>> _shapes_text([(3,), (4,)])
        '[B, 3], [B, 4]'
        >>> _shapes_text([()]), _shapes_text([])
        ('[B] here, another shape on another rank', 'none here, other shapes on other ranks')
    """
    text = ", ".join("[" + ", ".join(["B", *map(str, shape)]) + "]" for shape in shapes)
    if len(shapes) > 1:
        return text
    return (
        f"{text} here, another shape on another rank"
        if shapes
        else ("none here, other shapes on other ranks")
    )


def _width(logits: Tensor) -> int:
    """Classes of multiclass logits ``[M, C]``; 0 for binary scores ``[M]``."""
    return int(logits.shape[-1]) if logits.ndim == 2 else 0


def _weights_of(module: torch.nn.Module) -> Weights:
    """What tells the module's weights apart: each tensor of its ``state_dict`` (what a
    checkpoint holds and restores; not non-persistent buffers) by name, shape, dtype and
    the sum of its elements' bit patterns, read in one host transfer per device. Integer
    sums are exact whatever the order or device that adds them, so the same weights read
    the same after a move to another device, and weights that moved with their float sum
    conserved (a softmax head under SGD) read otherwise; a step number is not enough,
    another fit's checkpoint may be at the same step.

    Example:
        >>> layer = torch.nn.Linear(2, 1)
        >>> before = _weights_of(layer)
        >>> before == _weights_of(layer)
        True
        >>> with torch.no_grad():
        ...     _ = layer.bias.add_(1e-6)
        >>> before == _weights_of(layer)
        False
    """
    named = [
        (name, t)
        for name, t in module.state_dict().items()
        # Meta and lazy (never run) tensors hold no values to read; extra state no tensor.
        if isinstance(t, Tensor) and t.device.type != "meta" and not _uninitialized(t)
    ]
    sums: dict[torch.device, list[Tensor]] = {}
    unreadable: set[str] = set()
    for name, t in named:
        try:
            sums.setdefault(t.device, []).append(_bit_sum(t))
        except (RuntimeError, NotImplementedError):  # a layout without bits to read (nested)
            unreadable.add(name)
    read = {device: iter(torch.stack(s).tolist()) for device, s in sums.items() if s}
    # An unreadable tensor reads as never the same (a fresh object): the safe side, the
    # temperature dropped, where the fit's end had raised.
    return tuple(
        (name, object())
        if name in unreadable
        else (name, tuple(t.shape), t.dtype, next(read[t.device]))
        for name, t in named
    )


def _uninitialized(tensor: Tensor) -> bool:
    lazy = (torch.nn.parameter.UninitializedParameter, torch.nn.parameter.UninitializedBuffer)
    return isinstance(tensor, lazy)


def _bit_sum(tensor: Tensor) -> Tensor:
    """The sum of the elements' bit patterns, in int64: its overflow wraps, the same in
    any order, where a float64 sum of 2^24 elements or more depends on the order.

    Example:
        >>> w = torch.randn(1000)
        >>> bool(_bit_sum(w) == _bit_sum(w.flip(0)))
        True
        >>> # Both sum to 0 as floats: they are other weights all the same.
        >>> _bit_sum(torch.tensor([0.25, -0.25])) == _bit_sum(torch.tensor([0.5, -0.5]))
        tensor(False)
    """
    if tensor.layout != torch.strided:
        # Sparse: its indices and values, in memory of its stored size (read dense, an
        # adjacency of 4·10⁴ nodes had taken 18 GiB).
        coo = tensor.to_sparse().coalesce()
        return _bit_sum(coo.indices()) + _bit_sum(coo.values())
    # Quantized: the values it stands for, so that its scale counts.
    values = tensor.dequantize() if tensor.is_quantized else tensor
    values = torch.view_as_real(values) if values.is_complex() else values
    values = values.to(torch.uint8) if values.dtype == torch.bool else values
    bits = values.view(_BITS_OF_SIZE[values.element_size()]).reshape(-1)
    # In blocks: a sum into int64 casts its input, which had doubled a large buffer.
    return torch.stack([block.sum(dtype=torch.int64) for block in bits.split(_BIT_BLOCK)]).sum()


def _probs(logits: Tensor) -> Tensor:
    return torch.sigmoid(logits) if logits.ndim == 1 else torch.softmax(logits, -1)


def _check_saved_temperature(temperature: object) -> None:
    """A checkpoint's temperature: a positive finite float (inf too is refused: restored,
    it made every prediction uniform without a word)."""
    if not isinstance(temperature, float) or not 0 < temperature < math.inf:
        raise ValueError(
            f"TemperatureRecalibration: a checkpoint's temperature must be a positive "
            f"finite float, got {temperature!r}"
        )
