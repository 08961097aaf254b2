"""The ``np.pad`` modes that fill one axis after another, as NumPy does, on a lazy array:
``maximum``, ``minimum``, ``mean``, ``median`` (with ``stat_length``), ``linear_ramp`` (with
``end_values``), ``reflect``/``symmetric`` with ``reflect_type='odd'`` and ``empty``.

The padded array is a new lazy array with the input in its centre. Each axis in turn fills its pad
area from the region NumPy reads (the full extent along the axes already padded, the centre along
the later ones), so the corners come out as NumPy's. NumPy's own helpers (``_view_roi``,
``_get_edges``, ``_set_pad_area``, ``_set_reflect_both``) only slice, assign and do arithmetic, and
run unchanged on lazy views; the statistics and ramps are written out here with NumPy's steps
(rounding a statistic for an integer array, ``linspace``'s arithmetic and its choice between
``y / div * delta`` and ``y * step``), since NumPy's versions call functions that would read
the data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib import _arraypad_impl as _numpy_pad

from shoal.numpy._numpy_data import new_array

STAT_MODES = ("maximum", "minimum", "mean", "median")
AXIS_MODES = (*STAT_MODES, "linear_ramp", "empty")


def _at_axis(item: slice, axis: int) -> tuple[slice, ...]:
    return (slice(None),) * axis + (item,)


def _median(chunk: Any, axis: int) -> Any:
    """``np.median(chunk, axis=axis, keepdims=True)``: the mean of the middle one or two sorted
    values, NaN where the slice holds a NaN."""
    length = chunk.shape[axis]
    if length == 0:
        return np.mean(chunk, axis=axis, keepdims=True)  # NumPy's NaN and warnings
    ordered = np.sort(chunk, axis=axis)
    middle = ordered[_at_axis(slice((length - 1) // 2, length // 2 + 1), axis)]
    result = np.mean(middle, axis=axis, keepdims=True)
    if chunk.dtype.kind in "fc":
        last = ordered[_at_axis(slice(length - 1, length), axis)]
        result = np.where(np.isnan(last), last, result)  # NumPy's ``_median_nancheck``
    return result


_STATISTICS = {"maximum": np.amax, "minimum": np.amin, "mean": np.mean, "median": _median}


def _statistic(mode: str, chunk: Any, axis: int, dtype: np.dtype) -> Any:
    if mode == "median":
        value = _median(chunk, axis)
    else:
        value = _STATISTICS[mode](chunk, axis=axis, keepdims=True)
    if np.issubdtype(dtype, np.integer):  # NumPy's ``_round_if_needed``
        value = np.round(value)
    return value


def _stats(mode: str, roi: Any, axis: int, widths: tuple[int, int], lengths: tuple[Any, Any]) -> tuple[Any, Any]:
    """NumPy's ``_get_stats``: the statistic of the first and last ``stat_length`` values."""
    left_index = widths[0]
    right_index = roi.shape[axis] - widths[1]
    most = right_index - left_index
    left_length, right_length = (most if n is None or most < n else n for n in lengths)
    if (left_length == 0 or right_length == 0) and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")
    left = _statistic(mode, roi[_at_axis(slice(left_index, left_index + left_length), axis)], axis, roi.dtype)
    if left_length == right_length == most:
        return left, left
    right = _statistic(mode, roi[_at_axis(slice(right_index - right_length, right_index), axis)], axis, roi.dtype)
    return left, right


