"""The base class of the lazy ``ndarray``: where ``a[key]`` and ``a[key] = value`` start.

While an array's base is held (:mod:`shoal.held`), its values are NumPy memory kept in
``_held``, and a row or element loop (``x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]``) is NumPy's
indexing of it. A Python ``__getitem__`` costs such a loop the interpreter's frame per access
(89 ns for an element against NumPy's 38), so the common cases run in the C slots of
``_held_slots.c``, built at install where a C compiler is found: an element or a row read with
an int (or NumPy integer) first index, a column or another view by slices of fewer than
``_large`` elements, a store of a NumPy array of the memory's dtype or of a scalar type in
``_quiet``. Every other case, and every array whose base is not held, calls the class's
``_getitem`` / ``_setitem``.

Without the compiled module (no compiler at install, or ``SHOAL_COMPILED_INDEXING=off``) the
base class is :class:`PythonSlots` and the lazy class's ``__getitem__`` / ``__setitem__`` are
``_getitem`` / ``_setitem`` themselves: the same rules, at the Python cost.
"""

from __future__ import annotations

import numpy as np

from shoal.settings import COMPILED_INDEXING

# With int: the types of a held array's first index that take a row or an element.
NUMPY_INTEGERS = frozenset((np.int64, np.intp, np.int32))


class PythonSlots:
    """The attributes the compiled slots read, as plain slots."""

    __slots__ = ("_held", "_large", "_quiet")


def _compiled() -> type | None:
    """The compiled base class, configured, or None where it is not built or turned off."""
    if COMPILED_INDEXING.value() == "off":
        return None
    try:
        from shoal.numpy import _held_slots
    except ImportError:
        return None
    _held_slots.configure(NUMPY_INTEGERS, np.ndarray)
    return _held_slots.HeldSlots


_COMPILED_BASE = _compiled()
COMPILED = _COMPILED_BASE is not None
HeldSlots: type = PythonSlots if _COMPILED_BASE is None else _COMPILED_BASE
