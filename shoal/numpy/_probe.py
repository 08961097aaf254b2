"""Probes: tiny stand-ins on which NumPy itself computes result dtypes, view geometry and errors.

Running NumPy on a probe gives Shoal NumPy's exact exception types and messages at the call that
caused them, without touching the data. Two kinds exist:

* *geometry probes* share an array's shape and strides over a one-element buffer, so a view op
  (indexing, transpose, reshape without copy) yields the view's offset and strides. They must
  only ever be used with operations that make views and read nothing.
* *value probes* have at most one element per axis, for dtype and casting checks.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

_ANCHORS: dict[np.dtype, np.ndarray] = {}


def _anchor(dtype: np.dtype) -> np.ndarray:
    anchor = _ANCHORS.get(dtype)
    if anchor is None:
        anchor = _ANCHORS[dtype] = np.zeros(1, dtype)
    return anchor


_PROBES: dict[tuple[np.dtype, tuple[int, ...], tuple[int, ...]], np.ndarray] = {}
PROBES_KEPT = 512  # geometries a loop indexes over and over: NumPy's ``as_strided`` costs 2-3 µs


def geometry_probe(dtype: np.dtype, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """A writable array with this geometry whose data pointer is an anchor; never read it, and
    never change it (the same geometry gets the same probe)."""
    key = (dtype, shape, strides)
    probe = _PROBES.get(key)
    if probe is None:
        if len(_PROBES) >= PROBES_KEPT:
            _PROBES.clear()
        probe = _PROBES[key] = as_strided(_anchor(dtype), shape=shape, strides=strides, writeable=True)
    return probe


def data_address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def value_probe(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Zeros of ``dtype`` with every axis shrunk to at most one element."""
    return np.zeros(tuple(min(n, 1) for n in shape), dtype)


_SILENCE = ("ignore", None, Warning, None, 0)


def quietly(function, *args: Any, **kwargs: Any) -> Any:
    """Call ``function`` with floating-point errors and warnings silenced (probe values are fake).

    The filter goes in and out of the filters list directly: ``warnings.catch_warnings`` would
    mark the filters changed, which empties every module's ``__warningregistry__``, so that a
    warning the ``default`` filter shows once per line would show again after each probe."""
    filters = warnings.filters
    with np.errstate(all="ignore"):
        filters.insert(0, _SILENCE)
        try:
            return function(*args, **kwargs)
        finally:
            try:
                filters.remove(_SILENCE)
            except ValueError:
                pass


def format_shape(shape: tuple[int, ...]) -> str:
    """A shape as NumPy prints it in error messages: ``(300,400)``, ``(3,)``, ``()``."""
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ",".join(str(n) for n in shape) + ")"


def broadcast_error(shapes: list[tuple[int, ...]]) -> ValueError:
    text = " ".join(format_shape(shape) for shape in shapes)
    return ValueError(f"operands could not be broadcast together with shapes {text} ")


def broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The broadcast of ``shapes``; NumPy's ufunc error when they do not broadcast."""
    if not any(shapes):  # every one 0-d (a matrix product's batch of two matrices): NumPy's call costs 3 µs
        return ()
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        pass
    raise broadcast_error(shapes)  # outside the handler: an exception the program is handling stays its context
