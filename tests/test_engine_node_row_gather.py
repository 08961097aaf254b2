"""Gathers of whole rows along the first axis fused row by row: against the reference engine,
and how many kernels they become."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder

import shoal.engine.node.plan.row_gather as row_gather
from shoal.bytecode import View
from shoal.engine.node.plan.plan import Group, WholeOp, plan_batch
from shoal.engine.node.plan.row_gather import RowView

RNG = np.random.default_rng(5)
OPPOSITE = np.array([0, 3, 4, 1, 2, 7, 8, 5, 6])


@pytest.fixture(autouse=True)
def short_rows(monkeypatch):
    """Rows of a few elements fuse too, so small arrays exercise partial and non-aligned blocks."""
    monkeypatch.setattr(row_gather, "ROW_ELEMENTS_MIN", 1)


def gather(rec: Recorder, source: View, index: np.ndarray | View) -> View:
    index_view = index if isinstance(index, View) else rec.array(index)
    out = rec.empty((index_view.shape[0], *source.shape[1:]), source.dtype)
    rec.emit("gather", (out,), (source, index_view), key=(("array", 0),))
    return out


def source_view(rec: Recorder, shape: tuple[int, ...], aligned: bool) -> View:
    """A (rows, ny, nx) float64 view: a whole base, or a strided window into a larger one."""
    if aligned:
        return rec.array(RNG.random(shape))
    padded = rec.array(RNG.random((shape[0] + 2, shape[1] + 3, 2 * shape[2] + 5)))
    return rec.index(padded, (slice(1, 1 + shape[0]), slice(2, 2 + shape[1]), slice(3, 3 + 2 * shape[2], 2)))


def collision(source_shape: tuple[int, ...], index: np.ndarray, aligned: bool):
    """lattice_boltzmann.py's bounce-back: ``where(obstacle, f[index], f - (f - 0.5) / 0.6)``."""

    def program(rec: Recorder):
        f = source_view(rec, source_shape, aligned)
        rows = index.shape[0]
        obstacle = rec.array(RNG.random(source_shape[1:]) < 0.3)
        base = rec.index(f, (slice(0, rows),))
        shifted = rec.ufunc("subtract", base, 0.5)
        relaxed = rec.ufunc("divide", shifted, 0.6)
        collided = rec.ufunc("subtract", base, relaxed)
        bounced = gather(rec, f, index)
        result = rec.where(obstacle, bounced, collided)
        rec.release(shifted, relaxed, collided, bounced)
        return [result]

    return program


def groups(program) -> list[Group | WholeOp]:
    rec = Recorder()
    program(rec)
    return [step for step in plan_batch(rec.batch, rec.known).steps if isinstance(step, (Group, WholeOp))]


def whole_ops(program) -> list[str]:
    """The opcodes that ``program``'s plan runs as whole-view operations."""
    return [step.instruction.op for step in groups(program) if isinstance(step, WholeOp)]


@pytest.mark.parametrize(
    ("shape", "index"),
    [
        ((9, 6, 40), OPPOSITE),  # a permutation
        ((9, 5, 33), np.array([8, 8, 0, 0, 4, 4, 1, 2, 2])),  # repeated rows
        ((9, 4, 30), np.array([-1, -9, 3, -4, 0, 1, 2, 5, 6])),  # negative indices
        ((4, 7, 20), np.array([3, 1, 0])),  # fewer rows than the source
        ((5, 3, 50), np.array([2])),  # one row
    ],
)
@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("block", [7, 100, 1 << 16])
def test_a_row_gather_fuses_into_its_consumers_and_matches_the_reference(shape, index, aligned, block):
    program = collision(shape, index, aligned)
    stats = run_both(program, block=block, exact=True).last_stats
    assert stats.kernels == 1 and stats.whole_ops == 0
    assert stats.temporaries == 4  # the gathered rows are never allocated, nor the collision's steps


def test_a_row_gather_from_a_reversed_view_matches_the_reference():
    def program(rec: Recorder):
        f = rec.index(rec.array(RNG.random((9, 5, 70))), (slice(None, None, -1), slice(None), slice(None, None, -1)))
        bounced = gather(rec, f, OPPOSITE)
        result = rec.ufunc("subtract", bounced, f)
        rec.release(bounced)
        return [result]

    stats = run_both(program, block=60, exact=True).last_stats
    assert stats.kernels == 1 and stats.temporaries == 1


