"""The monitor's tags kept from the LightningModule's own epoch-end logging.

Lightning calls the callbacks' ``on_validation_epoch_end`` (``on_test_epoch_end``) before
the module's, so a module logging one of the monitor's tags in that hook logs it after the
monitor, under the same hook name, into the monitor's entry: with other arguments than
the monitor's (the defaults) Lightning refuses the second call ("You called
``self.log(val/calib_err, ...)`` twice ... with different arguments"), and with the same
ones it averages the two values. Neither is the documented outcome (the monitor's value,
and a warning), and the monitor's own hook, which has run by then, cannot see either. So
the monitor wraps the module's hook for its next call: inside it, ``self.log`` of one of
the monitor's tags is reported and dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any


class _Guarded:
    """The module's epoch-end hook, called with ``log`` refusing the guarded tags.

    One per module and hook, shared by every monitor (each adds its tags): wrappers of
    wrappers, each restoring what it found, left a stale one behind when two monitors
    released them out of order.
    """

    def __init__(self, module: Any, hook: str) -> None:
        self.module, self.hook = module, hook
        self.tags: dict[str, Callable[[str], None]] = {}
        # An instance attribute the guard stands in for (rare: a hook set on the object).
        self.replaced = vars(module).get(hook)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        release(self.module, self.hook)  # one call only: the next epoch guards anew
        found = vars(self.module).get("log")
        log = self.module.log

        def guarded_log(name: str, *rest: Any, **options: Any) -> Any:
            told = self.tags.get(name)
            if told is None:
                return log(name, *rest, **options)
            told(name)
            return None

        vars(self.module)["log"] = guarded_log
        try:
            return getattr(self.module, self.hook)(*args, **kwargs)
        finally:
            if found is None:
                vars(self.module).pop("log", None)
            else:
                vars(self.module)["log"] = found

    # A module pickled or copied while guarded (by a callback after the monitor that keeps
    # the best model) carries no guard, nor the monitor: the guard's warning could not be
    # pickled, and a copy kept it after the fit had released the original.
    def __reduce__(self) -> tuple:
        return (_Unguarded, (self.module, self.hook, self.replaced))

    def __deepcopy__(self, memo: dict) -> _Unguarded:
        module, replaced = copy.deepcopy(self.module, memo), copy.deepcopy(self.replaced, memo)
        return _Unguarded(module, self.hook, replaced)


class _Unguarded:
    """A copy's stand-in for a guard: its first call puts back the copy's own hook (the
    class's, or the instance's it replaced) and calls it."""

    def __init__(self, module: Any, hook: str, replaced: Any) -> None:
        self.module, self.hook, self.replaced = module, hook, replaced

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.replaced is None:
            vars(self.module).pop(self.hook, None)
        else:
            vars(self.module)[self.hook] = self.replaced
        return getattr(self.module, self.hook)(*args, **kwargs)

    def __reduce__(self) -> tuple:
        return (_Unguarded, (self.module, self.hook, self.replaced))


def guard(module: Any, hook: str, tags: Iterable[str], told: Callable[[str], None]) -> None:
    """Until the module's ``hook`` has run once, its ``self.log`` (and ``log_dict``) of any
    of ``tags`` calls ``told(tag)`` and logs nothing.

    Example:
        >>> class Module:
        ...     def log(self, name, value):
        ...         self.logged = (name, value)
        ...     def on_validation_epoch_end(self):
        ...         self.log("val/calib_err", 1.0)
        ...         self.log("val/acc", 0.5)
        >>> module, clashes = Module(), []
        >>> guard(module, "on_validation_epoch_end", ["val/calib_err"], clashes.append)
        >>> module.on_validation_epoch_end()
        >>> clashes, module.logged, "on_validation_epoch_end" in vars(module)
        (['val/calib_err'], ('val/acc', 0.5), False)
    """
    guarded = vars(module).get(hook)
    if not isinstance(guarded, _Guarded):
        guarded = _Guarded(module, hook)
        vars(module)[hook] = guarded
    guarded.tags.update(dict.fromkeys(tags, told))


def release(module: Any, hook: str) -> None:
    """Remove the guard of the module's ``hook``, if it has one (a run that ended before
    the hook was called must not leave it for the next).

    Example:
        >>> class Module:
        ...     pass
        >>> release(Module(), "on_test_epoch_end")
    """
    guarded = vars(module).get(hook)
    if not isinstance(guarded, _Guarded):
        return
    if guarded.replaced is None:
        del vars(module)[hook]
    else:
        vars(module)[hook] = guarded.replaced
