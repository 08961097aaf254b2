"""Recording a ufunc call whose operand kinds were seen before, without probing NumPy again.

:func:`shoal.numpy._ufunc.apply_ufunc` asks NumPy, on tiny probes, for the result dtype, the
broadcast shape and any error of every call (about half of the cost of recording an operation).
All of that depends only on the ufunc and the *kinds* of the operands: each lazy array's dtype
and shape, each NumPy scalar's dtype, each Python scalar's type and, for a Python ``int``, which
integer dtypes hold it (NumPy's error for a weak integer out of an array's range). A loop calls
the same ufuncs on operands of the same kinds every iteration, so the answer of the first call is
kept under that key (:data:`_SIGNATURES`) and later calls record at once.

Only plain calls take this path: every operand a lazy array, a numeric NumPy array of one or
more dimensions (carried into the batch as the general path carries it), a Python scalar or a
NumPy scalar (at least one lazy), one output, no ``where``, ``dtype`` or ``casting``, and
``out`` absent or one writable lazy array. A call NumPy refused is never kept (the next one
probes again and raises NumPy's error); integer ``power`` is never kept (negative exponents are
checked on the values). A call whose operand kinds were seen only with other shapes records
from the same answers, its shape broadcast per call (:data:`_ANY_SHAPE`). Settled operands
(computed by NumPy at once, ``_settled.py``) are decided per call before the key is computed,
NumPy's strict floating-point modes before it is used, exactly as the general path decides
them.
"""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any

import numpy as np

from shoal import compiled_recording
from shoal.array_sizes import below
from shoal.bytecode import reordered
from shoal.engine.fp_signals import silent
from shoal.fp_warnings import call_site, filters_raise, warned_categories
from shoal.frozen_values import new_const
from shoal.numpy import _linalg
from shoal.numpy._fperr import _strict_modes, strict
from shoal.numpy._layout import axis_order, result_strides
from shoal.numpy._lazy import NO_QUIET_STORES, make_lazy_array, ndarray
from shoal.numpy._numpy_data import _memory_limit, operand
from shoal.numpy._settled import NOT_SETTLED, settled_ufunc
from shoal.numpy._settled_compiled import PRODUCT, SETTLED_CALLS, UFUNC
from shoal.warning_filters import Filters, filters_now

# A marker for "not a plain call, or not seen before": the caller takes the general path.
NOT_FAST: Any = object()
_MATMUL = np.matmul

SIGNATURE_ENTRIES = 4096

_INTEGER_RANGES = tuple((int(np.iinfo(c).min), int(np.iinfo(c).max)) for c in "bBhHiIqQ")


class Signature:
    """What the general path found for one key: the result's dtype, shape, strides and element
    count, the element counts of the largest input and of the output given, and whether the
    operation can never warn (``fp_signals.silent``, a copy that does not cast)."""

    __slots__ = ("dtype", "largest", "opcode", "out_size", "shape", "silent", "size", "strides")

    def __init__(self, opcode: str, dtype: np.dtype, shape: tuple[int, ...], key_: tuple, first_dtype: np.dtype | None = None) -> None:
        self.opcode = opcode
        # The element counts of the largest lazy input and of the output given: the key's shapes fix them.
        self.largest = max([math.prod(kind[1]) for kind in key_[1:] if type(kind) is tuple and len(kind) == 2 and isinstance(kind[0], np.dtype)], default=0)
        last = key_[-1]
        self.out_size = math.prod(last[2]) if type(last) is tuple and len(last) == 3 and last[0] == "out" else 0
        self.dtype = dtype
        self.shape = shape
        ordered = key_[1] if len(key_) > 1 and type(key_[1]) is tuple and key_[1][0] == "order" else None
        self.strides = result_strides(None if ordered is None else ordered[1], shape, dtype.itemsize)
        self.size = math.prod(shape)
        operands = [kind[0] if type(kind) is tuple and kind and isinstance(kind[0], np.dtype) else kind for kind in key_[1:]]
        self.silent = silent(opcode, tuple(operands)) or (opcode == "copy" and first_dtype == dtype)


