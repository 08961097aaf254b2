"""The proxy's wire protocol: a handshake, then framed messages (layout in docs/proxy.md).

Everything is little-endian and versioned; nothing is pickled. A frame is a 24-byte header
(magic ``SHPX``, kind, flags, sequence number, payload length) and its payload. Payloads are
built with the bytecode's :class:`~shoal.bytecode.codec.Writer` and read with its
:class:`~shoal.bytecode.codec.Reader`, which checks every length against the bytes that remain,
so a malformed payload raises :class:`ProtocolError` and nothing else. Every length is checked
against :class:`Limits` before anything is allocated for it.

The client's frames carry sequence numbers 1, 2, 3, ... without gaps; the server refuses any
other (a replayed or reordered frame). Requests (``FETCH``, ``PREVIEW``, ``SYNC``, ``BYE``) are
answered in order; ``EXECUTE`` is not answered, so batches stream without waiting.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import numpy as np

from shoal.bytecode import View
from shoal.bytecode.codec import DEFAULT_LIMITS as WIRE_DEFAULTS
from shoal.bytecode.codec import Reader, WireLimits, Writer
from shoal.bytecode.dtypes import dtype_code, dtype_from_code
from shoal.bytecode.errors import BytecodeError

PROTOCOL_VERSION = 2
PREAMBLE_MAGIC = b"SHOALPX\x00"
FRAME_MAGIC = b"SHPX"
SESSION_ID_BYTES = 16
MIN_TOKEN_BYTES = 16  # 128 bits
MAX_TOKEN_BYTES = 256
DATA_ALIGNMENT = 16  # array bytes start at this alignment within a DATA payload
MAX_TEXT_CHARACTERS = 16_000  # of an error message or traceback: 64 KiB of UTF-8 at most

FRAME_HEADER = struct.Struct("<4sHHQQ")  # magic, kind, flags, sequence, payload length
PREAMBLE_HEADER = struct.Struct("<8sII")  # magic, protocol version, token length
_VIEW_HEAD = struct.Struct("<QBBq")  # base, dtype code, ndim, offset
_DATA_HEAD = struct.Struct("<BBBxQ")  # dtype code, codec, ndim, payload length before encoding
_ERROR_HEAD = struct.Struct("<Hq")  # error kind, instruction index (-1: none)
_PREVIEW_TAIL = struct.Struct("<IIB")  # target rows, target columns, reduction


class ProtocolError(ValueError):
    """Input that does not follow the protocol; the connection that sent it is closed."""


class Kind(enum.IntEnum):
    """What a frame carries."""

    EXECUTE = 1  # client: a batch in the bytecode wire format; no answer
    FETCH = 2  # client: a view; answered with DATA
    PREVIEW = 3  # client: a view, a target shape and a reduction; answered with DATA
    SYNC = 4  # client: answered with OK once every earlier batch has run
    CANCEL = 5  # client: drop queued batches and end the session
    BYE = 6  # client: end the session; answered with OK
    WELCOME = 32  # server: the session id and the server's limits
    DATA = 33  # server: an array
    OK = 34  # server: the request succeeded
    ERROR = 35  # server: a batch or request failed
    HEARTBEAT = 36  # server: still working on a request
    NOTES = 37  # server: floating-point notes of batches that ran, just before an answer


CLIENT_KINDS = frozenset({Kind.EXECUTE, Kind.FETCH, Kind.PREVIEW, Kind.SYNC, Kind.CANCEL, Kind.BYE})
SERVER_KINDS = frozenset({Kind.WELCOME, Kind.DATA, Kind.OK, Kind.ERROR, Kind.HEARTBEAT, Kind.NOTES})
WATCH_FLAGS = 0xF  # an EXECUTE frame's flags: the conditions the client warns about (fp_signals bits)
REQUEST_KINDS = frozenset({Kind.FETCH, Kind.PREVIEW, Kind.SYNC, Kind.BYE})


class Codec(enum.IntEnum):
    """How an array's bytes are encoded in a DATA frame."""

    RAW = 0
    ZSTD = 1  # zstd level 1 (docs/decisions.md: measured against lz4 and byte shuffling)


class Reduction(enum.IntEnum):
    """How :func:`shoal.preview` shrinks an array."""

    MEAN = 0
    STRIDE = 1
    MAX = 2


class ErrorKind(enum.IntEnum):
    """Why the server answered ERROR."""

    ENGINE = 1  # a batch failed while running
    REJECTED = 2  # a batch or request failed verification or a limit
    INTERNAL = 3
    MEMORY = 4  # a batch needed more memory than the server grants the client or has


@dataclass(frozen=True)
class Limits:
    """Sizes either side accepts before allocating anything for them."""

    max_frame_bytes: int = 1 << 34  # 16 GiB: one batch with its data, or one fetched array
    max_ndim: int = 64
    wire: WireLimits = WIRE_DEFAULTS


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class FrameHeader:
    kind: Kind
    flags: int
    sequence: int
    length: int


