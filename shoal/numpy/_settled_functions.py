"""NumPy functions of small views of settled bases, computed by NumPy at once.

Operators and ufuncs on small views of a settled base run in NumPy at once (``_settled``). NumPy
functions called on them were recorded, and the loop around them read every result back: a
flush per call, with nothing left to fuse. Per row of a 1000 x 1000 array, against NumPy's own
loop: ``np.cumsum(a[i])`` 15x, ``np.sort(a[i])`` 8.7x, ``np.concatenate([a[i, :5], a[i + 1,
:5]])`` 48x NumPy's time. The functions below return new arrays (or scalars, or tuples of them)
built from their inputs' values; called with lazy arguments that are all small views of settled
bases, with no ``out``, they run here on the bases' memory (read-only), their warnings at the
caller's line. A result that shares memory with an input (``np.diff(a, n=0)`` returns ``a``)
is not handed out: the call is recorded as before, since engine memory never leaves Shoal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shoal.bytecode.dtypes import is_supported
from shoal.fp_warnings import at_user_line
from shoal.numpy._lazy import ndarray
from shoal.numpy._numpy_data import wrap_numpy
from shoal.numpy._settled import NOT_SETTLED, has_lazy, operands, readable

# NumPy function -> how many leading positional arguments are inputs (a further one would be
# ``out``); None where the function has no ``out``.
PURE_FUNCTIONS: dict[Callable[..., Any], int | None] = {
    np.cumsum: 3, np.cumprod: 3, np.sort: 4, np.argsort: 4, np.partition: None, np.argpartition: None,
    np.concatenate: 2, np.stack: 2, np.vstack: None, np.hstack: None, np.column_stack: None,
    np.diff: None, np.unique: None, np.isclose: None, np.allclose: None, np.array_equal: None,
    np.median: 2, np.percentile: 3, np.quantile: 3, np.searchsorted: None, np.interp: None,
    np.convolve: None, np.correlate: None, np.argwhere: None, np.flatnonzero: None, np.nonzero: None,
    np.count_nonzero: None, np.cross: None, np.kron: None, np.tile: None, np.repeat: None,
    np.outer: 2, np.histogram: None, np.bincount: None, np.average: None, np.trapezoid: None,
    np.polyval: None,
}  # fmt: skip


def settled_function(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``function(*args, **kwargs)`` computed by NumPy at once if ``function`` is one of
    :data:`PURE_FUNCTIONS` and every lazy argument (also inside a list or tuple argument, as
    ``np.concatenate`` takes them) is a small view of a settled base; else :data:`NOT_SETTLED`."""
    inputs = PURE_FUNCTIONS.get(function, -1)
    if inputs == -1 or (inputs is not None and len(args) > inputs):
        return NOT_SETTLED
    return _settled_call(function, args, kwargs)


# Methods of binary ufuncs whose result is at most as large as their input (``outer`` is not:
# a large outer product stays lazy, to fuse with what uses it).
UFUNC_METHODS = frozenset({"reduce", "accumulate", "reduceat"})


def settled_method(ufunc: np.ufunc, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ufunc.method(*args, **kwargs)`` (:data:`UFUNC_METHODS`) computed by NumPy at once if
    every lazy argument is a small view of a settled base and no ``out`` is given (a row loop's
    ``np.minimum.accumulate(row)``); else :data:`NOT_SETTLED`."""
    if method not in UFUNC_METHODS:
        return NOT_SETTLED
    return _settled_call(getattr(ufunc, method), args, kwargs)


def _settled_call(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if kwargs and ("out" in kwargs or has_lazy(tuple(kwargs.values()))):
        return NOT_SETTLED
    values: list[Any] = []
    memories: list[np.ndarray] = []
    for value in args:
        if type(value) is ndarray:
            memory = readable(value)
            if memory is None:
                return NOT_SETTLED
            memories.append(memory)
            values.append(memory[()] if value._scalar else memory)
        elif type(value) in (list, tuple) and has_lazy(value):
            items = operands(value)
            if items is None:
                return NOT_SETTLED
            memories.extend(item for item, given in zip(items, value) if type(given) is ndarray)
            values.append(type(value)(items))
        else:
            values.append(value)
    if not memories:
        return NOT_SETTLED
    result = at_user_line(function, *values, **kwargs)
    if _shares_memory(result, memories):
        return NOT_SETTLED
    if not _engine_kinds(result):
        return result  # ``object`` and other dtypes the engine does not hold stay NumPy's arrays
    if isinstance(result, tuple):
        return tuple(wrap_numpy(item) for item in result)
    return wrap_numpy(result)


def _engine_kinds(result: Any) -> bool:
    """True if every array in ``result`` has a dtype the engine holds (not ``object``: such a
    result is NumPy's, through the general path)."""
    items = result if isinstance(result, tuple) else (result,)
    return all(is_supported(item.dtype) for item in items if isinstance(item, np.ndarray))


def _shares_memory(result: Any, memories: list[np.ndarray]) -> bool:
    items = result if isinstance(result, tuple) else (result,)
    for item in items:
        if isinstance(item, np.ndarray):
            for memory in memories:
                if isinstance(memory, np.ndarray) and np.may_share_memory(item, memory):
                    return True
    return False
