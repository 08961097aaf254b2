"""The wire format: round trips, limits, and robustness against malformed input."""

from __future__ import annotations

import struct
import tracemalloc

import numpy as np
import pytest
from bytecode_cases import (
    F8,
    contiguous,
    every_opcode_batch,
    executable_examples,
    run_on_reference,
    same_batch,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.bytecode import (
    OPCODES,
    BaseDecl,
    Batch,
    BytecodeError,
    Const,
    Instruction,
    View,
    WireLimits,
    disassemble,
    dumps,
    loads,
    make_attrs,
    verify,
)
from shoal.bytecode.wire import FORMAT_VERSION, HEADER_SIZE, MAGIC, message_length

SUPPORTED = [
    np.dtype(name)
    for name in ("?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16")
]


def round_trip(batch: Batch, **kwargs) -> Batch:
    decoded = loads(dumps(batch, **kwargs), **kwargs)
    assert same_batch(batch, decoded)
    return decoded


def one_instruction(*inputs, attrs=(), op: str = "add") -> Batch:
    batch = Batch(bases=[BaseDecl(0, F8, 4)])
    batch.instructions.append(Instruction(op, (contiguous(0, F8, (4,)),), tuple(inputs), attrs))
    return batch


# ---------------------------------------------------------------- round trips


def test_every_opcode_round_trips():
    batch = every_opcode_batch()
    assert {ins.op for ins in batch.instructions} == {entry.name for entry in OPCODES}
    decoded = round_trip(batch)
    assert decoded.instructions == batch.instructions


def test_empty_batch_round_trips():
    data = dumps(Batch())
    assert len(data) == HEADER_SIZE
    assert loads(data).is_empty()


@pytest.mark.parametrize("dtype", SUPPORTED + [d.newbyteorder(">") for d in SUPPORTED if d.itemsize > 1], ids=str)
def test_every_dtype_round_trips_in_views_data_and_constants(dtype):
    values = np.arange(6).astype(dtype)
    batch = Batch(bases=[BaseDecl(3, dtype, 6)], data={3: values})
    view = contiguous(3, dtype, (2, 3))
    scalar = values[1:2].astype(dtype.newbyteorder("="))[0]
    batch.instructions.append(Instruction("copy", (view,), (Const(scalar),), ()))
    decoded = round_trip(batch)
    assert decoded.bases[0].dtype == dtype
    assert decoded.instructions[0].outputs[0].dtype == dtype
    assert decoded.data[3].dtype == dtype
    np.testing.assert_array_equal(decoded.data[3], values)
    const = decoded.instructions[0].inputs[0].value
    assert type(const) is type(scalar) and const == scalar


def test_unsupported_dtypes_are_rejected():
    for dtype in ("O", "U3", "M8[s]", "g", "V8"):
        batch = Batch(bases=[BaseDecl(0, np.dtype(dtype), 1)])
        with pytest.raises(BytecodeError, match="unsupported dtype"):
            dumps(batch)


WEAK = [True, False, 0, -7, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 3**200, -(5**150), 1.5, -0.0,
        float("inf"), float("nan"), complex(1, -2), complex(float("nan"), 0)]  # fmt: skip
STRONG = [np.bool_(True), np.int8(-3), np.uint64(2**64 - 1), np.int64(-(2**63)), np.float16(0.1),
          np.float32(np.nan), np.float64(-1.25), np.complex64(1 - 2j), np.complex128(3j)]  # fmt: skip


@pytest.mark.parametrize("value", WEAK + STRONG, ids=repr)
def test_constants_keep_their_type_and_value(value):
    decoded = round_trip(one_instruction(contiguous(0, F8, (4,)), Const(value)))
    const = decoded.instructions[0].inputs[1]
    assert type(const.value) is type(value)
    assert const.weak == (not isinstance(value, np.generic))
    assert repr(const.value) == repr(value)
    if isinstance(value, np.generic):
        assert const.value.dtype == value.dtype


def test_nested_attributes_round_trip():
    nested = (1, (2.5, ("deep", (None, (True, (np.dtype("c8"), (2**80, (np.int16(4), (1j,)))))))), ())
    attrs = make_attrs(axis=(0, -1), keepdims=False, dtype=np.dtype(">u4"), ddof=nested)
    decoded = round_trip(one_instruction(contiguous(0, F8, (4,)), attrs=attrs, op="var"))
    assert decoded.instructions[0].attrs == attrs


def test_views_keep_offsets_negative_and_zero_strides():
    odd = View(5, np.dtype("i2"), 6, (3, 0, 2, 1), (-4, 0, 2, 999))
    batch = Batch(bases=[BaseDecl(5, np.dtype("i2"), 64)])
    batch.instructions.append(Instruction("copy", (odd,), (odd,), ()))
    assert round_trip(batch).instructions[0].outputs[0] == odd


def test_data_is_decoded_without_copying_and_aligned():
    data = np.arange(1000, dtype=np.float64)
    batch = Batch(bases=[BaseDecl(9, F8, 1000)], data={9: data})
    message = dumps(batch)
    decoded = loads(message)
    array = decoded.data[9]
    assert not array.flags.owndata and not array.flags.writeable
    assert array.base is not None
    start = message.index(data.tobytes())
    assert start % 16 == 0
    np.testing.assert_array_equal(array, data)


def test_non_contiguous_data_is_written_contiguously():
    data = np.arange(10, dtype=np.int32)[::2]
    batch = Batch(bases=[BaseDecl(1, np.dtype("i4"), 5)], data={1: data})
    decoded = loads(dumps(batch))
    np.testing.assert_array_equal(decoded.data[1], data)


def test_loads_accepts_bytearray_and_memoryview():
    message = dumps(every_opcode_batch())
    for buffer in (bytearray(message), memoryview(message), np.frombuffer(message, np.uint8)):
        assert same_batch(loads(buffer), loads(message))


def test_loads_rejects_non_bytes():
    with pytest.raises(TypeError, match="bytes-like"):
        loads("SHBC")  # type: ignore[arg-type]


@pytest.mark.parametrize("name, make", executable_examples(), ids=[name for name, _ in executable_examples()])
def test_round_tripped_batch_runs_the_same_on_the_reference_engine(name, make):
    build = make()
    verify(build.batch, semantics=True)
    expected = run_on_reference(build.batch, build.outputs)
    actual = run_on_reference(loads(dumps(build.batch)), build.outputs)
    if isinstance(expected, type):
        assert actual is expected
        return
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_every_opcode_has_an_executable_example():
    covered = {name.removesuffix("-weak") for name, _ in executable_examples()}
    assert covered == {entry.name for entry in OPCODES}


# ---------------------------------------------------------------- encoding errors


def test_dumps_rejects_what_it_cannot_encode():
    cases = [
        (one_instruction(Const("text")), "constant must be a scalar"),
        (one_instruction(attrs=(("axis", [0]),), op="sum"), "cannot encode a value of type list"),
        (one_instruction(Const(1 << 5000)), "max_int_bytes"),
        (one_instruction(contiguous(0, F8, (4,), offset=1 << 70)), "cannot be encoded"),
        (Batch(instructions=[Instruction("nope", (), (), ())]), "unknown opcode 'nope'"),
        (Batch(bases=[BaseDecl(-1, F8, 1)]), "id -1 or size 1 cannot be encoded"),
        (Batch(bases=[BaseDecl(0, F8, 1)], data={0: np.zeros((1, 1))}), "1-D"),
        (Batch(bases=[BaseDecl(0, F8, 1)], data={0: [1.0]}), "expected an ndarray"),
        (Batch(instructions=[Instruction("fill", (Const(1.0),), (), ())]), "expected a View"),
        (one_instruction(contiguous(0, F8, (1,) * 65)), "max_ndim"),
        (one_instruction(attrs=(("ufunc", "\ud800"),), op="reduce"), "not valid UTF-8"),
    ]
    for batch, message in cases:
        with pytest.raises(BytecodeError, match=message):
            dumps(batch)


def test_attribute_nesting_limit():
    limits = WireLimits(max_attr_depth=3)
    ok = one_instruction(attrs=(("axis", (((),),)),), op="sum")  # three levels
    ok_message = dumps(ok)
    with pytest.raises(BytecodeError, match="nested deeper than 2"):
        dumps(ok, limits=WireLimits(max_attr_depth=2))
    loads(ok_message, limits=limits)
    with pytest.raises(BytecodeError, match="nested deeper than 2"):
        loads(ok_message, limits=WireLimits(max_attr_depth=2))


@pytest.mark.parametrize(
    "limits, message",
    [
        (WireLimits(max_instructions=1), "max_instructions=1"),
        (WireLimits(max_bases=2), "max_bases=2"),
        (WireLimits(max_attrs=1), "max_attrs=1"),
        (WireLimits(max_operands=1), "max_operands=1"),
        (WireLimits(max_ndim=1), "max_ndim=1"),
        (WireLimits(max_string_bytes=2), "max_string_bytes"),
        (WireLimits(max_data_bytes=8), "max_data_bytes=8"),
        (WireLimits(max_base_bytes=8), "max_base_bytes=8"),
        (WireLimits(max_message_bytes=100), "max_message_bytes=100"),
        (WireLimits(max_int_bytes=8), "max_int_bytes"),
    ],
)
def test_limits_are_enforced_on_both_sides(limits, message):
    batch = Batch(bases=[BaseDecl(i, F8, 16) for i in range(3)], data={0: np.zeros(16)})
    attrs = make_attrs(axis=(0, 1), keepdims=True, dtype=np.dtype("f4"), ddof=1 << 70)
    source = contiguous(0, F8, (4, 4))
    batch.instructions += [
        Instruction("var", (contiguous(1, F8, (1, 1)),), (source,), attrs),
        Instruction("add", (contiguous(2, F8, (4, 4)),), (source, Const(1.0)), ()),
    ]
    message_bytes = dumps(batch)
    with pytest.raises(BytecodeError, match=message):
        loads(message_bytes, limits=limits)
    with pytest.raises(BytecodeError, match=message):
        dumps(batch, limits=limits)


def test_wire_limits_reject_bad_settings():
    with pytest.raises(ValueError, match="max_bases"):
        WireLimits(max_bases=-1)
    with pytest.raises(ValueError, match="max_attr_depth"):
        WireLimits(max_attr_depth=10_000)


# ---------------------------------------------------------------- malformed input


def header(length: int, nbases=0, ninstructions=0, ndata=0, version=FORMAT_VERSION, flags=0) -> bytes:
    return MAGIC + struct.pack("<HHQIIII", version, flags, length, nbases, ninstructions, ndata, 0)


def test_message_length_frames_a_stream():
    message = dumps(every_opcode_batch())
    assert message_length(message[:HEADER_SIZE]) == len(message)
    with pytest.raises(BytecodeError, match="truncated"):
        message_length(message[:10])


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "truncated"),
        (b"XXXX" + bytes(28), "magic"),
        (header(32, version=2), "unsupported bytecode format version 2"),
        (header(32, flags=1), "unknown header flags"),
        (header(33), "header says 33 bytes"),
        (header(31), "shorter than the 32-byte header"),
        (header(1 << 62), "max_message_bytes"),
        (header(32)[:-1] + b"\x01", "reserved header field"),
        (header(32, nbases=1 << 30), "max_bases"),
        (header(32, ninstructions=1 << 30), "max_instructions"),
        (header(32, nbases=1000), "truncated message: base declaration 0 at byte 32"),
        (header(40, ninstructions=1) + struct.pack("<HHHH", 999, 0, 0, 0), "unknown opcode code 999"),
        (header(49, nbases=1) + struct.pack("<QBQ", 0, 0x7F, 1), "unknown dtype code 0x7f"),
        (header(49, nbases=1) + struct.pack("<QBQ", 0, 0x81, 1), "one-byte dtype has no byte order"),
        (header(49, nbases=1) + struct.pack("<QBQ", 0, 12, 1 << 60), "max_base_bytes"),
        (header(40) + b"\0\0\0\0", "header says 40 bytes but 36"),
        (header(33) + b"\0", "1 unexpected bytes after the end"),
        (header(64, ndata=1) + struct.pack("<QBQ", 0, 12, 1) + b"\1" + bytes(6) + bytes(8), "padding"),
        (header(64, ndata=1) + struct.pack("<QBQ", 0, 12, 1 << 40) + bytes(15), "max_data_bytes"),
        (header(64, ndata=1) + struct.pack("<QBQ", 0, 12, 2) + bytes(15), "truncated message: data array 0"),
    ],
)
def test_malformed_messages_are_rejected_clearly(data, message):
    with pytest.raises(BytecodeError, match=message):
        loads(data)


