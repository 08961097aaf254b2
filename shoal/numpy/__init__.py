"""``shoal.numpy``: NumPy's namespace with lazy, parallel arrays.

Use it as ``import shoal.numpy as np``, or run an unmodified program with
``python -m shoal app.py``. Small arrays are plain NumPy arrays; large ones are lazy and run on
Shoal's engine at flush triggers (reading a value, a full batch, ``shoal.flush()``, exit).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as _np

from shoal.errors import ShoalFallbackWarning
from shoal.library_adapters import adapt_loaded as _adapt_loaded_libraries
from shoal.numpy._buffers import frombuffer, nditer
from shoal.numpy._create import (
    arange,
    array,
    asanyarray,
    asarray,
    ascontiguousarray,
    asfortranarray,
    copy,
    empty,
    empty_like,
    eye,
    fromfunction,
    full,
    full_like,
    identity,
    indices,
    linspace,
    meshgrid,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from shoal.numpy._dispatch import fallbacks_used
from shoal.numpy._functions import clip, outer, where
from shoal.numpy._lazy import ndarray
from shoal.numpy._shape import broadcast_arrays, broadcast_to
from shoal.numpy._views import asmatrix
from shoal.warning_contexts import install as _give_warnings_at_catch_warnings
from shoal.warning_contexts import install_for_numpy_testing as _give_warnings_in_numpy_testing

_give_warnings_at_catch_warnings()

# NumPy's namespace (ufuncs, dtypes, constants, functions), without importing the submodules NumPy
# loads on first use (``testing``, ``f2py``, ``random``, ``fft``, ...): module ``__getattr__`` below
# serves those. ``numpy.random`` alone holds 6.7 MiB, which a program that never draws a random
# number would carry as extra peak memory. Shoal's own definitions above take precedence.
_LAZY_SUBMODULES = {
    "testing", "f2py", "ctypeslib", "typing", "matlib", "polynomial", "ma", "char", "rec", "strings",
    "random", "linalg", "fft", "core",
}  # fmt: skip
# Submodules of NumPy's namespace that Shoal replaces with its own.
_OWN_SUBMODULES = {"random", "linalg"}
globals().update(
    {
        name: getattr(_np, name)
        for name in _np.__all__
        if name not in _LAZY_SUBMODULES and name not in globals()
    }
)


def __getattr__(name: str) -> Any:
    if name in _OWN_SUBMODULES:
        return importlib.import_module(f"shoal.numpy.{name}")  # the import binds it here too
    value = getattr(_np, name)
    if name == "testing":
        _give_warnings_in_numpy_testing()
    if name in _LAZY_SUBMODULES:  # a NumPy submodule just loaded (``np.polynomial``): adapted to lazy arrays
        _adapt_loaded_libraries()
    return value


__all__ = [
    "ShoalFallbackWarning",
    "arange",
    "array",
    "asanyarray",
    "asarray",
    "ascontiguousarray",
    "asfortranarray",
    "asmatrix",
    "broadcast_arrays",
    "broadcast_to",
    "clip",
    "copy",
    "empty",
    "empty_like",
    "eye",
    "fallbacks_used",
    "frombuffer",
    "fromfunction",
    "full",
    "full_like",
    "identity",
    "indices",
    "linalg",
    "linspace",
    "meshgrid",
    "ndarray",
    "nditer",
    "ones",
    "ones_like",
    "outer",
    "random",
    "where",
    "zeros",
    "zeros_like",
]  # fmt: skip
__all__ += sorted({name for name in _np.__all__ if name not in _LAZY_SUBMODULES} - set(__all__))


def _settle_the_allocator() -> None:
    """Raise glibc's heap thresholds the way NumPy's first free of a large array does.

    glibc returns the top of the heap to the system whenever more than 128 KiB lie free there,
    until a freed mmap-sized block raises that threshold (to twice the block). A program of
    80 KiB temporaries can then grow and trim the heap around every operation, depending only on
    where earlier allocations happened to land: nbody.py at 100 bodies spent 4,050 ``brk`` calls
    and 2.9x NumPy's time under ``python -m shoal`` (46 calls under plain Python). One untouched
    4 MiB block, allocated and freed, sets the thresholds to 4 MiB (reuse) and 8 MiB (trim).
    """
    _np.empty(4 << 20, _np.uint8)


_settle_the_allocator()
