"""In-place updates fused with the reads they overwrite (deferred writes), against the reference."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder
from hypothesis import given, settings
from hypothesis import strategies as st
from test_engine_node_differential import five_point_sweep

from shoal.engine.node.lower.deferred import Reach, reach
from shoal.engine.node.plan.plan import Group, WholeOp, plan_batch

RNG = np.random.default_rng(11)


def in_place_jacobi(sweeps: int, shape=(23, 17)):
    """``grid[1:-1, 1:-1] = 0.2 * (five shifted slices of grid)``, ``sweeps`` times, one batch."""

    def program(rec: Recorder):
        grid = rec.array(RNG.random(shape))
        for _ in range(sweeps):
            five_point_sweep(rec, grid, grid)
        return [grid]

    return program


@pytest.mark.parametrize("block", [1, 7, 16, 40, 1000])
def test_in_place_jacobi_sweeps_are_one_kernel_each_without_a_temporary(block):
    stats = run_both(in_place_jacobi(3), block=block).last_stats
    assert stats.kernels == 3 and stats.deferred_writes == 3
    assert stats.temporaries == 15 and stats.whole_ops == 0
    assert stats.peak_bytes == 23 * 17 * 8  # only the grid: the right-hand side is never allocated


@pytest.mark.parametrize("schedule", ["program", "reverse"])
@pytest.mark.parametrize("threads", [1, 3])
def test_in_place_jacobi_matches_on_any_thread_count_and_schedule(threads, schedule):
    run_both(in_place_jacobi(4, shape=(40, 9)), block=9, threads=threads, schedule=schedule)


@pytest.mark.parametrize(("write", "read"), [((slice(2, None),), (slice(None, -2),)), ((slice(None, -3),), (slice(3, None),))])
@pytest.mark.parametrize("block", [1, 2, 5, 64])
def test_one_dimensional_shifts_reaching_several_rows(write, read, block):
    def program(rec):
        a = rec.array(RNG.random(50))
        total = rec.ufunc("add", rec.index(a, read), rec.index(a, write))
        rec.copy(rec.index(a, write), total)
        rec.release(total)
        return [a]

    stats = run_both(program, block=block).last_stats
    assert stats.kernels == 1 and stats.deferred_writes == 1


@pytest.mark.parametrize("block", [3, 8, 30])
def test_a_read_after_the_deferred_write_sees_the_new_values(block):
    def program(rec):
        a = rec.array(RNG.random((12, 10)))
        rec.emit("multiply", (rec.index(a, (slice(1, None),)),), (rec.index(a, (slice(None, -1),)), 3.0))
        after = rec.ufunc("add", rec.index(a, (slice(None, -1),)), 1.0)  # reads rows just written
        return [a, after]

    stats = run_both(program, block=block).last_stats
    assert stats.kernels == 2 and stats.deferred_writes == 1


def heat_sweep(rec: Recorder, grid, work_shape):
    inner, up, down = slice(1, -1), slice(None, -2), slice(2, None)
    s = lambda r, c: rec.index(grid, (r, c))  # noqa: E731
    t1 = rec.ufunc("add", s(inner, inner), s(up, inner))
    t2 = rec.ufunc("add", t1, s(down, inner))
    work = rec.ufunc("multiply", 0.2, t2)
    change = rec.ufunc("absolute", rec.ufunc("subtract", work, s(inner, inner)))
    total = rec.reduce("sum", change)
    delta = rec.ufunc("divide", total, float(work_shape[0] * work_shape[1]))
    rec.copy(s(inner, inner), work)
    return work, delta, t1, t2, change


@pytest.mark.parametrize("block", [5, 64])
def test_a_convergence_check_is_postponed_and_the_sweep_stays_one_kernel(block):
    def program(rec):
        grid = rec.array(RNG.random((30, 20)))
        work, delta, *temporaries = heat_sweep(rec, grid, (28, 18))
        rec.release(*temporaries)
        return [grid, work, delta]

    stats = run_both(program, block=block, exact=False).last_stats
    assert stats.kernels == 1 and stats.deferred_writes == 1 and stats.whole_ops == 1


def test_a_postponed_instruction_keeps_later_instructions_from_touching_its_bases():
    rec = Recorder()
    a = rec.array(RNG.random(4000))
    total = rec.reduce("sum", a)
    scaled = rec.ufunc("divide", total, 4000.0)  # postponed
    rec.emit("add", (a,), (a, 1.0))  # joins: touches neither ``total`` nor ``scaled``
    rec.emit("multiply", (scaled,), (scaled, 2.0))  # writes what the postponed step wrote
    plan = plan_batch(rec.batch, rec.known)
    kinds = [type(step) for step in plan.steps]
    assert kinds == [Group, WholeOp, WholeOp]
    assert [step.instruction.op for step in plan.steps[1:]] == ["divide", "multiply"]


def test_reach_of_a_five_point_stencil():
    shape, row = (98, 98), 100 * 8
    write = (row + 8, (row, 8))
    reads = [(8, (row, 8)), (2 * row + 8, (row, 8)), (row, (row, 8)), (row + 16, (row, 8)), write]
    assert reach(shape, *write, 8, reads) == Reach(behind=1, ahead=1)
    assert reach(shape, *write, 8, [(8, (row, 8))]) == Reach(behind=1, ahead=0)
    assert reach(shape, *write, 8, [(row, (row, 8))]) == Reach(behind=0, ahead=0)  # same row, to the left
    assert reach(shape, *write, 8, [(8, (row, 16))]) == Reach(behind=0, ahead=0)  # other strides: disjoint


def test_held_rows_of_first_middle_and_last_view_blocks():
    r = Reach(behind=2, ahead=1)
    assert r.held_rows(0, 10, 30) == (0, 2)
    assert r.held_rows(10, 20, 30) == (1, 2)
    assert r.held_rows(20, 30, 30) == (1, 0)
    assert r.held_rows(10, 12, 30) == (1, 1)  # fewer rows than the reach: each row held once


@pytest.mark.full
@pytest.mark.parametrize("block", [1, 16])
def test_compiled_in_place_jacobi_and_heat_sweeps(block):
    stats = run_both(in_place_jacobi(3), block=block, compile="sync", exact=False).last_stats
    assert stats.compiled_block_ops > 0 and stats.deferred_writes == 1 and stats.sweep_passes == 1  # three sweeps, one pass

    def heat(rec):
        grid = rec.array(RNG.random((30, 20)))
        work, delta, *temporaries = heat_sweep(rec, grid, (28, 18))
        rec.release(*temporaries)
        return [grid, work, delta]

    assert run_both(heat, block=block, compile="sync", exact=False).last_stats.compiled_block_ops > 0


def shifted_update(rows: int, cols: int, shifts: list[tuple[int, int]], reverse: bool):
    """``a[w] = a[w] * 0.5 + sum(a[w shifted by (dr, dc)])``, optionally walking rows backwards."""

    def window(dr: int, dc: int) -> tuple[slice, slice]:
        columns = slice(2 + dc, 2 + dc + cols)
        if reverse:
            return slice(1 + dr + rows, 1 + dr if dr > -2 else None, -1), columns
        return slice(2 + dr, 2 + dr + rows), columns

    def program(rec):
        a = rec.array(RNG.random((rows + 4, cols + 4)))
        total = rec.ufunc("multiply", rec.index(a, window(0, 0)), 0.5)
        for dr, dc in shifts:
            total = rec.ufunc("add", total, rec.index(a, window(dr, dc)))
        rec.copy(rec.index(a, window(0, 0)), total)
        return [a]

    return program


UPDATES = {
    "rows": st.integers(3, 30),
    "cols": st.integers(3, 12),
    "shifts": st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2)), min_size=1, max_size=3),
    "reverse": st.booleans(),
    "block": st.integers(1, 50),
    "schedule": st.sampled_from(["program", "reverse"]),
}


@settings(max_examples=60, deadline=None)
@given(**UPDATES, threads=st.sampled_from([1, 2, 3]))
def test_random_shifted_in_place_updates_match_the_reference(rows, cols, shifts, reverse, block, threads, schedule):
    """Random shifts, also through views walking the rows backwards, on any block size, thread
    count and legal schedule (one thread in reverse order runs later view-blocks before the
    earlier ones that read them)."""
    run_both(shifted_update(rows, cols, shifts, reverse), block=block, threads=threads, schedule=schedule)


@pytest.mark.full
@settings(max_examples=15, deadline=None)
@given(**UPDATES, threads=st.sampled_from([1, 2]))
def test_compiled_kernels_store_shifted_in_place_updates_like_the_reference(rows, cols, shifts, reverse, block, threads, schedule):
    """The compiled kernel stores rows itself, a row behind their last reader, through a ring."""
    program = shifted_update(rows, cols, shifts, reverse)
    stats = run_both(program, block=block, threads=threads, compile="sync", exact=False, schedule=schedule).last_stats
    assert stats.compiled_block_ops > 0