def test_duplicate_data_and_bad_operand_tags_are_rejected():
    batch = Batch(bases=[BaseDecl(0, F8, 1), BaseDecl(1, F8, 1)])
    batch.data.update({0: np.zeros(1), 1: np.ones(1)})
    doubled = bytearray(dumps(batch))
    second = doubled.rindex(struct.pack("<QBQ", 1, 12, 1))
    struct.pack_into("<Q", doubled, second, 0)
    with pytest.raises(BytecodeError, match="base 0 carries data twice"):
        loads(bytes(doubled))
    tagged = bytearray(dumps(one_instruction(Const(1.0), Const(2.0))))
    operand = tagged.index(struct.pack("<Bd", 1, 1.0)[:1] + b"\x05")
    for tag, problem in ((7, "unknown operand tag"), (None, "constant at byte [0-9]+ must be a scalar")):
        broken = bytearray(tagged)
        if tag is None:
            broken[operand + 1] = 0x07  # a str where a scalar belongs
        else:
            broken[operand] = tag
        with pytest.raises(BytecodeError, match=problem):
            loads(bytes(broken))


def _survives(data: bytes) -> None:
    """Only BytecodeError may escape; whatever decodes can be verified and listed."""
    try:
        batch = loads(data)
    except BytecodeError:
        return
    try:
        verify(batch, semantics=True)
    except BytecodeError:
        pass
    assert isinstance(disassemble(batch), str)


