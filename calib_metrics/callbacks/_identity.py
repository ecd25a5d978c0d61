"""A map keyed by objects' identity, holding them weakly: the callbacks key what they note by
the Trainer or the LightningModule it belongs to, and must neither keep either alive nor
depend on how it compares (``WeakKeyDictionary`` hashes its keys and tells them apart by
``__eq__``, which a subclass may define)."""

from __future__ import annotations

import weakref
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class IdentityMap(Generic[V]):
    """Values by the identity of their key objects, each entry dropped when its key is freed.
    A copy (pickled for ``ddp_spawn``, or deep-copied) is empty: another process never sees
    this one's objects.

    Example:
        >>> class Unhashable:
        ...     __hash__ = None
        >>> key, weights = Unhashable(), IdentityMap()
        >>> weights[key] = (1, 5)
        >>> weights.get(key), weights.get(Unhashable())
        ((1, 5), None)
        >>> del key
        >>> len(weights)
        0
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], V]] = {}

    def _entry(self, key: Any) -> tuple[weakref.ref[Any], V] | None:
        entry = self._entries.get(id(key))
        # An id alone may be a freed object's, reused before its entry went.
        return entry if entry is not None and entry[0]() is key else None

    def get(self, key: Any, default: V | None = None) -> V | None:
        entry = self._entry(key)
        return default if entry is None else entry[1]

    def __setitem__(self, key: Any, value: V) -> None:
        owner = weakref.ref(self)  # the key's callback must not keep the map alive

        def drop(ref: weakref.ref[Any], number: int = id(key)) -> None:
            entries = owner()
            # A later entry for the same object has its own reference and callback.
            if entries is not None and entries._entries.get(number, (None,))[0] is ref:
                del entries._entries[number]

        self._entries[id(key)] = (weakref.ref(key, drop), value)

    def pop(self, key: Any, default: V | None = None) -> V | None:
        entry = self._entry(key)
        if entry is None:
            return default
        del self._entries[id(key)]
        return entry[1]

    def __len__(self) -> int:
        return len(self._entries)

    def __reduce__(self) -> tuple[Any, ...]:
        return (IdentityMap, ())
