"""NumPy C code that works on an array's memory, given a lazy array's: ``frombuffer``, ``nditer``.

A lazy array has no buffer protocol (Python 3.11 offers it to C types alone), so NumPy's own
``frombuffer`` refused it, and ``nditer`` iterated a copy (its ``readwrite`` writes were lost).
Here the array's base is held (:mod:`shoal.held`) and NumPy works on the held memory, so the
result shares memory with the array and writes through either are seen by both; NumPy's errors
(a non-contiguous array, a size that is no multiple of the item size) are its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.numpy import _lazy  # first: it loads the frontend's modules in their order
from shoal.numpy._held_indexing import memory_now


def frombuffer(buffer: Any, dtype: Any = None, count: int = -1, offset: int = 0, *, like: Any = None) -> Any:
    """NumPy's ``frombuffer``; a lazy ``buffer`` is read in its held memory."""
    if _lazy.is_lazy(buffer):
        buffer = memory_now(buffer, "frombuffer of a lazy array")
    if like is None:
        return np.frombuffer(buffer, dtype, count, offset)
    return np.frombuffer(buffer, dtype, count, offset, like=like)


def nditer(
    op: Any,
    flags: Any = None,
    op_flags: Any = None,
    op_dtypes: Any = None,
    order: str = "K",
    casting: str = "safe",
    op_axes: Any = None,
    itershape: Any = None,
    buffersize: int = 0,
) -> np.nditer:
    """NumPy's ``nditer``; lazy operands are iterated (and written) in their held memory."""
    if _lazy.is_lazy(op):
        op = memory_now(op, "nditer of a lazy array")
    elif isinstance(op, list | tuple) and any(_lazy.is_lazy(value) for value in op):
        op = type(op)(memory_now(value, "nditer of a lazy array") if _lazy.is_lazy(value) else value for value in op)
    return np.nditer(op, flags, op_flags, op_dtypes, order, casting, op_axes, itershape, buffersize)

