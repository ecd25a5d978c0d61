"""The files :class:`~calib_metrics.callbacks.CalibrationMonitor` writes for loggers without
images: each validation's figures as PNGs, the error over time with its band, the history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def figure_suffix(record: dict[str, Any], by_step: bool) -> str:
    """The end of a figure's file name, naming the validation it shows: by its epoch, and
    by its step too when validation runs more than once per epoch (``by_step``).

    Example:
        >>> figure_suffix({"epoch": 3, "step": 48}, by_step=False)
        'epoch003'
        >>> figure_suffix({"epoch": 0, "step": 6}, by_step=True)
        'epoch000_step000006'
    """
    epoch = f"epoch{record['epoch']:03d}"
    return f"{epoch}_step{record['step']:06d}" if by_step else epoch


def write_files(
    folder: Path,
    stem: str,
    suffix: str,
    figures: dict[str, Any],
    history: Sequence[dict[str, Any]],
    label: str,
) -> None:
    """PNGs of one validation's figures, the error over epochs with its band, the history.

    Files: ``{stem}_{figure}_{suffix}.png`` (:func:`figure_suffix`), ``{stem}_calib_err.png``
    and ``{stem}_history.json`` in ``folder`` (created).

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp()) / "calibration"
        >>> row = {"epoch": 0, "step": 4, "error": 0.1, "lower": 0.08, "upper": 0.12}
        >>> write_files(folder, "val", "epoch000", {}, [row], "val CalibErr")
        >>> sorted(p.name for p in folder.iterdir())
        ['val_calib_err.png', 'val_history.json']
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name, fig in figures.items():
        fig.savefig(folder / f"{stem}_{name}_{suffix}.png", dpi=100)
    curve(history, label).savefig(folder / f"{stem}_calib_err.png", dpi=100)
    with open(folder / f"{stem}_history.json", "w", encoding="utf-8") as stream:
        json.dump(list(history), stream, indent=1)


def curve(history: Sequence[dict[str, Any]], label: str) -> Any:
    """The error as a line with its band, over epochs, or over steps when some epoch was
    validated more than once (over epochs those validations drew vertical segments).

    Example:
        >>> rows = [{"epoch": e, "step": 6 * (e + 1), "error": 0.1, "lower": 0.08,
        ...          "upper": 0.12} for e in (0, 0, 1)]
        >>> curve(rows, "val CalibErr").axes[0].get_xlabel()
        'step'
    """
    from calib_metrics import plot  # matplotlib only once there is something to draw

    epochs = [r["epoch"] for r in history]
    x = "step" if len(set(epochs)) < len(epochs) else "epoch"
    columns = ([r[key] for r in history] for key in (x, "error", "lower", "upper"))
    fig, _ = plot.error_curve(*columns, xlabel=x, label=label, integer_x=True)
    return fig
