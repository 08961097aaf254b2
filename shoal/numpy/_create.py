"""Array creation: small arrays are plain NumPy, large ones are created lazily."""

from __future__ import annotations

import inspect
import math
import operator
from typing import Any

import numpy as np

from shoal import runtime as _runtime
from shoal.array_sizes import REFERENCE_ITEMSIZE
from shoal.bytecode.dtypes import is_supported
from shoal.numpy._copyto import copyto
from shoal.numpy._lazy import fortran_only, is_lazy, ndarray
from shoal.numpy._numpy_data import (
    from_numpy,
    is_small,
    materialize,
    new_array,
    stays_numpy,
    wrap_numpy,
)
from shoal.numpy._shape import (
    astype,
    broadcast_arrays,
    broadcast_arrays_lazily,
    copy_in_order,
    probe_of,
    reshape,
)
from shoal.numpy._shape import copy as _copy

_PLAIN_SCALARS = frozenset({int, float, bool, complex})
_ARANGE_NUMBERS = (int, float, np.integer, np.floating)
_REAL = frozenset({int, float})


def _shape_tuple(shape: Any) -> tuple[int, ...]:
    given = shape
    if is_lazy(shape) and shape.ndim == 0:  # ``np.zeros(mask.sum())``: the scalar it stands for
        if shape.dtype.kind not in "iub":
            raise TypeError(f"expected a sequence of integers or a single integer, got '{shape._value()[()]!r}'")
        name = f"numpy.{shape.dtype.name}"
        shape = (shape,)
    else:
        name = type(shape).__name__
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
    try:
        result = tuple(operator.index(n) for n in shape)
    except TypeError:
        result = None
    if result is None:  # raised outside the handler: an exception the program is handling stays its context
        np.empty(materialize(given), np.int8)  # NumPy's own error for this shape
        raise TypeError(f"'{name}' object cannot be interpreted as an integer")
    for n in result:
        if n < 0:
            raise ValueError("negative dimensions are not allowed")
    return result


#: The value ``np.empty`` passes to :func:`_filled`: no fill (``None`` is ``np.full``'s NaN or object).
_EMPTY: Any = object()


def _filled(shape: Any, dtype: Any, value: Any, numpy_function: Any, order: str) -> Any:
    if type(shape) is int and 0 <= shape:  # a 1-D array: the checks below, read once
        runtime = _runtime.current()
        if shape < runtime.eager_threshold:  # small: NumPy's call, at NumPy's cost
            return _numpy_filled(shape, dtype, value, numpy_function, order)
        if order in ("C", "K", "A") and _carried(dtype) and _settled_size(shape, runtime):
            return wrap_numpy(_numpy_filled(shape, dtype, value, numpy_function, order))
    dims = _shape_tuple(shape)
    if is_small(math.prod(dims), _itemsize(dtype)) or order not in ("C", "K", "A") or not is_supported(np.dtype(dtype)):  # object, structured: NumPy's
        return _numpy_filled(dims, dtype, value, numpy_function, order)
    if _settled_size(math.prod(dims)):
        return wrap_numpy(_numpy_filled(dims, dtype, value, numpy_function, order))
    probe = np.full((), 0 if value is _EMPTY else value, dtype=dtype)
    if not is_supported(probe.dtype):  # ``np.full(n, None)``: objects are NumPy's
        return np.full(dims, value, dtype=dtype, order=order)
    result = new_array(probe.dtype, dims)
    if value is not _EMPTY:
        result._base.runtime.record("fill", (result._view,), (_fill_constant(probe),))
    return result


def _numpy_filled(shape: Any, dtype: Any, value: Any, numpy_function: Any, order: str) -> np.ndarray:
    """NumPy's own array: ``np.zeros``/``np.ones``/``np.empty`` themselves (zeros of strings are
    empty strings, not ``"0"``), ``np.full`` for a value given to ``np.full``."""
    if value is _EMPTY or numpy_function is not np.empty:
        return numpy_function(shape, dtype=dtype, order=order)
    return np.full(shape, value, dtype=dtype, order=order)


def _carried(dtype: Any) -> bool:
    """True if no dtype is asked for, or one that bytecode carries (no dates, strings, objects)."""
    try:
        return dtype is None or is_supported(np.dtype(dtype))
    except TypeError:
        return False  # not a dtype: NumPy's error


def _itemsize(dtype: Any) -> int:
    """The itemsize of the dtype a creation call asks for (``REFERENCE_ITEMSIZE`` where NumPy
    will refuse it: the size check is then the element count's alone, and NumPy's own call
    raises)."""
    try:
        return np.dtype(dtype).itemsize
    except (TypeError, ValueError):
        return REFERENCE_ITEMSIZE


