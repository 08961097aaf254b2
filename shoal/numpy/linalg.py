"""``numpy.linalg`` for Shoal: products and the LAPACK functions are lazy
(:mod:`shoal.numpy._linalg_functions`); the rest run in NumPy through the fallback."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.linalg as _linalg

from shoal.numpy import _dispatch
from shoal.numpy import _linalg as _products
from shoal.numpy._lazy import is_lazy, ndarray

LinAlgError = _linalg.LinAlgError


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.linalg.norm``."""
    if not is_lazy(x):
        return _linalg.norm(x, ord, axis, keepdims)
    if ord is None and (axis is None or isinstance(axis, int)):
        if x.dtype.kind not in "fc":  # NumPy's: to float before squaring (integers would overflow)
            x = x.astype(float)
        magnitude = (x.conj() * x).real if x.dtype.kind == "c" else x * x
        return np.sqrt(magnitude.sum(axis=axis, keepdims=keepdims))
    return _dispatch.fallback_call("linalg.norm", _linalg.norm, (x, ord, axis, keepdims), {})


def matmul(x1: Any, x2: Any, /) -> Any:
    """``np.linalg.matmul``."""
    return _products.matmul(x1, x2)


@functools.cache
def _forwarding(name: str) -> Any:
    attribute = getattr(_linalg, name)

    @functools.wraps(attribute)
    def call(*args: Any, **kwargs: Any) -> Any:
        for value in args:  # a loop, not any() over a generator: a 3x3 solve 5.3-5.6 -> 4.9 µs (NumPy 4.0)
            if type(value) is ndarray:
                return _dispatch.array_function(attribute, args, kwargs)
        if kwargs and any(type(value) is ndarray for value in kwargs.values()):
            return _dispatch.array_function(attribute, args, kwargs)
        return attribute(*args, **kwargs)

    call.__module__ = __name__  # where pickle finds this object (a pool's ``map(np.linalg.inv, ...)``)
    return call


def __getattr__(name: str) -> Any:
    attribute = getattr(_linalg, name)
    if not callable(attribute) or isinstance(attribute, type):
        return attribute
    return _forwarding(name)


__all__ = ["LinAlgError", "matmul", "norm"]