def small_batch() -> Batch:
    """A few instructions that use every section and value tag of the format."""
    i4 = np.dtype("i4")
    batch = Batch(bases=[BaseDecl(0, F8, 6), BaseDecl(1, i4, 6), BaseDecl(2, F8, 6)])
    batch.data[0] = np.linspace(0.0, 1.0, 6)
    source, target = contiguous(0, F8, (2, 3)), contiguous(2, F8, (2, 3))
    key = (("slice", 0, None, -1), ("array", 0), ("int", 2**70), ("newaxis",))
    batch.instructions += [
        Instruction("fill", (contiguous(1, i4, (6,)),), (Const(np.int32(-3)),), ()),
        Instruction("add", (target,), (source, Const(complex(1, 2))), ()),
        Instruction("where", (target,), (source, Const(True), Const(-(2**80))), ()),
        Instruction("var", (contiguous(2, F8, ()),), (source,), make_attrs(axis=(0, 1), ddof=1, dtype=F8)),
        Instruction("gather", (target,), (source, contiguous(1, i4, (2,))), make_attrs(key=key)),
        Instruction("reduce", (contiguous(2, F8, (3,)),), (source,), make_attrs(ufunc="add", axis=None)),
        Instruction("release", (), (), make_attrs(base=1)),
    ]
    return batch