def _settled_size(size: int, runtime: Any = None) -> bool:
    """True if an array of ``size`` elements, lazy because the eager threshold is below the
    settled one, is small enough for NumPy to make at once (its small views are settled), and
    the component keeps such data in this process (a remote one would be sent the values, not
    the instruction that makes them). ``runtime``: the one in use, where the caller has it."""
    if runtime is None:
        runtime = _runtime.current()
    return size < runtime.settled_threshold and runtime.offers_memory()


def _in_memory(value: np.ndarray) -> Any:
    """``value`` as a lazy array whose base holds it from the start: operations on its small
    views run at once, as on any settled base, instead of recording its creation."""
    return new_array(value.dtype, value.shape, value.reshape(-1))


def _fill_constant(probe: np.ndarray) -> Any:
    from shoal.bytecode import Const

    return Const(probe[()])


def empty(shape: Any, dtype: Any = None, order: str = "C", *, device: Any = None, like: Any = None) -> Any:
    """``np.empty``."""
    if type(shape) is int and 0 <= shape < _runtime.current().eager_threshold:  # NumPy's call at NumPy's cost
        return np.empty(shape, float if dtype is None else dtype, order)
    return _filled(shape, float if dtype is None else dtype, _EMPTY, np.empty, order)


def zeros(shape: Any, dtype: Any = None, order: str = "C", *, device: Any = None, like: Any = None) -> Any:
    """``np.zeros``."""
    if type(shape) is int and 0 <= shape < _runtime.current().eager_threshold:  # NumPy's call at NumPy's cost
        return np.zeros(shape, float if dtype is None else dtype, order)
    return _filled(shape, float if dtype is None else dtype, 0, np.zeros, order)


def ones(shape: Any, dtype: Any = None, order: str = "C", *, device: Any = None, like: Any = None) -> Any:
    """``np.ones``."""
    if type(shape) is int and 0 <= shape < _runtime.current().eager_threshold:  # NumPy's call at NumPy's cost
        return np.ones(shape, float if dtype is None else dtype, order)
    return _filled(shape, float if dtype is None else dtype, 1, np.ones, order)


def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", *, device: Any = None, like: Any = None) -> Any:
    """``np.full``."""
    if type(fill_value) in _PLAIN_SCALARS and type(shape) is int and 0 <= shape < _runtime.current().eager_threshold:
        return np.full(shape, fill_value, dtype, order)
    if is_lazy(fill_value) or np.ndim(fill_value) > 0:
        value = fill_value if is_lazy(fill_value) else np.asarray(fill_value, dtype=dtype)
        result = empty(shape, value.dtype if dtype is None else dtype, order)
        copyto(result, value, casting="unsafe")  # NumPy's fill: a NumPy scalar out of range wraps
        return result
    if dtype is None:
        dtype = np.array(fill_value).dtype
    return _filled(shape, dtype, fill_value, np.empty, order)


def _numpy_like(prototype: Any, shape: Any) -> bool:
    """True if a ``*_like`` call is NumPy's own: a small NumPy prototype (whose memory layout
    and subclass NumPy's call keeps) and no new shape."""
    return shape is None and isinstance(prototype, np.ndarray) and is_small(prototype.size, prototype.itemsize)


def _like(prototype: Any, dtype: Any, shape: Any) -> tuple[Any, Any]:
    proto_shape = prototype.shape if is_lazy(prototype) else np.shape(prototype)
    proto_dtype = prototype.dtype if is_lazy(prototype) else np.asarray(prototype).dtype
    return (proto_shape if shape is None else shape), (proto_dtype if dtype is None else dtype)


def _like_order(prototype: Any, order: str, shape: Any) -> str:
    """The order of a ``*_like`` result: ``K`` and ``A`` keep a Fortran-ordered prototype's
    (``zeros_like(a.T)`` is Fortran-ordered, as NumPy's) where the shape is the prototype's."""
    if order in ("K", "A") and shape is None and is_lazy(prototype) and prototype.ndim > 1:
        return "F" if fortran_only(prototype) else "C"
    return "F" if order == "F" else "C"


def empty_like(prototype: Any, /, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, *, device: Any = None) -> Any:
    """``np.empty_like``."""
    if _numpy_like(prototype, shape):
        return np.empty_like(prototype, dtype, order, subok)
    s, d = _like(prototype, dtype, shape)
    return empty(s, d, _like_order(prototype, order, shape))


