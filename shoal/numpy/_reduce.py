"""Reductions and scans over lazy arrays."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from shoal import fp_warnings
from shoal.bytecode import BY_NAME
from shoal.numpy._fperr import eager_reduction, strict
from shoal.numpy._lazy import deliver, is_lazy, ndarray
from shoal.numpy._numpy_data import as_lazy, new_array, wrap_numpy
from shoal.numpy._probe import format_shape, quietly, value_probe
from shoal.numpy._settled import NOT_SETTLED, settled_call

_NO_DTYPE = {"min", "max", "any", "all", "argmin", "argmax"}
_UNSUPPORTED_OPTIONS = ("initial", "where", "mean")


def _result_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _reducing_ufunc(name: str) -> str:
    """The ufunc NumPy names in errors of reduction ``name`` (the opcode table's ``combine``)."""
    entry = BY_NAME.get(name)
    return entry.combine if entry is not None and entry.combine is not None else name


def _check_out(out: Any, shape: tuple[int, ...], name: str) -> None:
    if out is None:
        return
    if not isinstance(out, ndarray):
        raise TypeError("output must be an array")
    if out.shape == shape:
        pass
    elif name in ("argmin", "argmax"):
        raise ValueError(f"output array does not match result of np.{name}.")
    elif out.ndim != len(shape):
        raise ValueError(
            f"output parameter for reduction operation {_reducing_ufunc(name)} has the "
            f"wrong number of dimensions: Found {out.ndim} but expected {len(shape)}"
        )
    else:
        raise ValueError(
            "operands could not be broadcast together with remapped shapes [original->remapped]: "
            f"{format_shape(out.shape)}->{format_shape(out.shape)} {format_shape(shape)}"
        )
    if is_lazy(out) and out._readonly:
        raise ValueError("output array is read-only")


def _settled_reduction(name: str, function: Any, array: ndarray, axis: Any, dtype: Any, keepdims: Any, ddof: Any) -> Any:
    """The reduction computed by NumPy at once on a small view of a settled base, or
    :data:`NOT_SETTLED`."""
    kwargs: dict[str, Any] = {"axis": axis}
    if keepdims is not np._NoValue:
        kwargs["keepdims"] = keepdims
    if name not in _NO_DTYPE:
        kwargs["dtype"] = dtype
    if name in ("var", "std"):
        kwargs["ddof"] = ddof
    return settled_call(function, (array,), kwargs)


_WARNS_WHEN_EMPTY = frozenset({"mean", "var", "std"})


def _numpy_on_empty(function: Any, array: ndarray, **kwargs: Any) -> Any:
    """NumPy's ``mean``, ``var`` or ``std`` of an empty lazy array, computed at the call (there is
    nothing to read) through the entry the user called, so that NumPy's warnings ("Mean of empty
    slice", "invalid value encountered in scalar divide") come with NumPy's text and location."""
    entry = fp_warnings.numpy_entry()
    if getattr(entry, "__name__", None) != function.__name__:  # called inside another NumPy function (np.pad)
        entry = function
    given = {key: value for key, value in kwargs.items() if value is not np._NoValue}
    return wrap_numpy(fp_warnings.at_user_line(entry, np.empty(array.shape, array.dtype), **given))


def reduction(name: str, array: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, ddof: Any = 0, method: bool = False, **options: Any) -> Any:
    """``np.<name>(array, ...)`` for sum, prod, min, max, any, all, mean, var, std, argmin, argmax
    (``method``: the ``ndarray`` method, whose NumPy warnings name the caller's line where the
    function's name NumPy's own)."""
    scalar = type(array) is ndarray and array._scalar  # materialized as a NumPy scalar: no ndarray method
    function = getattr(np.ndarray if method and not scalar else np, name)
    correction = options.pop("correction", np._NoValue)
    if correction is not np._NoValue and name in ("var", "std"):
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    if type(array) is ndarray and out is None and name in _WARNS_WHEN_EMPTY and array.size == 0:
        return _numpy_on_empty(function, array, axis=axis, dtype=dtype, keepdims=keepdims, ddof=ddof if name != "mean" else np._NoValue, **options)
    if type(array) is ndarray and out is None and all(value is np._NoValue for value in options.values()):
        eager = _settled_reduction(name, function, array, axis, dtype, keepdims, ddof)
        if eager is not NOT_SETTLED:
            return eager
    unsupported = {k: v for k, v in options.items() if k in _UNSUPPORTED_OPTIONS and v is not np._NoValue}
    if unsupported or set(options) - set(_UNSUPPORTED_OPTIONS) or not is_lazy(array):
        from shoal.numpy._dispatch import fallback_call

        kwargs = dict(options, axis=axis, out=out)
        if name not in _NO_DTYPE:
            kwargs["dtype"] = dtype
        if keepdims is not np._NoValue:
            kwargs["keepdims"] = keepdims
        if name in ("var", "std"):
            kwargs["ddof"] = ddof
        if not is_lazy(array) and not is_lazy(out) and not unsupported:
            return function(array, **kwargs)
        return fallback_call(name, function, (array,), kwargs)
    keepdims = bool(keepdims) if keepdims is not np._NoValue else False
    probe_kwargs: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
    if name not in _NO_DTYPE:
        probe_kwargs["dtype"] = dtype
    if name in ("var", "std"):
        probe_kwargs["ddof"] = ddof
    probe_result = quietly(function, value_probe(array.dtype, array.shape), **probe_kwargs)
    if array.ndim == 0:
        axes, attr_axis, shape = (), None, np.shape(probe_result)
    elif name in ("argmin", "argmax"):
        axes = tuple(range(array.ndim)) if axis is None else (normalize_axis_index(axis, array.ndim),)
        attr_axis = None if axis is None else axes[0]
        shape = _result_shape(array.shape, axes, keepdims) if axis is not None or keepdims else ()
        if axis is None and keepdims:
            shape = (1,) * array.ndim
    else:
        axes = tuple(range(array.ndim)) if axis is None else normalize_axis_tuple(axis, array.ndim)
        attr_axis = axes
        shape = _result_shape(array.shape, axes, keepdims)
    _check_out(out, shape, name)
    if strict():
        return eager_reduction(function, array, out, **probe_kwargs)
    result = out if is_lazy(out) else new_array(np.asarray(probe_result if out is None else out).dtype, shape)
    attrs: dict[str, Any] = {"axis": attr_axis, "keepdims": keepdims}
    if name not in _NO_DTYPE:
        attrs["dtype"] = None if dtype is None else np.dtype(dtype)
    if name in ("var", "std"):
        attrs["ddof"] = ddof
    array._base.runtime.record(name, (result._view,), (array._view,), **attrs)
    return deliver(result, out)


# Ufuncs whose reduction selects an element: ``initial`` taken first or last selects the same one.
SELECTING = frozenset({"maximum", "minimum", "fmax", "fmin"})


_NO_INITIAL: Any = object()


def ufunc_reduce(ufunc: np.ufunc, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False, initial: Any = _NO_INITIAL) -> Any:
    """``ufunc.reduce(array, axis, dtype, out, keepdims[, initial])``; ``initial`` for the
    :data:`SELECTING` ufuncs only (``nanmax(a, initial=x)`` is ``np.fmax.reduce``'s)."""
    if isinstance(out, tuple):
        out = out[0]
    if initial is not _NO_INITIAL:
        return _reduce_from(ufunc, array, axis, dtype, out, keepdims, initial)
    probe_result = quietly(ufunc.reduce, value_probe(array.dtype, array.shape), axis=axis, dtype=dtype, keepdims=keepdims)
    if array.ndim == 0:
        axis = None
    axes = tuple(range(array.ndim)) if axis is None else normalize_axis_tuple(axis, array.ndim)
    shape = _result_shape(array.shape, axes, keepdims)
    if array.size == 0 and ufunc.identity is None and any(array.shape[a] == 0 for a in axes):
        ufunc.reduce(np.zeros(array.shape, array.dtype), axis=axis)
    _check_out(out, shape, ufunc.__name__)
    if strict():
        return eager_reduction(ufunc.reduce, array, out, axis=axis, dtype=dtype, keepdims=keepdims)
    result = out if is_lazy(out) else new_array(np.asarray(probe_result).dtype, shape)
    attrs = {"ufunc": ufunc.__name__, "axis": axes, "keepdims": keepdims, "dtype": None if dtype is None else np.dtype(dtype)}
    array._base.runtime.record("reduce", (result._view,), (array._view,), **attrs)
    return deliver(result, out)


def scan(name: str, array: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``np.cumsum`` / ``np.cumprod``."""
    if isinstance(out, tuple):
        out = out[0]
    if not is_lazy(array):
        if not is_lazy(out):
            return getattr(np, name)(array, axis=axis, dtype=dtype, out=out)
        array = as_lazy(array)  # NumPy data into a lazy output: NumPy's call would dispatch here again
    probe_result = quietly(getattr(np, name), value_probe(array.dtype, array.shape), axis=axis, dtype=dtype)
    if axis is None or array.ndim == 0:
        shape: tuple[int, ...] = (math.prod(array.shape),)
        attr_axis = None
    else:
        attr_axis = normalize_axis_index(axis, array.ndim)
        shape = array.shape
    if out is not None and getattr(out, "shape", shape) != shape:
        _scan_out_error(name, array, out, axis, dtype)
    _check_out(out, shape, name)
    if strict():
        return eager_reduction(getattr(np, name), array, out, axis=axis, dtype=dtype)
    result = out if is_lazy(out) else new_array(probe_result.dtype, shape)
    array._base.runtime.record(name, (result._view,), (array._view,), axis=attr_axis, dtype=None if dtype is None else np.dtype(dtype))
    return deliver(result, out)


def _scan_out_error(name: str, array: Any, out: Any, axis: Any, dtype: Any) -> None:
    """Raise NumPy's error for ``np.cumsum``/``np.cumprod`` into an ``out`` of another shape, from
    stand-ins of the real shapes that hold one element each (stride 0)."""
    stand_in = np.broadcast_to(np.zeros((), array.dtype), array.shape)
    out_stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, out.dtype), out.shape, (0,) * out.ndim)
    quietly(getattr(np, name), stand_in, axis=axis, dtype=dtype, out=out_stand_in)


def _reduce_from(ufunc: np.ufunc, array: Any, axis: Any, dtype: Any, out: Any, keepdims: bool, initial: Any) -> Any:
    """A selecting ``ufunc``'s reduction with ``initial``: ``ufunc(initial, reduction)``, which
    keeps NumPy's choice among equal elements (``initial`` is its first), or ``initial``
    everywhere where no element is reduced. NumPy's errors and dtype from a probe."""
    from shoal.numpy._create import full
    from shoal.numpy._ufunc import apply_ufunc

    assert ufunc.__name__ in SELECTING
    probe_result = quietly(ufunc.reduce, value_probe(array.dtype, array.shape), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
    result_dtype = np.asarray(probe_result).dtype
    start = np.asarray(initial).astype(result_dtype)
    axes = tuple(range(array.ndim)) if axis is None or array.ndim == 0 else normalize_axis_tuple(axis, array.ndim)
    if any(array.shape[a] == 0 for a in axes):
        shape = _result_shape(array.shape, axes, keepdims)
        _check_out(out, shape, ufunc.__name__)
        filled = full(shape, start, dtype=result_dtype)
        if out is None:
            return filled
        out[...] = filled
        return out
    reduced = ufunc_reduce(ufunc, array, axis, dtype, None, keepdims)
    return apply_ufunc(ufunc, (start, reduced), out=out)