_SIGNATURES: dict[tuple, Signature] = {}
# The same answers without the operands' shapes (opcode, dtype): for a loop whose views change
# shape every iteration (``a[:, k + 1 :] -= x``), the shapes are worked out per call.
_ANY_SHAPE: dict[tuple, tuple[str, np.dtype]] = {}


def _int_kind(value: int) -> tuple[bool, ...] | None:
    if not -(2**63) <= value < 2**64:
        return None
    return tuple(low <= value <= high for low, high in _INTEGER_RANGES)


def key(ufunc: np.ufunc, inputs: tuple[Any, ...], out: Any) -> tuple | None:
    """The kinds of a plain call's operands (see the module docstring), or None."""
    kinds: list[Any] = [ufunc]
    lazy = False
    found_reordered = False  # an operand whose axes are not in C's order (``a.T``)
    for value in inputs:
        kind = type(value)
        if kind is ndarray:
            view = value._view
            kinds.append((view.dtype, view.shape))
            lazy = True
            strides = view.strides
            if len(strides) > 1 and (strides[0] < strides[1] or (len(strides) > 2 and reordered(strides))):  # 2-D checked inline: the common case
                found_reordered = True
        elif kind is float or kind is bool or kind is complex:
            kinds.append(kind)
        elif kind is int:
            int_kind = _int_kind(value)
            if int_kind is None:
                return None
            kinds.append(int_kind)
        elif isinstance(value, np.generic) and kind is not np.object_:
            kinds.append(value.dtype)
        elif kind is np.ndarray and value.ndim and value.dtype.kind in "biufc":
            kinds.append((value.dtype, value.shape))  # NumPy data: its dtype and shape decide as a lazy array's
            found_reordered = found_reordered or (value.ndim > 1 and reordered(value.strides))
        else:
            return None
    if not lazy:
        return None
    if found_reordered:  # the result's axes in the operands' order, as NumPy's (shoal.numpy._layout)
        try:
            shape = np.broadcast_shapes(*(kind[1] for kind in kinds[1:] if type(kind) is tuple and len(kind) == 2 and isinstance(kind[0], np.dtype)))
        except ValueError:
            return None
        order = axis_order(inputs, shape)
        if order is not None:
            kinds.insert(1, ("order", order))
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
    _keep(key_, Signature(opcode, dtype, shape, key_, _first_dtype(inputs)))
    _ANY_SHAPE[_without_shapes(key_)] = (opcode, dtype)


def _first_dtype(inputs: tuple[Any, ...]) -> np.dtype | None:
    first = inputs[0]
    return first._view.dtype if type(first) is ndarray else None


def _keep(key_: tuple, signature: Signature) -> Signature:
    if len(_SIGNATURES) >= SIGNATURE_ENTRIES:
        forget()
    _SIGNATURES[key_] = signature
    return signature


def forget() -> None:
    """Drop every remembered signature (the next call of each kind takes the general path)."""
    _SIGNATURES.clear()
    _ANY_SHAPE.clear()


def _without_shapes(key_: tuple) -> tuple:
    """``key_`` with each lazy operand's and the output's shape left out (dtype and type of
    operand stay: the result's dtype and NumPy's errors other than broadcasting depend on
    nothing else)."""
    kinds: list[Any] = []
    for kind in key_:
        if type(kind) is tuple and len(kind) == 2 and isinstance(kind[0], np.dtype):
            kinds.append(kind[0])
        elif type(kind) is tuple and len(kind) == 3 and kind[0] == "out":
            kinds.append(("out", kind[1]))
        else:
            kinds.append(kind)
    return tuple(kinds)


