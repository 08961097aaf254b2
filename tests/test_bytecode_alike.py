"""The ``alike`` hint found from a batch's own instructions (``shoal/bytecode/alike.py``): a loop's
repeated instructions are paired with their first iteration's, which the node engine's
verification then compares them with instead of checking them in full (the verdicts stay full
verification's: ``test_bytecode_verify.py::test_instructions_verified_as_repeats_get_full_verifications_verdict``
runs every rejection with these hints too)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from bytecode_cases import F8, contiguous

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.bytecode.alike import repeat_models
from shoal.bytecode.verify import NO_LIMITS
from shoal.engine.node.schedule.verified import VerifiedShapes

verify_module = importlib.import_module("shoal.bytecode.verify")


def loop(iterations: int) -> Batch:
    """``iterations`` times ``t = a + 1.5; b = t * a; release t`` over fresh ``t`` and ``b``."""
    bases = [BaseDecl(0, F8, 8)]
    instructions = [Instruction("fill", (contiguous(0, F8, (8,)),), (Const(2.0),))]
    for step in range(iterations):
        t, b = 1 + 2 * step, 2 + 2 * step
        bases += [BaseDecl(t, F8, 8), BaseDecl(b, F8, 8)]
        instructions += [
            Instruction("add", (contiguous(t, F8, (8,)),), (contiguous(0, F8, (8,)), Const(1.5 + step))),
            Instruction("multiply", (contiguous(b, F8, (8,)),), (contiguous(t, F8, (8,)), contiguous(0, F8, (8,)))),
            Instruction("release", (), (), (("base", t),)),
        ]
    return Batch(bases=bases, instructions=instructions)


def test_each_iteration_is_paired_with_the_first() -> None:
    assert repeat_models(loop(3).instructions) == [-1, -1, -1, -1, 1, 2, 3, 1, 2, 3]
    assert repeat_models(loop(1).instructions) is None


def test_other_geometry_constant_types_or_attributes_are_not_paired() -> None:
    batch = loop(2)
    add = batch.instructions[4]
    shifted = View(add.outputs[0].base, F8, 8, (7,), (8,))
    variants = [
        Instruction("add", (shifted,), (View(0, F8, 8, (7,), (8,)), Const(1.0))),  # another offset and shape
        Instruction("add", add.outputs, (add.inputs[0], Const(np.float32(1.0)))),  # another constant type
        Instruction("add", add.outputs, add.inputs, (("casting", "unsafe"),)),  # attributes
        Instruction("subtract", add.outputs, add.inputs),
    ]
    for variant in variants:
        assert repeat_models([batch.instructions[1], variant]) is None


@pytest.mark.parametrize(
    "junk",
    [None, "add", Instruction("add", ([1, 2],), ()), Instruction("add", (), (), (("axis", [0]),)), Instruction("add", (object(),), ())],
    ids=["none", "text", "unhashable view", "unhashable attribute", "odd operand"],
)
def test_malformed_instructions_are_never_paired(junk: object) -> None:
    models = repeat_models([junk, junk, *loop(2).instructions])
    assert models is not None and models[:2] == [-1, -1]
    assert repeat_models("not a list") is None


def test_the_node_engines_verification_checks_a_loop_body_once(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[int] = []
    original = verify_module._Verifier._instruction
    monkeypatch.setattr(verify_module._Verifier, "_instruction", lambda self, index, instruction: (checked.append(index), original(self, index, instruction))[-1])
    VerifiedShapes().check(loop(20), None, {}, NO_LIMITS)
    assert checked == [0, 1, 2, 3]
