"""Shape, count and attribute rules of the verifier, checked against NumPy itself."""

from __future__ import annotations

import numpy as np
import pytest
from bytecode_cases import F8, contiguous
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shoal.bytecode import (
    BaseDecl,
    Batch,
    BytecodeError,
    Const,
    Instruction,
    VerifyLimits,
    View,
    make_attrs,
    verify,
)
from shoal.bytecode.boundary import VerifyAtExecute, execute_limits
from shoal.bytecode.indexing import IndexKeyError, indexed_shape
from shoal.bytecode.shapes import arange_length

I8 = np.dtype("i8")
_NO_BYTES = np.dtype([])


@st.composite
def index_keys(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    items, arrays = [], []
    for _ in range(draw(st.integers(0, len(shape) + 1))):
        tag = draw(st.sampled_from(["slice", "int", "array", "newaxis", "ellipsis"]))
        if tag == "slice":
            bound = st.one_of(st.none(), st.integers(-6, 6))
            items.append(("slice", draw(bound), draw(bound), draw(st.one_of(st.none(), st.sampled_from([1, 2, -1, -3])))))
        elif tag == "int":
            items.append(("int", draw(st.integers(-5, 5))))
        elif tag == "array":
            items.append(("array", len(arrays)))
            arrays.append(tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=2))))
        else:
            items.append((tag,))
    return shape, tuple(items), arrays


def _numpy_key(items, arrays):
    key = []
    for item in items:
        if item[0] == "slice":
            key.append(slice(*item[1:]))
        elif item[0] == "int":
            key.append(item[1])
        elif item[0] == "array":
            key.append(np.zeros(arrays[item[1]], np.intp))
        else:
            key.append(None if item[0] == "newaxis" else Ellipsis)
    return tuple(key)


@settings(max_examples=300, deadline=None)
@given(index_keys())
def test_indexed_shape_is_numpys(case):
    shape, items, arrays = case
    probe = np.broadcast_to(np.empty((), _NO_BYTES), shape)
    try:
        expected = probe[_numpy_key(items, arrays)].shape
    except IndexError as error:
        expected = None
        value_dependent = arrays and "with size 0" in str(error)  # index 0 into an empty axis
    try:
        got = indexed_shape(shape, items, arrays)
    except IndexKeyError:
        got = None
    if expected is None and got is not None and value_dependent:
        return  # NumPy checks index values when it runs, as the engines do
    assert got == expected


@pytest.mark.parametrize("key, message", [
    ((("slice", 0, 1, 0),), "slice step cannot be zero"),
    ((("array", 3),), "names index array 3"),
    ((("ellipsis",), ("ellipsis",)), "a single ellipsis"),
    ((("int", 4),), "index 4 is out of bounds for axis 0 with size 4"),
    ((("bogus",),), "malformed index item"),
    ((("int", 1.5),), "malformed index item"),
    ("not a tuple", "is not a tuple"),
])  # fmt: skip
def test_malformed_keys_are_rejected(key, message):
    with pytest.raises(IndexKeyError, match=message):
        indexed_shape((4, 4), key, [(2,)])


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.integers(-50, 50), st.floats(-50, 50)),
    st.one_of(st.integers(-50, 50), st.floats(-50, 50)),
    st.one_of(st.integers(-7, 7), st.floats(-7, -0.01), st.floats(0.01, 7)).filter(lambda step: step != 0),
)
@example(0, -5e-324, -2)  # the quotient underflows to +0.0: NumPy makes one element
@example(0, 5e-324, -2)  # ... to -0.0: none
def test_arange_length_is_numpys(start, stop, step):
    try:
        expected = len(np.arange(start, stop, step))
    except ValueError:  # NumPy refuses lengths beyond intp
        return
    assert arange_length(start, stop, step) == expected


def _batch(*instructions: Instruction, sizes=(16, 16, 16)) -> Batch:
    bases = [BaseDecl(0, F8, sizes[0]), BaseDecl(1, F8, sizes[1]), BaseDecl(2, I8, sizes[2])]
    return Batch(bases=bases, instructions=list(instructions))


V4 = contiguous(0, F8, (4,))
OUT4 = contiguous(1, F8, (4,))
INDEX = contiguous(2, I8, (3,))