@pytest.fixture(scope="module")
def valid_message() -> bytes:
    return dumps(small_batch())


def test_every_truncation_is_rejected(valid_message):
    for end in range(len(valid_message)):
        with pytest.raises(BytecodeError):
            loads(valid_message[:end])


def test_every_single_byte_corruption_is_survived(valid_message):
    for position in range(len(valid_message)):
        for mask in (0x01, 0x80, 0xFF):
            corrupted = bytearray(valid_message)
            corrupted[position] ^= mask
            _survives(bytes(corrupted))


EVERY_OPCODE_MESSAGE = dumps(every_opcode_batch())


@settings(max_examples=300, deadline=None)
@given(flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1, max_size=8))
def test_random_corruptions_are_survived(flips):
    corrupted = bytearray(EVERY_OPCODE_MESSAGE)
    for position, mask in flips:
        corrupted[position % len(corrupted)] ^= mask
    _survives(bytes(corrupted))


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=512), counts=st.tuples(*[st.integers(0, 2**32 - 1)] * 3))
def test_random_bodies_behind_a_valid_header_are_survived(body, counts):
    _survives(header(HEADER_SIZE + len(body), *counts) + body)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=256))
def test_random_bytes_are_survived(data):
    _survives(data)


def test_lying_counts_allocate_nothing_large():
    lies = [
        header(32 + 17, nbases=1) + struct.pack("<QBQ", 0, 12, (1 << 45)),
        header(64, ndata=1) + struct.pack("<QBQ", 0, 12, (1 << 33)) + bytes(15),
        header(32 + 8, ninstructions=1 << 20) + struct.pack("<HHHH", 2, 4096, 4096, 64),
        header(32 + 200, ninstructions=1) + struct.pack("<HHHH", 8, 0, 1, 1) + b"\x01" + bytes(200 - 9),
    ]
    tracemalloc.start()
    try:
        for data in lies:
            _survives(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