def test_the_lattice_bounce_back_is_one_kernel_and_no_gather():
    steps = groups(collision((9, 6, 40), OPPOSITE, aligned=True))
    assert len(steps) == 1 and isinstance(steps[0], Group)
    copies = [i for i in steps[0].instructions if i.op == "copy"]
    assert len(copies) == 1 and isinstance(copies[0].inputs[0], RowView)
    assert copies[0].inputs[0].rows == tuple(OPPOSITE)


def test_view_blocks_hold_one_row_of_the_gather_each():
    """A block larger than a row must not span two rows: each reads its own source row."""

    def program(rec: Recorder):
        f = rec.array(RNG.random((6, 2, 8)))
        return [rec.ufunc("multiply", gather(rec, f, np.array([5, 0, 4, 1, 3, 2])), 2.0)]

    stats = run_both(program, block=1 << 16, exact=True).last_stats
    assert stats.kernels == 1 and stats.block_ops == 6


def test_an_out_of_range_index_leaves_the_gather_whole():
    def program(rec: Recorder):
        f = rec.array(RNG.random((4, 3, 20)))
        return [rec.ufunc("multiply", gather(rec, f, np.array([0, 4, 1])), 2.0)]

    steps = groups(program)
    assert isinstance(steps[0], WholeOp) and steps[0].instruction.op == "gather"


def test_short_rows_leave_the_gather_whole(monkeypatch):
    monkeypatch.setattr(row_gather, "ROW_ELEMENTS_MIN", 6 * 40 + 1)
    assert whole_ops(collision((9, 6, 40), OPPOSITE, aligned=True)) == ["gather"]


def computed_index(rec: Recorder) -> View:
    return rec.ufunc("add", rec.array(np.array([3, 2, 1, 0])), 0)


def index_written_in_the_batch(rec: Recorder) -> View:
    index = rec.array(np.array([3, 2, 1, 0]))
    rec.fill(rec.index(index, (slice(0, 2),)), 1)  # the values the batch carries are stale
    return index


@pytest.mark.parametrize("make_index", [computed_index, index_written_in_the_batch])
def test_an_index_unknown_when_planning_leaves_the_gather_whole(make_index):
    def program(rec: Recorder):
        f = rec.array(RNG.random((4, 3, 20)))
        return [rec.ufunc("multiply", gather(rec, f, make_index(rec)), 2.0)]

    assert whole_ops(program) == ["gather"]
    run_both(program, block=7, exact=True)


def test_a_gather_into_its_own_source_reads_before_it_writes():
    """``f[:] = where(mask, f[index], g)``: the write to ``f`` cannot join the rows' group."""

    def program(rec: Recorder):
        f = rec.array(RNG.random((9, 5, 30)))
        g = rec.array(RNG.random((9, 5, 30)))
        mask = rec.array(RNG.random((5, 30)) < 0.5)
        bounced = gather(rec, f, OPPOSITE)
        rec.emit("where", (f,), (mask, bounced, g))
        rec.release(bounced)
        return [f]

    stats = run_both(program, block=50, exact=True).last_stats
    assert stats.kernels == 2 and stats.temporaries == 0


def test_a_replayed_plan_reads_the_new_batchs_index():
    """The plan cache keys gathers by their index values: a new index is planned anew."""
    indices = iter([OPPOSITE, OPPOSITE, OPPOSITE[::-1].copy()])

    def program(rec: Recorder):
        f = rec.array(np.arange(9 * 4 * 64, dtype=np.float64).reshape(9, 4, 64))
        bounced = gather(rec, f, next(indices))
        result = rec.ufunc("multiply", bounced, 2.0)
        rec.release(bounced)
        return [result]

    stats = run_both(program, block=100, exact=True, batches=3).last_stats
    assert not stats.replayed and stats.kernels == 1


def test_the_same_index_replays_the_plan():
    def program(rec: Recorder):
        f = rec.array(RNG.random((9, 4, 64)))
        bounced = gather(rec, f, OPPOSITE)
        result = rec.ufunc("multiply", bounced, 2.0)
        rec.release(bounced)
        return [result]

    assert run_both(program, block=100, exact=True, batches=2).last_stats.replayed


@pytest.mark.full
@pytest.mark.parametrize("aligned", [True, False])
def test_compiled_row_gather_matches_the_reference(aligned):
    stats = run_both(collision((9, 6, 40), OPPOSITE, aligned), block=100, compile="sync", exact=False).last_stats
    assert stats.kernels == 1 and stats.compiled_block_ops == stats.block_ops
