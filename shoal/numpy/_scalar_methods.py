"""The methods of a 0-d result that stands for a NumPy scalar (``a.sum()``, ``mask.any()``).

NumPy's scalar methods run the array method on a 0-d array and give a 0-d result back as a
scalar: ``s.astype(np.float32)``, ``s.copy()``, ``s.T`` and ``s.view(np.int64)`` are NumPy
scalars, and ``s.astype(object)`` the Python object. The lazy methods here do the same where
their array is such a result; they are unchanged for every other array. The methods that NumPy's
float, integer and bool scalars have and its arrays do not (``is_integer``, ``bit_count``,
``as_integer_ratio``, ``__floor__``, ...) are the scalar's own, called on its value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from shoal.numpy import _composed, _methods, _protocols, _values  # noqa: F401  (they attach the methods wrapped here)
from shoal.numpy._lazy import ndarray, scalar_result

#: The methods NumPy's scalars share with arrays whose result for a 0-d array may be 0-d, wrapped
#: here. Reductions give scalar results already; ``astype``, ``copy``, ``reshape``, ``transpose``
#: and ``T``, common in loops, check inline (a wrapper costs 0.3-0.4 µs a call on every array).
_WRAPPED = ("choose", "clip", "conj", "conjugate", "getfield", "round", "squeeze", "swapaxes", "take", "to_device", "view")

#: The methods that change an array in place. NumPy's scalars are immutable: theirs act on a copy
#: and are dropped (``s.fill(3)``, ``s.resize(2)``: None, ``s`` unchanged) or refuse (``s.sort()``,
#: ``s.byteswap(inplace=True)``); a result that stands for a scalar calls the scalar's own (a lazy
#: one turned into an array by ``s.resize(2)``). ``resize`` counts the references to its array,
#: so it checks for itself (``_resize.resize_in_place``) instead of under a wrapper.
_SCALARS_OWN = ("byteswap", "fill", "partition", "put", "setfield", "setflags", "sort")

#: The public attributes of NumPy's scalar types that its arrays lack, read from the scalar.
_SCALAR_ONLY = frozenset(
    name
    for kind in (np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.int8, np.uint64, np.int64, np.bool_)
    for name in dir(kind)
    if not name.startswith("_") and not hasattr(np.ndarray, name)
)


def _returning_scalars(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method``, giving a 0-d result as a scalar where its array stands for one."""

    @functools.wraps(method)
    def wrapped(self: ndarray, /, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        return scalar_result(result) if self._scalar else result

    return wrapped


def _scalars_own(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``method``, or the method ``name`` of the NumPy scalar its array stands for."""

    @functools.wraps(method)
    def wrapped(self: ndarray, /, *args: Any, **kwargs: Any) -> Any:
        if self._scalar:
            return getattr(self._value()[()], name)(*args, **kwargs)
        return method(self, *args, **kwargs)

    return wrapped


def _scalar_value(array: ndarray, name: str) -> Any:
    """The NumPy scalar ``array`` stands for, which has the attribute ``name``; NumPy's
    AttributeError for an array, or for a scalar type without it."""
    if not array._scalar:
        raise AttributeError(f"'numpy.ndarray' object has no attribute '{name}'")
    return array._value()[()]


def _scalar_attribute(name: str) -> property:
    """``name`` of the NumPy scalar a result stands for (``s.is_integer``, ``s.numerator``)."""
    return property(lambda self: getattr(_scalar_value(self, name), name), doc=f"The NumPy scalar's ``{name}``.")


def __floor__(self: ndarray, /) -> Any:
    """``math.floor(s)``: the scalar's own method where it has one (``float64``), else
    ``math.floor`` of the value as a float, as for NumPy's other scalars and its arrays."""
    if not self._scalar:  # NumPy's arrays have no __floor__: math converts them to a float
        return math.floor(float(self))
    value = self._value()[()]
    method = getattr(type(value), "__floor__", None)
    return method(value) if method is not None else math.floor(float(value))


def __ceil__(self: ndarray, /) -> Any:
    """``math.ceil(s)``, as :func:`__floor__`."""
    if not self._scalar:
        return math.ceil(float(self))
    value = self._value()[()]
    method = getattr(type(value), "__ceil__", None)
    return method(value) if method is not None else math.ceil(float(value))


def __trunc__(self: ndarray, /) -> Any:
    """``math.trunc(s)``: the scalar's own method (``float64``), else Python's TypeError."""
    value = self._value()[()] if self._scalar else None
    method = getattr(type(value), "__trunc__", None)
    if method is None or value is None:
        name = "ndarray" if value is None else type(value).__name__
        raise TypeError(f"type numpy.{name} doesn't define __trunc__ method")
    return method(value)


def _attach() -> None:
    """Wrap the methods of :data:`_WRAPPED`, and add the scalars' own."""
    for name in _WRAPPED:
        setattr(ndarray, name, _returning_scalars(vars(ndarray)[name]))
    for name in _SCALARS_OWN:
        setattr(ndarray, name, _scalars_own(vars(ndarray)[name], name))
    for name in sorted(_SCALAR_ONLY):
        setattr(ndarray, name, _scalar_attribute(name))
    for function in (__floor__, __ceil__, __trunc__):
        setattr(ndarray, function.__name__, function)


_attach()