def zeros_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, *, device: Any = None) -> Any:
    """``np.zeros_like``."""
    if _numpy_like(a, shape):
        return np.zeros_like(a, dtype, order, subok)
    s, d = _like(a, dtype, shape)
    return zeros(s, d, _like_order(a, order, shape))


def ones_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, *, device: Any = None) -> Any:
    """``np.ones_like``."""
    if _numpy_like(a, shape):
        return np.ones_like(a, dtype, order, subok)
    s, d = _like(a, dtype, shape)
    return ones(s, d, _like_order(a, order, shape))


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, *, device: Any = None) -> Any:
    """``np.full_like``."""
    if type(fill_value) in _PLAIN_SCALARS and _numpy_like(a, shape):
        return np.full_like(a, fill_value, dtype, order, subok)
    s, d = _like(a, dtype, shape)
    return full(s, fill_value, d, _like_order(a, order, shape))


def array(object: Any, dtype: Any = None, *, copy: Any = True, order: str = "K", subok: bool = False, ndmin: int = 0, ndmax: int = 0, like: Any = None) -> Any:
    """``np.array``."""
    obj = object
    options = {"ndmax": ndmax} if ndmax else {}
    if _plain_sequence(obj):  # a list of Python numbers: nothing lazy in it
        if copy is True and order == "K" and not subok and not ndmin and not options:
            value = np.array(obj, dtype)  # the defaults, by position: a third of the call's cost
        else:
            value = np.array(obj, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, **options)
        return value if stays_numpy(value) else from_numpy(value, copy=False)
    if is_lazy(obj):
        if obj._scalar:  # NumPy's array of a scalar is a new 0-d array
            obj = _array_of_scalar(obj, copy)
            copy = None
        if copy is False:  # NumPy's error where a copy cannot be avoided, found on a probe of the geometry
            np.array(probe_of(obj), dtype=dtype, copy=False, order=order)
        if order in ("F", "A", "K") and copy is True and dtype is None and not ndmin:
            return copy_in_order(obj, order)
        result = astype(obj, obj.dtype if dtype is None else dtype, copy_=(copy is not False and copy is not None) or dtype is not None)
        if copy is True and result is obj:
            result = _copy(obj)
        if result.ndim < ndmin:
            shape = (1,) * (ndmin - result.ndim) + result.shape
            result = reshape(result, shape) if is_lazy(result) else result.reshape(shape)  # NumPy's copy of settled memory
        return result
    value = np.array(materialize(obj), dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, **options)
    if stays_numpy(value) or value is obj:
        return value
    return from_numpy(value, copy=copy is not True)


def _array_of_scalar(scalar: ndarray, copy: Any) -> ndarray:
    """A 0-d array of its own with the value of ``scalar``, a result that stands for a NumPy
    scalar (NumPy's error where ``copy`` is False: a scalar's array is always a new one)."""
    if copy is False:
        np.asarray(scalar.dtype.type(0), copy=False)
    return _copy(scalar)


def _plain_sequence(value: Any) -> bool:
    """True if ``value`` is a list or tuple of Python numbers (no array, no nesting)."""
    if type(value) is not list and type(value) is not tuple:
        return False
    for item in value:
        if type(item) not in _PLAIN_SCALARS:
            return False
    return True


def asarray(a: Any, dtype: Any = None, order: Any = None, *, device: Any = None, copy: Any = None, like: Any = None) -> Any:
    """``np.asarray``: lazy arrays and NumPy arrays are returned as they are when no copy is needed."""
    obj = a
    if is_lazy(obj):
        if obj._scalar:  # NumPy's array of a scalar is a new 0-d array
            obj = _array_of_scalar(obj, copy)
            copy = None
        if order is not None and order != "K" and _out_of_order(obj, order):
            if copy is False:  # NumPy's error, found on a probe of the geometry
                np.array(probe_of(obj), dtype=dtype, copy=False, order=order)
            converted = obj if dtype is None or np.dtype(dtype) == obj.dtype else astype(obj, dtype)
            return copy_in_order(converted, "F" if order == "F" else "C")
        if dtype is None or np.dtype(dtype) == obj.dtype:
            return _copy(obj) if copy is True else obj
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return astype(obj, dtype)
    if isinstance(obj, np.ndarray):
        return np.asarray(obj, dtype=dtype, order=order, copy=copy)
    return array(obj, dtype=dtype, copy=True if copy is None else copy)


