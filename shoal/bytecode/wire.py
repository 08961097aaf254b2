"""The wire format of a batch: versioned, little-endian, no pickle (layout in docs/bytecode.md).

``dumps(batch)`` encodes a :class:`Batch` as bytes; ``loads(data)`` decodes them. Decoding trusts
nothing: every count and length is checked against the bytes that remain and against
:class:`WireLimits`, and any malformed message raises :class:`BytecodeError`. Decoding is
structural only; run :func:`shoal.bytecode.verify` on the result before executing it.

Data arrays are decoded without copying: they are views of ``data`` (read-only when ``data`` is
``bytes``). Keep a writable buffer unchanged while the batch is in use.
"""

from __future__ import annotations

import numpy as np

from shoal.bytecode.codec import DEFAULT_LIMITS, SCALAR_TAGS, Reader, WireLimits, Writer
from shoal.bytecode.dtypes import dtype_code
from shoal.bytecode.errors import BytecodeError
from shoal.bytecode.ir import BaseDecl, Batch, Const, Instruction, Operand, View
from shoal.bytecode.opcodes import BY_CODE, BY_NAME

MAGIC = b"SHBC"
FORMAT_VERSION = 1
HEADER_SIZE = 32
DATA_ALIGNMENT = 16

_OPERAND_VIEW = 0
_OPERAND_CONST = 1

__all__ = [
    "DEFAULT_LIMITS",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "MAGIC",
    "WireLimits",
    "dumps",
    "loads",
    "message_length",
]


def dumps(batch: Batch, *, limits: WireLimits = DEFAULT_LIMITS) -> bytes:
    """Encode ``batch`` as bytes that :func:`loads` with the same ``limits`` accepts."""
    if not isinstance(batch, Batch):
        raise TypeError(f"dumps expects a Batch, got {type(batch).__name__}")
    _check_counts(batch, limits)
    body = Writer(limits)
    for index, decl in enumerate(batch.bases):
        _write_base(body, decl, f"base declaration {index}")
    for index, instruction in enumerate(batch.instructions):
        _write_instruction(body, instruction, f"instruction {index} ({instruction.op})")
    total_data = 0
    for base, array in batch.data.items():
        total_data += _write_data(body, base, array, limits)
        if total_data > limits.max_data_bytes:
            raise BytecodeError(
                f"data arrays total more than max_data_bytes={limits.max_data_bytes} bytes"
            )
    header = Writer(limits)
    header.raw(MAGIC)
    header.u16(FORMAT_VERSION, "format version")
    header.u16(0, "flags")
    header.u64(HEADER_SIZE + body.size, "message length")
    header.u32(len(batch.bases), "number of base declarations")
    header.u32(len(batch.instructions), "number of instructions")
    header.u32(len(batch.data), "number of data arrays")
    header.u32(0, "reserved")
    message = HEADER_SIZE + body.size
    if message > limits.max_message_bytes:
        raise BytecodeError(
            f"message of {message} bytes exceeds max_message_bytes={limits.max_message_bytes}"
        )
    return b"".join([*header.chunks, *body.chunks])


def loads(data: bytes | bytearray | memoryview, *, limits: WireLimits = DEFAULT_LIMITS) -> Batch:
    """Decode a message produced by :func:`dumps`; :class:`BytecodeError` if it is malformed."""
    buffer = _byte_view(data)
    length = message_length(buffer[:HEADER_SIZE], limits=limits)
    if length != len(buffer):
        raise BytecodeError(f"message header says {length} bytes but {len(buffer)} were given")
    reader = Reader(buffer, limits)
    reader.take(16, "header")
    nbases = reader.count("number of base declarations", limits.max_bases, "max_bases")
    ninstructions = reader.count(
        "number of instructions", limits.max_instructions, "max_instructions"
    )
    ndata = reader.count("number of data arrays", limits.max_bases, "max_bases")
    if reader.u32("reserved header field") != 0:
        raise BytecodeError("reserved header field at byte 28 must be zero")
    batch = Batch()
    for index in range(nbases):
        batch.bases.append(_read_base(reader, f"base declaration {index}"))
    for index in range(ninstructions):
        batch.instructions.append(_read_instruction(reader, index))
    total_data = 0
    for index in range(ndata):
        base, array = _read_data(reader, f"data array {index}")
        if base in batch.data:
            raise BytecodeError(f"data array {index}: base {base} carries data twice")
        total_data += array.nbytes
        if total_data > limits.max_data_bytes:
            raise BytecodeError(
                f"data arrays total more than max_data_bytes={limits.max_data_bytes} bytes"
            )
        batch.data[base] = array
    if reader.remaining:
        raise BytecodeError(f"{reader.remaining} unexpected bytes after the end at byte {reader.pos}")
    return batch


