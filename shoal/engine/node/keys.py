"""Keys for values that batches carry (constants, attributes), shared by every stage."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np


def exact_key(value: Any) -> Any:
    """``value`` as a key that tells apart what ``==`` does not (1 and 1.0 and True, -0.0 and 0.0)."""
    if isinstance(value, tuple):
        return ("tuple", tuple(exact_key(item) for item in value))
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, complex):
        return ("complex", struct.pack("<dd", value.real, value.imag))
    if isinstance(value, np.dtype):
        return ("dtype", value, value.char)
    return (type(value), value)