def _out_of_order(array: ndarray, order: Any) -> bool:
    """True if NumPy's ``asarray(array, order=order)`` copies to lay ``array`` out in ``order``
    (``C`` or ``F``; ``A`` never copies; any other value raises NumPy's error)."""
    if order not in ("C", "F", "A"):
        np.asarray(np.empty(0), order=order)
    c_order = array._view.is_contiguous()
    if order == "C":
        return not c_order
    return order == "F" and not (fortran_only(array) or (c_order and sum(n > 1 for n in array.shape) <= 1))


def asanyarray(a: Any, dtype: Any = None, order: Any = None, *, device: Any = None, copy: Any = None, like: Any = None) -> Any:
    """``np.asanyarray``."""
    return asarray(a, dtype=dtype, order=order, device=device, copy=copy)


def ascontiguousarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    """``np.ascontiguousarray``."""
    value = asarray(a, dtype=dtype)
    if is_lazy(value):
        if value.ndim == 0:  # NumPy's result has at least one dimension: a view of the 0-d array
            return reshape(value, (1,))
        return value if value._view.is_contiguous() else _copy(value)
    return np.ascontiguousarray(value)


def asfortranarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    """``np.asfortranarray``: the array itself where it is laid out in Fortran order already."""
    value = asarray(a, dtype=dtype, order="F")
    if is_lazy(value):
        if value.ndim == 0:  # NumPy's result has at least one dimension: a view of the 0-d array
            return reshape(value, (1,))
        return value
    return np.asfortranarray(value)


def _arange_length(start: Any, stop: Any, step: Any) -> int:
    if step == 0:
        raise ZeroDivisionError("division by zero")
    return max(0, math.ceil((stop - start) / step))


_MISSING: Any = object()


def _arange_arguments(
    start_or_stop: Any = _MISSING, /, stop: Any = None, step: Any = 1, *, start: Any = _MISSING,
    dtype: Any = None, device: Any = None, like: Any = None,
) -> tuple[Any, Any, Any, Any]:
    """``arange``'s (start, stop, step, dtype); ``start=`` is accepted by keyword as NumPy does."""
    if start_or_stop is _MISSING:
        if start is not _MISSING and stop is None:
            raise TypeError("arange() requires stop to be specified.")
        start_or_stop, stop = (start, stop) if start is not _MISSING else (stop, None)
    elif start is not _MISSING:
        raise TypeError("arange() got multiple values for argument 'start'")
    if stop is None:
        return 0, start_or_stop, step, dtype
    return start_or_stop, stop, step, dtype


def arange(*args: Any, **kwargs: Any) -> Any:
    """``np.arange``: large ranges are created lazily."""
    if len(args) == 1 and not kwargs and type(args[0]) is int and args[0] < _runtime.current().eager_threshold:
        return np.arange(args[0])  # ``np.arange(n)`` in a loop: NumPy's call at NumPy's cost
    try:
        start, stop, step, dtype = _arange_arguments(*args, **kwargs)
    except TypeError:  # NumPy raises its own error below
        start = stop = step = dtype = None
    plain = (start, stop, step)
    if type(start) in _REAL and type(stop) in _REAL and type(step) in _REAL:  # Python numbers: nothing to check
        try:
            small = _arange_length(start, stop, step) < _runtime.current().eager_threshold
        except (ZeroDivisionError, ValueError, OverflowError):
            small = True  # a zero step or a length that cannot be computed: NumPy's own error
        if small:
            return np.arange(*args, **kwargs)
    elif any(v is None or is_lazy(v) or np.ndim(v) or not isinstance(v, _ARANGE_NUMBERS) or isinstance(v, np.timedelta64) for v in plain):
        return wrap_numpy(np.arange(*materialize(args), **materialize(kwargs)))  # dates, strings, arrays: NumPy's
    if not _carried(dtype):
        return np.arange(*args, **kwargs)
    length = _arange_length(start, stop, step)
    if is_small(length):
        return np.arange(*args, **kwargs)
    if _settled_size(length):
        return _in_memory(np.arange(*args, **kwargs))
    kind = np.arange(start, type(stop)(start), step, dtype=dtype).dtype
    result = new_array(kind, (length,))
    plain = [v.item() if isinstance(v, np.generic) else v for v in (start, stop, step)]
    result._base.runtime.record("arange", (result._view,), (), start=plain[0], stop=plain[1], step=plain[2])
    return result