def message_length(prefix: bytes | bytearray | memoryview, *, limits: WireLimits = DEFAULT_LIMITS) -> int:
    """The total length of the message that starts with ``prefix`` (at least :data:`HEADER_SIZE`
    bytes), after checking its magic, version and flags; for framing on a stream."""
    reader = Reader(_byte_view(prefix), limits)
    if bytes(reader.take(4, "magic")) != MAGIC:
        raise BytecodeError(f"not a Shoal bytecode message: the magic is not {MAGIC!r}")
    version = reader.u16("format version")
    if version != FORMAT_VERSION:
        raise BytecodeError(
            f"unsupported bytecode format version {version}; this build reads {FORMAT_VERSION}"
        )
    flags = reader.u16("flags")
    if flags != 0:
        raise BytecodeError(f"unknown header flags {flags:#06x}")
    length = reader.u64("message length")
    if length > limits.max_message_bytes:
        raise BytecodeError(
            f"message of {length} bytes exceeds max_message_bytes={limits.max_message_bytes}"
        )
    if length < HEADER_SIZE:
        raise BytecodeError(f"message length {length} is shorter than the {HEADER_SIZE}-byte header")
    return length


def _byte_view(data: bytes | bytearray | memoryview) -> memoryview:
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(f"expected a bytes-like object, got {type(data).__name__}") from None
    if not view.c_contiguous:
        raise BytecodeError("the message buffer must be contiguous")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def _check_counts(batch: Batch, limits: WireLimits) -> None:
    for what, count, limit, name in (
        ("base declarations", len(batch.bases), limits.max_bases, "max_bases"),
        ("instructions", len(batch.instructions), limits.max_instructions, "max_instructions"),
        ("data arrays", len(batch.data), limits.max_bases, "max_bases"),
    ):
        if count > limit:
            raise BytecodeError(f"batch has {count} {what}, above the limit {name}={limit}")


def _write_base(writer: Writer, decl: BaseDecl, what: str) -> None:
    if not isinstance(decl, BaseDecl):
        raise BytecodeError(f"{what}: expected a BaseDecl, got {type(decl).__name__}")
    writer.u64(decl.id, f"{what} id")
    writer.u8(_code(decl.dtype, what), f"{what} dtype")
    writer.u64(decl.size, f"{what} size")
    if decl.nbytes > writer.limits.max_base_bytes:
        raise BytecodeError(
            f"{what}: base {decl.id} of {decl.nbytes} bytes exceeds "
            f"max_base_bytes={writer.limits.max_base_bytes}"
        )


def _read_base(reader: Reader, what: str) -> BaseDecl:
    base = reader.u64(f"{what} id")
    dtype = reader.dtype(f"{what} dtype")
    size = reader.u64(f"{what} size")
    if size * dtype.itemsize > reader.limits.max_base_bytes:
        raise BytecodeError(
            f"{what}: base {base} of {size * dtype.itemsize} bytes exceeds "
            f"max_base_bytes={reader.limits.max_base_bytes}"
        )
    return BaseDecl(base, dtype, size)


def _write_view(writer: Writer, view: View, what: str) -> None:
    if not isinstance(view, View):
        raise BytecodeError(f"{what}: expected a View, got {type(view).__name__}")
    if len(view.shape) != len(view.strides):
        raise BytecodeError(
            f"{what}: shape {view.shape} and strides {view.strides} differ in length"
        )
    if len(view.shape) > writer.limits.max_ndim:
        raise BytecodeError(f"{what}: {len(view.shape)} dimensions exceed max_ndim={writer.limits.max_ndim}")
    writer.u64(view.base, f"{what} base")
    writer.u8(_code(view.dtype, what), f"{what} dtype")
    writer.u8(len(view.shape), f"{what} ndim")
    writer.i64(view.offset, f"{what} offset")
    for extent in view.shape:
        writer.i64(extent, f"{what} shape")
    for stride in view.strides:
        writer.i64(stride, f"{what} strides")


def _read_view(reader: Reader, what: str) -> View:
    base = reader.u64(f"{what} base")
    dtype = reader.dtype(f"{what} dtype")
    start = reader.pos
    ndim = reader.u8(f"{what} ndim")
    if ndim > reader.limits.max_ndim:
        raise BytecodeError(
            f"{what} ndim at byte {start} is {ndim}, above the limit max_ndim={reader.limits.max_ndim}"
        )
    offset = reader.i64(f"{what} offset")
    shape = tuple(reader.i64(f"{what} shape") for _ in range(ndim))
    strides = tuple(reader.i64(f"{what} strides") for _ in range(ndim))
    return View(base, dtype, offset, shape, strides)