REJECTIONS = [
    ("lying linspace", Instruction("linspace", (OUT4,), (), make_attrs(start=0.0, stop=1.0, num=1 << 40, endpoint=True)),
     r"instruction 0 \(linspace\): output shape \(4,\) does not hold num=1099511627776 elements"),
    ("arange of no finite length", Instruction("arange", (OUT4,), (), make_attrs(start=0, stop=float("inf"), step=1)),
     r"\(arange\): arange\(0, inf, 1\) has no finite length"),
    ("arange step zero", Instruction("arange", (OUT4,), (), make_attrs(start=0, stop=4, step=0)), r"arange step is zero"),
    ("arange of a string", Instruction("arange", (OUT4,), (), make_attrs(start="0", stop=4, step=1)),
     r"attribute 'start' must be a number"),
    ("fill from an array", Instruction("fill", (OUT4,), (V4,), ()), r"\(fill\): fill takes a scalar"),
    ("reduce by a module function", Instruction("reduce", (contiguous(1, F8, ()),), (V4,), make_attrs(ufunc="load", axis=0)),
     r"\(reduce\): attribute 'ufunc' 'load' is not a binary ufunc"),
    ("reduce by a unary ufunc", Instruction("reduce", (contiguous(1, F8, ()),), (V4,), make_attrs(ufunc="sqrt", axis=0)),
     r"is not a binary ufunc"),
    ("dtype given as text", Instruction("sum", (contiguous(1, F8, ()),), (V4,), make_attrs(dtype="f8")),
     r"\(sum\): attribute 'dtype' must be a dtype"),
    ("keepdims as an int", Instruction("sum", (contiguous(1, F8, (1,)),), (V4,), make_attrs(keepdims=1)),
     r"attribute 'keepdims' must be a bool"),
    ("argmax over an axis tuple", Instruction("argmax", (contiguous(1, I8, ()),), (V4,), make_attrs(axis=(0,))),
     r"\(argmax\): axis \(0,\) must be an int or None"),
    ("reduction of a constant", Instruction("sum", (contiguous(1, F8, ()),), (Const(1.0),), ()),
     r"\(sum\): input 0 must be a view"),
    ("gather of the wrong shape", Instruction("gather", (OUT4,), (V4, INDEX), make_attrs(key=(("array", 0),))),
     r"\(gather\): output shape \(4,\) is not \(3,\), the indexing result"),
    ("gather by a float index", Instruction("gather", (contiguous(1, F8, (4,)),), (V4, V4), make_attrs(key=(("array", 0),))),
     r"\(gather\): input 1 must be an integer index array"),
    ("gather past the last axis", Instruction("gather", (contiguous(1, F8, ()),), (V4,), make_attrs(key=(("int", 9),))),
     r"\(gather\): index 9 is out of bounds for axis 0 with size 4"),
    ("scatter of a value too long", Instruction("scatter", (OUT4,), (V4, INDEX), make_attrs(key=(("array", 0),))),
     r"\(scatter\): value shape \(4,\) does not broadcast to \(3,\)"),
    ("partition beyond the axis", Instruction("partition", (OUT4,), (V4,), make_attrs(kth=4, axis=0)),
     r"\(partition\): kth 4 is out of bounds for an axis of 4"),
    ("sort of an unknown kind", Instruction("sort", (OUT4,), (V4,), make_attrs(axis=0, kind="bogo")),
     r"attribute 'kind' 'bogo' is not a sort kind"),
    ("take_along_axis of another rank", Instruction("take_along_axis", (OUT4,), (V4, contiguous(2, I8, (2, 2))), make_attrs(axis=0)),
     r"index shape \(2, 2\) and input shape \(4,\) differ in dimensions"),
    ("offset beyond 64 bits", Instruction("negative", (OUT4,), (View(0, F8, 1 << 64, (4,), (8,)),), ()),
     r"input 0: offset 18446744073709551616, shape \(4,\) or strides \(8,\) do not fit in 64 bits"),
    ("negative stride reaching before the base", Instruction("negative", (OUT4,), (View(0, F8, 16, (4,), (-8,)),), ()),
     r"input 0: bytes \[-8, 24\) lie outside base 0 of 128 bytes"),
    ("stride-0 input too big for any array", Instruction("sum", (contiguous(1, F8, ()),), (View(0, F8, 0, (1 << 40, 1 << 40), (0, 0)),), ()),
     r"input 0: 1208925819614629174706176 elements of 8 bytes are more than an array can hold"),
    ("output writing an element twice", Instruction("copy", (View(1, F8, 0, (17,), (0,)),), (Const(1.0),), ()),
     r"output 0: 17 elements of 8 bytes cannot be written to base 1 of 128 bytes"),
]  # fmt: skip


