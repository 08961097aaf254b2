"""Sorting, partitioning and ``take_along_axis``: whole-axis operations the engine runs in order."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib._shape_base_impl import _make_along_axis_idx
from numpy.lib.array_utils import normalize_axis_index

from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._numpy_data import as_lazy, new_array, operand
from shoal.numpy._probe import quietly, value_probe


def _prepare(array: Any, axis: Any) -> tuple[ndarray, int]:
    array = as_lazy(array)
    if axis is None:
        return array.reshape(-1), 0
    if array.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    return array, normalize_axis_index(axis, array.ndim)


def _check_kth(kth: Any, length: int) -> tuple[int, ...] | int:
    values = np.asarray(kth)
    if values.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    for k in values.reshape(-1).tolist():
        if not -length <= k < length:
            raise ValueError(f"kth(={k}) out of bounds ({length})")
    return int(values) if values.ndim == 0 else tuple(int(k) for k in values.reshape(-1))


def _ordered(op: str, array: Any, axis: Any, kind: Any = None, kth: Any = None, order: Any = None, stable: Any = None) -> Any:
    function = getattr(np, op)
    if order is not None or not is_lazy(array):
        if not is_lazy(array):
            args = (array,) if kth is None else (array, kth)
            options = {"axis": axis, "order": order}
            if kth is None:
                options.update(kind=kind, stable=stable)
            return function(*args, **options)
        from shoal.numpy._dispatch import fallback_call

        return fallback_call(op, function, (array,) if kth is None else (array, kth), {"axis": axis, "order": order})
    source, axis = _prepare(array, axis)
    if stable:
        kind = "stable"
    attrs: dict[str, Any] = {"axis": axis}
    if kth is not None:
        attrs["kth"] = _check_kth(kth, source.shape[axis])
    elif kind is not None:
        quietly(function, value_probe(source.dtype, source.shape), axis=axis, kind=kind)
        attrs["kind"] = kind
    dtype = source.dtype if op in ("sort", "partition") else np.dtype(np.intp)
    result = new_array(dtype, source.shape)
    source._base.runtime.record(op, (result._view,), (source._view,), **attrs)
    return result


def sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    """``np.sort``."""
    return _ordered("sort", a, axis, kind=kind, order=order, stable=stable)


def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    """``np.argsort``."""
    return _ordered("argsort", a, axis, kind=kind, order=order, stable=stable)


def partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    """``np.partition``."""
    return _ordered("partition", a, axis, kth=kth, order=order)


def argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    """``np.argpartition``."""
    return _ordered("argpartition", a, axis, kth=kth, order=order)


def _without_axis(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return (*shape[:axis], 1, *shape[axis + 1 :])


def take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    """``np.take_along_axis``; index values are checked at the call, so lazy indices are read."""
    if not is_lazy(indices) and not isinstance(indices, np.ndarray):
        indices.dtype  # noqa: B018  (NumPy's AttributeError for a list)
    index_values = indices._value() if is_lazy(indices) else np.asarray(indices)
    if not is_lazy(arr):
        return np.take_along_axis(arr, index_values, axis)
    if index_values.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    source = arr
    if axis is None:
        if index_values.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        source, axis = arr.reshape(-1), 0
    elif index_values.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = normalize_axis_index(axis, source.ndim)
    try:
        outer = np.broadcast_shapes(_without_axis(source.shape, axis), _without_axis(index_values.shape, axis))
    except ValueError:  # NumPy's IndexError, from its own index arrays over a probe of the shape
        probe = np.lib.stride_tricks.as_strided(np.zeros(1, source.dtype), source.shape, (0,) * source.ndim)
        probe[_make_along_axis_idx(source.shape, index_values, axis)]
        raise
    shape = list(outer)
    shape[axis] = index_values.shape[axis]
    length = source.shape[axis]
    if index_values.size and (index_values.max() >= length or index_values.min() < -length):
        bad = index_values.max() if index_values.max() >= length else index_values.min()
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {length}")
    result = new_array(source.dtype, tuple(shape))
    source._base.runtime.record("take_along_axis", (result._view,), (source._view, operand(index_values)), axis=axis)
    return result


def sort_in_place(self: ndarray, /, axis: int = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> None:
    """``ndarray.sort``."""
    if self._readonly:
        raise ValueError("sort array is read-only")
    if axis is None:  # NumPy's method sorts along an axis only
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    self[...] = sort(self, axis, kind, order, stable=stable)


def partition_in_place(self: ndarray, kth: Any, /, axis: int = -1, kind: str = "introselect", order: Any = None) -> None:
    """``ndarray.partition``."""
    if self._readonly:
        raise ValueError("partition array is read-only")
    self[...] = partition(self, kth, axis, kind, order)
