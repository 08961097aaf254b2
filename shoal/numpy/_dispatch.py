"""NumPy's function protocol for lazy arrays, and the fallback for what Shoal does not implement.

A NumPy function called with a lazy array comes here. Shoal's own implementation runs if there is
one; else NumPy runs on materialized inputs, with one :class:`ShoalFallbackWarning` per function,
and lazy ``out=`` arguments (and arrays that NumPy mutates in place) get the results written back.
"""

from __future__ import annotations

import collections
import importlib
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from shoal import fp_warnings
from shoal import runtime as _runtime
from shoal.errors import ShoalFallbackWarning
from shoal.numpy._callers import called_from_library
from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._numpy_data import UnsupportedDtype, materialize, wrap_numpy
from shoal.numpy._settled import NOT_SETTLED
from shoal.numpy._settled_functions import PURE_FUNCTIONS, settled_function

FALLBACKS: collections.Counter[str] = collections.Counter()
IMPLEMENTATIONS: dict[Callable[..., Any], Callable[..., Any]] = {}

# NumPy functions written in Python on top of dispatchable operations that Shoal implements;
# running their Python implementation keeps the work lazy.
COMPOSABLE: set[str] = {
    "vstack", "hstack", "dstack", "split", "array_split", "hsplit", "vsplit", "dsplit",
    "allclose",
    "real", "imag", "ptp", "count_nonzero", "trace", "linalg.norm", "trim_zeros",
    "iscomplexobj", "isrealobj", "common_type", "isreal", "isposinf", "isneginf",
}  # fmt: skip

# Implementations of a NumPy submodule that loads on first use, imported with it ("fft.fft").
_LATE_MODULES = {"fft": "shoal.numpy._spectral", "linalg": "shoal.numpy._linalg_functions"}

# NumPy functions that change an argument in place (its position and keyword): the fallback
# writes the changed copy back, or the change would be lost.
_MUTATING_FUNCTIONS: dict[str, tuple[int, str]] = {
    "fill_diagonal": (0, "a"),
    "put": (0, "a"),
    "place": (0, "arr"),
    "putmask": (0, "a"),
    "copyto": (0, "dst"),
    "put_along_axis": (0, "arr"),
}

# ndarray methods that change the array in place: the fallback writes the result back.
_MUTATING_METHODS = {"sort", "partition", "fill", "put", "itemset", "byteswap", "resize", "setfield"}


def fallbacks_used() -> dict[str, int]:
    """Which NumPy functions ran through the fallback, and how often."""
    return dict(FALLBACKS)


# Functions whose work is to hand an array's values out (to a file, to bytes): computing the
# array and calling NumPy is their implementation, not a fallback, so they warn nothing.
HANDS_VALUES_OUT = frozenset(
    {"save", "savez", "savez_compressed", "savetxt", "ndarray.tobytes", "ndarray.tofile", "ndarray.dump", "ndarray.dumps"}
)


def warn_fallback(name: str) -> None:
    """One :class:`ShoalFallbackWarning` per ``name`` (counted in ``FALLBACKS`` every time)."""
    if name in HANDS_VALUES_OUT:
        return
    FALLBACKS[name] += 1
    if FALLBACKS[name] == 1:
        try:
            warnings.warn(
                f"shoal.numpy does not implement {name} yet; it ran in NumPy on materialized data",
                ShoalFallbackWarning,
                stacklevel=caller_stacklevel(),
            )
        except ShoalFallbackWarning:
            # A program that turns warnings into errors (``simplefilter("error")``) runs under
            # NumPy without this one: it stays a note, unless the filter names it.
            if any(action == "error" and category is ShoalFallbackWarning for action, _, category, _, _ in warnings.filters):
                raise


_INTERNAL_PREFIXES = (os.path.dirname(os.path.dirname(__file__)), os.path.dirname(np.__file__))


def discards_imaginary(source: np.dtype, target: np.dtype) -> np.dtype:
    """Warn NumPy's ``ComplexWarning`` at the user's line where storing ``source`` values into
    ``target`` drops their imaginary part; the dtype a quiet probe of that cast should use."""
    source, target = np.dtype(source), np.dtype(target)
    if source.kind != "c" or target.kind in "cOVbSUT":  # to bool (nonzero in either part) or text: no warning
        return source
    warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning, stacklevel=caller_stacklevel())
    return np.zeros(0, source).real.dtype


