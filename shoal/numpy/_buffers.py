"""``np.frombuffer`` of a lazy array: NumPy's array over the array's memory, as over a NumPy array's.

A lazy array has no buffer protocol (Python 3.11 offers it to C types alone), so NumPy's own
``frombuffer`` refused it. Here the array's base is held (:mod:`shoal.held`) and NumPy reads the
held memory, so the result shares memory with the array and writes through either are seen by
both; NumPy's errors (a non-contiguous array, a size that is no multiple of the item size) are
its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.numpy import _lazy  # first: it loads the frontend's modules in their order
from shoal.numpy._dispatch import warn_fallback
from shoal.numpy._held_indexing import held_memory


def frombuffer(buffer: Any, dtype: Any = None, count: int = -1, offset: int = 0, *, like: Any = None) -> Any:
    """NumPy's ``frombuffer``; a lazy ``buffer`` is read in its held memory."""
    if _lazy.is_lazy(buffer):
        buffer._base.runtime.hold_for_tasks(buffer._base.id)
        memory = held_memory(buffer)
        if memory is None:
            warn_fallback("frombuffer of a lazy array")
            memory = buffer._value()
        buffer = memory
    if like is None:
        return np.frombuffer(buffer, dtype, count, offset)
    return np.frombuffer(buffer, dtype, count, offset, like=like)
