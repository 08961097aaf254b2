"""Little-endian primitives and tagged values for the wire format (see docs/bytecode.md).

:class:`Writer` appends fixed-width fields and values; :class:`Reader` reads them back and checks
every length against the bytes that remain and against :class:`WireLimits`, so malformed input
raises :class:`BytecodeError` and nothing else.

A value is a one-byte tag followed by its payload:

========  =====================  =================================================
tag       value                  payload
========  =====================  =================================================
0x00      ``None``
0x01/02   ``False`` / ``True``
0x03      ``int`` (64-bit)       i64
0x04      ``int`` (wider)        u32 byte count n, n bytes two's complement
0x05      ``float``              f64
0x06      ``complex``            f64 real, f64 imaginary
0x07      ``str``                u32 byte count n, n bytes UTF-8
0x08      ``numpy.dtype``        dtype code
0x09      ``tuple``              u32 item count, the items
0x0A      NumPy scalar           dtype code, itemsize bytes (little-endian)
========  =====================  =================================================
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal.bytecode.dtypes import dtype_code, dtype_from_code
from shoal.bytecode.errors import BytecodeError

TAG_NONE = 0x00
TAG_FALSE = 0x01
TAG_TRUE = 0x02
TAG_INT64 = 0x03
TAG_BIGINT = 0x04
TAG_FLOAT = 0x05
TAG_COMPLEX = 0x06
TAG_STR = 0x07
TAG_DTYPE = 0x08
TAG_TUPLE = 0x09
TAG_NUMPY_SCALAR = 0x0A

SCALAR_TAGS = frozenset(
    {TAG_FALSE, TAG_TRUE, TAG_INT64, TAG_BIGINT, TAG_FLOAT, TAG_COMPLEX, TAG_NUMPY_SCALAR}
)

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_C128 = struct.Struct("<dd")

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_MAX_SAFE_DEPTH = 200  # well below Python's recursion limit


@dataclass(frozen=True)
class WireLimits:
    """Upper bounds that :func:`shoal.bytecode.loads` enforces on a message before trusting it."""

    max_message_bytes: int = 1 << 36
    max_bases: int = 1 << 20
    max_instructions: int = 1 << 20
    max_operands: int = 1 << 12
    max_attrs: int = 64
    max_ndim: int = 64
    max_string_bytes: int = 1 << 16
    max_int_bytes: int = 256
    max_attr_depth: int = 16
    max_data_bytes: int = 1 << 36
    max_base_bytes: int = 1 << 48

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"WireLimits.{name} must be a non-negative int, got {value!r}")
        if self.max_attr_depth > _MAX_SAFE_DEPTH:
            raise ValueError(f"WireLimits.max_attr_depth must be at most {_MAX_SAFE_DEPTH}")
        if self.max_ndim > 255:
            raise ValueError("WireLimits.max_ndim must be at most 255 (one byte on the wire)")


DEFAULT_LIMITS = WireLimits()


class Writer:
    """Collects the chunks of one message; ``size`` is the byte count so far."""

    def __init__(self, limits: WireLimits) -> None:
        self.limits = limits
        self.chunks: list[bytes | memoryview] = []
        self.size = 0

    def raw(self, chunk: bytes | memoryview) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)

    def pad_to(self, alignment: int) -> None:
        padding = -self.size % alignment
        if padding:
            self.raw(bytes(padding))

    def u8(self, value: int, what: str) -> None:
        self.raw(_U8.pack(_in_range(value, 0, 0xFF, what)))

    def u16(self, value: int, what: str) -> None:
        self.raw(_U16.pack(_in_range(value, 0, 0xFFFF, what)))

    def u32(self, value: int, what: str) -> None:
        self.raw(_U32.pack(_in_range(value, 0, 0xFFFF_FFFF, what)))

    def u64(self, value: int, what: str) -> None:
        self.raw(_U64.pack(_in_range(value, 0, (1 << 64) - 1, what)))

    def i64(self, value: int, what: str) -> None:
        self.raw(_I64.pack(_in_range(value, INT64_MIN, INT64_MAX, what)))

    def text(self, value: str, what: str) -> None:
        try:
            encoded = value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise BytecodeError(f"{what}: string is not valid UTF-8 ({error.reason})") from None
        if len(encoded) > self.limits.max_string_bytes:
            raise BytecodeError(
                f"{what}: string of {len(encoded)} bytes exceeds "
                f"max_string_bytes={self.limits.max_string_bytes}"
            )
        self.u32(len(encoded), what)
        self.raw(encoded)

    def value(self, value: Any, what: str, depth: int = 0) -> None:
        """Append a tagged value: ``None``, a scalar, a str, a dtype or a tuple of those."""
        if isinstance(value, np.generic):
            self._numpy_scalar(value, what)
        elif value is None:
            self.u8(TAG_NONE, what)
        elif isinstance(value, bool):
            self.u8(TAG_TRUE if value else TAG_FALSE, what)
        elif isinstance(value, int):
            self._int(int(value), what)
        elif isinstance(value, float):
            self.u8(TAG_FLOAT, what)
            self.raw(_F64.pack(value))
        elif isinstance(value, complex):
            self.u8(TAG_COMPLEX, what)
            self.raw(_C128.pack(value.real, value.imag))
        elif isinstance(value, str):
            self.u8(TAG_STR, what)
            self.text(value, what)
        elif isinstance(value, np.dtype):
            self.u8(TAG_DTYPE, what)
            self.u8(_dtype_code(value, what), what)
        elif isinstance(value, tuple):
            if depth >= self.limits.max_attr_depth:
                raise BytecodeError(
                    f"{what}: tuples nested deeper than {self.limits.max_attr_depth} levels "
                    "(max_attr_depth)"
                )
            self.u8(TAG_TUPLE, what)
            self.u32(len(value), what)
            for item in value:
                self.value(item, what, depth + 1)
        else:
            raise BytecodeError(f"{what}: cannot encode a value of type {type(value).__name__}")

    def _int(self, value: int, what: str) -> None:
        if INT64_MIN <= value <= INT64_MAX:
            self.u8(TAG_INT64, what)
            self.raw(_I64.pack(value))
            return
        nbytes = (value.bit_length() + 8) // 8
        if nbytes > self.limits.max_int_bytes:
            raise BytecodeError(
                f"{what}: integer of {value.bit_length()} bits exceeds "
                f"max_int_bytes={self.limits.max_int_bytes}"
            )
        self.u8(TAG_BIGINT, what)
        self.u32(nbytes, what)
        self.raw(value.to_bytes(nbytes, "little", signed=True))

    def _numpy_scalar(self, value: np.generic, what: str) -> None:
        code = _dtype_code(value.dtype, what)
        little = value.dtype.newbyteorder("<")
        self.u8(TAG_NUMPY_SCALAR, what)
        self.u8(code & 0x7F, what)
        self.raw(np.asarray(value).astype(little).tobytes())


class Reader:
    """Reads a message front to back; ``pos`` is the offset of the next unread byte."""

    def __init__(self, buffer: memoryview, limits: WireLimits) -> None:
        self.buffer = buffer
        self.length = len(buffer)
        self.limits = limits
        self.pos = 0

    @property
    def remaining(self) -> int:
        return self.length - self.pos

    def unpack(self, layout: struct.Struct, what: str) -> tuple[Any, ...]:
        """The fields of ``layout`` at the current position."""
        start = self.pos
        if start + layout.size > self.length:
            raise self.truncated(layout.size, what)
        self.pos = start + layout.size
        return layout.unpack_from(self.buffer, start)

    def take(self, nbytes: int, what: str) -> memoryview:
        start = self.pos
        if nbytes > self.length - start:
            raise self.truncated(nbytes, what)
        self.pos = start + nbytes
        return self.buffer[start : self.pos]

    def truncated(self, nbytes: int, what: str) -> BytecodeError:
        return BytecodeError(
            f"truncated message: {what} at byte {self.pos} needs {nbytes} bytes, "
            f"only {self.remaining} left"
        )

    def skip_padding(self, alignment: int, what: str) -> None:
        start = self.pos
        if any(self.take(-self.pos % alignment, what)):
            raise BytecodeError(f"{what} at byte {start}: padding bytes must be zero")

    def u8(self, what: str) -> int:
        return self.unpack(_U8, what)[0]

    def u16(self, what: str) -> int:
        return self.unpack(_U16, what)[0]

    def u32(self, what: str) -> int:
        return self.unpack(_U32, what)[0]

    def u64(self, what: str) -> int:
        return self.unpack(_U64, what)[0]

    def count(self, what: str, limit: int, limit_name: str) -> int:
        """A u32 item count, checked against ``limit``."""
        start = self.pos
        value = self.u32(what)
        if value > limit:
            raise BytecodeError(
                f"{what} at byte {start} is {value}, above the limit {limit_name}={limit}"
            )
        return value

    def check_dtype(self, code: int, what: str, start: int) -> np.dtype:
        """The dtype of wire ``code`` read at byte ``start``."""
        try:
            return dtype_from_code(code)
        except BytecodeError as error:
            raise BytecodeError(f"{what} at byte {start}: {error}") from None

    def dtype(self, what: str) -> np.dtype:
        start = self.pos
        return self.check_dtype(self.u8(what), what, start)

    def text(self, what: str) -> str:
        start = self.pos
        nbytes = self.count(f"{what} length", self.limits.max_string_bytes, "max_string_bytes")
        try:
            return str(self.take(nbytes, what), "utf-8")
        except UnicodeDecodeError as error:
            raise BytecodeError(f"{what} at byte {start}: invalid UTF-8 ({error.reason})") from None

    def value(self, what: str, depth: int = 0) -> Any:
        start = self.pos
        tag = self.u8(what)
        if tag == TAG_INT64:
            return self.unpack(_I64, what)[0]
        if tag == TAG_FLOAT:
            return self.unpack(_F64, what)[0]
        if tag == TAG_NONE:
            return None
        if tag in (TAG_FALSE, TAG_TRUE):
            return tag == TAG_TRUE
        if tag == TAG_BIGINT:
            nbytes = self.count(f"{what} integer length", self.limits.max_int_bytes, "max_int_bytes")
            return int.from_bytes(self.take(nbytes, what), "little", signed=True)
        if tag == TAG_COMPLEX:
            real, imag = self.unpack(_C128, what)
            return complex(real, imag)
        if tag == TAG_STR:
            return self.text(what)
        if tag == TAG_DTYPE:
            return self.dtype(what)
        if tag == TAG_TUPLE:
            return self._tuple(what, depth, start)
        if tag == TAG_NUMPY_SCALAR:
            dtype = self.dtype(what)
            return np.frombuffer(self.take(dtype.itemsize, what), dtype=dtype)[0]
        raise BytecodeError(f"{what} at byte {start}: unknown value tag {tag:#04x}")

    def _tuple(self, what: str, depth: int, start: int) -> tuple[Any, ...]:
        if depth >= self.limits.max_attr_depth:
            raise BytecodeError(
                f"{what} at byte {start}: tuples nested deeper than {self.limits.max_attr_depth}"
                " levels (max_attr_depth)"
            )
        # every item takes at least its one-byte tag, so the count is bounded by what is left
        length = self.count(f"{what} tuple length", self.remaining, "bytes left in the message")
        return tuple(self.value(what, depth + 1) for _ in range(length))


def _in_range(value: int, low: int, high: int, what: str) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool | np.bool_):
        raise BytecodeError(f"{what}: expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise BytecodeError(f"{what}: {value} is outside the encodable range [{low}, {high}]")
    return int(value)


def _dtype_code(dtype: np.dtype, what: str) -> int:
    try:
        return dtype_code(dtype)
    except BytecodeError as error:
        raise BytecodeError(f"{what}: {error}") from None
