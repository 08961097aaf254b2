"""Functions whose results depend on the array's values in a way the batch cannot defer:
``nonzero``, ``argwhere``, ``flatnonzero`` (the result's shape is the count of non-zero
elements) and ``searchsorted`` (a binary search over the sorted data).

Like a boolean mask in indexing, they run the recorded work that produces their arguments (and
only that: other lazy arrays stay lazy) and compute in NumPy at the call, so NumPy's results and
errors come from NumPy itself; large results become lazy arrays again. They are Shoal's own
implementations, not the fallback: no :class:`ShoalFallbackWarning`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.numpy import _dispatch
from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._numpy_data import materialize, wrap_numpy


def _read(value: Any) -> Any:
    """``value``'s contents as NumPy data (a lazy array runs its recorded work)."""
    return materialize(value) if is_lazy(value) else value


def nonzero(a: Any) -> tuple[Any, ...]:
    """``np.nonzero``: the indices of the non-zero elements, one array per axis."""
    return tuple(wrap_numpy(indices) for indices in np.nonzero(_read(a)))


def _nonzero_method(self: ndarray, /) -> tuple[Any, ...]:
    return nonzero(self)


def argwhere(a: Any) -> Any:
    """``np.argwhere``: the indices of the non-zero elements, one row per element."""
    return wrap_numpy(np.argwhere(_read(a)))


def flatnonzero(a: Any) -> Any:
    """``np.flatnonzero``: the flat indices of the non-zero elements."""
    return wrap_numpy(np.flatnonzero(_read(a)))


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """``np.searchsorted``: where ``v``'s elements would go into the sorted ``a``."""
    return wrap_numpy(np.searchsorted(_read(a), _read(v), side=side, sorter=_read(sorter)))


def _searchsorted_method(self: ndarray, v: Any, /, side: str = "left", sorter: Any = None) -> Any:
    return searchsorted(self, v, side, sorter)


def _register() -> None:
    table = _dispatch.IMPLEMENTATIONS
    for function in (nonzero, argwhere, flatnonzero, searchsorted):
        table[getattr(np, function.__name__)] = function
    ndarray.nonzero = _nonzero_method
    ndarray.searchsorted = _searchsorted_method


_register()
