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
