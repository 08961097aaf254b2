"""The compiled comparison of a batch with the previous one (``_repeat_walk.c``) against the
Python walk it stands in for (``shoal/engine/node/schedule/repeat.py``): random loop bodies, the
same body with new ids, and the body with one fact changed give the same answer, the same
renaming and the same constants both ways; what the C walk does not know goes back to Python."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal import info
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.engine.node.schedule import compiled_checks
from shoal.engine.node.schedule.plan_cache import batch_shape
from shoal.engine.node.schedule.repeat import Previous, repeated_shape

compiled = pytest.mark.skipif(compiled_checks.CHECKS is None, reason="shoal/engine/node/schedule/_repeat_walk.c was not built here")

DTYPES = [np.dtype("f8"), np.dtype("f4"), np.dtype("i8")]
CONSTANTS = [0.5, 2.0, -0.0, 1, 300, True, np.float32(1.5), np.int64(7)]
LIVE = {1: BaseDecl(1, DTYPES[0], 64), 2: BaseDecl(2, DTYPES[1], 64), 3: BaseDecl(3, DTYPES[2], 64)}

operand = st.one_of(
    st.tuples(st.just("view"), st.integers(0, 5), st.sampled_from([0, 8]), st.sampled_from([(4,), (2, 2)])),
    st.tuples(st.just("const"), st.integers(0, len(CONSTANTS) - 1)),
)
step = st.one_of(
    st.tuples(st.sampled_from(["add", "multiply", "subtract"]), st.integers(0, 5), st.lists(operand, min_size=1, max_size=3)),
    st.tuples(st.just("clip"), st.integers(0, 5), st.lists(operand, min_size=3, max_size=3)),
    st.tuples(st.just("sum"), st.integers(0, 5), st.lists(operand, min_size=1, max_size=1)),
    st.tuples(st.just("release"), st.integers(0, 5), st.just([])),
)
MUTATIONS = ["none", "op", "offset", "shape", "dtype", "constant", "constant object", "attribute", "release", "size", "data", "rename"]


def body(steps: list, first: int, mutation: str = "none", where: int = 0) -> Batch:
    """The loop body ``steps`` over bases ``first`` .. ``first + 5`` (base k % 3 + 1 stands for
    a live base from an earlier batch where k is 5), with ``mutation`` applied at step ``where``."""

    def base(k: int) -> int:
        return 1 + first % 3 if k == 5 else first + k

    decls = [BaseDecl(first + k, DTYPES[k % 3], 64 + (mutation == "size" and k == 0)) for k in range(5)]
    data = {first: np.zeros(64 + (mutation == "size"), DTYPES[0])} if mutation == "data" else {}
    instructions = []
    for position, (op, out, operands) in enumerate(steps):
        here = position == where % max(1, len(steps))
        if op == "release":
            released = base(out) if not (here and mutation == "release") else base((out + 1) % 6)
            instructions.append(Instruction("release", (), (), make_attrs(base=released)))
            continue
        values = []
        for spec in operands:
            if spec[0] == "view":
                k = spec[1] if not (here and mutation == "rename") else (spec[1] + 1) % 6
                offset = spec[2] + (8 if here and mutation == "offset" else 0)
                shape = spec[3] if not (here and mutation == "shape") else (3,)
                dtype = DTYPES[spec[1] % 3] if not (here and mutation == "dtype") else DTYPES[(spec[1] + 1) % 3]
                values.append(View(base(k), dtype, offset, shape, (8,) * len(shape)))
            else:
                value = CONSTANTS[spec[1]]
                if here and mutation == "constant":
                    value = CONSTANTS[(spec[1] + 1) % len(CONSTANTS)]
                elif here and mutation == "constant object":
                    value = type(value)(value) if not isinstance(value, np.generic) else value.dtype.type(value.item())
                values.append(Const(value))
        attrs = make_attrs(axis=None if not (here and mutation == "attribute") else 0) if op == "sum" else ()
        op = op if not (here and mutation == "op") else ("divide" if op != "divide" else "add")
        instructions.append(Instruction(op, (View(base(out), DTYPES[out % 3], 0, (4,), (8,)),), tuple(values), attrs))
    return Batch(decls, data, instructions, set())


def both_ways(before: Batch, after: Batch) -> list:
    shape = batch_shape(before, LIVE)
    if shape is None:
        return []
    previous = Previous(before, shape, False, 0)
    answers = []
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not compiled:
                patch.setattr(compiled_checks, "CHECKS", None)
            try:
                got = repeated_shape(after, previous, LIVE)
            except Exception as error:  # the same error both ways
                answers.append(type(error))
                continue
            answers.append(None if got is None else (got.key is shape.key, got.ids, [c.value for c in got.constants]))
    assert answers[0] == answers[1]
    return answers


@compiled
@settings(max_examples=300, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=8), mutation=st.sampled_from(MUTATIONS), where=st.integers(0, 7))
def test_the_compiled_walk_answers_as_the_python_walk(steps, mutation, where):
    both_ways(body(steps, 10), body(steps, 20, mutation, where))


@compiled
def test_an_operand_the_compiled_walk_does_not_know_goes_back_to_python():
    """A release with attributes besides its base and an operand of another class are compared
    by the Python walk, from the start, with the same answer."""
    steps = [("add", 0, [("view", 1, 0, (4,)), ("const", 0)]), ("release", 1, [])]
    before, after = body(steps, 10), body(steps, 20)
    after.instructions[-1] = Instruction("release", (), (), make_attrs(base=21, note=1))
    before.instructions[-1] = Instruction("release", (), (), make_attrs(base=11, note=1))
    both_ways(before, after)
    shape = batch_shape(before, LIVE)
    assert shape is not None and repeated_shape(after, Previous(before, shape, False, 0), LIVE) is not None

    class Scalar:  # a stand-in constant of another class, with the same ``value``
        def __init__(self, value: float) -> None:
            self.value = value

    odd = body(steps, 30)
    first = odd.instructions[0]
    odd.instructions[0] = Instruction(first.op, first.outputs, (first.inputs[0], Scalar(0.5)))  # type: ignore[arg-type]
    answers = both_ways(before, odd)
    assert answers and answers[0] is not None and answers[0][0]  # Python's walk takes its ``value`` as a constant's


@pytest.mark.full
@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler: the walk is not built")
def test_the_install_built_the_compiled_walk():
    assert compiled_checks.CHECKS is not None, "pip install -e . should have compiled shoal/engine/node/schedule/_repeat_walk.c"


def test_info_says_how_replayed_batches_are_compared(monkeypatch):
    assert info.report().count("replayed batches compared by: ") == 1
    assert info.replay_checks().startswith("compiled" if compiled_checks.CHECKS is not None else "Python")
    monkeypatch.setattr(compiled_checks, "CHECKS", None)
    assert info.replay_checks().startswith("Python: the compiled loops were not built")
