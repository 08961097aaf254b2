"""``np.shares_memory`` and ``np.may_share_memory`` of lazy arrays.

Through the fallback they compared copies of the arrays' values, which never overlap: a view and
its base did not share memory. Two lazy arrays overlap where they are views of one base; NumPy
answers that on stand-ins with the views' offsets and strides in one untouched buffer of the
base's size (exactly, with ``max_work``, as for NumPy arrays). A NumPy view of a held base's
memory (``shoal.held``) stands for a view of that base. Other memory never overlaps a lazy
array's: Shoal's arrays hold their own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal import held, runtime
from shoal.bytecode import View
from shoal.numpy import _dispatch
from shoal.numpy._lazy import ndarray


def _where(value: Any) -> tuple[int, View] | None:
    """The base and view ``value`` shows, if it is a lazy array or a NumPy view of a held base."""
    if type(value) is ndarray:
        return value._view.base, value._view
    if type(value) is np.ndarray:
        return held.base_viewed(runtime.current(), value)
    return None


def _stand_ins(first: Any, second: Any) -> tuple[Any, Any] | None:
    """The two operands as NumPy sees their memory: themselves if neither is Shoal's, views of
    one dummy buffer if they view one base, or None if they cannot overlap."""
    one, other = _where(first), _where(second)
    if one is None and other is None:
        return first, second
    if one is None or other is None or one[0] != other[0]:
        return None
    views = (one[1], other[1])
    buffer = np.empty(max(view.byte_extent()[1] for view in views), np.uint8)  # never touched: NumPy compares addresses only
    return tuple(np.ndarray(view.shape, view.dtype, buffer, view.offset, view.strides) for view in views)


def shares_memory(a: Any, b: Any, /, max_work: int | None = None) -> bool:
    """``np.shares_memory``."""
    pair = _stand_ins(a, b)
    return False if pair is None else bool(np.shares_memory(*pair, max_work=max_work))


def may_share_memory(a: Any, b: Any, /, max_work: int | None = None) -> bool:
    """``np.may_share_memory``."""
    pair = _stand_ins(a, b)
    return False if pair is None else bool(np.may_share_memory(*pair, max_work=max_work))


_dispatch.IMPLEMENTATIONS[np.shares_memory] = shares_memory
_dispatch.IMPLEMENTATIONS[np.may_share_memory] = may_share_memory