arange.__signature__ = inspect.signature(np.arange)  # type: ignore[attr-defined]


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype: Any = None, axis: int = 0, *, device: Any = None) -> Any:
    """``np.linspace``."""
    if type(num) is int and 0 <= num < _runtime.current().eager_threshold and type(start) in _REAL and type(stop) in _REAL:
        return np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    scalar = all(np.ndim(v) == 0 and not is_lazy(v) and not isinstance(v, complex) for v in (start, stop))
    if is_small(num) or not scalar or _settled_size(num):
        return wrap_numpy(np.linspace(materialize(start), materialize(stop), num, endpoint, retstep, dtype, axis))
    kind = np.linspace(start, stop, 2, endpoint, dtype=dtype).dtype
    result = new_array(kind, (num,))
    plain = [v.item() if isinstance(v, np.generic) else v for v in (start, stop)]
    result._base.runtime.record("linspace", (result._view,), (), start=plain[0], stop=plain[1], num=num, endpoint=bool(endpoint))
    if retstep:
        div = (num - 1) if endpoint else num
        exact = np.result_type(start, stop, float(num))
        delta = np.asarray(stop, exact) - np.asarray(start, exact)
        step = delta / div if div > 0 else np.nan
        return result, step
    return result


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float, order: str = "C", *, device: Any = None, like: Any = None) -> Any:
    """``np.eye``."""
    cols = N if M is None else M
    if N < 0 or cols < 0:
        raise ValueError("negative dimensions are not allowed")
    if is_small(N * cols, _itemsize(dtype)) or order != "C":
        return np.eye(N, M, k, dtype, order)
    if _settled_size(N * cols):
        return _in_memory(np.eye(N, M, k, dtype, order))
    result = new_array(np.dtype(dtype), (operator.index(N), operator.index(cols)))
    result._base.runtime.record("eye", (result._view,), (), k=operator.index(k))
    return result


def identity(n: int, dtype: Any = None, *, like: Any = None) -> Any:
    """``np.identity``."""
    return eye(n, dtype=float if dtype is None else dtype)


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple[Any, ...]:
    """``np.meshgrid``; large grids are lazy."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    ones_shape = (1,) * ndim
    outputs = []
    for i, x in enumerate(xi):
        x = x if is_lazy(x) else np.asanyarray(x)
        shape = (*ones_shape[:i], -1, *ones_shape[i + 1:])
        outputs.append(x.reshape(shape))
    if indexing == "xy" and ndim > 1:
        outputs[0] = outputs[0].reshape((1, -1, *ones_shape[2:]))
        outputs[1] = outputs[1].reshape((-1, 1, *ones_shape[2:]))
    if not sparse:  # copies of lazy views where they are copied (they stay lazy); else NumPy's views of NumPy data
        outputs = list(broadcast_arrays_lazily(*outputs) if copy else broadcast_arrays(*outputs))
    if copy:
        outputs = [_copy(o) if is_lazy(o) else o.copy() for o in outputs]
    return tuple(outputs)


def indices(dimensions: Any, dtype: Any = int, sparse: bool = False) -> Any:
    """``np.indices``."""
    dims = _shape_tuple(dimensions)
    if sparse or is_small(len(dims) * math.prod(dims), _itemsize(dtype)):
        return np.indices(dims, dtype=dtype, sparse=sparse)
    result = empty((len(dims), *dims), dtype)
    for axis, n in enumerate(dims):
        shape = (1,) * axis + (n,) + (1,) * (len(dims) - axis - 1)
        result[axis] = np.arange(n, dtype=dtype).reshape(shape)
    return result


def fromfunction(function: Any, shape: Any, *, dtype: Any = float, like: Any = None, **kwargs: Any) -> Any:
    """``np.fromfunction``: NumPy's own when one grid (the result's size) is small, though all
    grids together may not be."""
    try:
        size = math.prod(operator.index(extent) for extent in shape)
    except TypeError:
        size = 0  # not a shape: NumPy raises its own error
    if like is None and is_small(size, _itemsize(dtype)):
        return np.fromfunction(function, shape, dtype=dtype, **kwargs)
    grids = indices(shape, dtype=dtype)
    return function(*grids, **kwargs)


def copy(a: Any, order: str = "K", subok: bool = False) -> Any:
    """``np.copy``."""
    if is_lazy(a):
        return copy_in_order(a, order)
    return np.copy(a, order=order, subok=subok)


__all__ = [
    "arange", "array", "asanyarray", "asarray", "ascontiguousarray", "asfortranarray", "copy", "empty", "empty_like",
    "eye", "fromfunction", "full", "full_like", "identity", "indices", "linspace", "meshgrid",
    "ones", "ones_like", "zeros", "zeros_like",
]  # fmt: skip

