"""Small views of settled bases: read and written in the component's memory, computed by NumPy.

A base is *settled* when no recorded, not yet run instruction writes it: its values in the
component's memory are the program's values now. A small view of it (fewer elements than the
runtime's ``settled_threshold``) is then read in place, and an operation whose lazy operands are
all such views runs in NumPy at once on that memory, its result a NumPy array or scalar like any
small result. A row or element loop over a large matrix (``x[i] = (b[i] - L[i, :i] @ x[:i]) /
L[i, i]``) thus costs NumPy's time instead of a recorded instruction and a flush per operation.
Writing a small view in place needs the base untouched by recorded work altogether (no pending
read may see the new values early).

The memory never leaves this module's callers: operations get it read-only and only results
that NumPy allocated anew are handed out, so nothing outside can keep or write engine memory.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shoal.numpy._lazy import ndarray, wrap_numpy

# A marker for "not applicable": the caller records the operation as before.
NOT_SETTLED: Any = object()


def readable(array: ndarray) -> np.ndarray | None:
    """``array``'s values in the component's memory, read-only, if its base is settled and the
    view is small; else None."""
    runtime = array._base.runtime
    if math.prod(array._view.shape) >= runtime.settled_threshold:
        return None
    memory = runtime.settle(array._view)
    if memory is None:
        return None
    memory.flags.writeable = False
    return memory


def writable(array: ndarray) -> np.ndarray | None:
    """``array``'s live memory if no recorded work touches its base, else None (any size: the
    caller checks the size of what it writes)."""
    return array._base.runtime.settle(array._view, write=True)


def operands(values: tuple[Any, ...] | list[Any]) -> list[Any] | None:
    """``values`` with every lazy array replaced by its settled memory (a lazy array standing for
    a NumPy scalar by that scalar), or None if one of them is not settled and small. Values that
    are not lazy arrays pass unchanged."""
    result = list(values)
    for position, value in enumerate(result):
        if type(value) is ndarray:
            memory = readable(value)
            if memory is None:
                return None
            result[position] = memory[()] if value._scalar else memory
    return result


def has_lazy(values: tuple[Any, ...] | list[Any]) -> bool:
    """True if one of ``values`` is a lazy array."""
    for value in values:
        if type(value) is ndarray:
            return True
    return False


def settled_ufunc(ufunc: np.ufunc, inputs: tuple[Any, ...], out: Any, where: Any, dtype: Any, casting: str) -> Any:
    """``ufunc(*inputs, ...)`` computed by NumPy at once if every lazy input (and ``where``) is a
    small view of a settled base and every lazy output one that no recorded work touches;
    else :data:`NOT_SETTLED`."""
    values = (*inputs, where)
    outs = out if isinstance(out, tuple) else (out,)
    if not has_lazy(values) and not has_lazy(outs):
        return NOT_SETTLED
    arguments = operands(values)
    if arguments is None:
        return NOT_SETTLED
    targets: list[Any] = []
    for target in outs:
        if type(target) is ndarray:
            if target._readonly or target._scalar or math.prod(target._view.shape) >= target._base.runtime.settled_threshold:
                return NOT_SETTLED
            memory = writable(target)
            if memory is None:
                return NOT_SETTLED
            target = memory
        targets.append(target)
    options: dict[str, Any] = {"casting": casting}
    if dtype is not None:
        options["dtype"] = dtype
    if out is not None:
        options["out"] = tuple(targets)
    if where is not True:
        options["where"] = arguments[-1]
    result = ufunc(*arguments[:-1], **options)
    if out is None:
        return tuple(wrap_numpy(item) for item in result) if ufunc.nout > 1 else wrap_numpy(result)
    results = result if ufunc.nout > 1 else (result,)
    handed = tuple(given if given is not None else wrap_numpy(item) for given, item in zip(outs, results))
    return handed if ufunc.nout > 1 else handed[0]


def settled_call(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> Any:
    """``function(*args, **kwargs)`` computed by NumPy at once on settled memory, for functions
    that return new arrays (never views of their inputs); else :data:`NOT_SETTLED`."""
    if kwargs and has_lazy(tuple(kwargs.values())):
        return NOT_SETTLED
    arguments = operands(args)
    if arguments is None:
        return NOT_SETTLED
    result = function(*arguments, **(kwargs or {}))
    if isinstance(result, tuple):
        return tuple(wrap_numpy(item) for item in result)
    return wrap_numpy(result)
