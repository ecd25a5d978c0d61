"""What :class:`~calib_metrics.callbacks.CalibrationMonitor` writes, kept apart from the hooks.

Loggers are recognised by what their ``experiment`` can do (``add_figure``,
``add_custom_scalars``, ``add_tensor``, ``add_text``), never by their class, so the same
code serves ``lightning.pytorch`` and ``pytorch_lightning`` loggers, tensorboardX
writers and anything else with those methods.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from calib_metrics.functional.calibration import CalibrationResult
from calib_metrics.plot._text import error_name
from calib_metrics.wording import level_text

BIN_COLUMNS = ("pred_mean", "freq", "count")
# A classwise monitor's bins: every class's, in class order, each row with its class.
CLASSWISE_BIN_COLUMNS = (*BIN_COLUMNS, "class")
CLASS_COLUMNS = ("error", "mean", "std", "lower", "upper")


def experiment_of(logger: Any) -> Any | None:
    """The logger's ``experiment`` (its writer), or None when it has none or cannot make one.

    Example:
        >>> class NoWriter:
        ...     pass
        >>> experiment_of(NoWriter()) is None
        True
    """
    try:
        return getattr(logger, "experiment", None)
    except Exception:  # a logger whose writer fails to start must not stop training
        return None


def has_method(obj: Any, name: str) -> bool:
    """Whether ``obj`` has a callable attribute ``name`` (duck typing, no class checks).

    Example:
        >>> has_method([], "append"), has_method([], "add_figure")
        (True, False)
    """
    return obj is not None and callable(getattr(obj, name, None))


def tag_for(logger: Any, name: str) -> str:
    """The tag a logger's ``log_metrics`` gives ``name`` (Lightning loggers may add a prefix).

    Example:
        >>> class Prefixed:
        ...     _prefix = "run1"
        >>> tag_for(Prefixed(), "val/calib_err"), tag_for(object(), "val/calib_err")
        ('run1-val/calib_err', 'val/calib_err')
    """
    prefix = getattr(logger, "_prefix", "") or ""
    if not isinstance(prefix, str) or not prefix:
        return name
    # Lightning joins a logger's prefix and the metric name with LOGGER_JOIN_CHAR ("-").
    join = getattr(logger, "LOGGER_JOIN_CHAR", "-")
    return f"{prefix}{join}{name}"


def margin_layout(title: str, value: str, lower: str, upper: str) -> dict[str, Any]:
    """A Custom Scalars layout whose "Margin" chart draws ``value`` inside a [lower, upper] band.

    ``SummaryWriter.add_custom_scalars`` turns it into tensorboard's ``layout_pb2.Layout``.

    Example:
        >>> margin_layout("err", "v/e", "v/lo", "v/hi")
        {'calibration': {'err': ['Margin', ['v/e', 'v/lo', 'v/hi']]}}
    """
    return {"calibration": {title: ["Margin", [value, lower, upper]]}}


# Every chart written to each experiment so far (weakly held: a closed writer goes).
_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def add_layout(experiment: Any, layout: dict[str, Any]) -> dict[str, Any]:
    """Write ``layout``'s charts to the experiment's Custom Scalars together with every chart
    written to it before; returns what was written.

    TensorBoard shows one layout per run, the last written: a second monitor on the same
    logger (``stage="test"`` after the validation one) that wrote only its own chart hid the
    first's. So each write is the union (per experiment object, in this process).

    Example:
        >>> class Writer:
        ...     def add_custom_scalars(self, layout):
        ...         self.last = layout
        >>> w = Writer()
        >>> _ = add_layout(w, margin_layout("val", "v/e", "v/lo", "v/hi"))
        >>> sorted(add_layout(w, margin_layout("test", "t/e", "t/lo", "t/hi"))["calibration"])
        ['test', 'val']
        >>> sorted(w.last["calibration"])
        ['test', 'val']
    """
    try:
        merged = _LAYOUTS.setdefault(experiment, {})
    except TypeError:  # an experiment that cannot be weakly referenced: its own charts only
        merged = {}
    for category, charts in layout.items():
        merged.setdefault(category, {}).update(charts)
    written = {category: dict(charts) for category, charts in merged.items()}
    experiment.add_custom_scalars(written)
    return written


def bins_tensor(result: CalibrationResult) -> Tensor:
    """The bins as a float64 CPU tensor ``[n_bins, 3]``: columns pred_mean, freq, count.

    Example:
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.linspace(0.05, 0.95, 40)
        >>> bins_tensor(calibration_error_ci(p, (p > 0.5).float(), bin_size=10)).shape
        torch.Size([4, 3])
    """
    bins = result.bins
    columns = (bins.pred_mean, bins.freq, bins.count)
    return torch.stack([c.detach().to("cpu", torch.float64).reshape(-1) for c in columns], 1)


def classwise_bins_tensor(results: Sequence[CalibrationResult]) -> Tensor:
    """Every class's bins in class order, class 0's first, as a float64 tensor ``[n_bins, 4]``:
    the :func:`bins_tensor` columns and the row's class.

    The classwise result's own bins are every class's sorted together by mean prediction
    (:func:`~calib_metrics.functional.multiclass.average_results`), and no row says its
    class; with ``bin_size="auto"`` classes have different numbers of bins, so not even
    the order would tell them apart.

    Example:
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.linspace(0.05, 0.95, 40)
        >>> r = calibration_error_ci(p, (p > 0.5).float(), bin_size=10)
        >>> classwise_bins_tensor([r, r])[:, 3].tolist()
        [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    """
    rows = []
    for c, result in enumerate(results):
        bins = bins_tensor(result)
        column = torch.full((len(bins), 1), float(c), dtype=bins.dtype, device=bins.device)
        rows.append(torch.cat([bins, column], 1))
    return torch.cat(rows)


def bins_record(bins: Tensor) -> dict[str, list[float]]:
    """The bins of :func:`bins_tensor` (or :func:`classwise_bins_tensor`) as lists by column,
    for a JSON history record; the class as an integer.

    Example:
        >>> bins_record(torch.tensor([[0.2, 0.0, 3.0, 1.0]], dtype=torch.float64))
        {'pred_mean': [0.2], 'freq': [0.0], 'count': [3.0], 'class': [1]}
    """
    columns = BIN_COLUMNS if bins.shape[1] == len(BIN_COLUMNS) else CLASSWISE_BIN_COLUMNS
    record = {name: bins[:, i].tolist() for i, name in enumerate(columns)}
    if "class" in record:
        record["class"] = [int(c) for c in record["class"]]
    return record


def result_numbers(result: CalibrationResult) -> dict[str, float]:
    """The result's error, mean, std, lower and upper as Python floats.

    Example:
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.linspace(0.05, 0.95, 40)
        >>> sorted(result_numbers(calibration_error_ci(p, (p > 0.5).float(), bin_size=10)))
        ['error', 'lower', 'mean', 'std', 'upper']
    """
    return {name: float(getattr(result, name)) for name in CLASS_COLUMNS}


def float64(value: float, device: torch.device) -> Tensor | float:
    """A scalar as Lightning keeps it (``self.log``, ``trainer.callback_metrics``) in
    float64: a Python float becomes a float32 tensor (the default dtype), and the error
    logged had differed from the metric's own in the eighth digit, the temperature from
    the fitted one. MPS has no float64: there it stays a float.

    Example:
        >>> float(float64(0.5059001914756017, torch.device("cpu"))) == 0.5059001914756017
        True
    """
    if device.type == "mps":
        return value
    return torch.tensor(value, dtype=torch.float64, device=device)


def bins_markdown(
    result: CalibrationResult,
    confidence: float,
    bins: Tensor | None = None,
    labels: Sequence[str] = (),
    norm: str = "l2",
) -> str:
    """A markdown table of the bins, headed by the error and its interval (TensorBoard's Text tab).

    ``bins``: the rows, default the result's (:func:`bins_tensor`); rows of
    :func:`classwise_bins_tensor` get a class column, named by ``labels``. ``norm``: the
    error's, named as the figures name it (:func:`~calib_metrics.plot.error_name`).

    Example:
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.linspace(0.05, 0.95, 40)
        >>> text = bins_markdown(calibration_error_ci(p, (p > 0.5).float(), bin_size=20), 0.95)
        >>> text.splitlines()[2]
        '| bin | q̂ (mean prediction) | p̂ (frequency) | pairs |'
        >>> bins_markdown(calibration_error_ci(
        ...     p, (p > 0.5).float(), bin_size=20, norm="l1"), 0.95, norm="l1")[:15]
        'CalibErr (l1) *'
    """
    n = result_numbers(result)
    rows = bins_tensor(result) if bins is None else bins
    by_class = rows.shape[1] > len(BIN_COLUMNS)
    head, rule = (" class |", "---|") if by_class else ("", "")
    lines = [
        f"{error_name(norm)} **{n['error']:.5f}**, {level_text(confidence)} interval "
        f"[{n['lower']:.5f}, {n['upper']:.5f}] (sampled mean {n['mean']:.5f}, "
        f"std {n['std']:.5f})",
        "",
        f"| bin |{head} q̂ (mean prediction) | p̂ (frequency) | pairs |",
        f"|---:|{rule}---:|---:|---:|",
    ]
    for i, row in enumerate(rows.tolist()):
        q, p, c = row[:3]
        named = ""
        if by_class:
            named = f" {labels[int(row[3])] if labels else int(row[3])} |"
        lines.append(f"| {i} |{named} {q:.5f} | {p:.5f} | {int(c)} |")
    return "\n".join(lines)


def per_class_tensor(results: Sequence[CalibrationResult]) -> Tensor:
    """Per-class numbers as a float64 tensor ``[C, 5]``: error, mean, std, lower, upper.

    Example:
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.linspace(0.05, 0.95, 40)
        >>> r = calibration_error_ci(p, (p > 0.5).float(), bin_size=10)
        >>> per_class_tensor([r, r, r]).shape
        torch.Size([3, 5])
    """
    rows = [[result_numbers(r)[c] for c in CLASS_COLUMNS] for r in results]
    return torch.tensor(rows, dtype=torch.float64)


def per_class_markdown(
    results: Sequence[CalibrationResult], labels: Sequence[str], norm: str = "l2"
) -> str:
    """A markdown table of each class's error and interval, the error named as the
    figures name it (``CalibErr (max)`` for ``norm="max"``).

    Example:
        >>> from calib_metrics.functional import calibration_error_ci
        >>> p = torch.linspace(0.05, 0.95, 40)
        >>> r = calibration_error_ci(p, (p > 0.5).float(), bin_size=10)
        >>> per_class_markdown([r], ["NN"]).splitlines()[0]
        '| class | CalibErr | lower | upper |'
    """
    lines = [f"| class | {error_name(norm)} | lower | upper |", "|---|---:|---:|---:|"]
    for label, r in zip(labels, results, strict=True):
        n = result_numbers(r)
        lines.append(f"| {label} | {n['error']:.5f} | {n['lower']:.5f} | {n['upper']:.5f} |")
    return "\n".join(lines)


def log_dir_of(logger: Any, fallback: str | os.PathLike) -> Path:
    """Where a logger keeps its files (``log_dir``, else ``save_dir``), else ``fallback``.

    Example:
        >>> class Csv:
        ...     log_dir = "/tmp/logs/version_0"
        >>> log_dir_of(Csv(), "/tmp/root").as_posix(), log_dir_of(object(), "/tmp/root").as_posix()
        ('/tmp/logs/version_0', '/tmp/root')
    """
    for name in ("log_dir", "save_dir"):
        try:
            value = getattr(logger, name, None)
        except Exception:  # some loggers compute these lazily and may fail offline
            value = None
        if isinstance(value, (str, os.PathLike)) and str(value):
            return Path(value)
    return Path(fallback)


def safe_name(tag: str) -> str:
    """A tag made fit for a file name (``val/calib`` -> ``val_calib``).

    Example:
        >>> safe_name("val/calib err")
        'val_calib_err'
    """
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in tag)