def _modes(filters: Filters) -> int:
    """The floating-point categories NumPy warns about now (bits), or -1 when an error must
    reach the caller at once (:func:`shoal.numpy._fperr.strict`; ``filters``: the warnings
    filters now, :func:`~shoal.warning_filters.filters_now`)."""
    global _seen
    if _STATE is None:
        return -1 if strict() else warned_categories()
    state = _STATE.get()
    seen = _seen
    if state is not seen[0]:
        seen = _seen = (state, -1 if _strict_modes() else warned_categories())
    bits = seen[1]
    if bits > 0 and filters_raise(filters):
        return -1
    return bits


_STATE = getattr(np._core.umath, "_extobj_contextvar", None)
_seen: tuple[Any, int] = (object(), -1)  # NumPy's last error state object, and :func:`_modes` for it


def record(ufunc: np.ufunc, inputs: tuple[Any, ...], out: Any) -> Any:
    """Record ``ufunc(*inputs)`` (into ``out``, a lazy array, if given) if a call with operands
    of these kinds was recorded before, or compute it at once if its operands are settled (as
    the general path would); else :data:`NOT_FAST`. A matrix product goes to ``np.matmul``'s
    own path (:mod:`shoal.numpy._linalg`) at once: ``v @ a`` of a NumPy ``v`` comes through here."""
    if ufunc is _MATMUL:
        if out is not None:
            return NOT_FAST
        eager = None if SETTLED_CALLS is None else SETTLED_CALLS.call(_MATMUL, inputs, PRODUCT)  # as ``a @ b`` of a lazy ``a``
        return _linalg.matmul(*inputs) if eager is None else eager
    if out is not None and type(out) is not ndarray:
        return NOT_FAST
    # settled_ufunc's common case first (every lazy operand small and settled): None where the
    # Python path decides, NOT_SETTLED where such operands broadcast to a large result (recorded)
    eager = None if SETTLED_CALLS is None else SETTLED_CALLS.call(ufunc, inputs, UFUNC, out)
    if eager is not None and eager is not NOT_SETTLED:
        return eager
    return recorded(ufunc, inputs, out, eager, 3)


def recorded(ufunc: np.ufunc, inputs: tuple[Any, ...], out: Any, eager: Any, depth: int) -> Any:
    """The rest of :func:`record` once the compiled settled call answered ``eager`` (None or
    ``NOT_SETTLED``); the frame that called Shoal's dispatch is ``depth`` frames out."""
    runtime = None
    for value in inputs:
        if type(value) is ndarray:
            runtime = value._base.runtime
            break
    else:
        return NOT_FAST
    limit = runtime.settled_threshold
    small = eager is None and limit > 0 and (out is None or below(math.prod(out._view.shape), out._view.dtype.itemsize, limit))  # decided first, as the general path does
    if small:
        for value in inputs:
            if type(value) is ndarray and not below(math.prod(value._view.shape), value._view.dtype.itemsize, limit):
                small = False
                break
    if small:
        eager = settled_ufunc(ufunc, inputs, None if out is None else (out,), True, None, "same_kind", compiled_tried=True)
        if eager is not NOT_SETTLED:
            return eager
    signature_key = key(ufunc, inputs, out)
    if signature_key is None:
        return NOT_FAST
    signature = _SIGNATURES.get(signature_key) or _learned_at_other_shapes(signature_key, inputs, out)
    if signature is None:
        return NOT_FAST
    filters = filters_now()
    modes = _modes(filters)
    if modes < 0:
        return NOT_FAST
    if len(inputs) == 2:
        first, second = inputs
        operands: tuple = (
            first._view if type(first) is ndarray else _operand(first),
            second._view if type(second) is ndarray else _operand(second),
        )
    else:
        operands = tuple([value._view if type(value) is ndarray else _operand(value) for value in inputs])
    # Frame depth - 1 is Shoal's dispatch (an operator, ``__array_ufunc__``, ``apply_ufunc``): the walk starts above it.
    site = None if signature.silent or not modes else call_site(sys._getframe(depth), modes, filters)
    if out is not None:
        compiled_recording.record_call(runtime, signature.opcode, out._view, operands, signature.out_size, signature.largest, site)
        return out
    shape = signature.shape
    base, view = compiled_recording.record_new(runtime, signature.opcode, signature.dtype, shape, signature.strides, signature.size, operands, signature.largest, site)
    return make_lazy_array(base, view, None, False, not shape, None, NO_QUIET_STORES)


