"""Whether a call came from an installed library (SciPy, pandas, ...) rather than the program.

A library that calls NumPy on an array the program handed it expects NumPy's results: its
compiled code takes only ``numpy.ndarray`` (SciPy's L-BFGS-B and SLSQP gradients, after
``np.atleast_1d``). NumPy's own Python code is not such a library: Shoal runs it on lazy arrays
(:mod:`shoal.numpy._composed`), and its calls keep them lazy.
"""

from __future__ import annotations

import os
import sys
import sysconfig

import numpy as np

LIBRARY_DIRECTORIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})
_NUMPY_DIRECTORY = os.path.dirname(np.__file__) + os.sep
_SHOAL_DIRECTORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_KNOWN: dict[str, bool] = {}


def library_file(filename: str) -> bool:
    """True for a file of an installed library or of Python's own library, not NumPy's or Shoal's."""
    known = _KNOWN.get(filename)
    if known is None:
        installed = filename.startswith(LIBRARY_DIRECTORIES) or "site-packages" in filename or "dist-packages" in filename
        known = _KNOWN[filename] = installed and not filename.startswith((_NUMPY_DIRECTORY, _SHOAL_DIRECTORY))
    return known


def called_from_library(depth: int) -> bool:
    """Whether the frame ``depth`` levels above the caller of this function is a library's."""
    return library_file(sys._getframe(depth + 1).f_code.co_filename)
