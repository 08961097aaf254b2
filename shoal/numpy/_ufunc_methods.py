"""``ufunc.accumulate`` (beyond ``add``/``multiply``, which are ``cumsum``/``cumprod``) and
``ufunc.reduceat`` of binary ufuncs as engine instructions, and ``np.fill_diagonal`` as a lazy
scatter.

``reduceat`` reads its indices at the call, as indexing does, so out-of-range ones raise NumPy's
``IndexError`` there; the data stays lazy. ``out=`` goes through the fallback.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from shoal.numpy import _dispatch
from shoal.numpy._lazy import as_lazy, is_lazy, materialize, new_array, operand
from shoal.numpy._probe import quietly, value_probe


def accumulate(ufunc: np.ufunc, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
    """``ufunc.accumulate`` as one ``accumulate`` instruction."""
    if out is not None:
        return _dispatch.fallback_call(f"{ufunc.__name__}.accumulate", ufunc.accumulate, (array,), {"axis": axis, "dtype": dtype, "out": out})
    source = as_lazy(array)
    probe = quietly(ufunc.accumulate, value_probe(source.dtype, source.shape), axis=axis, dtype=dtype)
    if axis is None:
        shape, attr_axis = (math.prod(source.shape),), None
    else:
        shape, attr_axis = source.shape, normalize_axis_index(axis, source.ndim)
    result = new_array(probe.dtype, shape)
    options = {"axis": attr_axis, "dtype": None if dtype is None else np.dtype(dtype)}
    source._base.runtime.record("accumulate", (result._view,), (source._view,), ufunc=ufunc.__name__, **options)
    return result


def reduceat(ufunc: np.ufunc, array: Any, indices: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
    """``ufunc.reduceat`` as one ``reduceat`` instruction."""
    if out is not None:
        options = {"axis": axis, "dtype": dtype, "out": out}
        return _dispatch.fallback_call(f"{ufunc.__name__}.reduceat", ufunc.reduceat, (array, indices), options)
    source = as_lazy(array)
    given = materialize(indices)
    # NumPy converts a sequence to integers as ``np.array(..., intp)`` does, an array safely
    index = given if isinstance(given, np.ndarray) else np.array(given, dtype=np.intp)
    if index.ndim != 1:
        raise ValueError("object too deep for desired array" if index.ndim > 1 else "object of too small depth for desired array")
    index = index.astype(np.intp, casting="safe")  # NumPy's TypeError for other index types
    axis = normalize_axis_index(axis, source.ndim)
    length = source.shape[axis]
    bad = index[(index < 0) | (index >= length)]
    if bad.size:  # NumPy checks the indices before the types
        raise IndexError(f"index {bad[0]} out-of-bounds in {ufunc.__name__}.reduceat [0, {length})")
    probe_shape = tuple(min(n, 1) for n in source.shape)
    probe = quietly(ufunc.reduceat, np.zeros(probe_shape, source.dtype), index[:0], axis=axis, dtype=dtype)
    shape = (*source.shape[:axis], index.size, *source.shape[axis + 1 :])
    result = new_array(probe.dtype, shape)
    if index.size and result.size:
        options = {"axis": axis, "dtype": None if dtype is None else np.dtype(dtype)}
        source._base.runtime.record("reduceat", (result._view,), (source._view, operand(index)), ufunc=ufunc.__name__, **options)
    return result


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
