"""``ufunc.accumulate`` (``add``/``multiply`` as ``cumsum``/``cumprod``, other binary ufuncs as one
``accumulate`` instruction), ``ufunc.reduceat`` (one ``reduceat`` instruction), ``ufunc.outer``
(the ufunc over the first operand with one new axis per axis of the second), ``ufunc.at`` (NumPy
on the data, written back) and ``np.fill_diagonal`` as a lazy scatter.

Errors are NumPy's and come in NumPy's order: ``reduceat`` reads its indices at the call, as
indexing does (NumPy converts them first and checks their range after the axis); the axis of
``accumulate``/``reduceat`` (one axis: ``None`` only for 1-D input, a tuple of one, never 0-d
input) is checked by NumPy on a stand-in of the real rank; the dtype and ``out=`` (its dtype by
a probe of the method with ``out`` as zeros of that dtype, its shape against the real one) by
NumPy on probes. The work runs in the dtype NumPy computes in without ``out`` (``dtype=`` if
given) and is cast into ``out``, as NumPy's reductions do.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from shoal import fp_warnings
from shoal.bytecode.dtypes import is_supported
from shoal.numpy import _dispatch
from shoal.numpy._indexed import settled_key
from shoal.numpy._lazy import is_lazy
from shoal.numpy._numpy_data import as_lazy, materialize, new_array, operand
from shoal.numpy._probe import quietly, value_probe


def _one_axis(method: str, array: Any, axis: Any, indices: Any = None) -> int:
    """The one axis ``accumulate``/``reduceat`` works along; NumPy's error (on a stand-in of
    the array's rank, with a ufunc and indices that cannot fail) for any other ``axis``."""
    stand_in = np.zeros(tuple(min(n, 1) for n in array.shape))
    if method == "accumulate":
        np.add.accumulate(stand_in, axis=axis)
    else:
        np.add.reduceat(stand_in, np.zeros(0, np.intp) if indices is None else indices, axis=axis)
    if axis is None:
        return 0
    if isinstance(axis, tuple):
        axis = axis[0]
    return normalize_axis_index(operator.index(axis), array.ndim)


def _single_out(out: Any) -> Any:
    """``out`` as NumPy's methods take it: one array, or a tuple of one."""
    return out[0] if isinstance(out, tuple) and len(out) == 1 else out


def _check_out(call: Any, source: Any, out: Any, shape: tuple[int, ...], probe: np.ndarray) -> bool:
    """Raise NumPy's error for ``out``; False if NumPy takes an ``out`` this cannot (the caller
    then falls back)."""
    array = is_lazy(out) or isinstance(out, np.ndarray)
    if array and tuple(out.shape) == shape:
        stand_in = np.zeros(probe.shape, out.dtype)
        stand_in.flags.writeable = bool(out.flags.writeable)
        quietly(call, value_probe(source.dtype, source.shape), out=stand_in)
        return True
    real = np.lib.stride_tricks.as_strided(np.zeros(1, source.dtype), source.shape, (0,) * source.ndim)
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, out.dtype), out.shape, (0,) * out.ndim) if array else out
    quietly(call, real, out=stand_in)
    return False


