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

from shoal import runtime as _runtime
from shoal.array_sizes import below
from shoal.fp_warnings import at_user_line
from shoal.numpy._lazy import ndarray
from shoal.numpy._numpy_data import wrap_numpy
from shoal.numpy._settled_compiled import SETTLED_CALLS, UFUNC, configure
from shoal.settled_memory import PRODUCT_READ_FACTOR

# A marker for "not applicable": the caller records the operation as before.
NOT_SETTLED: Any = object()
configure(NOT_SETTLED)


def readable(array: ndarray) -> np.ndarray | None:
    """``array``'s values in the component's memory, read-only, if its base is settled and the
    view is small; else None."""
    return _read_only(array) if _small(array) else None


def _read_only(array: ndarray) -> np.ndarray | None:
    """:func:`readable` once ``array`` is known to be small."""
    memory = array._base.runtime.settle(array._view)
    if memory is not None:
        memory.flags.writeable = False
    return memory


def _memory(array: ndarray) -> np.ndarray | None:
    """Like :func:`readable`, but writable: only for operands NumPy reads and never returns
    (a ufunc's inputs), where setting the flag would cost as much as the operation."""
    if not _small(array):
        return None
    return array._base.runtime.settle(array._view)


def writable(array: ndarray, touched: int | None = None) -> np.ndarray | None:
    """``array``'s live memory if no recorded work touches its base, else None (any size: the
    caller checks the size of what it writes, ``touched`` elements if it writes part of it)."""
    return array._base.runtime.settle(array._view, write=True, touched=touched)


def operands(values: tuple[Any, ...] | list[Any]) -> list[Any] | None:
    """``values`` with every lazy array replaced by its settled memory (a lazy array standing for
    a NumPy scalar by that scalar), or None if one of them is not settled and small. Values that
    are not lazy arrays pass unchanged."""
    result = list(values)
    lazy = []
    for position, value in enumerate(result):
        if type(value) is ndarray:
            if not _small(value):
                return None  # before any is read: a read may fetch a base whole (shoal.mirrors)
            lazy.append(position)
    for position in lazy:
        value = result[position]
        memory = _read_only(value)
        if memory is None:
            return None
        result[position] = memory[()] if value._scalar else memory
    return result


def _small(array: ndarray) -> bool:
    """True if ``array``'s view is below its runtime's settled threshold (:func:`readable` may
    give its memory)."""
    view = array._view
    return below(math.prod(view.shape), view.dtype.itemsize, array._base.runtime.settled_threshold)


def has_lazy(values: tuple[Any, ...] | list[Any]) -> bool:
    """True if one of ``values`` is a lazy array."""
    for value in values:
        if type(value) is ndarray:
            return True
    return False


def settled_ufunc(ufunc: np.ufunc, inputs: tuple[Any, ...], out: Any, where: Any, dtype: Any, casting: str, compiled_tried: bool = False) -> Any:
    """``ufunc(*inputs, ...)`` computed by NumPy at once if every lazy input (and ``where``) is a
    small view of a settled base and every lazy output one that no recorded work touches;
    else :data:`NOT_SETTLED`. ``compiled_tried``: the compiled call already answered None for
    these operands (``_fast_ufunc.record``), so it is not asked again."""
    if out is None and where is True and dtype is None and casting == "same_kind":
        return _plain_ufunc(ufunc, inputs, compiled_tried)
    if SETTLED_CALLS is not None and not compiled_tried and where is True and dtype is None and casting == "same_kind":
        target = out[0] if type(out) is tuple and len(out) == 1 else out
        if type(target) is ndarray or type(target) is np.ndarray:  # one output, lazy or NumPy's: the common case in C
            done = SETTLED_CALLS.call(ufunc, inputs, UFUNC, target)
            if done is not None:
                return done
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
            if target._readonly or target._scalar or not below(math.prod(target._view.shape), target._view.dtype.itemsize, target._base.runtime.settled_threshold):
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
    result = at_user_line(ufunc, *arguments[:-1], **options)
    if out is None:
        return tuple(wrap_numpy(item) for item in result) if ufunc.nout > 1 else wrap_numpy(result)
    results = result if ufunc.nout > 1 else (result,)
    handed = tuple(given if given is not None else wrap_numpy(item) for given, item in zip(outs, results))
    return handed if ufunc.nout > 1 else handed[0]


