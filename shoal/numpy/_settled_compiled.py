"""NumPy calls on settled memory in C, where ``shoal/_settled_calls.c`` was built.

A loop of small operations on lazy arrays whose values are NumPy memory already (results held
back with their data, held bases, settled bases: ``shoal/numpy/_settled.py``) spent 6-7 µs an
operation in Python against NumPy's 0.3-0.6 µs: each operand's memory looked up under the
runtime's lock and counted towards a hold, the call made at the user's line, the result's new
base held back with its data. :data:`SETTLED_CALLS` does that work for the common case and
answers None for anything else, having changed nothing, so the Python path then decides; None
itself where the extension was not built (no C compiler at install).

``SETTLED_CALLS.call(function, arguments, kind[, out])``: kind :data:`UFUNC` is
:func:`shoal.numpy._settled._plain_ufunc` (it answers ``NOT_SETTLED`` where small operands
broadcast to a large result), with ``out`` (a lazy array) ``settled_ufunc`` writing it; kind
:data:`PRODUCT` is ``held_product`` followed by ``settled_call`` for ``np.matmul`` and
``np.dot``; kind :data:`METHOD` is ``settled_method`` for a ufunc's ``reduce``, ``accumulate``
or ``reduceat`` called without keywords.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from shoal import drawn, fp_warnings, held
from shoal.base_lives import LazyBase, make_base
from shoal.bytecode import View
from shoal.bytecode.dtypes import is_supported
from shoal.engine import Component
from shoal.frozen_values import new_view
from shoal.numpy import _numpy_data
from shoal.numpy._lazy import NO_QUIET_STORES, make_lazy_array, ndarray

UFUNC = 0
PRODUCT = 1
METHOD = 2

SETTLED_CALLS: ModuleType | None
try:
    import shoal._settled_calls as SETTLED_CALLS
except ImportError:  # built at install where a C compiler is found
    SETTLED_CALLS = None


def configure(not_settled: object) -> None:
    """Tell the compiled module the classes, makers and tables it works with (``not_settled``:
    the marker it answers where work is to be recorded)."""
    if SETTLED_CALLS is None:
        return
    SETTLED_CALLS.configure(
        ndarray,
        np.ndarray,
        View,
        LazyBase,
        make_base,
        new_view,
        make_lazy_array,
        NO_QUIET_STORES,
        Component.memory,
        fp_warnings._internal_files,
        fp_warnings._trampolines,
        fp_warnings.at_user_line,
        _numpy_data.wrap_in_python,
        is_supported,
        not_settled,
        vars(held),
        drawn._noted,
        _own_view,
    )
    _numpy_data.compiled_hold = SETTLED_CALLS.hold


def _own_view(array: ndarray) -> np.ndarray:
    """:func:`shoal.numpy._held_indexing.own_view` (imported once the frontend's modules are)."""
    from shoal.numpy._held_indexing import own_view

    return own_view(array)