def in_numpy(name: str, function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``function`` in NumPy on the data, its result returned as NumPy gives it: for results the
    engine cannot hold (``object``, strings); counted and warned about as a fallback."""
    result = function(*materialize(args), **materialize(kwargs))
    _dispatch.warn_fallback(name)  # once it worked: NumPy's error comes without a warning
    return result


def _deliver(result: Any, out: Any) -> Any:
    if out is None:
        return result
    if is_lazy(out):
        out[...] = result
    else:
        np.copyto(out, materialize(result), casting="unsafe")
    return out


def accumulate(ufunc: np.ufunc, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
    """``ufunc.accumulate``: ``cumsum``/``cumprod`` for ``add``/``multiply``, else one
    ``accumulate`` instruction."""
    source = as_lazy(array)
    attr_axis = _one_axis("accumulate", source, axis)
    out = _single_out(out)

    def call(value: Any, **extra: Any) -> Any:
        return ufunc.accumulate(value, axis=axis, dtype=dtype, **extra)

    probe = quietly(call, value_probe(source.dtype, source.shape))
    options = {"axis": axis, "dtype": dtype, "out": out}
    if not is_supported(probe.dtype):
        return in_numpy(f"{ufunc.__name__}.accumulate", ufunc.accumulate, (array,), options)
    if out is not None and not _check_out(call, source, out, source.shape, probe):
        return _dispatch.fallback_call(f"{ufunc.__name__}.accumulate", ufunc.accumulate, (array,), options)
    kind = None if dtype is None else np.dtype(dtype)
    if ufunc in (np.add, np.multiply):
        from shoal.numpy._reduce import scan

        result = scan("cumsum" if ufunc is np.add else "cumprod", source, axis=attr_axis, dtype=kind)
    else:
        result = new_array(probe.dtype, source.shape)
        source._base.runtime.record("accumulate", (result._view,), (source._view,), ufunc=ufunc.__name__, axis=attr_axis, dtype=kind)
    return _deliver(result, out)


def _reduceat_index(indices: Any) -> tuple[np.ndarray, Any]:
    """``reduceat``'s indices read now as intp (NumPy converts a sequence as ``np.array(...,
    intp)`` does, an array safely) and what the instruction reads: a lazy intp array itself (its
    values read in the component's memory where they are settled: no copy), or the NumPy array
    (a large one is uploaded once while unchanged); NumPy's errors for indices of another depth
    or type."""
    if is_lazy(indices) and indices.dtype == np.intp and indices.ndim == 1:
        memory = settled_key(indices)  # its memory, read-only, or itself where the component refuses
        return (indices._value() if memory is indices else memory), indices
    given = materialize(indices)
    index = given if isinstance(given, np.ndarray) else np.array(given, dtype=np.intp)
    if index.ndim != 1:
        raise ValueError("object too deep for desired array" if index.ndim > 1 else "object of too small depth for desired array")
    index = index.astype(np.intp, casting="safe", copy=False)  # NumPy's TypeError for other index types
    return index, index


def reduceat(ufunc: np.ufunc, array: Any, indices: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
    """``ufunc.reduceat`` as one ``reduceat`` instruction."""
    source = as_lazy(array)
    index, recorded = _reduceat_index(indices)
    axis_number = _one_axis("reduceat", source, axis)
    length = source.shape[axis_number]
    if index.size and int(index.view(np.uintp).max()) >= length:  # one pass: a negative index reads as a huge one
        # NumPy checks the indices before the types
        bad = index[(index < 0) | (index >= length)]
        raise IndexError(f"index {bad[0]} out-of-bounds in {ufunc.__name__}.reduceat [0, {length})")
    out = _single_out(out)

    def call(value: Any, **extra: Any) -> Any:
        return ufunc.reduceat(value, index[:0] if value.shape[axis_number] <= 1 else index, axis=axis, dtype=dtype, **extra)

    probe = quietly(call, value_probe(source.dtype, source.shape))
    shape = (*source.shape[:axis_number], index.size, *source.shape[axis_number + 1 :])
    options = {"axis": axis, "dtype": dtype, "out": out}
    if not is_supported(probe.dtype):
        return in_numpy(f"{ufunc.__name__}.reduceat", ufunc.reduceat, (array, recorded), options)
    if out is not None and not _check_out(call, source, out, shape, probe):
        return _dispatch.fallback_call(f"{ufunc.__name__}.reduceat", ufunc.reduceat, (array, indices), options)
    result = new_array(probe.dtype, shape)
    if index.size and result.size:
        options = {"axis": axis_number, "dtype": None if dtype is None else np.dtype(dtype)}
        source._base.runtime.record("reduceat", (result._view,), (source._view, operand(recorded)), ufunc=ufunc.__name__, **options)
    return _deliver(result, out)


def outer(ufunc: np.ufunc, first: Any, second: Any, /, **kwargs: Any) -> Any:
    """``ufunc.outer``: ``ufunc(first[..., newaxis * second.ndim], second)``, lazily."""
    left = first if is_lazy(first) else np.asarray(first)
    right = second if is_lazy(second) else np.asarray(second)
    return ufunc(left.reshape(tuple(left.shape) + (1,) * right.ndim), right, **kwargs)


def at(ufunc: np.ufunc, target: Any, indices: Any, *values: Any) -> None:
    """``ufunc.at``: NumPy works on the data (unbuffered, repeated indices apply again) and a
    lazy target gets the result back."""

    def apply(data: Any, *rest: Any) -> Any:
        data = np.array(data, copy=True) if is_lazy(target) else data
        fp_warnings.at_user_line(ufunc.at, data, *rest)  # NumPy's warnings name the user's line
        return data

    changed = _dispatch.fallback_call(f"{ufunc.__name__}.at", apply, (target, indices, *values), {})
    if is_lazy(target):
        target[...] = changed


def fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    """``np.fill_diagonal``: NumPy's flat positions (every ``1 + sum of strides`` elements),
    written by one lazy scatter."""
    if not is_lazy(a):
        np.fill_diagonal(a, materialize(val), wrap)
        return
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = None if wrap else a.shape[1] * a.shape[1]
    else:
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
        end = None
    positions = np.arange(a.size)[:end:step]
    if not positions.size:
        return
    value = materialize(val)
    if np.ndim(value):
        value = np.resize(np.asarray(value), positions.shape)  # flat assignment repeats the values
    a[np.unravel_index(positions, a.shape)] = value


_dispatch.IMPLEMENTATIONS[np.fill_diagonal] = fill_diagonal
