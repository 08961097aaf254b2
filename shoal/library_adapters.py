"""Lazy arrays where a library asks ``isinstance(x, numpy.ndarray)`` before it looks at them.

A lazy array is not a ``numpy.ndarray``, so a library that decides what an argument is by that
test takes it for something else. pandas did so silently: a boolean mask of a program's array
(``s.iloc[x > 25]``, ``df[mask]``, ``df.loc[mask, "y"] = 0``) was read as integer positions or
as column labels (the wrong rows, or a ``KeyError``), and a grouping key
(``df.groupby(np.arange(n) % 2)``) as a function to map the index with; pandas 3 also warns
that it will stop taking such array-likes. Where pandas is loaded in a program Shoal runs, its
indexing (``[]``, ``.loc``, ``.iloc`` of a Series or DataFrame) and its groupings take NumPy's
array of a lazy key (:func:`adapt_loaded`, called after each import). ``numexpr.evaluate``
refused a lazy ``out=``; it now writes into the array's own memory (held from then on).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

_adapted: set[str] = set()


def adapt_loaded() -> None:
    """Adapt each library that has been loaded to its end since the last call (once each)."""
    if "pandas" not in _adapted and _loaded("pandas"):
        _adapted.add("pandas")
        _adapt_pandas()
    if "numexpr" not in _adapted and _loaded("numexpr"):
        _adapted.add("numexpr")
        _adapt_numexpr()


def _loaded(name: str) -> bool:
    """Whether package ``name`` has been imported to its end (not still running its modules)."""
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _numpy_of(value: Any) -> Any:
    """NumPy's array of a lazy array; a tuple or list of keys with each such key converted;
    anything else as it is."""
    from shoal.numpy._lazy import is_lazy

    if is_lazy(value):
        return np.asarray(value)
    if type(value) in (tuple, list) and any(is_lazy(item) for item in value):
        return type(value)(np.asarray(item) if is_lazy(item) else item for item in value)
    return value


def _taking_numpy_keys(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method(self, key, ...)`` given NumPy's array of a lazy ``key``."""

    @functools.wraps(method)
    def adapted(self: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, _numpy_of(key), *args, **kwargs)

    return adapted


def _adapt_pandas() -> None:
    indexing = sys.modules["pandas.core.indexing"]
    frame = sys.modules["pandas.core.frame"].DataFrame
    series = sys.modules["pandas.core.series"].Series
    grouping = sys.modules["pandas.core.groupby.grouper"].Grouping
    for owner in (indexing._LocationIndexer, frame, series):
        owner.__getitem__ = _taking_numpy_keys(owner.__getitem__)
        owner.__setitem__ = _taking_numpy_keys(owner.__setitem__)
    grouping.__init__ = _grouping_init(grouping.__init__)


def _grouping_init(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def adapted(self: Any, index: Any, grouper: Any = None, *args: Any, **kwargs: Any) -> None:
        init(self, index, _numpy_of(grouper), *args, **kwargs)

    return adapted


def _adapt_numexpr() -> None:
    module = sys.modules["numexpr"]
    evaluate = module.evaluate

    @functools.wraps(evaluate)
    def adapted(*args: Any, out: Any = None, _frame_depth: int = 3, **kwargs: Any) -> Any:
        from shoal.numpy._held_indexing import memory_now
        from shoal.numpy._lazy import is_lazy

        if is_lazy(out):
            out = memory_now(out, "numexpr.evaluate into a lazy out")
        return evaluate(*args, out=out, _frame_depth=_frame_depth + 1, **kwargs)  # the caller's variables, past this frame

    module.evaluate = adapted
