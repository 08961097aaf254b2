"""NumPy data in and out of lazy arrays: new arrays (from NumPy data or empty), the results NumPy
computes wrapped back, an operation's operands as bytecode, and lazy arrays read out as NumPy's.

Which NumPy arrays stay NumPy's (small ones, dtypes that bytecode cannot carry) is decided here
too (:func:`stays_numpy`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import psutil

from shoal import runtime as _runtime
from shoal.array_sizes import REFERENCE_ITEMSIZE, below
from shoal.bytecode import Const, View, contiguous_strides
from shoal.bytecode.dtypes import is_supported
from shoal.frozen_values import new_view
from shoal.numpy._lazy import ndarray
from shoal.numpy._uploads import cacheable


class UnsupportedDtype(Exception):
    """A lazy array was asked for in a dtype bytecode cannot carry (strings, objects, long
    doubles, dates and times): the operation that asked runs in NumPy instead."""


#: Python's numbers, which bytecode carries as constants as they are.
PYTHON_NUMBERS = (bool, int, float, complex)


def new_array(
    dtype: np.dtype, shape: tuple[int, ...], data: np.ndarray | None = None, donate: bool = True
) -> ndarray:
    """A new C-contiguous lazy array; ``data`` (1-D) gives its contents, handed over to the
    component unless ``donate`` is false (the caller keeps using it). An :class:`UnsupportedDtype`
    for a dtype bytecode cannot carry: no base of it is ever declared."""
    if not isinstance(dtype, np.dtype):
        dtype = np.dtype(dtype)
    if not is_supported(dtype):
        raise UnsupportedDtype(f"no lazy array of dtype {dtype!r}")
    shape = tuple(shape)
    size = math.prod(shape)
    if data is None and size * dtype.itemsize > _memory_limit():
        np.empty(shape, dtype)  # NumPy's own MemoryError (or ValueError) at the call that asked
    base = _runtime.current().new_base(dtype, size, data, donate)
    view = new_view(base.id, dtype, 0, shape, contiguous_strides(shape, dtype.itemsize))
    return ndarray._wrap(base, view)


@functools.cache
def _memory_limit() -> int:
    """Bytes beyond which an allocation may fail: memory plus swap. A larger new array is first
    allocated (untouched, so nearly free) by NumPy, which raises its own error where it would."""
    return psutil.virtual_memory().total + psutil.swap_memory().total


def from_numpy(value: np.ndarray, copy: bool = True) -> ndarray:
    """A lazy array holding ``value``'s current contents (copied unless the caller gives it
    away), in its Fortran order if it has one (NumPy's result of ``a.T + 1``: order ``K``)."""
    fortran = value.ndim > 1 and value.flags.f_contiguous and not value.flags.c_contiguous
    flat = value.ravel(order="F") if fortran else np.ascontiguousarray(value).reshape(-1)
    if copy and np.shares_memory(flat, value):
        flat = flat.copy()
    array = new_array(value.dtype, value.shape, flat)
    if fortran:
        array._view = View(array._base.id, value.dtype, 0, value.shape, value.strides)
    return array


def is_small(size: int, itemsize: int = REFERENCE_ITEMSIZE) -> bool:
    """True if ``size`` elements of ``itemsize`` bytes are below the eager threshold
    (:mod:`shoal.array_sizes`)."""
    return below(size, itemsize, _runtime.current().eager_threshold)


def stays_numpy(value: np.ndarray) -> bool:
    """True if NumPy array ``value`` is not made lazy: it is small, or of a dtype that bytecode
    cannot carry (strings, objects, dates and times, records), whose operations are NumPy's."""
    return is_small(value.size, value.itemsize) or not is_supported(value.dtype)


def wrap_numpy(value: Any) -> Any:
    """A result computed in NumPy: lazy if large (and of a dtype bytecode carries), else the
    NumPy object itself (its common case in C where built: :data:`compiled_hold`)."""
    if compiled_hold is not None and type(value) is np.ndarray:
        held = compiled_hold(_runtime.current(), value)
        if held is not None:
            return held
    return wrap_in_python(value)


def wrap_in_python(value: Any) -> Any:
    """:func:`wrap_numpy` in Python (what the compiled hold leaves to Python)."""
    if isinstance(value, np.ndarray) and not stays_numpy(value):
        return from_numpy(value, copy=False)
    return value


#: ``shoal._settled_calls.hold`` where it was built (``shoal/numpy/_settled_compiled.py`` sets it).
compiled_hold: Any = None


def operand(value: Any) -> View | Const:
    """The bytecode operand for ``value``: a lazy array's view, a constant, or carried data."""
    if type(value) is ndarray:
        return value._view
    if isinstance(value, PYTHON_NUMBERS):
        return Const(value)
    if isinstance(value, np.generic):
        return Const(value)
    array = np.asarray(value)
    if array.ndim == 0:
        return Const(array[()])
    runtime = _runtime.current()
    if 0 in array.strides and array.size > 1 and not array.flags.c_contiguous:
        return _repeating_operand(array, runtime)
    if array is value and not is_small(array.size, array.itemsize) and cacheable(array):
        uploaded = runtime.uploads.lookup(array)
        if uploaded is None:
            snapshot = array.copy()
            uploaded = new_array(array.dtype, array.shape, snapshot.reshape(-1), donate=False)
            runtime.uploads.store(array, uploaded, snapshot)
        return uploaded._view
    carried = from_numpy(array)
    runtime.carry(carried)
    return carried._view


def _repeating_operand(array: np.ndarray, runtime: Any) -> View:
    """A NumPy view that repeats its elements along axes of stride 0 (``np.broadcast_to``'s):
    its distinct elements carried once, under a view that repeats them (not a copy of every
    repetition)."""
    distinct = np.ascontiguousarray(array[tuple(0 if stride == 0 else slice(None) for stride in array.strides)])
    carried = from_numpy(distinct)
    runtime.carry(carried)
    inner = iter(contiguous_strides(distinct.shape, array.dtype.itemsize))
    strides = tuple(0 if stride == 0 else next(inner) for stride in array.strides)
    view = carried._view
    return new_view(view.base, array.dtype, view.offset, array.shape, strides)


def as_lazy(value: Any) -> ndarray:
    """``value`` as a lazy array (NumPy data is copied into a new base)."""
    if type(value) is ndarray:
        return value
    return from_numpy(np.asarray(value))


def materialize(value: Any) -> Any:
    """Replace lazy arrays (also inside lists, tuples and dicts) by NumPy arrays."""
    if type(value) is ndarray:
        result = value._value()  # in a Fortran order if the view has one, as NumPy's function sees it
        return result[()] if value._scalar else result
    if isinstance(value, list):
        return [materialize(item) for item in value]
    if isinstance(value, tuple):
        return tuple(materialize(item) for item in value)
    if isinstance(value, dict):
        return {key: materialize(item) for key, item in value.items()}
    return value
