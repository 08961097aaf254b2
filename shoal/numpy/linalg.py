"""``numpy.linalg`` for Shoal: products are lazy; the rest run in NumPy through the fallback."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.linalg as _linalg

from shoal.numpy import _dispatch
from shoal.numpy._lazy import is_lazy
from shoal.numpy._linalg import matmul

LinAlgError = _linalg.LinAlgError


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.linalg.norm``."""
    if not is_lazy(x):
        return _linalg.norm(x, ord, axis, keepdims)
    if ord is None and (axis is None or isinstance(axis, int)):
        magnitude = (x.conj() * x).real if x.dtype.kind == "c" else x * x
        if x.dtype.kind not in "fc":
            magnitude = magnitude.astype(float)
        return np.sqrt(magnitude.sum(axis=axis, keepdims=keepdims))
    return _dispatch.fallback_call("linalg.norm", _linalg.norm, (x, ord, axis, keepdims), {})


def __getattr__(name: str) -> Any:
    attribute = getattr(_linalg, name)
    if not callable(attribute) or isinstance(attribute, type):
        return attribute

    def call(*args: Any, **kwargs: Any) -> Any:
        if any(is_lazy(a) for a in (*args, *kwargs.values())):
            return _dispatch.fallback_call(f"linalg.{name}", attribute, args, kwargs)
        return attribute(*args, **kwargs)

    call.__name__ = name
    return call


__all__ = ["LinAlgError", "matmul", "norm"]