def _write_instruction(writer: Writer, instruction: Instruction, what: str) -> None:
    if not isinstance(instruction, Instruction):
        raise BytecodeError(f"{what}: expected an Instruction, got {type(instruction).__name__}")
    entry = BY_NAME.get(instruction.op)
    if entry is None:
        raise BytecodeError(f"{what}: unknown opcode {instruction.op!r}")
    limits = writer.limits
    for kind, items in (("outputs", instruction.outputs), ("inputs", instruction.inputs)):
        if len(items) > limits.max_operands:
            raise BytecodeError(f"{what}: {len(items)} {kind} exceed max_operands={limits.max_operands}")
    if len(instruction.attrs) > limits.max_attrs:
        raise BytecodeError(f"{what}: {len(instruction.attrs)} attributes exceed max_attrs={limits.max_attrs}")
    writer.u16(entry.code, f"{what} opcode")
    writer.u16(len(instruction.outputs), f"{what} output count")
    writer.u16(len(instruction.inputs), f"{what} input count")
    writer.u16(len(instruction.attrs), f"{what} attribute count")
    for position, view in enumerate(instruction.outputs):
        _write_view(writer, view, f"{what} output {position}")
    for position, operand in enumerate(instruction.inputs):
        _write_operand(writer, operand, f"{what} input {position}")
    for key, value in instruction.attrs:
        if not isinstance(key, str):
            raise BytecodeError(f"{what}: attribute name {key!r} is not a str")
        writer.text(key, f"{what} attribute name")
        writer.value(value, f"{what} attribute {key!r}")


def _read_instruction(reader: Reader, index: int) -> Instruction:
    what = f"instruction {index}"
    start = reader.pos
    code = reader.u16(f"{what} opcode")
    entry = BY_CODE.get(code)
    if entry is None:
        raise BytecodeError(f"{what} at byte {start}: unknown opcode code {code}")
    what = f"{what} ({entry.name})"
    limits = reader.limits
    nout = reader.u16(f"{what} output count")
    nin = reader.u16(f"{what} input count")
    nattrs = reader.u16(f"{what} attribute count")
    if max(nout, nin) > limits.max_operands:
        raise BytecodeError(f"{what}: {max(nout, nin)} operands exceed max_operands={limits.max_operands}")
    if nattrs > limits.max_attrs:
        raise BytecodeError(f"{what}: {nattrs} attributes exceed max_attrs={limits.max_attrs}")
    outputs = tuple(_read_view(reader, f"{what} output {i}") for i in range(nout))
    inputs = tuple(_read_operand(reader, f"{what} input {i}") for i in range(nin))
    attrs = []
    for _ in range(nattrs):
        key = reader.text(f"{what} attribute name")
        attrs.append((key, reader.value(f"{what} attribute {key!r}")))
    return Instruction(entry.name, outputs, inputs, tuple(attrs))


def _write_operand(writer: Writer, operand: Operand, what: str) -> None:
    if isinstance(operand, View):
        writer.u8(_OPERAND_VIEW, what)
        _write_view(writer, operand, what)
    elif isinstance(operand, Const):
        value = operand.value
        if not isinstance(value, bool | int | float | complex | np.generic):
            raise BytecodeError(f"{what}: a constant must be a scalar, got {type(value).__name__}")
        writer.u8(_OPERAND_CONST, what)
        writer.value(value, f"{what} constant")
    else:
        raise BytecodeError(f"{what}: expected a View or a Const, got {type(operand).__name__}")


def _read_operand(reader: Reader, what: str) -> Operand:
    start = reader.pos
    tag = reader.u8(what)
    if tag == _OPERAND_VIEW:
        return _read_view(reader, what)
    if tag != _OPERAND_CONST:
        raise BytecodeError(f"{what} at byte {start}: unknown operand tag {tag:#04x}")
    value_start = reader.pos
    if reader.remaining and reader.buffer[value_start] not in SCALAR_TAGS:
        raise BytecodeError(f"{what} at byte {value_start}: a constant must be a scalar")
    return Const(reader.value(f"{what} constant"))


def _write_data(writer: Writer, base: int, array: np.ndarray, limits: WireLimits) -> int:
    what = f"data for base {base}"
    if not isinstance(array, np.ndarray):
        raise BytecodeError(f"{what}: expected an ndarray, got {type(array).__name__}")
    if array.ndim != 1:
        raise BytecodeError(f"{what}: expected a 1-D array, got shape {array.shape}")
    code = _code(array.dtype, what)
    writer.u64(base, f"{what} base id")
    writer.u8(code, f"{what} dtype")
    writer.u64(array.size, f"{what} element count")
    writer.pad_to(DATA_ALIGNMENT)
    contiguous = np.ascontiguousarray(array)
    writer.raw(memoryview(contiguous.view(np.uint8)))
    return contiguous.nbytes


def _read_data(reader: Reader, what: str) -> tuple[int, np.ndarray]:
    base = reader.u64(f"{what} base id")
    dtype = reader.dtype(f"{what} dtype")
    count = reader.u64(f"{what} element count")
    reader.skip_padding(DATA_ALIGNMENT, f"{what} padding")
    nbytes = count * dtype.itemsize
    if nbytes > reader.limits.max_data_bytes:
        raise BytecodeError(
            f"{what}: {nbytes} bytes exceed max_data_bytes={reader.limits.max_data_bytes}"
        )
    start = reader.pos
    reader.take(nbytes, f"{what} contents")
    return base, np.frombuffer(reader.buffer, dtype=dtype, count=count, offset=start)


def _code(dtype: np.dtype, what: str) -> int:
    try:
        return dtype_code(dtype)
    except BytecodeError as error:
        raise BytecodeError(f"{what}: {error}") from None
