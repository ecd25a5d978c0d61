"""``CalibrationMonitor``: calibration error, its interval and reliability diagrams every epoch."""

from __future__ import annotations

import uuid
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Literal, NamedTuple

import torch
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_only, rank_zero_warn
from torch import Tensor

from calib_metrics.callbacks import _arguments as checks
from calib_metrics.callbacks import _epoch_end_tags as epoch_end_tags
from calib_metrics.callbacks import _files as files
from calib_metrics.callbacks import _histories as histories
from calib_metrics.callbacks import _loader_results as loader_results
from calib_metrics.callbacks import _outputs as step_output
from calib_metrics.callbacks import _runs as runs
from calib_metrics.callbacks import _samplers as samplers
from calib_metrics.callbacks import _tensorboard as tb
from calib_metrics.callbacks import _watchers as watchers
from calib_metrics.callbacks._identity import IdentityMap
from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.functional.errors import NoPairsError, check_flag, check_tensors
from calib_metrics.functional.intervals import interval_kind
from calib_metrics.functional.multiclass import average_results
from calib_metrics.functional.smooth import SmoothCurve
from calib_metrics.metric import CalibrationError
from calib_metrics.metric_checks import built_again
from calib_metrics.wording import level_text

Extract = Callable[[Any, Any], "tuple[Tensor, ...] | None"]


