"""Typed errors of the functional layer, and the checks of integer and flag options."""

from __future__ import annotations

import operator
import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from typing import TypeVar

import torch

T = TypeVar("T")

# The library's own files: a warning names the first line outside them.
_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def check_int(name: str, value: int, minimum: int = 1) -> None:
    """Raise ValueError naming ``name`` unless ``value`` is an int (not a bool) ≥ ``minimum``.

    Example:
        >>> check_int("n_bins", 0)
        Traceback (most recent call last):
        ...
        ValueError: n_bins must be a positive integer, got 0
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        hint = python_int_hint(name, value, minimum)
        raise ValueError(f"{name} must be {kind}, got {value!r}{hint}")


def python_int_hint(name: str, value: object, minimum: int | None = None) -> str:
    """The end of an option's message when ``value`` is an integer of another type (a NumPy
    integer, a one-element integer tensor) that would pass as a Python int (at least
    ``minimum``, when given): options are kept as given, in hyperparameters and saved
    settings, so they must be Python ints, and the message says how to get one. Empty
    otherwise: for a bool (``int(True)`` is 1), a value that is wrong whatever its type,
    or a ``name`` that is no argument's.

    Example:
        >>> import numpy as np
        >>> python_int_hint("bin_size", np.int64(10))
        ': options take a Python int, pass int(bin_size)'
        >>> python_int_hint("bin_size", np.int64(0), minimum=1), python_int_hint("n", 2.5)
        ('', '')
    """
    if isinstance(value, (int, bool)) or not name.isidentifier():
        return ""
    if isinstance(value, torch.Tensor) and (value.numel() != 1 or value.dtype == torch.bool):
        return ""
    try:
        number = operator.index(value)
    except Exception:
        return ""
    if minimum is not None and number < minimum:
        return ""
    return f": options take a Python int, pass int({name})"


# The most samples a sampler draws (``below`` of :func:`as_int`): the samples' counts are
# int32, and torch's own refusal of a size near 2**63 is a C++ stack dump.
MOST_SAMPLES = 2**31


def as_int(name: str, value: object, minimum: int = 1, below: int | None = None) -> int:
    """``value`` as a Python int in ``[minimum, below)``: an int, a NumPy integer or a
    one-element integer tensor (what ``operator.index`` takes), never a bool (True would
    read as 1); a ValueError naming ``name`` otherwise.

    :func:`check_int` is the stricter check of an option kept as given (a Python int
    only); this one converts, for arguments that are only read (a count, an index). A
    tensor is read back (a host synchronisation, if it lives on an accelerator).

    Example:
        >>> as_int("n_samples", torch.tensor(3))
        3
        >>> as_int("n_samples", True)
        Traceback (most recent call last):
        ...
        ValueError: n_samples must be an int, got bool True
        >>> as_int("begin", 5, 0, 3)
        Traceback (most recent call last):
        ...
        ValueError: begin must be in [0, 3), got 5
    """
    if isinstance(value, torch.Tensor):
        check_not_meta(value, name)
    is_bool = isinstance(value, bool) or (
        isinstance(value, torch.Tensor) and value.dtype == torch.bool
    )
    try:
        number = None if is_bool else operator.index(value)
    except TypeError:
        number = None
    if number is None:
        raise ValueError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if number < minimum or (below is not None and number >= below):
        bounds = f">= {minimum}" if below is None else f"in [{minimum}, {below})"
        raise ValueError(f"{name} must be {bounds}, got {number}")
    return number


def check_flag(name: str, value: object) -> None:
    """Raise ValueError naming ``name`` unless ``value`` is True or False: ``"False"`` is
    truthy and would silently turn an option on.

    Example:
        >>> check_flag("debias", "False")
        Traceback (most recent call last):
        ...
        ValueError: debias must be True or False, got 'False'
    """
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def check_generator(generator: object, device: torch.device | None = None) -> None:
    """Raise ValueError unless ``generator`` is None or a ``torch.Generator`` (on
    ``device``, the draws' device, when given: torch refuses a CPU generator for CUDA
    draws with "Expected a 'cuda' device type for generator", deep inside the draws).

    Example:
        >>> check_generator(None)
        >>> check_generator(0)
        Traceback (most recent call last):
        ...
        ValueError: generator must be a torch.Generator or None, got int
        >>> check_generator(torch.Generator(), torch.device("cuda", 0))
        Traceback (most recent call last):
        ...
        ValueError: generator is on cpu and the draws on cuda:0: make it there, ...
    """
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    if generator is None or device is None or device.type == "meta":
        return
    own = generator.device
    if own.type != device.type:  # torch compares the type alone: cuda:0's serves cuda:1
        raise ValueError(
            f"generator is on {own} and the draws on {device}: make it there, "
            "torch.Generator(device=probs.device)"
        )


def check_tensors(**items: object) -> None:
    """Each of ``items`` (named as the step's output names them) is a dense tensor
    (:func:`check_dense`). The first check of every public entry's inputs, before any
    shape is read: a strided nested tensor has no ``.shape`` (torch's "NestedTensorImpl
    doesn't support sizes"), and a jagged one's had been refused as a shape mismatch.

    Example:
        >>> check_tensors(logits=torch.zeros(2), target=[0, 1])
        Traceback (most recent call last):
        ...
        ValueError: logits and target must be tensors, got Tensor and list
        >>> rows = [torch.rand(2), torch.rand(3)]
        >>> check_tensors(probs=torch.nested.nested_tensor(rows, layout=torch.jagged))
        Traceback (most recent call last):
        ...
        ValueError: probs is a nested tensor: pass a dense tensor (pad to one tensor, with a mask)
    """
    if not all(isinstance(value, torch.Tensor) for value in items.values()):
        types = " and ".join(type(value).__name__ for value in items.values())
        raise ValueError(f"{' and '.join(items)} must be tensors, got {types}")
    for name, value in items.items():
        check_dense(value, name)


def check_id_tensor(ids: object, what: str = "groups") -> None:
    """Refuse ids (named ``what``) that are not a dense tensor (:func:`check_dense`): a
    list had reached the multiclass modes' shape check as an AttributeError on
    ``.numel``, a nested tensor as torch's error or a shape mismatch.

    Example:
        >>> check_id_tensor([0, 0, 1])
        Traceback (most recent call last):
        ...
        ValueError: groups must be a tensor of group ids, got list
    """
    if not isinstance(ids, torch.Tensor):
        kind = what.removesuffix("s")
        raise ValueError(f"{what} must be a tensor of {kind} ids, got {type(ids).__name__}")
    check_dense(ids, what)


def check_dense(tensor: torch.Tensor, name: str) -> None:
    """Raise ValueError naming ``name`` unless ``tensor`` is a dense (strided) tensor: a
    sparse or nested tensor fails deep inside (reshape, sort) with torch's own error.

    Example:
        >>> check_dense(torch.tensor([0.5]).to_sparse(), "probs")
        Traceback (most recent call last):
        ...
        ValueError: probs is a sparse_coo tensor: pass a dense tensor (probs.to_dense())
    """
    layout = non_dense_layout(tensor)
    if layout == "nested":
        raise ValueError(
            f"{name} is a nested tensor: pass a dense tensor (pad to one tensor, with a mask)"
        )
    if layout is not None:
        raise ValueError(f"{name} is a {layout} tensor: pass a dense tensor ({name}.to_dense())")


def check_dense_tensors(**named: object) -> None:
    """Each of ``named`` that is a tensor is dense (:func:`check_dense`); any other value
    (None, a list) is left to the caller's own check, whose message says what it takes.
    Called before any shape is read: a strided nested tensor has no ``.shape``.

    Example:
        >>> rows = [torch.zeros(2, 3), torch.zeros(1, 3)]
        >>> check_dense_tensors(emissions=torch.nested.nested_tensor(rows), mask=None)
        Traceback (most recent call last):
        ...
        ValueError: emissions is a nested tensor: pass a dense tensor (pad to one tensor, ...)
    """
    for name, value in named.items():
        if isinstance(value, torch.Tensor):
            check_dense(value, name)


def non_dense_layout(tensor: torch.Tensor) -> str | None:
    """``"nested"``, ``"sparse_coo"``, ``"sparse_csr"``, ...; None for a dense tensor.

    Example:
        >>> non_dense_layout(torch.tensor([0.5]).to_sparse()), non_dense_layout(torch.ones(1))
        ('sparse_coo', None)
    """
    if tensor.is_nested:
        return "nested"
    return None if tensor.layout == torch.strided else str(tensor.layout).removeprefix("torch.")


def as_int64(values: torch.Tensor, name: str) -> torch.Tensor:
    """Integer ``values`` as int64, refusing by ``name`` a uint64 value above int64's
    maximum: it wraps to a negative value, which had been read as padding (a coreference
    id as "no entity") or named as a value never written. One host read for uint64.

    Example:
        >>> as_int64(torch.tensor([2**63], dtype=torch.uint64), "tags")
        Traceback (most recent call last):
        ...
        ValueError: tags holds 9223372036854775808 (dtype torch.uint64), above int64's ...
    """
    wide = values.long()
    if values.dtype == torch.uint64 and bool((wide < 0).any()):
        found = wide[wide < 0][0].item() + 2**64
        raise ValueError(
            f"{name} holds {found} (dtype {values.dtype}), above int64's maximum "
            f"{torch.iinfo(torch.int64).max}, the widest integer the library computes in"
        )
    return wide


# The floating dtypes torch computes in; the float8 and packed float4 formats are storage
# only (max, comparisons and masked_fill are not implemented for them).
COMPUTE_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_computable_float(tensor: torch.Tensor, name: str) -> None:
    """Raise ValueError naming ``name`` where ``tensor`` is of a floating storage format
    (float8, packed float4) that torch has no arithmetic for: the models and queries had
    failed deep inside with torch's NotImplementedError. Other dtypes are the caller's to
    check.

    Example:
        >>> check_computable_float(torch.zeros(2, dtype=torch.float8_e4m3fn), "emissions")
        Traceback (most recent call last):
        ...
        ValueError: emissions has dtype torch.float8_e4m3fn, a storage format torch ...
    """
    if not tensor.is_floating_point() or tensor.dtype in COMPUTE_FLOATS:
        return
    # Packed float4 holds two values a byte, and torch converts it to nothing.
    packed = "float4" in str(tensor.dtype)
    way_out = "unpack it to float32 values" if packed else f"pass {name}.float()"
    raise ValueError(
        f"{name} has dtype {tensor.dtype}, a storage format torch has no arithmetic for: {way_out}"
    )


def check_not_meta(tensor: torch.Tensor, name: str) -> None:
    """Raise ValueError if ``tensor`` is on the meta device: it has a shape but no values,
    and torch's own error comes from a copy or an ``.item()`` deep inside.

    Example:
        >>> check_not_meta(torch.zeros(2, device="meta"), "probs")
        Traceback (most recent call last):
        ...
        ValueError: probs is on the meta device: it holds no values
    """
    if tensor.device.type == "meta":
        raise ValueError(f"{name} is on the meta device: it holds no values")


class NoPairsError(ValueError):
    """There is no (probability, target) pair to measure: empty input, or only padding.

    A ``ValueError``, so code that catches bad input still catches it; callers that
    must skip an empty evaluation (a callback at the end of an epoch without data)
    catch this class instead of matching message text.

    Example:
        >>> import torch
        >>> from calib_metrics.functional import calibration_error
        >>> try:
        ...     calibration_error(torch.tensor([]), torch.tensor([]))
        ... except NoPairsError as err:
        ...     print(type(err).__name__, isinstance(err, ValueError))
        NoPairsError True
    """


def stacklevel_outside(prefixes: str | tuple[str, ...] = _LIBRARY) -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called in the function that calls
    this one, name the first frame from its caller up whose file is outside ``prefixes``
    (directories; default: ``calib_metrics``): the user's line, however deep the library
    reached its warning (no fixed ``stacklevel`` names it)."""
    frame, level = sys._getframe(2), 2  # the caller's caller, warn's stacklevel 2 there
    while frame.f_back is not None and frame.f_code.co_filename.startswith(prefixes):
        frame, level = frame.f_back, level + 1
    return level


class CountedWarning(UserWarning):
    """A UserWarning whose text counts something in the data (the pairs of cut tie
    groups): a metric says it once per object, as its other warnings, though the count
    changes from one compute (epoch) to the next."""


def warn_at_caller(
    message: str,
    prefixes: str | tuple[str, ...] = _LIBRARY,
    category: type[Warning] = UserWarning,
) -> None:
    """A UserWarning (or ``category``) at the line that called into ``prefixes``
    (default: the library): :func:`stacklevel_outside`. A function reached at several
    depths (``calibration_error_ci`` itself, or through its classwise average) had warned
    from a line of the library. Held instead while :func:`said_once_for_all` computes
    its parts."""
    held = _HELD.get()
    if held is not None:
        held.append((message, category))
        return
    warnings.warn(message, category, stacklevel=stacklevel_outside(prefixes))


# Where set (by said_once_for_all), warn_at_caller's warnings, (text, category), are kept
# here to be said once at the end. Not warnings.catch_warnings: entering it resets
# Python's once-per-line registry, so a loop's classwise call had warned at every pass.
_HELD: ContextVar[list[tuple[str, type[Warning]]] | None] = ContextVar(
    "calib_metrics_held_warnings", default=None
)


def said_once_for_all(
    parts: Iterable[T], names: Sequence[object] | None = None, unit: str = "class"
) -> list[T]:
    """The results of ``parts`` (an iterable that computes one part's result a step: a
    class's), with the warnings :func:`warn_at_caller` gives meanwhile said once for all
    of them, at the caller's line: the same text once (the too-few-pairs warning had come
    once per class, 15 times for 15 classes), and a :class:`CountedWarning`, whose text
    counts one part's data, for the first part that has it, named (``unit`` and its entry
    of ``names``, default its index), with how many others do.

    Example:
        >>> def part(k: int) -> int:
        ...     warn_at_caller(f"{k + 5} pairs", category=CountedWarning)
        ...     return k
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     said_once_for_all(part(k) for k in range(3))
        [0, 1, 2]
        >>> print(caught[0].message)
        class 0: 5 pairs (so do 2 other classes)
    """
    results: list[T] = []
    said: dict[object, tuple[str, type[Warning], list[int]]] = {}
    held: list[tuple[str, type[Warning]]] = []
    token = _HELD.set(held)
    try:
        for k, result in enumerate(parts):
            results.append(result)
            for text, category in held:
                key = category if issubclass(category, CountedWarning) else text
                having = said.setdefault(key, (text, category, []))[2]
                if k not in having:
                    having.append(k)
            held.clear()
    finally:
        _HELD.reset(token)
    for text, category, having in said.values():
        if issubclass(category, CountedWarning):
            text = f"{unit} {having[0] if names is None else names[having[0]]}: {text}"
            text += _others(len(having) - 1, unit)
        warn_at_caller(text, category=category)
    return results


def _others(count: int, unit: str) -> str:
    """The end of a counted warning said for one part of ``count + 1``.

    Example:
        >>> _others(1, "class"), _others(2, "label"), _others(0, "class")
        (' (so does 1 other class)', ' (so do 2 other labels)', '')
    """
    if count == 0:
        return ""
    plural = unit + ("es" if unit.endswith("s") else "s")
    return f" (so {'does' if count == 1 else 'do'} {count} other {unit if count == 1 else plural})"
