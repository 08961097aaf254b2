"""Indexing a lazy array whose base is held (:mod:`shoal.held`): NumPy's views of the held
memory, and the large views that go back to lazy work instead."""

from __future__ import annotations

import dis
import sys
import types
from typing import Any

import numpy as np

from shoal import held
from shoal.numpy import _index, _indexed
from shoal.numpy._dispatch import warn_fallback
from shoal.numpy._lazy import NO_QUIET_STORES, make_view, ndarray
from shoal.numpy._numpy_data import from_numpy, is_small


def held_memory(value: Any) -> Any:
    """``value``'s NumPy view of its held base (:mod:`shoal.held`) if it is a lazy array of one,
    ``value`` itself if it is not a lazy array, else None."""
    if type(value) is not ndarray:
        return value
    memory = value._held
    if memory is None and value._base.held is not None and not value._scalar:
        memory = own_view(value)
    return memory


def memory_now(array: ndarray, fallback: str | None) -> np.ndarray:
    """``array``'s view of its base's memory, the base held from now on (after everything
    recorded ran), for NumPy code that works on the memory itself; where the component does not
    hand its memory out, a copy of the base's bytes the array spans with the array laid over it
    as over the base (its strides kept: ``as_strided`` lays its own over them), with a fallback
    note named ``fallback`` if given."""
    array._base.runtime.hold_for_tasks(array._base.id)
    memory = held_memory(array)
    if memory is None:
        if fallback is not None:
            warn_fallback(fallback)
        memory = _spanned_copy(array)
    return memory


def _spanned_copy(array: ndarray) -> np.ndarray:
    view = array._view
    item = view.dtype.itemsize
    if array._scalar or view.is_contiguous() or 0 in view.shape or any(stride % item for stride in view.strides):
        return array._value()
    low, high = view.byte_extent()
    spanned = array._derive(make_view(view.base, view.dtype, low, ((high - low) // item,), (item,)))._value()
    return np.ndarray(view.shape, view.dtype, buffer=spanned, offset=view.offset - low, strides=view.strides)


def own_view(array: ndarray) -> np.ndarray:
    """``array``'s view of its base's held memory, read-only if ``array`` is, kept by ``array``
    for its next indexing (a loop indexes the same array again and again) until the base is
    handed back."""
    base = array._base
    view = array._view
    memory = np.ndarray(view.shape, view.dtype, base.held, view.offset, view.strides)
    if array._readonly:
        memory.flags.writeable = False
    array._quiet = _quiet_stores(memory.dtype)
    array._large = base.large
    array._held = memory
    held.remember(base, array)
    return memory


_FLOAT64 = np.dtype(np.float64)
_INTO_FLOAT64 = frozenset((float, np.float64, int, bool))
_INTO_INTEGERS = frozenset((int,))  # out of range, NumPy raises OverflowError


def _quiet_stores(dtype: np.dtype) -> frozenset[type]:
    """The types of scalars whose store into memory of ``dtype`` never warns."""
    if dtype is _FLOAT64:
        return _INTO_FLOAT64
    return _INTO_INTEGERS if dtype.kind in "iu" else NO_QUIET_STORES


def large_view(array: ndarray, key: Any) -> Any:
    """``array[key]`` of a held base where the view is large (the settled threshold or more):
    whole-array work on it belongs to the engine, which would otherwise take a NumPy view of the
    held memory as outside data, copying it for every operation. The view is lazy, unless NumPy
    views of its memory are alive or the view is the target of an in-place update
    (``a[k:, k:] -= np.outer(...)`` of an LU step, whose operands are NumPy's views of the held
    memory): then NumPy's view. The base stays held until an instruction recorded on it hands it
    back: a product with a small result (a triangular matrix product's ``a[i + 1:, i] @
    b[i + 1:]``) reads the held memory at once (released and held again every row, such a row
    took 226 µs against NumPy's 65)."""
    if not _augmented_target(sys._getframe(2)) and not array._base.runtime.held_views_alive(array._base.id):
        return _index.getitem(array, key)
    memory = array._held
    return (own_view(array) if memory is None else memory)[key]


_COPY, _CACHE = dis.opmap["COPY"], dis.opmap["CACHE"]


def _augmented_target(frame: types.FrameType) -> bool:
    """True if ``frame`` is reading ``x[key]`` to update it in place (``x[key] -= y``): the
    interpreter copies the array and the key first (``COPY 2`` twice), and only there. A
    specialized subscript reports the last of its inline cache entries as the instruction."""
    code, at = frame.f_code.co_code, frame.f_lasti
    while at >= 2 and code[at] == _CACHE:
        at -= 2
    return at >= 4 and code[at - 4] == _COPY and code[at - 3] == 2 and code[at - 2] == _COPY and code[at - 1] == 2


def memory_index(key: Any) -> Any:
    """``key`` for NumPy's indexing of held memory: its lazy index arrays replaced by their
    settled memory (:func:`shoal.numpy._indexed.settled_key`), not copied out by NumPy's
    conversion of each (a mask's store ``z[m] = v`` in a loop)."""
    if type(key) is ndarray or (type(key) is tuple and any(type(item) is ndarray for item in key)):
        return _indexed.settled_key(key)
    return key


def indexed(memory: np.ndarray, key: Any) -> Any:
    """``memory[key]``, a large new array (``key`` an index array or list) as a lazy array, as
    indexing a lazy array gives, so that a lazy operation takes it without a snapshot copy."""
    result = _indexed.gather(memory, _indexed.settled_key(key))
    if type(result) is np.ndarray and result.base is not memory.base and not is_small(result.size, result.itemsize):
        return from_numpy(result, copy=False)
    return result