@pytest.mark.parametrize("instruction, message", [case[1:] for case in REJECTIONS], ids=[case[0] for case in REJECTIONS])
def test_inconsistent_instructions_are_rejected(instruction, message):
    with pytest.raises(BytecodeError, match=message):
        verify(_batch(instruction))


ACCEPTED = [
    ("reversed view ending at byte 0", Instruction("negative", (OUT4,), (View(0, F8, 24, (4,), (-8,)),), ())),
    ("empty view at the end of its base", Instruction("copy", (View(1, F8, 128, (0,), (8,)),), (Const(1.0),), ())),
    ("empty view with a huge extent", Instruction("copy", (View(1, F8, 0, (0, 1 << 62), (8, 1 << 40)),), (Const(1.0),), ())),
    ("stride-0 input broadcast to the output", Instruction("copy", (contiguous(1, F8, (4, 4)),), (View(0, F8, 0, (4, 4), (0, 8)),), ())),
    ("every element written once, backwards", Instruction("copy", (View(1, F8, 120, (16,), (-8,)),), (Const(1.0),), ())),
    ("arange with a float step", Instruction("arange", (contiguous(1, F8, (7,)),), (), make_attrs(start=0, stop=1, step=0.15))),
    ("sort kind by its first letter", Instruction("sort", (OUT4,), (V4,), make_attrs(axis=0, kind="Q"))),
    ("gather by a scalar index", Instruction("gather", (contiguous(1, F8, ()),), (V4, Const(np.int64(-4))), make_attrs(key=(("array", 0),)))),
]  # fmt: skip


@pytest.mark.parametrize("instruction", [case[1] for case in ACCEPTED], ids=[case[0] for case in ACCEPTED])
def test_consistent_instructions_at_the_edges_are_accepted(instruction):
    verify(_batch(instruction))


def test_limits_count_declared_bytes_live_bytes_and_work():
    known = {5: BaseDecl(5, F8, 1000)}
    batch = _batch(Instruction("negative", (OUT4,), (V4,), ()))
    verify(batch, known, limits=VerifyLimits(max_batch_bytes=384, max_live_bytes=8384, max_work=8))
    with pytest.raises(BytecodeError, match=r"declares bases of 384 bytes, above max_batch_bytes=383"):
        verify(batch, known, limits=VerifyLimits(max_batch_bytes=383))
    with pytest.raises(BytecodeError, match=r"would hold bases of 8384 bytes .* above max_live_bytes=8383"):
        verify(batch, known, limits=VerifyLimits(max_live_bytes=8383))
    with pytest.raises(BytecodeError, match=r"instruction 0 \(negative\): the batch asks for 8 element steps up to here, above max_work=7"):
        verify(batch, known, limits=VerifyLimits(max_work=7))


def test_work_is_only_counted_with_the_shape_rules():
    with pytest.raises(ValueError, match="max_work needs semantics=True"):
        verify(_batch(), semantics=False, limits=VerifyLimits(max_work=1))


@pytest.mark.parametrize("value", [-1, 1.5, True, "8"])
def test_limits_must_be_non_negative_ints(value):
    with pytest.raises(ValueError, match=r"VerifyLimits.max_work must be None or a non-negative int"):
        VerifyLimits(max_work=value)


def test_execute_limits_come_from_the_options_then_the_environment(monkeypatch):
    monkeypatch.delenv("SHOAL_VERIFY_EXECUTE", raising=False)
    assert execute_limits({}, VerifyAtExecute.ON) == VerifyLimits()
    assert execute_limits({}, VerifyAtExecute.OFF) is None
    assert execute_limits({"verify": "OFF"}, VerifyAtExecute.ON) is None
    assert execute_limits({"verify": "on", "max_work": "10", "max_batch_bytes": "7"}, VerifyAtExecute.OFF) == VerifyLimits(
        max_batch_bytes=7, max_work=10
    )
    monkeypatch.setenv("SHOAL_VERIFY_EXECUTE", "off")
    assert execute_limits({}, VerifyAtExecute.ON) is None
    assert execute_limits({"verify": "on"}, VerifyAtExecute.OFF) == VerifyLimits()
    with pytest.raises(ValueError, match="verify must be one of on, off, got 'maybe'"):
        execute_limits({"verify": "maybe"}, VerifyAtExecute.ON)
    with pytest.raises(ValueError, match="max_work must be an integer of at least 0"):
        execute_limits({"verify": "on", "max_work": "-3"}, VerifyAtExecute.ON)
