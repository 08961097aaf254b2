"""Lazy arrays where a library asks ``isinstance(x, numpy.ndarray)`` before it looks at them.

A lazy array is not a ``numpy.ndarray``, so a library that decides what an argument is by that
test takes it for something else. pandas did so silently: a boolean mask of a program's array
(``s.iloc[x > 25]``, ``df[mask]``, ``df.loc[mask, "y"] = 0``) was read as integer positions or
as column labels (the wrong rows, or a ``KeyError``), and a grouping key
(``df.groupby(np.arange(n) % 2)``) as a function to map the index with; pandas 3 also warns
that it will stop taking such array-likes. ``numexpr.evaluate`` refused a lazy ``out=``, and
``scipy.ndimage`` took a lazy ``output=`` for a dtype (``label``) or wrote into a copy of it
(the filters), so the program's array never changed; ``numpy.polynomial``'s evaluation functions
broadcast over their points only if those are a ``numpy.ndarray`` (a lazy ``x`` with 2-D
coefficients gave a result of the wrong shape). A SciPy sparse matrix (``scipy.sparse.eye(3)``)
multiplied by a result that stands for a scalar (``x.mean()``) raised ``ValueError: could not
interpret dimensions``: its ``*`` asks for a NumPy scalar or a ``numpy.ndarray`` of no dimension.
Python's ``statistics`` raised ``TypeError: don't know how to coerce`` on a list of such results
(``statistics.mean([a.mean(), b.mean()])``): it converts its answer to the data's type. pandas
took them for Python objects: ``pd.DataFrame({"mean": [a.mean(), b.mean()]})`` and
``df["m"] = x.mean()`` made ``object`` columns.

Where such a library is loaded in a program Shoal runs (:func:`adapt_loaded`, called after each
import), its entry points take NumPy's array of a lazy key, and the array's own memory for an
output (the base held from then on, :mod:`shoal.held`), as a NumPy array would be written.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

_adapted: set[str] = set()
_OBJECT = np.dtype(object)


def adapt_loaded() -> None:
    """Adapt each library that has been loaded to its end since the last call (once each)."""
    for name, adapt in _ADAPTERS.items():
        if name not in _adapted and _loaded(name):
            _adapted.add(name)
            adapt(sys.modules[name])


def _loaded(name: str) -> bool:
    """Whether package ``name`` has been imported to its end (not still running its modules)."""
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _is_lazy(value: Any) -> bool:
    from shoal.numpy._lazy import is_lazy

    return is_lazy(value)


def _numpy_of(value: Any) -> Any:
    """NumPy's array of a lazy array (its scalar for a result that stands for one); a tuple or
    list of keys with each such key converted, a slice with such bounds; anything else as it is."""
    if _is_lazy(value):
        return _numpy_scalar(value) if value.ndim == 0 else np.asarray(value)
    if type(value) in (tuple, list) and _any_lazy(value):
        return type(value)(_numpy_of(item) for item in value)
    if type(value) is slice and any(_is_lazy(bound) for bound in (value.start, value.stop, value.step)):
        return slice(_numpy_of(value.start), _numpy_of(value.stop), _numpy_of(value.step))
    return value


def _memory_of(value: Any, user: str) -> Any:
    """The array's own memory if ``value`` is lazy (a library writes into it), else ``value``."""
    if not _is_lazy(value):
        return value
    from shoal.numpy._held_indexing import memory_now

    return memory_now(value, user)


