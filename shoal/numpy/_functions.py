"""Functions that take several arrays: ``where`` and ``clip``; and the dispatch table."""

from __future__ import annotations

import inspect
import operator
from typing import Any

import numpy as np

from shoal import runtime as _runtime
from shoal.bytecode.dtypes import is_supported
from shoal.fp_warnings import at_user_line
from shoal.numpy import _composed, _create, _dispatch, _linalg, _reduce, _shape, _sorting
from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._numpy_data import from_numpy, new_array, operand, stays_numpy, wrap_numpy
from shoal.numpy._probe import broadcast_shape, quietly, value_probe
from shoal.numpy._settled import NOT_SETTLED, settled_call
from shoal.numpy._ufunc import apply_ufunc

_PY_SCALARS = (bool, int, float, complex)


def _probe_of(value: Any) -> tuple[tuple[int, ...] | None, Any]:
    if is_lazy(value):
        return value.shape, value_probe(value.dtype, value.shape)
    if isinstance(value, (*_PY_SCALARS, np.generic)):
        return None, value
    array = np.asarray(value)
    return array.shape, value_probe(array.dtype, array.shape)


_numpy_where = np.where
_MISSING: Any = object()
"""``where``'s default for ``x`` and ``y``: ``None`` is a value (an object array's element)."""


def where(condition: Any, x: Any = _MISSING, y: Any = _MISSING, /) -> Any:
    """``np.where``: the three-argument form is element-wise and lazy."""
    if type(condition) is not ndarray and type(x) is not ndarray and type(y) is not ndarray and x is not _MISSING and y is not _MISSING:
        # NumPy data in, so NumPy selects: probing first cost 10x a 1000-element ``where``, and
        # every call here counts (mandelbrot at 32² spends 1.6 µs in NumPy's ``where`` per call).
        result = _numpy_where(condition, x, y)
        return result if stays_numpy(result) else from_numpy(result, copy=False)
    if x is _MISSING and y is _MISSING:
        return tuple(wrap_numpy(i) for i in np.nonzero(condition._value() if is_lazy(condition) else condition))
    if x is _MISSING or y is _MISSING:
        raise ValueError("either both or neither of x and y should be given")
    eager = settled_call(_numpy_where, (condition, x, y))  # small views of settled bases: NumPy at once
    if eager is not NOT_SETTLED:
        return eager
    shapes, probes = [], []
    for value in (condition, x, y):
        shape, probe = _probe_of(value)
        probes.append(probe)
        shapes.append(() if shape is None else shape)
    dtype = np.asarray(quietly(np.where, *probes)).dtype
    if not is_supported(dtype):  # strings, objects, dates: NumPy selects
        return _numpy_where(*(value._value() if is_lazy(value) else value for value in (condition, x, y)))
    shape = broadcast_shape(shapes) if shapes else ()
    result = new_array(dtype, shape)
    result._base.runtime.record("where", (result._view,), tuple(operand(v) for v in (condition, x, y)))
    return result


where.__signature__ = inspect.signature(_numpy_where)  # type: ignore[attr-defined]  # NumPy's, whose defaults read None where an argument is left out


def outer(a: Any, b: Any, out: Any = None) -> Any:
    """``np.outer`` as ``shoal.numpy`` exports it: also with NumPy inputs, whose products NumPy
    never hands to Shoal, recorded where the result is large (``a -= np.outer(x, y)`` then runs
    as one pass over ``a``), the column copied at the call as any NumPy operand is. Also views of
    a held base (:mod:`shoal.held`): LU's ``a[k+1:, k+1:] -= np.outer(a[k+1:, k], a[k, k+1:])``
    then runs its batch at once, the pair in one C pass (``compiled_pairs.py``)."""
    if out is None and type(a) is np.ndarray and type(b) is np.ndarray and a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        runtime = _runtime.current()
        size = a.size * b.size
        if size >= runtime.eager_threshold:
            if size < runtime.settled_threshold:  # a broadcasting ufunc's rule (_settled._broadcasts_large): at once, held back
                return wrap_numpy(at_user_line(np.outer, a, b))
            return _composed.outer(from_numpy(a), b)
    return np.outer(a, b, out)