def encode_header(kind: Kind, sequence: int, length: int, flags: int = 0) -> bytes:
    return FRAME_HEADER.pack(FRAME_MAGIC, int(kind), flags, sequence, length)


def decode_header(raw: bytes, allowed: frozenset[Kind], limits: Limits) -> FrameHeader:
    """The header in ``raw`` (24 bytes), checked for magic, kind and length."""
    magic, kind, flags, sequence, length = FRAME_HEADER.unpack(raw)
    if magic != FRAME_MAGIC:
        raise ProtocolError(f"bad frame magic {magic!r}")
    if kind not in allowed:
        raise ProtocolError(f"unexpected frame kind {kind}")
    if length > limits.max_frame_bytes:
        raise ProtocolError(f"frame of {length} bytes is larger than the limit of {limits.max_frame_bytes}")
    return FrameHeader(Kind(kind), flags, sequence, length)


def encode_preamble(token: bytes, session: bytes) -> bytes:
    """What a client sends first: magic, version, its token and the session it resumes (or zeros)."""
    if not MIN_TOKEN_BYTES <= len(token) <= MAX_TOKEN_BYTES:
        raise ValueError(f"a token has {MIN_TOKEN_BYTES} to {MAX_TOKEN_BYTES} bytes, got {len(token)}")
    if len(session) != SESSION_ID_BYTES:
        raise ValueError("a session id has 16 bytes")
    return PREAMBLE_HEADER.pack(PREAMBLE_MAGIC, PROTOCOL_VERSION, len(token)) + token + session


def decode_preamble_header(raw: bytes) -> int:
    """The token length announced by a preamble's first 16 bytes."""
    magic, version, token_length = PREAMBLE_HEADER.unpack(raw)
    if magic != PREAMBLE_MAGIC:
        raise ProtocolError("not a Shoal proxy client")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version} is not {PROTOCOL_VERSION}")
    if not MIN_TOKEN_BYTES <= token_length <= MAX_TOKEN_BYTES:
        raise ProtocolError(f"token length {token_length} out of range")
    return token_length


# ------------------------------------------------------------------------- payloads


def _reader(payload: bytes | memoryview, limits: Limits) -> Reader:
    return Reader(memoryview(payload), limits.wire)


def _finish(reader: Reader, what: str) -> None:
    if reader.remaining:
        raise ProtocolError(f"{what}: {reader.remaining} bytes after the end")


def _joined(writer: Writer) -> bytes:
    return b"".join(bytes(chunk) for chunk in writer.chunks)


def _write_view(writer: Writer, view: View) -> None:
    writer.raw(_VIEW_HEAD.pack(view.base, dtype_code(view.dtype), view.ndim, view.offset))
    for n in view.shape:
        writer.u64(n, "shape")
    for stride in view.strides:
        writer.i64(stride, "stride")


def _read_view(reader: Reader, limits: Limits) -> View:
    base, code, ndim, offset = reader.unpack(_VIEW_HEAD, "view")
    if ndim > limits.max_ndim:
        raise ProtocolError(f"view of {ndim} dimensions is above the limit of {limits.max_ndim}")
    dtype = dtype_from_code(code)
    shape = tuple(reader.u64("shape") for _ in range(ndim))
    strides = tuple(struct.unpack("<q", reader.take(8, "stride"))[0] for _ in range(ndim))
    return View(base, dtype, offset, shape, strides)