def caller_stacklevel() -> int:
    """The ``stacklevel`` that points at the first frame outside Shoal and NumPy."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL_PREFIXES):
        frame = frame.f_back
        level += 1
    return level


def fallback_call(name: str, function: Callable[..., Any], args: Any, kwargs: dict[str, Any], warn: bool = True, wrap: bool = True) -> Any:
    """Run ``function`` in NumPy on materialized inputs; write back lazy outputs. Without ``warn``
    no :class:`ShoalFallbackWarning` (NumPy computes what Shoal leaves to it by design); without
    ``wrap`` NumPy's result as it is, never made lazy."""
    if warn:
        warn_fallback(name)
    lazy_outs = kwargs.get("out")
    values, keywords = materialize(tuple(args)), materialize(dict(kwargs))
    result = fp_warnings.at_user_line(function, *values, **keywords)  # NumPy's warnings at the user's line
    mutated = _MUTATING_FUNCTIONS.get(name)
    if mutated is not None:
        position, keyword = mutated
        target, value = (args[position], values[position]) if len(args) > position else (kwargs.get(keyword), keywords.get(keyword))
        if is_lazy(target):
            target[...] = value
    if lazy_outs is not None:
        outs = lazy_outs if isinstance(lazy_outs, tuple) else (lazy_outs,)
        results = result if isinstance(result, tuple) else (result,)
        for target, value in zip(outs, results):
            if is_lazy(target):
                target[...] = value
        return outs[0] if isinstance(lazy_outs, tuple) and len(outs) == 1 else lazy_outs  # a ufunc's one output, as NumPy returns it
    return _wrap_all(result) if wrap else result


def _wrap_all(result: Any) -> Any:
    if isinstance(result, tuple):
        items = [_wrap_all(item) for item in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    if isinstance(result, list):
        return [_wrap_all(item) for item in result]
    return wrap_numpy(result)


def array_function(func: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """``__array_function__`` for lazy arrays. An installed library that calls NumPy on small
    lazy arrays (:func:`_only_small_lazy`) gets NumPy's result, as from NumPy: its compiled code
    may take nothing else."""
    if called_from_library(2) and _only_small_lazy(args, kwargs):  # caller -> __array_function__ -> here
        return fallback_call(_qualified_name(func), func, args, kwargs, warn=False, wrap=False)
    return _array_function(func, args, kwargs)


def _only_small_lazy(args: Any, kwargs: dict[str, Any]) -> bool:
    """True if the lazy arrays among the arguments (and in lists and tuples among them) are all
    small: below the eager threshold, or the settled one where every array is lazy."""
    runtime = _runtime.current()
    threshold = max(runtime.eager_threshold, runtime.settled_threshold)
    for value in (*args, *kwargs.values()):
        for item in value if type(value) in (list, tuple) else (value,):
            if type(item) is ndarray and item.size >= threshold:
                return False
    return True


def _array_function(func: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    if func in PURE_FUNCTIONS:
        eager = settled_function(func, args, kwargs)
        if eager is not NOT_SETTLED:
            return eager
    implementation = IMPLEMENTATIONS.get(func)
    if implementation is not None:
        try:
            return implementation(*args, **kwargs)
        except UnsupportedDtype:  # a result bytecode cannot carry (strings, objects): NumPy's
            return fallback_call(_qualified_name(func), func, args, kwargs, warn=False)
    name = _qualified_name(func)
    late = _LATE_MODULES.get(name.partition(".")[0] if "." in name else "")
    if late is not None and late not in sys.modules:
        importlib.import_module(late)  # registers its implementations
        return _array_function(func, args, kwargs)
    if name in COMPOSABLE:
        return func._implementation(*args, **kwargs)
    return fallback_call(name, func, args, kwargs)


def _qualified_name(func: Callable[..., Any]) -> str:
    module = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", repr(func))
    if "linalg" in module:
        return f"linalg.{name}"
    if "fft" in module:
        return f"fft.{name}"
    return name


def method_fallback(array: ndarray, name: str) -> Any:
    """An ndarray method or attribute Shoal has no lazy version of."""
    if name.startswith("__") or not hasattr(np.ndarray, name):
        raise AttributeError(f"'numpy.ndarray' object has no attribute '{name}'")
    attribute = getattr(np.ndarray, name)
    if not callable(attribute):
        return getattr(array._value(), name)

    def method(*args: Any, **kwargs: Any) -> Any:
        warn_fallback(f"ndarray.{name}")
        value = array._value()
        if array._scalar:  # the NumPy scalar's method, which changes no memory (``s.byteswap()``)
            return _wrap_all(getattr(value[()], name)(*materialize(args), **materialize(kwargs)))
        result = getattr(value, name)(*materialize(args), **materialize(kwargs))
        if name in _MUTATING_METHODS:
            array[...] = value
        return _wrap_all(result)

    return method