def clip(a: Any, a_min: Any = np._NoValue, a_max: Any = np._NoValue, out: Any = None, *, min: Any = np._NoValue, max: Any = np._NoValue, **kwargs: Any) -> Any:
    """``np.clip``."""
    if a_min is np._NoValue and a_max is not np._NoValue:
        raise TypeError("clip() missing 1 required positional argument: 'a_min'")
    if a_max is np._NoValue and a_min is not np._NoValue:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    if a_min is not np._NoValue and (min is not np._NoValue or max is not np._NoValue):
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` are provided is forbidden.")
    if out is None and not kwargs and type(a) is not ndarray and type(a_min) is not ndarray and type(a_max) is not ndarray:
        if min is np._NoValue and max is np._NoValue:  # NumPy data in: NumPy clips (a row of a held array)
            return wrap_numpy(np.clip(a, a_min, a_max))
        if type(min) is not ndarray and type(max) is not ndarray:
            return wrap_numpy(np.clip(a, a_min, a_max, min=min, max=max))
    low = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    high = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    dtype = a.dtype if is_lazy(a) else np.asarray(a).dtype
    if dtype.kind in "iu":  # NumPy clamps Python-int bounds into the array's integer range
        info = np.iinfo(dtype)
        if type(low) is int and low <= info.min:
            low = None
        if type(high) is int and high >= info.max:
            high = None
    if low is None and high is None:
        return apply_ufunc(np.positive, (a,), out=out, **kwargs)
    if low is None:
        return apply_ufunc(np.minimum, (a, high), out=out, **kwargs)
    if high is None:
        return apply_ufunc(np.maximum, (a, low), out=out, **kwargs)
    return apply_ufunc(np._core.umath.clip, (a, low, high), out=out, **kwargs)


def around(a: Any, decimals: int = 0, out: Any = None) -> Any:
    """``np.round``: the same multiply, ``rint``, divide steps as NumPy, so the same results; a
    result standing for a NumPy scalar stands for one too (``np.round(x.sum())``)."""
    result = _rounded(a, decimals, out)
    if out is None and is_lazy(a) and a._scalar and is_lazy(result):
        result._scalar = True
    return result


def _rounded(a: Any, decimals: int = 0, out: Any = None) -> Any:
    dtype = a.dtype if is_lazy(a) else np.asarray(a).dtype
    if not is_lazy(a) and not is_lazy(out):
        return np.round(a, decimals, out)
    decimals = operator.index(decimals)  # NumPy's TypeError for a decimals that is no integer
    if out is None:
        eager = settled_call(np.round, (a, decimals))
        if eager is not NOT_SETTLED:
            return eager
    if dtype.kind == "b":  # NumPy rounds booleans through float16 (and refuses decimals with them)
        if decimals:
            np.round(np.zeros(1, bool), decimals)
        return apply_ufunc(np.rint, (a,), out=out)
    if dtype.kind == "c":  # NumPy rounds the real and imaginary parts, each in the parts' precision
        if out is None and a._scalar:
            return np.round(a._value()[()], decimals)
        result = _create.empty_like(a) if out is None else out
        around(a.real, decimals, result.real)
        around(a.imag, decimals, result.imag)
        return result
    if dtype.kind in "iu":
        if decimals >= 0:
            return _shape.copy(a) if out is None else apply_ufunc(np.positive, (a,), out=out)
        from shoal.numpy._dispatch import fallback_call

        return fallback_call("round", np.round, (a, decimals), {"out": out})
    if decimals == 0:
        return apply_ufunc(np.rint, (a,), out=out)
    factor = 10.0 ** abs(decimals)
    scaled = apply_ufunc(np.multiply if decimals > 0 else np.true_divide, (a, factor), out=out)
    apply_ufunc(np.rint, (scaled,), out=(scaled,))
    return apply_ufunc(np.true_divide if decimals > 0 else np.multiply, (scaled, factor), out=(scaled,))


def _reduction(name: str) -> Any:
    def function(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = np._NoValue, **kwargs: Any) -> Any:
        return _reduce.reduction(name, a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)

    return function


def _plain_reduction(name: str) -> Any:
    def function(a: Any, axis: Any = None, out: Any = None, keepdims: Any = np._NoValue, **kwargs: Any) -> Any:
        return _reduce.reduction(name, a, axis=axis, out=out, keepdims=keepdims, **kwargs)

    return function


def _spread(name: str) -> Any:
    def function(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: Any = np._NoValue, **kwargs: Any) -> Any:
        return _reduce.reduction(name, a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof, **kwargs)

    return function


def _reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None, copy: Any = None) -> Any:
    return _shape.reshape(a, shape if shape is not None else newshape, order=order, copy_=copy)


def _transpose(a: Any, axes: Any = None) -> Any:
    return _shape.transpose(a, axes)


def _astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    return _shape.astype(x, dtype, copy_=copy)


def _swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    return _shape.swapaxes(a, axis1, axis2)


def _ravel(a: Any, order: str = "C") -> Any:
    return _shape.ravel(a, order)


def _shape_of(a: Any) -> tuple[int, ...]:
    return a.shape


def _ndim(a: Any) -> int:
    return a.ndim


def _size(a: Any, axis: Any = None) -> int:
    return a.size if axis is None else a.shape[axis]


def _result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*(a.dtype if is_lazy(a) else a for a in arrays_and_dtypes))


def _register() -> None:
    table = _dispatch.IMPLEMENTATIONS
    for name in ("sum", "prod", "mean"):
        table[getattr(np, name)] = _reduction(name)
    for name in ("min", "max", "amin", "amax", "any", "all", "argmin", "argmax"):
        table[getattr(np, name)] = _plain_reduction(name.removeprefix("a") if name in ("amin", "amax") else name)
    for name in ("var", "std"):
        table[getattr(np, name)] = _spread(name)
    table[np.cumsum] = lambda a, axis=None, dtype=None, out=None: _reduce.scan("cumsum", a, axis, dtype, out)
    table[np.cumprod] = lambda a, axis=None, dtype=None, out=None: _reduce.scan("cumprod", a, axis, dtype, out)
    table[np.where] = where
    table[np.fix] = lambda x, out=None: apply_ufunc(np.trunc, (x,), out=out)  # same values and dtype
    table[np.round] = around
    table[np.around] = around
    table[np.clip] = clip
    table[np.dot] = _linalg.dot
    table[np.matmul] = _linalg.matmul
    table[np.reshape] = _reshape
    table[np.transpose] = _transpose
    table[np.swapaxes] = _swapaxes
    table[np.ravel] = _ravel
    table[np.squeeze] = lambda a, axis=None: _shape.squeeze(a, axis)
    table[np.expand_dims] = _shape.expand_dims
    table[np.moveaxis] = _shape.moveaxis
    table[np.broadcast_to] = _shape.broadcast_to
    table[np.broadcast_arrays] = _shape.broadcast_arrays
    table[np.concatenate] = _shape.concatenate
    table[np.stack] = _shape.stack
    table[np.roll] = _shape.roll
    table[np.copy] = _create.copy
    table[np.astype] = _astype
    table[np.shape] = _shape_of
    table[np.ndim] = _ndim
    table[np.size] = _size
    table[np.result_type] = _result_type
    table[np.diagonal] = lambda a, offset=0, axis1=0, axis2=1: _shape.diagonal(a, offset, axis1, axis2)
    for name in ("sort", "argsort", "partition", "argpartition", "take_along_axis"):
        table[getattr(np, name)] = getattr(_sorting, name)
    for name in ("empty_like", "zeros_like", "ones_like", "full_like", "meshgrid"):
        table[getattr(np, name)] = getattr(_create, name)


_register()