def _guarded(function):
    """Turn the codec's errors into :class:`ProtocolError`."""

    def decode(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except BytecodeError as error:
            raise ProtocolError(str(error)) from None

    decode.__name__ = function.__name__
    decode.__doc__ = function.__doc__
    return decode


def client_fetch(view: View, codecs: tuple[Codec, ...]) -> bytes:
    """A FETCH payload: the view and the codecs the client reads."""
    writer = Writer(DEFAULT_LIMITS.wire)
    _write_view(writer, view)
    writer.u8(sum(1 << codec for codec in codecs), "codecs")
    return _joined(writer)


@_guarded
def server_fetch(payload: bytes | memoryview, limits: Limits) -> tuple[View, frozenset[Codec]]:
    reader = _reader(payload, limits)
    view = _read_view(reader, limits)
    mask = reader.u8("codecs")
    _finish(reader, "fetch")
    return view, frozenset(codec for codec in Codec if mask & (1 << codec))


def client_preview(view: View, shape: tuple[int, int], reduction: Reduction, codecs: tuple[Codec, ...]) -> bytes:
    writer = Writer(DEFAULT_LIMITS.wire)
    _write_view(writer, view)
    writer.u8(sum(1 << codec for codec in codecs), "codecs")
    writer.raw(_PREVIEW_TAIL.pack(shape[0], shape[1], int(reduction)))
    return _joined(writer)


@_guarded
def server_preview(payload: bytes | memoryview, limits: Limits) -> tuple[View, frozenset[Codec], tuple[int, int], Reduction]:
    reader = _reader(payload, limits)
    view = _read_view(reader, limits)
    mask = reader.u8("codecs")
    rows, columns, reduction = reader.unpack(_PREVIEW_TAIL, "preview")
    _finish(reader, "preview")
    if reduction not in Reduction._value2member_map_:
        raise ProtocolError(f"unknown reduction {reduction}")
    if rows < 1 or columns < 1:
        raise ProtocolError("a preview needs at least one row and one column")
    return view, frozenset(codec for codec in Codec if mask & (1 << codec)), (rows, columns), Reduction(reduction)


def server_data(dtype: np.dtype, shape: tuple[int, ...], codec: Codec, raw_length: int) -> bytes:
    """The head of a DATA payload; the encoded bytes follow it."""
    writer = Writer(DEFAULT_LIMITS.wire)
    writer.raw(_DATA_HEAD.pack(dtype_code(dtype), int(codec), len(shape), raw_length))
    for n in shape:
        writer.u64(n, "shape")
    writer.pad_to(DATA_ALIGNMENT)
    return _joined(writer)


@dataclass(frozen=True)
class DataHead:
    dtype: np.dtype
    shape: tuple[int, ...]
    codec: Codec
    raw_length: int
    body: memoryview


@_guarded
def client_data(payload: bytes | memoryview, limits: Limits) -> DataHead:
    reader = _reader(payload, limits)
    code, codec, ndim, raw_length = reader.unpack(_DATA_HEAD, "data")
    if ndim > limits.max_ndim:
        raise ProtocolError(f"array of {ndim} dimensions is above the limit of {limits.max_ndim}")
    if codec not in Codec._value2member_map_:
        raise ProtocolError(f"unknown codec {codec}")
    dtype = dtype_from_code(code)
    shape = tuple(reader.u64("shape") for _ in range(ndim))
    expected = dtype.itemsize
    for n in shape:
        expected *= n
    if expected != raw_length or raw_length > limits.max_frame_bytes:
        raise ProtocolError(f"array of shape {shape} and dtype {dtype} cannot hold {raw_length} bytes")
    reader.skip_padding(DATA_ALIGNMENT, "array padding")
    body = reader.take(reader.remaining, "array bytes")
    if codec == Codec.RAW and len(body) != raw_length:
        raise ProtocolError(f"raw array of {raw_length} bytes arrived with {len(body)}")
    return DataHead(dtype, shape, Codec(codec), raw_length, body)


def server_error(kind: ErrorKind, message: str, remote_traceback: str, instruction: int = -1) -> bytes:
    writer = Writer(DEFAULT_LIMITS.wire)
    writer.raw(_ERROR_HEAD.pack(int(kind), instruction))
    writer.text(message[:MAX_TEXT_CHARACTERS], "message")
    writer.text(remote_traceback[-MAX_TEXT_CHARACTERS:], "traceback")
    return _joined(writer)


@dataclass(frozen=True)
class RemoteError:
    kind: ErrorKind
    instruction: int
    message: str
    traceback: str


@_guarded
def client_error(payload: bytes | memoryview, limits: Limits) -> RemoteError:
    reader = _reader(payload, limits)
    kind, instruction = reader.unpack(_ERROR_HEAD, "error")
    message = reader.text("message")
    remote_traceback = reader.text("traceback")
    _finish(reader, "error")
    if kind not in ErrorKind._value2member_map_:
        raise ProtocolError(f"unknown error kind {kind}")
    return RemoteError(ErrorKind(kind), instruction, message, remote_traceback)


def server_notes(batches: list[tuple[int, bytes]]) -> bytes:
    """A NOTES payload: per batch, its EXECUTE frame's sequence number and its notes
    (:mod:`shoal.engine.fp_notes` text), as u64 sequence, u32 length, the text."""
    return b"".join(struct.pack("<QI", sequence, len(text)) + text for sequence, text in batches)


@_guarded
def client_notes(payload: bytes | memoryview, limits: Limits) -> list[tuple[int, memoryview]]:
    """The (batch sequence, notes text) pairs of a NOTES payload (the texts are checked
    against their batches by :func:`shoal.engine.fp_notes.decode`)."""
    reader = _reader(payload, limits)
    batches = []
    while reader.remaining:
        sequence = reader.u64("notes batch")
        batches.append((sequence, reader.take(reader.u32("notes length"), "notes")))
    return batches


def server_welcome(session: bytes, resumed: bool, received: int, limits: Limits) -> bytes:
    """The session id, whether it was resumed, the last client frame received, the frame limit."""
    return session + struct.pack("<BQQ", int(resumed), received, limits.max_frame_bytes)


@_guarded
def client_welcome(payload: bytes | memoryview) -> tuple[bytes, bool, int, int]:
    if len(payload) != SESSION_ID_BYTES + 17:
        raise ProtocolError("malformed welcome")
    session = bytes(payload[:SESSION_ID_BYTES])
    resumed, received, max_frame = struct.unpack_from("<BQQ", payload, SESSION_ID_BYTES)
    return session, bool(resumed), received, max_frame
