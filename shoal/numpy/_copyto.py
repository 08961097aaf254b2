"""``np.copyto`` into a lazy array, recorded; NumPy's own call into NumPy's memory.

NumPy's functions written in Python use ``copyto`` to write where a mask says (``np.select``,
``np.unwrap``, the NaN-ignoring reductions); through the fallback each call read every lazy
operand out of the engine, and a lazy destination was written back whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.bytecode.dtypes import is_supported
from shoal.fp_warnings import at_user_line
from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._numpy_data import PYTHON_NUMBERS, materialize
from shoal.numpy._probe import quietly

_SCALARS = (*PYTHON_NUMBERS, np.generic)


def copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    """``np.copyto(dst, src, casting, where)``: NumPy's checks made on probes of the operands in
    NumPy's order, then ``dst[...] = src`` recorded, through ``np.where`` of the mask where one
    is given."""
    if type(dst) is not ndarray or dst._scalar:  # NumPy's memory (or not an array: NumPy's TypeError)
        np.copyto(materialize(dst), materialize(src), casting=casting, where=materialize(where))
        return
    if not (is_lazy(src) or isinstance(src, _SCALARS)):
        src = np.asarray(src)
    mask_is_true = where is True
    if not (mask_is_true or is_lazy(where)):
        where = np.asarray(where)
    mask = True if mask_is_true else np.ones((1,) * where.ndim, where.dtype)
    if isinstance(src, PYTHON_NUMBERS) or (type(src) is not ndarray and src.ndim == 0 and not is_supported(src.dtype)):
        # NumPy checks the number's value, the mask's dtype and the casting, converts the number
        # (a complex into floats warns here, at the caller's line) and then broadcasts
        held = np.zeros((1,) * dst.ndim, dst.dtype)
        at_user_line(np.copyto, held, src, casting=casting, where=mask)
        src = held.reshape(-1)[0]
    else:
        if type(src) is not ndarray and not is_supported(src.dtype):  # strings, objects: NumPy converts them
            converted = np.empty(src.shape, dst.dtype)
            at_user_line(np.copyto, converted, src, casting=casting)
            src = converted
        quietly(np.copyto, np.zeros((1,) * dst.ndim, dst.dtype), _probe(src), casting=casting, where=mask)
    _check_shapes(dst, src, where)
    # A NumPy scalar is stored as the 0-d array NumPy's copyto makes of it, cast as ``casting``
    # allows: an item assignment of the scalar itself raises where its value is out of range.
    if isinstance(src, np.generic):
        src = np.asarray(src)
    elif is_lazy(src) and src._scalar:
        src = src._derive(src._view)
    if mask_is_true:
        dst[...] = src
        return
    from shoal.numpy import _functions

    dst[...] = _functions.where(where, src.astype(dst.dtype, casting="unsafe", copy=False), dst)


def _probe(value: Any) -> Any:
    """``value`` for NumPy's checks: a NumPy scalar as it is, an array as one element of its
    dtype and number of dimensions."""
    return value if isinstance(value, np.generic) else np.zeros((1,) * value.ndim, value.dtype)


def _check_shapes(dst: ndarray, src: Any, where: Any) -> None:
    """NumPy's broadcasting of ``src`` and the mask to ``dst``'s shape, checked on probes of the
    real shapes that use no memory where the shapes differ (NumPy checks them before it copies
    anything, and drops leading ones: a ``(1, n)`` source into ``(n,)``)."""
    shaped = [] if isinstance(src, np.generic) else [src.shape]
    if where is not True:
        shaped.append(where.shape)
    try:
        if all(np.broadcast_shapes(shape, dst.shape) == dst.shape for shape in shaped):
            return
    except ValueError:
        pass
    target = np.lib.stride_tricks.as_strided(np.zeros(1, dst.dtype), dst.shape, (0,) * dst.ndim)
    source = src if isinstance(src, np.generic) else np.broadcast_to(_probe(src), src.shape)
    mask = True if where is True else np.broadcast_to(np.ones((1,) * where.ndim, where.dtype), where.shape)
    quietly(np.copyto, target, source, casting="unsafe", where=mask)
