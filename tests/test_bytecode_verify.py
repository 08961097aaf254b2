"""The verifier: accepts well-formed batches, rejects each kind of malformed one clearly."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from bytecode_cases import F8, contiguous, every_opcode_batch, executable_examples

from shoal.bytecode import (
    BaseDecl,
    Batch,
    BytecodeError,
    Const,
    Instruction,
    View,
    make_attrs,
    verify,
)
from shoal.bytecode.alike import repeat_models
from shoal.bytecode.opcodes import BY_NAME
from shoal.bytecode.shapes import check_shapes

SQUARE = contiguous(0, F8, (4, 4))
TARGET = contiguous(1, F8, (4, 4))


def valid_batch() -> Batch:
    """b0 carries data; b1 is computed; b0 is released at the end."""
    batch = Batch(bases=[BaseDecl(0, F8, 16), BaseDecl(1, F8, 16)], data={0: np.arange(16.0)})
    batch.instructions += [
        Instruction("add", (TARGET,), (SQUARE, Const(2.0)), ()),
        Instruction("sum", (contiguous(1, F8, ()),), (SQUARE,), make_attrs(axis=None)),
        Instruction("release", (), (), make_attrs(base=0)),
    ]
    return batch


def with_instruction(instruction: Instruction, at: int = 0) -> Batch:
    batch = valid_batch()
    batch.instructions[at] = instruction
    return batch


def appended(instruction: Instruction) -> Batch:
    batch = valid_batch()
    batch.instructions.append(instruction)
    return batch


def add(*inputs, outputs=(TARGET,), attrs=()) -> Instruction:
    return Instruction("add", tuple(outputs), tuple(inputs), attrs)


def test_valid_batches_pass():
    verify(valid_batch(), semantics=True)
    verify(every_opcode_batch(), semantics=False)  # sample operands: structure only
    verify(Batch())


@pytest.mark.parametrize("name, make", executable_examples(), ids=[name for name, _ in executable_examples()])
def test_executable_examples_pass_the_semantic_check(name, make):
    verify(make().batch, semantics=True)


def _mutate_data(**changes) -> Callable[[], Batch]:
    def make() -> Batch:
        batch = valid_batch()
        batch.data.update(changes.get("data", {}))
        batch.bases.extend(changes.get("bases", []))
        return batch

    return make


REJECTIONS: list[tuple[str, Callable[[], Batch], str]] = [
    ("unknown opcode", lambda: with_instruction(Instruction("frobnicate", (), (), ())),
     r"instruction 0: unknown opcode 'frobnicate'"),
    ("too few inputs", lambda: with_instruction(add(SQUARE)),
     r"instruction 0 \(add\): 1 inputs, the opcode takes 2"),
    ("too many outputs", lambda: with_instruction(add(SQUARE, SQUARE, outputs=(TARGET, TARGET))),
     r"instruction 0 \(add\): 2 outputs, the opcode takes 1"),
    ("variadic without inputs", lambda: with_instruction(
        Instruction("gather", (TARGET,), (), make_attrs(key=()))), r"\(gather\): no inputs"),
    ("unknown attribute", lambda: with_instruction(add(SQUARE, SQUARE, attrs=make_attrs(axis=0))),
     r"\(add\): unknown attribute 'axis' \(accepted: dtype\)"),
    ("missing required attribute", lambda: with_instruction(
        Instruction("reduce", (contiguous(1, F8, ()),), (SQUARE,), ())),
     r"instruction 0 \(reduce\): missing required attribute\(s\) ufunc"),
    ("attribute twice", lambda: with_instruction(
        Instruction("sum", (contiguous(1, F8, ()),), (SQUARE,), (("axis", None), ("axis", 0)))),
     r"\(sum\): attribute 'axis' given twice"),
    ("attribute of a list", lambda: with_instruction(
        Instruction("sum", (contiguous(1, F8, (4,)),), (SQUARE,), make_attrs(axis=[0]))),
     r"\(sum\): attribute 'axis': a value of type list cannot be carried"),
    ("attribute of an object dtype", lambda: with_instruction(
        Instruction("sum", (contiguous(1, F8, ()),), (SQUARE,), make_attrs(dtype=np.dtype("O")))),
     r"attribute 'dtype': unsupported dtype"),
    ("attribute not a pair", lambda: with_instruction(add(SQUARE, SQUARE, attrs=(("axis",),))),
     r"is not a \(name, value\) pair"),
    ("constant output", lambda: with_instruction(add(SQUARE, SQUARE, outputs=(Const(1.0),))),
     r"instruction 0 \(add\): output 0 must be a View, got Const"),
    ("input of another type", lambda: with_instruction(add(SQUARE, 2.0)),
     r"\(add\): input 1 must be a View or a Const, got float"),
    ("constant of a string", lambda: with_instruction(add(SQUARE, Const("2"))),
     r"\(add\): input 1: a constant must be a scalar, got str"),
    ("constant of an object scalar", lambda: with_instruction(add(SQUARE, Const(np.str_("x")))),
     r"\(add\): input 1: constant of unsupported dtype"),
    ("not an instruction", lambda: with_instruction("add"),  # type: ignore[arg-type]
     r"instruction 0: expected an Instruction, got str"),
    ("undeclared base", lambda: with_instruction(add(SQUARE, contiguous(9, F8, (4, 4)))),
     r"instruction 0 \(add\): input 1 uses base 9, which is neither declared nor known"),
    ("use after release", lambda: appended(add(SQUARE, SQUARE)),
     r"instruction 3 \(add\): input 0 uses base 0, released by instruction 2"),
    ("release twice", lambda: appended(Instruction("release", (), (), make_attrs(base=0))),
     r"instruction 3 \(release\) uses base 0, released by instruction 2"),
    ("release of an unknown base", lambda: with_instruction(Instruction("release", (), (), make_attrs(base=5))),
     r"instruction 0 \(release\) uses base 5, which is neither declared nor known"),
    ("release of a non-int", lambda: with_instruction(Instruction("release", (), (), make_attrs(base="b0"))),
     r"\(release\): attribute 'base' must be an int"),
    ("view past the end", lambda: with_instruction(add(SQUARE, SQUARE, outputs=(contiguous(1, F8, (4, 5)),))),
     r"\(add\): output 0: bytes \[0, 160\) lie outside base 1 of 128 bytes"),
    ("view before the start", lambda: with_instruction(add(View(0, F8, 0, (4, 4), (32, -8)), SQUARE)),
     r"input 0: bytes \[-24, 104\) lie outside base 0"),
    ("empty view past the end", lambda: with_instruction(add(View(0, F8, 136, (0,), (8,)), SQUARE)),
     r"input 0: bytes \[136, 136\) lie outside"),
    ("object view", lambda: with_instruction(add(View(0, np.dtype("O"), 0, (4,), (8,)), SQUARE)),
     r"input 0: unsupported view dtype"),
    ("ragged strides", lambda: with_instruction(add(View(0, F8, 0, (4, 4), (8,)), SQUARE)),
     r"input 0: shape \(4, 4\) and strides \(8,\) differ in length"),
    ("negative extent", lambda: with_instruction(add(View(0, F8, 0, (-1, 4), (32, 8)), SQUARE)),
     r"input 0: negative extent in shape \(-1, 4\)"),
    ("too many dimensions", lambda: with_instruction(add(View(0, F8, 0, (1,) * 65, (8,) * 65), SQUARE)),
     r"input 0: 65 dimensions, more than 64"),
    ("misaligned offset", lambda: with_instruction(add(View(0, F8, 4, (2,), (8,)), SQUARE)),
     r"input 0: offset 4 and strides \(8,\) must be multiples of 8"),
    ("misaligned stride", lambda: with_instruction(add(View(0, F8, 0, (2,), (12,)), SQUARE)),
     r"must be multiples of 8"),
    ("float offset", lambda: with_instruction(add(View(0, F8, 0.0, (2,), (8,)), SQUARE)),
     r"offset, shape and strides must be ints"),
    ("data of another dtype", _mutate_data(data={0: np.arange(16, dtype=np.float32)}),
     r"data for base 0: array of 16 x float32 does not match the declared 16 x float64"),
    ("data of another size", _mutate_data(data={0: np.arange(15.0)}), r"does not match the declared"),
    ("2-D data", _mutate_data(data={0: np.arange(16.0).reshape(4, 4)}), r"expected a 1-D C-contiguous array"),
    ("strided data", _mutate_data(data={0: np.arange(32.0)[::2]}), r"expected a 1-D C-contiguous array"),
    ("data as a list", _mutate_data(data={0: [0.0] * 16}), r"data for base 0: expected an ndarray"),
    ("data for an undeclared base", _mutate_data(data={7: np.zeros(1)}),
     r"data for base 7: the base is not declared in this batch"),
    ("base declared twice", _mutate_data(bases=[BaseDecl(1, F8, 4)]),
     r"base declaration 2: base 1 declared twice"),
    ("base of object dtype", _mutate_data(bases=[BaseDecl(5, np.dtype("O"), 4)]),
     r"base declaration 2: base 5 has unsupported dtype"),
    ("base of negative size", _mutate_data(bases=[BaseDecl(5, F8, -4)]),
     r"base declaration 2: base 5 has invalid size -4"),
    ("base of negative id", _mutate_data(bases=[BaseDecl(-5, F8, 4)]),
     r"base declaration 2: base id -5 must be a non-negative int"),
    ("enormous base", _mutate_data(bases=[BaseDecl(5, F8, 1 << 60)]), r"base 5 of \d+ bytes exceeds"),
    ("not a base declaration", _mutate_data(bases=[(5, F8, 4)]), r"base declaration 2: expected a BaseDecl"),
]  # fmt: skip


@pytest.mark.parametrize("make, message", [case[1:] for case in REJECTIONS], ids=[case[0] for case in REJECTIONS])
def test_malformed_batches_are_rejected(make, message):
    with pytest.raises(BytecodeError, match=message):
        verify(make())


def test_numpy_integer_fields_cannot_overflow_the_extent_check():
    huge = np.int64(1 << 62)
    batch = with_instruction(add(View(0, F8, np.int64(0), (np.int64(3),), (huge,)), SQUARE))
    with pytest.raises(BytecodeError, match="lie outside base 0"):
        verify(batch)


def test_bytecode_error_is_a_value_error():
    assert issubclass(BytecodeError, ValueError)
    with pytest.raises(BytecodeError, match="expected a Batch"):
        verify([])  # type: ignore[arg-type]


def test_known_bases_may_be_used_but_not_redeclared():
    later = Batch(instructions=[add(SQUARE, Const(1.0))])
    known = {0: BaseDecl(0, F8, 16), 1: BaseDecl(1, F8, 16)}
    verify(later, known)
    with pytest.raises(BytecodeError, match="output 0 uses base 1, which is neither declared nor known"):
        verify(later)
    redeclared = Batch(bases=[BaseDecl(1, F8, 16)])
    with pytest.raises(BytecodeError, match="base 1 is already known from an earlier batch"):
        verify(redeclared, known)
    with pytest.raises(BytecodeError, match="data for base 0: the base is not declared in this batch"):
        verify(Batch(data={0: np.zeros(16)}), known)
    with pytest.raises(BytecodeError, match="known base 3 maps to the declaration of base 1"):
        verify(later, {3: known[1]})


def test_views_may_reinterpret_their_base():
    batch = Batch(bases=[BaseDecl(0, np.dtype("c16"), 4), BaseDecl(1, F8, 4)])
    imaginary = View(0, F8, 8, (4,), (16,))
    shifted = View(1, np.dtype("c16"), 8, (1,), (16,))  # complex aligned like NumPy: 8 bytes
    batch.instructions += [
        Instruction("negative", (contiguous(1, F8, (4,)),), (imaginary,), ()),
        Instruction("copy", (shifted,), (Const(1j),), ()),
        Instruction("copy", (View(1, F8, 0, (4, 1), (8, 12345)),), (Const(0.0),), ()),
    ]
    verify(batch, semantics=True)


SEMANTIC_REJECTIONS = [
    (add(SQUARE, contiguous(0, F8, (4,)), outputs=(contiguous(1, F8, (4, 4, 1)),)),
     r"\(add\): output 0 shape \(4, 4, 1\) is not \(4, 4, 4\), the broadcast of the inputs and outputs"),
    (add(SQUARE, contiguous(0, F8, (4,)), outputs=(contiguous(1, F8, (4,)),)),
     r"\(add\): output 0 shape \(4,\) is not \(4, 4\), the broadcast of the inputs and outputs"),
    (add(contiguous(0, F8, (4, 4)), contiguous(0, F8, (3,))), r"input shapes \(4, 4\), \(3,\) do not broadcast"),
    (Instruction("copy", (contiguous(1, F8, (4,)),), (SQUARE,), ()), r"input shape \(4, 4\) does not broadcast"),
    (Instruction("sum", (contiguous(1, F8, (4,)),), (SQUARE,), make_attrs(axis=2)),
     r"\(sum\): axis 2 is out of bounds for an input of 2 dimensions"),
    (Instruction("sum", (contiguous(1, F8, (4,)),), (SQUARE,), make_attrs(axis=(0, -2))), r"repeats an axis"),
    (Instruction("sum", (contiguous(1, F8, (4,)),), (SQUARE,), make_attrs(axis=0, keepdims=True)),
     r"output shape \(4,\) is not \(1, 4\), the reduction of the input"),
    (Instruction("cumsum", (contiguous(1, F8, (4, 4)),), (SQUARE,), make_attrs(axis=None)),
     r"output shape \(4, 4\) is not \(16,\), the scan of the input"),
    (Instruction("matmul", (TARGET,), (SQUARE, contiguous(0, F8, (3, 4))), ()), r"matmul core dimensions"),
    (Instruction("dot", (TARGET,), (SQUARE, contiguous(0, F8, (4,))), ()), r"output shape \(4, 4\) is not \(4,\)"),
    (Instruction("linspace", (contiguous(1, F8, (5,)),), (), make_attrs(start=0, stop=1, num=4, endpoint=True)),
     r"does not hold num=4 elements"),
    (Instruction("eye", (contiguous(1, F8, (16,)),), (), make_attrs(k=0)), r"is not 2-D"),
]  # fmt: skip


@pytest.mark.parametrize("instruction, message", SEMANTIC_REJECTIONS, ids=lambda value: getattr(value, "op", ""))
def test_semantic_check_is_on_by_default(instruction, message):
    batch = with_instruction(instruction)
    verify(batch, semantics=False)
    with pytest.raises(BytecodeError, match=message):
        verify(batch)


SHAPE_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
               ((5, 1, 2, 3), (6, 3, 4)), ((2, 3), (4, 5)), ((), (3,)), ((3,), ()), ((7, 2, 3), (6, 3, 4)),
               ((2, 2, 3), (3,)), ((4,), (2, 4, 5))]  # fmt: skip


@pytest.mark.parametrize("op", ["matmul", "dot"])
@pytest.mark.parametrize("left, right", SHAPE_PAIRS)
def test_linalg_shape_rules_match_numpy(op, left, right):
    a, b = np.ones(left), np.ones(right)
    try:
        expected = getattr(np, op)(a, b).shape
    except ValueError:
        expected = None
    inputs = (contiguous(0, F8, left), contiguous(0, F8, right))
    shape = expected if expected is not None else (1,)
    problem = check_shapes(BY_NAME[op], (contiguous(1, F8, shape),), inputs, {})
    assert (problem is None) == (expected is not None), problem


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (), (-3, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_shape_rule_matches_numpy(axis, keepdims):
    source = np.ones((2, 3, 4))
    expected = np.sum(source, axis=axis, keepdims=keepdims).shape
    attrs = {"axis": axis, "keepdims": keepdims}
    inputs = (contiguous(0, F8, source.shape),)
    assert check_shapes(BY_NAME["sum"], (contiguous(1, F8, expected),), inputs, attrs) is None
    wrong = contiguous(1, F8, (*expected, 1))
    assert check_shapes(BY_NAME["sum"], (wrong,), inputs, attrs) is not None


def _verdict(batch: Batch, alike: list[int] | None = None) -> str | None:
    try:
        verify(batch, alike=alike)
    except BytecodeError as error:
        return str(error)
    return None


def _repeated(batch: Batch) -> Batch:
    """``batch`` with each computing instruction followed by itself over a fresh base of the same
    size for each base it names: a repeat that passes exactly when the instruction does."""
    copies: list[BaseDecl] = []
    instructions: list[Instruction] = []
    declared = {decl.id: decl for decl in batch.bases if isinstance(decl, BaseDecl)}
    fresh = 10**6
    for instruction in batch.instructions:
        instructions.append(instruction)
        if not isinstance(instruction, Instruction) or instruction.op == "release":
            continue  # malformed ones stay single
        mapping: dict[int, int] = {}
        for value in (*instruction.outputs, *instruction.inputs):
            if isinstance(value, View) and value.base in declared and value.base not in mapping:
                mapping[value.base] = fresh
                copies.append(BaseDecl(fresh, declared[value.base].dtype, declared[value.base].size))
                fresh += 1
        renamed = [View(mapping.get(v.base, v.base), v.dtype, v.offset, v.shape, v.strides) if isinstance(v, View) else v for v in instruction.inputs]
        outputs = [View(mapping.get(v.base, v.base), v.dtype, v.offset, v.shape, v.strides) if isinstance(v, View) else v for v in instruction.outputs]
        instructions.append(Instruction(instruction.op, tuple(outputs), tuple(renamed), instruction.attrs))
    return Batch(bases=[*batch.bases, *copies], instructions=instructions, data=batch.data)


@pytest.mark.parametrize("make", [valid_batch, every_opcode_batch, *(make for _, make, _ in REJECTIONS)], ids=["valid", "every opcode", *(name for name, _, _ in REJECTIONS)])
def test_instructions_verified_as_repeats_get_full_verifications_verdict(make: Callable[[], Batch]) -> None:
    """An instruction named as a repeat of an earlier one is compared with it instead of checked
    in full where that decides its verdict: the verdict and message never change, whichever
    earlier instruction the hints name."""
    batch = make()
    for case in (batch, _repeated(batch)):
        count = len(case.instructions)
        expected = _verdict(case)
        for hints in ([index - 1 for index in range(count)], [0] * count, [-1] * count, repeat_models(case.instructions)):
            assert _verdict(case, hints) == expected


def test_repeats_of_a_computation_are_not_checked_again() -> None:
    from importlib import import_module

    verifier = import_module("shoal.bytecode.verify")._Verifier
    batch = _repeated(valid_batch())
    checked: list[int] = []
    original = verifier._instruction
    try:
        verifier._instruction = lambda self, index, instruction: (checked.append(index), original(self, index, instruction))[-1]
        verify(batch, alike=[index - 1 for index in range(len(batch.instructions))])
    finally:
        verifier._instruction = original
    assert 1 not in checked and 0 in checked  # the add's repeat over fresh bases


def test_hints_for_another_number_of_instructions_are_refused() -> None:
    with pytest.raises(ValueError, match="alike names 2 instructions"):
        verify(valid_batch(), alike=[-1, 0])


@pytest.mark.parametrize("target", [2, 3, 9], ids=["released", "smaller", "unknown"])
def test_a_repeat_over_a_base_it_may_not_write_is_rejected_as_in_full(target: int) -> None:
    batch = Batch(bases=[BaseDecl(0, F8, 16), BaseDecl(1, F8, 16), BaseDecl(2, F8, 16), BaseDecl(3, F8, 4)])
    batch.instructions += [
        Instruction("add", (TARGET,), (SQUARE, Const(2.0)), ()),
        Instruction("release", (), (), make_attrs(base=2)),
        Instruction("add", (contiguous(target, F8, (4, 4)),), (SQUARE, Const(3.0)), ()),
    ]
    expected = _verdict(batch)
    assert expected is not None
    assert _verdict(batch, [-1, -1, 0]) == expected


def test_a_repeated_release_releases_as_a_checked_one_does() -> None:
    batch = Batch(bases=[BaseDecl(0, F8, 16), BaseDecl(1, F8, 16), BaseDecl(2, F8, 16)])
    batch.instructions += [
        Instruction("release", (), (), make_attrs(base=0)),
        Instruction("release", (), (), make_attrs(base=1)),
        Instruction("add", (contiguous(2, F8, (4, 4)),), (TARGET, Const(1.0)), ()),
        Instruction("release", (), (), make_attrs(base=1)),
    ]
    expected = _verdict(batch)
    assert expected is not None and "released by instruction 1" in expected
    assert _verdict(batch, [-1, 0, -1, 1]) == expected
    batch.instructions[2:] = [Instruction("release", (), (), make_attrs(base=2))]
    assert _verdict(batch) is None and _verdict(batch, [-1, 0, 1]) is None
