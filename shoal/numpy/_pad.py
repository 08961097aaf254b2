"""``np.pad`` composed from lazy operations.

``constant`` writes the input and the constants into a new array, axis by axis in NumPy's order
(so a later axis's constants fill the corners). Every other mode fills one axis after another with
NumPy's own slice copies (:mod:`shoal.numpy._pad_axes`): ``edge``, ``wrap``, ``reflect`` and
``symmetric`` were one lazy gather by ``np.ix_`` of per-axis positions, 9-150x NumPy's time on a
2048 x 1536 image. A function as the mode goes through the fallback.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib._arraypad_impl import _as_pairs

from shoal.numpy import _dispatch
from shoal.numpy._numpy_data import as_lazy, materialize, new_array
from shoal.numpy._pad_axes import AXIS_MODES, pad_by_axis
from shoal.numpy._probe import quietly, value_probe

_BY_AXIS = ("edge", "wrap", "reflect", "symmetric")


def _constant(source: Any, pairs: np.ndarray, constant_values: Any) -> Any:
    values = _as_pairs(materialize(constant_values), source.ndim)
    shape = tuple(int(n + before + after) for n, (before, after) in zip(source.shape, pairs))
    result = new_array(source.dtype, shape)
    centre = tuple(slice(int(before), int(before) + n) for n, (before, _) in zip(source.shape, pairs))
    result[centre] = source
    for axis, ((before, after), (first, last)) in enumerate(zip(pairs, values)):
        head = (slice(None),) * axis
        if before:
            result[(*head, slice(None, int(before)))] = first
        if after:
            result[(*head, slice(shape[axis] - int(after), None))] = last
    return result


def _widths(pad_width: Any, ndim: int) -> Any:
    """``pad_width`` as an array; a dict (axis: width or pair) as NumPy reads it, else as given
    (NumPy's probe then raises its error)."""
    if not isinstance(pad_width, dict):
        return np.asarray(materialize(pad_width))
    pairs = [(0, 0)] * ndim
    for axis, width in pad_width.items():
        if isinstance(width, tuple) and len(width) == 2 and all(isinstance(n, int) for n in width):
            pair = width
        elif isinstance(width, int):
            pair = (width, width)
        else:
            return pad_width
        try:
            pairs[axis] = pair
        except (IndexError, TypeError):
            return pad_width
    return np.asarray(pairs)


def pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    """``np.pad`` in every mode NumPy names; a function as the mode through the fallback."""
    source = as_lazy(array)
    supported = {"constant": {"constant_values"}, "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}}
    width = _widths(pad_width, source.ndim)
    options = materialize(kwargs)
    if isinstance(mode, str):  # NumPy's errors for the arguments, whatever the mode
        quietly(np.pad, value_probe(source.dtype, source.shape), width, mode=mode, **options)
    if isinstance(mode, str) and (mode in AXIS_MODES or options.get("reflect_type", "even") != "even"):
        return pad_by_axis(source, _as_pairs(width, source.ndim, as_index=True), mode, options)
    native = isinstance(mode, str) and mode in ("constant", *_BY_AXIS)
    if not native or set(kwargs) - supported.get(mode, set()):
        return _dispatch.fallback_call("pad", np.pad, (array, pad_width), {"mode": mode, **kwargs})
    pairs = _as_pairs(width, source.ndim, as_index=True)
    if mode == "constant":
        return _constant(source, pairs, kwargs.get("constant_values", 0))
    for axis, ((before, after), length) in enumerate(zip(pairs, source.shape)):
        if length == 0 and (before or after):
            raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
    if not any(before or after for before, after in pairs):
        return source.copy()
    if not source.size:  # another axis is empty: so is the result
        return new_array(source.dtype, tuple(int(n + before + after) for n, (before, after) in zip(source.shape, pairs)))
    return pad_by_axis(source, pairs, mode, options)


_dispatch.IMPLEMENTATIONS[np.pad] = pad
