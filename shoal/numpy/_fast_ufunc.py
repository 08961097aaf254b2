"""Recording a ufunc call whose operand kinds were seen before, without probing NumPy again.

:func:`shoal.numpy._ufunc.apply_ufunc` asks NumPy, on tiny probes, for the result dtype, the
broadcast shape and any error of every call (about half of the cost of recording an operation).
All of that depends only on the ufunc and the *kinds* of the operands: each lazy array's dtype
and shape, each NumPy scalar's dtype, each Python scalar's type and, for a Python ``int``, which
integer dtypes hold it (NumPy's error for a weak integer out of an array's range). A loop calls
the same ufuncs on operands of the same kinds every iteration, so the answer of the first call is
kept under that key (:data:`_SIGNATURES`) and later calls record at once.

Only plain calls take this path: every operand a lazy array, a Python scalar or a NumPy scalar
(at least one lazy), one output, no ``where``, ``dtype`` or ``casting``, and ``out`` absent or
one writable lazy array. A call NumPy refused is never kept (the next one probes again and
raises NumPy's error); integer ``power`` is never kept (negative exponents are checked on the
values). Settled operands (computed by NumPy at once, ``_settled.py``) are decided per call before
the key is computed, NumPy's strict floating-point modes before it is used, exactly as the
general path decides them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shoal.bytecode import Const, View
from shoal.numpy._fperr import strict
from shoal.numpy._lazy import _memory_limit, contiguous_strides, ndarray
from shoal.numpy._settled import NOT_SETTLED, settled_ufunc

# A marker for "not a plain call, or not seen before": the caller takes the general path.
NOT_FAST: Any = object()

SIGNATURE_ENTRIES = 4096

_INTEGER_RANGES = tuple((int(np.iinfo(c).min), int(np.iinfo(c).max)) for c in "bBhHiIqQ")


class Signature:
    """What the general path found for one key: the result's dtype, shape and strides."""

    __slots__ = ("dtype", "opcode", "shape", "strides")

    def __init__(self, opcode: str, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        self.opcode = opcode
        self.dtype = dtype
        self.shape = shape
        self.strides = contiguous_strides(shape, dtype.itemsize)


_SIGNATURES: dict[tuple, Signature] = {}


def _int_kind(value: int) -> tuple[bool, ...] | None:
    if not -(2**63) <= value < 2**64:
        return None
    return tuple(low <= value <= high for low, high in _INTEGER_RANGES)


def key(ufunc: np.ufunc, inputs: tuple[Any, ...], out: Any) -> tuple | None:
    """The kinds of a plain call's operands (see the module docstring), or None."""
    kinds: list[Any] = [ufunc]
    lazy = False
    for value in inputs:
        kind = type(value)
        if kind is ndarray:
            view = value._view
            kinds.append((view.dtype, view.shape))
            lazy = True
        elif kind is float or kind is bool or kind is complex:
            kinds.append(kind)
        elif kind is int:
            int_kind = _int_kind(value)
            if int_kind is None:
                return None
            kinds.append(int_kind)
        elif isinstance(value, np.generic) and kind is not np.object_:
            kinds.append(value.dtype)
        else:
            return None
    if not lazy:
        return None
    if out is not None:
        if type(out) is not ndarray or out._readonly or out._scalar:
            return None
        kinds.append(("out", out._view.dtype, out._view.shape))
    return tuple(kinds)


def learn(key_: tuple | None, opcode: str | None, ufunc: np.ufunc, inputs: tuple[Any, ...], dtype: np.dtype, shape: tuple[int, ...]) -> None:
    """Keep what the general path found for a call that it is about to record."""
    if key_ is None or opcode is None or ufunc.nout != 1:
        return
    dtype = np.dtype(dtype)
    if ufunc is np.power and dtype.kind in "iub":
        return
    if math.prod(shape) * dtype.itemsize > _memory_limit():
        return
    if len(_SIGNATURES) >= SIGNATURE_ENTRIES:
        _SIGNATURES.clear()
    _SIGNATURES[key_] = Signature(opcode, dtype, shape)


def record(ufunc: np.ufunc, inputs: tuple[Any, ...], out: Any) -> Any:
    """Record ``ufunc(*inputs)`` (into ``out``, a lazy array, if given) if a call with operands
    of these kinds was recorded before, or compute it at once if its operands are settled (as
    the general path would); else :data:`NOT_FAST`."""
    if out is not None and type(out) is not ndarray:
        return NOT_FAST
    runtime = None
    small = True
    for value in inputs:
        if type(value) is ndarray:
            runtime = value._base.runtime
            if small and math.prod(value._view.shape) >= runtime.settled_threshold:
                small = False
    if runtime is None:
        return NOT_FAST
    if small and (out is None or math.prod(out._view.shape) < runtime.settled_threshold):
        eager = settled_ufunc(ufunc, inputs, None if out is None else (out,), True, None, "same_kind")
        if eager is not NOT_SETTLED:
            return eager
    signature_key = key(ufunc, inputs, out)
    if signature_key is None:
        return NOT_FAST
    signature = _SIGNATURES.get(signature_key)
    if signature is None or strict():
        return NOT_FAST
    operands = []
    for value in inputs:
        if type(value) is ndarray:
            operands.append(value._view)
        else:
            operands.append(Const(value))
    if out is not None:
        runtime.record(signature.opcode, (out._view,), tuple(operands))
        return out
    dtype = signature.dtype
    shape = signature.shape
    base = runtime.new_base(dtype, math.prod(shape))
    result = ndarray._wrap(base, View(base.id, dtype, 0, shape, signature.strides), None, False, not shape)
    runtime.record(signature.opcode, (result._view,), tuple(operands))
    return result