def _plain_ufunc(ufunc: np.ufunc, inputs: tuple[Any, ...], compiled_tried: bool = False) -> Any:
    """:func:`settled_ufunc` without ``out``, ``where``, ``dtype`` or ``casting``: the common
    operator call (``a + b``), at a third of the general path's cost; its common case in C where
    built (``shoal/numpy/_settled_compiled.py``)."""
    if SETTLED_CALLS is not None and not compiled_tried:
        done = SETTLED_CALLS.call(ufunc, inputs, UFUNC)
        if done is not None:
            return done
    arguments = list(inputs)
    lazy = None
    for position, value in enumerate(arguments):
        if type(value) is ndarray:
            memory = _memory(value)
            if memory is None:
                return NOT_SETTLED
            arguments[position] = memory[()] if value._scalar else memory
            lazy = value
    if lazy is None:
        return NOT_SETTLED
    if _broadcasts_large(arguments, lazy._base.runtime.settled_threshold):
        return NOT_SETTLED
    result = at_user_line(ufunc, *arguments)
    if ufunc.nout > 1:
        return tuple(wrap_numpy(item) for item in result)
    if type(result) is np.ndarray and not below(result.size, result.itemsize, _runtime.current().eager_threshold):
        return wrap_numpy(result)
    return result


def _broadcasts_large(arguments: list[Any], limit: int) -> bool:
    """True if small operands of different shapes broadcast to a result of ``limit`` elements or
    more (``np.outer``'s ``a[:, None] * b[None, :]``): large work is recorded, where it fuses
    with what uses it, rather than computed here into a new large array."""
    shapes = [argument.shape for argument in arguments if type(argument) is np.ndarray]
    if len(shapes) < 2 or all(shape == shapes[0] for shape in shapes):
        return False
    try:
        return math.prod(np.broadcast_shapes(*shapes)) >= limit
    except ValueError:
        return False  # NumPy raises its own error


def settled_call(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> Any:
    """``function(*args, **kwargs)`` computed by NumPy at once on settled memory, for functions
    that return new arrays (never views of their inputs); else :data:`NOT_SETTLED`."""
    if kwargs and has_lazy(tuple(kwargs.values())):
        return NOT_SETTLED
    arguments = operands(args)
    if arguments is None:
        return NOT_SETTLED
    result = at_user_line(function, *arguments, **(kwargs or {}))
    if isinstance(result, tuple):
        return tuple(wrap_numpy(item) for item in result)
    return wrap_numpy(result)



def settled_product(function: Any, a: Any, b: Any, shape: tuple[int, ...]) -> Any:
    """``function(a, b)`` (``np.matmul`` or ``np.dot``) computed by NumPy at once if its result
    (of ``shape``) is small and every lazy operand is a settled view of at most
    ``PRODUCT_READ_FACTOR * settled_threshold`` elements; else :data:`NOT_SETTLED`."""
    runtime = _runtime.current()
    limit = runtime.settled_threshold
    if math.prod(shape) >= limit:
        return NOT_SETTLED
    arguments = [a, b]
    for position, value in enumerate(arguments):
        if type(value) is ndarray:
            if math.prod(value._view.shape) > PRODUCT_READ_FACTOR * limit:
                return NOT_SETTLED
            memory = value._base.runtime.settle(value._view)
            if memory is None:
                return NOT_SETTLED
            memory.flags.writeable = False
            arguments[position] = memory[()] if value._scalar else memory
    return wrap_numpy(at_user_line(function, *arguments))