def _learned_at_other_shapes(signature_key: tuple, inputs: tuple[Any, ...], out: Any) -> Signature | None:
    """The signature of a call seen before only with operands of other shapes (see
    :data:`_ANY_SHAPE`), its shape broadcast here and kept for these shapes; None if it was not
    seen, if the shapes do not broadcast to the output's (the general path raises NumPy's
    error) or if the result would be too large to keep."""
    known = _ANY_SHAPE.get(_without_shapes(signature_key))
    if known is None:
        return None
    opcode, dtype = known
    shape = _broadcast([value._view.shape if type(value) is ndarray else value.shape for value in inputs if type(value) in _ARRAYS])
    if shape is None or (out is not None and out._view.shape != shape):
        return None
    signature = Signature(opcode, dtype, shape, signature_key, _first_dtype(inputs))
    if signature.size * dtype.itemsize > _memory_limit():
        return None
    return _keep(signature_key, signature)


_ARRAYS = (ndarray, np.ndarray)


def _operand(value: Any) -> Any:
    """A scalar's constant, or NumPy data carried into the batch as the general path carries it."""
    return operand(value) if type(value) is np.ndarray else new_const(value)


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """NumPy's broadcast of ``shapes``, or None if they do not broadcast."""
    shape = shapes[0]
    for other in shapes[1:]:
        if other == shape:
            continue
        if len(other) > len(shape):
            shape, other = other, shape
        other = (1,) * (len(shape) - len(other)) + other
        merged = []
        for n, m in zip(shape, other):
            if n == m or m == 1:
                merged.append(n)
            elif n == 1:
                merged.append(m)
            else:
                return None
        shape = tuple(merged)
    return shape


#: :func:`record` in Python, which the compiled one (``_fast_record.c``) calls for a matrix
#: product, inputs not in a tuple and a missing ``SETTLED_CALLS``; the tests run both.
record_python = record


def configuration() -> dict[str, Any]:
    """What the compiled :func:`record` works with, by name: the classes it reads, the tables
    and module globals it reads as the Python does, and the functions it calls."""
    from shoal import fp_warnings, warning_filters
    from shoal.base_lives import LazyBase
    from shoal.bytecode import View

    return {
        "ndarray": ndarray,
        "LazyBase": LazyBase,
        "View": View,
        "Signature": Signature,
        "generic": np.generic,
        "object_": np.object_,
        "matmul": _MATMUL,
        "signatures": _SIGNATURES,
        "ufunc_kind": UFUNC,
        "not_settled": NOT_SETTLED,
        "not_fast": NOT_FAST,
        "record_python": record_python,
        "recorded": recorded,
        "fast_globals": globals(),
        "fp_globals": vars(fp_warnings),
        "filter_globals": vars(warning_filters),
        "warnings_globals": vars(warnings),
        "recording_globals": vars(compiled_recording),
        "state": _STATE,
        "call_site": call_site,
        "known_call_site": fp_warnings.known_call_site,
        "new_const": new_const,
        "make_lazy_array": make_lazy_array,
        "no_quiet_stores": NO_QUIET_STORES,
    }


try:
    from shoal.numpy import _fast_record as FAST_RECORD
except ImportError:  # built at install where a C compiler is found
    FAST_RECORD = None
else:
    FAST_RECORD.configure(configuration())
    record = FAST_RECORD.record
