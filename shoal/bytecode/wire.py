"""The wire format of a batch: versioned, little-endian, no pickle (layout in docs/bytecode.md).

``dumps(batch)`` encodes a :class:`Batch` as bytes; ``loads(data)`` decodes them. Decoding trusts
nothing: every count and length is checked against the bytes that remain and against
:class:`WireLimits`, and any malformed message raises :class:`BytecodeError`. Decoding is
structural only; run :func:`shoal.bytecode.verify` on the result before executing it.

Data arrays are decoded without copying: they are views of ``data`` (read-only when ``data`` is
``bytes``). Keep a writable buffer unchanged while the batch is in use.
"""

from __future__ import annotations

import struct

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
_OPERAND_VIEW_TAG = bytes([_OPERAND_VIEW])
_OPERAND_CONST_TAG = bytes([_OPERAND_CONST])
_INSTRUCTION_HEAD = struct.Struct("<HHHH")  # opcode, outputs, inputs, attributes
_BASE = struct.Struct("<QBQ")  # id, dtype code, size in elements
_VIEW_HEAD = struct.Struct("<QBBq")  # base, dtype code, ndim, offset
_DIMS: dict[int, struct.Struct] = {}

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
        _write_base(body, decl, index)
    for index, instruction in enumerate(batch.instructions):
        if not isinstance(instruction, Instruction):
            raise BytecodeError(f"instruction {index}: expected an Instruction, got {type(instruction).__name__}")
        try:
            _write_instruction(body, instruction)
        except BytecodeError as error:
            raise BytecodeError(f"instruction {index} ({instruction.op}): {error}") from None
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
        batch.bases.append(_read_base(reader, index))
    for index in range(ninstructions):
        try:
            batch.instructions.append(_read_instruction(reader))
        except BytecodeError as error:
            separator = " " if str(error).startswith("(") else ": "
            raise BytecodeError(f"instruction {index}{separator}{error}") from None
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


def _write_base(writer: Writer, decl: BaseDecl, index: int) -> None:
    what = f"base declaration {index}"
    if not isinstance(decl, BaseDecl):
        raise BytecodeError(f"{what}: expected a BaseDecl, got {type(decl).__name__}")
    code = _code(decl.dtype, what)
    try:
        writer.raw(_BASE.pack(decl.id, code, decl.size))
    except struct.error as error:
        raise BytecodeError(
            f"{what}: id {decl.id!r} or size {decl.size!r} cannot be encoded ({error})"
        ) from None
    if decl.nbytes > writer.limits.max_base_bytes:
        raise BytecodeError(
            f"{what}: base {decl.id} of {decl.nbytes} bytes exceeds "
            f"max_base_bytes={writer.limits.max_base_bytes}"
        )


def _read_base(reader: Reader, index: int) -> BaseDecl:
    start = reader.pos
    base, code, size = reader.unpack(_BASE, f"base declaration {index}")
    dtype = reader.check_dtype(code, f"base declaration {index} dtype", start + 8)
    if size * dtype.itemsize > reader.limits.max_base_bytes:
        raise BytecodeError(
            f"base declaration {index}: base {base} of {size * dtype.itemsize} bytes exceeds "
            f"max_base_bytes={reader.limits.max_base_bytes}"
        )
    return BaseDecl(base, dtype, size)


def _dims_layout(ndim: int) -> struct.Struct:
    layout = _DIMS.get(ndim)
    if layout is None:
        layout = _DIMS[ndim] = struct.Struct(f"<{2 * ndim}q")
    return layout


def _write_view(writer: Writer, view: View, what: str) -> None:
    if not isinstance(view, View):
        raise BytecodeError(f"{what}: expected a View, got {type(view).__name__}")
    ndim = len(view.shape)
    if ndim != len(view.strides):
        raise BytecodeError(f"{what}: shape {view.shape} and strides {view.strides} differ in length")
    if ndim > writer.limits.max_ndim:
        raise BytecodeError(f"{what}: {ndim} dimensions exceed max_ndim={writer.limits.max_ndim}")
    code = _code(view.dtype, what)
    try:
        writer.raw(_VIEW_HEAD.pack(view.base, code, ndim, view.offset))
        writer.raw(_dims_layout(ndim).pack(*view.shape, *view.strides))
    except struct.error as error:
        raise BytecodeError(
            f"{what}: base {view.base!r}, offset {view.offset!r}, shape {view.shape!r} or "
            f"strides {view.strides!r} cannot be encoded ({error})"
        ) from None


