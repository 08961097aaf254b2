"""The dtypes bytecode may carry: booleans, integers, floats and complex numbers.

Each has a one-byte wire code; the high bit marks big-endian byte order (only for dtypes wider
than one byte, so every dtype has exactly one code). ``long double`` is left out because its
layout differs between platforms.
"""

from __future__ import annotations

import numpy as np

from shoal.bytecode.errors import BytecodeError

BIG_ENDIAN_FLAG = 0x80

# Order fixes the wire codes (1-based): append only.
_WIRE_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(name) if np.little_endian else np.dtype(name).newbyteorder("<")
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
)  # fmt: skip
_CODE_BY_KEY: dict[tuple[str, int], int] = {
    (dtype.kind, dtype.itemsize): code for code, dtype in enumerate(_WIRE_DTYPES, start=1)
}
_DTYPE_BY_CODE: dict[int, np.dtype] = {
    **{code: dtype for code, dtype in enumerate(_WIRE_DTYPES, start=1)},
    **{
        code | BIG_ENDIAN_FLAG: dtype.newbyteorder(">")
        for code, dtype in enumerate(_WIRE_DTYPES, start=1)
        if dtype.itemsize > 1
    },
}
_CODE_BY_DTYPE: dict[np.dtype, int] = {dtype: code for code, dtype in _DTYPE_BY_CODE.items()}
SUPPORTED_DTYPES: frozenset[np.dtype] = frozenset(_DTYPE_BY_CODE.values())
"""Every dtype bytecode carries, in both byte orders: a quick membership test."""


def is_supported(dtype: object) -> bool:
    """True if ``dtype`` is a NumPy dtype that bytecode can carry."""
    if not isinstance(dtype, np.dtype) or dtype.fields is not None or dtype.subdtype is not None:
        return False
    return (dtype.kind, dtype.itemsize) in _CODE_BY_KEY


def dtype_code(dtype: np.dtype) -> int:
    """The one-byte wire code of ``dtype``; a :class:`BytecodeError` for other dtypes."""
    if is_supported(dtype):
        code = _CODE_BY_DTYPE.get(dtype)
        if code is not None:
            return code
    raise BytecodeError(f"unsupported dtype {dtype!r}: only bool, int, uint, float and complex")


def dtype_from_code(code: int) -> np.dtype:
    """The dtype of a wire code; a :class:`BytecodeError` for a code that names none."""
    dtype = _DTYPE_BY_CODE.get(code)
    if dtype is not None:
        return dtype
    if (code & ~BIG_ENDIAN_FLAG) in _DTYPE_BY_CODE:
        raise BytecodeError(f"dtype code {code:#04x}: a one-byte dtype has no byte order")
    raise BytecodeError(f"unknown dtype code {code:#04x}")


def short_name(dtype: np.dtype) -> str:
    """A compact name such as ``f8``, ``b1`` or ``c16``; ``>f8`` for non-native byte order."""
    order, kind_size = dtype.str[0], dtype.str[1:]
    native = "<" if np.little_endian else ">"
    return kind_size if order in ("|", "=", native) else order + kind_size
