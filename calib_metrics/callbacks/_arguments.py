"""Up-front checks of the callbacks' constructor arguments (ValueError naming the argument).

A callback's bad argument found at its first batch, or when ``fit`` ends, costs a training
run; found in the constructor it costs nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any


def check_key(name: str, value: Any) -> None:
    """A key of the step's output dict: a non-empty string.

    Example:
        >>> check_key("probs_key", None)
        Traceback (most recent call last):
        ...
        ValueError: probs_key must be a non-empty string (a key of the step's output), got None
    """
    if not isinstance(value, str) or not value:
        raise ValueError(
            f"{name} must be a non-empty string (a key of the step's output), got {value!r}"
        )


def check_keys_differ(keys: dict[str, str]) -> None:
    """The keys of the step's output dict, by option name, are all different: one key
    cannot hold both the probabilities and the targets (the failure came at the first
    batch, naming a shape or a dtype, not the keys). Not for a callback given ``extract``,
    which replaces the keys. The message names the options and their one value, not which
    of them the user wrote: a default passed explicitly cannot be told from one left out
    (``groups_key="groups"`` given had been called "groups_key (default 'groups')").

    Example:
        >>> check_keys_differ({"probs_key": "p", "target_key": "p"})
        Traceback (most recent call last):
        ...
        ValueError: probs_key and target_key must differ, both 'p'
    """
    seen: dict[str, str] = {}
    for name, key in keys.items():
        if key in seen:
            raise ValueError(f"{seen[key]} and {name} must differ, both {key!r}")
        seen[key] = name


def check_prefix(value: Any) -> None:
    """The start of every tag: a non-empty string that neither starts nor ends with ``/``
    (``"val/"`` gave ``val//calib_err``).

    Example:
        >>> check_prefix("val/head_a")
        >>> check_prefix("")
        Traceback (most recent call last):
        ...
        ValueError: prefix must be a non-empty string without a leading or trailing '/', got ''
    """
    if not isinstance(value, str) or not value or value.startswith("/") or value.endswith("/"):
        raise ValueError(
            f"prefix must be a non-empty string without a leading or trailing '/', got {value!r}"
        )


def check_extract(value: Any) -> None:
    """``extract`` is None or callable.

    Example:
        >>> check_extract(5)
        Traceback (most recent call last):
        ...
        ValueError: extract must be callable (outputs, batch) -> tuple | None, got int
    """
    if value is not None and not callable(value):
        raise ValueError(
            f"extract must be callable (outputs, batch) -> tuple | None, got {type(value).__name__}"
        )


def check_class_names(names: Any, num_classes: int | None, used: bool) -> list[str] | None:
    """The per-class chart's labels as strings, or None; checked against the other options
    (``used``: whether anything shows them, per_class=True or a classwise monitor).

    Any iterable of names (strings) is taken (a list, ``LabelEncoder.classes_``,
    ``dict.keys()``, a pandas ``Index``), but not a single string, which would be read as
    one name per letter.
    Names without ``per_class=True`` label nothing: a warning, not an error (they harm
    nothing, and were accepted before).

    Example:
        >>> check_class_names(("ADJ", "NOUN"), 2, True)
        ['ADJ', 'NOUN']
        >>> check_class_names("abc", 3, True)
        Traceback (most recent call last):
        ...
        ValueError: class_names must be an iterable of names, one per class, got the string 'abc'
    """
    if names is None:
        return None
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        got = f"the string {names!r}" if isinstance(names, str) else type(names).__name__
        raise ValueError(f"class_names must be an iterable of names, one per class, got {got}")
    if isinstance(names, (set, frozenset)):  # string hashing orders it anew in each process
        raise ValueError("class_names must be ordered (class 0 first), got a set")
    labels = list(names)
    for index, name in enumerate(labels):
        # str() had made any object a name (3 became "3") without a word; numpy's str_
        # (LabelEncoder.classes_) is a str.
        if not isinstance(name, str):
            raise ValueError(
                f"class_names must be strings, got {name!r} ({type(name).__name__}) at "
                f"position {index}"
            )
    labels = [str(name) for name in labels]
    if num_classes is None:
        raise ValueError("class_names needs num_classes (binary probabilities have no classes)")
    if len(labels) != num_classes:
        raise ValueError(
            f"class_names must have num_classes={num_classes} entries, got {len(labels)}"
        )
    if len(set(labels)) != len(labels):
        # The per-class record is keyed by name: a repeated name would drop a class.
        repeated = sorted({n for n in labels if labels.count(n) > 1})
        raise ValueError(f"class_names must be unique, repeated: {', '.join(map(repr, repeated))}")
    if not used:
        # stacklevel 3: the line constructing the callback.
        warnings.warn(
            "class_names label the per-class results, which only per_class=True makes (and "
            "a classwise monitor's panels): they are unused here",
            UserWarning,
            stacklevel=3,
        )
    return labels


def check_dataloader_idx(value: Any) -> frozenset[int] | None:
    """The validation dataloaders chosen: an index, a sequence of them, ``"all"`` (None
    returned: every one), or None (dataloader 0).

    Example:
        >>> sorted(check_dataloader_idx([0, 2])), check_dataloader_idx("all")
        ([0, 2], None)
        >>> check_dataloader_idx(-1)
        Traceback (most recent call last):
        ...
        ValueError: dataloader_idx must be an index >= 0, a list of them, 'all' or None, got -1
    """
    if value == "all":
        return None
    if value is None:
        return frozenset({0})
    indices = [value] if isinstance(value, int) else value
    good = isinstance(indices, Sequence) and not isinstance(indices, str) and len(indices) > 0
    good = good and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in indices)
    if not good or len(set(indices)) != len(indices):
        raise ValueError(
            f"dataloader_idx must be an index >= 0, a list of them, 'all' or None, got {value!r}"
        )
    return frozenset(indices)
