"""NumPy functions that return views of their argument: views of the lazy array too.

``np.atleast_2d`` ran NumPy's own code, whose ``asanyarray`` copied the lazy array, and
``np.rot90``, ``np.rollaxis``, ``np.unstack``, ``np.diag`` and ``sliding_window_view`` ran in
NumPy on a copy (the fallback): writes through the result never
reached the array, nor its writes the result, and ``np.atleast_2d(m) is m`` was false.

The ``atleast`` functions follow NumPy's code with Shoal's ``asanyarray``. The others are
NumPy's own functions applied to a probe with the array's geometry (no memory behind it; these
functions only make views), whose results give the views' geometry (read-only where NumPy's
are), as :func:`shoal.numpy._shape.view_via_probe` does for one view. ``np.split`` and its
kin, NumPy code of swapped axes and slices, run as NumPy wrote them (``_dispatch.COMPOSABLE``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from shoal.numpy import _create, _dispatch
from shoal.numpy._held_indexing import memory_now
from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._shape import probe_of, view_of_probe


def _atleast(reshape: Callable[[Any], Any]) -> Callable[..., Any]:
    def atleast(*arys: Any) -> Any:
        results = tuple(reshape(_create.asanyarray(ary)) for ary in arys)
        return results[0] if len(results) == 1 else results

    return atleast


def _one_d(result: Any) -> Any:
    return result.reshape(1) if result.ndim == 0 else result


def _two_d(result: Any) -> Any:
    if result.ndim == 0:
        return result.reshape(1, 1)
    return result[np.newaxis, :] if result.ndim == 1 else result


def _three_d(result: Any) -> Any:
    if result.ndim == 0:
        return result.reshape(1, 1, 1)
    if result.ndim == 1:
        return result[np.newaxis, :, np.newaxis]
    return result[:, :, np.newaxis] if result.ndim == 2 else result


def _probed(
    function: Callable[..., Any], views_only: Callable[[ndarray], bool] = lambda array: True, copying: Callable[..., Any] | None = None
) -> Callable[..., Any]:
    """``function`` (NumPy's, making views of its first argument) for a lazy first argument:
    its results' geometry, found on a probe, as views of the lazy array. Where ``views_only``
    says the call would copy, ``copying`` makes the result if given, else NumPy runs it on the
    contents (the fallback)."""

    def implementation(array: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_lazy(array) or not views_only(array):
            if copying is not None and is_lazy(array):
                return copying(array, *args, **kwargs)
            return _dispatch.fallback_call(function.__name__, function, (array, *args), kwargs)
        probe = probe_of(array)
        result = function(probe, *args, **kwargs)
        if isinstance(result, tuple | list):
            return type(result)(view_of_probe(array, probe, item) for item in result)
        return view_of_probe(array, probe, result)

    return implementation


def _diagonal_matrix(v: ndarray, k: int = 0) -> Any:
    """``np.diag`` of a lazy array that is not a matrix, in NumPy's steps: a vector written along
    the ``k``-th diagonal of a new zero matrix (NumPy's error for other dimensions)."""
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + abs(k)
    result = _create.zeros((n, n), v.dtype)
    start = k if k >= 0 else (-k) * n
    result[: n - k].flat[start :: n + 1] = v
    return result


def asmatrix(data: Any, dtype: Any = None) -> Any:
    """``np.asmatrix``: of a lazy array, a matrix over its memory, as NumPy's is a view of a NumPy
    array. NumPy's own path for an object that is not a ``numpy.ndarray`` makes the matrix over a
    buffer, which a strided view (``a[:3, :3]``) cannot give: ``ndarray is not contiguous``."""
    if is_lazy(data):
        data = memory_now(data, "np.asmatrix of a lazy array")
    return np.asmatrix(data, dtype)


def _register() -> None:
    table = _dispatch.IMPLEMENTATIONS
    table[np.atleast_1d] = _atleast(_one_d)
    table[np.atleast_2d] = _atleast(_two_d)
    table[np.atleast_3d] = _atleast(_three_d)
    table[np.rot90] = _probed(np.rot90)
    table[np.rollaxis] = _probed(np.rollaxis)
    table[np.unstack] = _probed(np.unstack, lambda array: array.ndim >= 2)  # a vector unstacks into scalars
    table[np.diag] = _probed(np.diag, lambda array: array.ndim == 2, _diagonal_matrix)  # a vector's is a new matrix
    table[sliding_window_view] = _probed(sliding_window_view)


_register()