def _read_view(reader: Reader, what: str) -> View:
    start = reader.pos
    base, code, ndim, offset = reader.unpack(_VIEW_HEAD, what)
    dtype = reader.check_dtype(code, what, start)
    if ndim > reader.limits.max_ndim:
        raise BytecodeError(
            f"{what} at byte {start} has {ndim} dimensions, above the limit "
            f"max_ndim={reader.limits.max_ndim}"
        )
    dims = reader.unpack(_dims_layout(ndim), what)
    return View(base, dtype, offset, dims[:ndim], dims[ndim:])


def _write_instruction(writer: Writer, instruction: Instruction) -> None:
    entry = BY_NAME.get(instruction.op)
    if entry is None:
        raise BytecodeError(f"unknown opcode {instruction.op!r}")
    limits = writer.limits
    for kind, items in (("outputs", instruction.outputs), ("inputs", instruction.inputs)):
        if len(items) > limits.max_operands:
            raise BytecodeError(f"{len(items)} {kind} exceed max_operands={limits.max_operands}")
    if len(instruction.attrs) > limits.max_attrs:
        raise BytecodeError(f"{len(instruction.attrs)} attributes exceed max_attrs={limits.max_attrs}")
    writer.raw(
        _INSTRUCTION_HEAD.pack(
            entry.code, len(instruction.outputs), len(instruction.inputs), len(instruction.attrs)
        )
    )
    for view in instruction.outputs:
        _write_view(writer, view, "output")
    for operand in instruction.inputs:
        _write_operand(writer, operand)
    for pair in instruction.attrs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise BytecodeError(f"attribute {pair!r} is not a (name, value) pair")
        key, value = pair
        writer.text(key, "attribute name")
        writer.value(value, f"attribute {key!r}")


def _read_instruction(reader: Reader) -> Instruction:
    start = reader.pos
    code, nout, nin, nattrs = reader.unpack(_INSTRUCTION_HEAD, "instruction header")
    entry = BY_CODE.get(code)
    if entry is None:
        raise BytecodeError(f"unknown opcode code {code} at byte {start}")
    try:
        limits = reader.limits
        if max(nout, nin) > limits.max_operands:
            raise BytecodeError(f"{max(nout, nin)} operands exceed max_operands={limits.max_operands}")
        if nattrs > limits.max_attrs:
            raise BytecodeError(f"{nattrs} attributes exceed max_attrs={limits.max_attrs}")
        outputs = tuple(_read_view(reader, "output view") for _ in range(nout))
        inputs = tuple(_read_operand(reader) for _ in range(nin))
        attrs = []
        for _ in range(nattrs):
            key = reader.text("attribute name")
            attrs.append((key, reader.value(f"attribute {key!r}")))
    except BytecodeError as error:
        raise BytecodeError(f"({entry.name}): {error}") from None
    return Instruction(entry.name, outputs, inputs, tuple(attrs))


def _write_operand(writer: Writer, operand: Operand) -> None:
    if isinstance(operand, View):
        writer.raw(_OPERAND_VIEW_TAG)
        _write_view(writer, operand, "input")
    elif isinstance(operand, Const):
        value = operand.value
        if not isinstance(value, bool | int | float | complex | np.generic):
            raise BytecodeError(f"a constant must be a scalar, got {type(value).__name__}")
        writer.raw(_OPERAND_CONST_TAG)
        writer.value(value, "constant")
    else:
        raise BytecodeError(f"an input must be a View or a Const, got {type(operand).__name__}")


def _read_operand(reader: Reader) -> Operand:
    start = reader.pos
    tag = reader.u8("operand tag")
    if tag == _OPERAND_VIEW:
        return _read_view(reader, "input view")
    if tag != _OPERAND_CONST:
        raise BytecodeError(f"unknown operand tag {tag:#04x} at byte {start}")
    if reader.remaining and reader.buffer[reader.pos] not in SCALAR_TAGS:
        raise BytecodeError(f"the constant at byte {reader.pos} must be a scalar")
    return Const(reader.value("constant"))


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
