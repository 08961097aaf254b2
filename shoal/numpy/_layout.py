"""The memory layout NumPy gives an element-wise result: its operands' axis order (order ``K``).

``a.T + 1`` is Fortran-contiguous in NumPy, and iterating it in memory order (``np.nditer``,
``ravel(order="K")``) meets its elements in that order. NumPy orders the result's axes as its
array operands order theirs (by stride, largest first), where all of them that vote agree; an
operand broadcast along some axis, or of fewer axes, does not vote; a disagreement gives C order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.bytecode import View, contiguous_strides
from shoal.numpy._lazy import ndarray
from shoal.numpy._numpy_data import new_array


def axis_order(inputs: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The order of the result's axes of length over 1, outermost first, if it is not C's; else
    None."""
    if len(shape) < 2:
        return None
    order = None
    for value in inputs:
        kind = type(value)
        if kind is ndarray:
            view = value._view
            strides, own = view.strides, view.shape
        elif kind is np.ndarray:
            strides, own = value.strides, value.shape
        else:
            continue
        if len(own) != len(shape):
            continue
        axes = [axis for axis, n in enumerate(shape) if n > 1]
        if any(own[axis] != shape[axis] or strides[axis] == 0 for axis in axes):
            continue
        found = tuple(sorted(axes, key=lambda axis: -abs(strides[axis])))
        if order is None:
            order = found
        elif found != order:
            return None
    if order is None or list(order) == sorted(order):
        return None
    return order


def result_strides(order: tuple[int, ...] | None, shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The byte strides of a contiguous result of ``shape`` whose axes lie in ``order``
    (outermost first; None: C order)."""
    if order is None:
        return contiguous_strides(shape, itemsize)
    strides = [0] * len(shape)
    step = itemsize
    for axis in reversed(order):
        strides[axis] = step
        step *= shape[axis]
    for axis, n in enumerate(shape):
        if n <= 1:
            strides[axis] = step  # an axis of one element: any stride; NumPy's flags ignore it
    return tuple(strides)


def ordered_array(dtype: np.dtype, shape: tuple[int, ...], order: tuple[int, ...] | None) -> ndarray:
    """A new lazy array of ``shape`` whose axes lie in ``order`` (None: C order)."""
    array = new_array(dtype, shape)
    if order is not None:
        dtype = np.dtype(dtype)
        array._view = View(array._base.id, dtype, 0, tuple(shape), result_strides(order, tuple(shape), dtype.itemsize))
    return array