def _taking_numpy_keys(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method(self, key, ...)`` given NumPy's array of a lazy ``key``, and NumPy's scalars of
    the lazy 0-d values among the arguments after it (``df["a"] = x.mean()``)."""

    @functools.wraps(method)
    def adapted(self: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, _numpy_of(key), *(_scalar_data(value, 1) for value in args), **kwargs)

    return adapted


def _taking_numpy_data(init: Callable[..., Any]) -> Callable[..., Any]:
    """A constructor ``init(self, data, ...)`` run again with NumPy's scalars of the lazy 0-d
    values in ``data`` where it made an ``object`` column of them (``pd.Series([a.mean(),
    b.mean()])``, ``pd.DataFrame({"mean": [a.mean()]})``: pandas took them for objects). Only a
    result with such a column is looked into: scanning every list first cost 40 ns an item, 40%
    of building a frame from lists of Python numbers."""

    @functools.wraps(init)
    def adapted(self: Any, data: Any = None, *args: Any, **kwargs: Any) -> None:
        init(self, data, *args, **kwargs)
        if _has_object_column(self):
            converted = _scalar_data(data)
            if converted is not data:
                init(self, converted, *args, **kwargs)

    return adapted


def _has_object_column(made: Any) -> bool:
    """True if the pandas Series or DataFrame ``made`` holds a column of dtype ``object``."""
    blocks = getattr(getattr(made, "_mgr", None), "blocks", None)  # its columns grouped by dtype
    dtypes = made.dtypes if blocks is None else [block.dtype for block in blocks]
    return any(dtype == _OBJECT for dtype in (dtypes if hasattr(dtypes, "__iter__") else [dtypes]))


def _scalar_data(data: Any, depth: int = 2) -> Any:
    """A pandas constructor's ``data`` with NumPy's scalar of each lazy 0-d value in it: the
    values of a dict, the items of a list or tuple, and so on once more (a frame's rows as lists
    or dicts, its columns as a dict of lists)."""
    kind = type(data)
    if depth and kind is dict:
        converted = {key: _scalar_data(value, depth - 1) for key, value in data.items()}
        return data if all(converted[key] is value for key, value in data.items()) else converted
    if kind not in (list, tuple):
        return _numpy_scalar(data)
    kinds = set(map(type, data))
    if not depth or kinds.isdisjoint((list, tuple, dict)):
        return _scalar_items(data)
    if kinds <= {list, tuple}:  # rows of values: all of them read in C first
        if not _any_lazy(itertools.chain.from_iterable(data)):
            return data
    elif kinds == {dict} and not _any_lazy(itertools.chain.from_iterable(map(dict.values, data))):
        return data
    return kind(_scalar_data(item, depth - 1) for item in data)


def _adapt_pandas(pandas: Any) -> None:
    indexing = sys.modules["pandas.core.indexing"]
    frame = sys.modules["pandas.core.frame"].DataFrame
    series = sys.modules["pandas.core.series"].Series
    grouping = sys.modules["pandas.core.groupby.grouper"].Grouping
    for owner in (indexing._LocationIndexer, frame, series):
        owner.__getitem__ = _taking_numpy_keys(owner.__getitem__)
        owner.__setitem__ = _taking_numpy_keys(owner.__setitem__)
    for index in (pandas.Index, pandas.RangeIndex, pandas.MultiIndex, sys.modules["pandas.core.indexes.datetimelike"].DatetimeTimedeltaMixin):
        if "__getitem__" in vars(index):  # ``pd.Index(...)[mask.sum() % 3]``: an AssertionError
            index.__getitem__ = _taking_numpy_keys(index.__getitem__)
    indexing._ScalarAccessIndexer.__setitem__ = _taking_numpy_keys(indexing._ScalarAccessIndexer.__setitem__)
    for owner in (frame, series):
        owner.__init__ = _taking_numpy_data(owner.__init__)
    init = grouping.__init__

    @functools.wraps(init)
    def grouping_init(self: Any, index: Any, grouper: Any = None, *args: Any, **kwargs: Any) -> None:
        init(self, index, _numpy_of(grouper), *args, **kwargs)

    grouping.__init__ = grouping_init


def _adapt_numexpr(numexpr: Any) -> None:
    evaluate = numexpr.evaluate

    @functools.wraps(evaluate)
    def adapted(*args: Any, out: Any = None, _frame_depth: int = 3, **kwargs: Any) -> Any:
        out = _memory_of(out, "numexpr.evaluate into a lazy out")
        return evaluate(*args, out=out, _frame_depth=_frame_depth + 1, **kwargs)  # the caller's variables, past this frame

    numexpr.evaluate = adapted


def _adapt_ndimage(ndimage: Any) -> None:
    for name in getattr(ndimage, "__all__", ()):
        function = getattr(ndimage, name, None)
        try:
            parameters = list(inspect.signature(function).parameters) if callable(function) else []
        except (TypeError, ValueError):
            continue
        if "output" in parameters:
            setattr(ndimage, name, _writing_output(function, parameters.index("output")))


def _writing_output(function: Callable[..., Any], position: int) -> Callable[..., Any]:
    """``function`` given the memory of a lazy ``output`` (by keyword or at ``position``)."""
    user = f"scipy.ndimage.{function.__name__} into a lazy output"

    @functools.wraps(function)
    def adapted(*args: Any, **kwargs: Any) -> Any:
        if len(args) > position:
            args = (*args[:position], _memory_of(args[position], user), *args[position + 1 :])
        elif "output" in kwargs:
            kwargs["output"] = _memory_of(kwargs["output"], user)
        return function(*args, **kwargs)

    return adapted


def _adapt_polynomial(polynomial: Any) -> None:
    """The series' evaluation functions (``polyval``, ``chebval2d``, ``polyvalfromroots``...)
    broadcast over ``x`` only if it is a ``numpy.ndarray``: a lazy ``x`` (and ``y``, ``z``) is
    given as NumPy's array."""
    for name in ("polynomial", "chebyshev", "legendre", "laguerre", "hermite", "hermite_e"):
        module = sys.modules.get(f"numpy.polynomial.{name}")
        for attribute in dir(module) if module is not None else ():
            function = getattr(module, attribute)
            if callable(function) and not attribute.startswith("_") and ("val" in attribute or "grid" in attribute):
                setattr(module, attribute, _taking_numpy_points(function))


def _taking_numpy_points(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def adapted(*args: Any, **kwargs: Any) -> Any:
        return function(*(_numpy_of(value) for value in args), **{key: _numpy_of(value) for key, value in kwargs.items()})

    return adapted


def _adapt_sparse(_sparse: Any) -> None:
    """The sparse matrices' ``*`` (a matrix product, or a product with a scalar) given NumPy's
    scalar of a lazy 0-d operand."""
    matrix = sys.modules["scipy.sparse._matrix"].spmatrix
    for name in ("__mul__", "__rmul__"):
        setattr(matrix, name, _taking_numpy_scalars(getattr(matrix, name)))


def _taking_numpy_scalars(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method(self, other)`` given NumPy's scalar of a lazy 0-d ``other``."""

    @functools.wraps(method)
    def adapted(self: Any, other: Any) -> Any:
        return method(self, _numpy_scalar(other))

    return adapted


def _adapt_statistics(statistics: Any) -> None:
    """The functions of Python's ``statistics`` given NumPy's scalars for lazy 0-d values: as
    arguments, as items of a list or tuple, and as the items an iterator yields."""
    for name in statistics.__all__:
        function = getattr(statistics, name)
        if inspect.isfunction(function):
            setattr(statistics, name, _taking_numpy_values(function))


def _numpy_scalar(value: Any) -> Any:
    """NumPy's scalar of a lazy 0-d array; anything else as it is."""
    return np.asarray(value)[()] if _is_lazy(value) and value.ndim == 0 else value


def _scalar_values(value: Any) -> Any:
    """``value`` with NumPy's scalar for each lazy 0-d array in it (a list or tuple) or yielded by
    it (an iterator, converted as it is consumed)."""
    if hasattr(value, "__next__") and iter(value) is value:
        return (_numpy_scalar(item) for item in value)
    return _scalar_data(value, 0)


def _scalar_items(values: list | tuple) -> Any:
    """``values`` itself if no item is lazy (its item types read in C, about 20 ns an item), else
    a copy with NumPy's scalar of each lazy 0-d item."""
    if not _any_lazy(values):
        return values
    return type(values)(_numpy_scalar(item) for item in values)


def _any_lazy(values: Iterable[Any]) -> bool:
    from shoal.numpy._lazy import ndarray

    return ndarray in set(map(type, values))


def _taking_numpy_values(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def adapted(*args: Any, **kwargs: Any) -> Any:
        return function(*(_scalar_values(value) for value in args), **{key: _scalar_values(value) for key, value in kwargs.items()})

    return adapted


_ADAPTERS: dict[str, Callable[[Any], None]] = {
    "pandas": _adapt_pandas,
    "numexpr": _adapt_numexpr,
    "scipy.ndimage": _adapt_ndimage,
    "scipy.sparse": _adapt_sparse,
    "numpy.polynomial": _adapt_polynomial,
    "statistics": _adapt_statistics,
}
# The top-level packages of the adapted libraries: an import of anything else cannot load one of
# them, so the import hook asks :func:`adapt_loaded` only after imports of these (it runs on every
# import statement, functions' own included: 310 ns each when asked every time).
ROOTS = frozenset(name.partition(".")[0] for name in _ADAPTERS)
