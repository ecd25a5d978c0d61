"""What CalibrationMonitor draws and keeps on disk: figures only where a logger keeps them,
one file per validation, and a history on disk that never loses a record."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import pytest
from lightning.pytorch.loggers import CSVLogger

# The tiny tagger and run helpers of test_callbacks.py (tests are not a package).
_spec = importlib.util.spec_from_file_location(
    "callbacks_helpers", Path(__file__).with_name("test_callbacks.py")
)
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
TinyTagger, loaders, monitor, trainer = (
    _helpers.TinyTagger,
    _helpers.loaders,
    _helpers.monitor,
    _helpers.trainer,
)


def quietly(fn, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize(
    ("logger", "save_png"), [(False, None), ("csv", False)], ids=["no logger", "csv, no png"]
)
def test_nothing_is_drawn_when_nothing_keeps_it(tmp_path: Path, monkeypatch, logger, save_png):
    """The diagrams were drawn every epoch and thrown away (no logger, PNGs off)."""
    from calib_metrics import plot

    drawn: list[str] = []
    original = plot.reliability_diagram

    def spy(*args: Any, **kwargs: Any) -> Any:
        drawn.append(kwargs.get("title", ""))
        return original(*args, **kwargs)

    monkeypatch.setattr(plot, "reliability_diagram", spy)
    cb = monitor(save_png=save_png)
    train, val = loaders()
    chosen = CSVLogger(tmp_path, name="csv") if logger == "csv" else False
    quietly(trainer(tmp_path, 2, logger=chosen, callbacks=[cb]).fit, TinyTagger(), train, val)
    assert len(cb.history) == 2  # measured and logged all the same
    assert drawn == []
    assert not list(tmp_path.rglob("*.png"))


def test_several_validations_an_epoch_keep_a_file_each_and_plot_over_steps(
    tmp_path: Path, monkeypatch
) -> None:
    """val_check_interval=0.5: the mid-epoch diagram was overwritten by the epoch-end one
    (both named ..._epoch000.png) and the curve over epochs drew vertical segments."""
    from calib_metrics import plot

    curves: list[tuple[list, str]] = []
    original = plot.error_curve

    def spy(x: Any, *args: Any, **kwargs: Any) -> Any:
        curves.append((list(x), kwargs["xlabel"]))
        return original(x, *args, **kwargs)

    monkeypatch.setattr(plot, "error_curve", spy)
    cb = monitor()
    train, val = loaders(batch_size=8)  # 6 training batches: validation after 3 and 6
    logger = CSVLogger(tmp_path, name="csv")
    run = trainer(tmp_path, 2, logger=logger, callbacks=[cb], val_check_interval=0.5)
    quietly(run.fit, TinyTagger(), train, val)
    steps = [r["step"] for r in cb.history]
    assert [r["epoch"] for r in cb.history] == [0, 0, 1, 1]
    assert steps == sorted(set(steps))
    folder = Path(logger.log_dir) / "calibration"
    diagrams = sorted(p.name for p in folder.glob("val_reliability_diagram_*.png"))
    assert diagrams == [
        f"val_reliability_diagram_epoch{r['epoch']:03d}_step{r['step']:06d}.png" for r in cb.history
    ]
    assert curves[-1] == (steps, "step")