class CalibrationMonitor(Callback):
    """Log the calibration error with its interval, and the reliability diagram, every epoch.

    Each validation (or test) batch's ``outputs`` feed a
    :class:`~calib_metrics.CalibrationError`: by default ``validation_step`` returns a dict
    holding ``"probs"`` and ``"target"`` (the keys are options); ``extract(outputs, batch)``
    may instead return ``(probs, target)``, or None to skip the batch. With
    ``interval="groups"`` (the bootstrap over sentences or documents, which needs
    ``streaming=False``) the dict also holds ``"groups"``, one id per item, or
    ``extract`` returns ``(probs, target, groups)``. The sanity check's batches are checked
    and dropped: a malformed output (a missing key, a shape, padding without
    ``ignore_index``) is a ValueError before the fit trains, and a None output (a module
    that skips its work during the sanity check) is passed over. At the end of each
    evaluated epoch (never during the sanity check) the callback

    * logs ``{prefix}/calib_err``, ``{prefix}/calib_err_lower`` and
      ``{prefix}/calib_err_upper`` through ``pl_module.log``, so they reach every logger at
      the step ``self.log`` uses and can be monitored by ``ModelCheckpoint`` or
      ``EarlyStopping``; beside them ``{prefix}/smooth_calib_err``, the binning-free
      smooth ECE (:meth:`CalibrationError.compute_smooth`: from the streaming histogram
      when streaming, so no pairs are kept; ``smooth=False`` skips it);
    * draws the reliability diagram ``{prefix}/reliability_diagram``, with the smooth
      curve and its band (:meth:`CalibrationError.plot` with ``smooth=True``: of the
      streaming sketch's cells past its buffer; classwise, on each drawn class's panel;
      ``smooth=False`` leaves them out), (and, with
      ``per_class=True``, the per-class error bars of the paper's Figure 4,
      ``{prefix}/calib_err_per_class``) with ``add_figure`` on every logger whose
      ``experiment`` has it, registers a Custom Scalars "Margin" chart so TensorBoard draws
      the interval as a band over epochs, and writes the raw bins with ``add_tensor``
      (``{prefix}/calib_bins``, ``[n_bins, 3]``: pred_mean, freq, count; classwise
      ``[n_bins, 4]``, every class's bins in class order and the class; per class
      ``{prefix}/calib_per_class``, ``[C, 5]``: error, mean, std, lower, upper) and
      ``add_text`` (a table);
    * saves PNGs, the error-over-epochs curve and ``history.json`` under
      ``<log_dir>/calibration/`` for loggers that cannot show images (``save_png=None``),
      for every logger (``True``) or never (``False``).

    The metric's defaults are the recommended estimator (``bin_size="auto"``, debiased,
    the recentred pair bootstrap; with ``streaming=False`` and ``"groups"`` in the step's
    output, the group bootstrap). With several validation (or test) dataloaders, each
    gets its own result, tagged as Lightning tags them (``val/calib_err/dataloader_idx_1``;
    ``history`` records carry ``dataloader_idx``), and each loader's dict of the metrics
    ``trainer.validate`` / ``test`` return (and print) holds its own values alone. The
    monitor warns once when the LightningModule logs one of its tags itself, at whichever
    measured epoch it first does (the monitor's value would replace the module's: log
    yours as e.g. ``val/ece``), once when ``trainer.test()`` runs with only a
    ``stage="val"`` monitor, and once when the trainer has no logger (the values still
    reach ``trainer.callback_metrics``).

    Under DDP every rank updates and computes (the metric is synchronised; with
    ``streaming=True``, the default, by summing fixed-size histograms, so a long epoch costs
    no memory), and rank zero draws and writes. A distributed sampler that repeats items
    to give every rank as many (or drops them, ``drop_last=True``) changes that whole-set
    value: the monitor warns once, naming how many (``docs/callbacks.md`` says how to
    avoid it).

    The list of past results, :attr:`history`, is saved in checkpoints (the history of the
    run of the Trainer saving one), so a resumed fit continues it. A ``trainer.validate`` /
    ``test`` run with ``ckpt_path=`` keeps its run's history (a run holding none, as a fresh
    monitor's, starts from the checkpoint's) and appends a record whose ``fn``
    is ``"validate"`` / ``"test"`` (``"fit"`` while fitting); every record's ``run`` is the
    id of the Trainer call that made it. A fit record's ``step`` is
    the one ``self.log`` logs the validation at. With ``ckpt_path=`` the record's ``epoch``
    and ``step`` are the checkpoint's ``epoch`` and ``global_step``, as ``ModelCheckpoint``
    names the file (``epoch=0-step=12.ckpt``; optimizer steps taken, so for a checkpoint
    saved at an epoch-end validation one more than that validation's record says), and
    ``checkpoint`` is its path. Without it ``checkpoint`` is None, and the weights are the
    module's current ones: when a fit record of the monitor measured them (the same module,
    which no Trainer the monitor serves has trained since; whichever Trainer evaluates them
    now) the record repeats that record's epoch and step, else it has the trainer's (after
    ``fit``, ``current_epoch`` is ``max_epochs``). TensorBoard gets every evaluation at the
    trainer's step, where Lightning logs its scalars. A run restored from a checkpoint (a
    resumed fit, or ``validate`` / ``test`` with ``ckpt_path=``) adds its records to the
    history file on disk (an evaluation only those it made, not the checkpoint's), never
    shortening it, except that a resumed fit first drops the file's records of weights
    trained past its checkpoint (the run it replaces: fit
    validations logged at or after the checkpoint's step, counted in batches that stepped,
    and evaluations of later weights); any other run rewrites the file with its run's
    history. A fit that starts at step 0 without a checkpoint starts its run's history
    anew, keeping only the ``validate`` / ``test`` records its own Trainer made before it
    (a baseline ``trainer.validate(model)``), which then say ``before_fit`` (True) and are
    drawn before the fit's first point, at the weights the fit started from.

    The history is the run's, a run being the folders its history file goes to (with no
    file, the Trainer's first logger's ``log_dir``): a new Trainer writing to the same
    folders continues it (``Trainer(logger=L).validate(model)`` after
    ``Trainer(logger=L).fit(model)``), a Trainer writing elsewhere has its own, and so has
    each Trainer writing no folder. :attr:`history` is the run's whose Trainer ran last;
    the first run takes the history the monitor holds.

    Args:
        num_classes: None for binary probabilities, else the number of classes C
            (``probs [..., C]``, integer ``target [...]``).
        probs_key: key of the probabilities in the step's output dict.
        target_key: key of the targets in the step's output dict.
        groups_key: key of the group ids (``interval="groups"`` only). The three keys
            differ (unless ``extract`` is given).
        extract: ``extract(outputs, batch) -> (probs, target[, groups]) | None``, replacing
            the keys.
        ignore_index: target value of items to drop (padding).
        stage: ``"val"`` (validation epochs) or ``"test"``.
        every_n_epochs: evaluate every n-th epoch while fitting (a ``ModelCheckpoint`` or
            ``EarlyStopping`` that reads the tags at other epochs is warned of as the fit
            starts).
        prefix: start of every tag (no leading or trailing ``/``); defaults to ``stage``.
            Two monitors of one stage need different prefixes (and so state keys).
        per_class: also log one result per class (needs ``num_classes``): each class's
            one-vs-rest error, whose mean is ``mode="classwise"``'s value
            (``mode="top_label"`` has no per-class results).
        class_names: labels of the per-class results, one per class, unique strings: any
            iterable of them (a list, ``LabelEncoder.classes_``, ``dict.keys()``); used with
            ``per_class=True`` (without it, a warning), default ``0 .. C-1``.
        save_png: PNGs for loggers without images (None), for all (True) or never (False).
        prog_bar: show ``{prefix}/calib_err`` in the progress bar.
        smooth: also log the smooth calibration error, and draw the smooth curve with its
            bootstrap band on each diagram (default True).
        bin_size, n_samples, confidence, streaming: passed to the metric (defaults
            ``"auto"``, 10000, 0.95, True).
        metric_kwargs: any other :class:`~calib_metrics.CalibrationError` option
            (``sync_on_compute`` must stay True under DDP, refused at setup otherwise: the
            monitor logs the whole set's value).

    Example:
        >>> import torch
        >>> monitor = CalibrationMonitor(num_classes=3, ignore_index=-100, bin_size=50)
        >>> monitor.scalar_names
        ('val/calib_err', 'val/calib_err_lower', 'val/calib_err_upper')
        >>> monitor.smooth_name
        'val/smooth_calib_err'
        >>> probs = torch.softmax(torch.randn(8, 5, 3), -1)
        >>> target = torch.randint(0, 3, (8, 5))
        >>> monitor.extract_batch({"probs": probs, "target": target}, None)[0].shape
        torch.Size([8, 5, 3])
        >>> monitor.state_dict()
        {'history': []}
    """

    def __init__(
        self,
        num_classes: int | None = None,
        *,
        probs_key: str = "probs",
        target_key: str = "target",
        groups_key: str = "groups",
        extract: Extract | None = None,
        ignore_index: int | None = None,
        stage: Literal["val", "test"] = "val",
        every_n_epochs: int = 1,
        prefix: str | None = None,
        per_class: bool = False,
        class_names: Iterable[str] | None = None,
        save_png: bool | None = None,
        prog_bar: bool = False,
        smooth: bool = True,
        bin_size: int | str = "auto",
        n_samples: int = 10000,
        confidence: float = 0.95,
        streaming: bool = True,
        **metric_kwargs: Any,
    ) -> None:
        super().__init__()
        if stage not in ("val", "test"):
            raise ValueError(f"stage must be 'val' or 'test', got {stage!r}")
        if not isinstance(every_n_epochs, int) or isinstance(every_n_epochs, bool):
            raise ValueError(f"every_n_epochs must be an integer >= 1, got {every_n_epochs!r}")
        if every_n_epochs < 1:
            raise ValueError(f"every_n_epochs must be an integer >= 1, got {every_n_epochs!r}")
        checks.check_extract(extract)
        keys = {"probs_key": probs_key, "target_key": target_key, "groups_key": groups_key}
        for name, key in keys.items():
            checks.check_key(name, key)
        if extract is None:  # extract replaces the keys: they may be anything then
            checks.check_keys_differ(keys)
        if prefix is not None:
            checks.check_prefix(prefix)
        for name, flag in (("per_class", per_class), ("prog_bar", prog_bar), ("smooth", smooth)):
            check_flag(name, flag)
        if per_class and num_classes is None:
            raise ValueError("per_class=True needs num_classes (one result per class)")
        if per_class and metric_kwargs.get("mode") == "top_label":
            raise ValueError(
                "per_class=True needs one result per class, and mode='top_label' has none: it "
                "measures each item's top-label confidence only; leave per_class out, or use "
                "mode='one_vs_rest' (or 'classwise')"
            )
        # Names label the per-class results and a classwise monitor's panels.
        named = per_class or metric_kwargs.get("mode") == "classwise"
        labels = checks.check_class_names(class_names, num_classes, named)
        if save_png is not None and not isinstance(save_png, bool):  # 1 == True had passed
            raise ValueError(f"save_png must be None, True or False, got {save_png!r}")
        if "average" in metric_kwargs:
            raise ValueError("set per_class=True instead of average (the monitor logs micro)")
        options = dict(
            num_classes=num_classes,
            ignore_index=ignore_index,
            bin_size=bin_size,
            n_samples=n_samples,
            confidence=confidence,
            streaming=streaming,
            **metric_kwargs,
        )
        # The metric validates every option up front, so a bad one fails here, not at epoch end.
        self.metric = CalibrationError(**options)
        # Per-class results are each class's one-vs-rest result (classwise mode averages
        # exactly these): the metric keeps every class's pairs apart, so they come from it,
        # not from a second metric holding the same state (600 MiB more at C = 50).
        self.per_class = per_class
        self._options = options
        # Metrics of the second, third, ... dataloader, made when their first batch comes.
        self._more_loaders: dict[int, CalibrationError] = {}
        self.num_classes = num_classes
        self.probs_key = probs_key
        self.target_key = target_key
        self.groups_key = groups_key
        self.needs_groups = self.metric.interval == "groups"
        # interval=None (the default) resamples groups whenever the step gives them.
        self.accepts_groups = not self.metric.streaming and self.metric.interval in (None, "groups")
        self.extract = extract
        self.stage = stage
        self.every_n_epochs = every_n_epochs
        self.prefix = prefix if prefix is not None else stage
        self.class_names = labels or [str(c) for c in range(num_classes or 0)]
        self._named_classes = labels is not None
        self.save_png = save_png
        self.prog_bar = prog_bar
        self.smooth = smooth
        self.confidence = confidence
        # The history of each run (the folders it writes to), and of the one served now.
        self._histories = histories.Runs()
        self._active = False
        # Whether the batches are only checked, not measured (the sanity check's).
        self._checking = False
        # The loader suffixes whose charts each experiment got, in order: by id, with a
        # reference that tells a live experiment from a freed one whose id was reused.
        self._layouts_written: dict[int, tuple[Callable[[], Any], list[str]]] = {}
        self._warned: set[str] = set()
        # Each loader's batches this epoch (on this rank): [seen, skipped by extract].
        self._batches: dict[int, list[int]] = {}
        self._layout_suffixes = [""]
        # The trainer function of the run that restored a checkpoint (on_load_checkpoint),
        # None when this run restored none.
        self._restored: str | None = None
        # Where the checkpoint a resumed fit started from is (batches that stepped to its
        # weights, read once the fit runs: _note_resume_point), else None.
        self._resumed_at: int | None = None
        # How a record names the weights each module holds (epoch, step, checkpoint path):
        # its last fit record's, or a restored checkpoint's, until a Trainer trains it
        # (weakly: the monitor must not keep a finished module alive).
        self._weights: IdentityMap[tuple[int, int, str | None]] = IdentityMap()
        # The id of the Trainer run (fit, validate, test) making records: setup.
        self._run = _new_run_id()
        # The entries of Lightning's results that this monitor's self.log made (weakly:
        # Lightning owns them), dropped when the next epoch starts: _forget_entries.
        self._entries: list[Callable[[], Any]] = []

    # ------------------------------------------------------------------ names
    @property
    def state_key(self) -> str:
        return self._generate_state_key(stage=self.stage, prefix=self.prefix)

    @property
    def scalar_names(self) -> tuple[str, str, str]:
        """The three scalar tags: error, lower and upper end of the interval."""
        return self._scalar_names("")

    @property
    def smooth_name(self) -> str:
        """The smooth calibration error's scalar tag (logged with ``smooth=True``)."""
        return self._smooth_name("")

    def _smooth_name(self, suffix: str) -> str:
        return f"{self.prefix}/smooth_calib_err{suffix}"

    def _scalar_names(self, suffix: str) -> tuple[str, str, str]:
        """Scalar tags of one dataloader: ``suffix`` is Lightning's ``/dataloader_idx_i``."""
        base = f"{self.prefix}/calib_err"
        return f"{base}{suffix}", f"{base}_lower{suffix}", f"{base}_upper{suffix}"

    # ---------------------------------------------------------------- collect
    def extract_batch(self, outputs: Any, batch: Any) -> tuple[Tensor, ...] | None:
        """``(probs, target)`` of one step's outputs (``(probs, target, groups)`` with
        ``interval="groups"``), or None to skip the batch."""
        groups = None
        if self.extract is not None:
            pair = self.extract(outputs, batch)
            if pair is None:
                return None
            # A monitor that keeps no group ids takes them and warns, as from the dict.
            forms = [("probs", "target"), ("probs", "target", "groups")]
            pair = step_output.extracted(pair, forms[1:] if self.needs_groups else forms)
            probs, target = pair[0], pair[1]
            if len(pair) == 3 and not self.accepts_groups:
                self._warn_groups_unused("extract returns group ids (its third item)")
            elif len(pair) == 3:
                groups = pair[2]
        else:
            if not isinstance(outputs, Mapping) or self.probs_key not in outputs:
                got = sorted(outputs) if isinstance(outputs, Mapping) else type(outputs).__name__
                raise ValueError(
                    f"CalibrationMonitor needs the {self.stage} step to return a dict with keys "
                    f"{self.probs_key!r} and {self.target_key!r} (got {got}); set probs_key / "
                    "target_key or pass extract=(outputs, batch) -> (probs, target)"
                )
            if self.target_key not in outputs:
                raise ValueError(
                    f"the {self.stage} step's output has no {self.target_key!r} "
                    f"(keys: {sorted(outputs)})"
                )
            probs, target = outputs[self.probs_key], outputs[self.target_key]
            if self.needs_groups:
                if self.groups_key not in outputs:
                    raise ValueError(
                        f"interval='groups' needs the {self.stage} step's output to hold "
                        f"{self.groups_key!r} (the group id of every item; keys: "
                        f"{sorted(outputs)})"
                    )
                groups = outputs[self.groups_key]
            elif self.accepts_groups:
                groups = outputs.get(self.groups_key)
            elif self.groups_key in outputs:
                self._warn_groups_unused(f"the {self.stage} step returns {self.groups_key!r}")
        check_tensors(probs=probs, target=target)
        probs = probs.detach()
        # Half precision (mixed-precision training) loses the resolution the bins need.
        if probs.dtype in (torch.float16, torch.bfloat16):
            probs = probs.float()
        if groups is None:
            return probs, target.detach()
        if not isinstance(groups, Tensor):
            raise ValueError(f"groups must be a tensor, got {type(groups).__name__}")
        return probs, target.detach(), groups.detach()

    def _warn_groups_unused(self, given: str) -> None:
        """Warn once that the group ids ``given`` are dropped, and why: the interval asked
        for (``interval="pairs"`` in the exact mode), else what would keep them."""
        if not self.metric.streaming and self.metric.interval == "pairs":
            # Asked for by name (the default is None): advice to undo it had read as a fault.
            self._warn_once(
                "groups_unused",
                f"{given}, but the group ids are not used: interval='pairs' was asked for, "
                "which resamples pairs",
            )
            return
        # What keeps the ids: the exact mode, and an interval that resamples groups.
        fix = " and ".join(
            option
            for option, needed in (
                ("streaming=False", self.metric.streaming),
                ("interval=None (or 'groups')", self.metric.interval not in (None, "groups")),
            )
            if needed
        )
        # Algorithm 2 resamples nothing: it draws each bin's frequency from a normal.
        drawn = (
            "(the paper's Algorithm 2) draws each bin's frequency from a normal, as if its "
            "pairs were independent"
            if self.metric.interval == "paper"
            else "resamples pairs"
        )
        self._warn_once(
            "groups_unused",
            f"{given}, but this monitor (streaming={self.metric.streaming}, "
            f"interval={self.metric.interval!r}) keeps no group ids, so its interval "
            f"{drawn}; pass {fix} to resample whole groups",
        )

    def _due(self, trainer: Trainer) -> bool:
        if trainer.sanity_checking:
            return False
        fitting = runs.trainer_fn(trainer) == "fit"
        return not fitting or (trainer.current_epoch + 1) % self.every_n_epochs == 0

    def _metric(self, dataloader_idx: int = 0) -> CalibrationError:
        """The metric of one dataloader."""
        if dataloader_idx == 0:
            return self.metric
        if dataloader_idx not in self._more_loaders:
            with built_again():  # its options' warnings were said with the first metric's
                metric = CalibrationError(**self._options)
            self._more_loaders[dataloader_idx] = metric.to(self.metric.device)
        return self._more_loaders[dataloader_idx]

    def _all_metrics(self) -> list[CalibrationError]:
        return [self._metric(idx) for idx in (0, *self._more_loaders)]

    def _epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # Every epoch, measured or not: the module's own self.log of a tag runs whether
        # the monitor logs this epoch or not.
        self._forget_entries(trainer)
        self._active = self._due(trainer)
        self._checking = trainer.sanity_checking
        self._batches = {}
        if self._active:
            self._check_samplers(trainer)
        for metric in self._all_metrics():
            metric.to(pl_module.device)
            metric.reset()

    def _check_samplers(self, trainer: Trainer) -> None:
        """Warn once when a distributed sampler repeats (or drops) items of the evaluation
        set: the value logged as the whole set's would count them twice (or not at all)."""
        if "uneven" in self._warned:
            return
        loaders = samplers.loaders_of(
            trainer.val_dataloaders if self.stage == "val" else trainer.test_dataloaders
        )
        uneven = {i: u for i, loader in enumerate(loaders) if (u := samplers.uneven_items(loader))}
        if uneven:
            message = samplers.uneven_message(
                self.stage, uneven, len(loaders) > 1, ignore_index=self.metric.ignore_index
            )
            self._warn_once("uneven", message)

    def _batch_end(self, outputs: Any, batch: Any, dataloader_idx: int) -> None:
        # The sanity check's batches go through the metric's checks too, so that a
        # malformed output (a key, a shape, padding without ignore_index) fails the fit
        # before it trains; the epoch end drops them.
        if not (self._active or self._checking):
            return
        if self._checking and outputs is None:
            return  # a module skipping its work during the sanity check: nothing to check
        counts = self._batches.setdefault(dataloader_idx, [0, 0])  # seen, skipped
        counts[0] += 1
        pair = self.extract_batch(outputs, batch)
        if pair is None:
            counts[1] += 1
            return
        groups = {"groups": pair[2]} if len(pair) == 3 else {}
        self._metric(dataloader_idx).update(*pair[:2], **groups)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            rank_zero_warn(f"CalibrationMonitor: {message}")

    def _stage_is_monitored(self, trainer: Trainer, stage: str) -> bool:
        """Whether another CalibrationMonitor of the Trainer measures ``stage``."""
        return any(
            isinstance(c, CalibrationMonitor) and c.stage == stage for c in trainer.callbacks
        )

    def on_test_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.stage == "val" and not self._stage_is_monitored(trainer, "test"):
            self._warn_once(
                "stage",
                "this monitor has stage='val', so trainer.test() is not measured; add "
                "CalibrationMonitor(stage='test') to the callbacks for the test set",
            )

    def on_validation_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        validating = runs.trainer_fn(trainer) == "validate"
        if self.stage == "test" and validating and not self._stage_is_monitored(trainer, "val"):
            self._warn_once(
                "stage",
                "this monitor has stage='test', so trainer.validate() is not measured; add "
                "CalibrationMonitor(stage='val') to the callbacks for the validation set",
            )

    def on_validation_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.stage == "val":
            self._epoch_start(trainer, pl_module)

    def on_test_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.stage == "test":
            self._epoch_start(trainer, pl_module)

    def on_validation_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if self.stage == "val":
            self._batch_end(outputs, batch, dataloader_idx)

    def on_test_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if self.stage == "test":
            self._batch_end(outputs, batch, dataloader_idx)

    def on_validation_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.stage == "val":
            self._epoch_end(trainer, pl_module)

    def on_test_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.stage == "test":
            self._epoch_end(trainer, pl_module)

    # ---------------------------------------------------------------- compute
    def _suffixes(self, trainer: Trainer) -> dict[int, str]:
        """Each dataloader's tag suffix: none for one loader, else Lightning's naming."""
        n_loaders = runs.loader_count(trainer, self.stage)
        if n_loaders <= 1:
            return {0: ""}
        return {i: f"/dataloader_idx_{i}" for i in range(n_loaders)}

    def _check_tags(self, trainer: Trainer, suffixes: dict[int, str]) -> None:
        """Warn once when the LightningModule logs one of the monitor's scalar tags itself.

        Both values would go to one tag, and the monitor's (logged later) replaces the
        module's without a word. Lightning has no public list of this epoch's logged
        names, so this reads its result collection, and checks nothing if it is absent.
        Every measured epoch is checked until the warning is given, not only the first: a
        module may start logging the tag at a later epoch, or in a later
        ``trainer.validate``. One pass over this epoch's entries, at its end.
        """
        if "tags" in self._warned:
            return
        results = getattr(trainer, "_results", None)
        taken = set()
        for item in (results or {}).values():
            meta = getattr(item, "meta", None)
            if meta is None or not isinstance(getattr(meta, "name", None), str):
                continue
            if getattr(item, "has_reset", False):
                continue  # logged at an earlier epoch (or evaluation), not at this one
            index = getattr(meta, "dataloader_idx", None)
            add_index = getattr(meta, "add_dataloader_idx", False) and index is not None
            taken.add(meta.name + (f"/dataloader_idx_{index}" if add_index else ""))
        ours = {name for suffix in suffixes.values() for name in self._scalar_names(suffix)}
        ours |= (
            {self._smooth_name(suffix) for suffix in suffixes.values()} if self.smooth else set()
        )
        clash = sorted(taken & ours)
        if clash:
            self._warn_clash(clash)

    def _warn_clash(self, clash: list[str]) -> None:
        self._warn_once(
            "tags",
            f"the LightningModule also logs {', '.join(map(repr, clash))}, a tag this "
            "monitor logs, and the monitor's value replaces it; log your metric under "
            "another name (e.g. self.log('val/ece', metric)) or set prefix= on the monitor",
        )

    def _guard_tags(self, pl_module: LightningModule, logged: list[str]) -> None:
        """Keep the module's own ``on_{stage}_epoch_end``, which Lightning calls after this
        one, from logging the tags just logged (:mod:`._epoch_end_tags`): :meth:`_check_tags`
        sees only what was logged before the monitor."""
        hook = self._epoch_end_hook
        # A module that does not override the hook (in its class or on itself) logs
        # nothing there: no guard.
        overridden = hook in vars(pl_module) or (
            getattr(type(pl_module), hook) is not getattr(LightningModule, hook)
        )
        if logged and overridden:
            epoch_end_tags.guard(pl_module, hook, logged, lambda tag: self._warn_clash([tag]))

    def _clear_entries(self, trainer: Trainer, keys: Iterable[str]) -> None:
        """Drop Lightning's entries of ``keys`` (:meth:`_entry_key`) before logging them.

        Lightning keeps one entry per hook and tag across the loop's runs, resetting only its
        value: the module's, made at an epoch end the monitor did not log (the sanity check,
        ``every_n_epochs``), refused the monitor's own call when their arguments differed
        ("You called self.log(...) twice ... with different arguments"). :meth:`_check_tags`
        has warned of it; the monitor's value replaces it. The other way round, the monitor's
        entry refusing the module's call at such an epoch, is :meth:`_forget_entries`'s.
        """
        results = getattr(trainer, "_results", None)
        if isinstance(results, dict):
            for key in keys:
                results.pop(key, None)

    def _forget_entries(self, trainer: Trainer) -> None:
        """Drop the entries this monitor's ``self.log`` made at an earlier epoch end from
        Lightning's results, before this epoch's hooks log anything.

        Lightning keeps one entry per hook and tag across epochs (and its loop's runs),
        resetting only its value, and compares every later ``self.log`` of the tag in that
        hook with the entry's arguments. Left there, the monitor's entry (logged with
        ``add_dataloader_idx=False``) refused the module's own ``self.log`` of the tag in
        its epoch-end hook at an epoch the monitor did not log (``every_n_epochs``, nothing
        to measure, a second ``trainer.test``), which the guard does not cover ("You called
        self.log(...) twice ... with different arguments"), failing the fit. The values
        have reached the loggers and ``callback_metrics`` by then. Only the monitor's own
        entries go (matched by identity): the module's stay for :meth:`_check_tags`.
        """
        results = getattr(trainer, "_results", None)
        if not isinstance(results, dict) or not self._entries:
            return
        live = [entry for ref in self._entries if (entry := ref()) is not None]
        # Identity, not ==: a torchmetrics Metric's == builds a new metric.
        mine = [key for key, entry in results.items() if any(entry is e for e in live)]
        dropped = [results.pop(key) for key in mine]
        # Entries of another loop's results (fit's validation vs trainer.validate) wait for
        # that loop's next epoch.
        self._entries = [
            ref
            for ref in self._entries
            if (entry := ref()) is not None and not any(entry is d for d in dropped)
        ]

    def _note_entries(self, trainer: Trainer, keys: Iterable[str]) -> None:
        """Remember the entries just logged under ``keys``, for :meth:`_forget_entries`."""
        results = getattr(trainer, "_results", None)
        if isinstance(results, dict):
            for key in keys:
                entry = results.get(key)
                if entry is not None:
                    self._entries.append(_reference(entry))

    def _entry_key(self, name: str, loader: int | None) -> str:
        """The key of Lightning's entry for ``self.log(name)`` in this epoch-end hook: logged
        for a dataloader (:mod:`._loader_results`), the key ends in its index."""
        key = f"{self._epoch_end_hook}.{name}"
        return key if loader is None else f"{key}.{loader}"

    @property
    def _epoch_end_hook(self) -> str:
        return "on_validation_epoch_end" if self.stage == "val" else "on_test_epoch_end"

    def _epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self._checking:
            self._checking = False
            for metric in self._all_metrics():
                metric.reset()  # checked, never measured
        if not self._active or trainer.sanity_checking:
            return
        self._active = False
        self._note_resume_point(trainer)  # a resumed fit that validates before it trains
        suffixes = self._suffixes(trainer)
        self._layout_suffixes = list(suffixes.values())
        self._check_tags(trainer, suffixes)
        if not trainer.loggers:
            # With save_png=True the files are written all the same: "only" had sent the
            # user who asked for them away from the folder that holds them.
            files_too = ""
            if self.save_png:
                folder = tb.log_dir_of(None, trainer.default_root_dir) / "calibration"
                files_too = f"; the figures and the history file go to {folder}"
            self._warn_once(
                "logger",
                "the trainer has no logger, so the scalars go only to trainer.callback_metrics, "
                f"the metrics trainer.validate()/test() return, and this monitor's history"
                f"{files_too}",
            )
        step = int(trainer.fit_loop.epoch_loop._batches_that_stepped)
        logged = []
        for idx, suffix in suffixes.items():
            logged += self._loader_end(trainer, pl_module, step, idx, suffix)
        self._guard_tags(pl_module, logged)
        for metric in self._all_metrics():
            metric.reset()

    def _loader_end(
        self, trainer: Trainer, pl_module: LightningModule, step: int, idx: int, suffix: str
    ) -> list[str]:
        """Compute, log, record and draw the result of one dataloader; the tags logged."""
        metric = self._metric(idx)
        try:
            # compute_result() synchronises the ranks' states (without DDP it does nothing).
            # A classwise metric's figure draws each class's own bins, not their average's.
            classes = metric.compute_class_results() if metric.mode == "classwise" else None
            result = metric.compute_result() if classes is None else average_results(classes)
        except NoPairsError:
            # Every rank sees the same synchronised state, so every rank skips together.
            loader = f" of {self.stage} dataloader {idx}" if suffix else ""
            rank_zero_warn(
                f"CalibrationMonitor: nothing to measure this epoch{loader}, so nothing is "
                f"logged: {self._why_no_pairs(idx)}"
            )
            return []
        per_class = None
        if self.per_class:
            per_class = classes if classes is not None else metric._one_vs_rest_results()
        curves = self._curves(trainer, metric, classwise=classes is not None)
        numbers = tb.result_numbers(result)
        scalars = dict(zip(self._scalar_names(suffix), ("error", "lower", "upper"), strict=True))
        if self.smooth:
            # The drawn curve's error is the one logged (one bisection for σ*, not two);
            # a classwise metric's is its classes' mean, of more classes than are drawn.
            pooled = curves is not None and classes is None
            smooth = curves[0].error if pooled else metric.compute_smooth()
            numbers["smooth_error"] = smooth.item()
            scalars[self._smooth_name(suffix)] = "smooth_error"
        values = {tag: numbers[key] for tag, key in scalars.items()}
        self._log_scalars(trainer, pl_module, values, idx, suffix)
        # A classwise result's own bins are every class's sorted together: logged by class.
        bins = tb.bins_tensor(result) if classes is None else tb.classwise_bins_tensor(classes)
        record = self._record(trainer, pl_module, step, result, per_class, bins)
        if record["fn"] == "fit":
            self._weights[pl_module] = (record["epoch"], record["step"], None)
        if self.smooth:
            record["smooth_error"] = numbers["smooth_error"]
        if suffix:
            record["dataloader_idx"] = idx
        self.history.append(record)
        if record["fn"] != "fit":
            self._histories.current.note_evaluation(trainer, record)
        if trainer.is_global_zero:
            # The figures name the interval the metric drew (on the synchronised state).
            drawn_from = result if classes is None else classes
            drawn = (metric._drawn_interval(drawn_from), metric._debias)
            figure = _Figure(result, per_class, classes, curves)
            self._write(trainer, step, figure, drawn, suffix, bins)
        return list(scalars)

    def _curves(
        self, trainer: Trainer, metric: CalibrationError, classwise: bool
    ) -> dict[int, SmoothCurve] | None:
        """The smooth curves the diagram draws (``smooth=True``, and something keeps the
        figures), else None. Every rank makes them (they synchronise the state, as
        compute_result() does), so every rank must decide alike: rank 0's answer, which
        alone draws. A rank > 0 holds Lightning's dummy experiment, which seems to take
        figures where rank 0's CSV logger does not: rank 1 had waited in the curves' gather
        for ever."""
        if not self.smooth or not trainer.strategy.broadcast(self._draws_figures(trainer), src=0):
            return None
        return metric._smooth_curves(classwise=classwise)

    def _why_no_pairs(self, idx: int) -> str:
        """Why a loader's epoch gave no pairs, from this rank's batches (the metric's own
        "call update()" had sent the user to a call the monitor makes)."""
        seen, skipped = self._batches.get(idx, [0, 0])
        stage = "validation" if self.stage == "val" else "test"
        if seen == 0:
            limit = f"limit_{self.stage}_batches"
            return f"no {stage} batch reached it (an empty dataloader, or {limit})"
        if skipped == seen:
            return f"extract returned None for all {seen} batch{'es' * (seen != 1)}"
        return f"its {step_output.held_no_pairs(seen - skipped)}"

    def _log_scalars(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        values: dict[str, float],
        idx: int,
        suffix: str,
    ) -> None:
        """Log one dataloader's scalars (by tag) through ``pl_module.log``. With several
        loaders, they are logged for their loader (:mod:`._loader_results`): each loader's
        dict of the metrics ``validate`` / ``test`` return, and print, holds its own."""
        n_loaders = runs.loader_count(trainer, self.stage)
        for_loader = bool(suffix) and loader_results.available(trainer, n_loaders)
        # Logged for its loader, a name takes Lightning's suffix, the tag's own.
        names = {tag: tag.removesuffix(suffix) if for_loader else tag for tag in values}
        keys = [self._entry_key(name, idx if for_loader else None) for name in names.values()]
        self._clear_entries(trainer, keys)
        error_tag = self._scalar_names(suffix)[0]
        loader = loader_results.logging_for(trainer, idx) if for_loader else nullcontext()
        with warnings.catch_warnings(), loader:
            if not trainer.loggers:
                # Lightning warns for every key, every epoch; the monitor said it once.
                warnings.filterwarnings("ignore", message=r"You called `self\.log\(")
            for tag, value in values.items():
                pl_module.log(
                    names[tag],
                    tb.float64(value, pl_module.device),
                    on_step=False,
                    on_epoch=True,
                    prog_bar=self.prog_bar and tag == error_tag,
                    logger=True,
                    # Lightning adds the suffix of the loader logged for; else the name
                    # holds it already (or there is one loader, named by none).
                    add_dataloader_idx=for_loader,
                    # Values are identical on every rank (synchronised above); syncing only
                    # keeps Lightning from warning about epoch-level logging under DDP.
                    sync_dist=trainer.world_size > 1,
                )
        self._note_entries(trainer, keys)

    def _record(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        step: int,
        result: CalibrationResult,
        per_class: list[CalibrationResult] | None,
        bins: Tensor,
    ) -> dict[str, Any]:
        record: dict[str, Any] = {
            "stage": self.stage,
            **self._when(trainer, pl_module, step),
            "run": self._run,
            **tb.result_numbers(result),
            "confidence": self.confidence,
            "n_pairs": int(bins[:, 2].sum().item()),
            "bins": tb.bins_record(bins),
        }
        if per_class is not None:
            pairs = zip(self.class_names, per_class, strict=True)
            record["per_class"] = {name: tb.result_numbers(r) for name, r in pairs}
        return record

    def _when(self, trainer: Trainer, pl_module: LightningModule, step: int) -> dict[str, Any]:
        """Which run measured which weights: the trainer function, the epoch and step of the
        weights, for the history record. In a validate / test run with ``ckpt_path=``, the
        checkpoint's ``epoch`` and ``global_step`` (as ModelCheckpoint names the file) and its
        path as ``checkpoint``; without, the epoch and step of this monitor's last fit record
        when the module has not been trained since (the same weights), else the trainer's."""
        fn = runs.trainer_fn(trainer)
        when: dict[str, Any] = {"fn": fn, "epoch": int(trainer.current_epoch), "step": step}
        if fn == "fit":
            return when
        when["checkpoint"] = None
        named = self._weights.get(pl_module)
        if named is not None:
            # The weights the module's last fit validation measured (after fit the trainer's
            # epoch is the next one: 3 after epochs 0-2), whichever Trainer evaluates them
            # now, or the checkpoint this run or an earlier evaluation restored
            # (on_load_checkpoint): named as they were named.
            when["epoch"], when["step"], when["checkpoint"] = named
        return when

    # ------------------------------------------------------------------ write
    def _destinations(self, trainer: Trainer) -> tuple[list[tuple[Any, Any]], list[Path]]:
        """The (logger, experiment) pairs that take figures, and the folders that get files."""
        experiments, png_dirs = [], []
        for logger in trainer.loggers:
            experiment = tb.experiment_of(logger)
            takes_figures = tb.has_method(experiment, "add_figure")
            if takes_figures:
                experiments.append((logger, experiment))
            if self.save_png or (self.save_png is None and not takes_figures):
                png_dirs.append(tb.log_dir_of(logger, trainer.default_root_dir))
        if self.save_png and not trainer.loggers:
            png_dirs.append(tb.log_dir_of(None, trainer.default_root_dir))
        return experiments, list(dict.fromkeys(png_dirs))  # unique, in order

    def _run_folders(self, trainer: Trainer) -> tuple[str, ...]:
        """The folders naming the trainer's run (:mod:`._histories`): those its history
        file goes to, so that two Trainers writing one file continue one history."""
        return histories.run_folders(trainer, self._destinations(trainer)[1])

    def _draws_figures(self, trainer: Trainer) -> bool:
        """Whether a logger or a folder would keep the figures (else they are not drawn)."""
        experiments, png_dirs = self._destinations(trainer)
        return bool(experiments or png_dirs)

    @rank_zero_only
    def _write(
        self,
        trainer: Trainer,
        step: int,
        figure: _Figure,
        drawn: tuple[str, bool],
        suffix: str = "",
        bins: Tensor | None = None,
    ) -> None:
        experiments, png_dirs = self._destinations(trainer)
        if not experiments and not png_dirs:
            return  # no logger would keep the figures: drawing them is time spent for nothing
        from calib_metrics import plot  # matplotlib only once there is something to draw

        result, per_class, classes, curves = figure

        record = self.history[-1]
        run = "" if record["fn"] == "fit" else f" · {record['fn']}"
        title = f"{self.prefix}{suffix}{run} · epoch {record['epoch']} · step {record['step']}"
        interval, debias = drawn
        kind = {"confidence": self.confidence, "interval": interval, "debias": debias}
        # The figures name a norm other than l2: a max-norm error had read as the l2 one.
        norm = self.metric.norm
        if classes is None:
            curve = None if curves is None else curves[0]
            diagram = plot.reliability_diagram(
                result, title=title, norm=norm, smooth=curve, **kind
            )[0]
        else:  # one panel per class: one diagram of every class's bins would mix them
            from calib_metrics.plot_panels import classwise_panels

            heading = f"{title} · classwise {plot.describe(result, norm)}"
            names = self.class_names if self._named_classes else None
            smooth = {c: [k] for c, k in (curves or {}).items()}
            diagram = classwise_panels(
                classes, title=heading, class_names=names, norm=norm, smooth=smooth, **kind
            )[0]
        figures = {"reliability_diagram": diagram}
        if per_class is not None:
            errors = dict(zip(self.class_names, per_class, strict=True))
            # A class's pairs are drawn one by one where the pooled ones are drawn by item.
            own = interval_kind(per_class[0])
            of_classes = kind if own is None else kind | {"interval": own.interval}
            figures["calib_err_per_class"] = plot.per_label_errors(
                errors, names=(f"{self.prefix}{suffix}",), title=title, norm=norm, **of_classes
            )[0]
        for logger, experiment in experiments:
            self._write_experiment(
                logger, experiment, step, result, per_class, figures, suffix, bins
            )
        index = record.get("dataloader_idx")
        history = [r for r in self.history if r.get("dataloader_idx") == index]
        name = files.figure_suffix(record, _validates_within_epochs(trainer), self.stage)
        for folder in png_dirs:
            files.write_files(
                folder / "calibration",
                tb.safe_name(self.prefix + suffix),
                name,
                figures,
                history,
                f"{self.prefix}{suffix} {plot.error_name(norm)} ({plot.interval_label(**kind)})",
                # A test monitor's test replaces its files, as a fit's validation does.
                unique=not files.own_run(record, self.stage),
                # Only a run continuing a checkpoint's history continues the file's; a fresh
                # fit into the same folder is another run, and rewrites it.
                merge=self._restored is not None or self._histories.current.from_checkpoint,
                resumed_at=self._resumed_at,
                # A validate / test run adds its own records: the checkpoint's other ones
                # may be of a run that a resumed fit replaced, and the file dropped.
                run=None if self._restored == "fit" else self._run,
            )

    def _write_experiment(
        self,
        logger: Any,
        experiment: Any,
        step: int,
        result: CalibrationResult,
        per_class: list[CalibrationResult] | None,
        figures: dict[str, Any],
        suffix: str = "",
        bins: Tensor | None = None,
    ) -> None:
        bins = tb.bins_tensor(result) if bins is None else bins
        if tb.has_method(experiment, "add_custom_scalars"):
            self._write_layout(logger, experiment)
        for name, fig in figures.items():
            # close=False: these Figures are not pyplot's, so there is nothing to close.
            tag = f"{self.prefix}/{name}{suffix}"
            experiment.add_figure(tag, fig, global_step=step, close=False)
        if tb.has_method(experiment, "add_tensor"):
            experiment.add_tensor(f"{self.prefix}/calib_bins{suffix}", bins, global_step=step)
            if per_class is not None:
                experiment.add_tensor(
                    # Not the figure's tag: TensorBoard keeps one plugin per tag and run.
                    f"{self.prefix}/calib_per_class{suffix}",
                    tb.per_class_tensor(per_class),
                    global_step=step,
                )
        if tb.has_method(experiment, "add_text"):
            norm = self.metric.norm  # named as the figures name it
            text = tb.bins_markdown(result, self.confidence, bins, self.class_names, norm)
            if per_class is not None:
                text += "\n\n" + tb.per_class_markdown(per_class, self.class_names, norm)
            experiment.add_text(f"{self.prefix}/calib_bins{suffix}", text, global_step=step)
        if tb.has_method(experiment, "flush"):
            experiment.flush()

    def _write_layout(self, logger: Any, experiment: Any) -> None:
        """Write the Custom Scalars layout when this run's loaders add charts to what the
        experiment got: TensorBoard shows the last layout written, so a fit with one loader
        then a validate with two must rewrite it with all three charts."""
        ref, written = self._layouts_written.get(id(experiment), (None, None))
        if ref is None or ref() is not experiment:
            # A new experiment, perhaps at a freed one's address (the next fit's logger in
            # a notebook), whose id alone had read as "layout written".
            written = None
        suffixes = list(dict.fromkeys([*(written or []), *self._layout_suffixes]))
        if suffixes != written:
            tb.add_layout(experiment, self._layout(logger, suffixes))
            self._layouts_written[id(experiment)] = (_reference(experiment), suffixes)

    def _layout(self, logger: Any, suffixes: list[str]) -> dict[str, Any]:
        """One Custom Scalars "Margin" chart per dataloader suffix in ``suffixes`` (with the
        charts other monitors wrote to it: :func:`._tensorboard.add_layout`)."""
        layout: dict[str, Any] = {}
        for suffix in suffixes:
            value, lower, upper = (tb.tag_for(logger, n) for n in self._scalar_names(suffix))
            title = f"{value} ({level_text(self.confidence)} interval)"
            for category, charts in tb.margin_layout(title, value, lower, upper).items():
                layout.setdefault(category, {}).update(charts)
        return layout

    # ------------------------------------------------------------------ state
    @property
    def history(self) -> list[dict[str, Any]]:
        """The records of the run the monitor serves now (the folder its Trainer writes to:
        :mod:`._histories`), one per evaluated epoch and dataloader."""
        return self._histories.current.history

    @history.setter
    def history(self, records: list[dict[str, Any]]) -> None:
        self._histories.current.history = records

    def state_dict(self) -> dict[str, Any]:
        return _state(self.history)

    def on_save_checkpoint(
        self, trainer: Trainer, pl_module: LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        """Store the history of the run of the Trainer saving the checkpoint. Lightning
        stores :meth:`state_dict` first, which knows no Trainer and gives the run served
        now: another Trainer's, for ``trainer_a.save_checkpoint(path)`` after
        ``trainer_b.fit``."""
        run = self._histories.of(trainer, self._run_folders(trainer))
        saved = checkpoint.get("callbacks")
        if isinstance(saved, dict) and self.state_key in saved:
            saved[self.state_key] = _state(run.history)

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        # Refused here, not in __init__: in one process the sync changes nothing.
        if trainer.world_size > 1 and self._options.get("sync_on_compute", True) is not True:
            raise ValueError(
                "sync_on_compute must stay True: the monitor logs the value of the whole "
                "evaluation set, which under DDP needs every rank's pairs (without the sync "
                "each rank logs its shard's error, and Lightning averages those)"
            )
        if trainer.world_size > 1 and getattr(
            pl_module, "allow_zero_length_dataloader_with_multiple_devices", False
        ):
            self._warn_once("empty_shard", _EMPTY_SHARD)
        self._histories.follow(trainer, self._run_folders(trainer))
        self._restored = None  # each run says for itself which checkpoint it restored
        self._resumed_at = None
        # Records of two runs of the same weights are equal in every number: the run's id
        # tells them apart, so that the history file takes the second as a new record
        # rather than as one it holds (a resumed fit's restored records keep their own).
        self._run = _new_run_id()

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # Here, not at setup: a resumed fit's first epoch is known once its loops are
        # restored, and with it whether a read comes before the first measured epoch.
        if self.stage == "val" and self.every_n_epochs > 1:
            self._warn_unseen_tags(trainer)

    def _warn_unseen_tags(self, trainer: Trainer) -> None:
        """Warn of a checkpoint or early stopping that reads a tag at epochs this monitor
        skips: Lightning's own error, at the first of them, had named no monitor."""
        # The smooth error's tag only where it is logged: never, it is no tag of this one.
        tags = (*self.scalar_names, *([self.smooth_name] if self.smooth else []))
        for message in watchers.unseen_tag_messages(
            trainer.callbacks, tags, self.every_n_epochs, watchers.fit_of(trainer)
        ):
            # Every fit: its Trainer's callbacks are its own (a notebook's second fit).
            rank_zero_warn(f"CalibrationMonitor: {message}")

    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        # The restore belongs to the run that ends here: left set, it made a later manual
        # load_state_dict look like that run's restore, and be ignored.
        self._restored = None
        self._resumed_at = None
        epoch_end_tags.release(pl_module, self._epoch_end_hook)

    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        # A run stopped between this monitor's epoch end and the module's (Ctrl-C) must not
        # leave the module's hook wrapped for whatever runs it next.
        epoch_end_tags.release(pl_module, self._epoch_end_hook)

    def on_load_checkpoint(
        self, trainer: Trainer, pl_module: LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        """Note which run restores which checkpoint (before :meth:`load_state_dict`):
        Lightning restores the callbacks for every run given ``ckpt_path=``, not only for a
        resumed fit."""
        self._restored = runs.trainer_fn(trainer)
        if self._restored != "fit":
            # The module now holds the checkpoint's weights, at the trainer's unchanged step:
            # this run's records, and a later evaluation's without ckpt_path, name them as
            # ModelCheckpoint names the file (epoch=0-step=12.ckpt), with its path.
            path = getattr(trainer, "ckpt_path", None)
            epoch, step = int(checkpoint.get("epoch", 0)), int(checkpoint.get("global_step", 0))
            self._weights[pl_module] = (epoch, step, None if path is None else str(path))
        else:
            self._weights.pop(pl_module, None)  # a resumed fit's weights: the fit names them

    def on_train_batch_start(
        self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self._note_resume_point(trainer)
        self._weights.pop(pl_module, None)  # trained: no record measured these weights yet

    def _note_resume_point(self, trainer: Trainer) -> None:
        """Where the checkpoint a resumed fit started from is, in the fit records' count:
        the history file's records of weights trained past it are of the run this fit
        replaces (:func:`._files.merged_history`).

        Read from the trainer once Lightning has restored its loops, before the resumed
        fit trains or validates, not from the checkpoint: a checkpoint saved in
        ``on_train_batch_end`` (``every_n_train_steps``) or at a validation holds a batch
        count one below its weights' (the batch's count goes up after both), which
        Lightning adds back when it resumes. Taken from the file, the validation logged
        just after such a checkpoint, of its weights, was dropped as a later one."""
        if self._restored == "fit" and self._resumed_at is None:
            self._resumed_at = int(trainer.fit_loop.epoch_loop._batches_that_stepped)

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """A fit that starts from step 0 without a checkpoint starts its run's history anew:
        a monitor reused for it (a notebook, a search over settings, one log folder) starts
        a new history, which its files then hold alone, instead of one curve drawn through
        both fits. It keeps the validate / test records this Trainer made before the fit (a
        baseline ``trainer.validate(model)``), which the curve draws before the fit's
        first point (their epoch and step may be an earlier fit's, whose weights this fit
        starts from); another Trainer's are dropped."""
        if self._restored is None and trainer.global_step == 0:
            # A Trainer at step 0 has not fitted: every record it made is an evaluation.
            self._histories.current.restart(trainer)

    def __getstate__(self) -> dict[str, Any]:
        # Weak references do not pickle, and ddp_spawn pickles the callbacks; a copy in
        # another process never sees this process's Trainers, so it needs none of them.
        state = self.__dict__.copy()
        state["_layouts_written"] = {}  # a copy writes its layouts anew (references)
        state["_entries"] = []  # a copy never sees this process's Lightning results
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :attr:`history` (the current run's) for a resumed fit. A validate / test
        run of a checkpoint keeps the run's history when it holds records (the checkpoint's
        is older: replacing it lost the later epochs, on disk too), and takes the
        checkpoint's when it holds none (a fresh callback, a Trainer writing to a new
        folder)."""
        history = state_dict.get("history", [])
        if not isinstance(history, list):
            raise ValueError(f"history must be a list, got {type(history).__name__}")
        evaluating = self._restored not in (None, "fit")
        if evaluating and self.history:
            return
        self.history = [dict(r) for r in history]
        self._histories.current.from_checkpoint = evaluating


def _validates_within_epochs(trainer: Trainer) -> bool:
    """Whether the fit validates on a schedule of batches (``val_check_interval`` below an
    epoch, or counted across epochs) or of time rather than once at each epoch's end: then
    an epoch may see several validations, and their files are told apart by step."""
    if runs.trainer_fn(trainer) != "fit":
        return False
    if getattr(trainer, "_val_check_time_interval", None) is not None:
        return True
    if trainer.check_val_every_n_epoch is None:
        return True
    every = trainer.val_check_batch
    return isinstance(every, int) and every < trainer.num_training_batches


def _state(history: list[dict[str, Any]]) -> dict[str, Any]:
    """The checkpoint state of a history: copies of its records."""
    return {"history": [dict(r) for r in history]}


def _new_run_id() -> str:
    """A record's ``run``: random, not a count, because a new process evaluating into the
    same folder cannot know which runs came before it."""
    return uuid.uuid4().hex[:12]


def _reference(thing: Any) -> Callable[[], Any]:
    """A weak reference to ``thing``, or a strong one where it takes none."""
    try:
        return weakref.ref(thing)
    except TypeError:
        return lambda: thing


# Said at setup under DDP when the module lets a rank's evaluation shard be empty: Lightning
# then skips that rank's evaluation hooks, and the others wait for it in the metric's sync
# (a hang until the process group's timeout, or a crash when that rank's run ends first).
_EMPTY_SHARD = (
    "the module sets allow_zero_length_dataloader_with_multiple_devices: a rank whose "
    "evaluation shard is empty skips Lightning's evaluation hooks, and the monitor's "
    "synchronised compute on the other ranks then waits for it (until the process group's "
    "timeout); give every rank at least one batch"
)


class _Figure(NamedTuple):
    """What one loader's figures draw: its result, the per-class results
    (``per_class=True``), a classwise metric's class results, and the smooth curves
    (``smooth=True``: key 0, or each drawn class)."""

    result: CalibrationResult
    per_class: list[CalibrationResult] | None
    classes: list[CalibrationResult] | None
    curves: dict[int, SmoothCurve] | None
