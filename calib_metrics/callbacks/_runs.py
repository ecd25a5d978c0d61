"""What a Trainer is running, as both callbacks read it: the trainer function and the number
of evaluation dataloaders of this run."""

from __future__ import annotations

from typing import Any, Literal


def trainer_fn(trainer: Any) -> str:
    """What the trainer runs: ``"fit"``, ``"validate"``, ``"test"`` or ``"predict"``.

    Example:
        >>> from types import SimpleNamespace
        >>> trainer_fn(SimpleNamespace(state=SimpleNamespace(fn="validate")))
        'validate'
    """
    return str(getattr(trainer.state.fn, "value", trainer.state.fn))


def loader_count(trainer: Any, stage: Literal["val", "test"]) -> int:
    """How many validation (``"val"``) or test dataloaders this run evaluates: Lightning's
    per-loader batch counts, which it sets for the running loop (a ``trainer.validate``
    after ``fit`` counts its own loaders, not the fit's).

    Example:
        >>> from types import SimpleNamespace
        >>> loader_count(SimpleNamespace(num_val_batches=[4, 2]), "val")
        2
    """
    counts = trainer.num_val_batches if stage == "val" else trainer.num_test_batches
    return len(counts) if isinstance(counts, (list, tuple)) else 1
