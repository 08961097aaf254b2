"""Reordering a batch into longer runs of one shape: only instructions independent of the run
move, and the node engine's results stay the reference engine's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.engine.node.plan.reorder import MAX_MOVED, reorder_by_shape


def ops_of(batch):
    return [(i.op, i.outputs[0].shape if i.outputs else None) for i in batch.instructions]


def test_an_independent_instruction_of_another_shape_moves_ahead_of_the_run():
    rec = Recorder()
    big = rec.array(np.ones((3, 4)))
    small = rec.array(np.ones(4))
    a = rec.ufunc("multiply", big, 2.0)
    s = rec.ufunc("square", small)  # independent of the run: moves
    b = rec.ufunc("add", a, s)  # same shape as the run, reads the moved result
    batch = rec.new_batch()
    order = reorder_by_shape(batch).instructions
    assert [i.op for i in order] == ["square", "multiply", "add"]
    assert [i.outputs[0].base for i in order] == [s.base, a.base, b.base]


@pytest.mark.parametrize(
    ("case", "moves"),
    [("independent", True), ("reads the run's output", False), ("writes the run's input", False), ("larger than the run", False)],
)
def test_only_independent_work_no_larger_than_the_run_moves(case, moves):
    rec = Recorder()
    big = rec.array(np.ones((3, 4)))
    small = rec.array(np.ones(4))
    a = rec.ufunc("multiply", big, 2.0)
    if case == "independent":
        rec.ufunc("square", small)
    elif case == "reads the run's output":
        rec.ufunc("negative", rec.index(a, 0))
    elif case == "writes the run's input":
        rec.emit("multiply", (rec.index(big, 1),), (rec.index(big, 1), 3.0))
    else:
        rec.ufunc("square", rec.array(np.ones((4, 4))))
    if case != "larger than the run":
        rec.ufunc("add", a, 1.0)  # the run goes on
    batch = rec.new_batch()
    assert (reorder_by_shape(batch) is not batch) == moves
    if moves:
        assert [i.op for i in reorder_by_shape(batch).instructions] == ["square", "multiply", "add"]


def test_at_most_a_few_instructions_move_ahead_of_one_run():
    rec = Recorder()
    a = rec.ufunc("multiply", rec.array(np.ones((6, 8))), 2.0)
    small = rec.array(np.ones(8))
    for _ in range(MAX_MOVED + 5):
        small = rec.ufunc("add", small, 1.0)
    rec.ufunc("add", a, 1.0)
    order = [i.outputs[0].shape for i in reorder_by_shape(rec.new_batch()).instructions]
    assert order[: MAX_MOVED + 1] == [(8,)] * MAX_MOVED + [(6, 8)]


def test_an_instruction_does_not_move_past_a_release_of_its_base():
    rec = Recorder()
    big = rec.array(np.ones((3, 4)))
    small = rec.array(np.ones(4))
    a = rec.ufunc("multiply", big, 2.0)
    t = rec.ufunc("add", small, 1.0)  # moves
    rec.release(t)
    rec.ufunc("add", a, 1.0)
    order = [i.op for i in reorder_by_shape(rec.new_batch()).instructions]
    assert order == ["add", "multiply", "release", "add"]


def test_a_whole_view_operation_moves_and_the_run_goes_on():
    def program(rec):
        f = rec.array(np.random.default_rng(1).random((3, 5, 6)))
        mask = rec.array(np.random.default_rng(2).random((5, 6)) < 0.5)
        u = rec.ufunc("multiply", f, 3.0)
        v = rec.ufunc("subtract", f, u)
        flipped = rec.empty((3, 5, 6), np.float64)
        index = rec.ufunc("add", rec.array(np.array([2, 0, 1])), 0)  # computed: the gather stays whole
        rec.emit("gather", (flipped,), (f, index), key=(("array", 0),))
        w = rec.where(mask, flipped, v)
        rec.release(u, v, flipped)
        return [w, f]

    stats = run_both(program, block=16).last_stats
    assert stats.kernels == 2 and stats.fused_instructions == 4 and stats.temporaries == 2  # the index, then the run


SHAPES = {"plane": (6, 8), "row": (8,)}


@st.composite
def programs(draw):
    """Interleaved element-wise work over planes and rows of a few arrays, in place and new,
    through overlapping views, with releases and whole-view copies between."""
    steps = draw(st.lists(st.tuples(st.sampled_from(["new", "inplace", "row", "rowinplace", "axis", "release"]), st.integers(0, 2), st.integers(0, 2), st.sampled_from(["add", "multiply", "subtract"])), min_size=4, max_size=24))
    return steps


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_interleavings_match_the_reference(steps):
    def program(rec: Recorder):
        rng = np.random.default_rng(5)
        planes = [rec.array(rng.random((6, 8))) for _ in range(3)]
        rows = [rec.array(rng.random(8)) for _ in range(3)]
        temps = []
        for kind, i, j, op in steps:
            if kind == "new":
                temps.append(rec.ufunc(op, planes[i], rec.index(planes[j], (slice(None), slice(None)))))
                planes[i] = temps[-1]
            elif kind == "inplace":
                target = rec.index(planes[i], (slice(1, None), slice(None)))
                source = rec.index(planes[j], (slice(None, -1), slice(None)))
                rec.emit(op, (target,), (target, source))
            elif kind == "row":
                rows[i] = rec.ufunc(op, rows[j], rec.index(planes[i], 2))
            elif kind == "rowinplace":
                rec.emit(op, (rec.index(planes[i], j),), (rec.index(planes[i], j), rows[j]))
            elif kind == "axis":
                rows[i] = rec.reduce("sum", planes[j], axis=0)
            elif temps and planes[i] is not temps[-1] and rows[i] is not temps[-1] and all(p is not temps[-1] for p in planes):
                rec.release(temps.pop())
        return [*planes, *rows]

    run_both(program, block=7)