def _ramp(start: Any, edge: Any, num: int, dtype: np.dtype, axis: int) -> Any:
    """``np.linspace(start, edge.squeeze(axis), num, endpoint=False, dtype=dtype, axis=axis)``
    with ``edge`` lazy (its ``axis`` of length one)."""
    if num == 0:  # the pad area is empty
        return np.zeros(tuple(0 if i == axis else n for i, n in enumerate(edge.shape)), dtype)
    kind = np.linspace(start, np.zeros(1, dtype), 0, endpoint=False).dtype
    delta = np.subtract(edge, start, dtype=kind)
    positions = np.arange(0, num, dtype=kind).reshape(tuple(num if i == axis else 1 for i in range(edge.ndim)))
    step = delta / num
    gradual = (positions / num) * delta  # NumPy's route when any step is zero (denormal steps)
    ramp = np.where(np.any(step == 0), gradual, positions * step)
    ramp = (ramp + start).astype(kind, copy=False)
    if np.issubdtype(dtype, np.integer):
        ramp = np.floor(ramp)
    return ramp.astype(dtype, copy=False)


def _ramps(roi: Any, axis: int, widths: tuple[int, int], ends: tuple[Any, Any]) -> tuple[Any, Any]:
    """NumPy's ``_get_linear_ramps``."""
    left_edge, right_edge = _numpy_pad._get_edges(roi, axis, widths)
    left = _ramp(ends[0], left_edge, widths[0], roi.dtype, axis)
    right = _ramp(ends[1], right_edge, widths[1], roi.dtype, axis)
    if widths[1]:
        right = right[_at_axis(slice(None, None, -1), axis)]
    return left, right


def pad_by_axis(source: Any, pairs: Any, mode: str, kwargs: dict[str, Any]) -> Any:
    """``np.pad(source, pairs, mode, **kwargs)`` for the modes of :data:`AXIS_MODES`, ``edge``,
    ``wrap``, ``reflect`` and ``symmetric``, arguments already checked by NumPy on a probe."""
    shape = tuple(int(n + before + after) for n, (before, after) in zip(source.shape, pairs))
    padded = new_array(source.dtype, shape)
    centre = tuple(slice(int(before), int(before) + n) for n, (before, _) in zip(source.shape, pairs))
    padded[centre] = source
    if mode == "empty" or math.prod(shape) == 0:
        return padded
    widths = [(int(before), int(after)) for before, after in pairs]
    if mode in STAT_MODES:
        lengths = _numpy_pad._as_pairs(kwargs.get("stat_length"), padded.ndim, as_index=True)
        for axis, (width, length) in enumerate(zip(widths, lengths)):
            roi = _numpy_pad._view_roi(padded, centre, axis)
            _numpy_pad._set_pad_area(roi, axis, width, _stats(mode, roi, axis, width, length))
    elif mode == "linear_ramp":
        ends = _numpy_pad._as_pairs(kwargs.get("end_values", 0), padded.ndim)
        for axis, (width, end) in enumerate(zip(widths, ends)):
            roi = _numpy_pad._view_roi(padded, centre, axis)
            _numpy_pad._set_pad_area(roi, axis, width, _ramps(roi, axis, width, end))
    elif mode == "edge":
        for axis, width in enumerate(widths):
            roi = _numpy_pad._view_roi(padded, centre, axis)
            _numpy_pad._set_pad_area(roi, axis, width, _numpy_pad._get_edges(roi, axis, width))
    elif mode == "wrap":
        for axis, (left, right) in enumerate(widths):
            roi = _numpy_pad._view_roi(padded, centre, axis)
            period = padded.shape[axis] - right - left
            period -= period % source.shape[axis]
            while left > 0 or right > 0:
                left, right = _numpy_pad._set_wrap_both(roi, axis, (left, right), period)
    else:  # reflect or symmetric
        method = kwargs.get("reflect_type", "even")
        for axis, (left, right) in enumerate(widths):
            if source.shape[axis] == 1 and (left or right):
                edges = _numpy_pad._get_edges(padded, axis, (left, right))
                _numpy_pad._set_pad_area(padded, axis, (left, right), edges)
                continue
            roi = _numpy_pad._view_roi(padded, centre, axis)
            while left > 0 or right > 0:
                left, right = _numpy_pad._set_reflect_both(roi, axis, (left, right), method, source.shape[axis], mode == "symmetric")
    return padded
